-- torch.utils.swap_tensors(t1, t2): the two tensor values swap what they are, as PyTorch's swaps
-- their at::Tensor, __class__ and __dict__: every reference to t1 (a module's attribute, an
-- optimizer's param_groups) now sees t2's data, shape, dtype, grad, attributes and Parameter-ness.
local torch = require "torch"

local function is_parameter(t)
  local ok, nn = pcall(require, "nn_parameter")
  return ok and nn.is(t), ok and nn or nil
end

torch.utils = torch.utils or {}
function torch.utils.swap_tensors(t1, t2)
  if not torch.is_tensor(t1) then error(string.format("Expected t1 to be a Tensor, got %s", type(t1)), 2) end
  if not torch.is_tensor(t2) then error(string.format("Expected t2 to be a Tensor, got %s", type(t2)), 2) end
  local p1, P = is_parameter(t1)
  local p2 = is_parameter(t2)
  torch._swap_tensors(t1, t2)
  if P and p1 ~= p2 then
    if p1 then P.unmark(t1); P.mark(t2) else P.unmark(t2); P.mark(t1) end
  end
end
