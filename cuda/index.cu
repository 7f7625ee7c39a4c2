/* CUDA index_select and index_add along dim i[0] (engine/cpu/index.c's
 * semantics), and the deferred reporting of indices a kernel found out of range.
 *
 * Both ops map an element of the iterated tensor (index_select: the output,
 * index_add: the source) to the indexed tensor by replacing its coordinate k
 * along dim with index[k]. Contiguous operands take a row kernel: one group of
 * 32 lanes per (outer, k) row, copying 16/8/4/2/1-byte units (index_select) or
 * adding elements (index_add); anything else takes a per-element kernel over
 * arbitrary strides. index_add accumulates with atomics, so repeated indices add
 * up (in an unspecified order, as on PyTorch's GPU): float/double/half/bfloat16
 * atomicAdd (pairs of halves as __half2 where the rows allow), wrapping integer
 * atomics, and 32-bit compare-and-swap for uint8 (bool: atomicOr).
 *
 * Index errors: a kernel cannot return one without a host-device sync per op.
 * A bad index is skipped (index_select writes zeros) and the kernel records it
 * in a word of host-mapped pinned memory; the next call of a CUDA index or
 * nll_loss kernel (or nn_cuda_check_kernel_errors) reads that word, without a
 * sync, and returns the CPU's message. A 0-dim index on the CPU is checked at
 * once. */
#include <mutex>
#include <stdint.h>

#include "kernels.cuh"

/* ---- deferred kernel errors: word[0] a code (0: none), word[1] the value ---- */
enum { KERR_INDEX = 1, KERR_TARGET = 2 };
static int64_t *kerr_host, *kerr_dev;
static std::mutex kerr_lock;

/* The device address of the error word (mapped pinned memory); NULL with the error set. */
int64_t *nn_cuda_kernel_error_word(void)
{
    if (kerr_dev) return kerr_dev;
    std::lock_guard<std::mutex> g(kerr_lock);
    if (!kerr_dev) {
        void *h = NULL, *d = NULL;
        if (nn_check(cudaHostAlloc(&h, 2 * sizeof(int64_t), cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc", __FILE__,
                     __LINE__))
            return NULL;
        if (nn_check(cudaHostGetDevicePointer(&d, h, 0), "cudaHostGetDevicePointer", __FILE__, __LINE__)) {
            cudaFreeHost(h);
            return NULL;
        }
        ((volatile int64_t *)h)[0] = 0;
        kerr_host = (int64_t *)h;
        kerr_dev = (int64_t *)d;
    }
    return kerr_dev;
}

/* An error a kernel recorded since the last check (cleared by reporting it). */
extern "C" nn_status nn_cuda_check_kernel_errors(void)
{
    if (!kerr_host) return NN_OK;
    volatile int64_t *w = kerr_host;
    int64_t code = w[0];
    if (!code) return NN_OK;
    int64_t v = w[1];
    w[0] = 0;
    if (code == KERR_TARGET)
        return nn_error(NN_ERR_INDEX, "Target %lld is out of bounds. (found by a CUDA nll_loss kernel of an earlier call)", (long long)v);
    return nn_error(NN_ERR_INDEX, "index out of range in self (index %lld, found by a CUDA indexing kernel of an earlier call)", (long long)v);
}

namespace {

__device__ __forceinline__ void report(int64_t *w, int64_t code, int64_t v)
{
    volatile int64_t *vw = w;
    if (vw[0] == 0) {
        vw[1] = v;
        __threadfence_system();
        vw[0] = code;
    }
}

/* the index list: device int64/int32 with a stride, or one value read on the host */
struct Index {
    const char *p;
    int64_t stride, host;
    bool i64;
};

__device__ __forceinline__ int64_t index_at(const Index &ix, int64_t k)
{
    if (!ix.p) return ix.host;
    return ix.i64 ? ((const int64_t *)ix.p)[k * ix.stride] : (int64_t)((const int32_t *)ix.p)[k * ix.stride];
}

/* iterated tensor: shape, element strides a; indexed tensor: element strides b (b[dim] scales index[k]) */
struct Geo {
    int nd, dim;
    int64_t shape[NN_MAX_DIMS], a[NN_MAX_DIMS], b[NN_MAX_DIMS];
    int64_t size, n;
};

__device__ __forceinline__ void geo_offsets(const Geo &g, int64_t i, int64_t &oa, int64_t &ob, int64_t &k)
{
    oa = ob = k = 0;
    for (int d = g.nd - 1; d >= 0; d--) {
        int64_t q = i / g.shape[d], c = i - q * g.shape[d];
        i = q;
        oa += c * g.a[d];
        if (d == g.dim) k = c;
        else ob += c * g.b[d];
    }
}

/* ---- index_select ---- */
template <typename W>
__global__ void select_any(W *out, const W *x, Geo g, Index ix, int64_t *err)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < g.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t oo, xo, k;
        geo_offsets(g, i, oo, xo, k);
        int64_t v = index_at(ix, k);
        if (v < 0 || v >= g.size) {
            report(err, KERR_INDEX, v);
            out[oo] = W{};
            continue;
        }
        out[oo] = x[xo + v * g.b[g.dim]];
    }
}

/* contiguous: out [outer, nidx, iu units] from x [outer, size, iu units]; blockDim (32, 8) */
template <typename U>
__global__ void select_rows(U *out, const U *x, int64_t rows, int64_t nidx, int64_t size, int64_t iu, Index ix, int64_t *err)
{
    for (int64_t row = blockIdx.x * (int64_t)blockDim.y + threadIdx.y; row < rows; row += (int64_t)gridDim.x * blockDim.y) {
        int64_t a = row / nidx, k = row - a * nidx, v = index_at(ix, k);
        U *o = out + row * iu;
        if (v < 0 || v >= size) {
            if (threadIdx.x == 0) report(err, KERR_INDEX, v);
            for (int64_t b = threadIdx.x; b < iu; b += 32) o[b] = U{};
            continue;
        }
        const U *s = x + (a * size + v) * iu;
        for (int64_t b = threadIdx.x; b < iu; b += 32) o[b] = s[b];
    }
}

/* ---- index_add: atomic self[p] += alpha * s ---- */
struct Bool8 {
    uint8_t v;
};
struct Alpha {
    double d;
    float f;
    int64_t i;
};

__device__ __forceinline__ void add_at(float *p, float s, const Alpha &a) { atomicAdd(p, a.f * s); }
__device__ __forceinline__ void add_at(double *p, double s, const Alpha &a) { atomicAdd(p, a.d * s); }
__device__ __forceinline__ void add_at(__half *p, __half s, const Alpha &a) { atomicAdd(p, __float2half_rn(a.f * __half2float(s))); }
__device__ __forceinline__ void add_at(__nv_bfloat16 *p, __nv_bfloat16 s, const Alpha &a)
{
    atomicAdd(p, __float2bfloat16_rn(a.f * __bfloat162float(s)));
}
__device__ __forceinline__ void add_at(int64_t *p, int64_t s, const Alpha &a)
{
    atomicAdd((unsigned long long *)p, (unsigned long long)((uint64_t)a.i * (uint64_t)s));
}
__device__ __forceinline__ void add_at(int32_t *p, int32_t s, const Alpha &a)
{
    atomicAdd((unsigned *)p, (unsigned)((uint64_t)a.i * (uint64_t)(int64_t)s));
}
/* 8- and 16-bit integers: a CAS loop on the aligned 32-bit word that holds them (wrapping) */
template <typename U> __device__ __forceinline__ void add_narrow(void *p, uint64_t add)
{
    const unsigned mask = (1u << (8 * sizeof(U))) - 1u, a = (unsigned)add & mask;
    if (!a) return;
    unsigned *w = (unsigned *)((uintptr_t)p & ~(uintptr_t)3);
    unsigned sh = ((unsigned)(uintptr_t)p & 3u) * 8u;
    unsigned old = *(volatile unsigned *)w, assumed;
    do {
        assumed = old;
        unsigned v = ((assumed >> sh) + a) & mask;
        old = atomicCAS(w, assumed, (assumed & ~(mask << sh)) | (v << sh));
    } while (old != assumed);
}
__device__ __forceinline__ void add_at(uint8_t *p, uint8_t s, const Alpha &a) { add_narrow<uint8_t>(p, (uint64_t)a.i * s); }
__device__ __forceinline__ void add_at(int8_t *p, int8_t s, const Alpha &a)
{
    add_narrow<uint8_t>(p, (uint64_t)a.i * (uint64_t)(int64_t)s);
}
__device__ __forceinline__ void add_at(int16_t *p, int16_t s, const Alpha &a)
{
    add_narrow<uint16_t>(p, (uint64_t)a.i * (uint64_t)(int64_t)s);
}
__device__ __forceinline__ void add_at(Bool8 *p, Bool8 s, const Alpha &a)
{
    if (!(a.i && s.v)) return;
    unsigned *w = (unsigned *)((uintptr_t)p & ~(uintptr_t)3);
    atomicOr(w, 1u << (((unsigned)(uintptr_t)p & 3u) * 8u));
}

template <typename T>
__global__ void add_any(T *self, const T *src, Geo g, Index ix, Alpha al, int64_t *err)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < g.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t so, po, k;
        geo_offsets(g, i, so, po, k);
        int64_t v = index_at(ix, k);
        if (v < 0 || v >= g.size) {
            report(err, KERR_INDEX, v);
            continue;
        }
        add_at(self + po + v * g.b[g.dim], src[so], al);
    }
}

/* pairs of halves: one __half2 / __nv_bfloat162 atomic per two elements */
template <typename T> struct Pair;
template <> struct Pair<__half> {
    typedef __half2 type;
    static __device__ __forceinline__ void add(__half2 *p, __half2 s, const Alpha &a)
    {
        float2 f = __half22float2(s);
        atomicAdd(p, __floats2half2_rn(a.f * f.x, a.f * f.y));
    }
};
template <> struct Pair<__nv_bfloat16> {
    typedef __nv_bfloat162 type;
    static __device__ __forceinline__ void add(__nv_bfloat162 *p, __nv_bfloat162 s, const Alpha &a)
    {
        float2 f = __bfloat1622float2(s);
        atomicAdd(p, __floats2bfloat162_rn(a.f * f.x, a.f * f.y));
    }
};

/* contiguous: self [outer, size, inner] += src [outer, nidx, inner] at the indices; blockDim (32, 8) */
template <typename T, bool PAIRS>
__global__ void add_rows(T *self, const T *src, int64_t rows, int64_t nidx, int64_t size, int64_t inner, Index ix, Alpha al, int64_t *err)
{
    for (int64_t row = blockIdx.x * (int64_t)blockDim.y + threadIdx.y; row < rows; row += (int64_t)gridDim.x * blockDim.y) {
        int64_t a = row / nidx, k = row - a * nidx, v = index_at(ix, k);
        if (v < 0 || v >= size) {
            if (threadIdx.x == 0) report(err, KERR_INDEX, v);
            continue;
        }
        T *d = self + (a * size + v) * inner;
        const T *s = src + row * inner;
        if constexpr (PAIRS) {
            typedef typename Pair<T>::type P;
            for (int64_t b = threadIdx.x; b < inner / 2; b += 32) Pair<T>::add((P *)d + b, ((const P *)s)[b], al);
        } else {
            for (int64_t b = threadIdx.x; b < inner; b += 32) add_at(d + b, s[b], al);
        }
    }
}

/* ---- host side ---- */

nn_tensor *on_device(nn_tensor *t, nn_device d)
{
    return t->storage->device.type == NN_CUDA ? nn_retain(t) : nn_to_device(t, d);
}

nn_status index_of(const char *fn, nn_tensor *ix, int64_t size, Index *r)
{
    if (ix->dtype != NN_I64 && ix->dtype != NN_I32) return nn_error(NN_ERR_DTYPE, "%s(): Expected dtype int32 or int64 for index", fn);
    *r = Index{};
    if (ix->storage->device.type != NN_CUDA) { /* a 0-dim CPU index: checked now */
        r->host = nn_load_i64(nn_data(ix), ix->dtype);
        if (r->host < 0 || r->host >= size) return nn_error(NN_ERR_INDEX, "index out of range in self");
        return NN_OK;
    }
    r->p = (const char *)nn_data(ix);
    r->stride = ix->ndim ? ix->strides[0] : 0;
    r->i64 = ix->dtype == NN_I64;
    return NN_OK;
}

/* it: the iterated tensor, other: the indexed one (0-dim tensors count as [1]) */
Geo geo_of(const nn_tensor *it, const nn_tensor *other, int dim)
{
    Geo g{};
    g.dim = dim;
    g.nd = it->ndim ? it->ndim : 1;
    g.n = 1;
    for (int d = 0; d < g.nd; d++) {
        g.shape[d] = it->ndim ? it->shape[d] : 1;
        g.a[d] = it->ndim ? it->strides[d] : 0;
        g.b[d] = other->ndim ? other->strides[d] : 0;
        g.n *= g.shape[d];
    }
    g.size = other->ndim ? other->shape[dim] : 1;
    return g;
}

void outer_inner(const nn_tensor *t, int dim, int64_t *outer, int64_t *inner)
{
    *outer = *inner = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (d < dim) *outer *= t->shape[d];
        if (d > dim) *inner *= t->shape[d];
    }
}

unsigned row_grid(int64_t rows)
{
    int64_t b = (rows + 7) / 8;
    return (unsigned)(b < 1 ? 1 : b > (1 << 20) ? (1 << 20) : b);
}

template <typename U>
void launch_select_rows(char *out, const char *x, int64_t rows, int64_t nidx, int64_t size, int64_t rowbytes, const Index &ix, int64_t *err,
                        cudaStream_t s)
{
    select_rows<U><<<row_grid(rows), dim3(32, 8), 0, s>>>((U *)out, (const U *)x, rows, nidx, size, rowbytes / (int64_t)sizeof(U), ix, err);
}

template <typename W> void launch_select_any(char *out, const char *x, const Geo &g, const Index &ix, int64_t *err, cudaStream_t s)
{
    select_any<W><<<nn_cuda_blocks(g.n), 256, 0, s>>>((W *)out, (const W *)x, g, ix, err);
}

bool aligned(const void *p, size_t u) { return ((uintptr_t)p % u) == 0; }

nn_status index_select(const nn_kargs *a)
{
    if (nn_cuda_check_kernel_errors()) return nn_last_status();
    nn_tensor *out = a->out[0];
    int dim = (int)a->i[0], dev = nn_cuda_index(a);
    nn_cuda_device *d = nn_cuda_dev(dev);
    int64_t *err = nn_cuda_kernel_error_word();
    if (!d || !err) return nn_last_status();
    nn_tensor *x = on_device(a->in[0], out->storage->device);
    if (!x) return nn_last_status();
    Index ix;
    nn_status st = index_of("index_select", a->in[1], x->ndim ? x->shape[dim] : 1, &ix);
    if (st || nn_numel(out) == 0) {
        nn_release(x);
        return st;
    }
    size_t es = nn_dtype_size(x->dtype);
    char *op = (char *)nn_data(out);
    const char *xp = (const char *)nn_data(x);
    int64_t nidx = nn_numel(a->in[1]);
    if (x->ndim && nn_is_contiguous(x) && nn_is_contiguous(out)) {
        int64_t outer, inner;
        outer_inner(x, dim, &outer, &inner);
        int64_t rowbytes = inner * (int64_t)es, size = x->shape[dim];
        size_t u = 16;
        while (u > 1 && (rowbytes % (int64_t)u || !aligned(op, u) || !aligned(xp, u))) u /= 2;
        if (rowbytes / (int64_t)u >= 8) {
            int64_t rows = outer * nidx;
            switch (u) {
            case 16: launch_select_rows<uint4>(op, xp, rows, nidx, size, rowbytes, ix, err, nn_cuda_current(d)); break;
            case 8: launch_select_rows<uint2>(op, xp, rows, nidx, size, rowbytes, ix, err, nn_cuda_current(d)); break;
            case 4: launch_select_rows<uint32_t>(op, xp, rows, nidx, size, rowbytes, ix, err, nn_cuda_current(d)); break;
            case 2: launch_select_rows<uint16_t>(op, xp, rows, nidx, size, rowbytes, ix, err, nn_cuda_current(d)); break;
            default: launch_select_rows<uint8_t>(op, xp, rows, nidx, size, rowbytes, ix, err, nn_cuda_current(d)); break;
            }
            nn_release(x);
            NN_CHECK_LAUNCH();
            return NN_OK;
        }
    }
    Geo g = geo_of(out, x, dim);
    switch (es) {
    case 1: launch_select_any<uint8_t>(op, xp, g, ix, err, nn_cuda_current(d)); break;
    case 2: launch_select_any<uint16_t>(op, xp, g, ix, err, nn_cuda_current(d)); break;
    case 4: launch_select_any<uint32_t>(op, xp, g, ix, err, nn_cuda_current(d)); break;
    case 8: launch_select_any<uint64_t>(op, xp, g, ix, err, nn_cuda_current(d)); break;
    default: launch_select_any<ulonglong2>(op, xp, g, ix, err, nn_cuda_current(d)); break; /* complex128 */
    }
    nn_release(x);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

template <typename T>
void launch_add(nn_tensor *self, nn_tensor *src, int dim, int64_t nidx, const Index &ix, const Alpha &al, int64_t *err, cudaStream_t s)
{
    T *sp = (T *)nn_data(self);
    const T *rp = (const T *)nn_data(src);
    if (self->ndim && nn_is_contiguous(self) && nn_is_contiguous(src)) {
        int64_t outer, inner;
        outer_inner(self, dim, &outer, &inner);
        int64_t rows = outer * nidx, size = self->shape[dim];
        if (inner >= 8) {
            if constexpr (std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value) {
                if (inner % 2 == 0 && aligned(sp, 4) && aligned(rp, 4)) {
                    add_rows<T, true><<<row_grid(rows), dim3(32, 8), 0, s>>>(sp, rp, rows, nidx, size, inner, ix, al, err);
                    return;
                }
            }
            add_rows<T, false><<<row_grid(rows), dim3(32, 8), 0, s>>>(sp, rp, rows, nidx, size, inner, ix, al, err);
            return;
        }
    }
    Geo g = geo_of(src, self, dim);
    add_any<T><<<nn_cuda_blocks(g.n), 256, 0, s>>>(sp, rp, g, ix, al, err);
}

nn_status index_add(const nn_kargs *a)
{
    if (nn_cuda_check_kernel_errors()) return nn_last_status();
    nn_tensor *self = a->out[0];
    int dim = (int)a->i[0], dev = nn_cuda_index(a);
    nn_cuda_device *d = nn_cuda_dev(dev);
    int64_t *err = nn_cuda_kernel_error_word();
    if (!d || !err) return nn_last_status();
    if (a->in[1]->dtype != self->dtype)
        return nn_error(NN_ERR_DTYPE, "index_add_(): self (%s) and source (%s) must have the same scalar type", nn_dtype_name(self->dtype),
                        nn_dtype_name(a->in[1]->dtype));
    Index ix;
    nn_status st = index_of("index_add_", a->in[0], self->ndim ? self->shape[dim] : 1, &ix);
    if (st) return st;
    nn_tensor *src = on_device(a->in[1], self->storage->device);
    if (!src) return nn_last_status();
    if (nn_numel(self) == 0 || nn_numel(src) == 0) {
        nn_release(src);
        return NN_OK;
    }
    Alpha al{a->f[0], (float)a->f[0], nn_dtype_is_integral(self->dtype) ? (int64_t)a->f[0] : 0};
    int64_t nidx = nn_numel(a->in[0]);
    cudaStream_t s = nn_cuda_current(d);
    switch (self->dtype) {
    case NN_F32: launch_add<float>(self, src, dim, nidx, ix, al, err, s); break;
    case NN_F64: launch_add<double>(self, src, dim, nidx, ix, al, err, s); break;
    case NN_F16: launch_add<__half>(self, src, dim, nidx, ix, al, err, s); break;
    case NN_BF16: launch_add<__nv_bfloat16>(self, src, dim, nidx, ix, al, err, s); break;
    case NN_I64: launch_add<int64_t>(self, src, dim, nidx, ix, al, err, s); break;
    case NN_I32: launch_add<int32_t>(self, src, dim, nidx, ix, al, err, s); break;
    case NN_I16: launch_add<int16_t>(self, src, dim, nidx, ix, al, err, s); break;
    case NN_I8: launch_add<int8_t>(self, src, dim, nidx, ix, al, err, s); break;
    case NN_U8: launch_add<uint8_t>(self, src, dim, nidx, ix, al, err, s); break;
    default: launch_add<Bool8>(self, src, dim, nidx, ix, al, err, s); break;
    }
    nn_release(src);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

} // namespace

extern "C" nn_status nn_cuda_index_select(const nn_kargs *a) { return index_select(a); }
extern "C" nn_status nn_cuda_index_add(const nn_kargs *a) { return index_add(a); }
