/* DDP's gradient reducer (PyTorch's Reducer): the parameters' gradients averaged
 * over the ranks in buckets, each bucket's all-reduce started as soon as all of its
 * gradients are ready during backward.
 *
 * Buckets are filled in reverse parameter order (the order backward produces the
 * gradients), split by dtype and device: the first holds up to first_bucket_bytes,
 * the others up to bucket_cap_bytes (a parameter is never split, and one that fills a
 * bucket gets one of its own). A post-accumulate-grad hook on every parameter marks its
 * gradient ready; a complete bucket is averaged over the ranks by one all-reduce (in
 * bucket order, the same on every rank) while backward goes on. Where every gradient of
 * the bucket is a dense tensor of its own, they are averaged where they are: one
 * all-reduce of the one gradient, or one grouped all-reduce of the list (NCCL groups the
 * calls; gloo packs them itself), with no copy in or out. Otherwise the gradients are
 * copied into the bucket's buffer, and the hook of the last gradient waits for every
 * bucket and writes the averages back into the .grad tensors, so when backward returns
 * the gradients are averaged. With gradient_as_bucket_view, each .grad is made a view of
 * its bucket slice instead: nothing is copied back, and a gradient accumulated into such
 * a view needs no copy in either.
 *
 * The layout is rebuilt if the parameters change dtype, device or size (model:cuda()
 * after wrapping).
 *
 * A communication hook (DDP's register_comm_hook) replaces the averaging all-reduce: every
 * bucket then goes through its flat buffer (the gradients copied in, not divided), the hook
 * starts the bucket's reduction as soon as the bucket is complete, and at the end of backward
 * each bucket's result is copied back into the buffer and the gradients. The builtin hooks
 * (ALLREDUCE, FP16 and BF16 compression) run here with no callback: the buffer (or a float16 /
 * bfloat16 copy of it) divided by the world size, then summed over the ranks. */
#ifndef NN_DIST_REDUCER_H
#define NN_DIST_REDUCER_H

#include "pg.h"

typedef struct nn_reducer nn_reducer;

typedef struct {
    size_t bucket_cap_bytes;     /* DDP's bucket_cap_mb (25 MiB) */
    size_t first_bucket_bytes;   /* 1 MiB, as PyTorch */
    bool find_unused_parameters; /* mark parameters outside the autograd graph ready at once */
    bool gradient_as_bucket_view; /* .grad becomes a view of its bucket: no copy back */
} nn_reducer_opts;

typedef enum { NN_COMM_HOOK_NONE, NN_COMM_HOOK_ALLREDUCE, NN_COMM_HOOK_FP16, NN_COMM_HOOK_BF16, NN_COMM_HOOK_CUSTOM } nn_comm_hook_kind;

/* A hook of the caller's (NN_COMM_HOOK_CUSTOM). */
typedef struct {
    /* bucket k (0-based, in reduction order) is complete; buf is its flat buffer: start reducing it */
    nn_status (*run)(void *ctx, int bucket, nn_tensor *buf, bool last);
    /* when every bucket has run, in bucket order: *out (a new reference) is the bucket's reduced
     * flat tensor, of the buffer's number of elements */
    nn_status (*result)(void *ctx, int bucket, nn_tensor **out);
    void *ctx;
} nn_comm_hook;

/* Parameters that do not require grad are left out. */
nn_reducer *nn_reducer_new(nn_pg *pg, nn_tensor *const *params, int n, const nn_reducer_opts *o);
void nn_reducer_free(nn_reducer *r);
/* Before a forward whose backward will sync: error if the previous backward began
 * reducing and did not finish (parameters that got no gradient, named by index). */
nn_status nn_reducer_prepare_forward(nn_reducer *r);
/* After such a forward: expect the hooks in the coming backward; with
 * find_unused_parameters, walk the graph from the outputs. */
nn_status nn_reducer_prepare_backward(nn_reducer *r, nn_tensor *const *outputs, int n);
/* A rank that has run out of inputs (Join) makes the collectives of one backward with no hook:
 * each bucket's all-reduce over zeros, made as the active ranks make theirs so that the calls
 * match; out[k] (room for every bucket) gets bucket k's averaged flat result, a new reference. */
nn_status nn_reducer_shadow(nn_reducer *r, nn_tensor **out);
/* Buckets for tests: their count; sizes[k] = parameters in bucket k, and idx gets
 * the parameter indices bucket by bucket (idx has room for every parameter). */
int nn_reducer_buckets(nn_reducer *r, int *sizes, int *idx);
/* Once per reducer (an error the second time); custom is copied, for NN_COMM_HOOK_CUSTOM.
 * Applies from the next forward on. */
nn_status nn_reducer_set_comm_hook(nn_reducer *r, nn_comm_hook_kind kind, const nn_comm_hook *custom);

#endif
