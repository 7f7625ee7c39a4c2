// How much an all-reduce slows compute it overlaps, by how NCCL is given the buffer.
// One process drives 2 GPUs. For each buffer mode (cudaMalloc; ncclMemAlloc; ncclMemAlloc +
// ncclCommRegister; ncclMemAlloc + a symmetric window) and CTA policy (default, efficiency)
// it times, on events after a warm-up, median of repeats: the in-place all-reduce alone, a
// compute load alone (float32 GEMMs and a streaming kernel, as a backward mixes them), and
// both started together. Build: nvcc -O2 -arch=sm_90 bench/nccl_overlap.cu -lnccl -lcublas
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define NK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, ncclGetErrorString(r_)); exit(1); } } while (0)

enum { NG = 2, GEMM_N = 2048, STREAM_ELEMS = 64 << 20, REPS = 9 };

__global__ void fill(float *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (float)((i * 2654435761u + seed) % 1000u) * 1e-3f - 0.5f;
}

__global__ void axpy(float *y, const float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = 0.999f * y[i] + 1e-3f * x[i];
}

struct Gpu {
    cudaStream_t cs, ns;
    cublasHandle_t blas;
    float *a, *b, *c, *x, *y, *buf;
    ncclComm_t comm;
    void *reg;
    ncclWindow_t win;
    cudaEvent_t e0, e1, e2;
};

static void compute(Gpu &g)
{
    const float one = 1, zero = 0;
    for (int k = 0; k < 4; k++) {
        cublasSgemm(g.blas, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_N, GEMM_N, GEMM_N, &one, g.a, GEMM_N, g.b, GEMM_N, &zero, g.c, GEMM_N);
        axpy<<<1056, 256, 0, g.cs>>>(g.y, g.x, STREAM_ELEMS);
    }
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

// what: 0 all-reduce, 1 compute, 2 both; returns GPU 0's medians (compute stream, collective stream)
static void timed(Gpu *g, size_t count, int what, float *t_comp, float *t_ar)
{
    std::vector<float> tc, ta;
    for (int rep = 0; rep < REPS + 2; rep++) {
        for (int i = 0; i < NG; i++) {
            CK(cudaSetDevice(i));
            CK(cudaStreamSynchronize(g[i].cs));
            CK(cudaStreamSynchronize(g[i].ns));
            CK(cudaEventRecord(g[i].e0, g[i].cs));
            CK(cudaStreamWaitEvent(g[i].ns, g[i].e0, 0));
        }
        if (what != 1) {
            NK(ncclGroupStart());
            for (int i = 0; i < NG; i++) NK(ncclAllReduce(g[i].buf, g[i].buf, count, ncclFloat, ncclSum, g[i].comm, g[i].ns));
            NK(ncclGroupEnd());
        }
        for (int i = 0; i < NG; i++) {
            CK(cudaSetDevice(i));
            if (what != 0) compute(g[i]);
            CK(cudaEventRecord(g[i].e1, g[i].cs));
            CK(cudaEventRecord(g[i].e2, g[i].ns));
        }
        for (int i = 0; i < NG; i++) { CK(cudaSetDevice(i)); CK(cudaDeviceSynchronize()); }
        if (rep < 2) continue;
        float c, a;
        CK(cudaEventElapsedTime(&c, g[0].e0, g[0].e1));
        CK(cudaEventElapsedTime(&a, g[0].e0, g[0].e2));
        tc.push_back(c);
        ta.push_back(a);
    }
    *t_comp = median(tc);
    *t_ar = median(ta);
}

int main(int argc, char **argv)
{
    size_t mb = argc > 1 ? (size_t)atoi(argv[1]) : 244, count = mb * (1 << 20) / 4;
    int version;
    NK(ncclGetVersion(&version));
    printf("NCCL %d, all-reduce %zu MB float32 in place, %d GPUs, median of %d\n", version, mb, NG, REPS);
    Gpu g[NG];
    for (int i = 0; i < NG; i++) {
        CK(cudaSetDevice(i));
        CK(cudaStreamCreateWithFlags(&g[i].cs, cudaStreamNonBlocking));
        CK(cudaStreamCreateWithFlags(&g[i].ns, cudaStreamNonBlocking));
        cublasCreate(&g[i].blas);
        cublasSetStream(g[i].blas, g[i].cs);
        size_t gm = (size_t)GEMM_N * GEMM_N;
        CK(cudaMalloc(&g[i].a, gm * 4)); CK(cudaMalloc(&g[i].b, gm * 4)); CK(cudaMalloc(&g[i].c, gm * 4));
        CK(cudaMalloc(&g[i].x, STREAM_ELEMS * 4)); CK(cudaMalloc(&g[i].y, STREAM_ELEMS * 4));
        fill<<<1024, 256>>>(g[i].a, gm, 1); fill<<<1024, 256>>>(g[i].b, gm, 2);
        fill<<<1024, 256>>>(g[i].x, STREAM_ELEMS, 3); fill<<<1024, 256>>>(g[i].y, STREAM_ELEMS, 4);
        CK(cudaEventCreate(&g[i].e0)); CK(cudaEventCreate(&g[i].e1)); CK(cudaEventCreate(&g[i].e2));
        CK(cudaDeviceSynchronize());
    }
    float comp_alone, dummy;
    timed(g, 0, 1, &comp_alone, &dummy);
    printf("compute alone %.3f ms\n", comp_alone);
    const char *modes[] = {"cudaMalloc", "ncclMemAlloc", "ncclMemAlloc+CommRegister", "ncclMemAlloc+symmetric window"};
    const char *policies[] = {"default", "efficiency"};
    printf("| buffer | CTA policy | all-reduce alone | GB/s | compute beside it | its all-reduce |\n| --- | --- | --- | --- | --- | --- |\n");
    for (int mode = 0; mode < 4; mode++)
        for (int pol = 0; pol < 2; pol++) {
            ncclUniqueId id;
            NK(ncclGetUniqueId(&id));
            ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
            cfg.CTAPolicy = pol ? NCCL_CTA_POLICY_EFFICIENCY : NCCL_CTA_POLICY_DEFAULT;
            NK(ncclGroupStart());
            for (int i = 0; i < NG; i++) { CK(cudaSetDevice(i)); NK(ncclCommInitRankConfig(&g[i].comm, NG, id, i, &cfg)); }
            NK(ncclGroupEnd());
            for (int i = 0; i < NG; i++) {
                CK(cudaSetDevice(i));
                if (mode == 0) CK(cudaMalloc(&g[i].buf, count * 4));
                else NK(ncclMemAlloc((void **)&g[i].buf, count * 4));
                fill<<<1024, 256>>>(g[i].buf, count, 5 + i);
                CK(cudaDeviceSynchronize());
                if (mode == 2) NK(ncclCommRegister(g[i].comm, g[i].buf, count * 4, &g[i].reg));
            }
            if (mode == 3) {
                NK(ncclGroupStart());
                for (int i = 0; i < NG; i++) { CK(cudaSetDevice(i)); NK(ncclCommWindowRegister(g[i].comm, g[i].buf, count * 4, &g[i].win, NCCL_WIN_COLL_SYMMETRIC)); }
                NK(ncclGroupEnd());
            }
            float ar, both_c, both_a;
            timed(g, count, 0, &dummy, &ar);
            timed(g, count, 2, &both_c, &both_a);
            printf("| %s | %s | %.3f ms | %.1f | %.3f ms (+%.3f) | %.3f ms |\n", modes[mode], policies[pol], ar,
                   count * 4 / (ar * 1e6), both_c, both_c - comp_alone, both_a);
            fflush(stdout);
            if (mode == 3) {
                NK(ncclGroupStart());
                for (int i = 0; i < NG; i++) { CK(cudaSetDevice(i)); NK(ncclCommWindowDeregister(g[i].comm, g[i].win)); }
                NK(ncclGroupEnd());
            }
            for (int i = 0; i < NG; i++) {
                CK(cudaSetDevice(i));
                if (mode == 2) NK(ncclCommDeregister(g[i].comm, g[i].reg));
                if (mode == 0) CK(cudaFree(g[i].buf));
                else NK(ncclMemFree(g[i].buf));
                NK(ncclCommDestroy(g[i].comm));
            }
        }
    return 0;
}
