-- Document 000's CNN (conv 3->32 3x3, maxpool, conv 32->64 3x3, maxpool, fc 2304->256->128->101)
-- training step on the GPU: batch 32 of 3x32x32, cross entropy, SGD lr 0.001 momentum 0.9
-- dampening 0.1 (the document's), data already on the device. Prints ms per step: the median
-- of repeats of 100 steps timed with CUDA events after a warm-up (no per-step sync).
-- TF32 as PyTorch's defaults (cuDNN convolutions may use it, matmuls not).
-- bench/cnn_gpu.py is PyTorch's side.
local steps, reps = 100, 7
torch.manual_seed(0)
local dev = "cuda"

local Net = nn.Module:extend("Net")
function Net:__init()
  self.conv1 = nn.Conv2d({ in_channels = 3, out_channels = 32, kernel_size = { 3, 3 } })
  self.pool1 = nn.MaxPool2d({ kernel_size = 2, stride = 2 })
  self.conv2 = nn.Conv2d({ in_channels = 32, out_channels = 64, kernel_size = 3 })
  self.pool2 = nn.MaxPool2d(2, 2)
  self.fc1 = nn.Linear(64 * 6 * 6, 256)
  self.fc2 = nn.Linear(256, 128)
  self.fc3 = nn.Linear(128, 101)
end
function Net:forward(x)
  x = self.pool1(F.relu(self.conv1(x)))
  x = self.pool2(F.relu(self.conv2(x)))
  x = x:view(-1, 64 * 6 * 6)
  x = F.relu(self.fc1(x))
  x = F.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

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
