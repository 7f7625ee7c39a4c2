/* Stable argsort along a dim on the CPU, for every dtype: each slice's keys
 * (int64 for integer/bool dtypes, double for floating ones, so large int64
 * values stay exact) are merge sorted as a permutation. NaN sorts as the
 * largest value, as in PyTorch. CUDA tensors go through the host (see sort.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "dtype.h"
#include "error.h"
#include "ops.h"
#include "sort.h"

typedef struct {
    bool is_float, descending;
    const double *f;
    const int64_t *i;
} sort_keys;

/* a before b strictly (ties are resolved by the merge keeping order) */
static bool before(const sort_keys *k, int64_t a, int64_t b)
{
    if (k->is_float) {
        double x = k->f[a], y = k->f[b];
        bool xn = isnan(x), yn = isnan(y);
        if (xn || yn) return k->descending ? xn && !yn : !xn && yn;
        return k->descending ? x > y : x < y;
    }
    return k->descending ? k->i[a] > k->i[b] : k->i[a] < k->i[b];
}

static void merge_sort(const sort_keys *k, int64_t *p, int64_t *tmp, int64_t n)
{
    if (n < 2) return;
    if (n <= 16) { /* insertion sort: stable */
        for (int64_t i = 1; i < n; i++) {
            int64_t v = p[i], j = i;
            while (j > 0 && before(k, v, p[j - 1])) { p[j] = p[j - 1]; j--; }
            p[j] = v;
        }
        return;
    }
    int64_t h = n / 2;
    merge_sort(k, p, tmp, h);
    merge_sort(k, p + h, tmp, n - h);
    int64_t i = 0, j = h, o = 0;
    while (i < h && j < n) tmp[o++] = before(k, p[j], p[i]) ? p[j++] : p[i++];
    while (i < h) tmp[o++] = p[i++];
    while (j < n) tmp[o++] = p[j++];
    memcpy(p, tmp, (size_t)n * sizeof *p);
}

nn_tensor *nn_argsort(nn_tensor *x, int dim, bool descending)
{
    int nd = x->ndim;
    if (nn_wrap_dim("sort", &dim, nd)) return NULL;

    nn_tensor *d = nn_detach(x);
    nn_tensor *h = d ? nn_to_device(d, NN_DEVICE_CPU) : NULL;
    nn_release(d);
    nn_tensor *c = h ? nn_contiguous(h) : NULL;
    nn_release(h);
    if (!c) return NULL;
    nn_tensor *out = nn_empty(nd, x->shape, NN_I64, NN_DEVICE_CPU);
    if (!out) { nn_release(c); return NULL; }

    int64_t n = nd ? x->shape[dim] : 1, inner = 1, outer = 1;
    for (int i = 0; i < nd; i++) {
        if (i < dim) outer *= x->shape[i];
        else if (i > dim) inner *= x->shape[i];
    }
    bool is_float = nn_dtype_is_float(x->dtype);
    size_t es = nn_dtype_size(x->dtype);
    void *keys = malloc((size_t)(n ? n : 1) * 8);
    int64_t *perm = malloc((size_t)(n ? n : 1) * 8), *tmp = malloc((size_t)(n ? n : 1) * 8);
    if (!keys || !perm || !tmp) {
        free(keys); free(perm); free(tmp); nn_release(c); nn_release(out);
        nn_error(NN_ERR_NOMEM, "sort: out of memory");
        return NULL;
    }
    sort_keys k = {is_float, descending, keys, keys};
    const char *src = nn_data(c);
    int64_t *dst = nn_data(out);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * n * inner + in;
            for (int64_t j = 0; j < n; j++) {
                const char *p = src + (size_t)(base + j * inner) * es;
                if (is_float) ((double *)keys)[j] = nn_load_f64(p, x->dtype);
                else ((int64_t *)keys)[j] = nn_load_i64(p, x->dtype);
                perm[j] = j;
            }
            merge_sort(&k, perm, tmp, n);
            for (int64_t j = 0; j < n; j++) dst[base + j * inner] = perm[j];
        }
    free(keys); free(perm); free(tmp);
    nn_release(c);
    nn_tensor *r = nn_to_device(out, x->storage->device);
    nn_release(out);
    return r;
}
