/* The rendezvous key-value store: ranks meet here to exchange addresses (Gloo),
 * unique ids (NCCL) and check-ins. Two kinds:
 *   TCP:  rank 0 hosts a server thread; every rank (rank 0 too) is a client.
 *   file: records appended to one file under flock (file:///path).
 * get and wait block until the key exists or the store's timeout passes; every
 * error names the store ("tcp://127.0.0.1:29500") and what was waited for.
 * A store is safe to use from several threads. */
#ifndef NN_DIST_STORE_H
#define NN_DIST_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct nn_store nn_store;

typedef struct {
    nn_status (*set)(nn_store *s, const char *key, const void *val, size_t n);
    /* The value of key (malloc'd, free() it), waiting up to timeout seconds for it. */
    nn_status (*get)(nn_store *s, const char *key, double timeout, void **val, size_t *n);
    /* Add delta to the integer at key (0 if absent); *result = the new value. */
    nn_status (*add)(nn_store *s, const char *key, int64_t delta, int64_t *result);
    nn_status (*check)(nn_store *s, const char *key, bool *exists);
    void (*free)(nn_store *s);
    /* Set key to desired if its value is expected (absent counts as an empty expected);
     * *cur (malloc'd) gets the value after: desired, the value that differed, or expected
     * when the key is absent and expected is not empty. */
    nn_status (*compare_set)(nn_store *s, const char *key, const void *expected, size_t en, const void *desired, size_t dn,
                             void **cur, size_t *curn);
    nn_status (*delete_key)(nn_store *s, const char *key, bool *deleted);
    nn_status (*num_keys)(nn_store *s, int64_t *n);
} nn_store_ops;

struct nn_store {
    const nn_store_ops *ops;
    double timeout;   /* seconds, for get/wait and connecting */
    char desc[160];   /* "tcp://127.0.0.1:29500", "file:///tmp/x" */
    int extra_refs;   /* owners besides the first (nn_store_retain); atomic */
};

/* A TCP store at host:port. is_server: host it here (the listening socket is bound
 * before this returns; port 0 picks a free port, read back from desc or
 * nn_store_tcp_port). Every rank then connects as a client within timeout. */
nn_store *nn_store_tcp(const char *host, int port, bool is_server, double timeout);
int nn_store_tcp_port(const nn_store *s);   /* the server's port (0 if not TCP) */
/* The local address the client connection uses: the interface that reaches the
 * server, for the collectives' own sockets. Empty if not TCP. */
const char *nn_store_local_addr(const nn_store *s);
nn_store *nn_store_file(const char *path, double timeout);
const char *nn_store_file_path(const nn_store *s); /* NULL if not a file store */
/* An in-memory store of this process (PyTorch's HashStore). */
nn_store *nn_store_hash(double timeout);
/* Every key of inner under "prefix/" (PyTorch's PrefixStore); holds a reference to inner.
 * nn_store_tcp_port and nn_store_local_addr look through it. */
nn_store *nn_store_prefix(const char *prefix, nn_store *inner);

/* Wrappers: the same calls with the store's timeout, string values. */
nn_status nn_store_set(nn_store *s, const char *key, const void *val, size_t n);
nn_status nn_store_get(nn_store *s, const char *key, void **val, size_t *n);
nn_status nn_store_add(nn_store *s, const char *key, int64_t delta, int64_t *result);
nn_status nn_store_check(nn_store *s, const char *key, bool *exists);
/* Wait for every key, up to timeout seconds in all. */
nn_status nn_store_wait(nn_store *s, const char *const *keys, int n, double timeout);
nn_status nn_store_compare_set(nn_store *s, const char *key, const void *expected, size_t en, const void *desired, size_t dn,
                               void **cur, size_t *curn);
nn_status nn_store_delete_key(nn_store *s, const char *key, bool *deleted);
nn_status nn_store_num_keys(nn_store *s, int64_t *n);
/* Stores are shared by reference: retain adds an owner, free drops one (the last frees it). */
nn_store *nn_store_retain(nn_store *s);
void nn_store_free(nn_store *s);

/* For the store kinds: compare_set's rule over the value looked up (v NULL: absent);
 * *set says whether to store desired. */
nn_status nn_store_cas_result(const void *v, size_t vn, const void *expected, size_t en, const void *desired, size_t dn,
                              void **cur, size_t *curn, bool *set);
/* The store under any prefix stores. */
const nn_store *nn_store_inner(const nn_store *s);

#endif
