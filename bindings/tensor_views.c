/* Tensor methods for geometry, views, splitting, conversion and reading values
 * back into Lua (item, tolist). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "autograd.h"
#include "lt.h"
#include "memory_format.h"

/* Push r as the result of a method on self (arg 1): self itself when r is t. */
static int push_self_or(lua_State *L, nn_tensor *t, nn_tensor *r, int arg)
{
    if (!r) return lt_fail(L, arg);
    if (r == t) {
        nn_release(r);
        lua_pushvalue(L, 1);
    } else lt_push(L, r);
    return 1;
}

/* ---- geometry ---- */

/* A dim of t at idx for size(d)/stride(d): a 0-dim tensor has none. */
static int tensor_dim(lua_State *L, nn_tensor *t, int idx)
{
    if (t->ndim == 0)
        luaL_argerror(L, idx, lua_pushfstring(L, "dimension specified as %d but tensor has no dimensions", (int)luaL_checkinteger(L, idx)));
    return lt_check_dim(L, idx, t->ndim);
}

static int m_size(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (lua_isnoneornil(L, 2)) lt_push_size(L, t->ndim, t->shape);
    else lua_pushinteger(L, t->shape[tensor_dim(L, t, 2)]);
    return 1;
}

static int m_stride(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (!lua_isnoneornil(L, 2)) {
        lua_pushinteger(L, t->strides[tensor_dim(L, t, 2)]);
        return 1;
    }
    lua_createtable(L, t->ndim, 0);
    for (int i = 0; i < t->ndim; i++) {
        lua_pushinteger(L, t->strides[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int m_dim(lua_State *L)
{
    lua_pushinteger(L, lt_check(L, 1)->ndim);
    return 1;
}

static int m_numel(lua_State *L)
{
    lua_pushinteger(L, nn_numel(lt_check(L, 1)));
    return 1;
}

static int m_is_contiguous(lua_State *L)
{
    lua_pushboolean(L, nn_is_contiguous(lt_check(L, 1)));
    return 1;
}

static int m_is_floating_point(lua_State *L)
{
    lua_pushboolean(L, nn_dtype_is_float(lt_check(L, 1)->dtype));
    return 1;
}

static int m_data_ptr(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)(intptr_t)nn_data(lt_check(L, 1)));
    return 1;
}

/* x:get_device(): the CUDA device's index, -1 on the CPU (PyTorch's) */
static int m_get_device(lua_State *L)
{
    nn_device d = lt_check(L, 1)->storage->device;
    lua_pushinteger(L, d.type == NN_CPU ? -1 : d.index < 0 ? 0 : d.index);
    return 1;
}

static int m_element_size(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)nn_dtype_size(lt_check(L, 1)->dtype));
    return 1;
}

static int m_storage_offset(lua_State *L)
{
    lua_pushinteger(L, lt_check(L, 1)->offset);
    return 1;
}

/* ---- views ---- */

static int m_view(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int64_t shape[NN_MAX_DIMS];
    int n = lt_sizes(L, 2, lua_gettop(L), shape);
    lt_push_or_fail(L, nn_view(t, n, shape), 2);
    return 1;
}

static int m_reshape(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int64_t shape[NN_MAX_DIMS];
    int n = lt_sizes(L, 2, lua_gettop(L), shape);
    lt_push_or_fail(L, nn_reshape(t, n, shape), 2);
    return 1;
}

static int m_view_as(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1), *o = lt_check(L, 2);
    lt_push_or_fail(L, nn_view(t, o->ndim, o->shape), 2);
    return 1;
}

static int m_reshape_as(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1), *o = lt_check(L, 2);
    lt_push_or_fail(L, nn_reshape(t, o->ndim, o->shape), 2);
    return 1;
}

static int m_flatten(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    static const char *const keys[] = {"start_dim", "end_dim", NULL};
    int last = lt_last_positional(L), o = last + 1;
    lt_check_opts(L, o, keys);
    lua_Integer s = last >= 2 ? luaL_checkinteger(L, 2) : 0, e = last >= 3 ? luaL_checkinteger(L, 3) : -1;
    if (lt_opt(L, o, "start_dim") != LUA_TNIL) s = luaL_checkinteger(L, -1);
    if (lt_opt(L, o, "end_dim") != LUA_TNIL) e = luaL_checkinteger(L, -1);
    lt_push_or_fail(L, nn_flatten(t, (int)s, (int)e), 2);
    return 1;
}

static int m_transpose(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lt_push_or_fail(L, nn_transpose(t, (int)luaL_checkinteger(L, 2), (int)luaL_checkinteger(L, 3)), 2);
    return 1;
}

static int m_t(lua_State *L)
{
    lt_push_or_fail(L, nn_t(lt_check(L, 1)), 1);
    return 1;
}

static int m_permute(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int64_t d64[NN_MAX_DIMS];
    int n = lt_sizes(L, 2, lua_gettop(L), d64);
    if (n != t->ndim)
        return luaL_argerror(L, 2, lua_pushfstring(L, "number of dims don't match in permute (got %d, expected %d)", n, t->ndim));
    int dims[NN_MAX_DIMS];
    for (int i = 0; i < n; i++) dims[i] = d64[i] < -1000 || d64[i] > 1000 ? 1000 : (int)d64[i];
    lt_push_or_fail(L, nn_permute(t, dims), 2);
    return 1;
}

static int m_narrow(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int d = (int)luaL_checkinteger(L, 2);
    lt_push_or_fail(L, nn_narrow(t, d, luaL_checkinteger(L, 3), luaL_checkinteger(L, 4)), 2);
    return 1;
}

/* torch._diagonal(x, offset, dim1, dim2): the view (torch.diagonal checks its arguments in Lua) */
static int m_diagonal_view(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lua_Integer d1 = luaL_checkinteger(L, 3), d2 = luaL_checkinteger(L, 4);
    lt_push_or_fail(L, nn_diagonal(t, luaL_checkinteger(L, 2), d1 < -1000 || d1 > 1000 ? 1000 : (int)d1,
                                   d2 < -1000 || d2 > 1000 ? 1000 : (int)d2), 2);
    return 1;
}

static int m_select(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int d = (int)luaL_checkinteger(L, 2);
    lt_push_or_fail(L, nn_select(t, d, luaL_checkinteger(L, 3)), 3);
    return 1;
}

static int m_squeeze(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int d = lua_isnoneornil(L, 2) ? NN_ALL_DIMS : (int)luaL_checkinteger(L, 2);
    lt_push_or_fail(L, nn_squeeze(t, d), 2);
    return 1;
}

static int m_unsqueeze(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lt_push_or_fail(L, nn_unsqueeze(t, (int)luaL_checkinteger(L, 2)), 2);
    return 1;
}

static int m_expand(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int64_t shape[NN_MAX_DIMS];
    int n = lt_sizes(L, 2, lua_gettop(L), shape);
    lt_push_or_fail(L, nn_expand(t, n, shape), 2);
    return 1;
}

static int m_expand_as(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1), *o = lt_check(L, 2);
    lt_push_or_fail(L, nn_expand(t, o->ndim, o->shape), 2);
    return 1;
}

static int m_contiguous(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    return push_self_or(L, t, nn_contiguous(t), 0);
}

/* Push n tensors (new references) as a 1-based Lua list. */
static int push_list(lua_State *L, nn_tensor **ts, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lt_push(L, ts[i]);
        ts[i] = NULL;
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* A scratch array for n tensor pointers that the GC frees (errors cannot leak it). */
static nn_tensor **scratch(lua_State *L, int64_t n)
{
    if (n < 1) n = 1;
    if (n > (1 << 24)) luaL_error(L, "too many pieces (%d)", (int)n);
    nn_tensor **p = lua_newuserdatauv(L, (size_t)n * sizeof *p, 0);
    memset(p, 0, (size_t)n * sizeof *p);
    return p;
}

static int opt_dim(lua_State *L, int idx, int last)
{
    return idx <= last ? (int)luaL_checkinteger(L, idx) : 0;
}

static int m_chunk(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lua_Integer chunks = luaL_checkinteger(L, 2);
    luaL_argcheck(L, chunks > 0, 2, "chunk expects `chunks` to be greater than 0");
    int dim = opt_dim(L, 3, lua_gettop(L));
    nn_tensor **out = scratch(L, chunks);
    int n = nn_chunk(t, (int)chunks, dim, out, (int)chunks);
    if (n < 0) return lt_fail(L, 3);
    return push_list(L, out, n);
}

static int m_split(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int dim = opt_dim(L, 3, lua_gettop(L)), wd = dim;
    if (nn_wrap_dim("split", &wd, t->ndim)) return lt_fail(L, 3);
    int64_t size = t->ndim ? t->shape[wd] : 1;
    nn_tensor **out;
    int n;
    if (lua_type(L, 2) == LUA_TTABLE) {
        int64_t sizes[256];
        lua_Integer len = (lua_Integer)lua_rawlen(L, 2);
        luaL_argcheck(L, len <= 256, 2, "too many split sizes");
        for (int i = 0; i < len; i++) {
            lua_rawgeti(L, 2, i + 1);
            int isint;
            sizes[i] = lua_tointegerx(L, -1, &isint);
            if (!isint) return luaL_argerror(L, 2, "split sizes must be integers");
            lua_pop(L, 1);
        }
        out = scratch(L, len);
        n = nn_split_sizes(t, (int)len, sizes, dim, out, (int)len);
    } else {
        lua_Integer s = luaL_checkinteger(L, 2);
        int64_t max = s > 0 ? (size + s - 1) / s : 1;
        if (max < 1) max = 1;
        out = scratch(L, max);
        n = nn_split(t, s, dim, out, (int)max);
    }
    if (n < 0) return lt_fail(L, 2);
    return push_list(L, out, n);
}

static int m_unbind(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (t->ndim == 0) return luaL_error(L, "unbind: dimension specified as 0 but tensor has no dimensions");
    int dim = lua_isnoneornil(L, 2) ? 0 : lt_check_dim(L, 2, t->ndim);
    lua_createtable(L, (int)t->shape[dim], 0);
    for (int64_t i = 0; i < t->shape[dim]; i++) {
        lt_push(L, nn_select(t, dim, i));
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* ---- copies and conversion ---- */

/* x:clone([{memory_format=torch.preserve_format}]) */
static int m_clone(lua_State *L)
{
    static const char *const keys[] = {"memory_format", NULL};
    nn_tensor *t = lt_check(L, 1);
    if (lt_is_opts(L, 2)) lt_check_opts(L, 2, keys);
    int f = lt_opt_memory_format(L, 2);
    lt_push_or_fail(L, nn_clone_as(t, f < 0 ? NN_PRESERVE_FORMAT : (nn_memory_format)f), 1);
    return 1;
}

/* x:to(dtype | device | string | tensor [, ...], {dtype=, device=, non_blocking=, copy=}) */
static int m_to(lua_State *L)
{
    static const char *const keys[] = {"dtype", "device", "non_blocking", "copy", "memory_format", NULL};
    nn_tensor *t = lt_check(L, 1);
    int last = lt_last_positional(L), o = last + 1;
    lt_check_opts(L, o, keys);
    nn_dtype dt = NN_DTYPE_NONE;
    nn_device dev = t->storage->device;
    int nbool = 0, copy = 0;
    for (int i = 2; i <= last; i++) {
        nn_device d;
        nn_dtype x;
        nn_tensor *other;
        if (lua_isnil(L, i)) continue;
        if (lua_type(L, i) == LUA_TBOOLEAN) {
            if (nbool++ == 1) copy = lua_toboolean(L, i); /* to(device, dtype, non_blocking, copy) */
        } else if ((other = lt_totensor(L, i))) {
            dt = other->dtype;
            dev = other->storage->device;
        } else if ((x = lt_todtype(L, i)) != NN_DTYPE_NONE) dt = x;
        else if (lt_todevice(L, i, &d)) dev = d;
        else if (lua_type(L, i) == LUA_TSTRING)
            return luaL_argerror(L, i, lua_pushfstring(L, "expected a device or dtype, got '%s'", lua_tostring(L, i)));
        else return luaL_typeerror(L, i, "dtype, device or tensor");
    }
    dt = lt_opt_dtype(L, o, dt);
    dev = lt_opt_device(L, o, dev);
    copy = lt_opt_bool(L, o, "copy", copy);
    if (nn_dtype_is_complex(t->dtype) && dt != NN_DTYPE_NONE && !nn_dtype_is_complex(dt)) {
        static bool warned;
        if (!warned) fputs("UserWarning: Casting complex values to real discards the imaginary part\n", stderr);
        warned = true;
    }
    nn_tensor *r = nn_retain(t), *next;
    /* cast on the host side of a transfer: fewer bytes cross when narrowing */
    int cast_first = dt != NN_DTYPE_NONE && dev.type == NN_CPU;
    if (cast_first) {
        next = nn_to_dtype(r, dt);
        nn_release(r);
        if (!(r = next)) return lt_fail(L, 2);
    }
    next = nn_to_device(r, dev);
    nn_release(r);
    if (!(r = next)) return lt_fail(L, 2);
    if (!cast_first && dt != NN_DTYPE_NONE) {
        next = nn_to_dtype(r, dt);
        nn_release(r);
        if (!(r = next)) return lt_fail(L, 2);
    }
    if (copy && r == t) {
        next = nn_clone(r);
        nn_release(r);
        if (!(r = next)) return lt_fail(L, 0);
    }
    int mf = lt_opt_memory_format(L, o); /* amp.c: -1 when not given */
    if (mf >= 0 && mf != NN_PRESERVE_FORMAT) {
        next = nn_contiguous_as(r, (nn_memory_format)mf);
        nn_release(r);
        if (!(r = next)) return lt_fail(L, o);
    }
    return push_self_or(L, t, r, 2);
}

/* A CPU tensor holding t's values (t itself, retained, when on the CPU). */
static nn_tensor *host(lua_State *L, nn_tensor *t)
{
    nn_tensor *h = nn_to_device(t, NN_DEVICE_CPU);
    if (!h) lt_fail(L, 0);
    return h;
}

static void push_element(lua_State *L, const nn_tensor *t, const int64_t *index)
{
    if (nn_dtype_is_complex(t->dtype)) lt_push_element(L, t, index);
    else if (t->dtype == NN_BOOL) lua_pushboolean(L, nn_get_i64(t, index) != 0);
    else if (nn_dtype_is_integral(t->dtype)) lua_pushinteger(L, nn_get_i64(t, index));
    else lua_pushnumber(L, nn_get_f64(t, index));
}

static int m_item(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int64_t n = nn_numel(t);
    if (t->storage->device.type == NN_META) return luaL_error(L, "Tensor.item() cannot be called on meta tensors");
    if (n != 1) return luaL_error(L, "a Tensor with %d elements cannot be converted to Scalar", (int)n);
    nn_tensor *h = host(L, t);
    int64_t zero[NN_MAX_DIMS] = {0};
    push_element(L, h, zero);
    nn_release(h);
    return 1;
}

static void tolist_rec(lua_State *L, const nn_tensor *t, int d, int64_t *index)
{
    if (d == t->ndim) {
        push_element(L, t, index);
        return;
    }
    luaL_checkstack(L, 4, "tensor too deep");
    lua_createtable(L, (int)t->shape[d], 0);
    for (int64_t i = 0; i < t->shape[d]; i++) {
        index[d] = i;
        tolist_rec(L, t, d + 1, index);
        lua_rawseti(L, -2, i + 1);
    }
}

static int m_tolist(lua_State *L)
{
    nn_tensor *h = host(L, lt_check(L, 1));
    int64_t index[NN_MAX_DIMS] = {0};
    /* hand h to a userdata first, so a Lua error while building the table cannot leak it */
    lt_push(L, h);
    tolist_rec(L, h, 0, index);
    return 1;
}

/* ---- any geometry over the storage: torch.as_strided, resize_ and the in-place view ops
 * (squeeze_, t_, ...) of bindings/lua/torch_shape_more.lua ---- */

static int64_t storage_numel(const nn_tensor *t) { return (int64_t)(t->storage->nbytes / nn_dtype_size(t->dtype)); }

/* t:_as_strided(size, stride[, offset]): a view of t's storage with that geometry (offset
 * defaults to t's), recording no autograd; an error when it would reach outside the storage. */
static int t_as_strided_view(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    int64_t shape[NN_MAX_DIMS], strides[NN_MAX_DIMS];
    int n = lt_sizes(L, 2, 2, shape), ns = lt_sizes(L, 3, 3, strides);
    lua_Integer offset = luaL_optinteger(L, 4, t->offset);
    if (ns != n) return luaL_error(L, "as_strided: mismatch in length of strides and shape (%d and %d)", ns, n);
    if (offset < 0) return luaL_error(L, "as_strided: storage offset must be non-negative, got %I", offset);
    int64_t last = offset;
    bool empty = false, overflow = false;
    for (int i = 0; i < n; i++) {
        if (shape[i] < 0) return luaL_error(L, "as_strided: negative size %I at dim %d", (lua_Integer)shape[i], i);
        if (strides[i] < 0)
            return luaL_error(L, "as_strided: negative strides are not supported, got %I at dim %d", (lua_Integer)strides[i], i);
        int64_t step;
        if (shape[i] == 0) empty = true;
        else overflow |= __builtin_mul_overflow(shape[i] - 1, strides[i], &step) || __builtin_add_overflow(last, step, &last);
    }
    int64_t have = storage_numel(t);
    if (!empty && (overflow || last >= have)) {
        char b1[160], b2[160];
        const char *reach = overflow ? "beyond int64" : lua_pushfstring(L, "%I", (lua_Integer)last);
        return luaL_error(L, "as_strided: size %s, stride %s and storage offset %I reach element %s, outside the storage of %I elements",
                          nn_shape_str(b1, n, shape), nn_shape_str(b2, n, strides), offset, reach, (lua_Integer)have);
    }
    nn_tensor *v = nn_make_view(t, n, shape, strides, offset);
    if (!v) return lt_fail(L, 0);
    v->base = nn_retain(t->base ? t->base : t);
    lt_push(L, v);
    return 1;
}

/* t:_set_view_(v): t takes the geometry of v, a view of t's storage, and v's autograd
 * history when it has one (an in-place view op is the view op with t as its result). Returns t. */
static int t_set_view_(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1), *v = lt_check(L, 2);
    if (v->storage != t->storage) return luaL_argerror(L, 2, "a view of the first tensor's storage expected");
    t->ndim = v->ndim;
    memcpy(t->shape, v->shape, sizeof t->shape);
    memcpy(t->strides, v->strides, sizeof t->strides);
    t->offset = v->offset;
    if (v->grad_fn) nn_node_set_output(v->grad_fn, t, v->output_nr);
    lua_settop(L, 1);
    return 1;
}

/* t:_storage_info() -> elements t's storage holds, whether t is a view (has a base), whether
 * another tensor shares the storage */
static int t_storage_info(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lua_pushinteger(L, storage_numel(t));
    lua_pushboolean(L, t->base != NULL);
    lua_pushboolean(L, !nn_sole_owner(t));
    return 3;
}

void lt_open_views(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"size", m_size}, {"stride", m_stride}, {"dim", m_dim}, {"ndimension", m_dim},
        {"numel", m_numel}, {"nelement", m_numel}, {"is_contiguous", m_is_contiguous},
        {"is_floating_point", m_is_floating_point}, {"data_ptr", m_data_ptr},
        {"get_device", m_get_device}, {"element_size", m_element_size}, {"storage_offset", m_storage_offset},
        {"view", m_view}, {"reshape", m_reshape}, {"view_as", m_view_as}, {"reshape_as", m_reshape_as},
        {"flatten", m_flatten}, {"transpose", m_transpose}, {"t", m_t}, {"permute", m_permute},
        {"narrow", m_narrow}, {"select", m_select}, {"squeeze", m_squeeze}, {"unsqueeze", m_unsqueeze},
        {"expand", m_expand}, {"expand_as", m_expand_as}, {"contiguous", m_contiguous},
        {"chunk", m_chunk}, {"split", m_split}, {"unbind", m_unbind},
        {"clone", m_clone}, {"to", m_to}, {"item", m_item}, {"tolist", m_tolist},
        {NULL, NULL},
    };
    /* functions that also live in torch (torch.numel(x), torch.flatten(x) ...) */
    static const char *const in_torch[] = {
        "numel", "reshape", "flatten", "transpose", "t", "permute", "narrow", "select", "squeeze",
        "unsqueeze", "chunk", "split", "unbind", "clone", "is_floating_point", NULL,
    };
    int torch = lua_gettop(L);
    lua_getfield(L, torch, "Tensor");
    luaL_setfuncs(L, methods, 0);
    for (const char *const *n = in_torch; *n; n++) {
        lua_getfield(L, -1, *n);
        lua_setfield(L, torch, *n);
    }
    lua_pushcfunction(L, m_diagonal_view);
    lua_setfield(L, torch, "_diagonal");
    static const luaL_Reg private_fns[] = {
        {"_as_strided", t_as_strided_view}, {"_set_view_", t_set_view_}, {"_storage_info", t_storage_info}, {NULL, NULL},
    };
    luaL_setfuncs(L, private_fns, 0); /* Tensor methods, for the library only */
    lua_settop(L, torch);
}
