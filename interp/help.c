/* The global help(): a short guide to the session. */
#include <stdio.h>

#include <lauxlib.h>

#include "interp.h"

static const char help_text[] =
  "nnrepl " NNREPL_VERSION ": Lua 5.4 with a PyTorch-shaped tensor library.\n"
  "\n"
  "  x = torch.randn(3, 4)    an expression prints its value: type  x  or  x:sum()\n"
  "  x:sum();                 a trailing ';' runs it but prints nothing\n"
  "  torch.<TAB>              list the library (torch.nn.<TAB>, torch.cuda.<TAB>, ...)\n"
  "  x:<TAB>  x.<TAB>         list a tensor's (or any value's) methods and fields;\n"
  "                           TAB twice lists every match\n"
  "  function f(a) ... end    unfinished statements continue on '... ' lines\n"
  "  Ctrl-C                   stop a running statement, or clear the line\n"
  "  Ctrl-D or os.exit()      leave the session\n"
  "\n"
  "Names follow PyTorch (torch, nn, F, optim); methods use ':' as in x:cuda(),\n"
  "keyword arguments are a trailing table as in optim.SGD(params, {lr=0.01}).\n"
  "Dims and tensor indices are 0-based. Documentation: README.md and docs/ in the nnrepl sources.\n"
  "Scripts: nnrepl script.lua args...  (nnrepl --help lists the options)\n";

static int l_help(lua_State *L) {
  (void)L;
  fputs(help_text, stdout);
  fflush(stdout);
  return 0;
}

void interp_register_help(lua_State *L) {
  lua_pushcfunction(L, l_help);
  lua_setglobal(L, "help");
}
