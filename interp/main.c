/* nnrepl: command line handling, after Lua's lua.c. `nnrepl [options] [script [args]]`
 * runs -e and -l in order, then the script with `arg` and `...` set as lua.c sets
 * them, then the REPL if -i; with no script, the REPL on a terminal, else the program
 * on stdin. Errors print "nnrepl: <message>" with a traceback and exit with status 1. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "interp.h"
#include "nnrepl_lib.h"

enum {
  HAS_ERROR = 1, /* bad option: argv[*first] names it */
  HAS_I = 2,
  HAS_V = 4,
  HAS_E = 8,
  HAS_HELP = 16,
};

static void print_usage(FILE *f) {
  fprintf(f,
    "usage: %s [options] [script [args]]\n"
    "Options:\n"
    "  -e stat     execute string 'stat'\n"
    "  -i          enter the interactive session after running 'script'\n"
    "  -l mod      require library 'mod' into global 'mod'\n"
    "  -l g=mod    require library 'mod' into global 'g'\n"
    "  -v          show version information\n"
    "  -W          turn warnings on\n"
    "  -h, --help  show this help\n"
    "  --          stop handling options\n"
    "  -           stop handling options and execute stdin\n"
    "Launcher (one process per rank, torchrun's environment; see torch.distributed):\n"
    "  --nproc-per-node N  start N ranks of 'script' on this node\n"
    "  --nnodes M --node-rank R --master-addr A --master-port P  for several nodes\n"
    "With no script, nnrepl starts the interactive session when stdin is a terminal\n"
    "and runs the program on stdin otherwise. The script sees its arguments in the\n"
    "global 'arg' (arg[0] is the script) and as '...'.\n"
    "Environment: NNREPL_HISTORY (history file, default ~/.nnrepl_history), NO_COLOR.\n",
    INTERP_PROGNAME);
}

static void bad_option(const char *opt) {
  if ((opt[1] == 'e' || opt[1] == 'l') && opt[2] == '\0')
    fprintf(stderr, "%s: '%s' needs argument\n", INTERP_PROGNAME, opt);
  else
    fprintf(stderr, "%s: unrecognized option '%s'\n", INTERP_PROGNAME, opt);
  print_usage(stderr);
}

static void print_version(void) {
  printf("%s %s (%s)\n", INTERP_PROGNAME, NNREPL_VERSION, LUA_RELEASE);
  fflush(stdout);
}

/* Scans the options. *first: index of the script, 0 if none, or of the bad option. */
static int collect_args(char **argv, int *first) {
  int args = 0;
  *first = 0;
  if (argv[0] == NULL) return 0;
  for (int i = 1; argv[i] != NULL; i++) {
    const char *a = argv[i];
    *first = i;
    if (a[0] != '-') return args;
    switch (a[1]) {
      case '\0': /* "-": the script is stdin */
        return args;
      case '-':
        if (strcmp(a, "--help") == 0) { args |= HAS_HELP; break; }
        if (a[2] != '\0') return HAS_ERROR;
        *first = argv[i + 1] != NULL ? i + 1 : 0;
        return args;
      case 'h':
        if (a[2] != '\0') return HAS_ERROR;
        args |= HAS_HELP;
        break;
      case 'i':
      case 'v':
      case 'W':
        if (a[2] != '\0') return HAS_ERROR;
        args |= a[1] == 'i' ? HAS_I : a[1] == 'v' ? HAS_V : 0;
        break;
      case 'e':
      case 'l':
        if (a[1] == 'e') args |= HAS_E;
        if (a[2] == '\0') { /* the argument is the next word */
          i++;
          if (argv[i] == NULL || argv[i][0] == '-') { *first = i - 1; return HAS_ERROR; }
        }
        break;
      default:
        return HAS_ERROR;
    }
  }
  *first = 0;
  return args;
}

/* arg[0] = script (or the interpreter), arg[1..] = its arguments, negative indices
 * for the interpreter and the options before it. */
static void create_arg_table(lua_State *L, char **argv, int argc, int script) {
  lua_createtable(L, argc - script - 1 > 0 ? argc - script - 1 : 0, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int run_chunk(lua_State *L, int status) {
  if (status == LUA_OK) status = interp_docall(L, 0, 0);
  return interp_report(L, status);
}

/* -l g=mod or -l mod: g = require(mod). */
static int require_global(lua_State *L, const char *spec) {
  const char *eq = strchr(spec, '=');
  const char *mod = eq ? eq + 1 : spec;
  lua_getglobal(L, "require");
  lua_pushstring(L, mod);
  int status = interp_docall(L, 1, 1);
  if (status == LUA_OK) {
    if (eq) lua_pushlstring(L, spec, (size_t)(eq - spec));
    else lua_pushstring(L, spec);
    lua_insert(L, -2);
    lua_setglobal(L, lua_tostring(L, -2));
    lua_pop(L, 1);
  }
  return interp_report(L, status);
}

static int run_options(lua_State *L, char **argv, int n) {
  for (int i = 1; i < n; i++) {
    const char *a = argv[i];
    if (a[1] == 'W') { lua_warning(L, "@on", 0); continue; }
    if (a[1] != 'e' && a[1] != 'l') continue;
    const char *value = a[2] != '\0' ? a + 2 : argv[++i];
    int status = a[1] == 'e'
      ? run_chunk(L, luaL_loadbufferx(L, value, strlen(value), "=(command line)", "t"))
      : require_global(L, value);
    if (status != LUA_OK) return 0;
  }
  return 1;
}

/* The script's folder goes first on package.path, as Python puts it first on sys.path:
 * `require "model"` finds model.lua beside the script wherever it is started from. */
static void add_script_dir(lua_State *L, const char *script) {
  const char *slash = strrchr(script, '/');
  if (!slash) lua_pushliteral(L, ".");
  else lua_pushlstring(L, script, slash == script ? 1 : (size_t)(slash - script));
  const char *dir = lua_tostring(L, -1);
  if (lua_getglobal(L, "package") == LUA_TTABLE) {
    lua_getfield(L, -1, "path");
    const char *path = lua_tostring(L, -1);
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", dir, dir, path ? path : "");
    lua_setfield(L, -3, "path");
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
}

static int run_script(lua_State *L, char **argv) {
  const char *name = argv[0];
  if (strcmp(name, "-") == 0 && strcmp(argv[-1], "--") != 0) name = NULL; /* stdin */
  if (name) add_script_dir(L, name);
  int status = luaL_loadfilex(L, name, "bt");
  if (status == LUA_OK) {
    if (lua_getglobal(L, "arg") != LUA_TTABLE) luaL_error(L, "'arg' is not a table");
    int n = (int)luaL_len(L, -1);
    luaL_checkstack(L, n + 3, "too many arguments to script");
    for (int i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
    lua_remove(L, -n - 1);
    status = interp_docall(L, n, LUA_MULTRET);
  }
  return interp_report(L, status);
}

static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = lua_touserdata(L, 2);
  int script;
  int args = collect_args(argv, &script);
  if (args & HAS_ERROR) { bad_option(argv[script]); return 0; }
  if (args & HAS_HELP) { print_usage(stdout); lua_pushboolean(L, 1); return 1; }
  if (args & HAS_V) print_version();
  lua_pushcfunction(L, nnrepl_openlibs);
  if (interp_report(L, interp_docall(L, 0, 0)) != LUA_OK) return 0;
  lua_warning(L, "@off", 0);
  interp_register_help(L);
  interp_register_complete(L);
  create_arg_table(L, argv, argc, script);
  lua_gc(L, LUA_GCRESTART);
  if (!run_options(L, argv, script > 0 ? script : argc)) return 0;
  if (script > 0 && run_script(L, argv + script) != LUA_OK) return 0;
  if (args & HAS_I) {
    interp_repl(L, isatty(0));
  } else if (script == 0 && !(args & (HAS_E | HAS_V))) {
    if (isatty(0)) interp_repl(L, 1);
    else if (run_chunk(L, luaL_loadfilex(L, NULL, "bt")) != LUA_OK) return 0;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* A training step frees its tensors and makes them again each step. By default glibc gives freed
 * memory at the heap's top back to the system, so every step faults the pages in again, and once
 * the CPU pool's threads have touched them, giving them back interrupts every core (document
 * 000's CNN on 16 threads: 5.2 -> 3.5 ms a step; bench/NOTES.md, session 27). Blocks under 32 MB
 * come from the heap, and up to 256 MB freed at its top stays; MALLOC_MMAP_THRESHOLD_ and
 * MALLOC_TRIM_THRESHOLD_, when set, are left to glibc. */
static void keep_freed_memory(void) {
  if (!getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (!getenv("MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

int main(int argc, char **argv) {
  if (argc > 1 && interp_launch_requested(argv)) return interp_launch(argc, argv);
  keep_freed_memory();
  interp_launch_child_init();
  lua_State *L = luaL_newstate();
  if (L == NULL) {
    fprintf(stderr, "%s: cannot create state: not enough memory\n", INTERP_PROGNAME);
    return EXIT_FAILURE;
  }
  lua_gc(L, LUA_GCSTOP); /* no collections while the libraries load */
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  int status = lua_pcall(L, 2, 1, 0);
  int ok = lua_toboolean(L, -1);
  interp_report(L, status);
  lua_close(L);
  return ok && status == LUA_OK ? EXIT_SUCCESS : EXIT_FAILURE;
}
