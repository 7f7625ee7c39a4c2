/* The small value objects of the API: dtypes (unique objects, torch.float32 ==
 * torch.float), devices (torch.device("cuda:1")) and torch.Size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lt.h"

static const char SIZE_MT[1], DTYPE_MT[1], DEVICE_MT[1], IPAIRS_ITER[1];

static void *toudata(lua_State *L, int idx, const char *key)
{
    void *p = lua_touserdata(L, idx);
    if (!p || !lua_getmetatable(L, idx)) return NULL;
    lua_rawgetp(L, LUA_REGISTRYINDEX, key);
    int ok = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return ok ? p : NULL;
}

/* Create metatable `name`, store it under key, fill it; leaves it on the stack. */
static void new_class(lua_State *L, const char *name, const char *key, const luaL_Reg *mm)
{
    luaL_newmetatable(L, name);
    luaL_setfuncs(L, mm, 0);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}

/* ---- dtypes ---- */

typedef struct { nn_dtype dt; } dtype_obj;

void lt_push_dtype(lua_State *L, nn_dtype dt)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, LT_DTYPES);
    lua_rawgeti(L, -1, dt + 1);
    lua_remove(L, -2);
}

nn_dtype lt_todtype(lua_State *L, int idx)
{
    if (lua_type(L, idx) == LUA_TSTRING) {
        const char *s = lua_tostring(L, idx);
        if (!strncmp(s, "torch.", 6)) s += 6;
        return nn_dtype_from_name(s);
    }
    dtype_obj *o = toudata(L, idx, DTYPE_MT);
    return o ? o->dt : NN_DTYPE_NONE;
}

nn_dtype lt_check_dtype(lua_State *L, int idx)
{
    nn_dtype dt = lt_todtype(L, idx);
    if (dt == NN_DTYPE_NONE) {
        if (lua_type(L, idx) == LUA_TSTRING) luaL_argerror(L, idx, lua_pushfstring(L, "unknown dtype '%s'", lua_tostring(L, idx)));
        luaL_typeerror(L, idx, "dtype");
    }
    return dt;
}

static int dtype_tostring(lua_State *L)
{
    dtype_obj *o = lua_touserdata(L, 1);
    lua_pushfstring(L, "torch.%s", nn_dtype_name(o->dt));
    return 1;
}

static int dtype_index(lua_State *L)
{
    dtype_obj *o = lua_touserdata(L, 1);
    const char *k = luaL_checkstring(L, 2);
    if (!strcmp(k, "is_floating_point")) lua_pushboolean(L, nn_dtype_is_float(o->dt));
    else if (!strcmp(k, "is_complex")) lua_pushboolean(L, nn_dtype_is_complex(o->dt));
    else if (!strcmp(k, "is_signed")) lua_pushboolean(L, nn_dtype_is_signed(o->dt));
    else if (!strcmp(k, "itemsize")) lua_pushinteger(L, (lua_Integer)nn_dtype_size(o->dt));
    else lua_pushnil(L);
    return 1;
}

static void open_dtypes(lua_State *L, int torch)
{
    static const luaL_Reg mm[] = {{"__tostring", dtype_tostring}, {"__index", dtype_index}, {NULL, NULL}};
    new_class(L, "torch.dtype", DTYPE_MT, mm);
    int mt = lua_gettop(L);
    lua_createtable(L, NN_NDTYPES, 0);
    for (int dt = 0; dt < NN_NDTYPES; dt++) {
        dtype_obj *o = lua_newuserdatauv(L, sizeof *o, 0);
        o->dt = (nn_dtype)dt;
        lua_pushvalue(L, mt);
        lua_setmetatable(L, -2);
        lua_pushvalue(L, -1);
        lua_setfield(L, torch, nn_dtype_name(o->dt));
        lua_rawseti(L, -2, dt + 1);
    }
    lua_rawsetp(L, LUA_REGISTRYINDEX, LT_DTYPES);
    static const char *const aliases[][2] = {
        {"float", "float32"}, {"double", "float64"}, {"half", "float16"}, {"long", "int64"}, {"int", "int32"},
        {"short", "int16"}, {"cfloat", "complex64"}, {"cdouble", "complex128"},
    };
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++) {
        lua_getfield(L, torch, aliases[i][1]);
        lua_setfield(L, torch, aliases[i][0]);
    }
    lua_pop(L, 1);
}

/* ---- devices ---- */

typedef struct { nn_device d; } device_obj;

void lt_push_device(lua_State *L, nn_device d)
{
    device_obj *o = lua_newuserdatauv(L, sizeof *o, 0);
    o->d = d;
    lua_rawgetp(L, LUA_REGISTRYINDEX, DEVICE_MT);
    lua_setmetatable(L, -2);
}

/* "cpu", "cuda", "cuda:1", "cpu:0"; 0 if s is not a device string */
static int parse_device(const char *s, nn_device *d)
{
    const char *rest;
    if (!strncmp(s, "cpu", 3)) d->type = NN_CPU, rest = s + 3;
    else if (!strncmp(s, "cuda", 4)) d->type = NN_CUDA, rest = s + 4;
    else if (!strncmp(s, "meta", 4)) d->type = NN_META, rest = s + 4;
    else return 0;
    d->index = -1;
    if (!*rest) return 1;
    if (*rest != ':' || !rest[1]) return 0;
    int v = 0;
    for (const char *p = rest + 1; *p; p++) {
        if (*p < '0' || *p > '9' || v > 1000) return 0;
        v = v * 10 + (*p - '0');
    }
    if (v > 127) return 0;
    d->index = (int8_t)v;
    return 1;
}

int lt_todevice(lua_State *L, int idx, nn_device *d)
{
    switch (lua_type(L, idx)) {
    case LUA_TSTRING:
        return parse_device(lua_tostring(L, idx), d);
    case LUA_TNUMBER: {
        int isint;
        lua_Integer i = lua_tointegerx(L, idx, &isint);
        if (!isint || i < 0 || i > 127) return 0;
        d->type = NN_CUDA;
        d->index = (int8_t)i;
        return 1;
    }
    default: {
        device_obj *o = toudata(L, idx, DEVICE_MT);
        if (o) *d = o->d;
        return o != NULL;
    }
    }
}

nn_device lt_check_device(lua_State *L, int idx)
{
    nn_device d;
    if (!lt_todevice(L, idx, &d)) {
        if (lua_type(L, idx) == LUA_TSTRING)
            luaL_argerror(L, idx, lua_pushfstring(L, "expected one of cpu, cuda, meta device type at start of device string: %s", lua_tostring(L, idx)));
        if (lua_type(L, idx) == LUA_TNUMBER) luaL_argerror(L, idx, "device index must be a non-negative integer");
        luaL_typeerror(L, idx, "device");
    }
    return d;
}

static int device_new(lua_State *L)
{
    nn_device d = lt_check_device(L, 1);
    if (!lua_isnoneornil(L, 2)) {
        lua_Integer i = luaL_checkinteger(L, 2);
        if (d.index >= 0) luaL_argerror(L, 1, "type (string) must not include an index because index was passed explicitly");
        luaL_argcheck(L, i >= 0 && i <= 127, 2, "device index must be a non-negative integer");
        d.index = (int8_t)i;
    }
    lt_push_device(L, d);
    return 1;
}

static const char *devtype_name(int type) { return type == NN_CPU ? "cpu" : type == NN_META ? "meta" : "cuda"; }

static int device_tostring(lua_State *L)
{
    device_obj *o = lua_touserdata(L, 1);
    const char *type = devtype_name(o->d.type);
    if (o->d.index < 0) lua_pushstring(L, type);
    else lua_pushfstring(L, "%s:%d", type, (int)o->d.index);
    return 1;
}

static int device_repr(lua_State *L)
{
    device_obj *o = lua_touserdata(L, 1);
    const char *type = devtype_name(o->d.type);
    if (o->d.index < 0) lua_pushfstring(L, "device(type='%s')", type);
    else lua_pushfstring(L, "device(type='%s', index=%d)", type, (int)o->d.index);
    return 1;
}

static int device_eq(lua_State *L)
{
    device_obj *a = toudata(L, 1, DEVICE_MT), *b = toudata(L, 2, DEVICE_MT);
    lua_pushboolean(L, a && b && a->d.type == b->d.type && a->d.index == b->d.index);
    return 1;
}

static int device_index(lua_State *L)
{
    device_obj *o = lua_touserdata(L, 1);
    const char *k = luaL_checkstring(L, 2);
    if (!strcmp(k, "type")) lua_pushstring(L, devtype_name(o->d.type));
    else if (!strcmp(k, "index") && o->d.index >= 0) lua_pushinteger(L, o->d.index);
    else lua_pushnil(L);
    return 1;
}

/* ---- torch.Size ---- */

typedef struct { int n; int64_t d[]; } size_obj;

void lt_push_size(lua_State *L, int ndim, const int64_t *shape)
{
    size_obj *o = lua_newuserdatauv(L, sizeof *o + ndim * sizeof *shape, 0);
    o->n = ndim;
    if (ndim) memcpy(o->d, shape, ndim * sizeof *shape);
    lua_rawgetp(L, LUA_REGISTRYINDEX, SIZE_MT);
    lua_setmetatable(L, -2);
}

int lt_tosize(lua_State *L, int idx, const int64_t **shape)
{
    size_obj *o = toudata(L, idx, SIZE_MT);
    if (!o) return -1;
    *shape = o->d;
    return o->n;
}

static size_obj *check_size(lua_State *L, int idx)
{
    size_obj *o = toudata(L, idx, SIZE_MT);
    if (!o) luaL_typeerror(L, idx, "torch.Size");
    return o;
}

static int size_new(lua_State *L)
{
    int64_t buf[64];
    if (lua_isnoneornil(L, 1)) {
        lt_push_size(L, 0, NULL);
        return 1;
    }
    const int64_t *s;
    int n = lt_tosize(L, 1, &s);
    if (n >= 0) {
        lt_push_size(L, n, s);
        return 1;
    }
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer len = (lua_Integer)lua_rawlen(L, 1);
    luaL_argcheck(L, len <= 64, 1, "too many dimensions");
    for (lua_Integer i = 0; i < len; i++) {
        lua_rawgeti(L, 1, i + 1);
        int isint;
        buf[i] = lua_tointegerx(L, -1, &isint);
        if (!isint) luaL_argerror(L, 1, lua_pushfstring(L, "torch.Size takes integers, got %s at position %d", luaL_typename(L, -1), (int)i + 1));
        lua_pop(L, 1);
    }
    lt_push_size(L, (int)len, buf);
    return 1;
}

static int size_tostring(lua_State *L)
{
    size_obj *o = check_size(L, 1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "torch.Size([");
    for (int i = 0; i < o->n; i++) {
        char num[32];
        snprintf(num, sizeof num, i ? ", %lld" : "%lld", (long long)o->d[i]);
        luaL_addstring(&b, num);
    }
    luaL_addstring(&b, "])");
    luaL_pushresult(&b);
    return 1;
}

static int size_len(lua_State *L)
{
    lua_pushinteger(L, check_size(L, 1)->n);
    return 1;
}

static int size_eq(lua_State *L)
{
    size_obj *a = toudata(L, 1, SIZE_MT), *b = toudata(L, 2, SIZE_MT);
    lua_pushboolean(L, a && b && a->n == b->n && !memcmp(a->d, b->d, a->n * sizeof *a->d));
    return 1;
}

static int size_numel(lua_State *L)
{
    size_obj *o = check_size(L, 1);
    int64_t n = 1;
    for (int i = 0; i < o->n; i++) n *= o->d[i];
    lua_pushinteger(L, n);
    return 1;
}

static int size_totable(lua_State *L)
{
    size_obj *o = check_size(L, 1);
    lua_createtable(L, o->n, 0);
    for (int i = 0; i < o->n; i++) {
        lua_pushinteger(L, o->d[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int size_dim(lua_State *L)
{
    lua_pushinteger(L, check_size(L, 1)->n);
    return 1;
}

/* one bound of a slice "a:b:c" from s up to end (empty: none); 0 when it is not an integer */
static int slice_bound(const char *s, const char *end, int *given, long long *v)
{
    while (s < end && *s == ' ') s++;
    while (end > s && end[-1] == ' ') end--;
    *given = s < end;
    if (!*given) return 1;
    char buf[32], *stop;
    if (end - s >= (long)sizeof buf) return 0;
    memcpy(buf, s, end - s);
    buf[end - s] = 0;
    *v = strtoll(buf, &stop, 10);
    return *stop == 0 && stop != buf;
}

/* s["1:"], s[":-1"], s["::-1"]: a torch.Size, as Python's size[1:] */
static int size_slice(lua_State *L, size_obj *o, const char *key)
{
    long long v[3] = {0, o->n, 1};
    int given[3] = {0, 0, 0}, k = 0;
    const char *p = key;
    for (; k < 3; k++) {
        const char *colon = strchr(p, ':');
        const char *end = colon ? colon : p + strlen(p);
        if (!slice_bound(p, end, &given[k], &v[k]))
            return luaL_error(L, "torch.Size: bad slice \"%s\" (integers and ':' as in Python's size[1:])", key);
        if (!given[k] && k == 2) v[k] = 1;
        if (!colon) break;
        p = colon + 1;
    }
    if (k == 3) return luaL_error(L, "torch.Size: bad slice \"%s\" (integers and ':' as in Python's size[1:])", key);
    if (v[2] == 0) return luaL_error(L, "torch.Size: slice step cannot be zero");
    long long lo = v[2] > 0 ? 0 : -1, hi = v[2] > 0 ? o->n : o->n - 1; /* Python's clamping */
    if (!given[0]) v[0] = v[2] > 0 ? 0 : o->n - 1;
    if (!given[1]) v[1] = v[2] > 0 ? o->n : -1;
    for (int j = 0; j < 2; j++) {
        if (!given[j]) continue;
        if (v[j] < 0) v[j] += o->n;
        if (v[j] < lo) v[j] = lo;
        if (v[j] > hi) v[j] = hi;
    }
    int64_t buf[128]; /* a Size has at most 128 dims (size_concat) */
    int m = 0;
    for (long long i = v[0]; v[2] > 0 ? i < v[1] : i > v[1]; i += v[2]) buf[m++] = o->d[i];
    lt_push_size(L, m, buf);
    return 1;
}

/* Is the caller Lua's ipairs iterator? (ipairs asks s[1], s[2], ... until nil.) */
static int called_by_ipairs(lua_State *L)
{
    lua_Debug ar;
    if (!lua_getstack(L, 1, &ar) || !lua_getinfo(L, "f", &ar)) return 0;
    lua_rawgetp(L, LUA_REGISTRYINDEX, IPAIRS_ITER);
    int yes = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return yes;
}

/* s[i] (0-based, negative from the end), s["a:b"] (a torch.Size) or a method; upvalue 1: the
 * methods. Under ipairs, s[1], s[2], ... are the dims in order and s[n + 1] ends the loop:
 * ipairs(s) walks s:totable(), as Python's `for d in size` (pairs(s) gives 0-based positions). */
static int size_index(lua_State *L)
{
    size_obj *o = check_size(L, 1);
    if (lua_type(L, 2) == LUA_TSTRING) {
        const char *key = lua_tostring(L, 2);
        if (strchr(key, ':')) return size_slice(L, o, key);
        lua_pushvalue(L, 2);
        lua_rawget(L, lua_upvalueindex(1));
        return 1;
    }
    int isint;
    lua_Integer i = lua_tointegerx(L, 2, &isint);
    if (!isint) return luaL_error(L, "torch.Size indices must be integers, not %s", luaL_typename(L, 2));
    if (called_by_ipairs(L)) {
        if (i < 1 || i > o->n) return 0;
        lua_pushinteger(L, o->d[i - 1]);
        return 1;
    }
    if (i < 0) i += o->n;
    if (i < 0 || i >= o->n) return luaL_error(L, "torch.Size index %d out of range for %d dims", (int)lua_tointeger(L, 2), o->n);
    lua_pushinteger(L, o->d[i]);
    return 1;
}

/* a .. b: concatenation of sizes (Python's tuple +) */
static int size_concat(lua_State *L)
{
    size_obj *a = check_size(L, 1), *b = check_size(L, 2);
    int64_t buf[128];
    luaL_argcheck(L, a->n + b->n <= 128, 2, "too many dimensions");
    memcpy(buf, a->d, a->n * sizeof *buf);
    memcpy(buf + a->n, b->d, b->n * sizeof *buf);
    lt_push_size(L, a->n + b->n, buf);
    return 1;
}

/* pairs(s): (0, d0), (1, d1), ... as Python's enumerate(size) */
static int size_next(lua_State *L)
{
    size_obj *o = check_size(L, 1);
    lua_Integer i = lua_tointeger(L, 2) + 1;
    if (i >= o->n) return 0;
    lua_pushinteger(L, i);
    lua_pushinteger(L, o->d[i]);
    return 2;
}

static int size_pairs(lua_State *L)
{
    check_size(L, 1);
    lua_pushcfunction(L, size_next);
    lua_pushvalue(L, 1);
    lua_pushinteger(L, -1);
    return 3;
}

static int size_newindex(lua_State *L)
{
    return luaL_error(L, "'torch.Size' object does not support item assignment");
}

static void open_size(lua_State *L, int torch)
{
    static const luaL_Reg mm[] = {
        {"__tostring", size_tostring}, {"__len", size_len}, {"__eq", size_eq},
        {"__concat", size_concat}, {"__newindex", size_newindex}, {"__pairs", size_pairs}, {NULL, NULL},
    };
    /* ipairs' iterator, for size_index to recognise its caller */
    lua_getglobal(L, "ipairs");
    lua_newtable(L);
    lua_call(L, 1, 1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, IPAIRS_ITER);
    static const luaL_Reg methods[] = {
        {"numel", size_numel}, {"totable", size_totable}, {"dim", size_dim}, {NULL, NULL},
    };
    new_class(L, "torch.Size", SIZE_MT, mm);
    luaL_newlib(L, methods);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__methods");
    lua_pushcclosure(L, size_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    lua_pushcfunction(L, size_new);
    lua_setfield(L, torch, "Size");
}

void lt_open_types(lua_State *L)
{
    int torch = lua_gettop(L);
    open_dtypes(L, torch);
    static const luaL_Reg mm[] = {
        {"__tostring", device_tostring}, {"__repr", device_repr}, {"__eq", device_eq},
        {"__index", device_index}, {NULL, NULL},
    };
    new_class(L, "torch.device", DEVICE_MT, mm);
    lua_pop(L, 1);
    lua_pushcfunction(L, device_new);
    lua_setfield(L, torch, "device");
    open_size(L, torch);
    lua_settop(L, torch);
}
