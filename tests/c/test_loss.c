/* nll_loss against a plain loop: [C], [N, C] and [N, C, d...] inputs, contiguous
 * and not, every reduction, class weights, ignore_index, empty batches, the
 * error messages; cross-entropy as nll_loss(log_softmax(x)) against the direct
 * formula; gradients through gradcheck. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "gradcheck.h"
#include "nnfunc.h"

static uint64_t rng_state = 0x853c49e6748fea9bull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

enum { CONTIG, TRANSPOSED, NARROWED, NKINDS };
static const char *kind_name[] = {"contiguous", "transposed", "narrowed"};

static nn_tensor *make(int nd, const int64_t *shape, nn_dtype dt, int kind, double lo, double hi)
{
    int64_t bshape[NN_MAX_DIMS] = {0}, bstr[NN_MAX_DIMS] = {0}, strides[NN_MAX_DIMS] = {0}, offset = 0;
    for (int d = 0; d < nd; d++) bshape[d] = kind == TRANSPOSED ? shape[nd - 1 - d] : kind == NARROWED ? shape[d] + 2 : shape[d];
    nn_tensor *base = nn_empty(nd, bshape, dt, NN_DEVICE_CPU);
    char *p = nn_data(base);
    for (int64_t i = 0; i < nn_numel(base); i++) {
        double v = lo + (hi - lo) * urand();
        nn_store_f64(p + i * nn_dtype_size(dt), dt, nn_dtype_is_float(dt) ? v : floor(v));
    }
    nn_contiguous_strides(nd, bshape, bstr);
    for (int d = 0; d < nd; d++) {
        strides[d] = kind == TRANSPOSED ? bstr[nd - 1 - d] : bstr[d];
        if (kind == NARROWED) offset += bstr[d];
    }
    nn_tensor *v = nn_make_view(base, nd, shape, strides, offset);
    nn_release(base);
    return v;
}

static bool next_index(int nd, int64_t *idx, const int64_t *shape)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

static bool err_has(const char *s) { return strstr(nn_last_error(), s) != NULL; }

static bool close_to(double got, double want, double tol)
{
    if (isnan(want)) return isnan(got);
    return fabs(got - want) <= tol * (1 + fabs(want));
}

/* Targets of shape tshape in [0, C), about one in five set to ignore. */
static nn_tensor *make_target(int nd, const int64_t *tshape, int64_t C, int64_t ignore, bool strided)
{
    int64_t bshape[NN_MAX_DIMS];
    for (int d = 0; d < nd; d++) bshape[d] = tshape[d];
    if (strided && nd > 0) bshape[nd - 1] *= 2;
    nn_tensor *base = nn_empty(nd, bshape, NN_I64, NN_DEVICE_CPU);
    int64_t *p = nn_data(base);
    for (int64_t i = 0; i < nn_numel(base); i++) p[i] = urand() < 0.2 ? ignore : (int64_t)(urand() * (double)C);
    if (nn_numel(base) > 0 && C > 2) p[strided && nd > 0] = 2; /* the first target always counts, so a mean is finite */
    if (!strided || nd == 0) return base;
    int64_t st[NN_MAX_DIMS];
    nn_contiguous_strides(nd, bshape, st);
    st[nd - 1] = 2;
    nn_tensor *v = nn_make_view(base, nd, tshape, st, 1);
    nn_release(base);
    return v;
}

/* The input index of (target position pos, class c). */
static void input_index(int xnd, const int64_t *pos, int64_t c, int64_t *xi)
{
    if (xnd == 1) {
        xi[0] = c;
        return;
    }
    xi[0] = pos[0];
    xi[1] = c;
    for (int d = 2; d < xnd; d++) xi[d] = pos[d - 1];
}

/* Reference: per-position losses into per (row-major over target), returns the reduced value. */
static double ref_nll(const nn_tensor *x, const nn_tensor *t, const nn_tensor *w, int red, int64_t ignore, double *per)
{
    double sum = 0, wsum = 0;
    int64_t pos[NN_MAX_DIMS] = {0}, xi[NN_MAX_DIMS], k = 0;
    if (nn_numel(t) > 0) do {
            int64_t c = nn_get_i64(t, pos);
            double v = 0, wt = 0;
            if (c != ignore) {
                wt = w ? nn_get_f64(w, (int64_t[]){c}) : 1;
                input_index(x->ndim, pos, c, xi);
                v = -wt * nn_get_f64(x, xi);
            }
            per[k++] = v;
            sum += v;
            wsum += wt;
        } while (next_index(t->ndim, pos, t->shape));
    return red == NN_REDUCTION_MEAN ? sum / wsum : sum;
}

static const struct {
    int nd;
    int64_t shape[5];
} shapes[] = {{1, {5}}, {2, {6, 4}}, {2, {1, 3}}, {3, {2, 4, 3}}, {4, {2, 3, 2, 3}}, {5, {2, 3, 2, 1, 2}}, {2, {0, 4}}, {3, {2, 3, 0}}};

static void tshape_of(int nd, const int64_t *shape, int *tnd, int64_t *tshape)
{
    *tnd = nd - 1;
    if (nd == 1) return;
    tshape[0] = shape[0];
    for (int d = 2; d < nd; d++) tshape[d - 1] = shape[d];
}

static void test_forward(void)
{
    const nn_dtype dts[] = {NN_F32, NN_F64, NN_F16, NN_BF16};
    const int64_t ignores[] = {-100, 1};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int di = 0; di < 4; di++)
            for (int kind = 0; kind < NKINDS; kind++)
                for (int wi = 0; wi < 2; wi++)
                    for (int ii = 0; ii < 2; ii++)
                        for (int red = 0; red < 3; red++) {
                            int nd = shapes[si].nd, tnd;
                            const int64_t *shape = shapes[si].shape;
                            int64_t tshape[NN_MAX_DIMS], C = nd == 1 ? shape[0] : shape[1];
                            tshape_of(nd, shape, &tnd, tshape);
                            nn_dtype dt = dts[di];
                            nn_tensor *x = make(nd, shape, dt, kind, -4, 0);
                            nn_tensor *t = make_target(tnd, tshape, C, ignores[ii], kind == NARROWED);
                            nn_tensor *w = wi ? make(1, &C, dt, kind == CONTIG ? CONTIG : NARROWED, 0.1, 2) : NULL;
                            double *per = malloc(sizeof(double) * (size_t)(nn_numel(t) + 1));
                            double want = ref_nll(x, t, w, red, ignores[ii], per);
                            nn_tensor *out = nn_nll_loss(x, t, w, red, ignores[ii]);
                            char what[160];
                            snprintf(what, sizeof what, "nll_loss shape %d %s %s weight %d ignore %lld reduction %d", (int)si,
                                     nn_dtype_name(dt), kind_name[kind], wi, (long long)ignores[ii], red);
                            CHECK(out && out->dtype == dt, "%s: %s", what, nn_last_error());
                            double tol = dt == NN_F64 ? 1e-13 : dt == NN_F32 ? 1e-6 : dt == NN_F16 ? 1e-3 : 8e-3;
                            if (out && red == NN_REDUCTION_NONE) {
                                CHECK(out->ndim == tnd && !memcmp(out->shape, tshape, sizeof(int64_t) * tnd), "%s: shape", what);
                                int64_t pos[NN_MAX_DIMS] = {0}, k = 0;
                                int bad = 0;
                                if (nn_numel(out) > 0) do {
                                        double got = nn_get_f64(out, pos);
                                        if (!close_to(got, per[k], tol) && bad++ < 3) CHECK(false, "%s: element %lld: %.9g, want %.9g", what, (long long)k, got, per[k]);
                                        k++;
                                    } while (next_index(out->ndim, pos, out->shape));
                                CHECK(bad == 0);
                            } else if (out) {
                                CHECK(out->ndim == 0, "%s: ndim %d", what, out->ndim);
                                double got = nn_get_f64(out, NULL);
                                CHECK(close_to(got, want, tol), "%s: %.9g, want %.9g", what, got, want);
                            }
                            free(per);
                            nn_release(out), nn_release(x), nn_release(t), nn_release(w);
                        }
}

static void test_edges(void)
{
    /* every target ignored: mean is nan (0 / 0) as PyTorch, sum is 0; an empty batch too */
    nn_tensor *x = make(2, (int64_t[]){3, 4}, NN_F32, CONTIG, -2, 0);
    nn_tensor *t = make_target(1, (int64_t[]){3}, 4, 7, false);
    for (int i = 0; i < 3; i++) ((int64_t *)nn_data(t))[i] = 7;
    nn_tensor *m = nn_nll_loss(x, t, NULL, NN_REDUCTION_MEAN, 7), *s = nn_nll_loss(x, t, NULL, NN_REDUCTION_SUM, 7);
    CHECK(m && isnan(nn_get_f64(m, NULL)) && s && nn_get_f64(s, NULL) == 0, "%s", nn_last_error());
    nn_release(m), nn_release(s), nn_release(t), nn_release(x);
    x = make(2, (int64_t[]){0, 4}, NN_F32, CONTIG, -2, 0);
    t = make_target(1, (int64_t[]){0}, 4, -100, false);
    m = nn_nll_loss(x, t, NULL, NN_REDUCTION_MEAN, -100);
    CHECK(m && isnan(nn_get_f64(m, NULL)), "%s", nn_last_error());
    nn_release(m), nn_release(t), nn_release(x);
    /* [C] input, 0-dim target, reduction none: a 0-dim loss */
    x = make(1, (int64_t[]){5}, NN_F64, CONTIG, -2, 0);
    t = nn_scalar_i64(3);
    nn_tensor *l = nn_nll_loss(x, t, NULL, NN_REDUCTION_NONE, -100);
    CHECK(l && l->ndim == 0 && nn_get_f64(l, NULL) == -nn_get_f64(x, (int64_t[]){3}), "%s", nn_last_error());
    nn_release(l), nn_release(t), nn_release(x);
}

static void expect_error(nn_tensor *x, nn_tensor *t, nn_tensor *w, int red, const char *msg)
{
    nn_tensor *out = nn_nll_loss(x, t, w, red, -100);
    CHECK(!out && err_has(msg), "want \"%s\", got \"%s\"", msg, out ? "no error" : nn_last_error());
    nn_release(out);
}

static void test_errors(void)
{
    nn_tensor *x = make(2, (int64_t[]){3, 10}, NN_F32, CONTIG, -2, 0);
    nn_tensor *t = make_target(1, (int64_t[]){3}, 10, -100, false);
    int64_t *tp = nn_data(t);
    tp[0] = 1, tp[1] = 12, tp[2] = 0;
    expect_error(x, t, NULL, NN_REDUCTION_MEAN, "Target 12 is out of bounds.");
    tp[1] = -5;
    expect_error(x, t, NULL, NN_REDUCTION_NONE, "Target -5 is out of bounds.");
    tp[1] = 10;
    expect_error(x, t, NULL, NN_REDUCTION_SUM, "Target 10 is out of bounds.");
    tp[1] = 2;
    nn_tensor *tf = make(1, (int64_t[]){3}, NN_F32, CONTIG, 0, 3);
    expect_error(x, tf, NULL, NN_REDUCTION_MEAN, "expected scalar type Long but found Float");
    nn_tensor *ti = make(1, (int64_t[]){3}, NN_I32, CONTIG, 0, 3);
    expect_error(x, ti, NULL, NN_REDUCTION_MEAN, "expected scalar type Long but found Int");
    nn_tensor *t4 = make_target(1, (int64_t[]){4}, 10, -100, false);
    expect_error(x, t4, NULL, NN_REDUCTION_MEAN, "Expected input batch_size (3) to match target batch_size (4).");
    nn_tensor *t2 = make_target(2, (int64_t[]){3, 2}, 10, -100, false);
    expect_error(x, t2, NULL, NN_REDUCTION_MEAN, "0D or 1D target tensor expected, multi-target not supported");
    nn_tensor *w = make(1, (int64_t[]){9}, NN_F32, CONTIG, 0, 1);
    expect_error(x, t, w, NN_REDUCTION_MEAN, "weight tensor should be defined either for all 10 classes or no classes but got weight tensor of shape: [9]");
    nn_tensor *wd = make(1, (int64_t[]){10}, NN_F64, CONTIG, 0, 1);
    expect_error(x, t, wd, NN_REDUCTION_MEAN, "expected scalar type Float but found Double");
    expect_error(x, t, NULL, 3, "3 is not a valid value for reduction");
    nn_tensor *wg = make(1, (int64_t[]){10}, NN_F32, CONTIG, 0, 1);
    nn_requires_grad_(wg, true);
    expect_error(x, t, wg, NN_REDUCTION_MEAN, "not differentiable with respect to argument 'weight'");
    nn_set_grad_enabled(false);
    nn_tensor *l = nn_nll_loss(x, t, wg, NN_REDUCTION_MEAN, -100);
    CHECK(l, "weight requiring grad under no_grad: %s", nn_last_error());
    nn_release(l);
    nn_set_grad_enabled(true);
    nn_tensor *xi = make(2, (int64_t[]){3, 10}, NN_I64, CONTIG, 0, 3);
    expect_error(xi, t, NULL, NN_REDUCTION_MEAN, "\"nll_loss_out_frame\" not implemented for 'Long'");
    nn_tensor *x0 = nn_scalar_f64(1), *t0 = nn_scalar_i64(0);
    expect_error(x0, t0, NULL, NN_REDUCTION_MEAN, "Expected 1 or more dimensions (got 0)");
    nn_tensor *x1 = make(1, (int64_t[]){5}, NN_F32, CONTIG, -1, 0);
    expect_error(x1, t, NULL, NN_REDUCTION_MEAN, "size mismatch (got input: [5], target: [3])");
    expect_error(x, t0, NULL, NN_REDUCTION_MEAN, "size mismatch (got input: [3, 10], target: [])");
    nn_tensor *xk = make(4, (int64_t[]){2, 3, 4, 5}, NN_F32, CONTIG, -1, 0);
    nn_tensor *tk = make_target(3, (int64_t[]){2, 4, 4}, 3, -100, false);
    expect_error(xk, tk, NULL, NN_REDUCTION_MEAN, "Expected target size [2, 4, 5], got [2, 4, 4]");
    nn_tensor *tb = make_target(3, (int64_t[]){3, 4, 5}, 3, -100, false);
    expect_error(xk, tb, NULL, NN_REDUCTION_MEAN, "Expected input batch_size (2) to match target batch_size (3).");
    nn_tensor *ts[] = {x, t, tf, ti, t4, t2, w, wd, wg, xi, x0, t0, x1, xk, tk, tb};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) nn_release(ts[i]);
}

/* cross-entropy, as nll_loss(log_softmax(x, 1), t, w) and fused (nn_cross_entropy), against
 * mean/sum of w[t] * (logsumexp(x) - x[t]) */
static void test_cross_entropy(void)
{
    const struct {
        int nd;
        int64_t shape[4];
    } cs[] = {{2, {8, 5}}, {3, {3, 4, 6}}, {4, {2, 3, 4, 2}}};
    for (size_t si = 0; si < 3; si++)
        for (int kind = 0; kind < NKINDS; kind++)
            for (int wi = 0; wi < 2; wi++)
                for (int v = 0; v < 6; v++) {
                    int red = v % 3;
                    bool fused = v >= 3;
                    int nd = cs[si].nd, tnd;
                    const int64_t *shape = cs[si].shape;
                    int64_t tshape[NN_MAX_DIMS], C = shape[1];
                    tshape_of(nd, shape, &tnd, tshape);
                    nn_tensor *x = make(nd, shape, NN_F32, kind, -30, 30); /* wide range: exercises the max shift */
                    nn_tensor *t = make_target(tnd, tshape, C, -100, false);
                    nn_tensor *w = wi ? make(1, &C, NN_F32, CONTIG, 0.5, 2) : NULL;
                    nn_tensor *lp = fused ? NULL : nn_log_softmax(x, 1, NN_DTYPE_NONE);
                    nn_tensor *l = fused ? nn_cross_entropy(x, t, w, red, -100) : nn_nll_loss(lp, t, w, red, -100);
                    CHECK(l, "%s", nn_last_error());
                    double sum = 0, wsum = 0;
                    int64_t pos[NN_MAX_DIMS] = {0}, xi[NN_MAX_DIMS];
                    int bad = 0;
                    do {
                        int64_t c = nn_get_i64(t, pos);
                        if (c == -100) continue;
                        double m = -INFINITY, s = 0;
                        for (int64_t k = 0; k < C; k++) input_index(nd, pos, k, xi), m = fmax(m, nn_get_f64(x, xi));
                        for (int64_t k = 0; k < C; k++) input_index(nd, pos, k, xi), s += exp(nn_get_f64(x, xi) - m);
                        input_index(nd, pos, c, xi);
                        double wt = w ? nn_get_f64(w, &c) : 1, v = wt * (m + log(s) - nn_get_f64(x, xi));
                        if (red == NN_REDUCTION_NONE && l && !close_to(nn_get_f64(l, pos), v, 1e-5) && bad++ < 3)
                            CHECK(false, "cross_entropy none: %.9g, want %.9g", nn_get_f64(l, pos), v);
                        sum += v;
                        wsum += wt;
                    } while (next_index(tnd, pos, tshape));
                    CHECK(bad == 0);
                    if (l && red != NN_REDUCTION_NONE) {
                        double want = red == NN_REDUCTION_MEAN ? sum / wsum : sum;
                        CHECK(close_to(nn_get_f64(l, NULL), want, 1e-5), "cross_entropy (fused %d) shape %d reduction %d: %.9g, want %.9g", fused,
                              (int)si, red, nn_get_f64(l, NULL), want);
                    }
                    nn_release(l), nn_release(lp), nn_release(x), nn_release(t), nn_release(w);
                }
}

typedef struct {
    nn_tensor *target, *weight;
    int red;
    int64_t ignore;
    int ce; /* cross-entropy: 1 log_softmax over the class dim first, 2 fused (nn_cross_entropy) */
} nll_ctx;

static nn_tensor *nll_fn(nn_tensor *const *x, void *vc)
{
    const nll_ctx *c = vc;
    if (!c->ce) return nn_nll_loss(x[0], c->target, c->weight, c->red, c->ignore);
    if (c->ce == 2) return nn_cross_entropy(x[0], c->target, c->weight, c->red, c->ignore);
    nn_tensor *lp = nn_log_softmax(x[0], x[0]->ndim == 1 ? 0 : 1, NN_DTYPE_NONE);
    nn_tensor *l = lp ? nn_nll_loss(lp, c->target, c->weight, c->red, c->ignore) : NULL;
    nn_release(lp);
    return l;
}

static void test_autograd(void)
{
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int kind = 0; kind < NKINDS; kind++)
            for (int wi = 0; wi < 2; wi++)
                for (int ii = 0; ii < 2; ii++)
                    for (int red = 0; red < 3; red++)
                        for (int ce = 0; ce < 3; ce++) {
                            int nd = shapes[si].nd, tnd;
                            const int64_t *shape = shapes[si].shape;
                            int64_t tshape[NN_MAX_DIMS], C = nd == 1 ? shape[0] : shape[1], ignore = ii ? 1 : -100;
                            tshape_of(nd, shape, &tnd, tshape);
                            nn_tensor *x = make(nd, shape, NN_F64, kind, -3, 0);
                            nn_requires_grad_(x, true);
                            nll_ctx c = {make_target(tnd, tshape, C, ignore, kind == NARROWED), wi ? make(1, &C, NN_F64, NARROWED, 0.1, 2) : NULL, red,
                                         ignore, ce};
                            CHECK(gradcheck(ce == 2 ? "cross_entropy (fused)" : ce ? "cross_entropy" : "nll_loss", nll_fn, &x, 1, &c, 1e-6, 1e-7, 1e-5),
                                  "shape %d %s weight %d ignore %lld reduction %d", (int)si, kind_name[kind], wi, (long long)ignore, red);
                            nn_release(c.target), nn_release(c.weight), nn_release(x);
                        }

    /* node name; weights and targets get no gradient edge; all-ignored mean gives zero gradient */
    nn_tensor *x = make(2, (int64_t[]){3, 4}, NN_F32, CONTIG, -2, 0);
    nn_requires_grad_(x, true);
    nn_tensor *t = make_target(1, (int64_t[]){3}, 4, -100, false);
    for (int i = 0; i < 3; i++) ((int64_t *)nn_data(t))[i] = -100;
    nn_tensor *l = nn_nll_loss(x, t, NULL, NN_REDUCTION_MEAN, -100);
    CHECK(l && l->grad_fn && !strcmp(l->grad_fn->name, "NllLossBackward0") && l->grad_fn->nin == 1);
    CHECK(l && nn_backward(l, NULL, false) == NN_OK, "%s", nn_last_error());
    bool zero = x->grad != NULL;
    for (int i = 0; x->grad && i < 12; i++) zero &= nn_get_f64(x->grad, (int64_t[]){i / 4, i % 4}) == 0;
    CHECK(zero, "all-ignored gradient is not zero");
    nn_release(l);
    /* a changed target is caught at backward */
    ((int64_t *)nn_data(t))[0] = 1;
    l = nn_nll_loss(x, t, NULL, NN_REDUCTION_SUM, -100);
    nn_bump_version(t);
    CHECK(nn_backward(l, NULL, false) != NN_OK && err_has("modified by an inplace operation"), "%s", nn_last_error());
    nn_release(l), nn_release(t), nn_release(x);
}

int main(void)
{
    test_forward();
    test_edges();
    test_errors();
    test_cross_entropy();
    test_autograd();
    return CHECK_REPORT();
}
