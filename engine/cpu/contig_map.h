/* The CPU scaffold of the fused pointwise kernels (pointwise_loss.c, activation.c): out[i] = a
 * function of the operands' element i, over contiguous operands of one float dtype. The family
 * supplies one typed loop per compute type (float, double), a switch over its kinds; this file
 * runs it by dtype (float16 and bfloat16 through float32 blocks), split over the CPU pool
 * (parallel.h) at multiples of NN_CMAP_BLOCK, so a split run is bitwise the serial one. */
#ifndef NN_CPU_CONTIG_MAP_H
#define NN_CPU_CONTIG_MAP_H

#include "../backend.h"

enum { NN_CMAP_MAX_IN = 3, NN_CMAP_BLOCK = 1024 };

/* one typed loop's part: n elements from in[k] (element i at in[k][i * step[k]]) to out */
typedef struct {
    int kind;                        /* nn_kargs.i[0] */
    const void *in[NN_CMAP_MAX_IN];  /* NULL from nin on */
    int64_t step[NN_CMAP_MAX_IN];    /* 1, or 0 for a 0-dim operand, read at every i */
    void *out;
    int64_t n;
    double f[2];                     /* the parameters, nn_kargs.f[0] and f[1] */
} nn_cmap;

typedef void (*nn_cmap_loop)(const nn_cmap *m);

/* a->out[0] = the map of a->in[0 .. nin) by f32 (float32, float16, bfloat16) or f64 (float64);
 * other dtypes are not implemented */
nn_status nn_cpu_contig_map(const nn_kargs *a, nn_cmap_loop f32, nn_cmap_loop f64);

#endif
