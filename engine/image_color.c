/* Pixel values: ToTensor, Normalize, mode conversion and ColorJitter's
 * adjustments, on PIL-like images (Pillow's 8-bit arithmetic) and on tensor
 * images (torchvision's tensor formulas; float32 arithmetic is reproduced by
 * rounding each double result to float, which gives float's own result for
 * single +, -, *, /). */
#include "image.h"
#include "image_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

nn_status nn_image_check_hwc_u8(const char *fn, const nn_tensor *t)
{
    char s[160];
    if (t->dtype != NN_U8) return nn_error(NN_ERR_DTYPE, "%s: expected a uint8 image, got %s", fn, nn_dtype_name(t->dtype));
    if (t->ndim != 3 || t->shape[2] < 1 || t->shape[2] > 4)
        return nn_error(NN_ERR_SHAPE, "%s: expected an H x W x C image with 1 to 4 channels, got shape %s", fn,
                        nn_shape_str(s, t->ndim, t->shape));
    return NN_OK;
}

nn_tensor *nn_image_to_tensor(nn_tensor *img, nn_image_layout layout)
{
    char s[160];
    if (img->dtype != NN_U8)
        return nn_error(NN_ERR_DTYPE, "to_tensor: expected a uint8 image, got %s", nn_dtype_name(img->dtype)), NULL;
    if (layout == NN_IMAGE_HWC && img->ndim != 2 && img->ndim != 3)
        return nn_error(NN_ERR_SHAPE, "to_tensor: expected an H x W or H x W x C image, got shape %s",
                        nn_shape_str(s, img->ndim, img->shape)), NULL;
    nn_tensor *src = nn_image_cpu_contiguous("to_tensor", img);
    if (!src) return NULL;
    int64_t shape[NN_MAX_DIMS];
    int ndim = img->ndim;
    memcpy(shape, img->shape, sizeof shape);
    int64_t C = 1, HW = nn_numel(img); /* HWC: element i * C + c goes to c * HW + i */
    if (layout == NN_IMAGE_HWC) {
        C = ndim == 3 ? img->shape[2] : 1;
        HW = img->shape[0] * img->shape[1];
        ndim = 3;
        shape[0] = C, shape[1] = img->shape[0], shape[2] = img->shape[1];
    }
    nn_dtype dt = nn_default_dtype();
    nn_tensor *out = nn_empty(ndim, shape, dt, NN_DEVICE_CPU);
    if (!out) return nn_release(src), NULL;
    const uint8_t *p = nn_data(src);
    float lut[256]; /* (float)v / 255.0f, as torch divides */
    for (int v = 0; v < 256; v++) lut[v] = (float)v / 255.0f;
    if (dt == NN_F32) {
        float *d = nn_data(out);
        if (C == 1) for (int64_t i = 0; i < HW; i++) d[i] = lut[p[i]];
        else
            for (int64_t c = 0; c < C; c++)
                for (int64_t i = 0; i < HW; i++) *d++ = lut[p[i * C + c]];
    } else {
        uint8_t *d = nn_data(out);
        size_t es = nn_dtype_size(dt);
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < HW; i++, d += es) nn_store_f64(d, dt, p[i * C + c] / 255.0);
    }
    nn_release(src);
    return out;
}

nn_status nn_image_normalize_(nn_tensor *t, const double *mean, const double *std, int n)
{
    char s[160];
    if (!nn_dtype_is_float(t->dtype))
        return nn_error(NN_ERR_DTYPE, "normalize: input tensor should be a float tensor, got %s", nn_dtype_name(t->dtype));
    if (t->ndim < 3)
        return nn_error(NN_ERR_SHAPE, "normalize: expected a tensor image of size (..., C, H, W), got %s",
                        nn_shape_str(s, t->ndim, t->shape));
    int64_t C = t->shape[t->ndim - 3];
    if (n != 1 && n != C)
        return nn_error(NN_ERR_SHAPE, "normalize: %d means/stds for an image of %lld channels", n, (long long)C);
    bool f64 = t->dtype == NN_F64;
    for (int i = 0; i < n; i++)
        if ((f64 ? std[i] : (float)std[i]) == 0.0)
            return nn_error(NN_ERR_ARG, "normalize: std evaluated to zero after conversion to %s, leading to division by zero",
                            nn_dtype_name(t->dtype));
    if (t->storage->device.type != NN_CPU) return nn_error(NN_ERR_DEVICE, "normalize: images must be on the CPU");
    nn_tensor *c = nn_contiguous(t);
    if (!c) return nn_last_status();
    int64_t plane = t->shape[t->ndim - 2] * t->shape[t->ndim - 1], planes = plane ? nn_numel(t) / plane : 0;
    size_t es = nn_dtype_size(t->dtype);
    uint8_t *p = nn_data(c);
    for (int64_t q = 0; q < planes; q++) {
        int k = n == 1 ? 0 : (int)(q % C);
        if (t->dtype == NN_F32) {
            float m = (float)mean[k], sd = (float)std[k], *d = (float *)p + q * plane;
            for (int64_t i = 0; i < plane; i++) d[i] = (d[i] - m) / sd;
        } else if (f64) {
            double *d = (double *)p + q * plane;
            for (int64_t i = 0; i < plane; i++) d[i] = (d[i] - mean[k]) / std[k];
        } else {
            float m = (float)mean[k], sd = (float)std[k];
            for (int64_t i = 0; i < plane; i++) {
                uint8_t *e = p + (size_t)(q * plane + i) * es;
                nn_store_f64(e, t->dtype, ((float)nn_load_f64(e, t->dtype) - m) / sd);
            }
        }
    }
    nn_status st = NN_OK;
    if (c != t) st = nn_copy_(t, c);
    else nn_bump_version(t);
    nn_release(c);
    return st;
}

nn_tensor *nn_image_convert(nn_tensor *hwc, int channels)
{
    if (nn_image_check_hwc_u8("convert", hwc)) return NULL;
    if (channels < 1 || channels > 4) return nn_error(NN_ERR_ARG, "convert: channels must be 1 to 4, got %d", channels), NULL;
    nn_tensor *src = nn_image_cpu_contiguous("convert", hwc);
    if (!src) return NULL;
    int64_t shape[3] = {hwc->shape[0], hwc->shape[1], channels};
    nn_tensor *out = nn_empty(3, shape, NN_U8, NN_DEVICE_CPU);
    if (out) nn_image_convert_buf(nn_data(src), (int)hwc->shape[2], nn_data(out), channels, shape[0] * shape[1]);
    nn_release(src);
    return out;
}

/* ---- Pillow's 8-bit adjustments ---- */

static inline uint8_t pil_l(const uint8_t *p) { return (uint8_t)((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16); }

static inline uint8_t clip8i(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

static void pil_rgb2hsv(const uint8_t *in, uint8_t *out)
{
    uint8_t r = in[0], g = in[1], b = in[2];
    uint8_t maxc = r > g ? r : g, minc = r < g ? r : g;
    maxc = maxc > b ? maxc : b;
    minc = minc < b ? minc : b;
    out[2] = maxc;
    if (minc == maxc) {
        out[0] = out[1] = 0;
        return;
    }
    float cr = (float)(maxc - minc), s = cr / (float)maxc, h;
    float rc = (float)(maxc - r) / cr, gc = (float)(maxc - g) / cr, bc = (float)(maxc - b) / cr;
    if (r == maxc) h = bc - gc;
    else if (g == maxc) h = (float)(2.0 + rc - bc);
    else h = (float)(4.0 + gc - rc);
    h = (float)fmod(h / 6.0 + 1.0, 1.0);
    out[0] = clip8i((int)(h * 255.0));
    out[1] = clip8i((int)(s * 255.0));
}

static void pil_hsv2rgb(const uint8_t *in, uint8_t *out)
{
    uint8_t h = in[0], s = in[1], v = in[2];
    if (s == 0) {
        out[0] = out[1] = out[2] = v;
        return;
    }
    int i = (int)floor((float)h * 6.0 / 255.0);
    float f = (float)((float)h * 6.0 / 255.0 - (float)i), fs = (float)((float)s / 255.0);
    uint8_t p = clip8i((int)round((float)v * (1.0 - fs)));
    uint8_t q = clip8i((int)round((float)v * (1.0 - fs * f)));
    uint8_t t = clip8i((int)round((float)v * (1.0 - fs * (1.0 - f))));
    const uint8_t rgb[6][3] = {{v, t, p}, {q, v, p}, {p, v, t}, {p, q, v}, {t, p, v}, {v, p, q}};
    memcpy(out, rgb[i % 6], 3);
}

static nn_tensor *adjust_pil(nn_tensor *img, nn_color_op op, double factor)
{
    if (nn_image_check_hwc_u8("adjust", img)) return NULL;
    int C = (int)img->shape[2], nc = C >= 3 ? 3 : 1; /* colour channels; alpha (LA, RGBA) is kept */
    int64_t npix = img->shape[0] * img->shape[1];
    if (op == NN_COLOR_GRAYSCALE) {
        nn_tensor *l = nn_image_convert(img, 1);
        if (!l || factor == 1) return l;
        nn_tensor *rgb = nn_image_convert(l, 3);
        nn_release(l);
        return rgb;
    }
    nn_tensor *src = nn_image_cpu_contiguous("adjust", img);
    if (!src) return NULL;
    nn_tensor *out = nn_empty(3, img->shape, NN_U8, NN_DEVICE_CPU);
    if (!out) return nn_release(src), NULL;
    const uint8_t *s = nn_data(src);
    uint8_t *d = nn_data(out);
    memcpy(d, s, (size_t)(npix * C));
    float alpha = (float)factor;
    if (op == NN_COLOR_BRIGHTNESS || op == NN_COLOR_CONTRAST) {
        int degenerate = 0;
        if (op == NN_COLOR_CONTRAST) { /* int(mean of the L image + 0.5) */
            double sum = 0;
            for (int64_t i = 0; i < npix; i++) sum += nc == 3 ? pil_l(s + i * C) : s[i * C];
            degenerate = npix ? (int)(sum / (double)npix + 0.5) : 0;
        }
        for (int64_t i = 0; i < npix; i++)
            for (int c = 0; c < nc; c++) d[i * C + c] = nn_pil_blend(degenerate, s[i * C + c], alpha);
    } else if (op == NN_COLOR_SATURATION && nc == 3) {
        for (int64_t i = 0; i < npix; i++) {
            uint8_t l = pil_l(s + i * C);
            for (int c = 0; c < 3; c++) d[i * C + c] = nn_pil_blend(l, s[i * C + c], alpha);
        }
    } else if (op == NN_COLOR_HUE && nc == 3) {
        uint8_t shift = (uint8_t)(int32_t)(factor * 255); /* np.int32(f * 255).astype(np.uint8): wraps */
        for (int64_t i = 0; i < npix; i++) {
            uint8_t hsv[3];
            pil_rgb2hsv(s + i * C, hsv);
            hsv[0] = (uint8_t)(hsv[0] + shift);
            pil_hsv2rgb(hsv, d + i * C);
        }
    }
    nn_release(src);
    return out;
}

/* ---- torchvision's tensor functional ---- */

/* A result in the working precision: float32 unless the image is float64. */
#define R(x) (f64 ? (double)(x) : (double)(float)(x))

static nn_tensor *adjust_tensor(nn_tensor *img, nn_color_op op, double factor)
{
    char s[160];
    nn_dtype dt = img->dtype;
    if (!nn_dtype_is_float(dt) && dt != NN_U8)
        return nn_error(NN_ERR_DTYPE, "adjust: expected a floating point or uint8 image, got %s", nn_dtype_name(dt)), NULL;
    int nd = img->ndim;
    int64_t C = nd >= 3 ? img->shape[nd - 3] : 1; /* H x W: one channel */
    int64_t outc = op == NN_COLOR_GRAYSCALE ? (int64_t)factor : C;
    if (nd < 2 || (C != 1 && C != 3) || (nd == 2 && outc != 1))
        return nn_error(NN_ERR_SHAPE, "adjust: expected a tensor image (..., C, H, W) with 1 or 3 channels, got %s",
                        nn_shape_str(s, nd, img->shape)), NULL;
    nn_tensor *src = nn_image_cpu_contiguous("adjust", img);
    if (!src) return NULL;
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, img->shape, sizeof shape);
    if (nd >= 3) shape[nd - 3] = outc;
    nn_tensor *out = nn_empty(nd, shape, dt, NN_DEVICE_CPU);
    if (!out) return nn_release(src), NULL;
    int64_t plane = img->shape[nd - 2] * img->shape[nd - 1], nimg = plane ? nn_numel(img) / (plane * C) : 0;
    size_t es = nn_dtype_size(dt);
    bool f64 = dt == NN_F64, u8 = dt == NN_U8;
    double bound = u8 ? 255.0 : 1.0, ratio = R(factor), inv = R(1.0 - factor);
    const uint8_t *sp = nn_data(src);
    uint8_t *dp = nn_data(out);
#define LOAD(c, i) nn_load_f64(sp + (size_t)((n * C + (c)) * plane + (i)) * es, dt)
#define STORE(c, i, v) nn_store_f64(dp + (size_t)((n * outc + (c)) * plane + (i)) * es, dt, (v))
    /* .to(dtype) of a clamped float: uint8 truncates */
#define BLEND(a, b) nn_tensor_blend((a), (b), ratio, inv, bound, f64)
    /* rgb_to_grayscale, kept in the image's dtype (the Python constants become float32 scalars) */
#define GRAY(i) (C == 1 ? LOAD(0, i) : nn_as_dtype_value(R(R(R(R(0.2989) * LOAD(0, i)) + R(R(0.587) * LOAD(1, i))) + R(R(0.114) * LOAD(2, i))), dt))
    for (int64_t n = 0; n < nimg; n++) {
        if (op == NN_COLOR_BRIGHTNESS) {
            for (int64_t c = 0; c < C; c++)
                for (int64_t i = 0; i < plane; i++) STORE(c, i, BLEND(LOAD(c, i), 0.0));
        } else if (op == NN_COLOR_CONTRAST) {
            double sum = 0;
            for (int64_t i = 0; i < plane; i++) sum += GRAY(i);
            double mean = R(sum / (double)plane);
            for (int64_t c = 0; c < C; c++)
                for (int64_t i = 0; i < plane; i++) STORE(c, i, BLEND(LOAD(c, i), mean));
        } else if (op == NN_COLOR_SATURATION || op == NN_COLOR_GRAYSCALE) {
            for (int64_t i = 0; i < plane; i++) {
                double g = GRAY(i);
                for (int64_t c = 0; c < outc; c++) STORE(c, i, op == NN_COLOR_GRAYSCALE ? g : C == 1 ? LOAD(c, i) : BLEND(LOAD(c, i), g));
            }
        } else if (C == 1) { /* hue of a grey image */
            for (int64_t i = 0; i < plane; i++) STORE(0, i, LOAD(0, i));
        } else { /* hue: convert_image_dtype to float32, _rgb2hsv, shift, _hsv2rgb, convert back */
            float hf = (float)factor;
            for (int64_t i = 0; i < plane; i++) {
                float rgb[3], o[3];
                for (int c = 0; c < 3; c++) rgb[c] = u8 ? (float)LOAD(c, i) / 255.0f : (float)LOAD(c, i);
                float r = rgb[0], g = rgb[1], b = rgb[2];
                float maxc = fmaxf(fmaxf(r, g), b), minc = fminf(fminf(r, g), b), cr = maxc - minc;
                bool eq = maxc == minc;
                float sat = cr / (eq ? 1.0f : maxc), crd = eq ? 1.0f : cr;
                float rc = (maxc - r) / crd, gc = (maxc - g) / crd, bc = (maxc - b) / crd;
                float hr = maxc == r ? bc - gc : 0.0f;
                float hg = (maxc == g && maxc != r) ? (2.0f + rc) - bc : 0.0f;
                float hb = (maxc != g && maxc != r) ? (4.0f + gc) - rc : 0.0f;
                float h = fmodf((hr + hg + hb) / 6.0f + 1.0f, 1.0f);
                h = fmodf(h + hf, 1.0f);
                if (h != 0.0f && h < 0.0f) h += 1.0f; /* torch.remainder: the sign of the divisor */
                float i6 = floorf(h * 6.0f), f = h * 6.0f - i6, v = maxc;
                float p = fminf(fmaxf(v * (1.0f - sat), 0.0f), 1.0f);
                float q = fminf(fmaxf(v * (1.0f - sat * f), 0.0f), 1.0f);
                float t = fminf(fmaxf(v * (1.0f - sat * (1.0f - f)), 0.0f), 1.0f);
                const float tab[6][3] = {{v, t, p}, {q, v, p}, {p, v, t}, {p, q, v}, {t, p, v}, {v, p, q}};
                memcpy(o, tab[((int)i6 % 6 + 6) % 6], sizeof o);
                for (int c = 0; c < 3; c++) STORE(c, i, u8 ? (double)(o[c] * 255.999f) : (double)o[c]);
            }
        }
    }
#undef LOAD
#undef STORE
#undef BLEND
#undef GRAY
    nn_release(src);
    return out;
}

nn_tensor *nn_image_adjust(nn_tensor *img, nn_image_layout layout, nn_color_op op, double factor)
{
    if (op == NN_COLOR_GRAYSCALE && factor != 1 && factor != 3)
        return nn_error(NN_ERR_ARG, "rgb_to_grayscale: num_output_channels should be either 1 or 3, got %g", factor), NULL;
    if ((op == NN_COLOR_BRIGHTNESS || op == NN_COLOR_CONTRAST || op == NN_COLOR_SATURATION) && !(factor >= 0))
        return nn_error(NN_ERR_ARG, "adjust: factor (%g) is not non-negative", factor), NULL;
    if (op == NN_COLOR_HUE && !(factor >= -0.5 && factor <= 0.5))
        return nn_error(NN_ERR_ARG, "adjust_hue: hue_factor (%g) is not in [-0.5, 0.5]", factor), NULL;
    return layout == NN_IMAGE_HWC ? adjust_pil(img, op, factor) : adjust_tensor(img, op, factor);
}
