/* Marks for external profilers: cudaProfilerStart / Stop (ncu --profile-from-start off,
 * nsys --capture-range cudaProfilerApi) and NVTX ranges (ncu --nvtx, nsys), behind
 * torch.cuda.profiler and torch.cuda.nvtx. NVTX 3 is header-only: with no tool attached
 * each call returns at once. */
#include <cuda_profiler_api.h>
#include <nvtx3/nvToolsExt.h>

#include "core.cuh"

static nn_status collect(bool on)
{
    nn_small_flush_all(); /* work queued before the switch belongs to the side it was queued on */
    if (on) NN_CHECK(cudaProfilerStart());
    else NN_CHECK(cudaProfilerStop());
    return NN_OK;
}

static int push(const char *msg) { return nvtxRangePushA(msg); }
static int pop(void) { return nvtxRangePop(); }
static void mark(const char *msg) { nvtxMarkA(msg); }
static uint64_t range_start(const char *msg) { return nvtxRangeStartA(msg); }
static void range_end(uint64_t id) { nvtxRangeEnd(id); }

void nn_cuda_profiler_marks(nn_gpu_api *api)
{
    api->profiler_collect = collect;
    api->nvtx_push = push;
    api->nvtx_pop = pop;
    api->nvtx_mark = mark;
    api->nvtx_range_start = range_start;
    api->nvtx_range_end = range_end;
}
