/* nn_mm against a direct cblas_sgemm on the same random 2048x2048 float32
 * matrices: one warm-up each, then the median of interleaved repeats.
 * Prints both rates in GFLOP/s and their ratio (goal: nn_mm >= 90% of cblas).
 * A third line runs the bmm kernel into a reused output, which separates the
 * cost of allocating (and first touching) nn_mm's fresh result from the call.
 * Usage: bench_matmul_cpu [n] [repeats] */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void fill(float *p, int64_t n, uint64_t seed)
{
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (float)((double)(seed >> 11) * 0x1p-53 * 2 - 1);
    }
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2048, reps = argc > 2 ? atoi(argv[2]) : 7;
    if (n <= 0 || reps <= 0 || reps > 100) {
        fprintf(stderr, "usage: %s [n] [repeats <= 100]\n", argv[0]);
        return 2;
    }
    int64_t shape[2] = {n, n};
    nn_tensor *a = nn_empty(2, shape, NN_F32, NN_DEVICE_CPU), *b = nn_empty(2, shape, NN_F32, NN_DEVICE_CPU);
    float *c = malloc(sizeof(float) * (size_t)n * n);
    if (!a || !b || !c) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    fill(nn_data(a), (int64_t)n * n, 1), fill(nn_data(b), (int64_t)n * n, 2);
    const float *pa = nn_data(a), *pb = nn_data(b);

    /* warm-up (thread pool start, page faults), and a check that both agree */
    nn_tensor *out = nn_mm(a, b);
    if (!out) {
        fprintf(stderr, "nn_mm: %s\n", nn_last_error());
        return 1;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, pa, n, pb, n, 0, c, n);
    double maxdiff = 0;
    const float *po = nn_data(out);
    for (int64_t i = 0; i < (int64_t)n * n; i++) maxdiff = fmax(maxdiff, fabs((double)po[i] - c[i]));
    nn_release(out);

    /* the kernel alone, writing into one reused output */
    nn_tensor *reused = nn_mm(a, b), *a3, *b3, *o3;
    int64_t s3[3] = {1, n, n}, st3[3] = {0, n, 1};
    a3 = nn_make_view(a, 3, s3, st3, 0), b3 = nn_make_view(b, 3, s3, st3, 0), o3 = nn_make_view(reused, 3, s3, st3, 0);
    nn_kargs k = {.op = NN_OP_bmm, .out = {o3}, .in = {a3, b3}, .nin = 2, .f = {1, 0}};

    double t_nn[100], t_blas[100], t_kernel[100];
    for (int r = 0; r < reps; r++) { /* interleaved, so drift hits both alike */
        double t0 = now();
        out = nn_mm(a, b);
        t_nn[r] = now() - t0;
        nn_release(out);
        t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, pa, n, pb, n, 0, c, n);
        t_blas[r] = now() - t0;
        t0 = now();
        nn_dispatch(&k);
        t_kernel[r] = now() - t0;
    }
    qsort(t_nn, (size_t)reps, sizeof(double), cmp_double);
    qsort(t_blas, (size_t)reps, sizeof(double), cmp_double);
    qsort(t_kernel, (size_t)reps, sizeof(double), cmp_double);
    double flop = 2.0 * n * n * (double)n, g_nn = flop / t_nn[reps / 2] * 1e-9, g_blas = flop / t_blas[reps / 2] * 1e-9;
    double g_k = flop / t_kernel[reps / 2] * 1e-9;
    printf("matmul %dx%d float32, median of %d (OpenBLAS threads: %d)\n", n, n, reps, openblas_get_num_threads());
    printf("nn_mm        %8.2f ms  %7.1f GFLOP/s\n", t_nn[reps / 2] * 1e3, g_nn);
    printf("cblas_sgemm  %8.2f ms  %7.1f GFLOP/s\n", t_blas[reps / 2] * 1e3, g_blas);
    printf("bmm kernel   %8.2f ms  %7.1f GFLOP/s  (output reused)\n", t_kernel[reps / 2] * 1e3, g_k);
    printf("ratio nn_mm/cblas = %.3f   kernel/cblas = %.3f   (max |difference| %.3g)\n", g_nn / g_blas, g_k / g_blas, maxdiff);
    nn_release(a3), nn_release(b3), nn_release(o3), nn_release(reused);
    nn_release(a), nn_release(b);
    free(c);
    return 0;
}
