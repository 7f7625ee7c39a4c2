/* Two more stores: the hash store (keys in this process's memory, get waits on a
 * condition variable) and the prefix store (every key of another store under
 * "prefix/"; subgroups use one over the default group's store). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net.h"
#include "store.h"

/* ---- the hash store ---- */

typedef struct { char *key; void *val; size_t n; } hentry;

typedef struct {
    nn_store base;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    hentry *kv;
    int nkv, cap;
} hash_store;

static hentry *hfind(hash_store *h, const char *key)
{
    for (int i = 0; i < h->nkv; i++)
        if (!strcmp(h->kv[i].key, key)) return &h->kv[i];
    return NULL;
}

static void *dup_bytes(const void *v, size_t n)
{
    void *c = malloc(n ? n : 1);
    if (c && n) memcpy(c, v, n);
    return c;
}

/* under the lock */
static nn_status hput(hash_store *h, const char *key, const void *val, size_t n)
{
    void *copy = dup_bytes(val, n);
    if (!copy) return nn_error(NN_ERR_NOMEM, "store %s: out of memory", h->base.desc);
    hentry *e = hfind(h, key);
    if (!e) {
        if (h->nkv == h->cap) {
            hentry *kv = realloc(h->kv, sizeof *kv * (size_t)(h->cap = h->cap ? h->cap * 2 : 16));
            if (!kv) { free(copy); return nn_error(NN_ERR_NOMEM, "store %s: out of memory", h->base.desc); }
            h->kv = kv;
        }
        char *k = strdup(key);
        if (!k) { free(copy); return nn_error(NN_ERR_NOMEM, "store %s: out of memory", h->base.desc); }
        e = &h->kv[h->nkv++];
        e->key = k;
    } else free(e->val);
    e->val = copy;
    e->n = n;
    pthread_cond_broadcast(&h->cv);
    return NN_OK;
}

static nn_status hash_set(nn_store *s, const char *key, const void *val, size_t n)
{
    hash_store *h = (hash_store *)s;
    pthread_mutex_lock(&h->mu);
    nn_status st = hput(h, key, val, n);
    pthread_mutex_unlock(&h->mu);
    return st;
}

static nn_status hash_get(nn_store *s, const char *key, double timeout, void **val, size_t *n)
{
    hash_store *h = (hash_store *)s;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    double t = until.tv_sec + until.tv_nsec * 1e-9 + timeout;
    until.tv_sec = (time_t)t;
    until.tv_nsec = (long)((t - (double)until.tv_sec) * 1e9);
    pthread_mutex_lock(&h->mu);
    hentry *e;
    int rc = 0;
    while (!(e = hfind(h, key)) && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&h->cv, &h->mu, &until);
    nn_status st = NN_OK;
    if (!e) st = nn_error(NN_ERR_RUNTIME, "store %s: timed out after %g s waiting for key '%s'", s->desc, timeout, key);
    else if (!(*val = dup_bytes(e->val, e->n))) st = nn_error(NN_ERR_NOMEM, "store %s: out of memory", s->desc);
    else *n = e->n;
    pthread_mutex_unlock(&h->mu);
    return st;
}

static nn_status hash_add(nn_store *s, const char *key, int64_t delta, int64_t *result)
{
    hash_store *h = (hash_store *)s;
    pthread_mutex_lock(&h->mu);
    hentry *e = hfind(h, key);
    char num[32];
    int64_t x = 0;
    if (e) {
        size_t k = e->n < sizeof num - 1 ? e->n : sizeof num - 1;
        memcpy(num, e->val, k);
        num[k] = 0;
        x = strtoll(num, NULL, 10);
    }
    x += delta;
    int k = snprintf(num, sizeof num, "%lld", (long long)x);
    nn_status st = hput(h, key, num, (size_t)k);
    pthread_mutex_unlock(&h->mu);
    *result = x;
    return st;
}

static nn_status hash_check(nn_store *s, const char *key, bool *exists)
{
    hash_store *h = (hash_store *)s;
    pthread_mutex_lock(&h->mu);
    *exists = hfind(h, key) != NULL;
    pthread_mutex_unlock(&h->mu);
    return NN_OK;
}

static nn_status hash_compare_set(nn_store *s, const char *key, const void *expected, size_t en, const void *desired, size_t dn,
                                  void **cur, size_t *curn)
{
    hash_store *h = (hash_store *)s;
    pthread_mutex_lock(&h->mu);
    hentry *e = hfind(h, key);
    bool set;
    nn_status st = nn_store_cas_result(e ? e->val : NULL, e ? e->n : 0, expected, en, desired, dn, cur, curn, &set);
    if (!st && set) st = hput(h, key, desired, dn);
    pthread_mutex_unlock(&h->mu);
    return st;
}

static nn_status hash_delete_key(nn_store *s, const char *key, bool *deleted)
{
    hash_store *h = (hash_store *)s;
    pthread_mutex_lock(&h->mu);
    hentry *e = hfind(h, key);
    *deleted = e != NULL;
    if (e) {
        free(e->key);
        free(e->val);
        *e = h->kv[--h->nkv];
    }
    pthread_mutex_unlock(&h->mu);
    return NN_OK;
}

static nn_status hash_num_keys(nn_store *s, int64_t *n)
{
    hash_store *h = (hash_store *)s;
    pthread_mutex_lock(&h->mu);
    *n = h->nkv;
    pthread_mutex_unlock(&h->mu);
    return NN_OK;
}

static void hash_free(nn_store *s)
{
    hash_store *h = (hash_store *)s;
    for (int i = 0; i < h->nkv; i++) { free(h->kv[i].key); free(h->kv[i].val); }
    free(h->kv);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h);
}

static const nn_store_ops hash_ops = {hash_set, hash_get, hash_add, hash_check, hash_free, hash_compare_set, hash_delete_key, hash_num_keys};

nn_store *nn_store_hash(double timeout)
{
    hash_store *h = calloc(1, sizeof *h);
    if (!h) { nn_error(NN_ERR_NOMEM, "out of memory creating the store"); return NULL; }
    h->base.ops = &hash_ops;
    h->base.timeout = timeout;
    snprintf(h->base.desc, sizeof h->base.desc, "HashStore");
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    return &h->base;
}

/* ---- the prefix store ---- */

typedef struct {
    nn_store base;
    nn_store *inner;
    char prefix[256];
} prefix_store;

#define P(s) ((prefix_store *)(s))
/* key under the prefix, in a buffer named full */
#define FULL(s, key)                                                                                   \
    char full[4352];                                                                                   \
    if (snprintf(full, sizeof full, "%s/%s", P(s)->prefix, key) >= (int)sizeof full)                   \
        return nn_error(NN_ERR_ARG, "store %s: key too long", (s)->desc)

static nn_status prefix_set(nn_store *s, const char *key, const void *val, size_t n)
{
    FULL(s, key);
    return nn_store_set(P(s)->inner, full, val, n);
}

static nn_status prefix_get(nn_store *s, const char *key, double timeout, void **val, size_t *n)
{
    FULL(s, key);
    return P(s)->inner->ops->get(P(s)->inner, full, timeout, val, n);
}

static nn_status prefix_add(nn_store *s, const char *key, int64_t delta, int64_t *result)
{
    FULL(s, key);
    return nn_store_add(P(s)->inner, full, delta, result);
}

static nn_status prefix_check(nn_store *s, const char *key, bool *exists)
{
    FULL(s, key);
    return nn_store_check(P(s)->inner, full, exists);
}

static nn_status prefix_compare_set(nn_store *s, const char *key, const void *expected, size_t en, const void *desired, size_t dn,
                                    void **cur, size_t *curn)
{
    FULL(s, key);
    return nn_store_compare_set(P(s)->inner, full, expected, en, desired, dn, cur, curn);
}

static nn_status prefix_delete_key(nn_store *s, const char *key, bool *deleted)
{
    FULL(s, key);
    return nn_store_delete_key(P(s)->inner, full, deleted);
}

/* as PyTorch's: the inner store's count */
static nn_status prefix_num_keys(nn_store *s, int64_t *n) { return nn_store_num_keys(P(s)->inner, n); }

static void prefix_free(nn_store *s)
{
    nn_store_free(P(s)->inner);
    free(s);
}

static const nn_store_ops prefix_ops = {prefix_set, prefix_get, prefix_add, prefix_check, prefix_free,
                                        prefix_compare_set, prefix_delete_key, prefix_num_keys};

nn_store *nn_store_prefix(const char *prefix, nn_store *inner)
{
    if (strlen(prefix) >= sizeof P(NULL)->prefix) { nn_error(NN_ERR_ARG, "PrefixStore: prefix too long"); return NULL; }
    prefix_store *p = calloc(1, sizeof *p);
    if (!p) { nn_error(NN_ERR_NOMEM, "out of memory creating the store"); return NULL; }
    p->base.ops = &prefix_ops;
    p->base.timeout = inner->timeout;
    p->inner = nn_store_retain(inner);
    snprintf(p->prefix, sizeof p->prefix, "%s", prefix);
    snprintf(p->base.desc, sizeof p->base.desc, "%.100s (prefix '%.40s')", inner->desc, prefix);
    return &p->base;
}

const nn_store *nn_store_inner(const nn_store *s)
{
    while (s && s->ops == &prefix_ops) s = ((const prefix_store *)s)->inner;
    return s;
}
