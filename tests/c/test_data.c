/* engine/data: gzip reading, IDX and CIFAR-10 parsers, data sources (fetch and
 * collate against reference loops), and the worker-pool loader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "check.h"
#include "data/bytes.h"
#include "data/cifar.h"
#include "data/idx.h"
#include "data/loader.h"
#include "data/source.h"
#include "ops.h"

static uint64_t lcg_state = 12345;
static uint32_t lcg(void)
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(lcg_state >> 33);
}

static int has(const char *s) { return strstr(nn_last_error(), s) != NULL; }

static char tmpdir[64];
static const char *tmp_path(const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
    return buf;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

/* gzip-compress with zlib into a malloc'd buffer */
static uint8_t *gz(const uint8_t *p, size_t n, size_t *out_n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    uint8_t *o = malloc(cap);
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    z.next_out = o;
    z.avail_out = (uInt)cap;
    deflate(&z, Z_FINISH);
    *out_n = cap - z.avail_out;
    deflateEnd(&z);
    return o;
}

static size_t idx_header(uint8_t *p, uint8_t type, int ndim, const uint32_t *shape)
{
    p[0] = p[1] = 0;
    p[2] = type;
    p[3] = (uint8_t)ndim;
    for (int i = 0; i < ndim; i++)
        for (int b = 0; b < 4; b++) p[4 + 4 * i + b] = (uint8_t)(shape[i] >> (24 - 8 * b));
    return 4 + 4 * (size_t)ndim;
}

static void test_idx(void)
{
    uint8_t buf[4096];
    uint32_t shape[3] = {3, 4, 5};
    size_t h = idx_header(buf, 0x08, 3, shape);
    for (int i = 0; i < 60; i++) buf[h + i] = (uint8_t)lcg();
    nn_tensor *t = nn_idx_parse(buf, h + 60, "u8");
    CHECK(t && t->dtype == NN_U8 && t->ndim == 3 && t->shape[0] == 3 && t->shape[2] == 5, "u8 shape");
    CHECK(t && !memcmp(nn_data(t), buf + h, 60), "u8 data");
    nn_release(t);

    /* big-endian int16 / int32 / float32 / float64 */
    uint32_t s1[1] = {2};
    h = idx_header(buf, 0x0B, 1, s1);
    buf[h] = 0xFE, buf[h + 1] = 0xD4, buf[h + 2] = 0x01, buf[h + 3] = 0x2C; /* -300, 300 */
    t = nn_idx_parse(buf, h + 4, "i16");
    CHECK(t && t->dtype == NN_I16 && ((int16_t *)nn_data(t))[0] == -300 && ((int16_t *)nn_data(t))[1] == 300, "int16");
    nn_release(t);
    h = idx_header(buf, 0x0D, 1, s1);
    uint8_t f32[8] = {0x3F, 0xC0, 0, 0, 0xBE, 0x80, 0, 0}; /* 1.5, -0.25 */
    memcpy(buf + h, f32, 8);
    t = nn_idx_parse(buf, h + 8, "f32");
    CHECK(t && t->dtype == NN_F32 && ((float *)nn_data(t))[0] == 1.5f && ((float *)nn_data(t))[1] == -0.25f, "float32");
    nn_release(t);
    h = idx_header(buf, 0x0E, 1, (uint32_t[]){1});
    uint8_t f64[8] = {0x40, 0x09, 0x21, 0xFB, 0x54, 0x44, 0x2D, 0x18}; /* pi */
    memcpy(buf + h, f64, 8);
    t = nn_idx_parse(buf, h + 8, "f64");
    CHECK(t && t->dtype == NN_F64 && ((double *)nn_data(t))[0] == 3.141592653589793, "float64");
    nn_release(t);
    h = idx_header(buf, 0x0C, 1, (uint32_t[]){1});
    uint8_t i32[4] = {0x80, 0, 0, 0};
    memcpy(buf + h, i32, 4);
    t = nn_idx_parse(buf, h + 4, "i32");
    CHECK(t && ((int32_t *)nn_data(t))[0] == INT32_MIN, "int32");
    nn_release(t);

    /* errors */
    h = idx_header(buf, 0x08, 3, shape);
    CHECK(!nn_idx_parse(buf, 3, "f") && has("f: not an IDX file (3 bytes"), "short: %s", nn_last_error());
    CHECK(!nn_idx_parse(buf, h + 59, "f") && has("f: truncated IDX file (sizes [3, 4, 5] need 60 data bytes, found 59)"), "%s", nn_last_error());
    CHECK(!nn_idx_parse(buf, h + 61, "f") && has("f: corrupt IDX file (1 bytes after the data"), "%s", nn_last_error());
    CHECK(!nn_idx_parse(buf, 10, "f") && has("truncated IDX file (10 bytes, the header of 3 dimensions needs 16)"), "%s", nn_last_error());
    buf[2] = 0x0A;
    CHECK(!nn_idx_parse(buf, h + 60, "f") && has("unknown element type 0x0a"), "%s", nn_last_error());
    buf[2] = 0x08, buf[1] = 1;
    CHECK(!nn_idx_parse(buf, h + 60, "f") && has("not an IDX file (magic 00 01 08 03"), "%s", nn_last_error());
    buf[1] = 0;
    uint32_t huge[4] = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};
    h = idx_header(buf, 0x0E, 4, huge);
    CHECK(!nn_idx_parse(buf, h, "f") && has("too large"), "%s", nn_last_error());

    /* files: plain, gzip (taken over without a copy), truncated gzip, corrupt gzip */
    h = idx_header(buf, 0x08, 3, shape);
    for (int i = 0; i < 60; i++) buf[h + i] = (uint8_t)(i * 7);
    write_file(tmp_path("a.idx"), buf, h + 60);
    t = nn_idx_load(tmp_path("a.idx"));
    CHECK(t && ((uint8_t *)nn_data(t))[59] == (uint8_t)(59 * 7), "file");
    nn_release(t);
    size_t gn;
    uint8_t *g = gz(buf, h + 60, &gn);
    write_file(tmp_path("a.idx.gz"), g, gn);
    t = nn_idx_load(tmp_path("a.idx.gz"));
    CHECK(t && t->shape[1] == 4 && ((uint8_t *)nn_data(t))[13] == 91, "gz file");
    nn_release(t);
    write_file(tmp_path("cut.gz"), g, gn - 12);
    CHECK(!nn_idx_load(tmp_path("cut.gz")) && has("cut.gz: truncated gzip file"), "%s", nn_last_error());
    g[gn / 2] ^= 0xFF, g[gn / 2 + 1] ^= 0x55;
    write_file(tmp_path("bad.gz"), g, gn);
    t = nn_idx_load(tmp_path("bad.gz"));
    CHECK(!t && (has("bad.gz: corrupt gzip") || has("bad.gz: truncated") || has("bad.gz: corrupt IDX") || has("bad.gz: truncated IDX")),
          "%s", nn_last_error());
    nn_release(t);
    free(g);
    CHECK(!nn_idx_load(tmp_path("missing")) && has("missing: cannot open (No such file or directory)"), "%s", nn_last_error());

    /* nn_gunzip's output limit */
    uint8_t zeros[10000] = {0};
    g = gz(zeros, sizeof zeros, &gn);
    nn_bytes b;
    CHECK(nn_gunzip(g, gn, 1000, "z", &b) && has("decompressed data exceeds 1000 bytes"), "%s", nn_last_error());
    CHECK(!nn_gunzip(g, gn, 10000, "z", &b) && b.len == 10000, "exact limit");
    nn_bytes_free(&b);
    free(g);
}

static void test_cifar(void)
{
    enum { R = NN_CIFAR_RECORD };
    static uint8_t buf[3 * R];
    for (int r = 0; r < 3; r++) {
        buf[r * R] = (uint8_t)(r * 4);
        for (int i = 1; i < R; i++) buf[r * R + i] = (uint8_t)lcg();
    }
    nn_tensor *im, *lb;
    CHECK(!nn_cifar_parse(buf, 3 * R, "c", &im, &lb), "parse");
    CHECK(im->ndim == 4 && im->shape[0] == 3 && im->shape[1] == 3 && im->shape[2] == 32 && im->dtype == NN_U8, "images");
    CHECK(lb->dtype == NN_I64 && ((int64_t *)nn_data(lb))[2] == 8, "labels");
    int64_t at[4] = {1, 2, 31, 0};
    CHECK(nn_get_i64(im, at) == buf[R + 1 + 2 * 1024 + 31 * 32], "pixel (1, 2, 31, 0)");
    nn_release(im), nn_release(lb);
    CHECK(nn_cifar_parse(buf, 3 * R - 1, "c", &im, &lb) && has("c: truncated or corrupt CIFAR-10 file (9218 bytes"), "%s", nn_last_error());
    CHECK(!im && !lb, "nothing on error");
    CHECK(nn_cifar_parse(buf, 0, "c", &im, &lb) && has("c: empty file"), "%s", nn_last_error());
    buf[2 * R] = 10;
    CHECK(nn_cifar_parse(buf, 3 * R, "c", &im, &lb) && has("c: corrupt CIFAR-10 file (label 10 out of range [0, 9] in record 2)"), "%s",
          nn_last_error());
    buf[2 * R] = 9;
    /* files, concatenated in order */
    char p1[256], p2[256];
    snprintf(p1, sizeof p1, "%s", tmp_path("b1.bin"));
    snprintf(p2, sizeof p2, "%s", tmp_path("b2.bin"));
    write_file(p1, buf, 2 * R);
    write_file(p2, buf + 2 * R, R);
    const char *paths[2] = {p1, p2};
    CHECK(!nn_cifar_load(paths, 2, &im, &lb), "load: %s", nn_last_error());
    CHECK(im && im->shape[0] == 3 && !memcmp((uint8_t *)nn_data(im) + 2 * 3072, buf + 2 * R + 1, 3072), "second file's record");
    CHECK(lb && ((int64_t *)nn_data(lb))[2] == 9 && ((int64_t *)nn_data(lb))[1] == 4, "labels across files");
    nn_release(im), nn_release(lb);
    write_file(p2, buf, 100);
    CHECK(nn_cifar_load(paths, 2, &im, &lb) && has("b2.bin: truncated or corrupt"), "%s", nn_last_error());
}

/* CIFAR-100: a coarse then a fine label byte before each image */
static void test_cifar100(void)
{
    enum { R = NN_CIFAR_IMAGE + 2 };
    static uint8_t buf[2 * R];
    for (int r = 0; r < 2; r++) {
        buf[r * R] = (uint8_t)(19 - r), buf[r * R + 1] = (uint8_t)(99 - 7 * r);
        for (int i = 2; i < R; i++) buf[r * R + i] = (uint8_t)lcg();
    }
    nn_tensor *im, *lb, *co;
    CHECK(!nn_cifar_parse_as(&nn_cifar100, buf, 2 * R, "h", &im, &lb, &co), "parse: %s", nn_last_error());
    CHECK(lb && ((int64_t *)nn_data(lb))[0] == 99 && ((int64_t *)nn_data(lb))[1] == 92, "fine labels");
    CHECK(co && ((int64_t *)nn_data(co))[0] == 19 && ((int64_t *)nn_data(co))[1] == 18, "coarse labels");
    CHECK(im && !memcmp((uint8_t *)nn_data(im) + NN_CIFAR_IMAGE, buf + R + 2, NN_CIFAR_IMAGE), "second image");
    nn_release(im), nn_release(lb), nn_release(co);
    CHECK(nn_cifar_parse_as(&nn_cifar100, buf, 2 * R - 1, "h", &im, &lb, &co) &&
              has("h: truncated or corrupt CIFAR-100 file (6147 bytes is not a whole number of 3074-byte records"), "%s", nn_last_error());
    CHECK(!im && !lb && !co, "nothing on error");
    buf[R + 1] = 100;
    CHECK(nn_cifar_parse_as(&nn_cifar100, buf, 2 * R, "h", &im, &lb, &co) &&
              has("h: corrupt CIFAR-100 file (fine label 100 out of range [0, 99] in record 1)"), "%s", nn_last_error());
    buf[R + 1] = 0, buf[0] = 20;
    CHECK(nn_cifar_parse_as(&nn_cifar100, buf, 2 * R, "h", &im, &lb, &co) &&
              has("h: corrupt CIFAR-100 file (coarse label 20 out of range [0, 19] in record 0)"), "%s", nn_last_error());
    buf[0] = 0;
    CHECK(!nn_cifar_parse_as(&nn_cifar100, buf, 2 * R, "h", &im, &lb, NULL), "coarse labels not asked for");
    nn_release(im), nn_release(lb);
}

/* a random tensor of dtype dt */
static nn_tensor *rnd(int ndim, const int64_t *shape, nn_dtype dt)
{
    nn_tensor *t = nn_empty(ndim, shape, dt, NN_DEVICE_CPU);
    int64_t n = nn_numel(t);
    size_t es = nn_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        if (dt == NN_U8) ((uint8_t *)nn_data(t))[i] = (uint8_t)lcg();
        else nn_store_f64((char *)nn_data(t) + i * es, dt, (double)(lcg() % 2000) / 7.0 - 100);
    }
    return t;
}

static int pinned_allocs, pinned_frees;
static void *fake_pinned_alloc(size_t n)
{
    pinned_allocs++;
    return malloc(n);
}
static void fake_pinned_free(void *p)
{
    pinned_frees++;
    free(p);
}

static void test_source(void)
{
    int64_t N = 50;
    nn_tensor *img = rnd(3, (int64_t[]){N, 6, 5}, NN_U8);       /* [H, W] images */
    nn_tensor *rgb = rnd(4, (int64_t[]){N, 3, 4, 2}, NN_U8);    /* [C, H, W] images */
    nn_tensor *lab = rnd(1, &N, NN_I64);
    nn_tensor *big = rnd(3, (int64_t[]){2, N, 3}, NN_F64);      /* transposed below: a non-contiguous field */
    nn_tensor *feat = nn_transpose(big, 0, 1);                  /* [N, 2, 3] */

    double mean1[1] = {0.5}, std1[1] = {0.25}, mean3[3] = {0.1, 0.2, 0.3}, std3[3] = {0.5, 0.6, 0.7};
    nn_data_op gray_ops[2] = {{NN_DATA_TO_TENSOR, 0, NULL, NULL}, {NN_DATA_NORMALIZE, 1, mean1, std1}};
    nn_data_op rgb_ops[3] = {{NN_DATA_TO_TENSOR, 0, NULL, NULL}, {NN_DATA_NORMALIZE, 3, mean3, std3}, {NN_DATA_NORMALIZE, 1, mean1, std1}};
    nn_data_source *s = nn_data_source_new();
    CHECK(!nn_data_add_field(s, img, gray_ops, 2), "gray field");
    CHECK(!nn_data_add_field(s, rgb, rgb_ops, 3), "rgb field");
    CHECK(!nn_data_add_field(s, lab, NULL, 0), "label field");
    CHECK(!nn_data_add_field(s, feat, NULL, 0), "non-contiguous field");
    CHECK(nn_data_nfields(s) == 4 && nn_data_length(s) == N, "fields, length");

    /* not run in C: NN_ERR_NOTIMPL; wrong rows: a shape error */
    nn_data_op norm_only[1] = {{NN_DATA_NORMALIZE, 1, mean1, std1}};
    CHECK(nn_data_add_field(s, img, norm_only, 1) == NN_ERR_NOTIMPL, "Normalize without ToTensor");
    CHECK(nn_data_add_field(s, lab, gray_ops, 1) == NN_ERR_NOTIMPL, "ToTensor on int64");
    double zero[1] = {0};
    nn_data_op zstd[2] = {{NN_DATA_TO_TENSOR, 0, NULL, NULL}, {NN_DATA_NORMALIZE, 1, mean1, zero}};
    CHECK(nn_data_add_field(s, img, zstd, 2) == NN_ERR_NOTIMPL, "zero std");
    nn_data_op bad_n[2] = {{NN_DATA_TO_TENSOR, 0, NULL, NULL}, {NN_DATA_NORMALIZE, 2, mean3, std3}};
    CHECK(nn_data_add_field(s, rgb, bad_n, 2) == NN_ERR_NOTIMPL, "2 means for 3 channels");
    nn_tensor *short_t = rnd(1, (int64_t[]){N - 1}, NN_I64);
    CHECK(nn_data_add_field(s, short_t, NULL, 0) == NN_ERR_SHAPE && has("field 4 has 49 samples, expected 50"), "%s", nn_last_error());
    nn_release(short_t);

    int64_t idx[7] = {3, 0, 49, -1, 17, 17, 8};
    nn_tensor *out[NN_DATA_MAX_FIELDS];
    CHECK(!nn_data_fetch(s, idx, 7, false, out), "fetch");
    CHECK(out[0]->ndim == 4 && out[0]->shape[0] == 7 && out[0]->shape[1] == 1 && out[0]->shape[2] == 6 && out[0]->dtype == NN_F32, "gray shape");
    CHECK(out[1]->ndim == 4 && out[1]->shape[1] == 3 && out[1]->shape[3] == 2, "rgb shape");
    CHECK(out[2]->ndim == 1 && out[2]->dtype == NN_I64, "label shape");
    CHECK(out[3]->ndim == 3 && out[3]->shape[1] == 2 && out[3]->dtype == NN_F64, "feature shape");
    int bad = 0;
    for (int b = 0; b < 7; b++) {
        int64_t r = idx[b] < 0 ? idx[b] + N : idx[b];
        for (int y = 0; y < 6; y++)
            for (int x = 0; x < 5; x++) { /* torchvision: float(v) / 255, then (x - mean) / std, in float32 */
                float v = (float)nn_get_i64(img, (int64_t[]){r, y, x}) / 255.0f;
                v = (v - 0.5f) / 0.25f;
                bad += nn_get_f64(out[0], (int64_t[]){b, 0, y, x}) != v;
            }
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 4; y++)
                for (int x = 0; x < 2; x++) {
                    float v = (float)nn_get_i64(rgb, (int64_t[]){r, c, y, x}) / 255.0f;
                    v = (v - (float)mean3[c]) / (float)std3[c];
                    v = (v - 0.5f) / 0.25f;
                    bad += nn_get_f64(out[1], (int64_t[]){b, c, y, x}) != v;
                }
        bad += nn_get_i64(out[2], (int64_t[]){b}) != nn_get_i64(lab, (int64_t[]){r});
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) bad += nn_get_f64(out[3], (int64_t[]){b, i, j}) != nn_get_f64(feat, (int64_t[]){r, i, j});
    }
    CHECK(bad == 0, "fetched values match the reference (%d wrong)", bad);
    for (int f = 0; f < 4; f++) nn_release(out[f]);

    /* index errors; empty batch */
    int64_t oob[2] = {1, 50};
    CHECK(nn_data_fetch(s, oob, 2, false, out) == NN_ERR_INDEX && has("index 50 is out of range for a dataset of size 50"), "%s", nn_last_error());
    CHECK(!out[0] && !out[3], "no outputs on error");
    oob[1] = -51;
    CHECK(nn_data_fetch(s, oob, 2, false, out) == NN_ERR_INDEX, "index -51");
    CHECK(!nn_data_fetch(s, idx, 0, false, out) && out[0]->shape[0] == 0 && out[0]->ndim == 4, "empty batch");
    for (int f = 0; f < 4; f++) nn_release(out[f]);

    /* subsets compose their maps */
    int64_t m1[5] = {10, 20, 30, 40, -1}, m2[3] = {4, 0, -2};
    nn_data_source *s1 = nn_data_source_subset(s, m1, 5);
    nn_data_source *s2 = nn_data_source_subset(s1, m2, 3);
    CHECK(s1 && s2 && nn_data_length(s2) == 3, "subset lengths");
    int64_t all[3] = {0, 1, 2};
    CHECK(!nn_data_fetch(s2, all, 3, false, out), "subset fetch");
    int64_t want[3] = {49, 10, 40};
    bad = 0;
    for (int b = 0; b < 3; b++) bad += nn_get_i64(out[2], (int64_t[]){b}) != nn_get_i64(lab, (int64_t[]){want[b]});
    CHECK(bad == 0, "subset of a subset picks rows 49, 10, 40");
    for (int f = 0; f < 4; f++) nn_release(out[f]);
    int64_t m3[1] = {5};
    CHECK(!nn_data_source_subset(s1, m3, 1) && has("index 5 is out of range for a dataset of size 5"), "%s", nn_last_error());
    CHECK(nn_data_add_field(s1, lab, NULL, 0) == NN_ERR_ARG, "no fields added to a subset");

    /* pinned memory through the registered allocator */
    CHECK(!nn_data_fetch(s, idx, 3, true, out) && !out[0]->storage->pinned, "no allocator: ordinary memory");
    for (int f = 0; f < 4; f++) nn_release(out[f]);
    nn_data_set_pinned_allocator(fake_pinned_alloc, fake_pinned_free);
    CHECK(!nn_data_fetch(s, idx, 3, true, out) && out[0]->storage->pinned && pinned_allocs == 4, "pinned batches");
    bad = 0;
    for (int y = 0; y < 6; y++) bad += nn_get_f64(out[0], (int64_t[]){1, 0, y, 2}) != (((float)nn_get_i64(img, (int64_t[]){0, y, 2}) / 255.0f) - 0.5f) / 0.25f;
    CHECK(bad == 0, "pinned values");
    for (int f = 0; f < 4; f++) nn_release(out[f]);
    CHECK(pinned_frees == 4, "pinned frees");
    nn_data_set_pinned_allocator(NULL, NULL);

    nn_data_source_release(s2);
    nn_data_source_release(s1);
    nn_data_source_release(s);
    nn_release(img), nn_release(rgb), nn_release(lab), nn_release(big), nn_release(feat);
}

static bool same_tensor(nn_tensor *a, nn_tensor *b)
{
    if (a->ndim != b->ndim || a->dtype != b->dtype || memcmp(a->shape, b->shape, a->ndim * sizeof *a->shape)) return false;
    return !memcmp(nn_data(a), nn_data(b), (size_t)nn_numel(a) * nn_dtype_size(a->dtype));
}

static void test_loader(void)
{
    int64_t N = 1000;
    nn_tensor *img = rnd(3, (int64_t[]){N, 28, 28}, NN_U8), *lab = rnd(1, &N, NN_I64);
    nn_data_op ops[1] = {{NN_DATA_TO_TENSOR, 0, NULL, NULL}};
    nn_data_source *s = nn_data_source_new();
    nn_data_add_field(s, img, ops, 1);
    nn_data_add_field(s, lab, NULL, 0);
    /* a shuffled epoch in uneven batches */
    int64_t perm[1000], off[40];
    for (int64_t i = 0; i < N; i++) perm[i] = i;
    for (int64_t i = N - 1; i > 0; i--) {
        int64_t j = lcg() % (i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int nb = 0;
    off[0] = 0;
    while (off[nb] < N) {
        int64_t next = off[nb] + 1 + lcg() % 60;
        off[++nb] = next < N ? next : N;
    }
    for (int workers = 1; workers <= 4; workers++)
        for (int pf = 1; pf <= 3; pf += 2) {
            nn_loader *l = nn_loader_new(s, workers, pf, false, 0);
            int mismatches = 0, count = 0;
            for (int epoch = 0; epoch < 2; epoch++) {
                CHECK(!nn_loader_start(l, perm, off, nb), "start");
                for (;;) {
                    nn_tensor *out[2], *ref[2];
                    bool done;
                    CHECK(!nn_loader_next(l, out, &done), "next");
                    if (done) break;
                    nn_data_fetch(s, perm + off[count % nb], off[count % nb + 1] - off[count % nb], false, ref);
                    mismatches += !same_tensor(out[0], ref[0]) || !same_tensor(out[1], ref[1]);
                    for (int f = 0; f < 2; f++) nn_release(out[f]), nn_release(ref[f]);
                    count++;
                }
            }
            CHECK(count == 2 * nb && mismatches == 0, "%d workers, prefetch %d: %d batches in order (%d mismatches)", workers, pf, count, mismatches);
            /* stop half way, start again, free with work outstanding */
            nn_loader_start(l, perm, off, nb);
            nn_tensor *out[2];
            bool done;
            for (int k = 0; k < 3; k++) {
                nn_loader_next(l, out, &done);
                nn_release(out[0]), nn_release(out[1]);
            }
            nn_loader_stop(l);
            CHECK(!nn_loader_next(l, out, &done) && done, "stopped: the epoch is over");
            nn_loader_start(l, perm, off, nb);
            CHECK(!nn_loader_next(l, out, &done) && !done && out[0]->shape[0] == off[1], "restarted from batch 0");
            nn_release(out[0]), nn_release(out[1]);
            nn_loader_free(l);
        }

    /* an index out of range in batch 3: batches 0..2 arrive, then the worker's error (whichever worker finished first) */
    int64_t bad_idx[8] = {0, 1, 2, 3, 4, 5, 1000, 7}, bad_off[5] = {0, 2, 4, 6, 7};
    nn_loader *l = nn_loader_new(s, 2, 2, false, 0);
    nn_loader_start(l, bad_idx, bad_off, 3);
    int got = 0;
    nn_tensor *out[2];
    bool done = false;
    while (!nn_loader_next(l, out, &done) && !done) {
        got++;
        nn_release(out[0]), nn_release(out[1]);
    }
    CHECK(got == 3 && done, "the three good batches alone: %d", got);
    nn_loader_start(l, bad_idx, bad_off, 4);
    got = 0;
    nn_status st;
    while (!(st = nn_loader_next(l, out, &done)) && !done) {
        got++;
        nn_release(out[0]), nn_release(out[1]);
    }
    CHECK(st == NN_ERR_INDEX && got == 3 && has("DataLoader worker ") && has(": index 1000 is out of range for a dataset of size 1000"), "%s",
          nn_last_error());
    CHECK(!nn_loader_next(l, out, &done) && done, "the epoch ended with the error");
    nn_loader_free(l);

    /* bad arguments */
    CHECK(!nn_loader_new(s, 0, 2, false, 0) && has("num_workers must be in [1, 1024]"), "%s", nn_last_error());
    CHECK(!nn_loader_new(s, 1, 0, false, 0) && has("prefetch_factor must be positive"), "%s", nn_last_error());
    l = nn_loader_new(s, 1, 1, false, 0);
    int64_t dec[3] = {0, 5, 3};
    CHECK(nn_loader_start(l, perm, dec, 2) == NN_ERR_ARG, "decreasing offsets");
    nn_loader_start(l, perm, off, nb);
    nn_loader_free(l); /* with batches in flight */
    CHECK(1, "freed with work outstanding");
    nn_data_source_release(s);
    nn_release(img), nn_release(lab);
}

static void test_fashion(void)
{
    const char *root = "/usr/share/datasets/fashion-mnist";
    char p[256];
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte.gz", root);
    if (access(p, R_OK)) {
        printf("skip: %s not installed\n", p);
        return;
    }
    nn_tensor *lab = nn_idx_load(p);
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", root);
    nn_tensor *img = nn_idx_load(p);
    CHECK(lab && lab->ndim == 1 && lab->shape[0] == 60000, "60000 labels");
    CHECK(img && img->ndim == 3 && img->shape[0] == 60000 && img->shape[1] == 28 && img->shape[2] == 28, "60000 images");
    if (!lab || !img) return;
    const uint8_t *l = nn_data(lab), *im = nn_data(img);
    int64_t lsum = 0, isum = 0;
    for (int i = 0; i < 60000; i++) lsum += l[i];
    for (int i = 0; i < 784; i++) isum += im[i];
    CHECK(l[0] == 9, "first label %d", l[0]);
    CHECK(isum == 76247, "first image's byte sum %lld", (long long)isum);
    CHECK(lsum == 270000, "label sum %lld", (long long)lsum);
    nn_release(lab), nn_release(img);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/nn_test_data_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    test_idx();
    test_cifar();
    test_cifar100();
    test_source();
    test_loader();
    test_fashion();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
    return CHECK_REPORT();
}
