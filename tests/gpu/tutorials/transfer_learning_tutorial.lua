-- Parity of scripts/tutorials/transfer_learning_tutorial.lua with PyTorch, nnrepl's side of
-- tests/gpu/tutorials/transfer_learning_tutorial.py (its header says what the files hold).
--
--   nnrepl tests/gpu/tutorials/transfer_learning_tutorial.lua DIR [cuda|cpu] [--generate]
--
-- K steps of the port's train phase for model_ft (all parameters) and model_conv (fc only):
-- resnet18 with a 2-class fc, SGD lr 0.001 momentum 0.9, StepLR(7, 0.1) after each step, float64.
-- --generate: when the data file is missing, make the init and data files here.
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local models = require("torchvision").models
local P = dofile(here .. "/../examples/example_parity.lua")
local Ph = dofile(here .. "/_phases.lua")

local NAME, K, BATCH, IMAGE = "transfer_learning_tutorial", 8, 4, 64

local function resnet18_2() -- as the port builds model_ft and model_conv
  local model = models.resnet18()
  model.fc = nn.Linear(model.fc.in_features, 2)
  return model
end

local run = P.start(NAME, ...)
if run.generate then
  torch.manual_seed(0)
  local init = Ph.prefixed("ft.", resnet18_2():state_dict())
  Ph.prefixed("conv.", resnet18_2():state_dict(), init)
  torch.save(init, run.path("init.safetensors"), { format = "safetensors" })
  torch.manual_seed(1)
  local data = {}
  for i = 0, K - 1 do
    data["x." .. i] = torch.randn(BATCH, 3, IMAGE, IMAGE)
    data["y." .. i] = torch.randint(0, 2, { BATCH })
  end
  torch.save(data, run.path("data.safetensors"), { format = "safetensors" })
end

local device = run.device
local init, data = torch.load(run.path("init.safetensors")), torch.load(run.path("data.safetensors"))
local criterion = nn.CrossEntropyLoss()
local losses, final = {}, {}
for _, phase in ipairs({ "ft", "conv" }) do
  local model = resnet18_2()
  model:load_state_dict(Ph.unprefixed(phase .. ".", init))
  if phase == "conv" then
    for _, param in ipairs(model:parameters()) do param.requires_grad = false end
    for _, param in ipairs(model.fc:parameters()) do param.requires_grad = true end
  end
  model = model:to(device, torch.float64)
  local params = phase == "ft" and model:parameters() or model.fc:parameters()
  local optimizer = optim.SGD(params, { lr = 0.001, momentum = 0.9 })
  local scheduler = optim.lr_scheduler.StepLR(optimizer, { step_size = 7, gamma = 0.1 })
  model:train()
  for i = 0, K - 1 do
    local inputs, labels = data["x." .. i]:to(device, torch.float64), data["y." .. i]:to(device)
    optimizer:zero_grad()
    local loss
    do
      local _g <close> = torch.set_grad_enabled(true)
      local outputs = model(inputs)
      local _, preds = torch.max(outputs, 1)
      loss = criterion(outputs, labels)
      loss:backward()
      optimizer:step()
    end
    scheduler:step()
    losses[#losses + 1] = loss:item()
  end
  Ph.prefixed(phase .. ".", model:state_dict(), final)
end
P.finish(run, losses, Ph.as_model(final))
