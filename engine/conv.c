/* conv2d frontends: PyTorch's checks (in its order and words), the output size
 * floor((H + 2p - d(k-1) - 1) / s) + 1, dispatch to the conv2d kernels, and the
 * ConvolutionBackward0 node whose backward runs conv2d_backward_input,
 * conv2d_backward_weight and a sum over N, H, W for the bias. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autocast.h"
#include "autograd.h"
#include "backend.h"
#include "conv.h"
#include "cuda_flags.h"
#include "memory_format.h"

/* The CPU kernel table refers to NN kernels weakly, and a weak reference does not pull a member
 * out of the static engine library; this strong reference does (the CPU backend is always built). */
nn_status nn_cpu_conv2d(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_conv2d;

typedef struct {
    int64_t stride[2], pad[2], dil[2], groups;
} conv_ctx;

/* A view of t with a leading batch dim of 1 when t is 3-D (no autograd: a plain view). */
static nn_tensor *batched(nn_tensor *t)
{
    if (t->ndim == 4) return nn_retain(t);
    int64_t shape[4] = {1, t->shape[0], t->shape[1], t->shape[2]};
    int64_t strides[4] = {t->shape[0] * t->strides[0], t->strides[0], t->strides[1], t->strides[2]};
    return nn_make_view(t, 4, shape, strides, t->offset);
}

/* A 4-D result channels-last when a or b is (PyTorch's rule for cuDNN convolutions and their
 * gradients), else contiguous. */
static nn_tensor *empty_suggested(const int64_t shape[4], const nn_tensor *a, const nn_tensor *b, nn_dtype dt, nn_device dev)
{
    bool cl = nn_suggest_memory_format(a) == NN_CHANNELS_LAST || nn_suggest_memory_format(b) == NN_CHANNELS_LAST;
    return cl ? nn_empty_format(4, shape, NN_CHANNELS_LAST, dt, dev) : nn_empty(4, shape, dt, dev);
}

static nn_status check_shape_forward(const nn_tensor *x, const nn_tensor *w, const nn_tensor *b, const int64_t *stride,
                                     const int64_t *pad, const int64_t *dil, int64_t groups)
{
    char s1[160], s2[160];
    if (pad[0] < 0 || pad[1] < 0) return nn_error(NN_ERR_ARG, "conv2d: negative padding is not supported");
    if (stride[0] <= 0 || stride[1] <= 0) return nn_error(NN_ERR_ARG, "conv2d: non-positive stride is not supported");
    if (dil[0] <= 0 || dil[1] <= 0) return nn_error(NN_ERR_ARG, "conv2d: dilation should be greater than zero");
    if (w->ndim != x->ndim)
        return nn_error(NN_ERR_SHAPE, "conv2d: Expected %d-dimensional input for %d-dimensional weight %s, but got %d-dimensional input of size %s instead",
                        w->ndim, w->ndim, nn_shape_str(s1, w->ndim, w->shape), x->ndim, nn_shape_str(s2, x->ndim, x->shape));
    if (w->shape[0] < groups)
        return nn_error(NN_ERR_SHAPE, "conv2d: Given groups=%lld, expected weight to be at least %lld at dimension 0, but got weight of size %s instead",
                        (long long)groups, (long long)groups, nn_shape_str(s1, w->ndim, w->shape));
    if (w->shape[0] % groups)
        return nn_error(NN_ERR_SHAPE, "conv2d: Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got weight of size [%s] instead",
                        (long long)groups, (long long)groups, nn_shape_str(s1, w->ndim, w->shape));
    if (x->shape[1] != w->shape[1] * groups)
        return nn_error(NN_ERR_SHAPE, "conv2d: Given groups=%lld, weight of size %s, expected input%s to have %lld channels, but got %lld channels instead",
                        (long long)groups, nn_shape_str(s1, w->ndim, w->shape), nn_shape_str(s2, x->ndim, x->shape),
                        (long long)(w->shape[1] * groups), (long long)x->shape[1]);
    if (b && (b->ndim != 1 || b->shape[0] != w->shape[0]))
        return nn_error(NN_ERR_SHAPE, "conv2d: Given weight of size %s, expected bias to be 1-dimensional with %lld elements, but got bias of size %s instead",
                        nn_shape_str(s1, w->ndim, w->shape), (long long)w->shape[0], nn_shape_str(s2, b->ndim, b->shape));
    int64_t ih = x->shape[2] + 2 * pad[0], iw = x->shape[3] + 2 * pad[1];
    int64_t kh = dil[0] * (w->shape[2] - 1) + 1, kw = dil[1] * (w->shape[3] - 1) + 1;
    if (ih < kh || iw < kw)
        return nn_error(NN_ERR_SHAPE, "conv2d: Calculated padded input size per channel: (%lld x %lld). Kernel size: (%lld x %lld). "
                        "Kernel size can't be greater than actual input size", (long long)ih, (long long)iw, (long long)kh, (long long)kw);
    return NN_OK;
}

/* Everything PyTorch checks before it runs a convolution of the (batched) input x4. */
static nn_status check_conv(const nn_tensor *x4, const nn_tensor *w, const nn_tensor *b, const int64_t *stride, const int64_t *pad,
                            const int64_t *dil, int64_t groups)
{
    char s1[160], d1[48], d2[48];
    if (w->ndim < 3) return nn_error(NN_ERR_SHAPE, "conv2d: weight should have at least three dimensions");
    if (groups <= 0) return nn_error(NN_ERR_ARG, "conv2d: non-positive groups is not supported");
    nn_status st = check_shape_forward(x4, w, b, stride, pad, dil, groups);
    if (st) return st;
    if (nn_numel(x4) == 0 && x4->shape[0] != 0 && x4->shape[1] != 0)
        return nn_error(NN_ERR_SHAPE, "conv2d: Only zero batch or zero channel inputs are supported, but got input shape: %s",
                        nn_shape_str(s1, x4->ndim, x4->shape));
    if (x4->dtype != w->dtype || !nn_device_eq(x4->storage->device, w->storage->device))
        return nn_error(NN_ERR_DTYPE, "conv2d: Input type (%s) and weight type (%s) should be the same", nn_type_str(d1, x4),
                        nn_type_str(d2, w));
    if (b && !nn_device_eq(x4->storage->device, b->storage->device))
        return nn_error(NN_ERR_DTYPE, "conv2d: Input type (%s) and bias type (%s) should be the same", nn_type_str(d1, x4),
                        nn_type_str(d2, b));
    if (!nn_dtype_is_float(x4->dtype))
        return nn_error(NN_ERR_DTYPE, "conv2d: \"conv2d\" not implemented for '%s'", nn_dtype_scalar_name(x4->dtype));
    return NN_OK;
}

/* The checks conv2d makes before batching its input. */
static nn_status check_input(const nn_tensor *input, const nn_tensor *bias)
{
    char s1[160];
    if (bias && bias->dtype != input->dtype)
        return nn_error(NN_ERR_DTYPE, "conv2d: Input type (%s) and bias type (%s) should be the same", nn_dtype_ctype_name(input->dtype),
                        nn_dtype_ctype_name(bias->dtype));
    if (input->ndim != 3 && input->ndim != 4)
        return nn_error(NN_ERR_SHAPE, "conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: %s",
                        nn_shape_str(s1, input->ndim, input->shape));
    return NN_OK;
}

static nn_status conv_backward(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in);

/* A 3-channel convolution's forward on the GPU (an image network's first layer) runs as a
 * 4-channel one, input and weight given a zero fourth channel, where cuDNN's kernels are faster
 * with it: on an H200, AlexNet's first layer took 259 -> 139 us in float16 and 634 -> 443 us in
 * NCHW float32 without TF32 (bench/NOTES.md); bfloat16 did not gain, NHWC float32 lost, and the
 * gradients gained nothing, so the backward keeps the caller's 3-channel tensors. */
static bool pad_to_4(const nn_tensor *x4, const nn_tensor *w, int64_t groups, const int64_t *stride, const int64_t *dil)
{
    nn_dtype dt = x4->dtype;
    if (nn_conv_space_to_depth(dt, x4->shape[1], groups, stride, dil, w->shape[2], w->shape[3])) return false; /* no need */
    return groups == 1 && x4->shape[1] == 3 && w->ndim == 4 && w->shape[1] == 3 && x4->storage->device.type == NN_CUDA &&
           nn_numel(x4) >= (1 << 20) && (dt == NN_F16 || (dt == NN_F32 && !nn_cudnn_nhwc(dt) && nn_suggest_memory_format(x4) != NN_CHANNELS_LAST));
}

/* dst = src, not recorded for autograd (dst is a padded copy the caller builds) */
static nn_status copy_untracked(nn_tensor *dst, nn_tensor *src)
{
    bool was = nn_grad_enabled();
    nn_set_grad_enabled(false);
    nn_status st = nn_copy_(dst, src);
    nn_set_grad_enabled(was);
    return st;
}

/* t (4-D, 3 channels) with a fourth, zero channel, in t's memory format or the one cuDNN will run
 * in (nn_cudnn_nhwc); not recorded for autograd */
static nn_tensor *with_zero_channel(nn_tensor *t)
{
    int64_t shape[4] = {t->shape[0], 4, t->shape[2], t->shape[3]};
    nn_memory_format f = nn_cudnn_nhwc(t->dtype) ? NN_CHANNELS_LAST : nn_suggest_memory_format(t);
    nn_tensor *p = nn_empty_format(4, shape, f, t->dtype, t->storage->device);
    nn_tensor *head = p ? nn_narrow(p, 1, 0, 3) : NULL;
    nn_status st = head ? nn_zero_(p) : nn_last_status(); /* all of it: one dense fill, faster than the strided fourth channel's */
    if (!st) st = copy_untracked(head, t);
    nn_release(head);
    if (st) {
        nn_release(p);
        return NULL;
    }
    return p;
}

/* Run the convolution of x (the caller's input, or its bottom/right-padded copy) and record the
 * node against orig, the caller's input, and rec_bias (bias, or the float32 param autocast cast
 * it from). */
static nn_tensor *conv_run(nn_tensor *x, nn_tensor *orig, nn_tensor *weight, nn_tensor *bias, nn_tensor *rec_bias,
                           const int64_t *stride, const int64_t *pad, const int64_t *dil, int64_t groups)
{
    nn_tensor *x4 = batched(x);
    if (!x4) return NULL;
    if (check_conv(x4, weight, bias, stride, pad, dil, groups)) {
        nn_release(x4);
        return NULL;
    }
    bool pad4 = pad_to_4(x4, weight, groups, stride, dil); /* the forward runs x4 and weight, or their 4-channel copies */
    nn_tensor *xr = pad4 ? with_zero_channel(x4) : nn_retain(x4);
    nn_tensor *w = !xr ? NULL : pad4 ? with_zero_channel(weight) : nn_retain(weight);
    if (!w) {
        nn_release(xr);
        nn_release(x4);
        return NULL;
    }
    int64_t N = x4->shape[0], O = weight->shape[0];
    int64_t oh = (x4->shape[2] + 2 * pad[0] - dil[0] * (weight->shape[2] - 1) - 1) / stride[0] + 1;
    int64_t ow = (x4->shape[3] + 2 * pad[1] - dil[1] * (weight->shape[3] - 1) - 1) / stride[1] + 1;
    int64_t shape[4] = {N, O, oh, ow};
    bool unbatched = x->ndim == 3;
    nn_tensor *out = unbatched ? nn_empty(3, shape + 1, x->dtype, x->storage->device)
                               : empty_suggested(shape, x4, weight, x->dtype, x->storage->device); /* the caller's layout, not the padded copies' */
    nn_tensor *out4 = out ? batched(out) : NULL;
    nn_status st = out4 ? NN_OK : nn_last_status();
    if (!st) {
        nn_kargs a = {.op = NN_OP_conv2d, .out = {out4}, .in = {xr, w, bias}, .nin = bias ? 3 : 2,
                      .i = {stride[0], stride[1], pad[0], pad[1], dil[0], dil[1], groups}};
        st = nn_dispatch(&a);
    }
    nn_tensor *inputs[3] = {orig, weight, rec_bias};
    if (!st && nn_any_requires_grad(3, inputs)) {
        conv_ctx *c = malloc(sizeof *c);
        nn_node *node = c ? nn_node_new("ConvolutionBackward0", conv_backward, 3, inputs) : NULL;
        if (!node) {
            st = c ? nn_last_status() : nn_error(NN_ERR_NOMEM, "conv2d: out of memory recording the graph");
            free(c);
        } else {
            *c = (conv_ctx){{stride[0], stride[1]}, {pad[0], pad[1]}, {dil[0], dil[1]}, groups};
            node->ctx = c;
            /* a 3-D input is saved as itself: the backward's 4-D view of it is then recorded, so
             * that a double backward reaches the caller's input */
            nn_node_save(node, 0, unbatched && x == orig ? orig : x4);
            nn_node_save(node, 1, weight);
            nn_node_set_output(node, out, 0);
            nn_node_release(node);
        }
    }
    nn_release(x4);
    nn_release(xr);
    nn_release(w);
    nn_release(out4);
    if (st) {
        nn_release(out);
        return NULL;
    }
    return out;
}

/* Autocast's casts of a convolution's operands (c: the new references, for the caller to
 * release). A float32 bias param is cast off the graph and *rec_bias stays the param: the node
 * records it, and the backward sums its gradient straight into float32 (conv_backward sums into
 * the edge's dtype) rather than in 16 bits cast up. */
static nn_status autocast_operands(nn_tensor **x, nn_tensor **w, nn_tensor **b, nn_tensor **rec_bias, nn_tensor *c[3])
{
    nn_tensor *in[3] = {*x, *w, *b};
    bool direct = nn_grad_enabled() && nn_autocast_records_param(*b);
    c[2] = NULL;
    if (nn_autocast_inputs(NN_OP_conv2d, direct ? 2 : 3, in, c)) return nn_last_status();
    if (direct) {
        nn_status st = nn_autocast_params_off_graph(1, b, &c[2]);
        if (st) {
            nn_autocast_release(3, c);
            return st;
        }
    }
    *rec_bias = direct ? *b : c[2] ? c[2] : *b;
    *x = c[0] ? c[0] : *x, *w = c[1] ? c[1] : *w, *b = c[2] ? c[2] : *b;
    return NN_OK;
}

nn_tensor *nn_conv2d(nn_tensor *input, nn_tensor *weight, nn_tensor *bias, const int64_t stride[2], const int64_t padding[2],
                     const int64_t dilation[2], int64_t groups)
{
    nn_tensor *c[3] = {NULL, NULL, NULL}, *rec_bias = bias;
    if (nn_autocast_on() && autocast_operands(&input, &weight, &bias, &rec_bias, c)) return NULL;
    nn_tensor *r = check_input(input, bias) ? NULL : conv_run(input, input, weight, bias, rec_bias, stride, padding, dilation, groups);
    nn_autocast_release(3, c);
    return r;
}

static nn_tensor *conv_same(nn_tensor *input, nn_tensor *weight, nn_tensor *bias, nn_tensor *rec_bias, const int64_t stride[2],
                            const int64_t dilation[2], int64_t groups);

nn_tensor *nn_conv2d_same(nn_tensor *input, nn_tensor *weight, nn_tensor *bias, const int64_t stride[2], const int64_t dilation[2],
                          int64_t groups)
{
    nn_tensor *c[3] = {NULL, NULL, NULL}, *rec_bias = bias;
    if (nn_autocast_on() && autocast_operands(&input, &weight, &bias, &rec_bias, c)) return NULL;
    nn_tensor *r = conv_same(input, weight, bias, rec_bias, stride, dilation, groups);
    nn_autocast_release(3, c);
    return r;
}

static nn_tensor *conv_same(nn_tensor *input, nn_tensor *weight, nn_tensor *bias, nn_tensor *rec_bias, const int64_t stride[2],
                            const int64_t dilation[2], int64_t groups)
{
    char s1[160], s2[160];
    if (check_input(input, bias)) return NULL;
    if (weight->ndim < 3) {
        nn_error(NN_ERR_SHAPE, "conv2d: weight should have at least three dimensions");
        return NULL;
    }
    if (weight->ndim != 4) {
        nn_error(NN_ERR_SHAPE, "conv2d: Expected %d-dimensional input for %d-dimensional weight%s, but got 4-dimensional input of size %s instead",
                 weight->ndim, weight->ndim, nn_shape_str(s1, weight->ndim, weight->shape), nn_shape_str(s2, input->ndim, input->shape));
        return NULL;
    }
    if (stride[0] != 1 || stride[1] != 1) {
        nn_error(NN_ERR_ARG, "conv2d: padding='same' is not supported for strided convolutions");
        return NULL;
    }
    if (dilation[0] <= 0 || dilation[1] <= 0) {
        nn_error(NN_ERR_ARG, "conv2d: dilation should be greater than zero");
        return NULL;
    }
    int64_t left[2], extra[2];
    for (int d = 0; d < 2; d++) {
        int64_t total = dilation[d] * (weight->shape[2 + d] - 1);
        left[d] = total / 2;
        extra[d] = total - 2 * left[d]; /* 0 or 1: the odd row/column PyTorch puts at the bottom/right */
    }
    if (!extra[0] && !extra[1]) return conv_run(input, input, weight, bias, rec_bias, stride, left, dilation, groups);

    /* uneven: a zero copy of the input, one row/column larger at the bottom/right */
    int nd = input->ndim;
    int64_t shape[4], strides[4];
    memcpy(shape, input->shape, sizeof(int64_t) * nd);
    shape[nd - 2] += extra[0];
    shape[nd - 1] += extra[1];
    nn_tensor *padded = nn_zeros(nd, shape, input->dtype, input->storage->device);
    if (!padded) return NULL;
    nn_contiguous_strides(nd, shape, strides);
    nn_tensor *inner = nn_make_view(padded, nd, input->shape, strides, 0);
    nn_status st = inner ? copy_untracked(inner, input) : nn_last_status();
    nn_release(inner);
    nn_tensor *out = st ? NULL : conv_run(padded, input, weight, bias, rec_bias, stride, left, dilation, groups);
    nn_release(padded);
    return out;
}

/* grad_output as a dense [N, O, oh, ow] tensor of dtype dt: channels-last when it or the other
 * operand is, as the gradient computed from it will be (cuDNN then reads it in place). */
static nn_tensor *grad4(nn_tensor *g, const nn_tensor *other, nn_dtype dt)
{
    nn_tensor *c = nn_to_dtype_preserve(g, dt);
    if (!c) return NULL;
    bool cl = c->ndim == 4 && (nn_suggest_memory_format(c) == NN_CHANNELS_LAST || nn_suggest_memory_format(other) == NN_CHANNELS_LAST);
    nn_tensor *k = nn_contiguous_as(c, cl ? NN_CHANNELS_LAST : NN_CONTIGUOUS_FORMAT);
    nn_release(c);
    if (!k) return NULL;
    /* a recorded reshape (not batched's raw view): a double backward's gradient of g must reach
     * the caller's 3-D grad_output */
    int64_t shape[4] = {1, k->shape[0], k->shape[1], k->ndim == 3 ? k->shape[2] : 0};
    nn_tensor *b = k->ndim == 3 ? nn_reshape(k, 4, shape) : nn_retain(k);
    nn_release(k);
    return b;
}

static nn_status check_backward_args(const char *fn, const nn_tensor *g, const int64_t *stride, const int64_t *pad, const int64_t *dil,
                                     int64_t groups)
{
    if (g->ndim != 4) return nn_error(NN_ERR_SHAPE, "%s: expected a 4-D grad_output, but got %d-D", fn, g->ndim);
    if (groups <= 0 || stride[0] <= 0 || stride[1] <= 0 || dil[0] <= 0 || dil[1] <= 0 || pad[0] < 0 || pad[1] < 0)
        return nn_error(NN_ERR_ARG, "%s: invalid stride, padding, dilation or groups", fn);
    return NN_OK;
}

/* Is grad_output's size the one the forward would have produced from these shapes? */
static nn_status check_sizes(const char *fn, const int64_t *x, const int64_t *w, const nn_tensor *g, const int64_t *stride,
                             const int64_t *pad, const int64_t *dil, int64_t groups)
{
    char s1[160], s2[160], s3[160];
    int64_t oh = (x[2] + 2 * pad[0] - dil[0] * (w[2] - 1) - 1), ow = (x[3] + 2 * pad[1] - dil[1] * (w[3] - 1) - 1);
    oh = oh < 0 ? -1 : oh / stride[0] + 1;
    ow = ow < 0 ? -1 : ow / stride[1] + 1;
    if (x[1] != w[1] * groups || w[0] % groups || g->shape[0] != x[0] || g->shape[1] != w[0] || g->shape[2] != oh || g->shape[3] != ow)
        return nn_error(NN_ERR_SHAPE, "%s: grad_output %s does not match input %s and weight %s", fn, nn_shape_str(s1, 4, g->shape),
                        nn_shape_str(s2, 4, x), nn_shape_str(s3, 4, w));
    return NN_OK;
}

/* One gradient of a convolution from g (grad_output, dense): op conv2d_backward_input (other: the
 * weight) or conv2d_backward_weight (other: the input). The result's layout follows like (g, or
 * the tensor g was copied from) and other, by empty_suggested's rule. */
static nn_tensor *conv_grad(nn_op op, nn_tensor *g, const nn_tensor *like, nn_tensor *other, const int64_t shape[4], const int64_t stride[2],
                            const int64_t padding[2], const int64_t dilation[2], int64_t groups)
{
    nn_tensor *out = empty_suggested(shape, like, other, other->dtype, other->storage->device);
    if (out) {
        nn_kargs a = {.op = op, .out = {out}, .in = {g, other}, .nin = 2,
                      .i = {stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1], groups}};
        if (nn_dispatch(&a)) {
            nn_release(out);
            out = NULL;
        }
    }
    return out;
}

nn_tensor *nn_conv2d_backward_input(nn_tensor *grad_output, nn_tensor *weight, const int64_t input_shape[4], const int64_t stride[2],
                                    const int64_t padding[2], const int64_t dilation[2], int64_t groups)
{
    const char *fn = "conv2d_backward_input";
    if (check_backward_args(fn, grad_output, stride, padding, dilation, groups)) return NULL;
    if (weight->ndim != 4) {
        nn_error(NN_ERR_SHAPE, "%s: expected a 4-D weight, but got %d-D", fn, weight->ndim);
        return NULL;
    }
    if (check_sizes(fn, input_shape, weight->shape, grad_output, stride, padding, dilation, groups)) return NULL;
    nn_tensor *g = grad4(grad_output, weight, weight->dtype);
    nn_tensor *out = g ? conv_grad(NN_OP_conv2d_backward_input, g, g, weight, input_shape, stride, padding, dilation, groups) : NULL;
    nn_release(g);
    return out;
}

nn_tensor *nn_conv2d_backward_weight(nn_tensor *grad_output, nn_tensor *input, const int64_t weight_shape[4], const int64_t stride[2],
                                     const int64_t padding[2], const int64_t dilation[2], int64_t groups)
{
    const char *fn = "conv2d_backward_weight";
    if (check_backward_args(fn, grad_output, stride, padding, dilation, groups)) return NULL;
    if (input->ndim != 4) {
        nn_error(NN_ERR_SHAPE, "%s: expected a 4-D input, but got %d-D", fn, input->ndim);
        return NULL;
    }
    if (check_sizes(fn, input->shape, weight_shape, grad_output, stride, padding, dilation, groups)) return NULL;
    nn_tensor *g = grad4(grad_output, input, input->dtype);
    nn_tensor *out = g ? conv_grad(NN_OP_conv2d_backward_weight, g, g, input, weight_shape, stride, padding, dilation, groups) : NULL;
    nn_release(g);
    return out;
}

/* g (dense, the saved input's size) cut to the caller's input: the top-left in_h x in_w of
 * each plane, without the batch dim if the caller's input had none. */
static nn_tensor *to_edge(nn_tensor *g, const nn_edge *e)
{
    int64_t strides[4];
    int lead = 4 - e->ndim;
    for (int d = 0; d < e->ndim; d++) strides[d] = g->strides[d + lead];
    nn_tensor *v = nn_make_view(g, e->ndim, e->shape, strides, g->offset);
    nn_release(g);
    return v;
}

/* Double backward: gx = backward_input(g, w) and gw = backward_weight(g, x) are linear in each
 * operand, so given their gradients ggx and ggw:
 *   dg = conv2d(ggx, w) + conv2d(x, ggw),  dx = backward_input(g, ggw),  dw = backward_weight(g, ggx).
 * Saved: 0 g, 1 x, 2 w (4-D); outputs: 0 gx (the caller's input's shape), 1 gw. */
static nn_status conv_double_backward(nn_node *n, nn_tensor *const *gg, nn_tensor **gi)
{
    const conv_ctx *c = n->ctx;
    nn_tensor *g = nn_node_saved(n, 0), *x = g ? nn_node_saved(n, 1) : NULL, *w = x ? nn_node_saved(n, 2) : NULL;
    if (!w) return nn_last_status();
    nn_tensor *ggx = gg[0] ? nn_reshape(gg[0], 4, x->shape) : NULL, *ggw = gg[1];
    if (gg[0] && !ggx) return nn_last_status();
    nn_status st = NN_OK;
    if (n->next[0].node) {
        nn_tensor *a = ggx ? nn_conv2d(ggx, w, NULL, c->stride, c->pad, c->dil, c->groups) : NULL;
        nn_tensor *b = ggw ? nn_conv2d(x, ggw, NULL, c->stride, c->pad, c->dil, c->groups) : NULL;
        if ((ggx && !a) || (ggw && !b)) st = nn_last_status();
        else gi[0] = a && b ? nn_binary(NN_OP_add, a, b) : nn_retain(a ? a : b);
        if (!st && (a || b) && !gi[0]) st = nn_last_status();
        nn_release(a), nn_release(b);
    }
    if (!st && n->next[1].node && ggw && !(gi[1] = nn_conv2d_backward_input(g, ggw, x->shape, c->stride, c->pad, c->dil, c->groups)))
        st = nn_last_status();
    if (!st && n->next[2].node && ggx && !(gi[2] = nn_conv2d_backward_weight(g, ggx, w->shape, c->stride, c->pad, c->dil, c->groups)))
        st = nn_last_status();
    nn_release(ggx);
    return st;
}

/* Recording a graph: gx (grad_in[0]) and gw (grad_in[1]) as the outputs of one node on g, x and w. */
static nn_status record_double(const nn_node *n, nn_tensor *g, nn_tensor *x, nn_tensor *w, nn_tensor **grad_in)
{
    if (n->next[0].node && !x->requires_grad) /* x is a copy the graph does not link to the caller's input */
        return nn_no_double_backward("reads a padded copy of its input");
    conv_ctx *c = malloc(sizeof *c);
    nn_tensor *ins[3] = {g, x, w};
    nn_node *d = c ? nn_node_new("ConvolutionBackwardBackward0", conv_double_backward, 3, ins) : NULL;
    if (!d) {
        free(c);
        return c ? nn_last_status() : nn_error(NN_ERR_NOMEM, "out of memory");
    }
    *c = *(const conv_ctx *)n->ctx;
    d->ctx = c;
    nn_node_save(d, 0, g);
    nn_node_save(d, 1, x);
    nn_node_save(d, 2, w);
    for (int k = 0; k < 2; k++)
        if (grad_in[k]) nn_node_set_output(d, grad_in[k], k);
    nn_node_release(d);
    return NN_OK;
}

static nn_status conv_backward(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    const conv_ctx *c = n->ctx;
    nn_tensor *xs = nn_node_saved(n, 0), *w = nn_node_saved(n, 1);
    if (!xs || !w) return nn_last_status();
    nn_tensor *x = xs->ndim == 3 ? nn_unsqueeze(xs, 0) : nn_retain(xs);
    if (!x) return nn_last_status();
    nn_tensor *g = grad4(grad_out[0], x, x->dtype);
    if (!g) {
        nn_release(x);
        return nn_last_status();
    }
    /* Where cuDNN runs the dtype in NHWC whatever the layout (nn_cudnn_nhwc), both gradients read one
     * channels-last copy of an NCHW g rather than each staging its own; their layouts still follow g. */
    bool share = n->next[0].node && n->next[1].node && g->storage->device.type == NN_CUDA && nn_cudnn_nhwc(g->dtype) &&
                 nn_suggest_memory_format(g) != NN_CHANNELS_LAST;
    nn_tensor *gs = share ? nn_contiguous_as(g, NN_CHANNELS_LAST) : nn_retain(g);
    nn_status st = gs ? NN_OK : nn_last_status();
    /* recording a graph, the two kernels run off it and one node stands for both */
    bool record = nn_backward_creates_graph() && nn_grad_enabled() && (g->requires_grad || x->requires_grad || w->requires_grad);
    if (record) nn_set_grad_enabled(false);
    if (!st && n->next[0].node) {
        nn_tensor *gx = conv_grad(NN_OP_conv2d_backward_input, gs, g, w, x->shape, c->stride, c->pad, c->dil, c->groups);
        if (gx) gx = to_edge(gx, &n->next[0]);
        if (!(grad_in[0] = gx)) st = nn_last_status();
    }
    if (!st && n->next[1].node && !(grad_in[1] = conv_grad(NN_OP_conv2d_backward_weight, gs, g, x, w->shape, c->stride, c->pad, c->dil, c->groups)))
        st = nn_last_status();
    if (record) nn_set_grad_enabled(true);
    if (!st && record) st = record_double(n, g, x, w, grad_in);
    if (!st && n->next[2].node && !(grad_in[2] = nn_sum_dtype(g, 1u | 4u | 8u, false, n->next[2].dtype))) st = nn_last_status();
    nn_release(gs);
    nn_release(g);
    nn_release(x);
    return st;
}
