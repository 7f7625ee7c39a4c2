/* torch._argsort(x, dim, descending): the engine's stable argsort (engine/sort.h).
 * The Lua half (bindings/lua/torch_gather_sort.lua) builds sort, argsort, topk,
 * kthvalue, median and msort on it, taking values with gather. */
#include "lt.h"
#include "sort.h"

static int s_argsort(lua_State *L)
{
    nn_tensor *x = lt_check(L, 1);
    int dim = (int)luaL_optinteger(L, 2, -1);
    bool descending = lua_toboolean(L, 3);
    lt_push_or_fail(L, nn_argsort(x, dim, descending), 2);
    return 1;
}

void lt_open_sort(lua_State *L)
{
    lua_pushcfunction(L, s_argsort);
    lua_setfield(L, -2, "_argsort");
}
