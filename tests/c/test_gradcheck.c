/* Gradients of every differentiable op against float64 central finite differences
 * (gradcheck.h), on non-contiguous leaves (transposed, narrowed; expanded through
 * nn_expand inside the function), with broadcasting between inputs, keepdim and
 * multi-dim reductions, every matmul shape case, views, joins and in-place ops.
 * Values are kept away from the points where an op is not differentiable. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gradcheck.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

/* value generators */
static double g_any(void) { return urand() * 4 - 2; }
static double g_pos(void) { return 0.5 + urand() * 1.5; }
static double g_away0(void) { return (urand() < 0.5 ? -1 : 1) * (0.2 + urand() * 1.8); }
static double g_small(void) { return urand() * 1.6 - 0.8; }
static double g_clamp(void) /* in [-1, 1], at least 0.05 from +-0.5 */
{
    double v;
    do v = urand() * 2 - 1;
    while (fabs(fabs(v) - 0.5) < 0.05);
    return v;
}

enum { CONTIG, TRANSPOSED, NARROWED, NLAYOUTS };
static const char *layout_name[] = {"contiguous", "transposed", "narrowed"};

/* A float64 leaf requiring grad of the given shape and layout, values from gen. */
static nn_tensor *leaf(int nd, const int64_t *shape, int layout, double (*gen)(void))
{
    int64_t bshape[NN_MAX_DIMS], bstr[NN_MAX_DIMS], st[NN_MAX_DIMS], off = 0;
    for (int d = 0; d < nd; d++) bshape[d] = layout == TRANSPOSED ? shape[nd - 1 - d] : shape[d] + (layout == NARROWED ? 2 : 0);
    nn_tensor *base = nn_empty(nd, bshape, NN_F64, NN_DEVICE_CPU);
    double *p = nn_data(base);
    for (int64_t i = 0; i < nn_numel(base); i++) p[i] = gen();
    nn_contiguous_strides(nd, bshape, bstr);
    for (int d = 0; d < nd; d++) {
        st[d] = layout == TRANSPOSED ? bstr[nd - 1 - d] : bstr[d];
        if (layout == NARROWED) off += bstr[d];
    }
    nn_tensor *v = nn_make_view(base, nd, shape, st, off);
    nn_release(base);
    nn_requires_grad_(v, true);
    return v;
}

static void release_all(nn_tensor **x, int n)
{
    for (int i = 0; i < n; i++) nn_release(x[i]);
}

#define EPS 1e-6
#define ATOL 1e-7
#define RTOL 1e-6

static void run(const char *name, gc_fn f, nn_tensor **x, int n, void *ctx)
{
    int ok = gradcheck(name, f, x, n, ctx, EPS, ATOL, RTOL);
    CHECK(ok, "%s", name);
    release_all(x, n);
}

/* ---- elementwise ---- */

typedef struct {
    nn_op op;
    double f0, f1, alpha;
    int64_t i0;
    bool expand; /* expand x[0] (size 1 in dim 0) to expand_to rows first */
    int64_t expand_to;
    int which; /* variant selector */
} ew_ctx;

static nn_tensor *maybe_expand(nn_tensor *x, const ew_ctx *c)
{
    if (!c->expand) return nn_retain(x);
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[0] = c->expand_to;
    return nn_expand(x, x->ndim, shape);
}

static nn_tensor *f_unary(nn_tensor *const *x, void *ctx)
{
    const ew_ctx *c = ctx;
    nn_tensor *in = maybe_expand(x[0], c), *r;
    if (c->op == NN_OP_clamp) r = nn_clamp(in, c->i0 & 1, c->f0, c->i0 & 2, c->f1);
    else if (c->op == NN_OP_pow_scalar) r = nn_pow_scalar(in, c->f0);
    else r = nn_unary(c->op, in);
    nn_release(in);
    return r;
}

static nn_tensor *f_binary(nn_tensor *const *x, void *ctx)
{
    const ew_ctx *c = ctx;
    nn_tensor *a = maybe_expand(x[0], c);
    nn_tensor *r = c->alpha != 1 ? nn_add_alpha(a, x[1], c->op == NN_OP_sub ? -c->alpha : c->alpha) : nn_binary(c->op, a, x[1]);
    nn_release(a);
    return r;
}

/* x op number, number op x (wrapped numbers) */
static nn_tensor *f_scalar(nn_tensor *const *x, void *ctx)
{
    const ew_ctx *c = ctx;
    nn_tensor *s = nn_scalar_f64(c->f0);
    nn_tensor *r = c->which ? nn_binary(c->op, s, x[0]) : nn_binary(c->op, x[0], s);
    nn_release(s);
    return r;
}

static nn_tensor *f_where(nn_tensor *const *x, void *ctx)
{
    nn_tensor *cond = ctx;
    return nn_where(cond, x[0], x[1]);
}

static void test_unary(void)
{
    static const struct { nn_op op; double (*gen)(void); } ops[] = {
        {NN_OP_neg, g_any},    {NN_OP_exp, g_any},       {NN_OP_log, g_pos},   {NN_OP_sqrt, g_pos},
        {NN_OP_rsqrt, g_pos},  {NN_OP_abs, g_away0},     {NN_OP_sign, g_away0}, {NN_OP_sigmoid, g_any},
        {NN_OP_tanh, g_any},   {NN_OP_relu, g_away0},    {NN_OP_erf, g_any},   {NN_OP_log1p, g_pos},
    };
    char name[128];
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        for (int l = 0; l < NLAYOUTS; l++) {
            ew_ctx c = {.op = ops[k].op};
            int64_t shape[2] = {3, 4};
            nn_tensor *x[1] = {leaf(2, shape, l, ops[k].gen)};
            snprintf(name, sizeof name, "%s %s", nn_op_name(ops[k].op), layout_name[l]);
            run(name, f_unary, x, 1, &c);
        }
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) { /* expanded input: gradients summed over the copies */
        ew_ctx c = {.op = ops[k].op, .expand = true, .expand_to = 3};
        int64_t shape[2] = {1, 5};
        nn_tensor *x[1] = {leaf(2, shape, TRANSPOSED, ops[k].gen)};
        snprintf(name, sizeof name, "%s expanded", nn_op_name(ops[k].op));
        run(name, f_unary, x, 1, &c);
    }
    for (int64_t flags = 1; flags <= 3; flags++)
        for (int l = 0; l < NLAYOUTS; l++) {
            ew_ctx c = {.op = NN_OP_clamp, .f0 = -0.5, .f1 = 0.5, .i0 = flags};
            int64_t shape[3] = {2, 3, 4};
            nn_tensor *x[1] = {leaf(3, shape, l, g_clamp)};
            snprintf(name, sizeof name, "clamp flags %lld %s", (long long)flags, layout_name[l]);
            run(name, f_unary, x, 1, &c);
        }
    static const double exps[] = {2, 3, 0.5, -1, -2, 2.5, -0.5, 1, 0};
    for (size_t k = 0; k < sizeof exps / sizeof *exps; k++) {
        ew_ctx c = {.op = NN_OP_pow_scalar, .f0 = exps[k]};
        int64_t shape[2] = {4, 3};
        nn_tensor *x[1] = {leaf(2, shape, (int)(k % NLAYOUTS), g_pos)};
        snprintf(name, sizeof name, "pow_scalar %g", exps[k]);
        run(name, f_unary, x, 1, &c);
    }
}

/* both operands of x1 op x2 broadcast over shapes sa and sb */
static void binary_case(nn_op op, double alpha, int na, const int64_t *sa, int nb, const int64_t *sb, int la, int lb,
                        double (*ga)(void), double (*gb)(void), bool expand)
{
    char name[160], s1[160], s2[160];
    ew_ctx c = {.op = op, .alpha = alpha, .expand = expand, .expand_to = 3};
    nn_tensor *x[2] = {leaf(na, sa, la, ga), leaf(nb, sb, lb, gb)};
    snprintf(name, sizeof name, "%s alpha %g %s %s x %s %s%s", nn_op_name(op), alpha, nn_shape_str(s1, na, sa), layout_name[la],
             nn_shape_str(s2, nb, sb), layout_name[lb], expand ? " expanded" : "");
    run(name, f_binary, x, 2, &c);
}

/* a % b (remainder or fmod) with a/b at least 0.1 from an integer, for every broadcast pair */
static void remainder_case(nn_op op)
{
    int64_t sa[2] = {3, 4}, sb[1] = {4};
    for (int tries = 0; tries < 1000; tries++) {
        nn_tensor *x[2] = {leaf(2, sa, TRANSPOSED, g_any), leaf(1, sb, NARROWED, g_away0)};
        bool ok = true;
        for (int64_t i = 0; i < 3 && ok; i++)
            for (int64_t j = 0; j < 4 && ok; j++) {
                int64_t ia[2] = {i, j}, ib[1] = {j};
                double q = nn_get_f64(x[0], ia) / nn_get_f64(x[1], ib);
                ok = fabs(q - round(q)) > 0.1;
            }
        if (!ok) {
            release_all(x, 2);
            continue;
        }
        ew_ctx c = {.op = op, .alpha = 1};
        run(op == NN_OP_fmod ? "fmod broadcast" : "remainder broadcast", f_binary, x, 2, &c);
        return;
    }
    CHECK(false, "%s: no inputs found", nn_op_name(op));
}

static void test_binary(void)
{
    static const nn_op ops[] = {NN_OP_add, NN_OP_sub, NN_OP_mul, NN_OP_div, NN_OP_pow, NN_OP_maximum, NN_OP_minimum};
    int64_t s34[2] = {3, 4}, s4[1] = {4}, s31[2] = {3, 1}, s234[3] = {2, 3, 4}, s14[2] = {1, 4}, s0[1];
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        nn_op op = ops[k];
        double (*ga)(void) = op == NN_OP_pow ? g_pos : g_any;
        double (*gb)(void) = op == NN_OP_div ? g_away0 : op == NN_OP_pow ? g_small : g_any;
        binary_case(op, 1, 2, s34, 2, s34, TRANSPOSED, NARROWED, ga, gb, false);
        binary_case(op, 1, 2, s34, 1, s4, CONTIG, NARROWED, ga, gb, false);
        binary_case(op, 1, 2, s31, 2, s14, NARROWED, TRANSPOSED, ga, gb, false);
        binary_case(op, 1, 2, s14, 3, s234, TRANSPOSED, TRANSPOSED, ga, gb, true); /* a expanded to [3,4], then broadcast */
        binary_case(op, 1, 0, s0, 2, s34, CONTIG, TRANSPOSED, ga, gb, false);    /* 0-dim operand */
    }
    binary_case(NN_OP_add, 2.5, 2, s34, 1, s4, TRANSPOSED, NARROWED, g_any, g_any, false);
    binary_case(NN_OP_sub, -1.5, 2, s31, 2, s34, NARROWED, TRANSPOSED, g_any, g_any, false);
    remainder_case(NN_OP_remainder);
    remainder_case(NN_OP_fmod);

    /* wrapped numbers on either side: x*2, 2-x (rsub), 2/x, 2^x, x^2.5 */
    static const struct { nn_op op; double v; int which; double (*gen)(void); } sc[] = {
        {NN_OP_mul, 2, 0, g_any}, {NN_OP_sub, 2, 1, g_any}, {NN_OP_div, 2, 1, g_away0}, {NN_OP_pow, 2, 1, g_any},
        {NN_OP_pow, 2.5, 0, g_pos}, {NN_OP_add, -3, 1, g_any}, {NN_OP_maximum, 0.25, 0, g_away0}, {NN_OP_div, 3, 0, g_any},
    };
    char name[64];
    for (size_t k = 0; k < sizeof sc / sizeof *sc; k++) {
        ew_ctx c = {.op = sc[k].op, .f0 = sc[k].v, .which = sc[k].which};
        nn_tensor *x[1] = {leaf(2, s34, TRANSPOSED, sc[k].gen)};
        snprintf(name, sizeof name, "%s with a number (%s side)", nn_op_name(sc[k].op), sc[k].which ? "left" : "right");
        run(name, f_scalar, x, 1, &c);
    }

    /* where: cond [3,1] broadcast against a [3,4] and b [4] */
    nn_tensor *cond = nn_empty(2, s31, NN_BOOL, NN_DEVICE_CPU);
    uint8_t *cp = nn_data(cond);
    cp[0] = 1, cp[1] = 0, cp[2] = 1;
    nn_tensor *x[2] = {leaf(2, s34, TRANSPOSED, g_any), leaf(1, s4, NARROWED, g_any)};
    run("where broadcast", f_where, x, 2, cond);
    nn_release(cond);
}

/* ---- reductions ---- */

typedef struct {
    nn_op op;
    uint32_t mask;
    bool keep;
    double f0;
    bool std;
    int dim;
    bool expand; /* reduce x[0] expanded from [1, ...] to [3, ...] */
} red_ctx;

static nn_tensor *reduce_of(nn_tensor *const *x, const red_ctx *c);

static nn_tensor *f_reduce(nn_tensor *const *x, void *ctx)
{
    const red_ctx *c = ctx;
    if (!c->expand) return reduce_of(x, c);
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, x[0]->shape, sizeof shape);
    shape[0] = 3;
    nn_tensor *e[1] = {nn_expand(x[0], x[0]->ndim, shape)};
    nn_tensor *r = e[0] ? reduce_of(e, c) : NULL;
    nn_release(e[0]);
    return r;
}

static nn_tensor *reduce_of(nn_tensor *const *x, const red_ctx *c)
{
    switch (c->op) {
    case NN_OP_var: return c->std ? nn_std(x[0], c->mask, c->f0, c->keep) : nn_var(x[0], c->mask, c->f0, c->keep);
    case NN_OP_norm: return nn_norm(x[0], c->f0, c->mask, c->keep);
    case NN_OP_max_dim:
    case NN_OP_min_dim: {
        nn_tensor *v = NULL, *i = NULL;
        (c->op == NN_OP_max_dim ? nn_max_dim : nn_min_dim)(x[0], c->dim, c->keep, &v, &i);
        nn_release(i);
        return v;
    }
    case NN_OP_argmax: return nn_max(x[0]); /* max over everything */
    case NN_OP_argmin: return nn_min(x[0]);
    default: return nn_reduce(c->op, x[0], c->mask, c->keep);
    }
}

static void reduce_case(red_ctx c, int layout, double (*gen)(void), int nd, const int64_t *shape)
{
    char name[160], s[160];
    nn_tensor *x[1] = {leaf(nd, shape, layout, gen)};
    snprintf(name, sizeof name, "%s mask %u keepdim %d f0 %g std %d dim %d %s %s", nn_op_name(c.op), c.mask, c.keep, c.f0, c.std,
             c.dim, nn_shape_str(s, nd, shape), layout_name[layout]);
    run(name, f_reduce, x, 1, &c);
}

static void test_reduce(void)
{
    static const uint32_t masks[] = {0, 1, 2, 4, 5, 6, 7};
    static const nn_op ops[] = {NN_OP_sum, NN_OP_mean, NN_OP_prod, NN_OP_amax, NN_OP_amin};
    int64_t shape[3] = {3, 4, 2};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        for (size_t m = 0; m < sizeof masks / sizeof *masks; m++)
            for (int keep = 0; keep < 2; keep++)
                reduce_case((red_ctx){.op = ops[k], .mask = masks[m], .keep = keep}, (int)((k + m) % NLAYOUTS),
                            ops[k] == NN_OP_prod ? g_away0 : g_any, 3, shape);
    for (size_t m = 0; m < sizeof masks / sizeof *masks; m++)
        for (int keep = 0; keep < 2; keep++)
            for (int corr = 0; corr < 3; corr++) {
                double nred = 1;
                for (int d = 0; d < 3; d++) nred *= masks[m] == 0 || (masks[m] >> d & 1) ? (double)shape[d] : 1;
                if (nred <= corr) continue; /* no degrees of freedom left: an infinite gradient */
                reduce_case((red_ctx){.op = NN_OP_var, .mask = masks[m], .keep = keep, .f0 = corr}, (int)(m % NLAYOUTS), g_any, 3, shape);
                reduce_case((red_ctx){.op = NN_OP_var, .mask = masks[m], .keep = keep, .f0 = corr, .std = true}, (int)((m + 1) % NLAYOUTS),
                            g_any, 3, shape);
            }
    static const double ps[] = {2, 1, 3, 1.5, 0.5, -1, INFINITY, -INFINITY, 0, 4};
    for (size_t k = 0; k < sizeof ps / sizeof *ps; k++)
        for (size_t m = 0; m < sizeof masks / sizeof *masks; m += 2)
            reduce_case((red_ctx){.op = NN_OP_norm, .mask = masks[m], .keep = m % 4 == 0, .f0 = ps[k]}, (int)(k % NLAYOUTS), g_away0, 3,
                        shape);
    for (int d = -3; d < 3; d++)
        for (int keep = 0; keep < 2; keep++) {
            reduce_case((red_ctx){.op = NN_OP_max_dim, .dim = d, .keep = keep}, (d + 3) % NLAYOUTS, g_any, 3, shape);
            reduce_case((red_ctx){.op = NN_OP_min_dim, .dim = d, .keep = keep}, (d + 4) % NLAYOUTS, g_any, 3, shape);
        }
    reduce_case((red_ctx){.op = NN_OP_argmax}, TRANSPOSED, g_any, 3, shape); /* nn_max */
    reduce_case((red_ctx){.op = NN_OP_argmin}, NARROWED, g_any, 3, shape);
    /* 0-dim and 1-D inputs */
    int64_t s5[1] = {5};
    reduce_case((red_ctx){.op = NN_OP_sum}, CONTIG, g_any, 0, s5);
    reduce_case((red_ctx){.op = NN_OP_prod, .mask = 1}, CONTIG, g_any, 0, s5);
    reduce_case((red_ctx){.op = NN_OP_max_dim, .dim = 0}, CONTIG, g_any, 0, s5);
    reduce_case((red_ctx){.op = NN_OP_norm, .f0 = 2}, CONTIG, g_away0, 0, s5);
    reduce_case((red_ctx){.op = NN_OP_prod, .mask = 1, .keep = true}, NARROWED, g_away0, 1, s5);
    /* expanded inputs: the copies' gradients add up */
    int64_t s142[3] = {1, 4, 2};
    static const nn_op eops[] = {NN_OP_sum, NN_OP_mean, NN_OP_prod, NN_OP_amax, NN_OP_var, NN_OP_norm, NN_OP_max_dim};
    for (size_t k = 0; k < sizeof eops / sizeof *eops; k++)
        for (size_t m = 0; m < sizeof masks / sizeof *masks; m += 3)
            reduce_case((red_ctx){.op = eops[k], .mask = masks[m], .keep = m == 3, .f0 = eops[k] == NN_OP_norm ? 3 : 1,
                                  .dim = (int)m % 3, .expand = true},
                        (int)(k % NLAYOUTS), eops[k] == NN_OP_prod || eops[k] == NN_OP_norm ? g_away0 : g_any, 3, s142);
}

/* prod with zeros: one zero in a slice gets the product of the others, two zeros give 0 */
static nn_tensor *prod_zero_leaf(int zeros_a, int zeros_b, int layout)
{
    int64_t shape[2] = {3, 4};
    nn_tensor *x = leaf(2, shape, layout, g_away0);
    int64_t i0[2] = {0, 1}, i1[2] = {0, 3}, i2[2] = {2, 2};
    double *base = (double *)x->storage->data;
    int64_t o;
    /* row 0: zeros_a zeros; row 2: zeros_b zeros */
    if (zeros_a >= 1) o = x->offset + i0[0] * x->strides[0] + i0[1] * x->strides[1], base[o] = 0;
    if (zeros_a >= 2) o = x->offset + i1[0] * x->strides[0] + i1[1] * x->strides[1], base[o] = 0;
    if (zeros_b >= 1) o = x->offset + i2[0] * x->strides[0] + i2[1] * x->strides[1], base[o] = 0;
    return x;
}

static void test_prod_zeros(void)
{
    for (int l = 0; l < NLAYOUTS; l++)
        for (int za = 0; za <= 2; za++)
            for (int keep = 0; keep < 2; keep++) {
                char name[96];
                red_ctx c = {.op = NN_OP_prod, .mask = 2, .keep = keep};
                nn_tensor *x[1] = {prod_zero_leaf(za, 1, l)};
                snprintf(name, sizeof name, "prod with %d zeros in a row, keepdim %d, %s", za, keep, layout_name[l]);
                run(name, f_reduce, x, 1, &c);
                c.mask = 0;
                x[0] = prod_zero_leaf(za, 0, l);
                snprintf(name, sizeof name, "prod of all with %d zeros, %s", za, layout_name[l]);
                run(name, f_reduce, x, 1, &c);
                c.mask = 3;
                x[0] = prod_zero_leaf(za, 1, l);
                snprintf(name, sizeof name, "prod over both dims with %d+1 zeros, %s", za, layout_name[l]);
                run(name, f_reduce, x, 1, &c);
            }
}

/* ---- matrix products ---- */

typedef struct { int kind; double beta, alpha; bool expand; } mm_ctx;
enum { MM_MATMUL, MM_MM, MM_BMM, MM_DOT, MM_OUTER, MM_ADDMM };

static nn_tensor *mm_of(nn_tensor *const *x, const mm_ctx *c);

/* expand: x[0] [1, m, k] is expanded to [2, m, k] first (a batch of stride 0) */
static nn_tensor *f_mm(nn_tensor *const *x, void *ctx)
{
    const mm_ctx *c = ctx;
    if (!c->expand) return mm_of(x, c);
    nn_tensor *e[2] = {nn_expand(x[0], 3, (int64_t[]){2, -1, -1}), x[1]};
    nn_tensor *r = e[0] ? mm_of(e, c) : NULL;
    nn_release(e[0]);
    return r;
}

static nn_tensor *mm_of(nn_tensor *const *x, const mm_ctx *c)
{
    switch (c->kind) {
    case MM_MM: return nn_mm(x[0], x[1]);
    case MM_BMM: return nn_bmm(x[0], x[1]);
    case MM_DOT: return nn_dot(x[0], x[1]);
    case MM_OUTER: return nn_outer(x[0], x[1]);
    case MM_ADDMM: return nn_addmm(x[2], x[0], x[1], c->beta, c->alpha);
    default: return nn_matmul(x[0], x[1]);
    }
}

static void mm_case_x(int kind, int na, const int64_t *sa, int nb, const int64_t *sb, int la, int lb, bool expand)
{
    char name[160], s1[160], s2[160];
    mm_ctx c = {kind, 1, 1, expand};
    nn_tensor *x[2] = {leaf(na, sa, la, g_any), leaf(nb, sb, lb, g_any)};
    snprintf(name, sizeof name, "matmul kind %d %s %s @ %s %s%s", kind, nn_shape_str(s1, na, sa), layout_name[la], nn_shape_str(s2, nb, sb),
             layout_name[lb], expand ? " (a expanded)" : "");
    run(name, f_mm, x, 2, &c);
}

static void mm_case(int kind, int na, const int64_t *sa, int nb, const int64_t *sb, int la, int lb)
{
    mm_case_x(kind, na, sa, nb, sb, la, lb, false);
}

static void test_matmul(void)
{
    int64_t k4[1] = {4}, m3[1] = {3}, mk[2] = {3, 4}, kn[2] = {4, 5}, bmk[3] = {2, 3, 4}, bkn[3] = {2, 4, 5};
    int64_t b1mk[4] = {2, 1, 3, 4}, b3kn[3] = {3, 4, 5}, bkn1[3] = {1, 4, 5};
    for (int l = 0; l < NLAYOUTS; l++) {
        int l2 = (l + 1) % NLAYOUTS;
        mm_case(MM_MATMUL, 1, k4, 1, k4, l, l2);     /* dot */
        mm_case(MM_MATMUL, 2, mk, 1, k4, l, l2);     /* mv */
        mm_case(MM_MATMUL, 1, k4, 2, kn, l, l2);     /* vector @ matrix */
        mm_case(MM_MATMUL, 2, mk, 2, kn, l, l2);     /* mm */
        mm_case(MM_MATMUL, 3, bmk, 2, kn, l, l2);    /* batched @ matrix (folded) */
        mm_case(MM_MATMUL, 3, bmk, 1, k4, l, l2);    /* batched @ vector */
        mm_case(MM_MATMUL, 1, k4, 3, bkn, l, l2);    /* vector @ batched */
        mm_case(MM_MATMUL, 2, mk, 3, bkn, l, l2);    /* matrix @ batched */
        mm_case(MM_MATMUL, 3, bmk, 3, bkn, l, l2);   /* bmm */
        mm_case(MM_MATMUL, 4, b1mk, 3, b3kn, l, l2); /* broadcast batch dims */
        mm_case(MM_MATMUL, 3, bmk, 3, bkn1, l, l2);  /* batch dim of size 1 broadcast */
        mm_case(MM_MM, 2, mk, 2, kn, l, l2);
        mm_case(MM_BMM, 3, bmk, 3, bkn, l, l2);
        mm_case(MM_DOT, 1, k4, 1, k4, l, l2);
        mm_case(MM_OUTER, 1, m3, 1, k4, l, l2);
        int64_t one_mk[3] = {1, 3, 4};
        mm_case_x(MM_MATMUL, 3, one_mk, 2, kn, l, l2, true);
        mm_case_x(MM_MATMUL, 3, one_mk, 3, bkn, l, l2, true);
        mm_case_x(MM_BMM, 3, one_mk, 3, bkn, l, l2, true);
        mm_case_x(MM_MATMUL, 3, one_mk, 1, k4, l, l2, true);
    }
    int64_t bias_shapes[4][2] = {{5}, {3, 5}, {1, 5}, {3, 1}};
    int bias_nd[4] = {1, 2, 2, 2};
    static const double ab[3][2] = {{1, 1}, {0.5, 2}, {0, -1}};
    for (int b = 0; b < 4; b++)
        for (int k = 0; k < 3; k++) {
            char name[96];
            mm_ctx c = {MM_ADDMM, ab[k][0], ab[k][1], false};
            nn_tensor *x[3] = {leaf(2, mk, TRANSPOSED, g_any), leaf(2, kn, NARROWED, g_any), leaf(bias_nd[b], bias_shapes[b], b % 2 ? TRANSPOSED : CONTIG, g_any)};
            snprintf(name, sizeof name, "addmm bias %d beta %g alpha %g", b, ab[k][0], ab[k][1]);
            run(name, f_mm, x, 3, &c);
        }
}

/* ---- views, joins, copies ---- */

enum {
    V_VIEW, V_RESHAPE, V_FLATTEN, V_TRANSPOSE, V_T, V_PERMUTE, V_NARROW, V_SLICE, V_SELECT, V_SQUEEZE_ALL, V_SQUEEZE,
    V_UNSQUEEZE, V_EXPAND, V_CONTIGUOUS, V_CHUNK, V_SPLIT_SIZES, V_CLONE, V_TO_DTYPE, V_CAT, V_STACK, V_CHAIN, NVIEWS
};
static const char *view_name[] = {"view", "reshape", "flatten", "transpose", "t", "permute", "narrow", "slice", "select",
                                  "squeeze all", "squeeze", "unsqueeze", "expand", "contiguous", "chunk", "split sizes",
                                  "clone", "to dtype", "cat", "stack", "chain"};

/* the view's result times a fixed non-symmetric weight, so a wrong placement shows */
static nn_tensor *f_view(nn_tensor *const *x, void *ctx)
{
    int kind = *(int *)ctx;
    nn_tensor *t = x[0], *r = NULL;
    switch (kind) {
    case V_VIEW: r = nn_view(t, 2, (int64_t[]){4, -1}); break;     /* t: [2, 3, 4] contiguous */
    case V_RESHAPE: r = nn_reshape(t, 2, (int64_t[]){-1, 6}); break; /* non-viewable when transposed */
    case V_FLATTEN: r = nn_flatten(t, 1, 2); break;
    case V_TRANSPOSE: r = nn_transpose(t, 0, -1); break;
    case V_T: {
        nn_tensor *s = nn_select(t, 0, 1);
        r = nn_t(s);
        nn_release(s);
        break;
    }
    case V_PERMUTE: r = nn_permute(t, (int[]){2, 0, 1}); break;
    case V_NARROW: r = nn_narrow(t, 2, 1, 2); break;
    case V_SLICE: r = nn_slice(t, -1, 0, 4, 2); break;
    case V_SELECT: r = nn_select(t, 1, -1); break;
    case V_SQUEEZE_ALL: {
        nn_tensor *n = nn_narrow(t, 1, 2, 1);
        r = nn_squeeze(n, NN_ALL_DIMS);
        nn_release(n);
        break;
    }
    case V_SQUEEZE: {
        nn_tensor *n = nn_narrow(t, 0, 1, 1);
        r = nn_squeeze(n, 0);
        nn_release(n);
        break;
    }
    case V_UNSQUEEZE: r = nn_unsqueeze(t, -2); break;
    case V_EXPAND: {
        nn_tensor *n = nn_narrow(t, 1, 0, 1);
        r = nn_expand(n, 4, (int64_t[]){2, 2, 3, -1});
        nn_release(n);
        break;
    }
    case V_CONTIGUOUS: r = nn_contiguous(t); break;
    case V_CHUNK: {
        nn_tensor *p[3] = {0};
        int np = nn_chunk(t, 3, 2, p, 3);
        r = np >= 2 ? nn_binary(NN_OP_mul, p[1], p[0]) : NULL;
        for (int i = 0; i < 3; i++) nn_release(p[i]);
        break;
    }
    case V_SPLIT_SIZES: {
        nn_tensor *p[2] = {0};
        nn_split_sizes(t, 2, (int64_t[]){1, 2}, 1, p, 2);
        nn_tensor *e = p[0] ? nn_expand(p[0], 3, (int64_t[]){2, 2, 4}) : NULL;
        r = e ? nn_binary(NN_OP_sub, p[1], e) : NULL;
        nn_release(e);
        nn_release(p[0]), nn_release(p[1]);
        break;
    }
    case V_CLONE: r = nn_clone(t); break;
    case V_TO_DTYPE: { /* there and back: ToCopyBackward0 twice, the gradient comes back as float64 */
        nn_tensor *h = nn_to_dtype(t, NN_F32);
        r = h ? nn_to_dtype(h, NN_F64) : NULL;
        nn_release(h);
        break;
    }
    case V_CAT: { /* inputs of different sizes along dim, a legacy empty 1-D one, t used twice */
        nn_tensor *a = nn_narrow(t, 2, 0, 1), *b = nn_unary(NN_OP_exp, t);
        int64_t zero = 0;
        nn_tensor *e = nn_empty(1, &zero, NN_F64, NN_DEVICE_CPU);
        nn_tensor *parts[4] = {b, a, e, t};
        r = nn_cat(parts, 4, -1);
        nn_release(a), nn_release(b), nn_release(e);
        break;
    }
    case V_STACK: {
        nn_tensor *b = nn_unary(NN_OP_tanh, t);
        nn_tensor *parts[3] = {t, b, t};
        r = nn_stack(parts, 3, 1);
        nn_release(b);
        break;
    }
    case V_CHAIN: { /* x used on several paths: x*x + exp(x).sum(1, keepdim) * x.t()... */
        nn_tensor *sq = nn_binary(NN_OP_mul, t, t), *ex = nn_unary(NN_OP_exp, t);
        nn_tensor *s1 = nn_reduce(NN_OP_sum, ex, 2, true), *m = nn_binary(NN_OP_mul, s1, t);
        r = nn_add_alpha(sq, m, -0.5);
        nn_release(sq), nn_release(ex), nn_release(s1), nn_release(m);
        break;
    }
    default: break;
    }
    if (!r) return NULL;
    nn_tensor *w = nn_arange(1, 1 + (double)nn_numel(r), 1, false, NN_F64, NN_DEVICE_CPU);
    nn_tensor *wv = w ? nn_reshape(w, r->ndim, r->shape) : NULL;
    nn_tensor *out = wv ? nn_binary(NN_OP_mul, r, wv) : NULL;
    nn_release(w), nn_release(wv), nn_release(r);
    return out;
}

static void test_views(void)
{
    int64_t shape[3] = {2, 3, 4};
    char name[96];
    for (int kind = 0; kind < NVIEWS; kind++)
        for (int l = 0; l < NLAYOUTS; l++) {
            if (kind == V_VIEW && l != CONTIG) continue; /* view needs compatible strides */
            nn_tensor *x[1] = {leaf(3, shape, l, g_any)};
            snprintf(name, sizeof name, "%s %s", view_name[kind], layout_name[l]);
            int k = kind;
            if (kind == V_TO_DTYPE) { /* float32 round trip: looser tolerance */
                int ok = gradcheck(name, f_view, x, 1, &k, 1e-3, 1e-3, 1e-3);
                CHECK(ok, "%s", name);
                release_all(x, 1);
            } else {
                run(name, f_view, x, 1, &k);
            }
        }
}

/* ---- in-place ops on non-leaves ---- */

enum {
    IP_ADD, IP_SUB, IP_MUL, IP_DIV, IP_POW, IP_MAXIMUM, IP_EXP, IP_LOG, IP_TANH, IP_SIGMOID, IP_RELU, IP_SQRT, IP_CLAMP,
    IP_POW_SCALAR, IP_MUL_SELF, IP_COPY_INTO_PLAIN, IP_COPY_OVER, IP_FILL, IP_ZERO, IP_ADD_INTO_PLAIN, IP_NUMBERS, IP_CHAIN, NIP
};

static nn_tensor *f_inplace(nn_tensor *const *x, void *ctx)
{
    int kind = *(int *)ctx;
    nn_tensor *y = kind == IP_COPY_INTO_PLAIN || kind == IP_ADD_INTO_PLAIN ? nn_zeros(2, x[0]->shape, NN_F64, NN_DEVICE_CPU)
                                                                           : nn_clone(x[0]);
    nn_status st = NN_OK;
    switch (kind) {
    case IP_ADD: st = nn_add_alpha_(y, x[1], 2); break;
    case IP_SUB: st = nn_binary_(NN_OP_sub, y, x[1]); break;
    case IP_MUL: st = nn_binary_(NN_OP_mul, y, x[1]); break;
    case IP_DIV: st = nn_binary_(NN_OP_div, y, x[1]); break;
    case IP_POW: st = nn_binary_(NN_OP_pow, y, x[1]); break;
    case IP_MAXIMUM: st = nn_binary_(NN_OP_maximum, y, x[1]); break;
    case IP_EXP: st = nn_unary_(NN_OP_exp, y); break;
    case IP_LOG: st = nn_unary_(NN_OP_log, y); break;
    case IP_TANH: st = nn_unary_(NN_OP_tanh, y); break;
    case IP_SIGMOID: st = nn_unary_(NN_OP_sigmoid, y); break;
    case IP_RELU: st = nn_unary_(NN_OP_relu, y); break;
    case IP_SQRT: st = nn_unary_(NN_OP_sqrt, y); break;
    case IP_CLAMP: st = nn_clamp_(y, true, -0.5, true, 0.5); break;
    case IP_POW_SCALAR: st = nn_binary_(NN_OP_pow, y, x[1]); break;
    case IP_MUL_SELF: st = nn_binary_(NN_OP_mul, y, y); break;
    case IP_COPY_INTO_PLAIN: st = nn_copy_(y, x[1]); break;
    case IP_COPY_OVER: st = nn_copy_(y, x[1]); break;
    case IP_FILL: st = nn_fill_(y, 3); break;
    case IP_ZERO: st = nn_zero_(y); break;
    case IP_ADD_INTO_PLAIN: st = nn_binary_(NN_OP_add, y, x[0]); break;
    case IP_NUMBERS: {
        nn_tensor *two = nn_scalar_f64(2), *three = nn_scalar_f64(-3);
        st = nn_binary_(NN_OP_add, y, two);
        if (!st) st = nn_binary_(NN_OP_mul, y, three);
        if (!st) st = nn_binary_(NN_OP_div, y, two);
        nn_release(two), nn_release(three);
        break;
    }
    case IP_CHAIN:
        st = nn_binary_(NN_OP_mul, y, x[1]);
        if (!st) st = nn_binary_(NN_OP_add, y, x[0]);
        if (!st) st = nn_binary_(NN_OP_mul, y, y);
        if (!st) st = nn_unary_(NN_OP_tanh, y); /* last: tanh_ saves its result, which a later in-place op would spoil */
        break;
    }
    if (st) {
        nn_release(y);
        return NULL;
    }
    /* keep every input on a path: out = y * x0 (x0's own gradient adds to what flows through y) */
    nn_tensor *out = nn_binary(NN_OP_mul, y, x[0]);
    nn_release(y);
    return out;
}

static void test_inplace(void)
{
    int64_t s34[2] = {3, 4}, s4[1] = {4};
    char name[64];
    for (int kind = 0; kind < NIP; kind++)
        for (int l = 0; l < NLAYOUTS; l++) {
            double (*g0)(void) = g_any, (*g1)(void) = g_any;
            if (kind == IP_DIV) g1 = g_away0;
            if (kind == IP_POW || kind == IP_LOG || kind == IP_SQRT || kind == IP_POW_SCALAR) g0 = g_pos;
            if (kind == IP_POW) g1 = g_small;
            if (kind == IP_RELU) g0 = g_away0;
            if (kind == IP_CLAMP) g0 = g_clamp;
            nn_tensor *x[2] = {leaf(2, s34, l, g0), leaf(1, s4, (l + 1) % NLAYOUTS, g1)};
            if (kind == IP_POW_SCALAR) { /* an exponent that does not require grad */
                nn_release(x[1]);
                x[1] = nn_full(1, s4, 2.5, NN_F64, NN_DEVICE_CPU);
            }
            snprintf(name, sizeof name, "in-place %d %s", kind, layout_name[l]);
            run(name, f_inplace, x, 2, &kind);
        }
}

int main(void)
{
    test_unary();
    test_binary();
    test_reduce();
    test_prod_zeros();
    test_matmul();
    test_views();
    test_inplace();
    return CHECK_REPORT();
}
