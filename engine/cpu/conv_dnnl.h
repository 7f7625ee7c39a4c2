/* CPU float32 and bfloat16 convolutions through oneDNN (conv_dnnl.c), tried first by conv.c's kernels. */
#ifndef NN_CPU_CONV_DNNL_H
#define NN_CPU_CONV_DNNL_H

#include <stdbool.h>

#include "kernels.h"

enum { NN_DNNL_FWD, NN_DNNL_BWD_DATA, NN_DNNL_BWD_WEIGHTS };

/* An operand: element [0,0,0,0], its dtype (float32 or bfloat16), sizes and element strides. */
typedef struct {
    char *p;
    nn_dtype dt;
    int64_t shape[4], strides[4];
} nn_dnnl_operand;

/* Whether oneDNN may take this convolution's tensors (all float32 or all bfloat16, 4-D, a dense bias;
 * torch.backends.mkldnn on). */
bool nn_dnnl_accepts(const nn_tensor *x, const nn_tensor *w, const nn_tensor *b, const nn_tensor *y);

/* dir NN_DNNL_FWD: y = conv(x, w) + b (b may be NULL); NN_DNNL_BWD_DATA: x = the gradient of the
 * input from y (grad_out) and w; NN_DNNL_BWD_WEIGHTS: w = the weight's gradient from x and y
 * (grad_out), which may be float32 for bfloat16 x and y. b has x's dtype. params: the op's
 * i[0..6] (stride h/w, padding h/w, dilation h/w, groups). Runs on this thread alone. Returns false,
 * having written nothing useful, where oneDNN cannot do it or has no fast kernel for it on this CPU
 * (the caller then runs its own kernels). */
bool nn_dnnl_conv2d(int dir, const nn_dnnl_operand *x, const nn_dnnl_operand *w, const void *b, const nn_dnnl_operand *y,
                    const int64_t *params);

#endif
