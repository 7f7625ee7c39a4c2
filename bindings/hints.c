/* Hints for Python habits in error messages. A port from Python trips first on Lua's syntax
 * ('@', '**', '!=', '+=', lists, slices, blocks) and on '.' where a method call needs ':'
 * (x.sum(), model.train(), optimizer.step()), which Lua reports as a nil `self` deep in the
 * library. The message handler below (the interpreter's and embedded states') appends a
 * "hint:" line to such errors before the traceback. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "lt.h"
#include "nnrepl_lib.h"

#define HINT_MARK "\nhint: "

/* A syntax error whose first line ends with `near` gets `hint`. */
static const struct { const char *near, *hint; } syntax_hints[] = {
    { "near '@'", "Lua has no '@': a @ b is a:matmul(b) or torch.matmul(a, b)" },
    { "unexpected symbol near '*'", "if this is Python's '**', Lua's power is '^': x ^ 2" },
    { "near '!'", "Lua's 'not equal' is '~=', and its negation 'not'" },
    { "syntax error near '+'", "Lua has no '+=' (or '-=', '*=', '/='): x = x + 1, or x:add_(1) for a tensor in place" },
    { "syntax error near '-'", "Lua has no '-=' (or '+=', '*=', '/='): x = x - 1, or x:sub_(1) for a tensor in place" },
    { "syntax error near '*'", "Lua has no '*=' (or '+=', '-=', '/='): x = x * 2, or x:mul_(2) for a tensor in place" },
    { "syntax error near '/'", "Lua has no '/=' (or '+=', '-=', '*='): x = x / 2, or x:div_(2) for a tensor in place" },
    { "unexpected symbol near '['", "a Python list [1, 2] is the table {1, 2} in Lua" },
    { "']' expected near ':'", "Python's subscripts go in a string: x[\"0:2\"], x[\":, 1\"], x[\"..., None\"]" },
    { "unexpected symbol near ':'", "Python's subscripts go in a string: x[\":, 0\"], x[\"1:\"]" },
    { "'}' expected near ':'", "a Python dict {\"a\": 1} is the table {a = 1} (or {[\"a\"] = 1}) in Lua" },
    { "'then' expected near ':'", "Lua's blocks are words, not ':' and indentation: if c then ... elseif d then ... else ... end" },
    { "'do' expected near ':'", "Lua's blocks are words, not ':' and indentation: while c do ... end, for i = 0, n - 1 do ... end" },
};

/* The hint for the first line of the message (before its traceback) that ends as a syntax
 * error of syntax_hints does, or NULL. (require's message has the syntax error on line 2.) */
static const char *syntax_hint(const char *msg)
{
    const char *end = strstr(msg, "\nstack traceback:");
    if (!end) end = msg + strlen(msg);
    for (const char *line = msg; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
        for (size_t i = 0; i < sizeof syntax_hints / sizeof syntax_hints[0]; i++) {
            size_t m = strlen(syntax_hints[i].near);
            if (n >= m && memcmp(line + n - m, syntax_hints[i].near, m) == 0) return syntax_hints[i].hint;
        }
        line += n + 1;
    }
    return NULL;
}

void nnrepl_hint_syntax(lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    const char *hint = msg && !strstr(msg, HINT_MARK) ? syntax_hint(msg) : NULL;
    if (!hint) return;
    const char *tb = strstr(msg, "\nstack traceback:");
    size_t n = tb ? (size_t)(tb - msg) : strlen(msg);
    lua_pushlstring(L, msg, n);
    lua_pushfstring(L, "%s" HINT_MARK "%s%s", lua_tostring(L, -1), hint, tb ? tb : "");
    lua_replace(L, -3);
    lua_pop(L, 1);
}

/* The key under which the table on top of the stack holds the function at fn (a string), into
 * buf; pops the table. */
static int key_of(lua_State *L, int fn, char *buf, size_t size)
{
    int found = 0;
    if (lua_istable(L, -1)) {
        lua_pushnil(L);
        while (!found && lua_next(L, -2)) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, fn)) {
                snprintf(buf, size, "%s", lua_tostring(L, -2));
                found = 1;
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        if (found) lua_pop(L, 1); /* the key lua_next left */
    }
    lua_pop(L, 1);
    return found;
}

/* The name of a function called by a tail call (which leaves no name in the caller's frame):
 * its key in the Tensor method table or in a loaded module, as luaL_traceback finds it. */
static int tail_call_name(lua_State *L, lua_Debug *ar, char *buf, size_t size)
{
    lua_getinfo(L, "f", ar);
    int fn = lua_gettop(L), found = 0;
    lua_rawgetp(L, LUA_REGISTRYINDEX, LT_TENSOR_MT);
    lua_getfield(L, -1, "__methods");
    lua_remove(L, -2);
    found = key_of(L, fn, buf, size);
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    int loaded = lua_gettop(L);
    lua_pushnil(L);
    while (!found && lua_next(L, loaded)) {
        found = key_of(L, fn, buf, size); /* pops the module */
        if (found) lua_pop(L, 1);         /* the module's name */
    }
    lua_settop(L, fn - 1);
    return found;
}

/* The name of the function of frame ar if it was called as f(...) through a name (x.f, f), or by
 * a tail call (as the REPL's `return <input>` calls), into buf; not if called as x:f(...), by C
 * code, a metamethod or a for loop. */
static int called_by_name(lua_State *L, lua_Debug *ar, char *buf, size_t size)
{
    static const char *const by_name[] = { "field", "global", "local", "upvalue", "constant" };
    if (ar->istailcall) return tail_call_name(L, ar, buf, size);
    for (size_t i = 0; ar->name && i < sizeof by_name / sizeof by_name[0]; i++)
        if (strcmp(ar->namewhat, by_name[i]) == 0) {
            snprintf(buf, size, "%s", ar->name);
            return 1;
        }
    return 0;
}

/* A method called with '.': walking out from the error, the outermost Lua function called by
 * name whose first parameter `self` holds no object (nil, a number, a string, a boolean), before
 * any function whose `self` is an object (the chain of helpers a nil self went through ends at
 * the user's call). Pushes its hint and returns 1, or returns 0. */
static int push_self_hint(lua_State *L)
{
    lua_Debug ar;
    char name[64] = "", candidate[64];
    int self_type = LUA_TNIL;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "nStu", &ar) || strcmp(ar.what, "Lua") != 0 || ar.nparams < 1) continue;
        const char *param = lua_getlocal(L, &ar, 1);
        if (!param) continue;
        int t = lua_type(L, -1);
        lua_pop(L, 1);
        if (strcmp(param, "self") != 0) continue;
        if (t == LUA_TTABLE || t == LUA_TUSERDATA) break;
        if (!called_by_name(L, &ar, candidate, sizeof candidate)) continue;
        memcpy(name, candidate, sizeof name);
        self_type = t;
    }
    if (!name[0]) return 0;
    lua_pushfstring(L, "'%s' got %s as self: a method is called with ':' in Lua, as obj:%s(...); obj.%s(...) passes no self",
                    name, self_type == LUA_TNIL ? "nil" : self_type == LUA_TSTRING ? "a string"
                          : self_type == LUA_TNUMBER ? "a number" : "a boolean", name, name);
    return 1;
}

int nnrepl_msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (!msg) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    const char *hint = syntax_hint(msg);
    if (hint) msg = lua_pushfstring(L, "%s" HINT_MARK "%s", msg, hint);
    else if (push_self_hint(L)) msg = lua_pushfstring(L, "%s" HINT_MARK "%s", msg, lua_tostring(L, -1));
    luaL_traceback(L, L, msg, 1);
    return 1;
}

static const char METHOD_MARK[1];

/* Whether the function on top of the stack is a C function whose last upvalue is the marker. */
static int is_marked(lua_State *L, int nups)
{
    if (nups < 1 || !lua_getupvalue(L, -1, nups)) return 0;
    int marked = lua_touserdata(L, -1) == METHOD_MARK;
    lua_pop(L, 1);
    return marked;
}

void lt_mark_methods(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_CFunction f = lua_tocfunction(L, -1);
        lua_Debug ar;
        lua_pushvalue(L, -1);
        lua_getinfo(L, ">u", &ar);
        if (f && !is_marked(L, ar.nups)) { /* a copy with the same upvalues and the marker after them */
            int fn = lua_gettop(L);
            lua_pushvalue(L, fn - 1);
            for (int i = 1; i <= ar.nups; i++) lua_getupvalue(L, fn, i);
            lua_pushlightuserdata(L, (void *)METHOD_MARK);
            lua_pushcclosure(L, f, ar.nups + 1);
            lua_rawset(L, idx); /* replacing an existing key's value keeps lua_next's walk valid */
        }
        lua_pop(L, 1);
    }
}

int lt_self_error(lua_State *L, const char *expected)
{
    const char *got = luaL_getmetafield(L, 1, "__name") == LUA_TSTRING ? lua_tostring(L, -1)
                      : lua_type(L, 1) == LUA_TLIGHTUSERDATA       ? "light userdata"
                                                                   : luaL_typename(L, 1);
    lua_Debug ar;
    char name[64];
    if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "nftu", &ar) && is_marked(L, ar.nups) &&
        called_by_name(L, &ar, name, sizeof name))
        return luaL_argerror(L, 1, lua_pushfstring(L, "%s expected, got %s; a method is called with ':' in Lua: x:%s(...)",
                                                   expected, got, name));
    return luaL_argerror(L, 1, lua_pushfstring(L, "%s expected, got %s", expected, got));
}
