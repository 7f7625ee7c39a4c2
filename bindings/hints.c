/* Hints for Python habits in error messages. A port from Python trips first on Lua's syntax
 * ('@', '**', '!=', '+=', lists, slices, blocks) and on '.' where a method call needs ':'
 * (x.sum(), model.train(), optimizer.step()), which Lua reports as a nil `self` deep in the
 * library. The message handler below (the interpreter's and embedded states') appends a
 * "hint:" line to such errors before the traceback. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "lt.h"
#include "nnrepl_lib.h"

#define HINT_MARK "\nhint: "

/* A syntax error whose message has a line ending with `near` gets `hint`. */
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
        while (lua_next(L, -2)) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, fn)) {
                snprintf(buf, size, "%s", lua_tostring(L, -2));
                lua_pop(L, 2); /* the value and the key: the walk ends here */
                found = 1;
                break;
            }
            lua_pop(L, 1);
        }
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

/* Python's builtins that Lua lacks, called as if it had them. */
static const struct { const char *name, *hint; } builtin_hints[] = {
    { "len", "Lua's length is #x (a table, string, tensor's dim 0, dataset or loader)" },
    { "range", "Lua counts with for i = 0, n - 1 do ... end (torch.arange(n) for a tensor)" },
    { "enumerate", "Lua's for i, v in ipairs(t) do ... end numbers from 1 (pairs over a tensor from 0)" },
    { "zip", "Lua has no zip: for i = 1, #a do local x, y = a[i], b[i] ... end" },
    { "isinstance", "Lua has no isinstance: torch.is_tensor(x), type(x) == \"number\", or getmetatable(x)" },
    { "str", "Python's str(x) is tostring(x) in Lua" },
    { "int", "Python's int(x) is math.tointeger(x) or math.floor(x) in Lua; int(s) of a string is tonumber(s)" },
    { "float", "Python's float(x) is tonumber(x) in Lua" },
    { "abs", "Python's abs is math.abs in Lua (x:abs() for a tensor)" },
    { "max", "Python's max is math.max in Lua (x:max() for a tensor)" },
    { "min", "Python's min is math.min in Lua (x:min() for a tensor)" },
    { "round", "Lua has no round: math.floor(x + 0.5), or x:round() for a tensor" },
    { "sum", "Lua has no sum: add in a loop, or x:sum() for a tensor" },
    { "sorted", "Python's sorted(t) is table.sort(t) in Lua, which sorts t in place" },
    { "list", "a Python list is a Lua table {...}" },
    { "dict", "a Python dict is a Lua table {key = value}" },
    { "open", "Python's open is io.open(path, mode) in Lua" },
    { "f", "Python's f-strings are string.format(\"%.3f %s\", x, s) in Lua" },
    { "super", "an nn.Module's base part is set up before its __init runs (no super().__init__()); a subclass of your own class calls Sub.super.__init(self, ...)" },
    { "hasattr", "Python's hasattr(x, k) is x[k] ~= nil in Lua" },
    { "getattr", "Python's getattr(x, k) is x[k] in Lua" },
    { "setattr", "Python's setattr(x, k, v) is x[k] = v in Lua" },
    { "exit", "Python's exit() is os.exit(code) in Lua" },
    { "quit", "Python's quit() is os.exit(code) in Lua" },
};

/* The hint for a call of a nil global named as one of Python's builtins, or NULL. */
static const char *builtin_hint(const char *msg)
{
    static const char call[] = "attempt to call a nil value (global '";
    const char *at = strstr(msg, call);
    if (!at) return NULL;
    at += sizeof call - 1;
    size_t n = strcspn(at, "'");
    for (size_t i = 0; i < sizeof builtin_hints / sizeof builtin_hints[0]; i++)
        if (strlen(builtin_hints[i].name) == n && memcmp(at, builtin_hints[i].name, n) == 0) return builtin_hints[i].hint;
    return NULL;
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
    if (!hint) hint = builtin_hint(msg);
    if (!hint && push_self_hint(L)) hint = lua_tostring(L, -1);
    if (hint) msg = lua_pushfstring(L, "%s" HINT_MARK "%s", msg, hint);
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
    lua_Debug ar;
    char name[64];
    int top = lua_gettop(L);
    bool hint = lua_getstack(L, 0, &ar) && lua_getinfo(L, "nftu", &ar) && is_marked(L, ar.nups) &&
                called_by_name(L, &ar, name, sizeof name);
    lua_settop(L, top); /* the arguments as they came: a missing one is "no value" */
    if (!hint) return luaL_typeerror(L, 1, expected);
    /* luaL_typeerror's wording, with the hint after it */
    const char *got = luaL_getmetafield(L, 1, "__name") == LUA_TSTRING ? lua_tostring(L, -1)
                      : lua_type(L, 1) == LUA_TLIGHTUSERDATA       ? "light userdata"
                                                                   : luaL_typename(L, 1);
    return luaL_argerror(L, 1, lua_pushfstring(L, "%s expected, got %s; a method is called with ':' in Lua: x:%s(...)",
                                               expected, got, name));
}

/* _G's __index: Python's True, False and None read as globals are errors, not a silent nil
 * (DataLoader(ds, {shuffle = True}) would not shuffle); other missing globals are nil. */
static int python_constant(lua_State *L)
{
    static const char *const names[][2] = { { "True", "true" }, { "False", "false" }, { "None", "nil" } };
    const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(k, names[i][0]) == 0) return luaL_error(L, "name '%s' is not defined: Python's %s is Lua's %s", k, k, names[i][1]);
    return 0;
}

void nnrepl_guard_python_names(lua_State *L)
{
    lua_pushglobaltable(L);
    if (!lua_getmetatable(L, -1)) {
        lua_createtable(L, 0, 1);
        lua_pushcfunction(L, python_constant);
        lua_setfield(L, -2, "__index");
        lua_setmetatable(L, -2);
    } else lua_pop(L, 1); /* a host's own metatable stays */
    lua_pop(L, 1);
}
