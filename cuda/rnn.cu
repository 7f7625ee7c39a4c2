/* cuDNN's RNN for nn.RNN, nn.LSTM and nn.GRU (engine/rnn.h): cudnnRNNForward, then
 * cudnnRNNBackwardData_v8 and cudnnRNNBackwardWeights_v8, each one call for every step of every
 * layer. Time-major padded data (SEQ_MAJOR_UNPACKED): a packed batch is its padded form with
 * each sequence's length.
 *
 * cuDNN keeps every parameter in one weight space of its own layout. Each forward copies the
 * parameters in (gate by gate, to where cudnnGetRNNWeightParams puts each matrix and bias; copies
 * that follow on from one another are merged) and each backward copies the weight space's
 * gradient out the same way: a few device copies. cuDNN's gate orders are PyTorch's (LSTM i, f,
 * g, o; GRU r, z, n), and so are its formulas.
 *
 * Per problem (layers, sizes, dtype, T, N) a plan is built once and cached: the descriptors, the
 * copy runs, the space sizes and the device array of lengths for a batch without padding. A
 * packed batch builds its data descriptors and lengths on each call. Math: float16/bfloat16 on
 * tensor cores accumulating in float32; float32 with TF32 when torch.backends.cudnn.allow_tf32
 * (PyTorch's rule for its cuDNN RNN), else plain FMA; float64 in double. */
#include <vector>

#include "cudnn_common.cuh"
#include "plan_cache.cuh"

#include "cuda_flags.h"
#include "device.h"
#include "rnn.h"

namespace {

struct RnnKey {
    int32_t dev, mode, dtype, tf32, bidir, bias;
    int64_t I, H, layers, T, N;
};

/* n elements of parameter `param` from element src go to element dst of the weight space */
struct Run {
    int param;
    int64_t src, dst, n;
};

struct RnnPlan {
    cudnnRNNDescriptor_t rnn;
    cudnnDropoutDescriptor_t drop;
    cudnnRNNDataDescriptor_t xd, yd; /* every sequence of length T */
    cudnnTensorDescriptor_t hd;
    size_t wsize, work_train, reserve, work_infer;
    int32_t *dev_len; /* N lengths of T on the device */
    Run *runs;
    int nruns;
};

void destroy_plan(RnnPlan &p)
{
    if (p.rnn) cudnnDestroyRNNDescriptor(p.rnn);
    if (p.drop) cudnnDestroyDropoutDescriptor(p.drop);
    if (p.xd) cudnnDestroyRNNDataDescriptor(p.xd);
    if (p.yd) cudnnDestroyRNNDataDescriptor(p.yd);
    if (p.hd) cudnnDestroyTensorDescriptor(p.hd);
    if (p.dev_len) cudaFree(p.dev_len);
    delete[] p.runs;
    p = RnnPlan{};
}

nn_plan_cache<RnnKey, RnnPlan> *rnn_cache() { return nn_plan_cache_for<RnnKey, RnnPlan>(destroy_plan); }

int gates(nn_rnn_mode m) { return m == NN_RNN_LSTM ? 4 : m == NN_RNN_GRU ? 3 : 1; }

cudnnRNNMode_t cell(nn_rnn_mode m)
{
    switch (m) {
    case NN_RNN_RELU: return CUDNN_RNN_RELU;
    case NN_RNN_TANH: return CUDNN_RNN_TANH;
    case NN_RNN_LSTM: return CUDNN_LSTM;
    default: return CUDNN_GRU;
    }
}

#define RNN_CHECK(expr)                                                        \
    do {                                                                       \
        nn_status s_ = nn_check((expr), #expr, __FILE__, __LINE__);            \
        if (s_) return s_;                                                     \
    } while (0)

/* x and y of T steps (seq_len[i] each) as cuDNN reads them */
nn_status data_descs(const nn_rnn_problem *p, cudnnDataType_t t, const int *seq_len, cudnnRNNDataDescriptor_t xd,
                     cudnnRNNDataDescriptor_t yd)
{
    double zero = 0; /* cuDNN reads the fill as the data type's, float for float16/bfloat16 */
    float zf = 0;
    void *fill = t == CUDNN_DATA_DOUBLE ? (void *)&zero : (void *)&zf;
    int D = p->bidirectional ? 2 : 1;
    RNN_CHECK(cudnnSetRNNDataDescriptor(xd, t, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, (int)p->T, (int)p->N, (int)p->I, seq_len, fill));
    RNN_CHECK(cudnnSetRNNDataDescriptor(yd, t, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, (int)p->T, (int)p->N, (int)(D * p->H), seq_len, fill));
    return NN_OK;
}

/* Where each parameter goes in the weight space (wbase: a space of plan.wsize bytes). */
nn_status copy_runs(cudnnHandle_t h, const nn_rnn_problem *p, RnnPlan &plan, char *wbase, size_t es)
{
    cudnnTensorDescriptor_t md = NULL, bd = NULL;
    std::vector<Run> runs;
    nn_status st = nn_check(cudnnCreateTensorDescriptor(&md), "cudnnCreateTensorDescriptor", __FILE__, __LINE__);
    if (!st) st = nn_check(cudnnCreateTensorDescriptor(&bd), "cudnnCreateTensorDescriptor", __FILE__, __LINE__);
    int G = gates(p->mode), D = p->bidirectional ? 2 : 1, per = p->bias ? 4 : 2;
    for (int layer = 0; !st && layer < D * p->layers; layer++) {
        int64_t in = layer < D ? p->I : D * p->H;
        for (int j = 0; !st && j < 2 * G; j++) {
            void *m = NULL, *b = NULL;
            st = nn_check(cudnnGetRNNWeightParams(h, plan.rnn, layer, plan.wsize, wbase, j, md, &m, bd, &b),
                          "cudnnGetRNNWeightParams", __FILE__, __LINE__);
            if (st) break;
            bool rec = j >= G;
            int64_t cols = rec ? p->H : in, gate = j % G;
            Run want[2] = {{layer * per + rec, gate * p->H * cols, ((char *)m - wbase) / (int64_t)es, p->H * cols},
                           {layer * per + 2 + rec, gate * p->H, b ? ((char *)b - wbase) / (int64_t)es : 0, p->H}};
            for (int k = 0; k < (p->bias && b ? 2 : 1); k++) {
                Run r = want[k];
                Run *last = runs.empty() ? NULL : &runs.back();
                if (last && last->param == r.param && last->src + last->n == r.src && last->dst + last->n == r.dst) last->n += r.n;
                else runs.push_back(r);
            }
        }
    }
    if (md) cudnnDestroyTensorDescriptor(md);
    if (bd) cudnnDestroyTensorDescriptor(bd);
    if (st) return st;
    plan.runs = new Run[runs.size()];
    plan.nruns = (int)runs.size();
    for (size_t k = 0; k < runs.size(); k++) plan.runs[k] = runs[k];
    return NN_OK;
}

nn_status build_plan(nn_cuda_device *d, int dev, const nn_rnn_problem *p, cudnnDataType_t t, bool tf32, RnnPlan &plan)
{
    cudnnHandle_t h = d->cudnn;
    RNN_CHECK(cudnnCreateDropoutDescriptor(&plan.drop));
    RNN_CHECK(cudnnSetDropoutDescriptor(plan.drop, h, 0.0f, NULL, 0, 0)); /* dropout runs between layer calls (nn_rnn.lua) */
    RNN_CHECK(cudnnCreateRNNDescriptor(&plan.rnn));
    bool low = t == CUDNN_DATA_HALF || t == CUDNN_DATA_BFLOAT16;
    cudnnMathType_t math = low ? CUDNN_TENSOR_OP_MATH : t == CUDNN_DATA_FLOAT && !tf32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
    RNN_CHECK(cudnnSetRNNDescriptor_v8(plan.rnn, CUDNN_RNN_ALGO_STANDARD, cell(p->mode), p->bias ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS,
                                       p->bidirectional ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, t,
                                       low ? CUDNN_DATA_FLOAT : t, math, (int)p->I, (int)p->H, (int)p->H, (int)p->layers, plan.drop,
                                       CUDNN_RNN_PADDED_IO_ENABLED));
    RNN_CHECK(cudnnCreateRNNDataDescriptor(&plan.xd));
    RNN_CHECK(cudnnCreateRNNDataDescriptor(&plan.yd));
    std::vector<int> len(p->N, (int)p->T);
    nn_status st = data_descs(p, t, len.data(), plan.xd, plan.yd);
    if (st) return st;
    int D = p->bidirectional ? 2 : 1, dims[3] = {(int)(D * p->layers), (int)p->N, (int)p->H},
        strides[3] = {(int)(p->N * p->H), (int)p->H, 1};
    RNN_CHECK(cudnnCreateTensorDescriptor(&plan.hd));
    RNN_CHECK(cudnnSetTensorNdDescriptor(plan.hd, t, 3, dims, strides));
    RNN_CHECK(cudnnGetRNNWeightSpaceSize(h, plan.rnn, &plan.wsize));
    RNN_CHECK(cudnnGetRNNTempSpaceSizes(h, plan.rnn, CUDNN_FWD_MODE_TRAINING, plan.xd, &plan.work_train, &plan.reserve));
    size_t none;
    RNN_CHECK(cudnnGetRNNTempSpaceSizes(h, plan.rnn, CUDNN_FWD_MODE_INFERENCE, plan.xd, &plan.work_infer, &none));
    RNN_CHECK(cudaMalloc(&plan.dev_len, p->N * sizeof(int32_t)));
    RNN_CHECK(cudaMemcpy(plan.dev_len, len.data(), p->N * sizeof(int32_t), cudaMemcpyHostToDevice));
    char *wbase = (char *)nn_cuda_alloc(dev, plan.wsize);
    if (!wbase) return nn_last_status();
    st = copy_runs(h, p, plan, wbase, nn_dtype_size(p->x->dtype));
    nn_cuda_free(dev, wbase);
    return st;
}

/* The call's state: device, stream, plan, and for a packed batch its own data descriptors. */
struct Call {
    nn_cuda_device *d;
    int dev;
    cudaStream_t s;
    RnnPlan *plan;
    cudnnRNNDataDescriptor_t xd, yd;
    int32_t *dev_len;
    size_t work_train, reserve, work_infer;
    bool own; /* xd, yd and dev_len are this call's (a packed batch) */
};

void end_call(Call &c)
{
    if (!c.own) return;
    if (c.xd) cudnnDestroyRNNDataDescriptor(c.xd);
    if (c.yd) cudnnDestroyRNNDataDescriptor(c.yd);
    if (c.dev_len) nn_cuda_free(c.dev, c.dev_len);
}

nn_status begin_call(const nn_rnn_problem *p, Call &c)
{
    c = Call{};
    c.dev = p->x->storage->device.index;
    c.d = nn_cuda_dev(c.dev);
    if (!c.d) return nn_last_status();
    c.s = nn_cuda_current(c.d);
    if (nn_cudnn_on(c.d, c.s)) return nn_last_status();
    cudnnDataType_t t = nn_cudnn_type(p->x->dtype);
    RnnKey key;
    memset(&key, 0, sizeof key);
    bool tf32 = p->x->dtype == NN_F32 && nn_cudnn_allow_tf32;
    key.dev = c.dev, key.mode = p->mode, key.dtype = p->x->dtype, key.tf32 = tf32, key.bidir = p->bidirectional, key.bias = p->bias;
    key.I = p->I, key.H = p->H, key.layers = p->layers, key.T = p->T, key.N = p->N;
    c.plan = rnn_cache()->find(key);
    if (!c.plan) {
        RnnPlan plan{};
        nn_status st = build_plan(c.d, c.dev, p, t, tf32, plan);
        if (st) {
            destroy_plan(plan);
            return st;
        }
        c.plan = rnn_cache()->insert(key, plan);
    }
    c.xd = c.plan->xd, c.yd = c.plan->yd, c.dev_len = c.plan->dev_len;
    c.work_train = c.plan->work_train, c.reserve = c.plan->reserve, c.work_infer = c.plan->work_infer;
    if (!p->lengths) return NN_OK;
    c.own = true;
    c.xd = c.yd = NULL, c.dev_len = NULL;
    std::vector<int> len(p->N);
    for (int64_t i = 0; i < p->N; i++) len[i] = (int)p->lengths[i];
    RNN_CHECK(cudnnCreateRNNDataDescriptor(&c.xd));
    RNN_CHECK(cudnnCreateRNNDataDescriptor(&c.yd));
    nn_status st = data_descs(p, t, len.data(), c.xd, c.yd);
    if (st) return st;
    RNN_CHECK(cudnnGetRNNTempSpaceSizes(c.d->cudnn, c.plan->rnn, CUDNN_FWD_MODE_TRAINING, c.xd, &c.work_train, &c.reserve));
    size_t none;
    RNN_CHECK(cudnnGetRNNTempSpaceSizes(c.d->cudnn, c.plan->rnn, CUDNN_FWD_MODE_INFERENCE, c.xd, &c.work_infer, &none));
    /* the lengths go through pinned memory so the copy stays queued on the stream */
    int32_t *host = (int32_t *)nn_cuda_host_alloc(p->N * sizeof(int32_t));
    c.dev_len = (int32_t *)nn_cuda_alloc(c.dev, p->N * sizeof(int32_t));
    if (!host || !c.dev_len) {
        if (host) nn_cuda_host_free(host);
        return nn_last_status();
    }
    for (int64_t i = 0; i < p->N; i++) host[i] = len[i];
    st = nn_check(cudaMemcpyAsync(c.dev_len, host, p->N * sizeof(int32_t), cudaMemcpyHostToDevice, c.s), "cudaMemcpyAsync", __FILE__, __LINE__);
    if (!st) st = nn_cuda_host_record(host, c.s);
    nn_cuda_host_free(host);
    return st;
}

/* parameters -> weight space (in) or weight space -> parameters' gradients (out) */
nn_status copy_weights(const Call &c, const nn_rnn_problem *p, char *space, bool in)
{
    size_t es = nn_dtype_size(p->x->dtype);
    for (int k = 0; k < c.plan->nruns; k++) {
        const Run &r = c.plan->runs[k];
        char *param = (char *)nn_data(p->w[r.param]) + r.src * es, *w = space + r.dst * es;
        RNN_CHECK(cudaMemcpyAsync(in ? w : param, in ? param : w, r.n * es, cudaMemcpyDeviceToDevice, c.s));
    }
    return NN_OK;
}

/* A byte tensor of n bytes (at least one) on the device: the weight space and the reserve. */
nn_tensor *bytes(int dev, size_t n)
{
    int64_t len = n ? (int64_t)n : 1;
    return nn_empty(1, &len, NN_U8, nn_device{NN_CUDA, (int8_t)dev});
}

nn_status rnn_forward(const nn_rnn_problem *p, bool train, nn_tensor *y, nn_tensor *hy, nn_tensor *cy, nn_tensor **weights,
                      nn_tensor **reserve)
{
    *weights = *reserve = NULL;
    Call c;
    nn_status st = begin_call(p, c);
    nn_tensor *W = st ? NULL : bytes(c.dev, c.plan->wsize), *R = NULL;
    if (!st && !W) st = nn_last_status();
    if (!st && train && !(R = bytes(c.dev, c.reserve))) st = nn_last_status();
    if (!st) st = copy_weights(c, p, (char *)nn_data(W), true);
    size_t wsz = train ? c.work_train : c.work_infer;
    void *work = !st && wsz ? nn_cuda_alloc(c.dev, wsz) : NULL;
    if (!st && wsz && !work) st = nn_last_status();
    if (!st) {
        bool lstm = p->mode == NN_RNN_LSTM;
        st = nn_check(cudnnRNNForward(c.d->cudnn, c.plan->rnn, train ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE, c.dev_len,
                                      c.xd, nn_data(p->x), c.yd, nn_data(y), c.plan->hd, nn_data(p->hx), nn_data(hy), c.plan->hd,
                                      lstm ? nn_data(p->cx) : NULL, lstm ? nn_data(cy) : NULL, c.plan->wsize, nn_data(W), wsz, work,
                                      train ? c.reserve : 0, train ? nn_data(R) : NULL),
                      "cudnnRNNForward", __FILE__, __LINE__);
    }
    if (work) nn_cuda_free(c.dev, work);
    end_call(c);
    if (st) {
        nn_release(W);
        nn_release(R);
        return st;
    }
    *weights = W, *reserve = R;
    return NN_OK;
}

nn_status rnn_backward(const nn_rnn_problem *p, nn_tensor *y, nn_tensor *dy, nn_tensor *dhy, nn_tensor *dcy, nn_tensor *weights,
                       nn_tensor *reserve, nn_tensor *dx, nn_tensor *dhx, nn_tensor *dcx)
{
    Call c;
    nn_status st = begin_call(p, c);
    void *work = !st && c.work_train ? nn_cuda_alloc(c.dev, c.work_train) : NULL;
    if (!st && c.work_train && !work) st = nn_last_status();
    bool lstm = p->mode == NN_RNN_LSTM;
    if (!st)
        st = nn_check(cudnnRNNBackwardData_v8(c.d->cudnn, c.plan->rnn, c.dev_len, c.yd, nn_data(y), nn_data(dy), c.xd, nn_data(dx),
                                              c.plan->hd, nn_data(p->hx), dhy ? nn_data(dhy) : NULL, dhx ? nn_data(dhx) : NULL, c.plan->hd,
                                              lstm ? nn_data(p->cx) : NULL, dcy ? nn_data(dcy) : NULL, dcx ? nn_data(dcx) : NULL,
                                              c.plan->wsize, nn_data(weights), c.work_train, work, c.reserve, nn_data(reserve)),
                      "cudnnRNNBackwardData_v8", __FILE__, __LINE__);
    nn_tensor *dW = NULL;
    if (!st && p->w) {
        if (!(dW = bytes(c.dev, c.plan->wsize))) st = nn_last_status();
        if (!st) /* cuDNN adds into the space (its only mode) */
            st = nn_check(cudaMemsetAsync(nn_data(dW), 0, c.plan->wsize, c.s), "cudaMemsetAsync", __FILE__, __LINE__);
        if (!st)
            st = nn_check(cudnnRNNBackwardWeights_v8(c.d->cudnn, c.plan->rnn, CUDNN_WGRAD_MODE_ADD, c.dev_len, c.xd, nn_data(p->x), c.plan->hd,
                                                     nn_data(p->hx), c.yd, nn_data(y), c.plan->wsize, nn_data(dW), c.work_train, work,
                                                     c.reserve, nn_data(reserve)),
                          "cudnnRNNBackwardWeights_v8", __FILE__, __LINE__);
        if (!st) st = copy_weights(c, p, (char *)nn_data(dW), false);
    }
    nn_release(dW);
    if (work) nn_cuda_free(c.dev, work);
    end_call(c);
    return st;
}

} // namespace

extern "C" void nn_cuda_rnn_register(nn_gpu_api *api)
{
    api->rnn_forward = rnn_forward;
    api->rnn_backward = rnn_backward;
}
