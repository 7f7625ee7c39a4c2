/* nn_cpu_contig_map (contig_map.h): the dtype dispatch, the 16-bit path and the pool split of the
 * fused pointwise kernels. */
#include "contig_map.h"

#include "parallel.h"

typedef struct {
    nn_cmap m; /* the whole op: all its n elements */
    nn_dtype dt;
    nn_cmap_loop f32, f64;
} cmap_job;

/* float16 / bfloat16: through float32 buffers, a block at a time */
static void run_16(const cmap_job *j, const nn_cmap *m)
{
    enum { B = NN_CMAP_BLOCK };
    float bin[NN_CMAP_MAX_IN][B], bo[B];
    size_t es = nn_dtype_size(j->dt);
    nn_cmap b = *m;
    for (int k = 0; k < NN_CMAP_MAX_IN; k++)
        if (m->in[k]) b.in[k] = bin[k], b.step[k] = 1;
    b.out = bo;
    for (int64_t i0 = 0; i0 < m->n; i0 += B) {
        int64_t n = m->n - i0 < B ? m->n - i0 : B;
        for (int k = 0; k < NN_CMAP_MAX_IN; k++) {
            const char *p = m->in[k];
            int64_t s = m->step[k] * es;
            if (p)
                for (int64_t i = 0; i < n; i++) bin[k][i] = (float)nn_load_f64(p + (i0 + i) * s, j->dt);
        }
        b.n = n;
        j->f32(&b);
        for (int64_t i = 0; i < n; i++) nn_store_f64((char *)m->out + (i0 + i) * es, j->dt, bo[i]);
    }
}

/* elements [ub, ue) * NN_CMAP_BLOCK */
static nn_status run_blocks(int64_t ub, int64_t ue, void *arg)
{
    const cmap_job *j = arg;
    int64_t b = ub * NN_CMAP_BLOCK, e = ue * NN_CMAP_BLOCK < j->m.n ? ue * NN_CMAP_BLOCK : j->m.n;
    size_t es = nn_dtype_size(j->dt);
    nn_cmap m = j->m;
    for (int k = 0; k < NN_CMAP_MAX_IN; k++)
        if (m.in[k]) m.in[k] = (const char *)m.in[k] + b * m.step[k] * es;
    m.out = (char *)m.out + b * es;
    m.n = e - b;
    switch (j->dt) {
    case NN_F32: j->f32(&m); break;
    case NN_F64: j->f64(&m); break;
    default: run_16(j, &m); break;
    }
    return NN_OK;
}

nn_status nn_cpu_contig_map(const nn_kargs *a, nn_cmap_loop f32, nn_cmap_loop f64)
{
    nn_tensor *out = a->out[0];
    if (!nn_dtype_is_float(out->dtype)) return nn_not_implemented(a, out->dtype);
    cmap_job j = {.m = {.kind = (int)a->i[0], .out = nn_data(out), .n = nn_numel(out), .f = {a->f[0], a->f[1]}},
                  .dt = out->dtype, .f32 = f32, .f64 = f64};
    for (int k = 0; k < a->nin && k < NN_CMAP_MAX_IN; k++) j.m.in[k] = nn_data(a->in[k]), j.m.step[k] = a->in[k]->ndim > 0;
    int64_t units = (j.m.n + NN_CMAP_BLOCK - 1) / NN_CMAP_BLOCK;
    if (j.m.n < NN_PARALLEL_MIN) return run_blocks(0, units, &j);
    return nn_parallel_for(units, NN_PARALLEL_MIN / 2 / NN_CMAP_BLOCK, run_blocks, &j);
}
