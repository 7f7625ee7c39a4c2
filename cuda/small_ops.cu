/* Deferred small ops: a dense binary op on at most NN_SMALL_MAX elements is not launched
 * on its own. It waits in its device's queue, and the queue goes to the GPU as one kernel
 * launch when anything else is about to use a stream (every other kernel, library call,
 * copy, event, synchronisation and stream switch goes through nn_cuda_stream or
 * nn_cuda_current, which flush first), when memory is given back to the driver, or when
 * the queue is full. A kernel launch costs the host 3-4 us on the GPU machines, more than
 * the op itself; a queued op costs a 48-byte record. One thread block runs the queued ops
 * one after another with a barrier between them, so each sees the one before it, in the
 * order they were asked for. Order on the stream is kept: nothing else reaches the stream
 * before the queue does.
 * NNREPL_SMALL_OPS=0 launches every op on its own. Interpreters on other threads share the
 * queues (and the streams, whose order the caching allocator relies on) under one lock. */
#include <stdlib.h>

#include <mutex>

#include "binary_ops.cuh"

using namespace nnk;

std::atomic<unsigned> nn_small_pending;

namespace {

std::mutex lock;

enum { CAP = 64, THREADS = 1024 };

struct Queue {
    cudaStream_t s;
    int count;
    nn_small_op op[CAP];
};

Queue queues[NN_GPU_MAX];

template <int N> struct Batch {
    int count;
    nn_small_op op[N];
};

template <typename T> __device__ __forceinline__ float operand(const void *p, float v, int mode, int i)
{
    return mode == IN_TENSOR ? ld(((const T *)p)[i]) : mode == IN_DEVSCALAR ? ld(*(const T *)p) : v;
}

template <typename T> __device__ void run_one(const nn_small_op &o)
{
    const BinP p{o.alpha, 0, 0};
    for (int i = threadIdx.x; i < o.n; i += THREADS) {
        float x = operand<T>(o.a, o.va, o.ma, i), y = operand<T>(o.b, o.vb, o.mb, i), r;
        switch (o.op) {
        case NN_OP_add: r = bop<NN_OP_add, float>(x, y, p); break;
        case NN_OP_sub: r = bop<NN_OP_sub, float>(x, y, p); break;
        case NN_OP_mul: r = bop<NN_OP_mul, float>(x, y, p); break;
        case NN_OP_div: r = bop<NN_OP_div, float>(x, y, p); break;
        case NN_OP_maximum: r = bop<NN_OP_maximum, float>(x, y, p); break;
        case NN_OP_minimum: r = bop<NN_OP_minimum, float>(x, y, p); break;
        case NN_OP_sigmoid_backward: r = bop<NN_OP_sigmoid_backward, float>(x, y, p); break;
        case NN_OP_tanh_backward: r = bop<NN_OP_tanh_backward, float>(x, y, p); break;
        default: r = bop<NN_OP_threshold_backward, float>(x, y, p); break;
        }
        ((T *)o.out)[i] = st<T>(r);
    }
}

template <int N> __global__ void __launch_bounds__(THREADS) run_batch(Batch<N> b)
{
    for (int k = 0; k < b.count; k++) {
        const nn_small_op &o = b.op[k];
        switch (o.dt) {
        case NN_F32: run_one<float>(o); break;
        case NN_F16: run_one<__half>(o); break;
        default: run_one<__nv_bfloat16>(o); break;
        }
        __syncthreads(); /* the next op may read what this one wrote */
    }
}

/* the smallest batch that holds the queue: a launch copies the whole parameter block */
template <int N> void launch(const Queue &q)
{
    Batch<N> b;
    b.count = q.count;
    memcpy(b.op, q.op, sizeof(nn_small_op) * q.count);
    nn_launch<run_batch<N>>(1, THREADS, q.s, b);
}

/* with lock held */
void flush(int index)
{
    Queue &q = queues[index];
    nn_small_pending &= ~(1u << index);
    if (!q.count) return;
    int now = -1;
    cudaGetDevice(&now);
    if (now != index) cudaSetDevice(index);
    if (q.count == 1) launch<1>(q);
    else if (q.count <= 8) launch<8>(q);
    else launch<CAP>(q);
    q.count = 0; /* a launch error stays for the next op's cudaGetLastError */
    if (now != index && now >= 0) cudaSetDevice(now);
}

bool enabled()
{
    static const bool on = [] {
        const char *e = getenv("NNREPL_SMALL_OPS");
        return !(e && e[0] == '0');
    }();
    return on;
}

} // namespace

void nn_small_flush_all(void)
{
    std::lock_guard<std::mutex> g(lock);
    for (int i = 0; nn_small_pending && i < NN_GPU_MAX; i++)
        if (nn_small_pending & (1u << i)) flush(i);
}

bool nn_small_defer(int index, const nn_small_op &op)
{
    if (!enabled() || index < 0 || index >= NN_GPU_MAX) return false;
    nn_cuda_device *d = nn_cuda_dev(index);
    if (!d) return false;
    std::lock_guard<std::mutex> g(lock);
    Queue &q = queues[index];
    if (q.count && q.s != d->current) flush(index);
    if (!q.count) q.s = d->current;
    q.op[q.count++] = op;
    nn_small_pending |= 1u << index;
    if (q.count == CAP) flush(index);
    return true;
}
