/* CUDA copy (any strides, any dtype pair), fills, arange and random fills.
 * Random numbers follow engine/cpu/random.c's recipe exactly (Philox4x32-10,
 * element j uses counter offset + j in row-major logical order), so a seed
 * gives the same numbers on the GPU as on the CPU. */
#include <math.h>

#include "complex_hooks.cuh"
#include "copy.cuh"
#include "ew.cuh"
#include "memory_format.h"
#include "philox.cuh"
#include "strided_copy.cuh"

namespace {

/* element access by runtime dtype: float types through double, integers through int64 */
__device__ __forceinline__ double load_f(const char *p, int dt)
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

__device__ __forceinline__ int64_t load_i(const char *p, int dt)
{
    switch (dt) {
    case NN_I64: return *(const int64_t *)p;
    case NN_I32: return *(const int32_t *)p;
    case NN_I16: return *(const int16_t *)p;
    case NN_I8: return *(const int8_t *)p;
    case NN_U8: return *(const uint8_t *)p;
    case NN_BOOL: return *(const uint8_t *)p != 0;
    default: return (int64_t)load_f(p, dt);
    }
}

__device__ __forceinline__ void store_f(char *p, int dt, double v)
{
    switch (dt) {
    case NN_F32: *(float *)p = (float)v; break;
    case NN_F64: *(double *)p = v; break;
    case NN_F16: *(__half *)p = __float2half_rn((float)v); break;
    case NN_BF16: *(__nv_bfloat16 *)p = __float2bfloat16_rn((float)v); break;
    case NN_I64: *(int64_t *)p = (int64_t)v; break;
    case NN_I32: *(int32_t *)p = (int32_t)(int64_t)v; break;
    case NN_I16: *(int16_t *)p = (int16_t)(int64_t)v; break;
    case NN_I8: *(int8_t *)p = (int8_t)(int64_t)v; break;
    case NN_U8: *(uint8_t *)p = (uint8_t)(int64_t)v; break;
    default: *(uint8_t *)p = v != 0; break;
    }
}

__device__ __forceinline__ void store_i(char *p, int dt, int64_t v)
{
    switch (dt) {
    case NN_I64: *(int64_t *)p = v; break;
    case NN_I32: *(int32_t *)p = (int32_t)v; break;
    case NN_I16: *(int16_t *)p = (int16_t)v; break;
    case NN_I8: *(int8_t *)p = (int8_t)v; break;
    case NN_U8: *(uint8_t *)p = (uint8_t)v; break;
    case NN_BOOL: *(uint8_t *)p = v != 0; break;
    default: store_f(p, dt, (double)v); break;
    }
}

__device__ __forceinline__ bool integral(int dt) { return !nnk::is_float_dt(dt); }

template <typename W>
__global__ void copy_same(W *dst, const W *src, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) dst[i] = src[i];
}

/* float64 to float16/bfloat16 goes through float32, as the CPU backend (and PyTorch) converts */
template <typename O, typename I> __device__ __forceinline__ O cast_one(I v)
{
    if constexpr (std::is_same<I, double>::value && sizeof(O) == 2) return nnk::st<O>((float)v);
    else return nnk::st<O>(nnk::ld(v));
}

/* a dense cast between float dtypes, N elements per access (16 bytes of the wider side); with
 * Check, block b also writes flags[b] = whether any value it cast came out inf or nan */
template <typename O, typename I, int N, bool Check>
__global__ void cast_dense(O *dst, const I *src, int64_t n, uint8_t *flags)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x, tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t nv = n / N;
    bool found = false;
    for (int64_t v = tid; v < nv; v += step) {
        nnk::Vec<I, N> x = ((const nnk::Vec<I, N> *)src)[v];
        nnk::Vec<O, N> y;
#pragma unroll
        for (int j = 0; j < N; j++) {
            y.v[j] = cast_one<O>(x.v[j]);
            if (Check) found |= !isfinite(nnk::ld(y.v[j]));
        }
        ((nnk::Vec<O, N> *)dst)[v] = y;
    }
    for (int64_t i = nv * N + tid; i < n; i += step) {
        dst[i] = cast_one<O>(src[i]);
        if (Check) found |= !isfinite(nnk::ld(dst[i]));
    }
    if (Check) {
        int any = __syncthreads_or(found);
        if (threadIdx.x == 0) flags[blockIdx.x] = any ? 1 : 0;
    }
}

template <typename O, typename I, bool Check> void launch_cast_as(void *dst, const void *src, int64_t n, uint8_t *flags, unsigned blocks, cudaStream_t s)
{
    constexpr int N = 16 / (sizeof(O) > sizeof(I) ? sizeof(O) : sizeof(I));
    bool vec = nnk::aligned16(dst) && nnk::aligned16(src);
    if (!Check) blocks = (unsigned)nnk::blocks_for((vec ? n / N : n) + 1);
    if (vec)
        nn_launch<cast_dense<O, I, N, Check>>(blocks, 256, s, (O *)dst, (const I *)src, n, flags);
    else
        nn_launch<cast_dense<O, I, 1, Check>>(blocks, 256, s, (O *)dst, (const I *)src, n, flags);
}

template <typename O, typename I> void launch_cast(void *dst, const void *src, int64_t n, uint8_t *flags, unsigned blocks, cudaStream_t s)
{
    if (flags) launch_cast_as<O, I, true>(dst, src, n, flags, blocks, s);
    else launch_cast_as<O, I, false>(dst, src, n, flags, blocks, s);
}

/* Launches a dense cast between two different float dtypes; false if not such a pair. */
template <typename O> bool cast_from(void *dst, const void *src, int dt_in, int64_t n, uint8_t *flags, unsigned blocks, cudaStream_t s)
{
    switch (dt_in) {
    case NN_F32: launch_cast<O, float>(dst, src, n, flags, blocks, s); return true;
    case NN_F64: launch_cast<O, double>(dst, src, n, flags, blocks, s); return true;
    case NN_F16: launch_cast<O, __half>(dst, src, n, flags, blocks, s); return true;
    case NN_BF16: launch_cast<O, __nv_bfloat16>(dst, src, n, flags, blocks, s); return true;
    default: return false;
    }
}

} // namespace

/* A dense cast of n elements between float dtypes (see cuda/copy.cuh); false if not such a pair. */
bool nn_cuda_cast_dense(void *dst, int dt_out, const void *src, int dt_in, int64_t n, uint8_t *flags, unsigned blocks, cudaStream_t s)
{
    switch (dt_out) {
    case NN_F32: return cast_from<float>(dst, src, dt_in, n, flags, blocks, s);
    case NN_F64: return cast_from<double>(dst, src, dt_in, n, flags, blocks, s);
    case NN_F16: return cast_from<__half>(dst, src, dt_in, n, flags, blocks, s);
    case NN_BF16: return cast_from<__nv_bfloat16>(dst, src, dt_in, n, flags, blocks, s);
    default: return false;
    }
}

namespace {

constexpr int CHUNK = 4; /* elements a thread in the strided copies and fills */

/* one element of a strided copy from dtype DI to any dtype. A kernel per input dtype: with both
 * dtypes read at run time, nvcc specialised one kernel for every pair and took many minutes. */
template <int DI> struct CopyOne {
    char *dst;
    const char *src;
    int dt_out, es;
    __device__ __forceinline__ void operator()(int64_t, const int64_t *off) const
    {
        char *d = dst + off[0];
        const char *s = src + off[1];
        if (dt_out == DI) {
            switch (es) {
            case 1: *(uint8_t *)d = *(const uint8_t *)s; break;
            case 2: *(uint16_t *)d = *(const uint16_t *)s; break;
            case 4: *(uint32_t *)d = *(const uint32_t *)s; break;
            default: *(uint64_t *)d = *(const uint64_t *)s; break;
            }
        } else if (integral(dt_out) && integral(DI)) store_i(d, dt_out, load_i(s, DI));
        else store_f(d, dt_out, load_f(s, DI));
    }
};

template <int DI> __global__ void copy_strided(CopyOne<DI> f, int64_t n, nn_cuda_offsets o) { nn_cuda_for_chunks<2, CHUNK>(o, n, f); }

template <int DI> void launch_copy(const nn_iter &it, int dt_out, int es, int64_t n, const nn_cuda_offsets &o, cudaStream_t s)
{
    nn_launch<copy_strided<DI>>(nn_cuda_blocks(nn_cuda_chunks(o, n, CHUNK)), 256, s, CopyOne<DI>{it.data[0], it.data[1], dt_out, es}, n, o);
}

int64_t iter_numel(const nn_iter &it)
{
    if (it.ndim < 0) return 0;
    int64_t n = 1;
    for (int d = 0; d < it.ndim; d++) n *= it.shape[d];
    return n;
}

} // namespace

extern "C" nn_status nn_cuda_copy(const nn_kargs *a)
{
    nn_tensor *ops[2] = {a->out[0], a->in[0]};
    int dev = nn_cuda_index(a);
    if (a->in[0]->storage->device.type != NN_CUDA)
        return nn_error(NN_ERR_DEVICE, "copy: the CUDA copy kernel needs both tensors on the GPU");
    nn_iter it;
    nn_iter_init(&it, 2, ops);
    int64_t n = iter_numel(it);
    if (!n) return NN_OK;
    cudaStream_t s = nn_cuda_stream(dev);
    int es = (int)nn_dtype_size(ops[0]->dtype);
    bool same = ops[0]->dtype == ops[1]->dtype;
    if (same && it.ndim == 1 && it.strides[0][0] == es && it.strides[1][0] == es && a->in[0]->storage->device.index == dev) {
        NN_CHECK(cudaMemcpyAsync(it.data[0], it.data[1], (size_t)n * es, cudaMemcpyDeviceToDevice, s));
        return NN_OK;
    }
    if (nn_cuda_any_complex(a)) return nn_cuda_complex_copy(a); /* its own kernel: see complex.cu */
    const nn_tensor *to = a->out[0], *from = a->in[0];
    nn_staging::Transpose t; /* an NCHW <-> channels-last copy */
    if (same && to->ndim == 4 && from->ndim == 4 && !memcmp(to->shape, from->shape, sizeof to->shape[0] * 4) && from->storage->device.index == dev &&
        nn_staging::as_batched_transpose(to->shape, to->strides, from->strides, &t) && nn_staging::transpose(nn_data(to), nn_data(from), t, es, s)) {
        NN_CHECK_LAUNCH();
        return NN_OK;
    }
    if (!same && nnk::iter_dense(it, 0) && nnk::iter_dense(it, 1) && a->in[0]->storage->device.index == dev &&
        nn_cuda_cast_dense(it.data[0], ops[0]->dtype, it.data[1], ops[1]->dtype, n, NULL, 0, s)) {
        NN_CHECK_LAUNCH();
        return NN_OK;
    }
    nn_cuda_offsets o = nn_cuda_offsets_of(it);
    switch (ops[1]->dtype) {
#define FROM(DT) case DT: launch_copy<DT>(it, ops[0]->dtype, es, n, o, s); break;
    FROM(NN_F32) FROM(NN_F64) FROM(NN_F16) FROM(NN_BF16) FROM(NN_I64) FROM(NN_I32) FROM(NN_I16) FROM(NN_I8) FROM(NN_U8) FROM(NN_BOOL)
#undef FROM
    default: return nn_error(NN_ERR_DTYPE, "copy: bad dtype %d", (int)ops[1]->dtype);
    }
    NN_CHECK_LAUNCH();
    return NN_OK;
}

/* ---- fills ---- */
namespace {

using nnk::philox;
using nnk::unit;

struct FillArgs {
    int op, dt;
    double a, b;        /* fill value / arange start, step / uniform lo, hi / normal mean, std */
    int64_t ivalue, low; /* integer fill value / randint low */
    uint64_t range, seed, offset;
};

/* element i (the logical index: random values follow it) of a fill */
struct FillOne {
    char *out;
    FillArgs f;
    __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const
    {
        char *p = out + off[0];
        bool wide = f.dt == NN_F64;
        switch (f.op) {
        case NN_OP_fill:
            if (integral(f.dt)) store_i(p, f.dt, f.ivalue);
            else store_f(p, f.dt, f.a);
            break;
        case NN_OP_arange:
            if (integral(f.dt)) store_i(p, f.dt, (int64_t)f.a + i * (int64_t)f.b);
            else store_f(p, f.dt, f.a + (double)i * f.b);
            break;
        case NN_OP_uniform: { /* as engine/cpu/random.c: round to the dtype, then a value at hi becomes lo */
            double u = unit(philox(f.offset + i, f.seed), wide);
            double v = __dadd_rn(f.a, __dmul_rn(u, __dadd_rn(f.b, -f.a))); /* no FMA: the CPU rounds twice */
            store_f(p, f.dt, v);
            if (load_f(p, f.dt) >= f.b && f.b > f.a) store_f(p, f.dt, f.a);
            break;
        }
        case NN_OP_normal: {
            uint4 w = philox(f.offset + i, f.seed);
            double u1 = 1.0 - unit(w, wide), u2 = unit(wide ? make_uint4(w.z, w.w, 0, 0) : make_uint4(w.y, 0, 0, 0), wide);
            store_f(p, f.dt, f.a + f.b * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
            break;
        }
        case NN_OP_dropout_noise: {
            int per = wide ? 2 : 4;
            store_f(p, f.dt, nnk::drop_u(philox(f.offset + i / per, f.seed), (int)(i % per), wide) < f.a ? f.b : 0.0);
            break;
        }
        default: { /* randint */
            uint4 w = philox(f.offset + i, f.seed);
            uint64_t r = f.range <= (1ull << 32) ? (uint64_t)w.x % f.range : (((uint64_t)w.x << 32) | w.y) % f.range;
            store_i(p, f.dt, f.low + (int64_t)r);
        }
        }
    }
};

__global__ void fill_kernel(FillOne f, int64_t n, nn_cuda_offsets o) { nn_cuda_for_chunks<1, CHUNK>(o, n, f); }

} // namespace

extern "C" nn_status nn_cuda_fill(const nn_kargs *a)
{
    nn_tensor *out = a->out[0];
    if (a->op == NN_OP_fill && nn_dtype_is_complex(out->dtype)) return nn_cuda_complex_fill(a);
    nn_iter it;
    nn_iter_init_logical(&it, 1, &out); /* random values follow the logical index, as on the CPU */
    int64_t n = iter_numel(it);
    if (!n) return NN_OK;
    FillArgs f{};
    f.op = a->op;
    f.dt = out->dtype;
    f.a = a->f[0];
    f.b = a->f[1];
    f.ivalue = a->i[1];
    f.seed = (uint64_t)a->i[1];
    f.offset = (uint64_t)a->i[2];
    f.low = a->i[0];
    f.range = (uint64_t)(a->i[3] - a->i[0]);
    if (a->op == NN_OP_arange && !nn_is_contiguous(out)) return nn_error(NN_ERR_ARG, "arange: the output must be contiguous");
    bool zero = nn_dtype_is_float(out->dtype) ? f.a == 0 && !signbit(f.a) : f.ivalue == 0;
    if (a->op == NN_OP_fill && zero && nn_is_dense(out)) { /* all bits zero: a memset, 3-6x faster than the kernel's stores */
        NN_CHECK(cudaMemsetAsync(nn_data(out), 0, (size_t)n * nn_dtype_size(out->dtype), nn_cuda_stream(nn_cuda_index(a))));
        return NN_OK;
    }
    nn_cuda_offsets o = nn_cuda_offsets_of(it);
    nn_launch<fill_kernel>(nn_cuda_blocks(nn_cuda_chunks(o, n, CHUNK)), 256, nn_cuda_stream(nn_cuda_index(a)), FillOne{it.data[0], f}, n, o);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

extern "C" void nn_cuda_manual_seed(uint64_t seed) { (void)seed; /* GPU fills draw from the engine's generator (engine/random.c) */ }
