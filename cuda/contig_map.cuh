/* The CUDA scaffold of the fused pointwise kernels (pointwise_loss.cu, activation.cu; the CPU's is
 * engine/cpu/contig_map.h): out[i] = a function of the operands' element i over contiguous operands
 * of one float dtype, in one grid-stride pass, four elements a thread as one vector each where all
 * operands are aligned. A family supplies its element function as a template OP<KIND, GRAD> with
 * a static f(a, b, c, p, q) (GRAD: the backward, whose last operand is the incoming gradient) and
 * a struct whose static run<T>(a, n, s) switches over its kinds to cmap_launch. */
#pragma once

#include "ew.cuh"

namespace nnk {

constexpr int CMAP_PER = 4;

/* o[i] = OP::f of element i of i0 .. i<NIN - 1> (0 past them); with LAST0 the last one is 0-dim, read once */
template <typename T, typename OP, int NIN, bool LAST0>
__global__ void cmap(const T *__restrict__ i0, const T *__restrict__ i1, const T *__restrict__ i2, T *__restrict__ o, int64_t n,
                     typename ctype<T>::type p, typename ctype<T>::type q, bool vec)
{
    static_assert(NIN >= 1 && NIN <= 3 && (!LAST0 || NIN > 1), "one to three operands, a 0-dim one last");
    typedef typename ctype<T>::type C;
    typedef Vec<T, CMAP_PER> V;
    constexpr bool full1 = NIN > 1 && !(LAST0 && NIN == 2), full2 = NIN > 2 && !LAST0; /* read per element */
    const C last = LAST0 ? ld((NIN == 2 ? i1 : i2)[0]) : C(0);
    auto one = [&](C a, C b, C c) -> T {
        if constexpr (LAST0 && NIN == 2) b = last;
        if constexpr (LAST0 && NIN == 3) c = last;
        return st<T>(OP::f(a, b, c, p, q));
    };
    const int64_t blocks = (n + CMAP_PER - 1) / CMAP_PER;
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < blocks; b += (int64_t)gridDim.x * blockDim.x) {
        if (vec && (b + 1) * CMAP_PER <= n) {
            V v0 = ((const V *)i0)[b], v1, v2, ov;
            if constexpr (full1) v1 = ((const V *)i1)[b];
            if constexpr (full2) v2 = ((const V *)i2)[b];
#pragma unroll
            for (int l = 0; l < CMAP_PER; l++) ov.v[l] = one(ld(v0.v[l]), full1 ? ld(v1.v[l]) : C(0), full2 ? ld(v2.v[l]) : C(0));
            ((V *)o)[b] = ov;
            continue;
        }
        for (int64_t j = b * CMAP_PER; j < n && j < (b + 1) * CMAP_PER; j++)
            o[j] = one(ld(i0[j]), full1 ? ld(i1[j]) : C(0), full2 ? ld(i2[j]) : C(0));
    }
}

/* a's forward, OP<KIND, false> on its NFWD operands, or its backward, OP<KIND, true> on NFWD + 1
 * (the incoming gradient last, 0-dim where BCAST_G allows it), into a->out[0] of n elements;
 * p, q = a->f[0], a->f[1] */
template <typename T, template <int, bool> class OP, int KIND, int NFWD, bool BCAST_G>
nn_status cmap_launch(const nn_kargs *a, int64_t n, cudaStream_t s)
{
    typedef typename ctype<T>::type C;
    const T *in[3] = {nullptr, nullptr, nullptr};
    T *o = (T *)nn_data(a->out[0]);
    const size_t vb = sizeof(Vec<T, CMAP_PER>);
    bool vec = (uintptr_t)o % vb == 0;
    for (int k = 0; k < a->nin && k < 3; k++) {
        in[k] = (const T *)nn_data(a->in[k]);
        vec = vec && (uintptr_t)in[k] % vb == 0;
    }
    unsigned grid = blocks_for((n + CMAP_PER - 1) / CMAP_PER);
    C p = (C)a->f[0], q = (C)a->f[1];
    if (a->nin == NFWD) nn_launch<cmap<T, OP<KIND, false>, NFWD, false>>(grid, 256, s, in[0], in[1], in[2], o, n, p, q, vec);
    else if (BCAST_G && a->in[NFWD]->ndim == 0)
        nn_launch<cmap<T, OP<KIND, true>, NFWD + 1, BCAST_G>>(grid, 256, s, in[0], in[1], in[2], o, n, p, q, vec);
    else nn_launch<cmap<T, OP<KIND, true>, NFWD + 1, false>>(grid, 256, s, in[0], in[1], in[2], o, n, p, q, vec);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

/* an extern "C" kernel's body: KINDS::run<T>(a, n, stream) by a->out[0]'s float dtype */
template <typename KINDS> nn_status cmap_run(const nn_kargs *a)
{
    int64_t n = nn_numel(a->out[0]);
    if (!n) return NN_OK;
    cudaStream_t s = nn_cuda_stream(nn_cuda_index(a));
    NN_DISPATCH_FLOATS(a->out[0]->dtype, a, return KINDS::template run<scalar_t>(a, n, s));
    return NN_OK;
}

} // namespace nnk
