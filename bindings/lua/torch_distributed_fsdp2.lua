-- torch.distributed.fsdp.fully_shard (FSDP2), applied bottom-up as in PyTorch's examples:
--   for _, block in ipairs(model.layers) do fully_shard(block) end
--   fully_shard(model)
-- Each parameter the module owns (not already owned by a fully_shard-ed submodule) is cut
-- along dim 0: this rank keeps rows [rank*c, rank*c + c) of its c = ceil(dim0 / world) rows
-- (fewer, or none, on the last ranks), registered under its own name. nnrepl has no DTensor:
-- the parameters and state_dict() hold those local chunks (PyTorch's DTensor.to_local()); the
-- full state dict comes from torch.distributed.checkpoint.state_dict.get_model_state_dict.
-- The module's forward all-gathers the chunks (one collective), runs on the full parameters
-- and, with reshard_after_forward, frees them (saved-tensor hooks as in FSDP1); backward
-- reduce-scatters the gradients (averaged) into the chunks' .grad.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local Parameter = require "nn_parameter"
local dist = torch.distributed
local fsdp = dist.fsdp
local saved = fsdp._saved

local function values_of(m) return getmetatable(m).__index end

local MPP_MT
fsdp.MixedPrecisionPolicy, MPP_MT = saved.record("MixedPrecisionPolicy", { { "param_dtype" }, { "reduce_dtype" },
  { "output_dtype" }, { "cast_forward_inputs", true } })

local OP_MT = { __name = "torch.distributed.fsdp.OffloadPolicy", __tostring = function() return "OffloadPolicy()" end }
function fsdp.OffloadPolicy() return setmetatable({}, OP_MT) end
function fsdp.CPUOffloadPolicy()
  U.error("CPUOffloadPolicy is not supported in nnrepl; keep the parameters on the device (OffloadPolicy())")
end

-- ---- the state of one fully_shard-ed module ----

local State = {}
State.__index = State

local function state_of(m) return Module.is_module(m) and rawget(values_of(m), "_fsdp2_state") or nil end

-- (module, name, index) slots of the parameters module owns, and the unique parameters
local function owned(module)
  local slots = saved.owned_slots(module, state_of)
  local unique, index = {}, {}
  for _, s in ipairs(slots) do
    if not index[s.param] then unique[#unique + 1] = s.param; index[s.param] = #unique end
    s.index, s.param = index[s.param], nil
  end
  return slots, unique
end

-- cut each parameter along dim 0 and register this rank's chunk under its names
function State:shard(unique)
  local W, r = self.world, self.rank
  self.rows, self.chunk, self.shapes, self.locals, self.dtypes = {}, {}, {}, {}, {}
  for i, p in ipairs(unique) do
    if p.dtype ~= unique[1].dtype then
      U.errorf("fully_shard: the parameters of one module must share a dtype, found %s and %s", tostring(unique[1].dtype), tostring(p.dtype))
    end
    if p:dim() == 0 then U.errorf("fully_shard: a 0-dim parameter cannot be sharded along dim 0 (parameter %d of the module)", i) end
    local d0 = p:size(0)
    local c = (d0 + W - 1) // W
    local start = math.min(r * c, d0)
    local len = math.max(0, math.min(c, d0 - start))
    self.rows[i], self.chunk[i], self.shapes[i], self.dtypes[i] = d0, c, p:size():totable(), p.dtype
    local chunk = p:detach():narrow(0, start, len):clone()
    self.locals[i] = Parameter(chunk, p.requires_grad)
    fsdp._fsdp2_chunk_group[self.locals[i]] = self.group or false
  end
  for _, s in ipairs(self.slots) do s.module[s.name] = self.locals[s.index] end
end

-- rows of one element of dim 0 (the product of the other dims)
local function row_numel(shape)
  local n = 1
  for d = 2, #shape do n = n * shape[d] end
  return n
end

-- this rank's chunks flattened, each padded to its c rows, one after the other (differentiable:
-- the gradient reaches the chunks through it)
function State:mine()
  local parts = {}
  for i, p in ipairs(self.locals) do
    local x = p:reshape(-1)
    local want = self.chunk[i] * row_numel(self.shapes[i])
    if x:numel() < want then x = torch.cat({ x, torch.zeros(want - x:numel(), { dtype = x.dtype, device = x.device }) }, 0) end
    parts[i] = x
  end
  return torch.cat(parts, 0)
end

-- every rank's mine(), rank after rank (one all-gather), in dtype
function State:all_gather(mine, dtype)
  local x = mine:detach()
  if dtype and x.dtype ~= dtype then x = x:to(dtype) end
  if self.world == 1 then return x:clone() end
  local all = torch.empty(x:numel() * self.world, { dtype = x.dtype, device = x.device })
  dist.all_gather_into_tensor(all, x, { group = self.group })
  return all
end

-- the full parameters out of all_gather's result (differentiable)
function State:split(all)
  local W = self.world
  all = all:view(W, -1)
  local fulls, off = {}, 0
  for i = 1, #self.locals do
    local size = self.chunk[i] * row_numel(self.shapes[i])
    local shape = { W * self.chunk[i] }
    for d = 2, #self.shapes[i] do shape[d] = self.shapes[i][d] end
    fulls[i] = all:narrow(1, off, size):reshape(shape):narrow(0, 0, self.rows[i]):contiguous()
    off = off + size
  end
  return fulls
end

-- the full parameters (no autograd), in dtype (param_dtype when nil, their own when false)
function State:gather(dtype)
  local mine = torch.no_grad(function() return self:mine() end)
  if dtype == nil then dtype = self.param_dtype end
  return torch.no_grad(function() return self:split(self:all_gather(mine, dtype or nil)) end)
end

-- the gradient of all_gather's result, reduced over the ranks (one reduce-scatter) and averaged:
-- the gradient of this rank's mine(), in its dtype
function State:reduce(g, dtype)
  local rdt = self.reduce_dtype or self.param_dtype or dtype
  g = g:to(rdt):contiguous()
  local out
  if self.world > 1 then
    out = torch.empty(g:numel() // self.world, { dtype = rdt, device = g.device })
    dist.reduce_scatter_tensor(out, g, { group = self.group })
  else
    out = g:clone()
  end
  out:div_(self.world)
  return out:to(dtype)
end

function State:_full_for_backward(i)
  if not self.regathered then self.regathered = self:gather() end
  return self.regathered[i]
end

local AllGather = torch.autograd.Function:extend("FSDP2AllGather")

function AllGather.forward(ctx, st, mine)
  ctx.st, ctx.dtype = st, mine.dtype
  local all = st.unsharded_all or st:all_gather(mine, st.param_dtype)
  st.unsharded_all = nil
  return all
end

function AllGather.backward(ctx, g)
  local st = ctx.st
  st.regathered = nil
  if g == nil then return nil, nil end
  if not st.sync then -- set_requires_gradient_sync(false): keep the full gradient here
    st.pending = st.pending and st.pending + g or g:clone()
    return nil, nil
  end
  if st.pending then g = g + st.pending; st.pending = nil end
  return nil, st:reduce(g, ctx.dtype)
end

local active = 0 -- fully_shard-ed forwards running: the outermost one (the root) keeps its parameters for backward

local function run_forward(st, module, ...)
  local args = table.pack(...)
  if st.param_dtype and st.cast_forward_inputs then
    for i = 1, args.n do
      local a = args[i]
      if torch.is_tensor(a) and a:is_floating_point() and a.dtype ~= st.param_dtype then args[i] = a:to(st.param_dtype) end
    end
  end
  local grad = false
  if torch.is_grad_enabled() then
    for _, p in ipairs(st.locals) do grad = grad or p.requires_grad end
  end
  st.regathered = nil
  st:reshard() -- an unshard() before this forward left the gathered tensor for it
  for _, m in ipairs(st.forward_prefetch or {}) do state_of(m):unshard() end
  local fulls
  if grad then fulls = st:split(AllGather.apply(st, st:mine()))
  elseif st.unsharded_all then fulls = st:split(st.unsharded_all); st.unsharded_all = nil
  else fulls = st:gather() end
  for _, s in ipairs(st.slots) do values_of(s.module)[s.name] = fulls[s.index] end
  local free = grad and st.reshard_after_forward and active > 0 and st.world > 1
  local ptrs = {}
  if free then
    for i = 1, #st.locals do
      local ptr = fulls[i]:untyped_storage():data_ptr()
      saved.live[ptr] = { st, i }
      ptrs[#ptrs + 1] = ptr
    end
  end
  fulls = nil
  active = active + 1
  local ok, r = pcall(function()
    local scope = free and torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack)
    local res = table.pack(st.forward(module, table.unpack(args, 1, args.n)))
    if scope then getmetatable(scope).__close(scope) end
    return res
  end)
  active = active - 1
  for _, p in ipairs(ptrs) do saved.live[p] = nil end
  for _, s in ipairs(st.slots) do values_of(s.module)[s.name] = st.locals[s.index] end
  if not ok then error(r, 0) end
  if st.output_dtype then
    for i = 1, r.n do
      local a = r[i]
      if torch.is_tensor(a) and a:is_floating_point() then r[i] = a:to(st.output_dtype) end
    end
  end
  return table.unpack(r, 1, r.n)
end

-- the fully_shard-ed modules in m's tree (m first when it is one)
local function states_in(m)
  local out = {}
  for _, x in ipairs(m:modules()) do
    local st = state_of(x)
    if st then out[#out + 1] = st end
  end
  return out
end

fsdp._fsdp2_states_in = states_in -- for torch.distributed.checkpoint's sharded state dicts
-- every chunk fully_shard made -> its process group (false: the default one); clip_grad_norm_
-- combines the chunks' norms over it
fsdp._fsdp2_chunk_group = setmetatable({}, { __mode = "k" })

local methods = {}
function methods.set_requires_gradient_sync(self, requires, recurse)
  if type(requires) ~= "boolean" then U.errorf("set_requires_gradient_sync: expected a boolean, got %s", U.typename(requires)) end
  for _, st in ipairs(recurse == false and { state_of(self) } or states_in(self)) do st.sync = requires end
end
function methods.set_reshard_after_forward(self, reshard, recurse)
  if type(reshard) ~= "boolean" then U.errorf("set_reshard_after_forward: expected a boolean, got %s", U.typename(reshard)) end
  for _, st in ipairs(recurse == false and { state_of(self) } or states_in(self)) do st.reshard_after_forward = reshard end
end
-- unshard(): all-gather the parameters now (in param_dtype) and register the full ones under
-- their names; the module's next forward uses this gather instead of its own, as PyTorch's does
-- after an explicit unshard or a prefetch. The collectives are synchronous here, so the handle of
-- async_op=true is already done. reshard() puts the chunks back.
function State:unshard()
  if not self.unsharded_all then
    local mine = torch.no_grad(function() return self:mine() end)
    self.unsharded_all = self:all_gather(mine, self.param_dtype)
  end
  local fulls = torch.no_grad(function() return self:split(self.unsharded_all) end)
  for _, s in ipairs(self.slots) do
    s.module[s.name] = Parameter(fulls[s.index], self.locals[s.index].requires_grad)
  end
  self.is_unsharded = true
end

function State:reshard()
  if not self.is_unsharded then return end
  for _, s in ipairs(self.slots) do s.module[s.name] = self.locals[s.index] end
  self.is_unsharded = false
end

local Handle = { __name = "torch.distributed.fsdp.UnshardHandle" }
Handle.__index = Handle
function Handle.wait() end

function methods.unshard(self, async_op)
  if async_op ~= nil and type(async_op) ~= "boolean" then U.errorf("unshard: async_op must be a boolean, got %s", U.typename(async_op)) end
  state_of(self):unshard()
  if async_op then return setmetatable({}, Handle) end
end
function methods.reshard(self)
  local st = state_of(self)
  st:reshard()
  st.unsharded_all = nil
end

-- the fully_shard-ed modules of a prefetch list, checked
local function prefetch_states(fn, modules)
  if type(modules) ~= "table" or Module.is_module(modules) then
    U.errorf("%s: expected a list of fully_shard-ed modules, got %s", fn, U.typename(modules))
  end
  for i, m in ipairs(modules) do
    if not state_of(m) then U.errorf("%s: modules[%d] is not a fully_shard-ed module (%s)", fn, i, U.typename(m)) end
  end
  return table.move(modules, 1, #modules, 1, {})
end

-- forward prefetch: this module's forward unshards these modules before its own runs
function methods.set_modules_to_forward_prefetch(self, modules)
  state_of(self).forward_prefetch = prefetch_states("set_modules_to_forward_prefetch", modules)
end
-- backward prefetch: accepted and checked; nnrepl's backward gathers each module's parameters
-- when its gradient is needed, one collective after the other, so the order is already right
function methods.set_modules_to_backward_prefetch(self, modules)
  state_of(self).backward_prefetch = prefetch_states("set_modules_to_backward_prefetch", modules)
end

local spec = { { "mesh" }, { "reshard_after_forward", true }, { "shard_placement_fn" }, { "mp_policy" },
  { "offload_policy" }, { "ignored_params" } }

function fsdp.fully_shard(module, ...)
  local o = U.parse("fully_shard", spec, ...)
  if not (dist.is_initialized and dist.is_initialized()) then
    U.error("fully_shard: Default process group has not been initialized, please make sure to call init_process_group.")
  end
  if not Module.is_module(module) then
    U.errorf("fully_shard: module must be an nn.Module (a list of modules is not supported), got %s", U.typename(module))
  end
  if state_of(module) then U.error("fully_shard: the module is already sharded by fully_shard") end
  if o.mesh ~= nil and not (type(o.mesh) == "table" and o.mesh.ndim == 1) then
    U.error("fully_shard: only a 1-D mesh is supported (mesh=nil: the default process group; of a 2-D mesh pass mesh[\"dp\"]; HSDP is not supported)")
  end
  local group = o.mesh and o.mesh:get_group() or nil
  if type(o.reshard_after_forward) ~= "boolean" then
    U.errorf("fully_shard: reshard_after_forward must be a boolean (an int for resharding to a smaller mesh is not supported), got %s", U.typename(o.reshard_after_forward))
  end
  if o.shard_placement_fn ~= nil then U.error("fully_shard: shard_placement_fn is not supported; parameters are sharded on dim 0") end
  if o.ignored_params ~= nil then U.error("fully_shard: ignored_params is not supported") end
  if o.offload_policy ~= nil and getmetatable(o.offload_policy) ~= OP_MT then
    U.errorf("fully_shard: offload_policy must be an OffloadPolicy, got %s", U.typename(o.offload_policy))
  end
  local mp = o.mp_policy or fsdp.MixedPrecisionPolicy()
  if getmetatable(mp) ~= MPP_MT then U.errorf("fully_shard: mp_policy must be a MixedPrecisionPolicy, got %s", U.typename(mp)) end
  if dist.get_backend() == "nccl" then module:to(dist._device()) end
  local slots, unique = owned(module)
  local st = setmetatable({ slots = slots, world = dist.get_world_size(group), rank = dist.get_rank(group), group = group, sync = true,
    reshard_after_forward = o.reshard_after_forward, param_dtype = mp.param_dtype, reduce_dtype = mp.reduce_dtype,
    output_dtype = mp.output_dtype, cast_forward_inputs = mp.cast_forward_inputs, forward = module.forward }, State)
  st:shard(unique)
  local v = values_of(module)
  v._fsdp2_state = st
  v.forward = function(self, ...) return run_forward(st, self, ...) end
  local name = module:_get_name()
  v._get_name = function() return "FSDP" .. name end -- PyTorch's class FSDP<Name>, as printed
  for k, f in pairs(methods) do v[k] = f end
  return module
end

-- ---- torch.distributed.checkpoint.state_dict: full state dicts of fully_shard-ed models ----

dist.checkpoint = dist.checkpoint or {}
local sd_mod = dist.checkpoint.state_dict or {}
dist.checkpoint.state_dict = sd_mod

local SDO_MT
sd_mod.StateDictOptions, SDO_MT = saved.record("StateDictOptions", { { "full_state_dict", false }, { "cpu_offload", false },
  { "ignore_frozen_params", false }, { "keep_submodule_prefixes", true }, { "strict", true },
  { "broadcast_from_rank0", false }, { "flatten_optimizer_state_dict", false } })

local function options(fn, o)
  o = o or sd_mod.StateDictOptions()
  if getmetatable(o) ~= SDO_MT then U.errorf("%s: options must be a StateDictOptions, got %s", fn, U.typename(o)) end
  if not o.full_state_dict then
    U.errorf("%s: only StateDictOptions{full_state_dict=true} is supported (nnrepl has no DTensor for sharded state dicts)", fn)
  end
  return o
end

-- the model's full state dict: every fully_shard-ed module's chunks gathered under their names
function sd_mod.get_model_state_dict(model, ...)
  local o = U.parse("get_model_state_dict", { { "submodules" }, { "options" } }, ...)
  local opt = options("get_model_state_dict", o.options)
  if o.submodules ~= nil then U.error("get_model_state_dict: submodules is not supported") end
  local full = {}
  for _, st in ipairs(states_in(model)) do
    local f = torch.no_grad(function() return st:gather(false) end)
    for i, p in ipairs(st.locals) do full[p] = f[i] end
  end
  local out = U.OrderedDict.new()
  for k, t in pairs(model:state_dict({ keep_vars = true })) do
    local v = (full[t] or t):detach()
    if not (opt.ignore_frozen_params and full[t] and not t.requires_grad) then
      out[k] = opt.cpu_offload and v:to("cpu") or v
    end
  end
  return out
end

-- load a full state dict: each rank copies its chunks out of the full tensors
function sd_mod.set_model_state_dict(model, state_dict, ...)
  local o = U.parse("set_model_state_dict", { { "options" } }, ...)
  local opt = options("set_model_state_dict", o.options)
  local chunks = {}
  for _, st in ipairs(states_in(model)) do
    for i, p in ipairs(st.locals) do chunks[p] = { st, i } end
  end
  local local_sd = U.OrderedDict.new()
  for k, t in pairs(model:state_dict({ keep_vars = true })) do
    local v = state_dict[k]
    local c = chunks[t]
    if v ~= nil and c then
      local st, i = c[1], c[2]
      local start = math.min(st.rank * st.chunk[i], st.rows[i])
      v = v:to(t.device):narrow(0, start, t:size(0))
    end
    if v ~= nil then local_sd[k] = v end
  end
  for k, v in pairs(state_dict) do
    if local_sd[k] == nil then local_sd[k] = v end
  end
  return model:load_state_dict(local_sd, { strict = opt.strict })
end

return fsdp
