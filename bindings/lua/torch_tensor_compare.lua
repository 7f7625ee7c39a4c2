-- a < b, a <= b, a > b, a >= b with a tensor on either side, for Python's `if loss < best:`.
-- Lua makes every comparison one boolean, so a one-element tensor gives torch.lt's (etc.) one
-- value, with PyTorch's dtype rules (a float32 tensor meets 0.1 as float32); a larger tensor
-- raises, as Python's bool() of it does. Elementwise results are torch.lt & co.
local torch = require "torch"
local mt = getmetatable(torch.empty(0))

local function one(v, op, fn)
  if torch.is_tensor(v) and v:numel() ~= 1 then
    error(string.format("Boolean value of Tensor with more than one value is ambiguous: Lua's %s " ..
      "compares to one boolean (a tensor of shape %s here); use torch.%s(a, b) or a:%s(b) for an " ..
      "elementwise result", op, tostring(v:size()), fn, fn), 3)
  end
end

mt.__lt = function(a, b)
  one(a, "<", "lt"); one(b, "<", "lt")
  if torch.is_tensor(a) then return a:lt(b):item() end
  return b:gt(a):item()
end
mt.__le = function(a, b)
  one(a, "<=", "le"); one(b, "<=", "le")
  if torch.is_tensor(a) then return a:le(b):item() end
  return b:ge(a):item()
end
