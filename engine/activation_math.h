/* The activations of nn_activation (nnfunc.h) and their input gradients, one value at a time,
 * shared by the CPU kernel (engine/cpu/activation.c) and the CUDA one (cuda/activation.cu), in
 * PyTorch's kernels' order of operations. p and q are the activation's parameters:
 *   gelu        x 0.5 (1 + erf(x / sqrt 2))               gelu_tanh  0.5 x (1 + tanh(b (x + k x^3)))
 *   silu        x / (1 + exp(-x))                          mish       x tanh(log1p(exp x))
 *   softplus    bx > q ? x : log1p(exp(bx)) / b  (b = p, q the threshold)
 *   log_sigmoid min(x, 0) - log1p(exp(-|x|))               leaky_relu x > 0 ? x : x p
 *   elu         x <= 0 ? (exp(x) - 1) p : x  (p = alpha)
 *   hardswish   x min(max(x + 3, 0), 6) / 6                hardsigmoid min(max(x + 3, 0), 6) * (1/6)
 * The backward gives g times the derivative at x. Both arms of a select are computed, then one
 * picked, so the CPU loops vectorize. */
#ifndef NN_ACTIVATION_MATH_H
#define NN_ACTIVATION_MATH_H

#include <math.h>

enum {
    NN_ACT_GELU, NN_ACT_GELU_TANH, NN_ACT_SILU, NN_ACT_MISH, NN_ACT_SOFTPLUS, NN_ACT_LOG_SIGMOID,
    NN_ACT_LEAKY_RELU, NN_ACT_ELU, NN_ACT_HARDSWISH, NN_ACT_HARDSIGMOID, NN_ACT_COUNT
};

#ifdef __CUDACC__
#define NN_ACT_FN __host__ __device__ static __forceinline__
#else
#define NN_ACT_FN static inline
#endif

#define NN_ACT_SQRT1_2 0.70710678118654752440    /* 1 / sqrt(2) */
#define NN_ACT_BETA_ERF 0.39894228040143267794   /* 1 / sqrt(2 pi): the normal density's factor */
#define NN_ACT_BETA_TANH 0.79788456080286535588  /* sqrt(2 / pi) */
#define NN_ACT_KAPPA 0.044715

/* nn_act_fwd_<suf>(kind, x, p, q) and nn_act_bwd_<suf>(kind, x, g, p, q) for one compute type */
#define NN_ACT_DEFINE(T, SUF, EXP, LOG1P, TANH, ERF, ABS)                                               \
    NN_ACT_FN T nn_act_pick_##SUF(int c, T a, T b) { return c ? a : b; }                                 \
    NN_ACT_FN T nn_act_clamp6_##SUF(T v) { return v < (T)0 ? (T)0 : v > (T)6 ? (T)6 : v; }             \
    NN_ACT_FN T nn_act_fwd_##SUF(int kind, T x, T p, T q)                                               \
    {                                                                                                    \
        switch (kind) {                                                                                  \
        case NN_ACT_GELU: return x * (T)0.5 * ((T)1 + ERF(x * (T)NN_ACT_SQRT1_2));                       \
        case NN_ACT_GELU_TANH: {                                                                         \
            T inner = (T)NN_ACT_BETA_TANH * (x + (T)NN_ACT_KAPPA * (x * x * x));                         \
            return (T)0.5 * x * ((T)1 + TANH(inner));                                                    \
        }                                                                                                \
        case NN_ACT_SILU: return x / ((T)1 + EXP(-x));                                                   \
        case NN_ACT_MISH: return x * TANH(LOG1P(EXP(x)));                                                \
        case NN_ACT_SOFTPLUS: return nn_act_pick_##SUF(x * p > q, x, LOG1P(EXP(x * p)) / p);            \
        case NN_ACT_LOG_SIGMOID: return (x < (T)0 ? x : (T)0) - LOG1P(EXP(-ABS(x)));                    \
        case NN_ACT_LEAKY_RELU: return nn_act_pick_##SUF(x > (T)0, x, x * p);                           \
        case NN_ACT_ELU: return nn_act_pick_##SUF(x <= (T)0, (EXP(x) - (T)1) * p, x);                   \
        case NN_ACT_HARDSWISH: return x * nn_act_clamp6_##SUF(x + (T)3) / (T)6;                          \
        default: return nn_act_clamp6_##SUF(x + (T)3) * (T)(1.0 / 6);                                   \
        }                                                                                                \
    }                                                                                                    \
    NN_ACT_FN T nn_act_bwd_##SUF(int kind, T x, T g, T p, T q)                                          \
    {                                                                                                    \
        switch (kind) {                                                                                  \
        case NN_ACT_GELU: {                                                                              \
            T cdf = (T)0.5 * ((T)1 + ERF(x * (T)NN_ACT_SQRT1_2));                                        \
            T pdf = EXP((T)-0.5 * x * x) * (T)NN_ACT_BETA_ERF;                                           \
            return g * (cdf + x * pdf);                                                                  \
        }                                                                                                \
        case NN_ACT_GELU_TANH: {                                                                         \
            T x2 = x * x, inner = (T)NN_ACT_BETA_TANH * (x + (T)NN_ACT_KAPPA * (x2 * x));                \
            T t = TANH(inner), left = (T)0.5 * x, right = (T)1 + t;                                      \
            T inner_d = (T)NN_ACT_BETA_TANH * ((T)1 + (T)3 * (T)NN_ACT_KAPPA * x2);                      \
            return g * ((T)0.5 * right + left * ((T)1 - t * t) * inner_d);                               \
        }                                                                                                \
        case NN_ACT_SILU: {                                                                              \
            T s = (T)1 / ((T)1 + EXP(-x));                                                               \
            return g * s * ((T)1 + x * ((T)1 - s));                                                      \
        }                                                                                                \
        case NN_ACT_MISH: {                                                                              \
            T s = (T)1 / ((T)1 + EXP(-x)), t = TANH(LOG1P(EXP(x)));                                     \
            return g * (t + x * s * ((T)1 - t * t));                                                     \
        }                                                                                                \
        case NN_ACT_SOFTPLUS: {                                                                          \
            T z = EXP(x * p);                                                                            \
            return nn_act_pick_##SUF(x * p > q, g, g * z / (z + (T)1));                                  \
        }                                                                                                \
        case NN_ACT_LOG_SIGMOID: {                                                                       \
            T z = EXP(-ABS(x)), neg = x < (T)0 ? (T)1 : (T)0, sign = x < (T)0 ? (T)1 : (T)-1;            \
            return g * (neg - sign * (z / ((T)1 + z)));                                                  \
        }                                                                                                \
        case NN_ACT_LEAKY_RELU: return nn_act_pick_##SUF(x > (T)0, g, g * p);                           \
        case NN_ACT_ELU: return nn_act_pick_##SUF(x <= (T)0, g * p * EXP(x), g);                        \
        case NN_ACT_HARDSWISH:                                                                           \
            return nn_act_pick_##SUF(x < (T)-3, (T)0, nn_act_pick_##SUF(x <= (T)3, g * (x / (T)3 + (T)0.5), g)); \
        default: return nn_act_pick_##SUF(x > (T)-3 && x < (T)3, g * (T)(1.0 / 6), (T)0);               \
        }                                                                                                \
    }

NN_ACT_DEFINE(float, f, expf, log1pf, tanhf, erff, fabsf)
NN_ACT_DEFINE(double, d, exp, log1p, tanh, erf, fabs)

#endif
