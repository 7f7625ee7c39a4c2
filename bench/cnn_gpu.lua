-- Document 000's CNN (conv 3->32 3x3, maxpool, conv 32->64 3x3, maxpool, fc 2304->256->128->101)
-- training step on the GPU: batch 32 of 3x32x32, cross entropy, SGD lr 0.001 momentum 0.9
-- dampening 0.1 (the document's), data already on the device. Prints ms per step: the median
-- of repeats of 100 steps timed with CUDA events after a warm-up (no per-step sync).
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
local function step(i)
  local k = i % 8 + 1
  local out = model(xs[k])
  local loss = criterion(out, ys[k])
  opt:zero_grad()
  loss:backward()
  opt:step()
  return loss
end
for i = 1, 30 do step(i) end
torch.cuda.synchronize()
local times = {}
for r = 1, reps do
  local e0, e1 = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
  e0:record()
  for i = 1, steps do step(i) end
  e1:record()
  e1:synchronize()
  times[r] = e0:elapsed_time(e1) / steps
end
table.sort(times)
print(string.format("nnrepl cnn step: median %.4f ms (min %.4f)", times[(reps + 1) // 2], times[1]))
