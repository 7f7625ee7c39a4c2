#include "iter.h"

#include <string.h>

#include "parallel.h"

static void iter_init(nn_iter *it, int nops, nn_tensor *const *ops, bool memory_order);

void nn_iter_init(nn_iter *it, int nops, nn_tensor *const *ops) { iter_init(it, nops, ops, true); }
void nn_iter_init_logical(nn_iter *it, int nops, nn_tensor *const *ops) { iter_init(it, nops, ops, false); }

/* Sort the dims by the output's stride, outermost first (stable: ties keep their order). */
static void memory_order_dims(nn_iter *it, int nd)
{
    for (int d = 1; d < nd; d++) {
        if (it->strides[0][d] <= it->strides[0][d - 1]) continue; /* already in order here */
        int j = d;
        int64_t sh = it->shape[j], st[NN_ITER_MAX_OPS];
        for (int k = 0; k < it->nops; k++) st[k] = it->strides[k][j];
        for (; j > 0 && it->strides[0][j - 1] < st[0]; j--) {
            it->shape[j] = it->shape[j - 1];
            for (int k = 0; k < it->nops; k++) it->strides[k][j] = it->strides[k][j - 1];
        }
        it->shape[j] = sh;
        for (int k = 0; k < it->nops; k++) it->strides[k][j] = st[k];
    }
}

/* A short innermost dim (a broadcast against a trailing dim of 2 or 3, as boxes' corners) makes
 * a row call per few elements: the longest dim becomes the rows instead (strided, but long). */
static void long_rows(nn_iter *it)
{
    int inner = it->ndim - 1, best = -1;
    if (inner < 1 || it->shape[inner] >= 16) return;
    for (int d = 0; d < inner; d++)
        if (it->shape[d] >= 4 * it->shape[inner] && (best < 0 || it->shape[d] > it->shape[best])) best = d;
    if (best < 0) return;
    int64_t sh = it->shape[best], st[NN_ITER_MAX_OPS];
    for (int k = 0; k < it->nops; k++) st[k] = it->strides[k][best];
    for (int d = best; d < inner; d++) {
        it->shape[d] = it->shape[d + 1];
        for (int k = 0; k < it->nops; k++) it->strides[k][d] = it->strides[k][d + 1];
    }
    it->shape[inner] = sh;
    for (int k = 0; k < it->nops; k++) it->strides[k][inner] = st[k];
}

static void iter_init(nn_iter *it, int nops, nn_tensor *const *ops, bool memory_order)
{
    const nn_tensor *out = ops[0];
    memset(it, 0, sizeof *it);
    it->nops = nops;
    int nd = out->ndim;
    for (int k = 0; k < nops; k++) {
        const nn_tensor *t = ops[k];
        int64_t es = (int64_t)nn_dtype_size(t->dtype);
        it->data[k] = nn_data(t);
        it->dtype[k] = t->dtype;
        for (int d = 0; d < nd; d++) {
            int td = d - (nd - t->ndim); /* right-aligned, as in broadcasting */
            it->strides[k][d] = td < 0 || t->shape[td] == 1 ? 0 : t->strides[td] * es;
        }
    }
    /* drop size-1 dims, then merge dim d into d+1 when every operand is contiguous across them */
    int n = 0;
    for (int d = 0; d < nd; d++) {
        if (out->shape[d] == 1) continue;
        it->shape[n] = out->shape[d];
        for (int k = 0; k < nops; k++) it->strides[k][n] = it->strides[k][d];
        n++;
    }
    if (memory_order) memory_order_dims(it, n);
    int m = 0;
    for (int d = 0; d < n; d++) {
        if (m > 0) {
            bool merge = true;
            for (int k = 0; k < nops; k++)
                if (it->strides[k][m - 1] != it->strides[k][d] * it->shape[d]) { merge = false; break; }
            if (merge) {
                it->shape[m - 1] *= it->shape[d];
                for (int k = 0; k < nops; k++) it->strides[k][m - 1] = it->strides[k][d];
                continue;
            }
        }
        it->shape[m] = it->shape[d];
        for (int k = 0; k < nops; k++) it->strides[k][m] = it->strides[k][d];
        m++;
    }
    it->ndim = m;
    if (memory_order) long_rows(it);
    for (int d = 0; d < nd; d++)
        if (out->shape[d] == 0) it->ndim = -1; /* empty: nothing to run */
}

void nn_iter_run(const nn_iter *it, nn_iter_row row, void *ctx)
{
    if (it->ndim < 0) return;
    char *ptr[NN_ITER_MAX_OPS];
    int64_t inner[NN_ITER_MAX_OPS];
    for (int k = 0; k < it->nops; k++) {
        ptr[k] = it->data[k];
        inner[k] = it->ndim ? it->strides[k][it->ndim - 1] : 0;
    }
    if (it->ndim <= 1) {
        row(ptr, inner, it->ndim ? it->shape[0] : 1, ctx);
        return;
    }
    int outer = it->ndim - 1;
    int64_t idx[NN_MAX_DIMS] = {0};
    int64_t n = it->shape[outer];
    for (;;) {
        char *p[NN_ITER_MAX_OPS];
        memcpy(p, ptr, sizeof p);
        row(p, inner, n, ctx);
        int d = outer - 1;
        for (; d >= 0; d--) {
            for (int k = 0; k < it->nops; k++) ptr[k] += it->strides[k][d];
            if (++idx[d] < it->shape[d]) break;
            for (int k = 0; k < it->nops; k++) ptr[k] -= it->strides[k][d] * it->shape[d];
            idx[d] = 0;
        }
        if (d < 0) return;
    }
}

void nn_iter_init_row(nn_iter *it, int nops, char *const *data, const int64_t *strides, int64_t n)
{
    it->nops = nops;
    it->ndim = n ? 1 : -1;
    it->shape[0] = n;
    for (int k = 0; k < nops; k++) it->data[k] = data[k], it->strides[k][0] = strides[k];
}

/* ---- parallel: the work is cut into units of up to NN_ITER_BLOCK elements of one row ---- */

typedef struct {
    const nn_iter *it;
    nn_iter_row row;
    const void *ctx;
    size_t ctx_size;  /* 0: the rows share ctx (read only) */
    int64_t rowlen, bpr; /* elements a row, units a row */
} par_job;

static nn_status run_units(int64_t ub, int64_t ue, void *arg)
{
    const par_job *j = arg;
    const nn_iter *it = j->it;
    _Alignas(16) unsigned char own[256];
    void *ctx = (void *)j->ctx;
    if (j->ctx_size) ctx = memcpy(own, j->ctx, j->ctx_size);
    int outer = it->ndim - 1; /* dims 0 .. outer-1 pick the row */
    int64_t idx[NN_MAX_DIMS] = {0}, inner[NN_ITER_MAX_OPS], r = ub / j->bpr;
    char *ptr[NN_ITER_MAX_OPS];
    for (int k = 0; k < it->nops; k++) {
        ptr[k] = it->data[k];
        inner[k] = it->strides[k][outer];
    }
    for (int d = outer - 1; d >= 0; d--) { /* row r's index and pointers */
        idx[d] = r % it->shape[d];
        r /= it->shape[d];
        for (int k = 0; k < it->nops; k++) ptr[k] += idx[d] * it->strides[k][d];
    }
    for (int64_t u = ub; u < ue;) {
        int64_t b = u % j->bpr, e = ue - u + b < j->bpr ? ue - u + b : j->bpr; /* units [b, e) of this row */
        int64_t lo = b * NN_ITER_BLOCK, hi = e * NN_ITER_BLOCK < j->rowlen ? e * NN_ITER_BLOCK : j->rowlen;
        char *p[NN_ITER_MAX_OPS];
        for (int k = 0; k < it->nops; k++) p[k] = ptr[k] + lo * inner[k];
        j->row(p, inner, hi - lo, ctx);
        u += e - b;
        if (j->ctx_size && *(nn_status *)ctx) break;
        for (int d = outer - 1; d >= 0; d--) { /* the next row */
            for (int k = 0; k < it->nops; k++) ptr[k] += it->strides[k][d];
            if (++idx[d] < it->shape[d]) break;
            for (int k = 0; k < it->nops; k++) ptr[k] -= it->strides[k][d] * it->shape[d];
            idx[d] = 0;
        }
    }
    return j->ctx_size ? *(nn_status *)ctx : NN_OK;
}

static nn_status run_parallel(const nn_iter *it, nn_iter_row row, void *ctx, size_t ctx_size)
{
    if (it->ndim < 0) return NN_OK;
    int64_t total = 1;
    for (int d = 0; d < it->ndim; d++) total *= it->shape[d];
    if (it->ndim == 0 || total < NN_PARALLEL_MIN || ctx_size > 256) {
        nn_iter_run(it, row, ctx);
        return ctx_size ? *(nn_status *)ctx : NN_OK;
    }
    par_job j = {it, row, ctx, ctx_size, it->shape[it->ndim - 1], 0};
    j.bpr = (j.rowlen + NN_ITER_BLOCK - 1) / NN_ITER_BLOCK;
    int64_t unit = j.rowlen < NN_ITER_BLOCK ? j.rowlen : NN_ITER_BLOCK;
    nn_status st = nn_parallel_for(total / j.rowlen * j.bpr, (NN_PARALLEL_MIN / 2 + unit - 1) / unit, run_units, &j);
    if (ctx_size) *(nn_status *)ctx = st;
    return st;
}

void nn_iter_run_parallel(const nn_iter *it, nn_iter_row row, const void *ctx) { run_parallel(it, row, (void *)ctx, 0); }

nn_status nn_iter_run_parallel_status(const nn_iter *it, nn_iter_row row, void *ctx, size_t ctx_size)
{
    return run_parallel(it, row, ctx, ctx_size);
}
