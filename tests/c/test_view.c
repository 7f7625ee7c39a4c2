/* Views: shapes, strides and element values (read through strides, checked
 * against index arithmetic here) on non-contiguous inputs, shared storage,
 * chunk/split sizes and error messages. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#pragma GCC diagnostic ignored "-Wformat-zero-length" /* CHECK(cond) without a message */
#include "ops.h"

static const nn_dtype all_dtypes[] = {NN_F32, NN_F64, NN_F16, NN_BF16, NN_I64, NN_I32, NN_I16, NN_I8, NN_U8, NN_BOOL};
#define NDT ((int)(sizeof all_dtypes / sizeof *all_dtypes))

static uint64_t lcg = 12345;
static int64_t rnd_int(int64_t n)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (int64_t)((lcg >> 33) % (uint64_t)n);
}

/* address of element idx, from storage, offset and strides */
static char *addr(const nn_tensor *t, const int64_t *idx)
{
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) off += idx[i] * t->strides[i];
    return (char *)t->storage->data + off * (int64_t)nn_dtype_size(t->dtype);
}
static double at(const nn_tensor *t, const int64_t *idx) { return nn_load_f64(addr(t, idx), t->dtype); }
static void put(const nn_tensor *t, const int64_t *idx, double v) { nn_store_f64(addr(t, idx), t->dtype, v); }

/* next row-major index; false after the last */
static bool next(int ndim, const int64_t *shape, int64_t *idx)
{
    for (int d = ndim - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

static int64_t numel_of(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

/* A contiguous tensor whose element with flat index k holds value(k) (distinct small integers). */
static double value(int64_t k, nn_dtype dt)
{
    if (dt == NN_BOOL) return k % 2;
    if (dt == NN_U8) return k % 251;
    if (dt == NN_I8) return k % 251 - 125;
    if (dt == NN_BF16) return k % 201 - 100; /* exact in bfloat16 */
    return (double)(k % 997) - 300;
}
static nn_tensor *seq(int ndim, const int64_t *shape, nn_dtype dt)
{
    nn_tensor *t = nn_empty(ndim, shape, dt, NN_DEVICE_CPU);
    int64_t n = nn_numel(t);
    for (int64_t k = 0; k < n; k++) nn_store_f64((char *)t->storage->data + k * nn_dtype_size(dt), dt, value(k, dt));
    return t;
}

static bool shape_is(const nn_tensor *t, int ndim, const int64_t *shape)
{
    return t && t->ndim == ndim && (ndim == 0 || !memcmp(t->shape, shape, ndim * sizeof *shape));
}
static bool strides_are(const nn_tensor *t, const int64_t *strides)
{
    return t && (t->ndim == 0 || !memcmp(t->strides, strides, t->ndim * sizeof *strides));
}
#define SHAPE(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

static bool error_has(const char *s) { return strstr(nn_last_error(), s) != NULL; }

/* ---- view / reshape / flatten ---- */
static void test_view(void)
{
    int64_t b[] = {2, 3, 4};
    nn_tensor *base = seq(3, b, NN_F32);
    nn_tensor *v = nn_view(base, SHAPE(6, 4));
    CHECK(shape_is(v, SHAPE(6, 4)) && strides_are(v, (int64_t[]){4, 1}));
    CHECK(v && v->storage == base->storage);
    nn_release(v);
    v = nn_view(base, SHAPE(4, -1));
    CHECK(shape_is(v, SHAPE(4, 6)) && strides_are(v, (int64_t[]){6, 1}));
    bool ok = true;
    int64_t idx[2] = {0, 0};
    do ok &= at(v, idx) == value(idx[0] * 6 + idx[1], NN_F32);
    while (next(2, v->shape, idx));
    CHECK(ok, "view [4, 6] values");
    nn_release(v);
    v = nn_view(base, SHAPE(-1));
    CHECK(shape_is(v, SHAPE(24)));
    nn_release(v);

    /* errors */
    CHECK(!nn_view(base, SHAPE(5, 5)) && error_has("shape '[5, 5]' is invalid for input of size 24"), "%s", nn_last_error());
    CHECK(!nn_view(base, SHAPE(-1, -1)) && error_has("only one dimension can be inferred"));
    CHECK(!nn_view(base, SHAPE(-2, 12)) && error_has("invalid shape dimension -2"));
    CHECK(!nn_view(base, SHAPE(5, -1)) && error_has("shape '[5, -1]' is invalid for input of size 24"));
    nn_tensor *six = seq(SHAPE(6), NN_F32);
    CHECK(!nn_view(six, SHAPE(2, 4)) && error_has("shape '[2, 4]' is invalid for input of size 6"), "%s", nn_last_error());
    nn_release(six);
    nn_release(base);

    /* transposed [4, 6] -> [6, 4] with strides [1, 6] */
    base = seq(SHAPE(4, 6), NN_F64);
    nn_tensor *t = nn_transpose(base, 0, 1);
    CHECK(shape_is(t, SHAPE(6, 4)) && strides_are(t, (int64_t[]){1, 6}));
    v = nn_view(t, SHAPE(6, 2, 2)); /* split the strided dim: fine */
    CHECK(shape_is(v, SHAPE(6, 2, 2)) && strides_are(v, (int64_t[]){1, 12, 6}));
    ok = true;
    int64_t i3[3] = {0};
    do ok &= at(v, i3) == value((i3[1] * 2 + i3[2]) * 6 + i3[0], NN_F64);
    while (next(3, v->shape, i3));
    CHECK(ok, "view of transposed values");
    nn_release(v);
    v = nn_view(t, SHAPE(3, 2, 4));
    CHECK(shape_is(v, SHAPE(3, 2, 4)) && strides_are(v, (int64_t[]){2, 1, 6}));
    ok = true;
    memset(i3, 0, sizeof i3);
    do ok &= at(v, i3) == value(i3[2] * 6 + i3[0] * 2 + i3[1], NN_F64);
    while (next(3, v->shape, i3));
    CHECK(ok, "view of transposed values (split dim 0)");
    nn_release(v);
    CHECK(!nn_view(t, SHAPE(24)) && error_has("view size is not compatible with input tensor's size and stride (at least one "
                                               "dimension spans across two contiguous subspaces). Use .reshape(...) instead."));
    CHECK(!nn_view(t, SHAPE(4, 6)) && error_has("view size is not compatible"));

    /* reshape: a copy where a view cannot be made, a view where it can */
    nn_tensor *r = nn_reshape(t, SHAPE(24));
    CHECK(shape_is(r, SHAPE(24)) && r->storage != base->storage && nn_is_contiguous(r));
    ok = true;
    for (int64_t k = 0; k < 24; k++) ok &= at(r, &k) == value((k % 4) * 6 + k / 4, NN_F64);
    CHECK(ok, "reshape copy values");
    nn_release(r);
    r = nn_reshape(t, SHAPE(2, 3, 4));
    CHECK(shape_is(r, SHAPE(2, 3, 4)) && r->storage == base->storage && strides_are(r, (int64_t[]){3, 1, 6}));
    nn_release(r);
    CHECK(!nn_reshape(t, SHAPE(7, -1)) && error_has("reshape") && error_has("invalid for input of size 24"));
    nn_release(t);

    /* narrowed rows: [4, 4] with strides [6, 1] */
    nn_tensor *n = nn_narrow(base, 1, 1, 4);
    v = nn_view(n, SHAPE(2, 2, 2, 2));
    CHECK(shape_is(v, SHAPE(2, 2, 2, 2)) && strides_are(v, (int64_t[]){12, 6, 2, 1}) && v->offset == 1);
    ok = true;
    int64_t i4[4] = {0};
    do ok &= at(v, i4) == value((i4[0] * 2 + i4[1]) * 6 + 1 + i4[2] * 2 + i4[3], NN_F64);
    while (next(4, v->shape, i4));
    CHECK(ok, "view of narrowed values");
    nn_release(v);
    CHECK(!nn_view(n, SHAPE(16)) && error_has("view size is not compatible"));
    /* size-1 dims with odd strides do not matter */
    nn_tensor *odd = nn_make_view(base, 3, (int64_t[]){4, 1, 6}, (int64_t[]){6, 99, 1}, 0);
    v = nn_view(odd, SHAPE(24));
    CHECK(shape_is(v, SHAPE(24)) && strides_are(v, (int64_t[]){1}));
    nn_release(v);
    v = nn_view(odd, SHAPE(4, 1, 1, 6, 1));
    CHECK(shape_is(v, SHAPE(4, 1, 1, 6, 1)));
    ok = true;
    int64_t i5[5] = {0};
    do ok &= v && at(v, i5) == value(i5[0] * 6 + i5[3], NN_F64);
    while (v && next(5, v->shape, i5));
    CHECK(ok);
    nn_release(v);
    nn_release(odd);
    nn_release(n);

    /* flatten */
    nn_tensor *c3 = seq(SHAPE(2, 3, 4), NN_I32);
    nn_tensor *f = nn_flatten(c3, 0, -1);
    CHECK(shape_is(f, SHAPE(24)) && f->storage == c3->storage);
    nn_release(f);
    f = nn_flatten(c3, 1, 2);
    CHECK(shape_is(f, SHAPE(2, 12)) && f->storage == c3->storage);
    nn_release(f);
    f = nn_flatten(c3, -2, -2);
    CHECK(shape_is(f, SHAPE(2, 3, 4)));
    nn_release(f);
    nn_tensor *p = nn_permute(c3, (int[]){2, 0, 1}); /* [4, 2, 3] strides [1, 12, 4] */
    f = nn_flatten(p, 1, 2);
    CHECK(shape_is(f, SHAPE(4, 6)) && f->storage == c3->storage && strides_are(f, (int64_t[]){1, 4}), "merge contiguous dims");
    nn_release(f);
    f = nn_flatten(p, 0, 1); /* not viewable: copied */
    CHECK(shape_is(f, SHAPE(8, 3)) && f->storage != c3->storage);
    ok = true;
    int64_t i2[2] = {0};
    do ok &= f && at(f, i2) == value((i2[0] % 2) * 12 + i2[1] * 4 + i2[0] / 2, NN_I32);
    while (f && next(2, f->shape, i2));
    CHECK(ok, "flatten copy values");
    nn_release(f);
    nn_release(p);
    CHECK(!nn_flatten(c3, 2, 1) && error_has("start_dim cannot come after end_dim"));
    CHECK(!nn_flatten(c3, 0, 3) && error_has("dimension out of range"));
    nn_release(c3);
    nn_release(base);

    /* 0-dim and empty */
    nn_tensor *s = seq(0, NULL, NN_F32);
    v = nn_view(s, SHAPE(1, 1));
    CHECK(shape_is(v, SHAPE(1, 1)) && at(v, (int64_t[]){0, 0}) == value(0, NN_F32));
    nn_release(v);
    v = nn_view(s, SHAPE(-1));
    CHECK(shape_is(v, SHAPE(1)));
    nn_tensor *back = v ? nn_view(v, 0, NULL) : NULL;
    CHECK(back && back->ndim == 0);
    nn_release(back);
    nn_release(v);
    f = nn_flatten(s, 0, -1);
    CHECK(shape_is(f, SHAPE(1)));
    nn_release(f);
    nn_release(s);
    nn_tensor *e = nn_empty(2, (int64_t[]){0, 3}, NN_F32, NN_DEVICE_CPU);
    v = nn_view(e, SHAPE(3, 0, 5));
    CHECK(shape_is(v, SHAPE(3, 0, 5)));
    nn_release(v);
    v = nn_view(e, SHAPE(-1, 3));
    CHECK(shape_is(v, SHAPE(0, 3)));
    nn_release(v);
    CHECK(!nn_view(e, SHAPE(0, -1)) && error_has("ambiguous"));
    nn_release(e);
}

/* ---- transpose / t / permute ---- */
static void test_transpose_permute(void)
{
    for (int di = 0; di < NDT; di++) {
        nn_dtype dt = all_dtypes[di];
        nn_tensor *base = seq(SHAPE(3, 4, 5), dt);
        nn_tensor *t = nn_transpose(base, 0, -1);
        CHECK(shape_is(t, SHAPE(5, 4, 3)) && strides_are(t, (int64_t[]){1, 5, 20}) && t->storage == base->storage);
        bool ok = true;
        int64_t i[3] = {0};
        do ok &= at(t, i) == value(i[2] * 20 + i[1] * 5 + i[0], dt);
        while (next(3, t->shape, i));
        CHECK(ok, "transpose values %s", nn_dtype_name(dt));
        int dims[3] = {1, 2, 0};
        nn_tensor *p = nn_permute(t, dims); /* of the transposed: [4, 3, 5] */
        CHECK(shape_is(p, SHAPE(4, 3, 5)) && strides_are(p, (int64_t[]){5, 20, 1}));
        ok = true;
        memset(i, 0, sizeof i);
        do ok &= at(p, i) == value(i[1] * 20 + i[0] * 5 + i[2], dt);
        while (next(3, p->shape, i));
        CHECK(ok, "permute values %s", nn_dtype_name(dt));
        nn_release(p);
        nn_release(t);
        nn_release(base);
    }
    nn_tensor *m = seq(SHAPE(2, 3), NN_F32);
    nn_tensor *mt = nn_t(m);
    CHECK(shape_is(mt, SHAPE(3, 2)) && strides_are(mt, (int64_t[]){1, 3}));
    nn_tensor *mtt = nn_t(mt);
    CHECK(shape_is(mtt, SHAPE(2, 3)) && strides_are(mtt, (int64_t[]){3, 1}));
    nn_release(mtt);
    nn_release(mt);
    nn_tensor *m3 = seq(SHAPE(2, 3, 4), NN_F32);
    CHECK(!nn_t(m3) && error_has("t() expects a tensor with <= 2 dimensions, but self is 3D"), "%s", nn_last_error());
    CHECK(!nn_permute(m3, (int[]){0, 1, 1}) && error_has("duplicate dims"));
    CHECK(!nn_permute(m3, (int[]){0, 1, 3}) && error_has("dimension out of range"));
    CHECK(!nn_transpose(m3, 0, 3) && error_has("transpose: dimension out of range (expected to be in range of [-3, 2], but got 3)"),
          "%s", nn_last_error());
    nn_tensor *pn = nn_permute(m3, (int[]){-1, -3, -2});
    CHECK(shape_is(pn, SHAPE(4, 2, 3)) && strides_are(pn, (int64_t[]){1, 12, 4}));
    nn_release(pn);
    nn_tensor *v1 = seq(SHAPE(5), NN_F32);
    nn_tensor *v1t = nn_t(v1);
    CHECK(shape_is(v1t, SHAPE(5)) && v1t->storage == v1->storage);
    nn_release(v1t);
    nn_release(v1);
    nn_tensor *s = seq(0, NULL, NN_F32);
    nn_tensor *st = nn_t(s), *sT = nn_transpose(s, 0, -1);
    CHECK(st && st->ndim == 0 && sT && sT->ndim == 0);
    nn_release(st), nn_release(sT), nn_release(s);
    nn_release(m3);
    nn_release(m);
}

/* ---- narrow / slice / select ---- */
static void test_narrow_slice_select(void)
{
    nn_tensor *base = seq(SHAPE(6, 10), NN_I64);
    nn_tensor *t = nn_transpose(base, 0, 1); /* [10, 6], element (i, j) = value(j*10 + i) */
    nn_tensor *n = nn_narrow(t, 0, 2, 5);
    CHECK(shape_is(n, SHAPE(5, 6)) && strides_are(n, (int64_t[]){1, 10}) && n->offset == 2);
    bool ok = true;
    int64_t i[2] = {0};
    do ok &= at(n, i) == value(i[1] * 10 + i[0] + 2, NN_I64);
    while (next(2, n->shape, i));
    CHECK(ok, "narrow values");
    nn_release(n);
    n = nn_narrow(t, 1, -2, 2); /* columns 4, 5 */
    CHECK(shape_is(n, SHAPE(10, 2)) && n->offset == 40);
    nn_release(n);
    n = nn_narrow(t, 1, 6, 0);
    CHECK(shape_is(n, SHAPE(10, 0)));
    nn_release(n);
    CHECK(!nn_narrow(t, 0, 8, 3) && error_has("start (8) + length (3) exceeds dimension size (10)."), "%s", nn_last_error());
    CHECK(!nn_narrow(t, 0, 11, 0) && error_has("start out of range"));
    CHECK(!nn_narrow(t, 0, 0, -1) && error_has("length must be non-negative"));
    CHECK(!nn_narrow(t, 2, 0, 1) && error_has("dimension out of range"));

    /* slices of dim 0 (size 10): Python semantics with clamping */
    struct { int64_t start, end, step; int n; int64_t want[5]; } cases[] = {
        {2, 8, 3, 2, {2, 5}},
        {-3, INT64_MAX, 1, 3, {7, 8, 9}},
        {-100, 3, 2, 2, {0, 2}},
        {5, 2, 1, 0, {0}},
        {0, 100, 4, 3, {0, 4, 8}},
        {-1, -1, 1, 0, {0}},
        {8, -1, 1, 1, {8}},
        {INT64_MIN, -8, 1, 2, {0, 1}},
        {12, 20, 1, 0, {0}},
        {1, 10, 5, 2, {1, 6}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        nn_tensor *s = nn_slice(t, 0, cases[c].start, cases[c].end, cases[c].step);
        CHECK(shape_is(s, SHAPE(cases[c].n, 6)), "slice case %zu", c);
        if (!s || s->shape[0] != cases[c].n) { nn_release(s); continue; }
        CHECK(s->strides[0] == cases[c].step && s->strides[1] == 10, "slice strides case %zu", c);
        ok = true;
        for (int64_t r = 0; r < cases[c].n; r++)
            for (int64_t col = 0; col < 6; col++) ok &= at(s, (int64_t[]){r, col}) == value(col * 10 + cases[c].want[r], NN_I64);
        CHECK(ok, "slice values case %zu", c);
        nn_release(s);
    }
    nn_tensor *s2 = nn_slice(t, -1, 1, 6, 2); /* columns 1, 3, 5 of [10, 6] */
    CHECK(shape_is(s2, SHAPE(10, 3)) && strides_are(s2, (int64_t[]){1, 20}) && s2->offset == 10);
    nn_release(s2);
    CHECK(!nn_slice(t, 0, 0, 5, 0) && error_has("slice step must be positive"));
    CHECK(!nn_slice(t, 0, 0, 5, -1) && error_has("slice step must be positive"));

    /* select */
    nn_tensor *r = nn_select(t, 1, -1); /* column 5: base row 5 */
    CHECK(shape_is(r, SHAPE(10)) && strides_are(r, (int64_t[]){1}) && r->offset == 50);
    ok = true;
    for (int64_t k = 0; k < 10; k++) ok &= r && at(r, &k) == value(50 + k, NN_I64);
    CHECK(ok, "select values");
    nn_release(r);
    r = nn_select(t, 0, 3);
    CHECK(shape_is(r, SHAPE(6)) && strides_are(r, (int64_t[]){10}) && r->offset == 3);
    nn_tensor *r0 = r ? nn_select(r, 0, 2) : NULL; /* 0-dim */
    CHECK(r0 && r0->ndim == 0 && at(r0, NULL) == value(23, NN_I64));
    CHECK(r0 && !nn_select(r0, 0, 0) && error_has("select() cannot be applied to a 0-dim tensor"));
    nn_release(r0);
    nn_release(r);
    nn_tensor *m = seq(SHAPE(3, 4), NN_F32);
    CHECK(!nn_select(m, 0, 5) && error_has("select(): index 5 out of range for tensor of size [3, 4] at dimension 0"), "%s",
          nn_last_error());
    CHECK(!nn_select(m, -1, -5) && error_has("index -5 out of range for tensor of size [3, 4] at dimension 1"), "%s",
          nn_last_error());
    r = nn_select(m, -1, -4);
    CHECK(shape_is(r, SHAPE(3)) && r->offset == 0 && strides_are(r, (int64_t[]){4}));
    nn_release(r);
    nn_release(m);
    nn_release(t);
    nn_release(base);
}

/* ---- squeeze / unsqueeze / expand ---- */
static void test_squeeze_expand(void)
{
    nn_tensor *base = seq(SHAPE(3, 1, 4, 1), NN_F16);
    nn_tensor *s = nn_squeeze(base, NN_ALL_DIMS);
    CHECK(shape_is(s, SHAPE(3, 4)) && strides_are(s, (int64_t[]){4, 1}) && s->storage == base->storage);
    nn_release(s);
    s = nn_squeeze(base, 1);
    CHECK(shape_is(s, SHAPE(3, 4, 1)) && strides_are(s, (int64_t[]){4, 1, 1}));
    nn_release(s);
    s = nn_squeeze(base, -1);
    CHECK(shape_is(s, SHAPE(3, 1, 4)));
    nn_release(s);
    s = nn_squeeze(base, 0); /* size 3: a no-op view */
    CHECK(shape_is(s, SHAPE(3, 1, 4, 1)) && s->storage == base->storage);
    nn_release(s);
    CHECK(!nn_squeeze(base, 4) && error_has("squeeze: dimension out of range"));
    nn_release(base);

    base = seq(SHAPE(2, 3), NN_F32);
    nn_tensor *t = nn_t(base); /* [3, 2] strides [1, 3] */
    nn_tensor *u = nn_unsqueeze(t, 0);
    CHECK(shape_is(u, SHAPE(1, 3, 2)) && strides_are(u, (int64_t[]){3, 1, 3}));
    nn_release(u);
    u = nn_unsqueeze(t, 1);
    CHECK(shape_is(u, SHAPE(3, 1, 2)) && strides_are(u, (int64_t[]){1, 6, 3}));
    nn_release(u);
    u = nn_unsqueeze(t, -1);
    CHECK(shape_is(u, SHAPE(3, 2, 1)) && strides_are(u, (int64_t[]){1, 3, 1}));
    bool ok = true;
    int64_t i3[3] = {0};
    do ok &= u && at(u, i3) == value(i3[1] * 3 + i3[0], NN_F32);
    while (u && next(3, u->shape, i3));
    CHECK(ok, "unsqueeze values");
    nn_release(u);
    CHECK(!nn_unsqueeze(t, 3) && error_has("unsqueeze: dimension out of range (expected to be in range of [-3, 2], but got 3)"),
          "%s", nn_last_error());
    nn_tensor *sc = seq(0, NULL, NN_F32);
    u = nn_unsqueeze(sc, 0);
    CHECK(shape_is(u, SHAPE(1)) && strides_are(u, (int64_t[]){1}));
    nn_tensor *sq = u ? nn_squeeze(u, 0) : NULL;
    CHECK(sq && sq->ndim == 0);
    nn_release(sq);
    nn_release(u);

    /* expand */
    nn_tensor *col = nn_slice(t, 1, 0, 1, 1); /* [3, 1] strides [1, 3] */
    nn_tensor *e = nn_expand(col, SHAPE(2, 3, 4));
    CHECK(shape_is(e, SHAPE(2, 3, 4)) && strides_are(e, (int64_t[]){0, 1, 0}) && e->storage == base->storage);
    ok = true;
    memset(i3, 0, sizeof i3);
    do ok &= e && at(e, i3) == value(i3[1], NN_F32);
    while (e && next(3, e->shape, i3));
    CHECK(ok, "expand values");
    nn_release(e);
    e = nn_expand(col, SHAPE(-1, 5));
    CHECK(shape_is(e, SHAPE(3, 5)) && strides_are(e, (int64_t[]){1, 0}));
    nn_release(e);
    e = nn_expand(col, SHAPE(1, 3, 1)); /* a new size-1 leading dim keeps a real stride, as PyTorch's */
    CHECK(shape_is(e, SHAPE(1, 3, 1)) && strides_are(e, (int64_t[]){3, 1, 3}));
    nn_release(e);
    e = nn_expand(col, SHAPE(3, 0));
    CHECK(shape_is(e, SHAPE(3, 0)));
    nn_release(e);
    e = nn_expand(sc, SHAPE(2, 3));
    CHECK(shape_is(e, SHAPE(2, 3)) && strides_are(e, (int64_t[]){0, 0}));
    nn_release(e);
    CHECK(!nn_expand(col, SHAPE(4, 4)) &&
          error_has("The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 0.  "
                    "Target sizes: [4, 4].  Tensor sizes: [3, 1]"), "%s", nn_last_error());
    CHECK(!nn_expand(col, SHAPE(-1, 3, 1)) && error_has("isn't allowed in a leading, non-existing dimension 0"));
    CHECK(!nn_expand(col, SHAPE(3)) &&
          error_has("the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)"));
    nn_release(col);
    nn_release(sc);
    nn_release(t);
    nn_release(base);
}

/* ---- contiguous, shared storage ---- */
static void test_contiguous_sharing(void)
{
    for (int di = 0; di < NDT; di++) {
        nn_dtype dt = all_dtypes[di];
        nn_tensor *base = seq(SHAPE(4, 5, 3), dt);
        nn_tensor *c = nn_contiguous(base);
        CHECK(c == base && base->refcount == 2, "contiguous returns the tensor itself");
        nn_release(c);
        nn_tensor *p = nn_permute(base, (int[]){2, 0, 1});
        nn_tensor *s = nn_slice(p, 2, 1, 5, 2); /* [3, 4, 2] */
        c = nn_contiguous(s);
        CHECK(c && c != s && nn_is_contiguous(c) && shape_is(c, SHAPE(3, 4, 2)) && c->storage != base->storage);
        bool ok = true;
        int64_t i[3] = {0};
        do ok &= c && at(c, i) == at(s, i) && at(s, i) == value(i[1] * 15 + (1 + 2 * i[2]) * 3 + i[0], dt);
        while (c && next(3, c->shape, i));
        CHECK(ok, "contiguous copy %s", nn_dtype_name(dt));
        nn_release(c), nn_release(s), nn_release(p), nn_release(base);
    }
    nn_tensor *e = nn_empty(3, (int64_t[]){2, 0, 3}, NN_F32, NN_DEVICE_CPU);
    nn_tensor *et = nn_transpose(e, 0, 2), *ec = nn_contiguous(et);
    CHECK(shape_is(ec, SHAPE(3, 0, 2)));
    nn_release(ec), nn_release(et), nn_release(e);

    /* writes through one view show through another */
    nn_tensor *base = seq(SHAPE(4, 6), NN_F32);
    nn_tensor *t = nn_transpose(base, 0, 1);
    nn_tensor *v = nn_view(base, SHAPE(2, 2, 6));
    nn_tensor *row = nn_select(t, 1, 2);    /* base row 2 */
    nn_tensor *sel = nn_select(base, 0, 1);
    nn_tensor *ex = nn_expand(sel, SHAPE(3, 6));
    put(row, (int64_t[]){4}, 1234);
    CHECK(at(base, (int64_t[]){2, 4}) == 1234 && at(v, (int64_t[]){1, 0, 4}) == 1234 && at(t, (int64_t[]){4, 2}) == 1234);
    put(v, (int64_t[]){0, 1, 5}, -7);
    CHECK(ex && at(ex, (int64_t[]){2, 5}) == -7 && at(ex, (int64_t[]){0, 5}) == -7 && at(t, (int64_t[]){5, 1}) == -7);
    nn_tensor *parts[4];
    int np = nn_chunk(t, 3, 1, parts, 4); /* [6, 2], [6, 2] */
    CHECK(np == 2 && parts[1]->storage == base->storage);
    if (np == 2) {
        put(parts[1], (int64_t[]){3, 0}, 99);
        CHECK(at(base, (int64_t[]){2, 3}) == 99);
        CHECK(base->storage->refcount == 8, "storage refs %d", base->storage->refcount);
        nn_release(parts[0]), nn_release(parts[1]);
    }
    nn_release(ex), nn_release(sel);
    CHECK(base->storage->refcount == 4, "storage refs %d", base->storage->refcount);
    nn_release(row), nn_release(v), nn_release(t), nn_release(base);
}

/* ---- chunk / split ---- */
static bool sizes_are(nn_tensor **parts, int n, int dim, const int64_t *want, nn_tensor *src)
{
    int64_t start = 0;
    bool ok = true;
    for (int i = 0; i < n; i++) {
        ok &= parts[i]->shape[dim] == want[i] && parts[i]->storage == src->storage &&
              parts[i]->offset == src->offset + start * src->strides[dim];
        start += want[i];
    }
    return ok;
}
static void release_all(nn_tensor **parts, int n)
{
    for (int i = 0; i < n; i++) nn_release(parts[i]);
}

static void test_chunk_split(void)
{
    nn_tensor *parts[16];
    nn_tensor *x = seq(SHAPE(30, 3), NN_F32);
    int n = nn_chunk(x, 8, 0, parts, 16);
    CHECK(n == 8 && sizes_are(parts, n, 0, (int64_t[]){4, 4, 4, 4, 4, 4, 4, 2}, x));
    bool ok = n == 8;
    for (int64_t r = 0; ok && r < 2; r++) ok &= at(parts[7], (int64_t[]){r, 1}) == value((28 + r) * 3 + 1, NN_F32);
    CHECK(ok, "last chunk values");
    release_all(parts, n > 0 ? n : 0);
    nn_release(x);
    x = seq(SHAPE(3, 10), NN_F32);
    nn_tensor *xt = nn_t(x); /* [10, 3] non-contiguous */
    n = nn_chunk(xt, 8, 0, parts, 16);
    CHECK(n == 5 && sizes_are(parts, n, 0, (int64_t[]){2, 2, 2, 2, 2}, xt));
    CHECK(n == 5 && strides_are(parts[4], (int64_t[]){1, 10}) && at(parts[4], (int64_t[]){1, 2}) == value(2 * 10 + 9, NN_F32));
    release_all(parts, n > 0 ? n : 0);
    n = nn_chunk(xt, 3, 0, parts, 16);
    CHECK(n == 3 && sizes_are(parts, n, 0, (int64_t[]){4, 4, 2}, xt));
    release_all(parts, n > 0 ? n : 0);
    n = nn_chunk(xt, 20, 0, parts, 16);
    CHECK(n == 10 && sizes_are(parts, n, 0, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, xt));
    release_all(parts, n > 0 ? n : 0);
    nn_release(xt);
    nn_release(x);
    x = seq(SHAPE(4, 5), NN_I32);
    n = nn_chunk(x, 3, 1, parts, 16);
    CHECK(n == 3 && sizes_are(parts, n, 1, (int64_t[]){2, 2, 1}, x));
    release_all(parts, n > 0 ? n : 0);
    n = nn_chunk(x, 3, -1, parts, 2); /* only two written, the count is still 3 */
    CHECK(n == 3 && sizes_are(parts, 2, 1, (int64_t[]){2, 2}, x));
    release_all(parts, 2);

    n = nn_split(x, 2, -1, parts, 16);
    CHECK(n == 3 && sizes_are(parts, n, 1, (int64_t[]){2, 2, 1}, x));
    release_all(parts, n > 0 ? n : 0);
    n = nn_split(x, 5, 1, parts, 16);
    CHECK(n == 1 && sizes_are(parts, n, 1, (int64_t[]){5}, x));
    release_all(parts, n > 0 ? n : 0);
    n = nn_split(x, 7, 1, parts, 16);
    CHECK(n == 1 && sizes_are(parts, n, 1, (int64_t[]){5}, x));
    release_all(parts, n > 0 ? n : 0);
    n = nn_split(x, 3, 0, parts, 16);
    CHECK(n == 2 && sizes_are(parts, n, 0, (int64_t[]){3, 1}, x));
    release_all(parts, n > 0 ? n : 0);
    n = nn_split_sizes(x, 3, (int64_t[]){1, 0, 4}, 1, parts, 16);
    CHECK(n == 3 && sizes_are(parts, n, 1, (int64_t[]){1, 0, 4}, x));
    ok = n == 3;
    for (int64_t r = 0; ok && r < 4; r++)
        for (int64_t c = 0; c < 4; c++) ok &= at(parts[2], (int64_t[]){r, c}) == value(r * 5 + 1 + c, NN_I32);
    CHECK(ok, "split_sizes values");
    release_all(parts, n > 0 ? n : 0);

    /* errors */
    CHECK(nn_split_sizes(x, 2, (int64_t[]){1, 1}, 1, parts, 16) == -1 &&
          error_has("split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at dimension 1), but got "
                    "split_sizes=[1, 1]"), "%s", nn_last_error());
    CHECK(nn_split_sizes(x, 2, (int64_t[]){6, -1}, 1, parts, 16) == -1 && error_has("non-negative"));
    CHECK(nn_chunk(x, 0, 0, parts, 16) == -1 && error_has("chunk expects `chunks` to be greater than 0, got: 0"));
    CHECK(nn_split(x, -1, 0, parts, 16) == -1 && error_has("split_size be non-negative"));
    CHECK(nn_split(x, 0, 0, parts, 16) == -1 && error_has("split_size can only be 0 if dimension size is 0"));
    CHECK(nn_chunk(x, 2, 2, parts, 16) == -1 && error_has("dimension out of range"));
    nn_tensor *s = seq(0, NULL, NN_F32);
    CHECK(nn_chunk(s, 2, 0, parts, 16) == -1 && error_has("chunk expects at least a 1-dimensional tensor"));
    nn_release(s);
    nn_release(x);

    /* empty dims: chunk gives `chunks` empty pieces, split one */
    nn_tensor *e = nn_empty(2, (int64_t[]){0, 3}, NN_F32, NN_DEVICE_CPU);
    n = nn_chunk(e, 3, 0, parts, 16);
    CHECK(n == 3 && sizes_are(parts, n, 0, (int64_t[]){0, 0, 0}, e));
    release_all(parts, n > 0 ? n : 0);
    n = nn_split(e, 0, 0, parts, 16);
    CHECK(n == 1 && sizes_are(parts, n, 0, (int64_t[]){0}, e));
    release_all(parts, n > 0 ? n : 0);
    n = nn_split(e, 4, 0, parts, 16);
    CHECK(n == 1 && sizes_are(parts, n, 0, (int64_t[]){0}, e));
    release_all(parts, n > 0 ? n : 0);
    nn_release(e);
}

/* Random chains of views checked against a reference kept here: for every element of the current
 * view (row-major), the flat index in base it must read, updated by index arithmetic per op. */
typedef struct { int ndim; int64_t shape[NN_MAX_DIMS]; int64_t src[256]; } ref_t;

static int64_t ref_flat(const ref_t *r, const int64_t *idx)
{
    int64_t f = 0;
    for (int k = 0; k < r->ndim; k++) f = f * r->shape[k] + idx[k];
    return f;
}

/* new[j] = old[map(j)]: walk the new shape, map each index to the old one */
typedef void (*ref_map)(const int64_t *nidx, int64_t *oidx, const int64_t *arg);
static void ref_apply(ref_t *r, int nd, const int64_t *ns, ref_map map, const int64_t *arg)
{
    ref_t o = *r;
    r->ndim = nd;
    memcpy(r->shape, ns, nd * sizeof *ns);
    if (!numel_of(nd, ns)) return;
    int64_t nidx[NN_MAX_DIMS] = {0}, oidx[NN_MAX_DIMS];
    int64_t j = 0;
    do {
        map(nidx, oidx, arg);
        r->src[j++] = o.src[ref_flat(&o, oidx)];
    } while (next(nd, ns, nidx));
}
/* arg: {ndim_old, d0, d1} */
static void map_transpose(const int64_t *n, int64_t *o, const int64_t *a)
{
    for (int k = 0; k < a[0]; k++) o[k] = n[k];
    o[a[1]] = n[a[2]], o[a[2]] = n[a[1]];
}
/* arg: {ndim, d, first, step} */
static void map_slice(const int64_t *n, int64_t *o, const int64_t *a)
{
    for (int k = 0; k < a[0]; k++) o[k] = n[k];
    o[a[1]] = a[2] + n[a[1]] * a[3];
}
/* arg: {ndim_old, d, index} */
static void map_select(const int64_t *n, int64_t *o, const int64_t *a)
{
    for (int k = 0, j = 0; k < a[0]; k++) o[k] = k == a[1] ? a[2] : n[j++];
}
/* arg: {ndim_old, d} */
static void map_unsqueeze(const int64_t *n, int64_t *o, const int64_t *a)
{
    for (int k = 0, j = 0; k <= a[0]; k++)
        if (k != a[1]) o[j++] = n[k];
}

static void test_random_chains(void)
{
    for (int trial = 0; trial < 300; trial++) {
        nn_dtype dt = all_dtypes[rnd_int(NDT)];
        int64_t shape[3] = {1 + rnd_int(4), 1 + rnd_int(4), 1 + rnd_int(4)};
        nn_tensor *base = seq(3, shape, dt);
        ref_t r = {3, {shape[0], shape[1], shape[2]}, {0}};
        for (int64_t k = 0; k < nn_numel(base); k++) r.src[k] = k;
        nn_tensor *t = nn_retain(base);
        for (int step = 0; step < 5; step++) {
            nn_tensor *nt = NULL;
            int nd = t->ndim, d = (int)rnd_int(nd ? nd : 1);
            int64_t ns[NN_MAX_DIMS];
            memcpy(ns, t->shape, sizeof ns);
            switch (rnd_int(6)) {
            case 0: {
                int d1 = (int)rnd_int(nd ? nd : 1);
                nt = nn_transpose(t, d - nd, d1); /* a negative dim too */
                if (nd) ns[d] = t->shape[d1], ns[d1] = t->shape[d];
                ref_apply(&r, nd, ns, map_transpose, (int64_t[]){nd, d, d1});
                break;
            }
            case 1: {
                if (!nd) break;
                int64_t size = t->shape[d], start = rnd_int(size + 2) - 1, end = size - rnd_int(3) + 1, st = 1 + rnd_int(3);
                nt = nn_slice(t, d, start, end, st);
                /* Python's range(size)[start:end:step] */
                int64_t first = start < 0 ? start + size : start, last = end < 0 ? end + size : end;
                if (first < 0) first = 0;
                if (last > size) last = size;
                int64_t cnt = 0;
                for (int64_t i = first; i < last; i += st) cnt++;
                ns[d] = cnt;
                ref_apply(&r, nd, ns, map_slice, (int64_t[]){nd, d, first, st});
                break;
            }
            case 2: {
                if (!nd || !t->shape[d]) break;
                int64_t i = rnd_int(t->shape[d]);
                nt = nn_select(t, d, rnd_int(2) ? i : i - t->shape[d]);
                for (int k = d; k < nd - 1; k++) ns[k] = ns[k + 1];
                ref_apply(&r, nd - 1, ns, map_select, (int64_t[]){nd, d, i});
                break;
            }
            case 3: {
                if (nd == NN_MAX_DIMS) break;
                int u = (int)rnd_int(nd + 1);
                nt = nn_unsqueeze(t, u);
                for (int k = nd; k > u; k--) ns[k] = ns[k - 1];
                ns[u] = 1;
                ref_apply(&r, nd + 1, ns, map_unsqueeze, (int64_t[]){nd, u});
                break;
            }
            case 4:
                nt = nn_reshape(t, SHAPE(-1));
                r.ndim = 1, r.shape[0] = nn_numel(t);
                break;
            default: /* split the first dim in two where it divides */
                if (!nd || t->shape[0] % 2) break;
                ns[0] = 2;
                ns[1] = t->shape[0] / 2;
                for (int k = 1; k < nd; k++) ns[k + 1] = t->shape[k];
                nt = nd < NN_MAX_DIMS ? nn_reshape(t, nd + 1, ns) : NULL;
                if (nt) r.ndim = nd + 1, memcpy(r.shape, ns, sizeof ns);
                break;
            }
            if (!nt) continue;
            CHECK(shape_is(nt, r.ndim, r.shape), "chain trial %d step %d: shape", trial, step);
            bool ok = true;
            int64_t idx[NN_MAX_DIMS] = {0};
            if (nt->ndim == r.ndim && nn_numel(nt))
                do ok &= at(nt, idx) == value(r.src[ref_flat(&r, idx)], dt);
                while (next(nt->ndim, nt->shape, idx));
            CHECK(ok, "chain trial %d step %d: values", trial, step);
            nn_release(t);
            t = nt;
        }
        nn_release(t);
        nn_release(base);
    }
}

int main(void)
{
    test_view();
    test_transpose_permute();
    test_narrow_slice_select();
    test_squeeze_expand();
    test_contiguous_sharing();
    test_chunk_split();
    test_random_chains();
    return CHECK_REPORT();
}
