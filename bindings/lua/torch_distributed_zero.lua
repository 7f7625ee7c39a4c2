-- torch.distributed.optim.ZeroRedundancyOptimizer: the optimizer state sharded over the ranks.
-- Each parameter is owned by one rank (sorted by size, largest first, each to the least loaded
-- rank so far, as PyTorch assigns them); a rank keeps the wrapped optimizer's state only for its
-- own, step() updates those and broadcasts every parameter from its owner.
--
--   local opt = ZeroRedundancyOptimizer(model:parameters(), {optimizer_class = torch.optim.Adam, lr = 1e-3})
--   opt:consolidate_state_dict(0); if rank == 0 then torch.save(opt:state_dict(), "opt.pt") end
local torch = require "torch"
local U = require "nn_util"
local dist = require "torch_distributed"
local optim = require "torch_optim"
local Join = require "torch_distributed_join"

local Optimizer = optim.Optimizer
local id = torch._optim.id

dist.optim = dist.optim or {}
local ZeRO = Optimizer:extend("ZeroRedundancyOptimizer")
dist.optim.ZeroRedundancyOptimizer = ZeRO

local own_keys = { optimizer_class = true, process_group = true, parameters_as_bucket_view = true, overlap_with_ddp = true }

local function is_class(c) return type(c) == "table" and getmetatable(c) ~= nil and getmetatable(c).__call ~= nil and c.__init ~= nil end

-- the parameters given: a list of tensors or of parameter groups (dicts), as PyTorch checks them
local function check_params(params)
  if torch.is_tensor(params) then
    U.errorf("params argument should be an iterable of Tensors, but got %s", U.typename(params))
  end
  if type(params) == "function" then
    local list = {}
    for p in params do list[#list + 1] = p end
    params = list
  end
  if type(params) ~= "table" then
    U.errorf("params argument should be an iterable of Tensors or dicts, but got %s", U.typename(params))
  end
  if #params == 0 then U.error("ZeroRedundancyOptimizer did not receive any parameters") end
  local tensors, dicts = true, true
  for _, p in ipairs(params) do
    tensors = tensors and torch.is_tensor(p)
    dicts = dicts and type(p) == "table" and not torch.is_tensor(p)
  end
  if not tensors and not dicts then U.error("params argument should be an iterable of Tensors or dicts") end
  local all = {}
  if tensors then all = params else
    for _, g in ipairs(params) do
      local ps = g.params
      if torch.is_tensor(ps) then ps = { ps } end
      for _, p in ipairs(ps or {}) do all[#all + 1] = p end
    end
  end
  local first = all[1] and all[1]:type()
  for _, p in ipairs(all) do
    if p.is_sparse then U.errorf("ZeroRedundancyOptimizer only supports using the same dense type for all parameters but got %s", p:type()) end
    if p:type() ~= first then
      U.errorf("ZeroRedundancyOptimizer only supports using the same dense type for all parameters but got both %s and %s", first, p:type())
    end
  end
  return params
end

-- ZeroRedundancyOptimizer(params, {optimizer_class =, process_group =, parameters_as_bucket_view = false,
-- overlap_with_ddp = false, ...the optimizer's options}); or (params, optimizer_class, {...})
function ZeRO:__init(params, ...)
  local n = select("#", ...)
  local cls, opts = nil, {}
  if n >= 1 and not U.is_opts((select(1, ...))) then cls = (select(1, ...)) end
  local last = n >= 1 and select(n, ...) or nil
  if U.is_opts(last) then opts = last end
  if n > (cls ~= nil and 1 or 0) + (U.is_opts(last) and 1 or 0) then
    U.error("ZeroRedundancyOptimizer(params, optimizer_class, {options}): too many positional arguments")
  end
  local defaults = {}
  for k, v in pairs(opts) do
    if k == "optimizer_class" then
      if cls ~= nil then U.error("ZeroRedundancyOptimizer got multiple values for argument 'optimizer_class'") end
      cls = v
    elseif not own_keys[k] then defaults[k] = v end
  end
  if cls == nil then U.error("ZeroRedundancyOptimizer: optimizer_class is required (e.g. torch.optim.Adam)") end
  if not is_class(cls) then
    U.errorf("ZeroRedundancyOptimizer: optimizer_class must be an optimizer class such as torch.optim.SGD, got %s", U.typename(cls))
  end
  if opts.overlap_with_ddp then
    U.error("ZeroRedundancyOptimizer: overlap_with_ddp=true is not supported (it needs DDP's ddp_zero_hook comm hooks); use overlap_with_ddp=false and call step() after backward")
  end
  if not (dist.is_available() and dist.is_initialized()) then
    U.error("Default process group has not been initialized, please make sure to call init_process_group.")
  end
  params = check_params(params)
  dist.algorithms.Joinable.__init(self)
  self._initialized = false
  Optimizer.__init(self, params, defaults)
  self.process_group = opts.process_group or dist.group.WORLD
  self.world_size = dist.get_world_size(self.process_group)
  self.rank = dist.get_rank(self.process_group)
  self.global_rank = dist.get_global_rank(self.process_group, self.rank)
  self.parameters_as_bucket_view = opts.parameters_as_bucket_view == true
  self._overlap_with_ddp = false
  self._default_device = self.param_groups[1].params[1].device
  self._optim_constructor = cls
  self._optim_defaults = defaults
  self._all_state_dicts = {}
  local local_groups = self:_partition_parameters()[self.rank + 1]
  local kw = {}
  for k, v in pairs(defaults) do kw[k] = v end
  self.optim = cls(local_groups, kw)
  self:_sync_param_groups(self.optim.param_groups, self.param_groups)
  self._initialized = true
end

-- copies the options (every key but params) of each group of src into dst's
function ZeRO:_sync_param_groups(src, dst)
  for i, g in ipairs(src) do
    for k, v in pairs(g) do
      if k ~= "params" and k ~= "param_names" then dst[i][k] = v end
    end
  end
end

function ZeRO:_clear_cache()
  self._partition = nil
  self._param_to_rank, self._param_to_index, self._index_to_param = nil, nil, nil
end

-- for each rank (list index rank + 1), its parameter groups: each global group's options with
-- the parameters that rank owns
function ZeRO:_partition_parameters()
  if self._partition then return self._partition end
  local world = self.world_size
  local sizes, parts = {}, {}
  for r = 1, world do sizes[r], parts[r] = 0, {} end
  self._param_to_rank, self._param_to_index, self._index_to_param = {}, {}, {}
  local index = 0
  for gi, g in ipairs(self.param_groups) do
    local order = {}
    for i, p in ipairs(g.params) do
      order[i] = i
      self._param_to_index[id(p)] = index
      self._index_to_param[index] = p
      index = index + 1
    end
    -- largest first; equal sizes keep their order (Python's stable sort)
    table.sort(order, function(a, b)
      local na, nb = g.params[a]:numel(), g.params[b]:numel()
      if na ~= nb then return na > nb end
      return a < b
    end)
    local per = {}
    for r = 1, world do per[r] = {} end
    for _, i in ipairs(order) do
      local r = 1 -- the least loaded rank, the lowest of equals
      for k = 2, world do if sizes[k] < sizes[r] then r = k end end
      local p = g.params[i]
      per[r][#per[r] + 1] = p
      sizes[r] = sizes[r] + p:numel()
      self._param_to_rank[id(p)] = r - 1
    end
    for r = 1, world do
      local lg = {}
      for k, v in pairs(g) do if k ~= "params" and k ~= "param_names" then lg[k] = v end end
      lg.params = per[r]
      parts[r][gi] = lg
    end
  end
  self._partition = parts
  return parts
end

-- the rank (of the group) that owns parameter p
function ZeRO:_owner(p)
  self:_partition_parameters()
  local r = self._param_to_rank[id(p)]
  if r == nil then U.error("ZeroRedundancyOptimizer: the tensor is not one of the optimizer's parameters") end
  return r
end

function ZeRO:add_param_group(group)
  Optimizer.add_param_group(self, group)
  if not self._initialized then return end
  self:_clear_cache()
  local groups = self:_partition_parameters()[self.rank + 1]
  -- the earlier groups keep their owners: only the new group reaches the local optimizer
  if #groups == #self.optim.param_groups + 1 then
    self.optim:add_param_group(groups[#groups])
    local last = #groups
    self:_sync_param_groups({ [last] = self.optim.param_groups[last] }, self.param_groups)
  end
end

-- every parameter from its owner: one broadcast per parameter, or (parameters_as_bucket_view)
-- one flat buffer per rank of its trainable parameters
function ZeRO:_sync_params()
  local pg = self.process_group
  local parts = self:_partition_parameters()
  local works = {}
  for r = 0, self.world_size - 1 do
    local src = dist.get_global_rank(pg, r)
    local ps = {}
    for _, g in ipairs(parts[r + 1]) do
      for _, p in ipairs(g.params) do
        if not self.parameters_as_bucket_view or p.requires_grad then ps[#ps + 1] = p end
      end
    end
    if self.parameters_as_bucket_view and #ps > 0 then
      local flat = {}
      for i, p in ipairs(ps) do flat[i] = p:detach():reshape(-1) end
      flat = torch.cat(flat, 0)
      dist.broadcast(flat, { src = src, group = pg })
      if r ~= self.rank then
        local _ <close> = torch.no_grad()
        local at = 0
        for _, p in ipairs(ps) do
          p:detach():copy_(flat:narrow(0, at, p:numel()):view(p:size()))
          at = at + p:numel()
        end
      end
    elseif not self.parameters_as_bucket_view then
      for _, p in ipairs(ps) do works[#works + 1] = dist.broadcast(p:detach(), { src = src, group = pg, async_op = true }) end
    end
  end
  for _, w in ipairs(works) do w:wait() end
end

-- step(closure): the wrapped optimizer's step on this rank's parameters, then every parameter from its owner
function ZeRO:step(closure)
  Join.notify_join_context(self)
  return self:_step(closure)
end

function ZeRO:_step(closure)
  self:_sync_param_groups(self.param_groups, self.optim.param_groups)
  local loss = self.optim:step(closure)
  self:_sync_param_groups(self.optim.param_groups, self.param_groups)
  self:_sync_params()
  return loss
end

-- ---- state dicts ----

-- v with its tensors replaced by {__tensor = k} (their list in ts, moved to dev)
local function strip(v, ts, dev)
  if torch.is_tensor(v) then
    local t = v:detach():to(dev):contiguous()
    ts[#ts + 1] = t
    local shape = {}
    for d = 0, t:dim() - 1 do shape[d + 1] = t:size(d) end
    return { __tensor = #ts, shape = shape, dtype = tostring(t.dtype):gsub("^torch%.", "") }
  end
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = strip(x, ts, dev) end
  return out
end

local function dress(v, ts)
  if type(v) ~= "table" then return v end
  if v.__tensor then return ts[v.__tensor] end
  local out = {}
  for k, x in pairs(v) do out[k] = dress(x, ts) end
  return out
end

-- a state dict from group rank src to every rank of the group (tensors on the CPU)
function ZeRO:_broadcast_state(sd, src)
  local pg, dev = self.process_group, dist._device(pg)
  local gsrc = dist.get_global_rank(pg, src)
  local ts = {}
  local desc = { src == self.rank and strip(sd, ts, dev) or false }
  dist.broadcast_object_list(desc, { src = gsrc, group = pg })
  local function walk(v, out)
    if type(v) ~= "table" then return end
    if v.__tensor then out[v.__tensor] = v; return end
    for _, x in pairs(v) do walk(x, out) end
  end
  local specs = {}
  walk(desc[1], specs)
  local got = {}
  for k = 1, #specs do
    local t = ts[k]
    if t == nil then t = torch.zeros(specs[k].shape, { dtype = torch[specs[k].dtype], device = dev }) end
    if t:numel() > 0 then dist.broadcast(t, { src = gsrc, group = pg }) end
    got[k] = t:to("cpu"):clone()
  end
  return dress(desc[1], got)
end

-- consolidate_state_dict(to = 0): every rank's shard of the state to rank `to` (all ranks call it)
function ZeRO:consolidate_state_dict(to)
  if type(to) == "table" then
    local o = U.parse("consolidate_state_dict", { { "to", 0 } }, to)
    to = o.to
  end
  to = to or 0
  if math.type(to) ~= "integer" or to < 0 or to >= self.world_size then
    U.errorf("consolidate_state_dict: to must be a rank of the group (0 to %d), got %s", self.world_size - 1, tostring(to))
  end
  self._all_state_dicts = {}
  for r = 0, self.world_size - 1 do
    local sd = self._all_state_dicts
    local got = self:_broadcast_state(r == self.rank and self.optim:state_dict() or nil, r)
    if self.rank == to then sd[r + 1] = got end
  end
end

-- the whole state with the global parameter indices, on the rank consolidate_state_dict sent it to
function ZeRO:state_dict()
  if #self._all_state_dicts == 0 then
    U.errorf("Optimizer state has not been consolidated on this rank. Please call `consolidate_state_dict(to=%d)` on all ranks beforehand if you meant to save the global state.",
      self.rank)
  end
  local sd = Optimizer.state_dict(self)
  local parts = self:_partition_parameters()
  for r, local_sd in ipairs(self._all_state_dicts) do
    for gi, lg in ipairs(local_sd.param_groups) do
      local global_params = parts[r][gi].params
      for j, lid in ipairs(lg.params) do
        local s = local_sd.state[lid]
        if s ~= nil then sd.state[self._param_to_index[id(global_params[j])]] = s end
      end
    end
  end
  return sd
end

-- load_state_dict(sd): a state_dict() of an optimizer over the same parameters; each rank keeps its shard
function ZeRO:load_state_dict(sd)
  if type(sd) ~= "table" or type(sd.param_groups) ~= "table" or type(sd.state) ~= "table" then
    U.error("load_state_dict expects a table with 'state' and 'param_groups'")
  end
  local groups = self.param_groups
  if #groups ~= #sd.param_groups then U.error("loaded state dict has a different number of parameter groups") end
  for i = 1, #groups do
    if #groups[i].params ~= #sd.param_groups[i].params then
      U.error("loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
    end
  end
  local parts = self:_partition_parameters()
  local local_sd, next_id = { state = {}, param_groups = {} }, 0
  for gi, lg in ipairs(parts[self.rank + 1]) do
    local saved = sd.param_groups[gi]
    local pos = {} -- a parameter's position in the saved group
    for j, p in ipairs(groups[gi].params) do pos[id(p)] = j end
    local g = {}
    for k, v in pairs(saved) do if k ~= "params" then g[k] = v end end
    g.params = {}
    for j, p in ipairs(lg.params) do
      g.params[j] = next_id
      local s = sd.state[saved.params[pos[id(p)]]]
      if s ~= nil then local_sd.state[next_id] = s end
      next_id = next_id + 1
    end
    local_sd.param_groups[gi] = g
  end
  self.optim:load_state_dict(local_sd)
  self:_sync_param_groups(self.optim.param_groups, self.param_groups)
end

-- ---- a Joinable: a joined rank's main hook steps its shard (with the gradients it holds: with
-- DDP joined before it, the active ranks' average) and broadcasts it, as step() does ----
local ZeROJoinHook = dist.algorithms.JoinHook:extend("_ZeROJoinHook")
function ZeROJoinHook:__init(zero) self.zero = zero end
function ZeROJoinHook:main_hook() self.zero:_step() end

function ZeRO:join_hook() return ZeROJoinHook(self) end
function ZeRO:join_device() return self._default_device end
function ZeRO:join_process_group() return self.process_group end

return ZeRO
