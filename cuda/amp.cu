/* GradScaler kernels on CUDA (semantics in engine/amp.h, list layout in ops.def).
 *
 * amp_unscale: multi-tensor, one launch for the whole gradient list. The launch
 * carries a table of the gradients (address, length, dtype) as one __grid_constant__
 * parameter, so nothing is copied to the device; each gradient is cut into chunks of
 * CHUNK elements, one block per chunk, and a block finds its gradient by binary search
 * over the running chunk counts. float32 chunks whose address is 16-byte aligned go
 * four elements at a time. A block that met an inf or nan sets *found_inf = 1 (every
 * writer writes the same value). inv_scale is read on the device: nothing syncs.
 * A list longer than MAX_T gradients takes one launch per MAX_T; a gradient that is
 * not dense (strides not a permutation of contiguous ones) is unscaled through a
 * contiguous scratch copy, copied back after the launch.
 *
 * Without inv_scale the pass only reads; a u8 entry is cast_check's flags, found where nonzero.
 *
 * cast_check: a dense float cast whose blocks also write one flag each, whether they met an
 * inf or nan (engine/amp.h's nn_cast_checked).
 *
 * amp_update_scale: one thread updates the scale and the growth tracker in place.
 *
 * foreach_sumsq: the same chunked walk over a tensor list, each block adding the sum of the
 * squares of its chunk (float per thread, double across threads) to a double accumulator
 * (gradient clipping's 2-norm). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "copy.cuh"
#include "ew.cuh"
#include "memory_format.h"

namespace {

constexpr int MAX_T = 640;
constexpr int64_t CHUNK = 16384;
constexpr int THREADS = 256;

struct Entry {
    void *p;
    int64_t n;
    int dt;
    int vec; /* float32 and 16-byte aligned */
};

struct Table {
    int nt;
    float *found;
    const float *inv;
    double *acc; /* foreach_sumsq */
    int64_t first[MAX_T + 1]; /* first chunk of each entry; first[nt] = total chunks */
    Entry e[MAX_T];
};

template <typename T> __device__ __forceinline__ bool scale_one(T *p, int64_t j, float inv)
{
    float v = nn_to_float(p[j]);
    if (inv != 1.f) p[j] = nn_from_float<T>(v * inv);
    return !isfinite(v);
}
template <> __device__ __forceinline__ bool scale_one<double>(double *p, int64_t j, float inv)
{
    double v = p[j];
    if (inv != 1.f) p[j] = v * (double)inv;
    return !isfinite(v);
}

template <typename T> __device__ bool scale_range(T *p, int64_t lo, int64_t hi, float inv)
{
    bool found = false;
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) found |= scale_one(p, j, inv);
    return found;
}

/* float32, p + lo 16-byte aligned */
__device__ bool scale_range_vec(float *p, int64_t lo, int64_t hi, float inv)
{
    bool found = false;
    int64_t nv = (hi - lo) / 4;
    float4 *q = (float4 *)(p + lo);
    for (int64_t j = threadIdx.x; j < nv; j += blockDim.x) {
        float4 v = q[j];
        found |= !isfinite(v.x) | !isfinite(v.y) | !isfinite(v.z) | !isfinite(v.w);
        if (inv != 1.f) {
            v.x *= inv, v.y *= inv, v.z *= inv, v.w *= inv;
            q[j] = v;
        }
    }
    return found | scale_range(p, lo + nv * 4, hi, inv);
}

/* The entry block b works on, and its chunk [*start, *end). */
__device__ const Entry &chunk_of(const Table &t, int64_t b, int64_t *start, int64_t *end)
{
    int lo = 0, hi = t.nt - 1; /* the last entry whose first chunk is <= b */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (t.first[mid] <= b) lo = mid;
        else hi = mid - 1;
    }
    const Entry &e = t.e[lo];
    *start = (b - t.first[lo]) * CHUNK, *end = *start + CHUNK < e.n ? *start + CHUNK : e.n;
    return e;
}

__global__ void __launch_bounds__(THREADS) unscale_kernel(const __grid_constant__ Table t)
{
    int64_t start, end;
    const Entry &e = chunk_of(t, blockIdx.x, &start, &end);
    const float inv = t.inv ? *t.inv : 1.f;
    bool found;
    switch (e.dt) {
    case NN_F32: found = e.vec ? scale_range_vec((float *)e.p, start, end, inv) : scale_range((float *)e.p, start, end, inv); break;
    case NN_F64: found = scale_range((double *)e.p, start, end, inv); break;
    case NN_F16: found = scale_range((__half *)e.p, start, end, inv); break;
    case NN_BF16: found = scale_range((__nv_bfloat16 *)e.p, start, end, inv); break;
    default: /* u8: cast_check's flags */
        found = false;
        for (int64_t j = start + threadIdx.x; j < end; j += blockDim.x) found |= ((const uint8_t *)e.p)[j] != 0;
        break;
    }
    if (__syncthreads_or(found) && threadIdx.x == 0) *t.found = 1.f;
}

template <typename T> __device__ double sumsq_range(const T *p, int64_t lo, int64_t hi)
{
    float sum = 0;
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
        float v = nn_to_float(p[j]);
        sum += v * v;
    }
    return sum;
}
template <> __device__ double sumsq_range<double>(const double *p, int64_t lo, int64_t hi)
{
    double sum = 0;
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) sum += p[j] * p[j];
    return sum;
}

__global__ void __launch_bounds__(THREADS) sumsq_kernel(const __grid_constant__ Table t)
{
    int64_t start, end;
    const Entry &e = chunk_of(t, blockIdx.x, &start, &end);
    double sum;
    switch (e.dt) {
    case NN_F32:
        if (e.vec) { /* 16-byte aligned: four at a time */
            int64_t nv = (end - start) / 4;
            const float4 *q = (const float4 *)((const float *)e.p + start);
            float f = 0;
            for (int64_t j = threadIdx.x; j < nv; j += blockDim.x) {
                float4 v = q[j];
                f += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
            }
            sum = f + sumsq_range((const float *)e.p, start + nv * 4, end);
        } else {
            sum = sumsq_range((const float *)e.p, start, end);
        }
        break;
    case NN_F64: sum = sumsq_range((const double *)e.p, start, end); break;
    case NN_F16: sum = sumsq_range((const __half *)e.p, start, end); break;
    default: sum = sumsq_range((const __nv_bfloat16 *)e.p, start, end); break;
    }
    for (int o = 16; o; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o);
    __shared__ double warp[THREADS / 32];
    if ((threadIdx.x & 31) == 0) warp[threadIdx.x / 32] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < THREADS / 32; w++) sum += warp[w];
        atomicAdd(t.acc, sum);
    }
}

__global__ void update_kernel(float *scale, int32_t *tracker, const float *found, double growth, double backoff, int64_t interval)
{
    if (*found) {
        *scale = (float)(*scale * backoff);
        *tracker = 0;
        return;
    }
    int64_t successful = (int64_t)*tracker + 1;
    if (successful == interval) {
        float grown = (float)(*scale * growth);
        if (isfinite(grown)) *scale = grown; /* never past float32's range */
        *tracker = 0;
    } else {
        *tracker = (int32_t)successful;
    }
}

nn_status copy(nn_tensor *dst, nn_tensor *src)
{
    nn_kargs c{};
    c.op = NN_OP_copy;
    c.out[0] = dst;
    c.in[0] = src;
    c.nin = 1;
    return nn_dispatch(&c);
}

/* contiguous copies of gradients that are not dense, copied back after the launch */
struct Scratch {
    nn_tensor *orig[MAX_T], *tmp[MAX_T];
    int n = 0;
    ~Scratch()
    {
        for (int k = 0; k < n; k++) nn_release(tmp[k]);
    }
    nn_status flush(bool copy_back)
    {
        nn_status st = NN_OK;
        for (int k = 0; k < n; k++) {
            if (!st && copy_back) st = copy(orig[k], tmp[k]);
            nn_release(tmp[k]);
        }
        n = 0;
        return st;
    }
};

/* t.acc set: foreach_sumsq, which only reads (its scratch copies are dropped, not copied back) */
nn_status launch(Table &t, Scratch &sc, cudaStream_t s)
{
    if (t.nt) {
        int64_t blocks = t.first[t.nt];
        if (blocks > 0x7fffffff) return nn_error(NN_ERR_ARG, "amp_unscale: too many elements for one launch");
        if (t.acc) sumsq_kernel<<<(unsigned)blocks, THREADS, 0, s>>>(t);
        else unscale_kernel<<<(unsigned)blocks, THREADS, 0, s>>>(t);
        NN_CHECK_LAUNCH();
    }
    t.nt = 0;
    return sc.flush(!t.acc);
}

thread_local Table table; /* about 20 KiB: one per thread, reused */

/* The list of a (dense entries in place, others through scratch copies), in launches of MAX_T. */
nn_status run_list(const nn_kargs *a, Table &t, cudaStream_t s)
{
    t.nt = 0;
    t.first[0] = 0;
    Scratch sc;
    for (int k = 0; k < a->nlist; k++) {
        nn_tensor *g = a->list[k];
        if (!nn_dtype_is_float(g->dtype) && !(g->dtype == NN_U8 && nn_is_dense(g) && !t.acc)) return nn_not_implemented(a, g->dtype);
        int64_t n = nn_numel(g);
        if (n == 0) continue;
        void *p = nn_data(g);
        if (!nn_is_dense(g)) {
            nn_tensor *c = nn_empty(g->ndim, g->shape, g->dtype, g->storage->device);
            if (!c) return nn_last_status();
            if (copy(c, g)) {
                nn_release(c);
                return nn_last_status();
            }
            sc.orig[sc.n] = g, sc.tmp[sc.n++] = c;
            p = nn_data(c);
        }
        Entry e;
        e.p = p;
        e.n = n;
        e.dt = g->dtype;
        e.vec = g->dtype == NN_F32 && (uintptr_t)p % 16 == 0;
        t.e[t.nt] = e;
        t.first[t.nt + 1] = t.first[t.nt] + (n + CHUNK - 1) / CHUNK;
        if (++t.nt == MAX_T && launch(t, sc, s)) return nn_last_status();
    }
    return launch(t, sc, s);
}

} // namespace

extern "C" nn_status nn_cuda_amp_unscale(const nn_kargs *a)
{
    int dev = nn_cuda_index(a);
    if (!nn_cuda_dev(dev)) return nn_last_status();
    Table &t = table;
    t.found = (float *)nn_data(a->out[0]);
    t.inv = a->nin ? (const float *)nn_data(a->in[0]) : NULL;
    t.acc = NULL;
    return run_list(a, t, nn_cuda_stream(dev));
}

extern "C" nn_status nn_cuda_foreach_sumsq(const nn_kargs *a)
{
    int dev = nn_cuda_index(a);
    if (!nn_cuda_dev(dev)) return nn_last_status();
    if (a->out[0]->dtype != NN_F64 || nn_numel(a->out[0]) != 1) return nn_error(NN_ERR_ARG, "foreach_sumsq: expected a 1-element float64 out");
    Table &t = table;
    t.found = NULL;
    t.inv = NULL;
    t.acc = (double *)nn_data(a->out[0]);
    return run_list(a, t, nn_cuda_stream(dev));
}

extern "C" nn_status nn_cuda_amp_update_scale(const nn_kargs *a)
{
    int dev = nn_cuda_index(a);
    if (!nn_cuda_dev(dev)) return nn_last_status();
    update_kernel<<<1, 1, 0, nn_cuda_stream(dev)>>>((float *)nn_data(a->out[0]), (int32_t *)nn_data(a->out[1]), (const float *)nn_data(a->in[0]),
                                                    a->f[0], a->f[1], a->i[0]);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

extern "C" nn_status nn_cuda_cast_check(const nn_kargs *a)
{
    int dev = nn_cuda_index(a);
    if (!nn_cuda_dev(dev)) return nn_last_status();
    nn_tensor *out = a->out[0], *flags = a->out[1];
    const nn_tensor *in = a->in[0];
    int64_t n = nn_numel(out), blocks = nn_numel(flags);
    if (!nn_is_dense(out) || !nn_same_strides(out, in) || blocks < 1 || blocks > 65535 || flags->dtype != NN_U8)
        return nn_error(NN_ERR_ARG, "cast_check: expected dense tensors of one layout and 1 to 65535 u8 flags");
    cudaStream_t s = nn_cuda_stream(dev);
    uint8_t *f = (uint8_t *)nn_data(flags);
    bool ok = nn_cuda_cast_dense(nn_data(out), out->dtype, nn_data(in), in->dtype, n, f, (unsigned)blocks, s);
    if (!ok) return nn_not_implemented(a, in->dtype);
    NN_CHECK_LAUNCH();
    return NN_OK;
}
