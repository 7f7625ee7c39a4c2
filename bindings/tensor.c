/* The Tensor userdata: lifetime (__gc and __close share one release), fields,
 * integer indexing, and the arithmetic operators.
 *
 * Hot path (`a + b`): the operators carry the metatable as upvalue 1, so telling
 * a tensor apart is lua_touserdata + one metatable compare; the result is one
 * nn_binary call and one userdata, plus a byte count that paces the GC. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "amp.h"
#include "autograd.h"
#include "device.h"
#include "lt.h"

const char LT_TENSOR_MT[1];
static const char ATTRS[1]; /* registry key: weak-keyed table, tensor userdata -> its attribute table */
static const char KEEPERS[1]; /* registry key: method name -> its stand-in for tensors whose attributes hold __keep */
static int keepers_set;       /* whether any state has KEEPERS (saves the lookup until then) */

/* The stand-in for method k (on the stack top) of tensor 1 when it has one and the tensor asks
 * for it (attribute __keep true: tv_tensors keep their kind through clone, to, ...); pushes it
 * and returns 1, else leaves the stack as it was and returns 0. */
static int keeper(lua_State *L, int top)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, KEEPERS) == LUA_TTABLE) {
        lua_pushvalue(L, 2);
        if (lua_rawget(L, -2) == LUA_TFUNCTION && lua_rawgetp(L, LUA_REGISTRYINDEX, ATTRS) == LUA_TTABLE) {
            lua_pushvalue(L, 1);
            if (lua_rawget(L, -2) == LUA_TTABLE && lua_getfield(L, -1, "__keep") == LUA_TBOOLEAN && lua_toboolean(L, -1)) {
                lua_pushvalue(L, top + 2); /* the stand-in */
                return 1;
            }
        }
    }
    lua_settop(L, top);
    return 0;
}

/* torch._keep_method(name, fn): fn stands in for method name on tensors whose __keep attribute is true */
static int keep_method(lua_State *L)
{
    luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, KEEPERS) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, KEEPERS);
    }
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_rawset(L, -3);
    keepers_set = 1;
    return 0;
}

/* torch._alias(t): a second Lua value for the same tensor (no attributes of its own, the same
 * data, grad_fn and version): torchvision's as_subclass(Tensor) */
static int alias_value(lua_State *L)
{
    lt_push(L, nn_retain(lt_check(L, 1)));
    return 1;
}
const char LT_DTYPES[1];

/* Lua does not see tensor memory: every pushed tensor reports the bytes its collection
 * would free, now or once the autograd graph lets go (its header, and its storage when the
 * tensor holds the storage alone and is an op's output or held by this userdata alone),
 * Torch7's heap tracking. Without it a loop of `c = a + b` lets ~10^6 dead tensors pile
 * up between cycles (each userdata looks like 48 bytes), and freeing them in such batches
 * costs more than the ops.
 *
 * The interpreter runs Lua's generational collector (nnrepl_openlibs), and the reports
 * pace its young collections, which visit only the objects made since the last one: one
 * after every GC_YOUNG_NEW new storages of GC_NEW_MIN bytes or more, or GC_YOUNG_PUSHES
 * tensors of any size. Not one per activation: a tensor that outlives two young
 * collections turns old, and only a full collection (a walk of the whole ~1 MB library
 * heap, 0.3-0.6 ms) frees it. A layer's output lives until the next layer's is pushed,
 * so a young collection on every push aged every activation, and a training step paid a
 * full collection or two to free them (DataParallel's host time, bench/NOTES.md). Lua
 * starts full collections when its own heap grows, which tensors do not make it do, so a
 * full collection also starts when the bytes held by Tensor userdata have doubled (grown by
 * MAJOR_GROWTH at least) since the last one, Lua's own pause for its heap; a young collection
 * starts sooner when the bytes reported since the last one reach that much. (Growth by an
 * eighth made a float32 transformer step's forward, whose activations the graph holds, start
 * 20 full collections that freed little: 18 ms of a 33 ms step on an H200, bench/NOTES.md.) */
static size_t gc_debt, gc_new, gc_pushes, held_bytes, held_after_full;
#define GC_NEW_MIN 16384
#define GC_YOUNG_NEW 8
#define GC_YOUNG_PUSHES 32
#define MAJOR_GROWTH ((size_t)32 << 20)

static inline void account(lua_State *L, lt_tensor *u)
{
    const nn_tensor *t = u->t;
    /* a leaf held elsewhere too (a parameter, a .grad) is not Lua's to free; an op's output held
     * by the graph becomes Lua's alone once the backward frees it, so it counts */
    bool sole = nn_sole_owner(t) && (t->refcount == 1 || t->grad_fn);
    u->bytes = sizeof(nn_tensor) + (sole ? sizeof(nn_storage) + t->storage->nbytes : 0);
    held_bytes += u->bytes;
    gc_debt += u->bytes;
    gc_new += u->bytes >= GC_NEW_MIN;
    size_t growth = held_after_full > MAJOR_GROWTH ? held_after_full : MAJOR_GROWTH;
    if (gc_new < GC_YOUNG_NEW && ++gc_pushes < GC_YOUNG_PUSHES && gc_debt < growth) return;
    if (!lua_gc(L, LUA_GCISRUNNING)) return; /* collectgarbage("stop") is respected */
    gc_debt = gc_new = gc_pushes = 0;
    lua_gc(L, LUA_GCSTEP, 0); /* generational mode: one young collection */
    if (held_bytes > held_after_full + growth) {
        lua_gc(L, LUA_GCCOLLECT);
        held_after_full = held_bytes;
    }
}

/* Out of memory, an allocator (CUDA's or the CPU's) asks for a full collection
 * (nn_reclaim_memory in engine/device.h): tensors that died since the last one may hold what it needs, where
 * PyTorch would have freed them at once. The hook collects the state whose torch was
 * opened last on this thread, through its main thread, until that state closes. It runs
 * even under collectgarbage("stop"): an error for memory that is there would be worse. */
static _Thread_local lua_State *reclaim_L;

static void collect_all(void)
{
    if (reclaim_L && lua_gc(reclaim_L, LUA_GCCOLLECT) >= 0) held_after_full = held_bytes; /* -1: inside a collection */
}

static int reclaim_closed(lua_State *L)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    if (lua_tothread(L, -1) == reclaim_L) {
        reclaim_L = NULL;
        nn_set_reclaim_hook(NULL);
    }
    return 0;
}

/* collectgarbage("collect") from Lua code is a full collection too: the growth that starts the
 * next one counts from what it left (else a peak before it would put the next one off until
 * twice that peak) */
static int collectgarbage_paced(lua_State *L)
{
    const char *opt = luaL_optstring(L, 1, "collect");
    int full = !strcmp(opt, "collect");
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    if (full) held_after_full = held_bytes;
    return lua_gettop(L);
}

static void pace_collectgarbage(lua_State *L)
{
    if (lua_getglobal(L, "collectgarbage") == LUA_TFUNCTION && lua_tocfunction(L, -1) != collectgarbage_paced) {
        lua_pushcclosure(L, collectgarbage_paced, 1);
        lua_setglobal(L, "collectgarbage");
    } else {
        lua_pop(L, 1);
    }
}

static void reclaim_open(lua_State *L)
{
    pace_collectgarbage(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    reclaim_L = lua_tothread(L, -1);
    lua_pop(L, 1);
    nn_set_reclaim_hook(collect_all);
    lua_newuserdatauv(L, 0, 0); /* collected when the state closes */
    lua_newtable(L);
    lua_pushcfunction(L, reclaim_closed);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, (void *)&reclaim_L);
}

static int closed_error(lua_State *L)
{
    return luaL_error(L, "attempt to use a closed tensor");
}

/* the op that made t could not save what its backward needs: its error instead of t */
static inline void check_deferred(lua_State *L, nn_tensor *t)
{
    if (!nn_has_deferred_error()) return;
    nn_release(t);
    nn_take_deferred_error();
    lt_fail(L, 0);
}

void lt_push(lua_State *L, nn_tensor *t)
{
    if (!t) lt_fail(L, 0);
    check_deferred(L, t);
    lt_tensor *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->t = t;
    lua_rawgetp(L, LUA_REGISTRYINDEX, LT_TENSOR_MT);
    lua_setmetatable(L, -2);
    account(L, u);
}

void lt_push_or_fail(lua_State *L, nn_tensor *t, int arg)
{
    if (!t) lt_fail(L, arg);
    lt_push(L, t);
}

int lt_is_tensor(lua_State *L, int idx)
{
    if (!lua_touserdata(L, idx) || !lua_getmetatable(L, idx)) return 0;
    lua_rawgetp(L, LUA_REGISTRYINDEX, LT_TENSOR_MT);
    int ok = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return ok;
}

nn_tensor *lt_totensor(lua_State *L, int idx)
{
    if (!lt_is_tensor(L, idx)) return NULL;
    lt_tensor *u = lua_touserdata(L, idx);
    if (!u->t) closed_error(L);
    return u->t;
}

nn_tensor *lt_check(lua_State *L, int idx)
{
    nn_tensor *t = lt_totensor(L, idx);
    if (!t) {
        if (idx == 1) lt_self_error(L, "tensor");
        luaL_typeerror(L, idx, "tensor");
    }
    return t;
}

int lt_is_operand(lua_State *L, int idx)
{
    int ty = lua_type(L, idx);
    double re, im;
    return ty == LUA_TNUMBER || ty == LUA_TBOOLEAN || lt_is_tensor(L, idx) || lt_tocomplex(L, idx, &re, &im);
}

nn_tensor *lt_operand(lua_State *L, int idx)
{
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) return nn_scalar_i64(lua_tointeger(L, idx));
        return nn_scalar_f64(lua_tonumber(L, idx));
    case LUA_TBOOLEAN:
        return nn_scalar_bool(lua_toboolean(L, idx));
    default: {
        double re, im;
        if (lt_tocomplex(L, idx, &re, &im)) return nn_scalar_c128(re, im);
        nn_tensor *t = lt_totensor(L, idx);
        if (!t) luaL_typeerror(L, idx, "tensor or number");
        return nn_retain(t);
    }
    }
}

int lt_fail(lua_State *L, int arg)
{
    const char *msg = nn_last_error();
    nn_status s = nn_last_status();
    if (arg > 0 && (s == NN_ERR_ARG || s == NN_ERR_SHAPE || s == NN_ERR_DTYPE || s == NN_ERR_INDEX)) {
        /* the call site names the function: drop the engine's "fn: " prefix */
        const char *p = msg;
        while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_') p++;
        if (p > msg && p[0] == ':' && p[1] == ' ') msg = p + 2;
        else if (p > msg && p[0] == '(' && p[1] == ')' && p[2] == ':' && p[3] == ' ') msg = p + 4;
        return luaL_argerror(L, arg, msg);
    }
    return luaL_error(L, "%s", msg);
}

/* ---- lifetime ---- */

static int t_release(lua_State *L)
{
    lt_tensor *u = lua_touserdata(L, 1);
    if (u && u->t) {
        nn_tensor *t = u->t;
        u->t = NULL;
        held_bytes -= u->bytes;
        nn_release(t);
    }
    return 0;
}

static int t_tostring(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    char *s = nn_tensor_repr(t);
    if (!s) return lt_fail(L, 0);
    lua_pushstring(L, s);
    free(s);
    return 1;
}

static int t_len(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (t->ndim == 0) return luaL_error(L, "len() of a 0-d tensor");
    lua_pushinteger(L, t->shape[0]);
    return 1;
}

/* ---- fields (x.shape ...) ---- */

static int f_shape(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lt_push_size(L, t->ndim, t->shape);
    return 1;
}

static int f_dtype(lua_State *L)
{
    lt_push_dtype(L, lt_check(L, 1)->dtype);
    return 1;
}

static int f_device(lua_State *L)
{
    nn_device d = lt_check(L, 1)->storage->device;
    if (d.type != NN_CUDA) d.index = -1;
    else if (d.index < 0) d.index = 0;
    lt_push_device(L, d);
    return 1;
}

static int f_is_cuda(lua_State *L)
{
    lua_pushboolean(L, lt_check(L, 1)->storage->device.type == NN_CUDA);
    return 1;
}

static int f_requires_grad(lua_State *L)
{
    lua_pushboolean(L, lt_check(L, 1)->requires_grad);
    return 1;
}

static int f_grad(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (t->grad) lt_push(L, nn_retain(t->grad));
    else lua_pushnil(L);
    return 1;
}

static int f_ndim(lua_State *L)
{
    lua_pushinteger(L, lt_check(L, 1)->ndim);
    return 1;
}

static int f_T(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int dims[NN_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) dims[i] = t->ndim - 1 - i;
    lt_push(L, nn_permute(t, dims));
    return 1;
}

static int f_data(lua_State *L)
{
    lt_push(L, nn_detach(lt_check(L, 1)));
    return 1;
}

static int f_is_leaf(lua_State *L)
{
    lua_pushboolean(L, nn_is_leaf(lt_check(L, 1)));
    return 1;
}

/* x._version: bumped by every in-place change of x's storage (shared by its views) */
static int f_version(lua_State *L)
{
    lua_pushinteger(L, lt_check(L, 1)->storage->version);
    return 1;
}

/* x.retains_grad: retain_grad() was called on this non-leaf; x.output_nr: its index among its grad_fn's outputs */
static int f_retains_grad(lua_State *L)
{
    lua_pushboolean(L, lt_check(L, 1)->retains_grad);
    return 1;
}

static int f_output_nr(lua_State *L)
{
    lua_pushinteger(L, lt_check(L, 1)->output_nr);
    return 1;
}

static const luaL_Reg fields[] = {
    {"shape", f_shape}, {"dtype", f_dtype}, {"device", f_device}, {"is_cuda", f_is_cuda},
    {"requires_grad", f_requires_grad}, {"grad", f_grad}, {"ndim", f_ndim}, {"T", f_T},
    {"data", f_data}, {"is_leaf", f_is_leaf}, {"grad_fn", lt_field_grad_fn},
    {"_version", f_version}, {"real", lt_field_real}, {"imag", lt_field_imag},
    {"retains_grad", f_retains_grad}, {"output_nr", f_output_nr}, {NULL, NULL},
};

/* __index(x, k): upvalue 1 the method table, upvalue 2 the field getters. */

/* x[i] and x[i] = v: PyTorch's IndexError text for a row past either end */
static void check_row(lua_State *L, const nn_tensor *t, lua_Integer i)
{
    int64_t size = t->shape[0];
    if (i < -size || i >= size)
        luaL_error(L, "index %I is out of bounds for dimension 0 with size %I", i, (lua_Integer)size);
}

static int t_index(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TSTRING) {
        lua_pushvalue(L, 2);
        if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) {
            if (keepers_set) keeper(L, lua_gettop(L));
            return 1;
        }
        lua_pushvalue(L, 2);
        if (lua_rawget(L, lua_upvalueindex(2)) == LUA_TFUNCTION) {
            lua_pushvalue(L, 1);
            lua_call(L, 1, 1);
            return 1;
        }
        if (lua_rawgetp(L, LUA_REGISTRYINDEX, ATTRS) == LUA_TTABLE) { /* x.foo set by the user */
            lua_pushvalue(L, 1);
            if (lua_rawget(L, -2) == LUA_TTABLE) {
                lua_pushvalue(L, 2);
                if (lua_rawget(L, -2) != LUA_TNIL) return 1;
            }
        }
        lua_settop(L, 2);
        return lt_index_get(L); /* a Python subscript (x[":, 1:3"]), else nil */
    }
    nn_tensor *t = lt_check(L, 1);
    int isint;
    lua_Integer i = lua_tointegerx(L, 2, &isint);
    if (!isint) return lt_index_get(L); /* tensor and list keys */
    if (t->ndim == 0) return luaL_error(L, "invalid index of a 0-dim tensor; use tensor:item() to get the number");
    check_row(L, t, i);
    lt_push(L, nn_select(t, 0, i));
    return 1;
}

static void set_requires_grad(lua_State *L, nn_tensor *t)
{
    luaL_checktype(L, 3, LUA_TBOOLEAN);
    if (nn_requires_grad_(t, lua_toboolean(L, 3))) lt_fail(L, 0);
}

static void set_grad(lua_State *L, nn_tensor *t)
{
    nn_tensor *g = NULL;
    if (!lua_isnil(L, 3)) {
        g = lt_totensor(L, 3);
        if (!g) luaL_error(L, "assigned grad expected to be a tensor or nil, got %s", luaL_typename(L, 3));
        char b1[160], b2[160];
        if (g->ndim != t->ndim || memcmp(g->shape, t->shape, t->ndim * sizeof *t->shape))
            luaL_error(L, "assigned grad has data of a different size (%s, expected %s)",
                       nn_shape_str(b1, g->ndim, g->shape), nn_shape_str(b2, t->ndim, t->shape));
        if (g->dtype != t->dtype)
            luaL_error(L, "assigned grad has data of a different type (%s, expected %s)", nn_dtype_name(g->dtype),
                       nn_dtype_name(t->dtype));
        nn_retain(g);
    }
    nn_release(t->grad);
    t->grad = g;
}

/* x.data = y: x takes y's storage and geometry (PyTorch's set_data). */
static void set_data(lua_State *L, nn_tensor *t)
{
    nn_tensor *s = lt_check(L, 3);
    if (s == t) return;
    s->storage->refcount++;
    nn_tensor *old = nn_make_view(t, 0, NULL, NULL, 0); /* holds the old storage until we are done */
    t->storage->refcount--;
    t->storage = s->storage;
    t->dtype = s->dtype;
    t->ndim = s->ndim;
    memcpy(t->shape, s->shape, sizeof t->shape);
    memcpy(t->strides, s->strides, sizeof t->strides);
    t->offset = s->offset;
    nn_set_finite_witnesses(t, 0, NULL); /* they spoke for the old values */
    nn_release(t->lowp);
    t->lowp = NULL;
    nn_release(old);
}

/* A name such as Python code sets on a tensor object (x.foo = v): not a subscript, not a method
 * or field. It lives with this Lua value, as a Python attribute lives with its object. */
static int is_attribute_name(lua_State *L, const char *k)
{
    if (!(isalpha((unsigned char)k[0]) || k[0] == '_') || !strcmp(k, "None")) return 0;
    for (const char *c = k; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_')) return 0;
    lua_getmetatable(L, 1);
    int taken = lua_getfield(L, -1, "__methods") == LUA_TTABLE && lua_getfield(L, -1, k) != LUA_TNIL;
    lua_settop(L, 3);
    lua_getmetatable(L, 1);
    taken = taken || (lua_getfield(L, -1, "__fields") == LUA_TTABLE && lua_getfield(L, -1, k) != LUA_TNIL);
    lua_settop(L, 3);
    return !taken;
}

static void set_attribute(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, ATTRS);
    lua_pushvalue(L, 1);
    if (lua_rawget(L, -2) != LUA_TTABLE) {
        lua_pop(L, 1);
        if (lua_isnil(L, 3)) return;
        lua_newtable(L);
        lua_pushvalue(L, 1);
        lua_pushvalue(L, -2);
        lua_rawset(L, -4);
    }
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_rawset(L, -3);
}

static int t_newindex(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (lua_type(L, 2) == LUA_TSTRING) {
        const char *k = lua_tostring(L, 2);
        if (!strcmp(k, "requires_grad")) set_requires_grad(L, t);
        else if (!strcmp(k, "grad")) set_grad(L, t);
        else if (!strcmp(k, "data")) set_data(L, t);
        else if (!strcmp(k, "real") || !strcmp(k, "imag")) lt_set_part(L, t, k[0] == 'i');
        else if (is_attribute_name(L, k)) set_attribute(L);
        else if (!lt_index_set(L)) return luaL_error(L, "cannot set field '%s' of a tensor", k);
        return 0;
    }
    int isint;
    lua_Integer i = lua_tointegerx(L, 2, &isint);
    if (!isint) return lt_index_set(L), 0; /* tensor and list keys */
    if (!lt_is_operand(L, 3)) return luaL_error(L, "cannot assign a %s to a tensor element (tensor or number expected)", luaL_typename(L, 3));
    if (t->ndim == 0) return luaL_error(L, "invalid index of a 0-dim tensor");
    check_row(L, t, i);
    nn_tensor *view = nn_select(t, 0, i);
    if (!view) return lt_fail(L, 0);
    nn_tensor *v = lt_operand(L, 3);
    nn_status s = v ? nn_copy_(view, v) : nn_last_status();
    nn_release(v);
    nn_release(view);
    if (s) return lt_fail(L, 0);
    return 0;
}

/* ---- operators ---- */

/* The tensor at idx if its metatable is upvalue 1 (operators only). */
static inline nn_tensor *fast_tensor(lua_State *L, int idx)
{
    lt_tensor *u = lua_touserdata(L, idx);
    if (!u || !lua_getmetatable(L, idx)) return NULL;
    int ok = lua_rawequal(L, -1, lua_upvalueindex(1));
    lua_pop(L, 1);
    if (!ok) return NULL;
    if (!u->t) closed_error(L);
    return u->t;
}

static inline int push_fast(lua_State *L, nn_tensor *r)
{
    check_deferred(L, r);
    lt_tensor *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->t = r;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_setmetatable(L, -2);
    account(L, u);
    return 1;
}

nn_tensor *lt_binary(nn_op op, nn_tensor *a, nn_tensor *b)
{
    /* x ^ 2: the dedicated kernel, where it keeps PyTorch's result dtype */
    if (op == NN_OP_pow && b->wrapped_number && !a->wrapped_number && b->dtype != NN_BOOL &&
        (nn_dtype_is_float(a->dtype) || b->dtype == NN_I64))
        return nn_pow_scalar(a, nn_load_f64(nn_data(b), b->dtype));
    return nn_binary(op, a, b);
}

/* Mixed operands (numbers, booleans) and every error path. */
static int binop_slow(lua_State *L, nn_op op)
{
    if (!lt_is_operand(L, 1)) return luaL_typeerror(L, 1, "tensor or number");
    if (!lt_is_operand(L, 2)) return luaL_typeerror(L, 2, "tensor or number");
    /* 2 * t and 2 + t are Python's t.__rmul__(2), t.__radd__(2): t first, as in the graph's next_functions */
    if ((op == NN_OP_mul || op == NN_OP_add) && lua_type(L, 1) == LUA_TNUMBER && lua_type(L, 2) != LUA_TNUMBER) {
        lua_settop(L, 2);
        lua_rotate(L, 1, 1);
    }
    nn_tensor *a = lt_operand(L, 1);
    if (!a) return lt_fail(L, 0);
    nn_tensor *b = lt_operand(L, 2);
    if (!b) { nn_release(a); return lt_fail(L, 0); }
    nn_tensor *r = lt_binary(op, a, b);
    nn_release(a);
    nn_release(b);
    if (!r) return lt_fail(L, 2);
    return push_fast(L, r);
}

static inline int binop(lua_State *L, nn_op op)
{
    nn_tensor *a = fast_tensor(L, 1), *b = a ? fast_tensor(L, 2) : NULL;
    if (!b) return binop_slow(L, op);
    nn_tensor *r = nn_binary(op, a, b);
    if (!r) return lt_fail(L, 2);
    return push_fast(L, r);
}

static int t_add(lua_State *L) { return binop(L, NN_OP_add); }
static int t_sub(lua_State *L) { return binop(L, NN_OP_sub); }
static int t_mul(lua_State *L) { return binop(L, NN_OP_mul); }
static int t_div(lua_State *L) { return binop(L, NN_OP_div); }
static int t_mod(lua_State *L) { return binop(L, NN_OP_remainder); }
static int t_pow(lua_State *L) { return binop(L, NN_OP_pow); }

/* Lua's bitwise operators are PyTorch's: a & b, a | b, a ~ b (Python's ^), ~a, a << n, a >> n */
static int t_band(lua_State *L) { return binop(L, NN_OP_bitwise_and); }
static int t_bor(lua_State *L) { return binop(L, NN_OP_bitwise_or); }
static int t_bxor(lua_State *L) { return binop(L, NN_OP_bitwise_xor); }
static int t_shl(lua_State *L) { return binop(L, NN_OP_bitwise_left_shift); }
static int t_shr(lua_State *L) { return binop(L, NN_OP_bitwise_right_shift); }

static int unop(lua_State *L, nn_op op)
{
    nn_tensor *a = fast_tensor(L, 1);
    if (!a) return luaL_typeerror(L, 1, "tensor");
    nn_tensor *r = nn_unary(op, a);
    if (!r) return lt_fail(L, 1);
    return push_fast(L, r);
}

static int t_unm(lua_State *L) { return unop(L, NN_OP_neg); }
static int t_bnot(lua_State *L) { return unop(L, NN_OP_bitwise_not); }

/* torch._swap_tensors(a, b): the two Lua values trade the tensors they hold, with their GC
 * accounting and attribute tables, so every reference to a now sees b's tensor (swap_tensors) */
static int swap_tensors(lua_State *L)
{
    lt_check(L, 1);
    lt_check(L, 2);
    lt_tensor *a = lua_touserdata(L, 1), *b = lua_touserdata(L, 2);
    lt_tensor tmp = *a;
    *a = *b;
    *b = tmp;
    lua_rawgetp(L, LUA_REGISTRYINDEX, ATTRS);
    lua_pushvalue(L, 1);
    lua_rawget(L, -2);
    lua_pushvalue(L, 2);
    lua_rawget(L, -3); /* ATTRS, attrs(a), attrs(b) */
    lua_pushvalue(L, 1);
    lua_insert(L, -2);
    lua_rawset(L, -4); /* ATTRS[a] = attrs(b) */
    lua_pushvalue(L, 2);
    lua_insert(L, -2);
    lua_rawset(L, -3); /* ATTRS[b] = attrs(a) */
    return 0;
}

void lt_open_tensor(lua_State *L)
{
    int torch = lua_gettop(L);
    reclaim_open(L);
    luaL_newmetatable(L, "torch.Tensor");
    int mt = lua_gettop(L);
    lua_pushvalue(L, mt);
    lua_rawsetp(L, LUA_REGISTRYINDEX, LT_TENSOR_MT);
    lua_newtable(L); /* ATTRS, weak-keyed: an attribute table goes with its tensor */
    lua_newtable(L);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, ATTRS);

    lua_newtable(L); /* the method table: torch.Tensor */
    int methods = lua_gettop(L);
    lua_pushvalue(L, methods);
    lua_setfield(L, torch, "Tensor");
    lua_pushcfunction(L, keep_method);
    lua_setfield(L, torch, "_keep_method");
    lua_pushcfunction(L, alias_value);
    lua_setfield(L, torch, "_alias");
    lua_pushcfunction(L, swap_tensors);
    lua_setfield(L, torch, "_swap_tensors");
    lua_pushvalue(L, methods);
    lua_setfield(L, mt, "__methods");

    lua_pushvalue(L, methods);
    luaL_newlib(L, fields);
    lua_pushvalue(L, -1);
    lua_setfield(L, mt, "__fields"); /* Lua files add field getters here (torch_tensor_gaps.lua) */
    lua_pushcclosure(L, t_index, 2);
    lua_setfield(L, mt, "__index");
    lua_settop(L, mt);

    static const luaL_Reg plain[] = {
        {"__gc", t_release}, {"__close", t_release}, {"__tostring", t_tostring},
        {"__len", t_len}, {"__newindex", t_newindex}, {NULL, NULL},
    };
    luaL_setfuncs(L, plain, 0);
    static const luaL_Reg ops[] = {
        {"__add", t_add}, {"__sub", t_sub}, {"__mul", t_mul}, {"__div", t_div}, {"__mod", t_mod},
        {"__pow", t_pow}, {"__unm", t_unm}, {"__band", t_band}, {"__bor", t_bor},
        {"__bxor", t_bxor}, {"__shl", t_shl}, {"__shr", t_shr}, {"__bnot", t_bnot}, {NULL, NULL},
    };
    lua_pushvalue(L, mt);
    luaL_setfuncs(L, ops, 1); /* upvalue: the metatable, for the fast tensor check */
    lua_settop(L, torch);
}
