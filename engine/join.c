/* cat and stack: PyTorch's checks, then each input is copied (with a dtype
 * cast where needed) into its slice of the output by the copy kernel. */
#include <stdlib.h>

#include "backend.h"
#include "grad.h"

static nn_tensor *cat(nn_tensor *const *ts, int n, int *dim);

nn_tensor *nn_cat(nn_tensor *const *ts, int n, int dim)
{
    nn_tensor *out = cat(ts, n, &dim);
    if (out && nn_any_requires_grad(n, ts) && nn_record_cat(ts, n, dim, out)) {
        nn_release(out);
        return NULL;
    }
    return out;
}

/* *dim comes back wrapped */
static nn_tensor *cat(nn_tensor *const *ts, int n, int *dimp)
{
    int dim = *dimp;
    char b2[16];
    if (n <= 0) {
        nn_error(NN_ERR_ARG, "cat(): expected a non-empty list of Tensors");
        return NULL;
    }
    /* legacy rule: 1-D empty tensors are skipped, whatever the others' shape */
    const nn_tensor *ref = NULL;
    nn_dtype dt = ts[0]->dtype;
    for (int i = 0; i < n; i++) {
        if (ts[i]->ndim == 0) {
            nn_error(NN_ERR_ARG, "cat(): zero-dimensional tensor (at position %d) cannot be concatenated", i);
            return NULL;
        }
        dt = nn_promote_types(dt, ts[i]->dtype);
        if (!ref && !(ts[i]->ndim == 1 && ts[i]->shape[0] == 0)) ref = ts[i];
    }
    nn_device dev = ts[0]->storage->device;
    for (int i = 1; i < n; i++)
        if (!nn_device_eq(ts[i]->storage->device, dev)) {
            char d1[16];
            nn_error(NN_ERR_DEVICE, "cat(): expected all tensors to be on the same device, but found at least two devices, %s and %s",
                     nn_device_str(d1, dev), nn_device_str(b2, ts[i]->storage->device));
            return NULL;
        }
    if (!ref) { /* every input skipped: an empty 1-D result */
        int64_t zero = 0;
        return nn_empty(1, &zero, dt, dev);
    }
    int nd = ref->ndim;
    if (nn_wrap_dim("cat()", &dim, nd)) return NULL;
    *dimp = dim;
    int64_t shape[NN_MAX_DIMS];
    for (int d = 0; d < nd; d++) shape[d] = ref->shape[d];
    shape[dim] = 0;
    for (int i = 0; i < n; i++) {
        const nn_tensor *t = ts[i];
        if (t->ndim == 1 && t->shape[0] == 0) continue;
        if (t->ndim != nd) {
            nn_error(NN_ERR_SHAPE, "cat(): Tensors must have same number of dimensions: got %d and %d", nd, t->ndim);
            return NULL;
        }
        for (int d = 0; d < nd; d++)
            if (d != dim && t->shape[d] != ref->shape[d]) {
                nn_error(NN_ERR_SHAPE,
                         "cat(): Sizes of tensors must match except in dimension %d. Expected size %lld but got size %lld for tensor number %d in the list.",
                         dim, (long long)ref->shape[d], (long long)t->shape[d], i);
                return NULL;
            }
        shape[dim] += t->shape[dim];
    }
    nn_tensor *out = nn_empty(nd, shape, dt, dev);
    if (!out) return NULL;
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        nn_tensor *t = ts[i];
        if ((t->ndim == 1 && t->shape[0] == 0) || t->shape[dim] == 0) continue;
        int64_t vshape[NN_MAX_DIMS];
        for (int d = 0; d < nd; d++) vshape[d] = out->shape[d];
        vshape[dim] = t->shape[dim];
        nn_tensor *slice = nn_make_view(out, nd, vshape, out->strides, out->offset + off * out->strides[dim]);
        if (!slice) {
            nn_release(out);
            return NULL;
        }
        nn_kargs a = {.op = NN_OP_copy, .out = {slice}, .in = {t}, .nin = 1};
        nn_status s = nn_dispatch(&a);
        nn_release(slice);
        if (s) {
            nn_release(out);
            return NULL;
        }
        off += t->shape[dim];
    }
    return out;
}

nn_tensor *nn_stack(nn_tensor *const *ts, int n, int dim)
{
    char b1[160], b2[160];
    if (n <= 0) {
        nn_error(NN_ERR_ARG, "stack(): expects a non-empty TensorList");
        return NULL;
    }
    int nd = ts[0]->ndim;
    if (nd + 1 > NN_MAX_DIMS) {
        nn_error(NN_ERR_ARG, "stack(): tensors have at most %d dimensions", NN_MAX_DIMS);
        return NULL;
    }
    if (nn_wrap_dim("stack()", &dim, nd + 1)) return NULL;
    for (int i = 1; i < n; i++) {
        bool same = ts[i]->ndim == nd;
        for (int d = 0; same && d < nd; d++) same = ts[i]->shape[d] == ts[0]->shape[d];
        if (!same) {
            nn_error(NN_ERR_SHAPE, "stack(): expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d",
                     nn_shape_str(b1, nd, ts[0]->shape), nn_shape_str(b2, ts[i]->ndim, ts[i]->shape), i);
            return NULL;
        }
    }
    /* unsqueeze each input at dim (a view), then cat along it */
    nn_tensor **views = malloc((size_t)n * sizeof *views);
    nn_tensor *out = NULL;
    int made = 0;
    if (!views) {
        nn_error(NN_ERR_NOMEM, "stack(): out of memory");
        return NULL;
    }
    for (; made < n; made++) {
        const nn_tensor *t = ts[made];
        int64_t shape[NN_MAX_DIMS], strides[NN_MAX_DIMS];
        for (int d = 0, s = 0; d <= nd; d++) {
            if (d == dim) {
                shape[d] = 1;
                strides[d] = d < nd ? t->shape[d] * t->strides[d] : 1;
            } else {
                shape[d] = t->shape[s];
                strides[d] = t->strides[s++];
            }
        }
        if (!(views[made] = nn_make_view(t, nd + 1, shape, strides, t->offset))) goto done;
    }
    out = cat(views, n, &dim);
    if (out && nn_any_requires_grad(n, ts) && nn_record_stack(ts, n, dim, out)) {
        nn_release(out);
        out = NULL;
    }
done:
    for (int i = 0; i < made; i++) nn_release(views[i]);
    free(views);
    return out;
}
