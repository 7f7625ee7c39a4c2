/* torch.cuda's debugging and introspection entries over nn_gpu (engine/device.h), raw, for
 * bindings/lua/torch_cuda_debug.lua: the sync debug mode, the caching allocator's blocks and
 * raw memory, host allocator statistics, NVML's readings, the cuBLAS handle. */
#include <stdlib.h>

#include "device.h"
#include "lt.h"

static void need_gpu(lua_State *L, const char *what)
{
    if (nn_require_gpu(what)) lt_fail(L, 0);
}

/* a device index: an integer, or nil for the current device */
static int device_arg(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx)) return nn_gpu->current_device();
    int d = (int)luaL_checkinteger(L, idx);
    if (d < 0 || d >= nn_gpu->device_count()) return luaL_error(L, "Invalid device id %d", d);
    return d;
}

/* _sync_debug(mode): sets the mode (-1: none), returns the mode before */
static int sync_debug(lua_State *L)
{
    need_gpu(L, "torch.cuda.set_sync_debug_mode");
    lua_pushinteger(L, nn_gpu->sync_debug((int)luaL_checkinteger(L, 1)));
    return 1;
}

static void set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

/* _memory_blocks(): {device=, segment=, address=, stream=, size=, state=, small=, graph_pool=}
 * for every block, segment by segment; {} without a GPU */
static int memory_blocks(lua_State *L)
{
    if (!nn_gpu || nn_gpu->device_count() == 0) {
        lua_newtable(L);
        return 1;
    }
    int n = 0;
    nn_gpu_block *b = nn_gpu->memory_blocks(&n);
    if (!b) return lt_fail(L, 0);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_createtable(L, 0, 8);
        set_int(L, "device", b[i].device);
        set_int(L, "segment", (lua_Integer)b[i].segment);
        set_int(L, "address", (lua_Integer)b[i].address);
        set_int(L, "stream", (lua_Integer)b[i].stream);
        set_int(L, "size", (lua_Integer)b[i].size);
        set_int(L, "state", b[i].state);
        lua_pushboolean(L, b[i].small);
        lua_setfield(L, -2, "small");
        lua_pushboolean(L, b[i].graph_pool);
        lua_setfield(L, -2, "graph_pool");
        lua_rawseti(L, -2, i + 1);
    }
    free(b);
    return 1;
}

/* _raw_alloc(size, device, stream_or_nil): the address as an integer */
static int raw_alloc(lua_State *L)
{
    need_gpu(L, "torch.cuda.caching_allocator_alloc");
    lua_Integer n = luaL_checkinteger(L, 1);
    if (n < 0) return luaL_error(L, "caching_allocator_alloc: size must be >= 0, got %d", (int)n);
    int device = device_arg(L, 2);
    /* a torch.cuda.Stream userdata holds the stream's pointer first (bindings/cuda.c) */
    nn_gpu_stream *s = lua_isnoneornil(L, 3) ? NULL : *(nn_gpu_stream **)luaL_checkudata(L, 3, "torch.cuda.Stream");
    void *p = nn_gpu->raw_alloc(device, (size_t)n, s);
    if (!p) return lt_fail(L, 0);
    lua_pushinteger(L, (lua_Integer)(uintptr_t)p);
    return 1;
}

static int raw_free(lua_State *L)
{
    need_gpu(L, "torch.cuda.caching_allocator_delete");
    if (nn_gpu->raw_free((void *)(uintptr_t)luaL_checkinteger(L, 1))) return lt_fail(L, 0);
    return 0;
}

/* _reset_accumulated(device or nil) */
static int reset_accumulated(lua_State *L)
{
    if (nn_gpu && nn_gpu->device_count() > 0) nn_gpu->reset_accumulated(device_arg(L, 1));
    return 0;
}

/* t["name.kind"] = v for the table on top */
static void set_key(lua_State *L, const char *name, const char *kind, lua_Integer v)
{
    const char *key = lua_pushfstring(L, "%s.%s", name, kind);
    lua_pushinteger(L, v);
    lua_setfield(L, -3, key);
    lua_pop(L, 1);
}

static void set_stat(lua_State *L, const char *name, nn_gpu_stat s)
{
    const char *kinds[] = {"current", "peak", "allocated", "freed"};
    int64_t v[] = {s.current, s.peak, s.allocated, s.freed};
    for (int i = 0; i < 4; i++) set_key(L, name, kinds[i], v[i]);
}

static void set_times(lua_State *L, const char *name, double total, double max, double min, int64_t count)
{
    const char *kinds[] = {"total", "max", "min", "count", "avg"};
    double v[] = {total, max, min, (double)count, count ? total / (double)count : 0};
    for (int i = 0; i < 5; i++) set_key(L, name, kinds[i], (lua_Integer)v[i]);
}

/* host_memory_stats(): the pinned host allocator's statistics under PyTorch's keys (zeros with no GPU) */
static int host_memory_stats(lua_State *L)
{
    nn_gpu_host_stats s = {0};
    if (nn_gpu && nn_gpu->device_count() > 0) nn_gpu->host_stats(&s);
    lua_newtable(L);
    set_stat(L, "allocations", s.allocations);
    set_stat(L, "allocated_bytes", s.allocated_bytes);
    set_stat(L, "active_requests", s.active_requests);
    set_stat(L, "active_bytes", s.active_bytes);
    set_int(L, "num_host_alloc", s.num_host_alloc);
    set_int(L, "num_host_free", s.num_host_free);
    set_times(L, "host_alloc_time", s.alloc_us_total, s.alloc_us_max, s.alloc_us_min, s.num_host_alloc);
    set_times(L, "host_free_time", s.free_us_total, s.free_us_max, s.free_us_min, s.num_host_free);
    return 1;
}

/* _host_reset(peak) */
static int host_reset(lua_State *L)
{
    if (nn_gpu && nn_gpu->device_count() > 0) nn_gpu->host_reset(lua_toboolean(L, 1));
    return 0;
}

static int blas_handle(lua_State *L)
{
    need_gpu(L, "torch.cuda.current_blas_handle");
    void *h = nn_gpu->blas_handle();
    if (!h) return lt_fail(L, 0);
    lua_pushinteger(L, (lua_Integer)(uintptr_t)h);
    return 1;
}

/* _nvml(what, device, name): a reading (NN_NVML_*); for processes a list of {pid, bytes} */
static int nvml(lua_State *L)
{
    int what = (int)luaL_checkinteger(L, 1);
    need_gpu(L, luaL_checkstring(L, 3));
    int device = device_arg(L, 2);
    int64_t out[1 + 2 * 64];
    if (nn_gpu->nvml(device, what, out)) return lt_fail(L, 0);
    if (what != NN_NVML_PROCESSES) {
        lua_pushinteger(L, out[0]);
        return 1;
    }
    lua_createtable(L, (int)out[0], 0);
    for (int i = 0; i < out[0]; i++) {
        lua_createtable(L, 2, 0);
        lua_pushinteger(L, out[1 + 2 * i]);
        lua_rawseti(L, -2, 1);
        lua_pushinteger(L, out[2 + 2 * i]);
        lua_rawseti(L, -2, 2);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

void lt_open_cuda_debug(lua_State *L)
{
    int torch = lua_gettop(L);
    static const luaL_Reg fns[] = {
        {"_sync_debug", sync_debug}, {"_memory_blocks", memory_blocks}, {"_raw_alloc", raw_alloc},
        {"caching_allocator_delete", raw_free}, {"_reset_accumulated", reset_accumulated},
        {"host_memory_stats", host_memory_stats}, {"_host_reset", host_reset}, {"current_blas_handle", blas_handle},
        {"_nvml", nvml}, {NULL, NULL},
    };
    luaL_getsubtable(L, torch, "cuda");
    luaL_setfuncs(L, fns, 0);
    static const struct { const char *name; int what; } readings[] = {
        {"utilization", NN_NVML_UTILIZATION}, {"memory_usage", NN_NVML_MEMORY_UTILIZATION}, {"temperature", NN_NVML_TEMPERATURE},
        {"power_draw", NN_NVML_POWER}, {"clock_rate", NN_NVML_CLOCK}, {"device_memory_used", NN_NVML_MEMORY_USED},
        {"processes", NN_NVML_PROCESSES}};
    lua_createtable(L, 0, 7);
    for (size_t i = 0; i < sizeof readings / sizeof readings[0]; i++) set_int(L, readings[i].name, readings[i].what);
    lua_setfield(L, -2, "_nvml_readings");
    lua_settop(L, torch);
}
