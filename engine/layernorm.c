/* nn_layer_norm (nnfunc.h): F.layer_norm's fused kernels (ops.def layer_norm) over x seen as
 * [M, E], and its node NativeLayerNormBackward0. Recording a graph (double backward), the
 * gradients come from the normalisation recomputed of differentiable ops. */
#define NN_GRAD_INTERNAL
#include "autograd.h"
#include "backend.h"
#include "grad.h"
#include "nnfunc.h"

/* the CPU kernels live in cpu/layernorm.c, reached only weakly from the kernel table */
nn_status nn_cpu_layer_norm(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_layer_norm;

enum { S_X, S_W, S_MEAN, S_RSTD };

static nn_dtype stats_dtype(nn_dtype dt) { return dt == NN_F64 ? NN_F64 : NN_F32; }

/* t as a 2-D [rows, E] view: on the graph (rows_of), or a bare one for the kernels (flat, t contiguous) */
static nn_tensor *rows_of(nn_tensor *t, int64_t E)
{
    int64_t shape[2] = {E ? nn_numel(t) / E : 0, E};
    return nn_reshape(t, 2, shape);
}

static nn_tensor *flat(nn_tensor *t, int64_t E)
{
    int64_t shape[2] = {E ? nn_numel(t) / E : 0, E}, strides[2] = {E, 1};
    return nn_make_view(t, 2, shape, strides, t->offset);
}

static nn_status composed_backward(nn_node *n, nn_tensor *g, nn_tensor *x, nn_tensor *w, nn_tensor **grad_in)
{
    if (n->next[0].node && !x->requires_grad) return nn_no_double_backward("reads a copy of its input");
    int64_t E = n->i[0];
    gscope s = {0};
    nn_tensor *x2 = gs_keep(&s, rows_of(x, E)), *g2 = gs_keep(&s, rows_of(g, E));
    nn_tensor *y = gs_normalized(&s, x2, 2u, n->f[0]);
    if (w) y = gs_bin(&s, NN_OP_mul, y, w);
    nn_tensor *xs[2] = {n->next[0].node ? x2 : NULL, n->next[1].node ? w : NULL};
    nn_status st = y && g2 ? nn_recorded_grad(y, g2, 2, xs, grad_in) : nn_last_status();
    if (!st && grad_in[0]) { /* back to x's shape */
        nn_tensor *r = nn_reshape(grad_in[0], x->ndim, x->shape);
        nn_release(grad_in[0]);
        if (!(grad_in[0] = r)) st = nn_last_status();
    }
    if (!st && n->next[2].node && !(grad_in[2] = g2 ? nn_sum_dtype(g2, 1u, false, n->next[2].dtype) : NULL)) st = nn_last_status();
    gs_free(&s);
    return st;
}

static nn_status backward_node(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    nn_tensor *x = nn_node_saved(n, S_X), *w = NULL, *mean = x ? nn_node_saved(n, S_MEAN) : NULL,
              *rstd = mean ? nn_node_saved(n, S_RSTD) : NULL;
    if (!rstd || (nn_node_has_saved(n, S_W) && !(w = nn_node_saved(n, S_W)))) return nn_last_status();
    if (nn_backward_creates_graph() && nn_grad_enabled()) return composed_backward(n, grad_out[0], x, w, grad_in);
    int64_t E = n->i[0];
    nn_tensor *gc = nn_to_dtype(grad_out[0], x->dtype), *g = gc ? nn_contiguous(gc) : NULL;
    nn_tensor *g2 = g ? flat(g, E) : NULL, *x2 = g2 ? flat(x, E) : NULL;
    nn_tensor *dx = x2 ? nn_empty(x->ndim, x->shape, x->dtype, x->storage->device) : NULL, *dx2 = dx ? flat(dx, E) : NULL;
    nn_tensor *dw = dx && n->next[1].node ? nn_empty(1, &E, x->dtype, x->storage->device) : NULL;
    nn_tensor *db = dx && n->next[2].node ? nn_empty(1, &E, x->dtype, x->storage->device) : NULL;
    nn_status st = !dx2 || (n->next[1].node && !dw) || (n->next[2].node && !db) ? nn_last_status() : NN_OK;
    if (!st) {
        nn_kargs a = {.op = NN_OP_layer_norm_backward, .out = {dx2, dw, db}, .in = {g2, x2, mean, rstd, w}, .nin = 5};
        st = nn_dispatch(&a);
    }
    if (!st) grad_in[0] = n->next[0].node ? nn_retain(dx) : NULL, grad_in[1] = nn_retain(dw), grad_in[2] = nn_retain(db);
    nn_release(gc), nn_release(g), nn_release(g2), nn_release(x2), nn_release(dx), nn_release(dx2), nn_release(dw), nn_release(db);
    return st;
}

/* weight or bias as a contiguous [E] vector of x's dtype (t itself when it is one) */
static nn_tensor *vector_of(nn_tensor *t, int64_t E, nn_dtype dt)
{
    if (!t) return NULL;
    nn_tensor *v = nn_reshape(t, 1, &E), *c = v ? nn_to_dtype(v, dt) : NULL, *r = c ? nn_contiguous(c) : NULL;
    nn_release(v), nn_release(c);
    return r;
}

nn_tensor *nn_layer_norm(nn_tensor *x, int64_t E, nn_tensor *weight, nn_tensor *bias, double eps)
{
    if (E <= 0 || !nn_dtype_is_float(x->dtype) || nn_numel(x) % E) {
        nn_error(NN_ERR_ARG, "layer_norm: expected a float input whose trailing dims hold %lld elements", (long long)E);
        return NULL;
    }
    nn_tensor *xc = nn_contiguous(x), *w = vector_of(weight, E, x->dtype), *b = vector_of(bias, E, x->dtype);
    nn_tensor *y = xc ? nn_empty(x->ndim, x->shape, x->dtype, x->storage->device) : NULL;
    nn_tensor *x2 = y ? flat(xc, E) : NULL, *y2 = x2 ? flat(y, E) : NULL;
    nn_tensor *mean = y2 ? nn_empty(1, x2->shape, stats_dtype(x->dtype), x->storage->device) : NULL;
    nn_tensor *rstd = mean ? nn_empty(1, x2->shape, stats_dtype(x->dtype), x->storage->device) : NULL;
    nn_status st = !rstd || (weight && !w) || (bias && !b) ? nn_last_status() : NN_OK;
    if (!st) {
        nn_kargs a = {.op = NN_OP_layer_norm, .out = {y2, mean, rstd}, .in = {x2, w, b}, .nin = 3, .f = {eps}};
        st = nn_dispatch(&a);
    }
    nn_tensor *ins[3] = {xc, w, b};
    if (!st && nn_any_requires_grad(3, ins)) {
        nn_node *n = nn_node_new("NativeLayerNormBackward0", backward_node, 3, ins);
        if (!n) st = nn_last_status();
        else {
            n->i[0] = E;
            n->f[0] = eps;
            nn_node_set_output(n, y, 0);
            nn_node_save(n, S_X, xc);
            if (w) nn_node_save(n, S_W, w);
            nn_node_save(n, S_MEAN, mean);
            nn_node_save(n, S_RSTD, rstd);
            nn_node_release(n);
        }
    }
    nn_release(xc), nn_release(w), nn_release(b), nn_release(x2), nn_release(y2), nn_release(mean), nn_release(rstd);
    if (st) {
        nn_release(y);
        return NULL;
    }
    return y;
}
