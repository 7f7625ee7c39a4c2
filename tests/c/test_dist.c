/* torch.distributed's C parts in one process: the TCP and file stores (values,
 * counters, timeouts, waiting across threads), post-accumulate-grad hooks (once
 * per pass, after the last accumulation), rendezvous errors, and a one-rank gloo
 * group: collectives on strided tensors and DDP's bucket layout and reduction. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "autograd.h"
#include "check.h"
#include "dist/net.h"
#include "dist/pg.h"
#include "dist/reducer.h"
#include "ops.h"

static bool mentions(const char *what) { return strstr(nn_last_error(), what) != NULL; }

static nn_tensor *filled(int nd, const int64_t *shape, nn_dtype dt, double start)
{
    nn_tensor *t = nn_empty(nd, shape, dt, NN_DEVICE_CPU);
    for (int64_t i = 0; i < nn_numel(t); i++) nn_store_f64((char *)nn_data(t) + i * nn_dtype_size(dt), dt, start + (double)i);
    return t;
}

static double at(const nn_tensor *t, int64_t i)
{
    int64_t idx[NN_MAX_DIMS] = {0};
    for (int d = t->ndim - 1; d >= 0; d--) idx[d] = i % t->shape[d], i /= t->shape[d];
    return nn_get_f64(t, idx);
}

/* ---- stores ---- */

typedef struct { nn_store *s; const char *key; double delay; } setter_arg;

static void *late_set(void *p)
{
    setter_arg *a = p;
    struct timespec ts = {0, (long)(a->delay * 1e9)};
    nanosleep(&ts, NULL);
    nn_store_set(a->s, a->key, "late", 4);
    return NULL;
}

static void store_checks(const char *name, nn_store *a, nn_store *b)
{
    CHECK(a && b, "%s: made", name);
    if (!a || !b) return;
    CHECK(nn_store_set(a, "k1", "hello", 5) == NN_OK, "%s: set", name);
    void *v = NULL;
    size_t n = 0;
    CHECK(nn_store_get(b, "k1", &v, &n) == NN_OK && n == 5 && !memcmp(v, "hello", 5), "%s: get from the other client", name);
    free(v);
    CHECK(nn_store_set(b, "k1", "", 0) == NN_OK && nn_store_get(a, "k1", &v, &n) == NN_OK && n == 0, "%s: overwrite with empty", name);
    free(v);
    int64_t r = 0;
    CHECK(nn_store_add(a, "ctr", 5, &r) == NN_OK && r == 5, "%s: add to a new counter", name);
    CHECK(nn_store_add(b, "ctr", -2, &r) == NN_OK && r == 3, "%s: add from the other client (%lld)", name, (long long)r);
    bool there = true;
    CHECK(nn_store_check(a, "nope", &there) == NN_OK && !there, "%s: check a missing key", name);
    CHECK(nn_store_check(b, "ctr", &there) == NN_OK && there, "%s: check a key", name);
    double t0 = nn_net_now();
    nn_status st = a->ops->get(a, "missing", 0.3, &v, &n);
    double took = nn_net_now() - t0;
    CHECK(st != NN_OK && mentions("timed out after 0.3 s") && mentions("'missing'") && mentions(a->desc), "%s: get times out: %s", name, nn_last_error());
    CHECK(took >= 0.25 && took < 3, "%s: timeout took %g s", name, took);
    CHECK(nn_store_set(a, "after", "x", 1) == NN_OK && nn_store_get(a, "after", &v, &n) == NN_OK && n == 1, "%s: usable after a timeout", name);
    free(v);
    /* a key set later, from another thread, wakes the waiter */
    setter_arg arg = {b, "later", 0.2};
    pthread_t th;
    pthread_create(&th, NULL, late_set, &arg);
    const char *keys[] = {"k1", "later"};
    CHECK(nn_store_wait(a, keys, 2, 5) == NN_OK, "%s: wait for a key set later: %s", name, nn_last_error());
    pthread_join(th, NULL);
    char big[100000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7);
    CHECK(nn_store_set(b, "big", big, sizeof big) == NN_OK && nn_store_get(a, "big", &v, &n) == NN_OK && n == sizeof big && !memcmp(v, big, n), "%s: a large value", name);
    free(v);
}

static void test_stores(void)
{
    nn_store *server = nn_store_tcp("127.0.0.1", 0, true, 5);
    int port = nn_store_tcp_port(server);
    CHECK(port > 0, "the server's port");
    nn_store *client = nn_store_tcp("127.0.0.1", port, false, 5);
    CHECK(client && !strcmp(nn_store_local_addr(client), "127.0.0.1"), "the client's local address");
    store_checks("tcp", server, client);
    nn_store_free(client);
    nn_store_free(server);

    char err[256];
    int fd = nn_net_listen("127.0.0.1", 0, &port, err, sizeof err);
    close(fd); /* nobody listens there now */
    double t0 = nn_net_now();
    nn_store *none = nn_store_tcp("127.0.0.1", port, false, 0.4);
    CHECK(!none && mentions("cannot connect") && mentions("Connection refused") && nn_net_now() - t0 >= 0.3, "no server: %s", nn_last_error());

    char path[] = "/tmp/nnrepl_test_store_XXXXXX";
    int tfd = mkstemp(path);
    close(tfd);
    nn_store *f1 = nn_store_file(path, 5), *f2 = nn_store_file(path, 5);
    store_checks("file", f1, f2);
    CHECK(nn_store_file_path(f1) && !strcmp(nn_store_file_path(f1), path), "file store path");
    nn_store_free(f1);
    nn_store_free(f2);
    remove(path);
}

/* ---- hooks ---- */

typedef struct { int calls; double grad0; int freed; } hook_state;

static nn_status count_hook(nn_tensor *leaf, void *ctx)
{
    hook_state *h = ctx;
    h->calls++;
    h->grad0 = leaf->grad ? at(leaf->grad, 0) : -1;
    return NN_OK;
}

static void free_state(void *ctx) { ((hook_state *)ctx)->freed++; }

static nn_status failing_hook(nn_tensor *leaf, void *ctx) { return nn_error(NN_ERR_RUNTIME, "hook says no"); }

static void test_hooks(void)
{
    int64_t shape[1] = {3};
    nn_tensor *w = filled(1, shape, NN_F32, 1), *u = filled(1, shape, NN_F32, 5);
    nn_requires_grad_(w, true);
    nn_requires_grad_(u, true);
    hook_state hw = {0}, hu = {0};
    int64_t h1 = nn_add_post_accumulate_grad_hook(w, count_hook, &hw, free_state);
    nn_add_post_accumulate_grad_hook(u, count_hook, &hu, free_state);
    CHECK(h1 > 0, "a hook handle");
    /* loss = sum(w * w + w) + sum(u * 0) with w used three times: one call, after all of w's gradient */
    nn_tensor *ww = nn_binary(NN_OP_mul, w, w), *s = nn_binary(NN_OP_add, ww, w);
    nn_tensor *loss = nn_reduce(NN_OP_sum, s, 1, false);
    CHECK(nn_backward(loss, NULL, false) == NN_OK, "backward");
    CHECK(hw.calls == 1 && hw.grad0 == 3.0, "w's hook ran once with the full gradient (calls %d, grad %g)", hw.calls, hw.grad0);
    CHECK(hu.calls == 0, "a leaf outside the graph: no call");
    nn_release(loss);
    nn_release(s);
    nn_release(ww);
    nn_tensor *l2 = nn_reduce(NN_OP_sum, w, 1, false);
    nn_backward(l2, NULL, false);
    CHECK(hw.calls == 2 && hw.grad0 == 4.0, "a second pass calls again after accumulating (grad %g)", hw.grad0);
    nn_release(l2);
    nn_remove_grad_hook(w, h1);
    CHECK(hw.freed == 1, "removal frees the context");
    l2 = nn_reduce(NN_OP_sum, w, 1, false);
    nn_backward(l2, NULL, false);
    CHECK(hw.calls == 2, "a removed hook is not called");
    nn_release(l2);
    nn_add_post_accumulate_grad_hook(w, failing_hook, NULL, NULL);
    l2 = nn_reduce(NN_OP_sum, w, 1, false);
    CHECK(nn_backward(l2, NULL, false) != NN_OK && mentions("hook says no"), "a hook's error ends backward");
    nn_release(l2);
    nn_tensor *y = nn_binary(NN_OP_mul, u, u);
    CHECK(nn_add_post_accumulate_grad_hook(y, count_hook, &hu, NULL) == 0 && mentions("non-leaf"), "no hooks on non-leaf tensors");
    nn_release(y);
    nn_release(w);
    nn_release(u);
    CHECK(hu.freed == 1, "the tensor going frees its hooks' contexts");
}

/* ---- one-rank groups ---- */

static void test_group(void)
{
    CHECK(!nn_pg_init("gloo", "tcp://127.0.0.1", 0, 1, 5) && mentions("is not tcp://host:port"), "tcp:// without a port");
    CHECK(!nn_pg_init("gloo", "tcp://127.0.0.1:1", 0, -1, 5) && mentions("world_size is needed"), "tcp:// without world_size");
    CHECK(!nn_pg_init("gloo", "tcp://127.0.0.1:1", 3, 2, 5) && mentions("rank 3 is out of range"), "rank out of range");
    CHECK(!nn_pg_init("foo", "tcp://127.0.0.1:1", 0, 1, 5) && mentions("Invalid backend: 'foo'"), "unknown backend");
    CHECK(!nn_pg_init("gloo", "file://", 0, 1, 5) && mentions("needs a path"), "file:// without a path");

    char path[] = "/tmp/nnrepl_test_pg_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    remove(path);
    char method[128];
    snprintf(method, sizeof method, "file://%s?rank=0&world_size=1", path);
    nn_pg *pg = nn_pg_init("gloo", method, -1, -1, 10);
    CHECK(pg != NULL, "a one-rank gloo group over a file store: %s", pg ? "" : nn_last_error());
    if (!pg) return;
    CHECK(pg->rank == 0 && pg->size == 1 && !strcmp(pg->ops->name, "gloo"), "rank and size from the query");

    int64_t shape[2] = {3, 4};
    nn_tensor *base = filled(2, shape, NN_F32, 1), *t = nn_transpose(base, 0, 1); /* not contiguous */
    nn_work *w = nn_dist_all_reduce(pg, t, NN_REDUCE_AVG);
    CHECK(w && nn_work_wait(w) == NN_OK && at(t, 1) == 5.0 && at(base, 11) == 12.0, "all_reduce AVG of a transposed view (world 1)");
    CHECK(w && nn_work_is_completed(w), "completed");
    nn_work_release(w);
    w = nn_dist_all_reduce(pg, t, NN_REDUCE_AVG + 10);
    CHECK(!w && mentions("unknown reduce op"), "a bad op");
    nn_tensor *cat = nn_empty(1, (int64_t[]){12}, NN_F32, NN_DEVICE_CPU);
    w = nn_dist_all_gather_into_tensor(pg, cat, t);
    CHECK(w && nn_work_wait(w) == NN_OK && at(cat, 1) == 5.0, "all_gather_into_tensor of a view");
    nn_work_release(w);
    nn_release(cat);
    w = nn_dist_send(pg, t, 0, 0);
    CHECK(!w && mentions("itself"), "send to oneself");
    /* a work's tensors are let go in this thread by nn_work_release, never on the group's thread
     * (tensor counts are not atomic; DDP's gloo test once corrupted the heap that way) */
    nn_tensor *v = filled(1, (int64_t[]){16}, NN_F32, 1);
    bool counted = true;
    for (int i = 0; i < 20000 && counted; i++) {
        nn_work *wv = nn_dist_all_reduce(pg, v, NN_REDUCE_SUM);
        counted = wv && nn_work_wait(wv) == NN_OK;
        nn_work_release(wv);
        for (int k = 0; k < 64; k++) nn_release(nn_retain(v));
        counted = counted && v->refcount == 1;
    }
    CHECK(counted, "a tensor's count stays right while works finish on the group's thread (%d)", v->refcount);
    nn_release(v);

    /* DDP's reducer: buckets from the last parameter, by size and dtype */
    int64_t s1[1] = {300000}, s2[1] = {10}, s3[2] = {400, 1000};
    nn_tensor *p[4] = {filled(1, s1, NN_F32, 0), filled(1, s2, NN_F64, 0), filled(1, s2, NN_F32, 0), filled(2, s3, NN_F32, 0)};
    for (int i = 0; i < 4; i++) nn_requires_grad_(p[i], true);
    nn_reducer_opts o = {.bucket_cap_bytes = 2u << 20, .first_bucket_bytes = 1u << 20};
    nn_reducer *r = nn_reducer_new(pg, p, 4, &o);
    int sizes[4], idx[4];
    int nb = r ? nn_reducer_buckets(r, sizes, idx) : 0;
    /* backwards: p3 (1.6 MB) fills the first float32 bucket; p2 and p0 share the next; p1 (float64) has its own */
    CHECK(nb == 3 && sizes[0] == 1 && idx[0] == 3 && sizes[1] == 2 && idx[1] == 2 && idx[2] == 0 && sizes[2] == 1 && idx[3] == 1,
          "bucket layout: %d buckets", nb);
    nn_tensor *sum = NULL;
    for (int i = 0; i < 4; i++) {
        nn_tensor *si = nn_reduce(NN_OP_sum, p[i], (1u << p[i]->ndim) - 1, false), *c = nn_to_dtype(si, NN_F32);
        nn_tensor *n2 = sum ? nn_binary(NN_OP_add, sum, c) : nn_retain(c);
        nn_release(sum);
        nn_release(si);
        nn_release(c);
        sum = n2;
    }
    CHECK(nn_reducer_prepare_forward(r) == NN_OK && nn_reducer_prepare_backward(r, &sum, 1) == NN_OK, "prepare");
    CHECK(nn_backward(sum, NULL, false) == NN_OK, "backward through the reducer: %s", nn_last_error());
    bool ok = true;
    for (int i = 0; i < 4; i++) ok = ok && p[i]->grad && at(p[i]->grad, 0) == 1.0 && at(p[i]->grad, nn_numel(p[i]) - 1) == 1.0;
    CHECK(ok, "averaged gradients (world 1: unchanged)");
    nn_release(sum);
    /* a parameter left out of a backward: the next forward says so */
    nn_tensor *only = nn_reduce(NN_OP_sum, p[0], 1, false);
    nn_reducer_prepare_backward(r, &only, 1);
    nn_backward(only, NULL, false);
    CHECK(nn_reducer_prepare_forward(r) != NN_OK && mentions("Expected to have finished reduction") && mentions(": 1 2 3"),
          "unused parameters named: %s", nn_last_error());
    nn_release(only);
    nn_reducer_free(r);
    for (int i = 0; i < 4; i++) nn_release(p[i]);
    nn_release(t);
    nn_release(base);
    nn_pg_destroy(pg);
    CHECK(access(path, F_OK) != 0, "the last rank out removes the rendezvous file");
}

int main(void)
{
    test_stores();
    test_hooks();
    test_group();
    return CHECK_REPORT();
}
