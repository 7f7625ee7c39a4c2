-- Parity of scripts/tutorials/finetuning_torchvision_models_tutorial.lua with PyTorch, nnrepl's
-- side of tests/gpu/tutorials/finetuning_torchvision_models_tutorial.py (its header says what the
-- files hold).
--
--   nnrepl tests/gpu/tutorials/finetuning_torchvision_models_tutorial.lua DIR [cuda|cpu] [--generate]
--
-- K steps of the port's train phase on squeezenet1_0 reshaped to 2 classes, feature extraction
-- (classifier.1 only) then the scratch model (all parameters), SGD lr 0.001 momentum 0.9, eval
-- mode (no dropout draws).
-- --generate: when the data file is missing, make the init and data files here.
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local models = require("torchvision").models
local P = dofile(here .. "/../examples/example_parity.lua")
local Ph = dofile(here .. "/_phases.lua")

local NAME, K, BATCH, IMAGE, num_classes = "finetuning_torchvision_models_tutorial", 10, 8, 96, 2

local function squeezenet_2(feature_extract) -- as the port's initialize_model("squeezenet", ...)
  local model_ft = models.squeezenet1_0()
  if feature_extract then
    for _, param in ipairs(model_ft:parameters()) do param.requires_grad = false end
  end
  model_ft.classifier[1] = nn.Conv2d(512, num_classes, { kernel_size = { 1, 1 }, stride = { 1, 1 } })
  model_ft.num_classes = num_classes
  return model_ft
end

local run = P.start(NAME, ...)
if run.generate then
  torch.manual_seed(0)
  local init = Ph.prefixed("fe.", squeezenet_2(true):state_dict())
  Ph.prefixed("scratch.", squeezenet_2(false):state_dict(), init)
  torch.save(init, run.path("init.safetensors"), { format = "safetensors" })
  torch.manual_seed(1)
  local data = {}
  for i = 0, K - 1 do
    local x = torch.randn(BATCH, 3, IMAGE, IMAGE) * 0.05
    local y = torch.randint(0, num_classes, { BATCH })
    for b = 0, BATCH - 1 do x[b][y[b]:item()]:add_(0.1) end -- a learnable class: its channel brighter
    data["x." .. i], data["y." .. i] = x, y
  end
  torch.save(data, run.path("data.safetensors"), { format = "safetensors" })
end

local device = run.device
local init, data = torch.load(run.path("init.safetensors")), torch.load(run.path("data.safetensors"))
local criterion = nn.CrossEntropyLoss()
local losses, final = {}, {}
for _, phase in ipairs({ "fe", "scratch" }) do
  local model = squeezenet_2(phase == "fe")
  model:load_state_dict(Ph.unprefixed(phase .. ".", init))
  model = model:to(device)
  local params_to_update = {}
  for _, p in ipairs(model:parameters()) do if p.requires_grad then params_to_update[#params_to_update + 1] = p end end
  local optimizer = optim.SGD(params_to_update, { lr = 0.001, momentum = 0.9 })
  model:eval()
  for i = 0, K - 1 do
    local inputs, labels = data["x." .. i]:to(device), data["y." .. i]:to(device)
    optimizer:zero_grad()
    local loss
    do
      local _g <close> = torch.set_grad_enabled(true)
      local outputs = model(inputs)
      loss = criterion(outputs, labels)
      local _, preds = torch.max(outputs, 1)
      loss:backward()
      optimizer:step()
    end
    losses[#losses + 1] = loss:item()
  end
  Ph.prefixed(phase .. ".", model:state_dict(), final)
end
P.finish(run, losses, Ph.as_model(final))
