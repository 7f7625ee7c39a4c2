-- torch.empty(..., {memory_format = torch.channels_last}): the tensor laid out in that format
-- (torch.empty is the only factory with memory_format; the *_like ones keep their input's).
local torch = require "torch"

local empty = torch.empty
function torch.empty(...)
  local n = select("#", ...)
  local last = n > 0 and select(n, ...) or nil
  if type(last) ~= "table" or getmetatable(last) ~= nil or last.memory_format == nil then return empty(...) end
  local opts = {}
  for k, v in pairs(last) do opts[k] = v end
  local mf, grad = opts.memory_format, opts.requires_grad
  opts.memory_format, opts.requires_grad = nil, nil
  local args = table.pack(...)
  args[n] = opts
  local t = empty(table.unpack(args, 1, n))
  if mf ~= torch.preserve_format then t = t:contiguous({ memory_format = mf }) end
  if grad then t:requires_grad_(true) end
  return t
end

return {}
