/* CUDA elementwise and reduction kernels through the engine's frontends: time
 * per op (CUDA events, after warm-up) and effective bandwidth (bytes read and
 * written once). bench/cuda_elementwise.py times the same work in PyTorch.
 * Also the host cost of a small op (allocation from the caching allocator,
 * dispatch, launch), timed on the CPU. Usage: bench_cuda_elementwise */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "device.h"
#include "ops.h"

static const nn_device G = {NN_CUDA, 0};

typedef nn_tensor *(*op_fn)(nn_tensor *const *in);

static nn_tensor *f_add(nn_tensor *const *in) { return nn_binary(NN_OP_add, in[0], in[1]); }
static nn_tensor *f_mul(nn_tensor *const *in) { return nn_binary(NN_OP_mul, in[0], in[1]); }
static nn_tensor *f_exp(nn_tensor *const *in) { return nn_unary(NN_OP_exp, in[0]); }
static nn_tensor *f_relu(nn_tensor *const *in) { return nn_unary(NN_OP_relu, in[0]); }
static nn_tensor *f_gt(nn_tensor *const *in) { return nn_binary(NN_OP_gt, in[0], in[1]); }
static nn_tensor *f_where(nn_tensor *const *in) { return nn_where(in[2], in[0], in[1]); }
static nn_tensor *f_sum_all(nn_tensor *const *in) { return nn_reduce(NN_OP_sum, in[0], 0, false); }
static nn_tensor *f_sum_rows(nn_tensor *const *in) { return nn_reduce(NN_OP_sum, in[0], 2, false); }
static nn_tensor *f_sum_cols(nn_tensor *const *in) { return nn_reduce(NN_OP_sum, in[0], 1, false); }
static nn_tensor *f_amax_rows(nn_tensor *const *in) { return nn_reduce(NN_OP_amax, in[0], 2, false); }
static nn_tensor *f_var_rows(nn_tensor *const *in) { return nn_var(in[0], 2, 1, false); }
static nn_tensor *f_argmax_rows(nn_tensor *const *in) { return nn_argmax(in[0], 1, false); }
static nn_tensor *f_norm_all(nn_tensor *const *in) { return nn_norm(in[0], 2, 0, false); }
static nn_tensor *f_mean_small_rows(nn_tensor *const *in) { return nn_reduce(NN_OP_mean, in[0], 2, false); }

static double bytes_of(nn_tensor *t) { return (double)nn_numel(t) * nn_dtype_size(t->dtype); }

static void bench(const char *name, op_fn fn, nn_tensor *const *in, int nin)
{
    nn_tensor *r = fn(in);
    if (!r) {
        printf("%-36s error: %s\n", name, nn_last_error());
        return;
    }
    double bytes = bytes_of(r);
    for (int i = 0; i < nin; i++) bytes += bytes_of(in[i]);
    nn_release(r);
    for (int i = 0; i < 3; i++) nn_release(fn(in));
    nn_gpu_event *e0 = nn_gpu->event_new(true), *e1 = nn_gpu->event_new(true);
    int iters = 20;
    nn_gpu->event_record(e0, NULL);
    for (int i = 0; i < iters; i++) nn_release(fn(in));
    nn_gpu->event_record(e1, NULL);
    nn_gpu->event_synchronize(e1);
    float ms = 0;
    nn_gpu->event_elapsed_ms(e0, e1, &ms);
    ms /= iters;
    printf("%-36s %9.4f ms %8.1f GB/s\n", name, ms, bytes / (ms * 1e-3) / 1e9);
    nn_gpu->event_free(e0);
    nn_gpu->event_free(e1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
    if (!nn_gpu || nn_gpu->device_count() == 0) {
        printf("no GPU\n");
        return 0;
    }
    nn_manual_seed(0);
    int64_t n = 1 << 24, sq[2] = {4096, 4096}, row[1] = {4096}, tall[2] = {1 << 20, 16};
    nn_tensor *a = nn_rand(1, &n, NN_F32, G), *b = nn_rand(1, &n, NN_F32, G);
    nn_tensor *ah = nn_to_dtype(a, NN_F16), *bh = nn_to_dtype(b, NN_F16);
    nn_tensor *ab = nn_to_dtype(a, NN_BF16), *bb = nn_to_dtype(b, NN_BF16);
    nn_tensor *m = nn_rand(2, sq, NN_F32, G), *m2 = nn_rand(2, sq, NN_F32, G), *mt = nn_transpose(m2, 0, 1);
    nn_tensor *bias = nn_rand(1, row, NN_F32, G), *mh = nn_to_dtype(m, NN_F16);
    nn_tensor *t16 = nn_rand(2, tall, NN_F32, G);
    nn_tensor *cond = nn_binary(NN_OP_gt, a, b);
    nn_tensor *half = nn_scalar_f64(0.5);

    printf("device: %s\n", "cuda:0");
    bench("add f32 16M", f_add, (nn_tensor *[]){a, b}, 2);
    bench("add f16 16M", f_add, (nn_tensor *[]){ah, bh}, 2);
    bench("mul bf16 16M", f_mul, (nn_tensor *[]){ab, bb}, 2);
    bench("mul f32 16M by a number", f_mul, (nn_tensor *[]){a, half}, 1);
    bench("add f32 f16 16M (promotion)", f_add, (nn_tensor *[]){a, bh}, 2);
    bench("exp f32 16M", f_exp, (nn_tensor *[]){a}, 1);
    bench("relu f16 16M", f_relu, (nn_tensor *[]){ah}, 1);
    bench("gt f32 16M -> bool", f_gt, (nn_tensor *[]){a, b}, 2);
    bench("where f32 16M", f_where, (nn_tensor *[]){a, b, cond}, 3);
    bench("add f32 4096^2 + transposed", f_add, (nn_tensor *[]){m, mt}, 2);
    bench("add f32 4096^2 + bias row", f_add, (nn_tensor *[]){m, bias}, 2);
    bench("sum f32 16M (all)", f_sum_all, (nn_tensor *[]){a}, 1);
    bench("sum f16 16M (all)", f_sum_all, (nn_tensor *[]){ah}, 1);
    bench("sum f32 4096^2 dim 1 (rows)", f_sum_rows, (nn_tensor *[]){m}, 1);
    bench("sum f32 4096^2 dim 0 (cols)", f_sum_cols, (nn_tensor *[]){m}, 1);
    bench("sum f32 4096^2 transposed dim 1", f_sum_rows, (nn_tensor *[]){mt}, 1);
    bench("amax f16 4096^2 dim 1", f_amax_rows, (nn_tensor *[]){mh}, 1);
    bench("var f32 4096^2 dim 1", f_var_rows, (nn_tensor *[]){m}, 1);
    bench("argmax f32 4096^2 dim 1", f_argmax_rows, (nn_tensor *[]){m}, 1);
    bench("norm f32 16M (all)", f_norm_all, (nn_tensor *[]){a}, 1);
    bench("mean f32 [1M,16] dim 1", f_mean_small_rows, (nn_tensor *[]){t16}, 1);

    /* host cost of a small op */
    int64_t small = 1000;
    nn_tensor *x = nn_rand(1, &small, NN_F32, G), *y = nn_rand(1, &small, NN_F32, G);
    for (int i = 0; i < 100; i++) nn_release(nn_binary(NN_OP_add, x, y));
    nn_gpu->synchronize(0);
    int reps = 20000;
    double t0 = now();
    for (int i = 0; i < reps; i++) nn_release(nn_binary(NN_OP_add, x, y));
    double t1 = now();
    nn_gpu->synchronize(0);
    printf("%-36s %9.2f us per op (host, enqueue only)\n", "add f32 [1000] small op", (t1 - t0) / reps * 1e6);
    t0 = now();
    for (int i = 0; i < 2000; i++) nn_release(nn_reduce(NN_OP_sum, x, 0, false));
    t1 = now();
    nn_gpu->synchronize(0);
    printf("%-36s %9.2f us per op (host, enqueue only)\n", "sum f32 [1000] small op", (t1 - t0) / 2000 * 1e6);

    nn_tensor *all[] = {a, b, ah, bh, ab, bb, m, m2, mt, bias, mh, t16, cond, half, x, y};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) nn_release(all[i]);
    return 0;
}
