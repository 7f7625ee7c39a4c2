/* cuDNN helpers shared by cuda/cudnn.cu (convolutions) and cuda/batchnorm.cu. */
#pragma once

#include "core.cuh"

/* The cuDNN data type of a float dtype. */
inline cudnnDataType_t nn_cudnn_type(nn_dtype dt)
{
    switch (dt) {
    case NN_F64: return CUDNN_DATA_DOUBLE;
    case NN_F16: return CUDNN_DATA_HALF;
    case NN_BF16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
    }
}

/* The blend factors cuDNN takes by pointer: double for float64 data, else float. */
inline const void *nn_cudnn_one(nn_dtype dt)
{
    static const double d = 1;
    static const float f = 1;
    return dt == NN_F64 ? (const void *)&d : (const void *)&f;
}
inline const void *nn_cudnn_zero(nn_dtype dt)
{
    static const double d = 0;
    static const float f = 0;
    return dt == NN_F64 ? (const void *)&d : (const void *)&f;
}

/* Whether p may be given to cuDNN as is (its vectorised kernels want 16-byte alignment). */
inline bool nn_cudnn_aligned(const void *p) { return ((uintptr_t)p & 15) == 0; }
