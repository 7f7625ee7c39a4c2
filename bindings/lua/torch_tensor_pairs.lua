-- pairs(x) walks a tensor's first dimension as Python's `for i, row in enumerate(x):` does:
-- i from 0, row = x[i] (a view; a 0-dim tensor for a 1-D x). Like Sequential's pairs, it is
-- 0-based. A 0-dim tensor raises PyTorch's "iteration over a 0-d tensor". (ipairs(x) cannot be
-- made to work: Lua's ipairs asks for x[1], x[2], ... and so skips row 0; use pairs.)
local torch = require "torch"
local mt = getmetatable(torch.empty(0))

mt.__pairs = function(x)
  if x:dim() == 0 then error("TypeError: iteration over a 0-d tensor", 2) end
  local n = x:size(0)
  return function(t, i)
    i = i + 1
    if i < n then return i, t[i] end
  end, x, -1
end
