-- The neural-tangent-kernels tutorial's two methods (scripts/tutorials/intermediate2/
-- neural_tangent_kernels.lua): the empirical NTK of its CNN between N and M points of 3 x 32 x 32,
-- by Jacobian contraction (vmap(jacrev) then einsum) and by NTK-vector products
-- (vmap(vmap(vjp ... jvp))), "full" mode. bench/ntk.py is PyTorch's side; bench/ratio_run.sh ntk
-- runs both. Wall-clock after a warm-up, synchronised, median of 5.
--   nnrepl bench/ntk.lua [N=20] [M=5]
-- Prints "ntk <method> <N>x<M> us <t>" and which path the last vmap took.
local nn = torch.nn
local func = torch.func
local timing = require "gpu_step_timing" -- bench/gpu_step_timing.lua, next to this file
local N, M = tonumber(arg[1]) or 20, tonumber(arg[2]) or 5
local device = torch.cuda.is_available() and "cuda" or "cpu"
torch.manual_seed(0)

local CNN = nn.Module:extend("CNN")
function CNN:__init()
  self.conv1 = nn.Conv2d(3, 32, { 3, 3 })
  self.conv2 = nn.Conv2d(32, 32, { 3, 3 })
  self.conv3 = nn.Conv2d(32, 32, { 3, 3 })
  self.fc = nn.Linear(21632, 10)
end
function CNN:forward(x)
  x = self.conv2(self.conv1(x):relu()):relu()
  return self.fc(self.conv3(x):flatten(1))
end

local net = CNN():to(device)
local x1 = torch.randn(N, 3, 32, 32, { device = device })
local x2 = torch.randn(M, 3, 32, 32, { device = device })
local params, names = {}, {}
for k, v in net:named_parameters() do params[k] = v:detach(); names[#names + 1] = k end
local function fnet_single(p, x) return func.functional_call(net, p, { x:unsqueeze(0) }):squeeze(0) end

local function by_jacobians()
  local j1 = func.vmap(func.jacrev(fnet_single), { false, 0 })(params, x1)
  local j2 = func.vmap(func.jacrev(fnet_single), { false, 0 })(params, x2)
  local parts = {}
  for i, k in ipairs(names) do parts[i] = torch.einsum("Naf,Mbf->NMab", j1[k]:flatten(2), j2[k]:flatten(2)) end
  return torch.stack(parts):sum(0)
end

local function by_ntk_vps()
  local function get_ntk(a, b)
    local out, vjp_fn = func.vjp(function(p) return fnet_single(p, a) end, params)
    local function slice(vec)
      local _, jvps = func.jvp(function(p) return fnet_single(p, b) end, { params }, vjp_fn(vec))
      return jvps
    end
    return func.vmap(slice)(torch.eye(out:numel(), { dtype = out.dtype, device = out.device }))
  end
  return func.vmap(func.vmap(get_ntk, { false, 0 }), { 0, false })(x1, x2)
end

local function sync() if device == "cuda" then torch.cuda.synchronize() end end
for _, c in ipairs({ { "jacobian_contraction", by_jacobians }, { "ntk_vps", by_ntk_vps } }) do
  local fn = c[2]
  fn(); sync()
  local ms = timing.wall_timed(function() fn(); sync() end, 1, 5)
  print(string.format("ntk %s %dx%d us %.1f", c[1], N, M, ms * 1e3))
  print(string.format("%s: vmap path %s", c[1], tostring(func._vmap_last)))
end
local a, b = by_jacobians(), by_ntk_vps()
print(string.format("largest difference between the methods: %.3g", (a - b):abs():max():item()))
