-- torch.nn.parallel: DistributedDataParallel (one process per rank, gradients
-- averaged by torch.distributed in buckets while backward runs) and DataParallel
-- (one process, the batch split over the GPUs).
--
--   local model = nn.parallel.DistributedDataParallel(net, {bucket_cap_mb=25, find_unused_parameters=false})
--   do local _ <close> = model:no_sync(); model(x):sum():backward() end  -- accumulate locally
--   model.module   -- the wrapped module; state_dict keys are "module.<name>"
local torch = require "torch"
local Module = require "nn_module"
local U = require "nn_util"

local parallel = {}

-- every tensor in a (nested) value, for the reducer's walk of the graph
local function collect_tensors(v, out, seen)
  if torch.is_tensor(v) then
    out[#out + 1] = v
  elseif type(v) == "table" and not seen[v] then
    seen[v] = true
    for _, x in pairs(v) do collect_tensors(x, out, seen) end
  end
  return out
end

local function to_bytes(mb) return math.floor(mb * 1024 * 1024) end

-- ---- DistributedDataParallel ----

local DDP = Module:extend("DistributedDataParallel")
parallel.DistributedDataParallel = DDP

local ddp_spec = {
  { "device_ids" }, { "output_device" }, { "dim", 0 }, { "broadcast_buffers", true }, { "init_sync", true },
  { "process_group" }, { "bucket_cap_mb" }, { "find_unused_parameters", false }, { "check_reduction", false },
  { "gradient_as_bucket_view", false }, { "static_graph", false },
}

local function dist_lib()
  local dist = torch.distributed
  if not (dist and dist.is_initialized()) then
    U.error("Default process group has not been initialized, please make sure to call init_process_group.")
  end
  return dist
end

-- Every rank must wrap the same model: compare parameter counts and sizes.
local function verify_params(dist, params)
  local n, total = #params, 0
  for _, p in ipairs(params) do total = total + p:numel() end
  local dev = dist._device()
  local mine = torch.tensor({ n, total }, { dtype = torch.int64 }):to(dev)
  local all = {}
  local world = dist.get_world_size()
  for r = 1, world do all[r] = torch.zeros(2, { dtype = torch.int64, device = dev }) end
  dist.all_gather(all, mine)
  for r = 1, world do
    local rn, rt = all[r][0]:item(), all[r][1]:item()
    if rn ~= n or rt ~= total then
      U.errorf("DistributedDataParallel: the model differs between ranks: rank %d has %d parameters (%d elements), rank %d has %d (%d elements)",
        dist.get_rank(), n, total, r - 1, rn, rt)
    end
  end
end

function DDP:__init(module, ...)
  local o = U.parse("DistributedDataParallel", ddp_spec, ...)
  local dist = dist_lib()
  if not Module.is_module(module) then
    U.errorf("DistributedDataParallel: module must be an nn.Module, got %s", U.typename(module))
  end
  if o.process_group ~= nil and o.process_group ~= dist.group.WORLD then
    U.error("DistributedDataParallel: only the default process group is supported")
  end
  self.module = module
  self.device_ids = o.device_ids
  self.output_device = o.output_device
  self.dim = o.dim
  self.broadcast_buffers = o.broadcast_buffers
  self.find_unused_parameters = o.find_unused_parameters
  self.gradient_as_bucket_view = o.gradient_as_bucket_view
  self.static_graph = o.static_graph
  self.bucket_bytes_cap = to_bytes(o.bucket_cap_mb or 25)
  self.require_backward_grad_sync = true
  self.require_forward_param_sync = true
  local params = module:parameters()
  local trainable = {}
  for _, p in ipairs(params) do if p.requires_grad then trainable[#trainable + 1] = p end end
  if #trainable == 0 then
    U.error("DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.")
  end
  local world = dist.get_world_size()
  if world > 1 then
    verify_params(dist, params)
    if o.init_sync then -- every rank starts from rank 0's parameters and buffers
      local states = {}
      for _, p in ipairs(params) do states[#states + 1] = p end
      for _, b in ipairs(module:buffers()) do states[#states + 1] = b end
      torch._dist.broadcast_coalesced(states, 0)
    end
  end
  -- as PyTorch: with the default cap the first bucket is small (1 MiB), so reduction starts early
  local first = o.bucket_cap_mb == nil and 1024 * 1024 or self.bucket_bytes_cap
  self._reducer = torch._dist.Reducer(trainable, self.bucket_bytes_cap, first, self.find_unused_parameters,
    self.gradient_as_bucket_view)
end

function DDP:forward(...)
  local dist = torch.distributed
  local sync = torch.is_grad_enabled() and self.require_backward_grad_sync
  if sync then self._reducer:prepare_forward() end
  if self.require_forward_param_sync and self.broadcast_buffers and dist.get_world_size() > 1 then
    local bufs = self.module:buffers()
    if #bufs > 0 then torch._dist.broadcast_coalesced(bufs, 0) end
  end
  local out = table.pack(self.module(...))
  if sync then self._reducer:prepare_backward(collect_tensors(out, {}, {})) end
  return table.unpack(out, 1, out.n)
end

-- `local _ <close> = model:no_sync()`: gradients of the backward passes inside
-- accumulate locally; the first backward after it averages everything. With a
-- function argument, runs it that way and returns its results.
function DDP:no_sync(fn)
  local old = self.require_backward_grad_sync
  self.require_backward_grad_sync = false
  if fn ~= nil then
    local r = table.pack(pcall(fn))
    self.require_backward_grad_sync = old
    if not r[1] then error(r[2], 0) end
    return table.unpack(r, 2, r.n)
  end
  return setmetatable({}, { __close = function() self.require_backward_grad_sync = old end,
    __name = "torch.nn.parallel.no_sync" })
end

-- The buckets as lists of 0-based indices into model.module:parameters() (those requiring grad).
function DDP:_buckets() return self._reducer:buckets() end

-- ---- DataParallel ----

local DP = Module:extend("DataParallel")
parallel.DataParallel = DP

local function device_index(d)
  if type(d) == "number" then return math.tointeger(d) end
  if type(d) == "string" then return math.tointeger(tonumber(d:match(":(%d+)$") or "0")) end
  if d ~= nil and d.index ~= nil then return d.index end
  return 0
end

-- PyTorch's chunk sizes for n rows over k devices: chunks of ceil(n / k), the last
-- smaller, fewer chunks than devices when n is small (30 over 8: 4 x 7 and 2).
function parallel.chunk_sizes(n, k)
  local size = math.max(1, (n + k - 1) // k)
  local out = {}
  local left = n
  while left > 0 do
    out[#out + 1] = math.min(size, left)
    left = left - size
  end
  return out
end

function DP:__init(module, ...)
  local o = U.parse("DataParallel", { { "device_ids" }, { "output_device" }, { "dim", 0 } }, ...)
  self.module = module
  self.dim = o.dim
  local cuda = torch.cuda
  local ngpu = (cuda and cuda.is_available() and cuda.device_count()) or 0
  if ngpu == 0 then -- no GPU: the module runs as is, as PyTorch's DataParallel does
    self.device_ids = {}
    return
  end
  local ids = {}
  if o.device_ids == nil then
    for i = 0, ngpu - 1 do ids[#ids + 1] = i end
  else
    for _, d in ipairs(o.device_ids) do ids[#ids + 1] = device_index(d) end
  end
  self.device_ids = ids
  self.output_device = device_index(o.output_device or ids[1])
  self.src_device_obj = torch.device("cuda:" .. ids[1])
end

-- An instance of cls made without running its __init (a registered module with empty registries).
local function bare_instance(cls)
  local own = rawget(cls, "__init")
  rawset(cls, "__init", function() end)
  local ok, inst = pcall(cls)
  rawset(cls, "__init", own)
  if not ok then error(inst, 0) end
  return inst
end

-- A copy of module m's structure for device dev: same classes and attributes, its own
-- registries; the parameter and buffer slots are filled by refresh(). slots collects
-- {module, registry, key, source tensor} for each of them.
local function replicate(m, memo, slots)
  if memo[m] then return memo[m] end
  local r = bare_instance(m.__class)
  memo[m] = r
  local values, rv = getmetatable(m).__index, getmetatable(r).__index
  local registered = {}
  for _, reg in ipairs({ "_parameters", "_buffers", "_modules" }) do
    for k in pairs(m[reg]) do registered[k] = true end
  end
  for k, v in pairs(values) do
    if not registered[k] then rv[k] = v end
  end
  rawset(r, "_non_persistent_buffers_set", m._non_persistent_buffers_set)
  for _, reg in ipairs({ "_parameters", "_buffers" }) do
    for k, t in pairs(m[reg]) do
      if t ~= nil then slots[#slots + 1] = { r, reg, k, t } end
    end
  end
  for k, c in pairs(m._modules) do
    local rc = c ~= nil and replicate(c, memo, slots) or nil
    r._modules:set(k, rc)
    rv[k] = rc
  end
  return r
end

-- A replica's own tensors on dev, made once: leaves (parameters require grad as
-- their sources do) whose values refresh() copies from the sources.
local function place(rep, dev)
  for _, s in ipairs(rep.slots) do
    local r, reg, k, t = s[1], s[2], s[3], s[4]
    local c = t:detach():to(dev)
    if reg == "_parameters" and t.requires_grad then c:requires_grad_(true) end
    s[5] = c
    r[reg]:set(k, c)
    getmetatable(r).__index[k] = c
  end
end

-- rep's tensors from the source's, or from another replica's (from)
local function refresh(rep, from)
  local _ <close> = torch.no_grad()
  for k, s in ipairs(rep.slots) do s[5]:copy_(from and from.slots[k][5] or s[4]) end
end

-- An event recorded now on stream s (of device i).
local function mark(s, i)
  local _ <close> = torch.cuda.device(i)
  local e = torch.cuda.Event()
  e:record(s)
  return e
end

-- Broadcast and reduction go over a binary tree of the devices (1 = device_ids[0], the
-- source): in round r, devices 1..2^r each copy to (or add from) the device 2^r further on,
-- so every GPU's links carry the parameters (or gradients) about once instead of device 1's
-- carrying them once per replica. Copies run on their source device's stream (copy_ between
-- GPUs orders itself with both streams), so the pairs of a round work at the same time.
local function tree_rounds(n)
  local steps, step = {}, 1
  while step < n do steps[#steps + 1] = step; step = step * 2 end
  return steps
end

-- At the end of a backward pass through the gathered output: each replica's parameter
-- gradients are added up the tree into the source parameters' (on device_ids[0]). Done
-- once the whole pass is queued, so no GPU waits for another mid-backward.
local function reduce_grads(replicas, n)
  return function()
    local _ <close> = torch.no_grad()
    local rounds = tree_rounds(n)
    for r = #rounds, 1, -1 do
      local step = rounds[r]
      for i = 1, step do
        local from = i + step <= n and replicas[i + step]
        if from then
          for k, s in ipairs(from.slots) do
            local g = s[2] == "_parameters" and s[5].grad
            if g then
              local dst = i == 1 and s[4] or replicas[i].slots[k][5]
              g = g:to(dst.device)
              if dst.grad == nil then dst.grad = g else dst.grad:add_(g) end
              s[5].grad = nil
            end
          end
        end
      end
    end
  end
end

-- The source module's parameters and buffers, with their versions: a replica is
-- rebuilt when the set changes and refreshed when a version does.
local function snapshot(module)
  local ts = module:parameters()
  for _, b in ipairs(module:buffers()) do ts[#ts + 1] = b end
  local v = {}
  for i, t in ipairs(ts) do v[i] = t._version end
  return ts, v
end

local function same_list(a, b)
  if not b or #a ~= #b then return false end
  for i = 1, #a do if not rawequal(a[i], b[i]) then return false end end
  return true
end

local function new_replica(m, dev)
  local rep = { slots = {} }
  rep.module = replicate(m, {}, rep.slots)
  place(rep, dev)
  return rep
end

parallel._replicate = function(m, dev) return new_replica(m, dev).module end

local function scatter(v, sizes, devices, dim)
  if torch.is_tensor(v) then
    local parts = v:split(sizes, dim)
    local out = {}
    for i = 1, #sizes do out[i] = parts[i]:to("cuda:" .. devices[i]) end
    return out
  end
  local out = {}
  for i = 1, #sizes do out[i] = v end
  return out
end

local function gather(outs, dev, dim)
  local first = outs[1]
  if torch.is_tensor(first) then
    local moved = {}
    for i, o in ipairs(outs) do moved[i] = o:to(dev) end
    return torch.cat(moved, dim)
  end
  if type(first) == "table" then
    local r = {}
    for k in pairs(first) do
      local col = {}
      for i, o in ipairs(outs) do col[i] = o[k] end
      r[k] = gather(col, dev, dim)
    end
    return r
  end
  return first
end

-- Copy the source's changed tensors into the kept replicas, on device_ids[0]'s side
-- stream: its own stream goes on with replica 0's forward meanwhile (each replica's
-- GPU waits for its copies). Returns the event that marks the copies done.
function DP:_refresh_replicas(n)
  local src = self.device_ids[1]
  if not self._copy_stream then
    local _ <close> = torch.cuda.device(src)
    self._copy_stream = torch.cuda.Stream(src)
  end
  local side = self._copy_stream
  side:wait_event(mark(torch.cuda.current_stream(src), src)) -- after whatever last changed the source
  local any = false
  do
    local _ <close> = torch.cuda.stream(side) -- the source's copies; a replica copies on its device's stream
    for k in pairs(self._replicas) do n = math.max(n, k) end -- every replica kept, used in this call or not
    for _, step in ipairs(tree_rounds(n)) do
      for i = 1, step do
        local to = self._replicas[i + step]
        if to then refresh(to, i > 1 and self._replicas[i] or nil); any = true end
      end
    end
  end
  return any and mark(side, src) or nil
end

function DP:forward(...)
  if #self.device_ids == 0 then return self.module(...) end
  local src = self.src_device_obj
  for _, t in ipairs(self.module:parameters()) do
    if tostring(t.device) ~= tostring(src) then
      U.errorf("module must have its parameters and buffers on device %s (device_ids[0]) but found one of them on device: %s",
        tostring(src), tostring(t.device))
    end
  end
  local args = table.pack(...)
  local batch
  for i = 1, args.n do
    if torch.is_tensor(args[i]) then batch = args[i]:size(self.dim); break end
  end
  if batch == nil or #self.device_ids == 1 then return self.module(...) end
  local sizes = parallel.chunk_sizes(batch, #self.device_ids)
  if #sizes == 1 then return self.module(...) end
  local per = {}
  for i = 1, #sizes do per[i] = {} end
  for a = 1, args.n do
    local parts = scatter(args[a], sizes, self.device_ids, self.dim)
    for i = 1, #sizes do per[i][a] = parts[i] end
  end
  -- replicas are built once and kept, their tensors refreshed only when a source
  -- tensor changed (the optimizer's step, load_state_dict)
  local ts, versions = snapshot(self.module)
  if not same_list(ts, self._replica_sources) then
    self._replicas, self._replica_sources, self._replica_versions = {}, ts, nil
  end
  local stale = not same_list(versions, self._replica_versions)
  self._replica_versions = versions
  local copied = stale and self:_refresh_replicas(#sizes)
  local outs = {}
  for i = 1, #sizes do
    local replica = self.module
    if i > 1 then
      local rep = self._replicas[i]
      if not rep then
        rep = new_replica(self.module, "cuda:" .. self.device_ids[i])
        self._replicas[i] = rep
      end
      replica = rep.module
    end
    outs[i] = replica(table.unpack(per[i], 1, args.n))
  end
  -- the source's tensors may change (optimizer step) only once the copies have read them
  if copied then torch.cuda.current_stream(self.device_ids[1]):wait_event(copied) end
  local out = gather(outs, "cuda:" .. self.output_device, self.dim)
  if torch.is_grad_enabled() then
    local reduce = reduce_grads(self._replicas, #sizes)
    for _, t in ipairs(collect_tensors(out, {}, {})) do
      if t.grad_fn then torch._at_backward_end(t, reduce) end
    end
  end
  return out
end

return parallel
