/* The engine's public op API (frontends in the engine/ .c files) and the op enum from ops.def.
 * Frontends check arguments, broadcast, promote dtypes, allocate outputs and
 * dispatch to the backend of the inputs' device. Every function returning
 * nn_tensor* returns a new reference or NULL with the error set (error.h);
 * functions returning nn_status return NN_OK or an error. Dims are 0-based and
 * may be negative (counted from the end). */
#ifndef NN_OPS_H
#define NN_OPS_H

#include "tensor.h"

typedef enum {
#define X(name, kind, autocast, backward) NN_OP_##name,
#include "ops.def"
#undef X
    NN_OP_COUNT
} nn_op;

typedef enum { NN_KIND_UNARY, NN_KIND_BINARY, NN_KIND_TERNARY, NN_KIND_REDUCE, NN_KIND_BLAS, NN_KIND_FILL, NN_KIND_COPY, NN_KIND_NN } nn_op_kind;
typedef enum { NN_AUTOCAST_NONE, NN_AUTOCAST_LOWER, NN_AUTOCAST_FP32, NN_AUTOCAST_PROMOTE } nn_autocast_kind;

const char *nn_op_name(nn_op op);
nn_op_kind nn_op_kind_of(nn_op op);
nn_autocast_kind nn_op_autocast(nn_op op);
const char *nn_op_backward_name(nn_op op);

/* ---- shapes (engine/shape.c) ---- */
/* Broadcast two shapes; NN_ERR_SHAPE naming fn on mismatch. */
nn_status nn_broadcast_shapes(const char *fn, int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out);

/* ---- views (engine/view.c): share storage, no copy ---- */
nn_tensor *nn_view(nn_tensor *t, int ndim, const int64_t *shape);    /* one -1 allowed; error if strides do not allow it */
nn_tensor *nn_reshape(nn_tensor *t, int ndim, const int64_t *shape); /* view when possible, else a contiguous copy */
nn_tensor *nn_flatten(nn_tensor *t, int start_dim, int end_dim);
nn_tensor *nn_transpose(nn_tensor *t, int d0, int d1);
nn_tensor *nn_t(nn_tensor *t);                                       /* 2-D transpose; 0-D and 1-D returned as is */
nn_tensor *nn_permute(nn_tensor *t, const int *dims);                 /* dims has t->ndim entries */
nn_tensor *nn_narrow(nn_tensor *t, int dim, int64_t start, int64_t length);
nn_tensor *nn_slice(nn_tensor *t, int dim, int64_t start, int64_t end, int64_t step); /* Python slice semantics, clamped */
nn_tensor *nn_select(nn_tensor *t, int dim, int64_t index);           /* negative index from the end */
nn_tensor *nn_diagonal(nn_tensor *t, int64_t offset, int dim1, int dim2); /* a view; the diagonal's dim last */
#define NN_ALL_DIMS (-1000)
nn_tensor *nn_squeeze(nn_tensor *t, int dim);                        /* dim NN_ALL_DIMS: every size-1 dim */
nn_tensor *nn_unsqueeze(nn_tensor *t, int dim);                      /* dim in [-ndim-1, ndim] */
nn_tensor *nn_expand(nn_tensor *t, int ndim, const int64_t *shape);  /* -1 keeps a size */
nn_tensor *nn_contiguous(nn_tensor *t);                              /* t itself (retained) if already contiguous */
/* Split into pieces along dim, PyTorch's sizes; writes up to max views into out, returns the count or -1. */
int nn_chunk(nn_tensor *t, int chunks, int dim, nn_tensor **out, int max);
int nn_split(nn_tensor *t, int64_t split_size, int dim, nn_tensor **out, int max);
int nn_split_sizes(nn_tensor *t, int n, const int64_t *sizes, int dim, nn_tensor **out, int max);

/* ---- creation (engine/create.c) ---- dt NN_DTYPE_NONE = default float dtype */
nn_tensor *nn_zeros(int ndim, const int64_t *shape, nn_dtype dt, nn_device dev);
nn_tensor *nn_ones(int ndim, const int64_t *shape, nn_dtype dt, nn_device dev);
nn_tensor *nn_full(int ndim, const int64_t *shape, double value, nn_dtype dt, nn_device dev);
/* dt NN_DTYPE_NONE: int64 if start, end and step are all integers (is_int), else default float */
nn_tensor *nn_arange(double start, double end, double step, bool is_int, nn_dtype dt, nn_device dev);
nn_tensor *nn_linspace(double start, double end, int64_t steps, nn_dtype dt, nn_device dev);
nn_tensor *nn_eye(int64_t n, int64_t m, nn_dtype dt, nn_device dev);  /* m < 0: m = n */

/* ---- random (engine/random.c): Philox4x32-10, counter based, same seed -> same numbers ---- */
void nn_manual_seed(uint64_t seed);
uint64_t nn_initial_seed(void);
/* The default generator's whole state, (seed, offset): torch.get_rng_state / set_rng_state. */
void nn_rng_state(uint64_t *seed, uint64_t *offset);
void nn_set_rng_state(uint64_t seed, uint64_t offset);
/* A generator's state (torch.Generator). While one is in use on a thread (nn_use_generator, which
 * returns the one it replaces; NULL: the default), that thread's random ops draw from it. */
typedef struct nn_generator {
    uint64_t seed, offset;
} nn_generator;
nn_generator *nn_use_generator(nn_generator *g);
/* Reserve n counters from the generator in use: returns the seed, sets *offset. */
uint64_t nn_philox_reserve(uint64_t n, uint64_t *offset);
/* The counters dropout's n draws of dtype dt take: four uniforms from a block (two for float64) */
uint64_t nn_dropout_blocks(int64_t n, nn_dtype dt);
/* One Philox4x32-10 block (engine/cpu/random.c). Element j (row-major logical order) of a random
 * fill uses counter {lo32(offset+j), hi32(offset+j), 0, 0} and key {lo32(seed), hi32(seed)}. */
void nn_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
nn_tensor *nn_rand(int ndim, const int64_t *shape, nn_dtype dt, nn_device dev);   /* U[0,1) */
nn_tensor *nn_randn(int ndim, const int64_t *shape, nn_dtype dt, nn_device dev);  /* N(0,1) */
nn_tensor *nn_randint(int64_t low, int64_t high, int ndim, const int64_t *shape, nn_dtype dt /* NONE: int64 */, nn_device dev);
nn_tensor *nn_normal(double mean, double std, int ndim, const int64_t *shape, nn_dtype dt, nn_device dev);
nn_status nn_uniform_(nn_tensor *t, double lo, double hi);
nn_status nn_normal_(nn_tensor *t, double mean, double std);
/* dropout's noise: each element 1 / keep with probability keep (0 < keep <= 1), else 0 */
nn_status nn_dropout_noise_(nn_tensor *t, double keep);

/* ---- elementwise (engine/elementwise.c) ---- */
nn_dtype nn_result_type(const nn_tensor *a, const nn_tensor *b); /* PyTorch's result_type (0-dim and wrapped numbers rank lower) */
nn_tensor *nn_unary(nn_op op, nn_tensor *x);                       /* neg exp log sqrt rsqrt abs sign sigmoid tanh relu logical_not */
nn_tensor *nn_binary(nn_op op, nn_tensor *a, nn_tensor *b);        /* add sub mul div pow remainder maximum minimum eq..ge logical_and/or */
nn_tensor *nn_add_alpha(nn_tensor *a, nn_tensor *b, double alpha);  /* a + alpha*b */
nn_tensor *nn_pow_scalar(nn_tensor *x, double exponent);
nn_tensor *nn_clamp(nn_tensor *x, bool has_min, double min, bool has_max, double max);
nn_tensor *nn_where(nn_tensor *cond, nn_tensor *a, nn_tensor *b);
/* In place: self = self op other; the result must be castable to self's dtype (PyTorch's rule:
 * no float result into an integer tensor); other broadcasts to self's shape. */
nn_status nn_binary_(nn_op op, nn_tensor *self, nn_tensor *other);
nn_status nn_add_alpha_(nn_tensor *self, nn_tensor *other, double alpha);
nn_status nn_unary_(nn_op op, nn_tensor *self);
nn_status nn_clamp_(nn_tensor *self, bool has_min, double min, bool has_max, double max);
nn_status nn_fill_(nn_tensor *self, double value);
nn_status nn_zero_(nn_tensor *self);
/* dst = src: src broadcasts to dst's shape, dtypes cast, devices may differ. */
nn_status nn_copy_(nn_tensor *dst, nn_tensor *src);
nn_tensor *nn_to_dtype(nn_tensor *t, nn_dtype dt);   /* t itself (retained) if already dt */
nn_tensor *nn_to_device(nn_tensor *t, nn_device dev); /* t itself (retained) if already there */
nn_tensor *nn_clone(nn_tensor *t);                    /* contiguous copy */

/* ---- reductions (engine/reduce.c) ---- dims: bitmask of dims; 0 = all dims */
nn_tensor *nn_reduce(nn_op op, nn_tensor *x, uint32_t dims, bool keepdim);  /* sum mean prod amax amin all any */
nn_tensor *nn_sum_dtype(nn_tensor *x, uint32_t dims, bool keepdim, nn_dtype dt); /* sum with an output dtype */
nn_tensor *nn_max(nn_tensor *x); /* torch.max(x): amax over every element, grad_fn MaxBackward1 */
nn_tensor *nn_min(nn_tensor *x);
nn_status nn_max_dim(nn_tensor *x, int dim, bool keepdim, nn_tensor **values, nn_tensor **indices);
nn_status nn_min_dim(nn_tensor *x, int dim, bool keepdim, nn_tensor **values, nn_tensor **indices);
#define NN_NO_DIM (-1000)
nn_tensor *nn_argmax(nn_tensor *x, int dim /* NN_NO_DIM: flat */, bool keepdim);
nn_tensor *nn_argmin(nn_tensor *x, int dim, bool keepdim);
nn_tensor *nn_var(nn_tensor *x, uint32_t dims, double correction, bool keepdim);
nn_tensor *nn_std(nn_tensor *x, uint32_t dims, double correction, bool keepdim);
nn_tensor *nn_norm(nn_tensor *x, double p, uint32_t dims, bool keepdim);
nn_tensor *nn_cat(nn_tensor *const *ts, int n, int dim);
nn_tensor *nn_stack(nn_tensor *const *ts, int n, int dim);

/* ---- matrix products (engine/linalg.c), OpenBLAS on CPU ---- */
nn_tensor *nn_mm(nn_tensor *a, nn_tensor *b);
nn_tensor *nn_bmm(nn_tensor *a, nn_tensor *b);
nn_tensor *nn_matmul(nn_tensor *a, nn_tensor *b);  /* torch.matmul: 1-D, 2-D, batched with broadcasting */
nn_tensor *nn_addmm(nn_tensor *bias, nn_tensor *a, nn_tensor *b, double beta, double alpha);
nn_tensor *nn_linear(nn_tensor *x, nn_tensor *w, nn_tensor *b); /* F.linear: x @ w^T (+ b); b may be NULL */
/* 2-D float16/bfloat16 CUDA operands' product in float32, rounded once from the float accumulation */
nn_tensor *nn_mm_widened(nn_tensor *a, nn_tensor *b);
nn_tensor *nn_dot(nn_tensor *a, nn_tensor *b);
nn_tensor *nn_outer(nn_tensor *a, nn_tensor *b);
/* The threads of the CPU backend (torch.set_num_threads / get_num_threads, n >= 1): the pool that
 * large elementwise ops, copies, fills and pointwise losses split over (engine/cpu/parallel.h), and
 * OpenBLAS's matrix products (engine/cpu/blas.c). */
int nn_cpu_num_threads(void);
void nn_cpu_set_num_threads(int n);

/* ---- printing (engine/format.c) ---- */
typedef struct {
    int precision;     /* 4 */
    int64_t threshold; /* 1000 */
    int edgeitems;     /* 3 */
    int linewidth;     /* 80 */
    int sci_mode;      /* -1 auto, 0 off, 1 on */
} nn_print_options;
nn_print_options *nn_print_opts(void); /* the process-wide options (torch.set_printoptions) */
/* PyTorch's repr: "tensor([...], dtype=..., device=..., grad_fn=<...>)". Returns malloc'd text. */
char *nn_tensor_repr(const nn_tensor *t);
/* Name of t's grad_fn for printing, or NULL (autograd fills it in). */
extern const char *(*nn_grad_fn_name_hook)(const nn_tensor *t);

#endif
