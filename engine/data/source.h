/* Data sources: the built-in datasets (IDX, CIFAR-10, tensors) described for C,
 * so that a batch can be fetched and collated with no Lua, in any thread.
 *
 * A source is a list of fields, each a CPU tensor [rows, ...] plus an optional
 * transform chain that C knows how to run: ToTensor (uint8 -> float32 / 255,
 * [H, W] -> [1, H, W], [C, H, W] kept) followed by any number of Normalize
 * ((x - mean[c]) / std[c], float32 as torchvision computes it). Such a chain is
 * an affine map per channel of a byte, so it runs as a 256-entry table per
 * channel, bit for bit what the float32 ops give. A source may carry an index
 * map (a Subset), composed when subsets nest.
 *
 * nn_data_fetch reads the source and writes new tensors, so any number of
 * threads may fetch from one source at once. Refcounts (retain/release) belong
 * to one thread, the one that owns the source (the Lua main thread). */
#ifndef NN_DATA_SOURCE_H
#define NN_DATA_SOURCE_H

#include "tensor.h"

#define NN_DATA_MAX_FIELDS 8

typedef enum { NN_DATA_TO_TENSOR, NN_DATA_NORMALIZE } nn_data_op_kind;
typedef struct {
    nn_data_op_kind kind;
    int n;               /* NORMALIZE: entries of mean and std (1 or the channel count) */
    const double *mean;
    const double *std;
} nn_data_op;

typedef struct nn_data_source nn_data_source;

nn_data_source *nn_data_source_new(void);
nn_data_source *nn_data_source_retain(nn_data_source *s);
void nn_data_source_release(nn_data_source *s);
/* Add a field: t is [rows, ...] on the CPU (all fields the same rows); ops the
 * transform chain (none: samples are t's rows as they are). NN_ERR_NOTIMPL means
 * the chain is not one C runs (the caller falls back to its own path). */
nn_status nn_data_add_field(nn_data_source *s, nn_tensor *t, const nn_data_op *ops, int nops);
int nn_data_nfields(const nn_data_source *s);
int64_t nn_data_length(const nn_data_source *s);
/* A source of the samples idx[0..n) of s (negative indices count from the end). */
nn_data_source *nn_data_source_subset(nn_data_source *s, const int64_t *idx, int64_t n);

/* The samples idx[0..n), collated: out[f] = a new tensor [n, sample shape of f].
 * pin: page-locked memory when an allocator for it is registered. */
nn_status nn_data_fetch(const nn_data_source *s, const int64_t *idx, int64_t n, bool pin, nn_tensor **out);

/* Page-locked host memory for pin_memory: the allocator registered here, else the
 * GPU backend's (nn_gpu->host_alloc_pinned, device.h) when a GPU is present, else
 * none and pinned batches are ordinary memory. alloc runs in worker threads and
 * free in whichever thread drops the batch: both must be thread-safe. */
void nn_data_set_pinned_allocator(void *(*alloc)(size_t nbytes), void (*free)(void *p));
bool nn_data_have_pinned_allocator(void);

#endif
