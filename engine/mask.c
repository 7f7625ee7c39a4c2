/* nn_mask_positions: the positions of a mask's true elements, computed on the host. */
#include <string.h>

#include "mask.h"
#include "tracer.h"

/* Walk host tensor m (bool/uint8) in row-major order; write the positions of nonzero bytes
 * to out (when not NULL) and return their count. */
static int64_t scan(const nn_tensor *m, int64_t *out)
{
    int64_t n = nn_numel(m), count = 0, idx[NN_MAX_DIMS] = {0};
    const uint8_t *p = nn_data(m);
    for (int64_t k = 0; k < n; k++) {
        if (*p) {
            if (out) out[count] = k;
            count++;
        }
        for (int d = m->ndim - 1; d >= 0; d--) { /* advance the multi-index */
            p += m->strides[d];
            if (++idx[d] < m->shape[d]) break;
            p -= m->strides[d] * m->shape[d];
            idx[d] = 0;
        }
    }
    return count;
}

nn_tensor *nn_mask_positions(nn_tensor *mask)
{
    if (mask->dtype != NN_BOOL && mask->dtype != NN_U8) {
        nn_error(NN_ERR_DTYPE, "mask_positions: expected a bool or uint8 mask, got %s", nn_dtype_name(mask->dtype));
        return NULL;
    }
    if (nn_tracing) { /* the count and positions would be frozen into the trace as constants */
        nn_error(NN_ERR_RUNTIME, "indexing with a bool mask (x[mask], masked_select, nonzero, unique) depends on the values "
                                 "and cannot be traced for torch.onnx.export: use torch.where or masked_fill instead");
        return NULL;
    }
    nn_device dev = mask->storage->device;
    nn_tensor *host = nn_to_device(mask, NN_DEVICE_CPU); /* a GPU mask: copy and wait */
    if (!host) return NULL;
    int64_t count = scan(host, NULL);
    nn_tensor *pos = nn_empty(1, (int64_t[]){count}, NN_I64, NN_DEVICE_CPU);
    if (pos) scan(host, nn_data(pos));
    nn_release(host);
    if (!pos || dev.type == NN_CPU) return pos;
    nn_tensor *out = nn_to_device(pos, dev);
    nn_release(pos);
    return out;
}
