/* Process groups: collectives between ranks, PyTorch's torch.distributed.
 *
 * A backend (Gloo for CPU tensors, NCCL for CUDA tensors) fills nn_pg_ops with
 * collectives over contiguous buffers; the frontend (pg.c) checks tensors, makes
 * contiguous or host staging copies where needed, does AVG as SUM and a division
 * where the backend has no AVG, and copies results back when the work is waited.
 *
 * Work: every collective returns an nn_work. A blocking backend (Gloo) runs its
 * collectives in order on the group's own thread, so the caller goes on (DDP
 * overlaps gradient all-reduce with backward this way); a stream backend (NCCL)
 * enqueues at once on its own stream, after the current stream's work, and waiting
 * makes the current stream wait for it. nn_work_wait finishes the work in the
 * caller's thread. Every rank must issue the same collectives in the same order.
 *
 * Backends register by name (nn_pg_register_backend); cuda/nccl.cu registers
 * "nccl" when the CUDA backend is linked in, engine/dist/gloo.c registers "gloo".
 *
 * Profiling (engine/profiler.h): each collective is an event named as PyTorch names it
 * ("gloo:all_reduce", "nccl:_all_gather_base"). A stream backend's event spans the enqueue on
 * the host and is timed on the GPU on the group's stream; a blocking backend's has no parent
 * (it runs on the group's thread) and spans that run (point-to-point: until waited for), set
 * when the work is waited for. */
#ifndef NN_DIST_PG_H
#define NN_DIST_PG_H

#include "device.h"
#include "store.h"
#include "tensor.h"

typedef enum { NN_REDUCE_SUM, NN_REDUCE_AVG, NN_REDUCE_PRODUCT, NN_REDUCE_MIN, NN_REDUCE_MAX, NN_NREDUCE } nn_reduce_op;
extern const char *const nn_reduce_op_names[NN_NREDUCE]; /* "SUM", "AVG", ... */

typedef struct nn_pg nn_pg;

/* Backend collectives over contiguous buffers on `dev`; in-place unless stated.
 * count is in elements of dt; an error return has its message set (naming the
 * backend; the frontend adds the rank). */
typedef struct {
    const char *name;   /* "gloo", "nccl" */
    nn_devtype device;  /* the tensors it takes: NN_CPU (others are staged through host memory) or NN_CUDA */
    bool blocking;      /* calls block until done: run them on the group's thread */
    bool has_avg;       /* NN_REDUCE_AVG natively */
    nn_status (*all_reduce)(nn_pg *pg, void *buf, size_t count, nn_dtype dt, nn_reduce_op op, nn_device dev);
    /* n buffers all-reduced in place as one grouped call (NULL: the backend has none) */
    nn_status (*all_reduce_many)(nn_pg *pg, void *const *bufs, const size_t *counts, int n, nn_dtype dt, nn_reduce_op op, nn_device dev);
    nn_status (*broadcast)(nn_pg *pg, void *buf, size_t count, nn_dtype dt, int root, nn_device dev);
    /* the result lands in buf on root; other ranks' buf may be clobbered */
    nn_status (*reduce)(nn_pg *pg, void *buf, size_t count, nn_dtype dt, nn_reduce_op op, int root, nn_device dev);
    /* out: size * count elements, rank r's in at r * count */
    nn_status (*all_gather)(nn_pg *pg, void *out, const void *in, size_t count, nn_dtype dt, nn_device dev);
    /* in: size * count elements (clobbered); out: count elements, rank r gets the reduced block r */
    nn_status (*reduce_scatter)(nn_pg *pg, void *out, void *in, size_t count, nn_dtype dt, nn_reduce_op op, nn_device dev);
    /* point-to-point, in the caller's thread and not on the group's thread (a send waits for its
     * receive, which may come later in the peer's queue): post the transfer; *pending (NULL if
     * nothing is left to wait for) goes to wait */
    nn_status (*send)(nn_pg *pg, const void *buf, size_t count, nn_dtype dt, int dst, int tag, nn_device dev, void **pending);
    nn_status (*recv)(nn_pg *pg, void *buf, size_t count, nn_dtype dt, int src, int tag, nn_device dev, void **pending);
    /* a stream backend (may be NULL): after an operation was enqueued, a token for wait */
    void *(*record)(nn_pg *pg, nn_device dev);
    /* finish a pending transfer or token (a stream backend: the current stream waits for it);
     * must work after destroy too */
    nn_status (*wait)(void *pending, double timeout);
    nn_status (*barrier)(nn_pg *pg);
    void (*destroy)(nn_pg *pg);
    /* a stream backend (may be NULL): the stream its collectives on dev run on, made to wait for
     * what dev's current stream has queued so far (the profiler times them there); NULL: none */
    nn_gpu_stream *(*stream)(nn_pg *pg, nn_device dev);
} nn_pg_ops;

struct nn_pg_thread; /* the group's collective thread (pg.c) */

struct nn_pg {
    const nn_pg_ops *ops;
    void *impl;          /* the backend's state */
    int rank, size;
    double timeout;      /* seconds, for every collective */
    nn_store *store;     /* shared with the backend; freed with the group */
    int id;              /* distinguishes groups' keys in the store */
    struct nn_pg_thread *thread;
};

/* A backend constructor: fill pg->ops and pg->impl (rank, size, timeout, store and id are set). */
typedef nn_status (*nn_pg_create_fn)(nn_pg *pg);
void nn_pg_register_backend(const char *name, nn_pg_create_fn create);
bool nn_pg_backend_available(const char *name);

/* Rendezvous: init_method "env://" (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE from the
 * environment; rank/world_size >= 0 override them), "tcp://host:port", "file:///path"
 * (both take rank and world_size, also as ?rank=&world_size=). Then a check-in of every
 * rank (a clear timeout error names the missing ranks), then the backend connects.
 * The result is a new group; errors name the init method and the rank. */
nn_pg *nn_pg_init(const char *backend, const char *init_method, int rank, int world_size, double timeout);
/* The same over a store the caller made (the group takes it over). */
nn_pg *nn_pg_new(const char *backend, nn_store *store, int rank, int world_size, double timeout);
/* A subgroup: rank of size over a store of its own (a prefix store over the default
 * group's, the same prefix on every member), which it takes over. */
nn_pg *nn_pg_new_group(const char *backend, nn_store *store, int rank, int size, double timeout);
void nn_pg_destroy(nn_pg *pg);

/* ---- work ---- */
typedef struct nn_work nn_work;
/* Wait for the work and finish it (copy results back, AVG division); the error, if
 * any, names the collective and the rank. Waiting again returns the same status. */
nn_status nn_work_wait(nn_work *w);
bool nn_work_is_completed(nn_work *w);
void nn_work_release(nn_work *w);

/* ---- collectives on tensors (async: NULL with the error set, or work to wait) ---- */
nn_work *nn_dist_all_reduce(nn_pg *pg, nn_tensor *t, nn_reduce_op op);
/* ts (n contiguous tensors of one dtype on the backend's device) all-reduced in place in
 * one grouped call: no copies into or out of a flat buffer. Only where the backend has
 * all_reduce_many. */
nn_work *nn_dist_all_reduce_many(nn_pg *pg, nn_tensor *const *ts, int n, nn_reduce_op op);
nn_work *nn_dist_broadcast(nn_pg *pg, nn_tensor *t, int src);
nn_work *nn_dist_reduce(nn_pg *pg, nn_tensor *t, int dst, nn_reduce_op op);
/* outs: pg->size tensors shaped like t */
nn_work *nn_dist_all_gather(nn_pg *pg, nn_tensor *const *outs, nn_tensor *t);
/* out: numel size * numel(t) (PyTorch's all_gather_into_tensor: concatenated or stacked) */
nn_work *nn_dist_all_gather_into_tensor(nn_pg *pg, nn_tensor *out, nn_tensor *t);
/* ins: pg->size tensors shaped like out */
nn_work *nn_dist_reduce_scatter(nn_pg *pg, nn_tensor *out, nn_tensor *const *ins, nn_reduce_op op);
nn_work *nn_dist_reduce_scatter_tensor(nn_pg *pg, nn_tensor *out, nn_tensor *in, nn_reduce_op op);
nn_work *nn_dist_send(nn_pg *pg, nn_tensor *t, int dst, int tag);
nn_work *nn_dist_recv(nn_pg *pg, nn_tensor *t, int src, int tag);
nn_work *nn_dist_barrier(nn_pg *pg);
/* Broadcast many tensors from src, packed into one buffer per dtype and device. */
nn_status nn_dist_broadcast_coalesced(nn_pg *pg, nn_tensor *const *ts, int n, int src);

/* ---- the default group (torch.distributed's WORLD) ---- */
nn_pg *nn_dist_default(void);          /* NULL when not initialised */
void nn_dist_set_default(nn_pg *pg);   /* takes it over; NULL destroys the current one */

#endif
