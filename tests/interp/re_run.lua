-- The nnrepl side of test_re_cpython.sh: runs each case of re_cases.json through require "re" and
-- prints "<case number> <result as JSON>" as re_ref.py does for CPython. nnrepl's false for an
-- unmatched group in a list (Python's None) is written as null, like the None.
local re, json = require "re", require "json"

local FLAGS = { I = re.I, M = re.M, S = re.S, X = re.X, A = re.A, U = re.U, L = re.L }
local FUNCS = {
  upper = function(m) return m:group(0):upper() end,
  swap = function(m) return m:group(2) .. m:group(1) end,
  bracket = function(m) return "[" .. m:group(0) .. "]" end,
}
local null, array = json.null, json.array

local function none(v) if v == nil or v == false then return null end return v end

local function list(t, n)
  local out = {}
  for i = 1, n or #t do out[i] = none(t[i]) end
  return array(out)
end

local function desc(m)
  if m == nil then return null end
  local spans = {}
  for g = 1, m.re.groups do spans[g] = array({ m:span(g) }) end
  local dict = {}
  for k, v in pairs(m:groupdict()) do dict[k] = none(v) end
  return { span = array({ m:span() }), group = m:group(), groups = list(m:groups(), m.re.groups), spans = array(spans),
    lastindex = none(m.lastindex), lastgroup = none(m.lastgroup), groupdict = dict, pos = m.pos, endpos = m.endpos,
    ["repr"] = m.string:find("[\128-\255]") and null or tostring(m) }
end

local function run(case)
  local fn, args = case[1], table.move(case, 2, #case, 1, {})
  local o = type(args[#args]) == "table" and table.remove(args) or {}
  local flags = 0
  for ch in (o.flags or ""):gmatch(".") do flags = flags | FLAGS[ch] end
  if fn == "search" or fn == "match" or fn == "fullmatch" then
    if o.pos or o.endpos then return desc(re.compile(args[1], flags)[fn](re.compile(args[1], flags), args[2], o.pos, o.endpos)) end
    return desc(re[fn](args[1], args[2], flags))
  elseif fn == "findall" then
    local out = {}
    for i, v in ipairs(re.compile(args[1], flags):findall(args[2], o.pos, o.endpos)) do
      out[i] = type(v) == "table" and array(v) or v
    end
    return array(out)
  elseif fn == "finditer" then
    local out = {}
    for m in re.compile(args[1], flags):finditer(args[2], o.pos, o.endpos) do out[#out + 1] = desc(m) end
    return array(out)
  elseif fn == "split" then
    return list(re.split(args[1], args[2], o.maxsplit or 0, flags))
  elseif fn == "sub" then
    return re.sub(args[1], o.fn and FUNCS[args[2]] or args[2], args[3], o.count or 0, flags)
  elseif fn == "subn" then
    return array({ re.subn(args[1], args[2], args[3], o.count or 0, flags) })
  elseif fn == "escape" then
    return re.escape(args[1])
  elseif fn == "escaped_match" then
    return desc(re.search(re.escape(args[1]), args[2]))
  elseif fn == "compile" then
    local p = re.compile(args[1], flags)
    return { flags = p.flags, groups = p.groups, groupindex = p.groupindex, ["repr"] = tostring(p) }
  elseif fn == "error" or fn == "error_flags" then
    re.compile(args[1], flags)
    return "compiled"
  elseif fn == "expand" then
    return re.search(args[1], args[2]):expand(args[3])
  elseif fn == "group" then
    local m = re.search(args[1], args[2])
    return list({ m:group(table.unpack(o.args)) }, #o.args)
  elseif fn == "groupdefault" then
    local m = re.search(args[1], args[2])
    local d, dd = {}, {}
    for k, v in pairs(m:groupdict()) do d[k] = none(v) end
    for k, v in pairs(m:groupdict("-")) do dd[k] = v end
    return array({ list(m:groups(), m.re.groups), list(m:groups("-")), d, dd })
  end
  error("unknown case kind " .. fn)
end

local f = assert(io.open(arg[1], "rb"))
local cases = json.loads(f:read("a"))
f:close()
for i, case in ipairs(cases) do
  local ok, r = pcall(run, case)
  if not ok then
    local kind, msg = tostring(r):match("(%a*[Ee]rror): (.*)$")
    r = kind and { error = kind .. ": " .. msg } or { crash = tostring(r) }
  end
  print(i, json.dumps(r))
end
