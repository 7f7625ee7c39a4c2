/* The autograd graph and the backward pass. Backward formulas live in engine/grad_*.c. */
#include "amp.h"
#include "autograd.h"
#include "autocast.h"
#include "memory_format.h"
#include "profiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local bool grad_off; /* grad mode is on unless set off */

bool nn_grad_enabled(void) { return !grad_off; }

static const char *grad_fn_name(const nn_tensor *t) { return t->grad_fn ? t->grad_fn->name : NULL; }

/* printing shows grad_fn=<...> through this hook (format.c does not depend on autograd) */
__attribute__((constructor)) static void set_name_hook(void) { nn_grad_fn_name_hook = grad_fn_name; }
void nn_set_grad_enabled(bool on) { grad_off = !on; }

static _Thread_local bool anomaly;
bool nn_anomaly_enabled(void) { return anomaly; }
void nn_set_anomaly_enabled(bool on) { anomaly = on; }

/* anomaly mode's check: an error naming node x when a gradient it returned holds a NaN */
static nn_status check_nan(const nn_node *x, nn_tensor *const *gin)
{
    for (int i = 0; i < x->nin; i++) {
        if (!gin[i] || !nn_dtype_is_differentiable(gin[i]->dtype)) continue;
        nn_tensor *ne = nn_binary(NN_OP_ne, gin[i], gin[i]);
        nn_tensor *any = ne ? nn_reduce(NN_OP_any, ne, 0, false) : NULL;
        nn_tensor *host = any ? nn_to_device(any, NN_DEVICE_CPU) : NULL;
        nn_release(ne);
        nn_release(any);
        if (!host) return nn_last_status();
        bool nan = nn_get_i64(host, NULL) != 0;
        nn_release(host);
        if (nan) return nn_error(NN_ERR_RUNTIME, "Function '%s' returned nan values in its %dth output.", x->name, i);
    }
    return NN_OK;
}

bool nn_any_requires_grad(int n, nn_tensor *const *ts)
{
    if (grad_off) return false;
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->requires_grad) return true;
    return false;
}

static _Thread_local uint64_t node_count;

static nn_node *node_alloc(const char *name, nn_backward_fn fn, int nin)
{
    nn_node *n = calloc(1, sizeof *n + (size_t)nin * sizeof(nn_edge));
    if (!n) return NULL;
    n->refcount = 1;
    n->seq = ++node_count;
    n->name = name;
    n->backward = fn;
    n->nin = nin;
    n->nout = 1;
    return n;
}

static nn_status accumulate_grad(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in);

/* an AccumulateGrad node of leaf t */
static nn_node *accumulator_new(nn_tensor *t)
{
    nn_node *acc = node_alloc("AccumulateGrad", accumulate_grad, 0);
    if (!acc) { nn_error(NN_ERR_NOMEM, "out of memory"); return NULL; }
    acc->seq = UINT64_MAX; /* runs as soon as it is ready */
    acc->leaf = nn_retain(t);
    return acc;
}

nn_node *nn_node_new(const char *name, nn_backward_fn fn, int nin, nn_tensor *const *inputs)
{
    nn_node *n = node_alloc(name, fn, nin);
    if (!n) { nn_error(NN_ERR_NOMEM, "out of memory recording %s", name); return NULL; }
    for (int i = 0; i < nin; i++) {
        nn_tensor *t = inputs[i];
        nn_edge *e = &n->next[i];
        if (!t) continue;
        e->ndim = t->ndim;
        memcpy(e->shape, t->shape, sizeof e->shape);
        e->dtype = t->dtype;
        e->device = t->storage->device;
        if (!t->requires_grad || t->wrapped_number) continue;
        if (nn_refresh_view_history(t)) { nn_node_release(n); return NULL; }
        if (t->grad_fn) {
            e->node = t->grad_fn;
            e->node->refcount++;
            e->input_nr = t->output_nr;
        } else if (!(e->node = accumulator_new(t))) {
            nn_node_release(n);
            return NULL;
        }
    }
    return n;
}

/* ---- errors of saving, raised later by the bindings ---- */
static _Thread_local struct { nn_status st; char msg[512]; } deferred;

static void defer_error(void)
{
    if (deferred.st) return; /* the first one is the one to report */
    deferred.st = nn_last_status() ? nn_last_status() : NN_ERR_RUNTIME;
    snprintf(deferred.msg, sizeof deferred.msg, "%s", nn_last_error());
}

bool nn_has_deferred_error(void) { return deferred.st != NN_OK; }

nn_status nn_take_deferred_error(void)
{
    nn_status st = deferred.st;
    if (!st) return NN_OK;
    deferred.st = NN_OK;
    return nn_error(st, "%s", deferred.msg);
}

static _Thread_local nn_pack_fn pack_hook;
void nn_set_saved_tensor_pack(nn_pack_fn fn) { pack_hook = fn; }

static void drop_saved(nn_node *n, int slot)
{
    nn_release(n->saved[slot]);
    n->saved[slot] = NULL;
    if (n->packed[slot]) n->packed[slot]->free(n->packed[slot]);
    n->packed[slot] = NULL;
}

/* the pack hook's value for keep, or NULL (none set, or it failed: then deferred; once an error
 * is deferred the op fails anyway, and the hook is not run) */
static nn_packed *pack(nn_tensor *keep)
{
    if (!pack_hook || deferred.st) return NULL;
    nn_pack_fn fn = pack_hook;
    bool was = nn_grad_enabled();
    nn_set_grad_enabled(false);
    pack_hook = NULL; /* what the hook runs saves nothing (grad mode is off), and never re-enters */
    nn_packed *p = fn(keep);
    pack_hook = fn;
    nn_set_grad_enabled(was);
    if (!p) defer_error();
    return p;
}

void nn_node_save(nn_node *n, int slot, nn_tensor *t)
{
    if (nn_is_inference(t) && !nn_inference_mode_enabled()) {
        nn_error(NN_ERR_RUNTIME, "Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal "
                                 "tensor and use it in autograd.");
        defer_error();
    }
    bool output = t->grad_fn == n;
    nn_tensor *keep = output ? nn_detach(t) : nn_retain(t);
    n->saved_output = (uint8_t)((n->saved_output & ~(1u << slot)) | (output ? 1u << slot : 0));
    drop_saved(n, slot);
    n->saved_nr[slot] = t->output_nr;
    n->packed[slot] = keep ? pack(keep) : NULL;
    if (n->packed[slot]) {
        nn_release(keep);
        return;
    }
    n->saved[slot] = keep;
    n->saved_version[slot] = t->storage->version;
    n->saved_fn[slot] = t->grad_fn ? t->grad_fn->name : NULL;
}

bool nn_node_has_saved(const nn_node *n, int slot) { return n->saved[slot] || n->packed[slot]; }

/* ---- create_graph: the pass's state, and saved outputs given their history back ---- */
static _Thread_local bool retaining, creating;
static _Thread_local const nn_node *running; /* the node whose backward runs now */
static _Thread_local struct { nn_tensor **v; int n, cap; } live; /* aliases made while it runs */

bool nn_backward_retains_graph(void) { return retaining; }
bool nn_backward_creates_graph(void) { return creating; }

nn_status nn_no_double_backward(const char *what)
{
    return nn_error(NN_ERR_NOTIMPL, "double backward (create_graph=true) through %s is not supported: its backward %s",
                    running ? running->name : "this op", what);
}

/* Keep t (taken) until the running node's backward ends; returns it borrowed, or NULL. */
static nn_tensor *keep_live(nn_tensor *t)
{
    if (!t) return NULL;
    if (live.n == live.cap) {
        int cap = live.cap ? live.cap * 2 : 16;
        nn_tensor **v = realloc(live.v, sizeof *v * cap);
        if (!v) {
            nn_release(t);
            nn_error(NN_ERR_NOMEM, "out of memory in backward");
            return NULL;
        }
        live.v = v, live.cap = cap;
    }
    live.v[live.n++] = t;
    return t;
}

/* A saved output with its history (grad_fn: the node that made it), kept until the node's backward ends. */
static nn_tensor *live_output(nn_node *n, int slot, nn_tensor *saved)
{
    nn_tensor *a = nn_detach(saved);
    if (a) nn_node_set_output(n, a, n->saved_nr[slot]);
    return keep_live(a);
}

/* A packed saved value through its unpack function. */
static nn_tensor *unpacked(nn_node *n, int slot)
{
    nn_tensor *t = n->packed[slot]->unpack(n->packed[slot]);
    if (!t) return NULL;
    if (creating && (n->saved_output >> slot & 1)) {
        nn_tensor *a = live_output(n, slot, t);
        nn_release(t);
        return a;
    }
    return keep_live(t);
}

const char nn_saved_freed_message[] =
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already been "
    "freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors "
    "after calling backward.";

nn_tensor *nn_node_saved(nn_node *n, int slot)
{
    nn_tensor *t = n->saved[slot];
    if (!n->released && n->packed[slot]) return unpacked(n, slot);
    if (n->released || !t) {
        nn_error(NN_ERR_RUNTIME, "%s", nn_saved_freed_message);
        return NULL;
    }
    if (t->storage->version != n->saved_version[slot]) {
        char b[160], ty[48], from[96] = "";
        if (n->saved_fn[slot]) snprintf(from, sizeof from, ", which is output %d of %s,", n->saved_nr[slot], n->saved_fn[slot]);
        nn_error(NN_ERR_RUNTIME, "one of the variables needed for gradient computation has been modified by an inplace operation: "
                                 "[%s %s]%s is at version %u; expected version %u instead. Hint: enable anomaly detection to find "
                                 "the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).",
                 nn_type_str(ty, t), nn_shape_str(b, t->ndim, t->shape), from, t->storage->version, n->saved_version[slot]);
        return NULL;
    }
    if (creating && (n->saved_output >> slot & 1)) return live_output(n, slot, t);
    return t;
}

void nn_node_set_output(nn_node *n, nn_tensor *out, int output_nr)
{
    n->refcount++;
    if (out->grad_fn) { /* an in-place op: a retain_grad moves to the new history */
        nn_node *old = out->grad_fn;
        if (out->retains_grad && old->retained[out->output_nr] == out) {
            old->retained[out->output_nr] = NULL;
            n->retained[output_nr] = out;
        }
        nn_node_release(old);
    }
    out->grad_fn = n;
    out->output_nr = output_nr;
    out->requires_grad = true;
    out->view_version = out->storage->version;
    if (output_nr + 1 > n->nout) n->nout = output_nr + 1;
}

static bool has_saved(const nn_node *n)
{
    for (int i = 0; i < NN_NODE_MAX_SAVED; i++)
        if (nn_node_has_saved(n, i)) return true;
    return false;
}

static void release_saved(nn_node *n)
{
    for (int i = 0; i < NN_NODE_MAX_SAVED; i++) drop_saved(n, i);
}

/* Iterative, so a long chain of nodes (an RNN unrolled 10^5 times) cannot overflow the C stack. */
struct nn_pass_end {
    nn_pass_end_fn fn;
    void *ctx;
    void (*free_ctx)(void *);
};

static void free_pass_end(struct nn_pass_end *e)
{
    if (!e) return;
    if (e->free_ctx) e->free_ctx(e->ctx);
    free(e);
}

nn_status nn_node_at_pass_end(nn_node *n, nn_pass_end_fn fn, void *ctx, void (*free_ctx)(void *))
{
    struct nn_pass_end *e = malloc(sizeof *e);
    if (!e) {
        if (free_ctx) free_ctx(ctx);
        return nn_error(NN_ERR_NOMEM, "out of memory");
    }
    *e = (struct nn_pass_end){fn, ctx, free_ctx};
    free_pass_end(n->pass_end);
    n->pass_end = e;
    return NN_OK;
}

static void hooks_free(struct nn_hook_list *h);
static void extra_free(struct nn_node_extra *x);

void nn_node_release(nn_node *n)
{
    nn_node *stack[64], **heap = NULL;
    int top = 0, cap = 64;
    nn_node **st = stack;
    if (n) st[top++] = n;
    while (top) {
        nn_node *x = st[--top];
        if (--x->refcount > 0) continue;
        for (int i = 0; i < x->nin; i++) {
            nn_node *c = x->next[i].node;
            if (!c) continue;
            if (top == cap) {
                nn_node **bigger = malloc(sizeof *bigger * cap * 2);
                if (!bigger) { nn_node_release(c); continue; } /* recursion as a last resort */
                memcpy(bigger, st, sizeof *st * top);
                free(heap);
                st = heap = bigger;
                cap *= 2;
            }
            st[top++] = c;
        }
        if (x->inner) { /* released like an input (the stack has room: just checked or grown) */
            if (top == cap) nn_node_release(x->inner);
            else st[top++] = x->inner;
        }
        release_saved(x);
        for (int k = 0; k < NN_NODE_MAX_OUT; k++) nn_release(x->grad_buf[k]);
        hooks_free(x->pre_hooks);
        free(x->pre_hooks);
        extra_free(x->extra);
        free(x->extra);
        nn_release(x->leaf);
        free_pass_end(x->pass_end);
        if (x->ctx_free) x->ctx_free(x->ctx);
        else free(x->ctx);
        free(x);
    }
    free(heap);
}

void nn_autograd_drop(nn_tensor *t)
{
    nn_node *n = t->grad_fn;
    if (t->retains_grad && n->retained[t->output_nr] == t) n->retained[t->output_nr] = NULL;
    t->grad_fn = NULL;
    nn_node_release(n);
}

nn_tensor *nn_detach(nn_tensor *t)
{
    nn_tensor *d = nn_make_view(t, t->ndim, t->shape, t->strides, t->offset);
    return d;
}

nn_status nn_detach_(nn_tensor *t)
{
    if (t->grad_fn) nn_autograd_drop(t);
    t->requires_grad = false;
    t->retains_grad = false;
    return NN_OK;
}

bool nn_is_leaf(const nn_tensor *t) { return t->grad_fn == NULL; }

nn_status nn_requires_grad_(nn_tensor *t, bool on)
{
    if (!nn_is_leaf(t)) {
        if (on) return NN_OK;
        return nn_error(NN_ERR_RUNTIME, "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                                        "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
    }
    if (on && !nn_dtype_is_differentiable(t->dtype))
        return nn_error(NN_ERR_DTYPE, "only Tensors of floating point and complex dtype can require gradients (got %s)", nn_dtype_name(t->dtype));
    t->requires_grad = on;
    return NN_OK;
}

nn_status nn_retain_grad(nn_tensor *t)
{
    if (!t->requires_grad) return nn_error(NN_ERR_RUNTIME, "can't retain_grad on Tensor that has requires_grad=False");
    if (nn_is_leaf(t)) return NN_OK;
    t->retains_grad = true;
    t->grad_fn->retained[t->output_nr] = t;
    return NN_OK;
}

nn_status nn_check_inference_inplace(const nn_tensor *t)
{
    if (nn_is_inference(t) && !nn_inference_mode_enabled())
        return nn_error(NN_ERR_RUNTIME, "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get "
                                        "a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.");
    return NN_OK;
}

nn_status nn_check_inplace(const char *fn, nn_tensor *t)
{
    if (nn_check_inference_inplace(t)) return nn_last_status();
    if (grad_off || !t->requires_grad) return NN_OK;
    if (nn_is_leaf(t))
        return nn_error(NN_ERR_RUNTIME, "%s: a leaf Variable that requires grad is being used in an in-place operation.", fn);
    nn_node *n = t->grad_fn;
    while (n && n->view && n->nin == 1) n = n->next[0].node; /* down a chain of views to their base */
    if (n && n->leaf)
        return nn_error(NN_ERR_RUNTIME, "%s: a view of a leaf Variable that requires grad is being used in an in-place operation.", fn);
    return NN_OK;
}

nn_tensor *nn_grad_to_input(nn_tensor *g, const nn_edge *e)
{
    nn_tensor *r = nn_retain(g);
    bool same = g->ndim == e->ndim && !memcmp(g->shape, e->shape, sizeof(int64_t) * e->ndim);
    if (!same) {
        uint32_t dims = 0;
        int lead = g->ndim - e->ndim;
        for (int d = 0; d < g->ndim; d++)
            if (d < lead || (e->shape[d - lead] == 1 && g->shape[d] != 1)) dims |= 1u << d;
        nn_tensor *s = dims ? nn_sum_dtype(g, dims, true, g->dtype) : nn_retain(g);
        nn_release(r);
        if (!s) return NULL;
        r = nn_reshape(s, e->ndim, e->shape);
        nn_release(s);
        if (!r) return NULL;
    }
    if (r->dtype != e->dtype) {
        /* a float16/bfloat16 gradient on its way to a float32 .grad (autocast's weights): the cast
         * also records whether it met an inf or nan, which GradScaler then reads instead of .grad */
        bool checked = e->node && e->node->leaf && e->dtype == NN_F32 && (r->dtype == NN_F16 || r->dtype == NN_BF16) &&
                       !r->requires_grad && nn_is_dense(r);
        nn_tensor *c = checked ? nn_cast_checked(r, e->dtype) : nn_to_dtype_preserve(r, e->dtype);
        nn_release(r);
        r = c;
    }
    return r;
}

/* Add g into *slot: take g when the slot is empty, else slot + g (a new tensor). */
static nn_status accumulate(nn_tensor **slot, nn_tensor *g)
{
    if (!*slot) { *slot = nn_retain(g); return NN_OK; }
    nn_tensor *s = nn_binary(NN_OP_add, *slot, g);
    if (!s) return nn_last_status();
    nn_release(*slot);
    *slot = s;
    return NN_OK;
}

/* A gradient stored in .grad must not alias another tensor that may be changed in place. It
 * takes the parameter's layout when that is dense (PyTorch's layout contract: a channels-last
 * weight gets a channels-last .grad, and the fused optimizers run on both in place), else
 * contiguous. */
static nn_tensor *own_copy(const nn_tensor *param, nn_tensor *g)
{
    bool like = !nn_is_contiguous(param) && nn_is_dense(param);
    if (g->refcount == 1 && nn_sole_owner(g) && !g->requires_grad && (like ? nn_same_strides(g, param) : nn_is_contiguous(g)))
        return nn_retain(g);
    return like ? nn_copy_as(g, param->strides, g->dtype, "CloneBackward0") : nn_clone(g);
}

nn_status nn_accumulate_grad(nn_tensor *t, nn_tensor *g)
{
    if (t->grad && (creating || t->grad->requires_grad)) { /* a gradient with history: sum out of place, as PyTorch */
        nn_tensor *s = nn_binary(NN_OP_add, t->grad, g);
        if (!s) return nn_last_status();
        nn_release(t->grad);
        t->grad = s;
        return NN_OK;
    }
    if (t->grad) return nn_binary_(NN_OP_add, t->grad, g);
    nn_tensor *c = own_copy(t, g);
    if (!c) return nn_last_status();
    t->grad = c;
    return NN_OK;
}

static nn_status accumulate_grad(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    (void)grad_in;
    return grad_out[0] ? nn_accumulate_grad(n->leaf, grad_out[0]) : NN_OK;
}

/* ---- hooks on gradients: a leaf's post-accumulate-grad hooks, and tensor hooks (a leaf's
 * kept on the tensor, a non-leaf's on its grad_fn) ---- */

typedef struct {
    int64_t handle;
    int output_nr;          /* tensor hooks: which output of the node */
    nn_grad_hook_fn post;   /* one of the three is set; none: removed */
    nn_tensor_hook_fn pre;
    nn_node_hook_fn node;
    void *ctx;
    void (*free_ctx)(void *);
} hook;

struct nn_hook_list {
    int n, cap;
    hook *v;
};

/* a node's hooks and metadata */
struct nn_node_extra {
    struct nn_hook_list pre, post;
    void *meta;
    void (*meta_free)(void *);
};

struct nn_grad_hooks {
    struct nn_hook_list post, pre;
    struct nn_node_extra acc; /* those of the leaf's AccumulateGrad nodes */
    uint32_t pass;    /* the pass the four below belong to (0: none), as nn_node's */
    bool computes;    /* this pass: its gradient is computed */
    int pending;      /* this pass: AccumulateGrad nodes of the leaf still to run */
    bool accumulated; /* this pass: some gradient reached the leaf */
    nn_tensor *sum;   /* this pass: the leaf's gradient so far, when it has tensor hooks */
};

static int64_t next_hook_handle;

static int64_t hooks_add(struct nn_hook_list *h, hook k)
{
    if (h->n == h->cap) {
        int cap = h->cap ? h->cap * 2 : 2;
        hook *v = realloc(h->v, sizeof *v * cap);
        if (!v) { nn_error(NN_ERR_NOMEM, "out of memory"); return 0; }
        h->v = v;
        h->cap = cap;
    }
    k.handle = ++next_hook_handle;
    h->v[h->n++] = k;
    return k.handle;
}

static bool hook_on(const hook *k) { return k->post || k->pre || k->node; }

static bool hooks_live(const struct nn_hook_list *h)
{
    for (int i = 0; h && i < h->n; i++)
        if (hook_on(&h->v[i])) return true;
    return false;
}

/* Removal during a pass only clears the entry (the pass may be iterating). */
static void hooks_remove(struct nn_hook_list *h, int64_t handle)
{
    for (int i = 0; h && i < h->n; i++)
        if (h->v[i].handle == handle && hook_on(&h->v[i])) {
            h->v[i].post = NULL;
            h->v[i].pre = NULL;
            h->v[i].node = NULL;
            if (h->v[i].free_ctx) h->v[i].free_ctx(h->v[i].ctx);
        }
}

static void hooks_free(struct nn_hook_list *h)
{
    for (int i = 0; h && i < h->n; i++)
        if (hook_on(&h->v[i]) && h->v[i].free_ctx) h->v[i].free_ctx(h->v[i].ctx);
    if (h) free(h->v);
}

static void extra_free(struct nn_node_extra *x)
{
    if (!x) return;
    hooks_free(&x->pre);
    hooks_free(&x->post);
    if (x->meta_free) x->meta_free(x->meta);
}

static struct nn_grad_hooks *grad_hooks_of(nn_tensor *t)
{
    if (!t->grad_hooks && !(t->grad_hooks = calloc(1, sizeof *t->grad_hooks))) nn_error(NN_ERR_NOMEM, "out of memory");
    return t->grad_hooks;
}

int64_t nn_add_post_accumulate_grad_hook(nn_tensor *leaf, nn_grad_hook_fn fn, void *ctx, void (*free_ctx)(void *))
{
    if (!nn_is_leaf(leaf)) {
        nn_error(NN_ERR_RUNTIME, "post accumulate grad hooks cannot be registered on non-leaf tensors");
        return 0;
    }
    struct nn_grad_hooks *h = grad_hooks_of(leaf);
    return h ? hooks_add(&h->post, (hook){.post = fn, .ctx = ctx, .free_ctx = free_ctx}) : 0;
}

int64_t nn_add_tensor_hook(nn_tensor *t, nn_tensor_hook_fn fn, void *ctx, void (*free_ctx)(void *))
{
    if (!t->requires_grad) {
        nn_error(NN_ERR_RUNTIME, "cannot register a hook on a tensor that doesn't require gradient");
        return 0;
    }
    if (nn_refresh_view_history(t)) return 0;
    hook k = {.output_nr = t->grad_fn ? t->output_nr : 0, .pre = fn, .ctx = ctx, .free_ctx = free_ctx};
    if (!t->grad_fn) {
        struct nn_grad_hooks *h = grad_hooks_of(t);
        return h ? hooks_add(&h->pre, k) : 0;
    }
    if (!t->grad_fn->pre_hooks && !(t->grad_fn->pre_hooks = calloc(1, sizeof *t->grad_fn->pre_hooks))) {
        nn_error(NN_ERR_NOMEM, "out of memory");
        return 0;
    }
    return hooks_add(t->grad_fn->pre_hooks, k);
}

void nn_remove_grad_hook(nn_tensor *t, int64_t handle)
{
    if (t->grad_hooks) {
        hooks_remove(&t->grad_hooks->post, handle);
        hooks_remove(&t->grad_hooks->pre, handle);
    }
    if (t->grad_fn) hooks_remove(t->grad_fn->pre_hooks, handle);
}

void nn_grad_hooks_free(nn_tensor *t)
{
    struct nn_grad_hooks *h = t->grad_hooks;
    t->grad_hooks = NULL;
    if (!h) return;
    hooks_free(&h->post);
    hooks_free(&h->pre);
    extra_free(&h->acc);
    nn_release(h->sum);
    free(h);
}

/* n's hooks and metadata (an AccumulateGrad node's: its leaf's), made when missing */
static struct nn_node_extra *extra_of(nn_node *n)
{
    if (n->leaf) {
        struct nn_grad_hooks *h = grad_hooks_of(n->leaf);
        return h ? &h->acc : NULL;
    }
    if (!n->extra && !(n->extra = calloc(1, sizeof *n->extra))) nn_error(NN_ERR_NOMEM, "out of memory");
    return n->extra;
}

int64_t nn_node_add_hook(nn_node *n, bool pre, nn_node_hook_fn fn, void *ctx, void (*free_ctx)(void *))
{
    struct nn_node_extra *x = extra_of(n);
    return x ? hooks_add(pre ? &x->pre : &x->post, (hook){.node = fn, .ctx = ctx, .free_ctx = free_ctx}) : 0;
}

void nn_node_remove_hook(nn_node *n, int64_t handle)
{
    struct nn_node_extra *x = n->leaf ? (n->leaf->grad_hooks ? &n->leaf->grad_hooks->acc : NULL) : n->extra;
    if (!x) return;
    hooks_remove(&x->pre, handle);
    hooks_remove(&x->post, handle);
}

void **nn_node_meta(nn_node *n, void (*free_fn)(void *))
{
    struct nn_node_extra *x = extra_of(n);
    if (!x) return NULL;
    x->meta_free = free_fn;
    return &x->meta;
}

nn_node *nn_gradient_node(nn_tensor *t, int *output_nr)
{
    if (!t->requires_grad) {
        nn_error(NN_ERR_RUNTIME, "It is not possible to get the gradient edge for a Tensor that does not require gradients");
        return NULL;
    }
    if (nn_refresh_view_history(t)) return NULL;
    *output_nr = t->grad_fn ? t->output_nr : 0;
    if (!t->grad_fn) return accumulator_new(t);
    t->grad_fn->refcount++;
    return t->grad_fn;
}

/* whether out may replace the gradient g (same size, dtype and device) */
static nn_status check_replacement(const nn_tensor *g, const nn_tensor *out)
{
    char a[160], b[160];
    if (out->ndim != g->ndim || memcmp(out->shape, g->shape, sizeof(int64_t) * out->ndim))
        return nn_error(NN_ERR_SHAPE, "a hook changed the size of the gradient (was torch.Size(%s) got torch.Size(%s))",
                        nn_shape_str(a, g->ndim, g->shape), nn_shape_str(b, out->ndim, out->shape));
    if (out->dtype != g->dtype)
        return nn_error(NN_ERR_DTYPE, "a hook changed the type of the gradient (was %s got %s)", nn_dtype_name(g->dtype), nn_dtype_name(out->dtype));
    if (out->storage->device.type != g->storage->device.type || out->storage->device.index != g->storage->device.index)
        return nn_error(NN_ERR_DEVICE, "a hook changed the device of the gradient");
    return NN_OK;
}

/* x's node hooks in h, in order: pre hooks may replace gout[0..nout), post hooks gin[0..nin) */
static nn_status node_hooks_run(struct nn_hook_list *h, bool pre, nn_node *x, int nin, nn_tensor **gin, int nout, nn_tensor **gout)
{
    int nr = pre ? nout : nin;
    nn_tensor **g = pre ? gout : gin;
    for (int i = 0; h && i < h->n; i++) {
        hook k = h->v[i];
        if (!k.node) continue;
        nn_tensor *small[8] = {0}, **repl = nr > 8 ? calloc(nr, sizeof *repl) : small;
        if (!repl) return nn_error(NN_ERR_NOMEM, "out of memory");
        bool replace = false;
        nn_status st = k.node(x, nin, gin, nout, gout, &replace, repl, k.ctx);
        for (int j = 0; j < nr && !st && replace; j++)
            if (repl[j] && !g[j]) st = nn_error(NN_ERR_RUNTIME, "can't replace a None gradient with a non-None value");
            else if (repl[j]) st = check_replacement(g[j], repl[j]);
        for (int j = 0; j < nr; j++) {
            if (!st && replace) {
                nn_release(g[j]);
                g[j] = repl[j];
            } else nn_release(repl[j]);
        }
        if (repl != small) free(repl);
        if (st) return st;
        h = pre ? &extra_of(x)->pre : &extra_of(x)->post; /* a hook may have added hooks */
    }
    return NN_OK;
}

/* Output output_nr's gradient *g through the tensor hooks, in order (a hook may add hooks:
 * the list is read afresh each time). */
static nn_status tensor_hooks_run(struct nn_hook_list *h, int output_nr, nn_tensor **g)
{
    for (int i = 0; i < h->n; i++) {
        hook k = h->v[i];
        if (!k.pre || k.output_nr != output_nr) continue;
        nn_tensor *out = NULL;
        nn_status st = k.pre(*g, k.ctx, &out);
        if (st || !out) {
            nn_release(out);
            if (st) return st;
            continue;
        }
        if ((st = check_replacement(*g, out))) {
            nn_release(out);
            return st;
        }
        nn_release(*g);
        *g = out;
    }
    return NN_OK;
}

static nn_status run_grad_hooks(nn_tensor *leaf)
{
    struct nn_hook_list *h = &leaf->grad_hooks->post;
    for (int i = 0; i < h->n; i++) {
        hook k = h->v[i];
        if (!k.post) continue;
        nn_status st = k.post(leaf, k.ctx);
        if (st) return st;
        h = &leaf->grad_hooks->post; /* a hook may have added hooks */
    }
    return NN_OK;
}

/* A leaf's AccumulateGrad node x has run (accumulated: a gradient reached it): run the
 * leaf's hooks after the last of its nodes in this pass. */
static nn_status leaf_done(nn_node *x, bool accumulated)
{
    struct nn_grad_hooks *h = x->leaf ? x->leaf->grad_hooks : NULL;
    if (!h) return NN_OK;
    h->accumulated |= accumulated;
    if (--h->pending > 0 || !h->accumulated) return NN_OK;
    h->accumulated = false;
    if (!h->sum) return run_grad_hooks(x->leaf);
    /* the pass's whole gradient, through the tensor hooks and the node's pre hooks, into .grad;
     * then the post-accumulate-grad hooks and the node's post hooks */
    nn_tensor *g = h->sum;
    h->sum = NULL;
    nn_status st = tensor_hooks_run(&h->pre, 0, &g);
    if (!st) st = node_hooks_run(&h->acc.pre, true, x, 0, NULL, 1, &g);
    if (!st && g) st = nn_accumulate_grad(x->leaf, g);
    if (!st) st = run_grad_hooks(x->leaf);
    if (!st) st = node_hooks_run(&h->acc.post, false, x, 0, NULL, 1, &g);
    nn_release(g);
    return st;
}

/* A leaf with tensor hooks or node hooks collects its gradient over the pass (they see it whole, once). */
static bool leaf_collects(const nn_node *x)
{
    const struct nn_grad_hooks *h = x->leaf ? x->leaf->grad_hooks : NULL;
    return h && (hooks_live(&h->pre) || hooks_live(&h->acc.pre) || hooks_live(&h->acc.post));
}

/* the node x's backward into gin, between its pre and post hooks */
static nn_status run_node(nn_node *x, nn_tensor **gin)
{
    struct nn_node_extra *ex = x->extra;
    nn_status st = ex ? node_hooks_run(&ex->pre, true, x, x->nin, gin, x->nout, x->grad_buf) : NN_OK;
    bool any = false;
    for (int k = 0; k < x->nout; k++) any |= x->grad_buf[k] != NULL;
    if (st || !any) return st; /* a pre hook may have taken every gradient away */
    running = x;
    int64_t prof = nn_profiling ? nn_profiler_push(NN_PROF_NODE, x->name) : -1;
    if (!(st = x->backward(x, x->grad_buf, gin)) && anomaly) st = check_nan(x, gin);
    nn_profiler_pop(prof);
    running = NULL;
    if (st || !ex || !hooks_live(&ex->post)) return st;
    for (int i = 0; i < x->nin; i++) { /* the hooks see the gradients as the inputs get them */
        nn_tensor *g = gin[i];
        gin[i] = g && x->next[i].node ? nn_grad_to_input(g, &x->next[i]) : NULL;
        nn_release(g);
        if (g && x->next[i].node && !gin[i]) return nn_last_status();
    }
    return node_hooks_run(&ex->post, false, x, x->nin, gin, x->nout, x->grad_buf);
}

static _Thread_local uint64_t pass_count, pass_id;
static _Thread_local const nn_grad_targets *pass_want;

uint64_t nn_backward_pass_id(void) { return pass_id; }

bool nn_backward_computes(const nn_tensor *t)
{
    if (!pass_id) return false;
    if (!t->grad_fn) return t->grad_hooks && t->grad_hooks->pass == (uint32_t)pass_id && t->grad_hooks->computes;
    return t->grad_fn->pass == (uint32_t)pass_id && (!pass_want || t->grad_fn->need == 2);
}

/* ---- nested passes ----
 * A pass's state lives on the nodes it reaches (deps, need, grad_buf) and on their leaves' hook
 * records (pending, accumulated, computes, sum), tagged with the pass (the low 32 bits of its
 * number, never 0: the tag sits where nn_node had padding); the pass clears state and tag as it
 * ends. A pass started while another runs (autograd.grad or backward() from a custom Function's
 * backward, from a hook, in a checkpoint's recomputation) sets the outer pass's state aside on
 * this stack as it first reaches each such node, starts it clean, and puts it back when it ends,
 * after an error too. Passes nest strictly on a thread, so one stack serves (PyTorch keeps the
 * state per GraphTask instead). A plain pass only tests the tag. */
typedef struct {
    nn_node *node;               /* a node's state, or */
    struct nn_grad_hooks *hooks; /* a leaf's */
    uint32_t pass;
    int count;                   /* deps, or pending */
    uint8_t need;
    bool computes, accumulated;
    nn_tensor *buf[NN_NODE_MAX_OUT]; /* grad_buf, or sum in buf[0] (references) */
} stashed;
static _Thread_local struct { stashed *v; int n, cap; } stash;

/* join_pass's way for a node that has state of an outer pass or a leaf with hook records */
static nn_status join_pass_slow(nn_node *x, uint32_t id)
{
    struct nn_grad_hooks *h = x->leaf ? x->leaf->grad_hooks : NULL;
    if ((x->pass || (h && h->pass && h->pass != id)) && stash.n + 2 > stash.cap) {
        int cap = stash.cap ? stash.cap * 2 : 16;
        stashed *v = realloc(stash.v, sizeof *v * cap);
        if (!v) return nn_error(NN_ERR_NOMEM, "out of memory in backward");
        stash.v = v, stash.cap = cap;
    }
    if (x->pass) {
        stashed *s = &stash.v[stash.n++];
        *s = (stashed){.node = x, .pass = x->pass, .count = x->deps, .need = x->need};
        memcpy(s->buf, x->grad_buf, sizeof s->buf);
        memset(x->grad_buf, 0, sizeof x->grad_buf);
        x->deps = 0, x->need = 0;
    }
    x->pass = id;
    if (!h) return NN_OK;
    if (h->pass != id) {
        if (h->pass) {
            stashed *s = &stash.v[stash.n++];
            *s = (stashed){.hooks = h, .pass = h->pass, .count = h->pending, .computes = h->computes, .accumulated = h->accumulated,
                           .buf = {h->sum}};
            h->pending = 0, h->computes = false, h->accumulated = false, h->sum = NULL;
        }
        h->pass = id;
    }
    h->pending++;
    return NN_OK;
}

/* x joins the running pass, numbered id: an outer pass's state on it and its leaf is set aside,
 * all or nothing (x keeps its tag on an error) */
static inline nn_status join_pass(nn_node *x, uint32_t id)
{
    if (x->pass || (x->leaf && x->leaf->grad_hooks)) return join_pass_slow(x, id);
    x->pass = id;
    return NN_OK;
}

/* The state set aside since the stack held `base` entries back where it was (after the
 * ending pass cleared its own). */
static void restore_stashed(int base)
{
    while (stash.n > base) {
        stashed *s = &stash.v[--stash.n];
        if (s->node) {
            nn_node *x = s->node;
            x->pass = s->pass, x->deps = s->count, x->need = s->need;
            memcpy(x->grad_buf, s->buf, sizeof s->buf);
        } else {
            struct nn_grad_hooks *h = s->hooks;
            h->pass = s->pass, h->pending = s->count, h->computes = s->computes, h->accumulated = s->accumulated;
            h->sum = s->buf[0];
        }
    }
}

typedef struct { nn_node **v; int n, cap; } node_list;

static bool push(node_list *l, nn_node *x)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        nn_node **v = realloc(l->v, sizeof *v * cap);
        if (!v) return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return true;
}

/* The ready nodes as a max-heap on seq, PyTorch's engine order: the node made last in the
 * forward runs first, and AccumulateGrad (seq UINT64_MAX) before anything, so a leaf's
 * gradient (and its hooks, DDP's bucket all-reduce among them) is done as soon as it is
 * computed, and a parameter's own chain (autocast's cast back to float32, ToCopyBackward0)
 * runs right after the op that used it rather than after the rest of the graph. */
static bool heap_push(node_list *h, nn_node *x)
{
    if (!push(h, x)) return false;
    for (int i = h->n - 1; i > 0;) {
        int p = (i - 1) / 2;
        if (h->v[p]->seq >= h->v[i]->seq) break;
        nn_node *t = h->v[p];
        h->v[p] = h->v[i], h->v[i] = t, i = p;
    }
    return true;
}

static nn_node *heap_pop(node_list *h)
{
    nn_node *top = h->v[0];
    h->v[0] = h->v[--h->n];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->v[l]->seq > h->v[m]->seq) m = l;
        if (r < h->n && h->v[r]->seq > h->v[m]->seq) m = r;
        if (m == i) break;
        nn_node *t = h->v[m];
        h->v[m] = h->v[i], h->v[i] = t, i = m;
    }
    return top;
}

/* One heap per device, taken in turn: a graph over several GPUs (DataParallel's replicas)
 * launches each device's next op in rotation, as PyTorch's per-device engine threads let
 * them run side by side, instead of one replica's whole backward before the next one's.
 * A graph on one device has one heap and the order above. */
#define READY_SLOTS 17
typedef struct { node_list heap[READY_SLOTS]; uint32_t nonempty; int next; } ready_queues;

static int node_slot(const nn_node *x)
{
    nn_device d = x->leaf ? x->leaf->storage->device : x->nin > 0 ? x->next[0].device : (nn_device){NN_CPU, 0};
    return d.type == NN_CPU || d.index < 0 ? 0 : 1 + d.index % (READY_SLOTS - 1);
}

static bool ready_push(ready_queues *q, nn_node *x)
{
    int s = node_slot(x);
    if (!heap_push(&q->heap[s], x)) return false;
    q->nonempty |= 1u << s;
    return true;
}

static nn_node *ready_pop(ready_queues *q)
{
    uint32_t after = q->nonempty & (~0u << q->next);
    int s = __builtin_ctz(after ? after : q->nonempty);
    nn_node *x = heap_pop(&q->heap[s]);
    if (!q->heap[s].n) q->nonempty &= ~(1u << s);
    q->next = (s + 1) % READY_SLOTS;
    return x;
}

/* root's seed: grad cast to root's dtype, or ones for a one-element root */
static nn_tensor *seed_of(nn_tensor *root, nn_tensor *grad, int i)
{
    if (!root->requires_grad) {
        nn_error(NN_ERR_RUNTIME, "element %d of tensors does not require grad and does not have a grad_fn", i);
        return NULL;
    }
    if (nn_refresh_view_history(root)) return NULL;
    if (grad) {
        if (grad->ndim != root->ndim || memcmp(grad->shape, root->shape, sizeof(int64_t) * root->ndim)) {
            char a[160], b[160];
            nn_error(NN_ERR_SHAPE, "Mismatch in shape: grad_output[%d] has a shape of torch.Size(%s) and output[%d] has a shape of torch.Size(%s).",
                     i, nn_shape_str(a, grad->ndim, grad->shape), i, nn_shape_str(b, root->ndim, root->shape));
            return NULL;
        }
        return nn_to_dtype(grad, root->dtype);
    }
    if (nn_numel(root) != 1) {
        nn_error(NN_ERR_RUNTIME, "grad can be implicitly created only for scalar outputs");
        return NULL;
    }
    if (nn_dtype_is_complex(root->dtype)) {
        nn_error(NN_ERR_RUNTIME, "grad can be implicitly created only for real scalar outputs");
        return NULL;
    }
    return nn_ones(root->ndim, root->shape, root->dtype, root->storage->device);
}

/* whether node x is target i's place in the graph (a non-leaf's grad_fn, a leaf's AccumulateGrad) */
static bool is_target(const nn_node *x, const nn_tensor *t)
{
    return t->grad_fn ? t->grad_fn == x : x->leaf == t;
}

/* x->need for every node under the start nodes: post-order, iteratively (a graph may be
 * 10^5 nodes deep). */
static nn_status mark_needed(const node_list *starts, const nn_grad_targets *want)
{
    typedef struct { nn_node *x; int i; } frame;
    int cap = 64, top = 0;
    frame *st = malloc(sizeof *st * cap);
    if (!st) return nn_error(NN_ERR_NOMEM, "out of memory in backward");
    for (int r = 0; r < starts->n; r++) {
        if (starts->v[r]->need) continue;
        starts->v[r]->need = 1;
        st[top++] = (frame){starts->v[r], 0};
        while (top) {
            frame *f = &st[top - 1];
            if (f->i < f->x->nin) {
                nn_node *c = f->x->next[f->i++].node;
                if (!c || c->need) continue;
                if (top == cap) {
                    frame *bigger = realloc(st, sizeof *st * cap * 2);
                    if (!bigger) { free(st); return nn_error(NN_ERR_NOMEM, "out of memory in backward"); }
                    st = bigger;
                    cap *= 2;
                    f = &st[top - 1];
                }
                c->need = 1;
                st[top++] = (frame){c, 0};
                continue;
            }
            nn_node *x = f->x;
            top--;
            bool need = false;
            for (int k = 0; k < want->n && !need; k++) need = is_target(x, want->t[k]);
            for (int i = 0; i < x->nin && !need; i++) need = x->next[i].node && x->next[i].node->need == 2;
            x->need = need ? 2 : 3;
        }
    }
    free(st);
    return NN_OK;
}

/* target i's gradient g: into out[i], or into t[i].grad */
static nn_status give_target(const nn_grad_targets *want, int i, nn_tensor *g)
{
    return want->out ? accumulate(&want->out[i], g) : nn_accumulate_grad(want->t[i], g);
}

nn_status nn_recorded_grad(nn_tensor *y, nn_tensor *gy, int n, nn_tensor *const *xs, nn_tensor **out)
{
    nn_tensor *t[8], *r[8];
    int k = 0, at[8];
    if (n > 8) return nn_error(NN_ERR_ARG, "nn_recorded_grad: at most 8 tensors");
    for (int i = 0; i < n; i++) {
        out[i] = NULL, at[i] = -1;
        if (xs[i] && xs[i]->requires_grad) at[i] = k, t[k++] = xs[i];
    }
    if (!k) return NN_OK;
    for (int j = 0; j < k; j++) r[j] = NULL;
    nn_grad_targets want = {k, t, r};
    nn_status st = nn_backward_ex(1, &y, &gy, true, true, &want);
    for (int i = 0; i < n; i++)
        if (at[i] >= 0) out[i] = r[at[i]];
    if (st)
        for (int i = 0; i < n; i++) nn_release(out[i]), out[i] = NULL;
    return st;
}

nn_status nn_backward(nn_tensor *root, nn_tensor *grad, bool retain_graph)
{
    return nn_backward_ex(1, &root, &grad, retain_graph, false, NULL);
}

nn_status nn_backward_ex(int nroots, nn_tensor *const *roots, nn_tensor *const *grads, bool retain_graph,
                         bool create_graph, const nn_grad_targets *want)
{
    if (want && want->n == 0) want = NULL;
    bool capture = want && want->out;
    for (int i = 0; want && i < want->n; i++) {
        if (!want->t[i]->requires_grad) return nn_error(NN_ERR_RUNTIME, "One of the differentiated Tensors does not require grad");
        if (nn_refresh_view_history(want->t[i])) return nn_last_status();
    }
    nn_status st = NN_OK;
    node_list all = {0}, starts = {0};
    ready_queues ready = {0};
    bool was = nn_grad_enabled();
    nn_set_grad_enabled(create_graph);
    unsigned autocast = nn_autocast_suspend(); /* backward ops keep the forward's dtypes */
    bool was_retaining = retaining, was_creating = creating;
    const nn_node *was_running = running;
    int was_live = live.n;
    retaining = retain_graph, creating = create_graph;
    uint64_t was_pass = pass_id;
    const nn_grad_targets *was_want = pass_want;
    pass_id = ++pass_count;
    if (!(uint32_t)pass_id) pass_id = ++pass_count; /* a tag is never 0 */
    const uint32_t id = (uint32_t)pass_id;
    pass_want = want;
    int was_stash = stash.n;

    /* seeds: a leaf root takes its gradient now, a node gets it in its buffer */
    for (int r = 0; r < nroots && !st; r++) {
        nn_tensor *root = roots[r], *g = seed_of(root, grads ? grads[r] : NULL, r);
        if (!g) {
            st = nn_last_status();
            break;
        }
        if (!root->grad_fn) {
            int k = 0;
            while (want && k < want->n && want->t[k] != root) k++;
            if (want && k == want->n) { /* not a target: nothing to do */
            } else if (want) {
                st = give_target(want, k, g);
            } else {
                if (root->grad_hooks) st = tensor_hooks_run(&root->grad_hooks->pre, 0, &g);
                if (!st) st = nn_accumulate_grad(root, g);
                if (!st && root->grad_hooks) st = run_grad_hooks(root);
            }
            nn_release(g);
            continue;
        }
        nn_node *start = root->grad_fn;
        if (start->pass != id) { /* joined before its buffer takes the seed */
            if (!push(&all, start) || !push(&starts, start)) st = nn_error(NN_ERR_NOMEM, "out of memory in backward");
            else st = join_pass(start, id);
        }
        if (!st) st = accumulate(&start->grad_buf[root->output_nr], g);
        nn_release(g);
    }

    /* collect the graph and count, for each node, the edges that lead into it */
    for (int k = 0; k < all.n && !st; k++)
        for (int i = 0; i < all.v[k]->nin; i++) {
            nn_node *c = all.v[k]->next[i].node;
            if (!c) continue;
            if (c->pass != id) {
                if (!push(&all, c)) st = nn_error(NN_ERR_NOMEM, "out of memory in backward");
                else st = join_pass(c, id);
                if (st) break;
            }
            c->deps++;
        }
    if (!st && want) st = mark_needed(&starts, want);
    for (int k = 0; k < all.n && !st; k++)
        if (all.v[k]->leaf && all.v[k]->leaf->grad_hooks) all.v[k]->leaf->grad_hooks->computes |= !want || all.v[k]->need == 2;
    for (int r = 0; r < starts.n && !st; r++)
        if (!ready_push(&ready, starts.v[r])) st = nn_error(NN_ERR_NOMEM, "out of memory in backward");

    while (!st && ready.nonempty) {
        nn_node *x = ready_pop(&ready);
        bool skip = want && x->need != 2; /* leads to no target */
        for (int k = 0; k < x->nout && !st && !skip; k++) {
            if (x->pre_hooks && x->grad_buf[k]) st = tensor_hooks_run(x->pre_hooks, k, &x->grad_buf[k]);
            if (!st && !want && x->retained[k] && x->grad_buf[k]) st = nn_accumulate_grad(x->retained[k], x->grad_buf[k]);
        }
        nn_tensor *gin_small[8] = {0}, **gin = gin_small;
        if (x->nin > 8 && !(gin = calloc(x->nin, sizeof *gin))) st = nn_error(NN_ERR_NOMEM, "out of memory in backward");
        bool run = false; /* whether x's backward is due (a target's own node is not, when nothing below it is wanted) */
        if (!st && !skip) {
            bool any = false;
            run = !want;
            for (int k = 0; k < x->nout; k++) any |= x->grad_buf[k] != NULL;
            for (int i = 0; want && i < want->n && !st; i++) /* a target's gradient is taken here */
                if (want->t[i]->grad_fn == x && x->grad_buf[want->t[i]->output_nr]) st = give_target(want, i, x->grad_buf[want->t[i]->output_nr]);
            for (int i = 0; want && i < x->nin; i++) run |= x->next[i].node && x->next[i].node->need == 2;
            if (x->leaf && want) run = !capture; /* a target leaf (need == 2) */
            if (x->leaf && capture && any) {
                for (int i = 0; i < want->n && !st; i++)
                    if (want->t[i] == x->leaf) st = accumulate(&want->out[i], x->grad_buf[0]);
            }
            if (!st && any && run) {
                if (leaf_collects(x)) st = accumulate(&x->leaf->grad_hooks->sum, x->grad_buf[0]);
                else st = run_node(x, gin);
            }
            if (!st && x->leaf && run) st = leaf_done(x, any);
        }
        for (int k = 0; k < NN_NODE_MAX_OUT; k++) {
            nn_release(x->grad_buf[k]);
            x->grad_buf[k] = NULL;
        }
        while (live.n > was_live) nn_release(live.v[--live.n]);
        if (!retain_graph && run && has_saved(x)) { /* backward again through this node is then an error */
            release_saved(x);
            x->released = true;
        }
        for (int i = 0; i < x->nin; i++) {
            nn_edge *e = &x->next[i];
            if (!st && e->node && gin[i]) {
                nn_tensor *gi = nn_grad_to_input(gin[i], e);
                if (!gi) st = nn_last_status();
                else st = accumulate(&e->node->grad_buf[e->input_nr], gi);
                nn_release(gi);
            }
            nn_release(gin[i]);
            if (e->node && --e->node->deps == 0 && !st && !ready_push(&ready, e->node)) st = nn_error(NN_ERR_NOMEM, "out of memory in backward");
        }
        if (gin != gin_small) free(gin);
    }
    for (int i = 0; capture && i < want->n && !st; i++) /* a leaf target's tensor hooks see its whole gradient */
        if (!want->t[i]->grad_fn && want->t[i]->grad_hooks && want->out[i]) st = tensor_hooks_run(&want->t[i]->grad_hooks->pre, 0, &want->out[i]);
    for (int k = 0; k < all.n && !st && !capture; k++)
        if (all.v[k]->pass_end) st = all.v[k]->pass_end->fn(all.v[k]->pass_end->ctx);
    for (int k = 0; k < all.n; k++) { /* reset the pass state, also after an error */
        nn_node *x = all.v[k];
        if (x->pass != id) continue; /* not joined (an error on the way): an outer pass's */
        x->pass = 0;
        x->deps = 0;
        x->need = 0;
        struct nn_grad_hooks *h = x->leaf ? x->leaf->grad_hooks : NULL;
        if (h && (h->pass == id || !h->pass)) { /* (or made during the pass) */
            h->pass = 0;
            h->pending = 0;
            h->accumulated = false;
            h->computes = false;
            nn_release(h->sum);
            h->sum = NULL;
        }
        for (int j = 0; j < NN_NODE_MAX_OUT; j++) {
            nn_release(x->grad_buf[j]);
            x->grad_buf[j] = NULL;
        }
    }
    restore_stashed(was_stash);
    for (int i = 0; st && capture && i < want->n; i++) { /* nothing half-computed on an error */
        nn_release(want->out[i]);
        want->out[i] = NULL;
    }
    free(all.v);
    free(starts.v);
    for (int k = 0; k < READY_SLOTS; k++) free(ready.heap[k].v);
    nn_set_grad_enabled(was);
    nn_autocast_resume(autocast);
    retaining = was_retaining, creating = was_creating, running = was_running;
    pass_id = was_pass, pass_want = was_want;
    return st;
}
