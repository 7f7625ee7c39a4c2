/* NNREPL_OP_PROFILE=N: GPU time per op on cuda:0 after the first N-1 op calls (leave out
 * the warm-up, where plans are built), printed to stderr when the program exits, per op and
 * output dtype; NNREPL_OP_PROFILE_SHAPES=1 splits that by the first input's dtype and the
 * output's shape and layout (which copies a step makes, say). An op
 * called from inside another op counts in its caller. Every kernel in the CUDA backend's
 * table is wrapped: an event before and after it on the op's stream, read back in batches. Ops on other devices, copies between
 * devices and collectives are not counted. The events cost host time, so a profiled run
 * says where the GPU's time goes, not how fast the host is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.cuh"

namespace {

enum { PAIRS = 4096, SLOTS = 1024 };

/* what an op call is counted under */
struct Key { /* no padding bytes: keys are hashed and compared as bytes */
    int op, out_dt, in_dt, ndim; /* in_dt, ndim, shape, cl: with NNREPL_OP_PROFILE_SHAPES only */
    int64_t shape[NN_MAX_DIMS];
    int cl, unused;
};

struct Acc {
    Key k;
    double ms;
    long calls;
};

nn_kernel real[NN_OP_COUNT];
Acc acc[SLOTS]; /* open addressing on the key; calls == 0 marks a free slot */
int nacc;
bool by_shape;
cudaEvent_t ev[PAIRS][2];
Key key[PAIRS];
int pending, depth;
long skip;
bool ready, failed;
double first_to_last_ms; /* from the first event of each batch to its last: busy plus idle */

Key key_of(const nn_kargs *a)
{
    Key k;
    memset(&k, 0, sizeof k);
    k.op = (int)a->op;
    k.out_dt = (int)a->out[0]->dtype;
    if (by_shape) {
        const nn_tensor *o = a->out[0];
        k.in_dt = a->nin ? (int)a->in[0]->dtype : -1;
        k.ndim = o->ndim;
        memcpy(k.shape, o->shape, sizeof(int64_t) * o->ndim);
        k.cl = o->ndim == 4 && !nn_is_contiguous(o) && o->strides[1] == 1;
    }
    return k;
}

/* the key's slot, NULL when the table is full (the call then goes uncounted) */
Acc *slot(const Key &k)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)&k;
    for (size_t i = 0; i < sizeof k; i++) h = (h ^ b[i]) * 1099511628211ull;
    for (int n = 0; n < SLOTS; n++) {
        Acc &x = acc[(h + n) % SLOTS];
        if (x.calls && !memcmp(&x.k, &k, sizeof k)) return &x;
        if (!x.calls) {
            if (nacc == SLOTS - 1) return NULL;
            nacc++;
            x.k = k;
            return &x;
        }
    }
    return NULL;
}

void harvest(void)
{
    if (!pending) return;
    if (cudaEventSynchronize(ev[pending - 1][1]) != cudaSuccess) failed = true;
    if (failed) cudaGetLastError(); /* not left for the next launch's check */
    for (int i = 0; i < pending && !failed; i++) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, ev[i][0], ev[i][1]) != cudaSuccess) { failed = true; cudaGetLastError(); break; }
        Acc *x = slot(key[i]);
        if (x) x->ms += ms, x->calls++;
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
    for (int i = 0; i < SLOTS; i++) total += acc[i].calls ? acc[i].ms : 0;
    fprintf(stderr, "NNREPL_OP_PROFILE (cuda:0): %.3f ms in ops, %.3f ms from first to last event per batch\n", total,
            first_to_last_ms);
    fprintf(stderr, "%-28s %-5s %10s %8s %10s %6s%s\n", "op", "dtype", "total ms", "calls", "us/call", "share", by_shape ? "  from  shape" : "");
    for (;;) { /* largest first; each printed entry is cleared */
        Acc *b = NULL;
        for (int i = 0; i < SLOTS; i++)
            if (acc[i].calls && (!b || acc[i].ms > b->ms)) b = &acc[i];
        if (!b) break;
        char sh[160] = "";
        if (by_shape) {
            char dims[128];
            snprintf(sh, sizeof sh, "  %-5s %s%s", b->k.in_dt >= 0 ? dt[b->k.in_dt] : "-", nn_shape_str(dims, b->k.ndim, b->k.shape),
                     b->k.cl ? " channels-last" : "");
        }
        fprintf(stderr, "%-28s %-5s %10.3f %8ld %10.2f %5.1f%%%s\n", nn_op_name((nn_op)b->k.op), dt[b->k.out_dt], b->ms, b->calls,
                b->ms * 1e3 / b->calls, total > 0 ? 100 * b->ms / total : 0, sh);
        b->calls = 0;
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
    key[pending++] = key_of(a);
    return st;
}

} // namespace

extern "C" void nn_cuda_op_profile_install(nn_backend *b)
{
    const char *e = getenv("NNREPL_OP_PROFILE");
    if (!e || (skip = atol(e)) <= 0) return;
    const char *sh = getenv("NNREPL_OP_PROFILE_SHAPES");
    by_shape = sh && *sh && strcmp(sh, "0");
    for (int o = 0; o < NN_OP_COUNT; o++) {
        real[o] = b->kernels[o];
        if (real[o]) b->kernels[o] = profiled;
    }
}
