/* Device control beyond kernels: what torch.cuda exposes. A GPU backend fills
 * nn_gpu when it registers (cuda/); with no GPU backend it stays NULL and
 * torch.cuda.is_available() is false. Bindings call through it and never
 * include CUDA headers. */
#ifndef NN_DEVICE_H
#define NN_DEVICE_H

#include "tensor.h"

typedef struct {
    char name[256];
    int major, minor;          /* compute capability */
    size_t total_memory;
    size_t free_memory;        /* free on the device when the properties were read */
    int multi_processor_count;
} nn_gpu_properties;

/* The versions of the libraries the GPU backend was built with and runs on, as the libraries
 * number them (0: absent): CUDA runtime 13000 = 13.0, cuDNN 91000 = 9.10.0, NCCL 22809 = 2.28.9 */
typedef struct {
    int runtime, driver, cudnn, nccl;
} nn_gpu_versions;

typedef struct {
    size_t allocated, max_allocated;   /* bytes in tensors */
    size_t reserved, max_reserved;     /* bytes held from the driver */
    size_t num_alloc_retries, num_ooms;
    size_t num_device_alloc, num_device_free; /* cudaMalloc and cudaFree calls */
} nn_gpu_memory_stats;

#define NN_GPU_MAX 16

/* One block of the caching allocator (torch.cuda.memory_snapshot): segment is the address of the
 * cudaMalloc'd segment holding it; state 0 free, 1 allocated, 2 freed but awaiting other streams. */
typedef struct {
    int device;
    uintptr_t segment, address, stream; /* stream: the cudaStream_t it serves (0 for a graph's pool) */
    size_t size;
    int state;
    bool small, graph_pool;
} nn_gpu_block;

/* a statistic as PyTorch keeps it: now, highest since the last peak reset, total increase and decrease */
typedef struct { int64_t current, peak, allocated, freed; } nn_gpu_stat;
/* the pinned host allocator's (torch.cuda.host_memory_stats); times in microseconds */
typedef struct {
    nn_gpu_stat allocations, allocated_bytes, active_requests, active_bytes;
    int64_t num_host_alloc, num_host_free;
    double alloc_us_total, alloc_us_max, alloc_us_min, free_us_total, free_us_max, free_us_min;
} nn_gpu_host_stats;

typedef struct nn_gpu_stream nn_gpu_stream; /* opaque */
typedef struct nn_gpu_event nn_gpu_event;   /* opaque */
typedef struct nn_gpu_graph nn_gpu_graph;   /* opaque */
struct nn_rnn_problem;                     /* engine/rnn.h */

typedef struct {
    int (*device_count)(void);  /* 0 when no usable GPU (driver missing, no device) */
    int (*current_device)(void);
    nn_status (*set_device)(int index);
    nn_status (*synchronize)(int index);      /* -1: current device */
    nn_status (*properties)(int index, nn_gpu_properties *p);
    void (*versions)(nn_gpu_versions *v);
    nn_status (*memory_stats)(int index, nn_gpu_memory_stats *s);
    void (*reset_peak_memory_stats)(int index);
    nn_status (*empty_cache)(void);
    void (*manual_seed)(uint64_t seed);       /* the device generators */
    bool (*can_access_peer)(int device, int peer); /* device can map peer's memory (cudaDeviceCanAccessPeer) */
    /* streams and events */
    nn_gpu_stream *(*stream_new)(int device, int priority);
    void (*stream_free)(nn_gpu_stream *s);
    nn_gpu_stream *(*current_stream)(int device);
    int (*stream_device)(const nn_gpu_stream *s);
    nn_status (*set_stream)(nn_gpu_stream *s); /* NULL: the device's default stream */
    nn_status (*stream_synchronize)(nn_gpu_stream *s);
    bool (*stream_query)(nn_gpu_stream *s);
    nn_status (*stream_wait_event)(nn_gpu_stream *s, nn_gpu_event *e);
    nn_gpu_event *(*event_new)(bool enable_timing);
    void (*event_free)(nn_gpu_event *e);
    nn_status (*event_record)(nn_gpu_event *e, nn_gpu_stream *s); /* NULL: current stream */
    nn_status (*event_synchronize)(nn_gpu_event *e);
    bool (*event_query)(nn_gpu_event *e);
    nn_status (*event_elapsed_ms)(nn_gpu_event *start, nn_gpu_event *end, float *ms);
    /* tensor memory */
    nn_status (*record_stream)(nn_tensor *t, nn_gpu_stream *s);
    void *(*host_alloc_pinned)(size_t n);
    void (*host_free_pinned)(void *p);
    /* CUDA graphs: between capture_begin and capture_end the current device's work is
     * recorded (on a side stream, current meanwhile), not run; memory allocated then comes
     * from the graph's private pool, shared with `share`'s when given; replay runs it all
     * on the current stream. */
    nn_gpu_graph *(*graph_new)(void);
    void (*graph_free)(nn_gpu_graph *g);
    nn_status (*graph_capture_begin)(nn_gpu_graph *g, nn_gpu_graph *share);
    nn_status (*graph_capture_end)(nn_gpu_graph *g);
    nn_status (*graph_replay)(nn_gpu_graph *g);
    nn_status (*graph_reset)(nn_gpu_graph *g);
    int (*graph_captures)(void); /* graphs capturing now */
    /* Marks for external profilers (Nsight Compute / Systems): profiling on or off
     * (cudaProfilerStart / Stop) and NVTX ranges and marks; nvtx_push / nvtx_pop return the
     * nesting depth (push: before it; pop: after it, -1 when none was open), as NVTX does. */
    nn_status (*profiler_collect)(bool on);
    int (*nvtx_push)(const char *msg);
    int (*nvtx_pop)(void);
    void (*nvtx_mark)(const char *msg);
    uint64_t (*nvtx_range_start)(const char *msg);
    void (*nvtx_range_end)(uint64_t id);
    /* cuDNN's RNN (engine/rnn.h). forward fills y, hy, cy and returns the packed weights and,
     * with train, cuDNN's reserve (new references) for backward. backward takes dy (dhy, dcy
     * NULL: zero) and what forward returned, and writes dx, dhx and dcx where given and, when
     * p->w is not NULL, the parameters' gradients into p->w[0..nw). */
    nn_status (*rnn_forward)(const struct nn_rnn_problem *p, bool train, nn_tensor *y, nn_tensor *hy, nn_tensor *cy,
                             nn_tensor **weights, nn_tensor **reserve);
    nn_status (*rnn_backward)(const struct nn_rnn_problem *p, nn_tensor *y, nn_tensor *dy, nn_tensor *dhy, nn_tensor *dcy,
                              nn_tensor *weights, nn_tensor *reserve, nn_tensor *dx, nn_tensor *dhx, nn_tensor *dcx);
    /* Debugging and introspection (cuda/introspect.cu). sync_debug sets torch.cuda's sync debug mode
     * (0 off, 1 warn, 2 error when the host waits for the device: a copy to the CPU, a stream's
     * synchronize) and returns the mode before (-1: only read it). memory_blocks: the caching
     * allocator's blocks, segment by segment (a malloc'd array of *n). raw_alloc / raw_free: memory of
     * the caching allocator by address, used on stream s (NULL: current). reset_accumulated: the
     * allocator's event counters to 0 (-1: every device). host_stats / host_reset: the pinned host
     * allocator's statistics, reset (peak: the peaks, else the accumulated ones). blas_handle: the
     * current device's cuBLAS handle. stream_external: a stream made elsewhere, wrapped (not owned).
     * nvml: a reading of NVML's (NN_NVML_*) for a device, or an error when NVML is missing. */
    int (*sync_debug)(int mode);
    nn_gpu_block *(*memory_blocks)(int *n);
    void *(*raw_alloc)(int device, size_t n, nn_gpu_stream *s);
    nn_status (*raw_free)(void *p);
    void (*reset_accumulated)(int device);
    void (*host_stats)(nn_gpu_host_stats *s);
    void (*host_reset)(bool peak);
    void *(*blas_handle)(void);
    nn_gpu_stream *(*stream_external)(uintptr_t handle, int device);
    nn_status (*nvml)(int device, int what, int64_t *out);
} nn_gpu_api;

enum { NN_NVML_UTILIZATION, NN_NVML_MEMORY_UTILIZATION, NN_NVML_TEMPERATURE, NN_NVML_POWER, NN_NVML_CLOCK,
       NN_NVML_MEMORY_USED, NN_NVML_PROCESSES };

extern const nn_gpu_api *nn_gpu;

/* a CUDA graph is capturing: work queued now runs only at replay, where no host code runs */
static inline bool nn_gpu_capturing(void) { return nn_gpu && nn_gpu->graph_captures(); }

/* A copy of CPU tensor t in page-locked memory (t itself if already pinned). */
nn_tensor *nn_pin_memory(nn_tensor *t);

/* Memory that dead objects of the scripting layer may still hold (tensors whose Lua
 * userdata await collection): an allocator that finds no memory (the CUDA one after giving
 * its cache back) calls nn_reclaim_memory() and tries once more. It runs the hook set on the
 * calling thread (the bindings' full collection) and returns whether one ran; a hook
 * that allocates and runs out again is not re-entered. */
typedef void (*nn_reclaim_fn)(void);
void nn_set_reclaim_hook(nn_reclaim_fn fn); /* the calling thread's; NULL clears it */
bool nn_reclaim_memory(void);

/* "CUDA is not available" style errors for callers that need a GPU. */
nn_status nn_require_gpu(const char *what);
/* Resolve a device with index -1 ("cuda") to the current device. */
nn_device nn_resolve_device(nn_device d);

#endif
