-- The process-group level API: the options classes, ProcessGroup methods taking them (group
-- ranks, Work results), Work's methods, ProcessGroupGloo over a store of its own, split_group,
-- BackendConfig, reduce_op and supports_complex, against values computed here. Run by
-- test_dist.sh through the launcher with 2 and 3 ranks.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed

dist.init_process_group("gloo", { timeout = 30 })
local rank, world = dist.get_rank(), dist.get_world_size()
local pg = dist.group.WORLD
local function tri(n) return n * (n + 1) / 2 end -- 1 + 2 + ... + n

-- ---- options classes ----
local o = dist.AllreduceOptions()
H.check(o.reduceOp == dist.ReduceOp.SUM and o.timeout == nil and o.asyncOp == true, "AllreduceOptions defaults")
local r = dist.ReduceOptions()
H.check(r.rootRank == 0 and r.rootTensor == 0 and r.reduceOp == dist.ReduceOp.SUM, "ReduceOptions defaults")
local b1, b2 = dist.BarrierOptions(), dist.BarrierOptions()
H.check(#b1.device_ids == 0 and b1.device_ids ~= b2.device_ids, "BarrierOptions: a device_ids list of its own")
H.raises(function() o.rootRank = 1 end, "'AllreduceOptions' object has no attribute 'rootRank'", "setting an unknown field")
H.raises(function() return o.nope end, "'AllreduceOptions' object has no attribute 'nope'", "reading an unknown field")
H.raises(function() dist.GatherOptions({ reduceOp = dist.ReduceOp.SUM }) end, "'GatherOptions' object has no attribute 'reduceOp'", "a constructor table with an unknown field")
for _, name in ipairs({ "BroadcastOptions", "AllgatherOptions", "ScatterOptions", "ReduceScatterOptions", "AllToAllOptions", "AllreduceCoalescedOptions" }) do
  H.check(tostring(dist[name]()) == "<torch.distributed." .. name .. ">", "%s prints", name)
end
local nccl_opts = dist.ProcessGroupNCCL.Options()
H.check(nccl_opts.is_high_priority_stream == false, "ProcessGroupNCCL.Options().is_high_priority_stream")
nccl_opts.is_high_priority_stream = true
H.check(nccl_opts.is_high_priority_stream == true, "is_high_priority_stream can be set")

-- ---- ProcessGroup methods on WORLD ----
local t = torch.tensor({ rank + 1.0, -rank })
local opts = dist.AllreduceOptions()
opts.reduceOp = dist.ReduceOp.MAX
local w = pg:allreduce({ t }, opts)
H.check(getmetatable(w).__name == "torch.distributed.Work", "allreduce returns a Work")
H.check(w:wait() == true and w:is_completed() and w:is_success() and w:exception() == nil, "the Work completes")
H.close(t, torch.tensor({ world, 0 }), 0, "allreduce with AllreduceOptions{reduceOp=MAX}")
H.check(w:result()[1] == t, "Work:result() is the list of output tensors")
local fut = w:get_future()
H.check(fut:wait()[1] == t, "Work:get_future() gives the same list")
local t2 = torch.tensor({ rank + 1.0 })
pg:allreduce(t2, dist.ReduceOp.SUM):wait()
H.check(t2:item() == tri(world), "allreduce(tensor, op)")
local t3 = torch.tensor({ rank + 1.0 })
pg:allreduce({ t3 }):wait()
H.check(t3:item() == tri(world), "allreduce with default options")
opts.asyncOp = false
local t4 = torch.tensor({ rank + 2.0 })
w = pg:allreduce({ t4 }, opts)
H.check(w:is_completed() and t4:item() == world + 1, "asyncOp=false: done when allreduce returns")
H.raises(function() pg:allreduce({ t, t }) end, "must be a list of one tensor", "allreduce with two tensors")
H.raises(function() pg:allreduce({ t }, dist.BroadcastOptions()) end, "expected torch.distributed.AllreduceOptions", "allreduce with another options class")

local last = world - 1
local bo = dist.BroadcastOptions()
bo.rootRank = last
local bt = torch.tensor({ rank * 10.0 })
pg:broadcast({ bt }, bo):wait()
H.check(bt:item() == last * 10, "broadcast with BroadcastOptions{rootRank=%d}", last)
bt:fill_(rank)
pg:broadcast(bt, 0):wait()
H.check(bt:item() == 0, "broadcast(tensor, root)")
bo.rootTensor = 1
H.raises(function() pg:broadcast({ bt }, bo) end, "rootTensor must be 0", "broadcast with rootTensor 1")

local ro = dist.ReduceOptions()
ro.rootRank, ro.reduceOp = last, dist.ReduceOp.PRODUCT
local rt = torch.tensor({ rank + 1.0 })
pg:reduce({ rt }, ro):wait()
local fact = 1
for i = 1, world do fact = fact * i end
if rank == last then H.check(rt:item() == fact, "reduce PRODUCT to rank %d", last) end
rt = torch.tensor({ rank + 1.0 })
pg:reduce(rt, 0, dist.ReduceOp.MIN):wait()
if rank == 0 then H.check(rt:item() == 1, "reduce(tensor, root, MIN)") end

local outs = {}
for i = 1, world do outs[i] = torch.zeros(2) end
pg:allgather({ outs }, { torch.tensor({ rank, rank * rank }):float() }):wait()
local ok = true
for i = 1, world do ok = ok and outs[i][0]:item() == i - 1 and outs[i][1]:item() == (i - 1) ^ 2 end
H.check(ok, "allgather({{outs}}, {t})")
local outs2 = {}
for i = 1, world do outs2[i] = torch.zeros(1) end
pg:allgather(outs2, torch.tensor({ rank * 3.0 })):wait()
H.check(outs2[world]:item() == 3 * (world - 1), "allgather(outs, t)")
local flat = torch.zeros(world)
pg:_allgather_base(flat, torch.tensor({ rank + 0.5 })):wait()
H.close(flat, torch.arange(world):double():add(0.5):float(), 0, "_allgather_base")

-- reduce_scatter: rank r gives (r+1)*i to chunk i; chunk i sums to (i)*tri(world)
local ins = {}
for i = 1, world do ins[i] = torch.tensor({ (rank + 1.0) * i }) end
local rs = torch.zeros(1)
pg:reduce_scatter({ rs }, { ins }):wait()
H.check(rs:item() == (rank + 1) * tri(world), "reduce_scatter({out}, {{ins}})")
local rso = dist.ReduceScatterOptions()
rso.reduceOp = dist.ReduceOp.MAX
rs:zero_()
pg:reduce_scatter({ rs }, { ins }, rso):wait()
H.check(rs:item() == world * (rank + 1), "reduce_scatter with ReduceScatterOptions{reduceOp=MAX}")
rs:zero_()
pg:reduce_scatter(rs, ins, dist.ReduceOp.SUM):wait()
H.check(rs:item() == (rank + 1) * tri(world), "reduce_scatter(out, ins, op)")
local big = torch.arange(world):float():add(rank)
rs:zero_()
pg:_reduce_scatter_base(rs, big):wait()
H.check(rs:item() == world * rank + (world - 1) * world / 2, "_reduce_scatter_base")

local go = dist.GatherOptions()
go.rootRank = last
local gl = {}
if rank == last then for i = 1, world do gl[i] = torch.zeros(1) end end
w = pg:gather(rank == last and { gl } or {}, { torch.tensor({ rank * 2.0 }) }, go)
w:wait()
if rank == last then
  ok = true
  for i = 1, world do ok = ok and gl[i]:item() == 2 * (i - 1) end
  H.check(ok, "gather({{list}}, {t}, GatherOptions{rootRank=%d})", last)
end
local so = dist.ScatterOptions()
local sl = {}
for i = 1, world do sl[i] = torch.tensor({ 100.0 + i }) end
local sout = torch.zeros(1)
pg:scatter({ sout }, rank == 0 and { sl } or {}, so):wait()
H.check(sout:item() == 101 + rank, "scatter({out}, {{list}}, ScatterOptions)")
sout:zero_()
pg:scatter(sout, rank == 0 and sl or {}, 0):wait()
H.check(sout:item() == 101 + rank, "scatter(out, list, root)")

-- alltoall_base: rank r sends 10*r + d to rank d
local ain = torch.arange(world):float():add(10 * rank)
local aout = torch.zeros(world)
pg:alltoall_base(aout, ain, {}, {}):wait()
ok = true
for s = 0, world - 1 do ok = ok and aout[s]:item() == 10 * s + rank end
H.check(ok, "alltoall_base")
local ains, aouts = {}, {}
for d = 1, world do ains[d] = torch.tensor({ rank * 100.0 + d }); aouts[d] = torch.zeros(1) end
w = pg:alltoall(aouts, ains, dist.AllToAllOptions())
w:wait()
ok = true
for s = 1, world do ok = ok and aouts[s]:item() == (s - 1) * 100 + rank + 1 end
H.check(ok and w:result() == aouts, "alltoall, with its result")

local c1, c2 = torch.tensor({ rank + 1.0 }), torch.tensor({ 1.0, 2.0 })
w = pg:allreduce_coalesced({ c1, c2 }, dist.AllreduceCoalescedOptions())
w:wait()
H.check(c1:item() == tri(world) and c2[1]:item() == 2 * world, "allreduce_coalesced")
H.check(pg:barrier(dist.BarrierOptions()):wait() == true, "barrier(BarrierOptions)")

-- send/recv between group ranks 0 and 1
local p = torch.zeros(2)
if rank == 0 then pg:send({ torch.tensor({ 4.0, 5.0 }) }, 1, 3):wait()
elseif rank == 1 then pg:recv({ p }, 0, 3):wait(); H.close(p, torch.tensor({ 4.0, 5.0 }), 0, "send/recv") end

-- Work methods are dist.Work's, for the engine's and for those finished in Lua alike
H.check(dist.Work.is_success ~= nil and w.is_success == dist.Work.is_success, "dist.Work holds the methods")
H.check(tostring(dist.Work) == "<class 'torch.distributed.Work'>", "dist.Work prints as a class")
-- an options timeout on work finished in Lua (scatter): wait() returns once the work is done
local sco = dist.ScatterOptions()
sco.timeout = 5
local scout = torch.zeros(1)
H.check(pg:scatter({ scout }, rank == 0 and { sl } or {}, sco):wait() == true and scout:item() == 101 + rank, "scatter with an options timeout")
H.raises(function() dist.Work.wait({}) end, "a torch.distributed.Work expected", "Work.wait on something else")

-- ---- a subgroup's methods take group ranks ----
local sub = dist.new_group({ 0, last })
if sub ~= dist.GroupMember.NON_GROUP_MEMBER then
  local x = torch.tensor({ rank * 1.0 })
  local xo = dist.BroadcastOptions()
  xo.rootRank = 1 -- group rank 1 = global rank `last`
  sub:broadcast({ x }, xo):wait()
  H.check(x:item() == last, "a subgroup's broadcast from group rank 1")
end

-- ---- split_group ----
local evens, odds = {}, {}
for i = 0, world - 1 do if i % 2 == 0 then evens[#evens + 1] = i else odds[#odds + 1] = i end end
local g = dist.split_group(nil, { evens, odds })
local mine = rank % 2 == 0 and evens or odds
H.check(g ~= nil and g:size() == #mine and g:rank() == (rank // 2), "split_group: this rank's split")
local sv = torch.tensor({ rank * 1.0 })
dist.all_reduce(sv, { group = g })
local want = 0
for _, x in ipairs(mine) do want = want + x end
H.check(sv:item() == want, "all_reduce over the split")
local only = dist.split_group(dist.group.WORLD, { { 0 } })
H.check((rank == 0) == (only ~= nil), "a rank in no split gets nil")
H.raises(function() dist.split_group(nil, { { 0, 1 }, { 1 } }) end, "the splits must not overlap", "split_group with overlapping splits")
H.raises(function() dist.split_group(nil, { { world } }) end, "is not a rank of the parent group", "split_group with a rank out of range")
-- a split of a split: the parent's group ranks
if g and g:size() >= 2 then
  local gg = dist.split_group(g, { { 1 } })
  if g:rank() == 1 then
    H.check(gg ~= nil and dist.get_process_group_ranks(gg)[1] == mine[2], "split_group of a subgroup maps its group ranks")
  end
end

-- ---- ProcessGroupGloo over a store of its own ----
local store = rank == 0 and dist.TCPStore("127.0.0.1", 0, nil, true, { timeout = 30 }) or nil
local port = torch.tensor({ rank == 0 and store.port or 0 })
dist.broadcast(port, 0)
if rank ~= 0 then store = dist.TCPStore("127.0.0.1", math.tointeger(port:item()), nil, false, { timeout = 30 }) end
local gloo = dist.ProcessGroupGloo(store, rank, world, 30)
H.check(gloo:rank() == rank and gloo:size() == world, "ProcessGroupGloo rank and size")
local gx = torch.tensor({ rank + 1.0 })
gloo:allreduce({ gx }):wait()
H.check(gx:item() == tri(world), "ProcessGroupGloo allreduce")
local gy = torch.tensor({ 2.0 })
dist.all_reduce(gy, { group = gloo, op = dist.ReduceOp.PRODUCT })
H.check(gy:item() == 2 ^ world, "dist.all_reduce over a ProcessGroupGloo")
H.raises(function() dist.ProcessGroupGloo(store, world, world) end, "is out of range for size", "ProcessGroupGloo with a bad rank")
H.raises(function() dist.ProcessGroupGloo("x", 0, 1) end, "store must be a torch.distributed store", "ProcessGroupGloo without a store")

-- ---- BackendConfig, reduce_op, supports_complex ----
H.check(tostring(dist.BackendConfig("gloo")) == "cpu:gloo,cuda:gloo", "BackendConfig('gloo')")
H.check(tostring(dist.BackendConfig("nccl")) == "cuda:nccl", "BackendConfig('nccl')")
local bc = dist.BackendConfig("cpu:gloo, cuda:nccl")
H.check(tostring(bc) == "cpu:gloo,cuda:nccl" and bc:get_device_backend_map().cuda == "nccl", "BackendConfig('cpu:gloo,cuda:nccl')")
H.raises(function() dist.BackendConfig("cpu:gloo,cuda") end, "The custom backend string argument is invalid", "a bad BackendConfig string")
H.check(tostring(dist.BackendConfig("undefined")):find("cpu:gloo", 1, true) == 1, "BackendConfig('undefined') uses gloo on the CPU")
H.check(dist.reduce_op.MAX == dist.ReduceOp.MAX and dist.reduce_op.AVG == nil, "reduce_op is the old ReduceOp (no AVG)")
H.check(dist.supports_complex(dist.ReduceOp.SUM) and dist.supports_complex(dist.ReduceOp.AVG), "SUM and AVG support complex")
H.check(not dist.supports_complex(dist.ReduceOp.MAX) and not dist.supports_complex(dist.ReduceOp.MIN) and not dist.supports_complex(dist.ReduceOp.PRODUCT),
  "MAX, MIN and PRODUCT do not")
H.raises(function() dist.supports_complex("XOR") end, "a torch.distributed.ReduceOp expected", "supports_complex of an unknown op")

dist.barrier()
H.report()
