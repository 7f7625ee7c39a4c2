/* Complex arithmetic for the CUDA kernels of complex operands (complex.cu), with the CPU's
 * semantics (engine/cpu/complex.c): every element is read as a double complex (a real dtype
 * with imaginary part 0) and written back through store(), which keeps the real part for a
 * real output and tests nonzero for bool, so complex64 results are rounded once from double as
 * on the CPU. Multiplication and division are ports of libgcc's __muldc3 and __divdc3 (what
 * the CPU's C `x * y` and `x / y` call: C99 Annex G's recovery of infinities, and GCC 12's
 * scaling against overflow and underflow); the elementary functions are thrust::complex's
 * (FreeBSD's msun, C99's branch cuts and special values, as glibc's). Host and device alike,
 * so the formulas can be checked against the CPU's on a machine without a GPU. */
#pragma once

#include <float.h>
#include <math.h>
#include <thrust/complex.h>

extern "C" {
#include "ops.h"
}

namespace nnc {

typedef thrust::complex<double> cd;

/* a * b without fused multiply-adds: the CPU (x86-64 -O2) rounds each product */
__host__ __device__ __forceinline__ double pmul(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

/* libgcc's __muldc3 */
__host__ __device__ inline cd mul(cd x, cd y)
{
    double a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
    double ac = pmul(a, c), bd = pmul(b, d), ad = pmul(a, d), bc = pmul(b, c);
    double re = ac - bd, im = ad + bc;
    if (isnan(re) && isnan(im)) { /* recover infinities that computed as NaN + iNaN */
        bool recalc = false;
        if (isinf(a) || isinf(b)) { /* x infinite: box it, NaNs of y become 0 */
            a = copysign(isinf(a) ? 1.0 : 0.0, a);
            b = copysign(isinf(b) ? 1.0 : 0.0, b);
            if (isnan(c)) c = copysign(0.0, c);
            if (isnan(d)) d = copysign(0.0, d);
            recalc = true;
        }
        if (isinf(c) || isinf(d)) {
            c = copysign(isinf(c) ? 1.0 : 0.0, c);
            d = copysign(isinf(d) ? 1.0 : 0.0, d);
            if (isnan(a)) a = copysign(0.0, a);
            if (isnan(b)) b = copysign(0.0, b);
            recalc = true;
        }
        if (!recalc && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) { /* overflow */
            if (isnan(a)) a = copysign(0.0, a);
            if (isnan(b)) b = copysign(0.0, b);
            if (isnan(c)) c = copysign(0.0, c);
            if (isnan(d)) d = copysign(0.0, d);
            recalc = true;
        }
        if (recalc) {
            re = INFINITY * (pmul(a, c) - pmul(b, d));
            im = INFINITY * (pmul(a, d) + pmul(b, c));
        }
    }
    return cd(re, im);
}

/* libgcc's __divdc3 (GCC 12: Smith's algorithm scaled against overflow and underflow) */
__host__ __device__ inline cd div(cd x, cd y)
{
    const double RBIG = DBL_MAX / 2, RMIN = DBL_MIN, RMIN2 = DBL_EPSILON, RMINSCAL = 1 / DBL_EPSILON, RMAX2 = RBIG * RMIN2;
    double a = x.real(), b = x.imag(), c = y.real(), d = y.imag(), ratio, denom, re, im;
    if (fabs(c) < fabs(d)) {
        if (fabs(d) >= RBIG) a /= 2, b /= 2, c /= 2, d /= 2;
        if (fabs(d) < RMIN2 || (fabs(a) < RMIN && fabs(b) < RMAX2 && fabs(d) < RMAX2) ||
            (fabs(b) < RMIN && fabs(a) < RMAX2 && fabs(d) < RMAX2))
            a *= RMINSCAL, b *= RMINSCAL, c *= RMINSCAL, d *= RMINSCAL;
        ratio = c / d;
        denom = pmul(c, ratio) + d;
        if (fabs(ratio) > RMIN) {
            re = (pmul(a, ratio) + b) / denom;
            im = (pmul(b, ratio) - a) / denom;
        } else {
            re = (pmul(c, a / d) + b) / denom;
            im = (pmul(c, b / d) - a) / denom;
        }
    } else {
        if (fabs(c) >= RBIG) a /= 2, b /= 2, c /= 2, d /= 2;
        if (fabs(c) < RMIN2 || (fabs(a) < RMIN && fabs(b) < RMAX2 && fabs(c) < RMAX2) ||
            (fabs(b) < RMIN && fabs(a) < RMAX2 && fabs(c) < RMAX2))
            a *= RMINSCAL, b *= RMINSCAL, c *= RMINSCAL, d *= RMINSCAL;
        ratio = d / c;
        denom = pmul(d, ratio) + c;
        if (fabs(ratio) > RMIN) {
            re = (pmul(b, ratio) + a) / denom;
            im = (b - pmul(a, ratio)) / denom;
        } else {
            re = (a + pmul(d, b / c)) / denom;
            im = (b - pmul(d, a / c)) / denom;
        }
    }
    if (isnan(re) && isnan(im)) { /* nonzero / zero, infinite / finite, finite / infinite */
        if (c == 0.0 && d == 0.0 && (!isnan(a) || !isnan(b))) {
            re = copysign(INFINITY, c) * a;
            im = copysign(INFINITY, c) * b;
        } else if ((isinf(a) || isinf(b)) && isfinite(c) && isfinite(d)) {
            a = copysign(isinf(a) ? 1.0 : 0.0, a);
            b = copysign(isinf(b) ? 1.0 : 0.0, b);
            re = INFINITY * (pmul(a, c) + pmul(b, d));
            im = INFINITY * (pmul(b, c) - pmul(a, d));
        } else if ((isinf(c) || isinf(d)) && isfinite(a) && isfinite(b)) {
            c = copysign(isinf(c) ? 1.0 : 0.0, c);
            d = copysign(isinf(d) ? 1.0 : 0.0, d);
            re = 0.0 * (pmul(a, c) + pmul(b, d));
            im = 0.0 * (pmul(b, c) - pmul(a, d));
        }
    }
    return cd(re, im);
}

__host__ __device__ __forceinline__ bool is_zero(cd z) { return z.real() == 0 && z.imag() == 0; }
__host__ __device__ __forceinline__ cd scale(cd z, double s) { return cd(z.real() * s, z.imag() * s); } /* z * real */
__host__ __device__ __forceinline__ cd divr(cd z, double s) { return cd(z.real() / s, z.imag() / s); }   /* z / real */

/* Where thrust (msun) and glibc differ on values C99/C11 Annex G specifies, glibc's: */

/* both parts subnormal or nearly: msun's csqrt and clog lose most of their digits there */
__host__ __device__ __forceinline__ bool tiny(cd z)
{
    double a = fabs(z.real()), b = fabs(z.imag());
    return a < 0x1p-1000 && b < 0x1p-1000 && (a != 0 || b != 0);
}

/* clog(±inf + iy) and clog(x ± i inf) are +inf + i carg(z), NaN parts included (msun: NaN + iNaN) */
__host__ __device__ inline cd log(cd z)
{
    if (isinf(z.real()) || isinf(z.imag())) return cd(INFINITY, atan2(z.imag(), z.real()));
    if (tiny(z)) { /* log(z 2^600) - 600 log 2 */
        cd r = thrust::log(cd(z.real() * 0x1p600, z.imag() * 0x1p600));
        return cd(r.real() - 600 * M_LN2, r.imag());
    }
    return thrust::log(z);
}

/* ctanh(±0 + i inf) and ctanh(±0 + iNaN) are ±0 + iNaN (C11; msun: NaN + iNaN) */
__host__ __device__ inline cd tanh(cd z)
{
    if (z.real() == 0 && !isfinite(z.imag())) return cd(z.real(), NAN);
    return thrust::tanh(z);
}
__host__ __device__ inline cd tan(cd z) /* -i tanh(iz) */
{
    cd t = tanh(cd(-z.imag(), z.real()));
    return cd(t.imag(), -t.real());
}

/* csqrt of tiny parts: sqrt(z 2^600) 2^-300 */
__host__ __device__ inline cd sqrt(cd z)
{
    if (tiny(z)) {
        cd r = thrust::sqrt(cd(z.real() * 0x1p600, z.imag() * 0x1p600));
        return cd(r.real() * 0x1p-300, r.imag() * 0x1p-300);
    }
    return thrust::sqrt(z);
}

/* cacosh(±0 + iNaN) is NaN + i pi/2 */
__host__ __device__ inline cd acosh(cd z)
{
    if (z.real() == 0 && isnan(z.imag())) return cd(NAN, M_PI / 2);
    return thrust::acosh(z);
}

/* std::pow's rule: a zero base gives zero (PyTorch's complex pow); else glibc's cexp(b * clog(a)) */
__host__ __device__ inline cd pow(cd a, cd b) { return is_zero(a) ? cd(0, 0) : thrust::exp(mul(b, log(a))); }

/* the CPU's log1p and expm1 of a complex z (engine/cpu/complex.c) */
__host__ __device__ inline cd log1p(cd z)
{
    double x = z.real(), y = z.imag();
    return cd(0.5 * ::log1p(2 * x + x * x + y * y), atan2(y, 1 + x));
}
__host__ __device__ inline cd expm1(cd z)
{
    double x = z.real(), y = z.imag(), s = sin(y / 2);
    return cd(::expm1(x) * cos(y) - 2 * s * s, exp(x) * sin(y));
}

/* engine/cpu/complex.c's unary1: op of z (abs, angle: the real part holds the result;
 * logical_not: 1 or 0) */
__host__ __device__ inline cd unary(int op, cd z, double f0)
{
    const cd one(1, 0);
    switch (op) {
    case NN_OP_neg: return cd(-z.real(), -z.imag());
    case NN_OP_exp: return thrust::exp(z);
    case NN_OP_log: return log(z);
    case NN_OP_sqrt: return sqrt(z);
    case NN_OP_rsqrt: return div(one, sqrt(z));
    case NN_OP_abs: return cd(hypot(z.real(), z.imag()), 0);
    case NN_OP_angle: return cd(atan2(z.imag(), z.real()), 0);
    case NN_OP_sigmoid: { /* 1 / (1 + exp(-z)) */
        cd e = thrust::exp(cd(-z.real(), -z.imag()));
        return div(one, cd(1 + e.real(), e.imag()));
    }
    case NN_OP_tanh: return tanh(z);
    case NN_OP_log1p: return log1p(z);
    case NN_OP_sin: return thrust::sin(z);
    case NN_OP_cos: return thrust::cos(z);
    case NN_OP_tan: return tan(z);
    case NN_OP_asin: return thrust::asin(z);
    case NN_OP_acos: return thrust::acos(z);
    case NN_OP_atan: return thrust::atan(z);
    case NN_OP_sinh: return thrust::sinh(z);
    case NN_OP_cosh: return thrust::cosh(z);
    case NN_OP_asinh: return thrust::asinh(z);
    case NN_OP_acosh: return acosh(z);
    case NN_OP_atanh: return thrust::atanh(z);
    case NN_OP_expm1: return expm1(z);
    case NN_OP_exp2: return thrust::exp(scale(z, M_LN2));
    case NN_OP_log2: return divr(log(z), M_LN2);
    case NN_OP_log10: return divr(log(z), M_LN10);
    case NN_OP_reciprocal: return div(one, z);
    case NN_OP_conj_physical: return cd(z.real(), -z.imag());
    case NN_OP_sgn: return is_zero(z) ? cd(0, 0) : divr(z, hypot(z.real(), z.imag()));
    case NN_OP_logical_not: return cd(is_zero(z), 0);
    default: /* pow_scalar: z ^ f0 */
        if (f0 == 0) return one;
        if (f0 == 1) return z;
        if (f0 == 2) return mul(z, z);
        return pow(z, cd(f0, 0));
    }
}

/* engine/cpu/complex.c's binary_row: x op y (alpha: add and sub's; comparisons: 1 or 0) */
__host__ __device__ inline cd binary(int op, cd x, cd y, double alpha)
{
    switch (op) {
    case NN_OP_add: return alpha == 1 ? x + y : x + scale(y, alpha);
    case NN_OP_sub: return alpha == 1 ? x - y : x - scale(y, alpha);
    case NN_OP_mul: return mul(x, y);
    case NN_OP_div: return div(x, y);
    case NN_OP_pow: return pow(x, y);
    case NN_OP_eq: return cd(x == y, 0);
    case NN_OP_ne: return cd(x != y, 0);
    case NN_OP_logical_and: return cd(!is_zero(x) && !is_zero(y), 0);
    default: return cd(!is_zero(x) || !is_zero(y), 0); /* logical_or */
    }
}

} // namespace nnc
