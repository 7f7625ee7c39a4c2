-- Join with DistributedDataParallel (and ZeroRedundancyOptimizer): ranks with different numbers
-- of batches, against a plain model trained in this script on the batches of the ranks still
-- active at each step. Run by test_dist.sh with 2 and 3 ranks; `nccl` as argument runs on GPUs.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local backend, dev = H.init(arg[1])
local dist = torch.distributed
local DDP = nn.parallel.DistributedDataParallel
local Join = dist.algorithms.Join
local ZeRO = dist.optim.ZeroRedundancyOptimizer
local rank, world = dist.get_rank(), dist.get_world_size()
local LR = 0.1

local function mlp()
  torch.manual_seed(3)
  return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)):to(dev)
end

-- rank r has 2 + 2r batches; every rank knows everyone's data (the same seed)
local function nbatches(r) return 2 + 2 * r end
torch.manual_seed(11)
local data = {}
for r = 0, world - 1 do
  data[r] = {}
  for i = 1, nbatches(r) do data[r][i] = { torch.randn(3, 4):to(dev), torch.randn(3, 2):to(dev) } end
end
local function loss_of(m, b) return F.mse_loss(m(b[1]), b[2]) end

-- the plain reference: at step i the active ranks' losses summed, divided by the world size
-- (divide_by_initial) or by the number of active ranks
local function reference(divide_by_initial, momentum)
  local m = mlp()
  local opt = optim.SGD(m:parameters(), { lr = LR, momentum = momentum or 0 })
  for i = 1, nbatches(world - 1) do
    opt:zero_grad()
    local total, active = nil, 0
    for r = 0, world - 1 do
      if i <= nbatches(r) then
        active = active + 1
        local l = loss_of(m, data[r][i])
        total = total and total + l or l
      end
    end
    total = total / (divide_by_initial and world or active)
    total:backward()
    opt:step()
  end
  return m
end

local function same_params(m, ref, tol, what)
  local pa, pb = m:parameters(), ref:parameters()
  local worst = 0
  for i = 1, #pa do worst = math.max(worst, H.maxdiff(pa[i]:detach(), pb[i]:detach())) end
  H.check(worst <= tol, "%s: parameters differ from the reference by %g", what, worst)
end

-- every rank holds rank 0's tensors
local function same_everywhere(ts, what)
  for i, t in ipairs(ts) do
    local r0 = t:detach():clone()
    dist.broadcast(r0, 0)
    H.check(H.maxdiff(t:detach(), r0) == 0, "%s: tensor %d differs from rank 0's", what, i)
  end
end

-- rank r's batches, counted in count.n as they are done; returns the count
local function train(model, opt, r, count)
  count = count or {}
  count.n = 0
  for i = 1, nbatches(r) do
    opt:zero_grad()
    loss_of(model, data[r][i]):backward()
    opt:step()
    count.n = count.n + 1
  end
  return count.n
end

-- 1. DDP:join(): uneven batch counts finish; the averages divide by the initial world size
do
  local net = mlp()
  local model = DDP(net)
  local opt = optim.SGD(model:parameters(), { lr = LR })
  local n
  do
    local _ <close> = model:join()
    n = train(model, opt, rank)
  end
  H.check(n == nbatches(rank), "rank %d ran its %d batches", rank, n)
  same_params(net, reference(true), 2e-5, "join(), divide by the initial world size")
  same_everywhere(net:parameters(), "join()")
  H.check(model._join_config.enable == false, "the Join's config is dropped at its end")
end

-- 2. divide_by_initial_world_size=false, Join's function form, momentum
do
  local net = mlp()
  local model = DDP(net)
  local opt = optim.SGD(model:parameters(), { lr = LR, momentum = 0.9 })
  local r = Join({ model }, { divide_by_initial_world_size = false }, function() return train(model, opt, rank) end)
  H.check(r == nbatches(rank), "the function's result comes back (%s)", tostring(r))
  same_params(net, reference(false, 0.9), 2e-5, "divide_by_initial_world_size=false")
end

-- 3. find_unused_parameters, small buckets (several all-reduces to shadow)
do
  local net = mlp()
  local model = DDP(net, { find_unused_parameters = true, bucket_cap_mb = 0.0001 })
  H.check(#model:_buckets() > 1, "several buckets (%d)", #model:_buckets())
  local opt = optim.SGD(model:parameters(), { lr = LR })
  model:join({ divide_by_initial_world_size = true }, function() train(model, opt, rank) end)
  same_params(net, reference(true), 2e-5, "find_unused_parameters, small buckets")
end

-- 3b. with a communication hook: the joined ranks run it on zeros (in the reducer, or a Lua one)
local default_hooks = dist.algorithms.ddp_comm_hooks.default_hooks
for _, case in ipairs({ { "allreduce_hook", default_hooks.allreduce_hook },
  { "a Lua hook", function(state, bucket) return default_hooks.allreduce_hook(state, bucket) end } }) do
  local net = mlp()
  local model = DDP(net, { bucket_cap_mb = 0.0001 })
  model:register_comm_hook(nil, case[2])
  local opt = optim.SGD(model:parameters(), { lr = LR })
  model:join(function() train(model, opt, rank) end)
  same_params(net, reference(true), 2e-5, "join with " .. case[1])
end

-- 4. buffers (BatchNorm): broadcast from an active rank each step; all ranks end equal
do
  torch.manual_seed(5)
  local net = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 2)):to(dev)
  local model = DDP(net)
  local opt = optim.SGD(model:parameters(), { lr = LR })
  do
    local _ <close> = Join({ model })
    train(model, opt, rank)
  end
  same_everywhere(net:parameters(), "BatchNorm model, parameters")
  same_everywhere(net:buffers(), "BatchNorm model, buffers")
  local bn = net[1]
  H.check(bn.num_batches_tracked:item() == nbatches(world - 1), "num_batches_tracked %d: the last rank's count",
    bn.num_batches_tracked:item())
end

-- 5. throw_on_early_termination: every rank raises once one has run out
do
  local model = DDP(mlp())
  local opt = optim.SGD(model:parameters(), { lr = LR })
  local count = {}
  local ok, err = pcall(function()
    local _ <close> = model:join({ throw_on_early_termination = true })
    train(model, opt, rank, count)
  end)
  local n = count.n
  H.check(not ok, "rank %d raised", rank)
  if rank == 0 then
    H.check(tostring(err):find("Rank 0 exhausted all inputs.", 1, true) ~= nil, "rank 0: %s", tostring(err))
  else
    H.check(tostring(err):find("Detected at least one rank that exhausted inputs. Throwing across all ranks.", 1, true) ~= nil,
      "rank %d: %s", rank, tostring(err))
  end
  H.check(n == nbatches(0), "rank %d stopped after %d batches, as many as rank 0 has", rank, n)
  -- every rank left at the same point: a collective still matches
  local t = torch.ones(1):to(dev)
  dist.all_reduce(t)
  H.check(t:item() == world, "the ranks still meet after the raise")
end

-- 6. DDP and ZeroRedundancyOptimizer joined: joined ranks keep stepping their shard
do
  local net = mlp()
  local model = DDP(net)
  local opt = ZeRO(model:parameters(), { optimizer_class = optim.SGD, lr = LR, momentum = 0.9 })
  do
    local _ <close> = Join({ model, opt })
    train(model, opt, rank)
  end
  same_params(net, reference(true, 0.9), 2e-5, "DDP + ZeroRedundancyOptimizer joined")
  same_everywhere(net:parameters(), "DDP + ZeroRedundancyOptimizer joined")
end

-- 7. enable=false: no shadowing (even batch counts, so nothing hangs)
do
  local net = mlp()
  local model = DDP(net)
  local opt = optim.SGD(model:parameters(), { lr = LR })
  do
    local _ <close> = model:join({ enable = false })
    for i = 1, 2 do
      opt:zero_grad()
      loss_of(model, data[rank][i]):backward()
      opt:step()
    end
  end
  same_everywhere(net:parameters(), "enable=false, even inputs")
end

-- 8. a user-defined Joinable: its hooks run once per missing iteration, post_hook once
do
  local Counter = dist.algorithms.Joinable:extend("Counter")
  local CounterHook = dist.algorithms.JoinHook:extend("CounterHook")
  function Counter:__init() dist.algorithms.Joinable.__init(self); self.main, self.post = 0, nil end
  function Counter:join_hook(opts) return CounterHook(self) end
  function Counter:join_device() return dev end
  function Counter:join_process_group() return dist.group.WORLD end
  function CounterHook:__init(c) self.c = c end
  function CounterHook:main_hook()
    self.c.main = self.c.main + 1
    local t = torch.zeros(1):to(dev)
    dist.all_reduce(t) -- the active ranks' all_reduce of their 1
  end
  function CounterHook:post_hook(last) self.c.post = last end
  local c = Counter()
  do
    local _ <close> = Join({ c })
    for _ = 1, nbatches(rank) do
      Join.notify_join_context(c)
      local t = torch.ones(1):to(dev)
      dist.all_reduce(t)
    end
  end
  H.check(c.main == nbatches(world - 1) - nbatches(rank), "rank %d shadowed %d iterations", rank, c.main)
  H.check(c.post == (rank == world - 1), "is_last_joiner on rank %d: %s", rank, tostring(c.post))
end

-- 9. errors
H.raises(function() Join({}) end, "The join context manager requires at least one joinable", "Join({})")
H.raises(function() Join({ 42 }) end, "is not a Joinable", "Join of a number")
H.raises(function() DDP(mlp()):join({ divide = true }) end, "unknown keyword 'divide'", "join's unknown option")
H.raises(function() Join.notify_join_context({}) end, "constructor calls the Joinable constructor", "notify without a config")
if world > 1 then
  local sub = dist.new_group({ 0, 1 })
  local m = DDP(mlp())
  if rank <= 1 then
    local z = ZeRO(m:parameters(), { optimizer_class = optim.SGD, lr = 0.1, process_group = sub })
    H.raises(function() Join({ m, z }) end, "Using join context manager with multiple process groups", "two groups")
  end
end

H.report()
