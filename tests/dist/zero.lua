-- ZeroRedundancyOptimizer against the plain optimizer: DDP on each rank's slice of the batch
-- vs one model on the whole batch. Run by test_dist.sh with 2 and 3 ranks; `nccl` runs on GPUs.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local ZeRO = dist.optim.ZeroRedundancyOptimizer
H.raises(function() ZeRO({ torch.ones(2) }, { optimizer_class = optim.SGD, lr = 0.1 }) end, "has not been initialized",
  "ZeroRedundancyOptimizer before init_process_group")
local backend, dev = H.init(arg[1])
local DDP = nn.parallel.DistributedDataParallel
local rank, world = dist.get_rank(), dist.get_world_size()
local B, STEPS = 3, 6

local function mlp()
  torch.manual_seed(4)
  return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)):to(dev) -- 32, 8, 16, 2 elements
end

torch.manual_seed(9)
local X, Y = torch.randn(STEPS, B * world, 4):to(dev), torch.randn(STEPS, B * world, 2):to(dev)

local function max_param_diff(a, b)
  local pa, pb, worst = a:parameters(), b:parameters(), 0
  for i = 1, #pa do worst = math.max(worst, H.maxdiff(pa[i]:detach(), pb[i]:detach())) end
  return worst
end

-- steps of DDP + ZeRO on the slices and of the plain optimizer on the whole batch
local function run(make_plain, zero_opts, steps, lr_change)
  local net, ref = mlp(), mlp()
  local model = DDP(net)
  local opt = ZeRO(model:parameters(), zero_opts)
  local plain = make_plain(ref:parameters())
  for s = 0, steps - 1 do
    if lr_change and s == steps // 2 then
      opt.param_groups[1].lr = lr_change
      plain.param_groups[1].lr = lr_change
    end
    opt:zero_grad()
    F.mse_loss(model(X[s]:narrow(0, rank * B, B)), Y[s]:narrow(0, rank * B, B)):backward()
    opt:step()
    plain:zero_grad()
    F.mse_loss(ref(X[s]), Y[s]):backward()
    plain:step()
  end
  return net, ref, opt, plain, model
end

-- 1. the partition: sorted by size, each to the least loaded rank (worked out by hand)
do
  local net = mlp()
  local opt = ZeRO(net:parameters(), { optimizer_class = optim.SGD, lr = 0.1 })
  local owners = {}
  for i, p in ipairs(net:parameters()) do owners[i] = opt:_owner(p) end
  local want = world == 2 and { 0, 1, 1, 1 } or world == 3 and { 0, 2, 1, 2 } or nil
  if want then
    H.check(table.concat(owners, ",") == table.concat(want, ","), "owners %s, expected %s", table.concat(owners, ","), table.concat(want, ","))
  end
  local mine = opt:_partition_parameters()[rank + 1][1].params
  local n = 0
  for i, o in ipairs(owners) do if o == rank then n = n + 1 end end
  H.check(#mine == n and #opt.optim.param_groups[1].params == n, "the local optimizer has this rank's %d parameters", n)
  H.check(opt.param_groups[1].lr == 0.1 and opt.param_groups[1].momentum == 0 and opt.param_groups[1].dampening == 0,
    "param_groups show the optimizer's options")
  H.check(#opt.param_groups[1].params == 4, "param_groups hold every parameter")
end

-- 2. SGD with momentum and Adam, as the plain optimizer; state only for this rank's shard
for _, case in ipairs({
  { name = "SGD momentum", cls = optim.SGD, opts = { lr = 0.1, momentum = 0.9 }, keys = { "momentum_buffer" } },
  { name = "Adam", cls = optim.Adam, opts = { lr = 0.01, weight_decay = 0.01 }, keys = { "exp_avg", "exp_avg_sq" } },
  { name = "Adam, parameters_as_bucket_view", cls = optim.Adam, opts = { lr = 0.01 }, keys = { "exp_avg" }, view = true },
}) do
  local zopts = { optimizer_class = case.cls, parameters_as_bucket_view = case.view }
  for k, v in pairs(case.opts) do zopts[k] = v end
  local net, ref, opt, plain = run(function(ps) return case.cls(ps, case.opts) end, zopts, STEPS, 0.02)
  local d = max_param_diff(net, ref)
  H.check(d < 2e-5, "%s: parameters differ from the plain optimizer's by %g", case.name, d)
  local owned, held = 0, 0
  for i, p in ipairs(net:parameters()) do
    local s = rawget(opt.optim.state, p) or opt.optim.state[p]
    if opt:_owner(p) == rank then
      owned = owned + 1
      if s then
        held = held + 1
        local ps = plain.state[ref:parameters()[i]]
        for _, k in ipairs(case.keys) do
          local dd = H.maxdiff(s[k], ps[k])
          H.check(dd and dd < 2e-5, "%s: state %s of parameter %d differs by %s", case.name, k, i, tostring(dd))
        end
      end
    else
      H.check(s == nil, "%s: rank %d holds no state for parameter %d (rank %d's)", case.name, rank, i, opt:_owner(p))
    end
  end
  H.check(held == owned, "%s: state for each of the %d parameters of the shard (%d)", case.name, owned, held)

  -- 3. state_dict: consolidated on rank 0 only; the same as the plain optimizer's
  if world > 1 and rank ~= 0 then
    H.raises(function() opt:state_dict() end, "Please call `consolidate_state_dict(to=" .. rank .. ")`", "state_dict before consolidating")
  end
  opt:consolidate_state_dict(0)
  if rank == 0 then
    local sd, want = opt:state_dict(), plain:state_dict()
    local n = 0
    for k, s in pairs(want.state) do
      n = n + 1
      for _, key in ipairs(case.keys) do
        local dd = sd.state[k] and H.maxdiff(sd.state[k][key], s[key])
        H.check(dd and dd < 2e-5, "%s: state_dict state[%d].%s differs by %s", case.name, k, key, tostring(dd))
      end
      if case.cls == optim.Adam then
        local st = sd.state[k].step
        if torch.is_tensor(st) then st = st:item() end
        H.check(st == STEPS, "%s: step %s", case.name, tostring(st))
      end
    end
    H.check(n == 4, "four parameters with state")
    H.check(sd.param_groups[1].lr == 0.02 and #sd.param_groups[1].params == 4 and sd.param_groups[1].params[1] == 0,
      "%s: param_groups in the state dict", case.name)
  elseif world > 1 then
    H.raises(function() opt:state_dict() end, "has not been consolidated on this rank", "state_dict on a rank it was not sent to")
  end

  -- 4. load_state_dict: every rank loads the whole dict; training goes on as the original's
  local full
  for r = 0, world - 1 do
    opt:consolidate_state_dict(r)
    if r == rank then full = opt:state_dict() end
  end
  local net2 = mlp()
  do
    local _ <close> = torch.no_grad()
    for i, p in ipairs(net2:parameters()) do p:copy_(net:parameters()[i]) end
  end
  local model2 = DDP(net2)
  local opt2 = ZeRO(model2:parameters(), { optimizer_class = case.cls, lr = 0.5, parameters_as_bucket_view = case.view })
  opt2:load_state_dict(full)
  H.check(opt2.param_groups[1].lr == 0.02 and opt2.optim.param_groups[1].lr == 0.02, "%s: the loaded lr", case.name)
  for i, p in ipairs(net2:parameters()) do
    local s = opt2.optim.state[p]
    H.check((s ~= nil) == (opt2:_owner(p) == rank), "%s: after loading, state for parameter %d only on its owner", case.name, i)
  end
  local model1 = DDP(net, { init_sync = false })
  for s = 0, 2 do
    for _, pair in ipairs({ { model1, opt }, { model2, opt2 } }) do
      pair[2]:zero_grad()
      F.mse_loss(pair[1](X[s]:narrow(0, rank * B, B)), Y[s]:narrow(0, rank * B, B)):backward()
      pair[2]:step()
    end
  end
  H.check(max_param_diff(net, net2) < 1e-6, "%s: after load_state_dict, the same steps (%g)", case.name, max_param_diff(net, net2))
end

-- 5. add_param_group: the earlier groups keep their owners, the new one is split too
do
  local a, b = mlp(), mlp()
  local pa, pb = a:parameters(), b:parameters()
  local opt = ZeRO({ pa[1], pa[2] }, { optimizer_class = optim.SGD, lr = 0.1, momentum = 0.5 })
  local before = { opt:_owner(pa[1]), opt:_owner(pa[2]) }
  opt:add_param_group({ params = { pa[3], pa[4] }, lr = 0.05 })
  H.check(opt:_owner(pa[1]) == before[1] and opt:_owner(pa[2]) == before[2], "owners kept after add_param_group")
  H.check(#opt.param_groups == 2 and opt.param_groups[2].momentum == 0.5 and opt.param_groups[2].lr == 0.05, "the new group's options")
  H.check(#opt.optim.param_groups == 2, "the local optimizer got the new group")
  local plain = optim.SGD({ pb[1], pb[2] }, { lr = 0.1, momentum = 0.5 })
  plain:add_param_group({ params = { pb[3], pb[4] }, lr = 0.05 })
  for s = 0, 2 do
    opt:zero_grad(); F.mse_loss(a(X[s]), Y[s]):backward(); opt:step()
    plain:zero_grad(); F.mse_loss(b(X[s]), Y[s]):backward(); plain:step()
  end
  H.check(max_param_diff(a, b) < 1e-6, "two groups, as the plain optimizer (%g)", max_param_diff(a, b))
  opt:zero_grad()
  H.check(pa[3].grad == nil, "zero_grad clears every parameter's gradient")
end

-- 6. a closure's loss comes back
do
  local net = mlp()
  local opt = ZeRO(net:parameters(), optim.SGD, { lr = 0.1 }) -- the class as a positional argument
  local loss = opt:step(function()
    opt:zero_grad()
    local l = F.mse_loss(net(X[0]), Y[0])
    l:backward()
    return l
  end)
  H.check(torch.is_tensor(loss) and loss:item() > 0, "step(closure) returns the loss")
end

-- 7. errors
local p = mlp():parameters()
H.raises(function() ZeRO(p, { lr = 0.1 }) end, "optimizer_class is required", "no optimizer_class")
H.raises(function() ZeRO(p, { optimizer_class = 3 }) end, "optimizer_class must be an optimizer class", "a number as optimizer_class")
H.raises(function() ZeRO(p, { optimizer_class = optim.SGD, lr = 0.1, overlap_with_ddp = true }) end, "overlap_with_ddp=true is not supported",
  "overlap_with_ddp")
H.raises(function() ZeRO(p[1], { optimizer_class = optim.SGD }) end, "params argument should be an iterable of Tensors, but got", "a tensor as params")
H.raises(function() ZeRO({}, { optimizer_class = optim.SGD }) end, "ZeroRedundancyOptimizer did not receive any parameters", "no parameters")
H.raises(function() ZeRO({ p[1], { params = { p[2] } } }, { optimizer_class = optim.SGD }) end, "should be an iterable of Tensors or dicts",
  "tensors and dicts mixed")
H.raises(function() ZeRO({ p[1], torch.ones(2, { dtype = torch.float64 }):to(dev) }, { optimizer_class = optim.SGD }) end,
  "only supports using the same dense type for all parameters", "two dtypes")
H.raises(function() ZeRO(p, { optimizer_class = optim.SGD, lr = 0.1, momentun = 0.9 }) end, "momentun", "an unknown option of the optimizer")
local z = ZeRO(p, { optimizer_class = optim.SGD, lr = 0.1 })
H.raises(function() z:consolidate_state_dict(world) end, "to must be a rank of the group", "consolidate to a rank out of range")
H.raises(function() z:load_state_dict({ state = {}, param_groups = {} }) end, "different number of parameter groups", "load of a wrong dict")
H.raises(function() z:load_state_dict(3) end, "expects a table with 'state' and 'param_groups'", "load of a number")

H.report()
