-- Subgroups and the collectives added after the first ones (gather, scatter, all_to_all,
-- coalesced, object collectives, batch_isend_irecv, monitored_barrier), gloo, against
-- values computed here. Run by test_dist.sh through the launcher with 2 and 3 ranks.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local time = require "time"
local dist = torch.distributed

dist.init_process_group("gloo", { timeout = 30 })
local rank, world = dist.get_rank(), dist.get_world_size()
H.check(dist.get_pg_count() == 1, "get_pg_count after init")
H.check(dist.group.WORLD:rank() == rank and dist.group.WORLD:size() == world, "WORLD:rank(), WORLD:size()")

local function range(a, b) local t = {} for i = a, b do t[#t + 1] = i end return t end
local function same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- ---- subgroups of every size: ranks 0..k-1 ----
for k = 1, world do
  local ranks = range(0, k - 1)
  local g = dist.new_group(ranks)
  local member = rank < k
  if member then
    H.check(dist.get_rank(g) == rank and dist.get_world_size(g) == k, "get_rank/get_world_size of a group of %d", k)
    H.check(g:rank() == rank and g:size() == k, "g:rank(), g:size() of a group of %d", k)
    H.check(same(dist.get_process_group_ranks(g), ranks), "get_process_group_ranks of a group of %d", k)
    local t = torch.tensor({ rank + 1.0, 2.0 * rank })
    dist.all_reduce(t, { group = g })
    H.close(t, torch.tensor({ k * (k + 1) / 2, k * (k - 1) }), 0, "all_reduce in a group of %d", k)
    local b = torch.tensor({ rank * 10 })
    dist.broadcast(b, k - 1, { group = g })
    H.check(b:item() == (k - 1) * 10, "broadcast from global rank %d in a group of %d", k - 1, k)
    local outs = {}
    for r = 1, k do outs[r] = torch.zeros(2) end
    dist.all_gather(outs, torch.tensor({ rank, rank * rank }):float(), { group = g })
    local ok = true
    for r = 1, k do ok = ok and outs[r][0]:item() == r - 1 and outs[r][1]:item() == (r - 1) ^ 2 end
    H.check(ok, "all_gather in a group of %d", k)
    dist.barrier({ group = g })
    H.check(dist.get_backend(g) == "gloo", "get_backend of a group")
  else
    H.check(g == dist.GroupMember.NON_GROUP_MEMBER, "a non-member gets NON_GROUP_MEMBER (group of %d)", k)
    H.check(dist.get_rank(g) == -1 and dist.get_world_size(g) == -1, "get_rank/get_world_size of a non-member")
    local t = torch.tensor({ 5.0 })
    H.check(dist.all_reduce(t, { group = g }) == nil and t:item() == 5, "all_reduce on a group the rank is not in does nothing")
    H.check(dist.broadcast(t, 0, { group = g }) == nil and t:item() == 5, "broadcast on a group the rank is not in does nothing")
  end
end
H.check(dist.get_pg_count() == 1 + world, "get_pg_count after %d new_group calls", world)

-- ---- a group of the first and last ranks: group ranks and global ranks ----
if world >= 2 then
  local ends = { 0, world - 1 }
  local g = dist.new_group({ world - 1, 0 }, { timeout = 20 }) -- any order: sorted
  if rank == 0 or rank == world - 1 then
    local me = rank == 0 and 0 or 1
    H.check(dist.get_group_rank(g, world - 1) == 1 and dist.get_global_rank(g, 1) == world - 1, "get_group_rank/get_global_rank")
    H.raises(function() dist.get_group_rank(g, 99) end, "Global rank 99 is not part of group", "get_group_rank of a non-member")
    H.raises(function() dist.get_global_rank(g, 5) end, "Group rank 5 is not part of group", "get_global_rank out of range")
    H.check(same(dist.get_process_group_ranks(g), ends), "ranks of {last, 0}")
    local t = torch.tensor({ rank + 1 })
    dist.reduce(t, { dst = world - 1, group = g })
    if rank == world - 1 then H.check(t:item() == world + 1, "reduce to global dst in a group") end
    local u = torch.tensor({ rank + 1 })
    dist.reduce(u, { group_dst = 0, group = g, op = dist.ReduceOp.MAX })
    if rank == 0 then H.check(u:item() == world, "reduce to group_dst 0 in a group") end
    -- point-to-point inside the group, by group rank and by global rank
    local x = torch.tensor({ 0.0, 0.0 })
    if me == 0 then
      dist.send(torch.tensor({ 7.0, 8.0 }), { group_dst = 1, group = g })
      local from = dist.recv(x, { src = world - 1, group = g })
      H.check(from == world - 1 and x[0]:item() == 9, "recv by global rank in a group")
    else
      local from = dist.recv(x, { group_src = 0, group = g })
      H.check(from == 0 and x[1]:item() == 8, "recv by group rank in a group")
      dist.send(torch.tensor({ 9.0, 9.0 }), 0, { group = g })
    end
    H.raises(function() dist.broadcast(t, { src = 0, group_src = 0, group = g }) end, "Can not specify both", "src and group_src")
    if world > 2 then H.raises(function() dist.broadcast(t, 1, { group = g }) end, "Global rank 1 is not part of group", "src outside the group") end
    dist.destroy_process_group(g)
    H.raises(function() dist.all_reduce(t, { group = g }) end, "has been destroyed", "a collective on a destroyed group")
  end
end

-- ---- use_local_synchronization: only the members call new_group ----
if rank < 2 then
  local g = dist.new_group({ 0, 1 }, { use_local_synchronization = true })
  local t = torch.tensor({ 10 * (rank + 1) })
  dist.all_reduce(t, { group = g })
  H.check(t:item() == 30 and g:size() == 2, "a group made with use_local_synchronization")
else
  H.raises(function() dist.new_group({ 0, 1 }, { use_local_synchronization = true }) end, "only the ranks of the group call new_group",
    "use_local_synchronization on a non-member")
end
H.raises(function() dist.new_group({ 0, world }) end, "should be within the world_size", "new_group with a rank out of range")
H.raises(function() dist.new_group({ 0, 0 }) end, "appears twice", "new_group with a repeated rank")
H.raises(function() dist.new_group({ 0 }, { bogus = 1 }) end, "unknown keyword 'bogus'", "new_group with an unknown keyword")
dist.barrier()

-- ---- new_subgroups, new_subgroups_by_enumeration ----
do
  local cur, all = dist.new_subgroups(1)
  H.check(#all == world and dist.get_world_size(cur) == 1 and dist.get_process_group_ranks(cur)[1] == rank, "new_subgroups(1)")
  local t = torch.tensor({ rank + 1 })
  dist.all_reduce(t, { group = cur })
  H.check(t:item() == rank + 1, "all_reduce in a group of one")
  H.raises(function() dist.new_subgroups(world + 1) end, "must not exceed", "new_subgroups larger than the world")
  if world == 3 then H.raises(function() dist.new_subgroups(2) end, "divisible", "new_subgroups(2) of 3 ranks") end
  local lists = world == 3 and { { 0, 2 }, { 1 } } or { { 1 }, { 0 } }
  local mine, groups = dist.new_subgroups_by_enumeration(lists)
  H.check(#groups == 2, "new_subgroups_by_enumeration: every subgroup")
  local expect = {}
  for _, l in ipairs(lists) do for _, r in ipairs(l) do if r == rank then expect = l end end end
  H.check(same(dist.get_process_group_ranks(mine), expect), "new_subgroups_by_enumeration: this rank's subgroup")
  local s = torch.tensor({ rank })
  dist.all_reduce(s, { group = mine })
  local sum = 0
  for _, r in ipairs(expect) do sum = sum + r end
  H.check(s:item() == sum, "all_reduce in an enumerated subgroup")
  H.raises(function() dist.new_subgroups_by_enumeration({ { 0, 1 }, { 1 } }) end, "Rank 1 has appeared in both subgroup", "a rank in two subgroups")
end

-- ---- gather, scatter ----
do
  local dst = world - 1
  local mine = torch.arange(3):float() + 10 * rank
  if rank == dst then
    local list = {}
    for r = 1, world do list[r] = torch.zeros(3) end
    dist.gather(mine, list, dst)
    local ok = true
    for r = 1, world do ok = ok and H.maxdiff(list[r], torch.arange(3):float() + 10 * (r - 1)) == 0 end
    H.check(ok, "gather into dst")
    H.raises(function() dist.gather(mine, nil, dst) end, "must be specified on destination rank", "gather without a list on dst")
  else
    H.check(dist.gather(mine, { dst = dst }) == nil, "gather on a non-destination rank")
    H.raises(function() dist.gather(mine, { torch.zeros(3) }, dst) end, "must NOT be specified on non-destination ranks", "gather with a list off dst")
  end
  local out = torch.zeros(2, 2, { dtype = torch.int64 })
  local list = nil
  if rank == 0 then
    list = {}
    for r = 1, world do list[r] = torch.tensor({ { r, r * 2 }, { r * 3, r * 4 } }) end
  end
  dist.scatter(out, list, 0)
  local r = rank + 1
  H.close(out, torch.tensor({ { r, r * 2 }, { r * 3, r * 4 } }), 0, "scatter from 0")
  local out2 = torch.zeros(1)
  local w = dist.scatter(out2, { scatter_list = rank == 1 and range(1, world) and (function()
    local l = {} for q = 1, world do l[q] = torch.tensor({ q * 1.5 }) end return l end)() or nil, src = 1, async_op = true })
  w:wait()
  H.check(out2:item() == (rank + 1) * 1.5, "scatter from 1, async")
end

-- ---- all_to_all_single, all_to_all ----
do
  -- equal splits: rank r's row j is r * 100 + j; rank r gets row r of every rank
  local input = torch.arange(world * 2):view(world, 2) + 100 * rank
  local output = torch.zeros(world, 2, { dtype = torch.int64 })
  dist.all_to_all_single(output, input)
  local expect = torch.zeros(world, 2, { dtype = torch.int64 })
  for s = 0, world - 1 do expect[s]:copy_(torch.arange(2) + 2 * rank + 100 * s) end
  H.close(output, expect, 0, "all_to_all_single, equal splits")
  -- uneven: rank s sends (s + d + 1) rows of value s * 10 + d to rank d
  local in_split, out_split = {}, {}
  local rows = {}
  for d = 0, world - 1 do
    in_split[d + 1] = rank + d + 1
    for _ = 1, rank + d + 1 do rows[#rows + 1] = { rank * 10 + d, -(rank * 10 + d) } end
  end
  local exp_rows = {}
  for s = 0, world - 1 do
    out_split[s + 1] = s + rank + 1
    for _ = 1, s + rank + 1 do exp_rows[#exp_rows + 1] = { s * 10 + rank, -(s * 10 + rank) } end
  end
  local out = torch.zeros(#exp_rows, 2)
  local w = dist.all_to_all_single(out, torch.tensor(rows):float(), out_split, in_split, { async_op = true })
  w:wait()
  H.close(out, torch.tensor(exp_rows):float(), 0, "all_to_all_single, uneven splits, async")
  H.raises(function() dist.all_to_all_single(torch.zeros(world + 1), torch.zeros(world)) end, "divide equally", "all_to_all_single, bad size")
  -- all_to_all: rank s sends a tensor of s + d + 1 elements to rank d
  local ins, outs = {}, {}
  for d = 0, world - 1 do ins[d + 1] = torch.full({ rank + d + 1 }, rank * 10 + d) end
  for s = 0, world - 1 do outs[s + 1] = torch.zeros(s + rank + 1, { dtype = torch.int64 }) end
  dist.all_to_all(outs, ins)
  local ok = true
  for s = 0, world - 1 do ok = ok and H.maxdiff(outs[s + 1], torch.full({ s + rank + 1 }, s * 10 + rank)) == 0 end
  H.check(ok, "all_to_all of tensors of different sizes")
end

-- ---- coalesced ----
do
  local a, b = torch.tensor({ rank + 1.0, 1.0 }), torch.ones(2, 2) * rank
  dist.all_reduce_coalesced({ a, b })
  H.close(a, torch.tensor({ world * (world + 1) / 2, world }), 0, "all_reduce_coalesced, first")
  H.close(b, torch.ones(2, 2) * (world * (world - 1) / 2), 0, "all_reduce_coalesced, second")
  local outs = {}
  for r = 1, world do outs[r] = { torch.zeros(1), torch.zeros(2) } end
  dist.all_gather_coalesced(outs, { torch.tensor({ rank }):float(), torch.tensor({ rank, -rank }):float() })
  local ok = true
  for r = 1, world do ok = ok and outs[r][1]:item() == r - 1 and outs[r][2][1]:item() == 1 - r end
  H.check(ok, "all_gather_coalesced")
end

-- ---- object collectives with nested tables ----
do
  local obj = { rank = rank, name = "r" .. rank, nested = { list = { 1, 2, rank }, flag = rank % 2 == 0, x = 0.1 * rank } }
  local list = {}
  dist.all_gather_object(list, obj)
  local ok = #list == world
  for r = 1, world do ok = ok and same(list[r], { rank = r - 1, name = "r" .. (r - 1), nested = { list = { 1, 2, r - 1 }, flag = (r - 1) % 2 == 0, x = 0.1 * (r - 1) } }) end
  H.check(ok, "all_gather_object of nested tables")
  local got = {}
  dist.gather_object(obj, rank == 0 and got or nil, 0)
  if rank == 0 then H.check(#got == world and same(got[world].nested.list, { 1, 2, world - 1 }), "gather_object") end
  local bl = rank == world - 1 and { "a", { b = { c = "deep" } }, 3.5 } or { false, false, false }
  dist.broadcast_object_list(bl, world - 1)
  H.check(same(bl, { "a", { b = { c = "deep" } }, 3.5 }), "broadcast_object_list from the last rank")
  local out = { false }
  local inputs = nil
  if rank == 0 then
    inputs = {}
    for r = 1, world do inputs[r] = { id = r - 1, tags = { "t" .. r } } end
  end
  dist.scatter_object_list(out, inputs, 0)
  H.check(same(out[1], { id = rank, tags = { "t" .. (rank + 1) } }), "scatter_object_list")
  if rank == 0 then
    dist.send_object_list({ { k = "v", n = { 1, { 2 } } }, "two" }, 1)
  elseif rank == 1 then
    local l = { false, false }
    local from = dist.recv_object_list(l, 0)
    H.check(from == 0 and same(l, { { k = "v", n = { 1, { 2 } } }, "two" }), "send_object_list / recv_object_list")
  end
  H.raises(function() dist.all_gather_object({}, { f = print }) end, "object collectives take", "an object holding a function")
end

-- ---- batch_isend_irecv: a ring ----
do
  local nxt, prev = (rank + 1) % world, (rank - 1) % world
  local recv = torch.zeros(3)
  local ops = { dist.P2POp(dist.isend, torch.full({ 3 }, rank + 0.5), nxt), dist.P2POp(dist.irecv, recv, prev) }
  local works = dist.batch_isend_irecv(ops)
  H.check(#works == 2, "batch_isend_irecv: a Work per op")
  for _, w in ipairs(works) do w:wait() end
  H.close(recv, torch.full({ 3 }, prev + 0.5), 0, "batch_isend_irecv around a ring")
  H.raises(function() dist.P2POp(dist.all_reduce, recv, 0) end, "Invalid ``op``", "P2POp of a collective")
end

-- ---- monitored_barrier ----
do
  dist.monitored_barrier({ timeout = 20 })
  H.check(true, "monitored_barrier, every rank there")
  local last = world - 1
  if rank == last then time.sleep(1.5) end
  local ok, err = pcall(dist.monitored_barrier, { timeout = 0.5, wait_all_ranks = true })
  H.check(not ok and tostring(err):find("Rank " .. last .. " failed to pass monitoredBarrier in 500 ms", 1, true) ~= nil,
    "monitored_barrier names the late rank: %s", tostring(err))
  dist.barrier()
end

-- ---- backends, debug levels ----
H.check(dist.is_backend_available("gloo") and not dist.is_backend_available("mpi"), "is_backend_available")
H.check(not dist.is_mpi_available() and not dist.is_ucc_available() and not dist.is_xccl_available(), "mpi, ucc, xccl")
H.check(dist.get_backend_config() == "cpu:gloo", "get_backend_config")
H.check(dist.get_default_backend_for_device("cuda:1") == "nccl" and dist.get_default_backend_for_device("cpu") == "gloo", "get_default_backend_for_device")
H.raises(function() dist.get_default_backend_for_device("xla") end, "Default backend not registered for device", "an unknown device")
H.check(dist.Backend("GLOO") == dist.Backend.GLOO and dist.Backend("mybackend") == "mybackend", "Backend()")
H.check(dist.default_pg_timeout == 1800, "default_pg_timeout")
local before = dist.get_debug_level()
dist.set_debug_level(dist.DebugLevel.DETAIL)
H.check(dist.get_debug_level() == dist.DebugLevel.DETAIL and tostring(dist.DebugLevel.INFO) == "DebugLevel.INFO", "set_debug_level")
dist.set_debug_level(before)

dist.destroy_process_group()
H.check(dist.get_pg_count() == 0, "get_pg_count after destroy")
H.report()
