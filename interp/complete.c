/* Tab completion of identifier paths: `pri`, `torch.nn.Li`, `x:si`, `x.`.
 *
 * The path before the last '.' or ':' is evaluated with raw lookups only: a table's
 * own field, else its metatable's __index when that is a table, or the metatable's
 * __methods when __index is a function (the tensor bindings point __methods at the
 * torch.Tensor method table). No __index function, __pairs or other user code is ever
 * called, so completing cannot have side effects, and everything runs under a
 * lua_pcall so it cannot raise either. Candidates are gathered from the value and its
 * chain of __index tables the same way; after ':' only functions are offered. Names
 * starting with "__" are listed only once the typed prefix starts with '_'. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "interp.h"

#define MAX_HOPS 32 /* bounds __index chains, cyclic ones included */

static const char *const keywords[] = {
  "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto",
  "if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until",
  "while", NULL};

static int is_ident_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_ident_char(int c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

static int is_ident(const char *s, size_t n) {
  if (n == 0 || !is_ident_start((unsigned char)s[0])) return 0;
  for (size_t i = 1; i < n; i++)
    if (!is_ident_char((unsigned char)s[i])) return 0;
  return 1;
}

/* Replaces the value on top of the stack by the next table to search when a raw
 * lookup in it fails; returns 0 (popping it) when the chain ends. */
static int next_in_chain(lua_State *L) {
  if (!lua_getmetatable(L, -1)) { lua_pop(L, 1); return 0; }
  lua_pushliteral(L, "__index");
  if (lua_rawget(L, -2) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_pushliteral(L, "__methods");
    if (lua_rawget(L, -2) != LUA_TTABLE) { lua_pop(L, 3); return 0; }
  }
  lua_replace(L, -3); /* [obj mt next] -> [next mt] */
  lua_pop(L, 1);
  return 1;
}

/* [obj] -> [obj.key or nil], following next_in_chain. */
static void safe_get(lua_State *L, const char *key, size_t n) {
  for (int hop = 0; hop < MAX_HOPS; hop++) {
    if (lua_istable(L, -1)) {
      lua_pushlstring(L, key, n);
      if (lua_rawget(L, -2) != LUA_TNIL) { lua_replace(L, -2); return; }
      lua_pop(L, 1);
    }
    if (!next_in_chain(L)) { lua_pushnil(L); return; }
  }
  lua_pop(L, 1);
  lua_pushnil(L);
}

struct query {
  const char *prefix;
  size_t prefix_len;
  int only_functions;
  int result; /* stack index of the result set */
  int base;   /* stack index of the text before the prefix */
};

static void add_candidate(lua_State *L, const struct query *q, const char *name) {
  lua_pushfstring(L, "%s%s", lua_tostring(L, q->base), name);
  lua_pushboolean(L, 1);
  lua_rawset(L, q->result);
}

static int wanted(const struct query *q, const char *k, size_t n) {
  if (n < q->prefix_len || memcmp(k, q->prefix, q->prefix_len) != 0) return 0;
  if (n >= 2 && k[0] == '_' && k[1] == '_' && q->prefix[0] != '_') return 0;
  return is_ident(k, n);
}

/* Adds the matching keys of the value on top of the stack and of its chain; pops it. */
static void gather(lua_State *L, const struct query *q) {
  for (int hop = 0; hop < MAX_HOPS; hop++) {
    if (lua_istable(L, -1)) {
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        size_t n;
        if (lua_type(L, -2) == LUA_TSTRING) {
          const char *k = lua_tolstring(L, -2, &n);
          if (wanted(q, k, n) && (!q->only_functions || lua_isfunction(L, -1)))
            add_candidate(L, q, k);
        }
        lua_pop(L, 1);
      }
    }
    if (!next_in_chain(L)) return;
  }
  lua_pop(L, 1);
}

/* Adds the completions of the prefix in q to the result set; `path_len` bytes of
 * `word` come before the prefix. */
static void fill(lua_State *L, struct query *q, const char *word, size_t path_len) {
  if (q->prefix_len > 0 && !is_ident_start((unsigned char)q->prefix[0])) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  if (path_len == 0) {
    gather(L, q);
    for (const char *const *k = keywords; *k; k++)
      if (wanted(q, *k, strlen(*k))) add_candidate(L, q, *k);
    return;
  }
  /* A path: identifiers joined by '.', the last separator may be ':'. */
  char sep = word[path_len - 1];
  size_t end = path_len - 1;
  if ((sep != '.' && sep != ':') || end == 0 || word[end - 1] == '.') return;
  for (size_t i = 0; i < end;) {
    size_t j = i;
    while (j < end && word[j] != '.') j++;
    if (!is_ident(word + i, j - i)) return;
    safe_get(L, word + i, j - i);
    i = j + 1;
  }
  q->only_functions = sep == ':';
  gather(L, q);
}

/* (word as light userdata) -> set of full completions. */
static int collect(lua_State *L) {
  const char *word = lua_touserdata(L, 1);
  size_t len = strlen(word), start = len;
  while (start > 0 && is_ident_char((unsigned char)word[start - 1])) start--;
  struct query q = {word + start, len - start, 0, 0, 0};
  lua_newtable(L);
  q.result = lua_gettop(L);
  lua_pushlstring(L, word, start);
  q.base = lua_gettop(L);
  fill(L, &q, word, start);
  lua_settop(L, q.result);
  return 1;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char **interp_complete(lua_State *L, const char *word, size_t *count) {
  *count = 0;
  if (L == NULL || !lua_checkstack(L, 4)) return NULL;
  int top = lua_gettop(L);
  lua_pushcfunction(L, collect);
  lua_pushlightuserdata(L, (void *)word);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) { lua_settop(L, top); return NULL; }
  size_t n = 0, cap = 16;
  char **list = malloc(cap * sizeof *list);
  if (list == NULL) { lua_settop(L, top); return NULL; }
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    if (n + 1 >= cap) {
      char **grown = realloc(list, 2 * cap * sizeof *list);
      if (grown == NULL) break;
      list = grown;
      cap *= 2;
    }
    char *s = strdup(lua_tostring(L, -1));
    if (s == NULL) break;
    list[n++] = s;
  }
  lua_settop(L, top);
  if (n == 0) { free(list); return NULL; }
  qsort(list, n, sizeof *list, cmp_str);
  list[n] = NULL;
  *count = n;
  return list;
}

/* complete(word) -> sorted list of completions, as the REPL's TAB would offer. */
static int l_complete(lua_State *L) {
  const char *word = luaL_checkstring(L, 1);
  size_t n;
  char **list = interp_complete(L, word, &n);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, list[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  for (size_t i = 0; i < n; i++) free(list[i]);
  free(list);
  return 1;
}

static int open_complete(lua_State *L) {
  lua_pushcfunction(L, l_complete);
  return 1;
}

void interp_register_complete(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, open_complete);
  lua_setfield(L, -2, "nnrepl.complete");
  lua_pop(L, 1);
}
