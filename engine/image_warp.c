/* Resampling through a map from output to input coordinates: affine (rotate, affine) and
 * perspective warps, and sampling at a given grid (elastic transform).
 *
 * PIL-like images follow Pillow's Geometry.c: output pixel centres (x + 0.5, y + 0.5) go through
 * the coefficients; nearest affine maps take Pillow's fast paths (pure scaling, 16.16 fixed
 * point, incremental doubles), everything else the generic per-pixel loop; bilinear reads the
 * clipped 2 x 2 neighbourhood and truncates; pixels mapped outside keep the fill colour.
 *
 * Tensor images follow torchvision's _functional_tensor: a normalised grid ([-1, 1] over the
 * input) built as _gen_affine_grid / _perspective_grid do, then grid_sample(align_corners=False,
 * padding_mode="zeros") as PyTorch's CPU kernel computes it ((g + 1) * size / 2 - 0.5; bilinear
 * weights from the floor), all in float32 (float64 images: float64), and fill through a mask
 * channel of ones sampled alongside (nearest: mask < 0.5 takes fill; bilinear: img * mask +
 * (1 - mask) * fill). uint8 results are rounded half to even. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

#define R(x) (f64 ? (double)(x) : (double)(float)(x))

/* ---- Pillow ---- */

static inline int64_t coord(double v) { return !(v >= 0.0) ? -1 : v >= 9e18 ? INT64_MAX : (int64_t)v; }
static inline int64_t floor_i(double v) { return v < 0.0 ? (int64_t)floor(v) : (int64_t)v; }
static inline int64_t clip_i(int64_t v, int64_t n) { return v < 0 ? 0 : v < n ? v : n - 1; }

typedef struct {
    const uint8_t *s;
    uint8_t *d;
    int64_t H, W, oh, ow;
    int C;
} pil_io;

static inline void copy_px(const pil_io *io, int64_t oy, int64_t ox, int64_t iy, int64_t ix)
{
    memcpy(io->d + (oy * io->ow + ox) * io->C, io->s + (iy * io->W + ix) * io->C, (size_t)io->C);
}

static bool pil_nearest(const pil_io *io, double xin, double yin, uint8_t *out)
{
    int64_t x = coord(xin), y = coord(yin);
    if (x < 0 || x >= io->W || y < 0 || y >= io->H) return false;
    memcpy(out, io->s + (y * io->W + x) * io->C, (size_t)io->C);
    return true;
}

static bool pil_bilinear(const pil_io *io, double xin, double yin, uint8_t *out)
{
    if (xin < 0.0 || xin >= io->W || yin < 0.0 || yin >= io->H) return false;
    xin -= 0.5, yin -= 0.5;
    int64_t x = floor_i(xin), y = floor_i(yin), C = io->C, W = io->W;
    double dx = xin - (double)x, dy = yin - (double)y;
    int64_t x0 = clip_i(x, W) * C, x1 = clip_i(x + 1, W) * C;
    const uint8_t *r0 = io->s + clip_i(y, io->H) * W * C, *r1 = y + 1 >= 0 && y + 1 < io->H ? io->s + (y + 1) * W * C : NULL;
    for (int64_t c = 0; c < C; c++) {
        double v1 = r0[x0 + c] + (r0[x1 + c] - r0[x0 + c]) * dx, v2 = v1;
        if (r1) v2 = r1[x0 + c] + (r1[x1 + c] - r1[x0 + c]) * dx;
        v1 = v1 + (v2 - v1) * dy;
        out[c] = (uint8_t)v1;
    }
    return true;
}

/* ImagingGenericTransform */
static void pil_generic(const pil_io *io, nn_warp_kind kind, const double *a, nn_interp interp)
{
    for (int64_t y = 0; y < io->oh; y++)
        for (int64_t x = 0; x < io->ow; x++) {
            double xin = x + 0.5, yin = y + 0.5, xx, yy;
            if (kind == NN_WARP_AFFINE) {
                xx = a[0] * xin + a[1] * yin + a[2];
                yy = a[3] * xin + a[4] * yin + a[5];
            } else {
                xx = (a[0] * xin + a[1] * yin + a[2]) / (a[6] * xin + a[7] * yin + 1);
                yy = (a[3] * xin + a[4] * yin + a[5]) / (a[6] * xin + a[7] * yin + 1);
            }
            uint8_t *out = io->d + (y * io->ow + x) * io->C;
            if (interp == NN_INTERP_BILINEAR) pil_bilinear(io, xx, yy, out);
            else pil_nearest(io, xx, yy, out);
        }
}

static bool check_fixed(const double *a, double x, double y)
{
    return fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 && fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

/* ImagingTransformAffine with NEAREST: ImagingScaleAffine, affine_fixed or the incremental loop */
static nn_status pil_affine_nearest(const pil_io *io, const double *a)
{
    int64_t W = io->W, H = io->H, ow = io->ow, oh = io->oh;
    if (a[1] == 0 && a[3] == 0) {
        int64_t *xin = calloc((size_t)(ow ? ow : 1), sizeof *xin), xmin = ow, xmax = 0;
        if (!xin) return nn_error(NN_ERR_NOMEM, "transform: out of memory");
        double xo = a[2] + a[0] * 0.5, yo = a[5] + a[4] * 0.5;
        for (int64_t x = 0; x < ow; x++, xo += a[0]) {
            int64_t v = coord(xo);
            if (v >= 0 && v < W) {
                xmax = x + 1;
                if (x < xmin) xmin = x;
                xin[x] = v;
            }
        }
        for (int64_t y = 0; y < oh; y++, yo += a[4]) {
            int64_t yi = coord(yo);
            if (yi >= 0 && yi < H)
                for (int64_t x = xmin; x < xmax; x++) copy_px(io, y, x, yi, xin[x]);
        }
        free(xin);
        return NN_OK;
    }
    if (check_fixed(a, 0, 0) && check_fixed(a, (double)ow, (double)oh) && check_fixed(a, 0, (double)oh) &&
        check_fixed(a, (double)ow, 0)) {
#define FIX(v) ((int32_t)floor_i((v) * 65536.0 + 0.5))
        int32_t a0 = FIX(a[0]), a1 = FIX(a[1]), a3 = FIX(a[3]), a4 = FIX(a[4]);
        int32_t a2 = FIX(a[2] + a[0] * 0.5 + a[1] * 0.5), a5 = FIX(a[5] + a[3] * 0.5 + a[4] * 0.5);
#undef FIX
        for (int64_t y = 0; y < oh; y++, a2 += a1, a5 += a4) {
            int32_t xx = a2, yy = a5;
            for (int64_t x = 0; x < ow; x++, xx += a0, yy += a3) {
                int32_t xi = xx >> 16, yi = yy >> 16;
                if (xi >= 0 && xi < W && yi >= 0 && yi < H) copy_px(io, y, x, yi, xi);
            }
        }
        return NN_OK;
    }
    double xo = a[2] + a[1] * 0.5 + a[0] * 0.5, yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
    for (int64_t y = 0; y < oh; y++, xo += a[1], yo += a[4]) {
        double xx = xo, yy = yo;
        for (int64_t x = 0; x < ow; x++, xx += a[0], yy += a[3]) {
            int64_t xi = coord(xx), yi = coord(yy);
            if (xi >= 0 && xi < W && yi >= 0 && yi < H) copy_px(io, y, x, yi, xi);
        }
    }
    return NN_OK;
}

static nn_tensor *warp_pil(nn_tensor *img, int64_t oh, int64_t ow, nn_warp_kind kind, const double *a, nn_interp interp,
                           const double *fill, int nfill)
{
    if (nn_image_check_hwc_u8("transform", img)) return NULL;
    int C = (int)img->shape[2];
    if (nfill != 0 && nfill != C)
        return nn_error(NN_ERR_ARG, "transform: %d fill values for an image of %d bands", nfill, C), NULL;
    nn_tensor *src = nn_image_cpu_contiguous("transform", img);
    if (!src) return NULL;
    int64_t shape[3] = {oh, ow, C};
    nn_tensor *out = nn_empty(3, shape, NN_U8, NN_DEVICE_CPU);
    bool alpha = (C == 2 || C == 4) && interp == NN_INTERP_BILINEAR; /* transformed as La / RGBa */
    int64_t npix = img->shape[0] * img->shape[1];
    uint8_t *pre = alpha ? malloc((size_t)(npix * C) + 1) : NULL;
    if (!out || (alpha && !pre)) {
        free(pre), nn_release(src), nn_release(out);
        return nn_error(NN_ERR_NOMEM, "transform: out of memory"), NULL;
    }
    if (alpha) {
        memcpy(pre, nn_data(src), (size_t)(npix * C));
        nn_image_premultiply(pre, npix, C, false);
    }
    pil_io io = {alpha ? pre : nn_data(src), nn_data(out), img->shape[0], img->shape[1], oh, ow, C};
    uint8_t px[4] = {0, 0, 0, 0};
    for (int c = 0; c < nfill; c++) px[c] = (uint8_t)(fill[c] < 0 ? 0 : fill[c] > 255 ? 255 : fill[c]);
    for (int64_t i = 0; i < oh * ow; i++) memcpy(io.d + i * C, px, (size_t)C);
    nn_status st = NN_OK;
    if (kind == NN_WARP_AFFINE && interp != NN_INTERP_BILINEAR) st = pil_affine_nearest(&io, a);
    else pil_generic(&io, kind, a, interp);
    if (alpha) nn_image_premultiply(io.d, oh * ow, C, true);
    free(pre);
    nn_release(src);
    if (st) return nn_release(out), NULL;
    return out;
}

/* ---- torchvision on tensors ---- */

/* grid_sample of every (H, W) plane of src at the normalised points grid[2 * p], grid[2 * p + 1] */
static nn_tensor *sample(nn_tensor *img, const double *grid, int64_t oh, int64_t ow, nn_interp interp, const double *fill,
                         int nfill)
{
    char s[160];
    nn_dtype dt = img->dtype;
    if (!nn_dtype_is_float(dt) && dt != NN_U8)
        return nn_error(NN_ERR_DTYPE, "grid_transform: expected a floating point or uint8 image, got torch.%s", nn_dtype_name(dt)), NULL;
    int nd = img->ndim;
    if (nd < 2) return nn_error(NN_ERR_SHAPE, "grid_transform: expected a (..., H, W) image, got %s", nn_shape_str(s, nd, img->shape)), NULL;
    int64_t H = img->shape[nd - 2], W = img->shape[nd - 1], C = nd >= 3 ? img->shape[nd - 3] : 1;
    if (nfill > 1 && nfill != C)
        return nn_error(NN_ERR_ARG, "The number of elements in 'fill' cannot broadcast to match the number of channels of the image "
                        "(%d != %lld)", nfill, (long long)C), NULL;
    nn_tensor *src = nn_image_cpu_contiguous("grid_transform", img);
    if (!src) return NULL;
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, img->shape, sizeof shape);
    shape[nd - 2] = oh, shape[nd - 1] = ow;
    nn_tensor *out = nn_empty(nd, shape, dt, NN_DEVICE_CPU);
    int64_t npix = oh * ow, *idx = malloc(sizeof(int64_t) * 4 * (size_t)(npix ? npix : 1));
    double *wt = malloc(sizeof(double) * 5 * (size_t)(npix ? npix : 1));
    if (!out || !idx || !wt) {
        bool oom = out != NULL;
        free(idx), free(wt), nn_release(src), nn_release(out);
        if (oom) nn_error(NN_ERR_NOMEM, "grid_transform: out of memory");
        return NULL;
    }
    bool f64 = dt == NN_F64, bil = interp == NN_INTERP_BILINEAR;
    double sx = R(W / 2.0), sy = R(H / 2.0);
    for (int64_t p = 0; p < npix; p++) { /* taps: 4 indices (-1 outside), 4 weights and the mask */
        double ix = R(R(R(grid[2 * p] + 1) * sx) - 0.5), iy = R(R(R(grid[2 * p + 1] + 1) * sy) - 0.5);
        int64_t *k = idx + 4 * p;
        double *w = wt + 5 * p;
        if (!bil) {
            double xr = nearbyint(ix), yr = nearbyint(iy);
            bool in = xr >= 0 && xr <= W - 1 && yr >= 0 && yr <= H - 1;
            k[0] = in ? (int64_t)yr * W + (int64_t)xr : -1, k[1] = k[2] = k[3] = -1;
            w[0] = 1, w[1] = w[2] = w[3] = 0, w[4] = in;
            continue;
        }
        double x0 = floor(ix), y0 = floor(iy);
        double ew = R(ix - x0), ee = R(1 - ew), nn = R(iy - y0), ss = R(1 - nn);
        w[0] = R(ss * ee), w[1] = R(ss * ew), w[2] = R(nn * ee), w[3] = R(nn * ew);
        double m = 0;
        for (int c = 0; c < 4; c++) {
            double cx = x0 + (c & 1), cy = y0 + (c >> 1);
            bool in = cx >= 0 && cx <= W - 1 && cy >= 0 && cy <= H - 1;
            k[c] = in ? (int64_t)cy * W + (int64_t)cx : -1;
            m = c ? R(m + (in ? w[c] : 0)) : (in ? w[c] : 0);
        }
        w[4] = m;
    }
    int64_t plane = H * W, planes = plane ? nn_numel(img) / plane : nn_numel(out) / (npix ? npix : 1);
    size_t es = nn_dtype_size(dt);
    const uint8_t *sp = nn_data(src);
    uint8_t *dp = nn_data(out);
    for (int64_t q = 0; q < planes; q++) {
        const uint8_t *pl = sp + (size_t)(q * plane) * es;
        double f = nfill ? R(fill[nfill == 1 ? 0 : q % C]) : 0;
        for (int64_t p = 0; p < npix; p++) {
            const int64_t *k = idx + 4 * p;
            const double *w = wt + 5 * p;
            double v = 0;
            for (int c = 0; c < (bil ? 4 : 1); c++) {
                double t = k[c] >= 0 ? R(nn_load_f64(pl + (size_t)k[c] * es, dt) * w[c]) : 0;
                v = c ? R(v + t) : t;
            }
            if (nfill && !bil && w[4] < 0.5) v = f;
            else if (nfill && bil) v = R(R(v * w[4]) + R(R(1 - w[4]) * f));
            if (dt == NN_U8) v = nearbyint(v);
            nn_store_f64(dp + (size_t)(q * npix + p) * es, dt, v);
        }
    }
    free(idx), free(wt);
    nn_release(src);
    return out;
}

/* _gen_affine_grid (theta: the inverse matrix about the centre, normalised by the input's w, h) and
 * _perspective_grid, in the image's working precision */
static void make_grid(double *g, int64_t oh, int64_t ow, int64_t h, int64_t w, nn_warp_kind kind, const double *c, bool f64)
{
    double t[8];
    for (int i = 0; i < 8; i++) t[i] = i < 6 || kind == NN_WARP_PERSPECTIVE ? R(c[i]) : 0;
    double nx = R(0.5 * (kind == NN_WARP_AFFINE ? w : ow)), ny = R(0.5 * (kind == NN_WARP_AFFINE ? h : oh));
    /* rounded in a loop of its own: GCC 12's SLP vectoriser (-O2) drops R's float rounding from six R(a / b) in a row */
    double r[6] = {t[0] / nx, t[1] / nx, t[2] / nx, t[3] / ny, t[4] / ny, t[5] / ny};
    if (!f64)
        for (int k = 0; k < 6; k++) r[k] = (float)r[k];
    double r00 = r[0], r10 = r[1], r20 = r[2], r01 = r[3], r11 = r[4], r21 = r[5];
    for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) {
            double x = kind == NN_WARP_AFFINE ? j - ow * 0.5 + 0.5 : j + 0.5, y = kind == NN_WARP_AFFINE ? i - oh * 0.5 + 0.5 : i + 0.5;
            double gx = R(R(R(x * r00) + R(y * r10)) + r20), gy = R(R(R(x * r01) + R(y * r11)) + r21);
            if (kind == NN_WARP_PERSPECTIVE) {
                double den = R(R(R(x * t[6]) + R(y * t[7])) + 1.0);
                gx = R(R(gx / den) - 1.0), gy = R(R(gy / den) - 1.0);
            }
            g[2 * (i * ow + j)] = gx, g[2 * (i * ow + j) + 1] = gy;
        }
}

nn_tensor *nn_image_warp(nn_tensor *img, nn_image_layout layout, int64_t oh, int64_t ow, nn_warp_kind kind,
                         const double *coeffs, nn_interp interp, const double *fill, int nfill)
{
    if (oh < 0 || ow < 0) return nn_error(NN_ERR_ARG, "transform: negative output size %lld x %lld", (long long)oh, (long long)ow), NULL;
    if (interp == NN_INTERP_NEAREST_EXACT) interp = NN_INTERP_NEAREST;
    if (layout == NN_IMAGE_HWC) return warp_pil(img, oh, ow, kind, coeffs, interp, fill, nfill);
    if (img->ndim < 2) return sample(img, NULL, oh, ow, interp, fill, nfill); /* its error */
    double *grid = malloc(sizeof(double) * 2 * (size_t)(oh * ow > 0 ? oh * ow : 1));
    if (!grid) return nn_error(NN_ERR_NOMEM, "grid_transform: out of memory"), NULL;
    make_grid(grid, oh, ow, img->shape[img->ndim - 2], img->shape[img->ndim - 1], kind, coeffs, img->dtype == NN_F64);
    nn_tensor *out = sample(img, grid, oh, ow, interp, fill, nfill);
    free(grid);
    return out;
}

nn_tensor *nn_image_grid_sample(nn_tensor *img, nn_tensor *grid, nn_interp interp, const double *fill, int nfill)
{
    char s[160];
    int gd = grid->ndim;
    if (!(gd == 3 || (gd == 4 && grid->shape[0] == 1)) || grid->shape[gd - 1] != 2 || !nn_dtype_is_float(grid->dtype))
        return nn_error(NN_ERR_SHAPE, "grid_transform: expected a float grid [1, H, W, 2], got %s %s", nn_dtype_name(grid->dtype),
                        nn_shape_str(s, gd, grid->shape)), NULL;
    nn_tensor *g = nn_image_cpu_contiguous("grid_transform", grid);
    if (!g) return NULL;
    int64_t oh = grid->shape[gd - 3], ow = grid->shape[gd - 2], n = oh * ow * 2;
    double *pts = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!pts) return nn_release(g), nn_error(NN_ERR_NOMEM, "grid_transform: out of memory"), NULL;
    bool f64 = img->dtype == NN_F64;
    size_t es = nn_dtype_size(grid->dtype);
    for (int64_t i = 0; i < n; i++) pts[i] = R(nn_load_f64((const uint8_t *)nn_data(g) + (size_t)i * es, grid->dtype));
    nn_tensor *out = sample(img, pts, oh, ow, interp, fill, nfill);
    free(pts);
    nn_release(g);
    return out;
}
