/* Tensors: refcounted storage plus shape, strides (in elements), offset and dtype.
 * Views share storage. One struct for every dtype and device.
 *
 * Ownership: every function returning nn_tensor* returns a new reference (or
 * NULL with the error set); the caller releases it with nn_release. Functions
 * taking nn_tensor* borrow it. */
#ifndef NN_TENSOR_H
#define NN_TENSOR_H

#include "dtype.h"
#include "error.h"

#define NN_MAX_DIMS 8

typedef enum { NN_CPU = 0, NN_CUDA = 1, NN_META = 2, NN_NDEVTYPES } nn_devtype; /* meta: no data (engine/meta.c) */
typedef struct { int8_t type; int8_t index; } nn_device; /* index -1: "current" (resolved before use) */
#define NN_DEVICE_CPU ((nn_device){NN_CPU, -1})
static inline int nn_device_eq(nn_device a, nn_device b) { return a.type == b.type && (a.type != NN_CUDA || a.index == b.index); }
const char *nn_device_str(char *buf, nn_device d); /* "cpu", "cuda:0", "meta"; buf >= 16 bytes */

typedef struct nn_storage {
    int refcount;
    void *data;
    size_t nbytes;
    nn_device device;
    uint32_t version;       /* bumped by in-place ops; shared by all views (autograd checks it) */
    bool pinned;            /* page-locked host memory */
    bool inference;         /* allocated under inference mode: its tensors are inference tensors */
    void (*release)(void *data, void *ctx); /* borrowed memory: called instead of the backend's free */
    void *release_ctx;
} nn_storage;

struct nn_node; /* autograd graph node (engine/autograd.h) */
struct nn_grad_hooks;

typedef struct nn_tensor {
    int refcount;
    nn_dtype dtype;
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    int64_t strides[NN_MAX_DIMS];
    int64_t offset;
    nn_storage *storage;
    /* autograd */
    bool requires_grad;
    bool retains_grad;
    bool wrapped_number;   /* a 0-dim tensor made from a Lua number: lower priority in type promotion */
    struct nn_tensor *grad;
    struct nn_node *grad_fn;
    int output_nr;
    struct nn_grad_hooks *grad_hooks; /* post-accumulate-grad hooks (autograd.h); NULL: none */
    struct nn_tensor *base; /* a view made by a view op: the tensor it views (PyTorch's _base), held */
    uint32_t view_version;  /* the storage's version when grad_fn was set (a view's history goes stale after it) */
    /* Tensors that speak for this one's values (engine/amp.h): one of them holds an inf or nan (a
     * nonzero byte, in uint8 flags) exactly when this tensor does, while this tensor's storage
     * version is still finite_version and theirs finite_wversion. They are the flags of the kernel
     * that wrote the values (nn_cast_checked), or the operands that decide a product's
     * (autocast's linear weight gradients). NULL: none. */
    struct nn_tensor *finite_flags[2];
    uint32_t finite_version, finite_wversion[2];
    /* autocast's float16/bfloat16 copy of this float32 parameter, written by the optimizer step
     * that last updated it and taken by the next autocast cast (engine/autocast.c); it holds
     * while the storage's version is still lowp_version. lowp_dtype: what autocast cast this
     * parameter to since its last step (NN_DTYPE_NONE: nothing; the step then writes no copy). */
    struct nn_tensor *lowp;
    uint32_t lowp_version;
    nn_dtype lowp_dtype;
} nn_tensor;

/* PyTorch's legacy type name of t, "torch.FloatTensor", "torch.cuda.LongTensor"; buf >= 48 bytes */
const char *nn_type_str(char *buf, const struct nn_tensor *t);

/* Inference mode (thread-local; torch.inference_mode): storage allocated while it is on makes
 * inference tensors, which autograd refuses to save and in-place ops outside it refuse to change. */
bool nn_inference_mode_enabled(void);
void nn_set_inference_mode(bool on);
static inline bool nn_is_inference(const struct nn_tensor *t) { return t->storage->inference; }
/* a and b have the same shape */
static inline bool nn_same_shape(const struct nn_tensor *a, const struct nn_tensor *b)
{
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

/* Allocation and lifetime */
nn_tensor *nn_empty(int ndim, const int64_t *shape, nn_dtype dt, nn_device dev);
nn_tensor *nn_empty_like(const nn_tensor *t);
nn_tensor *nn_empty_strided(int ndim, const int64_t *shape, const int64_t *strides, nn_dtype dt, nn_device dev);
/* Wrap memory the caller owns; release(data, ctx) runs when the last view goes (may be NULL). */
nn_tensor *nn_from_blob(void *data, int ndim, const int64_t *shape, const int64_t *strides, nn_dtype dt,
                        nn_device dev, void (*release)(void *, void *), void *ctx);
/* A new tensor header over t's storage with the given geometry (a view). */
nn_tensor *nn_make_view(const nn_tensor *t, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset);
/* No other tensor shares t's storage (t's own base, held only by t, does not count). */
static inline bool nn_sole_owner(const nn_tensor *t)
{
    int r = t->storage->refcount;
    if (t->base && t->base->refcount == 1 && t->base->storage == t->storage) r--;
    return r == 1;
}
nn_tensor *nn_retain(nn_tensor *t);
void nn_release(nn_tensor *t); /* NULL is fine */
/* Bytes of storage the engine allocated and still holds, every device together. */
size_t nn_live_storage_bytes(void);
size_t nn_live_host_bytes(void); /* the CPU's (pinned included) */

/* 0-dim tensors from numbers (wrapped_number set: a Lua number in an op). */
nn_tensor *nn_scalar_f64(double v);  /* stored as float64; promotes as the default float dtype */
nn_tensor *nn_scalar_i64(int64_t v); /* dtype: int64 */
nn_tensor *nn_scalar_bool(bool v);
nn_tensor *nn_scalar_c128(double re, double im); /* dtype: complex128 */

/* Geometry */
int64_t nn_numel(const nn_tensor *t);
bool nn_is_contiguous(const nn_tensor *t);
void *nn_data(const nn_tensor *t); /* address of element 0 (storage data + offset) */
void nn_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
/* Wrap a possibly negative dim into [0, ndim); error (NN_ERR_INDEX) naming fn if out of range. */
nn_status nn_wrap_dim(const char *fn, int *dim, int ndim);
void nn_bump_version(nn_tensor *t);

/* Element access for tests and printing (CPU tensors only). */
double nn_get_f64(const nn_tensor *t, const int64_t *index);
int64_t nn_get_i64(const nn_tensor *t, const int64_t *index);

#endif
