/* mm, bmm, matmul, addmm, dot, outer and the bmm kernel against plain triple
 * loops, on random contiguous, transposed, narrowed and expanded operands in
 * every dtype they support. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

static double rand_value(nn_dtype dt)
{
    switch (dt) {
    case NN_BOOL: return urand() < 0.5;
    case NN_U8: return floor(urand() * 10);
    case NN_I32:
    case NN_I64: return floor(urand() * 11) - 5;
    default: return urand() * 4 - 2;
    }
}

enum { CONTIG, TRANSPOSED, NARROWED, EXPANDED, NKINDS };
static const char *kind_name[] = {"contiguous", "transposed", "narrowed", "expanded"};

/* A random tensor: contiguous, dims reversed in memory, a window of a padded
 * base, or (EXPANDED) stride 0 in the dim `edim`. */
static nn_tensor *make_e(int nd, const int64_t *shape, nn_dtype dt, int kind, int edim)
{
    int64_t bshape[NN_MAX_DIMS] = {0}, bstr[NN_MAX_DIMS] = {0}, strides[NN_MAX_DIMS] = {0}, offset = 0;
    for (int d = 0; d < nd; d++) bshape[d] = shape[d];
    if (kind == TRANSPOSED)
        for (int d = 0; d < nd; d++) bshape[d] = shape[nd - 1 - d];
    if (kind == NARROWED)
        for (int d = 0; d < nd; d++) bshape[d] = shape[d] + 3;
    if (kind == EXPANDED && nd > 0) bshape[edim] = 1;
    nn_tensor *base = nn_empty(nd, bshape, dt, NN_DEVICE_CPU);
    int64_t n = nn_numel(base);
    char *p = nn_data(base);
    for (int64_t i = 0; i < n; i++) nn_store_f64(p + i * nn_dtype_size(dt), dt, rand_value(dt));
    nn_contiguous_strides(nd, bshape, bstr);
    for (int d = 0; d < nd; d++) {
        strides[d] = kind == TRANSPOSED ? bstr[nd - 1 - d] : bstr[d];
        if (kind == NARROWED) offset += 2 * bstr[d];
    }
    if (kind == EXPANDED && nd > 0) strides[edim] = 0;
    nn_tensor *v = nn_make_view(base, nd, shape, strides, offset);
    nn_release(base);
    return v;
}

static nn_tensor *make(int nd, const int64_t *shape, nn_dtype dt, int kind) { return make_e(nd, shape, dt, kind, 0); }

static bool next_index(int nd, int64_t *idx, const int64_t *shape)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

/* |got - want| within the dtype's rounding of a k-term product sum (scale = sum of |a*b|). */
static bool close_to(nn_dtype dt, double got, double want, double scale)
{
    double eps = dt == NN_F32 ? 2e-6 : dt == NN_F64 ? 1e-14 : dt == NN_F16 ? 2e-3 : dt == NN_BF16 ? 1.6e-2 : 0;
    if (isnan(want)) return isnan(got);
    return fabs(got - want) <= eps * (scale + fabs(want)) + (nn_dtype_is_integral(dt) ? 0 : 1e-30);
}

/* want cast to dt, as the kernel stores it */
static double as_dtype(nn_dtype dt, double v)
{
    uint64_t buf = 0;
    if (nn_dtype_is_integral(dt)) nn_store_i64(&buf, dt, (int64_t)v);
    else nn_store_f64(&buf, dt, v);
    return nn_load_f64(&buf, dt);
}

/* Reference of one output element: sum over p of a(row p) * b(p col), exact in int64 for integers. */
typedef struct { double v, scale; } refval;

static refval dot_ref(nn_dtype dt, const nn_tensor *a, int64_t *ai, int ak, const nn_tensor *b, int64_t *bi, int bk, int64_t k)
{
    refval r = {0, 0};
    uint64_t iv = 0;
    for (int64_t p = 0; p < k; p++) {
        ai[ak] = p, bi[bk] = p;
        if (nn_dtype_is_integral(dt)) iv += (uint64_t)nn_get_i64(a, ai) * (uint64_t)nn_get_i64(b, bi);
        double x = nn_get_f64(a, ai), y = nn_get_f64(b, bi);
        r.v += x * y;
        r.scale += fabs(x * y);
    }
    if (nn_dtype_is_integral(dt)) r.v = (double)(int64_t)iv;
    return r;
}

static const nn_dtype gemm_dtypes[] = {NN_F32, NN_F64, NN_F16, NN_BF16, NN_I64, NN_I32, NN_I16, NN_I8, NN_U8};
#define NDT (int)(sizeof gemm_dtypes / sizeof *gemm_dtypes)

/* out[..., i, j] (2-D or batched 3-D) against the triple loop of a and b. */
static void check_product(const char *what, const nn_tensor *out, const nn_tensor *a, const nn_tensor *b, bool batched, double alpha,
                          double beta, const nn_tensor *bias /* broadcast [m, n] or NULL */)
{
    int nd = batched ? 3 : 2;
    nn_dtype dt = a->dtype;
    int64_t m = a->shape[nd - 2], k = a->shape[nd - 1], n = b->shape[nd - 1];
    CHECK(out->ndim == nd && out->dtype == dt && out->shape[nd - 2] == m && out->shape[nd - 1] == n, "%s: result geometry", what);
    if (out->ndim != nd) return;
    int64_t oshape[3] = {batched ? a->shape[0] : m, batched ? m : n, n}, idx[3] = {0};
    int bad = 0;
    if (nn_numel(out)) do {
            int64_t ai[3], bi[3];
            memcpy(ai, idx, sizeof ai), memcpy(bi, idx, sizeof bi);
            /* a[.., i, p], b[.., p, j] */
            bi[nd - 1] = idx[nd - 1];
            refval r = dot_ref(dt, a, ai, nd - 1, b, bi, nd - 2, k);
            double want = alpha * r.v;
            if (bias && beta != 0) {
                int64_t bidx[2];
                for (int d = 0; d < bias->ndim; d++) {
                    int od = nd - bias->ndim + d;
                    bidx[d] = bias->shape[d] == 1 ? 0 : idx[od];
                }
                want += beta * nn_get_f64(bias, bidx);
            }
            if (nn_dtype_is_integral(dt)) {
                int64_t w = (int64_t)((uint64_t)(int64_t)alpha * (uint64_t)(int64_t)r.v);
                if (bias && beta != 0) {
                    int64_t bidx[2];
                    for (int d = 0; d < bias->ndim; d++) bidx[d] = bias->shape[d] == 1 ? 0 : idx[nd - bias->ndim + d];
                    w = (int64_t)((uint64_t)w + (uint64_t)(int64_t)beta * (uint64_t)nn_get_i64(bias, bidx));
                }
                want = (double)w;
            }
            want = as_dtype(dt, want);
            double got = nn_get_f64(out, idx);
            if (!close_to(dt, got, want, fabs(alpha) * r.scale) && bad++ < 3)
                CHECK(0, "%s: element [%lld, %lld, %lld]: got %.9g, want %.9g", what, (long long)idx[0], (long long)idx[1],
                      (long long)idx[2], got, want);
        } while (next_index(nd, idx, oshape));
    if (!bad) CHECK(1, "%s", what);
}

static void test_mm(void)
{
    char what[256];
    static const int64_t sizes[][3] = {{3, 4, 5}, {1, 7, 1}, {6, 1, 6}, {17, 33, 9}, {70, 65, 80}, {0, 3, 4}, {3, 0, 4}, {2, 5, 0}, {1, 1, 1}};
    for (int di = 0; di < NDT; di++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (int ka = 0; ka < NKINDS; ka++)
                for (int kb = 0; kb < NKINDS; kb++) {
                    nn_dtype dt = gemm_dtypes[di];
                    int64_t m = sizes[si][0], k = sizes[si][1], n = sizes[si][2];
                    if (m * k * n > 10000 && (ka + kb) % 3) continue; /* the big case in a few layouts only */
                    int64_t sa[2] = {m, k}, sb[2] = {k, n};
                    nn_tensor *a = make_e(2, sa, dt, ka, 1), *b = make_e(2, sb, dt, kb, 0);
                    snprintf(what, sizeof what, "mm %s [%lld,%lld]x[%lld,%lld] %s x %s", nn_dtype_name(dt), (long long)m, (long long)k,
                             (long long)k, (long long)n, kind_name[ka], kind_name[kb]);
                    nn_tensor *out = nn_mm(a, b);
                    CHECK(out, "%s: %s", what, nn_last_error());
                    if (out) check_product(what, out, a, b, false, 1, 0, NULL);
                    nn_release(out);
                    /* matmul of two matrices is mm */
                    out = nn_matmul(a, b);
                    CHECK(out, "%s (matmul): %s", what, nn_last_error());
                    if (out) check_product(what, out, a, b, false, 1, 0, NULL);
                    nn_release(out);
                    nn_release(a), nn_release(b);
                }
}

static void test_bmm(void)
{
    char what[256];
    static const int64_t sizes[][4] = {{3, 3, 4, 5}, {1, 6, 2, 7}, {4, 1, 8, 1}, {0, 2, 3, 4}, {2, 0, 3, 2}, {5, 20, 17, 19}};
    for (int di = 0; di < NDT; di++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (int ka = 0; ka < NKINDS; ka++)
                for (int kb = 0; kb < NKINDS; kb++) {
                    nn_dtype dt = gemm_dtypes[di];
                    int64_t sa[3] = {sizes[si][0], sizes[si][1], sizes[si][2]}, sb[3] = {sizes[si][0], sizes[si][2], sizes[si][3]};
                    nn_tensor *a = make_e(3, sa, dt, ka, (ka + kb) % 3), *b = make_e(3, sb, dt, kb, (ka + 2 * kb) % 3);
                    snprintf(what, sizeof what, "bmm %s [%lld,%lld,%lld] %s x %s", nn_dtype_name(dt), (long long)sa[0], (long long)sa[1],
                             (long long)sa[2], kind_name[ka], kind_name[kb]);
                    nn_tensor *out = nn_bmm(a, b);
                    CHECK(out, "%s: %s", what, nn_last_error());
                    if (out) check_product(what, out, a, b, true, 1, 0, NULL);
                    nn_release(out);
                    out = nn_matmul(a, b);
                    CHECK(out, "%s (matmul): %s", what, nn_last_error());
                    if (out) check_product(what, out, a, b, true, 1, 0, NULL);
                    nn_release(out);
                    nn_release(a), nn_release(b);
                }
}

/* torch.matmul's shape rules, checked element by element against a loop over the broadcast batch. */
static void check_matmul(const char *what, int na, const int64_t *sa, int nb, const int64_t *sb, nn_dtype dt, int ka, int kb,
                         int want_nd, const int64_t *want_shape)
{
    nn_tensor *a = make_e(na, sa, dt, ka, 0), *b = make_e(nb, sb, dt, kb, 0);
    nn_tensor *out = nn_matmul(a, b);
    CHECK(out, "%s: %s", what, nn_last_error());
    if (!out) goto done;
    bool shape_ok = out->ndim == want_nd && out->dtype == dt;
    for (int d = 0; shape_ok && d < want_nd; d++) shape_ok = out->shape[d] == want_shape[d];
    CHECK(shape_ok, "%s: result shape", what);
    if (!shape_ok) goto done;
    /* full shapes: a as [..., m, k] (1-D: m = 1 removed), b as [..., k, n] (1-D: n = 1 removed) */
    int64_t k = na == 1 ? sa[0] : sa[na - 1];
    int64_t idx[NN_MAX_DIMS] = {0};
    int bad = 0;
    if (nn_numel(out)) do {
            /* split the output index into batch, i, j */
            int nbatch = want_nd - (na > 1) - (nb > 1);
            int64_t i = na > 1 ? idx[nbatch] : 0, j = nb > 1 ? idx[want_nd - 1] : 0;
            int64_t ai[NN_MAX_DIMS] = {0}, bi[NN_MAX_DIMS] = {0};
            for (int d = 0; d < na - 2; d++) {
                int od = nbatch - (na - 2) + d;
                ai[d] = sa[d] == 1 ? 0 : idx[od];
            }
            for (int d = 0; d < nb - 2; d++) {
                int od = nbatch - (nb - 2) + d;
                bi[d] = sb[d] == 1 ? 0 : idx[od];
            }
            if (na > 1) ai[na - 2] = i;
            if (nb > 1) bi[nb - 1] = j;
            refval r = dot_ref(dt, a, ai, na - 1, b, bi, nb == 1 ? 0 : nb - 2, k);
            double got = nn_get_f64(out, idx), want = as_dtype(dt, r.v);
            if (!close_to(dt, got, want, r.scale) && bad++ < 3) CHECK(0, "%s: got %.9g, want %.9g", what, got, want);
        } while (next_index(want_nd, idx, out->shape));
    if (!bad) CHECK(1, "%s", what);
done:
    nn_release(out), nn_release(a), nn_release(b);
}

static void test_matmul_shapes(void)
{
    static const struct {
        int na; int64_t sa[4]; int nb; int64_t sb[4]; int nout; int64_t out[4];
    } cases[] = {
        {1, {5}, 1, {5}, 0, {0}},
        {2, {3, 5}, 1, {5}, 1, {3}},
        {1, {5}, 2, {5, 4}, 1, {4}},
        {1, {5}, 3, {2, 5, 4}, 2, {2, 4}},
        {3, {2, 3, 5}, 1, {5}, 2, {2, 3}},
        {3, {2, 3, 5}, 2, {5, 4}, 3, {2, 3, 4}},
        {4, {2, 3, 6, 5}, 2, {5, 4}, 4, {2, 3, 6, 4}},
        {2, {3, 5}, 3, {2, 5, 4}, 3, {2, 3, 4}},
        {4, {2, 1, 3, 5}, 3, {4, 5, 2}, 4, {2, 4, 3, 2}},
        {3, {1, 3, 5}, 4, {2, 3, 5, 2}, 4, {2, 3, 3, 2}},
        {4, {2, 3, 4, 5}, 3, {3, 5, 1}, 4, {2, 3, 4, 1}},
        {3, {0, 3, 5}, 2, {5, 4}, 3, {0, 3, 4}},
        {3, {2, 3, 0}, 2, {0, 4}, 3, {2, 3, 4}},
        {1, {0}, 1, {0}, 0, {0}},
    };
    char what[256];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int di = 0; di < NDT; di++)
            for (int ka = 0; ka < NKINDS; ka++)
                for (int kb = 0; kb < NKINDS; kb++) {
                    snprintf(what, sizeof what, "matmul case %zu %s %s x %s", c, nn_dtype_name(gemm_dtypes[di]), kind_name[ka], kind_name[kb]);
                    check_matmul(what, cases[c].na, cases[c].sa, cases[c].nb, cases[c].sb, gemm_dtypes[di], ka, kb, cases[c].nout, cases[c].out);
                }
}

/* [B, 1, k] rows picked out of a [B, 4, k] tensor (m = 1, batch stride 4k) times a matrix:
 * the batch folds into the rows with the batch stride as row stride. */
static void test_matmul_fold(void)
{
    int64_t sx[3] = {3, 4, 5}, sw[2] = {5, 4};
    nn_tensor *x = make(3, sx, NN_F32, CONTIG), *w = make(2, sw, NN_F32, TRANSPOSED);
    nn_tensor *a = nn_make_view(x, 3, (int64_t[]){3, 1, 5}, (int64_t[]){20, 5, 1}, 10); /* x[:, 2:3, :] */
    nn_tensor *out = nn_matmul(a, w);
    CHECK(out && out->ndim == 3 && out->shape[0] == 3 && out->shape[1] == 1 && out->shape[2] == 4, "fold: %s", nn_last_error());
    bool ok = out != NULL;
    for (int64_t b = 0; ok && b < 3; b++)
        for (int64_t j = 0; ok && j < 4; j++) {
            double want = 0;
            for (int64_t p = 0; p < 5; p++) want += nn_get_f64(x, (int64_t[]){b, 2, p}) * nn_get_f64(w, (int64_t[]){p, j});
            ok = close_to(NN_F32, nn_get_f64(out, (int64_t[]){b, 0, j}), want, 10);
        }
    CHECK(ok, "fold with m = 1 and a batch stride");
    nn_release(out), nn_release(a), nn_release(x), nn_release(w);
}

static void test_addmm(void)
{
    char what[256];
    static const struct { int nd; int64_t shape[2]; } biases[] = {{0, {0}}, {1, {5}}, {1, {1}}, {2, {4, 5}}, {2, {1, 5}}, {2, {4, 1}}};
    static const double coefs[][2] = {{1, 1}, {0.5, 2}, {0, 1}, {3, -2}};
    for (int di = 0; di < NDT; di++)
        for (size_t bi = 0; bi < sizeof biases / sizeof *biases; bi++)
            for (size_t ci = 0; ci < 4; ci++)
                for (int kind = 0; kind < NKINDS; kind++) {
                    nn_dtype dt = gemm_dtypes[di];
                    double beta = coefs[ci][0], alpha = coefs[ci][1];
                    if (nn_dtype_is_integral(dt) && (beta != trunc(beta) || alpha != trunc(alpha))) continue;
                    int64_t sa[2] = {4, 3}, sb[2] = {3, 5};
                    nn_tensor *a = make(2, sa, dt, kind), *b = make(2, sb, dt, (kind + 1) % NKINDS);
                    nn_tensor *bias = make(biases[bi].nd, biases[bi].shape, dt, kind);
                    snprintf(what, sizeof what, "addmm %s bias nd=%d beta=%g alpha=%g %s", nn_dtype_name(dt), biases[bi].nd, beta, alpha, kind_name[kind]);
                    nn_tensor *out = nn_addmm(bias, a, b, beta, alpha);
                    CHECK(out, "%s: %s", what, nn_last_error());
                    if (out) check_product(what, out, a, b, false, alpha, beta, bias);
                    nn_release(out), nn_release(a), nn_release(b), nn_release(bias);
                }
    /* beta = 0: the bias is ignored even when it holds NaN */
    int64_t s2[2] = {2, 2};
    nn_tensor *a = make(2, s2, NN_F32, CONTIG), *bias = nn_empty(2, s2, NN_F32, NN_DEVICE_CPU);
    for (int i = 0; i < 4; i++) ((float *)nn_data(bias))[i] = NAN;
    nn_tensor *out = nn_addmm(bias, a, a, 0, 1);
    CHECK(out && !isnan(nn_get_f64(out, (int64_t[]){1, 1})), "addmm beta=0 with a NaN bias");
    nn_release(out);
    /* errors */
    int64_t s3[1] = {3};
    nn_tensor *bad_bias = make(1, s3, NN_F32, CONTIG), *ai = make(2, s2, NN_I64, CONTIG), *bi = make(2, s2, NN_I64, CONTIG);
    CHECK(!nn_addmm(bad_bias, a, a, 1, 1) && strstr(nn_last_error(), "addmm: the bias of shape [3] cannot be broadcast"), "%s", nn_last_error());
    CHECK(!nn_addmm(bi, ai, ai, 1, 0.5) && strstr(nn_last_error(), "alpha and beta must not be floating point"), "%s", nn_last_error());
    CHECK(!nn_addmm(bi, a, a, 1, 1) && strstr(nn_last_error(), "addmm: expected self and m1 to have the same dtype, but got: long int != float"),
          "%s", nn_last_error());
    nn_release(a), nn_release(bias), nn_release(bad_bias), nn_release(ai), nn_release(bi);
}

static void test_dot_outer(void)
{
    char what[256];
    for (int di = 0; di < NDT; di++)
        for (int ka = 0; ka < NKINDS; ka++)
            for (int64_t k = 0; k < 40; k += 13) {
                nn_dtype dt = gemm_dtypes[di];
                nn_tensor *a = make(1, &k, dt, ka), *b = make(1, &k, dt, (ka + 2) % NKINDS);
                snprintf(what, sizeof what, "dot %s k=%lld %s", nn_dtype_name(dt), (long long)k, kind_name[ka]);
                nn_tensor *out = nn_dot(a, b);
                CHECK(out && out->ndim == 0 && out->dtype == dt, "%s: %s", what, nn_last_error());
                if (out) {
                    int64_t ai[1], bi[1];
                    refval r = dot_ref(dt, a, ai, 0, b, bi, 0, k);
                    double want = as_dtype(dt, r.v);
                    CHECK(close_to(dt, nn_get_f64(out, NULL), want, r.scale), "%s: got %.9g, want %.9g", what, nn_get_f64(out, NULL), want);
                }
                nn_release(out), nn_release(a), nn_release(b);
            }
    /* outer promotes like multiplication */
    static const nn_dtype outer_dt[][2] = {{NN_F32, NN_F32}, {NN_I64, NN_F32}, {NN_U8, NN_I32}, {NN_BOOL, NN_BOOL}, {NN_F16, NN_F64}, {NN_BF16, NN_BF16}, {NN_BOOL, NN_U8}};
    for (size_t c = 0; c < sizeof outer_dt / sizeof *outer_dt; c++)
        for (int ka = 0; ka < NKINDS; ka++) {
            int64_t m = 6, n = 4 + ka;
            nn_tensor *a = make(1, &m, outer_dt[c][0], ka), *b = make(1, &n, outer_dt[c][1], (ka + 1) % NKINDS);
            nn_dtype want_dt = nn_promote_types(outer_dt[c][0], outer_dt[c][1]);
            nn_tensor *out = nn_outer(a, b);
            snprintf(what, sizeof what, "outer %s x %s %s", nn_dtype_name(outer_dt[c][0]), nn_dtype_name(outer_dt[c][1]), kind_name[ka]);
            CHECK(out && out->dtype == want_dt && out->ndim == 2 && out->shape[0] == m && out->shape[1] == n, "%s: %s", what, nn_last_error());
            bool ok = out != NULL;
            for (int64_t i = 0; ok && i < m; i++)
                for (int64_t j = 0; ok && j < n; j++) {
                    double x = as_dtype(want_dt, nn_get_f64(a, &i)), y = as_dtype(want_dt, nn_get_f64(b, &j));
                    double want = as_dtype(want_dt, x * y), got = nn_get_f64(out, (int64_t[]){i, j});
                    ok = close_to(want_dt, got, want, fabs(want));
                }
            CHECK(ok, "%s: values", what);
            nn_release(out), nn_release(a), nn_release(b);
        }
}

static void test_errors(void)
{
    int64_t s34[2] = {3, 4}, s56[2] = {5, 6}, s45[2] = {4, 5}, s234[3] = {2, 3, 4}, s345[3] = {3, 4, 5}, s3[1] = {3}, s4[1] = {4};
    int64_t s2345[4] = {2, 3, 4, 5}, s354[3] = {4, 5, 2};
    nn_tensor *a = make(2, s34, NN_F32, CONTIG), *b = make(2, s56, NN_F32, CONTIG), *c = make(2, s45, NN_F64, CONTIG);
    nn_tensor *c32 = make(2, s45, NN_F32, CONTIG), *t3 = make(3, s234, NN_F32, CONTIG), *u3 = make(3, s345, NN_F32, CONTIG);
    nn_tensor *v3 = make(1, s3, NN_F32, CONTIG), *v4 = make(1, s4, NN_F32, CONTIG), *v4d = make(1, s4, NN_F64, CONTIG);
    nn_tensor *w4 = make(4, s2345, NN_F32, CONTIG), *x3 = make(3, s354, NN_F32, CONTIG);
    nn_tensor *bo = make(2, s34, NN_BOOL, CONTIG), *bo2 = make(2, s45, NN_BOOL, CONTIG), *z = nn_scalar_f64(2);
    CHECK(!nn_mm(a, b) && !strcmp(nn_last_error(), "mm: shapes [3, 4] and [5, 6] cannot be multiplied") && nn_last_status() == NN_ERR_SHAPE,
          "%s", nn_last_error());
    CHECK(!nn_mm(a, c) && !strcmp(nn_last_error(), "mm: expected m1 and m2 to have the same dtype, but got: float != double") &&
              nn_last_status() == NN_ERR_DTYPE,
          "%s", nn_last_error());
    CHECK(!nn_mm(t3, c32) && strstr(nn_last_error(), "mm: expected 2-D tensors"), "%s", nn_last_error());
    CHECK(!nn_mm(bo, bo2) && strstr(nn_last_error(), "not implemented for 'Bool'"), "%s", nn_last_error());
    CHECK(!nn_matmul(a, b) && !strcmp(nn_last_error(), "matmul: shapes [3, 4] and [5, 6] cannot be multiplied"), "%s", nn_last_error());
    CHECK(!nn_matmul(z, a) && strstr(nn_last_error(), "matmul: both arguments to matmul need to be at least 1D, but they are 0D and 2D"),
          "%s", nn_last_error());
    CHECK(!nn_matmul(v3, v4) && strstr(nn_last_error(), "matmul: shapes [3] and [4] cannot be multiplied"), "%s", nn_last_error());
    CHECK(!nn_matmul(a, c) && strstr(nn_last_error(), "float != double"), "%s", nn_last_error());
    CHECK(!nn_matmul(w4, x3) && strstr(nn_last_error(), "do not broadcast") && nn_last_status() == NN_ERR_SHAPE, "%s", nn_last_error());
    CHECK(!nn_bmm(t3, t3) && !strcmp(nn_last_error(), "bmm: shapes [2, 3, 4] and [2, 3, 4] cannot be multiplied"), "%s", nn_last_error());
    CHECK(!nn_bmm(t3, u3) && strstr(nn_last_error(), "batch1 and batch2 must have same number of batches, got 2 and 3"), "%s", nn_last_error());
    CHECK(!nn_bmm(a, a) && strstr(nn_last_error(), "bmm: expected 3-D tensors"), "%s", nn_last_error());
    CHECK(!nn_dot(v3, v4) && strstr(nn_last_error(), "dot: inconsistent tensor size, expected tensor [3] and src [4]"), "%s", nn_last_error());
    CHECK(!nn_dot(a, v4) && strstr(nn_last_error(), "dot: 1D tensors expected, but got 2D and 1D tensors"), "%s", nn_last_error());
    CHECK(!nn_dot(v4, v4d) && strstr(nn_last_error(), "dot: expected both vectors to have same dtype, but found Float and Double"), "%s",
          nn_last_error());
    CHECK(!nn_outer(a, v4) && strstr(nn_last_error(), "outer: expected 1-D"), "%s", nn_last_error());
    nn_release(a), nn_release(b), nn_release(c), nn_release(c32), nn_release(t3), nn_release(u3), nn_release(v3), nn_release(v4);
    nn_release(v4d), nn_release(w4), nn_release(x3), nn_release(bo), nn_release(bo2), nn_release(z);
}

/* The kernel itself: beta = 0 never reads out (NaN there is ignored), beta != 0 accumulates,
 * and an out that is not row-major (transposed) is written correctly. */
static void test_kernel(void)
{
    char what[256];
    for (int di = 0; di < NDT; di++)
        for (int trans_out = 0; trans_out < 2; trans_out++)
            for (int bi = 0; bi < 2; bi++) {
                nn_dtype dt = gemm_dtypes[di];
                double beta = bi ? 0.5 : 0, alpha = 2;
                if (nn_dtype_is_integral(dt)) beta = bi ? 3 : 0;
                int64_t nb = 2, m = 5, k = 7, n = 6, sa[3] = {nb, m, k}, sb[3] = {nb, k, n}, so[3] = {nb, m, n};
                nn_tensor *a = make(3, sa, dt, TRANSPOSED), *b = make(3, sb, dt, NARROWED);
                nn_tensor *out = nn_empty(3, so, dt, NN_DEVICE_CPU);
                if (trans_out) { /* out[b, i, j] at b*m*n + j*m + i */
                    nn_tensor *t = nn_make_view(out, 3, so, (int64_t[]){m * n, 1, m}, 0);
                    nn_release(out);
                    out = t;
                }
                /* old contents: NaN (or garbage) when beta = 0, known values otherwise */
                int64_t idx[3] = {0};
                double *old = malloc(sizeof(double) * nb * m * n);
                int64_t f = 0;
                do {
                    old[f] = bi ? rand_value(dt) : NAN;
                    uint64_t buf = 0;
                    if (nn_dtype_is_integral(dt)) nn_store_i64(&buf, dt, bi ? (int64_t)old[f] : 123);
                    else nn_store_f64(&buf, dt, old[f]);
                    int64_t off = idx[0] * out->strides[0] + idx[1] * out->strides[1] + idx[2] * out->strides[2];
                    memcpy((char *)nn_data(out) + off * nn_dtype_size(dt), &buf, nn_dtype_size(dt));
                    old[f] = nn_get_f64(out, idx);
                    f++;
                } while (next_index(3, idx, so));
                nn_kargs args = {.op = NN_OP_bmm, .out = {out}, .in = {a, b}, .nin = 2, .f = {alpha, beta}};
                snprintf(what, sizeof what, "bmm kernel %s beta=%g out %s", nn_dtype_name(dt), beta, trans_out ? "transposed" : "row-major");
                CHECK(nn_dispatch(&args) == NN_OK, "%s: %s", what, nn_last_error());
                int bad = 0;
                f = 0;
                memset(idx, 0, sizeof idx);
                do {
                    int64_t ai[3] = {idx[0], idx[1], 0}, bj[3] = {idx[0], 0, idx[2]};
                    refval r = dot_ref(dt, a, ai, 2, b, bj, 1, k);
                    double want = alpha * r.v + (beta != 0 ? beta * old[f] : 0);
                    want = as_dtype(dt, want);
                    double got = nn_get_f64(out, idx);
                    if (!close_to(dt, got, want, alpha * r.scale + fabs(beta * (bi ? old[f] : 0))) && bad++ < 3)
                        CHECK(0, "%s [%lld,%lld,%lld]: got %.9g, want %.9g", what, (long long)idx[0], (long long)idx[1], (long long)idx[2], got, want);
                    f++;
                } while (next_index(3, idx, so));
                if (!bad) CHECK(1, "%s", what);
                free(old);
                nn_release(a), nn_release(b), nn_release(out);
            }
    /* k = 0: out = beta * out */
    int64_t sa[3] = {1, 2, 0}, sb[3] = {1, 0, 3}, so[3] = {1, 2, 3};
    nn_tensor *a = nn_empty(3, sa, NN_F32, NN_DEVICE_CPU), *b = nn_empty(3, sb, NN_F32, NN_DEVICE_CPU), *out = nn_empty(3, so, NN_F32, NN_DEVICE_CPU);
    for (int i = 0; i < 6; i++) ((float *)nn_data(out))[i] = (float)i;
    nn_kargs args = {.op = NN_OP_bmm, .out = {out}, .in = {a, b}, .nin = 2, .f = {1, 2}};
    CHECK(nn_dispatch(&args) == NN_OK && ((float *)nn_data(out))[5] == 10, "k = 0 with beta = 2");
    args.f[1] = 0;
    for (int i = 0; i < 6; i++) ((float *)nn_data(out))[i] = NAN;
    CHECK(nn_dispatch(&args) == NN_OK && ((float *)nn_data(out))[3] == 0, "k = 0 with beta = 0 over NaN");
    nn_release(a), nn_release(b), nn_release(out);
}

int main(void)
{
    test_mm();
    test_bmm();
    test_matmul_shapes();
    test_matmul_fold();
    test_addmm();
    test_dot_outer();
    test_errors();
    test_kernel();
    return CHECK_REPORT();
}
