/* conv2d: forward and both gradients against a direct convolution loop written
 * here, on random contiguous, narrowed and permuted (channels-last) inputs in
 * float32/float64 (float16/bfloat16 forward too), batch 1 and 3 and unbatched,
 * with stride/padding/dilation/groups combinations incl. depthwise and 1x1;
 * padding='same' with even kernels; float64 gradcheck of input, weight and bias;
 * output shapes of the documents' nets; PyTorch's error messages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "conv.h"
#include "gradcheck.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

enum { CONTIG, NARROWED, PERMUTED, NKINDS };
static const char *kind_name[] = {"contiguous", "narrowed", "channels-last"};

/* A random tensor: contiguous, a window of a larger base, or with its dims stored in the order
 * 0, 2, 3, ..., 1 (channels last for 4-D). Values in [-1, 1). */
static nn_tensor *make(int nd, const int64_t *shape, nn_dtype dt, int kind)
{
    int64_t bshape[NN_MAX_DIMS], bstr[NN_MAX_DIMS], strides[NN_MAX_DIMS], offset = 0;
    int order[NN_MAX_DIMS];
    for (int d = 0; d < nd; d++) order[d] = d;
    if (kind == PERMUTED && nd >= 3) {
        for (int d = 1; d < nd - 1; d++) order[d] = d + 1;
        order[nd - 1] = 1;
    }
    for (int d = 0; d < nd; d++) bshape[d] = shape[order[d]] + (kind == NARROWED ? 3 : 0);
    nn_tensor *base = nn_empty(nd, bshape, dt, NN_DEVICE_CPU);
    int64_t n = nn_numel(base);
    char *p = nn_data(base);
    for (int64_t i = 0; i < n; i++) nn_store_f64(p + i * nn_dtype_size(dt), dt, urand() * 2 - 1);
    nn_contiguous_strides(nd, bshape, bstr);
    for (int d = 0; d < nd; d++) {
        strides[order[d]] = bstr[d];
        if (kind == NARROWED) offset += 1 * bstr[d];
    }
    nn_tensor *v = nn_make_view(base, nd, shape, strides, offset);
    nn_release(base);
    return v;
}

/* Row-major float64 copy of any tensor. */
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

typedef struct {
    int64_t N, C, H, W, O, kh, kw, sh, sw, ph, pw, dh, dw, G;
    bool bias;
} cfg;

static int64_t out_h(const cfg *c) { return (c->H + 2 * c->ph - c->dh * (c->kh - 1) - 1) / c->sh + 1; }
static int64_t out_w(const cfg *c) { return (c->W + 2 * c->pw - c->dw * (c->kw - 1) - 1) / c->sw + 1; }

/* The direct convolution, its two gradients and, for tolerances, the sums of |terms|.
 * oh, ow are given (padding='same' makes them larger than symmetric padding gives). */
typedef struct {
    double *y, *ys, *gx, *gxs, *gw, *gws, *gb, *gbs;
} refs;

static void ref_conv(const cfg *c, int64_t oh, int64_t ow, const double *x, const double *w, const double *b, const double *go, refs *r)
{
    int64_t Cg = c->C / c->G, Og = c->O / c->G;
    size_t ny = (size_t)(c->N * c->O * oh * ow), nx = (size_t)(c->N * c->C * c->H * c->W), nw = (size_t)(c->O * Cg * c->kh * c->kw);
    r->y = calloc(ny + 1, 8), r->ys = calloc(ny + 1, 8);
    r->gx = calloc(nx + 1, 8), r->gxs = calloc(nx + 1, 8);
    r->gw = calloc(nw + 1, 8), r->gws = calloc(nw + 1, 8);
    r->gb = calloc((size_t)c->O + 1, 8), r->gbs = calloc((size_t)c->O + 1, 8);
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t o = 0; o < c->O; o++)
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    int64_t yi = ((n * c->O + o) * oh + oy) * ow + ox, g = o / Og;
                    double acc = b ? b[o] : 0, sc = fabs(acc), gy = go ? go[yi] : 0;
                    r->gb[o] += gy, r->gbs[o] += fabs(gy);
                    for (int64_t ci = 0; ci < Cg; ci++)
                        for (int64_t i = 0; i < c->kh; i++)
                            for (int64_t j = 0; j < c->kw; j++) {
                                int64_t iy = oy * c->sh - c->ph + i * c->dh, ix = ox * c->sw - c->pw + j * c->dw;
                                if (iy < 0 || iy >= c->H || ix < 0 || ix >= c->W) continue;
                                int64_t xi = ((n * c->C + g * Cg + ci) * c->H + iy) * c->W + ix, wi = ((o * Cg + ci) * c->kh + i) * c->kw + j;
                                acc += x[xi] * w[wi], sc += fabs(x[xi] * w[wi]);
                                r->gx[xi] += gy * w[wi], r->gxs[xi] += fabs(gy * w[wi]);
                                r->gw[wi] += gy * x[xi], r->gws[wi] += fabs(gy * x[xi]);
                            }
                    r->y[yi] = acc, r->ys[yi] = sc;
                }
}

static void refs_free(refs *r)
{
    free(r->y), free(r->ys), free(r->gx), free(r->gxs), free(r->gw), free(r->gws), free(r->gb), free(r->gbs);
}

static double tol(nn_dtype dt, double want, double scale)
{
    switch (dt) {
    case NN_F64: return 1e-12 * (scale + fabs(want)) + 1e-300;
    case NN_F32: return 2e-6 * (scale + fabs(want)) + 1e-30;
    case NN_F16: return 1e-3 * fabs(want) + 1e-5 * scale + 1e-7;
    default: return 8e-3 * fabs(want) + 1e-5 * scale + 1e-7;
    }
}

/* Does t (shape nd/shape) hold want (row-major) within tolerance? Reports the first miss. */
static bool matches(const char *what, const nn_tensor *t, int nd, const int64_t *shape, const double *want, const double *scale)
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
        if (!(fabs(got[k] - want[k]) <= tol(t->dtype, want[k], scale[k]))) {
            fprintf(stderr, "%s: element %lld is %.10g, expected %.10g (%s)\n", what, (long long)k, got[k], want[k], nn_dtype_name(t->dtype));
            ok = false;
        }
    free(got);
    return ok;
}

static const cfg cases[] = {
    /* N  C  H   W  O kh kw sh sw ph pw dh dw G bias */
    {2, 3, 7, 9, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, true},
    {3, 4, 8, 6, 6, 3, 2, 2, 1, 1, 0, 1, 1, 2, true},
    {1, 4, 9, 9, 4, 3, 3, 1, 2, 1, 1, 2, 1, 4, true},   /* depthwise, dilated rows */
    {3, 6, 5, 7, 3, 1, 1, 1, 1, 0, 0, 1, 1, 3, false},  /* grouped 1x1: no im2col */
    {2, 5, 11, 10, 7, 5, 3, 3, 2, 2, 1, 1, 2, 1, false},
    {1, 8, 6, 6, 16, 3, 3, 1, 1, 1, 1, 1, 1, 8, true},  /* depthwise, channel multiplier 2 */
    {3, 2, 4, 5, 3, 1, 1, 2, 2, 0, 0, 1, 1, 1, true},   /* 1x1 with stride */
    {1, 3, 5, 5, 2, 5, 5, 1, 1, 0, 0, 1, 1, 1, true},   /* kernel as large as the input */
    {2, 2, 3, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},   /* 1x1 with padding */
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, true},
    {3, 3, 6, 6, 2, 2, 2, 2, 2, 1, 1, 3, 3, 1, true},   /* stride and dilation 3 x 3 with padding */
    {2, 2, 70, 66, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1, true}, /* large images: one image per GEMM, 1x1 in place */
    {2, 3, 68, 68, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, true},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static void shapes_of(const cfg *c, int64_t *xs, int64_t *ws, int64_t *ys)
{
    int64_t x[4] = {c->N, c->C, c->H, c->W}, w[4] = {c->O, c->C / c->G, c->kh, c->kw}, y[4] = {c->N, c->O, out_h(c), out_w(c)};
    memcpy(xs, x, sizeof x), memcpy(ws, w, sizeof w), memcpy(ys, y, sizeof y);
}

/* Forward (and, for float32/float64, every gradient through autograd) of one case. */
static void run_case(int ci, const cfg *c, nn_dtype dt, int kind, bool unbatched)
{
    char what[200];
    int64_t xs[4], ws[4], ys[4], bs[1] = {c->O};
    shapes_of(c, xs, ws, ys);
    int xnd = unbatched ? 3 : 4;
    nn_tensor *x = make(xnd, unbatched ? xs + 1 : xs, dt, kind);
    nn_tensor *w = make(4, ws, dt, kind == PERMUTED ? PERMUTED : CONTIG);
    nn_tensor *b = c->bias ? make(1, bs, dt, kind == NARROWED ? NARROWED : CONTIG) : NULL;
    bool grads = true;
    if (grads) {
        nn_requires_grad_(x, true), nn_requires_grad_(w, true);
        if (b) nn_requires_grad_(b, true);
    }
    int64_t stride[2] = {c->sh, c->sw}, pad[2] = {c->ph, c->pw}, dil[2] = {c->dh, c->dw};
    nn_tensor *y = nn_conv2d(x, w, b, stride, pad, dil, c->G);
    double *xd = dense(x), *wd = dense(w), *bd = b ? dense(b) : NULL, *god = NULL;
    nn_tensor *go = NULL;
    if (grads && y) {
        go = make(xnd, unbatched ? ys + 1 : ys, dt, PERMUTED);
        god = dense(go);
    }
    refs r;
    ref_conv(c, ys[2], ys[3], xd, wd, bd, god, &r);
    snprintf(what, sizeof what, "case %d %s %s%s forward", ci, nn_dtype_name(dt), kind_name[kind], unbatched ? " unbatched" : "");
    CHECK(matches(what, y, xnd, unbatched ? ys + 1 : ys, r.y, r.ys), "%s", what);
    if (go) {
        CHECK(y->grad_fn && !strcmp(y->grad_fn->name, "ConvolutionBackward0"), "%s: grad_fn", what);
        nn_status st = nn_backward(y, go, false);
        CHECK(st == NN_OK, "%s: backward: %s", what, nn_last_error());
        snprintf(what, sizeof what, "case %d %s %s%s grad input", ci, nn_dtype_name(dt), kind_name[kind], unbatched ? " unbatched" : "");
        CHECK(matches(what, x->grad, xnd, unbatched ? xs + 1 : xs, r.gx, r.gxs), "%s", what);
        snprintf(what, sizeof what, "case %d %s %s grad weight", ci, nn_dtype_name(dt), kind_name[kind]);
        CHECK(matches(what, w->grad, 4, ws, r.gw, r.gws), "%s", what);
        if (b) {
            snprintf(what, sizeof what, "case %d %s %s grad bias", ci, nn_dtype_name(dt), kind_name[kind]);
            CHECK(matches(what, b->grad, 1, bs, r.gb, r.gbs), "%s", what);
        }
    }
    refs_free(&r);
    free(xd), free(wd), free(bd), free(god);
    nn_release(go), nn_release(y), nn_release(x), nn_release(w), nn_release(b);
}

static void test_forward_backward(void)
{
    nn_dtype dts[] = {NN_F32, NN_F64, NN_F16, NN_BF16};
    for (int ci = 0; ci < NCASES; ci++)
        for (int t = 0; t < 4; t++)
            for (int kind = 0; kind < NKINDS; kind++) {
                if (t >= 2 && kind != CONTIG && kind != PERMUTED) continue;
                run_case(ci, &cases[ci], dts[t], kind, false);
                if (cases[ci].N == 1 && t < 2) run_case(ci, &cases[ci], dts[t], kind, true);
            }
    /* batch 1 and 3 of the same geometry, unbatched */
    for (int64_t n = 1; n <= 3; n += 2) {
        cfg c = {n, 3, 8, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, true};
        run_case(100 + (int)n, &c, NN_F32, NARROWED, false);
    }
    cfg u = {1, 4, 6, 7, 4, 3, 3, 2, 1, 1, 1, 1, 2, 2, true};
    run_case(200, &u, NN_F64, PERMUTED, true);
}

/* padding='same': every output keeps the input size; even kernels pad one more at the bottom/right */
static void test_same(void)
{
    struct { int64_t C, H, W, O, kh, kw, dh, dw, G; } sc[] = {
        {3, 6, 7, 4, 4, 2, 1, 1, 1}, {2, 5, 5, 2, 3, 3, 2, 1, 2}, {4, 7, 6, 2, 2, 5, 3, 1, 1}, {2, 4, 4, 3, 3, 3, 1, 1, 1},
    };
    for (int k = 0; k < 4; k++)
        for (int ub = 0; ub < 2; ub++)
            for (int t = 0; t < 2; t++) {
                nn_dtype dt = t ? NN_F64 : NN_F32;
                cfg c = {ub ? 1 : 2, sc[k].C, sc[k].H, sc[k].W, sc[k].O, sc[k].kh, sc[k].kw, 1, 1, 0, 0, sc[k].dh, sc[k].dw, sc[k].G, true};
                c.ph = c.dh * (c.kh - 1) / 2, c.pw = c.dw * (c.kw - 1) / 2;
                int64_t xs[4] = {c.N, c.C, c.H, c.W}, ws[4] = {c.O, c.C / c.G, c.kh, c.kw}, ys[4] = {c.N, c.O, c.H, c.W}, bs[1] = {c.O};
                int nd = ub ? 3 : 4;
                nn_tensor *x = make(nd, ub ? xs + 1 : xs, dt, NARROWED), *w = make(4, ws, dt, CONTIG), *b = make(1, bs, dt, CONTIG);
                nn_requires_grad_(x, true), nn_requires_grad_(w, true), nn_requires_grad_(b, true);
                int64_t one[2] = {1, 1}, dil[2] = {c.dh, c.dw};
                nn_tensor *y = nn_conv2d_same(x, w, b, one, dil, c.G);
                nn_tensor *go = y ? make(nd, ub ? ys + 1 : ys, dt, PERMUTED) : NULL;
                double *xd = dense(x), *wd = dense(w), *bd = dense(b), *god = go ? dense(go) : NULL;
                refs r;
                ref_conv(&c, c.H, c.W, xd, wd, bd, god, &r);
                char what[120];
                snprintf(what, sizeof what, "same case %d %s%s", k, nn_dtype_name(dt), ub ? " unbatched" : "");
                CHECK(matches(what, y, nd, ub ? ys + 1 : ys, r.y, r.ys), "%s", what);
                if (go) {
                    CHECK(nn_backward(y, go, false) == NN_OK, "%s: backward: %s", what, nn_last_error());
                    CHECK(matches(what, x->grad, nd, ub ? xs + 1 : xs, r.gx, r.gxs), "%s grad input", what);
                    CHECK(matches(what, w->grad, 4, ws, r.gw, r.gws), "%s grad weight", what);
                    CHECK(matches(what, b->grad, 1, bs, r.gb, r.gbs), "%s grad bias", what);
                }
                refs_free(&r);
                free(xd), free(wd), free(bd), free(god);
                nn_release(go), nn_release(y), nn_release(x), nn_release(w), nn_release(b);
            }
}

/* ---- gradcheck (float64 finite differences) ---- */

typedef struct {
    cfg c;
    bool same, unbatched;
} gc_ctx;

static nn_tensor *gc_conv(nn_tensor *const *x, void *ctx)
{
    const gc_ctx *g = ctx;
    int64_t stride[2] = {g->c.sh, g->c.sw}, pad[2] = {g->c.ph, g->c.pw}, dil[2] = {g->c.dh, g->c.dw};
    if (g->same) return nn_conv2d_same(x[0], x[1], g->c.bias ? x[2] : NULL, stride, dil, g->c.G);
    return nn_conv2d(x[0], x[1], g->c.bias ? x[2] : NULL, stride, pad, dil, g->c.G);
}

static void test_gradcheck(void)
{
    gc_ctx cs[] = {
        {{2, 3, 5, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true}, false, false},
        {{1, 4, 6, 5, 4, 3, 2, 2, 1, 1, 0, 1, 2, 2, true}, false, false},
        {{2, 3, 5, 5, 3, 3, 3, 1, 2, 1, 1, 2, 1, 3, true}, false, false},  /* depthwise */
        {{2, 4, 3, 4, 2, 1, 1, 1, 1, 0, 0, 1, 1, 2, false}, false, false}, /* 1x1 */
        {{1, 2, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, true}, false, true},   /* unbatched */
        {{2, 2, 5, 6, 2, 4, 2, 1, 1, 0, 0, 1, 1, 1, true}, true, false},   /* same, even kernel */
        {{1, 2, 4, 5, 2, 2, 3, 1, 1, 0, 0, 1, 2, 2, true}, true, true},    /* same, unbatched, grouped */
    };
    for (int k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++) {
        const cfg *c = &cs[k].c;
        int64_t xs[4] = {c->N, c->C, c->H, c->W}, ws[4] = {c->O, c->C / c->G, c->kh, c->kw}, bs[1] = {c->O};
        nn_tensor *in[3] = {make(cs[k].unbatched ? 3 : 4, cs[k].unbatched ? xs + 1 : xs, NN_F64, k % 2 ? PERMUTED : NARROWED),
                            make(4, ws, NN_F64, CONTIG), make(1, bs, NN_F64, CONTIG)};
        for (int i = 0; i < 3; i++) nn_requires_grad_(in[i], true);
        char name[64];
        snprintf(name, sizeof name, "conv2d gradcheck %d", k);
        CHECK(gradcheck(name, gc_conv, in, c->bias ? 3 : 2, &cs[k], 1e-6, 1e-7, 1e-6), "%s", name);
        for (int i = 0; i < 3; i++) nn_release(in[i]);
    }
}

/* ---- output shapes of the documents' nets ---- */

static nn_tensor *conv_shape(nn_tensor *x, int64_t O, int64_t k, int64_t s, int64_t p)
{
    int64_t ws[4] = {O, x->shape[1], k, k}, st[2] = {s, s}, pd[2] = {p, p}, dl[2] = {1, 1};
    nn_tensor *w = nn_zeros(4, ws, NN_F32, NN_DEVICE_CPU);
    nn_tensor *y = nn_conv2d(x, w, NULL, st, pd, dl, 1);
    nn_release(w);
    nn_release(x);
    return y;
}

static nn_tensor *pool_shape(nn_tensor *x, int64_t k, int64_t s)
{
    int64_t kk[2] = {k, k}, ss[2] = {s, s}, pd[2] = {0, 0}, dl[2] = {1, 1};
    nn_tensor *y = x ? nn_max_pool2d(x, kk, ss, pd, dl, false, NULL) : NULL;
    nn_release(x);
    return y;
}

static bool has_shape(const nn_tensor *t, int64_t n, int64_t c, int64_t h, int64_t w)
{
    return t && t->ndim == 4 && t->shape[0] == n && t->shape[1] == c && t->shape[2] == h && t->shape[3] == w;
}

static void test_net_shapes(void)
{
    int64_t s32[4] = {8, 3, 32, 32};
    nn_tensor *x = nn_zeros(4, s32, NN_F32, NN_DEVICE_CPU);
    x = conv_shape(x, 32, 3, 1, 0);
    CHECK(has_shape(x, 8, 32, 30, 30), "conv 3->32 k3 on 32x32");
    x = pool_shape(x, 2, 0);
    CHECK(has_shape(x, 8, 32, 15, 15), "maxpool 2");
    x = conv_shape(x, 64, 3, 1, 0);
    CHECK(has_shape(x, 8, 64, 13, 13), "conv 32->64 k3");
    x = pool_shape(x, 2, 0);
    CHECK(has_shape(x, 8, 64, 6, 6), "maxpool 2 again");
    nn_release(x);

    int64_t s227[4] = {1, 3, 227, 227};
    x = nn_zeros(4, s227, NN_F32, NN_DEVICE_CPU);
    x = conv_shape(x, 64, 11, 4, 2);
    CHECK(has_shape(x, 1, 64, 56, 56), "AlexNet conv1 -> 56x56");
    x = pool_shape(x, 3, 2);
    CHECK(has_shape(x, 1, 64, 27, 27), "AlexNet pool1 -> 27x27");
    x = conv_shape(x, 192, 5, 1, 2);
    CHECK(has_shape(x, 1, 192, 27, 27), "AlexNet conv2");
    x = pool_shape(x, 3, 2);
    CHECK(has_shape(x, 1, 192, 13, 13), "AlexNet pool2 -> 13x13");
    x = conv_shape(x, 384, 3, 1, 1);
    CHECK(has_shape(x, 1, 384, 13, 13), "AlexNet conv3");
    x = pool_shape(x, 3, 2);
    CHECK(has_shape(x, 1, 384, 6, 6), "AlexNet pool5 -> 6x6");
    nn_tensor *a = x ? nn_adaptive_avg_pool2d(x, 6, 6) : NULL;
    CHECK(has_shape(a, 1, 384, 6, 6), "AlexNet adaptive avgpool (6, 6)");
    nn_release(a);
    nn_release(x);

    int64_t s28[4] = {4, 1, 28, 28};
    x = nn_zeros(4, s28, NN_F32, NN_DEVICE_CPU);
    x = conv_shape(x, 6, 5, 1, 2);
    CHECK(has_shape(x, 4, 6, 28, 28), "LeNet conv1 padding 2");
    int64_t k2[2] = {2, 2}, z[2] = {0, 0};
    nn_tensor *p = x ? nn_avg_pool2d(x, k2, z, z, false, true, 0) : NULL;
    nn_release(x);
    CHECK(has_shape(p, 4, 6, 14, 14), "LeNet avgpool 2");
    x = p ? conv_shape(p, 16, 5, 1, 0) : NULL;
    CHECK(has_shape(x, 4, 16, 10, 10), "LeNet conv2");
    nn_release(x);
}

/* ---- errors ---- */

static bool fails_with(nn_tensor *r, const char *text)
{
    bool ok = r == NULL && strstr(nn_last_error(), text) != NULL;
    if (!ok) fprintf(stderr, "expected an error with \"%s\", got %s: %s\n", text, r ? "a result" : "error", r ? "" : nn_last_error());
    nn_release(r);
    return ok;
}

static nn_tensor *zeros4(int64_t a, int64_t b, int64_t c, int64_t d, nn_dtype dt)
{
    int64_t s[4] = {a, b, c, d};
    return nn_zeros(4, s, dt, NN_DEVICE_CPU);
}

static void test_errors(void)
{
    int64_t one[2] = {1, 1}, zero[2] = {0, 0}, two[2] = {2, 2};
    nn_tensor *x = zeros4(8, 4, 32, 32, NN_F32), *w = zeros4(32, 3, 3, 3, NN_F32);
    CHECK(fails_with(nn_conv2d(x, w, NULL, one, zero, one, 1),
                     "Given groups=1, weight of size [32, 3, 3, 3], expected input[8, 4, 32, 32] to have 3 channels, but got 4 channels instead"));
    nn_tensor *small = zeros4(1, 3, 2, 2, NN_F32);
    CHECK(fails_with(nn_conv2d(small, w, NULL, one, zero, one, 1),
                     "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater than actual input size"));
    CHECK(fails_with(nn_conv2d(small, w, NULL, one, zero, two, 1), "Kernel size: (5 x 5)"));
    nn_tensor *x3 = zeros4(2, 3, 8, 8, NN_F32);
    int64_t b5s[1] = {5}, b32s[1] = {32};
    nn_tensor *b5 = nn_zeros(1, b5s, NN_F32, NN_DEVICE_CPU), *b32d = nn_zeros(1, b32s, NN_F64, NN_DEVICE_CPU);
    CHECK(fails_with(nn_conv2d(x3, w, b5, one, zero, one, 1),
                     "Given weight of size [32, 3, 3, 3], expected bias to be 1-dimensional with 32 elements, but got bias of size [5] instead"));
    CHECK(fails_with(nn_conv2d(x3, w, b32d, one, zero, one, 1), "Input type (float) and bias type (double) should be the same"));
    nn_tensor *wd = zeros4(32, 3, 3, 3, NN_F64);
    CHECK(fails_with(nn_conv2d(x3, wd, NULL, one, zero, one, 1),
                     "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same"));
    CHECK(fails_with(nn_conv2d(x3, w, NULL, one, zero, one, 0), "non-positive groups is not supported"));
    CHECK(fails_with(nn_conv2d(x3, w, NULL, one, zero, one, 5), "Given groups=5, expected weight to be divisible by 5 at dimension 0"));
    CHECK(fails_with(nn_conv2d(x3, w, NULL, one, zero, one, 64), "Given groups=64, expected weight to be at least 64 at dimension 0"));
    int64_t neg[2] = {-1, 0};
    CHECK(fails_with(nn_conv2d(x3, w, NULL, one, neg, one, 1), "negative padding is not supported"));
    CHECK(fails_with(nn_conv2d(x3, w, NULL, zero, zero, one, 1), "non-positive stride is not supported"));
    CHECK(fails_with(nn_conv2d(x3, w, NULL, one, zero, zero, 1), "dilation should be greater than zero"));
    int64_t s2[2] = {3, 4};
    nn_tensor *x2 = nn_zeros(2, s2, NN_F32, NN_DEVICE_CPU);
    CHECK(fails_with(nn_conv2d(x2, w, NULL, one, zero, one, 1),
                     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 4]"));
    int64_t w3s[3] = {32, 3, 3};
    nn_tensor *w3 = nn_zeros(3, w3s, NN_F32, NN_DEVICE_CPU);
    CHECK(fails_with(nn_conv2d(x3, w3, NULL, one, zero, one, 1),
                     "Expected 3-dimensional input for 3-dimensional weight [32, 3, 3], but got 4-dimensional input of size [2, 3, 8, 8] instead"));
    CHECK(fails_with(nn_conv2d_same(x3, w, NULL, two, one, 1), "padding='same' is not supported for strided convolutions"));
    nn_tensor *xi = zeros4(2, 3, 8, 8, NN_I64), *wi = zeros4(32, 3, 3, 3, NN_I64);
    CHECK(fails_with(nn_conv2d(xi, wi, NULL, one, zero, one, 1), "not implemented for 'Long'"));
    nn_tensor *xe = zeros4(2, 3, 0, 8, NN_F32);
    int64_t p2[2] = {2, 2};
    CHECK(fails_with(nn_conv2d(xe, w, NULL, one, p2, one, 1), "Only zero batch or zero channel inputs are supported, but got input shape: [2, 3, 0, 8]"));
    /* zero batch is fine */
    nn_tensor *x0 = zeros4(0, 3, 8, 8, NN_F32), *y0 = nn_conv2d(x0, w, NULL, one, zero, one, 1);
    CHECK(has_shape(y0, 0, 32, 6, 6), "zero batch");
    nn_release(y0), nn_release(x0);
    nn_release(xe), nn_release(xi), nn_release(wi), nn_release(w3), nn_release(x2), nn_release(wd), nn_release(b5), nn_release(b32d);
    nn_release(x3), nn_release(small), nn_release(x), nn_release(w);
}

/* Backward twice without retain_graph is PyTorch's error; an in-place change of a saved input too. */
static void test_graph_rules(void)
{
    int64_t one[2] = {1, 1}, zero[2] = {0, 0};
    nn_tensor *x = zeros4(1, 2, 4, 4, NN_F64), *w = zeros4(3, 2, 3, 3, NN_F64);
    nn_requires_grad_(w, true);
    nn_tensor *y = nn_conv2d(x, w, NULL, one, zero, one, 1);
    nn_tensor *g = nn_ones(y->ndim, y->shape, NN_F64, NN_DEVICE_CPU);
    CHECK(nn_backward(y, g, true) == NN_OK, "%s", nn_last_error());
    CHECK(nn_backward(y, g, false) == NN_OK, "%s", nn_last_error());
    CHECK(nn_backward(y, g, false) != NN_OK && strstr(nn_last_error(), "a second time"), "second backward: %s", nn_last_error());
    nn_release(y);
    y = nn_conv2d(x, w, NULL, one, zero, one, 1);
    nn_bump_version(x);
    CHECK(nn_backward(y, g, false) != NN_OK && strstr(nn_last_error(), "modified by an inplace operation"), "in-place: %s", nn_last_error());
    nn_release(y);
    /* no grad mode: no node */
    nn_set_grad_enabled(false);
    y = nn_conv2d(x, w, NULL, one, zero, one, 1);
    CHECK(y && !y->grad_fn && !y->requires_grad, "no_grad records nothing");
    nn_set_grad_enabled(true);
    nn_release(y), nn_release(g), nn_release(x), nn_release(w);
}

int main(void)
{
    test_forward_backward();
    test_same();
    test_gradcheck();
    test_net_shapes();
    test_errors();
    test_graph_rules();
    return CHECK_REPORT();
}
