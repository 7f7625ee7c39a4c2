/* The CPU worker pool (parallel.h). One job at a time, published under a mutex: the owner sets
 * it and bumps `gen`, worker k (1-based) runs range k if there is one, the owner runs range 0,
 * then waits until `pending` falls to 0. Between jobs a worker spins a while on `gen`, then
 * sleeps on a condition variable; the owner likewise spins on `pending` before sleeping. */
#include "parallel.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 255 /* set_num_threads(n) beyond this still reports n, but uses 256 threads */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t owner;
    bool owned;      /* owner is set (the constructor ran) */
    bool busy;       /* the owner is inside nn_parallel_for: a nested call runs inline */
    int want;        /* torch.get_num_threads() */
    int nworkers;    /* worker threads running */
    int sized;       /* the largest want they were started for (fewer when the system refused more) */
    int sleepers;    /* workers waiting on wake (the others spin on gen) */
    bool owner_waits; /* the owner waits on done (else it spins on pending) */
    /* the job, under mu */
    uint64_t gen;
    int nranges, pending;
    int64_t n;
    nn_parallel_fn fn;
    void *ctx;
    int err_range;   /* the first failing range, or nranges */
    nn_status err;
    char msg[1024];
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

static uint64_t born[MAX_WORKERS + 1]; /* gen when worker k was started: a job published later is its */

static int64_t range_begin(int r) { return (int64_t)((__int128)P.n * r / P.nranges); }

/* under mu: keep range r's error if it comes before the one kept */
static void record(int r, nn_status st)
{
    if (st == NN_OK || r >= P.err_range) return;
    P.err_range = r;
    P.err = st;
    strncpy(P.msg, nn_last_error(), sizeof P.msg - 1);
    P.msg[sizeof P.msg - 1] = 0;
}

/* Spin up to SPIN_NS for *p to leave the value v (the wait for a new job) or, with until, to
 * reach it (the owner's wait for the workers): the next op of a sequence comes sooner than a
 * sleeping thread wakes (a futex wake costs tens of microseconds, more in a VM). */
#define SPIN_NS 50000
static void spin(const void *p, size_t size, uint64_t v, bool until)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 1;; i++) {
        uint64_t now = size == 8 ? __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE)
                                 : (uint64_t)__atomic_load_n((const int *)p, __ATOMIC_ACQUIRE);
        if ((now == v) == until) return;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (i % 64 == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > SPIN_NS) return;
        }
    }
}

static void *worker_main(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seen = born[id];
    for (;;) {
        spin(&P.gen, 8, seen, false);
        pthread_mutex_lock(&P.mu);
        while (P.gen == seen) {
            P.sleepers++;
            pthread_cond_wait(&P.wake, &P.mu);
            P.sleepers--;
        }
        seen = P.gen;
        if (id >= P.nranges) {
            pthread_mutex_unlock(&P.mu);
            continue;
        }
        int64_t b = range_begin(id), e = range_begin(id + 1);
        nn_parallel_fn fn = P.fn;
        void *ctx = P.ctx;
        pthread_mutex_unlock(&P.mu);
        nn_status st = fn(b, e, ctx);
        pthread_mutex_lock(&P.mu);
        record(id, st);
        if (__atomic_sub_fetch(&P.pending, 1, __ATOMIC_SEQ_CST) == 0 && P.owner_waits) pthread_cond_signal(&P.done);
        pthread_mutex_unlock(&P.mu);
    }
    return NULL;
}

/* Workers up to want - 1 (the owner is the other thread); fewer if the system refuses more. The
 * pool only grows: a smaller thread count leaves the extra workers asleep, so that switching
 * counts (torch.utils.benchmark's num_threads) starts no threads each time. Workers block every
 * signal, so that SIGINT and the like still reach the interpreter's thread. */
static void add_workers(int want)
{
    int n = (want < MAX_WORKERS + 1 ? want : MAX_WORKERS + 1) - 1;
    if (n <= P.nworkers) return;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (; P.nworkers < n; P.nworkers++) {
        born[P.nworkers + 1] = P.gen;
        pthread_t t;
        if (pthread_create(&t, NULL, worker_main, (void *)(intptr_t)(P.nworkers + 1))) break;
        pthread_detach(t);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

nn_status nn_parallel_for(int64_t n, int64_t grain, nn_parallel_fn fn, void *ctx)
{
    if (n <= 0) return NN_OK;
    if (grain < 1) grain = 1;
    int want = __atomic_load_n(&P.want, __ATOMIC_RELAXED);
    int64_t nr = n / grain < want ? n / grain : want;
    if (nr < 2 || !P.owned || !pthread_equal(pthread_self(), P.owner) || P.busy) return fn(0, n, ctx);
    if (P.sized < want) {
        add_workers(want);
        P.sized = want;
    }
    if (nr > P.nworkers + 1) nr = P.nworkers + 1;
    if (nr < 2) return fn(0, n, ctx);
    P.busy = true;
    pthread_mutex_lock(&P.mu);
    P.n = n, P.nranges = (int)nr, P.fn = fn, P.ctx = ctx;
    __atomic_store_n(&P.pending, (int)nr - 1, __ATOMIC_RELAXED);
    P.err_range = (int)nr, P.err = NN_OK;
    __atomic_store_n(&P.gen, P.gen + 1, __ATOMIC_RELEASE);
    if (P.sleepers) pthread_cond_broadcast(&P.wake);
    int64_t e0 = range_begin(1);
    pthread_mutex_unlock(&P.mu);
    nn_status st = fn(0, e0, ctx);
    spin(&P.pending, sizeof P.pending, 0, true);
    pthread_mutex_lock(&P.mu);
    record(0, st);
    while (__atomic_load_n(&P.pending, __ATOMIC_ACQUIRE) > 0) {
        P.owner_waits = true;
        pthread_cond_wait(&P.done, &P.mu);
    }
    P.owner_waits = false;
    st = P.err;
    pthread_mutex_unlock(&P.mu);
    P.busy = false;
    return st ? nn_error(st, "%s", P.msg) : NN_OK;
}

int nn_parallel_threads(void) { return __atomic_load_n(&P.want, __ATOMIC_RELAXED); }
void nn_parallel_set_threads(int n) { __atomic_store_n(&P.want, n < 1 ? 1 : n, __ATOMIC_RELAXED); } /* resized on the next job */

/* fork(): the prepare handler holds mu so that the child's copy is consistent; the child has
 * only the forking thread, which becomes the owner of a pool with no workers yet. */
static void before_fork(void) { pthread_mutex_lock(&P.mu); }
static void after_fork_parent(void) { pthread_mutex_unlock(&P.mu); }
static void after_fork_child(void)
{
    pthread_mutex_unlock(&P.mu);
    pthread_cond_init(&P.wake, NULL);
    pthread_cond_init(&P.done, NULL);
    P.nworkers = P.sized = 0;
    P.busy = P.owner_waits = false;
    P.sleepers = 0;
    P.owner = pthread_self();
}

static int default_threads(void)
{
    const char *env = getenv("OMP_NUM_THREADS");
    char *end;
    long v = env ? strtol(env, &end, 10) : 0;
    if (env && end != env && *end == 0 && v >= 1 && v <= 1 << 20) return (int)v;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 1 && (online < 1 || CPU_COUNT(&set) < online))
        online = CPU_COUNT(&set);
    return online >= 1 ? (int)online : 1;
}

__attribute__((constructor)) static void pool_init(void)
{
    P.owner = pthread_self();
    P.owned = true;
    P.want = default_threads();
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}
