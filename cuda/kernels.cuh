/* The CUDA backend's kernels, one entry point per op kind (as engine/cpu/kernels.h)
 * and nn_cuda_<name> for ops of kind NN. All declared weak: a kernel not written
 * yet is a NULL table entry, which nn_dispatch reports as not implemented. */
#pragma once

#include "core.cuh"
#include "launch.cuh"

#define NN_CUDA_WEAK extern "C" __attribute__((weak))
NN_CUDA_WEAK nn_status nn_cuda_unary(const nn_kargs *a);
NN_CUDA_WEAK nn_status nn_cuda_binary(const nn_kargs *a);
NN_CUDA_WEAK nn_status nn_cuda_ternary(const nn_kargs *a);
NN_CUDA_WEAK nn_status nn_cuda_reduce(const nn_kargs *a);
NN_CUDA_WEAK nn_status nn_cuda_bmm(const nn_kargs *a);
NN_CUDA_WEAK nn_status nn_cuda_fill(const nn_kargs *a);
NN_CUDA_WEAK nn_status nn_cuda_copy(const nn_kargs *a);

#define NN_CUDA_DECLARE_UNARY(name)
#define NN_CUDA_DECLARE_BINARY(name)
#define NN_CUDA_DECLARE_TERNARY(name)
#define NN_CUDA_DECLARE_REDUCE(name)
#define NN_CUDA_DECLARE_BLAS(name)
#define NN_CUDA_DECLARE_FILL(name)
#define NN_CUDA_DECLARE_COPY(name)
#define NN_CUDA_DECLARE_NN(name) NN_CUDA_WEAK nn_status nn_cuda_##name(const nn_kargs *a);
#define X(name, kind, autocast, backward) NN_CUDA_DECLARE_##kind(name)
#include "ops.def"
#undef X
