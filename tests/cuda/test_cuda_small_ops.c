/* Small elementwise ops on the GPU wait in a queue and go to the GPU together
 * (cuda/small_ops.cu). These cases run long chains of small dependent ops, where each op
 * reads what the one before it wrote, against the same chain on the CPU, with what must
 * launch the queue mixed in: other kernels (a reduction), stream switches, giving memory back to
 * the driver, a CUDA graph capture, another thread queueing on the same GPU at the same time.
 * Sizes on both sides of the queue's limit (2048). */
#include <pthread.h>

#include "harness.h"

static const nn_op OPS[] = {NN_OP_add, NN_OP_sub, NN_OP_mul, NN_OP_div, NN_OP_maximum, NN_OP_minimum, NN_OP_threshold_backward,
                            NN_OP_sigmoid_backward, NN_OP_tanh_backward};
enum { NOPS = sizeof OPS / sizeof OPS[0] };

/* operands that keep the chain's values in range: y in [0.5, 1.5), a value near 1 */
typedef struct {
    nn_tensor *y, *one, *value;
} operands;

static operands make_operands(nn_tensor *ycpu, nn_device dev, nn_dtype dt)
{
    int64_t s1 = 1;
    operands o;
    o.y = dev.type == NN_CPU ? nn_retain(ycpu) : to_dev(ycpu);
    o.one = nn_full(1, &s1, 1.25, dt, dev);
    o.value = nn_full(0, NULL, 0.875, dt, CPU); /* a Lua number joining the op */
    return o;
}

static void operands_free(operands o)
{
    nn_release(o.y);
    nn_release(o.one);
    nn_release(o.value);
}

/* step i of the chain: x <- op(x, operand), in place every fifth step; x is consumed */
static nn_tensor *step(int i, nn_tensor *x, const operands *o)
{
    nn_op op = OPS[i % NOPS];
    nn_tensor *b = (i / NOPS) % 3 == 0 ? o->y : (i / NOPS) % 3 == 1 ? o->value : o->one;
    if (i % 5 == 0) {
        nn_status st = op == NN_OP_add ? nn_add_alpha_(x, b, 0.5) : nn_binary_(op, x, b);
        if (st) {
            nn_release(x);
            return NULL;
        }
        return x;
    }
    nn_tensor *r = op == NN_OP_sub && i % 3 == 0 ? nn_add_alpha(x, b, -0.25) : nn_binary(op, x, b);
    nn_release(x);
    return r;
}

/* every 17th step a reduction kernel joins: x <- x - amax(x), exact in any order */
static nn_tensor *center(nn_tensor *x)
{
    nn_tensor *m = nn_reduce(NN_OP_amax, x, 0, false);
    nn_tensor *r = m ? nn_binary(NN_OP_sub, x, m) : NULL;
    nn_release(m);
    nn_release(x);
    return r;
}

enum { PLAIN, STREAMS, EMPTY_CACHE, NMODES };
static const char *const MODE[] = {"plain", "stream switch", "empty_cache"};

static nn_tensor *chain(nn_tensor *x, const operands *o, int steps, int mode, bool gpu)
{
    nn_gpu_stream *side = NULL;
    nn_gpu_event *e = NULL;
    if (gpu && mode == STREAMS) {
        side = nn_gpu->stream_new(0, 0);
        e = nn_gpu->event_new(false);
    }
    for (int i = 0; i < steps && x; i++) {
        x = step(i, x, o);
        if (x && i % 17 == 16) x = center(x);
        if (!gpu || !x) continue;
        if (mode == STREAMS && i % 50 == 49) { /* hand the chain to the other stream, in order */
            nn_gpu->event_record(e, NULL);
            nn_gpu_stream *to = (i / 50) % 2 == 0 ? side : NULL;
            nn_gpu->set_stream(to);
            nn_gpu->stream_wait_event(to, e);
        }
        if (mode == EMPTY_CACHE && i % 40 == 39) { /* a queued op's temporary, released, then the cache emptied */
            nn_release(nn_binary(NN_OP_mul, x, o->y));
            nn_gpu->empty_cache();
        }
    }
    if (side) {
        nn_gpu->event_record(e, NULL);
        nn_gpu->set_stream(NULL);
        nn_gpu->stream_wait_event(NULL, e);
        nn_gpu->synchronize(-1);
        nn_gpu->stream_free(side);
        nn_gpu->event_free(e);
    }
    return x;
}

static void test_chain(nn_dtype dt, int64_t n, int mode)
{
    if (!begin("chain %s n=%lld %s", nn_dtype_name(dt), (long long)n, MODE[mode])) return;
    nn_tensor *x = nn_rand(1, &n, dt, CPU), *y = nn_rand(1, &n, dt, CPU);
    nn_uniform_(x, -1, 1);
    nn_uniform_(y, 0.5, 1.5);
    operands oc = make_operands(y, CPU, dt), og = make_operands(y, DEV, dt);
    nn_tensor *xg = chain(to_dev(x), &og, 300, mode, !self_test);
    nn_tensor *xc = chain(nn_retain(x), &oc, 300, mode, false);
    if (!xc) save_err();
    /* the same float math in the same order (alphas are powers of two, so a fused
     * multiply-add rounds as the CPU does): the two sides agree to within an ulp or two */
    check_tol("x after 300 ops", xc, xg, dt, 0.1);
    nn_release(xc);
    nn_release(xg);
    nn_release(x);
    nn_release(y);
    operands_free(oc);
    operands_free(og);
    end();
}

/* A graph captures queued small ops and replays them on new input. */
static void test_graph(nn_dtype dt)
{
    if (!begin("graph capture %s", nn_dtype_name(dt))) return;
    int64_t n = 300;
    nn_tensor *y = nn_rand(1, &n, dt, CPU);
    nn_uniform_(y, 0.5, 1.5);
    operands oc = make_operands(y, CPU, dt), og = make_operands(y, DEV, dt);
    nn_tensor *in = nn_full(1, &n, 0, dt, DEV), *out = nn_full(1, &n, 0, dt, DEV);
    nn_gpu_graph *g = nn_gpu->graph_new();
    nn_tensor *warm = chain(nn_clone(in), &og, 100, PLAIN, true); /* as a capture follows a warm-up */
    nn_release(warm);
    if (nn_gpu->graph_capture_begin(g, NULL)) fail("capture_begin: %s", nn_last_error());
    nn_tensor *r = chain(nn_clone(in), &og, 100, PLAIN, true);
    if (!r || nn_copy_(out, r)) fail("captured chain: %s", nn_last_error());
    nn_release(r);
    if (nn_gpu->graph_capture_end(g)) fail("capture_end: %s", nn_last_error());
    for (int rep = 0; rep < 3 && !case_errors; rep++) {
        nn_tensor *x = nn_rand(1, &n, dt, CPU);
        nn_uniform_(x, -1, 1);
        nn_tensor *xg = to_dev(x);
        nn_copy_(in, xg);
        if (nn_gpu->graph_replay(g)) fail("replay: %s", nn_last_error());
        nn_tensor *xc = chain(nn_retain(x), &oc, 100, PLAIN, false);
        check_tol("replayed chain", xc, out, dt, 0.1);
        nn_release(xc);
        nn_release(xg);
        nn_release(x);
    }
    nn_gpu->graph_free(g);
    nn_release(in);
    nn_release(out);
    nn_release(y);
    operands_free(oc);
    operands_free(og);
    end();
}

/* Two threads, each with its own chain, share the device's queue (an embedding host may run
 * interpreters on several threads). */
typedef struct {
    nn_tensor *x;
    operands *o;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    j->x = chain(j->x, j->o, 600, PLAIN, true);
    return NULL;
}

static void test_threads(void)
{
    if (!begin("two threads on one device")) return;
    int64_t n = 129;
    nn_tensor *x[2], *y = nn_rand(1, &n, NN_F32, CPU);
    nn_uniform_(y, 0.5, 1.5);
    operands oc = make_operands(y, CPU, NN_F32), og[2] = {make_operands(y, DEV, NN_F32), make_operands(y, DEV, NN_F32)};
    job jobs[2];
    pthread_t th[2];
    for (int k = 0; k < 2; k++) {
        x[k] = nn_rand(1, &n, NN_F32, CPU);
        nn_uniform_(x[k], -1, 1);
        jobs[k] = (job){to_dev(x[k]), &og[k]};
        pthread_create(&th[k], NULL, run_job, &jobs[k]);
    }
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < 2; k++) {
        nn_tensor *xc = chain(nn_retain(x[k]), &oc, 600, PLAIN, false);
        check_tol(k ? "second thread's chain" : "first thread's chain", xc, jobs[k].x, NN_F32, 0.1);
        nn_release(xc);
        nn_release(jobs[k].x);
        nn_release(x[k]);
        operands_free(og[k]);
    }
    nn_release(y);
    operands_free(oc);
    end();
}

int main(void)
{
    harness_init();
    double t0 = now();
    const nn_dtype dts[] = {NN_F32, NN_F16, NN_BF16};
    const int64_t sizes[] = {1, 37, 2048, 2049};
    for (int d = 0; d < 3; d++) {
        for (int s = 0; s < 4; s++) test_chain(dts[d], sizes[s], PLAIN);
        for (int m = STREAMS; m < NMODES; m++) test_chain(dts[d], 129, m);
        if (!self_test) test_graph(dts[d]);
    }
    test_threads();
    return harness_done("test_cuda_small_ops", t0);
}
