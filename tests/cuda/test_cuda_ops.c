/* CUDA ops against the CPU engine, through the public frontends (engine/ops.h):
 * every op of kinds UNARY, BINARY, TERNARY, REDUCE, COPY and FILL runs on the
 * same inputs on the CPU and on cuda:0, and the results must agree within the
 * dtype's tolerance (exactly for integers, comparisons, indices and random
 * fills), on contiguous, transposed, narrowed (unaligned) and expanded inputs,
 * small, odd and large (> 1M elements) shapes; errors must be the same error.
 * Also: autograd through CUDA tensors, and mixing devices.
 *
 * A case is one op on one dtype/layout; the last line counts cases:
 * "N passed, N failed, N skipped". Without a GPU every case is skipped.
 * NNREPL_TEST_DEVICE=cpu runs the harness (harness.h) with the CPU standing in
 * for the GPU (a check of the harness itself); NNREPL_TEST_FILTER=a,b runs only
 * the cases whose names contain a or b. Arguments name sections to run (unary
 * binary where reduce copy random autograd devices); none: all. */
#define HARNESS_SEED 0x2545F4914F6CDD1DULL
#include "harness.h"
#include "memory_format.h"

/* ---- inputs ---- */

static const nn_dtype ALL[] = {NN_F32, NN_F64, NN_F16, NN_BF16, NN_I64, NN_I32, NN_I16, NN_I8, NN_U8, NN_BOOL};
#define NALL 10
#define NFLOAT 4 /* ALL[0..4) */

enum { D_ANY, D_POS, D_NONZERO, D_SET, D_NEAR1, D_NAN, D_EXP, D_UNIT };

static void put(char *p, nn_dtype dt, int dom)
{
    if (nn_dtype_is_float(dt)) {
        double v;
        switch (dom) {
        case D_POS: v = 0.05 + 2.95 * urand(); break;
        case D_NONZERO: v = (0.25 + 2.75 * urand()) * (urand() < 0.5 ? -1 : 1); break;
        case D_SET: v = (double)irand(-1, 2); break;
        case D_NEAR1: v = 0.9 + 0.2 * urand(); break;
        case D_NAN: v = urand() < 0.125 ? NAN : -3 + 6 * urand(); break;
        case D_EXP: v = -2 + 5 * urand(); break;
        case D_UNIT: v = -1 + 2 * urand(); break;
        default: v = -3 + 6 * urand(); break;
        }
        nn_store_f64(p, dt, v);
        return;
    }
    int64_t lo = -20, hi = 20;
    switch (dom) {
    case D_POS: lo = 1; break;
    case D_NONZERO: lo = 1; break;
    case D_SET: lo = -2, hi = 2; break;
    case D_NEAR1: lo = 1, hi = 3; break;
    case D_EXP: lo = 0, hi = 4; break;
    default: break;
    }
    if (dt == NN_U8 && lo < 0) lo = 0, hi = hi < 3 ? 3 : 40;
    if (dt == NN_BOOL) lo = lo > 0 ? 1 : 0, hi = 1;
    int64_t v = irand(lo, hi);
    if (dom == D_NONZERO && dt != NN_U8 && dt != NN_BOOL && urand() < 0.5) v = -v;
    nn_store_i64(p, dt, v);
}

static nn_tensor *mk(nn_dtype dt, int nd, const int64_t *s, int dom)
{
    nn_tensor *t = nn_empty(nd, s, dt, CPU);
    if (!t) return NULL;
    int64_t n = nn_numel(t);
    size_t es = nn_dtype_size(dt);
    char *p = nn_data(t);
    for (int64_t i = 0; i < n; i++) put(p + i * es, dt, dom);
    return t;
}

/* the same values on the CPU and the device, seen through the same kind of view */
static pair make(nn_dtype dt, int nd, const int64_t *s, int layout, int dom)
{
    int64_t bs[NN_MAX_DIMS];
    layout = fix_layout(layout, nd);
    base_shape(layout, nd, s, bs);
    return share(mk(dt, nd, bs, dom), layout, nd, s);
}

/* a 0-dim CPU tensor from a Lua number (wrapped) */
static nn_tensor *number(double v) { return v == floor(v) ? nn_scalar_i64((int64_t)v) : nn_scalar_f64(v); }

/* ---- shapes ---- */

typedef struct { int nd; int64_t s[4]; } shape;
#define LARGE ((1 << 20) + 3)
static const shape SMALL = {2, {13, 37}};
static const shape SQ = {2, {33, 65}};
static const shape ODD = {1, {1001}};
static const shape BIG = {1, {LARGE}};

/* ---- unary ---- */

static const nn_op UNARY[] = {NN_OP_neg, NN_OP_exp, NN_OP_log, NN_OP_sqrt, NN_OP_rsqrt, NN_OP_abs, NN_OP_sign, NN_OP_sigmoid,
                              NN_OP_tanh, NN_OP_relu, NN_OP_logical_not, NN_OP_erf, NN_OP_log1p, NN_OP_sin, NN_OP_cos,
                              NN_OP_tan, NN_OP_asin, NN_OP_acos, NN_OP_atan, NN_OP_sinh, NN_OP_cosh, NN_OP_expm1, NN_OP_exp2,
                              NN_OP_log2, NN_OP_log10, NN_OP_reciprocal, NN_OP_erfc, NN_OP_frac, NN_OP_floor, NN_OP_ceil,
                              NN_OP_round, NN_OP_trunc, NN_OP_asinh, NN_OP_acosh, NN_OP_atanh, NN_OP_bitwise_not};

static void unary_tol_case(nn_op op, nn_dtype dt, shape sh, int layout, int dom)
{
    if (!begin("%s %s %s%s", nn_op_name(op), nn_dtype_name(dt), LNAME[fix_layout(layout, sh.nd)], sh.s[0] == LARGE ? " large" : "")) return;
    pair x = make(dt, sh.nd, sh.s, layout, dom);
    nn_tensor *c = nn_unary(op, x.c);
    if (!c) save_err();
    nn_tensor *g = nn_unary(op, x.g);
    check_dt(nn_op_name(op), c, g);
    nn_release(c);
    nn_release(g);
    pair_free(x);
    end();
}

static int unary_domain(nn_op op)
{
    switch (op) {
    case NN_OP_log: case NN_OP_sqrt: case NN_OP_rsqrt: case NN_OP_log2: case NN_OP_log10: case NN_OP_reciprocal: return D_POS;
    case NN_OP_log1p: case NN_OP_asin: case NN_OP_acos: case NN_OP_atanh: return D_UNIT;
    case NN_OP_acosh: return D_NEAR1;
    case NN_OP_logical_not: case NN_OP_sign: return D_SET;
    default: return D_ANY;
    }
}

static void test_unary(void)
{
    for (size_t k = 0; k < sizeof UNARY / sizeof *UNARY; k++)
        for (int j = 0; j < NALL; j++) {
            nn_op op = UNARY[k];
            int dom = unary_domain(op);
            for (int l = 0; l < NLAYOUT; l++) unary_tol_case(op, ALL[j], SQ, l, dom);
            unary_tol_case(op, ALL[j], ODD, L_NARROW, dom);
            unary_tol_case(op, ALL[j], BIG, L_CONTIG, dom);
        }
    /* NaN and infinities through every float op */
    for (size_t k = 0; k < sizeof UNARY / sizeof *UNARY; k++)
        for (int j = 0; j < NFLOAT; j++) unary_tol_case(UNARY[k], ALL[j], SMALL, L_CONTIG, D_NAN);

    /* clamp: both bounds, one, NaN bound; integer dtypes cast the bounds */
    struct { bool hmin; double lo; bool hmax; double hi; } cl[] = {
        {true, -1, true, 1.5}, {true, -0.5, false, 0}, {false, 0, true, 2}, {true, NAN, true, 1}, {true, -3, true, 7}, {true, 2, true, -2}};
    for (size_t k = 0; k < sizeof cl / sizeof *cl; k++)
        for (int j = 0; j < NALL; j++)
            for (int l = 0; l < 2; l++) {
                nn_dtype dt = ALL[j];
                shape sh = l ? BIG : SQ;
                if (!begin("clamp(%g, %g) %s %s", cl[k].hmin ? cl[k].lo : -INFINITY, cl[k].hmax ? cl[k].hi : INFINITY,
                           nn_dtype_name(dt), l ? "large" : "transposed"))
                    continue;
                pair x = make(dt, sh.nd, sh.s, l ? L_CONTIG : L_TRANS, D_ANY);
                nn_tensor *c = nn_clamp(x.c, cl[k].hmin, cl[k].lo, cl[k].hmax, cl[k].hi);
                if (!c) save_err();
                nn_tensor *g = nn_clamp(x.g, cl[k].hmin, cl[k].lo, cl[k].hmax, cl[k].hi);
                check_dt("clamp", c, g);
                nn_release(c);
                nn_release(g);
                pair_free(x);
                end();
            }

    /* pow with a scalar exponent: the special cases and the general one */
    const double ex[] = {2, 3, 0.5, -0.5, -1, -2, 2.5, 0, 1, 4};
    for (size_t k = 0; k < sizeof ex / sizeof *ex; k++)
        for (int j = 0; j < NALL; j++)
            for (int l = 0; l < 2; l++) {
                nn_dtype dt = ALL[j];
                shape sh = l ? BIG : SQ;
                if (!begin("pow_scalar(%g) %s %s", ex[k], nn_dtype_name(dt), l ? "large" : "narrowed")) continue;
                pair x = make(dt, sh.nd, sh.s, l ? L_CONTIG : L_NARROW, nn_dtype_is_float(dt) ? D_POS : D_SET);
                nn_tensor *c = nn_pow_scalar(x.c, ex[k]);
                if (!c) save_err();
                nn_tensor *g = nn_pow_scalar(x.g, ex[k]);
                check_dt("pow_scalar", c, g);
                nn_release(c);
                nn_release(g);
                pair_free(x);
                end();
            }

    /* in place on a transposed view */
    const nn_op inplace[] = {NN_OP_exp, NN_OP_neg, NN_OP_relu, NN_OP_abs, NN_OP_sigmoid};
    for (size_t k = 0; k < sizeof inplace / sizeof *inplace; k++)
        for (int j = 0; j < NFLOAT; j++) {
            if (!begin("%s_ %s transposed", nn_op_name(inplace[k]), nn_dtype_name(ALL[j]))) continue;
            pair x = make(ALL[j], SQ.nd, SQ.s, L_TRANS, D_ANY);
            nn_status sc = nn_unary_(inplace[k], x.c);
            nn_status sg = nn_unary_(inplace[k], x.g);
            if (sc || sg) fail("in place: cpu %d cuda %d: %s", sc, sg, nn_last_error());
            else check_dt("in place", x.c, x.g);
            pair_free(x);
            end();
        }
    for (int j = 0; j < NALL; j++) {
        if (!begin("clamp_ %s narrowed", nn_dtype_name(ALL[j]))) continue;
        pair x = make(ALL[j], SQ.nd, SQ.s, L_NARROW, D_ANY);
        nn_status sc = nn_clamp_(x.c, true, -1, true, 2);
        if (sc) save_err();
        nn_status sg = nn_clamp_(x.g, true, -1, true, 2);
        if (sc != sg) fail("clamp_: status cpu %d cuda %d (%s)", sc, sg, nn_last_error());
        else if (!sc) check_dt("clamp_", x.c, x.g);
        pair_free(x);
        end();
    }
}

/* ---- binary ---- */

static const nn_op BINARY[] = {NN_OP_add, NN_OP_sub, NN_OP_mul, NN_OP_div, NN_OP_pow, NN_OP_remainder, NN_OP_fmod, NN_OP_maximum,
                               NN_OP_minimum, NN_OP_eq, NN_OP_ne, NN_OP_lt, NN_OP_le, NN_OP_gt, NN_OP_ge,
                               NN_OP_logical_and, NN_OP_logical_or, NN_OP_threshold_backward, NN_OP_sigmoid_backward, NN_OP_tanh_backward, NN_OP_bitwise_and,
                               NN_OP_bitwise_or, NN_OP_bitwise_xor, NN_OP_bitwise_left_shift, NN_OP_bitwise_right_shift,
                               NN_OP_fmax, NN_OP_fmin, NN_OP_nextafter, NN_OP_atan2};
#define NBINARY (int)(sizeof BINARY / sizeof *BINARY)

static void binary_domains(nn_op op, nn_dtype da, nn_dtype db, int *doma, int *domb)
{
    *doma = *domb = D_ANY;
    switch (op) {
    case NN_OP_div: case NN_OP_remainder: case NN_OP_fmod: *domb = D_NONZERO; break;
    case NN_OP_pow:
        *doma = nn_dtype_is_float(da) ? D_POS : D_SET;
        *domb = D_EXP;
        break;
    case NN_OP_eq: case NN_OP_ne: case NN_OP_lt: case NN_OP_le: case NN_OP_gt: case NN_OP_ge:
    case NN_OP_logical_and: case NN_OP_logical_or: case NN_OP_maximum: case NN_OP_minimum: case NN_OP_nextafter:
    case NN_OP_atan2: /* zeros of both signs, on and off the cut */
        *doma = *domb = D_SET; /* equal values are common */
        break;
    case NN_OP_fmax: case NN_OP_fmin: *doma = *domb = D_NAN; break;
    case NN_OP_bitwise_left_shift: case NN_OP_bitwise_right_shift: *domb = D_EXP; break;
    default: break;
    }
    (void)db;
}

/* a op b, a with layout la and shape sa, b likewise */
static void binary_case(const char *tag, nn_op op, nn_dtype da, shape sa, int la, nn_dtype db, shape sb, int lb)
{
    if (!begin("%s %s/%s %s", nn_op_name(op), nn_dtype_name(da), nn_dtype_name(db), tag)) return;
    int doma, domb;
    binary_domains(op, da, db, &doma, &domb);
    pair a = make(da, sa.nd, sa.s, la, doma), b = make(db, sb.nd, sb.s, lb, domb);
    nn_tensor *c = nn_binary(op, a.c, b.c);
    if (!c) save_err();
    nn_tensor *g = nn_binary(op, a.g, b.g);
    check_dt(nn_op_name(op), c, g);
    nn_release(c);
    nn_release(g);
    pair_free(a);
    pair_free(b);
    end();
}

/* a op number and number op a (0-dim CPU operands passed by value) */
static void scalar_case(nn_op op, nn_dtype dt, double v, bool left)
{
    if (!begin("%s %s %s %g", nn_op_name(op), nn_dtype_name(dt), left ? "number on the left" : "number", v)) return;
    int doma, domb;
    binary_domains(op, dt, dt, &doma, &domb);
    pair a = make(dt, SQ.nd, SQ.s, L_TRANS, left ? domb : doma);
    nn_tensor *s = number(v);
    nn_tensor *c = left ? nn_binary(op, s, a.c) : nn_binary(op, a.c, s);
    if (!c) save_err();
    nn_tensor *g = left ? nn_binary(op, s, a.g) : nn_binary(op, a.g, s);
    check_dt(nn_op_name(op), c, g);
    nn_release(c);
    nn_release(g);
    nn_release(s);
    pair_free(a);
    end();
}

/* a op (0-dim tensor on the device): read on the device, broadcast */
static void devscalar_case(nn_op op, nn_dtype da, nn_dtype db, bool big)
{
    if (!begin("%s %s/0-dim %s on the device%s", nn_op_name(op), nn_dtype_name(da), nn_dtype_name(db), big ? " large" : "")) return;
    int doma, domb;
    binary_domains(op, da, db, &doma, &domb);
    shape sh = big ? BIG : SQ;
    pair a = make(da, sh.nd, sh.s, L_CONTIG, doma);
    pair b = make(db, 0, NULL, L_CONTIG, domb);
    nn_tensor *c = nn_binary(op, a.c, b.c);
    if (!c) save_err();
    nn_tensor *g = nn_binary(op, a.g, b.g);
    check_dt(nn_op_name(op), c, g);
    nn_release(c);
    nn_release(g);
    pair_free(a);
    pair_free(b);
    end();
}

static void test_binary(void)
{
    const shape B1 = {3, {4, 1, 5}}, B2 = {2, {3, 1}}, ROW = {1, {65}}, COL = {2, {33, 1}};
    for (int k = 0; k < NBINARY; k++) {
        nn_op op = BINARY[k];
        for (int j = 0; j < NALL; j++) {
            nn_dtype dt = ALL[j];
            binary_case("contig", op, dt, SQ, L_CONTIG, dt, SQ, L_CONTIG);
            binary_case("large", op, dt, BIG, L_CONTIG, dt, BIG, L_CONTIG);
            binary_case("odd unaligned", op, dt, ODD, L_NARROW, dt, ODD, L_CONTIG);
            binary_case("transposed", op, dt, SQ, L_TRANS, dt, SQ, L_CONTIG);
            binary_case("narrowed+expanded", op, dt, SQ, L_NARROW, dt, SQ, L_EXPAND);
            binary_case("broadcast [4,1,5]x[3,1]", op, dt, B1, L_CONTIG, dt, B2, L_CONTIG);
            binary_case("broadcast row", op, dt, SQ, L_TRANS, dt, ROW, L_CONTIG);
            binary_case("broadcast column", op, dt, SQ, L_CONTIG, dt, COL, L_CONTIG);
            devscalar_case(op, dt, dt, false);
        }
        /* type promotion */
        static const nn_dtype mix[][2] = {{NN_F16, NN_F32}, {NN_BF16, NN_F16}, {NN_I32, NN_F32}, {NN_I64, NN_F64}, {NN_U8, NN_I64},
                                          {NN_BOOL, NN_F32}, {NN_I32, NN_I64}, {NN_U8, NN_BOOL}, {NN_F64, NN_F32}, {NN_BF16, NN_I64},
                                          {NN_I8, NN_U8}, {NN_I16, NN_I8}, {NN_I16, NN_F16}};
        for (size_t m = 0; m < sizeof mix / sizeof *mix; m++) {
            binary_case("mixed", op, mix[m][0], SQ, L_TRANS, mix[m][1], SQ, L_CONTIG);
            binary_case("mixed large", op, mix[m][0], BIG, L_CONTIG, mix[m][1], BIG, L_CONTIG);
            binary_case("mixed broadcast", op, mix[m][1], B1, L_CONTIG, mix[m][0], B2, L_CONTIG);
        }
        devscalar_case(op, NN_F32, NN_F64, true);
        devscalar_case(op, NN_F16, NN_F32, true);
        devscalar_case(op, NN_U8, NN_I64, false);
        devscalar_case(op, NN_F32, NN_F32, true);
        /* Lua numbers */
        const double vals[] = {2, 0.5, -3, 2.25};
        for (int j = 0; j < NALL; j++)
            for (int v = 0; v < 4; v++) {
                scalar_case(op, ALL[j], vals[v], false);
                if (v < 2) scalar_case(op, ALL[j], vals[v], true);
            }
    }
    /* alpha */
    for (int j = 0; j < NALL; j++) {
        const double alphas[] = {2, -0.5, 3};
        for (int v = 0; v < 3; v++) {
            nn_dtype dt = ALL[j];
            if (!begin("add alpha=%g %s", alphas[v], nn_dtype_name(dt))) continue;
            pair a = make(dt, SQ.nd, SQ.s, L_TRANS, D_ANY), b = make(dt, SQ.nd, SQ.s, L_NARROW, D_ANY);
            nn_tensor *c = nn_add_alpha(a.c, b.c, alphas[v]);
            if (!c) save_err();
            nn_tensor *g = nn_add_alpha(a.g, b.g, alphas[v]);
            check_dt("add alpha", c, g);
            nn_release(c);
            nn_release(g);
            pair_free(a);
            pair_free(b);
            end();
        }
    }
    /* in place, into a transposed view, other broadcast */
    const nn_op inplace[] = {NN_OP_add, NN_OP_sub, NN_OP_mul, NN_OP_div, NN_OP_maximum, NN_OP_remainder, NN_OP_fmod};
    for (size_t k = 0; k < sizeof inplace / sizeof *inplace; k++)
        for (int j = 0; j < NALL; j++) {
            nn_dtype dt = ALL[j];
            if (!begin("%s_ %s transposed", nn_op_name(inplace[k]), nn_dtype_name(dt))) continue;
            pair a = make(dt, SQ.nd, SQ.s, L_TRANS, D_ANY);
            shape row = {1, {SQ.s[1]}};
            pair b = make(NN_F32, row.nd, row.s, L_CONTIG, D_NONZERO);
            nn_status sc = nn_binary_(inplace[k], a.c, b.c);
            if (sc) save_err();
            nn_status sg = nn_binary_(inplace[k], a.g, b.g);
            if (sc != sg) fail("in place: status cpu %d cuda %d (%s)", sc, sg, nn_last_error());
            else if (sc && strcmp(cpu_err, nn_last_error())) fail("errors differ: '%s' '%s'", cpu_err, nn_last_error());
            else if (!sc) check_dt("in place", a.c, a.g);
            pair_free(a);
            pair_free(b);
            end();
        }
}

/* ---- where ---- */

static void test_where(void)
{
    static const nn_dtype pairs[][2] = {{NN_F32, NN_F32}, {NN_F16, NN_F16}, {NN_BF16, NN_BF16}, {NN_F64, NN_F64}, {NN_I64, NN_I64},
                                        {NN_I32, NN_I32}, {NN_U8, NN_U8}, {NN_BOOL, NN_BOOL}, {NN_F32, NN_I64}, {NN_F16, NN_F64},
                                        {NN_I32, NN_U8}, {NN_BOOL, NN_F32}, {NN_I8, NN_I8}, {NN_I16, NN_I16}, {NN_I8, NN_U8}};
    const shape C3 = {3, {4, 33, 1}}, A2 = {2, {33, 65}}, B1 = {1, {65}};
    for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++)
        for (int ct = 0; ct < 2; ct++)
            for (int v = 0; v < 4; v++) {
                nn_dtype cdt = ct ? NN_U8 : NN_BOOL;
                static const char *const vn[] = {"transposed", "large", "broadcast", "number"};
                if (!begin("where %s ? %s : %s %s", nn_dtype_name(cdt), nn_dtype_name(pairs[k][0]), nn_dtype_name(pairs[k][1]), vn[v]))
                    continue;
                pair c, a, b;
                nn_tensor *num = NULL;
                if (v == 0) {
                    c = make(cdt, SQ.nd, SQ.s, L_TRANS, D_SET), a = make(pairs[k][0], SQ.nd, SQ.s, L_NARROW, D_ANY);
                    b = make(pairs[k][1], SQ.nd, SQ.s, L_EXPAND, D_ANY);
                } else if (v == 1) {
                    c = make(cdt, BIG.nd, BIG.s, L_CONTIG, D_SET), a = make(pairs[k][0], BIG.nd, BIG.s, L_CONTIG, D_ANY);
                    b = make(pairs[k][1], BIG.nd, BIG.s, L_CONTIG, D_ANY);
                } else {
                    c = make(cdt, C3.nd, C3.s, L_CONTIG, D_SET), a = make(pairs[k][0], A2.nd, A2.s, L_TRANS, D_ANY);
                    b = make(pairs[k][1], B1.nd, B1.s, L_CONTIG, D_ANY);
                    if (v == 3) {
                        pair_free(b);
                        num = number(pairs[k][1] == NN_BOOL ? 1 : nn_dtype_is_float(pairs[k][1]) ? -1.5 : 7);
                        b.c = nn_retain(num), b.g = nn_retain(num);
                    }
                }
                nn_tensor *rc = nn_where(c.c, a.c, b.c);
                if (!rc) save_err();
                nn_tensor *rg = nn_where(c.g, a.g, b.g);
                check("where", rc, rg, 0, 0);
                nn_release(rc);
                nn_release(rg);
                nn_release(num);
                pair_free(c);
                pair_free(a);
                pair_free(b);
                end();
            }
}

/* ---- reductions ---- */

static const nn_op PLAIN[] = {NN_OP_sum, NN_OP_mean, NN_OP_prod, NN_OP_amax, NN_OP_amin, NN_OP_all, NN_OP_any};

static int64_t reduced_count(const nn_tensor *x, uint32_t mask)
{
    int64_t n = 1;
    for (int d = 0; d < x->ndim; d++)
        if (!mask || (mask >> d & 1)) n *= x->shape[d];
    return n;
}

static void reduce_tol(nn_op op, nn_dtype dt, int64_t nred, double *rtol, double *atol)
{
    tol_of(dt, rtol, atol);
    double r = *rtol, s = sqrt((double)nred + 1);
    switch (op) {
    case NN_OP_sum: *rtol = 10 * r, *atol = 0.3 * r * s * 3; break;
    case NN_OP_mean: *rtol = 10 * r, *atol = r * 3 / s; break;
    case NN_OP_prod: /* long products underflow: CPU and GPU may stop at different subnormals */
        *rtol = r * (10 + (double)nred / 10), *atol = 1e-30;
        break;
    case NN_OP_var: case NN_OP_norm: *rtol = 10 * r, *atol = r; break;
    default: break;
    }
}

/* op over the dims in mask of x (pair), keepdim */
typedef nn_tensor *(*reduce_fn)(nn_tensor *x, void *ctx);

static void reduce_case(const char *name, nn_op op, nn_dtype dt, shape sh, int layout, int dom, uint32_t mask, bool keepdim,
                        reduce_fn fn, void *ctx)
{
    if (!begin("%s %s %s dims=0x%x%s %s", name, nn_dtype_name(dt), LNAME[fix_layout(layout, sh.nd)], mask, keepdim ? " keepdim" : "",
               sh.nd == 1 && sh.s[0] > 100000 ? "large" : ""))
        return;
    pair x = make(dt, sh.nd, sh.s, layout, dom);
    nn_tensor *c = fn(x.c, ctx);
    if (!c) save_err();
    nn_tensor *g = fn(x.g, ctx);
    double rtol, atol;
    reduce_tol(op, c ? c->dtype : dt, reduced_count(x.c, mask), &rtol, &atol);
    check(name, c, g, rtol, atol);
    nn_release(c);
    nn_release(g);
    pair_free(x);
    end();
}

typedef struct { nn_op op; uint32_t mask; bool keepdim; double f; int dim; nn_dtype dt; } rctx;

static nn_tensor *r_plain(nn_tensor *x, void *p) { rctx *r = p; return nn_reduce(r->op, x, r->mask, r->keepdim); }
static nn_tensor *r_var(nn_tensor *x, void *p) { rctx *r = p; return nn_var(x, r->mask, r->f, r->keepdim); }
static nn_tensor *r_std(nn_tensor *x, void *p) { rctx *r = p; return nn_std(x, r->mask, r->f, r->keepdim); }
static nn_tensor *r_norm(nn_tensor *x, void *p) { rctx *r = p; return nn_norm(x, r->f, r->mask, r->keepdim); }
static nn_tensor *r_sum_dtype(nn_tensor *x, void *p) { rctx *r = p; return nn_sum_dtype(x, r->mask, r->keepdim, r->dt); }
static nn_tensor *r_argmax(nn_tensor *x, void *p) { rctx *r = p; return nn_argmax(x, r->dim, r->keepdim); }
static nn_tensor *r_argmin(nn_tensor *x, void *p) { rctx *r = p; return nn_argmin(x, r->dim, r->keepdim); }
static nn_tensor *r_max(nn_tensor *x, void *p) { (void)p; return nn_max(x); }
/* max_dim/min_dim: the values (r->f == 0) or the indices */
static nn_tensor *r_maxmin_dim(nn_tensor *x, void *p)
{
    rctx *r = p;
    nn_tensor *v = NULL, *i = NULL;
    nn_status s = r->op == NN_OP_max_dim ? nn_max_dim(x, r->dim, r->keepdim, &v, &i) : nn_min_dim(x, r->dim, r->keepdim, &v, &i);
    if (s) return NULL;
    if (r->f == 0) {
        nn_release(i);
        return v;
    }
    nn_release(v);
    return i;
}

static void test_reduce(void)
{
    const shape S3 = {3, {37, 53, 19}};
    const uint32_t masks[] = {0, 1, 2, 4, 3, 5, 6};
    for (size_t k = 0; k < sizeof PLAIN / sizeof *PLAIN; k++)
        for (int j = 0; j < NALL; j++) {
            nn_op op = PLAIN[k];
            nn_dtype dt = ALL[j];
            int dom = op == NN_OP_prod ? D_NEAR1 : op == NN_OP_all || op == NN_OP_any ? D_SET : D_ANY;
            for (size_t m = 0; m < sizeof masks / sizeof *masks; m++)
                for (int l = 0; l < 3; l++) {
                    rctx r = {.op = op, .mask = masks[m], .keepdim = m & 1};
                    reduce_case(nn_op_name(op), op, dt, S3, l, dom, masks[m], r.keepdim, r_plain, &r);
                }
            /* the fast paths: full (split rows), rows, columns, few long rows, tall thin columns, tiny rows, vector rows */
            const struct { shape s; uint32_t mask; } big[] = {
                {{1, {LARGE}}, 0}, {{2, {2048, 1000}}, 2}, {{2, {2048, 1000}}, 1}, {{2, {3, 1 << 19}}, 2},
                {{2, {1 << 19, 3}}, 1}, {{2, {1 << 18, 5}}, 2}, {{2, {1 << 17, 40}}, 2}, {{3, {64, 4096, 4}}, 5},
                /* a conv bias's gradient: N and H*W reduced, rows of whole 16-byte vectors, one pass and split;
                 * then odd rows (16-bit: a warp a row from each row's first 16-byte boundary), one pass and split */
                {{4, {16, 6, 24, 32}}, 13}, {{4, {64, 3, 32, 64}}, 13}, {{4, {16, 6, 17, 19}}, 13}, {{4, {64, 3, 27, 27}}, 13}};
            for (size_t b = 0; b < sizeof big / sizeof *big; b++) {
                rctx r = {.op = op, .mask = big[b].mask, .keepdim = false};
                if (op == NN_OP_prod && big[b].s.s[0] * big[b].s.s[1] > 1000000 && big[b].mask == 0) dom = D_NEAR1;
                reduce_case(nn_op_name(op), op, dt, big[b].s, L_CONTIG, dom, big[b].mask, false, r_plain, &r);
            }
            {
                rctx r = {.op = op, .mask = 2, .keepdim = false};
                reduce_case(nn_op_name(op), op, dt, (shape){2, {2048, 1000}}, L_TRANS, dom, 2, false, r_plain, &r);
                reduce_case(nn_op_name(op), op, dt, (shape){2, {2048, 1000}}, L_NARROW, dom, 2, false, r_plain, &r);
            }
            /* empty, 0-dim, NaN */
            rctx r0 = {.op = op, .mask = 1, .keepdim = false};
            reduce_case(nn_op_name(op), op, dt, (shape){2, {0, 5}}, L_CONTIG, dom, 1, false, r_plain, &r0);
            rctx r1 = {.op = op, .mask = 0, .keepdim = false};
            reduce_case(nn_op_name(op), op, dt, (shape){0, {0}}, L_CONTIG, dom, 0, false, r_plain, &r1);
            if (j < NFLOAT) {
                rctx r2 = {.op = op, .mask = 2, .keepdim = false};
                reduce_case(nn_op_name(op), op, dt, SQ, L_TRANS, D_NAN, 2, false, r_plain, &r2);
                rctx r3 = {.op = op, .mask = 0, .keepdim = false};
                reduce_case(nn_op_name(op), op, dt, BIG, L_CONTIG, D_NAN, 0, false, r_plain, &r3);
            }
        }
    /* sum with a dtype */
    static const nn_dtype sd[][2] = {{NN_F16, NN_F32}, {NN_F32, NN_F64}, {NN_I32, NN_F32}, {NN_F32, NN_I64}, {NN_U8, NN_I32}, {NN_BF16, NN_F64}, {NN_F64, NN_F16}};
    for (size_t k = 0; k < sizeof sd / sizeof *sd; k++) {
        rctx r = {.op = NN_OP_sum, .mask = 2, .keepdim = false, .f = 0, .dim = 0, .dt = sd[k][1]};
        reduce_case("sum(dtype)", NN_OP_sum, sd[k][0], (shape){2, {300, 700}}, L_TRANS, D_ANY, 2, false, r_sum_dtype, &r);
        rctx r2 = {.op = NN_OP_sum, .mask = 0, .keepdim = false, .f = 0, .dim = 0, .dt = sd[k][1]};
        reduce_case("sum(dtype)", NN_OP_sum, sd[k][0], BIG, L_CONTIG, D_ANY, 0, false, r_sum_dtype, &r2);
    }
    /* var and std, norms */
    const double corr[] = {0, 1, 2};
    const double ps[] = {2, 1, INFINITY, -INFINITY, 0, 3, 0.5};
    for (int j = 0; j < NALL; j++) {
        nn_dtype dt = ALL[j];
        for (size_t m = 0; m < sizeof masks / sizeof *masks; m++)
            for (int l = 0; l < 3; l += 1) {
                rctx r = {.op = NN_OP_var, .mask = masks[m], .keepdim = m & 1, .f = corr[m % 3]};
                reduce_case("var", NN_OP_var, dt, S3, l, D_ANY, masks[m], r.keepdim, r_var, &r);
                reduce_case("std", NN_OP_var, dt, S3, l, D_ANY, masks[m], r.keepdim, r_std, &r);
            }
        for (size_t p = 0; p < sizeof ps / sizeof *ps; p++)
            for (size_t m = 0; m < 4; m++) {
                rctx r = {.op = NN_OP_norm, .mask = masks[m], .keepdim = false, .f = ps[p]};
                reduce_case("norm", NN_OP_norm, dt, S3, m & 1 ? L_TRANS : L_CONTIG, m == 3 ? D_ANY : D_SET, masks[m], false, r_norm, &r);
            }
        const struct { shape s; uint32_t mask; } big[] = {{{1, {LARGE}}, 0}, {{2, {2048, 1000}}, 2}, {{2, {2048, 1000}}, 1}, {{2, {1 << 19, 3}}, 1}, {{2, {1, 0}}, 2},
                                                          {{4, {16, 6, 17, 19}}, 13}, {{4, {64, 3, 27, 27}}, 13}};
        for (size_t b = 0; b < sizeof big / sizeof *big; b++) {
            rctx r = {.op = NN_OP_var, .mask = big[b].mask, .keepdim = false, .f = 1};
            reduce_case("var", NN_OP_var, dt, big[b].s, L_CONTIG, D_ANY, big[b].mask, false, r_var, &r);
            rctx q = {.op = NN_OP_norm, .mask = big[b].mask, .keepdim = false, .f = 2};
            reduce_case("norm", NN_OP_norm, dt, big[b].s, L_CONTIG, D_ANY, big[b].mask, false, r_norm, &q);
        }
    }
    /* index reductions: ties keep the first, NaN wins */
    for (int j = 0; j < NALL; j++) {
        nn_dtype dt = ALL[j];
        for (int dim = -1; dim < 3; dim++)
            for (int dom = 0; dom < 2; dom++)
                for (int l = 0; l < 3; l++) {
                    int domain = dom ? D_NAN : D_SET;
                    if (dom && j >= NFLOAT) continue;
                    rctx r = {.op = NN_OP_max_dim, .mask = 0, .keepdim = dim == 1, .f = 0, .dim = dim};
                    if (dim >= 0)
                        for (int what = 0; what < 2; what++) {
                            r.f = what;
                            r.op = NN_OP_max_dim;
                            reduce_case(what ? "max(dim) indices" : "max(dim) values", NN_OP_max_dim, dt, S3, l, domain, 1u << dim,
                                        r.keepdim, r_maxmin_dim, &r);
                            r.op = NN_OP_min_dim;
                            reduce_case(what ? "min(dim) indices" : "min(dim) values", NN_OP_min_dim, dt, S3, l, domain, 1u << dim,
                                        r.keepdim, r_maxmin_dim, &r);
                        }
                    r.dim = dim < 0 ? NN_NO_DIM : dim;
                    reduce_case("argmax", NN_OP_argmax, dt, S3, l, domain, dim < 0 ? 0 : 1u << dim, r.keepdim, r_argmax, &r);
                    reduce_case("argmin", NN_OP_argmin, dt, S3, l, domain, dim < 0 ? 0 : 1u << dim, r.keepdim, r_argmin, &r);
                }
        const struct { shape s; int dim; } big[] = {{{1, {LARGE}}, 0}, {{2, {2048, 1000}}, 1}, {{2, {2048, 1000}}, 0}, {{2, {1 << 19, 3}}, 0}, {{2, {3, 1 << 19}}, 1}};
        for (size_t b = 0; b < sizeof big / sizeof *big; b++) {
            rctx r = {.op = NN_OP_argmax, .mask = 0, .keepdim = false, .f = 0, .dim = big[b].dim};
            reduce_case("argmax", NN_OP_argmax, dt, big[b].s, L_CONTIG, D_SET, 1u << big[b].dim, false, r_argmax, &r);
            r.op = NN_OP_min_dim;
            r.f = 0;
            reduce_case("min(dim) values", NN_OP_min_dim, dt, big[b].s, L_CONTIG, D_ANY, 1u << big[b].dim, false, r_maxmin_dim, &r);
            r.f = 1;
            reduce_case("min(dim) indices", NN_OP_min_dim, dt, big[b].s, L_CONTIG, D_ANY, 1u << big[b].dim, false, r_maxmin_dim, &r);
        }
        rctx r = {.op = NN_OP_amax};
        reduce_case("max()", NN_OP_amax, dt, BIG, L_CONTIG, D_ANY, 0, false, r_max, &r);
    }
}

/* ---- copies and fills ---- */

static void test_copy_fill(void)
{
    for (int i = 0; i < NALL; i++)
        for (int j = 0; j < NALL; j++)
            for (int l = 0; l < 4; l++) { /* contiguous, transposed, large, dense but misaligned */
                nn_dtype from = ALL[i], to = ALL[j];
                static const char *const kind[] = {"contig", "transposed", "large", "1-D from element 1"};
                shape sh = l == 2 ? BIG : l == 3 ? ODD : SQ;
                if (!begin("copy %s -> %s %s", nn_dtype_name(from), nn_dtype_name(to), kind[l])) continue;
                pair x = make(from, sh.nd, sh.s, l == 1 ? L_TRANS : l == 3 ? L_NARROW : L_CONTIG, D_ANY);
                nn_tensor *c = nn_to_dtype(x.c, to);
                if (!c) save_err();
                nn_tensor *g = nn_to_dtype(x.g, to);
                check("to_dtype", c, g, 0, 0);
                nn_release(c);
                nn_release(g);
                pair_free(x);
                end();
            }
    for (int i = 0; i < NALL; i++) {
        nn_dtype dt = ALL[i];
        if (begin("contiguous/clone %s narrowed", nn_dtype_name(dt))) {
            pair x = make(dt, SQ.nd, SQ.s, L_NARROW, D_ANY);
            nn_tensor *c = nn_contiguous(x.c), *g = nn_contiguous(x.g);
            check("contiguous", c, g, 0, 0);
            nn_release(g);
            g = nn_clone(x.g);
            check("clone", c, g, 0, 0);
            nn_release(c);
            nn_release(g);
            pair_free(x);
            end();
        }
        if (begin("copy_ cpu -> cuda transposed view %s", nn_dtype_name(dt))) {
            pair dst = make(dt, SQ.nd, SQ.s, L_TRANS, D_ANY);
            nn_tensor *src = mk(NN_F32, SQ.nd, SQ.s, D_ANY);
            nn_status sc = nn_copy_(dst.c, src), sg = nn_copy_(dst.g, src);
            if (sc || sg) fail("copy_: %s", nn_last_error());
            else check("copy_", dst.c, dst.g, 0, 0);
            nn_tensor *back = nn_empty(SQ.nd, SQ.s, dt, CPU);
            if (!sg && nn_copy_(back, dst.g)) fail("copy_ cuda -> cpu: %s", nn_last_error());
            else if (!sg) compare("copy_ back", dst.c, back, 0, 0);
            nn_release(back);
            nn_release(src);
            pair_free(dst);
            end();
        }
        if (begin("fill %s", nn_dtype_name(dt))) {
            nn_tensor *c = nn_full(SQ.nd, SQ.s, 2.5 * nn_dtype_is_float(dt) + 3, dt, CPU);
            nn_tensor *g = nn_full(SQ.nd, SQ.s, 2.5 * nn_dtype_is_float(dt) + 3, dt, DEV);
            check("full", c, g, 0, 0);
            pair v = make(dt, SQ.nd, SQ.s, L_TRANS, D_ANY);
            nn_tensor *vc = nn_narrow(v.c, 0, 3, 20), *vg = nn_narrow(v.g, 0, 3, 20);
            if (nn_fill_(vc, 1) || nn_fill_(vg, 1)) fail("fill_: %s", nn_last_error());
            else check("fill_ on a view", v.c, v.g, 0, 0);
            if (nn_zero_(vc) || nn_zero_(vg)) fail("zero_: %s", nn_last_error());
            else check("zero_ on a view", v.c, v.g, 0, 0);
            nn_release(vc), nn_release(vg), nn_release(c), nn_release(g);
            pair_free(v);
            c = nn_ones(BIG.nd, BIG.s, dt, CPU), g = nn_ones(BIG.nd, BIG.s, dt, DEV);
            check("ones large", c, g, 0, 0);
            nn_release(c), nn_release(g);
            end();
        }
        if (dt != NN_BOOL && begin("arange/linspace/eye %s", nn_dtype_name(dt))) {
            nn_tensor *c = nn_arange(0, 100, 3, true, dt, CPU), *g = nn_arange(0, 100, 3, true, dt, DEV);
            check("arange", c, g, 0, 0);
            nn_release(c), nn_release(g);
            if (nn_dtype_is_float(dt)) {
                c = nn_arange(-1, 1, 0.125, false, dt, CPU), g = nn_arange(-1, 1, 0.125, false, dt, DEV);
                check("arange float", c, g, 0, 0);
                nn_release(c), nn_release(g);
                c = nn_linspace(-2, 5, 33, dt, CPU), g = nn_linspace(-2, 5, 33, dt, DEV);
                check_dt("linspace", c, g);
                nn_release(c), nn_release(g);
            }
            c = nn_eye(5, 7, dt, CPU), g = nn_eye(5, 7, dt, DEV);
            check("eye", c, g, 0, 0);
            nn_release(c), nn_release(g);
            end();
        }
    }
}

/* NCHW <-> channels-last copies (cuda/strided_copy.cuh's transposes: 32 or 64 rows by 32 or 64 columns
 * a block, and a thread a position where the channels or the image are 16 or fewer) against the CPU's */
static void test_channels_last_copy(void)
{
    static const int64_t shapes[][4] = {{2, 40, 9, 7}, {3, 3, 33, 35}, {2, 64, 70, 70}, {5, 17, 4, 4}, {1, 33, 1, 65}, {2, 130, 5, 7},
                                        {2, 24, 5, 6}, {3, 20, 9, 9}};
    static const nn_dtype dts[] = {NN_F32, NN_F16, NN_BF16, NN_I32, NN_F64};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (size_t j = 0; j < sizeof dts / sizeof dts[0]; j++) {
            const int64_t *s = shapes[i];
            if (!begin("channels-last copy %s [%lld, %lld, %lld, %lld]", nn_dtype_name(dts[j]), (long long)s[0], (long long)s[1],
                       (long long)s[2], (long long)s[3]))
                continue;
            pair x = make(dts[j], 4, s, L_CONTIG, D_ANY);
            nn_tensor *c = nn_contiguous_as(x.c, NN_CHANNELS_LAST), *g = nn_contiguous_as(x.g, NN_CHANNELS_LAST);
            check("to channels-last", c, g, 0, 0);
            nn_tensor *cb = c ? nn_contiguous(c) : NULL, *gb = g ? nn_contiguous(g) : NULL;
            check("back to NCHW", cb, gb, 0, 0);
            nn_release(c), nn_release(g), nn_release(cb), nn_release(gb);
            /* into the first channels of a channels-last tensor with one more (conv2d's zero-padded input) */
            int64_t s1[4] = {s[0], s[1] + 1, s[2], s[3]};
            pair y = make(dts[j], 4, s1, L_CONTIG, D_ANY);
            nn_tensor *yc = nn_contiguous_as(y.c, NN_CHANNELS_LAST), *yg = nn_contiguous_as(y.g, NN_CHANNELS_LAST);
            nn_tensor *hc = yc ? nn_narrow(yc, 1, 0, s[1]) : NULL, *hg = yg ? nn_narrow(yg, 1, 0, s[1]) : NULL;
            if (!hc || !hg || nn_copy_(hc, x.c) || nn_copy_(hg, x.g)) fail("copy into channels: %s", nn_last_error());
            else check("into the first channels", yc, yg, 0, 0);
            nn_release(yc), nn_release(yg), nn_release(hc), nn_release(hg);
            pair_free(y);
            pair_free(x);
            end();
        }
}

/* ---- random fills: the same seed, the same numbers ---- */

static void test_random(void)
{
    const shape R = {2, {257, 129}};
    for (int j = 0; j < NFLOAT; j++) {
        nn_dtype dt = ALL[j];
        if (begin("rand %s", nn_dtype_name(dt))) {
            nn_manual_seed(1234);
            nn_tensor *c = nn_rand(R.nd, R.s, dt, CPU);
            nn_manual_seed(1234);
            nn_tensor *g = nn_rand(R.nd, R.s, dt, DEV);
            check("rand", c, g, 0, 0);
            nn_release(c), nn_release(g);
            end();
        }
        if (begin("randn %s", nn_dtype_name(dt))) {
            nn_manual_seed(99);
            nn_tensor *c = nn_randn(R.nd, R.s, dt, CPU);
            nn_manual_seed(99);
            nn_tensor *g = nn_randn(R.nd, R.s, dt, DEV);
            /* sqrt/log/cos in double may differ in the last bit between libm and CUDA */
            check("randn", c, g, dt == NN_F64 ? 1e-14 : 0, dt == NN_F64 ? 1e-14 : 0);
            nn_release(c), nn_release(g);
            end();
        }
        if (begin("uniform_/normal_ on a transposed view %s", nn_dtype_name(dt))) {
            pair v = make(dt, R.nd, R.s, L_TRANS, D_ANY);
            nn_manual_seed(7);
            nn_status sc = nn_uniform_(v.c, -2, 5);
            nn_manual_seed(7);
            nn_status sg = nn_uniform_(v.g, -2, 5);
            if (sc || sg) fail("uniform_: %s", nn_last_error());
            else check("uniform_", v.c, v.g, 0, 0);
            nn_manual_seed(8);
            sc = nn_normal_(v.c, 1, 3);
            nn_manual_seed(8);
            sg = nn_normal_(v.g, 1, 3);
            if (sc || sg) fail("normal_: %s", nn_last_error());
            else check("normal_", v.c, v.g, dt == NN_F64 ? 1e-14 : 0, dt == NN_F64 ? 1e-14 : 0);
            pair_free(v);
            end();
        }
    }
    const nn_dtype idt[] = {NN_I64, NN_I32, NN_I16, NN_F32};
    for (int j = 0; j < 4; j++)
        if (begin("randint %s", nn_dtype_name(idt[j]))) {
            nn_manual_seed(5);
            nn_tensor *c = nn_randint(-3, 100, R.nd, R.s, idt[j], CPU);
            nn_manual_seed(5);
            nn_tensor *g = nn_randint(-3, 100, R.nd, R.s, idt[j], DEV);
            check("randint", c, g, 0, 0);
            nn_release(c), nn_release(g);
            nn_manual_seed(6);
            c = nn_randint(0, (int64_t)1 << 40, 1, R.s, NN_I64, CPU);
            nn_manual_seed(6);
            g = nn_randint(0, (int64_t)1 << 40, 1, R.s, NN_I64, DEV);
            check("randint wide", c, g, 0, 0);
            nn_release(c), nn_release(g);
            end();
        }
}

/* ---- autograd through CUDA tensors ---- */

/* loss = sum(sigmoid(x * w) * tanh(x)) + mean(maximum(x, 0.5)^2) + sum(where(x > 0, x, x * 0.1))
 *        + sum(std(x, dim 1)) + amax(x) + sum(exp(-x) / (1 + x^2)) - sum(log1p(|x|)) */
static nn_tensor *graph(nn_tensor *x, nn_tensor *w)
{
    nn_tensor *t[40] = {0}, *out = NULL;
    int n = 0;
    nn_tensor *half = number(0.5), *tenth = number(0.1), *zero = number(0), *one = number(1);
#define STEP(var, e) \
    nn_tensor *var = (e); \
    t[n++] = var; \
    if (!var) goto done;
    STEP(xw, nn_binary(NN_OP_mul, x, w))
    STEP(sg, nn_unary(NN_OP_sigmoid, xw))
    STEP(th, nn_unary(NN_OP_tanh, x))
    STEP(a, nn_binary(NN_OP_mul, sg, th))
    STEP(l1, nn_reduce(NN_OP_sum, a, 0, false))
    STEP(mx, nn_binary(NN_OP_maximum, x, half))
    STEP(sq, nn_pow_scalar(mx, 2))
    STEP(l2, nn_reduce(NN_OP_mean, sq, 0, false))
    STEP(pos, nn_binary(NN_OP_gt, x, zero))
    STEP(xt, nn_binary(NN_OP_mul, x, tenth))
    STEP(wh, nn_where(pos, x, xt))
    STEP(l3, nn_reduce(NN_OP_sum, wh, 0, false))
    STEP(sd, nn_std(x, 2, 1, false))
    STEP(l4, nn_reduce(NN_OP_sum, sd, 0, false))
    STEP(l5, nn_max(x))
    STEP(ng, nn_unary(NN_OP_neg, x))
    STEP(ex, nn_unary(NN_OP_exp, ng))
    STEP(x2, nn_pow_scalar(x, 2))
    STEP(den, nn_binary(NN_OP_add, one, x2))
    STEP(q, nn_binary(NN_OP_div, ex, den))
    STEP(l6, nn_reduce(NN_OP_sum, q, 0, false))
    STEP(ab, nn_unary(NN_OP_abs, x))
    STEP(lp, nn_unary(NN_OP_log1p, ab))
    STEP(l7, nn_reduce(NN_OP_sum, lp, 0, false))
    STEP(s1, nn_binary(NN_OP_add, l1, l2))
    STEP(s2, nn_binary(NN_OP_add, s1, l3))
    STEP(s3, nn_binary(NN_OP_add, s2, l4))
    STEP(s4, nn_binary(NN_OP_add, s3, l5))
    STEP(s5, nn_binary(NN_OP_add, s4, l6))
    STEP(s6, nn_binary(NN_OP_sub, s5, l7))
#undef STEP
    out = nn_retain(s6);
done:
    for (int i = 0; i < n; i++) nn_release(t[i]);
    nn_release(half), nn_release(tenth), nn_release(zero), nn_release(one);
    return out;
}

static void test_autograd(void)
{
    const nn_dtype dts[] = {NN_F32, NN_F64};
    for (int j = 0; j < 2; j++) {
        if (!begin("autograd %s", nn_dtype_name(dts[j]))) continue;
        int64_t xs[2] = {6, 7}, ws[1] = {7};
        pair x = make(dts[j], 2, xs, L_CONTIG, D_ANY), w = make(dts[j], 1, ws, L_CONTIG, D_ANY);
        check_graph(graph, x, w, dts[j] == NN_F64 ? 1e-10 : 1e-4);
        pair_free(x), pair_free(w);
        end();
    }
}

/* ---- devices ---- */

static void test_devices(void)
{
    if (begin("mixing a CUDA tensor with a CPU tensor of dims > 0 is an error")) {
        if (!self_test) {
            int64_t s[1] = {3};
            pair a = make(NN_F32, 1, s, L_CONTIG, D_ANY);
            nn_tensor *r = nn_binary(NN_OP_add, a.g, a.c);
            if (r || !strstr(nn_last_error(), "expected all tensors to be on the same device"))
                fail("add(cuda, cpu): %s", r ? "no error" : nn_last_error());
            nn_release(r);
            r = nn_binary(NN_OP_mul, a.c, a.g);
            if (r || !strstr(nn_last_error(), "same device")) fail("mul(cpu, cuda): %s", r ? "no error" : nn_last_error());
            nn_release(r);
            nn_tensor *cond = nn_binary(NN_OP_gt, a.g, a.g);
            r = cond ? nn_where(cond, a.g, a.c) : NULL;
            if (r || !strstr(nn_last_error(), "same device")) fail("where(cuda, cuda, cpu): %s", r ? "no error" : nn_last_error());
            nn_release(r), nn_release(cond);
            pair_free(a);
        }
        end();
    }
    if (begin("a 0-dim CPU tensor joins a CUDA op; the result stays on the GPU")) {
        int64_t s[1] = {5};
        pair a = make(NN_F32, 1, s, L_CONTIG, D_ANY);
        nn_tensor *z = nn_scalar_f64(2);
        z->wrapped_number = false; /* a real 0-dim CPU tensor, not a number */
        nn_tensor *c = nn_binary(NN_OP_mul, a.c, z), *g = nn_binary(NN_OP_mul, a.g, z);
        check("mul", c, g, 0, 0);
        nn_release(c), nn_release(g);
        c = nn_binary(NN_OP_sub, z, a.c), g = nn_binary(NN_OP_sub, z, a.g);
        check("sub", c, g, 0, 0);
        nn_release(c), nn_release(g), nn_release(z);
        pair_free(a);
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
    if (want("reduce")) test_reduce();
    if (want("copy")) test_copy_fill(), test_channels_last_copy();
    if (want("random")) test_random();
    if (want("autograd")) test_autograd();
    if (want("devices")) test_devices();
    return harness_done("test_cuda_ops", t0);
}
