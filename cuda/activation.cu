/* CUDA activation (ops.def; engine/activation.c): the activation or its input gradient in one
 * pass over contiguous operands (contig_map.cuh), the math of activation_math.h, with the
 * activation and the direction as template constants. */
#include "contig_map.cuh"
#include "../engine/activation_math.h"

using namespace nnk;

namespace {

/* by compute type; KIND a template constant at every call, so the switch folds away */
__device__ __forceinline__ float fwd(int k, float x, float p, float q) { return nn_act_fwd_f(k, x, p, q); }
__device__ __forceinline__ double fwd(int k, double x, double p, double q) { return nn_act_fwd_d(k, x, p, q); }
__device__ __forceinline__ float bwd(int k, float x, float g, float p, float q) { return nn_act_bwd_f(k, x, g, p, q); }
__device__ __forceinline__ double bwd(int k, double x, double g, double p, double q) { return nn_act_bwd_d(k, x, g, p, q); }

/* the activation of x, or g times its derivative */
template <int KIND, bool GRAD> struct act {
    template <typename C> static __device__ __forceinline__ C f(C x, C g, C, C p, C q)
    {
        if constexpr (GRAD) return bwd(KIND, x, g, p, q);
        else return fwd(KIND, x, p, q);
    }
};

struct kinds {
    template <typename T> static nn_status run(const nn_kargs *a, int64_t n, cudaStream_t s)
    {
        switch (a->i[0]) {
        case NN_ACT_GELU: return cmap_launch<T, act, NN_ACT_GELU, 1, false>(a, n, s);
        case NN_ACT_GELU_TANH: return cmap_launch<T, act, NN_ACT_GELU_TANH, 1, false>(a, n, s);
        case NN_ACT_SILU: return cmap_launch<T, act, NN_ACT_SILU, 1, false>(a, n, s);
        case NN_ACT_MISH: return cmap_launch<T, act, NN_ACT_MISH, 1, false>(a, n, s);
        case NN_ACT_SOFTPLUS: return cmap_launch<T, act, NN_ACT_SOFTPLUS, 1, false>(a, n, s);
        case NN_ACT_LOG_SIGMOID: return cmap_launch<T, act, NN_ACT_LOG_SIGMOID, 1, false>(a, n, s);
        case NN_ACT_LEAKY_RELU: return cmap_launch<T, act, NN_ACT_LEAKY_RELU, 1, false>(a, n, s);
        case NN_ACT_ELU: return cmap_launch<T, act, NN_ACT_ELU, 1, false>(a, n, s);
        case NN_ACT_HARDSWISH: return cmap_launch<T, act, NN_ACT_HARDSWISH, 1, false>(a, n, s);
        default: return cmap_launch<T, act, NN_ACT_HARDSIGMOID, 1, false>(a, n, s);
        }
    }
};

} // namespace

extern "C" nn_status nn_cuda_activation(const nn_kargs *a) { return cmap_run<kinds>(a); }
