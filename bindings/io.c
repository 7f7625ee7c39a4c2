/* torch._io: the C half of torch.save / torch.load (bindings/lua/torch_io.lua)
 * and of torch.utils.tensorboard (bindings/lua/torch_tensorboard.lua).
 *
 *   _io.save(path, names, tensors, meta_keys, meta_values)  a safetensors file, atomically
 *   _io.load(path) -> names, tensors, meta                  every tensor on the CPU, in the
 *                                                           header's order; meta {key = value}
 *   _io.makedirs(path)                                      mkdir -p
 *   _io.hostname(), _io.getpid()
 *   _io.event_writer(path, wall_time) -> w                  an event file (engine/tfevents.h):
 *     w:scalar(tag, value, step, wall_time)
 *     w:histogram(tag, values, bins, max_bins, step, wall_time)  values: tensor; bins: a list of
 *                                                           edges or a bin count
 *     w:image(tag, png, h, w, c, step, wall_time)           png: uint8 tensor or string
 *     w:text(tag, text, step, wall_time)
 *     w:summary(bytes, step, wall_time)                     an already serialized Summary
 *     w:record(bytes)                                       an already serialized Event (add_graph)
 *     w:close(), w:path()                                   also on __gc and __close */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lt.h"
#include "safetensors.h"
#include "tfevents.h"

#define EVENT_WRITER_MT "torch._io.EventWriter"

/* ---- checkpoints ---- */

static int l_save(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 2), nmeta = 0;
    luaL_argcheck(L, luaL_len(L, 3) == n, 3, "as many tensors as names expected");
    if (!lua_isnoneornil(L, 4)) {
        luaL_checktype(L, 4, LUA_TTABLE);
        luaL_checktype(L, 5, LUA_TTABLE);
        nmeta = luaL_len(L, 4);
        luaL_argcheck(L, luaL_len(L, 5) == nmeta, 5, "as many metadata values as keys expected");
    }
    luaL_argcheck(L, n <= 1000000 && nmeta <= 1000000, 2, "too many entries");
    /* lists in userdata blocks, so an error on the way frees them */
    const char **names = lua_newuserdatauv(L, (size_t)(n + 2 * nmeta + 1) * sizeof(char *), 0);
    nn_tensor **tensors = lua_newuserdatauv(L, (size_t)(n + 1) * sizeof(nn_tensor *), 0);
    const char **keys = names + n, **values = names + n + nmeta;
    for (lua_Integer i = 0; i < n; i++) {
        lua_rawgeti(L, 2, i + 1);
        if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "save: tensor name %d is not a string", (int)(i + 1));
        names[i] = lua_tostring(L, -1); /* the list keeps the string alive */
        lua_pop(L, 1);
        lua_rawgeti(L, 3, i + 1);
        tensors[i] = lt_totensor(L, -1);
        if (!tensors[i]) luaL_error(L, "save: entry '%s' is not a tensor", names[i]);
        lua_pop(L, 1);
    }
    for (lua_Integer i = 0; i < nmeta; i++) {
        lua_rawgeti(L, 4, i + 1);
        lua_rawgeti(L, 5, i + 1);
        if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "save: metadata entries must be strings");
        keys[i] = lua_tostring(L, -2);
        values[i] = lua_tostring(L, -1);
        lua_pop(L, 2);
    }
    if (nn_safetensors_save(path, (int)n, names, tensors, (int)nmeta, keys, values)) return lt_fail(L, 0);
    return 0;
}

typedef struct { nn_safetensors *f; } st_handle;

static int st_handle_gc(lua_State *L)
{
    st_handle *h = lua_touserdata(L, 1);
    nn_safetensors_close(h->f);
    h->f = NULL;
    return 0;
}

static int l_load(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    st_handle *h = lua_newuserdatauv(L, sizeof *h, 0); /* closes the file if an error unwinds */
    h->f = NULL;
    lua_newtable(L);
    lua_pushcfunction(L, st_handle_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    int hidx = lua_gettop(L);
    h->f = nn_safetensors_open(path);
    if (!h->f) return lt_fail(L, 0);
    int n = nn_safetensors_count(h->f);
    lua_createtable(L, n, 0);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushstring(L, nn_safetensors_name(h->f, i));
        lua_rawseti(L, -3, i + 1);
        lt_push(L, nn_safetensors_load(h->f, i));
        lua_rawseti(L, -2, i + 1);
    }
    lua_newtable(L);
    for (int i = 0; i < nn_safetensors_meta_count(h->f); i++) {
        size_t len;
        const char *v = nn_safetensors_meta_value(h->f, i, &len);
        lua_pushlstring(L, v, len);
        lua_setfield(L, -2, nn_safetensors_meta_key(h->f, i));
    }
    nn_safetensors_close(h->f);
    h->f = NULL;
    lua_remove(L, hidx);
    return 3;
}

/* ---- small system helpers ---- */

static int l_makedirs(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    size_t n = strlen(path);
    char *buf = lua_newuserdatauv(L, n + 1, 0);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char c = buf[i];
        buf[i] = 0;
        struct stat sb;
        if (mkdir(buf, 0777) < 0 && errno != EEXIST)
            return luaL_error(L, "cannot create directory '%s': %s", buf, strerror(errno));
        if (stat(buf, &sb) < 0 || !S_ISDIR(sb.st_mode))
            return luaL_error(L, "cannot create directory '%s': %s", buf, "Not a directory");
        buf[i] = c;
    }
    return 0;
}

static int l_hostname(lua_State *L)
{
    char name[256];
    if (gethostname(name, sizeof name) < 0) strcpy(name, "localhost");
    name[sizeof name - 1] = 0;
    lua_pushstring(L, name);
    return 1;
}

static int l_getpid(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)getpid());
    return 1;
}

/* ---- event files ---- */

typedef struct { nn_tb_writer *w; } ew_handle;

static nn_tb_writer *check_writer(lua_State *L)
{
    ew_handle *h = luaL_checkudata(L, 1, EVENT_WRITER_MT);
    if (!h->w) luaL_error(L, "SummaryWriter: the event file is closed");
    return h->w;
}

static int l_event_writer(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    double wall = luaL_checknumber(L, 2);
    ew_handle *h = lua_newuserdatauv(L, sizeof *h, 0);
    h->w = NULL;
    luaL_setmetatable(L, EVENT_WRITER_MT);
    h->w = nn_tb_open(path, wall);
    if (!h->w) return lt_fail(L, 0);
    return 1;
}

static int ew_close(lua_State *L)
{
    ew_handle *h = luaL_checkudata(L, 1, EVENT_WRITER_MT);
    nn_tb_writer *w = h->w;
    h->w = NULL;
    if (nn_tb_close(w)) return lt_fail(L, 0);
    return 0;
}

static int ew_gc(lua_State *L)
{
    ew_handle *h = luaL_checkudata(L, 1, EVENT_WRITER_MT);
    nn_tb_close(h->w);
    h->w = NULL;
    return 0;
}

static int ew_path(lua_State *L)
{
    lua_pushstring(L, nn_tb_path(check_writer(L)));
    return 1;
}

static int64_t opt_step(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx)) return 0;
    if (lua_isinteger(L, idx)) return lua_tointeger(L, idx);
    double v = luaL_checknumber(L, idx);
    return (int64_t)v; /* int(global_step), as PyTorch does */
}

static int ew_scalar(lua_State *L)
{
    nn_tb_writer *w = check_writer(L);
    const char *tag = luaL_checkstring(L, 2);
    double v = luaL_checknumber(L, 3);
    if (nn_tb_scalar(w, tag, v, opt_step(L, 4), luaL_checknumber(L, 5))) return lt_fail(L, 0);
    return 0;
}

/* t as a contiguous float64 CPU tensor */
static nn_tensor *as_host_f64(nn_tensor *t)
{
    nn_tensor *a = nn_to_device(t, NN_DEVICE_CPU);
    if (!a) return NULL;
    nn_tensor *b = nn_to_dtype(a, NN_F64);
    nn_release(a);
    if (!b) return NULL;
    nn_tensor *c = nn_contiguous(b);
    nn_release(b);
    return c;
}

static int ew_histogram(lua_State *L)
{
    nn_tb_writer *w = check_writer(L);
    const char *tag = luaL_checkstring(L, 2);
    nn_tensor *values = as_host_f64(lt_check(L, 3));
    if (!values) return lt_fail(L, 3);
    lt_push(L, values); /* owned by Lua from here */
    int nedges;
    double *edges = NULL;
    if (lua_istable(L, 4)) {
        lua_Integer n = luaL_len(L, 4);
        luaL_argcheck(L, n >= 2 && n <= 100000000, 4, "at least 2 bin edges expected");
        edges = lua_newuserdatauv(L, (size_t)n * sizeof *edges, 0);
        for (lua_Integer i = 0; i < n; i++) {
            lua_rawgeti(L, 4, i + 1);
            if (!lua_isnumber(L, -1)) luaL_argerror(L, 4, "bin edges must be numbers");
            edges[i] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
        nedges = (int)n;
    } else {
        lua_Integer n = luaL_checkinteger(L, 4);
        luaL_argcheck(L, n >= 1 && n <= 100000000, 4, "bins must be a positive integer");
        nedges = (int)n;
    }
    int max_bins = (int)luaL_optinteger(L, 5, 0);
    nn_tb_histo h;
    if (nn_tb_make_histogram(nn_data(values), nn_numel(values), edges, nedges, max_bins, &h)) return lt_fail(L, 3);
    nn_status st = nn_tb_histogram(w, tag, &h, opt_step(L, 6), luaL_checknumber(L, 7));
    nn_tb_histo_free(&h);
    if (st) return lt_fail(L, 0);
    return 0;
}

static int ew_image(lua_State *L)
{
    nn_tb_writer *w = check_writer(L);
    const char *tag = luaL_checkstring(L, 2);
    const void *png;
    size_t len;
    if (lua_type(L, 3) == LUA_TSTRING) {
        png = lua_tolstring(L, 3, &len);
    } else {
        nn_tensor *t = lt_check(L, 3);
        luaL_argcheck(L, t->dtype == NN_U8 && nn_is_contiguous(t) && t->storage->device.type == NN_CPU, 3,
                      "contiguous uint8 CPU tensor of PNG bytes expected");
        png = nn_data(t);
        len = (size_t)nn_numel(t);
    }
    lua_Integer h = luaL_checkinteger(L, 4), wd = luaL_checkinteger(L, 5), c = luaL_checkinteger(L, 6);
    if (nn_tb_image(w, tag, h, wd, (int)c, png, len, opt_step(L, 7), luaL_checknumber(L, 8))) return lt_fail(L, 0);
    return 0;
}

static int ew_text(lua_State *L)
{
    nn_tb_writer *w = check_writer(L);
    const char *tag = luaL_checkstring(L, 2);
    size_t len;
    const char *text = luaL_checklstring(L, 3, &len);
    if (nn_tb_text(w, tag, text, len, opt_step(L, 4), luaL_checknumber(L, 5))) return lt_fail(L, 0);
    return 0;
}

static int ew_summary(lua_State *L)
{
    nn_tb_writer *w = check_writer(L);
    size_t len;
    const char *sum = luaL_checklstring(L, 2, &len);
    if (nn_tb_summary(w, sum, len, opt_step(L, 3), luaL_checknumber(L, 4))) return lt_fail(L, 0);
    return 0;
}

static int ew_record(lua_State *L)
{
    nn_tb_writer *w = check_writer(L);
    size_t len;
    const char *ev = luaL_checklstring(L, 2, &len);
    if (nn_tb_write_record(w, ev, len)) return lt_fail(L, 0);
    return 0;
}

void lt_open_io(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"scalar", ew_scalar}, {"histogram", ew_histogram}, {"image", ew_image}, {"text", ew_text}, {"summary", ew_summary},
        {"record", ew_record}, {"close", ew_close}, {"path", ew_path}, {NULL, NULL},
    };
    luaL_newmetatable(L, EVENT_WRITER_MT);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, ew_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, ew_gc);
    lua_setfield(L, -2, "__close");
    lua_pop(L, 1);

    static const luaL_Reg fns[] = {
        {"save", l_save}, {"load", l_load}, {"makedirs", l_makedirs}, {"hostname", l_hostname},
        {"getpid", l_getpid}, {"event_writer", l_event_writer}, {NULL, NULL},
    };
    luaL_newlib(L, fns);
    lua_setfield(L, -2, "_io");
}
