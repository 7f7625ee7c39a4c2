/* torch._tracer: the engine's op tracer (engine/tracer.h) for bindings/lua/torch_onnx.lua.
 * start(), stop(), clear(), running(), ops() -> a list of {name, ins = {tensor | false, ...},
 * outs = {tensor, ...}, i = {8 integers}, f = {8 numbers}, dims}, storage(t) -> an integer naming
 * t's storage (equal for tensors that share it), bytes(t) -> the values of a contiguous CPU tensor,
 * count() -> how many ops are recorded so far. */
#include "lt.h"
#include "tracer.h"

static int t_start(lua_State *L)
{
    if (nn_tracer_start()) return lt_fail(L, 0);
    return 0;
}

static int t_stop(lua_State *L)
{
    if (nn_tracer_stop()) return lt_fail(L, 0);
    return 0;
}

static int t_clear(lua_State *L)
{
    (void)L;
    nn_tracer_clear();
    return 0;
}

static int t_running(lua_State *L)
{
    lua_pushboolean(L, nn_tracing);
    return 1;
}

static int t_count(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)nn_tracer_count());
    return 1;
}

static void push_list(lua_State *L, nn_tensor *const *ts, int n)
{
    lua_createtable(L, n, 0);
    for (int k = 0; k < n; k++) {
        if (ts[k]) lt_push(L, nn_retain(ts[k]));
        else lua_pushboolean(L, 0);
        lua_rawseti(L, -2, k + 1);
    }
}

static int t_ops(lua_State *L)
{
    int64_t n = nn_tracer_count();
    lua_createtable(L, (int)n, 0);
    for (int64_t j = 0; j < n; j++) {
        const nn_trace_op *r = nn_tracer_op(j);
        lua_createtable(L, 0, 6);
        lua_pushstring(L, nn_op_name(r->op));
        lua_setfield(L, -2, "name");
        push_list(L, r->in, r->nin);
        lua_setfield(L, -2, "ins");
        int nout = 0;
        while (nout < 3 && r->out[nout]) nout++;
        push_list(L, r->out, nout);
        lua_setfield(L, -2, "outs");
        lua_createtable(L, 8, 0);
        for (int k = 0; k < 8; k++) {
            lua_pushinteger(L, r->i[k]);
            lua_rawseti(L, -2, k + 1);
        }
        lua_setfield(L, -2, "i");
        lua_createtable(L, 8, 0);
        for (int k = 0; k < 8; k++) {
            lua_pushnumber(L, r->f[k]);
            lua_rawseti(L, -2, k + 1);
        }
        lua_setfield(L, -2, "f");
        lua_pushinteger(L, r->dims);
        lua_setfield(L, -2, "dims");
        lua_rawseti(L, -2, (lua_Integer)j + 1);
    }
    return 1;
}

static int t_storage(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)(intptr_t)lt_check(L, 1)->storage);
    return 1;
}

/* bytes(t): the values of t (contiguous, on the CPU) as a string, in the machine's order */
static int t_bytes(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (t->storage->device.type != NN_CPU || !nn_is_contiguous(t)) return luaL_argerror(L, 1, "expected a contiguous CPU tensor");
    lua_pushlstring(L, (const char *)nn_data(t), (size_t)nn_numel(t) * nn_dtype_size(t->dtype));
    return 1;
}

void lt_open_tracer(lua_State *L)
{
    static const luaL_Reg fns[] = {{"start", t_start}, {"stop", t_stop},   {"clear", t_clear},     {"running", t_running},
                                   {"ops", t_ops},     {"storage", t_storage}, {"bytes", t_bytes},
                                   {"count", t_count}, {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_setfield(L, -2, "_tracer");
}
