/* Broadcasting of two shapes (numpy's rules, as PyTorch applies them). */
#include "ops.h"

nn_status nn_broadcast_shapes(const char *fn, int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out)
{
    int n = na > nb ? na : nb;
    int64_t r[NN_MAX_DIMS]; /* out may alias a or b */
    for (int i = n - 1; i >= 0; i--) { /* aligned at their last dims; PyTorch reports the last mismatch first */
        int ia = i - (n - na), ib = i - (n - nb);
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa == sb || sb == 1) r[i] = sa;
        else if (sa == 1) r[i] = sb;
        else
            return nn_error(NN_ERR_SHAPE,
                            "%s%sthe size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton dimension %d",
                            fn ? fn : "", fn ? ": " : "", (long long)sa, (long long)sb, i);
    }
    for (int i = 0; i < n; i++) out[i] = r[i];
    *nout = n;
    return NN_OK;
}
