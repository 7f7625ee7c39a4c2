/* Backward of the reductions: sum mean prod amax amin max/min (all and along a dim)
 * var std norm. The gradient of the output is first viewed in the keepdim shape (size 1
 * in the reduced dims), so it broadcasts against the input. Formulas are PyTorch's;
 * prod with zeros uses the product of the other elements without a cumprod: a slice
 * with one zero sends the product of its nonzeros to that zero, with two or more
 * zeros nothing. */
#define NN_GRAD_INTERNAL
#include <math.h>

#include "grad.h"

enum { S_X = 0, S_OUT = 1 };

/* t (the output's shape) seen in the keepdim shape of input e reduced over mask */
static nn_tensor *keepdim_view(gscope *s, nn_tensor *t, const nn_edge *e, uint32_t mask)
{
    int64_t shape[NN_MAX_DIMS];
    for (int d = 0; d < e->ndim; d++) shape[d] = mask >> d & 1 ? 1 : e->shape[d];
    return t ? gs_keep(s, nn_reshape(t, e->ndim, shape)) : NULL;
}

static nn_tensor *expand_to(gscope *s, nn_tensor *t, const nn_edge *e)
{
    return t ? gs_keep(s, nn_expand(t, e->ndim, e->shape)) : NULL;
}

static nn_tensor *reduce_keep(gscope *s, nn_op op, nn_tensor *t, uint32_t mask)
{
    return t ? gs_keep(s, nn_reduce(op, t, mask, true)) : NULL;
}

static double reduced_count(const nn_edge *e, uint32_t mask)
{
    double n = 1;
    for (int d = 0; d < e->ndim; d++)
        if (mask >> d & 1) n *= (double)e->shape[d];
    return n;
}

/* (g / count) where mask is set: the gradient shared evenly by the elements the mask picks */
static nn_tensor *share(gscope *s, nn_tensor *gk, nn_tensor *m, uint32_t mask)
{
    nn_tensor *cnt = reduce_keep(s, NN_OP_sum, m, mask);
    return gs_bin(s, NN_OP_mul, gs_bin(s, NN_OP_div, gk, cnt), m);
}

static nn_tensor *isnan_of(gscope *s, nn_tensor *t) { return gs_bin(s, NN_OP_ne, t, t); }

static nn_tensor *prod_grad(gscope *s, nn_tensor *gk, nn_tensor *x, uint32_t mask)
{
    nn_tensor *zero = gs_num(s, 0), *one = gs_num(s, 1);
    nn_tensor *is0 = gs_bin(s, NN_OP_eq, x, zero);
    nn_tensor *x1 = gs_where(s, is0, one, x);
    nn_tensor *p1 = reduce_keep(s, NN_OP_prod, x1, mask);                 /* product of the nonzeros */
    nn_tensor *nz = reduce_keep(s, NN_OP_sum, is0, mask);                 /* zeros per slice */
    nn_tensor *lone = gs_bin(s, NN_OP_logical_and, is0, gs_bin(s, NN_OP_eq, nz, gs_num(s, 1)));
    nn_tensor *f = gs_where(s, gs_bin(s, NN_OP_eq, nz, zero), gs_bin(s, NN_OP_div, p1, x1), gs_where(s, lone, p1, zero));
    return gs_bin(s, NN_OP_mul, gk, f);
}

static nn_tensor *norm_grad(gscope *s, nn_tensor *gk, nn_tensor *x, nn_tensor *yk, double p, uint32_t mask, const nn_edge *e)
{
    nn_tensor *zero = gs_num(s, 0);
    if (p == 0) return gs_zeros(s, e->ndim, e->shape, gk->dtype, e->device);
    if (p == 1) return gs_bin(s, NN_OP_mul, gk, gs_un(s, NN_OP_sign, x));
    nn_tensor *y0 = gs_bin(s, NN_OP_eq, yk, zero);
    if (p == 2) return gs_bin(s, NN_OP_mul, x, gs_where(s, y0, zero, gs_bin(s, NN_OP_div, gk, yk)));
    nn_tensor *ax = gs_un(s, NN_OP_abs, x);
    if (isinf(p)) { /* the elements at the max (min) share it, NaNs count as there */
        nn_tensor *m = gs_bin(s, NN_OP_logical_or, gs_bin(s, NN_OP_eq, ax, yk), isnan_of(s, ax));
        return gs_bin(s, NN_OP_mul, gs_un(s, NN_OP_sign, x), share(s, gk, m, mask));
    }
    if (p < 1) {
        nn_tensor *t = gs_where(s, gs_bin(s, NN_OP_eq, x, zero), zero, gs_keep(s, nn_pow_scalar(ax, p - 1)));
        return gs_bin(s, NN_OP_mul, gs_bin(s, NN_OP_mul, gs_un(s, NN_OP_sign, x), t),
                      gs_bin(s, NN_OP_mul, gk, gs_keep(s, nn_pow_scalar(yk, 1 - p))));
    }
    nn_tensor *scale = gs_where(s, y0, zero, gs_bin(s, NN_OP_div, gk, gs_keep(s, nn_pow_scalar(yk, p - 1))));
    nn_tensor *t = p < 2 ? gs_bin(s, NN_OP_mul, gs_un(s, NN_OP_sign, x), gs_keep(s, nn_pow_scalar(ax, p - 1)))
                         : gs_bin(s, NN_OP_mul, x, gs_keep(s, nn_pow_scalar(ax, p - 2)));
    return gs_bin(s, NN_OP_mul, t, scale);
}

static bool saves_x(nn_op op) { return op != NN_OP_sum && op != NN_OP_mean; }
static bool saves_out(nn_op op, int64_t i0)
{
    return op == NN_OP_amax || op == NN_OP_amin || op == NN_OP_norm || (op == NN_OP_var && i0 == 1);
}

/* i[0] op, i[1] 1 for max()/min() over everything, i[2] the std flag; f[0] correction or p */
static nn_status reduce_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    nn_op op = (nn_op)n->i[0];
    const nn_edge *e = &n->next[0];
    uint32_t mask = n->dims;
    nn_tensor *x = NULL, *y = NULL, *r = NULL;
    if (saves_x(op) && !(x = nn_node_saved(n, S_X))) return nn_last_status();
    if (saves_out(op, n->i[2]) && !(y = nn_node_saved(n, S_OUT))) return nn_last_status();
    gscope s = {0};
    nn_tensor *gk = keepdim_view(&s, go[0], e, mask);
    nn_tensor *yk = y ? keepdim_view(&s, y, e, mask) : NULL;
    switch (op) {
    case NN_OP_sum: r = expand_to(&s, gk, e); break;
    case NN_OP_mean: r = expand_to(&s, gs_muls(&s, gk, 1.0 / reduced_count(e, mask)), e); break;
    case NN_OP_prod: r = prod_grad(&s, gk, gs_conj(&s, x), mask); break;
    case NN_OP_amax:
    case NN_OP_amin: {
        nn_tensor *m = gs_bin(&s, NN_OP_eq, x, yk);
        if (n->i[1]) m = gs_bin(&s, NN_OP_logical_or, m, gs_bin(&s, NN_OP_logical_and, isnan_of(&s, x), isnan_of(&s, yk)));
        r = share(&s, gk, m, mask);
        break;
    }
    case NN_OP_var: { /* var: 2/(N-c) * g * (x - mean); std: the same with g / (2 std), 0 where std is 0 */
        nn_tensor *zero = gs_num(&s, 0);
        if (n->i[2] == 1) gk = gs_where(&s, gs_bin(&s, NN_OP_eq, yk, zero), zero, gs_bin(&s, NN_OP_div, gk, gs_muls(&s, yk, 2)));
        nn_tensor *xm = gs_bin(&s, NN_OP_sub, x, reduce_keep(&s, NN_OP_mean, x, mask));
        r = gs_muls(&s, gs_bin(&s, NN_OP_mul, gk, xm), 2.0 / (reduced_count(e, mask) - n->f[0]));
        break;
    }
    case NN_OP_norm: r = gk ? norm_grad(&s, gk, x, yk, n->f[0], mask, e) : NULL; break;
    default: nn_error(NN_ERR_NOTIMPL, "backward of %s is not implemented", nn_op_name(op)); break;
    }
    gi[0] = gs_ret(r);
    gs_free(&s);
    return gs_status(gi[0]);
}

static const char *reduce_name(nn_op op, bool all, int64_t i0)
{
    switch (op) {
    case NN_OP_sum: return all ? "SumBackward0" : "SumBackward1";
    case NN_OP_mean: return all ? "MeanBackward0" : "MeanBackward1";
    case NN_OP_prod: return all ? "ProdBackward0" : "ProdBackward1";
    case NN_OP_var: return i0 == 1 ? "StdBackward0" : "VarBackward0";
    case NN_OP_norm: return "LinalgVectorNormBackward0"; /* torch.norm goes to linalg.vector_norm */
    default: return nn_op_backward_name(op);
    }
}

static nn_status record(const char *name, nn_op op, nn_tensor *x, nn_tensor *out, uint32_t mask, bool max_all, double f0,
                        int64_t i0)
{
    if (!nn_dtype_is_differentiable(out->dtype)) return NN_OK;
    nn_node *n = nn_node_new(name, reduce_backward, 1, &x);
    if (!n) return nn_last_status();
    n->i[0] = op, n->i[1] = max_all, n->i[2] = i0;
    n->f[0] = f0;
    n->dims = mask;
    if (saves_x(op)) nn_node_save(n, S_X, x);
    nn_node_set_output(n, out, 0);
    if (saves_out(op, i0)) nn_node_save(n, S_OUT, out);
    nn_node_release(n);
    return NN_OK;
}

nn_status nn_record_reduce(nn_op op, nn_tensor *x, nn_tensor *out, uint32_t mask, bool keepdim, bool all, double f0, int64_t i0)
{
    (void)keepdim; /* the keepdim shape comes from the input's shape and the mask */
    return record(reduce_name(op, all, i0), op, x, out, mask, false, f0, i0);
}

nn_status nn_record_max_all(nn_op op, nn_tensor *x, nn_tensor *out)
{
    uint32_t mask = x->ndim ? (1u << x->ndim) - 1 : 0;
    return record(op == NN_OP_amax ? "MaxBackward1" : "MinBackward1", op, x, out, mask, true, 0, 0);
}

/* max(dim)/min(dim): the gradient goes to the index each output came from */
static nn_status index_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    const nn_edge *e = &n->next[0];
    nn_tensor *idx = nn_node_saved(n, 0);
    if (!idx) return nn_last_status();
    if (e->ndim == 0) {
        gi[0] = nn_retain(go[0]);
        return NN_OK;
    }
    int dim = (int)n->i[0];
    uint32_t mask = 1u << dim;
    gscope s = {0};
    int64_t shape[NN_MAX_DIMS];
    for (int d = 0; d < e->ndim; d++) shape[d] = d == dim ? e->shape[d] : 1;
    nn_tensor *ar = gs_keep(&s, nn_arange(0, (double)e->shape[dim], 1, true, NN_I64, e->device));
    nn_tensor *pos = ar ? gs_keep(&s, nn_reshape(ar, e->ndim, shape)) : NULL;
    nn_tensor *hit = gs_bin(&s, NN_OP_eq, pos, keepdim_view(&s, idx, e, mask));
    gi[0] = gs_ret(gs_where(&s, hit, keepdim_view(&s, go[0], e, mask), gs_num(&s, 0)));
    gs_free(&s);
    return gs_status(gi[0]);
}

nn_status nn_record_index_reduce(nn_op op, nn_tensor *x, nn_tensor *values, nn_tensor *indices, int dim, bool keepdim)
{
    (void)keepdim;
    if (!nn_dtype_is_differentiable(values->dtype)) return NN_OK;
    nn_node *n = nn_node_new(op == NN_OP_max_dim ? "MaxBackward0" : "MinBackward0", index_backward, 1, &x);
    if (!n) return nn_last_status();
    n->i[0] = dim;
    nn_node_save(n, 0, indices);
    nn_node_set_output(n, values, 0);
    nn_node_release(n);
    return NN_OK;
}
