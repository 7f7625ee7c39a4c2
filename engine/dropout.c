/* nn_dropout (nnfunc.h): F.dropout's fused kernels (ops.def dropout) and its node
 * NativeDropoutBackward0, which keeps the one-byte mask. Recording a graph (double backward),
 * the gradient is g * mask * scale of differentiable ops. */
#define NN_GRAD_INTERNAL
#include "autograd.h"
#include "backend.h"
#include "grad.h"
#include "nnfunc.h"

/* the CPU kernels live in cpu/random.c, reached only weakly from the kernel table */
nn_status nn_cpu_dropout(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_dropout;

static nn_status backward_node(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    nn_tensor *mask = nn_node_saved(n, 0), *g = grad_out[0];
    if (!mask) return nn_last_status();
    double scale = n->f[0];
    if ((nn_backward_creates_graph() && nn_grad_enabled()) || !nn_is_contiguous(g)) {
        gscope s = {0};
        nn_tensor *m = gs_keep(&s, nn_to_dtype(mask, g->dtype));
        grad_in[0] = gs_ret(gs_muls(&s, gs_bin(&s, NN_OP_mul, g, m), scale));
        gs_free(&s);
        return grad_in[0] ? NN_OK : nn_last_status();
    }
    nn_tensor *gi = nn_empty(g->ndim, g->shape, g->dtype, g->storage->device);
    if (!gi) return nn_last_status();
    nn_kargs a = {.op = NN_OP_dropout_backward, .out = {gi}, .in = {g, mask}, .nin = 2, .f = {scale}};
    nn_status st = nn_dispatch(&a);
    if (st) nn_release(gi);
    else grad_in[0] = gi;
    return st;
}

nn_tensor *nn_dropout(nn_tensor *x, double p)
{
    if (!nn_dtype_is_float(x->dtype) || !(p >= 0 && p < 1)) {
        nn_error(NN_ERR_ARG, "dropout: expected a float input and 0 <= p < 1, got %s and p = %g", nn_dtype_name(x->dtype), p);
        return NULL;
    }
    nn_tensor *xc = nn_contiguous(x);
    nn_device dev = x->storage->device;
    nn_tensor *y = xc ? nn_empty(x->ndim, x->shape, x->dtype, dev) : NULL;
    nn_tensor *mask = y ? nn_empty(x->ndim, x->shape, NN_BOOL, dev) : NULL;
    nn_status st = mask ? NN_OK : nn_last_status();
    if (!st) {
        uint64_t offset, seed = nn_philox_reserve(nn_dropout_blocks(nn_numel(x), x->dtype), &offset);
        nn_kargs a = {.op = NN_OP_dropout, .out = {y, mask}, .in = {xc}, .nin = 1, .f = {1 - p}};
        a.i[1] = (int64_t)seed, a.i[2] = (int64_t)offset;
        st = nn_dispatch(&a);
    }
    if (!st && nn_any_requires_grad(1, &xc)) {
        nn_node *n = nn_node_new("NativeDropoutBackward0", backward_node, 1, &xc);
        if (!n) st = nn_last_status();
        else {
            n->f[0] = 1 / (1 - p);
            nn_node_set_output(n, y, 0);
            nn_node_save(n, 0, mask);
            nn_node_release(n);
        }
    }
    nn_release(xc), nn_release(mask);
    if (st) {
        nn_release(y);
        return NULL;
    }
    return y;
}
