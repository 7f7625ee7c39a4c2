/* softmax / log_softmax and their backward kernels against plain double loops,
 * on contiguous, transposed, narrowed and expanded inputs in every float dtype
 * and every dim; edge cases (large values, -inf, 0-dim, empty, integer input);
 * autograd through gradcheck. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "layouts.h"
#include "gradcheck.h"
#include "nnfunc.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

static const char *kind_name[] = {"contiguous", "transposed", "narrowed", "expanded"};

/* A tensor of the given shape with values uniform in [lo, hi), laid out as kind says. */
static nn_tensor *make(int nd, const int64_t *shape, nn_dtype dt, int kind, double lo, double hi)
{
    nn_tensor *base = layout_base(kind, nd, shape, dt);
    char *p = nn_data(base);
    for (int64_t i = 0; i < nn_numel(base); i++) {
        double v = lo + (hi - lo) * urand();
        nn_store_f64(p + i * nn_dtype_size(dt), dt, nn_dtype_is_float(dt) ? v : floor(v));
    }
    return layout_view(base, kind, nd, shape);
}

static nn_tensor *from_values(int nd, const int64_t *shape, nn_dtype dt, const double *v)
{
    nn_tensor *t = nn_empty(nd, shape, dt, NN_DEVICE_CPU);
    for (int64_t i = 0; i < nn_numel(t); i++) nn_store_f64((char *)nn_data(t) + i * nn_dtype_size(dt), dt, v[i]);
    return t;
}

static bool next_index(int nd, int64_t *idx, const int64_t *shape)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

/* Row-major copy of t's values. */
static double *values(const nn_tensor *t)
{
    double *v = malloc(sizeof(double) * (size_t)(nn_numel(t) + 1));
    int64_t idx[NN_MAX_DIMS] = {0}, k = 0;
    if (nn_numel(t) > 0) do v[k++] = nn_get_f64(t, idx);
        while (next_index(t->ndim, idx, t->shape));
    return v;
}

static bool err_has(const char *s) { return strstr(nn_last_error(), s) != NULL; }

static bool close_to(double got, double want, double atol, double rtol)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

static double rtol_of(nn_dtype dt) { return dt == NN_F64 ? 1e-12 : dt == NN_F32 ? 2e-6 : dt == NN_F16 ? 2e-3 : 1e-2; }

/* The row-major offset step of dim in a contiguous array of shape. */
static int64_t inner_of(int nd, const int64_t *shape, int dim)
{
    int64_t s = 1;
    for (int d = dim + 1; d < nd; d++) s *= shape[d];
    return s;
}

/* Reference softmax / log_softmax over dim of row-major x (n elements), in double. */
static void ref_softmax(const double *x, double *y, int nd, const int64_t *shape, int dim, bool log_)
{
    int64_t n = nd ? shape[dim] : 1, inner = nd ? inner_of(nd, shape, dim) : 1, total = 1;
    for (int d = 0; d < nd; d++) total *= shape[d];
    for (int64_t base = 0; base < total; base++) {
        if ((base / inner) % n != 0) continue; /* visit each row once, from its first element */
        double m = -INFINITY, s = 0;
        for (int64_t j = 0; j < n; j++) m = fmax(m, x[base + j * inner]);
        for (int64_t j = 0; j < n; j++) s += exp(x[base + j * inner] - m);
        for (int64_t j = 0; j < n; j++) {
            double v = x[base + j * inner] - m;
            y[base + j * inner] = log_ ? v - log(s) : exp(v) / s;
        }
    }
}

static void ref_backward(const double *g, const double *y, double *gi, int nd, const int64_t *shape, int dim, bool log_)
{
    int64_t n = nd ? shape[dim] : 1, inner = nd ? inner_of(nd, shape, dim) : 1, total = 1;
    for (int d = 0; d < nd; d++) total *= shape[d];
    for (int64_t base = 0; base < total; base++) {
        if ((base / inner) % n != 0) continue;
        double s = 0;
        for (int64_t j = 0; j < n; j++) s += log_ ? g[base + j * inner] : g[base + j * inner] * y[base + j * inner];
        for (int64_t j = 0; j < n; j++) {
            int64_t k = base + j * inner;
            gi[k] = log_ ? g[k] - exp(y[k]) * s : (g[k] - s) * y[k];
        }
    }
}

static const struct {
    int nd;
    int64_t shape[4];
} shapes[] = {{1, {7}}, {2, {3, 5}}, {2, {4, 1}}, {3, {2, 3, 4}}, {4, {2, 1, 3, 5}}, {2, {0, 3}}, {2, {3, 0}}, {2, {2, 40}}};

static void test_forward(void)
{
    const nn_dtype dts[] = {NN_F32, NN_F64, NN_F16, NN_BF16};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int di = 0; di < 4; di++)
            for (int kind = 0; kind < NKINDS; kind++)
                for (int lg = 0; lg < 2; lg++) {
                    int nd = shapes[si].nd;
                    const int64_t *shape = shapes[si].shape;
                    nn_dtype dt = dts[di];
                    nn_tensor *x = make(nd, shape, dt, kind, -6, 6);
                    double *xv = values(x), *ref = malloc(sizeof(double) * (size_t)(nn_numel(x) + 1));
                    for (int dim = -nd; dim < nd; dim++) {
                        int d = dim < 0 ? dim + nd : dim;
                        ref_softmax(xv, ref, nd, shape, d, lg);
                        nn_tensor *y = lg ? nn_log_softmax(x, dim, NN_DTYPE_NONE) : nn_softmax(x, dim, NN_DTYPE_NONE);
                        CHECK(y && y->dtype == dt && y->ndim == nd && !memcmp(y->shape, shape, sizeof(int64_t) * nd), "%s %s %s dim %d: %s",
                              lg ? "log_softmax" : "softmax", nn_dtype_name(dt), kind_name[kind], dim, nn_last_error());
                        if (!y) continue;
                        double *yv = values(y);
                        int bad = 0;
                        for (int64_t i = 0; i < nn_numel(y); i++)
                            if (!close_to(yv[i], ref[i], dt == NN_F64 ? 1e-14 : 1e-4 * (dt != NN_F32 ? 10 : 0.01), rtol_of(dt)) && bad++ < 3)
                                CHECK(false, "%s %s %s shape[%d] dim %d element %lld: %.9g, want %.9g", lg ? "log_softmax" : "softmax",
                                      nn_dtype_name(dt), kind_name[kind], (int)si, dim, (long long)i, yv[i], ref[i]);
                        CHECK(bad == 0);
                        if (!lg && nn_numel(y) > 0) { /* every row sums to 1 */
                            double *ones = malloc(sizeof(double) * (size_t)nn_numel(y));
                            for (int64_t i = 0; i < nn_numel(y); i++) ones[i] = 0;
                            int64_t n = shape[d], inner = inner_of(nd, shape, d);
                            for (int64_t i = 0; i < nn_numel(y); i++) ones[i - ((i / inner) % n) * inner] += yv[i];
                            double worst = 0;
                            for (int64_t i = 0; i < nn_numel(y); i++)
                                if ((i / inner) % n == 0) worst = fmax(worst, fabs(ones[i] - 1));
                            CHECK(worst < (dt == NN_F64 ? 1e-14 : dt == NN_F32 ? 1e-6 : 5e-2), "row sums off by %g", worst);
                            free(ones);
                        }
                        free(yv);
                        nn_release(y);
                    }
                    free(xv);
                    free(ref);
                    nn_release(x);
                }
}

static void test_edges(void)
{
    /* large values do not overflow */
    for (int di = 0; di < 2; di++) {
        nn_dtype dt = di ? NN_F64 : NN_F32;
        nn_tensor *x = from_values(1, (int64_t[]){3}, dt, (double[]){1000, 1001, 1002});
        nn_tensor *y = nn_softmax(x, 0, NN_DTYPE_NONE), *ly = nn_log_softmax(x, -1, NN_DTYPE_NONE);
        double s = 1 + exp(-1) + exp(-2);
        CHECK(fabs(nn_get_f64(y, (int64_t[]){2}) - 1 / s) < 1e-6 && fabs(nn_get_f64(y, (int64_t[]){0}) - exp(-2) / s) < 1e-6);
        CHECK(fabs(nn_get_f64(ly, (int64_t[]){0}) - (-2 - log(s))) < 1e-5, "%g", nn_get_f64(ly, (int64_t[]){0}));
        nn_release(x), nn_release(y), nn_release(ly);
        /* -inf entries: probability 0, log-probability -inf; a row of only -inf is nan (as PyTorch) */
        x = from_values(2, (int64_t[]){2, 3}, dt, (double[]){-INFINITY, 0, 1, -INFINITY, -INFINITY, -INFINITY});
        y = nn_softmax(x, 1, NN_DTYPE_NONE), ly = nn_log_softmax(x, 1, NN_DTYPE_NONE);
        CHECK(nn_get_f64(y, (int64_t[]){0, 0}) == 0 && fabs(nn_get_f64(y, (int64_t[]){0, 2}) - 1 / (1 + exp(-1))) < 1e-6);
        CHECK(isinf(nn_get_f64(ly, (int64_t[]){0, 0})) && nn_get_f64(ly, (int64_t[]){0, 0}) < 0);
        CHECK(fabs(nn_get_f64(ly, (int64_t[]){0, 1}) - (-1 - log(1 + exp(-1)))) < 1e-6);
        CHECK(isnan(nn_get_f64(y, (int64_t[]){1, 0})) && isnan(nn_get_f64(ly, (int64_t[]){1, 2})));
        nn_release(x), nn_release(y), nn_release(ly);
    }
    /* 0-dim input: dims 0 and -1 only */
    nn_tensor *s = nn_scalar_f64(3.5);
    nn_tensor *y = nn_softmax(s, 0, NN_DTYPE_NONE), *ly = nn_log_softmax(s, -1, NN_DTYPE_NONE);
    CHECK(y && y->ndim == 0 && nn_get_f64(y, NULL) == 1.0, "%s", nn_last_error());
    CHECK(ly && ly->ndim == 0 && nn_get_f64(ly, NULL) == 0.0, "%s", nn_last_error());
    nn_release(y), nn_release(ly);
    CHECK(!nn_softmax(s, 1, NN_DTYPE_NONE) && err_has("dimension out of range (expected to be in range of [-1, 0], but got 1)"), "%s",
          nn_last_error());
    nn_release(s);
    /* dim out of range */
    nn_tensor *x = make(2, (int64_t[]){2, 3}, NN_F32, CONTIG, -1, 1);
    CHECK(!nn_log_softmax(x, -3, NN_DTYPE_NONE) && err_has("log_softmax") && err_has("[-2, 1], but got -3"), "%s", nn_last_error());
    nn_release(x);
    /* integer input: PyTorch's error, unless a float dtype is given */
    x = make(2, (int64_t[]){3, 4}, NN_I64, CONTIG, -5, 5);
    CHECK(!nn_softmax(x, 1, NN_DTYPE_NONE) && err_has("\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"), "%s", nn_last_error());
    CHECK(!nn_softmax(x, 0, NN_DTYPE_NONE) && err_has("\"softmax_kernel_impl\" not implemented for 'Long'"), "%s", nn_last_error());
    CHECK(!nn_log_softmax(x, 1, NN_I32) && err_has("\"log_softmax_lastdim_kernel_impl\" not implemented for 'Int'"), "%s", nn_last_error());
    nn_tensor *b = make(1, (int64_t[]){3}, NN_BOOL, CONTIG, 0, 2);
    CHECK(!nn_softmax(b, 0, NN_DTYPE_NONE) && err_has("not implemented for 'Bool'"), "%s", nn_last_error());
    nn_release(b);
    double *xv = values(x), ref[12];
    for (int lg = 0; lg < 2; lg++) {
        y = lg ? nn_log_softmax(x, 0, NN_F64) : nn_softmax(x, 0, NN_F64);
        ref_softmax(xv, ref, 2, x->shape, 0, lg);
        CHECK(y && y->dtype == NN_F64, "%s", nn_last_error());
        double *yv = y ? values(y) : NULL;
        for (int i = 0; yv && i < 12; i++) CHECK(close_to(yv[i], ref[i], 1e-14, 1e-12), "int input with dtype: %g vs %g", yv[i], ref[i]);
        free(yv);
        nn_release(y);
    }
    free(xv);
    nn_release(x);
    /* a dtype: half input computed and returned as float32 */
    x = make(2, (int64_t[]){3, 4}, NN_F16, TRANSPOSED, -3, 3);
    xv = values(x);
    y = nn_softmax(x, 1, NN_F32);
    ref_softmax(xv, ref, 2, x->shape, 1, false);
    CHECK(y && y->dtype == NN_F32, "%s", nn_last_error());
    for (int i = 0; y && i < 12; i++) CHECK(close_to(nn_get_f64(y, (int64_t[]){i / 4, i % 4}), ref[i], 1e-7, 1e-6));
    nn_release(y);
    free(xv);
    nn_release(x);
}

static void test_backward_kernels(void)
{
    const nn_dtype dts[] = {NN_F32, NN_F64, NN_F16, NN_BF16};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int di = 0; di < 4; di++)
            for (int kind = 0; kind < NKINDS; kind++)
                for (int lg = 0; lg < 2; lg++) {
                    int nd = shapes[si].nd;
                    const int64_t *shape = shapes[si].shape;
                    nn_dtype dt = dts[di];
                    for (int dim = 0; dim < nd; dim++) {
                        nn_tensor *x = make(nd, shape, dt, CONTIG, -3, 3);
                        nn_tensor *y = lg ? nn_log_softmax(x, dim, NN_DTYPE_NONE) : nn_softmax(x, dim, NN_DTYPE_NONE);
                        nn_tensor *g = make(nd, shape, dt, kind, -1, 1);
                        double *gv = values(g), *yv = values(y), *ref = malloc(sizeof(double) * (size_t)(nn_numel(x) + 1));
                        ref_backward(gv, yv, ref, nd, shape, dim, lg);
                        nn_tensor *gi = lg ? nn_log_softmax_backward(g, y, dim - nd) : nn_softmax_backward(g, y, dim);
                        CHECK(gi && gi->dtype == dt, "%s", nn_last_error());
                        double *giv = gi ? values(gi) : NULL;
                        int bad = 0;
                        for (int64_t i = 0; giv && i < nn_numel(gi); i++)
                            if (!close_to(giv[i], ref[i], dt == NN_F64 ? 1e-14 : dt == NN_F32 ? 1e-6 : 2e-2, rtol_of(dt) * 4) && bad++ < 3)
                                CHECK(false, "%s_backward %s grad %s dim %d element %lld: %.9g, want %.9g", lg ? "log_softmax" : "softmax",
                                      nn_dtype_name(dt), kind_name[kind], dim, (long long)i, giv[i], ref[i]);
                        CHECK(bad == 0);
                        free(gv), free(yv), free(ref), free(giv);
                        nn_release(x), nn_release(y), nn_release(g), nn_release(gi);
                    }
                }
    nn_tensor *g = make(2, (int64_t[]){3, 4}, NN_F32, CONTIG, -1, 1), *y = make(2, (int64_t[]){4, 3}, NN_F32, CONTIG, 0, 1);
    CHECK(!nn_softmax_backward(g, y, 1) && err_has("grad_output [3, 4] and output [4, 3] must have the same shape"), "%s", nn_last_error());
    nn_release(g), nn_release(y);
}

typedef struct {
    int dim;
    bool log_;
} sm_ctx;

static nn_tensor *sm_fn(nn_tensor *const *x, void *vc)
{
    const sm_ctx *c = vc;
    return c->log_ ? nn_log_softmax(x[0], c->dim, NN_DTYPE_NONE) : nn_softmax(x[0], c->dim, NN_DTYPE_NONE);
}

/* softmax then log_softmax: a gradient that flows through two nodes */
static nn_tensor *chain_fn(nn_tensor *const *x, void *vc)
{
    (void)vc;
    nn_tensor *a = nn_softmax(x[0], 0, NN_DTYPE_NONE), *b = a ? nn_log_softmax(a, 1, NN_DTYPE_NONE) : NULL;
    nn_release(a);
    return b;
}

static void test_autograd(void)
{
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int kind = 0; kind < 3; kind++) /* no expanded leaves: gradcheck perturbs storage */
            for (int lg = 0; lg < 2; lg++) {
                int nd = shapes[si].nd;
                nn_tensor *x = make(nd, shapes[si].shape, NN_F64, kind, -3, 3);
                nn_requires_grad_(x, true);
                for (int dim = -nd; dim < nd; dim++) {
                    sm_ctx c = {dim, lg};
                    CHECK(gradcheck(lg ? "log_softmax" : "softmax", sm_fn, &x, 1, &c, 1e-6, 1e-7, 1e-5), "shape %d %s dim %d", (int)si,
                          kind_name[kind], dim);
                }
                nn_release(x);
            }
    nn_tensor *x = make(2, (int64_t[]){3, 4}, NN_F64, TRANSPOSED, -2, 2);
    nn_requires_grad_(x, true);
    CHECK(gradcheck("softmax -> log_softmax", chain_fn, &x, 1, NULL, 1e-6, 1e-7, 1e-5));
    /* 0-dim */
    nn_tensor *s = make(0, NULL, NN_F64, CONTIG, -1, 1);
    nn_requires_grad_(s, true);
    sm_ctx c0 = {0, false}, c1 = {-1, true};
    CHECK(gradcheck("softmax 0-dim", sm_fn, &s, 1, &c0, 1e-6, 1e-7, 1e-5) && gradcheck("log_softmax 0-dim", sm_fn, &s, 1, &c1, 1e-6, 1e-7, 1e-5));
    nn_release(s);

    /* node names, saved output and grad mode */
    nn_tensor *y = nn_softmax(x, 1, NN_DTYPE_NONE), *ly = nn_log_softmax(x, 1, NN_DTYPE_NONE);
    CHECK(y->requires_grad && y->grad_fn && !strcmp(y->grad_fn->name, "SoftmaxBackward0"));
    CHECK(ly->grad_fn && !strcmp(ly->grad_fn->name, "LogSoftmaxBackward0"));
    nn_tensor *one = nn_scalar_f64(1);
    CHECK(nn_binary_(NN_OP_add, y, one) == NN_OK, "%s", nn_last_error()); /* changes the saved output */
    nn_tensor *w = nn_ones(2, y->shape, NN_F64, NN_DEVICE_CPU);
    CHECK(nn_backward(y, w, false) != NN_OK && err_has("modified by an inplace operation"), "%s", nn_last_error());
    nn_release(one), nn_release(y), nn_release(ly);
    nn_set_grad_enabled(false);
    y = nn_softmax(x, 1, NN_DTYPE_NONE);
    CHECK(!y->requires_grad && !y->grad_fn);
    nn_release(y);
    nn_set_grad_enabled(true);

    /* with a dtype, the gradient comes back in the input's dtype */
    nn_tensor *xf = make(2, (int64_t[]){3, 4}, NN_F32, CONTIG, -2, 2);
    nn_requires_grad_(xf, true);
    y = nn_log_softmax(xf, 1, NN_F64);
    nn_tensor *g = make(2, (int64_t[]){3, 4}, NN_F64, CONTIG, -1, 1);
    CHECK(nn_backward(y, g, false) == NN_OK, "%s", nn_last_error());
    CHECK(xf->grad && xf->grad->dtype == NN_F32);
    double *gv = values(g), *yv = values(y), ref[12];
    ref_backward(gv, yv, ref, 2, y->shape, 1, true);
    for (int i = 0; xf->grad && i < 12; i++) CHECK(close_to(nn_get_f64(xf->grad, (int64_t[]){i / 4, i % 4}), ref[i], 1e-6, 1e-5));
    free(gv), free(yv);
    nn_release(y), nn_release(g), nn_release(xf), nn_release(w), nn_release(x);
}

int main(void)
{
    test_forward();
    test_edges();
    test_backward_kernels();
    test_autograd();
    return CHECK_REPORT();
}
