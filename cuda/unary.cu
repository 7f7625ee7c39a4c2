/* CUDA unary elementwise ops: neg exp log sqrt rsqrt abs sign sigmoid tanh relu
 * erf log1p clamp pow_scalar, bitwise_not and logical_not; the rest of the float math (sin ... atanh)
 * shares one set of kernels that picks the function at run time (OP_MATH).
 *
 * An op computes in the output's dtype (engine/elementwise.c promotes): float
 * for float32/float16/bfloat16, double, wrapping int64 for integer types, with
 * the CPU kernels' formulas (engine/cpu/elementwise.c). logical_not reads any
 * dtype and writes 0/1. Paths as in binary.cu: dense with 16-byte vectors,
 * strided, generic by runtime dtype. */
#include "complex_hooks.cuh"
#include "ew.cuh"

using namespace nnk;

namespace {

enum { POW_GENERAL, POW_SQ, POW_CUBE, POW_SQRT, POW_RSQRT, POW_RECIP, POW_RECIP_SQ };

struct UnP {
    double f0, f1;   /* clamp bounds; pow_scalar exponent in f0 */
    int64_t lo, hi;  /* integer clamp bounds (narrowed to the dtype) */
    int64_t iexp;    /* integer exponent */
    int flags;       /* clamp: bit0 has min, bit1 has max */
    int pow_mode;
    int cdt;
    int mop; /* OP_MATH: which function */
};

enum { OP_MATH = -1 };

#define MATH1(name)                                                                                                    \
    if constexpr (std::is_same<C, float>::value) return name##f(x);                                                   \
    else return name(x);

/* float or double; the functions the CPU kernels use */
template <typename C> __device__ __forceinline__ C math_op(C x, int op)
{
    switch (op) {
    case NN_OP_sin: MATH1(sin)
    case NN_OP_cos: MATH1(cos)
    case NN_OP_tan: MATH1(tan)
    case NN_OP_asin: MATH1(asin)
    case NN_OP_acos: MATH1(acos)
    case NN_OP_atan: MATH1(atan)
    case NN_OP_sinh: MATH1(sinh)
    case NN_OP_cosh: MATH1(cosh)
    case NN_OP_expm1: MATH1(expm1)
    case NN_OP_exp2: MATH1(exp2)
    case NN_OP_log2: MATH1(log2)
    case NN_OP_log10: MATH1(log10)
    case NN_OP_erfc: MATH1(erfc)
    case NN_OP_floor: MATH1(floor)
    case NN_OP_ceil: MATH1(ceil)
    case NN_OP_round: MATH1(rint) /* half to even */
    case NN_OP_trunc: MATH1(trunc)
    case NN_OP_asinh: MATH1(asinh)
    case NN_OP_acosh: MATH1(acosh)
    case NN_OP_atanh: MATH1(atanh)
    case NN_OP_reciprocal: return 1 / x;
    default: { /* frac */
        C t;
        if constexpr (std::is_same<C, float>::value) t = truncf(x);
        else t = trunc(x);
        return x - t;
    }
    }
}
#undef MATH1

template <int OP, typename C> constexpr bool valid()
{
    if constexpr (!std::is_integral<C>::value) return OP != NN_OP_bitwise_not;
    return OP == NN_OP_neg || OP == NN_OP_abs || OP == NN_OP_sign || OP == NN_OP_relu ||
           OP == NN_OP_clamp || OP == NN_OP_pow_scalar || OP == NN_OP_bitwise_not;
}

template <int OP, typename C> __device__ __forceinline__ C uop(C x, const UnP &p)
{
    typedef uint64_t U;
    if constexpr (std::is_integral<C>::value) {
        if constexpr (OP == NN_OP_neg) return (int64_t)(0 - (U)x);
        else if constexpr (OP == NN_OP_abs) return x < 0 ? (int64_t)(0 - (U)x) : x;
        else if constexpr (OP == NN_OP_sign) return (x > 0) - (x < 0);
        else if constexpr (OP == NN_OP_relu) return x < 0 ? 0 : x;
        else if constexpr (OP == NN_OP_clamp) { C v = x < p.lo ? p.lo : x; return p.hi < v ? p.hi : v; }
        else if constexpr (OP == NN_OP_bitwise_not) return ~x;
        else { static_assert(OP == NN_OP_pow_scalar, "not an integer unary op"); return ipow(x, p.iexp); }
    } else {
        if constexpr (OP == OP_MATH) return math_op<C>(x, p.mop);
        else if constexpr (OP == NN_OP_bitwise_not) return x; /* not reached: integers only (engine/elementwise.c) */
        else if constexpr (OP == NN_OP_neg) return -x;
        else if constexpr (OP == NN_OP_exp) return m_exp(x);
        else if constexpr (OP == NN_OP_log) return m_log(x);
        else if constexpr (OP == NN_OP_sqrt) return m_sqrt(x);
        else if constexpr (OP == NN_OP_rsqrt) return 1 / m_sqrt(x);
        else if constexpr (OP == NN_OP_abs) return m_abs(x);
        else if constexpr (OP == NN_OP_sign) return (C)((0 < x) - (x < 0)); /* NaN -> 0 */
        else if constexpr (OP == NN_OP_sigmoid) return 1 / (1 + m_exp(-x));
        else if constexpr (OP == NN_OP_tanh) return m_tanh(x);
        else if constexpr (OP == NN_OP_erf) return m_erf(x);
        else if constexpr (OP == NN_OP_log1p) return m_log1p(x);
        else if constexpr (OP == NN_OP_relu) return x < 0 ? 0 : x; /* NaN stays */
        else if constexpr (OP == NN_OP_clamp) { /* a NaN bound compares false and leaves x */
            const C lo = (C)p.f0, hi = (C)p.f1;
            C v = (p.flags & 1) && x < lo ? lo : x;
            return (p.flags & 2) && hi < v ? hi : v;
        } else {
            static_assert(OP == NN_OP_pow_scalar, "not a unary op");
            switch (p.pow_mode) {
            case POW_SQ: return x * x;
            case POW_CUBE: return x * x * x;
            case POW_SQRT: return m_sqrt(x);
            case POW_RSQRT: return 1 / m_sqrt(x);
            case POW_RECIP: return 1 / x;
            case POW_RECIP_SQ: return 1 / (x * x);
            default: return m_pow(x, (C)p.f0);
            }
        }
    }
}

template <int OP, typename T, int N> __global__ void un_dense(T *out, const T *in, int64_t n, UnP p)
{
    typedef typename ctype<T>::type C;
    const int64_t step = (int64_t)gridDim.x * blockDim.x, tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t nv = n / N;
    for (int64_t v = tid; v < nv; v += step) {
        Vec<T, N> x = ((const Vec<T, N> *)in)[v], r;
#pragma unroll
        for (int j = 0; j < N; j++) r.v[j] = st<T>(uop<OP, C>(ld(x.v[j]), p));
        ((Vec<T, N> *)out)[v] = r;
    }
    for (int64_t i = nv * N + tid; i < n; i += step) out[i] = st<T>(uop<OP, C>(ld(in[i]), p));
}

template <int OP, typename T> __global__ void un_strided(char *out, const char *in, int64_t n, Geo<2> g, UnP p)
{
    typedef typename ctype<T>::type C;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        geo_offsets<2>(g, i, off);
        *(T *)(out + off[0]) = st<T>(uop<OP, C>(ld(*(const T *)(in + off[1])), p));
    }
}

template <int OP, typename C>
__global__ void un_generic(char *out, int dto, const char *in, int dti, int64_t n, Geo<2> g, UnP p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        geo_offsets<2>(g, i, off);
        st_dyn(out + off[0], dto, uop<OP, C>(ld_dyn<C>(in + off[1], dti, p.cdt), p));
    }
}

__global__ void not_kernel(char *out, int dto, const char *in, int dti, int64_t n, Geo<2> g)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        geo_offsets<2>(g, i, off);
        st_i64(out + off[0], dto, ld_f64(in + off[1], dti) == 0);
    }
}

struct Call {
    const nn_kargs *a;
    nn_iter it;
    int64_t n;
    UnP p;
    cudaStream_t s;
};

template <int OP, typename T> nn_status run_fast(const Call &c)
{
    constexpr int N = 16 / sizeof(T);
    bool dense = iter_dense(c.it, 0) && iter_dense(c.it, 1);
    if (dense && aligned16(c.it.data[0]) && aligned16(c.it.data[1]) && c.n >= N)
        nn_launch<un_dense<OP, T, N>>(blocks_for(c.n / N), 256, c.s, (T *)c.it.data[0], (const T *)c.it.data[1], c.n, c.p);
    else
        nn_launch<un_strided<OP, T>>(blocks_for(c.n), 256, c.s, c.it.data[0], c.it.data[1], c.n, geo_of<2>(c.it), c.p);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

template <int OP, typename C> nn_status run_generic(const Call &c)
{
    if constexpr (!valid<OP, C>()) {
        return nn_not_implemented(c.a, (nn_dtype)c.p.cdt);
    } else {
        un_generic<OP, C><<<blocks_for(c.n), 256, 0, c.s>>>(c.it.data[0], c.it.dtype[0], c.it.data[1], c.it.dtype[1], c.n,
                                                              geo_of<2>(c.it), c.p);
        NN_CHECK_LAUNCH();
        return NN_OK;
    }
}

template <int OP> nn_status run_op(const Call &c)
{
    int cdt = c.p.cdt;
    if (c.a->in[0]->dtype == c.a->out[0]->dtype) {
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

} // namespace

extern "C" nn_status nn_cuda_unary(const nn_kargs *a)
{
    if (nn_cuda_any_complex(a)) return nn_cuda_complex_unary(a);
    Call c;
    c.a = a;
    nn_tensor *ops[2] = {a->out[0], a->in[0]};
    if (host_scalar(a->in[0])) return nn_error(NN_ERR_DEVICE, "%s: the CUDA kernel needs its input on the GPU", nn_op_name(a->op));
    nn_iter_init(&c.it, 2, ops);
    c.n = iter_numel(c.it);
    if (!c.n) return NN_OK;
    c.s = nn_cuda_stream(nn_cuda_index(a));
    if (a->op == NN_OP_logical_not) {
        not_kernel<<<blocks_for(c.n), 256, 0, c.s>>>(c.it.data[0], c.it.dtype[0], c.it.data[1], c.it.dtype[1], c.n,
                                                       geo_of<2>(c.it));
        NN_CHECK_LAUNCH();
        return NN_OK;
    }
    UnP &p = c.p;
    p.cdt = a->out[0]->dtype;
    p.f0 = a->f[0];
    p.f1 = a->f[1];
    p.flags = (int)a->i[0];
    p.iexp = a->i[1];
    /* integer clamp bounds are cast to the dtype first (uint8: -1 is 255), as in PyTorch */
    bool ints = nn_dtype_is_integral((nn_dtype)p.cdt);
    p.lo = ints && (p.flags & 1) ? narrow((int64_t)p.f0, p.cdt) : INT64_MIN;
    p.hi = ints && (p.flags & 2) ? narrow((int64_t)p.f1, p.cdt) : INT64_MAX;
    double e = p.f0;
    p.pow_mode = e == 2 ? POW_SQ : e == 3 ? POW_CUBE : e == 0.5 ? POW_SQRT : e == -0.5 ? POW_RSQRT : e == -1 ? POW_RECIP
                 : e == -2 ? POW_RECIP_SQ : POW_GENERAL;
    switch (a->op) {
#define UN_CASE(name) case NN_OP_##name: return run_op<NN_OP_##name>(c);
    UN_CASE(neg) UN_CASE(exp) UN_CASE(log) UN_CASE(sqrt) UN_CASE(rsqrt) UN_CASE(abs) UN_CASE(sign) UN_CASE(sigmoid)
    UN_CASE(tanh) UN_CASE(relu) UN_CASE(erf) UN_CASE(log1p) UN_CASE(clamp) UN_CASE(pow_scalar) UN_CASE(bitwise_not)
#undef UN_CASE
    case NN_OP_sin: case NN_OP_cos: case NN_OP_tan: case NN_OP_asin: case NN_OP_acos: case NN_OP_atan: case NN_OP_sinh:
    case NN_OP_cosh: case NN_OP_expm1: case NN_OP_exp2: case NN_OP_log2: case NN_OP_log10: case NN_OP_reciprocal:
    case NN_OP_erfc: case NN_OP_frac: case NN_OP_floor: case NN_OP_ceil: case NN_OP_round: case NN_OP_trunc:
    case NN_OP_asinh: case NN_OP_acosh: case NN_OP_atanh:
        p.mop = a->op;
        return run_op<OP_MATH>(c);
    default: return nn_not_implemented(a, a->out[0]->dtype);
    }
}
