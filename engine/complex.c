/* Complex frontends (see complex_ops.h). A complex element is (re, im) of its real dtype, so
 * view_as_real is a view with every stride doubled and a last dim of 2; real and imag select
 * from it, and torch.complex writes into it. */
#include <math.h>
#include <string.h>

#include "autograd.h"
#include "complex_ops.h"
#include "ops.h"

static nn_status not_for(const char *fn, const char *what, nn_dtype dt)
{
    return nn_error(NN_ERR_DTYPE, "%s: \"%s\" not implemented for '%s'", fn, what, nn_dtype_scalar_name(dt));
}

/* ---- which kernels take complex operands ---- */

/* The same ops on the CPU (cpu/complex.c, cpu/fft.c) and on CUDA (cuda/complex.cu, cuda/fft.cu,
 * the complex products of cuda/blas.cu) */
static bool takes_complex(nn_op op)
{
    switch (nn_op_kind_of(op)) {
    case NN_KIND_UNARY: case NN_KIND_BINARY: case NN_KIND_TERNARY: case NN_KIND_BLAS: case NN_KIND_COPY:
        return true; /* the frontends refuse the elementwise ops that have no complex form */
    default: break;
    }
    switch (op) {
    case NN_OP_sum: case NN_OP_mean: case NN_OP_prod: case NN_OP_all: case NN_OP_any:
    case NN_OP_fill: case NN_OP_index_select: case NN_OP_fft_c2c:
        return true;
    default:
        return false;
    }
}

nn_status nn_complex_guard(const nn_kargs *a)
{
    nn_dtype dt = NN_DTYPE_NONE;
    for (int k = 0; k < 3 && dt == NN_DTYPE_NONE; k++)
        if (a->out[k] && nn_dtype_is_complex(a->out[k]->dtype)) dt = a->out[k]->dtype;
    for (int k = 0; k < a->nin && dt == NN_DTYPE_NONE; k++)
        if (a->in[k] && nn_dtype_is_complex(a->in[k]->dtype)) dt = a->in[k]->dtype;
    if (dt == NN_DTYPE_NONE) return NN_OK;
    if (takes_complex(a->op)) return NN_OK; /* on either device */
    return not_for(nn_op_name(a->op), nn_op_name(a->op), dt);
}

/* ---- dtype rules of the shared elementwise frontends ---- */

nn_status nn_complex_unary_dtype(const char *fn, nn_op op, nn_dtype in, nn_dtype *out)
{
    *out = in;
    switch (op) {
    case NN_OP_abs: case NN_OP_angle:
        *out = nn_dtype_to_real(in);
        return NN_OK;
    case NN_OP_logical_not:
        *out = NN_BOOL;
        return NN_OK;
    case NN_OP_neg: case NN_OP_exp: case NN_OP_log: case NN_OP_sqrt: case NN_OP_rsqrt: case NN_OP_sigmoid:
    case NN_OP_tanh: case NN_OP_log1p: case NN_OP_sin: case NN_OP_cos: case NN_OP_tan: case NN_OP_asin: case NN_OP_acos:
    case NN_OP_atan: case NN_OP_sinh: case NN_OP_cosh: case NN_OP_expm1: case NN_OP_exp2: case NN_OP_log2: case NN_OP_log10:
    case NN_OP_reciprocal: case NN_OP_asinh: case NN_OP_acosh: case NN_OP_atanh: case NN_OP_pow_scalar:
    case NN_OP_conj_physical: case NN_OP_sgn:
        return NN_OK;
    case NN_OP_sign:
        return nn_error(NN_ERR_DTYPE, "%s: Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                        "torch.sgn instead.", fn);
    case NN_OP_relu: case NN_OP_clamp:
        return nn_error(NN_ERR_DTYPE, "%s: %s is not supported for complex types", fn, nn_op_name(op));
    default:
        return not_for(fn, nn_op_name(op), in);
    }
}

bool nn_complex_unary_op(nn_op op)
{
    switch (op) {
    case NN_OP_neg: case NN_OP_exp: case NN_OP_log: case NN_OP_sqrt: case NN_OP_rsqrt: case NN_OP_abs: case NN_OP_angle:
    case NN_OP_sigmoid: case NN_OP_tanh: case NN_OP_log1p: case NN_OP_sin: case NN_OP_cos: case NN_OP_tan: case NN_OP_asin:
    case NN_OP_acos: case NN_OP_atan: case NN_OP_sinh: case NN_OP_cosh: case NN_OP_asinh: case NN_OP_acosh: case NN_OP_atanh:
    case NN_OP_expm1: case NN_OP_exp2: case NN_OP_log2: case NN_OP_log10: case NN_OP_reciprocal: case NN_OP_conj_physical:
    case NN_OP_sgn: case NN_OP_logical_not: case NN_OP_pow_scalar:
        return true;
    default:
        return false;
    }
}

bool nn_complex_binary_op(nn_op op)
{
    switch (op) {
    case NN_OP_add: case NN_OP_sub: case NN_OP_mul: case NN_OP_div: case NN_OP_pow: case NN_OP_eq: case NN_OP_ne:
    case NN_OP_logical_and: case NN_OP_logical_or:
        return true;
    default:
        return false;
    }
}

nn_status nn_complex_binary_dtype(const char *fn, nn_op op, nn_dtype c)
{
    if (nn_complex_binary_op(op)) return NN_OK;
    switch (op) {
    case NN_OP_maximum: case NN_OP_minimum: case NN_OP_fmax: case NN_OP_fmin:
        return nn_error(NN_ERR_DTYPE, "%s: %s not implemented for complex tensors.", fn, nn_op_name(op));
    default:
        return not_for(fn, nn_op_name(op), c);
    }
}

/* ---- views ---- */

nn_tensor *nn_view_as_real(nn_tensor *t)
{
    if (!nn_dtype_is_complex(t->dtype)) {
        nn_error(NN_ERR_DTYPE, "view_as_real: view_as_real is only supported for complex tensors");
        return NULL;
    }
    if (t->ndim == NN_MAX_DIMS) {
        nn_error(NN_ERR_SHAPE, "view_as_real: a tensor of %d dims has no room for the last dim of 2", t->ndim);
        return NULL;
    }
    int64_t shape[NN_MAX_DIMS], strides[NN_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d], strides[d] = 2 * t->strides[d];
    shape[t->ndim] = 2, strides[t->ndim] = 1;
    nn_tensor *v = nn_make_view(t, t->ndim + 1, shape, strides, 2 * t->offset);
    if (!v) return NULL;
    v->dtype = nn_dtype_to_real(t->dtype);
    if (nn_any_requires_grad(1, &t) && nn_record_view_as_real(t, v)) {
        nn_release(v);
        return NULL;
    }
    return v;
}

nn_tensor *nn_view_as_complex(nn_tensor *t)
{
    int n = t->ndim;
    if (t->dtype != NN_F32 && t->dtype != NN_F64) {
        nn_error(NN_ERR_DTYPE, "view_as_complex: view_as_complex is only supported for float and double tensors, but got a "
                 "tensor of scalar type: %s", nn_dtype_scalar_name(t->dtype));
        return NULL;
    }
    if (n == 0 || t->shape[n - 1] != 2) {
        nn_error(NN_ERR_SHAPE, "view_as_complex: Tensor must have a last dimension of size 2");
        return NULL;
    }
    if (t->strides[n - 1] != 1) {
        nn_error(NN_ERR_ARG, "view_as_complex: Tensor must have a last dimension with stride 1");
        return NULL;
    }
    for (int d = 0; d < n - 1; d++)
        if (t->strides[d] % 2) {
            nn_error(NN_ERR_ARG, "view_as_complex: Tensor must have a stride divisible by 2 for all but last dimension");
            return NULL;
        }
    if (t->offset % 2) {
        nn_error(NN_ERR_ARG, "view_as_complex: Tensor must have a storage_offset divisible by 2");
        return NULL;
    }
    int64_t strides[NN_MAX_DIMS];
    for (int d = 0; d < n - 1; d++) strides[d] = t->strides[d] / 2;
    nn_tensor *v = nn_make_view(t, n - 1, t->shape, strides, t->offset / 2);
    if (!v) return NULL;
    v->dtype = nn_dtype_to_complex(t->dtype);
    if (nn_any_requires_grad(1, &t) && nn_record_view_as_complex(t, v)) {
        nn_release(v);
        return NULL;
    }
    return v;
}

static nn_tensor *part(nn_tensor *t, int k)
{
    nn_tensor *r = nn_view_as_real(t);
    nn_tensor *v = r ? nn_select(r, -1, k) : NULL;
    nn_release(r);
    return v;
}

nn_tensor *nn_real(nn_tensor *t) { return nn_dtype_is_complex(t->dtype) ? part(t, 0) : nn_retain(t); }

nn_tensor *nn_imag(nn_tensor *t)
{
    if (nn_dtype_is_complex(t->dtype)) return part(t, 1);
    nn_error(NN_ERR_DTYPE, "imag: imag is not implemented for tensors with non-complex dtypes.");
    return NULL;
}

/* ---- torch.complex, polar ---- */

nn_tensor *nn_complex(nn_tensor *re, nn_tensor *im)
{
    if (re->dtype != im->dtype) {
        nn_error(NN_ERR_DTYPE, "complex: Expected object of scalar type %s but got scalar type %s for second argument",
                 nn_dtype_scalar_name(re->dtype), nn_dtype_scalar_name(im->dtype));
        return NULL;
    }
    if (re->dtype != NN_F32 && re->dtype != NN_F64 && re->dtype != NN_F16) {
        nn_error(NN_ERR_DTYPE, "complex: Expected both inputs to be Half, Float or Double tensors but got %s and %s",
                 nn_dtype_scalar_name(re->dtype), nn_dtype_scalar_name(im->dtype));
        return NULL;
    }
    int nd;
    int64_t shape[NN_MAX_DIMS];
    if (nn_broadcast_shapes("complex", re->ndim, re->shape, im->ndim, im->shape, &nd, shape)) return NULL;
    nn_tensor *out = nn_empty(nd, shape, nn_dtype_to_complex(re->dtype), re->storage->device);
    if (!out) return NULL;
    bool grad = nn_grad_enabled();
    nn_set_grad_enabled(false); /* the parts are written as plain copies; the node below is the history */
    nn_tensor *r = part(out, 0), *i = r ? part(out, 1) : NULL;
    nn_status st = i ? nn_copy_(r, re) : nn_last_status();
    if (!st) st = nn_copy_(i, im);
    nn_set_grad_enabled(grad);
    nn_release(r);
    nn_release(i);
    nn_tensor *ins[2] = {re, im};
    if (st || (nn_any_requires_grad(2, ins) && nn_record_complex(re, im, out))) {
        nn_release(out);
        return NULL;
    }
    return out;
}

nn_tensor *nn_polar(nn_tensor *abs, nn_tensor *angle)
{
    nn_tensor *c = nn_unary(NN_OP_cos, angle), *s = c ? nn_unary(NN_OP_sin, angle) : NULL;
    nn_tensor *re = s ? nn_binary(NN_OP_mul, abs, c) : NULL, *im = re ? nn_binary(NN_OP_mul, abs, s) : NULL;
    nn_tensor *out = im ? nn_complex(re, im) : NULL;
    nn_release(c), nn_release(s), nn_release(re), nn_release(im);
    return out;
}

/* ---- conj, angle, sgn ---- */

nn_tensor *nn_conj(nn_tensor *t) { return nn_dtype_is_complex(t->dtype) ? nn_unary(NN_OP_conj_physical, t) : nn_retain(t); }

nn_tensor *nn_angle(nn_tensor *t)
{
    if (nn_dtype_is_complex(t->dtype)) return nn_unary(NN_OP_angle, t);
    if (t->dtype == NN_BOOL || nn_dtype_is_integral(t->dtype)) { /* integers: in the default float dtype */
        nn_tensor *f = nn_to_dtype(t, nn_default_dtype()), *r = f ? nn_angle(f) : NULL;
        nn_release(f);
        return r;
    }
    /* real: pi below zero, else 0; NaN stays */
    nn_tensor *zero = nn_scalar_f64(0), *pi = nn_scalar_f64(M_PI);
    nn_tensor *neg = nn_binary(NN_OP_lt, t, zero), *nan = neg ? nn_binary(NN_OP_ne, t, t) : NULL;
    nn_tensor *w = nan ? nn_where(neg, pi, zero) : NULL, *wt = w ? nn_to_dtype(w, t->dtype) : NULL;
    nn_tensor *r = wt ? nn_where(nan, t, wt) : NULL;
    nn_release(zero), nn_release(pi), nn_release(neg), nn_release(nan), nn_release(w), nn_release(wt);
    return r;
}

nn_tensor *nn_sgn(nn_tensor *t) { return nn_unary(nn_dtype_is_complex(t->dtype) ? NN_OP_sgn : NN_OP_sign, t); }

/* ---- fills ---- */

nn_tensor *nn_complex_random(bool normal, int ndim, const int64_t *shape, nn_dtype dt, nn_device dev)
{
    if (ndim == NN_MAX_DIMS) {
        nn_error(NN_ERR_SHAPE, "%s: too many dims", normal ? "randn" : "rand");
        return NULL;
    }
    int64_t s[NN_MAX_DIMS];
    memcpy(s, shape, sizeof(int64_t) * ndim);
    s[ndim] = 2;
    nn_dtype rdt = nn_dtype_to_real(dt);
    nn_tensor *r = normal ? nn_normal(0, sqrt(0.5), ndim + 1, s, rdt, dev) : nn_rand(ndim + 1, s, rdt, dev);
    nn_tensor *c = r ? nn_view_as_complex(r) : NULL;
    nn_release(r);
    return c;
}

nn_status nn_fill_complex_(nn_tensor *self, double re, double im)
{
    if (!nn_dtype_is_complex(self->dtype)) {
        if (im != 0)
            return nn_error(NN_ERR_DTYPE, "fill_: value cannot be converted to type %s without overflow",
                            nn_dtype_name(self->dtype));
        return nn_fill_(self, re);
    }
    if (nn_check_inplace("fill_", self)) return nn_last_status();
    nn_kargs k = {.op = NN_OP_fill, .out = {self}, .f = {re, im}};
    nn_status st = nn_dispatch(&k);
    if (!st) nn_bump_version(self);
    return st;
}
