/* 2-D pooling frontends: max, average, adaptive average and adaptive max over
 * [N, C, H, W] or [C, H, W]. PyTorch's checks and messages, its output size
 *   floor_or_ceil((H + 2p - d(k-1) - 1) / s) + 1, where with ceil_mode the last
 *   window must start inside the input or the left padding,
 * dispatch, and the autograd nodes (backward through the *_backward kernels). */
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "backend.h"
#include "conv.h"
#include "memory_format.h"
#include "nnfunc.h"

/* The CPU kernel table refers to NN kernels weakly, and a weak reference does not pull a member
 * out of the static engine library; this strong reference does (the CPU backend is always built). */
nn_status nn_cpu_max_pool2d(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_max_pool2d;

typedef struct {
    int64_t i[8]; /* the kernels' i[] */
    bool cl;      /* the input was channels-last on a GPU: so is grad_input */
} pool_ctx;

/* floor division (PyTorch's div_rtn) */
static int64_t div_floor(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* PyTorch's pooling_output_shape for one axis. */
static nn_status output_size(const char *fn, int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceil_mode, int64_t *out)
{
    if (s == 0) return nn_error(NN_ERR_ARG, "%s: stride should not be zero", fn);
    if (pad < 0) return nn_error(NN_ERR_ARG, "%s: pad must be non-negative, but got pad: %lld", fn, (long long)pad);
    if (pad > ((k - 1) * d + 1) / 2)
        return nn_error(NN_ERR_ARG, "%s: pad should be at most half of effective kernel size, but got pad=%lld, kernel_size=%lld and dilation=%lld",
                        fn, (long long)pad, (long long)k, (long long)d);
    int64_t o = div_floor(in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
    if (ceil_mode && (o - 1) * s >= in + pad) o--; /* the last window must start inside the input or the left padding */
    *out = o;
    return NN_OK;
}

/* PyTorch's pool2d_shape_check. */
static nn_status shape_check(const char *fn, const nn_tensor *x, const int64_t *k, const int64_t *s, const int64_t *p, const int64_t *d,
                             int64_t oh, int64_t ow)
{
    char b[160];
    int nd = x->ndim;
    if (k[0] <= 0 || k[1] <= 0)
        return nn_error(NN_ERR_ARG, "%s: kernel size should be greater than zero, but got kH: %lld kW: %lld", fn, (long long)k[0], (long long)k[1]);
    if (s[0] <= 0 || s[1] <= 0)
        return nn_error(NN_ERR_ARG, "%s: stride should be greater than zero, but got dH: %lld dW: %lld", fn, (long long)s[0], (long long)s[1]);
    if (d[0] <= 0 || d[1] <= 0)
        return nn_error(NN_ERR_ARG, "%s: dilation should be greater than zero, but got dilationH: %lld dilationW: %lld", fn, (long long)d[0],
                        (long long)d[1]);
    bool valid = x->shape[1] != 0 && x->shape[2] != 0;
    if (!((nd == 3 && x->shape[0] != 0 && valid) || (nd == 4 && valid && x->shape[3] != 0)))
        return nn_error(NN_ERR_SHAPE, "%s: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:%s", fn,
                        nn_shape_str(b, nd, x->shape));
    if (k[1] / 2 < p[1] || k[0] / 2 < p[0])
        return nn_error(NN_ERR_ARG, "%s: pad should be smaller than or equal to half of kernel size, but got padW = %lld, padH = %lld, kW = %lld, kH = %lld",
                        fn, (long long)p[1], (long long)p[0], (long long)k[1], (long long)k[0]);
    if (oh < 1 || ow < 1) {
        int64_t c = x->shape[nd - 3], h = x->shape[nd - 2], w = x->shape[nd - 1];
        return nn_error(NN_ERR_SHAPE, "%s: Given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lld). Output size is too small",
                        fn, (long long)c, (long long)h, (long long)w, (long long)c, (long long)oh, (long long)ow);
    }
    return NN_OK;
}

static nn_status check_input(const char *fn, const nn_tensor *x)
{
    if (x->ndim != 3 && x->ndim != 4) return nn_error(NN_ERR_SHAPE, "%s: non-empty 3D or 4D (batch mode) tensor expected for input", fn);
    if (!nn_dtype_is_float(x->dtype))
        return nn_error(NN_ERR_DTYPE, "%s: \"%s\" not implemented for '%s'", fn, fn, nn_dtype_scalar_name(x->dtype));
    return NN_OK;
}

/* Is t a 4-D channels-last GPU tensor? Its pool results are then channels-last too (the CUDA
 * kernels write either layout; the CPU's write contiguous planes). */
static bool gpu_channels_last(const nn_tensor *t)
{
    return t->ndim == 4 && t->storage->device.type == NN_CUDA && nn_suggest_memory_format(t) == NN_CHANNELS_LAST;
}

/* An empty tensor of shape [ndim, shape] in like's layout where gpu_channels_last(like), else contiguous. */
static nn_tensor *empty_as(const nn_tensor *like, int ndim, const int64_t *shape, nn_dtype dt)
{
    bool cl = ndim == 4 && gpu_channels_last(like);
    return nn_empty_format(ndim, shape, cl ? NN_CHANNELS_LAST : NN_CONTIGUOUS_FORMAT, dt, like->storage->device);
}

/* An empty tensor shaped like x with the last two dims replaced by oh, ow. */
static nn_tensor *empty_out(const nn_tensor *x, int64_t oh, int64_t ow, nn_dtype dt)
{
    int64_t shape[4];
    memcpy(shape, x->shape, sizeof(int64_t) * x->ndim);
    shape[x->ndim - 2] = oh;
    shape[x->ndim - 1] = ow;
    return empty_as(x, x->ndim, shape, dt);
}

/* Record a one-input node for out; saved (may be NULL) is kept for backward. */
static nn_status record(const char *name, nn_backward_fn fn, nn_tensor *input, nn_tensor *out, nn_tensor *saved, const int64_t *i)
{
    if (!nn_any_requires_grad(1, &input)) return NN_OK;
    pool_ctx *c = malloc(sizeof *c);
    if (!c) return nn_error(NN_ERR_NOMEM, "out of memory recording %s", name);
    nn_node *node = nn_node_new(name, fn, 1, &input);
    if (!node) {
        free(c);
        return nn_last_status();
    }
    memcpy(c->i, i, sizeof c->i);
    c->cl = gpu_channels_last(input);
    node->ctx = c;
    if (saved) nn_node_save(node, 0, saved);
    nn_node_set_output(node, out, 0);
    nn_node_release(node);
    return NN_OK;
}

/* Run a backward kernel: grad_input shaped like the forward input (edge e), in its layout (as
 * PyTorch: the next convolution's backward then reads it in place), from grad_out g. */
static nn_tensor *run_backward(nn_op op, const nn_edge *e, nn_tensor *g, nn_tensor *indices, const pool_ctx *c)
{
    nn_tensor *gc = nn_to_dtype(g, e->dtype);
    if (!gc) return NULL;
    nn_tensor *out = nn_empty_format(e->ndim, e->shape, c->cl ? NN_CHANNELS_LAST : NN_CONTIGUOUS_FORMAT, e->dtype, gc->storage->device);
    if (out) {
        nn_kargs a = {.op = op, .out = {out}, .in = {gc, indices}, .nin = indices ? 2 : 1};
        memcpy(a.i, c->i, sizeof a.i);
        if (nn_dispatch(&a)) {
            nn_release(out);
            out = NULL;
        }
    }
    nn_release(gc);
    return out;
}

/* Double backward: a pool's gradient is linear in g alone, and its adjoint is the pool (for max,
 * the values at the saved argmax positions): gg, shaped like the pool's input, pooled back to g's
 * shape. i[0] the backward op; saved 0: the indices (max). */
static nn_tensor *pooled_like(const nn_node *d, nn_tensor *gg, nn_tensor *ind)
{
    const pool_ctx *c = d->ctx;
    const nn_edge *e = &d->next[0]; /* g's */
    int nd = e->ndim;
    int64_t oh = e->shape[nd - 2], ow = e->shape[nd - 1];
    switch ((nn_op)d->i[0]) {
    case NN_OP_adaptive_avg_pool2d_backward: return nn_adaptive_avg_pool2d(gg, oh, ow);
    case NN_OP_avg_pool2d_backward:
        for (int ceil = 0; ceil < 2; ceil++) { /* the forward's ceil_mode: the one giving g's size */
            nn_tensor *r = nn_avg_pool2d(gg, c->i, c->i + 2, c->i + 4, ceil, c->i[6], c->i[7]);
            if (!r || (r->shape[nd - 2] == oh && r->shape[nd - 1] == ow)) return r;
            nn_release(r);
        }
        nn_error(NN_ERR_SHAPE, "avg_pool2d double backward: no pooling gives the gradient's size");
        return NULL;
    default: { /* max: planes flattened, each position's argmax offset by its plane's start */
        int64_t planes = nn_numel(ind) / (oh * ow), hw = gg->shape[nd - 2] * gg->shape[nd - 1], flat = planes * hw, n = nn_numel(ind);
        int64_t ps[2] = {planes, oh * ow}, col[2] = {planes, 1};
        nn_tensor *start = nn_arange(0, (double)flat, (double)hw, true, NN_I64, ind->storage->device);
        nn_tensor *sc = start ? nn_reshape(start, 2, col) : NULL, *iv = sc ? nn_reshape(ind, 2, ps) : NULL;
        nn_tensor *at = iv ? nn_binary(NN_OP_add, iv, sc) : NULL, *atf = at ? nn_reshape(at, 1, &n) : NULL;
        nn_tensor *gf = atf ? nn_reshape(gg, 1, &flat) : NULL, *v = gf ? nn_index_select(gf, 0, atf) : NULL;
        nn_tensor *r = v ? nn_reshape(v, nd, e->shape) : NULL;
        nn_release(start), nn_release(sc), nn_release(iv), nn_release(at), nn_release(atf), nn_release(gf), nn_release(v);
        return r;
    }
    }
}

/* Flat h*W + w indices from a max pool's uint8 window positions (run_max's compact record):
 * the window's origin (oy*sh - ph, ox*sw - pw) plus the position's offset, tab[p] = (p / kw)*W + p % kw. */
static nn_tensor *flat_indices(nn_tensor *ind, const pool_ctx *c, int64_t W)
{
    if (ind->dtype == NN_I64) return nn_retain(ind);
    int nd = ind->ndim;
    int64_t kh = c->i[0], kw = c->i[1], sh = c->i[2], sw = c->i[3], ph = c->i[4], pw = c->i[5];
    int64_t oh = ind->shape[nd - 2], ow = ind->shape[nd - 1], n = nn_numel(ind), k = kh * kw, col[2] = {oh, 1}, row[2] = {1, ow};
    nn_device dev = ind->storage->device;
    nn_tensor *tc = nn_empty(1, &k, NN_I64, NN_DEVICE_CPU);
    if (!tc) return NULL;
    for (int64_t p = 0; p < k; p++) ((int64_t *)nn_data(tc))[p] = p / kw * W + p % kw;
    nn_tensor *tab = nn_to_device(tc, dev), *p64 = tab ? nn_to_dtype(ind, NN_I64) : NULL, *pf = p64 ? nn_reshape(p64, 1, &n) : NULL;
    nn_tensor *off = pf ? nn_index_select(tab, 0, pf) : NULL, *offs = off ? nn_reshape(off, nd, ind->shape) : NULL;
    nn_tensor *ay = offs ? nn_arange((double)(-ph * W), (double)((oh * sh - ph) * W), (double)(sh * W), true, NN_I64, dev) : NULL;
    nn_tensor *ax = ay ? nn_arange((double)-pw, (double)(ow * sw - pw), (double)sw, true, NN_I64, dev) : NULL;
    nn_tensor *ay2 = ax ? nn_reshape(ay, 2, col) : NULL, *ax2 = ay2 ? nn_reshape(ax, 2, row) : NULL;
    nn_tensor *origin = ax2 ? nn_binary(NN_OP_add, ay2, ax2) : NULL, *flat = origin ? nn_binary(NN_OP_add, offs, origin) : NULL;
    nn_release(tc), nn_release(tab), nn_release(p64), nn_release(pf), nn_release(off), nn_release(offs);
    nn_release(ay), nn_release(ax), nn_release(ay2), nn_release(ax2), nn_release(origin);
    return flat;
}

static nn_status pool_double_backward(nn_node *d, nn_tensor *const *gg, nn_tensor **gi)
{
    nn_tensor *saved = nn_node_has_saved(d, 0) ? nn_node_saved(d, 0) : NULL;
    if (nn_node_has_saved(d, 0) && !saved) return nn_last_status();
    nn_tensor *ind = saved ? flat_indices(saved, d->ctx, gg[0]->shape[gg[0]->ndim - 1]) : NULL; /* gg: the pool input's shape */
    if (saved && !ind) return nn_last_status();
    gi[0] = pooled_like(d, gg[0], ind);
    nn_release(ind);
    return gi[0] ? NN_OK : nn_last_status();
}

/* The pool's backward kernel on g; recording a graph, off it, with a node for the result. */
static nn_status pool_backward(nn_node *n, nn_op op, nn_tensor *g, nn_tensor *ind, nn_tensor **grad_in)
{
    const pool_ctx *c = n->ctx;
    bool record = nn_backward_creates_graph() && nn_grad_enabled() && g->requires_grad;
    if (record) nn_set_grad_enabled(false);
    grad_in[0] = run_backward(op, &n->next[0], g, ind, c);
    if (!record) return grad_in[0] ? NN_OK : nn_last_status();
    nn_set_grad_enabled(true);
    pool_ctx *dc = grad_in[0] ? malloc(sizeof *dc) : NULL;
    nn_node *d = dc ? nn_node_new("PoolBackwardBackward0", pool_double_backward, 1, &g) : NULL;
    if (!d) {
        free(dc);
        return grad_in[0] ? nn_error(NN_ERR_NOMEM, "out of memory") : nn_last_status();
    }
    *dc = *c;
    d->ctx = dc;
    d->i[0] = op;
    if (ind) nn_node_save(d, 0, ind);
    nn_node_set_output(d, grad_in[0], 0);
    nn_node_release(d);
    return NN_OK;
}

static nn_status max_backward(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    nn_tensor *ind = nn_node_saved(n, 0);
    return ind ? pool_backward(n, NN_OP_max_pool2d_backward, grad_out[0], ind, grad_in) : nn_last_status();
}

static nn_status avg_backward(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    return pool_backward(n, NN_OP_avg_pool2d_backward, grad_out[0], NULL, grad_in);
}

static nn_status adaptive_avg_backward(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    return pool_backward(n, NN_OP_adaptive_avg_pool2d_backward, grad_out[0], NULL, grad_in);
}

/* Values and indices of a max pool (op max_pool2d or adaptive_max_pool2d), with the node. Indices
 * the caller does not ask for are only the backward's: on a GPU, for an undilated window of up to
 * 256 positions, they are uint8 positions in the window (cuda/pool.cu), an eighth of int64's traffic. */
static nn_tensor *run_max(nn_op op, const char *grad_fn, nn_tensor *input, int64_t oh, int64_t ow, const int64_t *i, nn_tensor **indices)
{
    bool compact = !indices && op == NN_OP_max_pool2d && input->storage->device.type == NN_CUDA && i[6] == 1 && i[7] == 1 && i[0] * i[1] <= 256;
    nn_tensor *out = empty_out(input, oh, ow, input->dtype), *ind = out ? empty_out(input, oh, ow, compact ? NN_U8 : NN_I64) : NULL;
    nn_status st = ind ? NN_OK : nn_last_status();
    if (!st) {
        nn_kargs a = {.op = op, .out = {out, ind}, .in = {input}, .nin = 1};
        memcpy(a.i, i, sizeof a.i);
        st = nn_dispatch(&a);
    }
    if (!st) st = record(grad_fn, max_backward, input, out, ind, i);
    if (st) {
        nn_release(out);
        nn_release(ind);
        return NULL;
    }
    if (indices) *indices = ind;
    else nn_release(ind);
    return out;
}

nn_tensor *nn_max_pool2d(nn_tensor *input, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                         const int64_t dilation[2], bool ceil_mode, nn_tensor **indices)
{
    const char *fn = "max_pool2d";
    if (indices) *indices = NULL;
    if (check_input(fn, input)) return NULL;
    int64_t s[2] = {stride[0] ? stride[0] : kernel[0], stride[1] ? stride[1] : kernel[1]}, oh, ow;
    int nd = input->ndim;
    if (output_size(fn, input->shape[nd - 2], kernel[0], padding[0], s[0], dilation[0], ceil_mode, &oh) ||
        output_size(fn, input->shape[nd - 1], kernel[1], padding[1], s[1], dilation[1], ceil_mode, &ow) ||
        shape_check(fn, input, kernel, s, padding, dilation, oh, ow))
        return NULL;
    int64_t i[8] = {kernel[0], kernel[1], s[0], s[1], padding[0], padding[1], dilation[0], dilation[1]};
    return run_max(NN_OP_max_pool2d, "MaxPool2DWithIndicesBackward0", input, oh, ow, i, indices);
}

nn_tensor *nn_avg_pool2d(nn_tensor *input, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2], bool ceil_mode,
                         bool count_include_pad, int64_t divisor_override)
{
    const char *fn = "avg_pool2d";
    if (check_input(fn, input)) return NULL;
    int64_t s[2] = {stride[0] ? stride[0] : kernel[0], stride[1] ? stride[1] : kernel[1]}, one[2] = {1, 1}, oh, ow;
    int nd = input->ndim;
    if (output_size(fn, input->shape[nd - 2], kernel[0], padding[0], s[0], 1, ceil_mode, &oh) ||
        output_size(fn, input->shape[nd - 1], kernel[1], padding[1], s[1], 1, ceil_mode, &ow) ||
        shape_check(fn, input, kernel, s, padding, one, oh, ow))
        return NULL;
    int64_t i[8] = {kernel[0], kernel[1], s[0], s[1], padding[0], padding[1], count_include_pad, divisor_override};
    nn_tensor *out = empty_out(input, oh, ow, input->dtype);
    if (!out) return NULL;
    nn_kargs a = {.op = NN_OP_avg_pool2d, .out = {out}, .in = {input}, .nin = 1};
    memcpy(a.i, i, sizeof a.i);
    if (nn_dispatch(&a) || record("AvgPool2DBackward0", avg_backward, input, out, NULL, i)) {
        nn_release(out);
        return NULL;
    }
    return out;
}

/* The checks of adaptive_{avg,max}_pool2d; first_dim: the first dim that must be non-empty. */
static nn_status check_adaptive(const char *fn, const nn_tensor *x, int64_t oh, int64_t ow, bool is_max)
{
    char b[160];
    if (oh < 0 || ow < 0)
        return nn_error(NN_ERR_ARG, "%s: elements of output_size must be greater than or equal to 0 but received {%lld, %lld}", fn,
                        (long long)oh, (long long)ow);
    if (x->ndim != 3 && x->ndim != 4)
        return nn_error(NN_ERR_SHAPE, "%s(): Expected 3D or 4D tensor, but got%s %s", fn, is_max ? ":" : "", nn_shape_str(b, x->ndim, x->shape));
    for (int d = is_max ? 1 : x->ndim - 2; d < x->ndim; d++)
        if (x->shape[d] <= 0)
            return nn_error(NN_ERR_SHAPE, "%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s with dimension %d being empty",
                            fn, nn_shape_str(b, x->ndim, x->shape), d);
    if (!nn_dtype_is_float(x->dtype))
        return nn_error(NN_ERR_DTYPE, "%s: \"%s\" not implemented for '%s'", fn, fn, nn_dtype_scalar_name(x->dtype));
    return NN_OK;
}

nn_tensor *nn_adaptive_avg_pool2d(nn_tensor *input, int64_t out_h, int64_t out_w)
{
    if (check_adaptive("adaptive_avg_pool2d", input, out_h, out_w, false)) return NULL;
    int64_t i[8] = {0};
    nn_tensor *out = empty_out(input, out_h, out_w, input->dtype);
    if (!out) return NULL;
    nn_kargs a = {.op = NN_OP_adaptive_avg_pool2d, .out = {out}, .in = {input}, .nin = 1};
    if (nn_dispatch(&a) || record("AdaptiveAvgPool2DBackward0", adaptive_avg_backward, input, out, NULL, i)) {
        nn_release(out);
        return NULL;
    }
    return out;
}

nn_tensor *nn_adaptive_max_pool2d(nn_tensor *input, int64_t out_h, int64_t out_w, nn_tensor **indices)
{
    if (indices) *indices = NULL;
    if (check_adaptive("adaptive_max_pool2d", input, out_h, out_w, true)) return NULL;
    int64_t i[8] = {0};
    return run_max(NN_OP_adaptive_max_pool2d, "AdaptiveMaxPool2DBackward0", input, out_h, out_w, i, indices);
}
