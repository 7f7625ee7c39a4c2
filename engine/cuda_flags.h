/* Switches of the CUDA matrix and convolution kernels, as torch.backends sets them,
 * and the fused linear entry point. Plain C: bindings include this, never CUDA
 * headers. The flags live in engine/cuda_flags.c so a build without CUDA can
 * still set them (PyTorch allows that too); cuda/blas.cu and cuda/cudnn.cu read
 * them on every call, and a change takes effect at the next op. */
#ifndef NN_CUDA_FLAGS_H
#define NN_CUDA_FLAGS_H

#include <stdbool.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.backends.cuda.matmul.allow_tf32: float32 matmuls may use TF32 tensor cores (default false) */
extern bool nn_cuda_allow_tf32;
/* torch.backends.cudnn.allow_tf32: float32 convolutions may use TF32 (default true) */
extern bool nn_cudnn_allow_tf32;
/* torch.backends.cudnn.benchmark: time the convolution engine configurations cuDNN proposes, once
 * per shape, instead of taking its heuristic's first (default false) */
extern bool nn_cudnn_benchmark;

/* torch.use_deterministic_algorithms(mode, warn_only=): while nn_deterministic_algorithms is set, the
 * kernels whose results depend on the order of atomic additions (index_add_ into a CUDA float tensor:
 * also the gradients of index_select, gather and embedding, scatter_add, index_put with accumulate)
 * fail through nn_check_deterministic, or with nn_deterministic_warn_only print a warning and run;
 * and cuDNN's convolutions take only deterministic engines, as with nn_cudnn_deterministic. */
extern bool nn_deterministic_algorithms;
extern bool nn_deterministic_warn_only;
/* torch.backends.cudnn.deterministic: convolutions take only the cuDNN engines whose results do not
 * depend on the order of atomic additions (default false) */
extern bool nn_cudnn_deterministic;
/* NN_OK, or (the mode on, warn_only off) the error naming op, as PyTorch words it */
nn_status nn_check_deterministic(const char *op);

/* Batch norm on CUDA goes through cuDNN for float16/bfloat16 in NCHW (where it is the faster) when
 * cuDNN takes the problem, else through the backend's own kernels; false: always the own kernels. Not a torch.backends switch:
 * PyTorch's cudnn.enabled also covers convolutions, which have no other kernels here. */
extern bool nn_cudnn_batch_norm;
/* How many batch norm problems (shape, dtype and kind of call) cuDNN declined as unsupported; the
 * own kernels run those from then on. */
extern long nn_cudnn_batch_norm_declined;

/* Whether CUDA convolutions of dtype dt run in NHWC whatever their operands' layout (cuda/cudnn.cu
 * stages NCHW operands by transposing copies): cuDNN's tensor-core kernels, float16/bfloat16 and
 * TF32, are slower on NCHW operands than the NHWC kernels and the copies together; AlexNet's step
 * on an H200 took 10% less time in float16 and 4.5% less in float32 (bench/NOTES.md). */
bool nn_cudnn_nhwc(nn_dtype dt);

/* Whether a CUDA convolution of C input channels (per group) runs as a stride-1 one on a
 * space-to-depth copy of its input (cuda/cudnn.cu, cuda/space_to_depth.cu): strides of 2 or more
 * on few channels, an image network's first layer, where cuDNN's kernels for C = 3 are slow. On an
 * H200 (bench/conv_stem.*, bench/NOTES.md) AlexNet's 3 -> 64, 11 x 11, stride 4 took 446 -> 264 us
 * forward and backward in float16 channels-last, 716 -> 476 us in float32 NCHW. NHWC dtypes only,
 * and in float16/bfloat16 only for strides of 16 or more positions (sh * sw): ResNet's 7 x 7
 * stride 2 lost there (360 -> 425 us forward in channels-last, 474 from a 4-channel copy) and
 * gained in TF32 (582 -> 448). */
bool nn_conv_space_to_depth(nn_dtype dt, int64_t C, int64_t groups, const int64_t stride[2], const int64_t dilation[2], int64_t kh,
                            int64_t kw);

bool nn_cuda_get_matmul_allow_tf32(void);
void nn_cuda_set_matmul_allow_tf32(bool on);
bool nn_cudnn_get_allow_tf32(void);
void nn_cudnn_set_allow_tf32(bool on);
bool nn_cudnn_get_benchmark(void);
void nn_cudnn_set_benchmark(bool on);

/* out = x @ w^T + bias, then ReLU when relu: one cuBLASLt call with a BIAS / RELU_BIAS
 * epilogue (float64: a gemm onto the broadcast bias, then a ReLU pass).
 *   x [M, K] (any strides), w [N, K] (any strides), bias [N] or NULL, out [M, N] contiguous,
 *   all on one CUDA device and of one float dtype; out is overwritten.
 * Defined by the CUDA backend (cuda/blas.cu); the symbol is weak, so it is NULL in a build
 * without CUDA: call it only `if (nn_cuda_linear)`. Does not record autograd. */
nn_status nn_cuda_linear(nn_tensor *out, const nn_tensor *x, const nn_tensor *w, const nn_tensor *bias, bool relu)
    __attribute__((weak));

#ifdef __cplusplus
}
#endif

#endif
