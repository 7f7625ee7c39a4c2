/* CUDA matrix products, convolutions and pools against the CPU engine, through the public
 * frontends (nn_mm, nn_bmm, nn_matmul, nn_addmm, nn_conv2d, nn_max_pool2d, nn_avg_pool2d, the
 * adaptive pools) and autograd (nn_backward): the same inputs run on the CPU and on cuda:0 and
 * the results must agree within the dtype's tolerance, scaled by the length of the sums
 * (indices and max values exactly). Inputs come contiguous, transposed, narrowed (unaligned),
 * strided with no unit stride, broadcast (stride 0) and channels-last. Also the bmm kernel
 * itself on strided outputs with alpha/beta, the cuDNN benchmark and TF32 switches
 * (engine/cuda_flags.h) and nn_cuda_linear, the fused cuBLASLt epilogue.
 *
 * A case is one op on one dtype/layout; the last line counts cases:
 * "N passed, N failed, N skipped". Without a GPU every case is skipped.
 * NNREPL_TEST_DEVICE=cpu runs the harness (harness.h) with the CPU standing in for the GPU
 * (a check of the harness itself; the CUDA-only cases are then skipped). */
#include "harness.h"
#include "memory_format.h"
#include "conv.h"
#include "cuda_flags.h"

static bool tf32_on; /* float32 results may come from TF32 tensor cores: looser tolerances */

/* ---- inputs ---- */

static const nn_dtype FLOATS[] = {NN_F32, NN_F64, NN_F16, NN_BF16};
#define NFLOATS 4

/* A contiguous CPU tensor: floats uniform in [lo, hi), integers in [-5, 5] ([0, 5] for uint8);
 * a fraction nan_frac of the float elements NaN. */
static nn_tensor *mk(nn_dtype dt, int nd, const int64_t *s, double lo, double hi, double nan_frac)
{
    nn_tensor *t = nn_empty(nd, s, dt, CPU);
    if (!t) return NULL;
    int64_t n = nn_numel(t);
    size_t es = nn_dtype_size(dt);
    char *p = nn_data(t);
    for (int64_t i = 0; i < n; i++) {
        if (nn_dtype_is_float(dt)) nn_store_f64(p + i * es, dt, urand() < nan_frac ? NAN : lo + (hi - lo) * urand());
        else nn_store_i64(p + i * es, dt, dt == NN_U8 ? (int64_t)(urand() * 6) : (int64_t)(urand() * 11) - 5);
    }
    return t;
}

/* views of the last two dims (and of dim 0 or the channels for 3-D/4-D operands) */
enum { V_CONTIG, V_T, V_NARROW, V_STEP, V_EXPAND0, V_ROWBCAST, V_CL, NVIEW };
static const char *const VNAME[] = {"contig", "transposed", "narrowed", "step 2", "batch-broadcast", "row-broadcast", "channels-last"};

static void view_base_shape(int v, int nd, const int64_t *s, int64_t *bs)
{
    memcpy(bs, s, sizeof(int64_t) * nd);
    switch (v) {
    case V_T: bs[nd - 1] = s[nd - 2], bs[nd - 2] = s[nd - 1]; break;
    case V_NARROW: bs[nd - 1] += 3; break;
    case V_STEP: bs[nd - 1] *= 2; break;
    case V_EXPAND0: bs[0] = 1; break;
    case V_ROWBCAST: bs[nd - 2] = 1; break;
    case V_CL: bs[1] = s[2], bs[2] = s[3], bs[3] = s[1]; break; /* stored N, H, W, C */
    default: break;
    }
}

static nn_tensor *apply_view(nn_tensor *t, int v, int nd, const int64_t *s)
{
    if (!t) return NULL;
    switch (v) {
    case V_T: return nn_transpose(t, nd - 2, nd - 1);
    case V_NARROW: return nn_narrow(t, nd - 1, 1, s[nd - 1]);
    case V_STEP: return nn_slice(t, nd - 1, 0, 2 * s[nd - 1], 2);
    case V_EXPAND0:
    case V_ROWBCAST: return nn_expand(t, nd, s);
    case V_CL: {
        int perm[4] = {0, 3, 1, 2};
        return nn_permute(t, perm);
    }
    default: return nn_retain(t);
    }
}

static int fix_view(int v, int nd)
{
    if (nd < 2 && (v == V_T || v == V_ROWBCAST)) return V_CONTIG;
    if (nd != 4 && v == V_CL) return V_CONTIG;
    return v;
}

/* the same values on the CPU and the device, seen through the same view */
static pair make_nan(nn_dtype dt, int nd, const int64_t *s, int v, double lo, double hi, double nan_frac)
{
    int64_t bs[NN_MAX_DIMS];
    v = fix_view(v, nd);
    view_base_shape(v, nd, s, bs);
    nn_tensor *base = mk(dt, nd, bs, lo, hi, nan_frac);
    nn_tensor *gbase = to_dev(base);
    pair p = {apply_view(base, v, nd, s), apply_view(gbase, v, nd, s)};
    nn_release(base);
    nn_release(gbase);
    return p;
}

static pair make(nn_dtype dt, int nd, const int64_t *s, int v) { return make_nan(dt, nd, s, v, -1, 1, 0); }

/* ---- comparing ---- */

/* rtol and atol for a result that sums `red` products of values in [-1, 1] */
static void tol_red(nn_dtype dt, int64_t red, double *rtol, double *atol)
{
    double r;
    switch (dt) {
    case NN_F32: r = tf32_on ? 5e-3 : 5e-5; break;
    case NN_F64: r = 1e-11; break;
    case NN_F16: r = 4e-3; break;
    case NN_BF16: r = 2e-2; break;
    default: r = 0; break;
    }
    *rtol = r;
    *atol = r * sqrt((double)(red > 1 ? red : 1));
}

static void check_red(const char *what, nn_tensor *c, nn_tensor *g, int64_t red)
{
    double rtol, atol;
    tol_red(c ? c->dtype : g ? g->dtype : NN_F32, red, &rtol, &atol);
    check(what, c, g, rtol, atol);
}

/* sum(y * r) for a random r of y's shape (the same on both devices), for backward */
static nn_tensor *weighted_sum(nn_tensor *y, nn_tensor *r)
{
    nn_tensor *p = nn_binary(NN_OP_mul, y, r);
    nn_tensor *s = p ? nn_reduce(NN_OP_sum, p, 0, false) : NULL;
    nn_release(p);
    return s;
}

/* loss = sum(yc * r) on the CPU and sum(yg * r) on the device, then backward on both; r (so the
 * gradient reaching y) is laid out as view rv */
static bool backward_both_as(nn_tensor *yc, nn_tensor *yg, int rv)
{
    pair r = make(yc->dtype, yc->ndim, yc->shape, rv);
    nn_tensor *lc = weighted_sum(yc, r.c), *lg = weighted_sum(yg, r.g);
    bool ok = lc && lg;
    if (!ok) fail("loss: %s", nn_last_error());
    else if (nn_backward(lc, NULL, false) || nn_backward(lg, NULL, false)) {
        fail("backward: %s", nn_last_error());
        ok = false;
    }
    nn_release(lc), nn_release(lg);
    pair_free(r);
    return ok;
}

static bool backward_both(nn_tensor *yc, nn_tensor *yg) { return backward_both_as(yc, yg, V_CONTIG); }

static void check_grad(const char *what, pair p, int64_t red)
{
    if (!p.c->grad || !p.g->grad) fail("%s: missing .grad", what);
    else check_red(what, p.c->grad, p.g->grad, red);
}

static void set_grad(pair p)
{
    p.c->requires_grad = true;
    p.g->requires_grad = true;
}

/* ---- matrix products ---- */

static const nn_dtype MMDT[] = {NN_F32, NN_F64, NN_F16, NN_BF16, NN_I64, NN_I32, NN_I16, NN_I8, NN_U8};
#define NMMDT 9

static void mm_case(nn_dtype dt, int64_t m, int64_t k, int64_t n, int va, int vb, bool grad)
{
    if (!begin("mm %s [%lld, %lld] %s x [%lld, %lld] %s%s", nn_dtype_name(dt), (long long)m, (long long)k, VNAME[fix_view(va, 2)], (long long)k,
               (long long)n, VNAME[fix_view(vb, 2)], grad ? " backward" : ""))
        return;
    int64_t sa[2] = {m, k}, sb[2] = {k, n};
    pair a = make(dt, 2, sa, va), b = make(dt, 2, sb, vb);
    if (grad) set_grad(a), set_grad(b);
    nn_tensor *c = nn_mm(a.c, b.c);
    if (!c) save_err();
    nn_tensor *g = nn_mm(a.g, b.g);
    check_red("mm", c, g, k);
    if (grad && c && g && backward_both(c, g)) {
        check_grad("a.grad", a, n);
        check_grad("b.grad", b, m);
    }
    nn_release(c), nn_release(g);
    pair_free(a), pair_free(b);
    end();
}

static void bmm_case(nn_dtype dt, int64_t B, int64_t m, int64_t k, int64_t n, int va, int vb, bool grad)
{
    if (!begin("bmm %s [%lld, %lld, %lld] %s x [%lld, %lld, %lld] %s%s", nn_dtype_name(dt), (long long)B, (long long)m, (long long)k, VNAME[va],
               (long long)B, (long long)k, (long long)n, VNAME[vb], grad ? " backward" : ""))
        return;
    int64_t sa[3] = {B, m, k}, sb[3] = {B, k, n};
    pair a = make(dt, 3, sa, va), b = make(dt, 3, sb, vb);
    if (grad) set_grad(a), set_grad(b);
    nn_tensor *c = nn_bmm(a.c, b.c);
    if (!c) save_err();
    nn_tensor *g = nn_bmm(a.g, b.g);
    check_red("bmm", c, g, k);
    if (grad && c && g && backward_both(c, g)) {
        check_grad("a.grad", a, n * B);
        check_grad("b.grad", b, m * B);
    }
    nn_release(c), nn_release(g);
    pair_free(a), pair_free(b);
    end();
}

static void matmul_case(nn_dtype dt, int na, const int64_t *sa, int va, int nb, const int64_t *sb, int vb, bool grad)
{
    char s1[96], s2[96];
    if (!begin("matmul %s %s %s x %s %s%s", nn_dtype_name(dt), nn_shape_str(s1, na, sa), VNAME[fix_view(va, na)], nn_shape_str(s2, nb, sb),
               VNAME[fix_view(vb, nb)], grad ? " backward" : ""))
        return;
    pair a = make(dt, na, sa, va), b = make(dt, nb, sb, vb);
    if (grad) set_grad(a), set_grad(b);
    nn_tensor *c = nn_matmul(a.c, b.c);
    if (!c) save_err();
    nn_tensor *g = nn_matmul(a.g, b.g);
    int64_t k = sa[na - 1];
    check_red("matmul", c, g, k);
    if (grad && c && g && backward_both(c, g)) {
        check_grad("a.grad", a, 64);
        check_grad("b.grad", b, 64);
    }
    nn_release(c), nn_release(g);
    pair_free(a), pair_free(b);
    end();
}

static void addmm_case(nn_dtype dt, int nbias, const int64_t *sbias, int64_t m, int64_t k, int64_t n, double beta, double alpha, bool grad)
{
    char s1[96];
    if (!begin("addmm %s bias %s beta=%g alpha=%g [%lld, %lld] x [%lld, %lld]%s", nn_dtype_name(dt), nn_shape_str(s1, nbias, sbias), beta, alpha,
               (long long)m, (long long)k, (long long)k, (long long)n, grad ? " backward" : ""))
        return;
    int64_t sa[2] = {m, k}, sb[2] = {k, n};
    pair bias = make(dt, nbias, sbias, V_CONTIG), a = make(dt, 2, sa, V_T), b = make(dt, 2, sb, V_NARROW);
    if (grad) set_grad(bias), set_grad(a), set_grad(b);
    nn_tensor *c = nn_addmm(bias.c, a.c, b.c, beta, alpha);
    if (!c) save_err();
    nn_tensor *g = nn_addmm(bias.g, a.g, b.g, beta, alpha);
    check_red("addmm", c, g, k);
    if (grad && c && g && backward_both(c, g)) {
        check_grad("bias.grad", bias, m * n);
        check_grad("a.grad", a, n);
        check_grad("b.grad", b, m);
    }
    nn_release(c), nn_release(g);
    pair_free(bias), pair_free(a), pair_free(b);
    end();
}

/* The bmm kernel itself: out (a strided view) = beta*out + alpha*(a @ b). */
static void bmm_kernel_case(nn_dtype dt, int64_t B, int64_t m, int64_t k, int64_t n, int va, int vb, int vo, double alpha, double beta)
{
    if (!begin("bmm kernel %s [%lld, %lld, %lld] %s x %s -> %s out, alpha=%g beta=%g", nn_dtype_name(dt), (long long)B, (long long)m, (long long)k,
               VNAME[va], VNAME[vb], VNAME[vo], alpha, beta))
        return;
    int64_t sa[3] = {B, m, k}, sb[3] = {B, k, n}, so[3] = {B, m, n};
    pair a = make(dt, 3, sa, va), b = make(dt, 3, sb, vb), o = make(dt, 3, so, vo);
    nn_kargs kc = {.op = NN_OP_bmm, .out = {o.c}, .in = {a.c, b.c}, .nin = 2, .f = {alpha, beta}};
    nn_kargs kg = {.op = NN_OP_bmm, .out = {o.g}, .in = {a.g, b.g}, .nin = 2, .f = {alpha, beta}};
    nn_status sc = nn_dispatch(&kc);
    if (sc) save_err();
    nn_status sg = nn_dispatch(&kg);
    if (sc || sg) fail("dispatch: cpu %d '%s', cuda %d '%s'", sc, cpu_err, sg, nn_last_error());
    else check_red("out", o.c, o.g, k + 1);
    pair_free(a), pair_free(b), pair_free(o);
    end();
}

static void test_matmul(void)
{
    static const int64_t shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {33, 65, 17}, {128, 96, 64}, {1, 300, 1}, {64, 1, 48}, {2, 40, 1}};
    static const int views[] = {V_CONTIG, V_T, V_NARROW, V_STEP, V_ROWBCAST};
    for (int d = 0; d < NMMDT; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int va = 0; va < 5; va++)
                for (int vb = 0; vb < 5; vb++) {
                    if (d >= NFLOATS && (va > 1 || vb > 1) && !(va == 3 && vb == 2)) continue; /* integers: fewer layouts */
                    mm_case(MMDT[d], shapes[s][0], shapes[s][1], shapes[s][2], views[va], views[vb], false);
                }
    /* larger: the library's real kernels */
    for (int d = 0; d < NFLOATS; d++) {
        mm_case(FLOATS[d], 256, 512, 384, V_CONTIG, V_CONTIG, false);
        mm_case(FLOATS[d], 256, 512, 384, V_T, V_T, false);
        mm_case(FLOATS[d], 257, 129, 131, V_CONTIG, V_T, false);
        mm_case(FLOATS[d], 1000, 64, 10, V_CONTIG, V_NARROW, false);
    }
    /* empty and k == 0 */
    for (int d = 0; d < NMMDT; d++) {
        mm_case(MMDT[d], 0, 5, 3, V_CONTIG, V_CONTIG, false);
        mm_case(MMDT[d], 4, 0, 3, V_CONTIG, V_CONTIG, false);
        mm_case(MMDT[d], 4, 5, 0, V_CONTIG, V_CONTIG, false);
    }
    /* bmm: batch strides, broadcast (stride 0) operands */
    for (int d = 0; d < NMMDT; d++) {
        nn_dtype dt = MMDT[d];
        bmm_case(dt, 3, 7, 13, 5, V_CONTIG, V_CONTIG, false);
        bmm_case(dt, 3, 7, 13, 5, V_T, V_NARROW, false);
        bmm_case(dt, 4, 17, 33, 9, V_EXPAND0, V_T, false);
        bmm_case(dt, 4, 17, 33, 9, V_NARROW, V_EXPAND0, false);
        bmm_case(dt, 5, 16, 24, 8, V_STEP, V_STEP, false);
        bmm_case(dt, 2, 1, 8, 1, V_CONTIG, V_CONTIG, false);
        bmm_case(dt, 0, 3, 4, 5, V_CONTIG, V_CONTIG, false);
    }
    for (int d = 0; d < NFLOATS; d++) bmm_case(FLOATS[d], 16, 64, 128, 96, V_T, V_CONTIG, false);
    /* matmul: vectors, folded batches, broadcast batches */
    const int64_t v7[1] = {7}, m57[2] = {5, 7}, m73[2] = {7, 3}, b357[3] = {3, 5, 7}, b2157[4] = {2, 1, 5, 7}, b3173[4] = {1, 3, 7, 3},
                  b473[3] = {4, 7, 3};
    for (int d = 0; d < NFLOATS + 1; d++) {
        nn_dtype dt = MMDT[d];
        matmul_case(dt, 1, v7, V_CONTIG, 1, v7, V_NARROW, false);
        matmul_case(dt, 1, v7, V_NARROW, 2, m73, V_T, false);
        matmul_case(dt, 2, m57, V_T, 1, v7, V_CONTIG, false);
        matmul_case(dt, 3, b357, V_CONTIG, 2, m73, V_T, false);
        matmul_case(dt, 3, b357, V_T, 2, m73, V_CONTIG, false);
        matmul_case(dt, 2, m57, V_CONTIG, 3, b473, V_T, false);
        matmul_case(dt, 4, b2157, V_CONTIG, 4, b3173, V_NARROW, false);
        matmul_case(dt, 3, b357, V_STEP, 1, v7, V_CONTIG, false);
    }
    const int64_t m57b[2] = {5, 7}, z0[1] = {0};
    matmul_case(NN_F32, 2, m57b, V_CONTIG, 1, z0, V_CONTIG, false); /* a shape error, the same on both */
    /* addmm: bias broadcast, alpha/beta */
    const int64_t bn[1] = {6}, bmn[2] = {4, 6}, b1n[2] = {1, 6}, bm1[2] = {4, 1}, b0[1] = {1};
    for (int d = 0; d < NMMDT; d++) {
        nn_dtype dt = MMDT[d];
        bool fl = d < NFLOATS;
        addmm_case(dt, 1, bn, 4, 9, 6, 1, 1, false);
        addmm_case(dt, 2, bmn, 4, 9, 6, fl ? 0.5 : 2, fl ? 2 : 3, false);
        addmm_case(dt, 2, b1n, 4, 9, 6, 0, 1, false);
        addmm_case(dt, 2, bm1, 4, 9, 6, fl ? -1.5 : -1, 1, false);
        addmm_case(dt, 1, b0, 4, 0, 6, 2, 1, false);
    }
    /* the kernel on strided outputs, alpha and beta */
    for (int d = 0; d < NMMDT; d++) {
        nn_dtype dt = MMDT[d];
        bool fl = d < NFLOATS;
        bmm_kernel_case(dt, 3, 9, 11, 7, V_CONTIG, V_CONTIG, V_T, fl ? 1.5 : 2, 0);
        bmm_kernel_case(dt, 3, 9, 11, 7, V_T, V_NARROW, V_T, fl ? -0.5 : -1, fl ? 0.25 : 3);
        bmm_kernel_case(dt, 3, 9, 11, 7, V_STEP, V_EXPAND0, V_NARROW, 2, 1);
        bmm_kernel_case(dt, 3, 9, 11, 7, V_CONTIG, V_T, V_STEP, 1, fl ? -2 : -2);
        bmm_kernel_case(dt, 2, 5, 0, 4, V_CONTIG, V_CONTIG, V_T, 1, fl ? 0.5 : 2);
        bmm_kernel_case(dt, 2, 5, 0, 4, V_CONTIG, V_CONTIG, V_CONTIG, 1, 0);
    }
    /* backward */
    for (int d = 0; d < NFLOATS; d++) {
        nn_dtype dt = FLOATS[d];
        mm_case(dt, 7, 13, 5, V_T, V_NARROW, true);
        mm_case(dt, 64, 32, 48, V_CONTIG, V_CONTIG, true);
        bmm_case(dt, 3, 7, 13, 5, V_CONTIG, V_T, true);
        matmul_case(dt, 3, b357, V_CONTIG, 2, m73, V_CONTIG, true);
        matmul_case(dt, 4, b2157, V_T, 4, b3173, V_CONTIG, true);
        matmul_case(dt, 1, v7, V_CONTIG, 2, m73, V_CONTIG, true);
        addmm_case(dt, 1, bn, 4, 9, 6, 0.5, 2, true);
    }
    /* errors are the CPU's */
    if (begin("mm: mismatched shapes and devices are errors")) {
        int64_t sa[2] = {3, 4}, sb[2] = {5, 6};
        pair a = make(NN_F32, 2, sa, V_CONTIG), b = make(NN_F32, 2, sb, V_CONTIG);
        nn_tensor *c = nn_mm(a.c, b.c);
        if (!c) save_err();
        nn_tensor *g = nn_mm(a.g, b.g);
        check("mm", c, g, 0, 0);
        nn_release(c), nn_release(g);
        if (!self_test) {
            int64_t s4[2] = {4, 2};
            pair e = make(NN_F32, 2, s4, V_CONTIG);
            g = nn_mm(a.g, e.c);
            if (g || !strstr(nn_last_error(), "same device")) fail("mm(cuda, cpu): %s", g ? "no error" : nn_last_error());
            nn_release(g);
            pair_free(e);
        }
        pair_free(a), pair_free(b);
        end();
    }
    /* TF32 on (torch.backends.cuda.matmul.allow_tf32 = True): looser, and back off again */
    if (begin("mm float32 with TF32 allowed")) {
        nn_cuda_set_matmul_allow_tf32(true);
        tf32_on = true;
        int64_t sa[2] = {256, 512}, sb[2] = {512, 384};
        pair a = make(NN_F32, 2, sa, V_CONTIG), b = make(NN_F32, 2, sb, V_T);
        nn_tensor *c = nn_mm(a.c, b.c), *g = nn_mm(a.g, b.g);
        check_red("mm tf32", c, g, 512);
        nn_release(c), nn_release(g);
        nn_cuda_set_matmul_allow_tf32(false);
        tf32_on = false;
        c = nn_mm(a.c, b.c), g = nn_mm(a.g, b.g);
        check_red("mm after tf32", c, g, 512);
        nn_release(c), nn_release(g);
        pair_free(a), pair_free(b);
        end();
    }
}

/* ---- nn_cuda_linear: out = x @ w^T + bias (+ ReLU) in one call ---- */

static void linear_case(nn_dtype dt, int64_t m, int64_t k, int64_t n, int vx, int vw, bool bias, bool relu)
{
    if (!begin("linear %s x [%lld, %lld] %s, w [%lld, %lld] %s%s%s", nn_dtype_name(dt), (long long)m, (long long)k, VNAME[vx], (long long)n,
               (long long)k, VNAME[vw], bias ? " +bias" : "", relu ? " +relu" : ""))
        return;
    if (self_test || !nn_cuda_linear) {
        n_skip++;
        return;
    }
    int64_t sx[2] = {m, k}, sw[2] = {n, k}, sb[1] = {n}, so[2] = {m, n};
    pair x = make(dt, 2, sx, vx), w = make(dt, 2, sw, vw), b = make(dt, 1, sb, V_NARROW);
    nn_tensor *wt = nn_t(w.c), *p = wt ? nn_matmul(x.c, wt) : NULL;
    nn_tensor *q = p && bias ? nn_binary(NN_OP_add, p, b.c) : nn_retain(p);
    nn_tensor *ref = q && relu ? nn_unary(NN_OP_relu, q) : nn_retain(q);
    nn_tensor *out = nn_empty(2, so, dt, DEV);
    if (!ref || !out) fail("setup: %s", nn_last_error());
    else if (nn_cuda_linear(out, x.g, w.g, bias ? b.g : NULL, relu)) fail("nn_cuda_linear: %s", nn_last_error());
    else check_red("linear", ref, out, k);
    nn_release(wt), nn_release(p), nn_release(q), nn_release(ref), nn_release(out);
    pair_free(x), pair_free(w), pair_free(b);
    end();
}

static void test_linear(void)
{
    for (int d = 0; d < NFLOATS; d++)
        for (int e = 0; e < 4; e++) {
            nn_dtype dt = FLOATS[d];
            bool bias = e & 1, relu = e & 2;
            linear_case(dt, 37, 64, 24, V_CONTIG, V_CONTIG, bias, relu);
            linear_case(dt, 1, 5, 3, V_CONTIG, V_CONTIG, bias, relu);
            linear_case(dt, 33, 20, 17, V_T, V_NARROW, bias, relu);
            linear_case(dt, 256, 512, 384, V_CONTIG, V_CONTIG, bias, relu);
            linear_case(dt, 8, 0, 5, V_CONTIG, V_CONTIG, bias, relu);
        }
    if (begin("linear: mismatched shapes are an error")) {
        if (!self_test && nn_cuda_linear) {
            int64_t sx[2] = {4, 5}, sw[2] = {3, 6}, so[2] = {4, 3};
            pair x = make(NN_F32, 2, sx, V_CONTIG), w = make(NN_F32, 2, sw, V_CONTIG);
            nn_tensor *out = nn_empty(2, so, NN_F32, DEV);
            if (!out || !nn_cuda_linear(out, x.g, w.g, NULL, false) || !strstr(nn_last_error(), "linear")) fail("no error: %s", nn_last_error());
            nn_release(out);
            pair_free(x), pair_free(w);
        }
        end();
    }
}

/* ---- convolutions ---- */

typedef struct {
    int64_t N, C, H, W, O, kh, kw, sh, sw, ph, pw, dh, dw, g;
    bool bias;
} convcfg;

static const convcfg CONVS[] = {
    {2, 3, 9, 11, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},  {2, 4, 10, 8, 6, 3, 3, 2, 2, 0, 0, 1, 1, 1, true},
    {1, 6, 12, 12, 9, 3, 3, 1, 2, 1, 2, 2, 1, 3, true}, {3, 8, 7, 7, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8, false},
    {2, 16, 6, 6, 32, 1, 1, 1, 1, 0, 0, 1, 1, 1, true}, {1, 3, 5, 5, 2, 5, 3, 1, 1, 2, 1, 1, 1, 1, false},
    {2, 5, 13, 9, 7, 4, 2, 3, 2, 1, 0, 1, 2, 1, true},  {4, 32, 16, 16, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},
};
#define NCONVS (int)(sizeof CONVS / sizeof *CONVS)

static void conv_case(const convcfg *k, nn_dtype dt, int xv, int wv, bool unbatched, bool grad, const char *tag)
{
    if (!begin("conv2d %s N%lld C%lld %lldx%lld O%lld k%lldx%lld s%lld,%lld p%lld,%lld d%lld,%lld g%lld%s x %s w %s%s%s%s", nn_dtype_name(dt),
               (long long)k->N, (long long)k->C, (long long)k->H, (long long)k->W, (long long)k->O, (long long)k->kh, (long long)k->kw,
               (long long)k->sh, (long long)k->sw, (long long)k->ph, (long long)k->pw, (long long)k->dh, (long long)k->dw, (long long)k->g,
               k->bias ? " bias" : "", VNAME[xv], VNAME[wv], unbatched ? " unbatched" : "", grad ? " backward" : "", tag))
        return;
    int64_t xs[4] = {k->N, k->C, k->H, k->W}, ws[4] = {k->O, k->C / k->g, k->kh, k->kw}, bs[1] = {k->O};
    int64_t st[2] = {k->sh, k->sw}, pd[2] = {k->ph, k->pw}, dl[2] = {k->dh, k->dw};
    pair x = unbatched ? make(dt, 3, xs + 1, xv) : make(dt, 4, xs, xv), w = make(dt, 4, ws, wv), b = make(dt, 1, bs, V_CONTIG);
    if (grad) set_grad(x), set_grad(w), set_grad(b);
    nn_tensor *c = nn_conv2d(x.c, w.c, k->bias ? b.c : NULL, st, pd, dl, k->g);
    if (!c) save_err();
    nn_tensor *g = nn_conv2d(x.g, w.g, k->bias ? b.g : NULL, st, pd, dl, k->g);
    check_red("conv2d", c, g, ws[1] * k->kh * k->kw);
    if (c && g && c->ndim == 4 && nn_suggest_memory_format(c) != nn_suggest_memory_format(g)) /* whatever layout cuDNN ran in */
        fail("the output is %s on the GPU, %s on the CPU", nn_memory_format_name(nn_suggest_memory_format(g)),
             nn_memory_format_name(nn_suggest_memory_format(c)));
    if (grad && c && g && backward_both(c, g)) {
        int64_t L = c->shape[c->ndim - 1] * c->shape[c->ndim - 2] * k->N;
        check_grad("x.grad", x, k->O / k->g * k->kh * k->kw);
        check_grad("w.grad", w, L);
        if (k->bias) check_grad("b.grad", b, L);
    }
    nn_release(c), nn_release(g);
    pair_free(x), pair_free(w), pair_free(b);
    end();
}

static void test_conv(void)
{
    nn_cudnn_set_allow_tf32(false);
    for (int i = 0; i < NCONVS; i++)
        for (int d = 0; d < NFLOATS; d++) {
            const convcfg *k = &CONVS[i];
            nn_dtype dt = FLOATS[d];
            conv_case(k, dt, V_CONTIG, V_CONTIG, false, true, "");
            conv_case(k, dt, V_CL, V_CONTIG, false, true, "");
            conv_case(k, dt, V_NARROW, V_T, false, false, "");
            if (i < 3) conv_case(k, dt, V_CONTIG, V_CONTIG, true, true, "");
        }
    /* an image network's first layer, large enough that the GPU runs it with a zero fourth channel
     * (float16/bfloat16, and float32 in NCHW) */
    convcfg rgb = {8, 3, 227, 227, 8, 11, 11, 4, 4, 2, 2, 1, 1, 1, true};
    for (int d = 0; d < NFLOATS; d++) {
        conv_case(&rgb, FLOATS[d], V_CONTIG, V_CONTIG, false, true, "");
        conv_case(&rgb, FLOATS[d], V_CL, V_CL, false, true, "");
    }
    /* strided convolutions of few channels, which the GPU runs as stride-1 ones on space-to-depth
     * copies (nn_conv_space_to_depth: TF32, and float16/bfloat16 with strides of 16 positions or
     * more): odd sizes, unequal strides, kernels that are not multiples of the stride, kernel =
     * stride, 64 channels after; the last (stride 2) goes that way in TF32 alone */
    static const convcfg s2d[] = {
        {3, 3, 35, 33, 5, 11, 11, 4, 4, 2, 2, 1, 1, 1, true}, {2, 1, 21, 23, 4, 5, 9, 4, 8, 1, 3, 1, 1, 1, false},
        {2, 2, 16, 18, 3, 4, 4, 4, 4, 0, 0, 1, 1, 1, true},   {2, 4, 12, 12, 8, 4, 4, 4, 4, 2, 1, 1, 1, 1, true},
        {3, 3, 17, 15, 5, 7, 7, 2, 2, 3, 3, 1, 1, 1, true},
    };
    const int ns2d = (int)(sizeof s2d / sizeof *s2d);
    nn_cudnn_set_allow_tf32(true);
    for (int i = 0; i < ns2d; i++)
        for (int d = 0; d < NFLOATS; d++) {
            nn_dtype dt = FLOATS[d];
            if (dt == NN_F64) continue;
            tf32_on = dt == NN_F32;
            if (begin("conv2d space-to-depth takes case %d in %s", i, nn_dtype_name(dt))) { /* which path the cases below run */
                const int64_t st[2] = {s2d[i].sh, s2d[i].sw}, dl[2] = {s2d[i].dh, s2d[i].dw};
                bool want = i < ns2d - 1 || dt == NN_F32;
                if (nn_conv_space_to_depth(dt, s2d[i].C, s2d[i].g, st, dl, s2d[i].kh, s2d[i].kw) != want) fail(want ? "declined" : "taken");
                end();
            }
            conv_case(&s2d[i], dt, V_CONTIG, V_CONTIG, false, true, " space-to-depth");
            conv_case(&s2d[i], dt, V_CL, V_CONTIG, false, true, " space-to-depth");
            conv_case(&s2d[i], dt, V_NARROW, V_T, false, false, " space-to-depth");
            if (i == 0) conv_case(&s2d[i], dt, V_CONTIG, V_CONTIG, true, true, " space-to-depth");
        }
    nn_cudnn_set_allow_tf32(false);
    tf32_on = false;
    /* depthwise convolutions, whose weight gradient runs in cuda/depthwise.cu in float32 and
     * float64: kernels 3, 5 and 7, strides, dilation, odd sizes, channels-last images, planes
     * too large for one band of shared memory (150 x 140 takes 6 bands in float32, 14 in
     * float64) and small ones a block takes several of */
    static const convcfg dw[] = {
        {2, 5, 13, 11, 5, 5, 5, 2, 2, 2, 2, 1, 1, 5, true}, {3, 4, 20, 17, 4, 7, 7, 1, 1, 3, 3, 1, 1, 4, false},
        {2, 3, 15, 15, 3, 3, 3, 1, 2, 2, 1, 2, 2, 3, true}, {2, 2, 150, 140, 2, 7, 7, 1, 1, 3, 3, 1, 1, 2, true},
        {1, 2, 97, 203, 2, 5, 5, 3, 2, 0, 4, 1, 2, 2, false},
    };
    for (int i = 0; i < (int)(sizeof dw / sizeof *dw); i++)
        for (int d = 0; d < NFLOATS; d++) {
            conv_case(&dw[i], FLOATS[d], V_CONTIG, V_CONTIG, false, true, " depthwise");
            conv_case(&dw[i], FLOATS[d], V_NARROW, V_T, false, true, " depthwise");
            conv_case(&dw[i], FLOATS[d], V_CL, V_CONTIG, false, true, " depthwise");
            if (i == 0) conv_case(&dw[i], FLOATS[d], V_CONTIG, V_CONTIG, true, true, " depthwise");
        }
    /* many groups: float32 ones of 16-32 channels run in chunks of groups on channel views
     * (cuda/cudnn.cu, by_group_chunks), the last chunk short; with bias, strides, channels-last
     * images, both grads; the other dtypes in one call */
    static const convcfg many[] = {
        {2, 16 * 70, 6, 5, 3 * 70, 3, 3, 1, 1, 1, 1, 1, 1, 70, true},
        {1, 20 * 130, 5, 5, 2 * 130, 3, 2, 2, 1, 0, 1, 1, 1, 130, false},
    };
    for (int i = 0; i < (int)(sizeof many / sizeof *many); i++)
        for (int d = 0; d < NFLOATS; d++) {
            conv_case(&many[i], FLOATS[d], V_CONTIG, V_CONTIG, false, true, " many groups");
            conv_case(&many[i], FLOATS[d], V_CL, V_CONTIG, false, true, " many groups");
            conv_case(&many[i], FLOATS[d], V_NARROW, V_T, false, false, " many groups");
        }
    /* empty batch, no input channels' worth of work */
    convcfg empty = {0, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true};
    for (int d = 0; d < NFLOATS; d++) conv_case(&empty, FLOATS[d], V_CONTIG, V_CONTIG, false, false, "");
    /* cudnn.benchmark: the algorithm timed once per shape */
    nn_cudnn_set_benchmark(true);
    for (int i = 0; i < NCONVS; i += 2)
        for (int d = 0; d < NFLOATS; d++) {
            conv_case(&CONVS[i], FLOATS[d], V_CONTIG, V_CONTIG, false, true, " benchmark");
            conv_case(&CONVS[i], FLOATS[d], V_CONTIG, V_CONTIG, false, false, " benchmark again");
        }
    conv_case(&CONVS[1], NN_F32, V_CL, V_CONTIG, false, true, " benchmark");
    nn_cudnn_set_benchmark(false);
    /* TF32 (torch.backends.cudnn.allow_tf32, PyTorch's default) */
    nn_cudnn_set_allow_tf32(true);
    tf32_on = true;
    for (int i = 0; i < NCONVS; i++) conv_case(&CONVS[i], NN_F32, V_CONTIG, V_CONTIG, false, i == NCONVS - 1, " tf32");
    nn_cudnn_set_allow_tf32(false);
    tf32_on = false;
    /* padding='same' with an even kernel (the frontend pads a copy) */
    for (int d = 0; d < NFLOATS; d++) {
        if (!begin("conv2d_same %s k4x2 dilation 1,2", nn_dtype_name(FLOATS[d]))) continue;
        int64_t xs[4] = {2, 3, 9, 10}, ws[4] = {5, 3, 4, 2}, st[2] = {1, 1}, dl[2] = {1, 2};
        pair x = make(FLOATS[d], 4, xs, V_CONTIG), w = make(FLOATS[d], 4, ws, V_CONTIG);
        nn_tensor *c = nn_conv2d_same(x.c, w.c, NULL, st, dl, 1);
        if (!c) save_err();
        nn_tensor *g = nn_conv2d_same(x.g, w.g, NULL, st, dl, 1);
        check_red("conv2d_same", c, g, 24);
        nn_release(c), nn_release(g);
        pair_free(x), pair_free(w);
        end();
    }
    /* the backward frontends on their own, non-contiguous grad_output */
    for (int d = 0; d < NFLOATS; d++) {
        if (!begin("conv2d_backward_input/weight %s transposed grad_output", nn_dtype_name(FLOATS[d]))) continue;
        const convcfg *k = &CONVS[2];
        int64_t xs[4] = {k->N, k->C, k->H, k->W}, ws[4] = {k->O, k->C / k->g, k->kh, k->kw};
        int64_t st[2] = {k->sh, k->sw}, pd[2] = {k->ph, k->pw}, dl[2] = {k->dh, k->dw};
        int64_t oh = (k->H + 2 * k->ph - k->dh * (k->kh - 1) - 1) / k->sh + 1, ow = (k->W + 2 * k->pw - k->dw * (k->kw - 1) - 1) / k->sw + 1;
        int64_t gs[4] = {k->N, k->O, oh, ow};
        pair go = make(FLOATS[d], 4, gs, V_T), x = make(FLOATS[d], 4, xs, V_CL), w = make(FLOATS[d], 4, ws, V_CONTIG);
        nn_tensor *c = nn_conv2d_backward_input(go.c, w.c, xs, st, pd, dl, k->g);
        if (!c) save_err();
        nn_tensor *g = nn_conv2d_backward_input(go.g, w.g, xs, st, pd, dl, k->g);
        check_red("backward_input", c, g, k->O * k->kh * k->kw);
        nn_release(c), nn_release(g);
        c = nn_conv2d_backward_weight(go.c, x.c, ws, st, pd, dl, k->g);
        if (!c) save_err();
        g = nn_conv2d_backward_weight(go.g, x.g, ws, st, pd, dl, k->g);
        check_red("backward_weight", c, g, k->N * oh * ow);
        nn_release(c), nn_release(g);
        pair_free(go), pair_free(x), pair_free(w);
        end();
    }
    /* errors are the CPU's */
    if (begin("conv2d: channel mismatch and integer input are errors")) {
        int64_t xs[4] = {1, 3, 5, 5}, ws[4] = {2, 4, 3, 3}, st[2] = {1, 1}, pd[2] = {0, 0}, dl[2] = {1, 1};
        pair x = make(NN_F32, 4, xs, V_CONTIG), w = make(NN_F32, 4, ws, V_CONTIG);
        nn_tensor *c = nn_conv2d(x.c, w.c, NULL, st, pd, dl, 1);
        if (!c) save_err();
        nn_tensor *g = nn_conv2d(x.g, w.g, NULL, st, pd, dl, 1);
        check("conv2d", c, g, 0, 0);
        nn_release(c), nn_release(g);
        pair xi = make(NN_I64, 4, xs, V_CONTIG), wi = make(NN_I64, 4, xs, V_CONTIG);
        c = nn_conv2d(xi.c, wi.c, NULL, st, pd, dl, 1);
        if (!c) save_err();
        g = nn_conv2d(xi.g, wi.g, NULL, st, pd, dl, 1);
        check("conv2d int64", c, g, 0, 0);
        nn_release(c), nn_release(g);
        pair_free(x), pair_free(w), pair_free(xi), pair_free(wi);
        end();
    }
}

/* ---- pools ---- */

typedef struct { int64_t k[2], s[2], p[2], d[2]; bool ceil; } maxcfg;
typedef struct { int64_t k[2], s[2], p[2]; bool ceil, cip; int64_t div; } avgcfg;

static const int64_t PX4[4] = {2, 3, 9, 11}, PX3[3] = {3, 8, 7};

static double pool_tol(nn_dtype dt)
{
    switch (dt) {
    case NN_F32: return 1e-5;
    case NN_F64: return 1e-12;
    case NN_F16: return 2e-3;
    default: return 1.6e-2;
    }
}

static pair make_pool_input(nn_dtype dt, int nd, const int64_t *s, int v, bool nan) { return make_nan(dt, nd, s, v, -3, 3, nan ? 0.05 : 0); }

/* ind: ask for the indices; without, the GPU's backward reads its own uint8 window positions where
 * the window allows (engine/pool.c's run_max) */
static void maxpool_case(const maxcfg *m, nn_dtype dt, int nd, const int64_t *xs, int xv, bool nan, bool grad, bool ind)
{
    char sh[96];
    if (!begin("max_pool2d %s %s %s k%lldx%lld s%lld,%lld p%lld,%lld d%lld,%lld%s%s%s%s", nn_dtype_name(dt), nn_shape_str(sh, nd, xs),
               VNAME[fix_view(xv, nd)], (long long)m->k[0], (long long)m->k[1], (long long)m->s[0], (long long)m->s[1], (long long)m->p[0],
               (long long)m->p[1], (long long)m->d[0], (long long)m->d[1], m->ceil ? " ceil" : "", nan ? " NaN" : "", grad ? " backward" : "",
               ind ? "" : " (no indices asked)"))
        return;
    pair x = make_pool_input(dt, nd, xs, xv, nan);
    if (grad) set_grad(x);
    nn_tensor *ic = NULL, *ig = NULL;
    nn_tensor *c = nn_max_pool2d(x.c, m->k, m->s, m->p, m->d, m->ceil, ind ? &ic : NULL);
    if (!c) save_err();
    nn_tensor *g = nn_max_pool2d(x.g, m->k, m->s, m->p, m->d, m->ceil, ind ? &ig : NULL);
    check("values", c, g, 0, 0);
    if (c && g && ind) check("indices", ic, ig, 0, 0);
    if (grad && c && g && backward_both_as(c, g, nd == 4 ? xv : V_CONTIG)) check_grad("x.grad", x, 4);
    nn_release(c), nn_release(g), nn_release(ic), nn_release(ig);
    pair_free(x);
    end();
}

static void avgpool_case(const avgcfg *m, nn_dtype dt, int nd, const int64_t *xs, int xv, bool grad)
{
    char sh[96];
    if (!begin("avg_pool2d %s %s %s k%lldx%lld s%lld,%lld p%lld,%lld%s%s div %lld%s", nn_dtype_name(dt), nn_shape_str(sh, nd, xs),
               VNAME[fix_view(xv, nd)], (long long)m->k[0], (long long)m->k[1], (long long)m->s[0], (long long)m->s[1], (long long)m->p[0],
               (long long)m->p[1], m->ceil ? " ceil" : "", m->cip ? " count_include_pad" : "", (long long)m->div, grad ? " backward" : ""))
        return;
    pair x = make_pool_input(dt, nd, xs, xv, false);
    if (grad) set_grad(x);
    nn_tensor *c = nn_avg_pool2d(x.c, m->k, m->s, m->p, m->ceil, m->cip, m->div);
    if (!c) save_err();
    nn_tensor *g = nn_avg_pool2d(x.g, m->k, m->s, m->p, m->ceil, m->cip, m->div);
    double t = pool_tol(dt);
    check("avg_pool2d", c, g, t, t);
    if (grad && c && g && backward_both(c, g)) check("x.grad", x.c->grad, x.g->grad, t, 3 * t);
    nn_release(c), nn_release(g);
    pair_free(x);
    end();
}

static void adaptive_case(bool is_max, nn_dtype dt, int nd, const int64_t *xs, int xv, int64_t oh, int64_t ow, bool grad)
{
    char sh[96];
    if (!begin("adaptive_%s_pool2d %s %s %s -> %lldx%lld%s", is_max ? "max" : "avg", nn_dtype_name(dt), nn_shape_str(sh, nd, xs), VNAME[fix_view(xv, nd)],
               (long long)oh, (long long)ow, grad ? " backward" : ""))
        return;
    pair x = make_pool_input(dt, nd, xs, xv, false);
    if (grad) set_grad(x);
    nn_tensor *ic = NULL, *ig = NULL, *c, *g;
    double t = pool_tol(dt);
    if (is_max) {
        c = nn_adaptive_max_pool2d(x.c, oh, ow, &ic);
        if (!c) save_err();
        g = nn_adaptive_max_pool2d(x.g, oh, ow, &ig);
        check("values", c, g, 0, 0);
        if (c && g) check("indices", ic, ig, 0, 0);
    } else {
        c = nn_adaptive_avg_pool2d(x.c, oh, ow);
        if (!c) save_err();
        g = nn_adaptive_avg_pool2d(x.g, oh, ow);
        check("values", c, g, t, t);
    }
    if (grad && c && g && backward_both_as(c, g, nd == 4 ? xv : V_CONTIG)) check("x.grad", x.c->grad, x.g->grad, t, 3 * t);
    nn_release(c), nn_release(g), nn_release(ic), nn_release(ig);
    pair_free(x);
    end();
}

static void test_pool(void)
{
    static const maxcfg MAXS[] = {
        {{2, 2}, {2, 2}, {0, 0}, {1, 1}, false}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, false}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
        {{3, 2}, {1, 2}, {1, 0}, {2, 1}, false}, {{2, 2}, {1, 1}, {0, 0}, {1, 1}, false}, {{3, 3}, {3, 2}, {1, 1}, {2, 2}, true},
        {{3, 3}, {2, 2}, {0, 0}, {1, 1}, false}, {{2, 2}, {2, 2}, {1, 1}, {1, 1}, true}, /* AlexNet's; a 2 x 2 window's edges */
    };
    static const avgcfg AVGS[] = {
        {{2, 2}, {2, 2}, {0, 0}, false, true, 0}, {{3, 3}, {2, 2}, {1, 1}, false, true, 0}, {{3, 3}, {2, 2}, {1, 1}, false, false, 0},
        {{3, 3}, {2, 2}, {1, 1}, true, false, 0}, {{3, 3}, {2, 2}, {1, 1}, true, true, 0},  {{3, 2}, {1, 2}, {1, 1}, false, true, 5},
        {{2, 3}, {2, 1}, {1, 0}, true, false, 0},
    };
    const int views[] = {V_CONTIG, V_T, V_NARROW, V_CL};
    for (int d = 0; d < NFLOATS; d++) {
        nn_dtype dt = FLOATS[d];
        for (size_t i = 0; i < sizeof MAXS / sizeof *MAXS; i++) {
            for (int v = 0; v < 4; v++) {
                maxpool_case(&MAXS[i], dt, 4, PX4, views[v], false, v < 2, true);
                maxpool_case(&MAXS[i], dt, 4, PX4, views[v], false, true, false);
            }
            maxpool_case(&MAXS[i], dt, 3, PX3, V_CONTIG, false, true, true);
            maxpool_case(&MAXS[i], dt, 3, PX3, V_CONTIG, false, true, false);
            maxpool_case(&MAXS[i], dt, 4, PX4, V_CONTIG, true, true, true);
            maxpool_case(&MAXS[i], dt, 4, PX4, V_CONTIG, true, true, false);
        }
        for (size_t i = 0; i < sizeof AVGS / sizeof *AVGS; i++) {
            for (int v = 0; v < 4; v++) avgpool_case(&AVGS[i], dt, 4, PX4, views[v], v < 2);
            avgpool_case(&AVGS[i], dt, 3, PX3, V_NARROW, true);
        }
        const int64_t a4[4] = {2, 3, 10, 7}, a5[4] = {2, 3, 5, 4}, outs[][2] = {{1, 1}, {3, 5}, {4, 4}, {7, 6}, {10, 7}};
        for (int mx = 0; mx < 2; mx++)
            for (size_t o = 0; o < sizeof outs / sizeof *outs; o++) {
                adaptive_case(mx, dt, 4, a4, V_CONTIG, outs[o][0], outs[o][1], true);
                adaptive_case(mx, dt, 4, a5, V_T, outs[o][0], outs[o][1], true);
                adaptive_case(mx, dt, 3, PX3, V_CL, outs[o][0], outs[o][1], o == 1);
            }
        /* channels-last with C a multiple of 16 bytes' worth: the max kernels take several channels a thread */
        const int64_t pc[4] = {2, 16, 9, 11}, ac[4] = {3, 24, 10, 7};
        for (size_t i = 0; i < sizeof MAXS / sizeof *MAXS; i++) {
            for (int ind = 0; ind < 2; ind++) {
                maxpool_case(&MAXS[i], dt, 4, pc, V_CL, false, true, ind);
                maxpool_case(&MAXS[i], dt, 4, pc, V_CL, true, true, ind);
            }
        }
        for (size_t o = 0; o < sizeof outs / sizeof *outs; o++) adaptive_case(true, dt, 4, ac, V_CL, outs[o][0], outs[o][1], true);
        /* larger planes: many threads */
        const int64_t big[4] = {8, 64, 32, 32};
        maxpool_case(&MAXS[1], dt, 4, big, V_CONTIG, false, true, true);
        maxpool_case(&MAXS[1], dt, 4, big, V_CONTIG, false, true, false);
        avgpool_case(&AVGS[1], dt, 4, big, V_CONTIG, true);
        adaptive_case(false, dt, 4, big, V_CONTIG, 1, 1, true);
        adaptive_case(true, dt, 4, big, V_CONTIG, 5, 7, true);
    }
    /* a plane wider than the kernels' int32 indexing allows (their int64 path) */
    const int64_t wide[4] = {1, 2, 3, 20000};
    maxpool_case(&MAXS[1], NN_F32, 4, wide, V_T, false, true, true);
    maxpool_case(&MAXS[1], NN_F32, 4, wide, V_T, false, true, false);
    /* a window of 16 x 16 = 256 positions, the most uint8 holds, and one of 17 x 16 (int64) */
    static const maxcfg k256 = {{16, 16}, {3, 5}, {8, 8}, {1, 1}, false}, k272 = {{17, 16}, {3, 5}, {8, 8}, {1, 1}, false};
    const int64_t mid[4] = {2, 3, 40, 37};
    for (int v = 0; v < 2; v++) {
        maxpool_case(&k256, NN_F32, 4, mid, v ? V_CL : V_CONTIG, false, true, false);
        maxpool_case(&k272, NN_F32, 4, mid, v ? V_CL : V_CONTIG, false, true, false);
    }
    avgpool_case(&AVGS[2], NN_F32, 4, wide, V_NARROW, true);
    adaptive_case(false, NN_F32, 4, wide, V_CONTIG, 2, 301, true);
    adaptive_case(true, NN_F32, 4, wide, V_CONTIG, 2, 301, true);
    /* an empty batch */
    const int64_t e4[4] = {0, 3, 8, 8};
    maxpool_case(&MAXS[0], NN_F32, 4, e4, V_CONTIG, false, false, true);
    avgpool_case(&AVGS[0], NN_F32, 4, e4, V_CONTIG, false);
    adaptive_case(false, NN_F32, 4, e4, V_CONTIG, 2, 2, false);
    /* errors are the CPU's */
    static const maxcfg badpad = {{2, 2}, {2, 2}, {2, 2}, {1, 1}, false};
    maxpool_case(&badpad, NN_F32, 4, PX4, V_CONTIG, false, false, true);
}

int main(void)
{
    harness_init();
    double t0 = now();
    if (begin("flags: matmul TF32 off, cuDNN TF32 on, cudnn.benchmark off by default")) {
        if (nn_cuda_get_matmul_allow_tf32() || !nn_cudnn_get_allow_tf32() || nn_cudnn_get_benchmark())
            fail("defaults %d %d %d", nn_cuda_get_matmul_allow_tf32(), nn_cudnn_get_allow_tf32(), nn_cudnn_get_benchmark());
        end();
    }
    test_matmul();
    test_linear();
    test_conv();
    test_pool();
    return harness_done("test_cuda_nn", t0);
}
