/* The op tracer (see tracer.h). Holding every operand keeps their storages alive, so a storage's
 * address names one buffer for the whole trace. */
#include <stdlib.h>
#include <string.h>

#include "profiler.h"
#include "tracer.h"

_Thread_local bool nn_tracing;
static _Thread_local struct {
    nn_trace_op *ops;
    int64_t n, cap;
    int depth; /* > 0: inside a recorded op's kernel */
} T;

void nn_tracer_clear(void)
{
    for (int64_t j = 0; j < T.n; j++) {
        for (int k = 0; k < 6; k++) nn_release(T.ops[j].in[k]);
        for (int k = 0; k < 3; k++) nn_release(T.ops[j].out[k]);
    }
    free(T.ops);
    T.ops = NULL;
    T.n = T.cap = 0;
}

nn_status nn_tracer_start(void)
{
    if (nn_profiling) return nn_error(NN_ERR_RUNTIME, "tracer: the profiler or a trace is already running on this thread");
    nn_tracer_clear();
    T.depth = 0;
    nn_tracing = nn_profiling = true;
    return NN_OK;
}

nn_status nn_tracer_stop(void)
{
    if (!nn_tracing) return nn_error(NN_ERR_RUNTIME, "tracer: not running");
    nn_tracing = nn_profiling = false;
    return NN_OK;
}

int64_t nn_tracer_count(void) { return T.n; }
const nn_trace_op *nn_tracer_op(int64_t i) { return i >= 0 && i < T.n ? &T.ops[i] : NULL; }

nn_status nn_tracer_run(const nn_kargs *a, nn_kernel k)
{
    if (T.depth) return k(a);
    if (T.n == T.cap) {
        int64_t cap = T.cap ? 2 * T.cap : 256;
        nn_trace_op *ops = realloc(T.ops, cap * sizeof *ops);
        if (!ops) return nn_error(NN_ERR_NOMEM, "tracer: out of memory");
        T.ops = ops, T.cap = cap;
    }
    nn_trace_op *r = &T.ops[T.n++];
    memset(r, 0, sizeof *r);
    r->op = a->op;
    r->nin = a->nin;
    for (int j = 0; j < a->nin && j < 6; j++) r->in[j] = a->in[j] ? nn_retain(a->in[j]) : NULL;
    for (int j = 0; j < 3; j++) r->out[j] = a->out[j] ? nn_retain(a->out[j]) : NULL;
    memcpy(r->f, a->f, sizeof r->f);
    memcpy(r->i, a->i, sizeof r->i);
    r->dims = a->dims;
    T.depth++;
    nn_status st = k(a);
    T.depth--;
    return st;
}
