-- Document 001's MLP (784-32-10) training step on the GPU: batch 128, cross_entropy,
-- backward, SGD step, data already on the device. Prints ms per step: the median of
-- repeats of 200 steps timed with CUDA events after a warm-up (no per-step sync).
-- Then the same step captured once in a CUDA graph and replayed (the batch copied into
-- static inputs first). bench/mlp_gpu.py is PyTorch's side.
local steps, reps = 200, 7
torch.manual_seed(0)
local dev = "cuda"
local model = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10)):to(dev)
local opt = optim.SGD(model:parameters(), {lr = 0.1})
local xs, ys = {}, {}
for i = 1, 8 do
  xs[i] = torch.rand(128, 1, 28, 28, {device = dev})
  ys[i] = torch.randint(0, 10, {128}, {device = dev})
end
local function step(i)
  local k = i % 8 + 1
  local loss = F.cross_entropy(model(xs[k]), ys[k])
  opt:zero_grad()
  loss:backward()
  opt:step()
  return loss
end
for i = 1, 50 do step(i) end
torch.cuda.synchronize()
local function timed(fn)
  local times = {}
  for r = 1, reps do
    local e0, e1 = torch.cuda.Event({enable_timing = true}), torch.cuda.Event({enable_timing = true})
    e0:record()
    for i = 1, steps do fn(i) end
    e1:record()
    e1:synchronize()
    times[r] = e0:elapsed_time(e1) / steps
  end
  table.sort(times)
  return times[(reps + 1) // 2], times[1]
end
print(string.format("nnrepl mlp step: median %.4f ms (min %.4f)", timed(step)))

local sx, sy = xs[1]:clone(), ys[1]:clone()
local g = torch.cuda.CUDAGraph()
local static_loss = g:capture(function()
  local loss = F.cross_entropy(model(sx), sy)
  opt:zero_grad()
  loss:backward()
  opt:step()
  return loss
end)
local function graph_step(i)
  local k = i % 8 + 1
  sx:copy_(xs[k]); sy:copy_(ys[k])
  g:replay()
end
for i = 1, 50 do graph_step(i) end
local med, min = timed(graph_step)
print(string.format("nnrepl mlp graph step: median %.4f ms (min %.4f), last loss %.4f", med, min, static_loss:item()))
