/* CUDA convolutions through cuDNN 9: conv2d (plus bias), conv2d_backward_input and
 * conv2d_backward_weight, i[0..6] = stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups.
 *
 * The legacy convolution API (deprecated in cuDNN 9, still shipped) with the algorithm
 * chosen once per problem and cached with its descriptors (plan_cache.cuh): cuDNN's heuristic
 * (cudnnGet*_v7) by default, or with nn_cudnn_benchmark set (torch.backends.cudnn.benchmark)
 * the fastest algorithm timed by cudnnFind*Ex on the first call.
 *
 * Every problem names three 4-D operands: the image X [N,C,H,W] (conv2d's input, backward
 * input's result), the filter F [O,C/groups,kh,kw] and the output side Y [N,O,oh,ow]. They all
 * use one layout: NHWC when the image is channels-last (dense as N,H,W,C), else NCHW. An
 * operand dense in that layout and 16-byte aligned is used in place; any other is copied into
 * the workspace first (an input) or computed there and copied out (the result).
 * Math: float16/bfloat16 on tensor cores with float accumulation; float32 may use TF32 when
 * nn_cudnn_allow_tf32 says so (PyTorch's default: on), else FMA only; float64 in double. */
#include <limits.h>

#include "cudnn_common.cuh"
#include "kernels.cuh"
#include "plan_cache.cuh"
#include "strided_copy.cuh"

#include "cuda_flags.h"

namespace {

enum Kind { FWD, BWD_DATA, BWD_FILTER };
enum Layout { NCHW, NHWC };

constexpr size_t kFindWorkspace = 256u << 20; /* what cudnnFind may use while timing */
constexpr size_t kMaxWorkspace = 1024u << 20; /* the heuristic's choice must need no more */

struct ConvKey {
    int32_t dev, kind, dtype, layout, tf32, benchmark;
    int64_t N, C, H, W, O, Cg, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, groups;
};

struct ConvPlan {
    cudnnTensorDescriptor_t x, y, b; /* b: the bias as (1, O, 1, 1) */
    cudnnFilterDescriptor_t f;
    cudnnConvolutionDescriptor_t conv;
    int algo;
    size_t ws;
};

void destroy_plan(ConvPlan &p)
{
    if (p.x) cudnnDestroyTensorDescriptor(p.x);
    if (p.y) cudnnDestroyTensorDescriptor(p.y);
    if (p.b) cudnnDestroyTensorDescriptor(p.b);
    if (p.f) cudnnDestroyFilterDescriptor(p.f);
    if (p.conv) cudnnDestroyConvolutionDescriptor(p.conv);
    p = ConvPlan{};
}

nn_plan_cache<ConvKey, ConvPlan> *conv_cache() { return nn_plan_cache_for<ConvKey, ConvPlan>(destroy_plan); }

/* The dense strides of a 4-D shape in layout L (NHWC: dims stay N,C,H,W, memory N,H,W,C). */
void packed_strides(const int64_t *s, Layout L, int64_t *st)
{
    if (L == NCHW) {
        st[3] = 1, st[2] = s[3], st[1] = s[2] * s[3], st[0] = s[1] * s[2] * s[3];
    } else {
        st[1] = 1, st[3] = s[1], st[2] = s[3] * s[1], st[0] = s[2] * s[3] * s[1];
    }
}

bool packed_as(const nn_tensor *t, Layout L)
{
    int64_t st[4];
    packed_strides(t->shape, L, st);
    for (int d = 0; d < 4; d++)
        if (t->shape[d] > 1 && t->strides[d] != st[d]) return false;
    return true;
}

/* One operand: the tensor, and where the library reads or writes it. */
struct Operand {
    nn_tensor *t;
    bool result, direct;
    size_t off;
    void *p;
};

struct Conv {
    Kind kind;
    nn_dtype dt;
    int dev;
    Operand X, F, Y;
    const nn_tensor *bias;
    bool bias_direct;
    size_t bias_off;
    const void *bias_p;
    int64_t N, C, H, W, O, Cg, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, groups;
};

/* The heuristic's or the timing's list -> the first algorithm that works and fits. */
template <typename Perf>
bool pick(const Perf *perf, int n, size_t limit, int *algo, cudnnMathType_t *math)
{
    for (int i = 0; i < n; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit) {
            *algo = (int)perf[i].algo;
            *math = perf[i].mathType;
            return true;
        }
    return false;
}

nn_status describe(const Conv &c, Layout L, bool tf32, ConvPlan *p)
{
    cudnnDataType_t t = nn_cudnn_type(c.dt);
    cudnnTensorFormat_t fmt = L == NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    NN_CHECK(cudnnCreateTensorDescriptor(&p->x));
    NN_CHECK(cudnnCreateTensorDescriptor(&p->y));
    NN_CHECK(cudnnCreateFilterDescriptor(&p->f));
    NN_CHECK(cudnnCreateConvolutionDescriptor(&p->conv));
    NN_CHECK(cudnnSetTensor4dDescriptor(p->x, fmt, t, (int)c.N, (int)c.C, (int)c.H, (int)c.W));
    NN_CHECK(cudnnSetTensor4dDescriptor(p->y, fmt, t, (int)c.N, (int)c.O, (int)c.oh, (int)c.ow));
    NN_CHECK(cudnnCreateTensorDescriptor(&p->b));
    NN_CHECK(cudnnSetTensor4dDescriptor(p->b, CUDNN_TENSOR_NCHW, t, 1, (int)c.O, 1, 1));
    NN_CHECK(cudnnSetFilter4dDescriptor(p->f, t, fmt, (int)c.O, (int)c.Cg, (int)c.kh, (int)c.kw));
    NN_CHECK(cudnnSetConvolution2dDescriptor(p->conv, (int)c.ph, (int)c.pw, (int)c.sh, (int)c.sw, (int)c.dh, (int)c.dw, CUDNN_CROSS_CORRELATION,
                                             c.dt == NN_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT));
    NN_CHECK(cudnnSetConvolutionGroupCount(p->conv, (int)c.groups));
    cudnnMathType_t math = c.dt == NN_F16 || c.dt == NN_BF16 ? CUDNN_TENSOR_OP_MATH : c.dt == NN_F32 && !tf32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
    NN_CHECK(cudnnSetConvolutionMathType(p->conv, math));
    return NN_OK;
}

/* Choose the algorithm: by heuristic, or (ws != NULL) by timing with the staged operands. */
nn_status choose(const Conv &c, cudnnHandle_t h, ConvPlan *p, bool tf32, void *ws, size_t wsize, bool *found)
{
    int algo = 0, n = 0;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    *found = false;
    size_t limit = ws ? wsize : kMaxWorkspace;
    cudnnStatus_t e;
    switch (c.kind) {
    case FWD: {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        e = ws ? cudnnFindConvolutionForwardAlgorithmEx(h, p->x, c.X.p, p->f, c.F.p, p->conv, p->y, c.Y.p, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf,
                                                        ws, wsize)
               : cudnnGetConvolutionForwardAlgorithm_v7(h, p->x, p->f, p->conv, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);
        *found = e == CUDNN_STATUS_SUCCESS && pick(perf, n, limit, &algo, &math);
        break;
    }
    case BWD_DATA: {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        e = ws ? cudnnFindConvolutionBackwardDataAlgorithmEx(h, p->f, c.F.p, p->y, c.Y.p, p->conv, p->x, c.X.p, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                             &n, perf, ws, wsize)
               : cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p->f, p->y, p->conv, p->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf);
        *found = e == CUDNN_STATUS_SUCCESS && pick(perf, n, limit, &algo, &math);
        break;
    }
    default: {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        e = ws ? cudnnFindConvolutionBackwardFilterAlgorithmEx(h, p->x, c.X.p, p->y, c.Y.p, p->conv, p->f, c.F.p,
                                                               CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf, ws, wsize)
               : cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p->x, p->y, p->conv, p->f, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf);
        *found = e == CUDNN_STATUS_SUCCESS && pick(perf, n, limit, &algo, &math);
        break;
    }
    }
    /* NOT_SUPPORTED / BAD_PARAM: nothing for this layout (the caller may try NCHW) */
    if (e != CUDNN_STATUS_SUCCESS && e != CUDNN_STATUS_NOT_SUPPORTED && e != CUDNN_STATUS_BAD_PARAM) NN_CHECK(e);
    if (!*found) return NN_OK;
    if (c.dt == NN_F32 && !tf32) math = CUDNN_FMA_MATH;
    NN_CHECK(cudnnSetConvolutionMathType(p->conv, math));
    p->algo = algo;
    switch (c.kind) {
    case FWD: NN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, p->x, p->f, p->conv, p->y, (cudnnConvolutionFwdAlgo_t)algo, &p->ws)); break;
    case BWD_DATA:
        NN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(h, p->f, p->y, p->conv, p->x, (cudnnConvolutionBwdDataAlgo_t)algo, &p->ws));
        break;
    default:
        NN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p->x, p->y, p->conv, p->f, (cudnnConvolutionBwdFilterAlgo_t)algo, &p->ws));
        break;
    }
    return NN_OK;
}

size_t operand_bytes(const Operand &o) { return (size_t)nn_numel(o.t) * nn_dtype_size(o.t->dtype); }

/* Where each operand (and the bias) lives for layout L; returns the staging bytes needed. */
size_t plan_staging(Conv &c, Layout L)
{
    nn_staging::Carve cv;
    Operand *ops[3] = {&c.X, &c.F, &c.Y};
    for (Operand *o : ops) {
        o->direct = packed_as(o->t, L) && nn_cudnn_aligned(nn_data(o->t));
        o->off = o->direct ? 0 : cv.take(operand_bytes(*o));
    }
    c.bias_direct = !c.bias || (c.bias->strides[0] == 1 && nn_cudnn_aligned(nn_data(c.bias)));
    c.bias_off = c.bias_direct ? 0 : cv.take((size_t)c.O * nn_dtype_size(c.dt));
    return cv.used;
}

/* Point the operands at their data and copy the staged inputs in. */
nn_status stage_in(Conv &c, Layout L, char *ws, cudaStream_t s)
{
    size_t es = nn_dtype_size(c.dt);
    Operand *ops[3] = {&c.X, &c.F, &c.Y};
    for (Operand *o : ops) {
        o->p = o->direct ? nn_data(o->t) : ws + o->off;
        if (o->direct || o->result) continue;
        int64_t st[4];
        packed_strides(o->t->shape, L, st);
        nn_status e = nn_staging::copy(o->p, st, nn_data(o->t), o->t->strides, o->t->shape, 4, es, s);
        if (e) return e;
    }
    c.bias_p = c.bias ? nn_data(c.bias) : NULL;
    if (!c.bias_direct) {
        int64_t shape[1] = {c.O}, ds[1] = {1}, ss[1] = {c.bias->strides[0]};
        c.bias_p = ws + c.bias_off;
        return nn_staging::copy(ws + c.bias_off, ds, nn_data(c.bias), ss, shape, 1, es, s);
    }
    return NN_OK;
}

/* Copy a staged result out to its tensor. */
nn_status stage_out(const Conv &c, Layout L, cudaStream_t s)
{
    const Operand *ops[3] = {&c.X, &c.F, &c.Y};
    for (const Operand *o : ops) {
        if (o->direct || !o->result) continue;
        int64_t st[4];
        packed_strides(o->t->shape, L, st);
        return nn_staging::copy(nn_data(o->t), o->t->strides, o->p, st, o->t->shape, 4, nn_dtype_size(c.dt), s);
    }
    return NN_OK;
}

/* out = 0 or the bias broadcast over [N, O, oh, ow] (a product over no input channels). */
nn_status fill_result(const Conv &c, const nn_tensor *out, const nn_tensor *bias, cudaStream_t s)
{
    static const int64_t zero_strides[4] = {0, 0, 0, 0};
    size_t es = nn_dtype_size(c.dt);
    if (!bias) {
        void *z = nn_cuda_workspace(c.dev, 16);
        if (!z) return nn_last_status();
        NN_CHECK(cudaMemsetAsync(z, 0, 16, s));
        return nn_staging::copy(nn_data(out), out->strides, z, zero_strides, out->shape, 4, es, s);
    }
    int64_t bs[4] = {0, bias->strides[0], 0, 0};
    return nn_staging::copy(nn_data(out), out->strides, nn_data(bias), bs, out->shape, 4, es, s);
}

const char *op_name(Kind k) { return nn_op_name(k == FWD ? NN_OP_conv2d : k == BWD_DATA ? NN_OP_conv2d_backward_input : NN_OP_conv2d_backward_weight); }

/* The plan for c in layout L (from the cache, or chosen now); *L may fall back to NCHW. On return
 * the operands are staged in *ws (of at least *have bytes). */
nn_status get_plan(Conv &c, Layout *L, nn_cuda_device *d, cudaStream_t s, ConvPlan **out, char **ws, size_t *have)
{
    bool tf32 = c.dt == NN_F32 && nn_cudnn_allow_tf32, bench = nn_cudnn_benchmark;
    for (;;) {
        ConvKey key;
        memset(&key, 0, sizeof key);
        key.dev = c.dev, key.kind = c.kind, key.dtype = c.dt, key.layout = *L, key.tf32 = tf32, key.benchmark = bench;
        key.N = c.N, key.C = c.C, key.H = c.H, key.W = c.W, key.O = c.O, key.Cg = c.Cg, key.kh = c.kh, key.kw = c.kw, key.oh = c.oh, key.ow = c.ow;
        key.sh = c.sh, key.sw = c.sw, key.ph = c.ph, key.pw = c.pw, key.dh = c.dh, key.dw = c.dw, key.groups = c.groups;
        size_t staging = plan_staging(c, *L);
        if ((*out = conv_cache()->find(key))) return NN_OK;
        ConvPlan fresh{};
        bool found = false;
        nn_status st = describe(c, *L, tf32, &fresh);
        if (!st && bench) { /* time the algorithms on the real operands, with what workspace can be had */
            size_t find_ws = kFindWorkspace;
            for (;;) {
                *ws = staging + find_ws ? (char *)nn_cuda_workspace(c.dev, staging + find_ws) : NULL;
                if (*ws || !find_ws) break;
                find_ws /= 4;
            }
            if (!*ws && staging) {
                st = nn_last_status();
            } else {
                nn_clear_error();
                *have = *ws ? staging + find_ws : 0;
                if (!(st = stage_in(c, *L, *ws, s))) st = choose(c, d->cudnn, &fresh, tf32, *ws ? *ws + staging : NULL, find_ws, &found);
            }
        } else if (!st) {
            st = choose(c, d->cudnn, &fresh, tf32, NULL, 0, &found);
        }
        if (st || !found) {
            destroy_plan(fresh);
            if (*L == NHWC) { /* no NHWC algorithm for this problem: go through NCHW copies */
                nn_clear_error();
                *L = NCHW;
                *have = 0;
                continue;
            }
            if (st) return st;
            return nn_error(NN_ERR_RUNTIME, "%s: cuDNN has no algorithm for %s input [%lld, %lld, %lld, %lld] and weight [%lld, %lld, %lld, %lld]",
                            op_name(c.kind), nn_dtype_name(c.dt), (long long)c.N, (long long)c.C, (long long)c.H, (long long)c.W, (long long)c.O,
                            (long long)c.Cg, (long long)c.kh, (long long)c.kw);
        }
        *out = conv_cache()->insert(key, fresh);
        return NN_OK;
    }
}

nn_status run(Conv &c)
{
    nn_cuda_device *d = nn_cuda_dev(c.dev);
    if (!d) return nn_last_status();
    cudaStream_t s = d->current;
    Operand *result = c.kind == FWD ? &c.Y : c.kind == BWD_DATA ? &c.X : &c.F;
    if (!nn_numel(result->t)) return NN_OK;
    if (!nn_numel(c.X.t) || !nn_numel(c.Y.t) || !nn_numel(c.F.t)) /* a sum over nothing */
        return fill_result(c, result->t, c.kind == FWD ? c.bias : NULL, s);
    const Operand *all[3] = {&c.X, &c.F, &c.Y};
    for (const Operand *o : all)
        if (nn_numel(o->t) > INT_MAX)
            return nn_error(NN_ERR_ARG, "%s: tensors of more than %d elements are not supported on CUDA", op_name(c.kind), INT_MAX);
    NN_CHECK(cudnnSetStream(d->cudnn, s));
    Layout L = c.dt != NN_F64 && packed_as(c.X.t, NHWC) && !packed_as(c.X.t, NCHW) ? NHWC : NCHW;
    ConvPlan *plan;
    char *ws = NULL;
    size_t have = 0;
    nn_status st = get_plan(c, &L, d, s, &plan, &ws, &have);
    if (st) return st;
    size_t staging = plan_staging(c, L), need = staging + plan->ws;
    if (need > have || !ws) {
        if (need && !(ws = (char *)nn_cuda_workspace(c.dev, need))) return nn_last_status();
        if ((st = stage_in(c, L, ws, s))) return st;
    }
    void *algo_ws = plan->ws ? ws + staging : NULL;
    const void *one = nn_cudnn_one(c.dt), *zero = nn_cudnn_zero(c.dt);
    switch (c.kind) {
    case FWD:
        NN_CHECK(cudnnConvolutionForward(d->cudnn, one, plan->x, c.X.p, plan->f, c.F.p, plan->conv, (cudnnConvolutionFwdAlgo_t)plan->algo, algo_ws,
                                         plan->ws, zero, plan->y, c.Y.p));
        if (c.bias) NN_CHECK(cudnnAddTensor(d->cudnn, one, plan->b, c.bias_p, one, plan->y, c.Y.p));
        break;
    case BWD_DATA:
        NN_CHECK(cudnnConvolutionBackwardData(d->cudnn, one, plan->f, c.F.p, plan->y, c.Y.p, plan->conv, (cudnnConvolutionBwdDataAlgo_t)plan->algo,
                                              algo_ws, plan->ws, zero, plan->x, c.X.p));
        break;
    default:
        NN_CHECK(cudnnConvolutionBackwardFilter(d->cudnn, one, plan->x, c.X.p, plan->y, c.Y.p, plan->conv,
                                                (cudnnConvolutionBwdFilterAlgo_t)plan->algo, algo_ws, plan->ws, zero, plan->f, c.F.p));
        break;
    }
    return stage_out(c, L, s);
}

nn_status setup(const nn_kargs *a, Kind kind, Conv *c)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->dev = nn_cuda_index(a);
    nn_tensor *x, *f, *y;
    if (kind == FWD) x = a->in[0], f = a->in[1], y = a->out[0], c->bias = a->nin > 2 ? a->in[2] : NULL;
    else if (kind == BWD_DATA) y = a->in[0], f = a->in[1], x = a->out[0];
    else y = a->in[0], x = a->in[1], f = a->out[0];
    c->X = Operand{x, kind == BWD_DATA, false, 0, NULL};
    c->F = Operand{f, kind == BWD_FILTER, false, 0, NULL};
    c->Y = Operand{y, kind == FWD, false, 0, NULL};
    c->dt = a->out[0]->dtype;
    if (x->ndim != 4 || f->ndim != 4 || y->ndim != 4) return nn_error(NN_ERR_SHAPE, "%s: expected 4-D tensors", nn_op_name(a->op));
    const nn_tensor *ts[4] = {x, f, y, c->bias};
    for (const nn_tensor *t : ts) {
        if (!t) continue;
        if (t->dtype != c->dt) return nn_not_implemented(a, t->dtype);
        if (t->storage->device.type != NN_CUDA || t->storage->device.index != c->dev)
            return nn_error(NN_ERR_DEVICE, "%s: expected all tensors to be on the same device", nn_op_name(a->op));
    }
    if (!nn_dtype_is_float(c->dt)) return nn_not_implemented(a, c->dt);
    c->N = x->shape[0], c->C = x->shape[1], c->H = x->shape[2], c->W = x->shape[3];
    c->O = f->shape[0], c->Cg = f->shape[1], c->kh = f->shape[2], c->kw = f->shape[3];
    c->oh = y->shape[2], c->ow = y->shape[3];
    c->sh = a->i[0], c->sw = a->i[1], c->ph = a->i[2], c->pw = a->i[3], c->dh = a->i[4], c->dw = a->i[5];
    c->groups = a->i[6] > 0 ? a->i[6] : 1;
    if (c->Cg * c->groups != c->C || c->O % c->groups || y->shape[0] != c->N || y->shape[1] != c->O || c->sh < 1 || c->sw < 1 || c->dh < 1 ||
        c->dw < 1 || c->ph < 0 || c->pw < 0 || (c->bias && (c->bias->ndim != 1 || c->bias->shape[0] != c->O)))
        return nn_error(NN_ERR_ARG, "%s: inconsistent shapes or parameters", nn_op_name(a->op));
    const int64_t lim = INT_MAX;
    if (c->H > lim || c->W > lim || c->sh > lim || c->sw > lim || c->ph > lim || c->pw > lim || c->dh > lim || c->dw > lim || c->groups > lim)
        return nn_error(NN_ERR_ARG, "%s: a size or parameter exceeds cuDNN's limit of %d", nn_op_name(a->op), INT_MAX);
    return NN_OK;
}

nn_status conv_entry(const nn_kargs *a, Kind kind)
{
    Conv c;
    nn_status st = setup(a, kind, &c);
    return st ? st : run(c);
}

} // namespace

extern "C" nn_status nn_cuda_conv2d(const nn_kargs *a) { return conv_entry(a, FWD); }
extern "C" nn_status nn_cuda_conv2d_backward_input(const nn_kargs *a) { return conv_entry(a, BWD_DATA); }
extern "C" nn_status nn_cuda_conv2d_backward_weight(const nn_kargs *a) { return conv_entry(a, BWD_FILTER); }
