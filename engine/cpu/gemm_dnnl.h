/* float32, float16 and bfloat16 matrix products on the CPU through oneDNN's matmul (gemm_dnnl.c),
 * tried first by blas.c. */
#ifndef NN_CPU_GEMM_DNNL_H
#define NN_CPU_GEMM_DNNL_H

#include <stdbool.h>
#include <stdint.h>

#include "../dtype.h"

/* C (m x n, row-major, ldc) = beta*C + alpha*op(A) @ op(B) on this thread, as cblas_sgemm in row
 * major (ta/tb: A/B transposed), A, B and C all of dtype dt (16-bit ones summed in float32 and
 * rounded once). false, having written nothing, where oneDNN does not take it (switched off, too
 * small to pay for the call, no fast kernel for it on this CPU, or its primitive cache full). */
bool nn_dnnl_gemm(nn_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const void *A, int64_t lda, const void *B,
                  int64_t ldb, float beta, void *C, int64_t ldc);

#endif
