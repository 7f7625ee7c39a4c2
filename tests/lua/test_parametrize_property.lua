-- nn.utils.parametrize: module.weight is a property, computed at every read (as PyTorch's),
-- once per block inside parametrize.cached(), never stale after an optimizer step.
local T = ...
local P = nn.utils.parametrize

local Counting = nn.Module:extend("Counting")
function Counting:__init() self.calls = 0 end
function Counting:forward(X)
  self.calls = self.calls + 1
  return X * 2
end

local function run(device)
  local layer = nn.Linear(3, 3):to(device)
  local par = Counting()
  P.register_parametrization(layer, "weight", par)
  T.eq(par.calls, 1, device .. ": registration computes once")
  local _ = layer.weight + layer.weight.T
  local _ = layer.weight:sum()
  T.eq(par.calls, 4, device .. ": each read computes")
  do
    local _c <close> = P.cached()
    local _ = layer.weight + layer.weight.T
    local _ = layer.weight:sum()
    T.eq(par.calls, 5, device .. ": computed once inside cached()")
  end
  local _ = layer.weight
  T.eq(par.calls, 6, device .. ": after cached() reads compute again")

  -- after an optimizer step the read value follows the new original (no stale copy)
  local opt = optim.SGD(layer:parameters(), { lr = 0.5 })
  local x = torch.ones(1, 3, { device = device })
  layer(x):sum():backward()
  opt:step()
  local orig = layer.parametrizations.weight.original
  T.check(torch.equal(layer.weight, orig * 2), device .. ": weight = 2 * original after the step")
  -- the gradient of the original is 2 * the gradient of the weight (ones for a sum of outputs)
  T.check(torch.equal(orig.grad, torch.full({ 3, 3 }, 2.0, { device = device })), device .. ": chain rule through the property")

  local want = (orig * 2):detach()
  P.remove_parametrizations(layer, "weight")
  local calls = par.calls
  local _ = layer.weight
  T.eq(par.calls, calls, device .. ": no computation once removed")
  T.check(torch.equal(layer.weight, want), device .. ": removal leaves the parametrized value")
end

T.test("a parametrized tensor is a property (cpu)", function() run("cpu") end)
T.test("a parametrized tensor is a property (cuda)", function()
  if not torch.cuda.is_available() then return T.skip("no CUDA device", 1) end
  run("cuda")
end)
