/* CUDA graphs (torch.cuda.CUDAGraph): the work queued between capture_begin and
 * capture_end is recorded on a side stream, which is the device's current stream
 * meanwhile, instead of running; replay() launches it all at once on the current
 * stream. Memory allocated while capturing comes from the graph's private pool
 * (allocator.cu), so tensors made during capture keep their addresses and the
 * graph's temporaries are never handed to anyone else. */
#include "core.cuh"

struct nn_gpu_graph {
    int device = -1;
    cudaStream_t stream = nullptr; /* the capture stream */
    cudaStream_t prev = nullptr;   /* the current stream before capture */
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    nn_cuda_pool *pool = nullptr;
    bool capturing = false;
};

nn_gpu_graph *nn_cuda_graph_new(void) { return new nn_gpu_graph(); }

nn_status nn_cuda_graph_reset(nn_gpu_graph *g)
{
    if (g->capturing) return nn_error(NN_ERR_ARG, "CUDAGraph.reset: the graph is capturing; end the capture first");
    if (g->exec) cudaGraphExecDestroy(g->exec);
    if (g->graph) cudaGraphDestroy(g->graph);
    g->exec = nullptr, g->graph = nullptr;
    if (g->pool) nn_cuda_pool_release(g->pool);
    g->pool = nullptr;
    return NN_OK;
}

nn_status nn_cuda_graph_capture_end(nn_gpu_graph *g);

void nn_cuda_graph_free(nn_gpu_graph *g)
{
    if (!g) return;
    if (g->capturing) { /* collected mid-capture (an error unwound past it): end it, drop the result */
        nn_cuda_graph_capture_end(g);
        nn_clear_error();
    }
    nn_cuda_graph_reset(g);
    if (g->stream) cudaStreamDestroy(g->stream);
    delete g;
}

nn_status nn_cuda_graph_capture_begin(nn_gpu_graph *g, nn_gpu_graph *share)
{
    if (g->capturing || g->exec)
        return nn_error(NN_ERR_ARG, "CUDAGraph.capture_begin: this graph already %s; call reset() first",
                        g->capturing ? "is capturing" : "holds a capture");
    if (g->pool) /* only a pool handle has a pool and no capture */
        return nn_error(NN_ERR_ARG, "CUDAGraph.capture_begin: this graph is a memory pool handle (graph_pool_handle()); "
                                    "pass it as pool= to another graph's capture");
    int device = nn_gpu->current_device();
    nn_cuda_device *d = nn_cuda_dev(device);
    if (!d) return nn_last_status();
    if (share && share->pool && share->device != device)
        return nn_error(NN_ERR_ARG, "CUDAGraph.capture_begin: the pool to share belongs to a graph on another device");
    if (nn_cuda_captures()) /* one capture at a time keeps the allocator's rules simple */
        return nn_error(NN_ERR_ARG, "CUDAGraph.capture_begin: another graph is capturing");
    if (g->device != device && g->stream) {
        cudaStreamDestroy(g->stream);
        g->stream = nullptr;
    }
    g->device = device;
    if (!g->stream) NN_CHECK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    /* the captured work must follow what is queued now (it reads the warm-up's results) */
    cudaEvent_t e;
    NN_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    cudaEventRecord(e, nn_cuda_current(d));
    cudaStreamWaitEvent(g->stream, e, 0);
    cudaEventDestroy(e);
    if (share && !share->pool) { /* a graph that has captured nothing (torch.cuda.graph_pool_handle()): its pool starts now */
        share->pool = nn_cuda_pool_new(device);
        share->device = device;
    }
    if (share) nn_cuda_pool_retain(share->pool);
    g->pool = share ? share->pool : nn_cuda_pool_new(device);
    nn_cuda_pool_capture(device, g->pool, g->stream);
    cudaError_t err = cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeRelaxed);
    if (err != cudaSuccess) {
        cudaGetLastError();
        nn_cuda_pool_capture(device, nullptr, nullptr);
        nn_cuda_pool_release(g->pool);
        g->pool = nullptr;
        return nn_error(NN_ERR_DEVICE, "CUDAGraph.capture_begin: %s", cudaGetErrorString(err));
    }
    g->prev = d->current;
    d->current = g->stream;
    g->capturing = true;
    return NN_OK;
}

nn_status nn_cuda_graph_capture_end(nn_gpu_graph *g)
{
    if (!g->capturing) return nn_error(NN_ERR_ARG, "CUDAGraph.capture_end: the graph is not capturing");
    nn_cuda_device *d = nn_cuda_dev(g->device);
    if (!d) return nn_last_status();
    nn_small_flush_all(); /* the queued small ops belong to the graph */
    d->current = g->prev;
    g->capturing = false;
    cudaError_t err = cudaStreamEndCapture(g->stream, &g->graph);
    nn_cuda_pool_capture(g->device, nullptr, nullptr);
    if (err == cudaSuccess) err = cudaGraphInstantiate(&g->exec, g->graph, 0);
    if (err != cudaSuccess) {
        cudaGetLastError();
        nn_cuda_graph_reset(g);
        return nn_error(NN_ERR_DEVICE,
                        "CUDA graph capture failed (%s): the captured region did something a graph cannot hold, such as "
                        "reading a value back to the host (item(), printing, a copy to the CPU) or synchronizing",
                        cudaGetErrorString(err));
    }
    return NN_OK;
}

nn_status nn_cuda_graph_replay(nn_gpu_graph *g)
{
    if (!g->exec) return nn_error(NN_ERR_ARG, "CUDAGraph.replay: nothing captured yet (capture first)");
    if (!nn_cuda_dev(g->device)) return nn_last_status();
    NN_CHECK(cudaGraphLaunch(g->exec, nn_cuda_stream(g->device)));
    return NN_OK;
}
