/* Positions of a boolean mask's true elements (engine/mask.c): what x[mask] needs.
 * Same conventions as ops.h: a new reference or NULL with the error set. */
#ifndef NN_MASK_H
#define NN_MASK_H

#include "ops.h"

/* The row-major positions (0 .. numel-1) of mask's true (nonzero) elements, in order, as a
 * 1-D int64 tensor on mask's device. mask: bool or uint8, any shape (0-dim: [0] or []), any
 * strides. The count decides the result's size, so a mask on a GPU is copied to the host
 * first: that waits for the device (PyTorch's nonzero syncs the same way). No autograd. */
nn_tensor *nn_mask_positions(nn_tensor *mask);

#endif
