/* The torch.backends switches the CUDA kernels read (see cuda_flags.h). */
#include <stdio.h>

#include "cuda_flags.h"

bool nn_cuda_allow_tf32 = false;
bool nn_cudnn_allow_tf32 = true;
bool nn_cudnn_benchmark = false;
bool nn_deterministic_algorithms = false;
bool nn_deterministic_warn_only = false;
bool nn_cudnn_deterministic = false;
bool nn_cudnn_batch_norm = true;
long nn_cudnn_batch_norm_declined = 0;

bool nn_cuda_get_matmul_allow_tf32(void) { return nn_cuda_allow_tf32; }
void nn_cuda_set_matmul_allow_tf32(bool on) { nn_cuda_allow_tf32 = on; }
bool nn_cudnn_get_allow_tf32(void) { return nn_cudnn_allow_tf32; }
void nn_cudnn_set_allow_tf32(bool on) { nn_cudnn_allow_tf32 = on; }
bool nn_cudnn_get_benchmark(void) { return nn_cudnn_benchmark; }
void nn_cudnn_set_benchmark(bool on) { nn_cudnn_benchmark = on; }

nn_status nn_check_deterministic(const char *op)
{
    if (!nn_deterministic_algorithms) return NN_OK;
    if (!nn_deterministic_warn_only)
        return nn_error(NN_ERR_RUNTIME, "%s does not have a deterministic implementation, but you set 'torch.use_deterministic_algorithms(True)'. "
                                        "You can turn off determinism just for this operation, or you can use the 'warn_only=True' option, "
                                        "if that's acceptable for your application.", op);
    fprintf(stderr, "UserWarning: %s does not have a deterministic implementation, but you set "
                    "'torch.use_deterministic_algorithms(True, warn_only=True)'.\n", op);
    return NN_OK;
}

bool nn_cudnn_nhwc(nn_dtype dt) { return dt == NN_F16 || dt == NN_BF16 || (dt == NN_F32 && nn_cudnn_allow_tf32); }

bool nn_conv_space_to_depth(nn_dtype dt, int64_t C, int64_t groups, const int64_t stride[2], const int64_t dilation[2], int64_t kh,
                            int64_t kw)
{
    int64_t s2 = stride[0] * stride[1];
    return nn_cudnn_nhwc(dt) && groups == 1 && C <= 4 && dilation[0] == 1 && dilation[1] == 1 && stride[0] >= 2 && stride[1] >= 2 &&
           C * s2 <= 64 && (s2 >= 16 || dt == NN_F32) && kh >= stride[0] && kw >= stride[1];
}
