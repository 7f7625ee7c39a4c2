/* CUDA pointwise_loss (ops.def; engine/pointwise_loss.c): the elementwise loss or its input
 * gradient in one pass over contiguous operands, the math of pointwise_loss_math.h, with the loss
 * and direction as template constants; four elements a thread as one vector each where aligned. */
#include "ew.cuh"
#include "../engine/pointwise_loss_math.h"

using namespace nnk;

namespace {

/* by compute type; KIND a template constant at every call, so the switch folds away */
__device__ __forceinline__ float fwd(int k, float x, float t, float p) { return nn_ploss_fwd_f(k, x, t, p); }
__device__ __forceinline__ double fwd(int k, double x, double t, double p) { return nn_ploss_fwd_d(k, x, t, p); }
__device__ __forceinline__ float bwd(int k, float x, float t, float g, float p, float s) { return nn_ploss_bwd_f(k, x, t, g, p, s); }
__device__ __forceinline__ double bwd(int k, double x, double t, double g, double p, double s)
{
    return nn_ploss_bwd_d(k, x, t, g, p, s);
}

constexpr int PER = 4;

/* GRAD: 0 forward, 1 a 0-dim incoming gradient, 2 a full one */
template <typename T, int KIND, int GRAD>
__global__ void ploss(const T *__restrict__ x, const T *__restrict__ t, const T *__restrict__ g, T *__restrict__ o, int64_t n,
                      typename ctype<T>::type p, typename ctype<T>::type s, bool vec)
{
    typedef typename ctype<T>::type C;
    const C g0 = GRAD == 1 ? ld(g[0]) : C(0);
    auto one = [&](C xv, C tv, C gv) -> T {
        if constexpr (GRAD == 0) return st<T>(fwd(KIND, xv, tv, p));
        else return st<T>(bwd(KIND, xv, tv, GRAD == 1 ? g0 : gv, p, s));
    };
    const int64_t blocks = (n + PER - 1) / PER;
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < blocks; b += (int64_t)gridDim.x * blockDim.x) {
        if (vec && (b + 1) * PER <= n) {
            Vec<T, PER> xv = ((const Vec<T, PER> *)x)[b], tv = ((const Vec<T, PER> *)t)[b], gv, ov;
            if constexpr (GRAD == 2) gv = ((const Vec<T, PER> *)g)[b];
#pragma unroll
            for (int l = 0; l < PER; l++) ov.v[l] = one(ld(xv.v[l]), ld(tv.v[l]), GRAD == 2 ? ld(gv.v[l]) : C(0));
            ((Vec<T, PER> *)o)[b] = ov;
            continue;
        }
        for (int64_t j = b * PER; j < n && j < (b + 1) * PER; j++) o[j] = one(ld(x[j]), ld(t[j]), GRAD == 2 ? ld(g[j]) : C(0));
    }
}

template <typename T, int KIND> nn_status launch(const nn_kargs *a, int64_t n, cudaStream_t s)
{
    typedef typename ctype<T>::type C;
    const T *x = (const T *)nn_data(a->in[0]), *t = (const T *)nn_data(a->in[1]);
    const T *g = a->nin > 2 ? (const T *)nn_data(a->in[2]) : nullptr;
    T *o = (T *)nn_data(a->out[0]);
    const size_t vb = sizeof(Vec<T, PER>);
    bool vec = (uintptr_t)x % vb == 0 && (uintptr_t)t % vb == 0 && (uintptr_t)o % vb == 0 && (!g || (uintptr_t)g % vb == 0);
    unsigned grid = blocks_for((n + PER - 1) / PER);
    C p = (C)a->f[0], sc = (C)a->f[1];
    if (!g) nn_launch<ploss<T, KIND, 0>>(grid, 256, s, x, t, g, o, n, p, sc, vec);
    else if (a->in[2]->ndim == 0) nn_launch<ploss<T, KIND, 1>>(grid, 256, s, x, t, g, o, n, p, sc, vec);
    else nn_launch<ploss<T, KIND, 2>>(grid, 256, s, x, t, g, o, n, p, sc, vec);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

template <typename T> nn_status by_kind(const nn_kargs *a, int64_t n, cudaStream_t s)
{
    switch (a->i[0]) {
    case NN_PLOSS_MSE: return launch<T, NN_PLOSS_MSE>(a, n, s);
    case NN_PLOSS_SMOOTH_L1: return launch<T, NN_PLOSS_SMOOTH_L1>(a, n, s);
    case NN_PLOSS_HUBER: return launch<T, NN_PLOSS_HUBER>(a, n, s);
    case NN_PLOSS_BCE: return launch<T, NN_PLOSS_BCE>(a, n, s);
    default: return launch<T, NN_PLOSS_BCE_LOGITS>(a, n, s);
    }
}

} // namespace

extern "C" nn_status nn_cuda_pointwise_loss(const nn_kargs *a)
{
    int64_t n = nn_numel(a->out[0]);
    if (!n) return NN_OK;
    cudaStream_t s = nn_cuda_stream(nn_cuda_index(a));
    NN_DISPATCH_FLOATS(a->out[0]->dtype, a, return by_kind<scalar_t>(a, n, s));
    return NN_OK;
}
