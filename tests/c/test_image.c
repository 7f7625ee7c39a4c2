/* engine/image*.c: windows (crop/pad) and flips in every dtype, resize and
 * normalize on non-contiguous inputs against reference loops written here,
 * and the codecs' round trips and error paths (every truncation of a PNG and
 * a JPEG fails with a message and frees what it held: run under ASan). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#pragma GCC diagnostic ignored "-Wformat-zero-length" /* CHECK(cond) without a message */
#include "image.h"
#include "ops.h"

static const nn_dtype all_dtypes[] = {NN_F32, NN_F64, NN_F16, NN_BF16, NN_I64, NN_I32, NN_I16, NN_I8, NN_U8, NN_BOOL};
#define NDT ((int)(sizeof all_dtypes / sizeof *all_dtypes))

static uint64_t lcg = 777;
static int64_t rnd_int(int64_t n)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (int64_t)((lcg >> 33) % (uint64_t)n);
}

static char *addr(const nn_tensor *t, const int64_t *idx)
{
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) off += idx[i] * t->strides[i];
    return (char *)t->storage->data + off * (int64_t)nn_dtype_size(t->dtype);
}
static double at(const nn_tensor *t, const int64_t *idx) { return nn_load_f64(addr(t, idx), t->dtype); }

static bool next(int ndim, const int64_t *shape, int64_t *idx)
{
    for (int d = ndim - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

/* A non-contiguous [d0, d1, d2, d3] tensor of dtype dt: the transpose (dims 2, 3) of a
 * contiguous [d0, d1, d3, d2] one, filled with random values exact in every dtype. */
static nn_tensor *noncontig(const int64_t *shape, nn_dtype dt, int maxv)
{
    int64_t base_shape[4] = {shape[0], shape[1], shape[3], shape[2]};
    nn_tensor *b = nn_empty(4, base_shape, dt, NN_DEVICE_CPU);
    int64_t n = base_shape[0] * base_shape[1] * base_shape[2] * base_shape[3];
    for (int64_t k = 0; k < n; k++)
        nn_store_f64((char *)b->storage->data + k * (int64_t)nn_dtype_size(dt), dt, dt == NN_BOOL ? rnd_int(2) : rnd_int(maxv));
    nn_tensor *v = nn_transpose(b, 2, 3);
    nn_release(b);
    return v;
}

static int64_t map_index(int64_t i, int64_t n, nn_pad_mode mode)
{
    if (i >= 0 && i < n) return i;
    if (mode == NN_PAD_CONSTANT) return -1;
    if (mode == NN_PAD_EDGE) return i < 0 ? 0 : n - 1;
    if (mode == NN_PAD_REFLECT) return i < 0 ? -i : 2 * (n - 1) - i; /* one reflection: pads < n */
    return i < 0 ? -i - 1 : 2 * n - 1 - i;
}

static void test_window_flip(void)
{
    const int64_t shape[4] = {2, 3, 5, 6};
    const double fill[3] = {7, 8, 9};
    for (int di = 0; di < NDT; di++) {
        nn_dtype dt = all_dtypes[di];
        nn_tensor *x = noncontig(shape, dt, 100);
        for (int mode = NN_PAD_CONSTANT; mode <= NN_PAD_SYMMETRIC; mode++) {
            /* CHW: window reaching 2 rows above, 3 columns right of the image */
            int64_t top = -2, left = 2, h = 8, w = 7;
            nn_tensor *o = nn_image_window(x, NN_IMAGE_CHW, top, left, h, w, (nn_pad_mode)mode, fill, 3);
            CHECK(o && o->shape[2] == h && o->shape[3] == w && o->dtype == dt, "%s mode %d", nn_dtype_name(dt), mode);
            int64_t idx[4] = {0}, src[4];
            bool ok = o != NULL;
            do {
                if (!o) break;
                int64_t sy = map_index(top + idx[2], 5, (nn_pad_mode)mode), sx = map_index(left + idx[3], 6, (nn_pad_mode)mode);
                double want;
                if (sy < 0 || sx < 0) {
                    double f = fill[idx[1] % 3];
                    want = dt == NN_BOOL ? (f != 0) : f;
                } else {
                    memcpy(src, idx, sizeof src);
                    src[2] = sy, src[3] = sx;
                    want = at(x, src);
                }
                ok = ok && at(o, idx) == want;
            } while (next(4, o->shape, idx));
            CHECK(ok, "window values %s mode %d", nn_dtype_name(dt), mode);
            nn_release(o);
        }
        /* HWC: x viewed as [5, 6, 3] (dims 2, 3, 1 of x, sample 0) */
        nn_tensor *s = nn_select(x, 0, 0);
        int perm[3] = {1, 2, 0};
        nn_tensor *hwc = nn_permute(s, perm);
        nn_tensor *o = nn_image_window(hwc, NN_IMAGE_HWC, 1, -1, 3, 4, NN_PAD_CONSTANT, fill, 3);
        bool ok = o && o->shape[0] == 3 && o->shape[1] == 4 && o->shape[2] == 3;
        for (int64_t y = 0; ok && y < 3; y++)
            for (int64_t xx = 0; xx < 4; xx++)
                for (int64_t c = 0; c < 3; c++) {
                    int64_t oi[3] = {y, xx, c}, si[3] = {1 + y, xx - 1, c};
                    double want = xx - 1 < 0 ? (dt == NN_BOOL ? 1 : fill[c]) : at(hwc, si);
                    ok = ok && at(o, oi) == want;
                }
        CHECK(ok, "HWC window %s", nn_dtype_name(dt));
        nn_release(o);
        /* flips of every dim */
        for (int d = -4; d < 4; d++) {
            nn_tensor *f = nn_image_flip(x, d);
            int dd = d < 0 ? d + 4 : d;
            int64_t idx[4] = {0}, src[4];
            bool fok = f && nn_is_contiguous(f);
            do {
                if (!f) break;
                memcpy(src, idx, sizeof src);
                src[dd] = shape[dd] - 1 - idx[dd];
                fok = fok && at(f, idx) == at(x, src);
            } while (next(4, shape, idx));
            CHECK(fok, "flip %s dim %d", nn_dtype_name(dt), d);
            nn_release(f);
        }
        nn_release(hwc), nn_release(s), nn_release(x);
    }
    nn_tensor *x = noncontig(shape, NN_F32, 10);
    CHECK(!nn_image_flip(x, 4) && strstr(nn_last_error(), "flip"), "flip dim out of range");
    int64_t one[1] = {5};
    nn_tensor *v = nn_zeros(1, one, NN_F32, NN_DEVICE_CPU);
    CHECK(!nn_image_window(v, NN_IMAGE_CHW, 0, 0, 1, 1, NN_PAD_CONSTANT, NULL, 0) && strstr(nn_last_error(), "crop: expected"),
          "window on 1-D: %s", nn_last_error());
    CHECK(!nn_image_window(x, NN_IMAGE_CHW, 0, 0, -1, 1, NN_PAD_CONSTANT, NULL, 0), "negative size");
    nn_release(v), nn_release(x);
}

/* the antialiased triangle filter over every input pixel (torch's _upsample_bilinear2d_aa) */
static void aa_weights(int64_t in, int64_t out, int64_t i, double *w)
{
    double scale = (double)in / (double)out, support = scale > 1 ? scale : 1, center = (i + 0.5) * scale, total = 0;
    for (int64_t j = 0; j < in; j++) {
        double d = fabs((j + 0.5 - center) / support);
        w[j] = d < 1 ? 1 - d : 0;
        total += w[j];
    }
    for (int64_t j = 0; j < in; j++) w[j] /= total;
}

static void test_resize(void)
{
    const nn_dtype dts[] = {NN_F32, NN_F64, NN_F16, NN_BF16, NN_U8};
    const int64_t sizes[][4] = {{7, 9, 3, 4}, {4, 5, 9, 11}, {6, 6, 6, 2}};
    for (int di = 0; di < 5; di++)
        for (int si = 0; si < 3; si++) {
            nn_dtype dt = dts[di];
            int64_t H = sizes[si][0], W = sizes[si][1], oh = sizes[si][2], ow = sizes[si][3];
            int64_t shape[4] = {2, 3, H, W};
            nn_tensor *x = noncontig(shape, dt, 256);
            nn_tensor *o = nn_image_resize(x, NN_IMAGE_CHW, oh, ow, NN_INTERP_BILINEAR, true);
            CHECK(o && o->dtype == dt && o->shape[2] == oh && o->shape[3] == ow, "resize %s", nn_dtype_name(dt));
            double wy[64], wx[64], tol = dt == NN_F32 ? 1e-4 : dt == NN_F64 ? 1e-10 : dt == NN_U8 ? 0.5 + 1e-9 : 2.0;
            bool ok = o != NULL;
            int64_t idx[4] = {0};
            do {
                if (!o) break;
                aa_weights(H, oh, idx[2], wy);
                aa_weights(W, ow, idx[3], wx);
                double want = 0;
                for (int64_t a = 0; a < H; a++)
                    for (int64_t b = 0; b < W; b++) {
                        int64_t si4[4] = {idx[0], idx[1], a, b};
                        want += wy[a] * wx[b] * at(x, si4);
                    }
                ok = ok && fabs(at(o, idx) - want) <= tol;
            } while (next(4, o->shape, idx));
            CHECK(ok, "resize values %s %lldx%lld -> %lldx%lld", nn_dtype_name(dt), (long long)H, (long long)W,
                  (long long)oh, (long long)ow);
            nn_release(o), nn_release(x);
        }
    int64_t shape[3] = {3, 4, 4};
    nn_tensor *i = nn_zeros(3, shape, NN_I64, NN_DEVICE_CPU);
    CHECK(!nn_image_resize(i, NN_IMAGE_CHW, 2, 2, NN_INTERP_BILINEAR, true) && nn_last_status() == NN_ERR_DTYPE &&
          strstr(nn_last_error(), "resize: expected a floating point or uint8 image, got int64"), "%s", nn_last_error());
    CHECK(!nn_image_resize(i, NN_IMAGE_HWC, 2, 2, NN_INTERP_BILINEAR, true) && strstr(nn_last_error(), "must be uint8"), "%s", nn_last_error());
    CHECK(!nn_image_resize(i, NN_IMAGE_CHW, 0, 2, NN_INTERP_BILINEAR, true) && strstr(nn_last_error(), "positive"), "%s", nn_last_error());
    nn_release(i);
}

static void test_pixels(void)
{
    /* to_tensor of a non-contiguous H x W x C view */
    int64_t shape[4] = {1, 4, 5, 3};
    nn_tensor *x = noncontig(shape, NN_U8, 256);
    nn_tensor *hwc = nn_select(x, 0, 0); /* [4, 5, 3] */
    nn_tensor *t = nn_image_to_tensor(hwc, NN_IMAGE_HWC);
    bool ok = t && t->dtype == NN_F32 && t->shape[0] == 3 && t->shape[1] == 4 && t->shape[2] == 5;
    for (int64_t c = 0; ok && c < 3; c++)
        for (int64_t y = 0; y < 4; y++)
            for (int64_t i = 0; i < 5; i++) {
                int64_t ti[3] = {c, y, i}, si[3] = {y, i, c};
                ok = ok && at(t, ti) == (double)((float)at(hwc, si) / 255.0f);
            }
    CHECK(ok, "to_tensor");
    nn_tensor *chw = nn_transpose(hwc, 0, 2); /* [3, 5, 4], non-contiguous: CHW keeps the shape */
    nn_tensor *tc = nn_image_to_tensor(chw, NN_IMAGE_CHW);
    ok = tc && tc->ndim == 3 && tc->shape[0] == 3 && tc->shape[1] == 5 && tc->shape[2] == 4;
    int64_t ci[3] = {0};
    do ok = ok && at(tc, ci) == (double)((float)at(chw, ci) / 255.0f);
    while (tc && next(3, tc->shape, ci));
    CHECK(ok, "to_tensor CHW");
    nn_release(tc), nn_release(chw);
    /* normalize_ in place on a non-contiguous float view */
    nn_tensor *f = nn_to_dtype(t, NN_F32);
    nn_tensor *v = nn_transpose(f, 1, 2); /* [3, 5, 4] */
    double mean[3] = {0.1, 0.2, 0.3}, std[3] = {0.5, 0.25, 2.0};
    nn_tensor *before = nn_clone(v);
    CHECK(nn_image_normalize_(v, mean, std, 3) == NN_OK, "normalize_");
    ok = true;
    int64_t idx[3] = {0};
    do {
        float want = ((float)at(before, idx) - (float)mean[idx[0]]) / (float)std[idx[0]];
        ok = ok && at(v, idx) == (double)want;
    } while (next(3, v->shape, idx));
    CHECK(ok, "normalize_ values through the view");
    double zero[1] = {0};
    CHECK(nn_image_normalize_(v, mean, zero, 1) == NN_ERR_ARG && strstr(nn_last_error(), "std evaluated to zero"), "%s", nn_last_error());
    CHECK(nn_image_normalize_(hwc, mean, std, 3) == NN_ERR_DTYPE, "normalize uint8");
    CHECK(nn_image_normalize_(v, mean, std, 2) == NN_ERR_SHAPE, "normalize 2 stats for 3 channels");
    /* convert: L24 */
    nn_tensor *l = nn_image_convert(hwc, 1);
    ok = l && l->shape[2] == 1;
    for (int64_t y = 0; ok && y < 4; y++)
        for (int64_t i = 0; i < 5; i++) {
            int64_t r[3] = {y, i, 0}, g[3] = {y, i, 1}, b[3] = {y, i, 2}, o[3] = {y, i, 0};
            unsigned want = ((unsigned)at(hwc, r) * 19595u + (unsigned)at(hwc, g) * 38470u + (unsigned)at(hwc, b) * 7471u + 0x8000u) >> 16;
            ok = ok && at(l, o) == want;
        }
    CHECK(ok, "convert to L");
    nn_release(l), nn_release(before), nn_release(v), nn_release(f), nn_release(t), nn_release(hwc), nn_release(x);
}

static void test_codecs(void)
{
    char err[256];
    uint8_t px[6 * 5 * 4];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)rnd_int(256);
    for (int c = 1; c <= 4; c++) {
        uint8_t *png;
        size_t len;
        CHECK(!nn_image_encode_png_buf(px, 5, 6, c, 6, &png, &len, err, sizeof err), "encode c=%d", c);
        CHECK(nn_image_sniff(png, len) == NN_IMAGE_FMT_PNG, "sniff png");
        nn_image_buf b;
        CHECK(!nn_image_decode_buf(png, len, 0, &b, err, sizeof err) && b.channels == c && b.height == 5 && b.width == 6 &&
              !memcmp(b.data, px, (size_t)(30 * c)), "png round trip c=%d", c);
        free(b.data);
        /* every truncation fails with a message and holds nothing */
        bool ok = true;
        for (size_t cut = 0; cut + 12 < len; cut++) {
            err[0] = 0;
            int rc = nn_image_decode_buf(png, cut, 3, &b, err, sizeof err);
            ok = ok && rc == -1 && err[0] && b.data == NULL;
        }
        CHECK(ok, "png truncations c=%d", c);
        /* a chunk whose length runs past the data is refused before libpng allocates for it
         * (libpng would buffer an sPLT's 1.9 GB first) */
        uint8_t bad[64];
        memcpy(bad, png, 33); /* signature and IHDR */
        memcpy(bad + 33, "\x73\x73\x73\x73sPLTpalette", 16);
        err[0] = 0;
        CHECK(nn_image_decode_buf(bad, 49, 0, &b, err, sizeof err) == -1 && strstr(err, "chunk runs past the end") && !b.data, "%s", err);
        free(png);
    }
    uint8_t *jpg;
    size_t len;
    CHECK(!nn_image_encode_jpeg_buf(px, 5, 6, 3, 90, &jpg, &len, err, sizeof err), "encode jpeg");
    CHECK(nn_image_sniff(jpg, len) == NN_IMAGE_FMT_JPEG, "sniff jpeg");
    nn_image_buf b;
    CHECK(!nn_image_decode_buf(jpg, len, 4, &b, err, sizeof err) && b.channels == 4 && b.height == 5 && b.width == 6 &&
          b.data[3] == 255, "jpeg to RGBA");
    free(b.data);
    bool ok = true;
    for (size_t cut = 0; cut < len; cut++) {
        err[0] = 0;
        ok = ok && nn_image_decode_buf(jpg, cut, 0, &b, err, sizeof err) == -1 && err[0] && !b.data;
    }
    CHECK(ok, "jpeg truncations");
    free(jpg);
    CHECK(nn_image_decode_buf("GIF89a", 6, 0, &b, err, sizeof err) == -1 && strstr(err, "not a PNG or JPEG"), "%s", err);
    CHECK(nn_image_encode_jpeg_buf(px, 5, 6, 4, 90, &jpg, &len, err, sizeof err) == -1 && strstr(err, "1 or 3 channels"), "%s", err);
    CHECK(nn_image_encode_png_buf(px, 5, 6, 3, 10, &jpg, &len, err, sizeof err) == -1 && strstr(err, "level"), "%s", err);
    /* the pixel limit */
    uint8_t *png;
    CHECK(!nn_image_encode_png_buf(px, 5, 6, 1, 6, &png, &len, err, sizeof err), "encode");
    nn_image_set_max_pixels(29);
    CHECK(nn_image_decode_buf(png, len, 0, &b, err, sizeof err) == -1 && strstr(err, "exceeds the limit of 29 pixels"), "%s", err);
    nn_image_set_max_pixels(0);
    CHECK(!nn_image_decode_buf(png, len, 0, &b, err, sizeof err), "limit restored");
    free(b.data);
    free(png);
    /* tensor level: errors name the function and the file */
    CHECK(!nn_image_read("read_image", "/nonexistent/x.png", 0) &&
          !strcmp(nn_last_error(), "read_image: cannot open '/nonexistent/x.png': No such file or directory"), "%s", nn_last_error());
}

int main(void)
{
    test_window_flip();
    test_resize();
    test_pixels();
    test_codecs();
    return CHECK_REPORT();
}
