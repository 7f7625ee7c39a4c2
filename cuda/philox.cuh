/* Philox4x32-10 on the device and the uniforms it draws, bit for bit as engine/cpu/random.c:
 * the random fills (copy.cu) and dropout (dropout.cu). */
#pragma once

#include <stdint.h>

namespace nnk {

__device__ __forceinline__ uint4 philox(uint64_t counter, uint64_t seed)
{
    constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
#pragma unroll
    for (int r = 0; r < 10; r++) {
        if (r) k0 += W0, k1 += W1;
        uint32_t hi0 = __umulhi(M0, c0), lo0 = M0 * c0, hi1 = __umulhi(M1, c2), lo1 = M1 * c2;
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
    }
    return make_uint4(c0, c1, c2, c3);
}

/* u in [0, 1) from a Philox block: 53 bits for float64, else 24 */
__device__ __forceinline__ double unit(uint4 w, bool wide)
{
    return wide ? (double)((((uint64_t)w.x << 32) | w.y) >> 11) * 0x1p-53 : (double)(w.x >> 8) * 0x1p-24;
}

/* dropout's draws: four uniforms from a block (lanes 0-3 of w, 24 bits each), two for float64 (wide:
 * lanes 0-1 of 53 bits); element j takes block offset + j / per, lane j % per */
__device__ __forceinline__ double drop_u(uint4 w, int lane, bool wide)
{
    if (wide) return lane ? unit(make_uint4(w.z, w.w, 0, 0), true) : unit(w, true);
    uint32_t v = lane == 0 ? w.x : lane == 1 ? w.y : lane == 2 ? w.z : w.w;
    return (double)(v >> 8) * 0x1p-24;
}

} // namespace nnk
