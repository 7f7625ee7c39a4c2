/* The bindings' entry points, for interp/ and for hosts that embed the interpreter. */
#ifndef NNREPL_LIB_H
#define NNREPL_LIB_H

#include <lua.h>

/* Open Lua's standard libraries and the whole nnrepl library in L: the globals
 * torch, nn, F, optim (as they land), and `time` preloaded for require and set as
 * a global. Returns 0, or raises a Lua error (call it under lua_pcall). */
int nnrepl_openlibs(lua_State *L);

/* luaopen_torch for require "torch" from a stock Lua: pushes the torch table. */
int luaopen_torch(lua_State *L);

#endif
