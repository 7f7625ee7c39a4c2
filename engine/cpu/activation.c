/* CPU activation (ops.def; engine/activation.c): one loop per activation and direction over
 * contiguous operands, the math of activation_math.h; float16 and bfloat16 compute in float.
 * Large ones split over the CPU's threads (parallel.h). */
#if defined(__GNUC__) && !defined(__clang__)
/* the exp / erf / tanh loops call libmvec (vmath.h); without traps, the selects vectorize */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")
#endif

#include "kernels.h"
#include "parallel.h"
#include "vmath.h"
#include "../activation_math.h"

/* out[i] = the activation of x[i] (g NULL), or g[i] times its derivative */
#define ACT_LOOP(T, SUF, KIND)                                                                            \
    do {                                                                                                  \
        const T *px = x, *pg = g;                                                                         \
        T *po = o;                                                                                        \
        if (!pg)                                                                                          \
            for (int64_t i = 0; i < n; i++) po[i] = nn_act_fwd_##SUF(KIND, px[i], (T)p, (T)q);           \
        else                                                                                              \
            for (int64_t i = 0; i < n; i++) po[i] = nn_act_bwd_##SUF(KIND, px[i], pg[i], (T)p, (T)q);    \
    } while (0)

#define ACT_KINDS(T, SUF)                                                                                 \
    switch (kind) {                                                                                       \
    case NN_ACT_GELU: ACT_LOOP(T, SUF, NN_ACT_GELU); break;                                               \
    case NN_ACT_GELU_TANH: ACT_LOOP(T, SUF, NN_ACT_GELU_TANH); break;                                     \
    case NN_ACT_SILU: ACT_LOOP(T, SUF, NN_ACT_SILU); break;                                               \
    case NN_ACT_MISH: ACT_LOOP(T, SUF, NN_ACT_MISH); break;                                               \
    case NN_ACT_SOFTPLUS: ACT_LOOP(T, SUF, NN_ACT_SOFTPLUS); break;                                       \
    case NN_ACT_LOG_SIGMOID: ACT_LOOP(T, SUF, NN_ACT_LOG_SIGMOID); break;                                 \
    case NN_ACT_LEAKY_RELU: ACT_LOOP(T, SUF, NN_ACT_LEAKY_RELU); break;                                   \
    case NN_ACT_ELU: ACT_LOOP(T, SUF, NN_ACT_ELU); break;                                                 \
    case NN_ACT_HARDSWISH: ACT_LOOP(T, SUF, NN_ACT_HARDSWISH); break;                                     \
    default: ACT_LOOP(T, SUF, NN_ACT_HARDSIGMOID); break;                                                 \
    }

static void run_f32(int kind, const void *x, const void *g, void *o, int64_t n, double p, double q) { ACT_KINDS(float, f) }
static void run_f64(int kind, const void *x, const void *g, void *o, int64_t n, double p, double q) { ACT_KINDS(double, d) }

/* float16 / bfloat16: through float32 buffers, a block at a time */
static void run_16(int kind, nn_dtype dt, const char *x, const char *g, char *o, int64_t n, double p, double q)
{
    enum { B = 1024 };
    float bx[B], bg[B], bo[B];
    size_t es = nn_dtype_size(dt);
    for (int64_t i0 = 0; i0 < n; i0 += B) {
        int64_t m = n - i0 < B ? n - i0 : B;
        for (int64_t i = 0; i < m; i++) {
            bx[i] = (float)nn_load_f64(x + (i0 + i) * es, dt);
            if (g) bg[i] = (float)nn_load_f64(g + (i0 + i) * es, dt);
        }
        run_f32(kind, bx, g ? bg : NULL, bo, m, p, q);
        for (int64_t i = 0; i < m; i++) nn_store_f64(o + (i0 + i) * es, dt, bo[i]);
    }
}

/* the activation over elements [b, e) of contiguous operands */
typedef struct {
    int kind;
    nn_dtype dt;
    const char *x, *g;
    int64_t n;
    char *o;
    double p, q;
} act_job;

enum { BLOCK = 1024 }; /* threads' parts start at multiples of it: run_16's blocks and the vector
                        * loops see the serial run's, so the results are bitwise the same */

static nn_status run_blocks(int64_t ub, int64_t ue, void *arg)
{
    const act_job *j = arg;
    int64_t b = ub * BLOCK, e = ue * BLOCK < j->n ? ue * BLOCK : j->n;
    size_t es = nn_dtype_size(j->dt);
    const char *x = j->x + b * es, *g = j->g ? j->g + b * es : NULL;
    char *o = j->o + b * es;
    switch (j->dt) {
    case NN_F32: run_f32(j->kind, x, g, o, e - b, j->p, j->q); break;
    case NN_F64: run_f64(j->kind, x, g, o, e - b, j->p, j->q); break;
    default: run_16(j->kind, j->dt, x, g, o, e - b, j->p, j->q); break;
    }
    return NN_OK;
}

nn_status nn_cpu_activation(const nn_kargs *a)
{
    nn_tensor *out = a->out[0];
    if (!nn_dtype_is_float(out->dtype)) return nn_not_implemented(a, out->dtype);
    act_job j = {.kind = (int)a->i[0], .dt = out->dtype, .x = nn_data(a->in[0]), .g = a->nin > 1 ? nn_data(a->in[1]) : NULL,
                 .n = nn_numel(out), .o = nn_data(out), .p = a->f[0], .q = a->f[1]};
    int64_t units = (j.n + BLOCK - 1) / BLOCK;
    if (j.n < NN_PARALLEL_MIN) return run_blocks(0, units, &j);
    return nn_parallel_for(units, NN_PARALLEL_MIN / 2 / BLOCK, run_blocks, &j);
}
