-- grad_fn._saved_<name>: the tensors a node saved for backward, under PyTorch's attribute names
-- (y.grad_fn._saved_self, _saved_other, _saved_result), for the elementwise ops, whose nodes
-- keep self in slot 0, other (or a tensor exponent) in slot 1 and the result in slot 2.
-- A value the node did not need is nil (PyTorch: None); after backward freed the graph the
-- access fails as PyTorch's does.
local torch = require "torch"

local SELF, OTHER, RESULT = 0, 1, 2
local names = {}
local function add(slots, list)
  for name in list:gmatch("%S+") do names[name] = slots end
end
add({ self = SELF }, [[LogBackward0 AbsBackward0 ErfBackward0 Log1PBackward0 ClampBackward1 SinBackward0 CosBackward0
  AsinBackward0 AcosBackward0 AtanBackward0 SinhBackward0 CoshBackward0 Log2Backward0 Log10Backward0 ErfcBackward0
  AsinhBackward0 AcoshBackward0 AtanhBackward0 PowBackward0]])
add({ result = RESULT }, [[ExpBackward0 SqrtBackward0 RsqrtBackward0 SigmoidBackward0 TanhBackward0 ReluBackward0
  TanBackward0 Expm1Backward0 Exp2Backward0 ReciprocalBackward0]])
add({ self = SELF, other = OTHER }, "MulBackward0 DivBackward0")
add({ self = SELF, exponent = OTHER, result = RESULT }, "PowBackward1")

torch._set_node_saved_attr(function(node, key)
  local slots = names[node:name()]
  local slot = slots and slots[key:sub(8)]
  if not slot then error(string.format("'%s' object has no attribute '%s'", node:name(), key), 2) end
  return torch._node_saved(node, slot)
end)
