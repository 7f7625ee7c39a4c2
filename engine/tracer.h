/* The op tracer behind torch.onnx.export: while on, every op this thread dispatches (outside
 * another op's kernel) runs as usual and is recorded with its operands (held until the next
 * start or nn_tracer_clear) and its i[], f[] and dims arguments. It rides on the profiler's
 * switch (nn_profiling is set while tracing), so off it costs nothing more. */
#ifndef NN_TRACER_H
#define NN_TRACER_H

#include "backend.h"

typedef struct {
    nn_op op;
    int nin;
    nn_tensor *in[6], *out[3]; /* held; NULL where absent */
    double f[8];
    int64_t i[8];
    uint32_t dims;
} nn_trace_op;

extern _Thread_local bool nn_tracing;

/* Error if the profiler or a trace is already running on this thread. */
nn_status nn_tracer_start(void);
nn_status nn_tracer_stop(void);
void nn_tracer_clear(void); /* drops the recorded ops and their tensors */
int64_t nn_tracer_count(void);
const nn_trace_op *nn_tracer_op(int64_t i);
/* nn_profiler_run's path while tracing: k(a), recorded */
nn_status nn_tracer_run(const nn_kargs *a, nn_kernel k);

#endif
