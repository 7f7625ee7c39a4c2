-- Parity of scripts/examples/siamese_network with pytorch/examples siamese_network, nnrepl's
-- side of tests/gpu/examples/siamese_network.py (its header describes the steps and files).
--
--   nnrepl tests/gpu/examples/siamese_network.lua DIR [cuda|cpu] [--generate]
--
-- Trains the port's own SiameseNetwork (scripts/examples/siamese_network/model.lua) from
-- DIR/siamese_network_init and _data.safetensors as the example's train() does, and writes
-- DIR/siamese_network_nnrepl_losses.txt and DIR/siamese_network_nnrepl_final.safetensors.
-- --generate makes the init and data files with nnrepl when they are missing (a run without
-- PyTorch). In float64, as the .py says why.
local NAME, STEPS, BATCH, PER_EPOCH = "siamese_network", 10, 8, 5
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/examples/siamese_network/?.lua;" .. package.path
local SiameseNetwork = require "model"

local P = dofile(here .. "/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path

if run.generate then
  torch.manual_seed(0)
  torch.save(SiameseNetwork():state_dict(), path("init.safetensors"))
  local g = torch.Generator():manual_seed(1)
  local data = {}
  for i = 0, STEPS - 1 do
    data["a." .. i] = (torch.rand(BATCH, 1, 28, 28, { generator = g }) * 256):floor()
    data["b." .. i] = (torch.rand(BATCH, 1, 28, 28, { generator = g }) * 256):floor()
    data["t." .. i] = torch.arange(BATCH):remainder(2):eq(0):float()
  end
  torch.save(data, path("data.safetensors"))
end

local model = SiameseNetwork()
model:load_state_dict(torch.load(path("init.safetensors")))
model = model:to(device):double()
local batches = torch.load(path("data.safetensors"))
for k, v in pairs(batches) do batches[k] = v:double() end
local optimizer = optim.Adadelta(model:parameters(), { lr = 0.05 }) -- see the .py: not the example's 1.0
local scheduler = optim.lr_scheduler.StepLR(optimizer, { step_size = 1, gamma = 0.7 })
model:train()
local criterion = nn.BCELoss()
local losses = {}
for i = 0, STEPS - 1 do
  local images_1, images_2, targets = batches["a." .. i]:to(device), batches["b." .. i]:to(device),
    batches["t." .. i]:to(device)
  optimizer:zero_grad()
  local outputs = model(images_1, images_2):squeeze()
  local loss = criterion(outputs, targets)
  loss:backward()
  optimizer:step()
  losses[#losses + 1] = loss:item()
  if (i + 1) % PER_EPOCH == 0 then scheduler:step() end
end
P.finish(run, losses, model)
