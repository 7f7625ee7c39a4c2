/* Element types, their sizes and names, PyTorch's type promotion, and
 * conversions between float16/bfloat16 and float. */
#ifndef NN_DTYPE_H
#define NN_DTYPE_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Order matters only for the tables in dtype.c. */
typedef enum {
    NN_F32, NN_F64, NN_F16, NN_BF16, NN_I64, NN_I32, NN_U8, NN_BOOL, NN_I8, NN_I16,
    NN_C64, NN_C128, /* complex: two float32 / two float64 (real, imag) */
    NN_NDTYPES,
    NN_DTYPE_NONE = -1 /* "not given": pick the default */
} nn_dtype;

size_t nn_dtype_size(nn_dtype dt);
const char *nn_dtype_name(nn_dtype dt);       /* "float32", "int64", ... as PyTorch names them */
bool nn_dtype_is_float(nn_dtype dt);          /* f32 f64 f16 bf16 */
bool nn_dtype_is_integral(nn_dtype dt);       /* i64 i32 i16 i8 u8 bool */
bool nn_dtype_is_signed(nn_dtype dt);         /* all but u8 and bool */
bool nn_dtype_is_complex(nn_dtype dt);        /* c64 c128 */
/* float or complex: the dtypes that can carry a gradient */
static inline bool nn_dtype_is_differentiable(nn_dtype dt) { return !nn_dtype_is_integral(dt); }
nn_dtype nn_dtype_to_real(nn_dtype dt);       /* c64 -> f32, c128 -> f64, others as they are */
nn_dtype nn_dtype_to_complex(nn_dtype dt);    /* f64 -> c128, other reals -> c64, complex as it is */
/* The range of an integer dtype (bool: 0..1); false for floating and complex dtypes. */
bool nn_dtype_int_range(nn_dtype dt, int64_t *min, int64_t *max);
const char *nn_dtype_scalar_name(nn_dtype dt); /* c10's ScalarType name: "Float", "Long", "Char", "ComplexFloat", ... */
const char *nn_dtype_ctype_name(nn_dtype dt);  /* the C++ type PyTorch's messages print: "float", "long int", ... */
nn_dtype nn_dtype_from_name(const char *name); /* "float32", "float", "long", ...; NN_DTYPE_NONE if unknown */

/* The default floating dtype (torch.get_default_dtype), float32 unless changed. */
nn_dtype nn_default_dtype(void);
void nn_set_default_dtype(nn_dtype dt);

/* PyTorch's promote_types for two dtypes (bool < u8/i8 < i16 < i32 < i64 < floats; u8 with i8 is i16). */
nn_dtype nn_promote_types(nn_dtype a, nn_dtype b);

/* float16 / bfloat16 <-> float, inline so that the kernels' loops over them need no call (and the
 * bfloat16 ones, plain integer work, vectorize) */
typedef union { float f; uint32_t u; } nn_fbits;

static inline float nn_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    nn_fbits r;
    if (exp == 0x1f) r.u = sign | 0x7f800000 | (man << 13);
    else if (exp) r.u = sign | ((exp + 112) << 23) | (man << 13);
    else if (!man) r.u = sign;
    else { /* subnormal */
        r.f = (float)man * 0x1p-24f;
        r.u |= sign;
    }
    return r.f;
}

/* round to nearest even */
static inline uint16_t nn_float_to_half(float f)
{
    nn_fbits v = {f};
    uint32_t sign = (v.u >> 16) & 0x8000, a = v.u & 0x7fffffff;
    if (a >= 0x7f800000) return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000 ? 0x200 : 0));
    if (a >= 0x477ff000) return (uint16_t)(sign | 0x7c00); /* rounds past 65504 */
    if (a < 0x38800000) { /* subnormal or zero in half: round x * 2^24 to an integer */
        nn_fbits m = {.u = a};
        return (uint16_t)(sign | (uint32_t)nearbyintf(m.f * 0x1p24f));
    }
    uint32_t r = a - 0x38000000; /* rebias exponent 127 -> 15 */
    r += 0xfff + ((r >> 13) & 1); /* round to nearest even */
    return (uint16_t)(sign | (r >> 13));
}

static inline float nn_bf16_to_float(uint16_t b)
{
    nn_fbits r = {.u = (uint32_t)b << 16};
    return r.f;
}

/* round to nearest even, NaN kept (quiet) */
static inline uint16_t nn_float_to_bf16(float f)
{
    nn_fbits v = {f};
    uint32_t r = (v.u + 0x7fff + ((v.u >> 16) & 1)) >> 16;
    return (uint16_t)((v.u & 0x7fffffff) > 0x7f800000 ? (v.u >> 16) | 0x40 : r);
}

/* Read/write one element of any dtype as double or int64 (the generic kernel path).
 * Complex elements read as their real part; a real value stored into one has imag 0. */
double nn_load_f64(const void *p, nn_dtype dt);
int64_t nn_load_i64(const void *p, nn_dtype dt);
void nn_store_f64(void *p, nn_dtype dt, double v);  /* float->int truncates toward zero like C */
void nn_store_i64(void *p, nn_dtype dt, int64_t v);
/* v as a value of dt would hold it (stored and read back: floats round, integers truncate) */
double nn_as_dtype_value(double v, nn_dtype dt);
/* One element of any dtype as (re, im); im is 0 for real dtypes, and bool takes re != 0 || im != 0. */
void nn_load_c(const void *p, nn_dtype dt, double *re, double *im);
void nn_store_c(void *p, nn_dtype dt, double re, double im);

#endif
