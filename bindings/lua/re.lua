-- Python's re module on PCRE2 (bindings/re.c is the thin layer: compile, match at an offset):
--   local re = require "re"
--   re.compile, search, match, fullmatch, split, findall, finditer, sub, subn, escape, purge,
--   the flags (re.I | re.M ...: I, M, S, X, A, U and their long names), re.error.
--   Pattern: p:search(s, pos, endpos), match, fullmatch, split, findall, finditer, sub, subn,
--   p.pattern, p.flags, p.groups, p.groupindex. Match: m:group(...), m[1], m:groups(default),
--   m:groupdict(default), m:start(g), m:end_(g) (also m["end"]), m:span(g), m:expand(t), m.pos,
--   m.endpos, m.lastindex, m.lastgroup, m.re, m.string, m.regs.
-- Differences from Python, all forced by Lua: positions are 0-based byte offsets (Python counts
-- code points; they agree on ASCII); Python's None in a list (split's unmatched groups,
-- m:groups(), m:groupdict()) is false, and a lone None is nil; m:group(1, 2) and m:span() return
-- several values instead of a tuple; a trailing table gives keywords (re.sub(p, r, s, {count = 1})).
-- The pattern syntax is Python's as far as PCRE2 shares it; \Z, \uXXXX, \UXXXXXXXX, {,n} and the
-- leading global flags (?aiLmsux) are translated. Errors carry Python's text where it is known
-- ("re.error: missing ), unterminated subpattern at position 0"), else PCRE2's message.
local C = require "_re"
local U = require "nn_util"

local M = {}

M.NOFLAG, M.TEMPLATE, M.IGNORECASE, M.LOCALE, M.MULTILINE, M.DOTALL, M.UNICODE, M.VERBOSE, M.DEBUG, M.ASCII =
  0, 1, 2, 4, 8, 16, 32, 64, 128, 256
M.T, M.I, M.L, M.M, M.S, M.U, M.X, M.A = 1, 2, 4, 8, 16, 32, 64, 256
local flag_names = { { 1, "TEMPLATE" }, { 2, "IGNORECASE" }, { 4, "LOCALE" }, { 8, "MULTILINE" }, { 16, "DOTALL" },
  { 32, "UNICODE" }, { 64, "VERBOSE" }, { 128, "DEBUG" }, { 256, "ASCII" } }
local inline_flags = { a = 256, i = 2, L = 4, m = 8, s = 16, u = 32, x = 64 }

M.error = require("torch_errors").class("re.error", { "re%.error: " })

local Pattern, Match = {}, {}
local pattern_mt = { __index = Pattern, __name = "re.Pattern" }
local match_mt = { __name = "re.Match" }
M.Pattern, M.Match = Pattern, Match

-- ---- Python's repr of a str ----

local repr_escapes = { ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }
local function str_repr(s)
  local q = (s:find("'", 1, true) and not s:find('"', 1, true)) and '"' or "'"
  return q .. s:gsub("[%c\\" .. q .. "]", function(c)
    return repr_escapes[c] or (c == q and "\\" .. q) or string.format("\\x%02x", c:byte())
  end) .. q
end

-- ---- errors ----

-- a byte offset of text as Python's position (code points)
local function char_pos(s, off)
  if off <= 0 then return 0 end
  return utf8.len(s, 1, off) or off
end

local function re_error(msg, pattern, off)
  local pos = char_pos(pattern, off)
  if pattern:find("\n", 1, true) then -- Python adds the line and column for a pattern of several lines
    local before = pattern:sub(1, off)
    local _, lines = before:gsub("\n", "")
    local last = before:match(".*()\n")
    msg = string.format("%s at position %d (line %d, column %d)", msg, pos, lines + 1,
      last and pos - char_pos(pattern, last - 1) or pos + 1)
    U.error("re.error: " .. msg)
  end
  U.errorf("re.error: %s at position %d", msg, pos)
end

-- ---- Python's pattern syntax -> PCRE2 ----

-- Returns the PCRE2 pattern, the flags with the leading inline ones added, and what the scan saw:
-- pieces/origins (each output piece and the byte offset it came from, to map PCRE2's error
-- offsets back), closes (group number -> offset of its ')', for lastindex), the unclosed '(' and '['.
local function translate(p, flags)
  local i, n = 1, #p
  while true do -- Python's global flags, only at the start
    local f, j = p:match("^%(%?([aiLmsux]+)%)()", i)
    if not f then break end
    for ch in f:gmatch(".") do flags = flags | inline_flags[ch] end
    i = j
  end
  local pieces, origins, copied = {}, {}, {}
  local function emit(text, at)
    local k = #pieces + 1
    pieces[k], origins[k], copied[k] = text, at - 1, p:sub(at, at + #text - 1) == text
  end
  local verbose = flags & M.VERBOSE ~= 0
  local stack, closes, class_at, groups = {}, {}, nil, 0
  while i <= n do
    local c = p:sub(i, i)
    if c == "\\" then
      local d = p:sub(i + 1, i + 1)
      local u4, u8 = p:match("^u(%x%x%x%x)", i + 1), p:match("^U(%x%x%x%x%x%x%x%x)", i + 1)
      if d == "Z" and not class_at then emit("\\z", i); i = i + 2 -- Python's \Z is PCRE2's \z
      elseif u4 then emit("\\x{" .. u4 .. "}", i); i = i + 6
      elseif u8 then emit("\\x{" .. u8 .. "}", i); i = i + 10
      else emit(p:sub(i, i + 1), i); i = i + 2 end
    elseif class_at then
      if c == "]" then class_at = nil end
      emit(c, i); i = i + 1
    elseif c == "[" then
      local j = i + 1
      if p:sub(j, j) == "^" then j = j + 1 end
      if p:sub(j, j) == "]" then j = j + 1 end -- a ']' first is a literal
      class_at = i - 1
      emit(p:sub(i, j - 1), i); i = j
    elseif c == "(" then
      if p:match("^%(%?#", i) then -- a comment: to its ')'
        local j = p:find(")", i, true) or n
        emit(p:sub(i, j), i); i = j + 1
      else
        local capturing = p:sub(i + 1, i + 1) ~= "?" or p:match("^%?P<", i + 1) or p:match("^%?<[^=!]", i + 1)
          or p:match("^%?'", i + 1)
        if capturing then groups = groups + 1 end
        stack[#stack + 1] = { i - 1, capturing and groups }
        emit(c, i); i = i + 1
      end
    elseif c == ")" then
      local open = table.remove(stack)
      if open and open[2] then closes[open[2]] = i - 1 end
      emit(c, i); i = i + 1
    elseif c == "{" and p:match("^{,%d+}", i) then -- Python's {,n} is {0,n}
      local m = p:match("^{,%d+}", i)
      emit("{0" .. m:sub(2), i); i = i + #m
    elseif c == "#" and verbose then
      local j = p:find("\n", i, true) or n
      emit(p:sub(i, j), i); i = j + 1
    else
      local j = p:find("[\\%[%]%(%){#]", i + 1) or n + 1 -- a run of plain characters
      emit(p:sub(i, j - 1), i); i = j
    end
  end
  return table.concat(pieces), flags, { pieces = pieces, origins = origins, copied = copied, closes = closes, stack = stack, class_at = class_at }
end

-- PCRE2's error offset in the translated pattern -> the byte offset in the user's pattern
local function origin(scan, off)
  local at = 0
  for k, piece in ipairs(scan.pieces) do
    if off < at + #piece or k == #scan.pieces then
      local o = scan.origins[k]
      return scan.copied[k] and o + math.min(off - at, #piece) or o
    end
    at = at + #piece
  end
  return 0
end

-- Python's message for the PCRE2 errors users meet most, else PCRE2's own
local function compile_error(p, scan, msg, off, code)
  local o = origin(scan, off)
  if code == 114 and #scan.stack > 0 then return re_error("missing ), unterminated subpattern", p, scan.stack[#scan.stack][1]) end
  if code == 122 then return re_error("unbalanced parenthesis", p, o) end
  if code == 106 and scan.class_at then return re_error("unterminated character set", p, scan.class_at) end
  if code == 101 then return re_error("bad escape (end of pattern)", p, #p - 1) end
  if code == 103 then return re_error("bad escape " .. p:sub(o, o + 1), p, o - 1) end
  if code == 109 then
    return re_error(p:sub(o, o):find("[*+?}]") and "multiple repeat" or "nothing to repeat", p, o)
  end
  if code == 115 then
    if p:sub(o - 3, o) == "(?P=" then return re_error("unknown group name '" .. p:match("^[^)]*", o + 1) .. "'", p, o) end
    local digits = p:match("^%d+", o + 1)
    if p:sub(o, o) == "\\" and digits then return re_error("invalid group reference " .. digits, p, o) end
  end
  if code == 108 and p:sub(o, o) == "-" then return re_error("bad character range " .. p:sub(o - 1, o + 1), p, o - 2) end
  return re_error(msg, p, o)
end

-- ---- compiling, with Python's cache ----

local cache, cached, MAXCACHE = {}, 0, 512

local function compile(p, flags)
  if getmetatable(p) == pattern_mt then
    if flags ~= 0 then U.error("ValueError: cannot process flags argument with a compiled pattern") end
    return p
  end
  if type(p) ~= "string" then U.error("TypeError: first argument must be string or compiled pattern") end
  if math.type(flags) ~= "integer" then U.errorf("TypeError: flags must be an integer, got %s", U.typename(flags)) end
  local by_flags = cache[p]
  local hit = by_flags and by_flags[flags]
  if hit then return hit end
  local pcre, all, scan = translate(p, flags)
  if all & M.LOCALE ~= 0 then U.error("ValueError: cannot use LOCALE flag with a str pattern") end
  if all & M.ASCII ~= 0 and all & M.UNICODE ~= 0 then U.error("ValueError: ASCII and UNICODE flags are incompatible") end
  local code, msg, off, err = C.compile(pcre, all)
  if not code then compile_error(p, scan, msg, off, err) end
  local groups, groupindex = code:info()
  local P = setmetatable({ pattern = p, flags = all & M.ASCII == 0 and all | M.UNICODE or all, groups = groups,
    groupindex = groupindex, _code = code, _closes = scan.closes, _templates = {} }, pattern_mt)
  if cached >= MAXCACHE then cache, cached = {}, 0 end
  by_flags = cache[p] or {}
  cache[p] = by_flags
  by_flags[flags] = P
  cached = cached + 1
  return P
end

function M.purge() cache, cached = {}, 0 end

-- ---- arguments ----

local function check_string(s)
  if type(s) ~= "string" then U.errorf("TypeError: expected string or bytes-like object, got '%s'", U.typename(s)) end
  return s
end

-- optional trailing arguments, positional or as a keyword table: the values in spec's order
local function options(fname, spec, ...)
  local n = select("#", ...)
  if n == 0 or not U.is_opts((select(n, ...))) then return ... end
  local o = U.parse(fname, spec, ...)
  local out = {}
  for i, s in ipairs(spec) do out[i] = o[s[1]] end
  return table.unpack(out, 1, #spec)
end

-- Python's pos and endpos: clamped to the string
local function bounds(s, pos, endpos)
  local n = #s
  pos, endpos = pos or 0, endpos or n
  pos = pos < 0 and 0 or pos > n and n or pos
  endpos = endpos < 0 and 0 or endpos > n and n or endpos
  return pos, endpos
end

-- ---- Match ----

local function new_match(P, s, pos, endpos, ov)
  return setmetatable({ re = P, string = s, pos = pos, endpos = endpos, _ov = ov }, match_mt)
end

-- a group's number from Python's argument (a number or a name)
local function group_index(m, g)
  local P = m.re
  if g == nil then return 0 end
  local k = math.type(g) == "integer" and g or type(g) == "string" and P.groupindex[g]
  if not k or k < 0 or k > P.groups then U.error("IndexError: no such group") end
  return k
end

local function group_text(m, k)
  local s, e = m._ov[2 * k + 1], m._ov[2 * k + 2]
  if s < 0 then return nil end
  return m.string:sub(s + 1, e)
end

function Match:group(...)
  local n = select("#", ...)
  if n <= 1 then return group_text(self, group_index(self, (...))) end
  local out = {}
  for i = 1, n do out[i] = group_text(self, group_index(self, (select(i, ...)))) end
  return table.unpack(out, 1, n)
end

-- unmatched groups are `default`, or false (a list keeps no nil)
function Match:groups(default)
  if default == nil then default = false end
  local out = {}
  for k = 1, self.re.groups do
    local t = group_text(self, k)
    if t == nil then t = default end
    out[k] = t
  end
  return out
end

function Match:groupdict(default)
  if default == nil then default = false end
  local out = {}
  for name, k in pairs(self.re.groupindex) do
    local t = group_text(self, k)
    if t == nil then t = default end
    out[name] = t
  end
  return out
end

function Match:start(g) return self._ov[2 * group_index(self, g) + 1] end
function Match:end_(g) return self._ov[2 * group_index(self, g) + 2] end
Match["end"] = Match.end_
function Match:span(g)
  local k = group_index(self, g)
  return self._ov[2 * k + 1], self._ov[2 * k + 2]
end

-- Python's lastindex: the group that closed last; among groups ending at the same offset, the
-- one whose ')' comes later in the pattern (an outer group after its inner ones)
local function lastindex(m)
  local best, best_end, best_close
  local closes = m.re._closes
  for k = 1, m.re.groups do
    local e = m._ov[2 * k + 2]
    if m._ov[2 * k + 1] >= 0 then
      local close = closes[k] or k
      if not best or e > best_end or (e == best_end and close > best_close) then best, best_end, best_close = k, e, close end
    end
  end
  return best
end

local function lastgroup(m)
  local k = lastindex(m)
  if not k then return nil end
  for name, i in pairs(m.re.groupindex) do
    if i == k then return name end
  end
  return nil
end

match_mt.__index = function(m, k)
  if math.type(k) == "integer" then return group_text(m, group_index(m, k)) end
  local method = Match[k]
  if method ~= nil then return method end
  if k == "lastindex" then return lastindex(m) end
  if k == "lastgroup" then return lastgroup(m) end
  if k == "regs" then
    local out = {}
    for g = 0, m.re.groups do out[g + 1] = { m._ov[2 * g + 1], m._ov[2 * g + 2] } end
    return out
  end
  if type(k) == "string" and m.re.groupindex[k] then return group_text(m, m.re.groupindex[k]) end
  return nil
end
match_mt.__tostring = function(m)
  return string.format("<re.Match object; span=(%d, %d), match=%s>", m._ov[1], m._ov[2], str_repr(m:group()))
end

-- ---- replacement templates (Python's re._parser.parse_template) ----

local template_escapes = { a = "\a", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", v = "\v", ["\\"] = "\\" }

-- a template -> a list of literal strings and group numbers
local function parse_template(P, t)
  local items, lit = {}, {}
  local function flush()
    if #lit > 0 then items[#items + 1] = table.concat(lit); lit = {} end
  end
  local function fail(msg, pos) U.errorf("re.error: %s at position %d", msg, char_pos(t, pos)) end
  local function addgroup(k, pos)
    if k > P.groups then fail("invalid group reference " .. k, pos) end
    flush()
    items[#items + 1] = k
  end
  local i, n = 1, #t
  while i <= n do
    local j = t:find("\\", i, true)
    if not j then lit[#lit + 1] = t:sub(i); break end
    if j > i then lit[#lit + 1] = t:sub(i, j - 1) end
    local c = t:sub(j + 1, j + 1)
    i = j + 2
    if c == "" then fail("bad escape (end of pattern)", j - 1)
    elseif c == "g" then
      if t:sub(i, i) ~= "<" then fail("missing <", i - 1) end
      local close = t:find(">", i + 1, true)
      local name = t:sub(i + 1, (close or n + 1) - 1)
      if not close then
        if name == "" then fail("missing group name", n) end
        fail("missing >, unterminated name", n - #name)
      end
      if name == "" then fail("missing group name", close - 1) end
      i = close + 1
      local k
      if name:find("^[%a_\128-\255][%w_\128-\255]*$") then
        k = P.groupindex[name]
        if not k then U.errorf("IndexError: unknown group name '%s'", name) end
      else
        k = name:find("^%d+$") and tonumber(name)
        if not k then fail(string.format("bad character in group name '%s'", name), close - 1 - #name) end
      end
      addgroup(k, close - 1 - #name)
    elseif c == "0" then
      local oct = t:match("^[0-7]?[0-7]?", i)
      lit[#lit + 1] = utf8.char(tonumber("0" .. oct, 8) & 0xff)
      i = i + #oct
    elseif c:find("%d") then
      local two = t:match("^%d", i)
      local third = two and t:match("^[0-7]", i + 1)
      if two and c:find("[0-7]") and two:find("[0-7]") and third then
        local v = tonumber(c .. two .. third, 8)
        if v > 255 then fail(string.format("octal escape value \\%s%s%s outside of range 0-0o377", c, two, third), j - 1) end
        lit[#lit + 1] = utf8.char(v)
        i = i + 2
      else
        if two then i = i + 1 end
        addgroup(tonumber(c .. (two or "")), j)
      end
    elseif template_escapes[c] then lit[#lit + 1] = template_escapes[c]
    elseif c:find("%a") then fail("bad escape \\" .. c, j - 1)
    else lit[#lit + 1] = "\\" .. c end
  end
  flush()
  return items
end

local function template(P, t)
  local items = P._templates[t]
  if not items then
    items = t:find("\\", 1, true) and parse_template(P, t) or { t }
    P._templates[t] = items
  end
  return items
end

local function expand(items, s, ov, out)
  for _, item in ipairs(items) do
    if type(item) == "string" then out[#out + 1] = item
    elseif ov[2 * item + 1] >= 0 then out[#out + 1] = s:sub(ov[2 * item + 1] + 1, ov[2 * item + 2]) end
  end
  return out
end

function Match:expand(t)
  return table.concat(expand(template(self.re, check_string(t)), self.string, self._ov, {}))
end

-- ---- Pattern ----

local SEARCH, MATCH, FULLMATCH, NOT_EMPTY_AT_START = 0, 1, 2, 4

local function matcher(mode)
  return function(P, s, ...)
    local pos, endpos = bounds(check_string(s), options("search", { { "pos" }, { "endpos" } }, ...))
    local ov = P._code:exec(s, pos, endpos, mode)
    return ov and new_match(P, s, pos, endpos, ov) or nil
  end
end
Pattern.search, Pattern.match, Pattern.fullmatch = matcher(SEARCH), matcher(MATCH), matcher(FULLMATCH)

-- calls each(ov) for the matches of P in s[pos:endpos] as Python finds them (after an empty
-- match, the next may not be empty at the same place), at most count (0: all); returns the count
local function scan(P, s, pos, endpos, count, each)
  local n, mode, code = 0, SEARCH, P._code
  while count == 0 or n < count do
    local ov = code:exec(s, pos, endpos, mode)
    if not ov then break end
    n = n + 1
    each(ov)
    mode = ov[1] == ov[2] and NOT_EMPTY_AT_START or SEARCH
    pos = ov[2]
  end
  return n
end

function Pattern:split(s, ...)
  local maxsplit = options("split", { { "maxsplit" } }, ...) or 0
  check_string(s)
  local out, last = {}, 0
  scan(self, s, 0, #s, maxsplit, function(ov)
    out[#out + 1] = s:sub(last + 1, ov[1])
    for k = 1, self.groups do
      out[#out + 1] = ov[2 * k + 1] >= 0 and s:sub(ov[2 * k + 1] + 1, ov[2 * k + 2]) or false
    end
    last = ov[2]
  end)
  out[#out + 1] = s:sub(last + 1)
  return out
end

-- strings, or tuples (lists) of the groups when there are several; "" for an unmatched group
function Pattern:findall(s, ...)
  local pos, endpos = bounds(check_string(s), options("findall", { { "pos" }, { "endpos" } }, ...))
  local out, groups = {}, self.groups
  local function text(ov, k) return ov[2 * k + 1] >= 0 and s:sub(ov[2 * k + 1] + 1, ov[2 * k + 2]) or "" end
  scan(self, s, pos, endpos, 0, function(ov)
    if groups <= 1 then out[#out + 1] = text(ov, groups)
    else
      local t = {}
      for k = 1, groups do t[k] = text(ov, k) end
      out[#out + 1] = t
    end
  end)
  return out
end

-- a Lua iterator over the Match objects: for m in p:finditer(s) do
function Pattern:finditer(s, ...)
  local pos, endpos = bounds(check_string(s), options("finditer", { { "pos" }, { "endpos" } }, ...))
  local at, mode, code, done = pos, SEARCH, self._code, false
  return function()
    if done then return nil end
    local ov = code:exec(s, at, endpos, mode)
    if not ov then done = true; return nil end
    mode = ov[1] == ov[2] and NOT_EMPTY_AT_START or SEARCH
    at = ov[2]
    return new_match(self, s, pos, endpos, ov)
  end
end

local function is_callable(v)
  if type(v) == "function" then return true end
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__call ~= nil
end

function Pattern:subn(repl, s, ...)
  local count = options("sub", { { "count" } }, ...) or 0
  check_string(s)
  local items = not is_callable(repl) and template(self, check_string(repl))
  local out, last = {}, 0
  local n = scan(self, s, 0, #s, count, function(ov)
    if last < ov[1] then out[#out + 1] = s:sub(last + 1, ov[1]) end
    if items then expand(items, s, ov, out)
    else
      local r = repl(new_match(self, s, 0, #s, ov))
      if r ~= nil and type(r) ~= "string" then -- Python's join message, with the item's place in its list
        U.errorf("TypeError: sequence item %d: expected str instance, %s found", #out, U.typename(r))
      end
      out[#out + 1] = r
    end
    last = ov[2]
  end)
  out[#out + 1] = s:sub(last + 1)
  return table.concat(out), n
end

function Pattern:sub(repl, s, ...) return (self:subn(repl, s, ...)) end

pattern_mt.__tostring = function(P)
  local names = {}
  local flags = P.flags & M.ASCII == 0 and P.flags & ~M.UNICODE or P.flags
  for _, f in ipairs(flag_names) do
    if flags & f[1] ~= 0 then names[#names + 1] = "re." .. f[2] end
  end
  local text = str_repr(P.pattern:sub(1, 200))
  return #names > 0 and string.format("re.compile(%s, %s)", text, table.concat(names, "|")) or string.format("re.compile(%s)", text)
end

-- ---- the module functions ----

function M.compile(pattern, ...) return compile(pattern, options("compile", { { "flags" } }, ...) or 0) end

for _, name in ipairs({ "search", "match", "fullmatch", "findall", "finditer" }) do
  M[name] = function(pattern, s, ...)
    return Pattern[name](compile(pattern, options(name, { { "flags" } }, ...) or 0), s)
  end
end

function M.split(pattern, s, ...)
  local maxsplit, flags = options("split", { { "maxsplit" }, { "flags" } }, ...)
  return compile(pattern, flags or 0):split(s, maxsplit or 0)
end

function M.subn(pattern, repl, s, ...)
  local count, flags = options("subn", { { "count" }, { "flags" } }, ...)
  return compile(pattern, flags or 0):subn(repl, s, count or 0)
end

function M.sub(pattern, repl, s, ...) return (M.subn(pattern, repl, s, ...)) end

-- Python 3.7's set of special characters, each behind a backslash
function M.escape(s)
  return (check_string(s):gsub("[()%[%]{}?*+%-|^$\\.&~# \t\n\r\v\f]", "\\%0"))
end

return M
