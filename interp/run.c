/* Running Lua chunks: under the library's message handler (hints, traceback), error reports, and
 * Ctrl-C while Lua runs. A C signal handler must not touch the Lua state, so (as in
 * Lua's lua.c) it only sets a hook that raises "interrupted!" at the next Lua step;
 * it also restores the default action, so a second Ctrl-C ends a stuck C call. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "interp.h"
#include "nnrepl_lib.h"

static lua_State *volatile running_L;
static volatile sig_atomic_t got_sigint;

static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

static void laction(int sig) {
  signal(sig, SIG_DFL);
  got_sigint = 1;
  lua_sethook(running_L, lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
}

int interp_docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  struct sigaction sa, old;
  lua_pushcfunction(L, nnrepl_msghandler);
  lua_insert(L, base);
  running_L = L;
  got_sigint = 0;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = laction;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  int status = lua_pcall(L, narg, nres, base);
  sigaction(SIGINT, &old, NULL);
  /* A Ctrl-C that came after the chunk's last step leaves the hook set: drop it, so
   * the next chunk does not start interrupted (a user's own hook stays). */
  if (lua_gethook(L) == lstop) lua_sethook(L, NULL, 0, 0);
  lua_remove(L, base);
  return status;
}

int interp_interrupted(void) { return got_sigint; }

int interp_report(lua_State *L, int status) {
  if (status != LUA_OK) {
    nnrepl_hint_syntax(L);
    const char *msg = lua_tostring(L, -1);
    if (msg == NULL) msg = "(error object is not a string)";
    fprintf(stderr, "%s: %s\n", INTERP_PROGNAME, msg);
    fflush(stderr);
    lua_pop(L, 1);
  }
  return status;
}

int interp_incomplete(lua_State *L, int status) {
  static const char mark[] = "<eof>";
  size_t n, m = sizeof mark - 1;
  if (status != LUA_ERRSYNTAX) return 0;
  const char *msg = lua_tolstring(L, -1, &n);
  return msg != NULL && n >= m && strcmp(msg + n - m, mark) == 0;
}
