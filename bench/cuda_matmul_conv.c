/* GPU matrix products, convolutions and pools through the engine's frontends, timed on
 * cuda:0; bench/cuda_matmul_conv.py times the same work in PyTorch. Each line: the op,
 * milliseconds per call (the median of 5 rounds of calls, synchronised at the end of each
 * round) and TFLOP/s where it means something. Also the host cost of a small mm in steady
 * state (the plan caches at work). Prints "no GPU" and exits 0 where there is none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autograd.h"
#include "conv.h"
#include "cuda_flags.h"
#include "device.h"
#include "ops.h"

static const nn_device GPU = {NN_CUDA, 0};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static nn_tensor *rnd(int nd, const int64_t *s, nn_dtype dt)
{
    nn_tensor *t = nn_rand(nd, s, NN_F32, GPU);
    nn_tensor *c = t ? nn_to_dtype(t, dt) : NULL;
    nn_release(t);
    return c;
}

typedef nn_tensor *(*op_fn)(void *ctx);

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ms per call of f */
static double time_op(op_fn f, void *ctx, int iters)
{
    double r[5];
    for (int w = 0; w < 3; w++) nn_release(f(ctx));
    nn_gpu->synchronize(0);
    for (int k = 0; k < 5; k++) {
        double t0 = now();
        for (int i = 0; i < iters; i++) {
            nn_tensor *y = f(ctx);
            if (!y) {
                fprintf(stderr, "error: %s\n", nn_last_error());
                exit(1);
            }
            nn_release(y);
        }
        nn_gpu->synchronize(0);
        r[k] = (now() - t0) * 1e3 / iters;
    }
    qsort(r, 5, sizeof *r, cmp);
    return r[2];
}

typedef struct { nn_tensor *a, *b; } mmctx;
static nn_tensor *do_mm(void *p) { return nn_mm(((mmctx *)p)->a, ((mmctx *)p)->b); }
static nn_tensor *do_bmm(void *p) { return nn_bmm(((mmctx *)p)->a, ((mmctx *)p)->b); }

typedef struct { nn_tensor *x, *w, *b, *gy; int64_t st[2], pd[2], dl[2]; } convctx;
static nn_tensor *do_conv(void *p)
{
    convctx *c = p;
    return nn_conv2d(c->x, c->w, c->b, c->st, c->pd, c->dl, 1);
}
static nn_tensor *do_conv_bwd_in(void *p)
{
    convctx *c = p;
    return nn_conv2d_backward_input(c->gy, c->w, c->x->shape, c->st, c->pd, c->dl, 1);
}
static nn_tensor *do_conv_bwd_w(void *p)
{
    convctx *c = p;
    return nn_conv2d_backward_weight(c->gy, c->x, c->w->shape, c->st, c->pd, c->dl, 1);
}

static nn_tensor *do_maxpool(void *p)
{
    int64_t k[2] = {2, 2}, s[2] = {2, 2}, pd[2] = {0, 0}, d[2] = {1, 1};
    return nn_max_pool2d(p, k, s, pd, d, false, NULL);
}

static void bench_mm(const char *tag, nn_dtype dt, int64_t m, int64_t k, int64_t n, bool tf32, int iters)
{
    int64_t sa[2] = {m, k}, sb[2] = {k, n};
    nn_cuda_set_matmul_allow_tf32(tf32);
    mmctx c = {rnd(2, sa, dt), rnd(2, sb, dt)};
    double ms = time_op(do_mm, &c, iters);
    printf("mm %s %s %lldx%lldx%lld: %.4f ms, %.1f TFLOP/s\n", nn_dtype_name(dt), tag, (long long)m, (long long)k, (long long)n, ms,
           2.0 * m * n * k / ms * 1e-9);
    nn_release(c.a), nn_release(c.b);
    nn_cuda_set_matmul_allow_tf32(false);
}

static void bench_conv(nn_dtype dt, int64_t N, int64_t C, int64_t HW, int64_t O, int64_t kk, bool bench, bool tf32, bool bias)
{
    int64_t xs[4] = {N, C, HW, HW}, ws[4] = {O, C, kk, kk}, bs[1] = {O}, ys[4] = {N, O, HW, HW};
    nn_cudnn_set_benchmark(bench);
    nn_cudnn_set_allow_tf32(tf32);
    convctx c = {rnd(4, xs, dt), rnd(4, ws, dt), bias ? rnd(1, bs, dt) : NULL, rnd(4, ys, dt), {1, 1}, {kk / 2, kk / 2}, {1, 1}};
    double flops = 2.0 * N * O * HW * HW * C * kk * kk * 1e-9;
    double f = time_op(do_conv, &c, 20), bi = time_op(do_conv_bwd_in, &c, 20), bw = time_op(do_conv_bwd_w, &c, 20);
    printf("conv2d %s%s%s%s N%lld C%lld %lldx%lld O%lld k%lld: fwd %.3f ms (%.1f TFLOP/s), bwd-input %.3f ms, bwd-weight %.3f ms\n", nn_dtype_name(dt),
           bench ? " benchmark" : "", tf32 ? " tf32" : "", bias ? "" : " no-bias", (long long)N, (long long)C, (long long)HW, (long long)HW, (long long)O, (long long)kk,
           f, flops / f, bi, bw);
    nn_release(c.x), nn_release(c.w), nn_release(c.b), nn_release(c.gy);
    nn_cudnn_set_benchmark(false);
    nn_cudnn_set_allow_tf32(true);
}

int main(void)
{
    if (!nn_gpu || nn_gpu->device_count() == 0) {
        printf("no GPU\n");
        return 0;
    }
    nn_manual_seed(0);
    bench_mm("", NN_F32, 4096, 4096, 4096, false, 10);
    bench_mm("tf32", NN_F32, 4096, 4096, 4096, true, 10);
    bench_mm("", NN_F16, 4096, 4096, 4096, false, 20);
    bench_mm("", NN_BF16, 8192, 8192, 8192, false, 5);
    bench_mm("", NN_F64, 2048, 2048, 2048, false, 5);
    bench_mm("", NN_F32, 64, 64, 64, false, 2000);
    {
        int64_t sa[3] = {64, 256, 64}, sb[3] = {64, 64, 256};
        mmctx c = {rnd(3, sa, NN_F16), rnd(3, sb, NN_F16)};
        double ms = time_op(do_bmm, &c, 100);
        printf("bmm float16 64x[256x64x256]: %.4f ms\n", ms);
        nn_release(c.a), nn_release(c.b);
    }
    bench_conv(NN_F32, 64, 64, 56, 64, 3, false, false, true);
    bench_conv(NN_F32, 64, 64, 56, 64, 3, false, true, true);
    bench_conv(NN_F32, 64, 64, 56, 64, 3, true, true, true);
    bench_conv(NN_F16, 64, 64, 56, 64, 3, false, false, true);
    bench_conv(NN_F16, 64, 64, 56, 64, 3, true, false, true);
    bench_conv(NN_F32, 128, 3, 32, 32, 3, false, true, true);
    bench_conv(NN_F32, 128, 3, 32, 32, 3, false, true, false);
    bench_conv(NN_F32, 128, 3, 32, 32, 3, true, true, true);
    {
        int64_t xs[4] = {64, 64, 112, 112};
        nn_tensor *x = rnd(4, xs, NN_F32);
        printf("max_pool2d float32 [64, 64, 112, 112] k2 s2: %.4f ms\n", time_op(do_maxpool, x, 50));
        nn_release(x);
    }
    return 0;
}
