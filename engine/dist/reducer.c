/* DDP's reducer (see reducer.h). */
#include "reducer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "device.h"
#include "ops.h"

typedef struct {
    int first, count;  /* r->order[first .. first+count) */
    nn_dtype dt;
    nn_device dev;
    int64_t numel;
    nn_tensor *buf;    /* flat, allocated by slice() on first use (never for a bucket reduced in place) */
    nn_tensor *direct; /* this pass: a one-parameter bucket's gradient, reduced where it is */
    int bad;           /* this pass: gradients that cannot be reduced in place (grouped) */
    bool grouped;      /* this pass: the gradients were all-reduced in place, in one grouped call, or
                          (a builtin hook) through comp, which hook_result casts back into them */
    int pending;
    nn_work *work;
    nn_tensor *comp;   /* this pass: what a builtin hook all-reduces (the buffer or its 16-bit copy) */
} bucket;

typedef struct { nn_reducer *r; int index; } param_ctx;
typedef struct { const nn_tensor *t; int index; } param_key;

struct nn_reducer {
    nn_pg *pg;
    nn_reducer_opts o;
    int n;
    nn_tensor **params;
    param_ctx *ctx;
    int64_t *hooks;
    param_key *keys;         /* sorted by address, for the graph walk */
    /* layout */
    bucket *b;
    int nb;
    int *order, *bucket_of;
    int64_t *offset;         /* in its bucket, elements */
    nn_dtype *dt;            /* what the layout was built for */
    nn_device *dev;
    int64_t *numel;
    /* the pass */
    bool expect;
    int next_launch, marked;
    bool *ready;
    int32_t *used;
    nn_tensor **got;         /* this pass: the gradients of grouped buckets, for their all-reduce */
    nn_comm_hook_kind hook_kind, pass_hook; /* the registered hook; the one this pass runs */
    nn_comm_hook hook;
};

static nn_status hook(nn_tensor *leaf, void *ctx);
static nn_status hook_result(nn_reducer *r, int k);

static int key_cmp(const void *a, const void *b)
{
    const nn_tensor *x = ((const param_key *)a)->t, *y = ((const param_key *)b)->t;
    return x < y ? -1 : x > y;
}

static void drop_got(nn_reducer *r)
{
    for (int i = 0; i < r->n; i++) {
        nn_release(r->got[i]);
        r->got[i] = NULL;
    }
}

static void free_layout(nn_reducer *r)
{
    for (int k = 0; k < r->nb; k++) {
        if (r->b[k].work) { nn_work_wait(r->b[k].work); nn_work_release(r->b[k].work); }
        nn_release(r->b[k].buf);
        nn_release(r->b[k].direct);
        nn_release(r->b[k].comp);
    }
    free(r->b);
    r->b = NULL;
    r->nb = 0;
}

static nn_status build_layout(nn_reducer *r)
{
    free_layout(r);
    size_t c = r->n ? (size_t)r->n : 1;
    struct kind { nn_dtype dt; nn_device dev; int open, nclosed; } *kinds = calloc(c, sizeof *kinds);
    r->b = calloc(c, sizeof *r->b);
    if (!r->b || !kinds) { free(kinds); return nn_error(NN_ERR_NOMEM, "DistributedDataParallel: out of memory"); }
    int nkinds = 0;
    for (int i = r->n - 1; i >= 0; i--) { /* backwards: the order backward produces the gradients */
        nn_tensor *p = r->params[i];
        r->dt[i] = p->dtype;
        r->dev[i] = p->storage->device;
        r->numel[i] = nn_numel(p);
        int k = 0;
        while (k < nkinds && !(kinds[k].dt == p->dtype && nn_device_eq(kinds[k].dev, p->storage->device))) k++;
        if (k == nkinds) kinds[nkinds++] = (struct kind){p->dtype, p->storage->device, -1, 0};
        size_t limit = kinds[k].nclosed == 0 ? r->o.first_bucket_bytes : r->o.bucket_cap_bytes;
        size_t bytes = (size_t)r->numel[i] * nn_dtype_size(p->dtype);
        if (kinds[k].open >= 0 && bytes >= limit) { /* a parameter that fills a bucket gets one of its own */
            kinds[k].nclosed++;
            kinds[k].open = -1;
            limit = r->o.bucket_cap_bytes;
        }
        if (kinds[k].open < 0) {
            kinds[k].open = r->nb++;
            r->b[kinds[k].open] = (bucket){.first = 0, .dt = p->dtype, .dev = p->storage->device};
        }
        bucket *b = &r->b[kinds[k].open];
        r->bucket_of[i] = kinds[k].open;
        r->offset[i] = b->numel;
        b->numel += r->numel[i];
        b->count++;
        if ((size_t)b->numel * nn_dtype_size(b->dt) >= limit) { /* full: the next parameter of this kind opens another */
            kinds[k].nclosed++;
            kinds[k].open = -1;
        }
    }
    int pos = 0; /* order: the parameters bucket by bucket, each bucket's in the order they were added */
    for (int k = 0; k < r->nb; k++) {
        r->b[k].first = pos;
        for (int i = r->n - 1; i >= 0; i--)
            if (r->bucket_of[i] == k) r->order[pos++] = i;
    }
    free(kinds);
    return NN_OK;
}

nn_reducer *nn_reducer_new(nn_pg *pg, nn_tensor *const *params, int n, const nn_reducer_opts *o)
{
    nn_reducer *r = calloc(1, sizeof *r);
    if (!r) { nn_error(NN_ERR_NOMEM, "DistributedDataParallel: out of memory"); return NULL; }
    r->pg = pg;
    r->o = *o;
    if (!r->o.bucket_cap_bytes) r->o.bucket_cap_bytes = 25u << 20;
    if (!r->o.first_bucket_bytes) r->o.first_bucket_bytes = 1u << 20;
    int m = 0;
    for (int i = 0; i < n; i++) m += params[i]->requires_grad;
    size_t c = m ? (size_t)m : 1;
    r->params = calloc(c, sizeof *r->params);
    r->ctx = calloc(c, sizeof *r->ctx);
    r->hooks = calloc(c, sizeof *r->hooks);
    r->keys = calloc(c, sizeof *r->keys);
    r->order = calloc(c, sizeof *r->order);
    r->bucket_of = calloc(c, sizeof *r->bucket_of);
    r->offset = calloc(c, sizeof *r->offset);
    r->dt = calloc(c, sizeof *r->dt);
    r->dev = calloc(c, sizeof *r->dev);
    r->numel = calloc(c, sizeof *r->numel);
    r->ready = calloc(c, sizeof *r->ready);
    r->used = calloc(c, sizeof *r->used);
    r->got = calloc(c, sizeof *r->got);
    if (!r->params || !r->ctx || !r->hooks || !r->keys || !r->order || !r->bucket_of || !r->offset || !r->dt || !r->dev ||
        !r->numel || !r->ready || !r->used || !r->got) {
        nn_reducer_free(r);
        nn_error(NN_ERR_NOMEM, "DistributedDataParallel: out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!params[i]->requires_grad) continue;
        int k = r->n++;
        r->params[k] = nn_retain(params[i]);
        r->ctx[k] = (param_ctx){r, k};
        r->keys[k] = (param_key){params[i], k};
        r->hooks[k] = nn_add_post_accumulate_grad_hook(params[i], hook, &r->ctx[k], NULL);
        if (!r->hooks[k]) { nn_reducer_free(r); return NULL; }
    }
    qsort(r->keys, (size_t)r->n, sizeof *r->keys, key_cmp);
    if (build_layout(r)) { nn_reducer_free(r); return NULL; }
    return r;
}

void nn_reducer_free(nn_reducer *r)
{
    if (!r) return;
    free_layout(r);
    if (r->got) drop_got(r);
    for (int i = 0; i < r->n; i++) {
        if (r->hooks[i]) nn_remove_grad_hook(r->params[i], r->hooks[i]);
        nn_release(r->params[i]);
    }
    free(r->params);
    free(r->ctx);
    free(r->hooks);
    free(r->keys);
    free(r->order);
    free(r->bucket_of);
    free(r->offset);
    free(r->dt);
    free(r->dev);
    free(r->numel);
    free(r->ready);
    free(r->used);
    free(r->got);
    free(r);
}

int nn_reducer_buckets(nn_reducer *r, int *sizes, int *idx)
{
    for (int k = 0; k < r->nb; k++) {
        if (sizes) sizes[k] = r->b[k].count;
        if (idx) memcpy(idx + r->b[k].first, r->order + r->b[k].first, sizeof(int) * r->b[k].count);
    }
    return r->nb;
}

nn_status nn_reducer_set_comm_hook(nn_reducer *r, nn_comm_hook_kind kind, const nn_comm_hook *custom)
{
    if (r->hook_kind)
        return nn_error(NN_ERR_RUNTIME, kind == NN_COMM_HOOK_CUSTOM ? "register_comm_hook or register_builtin_comm_hook can only be called once."
                                                                    : "register_builtin_comm_hook or register_comm_hook can only be called once.");
    if (kind == NN_COMM_HOOK_CUSTOM) r->hook = *custom;
    r->hook_kind = kind;
    return NN_OK;
}

/* Parameter i's slice of flat (its bucket's buffer or a copy of it), shaped like the parameter. */
static nn_tensor *slice_of(nn_reducer *r, nn_tensor *flat, int i)
{
    nn_tensor *s = nn_narrow(flat, 0, r->offset[i], r->numel[i]);
    if (!s) return NULL;
    nn_tensor *v = nn_view(s, r->params[i]->ndim, r->params[i]->shape);
    nn_release(s);
    return v;
}

/* Parameter i's slice of its bucket's buffer (made now on first use). */
static nn_tensor *slice(nn_reducer *r, int i)
{
    bucket *b = &r->b[r->bucket_of[i]];
    if (!b->buf && !(b->buf = nn_empty(1, &b->numel, b->dt, b->dev))) return NULL;
    return slice_of(r, b->buf, i);
}

/* g is parameter i's slice of its bucket (a gradient_as_bucket_view .grad). */
static bool in_bucket(nn_reducer *r, int i, const nn_tensor *g)
{
    const bucket *b = &r->b[r->bucket_of[i]];
    return b->buf && g->storage == b->buf->storage && g->offset == b->buf->offset + r->offset[i] && nn_is_contiguous(g);
}

static nn_status finalize(nn_reducer *r)
{
    nn_status st = NN_OK;
    for (int k = 0; k < r->nb; k++) {
        nn_status s = r->b[k].work ? nn_work_wait(r->b[k].work) : NN_OK;
        nn_work_release(r->b[k].work);
        r->b[k].work = NULL;
        if (s && !st) st = s;
    }
    r->expect = false;
    for (int k = 0; k < r->nb && !st; k++) st = hook_result(r, k);
    if (st) return st;
    nn_tensor *used = NULL;
    if (r->o.find_unused_parameters) { /* which parameters got a gradient on some rank */
        int64_t n = r->n;
        nn_tensor *host = nn_empty(1, &n, NN_I32, NN_DEVICE_CPU), *dev = NULL;
        if (!host) return nn_last_status();
        memcpy(nn_data(host), r->used, sizeof(int32_t) * r->n);
        /* a GPU backend takes it on the buckets' GPU */
        dev = r->pg->ops->device == NN_CUDA ? nn_to_device(host, r->b[0].dev) : nn_retain(host);
        nn_work *w = dev ? nn_dist_all_reduce(r->pg, dev, NN_REDUCE_SUM) : NULL;
        st = w ? nn_work_wait(w) : nn_last_status();
        nn_work_release(w);
        used = st ? NULL : nn_to_device(dev, NN_DEVICE_CPU);
        nn_release(host);
        nn_release(dev);
        if (st) return st;
        if (!used) return nn_last_status();
    }
    for (int i = 0; i < r->n && !st; i++) {
        nn_tensor *p = r->params[i];
        if (used && ((int32_t *)nn_data(used))[i] == 0) continue; /* unused everywhere: .grad stays as it was */
        const bucket *b = &r->b[r->bucket_of[i]];
        if (p->grad && (in_bucket(r, i, p->grad) || b->direct == p->grad || b->grouped)) continue; /* averaged in place */
        nn_tensor *v = slice(r, i);
        if (!v) { st = nn_last_status(); break; }
        if (p->grad) st = nn_copy_(p->grad, v);
        else if (!(p->grad = nn_clone(v))) st = nn_last_status();
        nn_release(v);
    }
    nn_release(used);
    for (int k = 0; k < r->nb; k++) {
        nn_release(r->b[k].direct);
        r->b[k].direct = NULL;
    }
    drop_got(r);
    return st;
}

/* A bucket of several gradients whose backend reduces a list of tensors in one call:
 * the gradients are reduced where they are, with no copy into the bucket or back. */
static bool groupable(const nn_reducer *r, const bucket *b)
{
    return b->count > 1 && !r->o.gradient_as_bucket_view && r->pg->ops->all_reduce_many && !r->pass_hook;
}

/* A builtin hook's bucket: its gradients are gathered at launch straight into the hook's buffer. */
static bool gathers(const nn_reducer *r)
{
    return r->pass_hook && r->pass_hook != NN_COMM_HOOK_CUSTOM && !r->o.gradient_as_bucket_view;
}

/* a dense gradient of the bucket's dtype that no other tensor shares: it can be averaged where it is */
static bool own_dense(const bucket *b, const nn_tensor *g)
{
    return g->dtype == b->dt && nn_is_contiguous(g) && nn_sole_owner(g);
}

/* The gradients (zeros for the unused) copied into the bucket's buffer. */
static nn_status fill_buffer(nn_reducer *r, bucket *b)
{
    int *idx = r->order + b->first;
    for (int j = 0; j < b->count; j++) {
        int i = idx[j];
        nn_tensor *v = slice(r, i), *g = r->used[i] ? r->params[i]->grad : NULL;
        nn_status st = !v ? nn_last_status() : g ? nn_copy_(v, g) : nn_zero_(v);
        nn_release(v);
        if (st) return st;
    }
    return NN_OK;
}

/* One grouped all-reduce (averaging) of bucket b's gradients, each taken from got (NULL: its
 * slice of flat). */
static nn_work *all_reduce_each(nn_reducer *r, const bucket *b, nn_tensor *const *got, nn_tensor *flat)
{
    const int *idx = r->order + b->first;
    nn_tensor **ts = calloc((size_t)b->count, sizeof *ts);
    if (!ts) { nn_error(NN_ERR_NOMEM, "DistributedDataParallel: out of memory"); return NULL; }
    bool ok = true;
    for (int j = 0; j < b->count && ok; j++) ok = (ts[j] = got ? nn_retain(got[idx[j]]) : slice_of(r, flat, idx[j])) != NULL;
    nn_work *w = ok ? nn_dist_all_reduce_many(r->pg, ts, b->count, NN_REDUCE_AVG) : NULL;
    for (int j = 0; j < b->count; j++) nn_release(ts[j]);
    free(ts);
    return w;
}

/* A grouped bucket's all-reduce: in place, or (a gradient missing or not reducible in
 * place) through the bucket's buffer, copying the gradients in now. Either way it is one
 * all-reduce a gradient in one group: which way a rank takes depends on its own gradients,
 * and NCCL pairs the calls of a group one by one, so every rank must make the same calls. */
static nn_work *reduce_grouped(nn_reducer *r, bucket *b)
{
    if (!b->bad) {
        nn_work *w = all_reduce_each(r, b, r->got, NULL);
        b->grouped = w != NULL;
        return w;
    }
    return fill_buffer(r, b) ? NULL : all_reduce_each(r, b, NULL, b->buf);
}

/* comp: the gradients cast into the hook's dtype (from the buffer, or gathered from the
 * gradients themselves), divided by the world size first (no overflow in 16 bits). */
static nn_status compress(nn_reducer *r, bucket *b, nn_dtype dt)
{
    nn_release(b->comp);
    if (b->bad || !gathers(r)) { /* without gathering, mark_ready has filled the buffer already */
        b->comp = gathers(r) && fill_buffer(r, b) ? NULL : nn_to_dtype(b->buf, dt);
        if (!b->comp) return nn_last_status();
    } else {
        if (!(b->comp = nn_empty(1, &b->numel, dt, b->dev))) return nn_last_status();
        int *idx = r->order + b->first;
        for (int j = 0; j < b->count; j++) {
            nn_tensor *v = slice_of(r, b->comp, idx[j]);
            nn_status st = v ? nn_copy_(v, r->got[idx[j]]) : nn_last_status();
            nn_release(v);
            if (st) return st;
        }
        b->grouped = true;
    }
    nn_tensor *n = nn_scalar_f64((double)r->pg->size);
    nn_status st = n ? nn_binary_(NN_OP_div, b->comp, n) : nn_last_status();
    nn_release(n);
    return st;
}

/* A builtin hook's start: the compression, on the group's stream where it has one (off the
 * backward's stream, as the all-reduce), then the sum over the ranks. */
static nn_work *run_builtin(nn_reducer *r, bucket *b)
{
    nn_dtype dt = r->pass_hook == NN_COMM_HOOK_FP16 ? NN_F16 : r->pass_hook == NN_COMM_HOOK_BF16 ? NN_BF16 : b->dt;
    nn_gpu_stream *was = NULL, *cs = NULL;
    if (b->dev.type == NN_CUDA && nn_gpu && r->pg->ops->stream) {
        was = nn_gpu->current_stream(b->dev.index);
        cs = r->pg->ops->stream(r->pg, b->dev); /* it waits for what the current stream queued: the gradients */
        if (cs && nn_gpu->set_stream(cs)) return NULL;
    }
    nn_status st = compress(r, b, dt);
    nn_work *w = st ? NULL : nn_dist_all_reduce(r->pg, b->comp, NN_REDUCE_SUM);
    if (cs) {
        nn_status back = nn_gpu->set_stream(was);
        if (back && w) { nn_work_wait(w); nn_work_release(w); w = NULL; }
    }
    return w;
}

/* Bucket k's hook result into its buffer, once its work is done. */
static nn_status hook_result(nn_reducer *r, int k)
{
    bucket *b = &r->b[k];
    nn_tensor *out = b->comp;
    b->comp = NULL;
    nn_status st = NN_OK;
    if (r->pass_hook == NN_COMM_HOOK_CUSTOM && !(st = r->hook.result(r->hook.ctx, k, &out)) && nn_numel(out) != b->numel)
        st = nn_error(NN_ERR_RUNTIME, "DDP communication hook: the future of bucket %d holds a tensor of %lld elements, "
                                      "expected the bucket's %lld (the reduced bucket.buffer())",
                      k, (long long)nn_numel(out), (long long)b->numel);
    if (!st && out && b->grouped) { /* a builtin hook's sums, gathered from the gradients: back into them */
        int *idx = r->order + b->first;
        for (int j = 0; j < b->count && !st; j++) {
            nn_tensor *v = slice_of(r, out, idx[j]);
            st = v ? nn_copy_(r->got[idx[j]], v) : nn_last_status();
            nn_release(v);
        }
        /* out was made on the group's stream: no reuse there before these copies ran */
        if (!st && out->storage->device.type == NN_CUDA && nn_gpu) st = nn_gpu->record_stream(out, nn_gpu->current_stream(out->storage->device.index));
    } else if (!st && out && out != b->buf) {
        nn_tensor *flat = nn_reshape(out, 1, &b->numel);
        st = flat ? nn_copy_(b->buf, flat) : nn_last_status();
        nn_release(flat);
    }
    nn_release(out);
    return st;
}

static nn_status launch_ready(nn_reducer *r)
{
    while (r->next_launch < r->nb && r->b[r->next_launch].pending == 0) {
        int k = r->next_launch++;
        bucket *b = &r->b[k];
        if (r->pass_hook == NN_COMM_HOOK_CUSTOM) {
            nn_status st = r->hook.run(r->hook.ctx, k, b->buf, k == r->nb - 1);
            if (st) return st;
            continue;
        }
        b->work = r->pass_hook    ? run_builtin(r, b)
                  : groupable(r, b) ? reduce_grouped(r, b)
                                    : nn_dist_all_reduce(r->pg, b->direct ? b->direct : b->buf, NN_REDUCE_AVG);
        if (!b->work) return nn_last_status();
    }
    return r->next_launch == r->nb ? finalize(r) : NN_OK;
}

/* Parameter i's gradient is ready (or, unused, never will be): into its bucket. */
static nn_status mark_ready(nn_reducer *r, int i, bool unused)
{
    if (r->ready[i])
        return nn_error(NN_ERR_RUNTIME, "DistributedDataParallel: Expected to mark a variable ready only once. This error is caused by "
                                        "one of the following reasons: 1) Use of a module parameter outside the `forward` function; "
                                        "2) Reused parameters in multiple reentrant backward passes. Parameter index %d on rank %d.",
                        i, r->pg->rank);
    r->ready[i] = true;
    r->marked++;
    nn_tensor *p = r->params[i], *g = unused ? NULL : p->grad;
    r->used[i] = g != NULL;
    bucket *b = &r->b[r->bucket_of[i]];
    if (g && b->count == 1 && !r->pass_hook && !in_bucket(r, i, g) && own_dense(b, g)) {
        b->direct = nn_retain(g); /* its own bucket: averaged where it is */
    } else if (groupable(r, b)) { /* copied, if at all, when the bucket is complete */
        if (g && own_dense(b, g) && (nn_devtype)g->storage->device.type == r->pg->ops->device) r->got[i] = nn_retain(g);
        else b->bad++;
    } else if (gathers(r)) { /* cast into the hook's buffer when the bucket is complete */
        if (g && g->dtype == b->dt && nn_device_eq(g->storage->device, b->dev)) r->got[i] = nn_retain(g);
        else b->bad++;
    } else if (!g || !in_bucket(r, i, g)) {
        nn_tensor *v = slice(r, i);
        if (!v) return nn_last_status();
        nn_status st = g ? nn_copy_(v, g) : nn_zero_(v);
        if (!st && g && r->o.gradient_as_bucket_view) { /* .grad is the bucket's slice from now on */
            nn_release(p->grad);
            p->grad = nn_retain(v);
        }
        nn_release(v);
        if (st) return st;
    }
    if (--b->pending == 0) return launch_ready(r);
    return NN_OK;
}

static nn_status hook(nn_tensor *leaf, void *ctx)
{
    param_ctx *c = ctx;
    nn_reducer *r = c->r;
    if (!r->expect) return NN_OK; /* no_sync(), eval, or a backward DDP's forward did not prepare */
    return mark_ready(r, c->index, false);
}

nn_status nn_reducer_prepare_forward(nn_reducer *r)
{
    if (r->expect && r->marked > 0) {
        char idx[512] = "";
        size_t len = 0;
        int missing = 0;
        for (int i = 0; i < r->n; i++)
            if (!r->ready[i] && missing++ < 32 && len < sizeof idx - 16) len += (size_t)snprintf(idx + len, sizeof idx - len, "%s%d", len ? " " : "", i);
        return nn_error(NN_ERR_RUNTIME,
                        "Expected to have finished reduction in the prior iteration before starting a new one. This error indicates "
                        "that your module has parameters that were not used in producing loss. You can enable unused parameter "
                        "detection by passing the keyword argument `find_unused_parameters=true` to "
                        "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs participate "
                        "in calculating loss. Parameter indices which did not receive grad for rank %d: %s%s",
                        r->pg->rank, idx, missing > 32 ? " ..." : "");
    }
    return NN_OK;
}

static int find_param(nn_reducer *r, const nn_tensor *t)
{
    param_key k = {t, 0};
    param_key *f = bsearch(&k, r->keys, (size_t)r->n, sizeof *r->keys, key_cmp);
    return f ? f->index : -1;
}

/* Mark the parameters reached from the outputs' graphs in `reached`. */
static nn_status walk_graph(nn_reducer *r, nn_tensor *const *outputs, int n, bool *reached)
{
    int cap = 64, top = 0, nseen = 0, capseen = 64;
    nn_node **stack = malloc(sizeof *stack * cap), **seen = malloc(sizeof *seen * capseen);
    nn_status st = stack && seen ? NN_OK : nn_error(NN_ERR_NOMEM, "DistributedDataParallel: out of memory");
    for (int i = 0; i < n && !st; i++) {
        nn_tensor *t = outputs[i];
        if (!t) continue;
        if (!t->grad_fn) {
            int p = find_param(r, t);
            if (p >= 0) reached[p] = true;
            continue;
        }
        if (t->grad_fn->visited) continue;
        t->grad_fn->visited = true;
        stack[top++] = t->grad_fn;
        while (top && !st) {
            nn_node *x = stack[--top];
            if (nseen == capseen) {
                nn_node **s2 = realloc(seen, sizeof *seen * (capseen *= 2));
                if (!s2) { st = nn_error(NN_ERR_NOMEM, "DistributedDataParallel: out of memory"); break; }
                seen = s2;
            }
            seen[nseen++] = x;
            if (x->leaf) {
                int p = find_param(r, x->leaf);
                if (p >= 0) reached[p] = true;
            }
            for (int j = 0; j < x->nin; j++) {
                nn_node *c = x->next[j].node;
                if (!c || c->visited) continue;
                c->visited = true;
                if (top == cap) {
                    nn_node **s2 = realloc(stack, sizeof *stack * (cap *= 2));
                    if (!s2) { st = nn_error(NN_ERR_NOMEM, "DistributedDataParallel: out of memory"); break; }
                    stack = s2;
                }
                stack[top++] = c;
            }
        }
    }
    for (int k = 0; k < nseen; k++) seen[k]->visited = false;
    for (int k = 0; k < top; k++) stack[k]->visited = false;
    free(stack);
    free(seen);
    return st;
}

nn_status nn_reducer_prepare_backward(nn_reducer *r, nn_tensor *const *outputs, int n)
{
    bool stale = false;
    for (int i = 0; i < r->n; i++)
        stale |= r->params[i]->dtype != r->dt[i] || !nn_device_eq(r->params[i]->storage->device, r->dev[i]) || nn_numel(r->params[i]) != r->numel[i];
    if (stale && build_layout(r)) return nn_last_status();
    for (int k = 0; k < r->nb; k++) {
        bucket *b = &r->b[k];
        if (b->work) { nn_work_wait(b->work); nn_work_release(b->work); b->work = NULL; }
        b->pending = b->count;
        b->bad = 0;
        b->grouped = false;
    }
    drop_got(r);
    r->pass_hook = r->hook_kind;
    memset(r->ready, 0, sizeof *r->ready * (size_t)r->n);
    memset(r->used, 0, sizeof *r->used * (size_t)r->n);
    r->next_launch = 0;
    r->marked = 0;
    r->expect = r->nb > 0;
    if (!r->expect || !r->o.find_unused_parameters) return NN_OK;
    bool *reached = calloc((size_t)r->n, sizeof *reached);
    if (!reached) return nn_error(NN_ERR_NOMEM, "DistributedDataParallel: out of memory");
    nn_status st = walk_graph(r, outputs, n, reached);
    for (int i = 0; i < r->n && !st; i++)
        if (!reached[i]) st = mark_ready(r, i, true);
    free(reached);
    return st;
}

nn_status nn_reducer_shadow(nn_reducer *r, nn_tensor **out)
{
    nn_comm_hook_kind saved = r->pass_hook;
    r->pass_hook = NN_COMM_HOOK_NONE; /* the caller runs the hooks itself */
    nn_status st = NN_OK;
    for (int k = 0; k < r->nb; k++) out[k] = NULL;
    for (int k = 0; k < r->nb && !st; k++) {
        bucket *b = &r->b[k];
        nn_tensor *flat = nn_zeros(1, &b->numel, b->dt, b->dev);
        nn_work *w = !flat ? NULL : groupable(r, b) ? all_reduce_each(r, b, NULL, flat) : nn_dist_all_reduce(r->pg, flat, NN_REDUCE_AVG);
        st = w ? nn_work_wait(w) : nn_last_status();
        nn_work_release(w);
        out[k] = flat;
    }
    r->pass_hook = saved;
    return st;
}
