/* Image geometry: windows (crop and pad), flips and resizing (see image.h for
 * the two layouts and their semantics).
 *
 * Resizing is separable: per axis, each output index reads taps [lo, lo + n)
 * with normalised weights; the width pass runs first, then the height pass,
 * as Pillow does. Pillow's path turns the weights into 22-bit fixed point and
 * rounds to uint8 after each pass; the tensor path keeps doubles throughout
 * and rounds once at the end. */
#include "image.h"
#include "image_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

nn_tensor *nn_image_cpu_contiguous(const char *fn, nn_tensor *t)
{
    if (t->storage->device.type != NN_CPU) return nn_error(NN_ERR_DEVICE, "%s: images must be on the CPU", fn), NULL;
    return nn_contiguous(t);
}

/* H and W dims of an image in a layout, or an error naming fn. */
static nn_status image_dims(const char *fn, const nn_tensor *t, nn_image_layout layout, int *hd, int *wd)
{
    char s[160];
    if (layout == NN_IMAGE_HWC ? t->ndim != 3 : t->ndim < 2)
        return nn_error(NN_ERR_SHAPE, "%s: expected %s image, got shape %s", fn,
                        layout == NN_IMAGE_HWC ? "an H x W x C" : "a (..., H, W)", nn_shape_str(s, t->ndim, t->shape));
    *hd = layout == NN_IMAGE_HWC ? 0 : t->ndim - 2;
    *wd = *hd + 1;
    return NN_OK;
}

/* ---- windows ---- */

static int64_t map_index(int64_t i, int64_t n, nn_pad_mode mode)
{
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case NN_PAD_CONSTANT: return -1;
    case NN_PAD_EDGE: return i < 0 ? 0 : n - 1;
    case NN_PAD_REFLECT: {
        if (n == 1) return 0;
        int64_t p = 2 * (n - 1), r = ((i % p) + p) % p;
        return r < n ? r : p - r;
    }
    default: { /* symmetric: the edge pixel repeats */
        int64_t p = 2 * n, r = ((i % p) + p) % p;
        return r < n ? r : p - 1 - r;
    }
    }
}

nn_tensor *nn_image_window(nn_tensor *img, nn_image_layout layout, int64_t top, int64_t left, int64_t h, int64_t w,
                           nn_pad_mode mode, const double *fill, int nfill)
{
    int hd = 0, wd = 1;
    if (image_dims("crop", img, layout, &hd, &wd)) return NULL;
    if (h < 0 || w < 0) return nn_error(NN_ERR_ARG, "crop: size must be non-negative, got %lld x %lld", (long long)h, (long long)w), NULL;
    int64_t H = img->shape[hd], W = img->shape[wd];
    if (mode != NN_PAD_CONSTANT && (H == 0 || W == 0) && h && w)
        return nn_error(NN_ERR_ARG, "pad: cannot pad an empty image in non-constant mode"), NULL;
    nn_tensor *src = nn_image_cpu_contiguous("crop", img);
    if (!src) return NULL;
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, img->shape, sizeof shape);
    shape[hd] = h;
    shape[wd] = w;
    nn_tensor *out = nn_empty(img->ndim, shape, img->dtype, NN_DEVICE_CPU);
    size_t es = nn_dtype_size(img->dtype);
    int64_t inner = 1, outer = 1, nchan = 1;
    for (int d = 0; d < hd; d++) outer *= img->shape[d];
    for (int d = wd + 1; d < img->ndim; d++) inner *= img->shape[d];
    if (layout == NN_IMAGE_CHW && img->ndim >= 3) nchan = img->shape[img->ndim - 3];
    int64_t *xmap = malloc(sizeof *xmap * (size_t)(w ? w : 1));
    /* one fill pixel per channel: HWC pixels hold `inner` channels; CHW planes take one value each */
    int64_t nfillpx = layout == NN_IMAGE_HWC ? 1 : nchan;
    uint8_t *fillpx = malloc((size_t)(nfillpx * inner) * es + 1);
    if (!out || !xmap || !fillpx) {
        if (out) nn_error(NN_ERR_NOMEM, "crop: out of memory");
        nn_release(out), nn_release(src), free(xmap), free(fillpx);
        return NULL;
    }
    for (int64_t p = 0; p < nfillpx; p++)
        for (int64_t k = 0; k < inner; k++) {
            int64_t ch = layout == NN_IMAGE_HWC ? k : p;
            nn_store_f64(fillpx + (size_t)(p * inner + k) * es, img->dtype, nfill ? fill[ch % nfill] : 0.0);
        }
    for (int64_t x = 0; x < w; x++) xmap[x] = map_index(left + x, W, mode);
    /* the run of output columns that read columns left + x inside the image */
    int64_t x0 = left < 0 ? -left : 0, x1 = W - left < w ? W - left : w;
    if (x1 < x0) x1 = x0;
    size_t px = (size_t)inner * es;
    const uint8_t *s = nn_data(src);
    uint8_t *d = nn_data(out);
    for (int64_t o = 0; o < outer; o++) {
        const uint8_t *fp = fillpx + (size_t)(layout == NN_IMAGE_HWC ? 0 : o % nchan) * px;
        const uint8_t *plane = s + (size_t)(o * H * W) * px;
        for (int64_t y = 0; y < h; y++) {
            int64_t sy = map_index(top + y, H, mode);
            if (sy < 0) {
                for (int64_t x = 0; x < w; x++, d += px) memcpy(d, fp, px);
                continue;
            }
            const uint8_t *row = plane + (size_t)(sy * W) * px;
            for (int64_t x = 0; x < w; x++) {
                if (x == x0 && x1 > x0) {
                    memcpy(d, row + (size_t)(left + x0) * px, (size_t)(x1 - x0) * px);
                    d += (size_t)(x1 - x0) * px;
                    x = x1 - 1;
                    continue;
                }
                memcpy(d, xmap[x] < 0 ? fp : row + (size_t)xmap[x] * px, px);
                d += px;
            }
        }
    }
    nn_release(src);
    free(xmap);
    free(fillpx);
    return out;
}

nn_tensor *nn_image_flip(nn_tensor *t, int dim)
{
    if (nn_wrap_dim("flip", &dim, t->ndim)) return NULL;
    nn_tensor *src = nn_image_cpu_contiguous("flip", t);
    if (!src) return NULL;
    nn_tensor *out = nn_empty(t->ndim, t->shape, t->dtype, NN_DEVICE_CPU);
    if (!out) return nn_release(src), NULL;
    int64_t outer = 1, n = t->shape[dim], inner = 1;
    for (int d = 0; d < dim; d++) outer *= t->shape[d];
    for (int d = dim + 1; d < t->ndim; d++) inner *= t->shape[d];
    size_t blk = (size_t)inner * nn_dtype_size(t->dtype);
    const uint8_t *s = nn_data(src);
    uint8_t *d = nn_data(out);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < n; i++) memcpy(d + (size_t)(o * n + i) * blk, s + (size_t)(o * n + n - 1 - i) * blk, blk);
    nn_release(src);
    return out;
}

/* ---- resize weights ---- */

typedef struct {
    int64_t *lo; /* first tap of each output index */
    int *n;      /* number of taps */
    double *w;   /* k weights per output index */
    int k;
} axis_weights;

static void free_weights(axis_weights *a) { free(a->lo), free(a->n), free(a->w); }

static double triangle(double x)
{
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

/* The cubic convolution kernel with parameter a: Pillow's bicubic and torch's antialiased one
 * use a = -0.5 (support 2), torch's plain bicubic a = -0.75. */
static double cubic_a(double x, double a)
{
    x = fabs(x);
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
    return 0.0;
}

static double cubic(double x) { return cubic_a(x, -0.5); }

static double box(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }

static double sinc(double x)
{
    if (x == 0.0) return 1.0;
    x *= M_PI;
    return sin(x) / x;
}

/* Pillow's hamming window takes its constants in single precision (0.54f, 0.46f) */
static double hamming(double x)
{
    x = fabs(x);
    if (x == 0.0) return 1.0;
    if (x >= 1.0) return 0.0;
    x *= M_PI;
    return sin(x) / x * ((double)0.54f + (double)0.46f * cos(x));
}

static double lanczos(double x) { return -3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0; }

/* Pillow's resampling filters (and torch's antialiased kernels) with their supports */
static void filter_of(nn_interp interp, double (**f)(double), double *support)
{
    switch (interp) {
    case NN_INTERP_BICUBIC: *f = cubic, *support = 2.0; break;
    case NN_INTERP_BOX: *f = box, *support = 0.5; break;
    case NN_INTERP_HAMMING: *f = hamming, *support = 1.0; break;
    case NN_INTERP_LANCZOS: *f = lanczos, *support = 3.0; break;
    default: *f = triangle, *support = 1.0;
    }
}

/* Weights for resizing an axis of `in` samples to `out`. filtered: the antialiased filter
 * (Pillow's precompute_coeffs, torch's aa kernels: the filter widened by the scale when
 * shrinking, normalized), and Pillow's nearest (ImagingScaleAffine: (int) of 0.5 * scale plus
 * scale added once per pixel, rounding drift included). Otherwise bilinear is torch's two-tap
 * align_corners=False rule, bicubic torch's four taps (a = -0.75, edge samples repeated), and
 * nearest torch's floor(i * scale) or (nearest-exact) floor((i + 0.5) * scale). */
static nn_status make_weights(int64_t in, int64_t out, nn_interp interp, bool filtered, axis_weights *a)
{
    double scale = (double)in / (double)out;
    bool nearest = interp == NN_INTERP_NEAREST || interp == NN_INTERP_NEAREST_EXACT;
    double (*filter)(double), fsupport;
    filter_of(interp, &filter, &fsupport);
    double support = (scale > 1.0 ? scale : 1.0) * fsupport;
    a->k = nearest ? 1 : filtered ? (int)ceil(support) * 2 + 1 : interp == NN_INTERP_BICUBIC ? 4 : 2;
    a->lo = malloc(sizeof *a->lo * (size_t)out);
    a->n = malloc(sizeof *a->n * (size_t)out);
    a->w = calloc((size_t)out * (size_t)a->k, sizeof *a->w);
    if (!a->lo || !a->n || !a->w) return free_weights(a), nn_error(NN_ERR_NOMEM, "resize: out of memory");
    double pil_pos = 0.5 * scale; /* Pillow's nearest: positions accumulated in steps of scale */
    for (int64_t i = 0; i < out; i++, pil_pos += scale) {
        double *w = a->w + i * a->k;
        if (interp == NN_INTERP_NEAREST && filtered) {
            int64_t j = (int64_t)pil_pos;
            a->lo[i] = j < in - 1 ? j : in - 1;
            a->n[i] = 1;
            w[0] = 1.0;
        } else if (nearest) {
            double pos = interp == NN_INTERP_NEAREST ? floor((double)i * scale) : floor(((double)i + 0.5) * scale);
            int64_t j = (int64_t)pos;
            a->lo[i] = j < in - 1 ? j : in - 1;
            a->n[i] = 1;
            w[0] = 1.0;
        } else if (filtered) {
            double center = ((double)i + 0.5) * scale, total = 0.0;
            double invscale = 1.0 / (scale > 1.0 ? scale : 1.0);
            int64_t lo = (int64_t)(center - support + 0.5), hi = (int64_t)(center + support + 0.5);
            if (lo < 0) lo = 0;
            if (hi > in) hi = in;
            a->lo[i] = lo;
            a->n[i] = (int)(hi - lo);
            for (int j = 0; j < a->n[i]; j++) total += w[j] = filter(((double)(j + lo) - center + 0.5) * invscale);
            for (int j = 0; j < a->n[i] && total != 0.0; j++) w[j] /= total;
        } else if (interp == NN_INTERP_BICUBIC) {
            /* taps j0-1 .. j0+2, indices clamped to the axis: clamped taps add to the edge sample */
            double src = ((double)i + 0.5) * scale - 0.5, j0 = floor(src), t = src - j0;
            double tw[4] = {cubic_a(t + 1.0, -0.75), cubic_a(t, -0.75), cubic_a(1.0 - t, -0.75), cubic_a(2.0 - t, -0.75)};
            int64_t first = (int64_t)j0 - 1, lo = first < 0 ? 0 : first > in - 1 ? in - 1 : first;
            int64_t last = first + 3 > in - 1 ? in - 1 : first + 3 < 0 ? 0 : first + 3;
            a->lo[i] = lo;
            a->n[i] = (int)(last - lo + 1);
            for (int j = 0; j < 4; j++) {
                int64_t idx = first + j < 0 ? 0 : first + j > in - 1 ? in - 1 : first + j;
                w[idx - lo] += tw[j];
            }
        } else {
            double src = ((double)i + 0.5) * scale - 0.5;
            if (src < 0) src = 0;
            int64_t j = (int64_t)src;
            double l1 = src - (double)j;
            a->lo[i] = j;
            a->n[i] = j < in - 1 ? 2 : 1;
            w[0] = a->n[i] == 2 ? 1.0 - l1 : 1.0;
            if (a->n[i] == 2) w[1] = l1;
        }
    }
    return NN_OK;
}

/* ---- Pillow's uint8 path ---- */

#define PRECISION_BITS (32 - 8 - 2)

static int32_t *fixed_weights(const axis_weights *a, int64_t out)
{
    int32_t *kk = malloc(sizeof *kk * (size_t)(out * a->k));
    if (!kk) return NULL;
    for (int64_t i = 0; i < out * a->k; i++) {
        double v = a->w[i] * (1 << PRECISION_BITS);
        kk[i] = (int32_t)(v < 0 ? v - 0.5 : v + 0.5);
    }
    return kk;
}

static inline uint8_t clip8(int32_t v)
{
    if (v >= (1 << PRECISION_BITS << 8)) return 255;
    if (v <= 0) return 0;
    return (uint8_t)(v >> PRECISION_BITS);
}

/* Width pass: each of `rows` rows of W pixels of C bytes to ow pixels. */
static void pil_horizontal(const uint8_t *in, uint8_t *out, int64_t rows, int64_t W, int64_t ow, int64_t C,
                           const axis_weights *a, const int32_t *kk)
{
    for (int64_t y = 0; y < rows; y++) {
        const uint8_t *src = in + y * W * C;
        uint8_t *dst = out + y * ow * C;
        for (int64_t x = 0; x < ow; x++) {
            const int32_t *k = kk + x * a->k;
            const uint8_t *s0 = src + a->lo[x] * C;
            int32_t ss[4] = {1 << (PRECISION_BITS - 1), 1 << (PRECISION_BITS - 1), 1 << (PRECISION_BITS - 1),
                             1 << (PRECISION_BITS - 1)};
            for (int j = 0; j < a->n[x]; j++)
                for (int64_t c = 0; c < C; c++) ss[c] += s0[j * C + c] * k[j];
            for (int64_t c = 0; c < C; c++) dst[x * C + c] = clip8(ss[c]);
        }
    }
}

/* Height pass: rows of `len` bytes to oh rows, a whole row accumulated per tap. */
static void pil_vertical(const uint8_t *in, uint8_t *out, int64_t oh, int64_t len, const axis_weights *a,
                         const int32_t *kk, int32_t *acc)
{
    const int32_t half = 1 << (PRECISION_BITS - 1);
    for (int64_t y = 0; y < oh; y++) {
        const uint8_t *r0 = in + a->lo[y] * len;
        const int32_t *k = kk + y * a->k;
        uint8_t *d = out + y * len;
        if (a->n[y] == 2) { /* the common cases in one pass each */
            const uint8_t *r1 = r0 + len;
            for (int64_t b = 0; b < len; b++) d[b] = clip8(half + r0[b] * k[0] + r1[b] * k[1]);
            continue;
        }
        if (a->n[y] == 3) {
            const uint8_t *r1 = r0 + len, *r2 = r1 + len;
            for (int64_t b = 0; b < len; b++) d[b] = clip8(half + r0[b] * k[0] + r1[b] * k[1] + r2[b] * k[2]);
            continue;
        }
        for (int64_t b = 0; b < len; b++) acc[b] = half;
        for (int j = 0; j < a->n[y]; j++) {
            const uint8_t *r = r0 + j * len;
            int32_t kj = k[j];
            for (int64_t b = 0; b < len; b++) acc[b] += r[b] * kj;
        }
        for (int64_t b = 0; b < len; b++) d[b] = clip8(acc[b]);
    }
}

/* Pillow premultiplies colour by alpha around a filtered resize of LA/RGBA. */
void nn_image_premultiply(uint8_t *p, int64_t npix, int c, bool undo)
{
    for (int64_t i = 0; i < npix; i++, p += c) {
        unsigned a = p[c - 1];
        for (int j = 0; j < c - 1; j++) {
            if (!undo) {
                unsigned t = p[j] * a + 128;
                p[j] = (uint8_t)(((t >> 8) + t) >> 8);
            } else if (a != 0 && a != 255) {
                unsigned v = 255u * p[j] / a;
                p[j] = (uint8_t)(v > 255 ? 255 : v);
            }
        }
    }
}

static nn_tensor *resize_pil(nn_tensor *img, int64_t oh, int64_t ow, nn_interp interp)
{
    if (img->dtype != NN_U8)
        return nn_error(NN_ERR_DTYPE, "resize: a PIL-like image must be uint8, got %s", nn_dtype_name(img->dtype)), NULL;
    int64_t H = img->shape[0], W = img->shape[1], C = img->shape[2];
    if (C < 1 || C > 4) return nn_error(NN_ERR_SHAPE, "resize: a PIL-like image has 1 to 4 channels, got %lld", (long long)C), NULL;
    if (interp == NN_INTERP_NEAREST_EXACT) interp = NN_INTERP_NEAREST; /* Pillow has one nearest */
    nn_tensor *src = nn_image_cpu_contiguous("resize", img);
    if (!src) return NULL;
    bool alpha = interp != NN_INTERP_NEAREST && (C == 2 || C == 4);
    int64_t shape[3] = {oh, ow, C};
    nn_tensor *out = nn_empty(3, shape, NN_U8, NN_DEVICE_CPU);
    axis_weights ax = {0}, ay = {0};
    int32_t *kx = NULL, *ky = NULL, *acc = NULL;
    uint8_t *pre = NULL, *tmp = NULL;
    nn_status st = out ? NN_OK : nn_last_status();
    if (!st) st = make_weights(W, ow, interp, true, &ax);
    if (!st) st = make_weights(H, oh, interp, true, &ay);
    if (!st) {
        kx = fixed_weights(&ax, ow);
        ky = fixed_weights(&ay, oh);
        tmp = malloc((size_t)(H * ow * C) + 1);
        acc = malloc(sizeof *acc * (size_t)(ow * C) + 1);
        pre = alpha ? malloc((size_t)(H * W * C) + 1) : NULL;
        if (!kx || !ky || !tmp || !acc || (alpha && !pre)) st = nn_error(NN_ERR_NOMEM, "resize: out of memory");
    }
    if (!st) {
        const uint8_t *s = nn_data(src);
        if (alpha) {
            memcpy(pre, s, (size_t)(H * W * C));
            nn_image_premultiply(pre, H * W, (int)C, false);
            s = pre;
        }
        uint8_t *d = nn_data(out);
        /* width pass over every row (Pillow skips it when the width is unchanged; the weights are then exact) */
        const uint8_t *mid = s;
        if (ow != W) {
            pil_horizontal(s, tmp, H, W, ow, C, &ax, kx);
            mid = tmp;
        }
        if (oh != H) pil_vertical(mid, d, oh, ow * C, &ay, ky, acc);
        else memcpy(d, mid, (size_t)(H * ow * C));
        if (alpha) nn_image_premultiply(d, oh * ow, (int)C, true);
    }
    if (st) nn_release(out), out = NULL;
    nn_release(src);
    free_weights(&ax), free_weights(&ay);
    free(kx), free(ky), free(tmp), free(pre), free(acc);
    return out;
}

/* ---- tensor path: doubles, rounded once ---- */

/* v rounded half to even, for 0 <= v < 2^51: the addition rounds in the default mode */
static inline double round_half_even(double v) { return (v + 6755399441055744.0) - 6755399441055744.0; }

static nn_tensor *resize_tensor(nn_tensor *img, int64_t oh, int64_t ow, nn_interp interp, bool antialias)
{
    nn_dtype dt = img->dtype;
    if (!nn_dtype_is_float(dt) && dt != NN_U8)
        return nn_error(NN_ERR_DTYPE, "resize: expected a floating point or uint8 image, got %s", nn_dtype_name(dt)), NULL;
    int nd = img->ndim;
    int64_t H = img->shape[nd - 2], W = img->shape[nd - 1], planes = 1;
    for (int d = 0; d < nd - 2; d++) planes *= img->shape[d];
    nn_tensor *src = nn_image_cpu_contiguous("resize", img);
    if (!src) return NULL;
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, img->shape, sizeof shape);
    shape[nd - 2] = oh;
    shape[nd - 1] = ow;
    nn_tensor *out = nn_empty(nd, shape, dt, NN_DEVICE_CPU);
    axis_weights ax = {0}, ay = {0};
    double *in = NULL, *tmp = NULL, *acc = NULL;
    nn_status st = out ? NN_OK : nn_last_status();
    bool filtered = antialias && (interp == NN_INTERP_BILINEAR || interp == NN_INTERP_BICUBIC); /* as torchvision */
    if (!st) st = make_weights(W, ow, interp, filtered, &ax);
    if (!st) st = make_weights(H, oh, interp, filtered, &ay);
    if (!st) {
        in = malloc(sizeof *in * (size_t)(H * W + 1));
        tmp = malloc(sizeof *tmp * (size_t)(H * ow + 1));
        acc = malloc(sizeof *acc * (size_t)(ow + 1));
        if (!in || !tmp || !acc) st = nn_error(NN_ERR_NOMEM, "resize: out of memory");
    }
    size_t es = nn_dtype_size(dt);
    const uint8_t *s = st ? NULL : nn_data(src);
    uint8_t *d = st ? NULL : nn_data(out);
    for (int64_t p = 0; !st && p < planes; p++) {
        const uint8_t *sp = s + (size_t)(p * H * W) * es;
        if (dt == NN_F32) for (int64_t i = 0; i < H * W; i++) in[i] = ((const float *)sp)[i];
        else if (dt == NN_U8) for (int64_t i = 0; i < H * W; i++) in[i] = sp[i];
        else for (int64_t i = 0; i < H * W; i++) in[i] = nn_load_f64(sp + (size_t)i * es, dt);
        for (int64_t y = 0; y < H; y++) {
            const double *row = in + y * W;
            double *t = tmp + y * ow;
            for (int64_t x = 0; x < ow; x++) {
                const double *w = ax.w + x * ax.k, *r = row + ax.lo[x];
                double v = 0.0;
                for (int j = 0; j < ax.n[x]; j++) v += w[j] * r[j];
                t[x] = v;
            }
        }
        uint8_t *dp = d + (size_t)(p * oh * ow) * es;
        for (int64_t y = 0; y < oh; y++) {
            const double *wy = ay.w + y * ay.k, *r0 = tmp + ay.lo[y] * ow;
            if (ay.n[y] == 2) {
                const double *r1 = r0 + ow;
                for (int64_t x = 0; x < ow; x++) acc[x] = wy[0] * r0[x] + wy[1] * r1[x];
            } else {
                for (int64_t x = 0; x < ow; x++) acc[x] = wy[0] * r0[x];
                for (int j = 1; j < ay.n[y]; j++)
                    for (int64_t x = 0; x < ow; x++) acc[x] += wy[j] * r0[j * ow + x];
            }
            uint8_t *drow = dp + (size_t)(y * ow) * es;
            if (dt == NN_F32) for (int64_t x = 0; x < ow; x++) ((float *)drow)[x] = (float)acc[x];
            else if (dt == NN_U8)
                for (int64_t x = 0; x < ow; x++) {
                    double v = acc[x] < 0 ? 0 : acc[x] > 255 ? 255 : acc[x];
                    drow[x] = (uint8_t)round_half_even(v);
                }
            else for (int64_t x = 0; x < ow; x++) nn_store_f64(drow + (size_t)x * es, dt, acc[x]);
        }
    }
    if (st) nn_release(out), out = NULL;
    nn_release(src);
    free_weights(&ax), free_weights(&ay);
    free(in), free(tmp), free(acc);
    return out;
}

nn_tensor *nn_image_resize(nn_tensor *img, nn_image_layout layout, int64_t h, int64_t w, nn_interp interp,
                           bool antialias)
{
    int hd = 0, wd = 1;
    if (image_dims("resize", img, layout, &hd, &wd)) return NULL;
    if (h <= 0 || w <= 0)
        return nn_error(NN_ERR_ARG, "resize: output size must be positive, got %lld x %lld", (long long)h, (long long)w), NULL;
    if (img->shape[hd] == 0 || img->shape[wd] == 0)
        return nn_error(NN_ERR_ARG, "resize: cannot resize an empty image"), NULL;
    if (layout == NN_IMAGE_HWC) return resize_pil(img, h, w, interp);
    if (interp == NN_INTERP_BOX || interp == NN_INTERP_HAMMING || interp == NN_INTERP_LANCZOS)
        return nn_error(NN_ERR_ARG, "resize: box, hamming and lanczos are Pillow's filters, for PIL-like images only; "
                                    "a tensor takes nearest, nearest-exact, bilinear or bicubic"), NULL;
    return resize_tensor(img, h, w, interp, antialias);
}
