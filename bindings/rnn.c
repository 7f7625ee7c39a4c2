/* torch._cudnn_rnn: cuDNN's RNN (engine/rnn.h) for nn.RNN, nn.LSTM and nn.GRU on CUDA
 * (bindings/lua/nn_rnn.lua decides when to use it).
 *   y, hy, cy = torch._cudnn_rnn(mode, x, hx, cx, weights, num_layers, bidirectional, lengths)
 * mode "RNN_RELU" | "RNN_TANH" | "LSTM" | "GRU"; x [T, N, I]; hx (and cx for LSTM, else nil)
 * [num_layers * directions, N, H]; weights the list of parameters in PyTorch's order; lengths
 * nil or a list of N sequence lengths (a packed batch in padded form). cy is nil but for LSTM. */
#include <stdlib.h>

#include "lt.h"
#include "rnn.h"

static int f_cudnn_rnn(lua_State *L)
{
    static const char *const modes[] = {"RNN_RELU", "RNN_TANH", "LSTM", "GRU", NULL};
    nn_rnn_mode mode = (nn_rnn_mode)luaL_checkoption(L, 1, NULL, modes);
    nn_tensor *x = lt_check(L, 2), *hx = lt_check(L, 3), *cx = lua_isnil(L, 4) ? NULL : lt_check(L, 4);
    luaL_checktype(L, 5, LUA_TTABLE);
    lua_Integer layers = luaL_checkinteger(L, 6);
    luaL_checktype(L, 7, LUA_TBOOLEAN);
    bool bidirectional = lua_toboolean(L, 7);
    int64_t *lengths = NULL;
    if (!lua_isnoneornil(L, 8)) {
        luaL_checktype(L, 8, LUA_TTABLE);
        lua_Integer n = luaL_len(L, 8);
        lengths = lua_newuserdatauv(L, (n ? n : 1) * sizeof *lengths, 0); /* freed by the GC */
        for (lua_Integer i = 1; i <= n; i++) {
            lua_rawgeti(L, 8, i);
            lengths[i - 1] = luaL_checkinteger(L, -1);
            lua_pop(L, 1);
        }
        if (x->ndim == 3 && n != x->shape[1]) return luaL_error(L, "_cudnn_rnn: %d lengths for a batch of %d", (int)n, (int)x->shape[1]);
    }
    int nw = 0;
    nn_tensor **w = lt_tensor_list(L, 5, &nw, LT_TENSORS); /* last: it pushes its buffer */
    nn_tensor *y, *hy, *cy;
    if (nn_rnn(mode, x, hx, cx, w, nw, layers, bidirectional, lengths, &y, &hy, &cy)) return lt_fail(L, 0);
    lt_push(L, y);
    lt_push(L, hy);
    if (cy) lt_push(L, cy);
    else lua_pushnil(L);
    return 3;
}

void lt_open_rnn(lua_State *L)
{
    lua_pushcfunction(L, f_cudnn_rnn);
    lua_setfield(L, -2, "_cudnn_rnn");
}
