/* nll_loss and the fused cross_entropy: frontends (PyTorch's shape and dtype checks), backward
 * frontends and autograd nodes. */
#include <string.h>

#include "autocast.h"
#include "autograd.h"
#include "backend.h"
#include "nnfunc.h"

/* The CPU kernel table refers to NN kernels weakly, and a weak reference does not pull a
 * member out of the static engine library; this strong reference does (CPU is always built). */
nn_status nn_cpu_nll_loss(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_nll_loss;

static bool same_shape(int na, const int64_t *a, int nb, const int64_t *b)
{
    return na == nb && !memcmp(a, b, sizeof(int64_t) * (size_t)na);
}

/* PyTorch's checks of nll_loss / nll_loss_nd, in its order, for an input of shape [xnd, xs] and dtype xdt. */
static nn_status check_args(int xnd, const int64_t *xs, nn_dtype xdt, const nn_tensor *t, const nn_tensor *w, int reduction)
{
    char b1[160], b2[160];
    if (reduction < NN_REDUCTION_NONE || reduction > NN_REDUCTION_SUM)
        return nn_error(NN_ERR_ARG, "nll_loss: %d is not a valid value for reduction", reduction);
    if (xnd < 1) return nn_error(NN_ERR_SHAPE, "Expected 1 or more dimensions (got %d)", xnd);
    if (xnd >= 2 && t->ndim >= 1 && xs[0] != t->shape[0])
        return nn_error(NN_ERR_SHAPE, "Expected input batch_size (%lld) to match target batch_size (%lld).", (long long)xs[0],
                        (long long)t->shape[0]);
    if (xnd <= 2) {
        if (t->ndim > 1) return nn_error(NN_ERR_SHAPE, "0D or 1D target tensor expected, multi-target not supported");
        if (t->ndim != xnd - 1)
            return nn_error(NN_ERR_SHAPE, "size mismatch (got input: %s, target: %s)", nn_shape_str(b1, xnd, xs), nn_shape_str(b2, t->ndim, t->shape));
    } else {
        int64_t want[NN_MAX_DIMS];
        want[0] = xs[0];
        for (int d = 2; d < xnd; d++) want[d - 1] = xs[d];
        if (!same_shape(t->ndim, t->shape, xnd - 1, want))
            return nn_error(NN_ERR_SHAPE, "Expected target size %s, got %s", nn_shape_str(b1, xnd - 1, want), nn_shape_str(b2, t->ndim, t->shape));
    }
    int64_t C = xnd == 1 ? xs[0] : xs[1];
    if (w && (w->ndim != 1 || w->shape[0] != C))
        return nn_error(NN_ERR_SHAPE, "weight tensor should be defined either for all %lld classes or no classes but got weight tensor of shape: %s",
                        (long long)C, nn_shape_str(b1, w->ndim, w->shape));
    if (!nn_dtype_is_float(xdt)) return nn_error(NN_ERR_DTYPE, "\"nll_loss_out_frame\" not implemented for '%s'", nn_dtype_scalar_name(xdt));
    if (t->dtype != NN_I64) return nn_error(NN_ERR_DTYPE, "expected scalar type Long but found %s", nn_dtype_scalar_name(t->dtype));
    if (w && w->dtype != xdt)
        return nn_error(NN_ERR_DTYPE, "expected scalar type %s but found %s", nn_dtype_scalar_name(xdt), nn_dtype_scalar_name(w->dtype));
    return NN_OK;
}

typedef nn_tensor *(*class_loss)(nn_tensor *, nn_tensor *, nn_tensor *, int, int64_t);

/* What nll_loss and cross_entropy do first: under autocast, run again (self) on the cast
 * inputs; then PyTorch's checks. True when *r is the answer (NULL: an error). */
static bool prologue(nn_op op, class_loss self, nn_tensor *x, nn_tensor *target, nn_tensor *weight, int reduction, int64_t ignore_index,
                     nn_tensor **r)
{
    *r = NULL;
    if (nn_autocast_on()) {
        nn_tensor *in[3] = {x, target, weight}, *c[3];
        if (nn_autocast_inputs(op, 3, in, c)) return true;
        if (c[0] || c[2]) {
            *r = self(c[0] ? c[0] : x, target, c[2] ? c[2] : weight, reduction, ignore_index);
            nn_autocast_release(3, c);
            return true;
        }
    }
    if (check_args(x->ndim, x->shape, x->dtype, target, weight, reduction)) return true;
    if (weight && nn_any_requires_grad(1, &weight)) {
        nn_error(NN_ERR_RUNTIME, "The function 'nll_loss_forward' is not differentiable with respect to argument 'weight'. This input cannot "
                                 "have requires_grad True.");
        return true;
    }
    return false;
}

/* nll_loss's gradient is linear in the loss's gradient g alone, and its adjoint is nll_loss
 * itself: the double backward node of a recorded graph. saved: 0 target, 1 class weights */
static nn_status nll_double_backward(nn_node *n, nn_tensor *const *gg, nn_tensor **gi)
{
    nn_tensor *t = nn_node_saved(n, 0), *w = NULL;
    if (!t || (nn_node_has_saved(n, 1) && !(w = nn_node_saved(n, 1)))) return nn_last_status();
    gi[0] = nn_nll_loss(gg[0], t, w, (int)n->i[0], n->i[1]);
    return gi[0] ? NN_OK : nn_last_status();
}

/* saved: 0 total weight, 1 target, 2 class weights (or empty) */
static nn_status backward_node(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    nn_tensor *tw = nn_node_saved(n, 0), *t = nn_node_saved(n, 1), *w = NULL;
    if (!tw || !t) return nn_last_status();
    if (nn_node_has_saved(n, 2) && !(w = nn_node_saved(n, 2))) return nn_last_status();
    const nn_edge *e = &n->next[0];
    nn_tensor *g = grad_out[0];
    bool record = nn_backward_creates_graph() && nn_grad_enabled() && g->requires_grad;
    if (record) nn_set_grad_enabled(false);
    grad_in[0] = nn_nll_loss_backward(g, e->ndim, e->shape, t, w, tw, (int)n->i[0], n->i[1]);
    if (!record) return grad_in[0] ? NN_OK : nn_last_status();
    nn_set_grad_enabled(true);
    nn_node *d = grad_in[0] ? nn_node_new("NllLossBackwardBackward0", nll_double_backward, 1, &g) : NULL;
    if (!d) return nn_last_status(); /* the engine releases grad_in on error */
    d->i[0] = n->i[0], d->i[1] = n->i[1];
    nn_node_save(d, 0, t);
    if (w) nn_node_save(d, 1, w);
    nn_node_set_output(d, grad_in[0], 0);
    nn_node_release(d);
    return NN_OK;
}

nn_tensor *nn_nll_loss(nn_tensor *x, nn_tensor *target, nn_tensor *weight, int reduction, int64_t ignore_index)
{
    nn_tensor *r;
    if (prologue(NN_OP_nll_loss, nn_nll_loss, x, target, weight, reduction, ignore_index, &r)) return r;
    nn_device dev = x->storage->device;
    nn_tensor *out = reduction == NN_REDUCTION_NONE ? nn_empty(target->ndim, target->shape, x->dtype, dev) : nn_empty(0, NULL, x->dtype, dev);
    nn_tensor *tw = nn_empty(0, NULL, x->dtype, dev);
    nn_kargs a = {.op = NN_OP_nll_loss, .out = {out, tw}, .in = {x, target, weight}, .nin = weight ? 3 : 2, .i = {reduction, ignore_index}};
    if (!out || !tw || nn_dispatch(&a)) goto fail;
    if (nn_any_requires_grad(1, &x)) {
        nn_node *n = nn_node_new(nn_op_backward_name(NN_OP_nll_loss), backward_node, 1, &x);
        if (!n) goto fail;
        n->i[0] = reduction;
        n->i[1] = ignore_index;
        nn_node_save(n, 0, tw);
        nn_node_save(n, 1, target);
        if (weight) nn_node_save(n, 2, weight);
        nn_node_set_output(n, out, 0);
        nn_node_release(n);
    }
    nn_release(tw);
    return out;
fail:
    nn_release(out);
    nn_release(tw);
    return NULL;
}

nn_tensor *nn_nll_loss_backward(nn_tensor *grad_out, int ndim, const int64_t *shape, nn_tensor *target, nn_tensor *weight,
                                nn_tensor *total_weight, int reduction, int64_t ignore_index)
{
    char b1[160], b2[160];
    if (check_args(ndim, shape, total_weight->dtype, target, weight, reduction)) return NULL;
    bool none = reduction == NN_REDUCTION_NONE;
    if (none ? !same_shape(grad_out->ndim, grad_out->shape, target->ndim, target->shape) : nn_numel(grad_out) != 1) {
        nn_error(NN_ERR_SHAPE, "nll_loss_backward: grad_output %s does not match the loss's shape %s",
                 nn_shape_str(b1, grad_out->ndim, grad_out->shape), none ? nn_shape_str(b2, target->ndim, target->shape) : "[]");
        return NULL;
    }
    nn_tensor *gi = nn_empty(ndim, shape, total_weight->dtype, total_weight->storage->device);
    nn_kargs a = {.op = NN_OP_nll_loss_backward, .out = {gi}, .in = {grad_out, target, total_weight, weight},
                  .nin = weight ? 4 : 3, .i = {reduction, ignore_index}};
    if (gi && nn_dispatch(&a)) {
        nn_release(gi);
        gi = NULL;
    }
    return gi;
}

/* saved: 0 logits, 1 target, 2 logsumexp, 3 total weight, 4 class weights (or empty) */
static nn_status cross_entropy_node(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    nn_tensor *sv[5] = {NULL};
    for (int k = 0; k < 5; k++)
        if ((k < 4 || nn_node_has_saved(n, k)) && !(sv[k] = nn_node_saved(n, k))) return nn_last_status();
    nn_tensor *x = sv[0], *go = grad_out[0];
    int red = (int)n->i[0];
    if (nn_backward_creates_graph() && nn_grad_enabled()) { /* double backward: through nll_loss(log_softmax(x)) */
        if (!x->requires_grad) return nn_no_double_backward("reads a copy of its input");
        nn_tensor *ls = nn_log_softmax(x, x->ndim > 1 ? 1 : 0, x->dtype);
        nn_tensor *l = ls ? nn_nll_loss(ls, sv[1], sv[4], red, n->i[1]) : NULL;
        nn_status st = l ? nn_recorded_grad(l, go, 1, &x, &grad_in[0]) : nn_last_status();
        nn_release(ls), nn_release(l);
        return st;
    }
    if (red == NN_REDUCTION_NONE ? !same_shape(go->ndim, go->shape, sv[1]->ndim, sv[1]->shape) : nn_numel(go) != 1) {
        char b1[160], b2[160];
        return nn_error(NN_ERR_SHAPE, "cross_entropy backward: grad_output %s does not match the loss's shape %s",
                        nn_shape_str(b1, go->ndim, go->shape), red == NN_REDUCTION_NONE ? nn_shape_str(b2, sv[1]->ndim, sv[1]->shape) : "[]");
    }
    /* the kernels read grad_out in the logits' dtype, and contiguous as the saved logsumexp */
    nn_tensor *g = nn_to_dtype(go, x->dtype), *gc = g && red == NN_REDUCTION_NONE ? nn_contiguous(g) : nn_retain(g);
    nn_tensor *gi = gc ? nn_empty(x->ndim, x->shape, x->dtype, x->storage->device) : NULL;
    nn_kargs a = {.op = NN_OP_cross_entropy_backward, .out = {gi}, .in = {gc, x, sv[1], sv[2], sv[3], sv[4]}, .nin = sv[4] ? 6 : 5,
                  .i = {red, n->i[1]}};
    if (gi && nn_dispatch(&a)) {
        nn_release(gi);
        gi = NULL;
    }
    nn_release(g);
    nn_release(gc);
    grad_in[0] = gi;
    return gi ? NN_OK : nn_last_status();
}

nn_tensor *nn_cross_entropy(nn_tensor *x, nn_tensor *target, nn_tensor *weight, int reduction, int64_t ignore_index)
{
    nn_tensor *r;
    if (prologue(NN_OP_cross_entropy, nn_cross_entropy, x, target, weight, reduction, ignore_index, &r)) return r;
    nn_device dev = x->storage->device;
    nn_tensor *xc = nn_contiguous(x), *out = NULL, *tw = NULL, *lse = NULL;
    if (!xc) return NULL;
    out = reduction == NN_REDUCTION_NONE ? nn_empty(target->ndim, target->shape, x->dtype, dev) : nn_empty(0, NULL, x->dtype, dev);
    tw = nn_empty(0, NULL, x->dtype, dev);
    lse = nn_empty(target->ndim, target->shape, x->dtype, dev);
    nn_kargs a = {.op = NN_OP_cross_entropy, .out = {out, tw, lse}, .in = {xc, target, weight}, .nin = weight ? 3 : 2,
                  .i = {reduction, ignore_index}};
    if (!out || !tw || !lse || nn_dispatch(&a)) goto fail;
    if (nn_any_requires_grad(1, &x)) {
        nn_node *n = nn_node_new(nn_op_backward_name(NN_OP_cross_entropy), cross_entropy_node, 1, &x);
        if (!n) goto fail;
        n->i[0] = reduction;
        n->i[1] = ignore_index;
        nn_tensor *sv[5] = {xc, target, lse, tw, weight};
        for (int k = 0; k < 5; k++)
            if (sv[k]) nn_node_save(n, k, sv[k]);
        nn_node_set_output(n, out, 0);
        nn_node_release(n);
    }
    nn_release(xc);
    nn_release(tw);
    nn_release(lse);
    return out;
fail:
    nn_release(xc);
    nn_release(out);
    nn_release(tw);
    nn_release(lse);
    return NULL;
}
