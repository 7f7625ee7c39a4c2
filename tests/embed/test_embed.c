/* Tests of the embedding API (interp/include/nnrepl.h): the example host, many
 * interpreters opened and closed, errors as statuses, borrowed and copied buffers,
 * dtype/shape/strides round trips, calls with tensors, registered C functions,
 * interrupts from another thread. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

#include "check.h"
#include "dtype.h"
#include "nnrepl.h"

static int contains(const char *s, const char *part) { return s && strstr(s, part) != NULL; }

/* Runs code that must succeed; reports the error otherwise. */
#define RUN(S, code)                                                                                          \
    do {                                                                                                      \
        int st_ = nnrepl_dostring(S, code);                                                                   \
        CHECK(st_ == NNREPL_OK, "%s -> %d: %s", code, st_, nnrepl_error(S));                                  \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_example_host(void)
{
    const char *host = getenv("NNREPL_EMBED_HOST"); /* where the build directory moved; "": not carried */
    if (host && !*host) {
        printf("test_example_host: NNREPL_EMBED_HOST is empty, skipped\n");
        return;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' 2>&1", host ? host : EMBED_HOST);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (!p) return;
    char out[8192];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    CHECK(rc == 0, "embed_host exit status %d, output:\n%s", rc, out);
    CHECK(contains(out, "predictions mse"), "output:\n%s", out);
    CHECK(contains(out, "201 of 201 borrowed buffers released"), "output:\n%s", out);
}

static void test_open_close(void)
{
    int ok = 0;
    for (int i = 0; i < 100; i++) {
        nnrepl_State *S = nnrepl_open();
        if (!S) break;
        ok += nnrepl_dostring(S, "local x = torch.ones(3, 4) * 2; x = nn.Linear(4, 2)(x); assert(x:size(1) == 2)") ==
              NNREPL_OK;
        nnrepl_close(S);
    }
    CHECK(ok == 100, "%d of 100 interpreters ran", ok);
    nnrepl_close(NULL);
    CHECK(strcmp(nnrepl_error(NULL), "") == 0);
}

static void test_errors(nnrepl_State *S)
{
    lua_State *L = nnrepl_lua(S);
    RUN(S, "kept = 41");
    CHECK(strcmp(nnrepl_error(S), "") == 0);

    int st = nnrepl_dostring(S, "x = = 1");
    CHECK(st == NNREPL_ERRSYNTAX, "%d", st);
    CHECK(contains(nnrepl_error(S), "unexpected symbol"), "%s", nnrepl_error(S));
    CHECK(lua_gettop(L) == 0);

    /* Python habits get a hint line: a syntax error, and a method called with '.' */
    st = nnrepl_dostring(S, "y = torch.ones(2) @ torch.ones(2)");
    CHECK(st == NNREPL_ERRSYNTAX && contains(nnrepl_error(S), "near '@'\nhint: Lua has no '@'"), "%d %s", st,
          nnrepl_error(S));
    st = nnrepl_dostring(S, "local m = torch.nn.Linear(2, 2)\nm.train()");
    CHECK(st == NNREPL_ERRRUN && contains(nnrepl_error(S), "hint: 'train' got nil as self") &&
              contains(nnrepl_error(S), "stack traceback:"),
          "%d %s", st, nnrepl_error(S));
    CHECK(lua_gettop(L) == 0);

    st = nnrepl_dostring(S, "kept = kept + 1\nlocal function inner() error('boom') end\ninner()");
    CHECK(st == NNREPL_ERRRUN, "%d", st);
    CHECK(contains(nnrepl_error(S), "boom"), "%s", nnrepl_error(S));
    CHECK(contains(nnrepl_error(S), "stack traceback:") && contains(nnrepl_error(S), "inner"), "%s",
          nnrepl_error(S));
    st = nnrepl_dostring(S, "local shuffle = False");
    CHECK(st == NNREPL_ERRRUN && contains(nnrepl_error(S), "name 'False' is not defined: Python's False is Lua's false"),
          "%d %s", st, nnrepl_error(S));
    CHECK(lua_gettop(L) == 0);

    /* an engine error comes through as a Lua error with the engine's message */
    st = nnrepl_dostring(S, "torch.ones(3, 4):matmul(torch.ones(5, 6))");
    CHECK(st == NNREPL_ERRRUN && contains(nnrepl_error(S), "[3, 4]"), "%d %s", st, nnrepl_error(S));

    /* error objects that are not strings */
    st = nnrepl_dostring(S, "error(setmetatable({}, {__tostring = function() return 'custom object' end}))");
    CHECK(st == NNREPL_ERRRUN && contains(nnrepl_error(S), "custom object"), "%s", nnrepl_error(S));
    st = nnrepl_dostring(S, "error({})");
    CHECK(st == NNREPL_ERRRUN && contains(nnrepl_error(S), "table value"), "%s", nnrepl_error(S));

    /* a script cannot end the host */
    st = nnrepl_dostring(S, "os.exit(3)");
    CHECK(st == NNREPL_ERRRUN && contains(nnrepl_error(S), "os.exit(3)"), "%s", nnrepl_error(S));

    /* the interpreter goes on, with the state the failed chunk left */
    RUN(S, "assert(kept == 42)");
    CHECK(strcmp(nnrepl_error(S), "") == 0);

    st = nnrepl_dofile(S, "/nonexistent/model.lua");
    CHECK(st == NNREPL_ERRFILE && contains(nnrepl_error(S), "nonexistent"), "%d %s", st, nnrepl_error(S));

    char path[] = "/tmp/nnrepl_test_embed_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        const char good[] = "from_file = torch.arange(4):sum():item()\n";
        CHECK(write(fd, good, sizeof good - 1) == (ssize_t)(sizeof good - 1));
        close(fd);
        CHECK(nnrepl_dofile(S, path) == NNREPL_OK, "%s", nnrepl_error(S));
        RUN(S, "assert(from_file == 6)");
        FILE *f = fopen(path, "w");
        fputs("local a = \n", f);
        fclose(f);
        st = nnrepl_dofile(S, path);
        CHECK(st == NNREPL_ERRSYNTAX, "%d %s", st, nnrepl_error(S));
        unlink(path);
    }

    CHECK(nnrepl_dostring(S, NULL) == NNREPL_ERRARG);
    CHECK(lua_gettop(L) == 0);
}

/* ---- tensors ---- */

static int releases;
static void *released_data;
static void count_release(void *data, void *ctx)
{
    releases++;
    released_data = data;
    CHECK(ctx == &releases, "release context");
}

static void test_borrow_release(void)
{
    nnrepl_State *S = nnrepl_open();
    lua_State *L = nnrepl_lua(S);
    float buf[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[] = {2, 3};
    nnrepl_tensor d = {.data = buf, .ndim = 2, .shape = shape, .dtype = NNREPL_FLOAT32, .release = count_release,
                       .release_ctx = &releases};
    releases = 0;
    CHECK(nnrepl_push_tensor(S, &d, NNREPL_BORROW) == NNREPL_OK, "%s", nnrepl_error(S));
    CHECK(lua_gettop(L) == 1);
    lua_setglobal(L, "b");
    /* views keep the memory alive after the original goes */
    RUN(S, "v = b:view(-1); r = b[1]; b:mul_(10); b = nil; collectgarbage(); collectgarbage()");
    CHECK(releases == 0, "released while views remain (%d)", releases);
    CHECK(buf[0] == 10 && buf[5] == 60, "in-place ops write the host's memory: %g %g", buf[0], buf[5]);
    buf[3] = -1; /* and the interpreter sees the host's writes */
    RUN(S, "assert(r[0]:item() == -1 and v[3]:item() == -1)");
    RUN(S, "v = nil; collectgarbage(); collectgarbage()");
    CHECK(releases == 0, "r still holds it (%d)", releases);
    RUN(S, "r = nil; collectgarbage(); collectgarbage()");
    CHECK(releases == 1 && released_data == buf, "released %d times", releases);

    /* still alive at close: released by nnrepl_close, once */
    releases = 0;
    CHECK(nnrepl_set_global_tensor(S, "keep.me", &d, NNREPL_BORROW) == NNREPL_OK, "%s", nnrepl_error(S));
    RUN(S, "keep.view = keep.me:t()");
    CHECK(nnrepl_push_tensor(S, &d, NNREPL_BORROW) == NNREPL_OK); /* one left on the stack too */
    CHECK(releases == 0);
    nnrepl_close(S);
    CHECK(releases == 2, "released %d times at close", releases);

    /* a <close> variable gives the buffer back at once */
    S = nnrepl_open();
    L = nnrepl_lua(S);
    releases = 0;
    nnrepl_push_tensor(S, &d, NNREPL_BORROW);
    lua_setglobal(L, "c");
    RUN(S, "do local x <close> = c; c = nil end");
    CHECK(releases == 1, "released %d times after <close>", releases);
    nnrepl_close(S);
    CHECK(releases == 1, "released %d times", releases);
}

static void test_copy(nnrepl_State *S)
{
    lua_State *L = nnrepl_lua(S);
    double buf[4] = {1, 2, 3, 4};
    int64_t shape[] = {4};
    releases = 0;
    nnrepl_tensor d = {.data = buf, .ndim = 1, .shape = shape, .dtype = NNREPL_FLOAT64, .release = count_release,
                       .release_ctx = &releases};
    CHECK(nnrepl_push_tensor(S, &d, NNREPL_COPY) == NNREPL_OK, "%s", nnrepl_error(S));
    nnrepl_tensor got;
    CHECK(nnrepl_get_tensor(S, -1, &got) == NNREPL_OK);
    CHECK(got.data != (void *)buf, "copy mode aliases the host buffer");
    CHECK(got.dtype == NNREPL_FLOAT64 && got.ndim == 1 && got.shape[0] == 4 && got.strides[0] == 1);
    lua_setglobal(L, "cp");
    buf[0] = 100; /* the host's writes do not reach the copy ... */
    RUN(S, "assert(cp[0]:item() == 1 and cp:sum():item() == 10)");
    RUN(S, "cp:fill_(7)"); /* ... nor the other way */
    CHECK(buf[1] == 2 && buf[3] == 4);
    RUN(S, "cp = nil; collectgarbage()");
    CHECK(releases == 0, "copy mode never calls release");

    /* a strided source is copied element by element into a contiguous tensor */
    float m[6] = {0, 1, 2, 3, 4, 5}; /* 2x3 row-major; its transpose is 3x2 with strides {1, 3} */
    int64_t tshape[] = {3, 2}, tstrides[] = {1, 3};
    nnrepl_tensor t = {.data = m, .ndim = 2, .shape = tshape, .strides = tstrides, .dtype = NNREPL_FLOAT32};
    CHECK(nnrepl_push_tensor(S, &t, NNREPL_COPY) == NNREPL_OK, "%s", nnrepl_error(S));
    CHECK(nnrepl_get_tensor(S, -1, &got) == NNREPL_OK);
    CHECK(got.strides[0] == 2 && got.strides[1] == 1, "copy is contiguous");
    const float *g = got.data;
    CHECK(g[0] == 0 && g[1] == 3 && g[2] == 1 && g[3] == 4 && g[4] == 2 && g[5] == 5);
    lua_pop(L, 1);
    CHECK(lua_gettop(L) == 0);
}

static void test_round_trip(nnrepl_State *S)
{
    lua_State *L = nnrepl_lua(S);
    static const char *names[] = {"torch.float32", "torch.float64", "torch.float16", "torch.bfloat16",
                                  "torch.int64",   "torch.int32",   "torch.uint8",   "torch.bool",
                                  "torch.int8",    "torch.int16"};
    _Alignas(8) unsigned char buf[6 * 8];
    for (int dt = NNREPL_FLOAT32; dt <= NNREPL_INT16; dt++) {
        /* a 2x3 transposed view of a 3x2 buffer holding 0..5 (bool: i % 2) */
        size_t es = nn_dtype_size((nn_dtype)dt);
        for (int i = 0; i < 6; i++) nn_store_f64(buf + i * es, (nn_dtype)dt, dt == NNREPL_BOOL ? i % 2 : i);
        int64_t shape[] = {2, 3}, strides[] = {1, 2};
        nnrepl_tensor d = {.data = buf, .ndim = 2, .shape = shape, .strides = strides, .dtype = (nnrepl_dtype)dt};
        CHECK(nnrepl_push_tensor(S, &d, NNREPL_BORROW) == NNREPL_OK, "%s", nnrepl_error(S));
        nnrepl_tensor got;
        CHECK(nnrepl_get_tensor(S, -1, &got) == NNREPL_OK, "%s", nnrepl_error(S));
        CHECK(got.data == buf && (int)got.dtype == dt && got.ndim == 2 && got.shape[0] == 2 && got.shape[1] == 3 &&
                  got.strides[0] == 1 && got.strides[1] == 2 && got.device == NNREPL_CPU && got.device_index == -1,
              "dtype %d round trip", dt);
        lua_setglobal(L, "rt");
        char code[300];
        /* element (i, j) is buffer element i + 2 j */
        snprintf(code, sizeof code,
                 "assert(tostring(rt.dtype) == '%s', tostring(rt.dtype))\n"
                 "assert(rt:is_contiguous() == false and rt:stride()[1] == 1 and rt:stride()[2] == 2)\n"
                 "assert(rt[1][2]:item() == %s, tostring(rt[1][2]:item()))",
                 names[dt], dt == NNREPL_BOOL ? "true" : "5");
        RUN(S, code);
        RUN(S, "rt = nil");
    }

    /* a tensor made in Lua, read in C through its strides */
    RUN(S, "made = torch.arange(12):reshape(3, 4):t()");
    nnrepl_tensor got;
    CHECK(nnrepl_get_global_tensor(S, "made", &got) == NNREPL_OK, "%s", nnrepl_error(S));
    CHECK(got.dtype == NNREPL_INT64 && got.ndim == 2 && got.shape[0] == 4 && got.shape[1] == 3 &&
          got.strides[0] == 1 && got.strides[1] == 4);
    const int64_t *v = got.data;
    int good = 1;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) good &= v[i * got.strides[0] + j * got.strides[1]] == j * 4 + i;
    CHECK(good, "values through the strides");

    /* 0-dim and empty tensors */
    float one = 2.5f;
    nnrepl_tensor s = {.data = &one, .ndim = 0, .dtype = NNREPL_FLOAT32};
    CHECK(nnrepl_set_global_tensor(S, "scalar", &s, NNREPL_BORROW) == NNREPL_OK, "%s", nnrepl_error(S));
    RUN(S, "assert(scalar:dim() == 0 and scalar:item() == 2.5)");
    int64_t eshape[] = {0, 3};
    nnrepl_tensor e = {.data = NULL, .ndim = 2, .shape = eshape, .dtype = NNREPL_INT32};
    CHECK(nnrepl_set_global_tensor(S, "empty", &e, NNREPL_COPY) == NNREPL_OK, "%s", nnrepl_error(S));
    RUN(S, "assert(empty:numel() == 0 and empty:size(1) == 3)");

    /* bad descriptors: a status and a message, nothing pushed */
    int64_t bad[] = {2, -1};
    nnrepl_tensor b = {.data = buf, .ndim = 2, .shape = bad, .dtype = NNREPL_FLOAT32};
    CHECK(nnrepl_push_tensor(S, &b, NNREPL_COPY) == NNREPL_ERRARG && contains(nnrepl_error(S), "shape[1]"), "%s",
          nnrepl_error(S));
    int64_t three[NNREPL_MAX_DIMS + 1] = {3, 1, 1, 1, 1, 1, 1, 1, 1};
    b.shape = three;
    b.ndim = 9;
    CHECK(nnrepl_push_tensor(S, &b, NNREPL_COPY) == NNREPL_ERRARG && contains(nnrepl_error(S), "ndim"));
    b.ndim = 1;
    b.dtype = (nnrepl_dtype)42;
    CHECK(nnrepl_push_tensor(S, &b, NNREPL_COPY) == NNREPL_ERRARG && contains(nnrepl_error(S), "dtype"));
    b.dtype = NNREPL_FLOAT32;
    b.data = NULL;
    CHECK(nnrepl_push_tensor(S, &b, NNREPL_BORROW) == NNREPL_ERRARG && contains(nnrepl_error(S), "data"));
    b.data = buf;
    CHECK(nnrepl_push_tensor(S, &b, 5) == NNREPL_ERRARG && contains(nnrepl_error(S), "mode"));
    int64_t neg[] = {-1};
    b.strides = neg;
    CHECK(nnrepl_push_tensor(S, &b, NNREPL_BORROW) == NNREPL_ERRARG && contains(nnrepl_error(S), "strides"));
    b.strides = NULL;
    CHECK(nnrepl_push_tensor(S, NULL, NNREPL_COPY) == NNREPL_ERRARG);
    b.device = NNREPL_CUDA; /* a build or machine without a GPU says so */
    int st = nnrepl_push_tensor(S, &b, NNREPL_BORROW);
    if (st != NNREPL_OK) CHECK(st == NNREPL_ERRRUN && contains(nnrepl_error(S), "CUDA"), "%s", nnrepl_error(S));
    else lua_pop(L, 1);
    b.device = (nnrepl_device_type)7;
    CHECK(nnrepl_push_tensor(S, &b, NNREPL_BORROW) == NNREPL_ERRARG && contains(nnrepl_error(S), "device"));
    CHECK(lua_gettop(L) == 0);

    /* not a tensor */
    lua_pushinteger(L, 3);
    CHECK(nnrepl_get_tensor(S, -1, &got) == NNREPL_ERRARG && contains(nnrepl_error(S), "number"), "%s",
          nnrepl_error(S));
    CHECK(nnrepl_get_tensor(S, 5, &got) == NNREPL_ERRARG);
    lua_pop(L, 1);
    CHECK(nnrepl_get_global_tensor(S, "math.pi", &got) == NNREPL_ERRARG && contains(nnrepl_error(S), "math.pi"));
    CHECK(nnrepl_get_global_tensor(S, "no.such.thing", &got) == NNREPL_ERRARG &&
              contains(nnrepl_error(S), "'no' is nil"),
          "%s", nnrepl_error(S));
    RUN(S, "closed = torch.ones(2); do local c <close> = closed end");
    CHECK(nnrepl_get_global_tensor(S, "closed", &got) == NNREPL_ERRARG);
    CHECK(lua_gettop(L) == 0);
}

/* ---- calls and registered functions ---- */

static void test_call(nnrepl_State *S)
{
    lua_State *L = nnrepl_lua(S);
    RUN(S, "function affine(x, w, b) local y = x:matmul(w) + b; return y, y:sum() end\n"
           "lib = {sub = {twice = function(x) return x * 2 end}}\n"
           "torch.manual_seed(1); lin = nn.Linear(2, 3)\n"
           "function many() return 1, 2, 3 end\n"
           "function fails(x) error('bad input ' .. x:size(0)) end");
    float x[2][2] = {{1, 2}, {3, 4}}, w[2][1] = {{1}, {-1}}, bias = 10;
    int64_t xs[] = {2, 2}, ws[] = {2, 1};
    nnrepl_tensor dx = {.data = x, .ndim = 2, .shape = xs, .dtype = NNREPL_FLOAT32};
    nnrepl_tensor dw = {.data = w, .ndim = 2, .shape = ws, .dtype = NNREPL_FLOAT32};
    nnrepl_tensor db = {.data = &bias, .ndim = 0, .dtype = NNREPL_FLOAT32};
    lua_pushstring(L, "below"); /* the call leaves what is under its arguments alone */
    CHECK(nnrepl_push_tensor(S, &dx, NNREPL_BORROW) == NNREPL_OK && nnrepl_push_tensor(S, &dw, NNREPL_BORROW) == NNREPL_OK &&
          nnrepl_push_tensor(S, &db, NNREPL_COPY) == NNREPL_OK);
    int st = nnrepl_call(S, "affine", 3, 2);
    CHECK(st == NNREPL_OK, "%s", nnrepl_error(S));
    CHECK(lua_gettop(L) == 3, "top %d", lua_gettop(L));
    nnrepl_tensor y, sum;
    CHECK(nnrepl_get_tensor(S, -2, &y) == NNREPL_OK && nnrepl_get_tensor(S, -1, &sum) == NNREPL_OK);
    if (y.ndim == 2 && sum.ndim == 0) {
        const float *py = y.data;
        CHECK(py[0] == 9 && py[y.strides[0]] == 9 && *(const float *)sum.data == 18, "%g %g %g", py[0],
              py[y.strides[0]], *(const float *)sum.data);
    } else CHECK(0, "result shapes");
    lua_pop(L, 2);
    CHECK(strcmp(lua_tostring(L, -1), "below") == 0);
    lua_pop(L, 1);

    /* dotted names, callable objects (a module), LUA_MULTRET */
    nnrepl_push_tensor(S, &dx, NNREPL_BORROW);
    CHECK(nnrepl_call(S, "lib.sub.twice", 1, 1) == NNREPL_OK, "%s", nnrepl_error(S));
    CHECK(nnrepl_get_tensor(S, -1, &y) == NNREPL_OK && ((const float *)y.data)[3] == 8);
    lua_pop(L, 1);
    nnrepl_push_tensor(S, &dx, NNREPL_BORROW);
    CHECK(nnrepl_call(S, "lin", 1, 1) == NNREPL_OK, "%s", nnrepl_error(S));
    CHECK(nnrepl_get_tensor(S, -1, &y) == NNREPL_OK && y.shape[0] == 2 && y.shape[1] == 3);
    lua_pop(L, 1);
    nnrepl_push_tensor(S, &dx, NNREPL_BORROW);
    nnrepl_push_tensor(S, &dx, NNREPL_BORROW);
    CHECK(nnrepl_call(S, "torch.add", 2, 1) == NNREPL_OK, "%s", nnrepl_error(S));
    CHECK(nnrepl_get_tensor(S, -1, &y) == NNREPL_OK && ((const float *)y.data)[1] == 4);
    lua_pop(L, 1);
    CHECK(nnrepl_call(S, "many", 0, LUA_MULTRET) == NNREPL_OK && lua_gettop(L) == 3 && lua_tointeger(L, 3) == 3);
    lua_settop(L, 0);

    /* errors: arguments popped, nothing pushed */
    nnrepl_push_tensor(S, &dx, NNREPL_BORROW);
    st = nnrepl_call(S, "fails", 1, 1);
    CHECK(st == NNREPL_ERRRUN && contains(nnrepl_error(S), "bad input 2") && contains(nnrepl_error(S), "traceback"),
          "%d %s", st, nnrepl_error(S));
    CHECK(lua_gettop(L) == 0);
    lua_pushinteger(L, 1);
    CHECK(nnrepl_call(S, "nosuch", 1, 0) == NNREPL_ERRARG && contains(nnrepl_error(S), "'nosuch' is nil"), "%s",
          nnrepl_error(S));
    CHECK(lua_gettop(L) == 0);
    CHECK(nnrepl_call(S, "math.pi", 0, 0) == NNREPL_ERRARG && contains(nnrepl_error(S), "not a function"));
    CHECK(nnrepl_call(S, "math.pi.x", 0, 0) == NNREPL_ERRARG && contains(nnrepl_error(S), "'math.pi' is a number"),
          "%s", nnrepl_error(S));
    CHECK(nnrepl_call(S, "a..b", 0, 0) == NNREPL_ERRARG && contains(nnrepl_error(S), "bad name"));
    CHECK(nnrepl_call(S, "many", 2, 0) == NNREPL_ERRARG); /* more arguments than values */
    CHECK(nnrepl_call(S, "many", 0, 0) == NNREPL_OK && lua_gettop(L) == 0);
}

static nnrepl_State *current; /* for the callback that calls back in */

static void free_data(void *data, void *ctx)
{
    (void)ctx;
    free(data);
}

/* host.scale(x, k): a new tensor k * x computed in C, over memory it mallocs */
static int host_scale(lua_State *L)
{
    nnrepl_tensor x;
    if (!nnrepl_totensor(L, 1, &x)) return luaL_typeerror(L, 1, "tensor");
    float k = (float)luaL_checknumber(L, 2);
    if (x.dtype != NNREPL_FLOAT32 || x.ndim != 1) return luaL_error(L, "float32 vector expected");
    size_t n = (size_t)x.shape[0];
    float *out = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) out[i] = k * ((const float *)x.data)[i * x.strides[0]];
    nnrepl_tensor r = {.data = out, .ndim = 1, .shape = x.shape, .dtype = NNREPL_FLOAT32, .release = free_data};
    nnrepl_pushtensor(L, &r, NNREPL_BORROW); /* the tensor owns out now: free_data is its release */
    return 1;
}

static int host_bad_push(lua_State *L)
{
    nnrepl_tensor r = {.ndim = -1};
    nnrepl_pushtensor(L, &r, NNREPL_COPY); /* raises */
    return 1;
}

static int host_reenter(lua_State *L)
{
    int st = nnrepl_dostring(current, "reentered = (reentered or 0) + 1");
    lua_pushboolean(L, st == NNREPL_OK);
    return 1;
}

static void test_register(nnrepl_State *S)
{
    current = S;
    CHECK(nnrepl_register(S, "host.scale", host_scale) == NNREPL_OK, "%s", nnrepl_error(S));
    CHECK(nnrepl_register(S, "deep.er.bad_push", host_bad_push) == NNREPL_OK);
    CHECK(nnrepl_register(S, "reenter", host_reenter) == NNREPL_OK);
    CHECK(nnrepl_register(S, "math.pi.f", host_reenter) == NNREPL_ERRARG && contains(nnrepl_error(S), "math.pi"));
    CHECK(nnrepl_register(S, "", host_reenter) == NNREPL_ERRARG);
    CHECK(nnrepl_register(S, "x", NULL) == NNREPL_ERRARG);
    RUN(S, "local y = host.scale(torch.tensor({1, 2, 3, 4}, {dtype = torch.float32}):view(2, 2):select(1, 0), 2)\n"
           "assert(y:sum():item() == 8 and y.dtype == torch.float32, tostring(y))");
    RUN(S, "assert(not pcall(host.scale, 3, 1))");
    int st = nnrepl_dostring(S, "deep.er.bad_push()");
    CHECK(st == NNREPL_ERRRUN && contains(nnrepl_error(S), "ndim"), "%s", nnrepl_error(S));
    RUN(S, "assert(reenter() and reenter() and reentered == 2)");
    CHECK(lua_gettop(nnrepl_lua(S)) == 0);
}

/* ---- interrupts ---- */

static atomic_int started;
static double interrupted_at;

static int host_started(lua_State *L)
{
    (void)L;
    atomic_store(&started, 1);
    return 0;
}

static void *interrupter(void *arg)
{
    nnrepl_State *S = arg;
    while (!atomic_load(&started)) usleep(1000);
    usleep(20000); /* well into the loop */
    interrupted_at = now();
    nnrepl_interrupt(S);
    return NULL;
}

static void interrupt_case(nnrepl_State *S, const char *code)
{
    pthread_t th;
    atomic_store(&started, 0);
    pthread_create(&th, NULL, interrupter, S);
    int st = nnrepl_dostring(S, code);
    double elapsed = now() - interrupted_at;
    pthread_join(th, NULL);
    CHECK(st == NNREPL_ERRINTERRUPTED, "%s -> %d %s", code, st, nnrepl_error(S));
    CHECK(contains(nnrepl_error(S), "interrupted"), "%s", nnrepl_error(S));
    CHECK(elapsed < 0.1, "stopped %.3f s after the interrupt", elapsed);
    CHECK(lua_gettop(nnrepl_lua(S)) == 0);
}

static void test_interrupt(nnrepl_State *S)
{
    alarm(60); /* an interrupt that does not work ends the test instead of hanging it */
    nnrepl_register(S, "started", host_started);
    interrupt_case(S, "started() while true do end");
    /* usable at once, and not interrupted again */
    RUN(S, "local n = 0 for i = 1, 1000000 do n = n + i end assert(n == 500000500000)");
    /* a pcall in the script does not hold the interrupt */
    interrupt_case(S, "started() while true do pcall(function() while true do end end) end");
    /* tensor work in the loop */
    interrupt_case(S, "started() local x = torch.ones(8) while true do x = x + 1 end");
    /* through nnrepl_call */
    RUN(S, "function spin() started() while true do end end");
    pthread_t th;
    atomic_store(&started, 0);
    pthread_create(&th, NULL, interrupter, S);
    int st = nnrepl_call(S, "spin", 0, 0);
    pthread_join(th, NULL);
    CHECK(st == NNREPL_ERRINTERRUPTED, "%d %s", st, nnrepl_error(S));
    RUN(S, "assert(torch.ones(2):sum():item() == 2)");

    /* with nothing running, an interrupt does nothing */
    nnrepl_interrupt(S);
    RUN(S, "local n = 0 for i = 1, 100000 do n = n + 1 end");
    alarm(0);
}

/* CUDA descriptors, where a GPU is present: device pointers go out and come back. */
static void test_cuda(nnrepl_State *S)
{
    lua_State *L = nnrepl_lua(S);
    RUN(S, "has_cuda = torch.cuda.is_available()");
    lua_getglobal(L, "has_cuda");
    int has = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (!has) {
        printf("test_cuda: no GPU, skipped\n");
        return;
    }
    RUN(S, "g = torch.arange(6, {dtype = torch.float32}):cuda():view(2, 3)");
    nnrepl_tensor d;
    CHECK(nnrepl_get_global_tensor(S, "g", &d) == NNREPL_OK, "%s", nnrepl_error(S));
    CHECK(d.device == NNREPL_CUDA && d.device_index >= 0 && d.ndim == 2 && d.strides[0] == 3);
    releases = 0;
    d.release = count_release;
    d.release_ctx = &releases;
    /* the transpose of g, borrowed: device memory shared with g */
    int64_t tshape[] = {3, 2}, tstrides[] = {1, 3};
    d.shape = tshape, d.strides = tstrides;
    CHECK(nnrepl_set_global_tensor(S, "gb", &d, NNREPL_BORROW) == NNREPL_OK, "%s", nnrepl_error(S));
    CHECK(nnrepl_set_global_tensor(S, "gc", &d, NNREPL_COPY) == NNREPL_OK, "%s", nnrepl_error(S));
    RUN(S, "assert(gb.device.type == 'cuda' and gb:cpu():eq(g:t():cpu()):all():item())\n"
           "assert(gc:is_contiguous() and gc:cpu():eq(g:t():cpu()):all():item())\n"
           "g:mul_(2); torch.cuda.synchronize()\n"
           "assert(gb[2][1]:item() == 10 and gc[2][1]:item() == 5)");
    RUN(S, "gb = nil; collectgarbage(); collectgarbage()");
    CHECK(releases == 1, "CUDA borrow released %d times", releases);
    d.device_index = 99;
    CHECK(nnrepl_push_tensor(S, &d, NNREPL_BORROW) == NNREPL_ERRARG && contains(nnrepl_error(S), "device_index"));
    RUN(S, "g = nil; gc = nil");
}

int main(void)
{
    CHECK(strcmp(nnrepl_version(), "0.1.0") == 0);
    test_example_host();
    test_open_close();
    nnrepl_State *S = nnrepl_open();
    CHECK(S != NULL, "%s", nnrepl_error(NULL));
    if (!S) return CHECK_REPORT();
    test_errors(S);
    test_borrow_release();
    test_copy(S);
    test_round_trip(S);
    test_call(S);
    test_register(S);
    test_interrupt(S);
    test_cuda(S);
    nnrepl_close(S);
    return CHECK_REPORT();
}
