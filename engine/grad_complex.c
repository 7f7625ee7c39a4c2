/* Backward of view_as_real, view_as_complex and torch.complex. A real view's gradient is
 * the complex gradient's (re, im) pairs and back; torch.complex sends the real part of the
 * gradient to `real` and the imaginary part to `imag`. */
#define NN_GRAD_INTERNAL
#include "grad.h"

static nn_status finish(nn_node *n, nn_tensor *out)
{
    if (!n) return nn_last_status();
    nn_node_set_output(n, out, 0);
    nn_node_release(n);
    return NN_OK;
}

static nn_status view_as_real_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    nn_tensor *c = nn_contiguous(go[0]);
    gi[0] = c ? nn_view_as_complex(c) : NULL;
    nn_release(c);
    return gi[0] ? NN_OK : nn_last_status();
}

nn_status nn_record_view_as_real(nn_tensor *x, nn_tensor *out)
{
    return finish(nn_node_new("ViewAsRealBackward0", view_as_real_backward, 1, &x), out);
}

static nn_status view_as_complex_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    gi[0] = nn_view_as_real(go[0]);
    return gi[0] ? NN_OK : nn_last_status();
}

nn_status nn_record_view_as_complex(nn_tensor *x, nn_tensor *out)
{
    return finish(nn_node_new("ViewAsComplexBackward0", view_as_complex_backward, 1, &x), out);
}

static nn_status complex_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    if ((n->next[0].node != NULL) && !(gi[0] = nn_real(go[0]))) return nn_last_status();
    if ((n->next[1].node != NULL) && !(gi[1] = nn_imag(go[0]))) return nn_last_status();
    return NN_OK;
}

nn_status nn_record_complex(nn_tensor *re, nn_tensor *im, nn_tensor *out)
{
    nn_tensor *ins[2] = {re, im};
    return finish(nn_node_new("ComplexBackward0", complex_backward, 2, ins), out);
}
