/* The weight gradient of a depthwise convolution (groups = in = out channels) in float32 and
 * float64: cuDNN's engines for it ran 3-10x slower than PyTorch's own kernel (ConvNeXt's 7 x 7
 * [32, 96, 56, 56]: 2.37 ms against 0.65; bench/depthwise_conv.lua), while in 16 bits they are fast.
 *
 *   dw[c, i, j] = sum over n, y, x of dy[n, c, y, x] * x[n, c, y sh - ph + i dh, x sw - pw + j dw]
 *
 * A block takes one channel of one image, or a band of its output rows, or of several images
 * when the planes are small: it copies the input rows the band reads (zero padded) and the
 * band's dy rows into shared memory, and each thread walks some of the band's outputs keeping
 * the K x K sums in registers. The block's sums go to a partial per (image group, channel,
 * band), and a second kernel adds the partials of a channel in a fixed order: no atomics, so
 * the result is the same on every run. */
#include "depthwise.cuh"
#include "ew.cuh"
#include "strided_copy.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kSmemBytes = 32 * 1024;

struct DW {
    int N, C, H, W, oh, ow, sh, sw, ph, pw, dh, dw;
    int rows, bands;          /* output rows a band takes; bands a plane */
    int in_rows, in_cols;     /* a band's input tile */
    int per_block, at_once;   /* images a block takes, and how many of them share memory holds at once */
    int64_t xs[4], ys[4];     /* element strides of x and dy */
};

/* Element e = (p, r, q) of a [*, R, Q] walk, advanced by kThreads without dividing */
struct Walk {
    int p, r, q, dp, dr, dq, R, Q;
    __device__ Walk(int e, int R_, int Q_) : R(R_), Q(Q_)
    {
        p = e / (R * Q), r = (e - p * R * Q) / Q, q = e - p * R * Q - r * Q;
        dp = kThreads / (R * Q), dr = (kThreads - dp * R * Q) / Q, dq = kThreads - dp * R * Q - dr * Q;
    }
    __device__ void next()
    {
        q += dq;
        if (q >= Q) q -= Q, r++;
        r += dr;
        if (r >= R) r -= R, p++;
        p += dp;
    }
};

template <typename T, int K> __global__ void __launch_bounds__(kThreads) partial_kernel(const T *x, const T *dy, T *partial, DW g)
{
    __shared__ __align__(16) unsigned char smem[kSmemBytes];
    const int band = blockIdx.x, c = blockIdx.y, group = blockIdx.z;
    const int r0 = band * g.rows, rows = min(g.rows, g.oh - r0);
    const int h0 = r0 * g.sh - g.ph, w0 = -g.pw, tile = g.in_rows * g.in_cols;
    const int n_end = min(g.N, (group + 1) * g.per_block);
    T *xt = (T *)smem, *yt = xt + g.at_once * tile;

    T acc[K * K];
#pragma unroll
    for (int t = 0; t < K * K; t++) acc[t] = T(0);
    for (int n0 = group * g.per_block; n0 < n_end; n0 += g.at_once) {
        const int np = min(g.at_once, n_end - n0);
        __syncthreads(); /* the previous images are done with */
        for (Walk a(threadIdx.x, g.in_rows, g.in_cols); a.p < np; a.next()) {
            const int h = h0 + a.r, w = w0 + a.q;
            xt[(a.p * g.in_rows + a.r) * g.in_cols + a.q] =
                h >= 0 && h < g.H && w >= 0 && w < g.W ? x[(n0 + a.p) * g.xs[0] + c * g.xs[1] + h * g.xs[2] + w * g.xs[3]] : T(0);
        }
        for (Walk a(threadIdx.x, rows, g.ow); a.p < np; a.next())
            yt[(a.p * rows + a.r) * g.ow + a.q] = dy[(n0 + a.p) * g.ys[0] + c * g.ys[1] + (r0 + a.r) * g.ys[2] + a.q * g.ys[3]];
        __syncthreads();
        for (Walk a(threadIdx.x, rows, g.ow); a.p < np; a.next()) {
            const T gy = yt[(a.p * rows + a.r) * g.ow + a.q];
            const T *base = xt + a.p * tile + a.r * g.sh * g.in_cols + a.q * g.sw;
#pragma unroll
            for (int i = 0; i < K; i++)
#pragma unroll
                for (int j = 0; j < K; j++) acc[i * K + j] += gy * base[i * g.dh * g.in_cols + j * g.dw];
        }
    }

    __syncthreads(); /* the tiles are done with: their memory holds the warps' sums now */
    T *red = (T *)smem;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int t = 0; t < K * K; t++) {
        T v = acc[t];
        for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
        if (lane == 0) red[warp * K * K + t] = v;
    }
    __syncthreads();
    T *out = partial + (((int64_t)group * g.C + c) * g.bands + band) * (K * K);
    for (int t = threadIdx.x; t < K * K; t += kThreads) {
        T s = T(0);
        for (int w = 0; w < kThreads / 32; w++) s += red[w * K * K + t];
        out[t] = s;
    }
}

/* dw[c, t] = the sum over image groups and bands of the partials, in that order */
template <typename T> __global__ void sum_kernel(const T *partial, T *dw, int64_t N, int C, int bands, int KK, int64_t s0, int64_t s2, int64_t s3, int K)
{
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= C * KK) return;
    const int c = e / KK, t = e - c * KK;
    T s = T(0);
    for (int64_t n = 0; n < N; n++)
        for (int b = 0; b < bands; b++) s += partial[((n * C + c) * bands + b) * KK + t];
    dw[c * s0 + (t / K) * s2 + (t % K) * s3] = s;
}

template <typename T, int K> nn_status run(nn_tensor *df, const void *x, const void *dy, const DW &g, int device, cudaStream_t s)
{
    const int64_t groups = (g.N + g.per_block - 1) / g.per_block, planes = groups * g.C * g.bands;
    T *partial = (T *)nn_cuda_alloc(device, (size_t)planes * K * K * sizeof(T));
    if (!partial) return nn_last_status();
    nn_launch<partial_kernel<T, K>>(dim3((unsigned)g.bands, (unsigned)g.C, (unsigned)groups), kThreads, s, (const T *)x, (const T *)dy,
                                    partial, g);
    const int cells = g.C * K * K;
    nn_launch<sum_kernel<T>>((cells + 255) / 256, 256, s, (const T *)partial, (T *)nn_data(df), groups, g.C, g.bands, K * K,
                             df->strides[0], df->strides[2], df->strides[3], K);
    nn_cuda_free(device, partial); /* stream-ordered: the kernels above finish first */
    return nn_check(cudaGetLastError(), "depthwise weight gradient", __FILE__, __LINE__);
}

template <typename T> nn_status by_size(nn_tensor *df, const void *x, const void *dy, const DW &g, int k, int device, cudaStream_t s)
{
    switch (k) {
    case 3: return run<T, 3>(df, x, dy, g, device, s);
    case 5: return run<T, 5>(df, x, dy, g, device, s);
    default: return run<T, 7>(df, x, dy, g, device, s);
    }
}

/* t itself, or (rows not dense along W: a channels-last tensor) a dense NCHW copy in *ws;
 * strides gets the strides read by. */
const void *nchw(const nn_tensor *t, int64_t strides[4], void **ws, int device, cudaStream_t s, nn_status *st)
{
    memcpy(strides, t->strides, 4 * sizeof *strides);
    if (t->strides[3] == 1) return nn_data(t);
    const size_t es = nn_dtype_size(t->dtype);
    if (!(*ws = nn_cuda_alloc(device, (size_t)nn_numel(t) * es))) {
        *st = nn_last_status();
        return NULL;
    }
    strides[3] = 1, strides[2] = t->shape[3], strides[1] = t->shape[2] * t->shape[3], strides[0] = t->shape[1] * strides[1];
    *st = nn_staging::copy(*ws, strides, nn_data(t), t->strides, t->shape, 4, es, s);
    return *st ? NULL : *ws;
}

} // namespace

/* The output rows a band takes so that its tiles fit in shared memory (0: they never do) */
static int band_rows(const nn_tensor *x, const nn_tensor *dy, int k, const int64_t p[6], int *in_cols)
{
    const int64_t budget = kSmemBytes / nn_dtype_size(x->dtype), oh = dy->shape[2], ow = dy->shape[3];
    const int64_t cols = (ow - 1) * p[1] + (k - 1) * p[5] + 1;
    const int64_t halo = (int64_t)(k - 1) * p[4] + 1 - p[0]; /* input rows = rows * sh + halo */
    const int64_t rows = (budget - halo * cols) / (p[0] * cols + ow);
    *in_cols = (int)cols;
    return rows < 1 ? 0 : (int)(rows < oh ? rows : oh);
}

bool nn_depthwise_weight_grad_applies(const nn_tensor *df, const nn_tensor *x, const nn_tensor *dy, int64_t groups, const int64_t p[6])
{
    const int64_t k = df->shape[2];
    int cols;
    return (x->dtype == NN_F32 || x->dtype == NN_F64) && groups == x->shape[1] && df->shape[0] == groups && df->shape[1] == 1 &&
           df->shape[3] == k && (k == 3 || k == 5 || k == 7) && nn_numel(x) > 0 &&
           nn_numel(dy) > 0 && x->shape[0] <= 65535 && groups <= 65535 && band_rows(x, dy, (int)k, p, &cols) > 0;
}

nn_status nn_depthwise_weight_grad(nn_tensor *df, const nn_tensor *x, const nn_tensor *dy, const int64_t p[6], int device, cudaStream_t s)
{
    const int k = (int)df->shape[2];
    DW g = {(int)x->shape[0], (int)x->shape[1], (int)x->shape[2], (int)x->shape[3], (int)dy->shape[2], (int)dy->shape[3], (int)p[0], (int)p[1], (int)p[2],
            (int)p[3], (int)p[4], (int)p[5], 0, 0, 0, 0, 0, 0, {x->strides[0], x->strides[1], x->strides[2], x->strides[3]},
            {dy->strides[0], dy->strides[1], dy->strides[2], dy->strides[3]}};
    g.rows = band_rows(x, dy, k, p, &g.in_cols);
    g.bands = (g.oh + g.rows - 1) / g.rows;
    g.in_rows = (g.rows - 1) * g.sh + (k - 1) * g.dh + 1;
    /* small planes: a block takes several images (about 4096 outputs), as many at once as fit */
    const int outs = g.rows * g.ow, per_image = g.in_rows * g.in_cols + outs;
    g.per_block = std::max(1, std::min(g.N, 4096 / outs));
    g.at_once = std::max(1, std::min(g.per_block, (int)(kSmemBytes / nn_dtype_size(x->dtype)) / per_image));
    void *xw = NULL, *yw = NULL;
    nn_status st = NN_OK;
    const void *xp = nchw(x, g.xs, &xw, device, s, &st), *yp = st ? NULL : nchw(dy, g.ys, &yw, device, s, &st);
    if (!st) st = x->dtype == NN_F32 ? by_size<float>(df, xp, yp, g, k, device, s) : by_size<double>(df, xp, yp, g, k, device, s);
    if (xw) nn_cuda_free(device, xw);
    if (yw) nn_cuda_free(device, yw);
    return st;
}
