/* CUDA softmax / log_softmax, nll_loss, index_select / index_add_ / embedding
 * and the optimizer steps against the CPU engine, through the public frontends
 * (engine/nnfunc.h, engine/optim.h): the same inputs on the CPU and on cuda:0,
 * forward and backward (nn_backward), several shapes and dims, contiguous,
 * transposed, narrowed and expanded inputs, every dtype an op takes; the
 * optimizers run several steps over lists of parameters of different sizes,
 * layouts and dtypes. Results must agree within the dtype's tolerance.
 *
 * A case is one op on one dtype/layout; the last line counts cases:
 * "N passed, N failed, N skipped". Without a GPU every case is skipped.
 * NNREPL_TEST_DEVICE=cpu runs the harness (harness.h) with the CPU standing in for the GPU;
 * NNREPL_TEST_FILTER=a,b runs only the cases whose names contain a or b. */
#include "harness.h"
#include "nnfunc.h"
#include "optim.h"

/* ---- inputs ---- */

static const nn_dtype ALL[] = {NN_F32, NN_F64, NN_F16, NN_BF16, NN_I64, NN_I32, NN_I16, NN_I8, NN_U8, NN_BOOL};
#define NALL 10
#define NFLOAT 4 /* ALL[0..4) */

static void put(char *p, nn_dtype dt)
{
    if (nn_dtype_is_float(dt)) nn_store_f64(p, dt, -3 + 6 * urand());
    else if (dt == NN_BOOL) nn_store_i64(p, dt, irand(0, 1));
    else if (dt == NN_U8) nn_store_i64(p, dt, irand(0, 60));
    else nn_store_i64(p, dt, irand(-20, 20));
}

static nn_tensor *mk(nn_dtype dt, int nd, const int64_t *s)
{
    nn_tensor *t = nn_empty(nd, s, dt, CPU);
    if (!t) return NULL;
    int64_t n = nn_numel(t);
    size_t es = nn_dtype_size(dt);
    char *p = nn_data(t);
    for (int64_t i = 0; i < n; i++) put(p + i * es, dt);
    return t;
}

static pair make(nn_dtype dt, int nd, const int64_t *s, int layout)
{
    int64_t bs[NN_MAX_DIMS];
    layout = fix_layout(layout, nd);
    base_shape(layout, nd, s, bs);
    return share(mk(dt, nd, bs), layout, nd, s);
}

/* int64/int32 indices in [lo, hi] (n of them), contiguous or with stride 2; n < 0: a 0-dim index */
static pair make_index(nn_dtype dt, int64_t n, int64_t lo, int64_t hi, bool strided)
{
    int64_t m = n < 0 ? 1 : strided ? 2 * n : n;
    nn_tensor *base = nn_empty(n < 0 ? 0 : 1, &m, dt, CPU);
    for (int64_t i = 0; i < m; i++) nn_store_i64((char *)nn_data(base) + i * nn_dtype_size(dt), dt, irand(lo, hi));
    nn_tensor *gbase = to_dev(base);
    pair p;
    if (strided) {
        int64_t st = 2;
        p.c = nn_make_view(base, 1, &n, &st, 0);
        p.g = nn_make_view(gbase, 1, &n, &st, 0);
    } else {
        p.c = nn_retain(base);
        p.g = nn_retain(gbase);
    }
    nn_release(base);
    nn_release(gbase);
    return p;
}

/* ---- comparing ---- */

/* x.grad on both sides */
static void check_grads(const char *what, pair x, double scale)
{
    if (!x.c->grad || !x.g->grad) {
        fail("%s: no gradient (cpu %p, cuda %p): %s", what, (void *)x.c->grad, (void *)x.g->grad, nn_last_error());
        return;
    }
    check_tol(what, x.c->grad, x.g->grad, x.c->dtype, scale);
}

static void sync_gpu(void)
{
    if (!self_test && nn_gpu->synchronize(DEV.index)) fail("synchronize: %s", nn_last_error());
}

/* Wait for the device; a kernel's deferred error comes out here (true) or from the next call. */
static bool sync_reports_error(void) { return !self_test && nn_gpu->synchronize(DEV.index); }

/* ---- softmax / log_softmax ---- */

typedef struct { int nd; int64_t s[4]; int dim; } sm_shape;

static nn_tensor *softmax_of(bool log_, nn_tensor *x, int dim, nn_dtype dt)
{
    return log_ ? nn_log_softmax(x, dim, dt) : nn_softmax(x, dim, dt);
}

static void softmax_case(bool log_, nn_dtype dt, sm_shape sh, int layout)
{
    const char *fn = log_ ? "log_softmax" : "softmax";
    char b[160];
    layout = fix_layout(layout, sh.nd);
    if (!begin("%s %s %s dim %d %s", fn, nn_dtype_name(dt), nn_shape_str(b, sh.nd, sh.s), sh.dim, LNAME[layout])) return;
    pair x = make(dt, sh.nd, sh.s, layout);
    nn_tensor *c = softmax_of(log_, x.c, sh.dim, NN_DTYPE_NONE);
    if (!c) save_err();
    nn_tensor *g = softmax_of(log_, x.g, sh.dim, NN_DTYPE_NONE);
    check_dt(fn, c, g);
    /* backward on its own, with a gradient of another layout */
    if (c && g) {
        pair go = make(dt, sh.nd, sh.s, (layout + 1) % NLAYOUT == L_EXPAND ? L_CONTIG : (layout + 1) % NLAYOUT);
        nn_tensor *bc = log_ ? nn_log_softmax_backward(go.c, c, sh.dim) : nn_softmax_backward(go.c, c, sh.dim);
        if (!bc) save_err();
        nn_tensor *bg = log_ ? nn_log_softmax_backward(go.g, g, sh.dim) : nn_softmax_backward(go.g, g, sh.dim);
        check_tol(log_ ? "log_softmax_backward" : "softmax_backward", bc, bg, dt, 2);
        nn_release(bc), nn_release(bg);
        pair_free(go);
    }
    nn_release(c), nn_release(g);
    pair_free(x);
    end();
}

static void softmax_autograd_case(bool log_, nn_dtype dt, sm_shape sh, int layout)
{
    const char *fn = log_ ? "log_softmax" : "softmax";
    char b[160];
    layout = fix_layout(layout, sh.nd);
    if (layout == L_EXPAND) layout = L_CONTIG;
    if (!begin("%s autograd %s %s dim %d %s", fn, nn_dtype_name(dt), nn_shape_str(b, sh.nd, sh.s), sh.dim, LNAME[layout])) return;
    pair x = make(dt, sh.nd, sh.s, layout);
    nn_requires_grad_(x.c, true);
    nn_requires_grad_(x.g, true);
    nn_tensor *c = softmax_of(log_, x.c, sh.dim, NN_DTYPE_NONE), *g = softmax_of(log_, x.g, sh.dim, NN_DTYPE_NONE);
    pair go = make(dt, sh.nd, sh.s, L_TRANS);
    if (!c || !g) fail("forward: %s", nn_last_error());
    else if (nn_backward(c, go.c, false) || nn_backward(g, go.g, false)) fail("backward: %s", nn_last_error());
    else check_grads("x.grad", x, 2);
    nn_release(c), nn_release(g);
    pair_free(go);
    pair_free(x);
    end();
}

/* rows of a [rows, n] tensor follow patterns of infinities and NaN; softmax over dim 1, and over
 * dim 0 of the transpose (a strided dim) */
static void softmax_special_case(bool log_, int64_t rows, int64_t n, bool transposed)
{
    const char *fn = log_ ? "log_softmax" : "softmax";
    if (!begin("%s special values [%lld, %lld]%s", fn, (long long)rows, (long long)n, transposed ? " transposed" : "")) return;
    int64_t s[2] = {rows, n};
    nn_tensor *base = mk(NN_F32, 2, s);
    float *p = nn_data(base);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            float *v = &p[r * n + j];
            switch (r % 7) {
            case 1: if (j % 3 == 0) *v = -INFINITY; break;
            case 2: *v = -INFINITY; break;
            case 3: if (j == n / 2) *v = INFINITY; break;
            case 4: if (j == n - 1) *v = NAN; break;
            case 5: if (j == 0 || j == n - 1) *v = INFINITY; break;
            case 6: if (j != n / 3) *v = -INFINITY; break;
            default: break;
            }
        }
    pair x = share(base, L_CONTIG, 2, s);
    if (transposed) {
        nn_tensor *tc = nn_transpose(x.c, 0, 1), *tg = nn_transpose(x.g, 0, 1);
        pair_free(x);
        x.c = tc, x.g = tg;
    }
    int dim = transposed ? 0 : 1;
    nn_tensor *c = softmax_of(log_, x.c, dim, NN_DTYPE_NONE);
    if (!c) save_err();
    nn_tensor *g = softmax_of(log_, x.g, dim, NN_DTYPE_NONE);
    check_dt(fn, c, g);
    nn_release(c), nn_release(g);
    pair_free(x);
    end();
}

/* softmax(x, dtype=...): the input read as another dtype */
static void softmax_cast_case(bool log_, nn_dtype in, nn_dtype out, int layout)
{
    const char *fn = log_ ? "log_softmax" : "softmax";
    if (!begin("%s %s -> %s %s", fn, nn_dtype_name(in), nn_dtype_name(out), LNAME[layout])) return;
    int64_t s[2] = {37, 300};
    pair x = make(in, 2, s, layout);
    for (int dim = 0; dim < 2; dim++) {
        nn_tensor *c = softmax_of(log_, x.c, dim, out);
        if (!c) save_err();
        nn_tensor *g = softmax_of(log_, x.g, dim, out);
        check_dt(fn, c, g);
        nn_release(c), nn_release(g);
    }
    pair_free(x);
    end();
}

static void test_softmax(void)
{
    const sm_shape shapes[] = {
        {2, {13, 37}, 1},    {2, {13, 37}, 0},   {2, {13, 37}, -1},       {3, {4, 5, 6}, 0},     {3, {4, 5, 6}, 1},
        {3, {4, 5, 6}, 2},   {2, {7, 1000}, 1},  {2, {5, 700}, -1},       {2, {3, 1025}, 1},     {2, {2, 5000}, 1},
        {2, {64, 3}, 1},     {2, {33, 2}, 1},    {4, {3, 4, 8, 8}, 1},    {4, {4, 10, 32, 32}, 1}, {2, {6000, 3}, 0},
        {1, {1}, 0},         {1, {100}, 0},      {0, {0}, 0},             {2, {0, 5}, 1},        {2, {5, 0}, 1},
        {2, {1, 1}, 0},      {3, {2, 1, 70}, 2}, {2, {3000, 40}, 0},
        /* whole 16-byte vectors: several rows a warp, one to sixteen vectors a lane */
        {2, {9, 8}, 1},      {2, {19, 24}, 1},   {2, {37, 128}, 1},       {3, {3, 5, 512}, 2},   {2, {4, 1024}, 1},
    };
    for (int log_ = 0; log_ < 2; log_++)
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
            for (int j = 0; j < NFLOAT; j++)
                for (int l = 0; l < NLAYOUT; l++) {
                    if (shapes[k].nd < 2 && l != L_CONTIG && l != L_NARROW) continue;
                    softmax_case(log_, ALL[j], shapes[k], l);
                }
    const sm_shape ag[] = {{2, {13, 37}, 1}, {3, {4, 5, 6}, 1}, {2, {3, 1500}, 1}, {4, {4, 10, 32, 32}, 1}, {0, {0}, 0}};
    for (int log_ = 0; log_ < 2; log_++)
        for (size_t k = 0; k < sizeof ag / sizeof *ag; k++)
            for (int j = 0; j < NFLOAT; j++)
                for (int l = 0; l < 3; l++) softmax_autograd_case(log_, ALL[j], ag[k], l);
    for (int log_ = 0; log_ < 2; log_++) {
        softmax_special_case(log_, 21, 40, false);   /* warp rows */
        softmax_special_case(log_, 21, 3000, false); /* block rows */
        softmax_special_case(log_, 2100, 40, true);  /* thread per row, strided */
        softmax_special_case(log_, 21, 40, true);    /* warp rows, strided */
        softmax_special_case(log_, 7, 1500, true);   /* block rows, strided */
    }
    const nn_dtype casts[][2] = {{NN_F16, NN_F32}, {NN_BF16, NN_F32}, {NN_F32, NN_F64}, {NN_F64, NN_F32}, {NN_F32, NN_F16},
                                 {NN_I64, NN_F32}, {NN_I32, NN_F64}, {NN_U8, NN_F32},  {NN_BOOL, NN_F32}, {NN_I64, NN_BF16},
                                 {NN_I8, NN_F32},  {NN_I16, NN_F64}};
    for (int log_ = 0; log_ < 2; log_++)
        for (size_t k = 0; k < sizeof casts / sizeof *casts; k++)
            for (int l = 0; l < 2; l++) softmax_cast_case(log_, casts[k][0], casts[k][1], l ? L_TRANS : L_CONTIG);
    /* errors: an integer result dtype; a dim out of range */
    if (begin("softmax errors")) {
        int64_t s[2] = {3, 4};
        pair x = make(NN_F32, 2, s, L_CONTIG);
        nn_tensor *c = nn_softmax(x.c, 0, NN_I64);
        save_err();
        nn_tensor *g = nn_softmax(x.g, 0, NN_I64);
        check("softmax(int64)", c, g, 0, 0);
        c = nn_log_softmax(x.c, 2, NN_DTYPE_NONE);
        save_err();
        g = nn_log_softmax(x.g, 2, NN_DTYPE_NONE);
        check("log_softmax(dim 2)", c, g, 0, 0);
        pair_free(x);
        end();
    }
}

/* ---- nll_loss ---- */

typedef struct { int nd; int64_t s[4]; } shape;

/* targets for input shape s (class dim 1, or 0 for 1-D), a fraction of them ignore_index, a few maybe bad */
static pair make_target(int nd, const int64_t *s, int64_t ignore, double pignore, bool strided, int64_t bad)
{
    int64_t ts[NN_MAX_DIMS] = {0}, tn = 0, C = nd == 1 ? s[0] : s[1], n = 1;
    for (int d = 0; d < nd; d++)
        if (d != (nd == 1 ? 0 : 1)) ts[tn++] = s[d], n *= s[d];
    int64_t bs[NN_MAX_DIMS];
    memcpy(bs, ts, sizeof bs);
    if (strided && tn) bs[tn - 1] *= 2;
    nn_tensor *base = nn_empty(tn, bs, NN_I64, CPU);
    int64_t *p = nn_data(base), m = nn_numel(base);
    for (int64_t i = 0; i < m; i++) p[i] = urand() < pignore ? ignore : irand(0, C - 1);
    if (bad && m) p[m / 2 - (strided && (m / 2) % 2)] = bad; /* an element the view sees */
    if (!strided || !tn) return share(base, L_CONTIG, tn, ts);
    int64_t st[NN_MAX_DIMS];
    nn_contiguous_strides(tn, bs, st);
    st[tn - 1] = 2;
    nn_tensor *gbase = to_dev(base);
    pair r = {nn_make_view(base, tn, ts, st, 0), nn_make_view(gbase, tn, ts, st, 0)};
    nn_release(base), nn_release(gbase);
    (void)n;
    return r;
}

/* an [N, C, ...] input laid out as [C, N, ...] transposed back, or narrowed */
static pair make_logp(nn_dtype dt, int nd, const int64_t *s, int layout)
{
    if (layout == L_TRANS && nd >= 2) {
        int64_t bs[NN_MAX_DIMS];
        memcpy(bs, s, sizeof(int64_t) * nd);
        bs[0] = s[1], bs[1] = s[0];
        pair b = share(mk(dt, nd, bs), L_CONTIG, nd, bs);
        pair r = {nn_transpose(b.c, 0, 1), nn_transpose(b.g, 0, 1)};
        pair_free(b);
        return r;
    }
    return make(dt, nd, s, layout);
}

static const char *const RED[] = {"none", "mean", "sum"};

/* nll_loss of log-probabilities, or the fused cross_entropy of logits: the same arguments */
typedef nn_tensor *(*class_loss)(nn_tensor *, nn_tensor *, nn_tensor *, int, int64_t);
static const struct {
    const char *name;
    class_loss f;
} LOSSES[] = {{"nll_loss", nn_nll_loss}, {"cross_entropy", nn_cross_entropy}};

static void nll_case(int fn, nn_dtype dt, shape sh, int layout, bool weighted, int red, int64_t ignore, bool strided_target)
{
    char b[160];
    class_loss f = LOSSES[fn].f;
    if (!begin("%s %s %s %s%s reduction %s ignore %lld%s", LOSSES[fn].name, nn_dtype_name(dt), nn_shape_str(b, sh.nd, sh.s), LNAME[layout],
               weighted ? " weighted" : "", RED[red], (long long)ignore, strided_target ? " strided target" : ""))
        return;
    pair x = make_logp(dt, sh.nd, sh.s, layout);
    pair t = make_target(sh.nd, sh.s, ignore, 0.2, strided_target, 0);
    int64_t C = sh.nd == 1 ? sh.s[0] : sh.s[1];
    pair w = {NULL, NULL};
    if (weighted) {
        nn_tensor *wb = nn_empty(1, &C, dt, CPU);
        for (int64_t i = 0; i < C; i++) nn_store_f64((char *)nn_data(wb) + i * nn_dtype_size(dt), dt, 0.25 + 2 * urand());
        w = share(wb, L_CONTIG, 1, &C);
    }
    nn_requires_grad_(x.c, true);
    nn_requires_grad_(x.g, true);
    nn_tensor *c = f(x.c, t.c, w.c, red, ignore);
    if (!c) save_err();
    nn_tensor *g = f(x.g, t.g, w.g, red, ignore);
    /* sums of many terms: a little more room in the low-precision types */
    double scale = dt == NN_F32 && red ? 10 : 2;
    check_tol("loss", c, g, dt, scale);
    if (c && g) {
        pair go = {NULL, NULL};
        if (red == 0) go = make(dt, c->ndim, c->shape, c->ndim >= 2 ? L_TRANS : L_CONTIG);
        if (nn_backward(c, go.c, false) || nn_backward(g, go.g, false)) fail("backward: %s", nn_last_error());
        else check_grads("x.grad", x, 2);
        pair_free(go);
    }
    nn_release(c), nn_release(g);
    pair_free(x), pair_free(t), pair_free(w);
    end();
}

static void class_loss_cases(int fn)
{
    class_loss f = LOSSES[fn].f;
    const char *name = LOSSES[fn].name;
    const shape shapes[] = {{2, {64, 10}}, {1, {10}}, {4, {4, 5, 3, 7}}, {2, {100000, 7}}, {3, {8, 5, 2000}}, {2, {0, 5}}, {2, {1, 1}}};
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
        for (int j = 0; j < NFLOAT; j++)
            for (int red = 0; red < 3; red++)
                for (int v = 0; v < 4; v++) {
                    int layout = v == 1 ? L_TRANS : v == 2 ? L_NARROW : L_CONTIG;
                    nll_case(fn, ALL[j], shapes[k], layout, v & 1, red, v == 3 ? 2 : -100, v == 2);
                }
    /* every target ignored: mean is nan */
    if (begin("%s every target ignored", name)) {
        int64_t s[2] = {6, 4};
        pair x = make(NN_F32, 2, s, L_CONTIG), t = make_target(2, s, -100, 1.0, false, 0);
        for (int red = 0; red < 3; red++) {
            nn_tensor *c = f(x.c, t.c, NULL, red, -100), *g = f(x.g, t.g, NULL, red, -100);
            check("loss", c, g, 0, 0);
            nn_release(c), nn_release(g);
        }
        pair_free(x), pair_free(t);
        end();
    }
    /* a 0-dim target on the CPU with a [C] input on the GPU */
    if (begin("%s [C] input, 0-dim CPU target", name)) {
        int64_t C = 12;
        pair x = make(NN_F32, 1, &C, L_CONTIG);
        nn_tensor *t = nn_empty(0, NULL, NN_I64, CPU);
        *(int64_t *)nn_data(t) = 5;
        for (int red = 0; red < 3; red++) {
            nn_tensor *c = f(x.c, t, NULL, red, -100), *g = f(x.g, t, NULL, red, -100);
            check("loss", c, g, 1e-6, 1e-6);
            nn_release(c), nn_release(g);
        }
        *(int64_t *)nn_data(t) = 12; /* out of range: an error now, as on the CPU */
        nn_tensor *c = f(x.c, t, NULL, 1, -100);
        save_err();
        nn_tensor *g = f(x.g, t, NULL, 1, -100);
        check("target 12", c, g, 0, 0);
        nn_release(t);
        pair_free(x);
        end();
    }
    /* a device target out of range: reported by the next call (an error at once on the CPU stand-in) */
    if (begin("%s target out of bounds on the GPU", name)) {
        int64_t s[2] = {50, 10};
        pair x = make(NN_F32, 2, s, L_CONTIG), t = make_target(2, s, -100, 0, false, 13), ok = make_target(2, s, -100, 0, false, 0);
        nn_tensor *c = f(x.c, t.c, NULL, 1, -100);
        if (c || !strstr(nn_last_error(), "Target 13 is out of bounds")) fail("cpu: %s", c ? "no error" : nn_last_error());
        nn_release(c);
        nn_tensor *g = f(x.g, t.g, NULL, 1, -100);
        if (g) {
            nn_release(g);
            g = sync_reports_error() ? NULL : f(x.g, ok.g, NULL, 1, -100);
        }
        if (g || !strstr(nn_last_error(), "Target 13 is out of bounds")) fail("cuda: %s", g ? "no error" : nn_last_error());
        nn_release(g);
        g = f(x.g, ok.g, NULL, 1, -100); /* reported once */
        if (!g) fail("after the error: %s", nn_last_error());
        nn_release(g);
        pair_free(x), pair_free(t), pair_free(ok);
        end();
    }
}

/* nll_loss and the fused cross_entropy (log_softmax + nll_loss in one kernel each way) */
static void test_nll_loss(void)
{
    for (int fn = 0; fn < 2; fn++) class_loss_cases(fn);
}

/* ---- index_select / index_add_ / embedding ---- */

static void select_case(nn_dtype dt, shape sh, int dim, int layout, nn_dtype idt, int64_t nidx, bool strided)
{
    char b[160];
    layout = fix_layout(layout, sh.nd);
    if (!begin("index_select %s %s dim %d %s, %s index [%lld]%s", nn_dtype_name(dt), nn_shape_str(b, sh.nd, sh.s), dim, LNAME[layout],
               nn_dtype_name(idt), (long long)nidx, strided ? " strided" : ""))
        return;
    pair x = make(dt, sh.nd, sh.s, layout);
    int64_t size = sh.nd ? sh.s[dim < 0 ? dim + sh.nd : dim] : 1;
    pair ix = make_index(idt, nidx, 0, size - 1, strided);
    nn_tensor *c = nn_index_select(x.c, dim, ix.c);
    if (!c) save_err();
    nn_tensor *g = nn_index_select(x.g, dim, ix.g);
    check("index_select", c, g, 0, 0);
    nn_release(c), nn_release(g);
    if (nn_dtype_is_float(dt) && layout != L_EXPAND) { /* backward: index_add_ of the gradient, repeats accumulate */
        nn_requires_grad_(x.c, true);
        nn_requires_grad_(x.g, true);
        c = nn_index_select(x.c, dim, ix.c);
        g = nn_index_select(x.g, dim, ix.g);
        if (!c || !g) fail("forward: %s", nn_last_error());
        else {
            pair go = make(dt, c->ndim, c->shape, c->ndim >= 2 ? L_TRANS : L_CONTIG);
            if (nn_backward(c, go.c, false) || nn_backward(g, go.g, false)) fail("backward: %s", nn_last_error());
            else check_grads("x.grad", x, 4.0 * (1 + nidx / size)); /* sums of repeats, in another order */
            pair_free(go);
        }
        nn_release(c), nn_release(g);
    }
    pair_free(x), pair_free(ix);
    end();
}

static void add_case(nn_dtype dt, shape sh, int dim, int layout, int slayout, nn_dtype idt, int64_t nidx, double alpha)
{
    char b[160];
    layout = fix_layout(layout, sh.nd);
    if (!begin("index_add_ %s %s dim %d self %s source %s, %s index [%lld] alpha %g", nn_dtype_name(dt), nn_shape_str(b, sh.nd, sh.s), dim,
               LNAME[layout], LNAME[slayout], nn_dtype_name(idt), (long long)nidx, alpha))
        return;
    pair self = make(dt, sh.nd, sh.s, layout);
    int64_t ss[NN_MAX_DIMS] = {0};
    memcpy(ss, sh.s, sizeof sh.s);
    if (sh.nd) ss[dim] = nidx;
    pair src = make(dt, sh.nd, ss, fix_layout(slayout, sh.nd));
    int64_t size = sh.nd ? sh.s[dim] : 1;
    pair ix = make_index(idt, sh.nd ? nidx : -1, 0, size - 1, false);
    nn_status sc = nn_index_add_(self.c, dim, ix.c, src.c, alpha);
    if (sc) save_err();
    nn_status sg = nn_index_add_(self.g, dim, ix.g, src.g, alpha);
    if (sc || sg) {
        if (!sc) fail("the GPU failed: %s", nn_last_error());
        else if (!sg) fail("the CPU failed (%s) but the GPU did not", cpu_err);
        else if (strcmp(cpu_err, nn_last_error())) fail("errors differ: cpu '%s', cuda '%s'", cpu_err, nn_last_error());
    } else {
        /* repeated indices add in another order (and float16/bfloat16 round alpha * source first) */
        check_tol("self", self.c, self.g, dt, 8.0 * (1 + nidx / size));
    }
    pair_free(self), pair_free(src), pair_free(ix);
    end();
}

static void embedding_case(nn_dtype dt, int64_t V, int64_t D, nn_dtype idt, int64_t padding_idx)
{
    if (!begin("embedding %s [%lld, %lld] %s indices padding_idx %lld", nn_dtype_name(dt), (long long)V, (long long)D, nn_dtype_name(idt),
               (long long)padding_idx))
        return;
    int64_t ws[2] = {V, D}, is[2] = {4, 6};
    pair w = make(dt, 2, ws, L_CONTIG);
    nn_tensor *ib = nn_empty(2, is, idt, CPU);
    for (int64_t i = 0; i < 24; i++) nn_store_i64((char *)nn_data(ib) + i * nn_dtype_size(idt), idt, i % 5 == 0 ? 3 : irand(0, V - 1));
    pair ix = share(ib, L_CONTIG, 2, is);
    nn_requires_grad_(w.c, true);
    nn_requires_grad_(w.g, true);
    nn_tensor *c = nn_embedding(w.c, ix.c, padding_idx);
    if (!c) save_err();
    nn_tensor *g = nn_embedding(w.g, ix.g, padding_idx);
    check("embedding", c, g, 0, 0);
    if (c && g) {
        pair go = make(dt, c->ndim, c->shape, L_CONTIG);
        if (nn_backward(c, go.c, false) || nn_backward(g, go.g, false)) fail("backward: %s", nn_last_error());
        else check_grads("weight.grad", w, 16);
        pair_free(go);
    }
    nn_release(c), nn_release(g);
    pair_free(w), pair_free(ix);
    end();
}

static void test_index(void)
{
    const struct { shape sh; int dim; int64_t nidx; } sel[] = {
        {{2, {7, 9}}, 0, 12},   {{2, {7, 9}}, 1, 12},    {{2, {7, 9}}, -1, 3},      {{3, {4, 5, 6}}, 0, 7}, {{3, {4, 5, 6}}, 1, 9},
        {{3, {4, 5, 6}}, 2, 4}, {{1, {10}}, 0, 15},     {{2, {50, 64}}, 0, 40},    {{2, {30, 33}}, 0, 25}, {{2, {1000, 128}}, 0, 5000},
        {{2, {6, 40}}, 1, 0},   {{3, {3, 20, 16}}, 1, 30}, {{2, {0, 4}}, 1, 3},
    };
    for (size_t k = 0; k < sizeof sel / sizeof *sel; k++)
        for (int j = 0; j < NALL; j++)
            for (int l = 0; l < NLAYOUT; l++) {
                bool big = sel[k].sh.s[0] == 1000;
                if (big && l) continue;
                select_case(ALL[j], sel[k].sh, sel[k].dim, l, l == 1 ? NN_I32 : NN_I64, sel[k].nidx, l == 2);
            }
    /* a 0-dim index (on the device, and on the CPU), a 0-dim input */
    for (int j = 0; j < NALL; j++) {
        if (!begin("index_select 0-dim index, 0-dim input %s", nn_dtype_name(ALL[j]))) continue;
        int64_t s[2] = {5, 6};
        pair x = make(ALL[j], 2, s, L_TRANS), x0 = make(ALL[j], 0, s, L_CONTIG);
        pair ix = make_index(NN_I64, -1, 0, 4, false), i0 = make_index(NN_I32, -1, 0, 0, false);
        for (int dim = 0; dim < 2; dim++) {
            nn_tensor *c = nn_index_select(x.c, dim, ix.c), *g = nn_index_select(x.g, dim, ix.g), *h = nn_index_select(x.g, dim, ix.c);
            check("device index", c, g, 0, 0);
            check("CPU index", c, h, 0, 0);
            nn_release(c), nn_release(g), nn_release(h);
        }
        nn_tensor *c = nn_index_select(x0.c, 0, i0.c), *g = nn_index_select(x0.g, 0, i0.g);
        check("0-dim input", c, g, 0, 0);
        nn_release(c), nn_release(g);
        pair_free(x), pair_free(x0), pair_free(ix), pair_free(i0);
        end();
    }

    const struct { shape sh; int dim; int64_t nidx; } add[] = {
        {{2, {7, 9}}, 0, 12}, {{2, {7, 9}}, 1, 5}, {{3, {4, 5, 6}}, 1, 9}, {{2, {10, 64}}, 0, 30}, {{2, {10, 65}}, 0, 30},
        {{1, {10}}, 0, 25},   {{0, {0}}, 0, 1},    {{2, {300, 16}}, 0, 20000},
    };
    for (size_t k = 0; k < sizeof add / sizeof *add; k++)
        for (int j = 0; j < NALL; j++)
            for (int v = 0; v < 5; v++) {
                nn_dtype dt = ALL[j];
                int layout = v == 1 ? L_TRANS : v == 2 ? L_NARROW : v == 4 ? L_EXPAND : L_CONTIG;
                int slayout = v == 3 ? L_EXPAND : v == 1 ? L_TRANS : L_CONTIG;
                double alpha = dt == NN_BOOL ? 1 : v == 2 ? 1 : nn_dtype_is_float(dt) ? 2.5 : 3;
                if (add[k].nidx > 1000 && (v || dt == NN_F16 || dt == NN_BF16 || nn_dtype_size(dt) < 4)) continue;
                add_case(dt, add[k].sh, add[k].dim, layout, slayout, v == 2 ? NN_I32 : NN_I64, add[k].nidx, alpha);
            }
    for (int j = 0; j < NFLOAT; j++) {
        embedding_case(ALL[j], 20, 16, NN_I64, 3);
        embedding_case(ALL[j], 50, 7, NN_I32, -1);
        embedding_case(ALL[j], 9, 130, NN_I64, 0);
    }

    /* out of range: a CPU 0-dim index fails at once; a device index is reported by the next call */
    if (begin("index_select / index_add_ index out of range")) {
        int64_t s[2] = {5, 6};
        pair x = make(NN_F32, 2, s, L_CONTIG);
        nn_tensor *i0 = nn_scalar_i64(7);
        i0->wrapped_number = false;
        nn_tensor *c = nn_index_select(x.c, 0, i0);
        save_err();
        nn_tensor *g = nn_index_select(x.g, 0, i0);
        check("CPU index 7", c, g, 0, 0);
        pair bad = make_index(NN_I64, 4, 5, 5, false), ok = make_index(NN_I64, 4, 0, 4, false);
        g = nn_index_select(x.g, 0, bad.g);
        if (g) {
            nn_release(g);
            g = sync_reports_error() ? NULL : nn_index_select(x.g, 0, ok.g);
        }
        if (g || !strstr(nn_last_error(), "index out of range in self")) fail("index_select: %s", g ? "no error" : nn_last_error());
        nn_release(g);
        int64_t s4[2] = {4, 6};
        pair src = make(NN_F32, 2, s4, L_CONTIG);
        nn_status st = nn_index_add_(x.g, 0, bad.g, src.g, 1);
        if (!st) st = sync_reports_error() ? NN_ERR_RUNTIME : nn_index_add_(x.g, 0, ok.g, src.g, 1);
        if (!st || !strstr(nn_last_error(), "index out of range in self")) fail("index_add_: %s", !st ? "no error" : nn_last_error());
        g = nn_index_select(x.g, 0, ok.g);
        if (!g) fail("after the error: %s", nn_last_error());
        nn_release(g), nn_release(i0);
        pair_free(x), pair_free(bad), pair_free(ok), pair_free(src);
        end();
    }
}

/* ---- optimizers ---- */

enum { SGD, ADAM, RMSPROP, ADAGRAD };
static const char *const ALG[] = {"sgd", "adam", "rmsprop", "adagrad"};

typedef struct {
    int alg;
    const char *label;
    nn_sgd_opts sgd;
    nn_adam_opts adam;
    nn_rmsprop_opts rms;
    nn_adagrad_opts ada;
} config;

#define NPARAM 9
typedef struct { int nd; int64_t s[3]; int play, glay; } pspec;
/* param and gradient layouts: contiguous, large (several chunks), both transposed (a dense
 * permuted layout), transposed param with contiguous grad, narrowed (not dense), 0-dim, empty,
 * no gradient, expanded gradient */
static const pspec PARAMS[NPARAM] = {
    {2, {3, 5}, L_CONTIG, L_CONTIG}, {1, {100003}, L_CONTIG, L_CONTIG}, {2, {7, 11}, L_TRANS, L_TRANS},
    {2, {6, 4}, L_TRANS, L_CONTIG},  {2, {5, 9}, L_NARROW, L_CONTIG},   {0, {0}, L_CONTIG, L_CONTIG},
    {2, {0, 4}, L_CONTIG, L_CONTIG}, {2, {5, 5}, L_CONTIG, L_CONTIG},   {3, {2, 3, 4}, L_CONTIG, L_EXPAND},
};

typedef struct {
    int n;
    pair p[64], g[64];
    nn_tensor *st[2][4][64]; /* [side][role][param] */
} plist;

static nn_status run_step(const config *cfg, int side, plist *L, nn_tensor **grads, const nn_tensor *found_inf, const nn_tensor *grad_scale)
{
    config c = *cfg;
    c.sgd.found_inf = c.adam.found_inf = c.rms.found_inf = c.ada.found_inf = found_inf;
    c.sgd.grad_scale = c.adam.grad_scale = c.rms.grad_scale = c.ada.grad_scale = grad_scale;
    nn_tensor *ps[64];
    for (int k = 0; k < L->n; k++) ps[k] = side ? L->p[k].g : L->p[k].c;
    nn_tensor **st0 = L->st[side][0], **st1 = L->st[side][1], **st2 = L->st[side][2], **st3 = L->st[side][3];
    switch (c.alg) {
    case SGD: return nn_sgd_step(L->n, ps, grads, st0, &c.sgd);
    case ADAM: return nn_adam_step(L->n, ps, grads, st0, st1, st2, st3, &c.adam);
    case RMSPROP: return nn_rmsprop_step(L->n, ps, grads, st0, st1, st2, st3, &c.rms);
    default: return nn_adagrad_step(L->n, ps, grads, st0, st3, &c.ada);
    }
}

/* GradScaler's found_inf for a step: 1 on step 1 (skipped), else 0 */
static nn_tensor *found_inf_for(int step, nn_device dev)
{
    return nn_full(0, NULL, step == 1 ? 1 : 0, NN_F32, dev);
}

/* dts: the dtype of param k is dts[k % ndts]. skip: GradScaler's found_inf on every step
 * (set on step 1) and its grad_scale (512), on the CPU for the CPU side and on the device
 * for the CUDA side, whose step counters then live on the device. */
static void optim_case(const config *c, const nn_dtype *dts, int ndts, int nparams, int nsteps, bool skip)
{
    char dn[64] = "";
    for (int k = 0; k < ndts; k++) snprintf(dn + strlen(dn), sizeof dn - strlen(dn), "%s%s", k ? "+" : "", nn_dtype_name(dts[k]));
    if (!begin("%s %s %s, %d params, %d steps%s", ALG[c->alg], c->label, dn, nparams, nsteps, skip ? ", step 1 skipped by found_inf, grad_scale 512" : ""))
        return;
    static plist L;
    memset(&L, 0, sizeof L);
    L.n = nparams;
    for (int k = 0; k < nparams; k++) {
        const pspec *ps = &PARAMS[k % NPARAM];
        L.p[k] = make(dts[k % ndts], ps->nd, ps->s, ps->play);
        if (skip && c->alg != SGD) L.st[1][3][k] = nn_full(0, NULL, 0, NN_F32, DEV);
    }
    bool err = false;
    for (int step = 0; step < nsteps && !err; step++) {
        nn_tensor *gc[64] = {NULL}, *gg[64] = {NULL};
        for (int k = 0; k < nparams; k++) {
            const pspec *ps = &PARAMS[k % NPARAM];
            if (k % NPARAM == 7 || (k % NPARAM == 3 && step == 1)) continue; /* no gradient; a missed step */
            pair g = make(dts[k % ndts], ps->nd, ps->s, ps->glay);
            gc[k] = g.c, gg[k] = g.g;
        }
        nn_tensor *fc = skip ? found_inf_for(step, CPU) : NULL, *fg = skip ? found_inf_for(step, DEV) : NULL;
        nn_tensor *sc_ = skip ? nn_full(0, NULL, 512, NN_F32, CPU) : NULL, *sg_ = skip ? nn_full(0, NULL, 512, NN_F32, DEV) : NULL;
        nn_status sc = run_step(c, 0, &L, gc, fc, sc_);
        if (sc) save_err();
        nn_status sg = run_step(c, 1, &L, gg, fg, sg_);
        nn_release(fc), nn_release(fg), nn_release(sc_), nn_release(sg_);
        if (sc || sg) {
            fail("step %d: cpu %d (%s), cuda %d (%s)", step, sc, sc ? cpu_err : "", sg, sg ? nn_last_error() : "");
            err = true;
        }
        for (int k = 0; k < nparams; k++) nn_release(gc[k]), nn_release(gg[k]);
    }
    /* centered RMSprop's step is g / sqrt(v - avg^2): for a tiny g both are roundings of tiny numbers
     * (a float16 v is subnormal), so the CPU's and the GPU's float steps, contracted and rounded
     * differently, can end a 16-bit state 1% apart (seen: -3.1328 and -3.0977 in float16) */
    bool cancels = c->alg == RMSPROP && c->rms.centered;
    for (int k = 0; k < nparams && !err; k++) {
        char what[64];
        double scale = cancels && nn_dtype_size(L.p[k].c->dtype) == 2 ? 8 : 2;
        snprintf(what, sizeof what, "param %d", k);
        check_tol(what, L.p[k].c, L.p[k].g, L.p[k].c->dtype, scale);
        for (int r = 0; r < 3; r++) {
            nn_tensor *a = L.st[0][r][k], *b = L.st[1][r][k];
            if (!a && !b) continue;
            snprintf(what, sizeof what, "param %d state %d", k, r);
            if (!a || !b) fail("%s: cpu %p cuda %p", what, (void *)a, (void *)b);
            else check_tol(what, a, b, a->dtype, scale);
        }
        nn_tensor *a = L.st[0][3][k], *b = L.st[1][3][k] ? to_cpu(L.st[1][3][k]) : NULL;
        if (a && b && nn_load_f64(nn_data(a), a->dtype) != nn_load_f64(nn_data(b), b->dtype))
            fail("param %d: steps differ (cpu %g, cuda %g)", k, nn_load_f64(nn_data(a), a->dtype), nn_load_f64(nn_data(b), b->dtype));
        nn_release(b);
    }
    for (int k = 0; k < nparams; k++) {
        pair_free(L.p[k]);
        for (int s = 0; s < 2; s++)
            for (int r = 0; r < 4; r++) nn_release(L.st[s][r][k]);
    }
    end();
}

static void test_optim(void)
{
    config cs[12];
    int n = 0;
    memset(cs, 0, sizeof cs);
    cs[n].alg = SGD, cs[n].label = "plain", cs[n].sgd = (nn_sgd_opts){.lr = 0.1}, n++;
    cs[n].alg = SGD, cs[n].label = "momentum dampening wd", cs[n].sgd = (nn_sgd_opts){.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01}, n++;
    cs[n].alg = SGD, cs[n].label = "nesterov maximize", cs[n].sgd = (nn_sgd_opts){.lr = 0.05, .momentum = 0.8, .nesterov = true, .maximize = true}, n++;
    cs[n].alg = ADAM, cs[n].label = "plain", cs[n].adam = (nn_adam_opts){.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8}, n++;
    cs[n].alg = ADAM, cs[n].label = "amsgrad wd", cs[n].adam = (nn_adam_opts){.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1, .amsgrad = true}, n++;
    cs[n].alg = ADAM, cs[n].label = "AdamW maximize beta1 0.2", cs[n].adam = (nn_adam_opts){.lr = 0.02, .beta1 = 0.2, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.05, .decoupled = true, .maximize = true}, n++;
    cs[n].alg = RMSPROP, cs[n].label = "plain", cs[n].rms = (nn_rmsprop_opts){.lr = 0.01, .alpha = 0.99, .eps = 1e-8}, n++;
    cs[n].alg = RMSPROP, cs[n].label = "centered momentum wd", cs[n].rms = (nn_rmsprop_opts){.lr = 0.01, .alpha = 0.9, .eps = 1e-6, .weight_decay = 0.01, .momentum = 0.5, .centered = true}, n++;
    cs[n].alg = ADAGRAD, cs[n].label = "plain", cs[n].ada = (nn_adagrad_opts){.lr = 0.1, .eps = 1e-10}, n++;
    cs[n].alg = ADAGRAD, cs[n].label = "lr_decay wd init maximize", cs[n].ada = (nn_adagrad_opts){.lr = 0.1, .lr_decay = 0.01, .weight_decay = 0.02, .eps = 1e-10, .initial_accumulator_value = 0.1, .maximize = true}, n++;
    for (int k = 0; k < n; k++) {
        for (int j = 0; j < NFLOAT; j++) optim_case(&cs[k], &ALL[j], 1, NPARAM, 4, false);
        optim_case(&cs[k], ALL, NFLOAT, 2 * NPARAM, 3, false); /* mixed dtypes in one list */
        optim_case(&cs[k], ALL, NFLOAT, 2 * NPARAM, 4, true);
    }
}

/* more parameters than one launch's table holds (several launches) */
static void test_optim_long(void)
{
    if (!begin("adam, 700 parameters")) return;
    enum { N = 700 };
    static pair p[N];
    static nn_tensor *st[2][4][N];
    memset(st, 0, sizeof st);
    nn_tensor *ps[2][N], *gs[2][N];
    for (int k = 0; k < N; k++) {
        int64_t s = 1 + k % 5;
        p[k] = make(k % 3 ? NN_F32 : NN_BF16, 1, &s, L_CONTIG);
        ps[0][k] = p[k].c, ps[1][k] = p[k].g;
    }
    nn_adam_opts o = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    for (int step = 0; step < 3; step++) {
        for (int k = 0; k < N; k++) {
            int64_t s = 1 + k % 5;
            pair g = make(p[k].c->dtype, 1, &s, L_CONTIG);
            gs[0][k] = g.c, gs[1][k] = g.g;
        }
        for (int side = 0; side < 2; side++)
            if (nn_adam_step(N, ps[side], gs[side], st[side][0], st[side][1], NULL, st[side][3], &o)) fail("step: %s", nn_last_error());
        for (int k = 0; k < N; k++) nn_release(gs[0][k]), nn_release(gs[1][k]);
    }
    for (int k = 0; k < N; k++) {
        check_tol("param", p[k].c, p[k].g, p[k].c->dtype, 2);
        pair_free(p[k]);
        for (int s = 0; s < 2; s++)
            for (int r = 0; r < 4; r++) nn_release(st[s][r][k]);
    }
    end();
}

/* ---- timing (informational) ---- */

static void timing(void)
{
    if (!have_gpu || self_test) return;
    int64_t s[2] = {4096, 1000};
    nn_tensor *x = mk(NN_F32, 2, s), *xg = to_dev(x);
    nn_tensor *y = nn_softmax(xg, 1, NN_DTYPE_NONE);
    nn_release(y);
    sync_gpu();
    double t0 = now();
    for (int i = 0; i < 100; i++) nn_release(nn_log_softmax(xg, 1, NN_DTYPE_NONE));
    sync_gpu();
    double t = (now() - t0) / 100;
    fprintf(stderr, "log_softmax [4096, 1000] f32: %.1f us (%.0f GB/s)\n", t * 1e6, 2 * 4096 * 1000 * 4 / t * 1e-9);
    nn_release(x), nn_release(xg);

    enum { NP = 160 };
    nn_tensor *ps[NP], *gs[NP], *m[NP] = {NULL}, *v[NP] = {NULL}, *steps[NP] = {NULL};
    int64_t total = 0;
    for (int k = 0; k < NP; k++) {
        int64_t n = k % 4 == 0 ? 1000000 : 5000;
        total += n;
        ps[k] = nn_zeros(1, &n, NN_F32, DEV);
        gs[k] = nn_full(1, &n, 0.5, NN_F32, DEV);
    }
    nn_adam_opts o = {.lr = 0.001, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    nn_adam_step(NP, ps, gs, m, v, NULL, steps, &o);
    sync_gpu();
    t0 = now();
    for (int i = 0; i < 20; i++) nn_adam_step(NP, ps, gs, m, v, NULL, steps, &o);
    sync_gpu();
    t = (now() - t0) / 20;
    fprintf(stderr, "adam_step %d params, %lld floats: %.1f us (%.0f GB/s)\n", NP, (long long)total, t * 1e6, total * 4.0 * 7 / t * 1e-9);
    for (int k = 0; k < NP; k++) nn_release(ps[k]), nn_release(gs[k]), nn_release(m[k]), nn_release(v[k]), nn_release(steps[k]);

    /* embedding forward (index_select rows) and backward (index_add_ into zeros) */
    int64_t ws[2] = {50000, 512}, ni = 32768, os[2] = {ni, 512};
    nn_tensor *w = nn_zeros(2, ws, NN_F32, DEV), *src = nn_full(2, os, 1, NN_F32, DEV);
    nn_tensor *ic = nn_empty(1, &ni, NN_I64, CPU);
    for (int64_t i = 0; i < ni; i++) ((int64_t *)nn_data(ic))[i] = irand(0, ws[0] - 1);
    nn_tensor *ix = to_dev(ic);
    nn_release(nn_index_select(w, 0, ix));
    sync_gpu();
    t0 = now();
    for (int i = 0; i < 20; i++) nn_release(nn_index_select(w, 0, ix));
    sync_gpu();
    t = (now() - t0) / 20;
    fprintf(stderr, "index_select [50000, 512] f32, 32768 rows: %.1f us (%.0f GB/s)\n", t * 1e6, 2.0 * ni * 512 * 4 / t * 1e-9);
    t0 = now();
    for (int i = 0; i < 20; i++) nn_index_add_(w, 0, ix, src, 1);
    sync_gpu();
    t = (now() - t0) / 20;
    fprintf(stderr, "index_add_ [50000, 512] f32, 32768 rows: %.1f us\n", t * 1e6);

    /* nll_loss, mean, over a large batch */
    int64_t ls[2] = {65536, 1000}, nt = 65536;
    nn_tensor *lp = nn_full(2, ls, -3, NN_F32, DEV), *tc = nn_empty(1, &nt, NN_I64, CPU);
    for (int64_t i = 0; i < nt; i++) ((int64_t *)nn_data(tc))[i] = irand(0, 999);
    nn_tensor *tg = to_dev(tc);
    nn_release(nn_nll_loss(lp, tg, NULL, 1, -100));
    sync_gpu();
    t0 = now();
    for (int i = 0; i < 100; i++) nn_release(nn_nll_loss(lp, tg, NULL, 1, -100));
    sync_gpu();
    t = (now() - t0) / 100;
    fprintf(stderr, "nll_loss [65536, 1000] f32 mean: %.1f us\n", t * 1e6);
    nn_release(w), nn_release(src), nn_release(ic), nn_release(ix), nn_release(lp), nn_release(tc), nn_release(tg);
}

int main(void)
{
    harness_init();
    double t0 = now();
    test_softmax();
    test_nll_loss();
    test_index();
    test_optim();
    test_optim_long();
    timing();
    return harness_done("test_cuda_nnfunc", t0);
}
