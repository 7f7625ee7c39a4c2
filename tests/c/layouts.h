/* The input layouts the C tests cover: a fresh base tensor seen with the wanted shape as
 * contiguous, transposed (dims reversed), narrowed (offset inside a base 2 larger in each
 * dim) or expanded (stride 0 in dim 0). A test fills the base with its own values:
 *   nn_tensor *base = layout_base(kind, nd, shape, dt);  ...fill base...
 *   return layout_view(base, kind, nd, shape);            (takes base's reference) */
#ifndef NN_TEST_LAYOUTS_H
#define NN_TEST_LAYOUTS_H

#include "tensor.h"

enum { CONTIG, TRANSPOSED, NARROWED, EXPANDED, NKINDS };

static inline nn_tensor *layout_base(int kind, int nd, const int64_t *shape, nn_dtype dt)
{
    int64_t bshape[NN_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++) bshape[d] = kind == TRANSPOSED ? shape[nd - 1 - d] : kind == NARROWED ? shape[d] + 2 : shape[d];
    if (kind == EXPANDED && nd > 0) bshape[0] = 1;
    return nn_empty(nd, bshape, dt, NN_DEVICE_CPU);
}

static inline nn_tensor *layout_view(nn_tensor *base, int kind, int nd, const int64_t *shape)
{
    if (!base) return NULL;
    int64_t bstr[NN_MAX_DIMS] = {0}, strides[NN_MAX_DIMS] = {0}, offset = 0;
    nn_contiguous_strides(nd, base->shape, bstr);
    for (int d = 0; d < nd; d++) {
        strides[d] = kind == TRANSPOSED ? bstr[nd - 1 - d] : bstr[d];
        if (kind == NARROWED) offset += bstr[d];
    }
    if (kind == EXPANDED && nd > 0) strides[0] = 0;
    nn_tensor *v = nn_make_view(base, nd, shape, strides, offset);
    nn_release(base);
    return v;
}

#endif
