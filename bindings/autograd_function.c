/* torch._function_node: the graph node of a custom torch.autograd.Function
 * (bindings/lua/torch_autograd_function.lua runs forward and calls this). Its backward calls
 * a Lua function with one gradient per forward output and takes one gradient per forward
 * argument back, checked against the argument's shape and device. */
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "lt.h"

typedef struct {
    lua_State *owner; /* the main thread: the registry outlives any coroutine */
    int ref;          /* backward(g1, ..., gk) */
    char name[96];    /* "<Class>Backward" */
    int nouts;        /* forward's results: output_nr[j] >= 0 for the differentiable tensors */
    int output_nr[16];
    struct { int ndim; int64_t shape[NN_MAX_DIMS]; nn_dtype dtype; nn_device device; } meta[NN_NODE_MAX_OUT];
} fn_ctx;

/* the custom Function node whose Lua backward runs now (for its saved outputs) */
static _Thread_local nn_node *running;

static void fn_ctx_free(void *p)
{
    fn_ctx *c = p;
    luaL_unref(c->owner, LUA_REGISTRYINDEX, c->ref);
    free(c);
}

/* the input's shape can be broadcast to the gradient's (the engine then sums it down) */
static bool expandable(const nn_edge *e, const nn_tensor *g)
{
    if (g->ndim < e->ndim) return false;
    for (int i = 1; i <= e->ndim; i++) {
        int64_t a = e->shape[e->ndim - i], b = g->shape[g->ndim - i];
        if (a != b && a != 1) return false;
    }
    return true;
}

static nn_status fn_backward(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    fn_ctx *c = n->ctx;
    lua_State *L = lt_backward_state();
    if (!L) return nn_error(NN_ERR_RUNTIME, "%s: a Lua function run during backward needs backward started from Lua", c->name);
    int top = lua_gettop(L);
    if (!lua_checkstack(L, c->nouts + 3)) return nn_error(NN_ERR_NOMEM, "%s: out of Lua stack", c->name);
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref);
    lua_pushboolean(L, nn_backward_retains_graph()); /* false: ctx lets its saved tensors go after */
    for (int j = 0; j < c->nouts; j++) {
        int k = c->output_nr[j];
        if (k < 0) lua_pushnil(L);
        else if (grad_out[k]) lt_push(L, nn_retain(grad_out[k]));
        else { /* an output no gradient reached: zeros, as PyTorch materializes them */
            nn_tensor *z = nn_zeros(c->meta[k].ndim, c->meta[k].shape, c->meta[k].dtype, c->meta[k].device);
            if (!z) {
                lua_settop(L, top);
                return nn_last_status();
            }
            lt_push(L, z);
        }
    }
    nn_node *outer = running;
    running = n;
    int rc = lua_pcall(L, c->nouts + 1, LUA_MULTRET, 0);
    running = outer;
    if (rc != LUA_OK) {
        nn_status st = nn_error(NN_ERR_RUNTIME, "%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "error in a custom Function's backward");
        lua_settop(L, top);
        return st;
    }
    int got = lua_gettop(L) - top;
    nn_status st = NN_OK;
    while (got > n->nin && lua_isnil(L, top + got)) got--; /* trailing nils past the arguments are dropped, as PyTorch does */
    if (got != n->nin)
        st = nn_error(NN_ERR_RUNTIME, "function %s returned an incorrect number of gradients (expected %d, got %d)", c->name, n->nin, got);
    for (int i = 0; i < n->nin && !st; i++) {
        int idx = top + 1 + i;
        if (lua_isnil(L, idx)) continue;
        nn_tensor *g = lt_totensor(L, idx);
        const nn_edge *e = &n->next[i];
        char a[160], b[160];
        if (!g)
            st = nn_error(NN_ERR_RUNTIME, "function %s returned an invalid gradient at index %d - expected a Tensor or nil, got %s", c->name, i,
                          luaL_typename(L, idx));
        else if (!e->node) /* an argument that needs no gradient: its gradient is dropped */
            continue;
        else if (!expandable(e, g))
            st = nn_error(NN_ERR_SHAPE, "function %s returned an invalid gradient at index %d - got %s but expected shape compatible with %s",
                          c->name, i, nn_shape_str(a, g->ndim, g->shape), nn_shape_str(b, e->ndim, e->shape));
        else if (g->storage->device.type != e->device.type || g->storage->device.index != e->device.index)
            st = nn_error(NN_ERR_DEVICE, "function %s returned an invalid gradient at index %d - wrong device", c->name, i);
        else
            grad_in[i] = nn_retain(g);
    }
    if (st)
        for (int i = 0; i < n->nin; i++) {
            nn_release(grad_in[i]);
            grad_in[i] = NULL;
        }
    lua_settop(L, top);
    return st;
}

/* torch._function_node(name, args, nargs, outs, backward): args[1..nargs] are forward's
 * arguments, outs its results (a list, n = #outs... given as outs.n); the tensors among the
 * results that need a gradient (not in the set outs.non_differentiable) become the node's
 * outputs. A result that already has a history or is a leaf that requires grad (an argument
 * returned as it is) is replaced by an alias. Returns the results. backward is called as
 * backward(retain_graph, g1, ..., gk). */
static int function_node(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    int nargs = (int)luaL_checkinteger(L, 3);
    luaL_checktype(L, 4, LUA_TTABLE);
    luaL_checktype(L, 5, LUA_TFUNCTION);
    lua_getfield(L, 4, "n");
    int nouts = (int)luaL_optinteger(L, -1, (lua_Integer)lua_rawlen(L, 4));
    lua_pop(L, 1);
    if (nouts > 16) return luaL_error(L, "%s: a custom Function returns at most 16 values here", name);
    lua_getfield(L, 4, "non_differentiable");
    int nondiff = lua_gettop(L);
    nn_tensor **in = lua_newuserdatauv(L, sizeof *in * (size_t)(nargs ? nargs : 1), 0);
    for (int i = 0; i < nargs; i++) {
        lua_rawgeti(L, 2, i + 1);
        in[i] = lt_totensor(L, -1);
        lua_pop(L, 1);
    }
    fn_ctx *c = calloc(1, sizeof *c);
    if (!c) return luaL_error(L, "out of memory");
    snprintf(c->name, sizeof c->name, "%s", name);
    c->nouts = nouts;
    nn_node *node = nn_node_new(c->name, fn_backward, nargs, in);
    if (!node) {
        free(c);
        return lt_fail(L, 0);
    }
    node->ctx = c;
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    c->owner = lua_tothread(L, -1);
    lua_pop(L, 1);
    lua_pushvalue(L, 5);
    c->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    node->ctx_free = fn_ctx_free;
    int k = 0;
    for (int j = 0; j < nouts; j++) {
        c->output_nr[j] = -1;
        lua_rawgeti(L, 4, j + 1);
        nn_tensor *t = lt_totensor(L, -1);
        bool skip = !t || !(nn_dtype_is_float(t->dtype) || nn_dtype_is_complex(t->dtype));
        if (t && !skip && lua_istable(L, nondiff)) {
            lua_pushvalue(L, -1);
            skip = lua_rawget(L, nondiff) != LUA_TNIL;
            lua_pop(L, 1);
        }
        if (skip) {
            lua_pop(L, 1);
            continue;
        }
        if (k == NN_NODE_MAX_OUT) {
            nn_node_release(node);
            return luaL_error(L, "%s: a custom Function has at most %d differentiable outputs here; mark the others with "
                                 "ctx:mark_non_differentiable(...)", name, NN_NODE_MAX_OUT);
        }
        if (t->grad_fn || t->requires_grad) { /* an argument returned as it is, or a view of one: an alias gets the history */
            t = nn_detach(t);
            if (!t) {
                nn_node_release(node);
                return lt_fail(L, 0);
            }
            lt_push(L, t);
            lua_rawseti(L, 4, j + 1);
        }
        c->output_nr[j] = k;
        c->meta[k].ndim = t->ndim;
        memcpy(c->meta[k].shape, t->shape, sizeof t->shape);
        c->meta[k].dtype = t->dtype;
        c->meta[k].device = t->storage->device;
        nn_node_set_output(node, t, k++);
        lua_pop(L, 1);
    }
    nn_node_release(node); /* the outputs hold it */
    lua_pushvalue(L, 4);
    return 1;
}

/* torch._function_saved_output(t, j): t, a detached alias of the running Function's j-th
 * result (1-based) that ctx saved, given back with that node as grad_fn while backward
 * records a graph (create_graph), so double backward reaches through it; else t itself. */
static int function_saved_output(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int j = (int)luaL_checkinteger(L, 2);
    fn_ctx *c = running ? running->ctx : NULL;
    if (!c || !nn_backward_creates_graph() || j < 1 || j > c->nouts || c->output_nr[j - 1] < 0) {
        lua_settop(L, 1);
        return 1;
    }
    nn_tensor *a = nn_detach(t);
    if (!a) return lt_fail(L, 0);
    nn_node_set_output(running, a, c->output_nr[j - 1]);
    lt_push(L, a);
    return 1;
}

void lt_open_autograd_function(lua_State *L)
{
    lua_pushcfunction(L, function_saved_output);
    lua_setfield(L, -2, "_function_saved_output");
    lua_pushstring(L, nn_saved_freed_message);
    lua_setfield(L, -2, "_saved_freed_message");
    lua_pushcfunction(L, function_node);
    lua_setfield(L, -2, "_function_node");
}
