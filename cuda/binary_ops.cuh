/* The binary elementwise ops' scalar math, shared by binary.cu's kernels and the queue of
 * deferred small ops (small_ops.cu). */
#pragma once

#include "ew.cuh"

namespace nnk {

struct BinP {
    double f0;  /* alpha of add/sub */
    int64_t i0; /* integer alpha */
    int cdt;
};

template <int OP> constexpr bool is_cmp()
{
    return OP == NN_OP_eq || OP == NN_OP_ne || OP == NN_OP_lt || OP == NN_OP_le || OP == NN_OP_gt || OP == NN_OP_ge ||
           OP == NN_OP_logical_and || OP == NN_OP_logical_or;
}

template <int OP> __host__ __device__ constexpr bool is_bitwise()
{
    return OP == NN_OP_bitwise_and || OP == NN_OP_bitwise_or || OP == NN_OP_bitwise_xor || OP == NN_OP_bitwise_left_shift ||
           OP == NN_OP_bitwise_right_shift;
}

/* true division, nextafter and atan2 compute in a float dtype, the bitwise ops in int64 (the frontend checks) */
template <int OP, typename C> constexpr bool valid()
{
    return std::is_integral<C>::value ? OP != NN_OP_div && OP != NN_OP_nextafter && OP != NN_OP_atan2 : !is_bitwise<OP>();
}

template <int OP, typename C> using res_t = typename std::conditional<is_cmp<OP>(), bool, C>::type;

/* a * b rounded on its own, never fused into a following add (the CPU rounds each product) */
template <typename C> __device__ __forceinline__ C mul_rn(C a, C b) { return a * b; }
template <> __device__ __forceinline__ float mul_rn<float>(float a, float b) { return __fmul_rn(a, b); }
template <> __device__ __forceinline__ double mul_rn<double>(double a, double b) { return __dmul_rn(a, b); }

template <int OP, typename C> __device__ __forceinline__ res_t<OP, C> bop(C a, C b, const BinP &p)
{
    constexpr bool I = std::is_integral<C>::value;
    typedef uint64_t U;
    if constexpr (OP == NN_OP_add) {
        if constexpr (I) return (int64_t)((U)a + (U)p.i0 * (U)b);
        else { const C al = (C)p.f0; return al == 1 ? a + b : a + al * b; }
    } else if constexpr (OP == NN_OP_sub) {
        if constexpr (I) return (int64_t)((U)a - (U)p.i0 * (U)b);
        else { const C al = (C)p.f0; return al == 1 ? a - b : a - al * b; }
    } else if constexpr (OP == NN_OP_mul) {
        if constexpr (I) return (int64_t)((U)a * (U)b);
        else return a * b;
    } else if constexpr (OP == NN_OP_div) {
        return a / b;
    } else if constexpr (OP == NN_OP_pow) {
        if constexpr (I) return ipow(a, b);
        else return m_pow(a, b);
    } else if constexpr (OP == NN_OP_remainder) { /* Python's %: the sign of the divisor */
        if constexpr (I) {
            if (b == 0) return 0; /* the CPU raises ZeroDivisionError; a kernel cannot, and returns 0 */
            C r = b == -1 ? 0 : a % b;
            return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
        } else {
            C r = m_fmod(a, b);
            return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
        }
    } else if constexpr (OP == NN_OP_fmod) { /* C's fmod: the sign of the dividend */
        if constexpr (I) {
            if (b == 0) return 0; /* as remainder's */
            return b == -1 ? 0 : a % b;
        } else {
            return m_fmod(a, b);
        }
    } else if constexpr (OP == NN_OP_maximum) { /* NaN propagates */
        return a != a ? a : (a < b || b != b) ? b : a;
    } else if constexpr (OP == NN_OP_minimum) {
        return a != a ? a : (b < a || b != b) ? b : a;
    } else if constexpr (OP == NN_OP_eq) {
        return a == b;
    } else if constexpr (OP == NN_OP_ne) {
        return a != b;
    } else if constexpr (OP == NN_OP_lt) {
        return a < b;
    } else if constexpr (OP == NN_OP_le) {
        return a <= b;
    } else if constexpr (OP == NN_OP_gt) {
        return a > b;
    } else if constexpr (OP == NN_OP_ge) {
        return a >= b;
    } else if constexpr (OP == NN_OP_logical_and) {
        return a != 0 && b != 0;
    } else if constexpr (OP == NN_OP_fmax || OP == NN_OP_fmin) { /* a NaN loses unless both are */
        if constexpr (I) return OP == NN_OP_fmax ? (a < b ? b : a) : (b < a ? b : a);
        else if constexpr (std::is_same<C, float>::value) return OP == NN_OP_fmax ? fmaxf(a, b) : fminf(a, b);
        else return OP == NN_OP_fmax ? fmax(a, b) : fmin(a, b);
    } else if constexpr (OP == NN_OP_nextafter) {
        if constexpr (std::is_same<C, float>::value) return nextafterf(a, b);
        else if constexpr (!I) return nextafter(a, b);
        else return a;
    } else if constexpr (OP == NN_OP_atan2) {
        if constexpr (std::is_same<C, float>::value) return atan2f(a, b);
        else if constexpr (!I) return atan2(a, b);
        else return a;
    } else if constexpr (is_bitwise<OP>()) {
        if constexpr (!I) return a;
        else if constexpr (OP == NN_OP_bitwise_and) return a & b;
        else if constexpr (OP == NN_OP_bitwise_or) return a | b;
        else if constexpr (OP == NN_OP_bitwise_xor) return a ^ b;
        else if constexpr (OP == NN_OP_bitwise_left_shift) return b < 0 || b >= 64 ? 0 : (int64_t)((U)a << b);
        else return b < 0 || b >= 64 ? (a < 0 ? -1 : 0) : a >> b;
    } else if constexpr (OP == NN_OP_threshold_backward) {
        return b > C(0) ? a : C(0);
    } else if constexpr (OP == NN_OP_sigmoid_backward) {
        return a * (C(1) - b) * b;
    } else if constexpr (OP == NN_OP_tanh_backward) {
        return a * (C(1) - mul_rn(b, b));
    } else {
        static_assert(OP == NN_OP_logical_or, "not a binary op");
        return a != 0 || b != 0;
    }
}

} // namespace nnk
