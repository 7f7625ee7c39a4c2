/* The elementwise losses of nn_pointwise_loss (nnfunc.h) and their input gradients, one value at a
 * time, shared by the CPU kernel (engine/cpu/pointwise_loss.c) and the CUDA one
 * (cuda/pointwise_loss.cu). PyTorch's formulas, in its order of operations:
 *   mse        (x - t)^2                                       grad: s (x - t) g   (s carries the 2)
 *   smooth_l1  |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta    grad: clamp(d, -beta, beta) / beta * g * s
 *   huber      |d| < delta ? 0.5 d^2 : delta (|d| - 0.5 delta) grad: clamp(d, -delta, delta) * g * s
 *   bce        (t - 1) max(log1p(-x), -100) - t max(log x, -100)   grad: g s (x - t) / max((1 - x) x, 1e-12)
 *   bce_logits (1 - t) x - log_sigmoid(x)                      grad: (sigmoid(x) - t) * g * s
 * with d = x - t, p the loss's parameter (beta, delta), g the incoming gradient and s the
 * reduction's scale. The max against -100 keeps a NaN, as std::max(log, -100) does. */
#ifndef NN_POINTWISE_LOSS_MATH_H
#define NN_POINTWISE_LOSS_MATH_H

#include <math.h>

enum { NN_PLOSS_MSE, NN_PLOSS_SMOOTH_L1, NN_PLOSS_HUBER, NN_PLOSS_BCE, NN_PLOSS_BCE_LOGITS, NN_PLOSS_COUNT };

#ifdef __CUDACC__
#define NN_PLOSS_FN __host__ __device__ static __forceinline__
#else
#define NN_PLOSS_FN static inline
#endif

/* nn_ploss_fwd_<suf>(kind, x, t, p) and nn_ploss_bwd_<suf>(kind, x, t, g, p, s) for one compute type */
#define NN_PLOSS_DEFINE(T, SUF, LOG, LOG1P, EXP, ABS)                                                      \
    NN_PLOSS_FN T nn_ploss_floor100_##SUF(T v) { return v < (T)-100 ? (T)-100 : v; }                       \
    /* both values computed, then one picked: a select the CPU loops vectorize (a branch would not) */    \
    NN_PLOSS_FN T nn_ploss_pick_##SUF(int c, T a, T b) { return c ? a : b; }                               \
    NN_PLOSS_FN T nn_ploss_fwd_##SUF(int kind, T x, T t, T p)                                              \
    {                                                                                                      \
        T d = x - t, z = ABS(d);                                                                           \
        switch (kind) {                                                                                    \
        case NN_PLOSS_MSE: return d * d;                                                                   \
        case NN_PLOSS_SMOOTH_L1: return nn_ploss_pick_##SUF(z < p, (T)0.5 * z * z / p, z - (T)0.5 * p);   \
        case NN_PLOSS_HUBER: return nn_ploss_pick_##SUF(z < p, (T)0.5 * z * z, p * (z - (T)0.5 * p));     \
        case NN_PLOSS_BCE:                                                                                 \
            return (t - (T)1) * nn_ploss_floor100_##SUF(LOG1P(-x)) - t * nn_ploss_floor100_##SUF(LOG(x)); \
        default: {                                                                                         \
            T ls = (x < (T)0 ? x : (T)0) - LOG1P(EXP(-ABS(x)));                                            \
            return ((T)1 - t) * x - ls;                                                                    \
        }                                                                                                  \
        }                                                                                                  \
    }                                                                                                      \
    NN_PLOSS_FN T nn_ploss_bwd_##SUF(int kind, T x, T t, T g, T p, T s)                                   \
    {                                                                                                      \
        T d = x - t;                                                                                       \
        switch (kind) {                                                                                    \
        case NN_PLOSS_MSE: return s * d * g;                                                                 \
        case NN_PLOSS_SMOOTH_L1:                                                                           \
            return nn_ploss_pick_##SUF(d <= -p, -s * g, nn_ploss_pick_##SUF(d >= p, s * g, s * d * g / p));   \
        case NN_PLOSS_HUBER:                                                                               \
            return nn_ploss_pick_##SUF(d <= -p, -s * g * p, nn_ploss_pick_##SUF(d >= p, s * g * p, s * d * g)); \
        case NN_PLOSS_BCE: {                                                                               \
            T den = ((T)1 - x) * x;                                                                        \
            return g * s * d / (den < (T)1e-12 ? (T)1e-12 : den);                                          \
        }                                                                                                  \
        default: return ((T)1 / ((T)1 + EXP(-x)) - t) * (g * s);                                           \
        }                                                                                                  \
    }

NN_PLOSS_DEFINE(float, f, logf, log1pf, expf, fabsf)
NN_PLOSS_DEFINE(double, d, log, log1p, exp, fabs)

#endif
