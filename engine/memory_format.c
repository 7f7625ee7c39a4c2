/* Memory formats: channels-last strides, checks and conversions (memory_format.h). */
#include "memory_format.h"
#include "backend.h"
#include "grad.h"

const char *nn_memory_format_name(nn_memory_format f)
{
    switch (f) {
    case NN_CONTIGUOUS_FORMAT: return "torch.contiguous_format";
    case NN_CHANNELS_LAST: return "torch.channels_last";
    case NN_CHANNELS_LAST_3D: return "torch.channels_last_3d";
    case NN_PRESERVE_FORMAT: return "torch.preserve_format";
    }
    return "?";
}

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

/* the memory order of the dims, innermost first, for a channels-last format of rank nd */
static void cl_order(int nd, int *order)
{
    order[0] = 1; /* C */
    for (int k = 1; k < nd - 1; k++) order[k] = nd - k; /* W, H (, D) */
    order[nd - 1] = 0; /* N */
}

static int cl_rank(nn_memory_format f) { return f == NN_CHANNELS_LAST ? 4 : f == NN_CHANNELS_LAST_3D ? 5 : 0; }

nn_status nn_format_strides(const char *fn, int ndim, const int64_t *shape, nn_memory_format f, int64_t *strides)
{
    if (f == NN_PRESERVE_FORMAT) return nn_error(NN_ERR_ARG, "%s: preserve memory format is unsupported by the contiguous operator", fn);
    if (f == NN_CONTIGUOUS_FORMAT) {
        nn_contiguous_strides(ndim, shape, strides);
        return NN_OK;
    }
    int nd = cl_rank(f);
    if (ndim != nd)
        return nn_error(NN_ERR_ARG, "%s: required rank %d tensor to use %s format", fn, nd, f == NN_CHANNELS_LAST ? "channels_last" : "channels_last_3d");
    int order[5];
    cl_order(nd, order);
    int64_t s = 1;
    for (int k = 0; k < nd; k++) {
        strides[order[k]] = s;
        s *= max1(shape[order[k]]);
    }
    return NN_OK;
}

bool nn_is_contiguous_as(const nn_tensor *t, nn_memory_format f)
{
    if (f == NN_CONTIGUOUS_FORMAT || f == NN_PRESERVE_FORMAT) return nn_is_contiguous(t);
    int nd = cl_rank(f), order[5];
    if (t->ndim != nd) return false;
    if (nn_numel(t) == 0) return true;
    cl_order(nd, order);
    int64_t expect = 1;
    for (int k = 0; k < nd; k++) {
        int d = order[k];
        if (t->shape[d] == 1) continue;
        if (t->strides[d] != expect) return false;
        expect *= t->shape[d];
    }
    return true;
}

nn_tensor *nn_empty_format(int ndim, const int64_t *shape, nn_memory_format f, nn_dtype dt, nn_device dev)
{
    int64_t strides[NN_MAX_DIMS];
    if (nn_format_strides("empty", ndim, shape, f, strides)) return NULL;
    return nn_empty_strided(ndim, shape, strides, dt, dev);
}

nn_tensor *nn_contiguous_as(nn_tensor *t, nn_memory_format f)
{
    int64_t strides[NN_MAX_DIMS];
    if (nn_format_strides("contiguous", t->ndim, t->shape, f, strides)) return NULL;
    if (nn_is_contiguous_as(t, f)) return nn_retain(t);
    return nn_copy_as(t, strides, t->dtype, "CloneBackward0");
}

nn_tensor *nn_clone_as(nn_tensor *t, nn_memory_format f)
{
    if (f == NN_PRESERVE_FORMAT) {
        if (nn_is_dense(t)) return nn_copy_as(t, t->strides, t->dtype, "CloneBackward0");
        f = nn_suggest_memory_format(t);
    }
    int64_t strides[NN_MAX_DIMS];
    if (nn_format_strides("clone", t->ndim, t->shape, f, strides)) return NULL;
    return nn_copy_as(t, strides, t->dtype, "CloneBackward0");
}

nn_memory_format nn_suggest_memory_format(const nn_tensor *t)
{
    if ((t->ndim == 4 || t->ndim == 5) && !nn_is_contiguous(t)) {
        nn_memory_format f = t->ndim == 4 ? NN_CHANNELS_LAST : NN_CHANNELS_LAST_3D;
        if (nn_is_contiguous_as(t, f)) return f;
    }
    return NN_CONTIGUOUS_FORMAT;
}

bool nn_is_dense(const nn_tensor *t)
{
    int64_t expect = 1;
    bool used[NN_MAX_DIMS] = {false};
    for (int done = 0; done < t->ndim; done++) {
        int best = -1;
        for (int d = 0; d < t->ndim; d++)
            if (!used[d] && (best < 0 || t->strides[d] < t->strides[best])) best = d;
        used[best] = true;
        if (t->shape[best] == 1) continue;
        if (t->strides[best] != expect) return false;
        expect *= t->shape[best];
    }
    return true;
}

bool nn_same_strides(const nn_tensor *a, const nn_tensor *b)
{
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != 1 && a->strides[d] != b->strides[d]) return false;
    return true;
}

nn_tensor *nn_copy_as(nn_tensor *t, const int64_t *strides, nn_dtype dt, const char *grad_name)
{
    nn_tensor *out = nn_empty_strided(t->ndim, t->shape, strides, dt, t->storage->device);
    if (!out) return NULL;
    nn_kargs k = {.op = NN_OP_copy, .out = {out}, .in = {t}, .nin = 1};
    if (nn_dispatch(&k) || (nn_any_requires_grad(1, &t) && nn_record_copy(grad_name, t, out))) {
        nn_release(out);
        return NULL;
    }
    return out;
}

nn_tensor *nn_to_dtype_preserve(nn_tensor *t, nn_dtype dt)
{
    if (dt == t->dtype || nn_is_contiguous(t) || !nn_is_dense(t)) return nn_to_dtype(t, dt);
    return nn_copy_as(t, t->strides, dt, "ToCopyBackward0");
}
