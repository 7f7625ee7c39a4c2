/* A C interface to Gloo (Debian's libgloo-dev), built as its own shared module
 * (libnnrepl_gloo.so) that engine/dist/gloo.c loads with dlopen when a "gloo" group
 * is made, so nnrepl itself neither links C++ nor needs libgloo where it runs without
 * it (the GPU machine). Buffers are host memory; dtype codes are nn_dtype's. Every call
 * returns 0, or -1 with a message in err; no exception leaves the module. */
#ifndef NN_GLOO_SHIM_H
#define NN_GLOO_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The rendezvous store, seen through callbacks (0 or -1 with err set). */
typedef struct {
    void *ctx;
    int (*set)(void *ctx, const char *key, const void *val, size_t n, char *err, size_t errlen);
    /* *val malloc'd (free() it); waits up to timeout seconds for the key */
    int (*get)(void *ctx, const char *key, double timeout, void **val, size_t *n, char *err, size_t errlen);
} nn_gloo_store;

typedef struct nn_gloo nn_gloo;

/* reduce ops as nn_reduce_op: 0 SUM, 2 PRODUCT, 3 MIN, 4 MAX */
typedef struct {
    int version; /* NN_GLOO_SHIM_VERSION */
    /* Connect rank to every other rank through Gloo's TCP transport, listening on
     * hostname (an address of this machine) or on interface iface when given. */
    nn_gloo *(*create)(const nn_gloo_store *store, const char *prefix, int rank, int size, const char *hostname,
                       const char *iface, double timeout, char *err, size_t errlen);
    int (*all_reduce)(nn_gloo *g, void *buf, size_t count, int dtype, int op, char *err, size_t errlen);
    int (*broadcast)(nn_gloo *g, void *buf, size_t nbytes, int root, char *err, size_t errlen);
    int (*reduce)(nn_gloo *g, void *buf, size_t count, int dtype, int op, int root, char *err, size_t errlen);
    int (*all_gather)(nn_gloo *g, void *out, const void *in, size_t nbytes, char *err, size_t errlen);
    int (*barrier)(nn_gloo *g, char *err, size_t errlen);
    /* point-to-point: post the transfer and return a handle for wait_p2p (NULL on error) */
    void *(*post_send)(nn_gloo *g, const void *buf, size_t nbytes, int dst, int tag, char *err, size_t errlen);
    void *(*post_recv)(nn_gloo *g, void *buf, size_t nbytes, int src, int tag, char *err, size_t errlen);
    /* wait for a posted transfer and free its handle (valid after destroy too) */
    int (*wait_p2p)(void *handle, double timeout, char *err, size_t errlen);
    void (*destroy)(nn_gloo *g);
} nn_gloo_api;

#define NN_GLOO_SHIM_VERSION 2
#define NN_GLOO_SHIM_SYMBOL "nn_gloo_shim_api"
const nn_gloo_api *nn_gloo_shim_api(void);

#ifdef __cplusplus
}
#endif

#endif
