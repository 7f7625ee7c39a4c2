/* Backward of the view ops (view, reshape, transpose, permute, expand, slices, select),
 * diagonal, cat and stack. A view's gradient is the output gradient seen back in the input's
 * geometry; a slice's is that gradient written into zeros of the input's shape. */
#define NN_GRAD_INTERNAL
#include <string.h>

#include <stdlib.h>

#include "grad.h"

static nn_status finish(nn_node *n, nn_tensor *out)
{
    nn_node_set_output(n, out, 0);
    nn_node_release(n);
    return NN_OK;
}

/* views of a tensor that requires grad are float like it; x here always needs a gradient */
static nn_node *view_node(const char *name, nn_backward_fn fn, nn_tensor *x, nn_tensor *out)
{
    nn_node *n = nn_node_new(name, fn, 1, &x);
    if (n) n->view = out->storage == x->storage;
    return n;
}

/* ---- same elements, another shape ---- */

static nn_status view_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    gi[0] = nn_reshape(go[0], n->next[0].ndim, n->next[0].shape);
    return gi[0] ? NN_OK : nn_last_status();
}

nn_status nn_record_view(const char *name, nn_tensor *x, nn_tensor *out)
{
    nn_node *n = view_node(name, view_backward, x, out);
    return n ? finish(n, out) : nn_last_status();
}

static nn_status transpose_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    gi[0] = nn_transpose(go[0], (int)n->i[0], (int)n->i[1]);
    return gi[0] ? NN_OK : nn_last_status();
}

nn_status nn_record_transpose(const char *name, nn_tensor *x, nn_tensor *out, int d0, int d1)
{
    nn_node *n = view_node(name, transpose_backward, x, out);
    if (!n) return nn_last_status();
    n->i[0] = d0, n->i[1] = d1;
    return finish(n, out);
}

/* i[0]: the inverse permutation, 4 bits a dim */
static nn_status permute_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    int inv[NN_MAX_DIMS];
    for (int d = 0; d < n->next[0].ndim; d++) inv[d] = (int)(n->i[0] >> (4 * d) & 15);
    gi[0] = nn_permute(go[0], inv);
    return gi[0] ? NN_OK : nn_last_status();
}

nn_status nn_record_permute(nn_tensor *x, nn_tensor *out, const int *dims)
{
    nn_node *n = view_node("PermuteBackward0", permute_backward, x, out);
    if (!n) return nn_last_status();
    for (int i = 0; i < x->ndim; i++) {
        int d = dims[i] < 0 ? dims[i] + x->ndim : dims[i];
        n->i[0] |= (int64_t)i << (4 * d);
    }
    return finish(n, out);
}

/* expand: nn_backward sums the gradient over the expanded dims */
static nn_status pass_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    gi[0] = nn_retain(go[0]);
    return NN_OK;
}

nn_status nn_record_expand(nn_tensor *x, nn_tensor *out)
{
    nn_node *n = view_node("ExpandBackward0", pass_backward, x, out);
    return n ? finish(n, out) : nn_last_status();
}

/* ---- parts of the input ---- */

/* zeros of e's shape in g's dtype, and the view of them at (shape, strides scaled, offset) */
static nn_tensor *zeros_and_part(const nn_edge *e, const nn_tensor *g, nn_tensor **part, int ndim, const int64_t *shape,
                                 const int64_t *stride_mul, const int64_t *drop, int64_t start_dim, int64_t start)
{
    nn_tensor *z = nn_zeros(e->ndim, e->shape, g->dtype, e->device);
    if (!z) return NULL;
    int64_t st[NN_MAX_DIMS], pst[NN_MAX_DIMS];
    nn_contiguous_strides(e->ndim, e->shape, st);
    for (int d = 0, k = 0; d < e->ndim; d++) {
        if (drop && d == *drop) continue;
        pst[k++] = st[d] * (stride_mul && d == start_dim ? *stride_mul : 1);
    }
    *part = nn_make_view(z, ndim, shape, pst, start * st[start_dim]);
    if (!*part) {
        nn_release(z);
        return NULL;
    }
    return z;
}

/* Recording a graph (double backward), z = g written into part of zeros is an op of its own: its
 * backward takes the same part of z's gradient. */
typedef struct {
    int ndim;
    int64_t shape[NN_MAX_DIMS], strides[NN_MAX_DIMS], offset; /* the part within z (contiguous, offset 0) */
} part_geometry;

static nn_status part_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    const part_geometry *p = n->ctx;
    if (nn_backward_creates_graph() && go[0]->requires_grad) return nn_no_double_backward("takes part of a tensor (a third derivative)");
    nn_tensor *c = nn_contiguous(go[0]), *v = c ? nn_make_view(c, p->ndim, p->shape, p->strides, c->offset + p->offset) : NULL;
    gi[0] = v ? nn_clone(v) : NULL;
    nn_release(c), nn_release(v);
    return gi[0] ? NN_OK : nn_last_status();
}

static nn_status record_part(const char *name, nn_tensor *z, nn_tensor *part, nn_tensor *g)
{
    part_geometry *p = malloc(sizeof *p);
    if (!p) return nn_error(NN_ERR_NOMEM, "out of memory");
    p->ndim = part->ndim, p->offset = part->offset - z->offset;
    memcpy(p->shape, part->shape, sizeof p->shape);
    memcpy(p->strides, part->strides, sizeof p->strides);
    nn_node *n = nn_node_new(name, part_backward, 1, &g);
    if (!n) {
        free(p);
        return nn_last_status();
    }
    n->ctx = p;
    nn_node_set_output(n, z, 0);
    nn_node_release(n);
    return NN_OK;
}

/* the gradient z of a slice-like view: g written into part (z's view), part released; name: the
 * node recording that when a graph is recorded */
static nn_status into_part(const char *name, nn_tensor *z, nn_tensor *part, nn_tensor *g, nn_tensor **gi)
{
    bool record = nn_backward_creates_graph() && g->requires_grad;
    bool was = nn_grad_enabled();
    if (record) nn_set_grad_enabled(false);
    nn_status st = nn_numel(part) ? nn_copy_(part, g) : NN_OK;
    if (record) nn_set_grad_enabled(was);
    if (!st && record) st = record_part(name, z, part, g);
    nn_release(part);
    if (st) {
        nn_release(z);
        return st;
    }
    *gi = z;
    return NN_OK;
}

/* i[0] dim, i[1] start, i[2] step */
static nn_status slice_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    const nn_edge *e = &n->next[0];
    nn_tensor *g = go[0], *part;
    int64_t step = n->i[2];
    nn_tensor *z = zeros_and_part(e, g, &part, g->ndim, g->shape, &step, NULL, n->i[0], n->i[1]);
    return z ? into_part("SliceBackwardBackward0", z, part, g, &gi[0]) : nn_last_status();
}

nn_status nn_record_slice(const char *name, nn_tensor *x, nn_tensor *out, int dim, int64_t start, int64_t step)
{
    nn_node *n = view_node(name, slice_backward, x, out);
    if (!n) return nn_last_status();
    n->i[0] = dim, n->i[1] = start, n->i[2] = step;
    return finish(n, out);
}

/* i[0] dim, i[1] index */
static nn_status select_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    const nn_edge *e = &n->next[0];
    nn_tensor *g = go[0], *part;
    int64_t dim = n->i[0];
    nn_tensor *z = zeros_and_part(e, g, &part, g->ndim, g->shape, NULL, &dim, dim, n->i[1]);
    return z ? into_part("SelectBackwardBackward0", z, part, g, &gi[0]) : nn_last_status();
}

nn_status nn_record_select(nn_tensor *x, nn_tensor *out, int dim, int64_t index)
{
    nn_node *n = view_node("SelectBackward0", select_backward, x, out);
    if (!n) return nn_last_status();
    n->i[0] = dim, n->i[1] = index;
    return finish(n, out);
}

/* i[0] offset, i[1] dim1, i[2] dim2: the gradient written into the diagonal of zeros */
static nn_status diagonal_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    const nn_edge *e = &n->next[0];
    nn_tensor *z = nn_zeros(e->ndim, e->shape, go[0]->dtype, e->device);
    nn_tensor *part = z ? nn_diagonal(z, n->i[0], (int)n->i[1], (int)n->i[2]) : NULL;
    if (!part) {
        nn_release(z);
        return nn_last_status();
    }
    return into_part("DiagonalBackwardBackward0", z, part, go[0], &gi[0]);
}

nn_status nn_record_diagonal(nn_tensor *x, nn_tensor *out, int64_t offset, int dim1, int dim2)
{
    nn_node *n = view_node("DiagonalBackward0", diagonal_backward, x, out);
    if (!n) return nn_last_status();
    n->i[0] = offset, n->i[1] = dim1, n->i[2] = dim2;
    return finish(n, out);
}

/* ---- cat and stack: each input gets its part of the gradient ---- */

static bool legacy_empty(const nn_edge *e) { return e->ndim == 1 && e->shape[0] == 0; }

/* i[0] dim */
static nn_status cat_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    int dim = (int)n->i[0];
    int64_t off = 0;
    for (int k = 0; k < n->nin; k++) {
        const nn_edge *e = &n->next[k];
        if (legacy_empty(e)) { /* skipped by cat (or empty anyway): an empty gradient */
            if (e->node && !(gi[k] = nn_zeros(1, e->shape, go[0]->dtype, e->device))) return nn_last_status();
            continue;
        }
        if (e->node && !(gi[k] = nn_narrow(go[0], dim, off, e->shape[dim]))) return nn_last_status();
        off += e->shape[dim];
    }
    return NN_OK;
}

static nn_status stack_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    for (int k = 0; k < n->nin; k++)
        if (n->next[k].node && !(gi[k] = nn_select(go[0], (int)n->i[0], k))) return nn_last_status();
    return NN_OK;
}

static nn_status record_join(const char *name, nn_backward_fn fn, nn_tensor *const *ts, int n, int dim, nn_tensor *out)
{
    if (!nn_dtype_is_differentiable(out->dtype)) return NN_OK;
    nn_node *node = nn_node_new(name, fn, n, ts);
    if (!node) return nn_last_status();
    node->i[0] = dim;
    return finish(node, out);
}

nn_status nn_record_cat(nn_tensor *const *ts, int n, int dim, nn_tensor *out)
{
    return record_join("CatBackward0", cat_backward, ts, n, dim, out);
}

nn_status nn_record_stack(nn_tensor *const *ts, int n, int dim, nn_tensor *out)
{
    return record_join("StackBackward0", stack_backward, ts, n, dim, out);
}
