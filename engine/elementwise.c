/* Elementwise frontends: PyTorch's type promotion (result_type), broadcasting,
 * output allocation and dispatch for unary, binary and ternary ops, their
 * in-place forms, fills, and copies (casts, clones, moves between devices).
 *
 * Binary ops pass the compute dtype in i[0]; the kernel casts every input to
 * it. Unary ops compute in the output's dtype (logical_not: in the input's). */
#include <math.h>
#include <string.h>

#include "autocast.h"
#include "backend.h"
#include "complex_ops.h"
#include "grad.h"
#include "memory_format.h"
#include "ops.h"
#include "profiler.h"

/* ---- type promotion ---- */

static const char *const inplace_names[] = {
#define X(name, kind, autocast, backward) #name "_",
#include "ops.def"
#undef X
};

static nn_dtype promote_skip(nn_dtype a, nn_dtype b)
{
    return a == NN_DTYPE_NONE ? b : b == NN_DTYPE_NONE ? a : nn_promote_types(a, b);
}

/* Operands rank in three classes: tensors with dims, 0-dim tensors, wrapped numbers.
 * A lower class changes the result only when its category (bool < integer < float)
 * is higher, and then only as far as promote_types with the higher class goes. */
enum { RT_DIM, RT_ZERO, RT_WRAPPED };
typedef struct { nn_dtype cls[3]; } rtype;
#define RTYPE_INIT {{NN_DTYPE_NONE, NN_DTYPE_NONE, NN_DTYPE_NONE}}

static void rt_add(rtype *r, int cls, nn_dtype dt)
{
    if (cls == RT_WRAPPED && nn_dtype_is_float(dt)) dt = nn_default_dtype();
    if (cls == RT_WRAPPED && nn_dtype_is_complex(dt)) dt = nn_dtype_to_complex(nn_default_dtype());
    r->cls[cls] = promote_skip(r->cls[cls], dt);
}

static void rt_add_tensor(rtype *r, const nn_tensor *t)
{
    rt_add(r, t->ndim ? RT_DIM : t->wrapped_number ? RT_WRAPPED : RT_ZERO, t->dtype);
}

/* c10's combine_categories: a complex lower class keeps a float higher one's width */
static nn_dtype combine(nn_dtype higher, nn_dtype lower)
{
    if (higher != NN_DTYPE_NONE && nn_dtype_is_complex(higher)) return higher;
    if (lower != NN_DTYPE_NONE && nn_dtype_is_complex(lower))
        return higher != NN_DTYPE_NONE && nn_dtype_is_float(higher) ? nn_dtype_to_complex(higher) : lower;
    if (higher != NN_DTYPE_NONE && nn_dtype_is_float(higher)) return higher;
    if (higher == NN_BOOL || (lower != NN_DTYPE_NONE && nn_dtype_is_float(lower))) return promote_skip(higher, lower);
    return higher != NN_DTYPE_NONE ? higher : lower;
}

static nn_dtype rt_result(const rtype *r)
{
    return combine(r->cls[RT_DIM], combine(r->cls[RT_ZERO], r->cls[RT_WRAPPED]));
}

nn_dtype nn_result_type(const nn_tensor *a, const nn_tensor *b)
{
    if (a->dtype == b->dtype && !a->wrapped_number && !b->wrapped_number) return a->dtype;
    rtype r = RTYPE_INIT;
    rt_add_tensor(&r, a);
    rt_add_tensor(&r, b);
    return rt_result(&r);
}

static bool is_integral_value(double v) { return v == floor(v) && fabs(v) < 9.2e18; }

/* A number given as a double plays a Lua number: an integer if integral, else a float. */
static nn_dtype number_dtype(double v) { return is_integral_value(v) ? NN_I64 : NN_F64; }

/* PyTorch's canCast: no float into an integer tensor, nothing but bool into a bool tensor */
static nn_status check_cast(const char *fn, nn_dtype result, nn_dtype self)
{
    if ((nn_dtype_is_float(result) && nn_dtype_is_integral(self)) || (result != NN_BOOL && self == NN_BOOL) ||
        (nn_dtype_is_complex(result) && !nn_dtype_is_complex(self)))
        return nn_error(NN_ERR_DTYPE, "%s: result type %s can't be cast to the desired output type %s", fn,
                        nn_dtype_scalar_name(result), nn_dtype_scalar_name(self));
    return NN_OK;
}

/* A number converted to an integer dtype must fit (uint8 also takes negatives that wrap,
 * as PyTorch's checked conversion allows). */
static nn_status check_fits(const char *fn, double v, nn_dtype dt)
{
    int64_t min, max;
    if (dt == NN_BOOL || !nn_dtype_int_range(dt, &min, &max)) return NN_OK;
    double lo = dt == NN_U8 ? -255 : (double)min, hi = (double)max + 1; /* int64: 2^63 */
    if (v >= lo && v < hi) return NN_OK;
    return nn_error(NN_ERR_ARG, "%s: value cannot be converted to type %s_t without overflow", fn, nn_dtype_name(dt));
}

/* ---- shapes, devices, aliasing ---- */


/* Outputs go to the device of the first operand that is not a CPU scalar. */
static nn_device pick_device(nn_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (ts[i]->storage->device.type != NN_CPU || ts[i]->ndim != 0) return ts[i]->storage->device;
    return ts[0]->storage->device;
}

/* other must broadcast to self's shape without growing it */
static nn_status check_into(const char *fn, const nn_tensor *self, const nn_tensor *other)
{
    if (nn_same_shape(self, other)) return NN_OK;
    int nd;
    int64_t shape[NN_MAX_DIMS];
    nn_status st = nn_broadcast_shapes(fn, self->ndim, self->shape, other->ndim, other->shape, &nd, shape);
    if (st || (nd == self->ndim && !memcmp(shape, self->shape, nd * sizeof *shape))) return st;
    char b1[200], b2[200];
    return nn_error(NN_ERR_SHAPE, "%s: output with shape %s doesn't match the broadcast shape %s", fn,
                    nn_shape_str(b1, self->ndim, self->shape), nn_shape_str(b2, nd, shape));
}

/* An in-place result cannot go where several elements share one memory location. */
static nn_status check_writable(const char *fn, const nn_tensor *t)
{
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] > 1 && t->strides[d] == 0)
            return nn_error(NN_ERR_ARG,
                            "%s: unsupported operation: more than one element of the written-to tensor refers to a single "
                            "memory location. Please clone() the tensor before performing the operation.", fn);
    return NN_OK;
}

static void byte_range(const nn_tensor *t, int64_t *lo, int64_t *hi)
{
    int64_t a = t->offset, b = t->offset, es = (int64_t)nn_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++) {
        int64_t ext = (t->shape[d] - 1) * t->strides[d];
        if (ext < 0) a += ext;
        else b += ext;
    }
    *lo = a * es;
    *hi = (b + 1) * es;
}

static bool same_view(const nn_tensor *a, const nn_tensor *b)
{
    return a->storage == b->storage && a->dtype == b->dtype && a->offset == b->offset && nn_same_shape(a, b) &&
           !memcmp(a->strides, b->strides, a->ndim * sizeof *a->strides);
}

static nn_status copy_kernel(nn_tensor *dst, nn_tensor *src);

/* a contiguous copy, not recorded by autograd (a temporary of the engine's own) */
static nn_tensor *clone_raw(nn_tensor *t)
{
    nn_tensor *out = nn_empty(t->ndim, t->shape, t->dtype, t->storage->device);
    if (out && copy_kernel(out, t)) {
        nn_release(out);
        return NULL;
    }
    return out;
}

/* other as an input of an op writing self elementwise: other itself when reading it as the
 * op writes self is safe (other is self, or they do not overlap), else a copy of it. */
static nn_tensor *unalias(nn_tensor *self, nn_tensor *other)
{
    if (other->storage != self->storage || nn_numel(self) == 0 || nn_numel(other) == 0) return nn_retain(other);
    if (same_view(self, other)) return nn_retain(other);
    int64_t slo, shi, olo, ohi;
    byte_range(self, &slo, &shi);
    byte_range(other, &olo, &ohi);
    if (ohi <= slo || shi <= olo) return nn_retain(other);
    return clone_raw(other);
}

static nn_status not_for_bool(const char *fn, const char *what)
{
    return nn_error(NN_ERR_DTYPE, "%s: \"%s\" not implemented for 'Bool'", fn, what);
}

/* the bitwise ops: integer and bool only, and no shifts of bools */
static nn_status bitwise_dtype(const char *fn, nn_op op, nn_dtype dt)
{
    bool shift = op == NN_OP_bitwise_left_shift || op == NN_OP_bitwise_right_shift;
    if (nn_dtype_is_float(dt) || (shift && dt == NN_BOOL))
        return nn_error(NN_ERR_DTYPE, "%s: \"%s\" not implemented for '%s'", fn, nn_op_name(op), nn_dtype_scalar_name(dt));
    return NN_OK;
}

/* ---- unary ---- */

static nn_status unary_dtype(const char *fn, nn_op op, nn_dtype in, nn_dtype *out)
{
    if (nn_dtype_is_complex(in)) return nn_complex_unary_dtype(fn, op, in, out);
    *out = in;
    switch (op) {
    case NN_OP_neg:
        if (in == NN_BOOL)
            return nn_error(NN_ERR_DTYPE, "%s: Negation, the `-` operator, on a bool tensor is not supported. If you are "
                            "trying to invert a mask, use the `~` or `logical_not()` operator instead.", fn);
        return NN_OK;
    case NN_OP_abs: return in == NN_BOOL ? not_for_bool(fn, "abs") : NN_OK;
    case NN_OP_relu: return in == NN_BOOL ? nn_error(NN_ERR_DTYPE, "%s: Boolean inputs not supported for relu", fn) : NN_OK;
    case NN_OP_sign: return NN_OK;
    case NN_OP_exp: case NN_OP_log: case NN_OP_sqrt: case NN_OP_rsqrt: case NN_OP_sigmoid: case NN_OP_tanh:
    case NN_OP_erf: case NN_OP_log1p: case NN_OP_sin: case NN_OP_cos: case NN_OP_tan: case NN_OP_asin: case NN_OP_acos:
    case NN_OP_atan: case NN_OP_sinh: case NN_OP_cosh: case NN_OP_expm1: case NN_OP_exp2: case NN_OP_log2: case NN_OP_log10:
    case NN_OP_reciprocal: case NN_OP_erfc: case NN_OP_asinh: case NN_OP_acosh: case NN_OP_atanh:
        if (!nn_dtype_is_float(in)) *out = nn_default_dtype();
        return NN_OK;
    case NN_OP_bitwise_not: return bitwise_dtype(fn, op, in);
    case NN_OP_frac: return nn_dtype_is_float(in) ? NN_OK : nn_error(NN_ERR_DTYPE, "%s: \"frac\" not implemented for '%s'", fn, nn_dtype_name(in));
    case NN_OP_floor: case NN_OP_ceil: case NN_OP_round: case NN_OP_trunc:
        return in == NN_BOOL ? not_for_bool(fn, nn_op_name(op)) : NN_OK;
    case NN_OP_logical_not: *out = NN_BOOL; return NN_OK;
    default: return nn_error(NN_ERR_ARG, "%s is not a unary elementwise op of nn_unary", nn_op_name(op));
    }
}

/* An elementwise op's output of shape [nd, shape]: channels-last when the first of ins with
 * that shape is (PyTorch keeps the inputs' memory format), else contiguous. */
static nn_tensor *empty_result(int nd, const int64_t *shape, nn_dtype dt, nn_device dev, nn_tensor *const *ins, int nin)
{
    if (nd == 4 || nd == 5)
        for (int k = 0; k < nin; k++) {
            const nn_tensor *t = ins[k];
            if (t->ndim != nd || memcmp(t->shape, shape, sizeof(int64_t) * nd)) continue;
            nn_memory_format f = nn_suggest_memory_format(t);
            if (f != NN_CONTIGUOUS_FORMAT) return nn_empty_format(nd, shape, f, dt, dev);
            break;
        }
    return nn_empty(nd, shape, dt, dev);
}

static nn_tensor *unary_out(nn_op op, nn_tensor *x, nn_dtype odt, const double *f, const int64_t *i)
{
    nn_tensor *out = empty_result(x->ndim, x->shape, odt, x->storage->device, &x, 1);
    if (!out) return NULL;
    nn_kargs k = {.op = op, .out = {out}, .in = {x}, .nin = 1, .f = {f[0], f[1]}, .i = {i[0], i[1]}};
    if (nn_dispatch(&k) || (nn_any_requires_grad(1, &x) && nn_record_unary(op, x, out, f[0], f[1], i[0]))) {
        nn_release(out);
        return NULL;
    }
    return out;
}

static nn_status unary_inplace(const char *fn, nn_op op, nn_tensor *self, nn_dtype odt, const double *f, const int64_t *i)
{
    nn_status st = check_cast(fn, odt, self->dtype);
    if (!st) st = check_writable(fn, self);
    if (st) return st;
    nn_inplace_rec rec;
    if ((st = nn_inplace_begin(fn, op, self, NULL, &rec))) return st;
    nn_kargs k = {.op = op, .out = {self}, .in = {self}, .nin = 1, .f = {f[0], f[1]}, .i = {i[0], i[1]}};
    st = nn_dispatch(&k);
    if (!st) nn_bump_version(self);
    return nn_inplace_end(&rec, op, self, NULL, f[0], f[1], i[0], st);
}

static const double no_f[2];
static const int64_t no_i[2];

static bool valid_op(nn_op op) { return op >= 0 && op < NN_OP_COUNT; }

/* floor, ceil, round and trunc leave an integer tensor as it is */
static bool rounds_integers(nn_op op, nn_dtype dt)
{
    return (op == NN_OP_floor || op == NN_OP_ceil || op == NN_OP_round || op == NN_OP_trunc) && !nn_dtype_is_float(dt);
}

nn_tensor *nn_unary(nn_op op, nn_tensor *x)
{
    if (op == NN_OP_bitwise_not && x->dtype == NN_BOOL) op = NN_OP_logical_not;
    if (nn_autocast_on()) { /* autocast: run again on the cast input */
        nn_tensor *xc;
        if (nn_autocast_inputs(op, 1, &x, &xc)) return NULL;
        if (xc) {
            nn_tensor *r = nn_unary(op, xc);
            nn_release(xc);
            return r;
        }
    }
    nn_dtype odt;
    if (!valid_op(op) || unary_dtype(nn_op_name(op), op, x->dtype, &odt)) {
        if (!valid_op(op)) nn_error(NN_ERR_ARG, "nn_unary: unknown op %d", (int)op);
        return NULL;
    }
    if (rounds_integers(op, x->dtype)) return nn_clone(x);
    return unary_out(op, x, odt, no_f, no_i);
}

nn_status nn_unary_(nn_op op, nn_tensor *self)
{
    if (!valid_op(op)) return nn_error(NN_ERR_ARG, "nn_unary_: unknown op %d", (int)op);
    if (op == NN_OP_bitwise_not && self->dtype == NN_BOOL) op = NN_OP_logical_not;
    nn_dtype odt;
    nn_status st = unary_dtype(inplace_names[op], op, self->dtype, &odt);
    if (!st && rounds_integers(op, self->dtype)) return NN_OK;
    return st ? st : unary_inplace(inplace_names[op], op, self, odt, no_f, no_i);
}

/* int ^ integral exponent stays int (bool becomes int64, as bool + Lua integer does) */
static nn_status pow_scalar_dtype(const char *fn, nn_dtype in, double e, nn_dtype *out)
{
    *out = in;
    if (!nn_dtype_is_integral(in)) return NN_OK;
    if (!is_integral_value(e)) *out = nn_default_dtype();
    else if (e < 0) return nn_error(NN_ERR_ARG, "%s: Integers to negative integer powers are not allowed.", fn);
    else if (in == NN_BOOL) *out = NN_I64;
    return NN_OK;
}

nn_tensor *nn_pow_scalar(nn_tensor *x, double exponent)
{
    if (nn_autocast_on()) {
        nn_tensor *xc;
        if (nn_autocast_inputs(NN_OP_pow_scalar, 1, &x, &xc)) return NULL;
        if (xc) {
            nn_tensor *r = nn_pow_scalar(xc, exponent);
            nn_release(xc);
            return r;
        }
    }
    nn_dtype odt;
    if (pow_scalar_dtype("pow", x->dtype, exponent, &odt)) return NULL;
    double f[2] = {exponent, 0};
    int64_t i[2] = {0, is_integral_value(exponent) ? (int64_t)exponent : 0};
    return unary_out(NN_OP_pow_scalar, x, odt, f, i);
}

static nn_status clamp_dtype(const char *fn, const nn_tensor *x, bool has_min, double min, bool has_max, double max, nn_dtype *out)
{
    if (!has_min && !has_max) return nn_error(NN_ERR_ARG, "%s: At least one of 'min' or 'max' must not be None", fn);
    rtype r = RTYPE_INIT;
    rt_add_tensor(&r, x);
    if (has_min) rt_add(&r, RT_WRAPPED, number_dtype(min));
    if (has_max) rt_add(&r, RT_WRAPPED, number_dtype(max));
    *out = rt_result(&r);
    if (*out == NN_BOOL) return not_for_bool(fn, "clamp");
    if (nn_dtype_is_complex(*out)) return nn_error(NN_ERR_DTYPE, "%s: clamp is not supported for complex types", fn);
    nn_status st = NN_OK;
    if (has_min) st = check_fits(fn, min, *out);
    if (!st && has_max) st = check_fits(fn, max, *out);
    return st;
}

nn_tensor *nn_clamp(nn_tensor *x, bool has_min, double min, bool has_max, double max)
{
    nn_dtype odt;
    if (clamp_dtype("clamp", x, has_min, min, has_max, max, &odt)) return NULL;
    double f[2] = {min, max};
    int64_t i[2] = {(has_min ? 1 : 0) | (has_max ? 2 : 0), 0};
    return unary_out(NN_OP_clamp, x, odt, f, i);
}

nn_status nn_clamp_(nn_tensor *self, bool has_min, double min, bool has_max, double max)
{
    nn_dtype odt;
    nn_status st = clamp_dtype("clamp_", self, has_min, min, has_max, max, &odt);
    if (st) return st;
    double f[2] = {min, max};
    int64_t i[2] = {(has_min ? 1 : 0) | (has_max ? 2 : 0), 0};
    return unary_inplace("clamp_", NN_OP_clamp, self, odt, f, i);
}

/* ---- binary ---- */

/* The compute dtype (what inputs are cast to) and the result dtype of a binary op. */
static nn_status binary_dtypes(const char *fn, nn_op op, const nn_tensor *a, const nn_tensor *b, double alpha,
                               nn_dtype *cdt, nn_dtype *odt)
{
    nn_dtype c = nn_result_type(a, b);
    *cdt = *odt = c;
    if (nn_dtype_is_complex(c)) {
        if (nn_complex_binary_dtype(fn, op, c)) return nn_last_status();
        if (op == NN_OP_eq || op == NN_OP_ne || op == NN_OP_logical_and || op == NN_OP_logical_or) *odt = NN_BOOL;
        return NN_OK;
    }
    switch (op) {
    case NN_OP_sub:
        if (a->dtype == NN_BOOL && b->dtype == NN_BOOL)
            return nn_error(NN_ERR_DTYPE, "%s: Subtraction, the `-` operator, with two bool tensors is not supported. "
                            "Use the `^` or `logical_xor()` operator instead.", fn);
        if (a->dtype == NN_BOOL || b->dtype == NN_BOOL)
            return nn_error(NN_ERR_DTYPE, "%s: Subtraction, the `-` operator, with a bool tensor is not supported. "
                            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.", fn);
        /* fall through */
    case NN_OP_add:
        if (alpha != 1 && nn_dtype_is_integral(c) && c != NN_BOOL && !is_integral_value(alpha))
            return nn_error(NN_ERR_ARG, "%s: For integral input tensors, argument alpha must not be a floating point number.", fn);
        return NN_OK;
    case NN_OP_mul: case NN_OP_maximum: case NN_OP_minimum: case NN_OP_threshold_backward:
        return NN_OK;
    case NN_OP_sigmoid_backward: case NN_OP_tanh_backward:
        return nn_dtype_is_float(c) ? NN_OK
                                    : nn_error(NN_ERR_DTYPE, "%s: \"%s\" not implemented for '%s'", fn, fn, nn_dtype_scalar_name(c));
    case NN_OP_div: case NN_OP_atan2:
        if (nn_dtype_is_integral(c)) *cdt = *odt = nn_default_dtype();
        return NN_OK;
    case NN_OP_pow:
        if (c == NN_BOOL) return not_for_bool(fn, "pow");
        if (nn_dtype_is_integral(c) && b->wrapped_number && b->storage->device.type == NN_CPU &&
            nn_load_f64(nn_data(b), b->dtype) < 0)
            return nn_error(NN_ERR_ARG, "%s: Integers to negative integer powers are not allowed.", fn);
        return NN_OK;
    case NN_OP_remainder:
        return c == NN_BOOL ? not_for_bool(fn, "remainder") : NN_OK;
    case NN_OP_fmod:
        return c == NN_BOOL ? not_for_bool(fn, "fmod") : NN_OK;
    case NN_OP_bitwise_and: case NN_OP_bitwise_or: case NN_OP_bitwise_xor: case NN_OP_bitwise_left_shift:
    case NN_OP_bitwise_right_shift:
        return bitwise_dtype(fn, op, c);
    case NN_OP_fmax: case NN_OP_fmin:
        return NN_OK;
    case NN_OP_nextafter:
        return c == NN_F32 || c == NN_F64 ? NN_OK
                                          : nn_error(NN_ERR_DTYPE, "%s: \"nextafter\" not implemented for '%s'", fn, nn_dtype_scalar_name(c));
    case NN_OP_eq: case NN_OP_ne: case NN_OP_lt: case NN_OP_le: case NN_OP_gt: case NN_OP_ge:
    case NN_OP_logical_and: case NN_OP_logical_or:
        *odt = NN_BOOL;
        return NN_OK;
    default:
        return nn_error(NN_ERR_ARG, "%s is not a binary elementwise op", nn_op_name(op));
    }
}

static nn_tensor *binary_out(nn_op op, nn_tensor *a, nn_tensor *b, double alpha)
{
    if (!valid_op(op)) {
        nn_error(NN_ERR_ARG, "nn_binary: unknown op %d", (int)op);
        return NULL;
    }
    if (nn_autocast_on()) {
        nn_tensor *in[2] = {a, b}, *c[2];
        if (nn_autocast_inputs(op, 2, in, c)) return NULL;
        if (c[0] || c[1]) {
            nn_tensor *r = binary_out(op, c[0] ? c[0] : a, c[1] ? c[1] : b, alpha);
            nn_autocast_release(2, c);
            return r;
        }
    }
    const char *fn = nn_op_name(op);
    nn_dtype cdt, odt;
    if (binary_dtypes(fn, op, a, b, alpha, &cdt, &odt)) return NULL;
    int nd = a->ndim;
    const int64_t *shape = a->shape;
    int64_t bshape[NN_MAX_DIMS];
    if (!nn_same_shape(a, b)) {
        if (nn_broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, bshape)) return NULL;
        shape = bshape;
    }
    nn_tensor *ins[2] = {a, b};
    nn_tensor *out = empty_result(nd, shape, odt, pick_device(ins, 2), ins, 2);
    if (!out) return NULL;
    nn_kargs k = {.op = op, .out = {out}, .in = {a, b}, .nin = 2, .f = {alpha}, .i = {cdt}};
    if (nn_dispatch(&k) || (nn_any_requires_grad(2, ins) && nn_record_binary(op, a, b, out, alpha))) {
        nn_release(out);
        return NULL;
    }
    return out;
}

nn_tensor *nn_binary(nn_op op, nn_tensor *a, nn_tensor *b) { return binary_out(op, a, b, 1); }
nn_tensor *nn_add_alpha(nn_tensor *a, nn_tensor *b, double alpha) { return binary_out(NN_OP_add, a, b, alpha); }

static nn_status binary_inplace(nn_op op, nn_tensor *self, nn_tensor *other, double alpha)
{
    if (!valid_op(op)) return nn_error(NN_ERR_ARG, "nn_binary_: unknown op %d", (int)op);
    const char *fn = inplace_names[op];
    nn_dtype cdt, odt;
    nn_status st = binary_dtypes(fn, op, self, other, alpha, &cdt, &odt);
    if (!st) st = check_cast(fn, odt, self->dtype);
    if (!st) st = check_into(fn, self, other);
    if (!st) st = check_writable(fn, self);
    nn_inplace_rec rec;
    if (st || (st = nn_inplace_begin(fn, op, self, other, &rec))) return st;
    nn_tensor *o = unalias(self, other);
    if (!o) return nn_inplace_end(&rec, op, self, other, alpha, 0, 0, nn_last_status());
    nn_kargs k = {.op = op, .out = {self}, .in = {self, o}, .nin = 2, .f = {alpha}, .i = {cdt}};
    st = nn_dispatch(&k);
    nn_release(o);
    if (!st) nn_bump_version(self);
    return nn_inplace_end(&rec, op, self, other, alpha, 0, 0, st);
}

nn_status nn_binary_(nn_op op, nn_tensor *self, nn_tensor *other) { return binary_inplace(op, self, other, 1); }
nn_status nn_add_alpha_(nn_tensor *self, nn_tensor *other, double alpha) { return binary_inplace(NN_OP_add, self, other, alpha); }

/* ---- where ---- */

nn_tensor *nn_where(nn_tensor *cond, nn_tensor *a, nn_tensor *b)
{
    if (cond->dtype != NN_BOOL && cond->dtype != NN_U8) {
        nn_error(NN_ERR_DTYPE, "where: expected condition to be a boolean tensor, but got a tensor with dtype %s",
                 nn_dtype_scalar_name(cond->dtype));
        return NULL;
    }
    int n1, n2;
    int64_t s1[NN_MAX_DIMS], s2[NN_MAX_DIMS];
    if (nn_broadcast_shapes("where", cond->ndim, cond->shape, a->ndim, a->shape, &n1, s1) ||
        nn_broadcast_shapes("where", n1, s1, b->ndim, b->shape, &n2, s2))
        return NULL;
    nn_dtype odt = nn_result_type(a, b);
    nn_tensor *ins[3] = {cond, a, b};
    nn_tensor *out = empty_result(n2, s2, odt, pick_device(ins, 3), ins, 3);
    if (!out) return NULL;
    /* a 0-dim side of another dtype (torch.where(c, x, 0.0)) is cast first: one element, and the
     * kernel then moves elements of one type */
    nn_tensor *ca = a->ndim == 0 && a->dtype != odt ? nn_to_dtype(a, odt) : nn_retain(a);
    nn_tensor *cb = b->ndim == 0 && b->dtype != odt ? nn_to_dtype(b, odt) : nn_retain(b);
    nn_kargs k = {.op = NN_OP_where, .out = {out}, .in = {cond, ca, cb}, .nin = 3, .i = {odt}};
    nn_status st = !ca || !cb ? nn_last_status() : nn_dispatch(&k);
    nn_release(ca);
    nn_release(cb);
    if (st || (nn_any_requires_grad(3, ins) && nn_record_where(cond, a, b, out))) {
        nn_release(out);
        return NULL;
    }
    return out;
}

/* ---- fills ---- */

static nn_status fill(const char *fn, nn_tensor *self, double value, bool zero)
{
    nn_status st = check_fits(fn, value, self->dtype);
    nn_inplace_rec rec;
    if (st || (st = nn_inplace_begin(fn, NN_OP_fill, self, NULL, &rec))) return st;
    int64_t iv = self->dtype == NN_BOOL ? value != 0 : nn_dtype_is_integral(self->dtype) ? (int64_t)value : 0;
    nn_kargs k = {.op = NN_OP_fill, .out = {self}, .f = {value}, .i = {0, iv}};
    st = nn_dispatch(&k);
    if (!st) nn_bump_version(self);
    return nn_inplace_end(&rec, NN_OP_fill, self, NULL, value, 0, zero, st);
}

nn_status nn_fill_(nn_tensor *self, double value) { return fill("fill_", self, value, false); }
nn_status nn_zero_(nn_tensor *self) { return fill("zero_", self, 0, true); }

/* ---- copies ---- */

static nn_status copy_kernel(nn_tensor *dst, nn_tensor *src)
{
    nn_kargs k = {.op = NN_OP_copy, .out = {dst}, .in = {src}, .nin = 1};
    return nn_dispatch(&k);
}

typedef struct {
    const nn_backend *be;
    nn_tensor *to, *from;
} bytes_copy;

static nn_status copy_bytes(void *ctx)
{
    bytes_copy *c = ctx;
    return c->be->copy(nn_data(c->to), c->to->storage->device, nn_data(c->from), c->from->storage->device,
                       (size_t)nn_numel(c->from) * nn_dtype_size(c->from->dtype));
}

/* Between devices: make src contiguous on its own device, move its bytes with the non-CPU
 * backend's copy (straight into dst when dst is a contiguous tensor of the same dtype and
 * shape), then cast and broadcast into dst on dst's device. The profiler sees the move as
 * "memcpy HtoD", "memcpy DtoH" or "memcpy DtoD" on the GPU's side. */
static nn_status copy_across(nn_tensor *dst, nn_tensor *src)
{
    nn_device dd = dst->storage->device, sd = src->storage->device;
    if (dd.type == NN_META) return NN_OK; /* into meta: nothing to move */
    if (sd.type == NN_META) return nn_meta_no_data("copy_");
    const nn_backend *be = nn_backend_for(dd.type != NN_CPU ? dd : sd);
    if (!be || !be->copy) {
        char b1[16], b2[16];
        return nn_error(NN_ERR_DEVICE, "copy_: no backend copies from %s to %s", nn_device_str(b1, sd), nn_device_str(b2, dd));
    }
    if (nn_numel(dst) == 0) return NN_OK;
    nn_tensor *s = nn_is_contiguous(src) ? nn_retain(src) : clone_raw(src);
    if (!s) return nn_last_status();
    bool direct = nn_is_contiguous(dst) && dst->dtype == src->dtype && nn_same_shape(dst, src);
    nn_tensor *t = direct ? nn_retain(dst) : nn_empty(src->ndim, src->shape, src->dtype, dd);
    nn_status st = t ? NN_OK : nn_last_status();
    if (!st) {
        bytes_copy c = {be, t, s};
        const char *what = sd.type == NN_CPU ? "memcpy HtoD" : dd.type == NN_CPU ? "memcpy DtoH" : "memcpy DtoD";
        st = nn_profiler_call(what, sd.type == NN_CPU ? dd : sd, &t, 1, copy_bytes, &c);
    }
    if (!st && !direct) st = copy_kernel(dst, t);
    nn_release(s);
    nn_release(t);
    return st;
}

nn_status nn_copy_(nn_tensor *dst, nn_tensor *src)
{
    /* a backward writing a gradient with history into a bare view of a buffer: the buffer would not get it */
    if (nn_backward_creates_graph() && nn_grad_enabled() && src->requires_grad && !dst->base && !nn_sole_owner(dst))
        return nn_no_double_backward("writes a gradient into part of a tensor");
    nn_status st = check_into("copy_", dst, src);
    nn_inplace_rec rec;
    if (!st) st = check_writable("copy_", dst);
    if (st || (st = nn_inplace_begin("copy_", NN_OP_copy, dst, src, &rec))) return st;
    if (!nn_device_eq(dst->storage->device, src->storage->device)) st = copy_across(dst, src);
    else if (!same_view(dst, src)) {
        nn_tensor *s = unalias(dst, src);
        if (!s) return nn_last_status();
        st = copy_kernel(dst, s);
        nn_release(s);
    }
    if (!st) nn_bump_version(dst);
    return nn_inplace_end(&rec, NN_OP_copy, dst, src, 0, 0, 0, st);
}

/* out, a copy of t, on the graph as name */
static nn_tensor *recorded(nn_tensor *out, const char *name, nn_tensor *t)
{
    if (out && nn_any_requires_grad(1, &t) && nn_record_copy(name, t, out)) {
        nn_release(out);
        return NULL;
    }
    return out;
}

nn_tensor *nn_clone(nn_tensor *t) { return recorded(clone_raw(t), "CloneBackward0", t); }

nn_tensor *nn_to_dtype(nn_tensor *t, nn_dtype dt)
{
    if (dt == NN_DTYPE_NONE || dt == t->dtype) return nn_retain(t);
    nn_tensor *out = nn_empty(t->ndim, t->shape, dt, t->storage->device);
    if (out && copy_kernel(out, t)) {
        nn_release(out);
        return NULL;
    }
    return recorded(out, "ToCopyBackward0", t);
}

nn_tensor *nn_to_device(nn_tensor *t, nn_device dev)
{
    if (nn_device_eq(t->storage->device, dev)) return nn_retain(t);
    nn_tensor *out = nn_empty(t->ndim, t->shape, t->dtype, dev);
    if (out && copy_across(out, t)) {
        nn_release(out);
        return NULL;
    }
    return recorded(out, "ToCopyBackward0", t);
}
