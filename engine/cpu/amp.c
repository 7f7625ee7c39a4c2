/* Gradient-list kernels on the CPU: GradScaler's amp_unscale (inf/nan check and unscale of a
 * gradient list) and amp_update_scale (list layout in ops.def, semantics in engine/amp.h), and
 * foreach_sumsq (gradient clipping's 2-norm). */
#include <math.h>

#include "iter.h"
#include "kernels.h"
#include "memory_format.h"
#include "parallel.h"

typedef struct {
    float inv;
    bool found;
} unscale_ctx;

/* n elements of dtype dt at p, stride s bytes; PyTorch's per-element rule */
static void unscale_run(char *p, int64_t s, int64_t n, nn_dtype dt, unscale_ctx *c)
{
    const float inv = c->inv;
    bool found = false;
    switch (dt) {
    case NN_F32:
        for (int64_t i = 0; i < n; i++) {
            float *q = (float *)(p + i * s), v = *q;
            found |= !isfinite(v);
            *q = inv == 1.f ? v : v * inv;
        }
        break;
    case NN_F64:
        for (int64_t i = 0; i < n; i++) {
            double *q = (double *)(p + i * s), v = *q;
            found |= !isfinite(v);
            *q = inv == 1.f ? v : v * (double)inv;
        }
        break;
    case NN_F16:
    case NN_BF16: {
        bool half = dt == NN_F16;
        for (int64_t i = 0; i < n; i++) {
            uint16_t *q = (uint16_t *)(p + i * s);
            float v = half ? nn_half_to_float(*q) : nn_bf16_to_float(*q);
            found |= !isfinite(v);
            if (inv != 1.f) *q = half ? nn_float_to_half(v * inv) : nn_float_to_bf16(v * inv);
        }
        break;
    }
    default: break;
    }
    c->found |= found;
}

/* unscale_run over a dense tensor's span, split over the CPU pool; found is or-ed in (the same
 * whatever the split) */
typedef struct {
    char *p;
    nn_dtype dt;
    float inv;
    uint8_t found;
} dense_job;

static nn_status unscale_range(int64_t b, int64_t e, void *arg)
{
    dense_job *j = arg;
    int64_t es = (int64_t)nn_dtype_size(j->dt);
    unscale_ctx c = {j->inv, false};
    unscale_run(j->p + b * es, es, e - b, j->dt, &c);
    if (c.found) __atomic_store_n(&j->found, 1, __ATOMIC_RELAXED);
    return NN_OK;
}

static bool unscale_dense(char *p, int64_t n, nn_dtype dt, float inv)
{
    dense_job j = {p, dt, inv, 0};
    nn_parallel_for(n, NN_PARALLEL_MIN, unscale_range, &j); /* its ranges cannot fail */
    return j.found;
}

typedef struct {
    unscale_ctx *c;
    nn_dtype dt;
} row_ctx;

static void unscale_row(char **ptr, const int64_t *stride, int64_t n, void *ctx)
{
    row_ctx *r = ctx;
    unscale_run(ptr[0], stride[0], n, r->dt, r->c);
}

/* any nonzero byte in a dense u8 tensor (cast_check's flags) */
static bool any_set(const nn_tensor *f)
{
    const uint8_t *p = nn_data(f);
    for (int64_t i = 0, n = nn_numel(f); i < n; i++)
        if (p[i]) return true;
    return false;
}

nn_status nn_cpu_amp_unscale(const nn_kargs *a)
{
    unscale_ctx c = {a->nin ? *(const float *)nn_data(a->in[0]) : 1.f, false};
    for (int k = 0; k < a->nlist; k++) {
        nn_tensor *g = a->list[k];
        if (g->dtype == NN_U8 && nn_is_dense(g)) {
            c.found |= any_set(g);
            continue;
        }
        if (!nn_dtype_is_float(g->dtype)) return nn_not_implemented(a, g->dtype);
        if (nn_numel(g) == 0) continue;
        if (nn_is_dense(g)) {
            c.found |= unscale_dense(nn_data(g), nn_numel(g), g->dtype, c.inv);
            continue;
        }
        nn_iter it;
        nn_iter_init(&it, 1, &g);
        row_ctx r = {&c, g->dtype};
        nn_iter_run(&it, unscale_row, &r);
    }
    if (c.found) *(float *)nn_data(a->out[0]) = 1.f;
    return NN_OK;
}

nn_status nn_cpu_amp_update_scale(const nn_kargs *a)
{
    float *scale = nn_data(a->out[0]);
    int32_t *tracker = nn_data(a->out[1]);
    float found = *(const float *)nn_data(a->in[0]);
    if (found != 0.f) {
        *scale = (float)(*scale * a->f[1]);
        *tracker = 0;
        return NN_OK;
    }
    int64_t successful = (int64_t)*tracker + 1;
    if (successful == a->i[0]) {
        float grown = (float)(*scale * a->f[0]);
        if (isfinite(grown)) *scale = grown; /* the scale never grows past float32 to inf */
        *tracker = 0;
    } else {
        *tracker = (int32_t)successful;
    }
    return NN_OK;
}

/* A 16-bit gradient widened to float32, checked in the same pass, split over the CPU pool */
typedef struct {
    const uint16_t *in;
    float *out;
    nn_dtype dt;
    uint8_t found;
} widen_job;

static nn_status widen_range(int64_t b, int64_t e, void *arg)
{
    widen_job *j = arg;
    bool found = false;
    if (j->dt == NN_BF16)
        for (int64_t i = b; i < e; i++) found |= !isfinite(j->out[i] = nn_bf16_to_float(j->in[i]));
    else
        for (int64_t i = b; i < e; i++) found |= !isfinite(j->out[i] = nn_half_to_float(j->in[i]));
    if (found) __atomic_store_n(&j->found, 1, __ATOMIC_RELAXED);
    return NN_OK;
}

/* out0 = in0 in out0's dtype, both dense in one layout; out1's first byte says whether any value
 * of out0 is inf or nan (the unscale pass's check), the rest are 0 */
nn_status nn_cpu_cast_check(const nn_kargs *a)
{
    nn_tensor *in = a->in[0], *out = a->out[0], *flags = a->out[1];
    int64_t n = nn_numel(out);
    bool found;
    if (out->dtype == NN_F32 && (in->dtype == NN_BF16 || in->dtype == NN_F16)) { /* autocast's weight gradients */
        widen_job j = {nn_data(in), nn_data(out), in->dtype, 0};
        nn_parallel_for(n, NN_PARALLEL_MIN, widen_range, &j);
        found = j.found;
    } else {
        nn_kargs c = {.op = NN_OP_copy, .out = {out}, .in = {in}, .nin = 1};
        nn_status st = nn_cpu_copy(&c);
        if (st) return st;
        found = unscale_dense(nn_data(out), n, out->dtype, 1.f);
    }
    uint8_t *f = nn_data(flags);
    for (int64_t i = 0, m = nn_numel(flags); i < m; i++) f[i] = 0;
    if (nn_numel(flags)) f[0] = found;
    return NN_OK;
}

static void sumsq_row(char **ptr, const int64_t *stride, int64_t n, void *ctx)
{
    double *acc = ((double **)ctx)[0], sum = 0;
    nn_dtype dt = *((nn_dtype **)ctx)[1];
    const char *p = ptr[0];
    for (int64_t i = 0; i < n; i++) {
        const char *q = p + i * stride[0];
        double v = dt == NN_F32 ? *(const float *)q
                   : dt == NN_F64 ? *(const double *)q
                   : dt == NN_F16 ? nn_half_to_float(*(const uint16_t *)q)
                                  : nn_bf16_to_float(*(const uint16_t *)q);
        sum += v * v;
    }
    *acc += sum;
}

nn_status nn_cpu_foreach_sumsq(const nn_kargs *a)
{
    double acc = 0;
    for (int k = 0; k < a->nlist; k++) {
        nn_tensor *t = a->list[k];
        if (!nn_dtype_is_float(t->dtype)) return nn_not_implemented(a, t->dtype);
        if (nn_numel(t) == 0) continue;
        nn_dtype dt = t->dtype;
        void *ctx[2] = {&acc, &dt};
        nn_iter it;
        nn_iter_init(&it, 1, &t);
        nn_iter_run(&it, sumsq_row, ctx);
    }
    *(double *)nn_data(a->out[0]) += acc;
    return NN_OK;
}
