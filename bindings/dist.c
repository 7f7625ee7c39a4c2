/* torch._dist: the C half of torch.distributed (bindings/lua/torch_distributed.lua
 * takes PyTorch's arguments and calls these with plain ones).
 *
 *   init(backend, init_method, rank, world_size, timeout)   the default group
 *   init_store(backend, store, rank, world_size, timeout)   the same over a Store (dist_store.c)
 *   destroy(), is_initialized(), rank(g), size(g), backend(g), available(name), free_port()
 *   new_group(backend, prefix, rank, size, timeout[, store]) -> ProcessGroup (freed when collected)
 *   group_store(g) -> Store
 *   all_reduce(t, op, async)  broadcast(t, src, async)  reduce(t, dst, op, async)
 *   all_gather(list, t, async)  all_gather_into_tensor(out, t, async)
 *   reduce_scatter(out, list, op, async)  reduce_scatter_tensor(out, in, op, async)
 *   send(t, dst, tag, async)  recv(t, src, tag, async)  barrier(async)
 *       op: 0-based index of SUM, AVG, PRODUCT, MIN, MAX; with async true they
 *       return a Work (wait(), is_completed(), <close>), else nothing. Each takes a
 *       ProcessGroup after these arguments (nil: the default group); ranks are the group's.
 *   broadcast_coalesced(list, src)
 *   Reducer(params, bucket_cap_bytes, first_bucket_bytes, find_unused, gradient_as_bucket_view)
 *       DDP's reducer (engine/dist/reducer.h): prepare_forward(),
 *       prepare_backward(outputs), buckets() -> lists of 0-based parameter indices,
 *       shadow() -> the buckets' averages over zero gradients (a joined rank's backward),
 *       set_comm_hook(kind, run, result): kind "allreduce", "fp16", "bf16" (run in C) or
 *       "custom": run(k, buffer, is_last) when bucket k (0-based) is complete, result(k) -> its
 *       reduced flat tensor when all have run (both called during backward)
 *
 * A Reducer remembers the group it was made for; once that group is destroyed it
 * refuses to work rather than touch a freed group. */
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "dist/net.h"
#include "dist/pg.h"
#include "dist/reducer.h"
#include "dist_store.h"

static const char WORK_MT[] = "torch.distributed.Work";
static const char REDUCER_MT[] = "torch.distributed.Reducer";
static const char GROUP_MT[] = "torch.distributed.ProcessGroup";

static int generation; /* bumped by every init and destroy of the default group */

static nn_pg *default_pg(lua_State *L)
{
    nn_pg *pg = nn_dist_default();
    if (!pg) luaL_error(L, "Default process group has not been initialized, please make sure to call init_process_group.");
    return pg;
}

/* ---- subgroups ---- */
typedef struct { nn_pg *pg; } group_ud;

/* The group at idx: a ProcessGroup, or the default group for nil */
static nn_pg *group_pg(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx)) return default_pg(L);
    group_ud *u = luaL_checkudata(L, idx, GROUP_MT);
    if (!u->pg) luaL_error(L, "the process group has been destroyed");
    return u->pg;
}

/* new_group(backend, prefix, rank, size, timeout[, store]): this rank's member of a subgroup
 * meeting under prefix in store (default: the default group's store) */
static int d_new_group(lua_State *L)
{
    const char *backend = luaL_checkstring(L, 1), *prefix = luaL_checkstring(L, 2);
    int rank = (int)luaL_checkinteger(L, 3), size = (int)luaL_checkinteger(L, 4);
    double timeout = luaL_checknumber(L, 5);
    nn_store *store = nn_store_prefix(prefix, lua_isnoneornil(L, 6) ? default_pg(L)->store : lt_dist_checkstore(L, 6));
    if (!store) return lt_fail(L, 0);
    group_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->pg = NULL;
    luaL_setmetatable(L, GROUP_MT);
    u->pg = nn_pg_new_group(backend, store, rank, size, timeout);
    if (!u->pg) return lt_fail(L, 0);
    return 1;
}

static int group_gc(lua_State *L)
{
    group_ud *u = luaL_checkudata(L, 1, GROUP_MT);
    nn_pg_destroy(u->pg);
    u->pg = NULL;
    return 0;
}

/* group_store(group): the group's store (nil: the default group's) */
static int d_group_store(lua_State *L)
{
    lt_dist_pushstore(L, nn_store_retain(group_pg(L, 1)->store));
    return 1;
}

/* ---- work ---- */
typedef struct { nn_work *w; } work_ud;

static int push_work(lua_State *L, nn_work *w, bool async)
{
    if (!w) return lt_fail(L, 0);
    if (!async) {
        nn_status st = nn_work_wait(w);
        nn_work_release(w);
        if (st) return lt_fail(L, 0);
        return 0;
    }
    work_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->w = w;
    luaL_setmetatable(L, WORK_MT);
    return 1;
}

static int work_wait(lua_State *L)
{
    work_ud *u = luaL_checkudata(L, 1, WORK_MT);
    if (u->w && nn_work_wait(u->w)) return lt_fail(L, 0);
    lua_pushboolean(L, 1);
    return 1;
}

static int work_is_completed(lua_State *L)
{
    work_ud *u = luaL_checkudata(L, 1, WORK_MT);
    lua_pushboolean(L, !u->w || nn_work_is_completed(u->w));
    return 1;
}

static int work_gc(lua_State *L)
{
    work_ud *u = luaL_checkudata(L, 1, WORK_MT);
    nn_work_release(u->w);
    u->w = NULL;
    return 0;
}

/* ---- the default group ---- */

static int d_init(lua_State *L)
{
    const char *backend = luaL_checkstring(L, 1);
    const char *method = luaL_optstring(L, 2, "env://");
    int rank = (int)luaL_optinteger(L, 3, -1), world = (int)luaL_optinteger(L, 4, -1);
    double timeout = luaL_optnumber(L, 5, 600);
    if (nn_dist_default()) return luaL_error(L, "trying to initialize the default process group twice!");
    nn_pg *pg = nn_pg_init(backend, method, rank, world, timeout);
    if (!pg) return lt_fail(L, 0);
    nn_dist_set_default(pg);
    generation++;
    return 0;
}

/* init_store(backend, store, rank, world_size, timeout): the default group over a Store */
static int d_init_store(lua_State *L)
{
    const char *backend = luaL_checkstring(L, 1);
    nn_store *store = lt_dist_checkstore(L, 2);
    int rank = (int)luaL_checkinteger(L, 3), world = (int)luaL_checkinteger(L, 4);
    double timeout = luaL_checknumber(L, 5);
    if (nn_dist_default()) return luaL_error(L, "trying to initialize the default process group twice!");
    if (world < 1 || rank < 0 || rank >= world)
        return luaL_error(L, "init_process_group: rank %d is out of range for world_size %d", rank, world);
    nn_pg *pg = nn_pg_new(backend, nn_store_retain(store), rank, world, timeout);
    if (!pg) return lt_fail(L, 0);
    nn_dist_set_default(pg);
    generation++;
    return 0;
}

static int d_destroy(lua_State *L)
{
    (void)L;
    nn_dist_set_default(NULL);
    generation++;
    return 0;
}

static int d_is_initialized(lua_State *L)
{
    lua_pushboolean(L, nn_dist_default() != NULL);
    return 1;
}

static int d_rank(lua_State *L)
{
    lua_pushinteger(L, group_pg(L, 1)->rank);
    return 1;
}

static int d_size(lua_State *L)
{
    lua_pushinteger(L, group_pg(L, 1)->size);
    return 1;
}

static int d_backend(lua_State *L)
{
    lua_pushstring(L, group_pg(L, 1)->ops->name);
    return 1;
}

/* A free TCP port on 127.0.0.1 (for tests and hand-started ranks). */
static int d_free_port(lua_State *L)
{
    char err[256];
    int port = 0, fd = nn_net_listen("127.0.0.1", 0, &port, err, sizeof err);
    if (fd < 0) return luaL_error(L, "%s", err);
    close(fd);
    lua_pushinteger(L, port);
    return 1;
}

static int d_available(lua_State *L)
{
    lua_pushboolean(L, nn_pg_backend_available(luaL_checkstring(L, 1)));
    return 1;
}

/* ---- collectives ---- */

static nn_reduce_op check_op(lua_State *L, int idx)
{
    lua_Integer op = luaL_checkinteger(L, idx);
    if (op < 0 || op >= NN_NREDUCE) luaL_argerror(L, idx, "unknown reduce op");
    return (nn_reduce_op)op;
}

/* A Lua list of world-size tensors (borrowed), in *out (room for n). */
static void tensor_list(lua_State *L, int idx, int n, nn_tensor **out, const char *fn)
{
    luaL_checktype(L, idx, LUA_TTABLE);
    int len = (int)luaL_len(L, idx);
    if (len != n) luaL_argerror(L, idx, lua_pushfstring(L, "%s: the tensor list must hold world_size (%d) tensors, got %d", fn, n, len));
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, idx, i + 1);
        out[i] = lt_totensor(L, -1);
        if (!out[i]) luaL_argerror(L, idx, lua_pushfstring(L, "%s: entry %d of the list is not a tensor", fn, i + 1));
        lua_pop(L, 1); /* the list keeps it alive */
    }
}

static int d_all_reduce(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    return push_work(L, nn_dist_all_reduce(group_pg(L, 4), t, check_op(L, 2)), lua_toboolean(L, 3));
}

static int d_broadcast(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    return push_work(L, nn_dist_broadcast(group_pg(L, 4), t, (int)luaL_checkinteger(L, 2)), lua_toboolean(L, 3));
}

static int d_reduce(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    return push_work(L, nn_dist_reduce(group_pg(L, 5), t, (int)luaL_checkinteger(L, 2), check_op(L, 3)), lua_toboolean(L, 4));
}

static int d_all_gather(lua_State *L)
{
    nn_pg *pg = group_pg(L, 4);
    nn_tensor *t = lt_check(L, 2);
    nn_tensor **outs = lua_newuserdatauv(L, sizeof *outs * (size_t)pg->size, 0); /* scratch, collected */
    tensor_list(L, 1, pg->size, outs, "all_gather");
    return push_work(L, nn_dist_all_gather(pg, outs, t), lua_toboolean(L, 3));
}

static int d_all_gather_into_tensor(lua_State *L)
{
    nn_tensor *out = lt_check(L, 1), *t = lt_check(L, 2);
    return push_work(L, nn_dist_all_gather_into_tensor(group_pg(L, 4), out, t), lua_toboolean(L, 3));
}

static int d_reduce_scatter(lua_State *L)
{
    nn_pg *pg = group_pg(L, 5);
    nn_tensor *out = lt_check(L, 1);
    nn_reduce_op op = check_op(L, 3);
    bool async = lua_toboolean(L, 4);
    nn_tensor **ins = lua_newuserdatauv(L, sizeof *ins * (size_t)pg->size, 0);
    tensor_list(L, 2, pg->size, ins, "reduce_scatter");
    return push_work(L, nn_dist_reduce_scatter(pg, out, ins, op), async);
}

static int d_reduce_scatter_tensor(lua_State *L)
{
    nn_tensor *out = lt_check(L, 1), *in = lt_check(L, 2);
    return push_work(L, nn_dist_reduce_scatter_tensor(group_pg(L, 5), out, in, check_op(L, 3)), lua_toboolean(L, 4));
}

static int d_send(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    return push_work(L, nn_dist_send(group_pg(L, 5), t, (int)luaL_checkinteger(L, 2), (int)luaL_optinteger(L, 3, 0)), lua_toboolean(L, 4));
}

static int d_recv(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    return push_work(L, nn_dist_recv(group_pg(L, 5), t, (int)luaL_checkinteger(L, 2), (int)luaL_optinteger(L, 3, 0)), lua_toboolean(L, 4));
}

static int d_barrier(lua_State *L)
{
    return push_work(L, nn_dist_barrier(group_pg(L, 2)), lua_toboolean(L, 1));
}

static int d_broadcast_coalesced(lua_State *L)
{
    nn_pg *pg = default_pg(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    int n = (int)luaL_len(L, 1);
    nn_tensor **ts = lua_newuserdatauv(L, sizeof *ts * (size_t)(n ? n : 1), 0);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        ts[i] = lt_totensor(L, -1);
        if (!ts[i]) return luaL_argerror(L, 1, "broadcast_coalesced: a list of tensors expected");
        lua_pop(L, 1);
    }
    if (nn_dist_broadcast_coalesced(pg, ts, n, (int)luaL_checkinteger(L, 2))) return lt_fail(L, 0);
    return 0;
}

/* ---- the reducer ---- */
typedef struct {
    nn_reducer *r;
    int generation;
    lua_State *L;            /* the thread in prepare_backward, where find_unused_parameters may run comm hooks */
    int run_ref, result_ref; /* a custom comm hook's functions, in the registry (LUA_NOREF: none) */
} reducer_ud;

static reducer_ud *check_reducer(lua_State *L)
{
    reducer_ud *u = luaL_checkudata(L, 1, REDUCER_MT);
    if (!u->r) luaL_error(L, "DistributedDataParallel: the reducer was closed");
    if (u->generation != generation)
        luaL_error(L, "DistributedDataParallel: the process group this model was wrapped for has been destroyed");
    return u;
}

static int d_reducer(lua_State *L)
{
    nn_pg *pg = default_pg(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    int n = (int)luaL_len(L, 1);
    nn_reducer_opts o = {
        .bucket_cap_bytes = (size_t)luaL_optnumber(L, 2, 25 << 20),
        .first_bucket_bytes = (size_t)luaL_optnumber(L, 3, 1 << 20),
        .find_unused_parameters = lua_toboolean(L, 4),
        .gradient_as_bucket_view = lua_toboolean(L, 5),
    };
    reducer_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
    u->r = NULL;
    u->generation = generation;
    u->run_ref = u->result_ref = LUA_NOREF;
    u->L = NULL;
    luaL_setmetatable(L, REDUCER_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1); /* the parameter list stays alive with the reducer */
    nn_tensor **ps = lua_newuserdatauv(L, sizeof *ps * (size_t)(n ? n : 1), 0);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        ps[i] = lt_totensor(L, -1);
        if (!ps[i]) return luaL_argerror(L, 1, "DistributedDataParallel: a list of parameters expected");
        lua_pop(L, 1);
    }
    u->r = nn_reducer_new(pg, ps, n, &o);
    if (!u->r) return lt_fail(L, 0);
    lua_pop(L, 1);
    return 1;
}

static int reducer_prepare_forward(lua_State *L)
{
    if (nn_reducer_prepare_forward(check_reducer(L)->r)) return lt_fail(L, 0);
    return 0;
}

static int reducer_prepare_backward(lua_State *L)
{
    reducer_ud *u = check_reducer(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    int n = (int)luaL_len(L, 2);
    nn_tensor **outs = lua_newuserdatauv(L, sizeof *outs * (size_t)(n ? n : 1), 0);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 2, i + 1);
        outs[i] = lt_totensor(L, -1);
        lua_pop(L, 1);
    }
    u->L = L;
    nn_status st = nn_reducer_prepare_backward(u->r, outs, n);
    u->L = NULL;
    if (st) return lt_fail(L, 0);
    return 0;
}

static int reducer_buckets(lua_State *L)
{
    reducer_ud *u = luaL_checkudata(L, 1, REDUCER_MT);
    if (!u->r) return luaL_error(L, "DistributedDataParallel: the reducer was closed");
    int nb = nn_reducer_buckets(u->r, NULL, NULL);
    int *sizes = malloc(sizeof(int) * (size_t)(nb + 1)), total = 0;
    if (!sizes) return luaL_error(L, "out of memory");
    nn_reducer_buckets(u->r, sizes, NULL);
    for (int k = 0; k < nb; k++) total += sizes[k];
    int *idx = malloc(sizeof(int) * (size_t)(total + 1));
    if (!idx) { free(sizes); return luaL_error(L, "out of memory"); }
    nn_reducer_buckets(u->r, sizes, idx);
    lua_createtable(L, nb, 0);
    for (int k = 0, pos = 0; k < nb; k++) {
        lua_createtable(L, sizes[k], 0);
        for (int j = 0; j < sizes[k]; j++) {
            lua_pushinteger(L, idx[pos++]);
            lua_rawseti(L, -2, j + 1);
        }
        lua_rawseti(L, -2, k + 1);
    }
    free(sizes);
    free(idx);
    return 1;
}

/* reducer:shadow() -> the buckets' averaged flat tensors, over zero gradients (Join's joined rank) */
static int reducer_shadow(lua_State *L)
{
    reducer_ud *u = check_reducer(L);
    int nb = nn_reducer_buckets(u->r, NULL, NULL);
    nn_tensor **out = calloc((size_t)nb + 1, sizeof *out);
    if (!out) return luaL_error(L, "out of memory");
    nn_status st = nn_reducer_shadow(u->r, out);
    if (st) {
        for (int k = 0; k < nb; k++) nn_release(out[k]);
        free(out);
        return lt_fail(L, 0);
    }
    lua_createtable(L, nb, 0);
    for (int k = 0; k < nb; k++) {
        lt_push(L, out[k]);
        lua_rawseti(L, -2, k + 1);
    }
    free(out);
    return 1;
}

/* a custom comm hook's function ref called with nargs pushed by the caller, nret results kept */
static nn_status hook_call(lua_State *L, int nargs, int nret)
{
    if (lua_pcall(L, nargs, nret, 0) == LUA_OK) return NN_OK;
    nn_status st = nn_error(NN_ERR_RUNTIME, "%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "error in a DDP communication hook");
    lua_pop(L, 1);
    return st;
}

static lua_State *hook_state(reducer_ud *u)
{
    return u->L ? u->L : lt_backward_state(); /* else during backward: the thread running it */
}

static nn_status hook_run(void *ctx, int k, nn_tensor *buf, bool last)
{
    reducer_ud *u = ctx;
    lua_State *L = hook_state(u);
    if (!L) return nn_error(NN_ERR_RUNTIME, "DDP communication hook: a Lua hook needs backward started from Lua");
    lua_rawgeti(L, LUA_REGISTRYINDEX, u->run_ref);
    lua_pushinteger(L, k);
    lt_push(L, nn_retain(buf));
    lua_pushboolean(L, last);
    return hook_call(L, 3, 0);
}

static nn_status hook_result(void *ctx, int k, nn_tensor **out)
{
    reducer_ud *u = ctx;
    lua_State *L = hook_state(u);
    if (!L) return nn_error(NN_ERR_RUNTIME, "DDP communication hook: a Lua hook needs backward started from Lua");
    lua_rawgeti(L, LUA_REGISTRYINDEX, u->result_ref);
    lua_pushinteger(L, k);
    nn_status st = hook_call(L, 1, 1);
    if (st) return st;
    nn_tensor *t = lt_totensor(L, -1);
    if (t) *out = nn_retain(t);
    else st = nn_error(NN_ERR_RUNTIME, "DDP communication hook: the future of bucket %d must hold a Tensor (the reduced "
                                       "bucket.buffer()), got a %s", k, luaL_typename(L, -1));
    lua_pop(L, 1);
    return st;
}

static int reducer_set_comm_hook(lua_State *L)
{
    reducer_ud *u = check_reducer(L);
    static const char *const kinds[] = {"none", "allreduce", "fp16", "bf16", "custom", NULL};
    int kind = luaL_checkoption(L, 2, NULL, kinds);
    if (kind == NN_COMM_HOOK_NONE) return luaL_argerror(L, 2, "a hook kind expected");
    nn_comm_hook h = {hook_run, hook_result, u};
    if (kind == NN_COMM_HOOK_CUSTOM) {
        luaL_checktype(L, 3, LUA_TFUNCTION);
        luaL_checktype(L, 4, LUA_TFUNCTION);
    }
    if (nn_reducer_set_comm_hook(u->r, (nn_comm_hook_kind)kind, &h)) return lt_fail(L, 0);
    if (kind == NN_COMM_HOOK_CUSTOM) {
        lua_pushvalue(L, 3);
        u->run_ref = luaL_ref(L, LUA_REGISTRYINDEX);
        lua_pushvalue(L, 4);
        u->result_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    return 0;
}

static int reducer_gc(lua_State *L)
{
    reducer_ud *u = luaL_checkudata(L, 1, REDUCER_MT);
    nn_reducer_free(u->r);
    u->r = NULL;
    luaL_unref(L, LUA_REGISTRYINDEX, u->run_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, u->result_ref);
    u->run_ref = u->result_ref = LUA_NOREF;
    return 0;
}

static void new_metatable(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc)
{
    luaL_newmetatable(L, name);
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__close");
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
}

void lt_open_dist(lua_State *L)
{
    static const luaL_Reg work_methods[] = {{"wait", work_wait}, {"is_completed", work_is_completed}, {NULL, NULL}};
    static const luaL_Reg reducer_methods[] = {
        {"prepare_forward", reducer_prepare_forward}, {"prepare_backward", reducer_prepare_backward},
        {"buckets", reducer_buckets}, {"shadow", reducer_shadow}, {"set_comm_hook", reducer_set_comm_hook}, {NULL, NULL},
    };
    new_metatable(L, WORK_MT, work_methods, work_gc);
    new_metatable(L, REDUCER_MT, reducer_methods, reducer_gc);
    static const luaL_Reg no_methods[] = {{NULL, NULL}};
    new_metatable(L, GROUP_MT, no_methods, group_gc);
    static const luaL_Reg fns[] = {
        {"init", d_init}, {"destroy", d_destroy}, {"is_initialized", d_is_initialized}, {"rank", d_rank},
        {"size", d_size}, {"backend", d_backend}, {"available", d_available}, {"free_port", d_free_port}, {"all_reduce", d_all_reduce},
        {"broadcast", d_broadcast}, {"reduce", d_reduce}, {"all_gather", d_all_gather},
        {"all_gather_into_tensor", d_all_gather_into_tensor}, {"reduce_scatter", d_reduce_scatter},
        {"reduce_scatter_tensor", d_reduce_scatter_tensor}, {"send", d_send}, {"recv", d_recv},
        {"barrier", d_barrier}, {"broadcast_coalesced", d_broadcast_coalesced}, {"Reducer", d_reducer},
        {"new_group", d_new_group}, {"group_destroy", group_gc}, {"group_store", d_group_store}, {"init_store", d_init_store},
        {NULL, NULL},
    };
    lua_newtable(L);
    luaL_setfuncs(L, fns, 0);
    lt_dist_store_open(L);
    lua_setfield(L, -2, "_dist");
}
