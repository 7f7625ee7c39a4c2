/* torch._backends: get(name) and set(name, bool) for the switches of engine/cuda_flags.h;
 * bindings/lua/torch_backends.lua builds torch.backends and set_float32_matmul_precision
 * on them. Names: "matmul.allow_tf32", "cudnn.allow_tf32", "cudnn.benchmark", "cudnn.deterministic", and "deterministic" and
 * "deterministic.warn_only" for torch.use_deterministic_algorithms (bindings/lua/torch_shape_more.lua), and
 * "mkldnn.enabled" (engine/cpu/kernels.h). */
#include <string.h>

#include "cpu/kernels.h"
#include "cuda_flags.h"
#include "lt.h"

static bool *flag(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    if (!strcmp(name, "matmul.allow_tf32")) return &nn_cuda_allow_tf32;
    if (!strcmp(name, "cudnn.allow_tf32")) return &nn_cudnn_allow_tf32;
    if (!strcmp(name, "cudnn.benchmark")) return &nn_cudnn_benchmark;
    if (!strcmp(name, "cudnn.deterministic")) return &nn_cudnn_deterministic;
    if (!strcmp(name, "deterministic")) return &nn_deterministic_algorithms;
    if (!strcmp(name, "deterministic.warn_only")) return &nn_deterministic_warn_only;
    if (!strcmp(name, "mkldnn.enabled")) return &nn_mkldnn_enabled;
    luaL_argerror(L, 1, lua_pushfstring(L, "no switch named '%s'", name));
    return NULL;
}

static int get(lua_State *L)
{
    lua_pushboolean(L, *flag(L));
    return 1;
}

static int set(lua_State *L)
{
    bool *f = flag(L);
    luaL_checktype(L, 2, LUA_TBOOLEAN);
    *f = lua_toboolean(L, 2);
    return 0;
}

void lt_open_backends(lua_State *L)
{
    static const luaL_Reg fns[] = {{"get", get}, {"set", set}, {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_setfield(L, -2, "_backends");
}
