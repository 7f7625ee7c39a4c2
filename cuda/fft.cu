/* The CUDA DFT of contiguous complex rows (ops.def fft_c2c) through cuFFT: each row of in0 is
 * transformed into the same row of out, unnormalized in both directions as the CPU kernel
 * (engine/cpu/fft.c) and cuFFT define it (forward exp(-2 pi i jk/n), i[0] = 1 the inverse's
 * sign). complex64 is a C2C plan, complex128 a Z2Z plan, batched over the rows (a 64-bit
 * advanced-layout plan: rows n elements apart). Plans are kept per (device, dtype, n, rows)
 * in a plan cache; cuFFT's automatic work area is off and each run takes its work area from
 * the caching allocator on the current stream, where the plan runs. A plan is shared by the
 * host threads that use its device, so setting its stream and work area and running it hold
 * the plan's lock. */
#include <cufft.h>

#include <mutex>

#include "kernels.cuh"
#include "plan_cache.cuh"

namespace {

const char *cufft_name(cufftResult r)
{
    switch (r) {
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "cuFFT error";
    }
}

} // namespace

inline nn_status nn_check(cufftResult r, const char *expr, const char *file, int line)
{
    return r == CUFFT_SUCCESS ? NN_OK : nn_cuda_fail("cuFFT", cufft_name(r), expr, file, line);
}

namespace {

struct FftKey {
    int32_t dev, dtype;
    int64_t n, rows;
};

struct FftPlan {
    cufftHandle h;
    size_t ws;
    std::mutex *lock;
};

void destroy_plan(FftPlan &p)
{
    if (p.h) cufftDestroy(p.h);
    delete p.lock;
    p = FftPlan{};
}

nn_status build_plan(const FftKey &k, FftPlan *p)
{
    *p = FftPlan{};
    NN_CHECK(cufftCreate(&p->h));
    NN_CHECK(cufftSetAutoAllocation(p->h, 0));
    long long n = k.n, dist = k.n, one = 1;
    NN_CHECK(cufftMakePlanMany64(p->h, 1, &n, &n, one, dist, &n, one, dist, k.dtype == NN_C64 ? CUFFT_C2C : CUFFT_Z2Z, k.rows, &p->ws));
    p->lock = new std::mutex;
    return NN_OK;
}

} // namespace

extern "C" nn_status nn_cuda_fft_c2c(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *out = a->out[0];
    if (x->dtype != NN_C64 && x->dtype != NN_C128) return nn_not_implemented(a, x->dtype);
    if (out->dtype != x->dtype || !nn_is_contiguous(x) || !nn_is_contiguous(out) || x->ndim == 0)
        return nn_error(NN_ERR_ARG, "fft_c2c: expected contiguous complex rows of one dtype");
    int64_t n = x->shape[x->ndim - 1], rows = n ? nn_numel(x) / n : 0;
    if (rows == 0) return NN_OK;
    int dev = nn_cuda_index(a);
    nn_cuda_device *d = nn_cuda_dev(dev); /* also makes dev the current device, where a plan is made */
    if (!d) return nn_last_status();
    FftKey key;
    memset(&key, 0, sizeof key);
    key.dev = dev, key.dtype = x->dtype, key.n = n, key.rows = rows;
    nn_plan_cache<FftKey, FftPlan> *cache = nn_plan_cache_for<FftKey, FftPlan>(destroy_plan);
    FftPlan *plan = cache->find(key);
    if (!plan) {
        FftPlan fresh;
        nn_status st = build_plan(key, &fresh);
        if (st) {
            destroy_plan(fresh);
            return st;
        }
        plan = cache->insert(key, fresh);
    }
    cudaStream_t s = nn_cuda_current(d);
    void *ws = NULL;
    if (plan->ws && !(ws = nn_cuda_alloc(dev, plan->ws))) return nn_last_status();
    nn_status st;
    {
        std::lock_guard<std::mutex> g(*plan->lock);
        st = nn_check(cufftSetStream(plan->h, s), "cufftSetStream", __FILE__, __LINE__);
        if (!st && ws) st = nn_check(cufftSetWorkArea(plan->h, ws), "cufftSetWorkArea", __FILE__, __LINE__);
        int dir = a->i[0] ? CUFFT_INVERSE : CUFFT_FORWARD;
        if (!st && x->dtype == NN_C64)
            st = nn_check(cufftExecC2C(plan->h, (cufftComplex *)nn_data(x), (cufftComplex *)nn_data(out), dir), "cufftExecC2C", __FILE__,
                          __LINE__);
        else if (!st)
            st = nn_check(cufftExecZ2Z(plan->h, (cufftDoubleComplex *)nn_data(x), (cufftDoubleComplex *)nn_data(out), dir), "cufftExecZ2Z",
                          __FILE__, __LINE__);
    }
    if (ws) nn_cuda_free(dev, ws); /* stream-ordered: reused only by later work on this stream */
    return st;
}
