/* The "gloo" backend: CPU collectives through the Gloo shim (gloo_shim.h), loaded
 * with dlopen the first time a gloo group is made. The shim is looked for at
 * $NNREPL_GLOO_SHIM, next to the object holding the engine (the nnrepl executable,
 * libnnrepl.so, torch.so) and in ../lib from there, where the build put it, then
 * on the library path. Gloo listens on the interface that reaches the store's
 * server (GLOO_SOCKET_IFNAME picks another), 127.0.0.1 with a file store. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gloo_shim.h"
#include "pg.h"

#ifndef NNREPL_GLOO_SHIM_PATH
#define NNREPL_GLOO_SHIM_PATH ""
#endif
#define SHIM_NAME "libnnrepl_gloo.so"

static const nn_gloo_api *api;

static void *try_open(const char *path, char *tried, size_t len)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        size_t n = strlen(tried);
        snprintf(tried + n, len - n, "%s%s", n ? "; " : "", dlerror());
    }
    return h;
}

static nn_status load_shim(void)
{
    if (api) return NN_OK;
    char tried[2048] = "", path[4096];
    void *h = NULL;
    const char *env = getenv("NNREPL_GLOO_SHIM");
    if (env && *env) h = try_open(env, tried, sizeof tried);
    Dl_info info;
    if (!h && dladdr((void *)load_shim, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
        const char *slash = strrchr(info.dli_fname, '/');
        int dir = (int)(slash - info.dli_fname);
        snprintf(path, sizeof path, "%.*s/%s", dir, info.dli_fname, SHIM_NAME);
        h = try_open(path, tried, sizeof tried);
        if (!h) {
            snprintf(path, sizeof path, "%.*s/../lib/%s", dir, info.dli_fname, SHIM_NAME);
            h = try_open(path, tried, sizeof tried);
        }
    }
    if (!h && *NNREPL_GLOO_SHIM_PATH) h = try_open(NNREPL_GLOO_SHIM_PATH, tried, sizeof tried);
    if (!h) h = try_open(SHIM_NAME, tried, sizeof tried);
    if (!h) return nn_error(NN_ERR_RUNTIME, "the gloo backend is not available: %s (nnrepl builds it where libgloo-dev is installed)", tried);
    const nn_gloo_api *(*get)(void) = (const nn_gloo_api *(*)(void))dlsym(h, NN_GLOO_SHIM_SYMBOL);
    const nn_gloo_api *a = get ? get() : NULL;
    if (!a || a->version != NN_GLOO_SHIM_VERSION) {
        dlclose(h);
        return nn_error(NN_ERR_RUNTIME, "the gloo backend is not available: %s is not a compatible gloo shim", SHIM_NAME);
    }
    api = a;
    return NN_OK;
}

bool nn_gloo_loadable(void)
{
    if (api) return true;
    bool ok = load_shim() == NN_OK;
    nn_clear_error();
    return ok;
}

/* ---- the store, for the shim ---- */

static int store_set(void *ctx, const char *key, const void *val, size_t n, char *err, size_t errlen)
{
    if (!nn_store_set(ctx, key, val, n)) return 0;
    snprintf(err, errlen, "%s", nn_last_error());
    return -1;
}

static int store_get(void *ctx, const char *key, double timeout, void **val, size_t *n, char *err, size_t errlen)
{
    nn_store *s = ctx;
    if (!s->ops->get(s, key, timeout, val, n)) return 0;
    snprintf(err, errlen, "%s", nn_last_error());
    return -1;
}

/* ---- the backend ---- */

#define G(pg) ((nn_gloo *)(pg)->impl)
#define CALL(expr)                                                   \
    do {                                                             \
        char err_[1024];                                             \
        size_t errlen = sizeof err_;                                 \
        char *err = err_;                                            \
        if (expr) return nn_error(NN_ERR_RUNTIME, "%s", err_);       \
        return NN_OK;                                                \
    } while (0)

static nn_status g_all_reduce(nn_pg *pg, void *buf, size_t count, nn_dtype dt, nn_reduce_op op, nn_device dev)
{
    CALL(api->all_reduce(G(pg), buf, count, dt, op, err, errlen));
}

/* Gloo has no grouped call: one all-reduce over the buffers packed end to end. */
static nn_status g_all_reduce_many(nn_pg *pg, void *const *bufs, const size_t *counts, int n, nn_dtype dt, nn_reduce_op op, nn_device dev)
{
    size_t es = nn_dtype_size(dt), total = 0;
    for (int i = 0; i < n; i++) total += counts[i];
    char *flat = malloc(total * es + 1);
    if (!flat) return nn_error(NN_ERR_NOMEM, "gloo: all_reduce: out of memory");
    for (size_t i = 0, at = 0; i < (size_t)n; at += counts[i++] * es) memcpy(flat + at, bufs[i], counts[i] * es);
    nn_status st = g_all_reduce(pg, flat, total, dt, op, dev);
    for (size_t i = 0, at = 0; !st && i < (size_t)n; at += counts[i++] * es) memcpy(bufs[i], flat + at, counts[i] * es);
    free(flat);
    return st;
}

static nn_status g_broadcast(nn_pg *pg, void *buf, size_t count, nn_dtype dt, int root, nn_device dev)
{
    CALL(api->broadcast(G(pg), buf, count * nn_dtype_size(dt), root, err, errlen));
}

static nn_status g_reduce(nn_pg *pg, void *buf, size_t count, nn_dtype dt, nn_reduce_op op, int root, nn_device dev)
{
    CALL(api->reduce(G(pg), buf, count, dt, op, root, err, errlen));
}

static nn_status g_all_gather(nn_pg *pg, void *out, const void *in, size_t count, nn_dtype dt, nn_device dev)
{
    CALL(api->all_gather(G(pg), out, in, count * nn_dtype_size(dt), err, errlen));
}

/* All-reduce the whole input, keep this rank's block (as PyTorch's Gloo does). */
static nn_status g_reduce_scatter(nn_pg *pg, void *out, void *in, size_t count, nn_dtype dt, nn_reduce_op op, nn_device dev)
{
    nn_status st = g_all_reduce(pg, in, count * (size_t)pg->size, dt, op, dev);
    if (!st) memcpy(out, (char *)in + (size_t)pg->rank * count * nn_dtype_size(dt), count * nn_dtype_size(dt));
    return st;
}

static nn_status g_send(nn_pg *pg, const void *buf, size_t count, nn_dtype dt, int dst, int tag, nn_device dev, void **pending)
{
    char err[1024];
    *pending = api->post_send(G(pg), buf, count * nn_dtype_size(dt), dst, tag, err, sizeof err);
    return *pending ? NN_OK : nn_error(NN_ERR_RUNTIME, "%s", err);
}

static nn_status g_recv(nn_pg *pg, void *buf, size_t count, nn_dtype dt, int src, int tag, nn_device dev, void **pending)
{
    char err[1024];
    *pending = api->post_recv(G(pg), buf, count * nn_dtype_size(dt), src, tag, err, sizeof err);
    return *pending ? NN_OK : nn_error(NN_ERR_RUNTIME, "%s", err);
}

static nn_status g_p2p_wait(void *pending, double timeout)
{
    char err[1024];
    if (api->wait_p2p(pending, timeout, err, sizeof err)) return nn_error(NN_ERR_RUNTIME, "%s", err);
    return NN_OK;
}

static nn_status g_barrier(nn_pg *pg) { CALL(api->barrier(G(pg), err, errlen)); }

static void g_destroy(nn_pg *pg)
{
    if (pg->impl) api->destroy(G(pg));
    pg->impl = NULL;
}

static const nn_pg_ops gloo_ops = {
    .name = "gloo", .device = NN_CPU, .blocking = true, .has_avg = false,
    .all_reduce = g_all_reduce, .all_reduce_many = g_all_reduce_many, .broadcast = g_broadcast, .reduce = g_reduce, .all_gather = g_all_gather,
    .reduce_scatter = g_reduce_scatter, .send = g_send, .recv = g_recv, .wait = g_p2p_wait, .barrier = g_barrier,
    .destroy = g_destroy,
};

nn_status nn_gloo_backend_create(nn_pg *pg)
{
    nn_status st = load_shim();
    if (st) return st;
    nn_gloo_store cb = {pg->store, store_set, store_get};
    const char *iface = getenv("GLOO_SOCKET_IFNAME");
    const char *host = nn_store_local_addr(pg->store);
    char prefix[32], err[1024];
    snprintf(prefix, sizeof prefix, "pg%d/gloo", pg->id);
    nn_gloo *g = api->create(&cb, prefix, pg->rank, pg->size, *host ? host : "127.0.0.1", iface, pg->timeout, err, sizeof err);
    if (!g) return nn_error(NN_ERR_RUNTIME, "%s", err);
    pg->impl = g;
    pg->ops = &gloo_ops;
    return NN_OK;
}
