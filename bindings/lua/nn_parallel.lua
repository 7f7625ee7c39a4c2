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

-- PyTorch's DDP with device_ids moves the forward's inputs to device_ids[0]: tensors are moved,
-- plain tables (lists, keyword tables) copied with their tensors moved, other values kept
local function inputs_to(v, device)
  if torch.is_tensor(v) then return v:to(device) end
  if type(v) == "table" and getmetatable(v) == nil then
    local t = {}
    for k, x in pairs(v) do t[k] = inputs_to(x, device) end
    return t
  end
  return v
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
  if dev ~= "cpu" and params[1] and params[1].device.type == "cuda" then
    dev = params[1].device -- on the model's GPU, as PyTorch: the tutorials call no set_device
  end
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
  if o.device_ids ~= nil and #o.device_ids == 1 then
    local id = o.device_ids[1]
    self._input_device = math.type(id) == "integer" and torch.device("cuda", id) or torch.device(id)
  end
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
  local join = self._join_config ~= nil and self._join_config.enable -- inside a Join (torch_distributed_join.lua)
  if join then self:_join_pre_forward(sync) end
  if sync then self._reducer:prepare_forward() end
  if self.require_forward_param_sync and self.broadcast_buffers and dist.get_world_size() > 1 then
    local bufs = self.module:buffers()
    if #bufs > 0 then torch._dist.broadcast_coalesced(bufs, join and self:_join_buffer_source() or 0) end
  end
  local args = table.pack(...)
  if self._input_device ~= nil then
    for i = 1, args.n do args[i] = inputs_to(args[i], self._input_device) end
  end
  local out = table.pack(self.module(table.unpack(args, 1, args.n)))
  if sync then
    local outs = collect_tensors(out, {}, {})
    self._reducer:prepare_backward(outs)
    if join then self:_join_post_forward(outs) end
  end
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

local function dp_init(self, module, ...)
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

function DP:__init(...)
  if select("#", ...) == 0 then U.error("DataParallel.__init__() missing 1 required positional argument: 'module'") end
  return dp_init(self, ...)
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
local function fill(slots, make)
  for _, s in ipairs(slots) do
    local r, reg, k, t = s[1], s[2], s[3], s[4]
    local c = make(t, reg)
    s[5] = c
    r[reg]:set(k, c)
    getmetatable(r).__index[k] = c
  end
end

local function place(rep, dev)
  fill(rep.slots, function(t, reg)
    local c = t:detach():to(dev)
    if reg == "_parameters" and t.requires_grad then c:requires_grad_(true) end
    return c
  end)
end

-- a copy of module m whose parameters and buffers are make(tensor, registry) (nn.parallel.replicate)
function parallel._replicate_module(m, make)
  local slots = {}
  local r = replicate(m, {}, slots)
  fill(slots, make)
  return r
end

-- An event recorded now on stream s (of device i).
local function mark(s, i)
  local _ <close> = torch.cuda.device(i)
  local e = torch.cuda.Event()
  e:record(s)
  return e
end

-- rep's tensors from the source's, or from another replica's (from), copied while rep's
-- device has its side stream current: each replica module's tensors get an event there
-- (rep.ready), which the module's forward pre-hook makes the device's stream wait for, so
-- the first layers compute while later (larger) ones are still arriving.
local function refresh(rep, from, side)
  local _ <close> = torch.no_grad()
  local slots = rep.slots
  for k, s in ipairs(slots) do
    s[5]:copy_(from and from.slots[k][5] or s[4])
    if k == #slots or slots[k + 1][1] ~= s[1] then rep.ready[s[1]] = mark(side, rep.device) end
  end
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

-- The tree's parent of device position i (1-based; 1 is the root): 2 -> 1, 3 -> 1, 4 -> 2,
-- 5 -> 1, ..., the reverse of tree_rounds' copies.
local function tree_parent(i)
  local p = 1
  while p * 2 < i do p = p * 2 end
  return i - p
end

-- Gradient reduction overlapped with backward. As each replica's gradient of a parameter
-- is accumulated (a post-accumulate-grad hook), it moves up the tree toward device_ids[0]
-- on per-device side streams, so the transfers run while backward goes on computing; a
-- device passes a parameter on once its own gradient and its children's have arrived.
-- Transfers land in buffers kept from pass to pass (recv[i][k]: position i's sum of slot
-- k, on its parent's device), so no pass allocates across streams. At the end of the pass
-- device_ids[0]'s stream waits for its side stream and adds what arrived into the source
-- parameters' .grad, and every other device's stream waits for its side stream. A replica's
-- gradient is let go as it is sent, its memory kept for the side stream's reads (record_stream).
local Reduction = {}
Reduction.__index = Reduction

local function new_reduction(ids, replicas)
  return setmetatable({ ids = ids, replicas = replicas, side = {}, recv = {}, sum = {} }, Reduction)
end

function Reduction:stream(i)
  local s = self.side[i]
  if not s then
    local _ <close> = torch.cuda.device(self.ids[i])
    s = torch.cuda.Stream(self.ids[i])
    self.side[i] = s
  end
  return s
end

-- a buffer kept in t[i][k], shaped like g, on device dev, allocated on stream s (where it is used)
local function kept(t, i, k, g, dev, s)
  t[i] = t[i] or {}
  local b = t[i][k]
  if not b then
    local _ <close> = torch.cuda.stream(s)
    b = torch.empty(g:size(), { dtype = g.dtype, device = "cuda:" .. dev })
    t[i][k] = b
  end
  return b
end

-- a forward over n devices: its backward reduces over the first n
function Reduction:arm(n)
  local kids = {}
  for c = 2, n do
    local p = tree_parent(c)
    kids[p] = kids[p] or {}
    kids[p][#kids[p] + 1] = c
  end
  self.pass = { n = n, kids = kids, pending = {}, sent = {}, arrived = {} }
end

-- one of position i's inputs for slot k is in: its own gradient (i > 1) or a child's sum
function Reduction:arrive(i, k)
  local P = self.pass
  P.pending[i] = P.pending[i] or {}
  local left = P.pending[i][k] or #(P.kids[i] or {}) + (i > 1 and 1 or 0)
  P.pending[i][k] = left - 1
  if left == 1 and i > 1 then self:send(i, k) end
end

-- the children's sums of slot k that reached position i (in recv, on i's device)
function Reduction:received(i, k)
  local P, got = self.pass, {}
  for _, c in ipairs(P.kids[i] or {}) do
    if P.arrived[c] and P.arrived[c][k] then got[#got + 1] = self.recv[c][k] end
  end
  return got
end

-- position i's sum for slot k (its gradient plus its children's) to its parent's recv: the
-- gradient is taken off the replica's parameter in C (torch.cuda._send_grad), one call with
-- its stream barriers instead of a Tensor object per gradient and several ops
function Reduction:send(i, k)
  local P = self.pass
  P.sent[i] = P.sent[i] or {}
  if P.sent[i][k] then return end
  P.sent[i][k] = true
  local p, di = tree_parent(i), self.ids[i]
  local si, sp = self:stream(i), self:stream(p)
  local param, got = self.replicas[i].slots[k][5], self:received(i, k)
  local sum = #got > 0 and kept(self.sum, i, k, param, di, si) or nil
  if torch.cuda._send_grad(param, si, sp, kept(self.recv, i, k, param, self.ids[p], sp), sum, got) then
    P.arrived[i] = P.arrived[i] or {}
    P.arrived[i][k] = true
  end
  self:arrive(p, k)
end

function Reduction:grad_ready(i, k)
  local P = self.pass
  if not P or i > P.n then return end
  local _ <close> = torch.no_grad()
  self:arrive(i, k)
end

function Reduction:finish()
  local P = self.pass
  if not P then return end
  local _ <close> = torch.no_grad()
  for i = P.n, 2, -1 do -- parameters a replica's forward left without a gradient
    for k, s in ipairs(self.replicas[i].slots) do
      if s.trainable and not (P.sent[i] and P.sent[i][k]) then
        P.pending[i] = P.pending[i] or {}
        P.pending[i][k] = 1
        self:arrive(i, k)
      end
    end
  end
  local ids = self.ids
  local main = torch.cuda.current_stream(ids[1])
  main:wait_event(mark(self:stream(1), ids[1]))
  for k, s in ipairs(self.replicas[2].slots) do
    local got = s.trainable and self:received(1, k) or {}
    local dst = s[4]
    for _, g in ipairs(got) do torch._accumulate_grad(dst, g) end
  end
  for i = 2, P.n do -- the streams that allocate the replicas' gradients wait for the side streams' work
    torch.cuda.current_stream(ids[i]):wait_event(mark(self:stream(i), ids[i]))
  end
  for i = 1, P.n do -- next pass: recv and sum are rewritten only after this pass's reads
    self:stream(i):wait_event(mark(torch.cuda.current_stream(ids[i]), ids[i]))
  end
  P.pending, P.sent, P.arrived = {}, {}, {} -- another backward through the same graph starts afresh
end

-- The source module's parameters and buffers, with their versions: a replica is
-- rebuilt when the set changes and refreshed when a version does. They must all be on
-- the source device (PyTorch's check).
local function snapshot(module, src)
  local ts = module:parameters()
  for _, b in ipairs(module:buffers()) do ts[#ts + 1] = b end
  local v = {}
  for i, t in ipairs(ts) do
    if t:get_device() ~= src then
      U.errorf("module must have its parameters and buffers on device cuda:%d (device_ids[0]) but found one of them on device: %s",
        src, tostring(t.device))
    end
    v[i] = t._version
  end
  return ts, v
end

local function same_list(a, b)
  if not b or #a ~= #b then return false end
  for i = 1, #a do if not rawequal(a[i], b[i]) then return false end end
  return true
end

local function new_replica(m, dev)
  local device = device_index(dev)
  local rep = { slots = {}, ready = {}, device = device, sources = {} }
  rep.module = replicate(m, rep.sources, rep.slots)
  place(rep, dev)
  local hooked = {}
  for _, s in ipairs(rep.slots) do
    local r = s[1]
    if not hooked[r] then
      hooked[r] = true
      r:register_forward_pre_hook(function()
        local ev = rep.ready[r]
        if ev then
          rep.ready[r] = nil
          torch.cuda.current_stream(device):wait_event(ev)
        end
      end)
    end
  end
  return rep
end

-- replica i's parameters tell reduction when their gradients are in; the hooks hold it
-- weakly (they live in the registry, and a strong reference would keep it forever)
local function hook_replica(rep, i, reduction)
  local weak = setmetatable({ r = reduction }, { __mode = "v" })
  for k, s in ipairs(rep.slots) do
    s.trainable = s[2] == "_parameters" and s[5].requires_grad
    if s.trainable then
      s[5]:register_post_accumulate_grad_hook(function()
        local r = weak.r
        if r then r:grad_ready(i, k) end
      end)
    end
  end
end

parallel._replicate = function(m, dev) return new_replica(m, dev).module end

-- A kept replica's plain attributes (training, a dropout's p, ...) follow its source's, as
-- PyTorch's replicas made afresh each forward do: model:eval() after the first forward counts.
local function sync_attributes(rep)
  for m, r in pairs(rep.sources) do
    local values, rv = getmetatable(m).__index, getmetatable(r).__index
    for k, v in pairs(values) do
      local t = type(v)
      if (t == "boolean" or t == "number" or t == "string") and rv[k] ~= v then rv[k] = v end
    end
  end
end

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

-- PyTorch's gather: the outputs (one per device) concatenated on dev along dim, dicts and lists
-- element-wise; 0-d tensors are stacked into a vector (nn.parallel.gather too)
local function gather(outs, dev, dim)
  local first = outs[1]
  if torch.is_tensor(first) then
    local scalars = true
    for i, t in ipairs(outs) do
      if not torch.is_tensor(t) then U.errorf("gather: output %d is %s, not a tensor as the first", i, U.typename(t)) end
      if t.is_cuda ~= true then U.error("gather: Gather function not implemented for CPU tensors") end
      if t:dim() > 0 then scalars = false end
    end
    local moved = {}
    for i, t in ipairs(outs) do moved[i] = (scalars and t:unsqueeze(0) or t):to(dev) end
    return torch.cat(moved, dim)
  end
  if first == nil then return nil end
  if type(first) == "table" and getmetatable(first) == nil then
    local n = 0
    for _ in pairs(first) do n = n + 1 end
    for _, o in ipairs(outs) do
      local m = 0
      for _ in pairs(o) do m = m + 1 end
      if m ~= n then U.error("gather: All dicts must have the same number of keys") end
    end
    local r = {}
    for k in pairs(first) do
      local col = {}
      for i, o in ipairs(outs) do col[i] = o[k] end
      r[k] = gather(col, dev, dim)
    end
    return r
  end
  U.errorf("gather: cannot gather outputs of type %s (tensors, lists and dicts of them, nil)", U.typename(first))
end
parallel._gather = gather

-- Copy the source's changed tensors into the kept replicas, on the devices' side streams
-- (a copy runs on its source's): the devices' own streams go on meanwhile, and a replica
-- module waits only for its own tensors (refresh). Returns the event that marks the
-- source's copies done.
function DP:_refresh_replicas(n)
  local ids, streams = self.device_ids, self._reduction
  local src = ids[1]
  streams:stream(1):wait_event(mark(torch.cuda.current_stream(src), src)) -- after whatever last changed the source
  local any = false
  for k in pairs(self._replicas) do n = math.max(n, k) end -- every replica kept, used in this call or not
  for _, step in ipairs(tree_rounds(n)) do
    for i = 1, step do
      local to = self._replicas[i + step]
      if to then
        local from_side, to_side = streams:stream(i), streams:stream(i + step)
        to_side:wait_event(mark(torch.cuda.current_stream(ids[i + step]), ids[i + step])) -- the last step's reads of them
        local _ <close> = torch.cuda.stream(from_side)
        local _ <close> = torch.cuda.stream(to_side)
        refresh(to, i > 1 and self._replicas[i] or nil, to_side)
        any = true
      end
    end
  end
  return any and mark(streams:stream(1), src) or nil
end

function DP:forward(...)
  local mt = getmetatable(self.module)
  if type(self.module) ~= "function" and not (mt and mt.__call) then -- Python's call of a non-callable
    U.errorf("'%s' object is not callable", U.typename(self.module))
  end
  if #self.device_ids == 0 then return self.module(...) end
  local ts, versions = snapshot(self.module, self.device_ids[1])
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
  if not same_list(ts, self._replica_sources) then
    self._replicas, self._replica_sources, self._replica_versions = {}, ts, nil
    self._reduction = new_reduction(self.device_ids, self._replicas)
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
        hook_replica(rep, i, self._reduction)
        self._replicas[i] = rep
      else
        sync_attributes(rep)
      end
      replica = rep.module
    end
    outs[i] = replica(table.unpack(per[i], 1, args.n))
  end
  -- the source's tensors may change (optimizer step) only once the copies have read them
  if copied then torch.cuda.current_stream(self.device_ids[1]):wait_event(copied) end
  local out = gather(outs, "cuda:" .. self.output_device, self.dim)
  if torch.is_grad_enabled() then
    local reduction = self._reduction
    reduction:arm(#sizes)
    for _, t in ipairs(collect_tensors(out, {}, {})) do
      if t.grad_fn then torch._at_backward_end(t, function() reduction:finish() end) end
    end
  end
  return out
end

return parallel
