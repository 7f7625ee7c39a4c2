/* float32 matrix products on the CPU through oneDNN's matmul (gemm_dnnl.c), tried first by blas.c. */
#ifndef NN_CPU_GEMM_DNNL_H
#define NN_CPU_GEMM_DNNL_H

#include <stdbool.h>
#include <stdint.h>

/* C (m x n, row-major, ldc) = beta*C + alpha*op(A) @ op(B) on this thread, as cblas_sgemm in row
 * major (ta/tb: A/B transposed). false, having written nothing, where oneDNN does not take it
 * (switched off, too small to pay for the call, refused, or its primitive cache full). */
bool nn_dnnl_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *A, int64_t lda, const float *B,
                   int64_t ldb, float beta, float *C, int64_t ldc);

#endif
