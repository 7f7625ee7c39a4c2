-- torch.distributed.algorithms.Join: training with a different number of inputs per rank.
-- A rank that runs out of inputs leaves its loop and, at the end of the Join block, shadows
-- the collectives the other ranks still run (each joinable's JoinHook.main_hook) until every
-- rank is out; then every joinable's post_hook runs.
--
--   do local _ <close> = Join({model, opt})            -- or Join({model}, {throw_on_early_termination=true})
--     for _, batch in ipairs(my_batches) do ... end    -- as many batches as this rank has
--   end
--   Join({model, opt}, function() ... end)             -- the same, with a function
--
-- Protocol, per iteration of an active rank: the first joinable's notify_join_context
-- all-reduces a 1 (joined ranks all-reduce a 0, so everyone counts the active ranks). DDP as a
-- Joinable (below): its forward then all-reduces whether a backward will reduce gradients, picks
-- the highest active rank to broadcast the buffers from, and its backward's bucket all-reduces
-- are matched by all-reduces of zeros on the joined ranks.
local torch = require "torch"
local U = require "nn_util"
local dist = require "torch_distributed"
local DDP = require("nn_parallel").DistributedDataParallel

dist.algorithms = dist.algorithms or {}
local algorithms = dist.algorithms

-- a joinable's property given as a field or a method
local function prop(j, name)
  local v = j[name]
  if type(v) == "function" then return v(j) end
  return v
end

local function group_of(pg) return pg or dist.group.WORLD end

-- ---- JoinHook ----
local JoinHook = {}
JoinHook.__index = JoinHook
JoinHook.__name = "JoinHook"
JoinHook.extend = U.extend_class
setmetatable(JoinHook, { __call = function(c, ...) local o = setmetatable({}, c); c.__init(o, ...); return o end })
function JoinHook:__init() end
-- one shadow of the collectives of an active rank's iteration
function JoinHook:main_hook() end
-- once every rank has joined; is_last_joiner: this rank was among the last to run out
function JoinHook:post_hook(is_last_joiner) end
algorithms.JoinHook = JoinHook

-- ---- Joinable ----
local Joinable = {}
Joinable.__index = Joinable
Joinable.__name = "Joinable"
Joinable.extend = U.extend_class
setmetatable(Joinable, { __call = function(c, ...) local o = setmetatable({}, c); c.__init(o, ...); return o end })

local function disabled_config() return { enable = false, throw_on_early_termination = false, is_first_joinable = false } end

-- subclasses call Joinable.__init(self) in their own __init
function Joinable:__init() self._join_config = disabled_config() end
function Joinable:join_hook(opts) U.errorf("%s must implement join_hook(opts)", getmetatable(self).__name or "Joinable") end
function Joinable:join_device() U.errorf("%s must implement join_device()", getmetatable(self).__name or "Joinable") end
function Joinable:join_process_group() U.errorf("%s must implement join_process_group()", getmetatable(self).__name or "Joinable") end
algorithms.Joinable = Joinable

-- ---- Join ----
local Join = {}
Join.__index = Join
Join.__name = "torch.distributed.algorithms.Join"
algorithms.Join = setmetatable(Join, { __call = function(_, ...) return Join.new(...) end })

local WARN_THRESHOLD = 1000

-- Join(joinables, {enable = true, throw_on_early_termination = false, ...}[, fn]): the other
-- keys go to every joinable's join_hook (DDP's divide_by_initial_world_size).
function Join.new(joinables, ...)
  local fn, args, n = U.pop_fn(...)
  if type(joinables) ~= "table" or torch.is_tensor(joinables) or #joinables == 0 then
    U.error("The join context manager requires at least one joinable")
  end
  local opts = {}
  local enable, throw = true, false
  if n >= 1 and type(args[1]) == "boolean" then enable = args[1] end
  if n >= 2 and type(args[2]) == "boolean" then throw = args[2] end
  local last = args[n]
  if n >= 1 and U.is_opts(last) then
    for k, v in pairs(last) do
      if type(k) ~= "string" then U.errorf("Join: option names must be strings, got %s", tostring(k)) end
      if k == "enable" then enable = v elseif k == "throw_on_early_termination" then throw = v else opts[k] = v end
    end
  end
  local self = setmetatable({ _joinables = {}, _join_hooks = {}, _enable = enable ~= false,
    _throw_on_early_termination = throw == true }, Join)
  for i, j in ipairs(joinables) do
    if type(j) ~= "table" or type(j.join_hook) ~= "function" then
      U.errorf("Join: joinables[%d] is not a Joinable (it has no join_hook), got %s", i, U.typename(j))
    end
    self._joinables[i] = j
    self._join_hooks[i] = j:join_hook(opts)
  end
  for i, j in ipairs(self._joinables) do
    j._join_config = { enable = self._enable, throw_on_early_termination = self._throw_on_early_termination,
      is_first_joinable = i == 1 }
  end
  local pg
  for _, j in ipairs(self._joinables) do
    local g = group_of(prop(j, "join_process_group"))
    if pg == nil then pg = g elseif pg ~= g then U.error("Using join context manager with multiple process groups") end
    self._device = prop(j, "join_device")
  end
  self._process_group = pg
  self._rank = dist.get_rank(pg)
  if fn == nil then return self end
  local res = table.pack(pcall(fn))
  self:__close(not res[1] and res[2] or nil)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- how many ranks are still active (this one has joined: it counts 0)
function Join:_get_num_nonjoined_procs()
  local t = torch.zeros(1, { device = self._device })
  dist.all_reduce(t, { group = self._process_group })
  return t:item()
end

function Join:_notify_procs_to_terminate()
  local t = torch.ones(1, { device = self._device })
  dist.all_reduce(t, { group = self._process_group })
  U.errorf("Rank %d exhausted all inputs.", self._rank)
end

function Join:_reset_configs()
  for _, j in ipairs(self._joinables) do j._join_config = disabled_config() end
end

-- the end of the block: shadow the active ranks until all have joined (not when leaving by an error)
function Join:__close(err)
  if not self._enable or err ~= nil then self:_reset_configs(); return end
  local ok, e = pcall(function()
    local is_last_joiner, i = true, 0
    while true do
      local active = self:_get_num_nonjoined_procs()
      if active == 0 then break end
      if self._throw_on_early_termination then self:_notify_procs_to_terminate() end
      for _, h in ipairs(self._join_hooks) do
        h._num_active = active -- DDP's hook divides by it without divide_by_initial_world_size
        h:main_hook()
      end
      is_last_joiner = false
      i = i + 1
      if i == WARN_THRESHOLD + 1 then
        U.warn(string.format("Detected uneven input skew of greater than %d. This means that rank %d has at least %d fewer inputs than other currently-active ranks. This level of skew could lead to performance degradation during training.",
          WARN_THRESHOLD, self._rank, WARN_THRESHOLD))
      end
    end
    for _, h in ipairs(self._join_hooks) do h:post_hook(is_last_joiner) end
  end)
  self:_reset_configs()
  if not ok then error(e, 0) end
end

-- Called by a joinable at the start of its per-iteration collectives: the first joinable of the
-- Join all-reduces a 1 (async; the Work comes back, nil otherwise) and, with
-- throw_on_early_termination, raises on every rank once one has run out.
function Join.notify_join_context(joinable)
  local cfg = joinable._join_config
  if cfg == nil then
    U.errorf("Check that the %s constructor calls the Joinable constructor", U.typename(joinable))
  end
  if not cfg.is_first_joinable or not cfg.enable then return nil end
  local device, pg = prop(joinable, "join_device"), group_of(prop(joinable, "join_process_group"))
  local ones = torch.ones(1, { device = device })
  local work = dist.all_reduce(ones, { group = pg, async_op = true })
  if cfg.throw_on_early_termination then
    local zeros = torch.zeros(1, { device = device })
    dist.all_reduce(zeros, { group = pg })
    if zeros:item() > 0 then
      work:wait()
      U.error("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
    end
  end
  return work
end

-- ---- DistributedDataParallel as a Joinable ----

local function trainable(ddp)
  local out = {}
  for _, p in ipairs(ddp.module:parameters()) do if p.requires_grad then out[#out + 1] = p end end
  return out
end

function DDP:join_device() return self.module:parameters()[1].device end
function DDP:join_process_group() return dist.group.WORLD end

-- model:join({divide_by_initial_world_size = true, enable = true, throw_on_early_termination = false}[, fn])
function DDP:join(...)
  local fn, args, n = U.pop_fn(...)
  local o = U.parse("DistributedDataParallel.join", { { "divide_by_initial_world_size", true }, { "enable", true },
    { "throw_on_early_termination", false } }, table.unpack(args, 1, n))
  local opts = { enable = o.enable, throw_on_early_termination = o.throw_on_early_termination,
    divide_by_initial_world_size = o.divide_by_initial_world_size }
  if fn then return Join({ self }, opts, fn) end
  return Join({ self }, opts)
end

local DDPJoinHook = JoinHook:extend("_DDPJoinHook")

function DDPJoinHook:__init(ddp, divide_by_initial_world_size)
  self.ddp = ddp
  ddp._divide_by_initial_world_size = divide_by_initial_world_size
end

function DDP:join_hook(opts)
  local divide = true
  if opts and opts.divide_by_initial_world_size ~= nil then divide = opts.divide_by_initial_world_size end
  return DDPJoinHook(self, divide)
end

local function flag(ddp, v, op)
  local t = torch.tensor({ v }, { dtype = torch.float32 }):to(ddp:join_device())
  dist.all_reduce(t, { op = op })
  return t:item()
end

local function syncs_buffers(ddp)
  return ddp.require_forward_param_sync and ddp.broadcast_buffers and dist.get_world_size() > 1 and #ddp.module:buffers() > 0
end

-- the rank the buffers come from: the highest one still active (joined ranks offer -1)
local function buffer_source(ddp, active) return math.tointeger(flag(ddp, active and dist.get_rank() or -1, dist.ReduceOp.MAX)) end

-- On an active rank, from DDP's forward: tell the joined ranks whether this iteration reduces gradients.
function DDP:_join_pre_forward(sync)
  self._join_work = Join.notify_join_context(self)
  flag(self, sync and 1 or 0)
end

function DDP:_join_buffer_source() return buffer_source(self, true) end

-- On an active rank, after the forward: with divide_by_initial_world_size=false, the averaged
-- gradients are rescaled at the end of backward from the world size to the active ranks.
function DDP:_join_post_forward(outputs)
  local work = self._join_work
  self._join_work = nil
  if self._divide_by_initial_world_size ~= false or work == nil then return end
  local params, before = trainable(self), {}
  for i, p in ipairs(params) do
    local g = p.grad
    before[i] = g and { torch._optim.id(g), g._version } or false
  end
  local done = false
  local function rescale()
    if done then return end
    done = true
    work:wait()
    local active = work:result()[1]:item()
    local f = dist.get_world_size() / active
    if f == 1 then return end
    local _ <close> = torch.no_grad()
    for i, p in ipairs(params) do
      local g, b = p.grad, before[i]
      -- only the gradients the reducer wrote (find_unused_parameters leaves the unused ones)
      if g and not (b and b[1] == torch._optim.id(g) and b[2] == g._version) then g:mul_(f) end
    end
  end
  for _, t in ipairs(outputs) do
    if torch.is_tensor(t) and t.grad_fn then torch._at_backward_end(t, rescale) end
  end
end

-- the registered comm hook of each model (the hooks file keeps its own privately)
local comm_hooks = setmetatable({}, { __mode = "k" })
if DDP.register_comm_hook then
  local register, builtin = DDP.register_comm_hook, DDP._register_builtin_comm_hook
  function DDP:register_comm_hook(state, hook)
    register(self, state, hook)
    comm_hooks[self] = { hook = hook, state = state }
  end
  function DDP:_register_builtin_comm_hook(kind)
    builtin(self, kind)
    local hooks = dist.algorithms.ddp_comm_hooks.default_hooks
    local fn = kind.name == "FP16_COMPRESS" and hooks.fp16_compress_hook or hooks.allreduce_hook
    comm_hooks[self] = { hook = fn, state = nil }
  end
end

-- A joined rank's share of one backward: each bucket's all-reduce (or comm hook) over zeros,
-- in the reducer's order, then the all-reduce of the used-parameter map. What comes back (the
-- active ranks' average) becomes this rank's .grad, so an optimizer stepping in a later join
-- hook (ZeroRedundancyOptimizer's) updates with the same gradients as the active ranks.
function DDPJoinHook:_shadow_backward()
  local ddp = self.ddp
  local params = trainable(ddp)
  local buckets = ddp._reducer:buckets()
  local hook = comm_hooks[ddp]
  local flats, futures = {}, {}
  if not hook then flats = ddp._reducer:shadow() end -- the reducer's own calls, as the active ranks make them
  for k, idx in ipairs(hook and buckets or {}) do
    local numel, first = 0, params[idx[1] + 1]
    for _, i in ipairs(idx) do numel = numel + params[i + 1]:numel() end
    local zeros = torch.zeros(numel, { dtype = first.dtype, device = first.device })
    flats[k] = zeros
    local bucket = setmetatable({ _ddp = ddp, _index = k - 1, _buffer = zeros, _flat = zeros, _last = k == #buckets },
      dist.GradBucket)
    futures[k] = hook.hook(hook.state, bucket)
  end
  for k, f in pairs(futures) do
    local v = f:wait()
    if type(v) == "table" and not torch.is_tensor(v) then v = v[1] end
    flats[k] = v:reshape(-1)
  end
  local used
  if ddp.find_unused_parameters then
    used = torch.zeros(#params, { dtype = torch.int32, device = ddp:join_device() })
    dist.all_reduce(used)
    used = used:cpu()
  end
  local scale = 1
  if ddp._divide_by_initial_world_size == false and not hook and self._num_active then
    scale = dist.get_world_size() / self._num_active
  end
  local _ <close> = torch.no_grad()
  for k, idx in ipairs(buckets) do
    local at = 0
    for _, i in ipairs(idx) do
      local p = params[i + 1]
      local g = flats[k]:narrow(0, at, p:numel()):view(p:size())
      at = at + p:numel()
      if not used or used[i]:item() > 0 then
        if scale ~= 1 then g = g * scale end
        if p.grad ~= nil then p.grad:copy_(g) else p.grad = g:clone() end
      end
    end
  end
end

function DDPJoinHook:main_hook()
  local ddp = self.ddp
  local sync = flag(ddp, 0) > 0
  if syncs_buffers(ddp) then torch._dist.broadcast_coalesced(ddp.module:buffers(), buffer_source(ddp, false)) end
  if sync then self:_shadow_backward() end
end

-- every rank ends with the model of a last joiner (the highest rank among them)
function DDPJoinHook:post_hook(is_last_joiner)
  local ddp = self.ddp
  if dist.get_world_size() == 1 then return end
  local src = buffer_source(ddp, is_last_joiner)
  local states = {}
  for _, p in ipairs(ddp.module:parameters()) do states[#states + 1] = p end
  for _, b in ipairs(ddp.module:buffers()) do states[#states + 1] = b end
  torch._dist.broadcast_coalesced(states, src)
end

return Join
