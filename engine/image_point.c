/* Per-pixel maps of the augmentations (invert, posterize, solarize, autocontrast, equalize) on
 * PIL-like images (Pillow's ImageOps lookup tables) and on tensor images (torchvision's tensor
 * functional). A uint8 image goes through one 256-entry table per plane (a channel of one image);
 * float images are mapped value by value in float32 (float64 images: float64). */
#include <math.h>
#include <string.h>

#include "image_internal.h"

#define R(x) (f64 ? (double)(x) : (double)(float)(x))

nn_status nn_image_check_chw(const char *fn, const nn_tensor *t, bool need3d, bool need_u8)
{
    if (t->ndim < 2) return nn_error(NN_ERR_ARG, "%s: Tensor is not a torch image.", fn);
    if (need3d && t->ndim < 3)
        return nn_error(NN_ERR_SHAPE, "%s: Input image tensor should have at least 3 dimensions, but found %d", fn, t->ndim);
    if (need_u8 && t->dtype != NN_U8)
        return nn_error(NN_ERR_DTYPE, "%s: Only torch.uint8 image tensors are supported, but found torch.%s", fn,
                        nn_dtype_name(t->dtype));
    if (!nn_dtype_is_float(t->dtype) && t->dtype != NN_U8)
        return nn_error(NN_ERR_DTYPE, "%s: expected a floating point or uint8 image, got torch.%s", fn, nn_dtype_name(t->dtype));
    int64_t c = t->ndim >= 3 ? t->shape[t->ndim - 3] : 1;
    if (c != 1 && c != 3)
        return nn_error(NN_ERR_SHAPE, "%s: Input image tensor permitted channel values are [1, 3], but found %lld", fn, (long long)c);
    return NN_OK;
}

static const char *op_name(nn_point_op op)
{
    static const char *const names[] = {"invert", "posterize", "solarize", "autocontrast", "equalize"};
    return names[op];
}

/* The table of one plane: n values at p with stride st (hist: its histogram). */
static void make_lut(nn_point_op op, double arg, bool pil, const int64_t *hist, uint8_t lut[256])
{
    for (int v = 0; v < 256; v++) lut[v] = (uint8_t)v;
    if (op == NN_POINT_INVERT) {
        for (int v = 0; v < 256; v++) lut[v] = (uint8_t)(255 - v);
    } else if (op == NN_POINT_POSTERIZE) {
        int mask = ~((1 << (8 - (int)arg)) - 1);
        for (int v = 0; v < 256; v++) lut[v] = (uint8_t)(v & mask);
    } else if (op == NN_POINT_SOLARIZE) {
        /* Pillow: v < threshold keeps v; torchvision: v >= threshold (compared in float32) inverts */
        double t = pil ? arg : (double)(float)arg;
        for (int v = 0; v < 256; v++) lut[v] = (uint8_t)(v >= t ? 255 - v : v);
    } else if (op == NN_POINT_AUTOCONTRAST) {
        int lo = 0, hi = 255;
        while (lo < 256 && !hist[lo]) lo++;
        while (hi >= 0 && !hist[hi]) hi--;
        if (hi <= lo) return;
        if (pil) { /* ImageOps.autocontrast: int(ix * scale + offset), clipped */
            double scale = 255.0 / (hi - lo), offset = -lo * scale;
            for (int v = 0; v < 256; v++) {
                double x = trunc(v * scale + offset);
                lut[v] = (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x);
            }
        } else { /* ((img - min) * (255 / (max - min))).clamp(0, 255).to(uint8), in float32 */
            float scale = 255.0f / (float)(hi - lo);
            for (int v = 0; v < 256; v++) {
                float x = (float)(v - lo) * scale;
                lut[v] = (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x);
            }
        }
    } else { /* equalize: both follow Pillow's ImageOps.equalize */
        int64_t total = 0, last = 0;
        for (int v = 0; v < 256; v++)
            if (hist[v]) total += hist[v], last = hist[v];
        int64_t step = (total - last) / 255;
        if (!step) return;
        int64_t n = step / 2;
        for (int v = 0; v < 256; v++) {
            int64_t x = n / step;
            lut[v] = (uint8_t)(x > 255 ? 255 : x);
            n += hist[v];
        }
    }
}

/* planes of len values, plane q starting at q * pstride with element stride st */
static void map_u8(const uint8_t *s, uint8_t *d, int64_t planes, int64_t len, int64_t pstride, int64_t st,
                   nn_point_op op, double arg, bool pil)
{
    for (int64_t q = 0; q < planes; q++) {
        const uint8_t *sp = s + q * pstride;
        uint8_t *dp = d + q * pstride;
        int64_t hist[256] = {0};
        if (op == NN_POINT_AUTOCONTRAST || op == NN_POINT_EQUALIZE)
            for (int64_t i = 0; i < len; i++) hist[sp[i * st]]++;
        uint8_t lut[256];
        make_lut(op, arg, pil, hist, lut);
        for (int64_t i = 0; i < len; i++) dp[i * st] = lut[sp[i * st]];
    }
}

static void map_float(nn_tensor *src, nn_tensor *out, int64_t planes, int64_t len, nn_point_op op, double arg)
{
    nn_dtype dt = src->dtype;
    bool f64 = dt == NN_F64;
    size_t es = nn_dtype_size(dt);
    const uint8_t *s = nn_data(src);
    uint8_t *d = nn_data(out);
    double t = R(arg);
    for (int64_t q = 0; q < planes; q++) {
        const uint8_t *sp = s + (size_t)(q * len) * es;
        uint8_t *dp = d + (size_t)(q * len) * es;
        double mn = 0, scale = 1;
        if (op == NN_POINT_AUTOCONTRAST) {
            double lo = INFINITY, hi = -INFINITY;
            for (int64_t i = 0; i < len; i++) {
                double v = nn_load_f64(sp + i * es, dt);
                lo = fmin(lo, v), hi = fmax(hi, v);
            }
            scale = R(1.0 / R(hi - lo));
            mn = lo;
            if (!isfinite(scale)) mn = 0, scale = 1;
        }
        for (int64_t i = 0; i < len; i++) {
            double v = nn_load_f64(sp + i * es, dt), r = v;
            if (op == NN_POINT_INVERT) r = R(1.0 - v);
            else if (op == NN_POINT_SOLARIZE) r = v >= t ? R(1.0 - v) : v;
            else if (op == NN_POINT_AUTOCONTRAST) r = fmin(fmax(R(R(v - mn) * scale), 0.0), 1.0);
            nn_store_f64(dp + i * es, dt, r);
        }
    }
}

nn_tensor *nn_image_point(nn_tensor *img, nn_image_layout layout, nn_point_op op, double arg)
{
    const char *fn = op_name(op);
    if (op == NN_POINT_POSTERIZE && !(arg >= 0 && arg <= 8))
        return nn_error(NN_ERR_ARG, "posterize: The number if bits should be between 0 and 8. Got %g", arg), NULL;
    int64_t planes, len, pstride, st;
    if (layout == NN_IMAGE_HWC) {
        if (nn_image_check_hwc_u8(fn, img)) return NULL;
        int64_t C = img->shape[2];
        if (C != 1 && C != 3) return nn_error(NN_ERR_ARG, "%s: not supported for mode %s", fn, nn_image_mode_name(C)), NULL;
        planes = C, len = img->shape[0] * img->shape[1], pstride = 1, st = C;
    } else {
        bool u8only = op == NN_POINT_POSTERIZE || op == NN_POINT_EQUALIZE;
        if (nn_image_check_chw(fn, img, true, u8only)) return NULL;
        double bound = img->dtype == NN_U8 ? 255 : 1;
        if (op == NN_POINT_SOLARIZE && arg > bound)
            return nn_error(NN_ERR_ARG, "solarize: Threshold should be less than bound of img."), NULL;
        len = img->shape[img->ndim - 2] * img->shape[img->ndim - 1];
        planes = len ? nn_numel(img) / len : 0, pstride = len, st = 1;
    }
    nn_tensor *src = nn_image_cpu_contiguous(fn, img);
    if (!src) return NULL;
    nn_tensor *out = nn_empty(img->ndim, img->shape, img->dtype, NN_DEVICE_CPU);
    if (out) {
        if (img->dtype == NN_U8) map_u8(nn_data(src), nn_data(out), planes, len, pstride, st, op, arg, layout == NN_IMAGE_HWC);
        else map_float(src, out, planes, len, op, arg);
    }
    nn_release(src);
    return out;
}
