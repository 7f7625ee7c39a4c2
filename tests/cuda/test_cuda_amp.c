/* CUDA mixed precision: the amp_unscale kernel against the CPU one on the same gradient
 * lists (every float dtype; contiguous, unaligned, transposed (not dense) and channels-last
 * layouts; more gradients than one launch takes; a large float32 one for the vector path),
 * inf/nan found in any single gradient, amp_update_scale's sequence on the device, and
 * the autocast policy on cuda tensors (float16 and bfloat16 regions, the cast cache,
 * float32 gradients of float32 parameters).
 * The last line counts cases: "N passed, N failed, N skipped"; without a GPU every case is skipped. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "amp.h"
#include "autocast.h"
#include "autograd.h"
#include "device.h"
#include "memory_format.h"
#include "nnfunc.h"
#include "ops.h"

static const nn_device DEV = {NN_CUDA, 0};
static bool have_gpu;
static int n_pass, n_fail, n_skip;

static void report(bool ok, const char *fmt, ...)
{
    va_list ap;
    if (ok) {
        n_pass++;
        return;
    }
    n_fail++;
    fprintf(stderr, "FAIL ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (%s)\n", nn_last_error());
}

static uint64_t rng_state = 0x5eed5eed5eedull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

enum { CONTIG, UNALIGNED, TRANSPOSED, NARROWED, CHANNELS_LAST, NLAYOUTS };

/* a CPU gradient [rows, cols] (rows, cols even) in the layout: NARROWED is not dense */
static nn_tensor *grad(int64_t rows, int64_t cols, nn_dtype dt, int layout)
{
    int64_t shape[2] = {rows, cols}, n = rows * (cols + 1) + 1;
    nn_tensor *base = nn_empty(1, &n, dt, NN_DEVICE_CPU);
    for (int64_t i = 0; i < n; i++) nn_store_f64((char *)nn_data(base) + i * (int64_t)nn_dtype_size(dt), dt, 64 * urand() - 32);
    int64_t strides[2] = {cols, 1}, offset = 0;
    if (layout == UNALIGNED) offset = 1;
    if (layout == TRANSPOSED) strides[0] = 1, strides[1] = rows;
    if (layout == NARROWED) strides[0] = cols + 1;
    nn_tensor *v = nn_make_view(base, 2, shape, strides, offset);
    nn_release(base);
    if (layout == CHANNELS_LAST) {
        int64_t s4[4] = {2, rows / 2, cols / 2, 2};
        nn_tensor *c = nn_reshape(v, 4, s4), *cl = c ? nn_contiguous_as(c, NN_CHANNELS_LAST) : NULL;
        nn_release(v), nn_release(c);
        return cl;
    }
    return v;
}

/* the same layout on the device: a copy of the whole storage and the same view geometry */
static nn_tensor *to_dev(nn_tensor *t)
{
    int64_t n = (int64_t)(t->storage->nbytes / nn_dtype_size(t->dtype));
    nn_tensor *flat = nn_from_blob(t->storage->data, 1, &n, NULL, t->dtype, NN_DEVICE_CPU, NULL, NULL);
    nn_tensor *d = nn_to_device(flat, DEV), *v = d ? nn_make_view(d, t->ndim, t->shape, t->strides, t->offset) : NULL;
    nn_release(flat), nn_release(d);
    return v;
}

static bool same(nn_tensor *cpu, nn_tensor *dev)
{
    nn_tensor *h = nn_to_device(dev, NN_DEVICE_CPU);
    if (!h) return false;
    int64_t idx[NN_MAX_DIMS] = {0};
    bool ok = true;
    for (int64_t i = 0; ok && i < nn_numel(cpu); i++) {
        double a = nn_get_f64(cpu, idx), b = nn_get_f64(h, idx);
        ok = (isnan(a) && isnan(b)) || a == b;
        for (int d = cpu->ndim - 1; d >= 0; d--) {
            if (++idx[d] < cpu->shape[d]) break;
            idx[d] = 0;
        }
    }
    nn_release(h);
    return ok;
}

static float read_f32(nn_tensor *t)
{
    nn_tensor *h = nn_to_device(t, NN_DEVICE_CPU);
    float v = h ? *(float *)nn_data(h) : NAN;
    nn_release(h);
    return v;
}

static nn_tensor *scalar(float v, nn_device dev)
{
    nn_tensor *t = nn_full(0, NULL, v, NN_F32, NN_DEVICE_CPU), *d = nn_to_device(t, dev);
    nn_release(t);
    return d;
}

#define MAXG 800
static void test_unscale(void)
{
    static const nn_dtype dts[4] = {NN_F32, NN_F64, NN_F16, NN_BF16};
    static nn_tensor *hc[MAXG], *dc[MAXG];
    for (int trial = 0; trial < 4; trial++) {
        if (!have_gpu) {
            n_skip++;
            continue;
        }
        /* trial 0: 16 gradients; 1: a large float32 one; 2: 700 small ones (two launches); 3: inf in one of 700 */
        int n = trial == 0 ? 16 : trial == 1 ? 1 : 700;
        for (int k = 0; k < n; k++) {
            int64_t rows = trial == 1 ? 1024 : 4 + 2 * (k % 3), cols = trial == 1 ? 4096 + 6 : 6 + 2 * (k % 5);
            hc[k] = grad(rows, cols, trial == 1 ? NN_F32 : dts[k % 4], trial == 1 ? CONTIG : (k / 4) % NLAYOUTS);
            dc[k] = to_dev(hc[k]);
        }
        if (trial == 3) { /* an inf at logical [0, 1] of one gradient */
            nn_tensor *bad = hc[437];
            char *p = (char *)bad->storage->data + (bad->offset + bad->strides[bad->ndim - 1]) * (int64_t)nn_dtype_size(bad->dtype);
            nn_store_f64(p, bad->dtype, INFINITY);
            nn_release(dc[437]);
            dc[437] = to_dev(bad);
        }
        nn_tensor *fh = scalar(0, NN_DEVICE_CPU), *ih = scalar(0.125f, NN_DEVICE_CPU), *fd = scalar(0, DEV), *id = scalar(0.125f, DEV);
        nn_status s1 = nn_amp_unscale_(n, hc, fh, ih), s2 = nn_amp_unscale_(n, dc, fd, id);
        bool ok = !s1 && !s2;
        for (int k = 0; ok && k < n; k++) ok = same(hc[k], dc[k]);
        report(ok, "unscale trial %d: device values equal the CPU's", trial);
        float want = trial == 3 ? 1.f : 0.f;
        report(read_f32(fd) == want && *(float *)nn_data(fh) == want, "unscale trial %d: found_inf %g", trial, read_f32(fd));
        for (int k = 0; k < n; k++) nn_release(hc[k]), nn_release(dc[k]);
        nn_release(fh), nn_release(ih), nn_release(fd), nn_release(id);
    }
}

static void test_update(void)
{
    if (!have_gpu) {
        n_skip++;
        return;
    }
    static const char pattern[] = "..x...x.x....xx.......";
    nn_tensor *sh = scalar(65536, NN_DEVICE_CPU), *sd = scalar(65536, DEV), *fh = scalar(0, NN_DEVICE_CPU);
    nn_tensor *th = nn_zeros(0, NULL, NN_I32, NN_DEVICE_CPU), *td = nn_zeros(0, NULL, NN_I32, DEV);
    bool ok = sd && td;
    for (int i = 0; ok && pattern[i]; i++) {
        *(float *)nn_data(fh) = pattern[i] == 'x';
        nn_tensor *fd = nn_to_device(fh, DEV);
        ok = !nn_amp_update_scale_(sh, th, fh, 2, 0.5, 3) && fd && !nn_amp_update_scale_(sd, td, fd, 2, 0.5, 3);
        nn_release(fd);
    }
    nn_tensor *tdh = nn_to_device(td, NN_DEVICE_CPU);
    report(ok && read_f32(sd) == *(float *)nn_data(sh) && tdh && *(int32_t *)nn_data(tdh) == *(int32_t *)nn_data(th),
           "update sequence on the device: %g", read_f32(sd));
    nn_release(tdh), nn_release(sh), nn_release(sd), nn_release(fh), nn_release(th), nn_release(td);
}

static void test_autocast(void)
{
    const nn_dtype lows[2] = {NN_F16, NN_BF16};
    for (int k = 0; k < 2; k++) {
        if (!have_gpu) {
            n_skip++;
            continue;
        }
        int64_t s34[2] = {32, 64}, s45[2] = {64, 16};
        nn_tensor *x = nn_randn(2, s34, NN_F32, DEV), *w = nn_randn(2, s45, NN_F32, DEV);
        nn_requires_grad_(w, true);
        nn_autocast_region r;
        nn_autocast_enter(NN_CUDA, true, lows[k], true, &r);
        nn_autocast_stats s0 = nn_autocast_get_stats();
        nn_tensor *y1 = nn_mm(x, w), *y2 = nn_mm(x, w);
        nn_autocast_stats s1 = nn_autocast_get_stats();
        nn_tensor *sm = y2 ? nn_softmax(y2, 1, NN_DTYPE_NONE) : NULL, *loss = sm ? nn_reduce(NN_OP_sum, y1, 0, false) : NULL;
        nn_autocast_exit(&r);
        report(y1 && y1->dtype == lows[k] && sm && sm->dtype == NN_F32 && loss && loss->dtype == NN_F32, "%s region dtypes",
               nn_dtype_name(lows[k]));
        report(s1.casts - s0.casts == 3 && s1.cache_hits - s0.cache_hits == 1, "cache: x twice, w once (casts %d)",
               (int)(s1.casts - s0.casts));
        report(loss && !nn_backward(loss, NULL, false) && w->grad && w->grad->dtype == NN_F32, "float32 grad of a float32 weight");
        nn_release(y1), nn_release(y2), nn_release(sm), nn_release(loss), nn_release(x), nn_release(w);
    }
}

int main(void)
{
    have_gpu = nn_gpu && nn_gpu->device_count() > 0;
    test_unscale();
    test_update();
    test_autocast();
    printf("%d passed, %d failed, %d skipped\n", n_pass, n_fail, n_skip);
    return n_fail != 0;
}
