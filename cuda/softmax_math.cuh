/* Device math shared by the softmax kernels (cuda/softmax.cu) and the fused
 * cross-entropy (cuda/loss.cu): conversions to the accumulation type, exp/log
 * overloads, warp-group reductions and the online (max, sum of exp(x - max))
 * pair that a softmax row reduces to; 16-byte vector loads and stores. */
#pragma once
#include <math.h>

#include "kernels.cuh"

namespace nn_smx {

template <typename C, typename T> __device__ __forceinline__ C to_acc(T v) { return (C)v; }
template <> __device__ __forceinline__ float to_acc<float, __half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_acc<float, __nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T, typename C> __device__ __forceinline__ T from_acc(C v) { return (T)v; }
template <> __device__ __forceinline__ __half from_acc<__half, float>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16, float>(float v) { return __float2bfloat16_rn(v); }

__device__ __forceinline__ float ex(float v) { return expf(v); }
__device__ __forceinline__ double ex(double v) { return exp(v); }
__device__ __forceinline__ float lg(float v) { return logf(v); }
__device__ __forceinline__ double lg(double v) { return log(v); }
template <typename C> __device__ __forceinline__ C ninf() { return -(C)INFINITY; }
/* max ignoring NaN, as the CPU's row max (a NaN still poisons the sum) */
template <typename C> __device__ __forceinline__ C vmax(C a, C b) { return b > a ? b : a; }

template <typename C, int W> __device__ __forceinline__ C group_max(C v)
{
#pragma unroll
    for (int o = W / 2; o > 0; o /= 2) v = vmax(v, __shfl_xor_sync(0xffffffffu, v, o, W));
    return v;
}
template <typename C, int W> __device__ __forceinline__ C group_sum(C v)
{
#pragma unroll
    for (int o = W / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o, W);
    return v;
}

/* ---- online (max, sum of exp(x - max)) for the block and thread paths ---- */
template <typename C> struct MS {
    C m, s;
};
template <typename C> __device__ __forceinline__ void ms_add(MS<C> &a, C x)
{
    if (x > a.m) {
        a.s = a.s * ex(a.m - x) + ex(x - x); /* exp(x - x): 1, or NaN for +inf as on the CPU */
        a.m = x;
    } else if (x != ninf<C>()) { /* a -inf adds exp(-inf - max) = 0 unless every max is -inf (ms_final) */
        a.s += ex(x - a.m);
    }
}
template <typename C> __device__ __forceinline__ MS<C> ms_merge(MS<C> a, MS<C> b)
{
    C m = vmax(a.m, b.m);
    C sa = a.s == (C)0 ? (C)0 : a.s * ex(a.m - m), sb = b.s == (C)0 ? (C)0 : b.s * ex(b.m - m);
    return MS<C>{m, sa + sb};
}
/* a row whose max is -inf has a NaN sum on the CPU (exp(-inf - -inf)) */
template <typename C> __device__ __forceinline__ void ms_final(MS<C> &a)
{
    if (a.m == ninf<C>()) a.s = (C)NAN;
}

/* ---- 16-byte vectors: V values of T at element i of a unit-stride row ---- */
template <typename T, int V> struct alignas(sizeof(T) * V) Vec {
    T v[V];
};
template <typename T, typename C, int V> __device__ __forceinline__ void load_vec(C *dst, const T *row, int64_t i)
{
    Vec<T, V> q = *(const Vec<T, V> *)(row + i);
#pragma unroll
    for (int j = 0; j < V; j++) dst[j] = to_acc<C>(q.v[j]);
}
template <typename T, typename C, int V> __device__ __forceinline__ void store_vec(T *row, int64_t i, const C *src)
{
    Vec<T, V> q;
#pragma unroll
    for (int j = 0; j < V; j++) q.v[j] = from_acc<T>(src[j]);
    *(Vec<T, V> *)(row + i) = q;
}

} // namespace nn_smx
