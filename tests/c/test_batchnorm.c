/* batch_norm against a plain double loop: 2-D to 5-D inputs, contiguous, transposed,
 * narrowed and channels-last, every float dtype (float16/bfloat16 with float32
 * per-channel tensors), training and eval, with and without weight, bias and running
 * stats, the running-stat updates (unbiased variance, momentum, converted and strided
 * running stats written back), empty batches and the error messages; gradients for
 * input, weight and bias through gradcheck (float64 central differences), training and
 * eval; the node's name, saved-value version checks, and float16 rounded once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gradcheck.h"
#include "memory_format.h"
#include "nnfunc.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

enum { CONTIG, TRANSPOSED, NARROWED, CHANNELS_LAST, NLAYOUTS };
static const char *const layout_name[] = {"contiguous", "transposed", "narrowed", "channels-last"};

typedef struct {
    int nd;
    int64_t s[5];
} shape;

static const shape shapes[] = {{2, {6, 3}}, {3, {4, 3, 5}}, {4, {2, 3, 4, 5}}, {5, {2, 3, 2, 3, 2}}, {2, {2, 1}}, {4, {3, 2, 1, 1}}};
#define NSHAPES (int)(sizeof shapes / sizeof *shapes)

/* A tensor of shape s filled with lo + (hi - lo) * U[0, 1), seen through a layout. */
static nn_tensor *make(const shape *s, nn_dtype dt, int layout, double lo, double hi)
{
    int nd = s->nd, perm[5];
    int64_t bshape[5], bstr[5], strides[5], offset = 0;
    for (int d = 0; d < nd; d++) perm[d] = d;
    if (layout == TRANSPOSED) perm[nd - 2] = nd - 1, perm[nd - 1] = nd - 2;
    if (layout == CHANNELS_LAST) { /* memory order N, spatial..., C */
        for (int d = 1; d < nd - 1; d++) perm[d] = d + 1;
        perm[nd - 1] = 1;
    }
    for (int d = 0; d < nd; d++) bshape[d] = s->s[perm[d]] + (layout == NARROWED && d == nd - 1 ? 2 : 0);
    nn_tensor *base = nn_empty(nd, bshape, dt, NN_DEVICE_CPU);
    for (int64_t i = 0; i < nn_numel(base); i++) nn_store_f64((char *)nn_data(base) + i * nn_dtype_size(dt), dt, lo + (hi - lo) * urand());
    nn_contiguous_strides(nd, bshape, bstr);
    for (int d = 0; d < nd; d++) strides[perm[d]] = bstr[d];
    if (layout == NARROWED) offset = 1;
    nn_tensor *v = nn_make_view(base, nd, s->s, strides, offset);
    nn_release(base);
    return v;
}

static nn_tensor *vec(int64_t C, nn_dtype dt, double lo, double hi)
{
    shape s = {1, {C}};
    return make(&s, dt, CONTIG, lo, hi);
}

/* t's elements in row-major order, as doubles (t NULL: n copies of fill) */
static double *values(const nn_tensor *t, int64_t n, double fill)
{
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    int64_t idx[NN_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
        v[i] = t ? nn_get_f64(t, idx) : fill;
        for (int d = t ? t->ndim - 1 : -1; d >= 0; d--) {
            if (++idx[d] < t->shape[d]) break;
            idx[d] = 0;
        }
    }
    return v;
}

static bool close_to(double got, double want, double tol) { return fabs(got - want) <= tol * (1 + fabs(want)); }

static double tol_of(nn_dtype dt) { return dt == NN_F64 ? 1e-12 : dt == NN_F32 ? 2e-6 : dt == NN_F16 ? 2e-3 : 1.6e-2; }

static bool err_has(const char *s) { return strstr(nn_last_error(), s) != NULL; }

/* The reference: y (row-major), and the running stats after the call in rm/rv (in place). */
static void reference(const nn_tensor *x, double *rm, double *rv, const double *w, const double *b, bool training, double momentum,
                      double eps, double *y)
{
    int64_t N = x->shape[0], C = x->shape[1], S = 1, n = nn_numel(x);
    for (int d = 2; d < x->ndim; d++) S *= x->shape[d];
    double *xv = values(x, n, 0);
    for (int64_t c = 0; c < C; c++) {
        double mean = 0, var = 0, m = (double)(N * S);
        for (int64_t k = 0; k < N; k++)
            for (int64_t s = 0; s < S; s++) mean += xv[(k * C + c) * S + s];
        mean /= m;
        for (int64_t k = 0; k < N; k++)
            for (int64_t s = 0; s < S; s++) var += (xv[(k * C + c) * S + s] - mean) * (xv[(k * C + c) * S + s] - mean);
        var /= m;
        if (training && N * S > 0) {
            if (rm) rm[c] = (1 - momentum) * rm[c] + momentum * mean;
            if (rv) rv[c] = (1 - momentum) * rv[c] + momentum * var * m / (m - 1);
        }
        double mu = training ? mean : rm[c], sd = sqrt((training ? var : rv[c]) + eps);
        for (int64_t k = 0; k < N; k++)
            for (int64_t s = 0; s < S; s++) {
                int64_t i = (k * C + c) * S + s;
                y[i] = (xv[i] - mu) / sd * (w ? w[c] : 1) + (b ? b[c] : 0);
            }
    }
    free(xv);
}

static int compare(const char *what, const nn_tensor *t, const double *want, int64_t n, double tol)
{
    double *got = values(t, n, 0);
    int bad = 0;
    for (int64_t i = 0; i < n && !bad; i++)
        if (!close_to(got[i], want[i], tol)) {
            fprintf(stderr, "%s: element %lld: got %.10g, want %.10g\n", what, (long long)i, got[i], want[i]);
            bad = 1;
        }
    free(got);
    return !bad;
}

/* One forward case; stats: bit 0 running_mean, bit 1 running_var; affine: bit 0 weight, bit 1 bias. */
static void forward_case(const shape *s, nn_dtype dt, int layout, bool training, int stats, int affine)
{
    char what[200];
    snprintf(what, sizeof what, "%dD %s %s %s stats %d affine %d", s->nd, nn_dtype_name(dt), layout_name[layout], training ? "train" : "eval",
             stats, affine);
    int64_t C = s->s[1], n = 1;
    for (int d = 0; d < s->nd; d++) n *= s->s[d];
    nn_dtype pdt = dt == NN_F16 || dt == NN_BF16 ? NN_F32 : dt;
    nn_tensor *x = make(s, dt, layout, -1, 3);
    nn_tensor *w = affine & 1 ? vec(C, pdt, 0.5, 1.5) : NULL, *b = affine & 2 ? vec(C, pdt, -1, 1) : NULL;
    nn_tensor *rm = stats & 1 ? vec(C, pdt, -0.5, 0.5) : NULL, *rv = stats & 2 ? vec(C, pdt, 0.5, 2) : NULL;
    double *W = w ? values(w, C, 0) : NULL, *B = b ? values(b, C, 0) : NULL, *RM = values(rm, C, 0), *RV = values(rv, C, 1);
    double *want = malloc(sizeof(double) * (size_t)n);
    reference(x, rm ? RM : NULL, rv ? RV : NULL, W, B, training, 0.1, 1e-5, want);
    nn_tensor *y = nn_batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5);
    CHECK(y, "%s: %s", what, nn_last_error());
    if (y) {
        CHECK(y->dtype == dt && y->ndim == s->nd && !memcmp(y->shape, s->s, sizeof(int64_t) * (size_t)s->nd), "%s: dtype or shape", what);
        CHECK(nn_is_contiguous_as(y, nn_suggest_memory_format(x)), "%s: y's layout", what);
        CHECK(compare(what, y, want, n, tol_of(dt)), "%s: y", what);
        if (rm) CHECK(compare(what, rm, RM, C, tol_of(pdt)), "%s: running_mean", what);
        if (rv) CHECK(compare(what, rv, RV, C, tol_of(pdt)), "%s: running_var", what);
    }
    nn_release(y), nn_release(x), nn_release(w), nn_release(b), nn_release(rm), nn_release(rv);
    free(W), free(B), free(RM), free(RV), free(want);
}

static void test_forward(void)
{
    static const nn_dtype dts[] = {NN_F64, NN_F32, NN_F16, NN_BF16};
    for (int si = 0; si < NSHAPES; si++)
        for (int di = 0; di < 4; di++)
            for (int layout = 0; layout < NLAYOUTS; layout++) {
                if (layout == CHANNELS_LAST && shapes[si].nd < 4) continue;
                for (int training = 0; training < 2; training++)
                    for (int stats = training ? 0 : 3; stats < 4; stats++)
                        for (int affine = 0; affine < 4; affine++) forward_case(&shapes[si], dts[di], layout, training, stats, affine);
            }
}

/* momentum, eps, and running stats that are not contiguous [C] of the stats dtype */
static void test_running_stats(void)
{
    shape s = {3, {5, 4, 3}};
    int64_t C = 4, n = 60;
    nn_tensor *x = make(&s, NN_F32, CONTIG, -2, 2);
    double *want = malloc(sizeof(double) * (size_t)n);
    /* float64 running stats with float32 input: updated through a float32 copy, written back */
    nn_tensor *rm = vec(C, NN_F64, -1, 1), *rv = vec(C, NN_F64, 1, 2);
    double *RM = values(rm, C, 0), *RV = values(rv, C, 0);
    reference(x, RM, RV, NULL, NULL, true, 0.3, 0.01, want);
    nn_tensor *y = nn_batch_norm(x, rm, rv, NULL, NULL, true, 0.3, 0.01);
    CHECK(y && compare("momentum 0.3 eps 0.01", y, want, n, 2e-6), "%s", nn_last_error());
    CHECK(compare("float64 running_mean", rm, RM, C, 1e-6) && compare("float64 running_var", rv, RV, C, 1e-6));
    CHECK(rm->dtype == NN_F64 && rv->dtype == NN_F64, "running stats keep their dtype");
    nn_release(y), nn_release(rm), nn_release(rv), free(RM), free(RV);
    /* strided running stats (every other element of a [2C] tensor), and [1, C] ones */
    shape s2 = {1, {2 * C}};
    nn_tensor *rb = make(&s2, NN_F32, CONTIG, -1, 1);
    rm = nn_slice(rb, 0, 0, 2 * C, 2);
    rv = nn_full(2, (int64_t[]){1, C}, 1.5, NN_F32, NN_DEVICE_CPU);
    RM = values(rm, C, 0), RV = values(rv, C, 0);
    double other = nn_get_f64(rb, (int64_t[]){1});
    reference(x, RM, RV, NULL, NULL, true, 0.1, 1e-5, want);
    y = nn_batch_norm(x, rm, rv, NULL, NULL, true, 0.1, 1e-5);
    CHECK(y && compare("strided running_mean", rm, RM, C, 1e-6) && compare("[1, C] running_var", rv, RV, C, 1e-6), "%s", nn_last_error());
    CHECK(nn_get_f64(rb, (int64_t[]){1}) == other, "the elements between a strided running_mean's are left alone");
    /* momentum 1/k: the cumulative average of the batch means */
    nn_tensor *cm = nn_zeros(1, &C, NN_F64, NN_DEVICE_CPU);
    nn_tensor *xs[3];
    double sum[4] = {0};
    for (int k = 0; k < 3; k++) {
        xs[k] = make(&s, NN_F64, CONTIG, k, k + 2);
        double *bm = values(cm, C, 0), *yk = malloc(sizeof(double) * (size_t)n), zero[4] = {0};
        memcpy(bm, zero, sizeof zero);
        reference(xs[k], bm, NULL, NULL, NULL, true, 1, 1e-5, yk); /* momentum 1: bm = the batch mean */
        for (int c = 0; c < C; c++) sum[c] += bm[c];
        free(bm), free(yk);
        nn_release(nn_batch_norm(xs[k], cm, NULL, NULL, NULL, true, 1.0 / (k + 1), 1e-5));
    }
    for (int c = 0; c < C; c++) sum[c] /= 3;
    CHECK(compare("cumulative moving average", cm, sum, C, 1e-12));
    for (int k = 0; k < 3; k++) nn_release(xs[k]);
    nn_release(cm), nn_release(y), nn_release(rb), nn_release(rm), nn_release(rv), nn_release(x), free(RM), free(RV), free(want);
}

static void test_edges(void)
{
    /* an empty batch: an empty result, running stats untouched, zero gradients for weight and bias */
    nn_tensor *x = nn_zeros(3, (int64_t[]){0, 3, 4}, NN_F32, NN_DEVICE_CPU);
    nn_tensor *rm = nn_full(1, (int64_t[]){3}, 0.25, NN_F32, NN_DEVICE_CPU), *w = nn_ones(1, (int64_t[]){3}, NN_F32, NN_DEVICE_CPU);
    nn_requires_grad_(w, true);
    nn_tensor *y = nn_batch_norm(x, rm, NULL, w, NULL, true, 0.1, 1e-5);
    CHECK(y && nn_numel(y) == 0 && y->ndim == 3, "empty batch: %s", nn_last_error());
    CHECK(nn_get_f64(rm, (int64_t[]){2}) == 0.25, "empty batch leaves running_mean");
    nn_tensor *s = y ? nn_reduce(NN_OP_sum, y, 0, false) : NULL;
    CHECK(s && !nn_backward(s, NULL, false) && w->grad && nn_get_f64(w->grad, (int64_t[]){1}) == 0, "empty batch: zero grad: %s", nn_last_error());
    nn_release(s), nn_release(y), nn_release(x), nn_release(rm), nn_release(w);
    /* zero channels */
    x = nn_zeros(2, (int64_t[]){4, 0}, NN_F64, NN_DEVICE_CPU);
    y = nn_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
    CHECK(y && nn_numel(y) == 0, "no channels: %s", nn_last_error());
    nn_release(y), nn_release(x);
    /* a constant channel: zero variance gives 0 (x - mean = 0), not nan */
    x = nn_full(3, (int64_t[]){3, 2, 2}, 7, NN_F32, NN_DEVICE_CPU);
    y = nn_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
    CHECK(y && nn_get_f64(y, (int64_t[]){1, 1, 1}) == 0, "constant input");
    nn_release(y), nn_release(x);
}

static void expect_error(nn_tensor *x, nn_tensor *rm, nn_tensor *rv, nn_tensor *w, nn_tensor *b, bool training, const char *msg)
{
    nn_tensor *y = nn_batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5);
    CHECK(!y && err_has(msg), "want '%s', got '%s'", msg, y ? "no error" : nn_last_error());
    nn_release(y);
}

static void test_errors(void)
{
    nn_tensor *x = nn_zeros(3, (int64_t[]){4, 3, 2}, NN_F32, NN_DEVICE_CPU), *c3 = nn_ones(1, (int64_t[]){3}, NN_F32, NN_DEVICE_CPU);
    nn_tensor *c4 = nn_ones(1, (int64_t[]){4}, NN_F32, NN_DEVICE_CPU), *x1 = nn_zeros(1, (int64_t[]){3}, NN_F32, NN_DEVICE_CPU);
    nn_tensor *one = nn_zeros(2, (int64_t[]){1, 3}, NN_F32, NN_DEVICE_CPU), *xi = nn_zeros(2, (int64_t[]){4, 3}, NN_I64, NN_DEVICE_CPU);
    expect_error(x1, NULL, NULL, NULL, NULL, true, "batch_norm: Expected 2D or more input (got 1D input)");
    expect_error(x, c4, c3, NULL, NULL, false, "batch_norm: running_mean should contain 3 elements not 4");
    expect_error(x, c3, c4, NULL, NULL, false, "batch_norm: running_var should contain 3 elements not 4");
    expect_error(x, NULL, NULL, c4, NULL, true, "batch_norm: weight should contain 3 elements not 4");
    expect_error(x, NULL, NULL, c3, c4, true, "batch_norm: bias should contain 3 elements not 4");
    expect_error(one, NULL, NULL, NULL, NULL, true,
                 "batch_norm: Expected more than 1 value per channel when training, got input size torch.Size([1, 3])");
    expect_error(x, c3, NULL, NULL, NULL, false, "batch_norm: running_mean and running_var must be defined in evaluation mode");
    expect_error(xi, NULL, NULL, NULL, NULL, true, "batch_norm: input must be a floating point tensor, got int64");
    /* a running stat that is a leaf requiring grad cannot be updated in place */
    nn_tensor *rm = nn_zeros(1, (int64_t[]){3}, NN_F32, NN_DEVICE_CPU);
    nn_requires_grad_(rm, true);
    expect_error(x, rm, NULL, NULL, NULL, true, "a leaf Variable that requires grad is being used in an in-place operation");
    /* eval with one value per channel is fine */
    nn_tensor *y = nn_batch_norm(one, c3, c3, NULL, NULL, false, 0.1, 1e-5);
    CHECK(y != NULL, "eval on [1, 3]: %s", nn_last_error());
    nn_release(y), nn_release(rm), nn_release(x), nn_release(c3), nn_release(c4), nn_release(x1), nn_release(one), nn_release(xi);
}

typedef struct {
    nn_tensor *rm, *rv;
    bool training, has_w, has_b;
    double eps;
} bn_ctx;

static nn_tensor *bn_fn(nn_tensor *const *x, void *vc)
{
    const bn_ctx *c = vc;
    return nn_batch_norm(x[0], c->rm, c->rv, c->has_w ? x[1] : NULL, c->has_b ? x[c->has_w ? 2 : 1] : NULL, c->training, 0.1, c->eps);
}

static void test_autograd(void)
{
    for (int si = 0; si < NSHAPES; si++)
        for (int layout = 0; layout < NLAYOUTS; layout++) {
            if (layout == CHANNELS_LAST && shapes[si].nd < 4) continue;
            for (int training = 0; training < 2; training++)
                for (int affine = 0; affine < 4; affine++)
                    for (int xgrad = 0; xgrad < 2; xgrad++) {
                        if (!xgrad && !affine) continue;
                        const shape *s = &shapes[si];
                        int64_t C = s->s[1];
                        bn_ctx c = {training ? NULL : vec(C, NN_F64, -0.5, 0.5), training ? NULL : vec(C, NN_F64, 0.5, 2), training,
                                    affine & 1, affine & 2, 1e-3};
                        nn_tensor *in[3] = {make(s, NN_F64, layout, -1, 3), NULL, NULL};
                        int n = 1;
                        if (c.has_w) in[n++] = vec(C, NN_F64, 0.5, 1.5);
                        if (c.has_b) in[n++] = vec(C, NN_F64, -1, 1);
                        for (int k = 0; k < n; k++) nn_requires_grad_(in[k], k > 0 || xgrad);
                        CHECK(gradcheck("batch_norm", bn_fn, in, n, &c, 1e-6, 1e-7, 1e-5), "%dD %s %s affine %d x.grad %d", s->nd,
                              layout_name[layout], training ? "train" : "eval", affine, xgrad);
                        for (int k = 0; k < n; k++) nn_release(in[k]);
                        nn_release(c.rm), nn_release(c.rv);
                    }
        }
    /* float32 gradients against the float64 ones */
    shape s = {4, {3, 4, 2, 3}};
    nn_tensor *x64 = make(&s, NN_F64, CHANNELS_LAST, -1, 3), *w64 = vec(4, NN_F64, 0.5, 1.5), *x32 = nn_to_dtype(x64, NN_F32);
    nn_tensor *w32 = nn_to_dtype(w64, NN_F32), *g64 = make(&s, NN_F64, TRANSPOSED, -1, 1), *g32 = nn_to_dtype(g64, NN_F32);
    nn_tensor *xs[2] = {x64, x32}, *ws[2] = {w64, w32}, *gs[2] = {g64, g32};
    for (int k = 0; k < 2; k++) {
        nn_requires_grad_(xs[k], true), nn_requires_grad_(ws[k], true);
        nn_tensor *y = nn_batch_norm(xs[k], NULL, NULL, ws[k], NULL, true, 0.1, 1e-5);
        CHECK(y && !nn_backward(y, gs[k], false), "%s", nn_last_error());
        nn_release(y);
    }
    double *a = values(x64->grad, 72, 0), *b = values(ws[0]->grad, 4, 0);
    CHECK(compare("float32 x.grad", x32->grad, a, 72, 1e-4) && compare("float32 weight.grad", w32->grad, b, 4, 1e-4));
    free(a), free(b);
    nn_release(x64), nn_release(w64), nn_release(x32), nn_release(w32), nn_release(g64), nn_release(g32);

    /* the node: name, inputs; running stats changed after an eval forward are caught at backward */
    nn_tensor *x = nn_randn(2, (int64_t[]){4, 3}, NN_F32, NN_DEVICE_CPU), *rm = nn_zeros(1, (int64_t[]){3}, NN_F32, NN_DEVICE_CPU);
    nn_tensor *rv = nn_ones(1, (int64_t[]){3}, NN_F32, NN_DEVICE_CPU);
    nn_requires_grad_(x, true);
    nn_tensor *y = nn_batch_norm(x, rm, rv, NULL, NULL, false, 0.1, 1e-5);
    CHECK(y && y->grad_fn && !strcmp(y->grad_fn->name, "NativeBatchNormBackward0") && y->grad_fn->nin == 3);
    nn_tensor *y2 = nn_batch_norm(x, rm, rv, NULL, NULL, true, 0.1, 1e-5); /* updates rm and rv in place */
    nn_tensor *s1 = nn_reduce(NN_OP_sum, y, 0, false);
    CHECK(nn_backward(s1, NULL, false) != NN_OK && err_has("modified by an inplace operation"), "%s", nn_last_error());
    nn_tensor *s2 = nn_reduce(NN_OP_sum, y2, 0, false);
    CHECK(!nn_backward(s2, NULL, false), "a training forward keeps no running stat: %s", nn_last_error());
    nn_release(s1), nn_release(s2), nn_release(y), nn_release(y2), nn_release(x), nn_release(rm), nn_release(rv);
}

/* float16 input with float32 weight: computed once in float32-or-better, rounded once, as
 * the float32 result rounded to float16 */
static void test_half(void)
{
    shape s = {4, {4, 3, 5, 5}};
    nn_tensor *x = make(&s, NN_F16, CONTIG, -2, 4), *xf = nn_to_dtype(x, NN_F32), *w = vec(3, NN_F32, 0.5, 1.5), *b = vec(3, NN_F32, -1, 1);
    for (int training = 0; training < 2; training++) {
        nn_tensor *rm = vec(3, NN_F32, -0.5, 0.5), *rv = vec(3, NN_F32, 0.5, 2), *rm2 = nn_clone(rm), *rv2 = nn_clone(rv);
        nn_tensor *y = nn_batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5), *yf = nn_batch_norm(xf, rm2, rv2, w, b, training, 0.1, 1e-5);
        nn_tensor *yr = yf ? nn_to_dtype(yf, NN_F16) : NULL;
        double *a = y ? values(y, 300, 0) : NULL;
        CHECK(y && yr && y->dtype == NN_F16 && compare("float16 rounded once", yr, a, 300, 0), "%s", nn_last_error());
        free(a);
        CHECK(compare("float16 running_var", rv, (a = values(rv2, 3, 0)), 3, 1e-6));
        free(a);
        nn_release(y), nn_release(yf), nn_release(yr), nn_release(rm), nn_release(rv), nn_release(rm2), nn_release(rv2);
    }
    nn_release(x), nn_release(xf), nn_release(w), nn_release(b);
}

int main(void)
{
    test_forward();
    test_running_stats();
    test_edges();
    test_errors();
    test_autograd();
    test_half();
    return CHECK_REPORT();
}
