/* The `time` module: wall clock and monotonic seconds as floats (clock_gettime,
 * nanosecond source), and sleep. */
#include <errno.h>
#include <math.h>
#include <time.h>

#include "lt.h"

static double seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static lua_Integer nanoseconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (lua_Integer)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int l_time(lua_State *L) { lua_pushnumber(L, seconds(CLOCK_REALTIME)); return 1; }
static int l_time_ns(lua_State *L) { lua_pushinteger(L, nanoseconds(CLOCK_REALTIME)); return 1; }
static int l_perf_counter(lua_State *L) { lua_pushnumber(L, seconds(CLOCK_MONOTONIC)); return 1; }
static int l_perf_counter_ns(lua_State *L) { lua_pushinteger(L, nanoseconds(CLOCK_MONOTONIC)); return 1; }
static int l_process_time(lua_State *L) { lua_pushnumber(L, seconds(CLOCK_PROCESS_CPUTIME_ID)); return 1; }

static int l_sleep(lua_State *L)
{
    double s = luaL_checknumber(L, 1);
    luaL_argcheck(L, s >= 0 && !isnan(s), 1, "sleep length must be non-negative");
    if (s > 1e9) s = 1e9;
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)}, rem;
    while (nanosleep(&ts, &rem) == -1 && errno == EINTR) {
        if (lua_gethook(L)) break; /* a signal handler armed a hook (Ctrl-C): let it run now */
        ts = rem;
    }
    return 0;
}

int luaopen_time(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"time", l_time}, {"time_ns", l_time_ns}, {"perf_counter", l_perf_counter},
        {"perf_counter_ns", l_perf_counter_ns}, {"monotonic", l_perf_counter},
        {"process_time", l_process_time}, {"sleep", l_sleep}, {NULL, NULL},
    };
    luaL_newlib(L, fns);
    return 1;
}
