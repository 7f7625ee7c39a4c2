/* nn_launch<kernel>(grid, block, stream, args...): a kernel launch through the driver's
 * cuLaunchKernel with the kernel's function handle cached per device. It costs about 0.45 us
 * less host time than the runtime's <<<>>> (bench/cuda_launch_floor.cu: 3.43 against 2.98 us
 * on an H200 host), which is most of what separates a small op from the launch floor. The
 * entry point is found at run time, so nothing links libcuda. Where the driver path is not
 * there, or refuses the launch, the runtime launches instead and reports any error through
 * cudaGetLastError as <<<>>> would: NN_CHECK_LAUNCH() after nn_launch works unchanged.
 * Kernels with __grid_constant__ parameters keep <<<>>>. */
#ifndef NN_CUDA_LAUNCH_CUH
#define NN_CUDA_LAUNCH_CUH

#include <cuda.h>
#include <cuda_runtime.h>

#include <utility>

namespace nnl {

enum { MAX_DEVICES = 64 };

typedef decltype(&cuLaunchKernel) launch_fn;

inline launch_fn driver_launch()
{
    static launch_fn fn = [] {
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuLaunchKernel", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
            p = nullptr;
        cudaGetLastError();
        return (launch_fn)p;
    }();
    return fn;
}

template <typename T> struct same { typedef T type; }; /* keeps P deduced from the kernel alone */

template <typename... P>
inline void launch_as(void (*kernel)(P...), CUfunction *cache, dim3 g, dim3 b, cudaStream_t s, typename same<P>::type... p)
{
    void *args[] = {(void *)&p..., nullptr};
    launch_fn drv = driver_launch();
    int dev = 0;
    if (drv && cudaGetDevice(&dev) == cudaSuccess && dev < MAX_DEVICES) {
        CUfunction &f = cache[dev];
        if (!f && cudaGetFuncBySymbol((cudaFunction_t *)&f, (const void *)kernel) != cudaSuccess) {
            f = nullptr;
            cudaGetLastError(); /* the runtime launch below says what is wrong */
        }
        if (f && drv(f, g.x, g.y, g.z, b.x, b.y, b.z, 0, (CUstream)s, args, nullptr) == CUDA_SUCCESS) return;
    }
    cudaLaunchKernel((const void *)kernel, g, b, args, 0, s);
}

} // namespace nnl

template <auto K, typename... A> inline void nn_launch(dim3 grid, dim3 block, cudaStream_t s, A &&...args)
{
    static CUfunction cache[nnl::MAX_DEVICES];
    nnl::launch_as(K, cache, grid, block, s, std::forward<A>(args)...);
}

#endif
