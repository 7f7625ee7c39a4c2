/* Backward of the elementwise ops (unary, binary, where, copies) and the recording of
 * their out-of-place and in-place forms.
 *
 * Saved values sit in fixed slots, the same for both forms: 0 the input (unary) or the
 * first operand, 1 the second operand, 2 the output. In place, slot 0 holds a clone of
 * self taken before the op and slot 2 self itself after it. Formulas are PyTorch's
 * (derivatives.yaml); a gradient may come back in the broadcast shape, nn_backward sums
 * it down to each input. */
#define NN_GRAD_INTERNAL
#include <math.h>
#include <string.h>

#include "grad.h"

enum { S_A = 0, S_B = 1, S_OUT = 2 };
#define NEEDS(n, k) ((n)->next[k].node != NULL)

/* ---- what each op's backward reads ---- */

static bool unary_needs_x(nn_op op, double f0)
{
    switch (op) {
    case NN_OP_log: case NN_OP_abs: case NN_OP_erf: case NN_OP_log1p: case NN_OP_clamp: case NN_OP_sin: case NN_OP_cos:
    case NN_OP_asin: case NN_OP_acos: case NN_OP_atan: case NN_OP_sinh: case NN_OP_cosh: case NN_OP_log2: case NN_OP_log10:
    case NN_OP_erfc: case NN_OP_asinh: case NN_OP_acosh: case NN_OP_atanh: case NN_OP_angle: case NN_OP_sgn:
        return true;
    case NN_OP_pow_scalar: return f0 != 0;
    default: return false;
    }
}

static bool unary_needs_out(nn_op op)
{
    switch (op) {
    case NN_OP_exp: case NN_OP_sqrt: case NN_OP_rsqrt: case NN_OP_sigmoid: case NN_OP_tanh: case NN_OP_relu: case NN_OP_tan:
    case NN_OP_expm1: case NN_OP_exp2: case NN_OP_reciprocal: case NN_OP_sgn:
        return true;
    default: return false;
    }
}

/* need_a/need_b: which operands want a gradient; sets what must be saved */
static void binary_saves(nn_op op, bool need_a, bool need_b, bool *sa, bool *sb, bool *sout)
{
    *sa = *sb = *sout = false;
    switch (op) {
    case NN_OP_mul: *sa = need_b, *sb = need_a; break;
    case NN_OP_div: *sa = need_b, *sb = need_a || need_b; break;
    case NN_OP_pow: *sa = *sb = true, *sout = need_b; break;
    case NN_OP_remainder: case NN_OP_fmod: *sa = *sb = need_b; break;
    case NN_OP_maximum: case NN_OP_minimum: case NN_OP_fmax: case NN_OP_fmin: case NN_OP_atan2: *sa = *sb = true; break;
    default: break;
    }
}

static bool differentiable_binary(nn_op op)
{
    switch (op) {
    case NN_OP_add: case NN_OP_sub: case NN_OP_mul: case NN_OP_div: case NN_OP_pow: case NN_OP_remainder: case NN_OP_fmod:
    case NN_OP_maximum: case NN_OP_minimum: case NN_OP_fmax: case NN_OP_fmin: case NN_OP_atan2:
        return true;
    default:
        return false;
    }
}

/* Python's reflected operators reach PyTorch as other functions: 1 - x is rsub, 2 / x is
 * x.reciprocal() * 2, 2 ^ x is pow(Scalar, Tensor); x % 2 is remainder.Scalar. */
static const char *binary_name(nn_op op, const nn_tensor *a, const nn_tensor *b)
{
    switch (op) {
    case NN_OP_sub: return a->wrapped_number ? "RsubBackward1" : "SubBackward0";
    case NN_OP_div: return a->wrapped_number ? "MulBackward0" : "DivBackward0";
    case NN_OP_pow: return a->wrapped_number ? "PowBackward2" : b->wrapped_number ? "PowBackward0" : "PowBackward1";
    case NN_OP_remainder: return b->wrapped_number ? "RemainderBackward0" : "RemainderBackward1";
    case NN_OP_fmod: return b->wrapped_number ? "FmodBackward0" : "FmodBackward1";
    case NN_OP_eq: return "EqBackward1";
    case NN_OP_ne: return "NeBackward1";
    case NN_OP_lt: return "LtBackward1";
    case NN_OP_le: return "LeBackward1";
    case NN_OP_gt: return "GtBackward1";
    case NN_OP_ge: return "GeBackward1";
    case NN_OP_logical_and: return "LogicalAndBackward0";
    case NN_OP_logical_or: return "LogicalOrBackward0";
    default: return nn_op_backward_name(op);
    }
}

/* ops whose gradient is zero everywhere it is defined */
static bool zero_gradient(nn_op op)
{
    switch (op) {
    case NN_OP_sign: case NN_OP_logical_not: case NN_OP_floor: case NN_OP_ceil: case NN_OP_round: case NN_OP_trunc: return true;
    default: return false;
    }
}

/* ---- backward functions ---- */

static nn_tensor *zeros_for(const nn_edge *e) { return nn_zeros(e->ndim, e->shape, e->dtype, e->device); }

/* Gradients that are zero: sign, and in-place ops that overwrite self's value (fill_, eq_, ...). */
static nn_status zeros_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    for (int k = 0; k < n->nin; k++)
        if (NEEDS(n, k) && !(gi[k] = zeros_for(&n->next[k]))) return nn_last_status();
    return NN_OK;
}

/* The non-holomorphic ops of complex x (abs, angle, sgn); NN_ERR_NOTIMPL for the others,
 * whose real formulas hold on the conjugates */
static nn_status complex_unary_backward(gscope *s, nn_op op, nn_tensor *g, nn_tensor *x, nn_tensor *y, nn_tensor **r)
{
    nn_tensor *zero = gs_num(s, 0), *ax = op != NN_OP_abs ? gs_un(s, NN_OP_abs, x) : NULL;
    switch (op) {
    case NN_OP_abs: *r = gs_bin(s, NN_OP_mul, g, gs_keep(s, nn_sgn(x))); break;
    case NN_OP_angle: { /* g i z / |z|^2, 0 at 0 */
        nn_tensor *iz = gs_bin(s, NN_OP_mul, x, gs_keep(s, nn_scalar_c128(0, 1)));
        *r = gs_where(s, gs_bin(s, NN_OP_eq, ax, zero), zero, gs_bin(s, NN_OP_div, gs_bin(s, NN_OP_mul, g, iz), gs_bin(s, NN_OP_mul, ax, ax)));
        break;
    }
    case NN_OP_sgn: { /* (g - sgn^2 conj(g)) / (2|z|), 0 at 0 */
        nn_tensor *d = gs_bin(s, NN_OP_sub, g, gs_bin(s, NN_OP_mul, gs_bin(s, NN_OP_mul, y, y), gs_conj(s, g)));
        *r = gs_where(s, gs_bin(s, NN_OP_eq, ax, zero), zero, gs_bin(s, NN_OP_div, d, gs_muls(s, ax, 2)));
        break;
    }
    default: return NN_ERR_NOTIMPL;
    }
    return gs_status(*r);
}

static nn_status unary_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    nn_op op = (nn_op)n->i[0];
    double f0 = n->f[0], f1 = n->f[1];
    nn_tensor *g = go[0], *x = NULL, *y = NULL, *r = NULL;
    if (unary_needs_x(op, f0) && !(x = nn_node_saved(n, S_A))) return nn_last_status();
    if (unary_needs_out(op) && !(y = nn_node_saved(n, S_OUT))) return nn_last_status();
    gscope s = {0};
    if (x && nn_dtype_is_complex(x->dtype)) {
        nn_status st = complex_unary_backward(&s, op, g, x, y, &r);
        if (st != NN_ERR_NOTIMPL) {
            gi[0] = st ? NULL : gs_ret(r);
            gs_free(&s);
            return st ? st : gs_status(gi[0]);
        }
    }
    if (op == NN_OP_conj_physical) r = gs_conj(&s, g);
    /* a one-pass backward kernel (real dtypes, no graph being recorded) */
    bool fused_ok = !nn_backward_creates_graph() && y && !nn_dtype_is_complex(y->dtype) && !nn_dtype_is_complex(g->dtype);
    x = gs_conj(&s, x), y = gs_conj(&s, y);
    switch (op) {
    case NN_OP_neg: r = gs_un(&s, NN_OP_neg, g); break;
    case NN_OP_exp: r = gs_bin(&s, NN_OP_mul, g, y); break;
    case NN_OP_log: r = gs_bin(&s, NN_OP_div, g, x); break;
    case NN_OP_sqrt: r = gs_bin(&s, NN_OP_div, g, gs_muls(&s, y, 2)); break;
    case NN_OP_rsqrt: r = gs_bin(&s, NN_OP_mul, g, gs_muls(&s, gs_keep(&s, nn_pow_scalar(y, 3)), -0.5)); break;
    case NN_OP_abs: r = gs_bin(&s, NN_OP_mul, g, gs_un(&s, NN_OP_sign, x)); break;
    /* sigmoid and tanh: one pass (PyTorch's kernels' order); recording a graph, ops that have derivatives */
    case NN_OP_sigmoid:
        r = fused_ok ? gs_bin(&s, NN_OP_sigmoid_backward, g, y)
                     : gs_bin(&s, NN_OP_mul, g, gs_bin(&s, NN_OP_mul, y, gs_bin(&s, NN_OP_sub, gs_num(&s, 1), y)));
        break;
    case NN_OP_tanh:
        r = fused_ok ? gs_bin(&s, NN_OP_tanh_backward, g, y)
                     : gs_bin(&s, NN_OP_mul, g, gs_bin(&s, NN_OP_sub, gs_num(&s, 1), gs_bin(&s, NN_OP_mul, y, y)));
        break;
    case NN_OP_relu: /* one pass; recording a graph, a where() that has a derivative in g */
        r = nn_backward_creates_graph() ? gs_where(&s, gs_bin(&s, NN_OP_gt, y, gs_num(&s, 0)), g, gs_num(&s, 0))
                                        : gs_bin(&s, NN_OP_threshold_backward, g, y);
        break;
    case NN_OP_erf: /* 2/sqrt(pi) * exp(-x^2) */
        r = gs_bin(&s, NN_OP_mul, g,
                   gs_muls(&s, gs_un(&s, NN_OP_exp, gs_un(&s, NN_OP_neg, gs_bin(&s, NN_OP_mul, x, x))), 1.1283791670955126));
        break;
    case NN_OP_log1p: r = gs_bin(&s, NN_OP_div, g, gs_bin(&s, NN_OP_add, x, gs_num(&s, 1))); break;
    case NN_OP_sin: r = gs_bin(&s, NN_OP_mul, g, gs_un(&s, NN_OP_cos, x)); break;
    case NN_OP_cos: r = gs_bin(&s, NN_OP_mul, g, gs_un(&s, NN_OP_neg, gs_un(&s, NN_OP_sin, x))); break;
    case NN_OP_tan: r = gs_bin(&s, NN_OP_mul, g, gs_bin(&s, NN_OP_add, gs_bin(&s, NN_OP_mul, y, y), gs_num(&s, 1))); break;
    case NN_OP_asin:
    case NN_OP_acos: { /* +-1 / sqrt(1 - x^2) */
        nn_tensor *d = gs_un(&s, NN_OP_sqrt, gs_bin(&s, NN_OP_sub, gs_num(&s, 1), gs_bin(&s, NN_OP_mul, x, x)));
        r = gs_bin(&s, NN_OP_div, op == NN_OP_asin ? g : gs_un(&s, NN_OP_neg, g), d);
        break;
    }
    case NN_OP_atan: r = gs_bin(&s, NN_OP_div, g, gs_bin(&s, NN_OP_add, gs_bin(&s, NN_OP_mul, x, x), gs_num(&s, 1))); break;
    case NN_OP_acosh:
        if (nn_dtype_is_complex(x->dtype)) { /* 1 / (sqrt(x + 1) sqrt(x - 1)): the branch of acosh */
            nn_tensor *one = gs_num(&s, 1);
            nn_tensor *d = gs_bin(&s, NN_OP_mul, gs_un(&s, NN_OP_sqrt, gs_bin(&s, NN_OP_add, x, one)),
                                  gs_un(&s, NN_OP_sqrt, gs_bin(&s, NN_OP_sub, x, one)));
            r = gs_bin(&s, NN_OP_div, g, d);
            break;
        }
        /* fall through */
    case NN_OP_asinh: { /* 1 / sqrt(x^2 + 1), 1 / sqrt(x^2 - 1) */
        nn_tensor *d = gs_bin(&s, op == NN_OP_asinh ? NN_OP_add : NN_OP_sub, gs_bin(&s, NN_OP_mul, x, x), gs_num(&s, 1));
        r = gs_bin(&s, NN_OP_div, g, gs_un(&s, NN_OP_sqrt, d));
        break;
    }
    case NN_OP_atanh: r = gs_bin(&s, NN_OP_div, g, gs_bin(&s, NN_OP_sub, gs_num(&s, 1), gs_bin(&s, NN_OP_mul, x, x))); break;
    case NN_OP_sinh: r = gs_bin(&s, NN_OP_mul, g, gs_un(&s, NN_OP_cosh, x)); break;
    case NN_OP_cosh: r = gs_bin(&s, NN_OP_mul, g, gs_un(&s, NN_OP_sinh, x)); break;
    case NN_OP_expm1: r = gs_bin(&s, NN_OP_mul, g, gs_bin(&s, NN_OP_add, y, gs_num(&s, 1))); break;
    case NN_OP_exp2: r = gs_bin(&s, NN_OP_mul, g, gs_muls(&s, y, 0.69314718055994531)); break;
    case NN_OP_log2: r = gs_bin(&s, NN_OP_div, g, gs_muls(&s, x, 0.69314718055994531)); break;
    case NN_OP_log10: r = gs_bin(&s, NN_OP_div, g, gs_muls(&s, x, 2.3025850929940457)); break;
    case NN_OP_reciprocal: r = gs_bin(&s, NN_OP_mul, g, gs_un(&s, NN_OP_neg, gs_bin(&s, NN_OP_mul, y, y))); break;
    case NN_OP_erfc: /* -2/sqrt(pi) * exp(-x^2) */
        r = gs_bin(&s, NN_OP_mul, g,
                   gs_muls(&s, gs_un(&s, NN_OP_exp, gs_un(&s, NN_OP_neg, gs_bin(&s, NN_OP_mul, x, x))), -1.1283791670955126));
        break;
    case NN_OP_frac: r = g; break;
    case NN_OP_clamp: { /* the gradient passes where min <= x <= max */
        nn_tensor *lo = n->i[1] & 1 ? gs_bin(&s, NN_OP_ge, x, gs_num(&s, f0)) : NULL;
        nn_tensor *hi = n->i[1] & 2 ? gs_bin(&s, NN_OP_le, x, gs_num(&s, f1)) : NULL;
        nn_tensor *m = lo && hi ? gs_bin(&s, NN_OP_logical_and, lo, hi) : lo ? lo : hi;
        r = gs_where(&s, m, g, gs_num(&s, 0));
        break;
    }
    case NN_OP_conj_physical: break;
    case NN_OP_pow_scalar:
        if (f0 == 0) r = gs_keep(&s, zeros_for(&n->next[0]));
        else r = gs_bin(&s, NN_OP_mul, g, gs_muls(&s, gs_keep(&s, nn_pow_scalar(x, f0 - 1)), f0));
        break;
    default: /* sign, logical_not_ in place */
        r = gs_keep(&s, zeros_for(&n->next[0]));
        break;
    }
    gi[0] = gs_ret(r);
    gs_free(&s);
    return gs_status(gi[0]);
}

static nn_status binary_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    nn_op op = (nn_op)n->i[0];
    double alpha = n->f[0];
    bool na = NEEDS(n, 0), nb = NEEDS(n, 1), sa, sb, so;
    binary_saves(op, na, nb, &sa, &sb, &so);
    nn_tensor *g = go[0], *a = NULL, *b = NULL, *y = NULL, *ra = NULL, *rb = NULL;
    if ((sa && !(a = nn_node_saved(n, S_A))) || (sb && !(b = nn_node_saved(n, S_B))) || (so && !(y = nn_node_saved(n, S_OUT))))
        return nn_last_status();
    gscope s = {0};
    a = gs_conj(&s, a), b = gs_conj(&s, b), y = gs_conj(&s, y);
    switch (op) {
    case NN_OP_add:
    case NN_OP_sub: {
        double k = op == NN_OP_add ? alpha : -alpha;
        ra = g;
        if (nb) rb = k == 1 ? g : gs_muls(&s, g, k);
        break;
    }
    case NN_OP_mul:
        if (na) ra = gs_bin(&s, NN_OP_mul, g, b);
        if (nb) rb = gs_bin(&s, NN_OP_mul, g, a);
        break;
    case NN_OP_div:
        if (na) ra = gs_bin(&s, NN_OP_div, g, b);
        if (nb) rb = gs_bin(&s, NN_OP_mul, gs_un(&s, NN_OP_neg, g), gs_bin(&s, NN_OP_div, gs_bin(&s, NN_OP_div, a, b), b));
        break;
    case NN_OP_pow: {
        nn_tensor *zero = gs_num(&s, 0);
        if (na) { /* 0 where the exponent is 0 (so 0^0 gives 0, not nan) */
            nn_tensor *d = gs_bin(&s, NN_OP_mul, b, gs_bin(&s, NN_OP_pow, a, gs_bin(&s, NN_OP_sub, b, gs_num(&s, 1))));
            ra = gs_where(&s, gs_bin(&s, NN_OP_eq, b, zero), zero, gs_bin(&s, NN_OP_mul, g, d));
        }
        if (nb) { /* 0 where base == 0 and exponent >= 0 (its real part, for complex) */
            nn_tensor *bre = nn_dtype_is_complex(b->dtype) ? gs_keep(&s, nn_real(b)) : b;
            nn_tensor *c = gs_bin(&s, NN_OP_logical_and, gs_bin(&s, NN_OP_eq, a, zero), gs_bin(&s, NN_OP_ge, bre, zero));
            rb = gs_bin(&s, NN_OP_mul, g, gs_where(&s, c, zero, gs_bin(&s, NN_OP_mul, y, gs_un(&s, NN_OP_log, a))));
        }
        break;
    }
    case NN_OP_remainder: /* d/db (a - b*floor(a/b)) = -floor(a/b) = -(a - a%b)/b */
    case NN_OP_fmod:      /* d/db (a - b*trunc(a/b)) = -trunc(a/b) = -(a - fmod(a, b))/b */
        ra = g;
        if (nb) {
            nn_tensor *fl = gs_bin(&s, NN_OP_div, gs_bin(&s, NN_OP_sub, a, gs_bin(&s, op, a, b)), b);
            rb = gs_bin(&s, NN_OP_mul, gs_un(&s, NN_OP_neg, g), fl);
        }
        break;
    case NN_OP_maximum:
    case NN_OP_minimum: { /* ties split the gradient in half */
        nn_tensor *zero = gs_num(&s, 0);
        nn_tensor *split = gs_where(&s, gs_bin(&s, NN_OP_eq, a, b), gs_muls(&s, g, 0.5), g);
        nn_op lose_a = op == NN_OP_maximum ? NN_OP_lt : NN_OP_gt, lose_b = op == NN_OP_maximum ? NN_OP_gt : NN_OP_lt;
        if (na) ra = gs_where(&s, gs_bin(&s, lose_a, a, b), zero, split);
        if (nb) rb = gs_where(&s, gs_bin(&s, lose_b, a, b), zero, split);
        break;
    }
    case NN_OP_fmax:
    case NN_OP_fmin: { /* all to a where a wins or ties or b is NaN, else all to b */
        nn_tensor *zero = gs_num(&s, 0);
        nn_tensor *to_a = gs_bin(&s, NN_OP_logical_or, gs_bin(&s, op == NN_OP_fmax ? NN_OP_ge : NN_OP_le, a, b),
                                 gs_bin(&s, NN_OP_ne, b, b));
        if (na) ra = gs_where(&s, to_a, g, zero);
        if (nb) rb = gs_where(&s, to_a, zero, g);
        break;
    }
    case NN_OP_atan2: { /* d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2) */
        nn_tensor *scaled = gs_bin(&s, NN_OP_div, g, gs_bin(&s, NN_OP_add, gs_bin(&s, NN_OP_mul, a, a), gs_bin(&s, NN_OP_mul, b, b)));
        if (na) ra = gs_bin(&s, NN_OP_mul, scaled, b);
        if (nb) rb = gs_bin(&s, NN_OP_mul, gs_un(&s, NN_OP_neg, scaled), a);
        break;
    }
    default: /* comparisons and logical ops in place on a float tensor */
        gs_free(&s);
        return zeros_backward(n, go, gi);
    }
    if (na) gi[0] = gs_ret(ra);
    if (nb) gi[1] = gs_ret(rb);
    gs_free(&s);
    return (na && !gi[0]) || (nb && !gi[1]) ? nn_last_status() : NN_OK;
}

static nn_status where_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    nn_tensor *c = nn_node_saved(n, 0);
    if (!c) return nn_last_status();
    gscope s = {0};
    nn_tensor *zero = gs_num(&s, 0);
    if (NEEDS(n, 1) && !(gi[1] = nn_where(c, go[0], zero))) goto fail;
    if (NEEDS(n, 2) && !(gi[2] = nn_where(c, zero, go[0]))) goto fail;
    gs_free(&s);
    return NN_OK;
fail:
    gs_free(&s);
    return nn_last_status();
}

/* clone, contiguous, to(dtype), to(device): the gradient goes back as it came (nn_backward
 * casts it to the input's dtype), moved to the input's device */
static nn_status copy_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    gi[0] = nn_to_device(go[0], n->next[0].device);
    return gi[0] ? NN_OK : nn_last_status();
}

/* copy_(self, src): self's old value is gone (zero gradient); src gets the gradient */
static nn_status copy_inplace_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    if (NEEDS(n, 0) && !(gi[0] = zeros_for(&n->next[0]))) return nn_last_status();
    if (NEEDS(n, 1) && !(gi[1] = nn_to_device(go[0], n->next[1].device))) return nn_last_status();
    return NN_OK;
}

/* ---- recording ---- */

/* Give the finished node n to out and drop the creator's reference. */
static void attach(nn_node *n, nn_tensor *out)
{
    nn_node_set_output(n, out, 0);
    nn_node_release(n);
}

nn_status nn_record_unary(nn_op op, nn_tensor *x, nn_tensor *out, double f0, double f1, int64_t i0)
{
    if (!nn_dtype_is_differentiable(out->dtype)) return NN_OK;
    nn_node *n = nn_node_new(nn_op_backward_name(op), zero_gradient(op) ? zeros_backward : unary_backward, 1, &x);
    if (!n) return nn_last_status();
    n->i[0] = op, n->i[1] = i0;
    n->f[0] = f0, n->f[1] = f1;
    if (unary_needs_x(op, f0)) nn_node_save(n, S_A, x);
    nn_node_set_output(n, out, 0);
    if (unary_needs_out(op)) nn_node_save(n, S_OUT, out);
    nn_node_release(n);
    return NN_OK;
}

static bool needs_grad(const nn_tensor *t) { return t && t->requires_grad && !t->wrapped_number; }

nn_status nn_record_binary(nn_op op, nn_tensor *a, nn_tensor *b, nn_tensor *out, double alpha)
{
    if (!nn_dtype_is_differentiable(out->dtype) || !differentiable_binary(op)) return NN_OK;
    nn_tensor *ins[2] = {a, b};
    nn_node *n = nn_node_new(binary_name(op, a, b), binary_backward, 2, ins);
    if (!n) return nn_last_status();
    n->i[0] = op;
    n->f[0] = alpha;
    bool sa, sb, so;
    binary_saves(op, needs_grad(a), needs_grad(b), &sa, &sb, &so);
    if (sa) nn_node_save(n, S_A, a);
    if (sb) nn_node_save(n, S_B, b);
    nn_node_set_output(n, out, 0);
    if (so) nn_node_save(n, S_OUT, out);
    nn_node_release(n);
    return NN_OK;
}

nn_status nn_record_where(nn_tensor *cond, nn_tensor *a, nn_tensor *b, nn_tensor *out)
{
    if (!nn_dtype_is_differentiable(out->dtype)) return NN_OK;
    nn_tensor *ins[3] = {cond, a, b};
    nn_node *n = nn_node_new("WhereBackward0", where_backward, 3, ins);
    if (!n) return nn_last_status();
    nn_node_save(n, 0, cond);
    attach(n, out);
    return NN_OK;
}

nn_status nn_record_copy(const char *name, nn_tensor *x, nn_tensor *out)
{
    if (!nn_dtype_is_differentiable(out->dtype)) return NN_OK;
    nn_node *n = nn_node_new(name, copy_backward, 1, &x);
    if (!n) return nn_last_status();
    attach(n, out);
    return NN_OK;
}

/* ---- in place ---- */

static bool overlaps(const nn_tensor *a, const nn_tensor *b) { return a && b && a->storage == b->storage; }

/* a copy of t's value that is not on the graph */
static nn_tensor *value_copy(nn_tensor *t)
{
    nn_tensor *d = nn_detach(t), *c = d ? nn_clone(d) : NULL;
    nn_release(d);
    return c;
}

/* Which old values the in-place backward reads: self before the op (*old), other (*oth). */
static void inplace_saves(nn_op op, nn_tensor *self, nn_tensor *other, bool *old, bool *oth, bool *out)
{
    *old = *oth = *out = false;
    switch (nn_op_kind_of(op)) {
    case NN_KIND_UNARY:
        *old = unary_needs_x(op, 0) || op == NN_OP_pow_scalar;
        *out = unary_needs_out(op);
        break;
    case NN_KIND_BINARY:
        binary_saves(op, self->requires_grad, needs_grad(other), old, oth, out);
        break;
    default: break;
    }
}

nn_status nn_inplace_begin(const char *fn, nn_op op, nn_tensor *self, nn_tensor *other, nn_inplace_rec *r)
{
    r->on = false;
    r->old = r->other = NULL;
    if (nn_check_inference_inplace(self)) return nn_last_status();
    nn_tensor *ins[2] = {self, other};
    if (!nn_any_requires_grad(other ? 2 : 1, ins)) return NN_OK;
    nn_status st = nn_check_inplace(fn, self);
    if (st) return st;
    r->on = true;
    bool old, oth, out;
    inplace_saves(op, self, other, &old, &oth, &out);
    if (old && !(r->old = value_copy(self))) return nn_last_status();
    if (oth && overlaps(self, other) && !(r->other = value_copy(other))) {
        nn_release(r->old);
        r->old = NULL;
        return nn_last_status();
    }
    return NN_OK;
}

static const char *inplace_name(nn_op op, nn_tensor *self, nn_tensor *other, int64_t i0)
{
    switch (nn_op_kind_of(op)) {
    case NN_KIND_UNARY: return op == NN_OP_logical_not ? "LogicalNotBackward0" : nn_op_backward_name(op);
    case NN_KIND_BINARY: return binary_name(op, self, other);
    case NN_KIND_FILL: return i0 == 1 ? "ZeroBackward0" : "FillBackward2";
    case NN_KIND_COPY: return "CopyBackwards";
    default: return nn_op_backward_name(op);
    }
}

static nn_status record_inplace(nn_inplace_rec *r, nn_op op, nn_tensor *self, nn_tensor *other, double f0, double f1, int64_t i0)
{
    nn_op_kind kind = nn_op_kind_of(op);
    nn_backward_fn fn = kind == NN_KIND_UNARY ? (zero_gradient(op) ? zeros_backward : unary_backward)
                      : kind == NN_KIND_BINARY ? binary_backward
                      : kind == NN_KIND_COPY   ? copy_inplace_backward
                                               : zeros_backward;
    nn_tensor *ins[2] = {self, other};
    nn_node *n = nn_node_new(inplace_name(op, self, other, i0), fn, other ? 2 : 1, ins);
    if (!n) return nn_last_status();
    n->i[0] = op, n->i[1] = i0;
    n->f[0] = f0, n->f[1] = f1;
    bool old, oth, out;
    inplace_saves(op, self, other, &old, &oth, &out);
    if (old) nn_node_save(n, S_A, r->old);
    if (oth) nn_node_save(n, S_B, r->other ? r->other : other);
    nn_node_set_output(n, self, 0);
    if (out) nn_node_save(n, S_OUT, self);
    nn_node_release(n);
    return nn_rebase_view_history(self);
}

nn_status nn_inplace_end(nn_inplace_rec *r, nn_op op, nn_tensor *self, nn_tensor *other, double f0, double f1, int64_t i0,
                         nn_status st)
{
    if (!r->on) return st;
    if (!st && nn_dtype_is_differentiable(self->dtype)) st = record_inplace(r, op, self, other, f0, f1, i0);
    nn_release(r->old);
    nn_release(r->other);
    r->old = r->other = NULL;
    r->on = false;
    return st;
}
