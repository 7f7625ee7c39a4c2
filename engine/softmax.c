/* softmax / log_softmax frontends, their backward frontends and autograd nodes. */
#include <string.h>

#include "autocast.h"
#include "autograd.h"
#include "backend.h"
#include "nnfunc.h"

/* The CPU kernel table refers to NN kernels weakly, and a weak reference does not pull a
 * member out of the static engine library; this strong reference does (CPU is always built). */
nn_status nn_cpu_softmax(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_softmax;

/* The backward made of differentiable ops, for a pass that records a graph (double backward):
 * softmax y * (g - sum(g * y)), log_softmax g - exp(y) * sum(g), sums over dim. */
static nn_tensor *composed_backward(nn_op op, nn_tensor *grad_out, nn_tensor *y, int dim)
{
    nn_tensor *g = nn_to_dtype(grad_out, y->dtype), *r = NULL;
    if (!g) return NULL;
    if (op == NN_OP_log_softmax) {
        nn_tensor *s = nn_reduce(NN_OP_sum, g, 1u << dim, true), *e = s ? nn_unary(NN_OP_exp, y) : NULL;
        nn_tensor *es = e ? nn_binary(NN_OP_mul, e, s) : NULL;
        r = es ? nn_binary(NN_OP_sub, g, es) : NULL;
        nn_release(s), nn_release(e), nn_release(es);
    } else {
        nn_tensor *gy = nn_binary(NN_OP_mul, g, y), *s = gy ? nn_reduce(NN_OP_sum, gy, 1u << dim, true) : NULL;
        nn_tensor *d = s ? nn_binary(NN_OP_sub, g, s) : NULL;
        r = d ? nn_binary(NN_OP_mul, y, d) : NULL;
        nn_release(gy), nn_release(s), nn_release(d);
    }
    nn_release(g);
    return r;
}

static nn_status backward_node(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    nn_tensor *y = nn_node_saved(n, 0);
    if (!y) return nn_last_status();
    int dim = (int)n->i[0];
    if (nn_backward_creates_graph()) grad_in[0] = composed_backward((nn_op)n->i[1], grad_out[0], y, dim);
    else grad_in[0] = n->i[1] == NN_OP_log_softmax ? nn_log_softmax_backward(grad_out[0], y, dim) : nn_softmax_backward(grad_out[0], y, dim);
    return grad_in[0] ? NN_OK : nn_last_status();
}

static nn_tensor *forward(nn_op op, nn_tensor *x, int dim, nn_dtype dt)
{
    const char *fn = nn_op_name(op);
    if (nn_wrap_dim(fn, &dim, x->ndim)) return NULL;
    if (nn_autocast_on()) dt = nn_autocast_opt_dtype(x, dt); /* autocast: read x as float32 */
    nn_dtype odt = dt == NN_DTYPE_NONE ? x->dtype : dt;
    if (!nn_dtype_is_float(odt)) {
        bool last = x->ndim == 0 || dim == x->ndim - 1;
        nn_error(NN_ERR_DTYPE, "\"%s_%skernel_impl\" not implemented for '%s'", fn, last ? "lastdim_" : "", nn_dtype_scalar_name(odt));
        return NULL;
    }
    nn_tensor *y = nn_empty(x->ndim, x->shape, odt, x->storage->device);
    if (!y) return NULL;
    nn_kargs a = {.op = op, .out = {y}, .in = {x}, .nin = 1, .i = {dim}};
    if (nn_dispatch(&a)) {
        nn_release(y);
        return NULL;
    }
    if (nn_any_requires_grad(1, &x)) {
        nn_node *n = nn_node_new(nn_op_backward_name(op), backward_node, 1, &x);
        if (!n) {
            nn_release(y);
            return NULL;
        }
        n->i[0] = dim;
        n->i[1] = op;
        nn_node_set_output(n, y, 0);
        nn_node_save(n, 0, y);
        nn_node_release(n);
    }
    return y;
}

nn_tensor *nn_softmax(nn_tensor *x, int dim, nn_dtype dt) { return forward(NN_OP_softmax, x, dim, dt); }
nn_tensor *nn_log_softmax(nn_tensor *x, int dim, nn_dtype dt) { return forward(NN_OP_log_softmax, x, dim, dt); }

static nn_tensor *backward(nn_op op, nn_tensor *grad_out, nn_tensor *y, int dim)
{
    const char *fn = nn_op_name(op);
    char b1[160], b2[160];
    if (nn_wrap_dim(fn, &dim, y->ndim)) return NULL;
    if (grad_out->ndim != y->ndim || memcmp(grad_out->shape, y->shape, sizeof(int64_t) * (size_t)y->ndim)) {
        nn_error(NN_ERR_SHAPE, "%s: grad_output %s and output %s must have the same shape", fn,
                 nn_shape_str(b1, grad_out->ndim, grad_out->shape), nn_shape_str(b2, y->ndim, y->shape));
        return NULL;
    }
    if (!nn_dtype_is_float(y->dtype)) {
        nn_error(NN_ERR_DTYPE, "%s: output must be floating point, got %s", fn, nn_dtype_name(y->dtype));
        return NULL;
    }
    nn_tensor *g = nn_to_dtype(grad_out, y->dtype);
    if (!g) return NULL;
    nn_tensor *gi = nn_empty(y->ndim, y->shape, y->dtype, y->storage->device);
    nn_kargs a = {.op = op, .out = {gi}, .in = {g, y}, .nin = 2, .i = {dim}};
    if (gi && nn_dispatch(&a)) {
        nn_release(gi);
        gi = NULL;
    }
    nn_release(g);
    return gi;
}

nn_tensor *nn_softmax_backward(nn_tensor *grad_out, nn_tensor *y, int dim) { return backward(NN_OP_softmax_backward, grad_out, y, dim); }
nn_tensor *nn_log_softmax_backward(nn_tensor *grad_out, nn_tensor *y, int dim)
{
    return backward(NN_OP_log_softmax_backward, grad_out, y, dim);
}
