/* gradcheck: analytic gradients from nn_backward against float64 central
 * finite differences. f maps n float64 inputs to one output; the scalar
 * checked is sum(f(x) * w) for a fixed random w, so every output element counts. */
#ifndef NN_GRADCHECK_H
#define NN_GRADCHECK_H

#include <math.h>
#include <stdio.h>

#include "autograd.h"

typedef nn_tensor *(*gc_fn)(nn_tensor *const *x, void *ctx);

static double gc_weighted_sum(nn_tensor *out, nn_tensor *w)
{
    nn_tensor *c = nn_contiguous(out);
    double s = 0;
    const double *p = nn_data(c), *q = nn_data(w);
    for (int64_t i = 0; i < nn_numel(c); i++) s += p[i] * q[i];
    nn_release(c);
    return s;
}

/* Returns 1 when every gradient matches within atol + rtol*|numeric|; prints the first mismatch. */
static int gradcheck(const char *name, gc_fn f, nn_tensor *const *x, int n, void *ctx, double eps, double atol, double rtol)
{
    for (int i = 0; i < n; i++) {
        nn_release(x[i]->grad);
        x[i]->grad = NULL;
    }
    nn_tensor *out = f(x, ctx);
    if (!out) { fprintf(stderr, "%s: forward failed: %s\n", name, nn_last_error()); return 0; }
    nn_tensor *w = nn_randn(out->ndim, out->shape, NN_F64, NN_DEVICE_CPU);
    nn_tensor *wc = nn_contiguous(w);
    int ok = 1;
    if (nn_backward(out, w, false)) { fprintf(stderr, "%s: backward failed: %s\n", name, nn_last_error()); ok = 0; }
    nn_release(out);
    bool was = nn_grad_enabled();
    nn_set_grad_enabled(false);
    for (int i = 0; i < n && ok; i++) {
        if (!x[i]->requires_grad) continue;
        int64_t numel = nn_numel(x[i]);
        int64_t idx[NN_MAX_DIMS] = {0};
        for (int64_t e = 0; e < numel && ok; e++) {
            int64_t off = x[i]->offset;
            for (int d = 0; d < x[i]->ndim; d++) off += idx[d] * x[i]->strides[d];
            double *p = (double *)x[i]->storage->data + off;
            double orig = *p;
            *p = orig + eps;
            nn_tensor *hi = f(x, ctx);
            *p = orig - eps;
            nn_tensor *lo = f(x, ctx);
            *p = orig;
            double num = (gc_weighted_sum(hi, wc) - gc_weighted_sum(lo, wc)) / (2 * eps);
            nn_release(hi);
            nn_release(lo);
            double ana = x[i]->grad ? nn_get_f64(x[i]->grad, idx) : 0.0;
            if (!(fabs(ana - num) <= atol + rtol * fabs(num))) {
                fprintf(stderr, "%s: input %d element %lld: analytic %.10g, numeric %.10g\n", name, i, (long long)e, ana, num);
                ok = 0;
            }
            for (int d = x[i]->ndim - 1; d >= 0; d--) {
                if (++idx[d] < x[i]->shape[d]) break;
                idx[d] = 0;
            }
        }
    }
    nn_set_grad_enabled(was);
    nn_release(w);
    nn_release(wc);
    return ok;
}

#endif
