/* CUDA nll_loss, the fused cross_entropy, and their backward (engine/cpu/loss.c's semantics).
 *
 * The input is [C] or [N, C, d1, ...]; a position is an index into every dim
 * but the class dim and addresses the target (and, for reduction none, the
 * loss or grad_out). Forward: one thread per position; the loss sum and the
 * total weight accumulate in double and reduce deterministically (no float
 * atomics): each block writes its partial sums, in block order, and one block
 * adds them in a fixed tree; a single block does it all when the positions fit.
 * Backward zeroes grad_input and writes the one entry of each position.
 *
 * cross_entropy gives each position a warp: its lanes stride over the classes with an
 * online (max, sum of exp) pair, and lane 0 writes the logsumexp that the backward, one
 * thread per element, turns into softmax - onehot(target); the sums go as nll_loss's.
 *
 * A target out of [0, C) (and not ignore_index) is skipped and reported through
 * the deferred error word (cuda/index.cu); a 0-dim CPU target is checked now. */
#include "kernels.cuh"
#include "softmax_math.cuh"

int64_t *nn_cuda_kernel_error_word(void); /* cuda/index.cu */
extern "C" nn_status nn_cuda_check_kernel_errors(void);

namespace {

using namespace nn_smx;

enum { NONE = 0, MEAN = 1 };
constexpr int THREADS = 256;
constexpr int64_t PER_BLOCK = 16 * THREADS; /* positions per block before a second block is used */
constexpr int MAX_BLOCKS = 1024;
constexpr int CE_WARPS = THREADS / 32;
constexpr int64_t CE_PER_BLOCK = CE_WARPS; /* cross_entropy: one position per warp before a second block is used */

struct Lay {
    int m; /* position dims */
    int64_t shape[NN_MAX_DIMS];
    int64_t st[3][NN_MAX_DIMS]; /* element strides: input, target, per-position tensor */
    int64_t C, sc;              /* classes, the input's stride along them */
    int64_t np;                 /* positions */
};

__device__ __forceinline__ void pos_offsets(const Lay &L, int64_t p, int64_t *off)
{
    off[0] = off[1] = off[2] = 0;
    for (int j = L.m - 1; j >= 0; j--) {
        int64_t q = p / L.shape[j], i = p - q * L.shape[j];
        p = q;
        off[0] += i * L.st[0][j];
        off[1] += i * L.st[1][j];
        off[2] += i * L.st[2][j];
    }
}

__device__ __forceinline__ void report(int64_t *w, int64_t v)
{
    volatile int64_t *vw = w;
    if (vw[0] == 0) {
        vw[1] = v;
        __threadfence_system();
        vw[0] = 2; /* KERR_TARGET in cuda/index.cu */
    }
}

template <typename T> __device__ __forceinline__ double ld(const T *p, int64_t i) { return (double)p[i]; }
template <> __device__ __forceinline__ double ld<__half>(const __half *p, int64_t i) { return __half2float(p[i]); }
template <> __device__ __forceinline__ double ld<__nv_bfloat16>(const __nv_bfloat16 *p, int64_t i) { return __bfloat162float(p[i]); }
/* as nn_store_f64: through float for the 16-bit types */
template <typename T> __device__ __forceinline__ void st(T *p, int64_t i, double v) { p[i] = (T)v; }
template <> __device__ __forceinline__ void st<__half>(__half *p, int64_t i, double v) { p[i] = __float2half_rn((float)v); }
template <> __device__ __forceinline__ void st<__nv_bfloat16>(__nv_bfloat16 *p, int64_t i, double v)
{
    p[i] = __float2bfloat16_rn((float)v);
}

/* the target: a device int64 tensor, or one value read on the host (t NULL) */
struct Target {
    const int64_t *t;
    int64_t host;
};
/* a scalar operand: a device element, or a host value (p NULL) */
template <typename T> struct Scalar {
    const T *p;
    double host;
};
template <typename T> __device__ __forceinline__ double scalar(const Scalar<T> &s) { return s.p ? ld(s.p, 0) : s.host; }

/* (sum, wsum) over the block, valid in thread 0; the order is fixed by the thread layout */
__device__ double2 block_sum2(double s, double w)
{
    __shared__ double sh[2][THREADS / 32];
    for (int o = 16; o > 0; o /= 2) {
        s += __shfl_down_sync(0xffffffffu, s, o);
        w += __shfl_down_sync(0xffffffffu, w, o);
    }
    if (threadIdx.x % 32 == 0) sh[0][threadIdx.x / 32] = s, sh[1][threadIdx.x / 32] = w;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < THREADS / 32 ? sh[0][threadIdx.x] : 0;
        w = threadIdx.x < THREADS / 32 ? sh[1][threadIdx.x] : 0;
        for (int o = 16; o > 0; o /= 2) {
            s += __shfl_down_sync(0xffffffffu, s, o);
            w += __shfl_down_sync(0xffffffffu, w, o);
        }
    }
    return make_double2(s, w);
}

template <typename T>
__device__ __forceinline__ void finish(T *loss, T *tw, int red, double s, double w)
{
    if (red != NONE) st(loss, 0, red == MEAN ? s / w : s);
    if (tw) st(tw, 0, w);
}

/* The loss at a position of class c, w[c] * (lse - x[c]) (nll_loss: lse -0, so -w[c] * x[c]
 * to the bit), stored for reduction none and added to (s, wsum). */
template <typename T>
__device__ __forceinline__ void add_position(T *loss, const T *x, const int64_t *off, int64_t c, double lse, const T *w, int64_t ws, const Lay &L,
                                             int red, int64_t ignore, int64_t *err, double &s, double &wsum)
{
    double v = 0, wt = 0;
    if (c != ignore) {
        if (c < 0 || c >= L.C) report(err, c);
        else {
            wt = w ? ld(w, c * ws) : 1.0;
            v = wt * (lse - ld(x, off[0] + c * L.sc));
        }
    }
    if (red == NONE) st(loss, off[2], v);
    s += v;
    wsum += wt;
}

/* the block's sums: the result when it is the only block, else its partial[2 * block] */
template <typename T>
__device__ __forceinline__ void block_done(T *loss, T *tw, int red, double s, double wsum, double *partial)
{
    double2 r = block_sum2(s, wsum);
    if (threadIdx.x) return;
    if (gridDim.x == 1) finish(loss, tw, red, r.x, r.y);
    else partial[2 * blockIdx.x] = r.x, partial[2 * blockIdx.x + 1] = r.y;
}

/* blocks > 1: partial[2 * block] = (sum, wsum); else the result is written directly */
template <typename T>
__global__ void nll_fwd(T *loss, T *tw, const T *x, Target tg, const T *w, int64_t ws, Lay L, int red, int64_t ignore, double *partial,
                        int64_t *err)
{
    int64_t per = (L.np + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * per, hi = lo + per < L.np ? lo + per : L.np;
    double s = 0, wsum = 0;
    for (int64_t p = lo + threadIdx.x; p < hi; p += blockDim.x) {
        int64_t off[3];
        pos_offsets(L, p, off);
        add_position(loss, x, off, tg.t ? tg.t[off[1]] : tg.host, -0.0, w, ws, L, red, ignore, err, s, wsum);
    }
    block_done(loss, tw, red, s, wsum, partial);
}

template <typename T>
__global__ void nll_final(T *loss, T *tw, const double *partial, int nb, int red)
{
    double s = 0, w = 0;
    for (int b = threadIdx.x; b < nb; b += blockDim.x) s += partial[2 * b], w += partial[2 * b + 1];
    double2 r = block_sum2(s, w);
    if (threadIdx.x == 0) finish(loss, tw, red, r.x, r.y);
}

template <typename T>
__global__ void zero_strided(T *p, nn_cuda_offsets o, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[1];
        nn_cuda_offsets_at<1>(o, i, off);
        *(T *)((char *)p + off[0]) = T{};
    }
}

template <typename T>
__global__ void nll_bwd(T *gi, Scalar<T> go0, const T *go, Target tg, const T *w, int64_t ws, const T *total, Lay L, int red, int64_t ignore,
                        int64_t *err)
{
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < L.np; p += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[3];
        pos_offsets(L, p, off);
        int64_t c = tg.t ? tg.t[off[1]] : tg.host;
        if (c == ignore) continue;
        if (c < 0 || c >= L.C) {
            report(err, c);
            continue;
        }
        double wt = w ? ld(w, c * ws) : 1.0;
        double g = red == NONE ? (go ? ld(go, off[2]) : go0.host) : scalar(go0);
        st(gi, off[0] + c * L.sc, red == MEAN ? -wt * g / ld(total, 0) : -wt * g);
    }
}

template <typename T>
__global__ void ce_fwd(T *loss, T *tw, T *lse, const T *x, Target tg, const T *w, int64_t ws, Lay L, int red, int64_t ignore, double *partial,
                       int64_t *err)
{
    typedef typename nn_acc<T>::type C;
    int64_t per = (L.np + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * per, hi = lo + per < L.np ? lo + per : L.np;
    int lane = threadIdx.x % 32;
    double s = 0, wsum = 0;
    for (int64_t p = lo + threadIdx.x / 32; p < hi; p += CE_WARPS) {
        int64_t off[3];
        pos_offsets(L, p, off);
        MS<C> m{ninf<C>(), (C)0};
        const T *xr = x + off[0];
        int64_t k = lane;
        for (; k + 96 < L.C; k += 128) { /* four loads in flight, added in class order */
            C v0 = to_acc<C>(xr[k * L.sc]), v1 = to_acc<C>(xr[(k + 32) * L.sc]);
            C v2 = to_acc<C>(xr[(k + 64) * L.sc]), v3 = to_acc<C>(xr[(k + 96) * L.sc]);
            ms_add(m, v0), ms_add(m, v1), ms_add(m, v2), ms_add(m, v3);
        }
        for (; k < L.C; k += 32) ms_add(m, to_acc<C>(xr[k * L.sc]));
#pragma unroll
        for (int o = 16; o > 0; o /= 2) m = ms_merge(m, MS<C>{__shfl_xor_sync(0xffffffffu, m.m, o), __shfl_xor_sync(0xffffffffu, m.s, o)});
        if (lane) continue;
        ms_final(m);
        C l = m.m + lg(m.s);
        lse[off[2]] = from_acc<T>(l);
        add_position(loss, x, off, tg.t ? tg.t[off[1]] : tg.host, (double)l, w, ws, L, red, ignore, err, s, wsum);
    }
    block_done(loss, tw, red, s, wsum, partial);
}

/* grad_input has the logits' (contiguous) offsets; grad_out for reduction none the logsumexp's */
template <typename T>
__global__ void ce_bwd(T *gi, Scalar<T> go0, const T *go, const T *x, Target tg, const T *lse, const T *w, int64_t ws, const T *total, Lay L,
                       int red, int64_t ignore, int64_t *err)
{
    typedef typename nn_acc<T>::type C;
    int64_t n = L.np * L.C;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t p = e / L.C, k = e - p * L.C, off[3];
        pos_offsets(L, p, off);
        int64_t c = tg.t ? tg.t[off[1]] : tg.host;
        C scale = 0;
        if (c != ignore) {
            if (c < 0 || c >= L.C) {
                if (k == 0) report(err, c);
            } else {
                double wt = w ? ld(w, c * ws) : 1.0, g = red == NONE ? (go ? ld(go, off[2]) : go0.host) : scalar(go0);
                scale = (C)(red == MEAN ? wt * g / ld(total, 0) : wt * g);
            }
        }
        int64_t i = off[0] + k * L.sc;
        C pr = ex(to_acc<C>(x[i]) - to_acc<C>(lse[off[2]]));
        gi[i] = from_acc<T>(scale * (pr - (k == c ? (C)1 : (C)0)));
    }
}

/* ---- host side ---- */

/* o: the per-position tensor (target's shape) or NULL */
Lay lay_of(const nn_tensor *x, const nn_tensor *t, const nn_tensor *o)
{
    Lay L{};
    int cd = x->ndim == 1 ? 0 : 1;
    L.C = x->shape[cd];
    L.sc = x->strides[cd];
    L.np = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (d == cd) continue;
        int j = L.m++;
        L.shape[j] = x->shape[d];
        L.st[0][j] = x->strides[d];
        L.st[1][j] = t->ndim > j ? t->strides[j] : 0;
        L.st[2][j] = o && o->ndim > j ? o->strides[j] : 0;
        L.np *= x->shape[d];
    }
    return L;
}

bool on_host(const nn_tensor *t) { return t->storage->device.type != NN_CUDA; }

nn_status target_of(nn_tensor *t, int64_t C, int64_t ignore, Target *r)
{
    if (t->dtype != NN_I64) return nn_error(NN_ERR_DTYPE, "nll_loss: expected scalar type Long but found %s", nn_dtype_name(t->dtype));
    *r = Target{};
    if (!on_host(t)) {
        r->t = (const int64_t *)nn_data(t);
        return NN_OK;
    }
    r->host = *(const int64_t *)nn_data(t); /* a 0-dim CPU target: checked now */
    if (r->host != ignore && (r->host < 0 || r->host >= C)) return nn_error(NN_ERR_INDEX, "Target %lld is out of bounds.", (long long)r->host);
    return NN_OK;
}

nn_status check_common(const nn_kargs *a, nn_tensor *x, nn_tensor *w, nn_cuda_device **d, int64_t **err)
{
    if (nn_cuda_check_kernel_errors()) return nn_last_status();
    if (!nn_dtype_is_float(x->dtype)) return nn_not_implemented(a, x->dtype);
    if (w && (w->dtype != x->dtype || on_host(w)))
        return nn_error(NN_ERR_DTYPE, "%s: the class weights must be a %s tensor on the input's device", nn_op_name(a->op), nn_dtype_name(x->dtype));
    *d = nn_cuda_dev(nn_cuda_index(a));
    *err = nn_cuda_kernel_error_word();
    return *d && *err ? NN_OK : nn_last_status();
}

/* nll_loss, or with fused the cross_entropy of logits */
template <typename T>
nn_status fwd_launch(const nn_kargs *a, nn_cuda_device *d, int64_t *err, const Lay &L, const Target &tg, bool fused)
{
    nn_tensor *x = a->in[0], *w = a->nin > 2 ? a->in[2] : NULL;
    int red = (int)a->i[0];
    int64_t per = fused ? CE_PER_BLOCK : PER_BLOCK, nb = (L.np + per - 1) / per;
    nb = nb < 1 ? 1 : nb > MAX_BLOCKS ? MAX_BLOCKS : nb;
    double *partial = NULL;
    if (nb > 1 && !(partial = (double *)nn_cuda_workspace(nn_cuda_index(a), (size_t)nb * 2 * sizeof(double)))) return nn_last_status();
    T *loss = (T *)nn_data(a->out[0]), *tw = a->out[1] ? (T *)nn_data(a->out[1]) : NULL;
    const T *xp = (const T *)nn_data(x), *wp = w ? (const T *)nn_data(w) : NULL;
    int64_t ws = w ? w->strides[0] : 0;
    if (fused)
        nn_launch<ce_fwd<T>>((unsigned)nb, THREADS, nn_cuda_current(d), loss, tw, (T *)nn_data(a->out[2]), xp, tg, wp, ws, L, red, a->i[1], partial, err);
    else
        nn_launch<nll_fwd<T>>((unsigned)nb, THREADS, nn_cuda_current(d), loss, tw, xp, tg, wp, ws, L, red, a->i[1], partial, err);
    NN_CHECK_LAUNCH();
    if (nb > 1) {
        nn_launch<nll_final<T>>(1, THREADS, nn_cuda_current(d), loss, tw, partial, (int)nb, red);
        NN_CHECK_LAUNCH();
    }
    return NN_OK;
}

/* nll_loss, or with fused cross_entropy (its out[2], the logsumexp, is the per-position tensor) */
nn_status loss_forward(const nn_kargs *a, bool fused)
{
    nn_tensor *x = a->in[0], *t = a->in[1], *w = a->nin > 2 ? a->in[2] : NULL;
    nn_cuda_device *d = NULL;
    int64_t *err = NULL;
    const char *name = nn_op_name(a->op);
    if (check_common(a, x, w, &d, &err)) return nn_last_status();
    if (on_host(x)) return nn_error(NN_ERR_DEVICE, "%s: the input must be on the GPU", name);
    for (int k = 0; k < (fused ? 3 : 2); k++)
        if (a->out[k] && a->out[k]->dtype != x->dtype)
            return nn_error(NN_ERR_DTYPE, "%s: the outputs must have the input's dtype %s", name, nn_dtype_name(x->dtype));
    Lay L = lay_of(x, t, fused ? a->out[2] : a->i[0] == NONE ? a->out[0] : NULL);
    Target tg;
    if (target_of(t, L.C, a->i[1], &tg)) return nn_last_status();
    NN_DISPATCH_FLOATS(x->dtype, a, return fwd_launch<scalar_t>(a, d, err, L, tg, fused));
    return NN_OK;
}

template <typename T>
nn_status bwd_launch(const nn_kargs *a, nn_tensor *go, nn_cuda_device *d, int64_t *err, const Lay &L, const Target &tg)
{
    nn_tensor *gi = a->out[0], *total = a->in[2], *w = a->nin > 3 ? a->in[3] : NULL;
    int red = (int)a->i[0];
    T *gp = (T *)nn_data(gi);
    if (nn_is_contiguous(gi)) {
        NN_CHECK(cudaMemsetAsync(gp, 0, (size_t)nn_numel(gi) * sizeof(T), nn_cuda_current(d)));
    } else {
        nn_iter it;
        nn_iter_init(&it, 1, &gi);
        nn_launch<zero_strided<T>>(nn_cuda_blocks(nn_numel(gi)), 256, nn_cuda_current(d), gp, nn_cuda_offsets_of(it), nn_numel(gi));
        NN_CHECK_LAUNCH();
    }
    if (L.np == 0 || L.C == 0) return NN_OK;
    Scalar<T> go0{NULL, 0};
    const T *gop = NULL;
    if (on_host(go)) go0.host = nn_load_f64(nn_data(go), go->dtype); /* a 0-dim CPU grad */
    else if (red == NONE) gop = (const T *)nn_data(go);
    else go0.p = (const T *)nn_data(go);
    nn_launch<nll_bwd<T>>(nn_cuda_blocks(L.np), 256, nn_cuda_current(d), gp, go0, gop, tg, w ? (const T *)nn_data(w) : NULL, w ? w->strides[0] : 0,
                                                              (const T *)nn_data(total), L, red, a->i[1], err);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

nn_status nll_loss_backward(const nn_kargs *a)
{
    nn_tensor *gi = a->out[0], *go = a->in[0], *t = a->in[1], *total = a->in[2], *w = a->nin > 3 ? a->in[3] : NULL;
    nn_cuda_device *d = NULL;
    int64_t *err = NULL;
    if (check_common(a, gi, w, &d, &err)) return nn_last_status();
    if (total->dtype != gi->dtype || on_host(total))
        return nn_error(NN_ERR_DTYPE, "nll_loss_backward: total_weight must be a %s tensor on the GPU", nn_dtype_name(gi->dtype));
    Target tg;
    int64_t C = gi->shape[gi->ndim == 1 ? 0 : 1];
    if (target_of(t, C, a->i[1], &tg)) return nn_last_status();
    /* a grad_output of another dtype on the GPU is cast; a 0-dim CPU one is read on the host */
    nn_tensor *g = on_host(go) ? nn_retain(go) : nn_to_dtype(go, gi->dtype);
    if (!g) return nn_last_status();
    Lay L = lay_of(gi, t, a->i[0] == NONE ? g : NULL);
    nn_status st = NN_OK;
    switch (gi->dtype) {
    case NN_F32: st = bwd_launch<float>(a, g, d, err, L, tg); break;
    case NN_F64: st = bwd_launch<double>(a, g, d, err, L, tg); break;
    case NN_F16: st = bwd_launch<__half>(a, g, d, err, L, tg); break;
    default: st = bwd_launch<__nv_bfloat16>(a, g, d, err, L, tg); break;
    }
    nn_release(g);
    return st;
}

template <typename T>
nn_status ce_bwd_launch(const nn_kargs *a, nn_cuda_device *d, int64_t *err, const Lay &L, const Target &tg)
{
    nn_tensor *gi = a->out[0], *go = a->in[0], *w = a->nin > 5 ? a->in[5] : NULL;
    Scalar<T> go0{NULL, 0};
    const T *gop = NULL;
    if (on_host(go)) go0.host = nn_load_f64(nn_data(go), go->dtype); /* a 0-dim CPU grad */
    else if (a->i[0] == NONE) gop = (const T *)nn_data(go);
    else go0.p = (const T *)nn_data(go);
    nn_launch<ce_bwd<T>>(nn_cuda_blocks(L.np * L.C), 256, nn_cuda_current(d), (T *)nn_data(gi), go0, gop, (const T *)nn_data(a->in[1]), tg,
                                                                    (const T *)nn_data(a->in[3]), w ? (const T *)nn_data(w) : NULL,
                                                                    w ? w->strides[0] : 0, (const T *)nn_data(a->in[4]), L, (int)a->i[0], a->i[1], err);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

/* in0 grad_out (the logits' dtype; contiguous for reduction none), in1 logits, in2 target, in3 logsumexp,
 * in4 total weight, in5 class weights; out grad_input, contiguous as the logits */
nn_status cross_entropy_backward(const nn_kargs *a)
{
    nn_tensor *gi = a->out[0], *x = a->in[1], *t = a->in[2], *lse = a->in[3], *total = a->in[4], *w = a->nin > 5 ? a->in[5] : NULL;
    nn_cuda_device *d = NULL;
    int64_t *err = NULL;
    if (check_common(a, gi, w, &d, &err)) return nn_last_status();
    for (const nn_tensor *o : {x, lse, total})
        if (o->dtype != gi->dtype || on_host(o))
            return nn_error(NN_ERR_DTYPE, "cross_entropy_backward: the saved tensors must be %s tensors on the GPU", nn_dtype_name(gi->dtype));
    if (!on_host(a->in[0]) && a->in[0]->dtype != gi->dtype)
        return nn_error(NN_ERR_DTYPE, "cross_entropy_backward: grad_output must be %s", nn_dtype_name(gi->dtype));
    Lay L = lay_of(x, t, lse);
    Target tg;
    if (target_of(t, L.C, a->i[1], &tg)) return nn_last_status();
    if (L.np == 0 || L.C == 0) return NN_OK;
    NN_DISPATCH_FLOATS(gi->dtype, a, return ce_bwd_launch<scalar_t>(a, d, err, L, tg));
    return NN_OK;
}

} // namespace

extern "C" nn_status nn_cuda_nll_loss(const nn_kargs *a) { return loss_forward(a, false); }
extern "C" nn_status nn_cuda_cross_entropy(const nn_kargs *a) { return loss_forward(a, true); }
extern "C" nn_status nn_cuda_cross_entropy_backward(const nn_kargs *a) { return cross_entropy_backward(a); }
extern "C" nn_status nn_cuda_nll_loss_backward(const nn_kargs *a) { return nll_loss_backward(a); }
