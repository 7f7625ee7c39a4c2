/* batch_norm frontend (torch.nn.functional.batch_norm's checks), its backward frontend and
 * autograd node.
 *
 * The frontends hand the kernels a canonical problem (ops.def): x dense in its own memory
 * format (contiguous, or channels-last when it already is), every operand of x's shape in
 * that same layout, and the per-channel tensors as contiguous [C] vectors of the stats dtype
 * (float32 for float16/bfloat16 x, else x's dtype). A running stat that is not already so is
 * updated in a converted copy and written back. */
#define NN_GRAD_INTERNAL
#include <string.h>

#include "autograd.h"
#include "backend.h"
#include "grad.h"
#include "memory_format.h"
#include "nnfunc.h"

/* The CPU kernel table refers to NN kernels weakly, and a weak reference does not pull a
 * member out of the static engine library; this strong reference does (CPU is always built). */
nn_status nn_cpu_batch_norm(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_batch_norm;

enum { X_, W_, B_, RM_, RV_ };
static const char *const param_names[5] = {"input", "weight", "bias", "running_mean", "running_var"};

static nn_dtype stats_dtype(nn_dtype dt) { return dt == NN_F16 || dt == NN_BF16 ? NN_F32 : dt; }

/* A per-channel tensor as the kernels read it: [C], contiguous, of dtype dt (t itself when it is). */
static nn_tensor *per_channel(nn_tensor *t, int64_t C, nn_dtype dt)
{
    if (!t) return NULL;
    if (t->ndim == 1 && t->dtype == dt && nn_is_contiguous(t)) return nn_retain(t);
    nn_tensor *v = nn_reshape(t, 1, &C), *c = v ? nn_to_dtype(v, dt) : NULL, *r = c ? nn_contiguous(c) : NULL;
    nn_release(v);
    nn_release(c);
    return r;
}

/* A tensor of x's shape in the layout `like` has (contiguous or channels-last). */
static nn_tensor *empty_as(const nn_tensor *like, nn_dtype dt)
{
    return nn_empty_format(like->ndim, like->shape, nn_suggest_memory_format(like), dt, like->storage->device);
}

/* A [2, C] pair of per-channel vectors, each row starting 16-byte aligned (cuDNN takes the rows as
 * separate vectors). */
static nn_tensor *channel_pair(int64_t C, nn_dtype dt, nn_device dev)
{
    int64_t per = 16 / (int64_t)nn_dtype_size(dt), stride = (C + per - 1) / per * per, n = 2 * stride;
    int64_t shape[2] = {2, C}, strides[2] = {stride, 1};
    nn_tensor *base = nn_empty(1, &n, dt, dev), *v = base ? nn_make_view(base, 2, shape, strides, 0) : NULL;
    nn_release(base);
    return v;
}

/* The checks of F.batch_norm, in its order; t[] is x, weight, bias, running_mean, running_var. */
static nn_status check_args(nn_tensor *const *t, bool training)
{
    char b[160], d1[16], d2[16];
    const nn_tensor *x = t[X_];
    if (x->ndim < 2) return nn_error(NN_ERR_SHAPE, "batch_norm: Expected 2D or more input (got %dD input)", x->ndim);
    int64_t C = x->shape[1];
    static const int order[4] = {RM_, RV_, W_, B_};
    for (int k = 0; k < 4; k++) {
        const nn_tensor *p = t[order[k]];
        if (p && nn_numel(p) != C)
            return nn_error(NN_ERR_SHAPE, "batch_norm: %s should contain %lld elements not %lld", param_names[order[k]], (long long)C,
                            (long long)nn_numel(p));
    }
    for (int k = 0; k < 5; k++) {
        if (!t[k]) continue;
        if (!nn_dtype_is_float(t[k]->dtype))
            return nn_error(NN_ERR_DTYPE, "batch_norm: %s must be a floating point tensor, got %s", param_names[k], nn_dtype_name(t[k]->dtype));
        if (!nn_device_eq(t[k]->storage->device, x->storage->device))
            return nn_error(NN_ERR_DEVICE, "batch_norm: expected all tensors to be on the same device, but found at least two devices, %s and %s",
                            nn_device_str(d1, x->storage->device), nn_device_str(d2, t[k]->storage->device));
    }
    if (training && C > 0 && nn_numel(x) / C == 1)
        return nn_error(NN_ERR_ARG, "batch_norm: Expected more than 1 value per channel when training, got input size torch.Size(%s)",
                        nn_shape_str(b, x->ndim, x->shape));
    if (!training && (!t[RM_] || !t[RV_])) return nn_error(NN_ERR_ARG, "batch_norm: running_mean and running_var must be defined in evaluation mode");
    return NN_OK;
}

/* saved: 0 x, 1 weight (or none); training: 2 the [2, C] batch stats; eval: 2 running_mean, 3 running_var */
/* Recording a graph (double backward): the gradients of x and weight from the normalisation
 * recomputed of differentiable ops (batch statistics, biased variance, or the running ones), the
 * bias's as the sum of g. */
static nn_status composed_backward(nn_node *n, nn_tensor *g, nn_tensor *x, nn_tensor *w, nn_tensor *rm, nn_tensor *rv, nn_tensor **grad_in)
{
    bool training = n->i[0] != 0;
    if (n->next[0].node && !x->requires_grad) return nn_no_double_backward("reads a copy of its input");
    int64_t cs[NN_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) cs[d] = d == 1 ? x->shape[1] : 1;
    uint32_t dims = ((1u << x->ndim) - 1) & ~2u;
    gscope s = {0};
    nn_tensor *y = training ? gs_normalized(&s, x, dims, n->f[0])
                            : gs_bin(&s, NN_OP_mul, gs_bin(&s, NN_OP_sub, x, gs_keep(&s, nn_reshape(rm, x->ndim, cs))),
                                     gs_un(&s, NN_OP_rsqrt, gs_bin(&s, NN_OP_add, gs_keep(&s, nn_reshape(rv, x->ndim, cs)), gs_num(&s, n->f[0]))));
    if (w) y = gs_bin(&s, NN_OP_mul, y, gs_keep(&s, nn_reshape(w, x->ndim, cs)));
    nn_tensor *xs[2] = {n->next[0].node ? x : NULL, n->next[1].node ? w : NULL};
    nn_status st = y ? nn_recorded_grad(y, g, 2, xs, grad_in) : nn_last_status();
    if (!st && n->next[2].node && !(grad_in[2] = nn_sum_dtype(g, dims, false, n->next[2].dtype))) st = nn_last_status();
    gs_free(&s);
    return st;
}

static nn_status backward_node(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    bool training = n->i[0] != 0;
    if (!grad_out[0]) return NN_OK; /* no gradient reached y: none for the inputs */
    if (nn_backward_creates_graph() && nn_grad_enabled()) {
        nn_tensor *x = nn_node_saved(n, 0), *w = NULL, *s2 = training ? NULL : nn_node_saved(n, 2), *s3 = training ? NULL : nn_node_saved(n, 3);
        if (!x || (!training && (!s2 || !s3)) || (nn_node_has_saved(n, 1) && !(w = nn_node_saved(n, 1)))) return nn_last_status();
        return composed_backward(n, grad_out[0], x, w, s2, s3, grad_in);
    }
    nn_tensor *x = nn_node_saved(n, 0), *w = NULL, *s2 = nn_node_saved(n, 2), *s3 = training ? NULL : nn_node_saved(n, 3);
    if (!x || !s2 || (!training && !s3)) return nn_last_status();
    if (nn_node_has_saved(n, 1) && !(w = nn_node_saved(n, 1))) return nn_last_status();
    nn_tensor *mean = s2, *v = s3;
    if (training) { /* the rows of the forward's stats */
        mean = nn_select(s2, 0, 0);
        v = nn_select(s2, 0, 1);
        if (!mean || !v) {
            nn_release(mean);
            nn_release(v);
            return nn_last_status();
        }
    }
    bool want[3] = {n->next[0].node != NULL, n->next[1].node != NULL, n->next[2].node != NULL};
    nn_status st = nn_batch_norm_backward(grad_out[0], x, w, mean, v, training, n->f[0], want, &grad_in[0], &grad_in[1], &grad_in[2]);
    if (training) {
        nn_release(mean);
        nn_release(v);
    }
    return st;
}

static nn_status record(nn_tensor *y, nn_tensor *const *t, nn_tensor *stats, bool training, double eps)
{
    nn_node *n = nn_node_new(nn_op_backward_name(NN_OP_batch_norm), backward_node, 3, t);
    if (!n) return nn_last_status();
    n->i[0] = training;
    n->f[0] = eps;
    nn_node_set_output(n, y, 0);
    nn_node_save(n, 0, t[X_]);
    if (t[W_]) nn_node_save(n, 1, t[W_]);
    if (training) {
        nn_node_save(n, 2, stats);
    } else {
        nn_node_save(n, 2, t[RM_]);
        nn_node_save(n, 3, t[RV_]);
    }
    nn_node_release(n);
    return NN_OK;
}

/* Write the updated running stats held in converted copies back to the caller's tensors. */
static nn_status write_back(nn_tensor *const *orig, nn_tensor *const *used)
{
    bool was = nn_grad_enabled();
    nn_set_grad_enabled(false);
    nn_status st = NN_OK;
    for (int k = RM_; k <= RV_ && !st; k++) {
        if (!orig[k]) continue;
        if (orig[k] == used[k]) {
            nn_bump_version(orig[k]);
            continue;
        }
        nn_tensor *v = nn_view(used[k], orig[k]->ndim, orig[k]->shape);
        st = v ? nn_copy_(orig[k], v) : nn_last_status();
        nn_release(v);
    }
    nn_set_grad_enabled(was);
    return st;
}

nn_tensor *nn_batch_norm(nn_tensor *x, nn_tensor *running_mean, nn_tensor *running_var, nn_tensor *weight, nn_tensor *bias,
                         bool training, double momentum, double eps)
{
    nn_tensor *orig[5] = {x, weight, bias, running_mean, running_var};
    if (check_args(orig, training)) return NULL;
    if (training)
        for (int k = RM_; k <= RV_; k++)
            if (orig[k] && nn_check_inplace("batch_norm", orig[k])) return NULL;
    int64_t C = x->shape[1];
    nn_dtype sdt = stats_dtype(x->dtype);
    nn_tensor *t[5] = {nn_contiguous_as(x, nn_suggest_memory_format(x)), NULL, NULL, NULL, NULL}, *y = NULL, *stats = NULL;
    bool ok = t[X_] != NULL;
    for (int k = W_; k <= RV_ && ok; k++) ok = !orig[k] || (t[k] = per_channel(orig[k], C, sdt));
    if (ok) ok = (y = empty_as(t[X_], x->dtype)) && (!training || (stats = channel_pair(C, sdt, x->storage->device)));
    if (ok) {
        nn_kargs a = {.op = NN_OP_batch_norm, .out = {y, stats}, .in = {t[X_], t[W_], t[B_], t[RM_], t[RV_]}, .nin = 5,
                      .f = {momentum, eps}, .i = {training}};
        ok = !nn_dispatch(&a) && (!training || !write_back(orig, t));
    }
    if (ok && nn_any_requires_grad(3, t)) ok = !record(y, t, stats, training, eps);
    for (int k = 0; k < 5; k++) nn_release(t[k]);
    nn_release(stats);
    if (ok) return y;
    nn_release(y);
    return NULL;
}

nn_status nn_batch_norm_backward(nn_tensor *grad_out, nn_tensor *x, nn_tensor *weight, nn_tensor *mean, nn_tensor *var_or_invstd,
                                 bool training, double eps, const bool want[3], nn_tensor **grad_input, nn_tensor **grad_weight,
                                 nn_tensor **grad_bias)
{
    char b1[160], b2[160];
    *grad_input = *grad_weight = *grad_bias = NULL;
    nn_tensor *orig[5] = {x, weight, NULL, mean, var_or_invstd};
    if (!mean || !var_or_invstd) return nn_error(NN_ERR_ARG, "batch_norm_backward: the mean and the variance (or inverse std) are required");
    if (check_args(orig, false)) return nn_last_status();
    if (grad_out->ndim != x->ndim || memcmp(grad_out->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim))
        return nn_error(NN_ERR_SHAPE, "batch_norm_backward: grad_output %s and input %s must have the same shape",
                        nn_shape_str(b1, grad_out->ndim, grad_out->shape), nn_shape_str(b2, x->ndim, x->shape));
    int64_t C = x->shape[1];
    nn_dtype sdt = stats_dtype(x->dtype);
    nn_memory_format fmt = nn_suggest_memory_format(x);
    nn_tensor *t[5] = {nn_contiguous_as(x, fmt), NULL, NULL, NULL, NULL}, *g = nn_to_dtype(grad_out, x->dtype), *gl = NULL;
    nn_tensor *gwb = NULL, *gx = NULL;
    bool ok = t[X_] && g && (gl = nn_contiguous_as(g, fmt));
    for (int k = W_; k <= RV_ && ok; k++) ok = !orig[k] || (t[k] = per_channel(orig[k], C, sdt));
    if (ok) ok = (gwb = channel_pair(C, sdt, x->storage->device)) && (!want[0] || (gx = empty_as(t[X_], x->dtype)));
    if (ok) {
        nn_kargs a = {.op = NN_OP_batch_norm_backward, .out = {gwb, gx}, .in = {gl, t[X_], t[W_], t[RM_], t[RV_]}, .nin = 5,
                      .f = {eps}, .i = {training, want[0]}};
        ok = !nn_dispatch(&a);
    }
    if (ok && want[1]) ok = (*grad_weight = nn_select(gwb, 0, 0)) != NULL;
    if (ok && want[2]) ok = (*grad_bias = nn_select(gwb, 0, 1)) != NULL;
    for (int k = 0; k < 5; k++) nn_release(t[k]);
    nn_release(g);
    nn_release(gl);
    nn_release(gwb);
    if (ok) {
        *grad_input = gx;
        return NN_OK;
    }
    nn_release(gx);
    nn_release(*grad_weight);
    nn_release(*grad_bias);
    *grad_weight = *grad_bias = NULL;
    return nn_last_status();
}
