/* nn_rnn (rnn.h): the checks, the operands made contiguous, the GPU backend's cuDNN RNN and its
 * autograd node (CudnnRnnBackward0, as PyTorch names it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "device.h"
#include "profiler.h"
#include "rnn.h"

enum { S_X, S_HX, S_CX, S_Y, S_W, S_R };
enum { I_MODE, I_LAYERS, I_BIDIR, I_BIAS };

static const char *const mode_names[] = {"RNN_RELU", "RNN_TANH", "LSTM", "GRU"};
static int gate_count(nn_rnn_mode m) { return m == NN_RNN_LSTM ? 4 : m == NN_RNN_GRU ? 3 : 1; }

static nn_status check_shape(const char *what, const nn_tensor *t, int ndim, const int64_t *want, const nn_tensor *x)
{
    char got[160], exp[160];
    bool ok = t->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++) ok = t->shape[d] == want[d];
    if (!ok)
        return nn_error(NN_ERR_SHAPE, "_cudnn_rnn: expected %s of size %s, got %s", what, nn_shape_str(exp, ndim, want),
                        nn_shape_str(got, t->ndim, t->shape));
    if (t->dtype != x->dtype)
        return nn_error(NN_ERR_DTYPE, "_cudnn_rnn: expected %s of dtype %s (the input's), got %s", what, nn_dtype_name(x->dtype),
                        nn_dtype_name(t->dtype));
    if (t->storage->device.type != x->storage->device.type || t->storage->device.index != x->storage->device.index)
        return nn_error(NN_ERR_DEVICE, "_cudnn_rnn: expected %s on the input's device", what);
    return NN_OK;
}

/* The problem for x, hx, cx and w, checked; T, N, I from x and H from hx. */
static nn_status make_problem(nn_rnn_problem *p, nn_rnn_mode mode, nn_tensor *x, nn_tensor *hx, nn_tensor *cx, nn_tensor *const *w,
                              int nw, int64_t layers, bool bidirectional)
{
    memset(p, 0, sizeof *p);
    if (mode < NN_RNN_RELU || mode > NN_RNN_GRU) return nn_error(NN_ERR_ARG, "_cudnn_rnn: unknown mode %d", (int)mode);
    if (x->storage->device.type != NN_CUDA) return nn_error(NN_ERR_DEVICE, "_cudnn_rnn: expected the input on a CUDA device");
    if (!nn_dtype_is_float(x->dtype)) return nn_error(NN_ERR_DTYPE, "_cudnn_rnn: expected a float input, got %s", nn_dtype_name(x->dtype));
    if (x->ndim != 3) return nn_error(NN_ERR_SHAPE, "_cudnn_rnn: expected a 3-D input [T, N, I], got %dD", x->ndim);
    if (hx->ndim != 3) return nn_error(NN_ERR_SHAPE, "_cudnn_rnn: expected a 3-D hx [layers * directions, N, H], got %dD", hx->ndim);
    if ((mode == NN_RNN_LSTM) != (cx != NULL))
        return nn_error(NN_ERR_ARG, "_cudnn_rnn: %s %s a cell state", mode_names[mode], cx ? "takes no" : "needs");
    int D = bidirectional ? 2 : 1;
    int64_t G = gate_count(mode), T = x->shape[0], N = x->shape[1], I = x->shape[2], H = hx->shape[2];
    if (layers < 1 || T < 1 || N < 1 || I < 1 || H < 1 || T > INT32_MAX || N > INT32_MAX || I > INT32_MAX || H > INT32_MAX)
        return nn_error(NN_ERR_SHAPE, "_cudnn_rnn: sizes must be positive (T %lld, N %lld, I %lld, H %lld, layers %lld)", (long long)T,
                        (long long)N, (long long)I, (long long)H, (long long)layers);
    int64_t hs[3] = {layers * D, N, H};
    nn_status st = check_shape("hx", hx, 3, hs, x);
    if (!st && cx) st = check_shape("cx", cx, 3, hs, x);
    if (st) return st;
    int per = nw / (layers * D);
    if ((per != 2 && per != 4) || per * layers * D != nw)
        return nn_error(NN_ERR_ARG, "_cudnn_rnn: expected %lld or %lld parameters for %lld layers%s, got %d", (long long)(2 * layers * D),
                        (long long)(4 * layers * D), (long long)layers, bidirectional ? " in two directions" : "", nw);
    for (int k = 0; k < nw; k++) {
        int64_t layer = k / per / D, role = k % per, in = layer ? D * H : I;
        int64_t shape[2] = {G * H, role == 0 ? in : H};
        static const char *const roles[] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
        char what[48];
        snprintf(what, sizeof what, "%s of layer %lld", roles[role], (long long)layer);
        if ((st = check_shape(what, w[k], role < 2 ? 2 : 1, shape, x))) return st;
    }
    *p = (nn_rnn_problem){mode, T, N, I, H, layers, bidirectional, per == 4, NULL, x, hx, cx, w, nw};
    return NN_OK;
}

static nn_status check_lengths(const int64_t *len, int64_t N, int64_t T)
{
    int64_t longest = 0;
    for (int64_t i = 0; i < N; i++) {
        if (len[i] < 1 || len[i] > T)
            return nn_error(NN_ERR_ARG, "_cudnn_rnn: length %lld of sequence %lld is outside 1..%lld", (long long)len[i], (long long)i,
                            (long long)T);
        if (len[i] > longest) longest = len[i];
    }
    if (longest != T) return nn_error(NN_ERR_ARG, "_cudnn_rnn: the longest sequence has %lld steps, the input %lld", (long long)longest, (long long)T);
    return NN_OK;
}

static nn_tensor *empty_like(const nn_tensor *t) { return nn_empty(t->ndim, t->shape, t->dtype, t->storage->device); }

static nn_tensor *contiguous_or_null(nn_tensor *g) { return g ? nn_contiguous(g) : NULL; }

/* cuDNN's calls, as the profiler records them ("cudnn_rnn", "cudnn_rnn_backward") */
typedef struct {
    const nn_rnn_problem *p;
    bool train;
    nn_tensor *y, *hy, *cy, *dy, *dhy, *dcy, *weights, *reserve, *dx, *dhx, *dcx;
    nn_tensor **w_out, **r_out;
} rnn_call;

static nn_status call_forward(void *ctx)
{
    rnn_call *c = ctx;
    return nn_gpu->rnn_forward(c->p, c->train, c->y, c->hy, c->cy, c->w_out, c->r_out);
}

static nn_status call_backward(void *ctx)
{
    rnn_call *c = ctx;
    return nn_gpu->rnn_backward(c->p, c->y, c->dy, c->dhy, c->dcy, c->weights, c->reserve, c->dx, c->dhx, c->dcx);
}

static nn_status rnn_backward(nn_node *n, nn_tensor *const *g, nn_tensor **gi)
{
    if (nn_backward_creates_graph() && nn_grad_enabled())
        return nn_no_double_backward("runs cuDNN's RNN backward (torch.backends.cudnn.enabled = false runs the recurrent layers as ops, which have one)");
    bool lstm = n->i[I_MODE] == NN_RNN_LSTM;
    nn_tensor *x = nn_node_saved(n, S_X), *hx = x ? nn_node_saved(n, S_HX) : NULL, *cx = hx && lstm ? nn_node_saved(n, S_CX) : NULL;
    nn_tensor *y = (hx && (cx || !lstm)) ? nn_node_saved(n, S_Y) : NULL, *W = y ? nn_node_saved(n, S_W) : NULL,
              *R = W ? nn_node_saved(n, S_R) : NULL;
    if (!R) return nn_last_status();
    int nw = n->nin - 3;
    bool want_w = false;
    for (int k = 0; k < nw; k++) want_w |= n->next[3 + k].node != NULL;
    nn_tensor **dw = calloc(nw, sizeof *dw);
    if (!dw) return nn_error(NN_ERR_NOMEM, "out of memory in CudnnRnnBackward0");
    nn_status st = NN_OK;
    for (int k = 0; want_w && !st && k < nw; k++) {
        const nn_edge *e = &n->next[3 + k];
        if (!(dw[k] = nn_empty(e->ndim, e->shape, e->dtype, e->device))) st = nn_last_status();
    }
    /* the forward's problem (checked then), with the gradients to fill in place of the parameters */
    nn_rnn_problem p = {(nn_rnn_mode)n->i[I_MODE], x->shape[0], x->shape[1], x->shape[2], hx->shape[2], n->i[I_LAYERS],
                        n->i[I_BIDIR] != 0, n->i[I_BIAS] != 0, n->ctx, x, hx, cx, want_w ? dw : NULL, nw};
    nn_tensor *dy = NULL, *dhy = NULL, *dcy = NULL, *dx = NULL, *dhx = NULL, *dcx = NULL;
    if (!st) {
        dy = g[0] ? nn_contiguous(g[0]) : nn_zeros(y->ndim, y->shape, y->dtype, y->storage->device);
        dhy = contiguous_or_null(g[1]);
        dcy = lstm ? contiguous_or_null(g[2]) : NULL;
        dx = empty_like(x);
        dhx = n->next[1].node ? empty_like(hx) : NULL;
        dcx = lstm && n->next[2].node ? empty_like(cx) : NULL;
        if (!dy || (g[1] && !dhy) || (lstm && g[2] && !dcy) || !dx || (n->next[1].node && !dhx) || (lstm && n->next[2].node && !dcx))
            st = nn_last_status();
    }
    /* cuDNN's backward writes into the reserve: a graph kept for another backward keeps the forward's */
    nn_tensor *reserve = !st && nn_backward_retains_graph() ? nn_clone(R) : nn_retain(R);
    if (!st && !reserve) st = nn_last_status();
    if (!st) {
        rnn_call c = {.p = &p, .y = y, .dy = dy, .dhy = dhy, .dcy = dcy, .weights = W, .reserve = reserve, .dx = dx, .dhx = dhx, .dcx = dcx};
        st = nn_profiler_call("cudnn_rnn_backward", x->storage->device, (nn_tensor *[]){dx, dhx, dcx}, 3, call_backward, &c);
    }
    nn_release(reserve);
    nn_release(dy), nn_release(dhy), nn_release(dcy);
    if (st) {
        nn_release(dx), nn_release(dhx), nn_release(dcx);
        for (int k = 0; k < nw; k++) nn_release(dw[k]);
    } else {
        gi[0] = dx, gi[1] = dhx, gi[2] = dcx;
        for (int k = 0; k < nw; k++) {
            if (n->next[3 + k].node) gi[3 + k] = dw[k];
            else nn_release(dw[k]);
        }
    }
    free(dw);
    return st;
}

nn_status nn_rnn(nn_rnn_mode mode, nn_tensor *x, nn_tensor *hx, nn_tensor *cx, nn_tensor *const *w, int nw, int64_t layers,
                 bool bidirectional, const int64_t *lengths, nn_tensor **y, nn_tensor **hy, nn_tensor **cy)
{
    *y = *hy = *cy = NULL;
    nn_rnn_problem p;
    nn_status st = make_problem(&p, mode, x, hx, cx, w, nw, layers, bidirectional);
    if (st) return st;
    if (lengths && (st = check_lengths(lengths, p.N, p.T))) return st;
    /* contiguous operands: the node keeps these (inputs[] keeps the caller's for the edges) */
    nn_tensor *inputs[3 + 64 * 4];
    if (nw > 64 * 4) return nn_error(NN_ERR_ARG, "_cudnn_rnn: at most 64 layers");
    inputs[0] = x, inputs[1] = hx, inputs[2] = cx;
    memcpy(inputs + 3, w, nw * sizeof *w);
    nn_tensor *c[3 + 64 * 4] = {0};
    for (int k = 0; k < 3 + nw; k++)
        if (inputs[k] && !(c[k] = nn_contiguous(inputs[k]))) st = nn_last_status();
    int D = bidirectional ? 2 : 1;
    int64_t ys[3] = {p.T, p.N, D * p.H};
    nn_tensor *W = NULL, *R = NULL;
    bool train = !st && nn_any_requires_grad(3 + nw, inputs);
    if (!st) {
        p.x = c[0], p.hx = c[1], p.cx = c[2], p.w = c + 3, p.lengths = lengths;
        *y = nn_empty(3, ys, x->dtype, x->storage->device);
        *hy = empty_like(hx);
        *cy = cx ? empty_like(cx) : NULL;
        if (!*y || !*hy || (cx && !*cy)) st = nn_last_status();
    }
    if (!st) {
        rnn_call c = {.p = &p, .train = train, .y = *y, .hy = *hy, .cy = *cy, .w_out = &W, .r_out = &R};
        st = nn_profiler_call("cudnn_rnn", x->storage->device, (nn_tensor *[]){*y, *hy, *cy}, 3, call_forward, &c);
    }
    nn_node *n = NULL;
    int64_t *len = NULL;
    if (!st && train) {
        len = lengths ? malloc(p.N * sizeof *len) : NULL;
        n = (!lengths || len) ? nn_node_new("CudnnRnnBackward0", rnn_backward, 3 + nw, inputs) : NULL;
        if (!n) st = lengths && !len ? nn_error(NN_ERR_NOMEM, "out of memory") : nn_last_status();
    }
    if (n) {
        if (len) memcpy(len, lengths, p.N * sizeof *len);
        n->ctx = len;
        n->i[I_MODE] = mode, n->i[I_LAYERS] = layers, n->i[I_BIDIR] = bidirectional, n->i[I_BIAS] = p.bias;
        nn_node_set_output(n, *y, 0);
        nn_node_set_output(n, *hy, 1);
        if (*cy) nn_node_set_output(n, *cy, 2);
        nn_node_save(n, S_X, c[0]);
        nn_node_save(n, S_HX, c[1]);
        if (c[2]) nn_node_save(n, S_CX, c[2]);
        nn_node_save(n, S_Y, *y);
        nn_node_save(n, S_W, W);
        nn_node_save(n, S_R, R);
        nn_node_release(n);
    } else if (len) free(len);
    for (int k = 0; k < 3 + nw; k++) nn_release(c[k]);
    nn_release(W);
    nn_release(R);
    if (st) {
        nn_release(*y), nn_release(*hy), nn_release(*cy);
        *y = *hy = *cy = NULL;
    }
    return st;
}
