/* CUDA batch_norm against the CPU op (itself checked against a double loop and finite
 * differences in tests/c/test_batchnorm.c), through the public frontend (engine/nnfunc.h):
 * the same inputs on the CPU and on cuda:0, 2-D to 5-D, contiguous, transposed, narrowed and
 * channels-last inputs, float32/float64/float16/bfloat16 (float16/bfloat16 with float32
 * per-channel tensors, and once with float16 ones), training and eval, with and without
 * weight, bias and running stats, the running-stat updates, and backward (nn_backward with a
 * transposed grad_out) for input, weight and bias, training and eval. Every case runs twice:
 * through cuDNN and through the backend's own kernels (nn_cudnn_batch_norm off); a cuDNN case
 * of float32/float16 fails if cuDNN declined it (float64 and bfloat16 may fall back: counted and
 * reported at the end). Also: empty batches, the own kernels' determinism, the channels-last layout of
 * the result, and timings (informational).
 *
 * The last line counts cases: "N passed, N failed, N skipped". Without a GPU every case is
 * skipped. NNREPL_TEST_DEVICE=cpu runs the harness (harness.h) with the CPU standing in for the
 * GPU; NNREPL_TEST_FILTER=a,b runs only the cases whose names contain a or b. */
#define HARNESS_SEED 0xB5AD4ECEDA1CE2A9ULL
#include "harness.h"
#include "cuda_flags.h"
#include "memory_format.h"
#include "nnfunc.h"

enum { L_CL = NLAYOUT, NLAYOUTS }; /* channels-last, after the harness's layouts */
static const char *layout_name(int l) { return l == L_CL ? "channels-last" : LNAME[l]; }

typedef struct {
    int nd;
    int64_t s[5];
} bshape;

static nn_dtype stats_dtype(nn_dtype dt) { return dt == NN_F64 ? NN_F64 : NN_F32; }

static nn_tensor *uniform(nn_dtype dt, int nd, const int64_t *s, double lo, double hi)
{
    nn_tensor *t = nn_empty(nd, s, dt, CPU);
    size_t es = nn_dtype_size(dt);
    for (int64_t i = 0; i < nn_numel(t); i++) nn_store_f64((char *)nn_data(t) + i * es, dt, lo + (hi - lo) * urand());
    return t;
}

/* the same values on both sides, in a layout (channels-last: a permuted [N, spatial..., C] base) */
static pair make_in(nn_dtype dt, bshape sh, int layout, double lo, double hi)
{
    int nd = sh.nd;
    if (layout != L_CL) {
        int64_t bs[5];
        layout = fix_layout(layout, nd);
        base_shape(layout, nd, sh.s, bs);
        return share(uniform(dt, nd, bs, lo, hi), layout, nd, sh.s);
    }
    int64_t bs[5];
    int perm[5];
    bs[0] = sh.s[0], bs[nd - 1] = sh.s[1], perm[0] = 0, perm[1] = nd - 1;
    for (int d = 2; d < nd; d++) bs[d - 1] = sh.s[d], perm[d] = d - 1;
    nn_tensor *base = uniform(dt, nd, bs, lo, hi), *gbase = to_dev(base);
    pair p = {nn_permute(base, perm), nn_permute(gbase, perm)};
    nn_release(base), nn_release(gbase);
    return p;
}

static pair make_vec(nn_dtype dt, int64_t C, double lo, double hi)
{
    nn_tensor *t = uniform(dt, 1, &C, lo, hi);
    pair p = {t, to_dev(t)};
    return p;
}

static double max_abs(nn_tensor *t)
{
    nn_tensor *d = nn_to_dtype(t, NN_F64), *c = d ? nn_contiguous(d) : NULL;
    double m = 0;
    for (int64_t i = 0; c && i < nn_numel(c); i++) m = fmax(m, fabs(((const double *)nn_data(c))[i]));
    nn_release(d), nn_release(c);
    return m;
}

/* within dt's tolerance times scale; the absolute part relative to the CPU result's largest
 * magnitude (sums over many elements carry an error in proportion to their terms) */
static void check_scaled(const char *what, nn_tensor *c, nn_tensor *g, double scale)
{
    double rtol, atol, big = c ? fmax(1, max_abs(c)) : 1;
    tol_of(c ? c->dtype : NN_F32, &rtol, &atol);
    check(what, c, g, rtol * scale, atol * scale * big);
}

static double y_scale(nn_dtype dt) { return dt == NN_F64 ? 1e3 : dt == NN_F32 ? 10 : 2; }
static double grad_scale(nn_dtype dt) { return dt == NN_F64 ? 1e4 : dt == NN_F32 ? 50 : 4; }

static void check_grad(const char *what, nn_tensor *c, nn_tensor *g)
{
    if (!c || !g) fail("%s: no gradient (cpu %p, cuda %p)", what, (void *)c, (void *)g);
    else check_scaled(what, c, g, grad_scale(c->dtype));
}

static long declined_by_dtype[NN_NDTYPES];

typedef struct {
    bool training, own, xgrad, half_params;
    int affine; /* bit 0 weight, bit 1 bias */
    int stats;  /* bit 0 running_mean, bit 1 running_var */
    double momentum;
} opts;

static void bn_case(nn_dtype dt, bshape sh, int layout, opts o)
{
    char b[160];
    if (layout == L_CL && sh.nd < 4) return;
    if (!begin("batch_norm %s %s %s %s affine %d stats %d%s%s momentum %g %s", nn_dtype_name(dt), nn_shape_str(b, sh.nd, sh.s), layout_name(layout),
               o.training ? "train" : "eval", o.affine, o.stats, o.xgrad ? "" : " no x.grad", o.half_params ? " half params" : "", o.momentum,
               o.own ? "own" : "cudnn"))
        return;
    nn_cudnn_batch_norm = !o.own;
    long declined = nn_cudnn_batch_norm_declined;
    int64_t C = sh.s[1];
    nn_dtype pdt = o.half_params ? dt : stats_dtype(dt);
    pair x = make_in(dt, sh, layout, -2, 4), none = {NULL, NULL};
    pair w = o.affine & 1 ? make_vec(pdt, C, 0.5, 1.5) : none, bi = o.affine & 2 ? make_vec(pdt, C, -1, 1) : none;
    pair rm = o.stats & 1 ? make_vec(pdt, C, -0.5, 0.5) : none, rv = o.stats & 2 ? make_vec(pdt, C, 0.5, 2) : none;
    nn_tensor *leaves[6] = {o.xgrad ? x.c : NULL, o.xgrad ? x.g : NULL, w.c, w.g, bi.c, bi.g};
    for (int k = 0; k < 6; k++)
        if (leaves[k]) nn_requires_grad_(leaves[k], true);
    nn_tensor *yc = nn_batch_norm(x.c, rm.c, rv.c, w.c, bi.c, o.training, o.momentum, 1e-5);
    if (!yc) save_err();
    nn_tensor *yg = nn_batch_norm(x.g, rm.g, rv.g, w.g, bi.g, o.training, o.momentum, 1e-5);
    check_scaled("y", yc, yg, y_scale(dt));
    if (yg && !nn_is_contiguous_as(yg, nn_suggest_memory_format(x.g))) fail("y is not laid out as x");
    if (rm.c) check_scaled("running_mean", rm.c, rm.g, 10);
    if (rv.c) check_scaled("running_var", rv.c, rv.g, 10);
    if (yc && yg && (o.xgrad || o.affine)) {
        int64_t bs[5];
        base_shape(L_TRANS, sh.nd, sh.s, bs);
        pair go = share(uniform(dt, sh.nd, bs, -1, 1), L_TRANS, sh.nd, sh.s);
        if (nn_backward(yc, go.c, false) || nn_backward(yg, go.g, false)) {
            fail("backward: %s", nn_last_error());
        } else {
            if (o.xgrad) check_grad("x.grad", x.c->grad, x.g->grad);
            if (w.c) check_grad("weight.grad", w.c->grad, w.g->grad);
            if (bi.c) check_grad("bias.grad", bi.c->grad, bi.g->grad);
        }
        pair_free(go);
    }
    /* cuDNN's float32 and float16 batch norm are the configurations it documents for every layout:
     * a decline there is a fault of the descriptors; float64 and bfloat16 may fall back */
    declined_by_dtype[dt] += nn_cudnn_batch_norm_declined - declined;
    if (!self_test && !o.own && (dt == NN_F32 || dt == NN_F16) && nn_cudnn_batch_norm_declined != declined)
        fail("cuDNN declined %ld problem(s) of this case", nn_cudnn_batch_norm_declined - declined);
    nn_cudnn_batch_norm = true;
    nn_release(yc), nn_release(yg);
    pair_free(x), pair_free(w), pair_free(bi), pair_free(rm), pair_free(rv);
    end();
}

static void test_batch_norm(void)
{
    static const nn_dtype dts[] = {NN_F32, NN_F64, NN_F16, NN_BF16};
    static const bshape shapes[] = {{2, {64, 16}}, {2, {3, 5}},          {3, {8, 6, 33}},       {4, {4, 8, 7, 9}},
                                    {5, {2, 4, 3, 5, 6}}, {4, {2, 3, 1, 1}}, {3, {2, 300, 1}}, {4, {5, 1, 4, 4}}};
    for (int di = 0; di < 4; di++)
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
            for (int layout = 0; layout < NLAYOUTS; layout++) {
                if (layout == L_EXPAND) continue; /* an expanded input is copied like any other */
                for (int own = 0; own < 2; own++)
                    for (int training = 0; training < 2; training++) {
                        opts full = {training, own, true, false, 3, 3, 0.1};
                        opts bare = {training, own, true, false, 0, training ? 1 : 3, 0.3}; /* a running_mean alone in training */
                        bn_case(dts[di], shapes[si], layout, full);
                        bn_case(dts[di], shapes[si], layout, bare);
                    }
            }
    /* sizes of real networks: BatchNorm1d after a wide linear layer, BatchNorm2d in a ResNet */
    static const bshape big[] = {{2, {2048, 512}}, {4, {32, 64, 28, 28}}, {4, {64, 256, 7, 7}}};
    for (int di = 0; di < 4; di++)
        for (size_t si = 0; si < sizeof big / sizeof *big; si++)
            for (int own = 0; own < 2; own++)
                for (int training = 0; training < 2; training++) {
                    opts full = {training, own, true, false, 3, 3, 0.1};
                    bn_case(dts[di], big[si], L_CONTIG, full);
                    bn_case(dts[di], big[si], L_CL, full);
                }
    /* gradients for weight and bias only (no grad_input wanted); no running stats; weight alone */
    bshape s4 = {4, {6, 5, 4, 3}};
    for (int di = 0; di < 4; di++)
        for (int own = 0; own < 2; own++)
            for (int training = 0; training < 2; training++) {
                bn_case(dts[di], s4, L_CL, (opts){training, own, false, false, 3, 3, 0.1});
                bn_case(dts[di], s4, L_CONTIG, (opts){training, own, true, false, 1, training ? 0 : 3, 0.1});
            }
    /* float16/bfloat16 per-channel tensors (a model made .half()) */
    for (int own = 0; own < 2; own++)
        for (int training = 0; training < 2; training++) {
            bn_case(NN_F16, s4, L_CONTIG, (opts){training, own, true, true, 3, 3, 0.1});
            bn_case(NN_BF16, s4, L_CL, (opts){training, own, true, true, 3, 3, 0.1});
        }
}

/* an empty batch: an empty result and untouched running stats, on both paths */
static void test_empty(void)
{
    for (int own = 0; own < 2; own++)
        for (int training = 0; training < 2; training++) {
            if (!begin("batch_norm empty batch %s %s", training ? "train" : "eval", own ? "own" : "cudnn")) continue;
            nn_cudnn_batch_norm = !own;
            int64_t s[3] = {0, 4, 3}, C = 4;
            nn_tensor *x = nn_zeros(3, s, NN_F32, DEV), *rm = nn_full(1, &C, 0.25, NN_F32, DEV), *rv = nn_full(1, &C, 2, NN_F32, DEV);
            nn_tensor *y = nn_batch_norm(x, rm, rv, NULL, NULL, training, 0.1, 1e-5);
            nn_tensor *rmc = to_cpu(rm), *rvc = to_cpu(rv);
            if (!y || nn_numel(y) != 0 || y->ndim != 3) fail("result: %s", y ? "not empty" : nn_last_error());
            else if (nn_get_f64(rmc, (int64_t[]){3}) != 0.25 || nn_get_f64(rvc, (int64_t[]){0}) != 2) fail("running stats changed");
            nn_cudnn_batch_norm = true;
            nn_release(x), nn_release(rm), nn_release(rv), nn_release(y), nn_release(rmc), nn_release(rvc);
            end();
        }
}

/* the own kernels add in a fixed order: the same input gives the same bits */
static void test_determinism(void)
{
    for (int cl = 0; cl < 2; cl++) {
        if (!begin("batch_norm own kernels deterministic %s", cl ? "channels-last" : "contiguous")) continue;
        nn_cudnn_batch_norm = false;
        bshape sh = {4, {16, 32, 20, 20}};
        pair x = make_in(NN_F32, sh, cl ? L_CL : L_CONTIG, -2, 4), go = make_in(NN_F32, sh, L_CONTIG, -1, 1);
        nn_requires_grad_(x.g, true);
        nn_tensor *y[2] = {NULL, NULL}, *gx[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++) {
            y[k] = nn_batch_norm(x.g, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
            nn_release(x.g->grad);
            x.g->grad = NULL;
            if (!y[k] || nn_backward(y[k], go.g, false)) fail("%s", nn_last_error());
            gx[k] = x.g->grad ? nn_retain(x.g->grad) : NULL;
        }
        /* check() reads its first tensor on the host */
        nn_tensor *h[2] = {y[0] ? to_cpu(y[0]) : NULL, gx[0] ? to_cpu(gx[0]) : NULL};
        if (h[0] && y[1]) check("y twice", h[0], y[1], 0, 0);
        if (h[1] && gx[1]) check("x.grad twice", h[1], gx[1], 0, 0);
        nn_release(h[0]), nn_release(h[1]);
        nn_cudnn_batch_norm = true;
        for (int k = 0; k < 2; k++) nn_release(y[k]), nn_release(gx[k]);
        pair_free(x), pair_free(go);
        end();
    }
}

/* ---- timing (informational) ---- */

static void sync_gpu(void)
{
    if (nn_gpu->synchronize(DEV.index)) fprintf(stderr, "synchronize: %s\n", nn_last_error());
}

static void timing(void)
{
    if (!have_gpu || self_test) return;
    int64_t s[4] = {64, 256, 14, 14}, C = 256;
    for (int own = 0; own < 2; own++)
        for (int cl = 0; cl < 2; cl++)
            for (int half = 0; half < 2; half++) {
                nn_cudnn_batch_norm = !own;
                nn_dtype dt = half ? NN_F16 : NN_F32;
                nn_tensor *x0 = nn_randn(4, s, dt, DEV), *x = cl ? nn_contiguous_as(x0, NN_CHANNELS_LAST) : nn_retain(x0);
                nn_tensor *w = nn_ones(1, &C, NN_F32, DEV), *b = nn_zeros(1, &C, NN_F32, DEV), *rm = nn_zeros(1, &C, NN_F32, DEV);
                nn_tensor *rv = nn_ones(1, &C, NN_F32, DEV), *go = nn_full(4, s, 0.5, dt, DEV);
                if (cl) {
                    nn_tensor *t = nn_contiguous_as(go, NN_CHANNELS_LAST);
                    nn_release(go);
                    go = t;
                }
                nn_requires_grad_(x, true), nn_requires_grad_(w, true), nn_requires_grad_(b, true);
                double t0 = 0;
                for (int i = 0; i < 21; i++) {
                    if (i == 1) {
                        sync_gpu();
                        t0 = now();
                    }
                    nn_tensor *y = nn_batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5);
                    if (!y || nn_backward(y, go, false)) {
                        fprintf(stderr, "timing: %s\n", nn_last_error());
                        nn_release(y);
                        break;
                    }
                    nn_release(y);
                }
                sync_gpu();
                fprintf(stderr, "batch_norm train fwd+bwd [64, 256, 14, 14] %s %s %s: %.1f us\n", nn_dtype_name(dt), cl ? "channels-last" : "contiguous",
                        own ? "own" : "cudnn", (now() - t0) / 20 * 1e6);
                nn_release(x0), nn_release(x), nn_release(w), nn_release(b), nn_release(rm), nn_release(rv), nn_release(go);
            }
    nn_cudnn_batch_norm = true;
}

int main(void)
{
    harness_init();
    double t0 = now();
    test_batch_norm();
    test_empty();
    test_determinism();
    timing();
    if (have_gpu)
        fprintf(stderr, "batch norm problems cuDNN declined (the own kernels ran them): float32 %ld, float64 %ld, float16 %ld, bfloat16 %ld\n",
                declined_by_dtype[NN_F32], declined_by_dtype[NN_F64], declined_by_dtype[NN_F16], declined_by_dtype[NN_BF16]);
    return harness_done("test_cuda_batchnorm", t0);
}
