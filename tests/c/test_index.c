/* index_select, index_add_ and embedding against plain loops: every dim, every
 * dtype, repeated indices, int64 and int32 (strided) index tensors,
 * non-contiguous inputs, 0-dim and empty cases, error messages; gradients
 * through gradcheck. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "layouts.h"
#include "gradcheck.h"
#include "nnfunc.h"

static uint64_t rng_state = 0xda3e39cb94b95bdbull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

static const char *kind_name[] = {"contiguous", "transposed", "narrowed", "expanded"};

static nn_tensor *make(int nd, const int64_t *shape, nn_dtype dt, int kind, double lo, double hi)
{
    nn_tensor *base = layout_base(kind, nd, shape, dt);
    char *p = nn_data(base);
    for (int64_t i = 0; i < nn_numel(base); i++) {
        double v = lo + (hi - lo) * urand();
        nn_store_f64(p + i * nn_dtype_size(dt), dt, dt == NN_BOOL ? v > 0 : nn_dtype_is_float(dt) ? v : floor(v));
    }
    return layout_view(base, kind, nd, shape);
}

/* n indices in [0, size) with repeats; int64 or int32, strided (every other element) when asked. */
static nn_tensor *make_index(int64_t n, int64_t size, nn_dtype dt, bool strided, bool zero_dim)
{
    nn_tensor *base = nn_empty(1, (int64_t[]){strided ? 2 * n : n}, dt, NN_DEVICE_CPU);
    for (int64_t i = 0; i < nn_numel(base); i++)
        nn_store_i64((char *)nn_data(base) + i * nn_dtype_size(dt), dt, i >= 2 && urand() < 0.3 ? 0 : (int64_t)(urand() * (double)size));
    nn_tensor *v = zero_dim ? nn_make_view(base, 0, NULL, NULL, 0)
                            : nn_make_view(base, 1, (int64_t[]){n}, (int64_t[]){strided ? 2 : 1}, strided ? 1 : 0);
    nn_release(base);
    return v;
}

static nn_tensor *index_of(nn_dtype dt, int n, const int64_t *v)
{
    nn_tensor *t = nn_empty(1, (int64_t[]){n}, dt, NN_DEVICE_CPU);
    for (int i = 0; i < n; i++) nn_store_i64((char *)nn_data(t) + i * nn_dtype_size(dt), dt, v[i]);
    return t;
}

static bool next_index(int nd, int64_t *idx, const int64_t *shape)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

static bool err_has(const char *s) { return strstr(nn_last_error(), s) != NULL; }

static double get(const nn_tensor *t, const int64_t *i)
{
    return nn_dtype_is_float(t->dtype) ? nn_get_f64(t, i) : (double)nn_get_i64(t, i);
}

static int64_t index_value(const nn_tensor *ix, int64_t k) { return nn_get_i64(ix, ix->ndim ? (int64_t[]){k} : NULL); }

static const struct {
    int nd;
    int64_t shape[4];
} shapes[] = {{1, {6}}, {2, {4, 3}}, {3, {3, 4, 5}}, {4, {2, 3, 1, 4}}, {2, {0, 3}}, {3, {2, 3, 2}}};

static const nn_dtype all_dtypes[] = {NN_F32, NN_F64, NN_F16, NN_BF16, NN_I64, NN_I32, NN_I16, NN_I8, NN_U8, NN_BOOL};

static void test_index_select(void)
{
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int di = 0; di < 8; di++)
            for (int kind = 0; kind < NKINDS; kind++)
                for (int ik = 0; ik < 4; ik++) {
                    int nd = shapes[si].nd;
                    const int64_t *shape = shapes[si].shape;
                    nn_tensor *x = make(nd, shape, all_dtypes[di], kind, -5, 5);
                    for (int dim = -nd; dim < nd; dim++) {
                        int d = dim < 0 ? dim + nd : dim;
                        if (shape[d] == 0) continue;
                        int64_t n = ik == 3 ? 0 : 7;
                        nn_tensor *ix = make_index(n, shape[d], ik & 1 ? NN_I32 : NN_I64, ik == 2, false);
                        nn_tensor *out = nn_index_select(x, dim, ix);
                        CHECK(out && out->dtype == x->dtype && out->ndim == nd && out->shape[d] == n, "index_select %s %s dim %d: %s",
                              nn_dtype_name(x->dtype), kind_name[kind], dim, nn_last_error());
                        if (out && nn_numel(out) > 0) {
                            int64_t idx[NN_MAX_DIMS] = {0}, xi[NN_MAX_DIMS];
                            int bad = 0;
                            do {
                                memcpy(xi, idx, sizeof xi);
                                xi[d] = index_value(ix, idx[d]);
                                if (get(out, idx) != get(x, xi) && bad++ < 3)
                                    CHECK(false, "index_select %s %s dim %d: %g, want %g", nn_dtype_name(x->dtype), kind_name[kind], dim, get(out, idx),
                                          get(x, xi));
                            } while (next_index(nd, idx, out->shape));
                            CHECK(bad == 0);
                        }
                        nn_release(out), nn_release(ix);
                    }
                    nn_release(x);
                }

    /* 0-dim self, 0-dim index */
    nn_tensor *s = nn_scalar_f64(2.5), *i0 = nn_scalar_i64(0), *i1 = index_of(NN_I64, 1, (int64_t[]){0});
    nn_tensor *o = nn_index_select(s, 0, i0), *o1 = nn_index_select(s, -1, i1);
    CHECK(o && o->ndim == 0 && nn_get_f64(o, NULL) == 2.5 && o1 && o1->ndim == 0, "%s", nn_last_error());
    nn_release(o), nn_release(o1);
    nn_tensor *i2 = index_of(NN_I64, 2, (int64_t[]){0, 0});
    CHECK(!nn_index_select(s, 0, i2) && err_has("index_select(): Index to scalar can have only 1 value, got 2 value(s)"), "%s", nn_last_error());
    nn_tensor *v = make(1, (int64_t[]){5}, NN_F32, CONTIG, 0, 1);
    o = nn_index_select(v, 0, i0); /* a 0-dim index keeps the dim, with size 1 */
    CHECK(o && o->ndim == 1 && o->shape[0] == 1 && nn_get_f64(o, (int64_t[]){0}) == nn_get_f64(v, (int64_t[]){0}), "%s", nn_last_error());
    nn_release(o);

    /* errors */
    nn_tensor *bad = index_of(NN_I64, 3, (int64_t[]){0, 5, 1}), *neg = index_of(NN_I32, 2, (int64_t[]){-1, 0});
    CHECK(!nn_index_select(v, 0, bad) && err_has("index out of range in self"), "%s", nn_last_error());
    CHECK(!nn_index_select(v, 0, neg) && err_has("index out of range in self"), "%s", nn_last_error());
    CHECK(!nn_index_select(s, 0, bad) && err_has("Index to scalar"), "%s", nn_last_error());
    nn_tensor *f = make(1, (int64_t[]){2}, NN_F32, CONTIG, 0, 1), *m2 = make(2, (int64_t[]){2, 2}, NN_I64, CONTIG, 0, 2);
    CHECK(!nn_index_select(v, 0, f) && err_has("index_select(): Expected dtype int32 or int64 for index"), "%s", nn_last_error());
    CHECK(!nn_index_select(v, 0, m2) && err_has("index_select(): Index is supposed to be a vector"), "%s", nn_last_error());
    CHECK(!nn_index_select(v, 1, i0) && err_has("index_select: dimension out of range (expected to be in range of [-1, 0], but got 1)"), "%s",
          nn_last_error());
    nn_tensor *e = make(2, (int64_t[]){0, 3}, NN_F32, CONTIG, 0, 1);
    CHECK(!nn_index_select(e, 0, i0) && err_has("index out of range in self"), "%s", nn_last_error());
    nn_tensor *ts[] = {s, i0, i1, i2, v, bad, neg, f, m2, e};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) nn_release(ts[k]);
}

/* A contiguous row-major copy of t's values. */
static double *values(const nn_tensor *t)
{
    double *v = malloc(sizeof(double) * (size_t)(nn_numel(t) + 1));
    int64_t idx[NN_MAX_DIMS] = {0}, k = 0;
    if (nn_numel(t) > 0) do v[k++] = get(t, idx);
        while (next_index(t->ndim, idx, t->shape));
    return v;
}

static int64_t flat_of(int nd, const int64_t *shape, const int64_t *idx)
{
    int64_t f = 0;
    for (int d = 0; d < nd; d++) f = f * shape[d] + idx[d];
    return f;
}

static double tol_of(nn_dtype dt) { return dt == NN_F64 ? 1e-12 : dt == NN_F32 ? 1e-5 : dt == NN_F16 ? 2e-3 : dt == NN_BF16 ? 1.6e-2 : 0; }

static void test_index_add(void)
{
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int di = 0; di < 8; di++)
            for (int kind = 0; kind < NKINDS; kind++)
                for (int ik = 0; ik < 3; ik++) {
                    int nd = shapes[si].nd;
                    const int64_t *shape = shapes[si].shape;
                    nn_dtype dt = all_dtypes[di];
                    for (int dim = -nd; dim < nd; dim++) {
                        int d = dim < 0 ? dim + nd : dim;
                        if (shape[d] == 0) continue;
                        int64_t n = 9, sshape[NN_MAX_DIMS];
                        memcpy(sshape, shape, sizeof(int64_t) * nd);
                        sshape[d] = n;
                        nn_tensor *self = make(nd, shape, dt, kind == EXPANDED ? CONTIG : kind, -4, 4);
                        nn_tensor *src = make(nd, sshape, dt, kind, -4, 4);
                        nn_tensor *ix = make_index(n, shape[d], ik & 1 ? NN_I32 : NN_I64, ik == 2, false);
                        double alpha = nn_dtype_is_float(dt) ? (ik == 1 ? 2.5 : 1) : (ik == 1 ? 3 : 1);
                        double *ref = values(self), *mag = values(self); /* mag: the sum of the magnitudes added, for rounding */
                        for (int64_t k = 0; k < nn_numel(self); k++) mag[k] = fabs(mag[k]);
                        int64_t sidx[NN_MAX_DIMS] = {0}, ti[NN_MAX_DIMS];
                        if (nn_numel(src) > 0) do {
                                memcpy(ti, sidx, sizeof ti);
                                ti[d] = index_value(ix, sidx[d]);
                                int64_t f = flat_of(nd, shape, ti);
                                ref[f] = dt == NN_BOOL ? (ref[f] != 0 || get(src, sidx) != 0) : ref[f] + alpha * get(src, sidx);
                                mag[f] += fabs(alpha * get(src, sidx));
                            } while (next_index(nd, sidx, sshape));
                        uint32_t ver = self->storage->version;
                        nn_status st = nn_index_add_(self, dim, ix, src, alpha);
                        CHECK(st == NN_OK && self->storage->version == ver + 1, "index_add_ %s %s dim %d: %s", nn_dtype_name(dt), kind_name[kind], dim,
                              nn_last_error());
                        double *got = values(self);
                        int bad = 0;
                        for (int64_t k = 0; k < nn_numel(self); k++) {
                            double want = ref[k];
                            if (dt == NN_U8) want = (double)(uint8_t)(int64_t)want;
                            if (fabs(got[k] - want) > tol_of(dt) * (1 + mag[k]) && bad++ < 3)
                                CHECK(false, "index_add_ %s %s dim %d alpha %g element %lld: %g, want %g", nn_dtype_name(dt), kind_name[kind], dim, alpha,
                                      (long long)k, got[k], want);
                        }
                        CHECK(bad == 0);
                        free(ref), free(mag), free(got);
                        nn_release(self), nn_release(src), nn_release(ix);
                    }
                }

    /* 0-dim self and source */
    nn_tensor *s = make(0, NULL, NN_F64, CONTIG, 0, 1), *src0 = make(0, NULL, NN_F64, CONTIG, 1.5, 1.5), *i0 = nn_scalar_i64(0);
    double before = nn_get_f64(s, NULL);
    CHECK(nn_index_add_(s, 0, i0, src0, 2) == NN_OK && nn_get_f64(s, NULL) == before + 3, "%s", nn_last_error());
    nn_tensor *v = make(1, (int64_t[]){4}, NN_F64, CONTIG, 0, 1), *i3 = index_of(NN_I64, 1, (int64_t[]){3});
    before = nn_get_f64(v, (int64_t[]){3});
    CHECK(nn_index_add_(v, 0, i3, src0, 1) == NN_OK && nn_get_f64(v, (int64_t[]){3}) == before + 1.5, "%s", nn_last_error());

    /* errors leave self unchanged */
    nn_tensor *m = make(2, (int64_t[]){4, 3}, NN_F32, CONTIG, 0, 1), *sm = make(2, (int64_t[]){2, 3}, NN_F32, CONTIG, 0, 1);
    nn_tensor *bad = index_of(NN_I64, 2, (int64_t[]){1, 4}), *good = index_of(NN_I64, 2, (int64_t[]){1, 1});
    double *keep = values(m);
    CHECK(nn_index_add_(m, 0, bad, sm, 1) == NN_ERR_INDEX && err_has("index out of range in self"), "%s", nn_last_error());
    double *now = values(m);
    CHECK(!memcmp(keep, now, sizeof(double) * 12), "a failed index_add_ changed self");
    free(keep), free(now);
    nn_tensor *i3x = index_of(NN_I64, 3, (int64_t[]){0, 1, 2});
    CHECK(nn_index_add_(m, 0, i3x, sm, 1) && err_has("index_add_(): Number of indices (3) should be equal to source.size(dim): (2), for dim: 0"),
          "%s", nn_last_error());
    nn_tensor *sd = make(2, (int64_t[]){2, 3}, NN_F64, CONTIG, 0, 1);
    CHECK(nn_index_add_(m, 0, good, sd, 1) && err_has("index_add_(): self (Float) and source (Double) must have the same scalar type"), "%s",
          nn_last_error());
    nn_tensor *s4 = make(2, (int64_t[]){2, 4}, NN_F32, CONTIG, 0, 1);
    CHECK(nn_index_add_(m, 0, good, s4, 1) && err_has("index_add_(): self [4, 3] and source [2, 4] must have the same size"), "%s",
          nn_last_error());
    nn_tensor *fi = make(1, (int64_t[]){2}, NN_F32, CONTIG, 0, 1);
    CHECK(nn_index_add_(m, 0, fi, sm, 1) && err_has("index_add_(): Expected dtype int32/int64 for index but got: Float"), "%s", nn_last_error());
    nn_tensor *mi = make(2, (int64_t[]){1, 2}, NN_I64, CONTIG, 0, 1);
    CHECK(nn_index_add_(m, 0, mi, sm, 1) && err_has("index_add_(): Index is supposed to be a vector, but got dim: 2"), "%s", nn_last_error());
    CHECK(nn_index_add_(m, 2, good, sm, 1) && err_has("dimension out of range"), "%s", nn_last_error());
    nn_tensor *mint = make(2, (int64_t[]){4, 3}, NN_I64, CONTIG, 0, 5), *sint = make(2, (int64_t[]){2, 3}, NN_I64, CONTIG, 0, 5);
    CHECK(nn_index_add_(mint, 0, good, sint, 0.5) && err_has("alpha must not be a floating point number"), "%s", nn_last_error());
    nn_tensor *ex = make(2, (int64_t[]){4, 3}, NN_F32, EXPANDED, 0, 1), *s42 = make(2, (int64_t[]){4, 2}, NN_F32, CONTIG, 0, 1);
    CHECK(nn_index_add_(ex, 1, good, s42, 1) && err_has("more than one element of the written-to tensor refers to a single memory location"),
          "%s", nn_last_error());
    nn_tensor *leaf = make(2, (int64_t[]){4, 3}, NN_F32, CONTIG, 0, 1);
    nn_requires_grad_(leaf, true);
    CHECK(nn_index_add_(leaf, 0, good, sm, 1) && err_has("a leaf Variable that requires grad is being used in an in-place operation"), "%s",
          nn_last_error());
    nn_tensor *ts[] = {s, src0, i0, v, i3, m, sm, bad, good, i3x, sd, s4, fi, mi, mint, sint, ex, s42, leaf};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) nn_release(ts[k]);
}

static void test_embedding(void)
{
    for (int di = 0; di < 4; di++)
        for (int it = 0; it < 2; it++) {
            nn_dtype dt = all_dtypes[di];
            nn_tensor *w = make(2, (int64_t[]){7, 5}, dt, it ? TRANSPOSED : CONTIG, -1, 1);
            const int64_t ishape[3][3] = {{2, 3}, {4}, {2, 2, 2}}, count[3] = {6, 4, 8};
            const int ind[3] = {2, 1, 3};
            for (int k = 0; k < 3; k++) {
                nn_tensor *flat = make_index(count[k], 7, it ? NN_I32 : NN_I64, false, false);
                nn_tensor *ix = nn_reshape(flat, ind[k], ishape[k]);
                nn_tensor *out = nn_embedding(w, ix, -1);
                CHECK(out && out->ndim == ind[k] + 1 && out->shape[ind[k]] == 5 && !memcmp(out->shape, ishape[k], sizeof(int64_t) * ind[k]), "%s",
                      nn_last_error());
                int64_t idx[NN_MAX_DIMS] = {0};
                int bad = 0;
                if (out) do {
                        int64_t row = nn_get_i64(ix, idx);
                        if (nn_get_f64(out, idx) != nn_get_f64(w, (int64_t[]){row, idx[ind[k]]}) && bad++ < 3) CHECK(false, "embedding value");
                    } while (next_index(out->ndim, idx, out->shape));
                CHECK(bad == 0);
                nn_release(out), nn_release(ix), nn_release(flat);
            }
            nn_release(w);
        }
    /* 0-dim indices give one row */
    nn_tensor *w = make(2, (int64_t[]){7, 5}, NN_F32, CONTIG, -1, 1), *i0 = nn_scalar_i64(4);
    nn_tensor *out = nn_embedding(w, i0, -1);
    CHECK(out && out->ndim == 1 && out->shape[0] == 5 && nn_get_f64(out, (int64_t[]){2}) == nn_get_f64(w, (int64_t[]){4, 2}), "%s", nn_last_error());
    nn_release(out);
    /* errors */
    nn_tensor *bad = index_of(NN_I64, 2, (int64_t[]){1, 7}), *f = make(1, (int64_t[]){2}, NN_F32, CONTIG, 0, 1);
    CHECK(!nn_embedding(w, bad, -1) && err_has("index out of range in self"), "%s", nn_last_error());
    CHECK(!nn_embedding(w, f, -1) &&
              err_has("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.FloatTensor instead"),
          "%s", nn_last_error());
    nn_tensor *w1 = make(1, (int64_t[]){7}, NN_F32, CONTIG, 0, 1);
    CHECK(!nn_embedding(w1, i0, -1) && err_has("'weight' must be 2-D"), "%s", nn_last_error());
    CHECK(!nn_embedding(w, i0, 7) && err_has("Padding_idx must be within num_embeddings"), "%s", nn_last_error());
    nn_release(bad), nn_release(f), nn_release(w1), nn_release(i0), nn_release(w);

    /* padding_idx rows take no gradient; other rows get the sum of their upstream gradients */
    w = make(2, (int64_t[]){6, 3}, NN_F64, CONTIG, -1, 1);
    nn_requires_grad_(w, true);
    nn_tensor *ix = index_of(NN_I64, 5, (int64_t[]){2, 0, 2, 5, 0});
    out = nn_embedding(w, ix, 2);
    CHECK(out && out->grad_fn && !strcmp(out->grad_fn->name, "EmbeddingBackward0"));
    nn_tensor *g = make(2, (int64_t[]){5, 3}, NN_F64, TRANSPOSED, -1, 1);
    CHECK(nn_backward(out, g, false) == NN_OK, "%s", nn_last_error());
    const int64_t rows[5] = {2, 0, 2, 5, 0};
    for (int r = 0; w->grad && r < 6; r++)
        for (int c = 0; c < 3; c++) {
            double want = 0;
            for (int k = 0; k < 5; k++)
                if (rows[k] == r && r != 2) want += nn_get_f64(g, (int64_t[]){k, c});
            CHECK(fabs(nn_get_f64(w->grad, (int64_t[]){r, c}) - want) < 1e-12, "embedding grad [%d, %d]", r, c);
        }
    CHECK(w->grad != NULL);
    nn_release(out), nn_release(g), nn_release(ix), nn_release(w);
}

typedef struct {
    int dim;
    nn_tensor *index;
    double alpha;
    int64_t padding;
} ix_ctx;

static nn_tensor *select_fn(nn_tensor *const *x, void *vc)
{
    const ix_ctx *c = vc;
    return nn_index_select(x[0], c->dim, c->index);
}

static nn_tensor *embedding_fn(nn_tensor *const *x, void *vc)
{
    const ix_ctx *c = vc;
    return nn_embedding(x[0], c->index, c->padding);
}

/* index_add_ into a non-leaf copy of x[0] (index_select with every index), source x[1] */
static nn_tensor *add_fn(nn_tensor *const *x, void *vc)
{
    const ix_ctx *c = vc;
    int64_t n = x[0]->ndim ? x[0]->shape[0] : 1, *all = malloc(sizeof(int64_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) all[i] = i;
    nn_tensor *ai = index_of(NN_I64, (int)n, all);
    free(all);
    nn_tensor *self = nn_index_select(x[0], 0, ai);
    nn_release(ai);
    if (self && nn_index_add_(self, c->dim, c->index, x[1], c->alpha)) {
        nn_release(self);
        return NULL;
    }
    return self;
}

static void test_autograd(void)
{
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int kind = 0; kind < 3; kind++) {
            int nd = shapes[si].nd;
            const int64_t *shape = shapes[si].shape;
            nn_tensor *x = make(nd, shape, NN_F64, kind, -2, 2);
            nn_requires_grad_(x, true);
            for (int dim = -nd; dim < nd; dim++) {
                int d = dim < 0 ? dim + nd : dim;
                if (shape[d] == 0) continue;
                ix_ctx c = {dim, make_index(6, shape[d], NN_I64, kind == NARROWED, false), 1, -1};
                CHECK(gradcheck("index_select", select_fn, &x, 1, &c, 1e-6, 1e-7, 1e-5), "shape %d %s dim %d", (int)si, kind_name[kind], dim);
                nn_release(c.index);
                /* index_add_: gradients for the old self and for the source */
                int64_t sshape[NN_MAX_DIMS];
                memcpy(sshape, shape, sizeof(int64_t) * nd);
                sshape[d] = 5;
                nn_tensor *in[2] = {x, make(nd, sshape, NN_F64, kind, -2, 2)};
                nn_requires_grad_(in[1], true);
                ix_ctx ca = {dim, make_index(5, shape[d], NN_I32, false, false), kind == 1 ? -0.5 : 2, -1};
                CHECK(gradcheck("index_add_", add_fn, in, 2, &ca, 1e-6, 1e-7, 1e-5), "shape %d %s dim %d", (int)si, kind_name[kind], dim);
                nn_release(ca.index), nn_release(in[1]);
            }
            nn_release(x);
        }
    nn_tensor *x0 = make(0, NULL, NN_F64, CONTIG, -2, 2);
    nn_requires_grad_(x0, true);
    ix_ctx c0 = {0, nn_scalar_i64(0), 1, -1};
    CHECK(gradcheck("index_select 0-dim", select_fn, &x0, 1, &c0, 1e-6, 1e-7, 1e-5));
    nn_release(c0.index), nn_release(x0);

    nn_tensor *x = make(2, (int64_t[]){4, 3}, NN_F64, CONTIG, -2, 2);
    nn_requires_grad_(x, true);
    nn_tensor *ix = index_of(NN_I64, 4, (int64_t[]){3, 3, 0, 1});
    nn_tensor *y = nn_index_select(x, 0, ix);
    CHECK(y && y->grad_fn && !strcmp(y->grad_fn->name, "IndexSelectBackward0"));
    nn_tensor *src = make(2, (int64_t[]){4, 3}, NN_F64, CONTIG, -2, 2);
    CHECK(nn_index_add_(y, 0, ix, src, 1) == NN_OK && y->grad_fn && !strcmp(y->grad_fn->name, "IndexAddBackward0"), "%s", nn_last_error());
    nn_release(y), nn_release(src), nn_release(ix), nn_release(x);

    /* embedding; a padding_idx that no index hits changes nothing (one that is hit is checked in test_embedding) */
    for (int pad = -1; pad < 4; pad += 2) {
        nn_tensor *w = make(2, (int64_t[]){6, 4}, NN_F64, TRANSPOSED, -2, 2);
        nn_requires_grad_(w, true);
        nn_tensor *flat = index_of(NN_I64, 6, (int64_t[]){2, 5, 2, 0, 4, 5});
        ix_ctx c = {0, nn_reshape(flat, 2, (int64_t[]){2, 3}), 1, pad};
        CHECK(gradcheck("embedding", embedding_fn, &w, 1, &c, 1e-6, 1e-7, 1e-5), "padding_idx %d", pad);
        nn_release(c.index), nn_release(flat), nn_release(w);
    }
}

int main(void)
{
    test_index_select();
    test_index_add();
    test_embedding();
    test_autograd();
    return CHECK_REPORT();
}
