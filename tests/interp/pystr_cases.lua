-- nnrepl's side of tests/interp/test_pystr_cpython.sh: the answers to the case files that
-- pystr_cases.py wrote (and answered with CPython), in the same canonical form.
--   nnrepl pystr_cases.lua DIR -> DIR/methods.lua.txt, DIR/ucd.lua.txt, DIR/norm.lua.txt
local json = require "json"
local unicodedata = require "unicodedata"
local dir = arg[1]

local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end

local function canon(v)
  if type(v) == "boolean" then return v and "b1" or "b0" end
  if math.type(v) == "integer" then return "i" .. v end
  if type(v) == "string" then return "s" .. hex(v) end
  if type(v) == "table" then
    local parts = {}
    for k = 1, #v do parts[k] = canon(v[k]) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  error("cannot write " .. tostring(v))
end

local tuple_results = { partition = true, rpartition = true }

local function call(m, s, args, n)
  local res = table.pack(pcall(string[m], s, table.unpack(args, 1, n)))
  if not res[1] then return "E" .. tostring(res[2]):gsub("^[^:]*:%d+: ", "") end
  if tuple_results[m] then return canon({ res[2], res[3], res[4] }) end
  return canon(res[2])
end

local function lines_of(path)
  local f = assert(io.open(path))
  return f:lines()
end

local out = assert(io.open(dir .. "/methods.lua.txt", "w"))
for line in lines_of(dir .. "/methods.jsonl") do
  local c = json.loads(line)
  local args, n = {}, #c.a
  for k = 1, n do
    local a = c.a[k]
    if a ~= json.null then args[k] = a end
  end
  out:write(call(c.m, c.s, args, n), "\n")
end
out:close()

local methods_1 = { "swapcase", "title", "capitalize", "casefold", "isalpha", "isdecimal", "isdigit", "isnumeric",
  "isalnum", "isspace", "isupper", "islower", "istitle", "isprintable", "isidentifier" }
local forms = { "NFC", "NFD", "NFKC", "NFKD" }
out = assert(io.open(dir .. "/ucd.lua.txt", "w"))
for cp = 0, 0x2FFFF do
  if cp < 0xD800 or cp > 0xDFFF then
    local c = utf8.char(cp)
    local ucd = { unicodedata.category(c), unicodedata.bidirectional(c), tostring(unicodedata.combining(c)),
      tostring(unicodedata.mirrored(c)), tostring(unicodedata.decimal(c, -1)) }
    local norm, meth = {}, {}
    for k, f in ipairs(forms) do norm[k] = canon(unicodedata.normalize(f, c)) end
    for k, m in ipairs(methods_1) do meth[k] = canon(string[m](c)) end
    out:write(("%X %s|%s|%s\n"):format(cp, table.concat(ucd, " "), table.concat(norm, " "), table.concat(meth, " ")))
  end
end
out:close()

out = assert(io.open(dir .. "/norm.lua.txt", "w"))
for line in lines_of(dir .. "/norm.jsonl") do
  local s = json.loads(line)
  local res = {}
  for _, f in ipairs(forms) do res[#res + 1] = canon(unicodedata.normalize(f, s)) end
  for _, f in ipairs(forms) do res[#res + 1] = canon(unicodedata.is_normalized(f, s)) end
  for _, m in ipairs({ "swapcase", "title", "capitalize", "casefold", "istitle", "isupper", "islower", "split", "strip" }) do
    res[#res + 1] = canon(string[m](s))
  end
  out:write(table.concat(res, " "), "\n")
end
out:close()
