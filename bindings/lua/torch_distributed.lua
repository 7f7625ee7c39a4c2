-- torch.distributed: process groups and collectives, PyTorch's names and
-- arguments over torch._dist (bindings/dist.c). Also wires torch.nn.parallel
-- (DistributedDataParallel, DataParallel: nn_parallel.lua).
--
--   dist.init_process_group("gloo", {init_method="tcp://127.0.0.1:29500", rank=0, world_size=2, timeout=60})
--   dist.all_reduce(t)                      -- SUM, in place
--   dist.all_reduce(t, dist.ReduceOp.AVG)   -- or {op=..., async_op=true} -> Work
--   dist.all_gather(list, t); dist.broadcast(t, 0); dist.barrier()
--
-- Keyword tables take PyTorch's keyword names; `group` is nil (WORLD) or a group
-- from new_group (src/dst are global ranks, group_src/group_dst the group's). A rank
-- outside the group gets nil back, as in PyTorch. Timeouts are seconds (a number, or
-- a table like {seconds=30, minutes=1}); the default is 600 s. New collectives, object
-- collectives and subgroup helpers: torch_distributed_more.lua; stores:
-- torch_distributed_store.lua.
local torch = require "torch"

-- torch._dist's functions, raising their errors at the caller of the torch.distributed function
local C = {}
local function raise(msg) -- at the first frame outside the library
  local level = 2
  while true do
    local info = debug.getinfo(level, "S")
    if not info then error(msg, 0) end
    if info.source ~= "=[C]" and not info.source:find("^@bindings/lua/") then error(msg, level) end
    level = level + 1
  end
end
local function finish(ok, ...)
  if ok then return ... end
  local err = ...
  if type(err) ~= "string" then error(err, 0) end
  raise((err:gsub("^bindings/lua/[%w_]+%.lua:%d+: ", "", 1)))
end
for name, f in pairs(torch._dist) do
  C[name] = type(f) == "function" and function(...) return finish(pcall(f, ...)) end or f
end

local dist = torch.distributed or {}
torch.distributed = dist

local function errorf(_, fmt, ...) raise(string.format(fmt, ...)) end

-- ---- ReduceOp ----
local ReduceOp = {}
local op_mt = { __tostring = function(o) return "ReduceOp." .. o.name end, __name = "torch.distributed.ReduceOp" }
for i, name in ipairs({ "SUM", "AVG", "PRODUCT", "MIN", "MAX" }) do
  ReduceOp[name] = setmetatable({ name = name, value = i - 1 }, op_mt)
end
dist.ReduceOp = ReduceOp

local function op_index(op, fn)
  if op == nil then return 0 end
  if getmetatable(op) == op_mt then return op.value end
  if type(op) == "string" and ReduceOp[op:upper()] then return ReduceOp[op:upper()].value end
  errorf(3, "%s: unknown reduce op %s (use torch.distributed.ReduceOp.SUM, AVG, PRODUCT, MIN or MAX)", fn, tostring(op))
end

-- ---- process groups: WORLD (the default group) and new_group's ----
-- A group: _ud (torch._dist's ProcessGroup, nil for WORLD), ranks (global ranks, in
-- group rank order), _rank (this rank's in the group), group_name, _backend.
local PG = { __name = "torch.distributed.ProcessGroup" }
PG.__index = PG
PG.__tostring = function(g) return "<ProcessGroup " .. (g._world and "WORLD" or g.group_name) .. ">" end
local WORLD = setmetatable({ _world = true, group_name = "0" }, PG)
local NON_MEMBER = setmetatable({}, { __tostring = function() return "<GroupMember.NON_GROUP_MEMBER>" end,
  __name = "torch.distributed.GroupMember.NON_GROUP_MEMBER" })
function PG:rank() return self._world and C.rank() or self._rank end
function PG:size() return self._world and C.size() or #self.ranks end
function PG:name() return self.group_name end
dist.ProcessGroup = PG
dist.group = { WORLD = WORLD }
dist.GroupMember = { WORLD = WORLD, NON_GROUP_MEMBER = NON_MEMBER }

-- the subgroups this rank is in, in creation order (the default group's are destroyed with it)
local groups = {}
local group_count = 0 -- groups made since init (get_pg_count counts them and WORLD)

-- what torch_distributed_more.lua and torch_distributed_store.lua share with this file
local internal = { C = C, raise = raise, WORLD = WORLD, NON_MEMBER = NON_MEMBER, PG = PG }
package.loaded.torch_distributed_internal = internal

local function is_opts(v) return type(v) == "table" and getmetatable(v) == nil and v[1] == nil end

-- positional names after the fixed arguments, then an optional keyword table
local function parse(fn, names, nfixed, ...)
  local n = select("#", ...)
  local args = { ... }
  local o = {}
  local last = n
  if n > nfixed and is_opts(args[n]) then
    for k, v in pairs(args[n]) do
      local known = false
      for _, name in ipairs(names) do if name == k then known = true end end
      if not known then errorf(3, "bad argument #%d to '%s' (unknown keyword '%s')", n, fn, tostring(k)) end
      o[k] = v
    end
    last = n - 1
  end
  for i = nfixed + 1, last do
    local name = names[i - nfixed]
    if not name then errorf(3, "%s: too many arguments", fn) end
    if args[i] ~= nil then o[name] = args[i] end
  end
  local group = o.group
  if group == nil or group == WORLD then return args, o, WORLD end
  if group == NON_MEMBER then return args, o, nil end
  if getmetatable(group) ~= PG then errorf(3, "%s: group must be a process group from new_group, got %s", fn, tostring(group)) end
  if group._destroyed then errorf(3, "%s: the process group %s has been destroyed", fn, group.group_name) end
  return args, o, group
end

local function seconds(t, fn)
  if t == nil then return nil end
  if type(t) == "number" then return t end
  if type(t) == "table" then
    return (t.seconds or 0) + 60 * (t.minutes or 0) + 3600 * (t.hours or 0) + 86400 * (t.days or 0) + (t.milliseconds or 0) / 1000
  end
  errorf(3, "%s: timeout must be a number of seconds, got %s", fn, type(t))
end

-- init_process_group(backend, {init_method=, rank=, world_size=, timeout=}),
-- init_process_group(backend, init_method, {...}) or init_process_group{backend=, ...}
local init_keys = { backend = true, init_method = true, rank = true, world_size = true, timeout = true, store = true,
  group_name = true, pg_options = true, device_id = true }
function dist.init_process_group(backend, a, b)
  local o = {}
  local given = is_opts(backend) and backend or (type(a) == "string" and b or a) or {}
  if not is_opts(given) then errorf(2, "init_process_group: options must be a table of keywords, got %s", type(given)) end
  for k, v in pairs(given) do
    if not init_keys[k] then errorf(2, "bad argument #2 to 'init_process_group' (unknown keyword '%s')", tostring(k)) end
    o[k] = v
  end
  if is_opts(backend) then backend = o.backend end
  if type(a) == "string" then
    if o.init_method then errorf(2, "init_process_group: got multiple values for argument 'init_method'") end
    o.init_method = a
  end
  if backend == nil then backend = "gloo" end
  if type(backend) ~= "string" then errorf(2, "init_process_group: backend must be a string, got %s", type(backend)) end
  backend = backend:lower()
  if backend == "cpu:gloo,cuda:nccl" then backend = "gloo" end
  local rank, world = o.rank, o.world_size
  if rank ~= nil and math.type(rank) ~= "integer" then errorf(2, "init_process_group: rank must be an integer") end
  if world ~= nil and math.type(world) ~= "integer" then errorf(2, "init_process_group: world_size must be an integer") end
  if rank == -1 then rank = nil end
  if world == -1 then world = nil end
  local timeout = seconds(o.timeout, "init_process_group") or 600
  if o.store ~= nil then
    if o.init_method ~= nil then errorf(2, "init_process_group: Cannot specify both init_method and store.") end
    if world == nil or world <= 0 then errorf(2, "init_process_group: world_size must be positive if using store") end
    if rank == nil or rank < 0 then errorf(2, "init_process_group: rank must be non-negative if using store") end
    C.init_store(backend, o.store._s or o.store, rank, world, timeout)
  else
    local method = o.init_method or "env://"
    if type(method) ~= "string" then errorf(2, "init_process_group: init_method must be a string") end
    C.init(backend, method, rank, world, timeout)
  end
  groups, group_count, internal.timeout = {}, 0, timeout
end

function dist.is_available() return true end
dist.is_initialized = C.is_initialized
function dist.is_gloo_available() return C.available("gloo") end
function dist.is_nccl_available() return C.available("nccl") end
function dist.is_torchelastic_launched() return os.getenv("TORCHELASTIC_RUN_ID") ~= nil end


local function drop_group(g)
  g._destroyed = true
  C.group_destroy(g._ud)
  for i, x in ipairs(groups) do if x == g then table.remove(groups, i) break end end
end

function dist.destroy_process_group(group)
  if group == nil or group == WORLD then
    for i = #groups, 1, -1 do drop_group(groups[i]) end
    group_count = 0
    C.destroy()
  elseif group ~= NON_MEMBER then
    if getmetatable(group) ~= PG then errorf(2, "destroy_process_group: group must be a process group, got %s", tostring(group)) end
    if group._destroyed then errorf(2, "destroy_process_group: the process group %s has been destroyed", group.group_name) end
    drop_group(group)
  end
end

function dist.get_rank(group)
  if not C.is_initialized() or group == NON_MEMBER then return -1 end
  if group == nil or group == WORLD then return C.rank() end
  return group._rank
end

function dist.get_world_size(group)
  if not C.is_initialized() or group == NON_MEMBER then return -1 end
  if group == nil or group == WORLD then return C.size() end
  return #group.ranks
end

function dist.get_backend(group)
  if group == NON_MEMBER then errorf(2, "Invalid process group specified") end
  if group == nil or group == WORLD then return C.backend() end
  return group._backend
end

-- a global rank's rank in g (an error if it is not a member)
local function group_rank(g, r, fn)
  if g._world then return r end
  for i, x in ipairs(g.ranks) do if x == r then return i - 1 end end
  errorf(3, "%s: Global rank %s is not part of group %s", fn, tostring(r), tostring(g))
end
-- a group rank's global rank
local function global_rank(g, r, fn)
  if g._world then return r end
  local x = math.type(r) == "integer" and g.ranks[r + 1]
  if not x then errorf(3, "%s: Group rank %s is not part of group %s", fn, tostring(r), tostring(g)) end
  return x
end

-- LOCAL_RANK as launchers set it
function dist.get_node_local_rank(fallback_rank)
  local r = tonumber(os.getenv("LOCAL_RANK") or "")
  if r then return math.tointeger(r) end
  if fallback_rank ~= nil then return fallback_rank end
  errorf(2, "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow `get_node_local_rank` to work")
end

local function int_arg(v, fn, what)
  if math.type(v) ~= "integer" then errorf(3, "%s: %s must be an integer rank, got %s", fn, what, tostring(v)) end
  return v
end

-- the group rank of src/dst (global) or group_src/group_dst (the group's), one of them given
local function peer(g, o, name, fn)
  local global, grouped = o[name], o["group_" .. name]
  if global ~= nil and grouped ~= nil then errorf(3, "%s: Can not specify both %s and group_%s", fn, name, name) end
  if grouped ~= nil then
    int_arg(grouped, fn, "group_" .. name)
    if grouped < 0 or grouped >= g:size() then errorf(3, "%s: Group rank %d is not part of group %s", fn, grouped, tostring(g)) end
    return grouped
  end
  return group_rank(g, int_arg(global, fn, name), fn)
end

-- With async_op, a Work: wait(), is_completed(), get_future() (a torch.futures.Future whose
-- value is PyTorch's: the list of the collective's output tensors), result() (that list).
local work_values = setmetatable({}, { __mode = "k" })
local function async(w, value)
  if w ~= nil then work_values[w] = value end
  return w
end
local work_methods = debug.getregistry()["torch.distributed.Work"].__index
function work_methods.result(w) return work_values[w] or {} end
function work_methods.get_future(w) return require("torch_futures")._from_work(w, work_values[w] or {}) end

-- Each collective returns nil on a rank outside its group (PyTorch warns and returns None).
function dist.all_reduce(tensor, ...)
  local _, o, g = parse("all_reduce", { "op", "group", "async_op" }, 0, ...)
  if not g then return nil end
  return async(C.all_reduce(tensor, op_index(o.op, "all_reduce"), o.async_op, g._ud), { tensor })
end

function dist.broadcast(tensor, ...)
  local _, o, g = parse("broadcast", { "src", "group", "async_op", "group_src" }, 0, ...)
  if not g then return nil end
  return async(C.broadcast(tensor, peer(g, o, "src", "broadcast"), o.async_op, g._ud), { tensor })
end

function dist.reduce(tensor, ...)
  local _, o, g = parse("reduce", { "dst", "op", "group", "async_op", "group_dst" }, 0, ...)
  if not g then return nil end
  return async(C.reduce(tensor, peer(g, o, "dst", "reduce"), op_index(o.op, "reduce"), o.async_op, g._ud), { tensor })
end

function dist.all_gather(tensor_list, tensor, ...)
  local _, o, g = parse("all_gather", { "group", "async_op" }, 0, ...)
  if not g then return nil end
  return async(C.all_gather(tensor_list, tensor, o.async_op, g._ud), { tensor_list })
end

function dist.all_gather_into_tensor(output_tensor, input_tensor, ...)
  local _, o, g = parse("all_gather_into_tensor", { "group", "async_op" }, 0, ...)
  if not g then return nil end
  return async(C.all_gather_into_tensor(output_tensor, input_tensor, o.async_op, g._ud), { output_tensor })
end

function dist.reduce_scatter(output, input_list, ...)
  local _, o, g = parse("reduce_scatter", { "op", "group", "async_op" }, 0, ...)
  if not g then return nil end
  return async(C.reduce_scatter(output, input_list, op_index(o.op, "reduce_scatter"), o.async_op, g._ud), { output })
end

function dist.reduce_scatter_tensor(output, input, ...)
  local _, o, g = parse("reduce_scatter_tensor", { "op", "group", "async_op" }, 0, ...)
  if not g then return nil end
  return async(C.reduce_scatter_tensor(output, input, op_index(o.op, "reduce_scatter_tensor"), o.async_op, g._ud), { output })
end

function dist.send(tensor, ...)
  local _, o, g = parse("send", { "dst", "group", "tag", "group_dst" }, 0, ...)
  if not g then return nil end
  C.send(tensor, peer(g, o, "dst", "send"), o.tag or 0, false, g._ud)
end

-- returns the sender's rank (-1 outside the group): the group's with group_src, else global
function dist.recv(tensor, ...)
  local _, o, g = parse("recv", { "src", "group", "tag", "group_src" }, 0, ...)
  if not g then return -1 end
  if o.src == nil and o.group_src == nil then errorf(2, "recv: src is needed (receiving from any rank is not supported)") end
  local src = peer(g, o, "src", "recv")
  C.recv(tensor, src, o.tag or 0, false, g._ud)
  return o.group_src ~= nil and src or global_rank(g, src, "recv")
end

function dist.isend(tensor, ...)
  local _, o, g = parse("isend", { "dst", "group", "tag", "group_dst" }, 0, ...)
  if not g then return nil end
  return async(C.send(tensor, peer(g, o, "dst", "isend"), o.tag or 0, true, g._ud), { tensor })
end

function dist.irecv(tensor, ...)
  local _, o, g = parse("irecv", { "src", "group", "tag", "group_src" }, 0, ...)
  if not g then return nil end
  if o.src == nil and o.group_src == nil then errorf(2, "irecv: src is needed (receiving from any rank is not supported)") end
  return async(C.recv(tensor, peer(g, o, "src", "irecv"), o.tag or 0, true, g._ud), { tensor })
end

function dist.barrier(...)
  local _, o, g = parse("barrier", { "group", "async_op", "device_ids" }, 0, ...)
  if not g then return nil end
  return C.barrier(o.async_op, g._ud)
end

-- Where a collective's own tensors go: the current GPU for nccl, else the CPU.
function dist._device(group)
  local b = C.is_initialized() and (group and group ~= NON_MEMBER and group._backend or C.backend())
  if b == "nccl" then return "cuda:" .. torch.cuda.current_device() end
  return "cpu"
end

-- ---- for torch_distributed_more.lua ----
internal.parse, internal.errorf, internal.seconds, internal.op_index, internal.finish = parse, errorf, seconds, op_index, finish
internal.peer, internal.group_rank, internal.global_rank, internal.int_arg = peer, group_rank, global_rank, int_arg
-- register a group made by new_group; the count of groups made so far
function internal.add_group(g) groups[#groups + 1] = g end
function internal.next_group_count() group_count = group_count + 1; return group_count end
function internal.group_count() return group_count end
function internal.groups() return groups end

-- ---- torch.nn.parallel ----
local nn = torch.nn or {}
torch.nn = nn
local parallel = require "nn_parallel"
nn.parallel = nn.parallel or {}
for k, v in pairs(parallel) do nn.parallel[k] = v end
nn.DataParallel = parallel.DataParallel

return dist
