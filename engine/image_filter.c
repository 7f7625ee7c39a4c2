/* Neighbourhood filters of the augmentations: Gaussian blur (torchvision's reflect-padded
 * convolution with the outer product of two 1-d kernels) and sharpness (Pillow's
 * ImageFilter.SMOOTH blend on PIL-like images, torchvision's 3x3 smoothing blend on tensors).
 * Tensor results are accumulated in double and rounded once to the image's precision (torch's
 * float32 convolution sums in float32, so float results agree to a few ulp). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

void nn_image_gaussian_kernel1d(int k, double sigma, bool f64, double *out)
{
    /* linspace(-(k-1)/2, (k-1)/2, k), pdf = exp(-0.5 * (x / sigma)^2), pdf / pdf.sum() */
    double sum = 0;
    for (int i = 0; i < k; i++) {
        double x = -(k - 1) * 0.5 + i;
        if (f64) {
            double t = x / sigma;
            out[i] = exp(-0.5 * (t * t));
            sum += out[i];
        } else {
            float t = (float)x / (float)sigma;
            out[i] = expf(-0.5f * (t * t));
            sum = (float)(sum + out[i]);
        }
    }
    for (int i = 0; i < k; i++) out[i] = f64 ? out[i] / sum : (double)((float)out[i] / (float)sum);
}

static inline int64_t reflect(int64_t i, int64_t n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; }

nn_tensor *nn_image_gaussian_blur(nn_tensor *img, int kx, int ky, double sx, double sy)
{
    char s[160];
    if (img->ndim < 2) return nn_error(NN_ERR_ARG, "gaussian_blur: Tensor is not a torch image."), NULL;
    if (!nn_dtype_is_float(img->dtype) && img->dtype != NN_U8)
        return nn_error(NN_ERR_DTYPE, "gaussian_blur: expected a floating point or uint8 image, got torch.%s",
                        nn_dtype_name(img->dtype)), NULL;
    if (kx < 1 || ky < 1 || kx % 2 == 0 || ky % 2 == 0 || kx > 4095 || ky > 4095)
        return nn_error(NN_ERR_ARG, "gaussian_blur: kernel_size should have odd and positive integers. Got [%d, %d]", kx, ky), NULL;
    int nd = img->ndim;
    int64_t H = img->shape[nd - 2], W = img->shape[nd - 1];
    int px = kx / 2, py = ky / 2;
    if (px >= W || py >= H) { /* torch's reflection_pad2d check, on the image made 4-d */
        int64_t shape4[NN_MAX_DIMS];
        int n4 = nd < 4 ? 4 : nd;
        for (int d = 0; d < n4; d++) shape4[d] = d < n4 - nd ? 1 : img->shape[d - (n4 - nd)];
        bool w = px >= W;
        return nn_error(NN_ERR_ARG, "gaussian_blur: Padding size should be less than the corresponding input dimension, "
                        "but got: padding (%d, %d) at dimension %d of input %s", w ? px : py, w ? px : py,
                        w ? n4 - 1 : n4 - 2, nn_shape_str(s, n4, shape4)), NULL;
    }
    nn_tensor *src = nn_image_cpu_contiguous("gaussian_blur", img);
    if (!src) return NULL;
    nn_tensor *out = nn_empty(nd, img->shape, img->dtype, NN_DEVICE_CPU);
    bool f64 = img->dtype == NN_F64;
    double *kxs = malloc(sizeof(double) * (size_t)(kx + ky)), *row = malloc(sizeof(double) * (size_t)(2 * W * H + 1));
    if (!out || !kxs || !row) {
        bool oom = out != NULL;
        free(kxs), free(row), nn_release(src), nn_release(out);
        if (oom) nn_error(NN_ERR_NOMEM, "gaussian_blur: out of memory");
        return NULL;
    }
    double *kys = kxs + kx;
    nn_image_gaussian_kernel1d(kx, sx, f64, kxs);
    nn_image_gaussian_kernel1d(ky, sy, f64, kys);
    int64_t plane = H * W, planes = plane ? nn_numel(img) / plane : 0;
    size_t es = nn_dtype_size(img->dtype);
    const uint8_t *sp = nn_data(src);
    uint8_t *dp = nn_data(out);
    double *in = row + plane; /* the plane in double */
    for (int64_t q = 0; q < planes; q++) {
        const uint8_t *p = sp + (size_t)(q * plane) * es;
        for (int64_t i = 0; i < plane; i++) in[i] = nn_load_f64(p + (size_t)i * es, img->dtype);
        for (int64_t y = 0; y < H; y++) /* horizontal pass into row[] */
            for (int64_t x = 0; x < W; x++) {
                double acc = 0;
                const double *r = in + y * W;
                if (x >= px && x + px < W)
                    for (int j = 0; j < kx; j++) acc += kxs[j] * r[x + j - px];
                else
                    for (int j = 0; j < kx; j++) acc += kxs[j] * r[reflect(x + j - px, W)];
                row[y * W + x] = acc;
            }
        for (int64_t y = 0; y < H; y++)
            for (int64_t x = 0; x < W; x++) {
                double acc = 0;
                for (int i = 0; i < ky; i++) acc += kys[i] * row[reflect(y + i - py, H) * W + x];
                if (img->dtype == NN_U8) acc = nearbyint((float)acc);
                nn_store_f64(dp + (size_t)(q * plane + y * W + x) * es, img->dtype, acc);
            }
    }
    free(kxs), free(row);
    nn_release(src);
    return out;
}

/* ImageFilter.SMOOTH then ImageEnhance's blend; Pillow's 3x3 filter sums each kernel row in float,
 * rows y + 1, y, y - 1 in that order, onto 0.5, and truncates */
static void sharpness_pil(const uint8_t *s, uint8_t *d, int64_t H, int64_t W, int C, float factor)
{
    const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
    int nc = C >= 3 ? 3 : 1; /* alpha is kept */
    memcpy(d, s, (size_t)(H * W * C));
    if (H < 3 || W < 3) return;
    for (int64_t y = 1; y < H - 1; y++)
        for (int64_t x = 1; x < W - 1; x++)
            for (int c = 0; c < nc; c++) {
                const uint8_t *m = s + (y * W + x) * C + c;
                const int64_t up = -W * C, dn = W * C;
                float ss = 0.5f;
                ss += (float)m[dn - C] * k1 + (float)m[dn] * k1 + (float)m[dn + C] * k1;
                ss += (float)m[-C] * k1 + (float)m[0] * k5 + (float)m[C] * k1;
                ss += (float)m[up - C] * k1 + (float)m[up] * k1 + (float)m[up + C] * k1;
                int deg = ss <= 0.0f ? 0 : ss >= 255.0f ? 255 : (int)ss;
                d[(y * W + x) * C + c] = nn_pil_blend(deg, m[0], factor);
            }
}

nn_tensor *nn_image_sharpness(nn_tensor *img, nn_image_layout layout, double factor)
{
    if (!(factor >= 0)) return nn_error(NN_ERR_ARG, "adjust_sharpness: sharpness_factor (%g) is not non-negative.", factor), NULL;
    if (layout == NN_IMAGE_HWC ? nn_image_check_hwc_u8("adjust_sharpness", img)
                               : nn_image_check_chw("adjust_sharpness", img, false, false))
        return NULL;
    int nd = img->ndim;
    int hd = layout == NN_IMAGE_HWC ? 0 : nd - 2;
    int64_t H = img->shape[hd], W = img->shape[hd + 1];
    if (layout == NN_IMAGE_CHW && (H <= 2 || W <= 2)) return nn_retain(img);
    nn_tensor *src = nn_image_cpu_contiguous("adjust_sharpness", img);
    if (!src) return NULL;
    nn_tensor *out = nn_empty(nd, img->shape, img->dtype, NN_DEVICE_CPU);
    if (!out || layout == NN_IMAGE_HWC) {
        if (out) sharpness_pil(nn_data(src), nn_data(out), H, W, (int)img->shape[2], (float)factor);
        nn_release(src);
        return out;
    }
    /* torchvision: conv2d with [1 1 1; 1 5 1; 1 1 1] / 13 in float32 (uint8 results rounded) on the
     * interior, the border copied, then _blend(img, degenerate, factor) */
    nn_dtype dt = img->dtype;
    bool f64 = dt == NN_F64;
    double k1 = f64 ? 1.0 / 13.0 : (double)(1.0f / 13.0f), k5 = f64 ? 5.0 / 13.0 : (double)(5.0f / 13.0f);
    double ratio = f64 ? factor : (double)(float)factor, inv = f64 ? 1.0 - factor : (double)(float)(1.0 - factor);
    double bound = dt == NN_U8 ? 255.0 : 1.0;
    int64_t plane = H * W, planes = nn_numel(img) / plane;
    size_t es = nn_dtype_size(dt);
    const uint8_t *sp = nn_data(src);
    uint8_t *dp = nn_data(out);
    for (int64_t q = 0; q < planes; q++) {
        const uint8_t *p = sp + (size_t)(q * plane) * es;
        uint8_t *o = dp + (size_t)(q * plane) * es;
#define AT(y, x) nn_load_f64(p + (size_t)((y) * W + (x)) * es, dt)
        for (int64_t y = 0; y < H; y++)
            for (int64_t x = 0; x < W; x++) {
                double v = AT(y, x), deg = v;
                if (y > 0 && y < H - 1 && x > 0 && x < W - 1) {
                    double sum = 0;
                    for (int i = -1; i <= 1; i++)
                        for (int j = -1; j <= 1; j++) sum += AT(y + i, x + j) * (i || j ? k1 : k5);
                    deg = f64 ? sum : (double)(float)sum;
                    if (dt == NN_U8) deg = nearbyint(deg);
                }
                nn_store_f64(o + (size_t)(y * W + x) * es, dt, nn_tensor_blend(v, deg, ratio, inv, bound, f64));
            }
#undef AT
    }
    nn_release(src);
    return out;
}
