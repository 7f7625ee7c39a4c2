/* CUDA batch_norm and its backward, on ops.def's canonical problem (engine/cpu/batchnorm.c's
 * semantics).
 *
 * cuDNN (the legacy batch norm API, CUDNN_BATCHNORM_SPATIAL) runs the forward in training
 * (which also updates the running stats, the variance's with the unbiased batch variance) and
 * in eval, and the training backward from the mean and inverse std the forward saved. x
 * [N, C, *] is described as [N, C, S, 1], S the product of the spatial dims, with the strides
 * of its layout (contiguous or channels-last, both dense, so the spatial dims collapse);
 * float16/bfloat16 x takes float32 per-channel tensors, float64 double ones. Absent weight or
 * bias become ones or zeros in the workspace, as does a running stat given without its partner.
 * Descriptors are built once per problem shape (plan_cache.cuh).
 *
 * It is used for float16/bfloat16 in NCHW, where it is faster than the own kernels (see run()).
 * The backend's own kernels run the rest: float32/float64 and channels-last, the eval backward (no gradient through the running
 * stats: grad_input = grad_out * weight * invstd), a backward that wants no grad_input, and
 * whatever cuDNN declines (sizes past 32 bits, an operand not 16-byte aligned, a configuration
 * it reports unsupported, or nn_cudnn_batch_norm off). They sum per channel over the N * S
 * positions on a grid of channel tiles by position splits, each block adding in double in a
 * fixed order and the splits combined per channel in order (deterministic, no atomics); a
 * per-channel pass turns the sums into statistics or gradients and into the coefficients of
 * one elementwise pass, out = k1 * grad_out + k2 * (x - m) + k3. */
#include <limits.h>

#include <algorithm>

#include "cudnn_common.cuh"
#include "kernels.cuh"
#include "plan_cache.cuh"
#include "strided_copy.cuh"

#include "cuda_flags.h"

namespace {

constexpr int THREADS = 256;

/* x as [N, C, S]; every operand of x's shape has x's layout. inner: position p = n * S + s holds
 * its C channels together, element (p, c) at p * C + c (channels-last, or S == 1); else element
 * (n, c, s) at (n * C + c) * S + s. */
struct Geo {
    int64_t N, C, S, M, numel;
    bool inner;
};

Geo geo_of(const nn_tensor *x)
{
    Geo g;
    g.N = x->shape[0], g.C = x->shape[1], g.S = 1;
    for (int d = 2; d < x->ndim; d++) g.S *= x->shape[d];
    g.M = g.N * g.S, g.numel = g.M * g.C;
    g.inner = g.S == 1 || !nn_is_contiguous(x);
    return g;
}

__device__ __forceinline__ int64_t offset_of(const Geo &g, int64_t p, int64_t c)
{
    if (g.inner) return p * g.C + c;
    int64_t n = p / g.S;
    return (n * g.C + c) * g.S + (p - n * g.S);
}

template <typename T> __device__ __forceinline__ double to_d(T v) { return (double)nn_to_float(v); }
template <> __device__ __forceinline__ double to_d<double>(double v) { return v; }
/* through float for the narrower types, as the CPU stores them */
template <typename T> __device__ __forceinline__ T from_d(double v) { return nn_from_float<T>((float)v); }
template <> __device__ __forceinline__ double from_d<double>(double v) { return v; }

/* ---- the own kernels ---- */

enum Mode { STATS, GRADS };

/* Per-channel sums over one split of the positions. STATS: (x - x0, (x - x0)^2) with x0 the
 * channel's first element (a shift that keeps the one-pass variance from cancelling); GRADS:
 * (g, g * (x - mean)). A block covers CT channels by THREADS / CT position lanes (CT 32 when
 * the channels are innermost, so a warp reads 32 neighbours; 1 otherwise, so it reads along
 * the positions); grid: channel tiles by splits. part[split * C + c] = the block's two sums. */
template <int MODE, int CT, typename T, typename P>
__global__ void channel_sums(const T *x, const T *g, const P *mean, Geo geo, int64_t split_len, double2 *part)
{
    constexpr int PT = THREADS / CT;
    __shared__ double sa[THREADS], sb[THREADS];
    int tc = threadIdx.x % CT, tp = threadIdx.x / CT;
    int64_t c = (int64_t)blockIdx.x * CT + tc, lo = (int64_t)blockIdx.y * split_len, hi = min(geo.M, lo + split_len);
    double a = 0, b = 0;
    if (c < geo.C) {
        double m;
        if constexpr (MODE == STATS) m = to_d(x[offset_of(geo, 0, c)]);
        else m = to_d(mean[c]);
        for (int64_t p = lo + tp; p < hi; p += PT) {
            int64_t o = offset_of(geo, p, c);
            double d = to_d(x[o]) - m;
            if constexpr (MODE == STATS) {
                a += d;
                b += d * d;
            } else {
                double gv = to_d(g[o]);
                a += gv;
                b += gv * d;
            }
        }
    }
    sa[threadIdx.x] = a;
    sb[threadIdx.x] = b;
    __syncthreads();
    for (int h = PT / 2; h > 0; h /= 2) {
        if (tp < h) {
            sa[threadIdx.x] += sa[threadIdx.x + h * CT];
            sb[threadIdx.x] += sb[threadIdx.x + h * CT];
        }
        __syncthreads();
    }
    if (tp == 0 && c < geo.C) part[blockIdx.y * geo.C + c] = make_double2(sa[tc], sb[tc]);
}

/* out = k1 * g + k2 * (x - m) + k3 in the channel's coefficients */
struct Coef {
    double m, k1, k2, k3;
};

__device__ __forceinline__ double2 sum_splits(const double2 *part, int splits, int64_t C, int64_t c)
{
    double2 s = make_double2(0, 0);
    for (int k = 0; k < splits; k++) s.x += part[k * C + c].x, s.y += part[k * C + c].y;
    return s;
}

/* Training forward, per channel: the batch mean and inverse std from the sums, saved; the running
 * stats updated; the coefficients of y = (x - mean) * invstd * w + b. */
template <typename T, typename P>
__global__ void finish_stats(const double2 *part, int splits, const T *x, Geo geo, const P *w, const P *b, P *rm, P *rv, P *save_mean,
                             P *save_invstd, double momentum, double eps, Coef *coef)
{
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < geo.C; c += (int64_t)gridDim.x * blockDim.x) {
        double2 s = sum_splits(part, splits, geo.C, c);
        double M = (double)geo.M, mean = 0, var = 0;
        if (geo.M > 0) {
            double d = s.x / M;
            mean = to_d(x[offset_of(geo, 0, c)]) + d;
            var = fmax(s.y / M - d * d, 0.0);
            if (rm) rm[c] = (P)((1 - momentum) * to_d(rm[c]) + momentum * mean);
            if (rv) rv[c] = (P)((1 - momentum) * to_d(rv[c]) + momentum * (geo.M > 1 ? var * M / (M - 1) : var));
        }
        double invstd = 1 / sqrt(var + eps);
        save_mean[c] = (P)mean;
        save_invstd[c] = (P)invstd;
        coef[c] = Coef{mean, 0, invstd * (w ? to_d(w[c]) : 1), b ? to_d(b[c]) : 0};
    }
}

/* Eval forward, per channel: the coefficients from the running stats. */
template <typename P>
__global__ void eval_coef(const P *rm, const P *rv, const P *w, const P *b, int64_t C, double eps, Coef *coef)
{
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x)
        coef[c] = Coef{to_d(rm[c]), 0, (w ? to_d(w[c]) : 1) / sqrt(to_d(rv[c]) + eps), b ? to_d(b[c]) : 0};
}

/* Backward, per channel, from sum(g) and sum(g * (x - mean)): grad_weight and grad_bias, and the
 * coefficients of grad_input = k * (g - [training] (mean(g) + xhat * mean(g * xhat))),
 * k = w * invstd, xhat = (x - mean) * invstd. v is the invstd (training) or the running var. */
template <typename P>
__global__ void finish_grads(const double2 *part, int splits, Geo geo, const P *w, const P *mean, const P *v, bool training, double eps, P *gw,
                             P *gb, Coef *coef)
{
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < geo.C; c += (int64_t)gridDim.x * blockDim.x) {
        double2 s = sum_splits(part, splits, geo.C, c);
        double invstd = training ? to_d(v[c]) : 1 / sqrt(to_d(v[c]) + eps), k = (w ? to_d(w[c]) : 1) * invstd;
        double inv_m = training && geo.M > 0 ? 1 / (double)geo.M : 0, sgxhat = s.y * invstd;
        gb[c] = (P)s.x;
        gw[c] = (P)sgxhat;
        coef[c] = Coef{to_d(mean[c]), k, -k * inv_m * invstd * sgxhat, -k * inv_m * s.x};
    }
}

/* out = k1 * g + k2 * (x - m) + k3 over every element (g, x NULL: their term is left out); all
 * operands dense in x's layout, so the element index is the memory index. */
template <typename T>
__global__ void apply(T *out, const T *x, const T *g, const Coef *coef, Geo geo)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < geo.numel; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = geo.inner ? i % geo.C : i / geo.S % geo.C;
        Coef k = coef[c];
        double v = k.k3;
        if (x) v += k.k2 * (to_d(x[i]) - k.m);
        if (g) v += k.k1 * to_d(g[i]);
        out[i] = from_d<T>(v);
    }
}

template <typename P>
__global__ void fill(P *p, int64_t n, double v)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) p[i] = (P)v;
}

/* ---- launching the own kernels ---- */

struct SumGrid {
    int ct, splits;
    int64_t tiles, split_len;
};

/* About 32 positions per lane, at most ~2048 blocks; no splits for an empty batch. */
SumGrid sum_grid(const Geo &g)
{
    SumGrid sg{g.inner ? 32 : 1, 0, 0, 0};
    if (g.M == 0 || g.C == 0) return sg;
    int64_t pt = THREADS / sg.ct;
    sg.tiles = (g.C + sg.ct - 1) / sg.ct;
    int64_t want = (g.M + pt * 32 - 1) / (pt * 32), cap = std::max<int64_t>(1, 2048 / sg.tiles);
    int64_t splits = std::max<int64_t>(1, std::min(want, cap));
    sg.split_len = (g.M + splits - 1) / splits;
    sg.splits = (int)((g.M + sg.split_len - 1) / sg.split_len);
    return sg;
}

template <int MODE, typename T, typename P>
nn_status launch_sums(const SumGrid &sg, const T *x, const T *g, const P *mean, const Geo &geo, double2 *part, cudaStream_t s)
{
    if (!sg.splits) return NN_OK;
    if (sg.tiles > INT_MAX) return nn_error(NN_ERR_ARG, "batch_norm: too many channels (%lld) for CUDA", (long long)geo.C);
    dim3 grid((unsigned)sg.tiles, (unsigned)sg.splits);
    if (sg.ct == 32) channel_sums<MODE, 32, T, P><<<grid, THREADS, 0, s>>>(x, g, mean, geo, sg.split_len, part);
    else channel_sums<MODE, 1, T, P><<<grid, THREADS, 0, s>>>(x, g, mean, geo, sg.split_len, part);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

/* Scratch of the own kernels: the partial sums and the coefficients. */
nn_status own_scratch(int dev, const Geo &g, const SumGrid &sg, double2 **part, Coef **coef)
{
    nn_staging::Carve cv;
    size_t po = cv.take((size_t)sg.splits * (size_t)g.C * sizeof(double2)), co = cv.take((size_t)g.C * sizeof(Coef));
    char *ws = (char *)nn_cuda_workspace(dev, cv.used);
    if (!ws) return nn_last_status();
    *part = (double2 *)(ws + po);
    *coef = (Coef *)(ws + co);
    return NN_OK;
}

template <typename P> P *vec(const nn_tensor *t) { return t ? (P *)nn_data(t) : NULL; }
/* row r of a [2, C] pair (rows padded) */
template <typename P> P *row(const nn_tensor *t, int r) { return (P *)nn_data(t) + r * t->strides[0]; }

template <typename T, typename P>
nn_status own_forward(const nn_kargs *a, const Geo &g, int dev, cudaStream_t s)
{
    if (g.C == 0) return NN_OK;
    bool training = a->i[0] != 0;
    const T *x = (const T *)nn_data(a->in[0]);
    const P *w = vec<P>(a->in[1]), *b = vec<P>(a->in[2]);
    SumGrid sg = training ? sum_grid(g) : SumGrid{1, 0, 0, 0};
    double2 *part = NULL;
    Coef *coef = NULL;
    nn_status st = own_scratch(dev, g, sg, &part, &coef);
    if (!st) st = training ? launch_sums<STATS, T, P>(sg, x, (const T *)NULL, (const P *)NULL, g, part, s) : NN_OK;
    if (st) return st;
    unsigned cb = nn_cuda_blocks(g.C);
    if (training)
        finish_stats<T, P><<<cb, THREADS, 0, s>>>(part, sg.splits, x, g, w, b, vec<P>(a->in[3]), vec<P>(a->in[4]), row<P>(a->out[1], 0),
                                                  row<P>(a->out[1], 1), a->f[0], a->f[1], coef);
    else
        eval_coef<P><<<cb, THREADS, 0, s>>>(vec<P>(a->in[3]), vec<P>(a->in[4]), w, b, g.C, a->f[1], coef);
    NN_CHECK_LAUNCH();
    if (g.numel) apply<T><<<nn_cuda_blocks(g.numel), THREADS, 0, s>>>((T *)nn_data(a->out[0]), x, (const T *)NULL, coef, g);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

template <typename T, typename P>
nn_status own_backward(const nn_kargs *a, const Geo &g, int dev, cudaStream_t s)
{
    if (g.C == 0) return NN_OK;
    bool training = a->i[0] != 0;
    const T *go = (const T *)nn_data(a->in[0]), *x = (const T *)nn_data(a->in[1]);
    const P *mean = vec<P>(a->in[3]);
    SumGrid sg = sum_grid(g);
    double2 *part = NULL;
    Coef *coef = NULL;
    nn_status st = own_scratch(dev, g, sg, &part, &coef);
    if (!st) st = launch_sums<GRADS, T, P>(sg, x, go, mean, g, part, s);
    if (st) return st;
    finish_grads<P><<<nn_cuda_blocks(g.C), THREADS, 0, s>>>(part, sg.splits, g, vec<P>(a->in[2]), mean, vec<P>(a->in[4]), training, a->f[0],
                                                           row<P>(a->out[0], 0), row<P>(a->out[0], 1), coef);
    NN_CHECK_LAUNCH();
    if (a->out[1] && g.numel)
        apply<T><<<nn_cuda_blocks(g.numel), THREADS, 0, s>>>((T *)nn_data(a->out[1]), training ? x : (const T *)NULL, go, coef, g);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

/* ---- cuDNN ---- */

enum Call { TRAIN, INFER, BACKWARD };

struct BnKey {
    int32_t dev, dtype, channels_last, pad;
    int64_t N, C, S;
};

struct BnPlan {
    cudnnTensorDescriptor_t x, p; /* x (also y, dy, dx) as [N, C, S, 1]; the per-channel tensors, [1, C, 1, 1] */
    bool declined[3];             /* cuDNN said it does not take this call */
};

void destroy_plan(BnPlan &p)
{
    if (p.x) cudnnDestroyTensorDescriptor(p.x);
    if (p.p) cudnnDestroyTensorDescriptor(p.p);
    p = BnPlan{};
}

nn_plan_cache<BnKey, BnPlan> *bn_cache() { return nn_plan_cache_for<BnKey, BnPlan>(destroy_plan); }

/* cuDNN's way of saying it does not take a configuration (for bfloat16, which not every version
 * of its batch norm takes, an unsupported type may also come back as a bad parameter) */
bool is_declined(cudnnStatus_t e, nn_dtype dt)
{
    int kind = (int)e / 1000;
    return kind == CUDNN_STATUS_NOT_SUPPORTED / 1000 || (dt == NN_BF16 && kind == CUDNN_STATUS_BAD_PARAM / 1000);
}

void note_declined(BnPlan *p, Call call)
{
    p->declined[call] = true;
    __atomic_fetch_add(&nn_cudnn_batch_norm_declined, 1, __ATOMIC_RELAXED);
}

nn_status describe(const Geo &g, nn_dtype dt, BnPlan *p)
{
    NN_CHECK(cudnnCreateTensorDescriptor(&p->x));
    NN_CHECK(cudnnCreateTensorDescriptor(&p->p));
    int n = (int)g.N, c = (int)g.C, h = (int)g.S;
    bool cl = g.inner && g.S > 1;
    NN_CHECK(cudnnSetTensor4dDescriptorEx(p->x, nn_cudnn_type(dt), n, c, h, 1, cl ? h * c : c * h, cl ? 1 : h, cl ? c : 1, cl ? c : 1));
    /* set rather than derived, so that it states the dtype the per-channel tensors have */
    NN_CHECK(cudnnSetTensor4dDescriptor(p->p, CUDNN_TENSOR_NCHW, dt == NN_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT, 1, c, 1, 1));
    return NN_OK;
}

/* The plan of g's problem, or NULL where cuDNN cannot be asked (sizes past its int limits, or
 * an empty tensor). */
nn_status get_plan(const Geo &g, nn_dtype dt, int dev, BnPlan **out)
{
    *out = NULL;
    if (g.numel == 0 || g.numel >= INT_MAX || g.N > INT_MAX || g.C > INT_MAX || g.S > INT_MAX) return NN_OK;
    BnKey key;
    memset(&key, 0, sizeof key);
    key.dev = dev, key.dtype = dt, key.channels_last = g.inner && g.S > 1, key.N = g.N, key.C = g.C, key.S = g.S;
    if ((*out = bn_cache()->find(key))) return NN_OK;
    BnPlan fresh{};
    nn_status st = describe(g, dt, &fresh);
    if (st) {
        destroy_plan(fresh);
        return st;
    }
    *out = bn_cache()->insert(key, fresh);
    return NN_OK;
}

bool all_aligned(const void *const *p, int n)
{
    for (int k = 0; k < n; k++)
        if (p[k] && !nn_cudnn_aligned(p[k])) return false;
    return true;
}

/* Ones for an absent weight, zeros for an absent bias, scratch for a running stat given alone. */
struct Stand {
    const void *w, *b;
    void *rm, *rv;
};

nn_status stand_ins(const nn_kargs *a, int win, int bin, bool pair_stats, int64_t C, nn_dtype pdt, int dev, cudaStream_t s, Stand *o)
{
    size_t bytes = (size_t)C * nn_dtype_size(pdt);
    const nn_tensor *w = a->in[win], *b = bin >= 0 ? a->in[bin] : NULL, *rm = pair_stats ? a->in[3] : NULL, *rv = pair_stats ? a->in[4] : NULL;
    bool alone = (rm != NULL) != (rv != NULL);
    nn_staging::Carve cv;
    size_t wo = w ? 0 : cv.take(bytes), bo = b || bin < 0 ? 0 : cv.take(bytes), so = alone ? cv.take(bytes) : 0;
    char *ws = cv.used ? (char *)nn_cuda_workspace(dev, cv.used) : NULL;
    if (cv.used && !ws) return nn_last_status();
    *o = Stand{w ? nn_data(w) : ws + wo, b ? nn_data(b) : bin < 0 ? NULL : ws + bo, rm ? nn_data(rm) : NULL, rv ? nn_data(rv) : NULL};
    unsigned blocks = nn_cuda_blocks(C);
    if (!w || (!b && bin >= 0)) {
        for (int k = 0; k < 2; k++) {
            void *p = k == 0 ? (w ? NULL : ws + wo) : (b || bin < 0 ? NULL : ws + bo);
            if (!p) continue;
            if (pdt == NN_F64) fill<double><<<blocks, THREADS, 0, s>>>((double *)p, C, k == 0 ? 1 : 0);
            else fill<float><<<blocks, THREADS, 0, s>>>((float *)p, C, k == 0 ? 1 : 0);
            NN_CHECK_LAUNCH();
        }
    }
    if (alone) { /* cuDNN updates both running stats or none */
        if (!o->rm) o->rm = ws + so;
        else o->rv = ws + so;
    }
    return NN_OK;
}

/* The forward through cuDNN; *done false (and nothing written) when it does not take it. */
nn_status cudnn_forward(const nn_kargs *a, BnPlan *plan, nn_cuda_device *d, int dev, cudaStream_t s, bool *done)
{
    *done = false;
    bool training = a->i[0] != 0;
    Call call = training ? TRAIN : INFER;
    nn_dtype dt = a->in[0]->dtype, pdt = dt == NN_F64 ? NN_F64 : NN_F32;
    const void *x = nn_data(a->in[0]);
    void *y = nn_data(a->out[0]), *sm = training ? nn_data(a->out[1]) : NULL;
    void *si = training ? (char *)sm + a->out[1]->strides[0] * (int64_t)nn_dtype_size(pdt) : NULL;
    const void *ptrs[8] = {x, y, sm, si};
    for (int k = 1; k < 5; k++) ptrs[3 + k] = a->in[k] ? nn_data(a->in[k]) : NULL;
    if (plan->declined[call] || !all_aligned(ptrs, 8)) return NN_OK;
    Stand o;
    nn_status st = stand_ins(a, 1, 2, training, a->in[0]->shape[1], pdt, dev, s, &o);
    if (st) return st;
    if (nn_cudnn_on(d, s)) return nn_last_status();
    const void *one = nn_cudnn_one(dt), *zero = nn_cudnn_zero(dt);
    cudnnStatus_t e = training ? cudnnBatchNormalizationForwardTraining(d->cudnn, CUDNN_BATCHNORM_SPATIAL, one, zero, plan->x, x, plan->x, y, plan->p,
                                                                        o.w, o.b, a->f[0], o.rm, o.rv, a->f[1], sm, si)
                               : cudnnBatchNormalizationForwardInference(d->cudnn, CUDNN_BATCHNORM_SPATIAL, one, zero, plan->x, x, plan->x, y, plan->p,
                                                                         o.w, o.b, nn_data(a->in[3]), nn_data(a->in[4]), a->f[1]);
    if (is_declined(e, dt)) {
        note_declined(plan, call);
        return NN_OK;
    }
    NN_CHECK(e);
    *done = true;
    return NN_OK;
}

/* The training backward through cuDNN (grad_input wanted); *done as cudnn_forward's. */
nn_status cudnn_backward(const nn_kargs *a, BnPlan *plan, nn_cuda_device *d, int dev, cudaStream_t s, bool *done)
{
    *done = false;
    nn_dtype dt = a->in[1]->dtype, pdt = dt == NN_F64 ? NN_F64 : NN_F32;
    void *gw = nn_data(a->out[0]), *gb = (char *)gw + a->out[0]->strides[0] * (int64_t)nn_dtype_size(pdt), *gx = nn_data(a->out[1]);
    const void *ptrs[8] = {gw, gb, gx};
    for (int k = 0; k < 5; k++) ptrs[3 + k] = a->in[k] ? nn_data(a->in[k]) : NULL;
    if (plan->declined[BACKWARD] || !all_aligned(ptrs, 8)) return NN_OK;
    Stand o;
    nn_status st = stand_ins(a, 2, -1, false, a->in[1]->shape[1], pdt, dev, s, &o);
    if (st) return st;
    if (nn_cudnn_on(d, s)) return nn_last_status();
    const void *one = nn_cudnn_one(dt), *zero = nn_cudnn_zero(dt);
    cudnnStatus_t e = cudnnBatchNormalizationBackward(d->cudnn, CUDNN_BATCHNORM_SPATIAL, one, zero, one, zero, plan->x, nn_data(a->in[1]), plan->x,
                                                      nn_data(a->in[0]), plan->x, gx, plan->p, o.w, gw, gb, a->f[0], nn_data(a->in[3]),
                                                      nn_data(a->in[4]));
    if (is_declined(e, dt)) {
        note_declined(plan, BACKWARD);
        return NN_OK;
    }
    NN_CHECK(e);
    *done = true;
    return NN_OK;
}

/* ---- entry points ---- */

/* The kernel contract (ops.def), checked: big operands of x's dtype and shape, per-channel ones
 * of the stats dtype, all on the device. */
nn_status check_operands(const nn_kargs *a, const nn_tensor *x, int nbig, nn_tensor *const *big, int nvec, nn_tensor *const *vecs)
{
    nn_dtype pdt = x->dtype == NN_F64 ? NN_F64 : NN_F32;
    int dev = nn_cuda_index(a);
    for (int k = 0; k < nbig + nvec; k++) {
        const nn_tensor *t = k < nbig ? big[k] : vecs[k - nbig];
        if (!t) continue;
        bool ok = k < nbig ? t->dtype == x->dtype && t->ndim == x->ndim && !memcmp(t->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim)
                           : t->dtype == pdt && t->shape[t->ndim - 1] == x->shape[1];
        if (!ok) return nn_error(NN_ERR_ARG, "%s: operands do not match the input %s", nn_op_name(a->op), nn_dtype_name(x->dtype));
        if (t->storage->device.type != NN_CUDA || t->storage->device.index != dev)
            return nn_error(NN_ERR_DEVICE, "%s: expected all tensors to be on the same device", nn_op_name(a->op));
    }
    return NN_OK;
}

/* One call: through cuDNN where it takes it (the forward, and the training backward that wants
 * grad_input; the other backwards are one pass of sums and one elementwise pass), else through
 * the own kernels. */
template <typename T, typename P>
nn_status run(const nn_kargs *a, bool bwd)
{
    const nn_tensor *x = a->in[bwd ? 1 : 0];
    nn_tensor *big[3] = {a->in[0], bwd ? a->in[1] : a->out[0], bwd ? a->out[1] : NULL};
    nn_tensor *vecs[5] = {a->in[bwd ? 2 : 1], a->in[bwd ? 3 : 2], a->in[bwd ? 4 : 3], bwd ? a->out[0] : a->in[4],
                          !bwd && a->i[0] ? a->out[1] : NULL};
    nn_status st = check_operands(a, x, 3, big, 5, vecs);
    if (st) return st;
    int dev = nn_cuda_index(a);
    nn_cuda_device *d = nn_cuda_dev(dev);
    if (!d) return nn_last_status();
    Geo g = geo_of(x);
    BnPlan *plan = NULL;
    bool done = false;
    /* cuDNN where it measured faster than the own kernels (H200, [64, 256, 14, 14], forward + backward):
     * float16 in NCHW, 28 us against 70. float32 (178 against 104 us) and channels-last (550 against
     * 100 us) run the own kernels. */
    bool cudnn_faster = (x->dtype == NN_F16 || x->dtype == NN_BF16) && !(g.inner && g.S > 1);
    if (nn_cudnn_batch_norm && cudnn_faster && (!bwd || (a->i[0] && a->out[1])) && (st = get_plan(g, x->dtype, dev, &plan))) return st;
    if (plan && (st = (bwd ? cudnn_backward : cudnn_forward)(a, plan, d, dev, nn_cuda_current(d), &done))) return st;
    if (done) return NN_OK;
    return bwd ? own_backward<T, P>(a, g, dev, nn_cuda_current(d)) : own_forward<T, P>(a, g, dev, nn_cuda_current(d));
}

nn_status entry(const nn_kargs *a, bool bwd)
{
    nn_dtype dt = a->in[bwd ? 1 : 0]->dtype;
    switch (dt) {
    case NN_F32: return run<float, float>(a, bwd);
    case NN_F64: return run<double, double>(a, bwd);
    case NN_F16: return run<__half, float>(a, bwd);
    case NN_BF16: return run<__nv_bfloat16, float>(a, bwd);
    default: return nn_not_implemented(a, dt);
    }
}

} // namespace

extern "C" nn_status nn_cuda_batch_norm(const nn_kargs *a) { return entry(a, false); }
extern "C" nn_status nn_cuda_batch_norm_backward(const nn_kargs *a) { return entry(a, true); }
