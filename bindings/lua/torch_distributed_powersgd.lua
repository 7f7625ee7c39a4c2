-- PowerSGD gradient compression for DDP (Vogels et al. 2019), as PyTorch's
-- torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook: PowerSGDState, powerSGD_hook
-- (each bucket's matrices compressed one by one, 1-D and small ones all-reduced as they are)
-- and batched_powerSGD_hook (the whole bucket as one square matrix).
--
--   local psgd = torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook
--   local state = psgd.PowerSGDState(nil, {matrix_approximation_rank = 2, start_powerSGD_iter = 10})
--   model:register_comm_hook(state, psgd.powerSGD_hook)
--
-- A gradient matrix M (n x m) of each rank goes over the wire as P = M Q (n x r) and
-- Q = M^T P (m x r): P summed over the ranks and orthonormalized, then Q summed and divided by
-- the world size, and M replaced by P Q^T, the average projected onto P's columns. The error
-- (M - P Q^T) is added to the next step's M (error feedback), and the last Q starts the next
-- step (warm start). New Qs are random: a seed is drawn from state.rng (a torch.Generator
-- seeded with random_seed, the same on every rank), and a Generator seeded with it fills the
-- Qs with torch.randn on the CPU in the bucket's dtype, in the order of the bucket's matrices.
local torch = require "torch"
local U = require "nn_util"
local futures = require "torch_futures"
local dist = require "torch_distributed"
local default_hooks = require "torch_distributed_hooks"

local M = {}
dist.algorithms.ddp_comm_hooks.powerSGD_hook = M

local function group_of(process_group) return process_group or dist.group.WORLD end

-- ---- PowerSGDState ----
local PowerSGDState = { __name = "torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook.PowerSGDState" }
PowerSGDState.__index = PowerSGDState
M.PowerSGDState = PowerSGDState

local state_spec = {
  { "process_group" }, { "matrix_approximation_rank", 1 }, { "start_powerSGD_iter", 1000 },
  { "min_compression_rate", 2 }, { "use_error_feedback", true }, { "warm_start", true },
  { "orthogonalization_epsilon", 0 }, { "random_seed", 0 }, { "compression_stats_logging_frequency", 10000 },
  { "batch_tensors_with_same_shape", false },
}

-- the fields __getstate saves (all but the process group)
local saved_fields = {
  "matrix_approximation_rank", "start_powerSGD_iter", "min_compression_rate", "orthogonalization_epsilon",
  "use_error_feedback", "warm_start", "batch_tensors_with_same_shape", "rng", "error_dict", "p_memory_dict",
  "q_memory_dict", "iter", "total_numel_before_compression", "total_numel_after_compression",
  "compression_stats_logging_frequency", "next_stats_report",
}

local function new_state(_, ...)
  local fname = "PowerSGDState"
  local o = U.parse(fname, state_spec, ...) -- PowerSGDState(nil, {...}): the default group
  local rank = U.check_int(fname, "matrix_approximation_rank", o.matrix_approximation_rank, 1)
  local start = U.check_int(fname, "start_powerSGD_iter", o.start_powerSGD_iter)
  if (o.use_error_feedback or o.warm_start) and start <= 1 then
    U.error("Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is enabled, " ..
      "because PowerSGD can only be applied after the first two iterations in DDP.")
  end
  if type(o.min_compression_rate) ~= "number" then
    U.errorf("%s: min_compression_rate must be a number, got %s", fname, U.typename(o.min_compression_rate))
  end
  if type(o.orthogonalization_epsilon) ~= "number" or o.orthogonalization_epsilon < 0 then
    U.errorf("%s: orthogonalization_epsilon must be a non-negative number, got %s", fname, tostring(o.orthogonalization_epsilon))
  end
  local rng = torch.Generator()
  rng:manual_seed(U.check_int(fname, "random_seed", o.random_seed, 0))
  return setmetatable({
    process_group = o.process_group,
    matrix_approximation_rank = rank,
    start_powerSGD_iter = start,
    min_compression_rate = o.min_compression_rate,
    use_error_feedback = o.use_error_feedback and true or false,
    warm_start = o.warm_start and true or false,
    orthogonalization_epsilon = o.orthogonalization_epsilon,
    batch_tensors_with_same_shape = o.batch_tensors_with_same_shape and true or false,
    rng = rng,
    error_dict = {}, p_memory_dict = {}, q_memory_dict = {}, -- by bucket index
    iter = 0,
    total_numel_before_compression = 0,
    total_numel_after_compression = 0,
    compression_stats_logging_frequency = math.max(1, U.check_int(fname, "compression_stats_logging_frequency",
      o.compression_stats_logging_frequency)),
    next_stats_report = 0,
  }, PowerSGDState)
end
setmetatable(PowerSGDState, { __call = new_state })

-- one more iteration done when the last bucket of a backward pass is reduced
function PowerSGDState:maybe_increase_iter(bucket)
  if bucket:is_last() then self.iter = self.iter + 1 end
end

-- (compression rate, elements before compression, elements sent), counted over all steps
function PowerSGDState:compression_stats()
  local before, after = self.total_numel_before_compression, self.total_numel_after_compression
  return after > 0 and before / after or 0, before, after
end

-- the state without its process group (as PyTorch's pickling); rng becomes its state tensor
function PowerSGDState:__getstate()
  local t = {}
  for _, k in ipairs(saved_fields) do t[k] = self[k] end
  t.rng = self.rng:get_state()
  return t
end

-- a state from __getstate's table; the process group becomes the default group
function PowerSGDState:__setstate(t)
  self.process_group = dist.group.WORLD
  for _, k in ipairs(saved_fields) do self[k] = t[k] end
  local rng = torch.Generator()
  if torch.is_tensor(t.rng) then rng:set_state(t.rng) end
  self.rng = rng
  return self
end

local function check_state(state, fname)
  if getmetatable(state) ~= PowerSGDState then
    U.errorf("%s: state must be a PowerSGDState, got %s", fname, U.typename(state))
  end
end

-- ---- helpers ----

-- each matrix of m (b x n x r) gets orthonormal columns, in place: Gram-Schmidt for one column
-- or 16-bit values, QR otherwise (as PyTorch)
local function orthogonalize(m, epsilon)
  local r = m:size(2)
  if r > 1 and m.dtype ~= torch.float16 and m.dtype ~= torch.bfloat16 then
    m:copy_((torch.linalg.qr(m)))
    return
  end
  for i = 0, r - 1 do
    local col = m:narrow(2, i, 1)
    local norm = torch.norm(col, { dim = 1, keepdim = true })
    if epsilon ~= 0 then norm = norm + epsilon end
    col:div_(norm)
    if i + 1 < r then
      local rest = m:narrow(2, i + 1, r - i - 1)
      rest:sub_((col * rest):sum(1, true) * col)
    end
  end
end
M._orthogonalize = orthogonalize

-- worth compressing: (n + m) * rank values sent, min_compression_rate times fewer than n * m
local function should_compress(n, m, rank, rate)
  local uncompressed, compressed = n * m, (n + m) * rank
  return compressed * rate < uncompressed, uncompressed, compressed
end

-- the seed of a new set of random Qs, the same on every rank
local function next_seed(state)
  return torch.randint(0, 1000000000, { 1 }, { generator = state.rng }):item()
end

-- random values of shape (...) in dtype on the CPU, from generator g, moved to device
local function random(g, shape, dtype, device)
  return torch.randn(shape, { generator = g, dtype = dtype }):to(device)
end

-- a hook's start: before start_powerSGD_iter, the plain all-reduce's Future; from then on
-- nil, the group, its size and the bucket's buffer
local function start(state, bucket, fname)
  check_state(state, fname)
  local group = group_of(state.process_group)
  if state.iter < state.start_powerSGD_iter then
    state:maybe_increase_iter(bucket)
    return default_hooks.allreduce_hook(group, bucket)
  end
  return nil, group, dist.get_world_size(group), bucket:buffer()
end

-- the statistics' next report (PyTorch logs them then, at INFO level: here they are only counted)
local function stats_reported(state, bucket)
  if bucket:is_last() and state.iter >= state.next_stats_report then
    state.next_stats_report = state.iter + state.compression_stats_logging_frequency
  end
end

-- error feedback: the last step's error added to t (zeros the first time); a copy of the sum,
-- from which the new error is worked out
local function add_error(state, index, t)
  if not state.use_error_feedback then return nil end
  local err = state.error_dict[index]
  if err then t:add_(err) else state.error_dict[index] = torch.zeros_like(t) end
  return t:detach():clone()
end

-- a hook's end: the Ps and Qs dropped without warm start, the step counted
local function finish(state, bucket)
  if not state.warm_start then state.p_memory_dict, state.q_memory_dict = {}, {} end
  state:maybe_increase_iter(bucket)
end

-- a Future of t summed over the group (already done for an empty t)
local function sum_future(t, group)
  if t:numel() == 0 then
    local f = futures.Future()
    f:set_result({ t })
    return f
  end
  return dist.all_reduce(t, { group = group, async_op = true }):get_future()
end

local function sum_now(t, group)
  if t:numel() > 0 then dist.all_reduce(t, { group = group }) end
  return t
end

-- ---- powerSGD_hook ----

function M.powerSGD_hook(state, bucket)
  local plain, group, world, input = start(state, bucket, "powerSGD_hook")
  if plain then return plain end
  local device, dtype = input.device, input.dtype
  local index = bucket:index()

  local input_copy = add_error(state, index, input)

  -- the matrices worth compressing; the others go through one plain all-reduce
  local to_compress, uncompressed = {}, {}
  local ps_size, qs_size = 0, 0
  for _, t in ipairs(bucket:gradients()) do
    local n = t:dim() > 0 and t:size(0) or 1
    local matrix = t:view(n, -1)
    local m = matrix:size(1)
    local r = math.min(n, m, state.matrix_approximation_rank)
    local ok, before, after = should_compress(n, m, r, state.min_compression_rate)
    state.total_numel_before_compression = state.total_numel_before_compression + before
    if ok then
      to_compress[#to_compress + 1] = matrix
      ps_size, qs_size = ps_size + n * r, qs_size + m * r
      state.total_numel_after_compression = state.total_numel_after_compression + after
    else
      uncompressed[#uncompressed + 1] = t
      state.total_numel_after_compression = state.total_numel_after_compression + before
    end
  end
  stats_reported(state, bucket)
  local flat = {}
  for i, t in ipairs(uncompressed) do flat[i] = t:reshape(-1) end
  local uncompressed_memory = #flat > 0 and torch.cat(flat) or torch.empty(0, { device = device, dtype = dtype })

  -- P and Q memory, kept per bucket for the warm start
  local randomize = not state.warm_start or state.p_memory_dict[index] == nil
  if randomize then
    state.p_memory_dict[index] = torch.empty(ps_size, { device = device, dtype = dtype })
    state.q_memory_dict[index] = torch.empty(qs_size, { device = device, dtype = dtype })
  end

  -- the matrices to compress as batches (b x n x m): those of one shape stacked together with
  -- batch_tensors_with_same_shape, each alone otherwise; shapes in order of first appearance
  local shapes, by_shape = {}, {}
  for _, t in ipairs(to_compress) do
    local key = t:size(0) .. "x" .. t:size(1)
    if not by_shape[key] then by_shape[key] = {}; shapes[#shapes + 1] = key end
    table.insert(by_shape[key], t)
  end
  local batches, groups_of_batch = {}, {}
  for _, key in ipairs(shapes) do
    local list = by_shape[key]
    if state.batch_tensors_with_same_shape then
      batches[#batches + 1] = #list == 1 and list[1]:unsqueeze(0) or torch.stack(list)
      groups_of_batch[#batches] = list
    else
      for _, t in ipairs(list) do batches[#batches + 1] = t:unsqueeze(0) end
    end
  end
  local ps, qs = {}, {}
  local p_at, q_at = 0, 0
  local p_memory, q_memory = state.p_memory_dict[index], state.q_memory_dict[index]
  for i, b in ipairs(batches) do
    local nb, n, m = b:size(0), b:size(1), b:size(2)
    local r = math.min(n, m, state.matrix_approximation_rank)
    ps[i] = p_memory:narrow(0, p_at, nb * n * r):view(nb, n, r)
    qs[i] = q_memory:narrow(0, q_at, nb * m * r):view(nb, m, r)
    p_at, q_at = p_at + nb * n * r, q_at + nb * m * r
  end

  if randomize then
    local g = torch.Generator()
    g:manual_seed(next_seed(state))
    for _, q in ipairs(qs) do
      q:copy_(random(g, q:size(), dtype, device))
      orthogonalize(q, state.orthogonalization_epsilon)
    end
  else
    for _, q in ipairs(qs) do orthogonalize(q, state.orthogonalization_epsilon) end
  end

  for i, b in ipairs(batches) do ps[i]:copy_(torch.bmm(b, qs[i])) end -- P = M Q

  local fut = sum_future(uncompressed_memory, group)
  return fut:then_(function(f)
    local summed = f:value()[1]:div_(world)
    local at = 0
    for _, t in ipairs(uncompressed) do
      t:copy_(summed:narrow(0, at, t:numel()):view_as(t))
      at = at + t:numel()
    end
    return sum_now(p_memory, group) -- P summed: no need to divide, it is orthogonalized next
  end):then_(function()
    for _, p in ipairs(ps) do orthogonalize(p, state.orthogonalization_epsilon) end
    for i, b in ipairs(batches) do qs[i]:copy_(torch.bmm(b:transpose(1, 2), ps[i])) end -- Q = M^T P
    return sum_now(q_memory, group)
  end):then_(function()
    q_memory:div_(world)
    for i, b in ipairs(batches) do b:copy_(torch.bmm(ps[i], qs[i]:transpose(1, 2))) end -- M ~ P Q^T
    for i, list in pairs(groups_of_batch) do -- stacked batches back into the gradients
      if #list > 1 then
        for j, t in ipairs(list) do t:copy_(batches[i][j - 1]) end
      end
    end
    if state.use_error_feedback then state.error_dict[index] = input_copy - input end
    finish(state, bucket)
    return input
  end)
end

-- ---- batched_powerSGD_hook ----

-- The whole bucket as one square matrix (zeros padding it), compressed to rank
-- matrix_approximation_rank: less computation, lower accuracy.
function M.batched_powerSGD_hook(state, bucket)
  local plain, group, world, input = start(state, bucket, "batched_powerSGD_hook")
  if plain then return plain end
  local device, dtype = input.device, input.dtype
  local total = input:numel()
  local side = math.ceil(math.sqrt(total))
  while side * side < total do side = side + 1 end -- rounding of sqrt
  local rank = state.matrix_approximation_rank
  state.total_numel_before_compression = state.total_numel_before_compression + total
  state.total_numel_after_compression = state.total_numel_after_compression + side * rank * 2
  stats_reported(state, bucket)
  local padded = torch.zeros(side * side, { device = device, dtype = dtype })
  padded:narrow(0, 0, total):copy_(input)

  local index = bucket:index()
  local padded_copy = add_error(state, index, padded)
  local matrix = padded:view(side, side)

  if not state.warm_start or state.p_memory_dict[index] == nil then
    local g = torch.Generator()
    g:manual_seed(next_seed(state))
    state.p_memory_dict[index] = torch.empty(side, rank, { device = device, dtype = dtype })
    state.q_memory_dict[index] = random(g, { side, rank }, dtype, device)
  end
  local p, q = state.p_memory_dict[index], state.q_memory_dict[index]
  orthogonalize(q:unsqueeze(0), state.orthogonalization_epsilon)
  p:copy_(torch.mm(matrix, q))
  return sum_future(p, group):then_(function()
    orthogonalize(p:unsqueeze(0), state.orthogonalization_epsilon)
    q:copy_(torch.mm(matrix:t(), p))
    return sum_now(q, group)
  end):then_(function()
    q:div_(world)
    matrix:copy_(torch.mm(p, q:t()))
    if state.use_error_feedback then state.error_dict[index] = padded_copy - padded end
    input:copy_(padded:narrow(0, 0, total))
    finish(state, bucket)
    return input
  end)
end

return M
