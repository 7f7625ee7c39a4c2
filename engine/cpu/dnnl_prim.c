/* The oneDNN machinery shared by conv_dnnl.c and gemm_dnnl.c (dnnl_prim.h). Primitives are made
 * once per key and kept (CACHE_MAX of them, refusals included). Scratch (the scratchpad and the
 * reordered copies) lives in an arena of the calling thread, so that calls from several threads
 * (the pool's parts, a DataLoader's workers) share none. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dnnl_prim.h"

void omp_set_num_threads(int n); /* libgomp, which libdnnl runs on */

bool nn_mkldnn_enabled = true;

enum { CACHE_MAX = 1024 };

typedef struct {
    uint64_t hash;
    size_t keysize;
    nn_dnnl_prim p; /* p.prim NULL: refused */
    unsigned char key[];
} entry;

static struct {
    pthread_mutex_t mu;
    dnnl_engine_t engine;
    bool tried;
    entry *cache[CACHE_MAX];
    int n;
    struct thread_ctx *threads;
} D = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Each thread's stream and scratch arena, kept between calls so that a call allocates nothing. The
 * arena only grows, and goes with its thread. */
typedef struct thread_ctx {
    dnnl_stream_t stream;
    char *arena;
    size_t cap;
    struct thread_ctx *prev, *next; /* all of them, from D.threads (so a leak checker sees them held) */
} thread_ctx;

static pthread_key_t ctx_key;
static void ctx_free(void *p)
{
    thread_ctx *t = p;
    pthread_mutex_lock(&D.mu);
    if (t->prev) t->prev->next = t->next;
    else if (D.threads == t) D.threads = t->next;
    if (t->next) t->next->prev = t->prev;
    pthread_mutex_unlock(&D.mu);
    if (t->stream) dnnl_stream_destroy(t->stream);
    free(t->arena);
    free(t);
}

static thread_ctx *thread_context(void)
{
    thread_ctx *t = pthread_getspecific(ctx_key);
    if (t) return t;
    if (!(t = calloc(1, sizeof *t))) return NULL;
    if (dnnl_stream_create(&t->stream, D.engine, dnnl_stream_default_flags) != dnnl_success || pthread_setspecific(ctx_key, t)) {
        ctx_free(t);
        return NULL;
    }
    pthread_mutex_lock(&D.mu);
    t->next = D.threads;
    if (D.threads) D.threads->prev = t;
    D.threads = t;
    pthread_mutex_unlock(&D.mu);
    return t;
}

static size_t align64(size_t n) { return (n + 63) / 64 * 64; }

/* The thread's arena, at least n bytes (64-byte aligned) */
static char *arena(thread_ctx *t, size_t n)
{
    if (n <= t->cap) return t->arena;
    free(t->arena);
    t->cap = 0;
    if (!(t->arena = aligned_alloc(64, align64(n)))) return NULL;
    t->cap = n;
    return t->arena;
}

bool nn_dnnl_ready(void)
{
    if (!nn_mkldnn_enabled) return false;
    pthread_mutex_lock(&D.mu);
    if (!D.tried) {
        D.tried = true;
        if (dnnl_engine_create(&D.engine, dnnl_cpu, 0) != dnnl_success || pthread_key_create(&ctx_key, ctx_free)) D.engine = NULL;
    }
    pthread_mutex_unlock(&D.mu);
    return D.engine != NULL;
}

dnnl_engine_t nn_dnnl_engine(void) { return D.engine; }

void nn_dnnl_set_threads(int threads) { omp_set_num_threads(threads); }

static void prim_clear(nn_dnnl_prim *p)
{
    for (int i = 0; i < p->nargs; i++)
        if (p->args[i].reorder) dnnl_primitive_destroy(p->args[i].reorder);
    if (p->prim) dnnl_primitive_destroy(p->prim);
    memset(p, 0, sizeof *p);
}

void nn_dnnl_prim_free(nn_dnnl_prim *p)
{
    if (!p) return;
    prim_clear(p);
    free((char *)p - offsetof(entry, p));
}

static uint64_t fnv1a(const unsigned char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ k[i]) * 1099511628211ull;
    return h;
}

nn_dnnl_prim *nn_dnnl_prim_get(const void *key, size_t keysize, nn_dnnl_build_fn build, bool *owned)
{
    if (owned) *owned = false;
    uint64_t h = fnv1a(key, keysize);
    pthread_mutex_lock(&D.mu);
    for (int i = 0; i < D.n; i++) {
        entry *e = D.cache[i];
        if (e->hash == h && e->keysize == keysize && !memcmp(e->key, key, keysize)) {
            pthread_mutex_unlock(&D.mu);
            return e->p.prim ? &e->p : NULL;
        }
    }
    bool full = D.n == CACHE_MAX;
    entry *e = full && !owned ? NULL : calloc(1, sizeof *e + keysize);
    if (e) {
        e->hash = h, e->keysize = keysize;
        memcpy(e->key, key, keysize);
        if (!build(&e->p, key)) prim_clear(&e->p);
        if (!full) D.cache[D.n++] = e;
        else if (e->p.prim) *owned = true;
        else free(e), e = NULL;
    }
    pthread_mutex_unlock(&D.mu);
    return e && e->p.prim ? &e->p : NULL;
}

bool nn_dnnl_prim_run(const nn_dnnl_prim *c, void *const *ptr)
{
    thread_ctx *t = thread_context();
    if (!t) return false;
    dnnl_stream_t s = t->stream;
    size_t need = align64(c->scratch), off[NN_DNNL_MAX_ARGS] = {0};
    for (int i = 0; i < c->nargs; i++)
        if (c->args[i].reorder) off[i] = need, need += align64(dnnl_memory_desc_get_size(&c->args[i].prim));
    char *base = arena(t, need ? need : 64);
    if (!base) return false;
    dnnl_memory_t user[NN_DNNL_MAX_ARGS] = {0}, prim[NN_DNNL_MAX_ARGS] = {0}, scratch = NULL;
    dnnl_exec_arg_t args[NN_DNNL_MAX_ARGS + 1];
    bool ok = true;
    for (int i = 0; ok && i < c->nargs; i++) {
        const nn_dnnl_arg *a = &c->args[i];
        ok = dnnl_memory_create(&user[i], &a->user, D.engine, ptr[i]) == dnnl_success;
        if (ok && a->reorder) {
            ok = dnnl_memory_create(&prim[i], &a->prim, D.engine, base + off[i]) == dnnl_success;
            if (ok && !a->output) {
                dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, user[i]}, {DNNL_ARG_TO, prim[i]}};
                ok = dnnl_primitive_execute(a->reorder, s, 2, r) == dnnl_success;
            }
        }
        args[i] = (dnnl_exec_arg_t){a->arg, prim[i] ? prim[i] : user[i]};
    }
    int n = c->nargs;
    if (ok && c->scratch) {
        dnnl_memory_desc_t smd;
        dnnl_dims_t sd = {(dnnl_dim_t)c->scratch};
        ok = dnnl_memory_desc_init_by_tag(&smd, 1, sd, dnnl_u8, dnnl_a) == dnnl_success &&
             dnnl_memory_create(&scratch, &smd, D.engine, base) == dnnl_success;
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, scratch};
    }
    ok = ok && dnnl_primitive_execute(c->prim, s, n, args) == dnnl_success;
    for (int i = 0; ok && i < c->nargs; i++)
        if (c->args[i].reorder && c->args[i].output) {
            dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, prim[i]}, {DNNL_ARG_TO, user[i]}};
            ok = dnnl_primitive_execute(c->args[i].reorder, s, 2, r) == dnnl_success;
        }
    ok = ok && dnnl_stream_wait(s) == dnnl_success;
    for (int i = 0; i < c->nargs; i++) {
        if (user[i]) dnnl_memory_destroy(user[i]);
        if (prim[i]) dnnl_memory_destroy(prim[i]);
    }
    if (scratch) dnnl_memory_destroy(scratch);
    return ok;
}

bool nn_dnnl_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, const int64_t *strides, dnnl_data_type_t dt)
{
    dnnl_dims_t d, s;
    for (int i = 0; i < ndims; i++) d[i] = dims[i], s[i] = strides[i];
    return dnnl_memory_desc_init_by_strides(md, ndims, d, dt, s) == dnnl_success;
}

bool nn_dnnl_md_any(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, dnnl_data_type_t dt)
{
    dnnl_dims_t d;
    for (int i = 0; i < ndims; i++) d[i] = dims[i];
    return dnnl_memory_desc_init_by_tag(md, ndims, d, dt, dnnl_format_tag_any) == dnnl_success;
}

dnnl_primitive_desc_t nn_dnnl_pd_create(const void *desc, dnnl_primitive_attr_t attr, const_dnnl_primitive_desc_t hint)
{
    dnnl_primitive_desc_t pd;
    return dnnl_primitive_desc_create(&pd, desc, attr, D.engine, hint) == dnnl_success ? pd : NULL;
}

bool nn_dnnl_add_arg(nn_dnnl_prim *c, const_dnnl_primitive_desc_t pd, int arg, dnnl_query_t q, int index, const dnnl_memory_desc_t *user,
                     bool output)
{
    nn_dnnl_arg *a = &c->args[c->nargs++];
    a->arg = arg, a->output = output, a->user = *user, a->reorder = NULL;
    const dnnl_memory_desc_t *prim = dnnl_primitive_desc_query_md(pd, q, index);
    if (!prim) return false;
    a->prim = *prim;
    if (dnnl_memory_desc_equal(&a->user, &a->prim)) return true;
    dnnl_primitive_desc_t rpd;
    const dnnl_memory_desc_t *from = output ? &a->prim : &a->user, *to = output ? &a->user : &a->prim;
    if (dnnl_reorder_primitive_desc_create(&rpd, from, D.engine, to, D.engine, NULL) != dnnl_success) return false;
    bool ok = dnnl_primitive_create(&a->reorder, rpd) == dnnl_success;
    dnnl_primitive_desc_destroy(rpd);
    return ok;
}

/* The reference implementations are plain loops, far slower than the own kernels: refused */
bool nn_dnnl_finish(nn_dnnl_prim *c, const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl || !strncmp(impl, "ref", 3)) return false;
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    c->scratch = sp ? dnnl_memory_desc_get_size(sp) : 0;
    return dnnl_primitive_create(&c->prim, pd) == dnnl_success;
}
