-- DistributedDataParallel (gloo) against one process training on the whole batch.
-- Run by test_dist.sh through the launcher with 2 and 3 ranks.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local DDP = nn.parallel.DistributedDataParallel

H.raises(function() DDP(nn.Linear(2, 2)) end, "has not been initialized", "DDP before init_process_group")
dist.init_process_group("gloo", { timeout = 60 })
local rank, world = dist.get_rank(), dist.get_world_size()
local B, STEPS = 4, 20

local function mlp(seed, dtype)
  torch.manual_seed(seed)
  local m = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3))
  if dtype then m:to(dtype) end
  return m
end

local function same_params(a, b, tol, what)
  local pa, pb = a:parameters(), b:parameters()
  local ok = #pa == #pb
  local worst = 0
  for i = 1, math.min(#pa, #pb) do
    local d = H.maxdiff(pa[i]:detach(), pb[i]:detach())
    if d == nil then ok = false else worst = math.max(worst, d) end
  end
  return H.check(ok and worst <= tol, "%s: parameters differ by %s", what, tostring(worst))
end

local function flat(m)
  local parts = {}
  for i, p in ipairs(m:parameters()) do parts[i] = p:detach():reshape(-1) end
  return torch.cat(parts, 0)
end

-- every rank's copy equals rank 0's
local function same_everywhere(m, what)
  local mine = flat(m)
  local all = {}
  for r = 1, world do all[r] = torch.zeros(mine:numel()) end
  dist.all_gather(all, mine)
  local worst = 0
  for r = 2, world do worst = math.max(worst, H.maxdiff(all[r], all[1])) end
  H.check(worst == 0, "%s: ranks' parameters differ from rank 0's by %g", what, worst)
end

torch.manual_seed(7) -- the same data on every rank; each trains on its slice
local X, Y = torch.randn(STEPS, B * world, 6), torch.randn(STEPS, B * world, 3)
local function slice(t, step) return t[step]:narrow(0, rank * B, B) end

-- 1. seeded differently, every rank starts from rank 0's weights
for _, case in ipairs({ { cap = 0.0005, name = "small buckets" }, { cap = nil, name = "default buckets" },
  { cap = nil, keep = true, name = "default buckets, zero_grad(set_to_none=false)" },
  { cap = nil, keep = true, alias = true, name = "default buckets, a view of a .grad held" },
  { cap = 0.0005, view = true, name = "gradient_as_bucket_view" },
  { cap = 0.0005, view = true, keep = true, name = "gradient_as_bucket_view, zero_grad(set_to_none=false)" } }) do
  local net = mlp(1000 + rank)
  local model = DDP(net, { bucket_cap_mb = case.cap, gradient_as_bucket_view = case.view })
  same_params(net, mlp(1000), 0, case.name .. ": rank 0's initial weights after construction")
  H.check(model.module == net, "model.module is the wrapped module")
  local buckets = model:_buckets()
  if case.cap then
    H.check(#buckets > 1, "%s: several buckets (%d)", case.name, #buckets)
    H.check(buckets[1][1] == 5 and buckets[#buckets][#buckets[#buckets]] == 0, "buckets run from the last parameter to the first")
  else
    H.check(#buckets == 1, "one bucket for a small model (got %d)", #buckets)
  end
  local n = 0
  for _, b in ipairs(buckets) do n = n + #b end
  H.check(n == 6, "every parameter in exactly one bucket (%d)", n)

  -- 2. 20 steps of SGD with momentum == one process on the concatenated batches
  local opt = optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
  local held -- a view sharing a .grad's storage: that gradient is averaged through the bucket
  for step = 0, STEPS - 1 do
    opt:zero_grad(not case.keep)
    local loss = F.mse_loss(model(slice(X, step)), slice(Y, step))
    loss:backward()
    if case.alias and step == 0 then held = net:parameters()[1].grad:view(-1) end
    opt:step()
  end
  if held then
    H.check(H.maxdiff(held, net:parameters()[1].grad:view(-1)) == 0, "%s: the view sees the averaged gradient", case.name)
  end
  if case.view then -- the gradients of a bucket are views of one buffer, in bucket order
    local ps, b1 = net:parameters(), buckets[1]
    local a, z = ps[b1[1] + 1], ps[b1[2] + 1]
    H.check(z.grad:data_ptr() == a.grad:data_ptr() + a:numel() * 4, "%s: .grad views its bucket", case.name)
  end
  local ref = mlp(1000)
  local ropt = optim.SGD(ref:parameters(), { lr = 0.05, momentum = 0.9 })
  for step = 0, STEPS - 1 do
    ropt:zero_grad()
    F.mse_loss(ref(X[step]), Y[step]):backward()
    ropt:step()
  end
  same_params(net, ref, 2e-6, case.name .. ": DDP after 20 steps against one process on the whole batch")
  same_everywhere(net, case.name)
end

-- float64, Adam, a model seeded alike everywhere
do
  local net = mlp(5, torch.float64)
  local model = DDP(net)
  local opt = optim.Adam(model:parameters(), { lr = 1e-2 })
  local ref = mlp(5, torch.float64)
  local ropt = optim.Adam(ref:parameters(), { lr = 1e-2 })
  for step = 0, 9 do
    opt:zero_grad()
    F.mse_loss(model(slice(X, step):double()), slice(Y, step):double()):backward()
    opt:step()
    ropt:zero_grad()
    F.mse_loss(ref(X[step]:double()), Y[step]:double()):backward()
    ropt:step()
  end
  same_params(net, ref, 1e-10, "float64 with Adam")
end

-- 3. no_sync: local accumulation, then one averaging backward
do
  local net = mlp(11)
  local model = DDP(net)
  do
    local _ <close> = model:no_sync()
    F.mse_loss(model(slice(X, 0)), slice(Y, 0)):backward()
    local loc = mlp(11)
    F.mse_loss(loc(slice(X, 0)), slice(Y, 0)):backward()
    H.close(net[0].weight.grad, loc[0].weight.grad, 1e-6, "inside no_sync the gradient is this rank's own")
    F.mse_loss(model(slice(X, 1)), slice(Y, 1)):backward()
  end
  H.check(model.require_backward_grad_sync == true, "no_sync ends with its scope")
  F.mse_loss(model(slice(X, 2)), slice(Y, 2)):backward()
  local ref = mlp(11)
  for step = 0, 2 do F.mse_loss(ref(X[step]), Y[step]):backward() end
  local worst = 0
  for i, p in ipairs(net:parameters()) do worst = math.max(worst, H.maxdiff(p.grad, ref:parameters()[i].grad)) end
  H.check(worst < 1e-6, "no_sync twice then a synced backward averages all three (off by %g)", worst)
  model:no_sync(function() F.mse_loss(model(slice(X, 3)), slice(Y, 3)):backward() end)
  H.check(model.require_backward_grad_sync == true, "no_sync(fn) restores syncing")
end

-- 4. unused parameters
local Branchy = nn.Module:extend("Branchy")
function Branchy:__init()
  self.a = nn.Linear(4, 2)
  self.b = nn.Linear(4, 2)
  self.c = nn.Linear(2, 2)
end
function Branchy:forward(x) return self.c(self.a(x)) end
do
  torch.manual_seed(3)
  local net = Branchy()
  local model = DDP(net, { find_unused_parameters = true })
  local x = torch.randn(3 * world, 4)
  for _ = 1, 2 do
    model:zero_grad()
    model(x:narrow(0, 3 * rank, 3)):sum():backward()
  end
  H.check(net.b.weight.grad == nil and net.b.bias.grad == nil, "an unused parameter's grad stays nil")
  torch.manual_seed(3)
  local ref = Branchy()
  ref(x):sum():backward()
  H.close(net.a.weight.grad, ref.a.weight.grad / world, 1e-6, "find_unused_parameters: used parameters averaged")

  torch.manual_seed(3)
  local strict = DDP(Branchy())
  strict(x:narrow(0, 3 * rank, 3)):sum():backward()
  H.raises(function() strict(x) end, "Expected to have finished reduction in the prior iteration", "unused parameters without find_unused_parameters")
end

-- 5. buffers follow rank 0 at every forward; state_dict keys
do
  torch.manual_seed(2)
  local net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
  local model = DDP(net)
  net[1].running_mean:fill_(rank + 1)
  model:eval()
  local _ <close> = torch.no_grad()
  model(torch.randn(2, 3))
  H.close(net[1].running_mean, torch.ones(4), 0, "buffers broadcast from rank 0 at forward")
  local keys = model:state_dict():keys()
  H.check(keys[1] == "module.0.weight" and keys[3] == "module.1.weight", "state_dict keys are prefixed module. (%s)", keys[1])
  H.check(tostring(model):find("DistributedDataParallel(\n  (module): Sequential(", 1, true) ~= nil, "printed as PyTorch")
end

dist.destroy_process_group()
H.report()
