-- Local SGD: post_localSGD_hook (gradients averaged before start_localSGD_iter, then over a
-- subgroup or not at all), model averaging (utils.average_parameters, PeriodicModelAverager,
-- HierarchicalModelAverager) and PostLocalSGDOptimizer, against every rank's training worked
-- out here in float64. Run by test_dist.sh with 2, 3 and 4 ranks (gloo, CPU) and with `nccl` as
-- argument on every GPU (each rank on cuda:LOCAL_RANK).
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local DDP = nn.parallel.DistributedDataParallel
local post = dist.algorithms.ddp_comm_hooks.post_localSGD_hook
local averaging = dist.algorithms.model_averaging
local averagers = averaging.averagers

local backend, dev = H.init(arg[1])
local rank, world = dist.get_rank(), dist.get_world_size()

-- loss = sum((w - x)^2) / 2 + sum((v - y)^2) / 2: the gradients are w - x and v - y
local Quad = nn.Module:extend("Quad")
function Quad:__init()
  self.w = nn.Parameter(torch.zeros(4, 3))
  self.v = nn.Parameter(torch.zeros(5))
end
function Quad:forward(x) return ((self.w - x.w) ^ 2):sum() / 2 + ((self.v - x.v) ^ 2):sum() / 2 end

local function inputs(r, t)
  torch.manual_seed(500 * t + r)
  return { w = torch.randn(4, 3):to(dev), v = torch.randn(5):to(dev) }
end

local function f64(t) return t:cpu():double() end

local function wrap(hook, state)
  local net = Quad():to(dev)
  local model = DDP(net)
  if hook then model:register_comm_hook(state, hook) end
  return net, model
end

-- the mean of values[r] over the ranks in list (0-based ranks)
local function mean_over(values, list)
  local s
  for _, r in ipairs(list) do s = s and s + values[r + 1] or values[r + 1]:clone() end
  return s / #list
end

local everyone = {}
for r = 0, world - 1 do everyone[#everyone + 1] = r end

-- ---- post_localSGD_hook: plain averages before start_localSGD_iter, then local or subgroup ----
do
  -- subgroups: {0, 1} and the rest with 3 or 4 ranks; each rank alone with 2
  local lists = world == 2 and { { 0 }, { 1 } } or { { 0, 1 }, {} }
  for r = 2, world - 1 do table.insert(lists[2], r) end
  local subgroup = dist.new_subgroups_by_enumeration(lists)
  local mine
  for _, l in ipairs(lists) do
    for _, r in ipairs(l) do if r == rank then mine = l end end
  end
  for _, case in ipairs({ { "no gradient all-reduce after the start", false, nil, { rank } },
    { "a subgroup's all-reduce after the start", true, subgroup, mine } }) do
    local name, allreduce, group, members = case[1], case[2], case[3], case[4]
    local state = post.PostLocalSGDState(nil, group, 2, allreduce)
    local net, model = wrap(post.post_localSGD_hook, state)
    for t = 1, 4 do
      net:zero_grad()
      model(inputs(rank, t)):backward()
      local gw, gv = {}, {}
      for r = 0, world - 1 do -- the parameters are zeros: the gradients are -x
        local x = inputs(r, t)
        gw[r + 1], gv[r + 1] = -f64(x.w), -f64(x.v)
      end
      local list = t <= 2 and everyone or members
      H.close(net.w.grad, mean_over(gw, list), 1e-6, "%s, step %d: w's gradient over %d ranks", name, t, #list)
      H.close(net.v.grad, mean_over(gv, list), 1e-6, "%s, step %d: v's gradient", name, t)
    end
    H.check(state.iter == 2, "%s: iter stops at start_localSGD_iter (%d)", name, state.iter)
  end
  -- without a subgroup the hook makes one per node: dist.new_subgroups() needs GPUs
  if not torch.cuda.is_available() then
    local state = post.PostLocalSGDState(nil, nil, 1)
    local net, model = wrap(post.post_localSGD_hook, state)
    model(inputs(rank, 1)):backward()
    net:zero_grad()
    H.raises(function() model(inputs(rank, 2)):backward() end, "group_size is needed without GPUs", "the default subgroup on a CPU machine")
  end
end

-- ---- utils.average_parameters ----
do
  local a = torch.full({ 3 }, rank + 1.0, { device = dev })
  local b = torch.full({ 2, 2 }, 10.0 * rank, { device = dev }):double()
  averaging.utils.average_parameters({ a, b })
  H.close(a, torch.full({ 3 }, (world + 1) / 2), 1e-6, "average_parameters: a")
  H.close(b, torch.full({ 2, 2 }, 10.0 * (world - 1) / 2), 1e-12, "average_parameters: b, float64")
  H.check(b.dtype == torch.float64 and a.dtype == torch.float32, "average_parameters keeps the dtypes")
  -- a group of ranks 0 and 1: the others keep theirs
  local g = dist.new_group({ 0, 1 })
  local c = torch.full({ 2 }, rank * 1.0, { device = dev })
  averaging.utils.average_parameters({ c }, g)
  H.close(c, torch.full({ 2 }, rank < 2 and 0.5 or rank * 1.0), 0, "average_parameters over ranks 0 and 1")
  -- only the parameters with a gradient, from a list or from param groups
  local p, q = nn.Parameter(torch.full({ 2 }, rank * 1.0):to(dev)), nn.Parameter(torch.full({ 2 }, rank * 1.0):to(dev))
  p.grad = torch.zeros(2, { device = dev })
  local picked = averaging.utils.get_params_to_average({ { params = { p, q } } })
  H.check(#picked == 1 and picked[1] == p, "get_params_to_average: those with a gradient")
  averaging.utils.average_parameters_or_parameter_groups({ p, q })
  H.close(p, torch.full({ 2 }, (world - 1) / 2), 0, "average_parameters_or_parameter_groups: p averaged")
  H.close(q, torch.full({ 2 }, rank * 1.0), 0, "average_parameters_or_parameter_groups: q (no gradient) kept")
  H.raises(function() averaging.utils.get_params_to_average({ 42 }) end, "Parameter input of type int is not supported", "a number as parameter")
end

-- ---- PostLocalSGDOptimizer with PeriodicModelAverager, against every rank's SGD worked out here ----
local LR = 0.1
local function train(steps, period, warmup, start, opt_of, momentum)
  local state = post.PostLocalSGDState(nil, nil, start, false)
  local net, model = wrap(post.post_localSGD_hook, state)
  local averager = averagers.PeriodicModelAverager(period, warmup)
  local opt = dist.optim.PostLocalSGDOptimizer(opt_of(net), averager)
  -- every rank's parameters, in float64
  local W, V, BW, BV = {}, {}, {}, {}
  for r = 1, world do W[r], V[r] = torch.zeros(4, 3):double(), torch.zeros(5):double() end
  for t = 1, steps do
    opt:zero_grad()
    model(inputs(rank, t)):backward()
    opt:step()
    local gw, gv = {}, {}
    for r = 1, world do
      local x = inputs(r - 1, t)
      gw[r], gv[r] = W[r] - f64(x.w), V[r] - f64(x.v)
    end
    if t <= start then -- DDP averages the gradients
      local mw, mv = mean_over(gw, everyone), mean_over(gv, everyone)
      for r = 1, world do gw[r], gv[r] = mw, mv end
    end
    for r = 1, world do
      if momentum then -- the buffers: the first gradient, then momentum * buffer + gradient
        BW[r] = BW[r] and BW[r] * momentum + gw[r] or gw[r]
        BV[r] = BV[r] and BV[r] * momentum + gv[r] or gv[r]
        gw[r], gv[r] = BW[r], BV[r]
      end
      W[r], V[r] = W[r] - gw[r] * LR, V[r] - gv[r] * LR
    end
    local s = t - 1 -- the averager's step count before this step
    if s >= warmup and (s - warmup) % period == 0 then
      local mw, mv = mean_over(W, everyone), mean_over(V, everyone)
      for r = 1, world do W[r], V[r] = mw:clone(), mv:clone() end
    end
    H.close(net.w, W[rank + 1], 1e-5, "period %d, warmup %d, step %d: w", period, warmup, t)
    H.close(net.v, V[rank + 1], 1e-5, "period %d, warmup %d, step %d: v", period, warmup, t)
  end
  H.check(averager.step == steps, "the averager counts the steps (%d)", averager.step)
  return opt, net, averager
end
local function sgd(net) return torch.optim.SGD(net:parameters(), { lr = LR }) end
train(7, 3, 0, 2, sgd)
train(8, 2, 3, 1, sgd)
do -- after every step the ranks agree (period 1 warns)
  local opt, net = train(3, 1, 0, 0, sgd)
  local w = net.w:detach():clone()
  dist.broadcast(w, { src = 0 })
  H.close(net.w, w, 0, "period 1: every rank holds rank 0's parameters")
  H.check(opt.param_groups == opt.optim.param_groups and opt.state == opt.optim.state, "param_groups and state are the optimizer's")
end

-- state_dict: the optimizer's, with the averager's step; load_state_dict restores both
do
  local function momentum(net) return torch.optim.SGD(net:parameters(), { lr = LR, momentum = 0.9 }) end
  local opt, net = train(5, 2, 0, 2, momentum, 0.9)
  local sd = opt:state_dict()
  H.check(sd.step == 5, "state_dict().step is the averager's step (%s)", tostring(sd.step))
  local net2 = Quad():to(dev)
  local avg2 = averagers.PeriodicModelAverager(2)
  local opt2 = dist.optim.PostLocalSGDOptimizer(momentum(net2), avg2)
  opt2:load_state_dict(sd)
  H.check(avg2.step == 5, "load_state_dict sets the averager's step (%d)", avg2.step)
  local buf = opt.optim.state[net.w].momentum_buffer
  H.close(opt2.optim.state[net2.w].momentum_buffer, buf, 0, "load_state_dict restores the optimizer's state")
  H.check(opt2.param_groups[1].momentum == 0.9, "load_state_dict restores the param groups")
  local plain = opt.optim:state_dict()
  H.check(plain.step == nil, "the wrapped optimizer's own state_dict has no step")
  opt2:load_state_dict(plain)
  H.check(avg2.step == 0, "a state dict without a step sets the averager's step to 0")
end

-- ---- HierarchicalModelAverager ----
if world == 4 or world == 2 then
  -- after one warm-up step, pairs of ranks average every 2 steps and all ranks every 4 (with
  -- 2 ranks each rank is its own pair)
  local size = world // 2
  for _, spec in ipairs({ { { 2, size }, { 4, world } }, { [4] = world, [2] = size } }) do
    local avg = averaging.hierarchical_model_averager.HierarchicalModelAverager(spec, 1)
    local p = nn.Parameter(torch.zeros(3):to(dev))
    p.grad = torch.zeros(3, { device = dev })
    local vals = {}
    for r = 1, world do vals[r] = 0.0 end
    for t = 0, 8 do
      for r = 1, world do vals[r] = vals[r] + r * r * (t + 1) end -- each rank's own drift
      p:detach():add_((rank + 1) * (rank + 1) * (t + 1))
      avg:average_parameters({ p })
      local gs = t >= 1 and (t % 4 == 0 and world or (t % 2 == 0 and size)) or nil
      if gs then
        for first = 1, world, gs do
          local sum = 0
          for r = first, first + gs - 1 do sum = sum + vals[r] end
          for r = first, first + gs - 1 do vals[r] = sum / gs end
        end
      end
      H.close(p, torch.full({ 3 }, vals[rank + 1]), 1e-4, "hierarchical averaging, step %d", t)
    end
    H.check(avg.step == 9, "hierarchical: the step count")
  end
else
  local avg = averaging.hierarchical_model_averager.HierarchicalModelAverager({ { 2, 1 }, { 4, world } })
  H.check(avg.period_process_group_dict[4] == dist.group.WORLD, "hierarchical: the last period uses the whole group")
end

-- errors
do
  H.raises(function() averagers.PeriodicModelAverager(0) end, "Arg ``period`` must be a positive value.", "period 0")
  H.raises(function() averagers.PeriodicModelAverager(2, -1) end, "Arg ``warmup_steps`` must be a non-negative number.", "negative warmup")
  H.raises(function() averagers.PeriodicModelAverager(2, { period2 = 1 }) end, "unknown keyword 'period2'", "an unknown keyword")
  H.raises(function() averagers.PeriodicModelAverager() end, "missing required argument 'period'", "no period")
  H.raises(function() post.PostLocalSGDState(nil, nil) end, "missing required argument 'start_localSGD_iter'", "no start_localSGD_iter")
  H.raises(function() post.post_localSGD_hook({}, nil) end, "post_localSGD_hook: state must be a PostLocalSGDState", "a bad state")
  local HMA = averaging.hierarchical_model_averager.HierarchicalModelAverager
  H.raises(function() HMA({}) end, "Arg ``period_group_size_dict`` must not be empty.", "an empty hierarchy")
  H.raises(function() HMA({ { 0, world } }) end, "The minimum period in arg ``period_group_size_dict`` must be a positive value.", "period 0")
  H.raises(function() HMA({ { 2, 1 }, { 4, world + 1 } }) end, "must be equal to the size of arg ``process_group``", "a last size not the world's")
  H.raises(function() HMA({ { 4, 1 }, { 2, world } }) end, "the periods of period_group_size_dict must increase", "decreasing periods")
  H.raises(function() dist.optim.PostLocalSGDOptimizer(42, averagers.PeriodicModelAverager(2)) end,
    "PostLocalSGDOptimizer: optim must be an optimizer", "a number as optimizer")
  local net = Quad():to(dev)
  H.raises(function() dist.optim.PostLocalSGDOptimizer(sgd(net), "periodic") end, "averager must be a model averager", "a bad averager")
end

if backend == "nccl" then
  print("local_sgd.lua: every check above ran on the GPUs over nccl")
elseif torch.cuda.is_available() then
  dev = "cuda"
  train(5, 2, 1, 2, sgd)
  local a = torch.full({ 3 }, rank + 1.0, { device = "cuda" })
  averaging.utils.average_parameters({ a })
  H.close(a, torch.full({ 3 }, (world + 1) / 2), 1e-6, "cuda: average_parameters")
else
  print("local_sgd.lua: no GPU, the CUDA section is skipped")
end

dist.destroy_process_group()
H.report()
