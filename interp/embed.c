/* The embedding API (include/nnrepl.h) over the bindings: an nnrepl_State is a Lua
 * state opened with nnrepl_openlibs plus the last error message and the interrupt
 * flags.
 *
 * Nothing here may raise a Lua error into the host: whatever can raise (allocation,
 * metamethods, the library's openers) runs under lua_pcall.
 *
 * Interrupts: nnrepl_interrupt, from any thread, sets `pending` and a count hook on
 * the main thread (as Lua's lua.c does from its SIGINT handler; lua_sethook only
 * stores fields). The hook raises "interrupted" at every Lua instruction while
 * `pending` is set, so a pcall in the script cannot swallow it, and removes itself
 * when it finds `pending` clear (a hook set just as a call ended). `depth` counts the
 * API calls running (a registered C function may call back in); the outermost one
 * clears `pending` when it starts and ends. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "device.h"
#include "lt.h"
#include "nnrepl.h"
#include "nnrepl_lib.h"

_Static_assert(LUA_EXTRASPACE >= sizeof(void *), "the state pointer lives in Lua's extra space");
_Static_assert(NNREPL_FLOAT32 == (int)NN_F32 && NNREPL_FLOAT64 == (int)NN_F64 && NNREPL_FLOAT16 == (int)NN_F16 &&
                   NNREPL_BFLOAT16 == (int)NN_BF16 && NNREPL_INT64 == (int)NN_I64 && NNREPL_INT32 == (int)NN_I32 &&
                   NNREPL_UINT8 == (int)NN_U8 && NNREPL_BOOL == (int)NN_BOOL && NNREPL_INT8 == (int)NN_I8 &&
                   NNREPL_INT16 == (int)NN_I16 && NNREPL_COMPLEX64 == (int)NN_C64 && NNREPL_COMPLEX128 == (int)NN_C128 &&
                   NN_NDTYPES == 12,
               "nnrepl_dtype mirrors nn_dtype");
_Static_assert(NNREPL_MAX_DIMS == NN_MAX_DIMS, "NNREPL_MAX_DIMS mirrors NN_MAX_DIMS");
_Static_assert(NNREPL_CPU == (int)NN_CPU && NNREPL_CUDA == (int)NN_CUDA, "device types mirror the engine's");

struct nnrepl_State {
    lua_State *L;
    atomic_int depth;   /* API calls running Lua code */
    atomic_int pending; /* an interrupt for the running call */
    char *err;          /* "" or the last message; err_cap bytes */
    size_t err_cap;
};

static _Thread_local char open_error[256];
static const char out_of_memory[] = "not enough memory";

#define STR2(x) #x
#define STR(x) STR2(x)

const char *nnrepl_version(void)
{
    return STR(NNREPL_VERSION_MAJOR) "." STR(NNREPL_VERSION_MINOR) "." STR(NNREPL_VERSION_PATCH);
}

/* ---- errors ---- */

static void set_error(nnrepl_State *S, const char *msg)
{
    size_t n = strlen(msg) + 1;
    if (n > S->err_cap) {
        char *p = realloc(S->err == out_of_memory ? NULL : S->err, n);
        if (!p) {
            if (S->err != out_of_memory) free(S->err);
            S->err = (char *)out_of_memory, S->err_cap = 0;
            return;
        }
        S->err = p, S->err_cap = n;
    }
    memcpy(S->err, msg, n);
}

static int fail(nnrepl_State *S, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(nnrepl_State *S, int status, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    set_error(S, buf);
    return status;
}

static void clear_error(nnrepl_State *S)
{
    if (S->err_cap) S->err[0] = '\0';
    else set_error(S, "");
}

static int hint_syntax(lua_State *L)
{
    nnrepl_hint_syntax(L);
    return 1;
}

/* Takes the error object on top of the stack as the message (with the hint for a Python
 * syntax habit) and pops it. */
static void error_from_stack(nnrepl_State *S)
{
    lua_pushcfunction(S->L, hint_syntax);
    lua_insert(S->L, -2);
    lua_pcall(S->L, 1, 1, 0); /* on failure (memory) the message is pcall's */
    const char *msg = lua_tostring(S->L, -1);
    if (msg) set_error(S, msg);
    else fail(S, 0, "(error object is a %s value)", luaL_typename(S->L, -1));
    lua_pop(S->L, 1);
}

static int map_status(int lua_status)
{
    switch (lua_status) {
    case LUA_OK: return NNREPL_OK;
    case LUA_ERRSYNTAX: return NNREPL_ERRSYNTAX;
    case LUA_ERRMEM: return NNREPL_ERRMEM;
    case LUA_ERRERR: return NNREPL_ERRERR;
    case LUA_ERRFILE: return NNREPL_ERRFILE;
    default: return NNREPL_ERRRUN;
    }
}

const char *nnrepl_error(nnrepl_State *S)
{
    if (!S) return open_error;
    return S->err_cap || S->err == out_of_memory ? S->err : "";
}

/* ---- interrupts ---- */

static nnrepl_State *state_of(lua_State *L) { return *(nnrepl_State **)lua_getextraspace(L); }

static void interrupt_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    if (!atomic_load(&state_of(L)->pending)) {
        lua_sethook(L, NULL, 0, 0);
        return;
    }
    luaL_error(L, "interrupted");
}

void nnrepl_interrupt(nnrepl_State *S)
{
    if (!S || atomic_load(&S->depth) == 0) return;
    atomic_store(&S->pending, 1);
    lua_sethook(S->L, interrupt_hook, LUA_MASKCOUNT, 1);
}

/* Runs the function at stack index base + 1 with the nargs values above it under the
 * traceback handler; on failure the stack is cut back to base and the message kept. */
static int protected_run(nnrepl_State *S, int base, int nargs, int nresults)
{
    lua_State *L = S->L;
    lua_pushcfunction(L, nnrepl_msghandler);
    lua_insert(L, base + 1);
    if (atomic_fetch_add(&S->depth, 1) == 0) atomic_store(&S->pending, 0);
    int status = lua_pcall(L, nargs, nresults, base + 1);
    int interrupted = atomic_load(&S->pending);
    if (atomic_fetch_sub(&S->depth, 1) == 1) {
        atomic_store(&S->pending, 0);
        if (lua_gethook(L) == interrupt_hook) lua_sethook(L, NULL, 0, 0);
    }
    if (status != LUA_OK) {
        error_from_stack(S);
        lua_settop(L, base);
        return interrupted && (status == LUA_ERRRUN || status == LUA_ERRERR) ? NNREPL_ERRINTERRUPTED
                                                                            : map_status(status);
    }
    lua_remove(L, base + 1);
    return NNREPL_OK;
}

/* ---- the interpreter ---- */

/* os.exit would end the host: raise an error instead. */
static int embedded_exit(lua_State *L)
{
    const char *code = lua_isboolean(L, 1) ? (lua_toboolean(L, 1) ? "true" : "false")
                                            : lua_isnoneornil(L, 1) ? "" : luaL_tolstring(L, 1, NULL);
    return luaL_error(L, "os.exit(%s) called: an embedded interpreter does not exit its host", code);
}

static int open_all(lua_State *L)
{
    nnrepl_openlibs(L);
    if (lua_getglobal(L, "os") == LUA_TTABLE) {
        lua_pushcfunction(L, embedded_exit);
        lua_setfield(L, -2, "exit");
    }
    return 0;
}

nnrepl_State *nnrepl_open(void)
{
    open_error[0] = '\0';
    nnrepl_State *S = calloc(1, sizeof *S);
    lua_State *L = S ? luaL_newstate() : NULL;
    if (!L) {
        free(S);
        snprintf(open_error, sizeof open_error, "nnrepl_open: cannot create a Lua state: %s", out_of_memory);
        return NULL;
    }
    S->L = L;
    *(nnrepl_State **)lua_getextraspace(L) = S;
    lua_gc(L, LUA_GCSTOP); /* no collections while the libraries load */
    lua_pushcfunction(L, nnrepl_msghandler);
    lua_pushcfunction(L, open_all);
    int status = lua_pcall(L, 0, 0, 1);
    lua_gc(L, LUA_GCRESTART);
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        snprintf(open_error, sizeof open_error, "nnrepl_open: %s", msg ? msg : "cannot open the library");
        lua_close(L);
        free(S);
        return NULL;
    }
    lua_settop(L, 0);
    return S;
}

void nnrepl_close(nnrepl_State *S)
{
    if (!S) return;
    lua_close(S->L);
    if (S->err != out_of_memory) free(S->err);
    free(S);
}

lua_State *nnrepl_lua(nnrepl_State *S) { return S->L; }

/* ---- running code ---- */

int nnrepl_dostring(nnrepl_State *S, const char *code)
{
    clear_error(S);
    if (!code) return fail(S, NNREPL_ERRARG, "nnrepl_dostring: code is NULL");
    if (!lua_checkstack(S->L, 4)) return fail(S, NNREPL_ERRMEM, "nnrepl_dostring: stack overflow");
    int base = lua_gettop(S->L);
    int status = luaL_loadbufferx(S->L, code, strlen(code), code, "t");
    if (status != LUA_OK) {
        error_from_stack(S);
        return map_status(status);
    }
    return protected_run(S, base, 0, 0);
}

int nnrepl_dofile(nnrepl_State *S, const char *path)
{
    clear_error(S);
    if (!path) return fail(S, NNREPL_ERRARG, "nnrepl_dofile: path is NULL");
    if (!lua_checkstack(S->L, 4)) return fail(S, NNREPL_ERRMEM, "nnrepl_dofile: stack overflow");
    int base = lua_gettop(S->L);
    int status = luaL_loadfilex(S->L, path, "bt");
    if (status != LUA_OK) {
        error_from_stack(S);
        return map_status(status);
    }
    return protected_run(S, base, 0, 0);
}

/* ---- dotted names ----
 * p_getpath(name): the value at name, or nil plus a message.
 * p_setpath(name, value): assigns it, creating missing tables; nothing, or nil plus a
 * message. Both run under lua_pcall (indexing may run metamethods); names are
 * checked first (check_name). */

/* Walks name from the global table. Lookup: leaves the value (returns 1). Create:
 * leaves the last table and the last key (returns 0). Either way returns 2 with nil
 * and a message when a part on the way is not a table. */
static int path_walk(lua_State *L, const char *name, int create)
{
    const char *p = name, *dot;
    lua_pushglobaltable(L);
    while ((dot = strchr(p, '.')) != NULL || !create) {
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        lua_pushlstring(L, p, n);
        lua_gettable(L, -2);
        if (lua_isnil(L, -1) && create) {
            lua_pop(L, 1);
            lua_newtable(L);
            lua_pushlstring(L, p, n);
            lua_pushvalue(L, -2);
            lua_settable(L, -4);
        }
        lua_remove(L, -2);
        if (!dot) return 1;
        int t = lua_type(L, -1);
        if (t != LUA_TTABLE && t != LUA_TUSERDATA) {
            const char *what = luaL_typename(L, -1);
            lua_pushnil(L);
            lua_pushlstring(L, name, (size_t)(dot - name));
            lua_pushfstring(L, "'%s' is %s%s, not a table", lua_tostring(L, -1), t == LUA_TNIL ? "" : "a ", what);
            lua_remove(L, -2);
            return 2;
        }
        p = dot + 1;
    }
    lua_pushstring(L, p);
    return 0;
}

static int p_getpath(lua_State *L)
{
    return path_walk(L, lua_touserdata(L, 1), 0);
}

static int p_setpath(lua_State *L)
{
    int n = path_walk(L, lua_touserdata(L, 1), 1);
    if (n) return n;
    lua_pushvalue(L, 2);
    lua_settable(L, -3);
    return 0;
}

/* Names are dot-separated non-empty parts. */
static int check_name(nnrepl_State *S, const char *fn, const char *name)
{
    if (!name) return fail(S, NNREPL_ERRARG, "%s: name is NULL", fn);
    if (!*name || *name == '.' || name[strlen(name) - 1] == '.' || strstr(name, ".."))
        return fail(S, NNREPL_ERRARG, "%s: bad name '%s'", fn, name);
    return NNREPL_OK;
}

/* Pushes the value at name; on failure pushes nothing and returns the status. */
static int get_path(nnrepl_State *S, const char *fn, const char *name)
{
    lua_State *L = S->L;
    if (check_name(S, fn, name)) return NNREPL_ERRARG;
    lua_pushcfunction(L, p_getpath);
    lua_pushlightuserdata(L, (void *)name);
    int status = lua_pcall(L, 1, 2, 0);
    if (status != LUA_OK) {
        error_from_stack(S);
        return map_status(status);
    }
    if (lua_isnil(L, -2) && lua_isstring(L, -1)) {
        fail(S, NNREPL_ERRARG, "%s: %s", fn, lua_tostring(L, -1));
        lua_pop(L, 2);
        return NNREPL_ERRARG;
    }
    lua_pop(L, 1);
    return NNREPL_OK;
}

/* Assigns the value on top of the stack to name and pops it, in every case. */
static int set_path(nnrepl_State *S, const char *fn, const char *name)
{
    lua_State *L = S->L;
    if (check_name(S, fn, name)) {
        lua_pop(L, 1);
        return NNREPL_ERRARG;
    }
    lua_pushcfunction(L, p_setpath);
    lua_insert(L, -2);
    lua_pushlightuserdata(L, (void *)name);
    lua_insert(L, -2);
    int base = lua_gettop(L) - 3;
    int status = lua_pcall(L, 2, LUA_MULTRET, 0);
    if (status != LUA_OK) {
        error_from_stack(S);
        return map_status(status);
    }
    if (lua_gettop(L) > base) {
        fail(S, NNREPL_ERRARG, "%s: %s", fn, lua_tostring(L, -1));
        lua_settop(L, base);
        return NNREPL_ERRARG;
    }
    return NNREPL_OK;
}

int nnrepl_call(nnrepl_State *S, const char *name, int nargs, int nresults)
{
    lua_State *L = S->L;
    clear_error(S);
    if (nargs < 0 || nargs > lua_gettop(L))
        return fail(S, NNREPL_ERRARG, "nnrepl_call: %d arguments asked for, the stack holds %d values", nargs,
                    lua_gettop(L));
    int base = lua_gettop(L) - nargs;
    if (!lua_checkstack(L, 6)) {
        lua_settop(L, base);
        return fail(S, NNREPL_ERRMEM, "nnrepl_call: stack overflow");
    }
    int status = get_path(S, "nnrepl_call", name);
    if (status != NNREPL_OK) {
        lua_settop(L, base);
        return status;
    }
    if (!lua_isfunction(L, -1)) {
        int callable = luaL_getmetafield(L, -1, "__call") != LUA_TNIL;
        if (callable) lua_pop(L, 1);
        else {
            fail(S, NNREPL_ERRARG, "nnrepl_call: '%s' is %s%s, not a function", name,
                 lua_isnil(L, -1) ? "" : "a ", luaL_typename(L, -1));
            lua_settop(L, base);
            return NNREPL_ERRARG;
        }
    }
    lua_insert(L, base + 1);
    return protected_run(S, base, nargs, nresults);
}

int nnrepl_register(nnrepl_State *S, const char *name, lua_CFunction f)
{
    clear_error(S);
    if (!f) return fail(S, NNREPL_ERRARG, "nnrepl_register: function is NULL");
    if (!lua_checkstack(S->L, 6)) return fail(S, NNREPL_ERRMEM, "nnrepl_register: stack overflow");
    lua_pushcfunction(S->L, f);
    return set_path(S, "nnrepl_register", name);
}

/* ---- tensors ---- */

typedef struct {
    void (*release)(void *data, void *ctx);
    void *ctx;
} borrow;

static void release_borrowed(void *data, void *ctx)
{
    borrow *b = ctx;
    if (b->release) b->release(data, b->ctx);
    free(b);
}

/* The engine tensor for desc, or NULL with a message in err and the status in *status.
 * *box is the borrow record (BORROW mode), owned by the tensor's storage. */
static nn_tensor *make_tensor(const nnrepl_tensor *d, int mode, char *err, size_t errsz, int *status,
                              borrow **box)
{
    static const int64_t none[1] = {0};
    *status = NNREPL_ERRARG;
    *box = NULL;
    if (!d) return snprintf(err, errsz, "the descriptor is NULL"), NULL;
    if (mode != NNREPL_COPY && mode != NNREPL_BORROW) return snprintf(err, errsz, "bad mode %d", mode), NULL;
    if (d->ndim < 0 || d->ndim > NNREPL_MAX_DIMS)
        return snprintf(err, errsz, "ndim %d is out of range [0, %d]", d->ndim, NNREPL_MAX_DIMS), NULL;
    if (d->ndim > 0 && !d->shape) return snprintf(err, errsz, "shape is NULL"), NULL;
    if ((unsigned)d->dtype >= (unsigned)NN_NDTYPES) return snprintf(err, errsz, "bad dtype %d", (int)d->dtype), NULL;
    const int64_t *shape = d->ndim ? d->shape : none;
    int64_t numel = 1;
    for (int i = 0; i < d->ndim; i++) {
        if (shape[i] < 0)
            return snprintf(err, errsz, "shape[%d] is %lld (sizes must be >= 0)", i, (long long)shape[i]), NULL;
        if (d->strides && d->strides[i] < 0)
            return snprintf(err, errsz, "strides[%d] is %lld (negative strides are not supported)", i,
                            (long long)d->strides[i]),
                   NULL;
        numel *= shape[i];
    }
    if (!d->data && numel > 0) return snprintf(err, errsz, "data is NULL"), NULL;

    nn_device dev = NN_DEVICE_CPU;
    if (d->device == NNREPL_CUDA) {
        if (nn_require_gpu("nnrepl_push_tensor")) {
            *status = NNREPL_ERRRUN;
            return snprintf(err, errsz, "%s", nn_last_error()), NULL;
        }
        int count = nn_gpu->device_count();
        if (d->device_index < -1 || d->device_index >= count)
            return snprintf(err, errsz, "device_index %d is out of range (%d GPUs)", d->device_index, count), NULL;
        dev = nn_resolve_device((nn_device){NN_CUDA, (int8_t)d->device_index});
    } else if (d->device != NNREPL_CPU) {
        return snprintf(err, errsz, "bad device type %d", (int)d->device), NULL;
    }

    nn_dtype dt = (nn_dtype)d->dtype;
    nn_tensor *t;
    if (mode == NNREPL_BORROW) {
        *box = malloc(sizeof **box);
        if (!*box) return *status = NNREPL_ERRMEM, snprintf(err, errsz, "%s", out_of_memory), NULL;
        (*box)->release = d->release, (*box)->ctx = d->release_ctx;
        t = nn_from_blob(d->data, d->ndim, shape, d->strides, dt, dev, release_borrowed, *box);
        if (!t) free(*box), *box = NULL;
    } else {
        nn_tensor *src = nn_from_blob(d->data, d->ndim, shape, d->strides, dt, dev, NULL, NULL);
        t = src ? nn_empty(d->ndim, shape, dt, dev) : NULL;
        if (t && nn_copy_(t, src) != NN_OK) nn_release(t), t = NULL;
        nn_release(src);
    }
    if (!t) {
        *status = nn_last_status() == NN_ERR_NOMEM ? NNREPL_ERRMEM : NNREPL_ERRRUN;
        return snprintf(err, errsz, "%s", nn_last_error()), NULL;
    }
    return t;
}

static int p_push(lua_State *L)
{
    lt_push(L, lua_touserdata(L, 1));
    return 1;
}

int nnrepl_push_tensor(nnrepl_State *S, const nnrepl_tensor *desc, int mode)
{
    lua_State *L = S->L;
    char err[400];
    int status;
    borrow *box;
    clear_error(S);
    if (!lua_checkstack(L, 4)) return fail(S, NNREPL_ERRMEM, "nnrepl_push_tensor: stack overflow");
    nn_tensor *t = make_tensor(desc, mode, err, sizeof err, &status, &box);
    if (!t) return fail(S, status, "nnrepl_push_tensor: %s", err);
    lua_pushcfunction(L, p_push);
    lua_pushlightuserdata(L, t);
    status = lua_pcall(L, 1, 1, 0);
    if (status != LUA_OK) {
        /* who owns t now is unknown (an allocation failed inside the push): never call
         * the host's release for a push that failed */
        if (box) box->release = NULL;
        error_from_stack(S);
        return map_status(status);
    }
    return NNREPL_OK;
}

void nnrepl_pushtensor(lua_State *L, const nnrepl_tensor *desc, int mode)
{
    char err[400];
    int status;
    borrow *box;
    nn_tensor *t = make_tensor(desc, mode, err, sizeof err, &status, &box);
    if (!t) luaL_error(L, "nnrepl_pushtensor: %s", err);
    lt_push(L, t);
}

int nnrepl_totensor(lua_State *L, int idx, nnrepl_tensor *out)
{
    if (!lua_checkstack(L, 2) || !lt_is_tensor(L, idx)) return 0;
    const nn_tensor *t = ((lt_tensor *)lua_touserdata(L, idx))->t;
    if (!t) return 0; /* closed */
    memset(out, 0, sizeof *out);
    out->data = nn_data(t);
    out->ndim = t->ndim;
    out->shape = t->shape;
    out->strides = t->strides;
    out->dtype = (nnrepl_dtype)t->dtype;
    out->device = t->storage->device.type == NN_CUDA ? NNREPL_CUDA : NNREPL_CPU;
    out->device_index = out->device == NNREPL_CUDA ? t->storage->device.index : -1;
    return 1;
}

int nnrepl_get_tensor(nnrepl_State *S, int idx, nnrepl_tensor *out)
{
    clear_error(S);
    if (!out) return fail(S, NNREPL_ERRARG, "nnrepl_get_tensor: out is NULL");
    lua_State *L = S->L;
    int top = lua_gettop(L);
    int abs = idx < 0 && -idx <= top ? top + idx + 1 : idx;
    if (abs < 1 || abs > top)
        return fail(S, NNREPL_ERRARG, "nnrepl_get_tensor: index %d is not on the stack (%d values)", idx, top);
    if (nnrepl_totensor(L, abs, out)) return NNREPL_OK;
    if (lt_is_tensor(L, abs)) return fail(S, NNREPL_ERRARG, "nnrepl_get_tensor: the tensor at index %d is closed", idx);
    return fail(S, NNREPL_ERRARG, "nnrepl_get_tensor: the value at index %d is a %s, not a tensor", idx,
                luaL_typename(L, abs));
}

int nnrepl_set_global_tensor(nnrepl_State *S, const char *name, const nnrepl_tensor *desc, int mode)
{
    int status = nnrepl_push_tensor(S, desc, mode);
    if (status != NNREPL_OK) return status;
    if (!lua_checkstack(S->L, 6)) {
        lua_pop(S->L, 1);
        return fail(S, NNREPL_ERRMEM, "nnrepl_set_global_tensor: stack overflow");
    }
    return set_path(S, "nnrepl_set_global_tensor", name);
}

int nnrepl_get_global_tensor(nnrepl_State *S, const char *name, nnrepl_tensor *out)
{
    clear_error(S);
    if (!lua_checkstack(S->L, 6)) return fail(S, NNREPL_ERRMEM, "nnrepl_get_global_tensor: stack overflow");
    int status = get_path(S, "nnrepl_get_global_tensor", name);
    if (status != NNREPL_OK) return status;
    status = nnrepl_get_tensor(S, -1, out);
    if (status != NNREPL_OK && !lt_is_tensor(S->L, -1))
        fail(S, status, "nnrepl_get_global_tensor: '%s' is %s%s, not a tensor", name,
             lua_isnil(S->L, -1) ? "" : "a ", luaL_typename(S->L, -1));
    lua_pop(S->L, 1);
    return status;
}
