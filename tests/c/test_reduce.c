/* Reductions, max/min/argmax/argmin, var/std/norm, cat and stack against plain
 * reference loops, on random contiguous, transposed, narrowed and expanded
 * inputs in every dtype. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "layouts.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
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

static const char *kind_name[] = {"contiguous", "transposed", "narrowed", "expanded"};

/* A random tensor of the given shape, laid out as kind says. */
static nn_tensor *make(int nd, const int64_t *shape, nn_dtype dt, int kind)
{
    nn_tensor *base = layout_base(kind, nd, shape, dt);
    int64_t n = nn_numel(base);
    char *p = nn_data(base);
    for (int64_t i = 0; i < n; i++) nn_store_f64(p + i * nn_dtype_size(dt), dt, rand_value(dt));
    return layout_view(base, kind, nd, shape);
}

/* Step a multi-index in row-major order; false after the last. */
static bool next_index(int nd, int64_t *idx, const int64_t *shape)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

static bool has_elements(int nd, const int64_t *shape)
{
    for (int d = 0; d < nd; d++)
        if (shape[d] == 0) return false;
    return true;
}

static double tolerance(nn_dtype dt)
{
    switch (dt) {
    case NN_F32: return 1e-5;
    case NN_F64: return 1e-12;
    case NN_F16: return 4e-3;
    case NN_BF16: return 2e-2;
    default: return 0;
    }
}

static bool close_to(double got, double want, double tol)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tol * (1 + fabs(want));
}

/* Checks out against ref (indexed by the keepdim output index, row-major) for the given mask. */
static void compare(const char *what, const nn_tensor *x, const nn_tensor *out, uint32_t mask, bool keepdim, const double *ref,
                    nn_dtype want_dt)
{
    int nd = x->ndim;
    int64_t kshape[NN_MAX_DIMS];
    int nout = 0;
    for (int d = 0; d < nd; d++) {
        kshape[d] = mask >> d & 1 ? 1 : x->shape[d];
        if (keepdim || !(mask >> d & 1)) nout++;
    }
    CHECK(out->dtype == want_dt, "%s: dtype %s, want %s", what, nn_dtype_name(out->dtype), nn_dtype_name(want_dt));
    CHECK(out->ndim == nout, "%s: ndim %d, want %d", what, out->ndim, nout);
    if (out->ndim != nout) return;
    for (int d = 0, o = 0; d < nd; d++) {
        if (!keepdim && (mask >> d & 1)) continue;
        CHECK(out->shape[o] == kshape[d], "%s: shape[%d] = %lld, want %lld", what, o, (long long)out->shape[o], (long long)kshape[d]);
        o++;
    }
    if (!has_elements(nd, kshape)) return;
    int64_t idx[NN_MAX_DIMS] = {0}, oidx[NN_MAX_DIMS];
    int64_t flat = 0;
    int bad = 0;
    double tol = tolerance(want_dt);
    do {
        int o = 0;
        for (int d = 0; d < nd; d++)
            if (keepdim || !(mask >> d & 1)) oidx[o++] = idx[d];
        double got = nn_dtype_is_integral(want_dt) ? (double)nn_get_i64(out, oidx) : nn_get_f64(out, oidx);
        double want = ref[flat];
        if (!nn_dtype_is_integral(want_dt)) { /* the output dtype's rounding (and overflow) of the reference */
            uint64_t buf = 0;
            nn_store_f64(&buf, want_dt, want);
            want = nn_load_f64(&buf, want_dt);
        }
        if (!close_to(got, want, tol) && bad++ < 3)
            CHECK(0, "%s: element %lld: got %.9g, want %.9g", what, (long long)flat, got, want);
        flat++;
    } while (next_index(nd, idx, kshape));
    if (!bad) CHECK(1, "%s", what);
}

/* Flat position in the keepdim output of input index idx. */
static int64_t out_pos(int nd, const int64_t *idx, const int64_t *shape, uint32_t mask)
{
    int64_t pos = 0;
    for (int d = 0; d < nd; d++) pos = pos * (mask >> d & 1 ? 1 : shape[d]) + (mask >> d & 1 ? 0 : idx[d]);
    return pos;
}

static int64_t kept_count(int nd, const int64_t *shape, uint32_t mask)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= mask >> d & 1 ? 1 : shape[d];
    return n;
}

/* Reference for sum mean prod amax amin all any (op) and var/std/norm (via p, corr). */
typedef enum { R_SUM, R_MEAN, R_PROD, R_AMAX, R_AMIN, R_ALL, R_ANY, R_VAR, R_STD, R_NORM } refop;

static double *reference(refop op, const nn_tensor *x, uint32_t mask, double p, double corr, bool int_acc)
{
    int nd = x->ndim;
    int64_t nout = kept_count(nd, x->shape, mask), nred = 1;
    for (int d = 0; d < nd; d++)
        if (mask >> d & 1) nred *= x->shape[d];
    double *acc = calloc((size_t)(nout ? nout : 1), sizeof *acc), *mean = calloc((size_t)(nout ? nout : 1), sizeof *mean);
    int64_t *iacc = calloc((size_t)(nout ? nout : 1), sizeof *iacc);
    for (int64_t j = 0; j < nout; j++) {
        acc[j] = op == R_PROD || op == R_ALL ? 1 : op == R_AMAX ? -INFINITY : op == R_AMIN ? INFINITY : 0;
        iacc[j] = op == R_PROD || op == R_ALL ? 1 : op == R_AMAX ? INT64_MIN : op == R_AMIN ? INT64_MAX : 0;
        if (op == R_NORM && p == -INFINITY) acc[j] = INFINITY;
    }
    int64_t idx[NN_MAX_DIMS] = {0};
    if (has_elements(nd, x->shape) && (op == R_VAR || op == R_STD)) {
        do mean[out_pos(nd, idx, x->shape, mask)] += nn_get_f64(x, idx);
        while (next_index(nd, idx, x->shape));
        for (int64_t j = 0; j < nout; j++) mean[j] /= (double)nred;
    }
    if (has_elements(nd, x->shape)) do {
            int64_t j = out_pos(nd, idx, x->shape, mask);
            double v = nn_get_f64(x, idx);
            int64_t iv = nn_get_i64(x, idx);
            switch (op) {
            case R_SUM: case R_MEAN: acc[j] += v; iacc[j] = (int64_t)((uint64_t)iacc[j] + (uint64_t)iv); break;
            case R_PROD: acc[j] *= v; iacc[j] = (int64_t)((uint64_t)iacc[j] * (uint64_t)iv); break;
            case R_AMAX: if (v > acc[j] || isnan(v)) acc[j] = isnan(acc[j]) ? acc[j] : v; if (iv > iacc[j]) iacc[j] = iv; break;
            case R_AMIN: if (v < acc[j] || isnan(v)) acc[j] = isnan(acc[j]) ? acc[j] : v; if (iv < iacc[j]) iacc[j] = iv; break;
            case R_ALL: acc[j] = acc[j] != 0 && v != 0; break;
            case R_ANY: acc[j] = acc[j] != 0 || v != 0; break;
            case R_VAR: case R_STD: acc[j] += (v - mean[j]) * (v - mean[j]); break;
            case R_NORM:
                if (p == INFINITY) acc[j] = fmax(acc[j], fabs(v));
                else if (p == -INFINITY) acc[j] = fmin(acc[j], fabs(v));
                else if (p == 0) acc[j] += v != 0;
                else acc[j] += pow(fabs(v), p);
                break;
            }
        } while (next_index(nd, idx, x->shape));
    for (int64_t j = 0; j < nout; j++) {
        if (int_acc) acc[j] = (double)iacc[j];
        else if (op == R_MEAN) acc[j] /= (double)nred;
        else if (op == R_VAR || op == R_STD) {
            acc[j] /= fmax(0.0, (double)nred - corr);
            if (op == R_STD) acc[j] = sqrt(acc[j]);
        } else if (op == R_NORM && p != 0 && !isinf(p)) acc[j] = pow(acc[j], 1 / p);
    }
    free(mean);
    free(iacc);
    return acc;
}

static const nn_dtype all_dtypes[] = {NN_F32, NN_F64, NN_F16, NN_BF16, NN_I64, NN_I32, NN_I16, NN_I8, NN_U8, NN_BOOL};
static const nn_dtype float_dtypes[] = {NN_F32, NN_F64, NN_F16, NN_BF16};

typedef struct { int nd; int64_t shape[4]; } shape_case;
static const shape_case shapes[] = {
    {0, {0}}, {1, {37}}, {2, {7, 33}}, {2, {40, 3}}, {3, {3, 4, 5}}, {3, {2, 20, 17}}, {4, {2, 3, 2, 5}},
    {2, {0, 4}}, {3, {3, 0, 2}}, {1, {1}}, {3, {1, 5, 1}},
};

static void test_plain_reductions(void)
{
    static const struct { nn_op op; refop r; } ops[] = {
        {NN_OP_sum, R_SUM}, {NN_OP_mean, R_MEAN}, {NN_OP_prod, R_PROD}, {NN_OP_amax, R_AMAX},
        {NN_OP_amin, R_AMIN}, {NN_OP_all, R_ALL}, {NN_OP_any, R_ANY},
    };
    char what[256];
    for (size_t oi = 0; oi < sizeof ops / sizeof *ops; oi++)
        for (size_t di = 0; di < sizeof all_dtypes / sizeof *all_dtypes; di++)
            for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
                for (int kind = 0; kind < NKINDS; kind++) {
                    nn_op op = ops[oi].op;
                    nn_dtype dt = all_dtypes[di];
                    const shape_case *sc = &shapes[si];
                    if (op == NN_OP_mean && !nn_dtype_is_float(dt)) continue;
                    nn_tensor *x = make(sc->nd, sc->shape, dt, kind);
                    uint32_t nmask = sc->nd ? 1u << sc->nd : 1;
                    for (uint32_t mask = 0; mask < nmask; mask++) {
                        uint32_t full = mask ? mask : sc->nd ? nmask - 1 : 0;
                        bool reduces_empty = false;
                        for (int d = 0; d < sc->nd; d++)
                            if ((full >> d & 1) && sc->shape[d] == 0) reduces_empty = true;
                        for (int keep = 0; keep < 2; keep++) {
                            snprintf(what, sizeof what, "%s %s %s nd=%d mask=%u keepdim=%d", nn_op_name(op), nn_dtype_name(dt),
                                     kind_name[kind], sc->nd, mask, keep);
                            nn_tensor *out = nn_reduce(op, x, mask, keep);
                            if ((op == NN_OP_amax || op == NN_OP_amin) && reduces_empty) {
                                CHECK(!out && strstr(nn_last_error(), "Expected reduction dim"), "%s: %s", what, nn_last_error());
                                nn_release(out);
                                continue;
                            }
                            CHECK(out, "%s: %s", what, nn_last_error());
                            if (!out) continue;
                            nn_dtype want = dt;
                            if ((op == NN_OP_sum || op == NN_OP_prod) && nn_dtype_is_integral(dt)) want = NN_I64;
                            if (op == NN_OP_all || op == NN_OP_any) want = dt == NN_U8 ? NN_U8 : NN_BOOL;
                            bool int_acc = nn_dtype_is_integral(want) && op != NN_OP_all && op != NN_OP_any;
                            double *ref = reference(ops[oi].r, x, full, 0, 0, int_acc);
                            if (nn_dtype_is_integral(want) && want != NN_I64) {
                                int64_t nk = kept_count(sc->nd, sc->shape, full);
                                for (int64_t j = 0; j < nk; j++) {
                                    uint64_t buf = 0;
                                    nn_store_i64(&buf, want, (int64_t)ref[j]);
                                    ref[j] = (double)nn_load_i64(&buf, want);
                                }
                            }
                            compare(what, x, out, full, keep || sc->nd == 0, ref, want);
                            free(ref);
                            nn_release(out);
                        }
                    }
                    nn_release(x);
                }
}

static void test_moments_and_norms(void)
{
    char what[256];
    static const double corrs[] = {1, 0, 2.5};
    static const double ps[] = {2, 1, INFINITY, -INFINITY, 0, 3, 0.5, -1.5};
    for (size_t di = 0; di < 4; di++)
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
            for (int kind = 0; kind < NKINDS; kind++) {
                nn_dtype dt = float_dtypes[di];
                const shape_case *sc = &shapes[si];
                nn_tensor *x = make(sc->nd, sc->shape, dt, kind);
                uint32_t nmask = sc->nd ? 1u << sc->nd : 1;
                for (uint32_t mask = 0; mask < nmask; mask++) {
                    uint32_t full = mask ? mask : sc->nd ? nmask - 1 : 0;
                    bool reduces_empty = false;
                    for (int d = 0; d < sc->nd; d++)
                        if ((full >> d & 1) && sc->shape[d] == 0) reduces_empty = true;
                    for (int keep = 0; keep < 2; keep++) {
                        for (size_t ci = 0; ci < 3; ci++)
                            for (int s = 0; s < 2; s++) {
                                snprintf(what, sizeof what, "%s(correction=%g) %s %s nd=%d mask=%u keepdim=%d", s ? "std" : "var",
                                         corrs[ci], nn_dtype_name(dt), kind_name[kind], sc->nd, mask, keep);
                                nn_tensor *out = s ? nn_std(x, mask, corrs[ci], keep) : nn_var(x, mask, corrs[ci], keep);
                                CHECK(out, "%s: %s", what, nn_last_error());
                                if (!out) continue;
                                double *ref = reference(s ? R_STD : R_VAR, x, full, 0, corrs[ci], false);
                                compare(what, x, out, full, keep || sc->nd == 0, ref, dt);
                                free(ref);
                                nn_release(out);
                            }
                        for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++) {
                            snprintf(what, sizeof what, "norm(p=%g) %s %s nd=%d mask=%u keepdim=%d", ps[pi], nn_dtype_name(dt),
                                     kind_name[kind], sc->nd, mask, keep);
                            nn_tensor *out = nn_norm(x, ps[pi], mask, keep);
                            if (reduces_empty && (ps[pi] < 0 || ps[pi] == INFINITY)) {
                                CHECK(!out && strstr(nn_last_error(), "norm on an empty tensor"), "%s: %s", what, nn_last_error());
                                nn_release(out);
                                continue;
                            }
                            CHECK(out, "%s: %s", what, nn_last_error());
                            if (!out) continue;
                            double *ref = reference(R_NORM, x, full, ps[pi], 0, false);
                            compare(what, x, out, full, keep || sc->nd == 0, ref, dt);
                            free(ref);
                            nn_release(out);
                        }
                    }
                }
                nn_release(x);
            }
}

static void test_sum_dtype(void)
{
    int64_t shape[2] = {5, 6};
    nn_tensor *x = make(2, shape, NN_F32, TRANSPOSED);
    /* float -> int32: each element is cast first (truncation), then summed */
    nn_tensor *s = nn_sum_dtype(x, 1u << 1, false, NN_I32);
    CHECK(s && s->dtype == NN_I32 && s->ndim == 1 && s->shape[0] == 5, "%s", nn_last_error());
    for (int64_t i = 0; s && i < 5; i++) {
        int64_t want = 0;
        for (int64_t j = 0; j < 6; j++) want += (int64_t)nn_get_f64(x, (int64_t[]){i, j});
        CHECK(nn_get_i64(s, &i) == want, "sum(dtype=int32) row %lld: %lld vs %lld", (long long)i, (long long)nn_get_i64(s, &i), (long long)want);
    }
    nn_release(s);
    nn_release(x);
    x = make(2, shape, NN_I32, NARROWED);
    s = nn_sum_dtype(x, 0, true, NN_F64);
    CHECK(s && s->dtype == NN_F64 && s->ndim == 2 && s->shape[0] == 1 && s->shape[1] == 1, "%s", nn_last_error());
    double want = 0;
    for (int64_t i = 0; i < 5; i++)
        for (int64_t j = 0; j < 6; j++) want += nn_get_f64(x, (int64_t[]){i, j});
    CHECK(s && nn_get_f64(s, (int64_t[]){0, 0}) == want, "%s", nn_last_error());
    nn_release(s);
    s = nn_sum_dtype(x, 1, false, NN_DTYPE_NONE);
    CHECK(s && s->dtype == NN_I64, "%s", nn_last_error());
    nn_release(s);
    nn_release(x);
}

/* Large contiguous float32 sums: accuracy of the double accumulation and both fast paths. */
static void test_float32_accuracy(void)
{
    int64_t shape[2] = {1000, 1000};
    nn_tensor *x = nn_empty(2, shape, NN_F32, NN_DEVICE_CPU);
    float *p = nn_data(x);
    for (int64_t i = 0; i < 1000000; i++) p[i] = 0.1f;
    nn_tensor *all = nn_reduce(NN_OP_sum, x, 0, false);
    CHECK(all && fabs(nn_get_f64(all, NULL) - 1000000 * (double)0.1f) < 1e-2, "sum of 1e6 x 0.1f = %.9g", all ? nn_get_f64(all, NULL) : 0);
    nn_tensor *cols = nn_reduce(NN_OP_sum, x, 1u, false), *rows = nn_reduce(NN_OP_sum, x, 2u, false);
    bool ok = cols && rows;
    for (int64_t i = 0; ok && i < 1000; i++)
        ok = fabs(nn_get_f64(cols, &i) - 1000 * (double)0.1f) < 1e-4 && fabs(nn_get_f64(rows, &i) - 1000 * (double)0.1f) < 1e-4;
    CHECK(ok, "column and row sums of 0.1f");
    nn_tensor *m = nn_reduce(NN_OP_mean, x, 1u, true);
    CHECK(m && m->ndim == 2 && m->shape[0] == 1 && fabs(nn_get_f64(m, (int64_t[]){0, 7}) - 0.1) < 1e-7, "%s", nn_last_error());
    nn_release(all), nn_release(cols), nn_release(rows), nn_release(m);
    nn_release(x);
}

static void test_nan_and_empty(void)
{
    int64_t shape[2] = {3, 20};
    nn_tensor *x = make(2, shape, NN_F32, CONTIG);
    float *p = nn_data(x);
    p[1 * 20 + 5] = NAN;  /* row 1 */
    p[2 * 20 + 17] = NAN; /* row 2 */
    p[2 * 20 + 3] = NAN;  /* row 2 again, first */
    nn_tensor *mx = nn_reduce(NN_OP_amax, x, 2u, false), *mnc = nn_reduce(NN_OP_amin, x, 1u, false);
    CHECK(mx && !isnan(nn_get_f64(mx, (int64_t[]){0})) && isnan(nn_get_f64(mx, (int64_t[]){1})) && isnan(nn_get_f64(mx, (int64_t[]){2})), "%s", nn_last_error());
    CHECK(mnc && isnan(nn_get_f64(mnc, (int64_t[]){5})) && isnan(nn_get_f64(mnc, (int64_t[]){3})) && !isnan(nn_get_f64(mnc, (int64_t[]){4})), "%s", nn_last_error());
    nn_tensor *v = NULL, *i = NULL;
    CHECK(nn_max_dim(x, -1, false, &v, &i) == NN_OK, "%s", nn_last_error());
    CHECK(v && i && !isnan(nn_get_f64(v, (int64_t[]){0})) && isnan(nn_get_f64(v, (int64_t[]){1})) &&
          nn_get_i64(i, (int64_t[]){1}) == 5 && nn_get_i64(i, (int64_t[]){2}) == 3, "%s", nn_last_error());
    nn_release(v), nn_release(i);
    nn_tensor *am = nn_argmin(x, 1, false);
    CHECK(am && nn_get_i64(am, (int64_t[]){2}) == 3 && nn_get_i64(am, (int64_t[]){1}) == 5, "%s", nn_last_error());
    nn_tensor *flat = nn_argmax(x, NN_NO_DIM, false);
    CHECK(flat && flat->ndim == 0 && nn_get_i64(flat, NULL) == 25, "flat argmax with NaN: %lld", flat ? (long long)nn_get_i64(flat, NULL) : -1);
    nn_tensor *s = nn_reduce(NN_OP_sum, x, 0, false);
    CHECK(s && isnan(nn_get_f64(s, NULL)), "%s", nn_last_error());
    nn_release(mx), nn_release(mnc), nn_release(am), nn_release(flat), nn_release(s), nn_release(x);

    int64_t e[1] = {0};
    x = nn_empty(1, e, NN_F32, NN_DEVICE_CPU);
    nn_tensor *sum = nn_reduce(NN_OP_sum, x, 0, false), *prod = nn_reduce(NN_OP_prod, x, 0, false), *mean = nn_reduce(NN_OP_mean, x, 0, false);
    nn_tensor *all = nn_reduce(NN_OP_all, x, 0, false), *any = nn_reduce(NN_OP_any, x, 0, false);
    CHECK(sum && nn_get_f64(sum, NULL) == 0 && prod && nn_get_f64(prod, NULL) == 1 && mean && isnan(nn_get_f64(mean, NULL)), "%s", nn_last_error());
    CHECK(all && all->dtype == NN_BOOL && nn_get_i64(all, NULL) == 1 && any && nn_get_i64(any, NULL) == 0, "%s", nn_last_error());
    nn_release(sum), nn_release(prod), nn_release(mean), nn_release(all), nn_release(any);
    CHECK(!nn_reduce(NN_OP_amax, x, 0, false) && strstr(nn_last_error(), "amax(): Expected reduction dim to be specified for input.numel() == 0"),
          "%s", nn_last_error());
    CHECK(!nn_argmax(x, NN_NO_DIM, false) && strstr(nn_last_error(), "argmax(): Expected reduction dim to be specified for input.numel() == 0"),
          "%s", nn_last_error());
    nn_tensor *vv = NULL, *ii = NULL;
    CHECK(nn_max_dim(x, 0, false, &vv, &ii) && strstr(nn_last_error(), "max(): Expected reduction dim 0 to have non-zero size"), "%s",
          nn_last_error());
    nn_release(x);
    int64_t e2[2] = {0, 3};
    x = nn_empty(2, e2, NN_F32, NN_DEVICE_CPU);
    CHECK(!nn_reduce(NN_OP_amin, x, 1u, false) && strstr(nn_last_error(), "amin(): Expected reduction dim 0 to have non-zero size."), "%s",
          nn_last_error());
    nn_tensor *ok = nn_reduce(NN_OP_amax, x, 2u, false); /* reduces the size-3 dim: shape [0] */
    CHECK(ok && ok->ndim == 1 && ok->shape[0] == 0, "%s", nn_last_error());
    nn_release(ok);
    nn_tensor *am2 = nn_argmax(x, 1, true);
    CHECK(am2 && am2->ndim == 2 && am2->shape[0] == 0 && am2->shape[1] == 1, "%s", nn_last_error());
    nn_release(am2);
    nn_release(x);
}

/* max/min along a dim, argmax/argmin along a dim and flat, against plain loops. */
static void test_index_reductions(void)
{
    char what[256];
    for (size_t di = 0; di < sizeof all_dtypes / sizeof *all_dtypes; di++)
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
            for (int kind = 0; kind < NKINDS; kind++) {
                nn_dtype dt = all_dtypes[di];
                const shape_case *sc = &shapes[si];
                int nd = sc->nd;
                nn_tensor *x = make(nd, sc->shape, dt, kind);
                int ndims = nd ? nd : 1;
                for (int dim = -ndims; dim < ndims; dim++)
                    for (int keep = 0; keep < 2; keep++)
                        for (int which = 0; which < 4; which++) { /* max_dim min_dim argmax argmin */
                            bool want_max = which == 0 || which == 2;
                            int d = dim < 0 ? dim + ndims : dim;
                            snprintf(what, sizeof what, "%s %s %s nd=%d dim=%d keepdim=%d", which == 0 ? "max" : which == 1 ? "min" : which == 2 ? "argmax" : "argmin",
                                     nn_dtype_name(dt), kind_name[kind], nd, dim, keep);
                            nn_tensor *v = NULL, *ix = NULL;
                            nn_status st;
                            if (which < 2) st = (which ? nn_min_dim : nn_max_dim)(x, dim, keep, &v, &ix);
                            else {
                                ix = (which == 2 ? nn_argmax : nn_argmin)(x, dim, keep);
                                st = ix ? NN_OK : nn_last_status();
                            }
                            if (which >= 2 && dt == NN_BOOL) {
                                CHECK(st && strstr(nn_last_error(), "not implemented for 'Bool'"), "%s: %s", what, nn_last_error());
                                continue;
                            }
                            if (nd && sc->shape[d] == 0) {
                                CHECK(st && strstr(nn_last_error(), "to have non-zero size"), "%s: %s", what, nn_last_error());
                                continue;
                            }
                            CHECK(st == NN_OK, "%s: %s", what, nn_last_error());
                            if (st) continue;
                            uint32_t mask = nd ? 1u << d : 0;
                            int64_t nk = kept_count(nd, sc->shape, mask);
                            double *rv = calloc((size_t)(nk ? nk : 1), sizeof *rv), *ri = calloc((size_t)(nk ? nk : 1), sizeof *ri);
                            int64_t *seen = calloc((size_t)(nk ? nk : 1), sizeof *seen);
                            int64_t idx[NN_MAX_DIMS] = {0};
                            if (has_elements(nd, sc->shape)) do {
                                    int64_t j = out_pos(nd, idx, sc->shape, mask);
                                    double val = nn_get_f64(x, idx);
                                    if (!seen[j]++ || (want_max ? val > rv[j] : val < rv[j])) rv[j] = val, ri[j] = nd ? (double)idx[d] : 0;
                                } while (next_index(nd, idx, sc->shape));
                            if (v) compare(what, x, v, mask, keep || nd == 0, rv, dt);
                            compare(what, x, ix, mask, keep || nd == 0, ri, NN_I64);
                            free(rv), free(ri), free(seen);
                            nn_release(v), nn_release(ix);
                        }
                /* flat argmax/argmin: index into the logical row-major order */
                if (dt != NN_BOOL && has_elements(nd, sc->shape))
                    for (int which = 0; which < 2; which++)
                        for (int keep = 0; keep < 2; keep++) {
                            nn_tensor *r = (which ? nn_argmin : nn_argmax)(x, NN_NO_DIM, keep);
                            CHECK(r, "flat arg: %s", nn_last_error());
                            if (!r) continue;
                            int64_t idx[NN_MAX_DIMS] = {0}, flat = 0, best = 0;
                            double bv = 0;
                            do {
                                double val = nn_get_f64(x, idx);
                                if (flat == 0 || (which ? val < bv : val > bv)) bv = val, best = flat;
                                flat++;
                            } while (next_index(nd, idx, sc->shape));
                            int64_t zeros[NN_MAX_DIMS] = {0};
                            CHECK(r->dtype == NN_I64 && r->ndim == (keep ? nd : 0), "flat arg ndim %d", r->ndim);
                            bool ones = true;
                            for (int k = 0; k < r->ndim; k++) ones = ones && r->shape[k] == 1;
                            CHECK(ones && nn_get_i64(r, zeros) == best, "flat %s %s %s nd=%d: %lld vs %lld", which ? "argmin" : "argmax",
                                  nn_dtype_name(dt), kind_name[kind], nd, (long long)nn_get_i64(r, zeros), (long long)best);
                            nn_release(r);
                        }
                nn_release(x);
            }
}

static void test_reduce_errors(void)
{
    int64_t shape[2] = {2, 3};
    nn_tensor *xi = make(2, shape, NN_I64, CONTIG), *xb = make(2, shape, NN_BOOL, CONTIG), *xf = make(2, shape, NN_F32, CONTIG);
    CHECK(!nn_reduce(NN_OP_mean, xi, 0, false) &&
              !strcmp(nn_last_error(), "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"),
          "%s", nn_last_error());
    CHECK(!nn_reduce(NN_OP_mean, xb, 0, false) && strstr(nn_last_error(), "Got: Bool"), "%s", nn_last_error());
    CHECK(!nn_var(xi, 0, 1, false) && strstr(nn_last_error(), "std and var only support floating point"), "%s", nn_last_error());
    CHECK(!nn_std(xi, 0, 1, false) && strstr(nn_last_error(), "std(): "), "%s", nn_last_error());
    CHECK(!nn_norm(xi, 2, 0, false) && strstr(nn_last_error(), "norm(): ") && strstr(nn_last_error(), "Got Long"), "%s", nn_last_error());
    CHECK(!nn_reduce(NN_OP_sum, xf, 1u << 2, false) && nn_last_status() == NN_ERR_INDEX && strstr(nn_last_error(), "dimension out of range"),
          "%s", nn_last_error());
    CHECK(!nn_reduce(NN_OP_add, xf, 0, false) && nn_last_status() == NN_ERR_ARG, "%s", nn_last_error());
    nn_tensor *v = NULL, *i = NULL;
    CHECK(nn_max_dim(xf, 2, false, &v, &i) == NN_ERR_INDEX && strstr(nn_last_error(), "max: dimension out of range"), "%s", nn_last_error());
    CHECK(!nn_argmax(xf, -3, false) && strstr(nn_last_error(), "argmax: dimension out of range"), "%s", nn_last_error());
    /* sum/prod of integers and bools give int64; all/any of uint8 keep uint8 */
    nn_tensor *s = nn_reduce(NN_OP_sum, xb, 0, false), *pr = nn_reduce(NN_OP_prod, xi, 1u, false), *mx = nn_reduce(NN_OP_amax, xb, 0, false);
    CHECK(s && s->dtype == NN_I64 && pr && pr->dtype == NN_I64 && mx && mx->dtype == NN_BOOL, "%s", nn_last_error());
    nn_release(s), nn_release(pr), nn_release(mx);
    nn_release(xi), nn_release(xb), nn_release(xf);
    /* 0-dim input: every dim mask reduces nothing and keeps 0 dims */
    nn_tensor *z = nn_scalar_f64(3.5);
    nn_tensor *zs = nn_reduce(NN_OP_sum, z, 1u, true), *zv = nn_var(z, 0, 1, false);
    CHECK(zs && zs->ndim == 0 && nn_get_f64(zs, NULL) == 3.5 && zv && isnan(nn_get_f64(zv, NULL)), "%s", nn_last_error());
    nn_release(zs), nn_release(zv);
    CHECK(!nn_reduce(NN_OP_sum, z, 2u, true) && strstr(nn_last_error(), "dimension out of range"), "%s", nn_last_error());
    nn_release(z);
}

/* ---- cat and stack ---- */

/* out[pos] == the value of t at idx, cast to out's dtype */
static bool same_value(const nn_tensor *out, const int64_t *oidx, const nn_tensor *t, const int64_t *idx)
{
    uint64_t buf = 0;
    if (nn_dtype_is_integral(t->dtype) && nn_dtype_is_integral(out->dtype)) {
        nn_store_i64(&buf, out->dtype, nn_get_i64(t, idx));
        return nn_load_i64(&buf, out->dtype) == nn_get_i64(out, oidx);
    }
    nn_store_f64(&buf, out->dtype, nn_get_f64(t, idx));
    return nn_load_f64(&buf, out->dtype) == nn_get_f64(out, oidx);
}

static void test_cat(void)
{
    char what[256];
    static const nn_dtype dts[] = {NN_F32, NN_I64, NN_F16, NN_BOOL, NN_F64, NN_U8, NN_I32, NN_BF16, NN_I16, NN_I8};
    for (int nd = 1; nd <= 3; nd++)
        for (int dim = -nd; dim < nd; dim++)
            for (int trial = 0; trial < 6; trial++) {
                int d = dim < 0 ? dim + nd : dim;
                int64_t base[3] = {3, 4, 2};
                nn_tensor *ts[4];
                int n = 1 + trial % 4;
                nn_dtype want = dts[(trial + nd) % 10];
                for (int i = 0; i < n; i++) {
                    int64_t shape[3] = {base[0], base[1], base[2]};
                    shape[d] = (i + trial) % 3; /* sizes 0, 1, 2 along dim */
                    nn_dtype dt = dts[(trial + nd + i * 3) % 10];
                    if (i) want = nn_promote_types(want, dt);
                    else want = dt;
                    ts[i] = make(nd, shape, dt, (i + trial) % NKINDS);
                }
                snprintf(what, sizeof what, "cat nd=%d dim=%d n=%d", nd, dim, n);
                nn_tensor *out = nn_cat(ts, n, dim);
                CHECK(out, "%s: %s", what, nn_last_error());
                if (out) {
                    int64_t total = 0;
                    for (int i = 0; i < n; i++) total += ts[i]->shape[d];
                    CHECK(out->dtype == want && out->ndim == nd && out->shape[d] == total, "%s: dtype %s", what, nn_dtype_name(out->dtype));
                    int64_t off = 0;
                    bool ok = true;
                    for (int i = 0; i < n; i++) {
                        int64_t idx[3] = {0}, oidx[3];
                        if (has_elements(nd, ts[i]->shape)) do {
                                for (int k = 0; k < nd; k++) oidx[k] = idx[k] + (k == d ? off : 0);
                                ok = ok && same_value(out, oidx, ts[i], idx);
                            } while (next_index(nd, idx, ts[i]->shape));
                        off += ts[i]->shape[d];
                    }
                    CHECK(ok, "%s: values", what);
                }
                nn_release(out);
                for (int i = 0; i < n; i++) nn_release(ts[i]);
            }
    /* legacy: 1-D empty tensors are skipped whatever the other shapes; they still take part in promotion */
    int64_t s23[2] = {2, 3}, s0[1] = {0};
    nn_tensor *a = make(2, s23, NN_F32, TRANSPOSED), *e = nn_empty(1, s0, NN_F64, NN_DEVICE_CPU), *b = make(2, s23, NN_I32, NARROWED);
    nn_tensor *l[3] = {e, a, b};
    nn_tensor *out = nn_cat(l, 3, 1);
    CHECK(out && out->dtype == NN_F64 && out->ndim == 2 && out->shape[0] == 2 && out->shape[1] == 6, "legacy empty: %s", out ? "" : nn_last_error());
    CHECK(out && nn_get_f64(out, (int64_t[]){1, 4}) == nn_get_f64(b, (int64_t[]){1, 1}) && nn_get_f64(out, (int64_t[]){0, 2}) == nn_get_f64(a, (int64_t[]){0, 2}), "%s", nn_last_error());
    nn_release(out);
    nn_tensor *ee[2] = {e, e};
    out = nn_cat(ee, 2, 0);
    CHECK(out && out->ndim == 1 && out->shape[0] == 0 && out->dtype == NN_F64, "%s", nn_last_error());
    nn_release(out);
    /* errors, with PyTorch's wording */
    int64_t s24[2] = {2, 4}, s33[2] = {3, 3}, s3[1] = {3}, s233[3] = {2, 3, 3};
    nn_tensor *c = make(2, s33, NN_F32, CONTIG), *v = make(1, s3, NN_F32, CONTIG), *t3 = make(3, s233, NN_F32, CONTIG), *w = make(2, s24, NN_F32, CONTIG);
    nn_tensor *l2[2] = {a, c};
    CHECK(!nn_cat(l2, 2, 1) &&
              !strcmp(nn_last_error(), "cat(): Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the list."),
          "%s", nn_last_error());
    nn_tensor *l3[3] = {e, a, c};
    CHECK(!nn_cat(l3, 3, -1) && strstr(nn_last_error(), "Expected size 2 but got size 3 for tensor number 2 in the list."), "%s", nn_last_error());
    nn_tensor *l4[2] = {a, t3};
    CHECK(!nn_cat(l4, 2, 0) && strstr(nn_last_error(), "Tensors must have same number of dimensions: got 2 and 3"), "%s", nn_last_error());
    nn_tensor *l5[2] = {a, v};
    CHECK(!nn_cat(l5, 2, 0) && strstr(nn_last_error(), "same number of dimensions"), "%s", nn_last_error());
    CHECK(!nn_cat(l2, 0, 0) && strstr(nn_last_error(), "expected a non-empty list of Tensors"), "%s", nn_last_error());
    CHECK(!nn_cat(l2, 2, 2) && nn_last_status() == NN_ERR_INDEX && strstr(nn_last_error(), "dimension out of range"), "%s", nn_last_error());
    nn_tensor *z = nn_scalar_f64(1), *l6[2] = {a, z};
    CHECK(!nn_cat(l6, 2, 0) && strstr(nn_last_error(), "zero-dimensional tensor (at position 1) cannot be concatenated"), "%s", nn_last_error());
    nn_tensor *l7[2] = {a, w};
    out = nn_cat(l7, 2, -1);
    CHECK(out && out->shape[0] == 2 && out->shape[1] == 7, "%s", nn_last_error());
    nn_release(out);

    /* stack: every dim in [-(nd+1), nd] */
    nn_tensor *sl[3] = {a, b, make(2, s23, NN_U8, EXPANDED)};
    for (int dim = -3; dim <= 2; dim++) {
        int d = dim < 0 ? dim + 3 : dim;
        out = nn_stack(sl, 3, dim);
        CHECK(out && out->ndim == 3 && out->shape[d] == 3 && out->dtype == NN_F32, "stack dim=%d: %s", dim, out ? "" : nn_last_error());
        bool ok = out != NULL;
        for (int i = 0; ok && i < 3; i++) {
            int64_t idx[2] = {0};
            do {
                int64_t oidx[3];
                for (int k = 0, s = 0; k < 3; k++) oidx[k] = k == d ? i : idx[s++];
                ok = same_value(out, oidx, sl[i], idx);
            } while (ok && next_index(2, idx, s23));
        }
        CHECK(ok, "stack dim=%d values", dim);
        nn_release(out);
    }
    nn_tensor *zs[2] = {z, z};
    out = nn_stack(zs, 2, 0);
    CHECK(out && out->ndim == 1 && out->shape[0] == 2 && nn_get_f64(out, (int64_t[]){1}) == 1, "%s", nn_last_error());
    nn_release(out);
    nn_tensor *es[2] = {e, e};
    out = nn_stack(es, 2, 1);
    CHECK(out && out->ndim == 2 && out->shape[0] == 0 && out->shape[1] == 2, "%s", nn_last_error());
    nn_release(out);
    CHECK(!nn_stack(l2, 2, 0) && !strcmp(nn_last_error(), "stack(): expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 3] at entry 1"),
          "%s", nn_last_error());
    CHECK(!nn_stack(sl, 3, 3) && strstr(nn_last_error(), "dimension out of range"), "%s", nn_last_error());
    CHECK(!nn_stack(sl, 0, 0) && strstr(nn_last_error(), "non-empty"), "%s", nn_last_error());
    nn_release(sl[2]);
    nn_release(a), nn_release(b), nn_release(c), nn_release(e), nn_release(v), nn_release(t3), nn_release(w), nn_release(z);
}

int main(void)
{
    test_plain_reductions();
    test_moments_and_norms();
    test_sum_dtype();
    test_float32_accuracy();
    test_nan_and_empty();
    test_index_reductions();
    test_reduce_errors();
    test_cat();
    return CHECK_REPORT();
}
