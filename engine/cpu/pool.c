/* The CPU 2-D pooling kernels. Inputs (and grad_out, indices) are [N, C, H, W] or [C, H, W] of any
 * strides; outputs are contiguous, one plane per (n, c). Windows follow PyTorch:
 *   max       rows oy*sh - ph + k*dh (k < kh) that fall inside the input, columns alike; the scan
 *             starts at the first such position, and a larger value or any NaN takes over (so NaN
 *             propagates and its index is reported); indices are flat h*W + w within the plane
 *   avg       rows [oy*sh - ph, +kh) cut at H + ph give the pool size, then cut to the input;
 *             divisor: divisor_override if set, else the pool size (count_include_pad) or the
 *             number of input elements in the window; an empty window gives 0
 *   adaptive  rows floor(oy*H/oh) .. ceil((oy+1)*H/oh) - 1, columns alike
 * Values are loaded as double (float16/bfloat16 converted) and rounded on store; float16/bfloat16
 * gradients add up in float32 and are rounded once. Each body is inlined once per float type, so
 * the float32/float64 loops carry no dtype switch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert16.h"
#include "kernels.h"
#include "parallel.h"

#define INLINE static inline __attribute__((always_inline))

typedef struct {
    int64_t N, C, H, W;     /* planes N*C of H x W */
    int64_t sN, sC, sH, sW; /* element strides */
} planes;

static planes planes_of(const nn_tensor *t)
{
    int b = t->ndim == 4;
    return (planes){b ? t->shape[0] : 1, t->shape[b], t->shape[b + 1], t->shape[b + 2],
                    b ? t->strides[0] : 0, t->strides[b], t->strides[b + 1], t->strides[b + 2]};
}

INLINE double ld(const char *p, int64_t off, nn_dtype dt)
{
    switch (dt) {
    case NN_F32: return ((const float *)p)[off];
    case NN_F64: return ((const double *)p)[off];
    case NN_F16: return nn_half_to_float(((const uint16_t *)p)[off]);
    default: return nn_bf16_to_float(((const uint16_t *)p)[off]);
    }
}

INLINE void st(char *p, int64_t off, nn_dtype dt, double v)
{
    switch (dt) {
    case NN_F32: ((float *)p)[off] = (float)v; break;
    case NN_F64: ((double *)p)[off] = v; break;
    case NN_F16: ((uint16_t *)p)[off] = nn_float_to_half((float)v); break;
    default: ((uint16_t *)p)[off] = nn_float_to_bf16((float)v); break;
    }
}

static bool pool_dtype(nn_dtype dt) { return dt == NN_F32 || dt == NN_F64 || dt == NN_F16 || dt == NN_BF16; }

/* Call body(..., dt) with dt a compile-time constant for float32/float64. */
#define BY_DTYPE(dt, call_with)                     \
    do {                                           \
        switch (dt) {                              \
        case NN_F32: call_with(NN_F32); break;     \
        case NN_F64: call_with(NN_F64); break;     \
        default: call_with(dt); break;             \
        }                                          \
    } while (0)

/* The same for backward bodies, which read grad_out as dt and add up in adt: float16/bfloat16
 * gradients add up in float32 (see accum). */
#define BY_DTYPE_ACC(dt, call_with)                    \
    do {                                              \
        switch (dt) {                                 \
        case NN_F32: call_with(NN_F32, NN_F32); break; \
        case NN_F64: call_with(NN_F64, NN_F64); break; \
        default: call_with(dt, NN_F32); break;        \
        }                                             \
    } while (0)

/* Where a backward kernel adds up grad_input: in place (zeroed) for float32/float64; float16 and
 * bfloat16 add up in a float32 buffer (as PyTorch's CPU kernels do), each range rounding its own
 * planes into out once at its end, as rounding every addition would lose the small contributions
 * of overlapping windows. */
typedef struct {
    char *p;
    float *owned;
    char *out;
    nn_dtype dt;
    int64_t hw; /* elements a plane */
} accum;

static nn_status accum_begin(nn_tensor *out, int64_t hw, accum *acc)
{
    size_t n = (size_t)nn_numel(out);
    *acc = (accum){nn_data(out), NULL, nn_data(out), out->dtype, hw};
    if (out->dtype == NN_F32 || out->dtype == NN_F64) return NN_OK; /* zeroed plane by plane by the ranges (zero_planes) */
    if (!(acc->owned = calloc(n ? n : 1, sizeof(float)))) return nn_error(NN_ERR_NOMEM, "out of memory for a pooling gradient");
    acc->p = (char *)acc->owned;
    return NN_OK;
}

/* A backward range's planes [q0, q1) of grad_input (hw elements each) zeroed, where they are
 * grad_input itself (float32/float64; the 16-bit types' float32 buffer starts zeroed) */
static void zero_planes(char *gi, nn_dtype adt, nn_dtype dt, int64_t q0, int64_t q1, int64_t hw)
{
    if (adt != dt) return;
    size_t es = nn_dtype_size(dt);
    memset(gi + q0 * hw * (int64_t)es, 0, (size_t)((q1 - q0) * hw) * es);
}

/* A backward range's last step: its planes [q0, q1) of a 16-bit grad_input rounded from their sums */
static void accum_round(const accum *acc, int64_t q0, int64_t q1)
{
    if (!acc->owned) return;
    uint16_t *d = (uint16_t *)acc->out;
    const float *s = acc->owned;
    if (acc->dt == NN_BF16)
        for (int64_t k = q0 * acc->hw; k < q1 * acc->hw; k++) d[k] = nn_float_to_bf16(s[k]);
    else
        for (int64_t k = q0 * acc->hw; k < q1 * acc->hw; k++) d[k] = nn_float_to_half(s[k]);
}

static nn_status check_io(const nn_kargs *a, int nout)
{
    for (int k = 0; k < nout; k++)
        if (!nn_is_contiguous(a->out[k])) return nn_error(NN_ERR_ARG, "%s: expects contiguous outputs", nn_op_name(a->op));
    if (!pool_dtype(a->out[0]->dtype) || a->in[0]->dtype != a->out[0]->dtype) return nn_not_implemented(a, a->in[0]->dtype);
    return NN_OK;
}

/* fn over planes [0, n) (n = N*C), split over the CPU pool when the work (about per_plane element
 * visits a plane) is large; planes are independent, so the result is the serial one */
static nn_status over_planes(int64_t n, int64_t per_plane, nn_parallel_fn fn, void *ctx)
{
    if (per_plane < 1) per_plane = 1;
    if (n * per_plane < NN_PARALLEL_MIN) return fn(0, n, ctx);
    int64_t grain = NN_PARALLEL_MIN / 2 / per_plane;
    return nn_parallel_for(n, grain > 1 ? grain : 1, fn, ctx);
}

/* ---- windows ---- */

typedef struct { int64_t kh, kw, sh, sw, ph, pw, dh, dw; } win;

static win win_of(const int64_t *i) { return (win){i[0], i[1], i[2], i[3], i[4], i[5], i[6] > 0 ? i[6] : 1, i[7] > 0 ? i[7] : 1}; }

/* Dilated max-pool window along one axis: first valid position, end (exclusive). */
static void max_window(int64_t o, int64_t k, int64_t s, int64_t p, int64_t d, int64_t n, int64_t *start, int64_t *end)
{
    int64_t b = o * s - p, e = b + (k - 1) * d + 1;
    if (e > n) e = n;
    while (b < 0) b += d;
    *start = b, *end = e;
}

/* Average-pool window along one axis: clipped [start, end) and the length counted with padding. */
static void avg_window(int64_t o, int64_t k, int64_t s, int64_t p, int64_t n, int64_t *start, int64_t *end, int64_t *padded)
{
    int64_t b = o * s - p, e = b + k;
    if (e > n + p) e = n + p;
    *padded = e - b;
    if (b < 0) b = 0;
    if (e > n) e = n;
    *start = b, *end = e;
}

/* The outputs [lo, hi) of count whose column o*s + off lies in [0, n) */
static void valid_cols(int64_t count, int64_t s, int64_t off, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s, h = n - off > 0 ? (n - off + s - 1) / s : 0;
    *lo = l < count ? l : count;
    *hi = h < count ? (h > *lo ? h : *lo) : count;
}

static int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return o * in / out; }
static int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

/* ---- max pool (also adaptive): values and flat indices ---- */

typedef struct {
    planes x;
    int64_t oh, ow;
    win w;
    bool adaptive;
} maxargs;

/* best, arg = v, idx when v > best or v is NaN; branch-free, as random data defeats prediction */
INLINE void take_max(double v, int64_t idx, double *best, int64_t *arg)
{
    int64_t take = -(int64_t)((v > *best) | (v != v));
    uint64_t vb, bb;
    memcpy(&vb, &v, 8);
    memcpy(&bb, best, 8);
    bb = (bb & ~(uint64_t)take) | (vb & (uint64_t)take);
    memcpy(best, &bb, 8);
    *arg = (*arg & ~take) | (idx & take);
}

INLINE void max_body(const maxargs *m, int64_t q0, int64_t q1, const char *in, char *out, int64_t *ind, nn_dtype dt)
{
    const planes *x = &m->x;
    for (int64_t q = q0; q < q1; q++) {
        int64_t n = q / x->C, c = q % x->C;
        const char *p = in + (n * x->sN + c * x->sC) * (int64_t)nn_dtype_size(dt);
        int64_t base = (n * x->C + c) * m->oh * m->ow;
        for (int64_t oy = 0; oy < m->oh; oy++) {
            int64_t h0, h1, dh = 1, dw = 1;
            if (m->adaptive) h0 = adaptive_start(oy, x->H, m->oh), h1 = adaptive_end(oy, x->H, m->oh);
            else max_window(oy, m->w.kh, m->w.sh, m->w.ph, m->w.dh, x->H, &h0, &h1), dh = m->w.dh;
            for (int64_t ox = 0; ox < m->ow; ox++) {
                int64_t w0, w1;
                if (m->adaptive) w0 = adaptive_start(ox, x->W, m->ow), w1 = adaptive_end(ox, x->W, m->ow);
                else max_window(ox, m->w.kw, m->w.sw, m->w.pw, m->w.dw, x->W, &w0, &w1), dw = m->w.dw;
                double best = -INFINITY;
                int64_t arg = h0 * x->W + w0;
                for (int64_t h = h0; h < h1; h += dh)
                    for (int64_t w = w0; w < w1; w += dw) {
                        take_max(ld(p, h * x->sH + w * x->sW, dt), h * x->W + w, &best, &arg);
                    }
                st(out, base + oy * m->ow + ox, dt, best);
                ind[base + oy * m->ow + ox] = arg;
            }
        }
    }
}

typedef struct {
    maxargs m;
    const char *in;
    char *out;
    int64_t *ind;
    nn_dtype dt;
    int64_t *cols; /* typed scans: window column j's outputs [cols[2j], cols[2j+1]), then each output's first column */
    bool two_by_two; /* max_2x2_f32 */
} max_job;

/* max_body for float32/float64 windows (not adaptive) in the element type. The scan runs window
 * position by position over a whole output row (each output's running max and index kept in the
 * output itself), so the outputs' compare chains are independent instead of one long chain per
 * output; each output still sees its window's positions in the same order (rows, then columns)
 * and a larger value or a NaN takes over, branch-free as in take_max. U: the signed integer of T's
 * width. */
#define MAX_TYPED(T, U, NAME)                                                                                          \
    static void NAME(const maxargs *m, const int64_t *cols, int64_t q0, int64_t q1, const char *in, char *out,         \
                     int64_t *ind)                                                                                     \
    {                                                                                                                  \
        const planes *x = &m->x;                                                                                       \
        const win *w = &m->w;                                                                                          \
        const int64_t *first = cols + 2 * w->kw;                                                                       \
        for (int64_t q = q0; q < q1; q++) {                                                                            \
            int64_t n = q / x->C, c = q % x->C;                                                                        \
            const T *p = (const T *)in + n * x->sN + c * x->sC;                                                        \
            for (int64_t oy = 0; oy < m->oh; oy++) {                                                                   \
                T *ob = (T *)out + (q * m->oh + oy) * m->ow;                                                           \
                int64_t *ib = ind + (q * m->oh + oy) * m->ow, h0, h1;                                                  \
                max_window(oy, w->kh, w->sh, w->ph, w->dh, x->H, &h0, &h1);                                            \
                for (int64_t ox = 0; ox < m->ow; ox++) {                                                               \
                    ob[ox] = -INFINITY;                                                                                \
                    ib[ox] = h0 * x->W + first[ox];                                                                    \
                }                                                                                                      \
                for (int64_t h = h0; h < h1; h += w->dh)                                                               \
                    for (int64_t j = 0; j < w->kw; j++) {                                                              \
                        int64_t off = j * w->dw - w->pw, step = w->sw * x->sW, idx = h * x->W + off, sw = w->sw;       \
                        int64_t lo = cols[2 * j], hi = cols[2 * j + 1];                                                \
                        const T *row = p + h * x->sH + off * x->sW;                                                    \
                        for (int64_t ox = lo; ox < hi; ox++) {                                                         \
                            T v = row[ox * step], best = ob[ox];                                                       \
                            U take = -(U)((v > best) | (v != v)), vb, bb;                                              \
                            memcpy(&vb, &v, sizeof v);                                                                 \
                            memcpy(&bb, &best, sizeof v);                                                              \
                            bb = (bb & ~take) | (vb & take);                                                           \
                            memcpy(&ob[ox], &bb, sizeof v);                                                            \
                            ib[ox] = (ib[ox] & ~(int64_t)take) | ((idx + ox * sw) & (int64_t)take);                   \
                        }                                                                                              \
                    }                                                                                                  \
            }                                                                                                          \
        }                                                                                                              \
    }
MAX_TYPED(float, int32_t, max_body_f32)
MAX_TYPED(double, int64_t, max_body_f64)
#undef MAX_TYPED

/* float32 2 x 2 windows of stride 2 that all fit in the plane (the documents' CNNs), rows of unit
 * stride: the four values of a window at once, in the scan's order, branch-free so that the loop
 * vectorizes; the same results as the general scan */
NN_CPU_CLONES static void max_2x2_row(const float *restrict r0, const float *restrict r1, float *restrict o, int64_t *restrict ib,
                                      int64_t ow, int64_t i0, int64_t W)
{
    for (int64_t ox = 0; ox < ow; ox++) {
        float best = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
        int32_t k = 0; /* 0, 1: the first row's; 2, 3: the second's */
        int32_t t = (b > best) | (b != b);
        best = t ? b : best, k = t ? 1 : k;
        t = (c > best) | (c != c);
        best = t ? c : best, k = t ? 2 : k;
        t = (d > best) | (d != d);
        best = t ? d : best, k = t ? 3 : k;
        o[ox] = best;
        ib[ox] = i0 + 2 * ox + (k & 1) + ((k & 2) ? W : 0);
    }
}

static void max_2x2_f32(const maxargs *m, int64_t q0, int64_t q1, const char *in, char *out, int64_t *ind)
{
    const planes *x = &m->x;
    for (int64_t q = q0; q < q1; q++) {
        const float *p = (const float *)in + q / x->C * x->sN + q % x->C * x->sC;
        for (int64_t oy = 0; oy < m->oh; oy++) {
            int64_t at = (q * m->oh + oy) * m->ow;
            max_2x2_row(p + 2 * oy * x->sH, p + (2 * oy + 1) * x->sH, (float *)out + at, ind + at, m->ow, 2 * oy * x->W, x->W);
        }
    }
}

/* float16/bfloat16 windows: each plane widened to float32 (exactly), scanned by max_body_f32, and
 * its maxima rounded back (exactly: each is one of the plane's values) */
static nn_status max_body_16(const max_job *j, int64_t q0, int64_t q1)
{
    const planes *x = &j->m.x;
    int64_t hw = x->H * x->W, ohw = j->m.oh * j->m.ow;
    float *plane = malloc((size_t)(hw + ohw) * sizeof(float)), *best = plane + hw;
    if (!plane) return nn_error(NN_ERR_NOMEM, "out of memory in max_pool2d");
    maxargs m = j->m;
    m.x = (planes){1, 1, x->H, x->W, 0, 0, x->W, 1};
    for (int64_t q = q0; q < q1; q++) {
        const uint16_t *p = (const uint16_t *)j->in + q / x->C * x->sN + q % x->C * x->sC;
        for (int64_t h = 0; h < x->H; h++) nn_widen16(plane + h * x->W, 1, p + h * x->sH, x->sW, x->W, j->dt);
        max_body_f32(&m, j->cols, 0, 1, (const char *)plane, (char *)best, j->ind + q * ohw);
        nn_narrow16((uint16_t *)j->out + q * ohw, 1, best, 1, ohw, j->dt);
    }
    free(plane);
    return NN_OK;
}

static nn_status max_range(int64_t q0, int64_t q1, void *arg)
{
    const max_job *j = arg;
    if (j->two_by_two) max_2x2_f32(&j->m, q0, q1, j->in, j->out, j->ind);
    else if (j->cols && j->dt == NN_F32) max_body_f32(&j->m, j->cols, q0, q1, j->in, j->out, j->ind);
    else if (j->cols && j->dt == NN_F64) max_body_f64(&j->m, j->cols, q0, q1, j->in, j->out, j->ind);
    else if (j->cols) return max_body_16(j, q0, q1);
    else {
#define CALL(T) max_body(&j->m, q0, q1, j->in, j->out, j->ind, T)
        BY_DTYPE(j->dt, CALL);
#undef CALL
    }
    return NN_OK;
}

static nn_status max_common(const nn_kargs *a, bool adaptive)
{
    nn_status s = check_io(a, 2);
    if (s) return s;
    if (a->out[1]->dtype != NN_I64) return nn_error(NN_ERR_DTYPE, "%s: indices must be int64", nn_op_name(a->op));
    nn_tensor *y = a->out[0];
    max_job j = {{planes_of(a->in[0]), y->shape[y->ndim - 2], y->shape[y->ndim - 1], win_of(a->i), adaptive}, nn_data(a->in[0]),
                 nn_data(y), nn_data(a->out[1]), y->dtype, NULL, false};
    const win *w = &j.m.w;
    j.two_by_two = !adaptive && y->dtype == NN_F32 && w->kh == 2 && w->kw == 2 && w->sh == 2 && w->sw == 2 && !w->ph && !w->pw &&
                   w->dh == 1 && w->dw == 1 && j.m.x.sW == 1 && 2 * j.m.oh <= j.m.x.H && 2 * j.m.ow <= j.m.x.W;
    if (!adaptive && !j.two_by_two) { /* typed scans */
        if (!(j.cols = malloc((size_t)(2 * w->kw + j.m.ow + 1) * sizeof *j.cols))) return nn_error(NN_ERR_NOMEM, "out of memory in max_pool2d");
        for (int64_t k = 0; k < w->kw; k++) valid_cols(j.m.ow, w->sw, k * w->dw - w->pw, j.m.x.W, &j.cols[2 * k], &j.cols[2 * k + 1]);
        for (int64_t ox = 0, e; ox < j.m.ow; ox++) max_window(ox, w->kw, w->sw, w->pw, w->dw, j.m.x.W, &j.cols[2 * w->kw + ox], &e);
    }
    s = over_planes(j.m.x.N * j.m.x.C, j.m.x.H * j.m.x.W + j.m.oh * j.m.ow, max_range, &j);
    free(j.cols);
    return s;
}

nn_status nn_cpu_max_pool2d(const nn_kargs *a) { return max_common(a, false); }
nn_status nn_cpu_adaptive_max_pool2d(const nn_kargs *a) { return max_common(a, true); }

/* grad_input (zeroed) [plane][idx] += grad_out, for max_pool2d and adaptive_max_pool2d */
INLINE nn_status max_backward_body(const planes *g, int64_t q0, int64_t q1, const char *go, const planes *ix, const int64_t *ind,
                                   const planes *x, char *gi, nn_dtype dt, nn_dtype adt)
{
    int64_t hw = x->H * x->W;
    zero_planes(gi, adt, dt, q0, q1, hw);
    for (int64_t q = q0; q < q1; q++) {
        int64_t n = q / g->C, c = q % g->C;
        const char *gp = go + (n * g->sN + c * g->sC) * (int64_t)nn_dtype_size(dt);
        const int64_t *ip = ind + n * ix->sN + c * ix->sC;
        int64_t base = (n * x->C + c) * hw;
        for (int64_t oy = 0; oy < g->H; oy++)
            for (int64_t ox = 0; ox < g->W; ox++) {
                int64_t k = ip[oy * ix->sH + ox * ix->sW];
                if (k < 0 || k >= hw)
                    return nn_error(NN_ERR_INDEX, "max_pool2d_backward: index %lld out of range for a %lld x %lld plane", (long long)k,
                                    (long long)x->H, (long long)x->W);
                double v = ld(gp, oy * g->sH + ox * g->sW, dt);
                st(gi, base + k, adt, ld(gi, base + k, adt) + v);
            }
    }
    return NN_OK;
}

typedef struct {
    planes g, ix, x;
    const char *go;
    const int64_t *ind;
    const accum *acc; /* where grad_input adds up */
    nn_dtype dt;
} max_backward_job;

static nn_status max_backward_range(int64_t q0, int64_t q1, void *arg)
{
    const max_backward_job *j = arg;
    nn_status s;
#define CALL(T, A) s = max_backward_body(&j->g, q0, q1, j->go, &j->ix, j->ind, &j->x, j->acc->p, T, A)
    BY_DTYPE_ACC(j->dt, CALL);
#undef CALL
    if (!s) accum_round(j->acc, q0, q1);
    return s;
}

nn_status nn_cpu_max_pool2d_backward(const nn_kargs *a)
{
    nn_status s = check_io(a, 1);
    if (s) return s;
    if (a->in[1]->dtype != NN_I64) return nn_error(NN_ERR_DTYPE, "max_pool2d_backward: indices must be int64");
    nn_tensor *gx = a->out[0];
    max_backward_job j = {planes_of(a->in[0]), planes_of(a->in[1]), planes_of(gx), nn_data(a->in[0]), nn_data(a->in[1]), NULL, gx->dtype};
    if (j.ix.N != j.g.N || j.ix.C != j.g.C || j.ix.H != j.g.H || j.ix.W != j.g.W || j.x.N != j.g.N || j.x.C != j.g.C)
        return nn_error(NN_ERR_SHAPE, "max_pool2d_backward: grad_output, indices and grad_input do not match");
    accum acc;
    if ((s = accum_begin(gx, j.x.H * j.x.W, &acc))) return s;
    j.acc = &acc;
    s = over_planes(j.g.N * j.g.C, j.x.H * j.x.W + j.g.H * j.g.W, max_backward_range, &j);
    free(acc.owned);
    return s;
}

/* ---- average pools: forward and backward share the window and divisor ---- */

typedef struct {
    planes x;   /* the input (forward) or grad_input (backward) */
    planes y;   /* the output (forward) or grad_out (backward); only H, W and strides of y matter */
    win w;
    bool include_pad, adaptive;
    int64_t divisor;
} avgargs;

/* The window of output (oy, ox) and its divisor. */
INLINE void avg_cell(const avgargs *m, int64_t oy, int64_t ox, int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1, double *div)
{
    const planes *x = &m->x;
    if (m->adaptive) {
        *h0 = adaptive_start(oy, x->H, m->y.H), *h1 = adaptive_end(oy, x->H, m->y.H);
        *w0 = adaptive_start(ox, x->W, m->y.W), *w1 = adaptive_end(ox, x->W, m->y.W);
        *div = (double)((*h1 - *h0) * (*w1 - *w0));
        return;
    }
    int64_t ph, pw;
    avg_window(oy, m->w.kh, m->w.sh, m->w.ph, x->H, h0, h1, &ph);
    avg_window(ox, m->w.kw, m->w.sw, m->w.pw, x->W, w0, w1, &pw);
    if (m->divisor) *div = (double)m->divisor;
    else if (m->include_pad) *div = (double)(ph * pw);
    else *div = (double)((*h1 - *h0) * (*w1 - *w0));
}

INLINE void avg_body(const avgargs *m, int64_t q0, int64_t q1, const char *in, char *out, nn_dtype dt)
{
    const planes *x = &m->x;
    for (int64_t q = q0; q < q1; q++) {
        int64_t n = q / x->C, c = q % x->C;
        const char *p = in + (n * x->sN + c * x->sC) * (int64_t)nn_dtype_size(dt);
        int64_t base = (n * x->C + c) * m->y.H * m->y.W;
        for (int64_t oy = 0; oy < m->y.H; oy++)
            for (int64_t ox = 0; ox < m->y.W; ox++) {
                int64_t h0, h1, w0, w1;
                double div, sum = 0;
                avg_cell(m, oy, ox, &h0, &h1, &w0, &w1, &div);
                if (h0 >= h1 || w0 >= w1) {
                    st(out, base + oy * m->y.W + ox, dt, 0);
                    continue;
                }
                for (int64_t h = h0; h < h1; h++)
                    for (int64_t w = w0; w < w1; w++) sum += ld(p, h * x->sH + w * x->sW, dt);
                st(out, base + oy * m->y.W + ox, dt, sum / div);
            }
    }
}

INLINE void avg_backward_body(const avgargs *m, int64_t q0, int64_t q1, const char *go, char *gi, nn_dtype dt, nn_dtype adt)
{
    const planes *x = &m->x, *y = &m->y;
    zero_planes(gi, adt, dt, q0, q1, x->H * x->W);
    for (int64_t q = q0; q < q1; q++) {
        int64_t n = q / x->C, c = q % x->C;
        const char *gp = go + (n * y->sN + c * y->sC) * (int64_t)nn_dtype_size(dt);
        int64_t base = (n * x->C + c) * x->H * x->W;
        for (int64_t oy = 0; oy < y->H; oy++)
            for (int64_t ox = 0; ox < y->W; ox++) {
                int64_t h0, h1, w0, w1;
                double div;
                avg_cell(m, oy, ox, &h0, &h1, &w0, &w1, &div);
                double v = ld(gp, oy * y->sH + ox * y->sW, dt) / div;
                for (int64_t h = h0; h < h1; h++)
                    for (int64_t w = w0; w < w1; w++) {
                        int64_t k = base + h * x->W + w;
                        st(gi, k, adt, ld(gi, k, adt) + v);
                    }
            }
    }
}

typedef struct {
    avgargs m;
    const char *src;
    char *dst;        /* the output, or where grad_input adds up */
    const accum *acc; /* backward */
    nn_dtype dt;
    bool backward;
} avg_job;

static nn_status avg_range(int64_t q0, int64_t q1, void *arg)
{
    const avg_job *j = arg;
    if (!j->backward) {
#define FWD(T) avg_body(&j->m, q0, q1, j->src, j->dst, T)
        BY_DTYPE(j->dt, FWD);
#undef FWD
    } else {
#define BWD(T, A) avg_backward_body(&j->m, q0, q1, j->src, j->dst, T, A)
        BY_DTYPE_ACC(j->dt, BWD);
#undef BWD
        accum_round(j->acc, q0, q1);
    }
    return NN_OK;
}

static nn_status avg_common(const nn_kargs *a, bool adaptive, bool backward)
{
    nn_status s = check_io(a, 1);
    if (s) return s;
    nn_tensor *in = a->in[0], *out = a->out[0];
    avgargs m = {.w = win_of(a->i), .adaptive = adaptive};
    if (!adaptive) {
        m.w.dh = m.w.dw = 1;
        m.include_pad = a->i[6] != 0;
        m.divisor = a->i[7];
    }
    m.x = planes_of(backward ? out : in);
    m.y = planes_of(backward ? in : out);
    if (m.x.N != m.y.N || m.x.C != m.y.C) return nn_error(NN_ERR_SHAPE, "%s: input and output planes do not match", nn_op_name(a->op));
    avg_job j = {m, nn_data(in), NULL, NULL, out->dtype, backward};
    int64_t work = m.x.H * m.x.W + m.y.H * m.y.W;
    if (!backward) {
        j.dst = nn_data(out);
        return over_planes(m.x.N * m.x.C, work, avg_range, &j);
    }
    accum acc;
    if ((s = accum_begin(out, m.x.H * m.x.W, &acc))) return s;
    j.dst = acc.p, j.acc = &acc;
    s = over_planes(m.x.N * m.x.C, work, avg_range, &j);
    free(acc.owned);
    return s;
}

nn_status nn_cpu_avg_pool2d(const nn_kargs *a) { return avg_common(a, false, false); }
nn_status nn_cpu_avg_pool2d_backward(const nn_kargs *a) { return avg_common(a, false, true); }
nn_status nn_cpu_adaptive_avg_pool2d(const nn_kargs *a) { return avg_common(a, true, false); }
nn_status nn_cpu_adaptive_avg_pool2d_backward(const nn_kargs *a) { return avg_common(a, true, true); }
