/* Backends: memory and a kernel table indexed by op (ops.def). CPU is always
 * registered; CUDA registers itself when present. A missing kernel is an error
 * naming op, device and dtype, never a silent fallback. */
#ifndef NN_BACKEND_H
#define NN_BACKEND_H

#include "ops.h"
#include "tensor.h"

/* Everything a kernel needs: outputs and inputs are allocated and shaped by the
 * frontend (the engine/ .c files); kernels only compute. An optional operand an op
 * leaves out is NULL in its slot (ops.def says which may be). */
typedef struct nn_kargs {
    nn_op op;
    nn_tensor *out[3];
    nn_tensor *in[6];
    int nin;
    double f[8];   /* float parameters (see ops.def) */
    int64_t i[8];  /* integer parameters (see ops.def) */
    uint32_t dims; /* REDUCE: bit d set = reduce dim d of in0 */
    nn_tensor *const *list; /* LIST kernels (optimizer steps): nlist tensors per role */
    int nlist;
} nn_kargs;

typedef nn_status (*nn_kernel)(const nn_kargs *a);

typedef struct nn_backend {
    const char *name;
    void *(*alloc)(int device_index, size_t nbytes, bool pinned);
    void (*free)(int device_index, void *p, size_t nbytes, bool pinned);
    /* n bytes between any two devices this backend can reach (host<->device too) */
    nn_status (*copy)(void *dst, nn_device dst_dev, const void *src, nn_device src_dev, size_t n);
    nn_status (*synchronize)(int device_index);
    nn_kernel kernels[NN_OP_COUNT];
} nn_backend;

void nn_register_backend(nn_devtype type, const nn_backend *b);
const nn_backend *nn_backend_for(nn_device d); /* NULL if not registered */
/* Run a->op on the device of a->out[0]; errors: no backend, no kernel, mixed devices. */
nn_status nn_dispatch(const nn_kargs *a);
/* For kernels: "<op> is not implemented for <device>/<dtype>" */
nn_status nn_not_implemented(const nn_kargs *a, nn_dtype dt);

extern const nn_backend nn_cpu_backend;
extern const nn_backend nn_meta_backend;
/* the error for reading a meta tensor's data (what: the operation) */
nn_status nn_meta_no_data(const char *what);

#endif
