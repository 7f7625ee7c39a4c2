/* Reduction frontends: check dims and dtypes (PyTorch's rules), allocate the
 * keepdim-shaped output, dispatch, then drop the reduced dims with a view
 * when !keepdim. */
#include <math.h>

#include "autocast.h"
#include "backend.h"
#include "grad.h"

/* Check the mask against x and turn 0 into "every dim". */
static nn_status full_mask(const char *fn, const nn_tensor *x, uint32_t *mask)
{
    int nd = x->ndim, n = nd ? nd : 1;
    uint32_t full = (1u << n) - 1;
    if (*mask & ~full) {
        int bad = 31;
        while (!(*mask >> bad & 1)) bad--;
        return nn_error(NN_ERR_INDEX, "%s: dimension out of range (expected to be in range of [%d, %d], but got %d)", fn, -n,
                        n - 1, bad);
    }
    if (*mask == 0 || nd == 0) *mask = nd ? full : 0;
    return NN_OK;
}

/* The keepdim result viewed without its reduced dims (consumes out). */
static nn_tensor *drop_dims(nn_tensor *out, uint32_t mask, bool keepdim)
{
    if (keepdim || !out || out->ndim == 0) return out;
    int64_t shape[NN_MAX_DIMS], strides[NN_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < out->ndim; d++)
        if (!(mask >> d & 1)) shape[n] = out->shape[d], strides[n++] = out->strides[d];
    nn_tensor *v = nn_make_view(out, n, shape, strides, out->offset);
    nn_release(out);
    return v;
}

static nn_tensor *keepdim_empty(const nn_tensor *x, uint32_t mask, nn_dtype dt)
{
    int64_t shape[NN_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) shape[d] = mask >> d & 1 ? 1 : x->shape[d];
    return nn_empty(x->ndim, shape, dt, x->storage->device);
}

/* mask already full; i0/f0 are the kernel parameters; all: no dim was given (for the grad_fn name) */
static nn_tensor *run(nn_op op, nn_tensor *x, uint32_t mask, bool keepdim, bool all, nn_dtype odt, double f0, int64_t i0)
{
    nn_tensor *out = keepdim_empty(x, mask, odt);
    if (!out) return NULL;
    nn_kargs a = {.op = op, .out = {out}, .in = {x}, .nin = 1, .dims = mask, .f = {f0}, .i = {i0}};
    if (nn_dispatch(&a)) {
        nn_release(out);
        return NULL;
    }
    out = drop_dims(out, mask, keepdim);
    if (out && nn_any_requires_grad(1, &x) && nn_record_reduce(op, x, out, mask, keepdim, all, f0, i0)) {
        nn_release(out);
        return NULL;
    }
    return out;
}

/* The first reduced dim of size 0, or -1. */
static int empty_reduced_dim(const nn_tensor *x, uint32_t mask)
{
    for (int d = 0; d < x->ndim; d++)
        if ((mask >> d & 1) && x->shape[d] == 0) return d;
    return -1;
}

nn_tensor *nn_reduce(nn_op op, nn_tensor *x, uint32_t dims, bool keepdim)
{
    if (nn_autocast_on()) { /* autocast: run again on the cast input */
        nn_tensor *xc;
        if (nn_autocast_inputs(op, 1, &x, &xc)) return NULL;
        if (xc) {
            nn_tensor *r = nn_reduce(op, xc, dims, keepdim);
            nn_release(xc);
            return r;
        }
    }
    const char *fn = nn_op_name(op);
    uint32_t mask = dims;
    nn_dtype odt = x->dtype;
    if (full_mask(fn, x, &mask)) return NULL;
    switch (op) {
    case NN_OP_sum:
    case NN_OP_prod:
        if (nn_dtype_is_integral(x->dtype)) odt = NN_I64;
        break;
    case NN_OP_mean:
        if (!nn_dtype_is_differentiable(x->dtype)) {
            nn_error(NN_ERR_DTYPE,
                     "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: %s",
                     nn_dtype_scalar_name(x->dtype));
            return NULL;
        }
        break;
    case NN_OP_amax:
    case NN_OP_amin: {
        int d = empty_reduced_dim(x, mask);
        if (d >= 0) {
            if (dims == 0)
                nn_error(NN_ERR_INDEX, "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.", fn);
            else
                nn_error(NN_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", fn, d);
            return NULL;
        }
        break;
    }
    case NN_OP_all:
    case NN_OP_any:
        odt = x->dtype == NN_U8 ? NN_U8 : NN_BOOL; /* PyTorch keeps uint8 for all/any */
        break;
    default:
        nn_error(NN_ERR_ARG, "reduce: %s is not a plain reduction (sum mean prod amax amin all any)", fn);
        return NULL;
    }
    return run(op, x, mask, keepdim, dims == 0, odt, 0, 0);
}

nn_tensor *nn_sum_dtype(nn_tensor *x, uint32_t dims, bool keepdim, nn_dtype dt)
{
    if (dt == NN_DTYPE_NONE) return nn_reduce(NN_OP_sum, x, dims, keepdim);
    uint32_t mask = dims;
    if (full_mask("sum", x, &mask)) return NULL;
    return run(NN_OP_sum, x, mask, keepdim, dims == 0, dt, 0, 0);
}

/* max()/min() over every element (torch.max(x): a grad_fn of its own, MaxBackward1) */
static nn_tensor *extreme_all(nn_op op, const char *fn, nn_tensor *x)
{
    if (nn_numel(x) == 0) {
        nn_error(NN_ERR_INDEX, "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.", fn);
        return NULL;
    }
    uint32_t mask = 0;
    if (full_mask(fn, x, &mask)) return NULL;
    nn_tensor *out = keepdim_empty(x, mask, x->dtype);
    if (!out) return NULL;
    nn_kargs a = {.op = op, .out = {out}, .in = {x}, .nin = 1, .dims = mask};
    if (nn_dispatch(&a)) {
        nn_release(out);
        return NULL;
    }
    out = drop_dims(out, mask, false);
    if (out && nn_any_requires_grad(1, &x) && nn_record_max_all(op, x, out)) {
        nn_release(out);
        return NULL;
    }
    return out;
}

nn_tensor *nn_max(nn_tensor *x) { return extreme_all(NN_OP_amax, "max", x); }
nn_tensor *nn_min(nn_tensor *x) { return extreme_all(NN_OP_amin, "min", x); }

/* max_dim/min_dim (values and indices) and argmax/argmin along one dim. */
static nn_status index_reduce(nn_op op, const char *fn, nn_tensor *x, int dim, bool keepdim, nn_tensor **values, nn_tensor **indices)
{
    if (nn_wrap_dim(fn, &dim, x->ndim)) return nn_last_status();
    if (x->ndim && x->shape[dim] == 0)
        return nn_error(NN_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", fn, dim);
    uint32_t mask = x->ndim ? 1u << dim : 0;
    nn_tensor *v = NULL, *i = keepdim_empty(x, mask, NN_I64);
    if (!i) return nn_last_status();
    if (values && !(v = keepdim_empty(x, mask, x->dtype))) {
        nn_release(i);
        return nn_last_status();
    }
    nn_kargs a = {.op = op, .out = {v ? v : i, v ? i : NULL}, .in = {x}, .nin = 1, .dims = mask};
    nn_status s = nn_dispatch(&a);
    if (s) {
        nn_release(v);
        nn_release(i);
        return s;
    }
    *indices = drop_dims(i, mask, keepdim);
    if (values) *values = drop_dims(v, mask, keepdim);
    if (!*indices || (values && !*values) ||
        (values && nn_any_requires_grad(1, &x) && nn_record_index_reduce(op, x, *values, *indices, dim, keepdim))) {
        nn_release(*indices);
        *indices = NULL;
        if (values) nn_release(*values), *values = NULL;
        return nn_last_status();
    }
    return NN_OK;
}

nn_status nn_max_dim(nn_tensor *x, int dim, bool keepdim, nn_tensor **values, nn_tensor **indices)
{
    return index_reduce(NN_OP_max_dim, "max", x, dim, keepdim, values, indices);
}

nn_status nn_min_dim(nn_tensor *x, int dim, bool keepdim, nn_tensor **values, nn_tensor **indices)
{
    return index_reduce(NN_OP_min_dim, "min", x, dim, keepdim, values, indices);
}

static nn_tensor *arg_reduce(nn_op op, nn_tensor *x, int dim, bool keepdim)
{
    const char *fn = nn_op_name(op);
    nn_tensor *r = NULL;
    if (x->dtype == NN_BOOL) {
        nn_error(NN_ERR_DTYPE, "%s(): not implemented for 'Bool'", fn);
        return NULL;
    }
    if (dim != NN_NO_DIM) return index_reduce(op, fn, x, dim, keepdim, NULL, &r) ? NULL : r;
    int64_t n = nn_numel(x);
    if (n == 0) {
        nn_error(NN_ERR_INDEX, "%s(): Expected reduction dim to be specified for input.numel() == 0.", fn);
        return NULL;
    }
    /* over the flattened tensor: a contiguous copy when needed, seen as 1-D */
    nn_tensor *src = nn_retain(x);
    if (!nn_is_contiguous(x)) {
        nn_release(src);
        if (!(src = nn_empty(x->ndim, x->shape, x->dtype, x->storage->device))) return NULL;
        nn_kargs c = {.op = NN_OP_copy, .out = {src}, .in = {x}, .nin = 1};
        if (nn_dispatch(&c)) {
            nn_release(src);
            return NULL;
        }
    }
    int64_t one = 1;
    nn_tensor *flat = nn_make_view(src, 1, &n, &one, src->offset);
    nn_release(src);
    if (!flat) return NULL;
    nn_status s = index_reduce(op, fn, flat, 0, false, NULL, &r);
    nn_release(flat);
    if (s) return NULL;
    if (!keepdim || x->ndim == 0) return r;
    int64_t shape[NN_MAX_DIMS], strides[NN_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) shape[d] = 1, strides[d] = 1;
    nn_tensor *v = nn_make_view(r, x->ndim, shape, strides, r->offset);
    nn_release(r);
    return v;
}

nn_tensor *nn_argmax(nn_tensor *x, int dim, bool keepdim) { return arg_reduce(NN_OP_argmax, x, dim, keepdim); }
nn_tensor *nn_argmin(nn_tensor *x, int dim, bool keepdim) { return arg_reduce(NN_OP_argmin, x, dim, keepdim); }

static nn_tensor *moment(const char *fn, nn_tensor *x, uint32_t dims, double correction, bool keepdim, bool std)
{
    if (nn_autocast_on()) {
        nn_tensor *xc;
        if (nn_autocast_inputs(NN_OP_var, 1, &x, &xc)) return NULL;
        if (xc) {
            nn_tensor *r = moment(fn, xc, dims, correction, keepdim, std);
            nn_release(xc);
            return r;
        }
    }
    if (nn_dtype_is_complex(x->dtype)) { /* var(re) + var(im), real */
        nn_tensor *re = nn_real(x), *im = re ? nn_imag(x) : NULL;
        nn_tensor *vr = im ? moment(fn, re, dims, correction, keepdim, false) : NULL;
        nn_tensor *vi = vr ? moment(fn, im, dims, correction, keepdim, false) : NULL;
        nn_tensor *v = vi ? nn_binary(NN_OP_add, vr, vi) : NULL, *r = v && std ? nn_unary(NN_OP_sqrt, v) : nn_retain(v);
        nn_release(re), nn_release(im), nn_release(vr), nn_release(vi), nn_release(v);
        return r;
    }
    if (!nn_dtype_is_float(x->dtype)) {
        nn_error(NN_ERR_DTYPE, "%s(): std and var only support floating point and complex dtypes", fn);
        return NULL;
    }
    uint32_t mask = dims;
    if (full_mask(fn, x, &mask)) return NULL;
    return run(NN_OP_var, x, mask, keepdim, dims == 0, x->dtype, correction, std ? 1 : 0);
}

nn_tensor *nn_var(nn_tensor *x, uint32_t dims, double correction, bool keepdim) { return moment("var", x, dims, correction, keepdim, false); }
nn_tensor *nn_std(nn_tensor *x, uint32_t dims, double correction, bool keepdim) { return moment("std", x, dims, correction, keepdim, true); }

nn_tensor *nn_norm(nn_tensor *x, double p, uint32_t dims, bool keepdim)
{
    if (nn_autocast_on()) {
        nn_tensor *xc;
        if (nn_autocast_inputs(NN_OP_norm, 1, &x, &xc)) return NULL;
        if (xc) {
            nn_tensor *r = nn_norm(xc, p, dims, keepdim);
            nn_release(xc);
            return r;
        }
    }
    if (nn_dtype_is_complex(x->dtype)) { /* the norm of |x| */
        nn_tensor *a = nn_unary(NN_OP_abs, x), *r = a ? nn_norm(a, p, dims, keepdim) : NULL;
        nn_release(a);
        return r;
    }
    if (!nn_dtype_is_float(x->dtype)) {
        nn_error(NN_ERR_DTYPE, "norm(): expected a floating point or complex tensor as input. Got %s", nn_dtype_scalar_name(x->dtype));
        return NULL;
    }
    if (isnan(p)) {
        nn_error(NN_ERR_ARG, "norm(): the order p must not be nan");
        return NULL;
    }
    uint32_t mask = dims;
    if (full_mask("norm", x, &mask)) return NULL;
    if ((p < 0 || p == INFINITY) && empty_reduced_dim(x, mask) >= 0) {
        nn_error(NN_ERR_ARG, "norm(): cannot compute the %g norm on an empty tensor because the operation does not have an identity", p);
        return NULL;
    }
    return run(NN_OP_norm, x, mask, keepdim, dims == 0, x->dtype, p, 0);
}
