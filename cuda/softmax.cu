/* CUDA softmax, log_softmax and their backward kernels along dim i[0]
 * (engine/cpu/softmax.c's formulas; float accumulation, double for float64).
 *
 * Every index but the one along dim picks a row; row r's base offset per operand
 * comes from decomposing r over the other dims. Three mappings:
 *  - sub-warp per row (n <= 1024): W lanes (4..32) hold the row in registers,
 *    read and written as 16-byte vectors where the layout allows; max and sum
 *    are shuffle reductions. Used when the dim is contiguous, and for strided
 *    dims with few rows.
 *  - block per row (n > 1024): an online (max, sum) pass, merged across the
 *    block, then a write pass; any stride along dim.
 *  - thread per row (a strided dim with many rows, e.g. softmax over the
 *    channels of NCHW): neighbouring threads read neighbouring columns, so
 *    every access is coalesced.
 * Forward inputs of another dtype than the output (softmax(x, dtype=...)) are
 * read through a runtime dtype switch (Dyn). */
#include <math.h>

#include <type_traits>

#include "kernels.cuh"
#include "softmax_math.cuh"

namespace {

using namespace nn_smx;

constexpr int MAX_OPS = 3;

struct Rows {
    int m; /* dims other than dim */
    int64_t shape[NN_MAX_DIMS];
    int64_t st[MAX_OPS][NN_MAX_DIMS]; /* element strides of those dims, per operand */
    int64_t ds[MAX_OPS];              /* element stride along dim */
    int64_t n, nrows;
};

template <int NOPS>
__device__ __forceinline__ void row_base(const Rows &g, int64_t r, int64_t *off)
{
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] = 0;
    for (int d = g.m - 1; d >= 0; d--) {
        int64_t q = r / g.shape[d], i = r - q * g.shape[d];
#pragma unroll
        for (int k = 0; k < NOPS; k++) off[k] += i * g.st[k][d];
        r = q;
    }
}

/* ---- element access in the compute type C ---- */
struct Dyn {}; /* an input read by its runtime dtype */

template <typename Tin, typename C>
__device__ __forceinline__ C load(const char *base, int64_t i, int dt)
{
    return to_acc<C>(((const Tin *)base)[i]);
}
template <>
__device__ __forceinline__ float load<Dyn, float>(const char *base, int64_t i, int dt)
{
    switch (dt) {
    case NN_F32: return ((const float *)base)[i];
    case NN_F64: return (float)((const double *)base)[i];
    case NN_F16: return __half2float(((const __half *)base)[i]);
    case NN_BF16: return __bfloat162float(((const __nv_bfloat16 *)base)[i]);
    case NN_I64: return (float)((const int64_t *)base)[i];
    case NN_I32: return (float)((const int32_t *)base)[i];
    case NN_I16: return ((const int16_t *)base)[i];
    case NN_I8: return ((const int8_t *)base)[i];
    case NN_U8: return ((const uint8_t *)base)[i];
    default: return ((const uint8_t *)base)[i] != 0;
    }
}
template <>
__device__ __forceinline__ double load<Dyn, double>(const char *base, int64_t i, int dt)
{
    switch (dt) {
    case NN_F32: return ((const float *)base)[i];
    case NN_F64: return ((const double *)base)[i];
    case NN_F16: return __half2float(((const __half *)base)[i]);
    case NN_BF16: return __bfloat162float(((const __nv_bfloat16 *)base)[i]);
    case NN_I64: return (double)((const int64_t *)base)[i];
    case NN_I32: return ((const int32_t *)base)[i];
    case NN_I16: return ((const int16_t *)base)[i];
    case NN_I8: return ((const int8_t *)base)[i];
    case NN_U8: return ((const uint8_t *)base)[i];
    default: return ((const uint8_t *)base)[i] != 0;
    }
}

/* ---- sub-warp per row: W lanes, K vectors of V values per lane ----
 * Lane l holds elements (k*W + l)*V + j. V > 1 only where every operand is
 * unit-stride along dim, n % V == 0 and each row starts 16-byte aligned, so a
 * vector is either wholly in the row or wholly past its end (load_vec). */
template <typename Tin, typename T, int W, int K, int V>
__global__ void fwd_warp(T *y, const char *x, Rows g, int dtin, bool log_)
{
    typedef typename nn_acc<T>::type C;
    constexpr int E = K * V;
    int lane = threadIdx.x % W;
    int64_t row = (int64_t)blockIdx.x * (blockDim.x / W) + threadIdx.x / W;
    bool live = row < g.nrows;
    int64_t off[2] = {0, 0};
    if (live) row_base<2>(g, row, off);
    C v[E], m = ninf<C>();
#pragma unroll
    for (int k = 0; k < K; k++) {
        int64_t i = ((int64_t)k * W + lane) * V;
        if (!live || i >= g.n) {
#pragma unroll
            for (int j = 0; j < V; j++) v[k * V + j] = ninf<C>();
        } else if constexpr (V == 1) {
            v[k] = load<Tin, C>(x, off[1] + i * g.ds[1], dtin);
        } else {
            load_vec<Tin, C, V>(v + k * V, (const Tin *)x + off[1], i);
        }
#pragma unroll
        for (int j = 0; j < V; j++) m = vmax(m, v[k * V + j]);
    }
    m = group_max<C, W>(m);
    C s = 0;
#pragma unroll
    for (int k = 0; k < K; k++) {
        if (((int64_t)k * W + lane) * V >= g.n) continue;
#pragma unroll
        for (int j = 0; j < V; j++) {
            C t = ex(v[k * V + j] - m);
            s += t;
            if (!log_) v[k * V + j] = t;
        }
    }
    s = group_sum<C, W>(s);
    if (!live) return;
    C lse = lg(s), inv = (C)1 / s;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int64_t i = ((int64_t)k * W + lane) * V;
        if (i >= g.n) continue;
#pragma unroll
        for (int j = 0; j < V; j++) v[k * V + j] = log_ ? (v[k * V + j] - m) - lse : v[k * V + j] * inv;
        if constexpr (V == 1) y[off[0] + i * g.ds[0]] = from_acc<T>(v[k]);
        else store_vec<T, C, V>(y + off[0], i, v + k * V);
    }
}

/* softmax: gi = (g - sum(g*y)) * y;  log_softmax: gi = g - exp(y) * sum(g) */
template <typename T, int W, int K, int V>
__global__ void bwd_warp(T *gi, const T *go, const T *y, Rows g, bool log_)
{
    typedef typename nn_acc<T>::type C;
    constexpr int E = K * V;
    int lane = threadIdx.x % W;
    int64_t row = (int64_t)blockIdx.x * (blockDim.x / W) + threadIdx.x / W;
    bool live = row < g.nrows;
    int64_t off[3] = {0, 0, 0};
    if (live) row_base<3>(g, row, off);
    C gv[E], yv[E], s = 0;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int64_t i = ((int64_t)k * W + lane) * V;
        if (live && i < g.n) {
            if constexpr (V == 1) {
                gv[k] = to_acc<C>(go[off[1] + i * g.ds[1]]);
                yv[k] = to_acc<C>(y[off[2] + i * g.ds[2]]);
            } else {
                load_vec<T, C, V>(gv + k * V, go + off[1], i);
                load_vec<T, C, V>(yv + k * V, y + off[2], i);
            }
        } else {
#pragma unroll
            for (int j = 0; j < V; j++) gv[k * V + j] = yv[k * V + j] = (C)0;
        }
#pragma unroll
        for (int j = 0; j < V; j++) s += log_ ? gv[k * V + j] : gv[k * V + j] * yv[k * V + j];
    }
    s = group_sum<C, W>(s);
    if (!live) return;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int64_t i = ((int64_t)k * W + lane) * V;
        if (i >= g.n) continue;
        C o[V];
#pragma unroll
        for (int j = 0; j < V; j++) {
            C a = gv[k * V + j], b = yv[k * V + j];
            o[j] = log_ ? a - ex(b) * s : (a - s) * b;
        }
        if constexpr (V == 1) gi[off[0] + i * g.ds[0]] = from_acc<T>(o[0]);
        else store_vec<T, C, V>(gi + off[0], i, o);
    }
}

/* ---- block per row ---- */
constexpr int BLOCK = 512;

template <typename C> __device__ MS<C> block_ms(MS<C> a)
{
    __shared__ C sm[BLOCK / 32], ss[BLOCK / 32];
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
        MS<C> b{__shfl_xor_sync(0xffffffffu, a.m, o), __shfl_xor_sync(0xffffffffu, a.s, o)};
        a = ms_merge(a, b);
    }
    int w = threadIdx.x / 32, nw = blockDim.x / 32;
    __syncthreads(); /* the buffers may still be read from a previous call */
    if (threadIdx.x % 32 == 0) sm[w] = a.m, ss[w] = a.s;
    __syncthreads();
    MS<C> r{sm[0], ss[0]};
    for (int k = 1; k < nw; k++) r = ms_merge(r, MS<C>{sm[k], ss[k]});
    return r;
}

template <typename C> __device__ C block_sum(C v)
{
    __shared__ C sh[BLOCK / 32];
    v = group_sum<C, 32>(v);
    int w = threadIdx.x / 32, nw = blockDim.x / 32;
    __syncthreads();
    if (threadIdx.x % 32 == 0) sh[w] = v;
    __syncthreads();
    C r = sh[0];
    for (int k = 1; k < nw; k++) r += sh[k];
    return r;
}

template <typename Tin, typename T>
__global__ void fwd_block(T *y, const char *x, Rows g, int dtin, bool log_)
{
    typedef typename nn_acc<T>::type C;
    for (int64_t row = blockIdx.x; row < g.nrows; row += gridDim.x) {
        int64_t off[2];
        row_base<2>(g, row, off);
        MS<C> a{ninf<C>(), (C)0};
        for (int64_t i = threadIdx.x; i < g.n; i += blockDim.x) ms_add(a, load<Tin, C>(x, off[1] + i * g.ds[1], dtin));
        a = block_ms(a);
        ms_final(a);
        C lse = lg(a.s), inv = (C)1 / a.s;
        for (int64_t i = threadIdx.x; i < g.n; i += blockDim.x) {
            C v = load<Tin, C>(x, off[1] + i * g.ds[1], dtin) - a.m;
            y[off[0] + i * g.ds[0]] = from_acc<T>(log_ ? v - lse : ex(v) * inv);
        }
    }
}

template <typename T>
__global__ void bwd_block(T *gi, const T *go, const T *y, Rows g, bool log_)
{
    typedef typename nn_acc<T>::type C;
    for (int64_t row = blockIdx.x; row < g.nrows; row += gridDim.x) {
        int64_t off[3];
        row_base<3>(g, row, off);
        C s = 0;
        for (int64_t i = threadIdx.x; i < g.n; i += blockDim.x) {
            C gv = to_acc<C>(go[off[1] + i * g.ds[1]]);
            s += log_ ? gv : gv * to_acc<C>(y[off[2] + i * g.ds[2]]);
        }
        s = block_sum(s);
        for (int64_t i = threadIdx.x; i < g.n; i += blockDim.x) {
            C gv = to_acc<C>(go[off[1] + i * g.ds[1]]), yv = to_acc<C>(y[off[2] + i * g.ds[2]]);
            gi[off[0] + i * g.ds[0]] = from_acc<T>(log_ ? gv - ex(yv) * s : (gv - s) * yv);
        }
    }
}

/* ---- thread per row (strided dim) ---- */
template <typename Tin, typename T>
__global__ void fwd_thread(T *y, const char *x, Rows g, int dtin, bool log_)
{
    typedef typename nn_acc<T>::type C;
    for (int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; row < g.nrows; row += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        row_base<2>(g, row, off);
        MS<C> a{ninf<C>(), (C)0};
        for (int64_t i = 0; i < g.n; i++) ms_add(a, load<Tin, C>(x, off[1] + i * g.ds[1], dtin));
        ms_final(a);
        C lse = lg(a.s), inv = (C)1 / a.s;
        for (int64_t i = 0; i < g.n; i++) {
            C v = load<Tin, C>(x, off[1] + i * g.ds[1], dtin) - a.m;
            y[off[0] + i * g.ds[0]] = from_acc<T>(log_ ? v - lse : ex(v) * inv);
        }
    }
}

template <typename T>
__global__ void bwd_thread(T *gi, const T *go, const T *y, Rows g, bool log_)
{
    typedef typename nn_acc<T>::type C;
    for (int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; row < g.nrows; row += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[3];
        row_base<3>(g, row, off);
        C s = 0;
        for (int64_t i = 0; i < g.n; i++) {
            C gv = to_acc<C>(go[off[1] + i * g.ds[1]]);
            s += log_ ? gv : gv * to_acc<C>(y[off[2] + i * g.ds[2]]);
        }
        for (int64_t i = 0; i < g.n; i++) {
            C gv = to_acc<C>(go[off[1] + i * g.ds[1]]), yv = to_acc<C>(y[off[2] + i * g.ds[2]]);
            gi[off[0] + i * g.ds[0]] = from_acc<T>(log_ ? gv - ex(yv) * s : (gv - s) * yv);
        }
    }
}

/* ---- launchers ---- */
enum Path { WARP, BLOCKP, THREADP };

Rows rows_of(int nops, nn_tensor *const *t, int dim)
{
    Rows g{};
    int nd = t[0]->ndim;
    g.n = nd ? t[0]->shape[dim] : 1;
    g.nrows = 1;
    for (int k = 0; k < nops; k++) g.ds[k] = nd ? t[k]->strides[dim] : 1;
    for (int d = 0; d < nd; d++) {
        if (d == dim || t[0]->shape[d] == 1) continue;
        g.shape[g.m] = t[0]->shape[d];
        for (int k = 0; k < nops; k++) g.st[k][g.m] = t[k]->strides[d];
        g.nrows *= t[0]->shape[d];
        g.m++;
    }
    return g;
}

Path choose(const Rows &g, int nops)
{
    bool unit = g.n == 1;
    if (!unit) {
        unit = true;
        for (int k = 0; k < nops; k++) unit = unit && g.ds[k] == 1;
    }
    if (!unit && g.nrows >= 2048) return THREADP;
    return g.n <= 1024 ? WARP : BLOCKP;
}

unsigned grid_of(int64_t n) { return (unsigned)(n < 1 ? 1 : n > (1 << 30) ? (1 << 30) : n); }

/* body.go<W, K, V>() for the lanes per row W and vectors per lane K that fit
 * n values in vectors of V; with vectors, small rows share a warp so that each
 * lane keeps two loads in flight */
template <int V, typename B> void pick_wk(int64_t n, B &&body)
{
    int64_t nv = n / V;
    if constexpr (V == 1) {
        if (nv <= 4) body.template go<4, 1, 1>();
        else if (nv <= 8) body.template go<8, 1, 1>();
        else if (nv <= 16) body.template go<16, 1, 1>();
        else if (nv <= 32) body.template go<32, 1, 1>();
        else if (nv <= 64) body.template go<32, 2, 1>();
        else if (nv <= 128) body.template go<32, 4, 1>();
        else if (nv <= 256) body.template go<32, 8, 1>();
        else if (nv <= 512) body.template go<32, 16, 1>();
        else body.template go<32, 32, 1>();
    } else {
        if (nv <= 4) body.template go<4, 1, V>();
        else if (nv <= 8) body.template go<4, 2, V>();
        else if (nv <= 16) body.template go<8, 2, V>();
        else if (nv <= 32) body.template go<16, 2, V>();
        else if (nv <= 64) body.template go<32, 2, V>();
        else if (nv <= 128) body.template go<32, 4, V>();
        else if (nv <= 256) body.template go<32, 8, V>();
        else body.template go<32, 16, V>();
    }
}

/* 16-byte vectors along dim: unit stride, whole vectors per row, aligned rows */
template <typename T> bool vectorizable(const Rows &g, int nops, nn_tensor *const *t)
{
    constexpr int V = 16 / sizeof(T);
    if (g.n % V) return false;
    for (int k = 0; k < nops; k++) {
        if (g.ds[k] != 1 || (uintptr_t)nn_data(t[k]) % 16) return false;
        for (int d = 0; d < g.m; d++)
            if (g.st[k][d] % V) return false;
    }
    return true;
}

template <typename Tin, typename T> struct FwdWarp {
    T *y;
    const char *x;
    const Rows &g;
    int dtin;
    bool log_;
    cudaStream_t s;
    template <int W, int K, int V> void go()
    {
        constexpr int threads = 128;
        nn_launch<fwd_warp<Tin, T, W, K, V>>(grid_of((g.nrows + threads / W - 1) / (threads / W)), threads, s, y, x, g, dtin, log_);
    }
};

template <typename T> struct BwdWarp {
    T *gi;
    const T *go_, *y;
    const Rows &g;
    bool log_;
    cudaStream_t s;
    template <int W, int K, int V> void go()
    {
        constexpr int threads = 128;
        nn_launch<bwd_warp<T, W, K, V>>(grid_of((g.nrows + threads / W - 1) / (threads / W)), threads, s, gi, go_, y, g, log_);
    }
};

template <typename Tin, typename T>
void launch_fwd(Path p, bool vec, T *y, const char *x, const Rows &g, int dtin, bool log_, cudaStream_t s)
{
    switch (p) {
    case WARP:
        if constexpr (!std::is_same<Tin, Dyn>::value) {
            if (vec) {
                pick_wk<16 / sizeof(T)>(g.n, FwdWarp<Tin, T>{y, x, g, dtin, log_, s});
                break;
            }
        }
        pick_wk<1>(g.n, FwdWarp<Tin, T>{y, x, g, dtin, log_, s});
        break;
    case BLOCKP: nn_launch<fwd_block<Tin, T>>(grid_of(g.nrows), BLOCK, s, y, x, g, dtin, log_); break;
    default: nn_launch<fwd_thread<Tin, T>>(nn_cuda_blocks(g.nrows, 128), 128, s, y, x, g, dtin, log_); break;
    }
}

/* A 0-dim CPU operand (allowed by nn_dispatch) is copied to the device first. */
nn_tensor *on_device(nn_tensor *t, nn_device d)
{
    return t->storage->device.type == NN_CUDA ? nn_retain(t) : nn_to_device(t, d);
}

nn_status forward(const nn_kargs *a, bool log_)
{
    nn_tensor *y = a->out[0];
    if (!nn_dtype_is_float(y->dtype)) return nn_not_implemented(a, y->dtype);
    if (nn_numel(y) == 0) return NN_OK;
    int dev = nn_cuda_index(a);
    nn_cuda_device *d = nn_cuda_dev(dev);
    if (!d) return nn_last_status();
    nn_tensor *x = on_device(a->in[0], y->storage->device);
    if (!x) return nn_last_status();
    nn_tensor *ops[2] = {y, x};
    Rows g = rows_of(2, ops, (int)a->i[0]);
    Path p = choose(g, 2);
    const char *xp = (const char *)nn_data(x);
    int dtin = x->dtype;
    bool same = x->dtype == y->dtype;
    NN_DISPATCH_FLOATS(y->dtype, a, {
        if (same) launch_fwd<scalar_t, scalar_t>(p, vectorizable<scalar_t>(g, 2, ops), (scalar_t *)nn_data(y), xp, g, dtin, log_, nn_cuda_current(d));
        else launch_fwd<Dyn, scalar_t>(p, false, (scalar_t *)nn_data(y), xp, g, dtin, log_, nn_cuda_current(d));
    });
    nn_release(x);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

nn_status backward(const nn_kargs *a, bool log_)
{
    nn_tensor *gi = a->out[0];
    if (!nn_dtype_is_float(gi->dtype)) return nn_not_implemented(a, gi->dtype);
    if (a->in[0]->dtype != gi->dtype || a->in[1]->dtype != gi->dtype)
        return nn_error(NN_ERR_DTYPE, "%s: grad_output (%s), output (%s) and grad_input (%s) must have one dtype", nn_op_name(a->op),
                        nn_dtype_name(a->in[0]->dtype), nn_dtype_name(a->in[1]->dtype), nn_dtype_name(gi->dtype));
    if (nn_numel(gi) == 0) return NN_OK;
    int dev = nn_cuda_index(a);
    nn_cuda_device *d = nn_cuda_dev(dev);
    if (!d) return nn_last_status();
    nn_tensor *go = on_device(a->in[0], gi->storage->device), *y = go ? on_device(a->in[1], gi->storage->device) : NULL;
    if (!y) {
        nn_release(go);
        return nn_last_status();
    }
    nn_tensor *ops[3] = {gi, go, y};
    Rows g = rows_of(3, ops, (int)a->i[0]);
    Path p = choose(g, 3);
    cudaStream_t s = nn_cuda_current(d);
    NN_DISPATCH_FLOATS(gi->dtype, a, {
        scalar_t *o = (scalar_t *)nn_data(gi);
        const scalar_t *gp = (const scalar_t *)nn_data(go), *yp = (const scalar_t *)nn_data(y);
        switch (p) {
        case WARP:
            if (vectorizable<scalar_t>(g, 3, ops)) pick_wk<16 / sizeof(scalar_t)>(g.n, BwdWarp<scalar_t>{o, gp, yp, g, log_, s});
            else pick_wk<1>(g.n, BwdWarp<scalar_t>{o, gp, yp, g, log_, s});
            break;
        case BLOCKP: nn_launch<bwd_block<scalar_t>>(grid_of(g.nrows), BLOCK, s, o, gp, yp, g, log_); break;
        default: nn_launch<bwd_thread<scalar_t>>(nn_cuda_blocks(g.nrows, 128), 128, s, o, gp, yp, g, log_); break;
        }
    });
    nn_release(go);
    nn_release(y);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

} // namespace

extern "C" nn_status nn_cuda_softmax(const nn_kargs *a) { return forward(a, false); }
extern "C" nn_status nn_cuda_log_softmax(const nn_kargs *a) { return forward(a, true); }
extern "C" nn_status nn_cuda_softmax_backward(const nn_kargs *a) { return backward(a, false); }
extern "C" nn_status nn_cuda_log_softmax_backward(const nn_kargs *a) { return backward(a, true); }
