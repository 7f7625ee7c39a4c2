/* NNREPL_OP_PROFILE=N: GPU time per op on cuda:0 after the first N-1 op calls (leave out
 * the warm-up, where plans are built), printed to stderr when the program exits. An op
 * called from inside another op counts in its caller. Every kernel in the CUDA backend's
 * table is wrapped: an event before and after it on the op's stream, read back in batches. Ops on other devices, copies between
 * devices and collectives are not counted. The events cost host time, so a profiled run
 * says where the GPU's time goes, not how fast the host is. */
#include <stdio.h>
#include <stdlib.h>

#include "core.cuh"

namespace {

enum { PAIRS = 4096 };

struct Acc {
    double ms;
    long calls;
};

nn_kernel real[NN_OP_COUNT];
Acc acc[NN_OP_COUNT][NN_NDTYPES];
cudaEvent_t ev[PAIRS][2];
int key[PAIRS];
int pending, depth;
long skip;
bool ready, failed;
double first_to_last_ms; /* from the first event of each batch to its last: busy plus idle */

void harvest(void)
{
    if (!pending) return;
    if (cudaEventSynchronize(ev[pending - 1][1]) != cudaSuccess) failed = true;
    if (failed) cudaGetLastError(); /* not left for the next launch's check */
    for (int i = 0; i < pending && !failed; i++) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, ev[i][0], ev[i][1]) != cudaSuccess) { failed = true; cudaGetLastError(); break; }
        Acc &x = acc[key[i] / NN_NDTYPES][key[i] % NN_NDTYPES];
        x.ms += ms;
        x.calls++;
    }
    float span = 0;
    if (!failed && cudaEventElapsedTime(&span, ev[0][0], ev[pending - 1][1]) == cudaSuccess) first_to_last_ms += span;
    pending = 0;
}

void report(void)
{
    harvest();
    if (failed) {
        fprintf(stderr, "NNREPL_OP_PROFILE: an event failed; no profile\n");
        return;
    }
    static const char *const dt[NN_NDTYPES] = {"f32", "f64", "f16", "bf16", "i64", "i32", "u8", "bool"};
    double total = 0;
    for (int o = 0; o < NN_OP_COUNT; o++)
        for (int d = 0; d < NN_NDTYPES; d++) total += acc[o][d].ms;
    fprintf(stderr, "NNREPL_OP_PROFILE (cuda:0): %.3f ms in ops, %.3f ms from first to last event per batch\n", total,
            first_to_last_ms);
    fprintf(stderr, "%-28s %-5s %10s %8s %10s %6s\n", "op", "dtype", "total ms", "calls", "us/call", "share");
    for (;;) { /* largest first; each printed entry is cleared */
        int bo = -1, bd = 0;
        for (int o = 0; o < NN_OP_COUNT; o++)
            for (int d = 0; d < NN_NDTYPES; d++)
                if (acc[o][d].calls && (bo < 0 || acc[o][d].ms > acc[bo][bd].ms)) bo = o, bd = d;
        if (bo < 0) break;
        Acc &x = acc[bo][bd];
        fprintf(stderr, "%-28s %-5s %10.3f %8ld %10.2f %5.1f%%\n", nn_op_name((nn_op)bo), dt[bd], x.ms, x.calls,
                x.ms * 1e3 / x.calls, total > 0 ? 100 * x.ms / total : 0);
        x.calls = 0;
    }
}

nn_status profiled(const nn_kargs *a)
{
    nn_kernel k = real[a->op];
    if (nn_cuda_index(a) != 0 || failed || depth || --skip > 0) return k(a);
    cudaStream_t s = nn_cuda_stream(0);
    cudaStreamCaptureStatus cs;
    if (cudaStreamIsCapturing(s, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) return k(a);
    if (!ready) {
        for (int i = 0; i < PAIRS; i++)
            for (int j = 0; j < 2; j++)
                if (cudaEventCreate(&ev[i][j]) != cudaSuccess) failed = true;
        ready = true;
        atexit(report); /* after CUDA's own exit handlers were registered: runs before them */
        if (failed) return k(a);
    }
    if (pending == PAIRS) harvest();
    cudaError_t e = cudaEventRecord(ev[pending][0], s);
    depth++;
    nn_status st = k(a);
    depth--;
    if (e == cudaSuccess) e = cudaEventRecord(ev[pending][1], nn_cuda_stream(0));
    if (e != cudaSuccess) {
        fprintf(stderr, "NNREPL_OP_PROFILE: %s: %s\n", nn_op_name(a->op), cudaGetErrorString(e));
        cudaGetLastError();
        failed = true;
        return st;
    }
    key[pending++] = (int)a->op * NN_NDTYPES + (int)a->out[0]->dtype;
    return st;
}

} // namespace

extern "C" void nn_cuda_op_profile_install(nn_backend *b)
{
    const char *e = getenv("NNREPL_OP_PROFILE");
    if (!e || (skip = atol(e)) <= 0) return;
    for (int o = 0; o < NN_OP_COUNT; o++) {
        real[o] = b->kernels[o];
        if (real[o]) b->kernels[o] = profiled;
    }
}
