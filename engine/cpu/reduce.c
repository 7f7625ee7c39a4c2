/* CPU reductions: sum mean prod amax amin all any var norm over a dim mask, and
 * the one-dim index reductions max_dim min_dim argmax argmin.
 *
 * out arrives with the keepdim shape. The input's dims split into kept and
 * reduced groups, each sorted by stride and coalesced. Two strategies:
 *  - inner: for each output element, fold every reduced element into one
 *    accumulator (rows along the innermost reduced dim);
 *  - vec: when the innermost input dim is a kept one (column sums), walk the
 *    reduced positions once and accumulate each kept row (in tiles of TILE)
 *    into an array of accumulators, so memory is read in order.
 * Floats accumulate in double, integers in int64 (wrapping like PyTorch).
 * Rows are converted to a small double/int64 buffer first, so each op is
 * written once per path; contiguous float32 rows skip the buffer for sum,
 * amax/amin and var (loops in fixed blocks that -O2 vectorizes), and float32
 * column sums take four rows per pass over the accumulators. Independent outputs of a large
 * reduction split over the CPU's threads (parallel.h); the reduction of one output never does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "parallel.h"
#include "reduce_plan.h"

enum { CHUNK = 256, VEC_MIN = 16, TILE = 2048 };

typedef enum { A_SUM, A_PROD, A_MAX, A_MIN, A_ALL, A_ANY, A_SQDEV, A_ABS, A_SQ, A_MAXABS, A_MINABS, A_NZ, A_POW } accop;

typedef nn_reduce_plan plan;

typedef struct {
    nn_op op;
    accop acc;
    bool ints;            /* int64 accumulators (else double) */
    nn_dtype dt;          /* input dtype */
    double p;             /* norm order */
    double center;        /* A_SQDEV, inner strategy */
    const double *centers; /* A_SQDEV, vec strategy */
} rctx;

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

/* Step a multi-index over shape[0..n), moving up to three pointers; false after the last. */
static bool odo_next(int n, int64_t *idx, const int64_t *shape, char **ptr, const int64_t *const *strides, int np)
{
    for (int d = n - 1; d >= 0; d--) {
        for (int k = 0; k < np; k++) ptr[k] += strides[k][d];
        if (++idx[d] < shape[d]) return true;
        for (int k = 0; k < np; k++) ptr[k] -= strides[k][d] * shape[d];
        idx[d] = 0;
    }
    return false;
}

/* ---- loading a strided row into a buffer ---- */

static void load_i(int64_t *restrict buf, const char *p, int64_t s, int64_t n, nn_dtype dt)
{
    switch (dt) {
    case NN_I64: for (int64_t i = 0; i < n; i++) buf[i] = *(const int64_t *)(p + i * s); break;
    case NN_I32: for (int64_t i = 0; i < n; i++) buf[i] = *(const int32_t *)(p + i * s); break;
    case NN_I16: for (int64_t i = 0; i < n; i++) buf[i] = *(const int16_t *)(p + i * s); break;
    case NN_I8: for (int64_t i = 0; i < n; i++) buf[i] = *(const int8_t *)(p + i * s); break;
    case NN_U8: for (int64_t i = 0; i < n; i++) buf[i] = *(const uint8_t *)(p + i * s); break;
    case NN_BOOL: for (int64_t i = 0; i < n; i++) buf[i] = *(const uint8_t *)(p + i * s) != 0; break;
    default: for (int64_t i = 0; i < n; i++) buf[i] = nn_load_i64(p + i * s, dt); break;
    }
}

/* ---- folding many elements into one accumulator ---- */

static double sum_f32(const float *x, int64_t n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) s0 += x[i], s1 += x[i + 1], s2 += x[i + 2], s3 += x[i + 3];
    for (; i < n; i++) s0 += x[i];
    return (s0 + s1) + (s2 + s3);
}

static double sum_f64(const double *x, int64_t n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) s0 += x[i], s1 += x[i + 1], s2 += x[i + 2], s3 += x[i + 3];
    for (; i < n; i++) s0 += x[i];
    return (s0 + s1) + (s2 + s3);
}

/* max (or min) of a and x[0..n); NaN anywhere gives NaN. Fixed blocks of 8 so -O2 vectorizes. */
static double minmax_f32(double a, const float *x, int64_t n, bool want_max)
{
    if (a != a) return a;
    float m[8];
    int nan = 0;
    int64_t j = 0;
    for (int t = 0; t < 8; t++) m[t] = (float)a;
    if (want_max)
        for (; j + 8 <= n; j += 8)
            for (int t = 0; t < 8; t++) m[t] = x[j + t] > m[t] ? x[j + t] : m[t], nan |= x[j + t] != x[j + t];
    else
        for (; j + 8 <= n; j += 8)
            for (int t = 0; t < 8; t++) m[t] = x[j + t] < m[t] ? x[j + t] : m[t], nan |= x[j + t] != x[j + t];
    for (; j < n; j++) {
        m[0] = want_max ? (x[j] > m[0] ? x[j] : m[0]) : (x[j] < m[0] ? x[j] : m[0]);
        nan |= x[j] != x[j];
    }
    if (nan) return NAN;
    for (int t = 1; t < 8; t++) m[0] = want_max ? (m[t] > m[0] ? m[t] : m[0]) : (m[t] < m[0] ? m[t] : m[0]);
    return m[0];
}

/* sum of (x - c)^2 in double */
static double sqdev_f32(const float *x, int64_t n, double c)
{
    double s[4] = {0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (int t = 0; t < 4; t++) s[t] += ((double)x[j + t] - c) * ((double)x[j + t] - c);
    for (; j < n; j++) s[0] += ((double)x[j] - c) * ((double)x[j] - c);
    return (s[0] + s[1]) + (s[2] + s[3]);
}

static double fold_f(const rctx *c, double a, const double *x, int64_t n)
{
    switch (c->acc) {
    case A_SUM: return a + sum_f64(x, n);
    case A_PROD: for (int64_t i = 0; i < n; i++) a *= x[i]; return a;
    case A_MAX:
        for (int64_t i = 0; i < n && a == a; i++)
            if (x[i] > a || x[i] != x[i]) a = x[i];
        return a;
    case A_MIN:
        for (int64_t i = 0; i < n && a == a; i++)
            if (x[i] < a || x[i] != x[i]) a = x[i];
        return a;
    case A_ALL: for (int64_t i = 0; i < n; i++) a = a != 0 && x[i] != 0; return a;
    case A_ANY: for (int64_t i = 0; i < n; i++) a = a != 0 || x[i] != 0; return a;
    case A_SQDEV: for (int64_t i = 0; i < n; i++) a += (x[i] - c->center) * (x[i] - c->center); return a;
    case A_ABS: for (int64_t i = 0; i < n; i++) a += fabs(x[i]); return a;
    case A_SQ: for (int64_t i = 0; i < n; i++) a += x[i] * x[i]; return a;
    case A_MAXABS:
        for (int64_t i = 0; i < n; i++) {
            double v = fabs(x[i]);
            if (v > a || v != v) a = v;
            if (a != a) break;
        }
        return a;
    case A_MINABS:
        for (int64_t i = 0; i < n; i++) {
            double v = fabs(x[i]);
            if (v < a || v != v) a = v;
            if (a != a) break;
        }
        return a;
    case A_NZ: for (int64_t i = 0; i < n; i++) a += x[i] != 0; return a;
    case A_POW: for (int64_t i = 0; i < n; i++) a += pow(fabs(x[i]), c->p); return a;
    }
    return a;
}

static int64_t fold_i(const rctx *c, int64_t a, const int64_t *x, int64_t n)
{
    uint64_t u = (uint64_t)a; /* wrapping arithmetic without signed overflow */
    switch (c->acc) {
    case A_SUM: for (int64_t i = 0; i < n; i++) u += (uint64_t)x[i]; return (int64_t)u;
    case A_PROD: for (int64_t i = 0; i < n; i++) u *= (uint64_t)x[i]; return (int64_t)u;
    case A_MAX: for (int64_t i = 0; i < n; i++) a = x[i] > a ? x[i] : a; return a;
    case A_MIN: for (int64_t i = 0; i < n; i++) a = x[i] < a ? x[i] : a; return a;
    case A_ALL: for (int64_t i = 0; i < n; i++) a = a && x[i]; return a;
    case A_ANY: for (int64_t i = 0; i < n; i++) a = a || x[i]; return a;
    default: return a;
    }
}

static void fold_row(const rctx *c, void *acc, const char *p, int64_t s, int64_t n)
{
    if (c->ints) {
        int64_t buf[CHUNK], *a = acc;
        for (int64_t i = 0; i < n; i += CHUNK) {
            int64_t m = n - i < CHUNK ? n - i : CHUNK;
            load_i(buf, p + i * s, s, m, c->dt);
            *a = fold_i(c, *a, buf, m);
        }
        return;
    }
    double *a = acc;
    if (c->acc == A_SUM && c->dt == NN_F32 && s == 4) { *a += sum_f32((const float *)p, n); return; }
    if (c->acc == A_SUM && c->dt == NN_F64 && s == 8) { *a += sum_f64((const double *)p, n); return; }
    if (c->dt == NN_F32 && s == 4 && (c->acc == A_MAX || c->acc == A_MIN)) { *a = minmax_f32(*a, (const float *)p, n, c->acc == A_MAX); return; }
    if (c->dt == NN_F32 && s == 4 && (c->acc == A_SQDEV || c->acc == A_SQ)) {
        *a += sqdev_f32((const float *)p, n, c->acc == A_SQDEV ? c->center : 0);
        return;
    }
    double buf[CHUNK];
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        nn_cpu_load_row(buf, p + i * s, s, m, c->dt);
        *a = fold_f(c, *a, buf, m);
    }
}

/* ---- accumulating a row elementwise into an array of accumulators ---- */

static void vec_f(const rctx *c, double *restrict a, const double *restrict x, int64_t n, const double *ctr)
{
    switch (c->acc) {
    case A_SUM: for (int64_t j = 0; j < n; j++) a[j] += x[j]; break;
    case A_PROD: for (int64_t j = 0; j < n; j++) a[j] *= x[j]; break;
    case A_MAX: for (int64_t j = 0; j < n; j++) if (x[j] > a[j] || x[j] != x[j]) a[j] = a[j] != a[j] ? a[j] : x[j]; break;
    case A_MIN: for (int64_t j = 0; j < n; j++) if (x[j] < a[j] || x[j] != x[j]) a[j] = a[j] != a[j] ? a[j] : x[j]; break;
    case A_ALL: for (int64_t j = 0; j < n; j++) a[j] = a[j] != 0 && x[j] != 0; break;
    case A_ANY: for (int64_t j = 0; j < n; j++) a[j] = a[j] != 0 || x[j] != 0; break;
    case A_SQDEV: for (int64_t j = 0; j < n; j++) a[j] += (x[j] - ctr[j]) * (x[j] - ctr[j]); break;
    case A_ABS: for (int64_t j = 0; j < n; j++) a[j] += fabs(x[j]); break;
    case A_SQ: for (int64_t j = 0; j < n; j++) a[j] += x[j] * x[j]; break;
    case A_MAXABS:
        for (int64_t j = 0; j < n; j++) {
            double v = fabs(x[j]);
            if (v > a[j] || v != v) a[j] = a[j] != a[j] ? a[j] : v;
        }
        break;
    case A_MINABS:
        for (int64_t j = 0; j < n; j++) {
            double v = fabs(x[j]);
            if (v < a[j] || v != v) a[j] = a[j] != a[j] ? a[j] : v;
        }
        break;
    case A_NZ: for (int64_t j = 0; j < n; j++) a[j] += x[j] != 0; break;
    case A_POW: for (int64_t j = 0; j < n; j++) a[j] += pow(fabs(x[j]), c->p); break;
    }
}

static void vec_i(const rctx *c, int64_t *restrict a, const int64_t *restrict x, int64_t n)
{
    switch (c->acc) {
    case A_SUM: for (int64_t j = 0; j < n; j++) a[j] = (int64_t)((uint64_t)a[j] + (uint64_t)x[j]); break;
    case A_PROD: for (int64_t j = 0; j < n; j++) a[j] = (int64_t)((uint64_t)a[j] * (uint64_t)x[j]); break;
    case A_MAX: for (int64_t j = 0; j < n; j++) a[j] = x[j] > a[j] ? x[j] : a[j]; break;
    case A_MIN: for (int64_t j = 0; j < n; j++) a[j] = x[j] < a[j] ? x[j] : a[j]; break;
    case A_ALL: for (int64_t j = 0; j < n; j++) a[j] = a[j] && x[j]; break;
    case A_ANY: for (int64_t j = 0; j < n; j++) a[j] = a[j] || x[j]; break;
    default: break;
    }
}

/* vec_f for contiguous float32 rows, in fixed blocks of 8 so -O2 vectorizes. */
static void vec_f32(accop op, double *restrict a, const float *restrict x, int64_t n, const double *restrict ctr)
{
    int64_t j = 0;
#define VEC_BLOCKS(stmt) \
    for (; j + 8 <= n; j += 8) \
        for (int t = 0; t < 8; t++) { int64_t i = j + t; stmt; } \
    for (int64_t i = j; i < n; i++) { stmt; }
    switch (op) {
    case A_MAX: VEC_BLOCKS(double v = x[i]; a[i] = ((a[i] == a[i]) & ((v > a[i]) | (v != v))) ? v : a[i]) break;
    case A_MIN: VEC_BLOCKS(double v = x[i]; a[i] = ((a[i] == a[i]) & ((v < a[i]) | (v != v))) ? v : a[i]) break;
    case A_SQDEV: VEC_BLOCKS(double d = x[i] - ctr[i]; a[i] += d * d) break;
    default: break;
    }
#undef VEC_BLOCKS
}

static void vec_row(const rctx *c, void *acc, const char *p, int64_t s, int64_t n)
{
    if (c->ints) {
        int64_t buf[CHUNK], *a = acc;
        for (int64_t i = 0; i < n; i += CHUNK) {
            int64_t m = n - i < CHUNK ? n - i : CHUNK;
            load_i(buf, p + i * s, s, m, c->dt);
            vec_i(c, a + i, buf, m);
        }
        return;
    }
    double *restrict a = acc;
    if (c->acc == A_SUM && c->dt == NN_F32 && s == 4) {
        const float *restrict x = (const float *)p;
        int64_t j = 0;
        for (; j + 8 <= n; j += 8) /* fixed-length blocks, so -O2 vectorizes */
            for (int t = 0; t < 8; t++) a[j + t] += x[j + t];
        for (; j < n; j++) a[j] += x[j];
        return;
    }
    if (c->dt == NN_F32 && s == 4 && (c->acc == A_MAX || c->acc == A_MIN || c->acc == A_SQDEV)) {
        vec_f32(c->acc, a, (const float *)p, n, c->centers);
        return;
    }
    double buf[CHUNK];
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        nn_cpu_load_row(buf, p + i * s, s, m, c->dt);
        vec_f(c, a + i, buf, m, c->centers ? c->centers + i : NULL);
    }
}

/* ---- drivers ---- */

static void acc_init(const rctx *c, void *acc, int64_t n)
{
    double d = 0;
    int64_t v = 0;
    switch (c->acc) {
    case A_PROD: case A_ALL: d = 1, v = 1; break;
    case A_MAX: d = -INFINITY, v = INT64_MIN; break;
    case A_MIN: case A_MINABS: d = INFINITY, v = INT64_MAX; break;
    default: break;
    }
    for (int64_t j = 0; j < n; j++) {
        if (c->ints) ((int64_t *)acc)[j] = v;
        else ((double *)acc)[j] = d;
    }
}

/* Contiguous float32 column sums, four rows (rs bytes apart) at a time. */
static void vec_sum4_f32(double *restrict a, const char *p, int64_t rs, int64_t n)
{
    const float *restrict x0 = (const float *)p, *restrict x1 = (const float *)(p + rs);
    const float *restrict x2 = (const float *)(p + 2 * rs), *restrict x3 = (const float *)(p + 3 * rs);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int t = 0; t < 8; t++) a[j + t] += ((double)x0[j + t] + x1[j + t]) + ((double)x2[j + t] + x3[j + t]);
    for (; j < n; j++) a[j] += ((double)x0[j] + x1[j]) + ((double)x2[j] + x3[j]);
}

/* Fold every reduced position from base into acc (inner), or with vec accumulate
 * the row of K elements at stride vs found at each reduced position. */
static void walk_reduced(const plan *p, const rctx *c, void *acc, char *base, bool vec, int64_t vs, int64_t K)
{
    if (p->nred == 0) return;
    if (p->nr == 0) { fold_row(c, acc, base, 0, 1); return; }
    int n = p->nr - 1; /* dims walked by the odometer; the innermost reduced dim is looped here */
    int64_t idx[NN_MAX_DIMS] = {0}, R = p->rs[n], rst = p->rin[n];
    const int64_t *st[1] = {p->rin};
    char *ptr[1] = {base};
    bool four = vec && c->acc == A_SUM && c->dt == NN_F32 && vs == 4 && !c->ints;
    do {
        if (!vec) {
            fold_row(c, acc, ptr[0], rst, R);
            continue;
        }
        int64_t r = 0;
        if (four)
            for (; r + 4 <= R; r += 4) vec_sum4_f32(acc, ptr[0] + r * rst, rst, K);
        for (; r < R; r++) vec_row(c, acc, ptr[0] + r * rst, vs, K);
    } while (odo_next(n, idx, p->rs, ptr, st, 1));
}

static double finish(const rctx *c, double v, double nred, double corr, bool sqrt_it)
{
    switch (c->op) {
    case NN_OP_mean: return v / nred;
    case NN_OP_var: {
        double r = v / fmax(0.0, nred - corr);
        return sqrt_it ? sqrt(r) : r;
    }
    case NN_OP_norm:
        if (c->acc == A_SQ) return sqrt(v);
        if (c->acc == A_POW) return pow(v, 1.0 / c->p);
        return v;
    default: return v;
    }
}

/* The outputs split into units: tile u % ntiles (TILE accumulators of the innermost kept dim
 * with vec, else the one output) of the kept position u / ntiles, in the odometer's order. Each
 * output folds its reduced elements as in one pass, so the threads' results are bitwise those of
 * one thread; only independent outputs are split (a full reduction runs on one thread). */
typedef struct {
    const nn_kargs *a;
    const rctx *c;
    const plan *p;
    bool vec;
    int nko;
    int64_t K, vs, vo, ntiles;
} red_job;

static nn_status reduce_units(int64_t ub, int64_t ue, void *arg)
{
    const red_job *j = arg;
    const plan *p = j->p;
    rctx c = *j->c; /* the var passes change it */
    const nn_kargs *a = j->a;
    nn_dtype odt = a->out[0]->dtype;
    bool is_var = c.op == NN_OP_var;
    double acc[TILE], ctr[TILE]; /* int64 accumulators use acc's slots */
    int64_t idx[NN_MAX_DIMS] = {0}, pos = ub / j->ntiles, tile = ub % j->ntiles;
    const int64_t *st[2] = {p->kin, p->kout};
    char *ptr[2] = {nn_data(a->in[0]), nn_data(a->out[0])};
    for (int d = j->nko - 1; d >= 0; d--) {
        idx[d] = pos % p->ks[d];
        pos /= p->ks[d];
        ptr[0] += idx[d] * p->kin[d], ptr[1] += idx[d] * p->kout[d];
    }
    for (int64_t u = ub; u < ue; u++) {
        int64_t j0 = tile * TILE, t = j->K - j0 < TILE ? j->K - j0 : TILE;
        char *xb = ptr[0] + j0 * j->vs, *ob = ptr[1] + j0 * j->vo;
        if (is_var) { /* two passes: the mean, then squared deviations from it */
            c.acc = A_SUM;
            c.centers = NULL;
            acc_init(&c, acc, t);
            walk_reduced(p, &c, acc, xb, j->vec, j->vs, t);
            for (int64_t k = 0; k < t; k++) ctr[k] = acc[k] / (double)p->nred;
            c.acc = A_SQDEV;
            c.center = ctr[0];
            c.centers = ctr;
        }
        acc_init(&c, acc, t);
        walk_reduced(p, &c, acc, xb, j->vec, j->vs, t);
        for (int64_t k = 0; k < t; k++) {
            char *o = ob + k * j->vo;
            if (c.ints) nn_store_i64(o, odt, ((int64_t *)acc)[k]);
            else {
                double v = finish(&c, acc[k], (double)p->nred, a->f[0], a->i[0] == 1);
                if (odt == NN_F32) *(float *)o = (float)v;
                else nn_store_f64(o, odt, v);
            }
        }
        if (++tile == j->ntiles) {
            tile = 0;
            odo_next(j->nko, idx, p->ks, ptr, st, 2);
        }
    }
    return NN_OK;
}

static nn_status reduce_run(const nn_kargs *a, rctx *c)
{
    nn_tensor *x = a->in[0], *out = a->out[0];
    plan p;
    nn_reduce_plan_init(&p, x, out, NULL, a->dims);
    if (nn_numel(out) == 0) return NN_OK;
    /* vec strategy when the innermost input dim is a kept one of useful length; its
     * accumulators go in tiles of TILE so they stay in L1 while the rows stream by */
    bool vec = p.nk > 0 && p.nr > 0 && p.nred > 0 && p.ks[p.nk - 1] >= VEC_MIN && p.kin[p.nk - 1] != 0 &&
               abs64(p.kin[p.nk - 1]) < abs64(p.rin[p.nr - 1]);
    red_job j = {a, c, &p, vec, vec ? p.nk - 1 : p.nk, vec ? p.ks[p.nk - 1] : 1, vec ? p.kin[p.nk - 1] : 0,
                 vec ? p.kout[p.nk - 1] : 0, 0};
    j.ntiles = (j.K + TILE - 1) / TILE;
    int64_t units = j.ntiles;
    for (int d = 0; d < j.nko; d++) units *= p.ks[d];
    if (nn_numel(x) < NN_PARALLEL_MIN || units < 2) return reduce_units(0, units, &j);
    int64_t per_unit = (p.nred ? p.nred : 1) * (j.K < TILE ? j.K : TILE); /* input elements a unit reads */
    return nn_parallel_for(units, (NN_PARALLEL_MIN / 2 + per_unit - 1) / per_unit, reduce_units, &j);
}

/* max_dim min_dim argmax argmin over the one dim in a->dims; ties keep the first index, NaN wins. */
static nn_status reduce_index(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *out = a->out[0], *idx_out = a->out[1];
    bool want_max = a->op == NN_OP_max_dim || a->op == NN_OP_argmax;
    bool values = a->op == NN_OP_max_dim || a->op == NN_OP_min_dim;
    plan p;
    nn_reduce_plan_init(&p, x, out, values ? idx_out : NULL, a->dims);
    if (nn_numel(out) == 0) return NN_OK;
    int64_t n = p.nr ? p.rs[0] : p.nred, s = p.nr ? p.rin[0] : 0;
    if (n == 0) return nn_error(NN_ERR_INDEX, "%s: expected reduction dim to have non-zero size", nn_op_name(a->op));
    bool ints = nn_dtype_is_integral(x->dtype);
    size_t es = nn_dtype_size(x->dtype);
    int64_t kidx[NN_MAX_DIMS] = {0};
    const int64_t *st[3] = {p.kin, p.kout, p.kout2};
    char *ptr[3] = {nn_data(x), nn_data(out), values ? nn_data(idx_out) : NULL};
    double fb[CHUNK];
    int64_t ib[CHUNK];
    do {
        int64_t best = 0;
        if (ints) {
            int64_t bv = 0;
            for (int64_t i = 0; i < n; i += CHUNK) {
                int64_t m = n - i < CHUNK ? n - i : CHUNK;
                load_i(ib, ptr[0] + i * s, s, m, x->dtype);
                for (int64_t j = 0; j < m; j++)
                    if ((i == 0 && j == 0) || (want_max ? ib[j] > bv : ib[j] < bv)) bv = ib[j], best = i + j;
            }
        } else {
            double bv = 0;
            bool nan = false;
            for (int64_t i = 0; i < n && !nan; i += CHUNK) {
                int64_t m = n - i < CHUNK ? n - i : CHUNK;
                nn_cpu_load_row(fb, ptr[0] + i * s, s, m, x->dtype);
                for (int64_t j = 0; j < m; j++) {
                    double v = fb[j];
                    if (v != v) { best = i + j, nan = true; break; }
                    if ((i == 0 && j == 0) || (want_max ? v > bv : v < bv)) bv = v, best = i + j;
                }
            }
        }
        if (values) {
            memcpy(ptr[1], ptr[0] + best * s, es);
            *(int64_t *)ptr[2] = best;
        } else {
            *(int64_t *)ptr[1] = best;
        }
    } while (odo_next(p.nk, kidx, p.ks, ptr, st, values ? 3 : 2));
    return NN_OK;
}

nn_status nn_cpu_reduce(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *out = a->out[0];
    if (nn_dtype_is_complex(x->dtype) || nn_dtype_is_complex(out->dtype)) return nn_cpu_complex_reduce(a);
    rctx c = {.op = a->op, .dt = x->dtype, .p = a->f[0]};
    bool int_in = nn_dtype_is_integral(x->dtype), int_out = nn_dtype_is_integral(out->dtype);
    switch (a->op) {
    case NN_OP_sum: c.acc = A_SUM, c.ints = int_out; break;
    case NN_OP_prod: c.acc = A_PROD, c.ints = int_out; break;
    case NN_OP_amax: c.acc = A_MAX, c.ints = int_out; break;
    case NN_OP_amin: c.acc = A_MIN, c.ints = int_out; break;
    case NN_OP_all: c.acc = A_ALL, c.ints = int_in; break;
    case NN_OP_any: c.acc = A_ANY, c.ints = int_in; break;
    case NN_OP_mean:
    case NN_OP_var:
        if (int_out) return nn_not_implemented(a, out->dtype);
        c.acc = A_SUM; /* var switches to A_SQDEV for its second pass */
        break;
    case NN_OP_norm: {
        if (int_out) return nn_not_implemented(a, out->dtype);
        double p = a->f[0];
        c.acc = p == 2 ? A_SQ : p == 1 ? A_ABS : p == 0 ? A_NZ : p == INFINITY ? A_MAXABS : p == -INFINITY ? A_MINABS : A_POW;
        break;
    }
    case NN_OP_max_dim:
    case NN_OP_min_dim:
    case NN_OP_argmax:
    case NN_OP_argmin:
        return reduce_index(a);
    default:
        return nn_not_implemented(a, out->dtype);
    }
    return reduce_run(a, &c);
}
