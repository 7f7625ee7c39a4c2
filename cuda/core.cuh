/* The CUDA backend's shared internals: error checks, per-device state (stream,
 * library handles), strided indexing for kernels and dtype dispatch.
 * Only cuda/ includes CUDA headers; the engine sees the backend through
 * nn_register_backend and nn_gpu (engine/device.h). */
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <atomic>

extern "C" {
#include "backend.h"
#include "cpu/iter.h"
#include "device.h"
}

/* ---- errors: one check for cudaError_t, cublasStatus_t and cudnnStatus_t (NCCL adds its overload) ---- */
nn_status nn_cuda_fail(const char *lib, const char *what, const char *expr, const char *file, int line);
inline nn_status nn_check(cudaError_t e, const char *expr, const char *file, int line)
{
    return e == cudaSuccess ? NN_OK : nn_cuda_fail("CUDA", cudaGetErrorString(e), expr, file, line);
}
inline nn_status nn_check(cublasStatus_t e, const char *expr, const char *file, int line)
{
    return e == CUBLAS_STATUS_SUCCESS ? NN_OK : nn_cuda_fail("cuBLAS", cublasGetStatusString(e), expr, file, line);
}
inline nn_status nn_check(cudnnStatus_t e, const char *expr, const char *file, int line)
{
    return e == CUDNN_STATUS_SUCCESS ? NN_OK : nn_cuda_fail("cuDNN", cudnnGetErrorString(e), expr, file, line);
}
#define NN_CHECK(expr)                                                        \
    do {                                                                      \
        nn_status nn_s_ = nn_check((expr), #expr, __FILE__, __LINE__);        \
        if (nn_s_) return nn_s_;                                              \
    } while (0)
/* after a kernel launch */
#define NN_CHECK_LAUNCH() NN_CHECK(cudaGetLastError())

/* ---- per-device state, created on first use ---- */
struct nn_cuda_device {
    cudaStream_t default_stream; /* a created stream: ops run here unless a user stream is current */
    cudaStream_t current;
    cublasHandle_t cublas;
    cublasLtHandle_t lt;
    cudnnHandle_t cudnn;
    cudaStream_t cudnn_stream; /* the stream last set on cudnn (nn_cudnn_on) */
    void *workspace; /* for cuBLASLt and cuDNN, grown on demand */
    size_t workspace_size;
    int sm_count;
    cudaEvent_t xfer;  /* orders copies between this device and a peer; created on first use */
    unsigned peers;    /* bit i: peer access to device i enabled (or found impossible) */
};
/* The state of device index (initialising it; NULL with the error set on failure). */
nn_cuda_device *nn_cuda_dev(int index);

/* ---- deferred small ops (small_ops.cu) ---- */
enum { NN_SMALL_MAX = 2048 }; /* elements: one block of 1024 threads does the op in two rounds at most */
/* out = a op b (add sub mul div maximum minimum threshold_backward sigmoid_ and tanh_backward) on n contiguous elements of
 * dt (float32, float16 or bfloat16), each input a tensor (IN_TENSOR), a value (IN_VALUE: va/vb)
 * or one broadcast element (IN_DEVSCALAR) */
struct nn_small_op {
    void *out;
    const void *a, *b;
    double alpha;
    float va, vb;
    int n;
    uint8_t op, dt, ma, mb; /* op: the nn_op */
};
static_assert(NN_OP_COUNT <= 256, "nn_small_op keeps the op in a byte");
/* Queue op on device index's current stream; false where queueing is off (then launch it). */
bool nn_small_defer(int index, const nn_small_op &op);
extern std::atomic<unsigned> nn_small_pending; /* bit i: device i has queued ops */
/* Launch every queued op: before anything else uses a stream, or memory goes back to the driver. */
void nn_small_flush_all(void);

/* The stream ops on device index run on now, with the queued small ops launched on it first. */
cudaStream_t nn_cuda_stream(int index);
/* The same for a device's state at hand. */
inline cudaStream_t nn_cuda_current(nn_cuda_device *d)
{
    if (nn_small_pending.load(std::memory_order_relaxed)) nn_small_flush_all();
    return d->current;
}
/* Make index the CUDA runtime's current device for this thread. */
nn_status nn_cuda_set(int index);
/* An nn_gpu_stream handle to stream s of device (nn_gpu->stream_free drops the handle, not s). */
nn_gpu_stream *nn_cuda_stream_handle(cudaStream_t s, int device);
/* The device's cuDNN handle set to stream s: cudnnSetStream costs microseconds, so only when
 * s differs from the last stream set (every user of the handle goes through here). */
inline nn_status nn_cudnn_on(nn_cuda_device *d, cudaStream_t s)
{
    if (d->cudnn_stream == s) return NN_OK;
    NN_CHECK(cudnnSetStream(d->cudnn, s));
    d->cudnn_stream = s;
    return NN_OK;
}
/* Scratch memory on the device's current stream, at least n bytes, valid until the next call. */
void *nn_cuda_workspace(int index, size_t n);

/* An index/target error a kernel found in an earlier call (index.cu): reported at the
 * next synchronisation point, since kernels cannot return errors without a sync. */
extern "C" nn_status nn_cuda_check_kernel_errors(void);

/* The caching allocator (allocator.cu) */
void *nn_cuda_alloc(int device, size_t n);
void nn_cuda_free(int device, void *p);
nn_status nn_cuda_record_stream_ptr(void *p, cudaStream_t s);
/* Pinned host memory, cached (host_alloc.cu); record: a copy on s uses host address p. */
void *nn_cuda_host_alloc(size_t n);
void nn_cuda_host_free(void *p);
nn_status nn_cuda_host_record(const void *p, cudaStream_t s);
void nn_cuda_host_empty_cache(void);
/* introspection (allocator.cu, host_alloc.cu) for introspect.cu */
nn_gpu_block *nn_cuda_memory_blocks(int *n);
int nn_cuda_owner(void *p); /* the device whose allocator handed out p, or -1 */
void nn_cuda_reset_accumulated(int device);
void nn_cuda_host_stats(nn_gpu_host_stats *s);
void nn_cuda_host_reset(bool peak);
/* the sync debug mode's check where the host waits for the device (introspect.cu): an error in mode 2 */
nn_status nn_cuda_sync_check(void);
void nn_cuda_introspect(nn_gpu_api *api); /* fills the debugging and introspection entries */
/* CUDA graphs' private memory pools: while captures[device] names pool p and stream s,
 * requests on s are served from p. A pool lives while graphs use it (retain/release). */
struct nn_cuda_pool;
nn_cuda_pool *nn_cuda_pool_new(int device);
void nn_cuda_pool_retain(nn_cuda_pool *p);
void nn_cuda_pool_release(nn_cuda_pool *p);
void nn_cuda_pool_capture(int device, nn_cuda_pool *p, cudaStream_t s); /* p NULL: the capture ended */
int nn_cuda_captures(void); /* graphs capturing now */
void nn_cuda_profiler_marks(nn_gpu_api *api); /* fills the profiler and NVTX entries (profiler_marks.cu) */
/* cuDNN's RNN (rnn.cu) into the GPU API */
extern "C" void nn_cuda_rnn_register(nn_gpu_api *api);
int nn_cudnn_version(void); /* cuda/cudnn.cu: the loaded library's */
int nn_nccl_version(void);  /* cuda/nccl.cu: the loaded library's, 0 in a build without NCCL */

/* ---- kernels: strided offsets ---- */
/* Byte offsets of up to 4 operands for a linear element index, from an nn_iter. */
struct nn_cuda_offsets {
    int ndim;
    bool fast; /* indices below 2^31: each dim's division is a multiply-high and a shift (mul, shift) */
    int64_t shape[NN_MAX_DIMS];
    int64_t strides[NN_ITER_MAX_OPS][NN_MAX_DIMS];
    uint32_t mul[NN_MAX_DIMS], shift[NN_MAX_DIMS];
};
/* n / d == (umulhi(n, m) + n) >> s for 0 <= n < 2^31, with s = ceil(log2 d) and
 * m = 2^32 (2^s - d) / d + 1 (Granlund and Montgomery): a hardware 64-bit division costs tens of
 * instructions, and strided copies and fills were bound by them */
inline void nn_cuda_div32(int64_t d, uint32_t *m, uint32_t *s)
{
    uint32_t k = 0;
    while ((1ull << k) < (uint64_t)d) k++;
    *s = k;
    *m = (uint32_t)(((1ull << 32) * ((1ull << k) - (uint64_t)d)) / (uint64_t)d + 1);
}
inline nn_cuda_offsets nn_cuda_offsets_of(const nn_iter &it)
{
    nn_cuda_offsets o;
    o.ndim = it.ndim < 0 ? 0 : it.ndim;
    int64_t n = 1;
    for (int d = 0; d < o.ndim; d++) {
        o.shape[d] = it.shape[d];
        n *= it.shape[d];
        for (int k = 0; k < it.nops; k++) o.strides[k][d] = it.strides[k][d];
        nn_cuda_div32(it.shape[d] > 0 ? it.shape[d] : 1, &o.mul[d], &o.shift[d]);
    }
    o.fast = n < ((int64_t)1 << 31);
    return o;
}
template <int NOPS>
__device__ __forceinline__ void nn_cuda_offsets_at(const nn_cuda_offsets &o, int64_t i, int64_t *off)
{
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] = 0;
    if (o.fast) {
        uint32_t u = (uint32_t)i;
        for (int d = o.ndim - 1; d >= 0; d--) {
            uint32_t q = (__umulhi(u, o.mul[d]) + u) >> o.shift[d], r = u - q * (uint32_t)o.shape[d];
#pragma unroll
            for (int k = 0; k < NOPS; k++) off[k] += (int64_t)r * o.strides[k][d];
            u = q;
        }
        return;
    }
    for (int d = o.ndim - 1; d >= 0; d--) {
        int64_t q = i / o.shape[d], r = i - q * o.shape[d];
#pragma unroll
        for (int k = 0; k < NOPS; k++) off[k] += r * o.strides[k][d];
        i = q;
    }
}

/* f(i, off) for each element i < n of the iteration o (off: its operands' byte offsets), U
 * elements of one row of the innermost dim a thread, whose offsets follow from the first's by
 * that dim's strides: the index arithmetic is paid once for U elements. In rows of 32 U or more a
 * warp takes 32 U neighbours, lane l the l-th of every 32 (each access then spans a warp's worth
 * of neighbours); in shorter rows a thread takes U neighbours. A grid of nn_cuda_chunks(o, n, U)
 * threads covers them (grid-stride beyond). */
inline int64_t nn_cuda_chunks(const nn_cuda_offsets &o, int64_t n, int U)
{
    int64_t inner = o.ndim ? o.shape[o.ndim - 1] : 1;
    if (!inner) return 0;
    return inner >= 32 * U ? n / inner * ((inner + 32 * U - 1) / (32 * U)) * 32 : n / inner * ((inner + U - 1) / U);
}
template <int NOPS, int U, typename F>
__device__ __forceinline__ void nn_cuda_for_chunks(const nn_cuda_offsets &o, int64_t n, const F &f)
{
    const int64_t inner = o.ndim ? o.shape[o.ndim - 1] : 1;
    if (!inner) return;
    const bool warp = inner >= 32 * U;
    const int64_t span = warp ? 32 * U : U, per_row = (inner + span - 1) / span, total = n / inner * per_row * (warp ? 32 : 1);
    const int64_t gap = warp ? 32 : 1; /* between a thread's elements */
    int64_t step[NOPS];
#pragma unroll
    for (int k = 0; k < NOPS; k++) step[k] = (o.ndim ? o.strides[k][o.ndim - 1] : 0) * gap;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
        int64_t w = warp ? t >> 5 : t, lane = warp ? t & 31 : 0;
        int64_t row = o.fast ? (int64_t)((uint32_t)w / (uint32_t)per_row) : w / per_row, c = (w - row * per_row) * span + lane;
        if (c >= inner) continue;
        int64_t i = row * inner + c, off[NOPS];
        nn_cuda_offsets_at<NOPS>(o, i, off);
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (c + u * gap >= inner) break;
            f(i + u * gap, off);
#pragma unroll
            for (int k = 0; k < NOPS; k++) off[k] += step[k];
        }
    }
}

/* Launch geometry for n independent elements (grid-stride loops cover the rest). */
inline unsigned nn_cuda_blocks(int64_t n, int threads = 256)
{
    int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

/* ---- dtypes: element types and float compute ---- */
template <typename T> __device__ __forceinline__ float nn_to_float(T v) { return (float)v; }
template <> __device__ __forceinline__ float nn_to_float<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float nn_to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T nn_from_float(float v) { return (T)v; }
template <> __device__ __forceinline__ __half nn_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 nn_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
/* compute type: double for double, float for the float types */
template <typename T> struct nn_acc { typedef float type; };
template <> struct nn_acc<double> { typedef double type; };

/* Run BODY with scalar_t bound to the C++ type of a float dtype; others -> not implemented. */
#define NN_DISPATCH_FLOATS(DT, KARGS, ...)                                                \
    switch (DT) {                                                                         \
    case NN_F32: { typedef float scalar_t; __VA_ARGS__; } break;                          \
    case NN_F64: { typedef double scalar_t; __VA_ARGS__; } break;                         \
    case NN_F16: { typedef __half scalar_t; __VA_ARGS__; } break;                         \
    case NN_BF16: { typedef __nv_bfloat16 scalar_t; __VA_ARGS__; } break;                 \
    default: return nn_not_implemented(KARGS, DT);                                        \
    }

/* The device index of a kernel call (from its first output). */
inline int nn_cuda_index(const nn_kargs *a) { return a->out[0]->storage->device.index; }
