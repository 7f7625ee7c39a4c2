-- Every collective of torch.distributed (gloo) against values computed here, on
-- every rank. Run by test_dist.sh through the launcher with 2 and 3 ranks.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed

H.check(not dist.is_initialized(), "not initialized before init_process_group")
H.check(dist.get_rank() == -1, "get_rank before init")
dist.init_process_group("gloo", { timeout = 30 })
local rank, world = dist.get_rank(), dist.get_world_size()
H.check(dist.is_initialized(), "is_initialized")
H.check(rank == tonumber(os.getenv("RANK")) and world == tonumber(os.getenv("WORLD_SIZE")), "rank and world size from env://")
H.check(dist.get_backend() == "gloo", "get_backend")
H.raises(function() dist.init_process_group("gloo") end, "twice", "a second init")

local function per_rank(r, dtype) -- rank r's tensor: 3 x 4, values (i + 1) * (r + 1) + r
  return (torch.arange(12):view(3, 4) + 1):mul(r + 1):add(r):to(dtype)
end
local function fold(dtype, f) -- the reduction of every rank's tensor, in float64
  local acc = per_rank(0, torch.float64)
  for r = 1, world - 1 do acc = f(acc, per_rank(r, torch.float64)) end
  return acc:to(dtype)
end
local ops = {
  SUM = function(a, b) return a + b end,
  PRODUCT = function(a, b) return a * b end,
  MAX = function(a, b) return torch.maximum(a, b) end,
  MIN = function(a, b) return torch.minimum(a, b) end,
}

-- all_reduce over dtypes and ops, contiguous and not
for _, dt in ipairs({ torch.float32, torch.float64, torch.int64, torch.int32, torch.int16, torch.int8, torch.float16, torch.bfloat16,
  torch.uint8 }) do
  for _, name in ipairs({ "SUM", "PRODUCT", "MAX", "MIN" }) do -- a list: every rank must run the same collectives in the same order
    local f = ops[name]
    local skip = (dt == torch.uint8 and name == "PRODUCT") or ((dt == torch.float16 or dt == torch.bfloat16) and name == "PRODUCT")
    if not skip then
      local t = per_rank(rank, dt)
      dist.all_reduce(t, dist.ReduceOp[name])
      local tol = (dt == torch.float16 or dt == torch.bfloat16) and 0.02 * fold(torch.float64, ops.SUM):abs():max():item() or 0
      H.close(t, fold(dt, f), tol, "all_reduce %s %s", name, tostring(dt))
    end
  end
end
do
  local base = per_rank(rank, torch.float32):t() -- a transposed view: not contiguous
  dist.all_reduce(base, { op = dist.ReduceOp.SUM })
  H.close(base, fold(torch.float32, ops.SUM):t(), 0, "all_reduce of a non-contiguous view")
  local t = per_rank(rank, torch.float64)
  dist.all_reduce(t, dist.ReduceOp.AVG)
  H.close(t, fold(torch.float64, ops.SUM) / world, 1e-12, "all_reduce AVG")
  local b = torch.tensor({ rank == 0, rank == 1, false, true })
  dist.all_reduce(b) -- bool SUM is or
  H.check(b:tolist()[1] == true and b:tolist()[2] == true and b:tolist()[3] == false and b:tolist()[4] == true, "all_reduce of bool")
  local p = nn.Parameter(torch.ones(3) * (rank + 1)) -- a leaf that requires grad takes the result
  dist.all_reduce(p)
  H.close(p:detach(), torch.ones(3) * (world * (world + 1) / 2), 0, "all_reduce of a parameter")
  local e = torch.empty(0)
  dist.all_reduce(e)
  H.check(e:numel() == 0, "all_reduce of an empty tensor")
  local s = torch.tensor(rank + 1.0) -- 0-dim
  dist.all_reduce(s, dist.ReduceOp.PRODUCT)
  local prod = 1
  for r = 1, world do prod = prod * r end
  H.check(s:item() == prod, "all_reduce of a 0-dim tensor: %s", tostring(s))
end
H.raises(function() dist.all_reduce(torch.ones(2, { dtype = torch.int64 }), dist.ReduceOp.AVG) end, "AVG", "AVG of integers")
H.raises(function() dist.all_reduce(torch.ones(2), "XOR") end, "unknown reduce op", "an unknown op")

-- async work
do
  local t = per_rank(rank, torch.float32)
  local w = dist.all_reduce(t, { async_op = true })
  H.check(w ~= nil and w:wait() == true, "async all_reduce returns work")
  H.check(w:is_completed(), "work is completed after wait")
  H.close(t, fold(torch.float32, ops.SUM), 0, "async all_reduce result")
end

-- broadcast from every source, into a strided view too
for src = 0, world - 1 do
  local t = per_rank(rank, torch.float32)
  dist.broadcast(t, src)
  H.close(t, per_rank(src, torch.float32), 0, "broadcast from %d", src)
  local v = per_rank(rank, torch.int64):t()
  dist.broadcast(v, { src = src })
  H.close(v, per_rank(src, torch.int64):t(), 0, "broadcast of a transposed view from %d", src)
end
H.raises(function() dist.broadcast(torch.ones(2), world) end, "invalid source rank", "broadcast from a rank out of range")

-- reduce: only dst gets the result
for dst = 0, world - 1 do
  local t = per_rank(rank, torch.float32)
  dist.reduce(t, dst, dist.ReduceOp.MAX)
  if rank == dst then
    H.close(t, fold(torch.float32, ops.MAX), 0, "reduce MAX at dst %d", dst)
  else
    H.close(t, per_rank(rank, torch.float32), 0, "reduce leaves rank %d's input alone (dst %d)", rank, dst)
  end
end
do
  local t = per_rank(rank, torch.float64)
  dist.reduce(t, { dst = 0, op = dist.ReduceOp.AVG })
  if rank == 0 then H.close(t, fold(torch.float64, ops.SUM) / world, 1e-12, "reduce AVG") end
end

-- all_gather
do
  local outs = {}
  for r = 1, world do outs[r] = torch.zeros(3, 4) end
  dist.all_gather(outs, per_rank(rank, torch.float32))
  for r = 1, world do H.close(outs[r], per_rank(r - 1, torch.float32), 0, "all_gather entry %d", r) end
  local touts = {}
  for r = 1, world do touts[r] = torch.zeros(4, 3, { dtype = torch.int64 }):t() end -- non-contiguous outputs
  dist.all_gather(touts, per_rank(rank, torch.int64))
  for r = 1, world do H.close(touts[r], per_rank(r - 1, torch.int64), 0, "all_gather into views, entry %d", r) end
  H.raises(function() dist.all_gather({ torch.zeros(3, 4) }, torch.zeros(3, 4)) end, "world_size", "all_gather with a short list")
  local bad = {}
  for r = 1, world do bad[r] = torch.zeros(2, 4) end
  H.raises(function() dist.all_gather(bad, torch.zeros(3, 4)) end, "shape", "all_gather with a wrong shape")
end

-- all_gather_into_tensor: concatenated and stacked outputs
do
  local cat = torch.zeros(3 * world, 4)
  dist.all_gather_into_tensor(cat, per_rank(rank, torch.float32))
  for r = 0, world - 1 do H.close(cat:narrow(0, 3 * r, 3), per_rank(r, torch.float32), 0, "all_gather_into_tensor block %d", r) end
  local stacked = torch.zeros(world, 3, 4)
  dist.all_gather_into_tensor(stacked, per_rank(rank, torch.float32))
  for r = 0, world - 1 do H.close(stacked[r], per_rank(r, torch.float32), 0, "all_gather_into_tensor stacked %d", r) end
  H.raises(function() dist.all_gather_into_tensor(torch.zeros(5), torch.zeros(3)) end, "world_size times", "all_gather_into_tensor size check")
end

-- reduce_scatter: rank r gets the reduction of every rank's block r
do
  local ins = {}
  for r = 1, world do ins[r] = per_rank(rank, torch.float32) * r end
  local out = torch.zeros(3, 4)
  dist.reduce_scatter(out, ins)
  H.close(out, fold(torch.float32, ops.SUM) * (rank + 1), 0, "reduce_scatter")
  local big = torch.cat({ per_rank(rank, torch.float64), per_rank(rank, torch.float64) * 2, per_rank(rank, torch.float64) * 3 }, 0)
    :narrow(0, 0, 3 * world)
  local before = big:clone()
  local o2 = torch.zeros(3, 4, { dtype = torch.float64 })
  dist.reduce_scatter_tensor(o2, big, dist.ReduceOp.MAX)
  H.close(o2, fold(torch.float64, ops.MAX) * (rank + 1), 0, "reduce_scatter_tensor MAX")
  H.close(big, before, 0, "reduce_scatter_tensor leaves its input alone")
end

-- send and recv around the ring, blocking and not
do
  local nxt, prv = (rank + 1) % world, (rank - 1 + world) % world
  local got = torch.zeros(3, 4)
  if rank % 2 == 0 then
    dist.send(per_rank(rank, torch.float32), nxt)
    H.check(dist.recv(got, prv) == prv, "recv returns the source")
  else
    dist.recv(got, prv)
    dist.send(per_rank(rank, torch.float32), nxt)
  end
  H.close(got, per_rank(prv, torch.float32), 0, "recv from %d", prv)
  local got2 = torch.zeros(4, 3):t()
  local ws = dist.isend(per_rank(rank, torch.float32) + 100, { dst = nxt, tag = 7 })
  local wr = dist.irecv(got2, { src = prv, tag = 7 })
  ws:wait(); wr:wait()
  H.close(got2, per_rank(prv, torch.float32) + 100, 0, "isend/irecv with a tag into a view")
  H.raises(function() dist.send(torch.ones(1), rank) end, "itself", "send to oneself")
end

-- objects
do
  local objs = {}
  dist.all_gather_object(objs, { rank = rank, name = "r" .. rank, list = { 1, 2, rank } })
  local ok = #objs == world
  for r = 1, world do ok = ok and objs[r].rank == r - 1 and objs[r].name == "r" .. (r - 1) and objs[r].list[3] == r - 1 end
  H.check(ok, "all_gather_object")
  local l = rank == 1 and { "x", 42, { a = true } } or { 0, 0, 0 }
  dist.broadcast_object_list(l, 1)
  H.check(l[1] == "x" and l[2] == 42 and l[3].a == true, "broadcast_object_list")
end

dist.barrier()
H.check(dist.barrier({ async_op = true }):wait(), "async barrier")
dist.destroy_process_group()
H.check(not dist.is_initialized(), "destroyed")
H.raises(function() dist.all_reduce(torch.ones(1)) end, "has not been initialized", "a collective after destroy")
H.report()
