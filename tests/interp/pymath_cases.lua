-- nnrepl's side of test_pymath_cpython.sh: every case of <dir>/cases.json through Lua's math
-- (Python's names, bindings/lua/pymath.lua), one line a case in pymath_cases.py's format.
local json = require "json"
local dir = arg[1]
local f = assert(io.open(dir .. "/cases.json"))
local cases = json.loads(f:read("a"))
f:close()

local function show(v)
  if type(v) == "boolean" then return v and "b:1" or "b:0" end
  if math.type(v) == "integer" then return "i:" .. v end
  if v ~= v then return "nan" end
  if v == 1 / 0 then return "inf" end
  if v == -1 / 0 then return "-inf" end
  return string.format("%a", v)
end

local out = {}
for i, c in ipairs(cases) do
  local fn = math[c[1]]
  local args = {}
  for k = 2, #c do args[k - 1] = c[k] end
  local res = table.pack(pcall(fn, table.unpack(args, 1, #c - 1)))
  if not res[1] then
    local msg = tostring(res[2]):gsub("^[^\n]-:%d+: ", "")
    if msg:match("^integer overflow") then msg = "integer overflow" end
    out[i] = "E:" .. msg
  else
    local parts = {}
    for k = 2, res.n do parts[#parts + 1] = show(res[k]) end
    out[i] = table.concat(parts, " ")
  end
end
local o = assert(io.open(dir .. "/got.txt", "w"))
o:write(table.concat(out, "\n"), "\n")
o:close()
