// How much an all-reduce slows compute it overlaps, by how the all-reduce is done.
// One process drives 2 GPUs. It times, on events after a warm-up, median of repeats: the
// in-place all-reduce alone, a compute load alone (GEMMs and a streaming kernel, as a backward
// mixes them; float32, or float16 on tensor cores as under autocast), and both started together.
// All-reduces: NCCL (cudaMalloc'd buffer; ncclMemAlloc; + ncclCommRegister; + a symmetric
// window; CTA policy default or efficiency), and one on the copy engines with no NCCL kernel:
// each GPU pushes the half the other owns into the other's scratch (cudaMemcpyPeerAsync), adds
// what it received into its own half, and pushes its summed half back, in chunks so copies and
// adds overlap.
//   nvcc -O2 -arch=sm_90 bench/nccl_overlap.cu -lnccl -lcublas -o nccl_overlap
//   ./nccl_overlap [MB, default 244] [all | ce]   (ce: NCCL default against the copy engines only)
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define NK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, ncclGetErrorString(r_)); exit(1); } } while (0)

enum { NG = 2, GEMM_N = 2048, H_GEMM_N = 4096, STREAM_ELEMS = 64 << 20, REPS = 9, MAX_CHUNKS = 16 };

__global__ void fill(float *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (float)((i * 2654435761u + seed) % 1000u) * 1e-3f - 0.5f;
}

__global__ void fill_h(__half *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = __float2half((float)((i * 2654435761u + seed) % 1000u) * 1e-3f - 0.5f);
}

__global__ void axpy(float *y, const float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = 0.999f * y[i] + 1e-3f * x[i];
}

__global__ void add_into(float4 *y, const float4 *x, size_t n4)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        float4 a = y[i], b = x[i];
        y[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
}

struct Gpu {
    cudaStream_t cs, ns, as, gs; // compute; all-reduce (NCCL, or the copy engines' first pushes); adds; pushes back
    cublasHandle_t blas;
    float *a, *b, *c, *x, *y, *buf, *scratch;
    __half *ha, *hb, *hc;
    ncclComm_t comm;
    void *reg;
    ncclWindow_t win;
    cudaEvent_t e0, e1, e2, pushed[MAX_CHUNKS], added[MAX_CHUNKS], back;
};

static int half_gemms; // the compute load: 0 float32 GEMMs, 1 float16 GEMMs on tensor cores

static void compute(Gpu &g)
{
    const float one = 1, zero = 0;
    for (int k = 0; k < 4; k++) {
        if (half_gemms)
            cublasGemmEx(g.blas, CUBLAS_OP_N, CUBLAS_OP_N, H_GEMM_N, H_GEMM_N, H_GEMM_N, &one, g.ha, CUDA_R_16F, H_GEMM_N,
                         g.hb, CUDA_R_16F, H_GEMM_N, &zero, g.hc, CUDA_R_16F, H_GEMM_N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        else
            cublasSgemm(g.blas, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_N, GEMM_N, GEMM_N, &one, g.a, GEMM_N, g.b, GEMM_N, &zero, g.c, GEMM_N);
        axpy<<<1056, 256, 0, g.cs>>>(g.y, g.x, STREAM_ELEMS);
    }
}

// The copy engines' all-reduce of count floats (count divisible by 8 * chunks). GPU i owns half i.
static void ce_allreduce(Gpu *g, size_t count, int chunks)
{
    size_t half = count / 2, piece = half / chunks;
    for (int k = 0; k < chunks; k++)
        for (int i = 0; i < NG; i++) { // push the peer's half, chunk k, into the peer's scratch
            int p = 1 - i;
            CK(cudaSetDevice(i));
            CK(cudaMemcpyPeerAsync(g[p].scratch + k * piece, p, g[i].buf + p * half + k * piece, i, piece * 4, g[i].ns));
            CK(cudaEventRecord(g[i].pushed[k], g[i].ns));
        }
    for (int k = 0; k < chunks; k++)
        for (int i = 0; i < NG; i++) { // add what the peer pushed into my half, then push the sum back
            int p = 1 - i;
            CK(cudaSetDevice(i));
            CK(cudaStreamWaitEvent(g[i].as, g[p].pushed[k], 0));
            add_into<<<264, 512, 0, g[i].as>>>((float4 *)(g[i].buf + i * half + k * piece), (const float4 *)(g[i].scratch + k * piece), piece / 4);
            CK(cudaEventRecord(g[i].added[k], g[i].as));
            CK(cudaStreamWaitEvent(g[i].gs, g[i].added[k], 0));
            CK(cudaMemcpyPeerAsync(g[p].buf + i * half + k * piece, p, g[i].buf + i * half + k * piece, i, piece * 4, g[i].gs));
        }
    for (int i = 0; i < NG; i++) { // done when my pushes are and the peer's have landed
        CK(cudaSetDevice(i));
        CK(cudaEventRecord(g[i].back, g[i].gs));
    }
    for (int i = 0; i < NG; i++) {
        CK(cudaSetDevice(i));
        CK(cudaStreamWaitEvent(g[i].ns, g[i].back, 0));
        CK(cudaStreamWaitEvent(g[i].ns, g[1 - i].back, 0));
    }
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

// what: 0 all-reduce, 1 compute, 2 both; chunks 0 = NCCL, else the copy engines in that many
// chunks; returns GPU 0's medians (compute stream, all-reduce stream)
static void timed(Gpu *g, size_t count, int what, int chunks, float *t_comp, float *t_ar)
{
    std::vector<float> tc, ta;
    for (int rep = 0; rep < REPS + 2; rep++) {
        for (int i = 0; i < NG; i++) {
            CK(cudaSetDevice(i));
            CK(cudaDeviceSynchronize());
            CK(cudaEventRecord(g[i].e0, g[i].cs));
            CK(cudaStreamWaitEvent(g[i].ns, g[i].e0, 0));
        }
        if (what != 1) {
            if (chunks) ce_allreduce(g, count, chunks);
            else {
                NK(ncclGroupStart());
                for (int i = 0; i < NG; i++) NK(ncclAllReduce(g[i].buf, g[i].buf, count, ncclFloat, ncclSum, g[i].comm, g[i].ns));
                NK(ncclGroupEnd());
            }
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

static void init_comms(Gpu *g, int policy)
{
    ncclUniqueId id;
    NK(ncclGetUniqueId(&id));
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.CTAPolicy = policy ? NCCL_CTA_POLICY_EFFICIENCY : NCCL_CTA_POLICY_DEFAULT;
    NK(ncclGroupStart());
    for (int i = 0; i < NG; i++) { CK(cudaSetDevice(i)); NK(ncclCommInitRankConfig(&g[i].comm, NG, id, i, &cfg)); }
    NK(ncclGroupEnd());
}

// The sum both GPUs must hold after an all-reduce, checked at a few places.
static void check_sum(Gpu *g, size_t count, const char *what)
{
    size_t at[] = {0, count / 2 - 1, count / 2, count - 1, count / 3};
    for (size_t j : at) {
        float v[NG], want = 0;
        for (int i = 0; i < NG; i++) {
            CK(cudaSetDevice(i));
            CK(cudaMemcpy(&v[i], g[i].buf + j, 4, cudaMemcpyDeviceToHost));
            want += (float)((j * 2654435761u + 5 + i) % 1000u) * 1e-3f - 0.5f;
        }
        if (v[0] != v[1] || fabsf(v[0] - want) > 1e-5f) {
            printf("%s: wrong sum at %zu: %g %g, want %g\n", what, j, v[0], v[1], want);
            exit(1);
        }
    }
}

static void refill(Gpu *g, size_t count)
{
    for (int i = 0; i < NG; i++) {
        CK(cudaSetDevice(i));
        fill<<<1024, 256>>>(g[i].buf, count, 5 + i);
        CK(cudaDeviceSynchronize());
    }
}

static void compare_copy_engines(Gpu *g, size_t count, float comp_alone)
{
    init_comms(g, 0);
    for (int i = 0; i < NG; i++) {
        CK(cudaSetDevice(i));
        CK(cudaMalloc(&g[i].buf, count * 4));
        CK(cudaMalloc(&g[i].scratch, count * 2));
    }
    refill(g, count);
    float dummy, ar, both_c, both_a;
    timed(g, count, 0, 4, &dummy, &ar); // one all-reduce on the copy engines, then its result checked
    refill(g, count);
    ce_allreduce(g, count, 4);
    for (int i = 0; i < NG; i++) { CK(cudaSetDevice(i)); CK(cudaDeviceSynchronize()); }
    check_sum(g, count, "copy engines");
    int chunk_counts[] = {0, 1, 4, 16};
    for (int chunks : chunk_counts) {
        timed(g, count, 0, chunks, &dummy, &ar);
        timed(g, count, 2, chunks, &both_c, &both_a);
        char name[64];
        if (chunks) snprintf(name, sizeof name, "copy engines, %d chunk%s", chunks, chunks > 1 ? "s" : "");
        else snprintf(name, sizeof name, "NCCL, cudaMalloc, default CTAs");
        printf("| %s | %s | %.3f ms | %.1f | %.3f ms (+%.3f) | %.3f ms |\n", half_gemms ? "float16" : "float32", name, ar,
               count * 4 / (ar * 1e6), both_c, both_c - comp_alone, both_a);
        fflush(stdout);
    }
    for (int i = 0; i < NG; i++) {
        CK(cudaSetDevice(i));
        CK(cudaFree(g[i].buf));
        CK(cudaFree(g[i].scratch));
        NK(ncclCommDestroy(g[i].comm));
    }
}

static void compare_nccl_buffers(Gpu *g, size_t count, float comp_alone)
{
    const char *modes[] = {"cudaMalloc", "ncclMemAlloc", "ncclMemAlloc+CommRegister", "ncclMemAlloc+symmetric window"};
    const char *policies[] = {"default", "efficiency"};
    for (int mode = 0; mode < 4; mode++)
        for (int pol = 0; pol < 2; pol++) {
            init_comms(g, pol);
            for (int i = 0; i < NG; i++) {
                CK(cudaSetDevice(i));
                if (mode == 0) CK(cudaMalloc(&g[i].buf, count * 4));
                else NK(ncclMemAlloc((void **)&g[i].buf, count * 4));
                if (mode == 2) NK(ncclCommRegister(g[i].comm, g[i].buf, count * 4, &g[i].reg));
            }
            refill(g, count);
            if (mode == 3) {
                NK(ncclGroupStart());
                for (int i = 0; i < NG; i++) { CK(cudaSetDevice(i)); NK(ncclCommWindowRegister(g[i].comm, g[i].buf, count * 4, &g[i].win, NCCL_WIN_COLL_SYMMETRIC)); }
                NK(ncclGroupEnd());
            }
            float dummy, ar, both_c, both_a;
            timed(g, count, 0, 0, &dummy, &ar);
            timed(g, count, 2, 0, &both_c, &both_a);
            printf("| %s | NCCL, %s, %s CTAs | %.3f ms | %.1f | %.3f ms (+%.3f) | %.3f ms |\n", half_gemms ? "float16" : "float32",
                   modes[mode], policies[pol], ar, count * 4 / (ar * 1e6), both_c, both_c - comp_alone, both_a);
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
}

int main(int argc, char **argv)
{
    size_t mb = argc > 1 ? (size_t)atoi(argv[1]) : 244, count = mb * (1 << 20) / 4;
    bool ce_only = argc > 2 && !strcmp(argv[2], "ce");
    int version;
    NK(ncclGetVersion(&version));
    printf("NCCL %d, all-reduce %zu MB float32 in place, %d GPUs, median of %d\n", version, mb, NG, REPS);
    Gpu g[NG];
    for (int i = 0; i < NG; i++) {
        CK(cudaSetDevice(i));
        CK(cudaDeviceEnablePeerAccess(1 - i, 0));
        CK(cudaStreamCreateWithFlags(&g[i].cs, cudaStreamNonBlocking));
        CK(cudaStreamCreateWithFlags(&g[i].ns, cudaStreamNonBlocking));
        CK(cudaStreamCreateWithFlags(&g[i].as, cudaStreamNonBlocking));
        CK(cudaStreamCreateWithFlags(&g[i].gs, cudaStreamNonBlocking));
        cublasCreate(&g[i].blas);
        cublasSetStream(g[i].blas, g[i].cs);
        size_t gm = (size_t)GEMM_N * GEMM_N, hm = (size_t)H_GEMM_N * H_GEMM_N;
        CK(cudaMalloc(&g[i].a, gm * 4)); CK(cudaMalloc(&g[i].b, gm * 4)); CK(cudaMalloc(&g[i].c, gm * 4));
        CK(cudaMalloc(&g[i].ha, hm * 2)); CK(cudaMalloc(&g[i].hb, hm * 2)); CK(cudaMalloc(&g[i].hc, hm * 2));
        CK(cudaMalloc(&g[i].x, STREAM_ELEMS * 4)); CK(cudaMalloc(&g[i].y, STREAM_ELEMS * 4));
        fill<<<1024, 256>>>(g[i].a, gm, 1); fill<<<1024, 256>>>(g[i].b, gm, 2);
        fill_h<<<1024, 256>>>(g[i].ha, hm, 1); fill_h<<<1024, 256>>>(g[i].hb, hm, 2);
        fill<<<1024, 256>>>(g[i].x, STREAM_ELEMS, 3); fill<<<1024, 256>>>(g[i].y, STREAM_ELEMS, 4);
        CK(cudaEventCreate(&g[i].e0)); CK(cudaEventCreate(&g[i].e1)); CK(cudaEventCreate(&g[i].e2));
        for (int k = 0; k < MAX_CHUNKS; k++) {
            CK(cudaEventCreateWithFlags(&g[i].pushed[k], cudaEventDisableTiming));
            CK(cudaEventCreateWithFlags(&g[i].added[k], cudaEventDisableTiming));
        }
        CK(cudaEventCreateWithFlags(&g[i].back, cudaEventDisableTiming));
        CK(cudaDeviceSynchronize());
    }
    printf("| compute | all-reduce | alone | GB/s | compute beside it | its all-reduce |\n| --- | --- | --- | --- | --- | --- |\n");
    for (half_gemms = 0; half_gemms < 2; half_gemms++) {
        float comp_alone, dummy;
        timed(g, 0, 1, 0, &comp_alone, &dummy);
        printf("| %s | none (compute alone) | | | %.3f ms | |\n", half_gemms ? "float16" : "float32", comp_alone);
        if (ce_only) compare_copy_engines(g, count, comp_alone);
        else {
            compare_nccl_buffers(g, count, comp_alone);
            compare_copy_engines(g, count, comp_alone);
        }
    }
    return 0;
}
