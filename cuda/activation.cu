/* CUDA activation (ops.def; engine/activation.c): the activation or its input gradient in one
 * pass over contiguous operands, the math of activation_math.h, with the activation and the
 * direction as template constants; four elements a thread as one vector each where aligned. */
#include "ew.cuh"
#include "../engine/activation_math.h"

using namespace nnk;

namespace {

/* by compute type; KIND a template constant at every call, so the switch folds away */
__device__ __forceinline__ float fwd(int k, float x, float p, float q) { return nn_act_fwd_f(k, x, p, q); }
__device__ __forceinline__ double fwd(int k, double x, double p, double q) { return nn_act_fwd_d(k, x, p, q); }
__device__ __forceinline__ float bwd(int k, float x, float g, float p, float q) { return nn_act_bwd_f(k, x, g, p, q); }
__device__ __forceinline__ double bwd(int k, double x, double g, double p, double q) { return nn_act_bwd_d(k, x, g, p, q); }

constexpr int PER = 4;

template <typename T, int KIND, bool GRAD>
__global__ void act(const T *__restrict__ x, const T *__restrict__ g, T *__restrict__ o, int64_t n, typename ctype<T>::type p,
                    typename ctype<T>::type q, bool vec)
{
    typedef typename ctype<T>::type C;
    auto one = [&](C xv, C gv) -> T {
        if constexpr (GRAD) return st<T>(bwd(KIND, xv, gv, p, q));
        else return st<T>(fwd(KIND, xv, p, q));
    };
    const int64_t blocks = (n + PER - 1) / PER;
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < blocks; b += (int64_t)gridDim.x * blockDim.x) {
        if (vec && (b + 1) * PER <= n) {
            Vec<T, PER> xv = ((const Vec<T, PER> *)x)[b], gv, ov;
            if constexpr (GRAD) gv = ((const Vec<T, PER> *)g)[b];
#pragma unroll
            for (int l = 0; l < PER; l++) ov.v[l] = one(ld(xv.v[l]), GRAD ? ld(gv.v[l]) : C(0));
            ((Vec<T, PER> *)o)[b] = ov;
            continue;
        }
        for (int64_t j = b * PER; j < n && j < (b + 1) * PER; j++) o[j] = one(ld(x[j]), GRAD ? ld(g[j]) : C(0));
    }
}

template <typename T, int KIND> nn_status launch(const nn_kargs *a, int64_t n, cudaStream_t s)
{
    typedef typename ctype<T>::type C;
    const T *x = (const T *)nn_data(a->in[0]), *g = a->nin > 1 ? (const T *)nn_data(a->in[1]) : nullptr;
    T *o = (T *)nn_data(a->out[0]);
    const size_t vb = sizeof(Vec<T, PER>);
    bool vec = (uintptr_t)x % vb == 0 && (uintptr_t)o % vb == 0 && (!g || (uintptr_t)g % vb == 0);
    unsigned grid = blocks_for((n + PER - 1) / PER);
    if (g) nn_launch<act<T, KIND, true>>(grid, 256, s, x, g, o, n, (C)a->f[0], (C)a->f[1], vec);
    else nn_launch<act<T, KIND, false>>(grid, 256, s, x, g, o, n, (C)a->f[0], (C)a->f[1], vec);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

template <typename T> nn_status by_kind(const nn_kargs *a, int64_t n, cudaStream_t s)
{
    switch (a->i[0]) {
    case NN_ACT_GELU: return launch<T, NN_ACT_GELU>(a, n, s);
    case NN_ACT_GELU_TANH: return launch<T, NN_ACT_GELU_TANH>(a, n, s);
    case NN_ACT_SILU: return launch<T, NN_ACT_SILU>(a, n, s);
    case NN_ACT_MISH: return launch<T, NN_ACT_MISH>(a, n, s);
    case NN_ACT_SOFTPLUS: return launch<T, NN_ACT_SOFTPLUS>(a, n, s);
    case NN_ACT_LOG_SIGMOID: return launch<T, NN_ACT_LOG_SIGMOID>(a, n, s);
    case NN_ACT_LEAKY_RELU: return launch<T, NN_ACT_LEAKY_RELU>(a, n, s);
    case NN_ACT_ELU: return launch<T, NN_ACT_ELU>(a, n, s);
    case NN_ACT_HARDSWISH: return launch<T, NN_ACT_HARDSWISH>(a, n, s);
    default: return launch<T, NN_ACT_HARDSIGMOID>(a, n, s);
    }
}

} // namespace

extern "C" nn_status nn_cuda_activation(const nn_kargs *a)
{
    int64_t n = nn_numel(a->out[0]);
    if (!n) return NN_OK;
    cudaStream_t s = nn_cuda_stream(nn_cuda_index(a));
    NN_DISPATCH_FLOATS(a->out[0]->dtype, a, return by_kind<scalar_t>(a, n, s));
    return NN_OK;
}
