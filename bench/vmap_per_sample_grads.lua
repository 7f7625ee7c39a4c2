-- vmap(grad(compute_loss)) of the per-sample-gradients tutorial (SimpleCNN, batch 64 of 1 x 28 x 28):
-- the batching vmap against the per-sample loop it falls back to (torch.func._vmap_batching = false).
-- Run: nnrepl bench/vmap_per_sample_grads.lua [runs=5] [batch=64]; CUDA when there is one.
-- Prints the median time of each, whether the batched run stayed batched, and the largest
-- difference between the two results.
local torch = require "torch"
local nn, F = torch.nn, torch.nn.functional
local func = torch.func
local runs, batch = tonumber(arg[1]) or 5, tonumber(arg[2]) or 64
local device = torch.cuda.is_available() and "cuda" or "cpu"
torch.manual_seed(0)

local SimpleCNN = nn.Module:extend("SimpleCNN")
function SimpleCNN:__init()
  self.conv1 = nn.Conv2d(1, 32, 3, 1)
  self.conv2 = nn.Conv2d(32, 64, 3, 1)
  self.fc1 = nn.Linear(9216, 128)
  self.fc2 = nn.Linear(128, 10)
end
function SimpleCNN:forward(x)
  x = F.relu(self.conv2(F.relu(self.conv1(x))))
  x = torch.flatten(F.max_pool2d(x, 2), 1)
  return F.log_softmax(self.fc2(F.relu(self.fc1(x))), { dim = 1 })
end

local model = SimpleCNN():to(device)
local data = torch.randn(batch, 1, 28, 28, { device = device })
local targets = torch.randint(10, { batch }, { device = device })
local params, buffers = {}, {}
for k, v in model:named_parameters() do params[k] = v:detach() end
local function compute_loss(p, b, sample, target)
  local out = func.functional_call(model, { p, b }, { sample:unsqueeze(0) })
  return F.nll_loss(out, target:unsqueeze(0))
end
local psg = func.vmap(func.grad(compute_loss), { in_dims = { false, false, 0, 0 } })

local function sync() if device == "cuda" then torch.cuda.synchronize() end end
local function median_ms(fn)
  fn() -- warm-up
  local t = {}
  for i = 1, runs do
    sync()
    local t0 = time.perf_counter()
    fn()
    sync()
    t[i] = (time.perf_counter() - t0) * 1000
  end
  table.sort(t)
  return t[(runs + 1) // 2]
end

local batched, looped
func._vmap_batching = true
local tb = median_ms(function() batched = psg(params, buffers, data, targets) end)
local mode = func._vmap_last
func._vmap_batching = false
local tl = median_ms(function() looped = psg(params, buffers, data, targets) end)
func._vmap_batching = true
local diff = 0
for k, g in pairs(batched) do diff = math.max(diff, (g - looped[k]):abs():max():item()) end
print(string.format("%s batch %d: loop %.2f ms, batched %.2f ms (%s), x%.1f; max |difference| %.3g",
  device, batch, tl, tb, mode, tl / tb, diff))
