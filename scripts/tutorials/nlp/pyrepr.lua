-- Python's printed form of the plain values the NLP tutorials print (lists, tuples, dicts of
-- strings and numbers), so a port's lines read as the original's. Used by the scripts beside it.
local pyfloat = require("nn_util").pyfloat
local R = {}
local Tuple = {}
local join

-- repr of a string, number, tensor or list (a Lua list prints as a Python list)
function R.repr(v)
  if type(v) == "string" then
    return v:find("'") and not v:find('"') and '"' .. v .. '"' or "'" .. v:gsub("'", "\\'") .. "'"
  elseif math.type(v) == "float" then return pyfloat(v)
  elseif type(v) == "table" and getmetatable(v) == Tuple then return join(v, "(", ")")
  elseif type(v) == "table" and getmetatable(v) == nil then return R.list(v) end
  return tostring(v)
end

function join(items, open, close)
  local parts = {}
  for i, v in ipairs(items) do parts[i] = R.repr(v) end
  return open .. table.concat(parts, ", ") .. close
end
function R.list(items) return join(items, "[", "]") end
-- R.tuple(a, b) is the tuple's repr; R.T(a, b) a tuple to put in a list
function R.tuple(...) return join({ ... }, "(", ")") end
function R.T(...) return setmetatable({ ... }, Tuple) end

-- a dict in insertion order: keys lists the keys in that order
function R.dict(keys, map)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = R.repr(k) .. ": " .. R.repr(map[k]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

return R
