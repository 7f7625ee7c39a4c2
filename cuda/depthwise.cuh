/* The weight gradient of a depthwise convolution in float32 / float64 (cuda/depthwise.cu).
 * p = {stride_h, stride_w, pad_h, pad_w, dil_h, dil_w}; df is [C, 1, k, k] (any strides), x and
 * dy are [N, C, H, W] / [N, C, oh, ow], any strides (read through a dense NCHW copy when not
 * dense along W, as channels-last ones). Enqueued on stream s. */
#pragma once

#include "core.cuh"

/* Square kernels of 3, 5 or 7, one filter per channel, whose tiles fit in shared memory. */
bool nn_depthwise_weight_grad_applies(const nn_tensor *df, const nn_tensor *x, const nn_tensor *dy, int64_t groups, const int64_t p[6]);
nn_status nn_depthwise_weight_grad(nn_tensor *df, const nn_tensor *x, const nn_tensor *dy, const int64_t p[6], int device, cudaStream_t s);
