/* max_pool2d, avg_pool2d, adaptive_avg_pool2d and adaptive_max_pool2d: values,
 * indices and gradients against direct loops written here, on random contiguous,
 * narrowed and channels-last inputs in float32/float64 (float16/bfloat16 forward),
 * batch 1 and 3 and unbatched; output sizes with ceil_mode; count_include_pad and
 * divisor_override; NaN propagation; float64 gradcheck; PyTorch's error messages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "conv.h"
#include "gradcheck.h"

static uint64_t rng_state = 0x853c49e6748fea9bull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

enum { CONTIG, NARROWED, PERMUTED, NKINDS };
static const char *kind_name[] = {"contiguous", "narrowed", "channels-last"};

/* A random tensor (values in [-2, 2)): contiguous, a window of a larger base, or stored with
 * dims in the order 0, 2, ..., 1 (channels last). */
static nn_tensor *make(int nd, const int64_t *shape, nn_dtype dt, int kind)
{
    int64_t bshape[NN_MAX_DIMS], bstr[NN_MAX_DIMS], strides[NN_MAX_DIMS], offset = 0;
    int order[NN_MAX_DIMS];
    for (int d = 0; d < nd; d++) order[d] = d;
    if (kind == PERMUTED && nd >= 3) {
        for (int d = 1; d < nd - 1; d++) order[d] = d + 1;
        order[nd - 1] = 1;
    }
    for (int d = 0; d < nd; d++) bshape[d] = shape[order[d]] + (kind == NARROWED ? 2 : 0);
    nn_tensor *base = nn_empty(nd, bshape, dt, NN_DEVICE_CPU);
    int64_t n = nn_numel(base);
    char *p = nn_data(base);
    for (int64_t i = 0; i < n; i++) nn_store_f64(p + i * nn_dtype_size(dt), dt, urand() * 4 - 2);
    nn_contiguous_strides(nd, bshape, bstr);
    for (int d = 0; d < nd; d++) {
        strides[order[d]] = bstr[d];
        if (kind == NARROWED) offset += bstr[d];
    }
    nn_tensor *v = nn_make_view(base, nd, shape, strides, offset);
    nn_release(base);
    return v;
}

static double *dense(const nn_tensor *t)
{
    int64_t n = nn_numel(t), idx[NN_MAX_DIMS] = {0};
    double *d = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t k = 0; k < n; k++) {
        d[k] = nn_get_f64(t, idx);
        for (int q = t->ndim - 1; q >= 0; q--) {
            if (++idx[q] < t->shape[q]) break;
            idx[q] = 0;
        }
    }
    return d;
}

typedef enum { MAX, AVG, AMAX, AAVG } kind_t;
static const char *op_name[] = {"max_pool2d", "avg_pool2d", "adaptive_max_pool2d", "adaptive_avg_pool2d"};

typedef struct {
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    bool ceil, include_pad;
    int64_t divisor;
    int64_t oh, ow; /* adaptive: the requested size */
} pcfg;

/* PyTorch's documented output size, written from the docs: floor or ceil of
 * (in + 2p - d(k-1) - 1)/s + 1, minus one if ceil's last window would start in the right padding. */
static int64_t doc_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode)
{
    double q = (double)(in + 2 * p - d * (k - 1) - 1) / (double)s;
    int64_t o = (int64_t)(ceil_mode ? ceil(q) : floor(q)) + 1;
    if (ceil_mode && (o - 1) * s >= in + p) o--;
    return o;
}

/* One output cell's window as a list of flat input positions (and the padded count for avg). */
static int window(kind_t k, const pcfg *c, int64_t H, int64_t W, int64_t oh, int64_t ow, int64_t oy, int64_t ox, int64_t *pos, int64_t *padded)
{
    int n = 0;
    *padded = 0;
    if (k == AMAX || k == AAVG) {
        int64_t h0 = (int64_t)floor((double)oy * H / oh), h1 = (int64_t)ceil((double)(oy + 1) * H / oh);
        int64_t w0 = (int64_t)floor((double)ox * W / ow), w1 = (int64_t)ceil((double)(ox + 1) * W / ow);
        for (int64_t h = h0; h < h1; h++)
            for (int64_t w = w0; w < w1; w++) pos[n++] = h * W + w;
        return n;
    }
    int64_t dh = k == MAX ? c->dh : 1, dw = k == MAX ? c->dw : 1;
    for (int64_t i = 0; i < c->kh; i++)
        for (int64_t j = 0; j < c->kw; j++) {
            int64_t h = oy * c->sh - c->ph + i * dh, w = ox * c->sw - c->pw + j * dw;
            if (h >= -c->ph && h < H + c->ph && w >= -c->pw && w < W + c->pw) (*padded)++;
            if (h >= 0 && h < H && w >= 0 && w < W) pos[n++] = h * W + w;
        }
    return n;
}

/* Forward values, argmax (max kinds) and grad_input for grad_out go (may be NULL). */
typedef struct {
    double *y, *gx;
    int64_t *ind;
} prefs;

static void ref_pool(kind_t k, const pcfg *c, int64_t P, int64_t H, int64_t W, int64_t oh, int64_t ow, const double *x, const double *go, prefs *r)
{
    r->y = calloc((size_t)(P * oh * ow) + 1, 8);
    r->ind = calloc((size_t)(P * oh * ow) + 1, 8);
    r->gx = calloc((size_t)(P * H * W) + 1, 8);
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)(c->kh * c->kw + H * W + 1));
    for (int64_t p = 0; p < P; p++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++) {
                int64_t padded, n = window(k, c, H, W, oh, ow, oy, ox, pos, &padded), yi = (p * oh + oy) * ow + ox;
                const double *xp = x + p * H * W;
                double g = go ? go[yi] : 0;
                if (k == MAX || k == AMAX) {
                    int64_t best = n ? pos[0] : 0;
                    for (int64_t q = 1; q < n; q++)
                        if (!isnan(xp[best]) && (isnan(xp[pos[q]]) || xp[pos[q]] > xp[best])) best = pos[q];
                    r->y[yi] = n ? xp[best] : -INFINITY;
                    r->ind[yi] = best;
                    r->gx[p * H * W + best] += g;
                } else {
                    double s = 0, div = k == AAVG ? (double)n : c->divisor ? (double)c->divisor : c->include_pad ? (double)padded : (double)n;
                    for (int64_t q = 0; q < n; q++) s += xp[pos[q]];
                    r->y[yi] = n ? s / div : 0;
                    for (int64_t q = 0; q < n; q++) r->gx[p * H * W + pos[q]] += g / div;
                }
            }
    free(pos);
}

static bool close_to(nn_dtype dt, double got, double want)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    double rel = dt == NN_F64 ? 1e-12 : dt == NN_F32 ? 2e-6 : dt == NN_F16 ? 1e-3 : 8e-3;
    return fabs(got - want) <= rel * (fabs(want) + 1) ;
}

static bool matches(const char *what, const nn_tensor *t, int nd, const int64_t *shape, const double *want)
{
    char s1[160], s2[160];
    if (!t) {
        fprintf(stderr, "%s: NULL (%s)\n", what, nn_last_error());
        return false;
    }
    if (t->ndim != nd || memcmp(t->shape, shape, sizeof(int64_t) * nd)) {
        fprintf(stderr, "%s: shape %s, expected %s\n", what, nn_shape_str(s1, t->ndim, t->shape), nn_shape_str(s2, nd, shape));
        return false;
    }
    double *got = dense(t);
    bool ok = true;
    for (int64_t k = 0; k < nn_numel(t) && ok; k++)
        if (!close_to(t->dtype, got[k], want[k])) {
            fprintf(stderr, "%s: element %lld is %.10g, expected %.10g\n", what, (long long)k, got[k], want[k]);
            ok = false;
        }
    free(got);
    return ok;
}

static nn_tensor *run_op(kind_t k, const pcfg *c, nn_tensor *x, nn_tensor **ind)
{
    int64_t ks[2] = {c->kh, c->kw}, ss[2] = {c->sh, c->sw}, ps[2] = {c->ph, c->pw}, ds[2] = {c->dh, c->dw};
    switch (k) {
    case MAX: return nn_max_pool2d(x, ks, ss, ps, ds, c->ceil, ind);
    case AVG: return nn_avg_pool2d(x, ks, ss, ps, c->ceil, c->include_pad, c->divisor);
    case AMAX: return nn_adaptive_max_pool2d(x, c->oh, c->ow, ind);
    default: return nn_adaptive_avg_pool2d(x, c->oh, c->ow);
    }
}

static const char *grad_fn_name[] = {"MaxPool2DWithIndicesBackward0", "AvgPool2DBackward0", "AdaptiveMaxPool2DBackward0",
                                     "AdaptiveAvgPool2DBackward0"};

/* One op on one input: values, indices, grad_fn and (float32/float64) the gradient. */
static void run_case(kind_t k, int ci, const pcfg *c, int nd, const int64_t *xs, nn_dtype dt, int kind)
{
    char what[200];
    snprintf(what, sizeof what, "%s case %d %s %s %dD", op_name[k], ci, nn_dtype_name(dt), kind_name[kind], nd);
    int64_t H = xs[nd - 2], W = xs[nd - 1], P = 1;
    for (int d = 0; d < nd - 2; d++) P *= xs[d];
    int64_t oh, ow;
    if (k == MAX || k == AVG) {
        int64_t sh = c->sh ? c->sh : c->kh, sw = c->sw ? c->sw : c->kw;
        oh = doc_size(H, c->kh, sh, c->ph, k == MAX ? c->dh : 1, c->ceil);
        ow = doc_size(W, c->kw, sw, c->pw, k == MAX ? c->dw : 1, c->ceil);
    } else {
        oh = c->oh, ow = c->ow;
    }
    pcfg e = *c;
    if (!e.sh) e.sh = e.kh;
    if (!e.sw) e.sw = e.kw;
    int64_t ys[4];
    memcpy(ys, xs, sizeof(int64_t) * nd);
    ys[nd - 2] = oh, ys[nd - 1] = ow;
    nn_tensor *x = make(nd, xs, dt, kind);
    bool grads = true;
    if (grads) nn_requires_grad_(x, true);
    nn_tensor *ind = NULL, *y = run_op(k, c, x, (k == MAX || k == AMAX) ? &ind : NULL);
    nn_tensor *go = grads && y ? make(nd, ys, dt, PERMUTED) : NULL;
    double *xd = dense(x), *god = go ? dense(go) : NULL;
    prefs r;
    ref_pool(k, &e, P, H, W, oh, ow, xd, god, &r);
    CHECK(matches(what, y, nd, ys, r.y), "%s values", what);
    if (k == MAX || k == AMAX) {
        bool ok = ind && ind->dtype == NN_I64 && ind->ndim == nd && !memcmp(ind->shape, ys, sizeof(int64_t) * nd);
        if (ok) {
            double *id = dense(ind);
            for (int64_t q = 0; q < nn_numel(ind) && ok; q++)
                if (id[q] != (double)r.ind[q]) {
                    fprintf(stderr, "%s: index %lld is %g, expected %lld\n", what, (long long)q, id[q], (long long)r.ind[q]);
                    ok = false;
                }
            free(id);
        }
        CHECK(ok, "%s indices", what);
    }
    if (go) {
        CHECK(y->grad_fn && !strcmp(y->grad_fn->name, grad_fn_name[k]), "%s grad_fn", what);
        CHECK(nn_backward(y, go, false) == NN_OK, "%s backward: %s", what, nn_last_error());
        CHECK(matches(what, x->grad, nd, xs, r.gx), "%s grad input", what);
    }
    free(xd), free(god), free(r.y), free(r.gx), free(r.ind);
    nn_release(go), nn_release(y), nn_release(ind), nn_release(x);
}

/* every field named, so -Wextra sees full initializers */
#define WIN(a, b, c, d, e, f, g, h) .kh = a, .kw = b, .sh = c, .sw = d, .ph = e, .pw = f, .dh = g, .dw = h
#define MAXC(a, b, c, d, e, f, g, h, cl) {WIN(a, b, c, d, e, f, g, h), .ceil = cl, .include_pad = false, .divisor = 0, .oh = 0, .ow = 0}
#define AVGC(a, b, c, d, e, f, cl, inc, dv) {WIN(a, b, c, d, e, f, 1, 1), .ceil = cl, .include_pad = inc, .divisor = dv, .oh = 0, .ow = 0}
#define ADAC(h, w) {WIN(0, 0, 0, 0, 0, 0, 0, 0), .ceil = false, .include_pad = false, .divisor = 0, .oh = h, .ow = w}

static const pcfg max_cases[] = {
    /* kh kw sh sw ph pw dh dw ceil */
    MAXC(2, 2, 0, 0, 0, 0, 1, 1, false),
    MAXC(3, 3, 2, 2, 1, 1, 1, 1, false),
    MAXC(3, 2, 2, 1, 1, 1, 1, 1, true),
    MAXC(2, 3, 2, 2, 1, 0, 2, 2, true),
    MAXC(3, 3, 1, 2, 1, 1, 2, 1, false),
    MAXC(1, 1, 2, 3, 0, 0, 1, 1, true),
    MAXC(4, 3, 3, 3, 2, 1, 1, 1, true),
};
static const pcfg avg_cases[] = {
    /* kh kw sh sw ph pw ceil include_pad divisor */
    AVGC(2, 2, 0, 0, 0, 0, false, true, 0),
    AVGC(3, 3, 2, 2, 1, 1, false, true, 0),
    AVGC(3, 3, 2, 2, 1, 1, false, false, 0),
    AVGC(3, 2, 2, 1, 1, 1, true, true, 0),
    AVGC(3, 2, 2, 1, 1, 1, true, false, 0),
    AVGC(2, 3, 2, 2, 1, 1, true, true, 5),
    AVGC(4, 4, 3, 3, 2, 2, true, false, -3),
    AVGC(1, 3, 1, 2, 0, 1, false, false, 0),
};
static const pcfg adaptive_cases[] = {
    ADAC(1, 1), ADAC(3, 2), ADAC(5, 5), ADAC(4, 7), ADAC(2, 3),
};

static void test_values_and_grads(void)
{
    int64_t shapes[][4] = {{3, 2, 7, 9}, {1, 3, 5, 6}, {2, 4, 8, 8}, {3, 1, 5, 7}};
    nn_dtype dts[] = {NN_F32, NN_F64, NN_F16, NN_BF16};
    for (int s = 0; s < 4; s++)
        for (int t = 0; t < 4; t++)
            for (int kind = 0; kind < NKINDS; kind++) {
                if (t >= 2 && kind == NARROWED) continue;
                for (int u = 0; u < 2; u++) {
                    int nd = u ? 3 : 4;
                    const int64_t *xs = u ? shapes[s] + 1 : shapes[s];
                    for (int c = 0; c < (int)(sizeof max_cases / sizeof max_cases[0]); c++) run_case(MAX, c, &max_cases[c], nd, xs, dts[t], kind);
                    for (int c = 0; c < (int)(sizeof avg_cases / sizeof avg_cases[0]); c++) run_case(AVG, c, &avg_cases[c], nd, xs, dts[t], kind);
                    for (int c = 0; c < (int)(sizeof adaptive_cases / sizeof adaptive_cases[0]); c++) {
                        run_case(AMAX, c, &adaptive_cases[c], nd, xs, dts[t], kind);
                        run_case(AAVG, c, &adaptive_cases[c], nd, xs, dts[t], kind);
                    }
                }
            }
}

/* Sizes against PyTorch's own numbers for ceil_mode and padding. */
static void test_output_sizes(void)
{
    struct { int64_t in, k, s, p, d; bool ceil; int64_t want; } cs[] = {
        {5, 2, 2, 0, 1, false, 2}, {5, 2, 2, 0, 1, true, 3}, {5, 2, 2, 1, 1, true, 3}, /* last window would start in the padding */
        {4, 2, 2, 1, 1, true, 3},  {6, 3, 3, 1, 1, true, 3}, {32, 2, 2, 0, 1, false, 16}, {7, 3, 2, 1, 2, false, 3},
        {55, 3, 2, 0, 1, true, 27}, {1, 1, 1, 0, 1, true, 1}, {6, 3, 2, 1, 1, true, 4},
    };
    for (int k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++) {
        int64_t xs[3] = {1, 3, cs[k].in}, ks[2] = {1, cs[k].k}, ss[2] = {1, cs[k].s}, ps[2] = {0, cs[k].p}, ds[2] = {1, cs[k].d};
        nn_tensor *x = nn_zeros(3, xs, NN_F32, NN_DEVICE_CPU);
        nn_tensor *y = nn_max_pool2d(x, ks, ss, ps, ds, cs[k].ceil, NULL);
        CHECK(y && y->shape[2] == cs[k].want, "max_pool2d size case %d: got %lld, want %lld (%s)", k, y ? (long long)y->shape[2] : -1LL,
              (long long)cs[k].want, y ? "" : nn_last_error());
        nn_release(y);
        if (cs[k].d == 1) {
            y = nn_avg_pool2d(x, ks, ss, ps, cs[k].ceil, true, 0);
            CHECK(y && y->shape[2] == cs[k].want, "avg_pool2d size case %d", k);
            nn_release(y);
        }
        nn_release(x);
    }
    /* zero batch */
    int64_t zs[4] = {0, 3, 4, 4}, k2[2] = {2, 2}, z2[2] = {0, 0}, o2[2] = {1, 1};
    nn_tensor *x = nn_zeros(4, zs, NN_F32, NN_DEVICE_CPU), *y = nn_max_pool2d(x, k2, z2, z2, o2, false, NULL);
    CHECK(y && y->shape[0] == 0 && y->shape[2] == 2 && y->shape[3] == 2, "max_pool2d on a zero batch");
    nn_release(y);
    y = nn_adaptive_avg_pool2d(x, 3, 3);
    CHECK(y && y->shape[0] == 0 && y->shape[2] == 3, "adaptive_avg_pool2d on a zero batch");
    nn_release(y);
    y = nn_adaptive_avg_pool2d(x, 0, 2);
    nn_release(x);
    nn_release(y);
}

/* NaN wins a max window and reports its index; an all -inf window reports its first position. */
static void test_nan_and_inf(void)
{
    nn_dtype dts[] = {NN_F32, NN_F64, NN_F16, NN_BF16};
    for (int t = 0; t < 4; t++) {
        int64_t xs[3] = {1, 4, 4}, k2[2] = {2, 2}, z2[2] = {0, 0}, o2[2] = {1, 1};
        nn_tensor *x = nn_zeros(3, xs, dts[t], NN_DEVICE_CPU);
        char *p = nn_data(x);
        size_t es = nn_dtype_size(dts[t]);
        for (int i = 0; i < 16; i++) nn_store_f64(p + i * es, dts[t], i);
        nn_store_f64(p + 1 * es, dts[t], NAN);   /* window (0,0): NaN at 1 among 0, 4, 5 */
        nn_store_f64(p + 10 * es, dts[t], NAN);  /* window (1,1): NaNs at 10 and 15 */
        nn_store_f64(p + 15 * es, dts[t], NAN);
        for (int i = 2; i < 4; i++) nn_store_f64(p + i * es, dts[t], -INFINITY), nn_store_f64(p + (i + 4) * es, dts[t], -INFINITY);
        nn_tensor *ind = NULL, *y = nn_max_pool2d(x, k2, z2, z2, o2, false, &ind);
        int64_t i00[3] = {0, 0, 0}, i01[3] = {0, 0, 1}, i11[3] = {0, 1, 1};
        CHECK(y && isnan(nn_get_f64(y, i00)) && nn_get_i64(ind, i00) == 1, "NaN propagates (%s)", nn_dtype_name(dts[t]));
        CHECK(y && isinf(nn_get_f64(y, i01)) && nn_get_f64(y, i01) < 0 && nn_get_i64(ind, i01) == 2, "all -inf window (%s)",
              nn_dtype_name(dts[t]));
        CHECK(y && isnan(nn_get_f64(y, i11)) && nn_get_i64(ind, i11) == 15, "the last NaN's index (%s)", nn_dtype_name(dts[t]));
        nn_release(y), nn_release(ind);
        y = nn_adaptive_max_pool2d(x, 1, 1, &ind);
        CHECK(y && isnan(nn_get_f64(y, i00)) && nn_get_i64(ind, i00) == 15, "adaptive max NaN (%s)", nn_dtype_name(dts[t]));
        nn_release(y), nn_release(ind);
        nn_release(x);
    }
}

/* ---- gradcheck ---- */

typedef struct {
    kind_t k;
    pcfg c;
} gc_ctx;

static nn_tensor *gc_pool(nn_tensor *const *x, void *ctx)
{
    const gc_ctx *g = ctx;
    return run_op(g->k, &g->c, x[0], NULL);
}

static void test_gradcheck(void)
{
    gc_ctx cs[] = {
        {MAX, MAXC(3, 3, 2, 2, 1, 1, 1, 1, false)}, {MAX, MAXC(2, 3, 2, 1, 1, 1, 2, 1, true)},
        {AVG, AVGC(3, 3, 2, 2, 1, 1, true, false, 0)}, {AVG, AVGC(3, 2, 2, 2, 1, 1, true, true, 0)},
        {AVG, AVGC(2, 2, 1, 1, 1, 0, false, true, 3)}, {AMAX, ADAC(3, 4)}, {AAVG, ADAC(4, 3)}, {AAVG, ADAC(1, 1)},
    };
    for (int k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++)
        for (int u = 0; u < 2; u++) {
            int64_t xs[4] = {2, 2, 6, 7};
            nn_tensor *x = make(u ? 3 : 4, u ? xs + 1 : xs, NN_F64, k % 2 ? PERMUTED : NARROWED);
            nn_requires_grad_(x, true);
            char name[80];
            snprintf(name, sizeof name, "%s gradcheck %d%s", op_name[cs[k].k], k, u ? " unbatched" : "");
            CHECK(gradcheck(name, gc_pool, &x, 1, &cs[k], 1e-6, 1e-7, 1e-6), "%s", name);
            nn_release(x);
        }
}

/* ---- errors ---- */

static bool fails_with(nn_tensor *r, const char *text)
{
    bool ok = r == NULL && strstr(nn_last_error(), text) != NULL;
    if (!ok) fprintf(stderr, "expected an error with \"%s\", got %s\n", text, r ? "a result" : nn_last_error());
    nn_release(r);
    return ok;
}

static void test_errors(void)
{
    int64_t xs[4] = {1, 2, 8, 8}, k3[2] = {3, 3}, k2[2] = {2, 2}, z2[2] = {0, 0}, o2[2] = {1, 1}, p2[2] = {2, 2}, d2[2] = {2, 2};
    nn_tensor *x = nn_zeros(4, xs, NN_F32, NN_DEVICE_CPU);
    CHECK(fails_with(nn_max_pool2d(x, k3, z2, p2, o2, false, NULL),
                     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"));
    CHECK(fails_with(nn_max_pool2d(x, k3, z2, p2, d2, false, NULL),
                     "pad should be smaller than or equal to half of kernel size, but got padW = 2, padH = 2, kW = 3, kH = 3"));
    CHECK(fails_with(nn_avg_pool2d(x, k3, z2, p2, false, true, 0), "pad should be at most half of effective kernel size"));
    int64_t neg[2] = {-1, 0};
    CHECK(fails_with(nn_max_pool2d(x, k3, z2, neg, o2, false, NULL), "pad must be non-negative, but got pad: -1"));
    CHECK(fails_with(nn_max_pool2d(x, k3, neg, z2, o2, false, NULL), "stride should be greater than zero, but got dH: -1 dW: 3"));
    CHECK(fails_with(nn_max_pool2d(x, z2, z2, z2, o2, false, NULL), "stride should not be zero"));
    CHECK(fails_with(nn_max_pool2d(x, z2, o2, z2, o2, false, NULL), "kernel size should be greater than zero, but got kH: 0 kW: 0"));
    CHECK(fails_with(nn_max_pool2d(x, k2, z2, z2, z2, false, NULL), "dilation should be greater than zero"));
    int64_t s2[4] = {1, 1, 2, 2};
    nn_tensor *tiny = nn_zeros(4, s2, NN_F32, NN_DEVICE_CPU);
    CHECK(fails_with(nn_max_pool2d(tiny, k3, o2, z2, o2, false, NULL),
                     "Given input size: (1x2x2). Calculated output size: (1x0x0). Output size is too small"));
    int64_t s22[2] = {4, 4};
    nn_tensor *flat = nn_zeros(2, s22, NN_F32, NN_DEVICE_CPU);
    CHECK(fails_with(nn_max_pool2d(flat, k2, z2, z2, o2, false, NULL), "non-empty 3D or 4D (batch mode) tensor expected for input"));
    CHECK(fails_with(nn_avg_pool2d(flat, k2, z2, z2, false, true, 0), "non-empty 3D or 4D (batch mode) tensor expected for input"));
    int64_t se[4] = {2, 0, 4, 4};
    nn_tensor *empty = nn_zeros(4, se, NN_F32, NN_DEVICE_CPU);
    CHECK(fails_with(nn_max_pool2d(empty, k2, z2, z2, o2, false, NULL),
                     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[2, 0, 4, 4]"));
    CHECK(fails_with(nn_adaptive_avg_pool2d(flat, 2, 2), "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [4, 4]"));
    CHECK(fails_with(nn_adaptive_max_pool2d(flat, 2, 2, NULL), "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [4, 4]"));
    CHECK(fails_with(nn_adaptive_avg_pool2d(x, -1, 2),
                     "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {-1, 2}"));
    int64_t sz[4] = {2, 3, 0, 4};
    nn_tensor *zh = nn_zeros(4, sz, NN_F32, NN_DEVICE_CPU);
    CHECK(fails_with(nn_adaptive_avg_pool2d(zh, 2, 2),
                     "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes [2, 3, 0, 4] with dimension 2 being empty"));
    CHECK(fails_with(nn_adaptive_max_pool2d(empty, 2, 2, NULL), "with dimension 1 being empty"));
    nn_tensor *xi = nn_zeros(4, xs, NN_I64, NN_DEVICE_CPU);
    CHECK(fails_with(nn_max_pool2d(xi, k2, z2, z2, o2, false, NULL), "\"max_pool2d\" not implemented for 'Long'"));
    CHECK(fails_with(nn_avg_pool2d(xi, k2, z2, z2, false, true, 0), "\"avg_pool2d\" not implemented for 'Long'"));
    nn_release(xi), nn_release(zh), nn_release(empty), nn_release(flat), nn_release(tiny), nn_release(x);
}

int main(void)
{
    test_values_and_grads();
    test_output_sizes();
    test_nan_and_inf();
    test_gradcheck();
    test_errors();
    return CHECK_REPORT();
}
