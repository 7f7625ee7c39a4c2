/* Rows of a float dtype to and from double buffers: how the CPU kernels that compute in
 * double (softmax, reductions, batch_norm) read and write operands of any float dtype. */
#include "kernels.h"

void nn_cpu_load_row(double *restrict b, const char *p, int64_t s, int64_t n, nn_dtype dt)
{
    switch (dt) {
    case NN_F32: for (int64_t i = 0; i < n; i++) b[i] = *(const float *)(p + i * s); break;
    case NN_F64: for (int64_t i = 0; i < n; i++) b[i] = *(const double *)(p + i * s); break;
    case NN_F16: for (int64_t i = 0; i < n; i++) b[i] = nn_half_to_float(*(const uint16_t *)(p + i * s)); break;
    case NN_BF16: for (int64_t i = 0; i < n; i++) b[i] = nn_bf16_to_float(*(const uint16_t *)(p + i * s)); break;
    default: for (int64_t i = 0; i < n; i++) b[i] = nn_load_f64(p + i * s, dt); break;
    }
}

void nn_cpu_store_row(char *p, int64_t s, const double *restrict b, int64_t n, nn_dtype dt)
{
    switch (dt) {
    case NN_F32: for (int64_t i = 0; i < n; i++) *(float *)(p + i * s) = (float)b[i]; break;
    case NN_F64: for (int64_t i = 0; i < n; i++) *(double *)(p + i * s) = b[i]; break;
    case NN_F16: for (int64_t i = 0; i < n; i++) *(uint16_t *)(p + i * s) = nn_float_to_half((float)b[i]); break;
    case NN_BF16: for (int64_t i = 0; i < n; i++) *(uint16_t *)(p + i * s) = nn_float_to_bf16((float)b[i]); break;
    default: for (int64_t i = 0; i < n; i++) nn_store_f64(p + i * s, dt, b[i]); break;
    }
}
