/* The CPU backend's kernels, one entry point per op kind (see ops.def);
 * each switches on a->op. */
#ifndef NN_CPU_KERNELS_H
#define NN_CPU_KERNELS_H

#include "../backend.h"

nn_status nn_cpu_unary(const nn_kargs *a);   /* cpu/elementwise.c */
nn_status nn_cpu_binary(const nn_kargs *a);  /* cpu/elementwise.c */
nn_status nn_cpu_ternary(const nn_kargs *a); /* cpu/elementwise.c */
nn_status nn_cpu_reduce(const nn_kargs *a);  /* cpu/reduce.c */
nn_status nn_cpu_bmm(const nn_kargs *a);     /* cpu/blas.c */
nn_status nn_cpu_fill(const nn_kargs *a);    /* cpu/copy.c: fill, arange; random ops go to nn_cpu_random */
nn_status nn_cpu_random(const nn_kargs *a);  /* cpu/random.c: uniform, normal, randint */
nn_status nn_cpu_copy(const nn_kargs *a);    /* cpu/copy.c */
/* complex operands (cpu/complex.c): the entry points above hand them over */
nn_status nn_cpu_complex_unary(const nn_kargs *a);
nn_status nn_cpu_complex_binary(const nn_kargs *a);
nn_status nn_cpu_complex_copy(const nn_kargs *a);   /* dtypes differ, one complex */
nn_status nn_cpu_complex_fill(const nn_kargs *a);
nn_status nn_cpu_complex_reduce(const nn_kargs *a); /* sum mean prod all any */

/* n elements of float dtype dt at p, byte stride s, to and from doubles (cpu/rows.c) */
void nn_cpu_load_row(double *restrict b, const char *p, int64_t s, int64_t n, nn_dtype dt);
void nn_cpu_store_row(char *p, int64_t s, const double *restrict b, int64_t n, nn_dtype dt);

/* Ops of kind NN each have a kernel nn_cpu_<name>. Declared weak: a kernel not yet
 * written is a NULL table entry, which nn_dispatch reports as not implemented. */
#define NN_CPU_DECLARE_UNARY(name)
#define NN_CPU_DECLARE_BINARY(name)
#define NN_CPU_DECLARE_TERNARY(name)
#define NN_CPU_DECLARE_REDUCE(name)
#define NN_CPU_DECLARE_BLAS(name)
#define NN_CPU_DECLARE_FILL(name)
#define NN_CPU_DECLARE_COPY(name)
#define NN_CPU_DECLARE_NN(name) __attribute__((weak)) nn_status nn_cpu_##name(const nn_kargs *a);
#define X(name, kind, autocast, backward) NN_CPU_DECLARE_##kind(name)
#include "../ops.def"
#undef X

/* A kernel function built three times, for AVX-512, AVX2 and the baseline (SSE2), the best one the
 * CPU runs picked when the program loads: the build targets any x86-64 CPU, whose SSE2 lacks what
 * some loops need to vectorize (widening int32 -> int64, for one) and has a quarter of AVX-512's
 * width. The results may differ in the last bits from one build to another: AVX-512 fuses
 * multiply-adds, and libmvec's wider exp, tanh, ... round differently from its SSE2 ones
 * (docs/devices.md); on one CPU they are the same from run to run. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NN_CPU_CLONES                                                                                                   \
    __attribute__((target_clones("avx512f", "avx2", "default"), optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define NN_CPU_CLONES
#endif

/* y[i] = exp(x[i] - max), max the row's maximum (set in *max); returns the sum of y in double
 * (engine/cpu/softmax.c: the exp loop alone, so that it vectorizes) */
double nn_cpu_exp_sum_f32(float *restrict y, const float *restrict x, int64_t n, float *max);

/* C (m x n, row-major, ldc) = beta*C + alpha*op(A) @ op(B) of dtype dt (float32, float64, float16,
 * bfloat16; 16-bit ones summed in float32 and rounded once), a large product split over the CPU
 * pool (engine/cpu/blas.c): float32 and the 16-bit types through oneDNN's matmul (gemm_dnnl.c)
 * where it takes them, else OpenBLAS (16-bit ones widened to float32) */
void nn_cpu_gemm(nn_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const void *A, int64_t lda, const void *B,
                 int64_t ldb, double beta, void *C, int64_t ldc);
/* Most threads calling OpenBLAS at once (it has buffers for a fixed number): the parts a product
 * or a convolution is split into */
#define NN_CPU_BLAS_CALLERS 32
/* OpenBLAS on one thread (once; before any direct cblas call) */
void nn_cpu_blas_init(void);

/* torch.backends.mkldnn.enabled (default true): false sends every CPU convolution and product to
 * the own and OpenBLAS kernels instead of oneDNN's (engine/cpu/dnnl_prim.c) */
extern bool nn_mkldnn_enabled;

#endif
