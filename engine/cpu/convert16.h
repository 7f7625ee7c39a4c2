/* Runs of float16/bfloat16 to float32 and back, at any element strides: the CPU kernels that
 * compute 16-bit floats in float32 (products without oneDNN, max pools, casts). One loop per dtype,
 * so that each vectorizes where its strides allow. */
#ifndef NN_CPU_CONVERT16_H
#define NN_CPU_CONVERT16_H

#include "../dtype.h"

/* dst[i * ds] = src[i * ss] as float32, for i < n; dt is NN_BF16 or NN_F16 (exact) */
static inline void nn_widen16(float *dst, int64_t ds, const uint16_t *src, int64_t ss, int64_t n, nn_dtype dt)
{
    if (dt == NN_BF16)
        for (int64_t i = 0; i < n; i++) dst[i * ds] = nn_bf16_to_float(src[i * ss]);
    else
        for (int64_t i = 0; i < n; i++) dst[i * ds] = nn_half_to_float(src[i * ss]);
}

/* dst[i * ds] = src[i * ss] rounded to dt (nearest even), for i < n */
static inline void nn_narrow16(uint16_t *dst, int64_t ds, const float *src, int64_t ss, int64_t n, nn_dtype dt)
{
    if (dt == NN_BF16)
        for (int64_t i = 0; i < n; i++) dst[i * ds] = nn_float_to_bf16(src[i * ss]);
    else
        for (int64_t i = 0; i < n; i++) dst[i * ds] = nn_float_to_half(src[i * ss]);
}

#endif
