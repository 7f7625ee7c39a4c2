/* Memory formats: channels_last / channels_last_3d strides, is_contiguous(memory_format=)
 * on contiguous, channels-last, transposed and size-1 shapes, contiguous(memory_format=)
 * values and autograd (CloneBackward0), errors, and conv2d keeping a channels-last
 * input's layout with the same values as the NCHW convolution. */
#include <math.h>
#include <string.h>

#include "autograd.h"
#include "check.h"
#include "conv.h"
#include "memory_format.h"

static uint64_t rng_state = 0xdeadbeefcafef00dull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

static nn_tensor *rand_tensor(int nd, const int64_t *shape, nn_dtype dt)
{
    nn_tensor *t = nn_empty(nd, shape, dt, NN_DEVICE_CPU);
    for (int64_t i = 0; i < nn_numel(t); i++) nn_store_f64((char *)nn_data(t) + i * (int64_t)nn_dtype_size(dt), dt, 2 * urand() - 1);
    return t;
}

static bool same_values(const nn_tensor *a, const nn_tensor *b, double tol)
{
    if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim)) return false;
    int64_t idx[NN_MAX_DIMS] = {0};
    for (int64_t i = 0; i < nn_numel(a); i++) {
        if (fabs(nn_get_f64(a, idx) - nn_get_f64(b, idx)) > tol) return false;
        for (int d = a->ndim - 1; d >= 0; d--) {
            if (++idx[d] < a->shape[d]) break;
            idx[d] = 0;
        }
    }
    return true;
}

static bool strides_are(const nn_tensor *t, const int64_t *want)
{
    return !memcmp(t->strides, want, sizeof(int64_t) * (size_t)t->ndim);
}

static void test_strides(void)
{
    int64_t s4[4] = {2, 3, 4, 5}, st[5], s5[5] = {2, 3, 4, 5, 6};
    CHECK(nn_format_strides("t", 4, s4, NN_CHANNELS_LAST, st) == NN_OK && st[0] == 60 && st[1] == 1 && st[2] == 15 && st[3] == 3,
          "channels_last strides");
    CHECK(nn_format_strides("t", 5, s5, NN_CHANNELS_LAST_3D, st) == NN_OK && st[0] == 360 && st[1] == 1 && st[2] == 90 && st[3] == 18 &&
              st[4] == 3, "channels_last_3d strides");
    CHECK(nn_format_strides("t", 4, s4, NN_CONTIGUOUS_FORMAT, st) == NN_OK && st[0] == 60 && st[3] == 1, "contiguous strides");
    int64_t z[4] = {2, 0, 4, 5};
    CHECK(nn_format_strides("t", 4, z, NN_CHANNELS_LAST, st) == NN_OK && st[1] == 1 && st[3] == 1 && st[2] == 5 && st[0] == 20,
          "a zero size counts as 1");
    CHECK(nn_format_strides("contiguous", 3, s4, NN_CHANNELS_LAST, st) == NN_ERR_ARG &&
              !strcmp(nn_last_error(), "contiguous: required rank 4 tensor to use channels_last format"), "rank error: %s", nn_last_error());
    CHECK(nn_format_strides("contiguous", 4, s4, NN_CHANNELS_LAST_3D, st) == NN_ERR_ARG && strstr(nn_last_error(), "rank 5"), "rank 5");
    CHECK(nn_format_strides("contiguous", 4, s4, NN_PRESERVE_FORMAT, st) == NN_ERR_ARG &&
              strstr(nn_last_error(), "preserve memory format is unsupported by the contiguous operator"), "preserve_format");
    CHECK(!strcmp(nn_memory_format_name(NN_CHANNELS_LAST), "torch.channels_last"), "name");
}

static void test_is_contiguous(void)
{
    int64_t s4[4] = {2, 3, 4, 5}, one_c[4] = {2, 1, 4, 5}, hw1[4] = {2, 3, 1, 1};
    nn_tensor *x = rand_tensor(4, s4, NN_F32);
    CHECK(nn_is_contiguous_as(x, NN_CONTIGUOUS_FORMAT) && !nn_is_contiguous_as(x, NN_CHANNELS_LAST), "NCHW tensor");
    nn_tensor *cl = nn_contiguous_as(x, NN_CHANNELS_LAST);
    CHECK(cl && nn_is_contiguous_as(cl, NN_CHANNELS_LAST) && !nn_is_contiguous(cl), "NHWC tensor");
    CHECK(cl && nn_suggest_memory_format(cl) == NN_CHANNELS_LAST && nn_suggest_memory_format(x) == NN_CONTIGUOUS_FORMAT, "suggest");
    nn_tensor *c1 = rand_tensor(4, one_c, NN_F32), *h1 = rand_tensor(4, hw1, NN_F32);
    CHECK(nn_is_contiguous_as(c1, NN_CHANNELS_LAST) && nn_is_contiguous_as(c1, NN_CONTIGUOUS_FORMAT), "C=1: both formats");
    CHECK(nn_is_contiguous_as(h1, NN_CHANNELS_LAST) && nn_suggest_memory_format(h1) == NN_CONTIGUOUS_FORMAT, "H=W=1: both, contiguous wins");
    int64_t s3[3] = {3, 4, 5};
    nn_tensor *t3 = rand_tensor(3, s3, NN_F32);
    CHECK(!nn_is_contiguous_as(t3, NN_CHANNELS_LAST) && !nn_is_contiguous_as(x, NN_CHANNELS_LAST_3D), "wrong rank: false");
    int perm[4] = {0, 1, 3, 2};
    nn_tensor *p = nn_permute(x, perm);
    CHECK(p && !nn_is_contiguous_as(p, NN_CHANNELS_LAST) && !nn_is_contiguous_as(p, NN_CONTIGUOUS_FORMAT), "other permutations: neither");
    nn_release(x), nn_release(cl), nn_release(c1), nn_release(h1), nn_release(t3), nn_release(p);
}

static void test_contiguous_as(void)
{
    int64_t s4[4] = {2, 3, 4, 5}, want[4] = {60, 1, 15, 3};
    static const nn_dtype dts[] = {NN_F32, NN_F64, NN_F16, NN_I64};
    for (size_t k = 0; k < sizeof dts / sizeof *dts; k++) {
        nn_tensor *x = rand_tensor(4, s4, dts[k]);
        nn_tensor *cl = nn_contiguous_as(x, NN_CHANNELS_LAST);
        CHECK(cl && cl->dtype == dts[k] && strides_are(cl, want) && same_values(cl, x, 0), "%s: channels_last copy", nn_dtype_name(dts[k]));
        nn_tensor *again = cl ? nn_contiguous_as(cl, NN_CHANNELS_LAST) : NULL;
        CHECK(again == cl, "already channels_last: the same tensor");
        nn_tensor *back = cl ? nn_contiguous_as(cl, NN_CONTIGUOUS_FORMAT) : NULL;
        CHECK(back && nn_is_contiguous(back) && same_values(back, x, 0) && back != cl, "back to contiguous");
        nn_release(again), nn_release(back), nn_release(cl), nn_release(x);
    }
    /* from a transposed view */
    nn_tensor *x = rand_tensor(4, s4, NN_F32), *t = nn_transpose(x, 2, 3), *cl = t ? nn_contiguous_as(t, NN_CHANNELS_LAST) : NULL;
    CHECK(cl && nn_is_contiguous_as(cl, NN_CHANNELS_LAST) && same_values(cl, t, 0), "from a transposed view");
    nn_release(t), nn_release(cl);
    /* 5-D */
    int64_t s5[5] = {2, 3, 2, 3, 4};
    nn_tensor *v = rand_tensor(5, s5, NN_F32), *c3 = nn_contiguous_as(v, NN_CHANNELS_LAST_3D);
    CHECK(c3 && nn_is_contiguous_as(c3, NN_CHANNELS_LAST_3D) && c3->strides[1] == 1 && same_values(c3, v, 0), "channels_last_3d");
    nn_release(v), nn_release(c3);
    /* errors */
    int64_t s3[3] = {3, 4, 5};
    nn_tensor *t3 = rand_tensor(3, s3, NN_F32);
    CHECK(!nn_contiguous_as(t3, NN_CHANNELS_LAST) && strstr(nn_last_error(), "required rank 4 tensor to use channels_last format"), "rank");
    nn_release(t3);
    /* autograd: CloneBackward0, the gradient comes back in the input's layout */
    nn_requires_grad_(x, true);
    cl = nn_contiguous_as(x, NN_CHANNELS_LAST);
    CHECK(cl && cl->grad_fn && !strcmp(cl->grad_fn->name, "CloneBackward0"), "grad_fn CloneBackward0");
    nn_tensor *w = rand_tensor(4, s4, NN_F32), *prod = cl ? nn_binary(NN_OP_mul, cl, w) : NULL;
    nn_tensor *loss = prod ? nn_reduce(NN_OP_sum, prod, 0, false) : NULL;
    CHECK(loss && nn_backward(loss, NULL, false) == NN_OK && x->grad && same_values(x->grad, w, 0), "gradient");
    nn_tensor *same = nn_contiguous_as(x, NN_CONTIGUOUS_FORMAT);
    CHECK(same == x, "contiguous_format on a contiguous tensor: itself");
    nn_release(same), nn_release(prod), nn_release(loss), nn_release(w), nn_release(cl), nn_release(x);
}

static void test_conv(void)
{
    int64_t sx[4] = {2, 3, 7, 6}, sw[4] = {4, 3, 3, 3}, sb[1] = {4}, one[2] = {1, 1}, pad[2] = {1, 0}, stride[2] = {2, 1};
    nn_tensor *x = rand_tensor(4, sx, NN_F32), *w = rand_tensor(4, sw, NN_F32), *b = rand_tensor(1, sb, NN_F32);
    nn_tensor *ref = nn_conv2d(x, w, b, stride, pad, one, 1);
    nn_tensor *xcl = nn_contiguous_as(x, NN_CHANNELS_LAST), *wcl = nn_contiguous_as(w, NN_CHANNELS_LAST);
    nn_tensor *y1 = nn_conv2d(xcl, w, b, stride, pad, one, 1), *y2 = nn_conv2d(x, wcl, b, stride, pad, one, 1);
    CHECK(ref && nn_is_contiguous(ref), "NCHW in, NCHW out");
    CHECK(y1 && nn_suggest_memory_format(y1) == NN_CHANNELS_LAST && same_values(y1, ref, 1e-5), "channels_last input: channels_last output");
    CHECK(y2 && nn_suggest_memory_format(y2) == NN_CHANNELS_LAST && same_values(y2, ref, 1e-5), "channels_last weight: channels_last output");
    /* gradients through a channels-last convolution */
    nn_requires_grad_(xcl, true), nn_requires_grad_(w, true);
    nn_tensor *y = nn_conv2d(xcl, w, b, stride, pad, one, 1), *loss = y ? nn_reduce(NN_OP_sum, y, 0, false) : NULL;
    nn_requires_grad_(x, true);
    nn_tensor *yr = nn_conv2d(x, w, b, stride, pad, one, 1), *lr = yr ? nn_reduce(NN_OP_sum, yr, 0, false) : NULL;
    nn_tensor *gw = NULL;
    if (loss && nn_backward(loss, NULL, false) == NN_OK && w->grad) {
        gw = nn_clone(w->grad);
        nn_release(w->grad);
        w->grad = NULL;
    }
    CHECK(gw && lr && nn_backward(lr, NULL, false) == NN_OK && same_values(gw, w->grad, 1e-4) && same_values(xcl->grad, x->grad, 1e-5),
          "channels-last gradients equal NCHW ones");
    nn_release(gw), nn_release(y), nn_release(loss), nn_release(yr), nn_release(lr);
    nn_release(x), nn_release(w), nn_release(b), nn_release(ref), nn_release(xcl), nn_release(wcl), nn_release(y1), nn_release(y2);
}

int main(void)
{
    test_strides();
    test_is_contiguous();
    test_contiguous_as();
    test_conv();
    return CHECK_REPORT();
}
