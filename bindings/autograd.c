/* Autograd from Lua: x:backward(), detach, requires_grad_, retain_grad, x.grad_fn,
 * and the grad-mode switches torch.no_grad / enable_grad / set_grad_enabled /
 * inference_mode, each a to-be-closed value (`local _ <close> = torch.no_grad()`) or a
 * function runner (`torch.no_grad(function() ... end)`). */
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "lt.h"

static const char GRAD_MODE_MT[] = "torch.grad_mode";
static const char NODE_MT[] = "torch.autograd.Node";

static _Thread_local lua_State *backward_L; /* the state running x:backward(), for pass-end functions */

lua_State *lt_backward_state(void) { return backward_L; }

/* The tensors at idx: one tensor, or a list of them (borrowed; a buffer is pushed). */
static nn_tensor **tensors_arg(lua_State *L, int idx, int *n, const char *what)
{
    idx = lua_absindex(L, idx);
    if (lt_is_tensor(L, idx)) {
        nn_tensor **ts = lua_newuserdatauv(L, sizeof *ts, 0);
        ts[0] = lt_check(L, idx);
        *n = 1;
        return ts;
    }
    if (lua_type(L, idx) != LUA_TTABLE) luaL_argerror(L, idx, lua_pushfstring(L, "%s: a tensor or a list of tensors expected", what));
    return lt_tensor_list(L, idx, n, LT_TENSORS);
}

/* n gradients for n roots at idx: nil or idx 0 (all implicit), one tensor, or a list with nil holes */
static nn_tensor **grads_arg(lua_State *L, int idx, int n)
{
    nn_tensor **gs = lua_newuserdatauv(L, sizeof *gs * (size_t)(n ? n : 1), 0);
    for (int i = 0; i < n; i++) gs[i] = NULL;
    if (!idx || lua_isnoneornil(L, idx)) return gs;
    if (lt_is_tensor(L, idx)) {
        if (n != 1) luaL_argerror(L, idx, lua_pushfstring(L, "%d gradients expected, one for each tensor", n));
        gs[0] = lt_check(L, idx);
        return gs;
    }
    luaL_checktype(L, idx, LUA_TTABLE);
    if ((int)lua_rawlen(L, idx) > n) luaL_argerror(L, idx, lua_pushfstring(L, "%d gradients expected, one for each tensor, got %d", n, (int)lua_rawlen(L, idx)));
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, idx, i + 1);
        if (!lua_isnil(L, -1)) gs[i] = lt_check(L, -1);
        lua_pop(L, 1);
    }
    return gs;
}

/* keyword options at idx: a plain table with no numeric keys (a list of gradients may start with nil) */
static bool is_opts(lua_State *L, int idx)
{
    if (!lt_is_opts(L, idx)) return false;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        bool numeric = lua_type(L, -2) == LUA_TNUMBER;
        lua_pop(L, 1);
        if (numeric) {
            lua_pop(L, 1);
            return false;
        }
    }
    return true;
}

static nn_status run_backward(lua_State *L, int nroots, nn_tensor *const *roots, nn_tensor *const *grads, bool retain,
                              bool create, const nn_grad_targets *want)
{
    if (nn_take_deferred_error()) return nn_last_status();
    lua_State *outer = backward_L;
    backward_L = L;
    nn_status st = nn_backward_ex(nroots, roots, grads, retain, create, want);
    backward_L = outer;
    return st;
}

/* `inputs` (at idx, may be nil): the tensors whose .grad a backward fills, as PyTorch's */
static nn_grad_targets inputs_arg(lua_State *L, int idx)
{
    nn_grad_targets w = {0, NULL, NULL};
    if (lua_isnil(L, idx)) return w;
    w.t = tensors_arg(L, idx, &w.n, "inputs");
    if (!w.n) luaL_argerror(L, idx, "'inputs' argument to backward() cannot be empty.");
    return w;
}

static const char *const backward_keys[] = {"gradient", "retain_graph", "create_graph", "inputs", NULL};

/* x:backward([gradient], [retain_graph]) or x:backward({gradient=, retain_graph=, inputs=}) */
static int t_backward(lua_State *L)
{
    lua_settop(L, 3);
    nn_tensor *t = lt_check(L, 1);
    nn_tensor *grad = NULL;
    int retain = 0, create = 0;
    nn_grad_targets want = {0, NULL, NULL};
    if (lt_is_opts(L, 2)) {
        lt_check_opts(L, 2, backward_keys);
        if (lt_opt(L, 2, "gradient") != LUA_TNIL) grad = lt_check(L, lua_gettop(L));
        create = lt_opt_bool(L, 2, "create_graph", 0);
        retain = lt_opt_bool(L, 2, "retain_graph", create); /* PyTorch's default: create_graph */
        lt_opt(L, 2, "inputs");
        want = inputs_arg(L, lua_gettop(L));
    } else {
        if (!lua_isnoneornil(L, 2)) grad = lt_check(L, 2);
        retain = lua_toboolean(L, 3);
    }
    if (run_backward(L, 1, &t, &grad, retain, create, &want)) return lt_fail(L, 0);
    return 0;
}

/* torch.autograd.backward's and grad's gradients for n roots, positional at pos or under key in
 * the options, which are at pos or pos + 1 (their index is returned; 0: none) */
static int grads_and_opts(lua_State *L, int pos, const char *key, const char *const *keys, int n, nn_tensor ***grads, bool *retain,
                          bool *create)
{
    int opts = is_opts(L, pos + 1) ? pos + 1 : is_opts(L, pos) ? pos : 0; /* grads {} or {nil} then options */
    int gidx = opts == pos ? 0 : pos;
    if (opts) {
        lt_check_opts(L, opts, keys);
        if (lt_opt(L, opts, key) != LUA_TNIL) gidx = lua_gettop(L);
    }
    *grads = grads_arg(L, gidx, n);
    *create = opts && lt_opt_bool(L, opts, "create_graph", 0);
    *retain = opts && lt_opt_bool(L, opts, "retain_graph", *create); /* PyTorch's default: create_graph */
    return opts;
}

static const char *const autograd_backward_keys[] = {"grad_tensors", "retain_graph", "create_graph", "inputs", NULL};

/* torch.autograd.backward(tensors, [grad_tensors], [{grad_tensors=, retain_graph=, inputs=}]) */
static int autograd_backward(lua_State *L)
{
    lua_settop(L, 3); /* the arguments keep their places as buffers are pushed */
    int n;
    nn_tensor **roots = tensors_arg(L, 1, &n, "tensors");
    nn_tensor **grads;
    bool retain, create;
    int opts = grads_and_opts(L, 2, "grad_tensors", autograd_backward_keys, n, &grads, &retain, &create);
    nn_grad_targets want = {0, NULL, NULL};
    if (opts) {
        lt_opt(L, opts, "inputs");
        want = inputs_arg(L, lua_gettop(L));
    }
    if (run_backward(L, n, roots, grads, retain, create, &want)) return lt_fail(L, 0);
    return 0;
}

/* only_inputs: accepted and ignored, as PyTorch has since 0.4 (WGAN-GP code still passes it) */
static const char *const autograd_grad_keys[] = {"grad_outputs", "retain_graph", "create_graph", "allow_unused", "materialize_grads",
                                                 "only_inputs", NULL};

/* torch.autograd.grad(outputs, inputs, [grad_outputs], [{grad_outputs=, retain_graph=,
 * allow_unused=, materialize_grads=}]): the gradients of the outputs with respect to the
 * inputs, as a list (nil for an unused input where allowed), with no .grad touched */
static int autograd_grad(lua_State *L)
{
    lua_settop(L, 4); /* the arguments keep their places as buffers are pushed */
    int nout, nin;
    nn_tensor **outs = tensors_arg(L, 1, &nout, "outputs");
    nn_tensor **ins = tensors_arg(L, 2, &nin, "inputs");
    nn_tensor **grads;
    bool retain, create;
    int opts = grads_and_opts(L, 3, "grad_outputs", autograd_grad_keys, nout, &grads, &retain, &create);
    bool materialize = opts && lt_opt_bool(L, opts, "materialize_grads", 0);
    bool allow_unused = opts && lt_opt_bool(L, opts, "allow_unused", materialize);
    nn_tensor **res = lua_newuserdatauv(L, sizeof *res * (size_t)(nin ? nin : 1), 0);
    for (int i = 0; i < nin; i++) res[i] = NULL;
    nn_grad_targets want = {nin, ins, res};
    if (run_backward(L, nout, outs, grads, retain, create, &want)) return lt_fail(L, 0);
    int missing = 0;
    for (int i = 0; i < nin; i++) missing |= !res[i];
    if (missing && !allow_unused) {
        for (int i = 0; i < nin; i++) nn_release(res[i]);
        return luaL_error(L, "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.");
    }
    lua_createtable(L, nin, 0);
    for (int i = 0; i < nin; i++) {
        nn_tensor *g = res[i] ? res[i] : materialize ? nn_zeros(ins[i]->ndim, ins[i]->shape, ins[i]->dtype, ins[i]->storage->device) : NULL;
        if (!g && materialize) {
            for (int j = i + 1; j < nin; j++) nn_release(res[j]);
            return lt_fail(L, 0);
        }
        if (!g) continue;
        lt_push(L, g);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* A Lua function the engine calls during backward: in the state running x:backward(). */
typedef struct { lua_State *owner; int ref; } lua_fn;

static lua_fn *lua_fn_new(lua_State *L, int idx)
{
    lua_fn *c = malloc(sizeof *c);
    if (!c) return NULL;
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD); /* the registry outlives any coroutine */
    c->owner = lua_tothread(L, -1);
    lua_pop(L, 1);
    lua_pushvalue(L, idx);
    c->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return c;
}

static void lua_fn_free(void *p)
{
    lua_fn *c = p;
    luaL_unref(c->owner, LUA_REGISTRYINDEX, c->ref);
    free(c);
}

/* calls it with the leaf (a hook) or with nothing (leaf NULL) */
static nn_status lua_fn_call(lua_fn *c, nn_tensor *leaf)
{
    lua_State *L = backward_L;
    if (!L) return nn_error(NN_ERR_RUNTIME, "a Lua function run during backward needs backward started from Lua");
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref);
    if (leaf) lt_push(L, nn_retain(leaf));
    if (lua_pcall(L, leaf ? 1 : 0, 0, 0) == LUA_OK) return NN_OK;
    nn_status st = nn_error(NN_ERR_RUNTIME, "%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "error in a function run during backward");
    lua_pop(L, 1);
    return st;
}

/* a tensor hook: fn(grad) may return a tensor that replaces grad */
static nn_status call_tensor_hook(nn_tensor *grad, void *p, nn_tensor **out)
{
    lua_fn *c = p;
    lua_State *L = backward_L;
    if (!L) return nn_error(NN_ERR_RUNTIME, "a Lua function run during backward needs backward started from Lua");
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref);
    lt_push(L, nn_retain(grad));
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        nn_status st = nn_error(NN_ERR_RUNTIME, "%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "error in a function run during backward");
        lua_pop(L, 1);
        return st;
    }
    nn_status st = NN_OK;
    if (!lua_isnil(L, -1)) {
        nn_tensor *r = lt_totensor(L, -1);
        if (r) *out = nn_retain(r);
        else st = nn_error(NN_ERR_ARG, "a hook registered with register_hook must return a Tensor or nil, not a %s", luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    return st;
}

static nn_status call_pass_end(void *p) { return lua_fn_call(p, NULL); }
static nn_status call_grad_hook(nn_tensor *leaf, void *p) { return lua_fn_call(p, leaf); }

/* torch._at_backward_end(t, fn): fn() runs at the end of every backward pass through
 * t's grad_fn (DataParallel's gradient reduction). */
static int at_backward_end(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    if (!t->grad_fn) return luaL_argerror(L, 1, "the tensor has no grad_fn");
    lua_fn *c = lua_fn_new(L, 2);
    if (!c) return luaL_error(L, "out of memory");
    if (nn_node_at_pass_end(t->grad_fn, call_pass_end, c, lua_fn_free)) return lt_fail(L, 0);
    return 0;
}

/* torch._accumulate_grad(p, g): p.grad += g, or a copy of g when p has none, without making a
 * Tensor userdata for p.grad (DataParallel's per-step gather; bindings/tensor.c's GC pacing
 * counts a pushed tensor's bytes at every read) */
static int accumulate_grad(lua_State *L)
{
    nn_tensor *p = lt_check(L, 1), *g = nn_retain(lt_check(L, 2)); /* held twice: .grad gets a copy, never g */
    nn_status st = nn_accumulate_grad(p, g);
    nn_release(g);
    if (st) return lt_fail(L, 2);
    return 0;
}

static int remove_hook(lua_State *L)
{
    nn_tensor *t = lt_totensor(L, lua_upvalueindex(1));
    int64_t handle = (int64_t)lua_tointeger(L, lua_upvalueindex(2));
    if (t && handle) nn_remove_grad_hook(t, handle);
    lua_pushinteger(L, 0);
    lua_replace(L, lua_upvalueindex(2));
    return 0;
}

static int64_t add_post_hook(nn_tensor *t, lua_fn *c) { return nn_add_post_accumulate_grad_hook(t, call_grad_hook, c, lua_fn_free); }
static int64_t add_tensor_hook(nn_tensor *t, lua_fn *c) { return nn_add_tensor_hook(t, call_tensor_hook, c, lua_fn_free); }

/* the handle of hook h (fn c) on the tensor or node at 1: {remove = remove(that, h)}; h 0: c is
 * freed and the error raised */
static int push_handle(lua_State *L, int64_t h, lua_fn *c, lua_CFunction remove)
{
    if (!h) {
        lua_fn_free(c);
        return lt_fail(L, 0);
    }
    lua_newtable(L);
    lua_pushvalue(L, 1);
    lua_pushinteger(L, (lua_Integer)h);
    lua_pushcclosure(L, remove, 2);
    lua_setfield(L, -2, "remove");
    return 1;
}

/* t:<register>(fn) with add(t, fn); returns a handle whose remove() takes the hook off */
static int register_with(lua_State *L, int64_t (*add)(nn_tensor *, lua_fn *))
{
    nn_tensor *t = lt_check(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_fn *c = lua_fn_new(L, 2);
    if (!c) return luaL_error(L, "out of memory");
    return push_handle(L, add(t, c), c, remove_hook);
}

/* p:register_post_accumulate_grad_hook(fn): fn(p) after each backward pass has accumulated
 * p's gradient (p a leaf) */
static int t_register_post_accumulate_grad_hook(lua_State *L) { return register_with(L, add_post_hook); }

/* t:register_hook(fn): fn(grad) each time t's gradient is computed; a tensor it returns
 * replaces the gradient */
static int t_register_hook(lua_State *L) { return register_with(L, add_tensor_hook); }

static int t_detach(lua_State *L)
{
    lt_push(L, nn_detach(lt_check(L, 1)));
    return 1;
}

static int t_detach_(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    nn_detach_(t);
    lua_settop(L, 1);
    return 1;
}

static int t_requires_grad_(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (nn_requires_grad_(t, lua_isnone(L, 2) ? true : lua_toboolean(L, 2))) return lt_fail(L, 0);
    lua_settop(L, 1);
    return 1;
}

static int t_retain_grad(lua_State *L)
{
    if (nn_retain_grad(lt_check(L, 1))) return lt_fail(L, 0);
    return 0;
}

/* ---- grad_fn: a handle on a graph node ---- */
static int node_gc(lua_State *L)
{
    nn_node **n = luaL_checkudata(L, 1, NODE_MT);
    nn_node_release(*n);
    *n = NULL;
    return 0;
}

static int node_tostring(lua_State *L)
{
    nn_node **n = luaL_checkudata(L, 1, NODE_MT);
    lua_pushfstring(L, "<%s object at %p>", *n ? (*n)->name : "?", (void *)*n);
    return 1;
}

static int node_name(lua_State *L)
{
    nn_node **n = luaL_checkudata(L, 1, NODE_MT);
    lua_pushstring(L, *n ? (*n)->name : "?");
    return 1;
}

static void push_node(lua_State *L, nn_node *n)
{
    nn_node **u = lua_newuserdatauv(L, sizeof *u, 0);
    *u = n;
    n->refcount++;
    luaL_setmetatable(L, NODE_MT);
}

/* node == other: the same graph node (a leaf's AccumulateGrad nodes are one, as in PyTorch) */
static int node_eq(lua_State *L)
{
    nn_node **a = luaL_testudata(L, 1, NODE_MT), **b = luaL_testudata(L, 2, NODE_MT);
    lua_pushboolean(L, a && b && (*a == *b || ((*a)->leaf && (*a)->leaf == (*b)->leaf)));
    return 1;
}

/* pushes the n gradients g as a list (nil where none) */
static void push_grads(lua_State *L, int n, nn_tensor *const *g)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++)
        if (g[i]) {
            lt_push(L, nn_retain(g[i]));
            lua_rawseti(L, -2, i + 1);
        }
}

/* a node hook: fn(grad_outputs) before the node (pre), fn(grad_inputs, grad_outputs) after it; a
 * list it returns replaces the pre hook's grad_outputs or the post hook's grad_inputs */
static nn_status call_node_hook(bool pre, int nin, nn_tensor *const *gin, int nout, nn_tensor *const *gout, bool *replace,
                                nn_tensor **repl, lua_fn *c)
{
    const char *what = pre ? "register_prehook" : "register_hook";
    lua_State *L = backward_L;
    if (!L) return nn_error(NN_ERR_RUNTIME, "a Lua function run during backward needs backward started from Lua");
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref);
    if (!pre) push_grads(L, nin, gin);
    push_grads(L, nout, gout);
    if (lua_pcall(L, pre ? 1 : 2, 1, 0) != LUA_OK) {
        nn_status st = nn_error(NN_ERR_RUNTIME, "%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "error in a function run during backward");
        lua_pop(L, 1);
        return st;
    }
    int n = pre ? nout : nin;
    nn_status st = NN_OK;
    if (lua_istable(L, -1) && !lt_is_tensor(L, -1)) {
        if ((int)lua_rawlen(L, -1) > n)
            st = nn_error(NN_ERR_RUNTIME, "a hook registered with %s has returned an incorrect number of values (got %d, but expected %d)", what,
                          (int)lua_rawlen(L, -1), n);
        for (int i = 0; i < n && !st; i++) {
            lua_rawgeti(L, -1, i + 1);
            nn_tensor *t = lt_totensor(L, -1);
            if (t) repl[i] = nn_retain(t);
            else if (!lua_isnil(L, -1))
                st = nn_error(NN_ERR_ARG, "a hook registered with %s must return a list of Tensors or nil, got a %s at %d", what, luaL_typename(L, -1), i + 1);
            lua_pop(L, 1);
        }
        *replace = !st;
    } else if (!lua_isnil(L, -1)) {
        st = nn_error(NN_ERR_ARG, "a hook registered with %s must return nil or a list of gradients, not a %s", what, luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    return st;
}

static nn_status call_node_prehook(nn_node *n, int nin, nn_tensor *const *gin, int nout, nn_tensor *const *gout, bool *replace,
                                   nn_tensor **repl, void *c)
{
    (void)n;
    return call_node_hook(true, nin, gin, nout, gout, replace, repl, c);
}

static nn_status call_node_posthook(nn_node *n, int nin, nn_tensor *const *gin, int nout, nn_tensor *const *gout, bool *replace,
                                    nn_tensor **repl, void *c)
{
    (void)n;
    return call_node_hook(false, nin, gin, nout, gout, replace, repl, c);
}

static int remove_node_hook(lua_State *L)
{
    nn_node **n = luaL_checkudata(L, lua_upvalueindex(1), NODE_MT);
    int64_t handle = (int64_t)lua_tointeger(L, lua_upvalueindex(2));
    if (*n && handle) nn_node_remove_hook(*n, handle);
    lua_pushinteger(L, 0);
    lua_replace(L, lua_upvalueindex(2));
    return 0;
}

/* node:register_hook(fn) / node:register_prehook(fn): a handle whose remove() takes fn off */
static int node_add_hook(lua_State *L, bool pre)
{
    nn_node *n = *(nn_node **)luaL_checkudata(L, 1, NODE_MT);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_fn *c = lua_fn_new(L, 2);
    if (!c) return luaL_error(L, "out of memory");
    return push_handle(L, nn_node_add_hook(n, pre, pre ? call_node_prehook : call_node_posthook, c, lua_fn_free), c, remove_node_hook);
}

static int node_register_hook(lua_State *L) { return node_add_hook(L, false); }
static int node_register_prehook(lua_State *L) { return node_add_hook(L, true); }

/* node.metadata: a table kept with the node */
static int push_node_metadata(lua_State *L, nn_node *n)
{
    void **slot = nn_node_meta(n, lua_fn_free);
    if (!slot) return lt_fail(L, 0);
    if (!*slot) {
        lua_newtable(L);
        if (!(*slot = lua_fn_new(L, -1))) return luaL_error(L, "out of memory");
        lua_pop(L, 1);
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, ((lua_fn *)*slot)->ref);
    return 1;
}

/* node.next_functions: {node or nil, input_nr} for each input, as PyTorch's ((node, nr), ...);
 * node.variable: an AccumulateGrad node's leaf; methods from the method table */
static int node_index(lua_State *L)
{
    nn_node *n = *(nn_node **)luaL_checkudata(L, 1, NODE_MT);
    const char *k = lua_tostring(L, 2);
    if (k && !strcmp(k, "next_functions")) {
        lua_createtable(L, n->nin, 0);
        for (int i = 0; i < n->nin; i++) {
            lua_createtable(L, 2, 0);
            if (n->next[i].node) {
                push_node(L, n->next[i].node);
                lua_rawseti(L, -2, 1);
            }
            lua_pushinteger(L, n->next[i].input_nr);
            lua_rawseti(L, -2, 2);
            lua_rawseti(L, -2, i + 1);
        }
        return 1;
    }
    if (k && !strcmp(k, "metadata")) return push_node_metadata(L, n);
    if (k && !strncmp(k, "_saved_", 7)) { /* node._saved_self & co: the Lua function torch._set_node_saved_attr gave */
        lua_getfield(L, LUA_REGISTRYINDEX, "nnrepl.node_saved_attr");
        if (lua_isfunction(L, -1)) {
            lua_pushvalue(L, 1);
            lua_pushvalue(L, 2);
            lua_call(L, 2, 1);
            return 1;
        }
        lua_pop(L, 1);
    }
    if (k && !strcmp(k, "variable") && n->leaf) {
        lt_push(L, nn_retain(n->leaf));
        return 1;
    }
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    return 1;
}

/* torch._node_saved(node, slot): the value the node saved in slot (0-based), nil where none:
 * through the unpack hook it was packed with, an output of the node with the node as grad_fn;
 * errors once backward freed it or when it was changed in place since */
static int node_saved(lua_State *L)
{
    nn_node *n = *(nn_node **)luaL_checkudata(L, 1, NODE_MT);
    int slot = (int)luaL_checkinteger(L, 2);
    luaL_argcheck(L, slot >= 0 && slot < NN_NODE_MAX_SAVED, 2, "no such slot");
    if (!n->released && !nn_node_has_saved(n, slot)) {
        lua_pushnil(L);
        return 1;
    }
    nn_tensor *t;
    if (!n->released && n->packed[slot]) {
        t = n->packed[slot]->unpack(n->packed[slot]);
    } else {
        nn_tensor *s = nn_node_saved(n, slot);
        t = s && (n->saved_output >> slot & 1) ? nn_detach(s) : s ? nn_retain(s) : NULL;
        if (t && (n->saved_output >> slot & 1)) nn_node_set_output(n, t, n->saved_nr[slot]);
    }
    if (!t) return lt_fail(L, 0);
    lt_push(L, t);
    return 1;
}

/* torch._set_node_saved_attr(fn): fn(node, "_saved_<name>") answers node._saved_<name> */
static int set_node_saved_attr(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_pushvalue(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "nnrepl.node_saved_attr");
    return 0;
}

int lt_field_grad_fn(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (nn_refresh_view_history(t)) return lt_fail(L, 0);
    if (!t->grad_fn) {
        lua_pushnil(L);
        return 1;
    }
    push_node(L, t->grad_fn);
    return 1;
}

/* torch._gradient_edge(t) -> the node where t's gradient enters the graph, output_nr */
static int gradient_edge(lua_State *L)
{
    int nr;
    nn_node *n = nn_gradient_node(lt_check(L, 1), &nr);
    if (!n) return lt_fail(L, 0);
    push_node(L, n);
    nn_node_release(n);
    lua_pushinteger(L, nr);
    return 2;
}

/* torch._backward_pass_id() -> the running backward pass's number (0: none);
 * torch._backward_computes(t): whether it computes t's gradient */
static int backward_pass_id(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)nn_backward_pass_id());
    return 1;
}

static int backward_computes(lua_State *L)
{
    lua_pushboolean(L, nn_backward_computes(lt_check(L, 1)));
    return 1;
}

/* torch._increment_version(t): t's version counter (shared with its views) goes up by one */
static int increment_version(lua_State *L)
{
    nn_bump_version(lt_check(L, 1));
    return 0;
}

/* ---- grad mode ---- */
typedef struct { bool prev, prev_inference; bool closed; bool on, inference; } grad_mode;

/* Whether an inference_mode(true) region is open (the engine's inference mode): no_grad and
 * enable_grad inside one leave it so, as in PyTorch. */
#define inference_on nn_inference_mode_enabled()

static int mode_close(lua_State *L)
{
    grad_mode *m = luaL_checkudata(L, 1, GRAD_MODE_MT);
    if (!m->closed) {
        nn_set_grad_enabled(m->prev);
        nn_set_inference_mode(m->prev_inference);
        m->closed = true;
    }
    return 0;
}

/* Set grad mode to `on` and the inference flag to `inference`. With a function argument at
 * fn_idx, run it in that mode and restore the previous mode afterwards (also on error), returning
 * its results; otherwise return a to-be-closed value that restores it. */
static int with_mode(lua_State *L, bool on, bool inference, int fn_idx)
{
    bool prev = nn_grad_enabled(), prev_inference = inference_on;
    if (lua_isfunction(L, fn_idx)) {
        int base = lua_gettop(L);
        nn_set_grad_enabled(on);
        nn_set_inference_mode(inference);
        lua_pushvalue(L, fn_idx);
        int st = lua_pcall(L, 0, LUA_MULTRET, 0);
        nn_set_grad_enabled(prev);
        nn_set_inference_mode(prev_inference);
        if (st) return lua_error(L);
        return lua_gettop(L) - base;
    }
    grad_mode *m = lua_newuserdatauv(L, sizeof *m, 0);
    m->prev = prev;
    m->prev_inference = prev_inference;
    m->closed = false;
    m->on = on;
    m->inference = inference;
    luaL_setmetatable(L, GRAD_MODE_MT);
    nn_set_grad_enabled(on);
    nn_set_inference_mode(inference);
    return 1;
}

/* the function a decorator made: upvalues fn, grad mode, inference mode */
static int mode_wrapped(lua_State *L)
{
    bool prev = nn_grad_enabled(), prev_inference = inference_on;
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    nn_set_grad_enabled(lua_toboolean(L, lua_upvalueindex(2)));
    nn_set_inference_mode(lua_toboolean(L, lua_upvalueindex(3)));
    int st = lua_pcall(L, n, LUA_MULTRET, 0);
    nn_set_grad_enabled(prev);
    nn_set_inference_mode(prev_inference);
    if (st) return lua_error(L);
    return lua_gettop(L);
}

/* torch.no_grad()(fn), Python's @torch.no_grad() decorator (also enable_grad, inference_mode):
 * the mode the call to no_grad() set is undone, and fn comes back wrapped to run in that mode. */
static int mode_call(lua_State *L)
{
    grad_mode *m = luaL_checkudata(L, 1, GRAD_MODE_MT);
    lua_settop(L, 2);
    mode_close(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushboolean(L, m->on);
    lua_pushboolean(L, m->inference);
    lua_pushcclosure(L, mode_wrapped, 3);
    return 1;
}

static int no_grad(lua_State *L) { return with_mode(L, false, inference_on, 1); }
static int enable_grad(lua_State *L) { return with_mode(L, true, inference_on, 1); }

/* inference_mode([mode=true][, fn]): no_grad, and what is made inside is an inference tensor;
 * inference_mode(false) keeps the current grad mode and leaves inference mode. */
static int inference_mode(lua_State *L)
{
    if (lua_isboolean(L, 1)) {
        bool on = lua_toboolean(L, 1);
        return with_mode(L, on ? false : nn_grad_enabled(), on, 2);
    }
    return with_mode(L, false, true, 1);
}

static int is_inference_mode_enabled(lua_State *L)
{
    lua_pushboolean(L, inference_on);
    return 1;
}

/* x:is_inference(), torch.is_inference(x) */
static int is_inference(lua_State *L)
{
    lua_pushboolean(L, nn_is_inference(lt_check(L, 1)));
    return 1;
}

static int set_grad_enabled(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TBOOLEAN);
    return with_mode(L, lua_toboolean(L, 1), inference_on, 2);
}

/* torch._set_anomaly(on) -> the previous setting; torch.is_anomaly_enabled() */
static int set_anomaly(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TBOOLEAN);
    lua_pushboolean(L, nn_anomaly_enabled());
    nn_set_anomaly_enabled(lua_toboolean(L, 1));
    return 1;
}

static int is_anomaly_enabled(lua_State *L)
{
    lua_pushboolean(L, nn_anomaly_enabled());
    return 1;
}

static int is_grad_enabled(lua_State *L)
{
    lua_pushboolean(L, nn_grad_enabled());
    return 1;
}

void lt_open_autograd(lua_State *L)
{
    int torch = lua_gettop(L);
    luaL_newmetatable(L, GRAD_MODE_MT);
    lua_pushcfunction(L, mode_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, mode_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, mode_call);
    lua_setfield(L, -2, "__call");
    luaL_newmetatable(L, NODE_MT);
    lua_pushcfunction(L, node_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, node_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, node_eq);
    lua_setfield(L, -2, "__eq");
    lua_newtable(L);
    lua_pushcfunction(L, node_name);
    lua_setfield(L, -2, "name");
    lua_pushcfunction(L, node_register_hook);
    lua_setfield(L, -2, "register_hook");
    lua_pushcfunction(L, node_register_prehook);
    lua_setfield(L, -2, "register_prehook");
    lua_pushcclosure(L, node_index, 1);
    lua_setfield(L, -2, "__index");
    lua_settop(L, torch);

    static const luaL_Reg fns[] = {
        {"no_grad", no_grad}, {"enable_grad", enable_grad}, {"set_grad_enabled", set_grad_enabled},
        {"is_grad_enabled", is_grad_enabled}, {"inference_mode", inference_mode},
        {"is_inference_mode_enabled", is_inference_mode_enabled}, {"is_inference", is_inference},
        {"_set_anomaly", set_anomaly}, {"is_anomaly_enabled", is_anomaly_enabled},
        {"_at_backward_end", at_backward_end}, {"_accumulate_grad", accumulate_grad}, {"_gradient_edge", gradient_edge},
        {"_node_saved", node_saved}, {"_set_node_saved_attr", set_node_saved_attr},
        {"_backward_pass_id", backward_pass_id}, {"_backward_computes", backward_computes},
        {"_increment_version", increment_version}, {NULL, NULL},
    };
    luaL_setfuncs(L, fns, 0);
    lt_open_saved_hooks(L);
    static const luaL_Reg methods[] = {
        {"backward", t_backward}, {"detach", t_detach}, {"detach_", t_detach_},
        {"requires_grad_", t_requires_grad_}, {"retain_grad", t_retain_grad},
        {"register_post_accumulate_grad_hook", t_register_post_accumulate_grad_hook}, {"register_hook", t_register_hook},
        {"is_inference", is_inference}, {NULL, NULL},
    };
    lua_getfield(L, torch, "Tensor");
    luaL_setfuncs(L, methods, 0);
    lua_settop(L, torch);
    static const luaL_Reg autograd_fns[] = {{"grad", autograd_grad}, {"backward", autograd_backward}, {NULL, NULL}};
    if (lua_getfield(L, torch, "autograd") != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, torch, "autograd");
    }
    luaL_setfuncs(L, autograd_fns, 0);
    lua_settop(L, torch);
}
