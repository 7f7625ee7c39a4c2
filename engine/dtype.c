#include "dtype.h"

#include <math.h>
#include <string.h>

static const size_t sizes[NN_NDTYPES] = {4, 8, 2, 2, 8, 4, 1, 1, 1, 2, 8, 16};
static const char *const names[NN_NDTYPES] = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool", "int8", "int16",
                                              "complex64", "complex128"};
static const char *const scalar_names[NN_NDTYPES] = {"Float", "Double", "Half", "BFloat16", "Long", "Int", "Byte", "Bool", "Char", "Short",
                                                     "ComplexFloat", "ComplexDouble"};
static const char *const ctype_names[NN_NDTYPES] = {"float", "double", "c10::Half", "c10::BFloat16", "long int", "int",
                                                    "unsigned char", "bool", "signed char", "short int",
                                                    "c10::complex<float>", "c10::complex<double>"};
static nn_dtype default_dtype = NN_F32;

static bool valid(nn_dtype dt) { return dt >= 0 && dt < NN_NDTYPES; }

size_t nn_dtype_size(nn_dtype dt) { return sizes[dt]; }
const char *nn_dtype_name(nn_dtype dt) { return valid(dt) ? names[dt] : "?"; }
const char *nn_dtype_scalar_name(nn_dtype dt) { return valid(dt) ? scalar_names[dt] : "?"; }
const char *nn_dtype_ctype_name(nn_dtype dt) { return valid(dt) ? ctype_names[dt] : "?"; }
bool nn_dtype_is_float(nn_dtype dt) { return dt == NN_F32 || dt == NN_F64 || dt == NN_F16 || dt == NN_BF16; }
bool nn_dtype_is_integral(nn_dtype dt) { return !nn_dtype_is_float(dt) && !nn_dtype_is_complex(dt); }
bool nn_dtype_is_signed(nn_dtype dt) { return dt != NN_U8 && dt != NN_BOOL; }
bool nn_dtype_is_complex(nn_dtype dt) { return dt == NN_C64 || dt == NN_C128; }
nn_dtype nn_dtype_to_real(nn_dtype dt) { return dt == NN_C64 ? NN_F32 : dt == NN_C128 ? NN_F64 : dt; }
nn_dtype nn_dtype_to_complex(nn_dtype dt) { return dt == NN_F64 || dt == NN_C128 ? NN_C128 : NN_C64; }
nn_dtype nn_default_dtype(void) { return default_dtype; }
void nn_set_default_dtype(nn_dtype dt) { default_dtype = dt; }

bool nn_dtype_int_range(nn_dtype dt, int64_t *min, int64_t *max)
{
    switch (dt) {
    case NN_I64: *min = INT64_MIN, *max = INT64_MAX; return true;
    case NN_I32: *min = INT32_MIN, *max = INT32_MAX; return true;
    case NN_I16: *min = INT16_MIN, *max = INT16_MAX; return true;
    case NN_I8: *min = INT8_MIN, *max = INT8_MAX; return true;
    case NN_U8: *min = 0, *max = UINT8_MAX; return true;
    case NN_BOOL: *min = 0, *max = 1; return true;
    default: return false;
    }
}

nn_dtype nn_dtype_from_name(const char *name)
{
    static const struct { const char *alias; nn_dtype dt; } aliases[] = {
        {"float", NN_F32}, {"double", NN_F64}, {"half", NN_F16}, {"long", NN_I64}, {"int", NN_I32}, {"short", NN_I16},
        {"cfloat", NN_C64}, {"cdouble", NN_C128},
    };
    for (int i = 0; i < NN_NDTYPES; i++)
        if (!strcmp(name, names[i])) return (nn_dtype)i;
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
        if (!strcmp(name, aliases[i].alias)) return aliases[i].dt;
    return NN_DTYPE_NONE;
}

/* Category: bool < integer < float. Within a category the wider type wins;
 * f16 with bf16 gives f32, u8 with i8 gives i16, u8 with a wider signed type gives that (PyTorch). */
nn_dtype nn_promote_types(nn_dtype a, nn_dtype b)
{
    if (a == b) return a;
    if (nn_dtype_is_complex(a) || nn_dtype_is_complex(b)) /* complex wins, as wide as the wider value type */
        return nn_dtype_to_complex(nn_promote_types(nn_dtype_to_real(a), nn_dtype_to_real(b)));
    if (a == NN_BOOL) return b;
    if (b == NN_BOOL) return a;
    bool fa = nn_dtype_is_float(a), fb = nn_dtype_is_float(b);
    if (fa && !fb) return a;
    if (fb && !fa) return b;
    if (fa) {
        if ((a == NN_F16 && b == NN_BF16) || (a == NN_BF16 && b == NN_F16)) return NN_F32;
        static const int rank[NN_NDTYPES] = {[NN_F16] = 1, [NN_BF16] = 1, [NN_F32] = 2, [NN_F64] = 3};
        return rank[a] >= rank[b] ? a : b;
    }
    if ((a == NN_U8 && b == NN_I8) || (a == NN_I8 && b == NN_U8)) return NN_I16;
    static const int irank[NN_NDTYPES] = {[NN_U8] = 1, [NN_I8] = 1, [NN_I16] = 2, [NN_I32] = 3, [NN_I64] = 4};
    return irank[a] >= irank[b] ? a : b;
}

double nn_load_f64(const void *p, nn_dtype dt)
{
    switch (dt) {
    case NN_F32: return *(const float *)p;
    case NN_F64: return *(const double *)p;
    case NN_F16: return nn_half_to_float(*(const uint16_t *)p);
    case NN_BF16: return nn_bf16_to_float(*(const uint16_t *)p);
    case NN_I64: return (double)*(const int64_t *)p;
    case NN_I32: return *(const int32_t *)p;
    case NN_I16: return *(const int16_t *)p;
    case NN_I8: return *(const int8_t *)p;
    case NN_U8: return *(const uint8_t *)p;
    case NN_BOOL: return *(const uint8_t *)p != 0;
    case NN_C64: return *(const float *)p;
    case NN_C128: return *(const double *)p;
    default: return 0;
    }
}

int64_t nn_load_i64(const void *p, nn_dtype dt)
{
    switch (dt) {
    case NN_I64: return *(const int64_t *)p;
    case NN_I32: return *(const int32_t *)p;
    case NN_I16: return *(const int16_t *)p;
    case NN_I8: return *(const int8_t *)p;
    case NN_U8: return *(const uint8_t *)p;
    case NN_BOOL: return *(const uint8_t *)p != 0;
    default: {
        double v = nn_load_f64(p, dt);
        return isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : INT64_MIN;
    }
    }
}

void nn_store_f64(void *p, nn_dtype dt, double v)
{
    switch (dt) {
    case NN_F32: *(float *)p = (float)v; break;
    case NN_F64: *(double *)p = v; break;
    case NN_F16: *(uint16_t *)p = nn_float_to_half((float)v); break;
    case NN_BF16: *(uint16_t *)p = nn_float_to_bf16((float)v); break;
    case NN_BOOL: *(uint8_t *)p = v != 0; break;
    case NN_C64: case NN_C128: nn_store_c(p, dt, v, 0); break;
    default: nn_store_i64(p, dt, isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : INT64_MIN); break;
    }
}

void nn_store_i64(void *p, nn_dtype dt, int64_t v)
{
    switch (dt) {
    case NN_I64: *(int64_t *)p = v; break;
    case NN_I32: *(int32_t *)p = (int32_t)v; break;
    case NN_I16: *(int16_t *)p = (int16_t)v; break;
    case NN_I8: *(int8_t *)p = (int8_t)v; break;
    case NN_U8: *(uint8_t *)p = (uint8_t)v; break;
    case NN_BOOL: *(uint8_t *)p = v != 0; break;
    default: nn_store_f64(p, dt, (double)v); break;
    }
}

double nn_as_dtype_value(double v, nn_dtype dt)
{
    uint8_t b[16];
    nn_store_f64(b, dt, v);
    return nn_load_f64(b, dt);
}

void nn_load_c(const void *p, nn_dtype dt, double *re, double *im)
{
    switch (dt) {
    case NN_C64: *re = ((const float *)p)[0], *im = ((const float *)p)[1]; break;
    case NN_C128: *re = ((const double *)p)[0], *im = ((const double *)p)[1]; break;
    default: *re = nn_load_f64(p, dt), *im = 0; break;
    }
}

void nn_store_c(void *p, nn_dtype dt, double re, double im)
{
    switch (dt) {
    case NN_C64: ((float *)p)[0] = (float)re, ((float *)p)[1] = (float)im; break;
    case NN_C128: ((double *)p)[0] = re, ((double *)p)[1] = im; break;
    case NN_BOOL: *(uint8_t *)p = re != 0 || im != 0; break;
    default: nn_store_f64(p, dt, re); break;
    }
}
