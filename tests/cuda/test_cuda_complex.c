/* Complex tensors on CUDA against the CPU engine (harness.h): every op the engine lets take
 * complex operands on the GPU (engine/complex.c) runs on the same complex64 and complex128
 * inputs on the CPU and on cuda:0, on contiguous, transposed, narrowed (unaligned) and expanded
 * (broadcast) inputs: the unary ops and pow with a number, the binary ops (broadcasting, mixed
 * with real tensors, the other complex dtype and numbers), where, casts to and from every
 * dtype, fills, index_select, the reductions sum/mean/prod/all/any, matrix products (bmm,
 * matmul, addmm, k = 0) and the DFT kernel fft_c2c (cuFFT: lengths with small and large prime
 * factors, both signs, any dim); special values (zeros, infinities, NaNs) through the
 * elementwise ops; and gradients of a graph of them. complex64 agrees within 1e-5 relative to
 * the element's modulus (the GPU computes elementwise ops in double, as the CPU), complex128
 * within 1e-12, the FFT within float tolerances of the result's largest modulus.
 * Arguments name sections (unary binary where copy index reduce blas fft special autograd);
 * none: all. The last line counts cases: "N passed, N failed, N skipped". */
#define HARNESS_SEED 0x6A09E667F3BCC909ULL
#include "harness.h"
#include "complex_ops.h"
#include "nnfunc.h"

static const nn_dtype CDT[] = {NN_C64, NN_C128};

enum { D_ANY, D_SMALL, D_NONZERO, D_SET };

/* a tensor of random complex values: parts in [-2, 2] (D_ANY), [-0.6, 0.6] (D_SMALL: where
 * asin, atanh and tan stay well-conditioned), away from 0 (D_NONZERO) or in {-1, 0, 1} */
static nn_tensor *mk(nn_dtype dt, int nd, const int64_t *s, int dom)
{
    nn_tensor *t = nn_empty(nd, s, dt, CPU);
    if (!t) return NULL;
    int64_t n = nn_numel(t);
    size_t es = nn_dtype_size(dt);
    char *p = nn_data(t);
    for (int64_t i = 0; i < n; i++) {
        double re, im;
        switch (dom) {
        case D_SMALL: re = -0.6 + 1.2 * urand(), im = -0.6 + 1.2 * urand(); break;
        case D_NONZERO: {
            double r = 0.3 + 1.7 * urand(), a = 6.283185307179586 * urand();
            re = r * cos(a), im = r * sin(a);
            break;
        }
        case D_SET: re = (double)irand(-1, 1), im = (double)irand(-1, 1); break;
        default: re = -2 + 4 * urand(), im = -2 + 4 * urand(); break;
        }
        if (nn_dtype_is_complex(dt)) nn_store_c(p + i * es, dt, re, im);
        else if (dt == NN_BOOL) nn_store_f64(p + i * es, dt, re > 0);
        else if (nn_dtype_is_integral(dt)) nn_store_f64(p + i * es, dt, round(5 * re));
        else nn_store_f64(p + i * es, dt, re);
    }
    return t;
}

static pair make(nn_dtype dt, int nd, const int64_t *s, int layout, int dom)
{
    int64_t bs[NN_MAX_DIMS];
    layout = fix_layout(layout, nd);
    base_shape(layout, nd, s, bs);
    return share(mk(dt, nd, bs, dom), layout, nd, s);
}

/* a complex number as a 0-dim CPU tensor (joins a CUDA op as a value) */
static nn_tensor *cnumber(double re, double im, nn_dtype dt)
{
    nn_tensor *c = nn_scalar_c128(re, im), *r = c ? nn_to_dtype(c, dt) : NULL;
    nn_release(c);
    return r;
}

typedef struct { int nd; int64_t s[4]; } shape;
#define LARGE ((1 << 20) + 3)
static const shape SHAPES[] = {{2, {13, 37}}, {1, {1001}}, {3, {3, 5, 7}}};
#define NSHAPES 3
static const shape BIG = {1, {LARGE}};

static const char *sname(shape sh) { return sh.s[0] == LARGE ? " large" : sh.nd == 3 ? " 3-d" : sh.nd == 1 ? " 1-d" : ""; }

/* ---- unary ---- */

static const nn_op UNARY[] = {NN_OP_neg, NN_OP_exp, NN_OP_log, NN_OP_sqrt, NN_OP_rsqrt, NN_OP_abs, NN_OP_angle, NN_OP_sigmoid,
                              NN_OP_tanh, NN_OP_log1p, NN_OP_sin, NN_OP_cos, NN_OP_tan, NN_OP_asin, NN_OP_acos, NN_OP_atan,
                              NN_OP_sinh, NN_OP_cosh, NN_OP_asinh, NN_OP_acosh, NN_OP_atanh, NN_OP_expm1, NN_OP_exp2,
                              NN_OP_log2, NN_OP_log10, NN_OP_reciprocal, NN_OP_conj_physical, NN_OP_sgn, NN_OP_logical_not};
#define NUNARY (sizeof UNARY / sizeof UNARY[0])

static int unary_domain(nn_op op)
{
    switch (op) {
    case NN_OP_log: case NN_OP_rsqrt: case NN_OP_log2: case NN_OP_log10: case NN_OP_reciprocal: case NN_OP_sgn: return D_NONZERO;
    case NN_OP_asin: case NN_OP_acos: case NN_OP_atan: case NN_OP_atanh: case NN_OP_tan: case NN_OP_log1p: return D_SMALL;
    case NN_OP_logical_not: return D_SET;
    default: return D_ANY;
    }
}

static void unary_case(nn_op op, nn_dtype dt, shape sh, int layout)
{
    if (!begin("%s %s %s%s", nn_op_name(op), nn_dtype_name(dt), LNAME[fix_layout(layout, sh.nd)], sname(sh))) return;
    pair x = make(dt, sh.nd, sh.s, layout, unary_domain(op));
    nn_tensor *c = nn_unary(op, x.c);
    if (!c) save_err();
    nn_tensor *g = nn_unary(op, x.g);
    check_tol(nn_op_name(op), c, g, dt, 1);
    nn_release(c), nn_release(g);
    pair_free(x);
    end();
}

static void test_unary(void)
{
    for (int d = 0; d < 2; d++) {
        for (size_t k = 0; k < NUNARY; k++)
            for (int l = 0; l < NLAYOUT; l++) unary_case(UNARY[k], CDT[d], SHAPES[0], l);
        for (size_t k = 0; k < NUNARY; k++) unary_case(UNARY[k], CDT[d], SHAPES[1 + k % 2], L_TRANS);
        unary_case(NN_OP_exp, CDT[d], BIG, L_CONTIG);
        unary_case(NN_OP_conj_physical, CDT[d], BIG, L_NARROW);
        const double exps[] = {0, 1, 2, 3, 0.5, -1, -2.5};
        for (int e = 0; e < 7; e++)
            for (int l = 0; l < NLAYOUT; l += 3) {
                if (!begin("pow_scalar %g %s %s", exps[e], nn_dtype_name(CDT[d]), LNAME[l])) continue;
                pair x = make(CDT[d], 2, SHAPES[0].s, l, D_NONZERO);
                nn_tensor *c = nn_pow_scalar(x.c, exps[e]);
                if (!c) save_err();
                nn_tensor *g = nn_pow_scalar(x.g, exps[e]);
                check_tol("pow_scalar", c, g, CDT[d], 4);
                nn_release(c), nn_release(g);
                pair_free(x);
                end();
            }
    }
}

/* ---- binary ---- */

static const nn_op BINARY[] = {NN_OP_add, NN_OP_sub, NN_OP_mul, NN_OP_div, NN_OP_pow, NN_OP_eq, NN_OP_ne, NN_OP_logical_and,
                               NN_OP_logical_or};
#define NBINARY (sizeof BINARY / sizeof BINARY[0])

/* a op b on both sides; b2: the right operand's dtype (complex, real, or the other complex) */
static void binary_case(nn_op op, nn_dtype dt, nn_dtype dt2, shape sh, int layout, bool bcast)
{
    if (!begin("%s %s %s %s%s%s", nn_op_name(op), nn_dtype_name(dt), nn_dtype_name(dt2), LNAME[fix_layout(layout, sh.nd)],
               bcast ? " broadcast" : "", sname(sh)))
        return;
    bool cmp = op == NN_OP_eq || op == NN_OP_ne || op == NN_OP_logical_and || op == NN_OP_logical_or;
    int dom = cmp ? D_SET : op == NN_OP_div || op == NN_OP_pow ? D_NONZERO : D_ANY;
    pair a = make(dt, sh.nd, sh.s, layout, dom);
    pair b = bcast ? make(dt2, 1, &sh.s[sh.nd - 1], L_CONTIG, dom) : make(dt2, sh.nd, sh.s, layout == L_EXPAND ? L_CONTIG : layout, dom);
    nn_tensor *c = nn_binary(op, a.c, b.c);
    if (!c) save_err();
    nn_tensor *g = nn_binary(op, a.g, b.g);
    check_tol(nn_op_name(op), c, g, nn_promote_types(dt, dt2), op == NN_OP_pow ? 10 : 1);
    nn_release(c), nn_release(g);
    pair_free(a), pair_free(b);
    end();
}

static void test_binary(void)
{
    for (int d = 0; d < 2; d++) {
        nn_dtype dt = CDT[d], other = CDT[1 - d], real = d ? NN_F64 : NN_F32;
        for (size_t k = 0; k < NBINARY; k++) {
            for (int l = 0; l < NLAYOUT; l++) binary_case(BINARY[k], dt, dt, SHAPES[0], l, false);
            binary_case(BINARY[k], dt, dt, SHAPES[0], L_CONTIG, true);
            binary_case(BINARY[k], dt, dt, SHAPES[2], L_TRANS, true);
            binary_case(BINARY[k], dt, real, SHAPES[0], L_TRANS, true);
            binary_case(BINARY[k], dt, other, SHAPES[1], L_NARROW, false);
            binary_case(BINARY[k], real, dt, SHAPES[0], L_CONTIG, false);
        }
        binary_case(NN_OP_mul, dt, NN_I64, SHAPES[0], L_CONTIG, false);
        binary_case(NN_OP_add, dt, dt, BIG, L_CONTIG, false);
        binary_case(NN_OP_mul, dt, dt, BIG, L_NARROW, false);
        /* with numbers: a real one, a complex one (a 0-dim CPU tensor), alpha */
        for (int l = 0; l < NLAYOUT; l += 2) {
            if (!begin("numbers %s %s", nn_dtype_name(dt), LNAME[l])) continue;
            pair a = make(dt, 2, SHAPES[0].s, l, D_NONZERO);
            nn_tensor *two = nn_scalar_f64(2.5), *z = cnumber(0.5, -1.25, NN_C128);
            const nn_op ops[] = {NN_OP_add, NN_OP_mul, NN_OP_div, NN_OP_pow, NN_OP_sub};
            for (int k = 0; k < 5; k++) {
                nn_tensor *c = nn_binary(ops[k], a.c, z), *g = nn_binary(ops[k], a.g, z);
                check_tol("complex number", c, g, dt, 10);
                nn_release(c), nn_release(g);
                c = nn_binary(ops[k], z, a.c), g = nn_binary(ops[k], z, a.g);
                check_tol("complex number on the left", c, g, dt, 10);
                nn_release(c), nn_release(g);
                c = nn_binary(ops[k], a.c, two), g = nn_binary(ops[k], a.g, two);
                check_tol("real number", c, g, dt, 10);
                nn_release(c), nn_release(g);
            }
            pair b = make(dt, 2, SHAPES[0].s, L_CONTIG, D_ANY);
            nn_tensor *c = nn_add_alpha(a.c, b.c, -1.5), *g = nn_add_alpha(a.g, b.g, -1.5);
            check_dt("add alpha", c, g);
            nn_release(c), nn_release(g);
            if (nn_binary_(NN_OP_mul, a.c, b.c) || nn_binary_(NN_OP_mul, a.g, b.g)) fail("mul_: %s", nn_last_error());
            else check_dt("mul_", a.c, a.g);
            nn_release(two), nn_release(z);
            pair_free(a), pair_free(b);
            end();
        }
    }
}

/* ---- where ---- */

static void test_where(void)
{
    for (int d = 0; d < 2; d++)
        for (int l = 0; l < NLAYOUT; l++) {
            nn_dtype dt = CDT[d];
            if (!begin("where %s %s", nn_dtype_name(dt), LNAME[l])) continue;
            pair cond = make(NN_BOOL, 2, SHAPES[0].s, l, D_ANY), a = make(dt, 2, SHAPES[0].s, l, D_ANY);
            pair b = make(d ? NN_F64 : NN_F32, 1, &SHAPES[0].s[1], L_CONTIG, D_ANY), o = make(CDT[1 - d], 2, SHAPES[0].s, L_TRANS, D_ANY);
            nn_tensor *c = nn_where(cond.c, a.c, b.c), *g = nn_where(cond.g, a.g, b.g);
            check_dt("complex and real", c, g);
            nn_release(c), nn_release(g);
            c = nn_where(cond.c, a.c, o.c), g = nn_where(cond.g, a.g, o.g);
            check_dt("both complex dtypes", c, g);
            nn_release(c), nn_release(g);
            nn_tensor *z = cnumber(1, -2, dt), *two = nn_scalar_f64(2);
            c = nn_where(cond.c, z, a.c), g = nn_where(cond.g, z, a.g);
            check_dt("a complex number", c, g);
            nn_release(c), nn_release(g);
            c = nn_where(cond.c, a.c, two), g = nn_where(cond.g, a.g, two);
            check_dt("a real number", c, g);
            nn_release(c), nn_release(g);
            nn_release(z), nn_release(two);
            pair_free(cond), pair_free(a), pair_free(b), pair_free(o);
            end();
        }
}

/* ---- casts, copies, fills ---- */

static const nn_dtype ALL[] = {NN_F32, NN_F64, NN_F16, NN_BF16, NN_I64, NN_I32, NN_I16, NN_I8, NN_U8, NN_BOOL, NN_C64, NN_C128};

static void test_copy(void)
{
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 12; k++)
            for (int l = 0; l < NLAYOUT; l++) {
                nn_dtype dt = CDT[d], o = ALL[k];
                if (!begin("cast %s -> %s %s", nn_dtype_name(dt), nn_dtype_name(o), LNAME[l])) continue;
                pair x = make(dt, 2, SHAPES[0].s, l, D_ANY);
                nn_tensor *c = nn_to_dtype(x.c, o), *g = nn_to_dtype(x.g, o);
                check_dt("complex to", c, g);
                nn_release(c), nn_release(g);
                pair y = make(o, 2, SHAPES[0].s, l, D_ANY);
                c = nn_to_dtype(y.c, dt), g = nn_to_dtype(y.g, dt);
                check_dt("to complex", c, g);
                nn_release(c), nn_release(g);
                /* a strided copy of the same dtype (contiguous() of the view), and copy_ into a transposed complex */
                c = nn_contiguous(x.c), g = nn_contiguous(x.g);
                check_dt("contiguous", c, g);
                nn_release(c), nn_release(g);
                pair dst = make(dt, 2, SHAPES[0].s, L_TRANS, D_ANY);
                if (nn_copy_(dst.c, y.c) || nn_copy_(dst.g, y.g)) fail("copy_: %s", nn_last_error());
                else check_dt("copy_", dst.c, dst.g);
                pair_free(x), pair_free(y), pair_free(dst);
                end();
            }
    for (int d = 0; d < 2; d++)
        for (int l = 0; l < NLAYOUT - 1; l++) {
            if (!begin("fill %s %s", nn_dtype_name(CDT[d]), LNAME[l])) continue;
            pair x = make(CDT[d], 2, SHAPES[0].s, l, D_ANY);
            if (nn_fill_complex_(x.c, 1.5, -0.25) || nn_fill_complex_(x.g, 1.5, -0.25)) fail("fill: %s", nn_last_error());
            else check_dt("fill", x.c, x.g);
            if (nn_fill_complex_(x.c, 0, 0) || nn_fill_complex_(x.g, 0, 0)) fail("fill 0: %s", nn_last_error());
            else check_dt("fill 0", x.c, x.g);
            if (nn_fill_(x.c, 3) || nn_fill_(x.g, 3)) fail("fill_ 3: %s", nn_last_error());
            else check_dt("fill_ 3", x.c, x.g);
            pair_free(x);
            end();
        }
}

/* ---- index_select ---- */

static void test_index(void)
{
    for (int d = 0; d < 2; d++)
        for (int l = 0; l < NLAYOUT; l++)
            for (int dim = 0; dim < 2; dim++) {
                if (!begin("index_select %s %s dim %d", nn_dtype_name(CDT[d]), LNAME[l], dim)) continue;
                pair x = make(CDT[d], 2, SHAPES[0].s, l, D_ANY);
                int64_t ni = 9;
                nn_tensor *ix = nn_empty(1, &ni, NN_I64, CPU);
                for (int i = 0; i < ni; i++) ((int64_t *)nn_data(ix))[i] = irand(0, x.c->shape[dim] - 1);
                nn_tensor *gix = to_dev(ix);
                nn_tensor *c = nn_index_select(x.c, dim, ix), *g = nn_index_select(x.g, dim, gix);
                check_dt("index_select", c, g);
                nn_release(c), nn_release(g), nn_release(ix), nn_release(gix);
                pair_free(x);
                end();
            }
}

/* ---- reductions ---- */

static void reduce_case(nn_op op, nn_dtype dt, shape sh, int layout, uint32_t dims, bool keepdim)
{
    if (!begin("%s %s %s dims 0x%x%s%s", nn_op_name(op), nn_dtype_name(dt), LNAME[fix_layout(layout, sh.nd)], dims, keepdim ? " keepdim" : "",
               sname(sh)))
        return;
    /* prod: values near the unit circle, so long products stay finite */
    int dom = op == NN_OP_all || op == NN_OP_any ? D_SET : D_ANY;
    pair x = make(dt, sh.nd, sh.s, layout, dom);
    if (op == NN_OP_prod) {
        nn_tensor *c = nn_unary(NN_OP_sgn, x.c), *g = nn_unary(NN_OP_sgn, x.g);
        pair_free(x);
        x = (pair){c, g};
    }
    nn_tensor *c = nn_reduce(op, x.c, dims, keepdim);
    if (!c) save_err();
    nn_tensor *g = nn_reduce(op, x.g, dims, keepdim);
    double n = (double)nn_numel(x.c) / (c && nn_numel(c) ? (double)nn_numel(c) : 1);
    check_tol(nn_op_name(op), c, g, dt, 1 + sqrt(n)); /* summation orders differ */
    nn_release(c), nn_release(g);
    pair_free(x);
    end();
}

static void test_reduce(void)
{
    const nn_op ops[] = {NN_OP_sum, NN_OP_mean, NN_OP_prod, NN_OP_all, NN_OP_any};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 5; k++) {
            for (int l = 0; l < NLAYOUT; l++) {
                reduce_case(ops[k], CDT[d], SHAPES[0], l, 0, false);
                reduce_case(ops[k], CDT[d], SHAPES[0], l, 1, false);
                reduce_case(ops[k], CDT[d], SHAPES[0], l, 2, true);
            }
            reduce_case(ops[k], CDT[d], SHAPES[2], L_TRANS, 5, false);
            reduce_case(ops[k], CDT[d], SHAPES[2], L_CONTIG, 2, true);
            reduce_case(ops[k], CDT[d], BIG, L_CONTIG, 0, false);
            shape wide = {2, {3, 100000}}, tall = {2, {20000, 40}};
            reduce_case(ops[k], CDT[d], wide, L_CONTIG, 2, false);
            reduce_case(ops[k], CDT[d], tall, L_CONTIG, 1, false);
            reduce_case(ops[k], CDT[d], tall, L_TRANS, 2, false);
            shape empty = {2, {0, 5}};
            reduce_case(ops[k], CDT[d], empty, L_CONTIG, 1, false);
            reduce_case(ops[k], CDT[d], empty, L_CONTIG, 0, false);
        }
}

/* ---- matrix products ---- */

static void test_blas(void)
{
    for (int d = 0; d < 2; d++)
        for (int la = 0; la < 3; la++)
            for (int lb = 0; lb < 3; lb++) {
                nn_dtype dt = CDT[d];
                if (!begin("bmm %s %s x %s", nn_dtype_name(dt), LNAME[la], LNAME[lb])) continue;
                int64_t as[3] = {3, 17, 33}, bs[3] = {3, 33, 9};
                pair a = make(dt, 3, as, la, D_ANY), b = make(dt, 3, bs, lb, D_ANY);
                double scale = 10; /* sums of 33 products */
                nn_tensor *c = nn_bmm(a.c, b.c), *g = nn_bmm(a.g, b.g);
                check_tol("bmm", c, g, dt, scale);
                nn_release(c), nn_release(g);
                c = nn_matmul(a.c, b.c), g = nn_matmul(a.g, b.g);
                check_tol("matmul", c, g, dt, scale);
                nn_release(c), nn_release(g);
                nn_tensor *a0c = nn_select(a.c, 0, 1), *a0g = nn_select(a.g, 0, 1); /* broadcast over b's batch */
                c = nn_matmul(a0c, b.c), g = nn_matmul(a0g, b.g);
                check_tol("matmul broadcast", c, g, dt, scale);
                nn_release(c), nn_release(g);
                nn_tensor *b0c = nn_select(b.c, 0, 2), *b0g = nn_select(b.g, 0, 2);
                pair bias = make(dt, 1, &bs[2], L_CONTIG, D_ANY);
                c = nn_addmm(bias.c, a0c, b0c, 0.5, -2), g = nn_addmm(bias.g, a0g, b0g, 0.5, -2);
                check_tol("addmm", c, g, dt, scale);
                nn_release(c), nn_release(g);
                nn_tensor *v = nn_select(b0c, 1, 0), *vg = nn_select(b0g, 1, 0);
                c = nn_matmul(a0c, v), g = nn_matmul(a0g, vg);
                check_tol("mv", c, g, dt, scale);
                nn_release(c), nn_release(g), nn_release(v), nn_release(vg);
                nn_release(a0c), nn_release(a0g), nn_release(b0c), nn_release(b0g);
                pair_free(a), pair_free(b), pair_free(bias);
                end();
            }
    for (int d = 0; d < 2; d++) {
        if (!begin("addmm k = 0 %s", nn_dtype_name(CDT[d]))) continue;
        int64_t as[2] = {4, 0}, bs[2] = {0, 5}, cs[2] = {4, 5};
        pair a = make(CDT[d], 2, as, L_CONTIG, D_ANY), b = make(CDT[d], 2, bs, L_CONTIG, D_ANY), bias = make(CDT[d], 2, cs, L_TRANS, D_ANY);
        nn_tensor *c = nn_addmm(bias.c, a.c, b.c, 0.5, 1), *g = nn_addmm(bias.g, a.g, b.g, 0.5, 1);
        check_dt("addmm k = 0", c, g);
        nn_release(c), nn_release(g);
        pair_free(a), pair_free(b), pair_free(bias);
        end();
    }
}

/* ---- the DFT kernel ---- */

/* |c - g| <= tol * max |c| over every element (an FFT's error spreads over its outputs) */
static void check_fft(const char *what, nn_tensor *c, nn_tensor *g, nn_dtype dt)
{
    if (!c || !g) {
        check(what, c, g, 0, 0);
        return;
    }
    nn_tensor *h = to_cpu(g), *hc = nn_contiguous(h), *cc = nn_contiguous(c);
    double mx = 0, err = 0;
    int64_t n = nn_numel(cc);
    for (int64_t i = 0; i < n; i++) {
        double ar, ai, br, bi;
        nn_load_c((char *)nn_data(cc) + i * nn_dtype_size(dt), dt, &ar, &ai);
        nn_load_c((char *)nn_data(hc) + i * nn_dtype_size(dt), dt, &br, &bi);
        mx = fmax(mx, hypot(ar, ai));
        double e = hypot(ar - br, ai - bi);
        err = isnan(e) ? INFINITY : fmax(err, e);
    }
    double tol = dt == NN_C64 ? 2e-5 : 1e-12;
    if (!(err <= tol * (mx > 1 ? mx : 1))) fail("%s: largest error %.3g against the largest modulus %.3g", what, err, mx);
    nn_release(h), nn_release(hc), nn_release(cc);
}

static void fft_case(nn_dtype dt, int nd, const int64_t *s, int layout, int dim, bool inverse)
{
    char sh[80];
    if (!begin("fft_c2c %s %s %s dim %d%s", nn_dtype_name(dt), nn_shape_str(sh, nd, s), LNAME[fix_layout(layout, nd)], dim,
               inverse ? " inverse" : ""))
        return;
    pair x = make(dt, nd, s, layout, D_ANY);
    nn_tensor *c = nn_fft_c2c(x.c, dim, inverse);
    if (!c) save_err();
    nn_tensor *g = nn_fft_c2c(x.g, dim, inverse);
    check_fft("fft_c2c", c, g, dt);
    nn_release(c), nn_release(g);
    pair_free(x);
    end();
}

static void test_fft(void)
{
    const int64_t lens[] = {1, 2, 3, 5, 8, 12, 13, 64, 97, 210, 1000, 1024, 4096, 4099};
    for (int d = 0; d < 2; d++) {
        for (int k = 0; k < 14; k++) {
            int64_t s[2] = {3, lens[k]};
            fft_case(CDT[d], 2, s, L_CONTIG, 1, false);
            fft_case(CDT[d], 2, s, L_CONTIG, -1, true);
        }
        int64_t s3[3] = {4, 6, 10};
        for (int dim = 0; dim < 3; dim++)
            for (int l = 0; l < NLAYOUT; l++) fft_case(CDT[d], 3, s3, l, dim, dim == 1);
        int64_t big[2] = {256, 1 << 14};
        fft_case(CDT[d], 2, big, L_CONTIG, 1, false);
        fft_case(CDT[d], 2, big, L_TRANS, 0, true);
        int64_t one[1] = {30030};
        fft_case(CDT[d], 1, one, L_CONTIG, 0, false);
        /* the same problem again: a cached plan */
        fft_case(CDT[d], 1, one, L_CONTIG, 0, false);
    }
}

/* ---- special values through the elementwise ops ---- */

static void test_special(void)
{
    const double sp[] = {0.0, -0.0, 1.5, -2.0, INFINITY, -INFINITY, NAN};
    for (int d = 0; d < 2; d++) {
        nn_dtype dt = CDT[d];
        int64_t n = 49;
        nn_tensor *x = nn_empty(1, &n, dt, CPU), *y = nn_empty(1, &n, dt, CPU);
        for (int i = 0; i < 7; i++)
            for (int j = 0; j < 7; j++) {
                nn_store_c((char *)nn_data(x) + (i * 7 + j) * nn_dtype_size(dt), dt, sp[i], sp[j]);
                nn_store_c((char *)nn_data(y) + (i * 7 + j) * nn_dtype_size(dt), dt, sp[(i + 3) % 7], sp[(j + 5) % 7]);
            }
        nn_tensor *xg = to_dev(x), *yg = to_dev(y);
        for (size_t k = 0; k < NUNARY; k++) {
            if (!begin("special values %s %s", nn_op_name(UNARY[k]), nn_dtype_name(dt))) continue;
            nn_tensor *c = nn_unary(UNARY[k], x), *g = nn_unary(UNARY[k], xg);
            check_tol("special", c, g, dt, 1);
            nn_release(c), nn_release(g);
            end();
        }
        for (size_t k = 0; k < NBINARY; k++) {
            if (!begin("special values %s %s", nn_op_name(BINARY[k]), nn_dtype_name(dt))) continue;
            nn_tensor *c = nn_binary(BINARY[k], x, y), *g = nn_binary(BINARY[k], xg, yg);
            check_tol("special", c, g, dt, 1);
            nn_release(c), nn_release(g);
            end();
        }
        nn_release(x), nn_release(y), nn_release(xg), nn_release(yg);
    }
}

/* ---- gradients ---- */

/* loss = sum |fft(x * w)|^2 / n + real(sum(exp(x) * conj(w))) + |prod(sgn(x[0]))| */
static nn_tensor *graph(nn_tensor *x, nn_tensor *w)
{
    nn_tensor *t[24] = {0}, *out = NULL;
    int n = 0;
#define STEP(var, e) \
    nn_tensor *var = (e); \
    t[n++] = var; \
    if (!var) goto done;
    STEP(xw, nn_binary(NN_OP_mul, x, w))
    STEP(f, nn_fft_c2c(xw, 1, false))
    STEP(fc, nn_conj(f))
    STEP(p, nn_binary(NN_OP_mul, f, fc))
    STEP(pr, nn_real(p))
    STEP(l1, nn_reduce(NN_OP_mean, pr, 0, false))
    STEP(ex, nn_unary(NN_OP_exp, x))
    STEP(wc, nn_conj(w))
    STEP(q, nn_binary(NN_OP_mul, ex, wc))
    STEP(qs, nn_reduce(NN_OP_sum, q, 0, false))
    STEP(l2, nn_real(qs))
    STEP(x0, nn_select(x, 0, 0))
    STEP(sg, nn_unary(NN_OP_sgn, x0))
    STEP(pd, nn_reduce(NN_OP_prod, sg, 0, false))
    STEP(l3, nn_unary(NN_OP_abs, pd))
    STEP(s1, nn_binary(NN_OP_add, l1, l2))
    STEP(s2, nn_binary(NN_OP_add, s1, l3))
#undef STEP
    out = nn_retain(s2);
done:
    for (int i = 0; i < n; i++) nn_release(t[i]);
    return out;
}

static void test_autograd(void)
{
    for (int d = 0; d < 2; d++) {
        if (!begin("autograd %s", nn_dtype_name(CDT[d]))) continue;
        int64_t xs[2] = {5, 12}, ws[1] = {12};
        pair x = make(CDT[d], 2, xs, L_TRANS, D_SMALL), w = make(CDT[d], 1, ws, L_CONTIG, D_SMALL);
        check_graph(graph, x, w, CDT[d] == NN_C128 ? 1e-10 : 1e-4);
        pair_free(x), pair_free(w);
        end();
    }
}

int main(int argc, char **argv)
{
    harness_start(argc, argv);
    double t0 = now();
    if (want("unary")) test_unary();
    if (want("binary")) test_binary();
    if (want("where")) test_where();
    if (want("copy")) test_copy();
    if (want("index")) test_index();
    if (want("reduce")) test_reduce();
    if (want("blas")) test_blas();
    if (want("fft")) test_fft();
    if (want("special")) test_special();
    if (want("autograd")) test_autograd();
    return harness_done("test_cuda_complex", t0);
}
