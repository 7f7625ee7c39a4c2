/* Opening the library: the torch table from the C openers of each binding
 * area, then the Lua half (the .lua files of bindings/lua, compiled in).
 *
 * Every embedded file becomes package.preload[<file name>] (require "torchvision").
 * Files named torch_*.lua extend torch and run, in name order, when torch opens.
 * Another binding area adds its opener to `openers` below. */
#include <stdio.h>
#include <string.h>

#include <lualib.h>

#include "lt.h"
#include "nnrepl_lib.h"

extern const struct nn_lua_source {
    const char *name;
    const char *text;
    size_t len;
} nn_lua_sources[];

static void (*const openers[])(lua_State *) = {
    lt_open_tensor, lt_open_types, lt_open_views, lt_open_math, lt_open_create, lt_open_autograd, lt_open_autograd_function, lt_open_cuda, lt_open_cuda_graph, lt_open_cuda_debug,
    lt_open_nnfunc, lt_open_data, lt_open_image, lt_open_optim, lt_open_io, lt_open_dist, lt_open_amp, lt_open_backends,
    lt_open_sort, lt_open_rnn, lt_open_profiler, lt_open_complex, lt_open_matfile, lt_open_storage, lt_open_denormal,
    lt_open_tracer,
};

/* package.preload loader for embedded file number upvalue 1 */
static int load_embedded(lua_State *L)
{
    const struct nn_lua_source *s = &nn_lua_sources[lua_tointeger(L, lua_upvalueindex(1))];
    char chunkname[128];
    snprintf(chunkname, sizeof chunkname, "@bindings/lua/%s.lua", s->name);
    if (luaL_loadbufferx(L, s->text, s->len, chunkname, "t")) return lua_error(L);
    lua_pushvalue(L, 1); /* the module name, as require passes it */
    lua_call(L, 1, 1);
    return 1;
}

int luaopen_torch(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    if (lua_getfield(L, -1, "torch") == LUA_TTABLE) return 1;
    lua_pop(L, 1);
    int loaded = lua_gettop(L);
    lua_newtable(L);
    int torch = lua_gettop(L);
    lua_pushvalue(L, torch);
    lua_setfield(L, loaded, "torch"); /* require "torch" from the Lua half finds it */
    lua_pushliteral(L, "0.1.0"); /* torch.__version__: nnrepl's version, as in interp/include/nnrepl.h */
    lua_setfield(L, torch, "__version__");
    for (size_t i = 0; i < sizeof openers / sizeof *openers; i++) {
        openers[i](L);
        lua_settop(L, torch);
    }

    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_time);
    lua_setfield(L, -2, "time");
    lua_pushcfunction(L, luaopen_hashlib);
    lua_setfield(L, -2, "hashlib");
    lua_pushcfunction(L, luaopen_pymath);
    lua_setfield(L, -2, "_pymath");
    lua_pushcfunction(L, luaopen_pyos);
    lua_setfield(L, -2, "_pyos");
    lua_pushcfunction(L, luaopen_re_pcre2);
    lua_setfield(L, -2, "_re");
    lua_pushcfunction(L, luaopen_unicodedata);
    lua_setfield(L, -2, "unicodedata");
    lua_pushcfunction(L, luaopen_pystr);
    lua_setfield(L, -2, "_pystr");
    for (int i = 0; nn_lua_sources[i].name; i++) {
        lua_pushinteger(L, i);
        lua_pushcclosure(L, load_embedded, 1);
        lua_setfield(L, -2, nn_lua_sources[i].name);
    }
    lua_pop(L, 1);

    lua_getglobal(L, "require");
    int require = lua_gettop(L);
    for (int i = 0; nn_lua_sources[i].name; i++) {
        if (strncmp(nn_lua_sources[i].name, "torch_", 6)) continue;
        if (lua_isnil(L, require)) { /* no package library: run the loader directly */
            lua_pushinteger(L, i);
            lua_pushcclosure(L, load_embedded, 1);
        } else lua_pushvalue(L, require);
        lua_pushstring(L, nn_lua_sources[i].name);
        lua_call(L, 1, 0);
    }
    lua_getfield(L, torch, "Tensor");
    lt_mark_methods(L, -1);
    lua_settop(L, torch);
    return 1;
}

/* Set global `name` to torch.<path> (dot-separated) when it exists. */
static void global_from_torch(lua_State *L, const char *name, const char *path)
{
    lua_getglobal(L, "torch");
    char part[64];
    while (*path && lua_istable(L, -1)) {
        size_t n = strcspn(path, ".");
        snprintf(part, sizeof part, "%.*s", (int)n, path);
        lua_getfield(L, -1, part);
        lua_remove(L, -2);
        path += n + (path[n] == '.');
    }
    if (!lua_isnil(L, -1)) lua_setglobal(L, name);
    else lua_pop(L, 1);
}

int nnrepl_openlibs(lua_State *L)
{
    luaL_openlibs(L);
    lua_gc(L, LUA_GCGEN, 0, 0); /* dead temporaries in young collections: see account() in bindings/tensor.c */
    luaL_requiref(L, "torch", luaopen_torch, 1);
    luaL_requiref(L, "time", luaopen_time, 1);
    lua_pop(L, 2);
    global_from_torch(L, "nn", "nn");
    global_from_torch(L, "F", "nn.functional");
    global_from_torch(L, "optim", "optim");
    nnrepl_guard_python_names(L);
    return 0;
}
