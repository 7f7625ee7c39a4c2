/* oneDNN primitives for the CPU kernels that run through it (conv_dnnl.c, gemm_dnnl.c): one
 * engine, a cache of primitives keyed by the caller's key bytes, and each thread's stream and
 * scratch arena. */
#ifndef NN_CPU_DNNL_PRIM_H
#define NN_CPU_DNNL_PRIM_H

#include <dnnl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

enum { NN_DNNL_MAX_ARGS = 4 };

/* One argument of a primitive: the user's layout, the primitive's, and the reorder between them
 * (user -> primitive for an input, back for the output) when they differ. */
typedef struct {
    int arg;
    bool output;
    dnnl_memory_desc_t user, prim;
    dnnl_primitive_t reorder;
} nn_dnnl_arg;

typedef struct {
    dnnl_primitive_t prim;
    nn_dnnl_arg args[NN_DNNL_MAX_ARGS];
    int nargs;
    size_t scratch;
} nn_dnnl_prim;

/* Fills p (with nn_dnnl_add_arg and nn_dnnl_finish) for the key; false where oneDNN cannot */
typedef bool (*nn_dnnl_build_fn)(nn_dnnl_prim *p, const void *key);

/* Whether oneDNN is on (torch.backends.mkldnn: nn_mkldnn_enabled, kernels.h) and its engine could be made */
bool nn_dnnl_ready(void);
dnnl_engine_t nn_dnnl_engine(void);

/* OpenMP threads of this thread's next primitive call: a primitive splits its work for the count it
 * was made with, and asks OpenMP for that many when it runs (so it belongs in the key too) */
void nn_dnnl_set_threads(int threads);

/* The primitive for key (keysize bytes; the caller zeroes any padding), built with build on first
 * use and kept. NULL where oneDNN refuses the key (remembered) or only has a reference (slow)
 * implementation for it. When the cache is full: with owned, a primitive of the caller's own
 * (*owned set; free it with nn_dnnl_prim_free); without, NULL. */
nn_dnnl_prim *nn_dnnl_prim_get(const void *key, size_t keysize, nn_dnnl_build_fn build, bool *owned);
void nn_dnnl_prim_free(nn_dnnl_prim *p);

/* Run p on the user's buffers ptr[i] (in the order its arguments were added) */
bool nn_dnnl_prim_run(const nn_dnnl_prim *p, void *const *ptr);

/* for build functions: memory descriptors of given strides or of the layout the primitive picks; a
 * primitive descriptor; an argument (index: which of the query's kind); the primitive */
bool nn_dnnl_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, const int64_t *strides, dnnl_data_type_t dt);
bool nn_dnnl_md_any(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, dnnl_data_type_t dt);
dnnl_primitive_desc_t nn_dnnl_pd_create(const void *desc, dnnl_primitive_attr_t attr, const_dnnl_primitive_desc_t hint);
bool nn_dnnl_add_arg(nn_dnnl_prim *p, const_dnnl_primitive_desc_t pd, int arg, dnnl_query_t q, int index, const dnnl_memory_desc_t *user,
                     bool output);
bool nn_dnnl_finish(nn_dnnl_prim *p, const_dnnl_primitive_desc_t pd);

#endif
