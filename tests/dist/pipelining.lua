-- torch.distributed.pipelining: a model split by hand into one stage per rank, run with
-- ScheduleGPipe and Schedule1F1B, against the whole model in one process (each rank builds
-- it from the same seed and checks its own stage). Run by test_dist.sh with 2 and 3 ranks;
-- `nccl` runs on GPUs.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local pp = dist.pipelining
H.raises(function() pp.PipelineStage(nn.Linear(2, 2), 0, 2, "cpu") end, "Default process group has not been initialized",
  "PipelineStage before init_process_group")
local backend, dev = H.init(arg[1])
local rank, world = dist.get_rank(), dist.get_world_size()
local last = world - 1
local TOL = 1e-5

-- the whole model: world parts of Linear + Tanh, the last part ending in Linear(6, 2)
local function whole_model()
  torch.manual_seed(3)
  local parts = {}
  for s = 0, world - 1 do
    if s == 0 then parts[s + 1] = nn.Sequential(nn.Linear(4, 6), nn.Tanh())
    elseif s < world - 1 then parts[s + 1] = nn.Sequential(nn.Linear(6, 6), nn.Tanh())
    else parts[s + 1] = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 2)) end
    parts[s + 1]:to(dev)
  end
  return parts
end

local function run_whole(parts, x)
  for _, p in ipairs(parts) do x = p(x) end
  return x
end

torch.manual_seed(11)
local X, Y = torch.randn(24, 4):to(dev), torch.randn(24, 2):to(dev) -- 24 rows: 2, 3, 4 or 8 micro-batches

-- the reference: each micro-batch's loss backward, gradients summed then divided by n (scale_grads)
local function reference(parts, x, y, n, scale)
  local losses, outs = {}, {}
  local xs, ys = { torch.tensor_split(x, n) }, { torch.tensor_split(y, n) }
  for i = 1, n do
    outs[i] = run_whole(parts, xs[i])
    losses[i] = F.mse_loss(outs[i], ys[i])
    losses[i]:backward()
  end
  if scale then
    for _, p in ipairs(parts) do for _, q in ipairs(p:parameters()) do q.grad:div_(n) end end
  end
  return losses, torch.cat(outs, 0)
end

-- one step of a schedule on this rank's stage: the losses and output on the last stage
local function pipe_step(sched, x, y)
  local losses = {}
  local out
  if rank == 0 then out = sched:step(x)
  elseif rank == last then out = sched:step({ target = y, losses = losses })
  else out = sched:step() end
  return out, losses
end

local function check_grads(name, mine, ref)
  local a, b = mine:parameters(), ref:parameters()
  for i = 1, #a do
    H.close(a[i].grad, b[i].grad, TOL, "%s: stage %d parameter %d gradient", name, rank, i)
  end
end

for _, cls in ipairs({ "ScheduleGPipe", "Schedule1F1B" }) do
  for _, case in ipairs({ { n = 4, scale = true }, { n = world, scale = false }, { n = 8, scale = true } }) do
    local name = string.format("%s, %d micro-batches, scale_grads=%s", cls, case.n, tostring(case.scale))
    local parts, ref = whole_model(), whole_model()
    local stage = pp.PipelineStage(parts[rank + 1], rank, world, dev)
    local sched = pp[cls](stage, case.n, { loss_fn = F.mse_loss, scale_grads = case.scale })
    local out, losses = pipe_step(sched, X, Y)
    local ref_losses, ref_out = reference(ref, X, Y, case.n, case.scale)
    check_grads(name, parts[rank + 1], ref[rank + 1])
    if rank == last then
      H.check(#losses == case.n, "%s: %d losses, expected %d", name, #losses, case.n)
      for i = 1, case.n do H.close(losses[i]:detach(), ref_losses[i]:detach(), TOL, "%s: loss %d", name, i) end
      H.close(out:detach(), ref_out:detach(), TOL, "%s: merged output", name)
    else
      H.check(out == nil, "%s: step returns nothing before the last stage", name)
    end
    -- equal micro-batches, mean loss, scaled: the gradient of the whole batch's mean loss
    if case.scale and case.n == 4 then
      local whole = whole_model()
      F.mse_loss(run_whole(whole, X), Y):backward()
      check_grads(name .. " against the whole batch", parts[rank + 1], whole[rank + 1])
    end
  end
end

-- a few SGD steps stay equal to the whole model's
for _, cls in ipairs({ "ScheduleGPipe", "Schedule1F1B" }) do
  local parts, ref = whole_model(), whole_model()
  local stage = pp.PipelineStage(parts[rank + 1], rank, world, dev)
  local sched = pp[cls](stage, 4, { loss_fn = F.mse_loss })
  local opt = optim.SGD(parts[rank + 1]:parameters(), { lr = 0.1, momentum = 0.9 })
  local params = {}
  for _, p in ipairs(ref) do for _, q in ipairs(p:parameters()) do params[#params + 1] = q end end
  local ref_opt = optim.SGD(params, { lr = 0.1, momentum = 0.9 })
  torch.manual_seed(5)
  for step = 1, 4 do
    local x, y = torch.randn(8, 4):to(dev), torch.randn(8, 2):to(dev)
    opt:zero_grad()
    pipe_step(sched, x, y)
    opt:step()
    ref_opt:zero_grad()
    F.mse_loss(run_whole(ref, x), y):backward()
    ref_opt:step()
  end
  local a, b = parts[rank + 1]:parameters(), ref[rank + 1]:parameters()
  for i = 1, #a do H.close(a[i]:detach(), b[i]:detach(), 1e-5, "%s: SGD parameter %d after 4 steps", cls, i) end
end

-- a stage whose module returns two tensors: both go to the next stage's forward
do
  local Split = nn.Module:extend("Split")
  function Split:__init() nn.Module.__init(self); self.lin = nn.Linear(4, 6) end
  function Split:forward(x) local h = self.lin(x) return h:narrow(1, 0, 3), h:narrow(1, 3, 3):tanh() end
  local Join = nn.Module:extend("Join")
  function Join:__init(k) nn.Module.__init(self); self.lin = nn.Linear(3, k) end
  function Join:forward(a, b) return self.lin(a * b) end
  local function model()
    torch.manual_seed(8)
    local parts = { Split():to(dev) }
    for s = 1, world - 1 do parts[s + 1] = (s < world - 1 and Join(6) or Join(2)):to(dev) end
    if world > 2 then -- the middle stages take two tensors and return two
      for s = 2, world - 1 do
        local inner = parts[s]
        local Mid = nn.Module:extend("Mid")
        function Mid:__init() nn.Module.__init(self); self.j = inner end
        function Mid:forward(a, b) local h = self.j(a, b) return h:narrow(1, 0, 3), h:narrow(1, 3, 3) end
        parts[s] = Mid()
      end
    end
    return parts
  end
  local function whole(parts, x)
    local a, b = parts[1](x)
    for s = 2, world do
      if s < world then a, b = parts[s](a, b) else a = parts[s](a, b) end
    end
    return a
  end
  for _, cls in ipairs({ "ScheduleGPipe", "Schedule1F1B" }) do
    local parts, ref = model(), model()
    local stage = pp.PipelineStage(parts[rank + 1], rank, world, dev)
    local sched = pp[cls](stage, 4, { loss_fn = F.mse_loss })
    local out, losses = pipe_step(sched, X, Y)
    local xs, ys = { torch.tensor_split(X, 4) }, { torch.tensor_split(Y, 4) }
    for i = 1, 4 do (F.mse_loss(whole(ref, xs[i]), ys[i]) / 4):backward() end
    check_grads(cls .. " with two tensors between stages", parts[rank + 1], ref[rank + 1])
    if rank == last then H.close(out:detach(), whole(ref, X):detach(), TOL, "%s with two tensors: output", cls) end
  end
end

-- given input_args / output_args, eval (forward only), a second step with the shapes learnt
do
  local parts = whole_model()
  local widths = { [0] = 4 }
  for s = 1, world - 1 do widths[s] = 6 end
  local stage = pp.PipelineStage(parts[rank + 1], rank, world, dev,
    { input_args = torch.empty(6, widths[rank]):to(dev), output_args = torch.empty(6, rank == last and 2 or 6):to(dev) })
  local sched = pp.ScheduleGPipe(stage, 4, { loss_fn = F.mse_loss })
  local out = (function()
    if rank == 0 then return sched:eval(X) elseif rank == last then return sched:eval({ target = Y }) else return sched:eval() end
  end)()
  if rank == last then H.close(out, run_whole(whole_model(), X):detach(), TOL, "eval: the whole model's output") end
  H.check(parts[rank + 1]:parameters()[1].grad == nil, "eval computes no gradients")
  pipe_step(sched, X, Y)
  H.check(parts[rank + 1]:parameters()[1].grad ~= nil, "step after eval computes gradients")
  -- micro-batches of 3, 3, 2: PyTorch's shape check on the first stage (no step starts)
  if rank == 0 then
    local s2 = pp.PipelineStage(parts[1], 0, world, dev, { input_args = torch.empty(3, 4) })
    H.raises(function() pp.ScheduleGPipe(s2, 3, { loss_fn = F.mse_loss }):step(X:narrow(0, 0, 8)) end,
      "Stage 0 forward inputs has a shape mismatch: expected torch.Size([3, 4]) actual torch.Size([2, 4])",
      "uneven micro-batches")
    H.raises(function() pp.ScheduleGPipe(s2, 4, { loss_fn = F.mse_loss }):step(X:narrow(0, 0, 2)) end,
      "Expecting 4 arg_mbs but got 2", "a batch smaller than n_microbatches")
    H.raises(function() pp.ScheduleGPipe(s2, 4, { loss_fn = F.mse_loss }):step(X, { foo = 1 }) end,
      "unknown keyword 'foo'", "step's unknown keyword")
    H.raises(function() pp.ScheduleGPipe(s2, 4, { loss_fn = F.mse_loss }):step() end,
      "the first stage needs the batch", "the first stage without the batch")
    H.raises(function() torch.no_grad(function() pp.ScheduleGPipe(s2, 4, { loss_fn = F.mse_loss }):step(X) end) end,
      "step() requires gradients to be enabled", "step under no_grad")
  end
end

-- a one-stage pipeline on a group of one rank: gradient accumulation, uneven micro-batches are an error
do
  local groups = {}
  for r = 0, world - 1 do groups[r] = dist.new_group({ r }) end
  torch.manual_seed(3)
  local net = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2)):to(dev)
  local ref = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2)):to(dev)
  ref:load_state_dict(net:state_dict())
  local stage = pp.PipelineStage(net, 0, 1, dev, { group = groups[rank] })
  local losses = {}
  local out = pp.Schedule1F1B(stage, 2, { loss_fn = F.mse_loss }):step(X, { target = Y, losses = losses })
  F.mse_loss(ref(X), Y):backward()
  H.close(net:parameters()[1].grad, ref:parameters()[1].grad, TOL, "one stage: the whole batch's gradient")
  H.close(out:detach(), ref(X):detach(), TOL, "one stage: the output")
  H.check(#losses == 2, "one stage: two losses")
  H.raises(function() pp.ScheduleGPipe(stage, 3, { loss_fn = F.mse_loss }):step(X:narrow(0, 0, 8), { target = Y:narrow(0, 0, 8) }) end,
    "has a shape mismatch", "one stage: 8 rows in 3 micro-batches")
end

-- bad input
H.raises(function() pp.PipelineStage(nn.Linear(2, 2), world, world, dev) end,
  string.format("Stage index %d is out of range of %d", world, world), "stage index too large")
H.raises(function() pp.PipelineStage(nn.Linear(2, 2), -1, world, dev) end, "Stage index -1 is out of range", "negative stage index")
H.raises(function() pp.PipelineStage(nn.Linear(2, 2), 0, world - 1, dev) end,
  string.format("Pipeline group size %d cannot be larger than number of stages %d", world, world - 1), "too few stages for the group")
H.raises(function() pp.PipelineStage(nn.Linear(2, 2), 0, world, dev, { input_arg = 1 }) end, "unknown keyword 'input_arg'", "unknown keyword")
H.raises(function() pp.ScheduleGPipe(pp.PipelineStage(nn.Linear(2, 2), rank, world + 1, dev), 4) end,
  "a single-stage schedule runs one stage per rank", "more stages than ranks")
H.raises(function() pp.ScheduleGPipe(pp.PipelineStage(nn.Linear(2, 2), (rank + 1) % world, world, dev), 4) end,
  "must run on group rank", "a stage on another rank")
H.raises(function() pp.Schedule1F1B(pp.PipelineStage(nn.Linear(2, 2), rank, world, dev), world - 1) end,
  string.format("Number of microbatches (%d) must be greater than or equal to the number of stages (%d).", world - 1, world), "1F1B with too few micro-batches")
H.raises(function() pp.ScheduleGPipe(nn.Linear(2, 2), 4) end, "stage must be a PipelineStage", "a module for a stage")
H.raises(function() pp.ScheduleGPipe(pp.PipelineStage(nn.Linear(2, 2), rank, world, dev), 4, { args_chunk_spec = {} }) end,
  "args_chunk_spec is not supported", "args_chunk_spec")
H.raises(function() pp.ScheduleInterleaved1F1B({}, 4) end, "ScheduleInterleaved1F1B is not supported", "interleaved")
H.raises(function() pp.pipeline(nn.Linear(2, 2), { torch.ones(1, 2) }, { split_spec = { ["0"] = pp.SplitPoint.BEGINNING } }) end,
  "pipeline is not supported in nnrepl: nnrepl has no torch.export tracing", "pipeline()")
H.check(pp.get_schedule_class("gpipe") == pp.ScheduleGPipe and pp.get_schedule_class("1F1B") == pp.Schedule1F1B,
  "get_schedule_class")
H.raises(function() pp.get_schedule_class("nope") end, "Unknown schedule name 'nope'", "get_schedule_class, bad name")

dist.destroy_process_group()
H.report()
