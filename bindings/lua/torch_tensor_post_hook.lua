-- p:register_post_accumulate_grad_hook(fn) calls fn with the very Lua value p it was
-- registered on (PyTorch passes the same Python object), so a table keyed by parameters finds
-- it: `optimizer_dict[p]` in an optimizer-in-backward hook. The value is held weakly: once the
-- script drops it, fn gets another Lua value of the same tensor.
local torch = require "torch"
local U = require "nn_util"
local Tensor = torch.Tensor

local register = Tensor.register_post_accumulate_grad_hook
function Tensor:register_post_accumulate_grad_hook(fn)
  if type(fn) ~= "function" then return U.call_as("register_post_accumulate_grad_hook", register, self, fn) end
  local same = setmetatable({ self }, { __mode = "v" })
  return register(self, function(p) return fn(same[1] or p) end)
end
