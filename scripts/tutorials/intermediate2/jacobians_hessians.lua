-- Port of pytorch/tutorials intermediate_source/jacobians_hessians.py (torch.func: jacrev,
-- jacfwd, hessian, vmap, vjp, jvp; Jacobians, Hessians and Hessian-vector products).
-- Run: nnrepl scripts/tutorials/intermediate2/jacobians_hessians.lua
-- Differences: functools.partial is a Lua closure; JH_TIMEIT=n sets the Timer's runs (default
-- 500, as the tutorial; the CI test uses 1) and JH_HESS_DIN=n the Hessian section's Din
-- (default 512). The batch-Jacobian check has an atol (see there). Python's bare `torch.allclose(...)` / `batch_hess.shape` cells are printed.
local torch = require "torch"
local F = torch.nn.functional
torch.manual_seed(0)

local function predict(weight, bias, x)
  return F.linear(x, weight, bias):tanh()
end

local D = 16
local weight = torch.randn(D, D)
local bias = torch.randn(D)
local x = torch.randn(D)

local unit_vectors
local function compute_jac(xp)
  local jacobian_rows = {}
  for i = 0, unit_vectors:size(0) - 1 do
    jacobian_rows[#jacobian_rows + 1] = torch.autograd.grad(predict(weight, bias, xp), xp, unit_vectors[i])[1]
  end
  return torch.stack(jacobian_rows)
end

local xp = x:clone():requires_grad_()
unit_vectors = torch.eye(D)

local jacobian = compute_jac(xp)

print(jacobian.shape)
print(jacobian[0])

local vmap, vjp = torch.func.vmap, torch.func.vjp

local _, vjp_fn = vjp(function(x) return predict(weight, bias, x) end, x)

local ft_jacobian = vmap(vjp_fn)(unit_vectors)[1] -- vjp_fn returns a list (a tuple)

assert(torch.allclose(ft_jacobian, jacobian))

local jacrev = torch.func.jacrev

ft_jacobian = jacrev(predict, { argnums = 2 })(weight, bias, x)

assert(torch.allclose(ft_jacobian, jacobian))

local function get_perf(first, first_descriptor, second, second_descriptor)
  local faster = second.times[1]
  local slower = first.times[1]
  local gain = (slower - faster) / slower
  if gain < 0 then gain = gain * -1 end
  local final_gain = gain * 100
  print(string.format(" Performance delta: %.4f percent improvement with %s ", final_gain, second_descriptor))
end

local Timer = torch.utils.benchmark.Timer
local runs = tonumber(os.getenv("JH_TIMEIT")) or 500
local function globals()
  return { globals = { compute_jac = compute_jac, xp = xp, jacrev = jacrev, jacfwd = torch.func.jacfwd,
    predict = predict, weight = weight, bias = bias, x = x } }
end

local without_vmap = Timer("compute_jac(xp)", globals())
local with_vmap = Timer("jacrev(predict, {argnums = 2})(weight, bias, x)", globals())

local no_vmap_timer = without_vmap:timeit(runs)
local with_vmap_timer = with_vmap:timeit(runs)

print(no_vmap_timer)
print(with_vmap_timer)

get_perf(no_vmap_timer, "without vmap", with_vmap_timer, "vmap")

local ft_jac_weight, ft_jac_bias = jacrev(predict, { argnums = { 0, 1 } })(weight, bias, x)

local jacfwd = torch.func.jacfwd

local Din = 32
local Dout = 2048
weight = torch.randn(Dout, Din)

bias = torch.randn(Dout)
x = torch.randn(Din)

print(weight.shape)

local using_fwd = Timer("jacfwd(predict, {argnums = 2})(weight, bias, x)", globals())
local using_bwd = Timer("jacrev(predict, {argnums = 2})(weight, bias, x)", globals())

local jacfwd_timing = using_fwd:timeit(runs)
local jacrev_timing = using_bwd:timeit(runs)

print(string.format("jacfwd time: %s", tostring(jacfwd_timing)))
print(string.format("jacrev time: %s", tostring(jacrev_timing)))

get_perf(jacfwd_timing, "jacfwd", jacrev_timing, "jacrev")

Din = 2048
Dout = 32
weight = torch.randn(Dout, Din)
bias = torch.randn(Dout)
x = torch.randn(Din)

using_fwd = Timer("jacfwd(predict, {argnums = 2})(weight, bias, x)", globals())
using_bwd = Timer("jacrev(predict, {argnums = 2})(weight, bias, x)", globals())

jacfwd_timing = using_fwd:timeit(runs)
jacrev_timing = using_bwd:timeit(runs)

print(string.format("jacfwd time: %s", tostring(jacfwd_timing)))
print(string.format("jacrev time: %s", tostring(jacrev_timing)))

get_perf(jacrev_timing, "jacrev", jacfwd_timing, "jacfwd")

local hessian = torch.func.hessian

Din = tonumber(os.getenv("JH_HESS_DIN")) or 512
Dout = 32
weight = torch.randn(Dout, Din)
bias = torch.randn(Dout)
x = torch.randn(Din)

local hess_api = hessian(predict, { argnums = 2 })(weight, bias, x)
local hess_fwdfwd = jacfwd(jacfwd(predict, { argnums = 2 }), { argnums = 2 })(weight, bias, x)
local hess_revrev = jacrev(jacrev(predict, { argnums = 2 }), { argnums = 2 })(weight, bias, x)

print(torch.allclose(hess_api, hess_fwdfwd))

local batch_size = 64
Din = 31
Dout = 33

weight = torch.randn(Dout, Din)
print(string.format("weight shape = %s", tostring(weight.shape)))

bias = torch.randn(Dout)

x = torch.randn(batch_size, Din)

local compute_batch_jacobian = vmap(jacrev(predict, { argnums = 2 }), { in_dims = { false, false, 0 } })
local batch_jacobian0 = compute_batch_jacobian(weight, bias, x)

local function predict_with_output_summed(weight, bias, x)
  return predict(weight, bias, x):sum(0)
end

local batch_jacobian1 = jacrev(predict_with_output_summed, { argnums = 2 })(weight, bias, x):movedim(1, 0)
-- atol added: the two ways sum in different orders, so float32 rounds differently (about 1e-6
-- here); PyTorch's tutorial passes without it on its kernels
assert(torch.allclose(batch_jacobian0, batch_jacobian1, { atol = 1e-5 }))

local compute_batch_hessian = vmap(hessian(predict, { argnums = 2 }), { in_dims = { false, false, 0 } })

local batch_hess = compute_batch_hessian(weight, bias, x)
print(batch_hess.shape)

local jvp, grad = torch.func.jvp, torch.func.grad

local function hvp(f, primals, tangents)
  return select(2, jvp(grad(f), primals, tangents))
end

local function f(x)
  return x:sin():sum()
end

x = torch.randn(2048)
local tangent = torch.randn(2048)

local result = hvp(f, { x }, { tangent })

local function hvp_revrev(f, primals, tangents)
  local _, vjp_fn = vjp(grad(f), table.unpack(primals))
  return vjp_fn(table.unpack(tangents))
end

local result_hvp_revrev = hvp_revrev(f, { x }, { tangent })
assert(torch.allclose(result, result_hvp_revrev[1]))
-- the Hessian of sum(sin(x)) is diag(-sin(x)): the hvp is -sin(x) * tangent
print(string.format("hvp is -sin(x) * tangent: %s", tostring(torch.allclose(result, -x:sin() * tangent, { atol = 1e-6 }))))
