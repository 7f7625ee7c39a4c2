#include <stdio.h>
#include <string.h>

#include "autograd.h"
#include "backend.h"
#include "complex_ops.h"
#include "profiler.h"

static const char *const op_names[] = {
#define X(name, kind, autocast, backward) #name,
#include "ops.def"
#undef X
};
static const nn_op_kind op_kinds[] = {
#define X(name, kind, autocast, backward) NN_KIND_##kind,
#include "ops.def"
#undef X
};
static const nn_autocast_kind op_autocast[] = {
#define X(name, kind, autocast, backward) NN_AUTOCAST_##autocast,
#include "ops.def"
#undef X
};
static const char *const op_backward[] = {
#define X(name, kind, autocast, backward) backward,
#include "ops.def"
#undef X
};

const char *nn_op_name(nn_op op) { return op >= 0 && op < NN_OP_COUNT ? op_names[op] : "?"; }
nn_op_kind nn_op_kind_of(nn_op op) { return op_kinds[op]; }
nn_autocast_kind nn_op_autocast(nn_op op) { return op_autocast[op]; }
const char *nn_op_backward_name(nn_op op) { return op_backward[op]; }

static const nn_backend *backends[NN_NDEVTYPES] = {[NN_CPU] = &nn_cpu_backend, [NN_META] = &nn_meta_backend};

void nn_register_backend(nn_devtype type, const nn_backend *b) { backends[type] = b; }

const nn_backend *nn_backend_for(nn_device d)
{
    return d.type >= 0 && d.type < NN_NDEVTYPES ? backends[d.type] : NULL;
}

nn_status nn_not_implemented(const nn_kargs *a, nn_dtype dt)
{
    char d[16];
    return nn_error(NN_ERR_NOTIMPL, "%s is not implemented for %s/%s", nn_op_name(a->op),
                    nn_device_str(d, a->out[0]->storage->device), nn_dtype_name(dt));
}

/* A backward kernel (conv2d_backward_input, batch_norm_backward, ...) records no graph: in a
 * create_graph pass, an input that requires grad would lose its derivative without a word. */
static nn_status check_double_backward(const nn_kargs *a)
{
    if (!strstr(nn_op_name(a->op), "_backward")) return NN_OK;
    char what[96];
    snprintf(what, sizeof what, "runs %s, which has no derivative here", nn_op_name(a->op));
    for (int i = 0; i < a->nin; i++)
        if (a->in[i] && a->in[i]->requires_grad) return nn_no_double_backward(what);
    return NN_OK;
}

nn_status nn_dispatch(const nn_kargs *a)
{
    if (nn_backward_creates_graph() && nn_grad_enabled()) {
        nn_status st = check_double_backward(a);
        if (st) return st;
    }
    nn_device dev = a->out[0]->storage->device;
    char d1[16], d2[16];
    for (int i = 0; i < a->nin; i++) {
        if (!a->in[i]) continue; /* an optional operand left out */
        nn_device di = a->in[i]->storage->device;
        /* 0-dim CPU tensors (Lua numbers) may join any device's op, as in PyTorch */
        if (!nn_device_eq(di, dev) && !(di.type == NN_CPU && a->in[i]->ndim == 0))
            return nn_error(NN_ERR_DEVICE,
                            "%s: expected all tensors to be on the same device, but found at least two devices, %s and %s",
                            nn_op_name(a->op), nn_device_str(d1, dev), nn_device_str(d2, di));
    }
    const nn_backend *b = nn_backend_for(dev);
    if (!b) return nn_error(NN_ERR_DEVICE, "%s: device %s is not available", nn_op_name(a->op), nn_device_str(d1, dev));
    nn_kernel k = b->kernels[a->op];
    if (!k) return nn_not_implemented(a, a->out[0]->dtype);
    nn_status st = nn_complex_guard(a);
    if (st) return st;
    return nn_profiling ? nn_profiler_run(a, k) : k(a);
}
