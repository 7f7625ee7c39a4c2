/* The geometry of a reduction over a dim mask (reduce.cu's, and the complex reductions' of
 * complex.cu): the input's dims split into kept and reduced groups, each sorted by stride
 * (innermost last) and coalesced; output element o and reduced position r map to byte offsets
 * through them. out has the keepdim shape; out2 (max_dim/min_dim's indices) may be NULL. */
#pragma once

#include <string.h>

#include <utility>

#include "core.cuh"

namespace nnr {

struct RGeo {
    int nk, nr;
    int64_t ks[NN_MAX_DIMS], kin[NN_MAX_DIMS], kout[NN_MAX_DIMS], kout2[NN_MAX_DIMS]; /* kept: sizes, byte strides */
    int64_t rs[NN_MAX_DIMS], rin[NN_MAX_DIMS];                                       /* reduced */
    int64_t nout, nred;
    bool small; /* nout and nred below 2^31: 32-bit division */
};

/* i becomes i / s; returns i % s */
__device__ __forceinline__ int64_t divmod(int64_t &i, int64_t s, bool small)
{
    if (small) {
        uint32_t a = (uint32_t)i, b = (uint32_t)s, q = a / b;
        i = q;
        return a - q * b;
    }
    int64_t q = i / s, r = i - q * s;
    i = q;
    return r;
}

__device__ __forceinline__ void kept_offsets(const RGeo &g, int64_t o, int64_t &in, int64_t &out, int64_t &out2)
{
    in = out = out2 = 0;
    for (int d = g.nk - 1; d >= 0; d--) {
        int64_t r = d ? divmod(o, g.ks[d], g.small) : o;
        in += r * g.kin[d];
        out += r * g.kout[d];
        out2 += r * g.kout2[d];
    }
}

__device__ __forceinline__ int64_t red_offset(const RGeo &g, int64_t r)
{
    if (g.nr == 1) return r * g.rin[0];
    int64_t off = 0;
    for (int d = g.nr - 1; d >= 0; d--) off += (d ? divmod(r, g.rs[d], g.small) : r) * g.rin[d];
    return off;
}

inline int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

/* sort by |s0| descending (innermost last), then merge neighbours whose strides line up */
inline int coalesce(int n, int64_t *sz, int64_t *s0, int64_t *s1, int64_t *s2)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && abs64(s0[j - 1]) < abs64(s0[j]); j--) {
            std::swap(sz[j], sz[j - 1]);
            std::swap(s0[j], s0[j - 1]);
            if (s1) std::swap(s1[j], s1[j - 1]);
            if (s2) std::swap(s2[j], s2[j - 1]);
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

inline RGeo plan(const nn_tensor *x, const nn_tensor *out, const nn_tensor *out2, uint32_t mask)
{
    RGeo g;
    memset(&g, 0, sizeof g);
    g.nred = 1;
    int64_t ein = (int64_t)nn_dtype_size(x->dtype), eo = (int64_t)nn_dtype_size(out->dtype);
    int64_t eo2 = out2 ? (int64_t)nn_dtype_size(out2->dtype) : 0;
    for (int d = 0; d < x->ndim; d++) {
        bool red = mask == 0 || (mask >> d & 1);
        if (red) g.nred *= x->shape[d];
        if (x->shape[d] == 1) continue;
        if (red) {
            g.rs[g.nr] = x->shape[d];
            g.rin[g.nr++] = x->strides[d] * ein;
        } else {
            g.ks[g.nk] = x->shape[d];
            g.kin[g.nk] = x->strides[d] * ein;
            g.kout[g.nk] = out->strides[d] * eo;
            g.kout2[g.nk++] = out2 ? out2->strides[d] * eo2 : 0;
        }
    }
    g.nk = coalesce(g.nk, g.ks, g.kin, g.kout, g.kout2);
    g.nr = coalesce(g.nr, g.rs, g.rin, NULL, NULL);
    g.nout = nn_numel(out);
    g.small = g.nout < (int64_t(1) << 31) && g.nred < (int64_t(1) << 31);
    return g;
}

} // namespace nnr
