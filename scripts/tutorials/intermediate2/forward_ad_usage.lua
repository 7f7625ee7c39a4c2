-- Port of pytorch/tutorials intermediate_source/forward_ad_usage.py (forward-mode AD: dual
-- tensors with torch.autograd.forward_ad, modules, and the functional jvp).
-- Run: nnrepl scripts/tutorials/intermediate2/forward_ad_usage.lua
-- Differences:
--   * nnrepl's duals are lazy (the tangent is computed by double backward when unpack_dual is
--     called, see bindings/lua/torch_forward_ad.lua), so the "tangent is tangent" identity of a
--     dual's own tangent holds and a tangent with another layout is used as given.
--   * make_dual needs the tangent in the primal's dtype here (PyTorch accepts a float32 tangent
--     on a float64 primal): the custom Function cell draws its tangent as float64.
--   * functorch is require "functorch" (deprecated in PyTorch 2.x, as here: it warns once).
--   Each section prints its jvp checked against the closed form.
local torch = require "torch"
local fwAD = torch.autograd.forward_ad

local primal = torch.randn(10, 10)
local tangent = torch.randn(10, 10)

local function fn(x, y)
  return x ^ 2 + y ^ 2
end

local jvp, dual_output, plain_tensor
do
  local _ <close> = fwAD.dual_level()
  local dual_input = fwAD.make_dual(primal, tangent)
  assert(fwAD.unpack_dual(dual_input).tangent == tangent)

  local dual_input_alt = fwAD.make_dual(primal, tangent.T)
  assert(fwAD.unpack_dual(dual_input_alt).tangent ~= tangent)

  plain_tensor = torch.randn(10, 10)
  dual_output = fn(dual_input, plain_tensor)

  jvp = fwAD.unpack_dual(dual_output).tangent
end
print(string.format("jvp of x^2 + y^2 is 2 x t: %s", tostring(torch.allclose(jvp, 2 * primal * tangent))))

assert(fwAD.unpack_dual(dual_output).tangent == nil)

local nn = torch.nn

local model = nn.Linear(5, 5)
local input = torch.randn(16, 5)

local params, tangents = {}, {}
for name, p in model:named_parameters() do params[name] = p end
for name, p in pairs(params) do tangents[name] = torch.rand_like(p) end

do
  local _ <close> = fwAD.dual_level()
  for name, p in pairs(params) do
    model[name] = nil -- delattr
    model[name] = fwAD.make_dual(p, tangents[name])
  end

  local out = model(input)
  jvp = fwAD.unpack_dual(out).tangent
end
-- out = x W^T + b, so its tangent is x dW^T + db
print(string.format("module jvp is x dW^T + db: %s",
  tostring(torch.allclose(jvp, input:matmul(tangents.weight.T) + tangents.bias, { atol = 1e-6 }))))

local functional_call = torch.func.functional_call

model = nn.Linear(5, 5)

local dual_params = {}
local jvp2
do
  local _ <close> = fwAD.dual_level()
  for name, p in pairs(params) do
    dual_params[name] = fwAD.make_dual(p, tangents[name])
  end
  local out = functional_call(model, dual_params, input)
  jvp2 = fwAD.unpack_dual(out).tangent
end

assert(torch.allclose(jvp, jvp2))
print("functional_call jvp matches: true")

local Fn = torch.autograd.Function:extend("Fn")
function Fn.forward(ctx, foo)
  local result = torch.exp(foo)
  ctx.result = result
  return result
end
function Fn.jvp(ctx, gI)
  local gO = gI * ctx.result
  ctx.result = nil -- del ctx.result
  return gO
end

fn = Fn.apply

primal = torch.randn(10, 10, { dtype = torch.double, requires_grad = true })
tangent = torch.randn(10, 10, { dtype = torch.double }) -- float32 in the tutorial: see the header

do
  local _ <close> = fwAD.dual_level()
  local dual_input = fwAD.make_dual(primal, tangent)
  dual_output = fn(dual_input)
  jvp = fwAD.unpack_dual(dual_output).tangent
end
print(string.format("custom Function jvp is t exp(x): %s", tostring(torch.allclose(jvp, tangent * primal:detach():exp()))))

print(string.format("gradcheck: %s", tostring(torch.autograd.gradcheck(Fn.apply, { primal }, { check_forward_ad = true,
  check_backward_ad = false, check_undefined_grad = false, check_batched_grad = false }))))

local ft = require "functorch"

local primal0 = torch.randn(10, 10)
local tangent0 = torch.randn(10, 10)
local primal1 = torch.randn(10, 10)
local tangent1 = torch.randn(10, 10)

fn = function(x, y)
  return x ^ 2 + y ^ 2
end

local primal_out, tangent_out = ft.jvp(fn, { primal0, primal1 }, { tangent0, tangent1 })
print(string.format("ft.jvp: %s", tostring(torch.allclose(tangent_out, 2 * primal0 * tangent0 + 2 * primal1 * tangent1))))

primal = torch.randn(10, 10)
tangent = torch.randn(10, 10)
local y = torch.randn(10, 10)

local new_fn = function(x) return fn(x, y) end -- functools.partial(fn, y=y)
primal_out, tangent_out = ft.jvp(new_fn, { primal }, { tangent })
print(string.format("partial jvp: %s", tostring(torch.allclose(tangent_out, 2 * primal * tangent))))

model = nn.Linear(5, 5)
input = torch.randn(16, 5)
tangents = {}
for i, p in ipairs(model:parameters()) do tangents[i] = torch.rand_like(p) end -- a tuple

local func, params, buffers = ft.make_functional_with_buffers(model)

local function func_params_only(params)
  return func(params, buffers, input)
end

local model_output, jvp_out = ft.jvp(func_params_only, { params }, { tangents })
print(string.format("model jvp: %s", tostring(torch.allclose(jvp_out, input:matmul(tangents[1].T) + tangents[2], { atol = 1e-6 }))))
