-- Parity of scripts/tutorials/spatial_transformer_tutorial with PyTorch, nnrepl's side of
-- spatial_transformer.py beside this file (its header describes the steps and files).
--
--   nnrepl tests/gpu/tutorials/spatial_transformer.lua DIR [cuda|cpu] [--generate]
--
-- Trains the port's own Net (scripts/tutorials/spatial_transformer_tutorial/model.lua) and
-- writes DIR/spatial_transformer_nnrepl_losses.txt and _nnrepl_final.safetensors; --generate
-- makes the init and data files with nnrepl when they are missing (a run without PyTorch).
local STEPS, BATCH = 12, 16
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local Net = dofile(here .. "/../../../scripts/tutorials/spatial_transformer_tutorial/model.lua")
local P = dofile(here .. "/../examples/example_parity.lua")
local run = P.start("spatial_transformer", ...)
local device, path = run.device, run.path

if run.generate then
  torch.manual_seed(0)
  local net = Net()
  torch.no_grad(function() -- off the identity, as the .py says why
    net.fc_loc[2].bias:add_(torch.randn(6, { generator = torch.Generator():manual_seed(2) }) * 0.01)
  end)
  torch.save(net:state_dict(), path("init.safetensors"))
  local g = torch.Generator():manual_seed(1)
  local teacher = torch.randn(28 * 28, 10, { generator = g })
  local data = {}
  for i = 0, STEPS - 1 do
    local x = torch.randn(BATCH, 1, 28, 28, { generator = g })
    data["x." .. i] = x
    data["y." .. i] = x:flatten(1):matmul(teacher):argmax(1)
  end
  torch.save(data, path("data.safetensors"))
end

local model = Net()
model:load_state_dict(torch.load(path("init.safetensors")))
model = model:to(device)
local batches = torch.load(path("data.safetensors"))
local optimizer = optim.SGD(model:parameters(), { lr = 0.01 })
model:eval() -- dropout off (the tutorial's train() calls model:train())
local losses = {}
for i = 0, STEPS - 1 do
  local data, target = batches["x." .. i]:to(device), batches["y." .. i]:to(device)
  optimizer:zero_grad()
  local output = model(data)
  local loss = F.nll_loss(output, target)
  loss:backward()
  optimizer:step()
  losses[#losses + 1] = loss:item()
end
P.finish(run, losses, model)
