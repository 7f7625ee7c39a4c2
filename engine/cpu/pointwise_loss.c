/* CPU pointwise_loss (ops.def; engine/pointwise_loss.c): one loop per loss and direction over
 * contiguous operands, the math of pointwise_loss_math.h; float16 and bfloat16 compute in float. */
#if defined(__GNUC__) && !defined(__clang__)
/* the log / exp loops call libmvec (vmath.h); without traps, the selects of smooth L1 and Huber vectorize */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif

#include "kernels.h"
#include "vmath.h"
#include "../pointwise_loss_math.h"

/* out[i] = the loss (g NULL) or its gradient, with g a 0-dim (gs 0) or full (gs 1) operand */
#define PLOSS_LOOP(T, SUF, KIND)                                                                          \
    do {                                                                                                  \
        const T *px = x, *pt = t, *pg = g;                                                                \
        T *po = o;                                                                                        \
        if (!pg)                                                                                          \
            for (int64_t i = 0; i < n; i++) po[i] = nn_ploss_fwd_##SUF(KIND, px[i], pt[i], (T)p);        \
        else                                                                                              \
            for (int64_t i = 0; i < n; i++)                                                               \
                po[i] = nn_ploss_bwd_##SUF(KIND, px[i], pt[i], pg[i * gs], (T)p, (T)s);                  \
    } while (0)

#define PLOSS_KINDS(T, SUF)                                                                               \
    switch (kind) {                                                                                       \
    case NN_PLOSS_MSE: PLOSS_LOOP(T, SUF, NN_PLOSS_MSE); break;                                           \
    case NN_PLOSS_SMOOTH_L1: PLOSS_LOOP(T, SUF, NN_PLOSS_SMOOTH_L1); break;                               \
    case NN_PLOSS_HUBER: PLOSS_LOOP(T, SUF, NN_PLOSS_HUBER); break;                                       \
    case NN_PLOSS_BCE: PLOSS_LOOP(T, SUF, NN_PLOSS_BCE); break;                                           \
    default: PLOSS_LOOP(T, SUF, NN_PLOSS_BCE_LOGITS); break;                                              \
    }

static void run_f32(int kind, const void *x, const void *t, const void *g, int64_t gs, void *o, int64_t n, double p, double s)
{
    PLOSS_KINDS(float, f)
}

static void run_f64(int kind, const void *x, const void *t, const void *g, int64_t gs, void *o, int64_t n, double p, double s)
{
    PLOSS_KINDS(double, d)
}

/* float16 / bfloat16: through float32 buffers, a block at a time */
static void run_16(int kind, nn_dtype dt, const char *x, const char *t, const char *g, int64_t gs, char *o, int64_t n, double p,
                   double s)
{
    enum { B = 1024 };
    float bx[B], bt[B], bg[B], bo[B];
    size_t es = nn_dtype_size(dt);
    for (int64_t i0 = 0; i0 < n; i0 += B) {
        int64_t m = n - i0 < B ? n - i0 : B;
        for (int64_t i = 0; i < m; i++) {
            bx[i] = (float)nn_load_f64(x + (i0 + i) * es, dt);
            bt[i] = (float)nn_load_f64(t + (i0 + i) * es, dt);
            if (g) bg[i] = (float)nn_load_f64(g + (i0 + i) * gs * es, dt);
        }
        run_f32(kind, bx, bt, g ? bg : NULL, 1, bo, m, p, s);
        for (int64_t i = 0; i < m; i++) nn_store_f64(o + (i0 + i) * es, dt, bo[i]);
    }
}

nn_status nn_cpu_pointwise_loss(const nn_kargs *a)
{
    nn_tensor *out = a->out[0];
    const void *g = a->nin > 2 ? nn_data(a->in[2]) : NULL;
    int64_t gs = a->nin > 2 && a->in[2]->ndim > 0 ? 1 : 0, n = nn_numel(out);
    int kind = (int)a->i[0];
    switch (out->dtype) {
    case NN_F32: run_f32(kind, nn_data(a->in[0]), nn_data(a->in[1]), g, gs, nn_data(out), n, a->f[0], a->f[1]); break;
    case NN_F64: run_f64(kind, nn_data(a->in[0]), nn_data(a->in[1]), g, gs, nn_data(out), n, a->f[0], a->f[1]); break;
    case NN_F16: case NN_BF16:
        run_16(kind, out->dtype, nn_data(a->in[0]), nn_data(a->in[1]), g, gs, nn_data(out), n, a->f[0], a->f[1]);
        break;
    default: return nn_not_implemented(a, out->dtype);
    }
    return NN_OK;
}
