/* nn_fft_c2c: the DFT along one dim, as the backend's fft_c2c kernel over contiguous rows (the
 * dim moved last and back), and its gradient: y = F x has dL/dx = F^H g, the transform of the
 * other sign, unnormalized like the forward. torch.fft (bindings/lua/torch_fft.lua) builds every
 * transform, norm and real/Hermitian variant from this. */
#define NN_GRAD_INTERNAL
#include "backend.h"
#include "grad.h"

/* The CPU kernel table refers to NN kernels weakly, and a weak reference does not pull a
 * member out of the static engine library; this strong reference does (CPU is always built). */
nn_status nn_cpu_fft_c2c(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_fft_c2c;

static nn_status fft_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    gi[0] = nn_fft_c2c(go[0], (int)n->i[0], !n->i[1]);
    return gi[0] ? NN_OK : nn_last_status();
}

nn_tensor *nn_fft_c2c(nn_tensor *x, int dim, bool inverse)
{
    if (!nn_dtype_is_complex(x->dtype)) {
        nn_error(NN_ERR_DTYPE, "fft_c2c: expected a complex tensor, got %s", nn_dtype_name(x->dtype));
        return NULL;
    }
    if (x->ndim == 0) {
        nn_error(NN_ERR_SHAPE, "fft: a 0-dim tensor has no dim to transform");
        return NULL;
    }
    if (nn_wrap_dim("fft", &dim, x->ndim)) return NULL;
    int last = x->ndim - 1;
    nn_tensor *t = nn_transpose(x, dim, last), *c = t ? nn_contiguous(t) : NULL;
    nn_tensor *out = c ? nn_empty(c->ndim, c->shape, c->dtype, c->storage->device) : NULL, *r = NULL;
    if (out && nn_numel(out)) {
        nn_kargs k = {.op = NN_OP_fft_c2c, .out = {out}, .in = {c}, .nin = 1, .i = {inverse}};
        if (nn_dispatch(&k)) nn_release(out), out = NULL;
    }
    if (out) r = nn_transpose(out, dim, last);
    nn_release(t), nn_release(c), nn_release(out);
    if (r && nn_any_requires_grad(1, &x)) {
        nn_node *n = nn_node_new("FftC2CBackward0", fft_backward, 1, &x);
        if (!n) {
            nn_release(r);
            return NULL;
        }
        n->i[0] = dim, n->i[1] = inverse;
        nn_node_set_output(n, r, 0);
        nn_node_release(n);
    }
    return r;
}
