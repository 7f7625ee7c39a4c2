#include "device.h"

const nn_gpu_api *nn_gpu;

static _Thread_local nn_reclaim_fn reclaim;
static _Thread_local bool reclaiming;

void nn_set_reclaim_hook(nn_reclaim_fn fn) { reclaim = fn; }

bool nn_reclaim_memory(void)
{
    if (!reclaim || reclaiming) return false;
    reclaiming = true;
    reclaim();
    reclaiming = false;
    return true;
}

nn_status nn_require_gpu(const char *what)
{
    if (!nn_gpu) return nn_error(NN_ERR_DEVICE, "%s: CUDA is not available (this build has no CUDA backend)", what);
    if (nn_gpu->device_count() == 0) return nn_error(NN_ERR_DEVICE, "%s: CUDA is not available (no GPU or no driver found)", what);
    return NN_OK;
}

nn_device nn_resolve_device(nn_device d)
{
    if (d.type == NN_CUDA && d.index < 0 && nn_gpu) d.index = (int8_t)nn_gpu->current_device();
    return d;
}
