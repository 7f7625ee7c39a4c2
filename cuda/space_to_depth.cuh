/* Space-to-depth rearrangements of a strided convolution's operands (cuda/space_to_depth.cu):
 * the image x [N, C, H, W] (any strides) into S, NHWC-dense [N, C sh sw, Hs, Ws]; the filter
 * f [O, C, kh, kw] (any strides) into f2, NHWC-dense [O, C sh sw, ceil(kh / sh), ceil(kw / sw)];
 * and a gradient of f2 back into one of f (any strides). Enqueued on stream s. */
#pragma once

#include "core.cuh"

nn_status nn_s2d_image(nn_tensor *S, const nn_tensor *x, int64_t sh, int64_t sw, int64_t ph, int64_t pw, cudaStream_t s);
nn_status nn_s2d_filter(nn_tensor *f2, const nn_tensor *f, int64_t sh, int64_t sw, cudaStream_t s);
nn_status nn_s2d_filter_grad(nn_tensor *df, const nn_tensor *df2, int64_t sh, int64_t sw, cudaStream_t s);
