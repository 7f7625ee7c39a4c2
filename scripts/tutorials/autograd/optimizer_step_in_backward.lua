-- Port of pytorch/tutorials intermediate_source/optimizer_step_in_backward_tutorial.py (How to
-- save memory by fusing the optimizer step into the backward pass): one Adam per parameter,
-- stepped from Tensor.register_post_accumulate_grad_hook as each gradient is complete.
--
-- Run: nnrepl scripts/tutorials/autograd/optimizer_step_in_backward.lua
--
-- Differences from the original:
--  * vit_l_16 is built without weights (random initialisation): nnrepl downloads nothing. Set
--    VIT_WEIGHTS=path/to/vit_l_16.safetensors to load torchvision's checkpoint (the lesson
--    does not depend on the weights).
--  * it runs on CUDA when there is a GPU and on the CPU otherwise (the original needs CUDA).
--    OPT_IN_BWD_TINY=1 swaps vit_l_16 for a one-layer VisionTransformer on 32x32 images (the
--    CI test: vit_l_16 on the CPU takes minutes).
--  * memory snapshots (torch.cuda.memory._record_memory_history / _snapshot, pickled for the
--    memory_viz page) are not supported: each 3-step phase prints its peak memory instead,
--    torch.cuda.max_memory_allocated on CUDA ("peak memory: not measured on the CPU" there).
--  * not in the original: each phase prints whether the parameters changed and how many
--    gradients are left after it (the fused version leaves none).
local torchvision = require "torchvision"
local models = torchvision.models

local tiny = os.getenv("OPT_IN_BWD_TINY") == "1"
local device = torch.cuda.is_available() and "cuda" or "cpu"

local model
if tiny then
  model = models.VisionTransformer({ image_size = 32, patch_size = 16, num_layers = 1, num_heads = 2,
    hidden_dim = 16, mlp_dim = 32 }):to(device)
else
  model = models.vit_l_16()
  if os.getenv("VIT_WEIGHTS") then model:load_state_dict(torch.load(os.getenv("VIT_WEIGHTS"))) end
  model = model:to(device)
end
local optimizer = torch.optim.Adam(model:parameters())

local IMAGE_SIZE = tiny and 32 or 224

local function train(model, optimizer)
  -- a fake image: batch_size, channels, height, width
  local fake_image = torch.rand(1, 3, IMAGE_SIZE, IMAGE_SIZE):to(device)

  local loss = model:forward(fake_image)
  loss:sum():backward()

  optimizer:step()
  optimizer:zero_grad()
end

-- not in the original: what a phase did (see the header)
local function report(name, before)
  local changed, grads = 0, 0
  for i, p in ipairs(model:parameters()) do
    if not torch.equal(p, before[i]) then changed = changed + 1 end
    if p.grad ~= nil then grads = grads + 1 end
  end
  print(string.format("%s: %d of %d parameters changed, %d gradients left", name, changed, #before, grads))
  if device == "cuda" then
    print(string.format("%s: peak memory %.2fGB", name, torch.cuda.max_memory_allocated() / 1024 ^ 3))
  else
    print(string.format("%s: peak memory: not measured on the CPU", name))
  end
end
local function snapshot()
  local t = {}
  for i, p in ipairs(model:parameters()) do t[i] = p:detach():clone() end
  if device == "cuda" then torch.cuda.reset_peak_memory_stats() end
  return t
end

-- torch.cuda.memory._record_memory_history(enabled='all'): not supported (see the header)
local before = snapshot()

for _ = 1, 3 do
  train(model, optimizer)
end

-- s = torch.cuda.memory._snapshot(); dump(s, "snapshot.pickle"): not supported
report("optimizer after backward", before)

-- one optimizer per parameter, keyed by the parameter
local optimizer_dict = {}
for _, p in ipairs(model:parameters()) do
  optimizer_dict[p] = torch.optim.Adam({ p }, { foreach = false })
end

local function optimizer_hook(parameter)
  optimizer_dict[parameter]:step()
  optimizer_dict[parameter]:zero_grad()
end

for _, p in ipairs(model:parameters()) do
  p:register_post_accumulate_grad_hook(optimizer_hook)
end

train = function(model)
  local fake_image = torch.rand(1, 3, IMAGE_SIZE, IMAGE_SIZE):to(device)

  local loss = model:forward(fake_image)
  loss:sum():backward()

  -- optimizer:step() and optimizer:zero_grad() ran in backward
end

optimizer = nil
collectgarbage()

before = snapshot()

for _ = 1, 3 do
  train(model)
end

report("optimizer in backward", before)
