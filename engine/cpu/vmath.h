/* Vector math for the CPU kernels' loops: glibc's libmvec has vector versions (4 floats or 2
 * doubles a call with SSE, 8 or 4 with AVX2) of these libm functions, within 4 ulp. Declared
 * with the simd attribute, as math.h declares them only under -ffast-math, a loop calling them
 * vectorizes (the file must be compiled with -fno-math-errno: errno is not set either way).
 * Elsewhere (other libcs and CPUs) this header declares nothing and the loops call libm. */
#ifndef NN_CPU_VMATH_H
#define NN_CPU_VMATH_H

#include <math.h>

#if defined(__x86_64__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define NN_VMATH(fn) __attribute__((simd("notinbranch"))) float fn##f(float); __attribute__((simd("notinbranch"))) double fn(double);
NN_VMATH(exp)
NN_VMATH(log)
NN_VMATH(tanh)
NN_VMATH(erf)
NN_VMATH(erfc)
NN_VMATH(log1p)
NN_VMATH(expm1)
NN_VMATH(sin)
NN_VMATH(cos)
NN_VMATH(tan)
NN_VMATH(asin)
NN_VMATH(acos)
NN_VMATH(atan)
NN_VMATH(sinh)
NN_VMATH(cosh)
NN_VMATH(asinh)
NN_VMATH(acosh)
NN_VMATH(atanh)
NN_VMATH(exp2)
NN_VMATH(log2)
NN_VMATH(log10)
#undef NN_VMATH
#endif

#endif
