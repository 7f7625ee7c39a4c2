-- Python's str methods on Lua strings: added to the string table at startup (torch_os.lua
-- requires this file), so `line:strip():split("\t")` works in every script. Lua's own string
-- functions (find, format, len, lower, upper, rep, sub, gsub, match, gmatch, byte, char,
-- reverse, pack, unpack) are not touched. Semantics are Python 3.11's on UTF-8 text, with:
--   * positions in BYTES, 0-based: index, rindex, rfind and the start/end arguments of count,
--     index, rindex, rfind, startswith, endswith (Python's count code points);
--   * widths in characters (code points), as Python's: center, ljust, rjust, zfill, expandtabs;
--   * a tuple is several return values: local head, sep, tail = s:partition(":");
--     a list is a Lua table: s:split(",") -> {"a", "b"}; (","):join(list);
--   * None is nil: s:split(nil, 1) splits on whitespace once.
-- The Unicode-aware parts (whitespace beyond ASCII, casefold, title, capitalize, swapcase and
-- the is* tests) go through bindings/pystr.c (utf8proc); text that is not valid UTF-8 raises
-- there. Errors are Python's text. string.ascii_letters, digits, ... are Python's string module.
local U = require "nn_util"
local C = require "_pystr"

local S = string
local find, sub, byte = string.find, string.sub, string.byte

-- Python's ASCII whitespace (str.isspace on ASCII): \t \n \v \f \r \x1c-\x1f and space
local WS = "[\t\n\v\f\r\28-\32]"
local NOT_WS = "[^\t\n\v\f\r\28-\32]"

local function is_ascii(s) return not find(s, "[\128-\255]") end

local function str_arg(v, fn, what)
  if type(v) ~= "string" then U.error(("%s() argument %s must be str, not %s"):format(fn, what or "1", type(v))) end
  return v
end

local function self_str(s, fn)
  if type(s) ~= "string" then U.error(("descriptor '%s' requires a 'str' object but received a '%s'"):format(fn, type(s))) end
end

local function int_arg(v, fn, default)
  if v == nil then return default end
  if math.type(v) ~= "integer" then
    if math.type(v) == "float" and v == math.floor(v) then return math.tointeger(v) end
    U.error(("'%s' object cannot be interpreted as an integer"):format(math.type(v) or type(v)))
  end
  return v
end

-- Python's ADJUST_INDICES: start/end of a slice of length n (0-based, end exclusive)
local function adjust(n, i, j)
  i, j = i or 0, j or n
  if j > n then j = n elseif j < 0 then j = j + n; if j < 0 then j = 0 end end
  if i < 0 then i = i + n; if i < 0 then i = 0 end end
  return i, j
end

local function slice_args(fn, s, start, stop)
  start = int_arg(start, fn, nil)
  stop = int_arg(stop, fn, nil)
  return adjust(#s, start, stop)
end

-- characters (code points) in s; bytes when s is not UTF-8
local function char_len(s) return utf8.len(s) or #s end

-- ---- strip ----

local function chars_set(chars, fn)
  if type(chars) ~= "string" then U.error(fn .. " arg must be None or str") end
  local set = {}
  if is_ascii(chars) then
    for k = 1, #chars do set[byte(chars, k)] = true end
    return set, true
  end
  if not utf8.len(chars) then U.error(fn .. "(): the characters are not valid UTF-8") end
  for _, cp in utf8.codes(chars) do set[cp] = true end
  return set, false
end

local function strip_chars(s, chars, left, right, fn)
  local set, bytewise = chars_set(chars, fn)
  if bytewise then
    local i, j = 1, #s
    if left then while i <= j and set[byte(s, i)] do i = i + 1 end end
    if right then while j >= i and set[byte(s, j)] do j = j - 1 end end
    return sub(s, i, j)
  end
  if not utf8.len(s) then U.error(fn .. "(): the string is not valid UTF-8") end
  local starts, cps = {}, {}
  for p, cp in utf8.codes(s) do starts[#starts + 1] = p; cps[#cps + 1] = cp end
  local i, j = 1, #cps
  if left then while i <= j and set[cps[i]] do i = i + 1 end end
  if right then while j >= i and set[cps[j]] do j = j - 1 end end
  if i > j then return "" end
  return sub(s, starts[i], (starts[j + 1] or #s + 1) - 1)
end

local function strip_ws(s, left, right)
  if is_ascii(s) then
    local i, j = 1, #s
    if left then i = find(s, NOT_WS) or #s + 1 end
    if right then while j >= i and find(sub(s, j, j), WS) do j = j - 1 end end
    return sub(s, i, j)
  end
  return C.ws_strip(s, left, right)
end

local function stripper(fn, left, right)
  return function(s, chars)
    self_str(s, fn)
    if chars == nil then return strip_ws(s, left, right) end
    return strip_chars(s, chars, left, right, fn)
  end
end
S.strip = stripper("strip", true, true)
S.lstrip = stripper("lstrip", true, false)
S.rstrip = stripper("rstrip", false, true)

-- ---- split, rsplit, splitlines, partition ----

local function sep_arg(sep)
  if type(sep) ~= "string" then U.error(("must be str or None, not %s"):format(type(sep))) end
  if sep == "" then U.error("empty separator") end
  return sep
end

-- split on a literal separator, at most maxsplit times (all when negative)
local function split_sep(s, sep, maxsplit)
  local out, pos, n = {}, 1, 0
  while maxsplit < 0 or n < maxsplit do
    local a, b = find(s, sep, pos, true)
    if not a then break end
    out[#out + 1] = sub(s, pos, a - 1)
    pos, n = b + 1, n + 1
  end
  out[#out + 1] = sub(s, pos)
  return out
end

function S.split(s, sep, maxsplit)
  self_str(s, "split")
  maxsplit = int_arg(maxsplit, "split", -1)
  if sep == nil then
    if maxsplit < 0 and is_ascii(s) then
      local out = {}
      for w in s:gmatch(NOT_WS .. "+") do out[#out + 1] = w end
      return out
    end
    return C.ws_split(s, maxsplit, false)
  end
  return split_sep(s, sep_arg(sep), maxsplit)
end

-- rsplit: the split of the reversed bytes on the reversed separator, read back to front
function S.rsplit(s, sep, maxsplit)
  self_str(s, "rsplit")
  maxsplit = int_arg(maxsplit, "rsplit", -1)
  if sep == nil then return C.ws_split(s, maxsplit, true) end
  local rev = split_sep(s:reverse(), sep_arg(sep):reverse(), maxsplit)
  local out = {}
  for k = #rev, 1, -1 do out[#out + 1] = rev[k]:reverse() end
  return out
end

-- Python's line boundaries: \n \r \r\n \v \f \x1c \x1d \x1e U+0085 U+2028 U+2029
function S.splitlines(s, keepends)
  self_str(s, "splitlines")
  local out, pos, n = {}, 1, #s
  local i = 1
  while i <= n do
    local a = find(s, "[\n\r\v\f\28\29\30\194\226]", i)
    if not a then break end
    local c, len = byte(s, a), 0
    if c == 13 then len = byte(s, a + 1) == 10 and 2 or 1
    elseif c == 194 then len = byte(s, a + 1) == 0x85 and 2 or 0
    elseif c == 226 then len = (byte(s, a + 1) == 0x80 and (byte(s, a + 2) == 0xA8 or byte(s, a + 2) == 0xA9)) and 3 or 0
    else len = 1 end
    if len > 0 then
      out[#out + 1] = sub(s, pos, keepends and a + len - 1 or a - 1)
      pos = a + len
      i = pos
    else
      i = a + 1
    end
  end
  if pos <= n then out[#out + 1] = sub(s, pos) end
  return out
end

function S.partition(s, sep)
  self_str(s, "partition")
  sep = sep_arg(sep)
  local a, b = find(s, sep, 1, true)
  if not a then return s, "", "" end
  return sub(s, 1, a - 1), sep, sub(s, b + 1)
end

-- the 0-based byte position of the last x in s[i:j], or nil
local function last_index(s, x, i, j)
  if j - i < #x then return nil end
  local piece = sub(s, i + 1, j)
  local r = find(piece:reverse(), x:reverse(), 1, true)
  if not r then return nil end
  return i + #piece - r - #x + 1
end

function S.rpartition(s, sep)
  self_str(s, "rpartition")
  sep = sep_arg(sep)
  local at = last_index(s, sep, 0, #s)
  if not at then return "", "", s end
  return sub(s, 1, at), sep, sub(s, at + #sep + 1)
end

-- ---- find-like: count, index, rindex, rfind, startswith, endswith ----

local function first_index(s, x, i, j)
  if j - i < #x then return nil end
  local a = find(sub(s, 1, j), x, i + 1, true)
  return a and a - 1 or nil
end

function S.count(s, x, start, stop)
  self_str(s, "count")
  str_arg(x, "count")
  local i, j = slice_args("count", s, start, stop)
  if j - i < #x then return 0 end
  local piece = sub(s, i + 1, j)
  if x == "" then return #piece + 1 end
  local n, pos = 0, 1
  while true do
    local _, b = find(piece, x, pos, true)
    if not b then return n end
    n, pos = n + 1, b + 1
  end
end

-- index / rindex: the first / last position, ValueError when absent
local function indexer(fn, locate)
  return function(s, x, start, stop)
    self_str(s, fn)
    str_arg(x, fn)
    local at = locate(s, x, slice_args(fn, s, start, stop))
    if not at then U.error("substring not found") end
    return at
  end
end
S.index = indexer("index", first_index)
S.rindex = indexer("rindex", last_index)

function S.rfind(s, x, start, stop)
  self_str(s, "rfind")
  str_arg(x, "rfind")
  return last_index(s, x, slice_args("rfind", s, start, stop)) or -1
end

-- Python's tailmatch: x at the start (or end) of s[i:j]
local function tailmatch(s, x, i, j, at_end)
  j = j - #x
  if j < i then return false end
  if #x == 0 then return true end
  local from = at_end and j or i
  return sub(s, from + 1, from + #x) == x
end

local function affix_test(fn, at_end)
  return function(s, x, start, stop)
    self_str(s, fn)
    local i, j = slice_args(fn, s, start, stop)
    if type(x) == "string" then return tailmatch(s, x, i, j, at_end) end
    if type(x) ~= "table" then
      U.error(("%s first arg must be str or a tuple of str, not %s"):format(fn, type(x)))
    end
    for k = 1, #x do
      if type(x[k]) ~= "string" then
        U.error(("tuple for %s must only contain str, not %s"):format(fn, type(x[k])))
      end
      if tailmatch(s, x[k], i, j, at_end) then return true end
    end
    return false
  end
end
S.startswith = affix_test("startswith", false)
S.endswith = affix_test("endswith", true)

-- ---- join, replace, removeprefix, removesuffix ----

function S.join(s, list)
  self_str(s, "join")
  if type(list) ~= "table" then U.error("can only join an iterable") end
  for k = 1, #list do
    if type(list[k]) ~= "string" then
      U.error(("sequence item %d: expected str instance, %s found"):format(k - 1, type(list[k])))
    end
  end
  return table.concat(list, s)
end

function S.replace(s, old, new, count)
  self_str(s, "replace")
  str_arg(old, "replace", "1")
  str_arg(new, "replace", "2")
  count = int_arg(count, "replace", -1)
  if count < 0 then count = math.maxinteger end
  local out, n = {}, 0
  if old == "" then -- new before every character and at the end
    local chars = {}
    if utf8.len(s) then
      for _, cp in utf8.codes(s) do chars[#chars + 1] = utf8.char(cp) end
    else
      for k = 1, #s do chars[k] = sub(s, k, k) end
    end
    for k = 1, #chars + 1 do
      if n < count then out[#out + 1] = new; n = n + 1 end
      out[#out + 1] = chars[k]
    end
    return table.concat(out)
  end
  local pos = 1
  while n < count do
    local a, b = find(s, old, pos, true)
    if not a then break end
    out[#out + 1] = sub(s, pos, a - 1)
    out[#out + 1] = new
    pos, n = b + 1, n + 1
  end
  out[#out + 1] = sub(s, pos)
  return table.concat(out)
end

function S.removeprefix(s, prefix)
  self_str(s, "removeprefix")
  str_arg(prefix, "removeprefix")
  if prefix ~= "" and sub(s, 1, #prefix) == prefix then return sub(s, #prefix + 1) end
  return s
end

function S.removesuffix(s, suffix)
  self_str(s, "removesuffix")
  str_arg(suffix, "removesuffix")
  if suffix ~= "" and #suffix <= #s and sub(s, -#suffix) == suffix then return sub(s, 1, #s - #suffix) end
  return s
end

-- ---- padding: zfill, center, ljust, rjust, expandtabs (widths in characters) ----

function S.zfill(s, width)
  self_str(s, "zfill")
  width = int_arg(width, "zfill")
  local fill = width - char_len(s)
  if fill <= 0 then return s end
  local c = sub(s, 1, 1)
  if c == "+" or c == "-" then return c .. ("0"):rep(fill) .. sub(s, 2) end
  return ("0"):rep(fill) .. s
end

local function fill_arg(fillchar, fn)
  if fillchar == nil then return " " end
  if type(fillchar) ~= "string" then
    U.error(("%s() argument 2 must be str, not %s"):format(fn, type(fillchar)))
  end
  if utf8.len(fillchar) ~= 1 then U.error("The fill character must be exactly one character long") end
  return fillchar
end

local function padder(fn, where)
  return function(s, width, fillchar)
    self_str(s, fn)
    width = int_arg(width, fn)
    fillchar = fill_arg(fillchar, fn)
    local marg = width - char_len(s)
    if marg <= 0 then return s end
    local left
    if where == "left" then left = 0 -- ljust: the text on the left
    elseif where == "right" then left = marg
    else left = marg // 2 + (marg & width & 1) end
    return fillchar:rep(left) .. s .. fillchar:rep(marg - left)
  end
end
S.center = padder("center", "center")
S.ljust = padder("ljust", "left")
S.rjust = padder("rjust", "right")

function S.expandtabs(s, tabsize)
  self_str(s, "expandtabs")
  tabsize = int_arg(tabsize, "expandtabs", 8)
  local out, col = {}, 0
  for k = 1, #s do
    local c = byte(s, k)
    if c == 9 then
      if tabsize > 0 then
        local n = tabsize - col % tabsize
        out[#out + 1] = (" "):rep(n)
        col = col + n
      end
    else
      out[#out + 1] = sub(s, k, k)
      if c == 10 or c == 13 then col = 0
      elseif c < 0x80 or c >= 0xC0 then col = col + 1 end -- not a UTF-8 continuation byte
    end
  end
  return table.concat(out)
end

-- ---- case: casefold, capitalize, title, swapcase (Unicode through _pystr) ----

function S.casefold(s)
  self_str(s, "casefold")
  if is_ascii(s) then return (s:gsub("[A-Z]", S.lower)) end
  return C.casemap(s, "casefold")
end

function S.swapcase(s)
  self_str(s, "swapcase")
  if is_ascii(s) then
    return (s:gsub("[A-Za-z]", function(c) return c:find("[a-z]") and c:upper() or c:lower() end))
  end
  return C.casemap(s, "swapcase")
end

function S.title(s)
  self_str(s, "title")
  if is_ascii(s) then
    return (s:gsub("[A-Za-z]+", function(w) return sub(w, 1, 1):upper() .. sub(w, 2):lower() end))
  end
  return C.casemap(s, "title")
end

function S.capitalize(s)
  self_str(s, "capitalize")
  if is_ascii(s) then return sub(s, 1, 1):upper() .. sub(s, 2):lower() end
  return C.casemap(s, "capitalize")
end

-- ---- predicates ----

for _, name in ipairs({ "isalpha", "isdecimal", "isdigit", "isnumeric", "isalnum", "isspace", "isupper", "islower",
  "istitle", "isprintable", "isidentifier" }) do
  S[name] = function(s)
    self_str(s, name)
    return C.is(s, name)
  end
end

function S.isascii(s)
  self_str(s, "isascii")
  return is_ascii(s)
end

-- ---- Python's string module constants ----

S.ascii_lowercase = "abcdefghijklmnopqrstuvwxyz"
S.ascii_uppercase = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
S.ascii_letters = S.ascii_lowercase .. S.ascii_uppercase
S.digits = "0123456789"
S.hexdigits = "0123456789abcdefABCDEF"
S.octdigits = "01234567"
S.punctuation = [[!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~]]
S.whitespace = " \t\n\r\v\f"
S.printable = S.digits .. S.ascii_letters .. S.punctuation .. S.whitespace

return S
