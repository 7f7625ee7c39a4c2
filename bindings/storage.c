/* The two C pieces of torch.UntypedStorage / TypedStorage (bindings/lua/torch_storage.lua):
 * torch._storage_view(x [, dtype]), a 1-D tensor over all of x's storage (it holds the storage,
 * every write through it is x's), and torch._storage_resize_(x, nbytes), which gives x's
 * storage a new size in place, so every tensor and storage object over it sees the change. */
#include "lt.h"
#include "ops.h"

/* a 1-D tensor of dt over all of t's storage (its last bytes that make no whole element left out) */
static nn_tensor *storage_as(nn_tensor *t, nn_dtype dt)
{
    int64_t n = (int64_t)(t->storage->nbytes / nn_dtype_size(dt)), one = 1;
    nn_tensor *v = nn_make_view(t, 1, &n, &one, 0);
    if (v) v->dtype = dt;
    return v;
}
static nn_tensor *bytes_of(nn_tensor *t) { return storage_as(t, NN_U8); }

/* torch._storage_view(x [, dtype]): uint8 by default */
static int storage_view(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    nn_dtype dt = lua_isnoneornil(L, 2) ? NN_U8 : lt_check_dtype(L, 2);
    lt_push_or_fail(L, storage_as(t, dt), 1);
    return 1;
}

/* New memory of nbytes with the old bytes copied over (as many as fit), swapped into the storage.
 * Shrinking is refused while other tensors use the storage: nnrepl checks a view's bounds only
 * when it is made, so a smaller storage under them would be read out of bounds. */
static int storage_resize(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lua_Integer n = luaL_checkinteger(L, 2);
    nn_storage *s = t->storage;
    if (n < 0) return luaL_error(L, "resize_: the new size must be non-negative, got %d", (int)n);
    if (s->release) return luaL_error(L, "Trying to resize storage that is not resizable");
    if ((size_t)n < s->nbytes && s->refcount > 1) lua_gc(L, LUA_GCCOLLECT); /* views no longer reachable let go */
    if ((size_t)n < s->nbytes && s->refcount > 1)
        return luaL_error(L, "resize_: cannot shrink a storage that tensors still use (nnrepl would let them read past "
                             "its end); drop those tensors first, or copy what you keep into a new storage");
    int64_t size = n;
    nn_tensor *fresh = nn_empty(1, &size, NN_U8, s->device);
    if (!fresh) return lt_fail(L, 0);
    int64_t keep = (int64_t)(s->nbytes < (size_t)n ? s->nbytes : (size_t)n), one = 1;
    if (keep > 0) {
        nn_tensor *dst = nn_make_view(fresh, 1, &keep, &one, 0), *old = bytes_of(t);
        nn_tensor *src = old ? nn_make_view(old, 1, &keep, &one, 0) : NULL;
        nn_status st = dst && src ? nn_copy_(dst, src) : nn_last_status();
        nn_release(dst), nn_release(src), nn_release(old);
        if (st) { nn_release(fresh); return lt_fail(L, 0); }
    }
    nn_storage *f = fresh->storage, tmp = *s;
    s->data = f->data, s->nbytes = f->nbytes, s->pinned = f->pinned;
    f->data = tmp.data, f->nbytes = tmp.nbytes, f->pinned = tmp.pinned;
    s->version++;
    nn_release(fresh); /* frees the old memory */
    return 0;
}

void lt_open_storage(lua_State *L)
{
    lua_pushcfunction(L, storage_view);
    lua_setfield(L, -2, "_storage_view");
    lua_pushcfunction(L, storage_resize);
    lua_setfield(L, -2, "_storage_resize_");
}
