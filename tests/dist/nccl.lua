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
for _, dt in ipairs({ torch.float32, torch.float64, torch.int64, torch.float16, torch.bfloat16 }) do
  for _, name in ipairs({ "SUM", "PRODUCT", "MAX", "MIN" }) do
    local small = name == "PRODUCT"
    local t = per_rank(rank, dt, small):to(dev)
    dist.all_reduce(t, dist.ReduceOp[name])
    local tol = (dt == torch.float16 or dt == torch.bfloat16) and 0.01 * fold(torch.float64, ops[name], small):abs():max():item() or 0
    close(t, fold(dt, ops[name], small), tol, "all_reduce " .. name .. " " .. tostring(dt))
  end
end
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

-- DDP on GPUs against one process on the whole batch
do
  local B, STEPS = 8, 20
  torch.manual_seed(7)
  local X, Y = torch.randn(STEPS, B * world, 6), torch.randn(STEPS, B * world, 3)
  local function mlp(seed)
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 3))
  end
  local net = mlp(1000 + rank):to(dev)
  local model = nn.parallel.DistributedDataParallel(net, { bucket_cap_mb = 0.001 })
  local opt = optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
  for s = 0, STEPS - 1 do
    opt:zero_grad()
    F.mse_loss(model(X[s]:narrow(0, rank * B, B):to(dev)), Y[s]:narrow(0, rank * B, B):to(dev)):backward()
    opt:step()
  end
  local ref = mlp(1000)
  local ropt = optim.SGD(ref:parameters(), { lr = 0.05, momentum = 0.9 })
  for s = 0, STEPS - 1 do
    ropt:zero_grad()
    F.mse_loss(ref(X[s]), Y[s]):backward()
    ropt:step()
  end
  local worst = 0
  for i, p in ipairs(net:parameters()) do worst = math.max(worst, H.maxdiff(p:detach():cpu(), ref:parameters()[i]:detach())) end
  H.check(worst < 1e-4, "DDP on GPUs against one CPU process: off by %g", worst)
end

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
