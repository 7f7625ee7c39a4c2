/* CPU softmax, log_softmax and their backward kernels along dim i[0].
 *
 * Every index but the one along dim picks a row. Rows whose operands all have
 * stride 1 and one dtype (float32 or float64) take direct loops; any other row
 * is gathered into a double buffer, computed in double and stored back. Row
 * sums accumulate in double. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic") /* the exp loops call libmvec (vmath.h) */
#endif

#include <math.h>
#include <stdlib.h>

#include "kernels.h"
#include "vmath.h"

typedef void (*row_fn)(char *const *p, const int64_t *s, int64_t n, void *ctx);

/* Call fn once per row along dim; p/s are per-operand addresses and byte strides along dim. */
static void for_each_row(int nops, nn_tensor *const *t, int dim, row_fn fn, void *ctx)
{
    int nd = t[0]->ndim, m = 0;
    int64_t n = nd ? t[0]->shape[dim] : 1, shape[NN_MAX_DIMS], st[3][NN_MAX_DIMS], idx[NN_MAX_DIMS] = {0}, s[3];
    char *p[3];
    for (int k = 0; k < nops; k++) {
        int64_t es = (int64_t)nn_dtype_size(t[k]->dtype);
        p[k] = nn_data(t[k]);
        s[k] = nd ? t[k]->strides[dim] * es : es;
        for (int d = 0, j = 0; d < nd; d++)
            if (d != dim) st[k][j++] = t[k]->strides[d] * es;
    }
    for (int d = 0; d < nd; d++)
        if (d != dim) shape[m++] = t[0]->shape[d];
    if (nn_numel(t[0]) == 0) return;
    for (;;) {
        fn(p, s, n, ctx);
        int d = m - 1;
        for (; d >= 0; d--) {
            for (int k = 0; k < nops; k++) p[k] += st[k][d];
            if (++idx[d] < shape[d]) break;
            for (int k = 0; k < nops; k++) p[k] -= st[k][d] * shape[d];
            idx[d] = 0;
        }
        if (d < 0) return;
    }
}

/* Row max ignoring NaN (a NaN still makes the whole row NaN through the sum); blocks of 8 so -O2 vectorizes. */
static float max_f32(const float *x, int64_t n)
{
    float m[8];
    int64_t i = 0;
    for (int t = 0; t < 8; t++) m[t] = -INFINITY;
    for (; i + 8 <= n; i += 8)
        for (int t = 0; t < 8; t++) m[t] = x[i + t] > m[t] ? x[i + t] : m[t];
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    for (int t = 1; t < 8; t++) m[0] = m[t] > m[0] ? m[t] : m[0];
    return m[0];
}

static double max_f64(const double *x, int64_t n)
{
    double m[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int t = 0; t < 4; t++) m[t] = x[i + t] > m[t] ? x[i + t] : m[t];
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    for (int t = 1; t < 4; t++) m[0] = m[t] > m[0] ? m[t] : m[0];
    return m[0];
}

/* the sum in double, four partial sums apart (one chain of adds waits on each add) */
static double sum_f32(const float *y, int64_t n)
{
    double t[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) t[k] += y[i + k];
    for (; i < n; i++) t[0] += y[i];
    return (t[0] + t[1]) + (t[2] + t[3]);
}

NN_CPU_CLONES double nn_cpu_exp_sum_f32(float *restrict y, const float *restrict x, int64_t n, float *max)
{
    float m = *max = max_f32(x, n);
    for (int64_t i = 0; i < n; i++) y[i] = expf(x[i] - m);
    return sum_f32(y, n);
}

static void fwd_f32(float *restrict y, const float *restrict x, int64_t n, bool log_)
{
    float m;
    double sum = nn_cpu_exp_sum_f32(y, x, n, &m);
    if (log_) {
        float lse = (float)log(sum);
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) - lse;
    } else {
        float inv = (float)(1.0 / sum);
        for (int64_t i = 0; i < n; i++) y[i] *= inv;
    }
}

/* y may alias x (the buffered path computes in place) */
NN_CPU_CLONES static void fwd_f64(double *y, const double *x, int64_t n, bool log_)
{
    double m = max_f64(x, n), sum = 0;
    if (log_) {
        for (int64_t i = 0; i < n; i++) sum += exp(x[i] - m);
        double lse = log(sum);
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) - lse;
    } else {
        for (int64_t i = 0; i < n; i++) sum += y[i] = exp(x[i] - m);
        double inv = 1.0 / sum;
        for (int64_t i = 0; i < n; i++) y[i] *= inv;
    }
}

typedef struct {
    bool log_;
    nn_dtype dt[3]; /* per operand */
    nn_dtype fast;  /* the one dtype of every operand when it is float32/float64, else NN_DTYPE_NONE */
    double *buf;    /* 2 * n doubles */
} sctx;

static nn_dtype fast_dtype(int nops, const nn_dtype *dt)
{
    for (int k = 1; k < nops; k++)
        if (dt[k] != dt[0]) return NN_DTYPE_NONE;
    return dt[0] == NN_F32 || dt[0] == NN_F64 ? dt[0] : NN_DTYPE_NONE;
}

static bool unit_strides(int nops, const int64_t *s, nn_dtype dt)
{
    for (int k = 0; k < nops; k++)
        if (s[k] != (int64_t)nn_dtype_size(dt)) return false;
    return true;
}

/* p[0] out, p[1] in */
static void fwd_row(char *const *p, const int64_t *s, int64_t n, void *vc)
{
    sctx *c = vc;
    if (c->fast == NN_F32 && unit_strides(2, s, NN_F32)) {
        fwd_f32((float *)p[0], (const float *)p[1], n, c->log_);
    } else if (c->fast == NN_F64 && unit_strides(2, s, NN_F64)) {
        fwd_f64((double *)p[0], (const double *)p[1], n, c->log_);
    } else {
        nn_cpu_load_row(c->buf, p[1], s[1], n, c->dt[1]);
        fwd_f64(c->buf, c->buf, n, c->log_);
        nn_cpu_store_row(p[0], s[0], c->buf, n, c->dt[0]);
    }
}

/* softmax: gi = (g - sum(g*y)) * y;  log_softmax: gi = g - exp(y) * sum(g). gi may alias g. */
NN_CPU_CLONES static void bwd_f64(double *gi, const double *g, const double *y, int64_t n, bool log_)
{
    double s = 0;
    if (log_) {
        for (int64_t i = 0; i < n; i++) s += g[i];
        for (int64_t i = 0; i < n; i++) gi[i] = g[i] - exp(y[i]) * s;
    } else {
        for (int64_t i = 0; i < n; i++) s += g[i] * y[i];
        for (int64_t i = 0; i < n; i++) gi[i] = (g[i] - s) * y[i];
    }
}

NN_CPU_CLONES static void bwd_f32(float *restrict gi, const float *restrict g, const float *restrict y, int64_t n, bool log_)
{
    double s = 0;
    if (log_) {
        for (int64_t i = 0; i < n; i++) s += g[i];
        float sf = (float)s;
        for (int64_t i = 0; i < n; i++) gi[i] = g[i] - expf(y[i]) * sf;
    } else {
        for (int64_t i = 0; i < n; i++) s += (double)g[i] * y[i];
        float sf = (float)s;
        for (int64_t i = 0; i < n; i++) gi[i] = (g[i] - sf) * y[i];
    }
}

/* p[0] grad_in, p[1] grad_out, p[2] y */
static void bwd_row(char *const *p, const int64_t *s, int64_t n, void *vc)
{
    sctx *c = vc;
    if (c->fast == NN_F32 && unit_strides(3, s, NN_F32)) {
        bwd_f32((float *)p[0], (const float *)p[1], (const float *)p[2], n, c->log_);
    } else if (c->fast == NN_F64 && unit_strides(3, s, NN_F64)) {
        bwd_f64((double *)p[0], (const double *)p[1], (const double *)p[2], n, c->log_);
    } else {
        double *g = c->buf, *y = c->buf + n;
        nn_cpu_load_row(g, p[1], s[1], n, c->dt[1]);
        nn_cpu_load_row(y, p[2], s[2], n, c->dt[2]);
        bwd_f64(g, g, y, n, c->log_);
        nn_cpu_store_row(p[0], s[0], g, n, c->dt[0]);
    }
}

static nn_status run(const nn_kargs *a, int nops, row_fn fn, bool log_)
{
    nn_tensor *ops[3] = {a->out[0], a->in[0], a->in[1]};
    if (!nn_dtype_is_float(a->out[0]->dtype)) return nn_not_implemented(a, a->out[0]->dtype);
    int dim = (int)a->i[0];
    int64_t n = a->out[0]->ndim ? a->out[0]->shape[dim] : 1;
    sctx c = {.log_ = log_};
    for (int k = 0; k < nops; k++) c.dt[k] = ops[k]->dtype;
    c.fast = fast_dtype(nops, c.dt);
    c.buf = malloc(sizeof(double) * (size_t)(2 * n + 1));
    if (!c.buf) return nn_error(NN_ERR_NOMEM, "%s: out of memory", nn_op_name(a->op));
    for_each_row(nops, ops, dim, fn, &c);
    free(c.buf);
    return NN_OK;
}

nn_status nn_cpu_softmax(const nn_kargs *a) { return run(a, 2, fwd_row, false); }
nn_status nn_cpu_log_softmax(const nn_kargs *a) { return run(a, 2, fwd_row, true); }
nn_status nn_cpu_softmax_backward(const nn_kargs *a) { return run(a, 3, bwd_row, false); }
nn_status nn_cpu_log_softmax_backward(const nn_kargs *a) { return run(a, 3, bwd_row, true); }
