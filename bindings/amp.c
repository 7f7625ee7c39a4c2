/* torch._amp: the C half of mixed precision (bindings/lua/torch_amp.lua is the rest),
 * and memory formats.
 *
 *   _amp.region(device_type, enabled, dtype|nil, cache_enabled)  enter an autocast region;
 *        returns a to-be-closed value whose __close (or :exit()) leaves it
 *   _amp.is_enabled(device_type), get_dtype(device_type), set_enabled(device_type, on),
 *   _amp.set_dtype(device_type, dtype), is_cache_enabled(), set_cache_enabled(on),
 *   _amp.increment_nesting(), decrement_nesting(), clear_cache()
 *   _amp.stats()                           {casts=, cache_hits=, lowp_hits=, cached=} (tests)
 *   _amp.unscale_(grads, found_inf, inv_scale)   one fused pass over a list of gradients
 *   _amp.check_finite_(grads, found_inf)          the inf/nan check alone (reads cast flags where it can)
 *   _amp.unscale_grads_(params, found_inf, inv_scale), check_grads_(params, found_inf)
 *                                          the same over the params' .grad, read in C
 *   _amp.grad_device(p)                    p.grad's device string and whether it is float16, or nothing
 *   _amp.flags_hold(t)                     t's cast flags still stand for its values (tests)
 *   _amp.update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval)
 *
 * Memory formats: torch.contiguous_format, channels_last, channels_last_3d, preserve_format;
 * x:contiguous{memory_format=} and x:is_contiguous{memory_format=} (defined here, replacing
 * tensor_views.c's plain ones, so this opener runs after lt_open_views), and
 * lt_opt_memory_format for x:to{memory_format=} (tensor_views.c). */
#include <string.h>

#include "amp.h"
#include "autocast.h"
#include "lt.h"
#include "memory_format.h"

static const char REGION_MT[] = "torch.autocast_region";
static const char FORMAT_MT[] = "torch.memory_format";

/* ---- autocast ---- */

static nn_devtype check_devtype(lua_State *L, int idx)
{
    nn_device d;
    if (lua_type(L, idx) == LUA_TSTRING || lua_isuserdata(L, idx)) {
        if (lt_todevice(L, idx, &d)) return (nn_devtype)d.type;
        if (lua_type(L, idx) == LUA_TSTRING)
            luaL_argerror(L, idx, lua_pushfstring(L, "User specified an unsupported autocast device_type '%s'", lua_tostring(L, idx)));
    }
    luaL_typeerror(L, idx, "device type ('cuda' or 'cpu')");
    return NN_CPU;
}

typedef struct {
    nn_autocast_region saved;
    bool open;
} region;

static int region_close(lua_State *L)
{
    region *r = luaL_checkudata(L, 1, REGION_MT);
    if (r->open) {
        r->open = false;
        nn_autocast_exit(&r->saved);
    }
    return 0;
}

static int a_region(lua_State *L)
{
    nn_devtype dev = check_devtype(L, 1);
    bool enabled = lua_isnoneornil(L, 2) ? true : lua_toboolean(L, 2);
    nn_dtype dt = lua_isnoneornil(L, 3) ? NN_DTYPE_NONE : lt_check_dtype(L, 3);
    bool cache = lua_isnoneornil(L, 4) ? true : lua_toboolean(L, 4);
    region *r = lua_newuserdatauv(L, sizeof *r, 0);
    r->open = false;
    luaL_setmetatable(L, REGION_MT);
    if (nn_autocast_enter(dev, enabled, dt, cache, &r->saved)) return lt_fail(L, 0);
    r->open = true;
    return 1;
}

static int a_is_enabled(lua_State *L)
{
    lua_pushboolean(L, nn_autocast_enabled(lua_isnoneornil(L, 1) ? NN_CUDA : check_devtype(L, 1)));
    return 1;
}

static int a_get_dtype(lua_State *L)
{
    lt_push_dtype(L, nn_autocast_dtype(check_devtype(L, 1)));
    return 1;
}

static int a_set_enabled(lua_State *L)
{
    nn_autocast_set_enabled(check_devtype(L, 1), lua_toboolean(L, 2));
    return 0;
}

static int a_set_dtype(lua_State *L)
{
    if (nn_autocast_set_dtype(check_devtype(L, 1), lt_check_dtype(L, 2))) return lt_fail(L, 2);
    return 0;
}

static int a_is_cache_enabled(lua_State *L)
{
    lua_pushboolean(L, nn_autocast_cache_enabled());
    return 1;
}

static int a_set_cache_enabled(lua_State *L)
{
    nn_autocast_set_cache_enabled(lua_toboolean(L, 1));
    return 0;
}

static int a_increment_nesting(lua_State *L)
{
    lua_pushinteger(L, nn_autocast_increment_nesting());
    return 1;
}

static int a_decrement_nesting(lua_State *L)
{
    lua_pushinteger(L, nn_autocast_decrement_nesting());
    return 1;
}

static int a_clear_cache(lua_State *L)
{
    (void)L;
    nn_autocast_clear_cache();
    return 0;
}

static int a_stats(lua_State *L)
{
    nn_autocast_stats s = nn_autocast_get_stats();
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, (lua_Integer)s.casts);
    lua_setfield(L, -2, "casts");
    lua_pushinteger(L, (lua_Integer)s.cache_hits);
    lua_setfield(L, -2, "cache_hits");
    lua_pushinteger(L, (lua_Integer)s.lowp_hits);
    lua_setfield(L, -2, "lowp_hits");
    lua_pushinteger(L, s.cached);
    lua_setfield(L, -2, "cached");
    return 1;
}

/* ---- GradScaler's kernels ---- */

static int unscale(lua_State *L, bool grads_of)
{
    nn_tensor *found = lt_check(L, 2), *inv = lt_check(L, 3);
    int n;
    nn_tensor **gs = lt_tensor_list(L, 1, &n, grads_of ? LT_GRADS : LT_TENSORS);
    if (nn_amp_unscale_(n, gs, found, inv)) return lt_fail(L, 1);
    return 0;
}

static int check_finite(lua_State *L, bool grads_of)
{
    nn_tensor *found = lt_check(L, 2);
    int n;
    nn_tensor **gs = lt_tensor_list(L, 1, &n, grads_of ? LT_GRADS : LT_TENSORS);
    if (nn_amp_check_finite_(n, gs, found)) return lt_fail(L, 1);
    return 0;
}

static int a_unscale(lua_State *L) { return unscale(L, false); }
static int a_unscale_grads(lua_State *L) { return unscale(L, true); }
static int a_check_finite(lua_State *L) { return check_finite(L, false); }
static int a_check_grads(lua_State *L) { return check_finite(L, true); }

/* p.grad's device ("cuda:0") and whether it is float16; nothing when p has no gradient */
static int a_grad_device(lua_State *L)
{
    nn_tensor *p = lt_check(L, 1);
    if (!p->grad) return 0;
    char b[32];
    lua_pushstring(L, nn_device_str(b, p->grad->storage->device));
    lua_pushboolean(L, p->grad->dtype == NN_F16);
    return 2;
}

/* whether t carries cast flags that still stand for its values (tests) */
static int a_flags_hold(lua_State *L)
{
    lua_pushboolean(L, nn_finite_flags_hold(lt_check(L, 1)));
    return 1;
}

static int a_update_scale(lua_State *L)
{
    nn_tensor *scale = lt_check(L, 1), *tracker = lt_check(L, 2), *found = lt_check(L, 3);
    double growth = luaL_checknumber(L, 4), backoff = luaL_checknumber(L, 5);
    lua_Integer interval = luaL_checkinteger(L, 6);
    if (nn_amp_update_scale_(scale, tracker, found, growth, backoff, interval)) return lt_fail(L, 1);
    return 0;
}

/* ---- memory formats ---- */

static int format_tostring(lua_State *L)
{
    lua_pushstring(L, nn_memory_format_name(*(int *)luaL_checkudata(L, 1, FORMAT_MT)));
    return 1;
}

/* The memory format at idx, or -1 when the value is not one. */
static int to_format(lua_State *L, int idx)
{
    int *f = luaL_testudata(L, idx, FORMAT_MT);
    return f ? *f : -1;
}

/* The memory_format of a call: a keyword table at idx ({memory_format=}), or a format given
 * positionally there; -1 when neither. keys: the keywords the table may hold. */
static int format_arg(lua_State *L, int idx, const char *const *keys, const char *fn)
{
    int f = to_format(L, idx);
    if (f >= 0 || !lt_is_opts(L, idx)) return f;
    lt_check_opts(L, idx, keys);
    if (lt_opt(L, idx, "memory_format") == LUA_TNIL) {
        lua_pop(L, 1);
        return -1;
    }
    f = to_format(L, -1);
    if (f < 0) luaL_argerror(L, idx, lua_pushfstring(L, "%s: memory_format must be a torch.memory_format, got %s", fn, luaL_typename(L, -1)));
    lua_pop(L, 1);
    return f;
}

int lt_opt_memory_format(lua_State *L, int idx)
{
    if (!lt_is_opts(L, idx)) return -1;
    int f = -1;
    if (lt_opt(L, idx, "memory_format") != LUA_TNIL && (f = to_format(L, -1)) < 0)
        luaL_argerror(L, idx, lua_pushfstring(L, "memory_format must be a torch.memory_format, got %s", luaL_typename(L, -1)));
    lua_pop(L, 1);
    return f;
}

static const char *const format_keys[] = {"memory_format", NULL};

/* x:contiguous([{memory_format=}]) */
static int t_contiguous(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int f = format_arg(L, 2, format_keys, "contiguous");
    nn_tensor *r = f < 0 ? nn_contiguous(t) : nn_contiguous_as(t, (nn_memory_format)f);
    if (!r) return lt_fail(L, 2);
    if (r == t) {
        nn_release(r);
        lua_pushvalue(L, 1);
    } else lt_push(L, r);
    return 1;
}

/* x:is_contiguous([{memory_format=}]) */
static int t_is_contiguous(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int f = format_arg(L, 2, format_keys, "is_contiguous");
    lua_pushboolean(L, f < 0 ? nn_is_contiguous(t) : nn_is_contiguous_as(t, (nn_memory_format)f));
    return 1;
}

void lt_open_amp(lua_State *L)
{
    int torch = lua_gettop(L);
    luaL_newmetatable(L, REGION_MT);
    lua_pushcfunction(L, region_close);
    lua_setfield(L, -2, "__close");
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, region_close);
    lua_setfield(L, -2, "exit");
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "torch.autocast");
    lua_setfield(L, -2, "__name");
    lua_settop(L, torch);

    static const luaL_Reg fns[] = {
        {"region", a_region}, {"is_enabled", a_is_enabled}, {"get_dtype", a_get_dtype}, {"set_enabled", a_set_enabled},
        {"set_dtype", a_set_dtype}, {"is_cache_enabled", a_is_cache_enabled}, {"set_cache_enabled", a_set_cache_enabled},
        {"increment_nesting", a_increment_nesting}, {"decrement_nesting", a_decrement_nesting}, {"clear_cache", a_clear_cache},
        {"stats", a_stats}, {"unscale_", a_unscale}, {"check_finite_", a_check_finite},
        {"unscale_grads_", a_unscale_grads}, {"check_grads_", a_check_grads}, {"grad_device", a_grad_device}, {"flags_hold", a_flags_hold}, {"update_scale_", a_update_scale}, {NULL, NULL},
    };
    luaL_newlib(L, fns);
    lua_setfield(L, torch, "_amp");

    luaL_newmetatable(L, FORMAT_MT);
    lua_pushcfunction(L, format_tostring);
    lua_setfield(L, -2, "__tostring");
    int mt = lua_gettop(L);
    static const struct { const char *name; nn_memory_format f; } formats[] = {
        {"contiguous_format", NN_CONTIGUOUS_FORMAT}, {"channels_last", NN_CHANNELS_LAST},
        {"channels_last_3d", NN_CHANNELS_LAST_3D}, {"preserve_format", NN_PRESERVE_FORMAT},
    };
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
        int *f = lua_newuserdatauv(L, sizeof *f, 0);
        *f = formats[i].f;
        lua_pushvalue(L, mt);
        lua_setmetatable(L, -2);
        lua_setfield(L, torch, formats[i].name);
    }
    lua_settop(L, torch);

    static const luaL_Reg methods[] = {{"contiguous", t_contiguous}, {"is_contiguous", t_is_contiguous}, {NULL, NULL}};
    lua_getfield(L, torch, "Tensor");
    luaL_setfuncs(L, methods, 0);
    lua_settop(L, torch);
}
