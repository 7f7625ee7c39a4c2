/* A reduction's geometry (reduce_plan.h). */
#include <string.h>

#include "reduce_plan.h"

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

/* Sort by |input stride| descending (innermost last), then merge neighbours
 * whose strides line up in every operand. */
static int coalesce(int n, int64_t *sz, int64_t *s0, int64_t *s1, int64_t *s2)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && abs64(s0[j - 1]) < abs64(s0[j]); j--) {
            int64_t t;
            t = sz[j], sz[j] = sz[j - 1], sz[j - 1] = t;
            t = s0[j], s0[j] = s0[j - 1], s0[j - 1] = t;
            if (s1) t = s1[j], s1[j] = s1[j - 1], s1[j - 1] = t;
            if (s2) t = s2[j], s2[j] = s2[j - 1], s2[j - 1] = t;
        }
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && s0[m - 1] == s0[i] * sz[i] && (!s1 || s1[m - 1] == s1[i] * sz[i]) && (!s2 || s2[m - 1] == s2[i] * sz[i])) {
            sz[m - 1] *= sz[i];
            s0[m - 1] = s0[i];
            if (s1) s1[m - 1] = s1[i];
            if (s2) s2[m - 1] = s2[i];
            continue;
        }
        sz[m] = sz[i], s0[m] = s0[i];
        if (s1) s1[m] = s1[i];
        if (s2) s2[m] = s2[i];
        m++;
    }
    return m;
}

void nn_reduce_plan_init(nn_reduce_plan *p, const nn_tensor *x, const nn_tensor *out, const nn_tensor *out2, uint32_t mask)
{
    memset(p, 0, sizeof *p);
    p->nred = 1;
    int64_t ein = (int64_t)nn_dtype_size(x->dtype), eo = (int64_t)nn_dtype_size(out->dtype);
    int64_t eo2 = out2 ? (int64_t)nn_dtype_size(out2->dtype) : 0;
    for (int d = 0; d < x->ndim; d++) {
        bool red = mask == 0 || (mask >> d & 1);
        if (red) p->nred *= x->shape[d];
        if (x->shape[d] == 1) continue;
        if (red) {
            p->rs[p->nr] = x->shape[d];
            p->rin[p->nr++] = x->strides[d] * ein;
        } else {
            p->ks[p->nk] = x->shape[d];
            p->kin[p->nk] = x->strides[d] * ein;
            p->kout[p->nk] = out->strides[d] * eo;
            p->kout2[p->nk++] = out2 ? out2->strides[d] * eo2 : 0;
        }
    }
    p->nk = coalesce(p->nk, p->ks, p->kin, p->kout, p->kout2);
    p->nr = coalesce(p->nr, p->rs, p->rin, NULL, NULL);
}
