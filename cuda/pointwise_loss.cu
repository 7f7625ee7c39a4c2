/* CUDA pointwise_loss (ops.def; engine/pointwise_loss.c): the elementwise loss or its input
 * gradient in one pass over contiguous operands (contig_map.cuh), the math of
 * pointwise_loss_math.h, with the loss and the direction as template constants. */
#include "contig_map.cuh"
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

/* the loss of x against t, or its gradient for the incoming g (s: the reduction's scale) */
template <int KIND, bool GRAD> struct loss {
    template <typename C> static __device__ __forceinline__ C f(C x, C t, C g, C p, C s)
    {
        if constexpr (GRAD) return bwd(KIND, x, t, g, p, s);
        else return fwd(KIND, x, t, p);
    }
};

struct kinds {
    template <typename T> static nn_status run(const nn_kargs *a, int64_t n, cudaStream_t s)
    {
        switch (a->i[0]) {
        case NN_PLOSS_MSE: return cmap_launch<T, loss, NN_PLOSS_MSE, 2, true>(a, n, s);
        case NN_PLOSS_SMOOTH_L1: return cmap_launch<T, loss, NN_PLOSS_SMOOTH_L1, 2, true>(a, n, s);
        case NN_PLOSS_HUBER: return cmap_launch<T, loss, NN_PLOSS_HUBER, 2, true>(a, n, s);
        case NN_PLOSS_BCE: return cmap_launch<T, loss, NN_PLOSS_BCE, 2, true>(a, n, s);
        default: return cmap_launch<T, loss, NN_PLOSS_BCE_LOGITS, 2, true>(a, n, s);
        }
    }
};

} // namespace

extern "C" nn_status nn_cuda_pointwise_loss(const nn_kargs *a) { return cmap_run<kinds>(a); }
