/* In-place ops on views (PyTorch's CopySlices and rebase_history).
 *
 * v = b[1]; v:mul_(3) changes b's elements too, so b's history must include the mul:
 *   b.grad_fn = CopySlices(b's old history, MulBackward0): its backward takes b's gradient,
 *     runs MulBackward0 on the part v covers and writes the result back there (the rest of
 *     the gradient passes through untouched), and hands MulBackward0's other inputs theirs;
 *   v.grad_fn = AsStridedBackward0(b's new history): v seen as its geometry within b.
 * Geometry is kept in storage terms (strides, offset from b's), so it holds for any view.
 * A view made before its base (or a sibling view) changed in place is refreshed the same
 * way when its history is next read (nn_refresh_view_history). */
#define NN_GRAD_INTERNAL
#include <stdlib.h>
#include <string.h>

#include "grad.h"

typedef struct {
    int ndim, base_ndim;
    int64_t shape[NN_MAX_DIMS], strides[NN_MAX_DIMS], offset; /* the view's, offset relative to the base's */
    int64_t base_shape[NN_MAX_DIMS], base_strides[NN_MAX_DIMS];
} geometry;

/* A tensor shaped like the base (its strides), holding g (zeros when g is NULL). */
static nn_tensor *base_like(const geometry *gm, nn_tensor *g, nn_dtype dt, nn_device dev)
{
    nn_tensor *r = nn_empty_strided(gm->base_ndim, gm->base_shape, gm->base_strides, dt, dev);
    if (!r) return NULL;
    if (g ? nn_copy_(r, g) : nn_zero_(r)) {
        nn_release(r);
        return NULL;
    }
    return r;
}

/* the view's part of r (r laid out as the base) */
static nn_tensor *part(const geometry *gm, nn_tensor *r)
{
    return nn_make_view(r, gm->ndim, gm->shape, gm->strides, r->offset + gm->offset);
}

/* Both write a gradient into part of a buffer through a bare view, which a recorded graph would not see. */
static nn_status no_double_backward(void) { return nn_no_double_backward("writes a gradient into part of a tensor"); }

static nn_status copy_slices_backward(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    if (nn_backward_creates_graph()) return no_double_backward();
    const geometry *gm = n->ctx;
    nn_node *fn = n->inner;
    const nn_edge *e = &n->next[0];
    nn_tensor *result = base_like(gm, grad_out[0], e->dtype, e->device);
    nn_tensor *slice = result ? part(gm, result) : NULL;
    nn_tensor *go[NN_NODE_MAX_OUT] = {slice ? nn_clone(slice) : NULL};
    nn_tensor **gi = calloc((size_t)fn->nin, sizeof *gi);
    nn_status st = go[0] && gi ? fn->backward(fn, go, gi) : nn_last_status();
    if (!go[0] || !gi) st = st ? st : nn_error(NN_ERR_NOMEM, "CopySlices: out of memory");
    if (!st) { /* the view's part of the gradient: what the op's backward gives its self input */
        nn_tensor *r0 = gi[0] ? nn_grad_to_input(gi[0], &fn->next[0]) : NULL;
        st = gi[0] && !r0 ? nn_last_status() : r0 ? nn_copy_(slice, r0) : nn_zero_(slice);
        nn_release(r0);
    }
    nn_release(go[0]);
    nn_release(slice);
    if (gi) nn_release(gi[0]);
    if (st) {
        for (int i = 1; gi && i < fn->nin; i++) nn_release(gi[i]);
        free(gi);
        nn_release(result);
        return st;
    }
    grad_in[0] = result;
    for (int i = 1; i < fn->nin; i++) grad_in[i] = gi[i];
    free(gi);
    return NN_OK;
}

/* the view's gradient placed in zeros shaped like the base */
static nn_status as_strided_backward(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    if (nn_backward_creates_graph()) return no_double_backward();
    const geometry *gm = n->ctx;
    const nn_edge *e = &n->next[0];
    nn_tensor *z = base_like(gm, NULL, e->dtype, e->device);
    nn_tensor *s = z ? part(gm, z) : NULL;
    nn_status st = !s ? nn_last_status() : grad_out[0] ? nn_copy_(s, grad_out[0]) : NN_OK;
    nn_release(s);
    if (st) {
        nn_release(z);
        return st;
    }
    grad_in[0] = z;
    return NN_OK;
}

static geometry *geometry_of(const nn_tensor *v, const nn_tensor *b)
{
    geometry *gm = malloc(sizeof *gm);
    if (!gm) return NULL;
    gm->ndim = v->ndim, gm->base_ndim = b->ndim;
    memcpy(gm->shape, v->shape, sizeof gm->shape);
    memcpy(gm->strides, v->strides, sizeof gm->strides);
    gm->offset = v->offset - b->offset;
    memcpy(gm->base_shape, b->shape, sizeof gm->base_shape);
    memcpy(gm->base_strides, b->strides, sizeof gm->base_strides);
    return gm;
}

nn_status nn_rebase_view_history(nn_tensor *self)
{
    nn_tensor *b = self->base;
    nn_node *fn = self->grad_fn;
    if (!b || !fn || b->storage != self->storage) return NN_OK;
    /* the base's new history: its old one and the op's other inputs as edges */
    nn_tensor **ins = calloc((size_t)fn->nin, sizeof *ins);
    if (!ins) return nn_error(NN_ERR_NOMEM, "out of memory recording CopySlices");
    ins[0] = b;
    nn_node *cs = nn_node_new("CopySlices", copy_slices_backward, fn->nin, ins);
    free(ins);
    nn_node *av = NULL;
    geometry *g1 = geometry_of(self, b), *g2 = geometry_of(self, b);
    if (!cs || !g1 || !g2) goto fail;
    for (int i = 1; i < fn->nin; i++) {
        cs->next[i] = fn->next[i];
        if (cs->next[i].node) cs->next[i].node->refcount++;
    }
    cs->inner = fn;
    fn->refcount++;
    cs->ctx = g1, g1 = NULL;
    nn_node_set_output(cs, b, 0);
    /* the view's new history: a view of the base's */
    av = nn_node_new("AsStridedBackward0", as_strided_backward, 1, &b);
    if (!av) goto fail;
    av->view = true;
    av->ctx = g2;
    nn_node_set_output(av, self, 0);
    nn_node_release(av);
    nn_node_release(cs);
    return NN_OK;
fail:
    free(g1);
    free(g2);
    nn_node_release(cs);
    return nn_error(NN_ERR_NOMEM, "out of memory recording CopySlices");
}

nn_status nn_refresh_view_history(nn_tensor *v)
{
    nn_tensor *b = v->base;
    if (!b || b->storage != v->storage || v->view_version == v->storage->version) return NN_OK;
    v->view_version = v->storage->version;
    /* a view of a leaf or of a tensor without history: nothing upstream changed */
    if (!v->requires_grad || !v->grad_fn || !b->grad_fn) return NN_OK;
    geometry *g = geometry_of(v, b);
    nn_node *av = g ? nn_node_new("AsStridedBackward0", as_strided_backward, 1, &b) : NULL;
    if (!av) {
        free(g);
        return nn_error(NN_ERR_NOMEM, "out of memory recording AsStridedBackward0");
    }
    av->view = true;
    av->ctx = g;
    nn_node_set_output(av, v, 0);
    nn_node_release(av);
    return NN_OK;
}
