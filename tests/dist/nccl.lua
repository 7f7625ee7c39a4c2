-- NCCL on the GPU machine (2 or more GPUs): collectives on CUDA tensors, DDP against
-- one process, and the all_reduce bus bandwidth (bench/allreduce.* compares it with PyTorch). Run through the launcher:
--   nnrepl --nproc-per-node 2 tests/dist/nccl.lua [MB for the bandwidth run]
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local lr = tonumber(os.getenv("LOCAL_RANK"))
torch.cuda.set_device(lr)
local dev = "cuda:" .. lr
dist.init_process_group("nccl", { timeout = 60 })
local rank, world = dist.get_rank(), dist.get_world_size()
H.check(dist.get_backend() == "nccl", "backend")

-- small values for PRODUCT, so that float16 holds the product over 4 or 8 ranks
local function per_rank(r, dtype, small)
  local base = torch.arange(12):view(3, 4)
  if small then return ((base + r) % 3 + 1):to(dtype) end
  return ((base + 1):mul(r + 1):add(r)):to(dtype)
end
local function fold(dtype, f, small)
  local acc = per_rank(0, torch.float64, small)
  for r = 1, world - 1 do acc = f(acc, per_rank(r, torch.float64, small)) end
  return acc:to(dtype)
end
local function close(a, b, tol, what) return H.close(a:cpu(), b:cpu(), tol, "%s", what) end
local ops = { SUM = function(a, b) return a + b end, PRODUCT = function(a, b) return a * b end,
  MAX = function(a, b) return torch.maximum(a, b) end, MIN = function(a, b) return torch.minimum(a, b) end }
for _, dt in ipairs({ torch.float32, torch.float64, torch.int64, torch.int8, torch.float16, torch.bfloat16 }) do
  for _, name in ipairs({ "SUM", "PRODUCT", "MAX", "MIN" }) do
    local small = name == "PRODUCT"
    local t = per_rank(rank, dt, small):to(dev)
    dist.all_reduce(t, dist.ReduceOp[name])
    local tol = (dt == torch.float16 or dt == torch.bfloat16) and 0.01 * fold(torch.float64, ops[name], small):abs():max():item() or 0
    close(t, fold(dt, ops[name], small), tol, "all_reduce " .. name .. " " .. tostring(dt))
  end
end
H.raises(function() dist.all_reduce(per_rank(rank, torch.int16):to(dev)) end,
  "Input tensor data type is not supported for NCCL process group: Short", "all_reduce of int16 (NCCL has no 16-bit integer)")
do
  local t = per_rank(rank, torch.float32):to(dev):t()
  dist.all_reduce(t, dist.ReduceOp.AVG)
  close(t, (fold(torch.float64, ops.SUM) / world):t(), 1e-5, "all_reduce AVG of a transposed view")
  for src = 0, world - 1 do
    local b = per_rank(rank, torch.float32):to(dev)
    dist.broadcast(b, src)
    close(b, per_rank(src, torch.float32), 0, "broadcast from " .. src)
  end
  local r = per_rank(rank, torch.float32):to(dev)
  dist.reduce(r, 0, dist.ReduceOp.SUM)
  if rank == 0 then close(r, fold(torch.float32, ops.SUM), 0, "reduce") end
  local outs = {}
  for i = 1, world do outs[i] = torch.zeros(3, 4, { device = dev }) end
  dist.all_gather(outs, per_rank(rank, torch.float32):to(dev))
  for i = 1, world do close(outs[i], per_rank(i - 1, torch.float32), 0, "all_gather " .. i) end
  local cat = torch.zeros(world * 3, 4, { device = dev })
  dist.all_gather_into_tensor(cat, per_rank(rank, torch.float32):to(dev))
  close(cat:narrow(0, 3 * (world - 1), 3), per_rank(world - 1, torch.float32), 0, "all_gather_into_tensor")
  local parts = {}
  for i = 1, world do parts[i] = per_rank(rank, torch.float32) * i end
  local o = torch.zeros(3, 4, { device = dev })
  dist.reduce_scatter_tensor(o, torch.cat(parts, 0):to(dev))
  close(o, fold(torch.float32, ops.SUM) * (rank + 1), 0, "reduce_scatter_tensor")
  local got = torch.zeros(3, 4, { device = dev })
  local nxt, prv = (rank + 1) % world, (rank - 1 + world) % world
  if rank % 2 == 0 then dist.send(per_rank(rank, torch.float32):to(dev), nxt); dist.recv(got, prv)
  else dist.recv(got, prv); dist.send(per_rank(rank, torch.float32):to(dev), nxt) end
  close(got, per_rank(prv, torch.float32), 0, "send/recv")
  local w = dist.all_reduce(per_rank(rank, torch.float32):to(dev), { async_op = true })
  H.check(w:wait(), "async work")
  dist.barrier()
  local objs = {}
  dist.all_gather_object(objs, { rank = rank })
  H.check(#objs == world and objs[world].rank == world - 1, "all_gather_object")
  H.raises(function() dist.all_reduce(torch.ones(2)) end, "Tensors must be CUDA", "a CPU tensor on nccl")
end

-- Large float32 SUM/AVG: sizes that split unevenly, a view at an odd offset, repeats, a
-- small all-reduce after each. Every rank makes every rank's data, so the expected sum is
-- worked out here: exactly for two ranks (one rounding per element, either way round), to
-- the order of the sum beyond.
do
  local tol = world == 2 and 0 or 1e-5
  local function data(r, n, k) torch.manual_seed(9000 + 10 * k + r); return torch.randn(n, { device = dev }) end
  local function expect(n, k, avg)
    local acc = data(0, n, k)
    for r = 1, world - 1 do acc = acc + data(r, n, k) end
    return avg and acc / world or acc
  end
  local cases = { { 1048579, "SUM" }, { 4194305, "AVG" }, { 30500001, "SUM" }, { 30500001, "AVG" }, { 8388608, "AVG" } }
  for k, c in ipairs(cases) do
    local n, op = c[1], c[2]
    for rep = 1, (n > 2e7 and 3 or 1) do
      local t = data(rank, n, k)
      dist.all_reduce(t, dist.ReduceOp[op])
      local small = torch.full({ 5 }, rank + 1.0, { device = dev })
      dist.all_reduce(small)
      close(small, torch.full({ 5 }, world * (world + 1) / 2), 0, "a small all_reduce after a large one")
      local d = (t - expect(n, k, op == "AVG")):abs():max():item()
      H.check(d <= tol, "all_reduce %s of %d float32 (repeat %d): off by %g", op, n, rep, d)
    end
  end
  -- 16-bit and float64 sums and averages (two ranks: the exact sum, rounded once)
  for k, dt in ipairs({ torch.float16, torch.bfloat16, torch.float64 }) do
    for _, op in ipairs({ "SUM", "AVG" }) do
      local n = 3000001
      local t = data(rank, n, 20 + k):to(dt)
      dist.all_reduce(t, dist.ReduceOp[op])
      local want = torch.zeros(n, { device = dev, dtype = torch.float64 })
      for r = 0, world - 1 do want = want + data(r, n, 20 + k):to(dt):double() end
      if op == "AVG" then want = want / world end
      local d = (t:double() - want:to(dt):double()):abs():max():item()
      H.check(world > 2 or d == 0, "all_reduce %s of %d %s: off by %g", op, n, tostring(dt), d)
    end
  end
  local big = torch.zeros(4194310, { device = dev })
  local v = big:narrow(0, 3, 4194305)
  v:copy_(data(rank, 4194305, 7))
  dist.all_reduce(v)
  local d = (v - expect(4194305, 7, false)):abs():max():item()
  H.check(d <= tol and big:narrow(0, 0, 3):abs():sum():item() == 0, "all_reduce of a view at an odd offset: off by %g", d)
end

-- Subgroups (own communicators), gather/scatter/all_to_all, object collectives and
-- batch_isend_irecv on CUDA tensors
do
  for k = 1, world do
    local g = dist.new_group((function() local l = {} for r = 0, k - 1 do l[#l + 1] = r end return l end)())
    if rank < k then
      local t = torch.full({ 4 }, rank + 1.0, { device = dev })
      dist.all_reduce(t, { group = g })
      close(t, torch.full({ 4 }, k * (k + 1) / 2), 0, "all_reduce in a subgroup of " .. k)
      local b = torch.full({ 2 }, rank * 1.0, { device = dev })
      dist.broadcast(b, k - 1, { group = g })
      close(b, torch.full({ 2 }, k - 1.0), 0, "broadcast in a subgroup of " .. k)
    else
      H.check(g == dist.GroupMember.NON_GROUP_MEMBER, "NON_GROUP_MEMBER on nccl")
    end
  end
  local _, subs = dist.new_subgroups(1)
  H.check(#subs == world, "new_subgroups(1) on nccl")
  local gg = dist.is_gloo_available() and dist.new_group(nil, { backend = "gloo" }) -- a gloo group beside the nccl one
  if gg then
    local c = torch.tensor({ rank + 1.0 })
    dist.all_reduce(c, { group = gg })
    H.check(c:item() == world * (world + 1) / 2, "a gloo subgroup under an nccl default group")
  end
  local list = nil
  if rank == 0 then list = {} for r = 1, world do list[r] = torch.zeros(3, { device = dev }) end end
  dist.gather(torch.full({ 3 }, rank * 2.0, { device = dev }), list, 0)
  if rank == 0 then for r = 1, world do close(list[r], torch.full({ 3 }, (r - 1) * 2.0), 0, "gather " .. r) end end
  local out = torch.zeros(2, { device = dev })
  local sl = nil
  if rank == 0 then sl = {} for r = 1, world do sl[r] = torch.full({ 2 }, r * 3.0, { device = dev }) end end
  dist.scatter(out, sl, 0)
  close(out, torch.full({ 2 }, (rank + 1) * 3.0), 0, "scatter")
  local input = (torch.arange(world * 2):view(world, 2) + 100 * rank):to(dev)
  local output = torch.zeros(world, 2, { dtype = torch.int64, device = dev })
  dist.all_to_all_single(output, input)
  local expect = torch.zeros(world, 2, { dtype = torch.int64 })
  for s = 0, world - 1 do expect[s]:copy_(torch.arange(2) + 2 * rank + 100 * s) end
  close(output, expect, 0, "all_to_all_single")
  local ins, outs = {}, {}
  for d = 0, world - 1 do ins[d + 1] = torch.full({ rank + d + 1 }, rank * 10.0 + d, { device = dev }) end
  for s = 0, world - 1 do outs[s + 1] = torch.zeros(s + rank + 1, { device = dev }) end
  dist.all_to_all(outs, ins)
  for s = 0, world - 1 do close(outs[s + 1], torch.full({ s + rank + 1 }, s * 10.0 + rank), 0, "all_to_all from " .. s) end
  local recv = torch.zeros(3, { device = dev })
  local nxt, prv = (rank + 1) % world, (rank - 1 + world) % world
  local works = dist.batch_isend_irecv({ dist.P2POp(dist.isend, torch.full({ 3 }, rank + 0.5, { device = dev }), nxt),
    dist.P2POp(dist.irecv, recv, prv) })
  for _, w in ipairs(works) do w:wait() end
  close(recv, torch.full({ 3 }, prv + 0.5), 0, "batch_isend_irecv around a ring")
  local objs = rank == 0 and { { a = { 1, 2 }, b = "x" } } or { false }
  dist.broadcast_object_list(objs, 0)
  H.check(objs[1].a[2] == 2 and objs[1].b == "x", "broadcast_object_list on nccl")
  local so = { false }
  dist.scatter_object_list(so, rank == 0 and (function() local l = {} for r = 1, world do l[r] = { id = r - 1 } end return l end)() or nil, 0)
  H.check(so[1].id == rank, "scatter_object_list on nccl")
  H.raises(function() dist.monitored_barrier() end, "only implemented for GLOO", "monitored_barrier on nccl")
  if gg then dist.monitored_barrier({ group = gg, timeout = 30 }) end
end

-- DDP on GPUs against one CPU process on the whole batch: a small MLP in tiny buckets, and
-- one whose middle layer (6 MB) is a bucket of its own. mixed: rank 1 keeps its gradients
-- (zeroed in place and held here), so they are not its bucket's own and it reduces them
-- through the bucket's buffer while rank 0 reduces its own where they are: the calls must
-- still pair up.
local function ddp_against_one(name, widths, seed, ddp_opts, opt_opts, steps, mixed)
  local B = 8
  torch.manual_seed(seed)
  local X, Y = torch.randn(steps, B * world, widths[1]), torch.randn(steps, B * world, widths[#widths])
  local function mlp(s)
    torch.manual_seed(s)
    local layers = {}
    for i = 1, #widths - 1 do
      layers[#layers + 1] = nn.Linear(widths[i], widths[i + 1])
      if i < #widths - 1 then layers[#layers + 1] = nn.ReLU() end
    end
    return nn.Sequential(table.unpack(layers))
  end
  local net = mlp(1000 * seed + rank):to(dev)
  local model = nn.parallel.DistributedDataParallel(net, ddp_opts)
  local opt = optim.SGD(model:parameters(), opt_opts)
  local ref = mlp(1000 * seed)
  local ropt = optim.SGD(ref:parameters(), opt_opts)
  local held = {}
  for s = 0, steps - 1 do
    opt:zero_grad({ set_to_none = not (mixed and rank == 1) })
    if mixed and rank == 1 then for i, p in ipairs(net:parameters()) do held[i] = p.grad end end
    F.mse_loss(model(X[s]:narrow(0, rank * B, B):to(dev)), Y[s]:narrow(0, rank * B, B):to(dev)):backward()
    opt:step()
    ropt:zero_grad()
    F.mse_loss(ref(X[s]), Y[s]):backward()
    ropt:step()
  end
  local worst = 0
  for i, p in ipairs(net:parameters()) do worst = math.max(worst, H.maxdiff(p:detach():cpu(), ref:parameters()[i]:detach())) end
  H.check(worst < 1e-4, "%s against one CPU process: off by %g", name, worst)
end
ddp_against_one("DDP on GPUs", { 6, 32, 3 }, 7, { bucket_cap_mb = 0.001 }, { lr = 0.05, momentum = 0.9 }, 20)
ddp_against_one("DDP with a 6 MB bucket", { 16, 1536, 1024, 3 }, 11, {}, { lr = 0.01 }, 10)
ddp_against_one("DDP with 3 MB buckets of several gradients", { 16, 512, 512, 512, 3 }, 13, { bucket_cap_mb = 3 }, { lr = 0.01 }, 10)
ddp_against_one("DDP with one rank's gradients held", { 16, 512, 512, 3 }, 17, { bucket_cap_mb = 3 }, { lr = 0.01 }, 6, true)

-- all_reduce bus bandwidth (as nccl-tests count it: 2 (n - 1) / n of the bytes per second)
do
  local mb = tonumber(arg[1] or "256")
  local n = math.floor(mb * 1024 * 1024 / 4)
  local t = torch.ones(n, { device = dev })
  for _ = 1, 3 do dist.all_reduce(t) end
  torch.cuda.synchronize()
  local time = require "time"
  local iters = 20
  local t0 = time.time()
  for _ = 1, iters do dist.all_reduce(t) end
  torch.cuda.synchronize()
  local dt = (time.time() - t0) / iters
  local busbw = n * 4 / dt * 2 * (world - 1) / world / 1e9
  if rank == 0 then print(string.format("all_reduce %d MB float32: %.3f ms, bus bandwidth %.1f GB/s", mb, dt * 1e3, busbw)) end
end
dist.destroy_process_group()
H.report()
