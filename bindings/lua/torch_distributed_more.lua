-- torch.distributed, more: subgroups (new_group, new_subgroups...), gather, scatter,
-- all_to_all(_single), the coalesced collectives, object collectives, P2POp and
-- batch_isend_irecv, monitored_barrier, and the backend/debug helpers.
-- gather, scatter and all_to_all are built on all_gather and broadcast, so they run the
-- same way on every backend (all_to_all moves world_size times its data).
local torch = require "torch"
local time = require "time"
local dist = torch.distributed
local I = require "torch_distributed_internal"
local C, parse, errorf, peer, WORLD, NON_MEMBER, PG = I.C, I.parse, I.errorf, I.peer, I.WORLD, I.NON_MEMBER, I.PG

-- ---- subgroups ----

local function rank_list(ranks, fn, world)
  local out, seen = {}, {}
  for i, r in ipairs(ranks) do
    if math.type(r) ~= "integer" then errorf(3, "%s: ranks must be integers, got %s", fn, tostring(r)) end
    if r < 0 or r >= world then errorf(3, "%s: The new group's rank should be within the world_size set by init_process_group (rank %d, world_size %d)", fn, r, world) end
    if seen[r] then errorf(3, "%s: rank %d appears twice in ranks", fn, r) end
    seen[r] = true
    out[i] = r
  end
  table.sort(out)
  return out
end

local local_counts = {} -- use_local_synchronization: groups made so far per rank list

-- new_group(ranks, timeout, backend, pg_options, use_local_synchronization, group_desc, device_id):
-- every rank calls it (all ranks, or only the members with use_local_synchronization);
-- a rank outside ranks gets GroupMember.NON_GROUP_MEMBER
function dist.new_group(...)
  local _, o = parse("new_group", { "ranks", "timeout", "backend", "pg_options", "use_local_synchronization", "group_desc", "device_id" }, 0, ...)
  local world, me = C.size(), C.rank()
  local ranks
  if o.ranks == nil then
    ranks = {}
    for r = 0, world - 1 do ranks[r + 1] = r end
  else
    if type(o.ranks) ~= "table" then errorf(2, "new_group: ranks must be a list of ranks, got %s", type(o.ranks)) end
    ranks = rank_list(o.ranks, "new_group", world)
  end
  local backend = o.backend and dist.Backend(o.backend) or C.backend()
  if backend ~= "gloo" and backend ~= "nccl" then errorf(2, "new_group: Invalid backend: '%s' (expected 'gloo' or 'nccl')", backend) end
  local timeout = I.seconds(o.timeout, "new_group") or I.timeout
  local name, prefix
  if o.use_local_synchronization then
    local key = table.concat(ranks, ",")
    local n = (local_counts[key] or 0) + 1
    local_counts[key] = n
    name = "local:" .. key .. ":" .. n
    prefix = "local_group/" .. key .. "/" .. n
  else
    name = tostring(I.next_group_count())
    prefix = "group/" .. name
  end
  local index
  for i, r in ipairs(ranks) do if r == me then index = i end end
  if not index then
    if o.use_local_synchronization then errorf(2, "new_group: with use_local_synchronization only the ranks of the group call new_group (rank %d is not in it)", me) end
    return NON_MEMBER
  end
  local g = setmetatable({ ranks = ranks, _rank = index - 1, group_name = name, _backend = backend, _desc = o.group_desc }, PG)
  g._ud = C.new_group(backend, prefix, index - 1, #ranks, timeout)
  g._timeout = timeout
  I.add_group(g)
  return g
end

local subgroup_keys = { "timeout", "backend", "pg_options", "group_desc" }

-- new_subgroups(group_size, group, timeout, backend, pg_options, group_desc) -> this rank's
-- subgroup, every subgroup: world split into consecutive blocks of group_size ranks
function dist.new_subgroups(...)
  local _, o = parse("new_subgroups", { "group_size", "group", "timeout", "backend", "pg_options", "group_desc" }, 0, ...)
  if o.group ~= nil and o.group ~= WORLD then errorf(2, "new_subgroups: only the default group can be split") end
  local size = o.group_size
  if size == nil then
    size = torch.cuda.is_available() and torch.cuda.device_count() or 0
    if size == 0 then errorf(2, "new_subgroups: group_size is needed without GPUs (it defaults to the number of GPUs)") end
  end
  if math.type(size) ~= "integer" or size <= 0 then errorf(2, "new_subgroups: The arg 'group_size' (%s) must be positive", tostring(size)) end
  local world = C.size()
  if size > world then errorf(2, "new_subgroups: The arg 'group_size' (%d) must not exceed the world size (%d)", size, world) end
  if world % size ~= 0 then errorf(2, "new_subgroups: The world size (%d) must be divisible by 'group_size' (%d)", world, size) end
  local lists = {}
  for k = 0, world // size - 1 do
    local l = {}
    for j = 0, size - 1 do l[j + 1] = k * size + j end
    lists[k + 1] = l
  end
  local opts = {}
  for _, k in ipairs(subgroup_keys) do opts[k] = o[k] end
  return dist.new_subgroups_by_enumeration(lists, opts)
end

-- new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout, backend, pg_options, group_desc)
-- -> this rank's subgroup (nil if none), every subgroup (NON_GROUP_MEMBER where not a member)
function dist.new_subgroups_by_enumeration(lists, ...)
  local _, o = parse("new_subgroups_by_enumeration", subgroup_keys, 0, ...)
  if type(lists) ~= "table" or #lists == 0 then errorf(2, "new_subgroups_by_enumeration: The arg 'ranks_per_subgroup_list' cannot be empty") end
  local seen, me = {}, C.rank()
  for k, l in ipairs(lists) do
    if type(l) ~= "table" then errorf(2, "new_subgroups_by_enumeration: entry %d is not a list of ranks", k) end
    for _, r in ipairs(l) do
      if seen[r] then errorf(2, "new_subgroups_by_enumeration: Rank %d has appeared in both subgroup %d and %d", r, seen[r], k) end
      seen[r] = k
    end
  end
  local cur, all = nil, {}
  for k, l in ipairs(lists) do
    local g = dist.new_group(l, { timeout = o.timeout, backend = o.backend, pg_options = o.pg_options, group_desc = o.group_desc })
    all[k] = g
    if seen[me] == k then cur = g end
  end
  return cur, all
end

local function check_group(g, fn)
  if g == nil then return WORLD end
  if g == NON_MEMBER then errorf(3, "%s: the rank is not part of this group (GroupMember.NON_GROUP_MEMBER)", fn) end
  if getmetatable(g) ~= PG then errorf(3, "%s: group must be a process group, got %s", fn, tostring(g)) end
  return g
end

function dist.get_process_group_ranks(group)
  local g = check_group(group, "get_process_group_ranks")
  if g._world then
    local out = {}
    for r = 0, C.size() - 1 do out[r + 1] = r end
    return out
  end
  return table.move(g.ranks, 1, #g.ranks, 1, {})
end

function dist.get_global_rank(group, group_rank)
  return I.global_rank(check_group(group, "get_global_rank"), group_rank, "get_global_rank")
end

function dist.get_group_rank(group, global_rank)
  return I.group_rank(check_group(group, "get_group_rank"), global_rank, "get_group_rank")
end

function dist.get_pg_count()
  if not C.is_initialized() then return 0 end
  return 1 + I.group_count()
end

-- ---- work finished in Lua: wait() waits for the collective, then runs after() ----
local LuaWork = { __name = "torch.distributed.Work" }
LuaWork.__index = LuaWork
function LuaWork:wait()
  if self._work then self._work:wait() end
  if self._after then
    local f = self._after
    self._after = nil
    f()
  end
  return true
end
function LuaWork:is_completed() return self._after == nil and (not self._work or self._work:is_completed()) end
LuaWork.__close = function(self) self:wait() end
I.LuaWork = LuaWork

-- run a collective that returns a Work when asked; after() completes it
local function finish(async, work, after)
  local w = setmetatable({ _work = work, _after = after }, LuaWork)
  if async then return w end
  w:wait()
end

local function size_of(g) return g:size() end

-- ---- gather, scatter ----

-- gather(tensor, gather_list, dst, group, async_op, group_dst): gather_list on dst only
function dist.gather(tensor, ...)
  local _, o, g = parse("gather", { "gather_list", "dst", "group", "async_op", "group_dst" }, 0, ...)
  if not g then return nil end
  if o.dst == nil and o.group_dst == nil then o.group_dst = 0 end
  local dst = peer(g, o, "dst", "gather")
  local list = o.gather_list
  local n = size_of(g)
  if g:rank() == dst then
    if type(list) ~= "table" or #list == 0 then errorf(2, "gather: Argument ``gather_list`` must be specified on destination rank.") end
    if #list ~= n then errorf(2, "gather: Argument ``gather_list`` must hold the group size (%d) tensors, got %d", n, #list) end
  else
    if list ~= nil and (type(list) ~= "table" or #list > 0) then errorf(2, "gather: Argument ``gather_list`` must NOT be specified on non-destination ranks.") end
    list = {}
    for r = 1, n do list[r] = torch.empty_like(tensor) end
  end
  return C.all_gather(list, tensor, o.async_op, g._ud)
end

-- scatter(tensor, scatter_list, src, group, async_op, group_src): tensor gets src's scatter_list[rank]
function dist.scatter(tensor, ...)
  local _, o, g = parse("scatter", { "scatter_list", "src", "group", "async_op", "group_src" }, 0, ...)
  if not g then return nil end
  if o.src == nil and o.group_src == nil then o.group_src = 0 end
  local src = peer(g, o, "src", "scatter")
  local n, me = size_of(g), g:rank()
  local flat = torch.empty({ n, tensor:numel() }, { dtype = tensor.dtype, device = tensor.device })
  if me == src then
    local list = o.scatter_list
    if type(list) ~= "table" or #list == 0 then errorf(2, "scatter: Argument ``scatter_list`` must be specified on source rank.") end
    if #list ~= n then errorf(2, "scatter: Argument ``scatter_list`` must hold the group size (%d) tensors, got %d", n, #list) end
    for r = 1, n do
      local t = list[r]
      if t:numel() ~= tensor:numel() or t.dtype ~= tensor.dtype then
        errorf(2, "scatter: entry %d of scatter_list must have the output tensor's size and dtype", r)
      end
      flat[r - 1]:copy_(t:reshape(-1))
    end
  elseif o.scatter_list ~= nil and (type(o.scatter_list) ~= "table" or #o.scatter_list > 0) then
    errorf(2, "scatter: Argument ``scatter_list`` must NOT be specified on non-source ranks.")
  end
  local w = C.broadcast(flat, src, true, g._ud)
  return finish(o.async_op, w, function()
    local d = tensor:detach()
    d:copy_(flat[me]:view(tensor.shape))
  end)
end

-- ---- all_to_all ----

local function splits(sizes, total, n, fn, what)
  if sizes == nil or (type(sizes) == "table" and #sizes == 0) then
    if total % n ~= 0 then errorf(4, "%s: the %s tensor's first dimension (%d) must divide equally by the group size (%d)", fn, what, total, n) end
    local s = {}
    for r = 1, n do s[r] = total // n end
    return s
  end
  if type(sizes) ~= "table" or #sizes ~= n then errorf(4, "%s: %s_split_sizes must hold the group size (%d) entries", fn, what, n) end
  local sum = 0
  for r = 1, n do
    if math.type(sizes[r]) ~= "integer" or sizes[r] < 0 then errorf(4, "%s: %s_split_sizes must be non-negative integers", fn, what) end
    sum = sum + sizes[r]
  end
  if sum ~= total then errorf(4, "%s: %s_split_sizes sum to %d, but the tensor's first dimension is %d", fn, what, sum, total) end
  return sizes
end

-- rows of input (first dim) in blocks of in_split go to each rank; output gets out_split rows from each
local function exchange(g, output, input, out_split, in_split, async)
  local n, me = size_of(g), g:rank()
  local row = 1
  for d = 1, input:dim() - 1 do row = row * input:size(d) end
  local m = 0
  for r = 1, n do m = math.max(m, in_split[r]) end
  local mt = torch.tensor({ m }, { dtype = torch.int64, device = input.device })
  C.all_reduce(mt, 4, false, g._ud) -- MAX: the largest block of any rank
  m = math.tointeger(mt:item())
  local pack = torch.zeros({ n, math.max(m, 1), row }, { dtype = input.dtype, device = input.device })
  local flat_in = input:reshape(-1, row)
  local at = 0
  for r = 1, n do
    if in_split[r] > 0 then pack[r - 1]:narrow(0, 0, in_split[r]):copy_(flat_in:narrow(0, at, in_split[r])) end
    at = at + in_split[r]
  end
  local gathered = torch.empty({ n, n, math.max(m, 1), row }, { dtype = input.dtype, device = input.device })
  local w = C.all_gather_into_tensor(gathered, pack, true, g._ud)
  return finish(async, w, function()
    local out = output:detach():view(-1, row)
    local pos = 0
    for s = 1, n do
      if out_split[s] > 0 then out:narrow(0, pos, out_split[s]):copy_(gathered[s - 1][me]:narrow(0, 0, out_split[s])) end
      pos = pos + out_split[s]
    end
  end)
end

-- all_to_all_single(output, input, output_split_sizes, input_split_sizes, group, async_op)
function dist.all_to_all_single(output, input, ...)
  local _, o, g = parse("all_to_all_single", { "output_split_sizes", "input_split_sizes", "group", "async_op" }, 0, ...)
  if not g then return nil end
  local fn, n = "all_to_all_single", size_of(g)
  if output.dtype ~= input.dtype then errorf(2, "%s: output and input must have the same dtype (%s vs %s)", fn, tostring(output.dtype), tostring(input.dtype)) end
  if not output:is_contiguous() then errorf(2, "%s: Tensors must be contiguous", fn) end
  local d0 = function(t) return t:dim() == 0 and 1 or t:size(0) end
  local in_split = splits(o.input_split_sizes, d0(input), n, fn, "input")
  local out_split = splits(o.output_split_sizes, d0(output), n, fn, "output")
  if input:dim() > 0 and output:numel() ~= 0 and d0(output) > 0 and input:numel() // math.max(d0(input), 1) ~= output:numel() // d0(output) then
    errorf(2, "%s: output and input rows must have the same size", fn)
  end
  return exchange(g, output, input, out_split, in_split, o.async_op)
end

-- all_to_all(output_tensor_list, input_tensor_list, group, async_op): output[r] gets rank r's input[me]
function dist.all_to_all(output_list, input_list, ...)
  local _, o, g = parse("all_to_all", { "group", "async_op" }, 0, ...)
  if not g then return nil end
  local n = size_of(g)
  if type(output_list) ~= "table" or #output_list ~= n or type(input_list) ~= "table" or #input_list ~= n then
    errorf(2, "all_to_all: output_tensor_list and input_tensor_list must each hold the group size (%d) tensors", n)
  end
  local dtype, dev = input_list[1].dtype, input_list[1].device
  local in_split, out_split, flats = {}, {}, {}
  for r = 1, n do
    if input_list[r].dtype ~= dtype or output_list[r].dtype ~= dtype then errorf(2, "all_to_all: every tensor must have the same dtype") end
    in_split[r], out_split[r] = input_list[r]:numel(), output_list[r]:numel()
    flats[r] = input_list[r]:reshape(-1)
  end
  local input = torch.cat(flats)
  local total = 0
  for r = 1, n do total = total + out_split[r] end
  local output = torch.empty(total, { dtype = dtype, device = dev })
  local w = exchange(g, output, input, out_split, in_split, true)
  return finish(o.async_op, w, function()
    w:wait()
    local pos = 0
    for r = 1, n do
      local t = output_list[r]
      t:detach():copy_(output:narrow(0, pos, out_split[r]):view(t.shape))
      pos = pos + out_split[r]
    end
  end)
end

-- ---- coalesced ----

local function cat_flat(ts, fn)
  local flats = {}
  for i, t in ipairs(ts) do
    if t.dtype ~= ts[1].dtype then errorf(3, "%s: every tensor must have the same dtype", fn) end
    flats[i] = t:reshape(-1)
  end
  return torch.cat(flats)
end

-- all_reduce_coalesced(tensors, op, group, async_op): each tensor all-reduced, in one call
function dist.all_reduce_coalesced(tensors, ...)
  local _, o, g = parse("all_reduce_coalesced", { "op", "group", "async_op" }, 0, ...)
  if not g then return nil end
  if type(tensors) ~= "table" then tensors = { tensors } end
  if #tensors == 0 then return finish(o.async_op, nil, nil) end
  local flat = cat_flat(tensors, "all_reduce_coalesced")
  local w = C.all_reduce(flat, I.op_index(o.op, "all_reduce_coalesced"), true, g._ud)
  return finish(o.async_op, w, function()
    local at = 0
    for _, t in ipairs(tensors) do
      t:detach():copy_(flat:narrow(0, at, t:numel()):view(t.shape))
      at = at + t:numel()
    end
  end)
end

-- all_gather_coalesced(output_tensor_lists, input_tensor_list, group, async_op):
-- output_tensor_lists[r][i] gets rank r-1's input_tensor_list[i]
function dist.all_gather_coalesced(output_lists, input_list, ...)
  local _, o, g = parse("all_gather_coalesced", { "group", "async_op" }, 0, ...)
  if not g then return nil end
  local n = size_of(g)
  if type(output_lists) ~= "table" or #output_lists ~= n then errorf(2, "all_gather_coalesced: output_tensor_lists must hold the group size (%d) lists", n) end
  local flat = cat_flat(input_list, "all_gather_coalesced")
  local outs = {}
  for r = 1, n do outs[r] = torch.empty_like(flat) end
  local w = C.all_gather(outs, flat, true, g._ud)
  return finish(o.async_op, w, function()
    for r = 1, n do
      local at = 0
      for i, t in ipairs(input_list) do
        local dst = output_lists[r][i]
        dst:detach():copy_(outs[r]:narrow(0, at, t:numel()):view(dst.shape))
        at = at + t:numel()
      end
    end
  end)
end

-- ---- object collectives: strings, numbers, booleans and (nested) tables of them ----

local function serialize(v, out)
  local t = type(v)
  if t == "table" then
    out[#out + 1] = "{"
    for k, x in pairs(v) do
      out[#out + 1] = "["; serialize(k, out); out[#out + 1] = "]="; serialize(x, out); out[#out + 1] = ","
    end
    out[#out + 1] = "}"
  elseif t == "string" or t == "number" or t == "boolean" then
    out[#out + 1] = string.format("%q", v)
  elseif t == "nil" then
    out[#out + 1] = "nil"
  else
    errorf(4, "object collectives take strings, numbers, booleans and tables of them, got %s", t)
  end
end

local function encode(v)
  local out = {}
  serialize(v, out)
  return table.concat(out)
end

local function decode(s) return load("return " .. s, "=object", "t", {})() end

-- a string as a uint8 tensor on dev (at least one element)
local function bytes_of(s, dev, pad)
  local n = math.max(pad or #s, 1)
  local t = torch.zeros(n, { dtype = torch.uint8 })
  if #s > 0 then t:narrow(0, 0, #s):copy_(torch.tensor({ s:byte(1, -1) }, { dtype = torch.uint8 })) end
  return t:to(dev)
end

local function string_of(t, n)
  if n == 0 then return "" end
  local bytes = t:narrow(0, 0, n):cpu():tolist()
  local chars = {}
  for i = 1, n do chars[i] = string.char(math.tointeger(bytes[i])) end
  return table.concat(chars)
end

local function int_tensor(v, dev) return torch.tensor({ v }, { dtype = torch.int64 }):to(dev) end

-- every rank's string, padded to the longest: a list indexed by group rank + 1
local function all_gather_strings(g, s, dev)
  local n = size_of(g)
  local sizes = {}
  for r = 1, n do sizes[r] = torch.zeros(1, { dtype = torch.int64, device = dev }) end
  C.all_gather(sizes, int_tensor(#s, dev), false, g._ud)
  local max = 0
  for r = 1, n do sizes[r] = math.tointeger(sizes[r]:item()); max = math.max(max, sizes[r]) end
  local outs = {}
  for r = 1, n do outs[r] = torch.zeros(math.max(max, 1), { dtype = torch.uint8, device = dev }) end
  C.all_gather(outs, bytes_of(s, dev, max), false, g._ud)
  local strs = {}
  for r = 1, n do strs[r] = string_of(outs[r], sizes[r]) end
  return strs
end

-- all_gather_object(object_list, obj, group): object_list[r] (1-based) = group rank r-1's obj
function dist.all_gather_object(object_list, obj, ...)
  local _, _, g = parse("all_gather_object", { "group" }, 0, ...)
  if not g then return nil end
  local strs = all_gather_strings(g, encode(obj), dist._device(g))
  for r = 1, #strs do object_list[r] = decode(strs[r]) end
end

-- gather_object(obj, object_gather_list, dst, group, group_dst): the list on dst only
function dist.gather_object(obj, ...)
  local _, o, g = parse("gather_object", { "object_gather_list", "dst", "group", "group_dst" }, 0, ...)
  if not g then return nil end
  if o.dst == nil and o.group_dst == nil then o.group_dst = 0 end
  local dst = peer(g, o, "dst", "gather_object")
  local list = o.object_gather_list
  if g:rank() == dst and type(list) ~= "table" then errorf(2, "gather_object: Argument ``object_gather_list`` must be specified on destination rank.") end
  local strs = all_gather_strings(g, encode(obj), dist._device(g))
  if g:rank() == dst then for r = 1, #strs do list[r] = decode(strs[r]) end end
end

-- broadcast one string from group rank src
local function broadcast_string(g, s, src, dev)
  local n = int_tensor(s and #s or 0, dev)
  C.broadcast(n, src, false, g._ud)
  local k = math.tointeger(n:item())
  local t = g:rank() == src and bytes_of(s, dev) or torch.zeros(math.max(k, 1), { dtype = torch.uint8, device = dev })
  if k > 0 then C.broadcast(t, src, false, g._ud) end
  return string_of(t, k)
end

-- broadcast_object_list(object_list, src, group, device, group_src): every rank's list gets src's entries
function dist.broadcast_object_list(object_list, ...)
  local _, o, g = parse("broadcast_object_list", { "src", "group", "device", "group_src" }, 0, ...)
  if not g then return nil end
  if o.src == nil and o.group_src == nil then o.group_src = 0 end
  local src = peer(g, o, "src", "broadcast_object_list")
  local mine = g:rank() == src
  local s = broadcast_string(g, mine and encode(object_list) or nil, src, o.device or dist._device(g))
  if not mine then
    local got = decode(s)
    for i = 1, #object_list do object_list[i] = nil end
    for i, v in pairs(got) do object_list[i] = v end
  end
end

-- scatter_object_list(scatter_object_output_list, scatter_object_input_list, src, group, group_src):
-- output_list[1] gets src's input_list[rank + 1]
function dist.scatter_object_list(output_list, ...)
  local _, o, g = parse("scatter_object_list", { "scatter_object_input_list", "src", "group", "group_src" }, 0, ...)
  if not g then return nil end
  if o.src == nil and o.group_src == nil then o.group_src = 0 end
  local src = peer(g, o, "src", "scatter_object_list")
  if type(output_list) ~= "table" or #output_list < 1 then
    errorf(2, "scatter_object_list: Expected argument scatter_object_output_list to be a list of size at least 1.")
  end
  local n, me = size_of(g), g:rank()
  local s
  if me == src then
    local input = o.scatter_object_input_list
    if type(input) ~= "table" or #input ~= n then errorf(2, "scatter_object_list: scatter_object_input_list must hold the group size (%d) objects on the source rank", n) end
    local parts = {}
    for r = 1, n do parts[r] = input[r] end
    s = encode(parts)
  end
  local all = decode(broadcast_string(g, s, src, dist._device(g)))
  output_list[1] = all[me + 1]
end

-- send_object_list(object_list, dst, group, device, group_dst) / recv_object_list(object_list, src, ...)
function dist.send_object_list(object_list, ...)
  local _, o, g = parse("send_object_list", { "dst", "group", "device", "group_dst" }, 0, ...)
  if not g then return nil end
  local dst = peer(g, o, "dst", "send_object_list")
  local dev = o.device or dist._device(g)
  local s = encode(object_list)
  C.send(int_tensor(#s, dev), dst, 0, false, g._ud)
  if #s > 0 then C.send(bytes_of(s, dev), dst, 0, false, g._ud) end
end

-- returns the sender's rank (global; the group's with group_src)
function dist.recv_object_list(object_list, ...)
  local _, o, g = parse("recv_object_list", { "src", "group", "device", "group_src" }, 0, ...)
  if not g then return -1 end
  if o.src == nil and o.group_src == nil then errorf(2, "recv_object_list: src is needed (receiving from any rank is not supported)") end
  local src = peer(g, o, "src", "recv_object_list")
  local dev = o.device or dist._device(g)
  local n = torch.zeros(1, { dtype = torch.int64, device = dev })
  C.recv(n, src, 0, false, g._ud)
  local k = math.tointeger(n:item())
  local t = torch.zeros(math.max(k, 1), { dtype = torch.uint8, device = dev })
  if k > 0 then C.recv(t, src, 0, false, g._ud) end
  local got = decode(string_of(t, k))
  for i = 1, #object_list do object_list[i] = got[i] end
  return o.group_src ~= nil and src or I.global_rank(g, src, "recv_object_list")
end

-- ---- P2POp, batch_isend_irecv ----

local P2POp = { __name = "torch.distributed.P2POp" }
P2POp.__index = P2POp
P2POp.__tostring = function(p) return string.format("P2POp(%s, peer=%s)", p._send and "isend" or "irecv", tostring(p.peer)) end

-- P2POp(op, tensor, peer, group, tag, group_peer): op is dist.isend or dist.irecv
dist.P2POp = setmetatable({}, { __call = function(_, op, tensor, ...)
  local _, o = parse("P2POp", { "peer", "group", "tag", "group_peer" }, 0, ...)
  if op ~= dist.isend and op ~= dist.irecv and op ~= dist.send and op ~= dist.recv then
    errorf(2, "P2POp: Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or ``torch.distributed.irecv``.")
  end
  if o.peer == nil and o.group_peer == nil then errorf(2, "P2POp: peer or group_peer is needed") end
  return setmetatable({ op = op, tensor = tensor, peer = o.peer, group = o.group, tag = o.tag or 0, group_peer = o.group_peer,
    _send = op == dist.isend or op == dist.send }, P2POp)
end, __index = P2POp })

-- batch_isend_irecv(p2p_op_list) -> a Work per op. The ops are issued pair by pair in one
-- order on every rank (lower rank of a pair sends first), so a stream backend cannot deadlock.
function dist.batch_isend_irecv(ops)
  if type(ops) ~= "table" or #ops == 0 then errorf(2, "batch_isend_irecv: Invalid ``p2p_op_list``. Each op is expected to be a ``torch.distributed.P2POp``, got an empty list.") end
  local group = ops[1].group
  for i, p in ipairs(ops) do
    if getmetatable(p) ~= P2POp then errorf(2, "batch_isend_irecv: Invalid ``p2p_op_list``. Each op is expected to be a ``torch.distributed.P2POp``. (entry %d)", i) end
    if p.group ~= group then errorf(2, "batch_isend_irecv: All ops need to use the same group.") end
  end
  local g = group == nil and WORLD or group
  if g == NON_MEMBER then return {} end
  local me = g:rank()
  local order = {}
  for i, p in ipairs(ops) do
    local q = p.group_peer ~= nil and p.group_peer or I.group_rank(g, I.int_arg(p.peer, "batch_isend_irecv", "peer"), "batch_isend_irecv")
    order[i] = { i = i, peer = q, lo = math.min(me, q), hi = math.max(me, q), first = (me < q) == p._send }
  end
  table.sort(order, function(a, b)
    if a.lo ~= b.lo then return a.lo < b.lo end
    if a.hi ~= b.hi then return a.hi < b.hi end
    if a.first ~= b.first then return a.first end
    return a.i < b.i
  end)
  local works = {}
  for _, e in ipairs(order) do
    local p = ops[e.i]
    works[e.i] = (p._send and C.send or C.recv)(p.tensor, e.peer, p.tag, true, g._ud)
  end
  return works
end

-- ---- monitored_barrier (gloo): rank 0 of the group names the ranks that did not arrive ----

local barrier_counts = setmetatable({}, { __mode = "k" })

-- monitored_barrier(group, timeout, wait_all_ranks)
function dist.monitored_barrier(...)
  local _, o, g = parse("monitored_barrier", { "group", "timeout", "wait_all_ranks" }, 0, ...)
  if not g then return nil end
  local backend = g._world and C.backend() or g._backend
  if backend ~= "gloo" then errorf(2, "monitored_barrier: monitored_barrier is only implemented for GLOO backend.") end
  local timeout = I.seconds(o.timeout, "monitored_barrier") or g._timeout or I.timeout
  local n = (barrier_counts[g] or 0) + 1
  barrier_counts[g] = n
  local store = C.group_store(g._ud)
  local base = "monitored_barrier/" .. n .. "/"
  local me, size = g:rank(), g:size()
  local ms = math.floor(timeout * 1000 + 0.5)
  if me ~= 0 then
    store:set(base .. me, "1")
    local ok, result = pcall(store.get, store, base .. "result", timeout + 30)
    if not ok then errorf(2, "monitored_barrier: rank %d timed out waiting for rank 0 (%s)", g._world and me or g.ranks[me + 1], tostring(result)) end
    if result ~= "" then errorf(2, "%s", result) end
    return nil
  end
  local missing, deadline = {}, time.monotonic() + timeout
  for r = 1, size - 1 do
    local left = deadline - time.monotonic()
    local ok = pcall(store.get, store, base .. r, math.max(left, 0))
    if not ok then
      missing[#missing + 1] = g._world and r or g.ranks[r + 1]
      if not o.wait_all_ranks then break end
    end
  end
  local msg = ""
  if #missing == 1 then msg = string.format("Rank %d failed to pass monitoredBarrier in %d ms", missing[1], ms)
  elseif #missing > 1 then msg = string.format("Ranks %s failed to pass monitoredBarrier in %d ms", table.concat(missing, ", "), ms) end
  store:set(base .. "result", msg)
  if msg ~= "" then errorf(2, "%s", msg) end
end

-- ---- backends, debug levels ----

local backend_names = { GLOO = "gloo", NCCL = "nccl", MPI = "mpi", UCC = "ucc", XCCL = "xccl", UNDEFINED = "undefined" }
-- Backend(name) -> the lower-case name (Backend.GLOO == "gloo")
dist.Backend = setmetatable({}, { __call = function(_, name)
  if type(name) ~= "string" then errorf(2, "Backend constructor parameter must be string-ish") end
  return backend_names[name:upper()] or name:lower()
end })
for k, v in pairs(backend_names) do dist.Backend[k] = v end
dist.Backend.backend_list = { "undefined", "gloo", "nccl", "ucc", "mpi", "xccl" }
dist.Backend.default_device_backend_map = { cpu = "gloo", cuda = "nccl" }

function dist.is_backend_available(backend)
  local b = dist.Backend(backend)
  if b == "gloo" or b == "nccl" then return C.available(b) end
  return false
end
function dist.is_mpi_available() return false end
function dist.is_ucc_available() return false end
function dist.is_xccl_available() return false end

-- "cpu:gloo", "cuda:nccl"
function dist.get_backend_config(group)
  local b = dist.get_backend(group)
  return (b == "nccl" and "cuda:" or "cpu:") .. b
end

function dist.get_default_backend_for_device(device)
  local t = type(device) == "string" and device:match("^[%a_]+") or (device and device.type)
  local b = dist.Backend.default_device_backend_map[t]
  if not b then errorf(2, "Default backend not registered for device : %s", tostring(device)) end
  return b
end

-- PyTorch's default timeout of a process group (30 minutes), in seconds
dist.default_pg_timeout = 1800

local Level = { __name = "torch.distributed.DebugLevel" }
Level.__tostring = function(l) return "DebugLevel." .. l.name end
dist.DebugLevel = {}
for i, name in ipairs({ "OFF", "INFO", "DETAIL" }) do dist.DebugLevel[name] = setmetatable({ name = name, value = i - 1 }, Level) end
local level

function dist.set_debug_level(l)
  if getmetatable(l) ~= Level then errorf(2, "set_debug_level: expected a torch.distributed.DebugLevel, got %s", tostring(l)) end
  level = l
end

-- TORCH_DISTRIBUTED_DEBUG: OFF, INFO or DETAIL
function dist.set_debug_level_from_env()
  local v = os.getenv("TORCH_DISTRIBUTED_DEBUG")
  if v == nil or v == "" then level = dist.DebugLevel.OFF return end
  local l = dist.DebugLevel[v:upper()]
  if not l then errorf(2, "The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL, but is '%s'", v) end
  level = l
end

function dist.get_debug_level() return level end
if not pcall(dist.set_debug_level_from_env) then level = dist.DebugLevel.OFF end

return dist
