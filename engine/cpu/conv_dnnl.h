/* CPU float32 convolutions through oneDNN (conv_dnnl.c), tried first by conv.c's kernels. */
#ifndef NN_CPU_CONV_DNNL_H
#define NN_CPU_CONV_DNNL_H

#include <stdbool.h>

#include "kernels.h"

enum { NN_DNNL_FWD, NN_DNNL_BWD_DATA, NN_DNNL_BWD_WEIGHTS };

/* A float32 operand: element [0,0,0,0], sizes and element strides. */
typedef struct {
    float *p;
    int64_t shape[4], strides[4];
} nn_dnnl_operand;

/* Whether oneDNN may take this convolution's tensors (float32, 4-D, a dense bias; torch.backends.mkldnn on). */
bool nn_dnnl_accepts(const nn_tensor *x, const nn_tensor *w, const nn_tensor *b, const nn_tensor *y);

/* dir NN_DNNL_FWD: y = conv(x, w) + b (b may be NULL); NN_DNNL_BWD_DATA: x = the gradient of the
 * input from y (grad_out) and w; NN_DNNL_BWD_WEIGHTS: w = the weight's gradient from x and y
 * (grad_out). params: the op's i[0..6] (stride h/w, padding h/w, dilation h/w, groups). Runs on
 * this thread alone. Returns false, having written nothing useful, where oneDNN cannot do it (the
 * caller then runs its own kernels). */
bool nn_dnnl_conv2d(int dir, const nn_dnnl_operand *x, const nn_dnnl_operand *w, const float *b, const nn_dnnl_operand *y,
                    const int64_t *params);

#endif
