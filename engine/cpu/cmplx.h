/* C99 complex arithmetic for the CPU kernels. glibc defines CMPLX only for GCC; clang (the
 * fuzzing build) has the same builtin. */
#ifndef NN_CPU_CMPLX_H
#define NN_CPU_CMPLX_H

#include <complex.h>

#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif

#endif
