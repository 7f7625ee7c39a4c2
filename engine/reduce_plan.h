/* The geometry of a reduction over a dim mask, shared by the CPU and CUDA reduction kernels: the
 * input's dims split into kept and reduced groups (size-1 dims dropped), each sorted by input
 * stride (innermost last) and coalesced where the strides line up in every operand. Strides are
 * in bytes. out has the keepdim shape; out2 (max_dim/min_dim's indices) may be NULL. */
#ifndef NN_REDUCE_PLAN_H
#define NN_REDUCE_PLAN_H

#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nn_reduce_plan {
    int nk, nr;
    int64_t ks[NN_MAX_DIMS], kin[NN_MAX_DIMS], kout[NN_MAX_DIMS], kout2[NN_MAX_DIMS]; /* kept: sizes, byte strides */
    int64_t rs[NN_MAX_DIMS], rin[NN_MAX_DIMS];                                       /* reduced */
    int64_t nred; /* the reduced positions per output */
} nn_reduce_plan;

/* mask 0 reduces every dim */
void nn_reduce_plan_init(nn_reduce_plan *p, const nn_tensor *x, const nn_tensor *out, const nn_tensor *out2, uint32_t mask);

#ifdef __cplusplus
}
#endif

#endif
