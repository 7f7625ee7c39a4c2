-- Document 001's MLP (784 -> 32 -> ReLU -> 10) trained on CPU with SGD lr 0.1, data in memory:
--  1. one training step at batch 128 (forward, cross_entropy, zero_grad, backward, SGD step):
--     median over repeats after a warm-up, and the same step cut into its pieces;
--  2. an epoch of 60,000 samples (469 batches of 128, shuffled) three ways: slicing a
--     shuffled copy of the data tensors, a DataLoader over a TensorDataset, and a
--     DataLoader over torchvision's FashionMNIST with ToTensor (when the files are there).
-- Fashion-MNIST's training images when present (/usr/share/datasets/fashion-mnist), random
-- data otherwise. bench/mlp_cpu.py is PyTorch's side. Targets (issue 3, 2-core machine):
-- a step <= 0.5 ms, an epoch <= 3 s.
-- Usage: nnrepl bench/mlp_cpu.lua [steps per repeat] [repeats] [epochs] [fashion-mnist dir]
local steps = tonumber(arg and arg[1]) or 100
local reps = tonumber(arg and arg[2]) or 9
local epochs = tonumber(arg and arg[3]) or 3
local data_root = arg and arg[4] or nil
local B, N = 128, 60000

torch.manual_seed(0)

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  return s[(#s + 1) // 2], s[1], s[#s]
end

-- the data: [60000, 784] float32 in [0, 1] and int64 labels
local X, Y, source
local ok, torchvision = pcall(require, "torchvision")
local fm_ok, ds = false, nil
if ok then fm_ok, ds = pcall(torchvision.datasets.FashionMNIST, { root = data_root, train = true }) end
if fm_ok then
  X = ds.data:view(N, 784):float():div(255)
  Y = ds.targets
  source = "Fashion-MNIST"
else
  X = torch.rand(N, 784)
  Y = torch.randint(0, 10, { N })
  source = "random data"
end

local model = nn.Sequential(nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))
local opt = optim.SGD(model:parameters(), { lr = 0.1 })

local function step(x, y)
  local loss = F.cross_entropy(model(x), y)
  opt:zero_grad()
  loss:backward()
  opt:step()
  return loss
end

-- ---- 1. one step ----

local xb, yb = X:narrow(0, 0, B):contiguous(), Y:narrow(0, 0, B):contiguous()
for _ = 1, 50 do step(xb, yb) end
-- wall time, and the process's CPU time (the same on an idle machine with one BLAS thread;
-- on a busy machine CPU time is the steadier number, but it also counts BLAS threads spinning)
local times, cpu = {}, {}
for r = 1, reps do
  collectgarbage()
  local t0, c0 = time.perf_counter(), time.process_time()
  for _ = 1, steps do step(xb, yb) end
  times[r] = (time.perf_counter() - t0) / steps * 1e3
  cpu[r] = (time.process_time() - c0) / steps * 1e3
end
local med, lo, hi = median(times)
print(string.format("nnrepl step (batch %d, %s): median %.3f ms (min %.3f, max %.3f; %d x %d steps); CPU time %.3f ms",
  B, source, med, lo, hi, reps, steps, (median(cpu))))

-- the same step, piece by piece (perf_counter between the pieces; medians over steps)
local pieces = { "forward", "cross_entropy", "zero_grad", "backward", "step" }
local pt = {}
for _, p in ipairs(pieces) do pt[p] = {} end
for i = 1, steps * reps do
  local t0 = time.perf_counter()
  local out = model(xb)
  local t1 = time.perf_counter()
  local loss = F.cross_entropy(out, yb)
  local t2 = time.perf_counter()
  opt:zero_grad()
  local t3 = time.perf_counter()
  loss:backward()
  local t4 = time.perf_counter()
  opt:step()
  local t5 = time.perf_counter()
  pt.forward[i], pt.cross_entropy[i], pt.zero_grad[i] = (t1 - t0) * 1e6, (t2 - t1) * 1e6, (t3 - t2) * 1e6
  pt.backward[i], pt.step[i] = (t4 - t3) * 1e6, (t5 - t4) * 1e6
end
local parts, total = {}, 0
for _, p in ipairs(pieces) do
  local m = median(pt[p])
  total = total + m
  parts[#parts + 1] = string.format("%s %.1f", p, m)
end
print(string.format("nnrepl step pieces (median us): %s; sum %.1f us", table.concat(parts, ", "), total))

-- ---- 2. epochs ----

local function report(name, ts)
  local m, a, b = median(ts)
  print(string.format("nnrepl epoch, %s: median %.3f s (min %.3f, max %.3f; %d epochs of %d samples)", name, m, a, b,
    #ts, N))
  return m
end

-- slices of a shuffled copy (one gather per epoch, then views)
local ts = {}
for e = 0, epochs do
  local t0 = time.perf_counter()
  local perm = torch.randperm(N)
  local Xs, Ys = X:index_select(0, perm), Y:index_select(0, perm)
  for i = 0, N - 1, B do
    local n = math.min(B, N - i)
    step(Xs:narrow(0, i, n), Ys:narrow(0, i, n))
  end
  if e > 0 then ts[#ts + 1] = time.perf_counter() - t0 end -- epoch 0 is the warm-up
end
local epoch_sliced = report("shuffled tensors sliced", ts)

local function loader_epochs(name, loader)
  local t = {}
  for e = 0, epochs do
    local t0 = time.perf_counter()
    for x, y in loader:iter() do step(x:view(x:size(0), -1), y) end
    if e > 0 then t[#t + 1] = time.perf_counter() - t0 end
  end
  return report(name, t)
end

loader_epochs("DataLoader(TensorDataset, shuffle)", torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y),
  { batch_size = B, shuffle = true }))
if fm_ok then
  local fm = torchvision.datasets.FashionMNIST({ root = data_root, train = true,
    transform = torchvision.transforms.ToTensor() })
  loader_epochs("DataLoader(FashionMNIST+ToTensor, shuffle)", torch.utils.data.DataLoader(fm,
    { batch_size = B, shuffle = true }))
  loader_epochs("DataLoader(FashionMNIST+ToTensor, shuffle, 2 workers)", torch.utils.data.DataLoader(fm,
    { batch_size = B, shuffle = true, num_workers = 2 }))
end
return med, epoch_sliced
