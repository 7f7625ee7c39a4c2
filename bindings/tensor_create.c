/* torch functions that make tensors (torch.tensor from Lua tables, zeros, rand,
 * arange, ..., empty_strided, cat, stack) and the library-wide settings (seed, default dtype,
 * default device, print options, CPU threads). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "lt.h"

#include "autograd.h"
#include "complex_ops.h"
#include "device.h"
#include "memory_format.h"

/* ---- the {dtype=, device=, requires_grad=} of every factory ---- */

typedef struct {
    nn_dtype dt;
    nn_device dev;
    bool requires_grad, pin; /* pin: in page-locked host memory (pin_memory=true) */
} create_opts;

static const char *const create_keys[] = {"dtype", "device", "requires_grad", "pin_memory", "layout", NULL};
static const char *const random_keys[] = {"dtype", "device", "requires_grad", "pin_memory", "layout", "generator", NULL};
static const char *const like_keys[] = {"dtype", "device", "requires_grad", "pin_memory", "layout", "memory_format", NULL};

/* torch.set_default_device: where the factories put a tensor when no device= is given (the
 * *_like ones and torch.tensor(t) follow their input instead) */
static nn_device default_device = {NN_CPU, -1};

nn_device lt_default_device(void) { return default_device; }

static void read_opts(lua_State *L, int o, const char *const *keys, nn_dtype dt, nn_device dev, create_opts *c)
{
    lt_check_opts(L, o, keys);
    c->dt = lt_opt_dtype(L, o, dt);
    c->dev = lt_opt_device(L, o, dev);
    c->requires_grad = lt_opt_bool(L, o, "requires_grad", 0);
    c->pin = lt_opt_bool(L, o, "pin_memory", 0);
}

static void read_create(lua_State *L, int o, nn_dtype dt, nn_device dev, create_opts *c) { read_opts(L, o, create_keys, dt, dev, c); }

/* Push t (a new tensor from a factory) after applying pin_memory and requires_grad. */
static int finish(lua_State *L, nn_tensor *t, const create_opts *c, int arg)
{
    if (t && c->pin) {
        nn_tensor *p = nn_pin_memory(t);
        nn_release(t);
        t = p;
    }
    if (!t) return lt_fail(L, arg);
    if (c->requires_grad && nn_requires_grad_(t, true)) {
        nn_release(t);
        return lt_fail(L, 0);
    }
    lt_push(L, t);
    return 1;
}

/* ---- zeros, ones, empty, rand, randn: sizes then options ---- */

enum { F_ZEROS, F_ONES, F_EMPTY, F_RAND, F_RANDN };

static nn_tensor *make(int kind, int n, const int64_t *shape, nn_dtype dt, nn_device dev)
{
    switch (kind) {
    case F_ZEROS: return nn_zeros(n, shape, dt, dev);
    case F_ONES: return nn_ones(n, shape, dt, dev);
    case F_EMPTY: return nn_empty(n, shape, dt, dev);
    case F_RAND: return nn_rand(n, shape, dt, dev);
    default: return nn_randn(n, shape, dt, dev);
    }
}

static int t_factory(lua_State *L)
{
    int kind = (int)lua_tointeger(L, lua_upvalueindex(1));
    int last = lt_last_positional(L);
    int64_t shape[NN_MAX_DIMS];
    int n = lt_sizes(L, 1, last, shape);
    create_opts c;
    bool random = kind == F_RAND || kind == F_RANDN;
    read_opts(L, last + 1, random ? random_keys : create_keys, NN_DTYPE_NONE, default_device, &c);
    nn_generator *g = random ? lt_opt_generator(L, last + 1) : NULL, *prev = lt_generator_begin(g);
    nn_tensor *t = make(kind, n, shape, c.dt, c.dev);
    lt_generator_end(g, prev);
    return finish(L, t, &c, 1);
}

/* An empty tensor shaped like t in memory format f. PyTorch's preserve_format: t's own strides
 * where t is dense and non-overlapping, else the format t suggests (channels-last or contiguous). */
static nn_tensor *empty_like(const nn_tensor *t, nn_memory_format f, nn_dtype dt, nn_device dev)
{
    if (f == NN_PRESERVE_FORMAT) {
        if (nn_is_dense(t)) return nn_empty_strided(t->ndim, t->shape, t->strides, dt, dev);
        f = nn_suggest_memory_format(t);
    }
    return nn_empty_format(t->ndim, t->shape, f, dt, dev);
}

/* zeros_like(t, {dtype=, device=, requires_grad=, memory_format=torch.preserve_format}) and friends */
static int t_like(lua_State *L)
{
    int kind = (int)lua_tointeger(L, lua_upvalueindex(1));
    nn_tensor *t = lt_check(L, 1);
    int o = lt_last_positional(L) + 1, mf;
    create_opts c;
    read_opts(L, o, like_keys, t->dtype, t->storage->device, &c);
    mf = lt_opt_memory_format(L, o);
    nn_tensor *r = empty_like(t, mf < 0 ? NN_PRESERVE_FORMAT : (nn_memory_format)mf, c.dt, c.dev);
    if (r && kind != F_EMPTY && nn_is_contiguous(r)) { /* the plain factory, in one pass */
        nn_release(r);
        r = make(kind, t->ndim, t->shape, c.dt, c.dev);
    } else if (r && kind != F_EMPTY) { /* the values drawn or filled in logical order, into the layout */
        nn_tensor *v = kind == F_ZEROS || kind == F_ONES ? NULL : make(kind, t->ndim, t->shape, c.dt, c.dev);
        nn_status st = kind == F_ZEROS ? nn_zero_(r) : kind == F_ONES ? nn_fill_(r, 1) : v ? nn_copy_(r, v) : nn_last_status();
        nn_release(v);
        if (st) {
            nn_release(r);
            r = NULL;
        }
    }
    return finish(L, r, &c, 1);
}

/* The dtype PyTorch infers for a fill value: bool, int64 or the default float. */
static nn_dtype value_dtype(lua_State *L, int idx)
{
    double re, im;
    if (lua_type(L, idx) == LUA_TBOOLEAN) return NN_BOOL;
    if (lt_tocomplex(L, idx, &re, &im)) return nn_dtype_to_complex(nn_default_dtype());
    luaL_checknumber(L, idx);
    return lua_isinteger(L, idx) ? NN_I64 : nn_default_dtype();
}

static double value_of(lua_State *L, int idx)
{
    return lua_type(L, idx) == LUA_TBOOLEAN ? lua_toboolean(L, idx) : lua_tonumber(L, idx);
}

/* full of a complex value: zeros, then the fill */
static nn_tensor *full_value(lua_State *L, int idx, int n, const int64_t *shape, nn_dtype dt, nn_device dev)
{
    double re, im;
    if (!lt_tocomplex(L, idx, &re, &im)) return nn_full(n, shape, value_of(L, idx), dt, dev);
    nn_tensor *t = nn_zeros(n, shape, dt, dev);
    if (t && nn_fill_complex_(t, re, im)) {
        nn_release(t);
        return NULL;
    }
    return t;
}

static int t_full(lua_State *L)
{
    int64_t shape[NN_MAX_DIMS];
    int n = lt_sizes(L, 1, 1, shape);
    create_opts c;
    read_create(L, 3, value_dtype(L, 2), default_device, &c);
    return finish(L, full_value(L, 2, n, shape, c.dt, c.dev), &c, 2);
}

static int t_full_like(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    value_dtype(L, 2);
    create_opts c;
    read_opts(L, 3, like_keys, t->dtype, t->storage->device, &c);
    int mf = lt_opt_memory_format(L, 3);
    nn_tensor *r = empty_like(t, mf < 0 ? NN_PRESERVE_FORMAT : (nn_memory_format)mf, c.dt, c.dev);
    double re, im;
    if (r && (lt_tocomplex(L, 2, &re, &im) ? nn_fill_complex_(r, re, im) : nn_fill_(r, value_of(L, 2)))) {
        nn_release(r);
        r = NULL;
    }
    return finish(L, r, &c, 2);
}

/* randint(low, high, size, opts) or randint(high, size, opts) */
static int t_randint(lua_State *L)
{
    int last = lt_last_positional(L);
    lua_Integer low = 0, high;
    int size_at;
    if (last == 2) high = luaL_checkinteger(L, 1), size_at = 2;
    else low = luaL_checkinteger(L, 1), high = luaL_checkinteger(L, 2), size_at = 3;
    int64_t shape[NN_MAX_DIMS];
    if (lua_type(L, size_at) == LUA_TNUMBER) luaL_typeerror(L, size_at, "table or torch.Size");
    int n = lt_sizes(L, size_at, size_at, shape);
    create_opts c;
    read_opts(L, last + 1, random_keys, NN_DTYPE_NONE, default_device, &c);
    nn_generator *g = lt_opt_generator(L, last + 1), *prev = lt_generator_begin(g);
    nn_tensor *t = nn_randint(low, high, n, shape, c.dt, c.dev);
    lt_generator_end(g, prev);
    return finish(L, t, &c, 2);
}

/* normal(mean, std, size, opts) */
static int t_normal(lua_State *L)
{
    double mean = luaL_checknumber(L, 1), std = luaL_checknumber(L, 2);
    int last = lt_last_positional(L);
    int64_t shape[NN_MAX_DIMS];
    int n = lt_sizes(L, 3, last, shape);
    create_opts c;
    read_opts(L, last + 1, random_keys, NN_DTYPE_NONE, default_device, &c);
    nn_generator *g = lt_opt_generator(L, last + 1), *prev = lt_generator_begin(g);
    nn_tensor *t = nn_normal(mean, std, n, shape, c.dt, c.dev);
    lt_generator_end(g, prev);
    return finish(L, t, &c, 2);
}

/* arange(end) / arange(start, end[, step]) */
static int t_arange(lua_State *L)
{
    int last = lt_last_positional(L);
    if (last < 1 || last > 3) return luaL_error(L, "arange expects end, or start, end and an optional step");
    double v[3] = {0, 0, 1};
    bool is_int = true;
    for (int i = 1; i <= last; i++) {
        luaL_checknumber(L, i);
        is_int = is_int && lua_isinteger(L, i);
    }
    if (last == 1) v[1] = lua_tonumber(L, 1);
    else for (int i = 1; i <= last; i++) v[i - 1] = lua_tonumber(L, i);
    create_opts c;
    read_create(L, last + 1, NN_DTYPE_NONE, default_device, &c);
    return finish(L, nn_arange(v[0], v[1], v[2], is_int, c.dt, c.dev), &c, 1);
}

static int t_linspace(lua_State *L)
{
    double a = luaL_checknumber(L, 1), b = luaL_checknumber(L, 2);
    lua_Integer steps = luaL_checkinteger(L, 3);
    create_opts c;
    read_create(L, 4, NN_DTYPE_NONE, default_device, &c);
    return finish(L, nn_linspace(a, b, steps, c.dt, c.dev), &c, 3);
}

static int t_eye(lua_State *L)
{
    int last = lt_last_positional(L);
    lua_Integer n = luaL_checkinteger(L, 1), m = last >= 2 ? luaL_checkinteger(L, 2) : -1;
    create_opts c;
    read_create(L, last + 1, NN_DTYPE_NONE, default_device, &c);
    return finish(L, nn_eye(n, m, c.dt, c.dev), &c, 1);
}

/* empty_strided(size, stride, {dtype=, device=, requires_grad=}): uninitialised, with storage for
 * exactly the elements the strides reach */
static int t_empty_strided(lua_State *L)
{
    int64_t shape[NN_MAX_DIMS], strides[NN_MAX_DIMS];
    int n = lt_sizes(L, 1, 1, shape);
    if (lt_sizes(L, 2, 2, strides) != n)
        return luaL_argerror(L, 2, lua_pushfstring(L, "empty_strided: mismatch in length of strides and shape (%d and %d)",
                                                   lt_sizes(L, 2, 2, strides), n));
    for (int i = 0; i < n; i++)
        if (strides[i] < 0) return luaL_argerror(L, 2, "empty_strided: negative strides are not supported");
    create_opts c;
    read_create(L, 3, NN_DTYPE_NONE, default_device, &c);
    return finish(L, nn_empty_strided(n, shape, strides, c.dt, c.dev), &c, 1);
}

/* ---- torch.tensor(data, opts) from nested Lua tables ---- */

typedef struct {
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    int kind;        /* 0 bool, 1 integer, 2 float, 3 complex: the widest element seen */
    int path[NN_MAX_DIMS + 1];
} nest;

static const char *where_str(lua_State *L, const nest *s, int depth)
{
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "data");
    for (int i = 0; i < depth; i++) {
        char part[24];
        snprintf(part, sizeof part, "[%d]", s->path[i]);
        luaL_addstring(&b, part);
    }
    luaL_pushresult(&b);
    return lua_tostring(L, -1);
}

/* A leaf: number, boolean or one-element tensor. Returns its kind, or -1. */
static int leaf_kind(lua_State *L, int idx)
{
    switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN: return 0;
    case LUA_TNUMBER: return lua_isinteger(L, idx) ? 1 : 2;
    case LUA_TUSERDATA: {
        double re, im;
        if (lt_tocomplex(L, idx, &re, &im)) return 3;
        nn_tensor *t = lt_totensor(L, idx);
        if (!t || nn_numel(t) != 1) return -1;
        return t->dtype == NN_BOOL ? 0 : nn_dtype_is_integral(t->dtype) ? 1 : nn_dtype_is_complex(t->dtype) ? 3 : 2;
    }
    default: return -1;
    }
}

/* Pass 1: check that the value on top has the shape below `depth`; find the kind. */
static void check_nest(lua_State *L, nest *s, int depth)
{
    if (depth == s->ndim) {
        int k = leaf_kind(L, -1);
        if (k < 0) {
            const char *w = where_str(L, s, depth);
            luaL_argerror(L, 1, lua_pushfstring(L, "expected a number at %s, got %s", w,
                                                lua_istable(L, -2) ? "a table (ragged nesting)" : luaL_typename(L, -2)));
        }
        if (k > s->kind) s->kind = k;
        return;
    }
    if (!lua_istable(L, -1)) {
        const char *w = where_str(L, s, depth);
        luaL_argerror(L, 1, lua_pushfstring(L, "ragged nested table: expected a table of length %d at %s, got %s",
                                            (int)s->shape[depth], w, luaL_typename(L, -2)));
    }
    lua_Integer len = (lua_Integer)lua_rawlen(L, -1);
    if (len != s->shape[depth]) {
        const char *w = where_str(L, s, depth);
        luaL_argerror(L, 1, lua_pushfstring(L, "ragged nested table: expected a table of length %d at %s, got length %d",
                                            (int)s->shape[depth], w, (int)len));
    }
    luaL_checkstack(L, 4, "nesting too deep");
    for (lua_Integer i = 1; i <= len; i++) {
        s->path[depth] = (int)i;
        lua_rawgeti(L, -1, i);
        check_nest(L, s, depth + 1);
        lua_pop(L, 1);
    }
}

/* Pass 2: write the leaves in row-major order. */
static void fill_nest(lua_State *L, const nest *s, int depth, char **p, nn_dtype dt)
{
    if (depth == s->ndim) {
        size_t es = nn_dtype_size(dt);
        double re, im;
        if (lt_tocomplex(L, -1, &re, &im)) nn_store_c(*p, dt, re, im);
        else if (lua_type(L, -1) == LUA_TBOOLEAN) nn_store_i64(*p, dt, lua_toboolean(L, -1));
        else if (lua_isinteger(L, -1)) nn_store_i64(*p, dt, lua_tointeger(L, -1));
        else if (lua_type(L, -1) == LUA_TNUMBER) nn_store_f64(*p, dt, lua_tonumber(L, -1));
        else {
            nn_tensor *t = lt_totensor(L, -1);
            int64_t zero[NN_MAX_DIMS] = {0};
            if (t->storage->device.type != NN_CPU) { /* rare: fetch the one value */
                nn_tensor *h = nn_to_device(t, NN_DEVICE_CPU);
                if (h) nn_store_f64(*p, dt, nn_get_f64(h, zero));
                nn_release(h);
            } else if (nn_dtype_is_complex(t->dtype)) {
                nn_load_c((const char *)nn_data(t), t->dtype, &re, &im);
                nn_store_c(*p, dt, re, im);
            } else if (nn_dtype_is_integral(t->dtype)) nn_store_i64(*p, dt, nn_get_i64(t, zero));
            else nn_store_f64(*p, dt, nn_get_f64(t, zero));
        }
        *p += es;
        return;
    }
    for (int64_t i = 1; i <= s->shape[depth]; i++) {
        lua_rawgeti(L, -1, i);
        fill_nest(L, s, depth + 1, p, dt);
        lua_pop(L, 1);
    }
}

static int t_tensor(lua_State *L)
{
    create_opts c;
    luaL_checkany(L, 1);
    nn_tensor *src = lt_totensor(L, 1);
    if (src) { /* a copy, as PyTorch's torch.tensor(t) */
        read_create(L, 2, src->dtype, src->storage->device, &c);
        nn_tensor *a = nn_to_device(src, c.dev), *b = a ? nn_to_dtype(a, c.dt) : NULL;
        nn_tensor *r = b == src ? nn_clone(b) : nn_retain(b);
        nn_release(a);
        nn_release(b);
        return finish(L, r, &c, 1);
    }
    nest s = {0};
    lua_settop(L, 2);
    lua_pushvalue(L, 1);
    while (lua_istable(L, -1)) { /* the shape, from the first elements */
        if (s.ndim == NN_MAX_DIMS) return luaL_argerror(L, 1, "too many dimensions");
        lua_Integer len = (lua_Integer)lua_rawlen(L, -1);
        s.shape[s.ndim++] = len;
        if (!len) break;
        lua_rawgeti(L, -1, 1);
        lua_remove(L, -2);
    }
    lua_settop(L, 2);
    lua_pushvalue(L, 1);
    check_nest(L, &s, 0);
    int64_t numel = 1;
    for (int i = 0; i < s.ndim; i++) numel *= s.shape[i];
    if (numel == 0) s.kind = 2;
    nn_dtype inferred = s.kind == 0 ? NN_BOOL : s.kind == 1 ? NN_I64 : s.kind == 3 ? nn_dtype_to_complex(nn_default_dtype())
                                                                                   : nn_default_dtype();
    read_create(L, 2, inferred, default_device, &c);
    nn_tensor *t = nn_empty(s.ndim, s.shape, c.dt, NN_DEVICE_CPU);
    if (!t) return lt_fail(L, 0);
    lt_push(L, t); /* owned by the GC while we fill it */
    lua_pushvalue(L, 1);
    char *p = nn_data(t);
    fill_nest(L, &s, 0, &p, c.dt);
    lua_pop(L, 1);
    if (c.dev.type != NN_CPU) {
        nn_tensor *d = nn_to_device(t, c.dev);
        if (!d) return lt_fail(L, 0);
        return finish(L, d, &c, 0);
    }
    if (c.requires_grad && nn_requires_grad_(t, true)) return lt_fail(L, 0);
    return 1;
}

/* ---- cat, stack ---- */

/* The Lua list at arg 1 as tensors (borrowed; the list keeps them alive). */
static int tensor_list(lua_State *L, nn_tensor ***out)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
    nn_tensor **ts = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *ts, 0);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, 1, i);
        ts[i - 1] = lt_totensor(L, -1);
        if (!ts[i - 1]) luaL_argerror(L, 1, lua_pushfstring(L, "expected a list of tensors, got %s at position %d", luaL_typename(L, -1), (int)i));
        lua_pop(L, 1);
    }
    *out = ts;
    return (int)n;
}

static int cat_or_stack(lua_State *L, bool stack)
{
    static const char *const keys[] = {"dim", NULL};
    int last = lt_last_positional(L);
    lt_check_opts(L, last + 1, keys);
    lua_Integer dim = last >= 2 ? luaL_checkinteger(L, 2) : 0;
    if (lt_opt(L, last + 1, "dim") != LUA_TNIL) dim = luaL_checkinteger(L, -1);
    lua_pop(L, 1);
    nn_tensor **ts;
    int n = tensor_list(L, &ts);
    if (dim < -1000 || dim > 1000) dim = 1000;
    lt_push_or_fail(L, (stack ? nn_stack : nn_cat)(ts, n, (int)dim), 1);
    return 1;
}

static int t_cat(lua_State *L) { return cat_or_stack(L, false); }
static int t_stack(lua_State *L) { return cat_or_stack(L, true); }

/* ---- settings ---- */

static int t_manual_seed(lua_State *L)
{
    nn_manual_seed((uint64_t)luaL_checkinteger(L, 1));
    return 0;
}

static int t_initial_seed(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)nn_initial_seed());
    return 1;
}

/* torch.get_rng_state(): the generator's (seed, offset) as an int64 tensor; set_rng_state(t) puts it back.
 * One generator serves the CPU and every GPU (counter-based Philox), so torch.cuda's are the same. */
static int t_get_rng_state(lua_State *L)
{
    uint64_t seed, offset;
    nn_rng_state(&seed, &offset);
    int64_t shape[1] = {2};
    nn_tensor *t = nn_empty(1, shape, NN_I64, NN_DEVICE_CPU);
    if (!t) return lt_fail(L, 0);
    ((int64_t *)nn_data(t))[0] = (int64_t)seed;
    ((int64_t *)nn_data(t))[1] = (int64_t)offset;
    lt_push(L, t);
    return 1;
}

static int t_set_rng_state(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (t->dtype != NN_I64 || nn_numel(t) != 2 || t->storage->device.type != NN_CPU)
        return luaL_argerror(L, 1, "expected the int64 tensor of 2 elements that torch.get_rng_state() returns");
    nn_tensor *c = nn_contiguous(t);
    if (!c) return lt_fail(L, 1);
    nn_set_rng_state((uint64_t)((int64_t *)nn_data(c))[0], (uint64_t)((int64_t *)nn_data(c))[1]);
    nn_release(c);
    return 0;
}

static int t_is_tensor(lua_State *L)
{
    lua_pushboolean(L, lt_is_tensor(L, 1));
    return 1;
}

static int t_get_default_dtype(lua_State *L)
{
    lt_push_dtype(L, nn_default_dtype());
    return 1;
}

static int t_set_default_dtype(lua_State *L)
{
    nn_dtype dt = lt_check_dtype(L, 1);
    if (!nn_dtype_is_float(dt)) return luaL_argerror(L, 1, "only floating-point types are supported as the default type");
    nn_set_default_dtype(dt);
    return 0;
}

/* As PyTorch's: a CUDA default set without an index reads back as the current device (cuda:0). */
static int t_get_default_device(lua_State *L)
{
    nn_device d = default_device;
    if (d.type == NN_CUDA && d.index < 0 && nn_gpu) d.index = (int8_t)nn_gpu->current_device();
    lt_push_device(L, d);
    return 1;
}

/* set_default_device(device or nil): nil goes back to the CPU. A CUDA device is taken even where
 * there is no GPU, as in PyTorch: the factories then fail. */
static int t_set_default_device(lua_State *L)
{
    default_device = lua_isnoneornil(L, 1) ? NN_DEVICE_CPU : lt_check_device(L, 1);
    return 0;
}

static int t_get_num_threads(lua_State *L)
{
    lua_pushinteger(L, nn_cpu_num_threads());
    return 1;
}

static int t_set_num_threads(lua_State *L)
{
    lua_Integer n = luaL_checkinteger(L, 1);
    if (n < 1 || n > INT32_MAX) return luaL_argerror(L, 1, lua_pushfstring(L, "set_num_threads: number of threads must be positive, got %I", n));
    nn_cpu_set_num_threads((int)n);
    return 0;
}

static int t_set_printoptions(lua_State *L)
{
    static const char *const keys[] = {"precision", "threshold", "edgeitems", "linewidth", "profile", "sci_mode", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    lt_check_opts(L, 1, keys);
    nn_print_options *po = nn_print_opts();
    if (lt_opt(L, 1, "profile") != LUA_TNIL) {
        const char *p = luaL_checkstring(L, -1);
        if (!strcmp(p, "default")) *po = (nn_print_options){4, 1000, 3, 80, po->sci_mode};
        else if (!strcmp(p, "short")) *po = (nn_print_options){2, 1000, 2, 80, po->sci_mode};
        else if (!strcmp(p, "full")) *po = (nn_print_options){4, INT64_MAX, 3, 80, po->sci_mode};
        else return luaL_argerror(L, 1, lua_pushfstring(L, "unknown profile '%s' (default, short or full)", p));
    }
    po->precision = (int)lt_opt_number(L, 1, "precision", po->precision);
    double th = lt_opt_number(L, 1, "threshold", (double)po->threshold);
    po->threshold = th >= 9.2e18 ? INT64_MAX : (int64_t)th;
    po->edgeitems = (int)lt_opt_number(L, 1, "edgeitems", po->edgeitems);
    po->linewidth = (int)lt_opt_number(L, 1, "linewidth", po->linewidth);
    if (lt_opt(L, 1, "sci_mode") != LUA_TNIL) po->sci_mode = lt_opt_bool(L, 1, "sci_mode", 0);
    return 0;
}

void lt_open_create(lua_State *L)
{
    int torch = lua_gettop(L);
    static const char *const factories[] = {"zeros", "ones", "empty", "rand", "randn"};
    for (int i = 0; i < 5; i++) {
        lua_pushinteger(L, i);
        lua_pushcclosure(L, t_factory, 1);
        lua_setfield(L, torch, factories[i]);
        lua_pushfstring(L, "%s_like", factories[i]);
        lua_pushinteger(L, i);
        lua_pushcclosure(L, t_like, 1);
        lua_settable(L, torch);
    }
    static const luaL_Reg fns[] = {
        {"tensor", t_tensor}, {"empty_strided", t_empty_strided}, {"full", t_full}, {"full_like", t_full_like}, {"randint", t_randint},
        {"normal", t_normal}, {"arange", t_arange}, {"linspace", t_linspace}, {"eye", t_eye},
        {"cat", t_cat}, {"concat", t_cat}, {"concatenate", t_cat}, {"stack", t_stack},
        {"manual_seed", t_manual_seed}, {"initial_seed", t_initial_seed}, {"get_rng_state", t_get_rng_state},
        {"set_rng_state", t_set_rng_state}, {"is_tensor", t_is_tensor},
        {"get_default_dtype", t_get_default_dtype}, {"set_default_dtype", t_set_default_dtype},
        {"get_default_device", t_get_default_device}, {"set_default_device", t_set_default_device},
        {"get_num_threads", t_get_num_threads}, {"set_num_threads", t_set_num_threads},
        {"set_printoptions", t_set_printoptions}, {NULL, NULL},
    };
    luaL_setfuncs(L, fns, 0);
    lua_settop(L, torch);
}
