/* Convolution and 2-D pooling frontends (engine/conv.c, engine/pool.c).
 *
 * Inputs are [N, C, H, W] or unbatched [C, H, W]; two-element parameters are
 * {height, width}. Each checks its arguments with PyTorch's messages, computes
 * PyTorch's output size, dispatches to the device's kernel and, when grad mode
 * is on and an input requires grad, records its autograd node (ConvolutionBackward0,
 * MaxPool2DWithIndicesBackward0, AvgPool2DBackward0, AdaptiveAvgPool2DBackward0,
 * AdaptiveMaxPool2DBackward0). Returns a new reference or NULL with the error set. */
#ifndef NN_CONV_H
#define NN_CONV_H

#include "ops.h"

/* F.conv2d with explicit symmetric padding; bias may be NULL; groups >= 1. */
nn_tensor *nn_conv2d(nn_tensor *input, nn_tensor *weight, nn_tensor *bias, const int64_t stride[2], const int64_t padding[2],
                     const int64_t dilation[2], int64_t groups);

/* F.conv2d(..., padding='same'): stride must be 1 (PyTorch's error otherwise). The total padding
 * dilation*(k-1) is split as PyTorch does: floor half on top/left, the rest on bottom/right. When
 * the split is uneven the input is copied once into a zero tensor that carries the extra row/column
 * on the bottom/right, so every backend only ever sees symmetric padding. */
nn_tensor *nn_conv2d_same(nn_tensor *input, nn_tensor *weight, nn_tensor *bias, const int64_t stride[2], const int64_t dilation[2],
                          int64_t groups);

/* The gradients of nn_conv2d (no autograd recording; used by ConvolutionBackward0 and handy for
 * backend tests). grad_output is [N, O, oh, ow]; input_shape / weight_shape are 4-D. */
nn_tensor *nn_conv2d_backward_input(nn_tensor *grad_output, nn_tensor *weight, const int64_t input_shape[4], const int64_t stride[2],
                                    const int64_t padding[2], const int64_t dilation[2], int64_t groups);
nn_tensor *nn_conv2d_backward_weight(nn_tensor *grad_output, nn_tensor *input, const int64_t weight_shape[4], const int64_t stride[2],
                                     const int64_t padding[2], const int64_t dilation[2], int64_t groups);

/* F.max_pool2d. stride {0, 0} means stride = kernel (PyTorch's default). When indices is not NULL
 * it receives the int64 argmax positions, flat h*W+w in each input plane (return_indices=True). */
nn_tensor *nn_max_pool2d(nn_tensor *input, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                         const int64_t dilation[2], bool ceil_mode, nn_tensor **indices);

/* F.avg_pool2d. stride {0, 0} means stride = kernel; divisor_override 0 means none (PyTorch's
 * None; an explicit divisor_override=0, an error in PyTorch, must be rejected by the caller). */
nn_tensor *nn_avg_pool2d(nn_tensor *input, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2], bool ceil_mode,
                         bool count_include_pad, int64_t divisor_override);

/* F.adaptive_avg_pool2d / F.adaptive_max_pool2d: output row i pools input rows
 * floor(i*H/out_h) .. ceil((i+1)*H/out_h)-1, and the same for columns. indices may be NULL. */
nn_tensor *nn_adaptive_avg_pool2d(nn_tensor *input, int64_t out_h, int64_t out_w);
nn_tensor *nn_adaptive_max_pool2d(nn_tensor *input, int64_t out_h, int64_t out_w, nn_tensor **indices);

#endif
