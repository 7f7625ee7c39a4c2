-- torch.distributed: process groups and collectives, PyTorch's names and
-- arguments over torch._dist (bindings/dist.c). Also wires torch.nn.parallel
-- (DistributedDataParallel, DataParallel: nn_parallel.lua).
--
--   dist.init_process_group("gloo", {init_method="tcp://127.0.0.1:29500", rank=0, world_size=2, timeout=60})
--   dist.all_reduce(t)                      -- SUM, in place
--   dist.all_reduce(t, dist.ReduceOp.AVG)   -- or {op=..., async_op=true} -> Work
--   dist.all_gather(list, t); dist.broadcast(t, 0); dist.barrier()
--
-- Keyword tables take PyTorch's keyword names; `group` may be nil or
-- dist.group.WORLD (there is only the default group). Timeouts are seconds (a
-- number, or a table like {seconds=30, minutes=1}); the default is 600 s.
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

local WORLD = setmetatable({}, { __tostring = function() return "<ProcessGroup WORLD>" end })
dist.group = { WORLD = WORLD }
dist.GroupMember = { WORLD = WORLD }
dist.Backend = { GLOO = "gloo", NCCL = "nccl" }

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
  if group ~= nil and group ~= WORLD then errorf(3, "%s: only the default group (dist.group.WORLD) is supported", fn) end
  return args, o
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
  if o.store ~= nil then errorf(2, "init_process_group: store= is not supported; use init_method") end
  if backend == nil then backend = "gloo" end
  if type(backend) ~= "string" then errorf(2, "init_process_group: backend must be a string, got %s", type(backend)) end
  backend = backend:lower()
  if backend == "cpu:gloo,cuda:nccl" then backend = "gloo" end
  local rank, world = o.rank, o.world_size
  if rank ~= nil and math.type(rank) ~= "integer" then errorf(2, "init_process_group: rank must be an integer") end
  if world ~= nil and math.type(world) ~= "integer" then errorf(2, "init_process_group: world_size must be an integer") end
  if rank == -1 then rank = nil end
  if world == -1 then world = nil end
  local method = o.init_method or "env://"
  if type(method) ~= "string" then errorf(2, "init_process_group: init_method must be a string") end
  C.init(backend, method, rank, world, seconds(o.timeout, "init_process_group") or 600)
end

function dist.is_available() return true end
dist.is_initialized = C.is_initialized
function dist.is_gloo_available() return C.available("gloo") end
function dist.is_nccl_available() return C.available("nccl") end
function dist.is_torchelastic_launched() return os.getenv("TORCHELASTIC_RUN_ID") ~= nil end

function dist.destroy_process_group(group)
  if group ~= nil and group ~= WORLD then errorf(2, "destroy_process_group: only the default group is supported") end
  C.destroy()
end

function dist.get_rank(group)
  if not C.is_initialized() then return -1 end
  return C.rank()
end

function dist.get_world_size(group)
  if not C.is_initialized() then return -1 end
  return C.size()
end

function dist.get_backend(group) return C.backend() end

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

function dist.all_reduce(tensor, ...)
  local _, o = parse("all_reduce", { "op", "group", "async_op" }, 0, ...)
  return C.all_reduce(tensor, op_index(o.op, "all_reduce"), o.async_op)
end

function dist.broadcast(tensor, ...)
  local _, o = parse("broadcast", { "src", "group", "async_op", "group_src" }, 0, ...)
  local src = o.src or o.group_src
  return C.broadcast(tensor, int_arg(src, "broadcast", "src"), o.async_op)
end

function dist.reduce(tensor, ...)
  local _, o = parse("reduce", { "dst", "op", "group", "async_op", "group_dst" }, 0, ...)
  local dst = o.dst or o.group_dst
  return C.reduce(tensor, int_arg(dst, "reduce", "dst"), op_index(o.op, "reduce"), o.async_op)
end

function dist.all_gather(tensor_list, tensor, ...)
  local _, o = parse("all_gather", { "group", "async_op" }, 0, ...)
  return C.all_gather(tensor_list, tensor, o.async_op)
end

function dist.all_gather_into_tensor(output_tensor, input_tensor, ...)
  local _, o = parse("all_gather_into_tensor", { "group", "async_op" }, 0, ...)
  return C.all_gather_into_tensor(output_tensor, input_tensor, o.async_op)
end

function dist.reduce_scatter(output, input_list, ...)
  local _, o = parse("reduce_scatter", { "op", "group", "async_op" }, 0, ...)
  return C.reduce_scatter(output, input_list, op_index(o.op, "reduce_scatter"), o.async_op)
end

function dist.reduce_scatter_tensor(output, input, ...)
  local _, o = parse("reduce_scatter_tensor", { "op", "group", "async_op" }, 0, ...)
  return C.reduce_scatter_tensor(output, input, op_index(o.op, "reduce_scatter_tensor"), o.async_op)
end

function dist.send(tensor, ...)
  local _, o = parse("send", { "dst", "group", "tag", "group_dst" }, 0, ...)
  C.send(tensor, int_arg(o.dst or o.group_dst, "send", "dst"), o.tag or 0, false)
end

-- returns the sender's rank
function dist.recv(tensor, ...)
  local _, o = parse("recv", { "src", "group", "tag", "group_src" }, 0, ...)
  local src = o.src or o.group_src
  if src == nil then errorf(2, "recv: src is needed (receiving from any rank is not supported)") end
  C.recv(tensor, int_arg(src, "recv", "src"), o.tag or 0, false)
  return src
end

function dist.isend(tensor, ...)
  local _, o = parse("isend", { "dst", "group", "tag", "group_dst" }, 0, ...)
  return C.send(tensor, int_arg(o.dst or o.group_dst, "isend", "dst"), o.tag or 0, true)
end

function dist.irecv(tensor, ...)
  local _, o = parse("irecv", { "src", "group", "tag", "group_src" }, 0, ...)
  if o.src == nil and o.group_src == nil then errorf(2, "irecv: src is needed (receiving from any rank is not supported)") end
  return C.recv(tensor, int_arg(o.src or o.group_src, "irecv", "src"), o.tag or 0, true)
end

function dist.barrier(...)
  local _, o = parse("barrier", { "group", "async_op", "device_ids" }, 0, ...)
  return C.barrier(o.async_op)
end

-- Where a collective's own tensors go: the current GPU for nccl, else the CPU.
function dist._device()
  if C.is_initialized() and C.backend() == "nccl" then return "cuda:" .. torch.cuda.current_device() end
  return "cpu"
end

-- Lua values through the collectives: strings and numbers, tables of them (nested), booleans.
local function encode(v) return string.format("%q", v) end
local function serialize(v, out)
  local t = type(v)
  if t == "table" then
    out[#out + 1] = "{"
    for k, x in pairs(v) do
      out[#out + 1] = "["; serialize(k, out); out[#out + 1] = "]="; serialize(x, out); out[#out + 1] = ","
    end
    out[#out + 1] = "}"
  elseif t == "string" or t == "number" or t == "boolean" or t == "nil" then
    out[#out + 1] = t == "nil" and "nil" or encode(v)
  else
    errorf(4, "object collectives take strings, numbers, booleans and tables of them, got %s", t)
  end
end
local function to_bytes(v)
  local out = {}
  serialize(v, out)
  local s = table.concat(out)
  local bytes = { s:byte(1, -1) }
  if #bytes == 0 then bytes = { 0 } end
  return torch.tensor(bytes, { dtype = torch.uint8 }):to(dist._device()), #s
end
local function from_bytes(t, n)
  local bytes = t:cpu():tolist()
  local chars = {}
  for i = 1, n do chars[i] = string.char(math.tointeger(bytes[i])) end
  return load("return " .. table.concat(chars), "=object", "t", {})()
end

-- all_gather_object(object_list, obj): object_list[r] (1-based) = rank r-1's obj
function dist.all_gather_object(object_list, obj)
  local bytes, n = to_bytes(obj)
  local world, dev = C.size(), dist._device()
  local sizes = {}
  for r = 1, world do sizes[r] = torch.zeros(1, { dtype = torch.int64, device = dev }) end
  C.all_gather(sizes, torch.tensor({ n }, { dtype = torch.int64 }):to(dev), false)
  local max = 0
  for r = 1, world do max = math.max(max, sizes[r]:item()) end
  local padded = torch.zeros(math.max(max, 1), { dtype = torch.uint8, device = dev })
  if n > 0 then padded:narrow(0, 0, n):copy_(bytes:narrow(0, 0, n)) end
  local outs = {}
  for r = 1, world do outs[r] = torch.zeros(math.max(max, 1), { dtype = torch.uint8, device = dev }) end
  C.all_gather(outs, padded, false)
  for r = 1, world do object_list[r] = from_bytes(outs[r], math.tointeger(sizes[r]:item())) end
end

-- broadcast_object_list(list, src): every rank's list gets src's entries
function dist.broadcast_object_list(object_list, src)
  src = src or 0
  local dev = dist._device()
  local n = torch.zeros(1, { dtype = torch.int64, device = dev })
  local bytes
  if C.rank() == src then
    local k
    bytes, k = to_bytes(object_list)
    n[0] = k
  end
  C.broadcast(n, src, false)
  local k = math.tointeger(n:item())
  if C.rank() ~= src then bytes = torch.zeros(math.max(k, 1), { dtype = torch.uint8, device = dev }) end
  if k > 0 then C.broadcast(bytes, src, false) end
  if C.rank() ~= src then
    local got = from_bytes(bytes, k)
    for i = 1, #object_list do object_list[i] = nil end
    for i, v in pairs(got) do object_list[i] = v end
  end
end

-- ---- torch.nn.parallel ----
local nn = torch.nn or {}
torch.nn = nn
local parallel = require "nn_parallel"
nn.parallel = nn.parallel or {}
for k, v in pairs(parallel) do nn.parallel[k] = v end
nn.DataParallel = parallel.DataParallel

return dist
