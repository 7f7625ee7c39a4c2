/* unicodedata: Python's unicodedata module through utf8proc (require "unicodedata"), on UTF-8
 * Lua strings:
 *   normalize(form, s), is_normalized(form, s)  (NFC, NFD, NFKC, NFKD)
 *   category(ch), bidirectional(ch), combining(ch), mirrored(ch), decimal(ch[, default])
 *   unidata_version  (utf8proc's Unicode version: 15.0.0 for Debian 12's utf8proc 2.8, where
 *   CPython 3.11 has 14.0.0; the characters new in 15 are "Cn" in CPython)
 * Left out because utf8proc cannot answer them exactly: name, lookup, decomposition, digit,
 * numeric, east_asian_width. ch is a string of one character; errors are Python's text. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <utf8proc.h>

#include "lt.h"

/* the code point of the one-character string at idx (Python's TypeError text otherwise) */
static utf8proc_int32_t one_char(lua_State *L, int idx, const char *fn)
{
    if (lua_type(L, idx) != LUA_TSTRING)
        luaL_error(L, "%s() argument must be a unicode character, not %s", fn, luaL_typename(L, idx));
    size_t n;
    const utf8proc_uint8_t *s = (const utf8proc_uint8_t *)lua_tolstring(L, idx, &n);
    utf8proc_int32_t cp = -1;
    utf8proc_ssize_t k = n ? utf8proc_iterate(s, (utf8proc_ssize_t)n, &cp) : 0;
    if (k < 0) luaL_error(L, "%s(): the string is not valid UTF-8", fn);
    if (n == 0 || (size_t)k != n) luaL_error(L, "%s() argument must be a unicode character, not str", fn);
    return cp;
}

static const char *const category_names[] = {
    "Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
    "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co",
};

static const char *const bidi_names[] = {
    "", "L", "LRE", "LRO", "R", "AL", "RLE", "RLO", "PDF", "EN", "ES", "ET", "AN", "CS",
    "NSM", "BN", "B", "S", "WS", "ON", "LRI", "RLI", "FSI", "PDI",
};

static int l_category(lua_State *L)
{
    lua_pushstring(L, category_names[utf8proc_category(one_char(L, 1, "category"))]);
    return 1;
}

static int l_bidirectional(lua_State *L)
{
    int b = utf8proc_get_property(one_char(L, 1, "bidirectional"))->bidi_class;
    lua_pushstring(L, b >= 0 && b < (int)(sizeof bidi_names / sizeof *bidi_names) ? bidi_names[b] : "");
    return 1;
}

static int l_combining(lua_State *L)
{
    lua_pushinteger(L, utf8proc_get_property(one_char(L, 1, "combining"))->combining_class);
    return 1;
}

static int l_mirrored(lua_State *L)
{
    lua_pushinteger(L, utf8proc_get_property(one_char(L, 1, "mirrored"))->bidi_mirrored);
    return 1;
}

/* The decimal digits (Nd) come in runs of ten, 0 to 9 (a Unicode stability policy), so a
 * digit's value is its distance from the start of its run of Nd characters, modulo 10. */
static int l_decimal(lua_State *L)
{
    utf8proc_int32_t cp = one_char(L, 1, "decimal");
    if (utf8proc_category(cp) != UTF8PROC_CATEGORY_ND) {
        if (lua_gettop(L) >= 2) {
            lua_settop(L, 2);
            return 1;
        }
        return luaL_error(L, "not a decimal");
    }
    utf8proc_int32_t start = cp;
    while (start > 0 && utf8proc_category(start - 1) == UTF8PROC_CATEGORY_ND) start--;
    lua_pushinteger(L, (cp - start) % 10);
    return 1;
}

/* the normalized text of argument 2 under the form named by argument 1 */
static void push_normalized(lua_State *L, const char *fn)
{
    if (lua_type(L, 1) != LUA_TSTRING) luaL_error(L, "%s() argument 1 must be str, not %s", fn, luaL_typename(L, 1));
    if (lua_type(L, 2) != LUA_TSTRING) luaL_error(L, "%s() argument 2 must be str, not %s", fn, luaL_typename(L, 2));
    const char *form = lua_tostring(L, 1);
    int opt;
    if (!strcmp(form, "NFC")) opt = UTF8PROC_COMPOSE;
    else if (!strcmp(form, "NFD")) opt = UTF8PROC_DECOMPOSE;
    else if (!strcmp(form, "NFKC")) opt = UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    else if (!strcmp(form, "NFKD")) opt = UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
    else {
        luaL_error(L, "invalid normalization form");
        return;
    }
    size_t n;
    const char *s = lua_tolstring(L, 2, &n);
    utf8proc_uint8_t *out = NULL;
    utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &out, UTF8PROC_STABLE | opt);
    if (k < 0) {
        if (k == UTF8PROC_ERROR_INVALIDUTF8) luaL_error(L, "%s(): the string is not valid UTF-8", fn);
        luaL_error(L, "%s(): %s", fn, utf8proc_errmsg(k));
    }
    lua_pushlstring(L, (const char *)out, (size_t)k);
    free(out);
}

static int l_normalize(lua_State *L)
{
    push_normalized(L, "normalize");
    return 1;
}

static int l_is_normalized(lua_State *L)
{
    push_normalized(L, "is_normalized");
    lua_pushboolean(L, lua_rawequal(L, -1, 2));
    return 1;
}

int luaopen_unicodedata(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        {"normalize", l_normalize}, {"is_normalized", l_is_normalized}, {"category", l_category},
        {"bidirectional", l_bidirectional}, {"combining", l_combining}, {"mirrored", l_mirrored},
        {"decimal", l_decimal}, {NULL, NULL},
    };
    luaL_newlib(L, funcs);
    lua_pushstring(L, utf8proc_unicode_version());
    lua_setfield(L, -2, "unidata_version");
    return 1;
}
