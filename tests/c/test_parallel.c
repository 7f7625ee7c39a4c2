/* The CPU worker pool (engine/cpu/parallel.h): chunks cover [0, n) once each, each on one thread,
 * and every thread takes some when they are slow; the first failing chunk's error and message reach the caller; nested calls, calls from
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

typedef struct { int64_t fail_at[2]; bool slow; } job;

static nn_status mark(int64_t b, int64_t e, void *ctx)
{
    const job *j = ctx;
    if (j && j->slow) usleep(2000); /* long enough for every worker to take chunks */
    for (int64_t i = b; i < e; i++) {
        __atomic_add_fetch(&hits[i], 1, __ATOMIC_RELAXED);
        by[i] = pthread_self();
    }
    for (int k = 0; j && k < 2; k++)
        if (j->fail_at[k] >= b && j->fail_at[k] < e) return nn_error(NN_ERR_RUNTIME, "bad %lld", (long long)j->fail_at[k]);
    return NN_OK;
}

static void reset(void) { memset(hits, 0, sizeof hits), memset(by, 0, sizeof by); }

/* every index run once, chunk k = [N*k/chunks, N*(k+1)/chunks) on one thread; the number of
 * different threads that ran chunks */
static int check_chunks(int chunks, bool *ok)
{
    *ok = true;
    for (int i = 0; i < N; i++) *ok &= hits[i] == 1;
    for (int k = 0; k < chunks; k++)
        for (int64_t i = (int64_t)N * k / chunks + 1; i < (int64_t)N * (k + 1) / chunks; i++) *ok &= pthread_equal(by[i], by[i - 1]);
    pthread_t seen[64];
    int nseen = 0;
    for (int i = 0; i < N; i++) {
        int s = 0;
        while (s < nseen && !pthread_equal(seen[s], by[i])) s++;
        if (s == nseen && nseen < 64) seen[nseen++] = by[i];
    }
    return nseen;
}

static void test_ranges(void)
{
    bool ok;
    nn_parallel_set_threads(4);
    reset();
    CHECK(nn_parallel_for(N, 10, mark, NULL) == NN_OK);
    int used = check_chunks(16, &ok);
    CHECK(ok && used >= 1 && used <= 4, "16 chunks (4 a thread), each index once: %d threads", used);
    reset();
    job slow = {{-1, -1}, true};
    CHECK(nn_parallel_for(N, 10, mark, &slow) == NN_OK);
    used = check_chunks(16, &ok);
    CHECK(ok && used == 4, "slow chunks: every thread takes some (%d threads)", used);
    reset();
    CHECK(nn_parallel_for(N, 400, mark, &slow) == NN_OK);
    used = check_chunks(2, &ok);
    CHECK(ok && used == 2, "grain 400: 2 chunks (%d threads)", used);
    reset();
    CHECK(nn_parallel_for(N, 600, mark, NULL) == NN_OK);
    CHECK(check_chunks(1, &ok) == 1 && ok && pthread_equal(by[0], pthread_self()), "n < 2 grain: inline");
    nn_parallel_set_threads(1);
    reset();
    nn_parallel_for(N, 1, mark, &slow);
    CHECK(check_chunks(1, &ok) == 1 && ok && pthread_equal(by[0], pthread_self()), "1 thread: inline");
    nn_parallel_set_threads(3); /* 3 of the 4 threads */
    reset();
    nn_parallel_for(N, 1, mark, &slow);
    used = check_chunks(12, &ok);
    CHECK(ok && used == 3, "3 threads: %d", used);
    nn_parallel_set_threads(4);
}

static void test_errors(void)
{
    /* 16 chunks: indices 600 and 900 fail in chunks 9 and 14; the first one's message wins, whichever
     * thread ran it and whichever finished first */
    for (int rep = 0; rep < 20; rep++) {
        nn_clear_error();
        job j = {{900, 600}, rep % 2 == 1};
        nn_status st = nn_parallel_for(N, 10, mark, &j);
        CHECK(st == NN_ERR_RUNTIME && !strcmp(nn_last_error(), "bad 600"), "%d %s", st, nn_last_error());
    }
    job j0 = {{999, 3}, false}; /* the caller's own range */
    CHECK(nn_parallel_for(N, 10, mark, &j0) == NN_ERR_RUNTIME && !strcmp(nn_last_error(), "bad 3"), "%s", nn_last_error());
    job none = {{-1, -1}, false};
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
        bool ok;
        __atomic_store_n(&nested_ok, check_chunks(1, &ok) == 1 && ok && pthread_equal(by[0], pthread_self()), __ATOMIC_RELAXED);
    }
    return NN_OK;
}

static void *from_other_thread(void *arg)
{
    (void)arg;
    reset();
    nn_parallel_for(N, 1, mark, NULL);
    bool ok;
    return (void *)(intptr_t)(check_chunks(1, &ok) == 1 && ok && pthread_equal(by[0], pthread_self()));
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
    job slow = {{-1, -1}, true};
    if (nn_parallel_for(N, 1, mark, &slow)) return 1;
    bool ok;
    if (check_chunks(16, &ok) != 4 || !ok) return 2;
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
    bool ok;
    reset();
    job slow = {{-1, -1}, true};
    nn_parallel_for(N, 1, mark, &slow);
    CHECK(check_chunks(16, &ok) == 4 && ok, "the parent's pool still works");
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
