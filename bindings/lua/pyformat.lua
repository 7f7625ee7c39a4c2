-- pyformat: Python's format mini-language (`local pf = require "pyformat"`):
--   pf.format(value, spec)             Python's builtin format(value, spec)
--   pf.str_format(fmt, ...)            fmt.format(...): {} {0} {name} {0.attr} {0[1]} {x!r} {x:{w}.{p}f} {{ }}
--   pf.f"{loss:.4f} [{i:>5d}/{n:>5d}]"  an f-string: names are the caller's locals, upvalues and globals
--   pf.f("{loss:.4f}", {loss = l})     ... or a table of names, looked up first
-- Values: Lua integers are Python ints, floats Python floats (repr for {}), booleans True/False, nil None,
-- a 0-dim tensor formats as its item() (as Tensor.__format__), other tensors as str(tensor) for an
-- empty spec. A plain Lua table is a list ("[1, 2]", indexed from 0 in {0[0]}) or a dict.
-- str_format keywords: a trailing table without [1] when fmt names a field ({name}).
-- f-string fields are Lua expressions ({acc * 100:.1f}, {x.shape[0]}); put a method call in
-- parentheses ({(x:mean()):.3f}), as ':' starts the spec. {x=} writes "x=" and repr(x).
local U = require "nn_util"

local M = {}

-- ---- values as Python writes them ----

local function is_tensor(v)
  local torch = package.loaded.torch
  return torch ~= nil and torch.is_tensor(v)
end

local escapes = { ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

-- repr of a str: single quotes unless it holds ' and no "
local function repr_str(s)
  local q = (s:find("'", 1, true) and not s:find('"', 1, true)) and '"' or "'"
  return q .. s:gsub("[%c\\'\"]", function(c)
    if c == q then return "\\" .. c end
    if c == "'" or c == '"' then return c end
    return escapes[c] or string.format("\\x%02x", c:byte())
  end) .. q
end

local pystr

local function pyrepr(v)
  if type(v) == "string" then return repr_str(v) end
  return pystr(v)
end

-- str(v): Lua sequences as lists, other plain tables as dicts (keys sorted)
function pystr(v)
  if type(v) ~= "table" or getmetatable(v) ~= nil then return U.pystr(v) end
  local n, parts = #v, {}
  local keys = {}
  for k in pairs(v) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
  end
  if #keys == 0 then
    for i = 1, n do parts[i] = pyrepr(v[i]) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  for i = 1, n do keys[#keys + 1] = i end
  table.sort(keys, function(a, b)
    if type(a) == type(b) then return a < b end
    return type(a) == "number"
  end)
  for i, k in ipairs(keys) do parts[i] = pyrepr(k) .. ": " .. pyrepr(v[k]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

M.str, M.repr = pystr, pyrepr

-- ---- the spec: [[fill]align][sign][z][#][0][width][grouping][.precision][type] ----

local function parse_spec(spec, tname)
  local s = {}
  local pos = 1
  local first = spec:match("^" .. utf8.charpattern)
  local after = first and spec:sub(#first + 1, #first + 1)
  if after and after ~= "" and after:find("^[<>=^]") then
    s.fill, s.align, pos = first, after, #first + 2
  elseif spec:find("^[<>=^]") then
    s.align, pos = spec:sub(1, 1), 2
  end
  local c = spec:sub(pos, pos)
  if c == "+" or c == "-" or c == " " then s.sign, pos = c, pos + 1 end
  if spec:sub(pos, pos) == "z" then s.z, pos = true, pos + 1 end
  if spec:sub(pos, pos) == "#" then s.alt, pos = true, pos + 1 end
  if spec:sub(pos, pos) == "0" then
    s.zero, pos = true, pos + 1
    s.fill = s.fill or "0"
    s.align_default = "="
  end
  local w = spec:match("^%d+", pos)
  if w then s.width, pos = tonumber(w), pos + #w end
  c = spec:sub(pos, pos)
  if c == "," or c == "_" then
    s.group, pos = c, pos + 1
    local c2 = spec:sub(pos, pos)
    if c2 == "," or c2 == "_" then
      if c2 == c then U.errorf("Cannot specify '%s' with '%s'.", c, c) end
      U.error("Cannot specify both ',' and '_'.")
    end
  end
  if spec:sub(pos, pos) == "." then
    local p = spec:match("^%d+", pos + 1)
    if not p then U.error("Format specifier missing precision") end
    s.precision, pos = tonumber(p), pos + 1 + #p
  end
  local rest = spec:sub(pos)
  if #rest > 1 then U.errorf("Invalid format specifier '%s' for object of type '%s'", spec, tname) end
  s.type = rest ~= "" and rest or nil
  return s
end

local function unknown(s, tname) U.errorf("Unknown format code '%s' for object of type '%s'", s.type, tname) end

-- digits grouped by sep every n from the right, zero-padded to at least minw characters
local function group(digits, sep, n, minw)
  local out, len, count, i = {}, 0, 0, #digits
  while true do
    local ch
    if i >= 1 then ch, i = digits:sub(i, i), i - 1
    elseif len < minw then ch = "0"
    else break end
    if sep and count == n then out[#out + 1], len, count = sep, len + 1, 0 end
    out[#out + 1], len, count = ch, len + 1, count + 1
  end
  return string.reverse(table.concat(out))
end

-- pads sign..prefix..body to the width: '=' puts the fill after the sign and prefix
local function pad(s, head, body, default_align)
  local align = s.align or s.align_default or default_align
  local n = (s.width or 0) - utf8.len(head .. body)
  if n <= 0 then return head .. body end
  local fill = s.fill or " "
  if align == "<" then return head .. body .. fill:rep(n) end
  if align == ">" then return fill:rep(n) .. head .. body end
  if align == "=" then return head .. fill:rep(n) .. body end
  local left = n // 2
  return fill:rep(left) .. head .. body .. fill:rep(n - left)
end

local function sign_of(s, negative)
  if negative then return "-" end
  if s.sign == "+" then return "+" end
  if s.sign == " " then return " " end
  return ""
end

-- body = integer digits .. rest; grouping and '0' padding apply to the integer digits
local function number(s, negative, prefix, int, rest, n)
  local head = sign_of(s, negative) .. prefix
  local minw = 0
  if (s.align or s.align_default) == "=" and s.fill == "0" then
    minw = (s.width or 0) - #head - #rest
  end
  local sep = s.group or nil
  local digits = group(int, sep, n or 3, minw)
  if minw > 0 then return head .. digits .. rest end
  return pad(s, head, digits .. rest, ">")
end

local function format_str(v, s)
  if s.sign then U.error("Sign not allowed in string format specifier") end
  if s.alt then U.error("Alternate form (#) not allowed in string format specifier") end
  if s.z then U.error("Negative zero coercion (z) not allowed in string format specifier") end
  if s.align == "=" then U.error("'=' alignment not allowed in string format specifier") end
  if s.type and s.type ~= "s" then unknown(s, "str") end
  if s.group then U.errorf("Cannot specify '%s' with 's'.", s.group) end
  if s.precision and utf8.len(v) > s.precision then v = v:sub(1, utf8.offset(v, s.precision + 1) - 1) end
  s.align_default = nil
  return pad(s, "", v, "<")
end

local format_float

local function format_int(v, s, tname)
  local t = s.type or "d"
  if t:find("^[eEfFgG%%]$") then return format_float(v + 0.0, s, tname) end
  if not t:find("^[bcdoxXn]$") then unknown(s, tname) end
  if s.precision then U.error("Precision not allowed in integer format specifier") end
  if s.z then U.error("Negative zero coercion (z) not allowed in integer format specifier") end
  if t == "n" and s.group then U.errorf("Cannot specify '%s' with 'n'.", s.group) end
  if t == "c" then
    if s.sign then U.error("Sign not allowed with integer format specifier 'c'") end
    if s.alt then U.error("Alternate form (#) not allowed with integer format specifier 'c'") end
    if s.group then U.errorf("Cannot specify '%s' with 'c'.", s.group) end
    if v < 0 or v >= 0x110000 then U.error("%c arg not in range(0x110000)") end
    return pad(s, "", utf8.char(v), ">")
  end
  if s.group == "," and t ~= "d" then U.errorf("Cannot specify ',' with '%s'.", t) end
  local negative = v < 0
  local mag -- the magnitude's digits; %x of math.mininteger reads it as unsigned, which is right
  if t == "d" or t == "n" then mag = tostring(v):gsub("^-", "")
  elseif t == "o" then mag = string.format("%o", negative and -v or v)
  elseif t == "b" then
    local u, bits = negative and -v or v, {}
    repeat bits[#bits + 1] = tostring(u & 1); u = u >> 1 until u == 0
    mag = string.reverse(table.concat(bits))
  else mag = string.format(t == "x" and "%x" or "%X", negative and -v or v) end
  local prefix = s.alt and t ~= "d" and t ~= "n" and ("0" .. t) or ""
  return number(s, negative, prefix, mag, "", (t == "d" or t == "n") and 3 or 4)
end

-- fixed/exponent text of a finite non-negative x for the types e f g (and "" with a precision)
local function float_text(x, t, p, alt)
  if t == "e" or t == "f" then return string.format("%" .. (alt and "#" or "") .. "." .. p .. t, x) end
  if p == 0 then p = 1 end
  local e = string.format("%." .. (p - 1) .. "e", x)
  local exp = tonumber(e:match("e([-+]%d+)$"))
  if t == "r" then -- no type: as g, but fixed keeps a digit after the point; exponent from p - 1
    if exp < -4 or exp >= p - 1 then
      local m, ex = e:match("^(.-)(e.*)$")
      if m:find("%.") then m = m:gsub("0+$", ""):gsub("%.$", "") end
      return m .. ex
    end
    local f = string.format("%." .. (p - 1 - exp) .. "f", x)
    if f:find("%.") then f = f:gsub("0+$", ""):gsub("%.$", ".0") else f = f .. ".0" end
    return f
  end
  return string.format("%" .. (alt and "#" or "") .. "." .. p .. "g", x)
end

function format_float(v, s, tname)
  local t = s.type
  if t == "n" then
    if s.group then U.errorf("Cannot specify '%s' with 'n'.", s.group) end
    t = "g"
  end
  if t and not t:find("^[eEfFgG%%]$") then unknown(s, tname) end
  local negative = v < 0 or (v == 0 and 1 / v < 0)
  local x = math.abs(v)
  local suffix = ""
  if t == "%" then x, t, suffix = x * 100, "f", "%" end
  local upper = t and t:find("^[EFG]$") ~= nil
  local text
  if x ~= x or x == math.huge then
    if x ~= x then negative = false end -- Python writes nan without a sign
    text = x ~= x and "nan" or "inf"
  elseif not t and not s.precision then
    text = U.pyfloat(x)
  else
    text = float_text(x, t and t:lower() or "r", s.precision or 6, s.alt)
  end
  if upper then text = text:upper() end
  local int, rest = text:match("^(%d+)(.*)$")
  if not int then -- inf, nan: '0' pads them, ungrouped
    return number(setmetatable({ group = false }, { __index = s }), negative, "", "", text .. suffix, 3)
  end
  if s.z and negative and not text:find("[1-9]") then negative = false end
  return number(s, negative, "", int, rest .. suffix, 3)
end

local function item_of(v)
  if is_tensor(v) and v:dim() == 0 then return v:detach():item() end
  return v
end

-- Python's builtin format(value, spec)
function M.format(value, spec)
  spec = spec or ""
  if type(spec) ~= "string" then
    U.errorf("format() argument 2 must be str, not %s", U.typename(spec))
  end
  local v = item_of(value)
  local tname = U.typename(v)
  if type(v) == "boolean" then
    if spec == "" then return v and "True" or "False" end
    return format_int(v and 1 or 0, parse_spec(spec, "bool"), "bool")
  end
  if math.type(v) == "integer" then return format_int(v, parse_spec(spec, "int"), "int") end
  if math.type(v) == "float" then return format_float(v, parse_spec(spec, "float"), "float") end
  if type(v) == "string" then return format_str(v, parse_spec(spec, "str")) end
  if spec ~= "" then
    U.errorf("unsupported format string passed to %s.__format__", is_tensor(v) and "Tensor" or tname)
  end
  return pystr(v)
end

-- ---- format strings: literal text and {field!conv:spec} ----

-- parses fmt into a list of strings and fields {name =, conv =, spec = <parsed list>, text =}
local function parse(fmt, fstring, depth)
  local out, buf, i, n = {}, {}, 1, #fmt
  local function flush()
    if #buf > 0 then out[#out + 1] = table.concat(buf); buf = {} end
  end
  while i <= n do
    local c = fmt:sub(i, i)
    if c == "}" then
      if fmt:sub(i + 1, i + 1) ~= "}" then U.error(fstring and "f-string: single '}' is not allowed"
        or "Single '}' encountered in format string") end
      buf[#buf + 1], i = "}", i + 2
    elseif c ~= "{" then
      local j = fmt:find("[{}]", i) or n + 1
      buf[#buf + 1], i = fmt:sub(i, j - 1), j
    elseif i == n and not fstring then
      U.error("Single '{' encountered in format string")
    elseif fmt:sub(i + 1, i + 1) == "{" then
      buf[#buf + 1], i = "{", i + 2
    else
      if depth > 1 then U.error("Max string recursion exceeded") end
      -- the field's name ends at '!' or ':' outside brackets (and, in an f-string, outside
      -- parentheses and quotes; '!=' is an operator there); the field at the matching '}'
      local j, nest, name_end, conv_at = i + 1, 0, nil, nil
      local quote
      while true do
        if j > n then
          U.error(fstring and "f-string: expecting '}'" or
            (depth > 0 and "unmatched '{' in format spec" or "expected '}' before end of string"))
        end
        local d = fmt:sub(j, j)
        if name_end then
          if d == "{" then nest = nest + 1
          elseif d == "}" then
            if nest == 0 then break end
            nest = nest - 1
          end
        elseif quote then
          if d == quote then quote = nil end
        elseif fstring and (d == "'" or d == '"') then quote = d
        elseif d == "[" or (fstring and (d == "(" or d == "{")) then nest = nest + 1
        elseif (d == "]" or (fstring and d == ")")) and nest > 0 then nest = nest - 1
        elseif d == "}" and nest > 0 and fstring then nest = nest - 1
        elseif nest == 0 and (d == "}" or d == ":" or (d == "!" and fmt:sub(j + 1, j + 1) ~= "=")) then
          name_end = j
          if d == "}" then break end
          if d == "!" then conv_at = j end
        end
        j = j + 1
      end
      flush()
      local field = { name = fmt:sub(i + 1, name_end - 1) }
      local spec_at = name_end
      if conv_at then
        local conv = fmt:sub(conv_at + 1, conv_at + 1)
        local next_c = fmt:sub(conv_at + 2, conv_at + 2)
        if conv == "}" or conv == "" then U.error("end of string while looking for conversion specifier") end
        if next_c ~= ":" and next_c ~= "}" then U.error("expected ':' after conversion specifier") end
        if not (conv == "r" or conv == "s" or conv == "a") then U.errorf("Unknown conversion specifier %s", conv) end
        field.conv, spec_at = conv, conv_at + 2
      end
      if fstring then
        local expr, eq = field.name:match("^(.-%S%s*)=(%s*)$")
        if expr and not expr:find("[=!<>~]%s*$") then
          field.name, field.text = expr, expr .. "=" .. eq
          if not field.conv and spec_at == j then field.conv = "r" end
        end
        if field.name:find("^%s*$") then U.error("f-string: empty expression not allowed") end
      end
      field.spec = fmt:sub(spec_at, spec_at) == ":" and parse(fmt:sub(spec_at + 1, j - 1), fstring, depth + 1) or {}
      out[#out + 1] = field
      i = j + 1
    end
  end
  flush()
  return out
end

local function convert(v, conv)
  if conv == "r" or conv == "a" then
    local r = pyrepr(v)
    if conv == "a" then
      r = r:gsub(utf8.charpattern, function(ch)
        local cp = utf8.codepoint(ch)
        if cp < 128 then return ch end
        return string.format(cp < 256 and "\\x%02x" or cp < 0x10000 and "\\u%04x" or "\\U%08x", cp)
      end)
    end
    return r
  end
  if conv == "s" then return pystr(v) end
  return v
end

local function render(pieces, value_of)
  local out = {}
  for k, p in ipairs(pieces) do
    if type(p) == "string" then out[k] = p
    else
      local v = convert(value_of(p.name), p.conv)
      out[k] = (p.text or "") .. M.format(v, render(p.spec, value_of))
    end
  end
  return table.concat(out)
end

-- {0.attr[key]...} after the first part
local function lookup(v, rest, field)
  for kind, key in rest:gmatch("([.[])([^.[]*)") do
    if kind == "[" then
      if not key:find("%]$") then U.error("Missing ']' in format string") end
      key = key:sub(1, -2)
      if key == "" then U.error("Empty attribute in format string") end
      local idx = key:find("^%d+$") and tonumber(key)
      if type(v) == "table" and getmetatable(v) == nil and idx then idx = idx + 1 end
      local got = v[idx or key]
      if got == nil then
        if idx then U.error(type(v) == "table" and "list index out of range" or "index out of range") end
        U.error(repr_str(key))
      end
      v = got
    else
      if key == "" then U.error("Empty attribute in format string") end
      local ok, got = pcall(function() return v[key] end)
      if not ok or got == nil then U.errorf("'%s' object has no attribute '%s'", U.typename(v), key) end
      v = got
    end
  end
  if rest ~= "" and not rest:find("^[.[]") then
    U.error("Only '.' or '[' may follow ']' in format field specifier")
  end
  return v
end

local function has_named(pieces)
  for _, p in ipairs(pieces) do
    if type(p) == "table" then
      local first = p.name:match("^[^.[]*")
      if first ~= "" and not first:find("^%d+$") then return true end
      if has_named(p.spec) then return true end
    end
  end
  return false
end

-- fmt.format(...): a trailing table without [1] holds the keywords when fmt names a field
function M.str_format(fmt, ...)
  if type(fmt) ~= "string" then U.errorf("str_format: format must be a str, got %s", U.typename(fmt)) end
  local pieces = parse(fmt, false, 0)
  local args, n = { ... }, select("#", ...)
  local kw = {}
  if n > 0 and has_named(pieces) and U.is_opts(args[n]) then kw, n = args[n], n - 1 end
  local auto -- nil until the first field: true for {} numbering, false for {0}
  local next_index = 0
  local function value_of(name)
    local first, rest = name:match("^([^.[]*)(.*)$")
    local v
    if first == "" or first:find("^%d+$") then
      local idx
      if first == "" then
        if auto == false then U.error("cannot switch from manual field specification to automatic field numbering") end
        auto, idx, next_index = true, next_index, next_index + 1
      else
        if auto == true then U.error("cannot switch from automatic field numbering to manual field specification") end
        auto, idx = false, tonumber(first)
      end
      if idx >= n then U.errorf("Replacement index %d out of range for positional args tuple", idx) end
      v = args[idx + 1]
    else
      v = kw[first]
      if v == nil then U.error(repr_str(first)) end
    end
    return lookup(v, rest, name)
  end
  return render(pieces, value_of)
end

-- the caller's names: its locals (the innermost of a repeated name wins), then its upvalues
local function caller_names(level)
  local names, set = {}, {}
  local i = 1
  while true do
    local k, v = debug.getlocal(level + 1, i)
    if not k then break end
    if not k:find("^%(") then names[k], set[k] = v, true end
    i = i + 1
  end
  local info = debug.getinfo(level + 1, "f")
  if info and info.func then
    i = 1
    while true do
      local k, v = debug.getupvalue(info.func, i)
      if not k then break end
      if not set[k] and k ~= "_ENV" then names[k], set[k] = v, true end
      i = i + 1
    end
  end
  return names, set
end

-- an f-string: f"{x:.3f}" with the caller's names, or f(s, names)
function M.f(s, given)
  if type(s) ~= "string" then U.errorf("f: the f-string must be a str, got %s", U.typename(s)) end
  if debug.getinfo(1, "t").istailcall then
    U.error('f: called as a tail call (return f"..."), where the caller\'s names are gone: write return (f"...")')
  end
  local names, set = caller_names(2)
  local env = setmetatable({}, { __index = function(_, k)
    if given and given[k] ~= nil then return given[k] end
    if set[k] then return names[k] end
    local g = _G[k]
    if g == nil then
      U.errorf("name '%s' is not defined (an f-string sees the caller's locals, the upvalues its code "
        .. "already uses and the globals; pass the others in a table: f(s, {%s = %s}))", k, k, k)
    end
    return g
  end })
  local cache = {}
  local function value_of(expr)
    local chunk = cache[expr]
    if not chunk then
      local err
      chunk, err = load("return " .. expr, "=f-string", "t", env)
      if not chunk then U.errorf("f-string: invalid syntax in {%s}: %s", expr, (err:gsub("^f%-string:%d+: ", ""))) end
      cache[expr] = chunk
    end
    return U.call(chunk)
  end
  return render(parse(s, true, 0), value_of)
end

return M
