-- Port of pytorch/tutorials intermediate_source/neural_tangent_kernels.py (the empirical NTK of
-- a CNN by Jacobian contraction and by NTK-vector products, with torch.func).
-- Run: nnrepl scripts/tutorials/intermediate2/neural_tangent_kernels.lua
-- Differences: runs on CUDA when there is one, else on the CPU (the tutorial needs CUDA).
-- NTK_TRAIN=n / NTK_TEST=n set the numbers of points (default 20 and 5, as the tutorial).
-- jvp here is forward-mode AD on dual tensors (bindings/lua/jvp_forward.lua), as PyTorch's.
-- On a GPU, cuDNN's TF32 convolutions (the default, as in PyTorch) part the two methods by more
-- than the atol=1e-5 the tutorial asserts: run with NVIDIA_TF32_OVERRIDE=0 (or set
-- torch.backends.cudnn.allow_tf32 = false) to compare them in full float32.
local torch = require "torch"
local nn = torch.nn
local functional_call, vmap, vjp, jvp, jacrev =
  torch.func.functional_call, torch.func.vmap, torch.func.vjp, torch.func.jvp, torch.func.jacrev
local device = torch.cuda.is_available() and "cuda" or "cpu"

local CNN = nn.Module:extend("CNN")
function CNN:__init()
  self.conv1 = nn.Conv2d(3, 32, { 3, 3 })
  self.conv2 = nn.Conv2d(32, 32, { 3, 3 })
  self.conv3 = nn.Conv2d(32, 32, { 3, 3 })
  self.fc = nn.Linear(21632, 10)
end
function CNN:forward(x)
  x = self.conv1(x)
  x = x:relu()
  x = self.conv2(x)
  x = x:relu()
  x = self.conv3(x)
  x = x:flatten(1)
  x = self.fc(x)
  return x
end

local x_train = torch.randn(tonumber(os.getenv("NTK_TRAIN")) or 20, 3, 32, 32, { device = device })
local x_test = torch.randn(tonumber(os.getenv("NTK_TEST")) or 5, 3, 32, 32, { device = device })

local net = CNN():to(device)

local params = {}
for k, v in net:named_parameters() do params[k] = v:detach() end

local function fnet_single(params, x)
  return functional_call(net, params, { x:unsqueeze(0) }):squeeze(0)
end

-- the Jacobians of fnet_single for each point of x, flattened per parameter, in a fixed order
local function jacobians(fnet_single, params, x)
  local jac = vmap(jacrev(fnet_single), { false, 0 })(params, x)
  local out = {}
  for name in net:named_parameters() do out[#out + 1] = jac[name]:flatten(2) end
  return out
end

local function empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute)
  compute = compute or "full"
  local jac1 = jacobians(fnet_single, params, x1)
  local jac2 = jacobians(fnet_single, params, x2)

  local einsum_expr
  if compute == "full" then
    einsum_expr = "Naf,Mbf->NMab"
  elseif compute == "trace" then
    einsum_expr = "Naf,Maf->NM"
  elseif compute == "diagonal" then
    einsum_expr = "Naf,Maf->NMa"
  else
    assert(false)
  end

  local parts = {}
  for i = 1, #jac1 do parts[i] = torch.einsum(einsum_expr, jac1[i], jac2[i]) end
  local result = torch.stack(parts)
  result = result:sum(0)
  return result
end

local result = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
print(result.shape)

result = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test, "trace")
print(result.shape)

local function empirical_ntk_ntk_vps(func, params, x1, x2, compute)
  compute = compute or "full"
  local function get_ntk(x1, x2)
    local function func_x1(params) return func(params, x1) end
    local function func_x2(params) return func(params, x2) end

    local output, vjp_fn = vjp(func_x1, params)

    local function get_ntk_slice(vec)
      local vjps = vjp_fn(vec)
      local _, jvps = jvp(func_x2, { params }, vjps)
      return jvps
    end

    local basis = torch.eye(output:numel(), { dtype = output.dtype, device = output.device }):view(output:numel(), -1)
    return vmap(get_ntk_slice)(basis)
  end

  local result = vmap(vmap(get_ntk, { false, 0 }), { 0, false })(x1, x2)

  if compute == "full" then return result end
  if compute == "trace" then return torch.einsum("NMKK->NM", result) end
  if compute == "diagonal" then return torch.einsum("NMKK->NMK", result) end
end

local result_from_jacobian_contraction = empirical_ntk_jacobian_contraction(fnet_single, params, x_test, x_train)
local result_from_ntk_vps = empirical_ntk_ntk_vps(fnet_single, params, x_test, x_train)
assert(torch.allclose(result_from_jacobian_contraction, result_from_ntk_vps, { atol = 1e-5 }))
print(string.format("both methods agree: %s", tostring(result_from_ntk_vps.shape)))
-- the trace of each 10x10 block, both ways
print(torch.allclose(empirical_ntk_ntk_vps(fnet_single, params, x_test, x_train, "trace"),
  empirical_ntk_jacobian_contraction(fnet_single, params, x_test, x_train, "trace"), { atol = 1e-4 }))
