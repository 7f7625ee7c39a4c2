/* The "nccl" process-group backend (engine/dist/pg.h): collectives between GPUs of
 * one or many hosts, enqueued on the current stream of the tensor's device.
 *
 * The communicator is made at the group's first collective, on that tensor's
 * device: rank 0 makes the unique id and passes it through the group's store.
 * Collectives run on the group's own stream, after the work already on the
 * current stream; waiting for a work makes the current stream wait for it (not
 * the host), so DDP's bucket all-reduces overlap the rest of backward. The work
 * keeps its buffers until then, so the allocator cannot hand them out early.
 * A watchdog thread per group looks at the collectives in flight (an event after
 * each) and at NCCL's asynchronous error: a collective unfinished after the group's
 * timeout, or a peer gone, aborts the communicator (which frees the kernels that
 * wait) and the group's next call reports it with the rank. */
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "core.cuh"

extern "C" {
#include "dist/pg.h"
}

#ifndef NNREPL_NO_NCCL
#include <nccl.h>

/* ---- the check overload for NCCL ---- */
inline nn_status nn_check(ncclResult_t e, const char *expr, const char *file, int line)
{
    if (e == ncclSuccess) return NN_OK;
    std::string what = ncclGetErrorString(e);
    const char *last = ncclGetLastError(nullptr);
    if (last && *last) what += std::string(": ") + last;
    return nn_cuda_fail("NCCL", what.c_str(), expr, file, line);
}

namespace {

struct inflight {
    cudaEvent_t done;
    std::chrono::steady_clock::time_point start;
    const char *what;
};

struct nccl_group {
    ncclComm_t comm = nullptr;
    int device = -1;
    cudaStream_t stream = nullptr; /* the collectives' stream */
    nn_gpu_stream *handle = nullptr; /* the same, for the profiler */
    cudaEvent_t ready = nullptr;   /* recorded on the current stream before each collective */
    std::mutex mu;
    std::condition_variable cv;
    std::deque<inflight> queue;
    std::thread watchdog;
    bool stop = false;
    std::string failure; /* set by the watchdog: the communicator was aborted */
};

nccl_group *G(nn_pg *pg) { return static_cast<nccl_group *>(pg->impl); }

ncclDataType_t nccl_type(nn_dtype dt)
{
    switch (dt) {
    case NN_F32: return ncclFloat32;
    case NN_F64: return ncclFloat64;
    case NN_F16: return ncclFloat16;
    case NN_BF16: return ncclBfloat16;
    case NN_I64: return ncclInt64;
    case NN_I32: return ncclInt32;
    case NN_I8: return ncclInt8;
    case NN_U8: return ncclUint8;
    case NN_BOOL: return ncclUint8;
    default: return ncclNumTypes; /* int16: NCCL has no 16-bit integer type */
    }
}

/* PyTorch's refusal of a dtype NCCL cannot carry */
nn_status check_type(nn_dtype dt)
{
    if (nccl_type(dt) != ncclNumTypes) return NN_OK;
    return nn_error(NN_ERR_DTYPE, "Input tensor data type is not supported for NCCL process group: %s", nn_dtype_scalar_name(dt));
}

ncclRedOp_t nccl_op(nn_reduce_op op, nn_dtype dt)
{
    if (dt == NN_BOOL) return op == NN_REDUCE_PRODUCT || op == NN_REDUCE_MIN ? ncclMin : ncclMax; /* and / or */
    switch (op) {
    case NN_REDUCE_SUM: return ncclSum;
    case NN_REDUCE_AVG: return ncclAvg;
    case NN_REDUCE_PRODUCT: return ncclProd;
    case NN_REDUCE_MIN: return ncclMin;
    default: return ncclMax;
    }
}

void watch(nn_pg *pg)
{
    nccl_group *g = G(pg);
    cudaSetDevice(g->device);
    std::unique_lock<std::mutex> lk(g->mu);
    while (!g->stop) {
        g->cv.wait_for(lk, std::chrono::milliseconds(100));
        while (!g->queue.empty() && cudaEventQuery(g->queue.front().done) == cudaSuccess) {
            cudaEventDestroy(g->queue.front().done);
            g->queue.pop_front();
        }
        if (!g->failure.empty() || !g->comm) continue;
        char msg[512] = "";
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(g->comm, &async);
        if (async != ncclSuccess && async != ncclInProgress)
            snprintf(msg, sizeof msg, "NCCL communicator error on rank %d of %d: %s (%s)", pg->rank, pg->size, ncclGetErrorString(async),
                     ncclGetLastError(g->comm));
        else if (!g->queue.empty()) {
            double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - g->queue.front().start).count();
            if (waited > pg->timeout)
                snprintf(msg, sizeof msg, "NCCL %s timed out after %g s on rank %d of %d (a peer is gone or stuck)", g->queue.front().what,
                         pg->timeout, pg->rank, pg->size);
        }
        if (*msg) {
            g->failure = msg;
            fprintf(stderr, "nnrepl: %s; aborting the communicator\n", msg);
            ncclCommAbort(g->comm); /* frees the kernels that wait on the peer */
            g->comm = nullptr;
        }
    }
}

nn_status failed(nccl_group *g)
{
    std::lock_guard<std::mutex> lk(g->mu);
    if (!g->failure.empty()) return nn_error(NN_ERR_RUNTIME, "%s", g->failure.c_str());
    return NN_OK;
}

/* The communicator for device dev (made now on the first call). */
nn_status comm_for(nn_pg *pg, nn_device dev)
{
    nccl_group *g = G(pg);
    if (nn_status st = failed(g)) return st;
    if (dev.type != NN_CUDA) return nn_error(NN_ERR_DEVICE, "Tensors must be CUDA and dense (the nccl backend got a cpu tensor)");
    if (g->comm) {
        if (dev.index != g->device)
            return nn_error(NN_ERR_DEVICE, "the nccl group of rank %d works on cuda:%d; got a tensor on cuda:%d", pg->rank, g->device, dev.index);
        return nn_cuda_set(dev.index);
    }
    NN_CHECK(cudaSetDevice(dev.index));
    ncclUniqueId id;
    char key[64];
    snprintf(key, sizeof key, "pg%d/nccl/uid", pg->id);
    if (pg->rank == 0) {
        NN_CHECK(ncclGetUniqueId(&id));
        if (nn_status st = nn_store_set(pg->store, key, &id, sizeof id)) return st;
    } else {
        void *v = nullptr;
        size_t n = 0;
        if (nn_status st = nn_store_get(pg->store, key, &v, &n)) return st;
        if (n != sizeof id) { free(v); return nn_error(NN_ERR_RUNTIME, "NCCL: a bad unique id in the store (%zu bytes)", n); }
        memcpy(&id, v, sizeof id);
        free(v);
    }
    int lo = 0, hi = 0;
    NN_CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    NN_CHECK(cudaStreamCreateWithPriority(&g->stream, cudaStreamNonBlocking, hi));
    g->handle = nn_cuda_stream_handle(g->stream, dev.index);
    NN_CHECK(cudaEventCreateWithFlags(&g->ready, cudaEventDisableTiming));
    ncclComm_t comm;
    NN_CHECK(ncclCommInitRank(&comm, pg->size, id, pg->rank));
    {
        std::lock_guard<std::mutex> lk(g->mu);
        g->comm = comm;
        g->device = dev.index;
    }
    g->watchdog = std::thread(watch, pg);
    return NN_OK;
}

/* After enqueueing a collective: an event for the watchdog. */
nn_status track(nn_pg *pg, const char *what)
{
    nccl_group *g = G(pg);
    inflight f;
    f.what = what;
    f.start = std::chrono::steady_clock::now();
    NN_CHECK(cudaEventCreateWithFlags(&f.done, cudaEventDisableTiming));
    NN_CHECK(cudaEventRecord(f.done, g->stream));
    std::lock_guard<std::mutex> lk(g->mu);
    g->queue.push_back(f);
    return NN_OK;
}

/* The group's stream waits for what dev's current stream has queued so far. */
nn_status follow_current(nn_pg *pg, nn_device dev)
{
    if (nn_status st = comm_for(pg, dev)) return st;
    nccl_group *g = G(pg);
    NN_CHECK(cudaEventRecord(g->ready, nn_cuda_stream(dev.index)));
    NN_CHECK(cudaStreamWaitEvent(g->stream, g->ready, 0));
    return NN_OK;
}

nn_gpu_stream *n_stream(nn_pg *pg, nn_device dev)
{
    if (follow_current(pg, dev)) {
        nn_clear_error(); /* the collective itself reports it */
        return nullptr;
    }
    return G(pg)->handle;
}

/* On the group's stream, after what the current stream has queued so far (dt: the call's dtype). */
#define ENQUEUE(what, call)                                         \
    do {                                                            \
        if (nn_status st_ = check_type(dt)) return st_;             \
        if (nn_status st_ = follow_current(pg, dev)) return st_;    \
        cudaStream_t s = G(pg)->stream;                             \
        ncclComm_t comm = G(pg)->comm;                              \
        NN_CHECK(call);                                             \
        return track(pg, what);                                     \
    } while (0)

nn_status n_all_reduce(nn_pg *pg, void *buf, size_t count, nn_dtype dt, nn_reduce_op op, nn_device dev)
{
    ENQUEUE("all_reduce", ncclAllReduce(buf, buf, count, nccl_type(dt), nccl_op(op, dt), comm, s));
}

/* one NCCL group: the all-reduces go to the GPU as one launch */
ncclResult_t all_reduce_group(void *const *bufs, const size_t *counts, int n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) return r;
    for (int i = 0; i < n && r == ncclSuccess; i++) r = ncclAllReduce(bufs[i], bufs[i], counts[i], t, op, comm, s);
    ncclResult_t e = ncclGroupEnd(); /* ends the group even after an error */
    return r != ncclSuccess ? r : e;
}

nn_status n_all_reduce_many(nn_pg *pg, void *const *bufs, const size_t *counts, int n, nn_dtype dt, nn_reduce_op op, nn_device dev)
{
    ENQUEUE("all_reduce", all_reduce_group(bufs, counts, n, nccl_type(dt), nccl_op(op, dt), comm, s));
}

nn_status n_broadcast(nn_pg *pg, void *buf, size_t count, nn_dtype dt, int root, nn_device dev)
{
    ENQUEUE("broadcast", ncclBroadcast(buf, buf, count, nccl_type(dt), root, comm, s));
}

nn_status n_reduce(nn_pg *pg, void *buf, size_t count, nn_dtype dt, nn_reduce_op op, int root, nn_device dev)
{
    ENQUEUE("reduce", ncclReduce(buf, buf, count, nccl_type(dt), nccl_op(op, dt), root, comm, s));
}

nn_status n_all_gather(nn_pg *pg, void *out, const void *in, size_t count, nn_dtype dt, nn_device dev)
{
    ENQUEUE("all_gather", ncclAllGather(in, out, count, nccl_type(dt), comm, s));
}

nn_status n_reduce_scatter(nn_pg *pg, void *out, void *in, size_t count, nn_dtype dt, nn_reduce_op op, nn_device dev)
{
    ENQUEUE("reduce_scatter", ncclReduceScatter(in, out, count, nccl_type(dt), nccl_op(op, dt), comm, s));
}

nn_status n_send(nn_pg *pg, const void *buf, size_t count, nn_dtype dt, int dst, int tag, nn_device dev, void **pending)
{
    *pending = nullptr; /* ordered on the stream */
    ENQUEUE("send", ncclSend(buf, count, nccl_type(dt), dst, comm, s));
}

nn_status n_recv(nn_pg *pg, void *buf, size_t count, nn_dtype dt, int src, int tag, nn_device dev, void **pending)
{
    *pending = nullptr;
    ENQUEUE("recv", ncclRecv(buf, count, nccl_type(dt), src, comm, s));
}

/* a work's token: the current stream of its device waits for the event */
struct token {
    cudaEvent_t done;
    int device;
};

void *n_record(nn_pg *pg, nn_device dev)
{
    nccl_group *g = G(pg);
    token *t = new token{nullptr, g->device};
    if (cudaEventCreateWithFlags(&t->done, cudaEventDisableTiming) != cudaSuccess || cudaEventRecord(t->done, g->stream) != cudaSuccess) {
        if (t->done) cudaEventDestroy(t->done);
        delete t;
        cudaStreamSynchronize(g->stream); /* no event: the work is done when this returns */
        return nullptr;
    }
    return t;
}

nn_status n_wait(void *pending, double)
{
    token *t = static_cast<token *>(pending);
    nn_status st = nn_cuda_set(t->device);
    if (!st) st = nn_check(cudaStreamWaitEvent(nn_cuda_stream(t->device), t->done, 0), "cudaStreamWaitEvent", __FILE__, __LINE__);
    cudaEventDestroy(t->done);
    delete t;
    return st;
}

/* An all-reduce of one element on the group's device, waited for on the host. */
nn_status n_barrier(nn_pg *pg)
{
    nccl_group *g = G(pg);
    int index = g->device;
    if (!g->comm) { /* no collective yet: the current device, or as PyTorch guesses, local rank modulo the GPUs */
        index = nn_gpu->current_device();
        int count = nn_gpu->device_count();
        const char *lr = getenv("LOCAL_RANK");
        if (index == 0 && count > 1) index = (lr && *lr ? atoi(lr) : pg->rank) % count;
    }
    nn_device dev = {NN_CUDA, (int8_t)index};
    if (nn_status st = comm_for(pg, dev)) return st;
    cudaStream_t s = g->stream;
    void *one = nullptr;
    nn_status st = nn_check(cudaMallocAsync(&one, 4, s), "cudaMallocAsync", __FILE__, __LINE__);
    if (st) return st;
    st = nn_check(cudaMemsetAsync(one, 0, 4, s), "cudaMemsetAsync", __FILE__, __LINE__);
    if (!st) st = nn_check(ncclAllReduce(one, one, 1, ncclFloat32, ncclSum, g->comm, s), "ncclAllReduce", __FILE__, __LINE__);
    if (!st) st = track(pg, "barrier");
    while (!st) { /* wait, but let the watchdog's verdict end the wait */
        cudaError_t q = cudaStreamQuery(s);
        if (q == cudaSuccess) break;
        if (q != cudaErrorNotReady) st = nn_check(q, "cudaStreamQuery", __FILE__, __LINE__);
        else if ((st = failed(g))) break;
        else std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    cudaFreeAsync(one, s);
    return st;
}

void n_destroy(nn_pg *pg)
{
    nccl_group *g = G(pg);
    if (!g) return;
    {
        std::lock_guard<std::mutex> lk(g->mu);
        g->stop = true;
    }
    g->cv.notify_all();
    if (g->watchdog.joinable()) g->watchdog.join();
    if (g->comm) {
        cudaSetDevice(g->device);
        if (g->failure.empty()) ncclCommFinalize(g->comm);
        ncclCommDestroy(g->comm);
    }
    for (auto &f : g->queue) cudaEventDestroy(f.done);
    if (g->ready) cudaEventDestroy(g->ready);
    if (g->stream) {
        cudaStreamSynchronize(g->stream);
        cudaStreamDestroy(g->stream);
    }
    if (g->handle) nn_gpu->stream_free(g->handle);
    delete g;
    pg->impl = nullptr;
}

const nn_pg_ops nccl_ops = {
    "nccl", NN_CUDA, /*blocking=*/false, /*has_avg=*/true,
    n_all_reduce, n_all_reduce_many, n_broadcast, n_reduce, n_all_gather, n_reduce_scatter, n_send, n_recv, n_record, n_wait, n_barrier, n_destroy,
    n_stream,
};

nn_status nccl_create(nn_pg *pg)
{
    if (!nn_gpu || nn_gpu->device_count() == 0) return nn_error(NN_ERR_DEVICE, "the nccl backend needs a GPU; none is available");
    pg->impl = new nccl_group();
    pg->ops = &nccl_ops;
    return NN_OK;
}

} // namespace

__attribute__((constructor)) static void register_nccl(void) { nn_pg_register_backend("nccl", nccl_create); }

#endif

int nn_nccl_version(void)
{
#ifndef NNREPL_NO_NCCL
    int v = 0;
    return ncclGetVersion(&v) == ncclSuccess ? v : 0;
#else
    return 0;
#endif
}
