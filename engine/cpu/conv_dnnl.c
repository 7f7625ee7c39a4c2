/* float32 conv2d, conv2d_backward_input and conv2d_backward_weight on the CPU through oneDNN
 * (libdnnl), as PyTorch runs them: its JIT kernels. conv.c splits the batch over the CPU pool and
 * runs each part here on one OpenMP thread (or a large batch of few images whole, on several).
 * The tensors keep their own layouts (any strides: NCHW and channels-last alike); oneDNN picks
 * the layouts its kernels want, and reorders into and out of them. Primitives are made once per
 * shape, parameters and thread count and kept (CACHE_MAX of them; past that, each call makes and
 * frees its own). Scratch (the scratchpad and the reordered copies) lives in an arena of the
 * calling thread, so that calls from several threads (the pool's parts, a DataLoader's workers)
 * share none. Whatever oneDNN refuses returns false, and conv.c's im2col kernels run instead. */
#include <dnnl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "conv_dnnl.h"

void omp_set_num_threads(int n); /* libgomp, which libdnnl runs on */

bool nn_mkldnn_enabled = true;

enum { CACHE_MAX = 256, MAX_ARGS = 4 };

/* A call's shape: the direction, the bias's presence, the OpenMP threads, the image, weight and
 * output tensors' sizes and strides, stride, padding, dilation, groups. */
typedef struct {
    int dir, bias, threads;
    int64_t x[8], w[8], y[8]; /* sizes, then strides */
    int64_t p[7];
} conv_key;

/* One argument of the primitive: the user's layout, the primitive's, and the reorder between
 * them (user -> primitive for an input, back for the output) when they differ. */
typedef struct {
    int arg;
    bool output;
    dnnl_memory_desc_t user, prim;
    dnnl_primitive_t reorder;
} conv_arg;

typedef struct {
    conv_key key;
    dnnl_primitive_t prim;
    conv_arg args[MAX_ARGS];
    int nargs;
    size_t scratch;
} conv_prim;

static struct {
    pthread_mutex_t mu;
    dnnl_engine_t engine;
    bool tried;
    conv_prim *cache[CACHE_MAX];
    int n;
    struct thread_ctx *threads;
} D = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Each thread's stream and scratch arena (reordered copies and scratchpad), kept between calls so
 * that a call allocates nothing. The arena only grows, and goes with its thread. */
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

/* The thread's arena, at least n bytes (64-byte aligned) */
static char *arena(thread_ctx *t, size_t n)
{
    if (n <= t->cap) return t->arena;
    free(t->arena);
    t->cap = 0;
    if (!(t->arena = aligned_alloc(64, (n + 63) / 64 * 64))) return NULL;
    t->cap = n;
    return t->arena;
}

static size_t align64(size_t n) { return (n + 63) / 64 * 64; }

static bool engine_ready(void)
{
    pthread_mutex_lock(&D.mu);
    if (!D.tried) {
        D.tried = true;
        if (dnnl_engine_create(&D.engine, dnnl_cpu, 0) != dnnl_success || pthread_key_create(&ctx_key, ctx_free)) D.engine = NULL;
    }
    pthread_mutex_unlock(&D.mu);
    return D.engine != NULL;
}

static void prim_free(conv_prim *c)
{
    if (!c) return;
    for (int i = 0; i < c->nargs; i++)
        if (c->args[i].reorder) dnnl_primitive_destroy(c->args[i].reorder);
    if (c->prim) dnnl_primitive_destroy(c->prim);
    free(c);
}

static bool md_of(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, const int64_t *strides)
{
    dnnl_dims_t d, s;
    for (int i = 0; i < ndims; i++) d[i] = dims[i], s[i] = strides[i];
    return dnnl_memory_desc_init_by_strides(md, ndims, d, dnnl_f32, s) == dnnl_success;
}

static bool md_any(dnnl_memory_desc_t *md, int ndims, const int64_t *dims)
{
    dnnl_dims_t d;
    for (int i = 0; i < ndims; i++) d[i] = dims[i];
    return dnnl_memory_desc_init_by_tag(md, ndims, d, dnnl_f32, dnnl_format_tag_any) == dnnl_success;
}

/* The weight's user layout: [O, Cg, kh, kw], or [G, O/G, Cg, kh, kw] with groups */
static bool weight_md(dnnl_memory_desc_t *md, const conv_key *k, bool any)
{
    int64_t G = k->p[6], dims[5] = {G, k->w[0] / G, k->w[1], k->w[2], k->w[3]};
    int64_t st[5] = {k->w[4] * (k->w[0] / G), k->w[4], k->w[5], k->w[6], k->w[7]};
    if (G == 1) return any ? md_any(md, 4, k->w) : md_of(md, 4, k->w, k->w + 4);
    return any ? md_any(md, 5, dims) : md_of(md, 5, dims, st);
}

/* index: which of the query's kind (the bias is weights 1) */
static bool add_arg(conv_prim *c, dnnl_primitive_desc_t pd, int arg, dnnl_query_t q, int index, const dnnl_memory_desc_t *user, bool output)
{
    conv_arg *a = &c->args[c->nargs++];
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

static dnnl_primitive_desc_t pd_create(const void *desc, dnnl_primitive_attr_t attr, const_dnnl_primitive_desc_t hint)
{
    dnnl_primitive_desc_t pd;
    return dnnl_primitive_desc_create(&pd, desc, attr, D.engine, hint) == dnnl_success ? pd : NULL;
}

static conv_prim *prim_build(const conv_key *k)
{
    conv_prim *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->key = *k;
    dnnl_memory_desc_t xu, wu, yu, bu, xa, wa, ya, ba;
    int64_t bdim = k->w[0], one = 1;
    dnnl_dims_t st = {k->p[0], k->p[1]}, dil = {k->p[4] - 1, k->p[5] - 1}, pl = {k->p[2], k->p[3]}, pr;
    for (int i = 0; i < 2; i++) /* padding past the end that gives exactly the output's size */
        pr[i] = (k->y[2 + i] - 1) * k->p[i] + (k->w[2 + i] - 1) * k->p[4 + i] + 1 - k->x[2 + i] - k->p[2 + i];
    bool ok = md_of(&xu, 4, k->x, k->x + 4) && weight_md(&wu, k, false) && md_of(&yu, 4, k->y, k->y + 4) && md_of(&bu, 1, &bdim, &one) &&
              md_any(&xa, 4, k->x) && weight_md(&wa, k, true) && md_any(&ya, 4, k->y) && md_any(&ba, 1, &bdim);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t fwd = NULL, pd = NULL;
    ok = ok && dnnl_primitive_attr_create(&attr) == dnnl_success && dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    dnnl_convolution_desc_t fd, bd;
    ok = ok && dnnl_dilated_convolution_forward_desc_init(&fd, k->dir == NN_DNNL_FWD ? dnnl_forward_inference : dnnl_forward_training,
                                                          dnnl_convolution_direct, &xa, &wa, k->bias ? &ba : NULL, &ya, st, dil, pl, pr) == dnnl_success;
    ok = ok && (fwd = pd_create(&fd, attr, NULL));
    if (ok && k->dir == NN_DNNL_FWD) pd = fwd, fwd = NULL;
    else if (ok && k->dir == NN_DNNL_BWD_DATA)
        ok = dnnl_dilated_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &xa, &wa, &ya, st, dil, pl, pr) == dnnl_success &&
             (pd = pd_create(&bd, attr, fwd));
    else if (ok)
        ok = dnnl_dilated_convolution_backward_weights_desc_init(&bd, dnnl_convolution_direct, &xa, &wa, NULL, &ya, st, dil, pl, pr) == dnnl_success &&
             (pd = pd_create(&bd, attr, fwd));
    if (ok) {
        switch (k->dir) {
        case NN_DNNL_FWD:
            ok = add_arg(c, pd, DNNL_ARG_SRC, dnnl_query_src_md, 0, &xu, false) && add_arg(c, pd, DNNL_ARG_WEIGHTS, dnnl_query_weights_md, 0, &wu, false) &&
                 (!k->bias || add_arg(c, pd, DNNL_ARG_BIAS, dnnl_query_weights_md, 1, &bu, false)) &&
                 add_arg(c, pd, DNNL_ARG_DST, dnnl_query_dst_md, 0, &yu, true);
            break;
        case NN_DNNL_BWD_DATA:
            ok = add_arg(c, pd, DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, 0, &yu, false) &&
                 add_arg(c, pd, DNNL_ARG_WEIGHTS, dnnl_query_weights_md, 0, &wu, false) &&
                 add_arg(c, pd, DNNL_ARG_DIFF_SRC, dnnl_query_diff_src_md, 0, &xu, true);
            break;
        default:
            ok = add_arg(c, pd, DNNL_ARG_SRC, dnnl_query_src_md, 0, &xu, false) && add_arg(c, pd, DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, 0, &yu, false) &&
                 add_arg(c, pd, DNNL_ARG_DIFF_WEIGHTS, dnnl_query_diff_weights_md, 0, &wu, true);
        }
    }
    if (ok) {
        const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        c->scratch = sp ? dnnl_memory_desc_get_size(sp) : 0;
        ok = dnnl_primitive_create(&c->prim, pd) == dnnl_success;
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (fwd) dnnl_primitive_desc_destroy(fwd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!ok) {
        prim_free(c);
        return NULL;
    }
    return c;
}

/* The cached primitive for k (built and kept on first use); *owned when the cache is full */
static conv_prim *prim_get(const conv_key *k, bool *owned)
{
    *owned = false;
    pthread_mutex_lock(&D.mu);
    for (int i = 0; i < D.n; i++)
        if (!memcmp(&D.cache[i]->key, k, sizeof *k)) {
            conv_prim *c = D.cache[i];
            pthread_mutex_unlock(&D.mu);
            return c;
        }
    conv_prim *c = prim_build(k);
    if (c && D.n < CACHE_MAX) D.cache[D.n++] = c;
    else *owned = c != NULL;
    pthread_mutex_unlock(&D.mu);
    return c;
}

/* Run c on the user's buffers ptr[i] (in c->args' order) */
static bool prim_run(const conv_prim *c, void *const *ptr)
{
    thread_ctx *t = thread_context();
    if (!t) return false;
    dnnl_stream_t s = t->stream;
    size_t need = align64(c->scratch), off[MAX_ARGS] = {0};
    for (int i = 0; i < c->nargs; i++)
        if (c->args[i].reorder) off[i] = need, need += align64(dnnl_memory_desc_get_size(&c->args[i].prim));
    char *base = arena(t, need ? need : 64);
    if (!base) return false;
    dnnl_memory_t user[MAX_ARGS] = {0}, prim[MAX_ARGS] = {0}, scratch = NULL;
    dnnl_exec_arg_t args[MAX_ARGS + 1];
    bool ok = true;
    for (int i = 0; ok && i < c->nargs; i++) {
        const conv_arg *a = &c->args[i];
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

static void put(int64_t *dst, const nn_dnnl_operand *t)
{
    for (int i = 0; i < 4; i++) dst[i] = t->shape[i], dst[4 + i] = t->strides[i];
}

bool nn_dnnl_accepts(const nn_tensor *x, const nn_tensor *w, const nn_tensor *b, const nn_tensor *y)
{
    if (!nn_mkldnn_enabled || x->dtype != NN_F32 || w->dtype != NN_F32 || y->dtype != NN_F32 || x->ndim != 4 || w->ndim != 4 || y->ndim != 4) return false;
    if (b && (b->dtype != NN_F32 || b->ndim != 1 || (b->shape[0] > 1 && b->strides[0] != 1))) return false;
    return nn_numel(x) > 0 && nn_numel(w) > 0 && nn_numel(y) > 0 && engine_ready();
}

bool nn_dnnl_conv2d(int dir, const nn_dnnl_operand *x, const nn_dnnl_operand *w, const float *b, const nn_dnnl_operand *y,
                    const int64_t *params, int threads)
{
    conv_key k;
    memset(&k, 0, sizeof k);
    k.dir = dir, k.bias = b != NULL;
    put(k.x, x), put(k.w, w), put(k.y, y);
    for (int i = 0; i < 7; i++) k.p[i] = params[i];
    if (k.p[6] < 1) k.p[6] = 1;
    /* oneDNN splits a primitive's work for the threads it was made with, and asks OpenMP for that
     * many when it runs: made and run on the same count */
    k.threads = threads;
    omp_set_num_threads(threads);
    bool owned;
    conv_prim *c = prim_get(&k, &owned);
    if (!c) return false;
    /* in the order prim_build added the arguments */
    void *ptr[MAX_ARGS];
    if (dir == NN_DNNL_FWD) ptr[0] = x->p, ptr[1] = w->p, ptr[2] = b ? (void *)b : y->p, ptr[3] = y->p;
    else if (dir == NN_DNNL_BWD_DATA) ptr[0] = y->p, ptr[1] = w->p, ptr[2] = x->p;
    else ptr[0] = x->p, ptr[1] = y->p, ptr[2] = w->p;
    bool ok = prim_run(c, ptr);
    if (owned) prim_free(c);
    return ok;
}
