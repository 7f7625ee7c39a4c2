/* GradScaler kernels on the CPU: amp_unscale (inf/nan check and unscale of a gradient
 * list) and amp_update_scale (list layout in ops.def, semantics in engine/amp.h). */
#include <math.h>

#include "iter.h"
#include "kernels.h"
#include "memory_format.h"

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

typedef struct {
    unscale_ctx *c;
    nn_dtype dt;
} row_ctx;

static void unscale_row(char **ptr, const int64_t *stride, int64_t n, void *ctx)
{
    row_ctx *r = ctx;
    unscale_run(ptr[0], stride[0], n, r->dt, r->c);
}

nn_status nn_cpu_amp_unscale(const nn_kargs *a)
{
    unscale_ctx c = {*(const float *)nn_data(a->in[0]), false};
    for (int k = 0; k < a->nlist; k++) {
        nn_tensor *g = a->list[k];
        if (!nn_dtype_is_float(g->dtype)) return nn_not_implemented(a, g->dtype);
        if (nn_numel(g) == 0) continue;
        if (nn_is_dense(g)) {
            unscale_run(nn_data(g), (int64_t)nn_dtype_size(g->dtype), nn_numel(g), g->dtype, &c);
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
