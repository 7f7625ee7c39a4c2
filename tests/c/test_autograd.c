/* Autograd semantics: accumulation, retain_graph, backward(gradient), grad mode, detach,
 * requires_grad_, retain_grad, leaves, in-place rules and the version check, gradient
 * dtypes, freeing of the graph (also for very long chains), PyTorch's grad_fn names and
 * the exact values PyTorch gives at the non-differentiable points. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "grad.h"

/* a contiguous tensor of the given shape and dtype holding vals (row-major) */
static nn_tensor *tensor(int nd, const int64_t *shape, nn_dtype dt, const double *vals)
{
    nn_tensor *t = nn_empty(nd, shape, dt, NN_DEVICE_CPU);
    for (int64_t i = 0; i < nn_numel(t); i++) nn_store_f64((char *)nn_data(t) + i * nn_dtype_size(dt), dt, vals[i]);
    return t;
}

static nn_tensor *vec(nn_dtype dt, int n, const double *vals, bool grad)
{
    int64_t shape[1] = {n};
    nn_tensor *t = tensor(1, shape, dt, vals);
    if (grad) nn_requires_grad_(t, true);
    return t;
}

static double at(const nn_tensor *t, int64_t i)
{
    int64_t idx[NN_MAX_DIMS] = {0};
    for (int d = t->ndim - 1; d >= 0; d--) idx[d] = i % t->shape[d], i /= t->shape[d];
    return nn_get_f64(t, idx);
}

/* t's values are vals (within 1e-9 relative) */
static bool equals(const nn_tensor *t, const double *vals, int n)
{
    if (!t || nn_numel(t) != n) return false;
    for (int i = 0; i < n; i++) {
        double a = at(t, i);
        if (!(fabs(a - vals[i]) <= 1e-9 * (1 + fabs(vals[i])))) return false;
    }
    return true;
}

static bool has(const char *msg, const char *part) { return msg && strstr(msg, part) != NULL; }
static const char *fn_name(const nn_tensor *t) { return t && t->grad_fn ? t->grad_fn->name : "(none)"; }
static bool named(const nn_tensor *t, const char *name) { return t && t->grad_fn && !strcmp(t->grad_fn->name, name); }

static nn_tensor *sum_all(nn_tensor *t) { return nn_reduce(NN_OP_sum, t, 0, false); }

static void clear_grad(nn_tensor *t)
{
    nn_release(t->grad);
    t->grad = NULL;
}

static void test_accumulate_and_retain(void)
{
    double xv[3] = {1, 2, 3};
    nn_tensor *x = vec(NN_F32, 3, xv, true);
    nn_tensor *y = nn_binary(NN_OP_mul, x, x), *s = sum_all(y);
    CHECK(nn_backward(s, NULL, true) == NN_OK, "%s", nn_last_error());
    CHECK(equals(x->grad, (double[]){2, 4, 6}, 3), "first backward");
    CHECK(x->grad && x->grad->dtype == NN_F32 && !x->grad->requires_grad && !x->grad->grad_fn);
    CHECK(nn_backward(s, NULL, false) == NN_OK, "%s", nn_last_error());
    CHECK(equals(x->grad, (double[]){4, 8, 12}, 3), "retain_graph: gradients add up");
    nn_status st = nn_backward(s, NULL, false);
    CHECK(st == NN_ERR_RUNTIME && has(nn_last_error(), "Trying to backward through the graph a second time"), "%s", nn_last_error());
    CHECK(equals(x->grad, (double[]){4, 8, 12}, 3), "a failed backward leaves .grad alone");
    nn_release(s), nn_release(y);

    /* a new graph accumulates into the same .grad */
    nn_tensor *z = nn_reduce(NN_OP_sum, x, 0, false);
    CHECK(nn_backward(z, NULL, false) == NN_OK);
    CHECK(equals(x->grad, (double[]){5, 9, 13}, 3));
    /* a graph that saves nothing can be run again, as in PyTorch */
    CHECK(nn_backward(z, NULL, false) == NN_OK, "%s", nn_last_error());
    CHECK(equals(x->grad, (double[]){6, 10, 14}, 3));
    nn_release(z);
    nn_release(x);
}

static void test_backward_args(void)
{
    double xv[3] = {1, 2, 3};
    nn_tensor *x = vec(NN_F32, 3, xv, true);
    nn_tensor *y = nn_binary(NN_OP_mul, x, x);
    nn_status st = nn_backward(y, NULL, false);
    CHECK(st == NN_ERR_RUNTIME && has(nn_last_error(), "grad can be implicitly created only for scalar outputs"), "%s", nn_last_error());
    nn_tensor *g2 = vec(NN_F32, 2, xv, false);
    st = nn_backward(y, g2, false);
    CHECK(st == NN_ERR_SHAPE &&
              has(nn_last_error(), "Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and output[0] has a shape of torch.Size([3])"),
          "%s", nn_last_error());
    /* the gradient argument, in float64 for a float32 graph: cast to the output's dtype */
    nn_tensor *g = vec(NN_F64, 3, (double[]){1, 0.5, -1}, false);
    CHECK(nn_backward(y, g, false) == NN_OK, "%s", nn_last_error());
    CHECK(equals(x->grad, (double[]){2, 2, -6}, 3));
    CHECK(x->grad && x->grad->dtype == NN_F32, "grad dtype %s", x->grad ? nn_dtype_name(x->grad->dtype) : "none");
    /* backward of a leaf: its gradient is the seed */
    clear_grad(x);
    CHECK(nn_backward(x, g, false) == NN_OK);
    CHECK(equals(x->grad, (double[]){1, 0.5, -1}, 3) && x->grad->dtype == NN_F32);
    /* nothing requires grad */
    nn_tensor *c = vec(NN_F32, 3, xv, false), *cs = sum_all(c);
    st = nn_backward(cs, NULL, false);
    CHECK(st == NN_ERR_RUNTIME && has(nn_last_error(), "element 0 of tensors does not require grad and does not have a grad_fn"));
    nn_release(c), nn_release(cs), nn_release(g), nn_release(g2), nn_release(y), nn_release(x);
}

static void test_grad_mode_and_leaves(void)
{
    double xv[2] = {1, 2};
    nn_tensor *x = vec(NN_F32, 2, xv, true), *c = vec(NN_F32, 2, xv, false);
    CHECK(nn_is_leaf(x) && nn_is_leaf(c));
    nn_tensor *y = nn_binary(NN_OP_add, x, c);
    CHECK(y->requires_grad && !nn_is_leaf(y) && named(y, "AddBackward0"));
    nn_tensor *k = nn_binary(NN_OP_add, c, c);
    CHECK(!k->requires_grad && !k->grad_fn && nn_is_leaf(k), "no input requires grad: no node");

    nn_set_grad_enabled(false);
    CHECK(!nn_grad_enabled());
    nn_tensor *n = nn_binary(NN_OP_mul, x, x);
    CHECK(!n->requires_grad && !n->grad_fn, "no_grad records nothing");
    nn_tensor *v = nn_transpose(x, 0, 0);
    CHECK(!v->requires_grad && !v->grad_fn);
    CHECK(nn_binary_(NN_OP_add, x, c) == NN_OK, "in-place on a leaf is fine under no_grad");
    CHECK(nn_is_leaf(x) && !x->grad_fn);
    nn_set_grad_enabled(true);
    nn_release(n), nn_release(v);

    /* detach: same storage, no history */
    nn_tensor *d = nn_detach(y);
    CHECK(d && !d->requires_grad && !d->grad_fn && d->storage == y->storage && nn_is_leaf(d));
    nn_tensor *y2 = nn_binary(NN_OP_mul, y, y);
    CHECK(nn_detach_(y2) == NN_OK && !y2->grad_fn && !y2->requires_grad);

    /* requires_grad_ rules */
    int64_t s2[1] = {2};
    nn_tensor *iv = nn_zeros(1, s2, NN_I64, NN_DEVICE_CPU);
    nn_status st = nn_requires_grad_(iv, true);
    CHECK(st == NN_ERR_DTYPE && has(nn_last_error(), "only Tensors of floating point and complex dtype can require gradients"), "%s", nn_last_error());
    st = nn_requires_grad_(y, false);
    CHECK(st == NN_ERR_RUNTIME && has(nn_last_error(), "you can only change requires_grad flags of leaf variables"), "%s", nn_last_error());
    CHECK(nn_requires_grad_(y, true) == NN_OK);
    CHECK(nn_requires_grad_(c, true) == NN_OK && c->requires_grad && nn_requires_grad_(c, false) == NN_OK && !c->requires_grad);

    /* non-differentiable outputs */
    nn_tensor *cmp = nn_binary(NN_OP_gt, x, c), *am = nn_argmax(x, NN_NO_DIM, false);
    CHECK(!cmp->requires_grad && !cmp->grad_fn && !am->requires_grad && !am->grad_fn);
    nn_tensor *vals = NULL, *idx = NULL;
    CHECK(nn_max_dim(x, 0, false, &vals, &idx) == NN_OK);
    CHECK(named(vals, "MaxBackward0") && !idx->requires_grad && !idx->grad_fn);
    nn_release(vals), nn_release(idx), nn_release(cmp), nn_release(am);
    nn_release(iv), nn_release(y2), nn_release(d), nn_release(k), nn_release(y), nn_release(c), nn_release(x);
}

static void test_retain_grad(void)
{
    double xv[3] = {1, 2, 3};
    nn_tensor *x = vec(NN_F64, 3, xv, true);
    nn_tensor *y = nn_binary(NN_OP_mul, x, x), *z = nn_unary(NN_OP_exp, y), *s = sum_all(z);
    nn_tensor *w = nn_binary(NN_OP_add, x, x);
    CHECK(nn_retain_grad(y) == NN_OK && y->retains_grad);
    CHECK(nn_retain_grad(x) == NN_OK, "a leaf: nothing to do");
    nn_tensor *c = vec(NN_F64, 3, xv, false);
    CHECK(nn_retain_grad(c) == NN_ERR_RUNTIME && has(nn_last_error(), "can't retain_grad on Tensor that has requires_grad=False"));
    CHECK(nn_backward(s, NULL, false) == NN_OK);
    double ey[3] = {exp(1), exp(4), exp(9)};
    CHECK(equals(y->grad, ey, 3), "retained gradient of the intermediate");
    CHECK(z->grad == NULL && w->grad == NULL, "no .grad on non-leaves without retain_grad");
    CHECK(equals(x->grad, (double[]){2 * ey[0], 4 * ey[1], 6 * ey[2]}, 3));

    /* retain_grad follows the tensor through an in-place op */
    clear_grad(x);
    nn_tensor *a = nn_binary(NN_OP_mul, x, x);
    nn_retain_grad(a);
    nn_tensor *three = nn_scalar_f64(3);
    CHECK(nn_binary_(NN_OP_mul, a, three) == NN_OK && named(a, "MulBackward0"));
    nn_tensor *as = sum_all(a);
    CHECK(nn_backward(as, NULL, false) == NN_OK);
    CHECK(equals(a->grad, (double[]){1, 1, 1}, 3), "retained grad of the value after the in-place op");
    CHECK(equals(x->grad, (double[]){6, 12, 18}, 3));
    nn_release(as), nn_release(three), nn_release(a), nn_release(c);
    nn_release(s), nn_release(z), nn_release(y), nn_release(w), nn_release(x);
}

static void test_inplace_rules(void)
{
    double xv[3] = {1, 2, 3};
    nn_tensor *x = vec(NN_F32, 3, xv, true), *one = nn_scalar_f64(1);
    nn_status st = nn_binary_(NN_OP_add, x, one);
    CHECK(st == NN_ERR_RUNTIME && has(nn_last_error(), "a leaf Variable that requires grad is being used in an in-place operation."),
          "%s", nn_last_error());
    CHECK(equals(x, xv, 3), "the leaf is left as it was");
    CHECK(nn_unary_(NN_OP_relu, x) == NN_ERR_RUNTIME && nn_fill_(x, 0) == NN_ERR_RUNTIME && nn_zero_(x) == NN_ERR_RUNTIME);
    CHECK(nn_clamp_(x, true, 0, false, 0) == NN_ERR_RUNTIME && nn_copy_(x, one) == NN_ERR_RUNTIME);

    /* views of the leaf neither; views of a non-leaf are fine */
    nn_tensor *xv0 = nn_select(x, 0, 0), *xn = nn_narrow(x, 0, 1, 2), *xt = xn ? nn_transpose(xn, 0, 0) : NULL;
    CHECK(nn_unary_(NN_OP_relu, xv0) == NN_ERR_RUNTIME &&
          has(nn_last_error(), "a view of a leaf Variable that requires grad is being used in an in-place operation."), "%s", nn_last_error());
    CHECK(nn_binary_(NN_OP_mul, xt, one) == NN_ERR_RUNTIME && has(nn_last_error(), "a view of a leaf Variable"), "through two views");
    nn_tensor *nl = nn_binary(NN_OP_mul, x, one), *nv = nn_select(nl, 0, 2);
    /* as PyTorch: the view's history becomes a view of its base's, which records the op */
    CHECK(nn_binary_(NN_OP_mul, nv, one) == NN_OK && named(nv, "AsStridedBackward0") && named(nl, "CopySlices"));
    nn_release(nv), nn_release(nl), nn_release(xt), nn_release(xn), nn_release(xv0);

    /* y = x.exp(); y.add_(1); y.sum().backward(): exp saved its output */
    nn_tensor *y = nn_unary(NN_OP_exp, x);
    CHECK(nn_binary_(NN_OP_add, y, one) == NN_OK && named(y, "AddBackward0"));
    nn_tensor *s = sum_all(y);
    st = nn_backward(s, NULL, false);
    CHECK(st == NN_ERR_RUNTIME &&
              has(nn_last_error(), "one of the variables needed for gradient computation has been modified by an inplace operation: "
                                   "[torch.FloatTensor [3]], which is output 0 of ExpBackward0, is at version 1; expected version 0 instead."),
          "%s", nn_last_error());
    nn_release(s), nn_release(y);

    /* the same through a detached alias (it shares the version counter) */
    y = nn_unary(NN_OP_sigmoid, x);
    nn_tensor *d = nn_detach(y);
    nn_binary_(NN_OP_mul, d, one);
    s = sum_all(y);
    CHECK(nn_backward(s, NULL, false) == NN_ERR_RUNTIME && has(nn_last_error(), "modified by an inplace operation"));
    nn_release(s), nn_release(d), nn_release(y);

    /* a saved input modified afterwards */
    nn_tensor *w = vec(NN_F32, 3, xv, false);
    y = nn_binary(NN_OP_mul, x, w);
    nn_binary_(NN_OP_add, w, one);
    s = sum_all(y);
    CHECK(nn_backward(s, NULL, false) == NN_ERR_RUNTIME && has(nn_last_error(), "[torch.FloatTensor [3]] is at version 1; expected version 0"),
          "%s", nn_last_error());
    nn_release(s), nn_release(y), nn_release(w);

    /* y = x*2; y.mul_(3); y.sum().backward() -> 6 */
    nn_tensor *two = nn_scalar_f64(2), *three = nn_scalar_f64(3);
    y = nn_binary(NN_OP_mul, x, two);
    nn_node *before = y->grad_fn;
    CHECK(nn_binary_(NN_OP_mul, y, three) == NN_OK);
    CHECK(named(y, "MulBackward0") && y->grad_fn != before && y->grad_fn->next[0].node == before, "the new node's first edge is the old history");
    CHECK(y->grad_fn->next[1].node == NULL, "a wrapped number gets no edge");
    s = sum_all(y);
    CHECK(nn_backward(s, NULL, false) == NN_OK, "%s", nn_last_error());
    CHECK(equals(x->grad, (double[]){6, 6, 6}, 3));
    nn_release(s), nn_release(y);

    /* y = plain tensor; y.add_(x) makes it a non-leaf with history */
    clear_grad(x);
    int64_t s3[1] = {3};
    y = nn_zeros(1, s3, NN_F32, NN_DEVICE_CPU);
    CHECK(nn_binary_(NN_OP_add, y, x) == NN_OK && y->requires_grad && !nn_is_leaf(y) && named(y, "AddBackward0"));
    CHECK(nn_binary_(NN_OP_mul, y, y) == NN_OK, "x*x in place through self");
    s = sum_all(y);
    CHECK(nn_backward(s, NULL, false) == NN_OK, "%s", nn_last_error());
    CHECK(equals(x->grad, (double[]){2, 4, 6}, 3));
    nn_release(s), nn_release(y);

    /* names of in-place ops, PyTorch's (relu_ saves its result: a later in-place op on y would
     * make backward fail, as in PyTorch, so each goes on a fresh y) */
    y = nn_binary(NN_OP_mul, x, two);
    nn_unary_(NN_OP_relu, y);
    CHECK(named(y, "ReluBackward0"), "%s", fn_name(y));
    s = sum_all(y);
    nn_tensor *one3 = nn_scalar_f64(1);
    nn_binary_(NN_OP_add, y, one3);
    CHECK(nn_backward(s, NULL, false) == NN_ERR_RUNTIME && has(nn_last_error(), "which is output 0 of ReluBackward0"), "%s", nn_last_error());
    nn_release(s), nn_release(y), nn_release(one3);
    y = nn_binary(NN_OP_mul, x, two);
    nn_clamp_(y, true, 0, true, 1);
    CHECK(named(y, "ClampBackward1"), "%s", fn_name(y));
    nn_fill_(y, 2);
    CHECK(named(y, "FillBackward2"), "%s", fn_name(y));
    nn_zero_(y);
    CHECK(named(y, "ZeroBackward0"), "%s", fn_name(y));
    nn_copy_(y, x);
    CHECK(named(y, "CopyBackwards"), "%s", fn_name(y));
    clear_grad(x);
    s = sum_all(y);
    CHECK(nn_backward(s, NULL, false) == NN_OK, "%s", nn_last_error());
    CHECK(equals(x->grad, (double[]){1, 1, 1}, 3), "only the copied value's path counts");
    nn_release(s), nn_release(y);

    /* in-place into an integer tensor from one requiring grad: no history */
    nn_tensor *iy = nn_zeros(1, s3, NN_I64, NN_DEVICE_CPU);
    CHECK(nn_copy_(iy, x) == NN_OK && !iy->requires_grad && !iy->grad_fn);
    nn_release(iy);
    nn_release(two), nn_release(three), nn_release(one), nn_release(x);
}

static void test_dtypes(void)
{
    double v[3] = {1, 2, 3};
    nn_tensor *x = vec(NN_F32, 3, v, true), *w = vec(NN_F64, 3, v, true);
    nn_tensor *y = nn_binary(NN_OP_mul, x, w), *s = sum_all(y);
    CHECK(y->dtype == NN_F64);
    CHECK(nn_backward(s, NULL, false) == NN_OK);
    CHECK(x->grad && x->grad->dtype == NN_F32 && equals(x->grad, v, 3));
    CHECK(w->grad && w->grad->dtype == NN_F64 && equals(w->grad, v, 3));
    nn_release(s), nn_release(y);
    /* to(dtype) and back */
    clear_grad(x);
    nn_tensor *h = nn_to_dtype(x, NN_F16);
    CHECK(named(h, "ToCopyBackward0"));
    nn_tensor *hs = nn_sum_dtype(h, 0, false, NN_F64);
    CHECK(named(hs, "SumBackward0") && hs->dtype == NN_F64);
    CHECK(nn_backward(hs, NULL, false) == NN_OK, "%s", nn_last_error());
    CHECK(x->grad && x->grad->dtype == NN_F32 && equals(x->grad, (double[]){1, 1, 1}, 3));
    nn_release(hs), nn_release(h), nn_release(w), nn_release(x);
}

static void test_values_at_kinks(void)
{
    /* maximum/minimum: ties split the gradient */
    nn_tensor *a = vec(NN_F64, 3, (double[]){1, 2, 3}, true), *b = vec(NN_F64, 3, (double[]){1, 5, 0}, true);
    nn_tensor *m = nn_binary(NN_OP_maximum, a, b), *s = sum_all(m);
    nn_backward(s, NULL, false);
    CHECK(equals(a->grad, (double[]){0.5, 0, 1}, 3) && equals(b->grad, (double[]){0.5, 1, 0}, 3));
    nn_release(s), nn_release(m), clear_grad(a), clear_grad(b);
    m = nn_binary(NN_OP_minimum, a, b), s = sum_all(m);
    nn_backward(s, NULL, false);
    CHECK(equals(a->grad, (double[]){0.5, 1, 0}, 3) && equals(b->grad, (double[]){0.5, 0, 1}, 3));
    nn_release(s), nn_release(m), nn_release(a), nn_release(b);

    /* amax and max(): ties share evenly; max(dim) sends it to the first index */
    int64_t s23[2] = {2, 3};
    nn_tensor *x = tensor(2, s23, NN_F64, (double[]){3, 1, 3, 2, 2, 2});
    nn_requires_grad_(x, true);
    m = nn_reduce(NN_OP_amax, x, 2, false), s = sum_all(m);
    CHECK(named(m, "AmaxBackward0"));
    nn_backward(s, NULL, false);
    CHECK(equals(x->grad, (double[]){0.5, 0, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 6));
    nn_release(s), nn_release(m), clear_grad(x);
    m = nn_max(x);
    CHECK(named(m, "MaxBackward1"), "%s", fn_name(m));
    nn_backward(m, NULL, false);
    CHECK(equals(x->grad, (double[]){0.5, 0, 0.5, 0, 0, 0}, 6));
    nn_release(m), clear_grad(x);
    nn_tensor *v = NULL, *i = NULL;
    nn_min_dim(x, 1, true, &v, &i);
    CHECK(named(v, "MinBackward0") && v->ndim == 2);
    s = sum_all(v);
    nn_backward(s, NULL, false);
    CHECK(equals(x->grad, (double[]){0, 1, 0, 1, 0, 0}, 6));
    nn_release(s), nn_release(v), nn_release(i), nn_release(x);

    /* prod with zeros */
    nn_tensor *p = tensor(2, s23, NN_F64, (double[]){2, 0, 3, 0, 4, 0});
    nn_requires_grad_(p, true);
    m = nn_reduce(NN_OP_prod, p, 2, false), s = sum_all(m);
    CHECK(named(m, "ProdBackward1"));
    nn_backward(s, NULL, false);
    CHECK(equals(p->grad, (double[]){0, 6, 0, 0, 0, 0}, 6));
    nn_release(s), nn_release(m), clear_grad(p);
    m = nn_reduce(NN_OP_prod, p, 0, false);
    CHECK(named(m, "ProdBackward0"));
    nn_backward(m, NULL, false);
    CHECK(equals(p->grad, (double[]){0, 0, 0, 0, 0, 0}, 6));
    nn_release(m), nn_release(p);

    /* norm at 0, abs/relu/sign at 0, clamp at its bounds */
    nn_tensor *z = vec(NN_F64, 3, (double[]){0, 0, 0}, true);
    m = nn_norm(z, 2, 0, false);
    CHECK(named(m, "LinalgVectorNormBackward0"), "%s", fn_name(m));
    nn_backward(m, NULL, false);
    CHECK(equals(z->grad, (double[]){0, 0, 0}, 3) && !isnan(at(z->grad, 0)), "2-norm at 0: zero gradient");
    nn_release(m), clear_grad(z);
    static const nn_op kinks[] = {NN_OP_abs, NN_OP_relu, NN_OP_sign};
    for (int k = 0; k < 3; k++) {
        m = nn_unary(kinks[k], z), s = sum_all(m);
        nn_backward(s, NULL, false);
        CHECK(equals(z->grad, (double[]){0, 0, 0}, 3), "%s at 0", nn_op_name(kinks[k]));
        nn_release(s), nn_release(m), clear_grad(z);
    }
    nn_release(z);
    nn_tensor *c = vec(NN_F64, 4, (double[]){-1, -0.5, 0.5, 1}, true);
    m = nn_clamp(c, true, -0.5, true, 0.5), s = sum_all(m);
    nn_backward(s, NULL, false);
    CHECK(equals(c->grad, (double[]){0, 1, 1, 0}, 4), "clamp passes the gradient at min and max");
    nn_release(s), nn_release(m), nn_release(c);

    /* pow: 0^0 and a zero base */
    nn_tensor *base = vec(NN_F64, 3, (double[]){0, 0, 2}, true), *ex = vec(NN_F64, 3, (double[]){0, 2, 0}, true);
    m = nn_binary(NN_OP_pow, base, ex), s = sum_all(m);
    CHECK(named(m, "PowBackward1"));
    nn_backward(s, NULL, false);
    CHECK(equals(base->grad, (double[]){0, 0, 0}, 3), "base grad where exponent is 0");
    CHECK(equals(ex->grad, (double[]){0, 0, log(2)}, 3), "exponent grad where base is 0");
    nn_release(s), nn_release(m), nn_release(base), nn_release(ex);

    /* where: cond gets nothing, the sides get the masked gradient */
    nn_tensor *cond = vec(NN_BOOL, 3, (double[]){1, 0, 1}, false);
    a = vec(NN_F64, 3, (double[]){1, 2, 3}, true), b = vec(NN_F64, 1, (double[]){7}, true);
    m = nn_where(cond, a, b), s = sum_all(m);
    CHECK(named(m, "WhereBackward0"));
    nn_backward(s, NULL, false);
    CHECK(equals(a->grad, (double[]){1, 0, 1}, 3) && equals(b->grad, (double[]){1}, 1));
    nn_release(s), nn_release(m), nn_release(a), nn_release(b), nn_release(cond);
}

static void test_names(void)
{
    int64_t s234[3] = {2, 3, 4};
    double vals[24];
    for (int i = 0; i < 24; i++) vals[i] = 0.1 * (i + 1);
    nn_tensor *x = tensor(3, s234, NN_F32, vals);
    nn_requires_grad_(x, true);
    nn_tensor *two = nn_scalar_f64(2);
    struct { nn_tensor *t; const char *name; } cases[64];
    int n = 0;
#define NAME(expr, nm) cases[n].t = (expr), cases[n++].name = (nm)
    NAME(nn_binary(NN_OP_add, x, two), "AddBackward0");
    NAME(nn_binary(NN_OP_sub, two, x), "RsubBackward1");
    NAME(nn_binary(NN_OP_div, x, two), "DivBackward0");
    NAME(nn_binary(NN_OP_div, two, x), "MulBackward0");
    NAME(nn_binary(NN_OP_pow, x, two), "PowBackward0");
    NAME(nn_binary(NN_OP_pow, two, x), "PowBackward2");
    NAME(nn_pow_scalar(x, 3), "PowBackward0");
    NAME(nn_binary(NN_OP_remainder, x, two), "RemainderBackward0");
    NAME(nn_binary(NN_OP_remainder, x, x), "RemainderBackward1");
    NAME(nn_binary(NN_OP_fmod, x, two), "FmodBackward0");
    NAME(nn_binary(NN_OP_fmod, x, x), "FmodBackward1");
    NAME(nn_unary(NN_OP_erf, x), "ErfBackward0");
    NAME(nn_unary(NN_OP_log1p, x), "Log1PBackward0");
    NAME(nn_unary(NN_OP_sigmoid, x), "SigmoidBackward0");
    NAME(nn_clamp(x, true, 0, false, 0), "ClampBackward1");
    NAME(nn_reduce(NN_OP_sum, x, 0, false), "SumBackward0");
    NAME(nn_reduce(NN_OP_sum, x, 3, true), "SumBackward1");
    NAME(nn_reduce(NN_OP_mean, x, 0, false), "MeanBackward0");
    NAME(nn_reduce(NN_OP_mean, x, 4, false), "MeanBackward1");
    NAME(nn_reduce(NN_OP_amin, x, 4, false), "AminBackward0");
    NAME(nn_var(x, 0, 1, false), "VarBackward0");
    NAME(nn_std(x, 2, 1, false), "StdBackward0");
    NAME(nn_min(x), "MinBackward1");
    NAME(nn_view(x, 2, (int64_t[]){6, 4}), "ViewBackward0");
    NAME(nn_reshape(x, 1, (int64_t[]){24}), "ViewBackward0");
    NAME(nn_flatten(x, 0, -1), "ViewBackward0");
    NAME(nn_transpose(x, 0, 2), "TransposeBackward0");
    NAME(nn_permute(x, (int[]){1, 2, 0}), "PermuteBackward0");
    NAME(nn_narrow(x, 1, 0, 2), "SliceBackward0");
    NAME(nn_slice(x, 2, 0, 4, 2), "SliceBackward0");
    NAME(nn_select(x, 0, 1), "SelectBackward0");
    NAME(nn_squeeze(x, NN_ALL_DIMS), "SqueezeBackward0");
    NAME(nn_squeeze(x, 0), "SqueezeBackward1");
    NAME(nn_unsqueeze(x, 0), "UnsqueezeBackward0");
    NAME(nn_expand(x, 4, (int64_t[]){5, 2, 3, 4}), "ExpandBackward0");
    NAME(nn_clone(x), "CloneBackward0");
    NAME(nn_to_dtype(x, NN_F64), "ToCopyBackward0");
    nn_tensor *tr = nn_transpose(x, 1, 2);
    NAME(nn_contiguous(tr), "CloneBackward0");
    NAME(nn_reshape(tr, 1, (int64_t[]){24}), "UnsafeViewBackward0");
    nn_tensor *m2 = nn_select(x, 0, 0), *m1 = nn_select(m2, 0, 0), *w = nn_transpose(m2, 0, 1);
    NAME(nn_t(m2), "TBackward0");
    NAME(nn_mm(m2, w), "MmBackward0");
    NAME(nn_matmul(m2, w), "MmBackward0");
    NAME(nn_matmul(m2, m1), "MvBackward0");
    NAME(nn_matmul(m1, m1), "DotBackward0");
    NAME(nn_dot(m1, m1), "DotBackward0");
    NAME(nn_matmul(x, w), "UnsafeViewBackward0");
    nn_tensor *xt = nn_transpose(x, 1, 2);
    NAME(nn_bmm(x, xt), "BmmBackward0");
    nn_release(xt);
    NAME(nn_outer(m1, m1), "MulBackward0");
    nn_tensor *bias = nn_select(w, 0, 0);
    NAME(nn_addmm(bias, m2, w, 1, 1), "AddmmBackward0");
    nn_release(bias);
    nn_tensor *parts[2] = {x, x};
    NAME(nn_cat(parts, 2, 0), "CatBackward0");
    NAME(nn_stack(parts, 2, 0), "StackBackward0");
    nn_tensor *pieces[4] = {0};
    int np = nn_chunk(x, 2, 1, pieces, 4);
    CHECK(np == 2 && named(pieces[0], "SplitBackward0") && named(pieces[1], "SplitBackward0"));
    for (int i = 0; i < np; i++) nn_release(pieces[i]);
    np = nn_split_sizes(x, 2, (int64_t[]){1, 3}, 2, pieces, 4);
    CHECK(np == 2 && named(pieces[1], "SplitWithSizesBackward0"));
    for (int i = 0; i < np; i++) nn_release(pieces[i]);
    nn_tensor *v = NULL, *idx = NULL;
    nn_max_dim(x, 1, false, &v, &idx);
    NAME(v, "MaxBackward0");
    nn_release(idx);
#undef NAME
    for (int i = 0; i < n; i++) {
        CHECK(named(cases[i].t, cases[i].name), "case %d: %s, expected %s", i, fn_name(cases[i].t), cases[i].name);
        nn_release(cases[i].t);
    }
    /* the unsafe view of a non-viewable reshape sits on the clone */
    nn_tensor *r = nn_reshape(tr, 1, (int64_t[]){24});
    CHECK(named(r, "UnsafeViewBackward0") && r->grad_fn->next[0].node && !strcmp(r->grad_fn->next[0].node->name, "CloneBackward0"));
    nn_tensor *c = nn_contiguous(x);
    CHECK(c == x, "contiguous of a contiguous tensor is the tensor itself");
    /* printing */
    nn_tensor *sm = nn_binary(NN_OP_mul, m1, two);
    char *repr = nn_tensor_repr(sm), *lrepr = nn_tensor_repr(m1), *xr = nn_tensor_repr(x);
    CHECK(has(repr, "grad_fn=<MulBackward0>)"), "%s", repr);
    CHECK(has(lrepr, "grad_fn=<SelectBackward0>)"), "%s", lrepr);
    CHECK(has(xr, "requires_grad=True)"), "%s", xr);
    free(repr), free(lrepr), free(xr);
    nn_release(sm), nn_release(c), nn_release(r);
    nn_release(m1), nn_release(m2), nn_release(w), nn_release(tr), nn_release(two), nn_release(x);
}

static void test_freeing(void)
{
    double xv[3] = {1, 2, 3};
    nn_tensor *x = vec(NN_F32, 3, xv, true), *w = vec(NN_F32, 3, xv, true);
    /* a graph dropped without backward */
    nn_tensor *y = nn_binary(NN_OP_mul, x, w), *z = nn_unary(NN_OP_exp, y), *s = sum_all(z);
    nn_release(y), nn_release(z);
    CHECK(x->refcount > 1, "the graph holds the leaf");
    nn_release(s);
    CHECK(x->refcount == 1 && w->refcount == 1, "refcounts %d %d", x->refcount, w->refcount);
    /* after backward, and after a failing backward */
    y = nn_binary(NN_OP_mul, x, w), s = sum_all(y);
    nn_backward(s, NULL, false);
    nn_release(y), nn_release(s);
    CHECK(x->refcount == 1 && w->refcount == 1);
    y = nn_unary(NN_OP_exp, x);
    nn_tensor *one = nn_scalar_f64(1);
    nn_binary_(NN_OP_add, y, one);
    s = sum_all(y);
    CHECK(nn_backward(s, NULL, false) != NN_OK);
    nn_release(y), nn_release(s), nn_release(one);
    CHECK(x->refcount == 1, "refcount %d", x->refcount);

    /* 100000 adds: backward and release run without deep recursion */
    clear_grad(x);
    nn_tensor *t = nn_retain(x), *c = vec(NN_F32, 3, (double[]){0.5, 0.5, 0.5}, false);
    for (int i = 0; i < 100000 && t; i++) {
        nn_tensor *nt = nn_binary(NN_OP_add, t, c);
        nn_release(t);
        t = nt;
    }
    CHECK(t != NULL);
    s = sum_all(t);
    CHECK(nn_backward(s, NULL, false) == NN_OK, "%s", nn_last_error());
    CHECK(equals(x->grad, (double[]){1, 1, 1}, 3));
    nn_release(s), nn_release(t);
    CHECK(x->refcount == 1, "the long chain is gone: refcount %d", x->refcount);

    /* long chains of multiplications saving their inputs: freed without backward, and after it */
    for (int pass = 0; pass < 2; pass++) {
        nn_tensor *ones = vec(NN_F32, 3, (double[]){1, 1, 1}, true);
        clear_grad(x);
        t = nn_retain(x);
        for (int i = 0; i < 100000 && t; i++) {
            nn_tensor *nt = nn_binary(NN_OP_mul, t, ones);
            nn_release(t);
            t = nt;
        }
        if (pass == 1) {
            s = sum_all(t);
            CHECK(nn_backward(s, NULL, false) == NN_OK, "%s", nn_last_error());
            CHECK(equals(x->grad, (double[]){1, 1, 1}, 3) && equals(ones->grad, (double[]){100000, 200000, 300000}, 3));
            nn_release(s);
        }
        nn_release(t);
        CHECK(x->refcount == 1 && ones->refcount == 1, "refcounts %d %d", x->refcount, ones->refcount);
        nn_release(ones);
    }

    /* products whose output gradient is an expanded scalar (sum's backward): stride-0 operands */
    int64_t s234[3] = {2, 3, 4}, s45[2] = {4, 5};
    nn_tensor *a = nn_randn(3, s234, NN_F64, NN_DEVICE_CPU), *b = nn_randn(2, s45, NN_F64, NN_DEVICE_CPU);
    nn_requires_grad_(a, true), nn_requires_grad_(b, true);
    nn_tensor *p = nn_matmul(a, b);
    s = sum_all(p);
    CHECK(nn_backward(s, NULL, false) == NN_OK);
    bool ok = a->grad && b->grad;
    for (int k = 0; k < 4 && ok; k++) {
        double rs = 0, cs = 0;
        for (int n = 0; n < 5; n++) rs += nn_get_f64(b, (int64_t[]){k, n});
        for (int i = 0; i < 6; i++) cs += nn_get_f64(a, (int64_t[]){i / 3, i % 3, k});
        for (int i = 0; i < 6; i++) ok = ok && fabs(nn_get_f64(a->grad, (int64_t[]){i / 3, i % 3, k}) - rs) < 1e-12;
        for (int n = 0; n < 5; n++) ok = ok && fabs(nn_get_f64(b->grad, (int64_t[]){k, n}) - cs) < 1e-12;
    }
    CHECK(ok, "matmul backward from sum");
    nn_release(s), nn_release(p), nn_release(a), nn_release(b);
    nn_release(c), nn_release(w), nn_release(x);
}

/* ---- a pass started inside another (from a node's backward) ---- */

static nn_status failing_backward(nn_node *n, nn_tensor *const *gout, nn_tensor **gin)
{
    (void)n, (void)gout, (void)gin;
    return nn_error(NN_ERR_RUNTIME, "FailBackward: on purpose");
}

/* sum(f(h) * h) recorded with grad mode on, f(h) = h through a node whose backward fails when fail */
static nn_tensor *nested_root(nn_tensor *h, bool fail)
{
    bool was = nn_grad_enabled();
    nn_set_grad_enabled(true);
    nn_tensor *f = nn_retain(h);
    if (fail) {
        nn_set_grad_enabled(false);
        nn_release(f);
        f = nn_clone(h);
        nn_set_grad_enabled(true);
        nn_node *n = nn_node_new("FailBackward", failing_backward, 1, &h);
        nn_node_set_output(n, f, 0);
        nn_node_release(n);
    }
    nn_tensor *p = nn_binary(NN_OP_mul, f, h), *y = sum_all(p);
    nn_release(f), nn_release(p);
    nn_set_grad_enabled(was);
    return y;
}

static int nested_calls;
static char nested_error[200];

/* Square(h) = h^2, its backward g * 2h with 2h taken by a pass nested in the running one: first
 * one that fails inside (its error kept), then d sum(h * h) / dh, stopping at h, a non-leaf of
 * the outer graph whose node holds part of the outer pass's gradient already. */
static nn_status square_backward(nn_node *n, nn_tensor *const *gout, nn_tensor **gin)
{
    nn_tensor *h = nn_node_saved(n, 0), *g = NULL;
    if (!h) return nn_last_status();
    nested_calls++;
    nn_grad_targets want = {1, &h, &g};
    nn_tensor *bad = nested_root(h, true), *y = nested_root(h, false);
    if (nn_backward_ex(1, &bad, NULL, true, false, &want) == NN_OK) snprintf(nested_error, sizeof nested_error, "(no error)");
    else snprintf(nested_error, sizeof nested_error, "%s", nn_last_error());
    nn_status st = nn_backward_ex(1, &y, NULL, false, false, &want);
    nn_release(bad), nn_release(y);
    if (st) return st;
    gin[0] = nn_binary(NN_OP_mul, gout[0], g);
    nn_release(g);
    return gin[0] ? NN_OK : nn_last_status();
}

static void test_nested_passes(void)
{
    double xv[3] = {-0.5, 1.5, 2.0}, cv[3] = {3, -1, 0.25};
    size_t bytes = nn_live_storage_bytes();
    nn_tensor *x = vec(NN_F64, 3, xv, true), *c = vec(NN_F64, 3, cv, false);
    nn_tensor *h = nn_binary(NN_OP_mul, x, x);
    nn_set_grad_enabled(false);
    nn_tensor *z = nn_binary(NN_OP_mul, h, h);
    nn_set_grad_enabled(true);
    nn_node *sq = nn_node_new("SquareBackward", square_backward, 1, &h);
    nn_node_save(sq, 0, h);
    nn_node_set_output(sq, z, 0);
    nn_node_release(sq);
    nn_tensor *a = nn_binary(NN_OP_mul, h, c); /* made after Square: its path runs first */
    nn_tensor *sz = sum_all(z), *sa = sum_all(a), *loss = nn_binary(NN_OP_add, sz, sa);
    CHECK(nn_backward(loss, NULL, false) == NN_OK, "%s", nn_last_error());
    CHECK(nested_calls == 1, "Square ran %d times", nested_calls);
    CHECK(has(nested_error, "FailBackward: on purpose"), "the failing nested pass: %s", nested_error);
    double want[3];
    for (int i = 0; i < 3; i++) want[i] = 4 * xv[i] * xv[i] * xv[i] + 2 * cv[i] * xv[i]; /* d sum(x^4 + c x^2) */
    CHECK(equals(x->grad, want, 3), "x.grad %g %g %g", x->grad ? at(x->grad, 0) : 0, x->grad ? at(x->grad, 1) : 0,
          x->grad ? at(x->grad, 2) : 0);
    nn_release(h), nn_release(z), nn_release(a), nn_release(sz), nn_release(sa), nn_release(loss);
    CHECK(x->refcount == 1, "the graph is gone: refcount %d", x->refcount);
    nn_release(x), nn_release(c);
    CHECK(nn_live_storage_bytes() == bytes, "no storage leaked: %zu bytes before, %zu after", bytes, nn_live_storage_bytes());
}

int main(void)
{
    test_accumulate_and_retain();
    test_backward_args();
    test_grad_mode_and_leaves();
    test_retain_grad();
    test_inplace_rules();
    test_dtypes();
    test_values_at_kinks();
    test_names();
    test_freeing();
    test_nested_passes();
    return CHECK_REPORT();
}
