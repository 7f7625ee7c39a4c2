/* torch.profiler's engine side: while on, every op the thread that started it dispatches is
 * recorded with its host time and, on a GPU, its device time (a pair of timing events on the
 * op's stream), together with named ranges (record_function, autograd's nodes) that nest,
 * torch.distributed's collectives and, with memory on, every allocation and free of tensor
 * storage. An op that runs inside another op's kernel counts in its caller. Off, nn_dispatch
 * and the storage allocator each pay one thread-local test. */
#ifndef NN_PROFILER_H
#define NN_PROFILER_H

#include "backend.h"
#include "device.h"

typedef enum { NN_PROF_OP, NN_PROF_RANGE, NN_PROF_NODE, NN_PROF_COMM, NN_PROF_MEMORY } nn_prof_kind;

typedef struct {
    const char *name;        /* the op's or node's name (static), or the range's or collective's (owned) */
    nn_prof_kind kind;
    bool async;              /* a collective run on another thread (Gloo's): no parent */
    int64_t parent;          /* index of the innermost range (or op, for memory) open around it, -1: none */
    nn_device device;        /* an op's, collective's or allocation's device; ranges: the CPU */
    int64_t start_ns, end_ns; /* host, from the profiler's start */
    double device_start_us;  /* GPU ops: from the device's first recorded op */
    double device_us;        /* GPU time; < 0: none (CPU ops, ranges, CUDA profiling off) */
    char *shapes;            /* inputs' shapes, "[[2, 3], []]", with record_shapes; else NULL */
    char *stack;             /* ops: the caller's frames, "file:line" a line each, with a stack function; else NULL */
    nn_gpu_event *ev[2];
    /* memory: bytes allocated (< 0: freed) at addr, and then in use on the device (tensor
     * storage; CUDA: the caching allocator's allocated and reserved bytes) */
    int64_t bytes, total_allocated, total_reserved;
    uintptr_t addr;
} nn_prof_event;

extern _Thread_local bool nn_profiling, nn_profiling_memory;

/* Start recording on this thread (events of the previous run are dropped); cuda: time GPU ops
 * on the device too; shapes: keep the inputs' shapes; memory: record storage allocations and
 * frees. Error if already running. */
nn_status nn_profiler_start(bool cuda, bool shapes, bool memory);
/* emit_nvtx: until nn_profiler_stop, each op, autograd node and range of this thread runs inside
 * an NVTX range of its name (shapes: with its inputs' sizes), for Nsight Systems / Compute; nothing
 * is recorded. Error without the CUDA backend's NVTX or when the profiler is running. */
nn_status nn_profiler_start_nvtx(bool shapes);
/* Stop, wait for the devices and read the GPU times. The events stay until the next start. */
nn_status nn_profiler_stop(void);
int64_t nn_profiler_count(void);
const nn_prof_event *nn_profiler_event(int64_t i);
/* the host time of start, in ns on nn_profiler_now_ns's clock */
int64_t nn_profiler_epoch_ns(void);
/* Open a range (name copied for NN_PROF_RANGE); returns its index for nn_profiler_pop, or -1
 * when not recording. Ranges close in reverse order. */
int64_t nn_profiler_push(nn_prof_kind kind, const char *name);
void nn_profiler_pop(int64_t index);
/* with_stack: fn returns the calling program's frames (malloc'd, "file:line" a line each) or NULL;
 * called for each op this thread records while set (NULL: none) */
typedef char *(*nn_prof_stack_fn)(void);
void nn_profiler_set_stack(nn_prof_stack_fn fn);
/* nn_dispatch's path while profiling: k(a), recorded */
nn_status nn_profiler_run(const nn_kargs *a, nn_kernel k);
/* fn(ctx), recorded as an op named name (a static string) on dev while profiling: device work that
 * does not go through nn_dispatch (copies between devices, cuDNN's RNN); outs: the (at most 3)
 * tensors it writes (NULL entries allowed), whose allocations just before it are its own */
nn_status nn_profiler_call(const char *name, nn_device dev, nn_tensor *const *outs, int nouts, nn_status (*fn)(void *), void *ctx);
/* The storage at addr got bytes (< 0: gave them back); called while nn_profiling_memory, after
 * the allocator's books are updated. The event belongs to the op running or, outside ops, to
 * the innermost open range; an op claims the allocations of its outputs made just before it. */
void nn_profiler_memory(const void *addr, int64_t bytes, nn_device dev);

/* A collective (torch.distributed) issued on this thread: an event named name (copied) with
 * its inputs' shapes (when recording them), from now; its id, or -1 when not recording.
 * async: it runs on another thread (Gloo's), so it has no parent and nn_profiler_comm_end sets
 * its span. */
int64_t nn_profiler_comm_begin(const char *name, nn_tensor *const *inputs, int n, bool async);
/* GPU time: which = 0 before the collective's launch on stream s of dev, 1 after it */
void nn_profiler_comm_mark(int64_t id, int which, nn_device dev, nn_gpu_stream *s);
/* its host span ends at end_ns (from nn_profiler_now_ns); start_ns >= 0 moves its start */
void nn_profiler_comm_end(int64_t id, int64_t start_ns, int64_t end_ns);
int64_t nn_profiler_now_ns(void); /* CLOCK_MONOTONIC */

#endif
