-- The parity steps the MNIST classifier examples share, nnrepl's side (tests/gpu/examples/mnist.lua
-- and mnist_rnn.lua call it; _classifier.py describes the steps and files): trains the port's
-- own Net (scripts/examples/<name>/model.lua) and writes DIR/<name>_nnrepl_losses.txt and
-- _nnrepl_final.safetensors; --generate makes the init and data files with nnrepl when they
-- are missing (a run without PyTorch).
local STEPS, BATCH, PER_EPOCH = 12, 16, 6
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."

return function(NAME, lr, ...)
  local Net = dofile(here .. "/../../../scripts/examples/" .. NAME .. "/model.lua")
  local P = dofile(here .. "/example_parity.lua")
  local run = P.start(NAME, ...)
  local device, path = run.device, run.path

  if run.generate then
    torch.manual_seed(0)
    torch.save(Net():state_dict(), path("init.safetensors"))
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
  model.dropout1.p = 0 -- dropout off: nothing random differs between the two sides
  model.dropout2.p = 0
  model = model:to(device)
  local batches = torch.load(path("data.safetensors"))
  local optimizer = optim.Adadelta(model:parameters(), { lr = lr })
  local scheduler = optim.lr_scheduler.StepLR(optimizer, { step_size = 1, gamma = 0.7 })
  model:train()
  local losses = {}
  for i = 0, STEPS - 1 do
    local data, target = batches["x." .. i]:to(device), batches["y." .. i]:to(device)
    optimizer:zero_grad()
    local output = model(data)
    local loss = F.nll_loss(output, target)
    loss:backward()
    optimizer:step()
    losses[#losses + 1] = loss:item()
    if (i + 1) % PER_EPOCH == 0 then scheduler:step() end
  end
  P.finish(run, losses, model)
end
