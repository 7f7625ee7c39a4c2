-- nnrepl's side of _basics.py (its header describes the steps and files), for quickstart.lua and
-- optimization.lua: dofile(here .. "/_basics.lua")(name, ...) with the command line's arguments.
local STEPS, BATCH = 15, 64
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/tutorials/basics/?.lua;" .. package.path
local NeuralNetwork = require "model"
local P = dofile(here .. "/../examples/example_parity.lua")

return function(name, ...)
  local run = P.start(name, ...)
  local device, path = run.device, run.path

  if run.generate then
    torch.manual_seed(0)
    torch.save(NeuralNetwork():state_dict(), path("init.safetensors"))
    local g = torch.Generator():manual_seed(1)
    local teacher = torch.randn(28 * 28, 10, { generator = g })
    local data = {}
    for i = 0, STEPS - 1 do
      local X = torch.rand(BATCH, 1, 28, 28, { generator = g })
      data["X." .. i] = X
      data["y." .. i] = X:flatten(1):matmul(teacher):argmax(1)
    end
    torch.save(data, path("data.safetensors"))
  end

  local model = NeuralNetwork()
  model:load_state_dict(torch.load(path("init.safetensors")))
  model = model:to(device)
  local batches = torch.load(path("data.safetensors"))
  local loss_fn = nn.CrossEntropyLoss()
  local optimizer = torch.optim.SGD(model:parameters(), { lr = 1e-3 })
  model:train()
  local losses = {}
  for batch = 0, STEPS - 1 do
    local X, y = batches["X." .. batch]:to(device), batches["y." .. batch]:to(device)
    local pred = model(X)
    local loss = loss_fn(pred, y)
    loss:backward()
    optimizer:step()
    optimizer:zero_grad()
    losses[#losses + 1] = loss:item()
  end
  P.finish(run, losses, model)
end
