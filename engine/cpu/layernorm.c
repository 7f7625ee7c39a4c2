/* CPU layer norm over the last dim of a dense [M, E] x and its backward (ops.def layer_norm,
 * layer_norm_backward): rows through double buffers, the mean and then the variance about it,
 * sums in double. mean and rstd are of the accumulation dtype the CUDA kernels use (float64 for
 * float64 x, else float32). */
#include <math.h>
#include <stdlib.h>

#include "kernels.h"

static nn_status no_memory(void) { return nn_error(NN_ERR_NOMEM, "layer_norm: out of memory"); }

/* the row vector t ([E], or NULL: ones / zeros) into b */
static void load_vec(double *b, const nn_tensor *t, int64_t E, double fill)
{
    if (!t) {
        for (int64_t i = 0; i < E; i++) b[i] = fill;
        return;
    }
    nn_cpu_load_row(b, nn_data(t), (int64_t)nn_dtype_size(t->dtype), E, t->dtype);
}

nn_status nn_cpu_layer_norm(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *y = a->out[0];
    int64_t E = x->shape[x->ndim - 1], M = E ? nn_numel(x) / E : 0;
    size_t es = nn_dtype_size(x->dtype), ss = nn_dtype_size(a->out[1]->dtype);
    double *buf = malloc(sizeof(double) * (size_t)(3 * E + 1));
    if (!buf) return no_memory();
    double *row = buf, *w = buf + E, *b = buf + 2 * E;
    load_vec(w, a->in[1], E, 1);
    load_vec(b, a->in[2], E, 0);
    for (int64_t m = 0; m < M; m++) {
        nn_cpu_load_row(row, (const char *)nn_data(x) + m * E * es, (int64_t)es, E, x->dtype);
        double mu = 0, v = 0;
        for (int64_t i = 0; i < E; i++) mu += row[i];
        mu /= (double)E;
        for (int64_t i = 0; i < E; i++) v += (row[i] - mu) * (row[i] - mu);
        double rs = 1 / sqrt(v / (double)E + a->f[0]);
        for (int64_t i = 0; i < E; i++) row[i] = (row[i] - mu) * rs * w[i] + b[i];
        nn_cpu_store_row((char *)nn_data(y) + m * E * es, (int64_t)es, row, E, y->dtype);
        nn_cpu_store_row((char *)nn_data(a->out[1]) + m * ss, (int64_t)ss, &mu, 1, a->out[1]->dtype);
        nn_cpu_store_row((char *)nn_data(a->out[2]) + m * ss, (int64_t)ss, &rs, 1, a->out[2]->dtype);
    }
    free(buf);
    return NN_OK;
}

/* dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w; dw = sum g * xhat; db = sum g */
nn_status nn_cpu_layer_norm_backward(const nn_kargs *a)
{
    nn_tensor *g = a->in[0], *x = a->in[1], *dx = a->out[0];
    int64_t E = x->shape[x->ndim - 1], M = E ? nn_numel(x) / E : 0;
    size_t es = nn_dtype_size(x->dtype), ss = nn_dtype_size(a->in[2]->dtype);
    double *buf = calloc((size_t)(5 * E + 2), sizeof(double));
    if (!buf) return no_memory();
    double *gr = buf, *xr = buf + E, *w = buf + 2 * E, *dw = buf + 3 * E, *db = buf + 4 * E, st[2];
    load_vec(w, a->in[4], E, 1);
    for (int64_t m = 0; m < M; m++) {
        nn_cpu_load_row(gr, (const char *)nn_data(g) + m * E * es, (int64_t)es, E, g->dtype);
        nn_cpu_load_row(xr, (const char *)nn_data(x) + m * E * es, (int64_t)es, E, x->dtype);
        nn_cpu_load_row(&st[0], (const char *)nn_data(a->in[2]) + m * ss, (int64_t)ss, 1, a->in[2]->dtype);
        nn_cpu_load_row(&st[1], (const char *)nn_data(a->in[3]) + m * ss, (int64_t)ss, 1, a->in[3]->dtype);
        double s1 = 0, s2 = 0;
        for (int64_t i = 0; i < E; i++) {
            xr[i] = (xr[i] - st[0]) * st[1]; /* xhat */
            dw[i] += gr[i] * xr[i];
            db[i] += gr[i];
            s1 += gr[i] * w[i];
            s2 += gr[i] * w[i] * xr[i];
        }
        s1 /= (double)E, s2 /= (double)E;
        if (!dx) continue;
        for (int64_t i = 0; i < E; i++) gr[i] = st[1] * (gr[i] * w[i] - s1 - xr[i] * s2);
        nn_cpu_store_row((char *)nn_data(dx) + m * E * es, (int64_t)es, gr, E, dx->dtype);
    }
    if (a->out[1]) nn_cpu_store_row(nn_data(a->out[1]), (int64_t)nn_dtype_size(a->out[1]->dtype), dw, E, a->out[1]->dtype);
    if (a->out[2]) nn_cpu_store_row(nn_data(a->out[2]), (int64_t)nn_dtype_size(a->out[2]->dtype), db, E, a->out[2]->dtype);
    free(buf);
    return NN_OK;
}
