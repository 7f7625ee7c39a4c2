#include "tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "ops.h"
#include "backend.h"
#include "device.h"
#include "profiler.h"

const char *nn_device_str(char *buf, nn_device d)
{
    if (d.type == NN_CPU) strcpy(buf, "cpu");
    else if (d.type == NN_META) strcpy(buf, "meta");
    else snprintf(buf, 16, "cuda:%d", d.index < 0 ? 0 : d.index);
    return buf;
}

const char *nn_type_str(char *buf, const nn_tensor *t)
{
    snprintf(buf, 48, "torch.%s%sTensor", t->storage->device.type == NN_CPU ? "" : "cuda.", nn_dtype_scalar_name(t->dtype));
    return buf;
}

static size_t live_bytes, live_host; /* owned storage bytes, all devices and the CPU's (atomic: loader threads allocate too) */

size_t nn_live_storage_bytes(void) { return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED); }
size_t nn_live_host_bytes(void) { return __atomic_load_n(&live_host, __ATOMIC_RELAXED); }

/* an owned storage made (sign 1) or freed (-1) */
static void count_live(const nn_storage *s, int sign)
{
    size_t d = sign > 0 ? s->nbytes : 0 - s->nbytes; /* wraps: a subtraction */
    __atomic_fetch_add(&live_bytes, d, __ATOMIC_RELAXED);
    if (s->device.type == NN_CPU) __atomic_fetch_add(&live_host, d, __ATOMIC_RELAXED);
    if (nn_profiling_memory) nn_profiler_memory(s->data, sign * (int64_t)s->nbytes, s->device);
}

static void storage_release(nn_storage *s)
{
    if (!s || --s->refcount > 0) return;
    if (s->release) s->release(s->data, s->release_ctx);
    else if (s->data) {
        const nn_backend *b = nn_backend_for(s->device);
        if (b) b->free(s->device.index, s->data, s->nbytes ? s->nbytes : 1, s->pinned); /* as allocated */
        count_live(s, -1);
    }
    free(s);
}

static nn_tensor *header(nn_dtype dt, int ndim, const int64_t *shape, const int64_t *strides)
{
    nn_tensor *t = calloc(1, sizeof *t);
    if (!t) { nn_error(NN_ERR_NOMEM, "out of memory allocating a tensor"); return NULL; }
    t->refcount = 1;
    t->dtype = dt;
    t->lowp_dtype = NN_DTYPE_NONE;
    t->ndim = ndim;
    if (ndim) memcpy(t->shape, shape, ndim * sizeof *shape);
    if (strides) memcpy(t->strides, strides, ndim * sizeof *strides);
    else nn_contiguous_strides(ndim, shape, t->strides);
    return t;
}

static nn_status check_geometry(int ndim, const int64_t *shape)
{
    if (ndim < 0 || ndim > NN_MAX_DIMS) return nn_error(NN_ERR_ARG, "tensors have at most %d dimensions, got %d", NN_MAX_DIMS, ndim);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) {
            char b[160];
            return nn_error(NN_ERR_ARG, "negative dimension in shape %s", nn_shape_str(b, ndim, shape));
        }
    return NN_OK;
}

static _Thread_local bool inference_on;
bool nn_inference_mode_enabled(void) { return inference_on; }
void nn_set_inference_mode(bool on) { inference_on = on; }

static nn_tensor *alloc_tensor(int ndim, const int64_t *shape, const int64_t *strides, nn_dtype dt, nn_device dev, bool pinned)
{
    if (check_geometry(ndim, shape)) return NULL;
    if (dt == NN_DTYPE_NONE) dt = nn_default_dtype();
    const nn_backend *b = nn_backend_for(dev);
    if (dev.type == NN_CUDA && (!b || nn_gpu) && nn_require_gpu("cannot allocate a CUDA tensor")) return NULL;
    dev = nn_resolve_device(dev);
    if (!b) {
        char d[16];
        nn_error(NN_ERR_DEVICE, "device %s is not available (no backend registered)", nn_device_str(d, dev));
        return NULL;
    }
    nn_tensor *t = header(dt, ndim, shape, strides);
    if (!t) return NULL;
    int64_t span = 1; /* elements reachable: 1 + sum((size-1)*stride) */
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) { span = 0; break; }
        span += (shape[i] - 1) * t->strides[i];
    }
    nn_storage *s = calloc(1, sizeof *s);
    size_t nbytes = (size_t)span * nn_dtype_size(dt);
    void *data = b->alloc(dev.index, nbytes ? nbytes : 1, pinned);
    if (!s || !data) {
        free(s);
        if (data) b->free(dev.index, data, nbytes ? nbytes : 1, pinned);
        free(t);
        if (!data && nn_last_status() == NN_ERR_NOMEM) return NULL; /* the allocator said what failed */
        nn_error(NN_ERR_NOMEM, "out of memory allocating %zu bytes%s", nbytes, pinned ? " of pinned memory" : "");
        return NULL;
    }
    s->refcount = 1;
    s->data = data;
    s->nbytes = nbytes; /* 0 for no elements (1 byte allocated) */
    s->device = dev;
    s->pinned = pinned;
    s->inference = inference_on;
    t->storage = s;
    count_live(s, 1);
    return t;
}

nn_tensor *nn_empty_strided(int ndim, const int64_t *shape, const int64_t *strides, nn_dtype dt, nn_device dev)
{
    return alloc_tensor(ndim, shape, strides, dt, dev, false);
}

nn_tensor *nn_pin_memory(nn_tensor *t)
{
    if (t->storage->device.type != NN_CPU) return nn_error(NN_ERR_DEVICE, "pin_memory: cannot pin a tensor that is not on the CPU"), NULL;
    if (t->storage->pinned) return nn_retain(t);
    if (nn_require_gpu("pin_memory")) return NULL;
    nn_tensor *p = alloc_tensor(t->ndim, t->shape, NULL, t->dtype, t->storage->device, true);
    if (p && nn_copy_(p, t)) {
        nn_release(p);
        return NULL;
    }
    return p;
}

nn_tensor *nn_empty(int ndim, const int64_t *shape, nn_dtype dt, nn_device dev)
{
    return nn_empty_strided(ndim, shape, NULL, dt, dev);
}

nn_tensor *nn_empty_like(const nn_tensor *t)
{
    return nn_empty(t->ndim, t->shape, t->dtype, t->storage->device);
}

static void keep_borrowed(void *data, void *ctx) { (void)data, (void)ctx; }

nn_tensor *nn_from_blob(void *data, int ndim, const int64_t *shape, const int64_t *strides, nn_dtype dt,
                        nn_device dev, void (*release)(void *, void *), void *ctx)
{
    if (check_geometry(ndim, shape)) return NULL;
    nn_tensor *t = header(dt, ndim, shape, strides);
    nn_storage *s = calloc(1, sizeof *s);
    if (!t || !s) { free(t); free(s); nn_error(NN_ERR_NOMEM, "out of memory"); return NULL; }
    s->refcount = 1;
    s->data = data;
    s->device = dev;
    s->release = release ? release : keep_borrowed;
    s->release_ctx = ctx;
    s->inference = inference_on;
    int64_t span = 1;
    for (int i = 0; i < ndim; i++) span += (shape[i] - 1) * t->strides[i];
    s->nbytes = (size_t)span * nn_dtype_size(dt);
    t->storage = s;
    return t;
}

nn_tensor *nn_make_view(const nn_tensor *t, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset)
{
    if (check_geometry(ndim, shape)) return NULL;
    nn_tensor *v = header(t->dtype, ndim, shape, strides);
    if (!v) return NULL;
    v->offset = offset;
    v->storage = t->storage;
    t->storage->refcount++;
    return v;
}

nn_tensor *nn_retain(nn_tensor *t)
{
    if (t) t->refcount++;
    return t;
}

void nn_release(nn_tensor *t)
{
    if (!t || --t->refcount > 0) return;
    if (t->grad_fn) nn_autograd_drop(t);
    if (t->grad_hooks) nn_grad_hooks_free(t);
    nn_release(t->grad);
    nn_release(t->base);
    nn_release(t->finite_flags[0]);
    nn_release(t->finite_flags[1]);
    nn_release(t->lowp);
    storage_release(t->storage);
    free(t);
}

static nn_tensor *scalar(nn_dtype dt)
{
    nn_tensor *t = nn_empty(0, NULL, dt, NN_DEVICE_CPU);
    if (t) t->wrapped_number = true;
    return t;
}

/* Stored as float64 so the value keeps full precision in a float64 op; type
 * promotion counts a wrapped float as the default dtype (nn_result_type). */
nn_tensor *nn_scalar_f64(double v)
{
    nn_tensor *t = scalar(NN_F64);
    if (t) *(double *)nn_data(t) = v;
    return t;
}

nn_tensor *nn_scalar_c128(double re, double im)
{
    nn_tensor *t = scalar(NN_C128);
    if (t) ((double *)nn_data(t))[0] = re, ((double *)nn_data(t))[1] = im;
    return t;
}

nn_tensor *nn_scalar_i64(int64_t v)
{
    nn_tensor *t = scalar(NN_I64);
    if (t) *(int64_t *)nn_data(t) = v;
    return t;
}

nn_tensor *nn_scalar_bool(bool v)
{
    nn_tensor *t = scalar(NN_BOOL);
    if (t) *(uint8_t *)nn_data(t) = v;
    return t;
}

int64_t nn_numel(const nn_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

void nn_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 1 ? shape[i] : 1;
    }
}

bool nn_is_contiguous(const nn_tensor *t)
{
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 1) continue;
        if (t->shape[i] == 0) return true;
        if (t->strides[i] != s) return false;
        s *= t->shape[i];
    }
    return true;
}

void *nn_data(const nn_tensor *t)
{
    return (char *)t->storage->data + t->offset * (int64_t)nn_dtype_size(t->dtype);
}

nn_status nn_wrap_dim(const char *fn, int *dim, int ndim)
{
    int n = ndim ? ndim : 1; /* a 0-dim tensor accepts dim 0 and -1, as PyTorch does */
    if (*dim < -n || *dim >= n)
        return nn_error(NN_ERR_INDEX, "%s: dimension out of range (expected to be in range of [%d, %d], but got %d)", fn, -n, n - 1, *dim);
    if (*dim < 0) *dim += n;
    return NN_OK;
}

void nn_bump_version(nn_tensor *t) { t->storage->version++; }

static const char *elem(const nn_tensor *t, const int64_t *index)
{
    int64_t off = 0;
    for (int i = 0; i < t->ndim; i++) off += index[i] * t->strides[i];
    return (const char *)nn_data(t) + off * (int64_t)nn_dtype_size(t->dtype);
}

double nn_get_f64(const nn_tensor *t, const int64_t *index) { return nn_load_f64(elem(t, index), t->dtype); }
int64_t nn_get_i64(const nn_tensor *t, const int64_t *index) { return nn_load_i64(elem(t, index), t->dtype); }
