/* The CPU worker pool (parallel.h). One job at a time: the owner publishes it under a mutex and
 * bumps `gen`; the job's chunks, fixed ranges of [0, n), are claimed one at a time from `claim`
 * by the owner and by whichever workers are awake, so a worker that is slow to get a CPU (a busy
 * machine) leaves its share to the others instead of holding the op up; the owner returns when
 * `finished` counts every chunk. Between jobs a worker spins a while on `gen`, yielding, then
 * sleeps on a condition variable; the owner likewise spins on `finished` before sleeping. */
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
#define CHUNKS_PER_THREAD 4

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t owner;
    bool owned;       /* owner is set (the constructor ran) */
    bool busy;        /* the owner is inside nn_parallel_for: a nested call runs inline */
    int want;         /* torch.get_num_threads() */
    int nworkers;     /* worker threads running */
    int sized;        /* the largest want they were started for (fewer when the system refused more) */
    int sleepers;     /* workers waiting on wake (the others spin on gen) */
    bool owner_waits; /* the owner waits on done (else it spins on finished) */
    /* the job: set under mu; claim and finished are atomics */
    uint64_t gen;
    uint64_t claim;   /* the job's gen (low 32 bits) << 32 | the next chunk to run */
    int nchunks, finished;
    int threads;      /* the owner and workers 1 .. threads-1 take part (torch.get_num_threads() may be below the pool's size) */
    int64_t n;
    nn_parallel_fn fn;
    void *ctx;
    int err_chunk;    /* the first failing chunk, or nchunks */
    nn_status err;
    char msg[1024];
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

static uint64_t born[MAX_WORKERS + 1]; /* gen when worker k was started: a job published later is its */

/* Spin up to SPIN_NS for *p to leave the value v (a worker's wait for a job) or, with until, to
 * reach it (the owner's wait for the chunks in flight): the next op of a sequence comes sooner
 * than a sleeping thread wakes (a futex wake costs tens of microseconds, more in a VM). It yields
 * now and then, so that a thread sharing this CPU runs. */
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
            sched_yield();
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > SPIN_NS) return;
        }
    }
}

/* Run chunks of the job of generation g until none is left; fn, ctx, n, nchunks are that job's
 * (read under mu when it was seen). A chunk's error is kept if it comes before the one kept. */
static void run_chunks(uint64_t g, nn_parallel_fn fn, void *ctx, int64_t n, int nchunks)
{
    uint64_t tag = (g & 0xffffffffu) << 32, v = __atomic_load_n(&P.claim, __ATOMIC_ACQUIRE);
    for (;;) {
        if ((v & ~0xffffffffull) != tag || (int)(v & 0xffffffffu) >= nchunks) return; /* the job is over or all taken */
        if (!__atomic_compare_exchange_n(&P.claim, &v, v + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
        int c = (int)(v & 0xffffffffu);
        nn_status st = fn((int64_t)((__int128)n * c / nchunks), (int64_t)((__int128)n * (c + 1) / nchunks), ctx);
        if (st) {
            pthread_mutex_lock(&P.mu);
            if (c < P.err_chunk) {
                P.err_chunk = c, P.err = st;
                strncpy(P.msg, nn_last_error(), sizeof P.msg - 1);
                P.msg[sizeof P.msg - 1] = 0;
            }
            pthread_mutex_unlock(&P.mu);
        }
        if (__atomic_add_fetch(&P.finished, 1, __ATOMIC_ACQ_REL) == nchunks) {
            pthread_mutex_lock(&P.mu);
            if (P.owner_waits) pthread_cond_signal(&P.done);
            pthread_mutex_unlock(&P.mu);
        }
        v = __atomic_load_n(&P.claim, __ATOMIC_ACQUIRE);
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
        if (id >= P.threads) {
            pthread_mutex_unlock(&P.mu);
            continue;
        }
        nn_parallel_fn fn = P.fn;
        void *ctx = P.ctx;
        int64_t n = P.n;
        int nchunks = P.nchunks;
        pthread_mutex_unlock(&P.mu);
        run_chunks(seen, fn, ctx, n, nchunks);
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

int nn_parallel_width(void)
{
    if (!P.owned || !pthread_equal(pthread_self(), P.owner) || P.busy) return 1;
    return nn_parallel_threads();
}

nn_status nn_parallel_for(int64_t n, int64_t grain, nn_parallel_fn fn, void *ctx)
{
    if (n <= 0) return NN_OK;
    if (grain < 1) grain = 1;
    int want = nn_parallel_width();
    if (n / grain < 2 || want < 2) return fn(0, n, ctx);
    if (P.sized < want) {
        add_workers(want);
        P.sized = want;
    }
    int threads = want < P.nworkers + 1 ? want : P.nworkers + 1;
    int64_t nc = n / grain < (int64_t)threads * CHUNKS_PER_THREAD ? n / grain : (int64_t)threads * CHUNKS_PER_THREAD;
    if (threads < 2) return fn(0, n, ctx);
    P.busy = true;
    pthread_mutex_lock(&P.mu);
    uint64_t g = P.gen + 1;
    P.n = n, P.nchunks = (int)nc, P.fn = fn, P.ctx = ctx, P.threads = threads;
    P.err_chunk = (int)nc, P.err = NN_OK;
    __atomic_store_n(&P.finished, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&P.claim, (g & 0xffffffffu) << 32, __ATOMIC_RELEASE);
    __atomic_store_n(&P.gen, g, __ATOMIC_RELEASE);
    if (P.sleepers) pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.mu);
    run_chunks(g, fn, ctx, n, (int)nc);
    spin(&P.finished, sizeof P.finished, (uint64_t)nc, true);
    pthread_mutex_lock(&P.mu);
    while (__atomic_load_n(&P.finished, __ATOMIC_ACQUIRE) < nc) {
        P.owner_waits = true;
        pthread_cond_wait(&P.done, &P.mu);
    }
    P.owner_waits = false;
    nn_status st = P.err;
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
