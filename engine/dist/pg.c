/* Process groups: the backend registry, the group's collective thread, work
 * objects and the tensor-level collectives (see pg.h). */
#include "pg.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "net.h"
#include "ops.h"
#include "profiler.h"

const char *const nn_reduce_op_names[NN_NREDUCE] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX"};

/* ---- backends ---- */

nn_status nn_gloo_backend_create(nn_pg *pg); /* gloo.c */

static struct { const char *name; nn_pg_create_fn create; } backends[8] = {{"gloo", nn_gloo_backend_create}};
static int nbackends = 1;

void nn_pg_register_backend(const char *name, nn_pg_create_fn create)
{
    for (int i = 0; i < nbackends; i++)
        if (!strcmp(backends[i].name, name)) { backends[i].create = create; return; }
    if (nbackends < (int)(sizeof backends / sizeof *backends)) {
        backends[nbackends].name = name;
        backends[nbackends++].create = create;
    }
}

static nn_pg_create_fn find_backend(const char *name)
{
    for (int i = 0; i < nbackends; i++)
        if (!strcmp(backends[i].name, name)) return backends[i].create;
    return NULL;
}

bool nn_gloo_loadable(void); /* gloo.c */

bool nn_pg_backend_available(const char *name)
{
    if (!strcmp(name, "gloo")) return nn_gloo_loadable();
    return find_backend(name) != NULL;
}

/* ---- work ---- */

enum { K_ALL_REDUCE, K_BROADCAST, K_REDUCE, K_ALL_GATHER, K_REDUCE_SCATTER, K_SEND, K_RECV, K_BARRIER, K_ALL_REDUCE_MANY };
static const char *const kind_names[] = {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "send", "recv", "barrier", "all_reduce"};

#define MAX_COPIES 64

struct nn_work {
    int refcount;                /* atomic */
    nn_pg *pg;
    int kind, rank, size;
    const char *backend;
    nn_tensor *buf, *buf2;       /* what the backend works on (contiguous, on its device) */
    nn_tensor **many;            /* K_ALL_REDUCE_MANY's tensors, reduced in place */
    int nmany;
    size_t count;
    nn_dtype dt;
    nn_reduce_op op;
    int peer, tag;
    bool base;                   /* all_gather_into_tensor, reduce_scatter_tensor (PyTorch's _base names) */
    int64_t prof;                /* its profiler event, -1: none */
    int64_t ran[2];              /* when run ran (profiling) */
    /* finishing, in the waiting thread */
    bool avg;                    /* divide buf by size */
    int ncopies;
    nn_tensor *copy_dst[MAX_COPIES], *copy_src[MAX_COPIES];
    nn_tensor **more_dst, **more_src; /* past MAX_COPIES */
    nn_tensor *touched;          /* written in place by the backend: bump its version */
    /* state */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done, finished;
    bool queued;                 /* run on the group's thread, which holds a reference until done */
    void *pending;               /* a posted point-to-point transfer, for ops->wait */
    const nn_pg_ops *ops;
    double timeout;
    nn_status status;
    char msg[1024];
    nn_work *next;
};

struct nn_pg_thread {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    nn_work *head, *tail;
    bool stop;
};

static nn_work *work_new(nn_pg *pg, int kind)
{
    nn_work *w = calloc(1, sizeof *w);
    if (!w) { nn_error(NN_ERR_NOMEM, "%s: out of memory", kind_names[kind]); return NULL; }
    w->refcount = 1;
    w->pg = pg;
    w->kind = kind;
    w->rank = pg->rank;
    w->size = pg->size;
    w->backend = pg->ops->name;
    w->ops = pg->ops;
    w->timeout = pg->timeout;
    w->prof = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    return w;
}

/* The last reference always goes in the submitting thread: the group's thread drops its own
 * before it marks the work done, and a release here waits for that. Tensors are released
 * (their counts are not atomic) only where the engine's other work runs. */
void nn_work_release(nn_work *w)
{
    if (!w) return;
    if (w->queued) {
        pthread_mutex_lock(&w->mu);
        while (!w->done) pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
    }
    if (__atomic_sub_fetch(&w->refcount, 1, __ATOMIC_ACQ_REL) > 0) return;
    if (w->pending) w->ops->wait(w->pending, w->timeout); /* the transfer may not outlive its buffer */
    nn_release(w->buf);
    nn_release(w->buf2);
    for (int i = 0; i < w->ncopies; i++) {
        nn_release(i < MAX_COPIES ? w->copy_dst[i] : w->more_dst[i - MAX_COPIES]);
        nn_release(i < MAX_COPIES ? w->copy_src[i] : w->more_src[i - MAX_COPIES]);
    }
    free(w->more_dst);
    free(w->more_src);
    nn_release(w->touched);
    for (int i = 0; i < w->nmany; i++) nn_release(w->many[i]);
    free(w->many);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}

/* After the work: copy src (a view of a work buffer) into dst. Takes both references. */
static nn_status add_copy(nn_work *w, nn_tensor *dst, nn_tensor *src)
{
    int i = w->ncopies;
    if (i >= MAX_COPIES) {
        int k = i - MAX_COPIES;
        if (k % 64 == 0) {
            nn_tensor **d = realloc(w->more_dst, sizeof *d * (k + 64)), **s = d ? realloc(w->more_src, sizeof *s * (k + 64)) : NULL;
            if (d) w->more_dst = d;
            if (!s) { nn_release(dst); nn_release(src); return nn_error(NN_ERR_NOMEM, "%s: out of memory", kind_names[w->kind]); }
            w->more_src = s;
        }
        w->more_dst[k] = dst;
        w->more_src[k] = src;
    } else {
        w->copy_dst[i] = dst;
        w->copy_src[i] = src;
    }
    w->ncopies++;
    return NN_OK;
}

static nn_status run_many(nn_work *w)
{
    void **bufs = malloc(sizeof *bufs * w->nmany);
    size_t *counts = malloc(sizeof *counts * w->nmany);
    nn_status st = bufs && counts ? NN_OK : nn_error(NN_ERR_NOMEM, "all_reduce: out of memory");
    for (int i = 0; i < w->nmany && !st; i++) bufs[i] = nn_data(w->many[i]), counts[i] = (size_t)nn_numel(w->many[i]);
    if (!st) st = w->ops->all_reduce_many(w->pg, bufs, counts, w->nmany, w->dt, w->op, w->many[0]->storage->device);
    free(bufs);
    free(counts);
    return st;
}

static nn_device work_device(const nn_work *w)
{
    return w->buf ? w->buf->storage->device : w->nmany ? w->many[0]->storage->device : NN_DEVICE_CPU;
}

static void run(nn_work *w)
{
    nn_pg *pg = w->pg;
    const nn_pg_ops *o = pg->ops;
    void *a = w->buf ? nn_data(w->buf) : NULL, *b = w->buf2 ? nn_data(w->buf2) : NULL;
    nn_device dev = work_device(w);
    nn_status st = NN_OK;
    if (w->prof >= 0) w->ran[0] = nn_profiler_now_ns();
    switch (w->kind) {
    case K_ALL_REDUCE: st = o->all_reduce(pg, a, w->count, w->dt, w->op, dev); break;
    case K_BROADCAST: st = o->broadcast(pg, a, w->count, w->dt, w->peer, dev); break;
    case K_REDUCE: st = o->reduce(pg, a, w->count, w->dt, w->op, w->peer, dev); break;
    case K_ALL_GATHER: st = o->all_gather(pg, b, a, w->count, w->dt, dev); break;
    case K_REDUCE_SCATTER: st = o->reduce_scatter(pg, a, b, w->count, w->dt, w->op, dev); break;
    case K_SEND: st = o->send(pg, a, w->count, w->dt, w->peer, w->tag, dev, &w->pending); break;
    case K_RECV: st = o->recv(pg, a, w->count, w->dt, w->peer, w->tag, dev, &w->pending); break;
    case K_BARRIER: st = o->barrier(pg); break;
    case K_ALL_REDUCE_MANY: st = run_many(w); break;
    }
    if (!st && o->record && w->kind != K_BARRIER && !w->pending) w->pending = o->record(pg, dev);
    if (w->prof >= 0) w->ran[1] = nn_profiler_now_ns();
    pthread_mutex_lock(&w->mu);
    w->status = st;
    if (st) snprintf(w->msg, sizeof w->msg, "%s", nn_last_error());
    if (w->queued) __atomic_sub_fetch(&w->refcount, 1, __ATOMIC_ACQ_REL); /* never the last (nn_work_release) */
    w->done = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void *thread_main(void *arg)
{
    nn_pg *pg = arg;
    struct nn_pg_thread *t = pg->thread;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->head && !t->stop) pthread_cond_wait(&t->cv, &t->mu);
        nn_work *w = t->head;
        if (!w) break; /* stopping, and nothing left */
        t->head = w->next;
        if (!t->head) t->tail = NULL;
        pthread_mutex_unlock(&t->mu);
        run(w); /* drops the queue's reference; w may be gone after */
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* While profiling: the collective's event, named as PyTorch names it */
static void profile_begin(nn_work *w)
{
    bool nccl = !strcmp(w->backend, "nccl");
    const char *what = kind_names[w->kind];
    if (w->kind == K_BARRIER) what = nccl ? "all_reduce_barrier" : "barrier";
    else if (w->base && nccl) what = w->kind == K_ALL_GATHER ? "_all_gather_base" : "_reduce_scatter_base";
    char name[64];
    snprintf(name, sizeof name, "%s:%s", w->backend, what);
    nn_tensor *in = w->kind == K_REDUCE_SCATTER ? w->buf2 : w->buf;
    w->prof = nn_profiler_comm_begin(name, w->nmany ? w->many : &in, w->nmany ? w->nmany : in != NULL, w->ops->blocking);
}

/* Run the work in this thread; while profiling, a stream backend's on the GPU between two
 * events on its stream, and its event ends with the enqueue. */
static void run_here(nn_work *w)
{
    nn_device dev = work_device(w);
    nn_gpu_stream *s = w->prof >= 0 && w->ops->stream ? w->ops->stream(w->pg, dev) : NULL;
    if (s) nn_profiler_comm_mark(w->prof, 0, dev, s);
    run(w);
    if (s) nn_profiler_comm_mark(w->prof, 1, dev, s);
    if (w->prof >= 0 && !w->ops->blocking) {
        nn_profiler_comm_end(w->prof, -1, nn_profiler_now_ns());
        w->prof = -1;
    }
}

/* Start the work: on the group's thread for a blocking backend, else here and now. */
static nn_work *submit(nn_work *w)
{
    nn_pg *pg = w->pg;
    if (nn_profiling) profile_begin(w);
    if (!pg->ops->blocking || w->kind == K_SEND || w->kind == K_RECV) {
        run_here(w);
        return w;
    }
    if (!pg->thread) {
        struct nn_pg_thread *t = calloc(1, sizeof *t);
        if (!t) { nn_work_release(w); nn_error(NN_ERR_NOMEM, "out of memory"); return NULL; }
        pthread_mutex_init(&t->mu, NULL);
        pthread_cond_init(&t->cv, NULL);
        pg->thread = t;
        if (pthread_create(&t->thread, NULL, thread_main, pg)) {
            free(t);
            pg->thread = NULL;
            nn_work_release(w);
            nn_error(NN_ERR_RUNTIME, "cannot start the collective thread of the process group");
            return NULL;
        }
    }
    struct nn_pg_thread *t = pg->thread;
    __atomic_add_fetch(&w->refcount, 1, __ATOMIC_ACQ_REL); /* the queue's reference */
    w->queued = true;
    pthread_mutex_lock(&t->mu);
    if (t->tail) t->tail->next = w;
    else t->head = w;
    t->tail = w;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return w;
}

bool nn_work_is_completed(nn_work *w)
{
    pthread_mutex_lock(&w->mu);
    bool d = w->done && !w->pending;
    pthread_mutex_unlock(&w->mu);
    return d;
}

/* In-place ops on a detached alias, so a leaf that requires grad can take a collective's result. */
static nn_status divide(nn_tensor *t, int size)
{
    nn_tensor *d = nn_detach(t), *s = nn_scalar_f64((double)size);
    nn_status st = d && s ? nn_binary_(NN_OP_div, d, s) : nn_last_status();
    nn_release(d);
    nn_release(s);
    return st;
}

static nn_status finish(nn_work *w)
{
    if (w->avg && w->buf) {
        nn_status st = divide(w->buf, w->size);
        if (st) return st;
    }
    for (int i = 0; i < w->nmany; i++) {
        nn_status st = w->avg ? divide(w->many[i], w->size) : NN_OK;
        if (st) return st;
        nn_bump_version(w->many[i]);
    }
    for (int i = 0; i < w->ncopies; i++) {
        nn_tensor *dst = i < MAX_COPIES ? w->copy_dst[i] : w->more_dst[i - MAX_COPIES];
        nn_tensor *src = i < MAX_COPIES ? w->copy_src[i] : w->more_src[i - MAX_COPIES];
        nn_tensor *d = nn_detach(dst);
        nn_status st = d ? nn_copy_(d, src) : nn_last_status();
        nn_release(d);
        if (st) return st;
    }
    if (w->touched) nn_bump_version(w->touched);
    return NN_OK;
}

nn_status nn_work_wait(nn_work *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->done) pthread_cond_wait(&w->cv, &w->mu);
    if (w->pending) {
        void *p = w->pending;
        w->pending = NULL;
        if (!w->status && (w->status = w->ops->wait(p, w->timeout))) snprintf(w->msg, sizeof w->msg, "%s", nn_last_error());
    }
    if (w->prof >= 0) { /* a blocking backend's: it ran on the group's thread, or (point-to-point) ends now */
        nn_profiler_comm_end(w->prof, w->queued ? w->ran[0] : -1, w->queued ? w->ran[1] : nn_profiler_now_ns());
        w->prof = -1;
    }
    if (!w->finished) {
        w->finished = true;
        if (!w->status && (w->status = finish(w))) snprintf(w->msg, sizeof w->msg, "%s", nn_last_error());
    }
    nn_status st = w->status;
    pthread_mutex_unlock(&w->mu);
    if (st) return nn_error(st, "%s failed on rank %d of %d (%s): %s", kind_names[w->kind], w->rank, w->size, w->backend, w->msg);
    return NN_OK;
}

/* ---- tensor checks and staging ---- */

static nn_status check_pg(nn_pg *pg, const char *fn)
{
    if (!pg) return nn_error(NN_ERR_RUNTIME, "%s: Default process group has not been initialized, please make sure to call init_process_group.", fn);
    return NN_OK;
}

static nn_status check_op(const char *fn, nn_reduce_op op, nn_dtype dt)
{
    if ((int)op < 0 || op >= NN_NREDUCE) return nn_error(NN_ERR_ARG, "%s: unknown reduce op %d", fn, (int)op);
    if (op == NN_REDUCE_AVG && !nn_dtype_is_float(dt))
        return nn_error(NN_ERR_DTYPE, "%s: ReduceOp.AVG needs a floating point tensor (got %s)", fn, nn_dtype_name(dt));
    return NN_OK;
}

static nn_status check_rank(nn_pg *pg, const char *fn, const char *what, int r)
{
    if (r < 0 || r >= pg->size)
        return nn_error(NN_ERR_ARG, "%s: invalid %s rank %d: should be within the range of [0, %d)", fn, what, r, pg->size);
    return NN_OK;
}

static nn_device backend_device(nn_pg *pg, nn_tensor *t)
{
    nn_device d = t->storage->device;
    return pg->ops->device == NN_CPU ? NN_DEVICE_CPU : d;
}

/* A contiguous tensor on the backend's device with t's shape and dtype: t itself when it
 * already is one; otherwise a new one, holding t's values when copy_in. */
static nn_tensor *staged(nn_pg *pg, const char *fn, nn_tensor *t, bool copy_in)
{
    if (pg->ops->device == NN_CUDA && t->storage->device.type != NN_CUDA) {
        nn_error(NN_ERR_DEVICE, "%s: Tensors must be CUDA and dense (the %s backend got a %s tensor)", fn, pg->ops->name, "cpu");
        return NULL;
    }
    nn_device dev = backend_device(pg, t);
    if (nn_is_contiguous(t) && nn_device_eq(dev, t->storage->device)) return nn_retain(t);
    if (!copy_in) return nn_empty(t->ndim, t->shape, t->dtype, dev);
    nn_tensor *c = nn_to_device(t, dev);
    if (!c) return NULL;
    nn_tensor *r = nn_contiguous(c);
    nn_release(c);
    return r;
}

/* The buffer of an in-place collective on t; sets up the copy back (or the version bump). */
static nn_status inplace_buffer(nn_work *w, const char *fn, nn_tensor *t, bool write_back)
{
    w->buf = staged(w->pg, fn, t, true);
    if (!w->buf) return nn_last_status();
    w->count = (size_t)nn_numel(t);
    w->dt = t->dtype;
    if (!write_back) return NN_OK;
    if (w->buf == t) { w->touched = nn_retain(t); return NN_OK; }
    return add_copy(w, nn_retain(t), nn_retain(w->buf));
}

static nn_work *start(nn_work *w, nn_status st)
{
    if (st) { nn_work_release(w); return NULL; }
    return submit(w);
}

nn_work *nn_dist_all_reduce(nn_pg *pg, nn_tensor *t, nn_reduce_op op)
{
    if (check_pg(pg, "all_reduce") || check_op("all_reduce", op, t->dtype)) return NULL;
    nn_work *w = work_new(pg, K_ALL_REDUCE);
    if (!w) return NULL;
    w->avg = op == NN_REDUCE_AVG && !pg->ops->has_avg;
    w->op = w->avg ? NN_REDUCE_SUM : op;
    return start(w, inplace_buffer(w, "all_reduce", t, true));
}

nn_work *nn_dist_all_reduce_many(nn_pg *pg, nn_tensor *const *ts, int n, nn_reduce_op op)
{
    if (check_pg(pg, "all_reduce") || n < 1 || check_op("all_reduce", op, ts[0]->dtype)) return NULL;
    if (!pg->ops->all_reduce_many) {
        nn_error(NN_ERR_RUNTIME, "all_reduce: the %s backend has no grouped all_reduce", pg->ops->name);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        const nn_tensor *t = ts[i];
        if (t->dtype != ts[0]->dtype || !nn_device_eq(t->storage->device, ts[0]->storage->device) ||
            (nn_devtype)t->storage->device.type != pg->ops->device || !nn_is_contiguous(t)) {
            nn_error(NN_ERR_ARG, "all_reduce: grouped tensors must be contiguous, of one dtype, on one %s device", pg->ops->name);
            return NULL;
        }
    }
    nn_work *w = work_new(pg, K_ALL_REDUCE_MANY);
    if (!w) return NULL;
    if (!(w->many = malloc(sizeof *w->many * n))) {
        nn_work_release(w);
        nn_error(NN_ERR_NOMEM, "all_reduce: out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++) w->many[w->nmany++] = nn_retain(ts[i]);
    w->dt = ts[0]->dtype;
    w->avg = op == NN_REDUCE_AVG && !pg->ops->has_avg;
    w->op = w->avg ? NN_REDUCE_SUM : op;
    return submit(w);
}

nn_work *nn_dist_broadcast(nn_pg *pg, nn_tensor *t, int src)
{
    if (check_pg(pg, "broadcast") || check_rank(pg, "broadcast", "source", src)) return NULL;
    nn_work *w = work_new(pg, K_BROADCAST);
    if (!w) return NULL;
    w->peer = src;
    return start(w, inplace_buffer(w, "broadcast", t, pg->rank != src));
}

nn_work *nn_dist_reduce(nn_pg *pg, nn_tensor *t, int dst, nn_reduce_op op)
{
    if (check_pg(pg, "reduce") || check_rank(pg, "reduce", "destination", dst) || check_op("reduce", op, t->dtype)) return NULL;
    nn_work *w = work_new(pg, K_REDUCE);
    if (!w) return NULL;
    w->peer = dst;
    bool mine = pg->rank == dst;
    w->avg = mine && op == NN_REDUCE_AVG && !pg->ops->has_avg;
    w->op = op == NN_REDUCE_AVG && !pg->ops->has_avg ? NN_REDUCE_SUM : op;
    /* non-destination ranks keep their input: the backend may clobber its buffer */
    nn_status st;
    if (mine) st = inplace_buffer(w, "reduce", t, true);
    else {
        w->buf = staged(pg, "reduce", t, true);
        if (w->buf == t) { nn_release(w->buf); w->buf = nn_clone(t); }
        w->count = (size_t)nn_numel(t);
        w->dt = t->dtype;
        st = w->buf ? NN_OK : nn_last_status();
    }
    return start(w, st);
}

static bool same_shape(const nn_tensor *a, const nn_tensor *b)
{
    return a->ndim == b->ndim && !memcmp(a->shape, b->shape, sizeof(int64_t) * a->ndim);
}

/* A [size * numel(like)] contiguous buffer on the backend's device. */
static nn_tensor *flat_buffer(nn_pg *pg, nn_tensor *like)
{
    int64_t n = (int64_t)pg->size * nn_numel(like);
    return nn_empty(1, &n, like->dtype, backend_device(pg, like));
}

/* Block r of a flat buffer, shaped like `like`. */
static nn_tensor *block(nn_tensor *flat, int r, nn_tensor *like)
{
    int64_t n = nn_numel(like);
    nn_tensor *s = nn_narrow(flat, 0, r * n, n);
    if (!s) return NULL;
    nn_tensor *v = nn_view(s, like->ndim, like->shape);
    nn_release(s);
    return v;
}

static nn_status check_list(nn_pg *pg, const char *fn, nn_tensor *const *ts, nn_tensor *like)
{
    char a[160], b[160];
    for (int r = 0; r < pg->size; r++) {
        if (ts[r]->dtype != like->dtype)
            return nn_error(NN_ERR_DTYPE, "%s: tensor %d of the list has dtype %s, expected %s", fn, r, nn_dtype_name(ts[r]->dtype), nn_dtype_name(like->dtype));
        if (!same_shape(ts[r], like))
            return nn_error(NN_ERR_SHAPE, "%s: tensor %d of the list has shape %s, expected %s", fn, r,
                            nn_shape_str(a, ts[r]->ndim, ts[r]->shape), nn_shape_str(b, like->ndim, like->shape));
    }
    return NN_OK;
}

nn_work *nn_dist_all_gather(nn_pg *pg, nn_tensor *const *outs, nn_tensor *t)
{
    if (check_pg(pg, "all_gather") || check_list(pg, "all_gather", outs, t)) return NULL;
    nn_work *w = work_new(pg, K_ALL_GATHER);
    if (!w) return NULL;
    w->buf = staged(pg, "all_gather", t, true);
    w->buf2 = w->buf ? flat_buffer(pg, t) : NULL;
    w->count = (size_t)nn_numel(t);
    w->dt = t->dtype;
    nn_status st = w->buf2 ? NN_OK : nn_last_status();
    for (int r = 0; r < pg->size && !st; r++) {
        nn_tensor *v = block(w->buf2, r, t);
        st = v ? add_copy(w, nn_retain(outs[r]), v) : nn_last_status();
    }
    return start(w, st);
}

nn_work *nn_dist_all_gather_into_tensor(nn_pg *pg, nn_tensor *out, nn_tensor *t)
{
    if (check_pg(pg, "all_gather_into_tensor")) return NULL;
    if (out->dtype != t->dtype) {
        nn_error(NN_ERR_DTYPE, "all_gather_into_tensor: output dtype %s does not match input dtype %s", nn_dtype_name(out->dtype), nn_dtype_name(t->dtype));
        return NULL;
    }
    if (nn_numel(out) != (int64_t)pg->size * nn_numel(t)) {
        nn_error(NN_ERR_SHAPE, "all_gather_into_tensor: output tensor size must be equal to world_size times input tensor size (%lld vs %d * %lld)",
                 (long long)nn_numel(out), pg->size, (long long)nn_numel(t));
        return NULL;
    }
    nn_work *w = work_new(pg, K_ALL_GATHER);
    if (!w) return NULL;
    w->base = true;
    w->buf = staged(pg, "all_gather_into_tensor", t, true);
    w->buf2 = w->buf ? staged(pg, "all_gather_into_tensor", out, false) : NULL;
    w->count = (size_t)nn_numel(t);
    w->dt = t->dtype;
    nn_status st = w->buf2 ? NN_OK : nn_last_status();
    if (!st) {
        if (w->buf2 == out) w->touched = nn_retain(out);
        else st = add_copy(w, nn_retain(out), nn_retain(w->buf2));
    }
    return start(w, st);
}

static nn_work *reduce_scatter_into(nn_pg *pg, nn_work *w, nn_tensor *out, nn_reduce_op op)
{
    w->avg = op == NN_REDUCE_AVG && !pg->ops->has_avg;
    w->op = w->avg ? NN_REDUCE_SUM : op;
    w->buf = staged(pg, "reduce_scatter", out, false);
    w->count = (size_t)nn_numel(out);
    w->dt = out->dtype;
    nn_status st = w->buf ? NN_OK : nn_last_status();
    if (!st) {
        if (w->buf == out) w->touched = nn_retain(out);
        else st = add_copy(w, nn_retain(out), nn_retain(w->buf));
    }
    return start(w, st);
}

nn_work *nn_dist_reduce_scatter(nn_pg *pg, nn_tensor *out, nn_tensor *const *ins, nn_reduce_op op)
{
    if (check_pg(pg, "reduce_scatter") || check_op("reduce_scatter", op, out->dtype) || check_list(pg, "reduce_scatter", ins, out)) return NULL;
    nn_work *w = work_new(pg, K_REDUCE_SCATTER);
    if (!w) return NULL;
    w->buf2 = flat_buffer(pg, out);
    for (int r = 0; r < pg->size && w->buf2; r++) {
        nn_tensor *v = block(w->buf2, r, out);
        nn_status st = v ? nn_copy_(v, ins[r]) : nn_last_status();
        nn_release(v);
        if (st) { nn_work_release(w); return NULL; }
    }
    if (!w->buf2) { nn_work_release(w); return NULL; }
    return reduce_scatter_into(pg, w, out, op);
}

nn_work *nn_dist_reduce_scatter_tensor(nn_pg *pg, nn_tensor *out, nn_tensor *in, nn_reduce_op op)
{
    if (check_pg(pg, "reduce_scatter_tensor") || check_op("reduce_scatter_tensor", op, out->dtype)) return NULL;
    if (in->dtype != out->dtype) {
        nn_error(NN_ERR_DTYPE, "reduce_scatter_tensor: input dtype %s does not match output dtype %s", nn_dtype_name(in->dtype), nn_dtype_name(out->dtype));
        return NULL;
    }
    if (nn_numel(in) != (int64_t)pg->size * nn_numel(out)) {
        nn_error(NN_ERR_SHAPE, "reduce_scatter_tensor: input tensor must be the same size as output size times world size (%lld vs %d * %lld)",
                 (long long)nn_numel(in), pg->size, (long long)nn_numel(out));
        return NULL;
    }
    nn_work *w = work_new(pg, K_REDUCE_SCATTER);
    if (!w) return NULL;
    w->base = true;
    nn_tensor *c = nn_to_device(in, backend_device(pg, in)); /* the input is clobbered: always a copy */
    w->buf2 = c ? nn_clone(c) : NULL;
    nn_release(c);
    if (!w->buf2) { nn_work_release(w); return NULL; }
    return reduce_scatter_into(pg, w, out, op);
}

static nn_work *p2p(nn_pg *pg, int kind, nn_tensor *t, int peer, int tag)
{
    const char *fn = kind_names[kind];
    if (check_pg(pg, fn) || check_rank(pg, fn, kind == K_SEND ? "destination" : "source", peer)) return NULL;
    if (peer == pg->rank) {
        nn_error(NN_ERR_ARG, "%s: invalid %s rank %d: a rank cannot %s itself", fn, kind == K_SEND ? "destination" : "source", peer, kind == K_SEND ? "send to" : "receive from");
        return NULL;
    }
    nn_work *w = work_new(pg, kind);
    if (!w) return NULL;
    w->peer = peer;
    w->tag = tag;
    return start(w, inplace_buffer(w, fn, t, kind == K_RECV));
}

nn_work *nn_dist_send(nn_pg *pg, nn_tensor *t, int dst, int tag) { return p2p(pg, K_SEND, t, dst, tag); }
nn_work *nn_dist_recv(nn_pg *pg, nn_tensor *t, int src, int tag) { return p2p(pg, K_RECV, t, src, tag); }

nn_work *nn_dist_barrier(nn_pg *pg)
{
    if (check_pg(pg, "barrier")) return NULL;
    nn_work *w = work_new(pg, K_BARRIER);
    return w ? submit(w) : NULL;
}

nn_status nn_dist_broadcast_coalesced(nn_pg *pg, nn_tensor *const *ts, int n, int src)
{
    if (check_pg(pg, "broadcast_coalesced")) return nn_last_status();
    bool *done = calloc(n ? n : 1, 1);
    if (!done) return nn_error(NN_ERR_NOMEM, "broadcast_coalesced: out of memory");
    nn_status st = NN_OK;
    for (int i = 0; i < n && !st; i++) { /* one buffer per dtype and device, in first-seen order */
        if (done[i]) continue;
        nn_tensor *first = ts[i];
        int64_t total = 0;
        for (int j = i; j < n; j++)
            if (!done[j] && ts[j]->dtype == first->dtype && nn_device_eq(ts[j]->storage->device, first->storage->device)) total += nn_numel(ts[j]);
        nn_tensor *flat = nn_empty(1, &total, first->dtype, first->storage->device);
        if (!flat) { st = nn_last_status(); break; }
        for (int pass = 0; pass < 2 && !st; pass++) {
            int64_t off = 0;
            for (int j = i; j < n && !st; j++) {
                nn_tensor *t = ts[j];
                if (done[j] || t->dtype != first->dtype || !nn_device_eq(t->storage->device, first->storage->device)) continue;
                int64_t k = nn_numel(t);
                nn_tensor *s = nn_narrow(flat, 0, off, k), *v = s ? nn_view(s, t->ndim, t->shape) : NULL, *d = v ? nn_detach(t) : NULL;
                if (!d) st = nn_last_status();
                else if (pass == 0 && pg->rank == src) st = nn_copy_(v, d);
                else if (pass == 1 && pg->rank != src) st = nn_copy_(d, v);
                nn_release(s);
                nn_release(v);
                nn_release(d);
                off += k;
            }
            if (pass == 0 && !st) {
                nn_work *w = nn_dist_broadcast(pg, flat, src);
                st = w ? nn_work_wait(w) : nn_last_status();
                nn_work_release(w);
            }
        }
        for (int j = i; j < n; j++)
            if (ts[j]->dtype == first->dtype && nn_device_eq(ts[j]->storage->device, first->storage->device)) done[j] = true;
        nn_release(flat);
    }
    free(done);
    return st;
}

/* ---- groups ---- */

static int next_group_id;

/* Check in, then wait for every rank: a missing rank is named, not waited for forever. A store
 * that fails before the deadline is reported as such, not as a timeout; on a second init in this
 * process (id > 0) it is retried while time is left: a rank can reach rank 0's old store before
 * rank 0 has closed it (destroy_process_group, then init_process_group at the same address),
 * and the next connection then reaches the new one. */
static nn_status join(nn_pg *pg, nn_store *store, int rank, int world_size, double timeout)
{
    char key[64];
    double deadline = nn_net_now() + timeout;
    for (;;) {
        snprintf(key, sizeof key, "pg%d/rank/%d", pg->id, rank);
        nn_status st = nn_store_set(store, key, "1", 1);
        int r = 0;
        for (; r < world_size && !st; r++) {
            snprintf(key, sizeof key, "pg%d/rank/%d", pg->id, r);
            double left = deadline - nn_net_now();
            void *v;
            size_t n;
            st = store->ops->get(store, key, left > 0 ? left : 0, &v, &n);
            if (!st) free(v);
        }
        if (!st) return NN_OK;
        if (nn_net_now() < deadline - 0.5) { /* not a timeout: the store failed (its host closed it, say) */
            if (pg->id > 0) {
                nn_clear_error();
                usleep(20000);
                continue;
            }
            char why[1024];
            snprintf(why, sizeof why, "%s", nn_last_error());
            return nn_error(st, "the store at %s failed while the ranks were joining: %s", store->desc, why);
        }
        char missing[512] = "";
        size_t len = 0;
        int nmissing = 0;
        for (int q = r > 0 ? r - 1 : 0; q < world_size; q++) {
            bool there = false;
            snprintf(key, sizeof key, "pg%d/rank/%d", pg->id, q);
            if (nn_store_check(store, key, &there) || there) continue;
            if (nmissing++ < 16 && len < sizeof missing - 16) len += (size_t)snprintf(missing + len, sizeof missing - len, "%s%d", nmissing > 1 ? ", " : "", q);
        }
        return nn_error(NN_ERR_RUNTIME, "timed out after %g s waiting for all %d ranks to join at %s: %d missing (rank%s %s%s)",
                        timeout, world_size, store->desc, nmissing, nmissing == 1 ? "" : "s", missing, nmissing > 16 ? ", ..." : "");
    }
}

static nn_pg *pg_create(const char *fn, const char *backend, nn_store *store, int rank, int world_size, double timeout, int id)
{
    nn_pg_create_fn create = find_backend(backend);
    if (!create) {
        if (!strcmp(backend, "nccl")) nn_error(NN_ERR_RUNTIME, "Distributed package doesn't have NCCL built in (this nnrepl was built without CUDA)");
        else nn_error(NN_ERR_ARG, "Invalid backend: '%s' (expected 'gloo' or 'nccl')", backend);
        nn_store_free(store);
        return NULL;
    }
    nn_pg *pg = calloc(1, sizeof *pg);
    if (!pg) { nn_store_free(store); nn_error(NN_ERR_NOMEM, "out of memory"); return NULL; }
    pg->rank = rank;
    pg->size = world_size;
    pg->timeout = timeout;
    pg->store = store;
    pg->id = id;

    nn_status st = join(pg, store, rank, world_size, timeout);
    if (!st) st = create(pg);
    /* every rank is connected before any returns (and may leave, taking the store with it); a stream
     * backend makes its communicator at the first collective, on that tensor's device, instead */
    if (!st && pg->ops->blocking) {
        nn_work *w = nn_dist_barrier(pg);
        st = w ? nn_work_wait(w) : nn_last_status();
        nn_work_release(w);
    }
    if (st) {
        char msg[1536];
        snprintf(msg, sizeof msg, "%s", nn_last_error());
        nn_pg_destroy(pg);
        nn_error(st, "%s: %s [rank %d of %d]", fn, msg, rank, world_size);
        return NULL;
    }
    return pg;
}

nn_pg *nn_pg_new(const char *backend, nn_store *store, int rank, int world_size, double timeout)
{
    return pg_create("init_process_group", backend, store, rank, world_size, timeout, next_group_id++);
}

nn_pg *nn_pg_new_group(const char *backend, nn_store *store, int rank, int size, double timeout)
{
    return pg_create("new_group", backend, store, rank, size, timeout, 0);
}

void nn_pg_destroy(nn_pg *pg)
{
    if (!pg) return;
    struct nn_pg_thread *t = pg->thread;
    if (t) {
        pthread_mutex_lock(&t->mu);
        t->stop = true;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->thread, NULL);
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
        free(t);
    }
    if (pg->ops && pg->ops->destroy) pg->ops->destroy(pg);
    const char *path = nn_store_file_path(pg->store);
    if (path && pg->ops) { /* the last rank out removes the rendezvous file */
        int64_t left = 0;
        char key[64];
        snprintf(key, sizeof key, "pg%d/finished", pg->id);
        if (!nn_store_add(pg->store, key, 1, &left) && left == pg->size) remove(path);
    }
    nn_store_free(pg->store);
    free(pg);
}

/* ---- rendezvous ---- */

static nn_status env_int(const char *name, int *out)
{
    const char *v = getenv(name);
    if (!v || !*v) return nn_error(NN_ERR_RUNTIME, "Error initializing torch.distributed using env:// rendezvous: environment variable %s expected, but not set", name);
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 1 << 24) return nn_error(NN_ERR_ARG, "Error initializing torch.distributed using env:// rendezvous: %s='%s' is not a valid number", name, v);
    *out = (int)x;
    return NN_OK;
}

/* ?rank=1&world_size=2 */
static void query_ints(const char *q, int *rank, int *world)
{
    while (q && *q) {
        q += *q == '?' || *q == '&';
        if (!strncmp(q, "rank=", 5) && *rank < 0) *rank = atoi(q + 5);
        else if (!strncmp(q, "world_size=", 11) && *world < 0) *world = atoi(q + 11);
        q = strchr(q, '&');
    }
}

nn_pg *nn_pg_init(const char *backend, const char *init_method, int rank, int world_size, double timeout)
{
    struct sigaction old;
    if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN); /* a peer that went away is an error to report, not a signal to die of */
    char host[256] = "", path[4096] = "";
    int port = -1;
    bool is_file = false;
    const char *m = init_method && *init_method ? init_method : "env://";
    if (!strncmp(m, "env://", 6)) {
        const char *a = getenv("MASTER_ADDR");
        if (!a || !*a) { nn_error(NN_ERR_RUNTIME, "Error initializing torch.distributed using env:// rendezvous: environment variable MASTER_ADDR expected, but not set"); return NULL; }
        snprintf(host, sizeof host, "%s", a);
        if (env_int("MASTER_PORT", &port)) return NULL;
        if (rank < 0 && env_int("RANK", &rank)) return NULL;
        if (world_size < 0 && env_int("WORLD_SIZE", &world_size)) return NULL;
    } else if (!strncmp(m, "tcp://", 6)) {
        const char *h = m + 6, *q = strchr(h, '?');
        size_t hl = q ? (size_t)(q - h) : strlen(h);
        const char *colon = NULL;
        if (*h == '[') { /* [v6]:port */
            const char *close = memchr(h, ']', hl);
            if (close && close[1] == ':') { snprintf(host, sizeof host, "%.*s", (int)(close - h - 1), h + 1); colon = close + 1; }
        } else {
            for (const char *c = h; c < h + hl; c++) if (*c == ':') colon = c;
            if (colon) snprintf(host, sizeof host, "%.*s", (int)(colon - h), h);
        }
        char *end = NULL;
        if (colon) port = (int)strtol(colon + 1, &end, 10);
        if (!colon || !*host || end == colon + 1 || (end != h + hl) || port < 0 || port > 65535) {
            nn_error(NN_ERR_ARG, "init_process_group: init_method '%s' is not tcp://host:port", m);
            return NULL;
        }
        query_ints(q, &rank, &world_size);
    } else if (!strncmp(m, "file://", 7)) {
        const char *p = m + 7, *q = strchr(p, '?');
        snprintf(path, sizeof path, "%.*s", (int)(q ? q - p : (long)strlen(p)), p);
        query_ints(q, &rank, &world_size);
        is_file = true;
    } else {
        nn_error(NN_ERR_ARG, "init_process_group: unknown init_method '%s' (expected env://, tcp://host:port or file:///path)", m);
        return NULL;
    }
    if (world_size < 1) { nn_error(NN_ERR_ARG, "init_process_group: world_size is needed with init_method '%s' (got %d)", m, world_size); return NULL; }
    if (rank < 0 || rank >= world_size) { nn_error(NN_ERR_ARG, "init_process_group: rank %d is out of range for world_size %d", rank, world_size); return NULL; }
    if (timeout <= 0) { nn_error(NN_ERR_ARG, "init_process_group: timeout must be positive (got %g s)", timeout); return NULL; }
    if (!find_backend(backend)) return nn_pg_new(backend, NULL, rank, world_size, timeout); /* the backend's error */

    nn_store *store = is_file ? nn_store_file(path, timeout) : nn_store_tcp(host, port, rank == 0, timeout);
    if (!store) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", nn_last_error());
        nn_error(NN_ERR_RUNTIME, "init_process_group: %s [rank %d of %d]", msg, rank, world_size);
        return NULL;
    }
    return nn_pg_new(backend, store, rank, world_size, timeout);
}

/* ---- the default group ---- */

static nn_pg *default_pg;

nn_pg *nn_dist_default(void) { return default_pg; }

void nn_dist_set_default(nn_pg *pg)
{
    if (default_pg && default_pg != pg) nn_pg_destroy(default_pg);
    default_pg = pg;
}
