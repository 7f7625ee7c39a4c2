/* nn_argsort (engine/sort.c) against a plain reference: every dtype, every dim of
 * 1-D..3-D inputs in every layout, both directions, ties (stable order), NaN and
 * infinities, large int64 values, 0-dim and empty inputs, bad dims. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dtype.h"
#include "error.h"
#include "layouts.h"
#include "sort.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

/* small integers, so ties are common; floats also get NaN and +-inf */
static nn_tensor *make(int nd, const int64_t *shape, nn_dtype dt, int kind)
{
    nn_tensor *base = layout_base(kind, nd, shape, dt);
    char *p = nn_data(base);
    for (int64_t i = 0; i < nn_numel(base); i++) {
        double v = floor(urand() * 6) - 2, r = urand();
        if (nn_dtype_is_float(dt) && r < 0.1) v = NAN;
        else if (nn_dtype_is_float(dt) && r < 0.15) v = r < 0.125 ? INFINITY : -INFINITY;
        if (dt == NN_U8) v = fabs(v);
        if (dt == NN_BOOL) v = v > 0;
        nn_store_f64(p + i * nn_dtype_size(dt), dt, v);
    }
    return layout_view(base, kind, nd, shape);
}

/* a strictly before b in the wanted order */
static int ref_before(double a, double b, bool desc)
{
    if (isnan(a) || isnan(b)) return desc ? isnan(a) && !isnan(b) : !isnan(a) && isnan(b);
    return desc ? a > b : a < b;
}

/* check one result line by line: indices form the stable sorted permutation */
static void check_sort(nn_tensor *x, int dim, bool desc, const char *what)
{
    nn_tensor *ix = nn_argsort(x, dim, desc);
    CHECK(ix != NULL, "%s: %s", what, nn_last_error());
    if (!ix) return;
    CHECK(ix->dtype == NN_I64 && ix->ndim == x->ndim, "%s: result dtype/ndim", what);
    int nd = x->ndim;
    int64_t n = nd ? x->shape[dim] : 1, total = nn_numel(x);
    int64_t c[NN_MAX_DIMS] = {0};
    int bad = 0;
    for (int64_t e = 0; e < total && !bad; e++) {
        int64_t r = e;
        for (int d = nd - 1; d >= 0; d--) { c[d] = r % x->shape[d]; r /= x->shape[d]; }
        if (nd && c[dim] != 0) continue;
        /* reference: insertion sort of positions 0..n-1 of this line (stable) */
        int64_t *perm = malloc((size_t)n * sizeof *perm);
        double *key = malloc((size_t)n * sizeof *key);
        for (int64_t j = 0; j < n; j++) {
            if (nd) c[dim] = j;
            key[j] = nn_get_f64(x, c);
            int64_t k = j;
            while (k > 0 && ref_before(key[j], key[perm[k - 1]], desc)) { perm[k] = perm[k - 1]; k--; }
            perm[k] = j;
        }
        for (int64_t j = 0; j < n; j++) {
            if (nd) c[dim] = j;
            if (nn_get_i64(ix, c) != perm[j]) bad = 1;
        }
        free(perm);
        free(key);
    }
    CHECK(!bad, "%s: permutation differs from the reference", what);
    nn_release(ix);
}

static const char *kind_name[] = {"contiguous", "transposed", "narrowed", "expanded"};

int main(void)
{
    static const int64_t shapes[3][3] = {{9}, {4, 7}, {3, 5, 4}};
    char what[128];
    for (int dt = 0; dt < NN_NDTYPES; dt++)
        for (int nd = 1; nd <= 3; nd++)
            for (int kind = 0; kind < NKINDS; kind++)
                for (int dim = 0; dim < nd; dim++)
                    for (int desc = 0; desc < 2; desc++) {
                        nn_tensor *x = make(nd, shapes[nd - 1], dt, kind);
                        snprintf(what, sizeof what, "%s %dD %s dim %d%s", nn_dtype_name(dt), nd, kind_name[kind], dim, desc ? " desc" : "");
                        check_sort(x, dim, desc, what);
                        nn_release(x);
                    }

    /* negative dim, 0-dim, empty */
    nn_tensor *x = make(2, (int64_t[]){3, 4}, NN_F32, CONTIG);
    nn_tensor *a = nn_argsort(x, -1, false), *b = nn_argsort(x, 1, false);
    int same = a && b;
    for (int64_t i = 0; same && i < 12; i++) same = ((int64_t *)nn_data(a))[i] == ((int64_t *)nn_data(b))[i];
    CHECK(same, "dim -1 equals dim 1");
    nn_release(a); nn_release(b);
    CHECK(nn_argsort(x, 2, false) == NULL && strstr(nn_last_error(), "out of range"), "dim 2 rejected: %s", nn_last_error());
    nn_release(x);
    nn_tensor *s = nn_scalar_f64(3.0), *si = nn_argsort(s, 0, false);
    CHECK(si && si->ndim == 0 && *(int64_t *)nn_data(si) == 0, "0-dim");
    nn_release(s); nn_release(si);
    nn_tensor *e = nn_empty(2, (int64_t[]){0, 3}, NN_F64, NN_DEVICE_CPU), *ei = nn_argsort(e, 0, true);
    CHECK(ei && ei->shape[0] == 0 && ei->shape[1] == 3, "empty");
    nn_release(e); nn_release(ei);

    /* int64 beyond 2^53 keeps exact order */
    nn_tensor *big = nn_empty(1, (int64_t[]){3}, NN_I64, NN_DEVICE_CPU);
    int64_t *bp = nn_data(big);
    bp[0] = (INT64_C(1) << 62) + 1; bp[1] = INT64_C(1) << 62; bp[2] = -5;
    nn_tensor *bi = nn_argsort(big, 0, false);
    CHECK(bi && ((int64_t *)nn_data(bi))[0] == 2 && ((int64_t *)nn_data(bi))[1] == 1 && ((int64_t *)nn_data(bi))[2] == 0, "large int64");
    nn_release(big); nn_release(bi);
    return CHECK_REPORT();
}
