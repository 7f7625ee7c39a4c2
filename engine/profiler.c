/* The profiler's recording (see profiler.h). GPU times come from event pairs recorded on the
 * op's stream around its kernel (a collective's: on the stream it runs on); each device's first
 * recorded op also gets a reference event, so that its ops can be placed on a timeline. Events
 * are kept in per-device pools between runs. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profiler.h"
#include "tracer.h"

enum { MAX_OPEN = 256, MAX_GPUS = 16 };

_Thread_local bool nn_profiling, nn_profiling_memory;
static _Thread_local nn_prof_stack_fn stack_fn;

void nn_profiler_set_stack(nn_prof_stack_fn fn) { stack_fn = fn; }

typedef struct {
    nn_gpu_event **free;
    int nfree, cap;
    nn_gpu_event *ref; /* this run's reference event (NULL: no op yet) */
    int64_t ref_index; /* the op whose start it marks */
} gpu_pool;

static atomic_bool running; /* one recording at a time, by the thread whose nn_profiling is set */

static struct {
    bool cuda, shapes;
    bool nvtx; /* emit_nvtx: ops, nodes and ranges become NVTX ranges, nothing is recorded */
    uint32_t run; /* counts starts: a collective's id names its run */
    int64_t epoch;
    nn_prof_event *ev;
    int64_t n, cap;
    int64_t open[MAX_OPEN];
    int nopen; /* ranges opened beyond MAX_OPEN deep are not recorded */
    int in_op;
    int64_t op; /* the op running, while in_op */
    gpu_pool gpu[MAX_GPUS];
} P;

int64_t nn_profiler_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Events that keep a copy of their name: a range's is the caller's string, and a node's can
 * be freed with the node (a custom Function's) before the events are read. */
static bool owns_name(nn_prof_kind kind)
{
    return kind == NN_PROF_RANGE || kind == NN_PROF_NODE || kind == NN_PROF_COMM;
}

static void drop_events(void)
{
    for (int64_t i = 0; i < P.n; i++) {
        if (owns_name(P.ev[i].kind)) free((char *)P.ev[i].name);
        free(P.ev[i].shapes);
        free(P.ev[i].stack);
    }
    P.n = 0;
}

nn_status nn_profiler_start_nvtx(bool shapes)
{
    if (!nn_gpu || !nn_gpu->nvtx_push) return nn_error(NN_ERR_RUNTIME, "emit_nvtx: NVTX functions not installed. Are you sure you have a CUDA build?");
    if (nn_profiling) return nn_error(NN_ERR_RUNTIME, "profiler: already running (stop it first)");
    if (atomic_exchange(&running, true)) return nn_error(NN_ERR_RUNTIME, "profiler: already running on another thread");
    drop_events();
    P.nvtx = true;
    P.shapes = shapes;
    P.nopen = P.in_op = 0;
    nn_profiling = true;
    nn_profiling_memory = false;
    return NN_OK;
}

static char *shapes_of(nn_tensor *const *ts, int n);

/* an NVTX range named name (with its inputs' sizes after it, as PyTorch's emit_nvtx writes them) */
static void nvtx_open(const char *name, nn_tensor *const *in, int nin)
{
    char *sizes = P.shapes && in ? shapes_of(in, nin) : NULL;
    if (!sizes) {
        nn_gpu->nvtx_push(name);
        return;
    }
    size_t n = strlen(name) + strlen(sizes) + 16;
    char *label = malloc(n);
    if (label) snprintf(label, n, "%s, sizes = %s", name, sizes);
    nn_gpu->nvtx_push(label ? label : name);
    free(label);
    free(sizes);
}

nn_status nn_profiler_start(bool cuda, bool shapes, bool memory)
{
    if (nn_profiling) return nn_error(NN_ERR_RUNTIME, "profiler: already running (stop it first)");
    if (atomic_exchange(&running, true)) return nn_error(NN_ERR_RUNTIME, "profiler: already running on another thread");
    drop_events();
    P.cuda = cuda && nn_gpu && nn_gpu->device_count() > 0;
    P.shapes = shapes;
    P.nopen = P.in_op = 0;
    P.run++;
    for (int d = 0; d < MAX_GPUS; d++) P.gpu[d].ref = NULL;
    P.epoch = nn_profiler_now_ns();
    nn_profiling = true;
    nn_profiling_memory = memory;
    return NN_OK;
}

static nn_prof_event *add(nn_prof_kind kind, const char *name, nn_device dev)
{
    if (P.n == P.cap) {
        int64_t cap = P.cap ? 2 * P.cap : 4096;
        nn_prof_event *e = realloc(P.ev, cap * sizeof *e);
        if (!e) return NULL;
        P.ev = e, P.cap = cap;
    }
    nn_prof_event *e = &P.ev[P.n++];
    memset(e, 0, sizeof *e);
    e->name = name;
    e->kind = kind;
    e->device = dev;
    e->parent = kind == NN_PROF_MEMORY && P.in_op ? P.op : P.nopen ? P.open[P.nopen - 1] : -1;
    e->device_us = -1;
    e->start_ns = nn_profiler_now_ns() - P.epoch;
    return e;
}

int64_t nn_profiler_push(nn_prof_kind kind, const char *name)
{
    if (!nn_profiling || nn_tracing) return -1;
    if (P.nvtx) {
        nn_gpu->nvtx_push(name);
        return 0;
    }
    if (P.nopen == MAX_OPEN) return -1;
    char *own = NULL;
    if (owns_name(kind) && !(own = strdup(name))) return -1;
    nn_prof_event *e = add(kind, own ? own : name, NN_DEVICE_CPU);
    if (!e) {
        free(own);
        return -1;
    }
    P.open[P.nopen++] = P.n - 1;
    return P.n - 1;
}

void nn_profiler_pop(int64_t index)
{
    if (index >= 0 && nn_profiling && P.nvtx) {
        nn_gpu->nvtx_pop();
        return;
    }
    if (index < 0 || !nn_profiling || index >= P.n) return;
    P.ev[index].end_ns = nn_profiler_now_ns() - P.epoch;
    while (P.nopen && P.open[P.nopen - 1] >= index) P.nopen--; /* closes any left open inside it */
}

/* an event of device d (created there), NULL on failure */
static nn_gpu_event *take_event(int d)
{
    gpu_pool *g = &P.gpu[d];
    if (g->nfree) return g->free[--g->nfree];
    int cur = nn_gpu->current_device();
    if (cur != d && nn_gpu->set_device(d)) return NULL;
    nn_gpu_event *e = nn_gpu->event_new(true);
    if (cur != d) nn_gpu->set_device(cur);
    return e;
}

static void give_event(int d, nn_gpu_event *e)
{
    gpu_pool *g = &P.gpu[d];
    if (!e) return;
    if (g->nfree == g->cap) {
        int cap = g->cap ? 2 * g->cap : 256;
        nn_gpu_event **f = realloc(g->free, cap * sizeof *f);
        if (!f) {
            nn_gpu->event_free(e);
            return;
        }
        g->free = f, g->cap = cap;
    }
    g->free[g->nfree++] = e;
}

/* an event recorded now on stream s of device d (NULL: its current stream), or NULL on failure */
static nn_gpu_event *mark(int d, nn_gpu_stream *s)
{
    nn_gpu_event *e = take_event(d);
    nn_gpu_stream *cur = s ? NULL : nn_gpu->current_stream(d);
    if (e && nn_gpu->event_record(e, s ? s : cur)) {
        give_event(d, e);
        e = NULL;
    }
    if (cur) nn_gpu->stream_free(cur); /* a handle to the stream, not the stream */
    return e;
}

static char *shapes_of(nn_tensor *const *ts, int n)
{
    size_t cap = 16 + (size_t)n * (NN_MAX_DIMS * 22 + 4), len = 1;
    char *s = malloc(cap), dims[NN_MAX_DIMS * 22 + 4];
    if (!s) return NULL;
    strcpy(s, "[");
    for (int i = 0; i < n; i++) {
        const nn_tensor *t = ts[i];
        const char *d = t ? nn_shape_str(dims, t->ndim, t->shape) : "[]";
        len += (size_t)snprintf(s + len, cap - len, i ? ", %s" : "%s", d);
    }
    snprintf(s + len, cap - len, "]");
    return s;
}

enum { MAX_OUTS = 3 };

/* An op's outputs are allocated just before it runs: the last allocation of each output's
 * storage among the memory events recorded last (an address can be reused) becomes the op's.
 * Its event (i, the last) moves before the first of them and starts with it; returns its new
 * index. */
static int64_t claim_outputs(int64_t i, nn_tensor *const *outs, int nouts)
{
    int64_t mine[MAX_OUTS], first = i;
    int n = 0;
    bool done[MAX_OUTS] = {false};
    for (int64_t j = i - 1; j >= 0 && P.ev[j].kind == NN_PROF_MEMORY; j--) {
        bool hit = false;
        for (int k = 0; k < nouts && k < MAX_OUTS; k++)
            if (!done[k] && outs[k] && P.ev[j].bytes > 0 && (uintptr_t)outs[k]->storage->data == P.ev[j].addr) done[k] = hit = true;
        if (hit) mine[n++] = first = j;
    }
    if (!n) return i;
    nn_prof_event op = P.ev[i];
    memmove(&P.ev[first + 1], &P.ev[first], (size_t)(i - first) * sizeof op);
    op.start_ns = P.ev[first + 1].start_ns;
    P.ev[first] = op;
    for (int m = 0; m < n; m++) P.ev[mine[m] + 1].parent = first;
    return first;
}

/* fn(ctx) recorded as an op named name on dev; shapes: its inputs' (owned), or NULL; outs: the
 * tensors it writes, which claim their allocations */
static nn_status run_recorded(const char *name, nn_device dev, char *shapes, nn_tensor *const *outs, int nouts,
                              nn_status (*fn)(void *), void *ctx)
{
    nn_prof_event *e = add(NN_PROF_OP, name, dev);
    if (!e) {
        free(shapes);
        return fn(ctx);
    }
    int64_t i = P.n - 1;
    if (nn_profiling_memory) {
        i = claim_outputs(i, outs, nouts);
        e = &P.ev[i];
    }
    e->shapes = shapes;
    if (stack_fn) e->stack = stack_fn();
    bool gpu = P.cuda && dev.type == NN_CUDA && dev.index < MAX_GPUS && !nn_gpu_capturing();
    if (gpu) {
        gpu_pool *g = &P.gpu[dev.index];
        if (!g->ref && (g->ref = mark(dev.index, NULL))) g->ref_index = i;
        e->ev[0] = mark(dev.index, NULL);
    }
    P.in_op++;
    P.op = i;
    nn_status st = fn(ctx);
    P.in_op--;
    e = &P.ev[i]; /* the kernel's frees and allocations add events: keep to the index */
    if (gpu && e->ev[0]) e->ev[1] = mark(dev.index, NULL);
    e->end_ns = nn_profiler_now_ns() - P.epoch;
    return st;
}

typedef struct {
    const nn_kargs *a;
    nn_kernel k;
} kernel_call;

static nn_status call_kernel(void *ctx)
{
    kernel_call *c = ctx;
    return c->k(c->a);
}

nn_status nn_profiler_run(const nn_kargs *a, nn_kernel k)
{
    if (nn_tracing) return nn_tracer_run(a, k);
    if (P.nvtx) {
        nvtx_open(nn_op_name(a->op), a->in, a->nin);
        nn_status st = k(a);
        nn_gpu->nvtx_pop();
        return st;
    }
    if (P.in_op) return k(a);
    kernel_call c = {a, k};
    return run_recorded(nn_op_name(a->op), a->out[0]->storage->device, P.shapes ? shapes_of(a->in, a->nin) : NULL, a->out, 3,
                        call_kernel, &c);
}

nn_status nn_profiler_call(const char *name, nn_device dev, nn_tensor *const *outs, int nouts, nn_status (*fn)(void *), void *ctx)
{
    if (!nn_profiling || nn_tracing || P.in_op) return fn(ctx);
    if (P.nvtx) {
        nvtx_open(name, NULL, 0);
        nn_status st = fn(ctx);
        nn_gpu->nvtx_pop();
        return st;
    }
    return run_recorded(name, dev, NULL, outs, nouts, fn, ctx);
}

void nn_profiler_memory(const void *addr, int64_t bytes, nn_device dev)
{
    if (!nn_profiling || nn_tracing || P.nvtx) return;
    nn_prof_event *e = add(NN_PROF_MEMORY, "[memory]", dev);
    if (!e) return;
    e->end_ns = e->start_ns;
    e->bytes = bytes;
    e->addr = (uintptr_t)addr;
    nn_gpu_memory_stats s;
    if (dev.type != NN_CUDA) e->total_allocated = (int64_t)nn_live_host_bytes();
    else if (nn_gpu && !nn_gpu->memory_stats(dev.index, &s)) e->total_allocated = (int64_t)s.allocated, e->total_reserved = (int64_t)s.reserved;
    else nn_clear_error();
}

/* ---- collectives: an id is the event's index and its run's number ---- */

static int64_t comm_index(int64_t id)
{
    int64_t i = id & (((int64_t)1 << 40) - 1);
    if (id < 0 || !nn_profiling || id >> 40 != (P.run & 0x7fffff) || i >= P.n || P.ev[i].kind != NN_PROF_COMM) return -1;
    return i;
}

int64_t nn_profiler_comm_begin(const char *name, nn_tensor *const *inputs, int n, bool async)
{
    if (!nn_profiling || nn_tracing || P.nvtx) return -1;
    char *own = strdup(name);
    nn_prof_event *e = own ? add(NN_PROF_COMM, own, NN_DEVICE_CPU) : NULL;
    if (!e) {
        free(own);
        return -1;
    }
    e->async = async;
    if (async) e->parent = -1;
    e->end_ns = e->start_ns;
    if (P.shapes) e->shapes = shapes_of(inputs, n);
    return (int64_t)(P.run & 0x7fffff) << 40 | (P.n - 1);
}

void nn_profiler_comm_mark(int64_t id, int which, nn_device dev, nn_gpu_stream *s)
{
    int64_t i = comm_index(id);
    if (i < 0 || !P.cuda || dev.type != NN_CUDA || dev.index < 0 || dev.index >= MAX_GPUS || nn_gpu_capturing()) return;
    nn_prof_event *e = &P.ev[i];
    if (which && !e->ev[0]) return;
    gpu_pool *g = &P.gpu[dev.index];
    if (!which && !g->ref && (g->ref = mark(dev.index, NULL))) g->ref_index = i;
    e->device = dev;
    e->ev[which] = mark(dev.index, s);
}

void nn_profiler_comm_end(int64_t id, int64_t start_ns, int64_t end_ns)
{
    int64_t i = comm_index(id);
    if (i < 0) return;
    if (start_ns >= 0) P.ev[i].start_ns = start_ns - P.epoch;
    P.ev[i].end_ns = end_ns - P.epoch;
}

nn_status nn_profiler_stop(void)
{
    if (!nn_profiling || nn_tracing) return nn_error(NN_ERR_RUNTIME, "profiler: not running");
    nn_profiling = nn_profiling_memory = false;
    if (P.nvtx) {
        P.nvtx = false;
        atomic_store(&running, false);
        return NN_OK;
    }
    int64_t end = nn_profiler_now_ns() - P.epoch;
    while (P.nopen) P.ev[P.open[--P.nopen]].end_ns = end; /* ranges left open end here */
    for (int d = 0; d < MAX_GPUS; d++)
        if (P.gpu[d].ref && nn_gpu->synchronize(d)) nn_clear_error();
    for (int64_t i = 0; i < P.n; i++) {
        nn_prof_event *e = &P.ev[i];
        if (!e->ev[0]) continue;
        int d = e->device.index;
        float ms = 0, at = 0;
        if (e->ev[1] && !nn_gpu->event_elapsed_ms(e->ev[0], e->ev[1], &ms) &&
            !nn_gpu->event_elapsed_ms(P.gpu[d].ref, e->ev[0], &at)) {
            e->device_us = ms * 1e3;
            e->device_start_us = at * 1e3 + P.ev[P.gpu[d].ref_index].start_ns / 1e3;
        } else {
            nn_clear_error();
        }
        give_event(d, e->ev[0]);
        give_event(d, e->ev[1]);
        e->ev[0] = e->ev[1] = NULL;
    }
    for (int d = 0; d < MAX_GPUS; d++) {
        give_event(d, P.gpu[d].ref);
        P.gpu[d].ref = NULL;
    }
    atomic_store(&running, false);
    return NN_OK;
}

int64_t nn_profiler_count(void) { return P.n; }
const nn_prof_event *nn_profiler_event(int64_t i) { return i >= 0 && i < P.n ? &P.ev[i] : NULL; }
int64_t nn_profiler_epoch_ns(void) { return P.epoch; }
