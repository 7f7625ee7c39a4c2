/* Optimizer step frontends: check the lists, create missing state, count steps,
 * then one dispatch per device over every parameter that has a gradient. The
 * kernel list layout is described in optim.h. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "device.h"
#include "optim.h"
#include "amp.h"
#include "autograd.h"
#include "memory_format.h"

/* The CPU kernel table refers to NN kernels weakly, and a weak reference does not pull a member
 * out of a static library: this strong one pulls in cpu/optim.c. */
nn_status nn_cpu_sgd_step(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_sgd_step;

enum { R_PARAM, R_GRAD, R_STATE, R_FRESH, R_STEP, R_LOWP };

typedef struct {
    int kind;
    const char *name;  /* for messages: "exp_avg" */
    nn_tensor **t;     /* the caller's n entries; NULL: the role is unused (NULL in the kernel list) */
    double init;       /* R_STATE: value of a created entry */
    nn_tensor **fresh; /* R_STATE: where to record created entries (SGD), or NULL */
} role;

nn_tensor *nn_optim_state_like(nn_tensor *p, double value)
{
    nn_tensor *t = nn_is_dense(p) && !nn_is_contiguous(p)
                       ? nn_empty_strided(p->ndim, p->shape, p->strides, p->dtype, p->storage->device)
                       : nn_empty(p->ndim, p->shape, p->dtype, p->storage->device);
    if (t && nn_fill_(t, value)) {
        nn_release(t);
        return NULL;
    }
    return t;
}

nn_tensor *nn_optim_step_counter(double value)
{
    return nn_full(0, NULL, value, nn_default_dtype(), NN_DEVICE_CPU);
}

static nn_status check_like(const char *fn, int k, const char *what, const nn_tensor *t, const nn_tensor *p)
{
    char b1[160], b2[160], d1[16], d2[16];
    if (t->ndim != p->ndim || memcmp(t->shape, p->shape, p->ndim * sizeof *p->shape))
        return nn_error(NN_ERR_SHAPE, "%s: %s of parameter %d has shape %s, expected %s", fn, what, k,
                        nn_shape_str(b1, t->ndim, t->shape), nn_shape_str(b2, p->ndim, p->shape));
    if (t->dtype != p->dtype)
        return nn_error(NN_ERR_DTYPE, "%s: %s of parameter %d has dtype %s, expected %s", fn, what, k,
                        nn_dtype_name(t->dtype), nn_dtype_name(p->dtype));
    if (!nn_device_eq(t->storage->device, p->storage->device))
        return nn_error(NN_ERR_DEVICE, "%s: %s of parameter %d is on %s, but the parameter is on %s", fn, what, k,
                        nn_device_str(d1, t->storage->device), nn_device_str(d2, p->storage->device));
    return NN_OK;
}

static nn_status check(const char *fn, int n, int nroles, const role *roles)
{
    for (int k = 0; k < n; k++) {
        nn_tensor *p = roles[0].t[k], *g = roles[1].t[k];
        if (!g) continue;
        if (!p) return nn_error(NN_ERR_ARG, "%s: parameter %d is missing", fn, k);
        if (p->dtype != NN_F32 && p->dtype != NN_F64 && p->dtype != NN_F16 && p->dtype != NN_BF16)
            return nn_error(NN_ERR_DTYPE, "%s: parameter %d has dtype %s; optimizers update floating point parameters",
                            fn, k, nn_dtype_name(p->dtype));
        if (check_like(fn, k, "grad", g, p)) return nn_last_status();
        for (int r = 2; r < nroles; r++) {
            nn_tensor *s = roles[r].t ? roles[r].t[k] : NULL;
            if (!s || roles[r].kind == R_FRESH) continue;
            if (roles[r].kind == R_STEP) {
                bool on_cpu = s->storage->device.type == NN_CPU;
                bool ok = on_cpu ? nn_dtype_is_float(s->dtype)
                                 : nn_device_eq(s->storage->device, p->storage->device) && (s->dtype == NN_F32 || s->dtype == NN_F64);
                if (nn_numel(s) != 1 || !ok)
                    return nn_error(NN_ERR_ARG, "%s: step of parameter %d must be a one-element floating point tensor on the CPU "
                                                "(or a float32/float64 one on the parameter's device)",
                                    fn, k);
            } else if (check_like(fn, k, roles[r].name, s, p)) {
                return nn_last_status();
            }
        }
    }
    return NN_OK;
}

static nn_status create_state(int n, int nroles, role *roles)
{
    for (int k = 0; k < n; k++) {
        if (!roles[1].t[k]) continue;
        for (int r = 2; r < nroles; r++) {
            if (!roles[r].t || roles[r].t[k] || roles[r].kind == R_FRESH) continue;
            nn_tensor *s = roles[r].kind == R_STEP ? nn_optim_step_counter(0) : nn_optim_state_like(roles[0].t[k], roles[r].init);
            if (!s) return nn_last_status();
            roles[r].t[k] = s;
            if (roles[r].fresh) roles[r].fresh[k] = s;
        }
    }
    return NN_OK;
}

/* Add `by` to the CPU step counters of the params with a gradient (skip[k] set: leave it). */
static void count_steps(int n, int nroles, const role *roles, double by, const bool *skip)
{
    for (int r = 2; r < nroles; r++) {
        if (roles[r].kind != R_STEP || !roles[r].t) continue;
        for (int k = 0; k < n; k++) {
            nn_tensor *s = roles[r].t[k];
            if (!roles[1].t[k] || !s || (skip && skip[k])) continue;
            if (s->storage->device.type != NN_CPU) continue; /* the kernel counts it */
            nn_store_f64(nn_data(s), s->dtype, nn_load_f64(nn_data(s), s->dtype) + by);
            nn_bump_version(s);
        }
    }
}

/* Working lists for a step: on the stack for groups of up to SMALL params (no malloc in
 * steady state), else one heap block. */
#define SMALL 64
#define MAX_ROLES 7 /* the op's six at most, and the low-precision copies */
typedef struct {
    int *idx;          /* the params of one device */
    nn_tensor **list;  /* the kernel's list, role-major */
    bool *taken, *done; /* dispatched; updated */
    void *heap;
    int small_idx[SMALL];
    nn_tensor *small_list[SMALL * MAX_ROLES];
    bool small_flags[2 * SMALL];
} scratch;

static nn_status scratch_init(scratch *w, int n, const char *fn)
{
    w->heap = NULL;
    w->idx = w->small_idx, w->list = w->small_list, w->taken = w->small_flags;
    if (n > SMALL) {
        size_t ni = (size_t)n * sizeof(int), nl = (size_t)n * MAX_ROLES * sizeof(nn_tensor *);
        char *h = w->heap = malloc(nl + ni + 2 * (size_t)n);
        if (!h) return nn_error(NN_ERR_NOMEM, "%s: out of memory", fn);
        w->list = (nn_tensor **)h, w->idx = (int *)(h + nl), w->taken = (bool *)(h + nl + ni);
    }
    w->done = w->taken + n;
    memset(w->taken, 0, 2 * (size_t)n);
    return NN_OK;
}

/* Dispatch a->op once per device over the params that have a gradient; w->done[k] is set
 * for the params whose update ran. */
static nn_status dispatch_all(nn_kargs *a, int n, int nroles, const role *roles, scratch *w)
{
    nn_status st = NN_OK;
    for (int first = 0; first < n && !st; first++) {
        if (w->taken[first] || !roles[1].t[first]) continue;
        nn_device dev = roles[0].t[first]->storage->device;
        int m = 0;
        for (int k = first; k < n; k++)
            if (!w->taken[k] && roles[1].t[k] && nn_device_eq(roles[0].t[k]->storage->device, dev)) {
                w->taken[k] = true;
                w->idx[m++] = k;
            }
        nn_tensor **list = w->list;
        for (int r = 0; r < nroles; r++)
            for (int j = 0; j < m; j++) list[r * m + j] = roles[r].t ? roles[r].t[w->idx[j]] : NULL;
        a->list = list;
        a->nlist = m;
        a->out[0] = list[0];
        st = nn_dispatch(a);
        if (st) break;
        for (int j = 0; j < m; j++) {
            w->done[w->idx[j]] = true;
            for (int r = 0; r < nroles; r++)
                if ((roles[r].kind == R_PARAM || roles[r].kind == R_STATE) && list[r * m + j]) nn_bump_version(list[r * m + j]);
        }
    }
    return st;
}

/* GradScaler's one-element float32 tensor t (what names it), on the device of every param
 * with a gradient unless cpu_ok */
static nn_status check_amp_scalar(const char *fn, const char *what, int n, const role *roles, const nn_tensor *t, bool cpu_ok)
{
    if (nn_numel(t) != 1 || t->dtype != NN_F32)
        return nn_error(NN_ERR_ARG, "%s: %s must be a one-element float32 tensor, got %s with %lld elements", fn, what,
                        nn_dtype_name(t->dtype), (long long)nn_numel(t));
    if (cpu_ok && t->storage->device.type == NN_CPU) return NN_OK;
    for (int k = 0; k < n; k++) {
        const nn_tensor *p = roles[0].t[k];
        if (!roles[1].t[k] || nn_device_eq(p->storage->device, t->storage->device)) continue;
        char d1[16], d2[16];
        return nn_error(NN_ERR_DEVICE, "%s: %s is on %s, but parameter %d is on %s", fn, what,
                        nn_device_str(d1, t->storage->device), k, nn_device_str(d2, p->storage->device));
    }
    return NN_OK;
}

/* GradScaler's found_inf and grad_scale: a CPU found_inf is read here (*skip: nonzero); a
 * device one, and grad_scale, go to the kernels. */
static nn_status take_amp(nn_kargs *a, const char *fn, int n, const role *roles, const nn_tensor *f, const nn_tensor *gs, bool *skip)
{
    *skip = false;
    if (f && check_amp_scalar(fn, "found_inf", n, roles, f, true)) return nn_last_status();
    if (gs && check_amp_scalar(fn, "grad_scale", n, roles, gs, false)) return nn_last_status();
    if (f && f->storage->device.type == NN_CPU) *skip = *(const float *)nn_data(f) != 0;
    else if (f) a->in[0] = (nn_tensor *)f, a->nin = 1;
    if (gs) a->in[1] = (nn_tensor *)gs, a->nin = 2;
    return NN_OK;
}

/* The float16/bfloat16 copies a CUDA step writes beside the float32 params that autocast cast
 * since their last step (autocast takes them instead of casting, engine/autocast.c); copies[k]
 * NULL where none. A copy that cannot be allocated is left out: it only saves time. */
static void make_lowp(int n, const role *roles, nn_tensor **copies)
{
    bool capturing = nn_gpu_capturing(); /* a replayed step would not hand its copies over */
    for (int k = 0; k < n; k++) {
        nn_tensor *p = roles[0].t[k];
        copies[k] = NULL;
        if (capturing || !roles[1].t[k] || (p->lowp_dtype != NN_F16 && p->lowp_dtype != NN_BF16) || p->dtype != NN_F32 ||
            p->storage->device.type != NN_CUDA || !nn_is_dense(p))
            continue;
        if (!(copies[k] = nn_empty_strided(p->ndim, p->shape, p->strides, p->lowp_dtype, p->storage->device))) nn_clear_error();
    }
}

/* After the step: a param keeps the copy written beside its update (done[k]); every other
 * param's copy is stale, and the next autocast region asks afresh. */
static void keep_lowp(int n, const role *roles, nn_tensor **copies, const bool *done)
{
    for (int k = 0; k < n; k++) {
        nn_tensor *p = roles[0].t[k];
        if (!roles[1].t[k]) continue;
        nn_release(p->lowp);
        p->lowp = done[k] ? copies[k] : NULL;
        if (!done[k]) nn_release(copies[k]);
        p->lowp_version = p->storage->version;
        p->lowp_dtype = NN_DTYPE_NONE;
    }
}

static nn_status run_step(nn_kargs *a, int n, int nroles, role *roles, const nn_tensor *found_inf, const nn_tensor *grad_scale)
{
    const char *fn = nn_op_name(a->op);
    if (n < 0) return nn_error(NN_ERR_ARG, "%s: negative parameter count %d", fn, n);
    bool skip;
    if (check(fn, n, nroles, roles) || take_amp(a, fn, n, roles, found_inf, grad_scale, &skip)) return nn_last_status();
    if (skip) return NN_OK; /* an inf or nan in the gradients: this step does not happen */
    /* (a skip decided on the device still creates missing state: SGD's first momentum
     * buffer then starts at 0 rather than at the gradient, the same unless dampening != 0) */
    if (create_state(n, nroles, roles)) return nn_last_status();
    scratch w;
    if (scratch_init(&w, n, fn)) return nn_last_status();
    nn_tensor *lowp_small[SMALL], **lowp = n <= SMALL ? lowp_small : malloc(sizeof *lowp * (size_t)n);
    if (!lowp) {
        free(w.heap);
        return nn_error(NN_ERR_NOMEM, "%s: out of memory", fn);
    }
    make_lowp(n, roles, lowp);
    role all[MAX_ROLES];
    memcpy(all, roles, sizeof *roles * (size_t)nroles);
    all[nroles] = (role){R_LOWP, "lowp", lowp, 0, NULL};
    a->i[7] = nroles;
    count_steps(n, nroles, roles, 1, NULL);
    nn_status st = dispatch_all(a, n, nroles + 1, all, &w);
    if (st) count_steps(n, nroles, roles, -1, w.done); /* those updates did not happen */
    keep_lowp(n, roles, lowp, w.done);
    if (lowp != lowp_small) free(lowp);
    free(w.heap);
    return st;
}

nn_status nn_sgd_step(int n, nn_tensor *const *params, nn_tensor *const *grads, nn_tensor **bufs, const nn_sgd_opts *o)
{
    nn_kargs a = {.op = NN_OP_sgd_step};
    a.f[0] = o->lr, a.f[1] = o->momentum, a.f[2] = o->dampening, a.f[3] = o->weight_decay;
    a.i[0] = o->nesterov, a.i[1] = o->maximize;
    nn_tensor *small[SMALL] = {NULL}, **fresh = NULL;
    bool use_bufs = o->momentum != 0;
    if (use_bufs && !bufs) return nn_error(NN_ERR_ARG, "sgd_step: momentum buffers are needed when momentum != 0");
    if (use_bufs) fresh = n <= SMALL ? small : calloc(n, sizeof *fresh);
    if (use_bufs && !fresh) return nn_error(NN_ERR_NOMEM, "sgd_step: out of memory");
    role roles[] = {
        {R_PARAM, "param", (nn_tensor **)params, 0, NULL},
        {R_GRAD, "grad", (nn_tensor **)grads, 0, NULL},
        {R_STATE, "momentum_buffer", use_bufs ? bufs : NULL, 0, fresh},
        {R_FRESH, "fresh", fresh, 0, NULL},
    };
    nn_status st = run_step(&a, n, 4, roles, o->found_inf, o->grad_scale);
    if (fresh != small) free(fresh);
    return st;
}

nn_status nn_adam_step(int n, nn_tensor *const *params, nn_tensor *const *grads, nn_tensor **exp_avgs,
                       nn_tensor **exp_avg_sqs, nn_tensor **max_exp_avg_sqs, nn_tensor **steps, const nn_adam_opts *o)
{
    nn_kargs a = {.op = NN_OP_adam_step};
    a.f[0] = o->lr, a.f[1] = o->beta1, a.f[2] = o->beta2, a.f[3] = o->eps, a.f[4] = o->weight_decay;
    a.i[0] = o->amsgrad, a.i[1] = o->maximize, a.i[2] = o->decoupled;
    if (!exp_avgs || !exp_avg_sqs || !steps || (o->amsgrad && !max_exp_avg_sqs))
        return nn_error(NN_ERR_ARG, "adam_step: a state list is missing");
    role roles[] = {
        {R_PARAM, "param", (nn_tensor **)params, 0, NULL},
        {R_GRAD, "grad", (nn_tensor **)grads, 0, NULL},
        {R_STATE, "exp_avg", exp_avgs, 0, NULL},
        {R_STATE, "exp_avg_sq", exp_avg_sqs, 0, NULL},
        {R_STATE, "max_exp_avg_sq", o->amsgrad ? max_exp_avg_sqs : NULL, 0, NULL},
        {R_STEP, "step", steps, 0, NULL},
    };
    return run_step(&a, n, 6, roles, o->found_inf, o->grad_scale);
}

nn_status nn_rmsprop_step(int n, nn_tensor *const *params, nn_tensor *const *grads, nn_tensor **square_avgs,
                          nn_tensor **momentum_bufs, nn_tensor **grad_avgs, nn_tensor **steps, const nn_rmsprop_opts *o)
{
    nn_kargs a = {.op = NN_OP_rmsprop_step};
    a.f[0] = o->lr, a.f[1] = o->alpha, a.f[2] = o->eps, a.f[3] = o->weight_decay, a.f[4] = o->momentum;
    a.i[0] = o->centered, a.i[1] = o->maximize;
    if (!square_avgs || !steps || (o->momentum > 0 && !momentum_bufs) || (o->centered && !grad_avgs))
        return nn_error(NN_ERR_ARG, "rmsprop_step: a state list is missing");
    role roles[] = {
        {R_PARAM, "param", (nn_tensor **)params, 0, NULL},
        {R_GRAD, "grad", (nn_tensor **)grads, 0, NULL},
        {R_STATE, "square_avg", square_avgs, 0, NULL},
        {R_STATE, "momentum_buffer", o->momentum > 0 ? momentum_bufs : NULL, 0, NULL},
        {R_STATE, "grad_avg", o->centered ? grad_avgs : NULL, 0, NULL},
        {R_STEP, "step", steps, 0, NULL},
    };
    return run_step(&a, n, 6, roles, o->found_inf, o->grad_scale);
}

nn_status nn_adagrad_step(int n, nn_tensor *const *params, nn_tensor *const *grads, nn_tensor **sums,
                          nn_tensor **steps, const nn_adagrad_opts *o)
{
    nn_kargs a = {.op = NN_OP_adagrad_step};
    a.f[0] = o->lr, a.f[1] = o->lr_decay, a.f[2] = o->weight_decay, a.f[3] = o->eps;
    a.i[0] = o->maximize;
    if (!sums || !steps) return nn_error(NN_ERR_ARG, "adagrad_step: a state list is missing");
    role roles[] = {
        {R_PARAM, "param", (nn_tensor **)params, 0, NULL},
        {R_GRAD, "grad", (nn_tensor **)grads, 0, NULL},
        {R_STATE, "sum", sums, o->initial_accumulator_value, NULL},
        {R_STEP, "step", steps, 0, NULL},
    };
    return run_step(&a, n, 4, roles, o->found_inf, o->grad_scale);
}

/* *out = the 2-norm of n float tensors on one device in one pass (foreach_sumsq, summed in
 * float64), in their promoted dtype; *out = NULL where they are not such tensors. */
static nn_status total_2norm(int n, nn_tensor *const *ts, nn_tensor **out)
{
    *out = NULL;
    nn_dtype dt = ts[0]->dtype;
    for (int k = 0; k < n; k++) {
        if (!nn_dtype_is_float(ts[k]->dtype) || !nn_device_eq(ts[k]->storage->device, ts[0]->storage->device)) return NN_OK;
        dt = nn_promote_types(dt, ts[k]->dtype);
    }
    nn_tensor *acc = nn_zeros(0, NULL, NN_F64, ts[0]->storage->device), *root = NULL;
    nn_kargs a = {.op = NN_OP_foreach_sumsq, .out = {acc}, .list = (nn_tensor **)ts, .nlist = n};
    nn_status st = acc ? nn_dispatch(&a) : nn_last_status();
    if (!st && !(root = nn_unary(NN_OP_sqrt, acc))) st = nn_last_status();
    if (!st && !(*out = nn_to_dtype(root, dt))) st = nn_last_status();
    nn_release(acc);
    nn_release(root);
    return st;
}

nn_tensor *nn_total_norm(int n, nn_tensor *const *ts, double p)
{
    bool was = nn_grad_enabled();
    nn_set_grad_enabled(false);
    nn_tensor *total = NULL;
    if (p == 2 && total_2norm(n, ts, &total)) {
        nn_set_grad_enabled(was);
        return NULL;
    }
    if (total) {
        nn_set_grad_enabled(was);
        return total;
    }
    nn_tensor **norms = calloc((size_t)n, sizeof *norms);
    if (!norms) {
        nn_set_grad_enabled(was);
        nn_error(NN_ERR_NOMEM, "total norm: out of memory");
        return NULL;
    }
    int k = 0;
    for (; k < n; k++) {
        nn_tensor *v = nn_norm(ts[k], p, 0, false);
        norms[k] = v ? nn_to_device(v, ts[0]->storage->device) : NULL;
        nn_release(v);
        if (!norms[k]) break;
    }
    nn_tensor *all = k == n ? nn_stack(norms, n, 0) : NULL;
    if (all) total = nn_norm(all, p, 0, false);
    nn_release(all);
    for (int j = 0; j < n; j++) nn_release(norms[j]);
    free(norms);
    nn_set_grad_enabled(was);
    return total;
}

/* On one CUDA device, float32/float16/bfloat16 tensors are scaled in one pass: GradScaler's
 * unscale kernel with coef as its factor (which leaves a tensor unwritten when coef is 1, as it is
 * whenever the gradients are within the clipping norm). *done: whether it ran. */
static nn_status mul_one_pass(int n, nn_tensor *const *ts, nn_tensor *coef, bool *done)
{
    *done = false;
    nn_device dev = ts[0]->storage->device;
    for (int k = 0; k < n; k++) {
        nn_dtype dt = ts[k]->dtype;
        if (dev.type != NN_CUDA || !nn_device_eq(ts[k]->storage->device, dev) || (dt != NN_F32 && dt != NN_F16 && dt != NN_BF16)) return NN_OK;
    }
    nn_tensor *on = nn_to_device(coef, dev), *c32 = on ? nn_to_dtype(on, NN_F32) : NULL, *found = c32 ? nn_zeros(0, NULL, NN_F32, dev) : NULL;
    nn_status st = found ? nn_amp_unscale_(n, ts, found, c32) : nn_last_status();
    nn_release(on);
    nn_release(c32);
    nn_release(found);
    *done = true;
    return st;
}

nn_status nn_mul_each_(int n, nn_tensor *const *ts, nn_tensor *coef)
{
    if (n == 0) return NN_OK;
    if (nn_numel(coef) != 1) return nn_error(NN_ERR_SHAPE, "mul_each_: the factor must have one element");
    bool was = nn_grad_enabled(), done;
    nn_set_grad_enabled(false);
    nn_status st = mul_one_pass(n, ts, coef, &done);
    if (st || done) {
        nn_set_grad_enabled(was);
        return st;
    }
    nn_tensor *on = NULL; /* coef on the device of the last tensor */
    for (int k = 0; k < n && !st; k++) {
        nn_device d = ts[k]->storage->device;
        if (!on || on->storage->device.type != d.type || on->storage->device.index != d.index) {
            nn_release(on);
            if (!(on = nn_to_device(coef, d))) st = nn_last_status();
        }
        if (!st) st = nn_binary_(NN_OP_mul, ts[k], on);
    }
    nn_release(on);
    nn_set_grad_enabled(was);
    return st;
}
