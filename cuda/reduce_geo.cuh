/* The geometry of a reduction over a dim mask (reduce.cu's, and the complex reductions' of
 * complex.cu): the input's dims split into kept and reduced groups, each sorted by stride
 * (innermost last) and coalesced (engine/reduce_plan.h); output element o and reduced position r
 * map to byte offsets through them. out has the keepdim shape; out2 (max_dim/min_dim's indices) may be NULL. */
#pragma once

#include "core.cuh"
#include "reduce_plan.h"

namespace nnr {

/* the engine's plan (reduce_plan.h), and what the kernels' index arithmetic needs besides */
struct RGeo : nn_reduce_plan {
    int64_t nout;
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

inline RGeo plan(const nn_tensor *x, const nn_tensor *out, const nn_tensor *out2, uint32_t mask)
{
    RGeo g;
    nn_reduce_plan_init(&g, x, out, out2, mask);
    g.nout = nn_numel(out);
    g.small = g.nout < (int64_t(1) << 31) && g.nred < (int64_t(1) << 31);
    return g;
}

} // namespace nnr
