/* Copies between strided layouts of up to 4 dims, one element size (1, 2, 4, 8 or 16
 * bytes), no dtype conversion: how cuda/blas.cu and cuda/cudnn.cu stage an
 * operand that the library cannot read in place into workspace memory, and
 * write a staged result back. */
#pragma once

#include "core.cuh"

namespace nn_staging {

struct Geom4 {
    int64_t shape[4];
    int64_t dst[4], src[4]; /* element strides */
};

template <typename W>
__global__ void copy4(W *dst, const W *src, Geom4 g, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, od = 0, os = 0;
#pragma unroll
        for (int d = 3; d >= 0; d--) {
            int64_t q = r / g.shape[d], c = r - q * g.shape[d];
            od += c * g.dst[d];
            os += c * g.src[d];
            r = q;
        }
        dst[od] = src[os];
    }
}

/* A batched transpose: src [B][R][C] -> dst [B][C][R], element (b, r, c) at src[b sb + r sp + c] and
 * dst[b db + c dp + r]: pitches sp >= C and dp >= R (an NCHW <-> NHWC copy, or one into a
 * channel-padded NHWC tensor). */
struct Transpose {
    int64_t B, R, C, sb, sp, db, dp;
};

/* What a transpose does to each element on its way out, given the element's C index: Same
 * nothing; AddChannel adds b[c] of element type S (W's bits) in float, rounded once, as
 * cudnnAddTensor does (a convolution's bias, fused into the copy of its staged NHWC result). */
struct Same {
    template <typename W> __device__ W operator()(W v, int64_t) const { return v; }
};
template <typename S> struct AddChannel {
    const S *b;
    template <typename W> __device__ W operator()(W v, int64_t c) const
    {
        static_assert(sizeof(W) == sizeof(S), "AddChannel: element and bias types differ in size");
        S x;
        memcpy(&x, &v, sizeof x);
        x = (S)((float)x + (float)b[c]);
        memcpy(&v, &x, sizeof v);
        return v;
    }
};

/* A block moves a 32 T x 32 CW tile (launch_transpose takes T, CW of 1 or 2) through shared memory, so both sides are read
 * and written a warp-row at a time (the element-wise copy4 strides through one side: 3-4x slower).
 * 64 x 64 tiles were the fastest on an H200 for 16- and 32-bit elements alike (bench/NOTES.md). */
template <typename W, int T, int CW, class E = Same>
__global__ void transpose_tiles(W *__restrict__ dst, const W *__restrict__ src, Transpose t, E epi = E())
{
    __shared__ W tile[32 * T][32 * CW + (sizeof(W) == 2 ? 2 : 1)]; /* a pitch of an odd number of words: no bank conflicts */
    const int64_t c0 = (int64_t)blockIdx.x * 32 * CW;
    const int x = threadIdx.x, y = threadIdx.y;
    for (int64_t b = blockIdx.z; b < t.B; b += gridDim.z) {
        const W *s = src + b * t.sb;
        W *d = dst + b * t.db;
        for (int64_t r0 = (int64_t)blockIdx.y * 32 * T; r0 < t.R; r0 += (int64_t)gridDim.y * 32 * T) {
#pragma unroll
            for (int u = 0; u < T; u++)
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int w = 0; w < CW; w++) {
                        int64_t r = r0 + u * 32 + y + 8 * j, c = c0 + x + 32 * w;
                        if (r < t.R && c < t.C) tile[u * 32 + y + 8 * j][x + 32 * w] = s[r * t.sp + c];
                    }
            __syncthreads();
#pragma unroll
            for (int j = 0; j < 4 * CW; j++)
#pragma unroll
                for (int u = 0; u < T; u++) {
                    int64_t c = c0 + y + 8 * j, r = r0 + u * 32 + x;
                    if (r < t.R && c < t.C) d[c * t.dp + r] = epi(tile[u * 32 + x][y + 8 * j], c);
                }
            __syncthreads();
        }
    }
}

/* Where R or C is 16 or less (a 32 x 32 tile would leave most of its threads idle): a thread moves
 * the short side's elements at one position of the long side, so one side's accesses are a warp's
 * 32 neighbours and the other's a run of 32 short rows. */
template <typename W, class E = Same> __global__ void transpose_thin(W *__restrict__ dst, const W *__restrict__ src, Transpose t, E epi = E())
{
    const bool thin_r = t.R <= 16;
    const int64_t M = thin_r ? t.C : t.R, S = thin_r ? t.R : t.C;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < t.B * M; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / M, m = i - b * M;
        if (thin_r) { /* m is c */
            const W *s = src + b * t.sb + m;
            W *d = dst + b * t.db + m * t.dp;
            for (int64_t k = 0; k < S; k++) d[k] = epi(s[k * t.sp], m);
        } else { /* m is r */
            const W *s = src + b * t.sb + m * t.sp;
            W *d = dst + b * t.db + m;
            for (int64_t k = 0; k < S; k++) d[k * t.dp] = epi(s[k], k);
        }
    }
}

/* For a 4-D [N, C, H, W] side laid out NCHW with H, W dense: the channels' pitch and the batch stride. */
inline bool nchw_side(const int64_t *shape, const int64_t *st, int64_t *pitch, int64_t *batch)
{
    const int64_t hw = shape[2] * shape[3];
    if ((shape[3] > 1 && st[3] != 1) || (shape[2] > 1 && st[2] != shape[3])) return false;
    *pitch = shape[1] > 1 ? st[1] : hw;
    *batch = shape[0] > 1 ? st[0] : shape[1] * *pitch;
    return *pitch >= hw;
}

/* For a side laid out NHWC with each pixel's channels dense: the pixels' pitch and the batch stride. */
inline bool nhwc_side(const int64_t *shape, const int64_t *st, int64_t *pitch, int64_t *batch)
{
    if (shape[1] > 1 && st[1] != 1) return false;
    *pitch = shape[3] > 1 ? st[3] : shape[2] > 1 ? st[2] : shape[1];
    if (shape[2] > 1 && shape[3] > 1 && st[2] != shape[3] * st[3]) return false;
    *batch = shape[0] > 1 ? st[0] : shape[2] * shape[3] * *pitch;
    return *pitch >= shape[1];
}

/* Whether dst <- src over a 4-D shape is a batched transpose, NCHW <-> NHWC (the layouts cuDNN's
 * operands are staged between, and channels-last conversions). */
inline bool as_batched_transpose(const int64_t *shape, const int64_t *dst, const int64_t *src, Transpose *t)
{
    const int64_t c = shape[1], hw = shape[2] * shape[3];
    if (c <= 1 || hw <= 1) return false;
    t->B = shape[0];
    if (nchw_side(shape, src, &t->sp, &t->sb) && nhwc_side(shape, dst, &t->dp, &t->db)) return t->R = c, t->C = hw, true;
    if (nhwc_side(shape, src, &t->sp, &t->sb) && nchw_side(shape, dst, &t->dp, &t->db)) return t->R = hw, t->C = c, true;
    return false;
}

template <typename W, class E = Same> void launch_transpose(void *dst, const void *src, const Transpose &t, cudaStream_t s, E epi = E())
{
    if (t.R <= 16 || t.C <= 16) {
        transpose_thin<<<nn_cuda_blocks(t.B * (t.R <= 16 ? t.C : t.R)), 256, 0, s>>>((W *)dst, (const W *)src, t, epi);
        return;
    }
    const bool tall = t.R > 32, wide = t.C > 32;
    int64_t gy = (t.R + (tall ? 63 : 31)) / (tall ? 64 : 32);
    dim3 grid((unsigned)((t.C + (wide ? 63 : 31)) / (wide ? 64 : 32)), (unsigned)(gy < 65535 ? gy : 65535), (unsigned)(t.B < 65535 ? t.B : 65535));
    dim3 block(32, 8);
    if (tall && wide) transpose_tiles<W, 2, 2><<<grid, block, 0, s>>>((W *)dst, (const W *)src, t, epi);
    else if (tall) transpose_tiles<W, 2, 1><<<grid, block, 0, s>>>((W *)dst, (const W *)src, t, epi);
    else if (wide) transpose_tiles<W, 1, 2><<<grid, block, 0, s>>>((W *)dst, (const W *)src, t, epi);
    else transpose_tiles<W, 1, 1><<<grid, block, 0, s>>>((W *)dst, (const W *)src, t, epi);
}

/* launch_transpose for 2- or 4-byte elements; false (nothing launched) for others */
inline bool transpose(void *dst, const void *src, const Transpose &t, size_t es, cudaStream_t s)
{
    if (es == 2) launch_transpose<uint16_t>(dst, src, t, s);
    else if (es == 4) launch_transpose<uint32_t>(dst, src, t, s);
    return es == 2 || es == 4;
}

/* dst[idx] = src[idx] for every index of shape (ndim <= 4 dims), strides in elements. */
inline nn_status copy(void *dst, const int64_t *dst_strides, const void *src, const int64_t *src_strides, const int64_t *shape, int ndim,
                      size_t es, cudaStream_t s)
{
    Geom4 g;
    int64_t n = 1;
    for (int d = 0; d < 4; d++) {
        int k = d - (4 - ndim);
        g.shape[d] = k >= 0 ? shape[k] : 1;
        g.dst[d] = k >= 0 ? dst_strides[k] : 0;
        g.src[d] = k >= 0 ? src_strides[k] : 0;
        n *= g.shape[d];
    }
    if (n == 0) return NN_OK;
    Transpose t;
    if (ndim == 4 && as_batched_transpose(shape, dst_strides, src_strides, &t) && transpose(dst, src, t, es, s)) {
        NN_CHECK_LAUNCH();
        return NN_OK;
    }
    unsigned blocks = nn_cuda_blocks(n);
    switch (es) {
    case 1: copy4<<<blocks, 256, 0, s>>>((uint8_t *)dst, (const uint8_t *)src, g, n); break;
    case 2: copy4<<<blocks, 256, 0, s>>>((uint16_t *)dst, (const uint16_t *)src, g, n); break;
    case 4: copy4<<<blocks, 256, 0, s>>>((uint32_t *)dst, (const uint32_t *)src, g, n); break;
    case 8: copy4<<<blocks, 256, 0, s>>>((uint64_t *)dst, (const uint64_t *)src, g, n); break;
    default: copy4<<<blocks, 256, 0, s>>>((ulonglong2 *)dst, (const ulonglong2 *)src, g, n); break; /* complex128 */
    }
    NN_CHECK_LAUNCH();
    return NN_OK;
}

/* dst <- src + bias[c] over a 4-D [N, C, H, W] shape when src is NHWC and dst NCHW (a staged
 * convolution result going out) and the elements are 16- or 32-bit floats; false, nothing
 * launched, otherwise. */
inline bool transpose_add_channel(void *dst, const int64_t *dst_strides, const void *src, const int64_t *src_strides, const int64_t *shape,
                                  nn_dtype dt, const void *bias, cudaStream_t s)
{
    Transpose t;
    int64_t unused_pitch, unused_batch;
    if (!as_batched_transpose(shape, dst_strides, src_strides, &t) || !nhwc_side(shape, src_strides, &unused_pitch, &unused_batch)) return false;
    switch (dt) {
    case NN_F32: launch_transpose<uint32_t>(dst, src, t, s, AddChannel<float>{(const float *)bias}); return true;
    case NN_F16: launch_transpose<uint16_t>(dst, src, t, s, AddChannel<__half>{(const __half *)bias}); return true;
    case NN_BF16: launch_transpose<uint16_t>(dst, src, t, s, AddChannel<__nv_bfloat16>{(const __nv_bfloat16 *)bias}); return true;
    default: return false;
    }
}

/* Workspace carving: consecutive regions, each 256-byte aligned. */
struct Carve {
    size_t used = 0;
    size_t take(size_t n)
    {
        size_t at = used;
        used += (n + 255) / 256 * 256;
        return at;
    }
};

} // namespace nn_staging
