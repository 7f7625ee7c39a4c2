-- JSON: Python's json module for ports (`import json` -> `local json = require "json"`), and
-- the Lua side's own helpers (M.string, M.float, M.decode: torch.save's metadata,
-- torch.profiler's Chrome traces). The Python API is in json_py.lua.
local M = {}

function M.string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local map = { ['"'] = '\\"', ['\\'] = '\\\\', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t' }
    return map[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

-- the shortest decimal that reads back as x, always with '.' or an exponent
function M.float(x)
  local s
  for p = 1, 17 do
    s = string.format("%." .. p .. "g", x)
    if tonumber(s) == x then break end
  end
  if not s:find("[.eEn]") then s = s .. ".0" end
  return s
end

-- The value text holds (objects also return their keys in order, the top level's too, arrays have n and the
-- metatable {array = true}); on bad text it calls on_error(message, byte position), which raises.
function M.decode(text, on_error)
  local pos = 1
  local function fail(msg) on_error(msg, pos) end
  local function ws() pos = text:find("[^ \t\r\n]", pos) or #text + 1 end
  local value
  local function str()
    pos = pos + 1
    local out = {}
    while true do
      local a, b = text:find('["\\]', pos)
      if not a then fail("unterminated string") end
      out[#out + 1] = text:sub(pos, a - 1)
      pos = b + 1
      if text:sub(a, a) == '"' then break end
      local e = text:sub(pos, pos)
      pos = pos + 1
      local simple = { ['"'] = '"', ['\\'] = '\\', ['/'] = '/', b = '\b', f = '\f', n = '\n', r = '\r', t = '\t' }
      if simple[e] then
        out[#out + 1] = simple[e]
      elseif e == "u" then
        local cp = tonumber(text:sub(pos, pos + 3), 16)
        if not cp then fail("bad \\u escape") end
        pos = pos + 4
        if cp >= 0xD800 and cp <= 0xDBFF and text:sub(pos, pos + 1) == "\\u" then
          local lo = tonumber(text:sub(pos + 2, pos + 5), 16)
          if lo and lo >= 0xDC00 and lo <= 0xDFFF then
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
            pos = pos + 6
          end
        end
        out[#out + 1] = utf8.char(cp)
      else
        fail("bad escape")
      end
    end
    return table.concat(out)
  end
  function value()
    ws()
    local c = text:sub(pos, pos)
    if c == "{" then
      pos = pos + 1
      local t, keys = {}, {}
      ws()
      if text:sub(pos, pos) == "}" then pos = pos + 1; return t, keys end
      while true do
        ws()
        if text:sub(pos, pos) ~= '"' then fail("expected a key") end
        local k = str()
        ws()
        if text:sub(pos, pos) ~= ":" then fail("expected ':'") end
        pos = pos + 1
        t[k] = value()
        keys[#keys + 1] = k
        ws()
        c = text:sub(pos, pos)
        pos = pos + 1
        if c == "}" then return t, keys end
        if c ~= "," then fail("expected ',' or '}'") end
      end
    elseif c == "[" then
      pos = pos + 1
      local t = { n = 0 }
      ws()
      if text:sub(pos, pos) == "]" then pos = pos + 1; return setmetatable(t, { array = true }) end
      while true do
        t.n = t.n + 1
        t[t.n] = value()
        ws()
        c = text:sub(pos, pos)
        pos = pos + 1
        if c == "]" then return setmetatable(t, { array = true }) end
        if c ~= "," then fail("expected ',' or ']'") end
      end
    elseif c == '"' then
      return str()
    else
      local tok = text:match("^[-+%w.]+", pos)
      if not tok then fail("unexpected character") end
      pos = pos + #tok
      if tok == "true" then return true elseif tok == "false" then return false elseif tok == "null" then return nil end
      local v = tonumber(tok)
      if v == nil then fail("bad number '" .. tok .. "'") end
      if tok:find("[.eE]") then return v + 0.0 end
      return math.tointeger(v) or v
    end
  end
  local v, keys = value()
  ws()
  if pos <= #text then fail("trailing text") end
  return v, keys
end

require("json_py")(M)

return M
