/* Complex numbers in Lua and the complex tensor functions.
 *
 * A complex number (what item(), tolist() and x[i] of a 0-dim complex tensor give, and what
 * torch.complex_number(re, im) or torch.j build) is a small userdata with .real and .imag,
 * the arithmetic operators, == and Python's repr ("(1+2j)"). Mixed with a tensor it becomes
 * a wrapped complex128 scalar, as a Python complex does in PyTorch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "complex_ops.h"
#include "lt.h"

static const char CNUM_MT[1];

typedef struct { double re, im; } cnum;

void lt_push_complex(lua_State *L, double re, double im)
{
    cnum *c = lua_newuserdatauv(L, sizeof *c, 0);
    c->re = re, c->im = im;
    lua_rawgetp(L, LUA_REGISTRYINDEX, CNUM_MT);
    lua_setmetatable(L, -2);
}

static cnum *tocnum(lua_State *L, int idx)
{
    cnum *c = lua_touserdata(L, idx);
    if (!c || !lua_getmetatable(L, idx)) return NULL;
    lua_rawgetp(L, LUA_REGISTRYINDEX, CNUM_MT);
    bool ok = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return ok ? c : NULL;
}

int lt_tocomplex(lua_State *L, int idx, double *re, double *im)
{
    cnum *c = tocnum(L, idx);
    if (c) *re = c->re, *im = c->im;
    return c != NULL;
}

/* a number or complex number at idx */
static bool scalar_at(lua_State *L, int idx, double *re, double *im)
{
    if (lua_type(L, idx) == LUA_TNUMBER) {
        *re = lua_tonumber(L, idx), *im = 0;
        return true;
    }
    return lt_tocomplex(L, idx, re, im);
}

void lt_push_element(lua_State *L, const nn_tensor *t, const int64_t *index)
{
    const char *p = (const char *)t->storage->data;
    int64_t off = t->offset;
    for (int d = 0; d < t->ndim; d++) off += index[d] * t->strides[d];
    double re, im;
    nn_load_c(p + off * (int64_t)nn_dtype_size(t->dtype), t->dtype, &re, &im);
    lt_push_complex(L, re, im);
}

/* ---- Python's repr ---- */

/* the shortest %g that reads back as v, without a trailing ".0" (Python's repr of a complex part) */
static void part_repr(char *buf, size_t n, double v)
{
    if (isnan(v)) { snprintf(buf, n, "nan"); return; }
    if (isinf(v)) { snprintf(buf, n, v < 0 ? "-inf" : "inf"); return; }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
}

static int c_tostring(lua_State *L)
{
    cnum *c = tocnum(L, 1);
    char re[40], im[40];
    part_repr(re, sizeof re, c->re);
    part_repr(im, sizeof im, c->im);
    if (c->re == 0 && !signbit(c->re)) lua_pushfstring(L, "%sj", im);
    else lua_pushfstring(L, "(%s%s%sj)", re, im[0] == '-' ? "" : "+", im);
    return 1;
}

/* ---- arithmetic: with a tensor operand, the tensor operator does the work ---- */

static int tensor_op(lua_State *L, const char *mm)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, LT_TENSOR_MT);
    lua_getfield(L, -1, mm);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_call(L, 2, 1);
    return 1;
}

static void operands(lua_State *L, double *ar, double *ai, double *br, double *bi)
{
    if (!scalar_at(L, 1, ar, ai)) luaL_typeerror(L, 1, "number or complex");
    if (!scalar_at(L, 2, br, bi)) luaL_typeerror(L, 2, "number or complex");
}

#define ARITH(NAME, MM, RE, IM)                                       \
    static int NAME(lua_State *L)                                     \
    {                                                                 \
        if (lt_is_tensor(L, 1) || lt_is_tensor(L, 2)) return tensor_op(L, MM); \
        double ar, ai, br, bi;                                        \
        operands(L, &ar, &ai, &br, &bi);                              \
        lt_push_complex(L, RE, IM);                                   \
        return 1;                                                     \
    }
ARITH(c_add, "__add", ar + br, ai + bi)
ARITH(c_sub, "__sub", ar - br, ai - bi)
ARITH(c_mul, "__mul", ar * br - ai * bi, ar * bi + ai * br)

static int c_div(lua_State *L)
{
    if (lt_is_tensor(L, 1) || lt_is_tensor(L, 2)) return tensor_op(L, "__div");
    double ar, ai, br, bi;
    operands(L, &ar, &ai, &br, &bi);
    if (br == 0 && bi == 0) return luaL_error(L, "complex division by zero");
    _Complex double q = (ar + ai * 1.0i) / (br + bi * 1.0i);
    lt_push_complex(L, __real__ q, __imag__ q);
    return 1;
}

static int c_pow(lua_State *L)
{
    if (lt_is_tensor(L, 1) || lt_is_tensor(L, 2)) return tensor_op(L, "__pow");
    double ar, ai, br, bi;
    operands(L, &ar, &ai, &br, &bi);
    nn_tensor *a = nn_scalar_c128(ar, ai), *b = nn_scalar_c128(br, bi), *r = a && b ? nn_binary(NN_OP_pow, a, b) : NULL;
    nn_release(a), nn_release(b);
    if (!r) return lt_fail(L, 0);
    double re, im;
    nn_load_c(nn_data(r), r->dtype, &re, &im);
    nn_release(r);
    lt_push_complex(L, re, im);
    return 1;
}

static int c_unm(lua_State *L)
{
    cnum *c = tocnum(L, 1);
    lt_push_complex(L, -c->re, -c->im);
    return 1;
}

static int c_eq(lua_State *L)
{
    double ar, ai, br, bi;
    lua_pushboolean(L, scalar_at(L, 1, &ar, &ai) && scalar_at(L, 2, &br, &bi) && ar == br && ai == bi);
    return 1;
}

static int c_conjugate(lua_State *L)
{
    cnum *c = tocnum(L, 1);
    lt_push_complex(L, c->re, -c->im);
    return 1;
}

static int c_abs(lua_State *L)
{
    cnum *c = tocnum(L, 1);
    lua_pushnumber(L, hypot(c->re, c->im));
    return 1;
}

static int c_index(lua_State *L)
{
    cnum *c = tocnum(L, 1);
    const char *k = lua_tostring(L, 2);
    if (!k) return lua_pushnil(L), 1;
    if (!strcmp(k, "real")) lua_pushnumber(L, c->re);
    else if (!strcmp(k, "imag")) lua_pushnumber(L, c->im);
    else if (!strcmp(k, "conjugate")) lua_pushcfunction(L, c_conjugate);
    else if (!strcmp(k, "abs")) lua_pushcfunction(L, c_abs);
    else lua_pushnil(L);
    return 1;
}

static int complex_number(lua_State *L)
{
    lt_push_complex(L, luaL_optnumber(L, 1, 0), luaL_optnumber(L, 2, 0));
    return 1;
}

/* ---- tensor functions ---- */

static int push_result(lua_State *L, nn_tensor *r, int arg)
{
    lt_push_or_fail(L, r, arg);
    return 1;
}

#define T1(NAME, FN) \
    static int NAME(lua_State *L) { return push_result(L, FN(lt_check(L, 1)), 1); }
T1(f_view_as_real, nn_view_as_real)
T1(f_view_as_complex, nn_view_as_complex)
T1(f_real, nn_real)
T1(f_imag, nn_imag)
T1(f_conj, nn_conj)
T1(f_angle, nn_angle)
T1(f_sgn, nn_sgn)

int lt_field_real(lua_State *L) { return f_real(L); }
int lt_field_imag(lua_State *L) { return f_imag(L); }

static int f_resolve_conj(lua_State *L)
{
    lua_settop(L, 1);
    lt_check(L, 1);
    return 1;
}

static int f_is_conj(lua_State *L)
{
    lt_check(L, 1);
    lua_pushboolean(L, 0);
    return 1;
}

/* torch._fft_c2c(x, dim, inverse): the unnormalized DFT along dim (torch_fft.lua builds on it) */
static int f_fft_c2c(lua_State *L)
{
    nn_tensor *x = lt_check(L, 1);
    return push_result(L, nn_fft_c2c(x, (int)luaL_checkinteger(L, 2), lua_toboolean(L, 3)), 1);
}

static int f_complex(lua_State *L) { return push_result(L, nn_complex(lt_check(L, 1), lt_check(L, 2)), 2); }
static int f_polar(lua_State *L) { return push_result(L, nn_polar(lt_check(L, 1), lt_check(L, 2)), 2); }

/* x.real = v, x.imag = v: a copy into the view (tensor.c's __newindex) */
int lt_set_part(lua_State *L, nn_tensor *t, int imag)
{
    nn_tensor *v = imag ? nn_imag(t) : nn_real(t);
    if (!v) return lt_fail(L, 0);
    nn_tensor *src = lt_operand(L, 3);
    nn_status st = src ? nn_copy_(v, src) : nn_last_status();
    nn_release(src);
    nn_release(v);
    return st ? lt_fail(L, 3) : 0;
}

void lt_open_complex(lua_State *L)
{
    int torch = lua_gettop(L);
    static const luaL_Reg mm[] = {
        {"__tostring", c_tostring}, {"__add", c_add}, {"__sub", c_sub}, {"__mul", c_mul}, {"__div", c_div},
        {"__pow", c_pow}, {"__unm", c_unm}, {"__eq", c_eq}, {"__index", c_index}, {NULL, NULL},
    };
    luaL_newmetatable(L, "torch.complex_number");
    luaL_setfuncs(L, mm, 0);
    lua_rawsetp(L, LUA_REGISTRYINDEX, CNUM_MT);
    lua_pushcfunction(L, complex_number);
    lua_setfield(L, torch, "complex_number");
    lt_push_complex(L, 0, 1);
    lua_setfield(L, torch, "j");

    static const luaL_Reg both[] = {
        {"view_as_real", f_view_as_real}, {"view_as_complex", f_view_as_complex}, 
        {"conj", f_conj}, {"conj_physical", f_conj}, {"resolve_conj", f_resolve_conj}, {"resolve_neg", f_resolve_conj},
        {"is_conj", f_is_conj}, {"is_neg", f_is_conj}, {"angle", f_angle}, {"sgn", f_sgn},
        {NULL, NULL},
    };
    static const luaL_Reg only_torch[] = {
        {"complex", f_complex}, {"polar", f_polar}, {"real", f_real}, {"imag", f_imag}, {"_fft_c2c", f_fft_c2c},
        {NULL, NULL},
    };
    luaL_setfuncs(L, both, 0);
    luaL_setfuncs(L, only_torch, 0);
    lua_getfield(L, torch, "Tensor");
    luaL_setfuncs(L, both, 0);
    lua_settop(L, torch);
}
