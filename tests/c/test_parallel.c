/* The CPU worker pool (engine/cpu/parallel.h): ranges cover [0, n) once each, contiguous and in
 * order; the first failing range's error and message reach the caller; nested calls, calls from
 * other threads and small work run inline; ops from several threads at once; a DataLoader's
 * worker threads; fork() (the child runs parallel work with no inherited workers). Results of the
 * kernels against their serial run are in tests/lua/test_parallel.lua. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cpu/parallel.h"
#include "data/loader.h"
#include "ops.h"

#define N 1000
static int hits[N];
static pthread_t by[N];

typedef struct { int64_t fail_at[2]; } job;

static nn_status mark(int64_t b, int64_t e, void *ctx)
{
    const job *j = ctx;
    for (int64_t i = b; i < e; i++) {
        __atomic_add_fetch(&hits[i], 1, __ATOMIC_RELAXED);
        by[i] = pthread_self();
    }
    for (int k = 0; j && k < 2; k++)
        if (j->fail_at[k] >= b && j->fail_at[k] < e) return nn_error(NN_ERR_RUNTIME, "bad %lld", (long long)j->fail_at[k]);
    return NN_OK;
}

static void reset(void) { memset(hits, 0, sizeof hits), memset(by, 0, sizeof by); }

/* the number of different threads that ran [0, N), each index exactly once and ranges contiguous */
static int threads_used(bool *once)
{
    int runs = 1;
    *once = true;
    for (int i = 0; i < N; i++) {
        if (hits[i] != 1) *once = false;
        if (i && !pthread_equal(by[i], by[i - 1])) runs++;
    }
    return runs;
}

static void test_ranges(void)
{
    bool once;
    nn_parallel_set_threads(4);
    reset();
    CHECK(nn_parallel_for(N, 10, mark, NULL) == NN_OK);
    CHECK(threads_used(&once) == 4 && once, "4 ranges, each index once");
    CHECK(pthread_equal(by[0], pthread_self()), "the caller runs the first range");
    reset();
    CHECK(nn_parallel_for(N, 400, mark, NULL) == NN_OK);
    CHECK(threads_used(&once) == 2 && once, "grain 400: 2 ranges");
    reset();
    CHECK(nn_parallel_for(N, 600, mark, NULL) == NN_OK);
    CHECK(threads_used(&once) == 1 && once && pthread_equal(by[N - 1], pthread_self()), "n < 2 grain: inline");
    nn_parallel_set_threads(1);
    reset();
    nn_parallel_for(N, 1, mark, NULL);
    CHECK(threads_used(&once) == 1 && once, "1 thread: inline");
    nn_parallel_set_threads(3); /* 3 of the 4 threads */
    reset();
    nn_parallel_for(N, 1, mark, NULL);
    CHECK(threads_used(&once) == 3 && once, "3 threads");
    nn_parallel_set_threads(4);
}

static void test_errors(void)
{
    /* ranges of 250: indices 600 and 900 fail in ranges 2 and 3; the first one's message wins */
    for (int rep = 0; rep < 20; rep++) {
        nn_clear_error();
        job j = {{900, 600}};
        nn_status st = nn_parallel_for(N, 10, mark, &j);
        CHECK(st == NN_ERR_RUNTIME && !strcmp(nn_last_error(), "bad 600"), "%d %s", st, nn_last_error());
    }
    job j0 = {{999, 3}}; /* the caller's own range */
    CHECK(nn_parallel_for(N, 10, mark, &j0) == NN_ERR_RUNTIME && !strcmp(nn_last_error(), "bad 3"), "%s", nn_last_error());
    job none = {{-1, -1}};
    CHECK(nn_parallel_for(N, 10, mark, &none) == NN_OK);
}

static int nested_ok;

/* a call inside a range runs inline on the thread running the range */
static nn_status nested(int64_t b, int64_t e, void *ctx)
{
    (void)ctx, (void)e;
    if (b == 0) {
        reset();
        nn_parallel_for(N, 1, mark, NULL);
        bool once;
        __atomic_store_n(&nested_ok, threads_used(&once) == 1 && once && pthread_equal(by[0], pthread_self()), __ATOMIC_RELAXED);
    }
    return NN_OK;
}

static void *from_other_thread(void *arg)
{
    (void)arg;
    reset();
    nn_parallel_for(N, 1, mark, NULL);
    bool once;
    return (void *)(intptr_t)(threads_used(&once) == 1 && once && pthread_equal(by[0], pthread_self()));
}

static void test_inline(void)
{
    nn_parallel_for(N, 10, nested, NULL);
    CHECK(nested_ok, "nested call inline");
    pthread_t t;
    void *ok;
    pthread_create(&t, NULL, from_other_thread, NULL);
    pthread_join(t, &ok);
    CHECK(ok, "a call from another thread runs on it alone");
}

/* ---- ops from several threads: each result as the serial one ---- */

static bool same(nn_tensor *a, nn_tensor *b)
{
    return a && b && a->dtype == b->dtype && nn_numel(a) == nn_numel(b) && nn_is_contiguous(a) && nn_is_contiguous(b) &&
           !memcmp(nn_data(a), nn_data(b), (size_t)nn_numel(a) * nn_dtype_size(a->dtype));
}

static nn_tensor *X, *Y, *REF;

static nn_tensor *work(void) /* exp(x) * y + x: three large ops */
{
    nn_tensor *e = nn_unary(NN_OP_exp, X), *m = nn_binary(NN_OP_mul, e, Y), *r = nn_binary(NN_OP_add, m, X);
    nn_release(e), nn_release(m);
    return r;
}

static void *work_thread(void *arg)
{
    (void)arg;
    int ok = 1;
    for (int k = 0; k < 5; k++) {
        nn_tensor *r = work();
        ok &= same(r, REF);
        nn_release(r);
    }
    return (void *)(intptr_t)ok;
}

static void test_threads(void)
{
    int64_t n = 300000;
    X = nn_randn(1, &n, NN_F32, NN_DEVICE_CPU), Y = nn_randn(1, &n, NN_F32, NN_DEVICE_CPU);
    nn_parallel_set_threads(1);
    REF = work();
    nn_parallel_set_threads(4);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work_thread, NULL);
    void *ok_main = work_thread(NULL), *ok[2];
    for (int i = 0; i < 2; i++) pthread_join(t[i], &ok[i]);
    CHECK(ok_main && ok[0] && ok[1], "the same results from the main thread (4 threads) and two others (serial)");
}

/* ---- a DataLoader's workers fetch while the main thread runs large ops ---- */

static void test_loader(void)
{
    int64_t shape[2] = {64, 40000};
    nn_tensor *data = nn_randn(2, shape, NN_F32, NN_DEVICE_CPU);
    nn_data_source *s = nn_data_source_new();
    nn_data_add_field(s, data, NULL, 0);
    int64_t idx[64], off[9];
    for (int i = 0; i < 64; i++) idx[i] = (i * 37) % 64;
    for (int k = 0; k <= 8; k++) off[k] = 8 * k;
    nn_loader *l = nn_loader_new(s, 3, 2, false, 0);
    CHECK(!nn_loader_start(l, idx, off, 8));
    int count = 0, bad = 0;
    for (;;) {
        nn_tensor *out, *ref, *r = work();
        bool done;
        bad += !same(r, REF);
        nn_release(r);
        if (nn_loader_next(l, &out, &done) || done) break;
        nn_data_fetch(s, idx + off[count], 8, false, &ref);
        bad += !same(out, ref);
        nn_release(out), nn_release(ref);
        count++;
    }
    CHECK(count == 8 && bad == 0, "%d batches, %d mismatches", count, bad);
    nn_loader_free(l);
    nn_data_source_release(s);
    nn_release(data);
}

/* ---- fork: the child has no workers; its parallel work must not wait on them ---- */

static int child_work(void)
{
    alarm(30); /* a hang is a failure, not a stuck test */
    reset();
    if (nn_parallel_for(N, 1, mark, NULL)) return 1;
    bool once;
    if (threads_used(&once) != 4 || !once) return 2;
    nn_tensor *r = work();
    int rc = same(r, REF) ? 0 : 3;
    nn_release(r);
    return rc;
}

static int wait_child(pid_t pid)
{
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

static void *fork_from_thread(void *arg)
{
    (void)arg;
    pid_t pid = fork();
    if (pid == 0) _exit(child_work());
    return (void *)(intptr_t)wait_child(pid);
}

static void test_fork(void)
{
    nn_parallel_set_threads(4);
    nn_parallel_for(N, 1, mark, NULL); /* the workers exist */
    pid_t pid = fork();
    if (pid == 0) _exit(child_work());
    int rc = wait_child(pid);
    CHECK(rc == 0, "child of the main thread: exit %d", rc);
    pthread_t t;
    void *rc2;
    pthread_create(&t, NULL, fork_from_thread, NULL);
    pthread_join(t, &rc2);
    CHECK(rc2 == 0, "child of another thread: exit %d", (int)(intptr_t)rc2);
    bool once;
    reset();
    nn_parallel_for(N, 1, mark, NULL);
    CHECK(threads_used(&once) == 4 && once, "the parent's pool still works");
}

int main(void)
{
    test_ranges();
    test_errors();
    test_inline();
    test_threads();
    test_loader();
    test_fork();
    nn_release(X), nn_release(Y), nn_release(REF);
    return CHECK_REPORT();
}
