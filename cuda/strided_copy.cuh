/* Copies between strided layouts of up to 4 dims, one element size (1, 2, 4 or 8
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
    unsigned blocks = nn_cuda_blocks(n);
    switch (es) {
    case 1: copy4<<<blocks, 256, 0, s>>>((uint8_t *)dst, (const uint8_t *)src, g, n); break;
    case 2: copy4<<<blocks, 256, 0, s>>>((uint16_t *)dst, (const uint16_t *)src, g, n); break;
    case 4: copy4<<<blocks, 256, 0, s>>>((uint32_t *)dst, (const uint32_t *)src, g, n); break;
    default: copy4<<<blocks, 256, 0, s>>>((uint64_t *)dst, (const uint64_t *)src, g, n); break;
    }
    NN_CHECK_LAUNCH();
    return NN_OK;
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
