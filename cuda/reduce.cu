/* CUDA reductions over a dim mask: sum mean prod amax amin all any var(std)
 * norm, and the one-dim index reductions max_dim min_dim argmax argmin.
 *
 * out arrives with the keepdim shape. As in engine/cpu/reduce.c, the input's
 * dims split into kept and reduced groups, each sorted by stride (innermost
 * last) and coalesced; output element o and reduced position r map to byte
 * offsets through them. Values accumulate in float (float32/float16/bfloat16),
 * double (float64) or wrapping int64 (integer types); var uses Welford's
 * running mean and M2, merged with Chan's formula; index reductions keep
 * (value, index) pairs where NaN wins and ties keep the lower index, so the
 * order threads combine in never changes a result.
 *
 * Two thread mappings, each a tree: partial accumulators per thread, then warp
 * shuffles, then shared memory.
 *  - rows: the innermost input dim is reduced. G threads (1..256, a power of
 *    two) share one output and stride along its reduced positions, with 16-byte
 *    vector loads when the reduced run is contiguous and aligned.
 *  - cols: the innermost input dim is kept (column sums). A 32x8 block covers 32
 *    consecutive outputs, each column read by 8 threads; a warp reads 32
 *    neighbouring elements of one row.
 * When there are too few outputs to fill the GPU, the reduced range is split
 * over gridDim.y: each block writes a partial accumulator and a second kernel
 * (one warp per output) merges them. */
#include <string.h>

#include "complex_hooks.cuh"
#include "ew.cuh"
#include "reduce_geo.cuh"

using namespace nnk;
using namespace nnr;

namespace {

/* ---- accumulators: init, step (one value at reduced position idx), combine, store ---- */

template <typename V> __device__ __forceinline__ void wrap_add(V &a, V b)
{
    if constexpr (std::is_integral<V>::value) a = (int64_t)((uint64_t)a + (uint64_t)b);
    else a += b;
}

template <typename V> struct RSum {
    typedef V acc_t;
    bool mean;
    int64_t n;
    __device__ V init() const { return 0; }
    __device__ void step(V &a, V x, int64_t) const { wrap_add(a, x); }
    __device__ void combine(V &a, const V &b) const { wrap_add(a, b); }
    __device__ void store(char *o, char *, int odt, const V &a) const
    {
        if constexpr (!std::is_integral<V>::value) {
            if (mean) {
                st_dyn(o, odt, (V)(a / (V)n));
                return;
            }
        }
        st_dyn(o, odt, a);
    }
};

template <typename V> struct RProd {
    typedef V acc_t;
    __device__ V init() const { return 1; }
    __device__ static void mul(V &a, V b)
    {
        if constexpr (std::is_integral<V>::value) a = (int64_t)((uint64_t)a * (uint64_t)b);
        else a *= b;
    }
    __device__ void step(V &a, V x, int64_t) const { mul(a, x); }
    __device__ void combine(V &a, const V &b) const { mul(a, b); }
    __device__ void store(char *o, char *, int odt, const V &a) const { st_dyn(o, odt, a); }
};

/* max (or min) where NaN wins */
template <typename V> __device__ __forceinline__ void extreme(V &a, V x, bool want_max)
{
    if (a == a && (x != x || (want_max ? x > a : x < a))) a = x;
}

template <typename V> struct RMinMax {
    typedef V acc_t;
    bool want_max;
    __device__ V init() const
    {
        if constexpr (std::is_integral<V>::value) return want_max ? INT64_MIN : INT64_MAX;
        else return want_max ? -(V)INFINITY : (V)INFINITY;
    }
    __device__ void step(V &a, V x, int64_t) const { extreme(a, x, want_max); }
    __device__ void combine(V &a, const V &b) const { extreme(a, b, want_max); }
    __device__ void store(char *o, char *, int odt, const V &a) const { st_dyn(o, odt, a); }
};

template <typename V> struct RAllAny {
    typedef int acc_t;
    bool all;
    __device__ int init() const { return all; }
    __device__ void step(int &a, V x, int64_t) const { a = all ? (a && x != 0) : (a || x != 0); }
    __device__ void combine(int &a, const int &b) const { a = all ? (a && b) : (a || b); }
    __device__ void store(char *o, char *, int odt, const int &a) const { st_i64(o, odt, a); }
};

template <typename V> struct Welford {
    V mean, m2;
    int64_t n;
};

template <typename V> struct RVar {
    typedef Welford<V> acc_t;
    V correction;
    bool take_sqrt;
    __device__ acc_t init() const { return {0, 0, 0}; }
    __device__ void step(acc_t &a, V x, int64_t) const
    {
        a.n++;
        V d = x - a.mean;
        a.mean += d / (V)a.n;
        a.m2 += d * (x - a.mean);
    }
    __device__ void combine(acc_t &a, const acc_t &b) const
    {
        if (b.n == 0) return;
        if (a.n == 0) {
            a = b;
            return;
        }
        int64_t n = a.n + b.n;
        V d = b.mean - a.mean, fb = (V)b.n / (V)n;
        a.mean += d * fb;
        a.m2 += b.m2 + d * d * (V)a.n * fb;
        a.n = n;
    }
    __device__ void store(char *o, char *, int odt, const acc_t &a) const
    {
        V den = (V)a.n - correction;
        V r = a.m2 / (den > 0 ? den : (V)0);
        st_dyn(o, odt, take_sqrt ? m_sqrt(r) : r);
    }
};

enum { NORM_2, NORM_1, NORM_INF, NORM_NEGINF, NORM_0, NORM_P };

template <typename V> struct RNorm {
    typedef V acc_t;
    int kind;
    V p;
    __device__ V init() const { return kind == NORM_NEGINF ? (V)INFINITY : (V)0; }
    __device__ void step(V &a, V x, int64_t) const
    {
        V v = m_abs(x);
        switch (kind) {
        case NORM_2: a += v * v; break;
        case NORM_1: a += v; break;
        case NORM_INF: extreme(a, v, true); break;
        case NORM_NEGINF: extreme(a, v, false); break;
        case NORM_0: a += (V)(x != 0); break;
        default: a += m_pow(v, p); break;
        }
    }
    __device__ void combine(V &a, const V &b) const
    {
        if (kind == NORM_INF) extreme(a, b, true);
        else if (kind == NORM_NEGINF) extreme(a, b, false);
        else a += b;
    }
    __device__ void store(char *o, char *, int odt, const V &a) const
    {
        V r = kind == NORM_2 ? m_sqrt(a) : kind == NORM_P ? m_pow(a, (V)1 / p) : a;
        st_dyn(o, odt, r);
    }
};

template <typename V> struct ArgAcc {
    V v;
    int64_t i; /* -1: nothing seen */
};

/* max_dim/min_dim (out: values, out2: int64 indices) and argmax/argmin (out: indices) */
template <typename V> struct RArg {
    typedef ArgAcc<V> acc_t;
    bool want_max, values;
    __device__ acc_t init() const { return {0, -1}; }
    __device__ bool better(V x, int64_t xi, const acc_t &a) const
    {
        if (a.i < 0) return true;
        bool xn = x != x, an = a.v != a.v;
        if (an) return xn && xi < a.i;
        if (xn) return true;
        if (want_max ? x > a.v : x < a.v) return true;
        return x == a.v && xi < a.i;
    }
    __device__ void step(acc_t &a, V x, int64_t idx) const
    {
        if (better(x, idx, a)) a.v = x, a.i = idx;
    }
    __device__ void combine(acc_t &a, const acc_t &b) const
    {
        if (b.i >= 0 && better(b.v, b.i, a)) a = b;
    }
    __device__ void store(char *o, char *o2, int odt, const acc_t &a) const
    {
        if (values) {
            st_dyn(o, odt, a.v);
            *(int64_t *)o2 = a.i;
        } else {
            *(int64_t *)o = a.i;
        }
    }
};

/* ---- kernels ---- */

template <typename A> __device__ __forceinline__ A shfl_down(const A &v, int off, int width)
{
    static_assert(sizeof(A) % 4 == 0, "accumulators are whole words");
    constexpr int W = sizeof(A) / 4;
    int w[W];
    memcpy(w, &v, sizeof(A));
#pragma unroll
    for (int k = 0; k < W; k++) w[k] = __shfl_down_sync(0xffffffffu, w[k], off, width);
    A r;
    memcpy(&r, w, sizeof(A));
    return r;
}

/* Steps acc over reduced positions i, i + step, ... below r1 of the output at base. With
 * two reduced dims (a conv bias's gradient: N and H*W) the position moves without a
 * division per element, and a thread has U loads in flight (the same order of steps). */
template <class R, typename T>
__device__ __forceinline__ void red_walk(const RGeo &g, const R &r, const char *base, int64_t i, int64_t r1, int step,
                                         typename R::acc_t &acc)
{
    if (g.nr <= 1) {
        const int64_t rs = g.nr ? g.rin[0] : 0;
#pragma unroll 4
        for (; i < r1; i += step) r.step(acc, ld(*(const T *)(base + i * rs)), i);
    } else if (g.nr == 2) { /* a step moves (outer, inner) by (step / n, step % n), carrying once at most */
        const int64_t n = g.rs[1], si = g.rin[1], so = g.rin[0];
        int64_t outer = i, inner = divmod(outer, n, g.small), douter = step, dinner = divmod(douter, n, g.small);
        constexpr int U = 8;
        for (; i + (U - 1) * (int64_t)step < r1; i += U * (int64_t)step) {
            T v[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                v[u] = *(const T *)(base + outer * so + inner * si);
                inner += dinner, outer += douter;
                if (inner >= n) inner -= n, outer++;
            }
#pragma unroll
            for (int u = 0; u < U; u++) r.step(acc, ld(v[u]), i + u * (int64_t)step);
        }
        for (; i < r1; i += step) {
            r.step(acc, ld(*(const T *)(base + outer * so + inner * si)), i);
            inner += dinner, outer += douter;
            if (inner >= n) inner -= n, outer++;
        }
    } else {
        for (; i < r1; i += step) r.step(acc, ld(*(const T *)(base + red_offset(g, i))), i);
    }
}

/* Reduced positions [r0, r1) over rows of n contiguous elements rin[0] bytes apart whose starts
 * are not 16-byte aligned (a conv bias's gradient over odd H*W): a warp of the G (a multiple of 32)
 * takes a row at a time, one element a lane up to the row's first 16-byte boundary, then N-element
 * vectors, U in flight a lane, then the rest. */
template <class R, typename T, int N>
__device__ __forceinline__ void red_ragged_rows(const RGeo &g, const R &r, const char *base, int64_t r0, int64_t r1, int lane, int G,
                                                typename R::acc_t &acc)
{
    const int64_t n = g.rs[1], so = g.rin[0];
    const int w = lane >> 5, l = lane & 31, warps = G >> 5;
    for (int64_t row = r0 / n + w; row * n < r1; row += warps) {
        const int64_t first = row * n, a0 = max(r0, first) - first, a1 = min(r1, first + n) - first;
        const T *p = (const T *)(base + row * so);
        const int mis = (int)(((uintptr_t)(p + a0) & 15) / sizeof(T));
        const int64_t head = mis ? min(a1 - a0, (int64_t)(N - mis)) : 0, b0 = a0 + head, nv = (a1 - b0) / N;
        if (l < head) r.step(acc, ld(p[a0 + l]), first + a0 + l);
        const Vec<T, N> *pv = (const Vec<T, N> *)(p + b0);
        constexpr int U = 4;
        for (int64_t v = l; v < nv; v += U * 32) {
            Vec<T, N> x[U];
#pragma unroll
            for (int u = 0; u < U; u++)
                if (v + u * 32 < nv) x[u] = pv[v + u * 32];
#pragma unroll
            for (int u = 0; u < U; u++)
                if (v + u * 32 < nv)
#pragma unroll
                    for (int j = 0; j < N; j++) r.step(acc, ld(x[u].v[j]), first + b0 + (v + u * 32) * N + j);
        }
        for (int64_t k = b0 + nv * N + l; k < a1; k += 32) r.step(acc, ld(p[k]), first + k);
    }
}

/* G threads per output (blockDim.x = 256); N > 1: the reduced run is contiguous, or (two reduced
 * dims) made of contiguous rows: of a multiple of N elements, 16-byte aligned (chunk a multiple of
 * N), or any (red_ragged_rows: G a multiple of 32) */
template <class R, typename T, int N>
__global__ void __launch_bounds__(256) red_rows(const char *in, char *out, char *out2, int odt, RGeo g, R r, int G,
                                                int64_t chunk, typename R::acc_t *part)
{
    typedef typename R::acc_t A;
    __shared__ A sh[8];
    const int tid = threadIdx.x, lane = tid & (G - 1), groups = blockDim.x / G;
    const int64_t o = (int64_t)blockIdx.x * groups + tid / G;
    const int64_t r0 = (int64_t)blockIdx.y * chunk, r1 = min(g.nred, r0 + chunk);
    A acc = r.init();
    int64_t oi = 0, oo = 0, oo2 = 0;
    if (o < g.nout) {
        kept_offsets(g, o, oi, oo, oo2);
        const char *base = in + oi;
        if (N > 1 && g.nr == 2 && (g.rs[1] % N || g.rin[0] % 16 || ((uintptr_t)base & 15))) {
            red_ragged_rows<R, T, N>(g, r, base, r0, r1, lane, G, acc);
        } else if (N > 1 && g.nr == 2) { /* rows of n contiguous elements (n a multiple of N, r0 and r1 too), rin[0] bytes apart */
            const int64_t n = g.rs[1] / N, so = g.rin[0];
            int64_t v = r0 / N + lane, outer = v, inner = divmod(outer, n, g.small), douter = G, dinner = divmod(douter, n, g.small);
            constexpr int U = 4;
            const int64_t v1 = r1 / N;
            for (; v < v1; v += U * (int64_t)G) {
                Vec<T, N> x[U];
                int64_t at[U];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    at[u] = v + u * (int64_t)G;
                    if (at[u] < v1) x[u] = *(const Vec<T, N> *)(base + outer * so + inner * (int64_t)sizeof(Vec<T, N>));
                    inner += dinner, outer += douter;
                    if (inner >= n) inner -= n, outer++;
                }
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (at[u] < v1)
#pragma unroll
                        for (int j = 0; j < N; j++) r.step(acc, ld(x[u].v[j]), at[u] * N + j);
            }
        } else if (N > 1) {
            const T *p = (const T *)base;
            const int64_t nv = (r1 - r0) / N;
            const Vec<T, N> *pv = (const Vec<T, N> *)(p + r0);
            for (int64_t v = lane; v < nv; v += G) {
                Vec<T, N> x = pv[v];
#pragma unroll
                for (int j = 0; j < N; j++) r.step(acc, ld(x.v[j]), r0 + v * N + j);
            }
            for (int64_t i = r0 + nv * N + lane; i < r1; i += G) r.step(acc, ld(p[i]), i);
        } else {
            red_walk<R, T>(g, r, base, r0 + lane, r1, G, acc);
        }
    }
    if (G > 1) {
        const int w = G < 32 ? G : 32;
        for (int off = w / 2; off > 0; off >>= 1) r.combine(acc, shfl_down(acc, off, w));
        if (G > 32) {
            if ((tid & 31) == 0) sh[tid >> 5] = acc;
            __syncthreads();
            if (tid == 0)
                for (int k = 1; k < G / 32; k++) r.combine(acc, sh[k]);
        }
    }
    if (lane == 0 && o < g.nout) {
        if (gridDim.y == 1) r.store(out + oo, out2 + oo2, odt, acc);
        else part[o * gridDim.y + blockIdx.y] = acc;
    }
}

/* blockDim (32, 8): 32 outputs, 8 threads down each */
template <class R, typename T>
__global__ void __launch_bounds__(256) red_cols(const char *in, char *out, char *out2, int odt, RGeo g, R r, int64_t chunk,
                                                typename R::acc_t *part)
{
    typedef typename R::acc_t A;
    __shared__ A sh[8][32];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t o = (int64_t)blockIdx.x * 32 + tx;
    const int64_t r0 = (int64_t)blockIdx.y * chunk, r1 = min(g.nred, r0 + chunk);
    A acc = r.init();
    int64_t oi = 0, oo = 0, oo2 = 0;
    if (o < g.nout) {
        kept_offsets(g, o, oi, oo, oo2);
        red_walk<R, T>(g, r, in + oi, r0 + ty, r1, 8, acc);
    }
    sh[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && o < g.nout) {
        for (int k = 1; k < 8; k++) r.combine(acc, sh[k][tx]);
        if (gridDim.y == 1) r.store(out + oo, out2 + oo2, odt, acc);
        else part[o * gridDim.y + blockIdx.y] = acc;
    }
}

/* one warp per output merges its nsplit partial accumulators */
template <class R>
__global__ void red_finish(const typename R::acc_t *part, int nsplit, char *out, char *out2, int odt, RGeo g, R r)
{
    typedef typename R::acc_t A;
    const int64_t o = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    A acc = r.init();
    if (o < g.nout)
        for (int s = lane; s < nsplit; s += 32) r.combine(acc, part[o * nsplit + s]);
    for (int off = 16; off > 0; off >>= 1) r.combine(acc, shfl_down(acc, off, 32));
    if (lane == 0 && o < g.nout) {
        int64_t oi, oo, oo2;
        kept_offsets(g, o, oi, oo, oo2);
        r.store(out + oo, out2 + oo2, odt, acc);
    }
}

/* ---- host: plan and launch ---- */

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <class R, typename T> nn_status launch(const nn_kargs *a, const RGeo &g, const R &r)
{
    typedef typename R::acc_t A;
    constexpr int NV = 16 / sizeof(T);
    int dev = nn_cuda_index(a);
    cudaStream_t s = nn_cuda_stream(dev);
    nn_cuda_device *d = nn_cuda_dev(dev);
    if (!d) return nn_last_status();
    const int64_t target = 4 * (int64_t)(d->sm_count > 0 ? d->sm_count : 100); /* blocks that fill the GPU */
    const char *in = (const char *)nn_data(a->in[0]);
    char *out = (char *)nn_data(a->out[0]);
    char *out2 = a->out[1] ? (char *)nn_data(a->out[1]) : NULL;
    int odt = a->out[0]->dtype;
    const int64_t nout = g.nout, nred = g.nred;
    bool rows = g.nr > 0 && (g.nk == 0 || abs64(g.rin[g.nr - 1]) < abs64(g.kin[g.nk - 1]));
    int64_t splits = 1, chunk = nred > 0 ? nred : 1;
    int G = 1;
    bool vec = false;
    if (rows) {
        vec = NV > 1 && aligned16(in) &&
              ((g.nr == 1 && g.rin[0] == (int64_t)sizeof(T)) || /* or two reduced dims, the inner in whole vectors (a conv bias's gradient) */
               (g.nr == 2 && g.rin[1] == (int64_t)sizeof(T) && g.rs[1] % NV == 0 && g.rin[0] % 16 == 0));
        for (int k = 0; k < g.nk && vec; k++) vec = g.kin[k] % 16 == 0;
        /* 16-bit rows of other lengths or alignments (one element a lane leaves a warp's loads half a
         * cache line), long enough for a vector a lane (then G >= 32): shorter rows or wider elements
         * were slower this way on an H100 (bench/NOTES.md, session 19) */
        if (!vec && sizeof(T) == 2 && g.nr == 2 && g.rin[1] == (int64_t)sizeof(T) && g.rs[1] >= 32 * NV && cdiv(nred, NV) > 32)
            vec = true;
        int64_t work = vec ? cdiv(nred, NV) : nred; /* loads per output */
        G = work <= 2 ? 1 : work <= 8 ? 4 : work <= 32 ? 8 : (work <= 2048 || nout >= 8 * target) ? 32 : 256;
        int64_t bx = cdiv(nout, 256 / G);
        if (bx < target && nred >= 16384) {
            splits = std::min(cdiv(target, bx), cdiv(nred, 8192));
            chunk = cdiv(cdiv(nred, splits), 64) * 64;
            splits = cdiv(nred, chunk);
        }
    } else {
        int64_t bx = cdiv(nout, 32);
        if (bx < target && nred >= 512) {
            splits = std::min(cdiv(target, bx), cdiv(nred, 256));
            chunk = cdiv(nred, splits);
            splits = cdiv(nred, chunk);
        }
    }
    if (splits > 65535) { /* gridDim.y; only for absurd sizes */
        chunk = cdiv(cdiv(nred, 65535), 64) * 64;
        splits = cdiv(nred, chunk);
    }
    A *part = NULL;
    if (splits > 1) {
        part = (A *)nn_cuda_alloc(dev, (size_t)(nout * splits) * sizeof(A));
        if (!part) return nn_last_status();
    }
    if (rows) {
        dim3 grid((unsigned)cdiv(nout, 256 / G), (unsigned)splits);
        if (vec) nn_launch<red_rows<R, T, NV>>(grid, 256, s, in, out, out2, odt, g, r, G, chunk, part);
        else nn_launch<red_rows<R, T, 1>>(grid, 256, s, in, out, out2, odt, g, r, G, chunk, part);
    } else {
        dim3 grid((unsigned)cdiv(nout, 32), (unsigned)splits);
        nn_launch<red_cols<R, T>>(grid, dim3(32, 8), s, in, out, out2, odt, g, r, chunk, part);
    }
    nn_status st = nn_check(cudaGetLastError(), "reduction kernel", __FILE__, __LINE__);
    if (!st && splits > 1) {
        nn_launch<red_finish<R>>((unsigned)cdiv(nout, 8), 256, s, part, (int)splits, out, out2, odt, g, r);
        st = nn_check(cudaGetLastError(), "reduction finish kernel", __FILE__, __LINE__);
    }
    if (part) nn_cuda_free(dev, part); /* stream-ordered: reused only by later work on this stream */
    return st;
}

/* run the reduction on a copy of the input cast to dtype dt */
nn_status reduce_cast(const nn_kargs *a, nn_dtype dt)
{
    nn_tensor *x = a->in[0];
    nn_tensor *t = nn_empty(x->ndim, x->shape, dt, x->storage->device);
    if (!t) return nn_last_status();
    nn_kargs c = nn_kargs();
    c.op = NN_OP_copy;
    c.out[0] = t;
    c.in[0] = x;
    c.nin = 1;
    nn_status st = nn_dispatch(&c);
    if (!st) {
        nn_kargs b = *a;
        b.in[0] = t;
        st = nn_cuda_reduce(&b);
    }
    nn_release(t);
    return st;
}

#define DISPATCH_ALL(DT, ...)                                       \
    switch (DT) {                                                   \
    case NN_F32: { typedef float T; __VA_ARGS__; }                  \
    case NN_F64: { typedef double T; __VA_ARGS__; }                 \
    case NN_F16: { typedef __half T; __VA_ARGS__; }                 \
    case NN_BF16: { typedef __nv_bfloat16 T; __VA_ARGS__; }         \
    case NN_I64: { typedef int64_t T; __VA_ARGS__; }                \
    case NN_I32: { typedef int32_t T; __VA_ARGS__; }                \
    case NN_I16: { typedef int16_t T; __VA_ARGS__; }                \
    case NN_I8: { typedef int8_t T; __VA_ARGS__; }                  \
    default: { typedef uint8_t T; __VA_ARGS__; } /* uint8, bool */  \
    }

#define DISPATCH_FLOAT(DT, ...)                                     \
    switch (DT) {                                                   \
    case NN_F32: { typedef float T; __VA_ARGS__; }                  \
    case NN_F64: { typedef double T; __VA_ARGS__; }                 \
    case NN_F16: { typedef __half T; __VA_ARGS__; }                 \
    case NN_BF16: { typedef __nv_bfloat16 T; __VA_ARGS__; }         \
    default: break;                                                 \
    }

} // namespace

extern "C" nn_status nn_cuda_reduce(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *out = a->out[0];
    if (nn_cuda_any_complex(a)) return nn_cuda_complex_reduce(a);
    if (host_scalar(x)) return nn_error(NN_ERR_DEVICE, "%s: the CUDA kernel needs its input on the GPU", nn_op_name(a->op));
    if (nn_numel(out) == 0) return NN_OK;
    nn_dtype in_dt = x->dtype, odt = out->dtype;
    bool fin = nn_dtype_is_float(in_dt), fout = nn_dtype_is_float(odt);
    nn_tensor *out2 = a->op == NN_OP_max_dim || a->op == NN_OP_min_dim ? a->out[1] : NULL;
    RGeo g = plan(x, out, out2, a->dims);
    switch (a->op) {
    case NN_OP_sum:
    case NN_OP_mean:
    case NN_OP_prod: {
        if (fin != fout || (odt == NN_F64 && in_dt != NN_F64)) return reduce_cast(a, odt);
        bool prod = a->op == NN_OP_prod;
        if (a->op == NN_OP_mean && !fin) break;
        DISPATCH_ALL(in_dt, {
            typedef typename ctype<T>::type V;
            if (prod) return launch<RProd<V>, T>(a, g, RProd<V>{});
            return launch<RSum<V>, T>(a, g, RSum<V>{a->op == NN_OP_mean, g.nred});
        })
    }
    case NN_OP_amax:
    case NN_OP_amin:
        DISPATCH_ALL(in_dt, {
            typedef typename ctype<T>::type V;
            return launch<RMinMax<V>, T>(a, g, RMinMax<V>{a->op == NN_OP_amax});
        })
    case NN_OP_all:
    case NN_OP_any:
        DISPATCH_ALL(in_dt, {
            typedef typename ctype<T>::type V;
            return launch<RAllAny<V>, T>(a, g, RAllAny<V>{a->op == NN_OP_all});
        })
    case NN_OP_var:
        DISPATCH_FLOAT(in_dt, {
            typedef typename ctype<T>::type V;
            return launch<RVar<V>, T>(a, g, RVar<V>{(V)a->f[0], a->i[0] == 1});
        })
        break;
    case NN_OP_norm: {
        double p = a->f[0];
        int kind = p == 2 ? NORM_2 : p == 1 ? NORM_1 : p == 0 ? NORM_0 : p == INFINITY ? NORM_INF : p == -INFINITY ? NORM_NEGINF : NORM_P;
        DISPATCH_FLOAT(in_dt, {
            typedef typename ctype<T>::type V;
            return launch<RNorm<V>, T>(a, g, RNorm<V>{kind, (V)p});
        })
        break;
    }
    case NN_OP_max_dim:
    case NN_OP_min_dim:
    case NN_OP_argmax:
    case NN_OP_argmin: {
        if (g.nred == 0) return nn_error(NN_ERR_INDEX, "%s: expected reduction dim to have non-zero size", nn_op_name(a->op));
        bool want_max = a->op == NN_OP_max_dim || a->op == NN_OP_argmax;
        bool values = out2 != NULL;
        DISPATCH_ALL(in_dt, {
            typedef typename ctype<T>::type V;
            return launch<RArg<V>, T>(a, g, RArg<V>{want_max, values});
        })
    }
    default:
        break;
    }
    return nn_not_implemented(a, out->dtype);
}
