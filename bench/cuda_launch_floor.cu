/* The floor under issue 5's `a + b` host cost: what one kernel launch costs this host with
 * nothing else around it, next to the engine's whole `add` on 4-element float32 tensors
 * (allocation, dispatch, launch, release; no Lua). Each is timed in bursts of 200 calls, the
 * synchronize after a burst untimed, so no launch waits on a full queue; median of 7 runs of
 * 200 bursts. bench/host_overhead.{lua,py} add the scripting layers on top.
 * Usage: bench_cuda_launch_floor */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>

#include <algorithm>

extern "C" {
#include "device.h"
#include "ops.h"
}
#include "launch.cuh"

namespace {

__global__ void add4(float *o, const float *a, const float *b, int n)
{
    int i = threadIdx.x;
    if (i < n) o[i] = a[i] + b[i];
}

double now()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

template <typename F> void measure(const char *name, F f)
{
    enum { RUNS = 7, BURSTS = 200, CALLS = 200 };
    double per[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double total = 0;
        for (int b = 0; b < BURSTS; b++) {
            cudaDeviceSynchronize();
            double t0 = now();
            for (int i = 0; i < CALLS; i++) f();
            total += now() - t0;
        }
        cudaDeviceSynchronize();
        per[r] = total / (BURSTS * CALLS) * 1e6;
    }
    std::sort(per, per + RUNS);
    printf("%-52s median %6.3f us per call (min %.3f)\n", name, per[RUNS / 2], per[0]);
}

} // namespace

int main(void)
{
    if (!nn_gpu || nn_gpu->device_count() < 1) {
        printf("cuda_launch_floor: no GPU, nothing to time\n");
        return 0;
    }
    const nn_device g = {NN_CUDA, 0};
    int64_t four = 4;
    nn_tensor *a = nn_rand(1, &four, NN_F32, g), *b = nn_rand(1, &four, NN_F32, g), *o = nn_empty(1, &four, NN_F32, g);
    if (!a || !b || !o) {
        printf("cuda_launch_floor: %s\n", nn_last_error());
        return 1;
    }
    float *po = (float *)nn_data(o), *pa = (float *)nn_data(a), *pb = (float *)nn_data(b);
    int n = 4;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    measure("kernel launch, runtime API (<<<>>>)", [&] { add4<<<1, 32, 0, s>>>(po, pa, pb, n); });
    void *args[] = {&po, &pa, &pb, &n};
    cudaFunction_t fn;
    void *entry = NULL;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetFuncBySymbol(&fn, (const void *)add4) == cudaSuccess &&
        cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 12000, cudaEnableDefault, &found) == cudaSuccess && entry) {
        auto launch = (decltype(&cuLaunchKernel))entry; /* found at run time: no link to libcuda */
        measure("kernel launch, driver API (cuLaunchKernel)", [&] { launch((CUfunction)fn, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, args, 0); });
    }
    measure("kernel launch, nn_launch (the backend's elementwise ops)", [&] { nn_launch<add4>(1, 32, s, po, pa, pb, n); });
    measure("engine: result = a + b, then released", [&] { nn_release(nn_binary(NN_OP_add, a, b)); });
    measure("engine: a 16-byte CUDA tensor allocated and released", [&] { nn_release(nn_empty(1, &four, NN_F32, g)); });
    nn_release(a);
    nn_release(b);
    nn_release(o);
    cudaStreamDestroy(s);
    return 0;
}
