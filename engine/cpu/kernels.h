/* The CPU backend's kernels, one entry point per op kind (see ops.def);
 * each switches on a->op. */
#ifndef NN_CPU_KERNELS_H
#define NN_CPU_KERNELS_H

#include "../backend.h"

nn_status nn_cpu_unary(const nn_kargs *a);   /* cpu/elementwise.c */
nn_status nn_cpu_binary(const nn_kargs *a);  /* cpu/elementwise.c */
nn_status nn_cpu_ternary(const nn_kargs *a); /* cpu/elementwise.c */
nn_status nn_cpu_reduce(const nn_kargs *a);  /* cpu/reduce.c */
nn_status nn_cpu_bmm(const nn_kargs *a);     /* cpu/blas.c */
nn_status nn_cpu_fill(const nn_kargs *a);    /* cpu/copy.c: fill, arange; random ops go to nn_cpu_random */
nn_status nn_cpu_random(const nn_kargs *a);  /* cpu/random.c: uniform, normal, randint */
nn_status nn_cpu_copy(const nn_kargs *a);    /* cpu/copy.c */

#endif
