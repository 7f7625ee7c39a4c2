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

/* Error messages with hints for Python habits (bindings/hints.c). The message handler for
 * lua_pcall: the message, a "hint:" line for a Python syntax habit or for a method called with
 * '.' instead of ':', and a traceback. */
int nnrepl_msghandler(lua_State *L);
/* Makes reading the globals True, False and None an error naming Lua's true, false and nil (a
 * metatable on _G; nnrepl_openlibs does it unless _G has a metatable already). */
void nnrepl_guard_python_names(lua_State *L);
/* Appends the hint for a Python syntax habit to the error message on top of the stack, if it
 * has none yet (for load errors, which no message handler sees). */
void nnrepl_hint_syntax(lua_State *L);

#endif
