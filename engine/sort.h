/* Sorting along a dim (engine/sort.c): the permutation that sorts, from which
 * values come by gather (so autograd flows through gather's backward). */
#ifndef NN_SORT_H
#define NN_SORT_H

#include <stdbool.h>

#include "tensor.h"

/* int64 tensor of x's shape and device: along dim, the positions of x's
 * elements in ascending (or descending) order. Stable in both directions
 * (equal elements keep their order); NaN counts as larger than every number.
 * A 0-dim x gives a 0-dim 0. A CUDA x is copied to the CPU, sorted there and
 * the indices copied back: this synchronises (as PyTorch's nonzero does). */
nn_tensor *nn_argsort(nn_tensor *x, int dim, bool descending);

#endif
