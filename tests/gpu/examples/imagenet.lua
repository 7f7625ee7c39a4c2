-- Parity of scripts/examples/imagenet with PyTorch, nnrepl's side of tests/gpu/examples/imagenet.py
-- (its header says what the files hold).
--
--   nnrepl tests/gpu/examples/imagenet.lua DIR [cuda|cpu] [--generate]
--
-- K steps of the port's train() loop on torchvision's resnet18 (the example's default -a) at
-- 32x32, batch 16, SGD lr 0.01 momentum 0.9 weight decay 1e-4 (K = 4: see the .py on why so
-- few), with the port's own accuracy
-- (scripts/examples/imagenet/meters.lua), from DIR/imagenet_init.safetensors on the batches of
-- DIR/imagenet_data.safetensors; writes DIR/imagenet_nnrepl_losses.txt and
-- DIR/imagenet_nnrepl_final.safetensors. In float64, as the .py says why.
-- --generate: when the data file is missing, make the init (nnrepl's resnet18, seed 0) and data
-- files here, for a run without PyTorch.
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
package.path = here .. "/../../../scripts/examples/imagenet/?.lua;" .. package.path
local accuracy = require("meters").accuracy
local models = require("torchvision").models
local P = dofile(here .. "/example_parity.lua")

local K, BATCH, IMAGE = 4, 16, 32
local LR, MOMENTUM, WEIGHT_DECAY = 0.01, 0.9, 1e-4

local run = P.start("imagenet", ...)
if run.generate then
  torch.manual_seed(0)
  torch.save(models.resnet18():state_dict(), run.path("init.safetensors"), { format = "safetensors" })
  torch.manual_seed(1)
  local data = {}
  for i = 0, K - 1 do
    data["images." .. i] = torch.randn(BATCH, 3, IMAGE, IMAGE)
    data["target." .. i] = torch.randint(0, 1000, { BATCH })
  end
  torch.save(data, run.path("data.safetensors"), { format = "safetensors" })
end

local device = run.device
local model = models.resnet18()
model:load_state_dict(torch.load(run.path("init.safetensors")))
model:to(device):double()
local criterion = nn.CrossEntropyLoss():to(device)
local optimizer = optim.SGD(model:parameters(), LR, { momentum = MOMENTUM, weight_decay = WEIGHT_DECAY })
local data = torch.load(run.path("data.safetensors"))
for k, v in pairs(data) do if v:is_floating_point() then data[k] = v:double() end end

local losses = {}
model:train()
for i = 0, K - 1 do -- the port's train() loop, one batch a step
  local images = data["images." .. i]:to(device, { non_blocking = true })
  local target = data["target." .. i]:to(device, { non_blocking = true })
  local output = model(images)
  local loss = criterion(output, target)
  local acc1, acc5 = accuracy(output, target, { 1, 5 })
  assert(acc1[0]:item() <= acc5[0]:item(), "Acc@1 above Acc@5")
  losses[#losses + 1] = loss:item()
  optimizer:zero_grad()
  loss:backward()
  optimizer:step()
end
P.finish(run, losses, model)
