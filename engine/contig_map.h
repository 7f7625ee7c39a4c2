/* The frontends' common part of the fused pointwise ops (pointwise_loss.c, activation.c; their
 * kernels: cpu/contig_map.h, cuda/contig_map.cuh): the operands in one dtype and contiguous, a new
 * output of the first's shape on its device, the op dispatched with its kind and parameters. */
#ifndef NN_CONTIG_MAP_H
#define NN_CONTIG_MAP_H

#include "backend.h"

/* op's result over in[0 .. nin) (nin <= 3, checked by the caller) converted to dt, with
 * nn_kargs.i[0] = kind, f = {p, q}; NULL with the error set */
nn_tensor *nn_contig_map_op(nn_op op, int kind, int nin, nn_tensor *const *in, nn_dtype dt, double p, double q);

#endif
