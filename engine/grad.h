/* Recording helpers the op frontends call to put their op on the autograd graph.
 *
 * A frontend computes its output first, then, only when nn_any_requires_grad() says an
 * input needs a gradient (so nothing is allocated when none does), calls one helper:
 *     if (nn_any_requires_grad(2, ins) && nn_record_binary(op, a, b, out, 1)) { nn_release(out); return NULL; }
 * The helper makes the node (named as PyTorch's grad_fn), saves what its backward needs
 * and makes the node out's grad_fn. Outputs of a dtype that cannot carry a gradient
 * (integers, bool) get no node. Backward formulas are written with engine ops, so they
 * run on any device; they run with grad mode off.
 *
 * In-place ops bracket their kernel with nn_inplace_begin/nn_inplace_end: begin checks
 * the leaf rule and keeps (clones) what the backward needs from the old value; end makes
 * the new node, whose first edge is self's old history, self's grad_fn. */
#ifndef NN_GRAD_H
#define NN_GRAD_H

#include "autograd.h"
#include "complex_ops.h"

/* ---- elementwise (grad_elementwise.c) ---- */
/* unary ops of ops.def: f0, f1, i0 as in ops.def (clamp bounds and flags, pow_scalar exponent) */
nn_status nn_record_unary(nn_op op, nn_tensor *x, nn_tensor *out, double f0, double f1, int64_t i0);
/* binary ops: out = a op b (alpha: add/sub) */
nn_status nn_record_binary(nn_op op, nn_tensor *a, nn_tensor *b, nn_tensor *out, double alpha);
nn_status nn_record_where(nn_tensor *cond, nn_tensor *a, nn_tensor *b, nn_tensor *out);
/* out is a copy of x (clone, contiguous: CloneBackward0; dtype or device change: ToCopyBackward0) */
nn_status nn_record_copy(const char *name, nn_tensor *x, nn_tensor *out);

/* In-place ops: op is a unary or binary op of ops.def, or NN_OP_fill (zero_ when f0 is 0 and
 * i0 is 1), or NN_OP_copy; other is NULL for unary ops and fills. */
typedef struct {
    bool on;            /* recording */
    nn_tensor *old;     /* clone of self before the op, when the backward needs it */
    nn_tensor *other;   /* clone of other when it overlaps self */
} nn_inplace_rec;
nn_status nn_inplace_begin(const char *fn, nn_op op, nn_tensor *self, nn_tensor *other, nn_inplace_rec *r);
/* Records (when st is NN_OK and begin turned recording on) and frees r; returns st or the error. */
nn_status nn_inplace_end(nn_inplace_rec *r, nn_op op, nn_tensor *self, nn_tensor *other, double f0, double f1, int64_t i0,
                         nn_status st);

/* ---- reductions (grad_reduce.c) ---- */
/* sum mean prod amax amin var norm over mask (already full: every reduced dim set); all: no dim
 * was given (SumBackward0 rather than SumBackward1, ...); f0, i0 as in ops.def (var: correction
 * and std flag; norm: p). */
nn_status nn_record_reduce(nn_op op, nn_tensor *x, nn_tensor *out, uint32_t mask, bool keepdim, bool all, double f0, int64_t i0);
/* max()/min() over every element: MaxBackward1/MinBackward1 (op NN_OP_amax or NN_OP_amin) */
nn_status nn_record_max_all(nn_op op, nn_tensor *x, nn_tensor *out);
/* max_dim/min_dim: the gradient goes to the index */
nn_status nn_record_index_reduce(nn_op op, nn_tensor *x, nn_tensor *values, nn_tensor *indices, int dim, bool keepdim);

/* ---- views and joins (grad_shape.c) ---- */
/* out has x's elements in another shape (view, reshape, flatten, squeeze, unsqueeze, _unsafe_view) */
nn_status nn_record_view(const char *name, nn_tensor *x, nn_tensor *out);
nn_status nn_record_transpose(const char *name, nn_tensor *x, nn_tensor *out, int d0, int d1);
nn_status nn_record_permute(nn_tensor *x, nn_tensor *out, const int *dims);
nn_status nn_record_expand(nn_tensor *x, nn_tensor *out);
/* out = x[..., start:start+len*step:step, ...] along dim (narrow, slice, chunk and split pieces) */
nn_status nn_record_slice(const char *name, nn_tensor *x, nn_tensor *out, int dim, int64_t start, int64_t step);
nn_status nn_record_select(nn_tensor *x, nn_tensor *out, int dim, int64_t index);
nn_status nn_record_diagonal(nn_tensor *x, nn_tensor *out, int64_t offset, int dim1, int dim2);
nn_status nn_record_cat(nn_tensor *const *ts, int n, int dim, nn_tensor *out);
nn_status nn_record_stack(nn_tensor *const *ts, int n, int dim, nn_tensor *out);

/* ---- matrix products (grad_linalg.c) ---- */
/* out = a @ b as torch.matmul (1-D, 2-D, batched with broadcasting); name: MmBackward0, BmmBackward0,
 * DotBackward0, MvBackward0, ... as the frontend decides */
nn_status nn_record_matmul(const char *name, nn_tensor *a, nn_tensor *b, nn_tensor *out);
nn_status nn_record_addmm(nn_tensor *bias, nn_tensor *a, nn_tensor *b, nn_tensor *out, double beta, double alpha);
nn_status nn_record_outer(nn_tensor *a, nn_tensor *b, nn_tensor *out);
/* autocast's linear (engine/linalg.c): out = x16 @ w16^T (+ b16), recorded against the float32
 * params w and b (b may be NULL) rather than their casts w16 and b16, as AddmmBackward0 (or
 * MmBackward0 without b) */
nn_status nn_record_linear_widened(nn_tensor *b, nn_tensor *x16, nn_tensor *w, nn_tensor *w16, nn_tensor *out);

#ifdef NN_GRAD_INTERNAL
/* For the grad_*.c files: a scope that owns the temporaries of a backward formula, so
 * formulas read as nested calls. Every helper passes NULL through (a failed step makes
 * the rest NULL; the first error stays set) and the scope releases everything at the end. */
#define GS_MAX 32
typedef struct { nn_tensor *t[GS_MAX]; int n; } gscope;

static inline nn_tensor *gs_keep(gscope *s, nn_tensor *t)
{
    if (!t) return NULL;
    if (s->n == GS_MAX) {
        nn_release(t);
        nn_error(NN_ERR_RUNTIME, "backward: too many temporaries");
        return NULL;
    }
    return s->t[s->n++] = t;
}
static inline void gs_free(gscope *s)
{
    for (int i = 0; i < s->n; i++) nn_release(s->t[i]);
    s->n = 0;
}
/* a new reference to t (for grad_in), or NULL */
static inline nn_tensor *gs_ret(nn_tensor *t) { return nn_retain(t); }
/* a number as a wrapped 0-dim float64 tensor: it promotes like a Lua number and keeps every
 * bit for float64 gradients */
static inline nn_tensor *gs_num(gscope *s, double v)
{
    nn_tensor *t = nn_empty(0, NULL, NN_F64, NN_DEVICE_CPU);
    if (t) {
        t->wrapped_number = true;
        *(double *)nn_data(t) = v;
    }
    return gs_keep(s, t);
}
static inline nn_tensor *gs_bin(gscope *s, nn_op op, nn_tensor *a, nn_tensor *b)
{
    return a && b ? gs_keep(s, nn_binary(op, a, b)) : NULL;
}
static inline nn_tensor *gs_un(gscope *s, nn_op op, nn_tensor *a) { return a ? gs_keep(s, nn_unary(op, a)) : NULL; }
static inline nn_tensor *gs_muls(gscope *s, nn_tensor *a, double v) { return gs_bin(s, NN_OP_mul, a, gs_num(s, v)); }
static inline nn_tensor *gs_where(gscope *s, nn_tensor *c, nn_tensor *a, nn_tensor *b)
{
    return c && a && b ? gs_keep(s, nn_where(c, a, b)) : NULL;
}
static inline nn_tensor *gs_zeros(gscope *s, int ndim, const int64_t *shape, nn_dtype dt, nn_device dev)
{
    return gs_keep(s, nn_zeros(ndim, shape, dt, dev));
}
/* (x - mean) / sqrt(var + eps) with the biased variance, both over the dims in mask (kept):
 * batch and layer norm recomputed of differentiable ops for a double backward */
static inline nn_tensor *gs_normalized(gscope *s, nn_tensor *x, uint32_t mask, double eps)
{
    nn_tensor *mean = x ? gs_keep(s, nn_reduce(NN_OP_mean, x, mask, true)) : NULL, *d = gs_bin(s, NN_OP_sub, x, mean);
    nn_tensor *var = d ? gs_keep(s, nn_reduce(NN_OP_mean, gs_bin(s, NN_OP_mul, d, d), mask, true)) : NULL;
    return gs_bin(s, NN_OP_mul, d, gs_un(s, NN_OP_rsqrt, gs_bin(s, NN_OP_add, var, gs_num(s, eps))));
}
/* t's conjugate (t itself when real). A complex gradient is g * conj(df/dz) (conjugate Wirtinger),
 * and conj(f'(z)) = f'(conj z) for the ops here, so a formula written for reals reads the
 * conjugates of its saved values. */
static inline nn_tensor *gs_conj(gscope *s, nn_tensor *t)
{
    return t && nn_dtype_is_complex(t->dtype) ? gs_keep(s, nn_conj(t)) : t;
}
/* the status of a formula whose result is r */
static inline nn_status gs_status(const nn_tensor *r) { return r ? NN_OK : nn_last_status(); }
#endif

#endif
