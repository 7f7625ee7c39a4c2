/* The complex formulas of the CUDA kernels (cuda/complex.cuh: libgcc's multiplication and
 * division, thrust's elementary functions, the CPU's compositions) run on the host against the
 * CPU engine's complex kernels (engine/cpu/complex.c, glibc), on random values of every scale
 * and on special values (zeros of both signs, infinities, NaNs, points on the branch cuts).
 * Needs no GPU: built with the CUDA backend, run everywhere. Finite results must agree within
 * a few ulps (relative to the larger part); special results must be the same kind (NaN, an
 * infinity of the same sign, a zero, finite) part by part. The last line counts cases:
 * "N passed, N failed, N skipped". */
#include <stdio.h>
#include <stdlib.h>

#include "../../cuda/complex.cuh"

extern "C" {
#include "autograd.h"
#include "complex_ops.h"
}

using nnc::cd;

static int n_pass, n_fail;

static uint64_t rng = 0x853C49E6748FEA9BULL;
static double urand(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng >> 11) * 0x1p-53;
}

/* the inputs: random at scales 1e-300 .. 1e300, then special values */
static int make_inputs(cd *z, int cap)
{
    int n = 0;
    const double scales[] = {1, 1, 1, 3, 0.01, 1e-8, 1e8, 1e-300, 1e300, 1e-310};
    for (int s = 0; s < 10; s++)
        for (int k = 0; k < 60 && n < cap; k++) z[n++] = cd((2 * urand() - 1) * scales[s], (2 * urand() - 1) * scales[s]);
    const double sp[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, INFINITY, -INFINITY, NAN, 1e-320, 1e308};
    for (double re : sp)
        for (double im : sp)
            if (n < cap) z[n++] = cd(re, im);
    return n;
}

/* a part of got against want's; other: want's other part. Annex G leaves the sign of an
 * infinity beside a NaN unspecified ("±inf + iNaN"), and glibc's follows NaN sign bits */
static bool same_kind(double a, double b, double other)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return isnan(other) ? isinf(a) && isinf(b) : a == b;
    return true;
}

/* got (host formula) against want (CPU engine), part by part: NaN for NaN, the same infinity,
 * finite parts within rtol of the larger finite part of want */
static bool close(cd got, cd want, double rtol)
{
    if (!same_kind(got.real(), want.real(), want.imag()) || !same_kind(got.imag(), want.imag(), want.real())) return false;
    double scale = 0;
    if (isfinite(want.real())) scale = fabs(want.real());
    if (isfinite(want.imag())) scale = fmax(scale, fabs(want.imag()));
    double tol = rtol * scale + 1e-300;
    if (isfinite(want.real()) && !(fabs(got.real() - want.real()) <= tol)) return false;
    if (isfinite(want.imag()) && !(fabs(got.imag() - want.imag()) <= tol)) return false;
    return true;
}

static nn_tensor *tensor_of(const cd *z, int n)
{
    int64_t shape[1] = {n};
    nn_tensor *t = nn_empty(1, shape, NN_C128, (nn_device){NN_CPU, -1});
    double *p = (double *)nn_data(t);
    for (int i = 0; i < n; i++) p[2 * i] = z[i].real(), p[2 * i + 1] = z[i].imag();
    return t;
}

static cd at(const nn_tensor *t, int i)
{
    double re, im;
    nn_load_c((const char *)nn_data(t) + i * t->strides[0] * nn_dtype_size(t->dtype), t->dtype, &re, &im);
    return cd(re, im);
}

/* every element of the CPU's result r against f(i); reports the first few differences */
template <class F> static void compare(const char *name, const nn_tensor *r, int n, const cd *x, const cd *y, double rtol, F f)
{
    if (!r) {
        printf("FAIL %s: the CPU failed: %s\n", name, nn_last_error());
        n_fail++;
        return;
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        cd want = at(r, i), got = f(i);
        if (close(got, want, rtol)) continue;
        if (bad++ < 4) {
            printf("FAIL %s: x = (%.17g, %.17g)", name, x[i].real(), x[i].imag());
            if (y) printf(" y = (%.17g, %.17g)", y[i].real(), y[i].imag());
            printf(": cpu (%.17g, %.17g), cuda formula (%.17g, %.17g)\n", want.real(), want.imag(), got.real(), got.imag());
        }
    }
    if (bad) n_fail++;
    else n_pass++;
}

int main(void)
{
    enum { CAP = 1024 };
    static cd x[CAP], y[CAP];
    int n = make_inputs(x, CAP);
    for (int i = 0; i < n; i++) y[i] = x[(i * 7 + 3) % n]; /* pairs of every kind */
    nn_tensor *tx = tensor_of(x, n), *ty = tensor_of(y, n);
    const nn_op unary[] = {NN_OP_neg, NN_OP_exp, NN_OP_log, NN_OP_sqrt, NN_OP_rsqrt, NN_OP_abs, NN_OP_angle, NN_OP_sigmoid, NN_OP_tanh,
                           NN_OP_log1p, NN_OP_sin, NN_OP_cos, NN_OP_tan, NN_OP_asin, NN_OP_acos, NN_OP_atan, NN_OP_sinh, NN_OP_cosh,
                           NN_OP_asinh, NN_OP_acosh, NN_OP_atanh, NN_OP_expm1, NN_OP_exp2, NN_OP_log2, NN_OP_log10,
                           NN_OP_reciprocal, NN_OP_conj_physical, NN_OP_sgn, NN_OP_logical_not};
    for (nn_op op : unary) {
        nn_tensor *r = nn_unary(op, tx);
        /* glibc and msun differ by a few ulps in the elementary functions; the compositions by more
         * near their zeros (sin of a large argument, log near 1) */
        compare(nn_op_name(op), r, n, x, NULL, 1e-12, [&](int i) { return nnc::unary(op, x[i], 0); });
        nn_release(r);
    }
    const double exps[] = {0, 1, 2, 3, 0.5, -1, -2.5};
    for (double e : exps) {
        nn_tensor *r = nn_pow_scalar(tx, e);
        char name[64];
        snprintf(name, sizeof name, "pow_scalar %g", e);
        compare(name, r, n, x, NULL, 1e-12, [&](int i) { return nnc::unary(NN_OP_pow_scalar, x[i], e); });
        nn_release(r);
    }
    const nn_op binary[] = {NN_OP_add, NN_OP_sub, NN_OP_mul, NN_OP_div, NN_OP_pow, NN_OP_eq, NN_OP_ne, NN_OP_logical_and,
                            NN_OP_logical_or};
    for (nn_op op : binary) {
        nn_tensor *r = nn_binary(op, tx, ty);
        /* mul and div are libgcc's own algorithms: bit for bit */
        double rtol = op == NN_OP_pow ? 1e-12 : 0;
        compare(nn_op_name(op), r, n, x, y, rtol, [&](int i) { return nnc::binary(op, x[i], y[i], 1); });
        nn_release(r);
    }
    nn_release(tx);
    nn_release(ty);
    printf("%d passed, %d failed, 0 skipped\n", n_pass, n_fail);
    return n_fail != 0;
}
