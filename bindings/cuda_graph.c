/* torch.cuda.CUDAGraph: capture_begin({pool=}), capture_end(), replay(), reset(), pool().
 * bindings/lua/torch_cuda_graph.lua adds capture(fn) and torch.cuda.graph on top. */
#include "device.h"
#include "lt.h"

static const char GRAPH_MT[] = "torch.cuda.CUDAGraph";

typedef struct { nn_gpu_graph *g; } graph_ud;

static graph_ud *check_graph(lua_State *L, int idx)
{
    graph_ud *u = luaL_checkudata(L, idx, GRAPH_MT);
    if (!u->g) luaL_error(L, "CUDAGraph: the graph was freed");
    return u;
}

static int graph_new(lua_State *L)
{
    if (nn_require_gpu("CUDAGraph")) return lt_fail(L, 0);
    nn_gpu_graph *g = nn_gpu->graph_new();
    if (!g) return lt_fail(L, 0);
    graph_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
    u->g = g;
    luaL_setmetatable(L, GRAPH_MT);
    return 1;
}

static int graph_gc(lua_State *L)
{
    graph_ud *u = luaL_checkudata(L, 1, GRAPH_MT);
    if (u->g && nn_gpu) nn_gpu->graph_free(u->g);
    u->g = NULL;
    return 0;
}

/* g:capture_begin({pool = other_graph | other_graph:pool()}) */
static int graph_capture_begin(lua_State *L)
{
    static const char *const keys[] = {"pool", "capture_error_mode", NULL};
    graph_ud *u = check_graph(L, 1);
    nn_gpu_graph *share = NULL;
    lt_check_opts(L, 2, keys);
    if (lt_opt(L, 2, "pool") != LUA_TNIL) {
        graph_ud *o = luaL_testudata(L, -1, GRAPH_MT);
        if (!o || !o->g) return luaL_argerror(L, 2, "pool must be another CUDAGraph's pool() (or that graph)");
        share = o->g;
        lua_pushvalue(L, -1);
        lua_setiuservalue(L, 1, 1); /* the pool's graph lives as long as this one */
    }
    if (nn_gpu->graph_capture_begin(u->g, share)) return lt_fail(L, 0);
    return 0;
}

static int graph_call(lua_State *L, nn_status (*fn)(nn_gpu_graph *))
{
    if (fn(check_graph(L, 1)->g)) return lt_fail(L, 0);
    return 0;
}
static int graph_capture_end(lua_State *L) { return graph_call(L, nn_gpu->graph_capture_end); }
static int graph_replay(lua_State *L) { return graph_call(L, nn_gpu->graph_replay); }

static int graph_reset(lua_State *L)
{
    graph_call(L, nn_gpu->graph_reset);
    lua_pushnil(L);
    lua_setiuservalue(L, 1, 1);
    return 0;
}

/* a handle for capture_begin's pool option: the graph itself serves */
static int graph_pool(lua_State *L)
{
    check_graph(L, 1);
    lua_settop(L, 1);
    return 1;
}

void lt_open_cuda_graph(lua_State *L)
{
    int torch = lua_gettop(L);
    static const luaL_Reg methods[] = {{"capture_begin", graph_capture_begin}, {"capture_end", graph_capture_end},
                                       {"replay", graph_replay}, {"reset", graph_reset}, {"pool", graph_pool}, {NULL, NULL}};
    luaL_newmetatable(L, GRAPH_MT);
    lua_pushcfunction(L, graph_gc);
    lua_setfield(L, -2, "__gc");
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    lua_setfield(L, -2, "__index");
    lua_settop(L, torch);
    luaL_getsubtable(L, torch, "cuda");
    lua_pushcfunction(L, graph_new);
    lua_setfield(L, -2, "CUDAGraph");
    lua_settop(L, torch);
}
