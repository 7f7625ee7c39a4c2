/* CPU kernels for complex operands: elementwise ops, casts to and from complex, fills and
 * the sum/mean/prod/all/any reductions. Every element is read as a double complex (real
 * dtypes with imag 0) and written back through nn_store_c, which keeps the real part for a
 * real output and tests nonzero for bool; complex64 results are rounded once from double. */
#include <math.h>
#include <string.h>

#include "../complex_ops.h"
#include "iter.h"
#include "cmplx.h"
#include "kernels.h"

typedef double complex cplx;

static inline cplx load(const char *p, nn_dtype dt)
{
    double re, im;
    nn_load_c(p, dt, &re, &im);
    return CMPLX(re, im);
}

static inline void store(char *p, nn_dtype dt, cplx v) { nn_store_c(p, dt, creal(v), cimag(v)); }

typedef struct {
    nn_op op;
    nn_dtype dt[4];
    double f0;
} cctx;

/* row over nops operands (ops[0] written), their dtypes in c */
static nn_status iterate(nn_tensor *const *ops, int nops, nn_iter_row row, cctx *c)
{
    for (int k = 0; k < nops; k++) c->dt[k] = ops[k]->dtype;
    nn_iter it;
    nn_iter_init(&it, nops, ops);
    nn_iter_run(&it, row, c);
    return NN_OK;
}

/* ---- unary ---- */

static cplx log1p_c(cplx z) /* log|1+z| as log1p(2x + x^2 + y^2) / 2 keeps small z exact */
{
    double x = creal(z), y = cimag(z);
    return CMPLX(0.5 * log1p(2 * x + x * x + y * y), atan2(y, 1 + x));
}

static cplx expm1_c(cplx z) /* e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y/2) */
{
    double x = creal(z), y = cimag(z), s = sin(y / 2);
    return CMPLX(expm1(x) * cos(y) - 2 * s * s, exp(x) * sin(y));
}

/* std::pow's rule: a zero base gives zero (PyTorch's complex pow) */
static cplx pow_c(cplx a, cplx b) { return a == 0 ? 0 : cpow(a, b); }

static cplx unary1(const cctx *c, cplx z)
{
    switch (c->op) {
    case NN_OP_neg: return -z;
    case NN_OP_exp: return cexp(z);
    case NN_OP_log: return clog(z);
    case NN_OP_sqrt: return csqrt(z);
    case NN_OP_rsqrt: return 1 / csqrt(z);
    case NN_OP_abs: return cabs(z);
    case NN_OP_angle: return carg(z);
    case NN_OP_sigmoid: return 1 / (1 + cexp(-z));
    case NN_OP_tanh: return ctanh(z);
    case NN_OP_log1p: return log1p_c(z);
    case NN_OP_sin: return csin(z);
    case NN_OP_cos: return ccos(z);
    case NN_OP_tan: return ctan(z);
    case NN_OP_asin: return casin(z);
    case NN_OP_acos: return cacos(z);
    case NN_OP_atan: return catan(z);
    case NN_OP_sinh: return csinh(z);
    case NN_OP_cosh: return ccosh(z);
    case NN_OP_asinh: return casinh(z);
    case NN_OP_acosh: return cacosh(z);
    case NN_OP_atanh: return catanh(z);
    case NN_OP_expm1: return expm1_c(z);
    case NN_OP_exp2: return cexp(z * M_LN2);
    case NN_OP_log2: return clog(z) / M_LN2;
    case NN_OP_log10: return clog(z) / M_LN10;
    case NN_OP_reciprocal: return 1 / z;
    case NN_OP_conj_physical: return conj(z);
    case NN_OP_sgn: return z == 0 ? 0 : z / cabs(z);
    case NN_OP_logical_not: return z == 0;
    case NN_OP_pow_scalar:
        if (c->f0 == 0) return 1;
        if (c->f0 == 1) return z;
        if (c->f0 == 2) return z * z;
        return pow_c(z, c->f0);
    default: return NAN;
    }
}

static void unary_row(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const cctx *c = ctx;
    for (int64_t i = 0; i < n; i++) store(p[0] + i * s[0], c->dt[0], unary1(c, load(p[1] + i * s[1], c->dt[1])));
}

nn_status nn_cpu_complex_unary(const nn_kargs *a)
{
    if (!nn_complex_unary_op(a->op)) return nn_not_implemented(a, a->in[0]->dtype);
    nn_tensor *ops[2] = {a->out[0], a->in[0]};
    cctx c = {.op = a->op, .f0 = a->f[0]};
    return iterate(ops, 2, unary_row, &c);
}

/* ---- binary ---- */

static void binary_row(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const cctx *c = ctx;
    const double al = c->f0;
    for (int64_t i = 0; i < n; i++) {
        cplx x = load(p[1] + i * s[1], c->dt[1]), y = load(p[2] + i * s[2], c->dt[2]), r;
        switch (c->op) {
        case NN_OP_add: r = al == 1 ? x + y : x + al * y; break;
        case NN_OP_sub: r = al == 1 ? x - y : x - al * y; break;
        case NN_OP_mul: r = x * y; break;
        case NN_OP_div: r = x / y; break;
        case NN_OP_pow: r = pow_c(x, y); break;
        case NN_OP_eq: r = x == y; break;
        case NN_OP_ne: r = x != y; break;
        case NN_OP_logical_and: r = x != 0 && y != 0; break;
        default: r = x != 0 || y != 0; break; /* logical_or */
        }
        store(p[0] + i * s[0], c->dt[0], r);
    }
}

nn_status nn_cpu_complex_binary(const nn_kargs *a)
{
    if (!nn_complex_binary_op(a->op)) return nn_not_implemented(a, (nn_dtype)a->i[0]);
    nn_tensor *ops[3] = {a->out[0], a->in[0], a->in[1]};
    cctx c = {.op = a->op, .f0 = a->f[0]};
    return iterate(ops, 3, binary_row, &c);
}

/* ---- casts and fills ---- */

static void cast_row(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const cctx *c = ctx;
    for (int64_t i = 0; i < n; i++) store(p[0] + i * s[0], c->dt[0], load(p[1] + i * s[1], c->dt[1]));
}

nn_status nn_cpu_complex_copy(const nn_kargs *a)
{
    nn_tensor *ops[2] = {a->out[0], a->in[0]};
    cctx c = {0};
    return iterate(ops, 2, cast_row, &c);
}

typedef struct { unsigned char bytes[16]; size_t es; } fill_ctx;

static void fill_row(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const fill_ctx *c = ctx;
    for (int64_t i = 0; i < n; i++) memcpy(p[0] + i * s[0], c->bytes, c->es);
}

/* f[0] + i f[1] */
nn_status nn_cpu_complex_fill(const nn_kargs *a)
{
    nn_tensor *out = a->out[0];
    fill_ctx c = {.es = nn_dtype_size(out->dtype)};
    nn_store_c(c.bytes, out->dtype, a->f[0], a->f[1]);
    nn_iter it;
    nn_iter_init(&it, 1, &out);
    nn_iter_run(&it, fill_row, &c);
    return NN_OK;
}

/* ---- reductions: x's elements folded into a complex128 accumulator of out's (keepdim) shape,
 * which nn_iter broadcasts over x's; then the accumulator is written to out ---- */

static void fold_row(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const cctx *c = ctx;
    for (int64_t i = 0; i < n; i++) {
        cplx x = load(p[0] + i * s[0], c->dt[0]);
        cplx *acc = (cplx *)(p[1] + i * s[1]);
        switch (c->op) {
        case NN_OP_prod: *acc *= x; break;
        case NN_OP_all: *acc = *acc != 0 && x != 0; break;
        case NN_OP_any: *acc = *acc != 0 || x != 0; break;
        default: *acc += x; break; /* sum, mean */
        }
    }
}

nn_status nn_cpu_complex_reduce(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *out = a->out[0];
    double init;
    switch (a->op) {
    case NN_OP_sum: case NN_OP_mean: case NN_OP_any: init = 0; break;
    case NN_OP_prod: case NN_OP_all: init = 1; break;
    default: return nn_not_implemented(a, x->dtype);
    }
    nn_tensor *acc = nn_empty(out->ndim, out->shape, NN_C128, NN_DEVICE_CPU);
    if (!acc) return nn_last_status();
    int64_t m = nn_numel(acc);
    cplx *pa = nn_data(acc);
    for (int64_t i = 0; i < m; i++) pa[i] = init;
    if (nn_numel(x)) {
        nn_tensor *ops[2] = {x, acc};
        cctx c = {.op = a->op};
        iterate(ops, 2, fold_row, &c);
    }
    if (a->op == NN_OP_mean) {
        double count = m ? (double)nn_numel(x) / (double)m : 0;
        for (int64_t i = 0; i < m; i++) pa[i] /= count;
    }
    nn_tensor *ops[2] = {out, acc};
    cctx c = {0};
    iterate(ops, 2, cast_row, &c);
    nn_release(acc);
    return NN_OK;
}
