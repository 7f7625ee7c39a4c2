/* Argument helpers shared by the bindings: keyword tables, sizes and dims. */
#include <string.h>

#include "lt.h"

int lt_is_opts(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TTABLE) return 0;
    if (lua_getmetatable(L, idx)) {
        lua_pop(L, 1);
        return 0;
    }
    int empty_list = lua_rawgeti(L, idx, 1) == LUA_TNIL;
    lua_pop(L, 1);
    return empty_list;
}

void lt_check_opts(lua_State *L, int idx, const char *const *names)
{
    if (lua_type(L, idx) != LUA_TTABLE) {
        if (!lua_isnoneornil(L, idx)) luaL_typeerror(L, idx, "table of options");
        return;
    }
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        int known = 0;
        if (lua_type(L, -1) == LUA_TSTRING) {
            const char *k = lua_tostring(L, -1);
            for (const char *const *n = names; *n && !known; n++) known = !strcmp(*n, k);
        }
        if (!known) {
            const char *k = luaL_tolstring(L, -1, NULL);
            luaL_argerror(L, idx, lua_pushfstring(L, "unknown keyword '%s'", k));
        }
    }
}

int lt_opt(lua_State *L, int idx, const char *name)
{
    if (lua_type(L, idx) != LUA_TTABLE) {
        lua_pushnil(L);
        return LUA_TNIL;
    }
    return lua_getfield(L, idx, name);
}

double lt_opt_number(lua_State *L, int idx, const char *name, double def)
{
    if (lt_opt(L, idx, name) == LUA_TNIL) {
        lua_pop(L, 1);
        return def;
    }
    int ok;
    double v = lua_tonumberx(L, -1, &ok);
    if (!ok) luaL_argerror(L, idx, lua_pushfstring(L, "'%s' must be a number, got %s", name, luaL_typename(L, -1)));
    lua_pop(L, 1);
    return v;
}

int lt_opt_bool(lua_State *L, int idx, const char *name, int def)
{
    int ty = lt_opt(L, idx, name);
    if (ty == LUA_TNIL) {
        lua_pop(L, 1);
        return def;
    }
    if (ty != LUA_TBOOLEAN) luaL_argerror(L, idx, lua_pushfstring(L, "'%s' must be a boolean, got %s", name, luaL_typename(L, -1)));
    int v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

nn_dtype lt_opt_dtype(lua_State *L, int idx, nn_dtype def)
{
    if (lt_opt(L, idx, "dtype") != LUA_TNIL) {
        def = lt_todtype(L, -1);
        if (def == NN_DTYPE_NONE) luaL_argerror(L, idx, lua_pushfstring(L, "'dtype' must be a dtype, got %s", luaL_tolstring(L, -1, NULL)));
    }
    lua_pop(L, 1);
    return def;
}

nn_device lt_opt_device(lua_State *L, int idx, nn_device def)
{
    if (lt_opt(L, idx, "device") != LUA_TNIL && !lt_todevice(L, -1, &def))
        luaL_argerror(L, idx, lua_pushfstring(L, "'device' must be a device, got %s", luaL_tolstring(L, -1, NULL)));
    lua_pop(L, 1);
    return def;
}

int lt_last_positional(lua_State *L)
{
    int top = lua_gettop(L);
    while (top > 0 && lua_isnil(L, top)) top--;
    if (top > 0 && lt_is_opts(L, top)) top--;
    return top;
}

static int64_t size_entry(lua_State *L, int arg, int pos)
{
    int isint;
    lua_Integer v = lua_tointegerx(L, -1, &isint);
    if (!isint)
        luaL_argerror(L, arg, lua_pushfstring(L, "size must be a list of integers, got %s at position %d",
                                              lua_type(L, -1) == LUA_TNUMBER ? "a float" : luaL_typename(L, -1), pos));
    lua_pop(L, 1);
    return v;
}

static void too_many(lua_State *L, int arg, lua_Integer n)
{
    luaL_argerror(L, arg, lua_pushfstring(L, "tensors have at most %d dimensions, got %d", NN_MAX_DIMS, (int)n));
}

int lt_sizes(lua_State *L, int first, int last, int64_t *shape)
{
    if (first > last) return 0;
    if (first == last && lua_type(L, first) != LUA_TNUMBER) {
        const int64_t *s;
        int n = lt_tosize(L, first, &s);
        if (n >= 0) {
            if (n > NN_MAX_DIMS) too_many(L, first, n);
            memcpy(shape, s, n * sizeof *s);
            return n;
        }
        if (lua_type(L, first) == LUA_TTABLE) {
            lua_Integer len = (lua_Integer)lua_rawlen(L, first);
            if (len > NN_MAX_DIMS) too_many(L, first, len);
            for (int i = 0; i < len; i++) {
                lua_rawgeti(L, first, i + 1);
                shape[i] = size_entry(L, first, i + 1);
            }
            return (int)len;
        }
        luaL_typeerror(L, first, "integer, table or torch.Size");
    }
    if (last - first + 1 > NN_MAX_DIMS) too_many(L, first, last - first + 1);
    for (int i = first; i <= last; i++) {
        int isint;
        lua_Integer v = lua_tointegerx(L, i, &isint);
        if (!isint) {
            if (lua_type(L, i) == LUA_TNUMBER) luaL_argerror(L, i, "number has no integer representation");
            luaL_typeerror(L, i, "integer");
        }
        shape[i - first] = v;
    }
    return last - first + 1;
}

static int wrap(lua_State *L, int arg, lua_Integer d, int ndim)
{
    if (d < -1000 || d > 1000) d = 1000;
    int di = (int)d;
    if (nn_wrap_dim("dim", &di, ndim)) lt_fail(L, arg);
    return di;
}

int lt_check_dim(lua_State *L, int idx, int ndim)
{
    return wrap(L, idx, luaL_checkinteger(L, idx), ndim);
}

uint32_t lt_dim_mask(lua_State *L, int idx, int ndim)
{
    if (lua_type(L, idx) != LUA_TTABLE) {
        int d = lt_check_dim(L, idx, ndim);
        return ndim ? 1u << d : 0;
    }
    uint32_t mask = 0;
    lua_Integer len = (lua_Integer)lua_rawlen(L, idx);
    for (lua_Integer i = 1; i <= len; i++) {
        lua_rawgeti(L, idx, i);
        int isint;
        lua_Integer v = lua_tointegerx(L, -1, &isint);
        if (!isint) luaL_argerror(L, idx, lua_pushfstring(L, "dims must be integers, got %s", luaL_typename(L, -1)));
        lua_pop(L, 1);
        int d = wrap(L, idx, v, ndim);
        if (!ndim) continue;
        if (mask & (1u << d)) luaL_argerror(L, idx, lua_pushfstring(L, "dim %d appears multiple times in the list of dims", d));
        mask |= 1u << d;
    }
    return mask;
}

nn_tensor **lt_tensor_list(lua_State *L, int idx, int *n, int what)
{
    idx = lua_absindex(L, idx);
    luaL_checktype(L, idx, LUA_TTABLE);
    int len = (int)lua_rawlen(L, idx);
    nn_tensor **ts = lua_newuserdatauv(L, sizeof *ts * (size_t)(len ? len : 1), 0);
    *n = 0;
    for (int k = 0; k < len; k++) {
        lua_rawgeti(L, idx, k + 1);
        nn_tensor *t = lt_totensor(L, -1);
        if (!t) luaL_argerror(L, idx, lua_pushfstring(L, "tensor expected at index %d, got %s", k + 1, luaL_typename(L, -1)));
        lua_pop(L, 1);
        if (what == LT_GRADS && !t->grad) luaL_argerror(L, idx, lua_pushfstring(L, "the parameter at index %d has no gradient", k + 1));
        if (what == LT_TENSORS) ts[(*n)++] = t;
        else if (t->grad) ts[(*n)++] = t->grad;
    }
    return ts;
}
