/* index_select, index_add_ and embedding frontends with their autograd nodes
 * (IndexSelectBackward0, IndexAddBackward0, EmbeddingBackward0). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "autograd.h"
#include "backend.h"
#include "complex_ops.h"
#include "cuda_flags.h"
#include "nnfunc.h"

/* The CPU kernel table refers to NN kernels weakly, and a weak reference does not pull a
 * member out of the static engine library; this strong reference does (CPU is always built). */
nn_status nn_cpu_index_select(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_index_select;

static bool is_index_dtype(nn_dtype dt) { return dt == NN_I64 || dt == NN_I32; }

/* x's slices at index along dim (dim wrapped, index checked); no autograd. */
static nn_tensor *select_raw(nn_tensor *x, int dim, nn_tensor *index)
{
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    if (x->ndim) shape[dim] = nn_numel(index);
    nn_tensor *out = nn_empty(x->ndim, shape, x->dtype, x->storage->device);
    if (!out) return NULL;
    nn_kargs a = {.op = NN_OP_index_select, .out = {out}, .in = {x, index}, .nin = 2, .i = {dim}};
    if (nn_dispatch(&a)) {
        nn_release(out);
        return NULL;
    }
    return out;
}

/* saved: 0 index; i[0] dim */
static nn_status index_select_backward(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    nn_tensor *ix = nn_node_saved(n, 0), *g = grad_out[0];
    if (!ix) return nn_last_status();
    const nn_edge *e = &n->next[0];
    nn_tensor *z = nn_zeros(e->ndim, e->shape, g->dtype, g->storage->device);
    if (!z) return nn_last_status();
    nn_status st = nn_index_add_(z, (int)n->i[0], ix, g, 1.0);
    if (st) {
        nn_release(z);
        return st;
    }
    grad_in[0] = z;
    return NN_OK;
}

nn_tensor *nn_index_select(nn_tensor *x, int dim, nn_tensor *index)
{
    if (nn_wrap_dim("index_select", &dim, x->ndim)) return NULL;
    int64_t n = nn_numel(index);
    if (index->ndim > 1) {
        nn_error(NN_ERR_INDEX, "index_select(): Index is supposed to be a vector");
        return NULL;
    }
    if (x->ndim == 0 && n != 1) {
        nn_error(NN_ERR_ARG, "index_select(): Index to scalar can have only 1 value, got %lld value(s)", (long long)n);
        return NULL;
    }
    if (!is_index_dtype(index->dtype)) {
        nn_error(NN_ERR_DTYPE, "index_select(): Expected dtype int32 or int64 for index");
        return NULL;
    }
    nn_tensor *out = select_raw(x, dim, index);
    if (out && nn_any_requires_grad(1, &x)) {
        nn_node *node = nn_node_new(nn_op_backward_name(NN_OP_index_select), index_select_backward, 1, &x);
        if (!node) {
            nn_release(out);
            return NULL;
        }
        node->i[0] = dim;
        nn_node_save(node, 0, index);
        nn_node_set_output(node, out, 0);
        nn_node_release(node);
    }
    return out;
}

/* inputs: self (before), source; saved: 0 index; i[0] dim, f[0] alpha */
static nn_status index_add_backward(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    nn_tensor *g = grad_out[0];
    if (n->next[0].node) grad_in[0] = nn_retain(g);
    if (!n->next[1].node) return NN_OK;
    nn_tensor *ix = nn_node_saved(n, 0);
    if (!ix) return nn_last_status();
    /* a 0-dim self: view the gradient as [1] so the gather yields one entry per index */
    nn_tensor *g1 = g->ndim ? nn_retain(g) : nn_reshape(g, 1, (int64_t[]){1});
    nn_tensor *s = g1 ? select_raw(g1, (int)n->i[0], ix) : NULL;
    nn_release(g1);
    if (s && n->f[0] != 1.0) {
        nn_tensor *alpha = nn_scalar_f64(n->f[0]), *m = alpha ? nn_binary(NN_OP_mul, s, alpha) : NULL;
        nn_release(alpha);
        nn_release(s);
        s = m;
    }
    grad_in[1] = s;
    return s ? NN_OK : nn_last_status();
}

static bool has_internal_overlap(const nn_tensor *t)
{
    for (int d = 0; d < t->ndim; d++)
        if (t->strides[d] == 0 && t->shape[d] > 1) return true;
    return false;
}

static nn_status check_index_add(nn_tensor *self, int dim, nn_tensor *index, nn_tensor *source, double alpha)
{
    char b1[160], b2[160];
    int64_t n = nn_numel(index);
    if (index->ndim > 1)
        return nn_error(NN_ERR_INDEX, "index_add_(): Index is supposed to be a vector, but got dim: %d with type: %s and size: %s", index->ndim,
                        nn_dtype_scalar_name(index->dtype), nn_shape_str(b1, index->ndim, index->shape));
    if (!is_index_dtype(index->dtype))
        return nn_error(NN_ERR_DTYPE, "index_add_(): Expected dtype int32/int64 for index but got: %s", nn_dtype_scalar_name(index->dtype));
    if (self->dtype != source->dtype)
        return nn_error(NN_ERR_DTYPE, "index_add_(): self (%s) and source (%s) must have the same scalar type",
                        nn_dtype_scalar_name(self->dtype), nn_dtype_scalar_name(source->dtype));
    if (!(dim == 0 || dim < source->ndim))
        return nn_error(NN_ERR_INDEX, "index_add_(): Indexing dim %d is out of bounds of the source tensor with dim %d", dim, source->ndim);
    int64_t want = source->ndim ? source->shape[dim] : 1;
    if (n != want)
        return nn_error(NN_ERR_INDEX, "index_add_(): Number of indices (%lld) should be equal to source.size(dim): (%lld), for dim: %d",
                        (long long)n, (long long)want, dim);
    /* 0-dim tensors count as [1] */
    int nd = self->ndim ? self->ndim : 1;
    bool ok = nd == (source->ndim ? source->ndim : 1);
    for (int d = 0; ok && d < nd; d++)
        if (d != dim) ok = (self->ndim ? self->shape[d] : 1) == (source->ndim ? source->shape[d] : 1);
    if (!ok)
        return nn_error(NN_ERR_SHAPE, "index_add_(): self %s and source %s must have the same size in every dimension but dim %d",
                        nn_shape_str(b1, self->ndim, self->shape), nn_shape_str(b2, source->ndim, source->shape), dim);
    if (nn_dtype_is_integral(self->dtype) && alpha != trunc(alpha))
        return nn_error(NN_ERR_ARG, "index_add_(): For integral input tensors, argument alpha must not be a floating point number.");
    if (has_internal_overlap(self))
        return nn_error(NN_ERR_ARG, "index_add_(): unsupported operation: more than one element of the written-to tensor refers to a single "
                                    "memory location. Please clone() the tensor before performing the operation.");
    return nn_check_inplace("index_add_", self);
}

nn_status nn_index_add_(nn_tensor *self, int dim, nn_tensor *index, nn_tensor *source, double alpha)
{
    nn_status st = nn_wrap_dim("index_add_", &dim, self->ndim);
    if (st || (st = check_index_add(self, dim, index, source, alpha))) return st;
    if (self->storage->device.type == NN_CUDA && nn_dtype_is_float(self->dtype) && (st = nn_check_deterministic("index_add_cuda_")))
        return st;
    nn_kargs a = {.op = NN_OP_index_add, .out = {self}, .in = {index, source}, .nin = 2, .f = {alpha}, .i = {dim}};
    nn_tensor *pairs[2] = {NULL, NULL};
    if (nn_dtype_is_complex(self->dtype) && self->ndim) { /* complex: the real kernel on (re, im) pairs */
        bool grad = nn_grad_enabled();
        nn_set_grad_enabled(false);
        nn_tensor *sc = nn_to_dtype(source, self->dtype);
        pairs[0] = nn_view_as_real(self), pairs[1] = sc ? nn_view_as_real(sc) : NULL;
        nn_release(sc);
        nn_set_grad_enabled(grad);
        a.out[0] = pairs[0], a.in[1] = pairs[1];
    }
    st = a.out[0] && a.in[1] ? nn_dispatch(&a) : nn_last_status();
    nn_release(pairs[0]), nn_release(pairs[1]);
    if (st) return st;
    nn_bump_version(self);
    nn_tensor *ins[2] = {self, source};
    if (!nn_any_requires_grad(2, ins)) return NN_OK;
    /* rebase self's history: the new node's first edge is self's old grad_fn */
    nn_node *node = nn_node_new("IndexAddBackward0", index_add_backward, 2, ins);
    if (!node) return nn_last_status();
    node->i[0] = dim;
    node->f[0] = alpha;
    nn_node_save(node, 0, index);
    nn_node_set_output(node, self, 0);
    nn_node_release(node);
    return nn_rebase_view_history(self);
}

/* saved: 0 flat indices; i[0] padding_idx */
static nn_status embedding_backward(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    nn_tensor *ix = nn_node_saved(n, 0), *g = grad_out[0];
    if (!ix) return nn_last_status();
    const nn_edge *e = &n->next[0];
    nn_tensor *g2 = nn_reshape(g, 2, (int64_t[]){nn_numel(ix), e->shape[1]});
    nn_tensor *z = g2 ? nn_zeros(2, e->shape, g->dtype, g->storage->device) : NULL;
    nn_status st = z ? nn_index_add_(z, 0, ix, g2, 1.0) : nn_last_status();
    nn_release(g2);
    if (!st && n->i[0] >= 0) { /* the padding row takes no gradient */
        nn_tensor *row = nn_select(z, 0, n->i[0]);
        st = row ? nn_zero_(row) : nn_last_status();
        nn_release(row);
    }
    if (st) {
        nn_release(z);
        return st;
    }
    grad_in[0] = z;
    return NN_OK;
}

nn_tensor *nn_embedding(nn_tensor *weight, nn_tensor *indices, int64_t padding_idx)
{
    char buf[48];
    if (weight->ndim != 2) {
        nn_error(NN_ERR_SHAPE, "embedding: 'weight' must be 2-D");
        return NULL;
    }
    if (!is_index_dtype(indices->dtype)) {
        nn_error(NN_ERR_DTYPE, "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got %s "
                               "instead (while checking arguments for embedding)", nn_type_str(buf, indices));
        return NULL;
    }
    if (padding_idx >= weight->shape[0]) {
        nn_error(NN_ERR_ARG, "embedding: Padding_idx must be within num_embeddings");
        return NULL;
    }
    if (indices->ndim >= NN_MAX_DIMS) {
        nn_error(NN_ERR_SHAPE, "embedding: indices have %d dimensions; the result would have more than %d", indices->ndim, NN_MAX_DIMS);
        return NULL;
    }
    nn_tensor *flat = nn_reshape(indices, 1, (int64_t[]){nn_numel(indices)});
    nn_tensor *rows = flat ? select_raw(weight, 0, flat) : NULL;
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
    shape[indices->ndim] = weight->shape[1];
    nn_tensor *out = rows ? nn_view(rows, indices->ndim + 1, shape) : NULL;
    nn_release(rows);
    if (out && nn_any_requires_grad(1, &weight)) {
        nn_node *node = nn_node_new("EmbeddingBackward0", embedding_backward, 1, &weight);
        if (node) {
            node->i[0] = padding_idx < 0 ? -1 : padding_idx;
            nn_node_save(node, 0, flat);
            nn_node_set_output(node, out, 0);
            nn_node_release(node);
        } else {
            nn_release(out);
            out = NULL;
        }
    }
    nn_release(flat);
    return out;
}
