/* CUDA convolutions through cuDNN 9: conv2d (plus bias), conv2d_backward_input and
 * conv2d_backward_weight, i[0..6] = stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups.
 *
 * cuDNN's graph API: per problem, a one-operation graph whose execution plan is built once
 * and cached (plan_cache.cuh); each call then costs one variant pack and one execute. (The
 * legacy cudnnConvolution* calls rebuilt that state inside every call: 40-100 us of host
 * time each, most of a small CNN's training step.) The plan is the first engine configuration
 * of cuDNN's heuristic (mode A, then the fallback list; the more accurate mode B for the
 * space-to-depth problems below) that builds and fits the workspace
 * limit, or with nn_cudnn_benchmark set (torch.backends.cudnn.benchmark) the fastest of them
 * timed on the first call's operands.
 *
 * Every problem names three 4-D operands: the image X [N,C,H,W] (conv2d's input, backward
 * input's result), the filter F [O,C/groups,kh,kw] and the output side Y [N,O,oh,ow]. They all
 * use one layout: NHWC when the image is channels-last (dense as N,H,W,C) or the dtype is one
 * cuDNN runs faster in NHWC whatever the layout (nn_cudnn_nhwc: float16, bfloat16, TF32), else NCHW. An
 * operand dense in that layout and 16-byte aligned is used in place; any other is copied into
 * the workspace first (an input) or computed there and copied out (the result); an NCHW <-> NHWC
 * copy is a tiled transpose (strided_copy.cuh).
 * A strided convolution of few input channels (nn_conv_space_to_depth) runs, forward and weight
 * gradient, as a stride-1 one on space-to-depth copies of its operands (cuda/space_to_depth.cu).
 * A depthwise convolution's weight gradient in float32 / float64 runs in cuda/depthwise.cu.
 * A float32 convolution of many groups of 16-32 channels runs in chunks of groups (by_group_chunks).
 * Math: float16/bfloat16 on tensor cores with float accumulation; float32 may use TF32 when
 * nn_cudnn_allow_tf32 says so (PyTorch's default: on), else only engines without the tensor-core
 * note; float64 in double. */
#include <limits.h>

#include "cudnn_common.cuh"
#include "depthwise.cuh"
#include "kernels.cuh"
#include "plan_cache.cuh"
#include "space_to_depth.cuh"
#include "strided_copy.cuh"

extern "C" {
#include "autograd.h"
}
#include "cuda_flags.h"
#include "memory_format.h"

namespace {

enum Kind { FWD, BWD_DATA, BWD_FILTER };
enum Layout { NCHW, NHWC };

constexpr size_t kFindWorkspace = 256u << 20; /* what cudnnFind may use while timing */
constexpr size_t kMaxWorkspace = 1024u << 20; /* the heuristic's choice must need no more */

struct ConvKey {
    int32_t dev, kind, dtype, layout, tf32, benchmark, careful, deterministic;
    int64_t N, C, H, W, O, Cg, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, groups;
};

/* graph API descriptors: the operand tensors (uids 'x', 'w', 'y'), the convolution, the
 * operation and its graph live as long as the plan that refers to them */
enum { UID_X = 'x', UID_F = 'w', UID_Y = 'y', NDESC = 6 };

struct ConvPlan {
    cudnnBackendDescriptor_t desc[NDESC]; /* X, F, Y, convolution, operation, graph */
    cudnnBackendDescriptor_t plan;
    int64_t ws;
    bool nondeterministic; /* the engine's results depend on the order of atomic additions */
    cudnnTensorDescriptor_t y, b; /* legacy descriptors for the bias add: Y, and the bias as (1, O, 1, 1) */
};

void destroy_plan(ConvPlan &p)
{
    if (p.plan) cudnnBackendDestroyDescriptor(p.plan);
    for (int k = NDESC - 1; k >= 0; k--)
        if (p.desc[k]) cudnnBackendDestroyDescriptor(p.desc[k]);
    if (p.y) cudnnDestroyTensorDescriptor(p.y);
    if (p.b) cudnnDestroyTensorDescriptor(p.b);
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
    bool careful; /* plans from cuDNN's slower and more accurate heuristic (mode B) */
    bool bias_direct;
    size_t bias_off;
    const void *bias_p;
    int64_t N, C, H, W, O, Cg, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, groups;
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* the handle attributes: still how a plan learns its device */

cudnnStatus_t set_attr(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n, const void *v)
{
    return cudnnBackendSetAttribute(d, name, type, n, v);
}

nn_status tensor_desc(cudnnBackendDescriptor_t *d, int64_t uid, cudnnDataType_t t, const int64_t *dims, Layout L)
{
    int64_t st[4], align = 16;
    packed_strides(dims, L, st);
    NN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, d));
    NN_CHECK(set_attr(*d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t));
    NN_CHECK(set_attr(*d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
    NN_CHECK(set_attr(*d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, st));
    NN_CHECK(set_attr(*d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    NN_CHECK(set_attr(*d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
    NN_CHECK(cudnnBackendFinalize(*d));
    return NN_OK;
}

/* The problem as a finalized one-operation graph in p->desc. */
nn_status describe(const Conv &c, Layout L, cudnnHandle_t h, ConvPlan *p)
{
    cudnnDataType_t t = nn_cudnn_type(c.dt), comp = c.dt == NN_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    const int64_t xd[4] = {c.N, c.C, c.H, c.W}, fd[4] = {c.O, c.Cg, c.kh, c.kw}, yd[4] = {c.N, c.O, c.oh, c.ow};
    if (tensor_desc(&p->desc[0], UID_X, t, xd, L) || tensor_desc(&p->desc[1], UID_F, t, fd, L) || tensor_desc(&p->desc[2], UID_Y, t, yd, L))
        return nn_last_status();
    const int64_t pad[2] = {c.ph, c.pw}, stride[2] = {c.sh, c.sw}, dil[2] = {c.dh, c.dw}, two = 2;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    cudnnBackendDescriptor_t &cv = p->desc[3], &op = p->desc[4], &graph = p->desc[5];
    NN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &cv));
    NN_CHECK(set_attr(cv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp));
    NN_CHECK(set_attr(cv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    NN_CHECK(set_attr(cv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &two));
    NN_CHECK(set_attr(cv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil));
    NN_CHECK(set_attr(cv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride));
    NN_CHECK(set_attr(cv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
    NN_CHECK(set_attr(cv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
    NN_CHECK(cudnnBackendFinalize(cv));
    /* per kind: the operation type and its attributes for (alpha, beta, conv, X, W/DW, Y/DY) */
    static const cudnnBackendDescriptorType_t types[3] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                                          CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                                                          CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};
    static const cudnnBackendAttributeName_t attrs[3][6] = {
        {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY}};
    const cudnnBackendAttributeName_t *at = attrs[c.kind];
    NN_CHECK(cudnnBackendCreateDescriptor(types[c.kind], &op));
    cudnnBackendAttributeType_t blend = c.dt == NN_F64 ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
    NN_CHECK(set_attr(op, at[0], blend, 1, nn_cudnn_one(c.dt)));
    NN_CHECK(set_attr(op, at[1], blend, 1, nn_cudnn_zero(c.dt)));
    NN_CHECK(set_attr(op, at[2], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv));
    NN_CHECK(set_attr(op, at[3], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->desc[0]));
    NN_CHECK(set_attr(op, at[4], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->desc[1]));
    NN_CHECK(set_attr(op, at[5], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->desc[2]));
    NN_CHECK(cudnnBackendFinalize(op));
    NN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
    NN_CHECK(set_attr(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    NN_CHECK(set_attr(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    NN_CHECK(cudnnBackendFinalize(graph));
    if (c.kind == FWD && c.bias) {
        cudnnTensorFormat_t fmt = L == NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
        NN_CHECK(cudnnCreateTensorDescriptor(&p->y));
        NN_CHECK(cudnnSetTensor4dDescriptor(p->y, fmt, t, (int)c.N, (int)c.O, (int)c.oh, (int)c.ow));
        NN_CHECK(cudnnCreateTensorDescriptor(&p->b));
        NN_CHECK(cudnnSetTensor4dDescriptor(p->b, CUDNN_TENSOR_NCHW, t, 1, (int)c.O, 1, 1));
    }
    return NN_OK;
}

/* Whether the engine of cfg carries numerical note want (false where cuDNN cannot say). */
bool engine_has_note(cudnnBackendDescriptor_t cfg, cudnnBackendNumericalNote_t want)
{
    cudnnBackendDescriptor_t engine = NULL;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) != CUDNN_STATUS_SUCCESS) return false;
    int64_t n = 0;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    bool has = false;
    if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine) == CUDNN_STATUS_SUCCESS &&
        cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes) ==
            CUDNN_STATUS_SUCCESS)
        for (int64_t k = 0; k < n; k++) has = has || notes[k] == want;
    cudnnBackendDestroyDescriptor(engine);
    return has;
}

/* The execution plan of cfg, or NULL where cuDNN cannot build it, where it would use tensor cores
 * that are not allowed (float32 without TF32), or where it is not deterministic and that is asked. */
cudnnBackendDescriptor_t build_plan(cudnnBackendDescriptor_t cfg, cudnnHandle_t h, bool no_tensor_core, bool deterministic)
{
    cudnnBackendDescriptor_t plan = NULL;
    if (no_tensor_core && engine_has_note(cfg, CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) return NULL;
    if (deterministic && engine_has_note(cfg, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)) return NULL;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) != CUDNN_STATUS_SUCCESS) return NULL;
    if (set_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h) != CUDNN_STATUS_SUCCESS ||
        set_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) {
        cudnnBackendDestroyDescriptor(plan);
        return NULL;
    }
    return plan;
}

#pragma GCC diagnostic pop

int64_t plan_workspace(cudnnBackendDescriptor_t plan)
{
    int64_t ws = 0, n = 0;
    if (cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws) != CUDNN_STATUS_SUCCESS) return -1;
    return ws;
}

nn_status execute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, const Conv &c, void *ws)
{
    int64_t uids[3] = {UID_X, UID_F, UID_Y};
    void *ptrs[3] = {c.X.p, c.F.p, c.Y.p};
    cudnnBackendDescriptor_t pack;
    NN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
    cudnnStatus_t e = set_attr(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
    if (!e) e = set_attr(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
    if (!e) e = set_attr(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    if (!e) e = cudnnBackendFinalize(pack);
    if (!e) e = cudnnBackendExecute(h, plan, pack);
    cudnnBackendDestroyDescriptor(pack);
    NN_CHECK(e);
    return NN_OK;
}

/* The engine configurations cuDNN proposes for the graph in heuristic mode m (caller destroys). */
int heuristic_configs(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t m, cudnnBackendDescriptor_t *cfgs, int max)
{
    cudnnBackendDescriptor_t heur;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur) != CUDNN_STATUS_SUCCESS) return 0;
    int64_t n = 0;
    int made = 0;
    if (set_attr(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph) == CUDNN_STATUS_SUCCESS &&
        set_attr(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &m) == CUDNN_STATUS_SUCCESS &&
        cudnnBackendFinalize(heur) == CUDNN_STATUS_SUCCESS &&
        cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL) == CUDNN_STATUS_SUCCESS) {
        n = n < max ? n : max;
        while (made < n && cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[made]) == CUDNN_STATUS_SUCCESS) made++;
        int64_t got = 0;
        if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, made, &got, cfgs) != CUDNN_STATUS_SUCCESS)
            got = 0;
        for (int k = (int)got; k < made; k++) cudnnBackendDestroyDescriptor(cfgs[k]);
        made = (int)got;
    }
    cudnnBackendDestroyDescriptor(heur);
    return made;
}

/* Milliseconds of one run of plan on the staged operands (after one untimed run); -1 if it fails. */
float time_plan(cudnnHandle_t h, cudnnBackendDescriptor_t plan, const Conv &c, void *ws, cudaStream_t s)
{
    cudaEvent_t e0, e1;
    float ms = -1;
    if (cudaEventCreate(&e0) != cudaSuccess) return -1;
    if (cudaEventCreate(&e1) == cudaSuccess) {
        if (!execute(h, plan, c, ws) && cudaEventRecord(e0, s) == cudaSuccess && !execute(h, plan, c, ws) && cudaEventRecord(e1, s) == cudaSuccess &&
            cudaEventSynchronize(e1) == cudaSuccess && cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
            ms = -1;
        cudaEventDestroy(e1);
    }
    cudaEventDestroy(e0);
    nn_clear_error();
    cudaGetLastError();
    return ms;
}

/* Choose the plan: the first that builds within limit bytes of workspace, or (ws != NULL: the
 * operands are staged and ws has limit bytes) the fastest of them. */
nn_status choose(const Conv &c, cudnnHandle_t h, ConvPlan *p, bool tf32, bool deterministic, void *ws, size_t limit, cudaStream_t s,
                 bool *found)
{
    enum { MAX_CFGS = 64 };
    cudnnBackendDescriptor_t cfgs[MAX_CFGS];
    *found = false;
    float best = 0;
    bool no_tc = c.dt == NN_F32 && !tf32;
    for (cudnnBackendHeurMode_t m : {c.careful ? CUDNN_HEUR_MODE_B : CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
        int n = heuristic_configs(p->desc[5], m, cfgs, MAX_CFGS);
        for (int k = 0; k < n; k++) {
            bool done = *found && !ws;
            cudnnBackendDescriptor_t plan = done ? NULL : build_plan(cfgs[k], h, no_tc, deterministic);
            int64_t need = plan ? plan_workspace(plan) : -1;
            float ms = need >= 0 && (size_t)need <= limit && ws ? time_plan(h, plan, c, need ? ws : NULL, s) : 0;
            if (need >= 0 && (size_t)need <= limit && ms >= 0 && (!*found || ms < best)) {
                if (p->plan) cudnnBackendDestroyDescriptor(p->plan);
                p->plan = plan, p->ws = need, best = ms, *found = true;
                p->nondeterministic = engine_has_note(cfgs[k], CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC);
            } else if (plan) {
                cudnnBackendDestroyDescriptor(plan);
            }
            cudnnBackendDestroyDescriptor(cfgs[k]);
        }
        if (*found) break;
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

/* A forward's staged NHWC result copied out with its bias added on the way (one pass over it
 * instead of cudnnAddTensor's and the copy's); false, nothing launched, where that does not apply. */
bool stage_out_biased(const Conv &c, Layout L, cudaStream_t s)
{
    if (c.kind != FWD || !c.bias || c.Y.direct || L != NHWC) return false;
    int64_t st[4];
    packed_strides(c.Y.t->shape, L, st);
    return nn_staging::transpose_add_channel(nn_data(c.Y.t), c.Y.t->strides, c.Y.p, st, c.Y.t->shape, c.dt, c.bias_p, s);
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

const char *op_name(Kind k);

/* NNREPL_CUDNN_LOG: each new plan's problem and cuDNN's description of its engine, on stderr */
void log_plan(const Conv &c, Layout L, const ConvPlan &p)
{
    char json[4096] = "";
    int64_t n = 0;
    cudnnBackendGetAttribute(p.plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, sizeof json - 1, &n, json);
    json[n < (int64_t)sizeof json ? n : (int64_t)sizeof json - 1] = 0;
    fprintf(stderr, "cudnn plan: %s %s %s x[%lld,%lld,%lld,%lld] w[%lld,%lld,%lld,%lld] ws %lld%s: %s\n", op_name(c.kind), nn_dtype_name(c.dt),
            L == NHWC ? "NHWC" : "NCHW", (long long)c.N, (long long)c.C, (long long)c.H, (long long)c.W, (long long)c.O, (long long)c.Cg,
            (long long)c.kh, (long long)c.kw, (long long)p.ws, p.nondeterministic ? " nondeterministic" : "", json);
}

const char *op_name(Kind k) { return nn_op_name(k == FWD ? NN_OP_conv2d : k == BWD_DATA ? NN_OP_conv2d_backward_input : NN_OP_conv2d_backward_weight); }

/* The plan for c in layout L (from the cache, or chosen now); *L may fall back to NCHW. */
nn_status get_plan(Conv &c, Layout *L, nn_cuda_device *d, cudaStream_t s, ConvPlan **out)
{
    bool tf32 = c.dt == NN_F32 && nn_cudnn_allow_tf32, bench = nn_cudnn_benchmark && !nn_cuda_captures(); /* timing syncs */
    bool det = nn_cudnn_deterministic || nn_deterministic_algorithms;
    for (;;) {
        ConvKey key;
        memset(&key, 0, sizeof key);
        key.dev = c.dev, key.kind = c.kind, key.dtype = c.dt, key.layout = *L, key.tf32 = tf32, key.benchmark = bench, key.careful = c.careful;
        key.deterministic = det;
        key.N = c.N, key.C = c.C, key.H = c.H, key.W = c.W, key.O = c.O, key.Cg = c.Cg, key.kh = c.kh, key.kw = c.kw, key.oh = c.oh, key.ow = c.ow;
        key.sh = c.sh, key.sw = c.sw, key.ph = c.ph, key.pw = c.pw, key.dh = c.dh, key.dw = c.dw, key.groups = c.groups;
        size_t staging = plan_staging(c, *L);
        if ((*out = conv_cache()->find(key))) return NN_OK;
        ConvPlan fresh{};
        bool found = false;
        nn_status st = describe(c, *L, d->cudnn, &fresh);
        if (!st && bench) { /* time the algorithms on the real operands, with what workspace can be had */
            size_t find_ws = kFindWorkspace;
            char *tws;
            for (;;) { /* from the allocator for the timing only, so it is not held afterwards */
                tws = staging + find_ws ? (char *)nn_cuda_alloc(c.dev, staging + find_ws) : NULL;
                if (tws || !find_ws) break;
                find_ws /= 4;
            }
            if (!tws && staging) {
                st = nn_last_status();
            } else {
                nn_clear_error();
                if (!(st = stage_in(c, *L, tws, s))) st = choose(c, d->cudnn, &fresh, tf32, det, tws ? tws + staging : NULL, find_ws, s, &found);
            }
            if (tws) nn_cuda_free(c.dev, tws);
        } else if (!st) {
            st = choose(c, d->cudnn, &fresh, tf32, det, NULL, kMaxWorkspace, s, &found);
        }
        if (st || !found) {
            destroy_plan(fresh);
            if (*L == NHWC) { /* no NHWC algorithm for this problem: go through NCHW copies */
                nn_clear_error();
                *L = NCHW;
                continue;
            }
            if (st) return st;
            return nn_error(NN_ERR_RUNTIME, "%s: cuDNN has no algorithm for %s input [%lld, %lld, %lld, %lld] and weight [%lld, %lld, %lld, %lld]",
                            op_name(c.kind), nn_dtype_name(c.dt), (long long)c.N, (long long)c.C, (long long)c.H, (long long)c.W, (long long)c.O,
                            (long long)c.Cg, (long long)c.kh, (long long)c.kw);
        }
        *out = conv_cache()->insert(key, fresh);
        if (getenv("NNREPL_CUDNN_LOG")) log_plan(c, *L, **out);
        return NN_OK;
    }
}

nn_status run(Conv &c)
{
    nn_cuda_device *d = nn_cuda_dev(c.dev);
    if (!d) return nn_last_status();
    cudaStream_t s = nn_cuda_current(d);
    Operand *result = c.kind == FWD ? &c.Y : c.kind == BWD_DATA ? &c.X : &c.F;
    if (!nn_numel(result->t)) return NN_OK;
    if (!nn_numel(c.X.t) || !nn_numel(c.Y.t) || !nn_numel(c.F.t)) /* a sum over nothing */
        return fill_result(c, result->t, c.kind == FWD ? c.bias : NULL, s);
    const Operand *all[3] = {&c.X, &c.F, &c.Y};
    for (const Operand *o : all)
        if (nn_numel(o->t) > INT_MAX)
            return nn_error(NN_ERR_ARG, "%s: tensors of more than %d elements are not supported on CUDA", op_name(c.kind), INT_MAX);
    if (nn_cudnn_on(d, s)) return nn_last_status();
    Layout L = nn_cudnn_nhwc(c.dt) || (c.dt != NN_F64 && packed_as(c.X.t, NHWC) && !packed_as(c.X.t, NCHW)) ? NHWC : NCHW;
    ConvPlan *plan;
    nn_status st = get_plan(c, &L, d, s, &plan);
    if (st) return st;
    /* the call's own workspace (staged operands, then the algorithm's), back to the allocator at its
     * end as PyTorch's: held between calls, the largest algorithm's would add to every later peak */
    size_t staging = plan_staging(c, L), need = staging + (size_t)plan->ws;
    char *ws = need ? (char *)nn_cuda_alloc(c.dev, need) : NULL;
    if (need && !ws) return nn_last_status();
    st = stage_in(c, L, ws, s);
    if (!st) st = execute(d->cudnn, plan->plan, c, plan->ws ? ws + staging : NULL);
    bool out_done = !st && stage_out_biased(c, L, s);
    if (out_done) st = nn_check(cudaGetLastError(), "transpose_add_channel", __FILE__, __LINE__);
    if (!st && !out_done && c.kind == FWD && c.bias) {
        const void *one = nn_cudnn_one(c.dt);
        st = nn_check(cudnnAddTensor(d->cudnn, one, plan->b, c.bias_p, one, plan->y, c.Y.p), "cudnnAddTensor", __FILE__, __LINE__);
    }
    if (!st && !out_done) st = stage_out(c, L, s);
    if (ws) nn_cuda_free(c.dev, ws);
    return st;
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

nn_status conv_entry(const nn_kargs *a, Kind kind, bool careful);

/* The shapes of c's space-to-depth image S [N, C sh sw, Hs, Ws] and filter F2 [O, C sh sw, ka, kb] */
void s2d_shapes(const Conv &c, int64_t S[4], int64_t F2[4])
{
    int64_t K = c.C * c.sh * c.sw, ka = (c.kh + c.sh - 1) / c.sh, kb = (c.kw + c.sw - 1) / c.sw;
    S[0] = c.N, S[1] = K, S[2] = c.oh + ka - 1, S[3] = c.ow + kb - 1;
    F2[0] = c.O, F2[1] = K, F2[2] = ka, F2[3] = kb;
}

/* Whether c (not empty) runs as a stride-1 convolution on space-to-depth copies */
bool by_space_to_depth(const Conv &c)
{
    const int64_t stride[2] = {c.sh, c.sw}, dil[2] = {c.dh, c.dw};
    if (c.kind == BWD_DATA || !nn_conv_space_to_depth(c.dt, c.Cg, c.groups, stride, dil, c.kh, c.kw)) return false;
    if (!nn_numel(c.X.t) || !nn_numel(c.F.t) || !nn_numel(c.Y.t)) return false;
    int64_t ss[4], fs[4];
    s2d_shapes(c, ss, fs);
    return ss[0] * ss[1] * ss[2] * ss[3] <= INT_MAX;
}

/* conv2d, or its weight gradient, as the stride-1 convolution of S and F2 (cuda/space_to_depth.cu):
 * S is built from the image, F2 from the filter (forward) or F2's gradient put back (weight gradient). */
nn_status space_to_depth(const Conv &c, const nn_kargs *a)
{
    nn_cuda_device *d = nn_cuda_dev(c.dev);
    if (!d) return nn_last_status();
    cudaStream_t s = nn_cuda_current(d);
    int64_t ss[4], fs[4];
    s2d_shapes(c, ss, fs);
    nn_device dev = c.X.t->storage->device;
    nn_tensor *S = nn_empty_format(4, ss, NN_CHANNELS_LAST, c.dt, dev);
    nn_tensor *F2 = S ? nn_empty_format(4, fs, NN_CHANNELS_LAST, c.dt, dev) : NULL;
    nn_status st = F2 ? nn_s2d_image(S, c.X.t, c.sh, c.sw, c.ph, c.pw, s) : nn_last_status();
    if (!st && c.kind == FWD) st = nn_s2d_filter(F2, c.F.t, c.sh, c.sw, s);
    if (!st) {
        nn_kargs b = *a;
        const int64_t unit[7] = {1, 1, 0, 0, 1, 1, 1};
        memcpy(b.i, unit, sizeof unit);
        if (c.kind == FWD) b.in[0] = S, b.in[1] = F2;
        else b.in[1] = S, b.out[0] = F2;
        st = conv_entry(&b, c.kind, true); /* mode A's plans made AlexNet's first layer 1.8x slower (an H200) */
    }
    if (!st && c.kind == BWD_FILTER) st = nn_s2d_filter_grad(c.F.t, F2, c.sh, c.sw, s);
    nn_release(S);
    nn_release(F2);
    return st;
}

/* A float32 convolution of more than kMaxGroups groups of 16 to 32 input channels runs as several
 * of at most kMaxGroups groups: cuDNN's engines for it are far slower per group beyond 64 (32
 * channels a group, one 30 x 30 image, forward + backward on an H200: 64 groups 0.16 ms, 100
 * groups 0.58 ms, 200 groups 3.9 ms, in chunks 0.79 ms). For 8 or 64 channels a group, and in
 * float16 and float64, one call was as fast or faster (bench/NOTES.md, session 29). vmap's
 * convolutions with per-sample weights are grouped convolutions of a group per sample. */
constexpr int64_t kMaxGroups = 64;

bool by_group_chunks_applies(const Conv &c) { return c.dt == NN_F32 && c.groups > kMaxGroups && c.Cg >= 16 && c.Cg <= 32; }

/* c (by_group_chunks_applies) as convolutions of chunks of groups on channel views of its operands */
nn_status by_group_chunks(const Conv &c, const nn_kargs *a, Kind kind, bool careful)
{
    int64_t Og = c.O / c.groups;
    bool grad_mode = nn_grad_enabled();
    nn_set_grad_enabled(false); /* plain views, no autograd nodes */
    nn_status st = NN_OK;
    for (int64_t g0 = 0; g0 < c.groups && !st; g0 += kMaxGroups) {
        int64_t n = c.groups - g0 < kMaxGroups ? c.groups - g0 : kMaxGroups;
        nn_tensor *x = nn_narrow(c.X.t, 1, g0 * c.Cg, n * c.Cg), *f = nn_narrow(c.F.t, 0, g0 * Og, n * Og);
        nn_tensor *y = nn_narrow(c.Y.t, 1, g0 * Og, n * Og);
        nn_tensor *b = c.bias ? nn_narrow((nn_tensor *)c.bias, 0, g0 * Og, n * Og) : NULL; /* a view, read only */
        if (!x || !f || !y || (c.bias && !b)) st = nn_last_status();
        else {
            nn_kargs k = *a;
            k.i[6] = n;
            if (kind == FWD) k.in[0] = x, k.in[1] = f, k.out[0] = y, k.in[2] = b;
            else if (kind == BWD_DATA) k.in[0] = y, k.in[1] = f, k.out[0] = x;
            else k.in[0] = y, k.in[1] = x, k.out[0] = f;
            st = conv_entry(&k, kind, careful);
        }
        nn_release(x), nn_release(f), nn_release(y), nn_release(b);
    }
    nn_set_grad_enabled(grad_mode);
    return st;
}

nn_status conv_entry(const nn_kargs *a, Kind kind, bool careful)
{
    Conv c;
    nn_status st = setup(a, kind, &c);
    if (st) return st;
    if (by_group_chunks_applies(c)) return by_group_chunks(c, a, kind, careful);
    c.careful = careful;
    const int64_t p[6] = {c.sh, c.sw, c.ph, c.pw, c.dh, c.dw};
    if (kind == BWD_FILTER && nn_depthwise_weight_grad_applies(c.F.t, c.X.t, c.Y.t, c.groups, p)) {
        nn_cuda_device *d = nn_cuda_dev(c.dev);
        return d ? nn_depthwise_weight_grad(c.F.t, c.X.t, c.Y.t, p, c.dev, nn_cuda_current(d)) : nn_last_status();
    }
    return by_space_to_depth(c) ? space_to_depth(c, a) : run(c);
}

} // namespace

extern "C" nn_status nn_cuda_conv2d(const nn_kargs *a) { return conv_entry(a, FWD, false); }
extern "C" nn_status nn_cuda_conv2d_backward_input(const nn_kargs *a) { return conv_entry(a, BWD_DATA, false); }
extern "C" nn_status nn_cuda_conv2d_backward_weight(const nn_kargs *a) { return conv_entry(a, BWD_FILTER, false); }

int nn_cudnn_version(void) { return (int)cudnnGetVersion(); }
