/* torch._profiler: the engine's recorder (engine/profiler.h) for bindings/lua/torch_profiler.lua.
 * start(cuda, shapes, stack, memory), stop(), push(name) -> id, pop(id), events() -> a list of
 * tables {name, kind ("op" | "range" | "node" | "comm" | "memory"), parent (1-based, 0: none),
 * device, start_us, end_us, device_start_us, device_us (nil: none), shapes, stack ("file:line" a
 * line each; nil unless recorded), async (comm: run on another thread), bytes, addr,
 * total_allocated, total_reserved (memory)}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lt.h"
#include "profiler.h"

/* with_stack: the frames of the thread that started the profiler, leaving out C functions and the
 * library's own Lua (bindings/lua/), innermost first */
static _Thread_local lua_State *stack_L;

static char *lua_frames(void)
{
    char buf[1024];
    size_t n = 0;
    int kept = 0;
    lua_Debug ar;
    for (int level = 0; kept < 8 && n < sizeof buf && lua_getstack(stack_L, level, &ar); level++) {
        if (!lua_getinfo(stack_L, "Sl", &ar) || ar.currentline < 0 || !strncmp(ar.source, "@bindings/lua/", 14)) continue;
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s:%d", kept ? "\n" : "", ar.short_src, ar.currentline);
        kept++;
    }
    return kept ? strdup(buf) : NULL;
}

static int p_start(lua_State *L)
{
    if (nn_profiler_start(lua_toboolean(L, 1), lua_toboolean(L, 2), lua_toboolean(L, 4))) return lt_fail(L, 0);
    stack_L = L;
    nn_profiler_set_stack(lua_toboolean(L, 3) ? lua_frames : NULL);
    return 0;
}

static int p_start_nvtx(lua_State *L)
{
    if (nn_profiler_start_nvtx(lua_toboolean(L, 1))) return lt_fail(L, 0);
    return 0;
}

static int p_stop(lua_State *L)
{
    nn_profiler_set_stack(NULL);
    if (nn_profiler_stop()) return lt_fail(L, 0);
    return 0;
}

static int p_push(lua_State *L)
{
    lua_pushinteger(L, nn_profiler_push(NN_PROF_RANGE, luaL_checkstring(L, 1)));
    return 1;
}

static int p_pop(lua_State *L)
{
    nn_profiler_pop(luaL_checkinteger(L, 1));
    return 0;
}

static int p_running(lua_State *L)
{
    lua_pushboolean(L, nn_profiling);
    return 1;
}

static int p_events(lua_State *L)
{
    static const char *const kinds[] = {"op", "range", "node", "comm", "memory"};
    int64_t n = nn_profiler_count();
    lua_createtable(L, (int)n, 0);
    for (int64_t i = 0; i < n; i++) {
        const nn_prof_event *e = nn_profiler_event(i);
        char dev[16];
        lua_createtable(L, 0, 10);
        lua_pushstring(L, e->name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, kinds[e->kind]);
        lua_setfield(L, -2, "kind");
        lua_pushinteger(L, e->parent + 1);
        lua_setfield(L, -2, "parent");
        lua_pushstring(L, nn_device_str(dev, e->device));
        lua_setfield(L, -2, "device");
        lua_pushnumber(L, e->start_ns / 1e3);
        lua_setfield(L, -2, "start_us");
        lua_pushnumber(L, e->end_ns / 1e3);
        lua_setfield(L, -2, "end_us");
        if (e->device_us >= 0) {
            lua_pushnumber(L, e->device_us);
            lua_setfield(L, -2, "device_us");
            lua_pushnumber(L, e->device_start_us);
            lua_setfield(L, -2, "device_start_us");
        }
        if (e->shapes) {
            lua_pushstring(L, e->shapes);
            lua_setfield(L, -2, "shapes");
        }
        if (e->stack) {
            lua_pushstring(L, e->stack);
            lua_setfield(L, -2, "stack");
        }
        if (e->async) {
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, "async");
        }
        if (e->kind == NN_PROF_MEMORY) {
            const struct { const char *k; lua_Integer v; } f[] = {{"bytes", e->bytes}, {"addr", (lua_Integer)e->addr},
                {"total_allocated", e->total_allocated}, {"total_reserved", e->total_reserved}};
            for (size_t k = 0; k < sizeof f / sizeof *f; k++) {
                lua_pushinteger(L, f[k].v);
                lua_setfield(L, -2, f[k].k);
            }
        }
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

void lt_open_profiler(lua_State *L)
{
    static const luaL_Reg fns[] = {{"start", p_start}, {"stop", p_stop},       {"push", p_push},     {"pop", p_pop},
                                   {"running", p_running}, {"events", p_events}, {"start_nvtx", p_start_nvtx}, {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_setfield(L, -2, "_profiler");
}
