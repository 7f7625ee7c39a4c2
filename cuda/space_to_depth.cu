/* The rearrangements that turn a strided convolution of few input channels into a stride-1 one
 * (cuda/cudnn.cu decides when, by nn_conv_space_to_depth). With strides (sh, sw) and padding
 * (ph, pw), kernel row y = a sh + r and column x = b sw + q:
 *   S [N, C sh sw, Hs, Ws] (NHWC),  S[n, (c, r, q), i, j] = x[n, c, i sh + r - ph, j sw + q - pw] (0 outside x)
 *   F2 [O, C sh sw, ka, kb] (NHWC), F2[o, (c, r, q), a, b] = w[o, c, a sh + r, b sw + q] (0 past kh, kw)
 * so that conv(x, w, stride, pad) = conv(S, F2, stride 1, no pad), and the weight gradient of the
 * first is that of the second put back in place. Elements are moved as raw 2-, 4- or 8-byte words. */
#include "ew.cuh"
#include "space_to_depth.cuh"

namespace {

struct S2D {
    int N, C, H, W, Hs, Ws, sh, sw, ph, pw; /* S has fewer than 2^31 elements (cuda/cudnn.cu checks) */
    int64_t xs[4];                          /* element strides of x */
};

/* A thread per (j, c, r) of the rows (n, i) of S its block walks: the sw elements along w, next
 * to each other in S (and in an NCHW x), with 32-bit index arithmetic. */
template <typename T> __global__ void image_kernel(void *Sv, const void *xv, S2D g)
{
    T *S = (T *)Sv;
    const T *x = (const T *)xv;
    const int cs = g.C * g.sh, e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= g.Ws * cs) return;
    const int j = e / cs, cr = e - j * cs, c = cr / g.sh, r = cr - c * g.sh;
    for (int64_t row = blockIdx.y; row < (int64_t)g.N * g.Hs; row += gridDim.y) {
        const int n = (int)(row / g.Hs), h = (int)(row - (int64_t)n * g.Hs) * g.sh + r - g.ph;
        T *dst = S + (row * g.Ws + j) * cs * g.sw + cr * g.sw;
        const T *src = x + n * g.xs[0] + c * g.xs[1] + h * g.xs[2];
        const bool in = h >= 0 && h < g.H;
        for (int q = 0, w = j * g.sw - g.pw; q < g.sw; q++, w++) dst[q] = in && w >= 0 && w < g.W ? src[w * g.xs[3]] : T(0);
    }
}

struct F2D {
    int64_t O, C, kh, kw, ka, kb, sh, sw;
    int64_t fs[4]; /* element strides of the [O, C, kh, kw] side */
};

/* to: F2 from w; else: w's gradient from F2's */
template <typename T> __global__ void filter_kernel(void *f2v, void *fv, F2D g, int64_t total, bool to)
{
    T *f2 = (T *)f2v, *f = (T *)fv;
    const int64_t K = g.C * g.sh * g.sw;
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total; idx += (int64_t)gridDim.x * blockDim.x) {
        if (to) { /* idx walks F2 (dense [O, ka, kb, K]) */
            int64_t k = idx % K, t = idx / K;
            int64_t b = t % g.kb;
            t /= g.kb;
            int64_t a = t % g.ka, o = t / g.ka;
            int64_t c = k / (g.sh * g.sw), rq = k % (g.sh * g.sw);
            int64_t y = a * g.sh + rq / g.sw, xx = b * g.sw + rq % g.sw;
            f2[idx] = y < g.kh && xx < g.kw ? f[o * g.fs[0] + c * g.fs[1] + y * g.fs[2] + xx * g.fs[3]] : T(0);
        } else { /* idx walks w's gradient [O, C, kh, kw] */
            int64_t xx = idx % g.kw, t = idx / g.kw;
            int64_t y = t % g.kh;
            t /= g.kh;
            int64_t c = t % g.C, o = t / g.C;
            int64_t k = c * g.sh * g.sw + (y % g.sh) * g.sw + xx % g.sw;
            f[o * g.fs[0] + c * g.fs[1] + y * g.fs[2] + xx * g.fs[3]] = f2[((o * g.ka + y / g.sh) * g.kb + xx / g.sw) * K + k];
        }
    }
}

#define BY_SIZE(es, KERNEL, ...)                                                   \
    switch (es) {                                                                  \
    case 2: nn_launch<KERNEL<uint16_t>>(__VA_ARGS__); break;                       \
    case 4: nn_launch<KERNEL<uint32_t>>(__VA_ARGS__); break;                       \
    default: nn_launch<KERNEL<uint64_t>>(__VA_ARGS__); break;                      \
    }

} // namespace

nn_status nn_s2d_image(nn_tensor *S, const nn_tensor *x, int64_t sh, int64_t sw, int64_t ph, int64_t pw, cudaStream_t s)
{
    S2D g = {(int)x->shape[0], (int)x->shape[1], (int)x->shape[2], (int)x->shape[3], (int)S->shape[2], (int)S->shape[3],
             (int)sh, (int)sw, (int)ph, (int)pw, {x->strides[0], x->strides[1], x->strides[2], x->strides[3]}};
    dim3 grid((unsigned)((g.Ws * g.C * g.sh + 255) / 256), (unsigned)std::min<int64_t>((int64_t)g.N * g.Hs, 65535));
    size_t es = nn_dtype_size(x->dtype);
    BY_SIZE(es, image_kernel, grid, 256, s, nn_data(S), nn_data(x), g);
    return nn_check(cudaGetLastError(), "space-to-depth kernel", __FILE__, __LINE__);
}

static nn_status filter(nn_tensor *f2, nn_tensor *f, int64_t sh, int64_t sw, cudaStream_t s, bool to)
{
    F2D g = {f->shape[0], f->shape[1], f->shape[2], f->shape[3], f2->shape[2], f2->shape[3], sh, sw,
             {f->strides[0], f->strides[1], f->strides[2], f->strides[3]}};
    int64_t total = nn_numel(to ? f2 : f);
    size_t es = nn_dtype_size(f->dtype);
    BY_SIZE(es, filter_kernel, nnk::blocks_for(total), 256, s, nn_data(f2), nn_data(f), g, total, to);
    return nn_check(cudaGetLastError(), "space-to-depth filter kernel", __FILE__, __LINE__);
}

nn_status nn_s2d_filter(nn_tensor *f2, const nn_tensor *f, int64_t sh, int64_t sw, cudaStream_t s)
{
    return filter(f2, (nn_tensor *)f, sh, sw, s, true);
}

nn_status nn_s2d_filter_grad(nn_tensor *df, const nn_tensor *df2, int64_t sh, int64_t sw, cudaStream_t s)
{
    return filter((nn_tensor *)df2, df, sh, sw, s, false);
}
