/* torch.cuda: devices, memory statistics, streams and events, through nn_gpu
 * (engine/device.h). With no GPU backend or no GPU, is_available() is false and
 * everything that needs a GPU raises "CUDA is not available". */
#include <stdio.h>
#include <string.h>

#include "autograd.h"
#include "device.h"
#include "lt.h"

static const char STREAM_MT[] = "torch.cuda.Stream";
static const char EVENT_MT[] = "torch.cuda.Event";
static const char DEVICE_CTX_MT[] = "torch.cuda.device_ctx";
static const char STREAM_CTX_MT[] = "torch.cuda.stream_ctx";

static void need_gpu(lua_State *L, const char *what)
{
    if (nn_require_gpu(what)) lt_fail(L, 0);
}

static int available(void) { return nn_gpu && nn_gpu->device_count() > 0; }

static int is_available(lua_State *L)
{
    lua_pushboolean(L, available());
    return 1;
}

static int device_count(lua_State *L)
{
    lua_pushinteger(L, nn_gpu ? nn_gpu->device_count() : 0);
    return 1;
}

/* A device index from a number, a "cuda:N" string or a torch.device at idx; none: current. */
static int device_index(lua_State *L, int idx)
{
    need_gpu(L, "torch.cuda");
    if (lua_isnoneornil(L, idx)) return nn_gpu->current_device();
    if (lua_type(L, idx) == LUA_TNUMBER) return (int)luaL_checkinteger(L, idx);
    nn_device d = lt_check_device(L, idx);
    if (d.type != NN_CUDA) luaL_argerror(L, idx, "expected a cuda device");
    return d.index < 0 ? nn_gpu->current_device() : d.index;
}

static int current_device(lua_State *L)
{
    need_gpu(L, "current_device");
    lua_pushinteger(L, nn_gpu->current_device());
    return 1;
}

static int set_device(lua_State *L)
{
    int i = device_index(L, 1);
    if (nn_gpu->set_device(i)) return lt_fail(L, 1);
    return 0;
}

static int synchronize(lua_State *L)
{
    int i = device_index(L, 1);
    if (nn_gpu->synchronize(i)) return lt_fail(L, 0);
    return 0;
}

static int props(lua_State *L, nn_gpu_properties *p)
{
    int i = device_index(L, 1);
    if (nn_gpu->properties(i, p)) return lt_fail(L, 1);
    return i;
}

static int get_device_name(lua_State *L)
{
    nn_gpu_properties p;
    props(L, &p);
    lua_pushstring(L, p.name);
    return 1;
}

static int get_device_capability(lua_State *L)
{
    nn_gpu_properties p;
    props(L, &p);
    lua_pushinteger(L, p.major);
    lua_pushinteger(L, p.minor);
    return 2;
}

/* torch.cuda.mem_get_info(device): free and total bytes on the device, as the driver counts them */
static int mem_get_info(lua_State *L)
{
    nn_gpu_properties p;
    props(L, &p);
    lua_pushinteger(L, (lua_Integer)p.free_memory);
    lua_pushinteger(L, (lua_Integer)p.total_memory);
    return 2;
}

#ifndef NNREPL_CUDA_ARCHS /* CMakeLists.txt sets it from CMAKE_CUDA_ARCHITECTURES, comma-separated: "80,90-real" */
#define NNREPL_CUDA_ARCHS ""
#endif

/* torch.cuda._versions(): {runtime=, driver=, cudnn=, nccl=, archs=} as the libraries number them
 * (archs: the CUDA architectures the kernels were built for), or nil in a build without the CUDA backend */
static int versions(lua_State *L)
{
    if (!nn_gpu || !nn_gpu->versions) return 0;
    nn_gpu_versions v;
    nn_gpu->versions(&v);
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, v.runtime);
    lua_setfield(L, -2, "runtime");
    lua_pushinteger(L, v.driver);
    lua_setfield(L, -2, "driver");
    lua_pushinteger(L, v.cudnn);
    lua_setfield(L, -2, "cudnn");
    lua_pushinteger(L, v.nccl);
    lua_setfield(L, -2, "nccl");
    lua_pushstring(L, NNREPL_CUDA_ARCHS);
    lua_setfield(L, -2, "archs");
    return 1;
}

/* torch.cuda.is_current_stream_capturing(): a CUDA graph captures now (one at a time, on the
 * stream that is current meanwhile); false without a GPU, as PyTorch never starts a context for it */
static int is_current_stream_capturing(lua_State *L)
{
    lua_pushboolean(L, nn_gpu_capturing());
    return 1;
}

/* torch.cuda.can_device_access_peer(device, peer_device) */
static int can_device_access_peer(lua_State *L)
{
    int dev = device_index(L, 1), peer = device_index(L, 2), n = nn_gpu->device_count();
    if (dev < 0 || dev >= n) return luaL_error(L, "Invalid device id");
    if (peer < 0 || peer >= n) return luaL_error(L, "Invalid peer device id");
    lua_pushboolean(L, dev != peer && nn_gpu->can_access_peer && nn_gpu->can_access_peer(dev, peer));
    return 1;
}

/* ---- marks for external profilers (torch.cuda.profiler, torch.cuda.nvtx in torch_cuda_marks.lua) ---- */

/* NVTX needs no GPU, only a build with the backend, as PyTorch's CPU-only build has none */
static const nn_gpu_api *marks(lua_State *L)
{
    if (!nn_gpu || !nn_gpu->nvtx_push) luaL_error(L, "NVTX functions not installed. Are you sure you have a CUDA build?");
    return nn_gpu;
}

static int profiler_collect(lua_State *L)
{
    need_gpu(L, lua_toboolean(L, 1) ? "torch.cuda.profiler.start" : "torch.cuda.profiler.stop");
    if (nn_gpu->profiler_collect(lua_toboolean(L, 1))) return lt_fail(L, 0);
    return 0;
}

static int nvtx_push(lua_State *L)
{
    lua_pushinteger(L, marks(L)->nvtx_push(luaL_checkstring(L, 1)));
    return 1;
}

static int nvtx_pop(lua_State *L)
{
    lua_pushinteger(L, marks(L)->nvtx_pop());
    return 1;
}

static int nvtx_mark(lua_State *L)
{
    marks(L)->nvtx_mark(luaL_checkstring(L, 1));
    return 0;
}

static int nvtx_range_start(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)marks(L)->nvtx_range_start(luaL_checkstring(L, 1)));
    return 1;
}

static int nvtx_range_end(lua_State *L)
{
    marks(L)->nvtx_range_end((uint64_t)luaL_checkinteger(L, 1));
    return 0;
}

/* torch.cuda._is_built(): whether this build has the CUDA backend (a GPU may still be absent) */
static int is_built(lua_State *L)
{
    lua_pushboolean(L, nn_gpu != NULL);
    return 1;
}

static int props_tostring(lua_State *L)
{
    lua_getfield(L, 1, "name");
    lua_getfield(L, 1, "major");
    lua_getfield(L, 1, "minor");
    lua_getfield(L, 1, "total_memory");
    lua_getfield(L, 1, "multi_processor_count");
    lua_pushfstring(L, "_CudaDeviceProperties(name='%s', major=%d, minor=%d, total_memory=%dMB, multi_processor_count=%d)",
                    lua_tostring(L, 2), (int)lua_tointeger(L, 3), (int)lua_tointeger(L, 4),
                    (int)(lua_tointeger(L, 5) / (1024 * 1024)), (int)lua_tointeger(L, 6));
    return 1;
}

static int get_device_properties(lua_State *L)
{
    nn_gpu_properties p;
    props(L, &p);
    lua_createtable(L, 0, 5);
    lua_pushstring(L, p.name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, p.major);
    lua_setfield(L, -2, "major");
    lua_pushinteger(L, p.minor);
    lua_setfield(L, -2, "minor");
    lua_pushinteger(L, (lua_Integer)p.total_memory);
    lua_setfield(L, -2, "total_memory");
    lua_pushinteger(L, p.multi_processor_count);
    lua_setfield(L, -2, "multi_processor_count");
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, props_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_setmetatable(L, -2);
    return 1;
}

static nn_gpu_memory_stats stats(lua_State *L)
{
    nn_gpu_memory_stats s = {0};
    if (!available()) return s; /* PyTorch reports 0 bytes without a GPU too */
    if (nn_gpu->memory_stats(device_index(L, 1), &s)) lt_fail(L, 1);
    return s;
}

static int memory_allocated(lua_State *L) { lua_pushinteger(L, (lua_Integer)stats(L).allocated); return 1; }
static int max_memory_allocated(lua_State *L) { lua_pushinteger(L, (lua_Integer)stats(L).max_allocated); return 1; }
static int memory_reserved(lua_State *L) { lua_pushinteger(L, (lua_Integer)stats(L).reserved); return 1; }
static int max_memory_reserved(lua_State *L) { lua_pushinteger(L, (lua_Integer)stats(L).max_reserved); return 1; }

/* PyTorch's torch.cuda.memory_stats: the counters this allocator keeps, under PyTorch's keys */
static int memory_stats(lua_State *L)
{
    nn_gpu_memory_stats s = stats(L);
    const struct { const char *key; size_t v; } kv[] = {
        {"allocated_bytes.all.current", s.allocated}, {"allocated_bytes.all.peak", s.max_allocated},
        {"reserved_bytes.all.current", s.reserved},   {"reserved_bytes.all.peak", s.max_reserved},
        {"num_alloc_retries", s.num_alloc_retries},   {"num_ooms", s.num_ooms},
        {"num_device_alloc", s.num_device_alloc},     {"num_device_free", s.num_device_free},
    };
    lua_createtable(L, 0, (int)(sizeof kv / sizeof kv[0]));
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        lua_pushinteger(L, (lua_Integer)kv[i].v);
        lua_setfield(L, -2, kv[i].key);
    }
    return 1;
}

static int reset_peak_memory_stats(lua_State *L)
{
    if (available()) nn_gpu->reset_peak_memory_stats(device_index(L, 1));
    return 0;
}

static int empty_cache(lua_State *L)
{
    if (available() && nn_gpu->empty_cache()) return lt_fail(L, 0);
    return 0;
}

static int memory_summary(lua_State *L)
{
    nn_gpu_memory_stats s = stats(L);
    char buf[640]; /* snprintf: lua_pushfstring has no field widths */
    snprintf(buf, sizeof buf,
             "|===========================================================|\n"
             "| nnrepl CUDA memory summary                                |\n"
             "|-----------------------------------------------------------|\n"
             "| allocated: %10d KiB  (peak %10d KiB)           |\n"
             "| reserved:  %10d KiB  (peak %10d KiB)           |\n"
             "| alloc retries: %6d   OOMs: %6d                       |\n"
             "|===========================================================|\n",
             (int)(s.allocated >> 10), (int)(s.max_allocated >> 10), (int)(s.reserved >> 10),
             (int)(s.max_reserved >> 10), (int)s.num_alloc_retries, (int)s.num_ooms);
    lua_pushstring(L, buf);
    return 1;
}

/* ---- torch.cuda.device(i) as a to-be-closed value: switch, and switch back on close ---- */
typedef struct { int prev; bool closed; } device_ctx;

static int device_ctx_close(lua_State *L)
{
    device_ctx *c = luaL_checkudata(L, 1, DEVICE_CTX_MT);
    if (!c->closed && nn_gpu) nn_gpu->set_device(c->prev);
    c->closed = true;
    return 0;
}

static int device_ctx_new(lua_State *L)
{
    int i = device_index(L, 1);
    device_ctx *c = lua_newuserdatauv(L, sizeof *c, 0);
    c->prev = nn_gpu->current_device();
    c->closed = false;
    luaL_setmetatable(L, DEVICE_CTX_MT);
    if (nn_gpu->set_device(i)) return lt_fail(L, 1);
    return 1;
}

/* ---- streams ---- */
typedef struct { nn_gpu_stream *s; } stream_ud;

static nn_gpu_stream *check_stream(lua_State *L, int idx) { return ((stream_ud *)luaL_checkudata(L, idx, STREAM_MT))->s; }

static void push_stream(lua_State *L, nn_gpu_stream *s)
{
    if (!s) lt_fail(L, 0);
    stream_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->s = s;
    luaL_setmetatable(L, STREAM_MT);
}

static const char *const stream_keys[] = {"device", "priority", NULL};

static int stream_new(lua_State *L)
{
    need_gpu(L, "Stream");
    int device = -1, priority = 0;
    if (lt_is_opts(L, 1)) {
        lt_check_opts(L, 1, stream_keys);
        if (lt_opt(L, 1, "device") != LUA_TNIL) device = device_index(L, lua_gettop(L));
        priority = (int)lt_opt_number(L, 1, "priority", 0);
    } else if (!lua_isnoneornil(L, 1)) device = device_index(L, 1);
    push_stream(L, nn_gpu->stream_new(device, priority));
    return 1;
}

/* _external_stream(handle, device): a cudaStream_t made elsewhere (an integer), not destroyed here */
static int external_stream(lua_State *L)
{
    need_gpu(L, "ExternalStream");
    lua_Integer h = luaL_checkinteger(L, 1);
    push_stream(L, nn_gpu->stream_external((uintptr_t)h, device_index(L, 2)));
    return 1;
}

static int stream_gc(lua_State *L)
{
    stream_ud *u = luaL_checkudata(L, 1, STREAM_MT);
    if (u->s && nn_gpu) nn_gpu->stream_free(u->s);
    u->s = NULL;
    return 0;
}

static int stream_synchronize(lua_State *L)
{
    if (nn_gpu->stream_synchronize(check_stream(L, 1))) return lt_fail(L, 0);
    return 0;
}

static int stream_query(lua_State *L)
{
    lua_pushboolean(L, nn_gpu->stream_query(check_stream(L, 1)));
    return 1;
}

typedef struct { nn_gpu_event *e; } event_ud;

static nn_gpu_event *check_event(lua_State *L, int idx) { return ((event_ud *)luaL_checkudata(L, idx, EVENT_MT))->e; }

static int stream_wait_event(lua_State *L)
{
    if (nn_gpu->stream_wait_event(check_stream(L, 1), check_event(L, 2))) return lt_fail(L, 0);
    return 0;
}

static int current_stream(lua_State *L)
{
    need_gpu(L, "current_stream");
    push_stream(L, nn_gpu->current_stream(lua_isnoneornil(L, 1) ? -1 : device_index(L, 1)));
    return 1;
}

/* torch.cuda.set_stream(s): s current on its device from now on */
static int set_stream(lua_State *L)
{
    need_gpu(L, "set_stream");
    if (nn_gpu->set_stream(check_stream(L, 1))) return lt_fail(L, 1);
    return 0;
}

/* torch.cuda.default_stream(device): the device's default stream (made current there for a
 * moment to get its handle) */
static int default_stream(lua_State *L)
{
    need_gpu(L, "default_stream");
    int dev = device_index(L, 1), was = nn_gpu->current_device();
    nn_gpu_stream *prev = nn_gpu->current_stream(dev), *d = NULL;
    if (!prev) return lt_fail(L, 1);
    nn_status st = nn_gpu->set_device(dev);
    if (!st) st = nn_gpu->set_stream(NULL);
    if (!st && !(d = nn_gpu->current_stream(dev))) st = nn_last_status();
    nn_gpu->set_stream(prev);
    nn_gpu->stream_free(prev);
    nn_gpu->set_device(was);
    if (st) return lt_fail(L, 1);
    push_stream(L, d);
    return 1;
}

/* torch.cuda.stream(s) as a to-be-closed value: ops on s's device run on s until it
 * closes, then on the stream that was current there before (contexts nest, also
 * across devices) */
typedef struct { bool closed; nn_gpu_stream *prev; } stream_ctx;

static int stream_ctx_close(lua_State *L)
{
    stream_ctx *c = luaL_checkudata(L, 1, STREAM_CTX_MT);
    if (!c->closed && nn_gpu) {
        nn_gpu->set_stream(c->prev);
        nn_gpu->stream_free(c->prev);
    }
    c->closed = true;
    return 0;
}

static int stream_ctx_new(lua_State *L)
{
    need_gpu(L, "stream");
    nn_gpu_stream *s = check_stream(L, 1);
    stream_ctx *c = lua_newuserdatauv(L, sizeof *c, 1);
    c->closed = true; /* until it holds the previous stream */
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1); /* keep the stream alive while it is current */
    luaL_setmetatable(L, STREAM_CTX_MT);
    if (!(c->prev = nn_gpu->current_stream(nn_gpu->stream_device(s)))) return lt_fail(L, 1);
    c->closed = false;
    if (nn_gpu->set_stream(s)) return lt_fail(L, 1);
    return 1;
}

/* ---- events ---- */
static const char *const event_keys[] = {"enable_timing", "blocking", "interprocess", NULL};

static int event_new(lua_State *L)
{
    need_gpu(L, "Event");
    lt_check_opts(L, 1, event_keys);
    nn_gpu_event *e = nn_gpu->event_new(lt_opt_bool(L, 1, "enable_timing", 0));
    if (!e) return lt_fail(L, 0);
    event_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->e = e;
    luaL_setmetatable(L, EVENT_MT);
    return 1;
}

static int event_gc(lua_State *L)
{
    event_ud *u = luaL_checkudata(L, 1, EVENT_MT);
    if (u->e && nn_gpu) nn_gpu->event_free(u->e);
    u->e = NULL;
    return 0;
}

static int event_record(lua_State *L)
{
    nn_gpu_event *e = check_event(L, 1);
    if (nn_gpu->event_record(e, lua_isnoneornil(L, 2) ? NULL : check_stream(L, 2))) return lt_fail(L, 0);
    return 0;
}

static int event_synchronize(lua_State *L)
{
    if (nn_gpu->event_synchronize(check_event(L, 1))) return lt_fail(L, 0);
    return 0;
}

static int event_query(lua_State *L)
{
    lua_pushboolean(L, nn_gpu->event_query(check_event(L, 1)));
    return 1;
}

static int event_elapsed_time(lua_State *L)
{
    float ms = 0;
    if (nn_gpu->event_elapsed_ms(check_event(L, 1), check_event(L, 2), &ms)) return lt_fail(L, 0);
    lua_pushnumber(L, ms);
    return 1;
}

static int manual_seed(lua_State *L)
{
    lua_Integer seed = luaL_checkinteger(L, 1);
    if (nn_gpu) nn_gpu->manual_seed((uint64_t)seed);
    return 0;
}

/* ---- tensor methods ---- */
static int t_pin_memory(lua_State *L)
{
    lt_push(L, nn_pin_memory(lt_check(L, 1)));
    return 1;
}

static int t_is_pinned(lua_State *L)
{
    lua_pushboolean(L, lt_check(L, 1)->storage->pinned);
    return 1;
}

static int t_record_stream(lua_State *L)
{
    need_gpu(L, "record_stream");
    if (nn_gpu->record_stream(lt_check(L, 1), check_stream(L, 2))) return lt_fail(L, 1);
    return 0;
}

/* torch.cuda._send_grad(p, s, sp, dst, sum, parts): one step of DataParallel's gradient reduction
 * (bindings/lua/nn_parallel.lua), in C so that p.grad never becomes a Tensor userdata and the
 * stream barriers cost one call. Takes p.grad off p; on
 * stream s, after the work queued on s's device's current stream, total = p.grad plus the parts
 * (tensors on that device; summed in sum when there are any), then dst (on sp's device, sp
 * current there) = total. p.grad's memory is kept for s's reads (record_stream). Returns whether
 * anything was sent (false: no gradient and no parts). */
static int send_grad(lua_State *L)
{
    need_gpu(L, "_send_grad");
    nn_tensor *p = lt_check(L, 1), *dst = lt_check(L, 4);
    nn_gpu_stream *s = check_stream(L, 2), *sp = check_stream(L, 3);
    int n = 0;
    nn_tensor **parts = lt_tensor_list(L, 6, &n, LT_TENSORS);
    nn_tensor *sum = n ? lt_check(L, 5) : NULL, *own = p->grad;
    p->grad = NULL;
    if (!own && !n) {
        lua_pushboolean(L, 0);
        return 1;
    }
    nn_status st = NN_OK;
    nn_gpu_stream *prev = nn_gpu->current_stream(nn_gpu->stream_device(s)), *prev_p = NULL;
    if (own) { /* own was computed on the current stream; an event belongs to the device current when it is made */
        int was = nn_gpu->current_device();
        st = nn_gpu->set_device(nn_gpu->stream_device(s));
        nn_gpu_event *e = st ? NULL : nn_gpu->event_new(false);
        if (!st) st = !e ? nn_last_status() : nn_gpu->event_record(e, prev) ? nn_last_status() : nn_gpu->stream_wait_event(s, e);
        if (e) nn_gpu->event_free(e);
        if (was >= 0) nn_gpu->set_device(was);
    }
    bool grad_mode = nn_grad_enabled();
    nn_set_grad_enabled(false);
    if (!st) st = nn_gpu->set_stream(s);
    nn_tensor *total = own;
    if (!st && n) {
        total = sum;
        st = nn_copy_(sum, own ? own : parts[0]);
        for (int j = own ? 0 : 1; j < n && !st; j++) st = nn_add_alpha_(sum, parts[j], 1);
    }
    if (!st && !(prev_p = nn_gpu->current_stream(nn_gpu->stream_device(sp)))) st = nn_last_status();
    if (!st && !(st = nn_gpu->set_stream(sp))) st = nn_copy_(dst, total);
    if (prev_p) {
        nn_gpu->set_stream(prev_p);
        nn_gpu->stream_free(prev_p);
    }
    if (own && !st) st = nn_gpu->record_stream(own, s);
    nn_release(own);
    if (prev) {
        nn_gpu->set_stream(prev);
        nn_gpu->stream_free(prev);
    }
    nn_set_grad_enabled(grad_mode);
    if (st) return lt_fail(L, 1);
    lua_pushboolean(L, 1);
    return 1;
}

static void metatable(lua_State *L, const char *name, lua_CFunction gc, const luaL_Reg *methods)
{
    luaL_newmetatable(L, name);
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
    if (methods) {
        lua_newtable(L);
        luaL_setfuncs(L, methods, 0);
        lua_setfield(L, -2, "__index");
    }
    lua_pop(L, 1);
}

void lt_open_cuda(lua_State *L)
{
    int torch = lua_gettop(L);
    static const luaL_Reg stream_methods[] = {
        {"synchronize", stream_synchronize}, {"query", stream_query}, {"wait_event", stream_wait_event}, {NULL, NULL}};
    static const luaL_Reg event_methods[] = {{"record", event_record}, {"synchronize", event_synchronize},
                                             {"query", event_query}, {"elapsed_time", event_elapsed_time}, {NULL, NULL}};
    metatable(L, STREAM_MT, stream_gc, stream_methods);
    metatable(L, EVENT_MT, event_gc, event_methods);
    metatable(L, DEVICE_CTX_MT, device_ctx_close, NULL);
    metatable(L, STREAM_CTX_MT, stream_ctx_close, NULL);
    luaL_getmetatable(L, DEVICE_CTX_MT);
    lua_pushcfunction(L, device_ctx_close);
    lua_setfield(L, -2, "__close");
    luaL_getmetatable(L, STREAM_CTX_MT);
    lua_pushcfunction(L, stream_ctx_close);
    lua_setfield(L, -2, "__close");
    lua_settop(L, torch);

    static const luaL_Reg fns[] = {
        {"is_available", is_available}, {"device_count", device_count}, {"current_device", current_device},
        {"set_device", set_device}, {"synchronize", synchronize}, {"get_device_name", get_device_name},
        {"get_device_capability", get_device_capability}, {"get_device_properties", get_device_properties},
        {"memory_allocated", memory_allocated}, {"max_memory_allocated", max_memory_allocated},
        {"memory_reserved", memory_reserved}, {"max_memory_reserved", max_memory_reserved},
        {"reset_peak_memory_stats", reset_peak_memory_stats}, {"empty_cache", empty_cache},
        {"memory_summary", memory_summary}, {"memory_stats", memory_stats}, {"device", device_ctx_new}, {"Stream", stream_new},
        {"current_stream", current_stream}, {"stream", stream_ctx_new}, {"Event", event_new},
        {"manual_seed", manual_seed}, {"manual_seed_all", manual_seed}, {"_send_grad", send_grad},
        {"mem_get_info", mem_get_info}, {"_is_built", is_built}, {"_versions", versions}, {"set_stream", set_stream},
        {"default_stream", default_stream}, {"_profiler_collect", profiler_collect}, {"_nvtx_push", nvtx_push},
        {"_nvtx_pop", nvtx_pop}, {"_nvtx_mark", nvtx_mark}, {"_nvtx_range_start", nvtx_range_start},
        {"_nvtx_range_end", nvtx_range_end}, {"is_current_stream_capturing", is_current_stream_capturing},
        {"can_device_access_peer", can_device_access_peer}, {"_external_stream", external_stream}, {NULL, NULL},
    };
    luaL_getsubtable(L, torch, "cuda");
    luaL_setfuncs(L, fns, 0);
    lua_settop(L, torch);
    static const luaL_Reg methods[] = {
        {"pin_memory", t_pin_memory}, {"is_pinned", t_is_pinned}, {"record_stream", t_record_stream}, {NULL, NULL}};
    lua_getfield(L, torch, "Tensor");
    luaL_setfuncs(L, methods, 0);
    lua_settop(L, torch);
}
