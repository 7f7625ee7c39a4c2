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
    FILE *p = popen(EMBED_HOST " 2>&1", "r");
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

    st = nnrepl_dostring(S, "kept = kept + 1\nlocal function inner() error('boom') end\ninner()");
    CHECK(st == NNREPL_ERRRUN, "%d", st);
    CHECK(contains(nnrepl_error(S), "boom"), "%s", nnrepl_error(S));
    CHECK(contains(nnrepl_error(S), "stack traceback:") && contains(nnrepl_error(S), "inner"), "%s",
          nnrepl_error(S));
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
                                  "torch.int64",   "torch.int32",   "torch.uint8",   "torch.bool"};
    _Alignas(8) unsigned char buf[6 * 8];
    for (int dt = NNREPL_FLOAT32; dt <= NNREPL_BOOL; dt++) {
        /* a 2x3 transposed view of a 3x2 buffer holding 0..5 (bool: i % 2) */
        size_t es = nn_dtype_size((nn_dtype)dt);
        for (int i = 0; i < 6; i++) nn_store_f64(buf + i * es, (nn_dtype)dt, dt == NNREPL_BOOL ? i % 2 : i);
        int64_t shape[] = {2, 3}, strides[] = {1, 2};
        nnrepl_tensor d = {.data = buf, .ndim = 2, .shape = shape, .strides = strides, .dtype = (nnrepl_dtype)dt};
        CHECK(nnrepl_push_tensor(S, &d, NNREPL_BORROW) == NNREPL_OK, "%s", nnrepl_error(S));
        nnrepl_tensor got;
        CHECK(nnrepl_get_tensor(S, -1, &got) == NNREPL_OK, "%s", nnrepl_error(S));
        CHECK(got.data == buf && got.dtype == dt && got.ndim == 2 && got.shape[0] == 2 && got.shape[1] == 3 &&
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
    b.shape = shape_ok_dummy();
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
