/* torch.set_flush_denormal(mode): on x86 the calling thread's SSE control register gets
 * flush-to-zero and denormals-are-zero set (or cleared) and the answer is true, as PyTorch
 * does; elsewhere nothing changes and the answer is false (not supported). */
#include "lt.h"

#if defined(__x86_64__) || defined(__SSE2__)
#include <xmmintrin.h>
#define FTZ_DAZ 0x8040u /* bit 15: flush to zero, bit 6: denormals are zero */
#endif

static int set_flush_denormal(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TBOOLEAN);
#ifdef FTZ_DAZ
    unsigned csr = _mm_getcsr();
    _mm_setcsr(lua_toboolean(L, 1) ? csr | FTZ_DAZ : csr & ~FTZ_DAZ);
    lua_pushboolean(L, 1);
#else
    lua_pushboolean(L, 0);
#endif
    return 1;
}

void lt_open_denormal(lua_State *L)
{
    lua_pushcfunction(L, set_flush_denormal);
    lua_setfield(L, -2, "set_flush_denormal");
}
