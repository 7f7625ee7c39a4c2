/* Strided N-d iteration for CPU kernels. Operands share one shape (inputs are
 * broadcast views of it); each has its own byte strides. Dims are coalesced
 * where the memory allows, then `row` runs once per innermost row. */
#ifndef NN_CPU_ITER_H
#define NN_CPU_ITER_H

#include "../tensor.h"

#define NN_ITER_MAX_OPS 4

typedef struct {
    int nops, ndim;
    int64_t shape[NN_MAX_DIMS];
    int64_t strides[NN_ITER_MAX_OPS][NN_MAX_DIMS]; /* bytes */
    char *data[NN_ITER_MAX_OPS];
    nn_dtype dtype[NN_ITER_MAX_OPS];
} nn_iter;

/* ops[0] is usually the output; every op must have the same shape as ops[0]
 * or a shape that broadcasts to it (it is expanded with stride 0). The dims are
 * visited in ops[0]'s memory order (outermost stride first), so a channels-last
 * output and inputs coalesce like contiguous ones; for elementwise work, where
 * the order of the positions does not matter. */
void nn_iter_init(nn_iter *it, int nops, nn_tensor *const *ops);
/* The same in the dims' logical order (a fill whose values depend on the order, as the RNG's). */
void nn_iter_init_logical(nn_iter *it, int nops, nn_tensor *const *ops);

/* One innermost row: n elements; ptr[k] advances by stride[k] bytes per element. */
typedef void (*nn_iter_row)(char **ptr, const int64_t *stride, int64_t n, void *ctx);
void nn_iter_run(const nn_iter *it, nn_iter_row row, void *ctx);

/* As nn_iter_run, split over the CPU's threads (engine/cpu/parallel.h) from NN_PARALLEL_MIN
 * elements on: each thread runs `row` on its own part of the rows with its own pointers, so `row`
 * must be a pure function of its pointers that only reads ctx. Rows are cut only at multiples of
 * NN_ITER_BLOCK elements from their start, so a row that works in chunks dividing it (and
 * vectorized loops) sees the chunks of the serial run: results are bitwise the same. */
#define NN_ITER_BLOCK 1024
void nn_iter_run_parallel(const nn_iter *it, nn_iter_row row, const void *ctx);
/* The same for rows that may fail: each thread works on its own copy of ctx (ctx_size bytes, at
 * most 256), whose first member is an nn_status that the rows set (with nn_error) and then stop
 * on. Returns the status of the failing part that comes first, its message set, as the serial
 * run would have; NN_OK when none failed. */
nn_status nn_iter_run_parallel_status(const nn_iter *it, nn_iter_row row, void *ctx, size_t ctx_size);
/* An iteration of one row of n elements (contiguous operands: strides[k] bytes each, 0 for a
 * broadcast single element), for callers that skip nn_iter_init. */
void nn_iter_init_row(nn_iter *it, int nops, char *const *data, const int64_t *strides, int64_t n);

#endif
