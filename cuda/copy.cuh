/* The dense float cast of cuda/copy.cu, shared with GradScaler's checked cast (cuda/amp.cu). */
#pragma once

#include <stdint.h>

#include <cuda_runtime.h>

/* Casts n elements of a dense float tensor to another float dtype on stream s; false if
 * (dt_out, dt_in) is not such a pair. With flags, it runs `blocks` blocks of 256 threads and
 * block b writes flags[b] = whether any value it cast came out inf or nan (GradScaler's
 * check); without, it picks its own grid. */
bool nn_cuda_cast_dense(void *dst, int dt_out, const void *src, int dt_in, int64_t n, uint8_t *flags, unsigned blocks, cudaStream_t s);
