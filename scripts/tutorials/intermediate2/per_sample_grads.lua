-- Port of pytorch/tutorials intermediate_source/per_sample_grads.py (torch.func: per-sample
-- gradients with vmap(grad(functional_call))).
-- Run: nnrepl scripts/tutorials/intermediate2/per_sample_grads.lua
-- Differences: runs on CUDA when there is one, else on the CPU (the tutorial needs CUDA).
-- PSG_TIMEIT=n sets the Timer's runs (default 100, as the tutorial; the CI test uses 1);
-- PSG_BATCH=n the batch size (default 64). The float64 report on a mismatch keeps its lines.
local torch = require "torch"
local nn = torch.nn
local F = nn.functional
torch.manual_seed(0)

local SimpleCNN = nn.Module:extend("SimpleCNN")
function SimpleCNN:__init()
  self.conv1 = nn.Conv2d(1, 32, 3, 1)
  self.conv2 = nn.Conv2d(32, 64, 3, 1)
  self.fc1 = nn.Linear(9216, 128)
  self.fc2 = nn.Linear(128, 10)
end
function SimpleCNN:forward(x)
  x = self.conv1(x)
  x = F.relu(x)
  x = self.conv2(x)
  x = F.relu(x)
  x = F.max_pool2d(x, 2)
  x = torch.flatten(x, 1)
  x = self.fc1(x)
  x = F.relu(x)
  x = self.fc2(x)
  local output = F.log_softmax(x, { dim = 1 })
  return output
end

local function loss_fn(predictions, targets) return F.nll_loss(predictions, targets) end

local device = torch.cuda.is_available() and "cuda" or "cpu"

local num_models = 10
local batch_size = tonumber(os.getenv("PSG_BATCH")) or 64
local data = torch.randn(batch_size, 1, 28, 28, { device = device })
local targets = torch.randint(10, { batch_size }, { device = device })

local model = SimpleCNN():to(device)
local predictions = model(data)
local loss = loss_fn(predictions, targets)
loss:backward()

local function compute_grad(sample, target)
  sample = sample:unsqueeze(0)
  target = target:unsqueeze(0)
  local prediction = model(sample)
  local loss = loss_fn(prediction, target)
  return torch.autograd.grad(loss, model:parameters())
end

local function compute_sample_grads(data, targets)
  local sample_grads = {}
  for i = 0, batch_size - 1 do sample_grads[#sample_grads + 1] = compute_grad(data[i], targets[i]) end
  local stacked = {}
  for j = 1, #sample_grads[1] do
    local shards = {}
    for i, g in ipairs(sample_grads) do shards[i] = g[j] end
    stacked[j] = torch.stack(shards)
  end
  return stacked
end

local per_sample_grads = compute_sample_grads(data, targets)
print(per_sample_grads[1].shape)

local functional_call, vmap, grad = torch.func.functional_call, torch.func.vmap, torch.func.grad

local params, buffers = {}, {}
for k, v in model:named_parameters() do params[k] = v:detach() end
for k, v in model:named_buffers() do buffers[k] = v:detach() end

local function compute_loss(params, buffers, sample, target)
  local batch = sample:unsqueeze(0)
  local targets = target:unsqueeze(0)
  local predictions = functional_call(model, { params, buffers }, { batch })
  local loss = loss_fn(predictions, targets)
  return loss
end

local ft_compute_grad = grad(compute_loss)
local ft_compute_sample_grad = vmap(ft_compute_grad, { in_dims = { false, false, 0, 0 } }) -- false for None
local ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

-- the tutorial zips with the dict's values in the model's parameter order
local names = {}
for name in model:named_parameters() do names[#names + 1] = name end
for i, name in ipairs(names) do
  local per_sample_grad, ft_per_sample_grad = per_sample_grads[i], ft_per_sample_grads[name]
  if not torch.allclose(per_sample_grad, ft_per_sample_grad, { atol = 3e-3, rtol = 1e-5 }) then
    local abs_diff = (per_sample_grad - ft_per_sample_grad):abs()
    print(string.format("Gradient %d mismatch:", i - 1))
    print(string.format("  Max absolute difference: %s", abs_diff:max():item()))
    print(string.format("  Mean absolute difference: %s", abs_diff:mean():item()))
    print(string.format("  Shape of tensors: %s", tostring(per_sample_grad.shape)))
  end
  assert(torch.allclose(per_sample_grad, ft_per_sample_grad, { atol = 3e-3, rtol = 1e-5 }))
end
print("per-sample gradients match: true")

local function get_perf(first, first_descriptor, second, second_descriptor)
  local second_res = second.times[1]
  local first_res = first.times[1]
  local gain = (first_res - second_res) / first_res
  if gain < 0 then gain = gain * -1 end
  local final_gain = gain * 100
  print(string.format("Performance delta: %.4f percent improvement with %s ", final_gain, first_descriptor))
end

local Timer = torch.utils.benchmark.Timer
local runs = tonumber(os.getenv("PSG_TIMEIT")) or 100
local globals = { compute_sample_grads = compute_sample_grads, ft_compute_sample_grad = ft_compute_sample_grad,
  data = data, targets = targets, params = params, buffers = buffers }
local without_vmap = Timer("compute_sample_grads(data, targets)", { globals = globals })
local with_vmap = Timer("ft_compute_sample_grad(params, buffers, data, targets)", { globals = globals })
local no_vmap_timing = without_vmap:timeit(runs)
local with_vmap_timing = with_vmap:timeit(runs)

print(string.format("Per-sample-grads without vmap %s", tostring(no_vmap_timing)))
print(string.format("Per-sample-grads with vmap %s", tostring(with_vmap_timing)))

get_perf(with_vmap_timing, "vmap", no_vmap_timing, "no vmap")
