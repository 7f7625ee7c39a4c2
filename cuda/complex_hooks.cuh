/* The kernels of complex operands (complex.cu), which the entry points of unary.cu, binary.cu,
 * elementwise.cu, copy.cu and reduce.cu call when an operand is complex (the ops
 * engine/complex.c lets through on CUDA), and the complex products of blas.cu. */
#pragma once

#include "kernels.cuh"

nn_status nn_cuda_complex_unary(const nn_kargs *a);   /* in or out complex */
nn_status nn_cuda_complex_binary(const nn_kargs *a);  /* compute dtype (i[0]) or an operand complex */
nn_status nn_cuda_complex_where(const nn_kargs *a);   /* out complex */
nn_status nn_cuda_complex_copy(const nn_kargs *a);    /* in or out complex */
nn_status nn_cuda_complex_fill(const nn_kargs *a);    /* NN_OP_fill of a complex out: f[0] + i f[1] */
nn_status nn_cuda_complex_reduce(const nn_kargs *a);  /* sum mean prod all any; in or out complex */

inline bool nn_cuda_any_complex(const nn_kargs *a)
{
    for (int k = 0; k < 3; k++)
        if (a->out[k] && nn_dtype_is_complex(a->out[k]->dtype)) return true;
    for (int k = 0; k < a->nin; k++)
        if (a->in[k] && nn_dtype_is_complex(a->in[k]->dtype)) return true;
    return false;
}
