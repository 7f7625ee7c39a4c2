-- Document 000's CNN (conv 3->32 3x3, maxpool, conv 32->64 3x3, maxpool, fc 2304->256->128->101)
-- training step on the GPU: batch 32 of 3x32x32, cross entropy, SGD lr 0.001 momentum 0.9
-- dampening 0.1 (the document's), data already on the device. Prints ms per step: the median
-- of repeats of 100 steps timed with CUDA events after a warm-up (no per-step sync); then
-- the same step captured once in a CUDA graph and replayed.
-- TF32 as PyTorch's defaults (cuDNN convolutions may use it, matmuls not).
-- bench/cnn_gpu.py is PyTorch's side. The model is scripts/doc000_net.lua (default init).
local steps, reps = 100, 7
torch.manual_seed(0)
local dev = "cuda"

package.path = (debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or ".") .. "/../scripts/?.lua;" .. package.path
local Net = require "doc000_net" -- scripts/doc000_net.lua, the document's Net

local model = Net():to(dev)
local criterion = nn.CrossEntropyLoss()
local opt = optim.SGD(model:parameters(), { lr = 0.001, momentum = 0.9, dampening = 0.1 })
local xs, ys = {}, {}
for i = 1, 8 do
  xs[i] = torch.randn(32, 3, 32, 32, { device = dev })
  ys[i] = torch.randint(0, 101, { 32 }, { device = dev })
end

local timing = require "gpu_step_timing"
timing.report("nnrepl cnn", function(x, y)
  local out = model(x)
  local loss = criterion(out, y)
  opt:zero_grad()
  loss:backward()
  opt:step()
  return loss
end, xs, ys, steps, reps, 30)
