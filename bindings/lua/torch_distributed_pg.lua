-- torch.distributed's lower-level classes: Work (the handle of an async operation), the
-- options classes (AllreduceOptions, BroadcastOptions...) and the ProcessGroup methods that
-- take them (pg:allreduce({t}, opts) -> Work; ranks are the group's), ProcessGroupGloo(store,
-- rank, size, timeout), ProcessGroupNCCL.Options, BackendConfig, reduce_op (deprecated),
-- supports_complex and split_group.
--   local opts = dist.AllreduceOptions(); opts.reduceOp = dist.ReduceOp.MAX
--   dist.group.WORLD:allreduce({ t }, opts):wait()
local torch = require "torch"
local time = require "time"
local U = require "nn_util"
local futures = require "torch_futures"
local dist = torch.distributed
local I = require "torch_distributed_internal"
local C, errorf, PG, WORLD = I.C, I.errorf, I.PG, I.WORLD

-- ---- Work: the methods of every async handle (the engine's and those finished in Lua) ----
local Work = setmetatable({ __name = "torch.distributed.Work" }, { __tostring = function() return "<class 'torch.distributed.Work'>" end })
dist.Work = Work
local engine_work = debug.getregistry()["torch.distributed.Work"].__index
local lua_work = I.LuaWork
local raw_wait = { [engine_work] = engine_work.wait, [lua_work] = lua_work.wait }
local timeouts = setmetatable({}, { __mode = "k" }) -- a work's own timeout (opts.timeout)
local groups_of = setmetatable({}, { __mode = "k" }) -- the group a work runs in, for messages

local function methods_of(w)
  local mt = getmetatable(w)
  local m = mt and (mt == lua_work and lua_work or mt.__index)
  if not raw_wait[m] then errorf(3, "a torch.distributed.Work expected, got %s", U.typename(w)) end
  return m
end

-- wait(timeout): blocks until done; with a timeout (seconds, or the options' timeout), a work
-- still running then raises DistBackendError (the operation itself goes on in the background)
function Work.wait(w, timeout)
  local m = methods_of(w)
  timeout = I.seconds(timeout, "wait")
  if timeout == nil or timeout <= 0 then timeout = timeouts[w] end
  if timeout then
    local deadline = time.monotonic() + timeout
    local running = m == lua_work and w._work or w -- a Lua work finishes its part in wait()
    while running and not running:is_completed() do
      if time.monotonic() > deadline then
        local g = groups_of[w] or WORLD
        errorf(2, "wait failed on rank %d of %d (%s): timed out after %g s waiting for the operation",
          g:rank(), g:size(), dist.get_backend(g), timeout)
      end
      time.sleep(0.0005)
    end
  end
  return I.finish(pcall(raw_wait[m], w))
end

-- the error a finished work failed with, nil if it succeeded or is still running
function Work.exception(w)
  if not w:is_completed() then return nil end
  local ok, err = pcall(raw_wait[methods_of(w)], w)
  if ok then return nil end
  return err
end

function Work.is_success(w) return w:is_completed() and Work.exception(w) == nil end
-- CPU work is done when wait() returns; a CUDA work's stream is synchronized by wait() too
Work.synchronize = Work.wait

local lua_results = setmetatable({}, { __mode = "k" })
function lua_work.result(w) return lua_results[w] or {} end
function lua_work.get_future(w) return futures._from_work(w, lua_results[w] or {}) end

for m in pairs(raw_wait) do
  m.wait = Work.wait
  for k, f in pairs(Work) do if m[k] == nil and type(f) == "function" then m[k] = f end end
end
for k, f in pairs(engine_work) do if Work[k] == nil then Work[k] = f end end
for k, f in pairs(lua_work) do if Work[k] == nil and type(f) == "function" then Work[k] = f end end

-- ---- options classes: field holders with PyTorch's field names and defaults ----
local Options = {}

local function options_class(name, fields)
  local cls = { __name = "torch.distributed." .. name, _fields = {} }
  for _, f in ipairs(fields) do cls._fields[f[1]] = true end
  cls.__index = function(_, k) -- a missing field is an error, as Python's AttributeError
    if not cls._fields[k] and not (type(k) == "string" and k:find("^__")) then errorf(2, "'%s' object has no attribute '%s'", name, tostring(k)) end
  end
  cls.__newindex = function(o, k, v)
    if not cls._fields[k] then errorf(2, "'%s' object has no attribute '%s'", name, tostring(k)) end
    rawset(o, k, v)
  end
  cls.__tostring = function() return "<torch.distributed." .. name .. ">" end
  Options[cls] = true
  dist[name] = setmetatable(cls, { __call = function(_, init)
    local o = setmetatable({}, cls)
    for _, f in ipairs(fields) do
      local v = f[2]
      if type(v) == "function" then v = v() end
      rawset(o, f[1], v)
    end
    if init ~= nil then
      if type(init) ~= "table" then errorf(2, "%s: expected a table of fields, got %s", name, type(init)) end
      for k, v in pairs(init) do o[k] = v end
    end
    return o
  end })
  return cls
end

local SUM = dist.ReduceOp.SUM
local function empty() return {} end
local allreduce_fields = { { "reduceOp", SUM }, { "timeout" }, { "asyncOp", true }, { "sparseIndices" } }
options_class("AllreduceOptions", allreduce_fields)
options_class("AllreduceCoalescedOptions", allreduce_fields)
options_class("BroadcastOptions", { { "rootRank", 0 }, { "rootTensor", 0 }, { "timeout" }, { "asyncOp", true } })
options_class("ReduceOptions", { { "reduceOp", SUM }, { "rootRank", 0 }, { "rootTensor", 0 }, { "timeout" }, { "asyncOp", true } })
options_class("AllgatherOptions", { { "timeout" }, { "asyncOp", true } })
options_class("GatherOptions", { { "rootRank", 0 }, { "timeout" }, { "asyncOp", true } })
options_class("ScatterOptions", { { "rootRank", 0 }, { "timeout" }, { "asyncOp", true } })
options_class("ReduceScatterOptions", { { "reduceOp", SUM }, { "timeout" }, { "asyncOp", true } })
options_class("BarrierOptions", { { "device_ids", empty }, { "timeout" }, { "device" }, { "asyncOp", true } })
options_class("AllToAllOptions", { { "timeout" }, { "asyncOp", true } })

-- the options of a method: an instance of cls (or nil: the defaults)
local function options(opts, cls, fn)
  if opts == nil then return cls() end
  if getmetatable(opts) ~= cls then errorf(3, "%s: expected %s, got %s", fn, cls.__name, U.typename(opts)) end
  return opts
end
local function is_options(v) return Options[getmetatable(v)] == true end

-- a list of one tensor (one per process), or a tensor
local function one(ts, fn, what)
  if torch.is_tensor(ts) then return ts end
  if type(ts) ~= "table" or #ts ~= 1 or not torch.is_tensor(ts[1]) then
    errorf(3, "%s: %s must be a list of one tensor (one per process), got %s", fn, what or "tensors", U.typename(ts))
  end
  return ts[1]
end

-- a list holding one list of tensors ({{t0, t1...}}), or that list
local function list_of_one(ls, fn, what)
  if type(ls) == "table" and #ls == 1 and type(ls[1]) == "table" and not torch.is_tensor(ls[1]) then return ls[1] end
  errorf(3, "%s: %s must be a list of one list of tensors (one per process)", fn, what)
end

local function root_tensor(o, fn)
  if o.rootTensor ~= 0 then errorf(3, "%s: rootTensor must be 0 (one tensor per process), got %s", fn, tostring(o.rootTensor)) end
end

-- give work w the options' timeout and the group; wait now unless asyncOp
local function issue(pg, o, w, fn, result)
  w = w or setmetatable({}, lua_work)
  groups_of[w] = pg
  if o.timeout ~= nil then timeouts[w] = I.seconds(o.timeout, fn) end
  if result and getmetatable(w) == lua_work then lua_results[w] = result end
  if o.asyncOp == false then w:wait() end
  return w
end

local function check_pg(pg, fn)
  if getmetatable(pg) ~= PG then errorf(3, "%s: call it as a method of a process group (pg:%s(...))", fn, fn) end
  if pg._destroyed then errorf(3, "%s: the process group %s has been destroyed", fn, pg.group_name) end
end

local AllreduceOptions, BroadcastOptions, ReduceOptions = dist.AllreduceOptions, dist.BroadcastOptions, dist.ReduceOptions
local AllgatherOptions, GatherOptions, ScatterOptions = dist.AllgatherOptions, dist.GatherOptions, dist.ScatterOptions
local ReduceScatterOptions, BarrierOptions, AllToAllOptions = dist.ReduceScatterOptions, dist.BarrierOptions, dist.AllToAllOptions

-- allreduce(tensors, opts) or allreduce(tensors, op)
function PG:allreduce(tensors, opts)
  check_pg(self, "allreduce")
  local o = is_options(opts) and options(opts, AllreduceOptions, "allreduce") or AllreduceOptions({ reduceOp = opts or SUM })
  local t = one(tensors, "allreduce")
  return issue(self, o, dist.all_reduce(t, { op = o.reduceOp, group = self, async_op = true }), "allreduce")
end

function PG:allreduce_coalesced(tensors, opts)
  check_pg(self, "allreduce_coalesced")
  local o = options(opts, dist.AllreduceCoalescedOptions, "allreduce_coalesced")
  return issue(self, o, dist.all_reduce_coalesced(tensors, { op = o.reduceOp, group = self, async_op = true }), "allreduce_coalesced", tensors)
end

-- broadcast(tensors, opts) or broadcast(tensor, root)
function PG:broadcast(tensors, opts)
  check_pg(self, "broadcast")
  local o = is_options(opts) and options(opts, BroadcastOptions, "broadcast") or BroadcastOptions({ rootRank = opts or 0 })
  root_tensor(o, "broadcast")
  return issue(self, o, dist.broadcast(one(tensors, "broadcast"), { group_src = o.rootRank, group = self, async_op = true }), "broadcast")
end

-- reduce(tensors, opts) or reduce(tensor, root, op)
function PG:reduce(tensors, opts, op)
  check_pg(self, "reduce")
  local o = is_options(opts) and options(opts, ReduceOptions, "reduce") or ReduceOptions({ rootRank = opts or 0, reduceOp = op or SUM })
  root_tensor(o, "reduce")
  return issue(self, o, dist.reduce(one(tensors, "reduce"), { group_dst = o.rootRank, op = o.reduceOp, group = self, async_op = true }), "reduce")
end

-- allgather(output_tensors, input_tensors, opts): output_tensors = {{t0, t1...}}, input_tensors
-- = {t}; or allgather({t0, t1...}, t)
function PG:allgather(outputs, inputs, opts)
  check_pg(self, "allgather")
  local o = options(opts, AllgatherOptions, "allgather")
  local list = torch.is_tensor(inputs) and outputs or list_of_one(outputs, "allgather", "output_tensors")
  return issue(self, o, dist.all_gather(list, one(inputs, "allgather", "input_tensors"), { group = self, async_op = true }), "allgather")
end

function PG:_allgather_base(output, input, opts)
  check_pg(self, "_allgather_base")
  local o = options(opts, AllgatherOptions, "_allgather_base")
  return issue(self, o, dist.all_gather_into_tensor(output, input, { group = self, async_op = true }), "_allgather_base")
end

-- reduce_scatter(output_tensors, input_tensors, opts) with {out}, {{in0, in1...}};
-- or reduce_scatter(out, {in0, in1...}, op)
function PG:reduce_scatter(outputs, inputs, opts)
  check_pg(self, "reduce_scatter")
  local o = is_options(opts) and options(opts, ReduceScatterOptions, "reduce_scatter") or ReduceScatterOptions({ reduceOp = opts or SUM })
  local out = one(outputs, "reduce_scatter", "output_tensors")
  local list = torch.is_tensor(outputs) and inputs or list_of_one(inputs, "reduce_scatter", "input_tensors")
  return issue(self, o, dist.reduce_scatter(out, list, { op = o.reduceOp, group = self, async_op = true }), "reduce_scatter")
end

function PG:_reduce_scatter_base(output, input, opts)
  check_pg(self, "_reduce_scatter_base")
  local o = options(opts, ReduceScatterOptions, "_reduce_scatter_base")
  return issue(self, o, dist.reduce_scatter_tensor(output, input, { op = o.reduceOp, group = self, async_op = true }), "_reduce_scatter_base")
end

-- the root's list of gather or scatter: given flat (the one-tensor form) or as {{t0, t1...}};
-- nil on other ranks, where it may be {} or {{}}
local function root_list(pg, o, flat, given, fn, what)
  local list
  if flat then list = given
  elseif type(given) == "table" and #given > 0 then list = list_of_one(given, fn, what) end
  if pg:rank() ~= o.rootRank and type(list) == "table" and #list == 0 then list = nil end
  return list
end

-- gather(output_tensors, input_tensors, opts): {{t0, t1...}} on the root, {} elsewhere; or
-- gather({t0, t1...}, t, root)
function PG:gather(outputs, inputs, opts)
  check_pg(self, "gather")
  local o = is_options(opts) and options(opts, GatherOptions, "gather") or GatherOptions({ rootRank = opts or 0 })
  local list = root_list(self, o, torch.is_tensor(inputs), outputs, "gather", "output_tensors")
  local w = dist.gather(one(inputs, "gather", "input_tensors"), { gather_list = list, group_dst = o.rootRank, group = self, async_op = true })
  return issue(self, o, w, "gather", list)
end

-- scatter(output_tensors, input_tensors, opts): {t}, {{t0, t1...}} on the root ({} elsewhere);
-- or scatter(t, {t0, t1...}, root)
function PG:scatter(outputs, inputs, opts)
  check_pg(self, "scatter")
  local o = is_options(opts) and options(opts, ScatterOptions, "scatter") or ScatterOptions({ rootRank = opts or 0 })
  local list = root_list(self, o, torch.is_tensor(outputs), inputs, "scatter", "input_tensors")
  local out = one(outputs, "scatter", "output_tensors")
  local w = dist.scatter(out, { scatter_list = list, group_src = o.rootRank, group = self, async_op = true })
  return issue(self, o, w, "scatter", { out })
end

-- alltoall_base(output, input, output_split_sizes, input_split_sizes, opts)
function PG:alltoall_base(output, input, out_split, in_split, opts)
  check_pg(self, "alltoall_base")
  local o = options(opts, AllToAllOptions, "alltoall_base")
  local w = dist.all_to_all_single(output, input, { output_split_sizes = out_split, input_split_sizes = in_split, group = self, async_op = true })
  return issue(self, o, w, "alltoall_base", { output })
end

-- alltoall(output_tensors, input_tensors, opts)
function PG:alltoall(outputs, inputs, opts)
  check_pg(self, "alltoall")
  local o = options(opts, AllToAllOptions, "alltoall")
  return issue(self, o, dist.all_to_all(outputs, inputs, { group = self, async_op = true }), "alltoall", outputs)
end

function PG:barrier(opts)
  check_pg(self, "barrier")
  local o = options(opts, BarrierOptions, "barrier")
  return issue(self, o, dist.barrier({ group = self, async_op = true }), "barrier")
end

-- send(tensors, dstRank, tag), recv(tensors, srcRank, tag): group ranks
function PG:send(tensors, dst, tag)
  check_pg(self, "send")
  return issue(self, {}, dist.isend(one(tensors, "send"), { group_dst = dst, tag = tag, group = self }), "send")
end

function PG:recv(tensors, src, tag)
  check_pg(self, "recv")
  return issue(self, {}, dist.irecv(one(tensors, "recv"), { group_src = src, tag = tag, group = self }), "recv")
end

-- ---- ProcessGroupGloo, ProcessGroupNCCL ----

local made = 0 -- ProcessGroupGloo/NCCL objects made in this process: their keys in the store

-- ProcessGroupGloo(store, rank, size, timeout): a group of its own over store, without
-- init_process_group; every rank makes its groups over one store in the same order
local function backend_class(name, backend, option_fields)
  local cls = setmetatable({}, { __call = function(_, store, rank, size, timeout, opts)
    if getmetatable(store) ~= dist.Store then errorf(2, "%s: store must be a torch.distributed store, got %s", name, U.typename(store)) end
    if math.type(size) ~= "integer" or size < 1 then errorf(2, "%s: size must be a positive integer, got %s", name, tostring(size)) end
    if math.type(rank) ~= "integer" or rank < 0 or rank >= size then errorf(2, "%s: rank %s is out of range for size %d", name, tostring(rank), size) end
    if not C.available(backend) then errorf(2, "%s: the %s backend is not available in this build", name, backend) end
    if opts ~= nil and getmetatable(opts) ~= dist[name].Options then errorf(2, "%s: options must be a %s.Options", name, name) end
    made = made + 1
    local secs = I.seconds(timeout, name) or (opts and I.seconds(opts._timeout, name)) or dist.default_pg_timeout
    local ranks = {}
    for r = 0, size - 1 do ranks[r + 1] = r end
    local g = setmetatable({ ranks = ranks, _rank = rank, group_name = name .. ":" .. made, _backend = backend, _timeout = secs }, PG)
    g._ud = C.new_group(backend, name .. "/" .. made, rank, size, secs, store._s)
    return g
  end })
  dist[name] = cls
  cls.Options = options_class(name .. ".Options", option_fields)
  dist[name .. ".Options"] = nil
  return cls
end

backend_class("ProcessGroupGloo", "gloo", { { "_timeout" }, { "_devices", empty }, { "_threads", 2 }, { "global_ranks_in_group", empty }, { "group_name", "" } })
-- is_high_priority_stream asks NCCL for high-priority CUDA streams; nnrepl's NCCL backend runs
-- on its own streams whatever it says (results are the same)
backend_class("ProcessGroupNCCL", "nccl", { { "_timeout" }, { "is_high_priority_stream", false }, { "config" }, { "split_from" },
  { "split_color", 0 }, { "global_ranks_in_group", empty }, { "group_name", "" } })

-- ---- BackendConfig ----

local capability = { gloo = { "cpu", "cuda" }, nccl = { "cuda" }, ucc = { "cpu", "cuda" }, mpi = { "cpu", "cuda" }, xccl = { "xpu" } }
local BackendConfig = { __name = "torch.distributed.BackendConfig" }
BackendConfig.__index = BackendConfig
BackendConfig.__tostring = function(c)
  local parts = {}
  for i, d in ipairs(c._devices) do parts[i] = d .. ":" .. c.device_backend_map[d] end
  return table.concat(parts, ",")
end

-- BackendConfig("gloo") -> cpu:gloo,cuda:gloo; BackendConfig("cpu:gloo,cuda:nccl"); "undefined":
-- the default backend of each device that is available
dist.BackendConfig = setmetatable(BackendConfig, { __call = function(_, backend)
  local c = setmetatable({ device_backend_map = {}, _devices = {} }, BackendConfig)
  local function add(d, b)
    if c.device_backend_map[d] == nil then c._devices[#c._devices + 1] = d end
    c.device_backend_map[d] = b
  end
  local s = tostring(backend):lower()
  if s == "undefined" then
    if C.available("gloo") then add("cpu", "gloo") end
    if C.available("nccl") and torch.cuda.is_available() then add("cuda", "nccl") end
  elseif capability[s] then
    for _, d in ipairs(capability[s]) do add(d, s) end
  elseif s:find(":") then
    for part in (s .. ","):gmatch("([^,]*),") do
      local d, b = part:match("^%s*([%w_]+)%s*:%s*([%w_]+)%s*$")
      if not d then
        errorf(2, "The custom backend string argument is invalid: %s. Custom backend string is an experimental feature where the backend string must be in the format: \"<device_type1>:<backend1>,<device_type2>:<backend2>...\". e.g. 'cpu:gloo,cuda:nccl'", tostring(backend))
      end
      add(d, b)
    end
  else
    errorf(2, "Invalid backend: '%s'", tostring(backend))
  end
  return c
end })

function BackendConfig:get_device_backend_map()
  local m = {}
  for d, b in pairs(self.device_backend_map) do m[d] = b end
  return m
end

-- ---- reduce_op (deprecated), supports_complex ----

local warned = false
dist.reduce_op = setmetatable({}, { __index = function(_, k)
  if k ~= "SUM" and k ~= "PRODUCT" and k ~= "MIN" and k ~= "MAX" then return nil end
  if not warned then
    warned = true
    U.warn("torch.distributed.reduce_op is deprecated, please use torch.distributed.ReduceOp instead", "FutureWarning")
  end
  return dist.ReduceOp[k]
end, __tostring = function() return "<class 'torch.distributed.reduce_op'>" end })

-- whether a reduction is defined on complex tensors (MAX, MIN and PRODUCT are not)
function dist.supports_complex(op)
  local name = type(op) == "table" and op.name or tostring(op):upper()
  if dist.ReduceOp[name] == nil then errorf(2, "supports_complex: a torch.distributed.ReduceOp expected, got %s", tostring(op)) end
  return name ~= "MAX" and name ~= "MIN" and name ~= "PRODUCT"
end

-- ---- split_group ----

-- split_group(parent_pg, split_ranks, timeout, pg_options, group_desc): split_ranks lists
-- disjoint lists of the parent's group ranks; each rank of the parent calls it and gets the
-- group of its list (nil if its rank is in none). Only the members of a list meet to make it.
function dist.split_group(...)
  local _, o = I.parse("split_group", { "parent_pg", "split_ranks", "timeout", "pg_options", "group_desc" }, 0, ...)
  local parent = o.parent_pg or WORLD
  if getmetatable(parent) ~= PG then errorf(2, "split_group: parent_pg must be a process group, got %s", U.typename(parent)) end
  local lists = o.split_ranks
  if type(lists) ~= "table" or #lists == 0 then errorf(2, "split_group: split_ranks must be a non-empty list of lists of ranks") end
  local n, seen, mine = parent:size(), {}, nil
  for k, l in ipairs(lists) do
    if type(l) ~= "table" or #l == 0 then errorf(2, "split_group: split %d must be a non-empty list of ranks", k) end
    for _, r in ipairs(l) do
      if math.type(r) ~= "integer" or r < 0 or r >= n then errorf(2, "split_group: rank %s of split %d is not a rank of the parent group (size %d)", tostring(r), k, n) end
      if seen[r] then errorf(2, "split_group: rank %d appears in split %d and split %d; the splits must not overlap", r, seen[r], k) end
      seen[r] = k
      if r == parent:rank() then mine = l end
    end
  end
  if not mine then return nil end
  local ranks = {}
  for i, r in ipairs(mine) do ranks[i] = I.global_rank(parent, r, "split_group") end
  return dist.new_group(ranks, { timeout = o.timeout, pg_options = o.pg_options, group_desc = o.group_desc,
    backend = parent._world and C.backend() or parent._backend, use_local_synchronization = true })
end

return dist
