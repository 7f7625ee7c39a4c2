/* CPU batch_norm and its backward, on the canonical problem of ops.def.
 *
 * x is [N, C, S] with S the product of the spatial dims, dense: contiguous, where a row
 * of S elements belongs to one channel, or channels-last, where a row of C elements holds
 * one of each channel (a 2-D [N, C] input is both). Every pass reads whole rows into a
 * double buffer, so every dtype computes in double, and per-channel sums accumulate in
 * double. The statistics take two passes, the mean and then the centred squares, since
 * sums of squares cancel badly when the mean is large against the spread. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

typedef struct {
    int64_t C, M;         /* channels; values per channel (N * S) */
    int64_t rows, len;    /* the rows and their length */
    bool inner;           /* channels-last rows: element j of a row is channel j */
    int64_t es;           /* element size */
    nn_dtype dt;
} geom;

static geom geom_of(const nn_tensor *x)
{
    int64_t N = x->shape[0], C = x->shape[1], S = 1;
    for (int d = 2; d < x->ndim; d++) S *= x->shape[d];
    geom g = {.C = C, .M = N * S, .es = (int64_t)nn_dtype_size(x->dtype), .dt = x->dtype};
    g.inner = S == 1 || !nn_is_contiguous(x);
    g.rows = g.inner ? N * S : N * C;
    g.len = g.inner ? C : S;
    return g;
}

/* Row r of t (of x's layout): its first element, and where its channels start and step. */
static char *row_at(const geom *g, const nn_tensor *t, int64_t r, int64_t *c0, int64_t *step)
{
    *c0 = g->inner ? 0 : r % g->C;
    *step = g->inner ? 1 : 0;
    return (char *)nn_data(t) + r * g->len * (int64_t)nn_dtype_size(t->dtype);
}

static void load_row(double *b, const geom *g, const nn_tensor *t, int64_t r, int64_t *c0, int64_t *step)
{
    nn_cpu_load_row(b, row_at(g, t, r, c0, step), (int64_t)nn_dtype_size(t->dtype), g->len, t->dtype);
}

static void store_row(const double *b, const geom *g, nn_tensor *t, int64_t r)
{
    int64_t c0, step;
    char *p = row_at(g, t, r, &c0, &step);
    nn_cpu_store_row(p, (int64_t)nn_dtype_size(t->dtype), b, g->len, t->dtype);
}

/* Per-channel vectors: [C] contiguous tensors to doubles and back; fill when t is NULL. */
static void load_vec(double *v, const nn_tensor *t, int64_t C, double fill)
{
    if (t) nn_cpu_load_row(v, nn_data(t), (int64_t)nn_dtype_size(t->dtype), C, t->dtype);
    else for (int64_t c = 0; c < C; c++) v[c] = fill;
}

/* row `row` of a [2, C] pair (rows may be padded), or of a [C] vector (row 0) */
static void store_vec(nn_tensor *t, int row, const double *v, int64_t C)
{
    int64_t es = (int64_t)nn_dtype_size(t->dtype);
    nn_cpu_store_row((char *)nn_data(t) + (row ? t->strides[0] * es : 0), es, v, C, t->dtype);
}

/* The batch mean and biased variance of each channel. */
static void batch_stats(const geom *g, const nn_tensor *x, double *row, double *mean, double *var)
{
    int64_t C = g->C, c0, step;
    memset(mean, 0, sizeof(double) * (size_t)C);
    memset(var, 0, sizeof(double) * (size_t)C);
    for (int64_t r = 0; r < g->rows; r++) {
        load_row(row, g, x, r, &c0, &step);
        for (int64_t j = 0; j < g->len; j++) mean[c0 + j * step] += row[j];
    }
    for (int64_t c = 0; c < C; c++) mean[c] = g->M ? mean[c] / (double)g->M : 0;
    for (int64_t r = 0; r < g->rows; r++) {
        load_row(row, g, x, r, &c0, &step);
        for (int64_t j = 0; j < g->len; j++) {
            double d = row[j] - mean[c0 + j * step];
            var[c0 + j * step] += d * d;
        }
    }
    for (int64_t c = 0; c < C; c++) var[c] = g->M ? var[c] / (double)g->M : 0;
}

/* running = (1 - momentum) * running + momentum * v, in place */
static void update_running(nn_tensor *t, const double *v, double momentum, double *tmp, int64_t C)
{
    if (!t) return;
    load_vec(tmp, t, C, 0);
    for (int64_t c = 0; c < C; c++) tmp[c] = (1 - momentum) * tmp[c] + momentum * v[c];
    store_vec(t, 0, tmp, C);
}

/* in0 x, in1 weight, in2 bias, in3 running_mean, in4 running_var; out[0] y, out[1] batch stats */
nn_status nn_cpu_batch_norm(const nn_kargs *a)
{
    nn_tensor *y = a->out[0], *x = a->in[0];
    if (!nn_dtype_is_float(x->dtype)) return nn_not_implemented(a, x->dtype);
    bool training = a->i[0] != 0;
    double momentum = a->f[0], eps = a->f[1];
    geom g = geom_of(x);
    int64_t C = g.C, c0, step;
    double *row = malloc(sizeof(double) * (size_t)(g.len + 5 * C + 1));
    if (!row) return nn_error(NN_ERR_NOMEM, "batch_norm: out of memory");
    double *mean = row + g.len, *var = mean + C, *scale = var + C, *shift = scale + C, *tmp = shift + C;
    if (training) {
        batch_stats(&g, x, row, mean, var);
        for (int64_t c = 0; c < C; c++) scale[c] = 1 / sqrt(var[c] + eps);
        store_vec(a->out[1], 0, mean, C);
        store_vec(a->out[1], 1, scale, C);
        if (g.M > 0) { /* an empty batch leaves the running stats */
            update_running(a->in[3], mean, momentum, tmp, C);
            double unbiased = g.M > 1 ? (double)g.M / (double)(g.M - 1) : 1;
            for (int64_t c = 0; c < C; c++) var[c] *= unbiased;
            update_running(a->in[4], var, momentum, tmp, C);
        }
    } else {
        load_vec(mean, a->in[3], C, 0);
        load_vec(var, a->in[4], C, 1);
        for (int64_t c = 0; c < C; c++) scale[c] = 1 / sqrt(var[c] + eps);
    }
    load_vec(tmp, a->in[1], C, 1);
    for (int64_t c = 0; c < C; c++) scale[c] *= tmp[c];
    load_vec(shift, a->in[2], C, 0);
    for (int64_t r = 0; r < g.rows; r++) {
        load_row(row, &g, x, r, &c0, &step);
        for (int64_t j = 0; j < g.len; j++) {
            int64_t c = c0 + j * step;
            row[j] = (row[j] - mean[c]) * scale[c] + shift[c];
        }
        store_row(row, &g, y, r);
    }
    free(row);
    return NN_OK;
}

/* in0 grad_out, in1 x, in2 weight, in3 mean, in4 invstd (training) or running_var (eval);
 * out[0] [2, C] grad_weight and grad_bias, out[1] grad_input or NULL */
nn_status nn_cpu_batch_norm_backward(const nn_kargs *a)
{
    nn_tensor *gwb = a->out[0], *gx = a->out[1], *go = a->in[0], *x = a->in[1];
    if (!nn_dtype_is_float(x->dtype)) return nn_not_implemented(a, x->dtype);
    bool training = a->i[0] != 0;
    geom g = geom_of(x);
    int64_t C = g.C, c0, step;
    double *xr = malloc(sizeof(double) * (size_t)(2 * g.len + 5 * C + 1));
    if (!xr) return nn_error(NN_ERR_NOMEM, "batch_norm_backward: out of memory");
    double *gr = xr + g.len, *mean = gr + g.len, *invstd = mean + C, *w = invstd + C, *sg = w + C, *sgx = sg + C;
    load_vec(mean, a->in[3], C, 0);
    load_vec(invstd, a->in[4], C, 1);
    if (!training)
        for (int64_t c = 0; c < C; c++) invstd[c] = 1 / sqrt(invstd[c] + a->f[0]);
    load_vec(w, a->in[2], C, 1);
    memset(sg, 0, sizeof(double) * (size_t)(2 * C));
    for (int64_t r = 0; r < g.rows; r++) {
        load_row(xr, &g, x, r, &c0, &step);
        load_row(gr, &g, go, r, &c0, &step);
        for (int64_t j = 0; j < g.len; j++) {
            int64_t c = c0 + j * step;
            sg[c] += gr[j];
            sgx[c] += gr[j] * (xr[j] - mean[c]);
        }
    }
    store_vec(gwb, 1, sg, C); /* grad_bias */
    for (int64_t c = 0; c < C; c++) sgx[c] *= invstd[c];
    store_vec(gwb, 0, sgx, C); /* grad_weight */
    if (gx) {
        /* grad_input = k * (g - [training] (mean(g) + xhat * mean(g * xhat))), k = weight * invstd,
         * xhat = (x - mean) * invstd; sg is sum(g) and sgx is now sum(g * xhat) */
        double inv_m = training && g.M ? 1 / (double)g.M : 0;
        for (int64_t r = 0; r < g.rows; r++) {
            load_row(xr, &g, x, r, &c0, &step);
            load_row(gr, &g, go, r, &c0, &step);
            for (int64_t j = 0; j < g.len; j++) {
                int64_t c = c0 + j * step;
                double xhat = (xr[j] - mean[c]) * invstd[c];
                gr[j] = w[c] * invstd[c] * (gr[j] - inv_m * (sg[c] + xhat * sgx[c]));
            }
            store_row(gr, &g, gx, r);
        }
    }
    free(xr);
    return NN_OK;
}
