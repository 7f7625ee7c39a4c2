/* torch._dist's stores (PyTorch's TCPStore, FileStore, HashStore, PrefixStore): the
 * engine's rendezvous stores (engine/dist/store.h) as a Store userdata; bindings/lua/
 * torch_dist_store.lua gives them PyTorch's arguments.
 *
 *   tcp_store(host, port, is_master, timeout)  file_store(path, timeout)
 *   hash_store(timeout)  prefix_store(prefix, store)
 *   store:set(key, value)  store:get(key[, timeout]) -> string  store:add(key, n) -> integer
 *   store:compare_set(key, expected, desired) -> string  store:check(key) -> boolean
 *   store:delete_key(key) -> boolean  store:num_keys() -> integer
 *   store:wait(keys, timeout)  store:timeout() / store:set_timeout(s)  store:port()  store:desc() */
#include <stdlib.h>

#include "dist_store.h"

static const char STORE_MT[] = "torch.distributed.Store";

typedef struct { nn_store *s; } store_ud;

nn_store *lt_dist_checkstore(lua_State *L, int idx)
{
    store_ud *u = luaL_checkudata(L, idx, STORE_MT);
    if (!u->s) luaL_error(L, "the store was closed");
    return u->s;
}

void lt_dist_pushstore(lua_State *L, nn_store *s)
{
    store_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->s = s;
    luaL_setmetatable(L, STORE_MT);
}

static int push_new(lua_State *L, nn_store *s)
{
    if (!s) return lt_fail(L, 0);
    lt_dist_pushstore(L, s);
    return 1;
}

static int s_tcp(lua_State *L)
{
    const char *host = luaL_checkstring(L, 1);
    int port = (int)luaL_checkinteger(L, 2);
    if (port < 0 || port > 65535) return luaL_error(L, "TCPStore: port %d is out of range", port);
    return push_new(L, nn_store_tcp(host, port, lua_toboolean(L, 3), luaL_optnumber(L, 4, 300)));
}

static int s_file(lua_State *L) { return push_new(L, nn_store_file(luaL_checkstring(L, 1), luaL_optnumber(L, 2, 300))); }
static int s_hash(lua_State *L) { return push_new(L, nn_store_hash(luaL_optnumber(L, 1, 300))); }

static int s_prefix(lua_State *L)
{
    const char *prefix = luaL_checkstring(L, 1);
    return push_new(L, nn_store_prefix(prefix, lt_dist_checkstore(L, 2)));
}

static int m_set(lua_State *L)
{
    nn_store *s = lt_dist_checkstore(L, 1);
    size_t n;
    const char *v = luaL_checklstring(L, 3, &n);
    if (nn_store_set(s, luaL_checkstring(L, 2), v, n)) return lt_fail(L, 0);
    return 0;
}

static int push_bytes(lua_State *L, void *v, size_t n)
{
    lua_pushlstring(L, v, n);
    free(v);
    return 1;
}

static int m_get(lua_State *L)
{
    nn_store *s = lt_dist_checkstore(L, 1);
    void *v;
    size_t n;
    if (s->ops->get(s, luaL_checkstring(L, 2), luaL_optnumber(L, 3, s->timeout), &v, &n)) return lt_fail(L, 0);
    return push_bytes(L, v, n);
}

static int m_add(lua_State *L)
{
    int64_t r;
    if (nn_store_add(lt_dist_checkstore(L, 1), luaL_checkstring(L, 2), luaL_checkinteger(L, 3), &r)) return lt_fail(L, 0);
    lua_pushinteger(L, r);
    return 1;
}

static int m_compare_set(lua_State *L)
{
    nn_store *s = lt_dist_checkstore(L, 1);
    size_t en, dn, n;
    const char *key = luaL_checkstring(L, 2), *e = luaL_checklstring(L, 3, &en), *d = luaL_checklstring(L, 4, &dn);
    void *v;
    if (nn_store_compare_set(s, key, e, en, d, dn, &v, &n)) return lt_fail(L, 0);
    return push_bytes(L, v, n);
}

static int m_check(lua_State *L)
{
    bool there;
    if (nn_store_check(lt_dist_checkstore(L, 1), luaL_checkstring(L, 2), &there)) return lt_fail(L, 0);
    lua_pushboolean(L, there);
    return 1;
}

static int m_delete_key(lua_State *L)
{
    bool deleted;
    if (nn_store_delete_key(lt_dist_checkstore(L, 1), luaL_checkstring(L, 2), &deleted)) return lt_fail(L, 0);
    lua_pushboolean(L, deleted);
    return 1;
}

static int m_num_keys(lua_State *L)
{
    int64_t n;
    if (nn_store_num_keys(lt_dist_checkstore(L, 1), &n)) return lt_fail(L, 0);
    lua_pushinteger(L, n);
    return 1;
}

static int m_wait(lua_State *L)
{
    nn_store *s = lt_dist_checkstore(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    int n = (int)luaL_len(L, 2);
    const char **keys = lua_newuserdatauv(L, sizeof *keys * (size_t)(n ? n : 1), 0);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 2, i + 1);
        keys[i] = lua_tostring(L, -1);
        if (!keys[i]) return luaL_argerror(L, 2, "a list of string keys expected");
        lua_pop(L, 1); /* the list keeps it alive */
    }
    if (nn_store_wait(s, keys, n, luaL_optnumber(L, 3, s->timeout))) return lt_fail(L, 0);
    return 0;
}

static int m_timeout(lua_State *L)
{
    lua_pushnumber(L, lt_dist_checkstore(L, 1)->timeout);
    return 1;
}

static int m_set_timeout(lua_State *L)
{
    lt_dist_checkstore(L, 1)->timeout = luaL_checknumber(L, 2);
    return 0;
}

static int m_port(lua_State *L)
{
    lua_pushinteger(L, nn_store_tcp_port(lt_dist_checkstore(L, 1)));
    return 1;
}

static int m_desc(lua_State *L)
{
    lua_pushstring(L, lt_dist_checkstore(L, 1)->desc);
    return 1;
}

static int m_gc(lua_State *L)
{
    store_ud *u = luaL_checkudata(L, 1, STORE_MT);
    nn_store_free(u->s);
    u->s = NULL;
    return 0;
}

void lt_dist_store_open(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"set", m_set}, {"get", m_get}, {"add", m_add}, {"compare_set", m_compare_set}, {"check", m_check},
        {"delete_key", m_delete_key}, {"num_keys", m_num_keys}, {"wait", m_wait}, {"timeout", m_timeout},
        {"set_timeout", m_set_timeout}, {"port", m_port}, {"desc", m_desc}, {NULL, NULL},
    };
    luaL_newmetatable(L, STORE_MT);
    lua_pushcfunction(L, m_gc);
    lua_setfield(L, -2, "__gc");
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    static const luaL_Reg fns[] = {
        {"tcp_store", s_tcp}, {"file_store", s_file}, {"hash_store", s_hash}, {"prefix_store", s_prefix}, {NULL, NULL},
    };
    luaL_setfuncs(L, fns, 0);
}
