/* Saved-tensor hooks from Lua: torch._set_saved_tensors_hooks(pack, unpack) makes that pair the
 * one the engine calls as nodes save tensors (no arguments: none). A node then keeps pack's
 * result (any Lua value, in the registry) with unpack, which gives the tensor back at backward.
 * bindings/lua/torch_autograd_graph.lua keeps the stack of contexts on top of it. */
#include <stdlib.h>

#include "autograd.h"
#include "lt.h"

typedef struct {
    nn_packed base;
    lua_State *main; /* the registry's owner, which outlives any coroutine */
    int value, unpack;
} lua_packed;

/* the current pair, and the state that set it (pack runs there) */
static _Thread_local struct {
    lua_State *L;
    int pack, unpack;
} cur = {NULL, LUA_NOREF, LUA_NOREF};

static lua_State *main_state(lua_State *L)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    lua_State *m = lua_tothread(L, -1);
    lua_pop(L, 1);
    return m;
}

/* a Lua error at the top of L as the engine's error */
static nn_status from_lua(lua_State *L)
{
    nn_status st = nn_error(NN_ERR_RUNTIME, "%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "error in a saved tensor hook");
    lua_pop(L, 1);
    return st;
}

static int call_pack(lua_State *L) /* (t) -> pack(t) */
{
    nn_tensor *t = lua_touserdata(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, cur.pack);
    lt_push(L, nn_retain(t));
    lua_call(L, 1, 1);
    return 1;
}

static void packed_free(nn_packed *p)
{
    lua_packed *q = (lua_packed *)p;
    luaL_unref(q->main, LUA_REGISTRYINDEX, q->value);
    luaL_unref(q->main, LUA_REGISTRYINDEX, q->unpack);
    free(q);
}

static int call_unpack(lua_State *L) /* (q) -> the tensor unpack(value) returns */
{
    lua_packed *q = lua_touserdata(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, q->unpack);
    lua_rawgeti(L, LUA_REGISTRYINDEX, q->value);
    lua_call(L, 1, 1);
    if (!lt_is_tensor(L, -1))
        return luaL_error(L, "Output of saved tensor unpack_hook expected to be a Tensor but got result of type %s", luaL_typename(L, -1));
    return 1;
}

static nn_tensor *packed_unpack(nn_packed *p)
{
    lua_packed *q = (lua_packed *)p;
    lua_State *L = lt_backward_state() ? lt_backward_state() : q->main;
    lua_pushcfunction(L, call_unpack);
    lua_pushlightuserdata(L, q);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) return from_lua(L), NULL;
    nn_tensor *t = nn_retain(lt_totensor(L, -1));
    lua_pop(L, 1);
    return t;
}

static nn_packed *pack(nn_tensor *t)
{
    lua_State *L = cur.L;
    lua_packed *q = malloc(sizeof *q);
    if (!q) return nn_error(NN_ERR_NOMEM, "out of memory"), NULL;
    uint32_t version = t->storage->version;
    lua_pushcfunction(L, call_pack);
    lua_pushlightuserdata(L, t);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        free(q);
        return from_lua(L), NULL;
    }
    if (t->storage->version != version) {
        lua_pop(L, 1);
        free(q);
        nn_error(NN_ERR_RUNTIME, "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook can not "
                                 "be modified by in-place operations as this can lead to unexpected side-effects. Please open an issue if "
                                 "you need to perform in-place operations on the input to a pack hook.");
        return NULL;
    }
    q->base = (nn_packed){packed_unpack, packed_free};
    q->main = main_state(L);
    q->value = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_rawgeti(L, LUA_REGISTRYINDEX, cur.unpack);
    q->unpack = luaL_ref(L, LUA_REGISTRYINDEX);
    return &q->base;
}

/* torch._set_saved_tensors_hooks([pack, unpack]) */
static int set_saved_tensors_hooks(lua_State *L)
{
    bool on = !lua_isnoneornil(L, 1);
    if (on) {
        luaL_checktype(L, 1, LUA_TFUNCTION);
        luaL_checktype(L, 2, LUA_TFUNCTION);
    }
    luaL_unref(L, LUA_REGISTRYINDEX, cur.pack);
    luaL_unref(L, LUA_REGISTRYINDEX, cur.unpack);
    cur.pack = cur.unpack = LUA_NOREF;
    cur.L = NULL;
    nn_set_saved_tensor_pack(NULL);
    if (!on) return 0;
    lua_pushvalue(L, 1);
    cur.pack = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushvalue(L, 2);
    cur.unpack = luaL_ref(L, LUA_REGISTRYINDEX);
    cur.L = L;
    nn_set_saved_tensor_pack(pack);
    return 0;
}

void lt_open_saved_hooks(lua_State *L)
{
    lua_pushcfunction(L, set_saved_tensors_hooks);
    lua_setfield(L, -2, "_set_saved_tensors_hooks");
}
