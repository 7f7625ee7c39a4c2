/* CUDA 2-D pooling: max_pool2d (values and flat h*W+w indices), avg_pool2d, the adaptive
 * pools, and their backward kernels. Windows, divisors and NaN handling are engine/cpu/pool.c's:
 *   max       the scan starts at the window's first position inside the input and a larger
 *             value or any NaN takes over, rows outer, columns inner (ties keep the first)
 *   avg       [oy*sh - ph, +kh) cut at H + ph gives the pool size, then cut to the input;
 *             divisor_override, else the pool size (count_include_pad) or the count inside
 *   adaptive  rows floor(oy*H/oh) .. ceil((oy+1)*H/oh) - 1, columns alike
 * Inputs, grad_out and indices may have any strides; outputs are contiguous, or channels-last
 * dense (then a thread's linear index runs over n, y, x, c, so neighbours write neighbours). One thread per
 * output element forward; the max kernels give a thread 16 bytes' worth of neighbouring channels
 * where every operand is channels-last with C a multiple of that (the index arithmetic, which
 * bound them, is then shared). Backward gathers instead of scattering: one thread per grad_input
 * element visits the outputs whose window can contain it (for max, those whose index names it),
 * so no atomics, no zeroing, and the sums are deterministic. float16/bfloat16 add up in float,
 * float64 in double. Index arithmetic is int32 where everything fits (see fits32), else int64. */
#include <stdlib.h>

#include "kernels.cuh"

#include "memory_format.h"

namespace {

struct Planes {
    int64_t N, C, H, W;     /* N*C planes of H x W */
    int64_t sN, sC, sH, sW; /* element strides */
};

/* The same in the kernels' index type I: int32_t where every offset and product fits. */
template <typename I> struct PlanesI {
    I N, C, H, W, sN, sC, sH, sW;
};
template <typename I> PlanesI<I> narrow_planes(const Planes &p) { return PlanesI<I>{(I)p.N, (I)p.C, (I)p.H, (I)p.W, (I)p.sN, (I)p.sC, (I)p.sH, (I)p.sW}; }

Planes planes_of(const nn_tensor *t)
{
    int b = t->ndim == 4;
    return Planes{b ? t->shape[0] : 1, t->shape[b], t->shape[b + 1], t->shape[b + 2], b ? t->strides[0] : 0, t->strides[b], t->strides[b + 1],
                  t->strides[b + 2]};
}

/* n / d for n >= 0; the int32 path by a multiply-high and a shift (nn_cuda_div32): the backward
 * kernels, one thread per input element, were bound by hardware divisions. */
template <typename I> struct Div {
    I d;
    static Div of(I d) { return Div{d > 0 ? d : 1}; }
    __device__ __forceinline__ I operator()(I n) const { return n / d; }
};
template <> struct Div<int32_t> {
    int32_t d;
    uint32_t m, s;
    static Div of(int32_t d)
    {
        Div r;
        r.d = d < 1 ? 1 : d;
        nn_cuda_div32(r.d, &r.m, &r.s);
        return r;
    }
    __device__ __forceinline__ int32_t operator()(int32_t n) const
    {
        uint32_t t = __umulhi((uint32_t)n, m);
        return (int32_t)((t + (uint32_t)n) >> s);
    }
};

/* the divisors that take a flat index apart: C channels of h x w planes */
template <typename I> struct Flat {
    Div<I> C, h, w;
};
template <typename I> Flat<I> flat_of(int64_t C, int64_t h, int64_t w) { return Flat<I>{Div<I>::of((I)C), Div<I>::of((I)h), Div<I>::of((I)w)}; }

template <typename I> struct Win {
    I kh, kw, sh, sw, ph, pw, dh, dw;
    Div<I> by_sh, by_sw, by_kw;
};

template <typename I> Win<I> win_of(const int64_t *i)
{
    return Win<I>{(I)i[0], (I)i[1], (I)i[2], (I)i[3], (I)i[4], (I)i[5], (I)(i[6] > 0 ? i[6] : 1), (I)(i[7] > 0 ? i[7] : 1),
                  Div<I>::of((I)i[2]), Div<I>::of((I)i[3]), Div<I>::of((I)i[1])};
}

template <typename T> __device__ __forceinline__ typename nn_acc<T>::type lda(T v) { return (typename nn_acc<T>::type)v; }
template <> __device__ __forceinline__ float lda<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float lda<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T sta(typename nn_acc<T>::type v) { return (T)v; }
template <> __device__ __forceinline__ __half sta<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 sta<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename I> __device__ __forceinline__ I adaptive_start(I o, I in, I out) { return o * in / out; }
template <typename I> __device__ __forceinline__ I adaptive_end(I o, I in, I out) { return ((o + 1) * in + out - 1) / out; }

/* Dilated max window along one axis: first position inside the input, end (exclusive). */
template <typename I> __device__ __forceinline__ void max_window(I o, I k, I s, I p, I d, I n, I *start, I *end)
{
    I b = o * s - p, e = b + (k - 1) * d + 1;
    if (e > n) e = n;
    if (b < 0) b += (-b + d - 1) / d * d;
    *start = b, *end = e;
}

/* Average window along one axis: clipped [start, end) and the length counted with padding. */
template <typename I> __device__ __forceinline__ void avg_window(I o, I k, I s, I p, I n, I *start, I *end, I *padded)
{
    I b = o * s - p, e = b + k;
    if (e > n + p) e = n + p;
    *padded = e - b;
    if (b < 0) b = 0;
    if (e > n) e = n;
    *start = b, *end = e;
}

/* i = q * d + r */
template <typename I> __device__ __forceinline__ I divmod(I i, const Div<I> &d, I *r)
{
    I q = d(i);
    *r = i - q * d.d;
    return q;
}

/* (n, c, y, x) of a flat index over N*C planes of h x w, in memory order n, c, y, x or, when cl
 * (channels-last), n, y, x, c */
template <typename I> __device__ __forceinline__ void unflat_as(bool cl, I i, const Flat<I> &f, I *n, I *c, I *y, I *x)
{
    if (!cl) {
        i = divmod(i, f.w, x);
        i = divmod(i, f.h, y);
        *n = divmod(i, f.C, c);
    } else {
        i = divmod(i, f.C, c);
        i = divmod(i, f.w, x);
        *n = divmod(i, f.h, y);
    }
}

/* ---- max (also adaptive): values and indices ---- */

/* V consecutive elements through 16-byte accesses (V > 1: the address is 16-byte aligned), one at
 * a time for packs under 16 bytes (a vector's uint8 indices) */
template <typename T, int V> struct alignas(16) Pack {
    T v[V];
};
template <typename T, int V> __device__ __forceinline__ Pack<T, V> ldv(const T *p)
{
    Pack<T, V> r;
    if constexpr (V * sizeof(T) < 16)
#pragma unroll
        for (int j = 0; j < V; j++) r.v[j] = p[j];
    else
#pragma unroll
        for (int k = 0; k < (int)(V * sizeof(T) / 16); k++) reinterpret_cast<uint4 *>(r.v)[k] = reinterpret_cast<const uint4 *>(p)[k];
    return r;
}
template <typename T, int V> __device__ __forceinline__ void stv(T *p, const Pack<T, V> &r)
{
    if constexpr (V * sizeof(T) < 16)
#pragma unroll
        for (int j = 0; j < V; j++) p[j] = r.v[j];
    else
#pragma unroll
        for (int k = 0; k < (int)(V * sizeof(T) / 16); k++) reinterpret_cast<uint4 *>(p)[k] = reinterpret_cast<const uint4 *>(r.v)[k];
}

/* The index of input position (h, q) as output (oy, ox) records it: int64 h*W + q in the plane, or
 * (uint8 IX, a plain max pool's own record for its backward) the position in the undilated
 * window, (h - oy*sh + ph) * kw + (q - ox*sw + pw). */
template <typename IX, typename I> __device__ __forceinline__ I index_of(I h, I q, I oy, I ox, const Win<I> &w, I W)
{
    if constexpr (sizeof(IX) == 1) return (h - oy * w.sh + w.ph) * w.kw + (q - ox * w.sw + w.pw);
    else return h * W + q;
}

/* V > 1 (channels-last only): a thread takes V neighbouring channels, f.C dividing by C / V; the
 * planes' channel stride is 1 and their other strides multiples of V (see vec_width). */
template <typename T, typename I, int V, typename IX>
__global__ void max_fwd(const T *in, PlanesI<I> x, T *out, IX *ind, I oh, I ow, Flat<I> f, Win<I> w, bool adaptive, I total, bool cl)
{
    typedef typename nn_acc<T>::type A;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total; i += (I)gridDim.x * blockDim.x) {
        I n, c, oy, ox, h0, h1, w0, w1, dh = 1, dw = 1;
        unflat_as(cl, i, f, &n, &c, &oy, &ox);
        c *= V;
        if (adaptive) {
            h0 = adaptive_start(oy, x.H, oh), h1 = adaptive_end(oy, x.H, oh);
            w0 = adaptive_start(ox, x.W, ow), w1 = adaptive_end(ox, x.W, ow);
        } else {
            max_window(oy, w.kh, w.sh, w.ph, w.dh, x.H, &h0, &h1);
            max_window(ox, w.kw, w.sw, w.pw, w.dw, x.W, &w0, &w1);
            dh = w.dh, dw = w.dw;
        }
        const T *p = in + n * x.sN + c * x.sC;
        A best[V];
        Pack<IX, V> arg;
#pragma unroll
        for (int j = 0; j < V; j++) best[j] = -INFINITY, arg.v[j] = (IX)index_of<IX>(h0, w0, oy, ox, w, x.W);
        for (I h = h0; h < h1; h += dh)
            for (I q = w0; q < w1; q += dw) {
                Pack<T, V> v = ldv<T, V>(p + h * x.sH + q * x.sW);
#pragma unroll
                for (int j = 0; j < V; j++) {
                    A u = lda(v.v[j]);
                    if (u > best[j] || u != u) best[j] = u, arg.v[j] = (IX)index_of<IX>(h, q, oy, ox, w, x.W);
                }
            }
        Pack<T, V> o;
#pragma unroll
        for (int j = 0; j < V; j++) o.v[j] = sta<T>(best[j]);
        stv(out + (int64_t)i * V, o);
        stv(ind + (int64_t)i * V, arg);
    }
}

/* The outputs [o0, o1) along one axis whose window can hold input position h (n_in positions in,
 * n_out out). Adaptive: window o is [floor(o * n_in / n_out), ceil((o + 1) * n_in / n_out)), which
 * holds h exactly for floor(h * n_out / n_in) <= o < ceil((h + 1) * n_out / n_in). */
template <typename I>
__device__ __forceinline__ void out_span(I h, I n_in, I n_out, I k, I s, I p, I d, const Div<I> &by_s, bool adaptive, I *o0, I *o1)
{
    I b, e;
    if (adaptive) {
        b = h * n_out / n_in, e = ((h + 1) * n_out + n_in - 1) / n_in;
    } else {
        I lo = h + p - (k - 1) * d;
        b = lo <= 0 ? 0 : by_s(lo + s - 1), e = by_s(h + p) + 1;
    }
    *o0 = b < 0 ? 0 : b, *o1 = e > n_out ? n_out : e;
}

/* grad_input[n,c,h,w] = sum of grad_out over the outputs whose index is h*W+w. g: grad_out planes,
 * ix: index planes (same shape), gx: grad_input, channels-last dense (a contiguous one is
 * max_bwd_cols's). V as max_fwd's. */
template <typename T, typename I, int V, typename IX>
__global__ void max_bwd(const T *go, PlanesI<I> g, const IX *ind, PlanesI<I> ix, T *gx, PlanesI<I> x, Flat<I> f, Win<I> w, bool adaptive,
                        I total)
{
    typedef typename nn_acc<T>::type A;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total; i += (I)gridDim.x * blockDim.x) {
        I n, c, h, q;
        unflat_as(true, i, f, &n, &c, &h, &q);
        c *= V;
        I y0, y1, x0, x1; /* output rows [y0, y1) and columns [x0, x1) to visit */
        out_span(h, x.H, g.H, w.kh, w.sh, w.ph, w.dh, w.by_sh, adaptive, &y0, &y1);
        out_span(q, x.W, g.W, w.kw, w.sw, w.pw, w.dw, w.by_sw, adaptive, &x0, &x1);
        const T *gp = go + n * g.sN + c * g.sC;
        const IX *ip = ind + n * ix.sN + c * ix.sC;
        A acc[V] = {};
        for (I oy = y0; oy < y1; oy++)
            for (I ox = x0; ox < x1; ox++) {
                I me = index_of<IX>(h, q, oy, ox, w, x.W);
                Pack<IX, V> k = ldv<IX, V>(ip + oy * ix.sH + ox * ix.sW);
                bool any = false;
#pragma unroll
                for (int j = 0; j < V; j++) any |= (I)k.v[j] == me;
                if (!any) continue;
                Pack<T, V> v = ldv<T, V>(gp + oy * g.sH + ox * g.sW);
#pragma unroll
                for (int j = 0; j < V; j++)
                    if ((I)k.v[j] == me) acc[j] += lda(v.v[j]);
            }
        Pack<T, V> o;
#pragma unroll
        for (int j = 0; j < V; j++) o.v[j] = sta<T>(acc[j]);
        stv(gx + (int64_t)i * V, o);
    }
}

/* max_bwd for a contiguous grad_input: a thread takes Q neighbouring columns of a row (f divides
 * by C, H and the row's ceil(W / Q) groups), visiting the outputs their windows share once. */
template <typename T, typename I, int Q, typename IX>
__global__ void max_bwd_cols(const T *go, PlanesI<I> g, const IX *ind, PlanesI<I> ix, T *gx, PlanesI<I> x, Flat<I> f, Win<I> w,
                             bool adaptive, I total)
{
    typedef typename nn_acc<T>::type A;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total; i += (I)gridDim.x * blockDim.x) {
        I n, c, h, qg;
        unflat_as(false, i, f, &n, &c, &h, &qg);
        I qa = qg * Q, nq = x.W - qa < Q ? x.W - qa : Q, y0, y1, x0, x1, unused;
        out_span(h, x.H, g.H, w.kh, w.sh, w.ph, w.dh, w.by_sh, adaptive, &y0, &y1);
        out_span(qa, x.W, g.W, w.kw, w.sw, w.pw, w.dw, w.by_sw, adaptive, &x0, &unused);
        out_span(qa + nq - 1, x.W, g.W, w.kw, w.sw, w.pw, w.dw, w.by_sw, adaptive, &unused, &x1);
        const T *gp = go + n * g.sN + c * g.sC;
        const IX *ip = ind + n * ix.sN + c * ix.sC;
        int64_t first = h * x.W + qa;
        A acc[Q] = {};
        for (I oy = y0; oy < y1; oy++)
            for (I ox = x0; ox < x1; ox++) {
                int64_t j;
                if constexpr (sizeof(IX) == 1) { /* the window's row must be h; j its column's place in the group */
                    I kx, ky = divmod((I)ip[oy * ix.sH + ox * ix.sW], w.by_kw, &kx);
                    j = oy * w.sh - w.ph + ky == h ? (int64_t)(ox * w.sw - w.pw + kx - qa) : -1;
                } else {
                    j = ip[oy * ix.sH + ox * ix.sW] - first;
                }
                if (j < 0 || j >= nq) continue;
                A v = lda(gp[oy * g.sH + ox * g.sW]);
#pragma unroll
                for (int k = 0; k < Q; k++)
                    if (j == k) acc[k] += v;
            }
        T *out = gx + n * x.sN + c * x.sC + h * x.sH + qa * x.sW;
#pragma unroll
        for (int k = 0; k < Q; k++)
            if (k < nq) out[k * x.sW] = sta<T>(acc[k]);
    }
}

/* ---- max with a K x K window at stride S: the common pools, with compile-time offsets ----
 * ncu found max_fwd and max_bwd_cols bound by their instructions (about 240 per output and 90 per
 * input element on AlexNet's first pool), not by memory: runtime windows, strides and divisions.
 * These take an undilated, non-adaptive window whose size and stride are template constants, an
 * input whose rows are dense and contiguous outputs, with the same scan order, NaN rule, ties
 * and sums as the general kernels. */
/* the flat index a max records: the window position (uint8) or h * W + q in the plane */
template <typename IX, int K> __device__ __forceinline__ IX fixed_index(int a, int b, int h0, int w0, int W)
{
    if constexpr (sizeof(IX) == 1) return (IX)(a * K + b);
    else return (IX)((h0 + a) * W + (w0 + b));
}

template <typename T, typename IX, int K, int S>
__global__ void max_fwd_fixed(const T *in, PlanesI<int> x, T *out, IX *ind, Flat<int> f, int ph, int pw, int total)
{
    typedef typename nn_acc<T>::type A;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int n, c, oy, ox;
        unflat_as(false, i, f, &n, &c, &oy, &ox);
        const int h0 = oy * S - ph, w0 = ox * S - pw;
        const T *p = in + n * x.sN + c * x.sC + h0 * x.sH + w0;
        A best = -INFINITY;
        int ba = h0 < 0 ? -h0 : 0, bb = w0 < 0 ? -w0 : 0; /* the first position inside: the index of an all -inf window */
        auto consider = [&](int a, int b, A u) {
            if (u > best || u != u) best = u, ba = a, bb = b;
        };
        if (h0 >= 0 && w0 >= 0 && h0 + K <= x.H && w0 + K <= x.W) {
            A v[K][K];
#pragma unroll
            for (int a = 0; a < K; a++)
#pragma unroll
                for (int b = 0; b < K; b++) v[a][b] = lda(p[a * x.sH + b]);
#pragma unroll
            for (int a = 0; a < K; a++)
#pragma unroll
                for (int b = 0; b < K; b++) consider(a, b, v[a][b]);
        } else {
#pragma unroll
            for (int a = 0; a < K; a++)
#pragma unroll
                for (int b = 0; b < K; b++)
                    if (h0 + a >= 0 && h0 + a < x.H && w0 + b >= 0 && w0 + b < x.W) consider(a, b, lda(p[a * x.sH + b]));
        }
        out[i] = sta<T>(best);
        ind[i] = fixed_index<IX, K>(ba, bb, h0, w0, x.W);
    }
}

/* grad_input for a contiguous grad_input, Q neighbouring columns of a row a thread (as
 * max_bwd_cols): the outputs whose window can hold them are rows oy0..oy0+R-1 and columns
 * ox0..ox0+C-1, R and C known at compile time; each one's index names at most one of them. */
template <typename T, typename IX, int K, int S, int Q>
__global__ void max_bwd_fixed(const T *go, PlanesI<int> g, const IX *ind, PlanesI<int> ix, T *gx, PlanesI<int> x, Flat<int> f, int ph, int pw,
                              int total)
{
    typedef typename nn_acc<T>::type A;
    constexpr int R = (K - 1) / S + 1, C = (Q - 1 + K - 1) / S + 1;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int n, c, h, qg;
        unflat_as(false, i, f, &n, &c, &h, &qg);
        const int qa = qg * Q, nq = x.W - qa < Q ? x.W - qa : Q;
        /* outputs oy with oy*S - ph <= h <= oy*S - ph + K - 1, columns alike over qa..qa+nq-1 */
        const int ylo = h + ph - (K - 1), xlo = qa + pw - (K - 1);
        const int oy0 = ylo <= 0 ? 0 : (ylo + S - 1) / S, ox0 = xlo <= 0 ? 0 : (xlo + S - 1) / S;
        const int oy1 = min((h + ph) / S + 1, g.H), ox1 = min((qa + nq - 1 + pw) / S + 1, g.W);
        const T *gp = go + n * g.sN + c * g.sC;
        const IX *ip = ind + n * ix.sN + c * ix.sC;
        IX k[R][C];
#pragma unroll
        for (int a = 0; a < R; a++)
#pragma unroll
            for (int b = 0; b < C; b++)
                if (oy0 + a < oy1 && ox0 + b < ox1) k[a][b] = ip[(oy0 + a) * ix.sH + (ox0 + b) * ix.sW];
        A acc[Q] = {};
#pragma unroll
        for (int a = 0; a < R; a++)
#pragma unroll
            for (int b = 0; b < C; b++) {
                const int oy = oy0 + a, ox = ox0 + b;
                if (oy >= oy1 || ox >= ox1) continue;
                int j; /* the recorded position's column in the group, when its row is h */
                if constexpr (sizeof(IX) == 1) {
                    const int wy = k[a][b] / K, wx = k[a][b] - wy * K;
                    j = oy * S - ph + wy == h ? ox * S - pw + wx - qa : -1;
                } else {
                    const int64_t at = (int64_t)k[a][b] - ((int64_t)h * x.W + qa);
                    j = at >= 0 && at < nq ? (int)at : -1;
                }
                if (j < 0 || j >= nq) continue;
                const A v = lda(gp[oy * g.sH + ox * g.sW]);
#pragma unroll
                for (int q = 0; q < Q; q++)
                    if (j == q) acc[q] += v;
            }
        T *o = gx + n * x.sN + c * x.sC + h * x.sH + qa;
#pragma unroll
        for (int q = 0; q < Q; q++)
            if (q < nq) o[q] = sta<T>(acc[q]);
    }
}

/* The compile-time pool for a plain max pool's window (kh, kw, sh, sw, ph, pw, dh, dw in i): K, S
 * as 10 K + S, or 0 when it is not one of the common ones. */
inline int fixed_pool(const int64_t *i, bool adaptive)
{
    if (adaptive || i[0] != i[1] || i[2] != i[3] || i[6] > 1 || i[7] > 1) return 0;
    const int ks = (int)(10 * i[0] + i[2]);
    return ks == 32 || ks == 22 ? ks : 0;
}

/* ---- average (also adaptive) ---- */

template <typename I> struct AvgArgs {
    Win<I> w;
    bool include_pad, adaptive;
    int64_t divisor;
};

/* The window of output (oy, ox) of an oh x ow output over an H x W input, and its divisor. */
template <typename I>
__device__ __forceinline__ double avg_cell(const AvgArgs<I> &m, I H, I W, I oh, I ow, I oy, I ox, I *h0, I *h1, I *w0, I *w1)
{
    if (m.adaptive) {
        *h0 = adaptive_start(oy, H, oh), *h1 = adaptive_end(oy, H, oh);
        *w0 = adaptive_start(ox, W, ow), *w1 = adaptive_end(ox, W, ow);
        return (double)((*h1 - *h0) * (*w1 - *w0));
    }
    I ph, pw;
    avg_window(oy, m.w.kh, m.w.sh, m.w.ph, H, h0, h1, &ph);
    avg_window(ox, m.w.kw, m.w.sw, m.w.pw, W, w0, w1, &pw);
    if (m.divisor) return (double)m.divisor;
    if (m.include_pad) return (double)(ph * pw);
    return (double)((*h1 - *h0) * (*w1 - *w0));
}

template <typename T, typename I>
__global__ void avg_fwd(const T *in, PlanesI<I> x, T *out, I oh, I ow, Flat<I> f, AvgArgs<I> m, I total, bool cl)
{
    typedef typename nn_acc<T>::type A;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total; i += (I)gridDim.x * blockDim.x) {
        I n, c, oy, ox, h0, h1, w0, w1;
        unflat_as(cl, i, f, &n, &c, &oy, &ox);
        double div = avg_cell(m, x.H, x.W, oh, ow, oy, ox, &h0, &h1, &w0, &w1);
        if (h0 >= h1 || w0 >= w1) {
            out[i] = sta<T>((A)0);
            continue;
        }
        const T *p = in + n * x.sN + c * x.sC;
        A sum = 0;
        for (I h = h0; h < h1; h++)
            for (I q = w0; q < w1; q++) sum += lda(p[h * x.sH + q * x.sW]);
        out[i] = sta<T>(sum / (A)div);
    }
}

template <typename T, typename I>
__global__ void avg_bwd(const T *go, PlanesI<I> g, T *gx, PlanesI<I> x, Flat<I> f, AvgArgs<I> m, I total, bool cl)
{
    typedef typename nn_acc<T>::type A;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total; i += (I)gridDim.x * blockDim.x) {
        I n, c, h, q;
        unflat_as(cl, i, f, &n, &c, &h, &q);
        I y0, y1, x0, x1;
        out_span(h, x.H, g.H, m.w.kh, m.w.sh, m.w.ph, (I)1, m.w.by_sh, m.adaptive, &y0, &y1);
        out_span(q, x.W, g.W, m.w.kw, m.w.sw, m.w.pw, (I)1, m.w.by_sw, m.adaptive, &x0, &x1);
        const T *gp = go + n * g.sN + c * g.sC;
        A acc = 0;
        for (I oy = y0; oy < y1; oy++)
            for (I ox = x0; ox < x1; ox++) {
                I h0, h1, w0, w1;
                double div = avg_cell(m, x.H, x.W, g.H, g.W, oy, ox, &h0, &h1, &w0, &w1);
                if (h < h0 || h >= h1 || q < w0 || q >= w1) continue;
                acc += lda(gp[oy * g.sH + ox * g.sW]) / (A)div;
            }
        gx[i] = sta<T>(acc);
    }
}

int64_t numel_planes(const Planes &p, int64_t h, int64_t w) { return p.N * p.C * h * w; }

/* Can the kernels index in int32? Offsets and counts below 2^31, and plane sizes and window
 * parameters small enough that the window arithmetic (a few products of two of them) is too. */
bool fits32(const Planes *ps, int n, const int64_t *params, int np)
{
    const int64_t small = 1 << 14, big = (int64_t)1 << 31;
    for (int k = 0; k < n; k++) {
        const Planes &p = ps[k];
        if (p.H > small || p.W > small || p.N * p.C * p.H * p.W >= big / 2) return false; /* room for the grid-stride step */
        int64_t extent = (p.N - 1) * llabs(p.sN) + (p.C - 1) * llabs(p.sC) + (p.H - 1) * llabs(p.sH) + (p.W - 1) * llabs(p.sW);
        if (extent >= big) return false;
    }
    for (int k = 0; k < np; k++)
        if (params[k] > small || params[k] < -small) return false;
    return true;
}

/* a 4-D output dense in channels-last order, not contiguous */
bool out_cl(const nn_tensor *t) { return t->ndim == 4 && !nn_is_contiguous(t) && nn_is_contiguous_as(t, NN_CHANNELS_LAST); }

nn_status check_io(const nn_kargs *a, int nout)
{
    for (int k = 0; k < nout; k++)
        if (!nn_is_contiguous(a->out[k]) && !out_cl(a->out[k]))
            return nn_error(NN_ERR_ARG, "%s: expects contiguous or channels-last outputs", nn_op_name(a->op));
    if (nout == 2 && out_cl(a->out[0]) != out_cl(a->out[1]))
        return nn_error(NN_ERR_ARG, "%s: values and indices must share a layout", nn_op_name(a->op));
    nn_dtype dt = a->out[0]->dtype;
    if (!nn_dtype_is_float(dt) || a->in[0]->dtype != dt) return nn_not_implemented(a, a->in[0]->dtype);
    int dev = nn_cuda_index(a);
    for (int k = 0; k < a->nin; k++)
        if (a->in[k]->storage->device.type != NN_CUDA || a->in[k]->storage->device.index != dev)
            return nn_error(NN_ERR_DEVICE, "%s: expected all tensors to be on the same device", nn_op_name(a->op));
    return NN_OK;
}

/* Channels per thread for the max kernels: 16 bytes of T where every plane is channels-last with
 * channel stride 1, other strides and C multiples of that, and 16-byte aligned data; else 1. */
int vec_width(const Planes *ps, const nn_tensor *const *ts, int n, nn_dtype dt)
{
    int v = (int)(16 / nn_dtype_size(dt));
    for (int k = 0; k < n; k++) {
        const Planes &p = ps[k];
        if (p.sC != 1 || p.C % v || p.sN % v || p.sH % v || p.sW % v || ((uintptr_t)nn_data(ts[k]) & 15)) return 1;
    }
    return v;
}

/* launches kernel K<T, I, V> for the output's dtype and the vector width v */
#define MAX_LAUNCH(K, v, total, st, ...)                                                                                          \
    NN_DISPATCH_FLOATS(a->out[0]->dtype, a, {                                                                                    \
        constexpr int W = 16 / sizeof(scalar_t);                                                                                   \
        if (v == W) nn_launch<K<scalar_t, I, W, IX>>(nn_cuda_blocks((total) / W), 256, st, __VA_ARGS__);                           \
        else nn_launch<K<scalar_t, I, 1, IX>>(nn_cuda_blocks(total), 256, st, __VA_ARGS__);                                        \
    })

template <typename I, typename IX>
nn_status launch_max(const nn_kargs *a, const Planes &x, int64_t oh, int64_t ow, bool adaptive, int64_t total, cudaStream_t st)
{
    nn_tensor *y = a->out[0];
    IX *ind = (IX *)nn_data(a->out[1]);
    bool cl = out_cl(y);
    const int ks = sizeof(I) == 4 && !cl && x.sW == 1 ? fixed_pool(a->i, adaptive) : 0;
    if (ks) {
#define FIXED_FWD(K, S)                                                                                                                   \
    nn_launch<max_fwd_fixed<scalar_t, IX, K, S>>(nn_cuda_blocks(total), 256, st, (const scalar_t *)nn_data(a->in[0]), narrow_planes<int>(x), \
                                                 (scalar_t *)nn_data(y), ind, flat_of<int>(x.C, oh, ow), (int)a->i[4], (int)a->i[5], (int)total)
        NN_DISPATCH_FLOATS(y->dtype, a, if (ks == 32) FIXED_FWD(3, 2); else FIXED_FWD(2, 2));
#undef FIXED_FWD
        NN_CHECK_LAUNCH();
        return NN_OK;
    }
    const nn_tensor *ts[3] = {a->in[0], y, a->out[1]};
    Planes ps[3] = {x, planes_of(y), planes_of(a->out[1])};
    int v = cl ? vec_width(ps, ts, 3, y->dtype) : 1;
    MAX_LAUNCH(max_fwd, v, total, st, (const scalar_t *)nn_data(a->in[0]), narrow_planes<I>(x), (scalar_t *)nn_data(y), ind, (I)oh, (I)ow,
               flat_of<I>(x.C / v, oh, ow), win_of<I>(a->i), adaptive, (I)(total / v), cl);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

/* int64 indices, or uint8 window positions (index_of) for a plain max pool without dilation whose
 * window has at most 256 positions */
nn_status check_index_dtype(const nn_kargs *a, const nn_tensor *ind, bool adaptive)
{
    if (ind->dtype == NN_I64) return NN_OK;
    if (ind->dtype == NN_U8 && !adaptive && a->i[6] <= 1 && a->i[7] <= 1 && a->i[0] * a->i[1] <= 256) return NN_OK;
    return nn_error(NN_ERR_DTYPE, "%s: indices must be int64 (uint8 window positions only for an undilated window of up to 256)",
                    nn_op_name(a->op));
}

nn_status max_common(const nn_kargs *a, bool adaptive)
{
    nn_status s = check_io(a, 2);
    if (!s) s = check_index_dtype(a, a->out[1], adaptive);
    if (s) return s;
    nn_tensor *y = a->out[0];
    Planes x = planes_of(a->in[0]), yp = planes_of(y);
    int64_t oh = y->shape[y->ndim - 2], ow = y->shape[y->ndim - 1], total = numel_planes(x, oh, ow);
    if (!total) return NN_OK;
    cudaStream_t st = nn_cuda_stream(nn_cuda_index(a));
    Planes both[2] = {x, yp};
    bool i32 = fits32(both, 2, a->i, 8);
    if (a->out[1]->dtype == NN_U8)
        return i32 ? launch_max<int32_t, uint8_t>(a, x, oh, ow, adaptive, total, st) : launch_max<int64_t, uint8_t>(a, x, oh, ow, adaptive, total, st);
    return i32 ? launch_max<int32_t, int64_t>(a, x, oh, ow, adaptive, total, st) : launch_max<int64_t, int64_t>(a, x, oh, ow, adaptive, total, st);
}

template <typename I, typename IX>
nn_status launch_max_bwd(const nn_kargs *a, const Planes &g, const Planes &ix, const Planes &x, bool adaptive, int64_t total, cudaStream_t st)
{
    nn_tensor *gx = a->out[0];
    const IX *ind = (const IX *)nn_data(a->in[1]);
    if (!out_cl(gx)) { /* contiguous: Q columns a thread */
        constexpr int Q = 8;
        int64_t groups = (x.W + Q - 1) / Q, n = x.N * x.C * x.H * groups;
        const int ks = sizeof(I) == 4 ? fixed_pool(a->i, adaptive) : 0;
        if (ks) {
#define FIXED_BWD(K, S)                                                                                                                     \
    nn_launch<max_bwd_fixed<scalar_t, IX, K, S, Q>>(nn_cuda_blocks(n), 256, st, (const scalar_t *)nn_data(a->in[0]), narrow_planes<int>(g), ind, \
                                                    narrow_planes<int>(ix), (scalar_t *)nn_data(gx), narrow_planes<int>(x),                      \
                                                    flat_of<int>(x.C, x.H, groups), (int)a->i[4], (int)a->i[5], (int)n)
            NN_DISPATCH_FLOATS(gx->dtype, a, if (ks == 32) FIXED_BWD(3, 2); else FIXED_BWD(2, 2));
#undef FIXED_BWD
            NN_CHECK_LAUNCH();
            return NN_OK;
        }
        NN_DISPATCH_FLOATS(gx->dtype, a,
                           nn_launch<max_bwd_cols<scalar_t, I, Q, IX>>(nn_cuda_blocks(n), 256, st, (const scalar_t *)nn_data(a->in[0]), narrow_planes<I>(g),
                                                                   ind, narrow_planes<I>(ix), (scalar_t *)nn_data(gx), narrow_planes<I>(x),
                                                                   flat_of<I>(x.C, x.H, groups), win_of<I>(a->i), adaptive, (I)n));
        NN_CHECK_LAUNCH();
        return NN_OK;
    }
    const nn_tensor *ts[3] = {a->in[0], a->in[1], gx};
    Planes ps[3] = {g, ix, x};
    int v = vec_width(ps, ts, 3, gx->dtype);
    MAX_LAUNCH(max_bwd, v, total, st, (const scalar_t *)nn_data(a->in[0]), narrow_planes<I>(g), ind, narrow_planes<I>(ix), (scalar_t *)nn_data(gx),
               narrow_planes<I>(x), flat_of<I>(x.C / v, x.H, x.W), win_of<I>(a->i), adaptive, (I)(total / v));
    NN_CHECK_LAUNCH();
    return NN_OK;
}

template <typename I>
nn_status launch_avg(const nn_kargs *a, const Planes &x, const Planes &g, bool adaptive, bool backward, int64_t total, cudaStream_t st)
{
    nn_tensor *in = a->in[0], *out = a->out[0];
    AvgArgs<I> m;
    m.w = win_of<I>(a->i);
    m.adaptive = adaptive;
    m.include_pad = !adaptive && a->i[6] != 0;
    m.divisor = adaptive ? 0 : a->i[7];
    unsigned blocks = nn_cuda_blocks(total);
    if (!backward) {
        NN_DISPATCH_FLOATS(out->dtype, a,
                           nn_launch<avg_fwd<scalar_t, I>>(blocks, 256, st, (const scalar_t *)nn_data(in), narrow_planes<I>(x), (scalar_t *)nn_data(out),
                                                                        (I)g.H, (I)g.W, flat_of<I>(x.C, g.H, g.W), m, (I)total, out_cl(out)));
    } else {
        NN_DISPATCH_FLOATS(out->dtype, a,
                           nn_launch<avg_bwd<scalar_t, I>>(blocks, 256, st, (const scalar_t *)nn_data(in), narrow_planes<I>(g), (scalar_t *)nn_data(out),
                                                                        narrow_planes<I>(x), flat_of<I>(x.C, x.H, x.W), m, (I)total, out_cl(out)));
    }
    NN_CHECK_LAUNCH();
    return NN_OK;
}

nn_status avg_common(const nn_kargs *a, bool adaptive, bool backward)
{
    nn_status s = check_io(a, 1);
    if (s) return s;
    nn_tensor *in = a->in[0], *out = a->out[0];
    Planes x = planes_of(backward ? out : in), g = planes_of(backward ? in : out);
    if (x.N != g.N || x.C != g.C) return nn_error(NN_ERR_SHAPE, "%s: input and output planes do not match", nn_op_name(a->op));
    int64_t total = numel_planes(backward ? x : g, backward ? x.H : g.H, backward ? x.W : g.W);
    if (!total) return NN_OK;
    cudaStream_t st = nn_cuda_stream(nn_cuda_index(a));
    Planes both[2] = {x, g};
    int64_t params[6] = {a->i[0], a->i[1], a->i[2], a->i[3], a->i[4], a->i[5]}; /* i[7], the divisor, stays int64 */
    return fits32(both, 2, params, 6) ? launch_avg<int32_t>(a, x, g, adaptive, backward, total, st)
                                      : launch_avg<int64_t>(a, x, g, adaptive, backward, total, st);
}

} // namespace

extern "C" nn_status nn_cuda_max_pool2d(const nn_kargs *a) { return max_common(a, false); }
extern "C" nn_status nn_cuda_adaptive_max_pool2d(const nn_kargs *a) { return max_common(a, true); }

/* The forward's i[] come along: kernel size 0 means an adaptive pool (its windows follow from the
 * shapes of grad_out and grad_input). */
extern "C" nn_status nn_cuda_max_pool2d_backward(const nn_kargs *a)
{
    bool adaptive = a->i[0] <= 0;
    nn_status s = check_io(a, 1);
    if (!s) s = check_index_dtype(a, a->in[1], adaptive);
    if (s) return s;
    nn_tensor *gx = a->out[0];
    Planes g = planes_of(a->in[0]), ix = planes_of(a->in[1]), x = planes_of(gx);
    if (ix.N != g.N || ix.C != g.C || ix.H != g.H || ix.W != g.W || x.N != g.N || x.C != g.C)
        return nn_error(NN_ERR_SHAPE, "max_pool2d_backward: grad_output, indices and grad_input do not match");
    int64_t total = numel_planes(x, x.H, x.W);
    if (!total) return NN_OK;
    cudaStream_t st = nn_cuda_stream(nn_cuda_index(a));
    Planes all[3] = {g, ix, x};
    bool i32 = fits32(all, 3, a->i, 8);
    if (a->in[1]->dtype == NN_U8)
        return i32 ? launch_max_bwd<int32_t, uint8_t>(a, g, ix, x, adaptive, total, st) : launch_max_bwd<int64_t, uint8_t>(a, g, ix, x, adaptive, total, st);
    return i32 ? launch_max_bwd<int32_t, int64_t>(a, g, ix, x, adaptive, total, st) : launch_max_bwd<int64_t, int64_t>(a, g, ix, x, adaptive, total, st);
}

extern "C" nn_status nn_cuda_avg_pool2d(const nn_kargs *a) { return avg_common(a, false, false); }
extern "C" nn_status nn_cuda_avg_pool2d_backward(const nn_kargs *a) { return avg_common(a, false, true); }
extern "C" nn_status nn_cuda_adaptive_avg_pool2d(const nn_kargs *a) { return avg_common(a, true, false); }
extern "C" nn_status nn_cuda_adaptive_avg_pool2d_backward(const nn_kargs *a) { return avg_common(a, true, true); }
