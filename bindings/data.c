/* The C half of torch.utils.data and torchvision.datasets (the Lua half is
 * bindings/lua/torch_data.lua and torchvision.lua):
 *
 *   torch.Generator()            seeded random numbers for samplers and random_split, and
 *                                (torch._with_generator) for the random ops given generator=
 *   torch.randperm(n, {generator=, dtype=, device=})
 *   torch._data.*                the readers (IDX, CIFAR-10), data sources
 *                                (datasets C can fetch from in any thread) and the
 *                                worker-pool loader, as the Lua half uses them.
 *
 * A Generator is Philox4x32-10 keyed by its seed, like the default generator
 * (engine/random.c): draw j uses counter offset + j, so the numbers depend on
 * the seed and on how many were drawn before, nothing else. With no generator
 * the functions draw from the default one (torch.manual_seed). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lt.h"

#include "autograd.h"

#include "data/cifar.h"
#include "data/idx.h"
#include "data/loader.h"
#include "data/source.h"

#define GENERATOR_MT "torch.Generator"
#define SOURCE_MT "torch.data.Source"
#define LOADER_MT "torch.data.Loader"
#define DEFAULT_SEED 67280421310721ULL

/* ---- generators ---- */

typedef nn_generator generator;

static generator *check_generator(lua_State *L, int idx) { return luaL_checkudata(L, idx, GENERATOR_MT); }

/* The generator at idx, or NULL for nil/none (the default generator). */
static generator *opt_generator(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx)) return NULL;
    generator *g = luaL_testudata(L, idx, GENERATOR_MT);
    if (!g) luaL_typeerror(L, idx, "torch.Generator");
    return g;
}

nn_generator *lt_opt_generator(lua_State *L, int o)
{
    if (lua_type(L, o) != LUA_TTABLE) return NULL;
    lua_getfield(L, o, "generator");
    generator *g = lua_isnil(L, -1) ? NULL : luaL_testudata(L, -1, GENERATOR_MT);
    if (!g && !lua_isnil(L, -1)) luaL_error(L, "generator: torch.Generator expected, got %s", luaL_typename(L, -1));
    lua_pop(L, 1); /* the option table still holds it */
    return g;
}

nn_generator *lt_generator_begin(nn_generator *g) { return g ? nn_use_generator(g) : NULL; }
void lt_generator_end(nn_generator *g, nn_generator *prev)
{
    if (g) nn_use_generator(prev);
}

/* Reserve n draws from g (or the default generator): the key and the first counter. */
static uint64_t reserve(generator *g, uint64_t n, uint64_t *offset)
{
    if (!g) return nn_philox_reserve(n, offset);
    *offset = g->offset;
    g->offset += n;
    return g->seed;
}

static uint64_t draw64(uint64_t seed, uint64_t counter)
{
    uint32_t ctr[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), 0, 0}, key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, out[4];
    nn_philox4x32_10(ctr, key, out);
    return (uint64_t)out[0] | (uint64_t)out[1] << 32;
}

static int gen_new(lua_State *L)
{
    if (lua_type(L, 1) == LUA_TTABLE) { /* torch.Generator({device = d}): the keyword form */
        lua_pushnil(L);
        while (lua_next(L, 1)) {
            lua_pop(L, 1);
            if (lua_type(L, -1) != LUA_TSTRING || strcmp(lua_tostring(L, -1), "device") != 0)
                return luaL_error(L, "Generator() got an unexpected keyword argument '%s'", luaL_tolstring(L, -1, NULL));
        }
        lua_getfield(L, 1, "device");
        lua_replace(L, 1);
    }
    nn_device d = lua_isnoneornil(L, 1) ? NN_DEVICE_CPU : lt_check_device(L, 1);
    generator *g = lua_newuserdatauv(L, sizeof *g, 1);
    *g = (generator){DEFAULT_SEED, 0};
    luaL_setmetatable(L, GENERATOR_MT);
    lt_push_device(L, d); /* only g.device: one counter-based Philox serves every device */
    lua_setiuservalue(L, -2, 1);
    return 1;
}

static int gen_manual_seed(lua_State *L)
{
    generator *g = check_generator(L, 1);
    g->seed = (uint64_t)luaL_checkinteger(L, 2);
    g->offset = 0;
    lua_settop(L, 1);
    return 1;
}

static int gen_seed(lua_State *L)
{
    generator *g = check_generator(L, 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = draw64((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30, (uint64_t)getpid()) >> 1;
    *g = (generator){s, 0};
    lua_pushinteger(L, (lua_Integer)s);
    return 1;
}

static int gen_initial_seed(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)check_generator(L, 1)->seed);
    return 1;
}

/* get_state: a uint8 tensor of 16 bytes (seed, offset; little-endian) */
static int gen_get_state(lua_State *L)
{
    generator *g = check_generator(L, 1);
    int64_t n = 16;
    nn_tensor *t = nn_empty(1, &n, NN_U8, NN_DEVICE_CPU);
    if (!t) return lt_fail(L, 0);
    uint8_t *p = nn_data(t);
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(g->seed >> 8 * i), p[8 + i] = (uint8_t)(g->offset >> 8 * i);
    lt_push(L, t);
    return 1;
}

static int gen_set_state(lua_State *L)
{
    generator *g = check_generator(L, 1);
    nn_tensor *t = lt_check(L, 2);
    if (t->dtype != NN_U8 || nn_numel(t) != 16 || !nn_is_contiguous(t) || t->storage->device.type != NN_CPU)
        return luaL_argerror(L, 2, "expected a uint8 CPU tensor of 16 bytes from get_state()");
    const uint8_t *p = nn_data(t);
    g->seed = g->offset = 0;
    for (int i = 0; i < 8; i++) g->seed |= (uint64_t)p[i] << 8 * i, g->offset |= (uint64_t)p[8 + i] << 8 * i;
    lua_settop(L, 1);
    return 1;
}

static int gen_index(lua_State *L)
{
    const char *k = luaL_checkstring(L, 2);
    if (!strcmp(k, "device")) {
        lua_getiuservalue(L, 1, 1);
        return 1;
    }
    luaL_getmetatable(L, GENERATOR_MT);
    lua_getfield(L, -1, "__methods");
    lua_getfield(L, -1, k);
    return 1;
}

/* torch._with_generator(g, f, ...): f(...) with the thread's random ops drawing from g */
static int gen_with(lua_State *L)
{
    generator *g = check_generator(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    nn_generator *prev = lt_generator_begin(g);
    int st = lua_pcall(L, lua_gettop(L) - 2, LUA_MULTRET, 0);
    lt_generator_end(g, prev);
    if (st != LUA_OK) return lua_error(L);
    return lua_gettop(L) - 1;
}

static int gen_tostring(lua_State *L)
{
    lua_pushfstring(L, "<torch.Generator object at %p>", lua_touserdata(L, 1));
    return 1;
}

/* A random permutation of 0..n-1 (Fisher-Yates, one draw per position). */
static int64_t *permutation(lua_State *L, int64_t n, generator *g)
{
    int64_t *p = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *p, 0);
    uint64_t off, seed = reserve(g, (uint64_t)n, &off);
    for (int64_t i = 0; i < n; i++) p[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(draw64(seed, off + (uint64_t)i) % (uint64_t)(i + 1));
        int64_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    return p;
}

static int64_t check_count(lua_State *L, int idx)
{
    lua_Integer n = luaL_checkinteger(L, idx);
    if (n < 0) luaL_argerror(L, idx, lua_pushfstring(L, "n must be non-negative, got %d", (int)n));
    if (n > ((lua_Integer)1 << 40)) luaL_argerror(L, idx, "n is too large");
    return n;
}

/* _data.randperm(n, gen) -> Lua list of the permutation of 0..n-1 */
static int d_randperm(lua_State *L)
{
    int64_t n = check_count(L, 1);
    generator *g = opt_generator(L, 2);
    int64_t *p = permutation(L, n, g);
    lua_createtable(L, (int)n, 0);
    for (int64_t i = 0; i < n; i++) {
        lua_pushinteger(L, p[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* _data.uniform(n, gen) -> Lua list of n doubles in [0, 1) */
static int d_uniform(lua_State *L)
{
    int64_t n = check_count(L, 1);
    generator *g = opt_generator(L, 2);
    uint64_t off, seed = reserve(g, (uint64_t)n, &off);
    lua_createtable(L, (int)n, 0);
    for (int64_t i = 0; i < n; i++) {
        lua_pushnumber(L, (double)(draw64(seed, off + (uint64_t)i) >> 11) * 0x1p-53);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* _data.random_seed(gen) -> a non-negative 63-bit integer drawn from gen */
static int d_random_seed(lua_State *L)
{
    generator *g = opt_generator(L, 1);
    uint64_t off, seed = reserve(g, 1, &off);
    lua_pushinteger(L, (lua_Integer)(draw64(seed, off) >> 1));
    return 1;
}

/* torch.randperm(n, {generator=, dtype=int64, device=, requires_grad=}) */
static int t_randperm(lua_State *L)
{
    static const char *const keys[] = {"generator", "dtype", "device", "requires_grad", "pin_memory", "layout", NULL};
    int64_t n = check_count(L, 1);
    int o = 2;
    if (lua_isuserdata(L, 2)) { /* randperm(n, generator) */
        opt_generator(L, 2);
        o = 3;
    }
    lt_check_opts(L, o, keys);
    lt_opt(L, o, "generator");
    generator *g = o == 3 ? opt_generator(L, 2) : opt_generator(L, lua_gettop(L));
    nn_dtype dt = lt_opt_dtype(L, o, NN_I64);
    nn_device dev = lt_opt_device(L, o, lt_default_device());
    int64_t *p = permutation(L, n, g);
    nn_tensor *t = nn_empty(1, &n, NN_I64, NN_DEVICE_CPU);
    if (!t) return lt_fail(L, 0);
    memcpy(nn_data(t), p, (size_t)n * sizeof *p);
    nn_tensor *r = nn_to_dtype(t, dt), *d = r ? nn_to_device(r, dev) : NULL;
    nn_release(t);
    nn_release(r);
    if (!d) return lt_fail(L, 0);
    if (lt_opt_bool(L, o, "requires_grad", 0) && nn_requires_grad_(d, true)) {
        nn_release(d);
        return lt_fail(L, 0);
    }
    lt_push(L, d);
    return 1;
}

/* ---- readers ---- */

static int d_load_idx(lua_State *L)
{
    lt_push(L, nn_idx_load(luaL_checkstring(L, 1)));
    return 1;
}

static int d_parse_idx(lua_State *L)
{
    size_t n;
    const char *p = luaL_checklstring(L, 1, &n);
    lt_push(L, nn_idx_parse((const uint8_t *)p, n, luaL_optstring(L, 2, "<bytes>")));
    return 1;
}

/* parse_gzip(bytes, name) -> the decompressed bytes as a string */
static int d_gunzip(lua_State *L)
{
    size_t n;
    const char *p = luaL_checklstring(L, 1, &n);
    nn_bytes b;
    if (nn_gunzip((const uint8_t *)p, n, NN_BYTES_LIMIT, luaL_optstring(L, 2, "<bytes>"), &b)) return lt_fail(L, 0);
    lua_pushlstring(L, (const char *)b.data, b.len);
    nn_bytes_free(&b);
    return 1;
}

static int push_pair(lua_State *L, nn_tensor *images, nn_tensor *labels)
{
    lt_push(L, images);
    lt_push(L, labels);
    return 2;
}

/* the format argument at idx: 10 (default) or 100 */
static const nn_cifar_format *cifar_format(lua_State *L, int idx)
{
    lua_Integer k = luaL_optinteger(L, idx, 10);
    if (k != 10 && k != 100) luaL_argerror(L, idx, "CIFAR format must be 10 or 100");
    return k == 100 ? &nn_cifar100 : &nn_cifar10;
}

/* images, labels, and for CIFAR-100 the coarse labels */
static int push_cifar(lua_State *L, nn_tensor *images, nn_tensor *labels, nn_tensor *coarse)
{
    push_pair(L, images, labels);
    if (!coarse) return 2;
    lt_push(L, coarse);
    return 3;
}

/* load_cifar({paths}[, 10 | 100]) -> images uint8 [N, 3, 32, 32], labels int64 [N] (, coarse labels int64 [N]) */
static int d_load_cifar(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    const nn_cifar_format *f = cifar_format(L, 2);
    int n = (int)lua_rawlen(L, 1);
    const char **paths = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *paths, 0);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        paths[i] = lua_tostring(L, -1);
        if (!paths[i]) return luaL_argerror(L, 1, "expected a list of file names");
        lua_pop(L, 1); /* the string stays alive in the table */
    }
    nn_tensor *images, *labels, *coarse;
    if (nn_cifar_load_as(f, paths, n, &images, &labels, &coarse)) return lt_fail(L, 0);
    return push_cifar(L, images, labels, coarse);
}

/* parse_cifar(bytes[, name][, 10 | 100]) */
static int d_parse_cifar(lua_State *L)
{
    size_t n;
    const char *p = luaL_checklstring(L, 1, &n);
    const nn_cifar_format *f = cifar_format(L, 3);
    nn_tensor *images, *labels, *coarse;
    if (nn_cifar_parse_as(f, (const uint8_t *)p, n, luaL_optstring(L, 2, "<bytes>"), &images, &labels, &coarse)) return lt_fail(L, 0);
    return push_cifar(L, images, labels, coarse);
}

static int d_isatty(lua_State *L)
{
    lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
    return 1;
}

/* term_width(fd) -> columns of the terminal on fd, or nil */
static int d_term_width(lua_State *L)
{
    struct winsize ws;
    if (ioctl((int)luaL_checkinteger(L, 1), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) lua_pushinteger(L, ws.ws_col);
    else lua_pushnil(L);
    return 1;
}

/* ---- indices from Lua ---- */

/* The index at stack idx: an integer, or a one-element integer tensor. */
static int64_t to_index(lua_State *L, int idx, const char *what)
{
    int isint;
    lua_Integer i = lua_tointegerx(L, idx, &isint);
    if (isint) return i;
    nn_tensor *t = lua_type(L, idx) == LUA_TUSERDATA ? lt_totensor(L, idx) : NULL;
    if (t && nn_numel(t) == 1 && nn_dtype_is_integral(t->dtype) && t->storage->device.type == NN_CPU) {
        int64_t zero[NN_MAX_DIMS] = {0};
        return nn_get_i64(t, zero);
    }
    return luaL_error(L, "%s: indices must be integers, got %s", what, luaL_typename(L, idx));
}

/* The indices of the list or 1-D integer tensor at idx into a scratch userdata
 * (left on the stack); returns the count. */
static int64_t read_indices(lua_State *L, int idx, int64_t **out, const char *what)
{
    idx = lua_absindex(L, idx);
    nn_tensor *t = lt_totensor(L, idx);
    if (t) {
        if (!nn_dtype_is_integral(t->dtype) || t->ndim > 1 || t->storage->device.type != NN_CPU)
            luaL_error(L, "%s: expected a list of indices or a 1-D integer CPU tensor", what);
        int64_t n = nn_numel(t);
        nn_tensor *c = nn_to_dtype(t, NN_I64), *cc = c ? nn_contiguous(c) : NULL;
        nn_release(c);
        if (!cc) lt_fail(L, 0);
        int64_t *p = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *p, 0);
        memcpy(p, nn_data(cc), (size_t)n * sizeof *p);
        nn_release(cc);
        *out = p;
        return n;
    }
    if (!lua_istable(L, idx)) luaL_error(L, "%s: expected a list of indices, got %s", what, luaL_typename(L, idx));
    int64_t n = (int64_t)lua_rawlen(L, idx);
    int64_t *p = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *p, 0);
    for (int64_t i = 0; i < n; i++) {
        lua_rawgeti(L, idx, i + 1);
        p[i] = to_index(L, -1, what);
        lua_pop(L, 1);
    }
    *out = p;
    return n;
}

/* ---- data sources ---- */

typedef struct {
    nn_data_source *s;
} source_ud;

static nn_data_source *check_source(lua_State *L, int idx)
{
    source_ud *u = luaL_checkudata(L, idx, SOURCE_MT);
    if (!u->s) luaL_error(L, "attempt to use a released data source");
    return u->s;
}

static void push_source(lua_State *L, nn_data_source *s)
{
    source_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->s = s;
    luaL_setmetatable(L, SOURCE_MT);
}

/* A list of numbers (or one number) at idx, into a scratch userdata left on the stack. */
static int read_numbers(lua_State *L, int idx, double **out, const char *what)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TNUMBER) {
        double *p = lua_newuserdatauv(L, sizeof *p, 0);
        *p = lua_tonumber(L, idx);
        *out = p;
        return 1;
    }
    if (!lua_istable(L, idx)) luaL_error(L, "Normalize marker: %s must be a list of numbers", what);
    int n = (int)lua_rawlen(L, idx);
    double *p = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *p, 0);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, idx, i + 1);
        int ok;
        p[i] = lua_tonumberx(L, -1, &ok);
        if (!ok) luaL_error(L, "Normalize marker: %s must be a list of numbers", what);
        lua_pop(L, 1);
    }
    *out = p;
    return n;
}

/* Source({{tensor, ops}, ...}) -> source, or nil and a message when C cannot run
 * the transforms (the caller then fetches in Lua). ops: {{kind="to_tensor"},
 * {kind="normalize", mean={...}, std={...}}, ...}. */
static int d_source(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    int nf = (int)lua_rawlen(L, 1);
    if (nf < 1) return luaL_argerror(L, 1, "a data source needs at least one field");
    nn_data_source *s = nn_data_source_new();
    if (!s) return lt_fail(L, 0);
    push_source(L, s); /* owned by the GC from here */
    int base = lua_gettop(L);
    for (int f = 0; f < nf; f++) {
        lua_settop(L, base);
        lua_rawgeti(L, 1, f + 1);
        int fi = lua_gettop(L);
        if (!lua_istable(L, fi)) return luaL_argerror(L, 1, "each field is {tensor, ops}");
        lua_rawgeti(L, fi, 1);
        nn_tensor *t = lt_check(L, -1);
        nn_data_op ops[16];
        int nops = 0;
        if (lua_rawgeti(L, fi, 2) == LUA_TTABLE) {
            int oi = lua_gettop(L);
            nops = (int)lua_rawlen(L, oi);
            if (nops > 16) nops = 17; /* not run in C */
            for (int k = 0; k < nops && k < 16; k++) {
                lua_rawgeti(L, oi, k + 1);
                int mi = lua_gettop(L);
                lua_getfield(L, mi, "kind");
                const char *kind = lua_tostring(L, -1);
                if (kind && !strcmp(kind, "to_tensor")) ops[k] = (nn_data_op){NN_DATA_TO_TENSOR, 0, NULL, NULL};
                else if (kind && !strcmp(kind, "normalize")) {
                    double *mean, *std;
                    lua_getfield(L, mi, "mean");
                    int nm = read_numbers(L, -1, &mean, "mean");
                    lua_getfield(L, mi, "std");
                    int ns = read_numbers(L, -1, &std, "std");
                    if (nm != ns || nm < 1) nops = 17;
                    ops[k] = (nn_data_op){NN_DATA_NORMALIZE, nm, mean, std};
                } else nops = 17;
            }
        }
        nn_status st = nops > 16 ? nn_error(NN_ERR_NOTIMPL, "data source: a transform C does not run") : nn_data_add_field(s, t, ops, nops);
        if (st == NN_ERR_NOTIMPL) {
            lua_pushnil(L);
            lua_pushstring(L, nn_last_error());
            return 2;
        }
        if (st) return lt_fail(L, 0);
    }
    lua_settop(L, base);
    return 1;
}

static int src_len(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)nn_data_length(check_source(L, 1)));
    return 1;
}

static int src_nfields(lua_State *L)
{
    lua_pushinteger(L, nn_data_nfields(check_source(L, 1)));
    return 1;
}

static int src_subset(lua_State *L)
{
    nn_data_source *s = check_source(L, 1);
    int64_t *idx;
    int64_t n = read_indices(L, 2, &idx, "Subset");
    nn_data_source *sub = nn_data_source_subset(s, idx, n);
    if (!sub) return lt_fail(L, 0);
    push_source(L, sub);
    return 1;
}

static int push_fields(lua_State *L, int nf, nn_tensor **out)
{
    luaL_checkstack(L, nf, "too many fields");
    for (int f = 0; f < nf; f++) lt_push(L, out[f]);
    return nf;
}

/* src:fetch(indices, pin) -> one collated tensor per field */
static int src_fetch(lua_State *L)
{
    nn_data_source *s = check_source(L, 1);
    int64_t *idx;
    int64_t n = read_indices(L, 2, &idx, "fetch");
    nn_tensor *out[NN_DATA_MAX_FIELDS];
    if (nn_data_fetch(s, idx, n, lua_toboolean(L, 3), out)) return lt_fail(L, 0);
    return push_fields(L, nn_data_nfields(s), out);
}

static int src_gc(lua_State *L)
{
    source_ud *u = luaL_checkudata(L, 1, SOURCE_MT);
    nn_data_source_release(u->s);
    u->s = NULL;
    return 0;
}

/* ---- the worker-pool loader ---- */

typedef struct {
    nn_loader *l;
    int nfields;
} loader_ud;

static nn_loader *check_loader(lua_State *L, int idx)
{
    loader_ud *u = luaL_checkudata(L, idx, LOADER_MT);
    if (!u->l) luaL_error(L, "the DataLoader's workers were shut down");
    return u->l;
}

/* Loader(source, num_workers, prefetch_factor, pin_memory, timeout) */
static int d_loader(lua_State *L)
{
    nn_data_source *s = check_source(L, 1);
    int workers = (int)luaL_checkinteger(L, 2);
    int prefetch = (int)luaL_optinteger(L, 3, 2);
    bool pin = lua_toboolean(L, 4);
    double timeout = luaL_optnumber(L, 5, 0);
    loader_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->l = NULL;
    u->nfields = nn_data_nfields(s);
    luaL_setmetatable(L, LOADER_MT);
    u->l = nn_loader_new(s, workers, prefetch, pin, timeout);
    if (!u->l) return lt_fail(L, 0);
    return 1;
}

/* l:start(batches): batches is a list of lists of indices */
static int ld_start(lua_State *L)
{
    nn_loader *l = check_loader(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    int64_t nb = (int64_t)lua_rawlen(L, 2), total = 0;
    int64_t *off = lua_newuserdatauv(L, (size_t)(nb + 1) * sizeof *off, 0);
    off[0] = 0;
    for (int64_t k = 0; k < nb; k++) {
        lua_rawgeti(L, 2, k + 1);
        if (!lua_istable(L, -1)) return luaL_error(L, "DataLoader: batch %d is not a list of indices", (int)k);
        total += (int64_t)lua_rawlen(L, -1);
        off[k + 1] = total;
        lua_pop(L, 1);
    }
    int64_t *idx = lua_newuserdatauv(L, (size_t)(total ? total : 1) * sizeof *idx, 0);
    for (int64_t k = 0; k < nb; k++) {
        lua_rawgeti(L, 2, k + 1);
        for (int64_t j = off[k]; j < off[k + 1]; j++) {
            lua_rawgeti(L, -1, j - off[k] + 1);
            idx[j] = to_index(L, -1, "DataLoader");
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    if (nn_loader_start(l, idx, off, nb)) return lt_fail(L, 0);
    return 0;
}

/* l:next() -> the next batch's tensors, or nothing at the end of the epoch */
static int ld_next(lua_State *L)
{
    loader_ud *u = luaL_checkudata(L, 1, LOADER_MT);
    nn_loader *l = check_loader(L, 1);
    nn_tensor *out[NN_DATA_MAX_FIELDS];
    bool done;
    if (nn_loader_next(l, out, &done)) return lt_fail(L, 0);
    if (done) return 0;
    return push_fields(L, u->nfields, out);
}

static int ld_stop(lua_State *L)
{
    nn_loader_stop(check_loader(L, 1));
    return 0;
}

static int ld_close(lua_State *L)
{
    loader_ud *u = luaL_checkudata(L, 1, LOADER_MT);
    nn_loader_free(u->l);
    u->l = NULL;
    return 0;
}

static int ld_workers(lua_State *L)
{
    loader_ud *u = luaL_checkudata(L, 1, LOADER_MT);
    lua_pushinteger(L, u->l ? nn_loader_workers(u->l) : 0);
    return 1;
}

static void new_class(lua_State *L, const char *name, const luaL_Reg *meta, const luaL_Reg *methods)
{
    luaL_newmetatable(L, name);
    luaL_setfuncs(L, meta, 0);
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    if (lua_getfield(L, -2, "__index") == LUA_TNIL) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, "__index");
    } else lua_pop(L, 1);
    lua_setfield(L, -2, "__methods");
    lua_pop(L, 1);
}

void lt_open_data(lua_State *L)
{
    int torch = lua_gettop(L);
    static const luaL_Reg gen_meta[] = {{"__index", gen_index}, {"__tostring", gen_tostring}, {NULL, NULL}};
    static const luaL_Reg gen_methods[] = {
        {"manual_seed", gen_manual_seed}, {"seed", gen_seed}, {"initial_seed", gen_initial_seed},
        {"get_state", gen_get_state}, {"set_state", gen_set_state}, {NULL, NULL},
    };
    new_class(L, GENERATOR_MT, gen_meta, gen_methods);
    static const luaL_Reg src_meta[] = {{"__len", src_len}, {"__gc", src_gc}, {NULL, NULL}};
    static const luaL_Reg src_methods[] = {
        {"fetch", src_fetch}, {"subset", src_subset}, {"nfields", src_nfields}, {NULL, NULL},
    };
    new_class(L, SOURCE_MT, src_meta, src_methods);
    static const luaL_Reg ld_meta[] = {{"__gc", ld_close}, {"__close", ld_close}, {NULL, NULL}};
    static const luaL_Reg ld_methods[] = {
        {"start", ld_start}, {"next", ld_next}, {"stop", ld_stop}, {"close", ld_close}, {"num_workers", ld_workers}, {NULL, NULL},
    };
    new_class(L, LOADER_MT, ld_meta, ld_methods);

    lua_pushcfunction(L, gen_new);
    lua_setfield(L, torch, "Generator");
    lua_pushcfunction(L, gen_with);
    lua_setfield(L, torch, "_with_generator");
    if (lua_getfield(L, torch, "randperm") == LUA_TNIL) {
        lua_pushcfunction(L, t_randperm);
        lua_setfield(L, torch, "randperm");
    }
    lua_pop(L, 1);

    static const luaL_Reg fns[] = {
        {"randperm", d_randperm}, {"uniform", d_uniform}, {"random_seed", d_random_seed},
        {"load_idx", d_load_idx}, {"parse_idx", d_parse_idx}, {"gunzip", d_gunzip},
        {"load_cifar", d_load_cifar}, {"parse_cifar", d_parse_cifar},
        {"Source", d_source}, {"Loader", d_loader}, {"isatty", d_isatty}, {"term_width", d_term_width}, {NULL, NULL},
    };
    luaL_newlib(L, fns);
    lua_setfield(L, torch, "_data");
}
