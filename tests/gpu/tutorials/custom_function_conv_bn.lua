-- Parity of scripts/tutorials/autograd/custom_function_conv_bn, nnrepl's side of
-- tests/gpu/tutorials/custom_function_conv_bn.py (its header describes the steps and files).
--
--   nnrepl tests/gpu/tutorials/custom_function_conv_bn.lua DIR [cuda|cpu] [--generate]
--
-- Trains the port's own Net (scripts/tutorials/autograd/custom_function_conv_bn/model.lua,
-- fused) in float64 and writes DIR/custom_function_conv_bn_nnrepl_losses.txt and
-- _nnrepl_final.safetensors; --generate makes the init and data files with nnrepl when they
-- are missing (a run without PyTorch).
local NAME, STEPS, BATCH, PER_EPOCH = "custom_function_conv_bn", 12, 16, 6
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local Net = dofile(here .. "/../../../scripts/tutorials/autograd/custom_function_conv_bn/model.lua")
local P = dofile(here .. "/../examples/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path
local f64 = { dtype = torch.float64 }

if run.generate then
  torch.manual_seed(0)
  torch.save(Net(true):double():state_dict(), path("init.safetensors"))
  local g = torch.Generator():manual_seed(1)
  local teacher = torch.randn(28 * 28, 10, { generator = g, dtype = torch.float64 })
  local data = {}
  for i = 0, STEPS - 1 do
    local x = torch.randn(BATCH, 1, 28, 28, { generator = g, dtype = torch.float64 })
    data["x." .. i] = x
    data["y." .. i] = x:flatten(1):matmul(teacher):argmax(1)
  end
  torch.save(data, path("data.safetensors"))
end

local model = Net(true):double()
model:load_state_dict(torch.load(path("init.safetensors")))
model.dropout.p = 0 -- dropout off: nothing random differs between the two sides
model = model:to(device)
local batches = torch.load(path("data.safetensors"))
local optimizer = optim.Adadelta(model:parameters(), { lr = 1.0 })
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
