-- Port of pytorch/tutorials intermediate_source/custom_function_double_backward_tutorial.rst
-- (Double Backward with Custom Functions).
--
-- Run: nnrepl scripts/tutorials/autograd/custom_function_double_backward.lua
--
-- Differences from the original:
--  * torchviz.make_dot has no equivalent: each graph cell prints what the picture shows,
--    whether grad_x has a backward graph (its grad_fn) or not.
--  * gradcheck / gradgradcheck raise on failure as in PyTorch; their results are also printed
--    ("gradcheck Square: true") so a run shows what was checked.

-- Saving the Inputs
local Square = torch.autograd.Function:extend("Square")
function Square.forward(ctx, x)
  ctx:save_for_backward(x)
  return x ^ 2
end
function Square.backward(ctx, grad_out)
  local x = table.unpack(ctx.saved_tensors)
  return grad_out * 2 * x
end

local x = torch.rand(3, 3, { requires_grad = true, dtype = torch.double })
print("gradcheck Square:", torch.autograd.gradcheck(Square.apply, x))
print("gradgradcheck Square:", torch.autograd.gradgradcheck(Square.apply, x))

-- torchviz.make_dot((grad_x, x, out)): grad_x has a graph of its own (dout/dx = 2x)
x = torch.tensor(1., { requires_grad = true }):clone()
local out = Square.apply(x)
local grad_x = torch.autograd.grad(out, x, { create_graph = true })[1]
print("Square grad_x:", grad_x)

-- Saving the Outputs
local Exp = torch.autograd.Function:extend("Exp")
function Exp.forward(ctx, x)
  local result = torch.exp(x)
  ctx:save_for_backward(result)
  return result
end
function Exp.backward(ctx, grad_out)
  local result = table.unpack(ctx.saved_tensors)
  return result * grad_out
end

x = torch.tensor(1., { requires_grad = true, dtype = torch.double }):clone()
print("gradcheck Exp:", torch.autograd.gradcheck(Exp.apply, x))
print("gradgradcheck Exp:", torch.autograd.gradgradcheck(Exp.apply, x))

out = Exp.apply(x)
grad_x = torch.autograd.grad(out, x, { create_graph = true })[1]
print("Exp grad_x:", grad_x)

-- Saving Intermediate Results
local Sinh = torch.autograd.Function:extend("Sinh")
function Sinh.forward(ctx, x)
  local expx = torch.exp(x)
  local expnegx = torch.exp(-x)
  ctx:save_for_backward(expx, expnegx)
  return (expx - expnegx) / 2, expx, expnegx
end
function Sinh.backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp)
  local expx, expnegx = table.unpack(ctx.saved_tensors)
  local grad_input = grad_out * (expx + expnegx) / 2
  grad_input = grad_input + _grad_out_exp * expx
  grad_input = grad_input - _grad_out_negexp * expnegx
  return grad_input
end

local function sinh(x)
  return (Sinh.apply(x)) -- only the first output
end

x = torch.rand(3, 3, { requires_grad = true, dtype = torch.double })
print("gradcheck sinh:", torch.autograd.gradcheck(sinh, x))
print("gradgradcheck sinh:", torch.autograd.gradgradcheck(sinh, x))

out = sinh(x)
grad_x = torch.autograd.grad(out:sum(), x, { create_graph = true })[1]
print("sinh grad_x has a graph:", grad_x.grad_fn ~= nil)

-- Saving Intermediate Results: What not to do
local SinhBad = torch.autograd.Function:extend("SinhBad")
function SinhBad.forward(ctx, x)
  local expx = torch.exp(x)
  local expnegx = torch.exp(-x)
  ctx.expx = expx
  ctx.expnegx = expnegx
  return (expx - expnegx) / 2
end
function SinhBad.backward(ctx, grad_out)
  local expx = ctx.expx
  local expnegx = ctx.expnegx
  local grad_input = grad_out * (expx + expnegx) / 2
  return grad_input
end

out = SinhBad.apply(x)
grad_x = torch.autograd.grad(out:sum(), x, { create_graph = true })[1]
print("SinhBad grad_x has a graph:", grad_x.grad_fn ~= nil)

-- When Backward is not Tracked
local function cube_forward(x)
  return x ^ 3
end
local function cube_backward(grad_out, x)
  return grad_out * 3 * x ^ 2
end
local function cube_backward_backward(grad_out, sav_grad_out, x)
  return grad_out * sav_grad_out * 6 * x
end
local function cube_backward_backward_grad_out(grad_out, x)
  return grad_out * 3 * x ^ 2
end

local Cube = torch.autograd.Function:extend("Cube")
local CubeBackward = torch.autograd.Function:extend("CubeBackward")
function Cube.forward(ctx, x)
  ctx:save_for_backward(x)
  return cube_forward(x)
end
function Cube.backward(ctx, grad_out)
  local x = table.unpack(ctx.saved_tensors)
  return CubeBackward.apply(grad_out, x)
end

function CubeBackward.forward(ctx, grad_out, x)
  ctx:save_for_backward(x, grad_out)
  return cube_backward(grad_out, x)
end
function CubeBackward.backward(ctx, grad_out)
  local x, sav_grad_out = table.unpack(ctx.saved_tensors)
  local dx = cube_backward_backward(grad_out, sav_grad_out, x)
  local dgrad_out = cube_backward_backward_grad_out(grad_out, x)
  return dgrad_out, dx
end

x = torch.tensor(2., { requires_grad = true, dtype = torch.double })

print("gradcheck Cube:", torch.autograd.gradcheck(Cube.apply, x))
print("gradgradcheck Cube:", torch.autograd.gradgradcheck(Cube.apply, x))

out = Cube.apply(x)
grad_x = torch.autograd.grad(out, x, { create_graph = true })[1]
print("Cube grad_x:", grad_x)
