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
local timing = require "gpu_step_timing"
timing.report("nnrepl mlp", function(x, y)
  local loss = F.cross_entropy(model(x), y)
  opt:zero_grad()
  loss:backward()
  opt:step()
  return loss
end, xs, ys, steps, reps, 50)
