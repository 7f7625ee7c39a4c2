/* The shape of cuda/strided_copy.cuh's tiled transpose: a block of T x 32 rows by CW x 32 columns
 * (T, CW in 1, 2, 4), NCHW -> NHWC ("to") and back ("from") on AlexNet's activations, 16- and
 * 32-bit elements, beside a plain device-to-device copy of the same bytes. Events around 50
 * launches after a warm-up, median of 7, us per call. The check line compares two shapes' results
 * element for element. The kernel is the engine's (nn_staging::transpose_tiles), launched here
 * directly so each shape is timed alone. */
#include <algorithm>
#include <cstdio>
#include <vector>

#include "strided_copy.cuh"

using nn_staging::Transpose;
using nn_staging::transpose_tiles;

template <typename W, int T, int CW> float run(W *d, const W *s, Transpose t)
{
    int64_t gy = (t.R + 32 * T - 1) / (32 * T);
    dim3 grid((unsigned)((t.C + 32 * CW - 1) / (32 * CW)), (unsigned)std::min<int64_t>(gy, 65535), (unsigned)std::min<int64_t>(t.B, 65535));
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int i = 0; i < 5; i++) transpose_tiles<W, T, CW><<<grid, dim3(32, 8)>>>(d, s, t);
    std::vector<float> v;
    for (int r = 0; r < 7; r++) {
        cudaEventRecord(e0);
        for (int i = 0; i < 50; i++) transpose_tiles<W, T, CW><<<grid, dim3(32, 8)>>>(d, s, t);
        cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1); v.push_back(ms * 1000 / 50);
    }
    std::sort(v.begin(), v.end());
    return v[3];
}
template <typename W> void suite(const char *name, int64_t N, int64_t Cc, int64_t HW)
{
    size_t n = N * Cc * HW;
    W *a, *b; cudaMalloc(&a, n * sizeof(W)); cudaMalloc(&b, n * sizeof(W));
    std::vector<W> h(n); for (size_t i = 0; i < n; i++) h[i] = (W)(i * 2654435761u);
    cudaMemcpy(a, h.data(), n * sizeof(W), cudaMemcpyHostToDevice);
    Transpose to{N, Cc, HW, Cc * HW, HW, Cc * HW, Cc}, from{N, HW, Cc, Cc * HW, Cc, Cc * HW, HW};
    // check: the CW=2 variant equals the CW=1 one
    std::vector<W> r1(n), r2(n);
    run<W, 2, 1>(b, a, to); cudaMemcpy(r1.data(), b, n * sizeof(W), cudaMemcpyDeviceToHost);
    run<W, 2, 2>(b, a, to); cudaMemcpy(r2.data(), b, n * sizeof(W), cudaMemcpyDeviceToHost);
    printf("%s check %s\n", name, r1 == r2 ? "ok" : "MISMATCH");
    printf("%s to_cl   T1C1 %6.1f T2C1 %6.1f T4C1 %6.1f T1C2 %6.1f T2C2 %6.1f T4C2 %6.1f T2C4 %6.1f\n", name,
           run<W, 1, 1>(b, a, to), run<W, 2, 1>(b, a, to), run<W, 4, 1>(b, a, to), run<W, 1, 2>(b, a, to), run<W, 2, 2>(b, a, to), run<W, 4, 2>(b, a, to), run<W, 2, 4>(b, a, to));
    printf("%s from_cl T1C1 %6.1f T2C1 %6.1f T4C1 %6.1f T1C2 %6.1f T2C2 %6.1f T4C2 %6.1f T2C4 %6.1f\n", name,
           run<W, 1, 1>(b, a, from), run<W, 2, 1>(b, a, from), run<W, 4, 1>(b, a, from), run<W, 1, 2>(b, a, from), run<W, 2, 2>(b, a, from), run<W, 4, 2>(b, a, from), run<W, 2, 4>(b, a, from));
    cudaMemcpy(b, a, n * sizeof(W), cudaMemcpyDeviceToDevice);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    cudaEventRecord(e0); for (int i = 0; i < 50; i++) cudaMemcpyAsync(b, a, n * sizeof(W), cudaMemcpyDeviceToDevice); cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); printf("%s memcpy %6.1f us\n", name, ms * 1000 / 50);
    cudaFree(a); cudaFree(b);
}
int main()
{
    suite<uint16_t>("f16 64x64x56x56", 64, 64, 56 * 56);
    suite<uint16_t>("f16 64x192x27x27", 64, 192, 27 * 27);
    suite<uint16_t>("f16 64x256x13x13", 64, 256, 13 * 13);
    suite<uint32_t>("f32 64x64x56x56", 64, 64, 56 * 56);
    suite<uint32_t>("f32 64x192x27x27", 64, 192, 27 * 27);
    return 0;
}
