/* Memory formats (torch.contiguous_format, torch.channels_last, torch.channels_last_3d):
 * a channels-last tensor keeps its NCHW shape with NHWC strides (engine/memory_format.c).
 * Kernels that take any strides (conv on CPU, cuDNN's NHWC path on CUDA) run on it as is. */
#ifndef NN_MEMORY_FORMAT_H
#define NN_MEMORY_FORMAT_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { NN_CONTIGUOUS_FORMAT, NN_CHANNELS_LAST, NN_CHANNELS_LAST_3D, NN_PRESERVE_FORMAT } nn_memory_format;

const char *nn_memory_format_name(nn_memory_format f); /* "torch.channels_last", ... */
/* The dense strides of shape in format f; error when channels_last is asked of a tensor that is
 * not 4-D (channels_last_3d: 5-D), or for preserve_format. fn names the caller in the message. */
nn_status nn_format_strides(const char *fn, int ndim, const int64_t *shape, nn_memory_format f, int64_t *strides);
/* An uninitialised tensor of shape [ndim, shape] laid out in format f (errors as nn_format_strides). */
nn_tensor *nn_empty_format(int ndim, const int64_t *shape, nn_memory_format f, nn_dtype dt, nn_device dev);
/* x.is_contiguous(memory_format=f): size-1 dims are ignored; false for a rank f does not fit. */
bool nn_is_contiguous_as(const nn_tensor *t, nn_memory_format f);
/* x.contiguous(memory_format=f): t itself (retained) when it already is, else a copy in that
 * layout, on the graph as CloneBackward0. */
nn_tensor *nn_contiguous_as(nn_tensor *t, nn_memory_format f);
/* Non-overlapping and dense: the strides are a permutation of contiguous strides (size-1 dims
 * ignored), so the elements fill numel consecutive slots from nn_data(t). */
bool nn_is_dense(const nn_tensor *t);
/* Equal strides on every dim of size > 1 (a and b of one shape). */
bool nn_same_strides(const nn_tensor *a, const nn_tensor *b);
/* A copy of t with the given strides and dtype, on the graph as grad_name when t requires grad. */
nn_tensor *nn_copy_as(nn_tensor *t, const int64_t *strides, nn_dtype dt, const char *grad_name);
/* x.clone(memory_format=f): a copy on the graph as CloneBackward0; preserve_format keeps t's strides
 * where t is dense and non-overlapping, else takes the format t suggests (as PyTorch's). */
nn_tensor *nn_clone_as(nn_tensor *t, nn_memory_format f);
/* t as dt keeping a dense layout (PyTorch's preserve_format: channels-last stays channels-last),
 * else contiguous; t itself (retained) if already dt; on the graph as ToCopyBackward0. */
nn_tensor *nn_to_dtype_preserve(nn_tensor *t, nn_dtype dt);
/* channels_last (4-D) or channels_last_3d (5-D) when t is laid out so and not contiguous, else
 * contiguous_format (PyTorch's suggest_memory_format, as convolutions use it). */
nn_memory_format nn_suggest_memory_format(const nn_tensor *t);

#ifdef __cplusplus
}
#endif

#endif
