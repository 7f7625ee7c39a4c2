/* _pystr: the Unicode half of Python's str methods (bindings/lua/pystr.lua; require "_pystr"),
 * on UTF-8 Lua strings, following CPython 3.11's unicodeobject.c:
 *   ws_split(s, maxsplit, from_right) -> list   split() / rsplit() on runs of whitespace
 *   ws_strip(s, left, right) -> string          strip() / lstrip() / rstrip() of whitespace
 *   is(s, kind) -> boolean                      isalpha isdecimal isdigit isnumeric isalnum isspace
 *                                               isupper islower istitle isprintable isidentifier
 *   casemap(s, kind) -> string                  casefold swapcase title capitalize
 * Categories, bidi classes, simple case mappings and case folding come from utf8proc; what
 * utf8proc lacks (Other_Lowercase/Uppercase, Case_Ignorable's extra characters, Numeric_Type,
 * XID_Start/Continue, the multi-character case mappings) from unicode_tables.h. */
#include <string.h>

#include <lauxlib.h>
#include <utf8proc.h>

#include "lt.h"
#include "unicode_tables.h"

#define COUNT(a) (sizeof a / sizeof *a)

static int in_ranges(const uint32_t (*r)[2], size_t n, utf8proc_int32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((uint32_t)cp < r[mid][0]) hi = mid;
        else if ((uint32_t)cp > r[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}
#define IN(table, cp) in_ranges(table, COUNT(table), cp)

static int cat(utf8proc_int32_t cp) { return utf8proc_category(cp); }

/* Python's Py_UNICODE_ISSPACE: bidi class WS, B or S, or category Zs */
static int is_space(utf8proc_int32_t cp)
{
    int b = utf8proc_get_property(cp)->bidi_class;
    return b == UTF8PROC_BIDI_CLASS_WS || b == UTF8PROC_BIDI_CLASS_B || b == UTF8PROC_BIDI_CLASS_S || cat(cp) == UTF8PROC_CATEGORY_ZS;
}
static int is_lower(utf8proc_int32_t cp) { return cat(cp) == UTF8PROC_CATEGORY_LL || IN(lower_extra, cp); }
static int is_upper(utf8proc_int32_t cp) { return cat(cp) == UTF8PROC_CATEGORY_LU || IN(upper_extra, cp); }
static int is_title(utf8proc_int32_t cp) { return cat(cp) == UTF8PROC_CATEGORY_LT; }
static int is_cased(utf8proc_int32_t cp) { return is_lower(cp) || is_upper(cp) || is_title(cp); }
static int is_case_ignorable(utf8proc_int32_t cp)
{
    int c = cat(cp);
    return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_ME || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_LM ||
           c == UTF8PROC_CATEGORY_SK || IN(ignorable_extra, cp);
}
static int is_alpha(utf8proc_int32_t cp)
{
    int c = cat(cp);
    return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}
static int is_decimal(utf8proc_int32_t cp) { return cat(cp) == UTF8PROC_CATEGORY_ND; }
static int is_digit(utf8proc_int32_t cp) { return is_decimal(cp) || IN(digit_extra, cp); }
static int is_numeric(utf8proc_int32_t cp)
{
    int c = cat(cp);
    return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO || IN(numeric_extra, cp);
}
static int is_printable(utf8proc_int32_t cp)
{
    if (cp == ' ') return 1;
    int c = cat(cp);
    return !(c == UTF8PROC_CATEGORY_CN || c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CS ||
             c == UTF8PROC_CATEGORY_CO || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP || c == UTF8PROC_CATEGORY_ZS);
}
static int is_xid_start(utf8proc_int32_t cp) { return (is_alpha(cp) || cat(cp) == UTF8PROC_CATEGORY_NL) != IN(xid_start_flip, cp); }
static int is_xid_continue(utf8proc_int32_t cp)
{
    int c = cat(cp);
    int rule = is_alpha(cp) || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC ||
               c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_PC;
    return rule != IN(xid_cont_flip, cp);
}

/* ---- decoding: the code points of s and where each starts (off[n] = the byte length) ---- */

typedef struct {
    utf8proc_int32_t *cp;
    size_t *off;
    size_t n;
    const char *s;
} decoded;

static decoded decode(lua_State *L, int idx, const char *fn)
{
    decoded d;
    size_t len;
    d.s = luaL_checklstring(L, idx, &len);
    /* one userdata for both arrays (collected with the call's stack) */
    void *mem = lua_newuserdatauv(L, (len + 1) * (sizeof *d.cp + sizeof *d.off), 0);
    d.off = mem;
    d.cp = (utf8proc_int32_t *)(d.off + len + 1);
    d.n = 0;
    size_t i = 0;
    while (i < len) {
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)d.s + i, (utf8proc_ssize_t)(len - i), &d.cp[d.n]);
        if (k < 0) luaL_error(L, "%s(): the string is not valid UTF-8 (byte %d)", fn, (int)i + 1);
        d.off[d.n++] = i;
        i += (size_t)k;
    }
    d.off[d.n] = len;
    return d;
}

static void push_piece(lua_State *L, const decoded *d, size_t from, size_t to, lua_Integer slot)
{
    lua_pushlstring(L, d->s + d->off[from], d->off[to] - d->off[from]);
    lua_rawseti(L, -2, slot);
}

/* ws_split(s, maxsplit, from_right): Python's split_whitespace / rsplit_whitespace */
static int l_ws_split(lua_State *L)
{
    lua_Integer maxcount = luaL_optinteger(L, 2, -1);
    int right = lua_toboolean(L, 3);
    decoded d = decode(L, 1, right ? "rsplit" : "split");
    if (maxcount < 0) maxcount = LUA_MAXINTEGER;
    lua_newtable(L);
    lua_Integer k = 0;
    size_t n = d.n;
    if (!right) {
        size_t i = 0, j;
        while (maxcount-- > 0) {
            while (i < n && is_space(d.cp[i])) i++;
            if (i == n) break;
            j = i++;
            while (i < n && !is_space(d.cp[i])) i++;
            push_piece(L, &d, j, i, ++k);
        }
        if (i < n) {
            while (i < n && is_space(d.cp[i])) i++;
            if (i != n) push_piece(L, &d, i, n, ++k);
        }
        return 1;
    }
    /* from the right: pieces found last to first, then reversed */
    size_t i = n, j;
    while (maxcount-- > 0) {
        while (i > 0 && is_space(d.cp[i - 1])) i--;
        if (i == 0) break;
        j = i--;
        while (i > 0 && !is_space(d.cp[i - 1])) i--;
        push_piece(L, &d, i, j, ++k);
    }
    if (i > 0) {
        while (i > 0 && is_space(d.cp[i - 1])) i--;
        if (i != 0) push_piece(L, &d, 0, i, ++k);
    }
    for (lua_Integer a = 1, b = k; a < b; a++, b--) {
        lua_rawgeti(L, -1, a);
        lua_rawgeti(L, -2, b);
        lua_rawseti(L, -3, a);
        lua_rawseti(L, -2, b);
    }
    return 1;
}

static int l_ws_strip(lua_State *L)
{
    int left = lua_toboolean(L, 2), right = lua_toboolean(L, 3);
    decoded d = decode(L, 1, left && right ? "strip" : left ? "lstrip" : "rstrip");
    size_t i = 0, j = d.n;
    if (left) while (i < j && is_space(d.cp[i])) i++;
    if (right) while (j > i && is_space(d.cp[j - 1])) j--;
    lua_pushlstring(L, d.s + d.off[i], d.off[j] - d.off[i]);
    return 1;
}

/* ---- predicates ---- */

static int all_of(const decoded *d, int (*pred)(utf8proc_int32_t))
{
    if (d->n == 0) return 0;
    for (size_t i = 0; i < d->n; i++)
        if (!pred(d->cp[i])) return 0;
    return 1;
}

static int is_alnum(utf8proc_int32_t cp) { return is_alpha(cp) || is_decimal(cp) || is_digit(cp) || is_numeric(cp); }

/* isupper / islower (CPython's unicode_isupper_impl, unicode_islower_impl) */
static int cased_all(const decoded *d, int (*want)(utf8proc_int32_t), int (*other)(utf8proc_int32_t))
{
    int cased = 0;
    for (size_t i = 0; i < d->n; i++) {
        utf8proc_int32_t c = d->cp[i];
        if (other(c) || is_title(c)) return 0;
        if (want(c)) cased = 1;
    }
    return cased;
}

static int istitle(const decoded *d)
{
    int cased = 0, previous_is_cased = 0;
    for (size_t i = 0; i < d->n; i++) {
        utf8proc_int32_t c = d->cp[i];
        if (is_upper(c) || is_title(c)) {
            if (previous_is_cased) return 0;
            previous_is_cased = cased = 1;
        } else if (is_lower(c)) {
            if (!previous_is_cased) return 0;
            previous_is_cased = cased = 1;
        } else previous_is_cased = 0;
    }
    return cased;
}

static int isidentifier(const decoded *d)
{
    if (d->n == 0 || !(d->cp[0] == '_' || is_xid_start(d->cp[0]))) return 0;
    for (size_t i = 1; i < d->n; i++)
        if (!is_xid_continue(d->cp[i])) return 0;
    return 1;
}

static int l_is(lua_State *L)
{
    static const char *const kinds[] = {"isalpha", "isdecimal", "isdigit", "isnumeric", "isalnum", "isspace", "isupper",
                                        "islower", "istitle", "isprintable", "isidentifier", NULL};
    int kind = luaL_checkoption(L, 2, NULL, kinds);
    decoded d = decode(L, 1, kinds[kind]);
    int r = 0;
    switch (kind) {
    case 0: r = all_of(&d, is_alpha); break;
    case 1: r = all_of(&d, is_decimal); break;
    case 2: r = all_of(&d, is_digit); break;
    case 3: r = all_of(&d, is_numeric); break;
    case 4: r = all_of(&d, is_alnum); break;
    case 5: r = all_of(&d, is_space); break;
    case 6: r = cased_all(&d, is_upper, is_lower); break;
    case 7: r = cased_all(&d, is_lower, is_upper); break;
    case 8: r = istitle(&d); break;
    case 9: r = d.n == 0 || all_of(&d, is_printable); break;
    case 10: r = isidentifier(&d); break;
    }
    lua_pushboolean(L, r);
    return 1;
}

/* ---- case mappings (full: SpecialCasing's multi-character ones from the table) ---- */

enum { LOWER, UPPER, TITLE };

static const struct special_case *special(utf8proc_int32_t cp)
{
    size_t lo = 0, hi = COUNT(special_cases);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((uint32_t)cp < special_cases[mid].cp) hi = mid;
        else if ((uint32_t)cp > special_cases[mid].cp) lo = mid + 1;
        else return &special_cases[mid];
    }
    return NULL;
}

static void add_cp(luaL_Buffer *b, utf8proc_int32_t cp)
{
    utf8proc_uint8_t u[4];
    utf8proc_ssize_t k = utf8proc_encode_char(cp, u);
    luaL_addlstring(b, (const char *)u, (size_t)k);
}

static void add_mapped(luaL_Buffer *b, utf8proc_int32_t cp, int how)
{
    const struct special_case *sc = special(cp);
    if (sc) {
        luaL_addstring(b, how == LOWER ? sc->lower : how == UPPER ? sc->upper : sc->title);
        return;
    }
    add_cp(b, how == LOWER ? utf8proc_tolower(cp) : how == UPPER ? utf8proc_toupper(cp) : utf8proc_totitle(cp));
}

/* lower case of d->cp[i], with the Final_Sigma rule for U+03A3 (CPython's handle_capital_sigma) */
static void add_lower(luaL_Buffer *b, const decoded *d, size_t i)
{
    if (d->cp[i] != 0x3A3) {
        add_mapped(b, d->cp[i], LOWER);
        return;
    }
    size_t j = i;
    while (j > 0 && is_case_ignorable(d->cp[j - 1])) j--;
    int final_sigma = j > 0 && is_cased(d->cp[j - 1]);
    if (final_sigma) {
        j = i + 1;
        while (j < d->n && is_case_ignorable(d->cp[j])) j++;
        final_sigma = j == d->n || !is_cased(d->cp[j]);
    }
    add_cp(b, final_sigma ? 0x3C2 : 0x3C3);
}

static void add_folded(lua_State *L, luaL_Buffer *b, utf8proc_int32_t cp)
{
    utf8proc_int32_t out[8];
    int boundclass = 0;
    utf8proc_ssize_t k = utf8proc_decompose_char(cp, out, 8, UTF8PROC_CASEFOLD, &boundclass);
    if (k < 0 || k > 8) luaL_error(L, "casefold(): %s", utf8proc_errmsg(k < 0 ? k : UTF8PROC_ERROR_OVERFLOW));
    for (utf8proc_ssize_t i = 0; i < k; i++) add_cp(b, out[i]);
}

static int l_casemap(lua_State *L)
{
    static const char *const kinds[] = {"casefold", "swapcase", "title", "capitalize", NULL};
    int kind = luaL_checkoption(L, 2, NULL, kinds);
    decoded d = decode(L, 1, kinds[kind]);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    int previous_is_cased = 0;
    for (size_t i = 0; i < d.n; i++) {
        utf8proc_int32_t c = d.cp[i];
        switch (kind) {
        case 0: add_folded(L, &b, c); break;
        case 1:
            if (is_upper(c)) add_lower(&b, &d, i);
            else if (is_lower(c)) add_mapped(&b, c, UPPER);
            else add_cp(&b, c);
            break;
        case 2:
            if (previous_is_cased) add_lower(&b, &d, i);
            else add_mapped(&b, c, TITLE);
            previous_is_cased = is_cased(c);
            break;
        case 3:
            if (i == 0) add_mapped(&b, c, TITLE);
            else add_lower(&b, &d, i);
            break;
        }
    }
    luaL_pushresult(&b);
    return 1;
}

int luaopen_pystr(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        {"ws_split", l_ws_split}, {"ws_strip", l_ws_strip}, {"is", l_is}, {"casemap", l_casemap}, {NULL, NULL},
    };
    luaL_newlib(L, funcs);
    return 1;
}
