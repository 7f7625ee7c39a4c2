-- torch.autograd["function"].once_differentiable, and a custom Function whose backward returns
-- trailing nils past its arguments (as PyTorch allows): values against hand-worked ones.
local T = ...
local once_differentiable = torch.autograd["function"].once_differentiable

local Sq = torch.autograd.Function:extend("SqOnce")
function Sq.forward(ctx, x)
  ctx:save_for_backward(x)
  return x * x
end
Sq.backward = once_differentiable(function(ctx, g)
  local x = table.unpack(ctx.saved_tensors)
  T.check(not torch.is_grad_enabled(), "the wrapped backward runs without grad")
  return g * 2 * x, nil, nil
end)

local function run(device)
  local opts = { dtype = torch.float64, device = device }
  local x = torch.tensor({ 1.0, -3.0 }, opts):requires_grad_()
  local g = torch.autograd.grad(Sq.apply(x):sum(), x)[1]
  T.eq(g:tolist(), { 2.0, -6.0 }, device .. ": first derivative 2x")
  T.check(g.grad_fn == nil, device .. ": no graph without create_graph")

  -- create_graph with a grad_output that needs a gradient: the result is tied to a node that
  -- refuses a second differentiation
  local v = torch.ones(2, opts):requires_grad_()
  g = torch.autograd.grad(Sq.apply(x), x, { grad_outputs = v, create_graph = true })[1]
  T.eq(g:tolist(), { 2.0, -6.0 }, device .. ": values under create_graph")
  T.check(g.grad_fn ~= nil, device .. ": a node is attached")
  T.raises(function() torch.autograd.grad(g:sum(), v) end,
    "trying to differentiate twice a function that was marked with @once_differentiable", device .. ": double backward refused")

  -- trailing nils beyond the arguments are dropped; a tensor there is an error
  local Extra = torch.autograd.Function:extend("ExtraGrad")
  function Extra.forward(_, t) return t * 3 end
  function Extra.backward(_, gg) return gg * 3, torch.ones(1, opts) end
  T.raises(function() Extra.apply(x):sum():backward() end,
    "~function ExtraGradBackward returned an incorrect number of gradients (expected 1, got 2)", device .. ": extra tensor refused")
end

T.test("once_differentiable (cpu)", function() run("cpu") end)
T.test("once_differentiable (cuda)", function()
  if not torch.cuda.is_available() then return T.skip("no CUDA device", 1) end
  run("cuda")
end)

T.test("once_differentiable wants a function", function()
  T.raises(function() once_differentiable(3) end, "once_differentiable: expected a backward function, got number")
end)
