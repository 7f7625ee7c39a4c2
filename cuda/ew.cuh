/* Helpers shared by the elementwise and reduction kernels (unary.cu, binary.cu,
 * elementwise.cu, reduce.cu): compute types, element loads and stores by
 * runtime dtype with the CPU kernels' conversions (the generic paths), aligned
 * vectors for 16-byte accesses, strided geometry with 32-bit index math, and
 * 0-dim CPU operands read on the host. */
#pragma once

#include <math.h>
#include <string.h>
#include <type_traits>

#include "kernels.cuh"

namespace nnk {

/* ---- compute types: float for float/half/bfloat16, double, int64 for every integer type ---- */
template <typename T> struct ctype { typedef T type; };
template <> struct ctype<__half> { typedef float type; };
template <> struct ctype<__nv_bfloat16> { typedef float type; };
template <> struct ctype<int32_t> { typedef int64_t type; };
template <> struct ctype<int16_t> { typedef int64_t type; };
template <> struct ctype<int8_t> { typedef int64_t type; };
template <> struct ctype<uint8_t> { typedef int64_t type; };

template <typename T> __device__ __forceinline__ typename ctype<T>::type ld(T v) { return (typename ctype<T>::type)v; }
template <> __device__ __forceinline__ float ld<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T, typename C> __device__ __forceinline__ T st(C v) { return (T)v; }
template <> __device__ __forceinline__ __half st<__half, float>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 st<__nv_bfloat16, float>(float v) { return __float2bfloat16_rn(v); }

template <typename T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };

/* ---- runtime-dtype loads into a compute type (as engine/cpu/elementwise.c's load()) ---- */
__device__ __forceinline__ double ld_f64(const char *p, int dt)
{
    switch (dt) {
    case NN_F32: return *(const float *)p;
    case NN_F64: return *(const double *)p;
    case NN_F16: return __half2float(*(const __half *)p);
    case NN_BF16: return __bfloat162float(*(const __nv_bfloat16 *)p);
    case NN_I64: return (double)*(const int64_t *)p;
    case NN_I32: return *(const int32_t *)p;
    case NN_I16: return *(const int16_t *)p;
    case NN_I8: return *(const int8_t *)p;
    case NN_U8: return *(const uint8_t *)p;
    default: return *(const uint8_t *)p != 0;
    }
}

__device__ __forceinline__ int64_t ld_i64(const char *p, int dt)
{
    switch (dt) {
    case NN_I64: return *(const int64_t *)p;
    case NN_I32: return *(const int32_t *)p;
    case NN_I16: return *(const int16_t *)p;
    case NN_I8: return *(const int8_t *)p;
    case NN_U8: return *(const uint8_t *)p;
    case NN_BOOL: return *(const uint8_t *)p != 0;
    default: {
        double v = ld_f64(p, dt);
        return isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : INT64_MIN;
    }
    }
}

/* an int64 value as integer dtype dt holds it (uint8: -1 is 255) */
__host__ __device__ __forceinline__ int64_t narrow(int64_t v, int dt)
{
    switch (dt) {
    case NN_I32: return (int32_t)v;
    case NN_I16: return (int16_t)v;
    case NN_I8: return (int8_t)v;
    case NN_U8: return (uint8_t)v;
    case NN_BOOL: return v != 0;
    default: return v;
    }
}

template <typename C> __device__ __forceinline__ C ld_dyn(const char *p, int dt, int cdt);
template <> __device__ __forceinline__ float ld_dyn<float>(const char *p, int dt, int)
{
    switch (dt) {
    case NN_F32: return *(const float *)p;
    case NN_F16: return __half2float(*(const __half *)p);
    case NN_BF16: return __bfloat162float(*(const __nv_bfloat16 *)p);
    case NN_I64: return (float)*(const int64_t *)p;
    default: return (float)ld_f64(p, dt);
    }
}
template <> __device__ __forceinline__ double ld_dyn<double>(const char *p, int dt, int) { return ld_f64(p, dt); }
template <> __device__ __forceinline__ int64_t ld_dyn<int64_t>(const char *p, int dt, int cdt)
{
    int64_t v = ld_i64(p, dt);
    return dt == cdt ? v : narrow(v, cdt);
}

/* ---- runtime-dtype stores of a result (as engine/cpu/elementwise.c's store()) ---- */
__device__ __forceinline__ void st_int(char *p, int dt, int64_t v) /* dt an integer dtype */
{
    switch (dt) {
    case NN_I64: *(int64_t *)p = v; break;
    case NN_I32: *(int32_t *)p = (int32_t)v; break;
    case NN_I16: *(int16_t *)p = (int16_t)v; break;
    case NN_I8: *(int8_t *)p = (int8_t)v; break;
    case NN_U8: *(uint8_t *)p = (uint8_t)v; break;
    default: *(uint8_t *)p = v != 0; break;
    }
}
__device__ __forceinline__ void st_float(char *p, int dt, double v) /* dt a float dtype */
{
    switch (dt) {
    case NN_F32: *(float *)p = (float)v; break;
    case NN_F64: *(double *)p = v; break;
    case NN_F16: *(__half *)p = __float2half_rn((float)v); break;
    default: *(__nv_bfloat16 *)p = __float2bfloat16_rn((float)v); break;
    }
}
__device__ __forceinline__ bool is_float_dt(int dt) { return dt == NN_F32 || dt == NN_F64 || dt == NN_F16 || dt == NN_BF16; }
__device__ __forceinline__ void st_f64(char *p, int dt, double v)
{
    if (is_float_dt(dt)) st_float(p, dt, v);
    else if (dt == NN_BOOL) *(uint8_t *)p = v != 0;
    else st_int(p, dt, isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : INT64_MIN);
}
__device__ __forceinline__ void st_i64(char *p, int dt, int64_t v)
{
    if (is_float_dt(dt)) st_float(p, dt, (double)v);
    else st_int(p, dt, v);
}
__device__ __forceinline__ void st_dyn(char *p, int dt, float v)
{
    switch (dt) {
    case NN_F32: *(float *)p = v; break;
    case NN_F16: *(__half *)p = __float2half_rn(v); break;
    case NN_BF16: *(__nv_bfloat16 *)p = __float2bfloat16_rn(v); break;
    default: st_f64(p, dt, v); break;
    }
}
__device__ __forceinline__ void st_dyn(char *p, int dt, double v) { st_f64(p, dt, v); }
__device__ __forceinline__ void st_dyn(char *p, int dt, int64_t v) { st_i64(p, dt, v); }
__device__ __forceinline__ void st_dyn(char *p, int dt, bool v) { st_i64(p, dt, v); }

/* ---- strided geometry: byte offsets of NOPS operands for a linear element index ----
 * Below 2^31 elements the index is split with 32-bit multiply-high division by
 * precomputed magic numbers (m, s with q = (umulhi(n, m) + n) >> s, exact for
 * n, d < 2^31); above, with 64-bit division. */
template <int NOPS> struct Geo {
    int ndim;
    bool small;
    uint32_t shape[NN_MAX_DIMS], magic[NN_MAX_DIMS], shift[NN_MAX_DIMS];
    int64_t lshape[NN_MAX_DIMS];
    int64_t strides[NOPS][NN_MAX_DIMS];
};

template <int NOPS> __device__ __forceinline__ void geo_offsets(const Geo<NOPS> &g, int64_t i, int64_t *off)
{
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] = 0;
    if (g.small) {
        uint32_t u = (uint32_t)i;
        for (int d = g.ndim - 1; d > 0; d--) {
            uint32_t q = (__umulhi(u, g.magic[d]) + u) >> g.shift[d], r = u - q * g.shape[d];
#pragma unroll
            for (int k = 0; k < NOPS; k++) off[k] += (int64_t)r * g.strides[k][d];
            u = q;
        }
        i = u;
    } else {
        for (int d = g.ndim - 1; d > 0; d--) {
            int64_t q = i / g.lshape[d], r = i - q * g.lshape[d];
#pragma unroll
            for (int k = 0; k < NOPS; k++) off[k] += r * g.strides[k][d];
            i = q;
        }
    }
    if (g.ndim > 0) {
#pragma unroll
        for (int k = 0; k < NOPS; k++) off[k] += i * g.strides[k][0];
    }
}

/* Host side: the iteration's element count (0 when empty) and its geometry. */
inline int64_t iter_numel(const nn_iter &it)
{
    if (it.ndim < 0) return 0;
    int64_t n = 1;
    for (int d = 0; d < it.ndim; d++) n *= it.shape[d];
    return n;
}

template <int NOPS> inline Geo<NOPS> geo_of(const nn_iter &it)
{
    Geo<NOPS> g;
    memset(&g, 0, sizeof g);
    g.ndim = it.ndim < 0 ? 0 : it.ndim;
    g.small = iter_numel(it) < (int64_t(1) << 31);
    for (int d = 0; d < g.ndim; d++) {
        int64_t n = it.shape[d];
        g.lshape[d] = n;
        g.shape[d] = (uint32_t)n;
        uint32_t s = 0;
        while (s < 32 && (int64_t(1) << s) < n) s++;
        g.shift[d] = s;
        g.magic[d] = g.small ? (uint32_t)(((uint64_t(1) << 32) * ((uint64_t(1) << s) - (uint64_t)n)) / (uint64_t)n + 1) : 0;
        for (int k = 0; k < NOPS; k++) g.strides[k][d] = it.strides[k][d];
    }
    return g;
}

/* an input operand of an elementwise kernel */
enum { IN_TENSOR = 0, IN_VALUE = 1 /* a host scalar, in val */, IN_DEVSCALAR = 2 /* one device element, read once */ };
template <typename C> struct Operand {
    const char *p;
    C val;
    int mode;
    int dt;
};

/* A 0-dim CPU tensor (a Lua number) joining a CUDA op. */
inline bool host_scalar(const nn_tensor *t) { return t->storage->device.type == NN_CPU; }

/* Is every dim of operand k broadcast (stride 0) in the iteration? */
inline bool iter_broadcast(const nn_iter &it, int k)
{
    for (int d = 0; d < it.ndim; d++)
        if (it.strides[k][d] != 0) return false;
    return true;
}

/* Contiguous in the iteration's order: one dim (or none) with the element's own size as stride. */
inline bool iter_dense(const nn_iter &it, int k)
{
    return it.ndim == 0 || (it.ndim == 1 && it.strides[k][0] == (int64_t)nn_dtype_size(it.dtype[k]));
}

inline bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

inline unsigned blocks_for(int64_t n, int threads = 256)
{
    int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

} // namespace nnk

namespace nnk {

/* b^e with wrapping int64 arithmetic; negative e as PyTorch's integer pow (0 unless |b| == 1) */
__device__ __forceinline__ int64_t ipow(int64_t b, int64_t e)
{
    if (e < 0) return b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)b;
    for (; e; e >>= 1, x *= x)
        if (e & 1) r *= x;
    return (int64_t)r;
}

/* libm by type (the float versions for float compute, as the CPU kernels use) */
__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return log(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double m_abs(double x) { return fabs(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_erf(float x) { return erff(x); }
__device__ __forceinline__ double m_erf(double x) { return erf(x); }
__device__ __forceinline__ float m_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double m_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float m_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double m_pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float m_fmod(float x, float y) { return fmodf(x, y); }
__device__ __forceinline__ double m_fmod(double x, double y) { return fmod(x, y); }

/* A host value for an operand of compute type C (a 0-dim CPU tensor), as the CPU kernels load it. */
template <typename C> inline C host_value(const nn_tensor *t, int cdt);
template <> inline float host_value<float>(const nn_tensor *t, int)
{
    return t->dtype == NN_I64 ? (float)nn_load_i64(nn_data(t), t->dtype) : (float)nn_load_f64(nn_data(t), t->dtype);
}
template <> inline double host_value<double>(const nn_tensor *t, int) { return nn_load_f64(nn_data(t), t->dtype); }
template <> inline int64_t host_value<int64_t>(const nn_tensor *t, int cdt)
{
    int64_t v = nn_load_i64(nn_data(t), t->dtype);
    return (int)t->dtype == cdt ? v : narrow(v, cdt);
}

} // namespace nnk
