/* CPU pointwise_loss (ops.def; engine/pointwise_loss.c): one loop per loss and direction over
 * contiguous operands, the math of pointwise_loss_math.h, run by contig_map.h (dtypes, threads). */
#if defined(__GNUC__) && !defined(__clang__)
/* the log / exp loops call libmvec (vmath.h); without traps, the selects of smooth L1 and Huber vectorize */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif

#include "contig_map.h"
#include "kernels.h"
#include "vmath.h"
#include "../pointwise_loss_math.h"

/* out[i] = the loss (in[2] NULL) or its gradient, with in[2] the incoming gradient, 0-dim (step 0) or full */
#define PLOSS_LOOP(T, SUF, KIND)                                                                          \
    do {                                                                                                  \
        const T *px = m->in[0], *pt = m->in[1], *pg = m->in[2];                                           \
        const T p = (T)m->f[0], s = (T)m->f[1];                                                           \
        const int64_t gs = m->step[2], n = m->n;                                                          \
        T *po = m->out;                                                                                   \
        if (!pg)                                                                                          \
            for (int64_t i = 0; i < n; i++) po[i] = nn_ploss_fwd_##SUF(KIND, px[i], pt[i], p);           \
        else                                                                                              \
            for (int64_t i = 0; i < n; i++) po[i] = nn_ploss_bwd_##SUF(KIND, px[i], pt[i], pg[i * gs], p, s); \
    } while (0)

#define PLOSS_KINDS(T, SUF)                                                                               \
    switch (m->kind) {                                                                                    \
    case NN_PLOSS_MSE: PLOSS_LOOP(T, SUF, NN_PLOSS_MSE); break;                                           \
    case NN_PLOSS_SMOOTH_L1: PLOSS_LOOP(T, SUF, NN_PLOSS_SMOOTH_L1); break;                               \
    case NN_PLOSS_HUBER: PLOSS_LOOP(T, SUF, NN_PLOSS_HUBER); break;                                       \
    case NN_PLOSS_BCE: PLOSS_LOOP(T, SUF, NN_PLOSS_BCE); break;                                           \
    default: PLOSS_LOOP(T, SUF, NN_PLOSS_BCE_LOGITS); break;                                              \
    }

NN_CPU_CLONES static void loop_f32(const nn_cmap *m) { PLOSS_KINDS(float, f) }
NN_CPU_CLONES static void loop_f64(const nn_cmap *m) { PLOSS_KINDS(double, d) }

nn_status nn_cpu_pointwise_loss(const nn_kargs *a) { return nn_cpu_contig_map(a, loop_f32, loop_f64); }
