-- A custom Function that saves one of its own results: under create_graph the saved result
-- comes back with the Function's node as grad_fn, so second derivatives reach through it
-- (values against closed forms: d2/dx2 exp = exp, d2/dx2 sinh = sinh).
local T = ...
local f64 = { dtype = torch.float64 }

local Exp = torch.autograd.Function:extend("ExpSavesResult")
function Exp.forward(ctx, x)
  local y = x:exp()
  ctx:save_for_backward(y)
  return y
end
function Exp.backward(ctx, g)
  local y = table.unpack(ctx.saved_tensors)
  return g * y
end

-- three results, two of them saved intermediates returned to keep their history
local Sinh = torch.autograd.Function:extend("SinhThree")
function Sinh.forward(ctx, x)
  local e, en = x:exp(), (-x):exp()
  ctx:save_for_backward(e, en)
  return (e - en) / 2, e, en
end
function Sinh.backward(ctx, g, ge, gen)
  local e, en = table.unpack(ctx.saved_tensors)
  return g * (e + en) / 2 + ge * e - gen * en
end

local function run(device)
  local opts = { dtype = torch.float64, device = device }
  local xs = { -1.5, 0.25, 2.0 }
  local x = torch.tensor(xs, opts):requires_grad_()
  local y = Exp.apply(x)
  local g = torch.autograd.grad(y:sum(), x, { create_graph = true })[1]
  T.check(g.grad_fn ~= nil, device .. ": the first gradient has a graph")
  local gg = torch.autograd.grad(g:sum(), x)[1]
  for i = 1, 3 do T.near(gg[i - 1]:item(), math.exp(xs[i]), 1e-12, device .. ": d2 exp") end

  x = torch.tensor(xs, opts):requires_grad_()
  local s = (Sinh.apply(x))
  g = torch.autograd.grad(s:sum(), x, { create_graph = true })[1]
  for i = 1, 3 do T.near(g[i - 1]:item(), math.cosh(xs[i]), 1e-12, device .. ": d sinh") end
  gg = torch.autograd.grad(g:sum(), x)[1]
  for i = 1, 3 do T.near(gg[i - 1]:item(), math.sinh(xs[i]), 1e-12, device .. ": d2 sinh") end

  -- without create_graph the saved result is used as it is (no history, nothing retained)
  x = torch.tensor(xs, opts):requires_grad_()
  g = torch.autograd.grad(Exp.apply(x):sum(), x)[1]
  T.check(g.grad_fn == nil, device .. ": no graph without create_graph")
  T.check(torch.autograd.gradgradcheck(Exp.apply, torch.rand(3, opts):requires_grad_()), device .. ": gradgradcheck Exp")
  T.check(torch.autograd.gradgradcheck(function(t) return (Sinh.apply(t)) end, torch.rand(2, 2, opts):requires_grad_()),
    device .. ": gradgradcheck sinh")
end

T.test("a saved result keeps its history for double backward (cpu)", function() run("cpu") end)

T.test("a saved result keeps its history for double backward (cuda)", function()
  if not torch.cuda.is_available() then return T.skip("no CUDA device", 1) end
  run("cuda")
end)
