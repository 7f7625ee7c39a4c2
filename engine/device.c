#include "device.h"

const nn_gpu_api *nn_gpu;

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
