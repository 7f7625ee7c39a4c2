/* CUDA devices: lazy per-device state (stream, cuBLAS/cuBLASLt/cuDNN handles,
 * workspace), the backend vtable registered with the engine at load time, and
 * nn_gpu, the device control torch.cuda uses. */
#include <mutex>
#include <stdio.h>
#include <string.h>

#include "kernels.cuh"

nn_status nn_cuda_fail(const char *lib, const char *what, const char *expr, const char *file, int line)
{
    int dev = -1;
    cudaGetDevice(&dev);
    cudaGetLastError(); /* clear a sticky-free error so the session goes on */
    return nn_error(NN_ERR_RUNTIME, "%s error on cuda:%d: %s (%s at %s:%d)", lib, dev, what, expr, file, line);
}

static nn_cuda_device devices[NN_GPU_MAX];
static bool device_ready[NN_GPU_MAX];
static std::mutex init_lock;
static thread_local int current_index = 0;
static int count = -1;

static int device_count(void)
{
    if (count < 0) {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
        cudaGetLastError();
        count = n > NN_GPU_MAX ? NN_GPU_MAX : n;
    }
    return count;
}

nn_status nn_cuda_set(int index)
{
    if (index < 0) index = current_index;
    if (index >= device_count())
        return nn_error(NN_ERR_DEVICE, device_count() ? "CUDA error: invalid device ordinal cuda:%d (%d device(s) present)"
                                                      : "CUDA is not available (asked for cuda:%d; no GPU or no driver found)",
                        index, device_count());
    int now = -1; /* cudaGetDevice reads the thread's state; cudaSetDevice costs more, so only when it changes */
    if (cudaGetDevice(&now) != cudaSuccess || now != index) NN_CHECK(cudaSetDevice(index));
    return NN_OK;
}

nn_cuda_device *nn_cuda_dev(int index)
{
    if (index < 0) index = current_index;
    if (index < NN_GPU_MAX && device_ready[index]) {
        if (nn_cuda_set(index)) return NULL;
        return &devices[index];
    }
    std::lock_guard<std::mutex> g(init_lock);
    if (nn_cuda_set(index)) return NULL;
    nn_cuda_device *d = &devices[index];
    if (!device_ready[index]) {
        if (nn_check(cudaStreamCreateWithFlags(&d->default_stream, cudaStreamNonBlocking), "cudaStreamCreate", __FILE__, __LINE__) ||
            nn_check(cublasCreate(&d->cublas), "cublasCreate", __FILE__, __LINE__) ||
            nn_check(cublasLtCreate(&d->lt), "cublasLtCreate", __FILE__, __LINE__) ||
            nn_check(cudnnCreate(&d->cudnn), "cudnnCreate", __FILE__, __LINE__))
            return NULL;
        d->current = d->default_stream;
        cudaDeviceGetAttribute(&d->sm_count, cudaDevAttrMultiProcessorCount, index);
        device_ready[index] = true;
    }
    return d;
}

cudaStream_t nn_cuda_stream(int index)
{
    nn_cuda_device *d = nn_cuda_dev(index);
    return d ? nn_cuda_current(d) : (cudaStream_t)0;
}

void *nn_cuda_workspace(int index, size_t n)
{
    nn_cuda_device *d = nn_cuda_dev(index);
    if (!d) return NULL;
    if (d->workspace_size < n) {
        if (d->workspace) nn_cuda_free(index, d->workspace);
        d->workspace = nn_cuda_alloc(index, n);
        d->workspace_size = d->workspace ? n : 0;
    }
    return d->workspace;
}

/* ---- backend vtable ---- */
static void *b_alloc(int index, size_t n, bool pinned)
{
    (void)pinned;
    if (index < 0) index = current_index;
    if (!nn_cuda_dev(index)) return NULL;
    return nn_cuda_alloc(index, n);
}

static void b_free(int index, void *p, size_t n, bool pinned)
{
    (void)n, (void)pinned;
    nn_cuda_free(index, p);
}

static nn_status xfer_event(int index, cudaEvent_t *e)
{
    nn_cuda_device *d = nn_cuda_dev(index);
    if (!d) return nn_last_status();
    if (!d->xfer) NN_CHECK(cudaEventCreateWithFlags(&d->xfer, cudaEventDisableTiming));
    *e = d->xfer;
    return NN_OK;
}

/* Direct access between two GPUs (NVLink or PCIe) where the hardware allows it; the
 * copy still works without it, staged by the driver. */
static void enable_peer(int from, int to)
{
    nn_cuda_device *d = nn_cuda_dev(from);
    if (!d || (d->peers >> to & 1u)) return;
    d->peers |= 1u << to;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, from, to) == cudaSuccess && can) cudaDeviceEnablePeerAccess(to, 0);
    cudaGetLastError(); /* already enabled is fine */
}

/* A copy between GPUs runs on the source's current stream, between two barriers: before
 * it, the source stream waits for the work queued so far on the destination's stream
 * (which may still use the destination's memory); after it, the destination stream
 * waits for the copy. The producer copies as soon as its data is ready, so a consumer
 * GPU waits only where it reads (DataParallel's replicas then overlap). */
static nn_status peer_copy(void *dst, int di, const void *src, int si, size_t n)
{
    enable_peer(di, si);
    enable_peer(si, di);
    cudaEvent_t se = nullptr, de = nullptr;
    if (xfer_event(si, &se) || xfer_event(di, &de)) return nn_last_status();
    cudaStream_t ss = nn_cuda_stream(si), ds = nn_cuda_stream(di);
    NN_CHECK(cudaEventRecord(de, ds));
    NN_CHECK(cudaStreamWaitEvent(ss, de, 0));
    NN_CHECK(cudaMemcpyPeerAsync(dst, di, src, si, n, ss));
    NN_CHECK(cudaEventRecord(se, ss));
    NN_CHECK(cudaStreamWaitEvent(ds, se, 0));
    return NN_OK;
}

/* Copies on the current stream of the GPU side; a copy to host memory waits for
 * completion (the caller reads it next). */
static nn_status b_copy(void *dst, nn_device dd, const void *src, nn_device sd, size_t n)
{
    if (!n) return NN_OK;
    int index = dd.type == NN_CUDA ? dd.index : sd.index;
    cudaStream_t s = nn_cuda_stream(index);
    if (!nn_cuda_dev(index)) return nn_last_status();
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if ((dd.type == NN_CPU || sd.type == NN_CPU) && cudaStreamIsCapturing(s, &cs) == cudaSuccess && cs != cudaStreamCaptureStatusNone)
        return nn_error(NN_ERR_DEVICE, "cannot copy between a CUDA tensor and the CPU while a CUDA graph is capturing (item(), tolist(), "
                                       "printing and cpu() read values back: do that after the capture or a replay; copy_ new data "
                                       "into the graph's input tensors before replay())");
    if (dd.type == NN_CPU && nn_cuda_sync_check()) return nn_last_status(); /* the host will wait for it */
    if (dd.type == NN_CUDA && sd.type == NN_CUDA && dd.index != sd.index) {
        return peer_copy(dst, dd.index, src, sd.index, n);
    } else {
        NN_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s));
        if (sd.type == NN_CPU) return nn_cuda_host_record(src, s); /* a pinned source stays until the copy is done */
    }
    if (dd.type == NN_CPU) {
        NN_CHECK(cudaStreamSynchronize(s));
        return nn_cuda_check_kernel_errors();
    }
    return NN_OK;
}

static nn_status b_synchronize(int index)
{
    if (!nn_cuda_dev(index)) return nn_last_status();
    NN_CHECK(cudaStreamSynchronize(nn_cuda_stream(index)));
    return NN_OK;
}

static nn_backend cuda_backend;

/* ---- nn_gpu: device control ---- */
static int g_current_device(void) { return current_index; }

static nn_status g_set_device(int index)
{
    if (nn_cuda_set(index)) return nn_last_status();
    current_index = index;
    return NN_OK;
}

static nn_status g_synchronize(int index)
{
    nn_small_flush_all();
    if (nn_cuda_set(index)) return nn_last_status();
    NN_CHECK(cudaDeviceSynchronize());
    return nn_cuda_check_kernel_errors();
}

static nn_status g_properties(int index, nn_gpu_properties *p)
{
    if (nn_cuda_set(index)) return nn_last_status();
    cudaDeviceProp prop;
    NN_CHECK(cudaGetDeviceProperties(&prop, index < 0 ? current_index : index));
    snprintf(p->name, sizeof p->name, "%s", prop.name);
    p->major = prop.major;
    p->minor = prop.minor;
    p->total_memory = prop.totalGlobalMem;
    size_t free_b = 0, total_b = 0;
    NN_CHECK(cudaMemGetInfo(&free_b, &total_b));
    p->free_memory = free_b;
    p->multi_processor_count = prop.multiProcessorCount;
    return NN_OK;
}

static void g_versions(nn_gpu_versions *v)
{
    *v = nn_gpu_versions{};
    if (cudaRuntimeGetVersion(&v->runtime) != cudaSuccess) v->runtime = 0;
    if (cudaDriverGetVersion(&v->driver) != cudaSuccess) v->driver = 0;
    v->cudnn = nn_cudnn_version();
    v->nccl = nn_nccl_version();
}

static bool g_can_access_peer(int device, int peer)
{
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, device, peer) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return can != 0;
}

struct nn_gpu_stream { cudaStream_t s; int device; bool owned; };
struct nn_gpu_event { cudaEvent_t e; };

static nn_gpu_stream *g_stream_new(int device, int priority)
{
    if (device < 0) device = current_index;
    if (!nn_cuda_dev(device)) return NULL;
    nn_gpu_stream *s = new nn_gpu_stream{0, device, true};
    if (nn_check(cudaStreamCreateWithPriority(&s->s, cudaStreamNonBlocking, priority), "cudaStreamCreateWithPriority", __FILE__, __LINE__)) {
        delete s;
        return NULL;
    }
    return s;
}

nn_gpu_stream *nn_cuda_stream_handle(cudaStream_t s, int device) { return new nn_gpu_stream{s, device, false}; }

static void g_stream_free(nn_gpu_stream *s)
{
    if (!s) return;
    if (s->owned) cudaStreamDestroy(s->s);
    delete s;
}

static nn_gpu_stream *g_current_stream(int device)
{
    if (device < 0) device = current_index;
    nn_cuda_device *d = nn_cuda_dev(device);
    if (!d) return NULL;
    return nn_cuda_stream_handle(d->current, device);
}

static int g_stream_device(const nn_gpu_stream *s) { return s->device; }

static nn_status g_set_stream(nn_gpu_stream *s)
{
    int device = s ? s->device : current_index;
    nn_cuda_device *d = nn_cuda_dev(device);
    if (!d) return nn_last_status();
    nn_small_flush_all();
    d->current = s ? s->s : d->default_stream;
    return NN_OK;
}

static nn_status g_stream_synchronize(nn_gpu_stream *s)
{
    if (nn_cuda_sync_check()) return nn_last_status();
    nn_small_flush_all();
    NN_CHECK(cudaStreamSynchronize(s ? s->s : nn_cuda_stream(current_index)));
    return NN_OK;
}

static bool g_stream_query(nn_gpu_stream *s)
{
    nn_small_flush_all();
    return cudaStreamQuery(s ? s->s : nn_cuda_stream(current_index)) == cudaSuccess;
}

static nn_status g_stream_wait_event(nn_gpu_stream *s, nn_gpu_event *e)
{
    nn_small_flush_all();
    NN_CHECK(cudaStreamWaitEvent(s ? s->s : nn_cuda_stream(current_index), e->e, 0));
    return NN_OK;
}

static nn_gpu_event *g_event_new(bool timing)
{
    if (!nn_cuda_dev(current_index)) return NULL;
    nn_gpu_event *e = new nn_gpu_event{0};
    if (nn_check(cudaEventCreateWithFlags(&e->e, timing ? cudaEventDefault : cudaEventDisableTiming), "cudaEventCreate", __FILE__, __LINE__)) {
        delete e;
        return NULL;
    }
    return e;
}

static void g_event_free(nn_gpu_event *e)
{
    if (!e) return;
    cudaEventDestroy(e->e);
    delete e;
}

static nn_status g_event_record(nn_gpu_event *e, nn_gpu_stream *s)
{
    nn_small_flush_all();
    NN_CHECK(cudaEventRecord(e->e, s ? s->s : nn_cuda_stream(current_index)));
    return NN_OK;
}

static nn_status g_event_synchronize(nn_gpu_event *e)
{
    NN_CHECK(cudaEventSynchronize(e->e));
    return NN_OK;
}

static bool g_event_query(nn_gpu_event *e) { return cudaEventQuery(e->e) == cudaSuccess; }

static nn_status g_event_elapsed(nn_gpu_event *a, nn_gpu_event *b, float *ms)
{
    NN_CHECK(cudaEventElapsedTime(ms, a->e, b->e));
    return NN_OK;
}

/* torch.cuda.caching_allocator_alloc: the allocator serves the device's current stream, so s is made current meanwhile */
static void *g_raw_alloc(int device, size_t n, nn_gpu_stream *s)
{
    if (device < 0) device = current_index;
    nn_cuda_device *d = nn_cuda_dev(device);
    if (!d) return NULL;
    if (s && s->device != device) {
        nn_error(NN_ERR_ARG, "caching_allocator_alloc: the stream is on cuda:%d, not on cuda:%d", s->device, device);
        return NULL;
    }
    cudaStream_t was = d->current;
    if (s) d->current = s->s;
    void *p = nn_cuda_alloc(device, n ? n : 1);
    d->current = was;
    return p;
}

static nn_status g_raw_free(void *p)
{
    int device = nn_cuda_owner(p);
    if (device < 0)
        return nn_error(NN_ERR_ARG, "caching_allocator_delete: 0x%llx was not allocated by the caching allocator, or was freed already",
                        (unsigned long long)(uintptr_t)p);
    nn_cuda_free(device, p);
    return NN_OK;
}

static nn_gpu_stream *g_stream_external(uintptr_t handle, int device)
{
    if (device < 0) device = current_index;
    if (!nn_cuda_dev(device)) return NULL;
    return nn_cuda_stream_handle((cudaStream_t)handle, device);
}

static nn_status g_record_stream(nn_tensor *t, nn_gpu_stream *s)
{
    if (t->storage->device.type != NN_CUDA) return nn_error(NN_ERR_DEVICE, "record_stream: the tensor is not on a CUDA device");
    return nn_cuda_record_stream_ptr(t->storage->data, s->s);
}



extern "C" nn_status nn_cuda_memory_stats(int index, nn_gpu_memory_stats *s);
extern "C" void nn_cuda_reset_peak(int index);
extern "C" nn_status nn_cuda_empty_cache(void);
extern "C" void nn_cuda_manual_seed(uint64_t seed);
nn_gpu_graph *nn_cuda_graph_new(void);
void nn_cuda_graph_free(nn_gpu_graph *g);
nn_status nn_cuda_graph_capture_begin(nn_gpu_graph *g, nn_gpu_graph *share);
nn_status nn_cuda_graph_capture_end(nn_gpu_graph *g);
nn_status nn_cuda_graph_replay(nn_gpu_graph *g);
nn_status nn_cuda_graph_reset(nn_gpu_graph *g);

static nn_gpu_api gpu_api;

/* Registered when the program loads; no CUDA call happens until a device is used. */
__attribute__((constructor)) static void register_cuda(void)
{
    cuda_backend.name = "cuda";
    cuda_backend.alloc = b_alloc;
    cuda_backend.free = b_free;
    cuda_backend.copy = b_copy;
    cuda_backend.synchronize = b_synchronize;
#define CUDA_KERNEL_UNARY(name) nn_cuda_unary
#define CUDA_KERNEL_BINARY(name) nn_cuda_binary
#define CUDA_KERNEL_TERNARY(name) nn_cuda_ternary
#define CUDA_KERNEL_REDUCE(name) nn_cuda_reduce
#define CUDA_KERNEL_BLAS(name) nn_cuda_bmm
#define CUDA_KERNEL_FILL(name) nn_cuda_fill
#define CUDA_KERNEL_COPY(name) nn_cuda_copy
#define CUDA_KERNEL_NN(name) nn_cuda_##name
#define X(name, kind, autocast, backward) cuda_backend.kernels[NN_OP_##name] = CUDA_KERNEL_##kind(name);
#include "ops.def"
#undef X
    nn_register_backend(NN_CUDA, &cuda_backend);

    gpu_api.device_count = device_count;
    gpu_api.current_device = g_current_device;
    gpu_api.set_device = g_set_device;
    gpu_api.synchronize = g_synchronize;
    gpu_api.properties = g_properties;
    gpu_api.versions = g_versions;
    gpu_api.memory_stats = nn_cuda_memory_stats;
    gpu_api.reset_peak_memory_stats = nn_cuda_reset_peak;
    gpu_api.empty_cache = nn_cuda_empty_cache;
    gpu_api.manual_seed = nn_cuda_manual_seed;
    gpu_api.can_access_peer = g_can_access_peer;
    gpu_api.stream_new = g_stream_new;
    gpu_api.stream_free = g_stream_free;
    gpu_api.current_stream = g_current_stream;
    gpu_api.set_stream = g_set_stream;
    gpu_api.stream_device = g_stream_device;
    gpu_api.stream_synchronize = g_stream_synchronize;
    gpu_api.stream_query = g_stream_query;
    gpu_api.stream_wait_event = g_stream_wait_event;
    gpu_api.event_new = g_event_new;
    gpu_api.event_free = g_event_free;
    gpu_api.event_record = g_event_record;
    gpu_api.event_synchronize = g_event_synchronize;
    gpu_api.event_query = g_event_query;
    gpu_api.event_elapsed_ms = g_event_elapsed;
    gpu_api.record_stream = g_record_stream;
    gpu_api.host_alloc_pinned = nn_cuda_host_alloc;
    gpu_api.host_free_pinned = nn_cuda_host_free;
    gpu_api.graph_new = nn_cuda_graph_new;
    gpu_api.graph_free = nn_cuda_graph_free;
    gpu_api.graph_capture_begin = nn_cuda_graph_capture_begin;
    gpu_api.graph_capture_end = nn_cuda_graph_capture_end;
    gpu_api.graph_replay = nn_cuda_graph_replay;
    gpu_api.graph_reset = nn_cuda_graph_reset;
    gpu_api.graph_captures = nn_cuda_captures;
    nn_cuda_profiler_marks(&gpu_api);
    nn_cuda_rnn_register(&gpu_api);
    nn_cuda_introspect(&gpu_api);
    gpu_api.raw_alloc = g_raw_alloc;
    gpu_api.raw_free = g_raw_free;
    gpu_api.stream_external = g_stream_external;
    nn_gpu = &gpu_api;
}
