-- PowerSGD DDP hooks (powerSGD_hook, batched_powerSGD_hook) and fp16/bf16_compress_wrapper,
-- against a reference worked out here in float64 with plain tensor ops from every rank's
-- gradients (all-gathered): P = sum M Q orthonormalized, Q = sum M^T P / world, M ~ P Q^T, with
-- error feedback and warm start over several steps. Run by test_dist.sh with 2 and 3 ranks
-- (gloo, CPU) and with `nccl` as argument on every GPU (each rank on cuda:LOCAL_RANK).
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local DDP = nn.parallel.DistributedDataParallel
local psgd = dist.algorithms.ddp_comm_hooks.powerSGD_hook
local hooks = dist.algorithms.ddp_comm_hooks.default_hooks

local backend, dev = H.init(arg[1])
local rank, world = dist.get_rank(), dist.get_world_size()

-- the model: loss = sum over parameters of sum(p * x_p), so each gradient is the rank's input
local shapes = { { 8 }, { 8, 6 }, { 8, 6 }, { 3, 2 }, { 4, 3, 2, 2 } } -- b, A, D (A's shape), s, C
local Net = nn.Module:extend("PowerNet")
function Net:__init()
  for i, sh in ipairs(shapes) do self["p" .. i] = nn.Parameter(torch.zeros(table.unpack(sh))) end
end
function Net:forward(x)
  local loss = (self.p1 * x[1]):sum()
  for i = 2, #shapes do loss = loss + (self["p" .. i] * x[i]):sum() end
  return loss
end

-- rank r's gradients at step t
local function inputs(r, t)
  torch.manual_seed(1000 * t + r)
  local x = {}
  for i, sh in ipairs(shapes) do x[i] = (torch.randn(table.unpack(sh)) * (i + 1)):to(dev) end
  return x
end

-- every rank's gradients, gathered: all[r + 1][i] (float64, on the CPU)
local function gather_all(x)
  local flat = {}
  for i, v in ipairs(x) do flat[i] = v:reshape(-1) end
  local mine = torch.cat(flat)
  local parts = {}
  for r = 1, world do parts[r] = torch.zeros_like(mine) end
  dist.all_gather(parts, mine)
  local all = {}
  for r = 1, world do
    local at, g = 0, {}
    for i, sh in ipairs(shapes) do
      local n = x[i]:numel()
      g[i] = parts[r]:narrow(0, at, n):cpu():double():view(table.unpack(sh))
      at = at + n
    end
    all[r] = g
  end
  return all
end

-- ---- the reference, in float64 ----

-- Gram-Schmidt on the columns of each matrix of m (b x n x r), written here
local function gram_schmidt(m)
  m = m:clone()
  for b = 0, m:size(0) - 1 do
    for i = 0, m:size(2) - 1 do
      local col = m[b]:narrow(1, i, 1)
      for j = 0, i - 1 do
        local prev = m[b]:narrow(1, j, 1)
        col:sub_(prev * (prev * col):sum())
      end
      col:div_(col:norm())
    end
  end
  return m
end

local function mm(a, b) return torch.bmm(a, b) end

-- A reference PowerSGD state: opts as PowerSGDState's; buckets: lists of 1-based parameter
-- indices, in the order of bucket:gradients()
local function Ref(o, buckets, batched)
  local g = torch.Generator()
  g:manual_seed(o.random_seed or 0)
  return { o = o, buckets = buckets, batched = batched, rng = g, err = {}, q = {}, iter = 0, before = 0, after = 0 }
end

local function draw_generator(ref)
  local g = torch.Generator()
  g:manual_seed(torch.randint(0, 1000000000, { 1 }, { generator = ref.rng }):item())
  return g
end

-- one bucket of PowerSGD (per-matrix): M[r] the flat bucket of rank r (with error added), views:
-- list of {offset, numel, shape}; returns the flat result
local function ref_bucket(ref, k, M, views)
  local o = ref.o
  local rank_cap = o.matrix_approximation_rank or 1
  local rate = o.min_compression_rate or 2
  local result = torch.zeros_like(M[1])
  local compress = {}
  for _, v in ipairs(views) do
    local n = v.shape[1]
    local m = v.numel // n
    local r = math.min(n, m, rank_cap)
    ref.before = ref.before + n * m
    if (n + m) * r * rate < n * m then
      compress[#compress + 1] = { off = v.off, n = n, m = m, r = r }
      ref.after = ref.after + (n + m) * r
    else
      ref.after = ref.after + n * m
      local s = torch.zeros(v.numel, { dtype = torch.float64 })
      for r_ = 1, world do s = s + M[r_]:narrow(0, v.off, v.numel) end
      result:narrow(0, v.off, v.numel):copy_(s / world)
    end
  end
  -- batches: by shape in order of first appearance, stacked when batch_tensors_with_same_shape
  local order, by = {}, {}
  for _, c in ipairs(compress) do
    local key = c.n .. "x" .. c.m
    if not by[key] then by[key] = {}; order[#order + 1] = key end
    table.insert(by[key], c)
  end
  local batches = {}
  for _, key in ipairs(order) do
    if o.batch_tensors_with_same_shape then batches[#batches + 1] = by[key]
    else for _, c in ipairs(by[key]) do batches[#batches + 1] = { c } end end
  end
  local warm = o.warm_start ~= false
  local qs = warm and ref.q[k] or nil
  if not qs then
    local g = draw_generator(ref)
    qs = {}
    for i, b in ipairs(batches) do qs[i] = torch.randn({ #b, b[1].m, b[1].r }, { generator = g }):double() end
  end
  local function mat(r_, c) return M[r_]:narrow(0, c.off, c.n * c.m):view(1, c.n, c.m) end
  for i, b in ipairs(batches) do
    local q = gram_schmidt(qs[i])
    local p = torch.zeros(#b, b[1].n, b[1].r, { dtype = torch.float64 })
    for r_ = 1, world do
      local Ms = {}
      for j, c in ipairs(b) do Ms[j] = mat(r_, c) end
      p = p + mm(torch.cat(Ms, 0), q)
    end
    p = gram_schmidt(p)
    local newq = torch.zeros_like(q)
    for r_ = 1, world do
      local Ms = {}
      for j, c in ipairs(b) do Ms[j] = mat(r_, c) end
      newq = newq + mm(torch.cat(Ms, 0):transpose(1, 2), p)
    end
    newq = newq / world
    local approx = mm(p, newq:transpose(1, 2))
    for j, c in ipairs(b) do result:narrow(0, c.off, c.n * c.m):copy_(approx[j - 1]:reshape(-1)) end
    qs[i] = newq
  end
  ref.q[k] = warm and qs or nil
  return result
end

-- one bucket of batched PowerSGD: the flat bucket padded to a square
local function ref_batched_bucket(ref, k, M)
  local o = ref.o
  local total = M[1]:numel()
  local side = math.ceil(math.sqrt(total))
  local r = o.matrix_approximation_rank or 1
  ref.before, ref.after = ref.before + total, ref.after + side * r * 2
  local sq = {}
  for r_ = 1, world do
    sq[r_] = torch.zeros(side * side, { dtype = torch.float64 })
    sq[r_]:narrow(0, 0, total):copy_(M[r_])
    if ref.err[r_ .. ":" .. k] and o.use_error_feedback ~= false then
      sq[r_]:narrow(0, total, side * side - total):add_(ref.err[r_ .. ":" .. k]:narrow(0, total, side * side - total))
    end
  end
  local q = o.warm_start ~= false and ref.q[k] or nil
  if not q then q = torch.randn({ side, r }, { generator = draw_generator(ref) }):double() end
  q = gram_schmidt(q:unsqueeze(0))[0]
  local p = torch.zeros(side, r, { dtype = torch.float64 })
  for r_ = 1, world do p = p + sq[r_]:view(side, side):mm(q) end
  p = gram_schmidt(p:unsqueeze(0))[0]
  local newq = torch.zeros(side, r, { dtype = torch.float64 })
  for r_ = 1, world do newq = newq + sq[r_]:view(side, side):t():mm(p) end
  newq = newq / world
  ref.q[k] = o.warm_start ~= false and newq or nil
  local approx = p:mm(newq:t()):reshape(-1)
  return approx, sq
end

-- the gradients of every parameter after one step, per the reference; all: every rank's gradients
local function ref_step(ref, all)
  local o = ref.o
  local out = {}
  for k, list in ipairs(ref.buckets) do
    local views, at = {}, 0
    for j, i in ipairs(list) do
      views[j] = { off = at, numel = all[1][i]:numel(), shape = shapes[i] }
      at = at + all[1][i]:numel()
    end
    local M = {}
    for r_ = 1, world do
      local parts = {}
      for j, i in ipairs(list) do parts[j] = all[r_][i]:reshape(-1) end
      M[r_] = torch.cat(parts)
    end
    local result
    if ref.iter < (o.start_powerSGD_iter or 1000) then
      result = torch.zeros_like(M[1])
      for r_ = 1, world do result = result + M[r_] end
      result = result / world
    else
      local efb = o.use_error_feedback ~= false
      if efb then
        for r_ = 1, world do
          local e = ref.err[r_ .. ":" .. k]
          if e then M[r_] = M[r_] + e:narrow(0, 0, M[r_]:numel()) end
        end
      end
      if ref.batched then
        local sq
        result, sq = ref_batched_bucket(ref, k, M)
        if efb then for r_ = 1, world do ref.err[r_ .. ":" .. k] = sq[r_] - result end end
        result = result:narrow(0, 0, M[1]:numel())
      else
        result = ref_bucket(ref, k, M, views)
        if efb then for r_ = 1, world do ref.err[r_ .. ":" .. k] = M[r_] - result end end
      end
    end
    for j, v in ipairs(views) do out[list[j]] = result:narrow(0, v.off, v.numel):view(table.unpack(v.shape)) end
  end
  ref.iter = ref.iter + 1
  return out
end

-- ---- the runs ----

local function wrap(cap)
  local net = Net():to(dev)
  local model = DDP(net, { bucket_cap_mb = cap and cap / (1024 * 1024) or nil })
  return net, model
end

-- the buckets as lists of 1-based parameter indices
local function buckets_of(model)
  local out = {}
  for k, b in ipairs(model:_buckets()) do
    out[k] = {}
    for j, i in ipairs(b) do out[k][j] = i + 1 end
  end
  return out
end

local function grads(net)
  local g = {}
  for i = 1, #shapes do g[i] = net["p" .. i].grad:cpu():double() end
  return g
end

local function scale(all)
  local s = 0
  for _, g in ipairs(all) do for _, v in ipairs(g) do s = math.max(s, v:abs():max():item()) end end
  return s
end

-- train `steps` steps with hook and state; compare each step's gradients with the reference
local function run(name, hook, opts, steps, cap, batched, check_each)
  local net, model = wrap(cap)
  local state = psgd.PowerSGDState(nil, opts)
  model:register_comm_hook(state, hook)
  local ref = Ref(opts, buckets_of(model), batched)
  local last
  for t = 1, steps do
    local x = inputs(rank, t)
    net:zero_grad()
    model(x):backward()
    local all = gather_all(x)
    local want = ref_step(ref, all)
    local got = grads(net)
    local tol = 2e-5 * scale(all) * t
    for i = 1, #shapes do H.close(got[i], want[i], tol, "%s, step %d: gradient of p%d", name, t, i) end
    if check_each then check_each(t, got, all, state) end
    last = got
  end
  H.check(state.iter == steps, "%s: state.iter counts the steps (%d)", name, state.iter)
  local rate, before, after = state:compression_stats()
  H.check(before == ref.before and after == ref.after and (after == 0 or math.abs(rate - before / after) < 1e-12),
    "%s: compression_stats() = %s, %s, %s (expected %s, %s)", name, tostring(rate), tostring(before), tostring(after),
    tostring(ref.before), tostring(ref.after))
  return state, last, net, model
end

local function mean(all)
  local m = {}
  for i = 1, #shapes do
    m[i] = torch.zeros(table.unpack(shapes[i])):double()
    for r = 1, world do m[i] = m[i] + all[r][i] end
    m[i] = m[i] / world
  end
  return m
end

local function differs(got, want)
  local d = 0
  for i = 1, #shapes do d = math.max(d, H.maxdiff(got[i], want[i])) end
  return d
end

-- per-matrix PowerSGD, two buckets (400 bytes a bucket): plain averages for 2 steps, then rank 1
-- with error feedback and warm start
do
  local plain_ok, compressed_differs = true, false
  local _, _, _, model = run("powerSGD_hook", psgd.powerSGD_hook, { start_powerSGD_iter = 3 }, 6, 400, false,
    function(t, got, all)
      local d = differs(got, mean(all))
      if t < 3 then plain_ok = plain_ok and d < 1e-5 * scale(all) end
      if t >= 3 and d > 1e-2 then compressed_differs = true end
    end)
  H.check(#model:_buckets() == 2, "two buckets (%d)", #model:_buckets())
  H.check(plain_ok, "before start_powerSGD_iter the gradients are the plain averages")
  H.check(compressed_differs, "from start_powerSGD_iter on the gradients are compressed (not the plain averages)")
end

-- rank 2, a seed of its own, batched by shape, no error feedback, no warm start
run("powerSGD_hook, rank 2, batched by shape, no error feedback or warm start", psgd.powerSGD_hook,
  { matrix_approximation_rank = 2, start_powerSGD_iter = 1, use_error_feedback = false, warm_start = false,
    random_seed = 7, batch_tensors_with_same_shape = true }, 3)
run("powerSGD_hook, batched by shape, warm start", psgd.powerSGD_hook,
  { start_powerSGD_iter = 2, batch_tensors_with_same_shape = true, random_seed = 3 }, 4)
run("powerSGD_hook, orthogonalization_epsilon 1e-9", psgd.powerSGD_hook, { start_powerSGD_iter = 2, orthogonalization_epsilon = 1e-9 }, 3, 400)

-- a rank as large as the matrices: the approximation is exact, the gradients are the plain averages
do
  local exact = true
  run("powerSGD_hook, full rank", psgd.powerSGD_hook, { matrix_approximation_rank = 8, start_powerSGD_iter = 2, min_compression_rate = 0 }, 4, 400,
    false, function(_, got, all) exact = exact and differs(got, mean(all)) < 1e-5 * scale(all) end)
  H.check(exact, "full rank: every step's gradients are the plain averages")
end

-- batched_powerSGD_hook: the bucket as one square matrix
run("batched_powerSGD_hook", psgd.batched_powerSGD_hook, { start_powerSGD_iter = 2 }, 5, 400, true)
run("batched_powerSGD_hook, rank 3, no warm start", psgd.batched_powerSGD_hook,
  { matrix_approximation_rank = 3, start_powerSGD_iter = 2, warm_start = false, random_seed = 11 }, 4, nil, true)
do
  local exact = true
  run("batched_powerSGD_hook, full rank", psgd.batched_powerSGD_hook, { matrix_approximation_rank = 13, start_powerSGD_iter = 2 }, 3, nil, true,
    function(_, got, all) exact = exact and differs(got, mean(all)) < 1e-4 * scale(all) end)
  H.check(exact, "batched, full rank (13 x 13 of 13 x 13): the gradients are the plain averages")
end

-- __getstate / __setstate: a restored state carries on as the original
do
  local a, _, _ = run("powerSGD_hook before saving", psgd.powerSGD_hook, { start_powerSGD_iter = 2 }, 3, 400, false)
  local saved = a:__getstate()
  H.check(saved.process_group == nil and saved.iter == 3 and saved.start_powerSGD_iter == 2, "__getstate: the fields, no process group")
  local b = psgd.PowerSGDState(nil, { start_powerSGD_iter = 5, random_seed = 9 })
  b:__setstate(saved)
  H.check(b.process_group == dist.group.WORLD and b.iter == 3 and b.start_powerSGD_iter == 2, "__setstate: fields and the default group")
  local function draw(s) return torch.randint(0, 1000, { 4 }, { generator = s.rng }) end
  H.close(draw(b), draw(a), 0, "__setstate: the random generator carries on where it was")
end

-- fp16_compress_wrapper / bf16_compress_wrapper: the wrapped hook sees a 16-bit buffer
do
  for _, case in ipairs({ { "fp16_compress_wrapper", hooks.fp16_compress_wrapper, torch.float16, 2 ^ -10 },
    { "bf16_compress_wrapper", hooks.bf16_compress_wrapper, torch.bfloat16, 2 ^ -7 } }) do
    local name, wrapper, dtype, eps = case[1], case[2], case[3], case[4]
    local net, model = wrap()
    local seen
    model:register_comm_hook(nil, wrapper(function(s, bucket)
      seen = bucket:buffer().dtype
      H.check(bucket:gradients()[1].dtype == dtype, "%s: gradients() are views of the 16-bit buffer", name)
      return hooks.allreduce_hook(s, bucket)
    end))
    local x = inputs(rank, 1)
    model(x):backward()
    local got, m = grads(net), mean(gather_all(x))
    H.check(seen == dtype, "%s: the hook sees a %s buffer", name, tostring(dtype))
    for i = 1, #shapes do
      H.close(got[i], m[i], 4 * world * eps * m[i]:abs():max():item() + 1e-6, "%s: average of p%d within 16-bit rounding", name, i)
    end
    H.check(net.p1.grad.dtype == torch.float32, "%s: the gradients stay float32", name)
  end
  -- PowerSGD inside the wrapper, full rank: the plain average within 16-bit rounding
  local net, model = wrap()
  local state = psgd.PowerSGDState(nil, { matrix_approximation_rank = 8, start_powerSGD_iter = 2, min_compression_rate = 0 })
  model:register_comm_hook(state, hooks.fp16_compress_wrapper(psgd.powerSGD_hook))
  for t = 1, 3 do
    local x = inputs(rank, t)
    net:zero_grad()
    model(x):backward()
    local got, m = grads(net), mean(gather_all(x))
    for i = 1, #shapes do
      H.close(got[i], m[i], 0.05 * m[i]:abs():max():item(), "fp16_compress_wrapper(powerSGD_hook), step %d: p%d", t, i)
    end
  end
  H.check(state.iter == 3, "fp16_compress_wrapper(powerSGD_hook): the state counts the steps")
end

-- DDPCommHookType and register_ddp_comm_hook; debugging_hooks.noop_hook
do
  local ch = dist.algorithms.ddp_comm_hooks
  local x = inputs(rank, 1)
  local m = mean(gather_all(x))
  local own = {} -- this rank's own gradients
  for i = 1, #shapes do own[i] = x[i]:cpu():double() end
  for _, case in ipairs({ { "NOOP", own, 0 }, { "ALLREDUCE", m, 1e-5 }, { "POWER_SGD", m, 1e-5 }, { "BATCHED_POWER_SGD_RANK2", m, 1e-5 },
    { "FP16_COMPRESS", m, 0.01 }, { "BF16_COMPRESS", m, 0.1 } }) do
    local net, model = wrap()
    ch.register_ddp_comm_hook(ch.DDPCommHookType[case[1]], model)
    model(x):backward()
    local got = grads(net)
    for i = 1, #shapes do H.close(got[i], case[2][i], case[3] * case[2][i]:abs():max():item(), "DDPCommHookType.%s: p%d", case[1], i) end
    H.raises(function() model:register_comm_hook(nil, hooks.allreduce_hook) end, "can only be called once", "%s registered a hook", case[1])
  end
  H.check(tostring(ch.DDPCommHookType.POWER_SGD) == "DDPCommHookType.POWER_SGD", "DDPCommHookType's tostring")
  local _, model = wrap()
  H.raises(function() ch.register_ddp_comm_hook(ch.DDPCommHookType.QUANTIZE_PER_TENSOR, model) end,
    "the quantization hooks are not supported here", "QUANTIZE_PER_TENSOR")
  H.raises(function() ch.register_ddp_comm_hook("POWER_SGD", model) end, "comm_hook_type must be a DDPCommHookType", "a name as type")
end

-- errors
do
  H.raises(function() psgd.PowerSGDState(nil, { start_powerSGD_iter = 1 }) end,
    "Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is enabled", "start_powerSGD_iter 1 with error feedback")
  H.raises(function() psgd.PowerSGDState(nil, { rank = 2 }) end, "unknown keyword 'rank'", "an unknown keyword")
  H.raises(function() psgd.PowerSGDState(nil, { matrix_approximation_rank = 0 }) end,
    "matrix_approximation_rank must be at least 1", "rank 0")
  H.raises(function() psgd.PowerSGDState(nil, { matrix_approximation_rank = 1.5 }) end,
    "matrix_approximation_rank must be an integer", "a fractional rank")
  H.raises(function() psgd.PowerSGDState(nil, { orthogonalization_epsilon = -1 }) end,
    "orthogonalization_epsilon must be a non-negative number", "a negative epsilon")
  H.raises(function() psgd.powerSGD_hook({}, nil) end, "powerSGD_hook: state must be a PowerSGDState", "a bad state")
  H.raises(function() psgd.batched_powerSGD_hook(nil, nil) end, "batched_powerSGD_hook: state must be a PowerSGDState", "no state")
  H.raises(function() hooks.fp16_compress_wrapper(42) end, "fp16_compress_wrapper: hook must be callable", "wrapping a number")
  local ok = pcall(psgd.PowerSGDState, nil, { start_powerSGD_iter = 1, use_error_feedback = false, warm_start = false })
  H.check(ok, "start_powerSGD_iter 1 without error feedback or warm start is accepted")
end

-- CUDA tensors over gloo (the nccl run covers the GPUs with every check above)
if backend == "nccl" then
  print("powersgd.lua: every check above ran on the GPUs over nccl")
elseif torch.cuda.is_available() then
  dev = "cuda"
  run("cuda: powerSGD_hook", psgd.powerSGD_hook, { start_powerSGD_iter = 2 }, 4, 400, false)
  run("cuda: powerSGD_hook, rank 2 batched by shape", psgd.powerSGD_hook,
    { matrix_approximation_rank = 2, start_powerSGD_iter = 2, batch_tensors_with_same_shape = true }, 3)
  run("cuda: batched_powerSGD_hook", psgd.batched_powerSGD_hook, { start_powerSGD_iter = 2 }, 4, 400, true)
else
  print("powersgd.lua: no GPU, the CUDA section is skipped")
end

dist.destroy_process_group()
H.report()
