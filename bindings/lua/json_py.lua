-- Python's json module on the json table (json.lua calls this file's function with it):
--   json.loads(s, {object_hook=, object_pairs_hook=, parse_float=, parse_int=, parse_constant=, strict=})
--   json.dumps(obj, {indent=, separators=, sort_keys=, ensure_ascii=, allow_nan=, default=,
--                    skipkeys=, check_circular=})
--   json.load(file_or_path, {...}), json.dump(obj, file_or_path, {...}), json.JSONDecodeError,
--   json.null, json.array(t).
-- Values: JSON null is json.null (Lua tables cannot hold nil); an array is a Lua sequence (keys
-- 1..n only), any other table an object; {} is an empty object unless marked json.array({})
-- (loads marks the empty arrays it returns, so they round-trip). Lua tables keep no insertion
-- order, so objects are always written with sorted keys (numbers, then booleans, then strings);
-- sort_keys=true changes nothing. Integers and floats are Lua's two number subtypes, as
-- Python's int and float. Text is UTF-8; positions in errors count characters, as Python's.
local U = require "nn_util"

local null = setmetatable({}, { __name = "json.null", __tostring = function() return "null" end })
local arrays = setmetatable({}, { __mode = "k" }) -- tables marked by json.array

local function is_tensor(v)
  local torch = package.loaded.torch
  return torch ~= nil and torch.is_tensor(v)
end

-- ---- encoding ----

local short_escapes = { ['"'] = '\\"', ['\\'] = '\\\\', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t',
  ['\b'] = '\\b', ['\f'] = '\\f' }

local function ascii_escape(c)
  return short_escapes[c] or string.format("\\u%04x", c:byte())
end

-- a code point as \uXXXX, two of them (a surrogate pair) above U+FFFF
local function unicode_escape(ch)
  local cp = utf8.codepoint(ch, 1, 1, true)
  if cp < 0x10000 then return string.format("\\u%04x", cp) end
  cp = cp - 0x10000
  return string.format("\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF))
end

local function encode_string(s, ensure_ascii)
  local ok, bad = utf8.len(s, 1, -1, true)
  if not ok then
    U.errorf("UnicodeDecodeError: json.dumps takes UTF-8 text; this string has an invalid byte at position %d", bad)
  end
  if ensure_ascii then
    s = s:gsub('[%z\1-\31"\\\127]', ascii_escape):gsub("[\192-\253][\128-\191]*", unicode_escape)
  else
    s = s:gsub('[%z\1-\31"\\]', ascii_escape)
  end
  return '"' .. s .. '"'
end

local function float_text(x, allow_nan)
  local special = x ~= x and "NaN" or x == math.huge and "Infinity" or x == -math.huge and "-Infinity"
  if not special then return U.pyfloat(x) end
  if not allow_nan then
    U.errorf("ValueError: Out of range float values are not JSON compliant: %s", U.pyfloat(x))
  end
  return special
end

-- keys 1..n only, n > 0
local function is_sequence(t)
  local n, max = 0, 0
  for k in next, t do
    if math.type(k) ~= "integer" or k < 1 then return false end
    n, max = n + 1, math.max(max, k)
  end
  return n > 0 and max == n
end

-- the order of an object's keys: json.null, numbers, booleans, strings
local function key_rank(k)
  if k == null then return 0 end
  return ({ number = 1, boolean = 2, string = 3 })[type(k)]
end
local function key_less(a, b)
  local ra, rb = key_rank(a), key_rank(b)
  if ra ~= rb then return ra < rb end
  if ra == 2 then return not a and b end
  return ra ~= 0 and a < b
end

-- Python's class name of a value json cannot write
local function type_name(v)
  if is_tensor(v) then return "Tensor" end
  if type(v) == "table" and v.__name then return tostring(v.__name) end
  return U.typename(v)
end

local function make_encoder(o)
  local indent = o.indent
  if math.type(indent) == "integer" then indent = string.rep(" ", math.max(indent, 0)) end
  if indent ~= nil and type(indent) ~= "string" then
    U.errorf("TypeError: json.dumps: indent must be an int or a str, not %s", U.typename(indent))
  end
  local item_sep, key_sep = indent and "," or ", ", ": "
  if o.separators ~= nil then
    local s = o.separators
    if type(s) ~= "table" or type(s[1]) ~= "string" or type(s[2]) ~= "string" or s[3] ~= nil then
      U.error("TypeError: json.dumps: separators must be a list of two strings, {item_separator, key_separator}")
    end
    item_sep, key_sep = s[1], s[2]
  end
  local ensure_ascii, allow_nan, default = o.ensure_ascii, o.allow_nan, o.default
  local open = {} -- containers being written, for the circular check

  local function key_text(k)
    local t = type(k)
    if t == "string" then return encode_string(k, ensure_ascii) end
    local s
    if math.type(k) == "integer" then s = tostring(k)
    elseif t == "number" then s = float_text(k, allow_nan)
    elseif t == "boolean" then s = tostring(k)
    elseif k == null then s = "null"
    elseif o.skipkeys then return nil
    else U.errorf("TypeError: keys must be str, int, float, bool or None, not %s", type_name(k)) end
    return '"' .. s .. '"'
  end

  local encode
  local function container(v, level, as_array)
    if o.check_circular then
      if open[v] then U.error("ValueError: Circular reference detected") end
      open[v] = true
    end
    local items = {}
    if as_array then
      for i = 1, #v do items[i] = encode(v[i], level + 1) end
    else
      local keys = {}
      for k in next, v do
        if key_rank(k) then keys[#keys + 1] = k
        elseif not o.skipkeys then key_text(k) end -- raises
      end
      table.sort(keys, key_less)
      for _, k in ipairs(keys) do
        items[#items + 1] = key_text(k) .. key_sep .. encode(v[k], level + 1)
      end
    end
    open[v] = nil
    local l, r = as_array and "[" or "{", as_array and "]" or "}"
    if #items == 0 then return l .. r end
    if not indent then return l .. table.concat(items, item_sep) .. r end
    local inner = "\n" .. string.rep(indent, level + 1)
    return l .. inner .. table.concat(items, item_sep .. inner) .. "\n" .. string.rep(indent, level) .. r
  end

  function encode(v, level)
    local t = type(v)
    if v == nil or v == null then return "null" end
    if t == "boolean" then return tostring(v) end
    if math.type(v) == "integer" then return tostring(v) end
    if t == "number" then return float_text(v, allow_nan) end
    if t == "string" then return encode_string(v, ensure_ascii) end
    local mt = getmetatable(v)
    if mt and mt.__name == "torch.Size" then return container(v:totable(), level, true) end
    if t == "table" and not is_tensor(v) then
      if v.__class == nil and (mt == nil or mt.__name == nil) then
        return container(v, level, arrays[v] or is_sequence(v))
      end
    end
    if default == nil then U.errorf("TypeError: Object of type %s is not JSON serializable", type_name(v)) end
    if o.check_circular then
      if open[v] then U.error("ValueError: Circular reference detected") end
      open[v] = true
    end
    local s = encode(default(v), level)
    open[v] = nil
    return s
  end
  return encode
end

-- (the leading "obj" only numbers the keyword table as argument #2 in errors)
local DUMPS = { { "obj", nil }, { "skipkeys", false }, { "ensure_ascii", true }, { "check_circular", true }, { "allow_nan", true },
  { "indent", nil }, { "separators", nil }, { "default", nil }, { "sort_keys", false } }

local function dumps(obj, ...)
  return make_encoder(U.parse("dumps", DUMPS, true, ...))(obj, 0)
end

-- ---- decoding ----

local function decode_error(text, msg, pos) -- pos: the 0-based byte offset
  local lineno = select(2, text:sub(1, pos):gsub("\n", "")) + 1
  local line_start = (text:sub(1, pos):match(".*\n()") or 1)
  local function chars(i, j) return j < i and 0 or (utf8.len(text, i, j, true) or j - i + 1) end
  U.errorf("JSONDecodeError: %s: line %d column %d (char %d)", msg, lineno, chars(line_start, pos) + 1, chars(1, pos))
end

local escapes = { ['"'] = '"', ['\\'] = '\\', ['/'] = '/', b = '\b', f = '\f', n = '\n', r = '\r', t = '\t' }
-- NaN is a positive nan, as Python's float("nan") (0 / 0 has the sign bit set)
local constants = { NaN = -(0 / 0), Infinity = math.huge, ["-Infinity"] = -math.huge }

-- Python's scanner, positions as its C version reports them (1-based byte indices inside).
local function make_decoder(text, o)
  local len = #text
  local function fail(msg, i) decode_error(text, msg, i - 1) end
  local function ws(i) return select(2, text:find("^[ \t\n\r]*", i)) + 1 end
  local special = o.strict and '["\\%z\1-\31]' or '["\\]'

  local function scan_string(i) -- i: just past the opening quote
    local begin, out = i - 1, {}
    while true do
      local a = text:find(special, i)
      if not a then fail("Unterminated string starting at", begin) end
      out[#out + 1] = text:sub(i, a - 1)
      local c = text:sub(a, a)
      if c == '"' then return table.concat(out), a + 1 end
      if c ~= "\\" then fail("Invalid control character at", a) end
      local e = text:sub(a + 1, a + 1)
      if e == "" then fail("Unterminated string starting at", begin) end
      if e ~= "u" then
        if not escapes[e] then fail("Invalid \\escape", a) end
        out[#out + 1] = escapes[e]
        i = a + 2
      else
        local hex = text:match("^%x%x%x%x", a + 2)
        if a + 5 >= len or not hex then fail("Invalid \\uXXXX escape", a + 1) end
        local cp = tonumber(hex, 16)
        i = a + 6
        if cp >= 0xD800 and cp <= 0xDBFF and a + 11 < len and text:sub(i, i + 1) == "\\u" then
          local hex2 = text:match("^%x%x%x%x", i + 2)
          if not hex2 then fail("Invalid \\uXXXX escape", i + 1) end
          local lo = tonumber(hex2, 16)
          if lo >= 0xDC00 and lo <= 0xDFFF then
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
            i = i + 6
          end
        end
        out[#out + 1] = utf8.char(cp)
      end
    end
  end

  local function scan_number(i)
    local _, e = text:find("^-?0", i)
    if not e then _, e = text:find("^-?[1-9]%d*", i) end
    if not e then return nil end
    local int_end = e
    e = select(2, text:find("^%.%d+", e + 1)) or e
    e = select(2, text:find("^[eE][-+]?%d+", e + 1)) or e
    local s = text:sub(i, e)
    if e == int_end then
      if o.parse_int then return o.parse_int(s), e + 1 end
      return tonumber(s), e + 1 -- past 64 bits, a float (Python's int has no limit)
    end
    if o.parse_float then return o.parse_float(s), e + 1 end
    return tonumber(s), e + 1
  end

  local scan_value
  -- the items of an object or array up to its closing character: item(i) reads one and returns
  -- the index past it; the result is the index past the closing character
  local function items(i, close, what, item)
    i = ws(i)
    if text:sub(i, i) == close then return i + 1 end
    while true do
      i = ws(item(i))
      local c = text:sub(i, i)
      if c == close then return i + 1 end
      if c ~= "," then fail("Expecting ',' delimiter", i) end
      local comma = i
      i = ws(i + 1)
      if text:sub(i, i) == close then fail("Illegal trailing comma before end of " .. what, comma) end
    end
  end

  local function parse_object(i)
    local d, pairs_ = {}, o.object_pairs_hook and {}
    i = items(i, "}", "object", function(j)
      if text:sub(j, j) ~= '"' then fail("Expecting property name enclosed in double quotes", j) end
      local k, v
      k, j = scan_string(j + 1)
      j = ws(j)
      if text:sub(j, j) ~= ":" then fail("Expecting ':' delimiter", j) end
      v, j = scan_value(ws(j + 1))
      if pairs_ then pairs_[#pairs_ + 1] = { k, v } else d[k] = v end
      return j
    end)
    if pairs_ then return o.object_pairs_hook(pairs_), i end
    if o.object_hook then return o.object_hook(d), i end
    return d, i
  end

  local function parse_array(i)
    local a = {}
    i = items(i, "]", "array", function(j)
      local v
      v, j = scan_value(j)
      a[#a + 1] = v
      return j
    end)
    if #a == 0 then arrays[a] = true end
    return a, i
  end

  local words = { n = "null", t = "true", f = "false", N = "NaN", I = "Infinity", ["-"] = "-Infinity" }
  local word_values = { null = null, ["true"] = true, ["false"] = false }
  function scan_value(i)
    local c = text:sub(i, i)
    if c == '"' then return scan_string(i + 1) end
    if c == "{" then return parse_object(i + 1) end
    if c == "[" then return parse_array(i + 1) end
    local w = words[c]
    if w and text:sub(i, i + #w - 1) == w then
      if word_values[w] ~= nil then return word_values[w], i + #w end
      if o.parse_constant then return o.parse_constant(w), i + #w end
      return constants[w], i + #w
    end
    local v, e = scan_number(i)
    if e then return v, e end
    fail("Expecting value", i)
  end

  return function()
    if text:sub(1, 3) == "\239\187\191" then fail("Unexpected UTF-8 BOM (decode using utf-8-sig)", 1) end
    local v, i = scan_value(ws(1))
    i = ws(i)
    if i <= len then fail("Extra data", i) end
    return v
  end
end

local LOADS = { { "s", nil }, { "object_hook", nil }, { "parse_float", nil }, { "parse_int", nil }, { "parse_constant", nil },
  { "object_pairs_hook", nil }, { "strict", true } }

local function loads(s, ...)
  if type(s) ~= "string" then
    U.errorf("TypeError: the JSON object must be str, bytes or bytearray, not %s", U.typename(s))
  end
  return make_decoder(s, U.parse("loads", LOADS, true, ...))()
end

-- ---- files ----

local function read_all(fp)
  if type(fp) == "string" then
    local f, err = io.open(fp, "rb")
    if not f then U.errorf("FileNotFoundError: %s", err) end
    local s = f:read("a")
    f:close()
    return s
  end
  if io.type(fp) == "file" then return fp:read("a") end
  if type(fp) == "table" and fp.read then return fp:read() end
  U.errorf("TypeError: json.load: expected a file or a path, got %s", U.typename(fp))
end

local function write_all(fp, s)
  if type(fp) == "string" then
    local f, err = io.open(fp, "wb")
    if not f then U.errorf("FileNotFoundError: %s", err) end
    f:write(s)
    f:close()
  elseif io.type(fp) == "file" or (type(fp) == "table" and fp.write) then
    fp:write(s)
  else
    U.errorf("TypeError: json.dump: expected a file or a path, got %s", U.typename(fp))
  end
end

return function(M)
  M.null = null
  function M.array(t)
    t = t or {}
    if type(t) ~= "table" then U.errorf("TypeError: json.array takes a table, got %s", U.typename(t)) end
    arrays[t] = true
    return t
  end
  M.dumps, M.loads = dumps, loads
  function M.load(fp, ...) return loads(read_all(fp), ...) end
  function M.dump(obj, fp, ...) write_all(fp, dumps(obj, ...)) end
  M.JSONDecodeError = require("torch_errors").class("json.JSONDecodeError",
    { "JSONDecodeError: .-: line %d+ column %d+ %(char %d+%)" })
  M.decoder = { JSONDecodeError = M.JSONDecodeError }
end
