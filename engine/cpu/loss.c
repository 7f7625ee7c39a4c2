/* CPU nll_loss, the fused cross_entropy, and their backward.
 *
 * The input is [C] or [N, C, d1, ...]; a position is an index into every dim
 * but the class dim, and indexes the target (and, for reduction none, the loss
 * or grad_out) in the same order. One element per position is read or
 * written, so the generic load/store path costs little; sums are in double. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic") /* the float32 exp loops call libmvec (vmath.h) */
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "vmath.h"

enum { NONE = 0, MEAN = 1 };

typedef struct {
    int m;                                                     /* position dims */
    int64_t shape[NN_MAX_DIMS];
    int64_t stride[3][NN_MAX_DIMS];                            /* elements: input, target, per-position tensor */
    int64_t C, sc;                                             /* classes, the input's stride along them */
} layout;

/* o: the per-position tensor (target's shape) or NULL */
static void layout_init(layout *L, const nn_tensor *x, const nn_tensor *t, const nn_tensor *o)
{
    int cd = x->ndim == 1 ? 0 : 1;
    L->C = x->shape[cd];
    L->sc = x->strides[cd];
    L->m = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (d == cd) continue;
        int j = L->m++;
        L->shape[j] = x->shape[d];
        L->stride[0][j] = x->strides[d];
        L->stride[1][j] = t->strides[j];
        L->stride[2][j] = o ? o->strides[j] : 0;
    }
}

static int64_t positions(const layout *L)
{
    int64_t n = 1;
    for (int j = 0; j < L->m; j++) n *= L->shape[j];
    return n;
}

/* Step to the next position, moving the three element offsets; false after the last. */
static bool next_pos(const layout *L, int64_t *idx, int64_t *off)
{
    for (int j = L->m - 1; j >= 0; j--) {
        for (int k = 0; k < 3; k++) off[k] += L->stride[k][j];
        if (++idx[j] < L->shape[j]) return true;
        for (int k = 0; k < 3; k++) off[k] -= L->stride[k][j] * L->shape[j];
        idx[j] = 0;
    }
    return false;
}

static double load_at(const nn_tensor *t, int64_t off)
{
    return nn_load_f64((const char *)nn_data(t) + off * (int64_t)nn_dtype_size(t->dtype), t->dtype);
}

static void store_at(nn_tensor *t, int64_t off, double v)
{
    nn_store_f64((char *)nn_data(t) + off * (int64_t)nn_dtype_size(t->dtype), t->dtype, v);
}

/* The class of the current position, checked; *c < 0 with NN_OK means ignored. */
static nn_status target_at(const nn_tensor *t, int64_t off, const layout *L, int64_t ignore, int64_t *c)
{
    int64_t v = ((const int64_t *)nn_data(t))[off];
    if (v == ignore) {
        *c = -1;
        return NN_OK;
    }
    if (v < 0 || v >= L->C) return nn_error(NN_ERR_INDEX, "Target %lld is out of bounds.", (long long)v);
    *c = v;
    return NN_OK;
}

/* in0 input, in1 target, in2 weight (nin 3); out[0] loss, out[1] total weight */
nn_status nn_cpu_nll_loss(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *t = a->in[1], *w = a->nin > 2 ? a->in[2] : NULL, *out = a->out[0];
    int red = (int)a->i[0];
    if (!nn_dtype_is_float(x->dtype)) return nn_not_implemented(a, x->dtype);
    layout L;
    layout_init(&L, x, t, red == NONE ? out : NULL);
    double sum = 0, wsum = 0;
    int64_t idx[NN_MAX_DIMS] = {0}, off[3] = {0}, c = -1;
    if (positions(&L) > 0) do {
            if (target_at(t, off[1], &L, a->i[1], &c)) return nn_last_status();
            double v = 0, wt = 0;
            if (c >= 0) {
                wt = w ? load_at(w, c * w->strides[0]) : 1.0;
                v = -wt * load_at(x, off[0] + c * L.sc);
            }
            if (red == NONE) store_at(out, off[2], v);
            sum += v;
            wsum += wt;
        } while (next_pos(&L, idx, off));
    if (red != NONE) store_at(out, 0, red == MEAN ? sum / wsum : sum);
    if (a->out[1]) store_at(a->out[1], 0, wsum);
    return NN_OK;
}

/* in0 grad_out, in1 target, in2 total weight, in3 weight (nin 4); out[0] grad_input */
nn_status nn_cpu_nll_loss_backward(const nn_kargs *a)
{
    nn_tensor *gi = a->out[0], *go = a->in[0], *t = a->in[1], *w = a->nin > 3 ? a->in[3] : NULL;
    int red = (int)a->i[0];
    if (!nn_dtype_is_float(gi->dtype)) return nn_not_implemented(a, gi->dtype);
    layout L;
    layout_init(&L, gi, t, red == NONE ? go : NULL);
    int64_t idx[NN_MAX_DIMS] = {0}, off[3] = {0}, c = -1, np = positions(&L);
    if (np == 0 || L.C == 0) return NN_OK;
    if (nn_is_contiguous(gi)) {
        memset(nn_data(gi), 0, (size_t)nn_numel(gi) * nn_dtype_size(gi->dtype));
    } else {
        do
            for (int64_t k = 0; k < L.C; k++) store_at(gi, off[0] + k * L.sc, 0);
        while (next_pos(&L, idx, off));
    }
    double g0 = red == NONE ? 0 : load_at(go, 0), total = load_at(a->in[2], 0);
    do {
        if (target_at(t, off[1], &L, a->i[1], &c)) return nn_last_status();
        if (c < 0) continue;
        double wt = w ? load_at(w, c * w->strides[0]) : 1.0;
        double g = red == NONE ? load_at(go, off[2]) : g0;
        store_at(gi, off[0] + c * L.sc, red == MEAN ? -wt * g / total : -wt * g);
    } while (next_pos(&L, idx, off));
    return NN_OK;
}

/* logsumexp over the classes of the position at off */
static double class_logsumexp(const nn_tensor *x, const layout *L, int64_t off)
{
    double m = -INFINITY, sum = 0;
    for (int64_t k = 0; k < L->C; k++) {
        double v = load_at(x, off + k * L->sc);
        m = v > m ? v : m;
    }
    for (int64_t k = 0; k < L->C; k++) sum += exp(load_at(x, off + k * L->sc) - m);
    return m + log(sum);
}

/* float32 logits whose classes are next to each other take plain loops over a row */
static bool dense_f32(const nn_tensor *x, const layout *L) { return x->dtype == NN_F32 && (L->sc == 1 || L->C <= 1); }

/* logsumexp of a float32 row of C classes (e: room for its exponentials) */
static double row_logsumexp_f32(const float *x, int64_t C, float *e)
{
    float m;
    double sum = nn_cpu_exp_sum_f32(e, x, C, &m);
    return m + log(sum);
}

/* in0 logits (contiguous), in1 target, in2 weight (nin 3); out[0] loss, out[1] total weight,
 * out[2] logsumexp per position. The loss and logsumexp tensors are new and contiguous in the
 * target's shape, so they share the per-position offsets. */
nn_status nn_cpu_cross_entropy(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *t = a->in[1], *w = a->nin > 2 ? a->in[2] : NULL, *out = a->out[0], *lse = a->out[2];
    int red = (int)a->i[0];
    if (!nn_dtype_is_float(x->dtype)) return nn_not_implemented(a, x->dtype);
    layout L;
    layout_init(&L, x, t, lse);
    double sum = 0, wsum = 0;
    int64_t idx[NN_MAX_DIMS] = {0}, off[3] = {0}, c = -1;
    float *e = dense_f32(x, &L) ? malloc(sizeof(float) * (size_t)(L.C > 0 ? L.C : 1)) : NULL;
    if (dense_f32(x, &L) && !e) return nn_error(NN_ERR_NOMEM, "cross_entropy: out of memory");
    if (positions(&L) > 0) do {
            if (target_at(t, off[1], &L, a->i[1], &c)) {
                free(e);
                return nn_last_status();
            }
            double l = e ? row_logsumexp_f32((const float *)nn_data(x) + off[0], L.C, e) : class_logsumexp(x, &L, off[0]), v = 0, wt = 0;
            store_at(lse, off[2], l);
            if (c >= 0) {
                wt = w ? load_at(w, c * w->strides[0]) : 1.0;
                v = wt * (l - load_at(x, off[0] + c * L.sc));
            }
            if (red == NONE) store_at(out, off[2], v);
            sum += v;
            wsum += wt;
        } while (next_pos(&L, idx, off));
    free(e);
    if (red != NONE) store_at(out, 0, red == MEAN ? sum / wsum : sum);
    store_at(a->out[1], 0, wsum);
    return NN_OK;
}

/* in0 grad_out (contiguous for reduction none), in1 logits (contiguous), in2 target, in3 logsumexp,
 * in4 total weight, in5 weight (nin 6); out[0] grad_input, contiguous as the logits:
 * weight[t] * (softmax - onehot(t)), times grad_out (and / total weight for mean). */
nn_status nn_cpu_cross_entropy_backward(const nn_kargs *a)
{
    nn_tensor *gi = a->out[0], *go = a->in[0], *x = a->in[1], *t = a->in[2], *lse = a->in[3], *w = a->nin > 5 ? a->in[5] : NULL;
    int red = (int)a->i[0];
    if (!nn_dtype_is_float(gi->dtype)) return nn_not_implemented(a, gi->dtype);
    layout L;
    layout_init(&L, x, t, lse);
    int64_t idx[NN_MAX_DIMS] = {0}, off[3] = {0}, c = -1;
    if (positions(&L) == 0 || L.C == 0) return NN_OK;
    double g0 = red == NONE ? 0 : load_at(go, 0), total = load_at(a->in[4], 0);
    do {
        if (target_at(t, off[1], &L, a->i[1], &c)) return nn_last_status();
        double scale = 0, l = load_at(lse, off[2]);
        if (c >= 0) {
            double wt = w ? load_at(w, c * w->strides[0]) : 1.0, g = red == NONE ? load_at(go, off[2]) : g0;
            scale = red == MEAN ? wt * g / total : wt * g;
        }
        if (dense_f32(x, &L) && gi->dtype == NN_F32) { /* gi is contiguous as the logits */
            const float *restrict xr = (const float *)nn_data(x) + off[0];
            float *restrict gr = (float *)nn_data(gi) + off[0];
            const float sf = (float)scale, lf = (float)l;
            for (int64_t k = 0; k < L.C; k++) gr[k] = sf * expf(xr[k] - lf);
            if (c >= 0) gr[c] -= sf;
            continue;
        }
        for (int64_t k = 0; k < L.C; k++)
            store_at(gi, off[0] + k * L.sc, scale * (exp(load_at(x, off[0] + k * L.sc) - l) - (k == c)));
    } while (next_pos(&L, idx, off));
    return NN_OK;
}
