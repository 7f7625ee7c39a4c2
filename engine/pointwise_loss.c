/* nn_pointwise_loss (nnfunc.h): the frontend of ops.def's pointwise_loss. The operands go to the
 * kernel contiguous and in one dtype; autocast runs the op in float32 (PyTorch's policy for
 * these losses). */
#include "autocast.h"
#include "backend.h"
#include "contig_map.h"
#include "nnfunc.h"
#include "pointwise_loss_math.h"

/* the CPU kernel lives in cpu/pointwise_loss.c, reached only weakly from the kernel table */
nn_status nn_cpu_pointwise_loss(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_pointwise_loss;

static const char *const kind_names[NN_PLOSS_COUNT] = {"mse_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                                                      "binary_cross_entropy_with_logits"};

static nn_status check(int kind, nn_tensor *const *in, int n)
{
    if (kind < 0 || kind >= NN_PLOSS_COUNT) return nn_error(NN_ERR_ARG, "pointwise_loss: unknown loss %d", kind);
    const char *fn = kind_names[kind];
    for (int k = 0; k < n; k++)
        if (!nn_dtype_is_float(in[k]->dtype))
            return nn_error(NN_ERR_DTYPE, "%s: expected floating point tensors, got %s", fn, nn_dtype_name(in[k]->dtype));
    char b1[160], b2[160];
    nn_tensor *x = in[0];
    for (int k = 1; k < n; k++) {
        nn_tensor *o = in[k];
        if (!nn_same_shape(o, x) && !(k == 2 && o->ndim == 0))
            return nn_error(NN_ERR_SHAPE, "%s: expected %s of shape %s, got %s", fn, k == 1 ? "target" : "the gradient",
                            nn_shape_str(b1, x->ndim, x->shape), nn_shape_str(b2, o->ndim, o->shape));
    }
    return NN_OK;
}

nn_tensor *nn_pointwise_loss(int kind, nn_tensor *x, nn_tensor *t, nn_tensor *g, double p, double s)
{
    nn_tensor *in[3] = {x, t, g};
    int n = g ? 3 : 2;
    if (check(kind, in, n)) return NULL;
    nn_tensor *cast[3] = {NULL, NULL, NULL};
    if (nn_autocast_on()) {
        if (nn_autocast_inputs(NN_OP_pointwise_loss, n, in, cast)) return NULL;
        for (int k = 0; k < n; k++)
            if (cast[k]) in[k] = cast[k];
    }
    nn_dtype dt = in[0]->dtype;
    for (int k = 1; k < n; k++) dt = nn_promote_types(dt, in[k]->dtype);
    nn_tensor *out = nn_contig_map_op(NN_OP_pointwise_loss, kind, n, in, dt, p, s);
    nn_autocast_release(n, cast);
    return out;
}
