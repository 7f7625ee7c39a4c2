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
} nn_store_ops;

struct nn_store {
    const nn_store_ops *ops;
    double timeout;   /* seconds, for get/wait and connecting */
    char desc[160];   /* "tcp://127.0.0.1:29500", "file:///tmp/x" */
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

/* Wrappers: the same calls with the store's timeout, string values. */
nn_status nn_store_set(nn_store *s, const char *key, const void *val, size_t n);
nn_status nn_store_get(nn_store *s, const char *key, void **val, size_t *n);
nn_status nn_store_add(nn_store *s, const char *key, int64_t delta, int64_t *result);
nn_status nn_store_check(nn_store *s, const char *key, bool *exists);
/* Wait for every key, up to timeout seconds in all. */
nn_status nn_store_wait(nn_store *s, const char *const *keys, int n, double timeout);
void nn_store_free(nn_store *s);

#endif
