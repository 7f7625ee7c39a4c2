/* CPU pointwise_loss (ops.def; engine/pointwise_loss.c): one loop per loss and direction over
 * contiguous operands, the math of pointwise_loss_math.h; float16 and bfloat16 compute in float.
 * Large ones split over the CPU's threads (parallel.h). */
#if defined(__GNUC__) && !defined(__clang__)
/* the log / exp loops call libmvec (vmath.h); without traps, the selects of smooth L1 and Huber vectorize */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif

#include "kernels.h"
#include "parallel.h"
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

/* the loss over elements [b, e) of contiguous operands */
typedef struct {
    int kind;
    nn_dtype dt;
    const char *x, *t, *g;
    int64_t gs, n;
    char *o;
    double p, s;
} ploss_job;

enum { BLOCK = 1024 }; /* threads' parts start at multiples of it: run_16's blocks and the vector
                        * loops see the serial run's, so the results are bitwise the same */

static nn_status run_blocks(int64_t ub, int64_t ue, void *arg)
{
    const ploss_job *j = arg;
    int64_t b = ub * BLOCK, e = ue * BLOCK < j->n ? ue * BLOCK : j->n;
    size_t es = nn_dtype_size(j->dt);
    const char *x = j->x + b * es, *t = j->t + b * es, *g = j->g ? j->g + b * j->gs * es : NULL;
    char *o = j->o + b * es;
    switch (j->dt) {
    case NN_F32: run_f32(j->kind, x, t, g, j->gs, o, e - b, j->p, j->s); break;
    case NN_F64: run_f64(j->kind, x, t, g, j->gs, o, e - b, j->p, j->s); break;
    default: run_16(j->kind, j->dt, x, t, g, j->gs, o, e - b, j->p, j->s); break;
    }
    return NN_OK;
}

nn_status nn_cpu_pointwise_loss(const nn_kargs *a)
{
    nn_tensor *out = a->out[0];
    if (out->dtype != NN_F32 && out->dtype != NN_F64 && out->dtype != NN_F16 && out->dtype != NN_BF16)
        return nn_not_implemented(a, out->dtype);
    ploss_job j = {.kind = (int)a->i[0], .dt = out->dtype, .x = nn_data(a->in[0]), .t = nn_data(a->in[1]),
                   .g = a->nin > 2 ? nn_data(a->in[2]) : NULL, .gs = a->nin > 2 && a->in[2]->ndim > 0 ? 1 : 0,
                   .n = nn_numel(out), .o = nn_data(out), .p = a->f[0], .s = a->f[1]};
    int64_t units = (j.n + BLOCK - 1) / BLOCK;
    if (j.n < NN_PARALLEL_MIN) return run_blocks(0, units, &j);
    return nn_parallel_for(units, NN_PARALLEL_MIN / 2 / BLOCK, run_blocks, &j);
}
