/* CPU copy (with dtype casts) and fills; large ones split over the CPU's threads (iter.h). */
#include <string.h>

#include "convert16.h"
#include "iter.h"
#include "kernels.h"

typedef struct { nn_dtype dt_out, dt_in; } cast_ctx;

static void row_same(char **p, const int64_t *s, int64_t n, void *ctx)
{
    size_t es = nn_dtype_size(((cast_ctx *)ctx)->dt_out);
    if (s[0] == (int64_t)es && s[1] == (int64_t)es) { memcpy(p[0], p[1], n * es); return; }
    for (int64_t i = 0; i < n; i++, p[0] += s[0], p[1] += s[1]) memcpy(p[0], p[1], es);
}

static void row_cast(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const cast_ctx *c = ctx;
    if (nn_dtype_is_integral(c->dt_out) && nn_dtype_is_integral(c->dt_in)) {
        for (int64_t i = 0; i < n; i++, p[0] += s[0], p[1] += s[1]) nn_store_i64(p[0], c->dt_out, nn_load_i64(p[1], c->dt_in));
    } else if (c->dt_out == NN_F32 && c->dt_in == NN_F64) {
        for (int64_t i = 0; i < n; i++, p[0] += s[0], p[1] += s[1]) *(float *)p[0] = (float)*(double *)p[1];
    } else if (c->dt_out == NN_F64 && c->dt_in == NN_F32) {
        for (int64_t i = 0; i < n; i++, p[0] += s[0], p[1] += s[1]) *(double *)p[0] = *(float *)p[1];
    } else if (c->dt_out == NN_F32 && (c->dt_in == NN_BF16 || c->dt_in == NN_F16)) { /* autocast's casts: typed, to vectorize */
        nn_widen16((float *)p[0], s[0] / 4, (const uint16_t *)p[1], s[1] / 2, n, c->dt_in);
    } else if ((c->dt_out == NN_BF16 || c->dt_out == NN_F16) && c->dt_in == NN_F32) {
        nn_narrow16((uint16_t *)p[0], s[0] / 2, (const float *)p[1], s[1] / 4, n, c->dt_out);
    } else {
        for (int64_t i = 0; i < n; i++, p[0] += s[0], p[1] += s[1]) nn_store_f64(p[0], c->dt_out, nn_load_f64(p[1], c->dt_in));
    }
}

nn_status nn_cpu_copy(const nn_kargs *a)
{
    nn_tensor *ops[2] = {a->out[0], a->in[0]};
    nn_iter it;
    nn_iter_init(&it, 2, ops);
    cast_ctx c = {ops[0]->dtype, ops[1]->dtype};
    if (c.dt_out != c.dt_in && (nn_dtype_is_complex(c.dt_out) || nn_dtype_is_complex(c.dt_in))) return nn_cpu_complex_copy(a);
    nn_iter_run_parallel(&it, c.dt_out == c.dt_in ? row_same : row_cast, &c);
    return NN_OK;
}

typedef struct { unsigned char bytes[8]; size_t es; } fill_ctx;

static void row_fill(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const fill_ctx *c = ctx;
    for (int64_t i = 0; i < n; i++, p[0] += s[0]) memcpy(p[0], c->bytes, c->es);
}

nn_status nn_cpu_fill(const nn_kargs *a)
{
    nn_tensor *out = a->out[0];
    switch (a->op) {
    case NN_OP_fill: {
        if (nn_dtype_is_complex(out->dtype)) return nn_cpu_complex_fill(a);
        fill_ctx c = {.es = nn_dtype_size(out->dtype)};
        if (nn_dtype_is_integral(out->dtype)) nn_store_i64(c.bytes, out->dtype, a->i[1]);
        else nn_store_f64(c.bytes, out->dtype, a->f[0]);
        nn_iter it;
        nn_iter_init(&it, 1, &out);
        nn_iter_run_parallel(&it, row_fill, &c);
        return NN_OK;
    }
    case NN_OP_arange: { /* out is contiguous: element j is start + j*step */
        int64_t n = nn_numel(out);
        char *p = nn_data(out);
        size_t es = nn_dtype_size(out->dtype);
        bool integral = nn_dtype_is_integral(out->dtype);
        for (int64_t j = 0; j < n; j++, p += es) {
            if (integral) nn_store_i64(p, out->dtype, (int64_t)a->f[0] + j * (int64_t)a->f[1]);
            else nn_store_f64(p, out->dtype, a->f[0] + (double)j * a->f[1]);
        }
        return NN_OK;
    }
    case NN_OP_uniform:
    case NN_OP_normal:
    case NN_OP_randint:
    case NN_OP_dropout_noise:
        return nn_cpu_random(a);
    default:
        return nn_not_implemented(a, out->dtype);
    }
}
