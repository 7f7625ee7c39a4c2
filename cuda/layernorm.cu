/* CUDA layer norm over the last dim of a dense [M, E] x (ops.def layer_norm, engine/layernorm.c).
 * Forward: one warp per row, float accumulation (double for float64): the mean, then the variance
 * about it (two exact passes), then y with the affine; rows of up to 512 16-byte vectors are held in
 * registers, longer or misaligned ones re-read from the caches. Backward: dx
 * one warp per row from the two row sums of g*w and g*w*xhat; dw and db are column sums, over
 * tiles of rows into float partials and then, per column, over the tiles in a fixed order (the
 * same bits every run: no atomics). */
#include "kernels.cuh"
#include "softmax_math.cuh"

namespace {

using nn_smx::from_acc;
using nn_smx::group_sum;
using nn_smx::load_vec;
using nn_smx::store_vec;
using nn_smx::to_acc;

constexpr int ROWS = 4; /* warps (rows) per block */

template <typename T> struct AccOf { typedef float type; };
template <> struct AccOf<double> { typedef double type; };

/* mean and rstd are of the accumulation type */
template <typename T>
__global__ void fwd(const T *__restrict__ x, const T *__restrict__ w, const T *__restrict__ b, T *__restrict__ y,
                    typename AccOf<T>::type *mean, typename AccOf<T>::type *rstd, int64_t M, int64_t E, double eps)
{
    typedef typename AccOf<T>::type A;
    int64_t row = (int64_t)blockIdx.x * ROWS + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= M) return;
    const T *xr = x + row * E;
    A s = 0;
    for (int64_t i = lane; i < E; i += 32) s += to_acc<A>(xr[i]);
    A mu = group_sum<A, 32>(s) / (A)E, v = 0;
    for (int64_t i = lane; i < E; i += 32) {
        A d = to_acc<A>(xr[i]) - mu;
        v += d * d;
    }
    A rs = (A)1 / sqrt(group_sum<A, 32>(v) / (A)E + (A)eps);
    T *yr = y + row * E;
    for (int64_t i = lane; i < E; i += 32) {
        A o = (to_acc<A>(xr[i]) - mu) * rs;
        if (w) o *= to_acc<A>(w[i]);
        if (b) o += to_acc<A>(b[i]);
        yr[i] = from_acc<T>(o);
    }
    if (lane == 0) mean[row] = mu, rstd[row] = rs;
}

/* ---- rows held in registers: lane l holds the K vectors of V values at (k*32 + l)*V, where
 * E % V == 0 and every operand is 16-byte aligned (vec_ok) ---- */
template <typename T> __host__ __device__ constexpr int vec_width() { return 16 / sizeof(T); }

template <typename T, int K>
__global__ void fwd_vec(const T *__restrict__ x, const T *__restrict__ w, const T *__restrict__ b, T *__restrict__ y,
                        typename AccOf<T>::type *mean, typename AccOf<T>::type *rstd, int64_t M, int64_t E, double eps)
{
    typedef typename AccOf<T>::type A;
    constexpr int V = vec_width<T>();
    int64_t row = (int64_t)blockIdx.x * ROWS + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= M) return;
    A v[K * V], s = 0;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int64_t i = ((int64_t)k * 32 + lane) * V;
        if (i < E) load_vec<T, A, V>(v + k * V, x + row * E, i);
#pragma unroll
        for (int j = 0; j < V; j++) s += i < E ? v[k * V + j] : (A)0;
    }
    A mu = group_sum<A, 32>(s) / (A)E, var = 0;
#pragma unroll
    for (int k = 0; k < K; k++)
        if (((int64_t)k * 32 + lane) * V < E)
#pragma unroll
            for (int j = 0; j < V; j++) var += (v[k * V + j] - mu) * (v[k * V + j] - mu);
    A rs = (A)1 / sqrt(group_sum<A, 32>(var) / (A)E + (A)eps);
#pragma unroll
    for (int k = 0; k < K; k++) {
        int64_t i = ((int64_t)k * 32 + lane) * V;
        if (i >= E) continue;
        A wv[V], bv[V];
        if (w) load_vec<T, A, V>(wv, w, i);
        if (b) load_vec<T, A, V>(bv, b, i);
#pragma unroll
        for (int j = 0; j < V; j++) {
            A o = (v[k * V + j] - mu) * rs;
            if (w) o *= wv[j];
            if (b) o += bv[j];
            v[k * V + j] = o;
        }
        store_vec<T, A, V>(y + row * E, i, v + k * V);
    }
    if (lane == 0) mean[row] = mu, rstd[row] = rs;
}

template <typename T, int K>
__global__ void bwd_dx_vec(const T *__restrict__ g, const T *__restrict__ x, const typename AccOf<T>::type *mean,
                           const typename AccOf<T>::type *rstd, const T *__restrict__ w, T *__restrict__ dx, int64_t M, int64_t E)
{
    typedef typename AccOf<T>::type A;
    constexpr int V = vec_width<T>();
    int64_t row = (int64_t)blockIdx.x * ROWS + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= M) return;
    A gw[K * V], xh[K * V], mu = mean[row], rs = rstd[row], s1 = 0, s2 = 0;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int64_t i = ((int64_t)k * 32 + lane) * V;
        if (i >= E) continue;
        A wv[V];
        load_vec<T, A, V>(gw + k * V, g + row * E, i);
        load_vec<T, A, V>(xh + k * V, x + row * E, i);
        if (w) load_vec<T, A, V>(wv, w, i);
#pragma unroll
        for (int j = 0; j < V; j++) {
            if (w) gw[k * V + j] *= wv[j];
            xh[k * V + j] = (xh[k * V + j] - mu) * rs;
            s1 += gw[k * V + j];
            s2 += gw[k * V + j] * xh[k * V + j];
        }
    }
    s1 = group_sum<A, 32>(s1) / (A)E;
    s2 = group_sum<A, 32>(s2) / (A)E;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int64_t i = ((int64_t)k * 32 + lane) * V;
        if (i >= E) continue;
#pragma unroll
        for (int j = 0; j < V; j++) gw[k * V + j] = rs * (gw[k * V + j] - s1 - xh[k * V + j] * s2);
        store_vec<T, A, V>(dx + row * E, i, gw + k * V);
    }
}

/* the register path's vectors per lane for a row of E (0: the row does not fit, or is not aligned) */
template <typename T> int vec_k(int64_t E, const nn_tensor *const *ops, int n)
{
    constexpr int V = vec_width<T>();
    if (E % V) return 0;
    for (int k = 0; k < n; k++)
        if (ops[k] && (uintptr_t)nn_data(ops[k]) % 16) return 0;
    int64_t per_lane = (E / V + 31) / 32;
    for (int k = 1; k <= 16; k *= 2)
        if (per_lane <= k) return k;
    return 0;
}

/* dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w */
template <typename T>
__global__ void bwd_dx(const T *__restrict__ g, const T *__restrict__ x, const typename AccOf<T>::type *mean,
                       const typename AccOf<T>::type *rstd, const T *__restrict__ w, T *__restrict__ dx, int64_t M, int64_t E)
{
    typedef typename AccOf<T>::type A;
    int64_t row = (int64_t)blockIdx.x * ROWS + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= M) return;
    const T *gr = g + row * E, *xr = x + row * E;
    A mu = mean[row], rs = rstd[row], s1 = 0, s2 = 0;
    for (int64_t i = lane; i < E; i += 32) {
        A gw = to_acc<A>(gr[i]) * (w ? to_acc<A>(w[i]) : (A)1);
        s1 += gw;
        s2 += gw * (to_acc<A>(xr[i]) - mu) * rs;
    }
    s1 = group_sum<A, 32>(s1) / (A)E;
    s2 = group_sum<A, 32>(s2) / (A)E;
    T *o = dx + row * E;
    for (int64_t i = lane; i < E; i += 32) {
        A gw = to_acc<A>(gr[i]) * (w ? to_acc<A>(w[i]) : (A)1);
        o[i] = from_acc<T>(rs * (gw - s1 - (to_acc<A>(xr[i]) - mu) * rs * s2));
    }
}

/* partial[t][e] (t: this block's tile of rows) of sum g * xhat (pw) and of sum g (pb); block 32 x 8 */
template <typename T>
__global__ void bwd_partial(const T *__restrict__ g, const T *__restrict__ x, const typename AccOf<T>::type *mean,
                            const typename AccOf<T>::type *rstd, typename AccOf<T>::type *pw, typename AccOf<T>::type *pb, int64_t M,
                            int64_t E, int64_t rows_per_tile)
{
    typedef typename AccOf<T>::type A;
    __shared__ A sw[8][33], sb[8][33];
    int64_t col = (int64_t)blockIdx.x * 32 + threadIdx.x;
    int64_t r0 = (int64_t)blockIdx.y * rows_per_tile, r1 = r0 + rows_per_tile < M ? r0 + rows_per_tile : M;
    A aw = 0, ab = 0;
    if (col < E)
        for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
            A gv = to_acc<A>(g[r * E + col]);
            aw += gv * (to_acc<A>(x[r * E + col]) - mean[r]) * rstd[r];
            ab += gv;
        }
    sw[threadIdx.y][threadIdx.x] = aw, sb[threadIdx.y][threadIdx.x] = ab;
    __syncthreads();
    if (threadIdx.y == 0 && col < E) {
        for (int k = 1; k < 8; k++) aw += sw[k][threadIdx.x], ab += sb[k][threadIdx.x];
        pw[blockIdx.y * E + col] = aw, pb[blockIdx.y * E + col] = ab;
    }
}

template <typename T>
__global__ void bwd_columns(const typename AccOf<T>::type *pw, const typename AccOf<T>::type *pb, T *dw, T *db, int64_t E, int tiles)
{
    typedef typename AccOf<T>::type A;
    int64_t col = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= E) return;
    A aw = 0, ab = 0;
    for (int t = 0; t < tiles; t++) aw += pw[t * E + col], ab += pb[t * E + col];
    if (dw) dw[col] = from_acc<T>(aw);
    if (db) db[col] = from_acc<T>(ab);
}

template <typename T> const T *opt(const nn_tensor *t) { return t ? (const T *)nn_data(t) : nullptr; }

/* every operand dense on the output's device; stats of the accumulation dtype */
nn_status check(const nn_kargs *a, int n, nn_dtype dt)
{
    for (int k = 0; k < n; k++) {
        const nn_tensor *t = a->in[k];
        if (!t) continue;
        if (t->storage->device.type != NN_CUDA || t->storage->device.index != nn_cuda_index(a))
            return nn_error(NN_ERR_DEVICE, "%s: expected all tensors on one device", nn_op_name(a->op));
        if (!nn_is_contiguous(t)) return nn_error(NN_ERR_ARG, "%s: expected contiguous operands", nn_op_name(a->op));
    }
    return nn_dtype_is_float(dt) ? NN_OK : nn_not_implemented(a, dt);
}

/* K0 (the looping kernel) or, for k vectors per lane (vec_k), the register kernel Kk */
template <auto K0, auto K1, auto K2, auto K4, auto K8, auto K16, typename... Args>
void launch_by_k(int k, dim3 grid, cudaStream_t s, Args... args)
{
    switch (k) {
    case 1: nn_launch<K1>(grid, dim3(32 * ROWS), s, args...); break;
    case 2: nn_launch<K2>(grid, dim3(32 * ROWS), s, args...); break;
    case 4: nn_launch<K4>(grid, dim3(32 * ROWS), s, args...); break;
    case 8: nn_launch<K8>(grid, dim3(32 * ROWS), s, args...); break;
    case 16: nn_launch<K16>(grid, dim3(32 * ROWS), s, args...); break;
    default: nn_launch<K0>(grid, dim3(32 * ROWS), s, args...); break;
    }
}
template <typename T, typename... Args> void launch_fwd(int k, dim3 grid, cudaStream_t s, Args... args)
{
    launch_by_k<fwd<T>, fwd_vec<T, 1>, fwd_vec<T, 2>, fwd_vec<T, 4>, fwd_vec<T, 8>, fwd_vec<T, 16>>(k, grid, s, args...);
}
template <typename T, typename... Args> void launch_bwd_dx(int k, dim3 grid, cudaStream_t s, Args... args)
{
    launch_by_k<bwd_dx<T>, bwd_dx_vec<T, 1>, bwd_dx_vec<T, 2>, bwd_dx_vec<T, 4>, bwd_dx_vec<T, 8>, bwd_dx_vec<T, 16>>(k, grid, s, args...);
}

} // namespace

/* in0 x [M, E], in1 weight, in2 bias -> out0 y, out1 mean [M], out2 rstd [M] */
extern "C" nn_status nn_cuda_layer_norm(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *y = a->out[0];
    nn_status st = check(a, 3, y->dtype);
    if (st) return st;
    int64_t E = x->shape[x->ndim - 1], M = E ? nn_numel(x) / E : 0;
    if (!M || !E) return NN_OK;
    nn_cuda_device *d = nn_cuda_dev(nn_cuda_index(a));
    if (!d) return nn_last_status();
    cudaStream_t s = nn_cuda_current(d);
    NN_DISPATCH_FLOATS(y->dtype, a, {
        typedef typename AccOf<scalar_t>::type A;
        const nn_tensor *ops[4] = {x, a->in[1], a->in[2], y};
        launch_fwd<scalar_t>(vec_k<scalar_t>(E, ops, 4), dim3((unsigned)((M + ROWS - 1) / ROWS)), s, (const scalar_t *)nn_data(x),
                             opt<scalar_t>(a->in[1]), opt<scalar_t>(a->in[2]), (scalar_t *)nn_data(y), (A *)nn_data(a->out[1]),
                             (A *)nn_data(a->out[2]), M, E, a->f[0]);
    });
    NN_CHECK_LAUNCH();
    return NN_OK;
}

/* in0 g, in1 x, in2 mean, in3 rstd, in4 weight -> out0 dx, out1 dw, out2 db (any output may be NULL) */
extern "C" nn_status nn_cuda_layer_norm_backward(const nn_kargs *a)
{
    nn_tensor *x = a->in[1];
    nn_status st = check(a, 5, x->dtype);
    if (st) return st;
    int64_t E = x->shape[x->ndim - 1], M = E ? nn_numel(x) / E : 0;
    if (!M || !E) return NN_OK;
    int dev = x->storage->device.index;
    nn_cuda_device *d = nn_cuda_dev(dev);
    if (!d) return nn_last_status();
    cudaStream_t s = nn_cuda_current(d);
    /* column sums: tiles of at least 64 rows, at most 64 tiles */
    int64_t per = (M + 63) / 64 > 64 ? (M + 63) / 64 : 64;
    int tiles = (int)((M + per - 1) / per);
    NN_DISPATCH_FLOATS(x->dtype, a, {
        typedef typename AccOf<scalar_t>::type A;
        const scalar_t *g = (const scalar_t *)nn_data(a->in[0]), *xp = (const scalar_t *)nn_data(x);
        const A *mean = (const A *)nn_data(a->in[2]), *rstd = (const A *)nn_data(a->in[3]);
        if (a->out[0]) {
            const nn_tensor *ops[3] = {a->in[0], x, a->in[4]};
            launch_bwd_dx<scalar_t>(vec_k<scalar_t>(E, ops, 3), dim3((unsigned)((M + ROWS - 1) / ROWS)), s, g, xp, mean, rstd,
                                    opt<scalar_t>(a->in[4]), (scalar_t *)nn_data(a->out[0]), M, E);
        }
        if (a->out[1] || a->out[2]) {
            A *part = (A *)nn_cuda_alloc(dev, sizeof(A) * 2 * (size_t)tiles * (size_t)E);
            if (!part) return nn_last_status();
            nn_launch<bwd_partial<scalar_t>>(dim3((unsigned)((E + 31) / 32), (unsigned)tiles), dim3(32, 8), s, g, xp, mean, rstd, part,
                                             part + (size_t)tiles * E, M, E, per);
            nn_launch<bwd_columns<scalar_t>>(dim3((unsigned)((E + 255) / 256)), dim3(256), s, part, part + (size_t)tiles * E,
                                             a->out[1] ? (scalar_t *)nn_data(a->out[1]) : nullptr,
                                             a->out[2] ? (scalar_t *)nn_data(a->out[2]) : nullptr, E, tiles);
            nn_cuda_free(dev, part);
        }
    });
    NN_CHECK_LAUNCH();
    return NN_OK;
}
