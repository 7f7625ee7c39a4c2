-- Parity of scripts/tutorials/blitz/neural_networks_tutorial.lua, nnrepl's side of
-- tests/gpu/tutorials/neural_networks_tutorial.py (its header describes the steps and files).
--   nnrepl tests/gpu/tutorials/neural_networks_tutorial.lua DIR [cuda|cpu] [--generate]
-- Trains the port's own Net (scripts/tutorials/blitz/neural_networks_model.lua); --generate
-- makes the init and data files with nnrepl when they are missing (a run without PyTorch).
local NAME, STEPS = "neural_networks_tutorial", 12
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local Net = dofile(here .. "/../../../scripts/tutorials/blitz/neural_networks_model.lua")
local P = dofile(here .. "/../examples/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path

if run.generate then
  torch.manual_seed(0)
  torch.save(Net():state_dict(), path("init.safetensors"))
  local g = torch.Generator():manual_seed(1)
  local data = {}
  for i = 0, STEPS - 1 do
    data["x." .. i] = torch.randn(1, 1, 32, 32, { generator = g })
    data["y." .. i] = torch.randn(10, { generator = g }):view(1, -1)
  end
  torch.save(data, path("data.safetensors"))
end

local net = Net()
net:load_state_dict(torch.load(path("init.safetensors")))
net = net:to(device)
local batches = torch.load(path("data.safetensors"))
local criterion = nn.MSELoss()
local optimizer = optim.SGD(net:parameters(), { lr = 0.01 })
local losses = {}
for i = 0, STEPS - 1 do
  local input, target = batches["x." .. i]:to(device), batches["y." .. i]:to(device)
  optimizer:zero_grad()
  local output = net(input)
  local loss = criterion(output, target)
  loss:backward()
  optimizer:step()
  losses[#losses + 1] = loss:item()
end
P.finish(run, losses, net)
