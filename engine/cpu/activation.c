/* CPU activation (ops.def; engine/activation.c): one loop per activation and direction over
 * contiguous operands, the math of activation_math.h, run by contig_map.h (dtypes, threads). */
#if defined(__GNUC__) && !defined(__clang__)
/* the exp / erf / tanh loops call libmvec (vmath.h); without traps, the selects vectorize */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif

#include "contig_map.h"
#include "kernels.h"
#include "vmath.h"
#include "../activation_math.h"

/* out[i] = the activation of x[i] (in[1] NULL), or g[i] times its derivative (g = in[1]) */
#define ACT_LOOP(T, SUF, KIND)                                                                            \
    do {                                                                                                  \
        const T *px = m->in[0], *pg = m->in[1];                                                           \
        const T p = (T)m->f[0], q = (T)m->f[1];                                                           \
        const int64_t n = m->n;                                                                           \
        T *po = m->out;                                                                                   \
        if (!pg)                                                                                          \
            for (int64_t i = 0; i < n; i++) po[i] = nn_act_fwd_##SUF(KIND, px[i], p, q);                 \
        else                                                                                              \
            for (int64_t i = 0; i < n; i++) po[i] = nn_act_bwd_##SUF(KIND, px[i], pg[i], p, q);          \
    } while (0)

#define ACT_KINDS(T, SUF)                                                                                 \
    switch (m->kind) {                                                                                    \
    case NN_ACT_GELU: ACT_LOOP(T, SUF, NN_ACT_GELU); break;                                               \
    case NN_ACT_GELU_TANH: ACT_LOOP(T, SUF, NN_ACT_GELU_TANH); break;                                     \
    case NN_ACT_SILU: ACT_LOOP(T, SUF, NN_ACT_SILU); break;                                               \
    case NN_ACT_MISH: ACT_LOOP(T, SUF, NN_ACT_MISH); break;                                               \
    case NN_ACT_SOFTPLUS: ACT_LOOP(T, SUF, NN_ACT_SOFTPLUS); break;                                       \
    case NN_ACT_LOG_SIGMOID: ACT_LOOP(T, SUF, NN_ACT_LOG_SIGMOID); break;                                 \
    case NN_ACT_LEAKY_RELU: ACT_LOOP(T, SUF, NN_ACT_LEAKY_RELU); break;                                   \
    case NN_ACT_ELU: ACT_LOOP(T, SUF, NN_ACT_ELU); break;                                                 \
    case NN_ACT_HARDSWISH: ACT_LOOP(T, SUF, NN_ACT_HARDSWISH); break;                                     \
    default: ACT_LOOP(T, SUF, NN_ACT_HARDSIGMOID); break;                                                 \
    }

NN_CPU_CLONES static void loop_f32(const nn_cmap *m) { ACT_KINDS(float, f) }
NN_CPU_CLONES static void loop_f64(const nn_cmap *m) { ACT_KINDS(double, d) }

nn_status nn_cpu_activation(const nn_kargs *a) { return nn_cpu_contig_map(a, loop_f32, loop_f64); }
