/* The meta device: tensors with shape, dtype and strides and no data. Frontends shape every
 * output before a kernel runs, so a kernel table of no-ops gives every op its meta result; what
 * would read data (a copy out, item, tolist, printing values) is an error. */
#include "backend.h"

static char no_data[64]; /* every meta storage points here; nothing reads or writes it */

static void *meta_alloc(int device_index, size_t nbytes, bool pinned)
{
    (void)device_index, (void)nbytes, (void)pinned;
    return no_data;
}

static void meta_free(int device_index, void *p, size_t nbytes, bool pinned) { (void)device_index, (void)p, (void)nbytes, (void)pinned; }

/* into meta: nothing to move; out of meta: no data */
static nn_status meta_copy(void *dst, nn_device dst_dev, const void *src, nn_device src_dev, size_t n)
{
    (void)dst, (void)src, (void)src_dev, (void)n;
    if (dst_dev.type == NN_META) return NN_OK;
    return nn_meta_no_data("copy");
}

static nn_status meta_synchronize(int device_index)
{
    (void)device_index;
    return NN_OK;
}

static nn_status meta_kernel(const nn_kargs *a)
{
    (void)a;
    return NN_OK;
}

nn_status nn_meta_no_data(const char *what)
{
    return nn_error(NN_ERR_DEVICE, "%s: Cannot copy out of meta tensor; no data! Please use torch.nn.Module.to_empty() "
                    "instead of torch.nn.Module.to() when moving module from meta to a different device.", what);
}

const nn_backend nn_meta_backend = {
    .name = "meta",
    .alloc = meta_alloc,
    .free = meta_free,
    .copy = meta_copy,
    .synchronize = meta_synchronize,
    .kernels = {
#define X(name, kind, autocast, backward) [NN_OP_##name] = meta_kernel,
#include "ops.def"
#undef X
    },
};
