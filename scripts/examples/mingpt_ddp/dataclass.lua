-- Python's @dataclass for the minGPT port's configs: dataclass("GPTConfig", {{"n_layer"}, {"vocab_size", 50257}})
-- gives a constructor taking the fields as keywords, GPTConfig({n_layer = 8}); a field without a
-- default is nil (Python's None), an unknown keyword raises Python's error. asdict(obj) copies
-- the fields into a plain table.
local M = {}

function M.dataclass(name, fields)
  local known = {}
  for _, f in ipairs(fields) do known[f[1]] = true end
  return function(kw)
    kw = kw or {}
    for k in pairs(kw) do
      if not known[k] then
        error(string.format("%s.__init__() got an unexpected keyword argument '%s'", name, tostring(k)), 2)
      end
    end
    local obj = { __fields = fields }
    for _, f in ipairs(fields) do
      local v = kw[f[1]]
      if v == nil then v = f[2] end
      obj[f[1]] = v
    end
    return obj
  end
end

function M.asdict(obj)
  local t = {}
  for _, f in ipairs(obj.__fields) do t[f[1]] = obj[f[1]] end
  return t
end

return M
