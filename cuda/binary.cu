/* CUDA binary elementwise ops: add sub mul div pow remainder fmod maximum minimum fmax fmin
 * nextafter atan2, the comparisons, logical and/or and the bitwise ops, with broadcasting and
 * type promotion.
 *
 * i[0] is the compute dtype (engine/elementwise.c); inputs are cast to it and
 * computed in float (float32/float16/bfloat16), double or wrapping int64, as
 * engine/cpu/elementwise.c does. A 0-dim CPU input (a Lua number) is read on
 * the host and passed by value. Three paths, one launch each:
 *  - dense: every tensor operand contiguous in the output's order and of the
 *    compute dtype; 16-byte vector loads and stores when aligned;
 *  - strided: same dtypes, any strides (broadcast inputs have stride 0);
 *  - generic: mixed dtypes, loads and stores by runtime dtype. */
#include "binary_ops.cuh"
#include "complex_hooks.cuh"

using namespace nnk;

namespace {

/* contiguous operands, N elements per access (16 bytes of T when N > 1) */
template <int OP, typename T, typename O, int N>
__global__ void bin_dense(O *out, Operand<typename ctype<T>::type> a, Operand<typename ctype<T>::type> b, int64_t n, BinP p)
{
    typedef typename ctype<T>::type C;
    C va = a.val, vb = b.val;
    if (a.mode == IN_DEVSCALAR) va = ld(*(const T *)a.p);
    if (b.mode == IN_DEVSCALAR) vb = ld(*(const T *)b.p);
    const bool ta = a.mode == IN_TENSOR, tb = b.mode == IN_TENSOR;
    const T *pa = (const T *)a.p, *pb = (const T *)b.p;
    const int64_t step = (int64_t)gridDim.x * blockDim.x, tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t nv = n / N;
    for (int64_t v = tid; v < nv; v += step) {
        Vec<T, N> xa, xb;
        if (ta) xa = ((const Vec<T, N> *)pa)[v];
        if (tb) xb = ((const Vec<T, N> *)pb)[v];
        Vec<O, N> r;
#pragma unroll
        for (int j = 0; j < N; j++) r.v[j] = st<O>(bop<OP, C>(ta ? ld(xa.v[j]) : va, tb ? ld(xb.v[j]) : vb, p));
        ((Vec<O, N> *)out)[v] = r;
    }
    for (int64_t i = nv * N + tid; i < n; i += step) out[i] = st<O>(bop<OP, C>(ta ? ld(pa[i]) : va, tb ? ld(pb[i]) : vb, p));
}

/* any strides, operands of the compute dtype */
template <int OP, typename T, typename O>
__global__ void bin_strided(char *out, Operand<typename ctype<T>::type> a, Operand<typename ctype<T>::type> b, int64_t n,
                            Geo<3> g, BinP p)
{
    typedef typename ctype<T>::type C;
    const bool ta = a.mode != IN_VALUE, tb = b.mode != IN_VALUE;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[3];
        geo_offsets<3>(g, i, off);
        C x = ta ? ld(*(const T *)(a.p + off[1])) : a.val;
        C y = tb ? ld(*(const T *)(b.p + off[2])) : b.val;
        *(O *)(out + off[0]) = st<O>(bop<OP, C>(x, y, p));
    }
}

/* any dtypes, any strides */
template <int OP, typename C>
__global__ void bin_generic(char *out, int dto, Operand<C> a, Operand<C> b, int64_t n, Geo<3> g, BinP p)
{
    const bool ta = a.mode != IN_VALUE, tb = b.mode != IN_VALUE;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[3];
        geo_offsets<3>(g, i, off);
        C x = ta ? ld_dyn<C>(a.p + off[1], a.dt, p.cdt) : a.val;
        C y = tb ? ld_dyn<C>(b.p + off[2], b.dt, p.cdt) : b.val;
        st_dyn(out + off[0], dto, bop<OP, C>(x, y, p));
    }
}

struct Call {
    const nn_kargs *a;
    nn_iter it;
    int64_t n;
    int cdt;
    BinP p;
    cudaStream_t s;
};

template <typename C> Operand<C> operand(const Call &c, int k)
{
    const nn_tensor *t = c.a->in[k];
    Operand<C> o{c.it.data[k + 1], C(0), IN_TENSOR, t->dtype};
    if (host_scalar(t)) o.mode = IN_VALUE, o.val = host_value<C>(t, c.cdt);
    else if (iter_broadcast(c.it, k + 1)) o.mode = IN_DEVSCALAR;
    return o;
}

template <int OP, typename T> nn_status run_fast(const Call &c)
{
    typedef typename ctype<T>::type C;
    typedef typename std::conditional<is_cmp<OP>(), uint8_t, T>::type O;
    constexpr int N = 16 / sizeof(T);
    Operand<C> x = operand<C>(c, 0), y = operand<C>(c, 1);
    bool dense = iter_dense(c.it, 0) && (x.mode != IN_TENSOR || iter_dense(c.it, 1)) && (y.mode != IN_TENSOR || iter_dense(c.it, 2));
    bool vec = ((uintptr_t)c.it.data[0] % (N * sizeof(O))) == 0 && (x.mode != IN_TENSOR || aligned16(x.p)) &&
               (y.mode != IN_TENSOR || aligned16(y.p));
    if (dense && vec && c.n >= N) {
        nn_launch<bin_dense<OP, T, O, N>>(blocks_for(c.n / N), 256, c.s, (O *)c.it.data[0], x, y, c.n, c.p);
    } else {
        nn_launch<bin_strided<OP, T, O>>(blocks_for(c.n), 256, c.s, c.it.data[0], x, y, c.n, geo_of<3>(c.it), c.p);
    }
    NN_CHECK_LAUNCH();
    return NN_OK;
}

template <int OP, typename C> nn_status run_generic(const Call &c)
{
    if constexpr (!valid<OP, C>()) {
        return nn_not_implemented(c.a, (nn_dtype)c.cdt);
    } else {
        Operand<C> x = operand<C>(c, 0), y = operand<C>(c, 1);
        bin_generic<OP, C><<<blocks_for(c.n), 256, 0, c.s>>>(c.it.data[0], c.a->out[0]->dtype, x, y, c.n, geo_of<3>(c.it), c.p);
        NN_CHECK_LAUNCH();
        return NN_OK;
    }
}

template <int OP> nn_status run_op(const Call &c)
{
    const nn_kargs *a = c.a;
    int cdt = c.cdt;
    bool fast = (int)a->out[0]->dtype == (is_cmp<OP>() ? NN_BOOL : cdt);
    for (int k = 0; k < 2 && fast; k++) fast = host_scalar(a->in[k]) || (int)a->in[k]->dtype == cdt;
    if (fast) {
        switch (cdt) {
        case NN_F32: return run_fast<OP, float>(c);
        case NN_F64: return run_fast<OP, double>(c);
        case NN_F16: return run_fast<OP, __half>(c);
        case NN_BF16: return run_fast<OP, __nv_bfloat16>(c);
        case NN_I64:
            if constexpr (valid<OP, int64_t>()) return run_fast<OP, int64_t>(c);
            break;
        default: break;
        }
    }
    if (cdt == NN_F64) return run_generic<OP, double>(c);
    if (nn_dtype_is_float((nn_dtype)cdt)) return run_generic<OP, float>(c);
    return run_generic<OP, int64_t>(c);
}

/* the ops small_ops.cu's kernel does */
bool queueable(int op)
{
    return op == NN_OP_add || op == NN_OP_sub || op == NN_OP_mul || op == NN_OP_div || op == NN_OP_maximum || op == NN_OP_minimum ||
           op == NN_OP_threshold_backward || op == NN_OP_sigmoid_backward || op == NN_OP_tanh_backward;
}

/* A small dense float op joins the device's queue (small_ops.cu) in place of a launch. */
bool defer_small(const Call &c, int dev)
{
    const nn_kargs *a = c.a;
    bool float_dt = c.cdt == NN_F32 || c.cdt == NN_F16 || c.cdt == NN_BF16;
    if (!queueable(a->op) || !float_dt || c.n > NN_SMALL_MAX || (int)a->out[0]->dtype != c.cdt || !iter_dense(c.it, 0)) return false;
    nn_small_op o{};
    o.out = c.it.data[0];
    o.alpha = c.p.f0;
    o.n = (int)c.n;
    o.op = (uint8_t)a->op;
    o.dt = (uint8_t)c.cdt;
    const void **p[2] = {&o.a, &o.b};
    float *v[2] = {&o.va, &o.vb};
    uint8_t *m[2] = {&o.ma, &o.mb};
    for (int k = 0; k < 2; k++) {
        const nn_tensor *t = a->in[k];
        if (host_scalar(t)) *m[k] = IN_VALUE, *v[k] = host_value<float>(t, c.cdt);
        else if ((int)t->dtype != c.cdt) return false;
        else if (iter_broadcast(c.it, k + 1)) *m[k] = IN_DEVSCALAR;
        else if (iter_dense(c.it, k + 1)) *m[k] = IN_TENSOR;
        else return false;
        *p[k] = c.it.data[k + 1];
    }
    return nn_small_defer(dev, o);
}

} // namespace

extern "C" nn_status nn_cuda_binary(const nn_kargs *a)
{
    Call c;
    c.a = a;
    c.cdt = (int)a->i[0];
    if (c.cdt < 0 || c.cdt >= NN_NDTYPES) return nn_error(NN_ERR_ARG, "%s: bad compute dtype %d", nn_op_name(a->op), c.cdt);
    if (nn_dtype_is_complex((nn_dtype)c.cdt) || nn_cuda_any_complex(a)) return nn_cuda_complex_binary(a);
    nn_tensor *ops[3] = {a->out[0], a->in[0], a->in[1]};
    nn_iter_init(&c.it, 3, ops);
    c.n = iter_numel(c.it);
    if (!c.n) return NN_OK;
    c.p.f0 = a->f[0];
    c.p.i0 = c.cdt == NN_BOOL ? a->f[0] != 0 : (int64_t)a->f[0]; /* the frontend checked alpha is integral */
    c.p.cdt = c.cdt;
    int dev = nn_cuda_index(a);
    if (defer_small(c, dev)) return NN_OK;
    c.s = nn_cuda_stream(dev);
    switch (a->op) {
#define BIN_CASE(name) case NN_OP_##name: return run_op<NN_OP_##name>(c);
    BIN_CASE(add) BIN_CASE(sub) BIN_CASE(mul) BIN_CASE(div) BIN_CASE(pow) BIN_CASE(remainder) BIN_CASE(fmod)
    BIN_CASE(maximum) BIN_CASE(minimum) BIN_CASE(eq) BIN_CASE(ne) BIN_CASE(lt) BIN_CASE(le) BIN_CASE(gt) BIN_CASE(ge)
    BIN_CASE(logical_and) BIN_CASE(logical_or) BIN_CASE(threshold_backward) BIN_CASE(sigmoid_backward) BIN_CASE(tanh_backward) BIN_CASE(bitwise_and) BIN_CASE(bitwise_or)
    BIN_CASE(bitwise_xor) BIN_CASE(bitwise_left_shift) BIN_CASE(bitwise_right_shift) BIN_CASE(fmax) BIN_CASE(fmin)
    BIN_CASE(nextafter) BIN_CASE(atan2)
#undef BIN_CASE
    default: return nn_not_implemented(a, a->out[0]->dtype);
    }
}
