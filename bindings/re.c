/* _re: the PCRE2 layer under bindings/lua/re.lua (Python's re); require "_re".
 *   _re.compile(pattern, flags) -> code, or nil, message, byte offset, PCRE2 error code
 *     flags are Python's re flags (I, M, S, X, A); the pattern is PCRE2 syntax, UTF-8
 *   code:exec(subject, pos, endpos, mode) -> {s0, e0, s1, e1, ...} (0-based byte offsets, -1 for an
 *     unmatched group) or nil; mode: 0 search, 1 match (anchored), 2 fullmatch (anchored at both
 *     ends), plus 4: no empty match at pos (Python's must_advance after an empty match)
 *   code:info() -> number of groups, {name = number}
 * Strings are matched as UTF-8 (PCRE2_UTF; invalid bytes never match, they are not an error);
 * \d \w \s and \b are Unicode-aware (PCRE2_UCP) unless re.ASCII. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <lauxlib.h>

#include "lt.h"

#define CODE_MT "re.code"

enum { PY_I = 2, PY_M = 8, PY_S = 16, PY_X = 64, PY_A = 256 }; /* Python's re flag values */

typedef struct {
    pcre2_code *code;
    pcre2_match_data *md;
} re_code;

static re_code *check_code(lua_State *L) { return luaL_checkudata(L, 1, CODE_MT); }

static int l_compile(lua_State *L)
{
    size_t n;
    const char *pat = luaL_checklstring(L, 1, &n);
    lua_Integer flags = luaL_optinteger(L, 2, 0);
    uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
    if (!(flags & PY_A)) opts |= PCRE2_UCP;
    if (flags & PY_I) opts |= PCRE2_CASELESS;
    if (flags & PY_M) opts |= PCRE2_MULTILINE;
    if (flags & PY_S) opts |= PCRE2_DOTALL;
    if (flags & PY_X) opts |= PCRE2_EXTENDED;
    re_code *c = lua_newuserdatauv(L, sizeof *c, 0);
    c->code = NULL;
    c->md = NULL;
    luaL_setmetatable(L, CODE_MT);
    int err;
    PCRE2_SIZE off;
    c->code = pcre2_compile((PCRE2_SPTR)pat, n, opts, &err, &off, NULL);
    if (!c->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        lua_pushnil(L);
        lua_pushstring(L, (const char *)msg);
        lua_pushinteger(L, (lua_Integer)off);
        lua_pushinteger(L, err);
        return 4;
    }
    pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE); /* when JIT is unavailable, matching interprets */
    c->md = pcre2_match_data_create_from_pattern(c->code, NULL);
    if (!c->md) return luaL_error(L, "re: out of memory");
    return 1;
}

static int l_exec(lua_State *L)
{
    re_code *c = check_code(L);
    size_t n;
    const char *s = luaL_checklstring(L, 2, &n);
    lua_Integer pos = luaL_checkinteger(L, 3), endpos = luaL_checkinteger(L, 4), mode = luaL_optinteger(L, 5, 0);
    if (endpos > (lua_Integer)n) endpos = (lua_Integer)n;
    if (pos < 0 || pos > endpos) return 0;
    uint32_t opts = 0;
    if ((mode & 3) >= 1) opts |= PCRE2_ANCHORED;
    if ((mode & 3) == 2) opts |= PCRE2_ENDANCHORED;
    if (mode & 4) opts |= PCRE2_NOTEMPTY_ATSTART;
    int rc = pcre2_match(c->code, (PCRE2_SPTR)s, (PCRE2_SIZE)endpos, (PCRE2_SIZE)pos, opts, c->md, NULL);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* deep backtracking: the interpreter keeps its stack on the heap */
        rc = pcre2_match(c->code, (PCRE2_SPTR)s, (PCRE2_SIZE)endpos, (PCRE2_SIZE)pos, opts | PCRE2_NO_JIT, c->md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc < 0) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof msg);
        return luaL_error(L, "re.error: %s", (const char *)msg);
    }
    uint32_t pairs = pcre2_get_ovector_count(c->md);
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
    lua_createtable(L, (int)(2 * pairs), 0);
    for (uint32_t i = 0; i < 2 * pairs; i++) {
        /* rc - 1 is the highest group set; the ones above are unset */
        lua_pushinteger(L, i < 2 * (uint32_t)rc && ov[i] != PCRE2_UNSET ? (lua_Integer)ov[i] : -1);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int l_info(lua_State *L)
{
    re_code *c = check_code(L);
    uint32_t groups, count, size;
    PCRE2_SPTR table;
    pcre2_pattern_info(c->code, PCRE2_INFO_CAPTURECOUNT, &groups);
    pcre2_pattern_info(c->code, PCRE2_INFO_NAMECOUNT, &count);
    pcre2_pattern_info(c->code, PCRE2_INFO_NAMEENTRYSIZE, &size);
    pcre2_pattern_info(c->code, PCRE2_INFO_NAMETABLE, &table);
    lua_pushinteger(L, groups);
    lua_createtable(L, 0, (int)count);
    for (uint32_t i = 0; i < count; i++) { /* each entry: the group number (2 bytes, big-endian), the name */
        PCRE2_SPTR e = table + (size_t)i * size;
        lua_pushinteger(L, (e[0] << 8) | e[1]);
        lua_setfield(L, -2, (const char *)e + 2);
    }
    return 2;
}

static int l_gc(lua_State *L)
{
    re_code *c = check_code(L);
    pcre2_match_data_free(c->md);
    pcre2_code_free(c->code);
    c->md = NULL;
    c->code = NULL;
    return 0;
}

int luaopen_re_pcre2(lua_State *L)
{
    luaL_newmetatable(L, CODE_MT);
    static const luaL_Reg meta[] = {{"__gc", l_gc}, {NULL, NULL}};
    luaL_setfuncs(L, meta, 0);
    static const luaL_Reg methods[] = {{"exec", l_exec}, {"info", l_info}, {NULL, NULL}};
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    static const luaL_Reg funcs[] = {{"compile", l_compile}, {NULL, NULL}};
    luaL_newlib(L, funcs);
    return 1;
}
