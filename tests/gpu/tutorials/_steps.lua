-- The parity steps the blitz classifier tutorials share, nnrepl's side (cifar10_tutorial.lua and
-- neural_networks_tutorial.lua call it; _steps.py describes the steps and files): trains the
-- port's own Net; --generate makes the init and data files with nnrepl when they are missing.
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."

return function(NAME, Net, STEPS, batch, criterion, make_optimizer, ...)
  local P = dofile(here .. "/../examples/example_parity.lua")
  local run = P.start(NAME, ...)
  local device, path = run.device, run.path

  if run.generate then
    torch.manual_seed(0)
    torch.save(Net():state_dict(), path("init.safetensors"))
    local g = torch.Generator():manual_seed(1)
    local data = {}
    for i = 0, STEPS - 1 do data["x." .. i], data["y." .. i] = batch(g) end
    torch.save(data, path("data.safetensors"))
  end

  local net = Net()
  net:load_state_dict(torch.load(path("init.safetensors")))
  net = net:to(device)
  local batches = torch.load(path("data.safetensors"))
  local optimizer = make_optimizer(net:parameters())
  local losses = {}
  for i = 0, STEPS - 1 do
    local inputs, labels = batches["x." .. i]:to(device), batches["y." .. i]:to(device)
    optimizer:zero_grad()
    local outputs = net(inputs)
    local loss = criterion(outputs, labels)
    loss:backward()
    optimizer:step()
    losses[#losses + 1] = loss:item()
  end
  P.finish(run, losses, net)
end
