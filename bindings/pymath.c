/* _pymath: the libm functions behind Python's math names that Lua's math lacks
 * (bindings/lua/pymath.lua adds them to math; require "_pymath"). Each raises Python's errors:
 * "math domain error" where the result is nan from a non-nan argument (or at a pole), "math range
 * error" where a finite argument overflows; CPython's own checks, not errno's. */
#include <math.h>

#include <lauxlib.h>

#include "lt.h"

static int domain(lua_State *L) { return luaL_error(L, "math domain error"); }
static int range(lua_State *L) { return luaL_error(L, "math range error"); }

/* r = f(x): nan from a number is a domain error, inf from a finite number a range error
 * (can_overflow) or a domain error (a pole: log2(0), atanh(1), lgamma(-1)) */
static int finish1(lua_State *L, double x, double r, int can_overflow)
{
    if (isnan(r) && !isnan(x)) return domain(L);
    if (isinf(r) && isfinite(x)) return can_overflow ? range(L) : domain(L);
    lua_pushnumber(L, r);
    return 1;
}

#define UNARY(name, expr, over) \
    static int l_##name(lua_State *L) \
    { \
        double x = luaL_checknumber(L, 1); \
        return finish1(L, x, (expr), (over)); \
    }
UNARY(erf, erf(x), 0)
UNARY(erfc, erfc(x), 0)
UNARY(log1p, log1p(x), 0)
UNARY(expm1, expm1(x), 1)
UNARY(log2, log2(x), 0)
UNARY(log10, log10(x), 0)
UNARY(sinh, sinh(x), 1)
UNARY(cosh, cosh(x), 1)
UNARY(tanh, tanh(x), 0)
UNARY(asinh, asinh(x), 0)
UNARY(acosh, acosh(x), 0)
UNARY(atanh, atanh(x), 0)
UNARY(cbrt, cbrt(x), 0)
UNARY(exp2, exp2(x), 1)

/* gamma and lgamma: poles at 0 and the negative integers are domain errors, as CPython's */
static int l_gamma(lua_State *L)
{
    double x = luaL_checknumber(L, 1);
    if (isfinite(x) && x <= 0 && x == floor(x)) return domain(L);
    if (isinf(x) && x < 0) return domain(L);
    return finish1(L, x, tgamma(x), 1);
}

static int l_lgamma(lua_State *L)
{
    double x = luaL_checknumber(L, 1);
    if (isfinite(x) && x <= 0 && x == floor(x)) return domain(L);
    return finish1(L, x, lgamma(x), 1);
}

/* pow(x, y) as CPython's math.pow: nan from finite operands is a domain error, as is 0 to a
 * negative power; inf from finite operands a range error */
static int l_pow(lua_State *L)
{
    double x = luaL_checknumber(L, 1), y = luaL_checknumber(L, 2);
    double r = pow(x, y);
    if (isfinite(x) && isfinite(y)) {
        if (isnan(r)) return domain(L);
        if (isinf(r)) return x == 0 ? domain(L) : range(L);
    }
    lua_pushnumber(L, r);
    return 1;
}

static int l_copysign(lua_State *L)
{
    lua_pushnumber(L, copysign(luaL_checknumber(L, 1), luaL_checknumber(L, 2)));
    return 1;
}

static int l_nextafter(lua_State *L)
{
    lua_pushnumber(L, nextafter(luaL_checknumber(L, 1), luaL_checknumber(L, 2)));
    return 1;
}

/* remainder(x, y): IEEE 754's; y == 0 or x infinite is a domain error */
static int l_remainder(lua_State *L)
{
    double x = luaL_checknumber(L, 1), y = luaL_checknumber(L, 2);
    if (isnan(x) || isnan(y)) {
        lua_pushnumber(L, isnan(x) ? x : y);
        return 1;
    }
    if (isinf(x) || y == 0) return domain(L);
    lua_pushnumber(L, isinf(y) ? x : remainder(x, y));
    return 1;
}

static int l_frexp(lua_State *L)
{
    double x = luaL_checknumber(L, 1);
    int e = 0;
    double m = (isnan(x) || isinf(x) || x == 0) ? x : frexp(x, &e);
    lua_pushnumber(L, m);
    lua_pushinteger(L, e);
    return 2;
}

static int l_ldexp(lua_State *L)
{
    double x = luaL_checknumber(L, 1);
    lua_Integer e = luaL_checkinteger(L, 2);
    if (e > 100000) e = 100000; /* past any double's range either way */
    if (e < -100000) e = -100000;
    double r = ldexp(x, (int)e);
    if (isinf(r) && isfinite(x)) return range(L);
    lua_pushnumber(L, r);
    return 1;
}

static int l_hypot2(lua_State *L)
{
    lua_pushnumber(L, hypot(luaL_checknumber(L, 1), luaL_checknumber(L, 2)));
    return 1;
}

int luaopen_pymath(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"erf", l_erf}, {"erfc", l_erfc}, {"log1p", l_log1p}, {"expm1", l_expm1}, {"log2", l_log2},
        {"log10", l_log10}, {"sinh", l_sinh}, {"cosh", l_cosh}, {"tanh", l_tanh}, {"asinh", l_asinh},
        {"acosh", l_acosh}, {"atanh", l_atanh}, {"cbrt", l_cbrt}, {"exp2", l_exp2}, {"gamma", l_gamma},
        {"lgamma", l_lgamma}, {"pow", l_pow}, {"copysign", l_copysign}, {"nextafter", l_nextafter},
        {"remainder", l_remainder}, {"frexp", l_frexp}, {"ldexp", l_ldexp}, {"hypot2", l_hypot2},
        {NULL, NULL},
    };
    luaL_newlib(L, fns);
    return 1;
}
