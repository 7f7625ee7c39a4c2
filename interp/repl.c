/* The read-eval-print loop, after Lua's lua.c: each input is first compiled as
 * `return <input>` so expressions print their values; otherwise as a statement, and a
 * syntax error ending in <eof> asks for another line. An input ending in ';' runs
 * but prints nothing. Values print through __repr where their metatable has one,
 * else tostring (so tensors use __tostring), separated by tabs. Errors print the message and the first lines of the traceback,
 * and the session goes on. */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>

#include "interp.h"
#include "nnrepl_lib.h"

#define PROMPT ">>> "
#define PROMPT2 "... "
#define CHUNKNAME "=stdin"
#define MAX_FRAMES 8 /* traceback lines shown for an error */

enum { READ_EOF = -1, READ_INTERRUPT = -2 };

#define RED "\x1b[31m"
#define DIM "\x1b[2m"
#define RESET "\x1b[0m"

int interp_use_color(void) {
  const char *no = getenv("NO_COLOR");
  return isatty(1) && isatty(2) && (no == NULL || no[0] == '\0');
}

void interp_print_banner(void) {
  printf("nnrepl %s - %s with torch. help() for help, Ctrl-D to exit.\n", NNREPL_VERSION, LUA_RELEASE);
  fflush(stdout);
}

/* Prints the error on top of the stack: the message, then at most MAX_FRAMES lines of
 * its traceback (without the REPL's own frame); pops it. */
static void print_error(lua_State *L) {
  nnrepl_hint_syntax(L);
  int top = lua_gettop(L);
  const char *msg = lua_tostring(L, -1);
  if (msg == NULL) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, -1));
  int color = interp_use_color();
  const char *tb = strstr(msg, "\nstack traceback:");
  int msg_len = tb ? (int)(tb - msg) : (int)strlen(msg);
  fflush(stdout);
  fprintf(stderr, "%s%.*s%s\n", color ? RED : "", msg_len, msg, color ? RESET : "");
  if (tb != NULL) {
    const char *p = tb + 1, *stop = p + strlen(p);
    static const char own_frame[] = "\n\t[C]: in ?";
    size_t own = sizeof own_frame - 1;
    if ((size_t)(stop - p) >= own && strcmp(stop - own, own_frame) == 0) stop -= own;
    for (int line = 0; p < stop; line++) { /* line 0 is "stack traceback:" */
      const char *end = memchr(p, '\n', (size_t)(stop - p));
      if (end == NULL) end = stop;
      if (line > MAX_FRAMES) { fprintf(stderr, "%s\t...%s\n", color ? DIM : "", color ? RESET : ""); break; }
      fprintf(stderr, "%s%.*s%s\n", color ? DIM : "", (int)(end - p), p, color ? RESET : "");
      p = end + 1;
    }
  }
  fflush(stderr);
  lua_settop(L, top - 1);
}

/* Values on the stack -> one string joined by tabs: each value's __repr when its
 * metatable has one (a device echoes as device(type='cuda', index=0), as Python's
 * REPL shows repr), else tostring. */
static int join_values(lua_State *L) {
  int n = lua_gettop(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i <= n; i++) {
    if (i > 1) luaL_addchar(&b, '\t');
    if (luaL_getmetafield(L, i, "__repr") != LUA_TNIL) {
      lua_pushvalue(L, i);
      lua_call(L, 1, 1);
      luaL_tolstring(L, -1, NULL);
      lua_remove(L, -2);
    } else luaL_tolstring(L, i, NULL);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  return 1;
}

/* Prints the values above index `base`, then removes them. */
static void print_values(lua_State *L, int base) {
  int n = lua_gettop(L) - base;
  if (n <= 0) return;
  luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
  lua_pushcfunction(L, join_values);
  lua_insert(L, base + 1);
  if (interp_docall(L, n, 1) != LUA_OK) { /* a slow __tostring can be interrupted too */
    lua_pushfstring(L, "error calling tostring: %s", lua_tostring(L, -1));
    lua_remove(L, -2);
    print_error(L);
  } else {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    fwrite(s, 1, len, stdout);
    fputc('\n', stdout);
    fflush(stdout);
  }
  lua_settop(L, base);
}

static int ends_with_semicolon(const char *s, size_t *trimmed) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
  *trimmed = n;
  return n > 0 && s[n - 1] == ';';
}

/* Compiles `return <text>` (text without its trailing ';' when quiet); on success
 * leaves the function on top and returns 1, else leaves the stack as it was. */
static int try_expression(lua_State *L, const char *text, size_t len) {
  const char *code = lua_pushfstring(L, "return %s\n;", lua_pushlstring(L, text, len));
  int status = luaL_loadbufferx(L, code, strlen(code), CHUNKNAME, "t");
  if (status == LUA_OK) {
    lua_replace(L, -3);
    lua_pop(L, 1);
    return 1;
  }
  lua_pop(L, 3);
  return 0;
}

static void warn_local(const char *line) {
  static int warned;
  line += strspn(line, " \t");
  if (warned || strncmp(line, "local", 5) != 0 || (line[5] != ' ' && line[5] != '\t')) return;
  warned = 1;
  fprintf(stderr, "note: a local lasts for one input here; leave out 'local' to keep the variable\n");
}

/* Reads one input (one or more lines). Returns the load status with the compiled
 * function or the error message on top, READ_EOF or READ_INTERRUPT (stack unchanged).
 * *quiet tells an input ending in ';'. */
static int read_chunk(lua_State *L, int *quiet) {
  char *line;
  int r = le_readline(PROMPT, &line);
  if (r == LE_EOF) return READ_EOF;
  if (r == LE_INTERRUPT) return READ_INTERRUPT;
  lua_pushstring(L, line);
  free(line);
  int text = lua_gettop(L);
  warn_local(lua_tostring(L, text));
  int status;
  for (;;) {
    size_t trimmed;
    const char *src = lua_tostring(L, text);
    *quiet = ends_with_semicolon(src, &trimmed);
    if (try_expression(L, src, *quiet ? trimmed - 1 : trimmed)) { status = LUA_OK; break; }
    status = luaL_loadbufferx(L, src, strlen(src), CHUNKNAME, "t");
    if (!interp_incomplete(L, status)) break;
    r = le_readline(PROMPT2, &line);
    if (r == LE_INTERRUPT) { lua_settop(L, text - 1); return READ_INTERRUPT; }
    if (r == LE_EOF) { /* report the incomplete input */
      if (le_is_terminal()) fputc('\n', stdout);
      break;
    }
    lua_pop(L, 1);
    lua_pushfstring(L, "%s\n%s", lua_tostring(L, text), line);
    free(line);
    lua_replace(L, text);
  }
  le_add_history(lua_tostring(L, text));
  lua_remove(L, text);
  return status;
}

void interp_repl(lua_State *L, int banner) {
  if (le_is_terminal()) setlocale(LC_CTYPE, ""); /* let libedit read UTF-8 input */
  le_init(L);
  if (banner) interp_print_banner();
  int base = lua_gettop(L);
  for (;;) {
    int quiet = 0;
    lua_settop(L, base);
    int status = read_chunk(L, &quiet);
    if (status == READ_EOF) break;
    if (status == READ_INTERRUPT) {
      fputc('\n', stdout);
      fflush(stdout);
      continue;
    }
    if (status == LUA_OK) status = interp_docall(L, 0, LUA_MULTRET);
    if (status != LUA_OK) {
      if (interp_interrupted() && le_is_terminal()) fputc('\n', stdout); /* past the echoed ^C */
      print_error(L);
    }
    else if (quiet) lua_settop(L, base);
    else print_values(L, base);
  }
  lua_settop(L, base);
  if (le_is_terminal()) fputc('\n', stdout);
  fflush(stdout);
  le_finish();
}
