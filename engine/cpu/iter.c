#include "iter.h"

#include <string.h>

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
