/* CUDA 2-D pooling: max_pool2d (values and flat h*W+w indices), avg_pool2d, the adaptive
 * pools, and their backward kernels. Windows, divisors and NaN handling are engine/cpu/pool.c's:
 *   max       the scan starts at the window's first position inside the input and a larger
 *             value or any NaN takes over, rows outer, columns inner (ties keep the first)
 *   avg       [oy*sh - ph, +kh) cut at H + ph gives the pool size, then cut to the input;
 *             divisor_override, else the pool size (count_include_pad) or the count inside
 *   adaptive  rows floor(oy*H/oh) .. ceil((oy+1)*H/oh) - 1, columns alike
 * Inputs, grad_out and indices may have any strides; outputs are contiguous. One thread per
 * output element forward. Backward gathers instead of scattering: one thread per grad_input
 * element visits the outputs whose window can contain it (for max, those whose index names it),
 * so no atomics, no zeroing, and the sums are deterministic. float16/bfloat16 add up in float,
 * float64 in double. */
#include "kernels.cuh"

namespace {

struct Planes {
    int64_t N, C, H, W;     /* N*C planes of H x W */
    int64_t sN, sC, sH, sW; /* element strides */
};

Planes planes_of(const nn_tensor *t)
{
    int b = t->ndim == 4;
    return Planes{b ? t->shape[0] : 1, t->shape[b], t->shape[b + 1], t->shape[b + 2], b ? t->strides[0] : 0, t->strides[b], t->strides[b + 1],
                  t->strides[b + 2]};
}

struct Win {
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

Win win_of(const int64_t *i) { return Win{i[0], i[1], i[2], i[3], i[4], i[5], i[6] > 0 ? i[6] : 1, i[7] > 0 ? i[7] : 1}; }

template <typename T> __device__ __forceinline__ typename nn_acc<T>::type lda(T v) { return (typename nn_acc<T>::type)v; }
template <> __device__ __forceinline__ float lda<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float lda<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T sta(typename nn_acc<T>::type v) { return (T)v; }
template <> __device__ __forceinline__ __half sta<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 sta<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

__device__ __forceinline__ int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return o * in / out; }
__device__ __forceinline__ int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

/* Dilated max window along one axis: first position inside the input, end (exclusive). */
__device__ __forceinline__ void max_window(int64_t o, int64_t k, int64_t s, int64_t p, int64_t d, int64_t n, int64_t *start, int64_t *end)
{
    int64_t b = o * s - p, e = b + (k - 1) * d + 1;
    if (e > n) e = n;
    if (b < 0) b += (-b + d - 1) / d * d;
    *start = b, *end = e;
}

/* Average window along one axis: clipped [start, end) and the length counted with padding. */
__device__ __forceinline__ void avg_window(int64_t o, int64_t k, int64_t s, int64_t p, int64_t n, int64_t *start, int64_t *end, int64_t *padded)
{
    int64_t b = o * s - p, e = b + k;
    if (e > n + p) e = n + p;
    *padded = e - b;
    if (b < 0) b = 0;
    if (e > n) e = n;
    *start = b, *end = e;
}

/* (n, c, y, x) of a flat index over N*C planes of h x w */
__device__ __forceinline__ void unflat(int64_t i, int64_t C, int64_t h, int64_t w, int64_t *n, int64_t *c, int64_t *y, int64_t *x)
{
    *x = i % w;
    i /= w;
    *y = i % h;
    i /= h;
    *c = i % C;
    *n = i / C;
}

/* ---- max (also adaptive): values and indices ---- */

template <typename T>
__global__ void max_fwd(const T *in, Planes x, T *out, int64_t *ind, int64_t oh, int64_t ow, Win w, bool adaptive, int64_t total)
{
    typedef typename nn_acc<T>::type A;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t n, c, oy, ox, h0, h1, w0, w1, dh = 1, dw = 1;
        unflat(i, x.C, oh, ow, &n, &c, &oy, &ox);
        if (adaptive) {
            h0 = adaptive_start(oy, x.H, oh), h1 = adaptive_end(oy, x.H, oh);
            w0 = adaptive_start(ox, x.W, ow), w1 = adaptive_end(ox, x.W, ow);
        } else {
            max_window(oy, w.kh, w.sh, w.ph, w.dh, x.H, &h0, &h1);
            max_window(ox, w.kw, w.sw, w.pw, w.dw, x.W, &w0, &w1);
            dh = w.dh, dw = w.dw;
        }
        const T *p = in + n * x.sN + c * x.sC;
        A best = -INFINITY;
        int64_t arg = h0 * x.W + w0;
        for (int64_t h = h0; h < h1; h += dh)
            for (int64_t q = w0; q < w1; q += dw) {
                A v = lda(p[h * x.sH + q * x.sW]);
                if (v > best || v != v) best = v, arg = h * x.W + q;
            }
        out[i] = sta<T>(best);
        ind[i] = arg;
    }
}

/* grad_input[n,c,h,w] = sum of grad_out over the outputs whose index is h*W+w. g: grad_out planes,
 * ix: index planes (same shape), gx: grad_input (contiguous, planes of H x W). */
template <typename T>
__global__ void max_bwd(const T *go, Planes g, const int64_t *ind, Planes ix, T *gx, Planes x, Win w, bool adaptive, int64_t total)
{
    typedef typename nn_acc<T>::type A;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t n, c, h, q;
        unflat(i, x.C, x.H, x.W, &n, &c, &h, &q);
        int64_t y0, y1, x0, x1; /* output rows [y0, y1) and columns [x0, x1) to visit */
        if (adaptive) {
            y0 = h * g.H / x.H - 1, y1 = ((h + 1) * g.H + x.H - 1) / x.H + 1;
            x0 = q * g.W / x.W - 1, x1 = ((q + 1) * g.W + x.W - 1) / x.W + 1;
        } else {
            int64_t lo = h + w.ph - (w.kh - 1) * w.dh;
            y0 = lo <= 0 ? 0 : (lo + w.sh - 1) / w.sh, y1 = (h + w.ph) / w.sh + 1;
            lo = q + w.pw - (w.kw - 1) * w.dw;
            x0 = lo <= 0 ? 0 : (lo + w.sw - 1) / w.sw, x1 = (q + w.pw) / w.sw + 1;
        }
        y0 = y0 < 0 ? 0 : y0, x0 = x0 < 0 ? 0 : x0;
        y1 = y1 > g.H ? g.H : y1, x1 = x1 > g.W ? g.W : x1;
        const T *gp = go + n * g.sN + c * g.sC;
        const int64_t *ip = ind + n * ix.sN + c * ix.sC;
        int64_t me = h * x.W + q;
        A acc = 0;
        for (int64_t oy = y0; oy < y1; oy++)
            for (int64_t ox = x0; ox < x1; ox++)
                if (ip[oy * ix.sH + ox * ix.sW] == me) acc += lda(gp[oy * g.sH + ox * g.sW]);
        gx[i] = sta<T>(acc);
    }
}

/* ---- average (also adaptive) ---- */

struct AvgArgs {
    Win w;
    bool include_pad, adaptive;
    int64_t divisor;
};

/* The window of output (oy, ox) of an oh x ow output over an H x W input, and its divisor. */
__device__ __forceinline__ double avg_cell(const AvgArgs &m, int64_t H, int64_t W, int64_t oh, int64_t ow, int64_t oy, int64_t ox, int64_t *h0,
                                           int64_t *h1, int64_t *w0, int64_t *w1)
{
    if (m.adaptive) {
        *h0 = adaptive_start(oy, H, oh), *h1 = adaptive_end(oy, H, oh);
        *w0 = adaptive_start(ox, W, ow), *w1 = adaptive_end(ox, W, ow);
        return (double)((*h1 - *h0) * (*w1 - *w0));
    }
    int64_t ph, pw;
    avg_window(oy, m.w.kh, m.w.sh, m.w.ph, H, h0, h1, &ph);
    avg_window(ox, m.w.kw, m.w.sw, m.w.pw, W, w0, w1, &pw);
    if (m.divisor) return (double)m.divisor;
    if (m.include_pad) return (double)(ph * pw);
    return (double)((*h1 - *h0) * (*w1 - *w0));
}

template <typename T>
__global__ void avg_fwd(const T *in, Planes x, T *out, int64_t oh, int64_t ow, AvgArgs m, int64_t total)
{
    typedef typename nn_acc<T>::type A;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t n, c, oy, ox, h0, h1, w0, w1;
        unflat(i, x.C, oh, ow, &n, &c, &oy, &ox);
        double div = avg_cell(m, x.H, x.W, oh, ow, oy, ox, &h0, &h1, &w0, &w1);
        if (h0 >= h1 || w0 >= w1) {
            out[i] = sta<T>((A)0);
            continue;
        }
        const T *p = in + n * x.sN + c * x.sC;
        A sum = 0;
        for (int64_t h = h0; h < h1; h++)
            for (int64_t q = w0; q < w1; q++) sum += lda(p[h * x.sH + q * x.sW]);
        out[i] = sta<T>(sum / (A)div);
    }
}

template <typename T>
__global__ void avg_bwd(const T *go, Planes g, T *gx, Planes x, AvgArgs m, int64_t total)
{
    typedef typename nn_acc<T>::type A;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t n, c, h, q;
        unflat(i, x.C, x.H, x.W, &n, &c, &h, &q);
        int64_t y0, y1, x0, x1;
        if (m.adaptive) {
            y0 = h * g.H / x.H - 1, y1 = ((h + 1) * g.H + x.H - 1) / x.H + 1;
            x0 = q * g.W / x.W - 1, x1 = ((q + 1) * g.W + x.W - 1) / x.W + 1;
        } else {
            int64_t lo = h + m.w.ph - m.w.kh + 1;
            y0 = lo <= 0 ? 0 : (lo + m.w.sh - 1) / m.w.sh, y1 = (h + m.w.ph) / m.w.sh + 1;
            lo = q + m.w.pw - m.w.kw + 1;
            x0 = lo <= 0 ? 0 : (lo + m.w.sw - 1) / m.w.sw, x1 = (q + m.w.pw) / m.w.sw + 1;
        }
        y0 = y0 < 0 ? 0 : y0, x0 = x0 < 0 ? 0 : x0;
        y1 = y1 > g.H ? g.H : y1, x1 = x1 > g.W ? g.W : x1;
        const T *gp = go + n * g.sN + c * g.sC;
        A acc = 0;
        for (int64_t oy = y0; oy < y1; oy++)
            for (int64_t ox = x0; ox < x1; ox++) {
                int64_t h0, h1, w0, w1;
                double div = avg_cell(m, x.H, x.W, g.H, g.W, oy, ox, &h0, &h1, &w0, &w1);
                if (h < h0 || h >= h1 || q < w0 || q >= w1) continue;
                acc += lda(gp[oy * g.sH + ox * g.sW]) / (A)div;
            }
        gx[i] = sta<T>(acc);
    }
}

int64_t numel_planes(const Planes &p, int64_t h, int64_t w) { return p.N * p.C * h * w; }

nn_status check_io(const nn_kargs *a, int nout)
{
    for (int k = 0; k < nout; k++)
        if (!nn_is_contiguous(a->out[k])) return nn_error(NN_ERR_ARG, "%s: expects contiguous outputs", nn_op_name(a->op));
    nn_dtype dt = a->out[0]->dtype;
    if (!nn_dtype_is_float(dt) || a->in[0]->dtype != dt) return nn_not_implemented(a, a->in[0]->dtype);
    int dev = nn_cuda_index(a);
    for (int k = 0; k < a->nin; k++)
        if (a->in[k]->storage->device.type != NN_CUDA || a->in[k]->storage->device.index != dev)
            return nn_error(NN_ERR_DEVICE, "%s: expected all tensors to be on the same device", nn_op_name(a->op));
    return NN_OK;
}

nn_status max_common(const nn_kargs *a, bool adaptive)
{
    nn_status s = check_io(a, 2);
    if (s) return s;
    if (a->out[1]->dtype != NN_I64) return nn_error(NN_ERR_DTYPE, "%s: indices must be int64", nn_op_name(a->op));
    nn_tensor *y = a->out[0];
    Planes x = planes_of(a->in[0]);
    int64_t oh = y->shape[y->ndim - 2], ow = y->shape[y->ndim - 1], total = numel_planes(x, oh, ow);
    if (!total) return NN_OK;
    Win w = win_of(a->i);
    cudaStream_t st = nn_cuda_stream(nn_cuda_index(a));
    int64_t *ind = (int64_t *)nn_data(a->out[1]);
    NN_DISPATCH_FLOATS(y->dtype, a,
                       max_fwd<scalar_t><<<nn_cuda_blocks(total), 256, 0, st>>>((const scalar_t *)nn_data(a->in[0]), x, (scalar_t *)nn_data(y),
                                                                                  ind, oh, ow, w, adaptive, total));
    NN_CHECK_LAUNCH();
    return NN_OK;
}

nn_status avg_common(const nn_kargs *a, bool adaptive, bool backward)
{
    nn_status s = check_io(a, 1);
    if (s) return s;
    nn_tensor *in = a->in[0], *out = a->out[0];
    AvgArgs m;
    m.w = win_of(a->i);
    m.adaptive = adaptive;
    m.include_pad = !adaptive && a->i[6] != 0;
    m.divisor = adaptive ? 0 : a->i[7];
    Planes x = planes_of(backward ? out : in), g = planes_of(backward ? in : out);
    if (x.N != g.N || x.C != g.C) return nn_error(NN_ERR_SHAPE, "%s: input and output planes do not match", nn_op_name(a->op));
    int64_t total = numel_planes(backward ? x : g, backward ? x.H : g.H, backward ? x.W : g.W);
    if (!total) return NN_OK;
    cudaStream_t st = nn_cuda_stream(nn_cuda_index(a));
    unsigned blocks = nn_cuda_blocks(total);
    if (!backward) {
        NN_DISPATCH_FLOATS(out->dtype, a,
                           avg_fwd<scalar_t><<<blocks, 256, 0, st>>>((const scalar_t *)nn_data(in), x, (scalar_t *)nn_data(out), g.H, g.W, m, total));
    } else {
        NN_DISPATCH_FLOATS(out->dtype, a,
                           avg_bwd<scalar_t><<<blocks, 256, 0, st>>>((const scalar_t *)nn_data(in), g, (scalar_t *)nn_data(out), x, m, total));
    }
    NN_CHECK_LAUNCH();
    return NN_OK;
}

} // namespace

extern "C" nn_status nn_cuda_max_pool2d(const nn_kargs *a) { return max_common(a, false); }
extern "C" nn_status nn_cuda_adaptive_max_pool2d(const nn_kargs *a) { return max_common(a, true); }

/* The forward's i[] come along: kernel size 0 means an adaptive pool (its windows follow from the
 * shapes of grad_out and grad_input). */
extern "C" nn_status nn_cuda_max_pool2d_backward(const nn_kargs *a)
{
    nn_status s = check_io(a, 1);
    if (s) return s;
    if (a->in[1]->dtype != NN_I64) return nn_error(NN_ERR_DTYPE, "max_pool2d_backward: indices must be int64");
    nn_tensor *gx = a->out[0];
    Planes g = planes_of(a->in[0]), ix = planes_of(a->in[1]), x = planes_of(gx);
    if (ix.N != g.N || ix.C != g.C || ix.H != g.H || ix.W != g.W || x.N != g.N || x.C != g.C)
        return nn_error(NN_ERR_SHAPE, "max_pool2d_backward: grad_output, indices and grad_input do not match");
    int64_t total = numel_planes(x, x.H, x.W);
    if (!total) return NN_OK;
    Win w = win_of(a->i);
    bool adaptive = a->i[0] <= 0;
    cudaStream_t st = nn_cuda_stream(nn_cuda_index(a));
    const int64_t *ind = (const int64_t *)nn_data(a->in[1]);
    NN_DISPATCH_FLOATS(gx->dtype, a,
                       max_bwd<scalar_t><<<nn_cuda_blocks(total), 256, 0, st>>>((const scalar_t *)nn_data(a->in[0]), g, ind, ix,
                                                                                  (scalar_t *)nn_data(gx), x, w, adaptive, total));
    NN_CHECK_LAUNCH();
    return NN_OK;
}

extern "C" nn_status nn_cuda_avg_pool2d(const nn_kargs *a) { return avg_common(a, false, false); }
extern "C" nn_status nn_cuda_avg_pool2d_backward(const nn_kargs *a) { return avg_common(a, false, true); }
extern "C" nn_status nn_cuda_adaptive_avg_pool2d(const nn_kargs *a) { return avg_common(a, true, false); }
extern "C" nn_status nn_cuda_adaptive_avg_pool2d_backward(const nn_kargs *a) { return avg_common(a, true, true); }
