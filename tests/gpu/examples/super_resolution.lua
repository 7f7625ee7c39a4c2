-- Parity of scripts/examples/super_resolution with PyTorch, nnrepl's side of
-- tests/gpu/examples/super_resolution.py (its header says what the files hold).
--
--   nnrepl tests/gpu/examples/super_resolution.lua DIR [cuda|cpu] [--generate]
--
-- 12 steps of main.lua's train() (Adam lr 1e-3, MSELoss) with the port's own Net
-- (scripts/examples/super_resolution/model.lua) at upscale_factor 3, from
-- DIR/super_resolution_init.safetensors, on the batches of _data.safetensors; writes
-- _nnrepl_losses.txt and _nnrepl_final.safetensors.
-- --generate: when the data file is missing, make the init (nnrepl's seed-0 Net) and data here.
local NAME, STEPS, BATCH, FACTOR, SIZE = "super_resolution", 12, 4, 3, 16
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/examples/super_resolution/?.lua;" .. package.path
local Net = require("model").Net

local P = dofile(here .. "/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path

if run.generate then
  torch.manual_seed(0)
  torch.save(Net(FACTOR):state_dict(), path("init.safetensors"))
  local g = torch.Generator():manual_seed(1)
  local data = {}
  for i = 0, STEPS - 1 do
    data["input." .. i] = torch.rand(BATCH, 1, SIZE, SIZE, { generator = g })
    data["target." .. i] = torch.rand(BATCH, 1, SIZE * FACTOR, SIZE * FACTOR, { generator = g })
  end
  torch.save(data, path("data.safetensors"))
end

local model = Net(FACTOR)
model:load_state_dict(torch.load(path("init.safetensors")))
model = model:to(device)
local criterion = nn.MSELoss()
local optimizer = optim.Adam(model:parameters(), { lr = 1e-3 })
local data = torch.load(path("data.safetensors"))
local losses = {}
for i = 0, STEPS - 1 do -- main.lua's train(), one batch a step
  local input, target = data["input." .. i]:to(device), data["target." .. i]:to(device)
  optimizer:zero_grad()
  local loss = criterion(model(input), target)
  losses[#losses + 1] = loss:item()
  loss:backward()
  optimizer:step()
end
P.finish(run, losses, model)
