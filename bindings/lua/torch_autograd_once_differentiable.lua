-- torch.autograd.function.once_differentiable: wraps a custom Function's backward so that it
-- runs without recording a graph; when a graph was asked for (create_graph) and an argument
-- needs a gradient, its results get a node that fails if differentiated again.
--
--   local once_differentiable = torch.autograd["function"].once_differentiable
--   Conv2D.backward = once_differentiable(function(ctx, grad_out) ... end)
local torch = require "torch"
require "torch_autograd_function"

local Function = torch.autograd.Function

-- DelayedError.apply(n, r1..rn, a1..): gives r1..rn back, attached to the arguments a that need
-- a gradient; backward through it raises
local DelayedError = Function:extend("DelayedError")
function DelayedError.forward(ctx, n, ...)
  return table.unpack(table.pack(...), 1, n)
end
function DelayedError.backward()
  error("trying to differentiate twice a function that was marked with @once_differentiable", 0)
end

local function once_differentiable(fn)
  if type(fn) ~= "function" then error("once_differentiable: expected a backward function, got " .. type(fn), 2) end
  return function(ctx, ...)
    local args = table.pack(...)
    local outs = table.pack(torch.no_grad(function() return fn(ctx, table.unpack(args, 1, args.n)) end))
    if not torch.is_grad_enabled() then return table.unpack(outs, 1, outs.n) end
    local needs = {}
    for i = 1, args.n do
      if torch.is_tensor(args[i]) and args[i].requires_grad then needs[#needs + 1] = args[i] end
    end
    if #needs == 0 then return table.unpack(outs, 1, outs.n) end
    local all = { outs.n }
    for i = 1, outs.n do all[i + 1] = outs[i] end
    for i, t in ipairs(needs) do all[outs.n + 1 + i] = t end
    return DelayedError.apply(table.unpack(all, 1, outs.n + 1 + #needs))
  end
end

torch.autograd["function"] = torch.autograd["function"] or {}
torch.autograd["function"].once_differentiable = once_differentiable
torch.autograd["function"].Function = Function
