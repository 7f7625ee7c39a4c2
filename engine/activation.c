/* nn_activation (nnfunc.h): the frontend of ops.def's activation. The operands go to the kernel
 * contiguous and in one float dtype; the result has the input's dtype. */
#include "activation_math.h"
#include "backend.h"
#include "contig_map.h"
#include "nnfunc.h"

/* the CPU kernel lives in cpu/activation.c, reached only weakly from the kernel table */
nn_status nn_cpu_activation(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_activation;

nn_tensor *nn_activation(int kind, nn_tensor *x, nn_tensor *g, double p, double q)
{
    if (kind < 0 || kind >= NN_ACT_COUNT) {
        nn_error(NN_ERR_ARG, "activation: unknown activation %d", kind);
        return NULL;
    }
    if (!nn_dtype_is_float(x->dtype) || (g && g->dtype != x->dtype)) {
        nn_error(NN_ERR_DTYPE, "activation: expected a floating point input (and a gradient of its dtype), got %s%s%s",
                 nn_dtype_name(x->dtype), g ? " and " : "", g ? nn_dtype_name(g->dtype) : "");
        return NULL;
    }
    char b1[160], b2[160];
    if (g && !nn_same_shape(g, x)) {
        nn_error(NN_ERR_SHAPE, "activation: expected the gradient of shape %s, got %s", nn_shape_str(b1, x->ndim, x->shape),
                 nn_shape_str(b2, g->ndim, g->shape));
        return NULL;
    }
    nn_tensor *in[2] = {x, g};
    return nn_contig_map_op(NN_OP_activation, kind, g ? 2 : 1, in, x->dtype, p, q);
}
