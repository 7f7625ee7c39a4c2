/* CUDA dropout (ops.def dropout, dropout_backward; engine/dropout.c): one pass writes y and a
 * one-byte mask, and backward reads the mask instead of a noise tensor of the data's size.
 * Element j's draw is dropout_noise's (four to a Philox block, two for float64), so the same
 * elements are kept as on the CPU and as x * noise would keep. */
#include "ew.cuh"
#include "philox.cuh"

using namespace nnk;

namespace {

/* a thread per Philox block: its PER elements, read and written as one vector each (and the mask
 * as one word) when vec says the pointers allow it, so that a warp's accesses stay contiguous */
template <typename T>
__global__ void fwd(const T *__restrict__ x, T *__restrict__ y, uint8_t *__restrict__ mask, int64_t n, uint64_t seed,
                    uint64_t offset, double keep, typename ctype<T>::type scale, bool vec)
{
    typedef typename ctype<T>::type C;
    constexpr bool wide = sizeof(T) == 8;
    constexpr int PER = wide ? 2 : 4;
    typedef typename std::conditional<PER == 4, uint32_t, uint16_t>::type M;
    const int64_t blocks = (n + PER - 1) / PER;
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < blocks; b += (int64_t)gridDim.x * blockDim.x) {
        uint4 w = philox(offset + b, seed);
        if (vec && (b + 1) * PER <= n) {
            Vec<T, PER> xv = ((const Vec<T, PER> *)x)[b], yv;
            M m = 0;
#pragma unroll
            for (int l = 0; l < PER; l++) {
                bool kept = drop_u(w, l, wide) < keep;
                m |= (M)kept << (8 * l);
                yv.v[l] = st<T>(ld(xv.v[l]) * (kept ? scale : C(0))); /* x * 0: a dropped inf or nan gives nan */
            }
            ((Vec<T, PER> *)y)[b] = yv;
            ((M *)mask)[b] = m;
            continue;
        }
        for (int l = 0; l < PER; l++) {
            int64_t j = b * PER + l;
            if (j >= n) break;
            bool kept = drop_u(w, l, wide) < keep;
            mask[j] = kept;
            y[j] = st<T>(ld(x[j]) * (kept ? scale : C(0)));
        }
    }
}

template <typename T>
__global__ void bwd(const T *__restrict__ g, const uint8_t *__restrict__ mask, T *__restrict__ gi, int64_t n,
                    typename ctype<T>::type scale)
{
    typedef typename ctype<T>::type C;
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < n; j += (int64_t)gridDim.x * blockDim.x)
        gi[j] = st<T>(ld(g[j]) * (mask[j] ? scale : C(0)));
}

/* the scale as a value of the data's dtype, as the noise was, in T's compute type */
template <typename T> typename ctype<T>::type scale_in(double v, nn_dtype dt) { return (typename ctype<T>::type)nn_as_dtype_value(v, dt); }

template <typename T> nn_status run(const nn_kargs *a, bool forward)
{
    int64_t n = nn_numel(a->in[0]);
    if (!n) return NN_OK;
    cudaStream_t s = nn_cuda_stream(nn_cuda_index(a));
    nn_dtype dt = a->in[0]->dtype;
    if (forward) {
        constexpr int per = sizeof(T) == 8 ? 2 : 4;
        const void *x = nn_data(a->in[0]), *y = nn_data(a->out[0]), *m = nn_data(a->out[1]);
        bool vec = (uintptr_t)x % sizeof(Vec<T, per>) == 0 && (uintptr_t)y % sizeof(Vec<T, per>) == 0 && (uintptr_t)m % per == 0;
        nn_launch<fwd<T>>(blocks_for((n + per - 1) / per), 256, s, (const T *)x, (T *)y, (uint8_t *)m, n, (uint64_t)a->i[1],
                          (uint64_t)a->i[2], a->f[0], scale_in<T>(1.0 / a->f[0], dt), vec);
    } else {
        nn_launch<bwd<T>>(blocks_for(n), 256, s, (const T *)nn_data(a->in[0]), (const uint8_t *)nn_data(a->in[1]),
                          (T *)nn_data(a->out[0]), n, scale_in<T>(a->f[0], dt));
    }
    NN_CHECK_LAUNCH();
    return NN_OK;
}

nn_status dispatch(const nn_kargs *a, bool forward)
{
    switch (a->in[0]->dtype) {
    case NN_F32: return run<float>(a, forward);
    case NN_F64: return run<double>(a, forward);
    case NN_F16: return run<__half>(a, forward);
    case NN_BF16: return run<__nv_bfloat16>(a, forward);
    default: return nn_not_implemented(a, a->in[0]->dtype);
    }
}

} // namespace

extern "C" nn_status nn_cuda_dropout(const nn_kargs *a) { return dispatch(a, true); }
extern "C" nn_status nn_cuda_dropout_backward(const nn_kargs *a) { return dispatch(a, false); }
