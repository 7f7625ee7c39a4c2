/* conv2d on the CPU: a batch of 128 32x32 float32 images through conv 3->32 k3
 * (the documents' first layer), timed as forward alone, forward + backward for
 * weight and bias (a first layer: the input needs no gradient), and forward +
 * backward for all three. Then deeper layers (32->64 k3 pad 1 on 15x15, 64->64 on 7x7) and
 * max_pool2d 2 on the first layer's output. Three warm-ups, then the median of
 * the repeats in milliseconds (process CPU time when BENCH_CPU_TIME is set).
 * PyTorch's reference for the same work: conv_cpu.py.
 * Build (no CMake target): gcc -O2 -std=c11 -D_GNU_SOURCE -Iengine bench/conv_cpu.c
 *   build/libnnrepl_engine.a -lopenblas -lpthread -lm -o bench_conv_cpu
 * Usage: bench_conv_cpu [repeats] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "autograd.h"
#include "conv.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(getenv("BENCH_CPU_TIME") ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    nn_tensor *x, *w, *b, *g; /* g: the output gradient (ones), made once */
    int64_t stride[2], pad[2], dil[2];
} layer;

/* One step: conv (+ backward with ones as the gradient); 0 on failure. */
static int step(layer *l, int backward)
{
    nn_tensor *y = nn_conv2d(l->x, l->w, l->b, l->stride, l->pad, l->dil, 1);
    if (!y) return 0;
    int ok = 1;
    if (backward) {
        if (!l->g) l->g = nn_ones(y->ndim, y->shape, y->dtype, NN_DEVICE_CPU);
        ok = l->g && nn_backward(y, l->g, false) == NN_OK;
        nn_release(l->x->grad), nn_release(l->w->grad), nn_release(l->b->grad);
        l->x->grad = l->w->grad = l->b->grad = NULL;
    }
    nn_release(y);
    return ok;
}

static double median_ms(layer *l, int backward, int reps)
{
    double t[101];
    for (int r = 0; r < 3; r++) /* warm-up: also lets malloc settle on reusing the big blocks */
        if (!step(l, backward)) return -1;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (!step(l, backward)) return -1;
        t[r] = (now() - t0) * 1e3;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

static layer make_layer(int64_t n, int64_t c, int64_t hw, int64_t o, int64_t k, int64_t pad)
{
    int64_t xs[4] = {n, c, hw, hw}, ws[4] = {o, c, k, k}, bs[1] = {o};
    layer l = {nn_randn(4, xs, NN_F32, NN_DEVICE_CPU), nn_randn(4, ws, NN_F32, NN_DEVICE_CPU), nn_randn(1, bs, NN_F32, NN_DEVICE_CPU),
               NULL, {1, 1}, {pad, pad}, {1, 1}};
    return l;
}

static void free_layer(layer *l) { nn_release(l->x), nn_release(l->w), nn_release(l->b), nn_release(l->g); }

static void report(const char *name, layer *l, int reps)
{
    double f = median_ms(l, 0, reps);
    nn_requires_grad_(l->w, true), nn_requires_grad_(l->b, true);
    double fb = median_ms(l, 1, reps);
    nn_requires_grad_(l->x, true);
    double fbx = median_ms(l, 1, reps);
    printf("%-34s forward %8.2f ms   fwd+bwd(w,b) %8.2f ms   fwd+bwd(x,w,b) %8.2f ms\n", name, f, fb, fbx);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 11;
    if (reps <= 0 || reps > 100) {
        fprintf(stderr, "usage: %s [repeats <= 100]\n", argv[0]);
        return 2;
    }
    nn_manual_seed(0);
    layer a = make_layer(128, 3, 32, 32, 3, 0);
    report("conv 3->32 k3, 128x3x32x32", &a, reps);
    layer b = make_layer(128, 32, 15, 64, 3, 1);
    report("conv 32->64 k3 p1, 128x32x15x15", &b, reps);
    free_layer(&b);
    layer c = make_layer(128, 64, 7, 64, 3, 1);
    report("conv 64->64 k3 p1, 128x64x7x7", &c, reps);
    free_layer(&c);

    int64_t ys[4] = {128, 32, 30, 30}, k2[2] = {2, 2}, z[2] = {0, 0}, one[2] = {1, 1};
    nn_tensor *y = nn_randn(4, ys, NN_F32, NN_DEVICE_CPU);
    double t[101];
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        nn_tensor *p = nn_max_pool2d(y, k2, z, z, one, false, NULL);
        if (r >= 0) t[r] = (now() - t0) * 1e3;
        nn_release(p);
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    printf("%-34s forward %8.2f ms\n", "max_pool2d 2, 128x32x30x30", t[reps / 2]);
    nn_release(y);
    free_layer(&a);
    return 0;
}
