-- torch.distributed.fsdp: FullyShardedDataParallel (FSDP1, use_orig_params=False) over
-- torch.distributed. Each wrapped unit flattens the parameters it owns (those of its module
-- outside nested units) into one flat parameter, padded to a multiple of the world size, and
-- keeps only this rank's 1/world slice of it as `_flat_param` (registered on the wrapped
-- module; the original parameters are removed). Its forward all-gathers the full flat
-- parameter through an autograd function whose backward reduce-scatters the gradient
-- (averaged) into the shard's .grad, and sets the original names to views of it while the
-- wrapped module runs. With FULL_SHARD the views that autograd saves are packed by
-- saved-tensor hooks as markers, so the full parameters are freed after forward and
-- gathered again when backward first needs them.
--
--   local model = FSDP(net, {auto_wrap_policy = wrap.size_based_auto_wrap_policy{min_num_params = 1000}})
--   local opt = optim.SGD(model:parameters(), {lr = 0.1})      -- the shards
--   do local _ <close> = FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT); sd = model:state_dict() end
-- Wrap policies: torch_distributed_fsdp_wrap.lua.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local Parameter = require "nn_parameter"
local dist = torch.distributed

local fsdp = dist.fsdp or {}
dist.fsdp = fsdp

-- ---- enums and option classes ----

local function enum(kind, names)
  local e = {}
  local mt = { __tostring = function(v) return kind .. "." .. v.name end, __name = "torch.distributed.fsdp." .. kind }
  for i, n in ipairs(names) do e[n] = setmetatable({ name = n, value = i }, mt) end
  e._mt = mt
  return e
end

fsdp.ShardingStrategy = enum("ShardingStrategy", { "FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "_HYBRID_SHARD_ZERO2" })
fsdp.BackwardPrefetch = enum("BackwardPrefetch", { "BACKWARD_PRE", "BACKWARD_POST" })
fsdp.StateDictType = enum("StateDictType", { "FULL_STATE_DICT", "LOCAL_STATE_DICT", "SHARDED_STATE_DICT" })
local SS, SDT = fsdp.ShardingStrategy, fsdp.StateDictType

-- a record class: Name{...} or Name(positional...), fields with defaults, printed as PyTorch's dataclass
local function record(name, spec)
  local mt = { __name = "torch.distributed.fsdp." .. name }
  mt.__index = mt
  mt.__tostring = function(r)
    local parts = {}
    for i, s in ipairs(spec) do
      local v = r[s[1]]
      parts[i] = s[1] .. "=" .. (v == nil and "None" or v == true and "True" or v == false and "False" or tostring(v))
    end
    return name .. "(" .. table.concat(parts, ", ") .. ")"
  end
  return setmetatable({}, { __call = function(_, ...) return setmetatable(U.parse(name, spec, ...), mt) end,
    __index = { _mt = mt } }), mt
end

local MP_MT
fsdp.MixedPrecision, MP_MT = record("MixedPrecision", { { "param_dtype" }, { "reduce_dtype" }, { "buffer_dtype" },
  { "keep_low_precision_grads", false }, { "cast_forward_inputs", false }, { "cast_root_forward_inputs", true } })
local CPU_MT
fsdp.CPUOffload, CPU_MT = record("CPUOffload", { { "offload_params", false } })
fsdp.FullStateDictConfig = record("FullStateDictConfig", { { "offload_to_cpu", false }, { "rank0_only", false } })
fsdp.StateDictConfig = record("StateDictConfig", { { "offload_to_cpu", false } })
fsdp.FullOptimStateDictConfig = record("FullOptimStateDictConfig", { { "offload_to_cpu", false }, { "rank0_only", false } })

-- ---- the unit ----

local FSDP = Module:extend("FullyShardedDataParallel")
fsdp.FullyShardedDataParallel = FSDP
fsdp.FSDP = FSDP

local function is_unit(m) return Module.is_module(m) and m:isinstance(FSDP) end
local function values_of(m) return getmetatable(m).__index end

local spec = {
  { "process_group" }, { "sharding_strategy" }, { "cpu_offload" }, { "auto_wrap_policy" }, { "backward_prefetch" },
  { "mixed_precision" }, { "ignored_modules" }, { "param_init_fn" }, { "device_id" }, { "sync_module_states", false },
  { "forward_prefetch", false }, { "limit_all_gathers", true }, { "use_orig_params", false }, { "ignored_states" },
  { "device_mesh" },
}

-- the options a parent hands to the units auto_wrap_policy makes
local inherited = { "process_group", "sharding_strategy", "cpu_offload", "backward_prefetch", "mixed_precision",
  "device_id", "sync_module_states", "forward_prefetch", "limit_all_gathers", "use_orig_params", "ignored_modules" }

local function check_options(o)
  if not (dist.is_initialized and dist.is_initialized()) then
    U.error("FullyShardedDataParallel: Default process group has not been initialized, please make sure to call init_process_group.")
  end
  local s = o.sharding_strategy or SS.FULL_SHARD
  if type(s) == "string" then s = SS[s:upper()] or s end
  if getmetatable(s) ~= SS._mt then
    U.errorf("FullyShardedDataParallel: sharding_strategy must be a ShardingStrategy (FULL_SHARD, SHARD_GRAD_OP or NO_SHARD), got %s", tostring(s))
  end
  if s == SS.HYBRID_SHARD or s == SS._HYBRID_SHARD_ZERO2 then
    U.errorf("FullyShardedDataParallel: %s is not supported in nnrepl; use FULL_SHARD or SHARD_GRAD_OP (one process group over all ranks)", s.name)
  end
  o.sharding_strategy = s
  if o.process_group ~= nil and o.process_group ~= dist.group.WORLD then
    U.error("FullyShardedDataParallel: only the default process group is supported (process_group=nil)")
  end
  if o.device_mesh ~= nil then U.error("FullyShardedDataParallel: device_mesh is not supported; leave it nil (the default process group is used)") end
  if o.cpu_offload ~= nil and getmetatable(o.cpu_offload) ~= CPU_MT then
    U.errorf("FullyShardedDataParallel: cpu_offload must be a CPUOffload, got %s", U.typename(o.cpu_offload))
  end
  if o.cpu_offload and o.cpu_offload.offload_params then
    U.error("FullyShardedDataParallel: CPUOffload(offload_params=True) is not supported in nnrepl; keep the parameters on the device (CPUOffload(offload_params=False))")
  end
  local mp = o.mixed_precision
  if mp ~= nil and getmetatable(mp) ~= MP_MT then
    U.errorf("FullyShardedDataParallel: mixed_precision must be a MixedPrecision, got %s", U.typename(mp))
  end
  if mp and mp.keep_low_precision_grads then
    U.error("FullyShardedDataParallel: MixedPrecision(keep_low_precision_grads=True) is not supported; the shards' gradients are kept in the parameters' dtype")
  end
  if o.backward_prefetch ~= nil and getmetatable(o.backward_prefetch) ~= fsdp.BackwardPrefetch._mt then
    U.errorf("FullyShardedDataParallel: backward_prefetch must be a BackwardPrefetch or nil, got %s", tostring(o.backward_prefetch))
  end
  if o.use_orig_params then
    U.error("FullyShardedDataParallel: use_orig_params=True is not supported in nnrepl; use use_orig_params=False (the default): the optimizer works on the flat shards from model:parameters()")
  end
  if o.param_init_fn ~= nil then
    U.error("FullyShardedDataParallel: param_init_fn is not supported (nnrepl has no meta-device modules); build the module with its parameters, then wrap it")
  end
  if o.ignored_states ~= nil then U.error("FullyShardedDataParallel: ignored_states is not supported; use ignored_modules") end
end

-- the (module, parameter name) slots a unit owns: its module's tree, less the modules stop
-- says are units of their own and ignored ones; also each module's owned names in order
local function owned_slots(root, stop, ignored)
  local slots, modules = {}, {}
  local function walk(m)
    if ignored and ignored[m] then return end
    local names = {}
    for k, p in pairs(m._parameters) do
      if p ~= nil then names[#names + 1] = k; slots[#slots + 1] = { module = m, name = k, param = p } end
    end
    if #names > 0 then modules[#modules + 1] = { module = m, names = names } end
    for _, c in pairs(m._modules) do
      if c ~= nil and not stop(c) then walk(c) end
    end
  end
  walk(root)
  return slots, modules
end

local function floating_dtype(dt)
  return dt == torch.float32 or dt == torch.float64 or dt == torch.float16 or dt == torch.bfloat16
end

-- apply the auto-wrap policy below root (PyTorch's recursive wrap: children first, then a module
-- whose unwrapped remainder the policy accepts); returns the number of parameters wrapped
local function recursive_wrap(m, policy, opts, ignored, only_children)
  if is_unit(m) or ignored[m] then return m, 0 end
  local numel = 0
  for _, p in ipairs(m:parameters()) do numel = numel + p:numel() end
  if not policy(m, true, numel) then return m, 0 end
  local wrapped = 0
  for _, e in ipairs(m:named_children()) do
    local name, child = e[1], e[2]
    if not ignored[child] then
      local w, n = recursive_wrap(child, policy, opts, ignored, false)
      if w ~= child then m[name] = w end
      wrapped = wrapped + n
    end
  end
  if not only_children and policy(m, false, numel - wrapped) then
    return FSDP(m, opts), numel
  end
  return m, wrapped
end

local function as_policy(p)
  if p == nil or type(p) == "function" then return p end
  if type(p) == "table" and type(p._policy) == "function" then return p._policy end
  local mt = getmetatable(p)
  if mt and mt.__call then return function(...) return p(...) end end
  U.errorf("FullyShardedDataParallel: auto_wrap_policy must be a function (module, recurse, nonwrapped_numel) or a ModuleWrapPolicy, got %s", U.typename(p))
end

function FSDP:__init(module, ...)
  local o = U.parse("FullyShardedDataParallel", spec, ...)
  if not Module.is_module(module) then
    U.errorf("FullyShardedDataParallel: module must be an nn.Module, got %s", U.typename(module))
  end
  if is_unit(module) then U.error("FullyShardedDataParallel: the module is already wrapped by FullyShardedDataParallel") end
  check_options(o)
  local ignored = {}
  for _, m in ipairs(o.ignored_modules or {}) do
    for _, sub in ipairs(m:modules()) do ignored[sub] = true end
  end
  local world, rank = dist.get_world_size(), dist.get_rank()
  local v = values_of(self)
  v.sharding_strategy, v.mixed_precision = o.sharding_strategy, o.mixed_precision
  v.world_size, v.rank = world, rank
  v._sync_gradients = true
  v._state_dict_type, v._state_dict_config = SDT.FULL_STATE_DICT, fsdp.FullStateDictConfig()
  if o.device_id ~= nil then module:to(type(o.device_id) == "number" and ("cuda:" .. o.device_id) or o.device_id)
  elseif dist.get_backend() == "nccl" then module:to(dist._device()) end
  local policy = as_policy(o.auto_wrap_policy)
  if policy then
    local child_opts = {}
    for _, k in ipairs(inherited) do child_opts[k] = o[k] end
    recursive_wrap(module, policy, child_opts, ignored, true)
  end
  self._fsdp_wrapped_module = module
  v.module = module
  local slots, modules = owned_slots(module, is_unit, ignored)
  if o.sync_module_states and world > 1 then -- every rank starts from rank 0's parameters and buffers
    local states = {}
    for _, s in ipairs(slots) do states[#states + 1] = s.param end
    for _, b in ipairs(module:buffers()) do states[#states + 1] = b end
    if #states > 0 then torch._dist.broadcast_coalesced(states, 0) end
  end
  self:_flatten(slots, modules)
  for _, u in ipairs(FSDP.fsdp_modules(module)) do values_of(u)._is_root_unit = false end
  v._is_root_unit = true
  local mp = o.mixed_precision
  if mp and mp.buffer_dtype then -- buffers (outside nested units, which cast their own) in buffer_dtype
    v._buffer_dtypes = {}
    local function walk(m)
      for k, b in pairs(m._buffers) do
        if b ~= nil and floating_dtype(b.dtype) and b.dtype ~= mp.buffer_dtype then
          local c = b:to(mp.buffer_dtype)
          v._buffer_dtypes[c] = b.dtype
          m[k] = c
        end
      end
      for _, c in pairs(m._modules) do if c ~= nil and not is_unit(c) then walk(c) end end
    end
    walk(module)
  end
end

-- Build the flat parameter from the owned slots and keep this rank's shard of it.
function FSDP:_flatten(slots, modules)
  local v = values_of(self)
  local unique, index = {}, {}
  for _, s in ipairs(slots) do
    if not index[s.param] then unique[#unique + 1] = s.param; index[s.param] = #unique end
    s.index = index[s.param]
  end
  v._slots, v._modules_owned = slots, modules
  if #unique == 0 then return end
  local dtype, device, rg = unique[1].dtype, unique[1].device, unique[1].requires_grad
  local numels, shapes, offsets, total = {}, {}, {}, 0
  for i, p in ipairs(unique) do
    if p.dtype ~= dtype then
      U.errorf("FullyShardedDataParallel: a flat parameter must have one dtype, but the module has parameters of %s and %s; give them one dtype before wrapping", tostring(dtype), tostring(p.dtype))
    end
    if p.requires_grad ~= rg then
      U.error("FullyShardedDataParallel: a flat parameter requires uniform requires_grad, but the wrapped module has parameters that require a gradient and some that do not; wrap the frozen ones in their own unit or use ignored_modules")
    end
    if tostring(p.device) ~= tostring(device) then
      U.errorf("FullyShardedDataParallel: the parameters must be on one device, found %s and %s", tostring(device), tostring(p.device))
    end
    numels[i], shapes[i], offsets[i] = p:numel(), p:size(), total
    total = total + p:numel()
  end
  local shards = self.sharding_strategy == SS.NO_SHARD and 1 or self.world_size
  local per = (total + shards - 1) // shards
  local parts = {}
  for i, p in ipairs(unique) do parts[i] = p:detach():reshape(-1) end
  if per * shards > total then parts[#parts + 1] = torch.zeros(per * shards - total, { dtype = dtype, device = device }) end
  local flat = torch.cat(parts, 0)
  local mine = shards == 1 and 0 or self.rank
  local shard = flat:narrow(0, mine * per, per):clone()
  v._numels, v._shapes, v._offsets = numels, shapes, offsets
  v._total, v._shard_numel, v._padded_numel, v._shards = total, per, per * shards, shards
  v._dtype, v._device = dtype, device
  for _, s in ipairs(slots) do s.module[s.name] = nil end -- the originals go; _flat_param takes their place
  local fp = Parameter(shard, rg)
  v._flat_param = fp
  self._fsdp_wrapped_module._flat_param = fp
end

-- ---- gathering and reduction ----

local function param_dtype(unit)
  local mp = unit.mixed_precision
  return mp and mp.param_dtype or unit._dtype
end

-- the full (padded) flat parameter from the shards, in dtype (param_dtype by default)
function FSDP:_gather(dtype)
  local shard = self._flat_param:detach()
  dtype = dtype or param_dtype(self)
  if shard.dtype ~= dtype then shard = shard:to(dtype) end
  if self._shards == 1 then return shard:clone() end
  local full = torch.empty(self._padded_numel, { dtype = dtype, device = shard.device })
  dist.all_gather_into_tensor(full, shard:contiguous())
  return full
end

-- the gradient of the full flat parameter, reduced over ranks, averaged, as this rank's shard's
function FSDP:_reduce(g)
  local mp = self.mixed_precision
  local rdt = mp and (mp.reduce_dtype or mp.param_dtype) or self._dtype
  g = g:to(rdt):contiguous()
  local out
  if self._shards == 1 then
    out = g:clone()
    if self.world_size > 1 then dist.all_reduce(out) end
  else
    out = torch.empty(self._shard_numel, { dtype = rdt, device = g.device })
    dist.reduce_scatter_tensor(out, g)
  end
  out:div_(self.world_size)
  return out:to(self._dtype)
end

local Unshard = torch.autograd.Function:extend("FSDPUnshard")

function Unshard.forward(ctx, _, unit)
  ctx.unit = unit
  return unit:_gather()
end

function Unshard.backward(ctx, g)
  local unit = ctx.unit
  unit._regathered = nil
  if g == nil then return nil, nil end
  if not unit._sync_gradients then -- no_sync: keep the unsharded gradient until a synced backward
    unit._unsharded_grad = unit._unsharded_grad and unit._unsharded_grad + g or g:clone()
    return nil, nil
  end
  if unit._unsharded_grad then g = g + unit._unsharded_grad; unit._unsharded_grad = nil end
  return unit:_reduce(g), nil
end

-- FULL_SHARD's saved-tensor hooks: a view of gathered parameters is kept as a marker and
-- rebuilt at backward from owner:_full_for_backward(index), a fresh gather made once per
-- backward. live maps a gathered storage's address to {owner, index}.
local live = {}
local function pack(t)
  local ok, ptr = pcall(function() return t:untyped_storage():data_ptr() end)
  local e = ok and live[ptr]
  if not e then return t end
  return { fsdp_owner = e[1], index = e[2], offset = t:storage_offset(), size = t:size():totable(), stride = t:stride() }
end
local function unpack(m)
  if type(m) ~= "table" or not m.fsdp_owner then return m end
  return m.fsdp_owner:_full_for_backward(m.index):as_strided(m.size, m.stride, m.offset)
end
fsdp._saved = { live = live, pack = pack, unpack = unpack, owned_slots = owned_slots, record = record }

function FSDP:_full_for_backward()
  local full = self._regathered
  if not full then
    full = torch.no_grad(function() return self:_gather() end)
    values_of(self)._regathered = full
  end
  return full
end

-- point the original names at views of full (or remove them, full = nil)
function FSDP:_use(full)
  local views = {}
  for _, s in ipairs(self._slots) do
    if full then
      local i = s.index
      views[i] = views[i] or full:narrow(0, self._offsets[i], self._numels[i]):view(self._shapes[i])
      values_of(s.module)[s.name] = views[i]
    else
      values_of(s.module)[s.name] = nil
    end
  end
end

local function cast_inputs(args, dtype)
  for i = 1, args.n do
    local a = args[i]
    if torch.is_tensor(a) and a:is_floating_point() and a.dtype ~= dtype then args[i] = a:to(dtype) end
  end
end

function FSDP:forward(...)
  local args = table.pack(...)
  local mp = self.mixed_precision
  if mp and mp.param_dtype and (mp.cast_forward_inputs or (mp.cast_root_forward_inputs and self:_is_root())) then
    cast_inputs(args, mp.param_dtype)
  end
  local module = self._fsdp_wrapped_module
  local fp = self._flat_param
  if not fp then return module(table.unpack(args, 1, args.n)) end
  self._regathered = nil
  local full
  if torch.is_grad_enabled() and fp.requires_grad then full = Unshard.apply(fp, self)
  else full = torch.no_grad(function() return self:_gather() end) end
  self:_use(full)
  local free = self.sharding_strategy == SS.FULL_SHARD and self._shards > 1 and full.grad_fn ~= nil
  local out
  if free then
    local ptr = full:untyped_storage():data_ptr()
    live[ptr] = { self }
    full = nil
    local ok, r = pcall(function()
      local _ <close> = torch.autograd.graph.saved_tensors_hooks(pack, unpack)
      return table.pack(module(table.unpack(args, 1, args.n)))
    end)
    live[ptr] = nil
    self:_use(nil)
    if not ok then error(r, 0) end
    out = r
  else
    local ok, r = pcall(function() return table.pack(module(table.unpack(args, 1, args.n))) end)
    self:_use(nil)
    if not ok then error(r, 0) end
    out = r
  end
  return table.unpack(out, 1, out.n)
end

-- ---- the tree of units ----

-- every unit in m's tree (m first when it is one), in module order
function FSDP.fsdp_modules(module, root_only)
  local out = {}
  for _, m in ipairs(module:modules()) do
    if is_unit(m) then out[#out + 1] = m end
  end
  if root_only and #out > 0 then return { out[1] } end
  return out
end

-- no unit above this one: a unit stops being the root when another wraps it (auto-wrap or by hand)
function FSDP:_is_root() return self._is_root_unit end

-- `local _ <close> = model:no_sync()`: backward passes keep the unsharded gradients locally; the
-- first backward after it reduces them with its own. A function argument runs inside.
function FSDP:no_sync(fn)
  local units = FSDP.fsdp_modules(self)
  for _, u in ipairs(units) do values_of(u)._sync_gradients = false end
  local function restore() for _, u in ipairs(units) do values_of(u)._sync_gradients = true end end
  if fn ~= nil then
    local r = table.pack(pcall(fn))
    restore()
    if not r[1] then error(r[2], 0) end
    return table.unpack(r, 2, r.n)
  end
  return setmetatable({}, { __close = restore, __name = "torch.distributed.fsdp.no_sync" })
end

-- The total norm over every shard's gradient (each element counted once), then every gradient
-- scaled by max_norm / norm where that is below 1. Returns the total norm.
function FSDP:clip_grad_norm_(...)
  local o = U.parse("clip_grad_norm_", { { "max_norm", U.REQUIRED }, { "norm_type", 2.0 } }, ...)
  local p = o.norm_type
  if p == "inf" then p = math.huge end
  if type(p) ~= "number" then U.errorf("clip_grad_norm_: norm_type must be a number, got %s", U.typename(p)) end
  local sharded, replicated, grads = 0.0, 0.0, {}
  for _, u in ipairs(FSDP.fsdp_modules(self)) do
    local g = u._flat_param and u._flat_param.grad
    if g then
      grads[#grads + 1] = g
      local n = p == math.huge and g:abs():max():item() or g:double():abs():pow(p):sum():item()
      if u._shards == 1 then
        replicated = p == math.huge and math.max(replicated, n) or replicated + n
      else
        sharded = p == math.huge and math.max(sharded, n) or sharded + n
      end
    end
  end
  local t = torch.tensor({ sharded }, { dtype = torch.float64, device = dist._device() })
  dist.all_reduce(t, p == math.huge and dist.ReduceOp.MAX or dist.ReduceOp.SUM)
  local total
  if p == math.huge then total = math.max(t:item(), replicated)
  else total = (t:item() + replicated) ^ (1 / p) end
  local coef = o.max_norm / (total + 1e-6)
  if coef < 1 then
    torch.no_grad(function() for _, g in ipairs(grads) do g:mul_(coef) end end)
  end
  return torch.tensor(total)
end

-- ---- full parameters ----

-- Gather every unit's full parameters (in the parameters' dtype) back under their original
-- names, as Parameters; on close write this rank's slice back (writeback) and reshard.
local summon_spec = { { "recurse", true }, { "writeback", true }, { "rank0_only", false }, { "offload_to_cpu", false },
  { "with_grads", false } }

local function summon_unit(u)
  local full = u:_gather(u._dtype)
  local params, mv = {}, values_of(u._fsdp_wrapped_module)
  for i = 1, #u._numels do
    params[i] = Parameter(full:narrow(0, u._offsets[i], u._numels[i]):view(u._shapes[i]), u._flat_param.requires_grad)
  end
  u._fsdp_wrapped_module._flat_param = nil
  for _, e in ipairs(u._modules_owned) do
    for _, name in ipairs(e.names) do
      for _, s in ipairs(u._slots) do
        if s.module == e.module and s.name == name then e.module[name] = params[s.index] end
      end
    end
  end
  values_of(u)._summoned = { full = full, params = params }
  return mv
end

local function reshard_unit(u, writeback)
  local st = u._summoned
  values_of(u)._summoned = nil
  for _, s in ipairs(u._slots) do s.module[s.name] = nil end
  u._fsdp_wrapped_module._flat_param = u._flat_param
  if writeback then
    local full = st.full
    for i, p in ipairs(st.params) do -- a parameter replaced by another (load_state_dict assign) is copied in
      local place = full:narrow(0, u._offsets[i], u._numels[i]):view(u._shapes[i])
      if p:data_ptr() ~= place:data_ptr() then place:copy_(p:detach()) end
    end
    local mine = u._shards == 1 and 0 or u.rank
    torch.no_grad(function() u._flat_param:copy_(full:narrow(0, mine * u._shard_numel, u._shard_numel)) end)
  end
end

function FSDP.summon_full_params(module, ...)
  local o = U.parse("summon_full_params", summon_spec, ...)
  if o.rank0_only or o.offload_to_cpu or o.with_grads then
    U.error("summon_full_params: rank0_only, offload_to_cpu and with_grads are not supported; every rank gets the full parameters on their device")
  end
  local units = o.recurse and FSDP.fsdp_modules(module) or FSDP.fsdp_modules(module, true)
  local done = {}
  local ok, err = pcall(function()
    for _, u in ipairs(units) do
      if u._summoned then U.error("summon_full_params: the parameters are already summoned") end
      if u._flat_param then summon_unit(u); done[#done + 1] = u end
    end
  end)
  local function close()
    for i = #done, 1, -1 do reshard_unit(done[i], o.writeback) end
    done = {}
  end
  if not ok then close(); error(err, 0) end
  return setmetatable({}, { __close = close, __name = "torch.distributed.fsdp.summon_full_params" })
end

-- ---- state dicts ----

function FSDP.state_dict_type(module, state_dict_type, state_dict_config, optim_state_dict_config)
  if getmetatable(state_dict_type) ~= SDT._mt then
    U.errorf("state_dict_type: expected a StateDictType, got %s", tostring(state_dict_type))
  end
  if state_dict_type ~= SDT.FULL_STATE_DICT then
    U.errorf("state_dict_type: %s is not supported in nnrepl (it needs sharded tensors); use StateDictType.FULL_STATE_DICT", state_dict_type.name)
  end
  local units = FSDP.fsdp_modules(module)
  local old = {}
  for i, u in ipairs(units) do
    old[i] = { u._state_dict_type, u._state_dict_config, u._optim_state_dict_config }
    local v = values_of(u)
    v._state_dict_type = state_dict_type
    v._state_dict_config = state_dict_config or fsdp.FullStateDictConfig()
    v._optim_state_dict_config = optim_state_dict_config
  end
  return setmetatable({}, { __name = "torch.distributed.fsdp.state_dict_type", __close = function()
    for i, u in ipairs(units) do
      local v = values_of(u)
      v._state_dict_type, v._state_dict_config, v._optim_state_dict_config = old[i][1], old[i][2], old[i][3]
    end
  end })
end
FSDP.set_state_dict_type = function(...)
  FSDP.state_dict_type(...) -- as PyTorch's: it stays set (no scope)
end

local function clean(key) return (key:gsub("_fsdp_wrapped_module%.", "")) end

-- named_parameters / named_buffers without the "_fsdp_wrapped_module." of each unit, as PyTorch's
for _, m in ipairs({ "named_parameters", "named_buffers" }) do
  FSDP[m] = function(self, ...)
    local out = {}
    for i, e in ipairs(Module[m](self, ...)) do out[i] = { clean(e[1]), e[2] } end
    return U.named_list(out)
  end
end

-- the full state dict under the unwrapped module's names (every rank, or rank 0 with rank0_only)
function FSDP:state_dict(...)
  if self._summoned or not self:_is_root() then return Module.state_dict(self, ...) end
  local o = U.parse("state_dict", { { "destination" }, { "prefix", "" }, { "keep_vars", false } }, ...)
  local cfg = self._state_dict_config
  local out = o.destination or U.OrderedDict.new()
  local _ <close> = FSDP.summon_full_params(self, { writeback = false })
  local sd = Module.state_dict(self, { prefix = o.prefix, keep_vars = true })
  if cfg.rank0_only and self.rank ~= 0 then return out end
  local casts = {}
  for _, u in ipairs(FSDP.fsdp_modules(self)) do
    for t, dt in pairs(u._buffer_dtypes or {}) do casts[t] = dt end
  end
  for k, t in pairs(sd) do
    local dt = casts[t]
    t = t:detach()
    if dt then t = t:to(dt) end
    if cfg.offload_to_cpu then t = t:to("cpu") end
    out[clean(k)] = t
  end
  return out
end

-- a full state dict (the unwrapped module's names) loaded into the shards on every rank
function FSDP:load_state_dict(state_dict, ...)
  if self._summoned or not self:_is_root() then return Module.load_state_dict(self, state_dict, ...) end
  local _ <close> = FSDP.summon_full_params(self, { writeback = true })
  local wrapped = {}
  for k in pairs(Module.state_dict(self, { keep_vars = true })) do wrapped[clean(k)] = k end
  local sd = U.OrderedDict.new()
  for k, t in pairs(state_dict) do sd[wrapped[k] or k] = t end
  return Module.load_state_dict(self, sd, ...)
end

return fsdp
