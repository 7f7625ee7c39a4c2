/* CPU elementwise kernels: unary ops, binary ops (broadcast inputs) and where.
 *
 * An op computes in one of three kinds: float (float32; float16 and bfloat16 are
 * widened to float and rounded on store), double (float64) and int64 (every
 * integer dtype and bool, with wrapping arithmetic; inputs are narrowed to the
 * compute dtype first, so uint8 < -1 compares with 255 as PyTorch does).
 * Comparisons and logical ops produce 0/1 bytes. A row of the iteration runs in
 * chunks: an operand whose dtype and stride already fit the compute kind is used
 * in place, any other is converted through a stack buffer (a broadcast scalar
 * once per row). Contiguous operands of one shape skip nn_iter altogether, which
 * keeps the per-call cost of small ops low. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic") /* -O2 alone leaves these loops scalar */
#endif

#include <math.h>
#include <string.h>

#include "iter.h"
#include "kernels.h"
#include "parallel.h"
#include "vmath.h"

typedef enum { K_F32, K_F64, K_I64, K_BOOL } kind; /* K_BOOL: 0/1 bytes, results only */
static const nn_dtype kind_dtype[] = {NN_F32, NN_F64, NN_I64, NN_BOOL};
static const int64_t kind_size[] = {4, 8, 8, 1};

static kind kind_of(nn_dtype dt) { return dt == NN_F64 ? K_F64 : nn_dtype_is_float(dt) ? K_F32 : K_I64; }

#define CHUNK 256
typedef union { float f[CHUNK]; double d[CHUNK]; int64_t i[CHUNK]; uint8_t b[CHUNK]; } chunk;

typedef struct ectx {
    nn_status status; /* first: nn_iter_run_parallel_status gives each thread its own copy */
    nn_op op;
    int nin;
    kind k;          /* compute kind */
    kind ok;         /* kind of the results: k, or K_BOOL */
    nn_dtype cdt;    /* compute dtype */
    nn_dtype dt[3];  /* out, in0, in1 */
    double f0, f1;   /* add/sub: alpha; clamp: bounds; pow_scalar: exponent */
    int64_t i0, i1;  /* add/sub: integer alpha; clamp: which bounds; pow_scalar: integer exponent */
    void (*fn)(struct ectx *c, void *out, const void *a, const void *b, int64_t n);
} ectx;

#define LOOP(stmt) for (int64_t i = 0; i < n; i++) { stmt; }

static inline int64_t narrow(int64_t v, nn_dtype dt)
{
    switch (dt) {
    case NN_I32: return (int32_t)v;
    case NN_I16: return (int16_t)v;
    case NN_I8: return (int8_t)v;
    case NN_U8: return (uint8_t)v;
    case NN_BOOL: return v != 0;
    default: return v;
    }
}

/* n elements of dtype dt at p (byte stride s) into buf as kind k; integers narrowed to cdt */
NN_CPU_CLONES static void load(void *buf, kind k, nn_dtype cdt, const char *p, int64_t s, nn_dtype dt, int64_t n)
{
    if (k == K_F32) {
        float *o = buf;
        switch (dt) {
        case NN_F32: LOOP(o[i] = *(const float *)(p + i * s)); break;
        case NN_F16: LOOP(o[i] = nn_half_to_float(*(const uint16_t *)(p + i * s))); break;
        case NN_BF16: /* unit stride apart, so that it vectorizes */
            if (s == 2) LOOP(o[i] = nn_bf16_to_float(((const uint16_t *)p)[i]))
            else LOOP(o[i] = nn_bf16_to_float(*(const uint16_t *)(p + i * s)))
            break;
        case NN_I64: LOOP(o[i] = (float)*(const int64_t *)(p + i * s)); break;
        default: LOOP(o[i] = (float)nn_load_f64(p + i * s, dt)); break;
        }
    } else if (k == K_F64) {
        double *o = buf;
        if (dt == NN_F64) LOOP(o[i] = *(const double *)(p + i * s))
        else LOOP(o[i] = nn_load_f64(p + i * s, dt))
    } else {
        int64_t *o = buf;
        if (dt == cdt || cdt == NN_I64) LOOP(o[i] = nn_load_i64(p + i * s, dt))
        else LOOP(o[i] = narrow(nn_load_i64(p + i * s, dt), cdt))
    }
}

/* n results of kind k from buf to dtype dt at p (byte stride s) */
NN_CPU_CLONES static void store(char *p, int64_t s, nn_dtype dt, const void *buf, kind k, int64_t n)
{
    switch (k) {
    case K_F32: {
        const float *v = buf;
        switch (dt) {
        case NN_F32: LOOP(*(float *)(p + i * s) = v[i]); break;
        case NN_F16: LOOP(*(uint16_t *)(p + i * s) = nn_float_to_half(v[i])); break;
        case NN_BF16:
            if (s == 2) LOOP(((uint16_t *)p)[i] = nn_float_to_bf16(v[i]))
            else LOOP(*(uint16_t *)(p + i * s) = nn_float_to_bf16(v[i]))
            break;
        default: LOOP(nn_store_f64(p + i * s, dt, v[i])); break;
        }
        break;
    }
    case K_F64: { const double *v = buf; LOOP(nn_store_f64(p + i * s, dt, v[i])); break; }
    case K_I64: { const int64_t *v = buf; LOOP(nn_store_i64(p + i * s, dt, v[i])); break; }
    case K_BOOL: {
        const uint8_t *v = buf;
        if (dt == NN_BOOL || dt == NN_U8) LOOP(*(uint8_t *)(p + i * s) = v[i])
        else LOOP(nn_store_i64(p + i * s, dt, v[i]))
        break;
    }
    }
}

/* an operand of dtype dt and byte stride s can be read as the compute kind in place */
static bool fits_kind(const ectx *c, kind k, nn_dtype dt, int64_t s)
{
    return dt == kind_dtype[k] && s == kind_size[k] && (k != K_I64 || c->cdt == NN_I64);
}

static void ew_row(char **p, const int64_t *s, int64_t n, void *ctx)
{
    ectx *c = ctx;
    if (c->status || n == 0) return;
    chunk in[2], ob;
    bool direct[2], scalar[2];
    for (int j = 0; j < c->nin; j++) {
        direct[j] = fits_kind(c, c->k, c->dt[j + 1], s[j + 1]);
        scalar[j] = !direct[j] && s[j + 1] == 0;
        if (scalar[j]) load(&in[j], c->k, c->cdt, p[j + 1], 0, c->dt[j + 1], n < CHUNK ? n : CHUNK);
    }
    bool direct_out = fits_kind(c, c->ok, c->dt[0], s[0]);
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        const void *q[2] = {NULL, NULL};
        for (int j = 0; j < c->nin; j++) {
            const char *pj = p[j + 1] + i * s[j + 1];
            if (direct[j]) q[j] = pj;
            else {
                if (!scalar[j]) load(&in[j], c->k, c->cdt, pj, s[j + 1], c->dt[j + 1], m);
                q[j] = &in[j];
            }
        }
        char *po = p[0] + i * s[0];
        c->fn(c, direct_out ? (void *)po : (void *)&ob, q[0], q[1], m);
        if (c->status) return;
        if (!direct_out) store(po, s[0], c->dt[0], &ob, c->ok, m);
    }
}

static bool same_shape(const nn_tensor *a, const nn_tensor *b)
{
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

/* Operands that are contiguous in out's shape, or single elements, run as one row; a large
 * op's rows are split over the CPU's threads. */
static nn_status run(ectx *c, nn_tensor *const *ops, int nops, nn_iter_row row)
{
    nn_tensor *out = ops[0];
    char *p[NN_ITER_MAX_OPS];
    int64_t s[NN_ITER_MAX_OPS];
    bool flat = nn_is_contiguous(out);
    for (int k = 0; k < nops && flat; k++) {
        const nn_tensor *t = ops[k];
        p[k] = nn_data(t);
        if (k == 0 || (same_shape(t, out) && nn_is_contiguous(t)))
            s[k] = (int64_t)nn_dtype_size(t->dtype);
        else if (nn_numel(t) == 1) s[k] = 0;
        else flat = false;
    }
    nn_iter it;
    if (flat && nn_numel(out) < NN_PARALLEL_MIN) {
        row(p, s, nn_numel(out), c);
        return c->status;
    }
    if (flat) nn_iter_init_row(&it, nops, p, s, nn_numel(out));
    else nn_iter_init(&it, nops, ops);
    return nn_iter_run_parallel_status(&it, row, c, sizeof *c);
}

/* ---- integer helpers ---- */

#define U(x) ((uint64_t)(x)) /* wrapping arithmetic */

static inline int64_t ipow(int64_t b, int64_t e)
{
    if (e < 0) return b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, x = U(b);
    for (; e; e >>= 1, x *= x)
        if (e & 1) r *= x;
    return (int64_t)r;
}

/* ---- binary ---- */

/* One function per float type: T the element type, POW and FMOD its libm functions. */
#define FLOAT_BINARY(NAME, T, M)                                                                \
    NN_CPU_CLONES static void NAME(ectx *c, void *out, const void *pa, const void *pb, int64_t n) \
    {                                                                                           \
        const T *a = pa, *b = pb;                                                               \
        T *o = out;                                                                             \
        uint8_t *ob = out;                                                                      \
        const T al = (T)c->f0;                                                                  \
        switch (c->op) {                                                                        \
        case NN_OP_add:                                                                         \
            if (al == 1) LOOP(o[i] = a[i] + b[i]) else LOOP(o[i] = a[i] + al * b[i]) break;     \
        case NN_OP_sub:                                                                         \
            if (al == 1) LOOP(o[i] = a[i] - b[i]) else LOOP(o[i] = a[i] - al * b[i]) break;     \
        case NN_OP_mul: LOOP(o[i] = a[i] * b[i]) break;                                         \
        case NN_OP_div: LOOP(o[i] = a[i] / b[i]) break;                                         \
        case NN_OP_pow: LOOP(o[i] = pow##M(a[i], b[i])) break;                                  \
        case NN_OP_remainder: /* Python's %: the sign of the divisor */                        \
            LOOP(T r = fmod##M(a[i], b[i]); o[i] = r != 0 && ((r < 0) != (b[i] < 0)) ? r + b[i] : r) \
            break;                                                                              \
        case NN_OP_fmod: LOOP(o[i] = fmod##M(a[i], b[i])) break;                                \
        case NN_OP_fmax: LOOP(o[i] = fmax##M(a[i], b[i])) break;                                \
        case NN_OP_fmin: LOOP(o[i] = fmin##M(a[i], b[i])) break;                                \
        case NN_OP_nextafter: LOOP(o[i] = nextafter##M(a[i], b[i])) break;                      \
        case NN_OP_atan2: LOOP(o[i] = atan2##M(a[i], b[i])) break;                              \
        case NN_OP_maximum: /* NaN propagates (a NaN a fails a < b); | not ||: no branch, so it vectorizes */ \
            LOOP(o[i] = ((a[i] < b[i]) | (b[i] != b[i])) ? b[i] : a[i]) break;                 \
        case NN_OP_minimum:                                                                     \
            LOOP(o[i] = ((b[i] < a[i]) | (b[i] != b[i])) ? b[i] : a[i]) break;                 \
        case NN_OP_eq: LOOP(ob[i] = a[i] == b[i]) break;                                        \
        case NN_OP_ne: LOOP(ob[i] = a[i] != b[i]) break;                                        \
        case NN_OP_lt: LOOP(ob[i] = a[i] < b[i]) break;                                         \
        case NN_OP_le: LOOP(ob[i] = a[i] <= b[i]) break;                                        \
        case NN_OP_gt: LOOP(ob[i] = a[i] > b[i]) break;                                         \
        case NN_OP_ge: LOOP(ob[i] = a[i] >= b[i]) break;                                        \
        case NN_OP_logical_and: LOOP(ob[i] = a[i] != 0 && b[i] != 0) break;                     \
        case NN_OP_logical_or: LOOP(ob[i] = a[i] != 0 || b[i] != 0) break;                      \
        case NN_OP_threshold_backward: /* a[i] read either way: no branch */                   \
            LOOP(const T g = a[i]; o[i] = b[i] > 0 ? g : (T)0) break;                           \
        case NN_OP_sigmoid_backward: LOOP(o[i] = a[i] * ((T)1 - b[i]) * b[i]) break;            \
        case NN_OP_tanh_backward: LOOP(o[i] = a[i] * ((T)1 - b[i] * b[i])) break;               \
        default: c->status = nn_error(NN_ERR_NOTIMPL, "%s is not a binary op", nn_op_name(c->op)); \
        }                                                                                       \
    }

FLOAT_BINARY(binary_f32, float, f)
FLOAT_BINARY(binary_f64, double, )

static void binary_i64(ectx *c, void *out, const void *pa, const void *pb, int64_t n)
{
    const int64_t *a = pa, *b = pb;
    int64_t *o = out;
    uint8_t *ob = out;
    const uint64_t al = U(c->i0);
    switch (c->op) {
    case NN_OP_add: LOOP(o[i] = (int64_t)(U(a[i]) + al * U(b[i]))) break;
    case NN_OP_sub: LOOP(o[i] = (int64_t)(U(a[i]) - al * U(b[i]))) break;
    case NN_OP_mul: LOOP(o[i] = (int64_t)(U(a[i]) * U(b[i]))) break;
    case NN_OP_pow: LOOP(o[i] = ipow(a[i], b[i])) break;
    case NN_OP_remainder:
        for (int64_t i = 0; i < n; i++) {
            if (b[i] == 0) {
                c->status = nn_error(NN_ERR_RUNTIME, "remainder: ZeroDivisionError");
                return;
            }
            int64_t r = b[i] == -1 ? 0 : a[i] % b[i];
            o[i] = r != 0 && ((r < 0) != (b[i] < 0)) ? r + b[i] : r;
        }
        break;
    case NN_OP_fmod: /* C's %: the sign of the dividend */
        for (int64_t i = 0; i < n; i++) {
            if (b[i] == 0) {
                c->status = nn_error(NN_ERR_RUNTIME, "fmod: ZeroDivisionError");
                return;
            }
            o[i] = b[i] == -1 ? 0 : a[i] % b[i];
        }
        break;
    case NN_OP_maximum: case NN_OP_fmax: LOOP(o[i] = a[i] < b[i] ? b[i] : a[i]) break;
    case NN_OP_minimum: case NN_OP_fmin: LOOP(o[i] = b[i] < a[i] ? b[i] : a[i]) break;
    case NN_OP_bitwise_and: LOOP(o[i] = a[i] & b[i]) break;
    case NN_OP_bitwise_or: LOOP(o[i] = a[i] | b[i]) break;
    case NN_OP_bitwise_xor: LOOP(o[i] = a[i] ^ b[i]) break;
    case NN_OP_bitwise_left_shift: LOOP(o[i] = b[i] < 0 || b[i] >= 64 ? 0 : (int64_t)(U(a[i]) << b[i])) break;
    case NN_OP_bitwise_right_shift: LOOP(o[i] = b[i] < 0 || b[i] >= 64 ? (a[i] < 0 ? -1 : 0) : a[i] >> b[i]) break;
    case NN_OP_eq: LOOP(ob[i] = a[i] == b[i]) break;
    case NN_OP_ne: LOOP(ob[i] = a[i] != b[i]) break;
    case NN_OP_lt: LOOP(ob[i] = a[i] < b[i]) break;
    case NN_OP_le: LOOP(ob[i] = a[i] <= b[i]) break;
    case NN_OP_gt: LOOP(ob[i] = a[i] > b[i]) break;
    case NN_OP_ge: LOOP(ob[i] = a[i] >= b[i]) break;
    case NN_OP_logical_and: LOOP(ob[i] = a[i] != 0 && b[i] != 0) break;
    case NN_OP_logical_or: LOOP(ob[i] = a[i] != 0 || b[i] != 0) break;
    case NN_OP_threshold_backward: LOOP(o[i] = b[i] > 0 ? a[i] : 0) break;
    default: /* div computes in a float dtype (the frontend promotes) */
        c->status = nn_error(NN_ERR_NOTIMPL, "%s is not implemented for cpu/%s", nn_op_name(c->op), nn_dtype_name(c->cdt));
    }
}

static bool bool_result(nn_op op)
{
    switch (op) {
    case NN_OP_eq: case NN_OP_ne: case NN_OP_lt: case NN_OP_le: case NN_OP_gt: case NN_OP_ge:
    case NN_OP_logical_and: case NN_OP_logical_or:
        return true;
    default:
        return false;
    }
}

/* i[0]: the compute dtype; f[0]: alpha of add and sub */
nn_status nn_cpu_binary(const nn_kargs *a)
{
    nn_tensor *ops[3] = {a->out[0], a->in[0], a->in[1]};
    nn_dtype cdt = (nn_dtype)a->i[0];
    if (cdt < 0 || cdt >= NN_NDTYPES) return nn_error(NN_ERR_ARG, "%s: bad compute dtype %d", nn_op_name(a->op), (int)cdt);
    if (nn_dtype_is_complex(cdt)) return nn_cpu_complex_binary(a);
    ectx c = {.op = a->op, .nin = 2, .k = kind_of(cdt), .cdt = cdt,
              .dt = {ops[0]->dtype, ops[1]->dtype, ops[2]->dtype}, .f0 = a->f[0]};
    c.ok = bool_result(a->op) ? K_BOOL : c.k;
    c.fn = c.k == K_F32 ? binary_f32 : c.k == K_F64 ? binary_f64 : binary_i64;
    if (c.k == K_I64 && (a->op == NN_OP_add || a->op == NN_OP_sub))
        c.i0 = cdt == NN_BOOL ? c.f0 != 0 : (int64_t)c.f0; /* the frontend checked alpha is integral */
    return run(&c, ops, 3, ew_row);
}

/* ---- unary ---- */

#define FLOAT_UNARY(NAME, T, M)                                                                 \
    NN_CPU_CLONES static void NAME(ectx *c, void *out, const void *px, const void *unused, int64_t n) \
    {                                                                                           \
        const T *x = px;                                                                        \
        T *o = out;                                                                             \
        switch (c->op) {                                                                        \
        case NN_OP_neg: LOOP(o[i] = -x[i]) break;                                               \
        case NN_OP_exp: LOOP(o[i] = exp##M(x[i])) break;                                        \
        case NN_OP_log: LOOP(o[i] = log##M(x[i])) break;                                        \
        case NN_OP_sqrt: LOOP(o[i] = sqrt##M(x[i])) break;                                      \
        case NN_OP_rsqrt: LOOP(o[i] = 1 / sqrt##M(x[i])) break;                                 \
        case NN_OP_abs: LOOP(o[i] = fabs##M(x[i])) break;                                       \
        case NN_OP_sign: LOOP(o[i] = (T)((0 < x[i]) - (x[i] < 0))) break; /* NaN -> 0 */        \
        case NN_OP_sigmoid: LOOP(o[i] = 1 / (1 + exp##M(-x[i]))) break;                         \
        case NN_OP_tanh: LOOP(o[i] = tanh##M(x[i])) break;                                      \
        case NN_OP_erf: LOOP(o[i] = erf##M(x[i])) break;                                        \
        case NN_OP_log1p: LOOP(o[i] = log1p##M(x[i])) break;                                    \
        case NN_OP_sin: LOOP(o[i] = sin##M(x[i])) break;                                        \
        case NN_OP_cos: LOOP(o[i] = cos##M(x[i])) break;                                        \
        case NN_OP_tan: LOOP(o[i] = tan##M(x[i])) break;                                        \
        case NN_OP_asin: LOOP(o[i] = asin##M(x[i])) break;                                      \
        case NN_OP_acos: LOOP(o[i] = acos##M(x[i])) break;                                      \
        case NN_OP_atan: LOOP(o[i] = atan##M(x[i])) break;                                      \
        case NN_OP_sinh: LOOP(o[i] = sinh##M(x[i])) break;                                      \
        case NN_OP_cosh: LOOP(o[i] = cosh##M(x[i])) break;                                      \
        case NN_OP_expm1: LOOP(o[i] = expm1##M(x[i])) break;                                    \
        case NN_OP_exp2: LOOP(o[i] = exp2##M(x[i])) break;                                      \
        case NN_OP_log2: LOOP(o[i] = log2##M(x[i])) break;                                      \
        case NN_OP_log10: LOOP(o[i] = log10##M(x[i])) break;                                    \
        case NN_OP_reciprocal: LOOP(o[i] = 1 / x[i]) break;                                     \
        case NN_OP_erfc: LOOP(o[i] = erfc##M(x[i])) break;                                      \
        case NN_OP_frac: LOOP(o[i] = x[i] - trunc##M(x[i])) break;                              \
        case NN_OP_floor: LOOP(o[i] = floor##M(x[i])) break;                                    \
        case NN_OP_ceil: LOOP(o[i] = ceil##M(x[i])) break;                                      \
        case NN_OP_round: LOOP(o[i] = nearbyint##M(x[i])) break; /* half to even */            \
        case NN_OP_trunc: LOOP(o[i] = trunc##M(x[i])) break;                                    \
        case NN_OP_asinh: LOOP(o[i] = asinh##M(x[i])) break;                                    \
        case NN_OP_acosh: LOOP(o[i] = acosh##M(x[i])) break;                                    \
        case NN_OP_atanh: LOOP(o[i] = atanh##M(x[i])) break;                                    \
        case NN_OP_relu: LOOP(o[i] = x[i] < 0 ? 0 : x[i]) break; /* NaN stays */                \
        case NN_OP_clamp: { /* a NaN bound compares false and leaves x, as PyTorch's scalar clamp */ \
            const T lo = (T)c->f0, hi = (T)c->f1;                                               \
            if ((c->i0 & 3) == 3) LOOP(T v = x[i] < lo ? lo : x[i]; o[i] = hi < v ? hi : v)     \
            else if (c->i0 & 1) LOOP(o[i] = x[i] < lo ? lo : x[i])                              \
            else LOOP(o[i] = hi < x[i] ? hi : x[i])                                             \
            break;                                                                              \
        }                                                                                       \
        case NN_OP_pow_scalar: {                                                                \
            const double e = c->f0;                                                             \
            if (e == 2) LOOP(o[i] = x[i] * x[i])                                                \
            else if (e == 3) LOOP(o[i] = x[i] * x[i] * x[i])                                    \
            else if (e == 0.5) LOOP(o[i] = sqrt##M(x[i]))                                       \
            else if (e == -0.5) LOOP(o[i] = 1 / sqrt##M(x[i]))                                  \
            else if (e == -1) LOOP(o[i] = 1 / x[i])                                             \
            else if (e == -2) LOOP(o[i] = 1 / (x[i] * x[i]))                                    \
            else LOOP(o[i] = pow##M(x[i], (T)e))                                                \
            break;                                                                              \
        }                                                                                       \
        default: c->status = nn_error(NN_ERR_NOTIMPL, "%s is not a unary op", nn_op_name(c->op)); \
        }                                                                                       \
    }

FLOAT_UNARY(unary_f32, float, f)
FLOAT_UNARY(unary_f64, double, )

static void unary_i64(ectx *c, void *out, const void *px, const void *unused, int64_t n)
{
    const int64_t *x = px;
    int64_t *o = out;
    switch (c->op) {
    case NN_OP_neg: LOOP(o[i] = (int64_t)(0 - U(x[i]))) break;
    case NN_OP_abs: LOOP(o[i] = x[i] < 0 ? (int64_t)(0 - U(x[i])) : x[i]) break;
    case NN_OP_sign: LOOP(o[i] = (x[i] > 0) - (x[i] < 0)) break;
    case NN_OP_relu: LOOP(o[i] = x[i] < 0 ? 0 : x[i]) break;
    case NN_OP_clamp: { /* bounds are cast to the dtype first (uint8: -1 is 255), as in PyTorch */
        const int64_t lo = c->i0 & 1 ? narrow((int64_t)c->f0, c->cdt) : INT64_MIN;
        const int64_t hi = c->i0 & 2 ? narrow((int64_t)c->f1, c->cdt) : INT64_MAX;
        LOOP(int64_t v = x[i] < lo ? lo : x[i]; o[i] = hi < v ? hi : v)
        break;
    }
    case NN_OP_pow_scalar: LOOP(o[i] = ipow(x[i], c->i1)) break;
    case NN_OP_bitwise_not: LOOP(o[i] = ~x[i]) break;
    default: /* float functions compute in a float dtype (the frontend promotes) */
        c->status = nn_error(NN_ERR_NOTIMPL, "%s is not implemented for cpu/%s", nn_op_name(c->op), nn_dtype_name(c->cdt));
    }
}

typedef struct { nn_dtype out, in; } not_ctx;

static void not_row(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const not_ctx *c = ctx;
    if (c->out == NN_BOOL && c->in == NN_BOOL) LOOP(*(uint8_t *)(p[0] + i * s[0]) = !*(const uint8_t *)(p[1] + i * s[1]))
    else LOOP(nn_store_i64(p[0] + i * s[0], c->out, nn_load_f64(p[1] + i * s[1], c->in) == 0))
}

/* computes in out's dtype; f[0], f[1], i[0], i[1] as ops.def says for clamp and pow_scalar */
nn_status nn_cpu_unary(const nn_kargs *a)
{
    if (nn_dtype_is_complex(a->in[0]->dtype) || nn_dtype_is_complex(a->out[0]->dtype)) return nn_cpu_complex_unary(a);
    nn_tensor *ops[2] = {a->out[0], a->in[0]};
    ectx c = {.op = a->op, .nin = 1, .cdt = ops[0]->dtype, .k = kind_of(ops[0]->dtype),
              .dt = {ops[0]->dtype, ops[1]->dtype}, .f0 = a->f[0], .f1 = a->f[1], .i0 = a->i[0], .i1 = a->i[1]};
    if (a->op == NN_OP_logical_not) {
        not_ctx nc = {ops[0]->dtype, ops[1]->dtype};
        nn_iter it;
        nn_iter_init(&it, 2, ops);
        nn_iter_run_parallel(&it, not_row, &nc);
        return NN_OK;
    }
    c.ok = c.k;
    c.fn = c.k == K_F32 ? unary_f32 : c.k == K_F64 ? unary_f64 : unary_i64;
    return run(&c, ops, 2, ew_row);
}

/* ---- where: out = in0 ? in1 : in2; i[0] the result dtype ---- */

typedef struct { nn_dtype dt[4]; bool same; } where_ctx;

/* where over elements of one unsigned type T: both sides loaded and blended by a mask, with no
 * branch (a random condition mispredicts one in two), so the dense case vectorizes */
#define WHERE_SAME(T)                                                                                   \
    do {                                                                                                \
        if (s[0] == sizeof(T) && s[1] == 1 && s[2] == sizeof(T) && s[3] == sizeof(T)) {                 \
            T *o = (T *)p[0];                                                                           \
            const uint8_t *m = (const uint8_t *)p[1];                                                   \
            const T *x = (const T *)p[2], *y = (const T *)p[3];                                         \
            LOOP(T k = (T)0 - (T)(m[i] != 0); o[i] = (x[i] & k) | (y[i] & ~k))                           \
        } else                                                                                          \
            LOOP(T k = (T)0 - (T)(*(const uint8_t *)(p[1] + i * s[1]) != 0);                            \
                 *(T *)(p[0] + i * s[0]) = (*(const T *)(p[2] + i * s[2]) & k) | (*(const T *)(p[3] + i * s[3]) & ~k)) \
    } while (0)

static void where_row(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const where_ctx *c = ctx;
    size_t es = nn_dtype_size(c->dt[0]);
    if (c->same && es == 4) { WHERE_SAME(uint32_t); return; }
    if (c->same && es == 8) { WHERE_SAME(uint64_t); return; }
    if (c->same && es == 2) { WHERE_SAME(uint16_t); return; }
    if (c->same && es == 1) { WHERE_SAME(uint8_t); return; }
    bool integral = nn_dtype_is_integral(c->dt[0]);
    for (int64_t i = 0; i < n; i++) {
        int j = *(const uint8_t *)(p[1] + i * s[1]) ? 2 : 3;
        const char *src = p[j] + i * s[j];
        char *dst = p[0] + i * s[0];
        if (c->same) memcpy(dst, src, es);
        else if (nn_dtype_is_complex(c->dt[0])) {
            double re, im;
            nn_load_c(src, c->dt[j], &re, &im);
            nn_store_c(dst, c->dt[0], re, im);
        } else if (integral) nn_store_i64(dst, c->dt[0], nn_load_i64(src, c->dt[j]));
        else nn_store_f64(dst, c->dt[0], nn_load_f64(src, c->dt[j]));
    }
}

nn_status nn_cpu_ternary(const nn_kargs *a)
{
    if (a->op != NN_OP_where) return nn_not_implemented(a, a->out[0]->dtype);
    nn_tensor *ops[4] = {a->out[0], a->in[0], a->in[1], a->in[2]};
    where_ctx c = {{ops[0]->dtype, ops[1]->dtype, ops[2]->dtype, ops[3]->dtype}, false};
    c.same = c.dt[2] == c.dt[0] && c.dt[3] == c.dt[0];
    nn_iter it;
    nn_iter_init(&it, 4, ops);
    nn_iter_run_parallel(&it, where_row, &c);
    return NN_OK;
}
