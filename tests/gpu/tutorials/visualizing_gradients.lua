-- Parity of scripts/tutorials/intermediate2/visualizing_gradients/, nnrepl's side of
-- visualizing_gradients.py beside this file (its header describes the steps and files): the
-- tutorial's 10 steps with the port's own Net (visualizing_gradients/model.lua), in float64.
--   nnrepl tests/gpu/tutorials/visualizing_gradients.lua DIR [cuda|cpu] [--generate]
-- --generate makes the init and data files with nnrepl when they are missing.
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local Net = dofile(here .. "/../../../scripts/tutorials/intermediate2/visualizing_gradients/model.lua").Net
local P = dofile(here .. "/../examples/example_parity.lua")
local run = P.start("visualizing_gradients", ...)
local device, path = run.device, run.path
local nn, F, optim = torch.nn, torch.nn.functional, torch.optim
local STEPS = 10

local function both(model_bn, model_nobn)
  local out = {}
  for k, v in pairs(model_bn:state_dict()) do out["bn." .. k] = v end
  for k, v in pairs(model_nobn:state_dict()) do out["nobn." .. k] = v end
  return out
end

if run.generate then
  torch.manual_seed(0)
  torch.save(both(Net({ batchnorm = true, num_layers = 3 }):double(), Net({ batchnorm = false, num_layers = 3 }):double()),
    path("init.safetensors"))
  torch.save({ x = torch.randn(10, 28, 28, { dtype = torch.float64 }), y = torch.randint(10, { 10 }) }, path("data.safetensors"))
end

local init = torch.load(path("init.safetensors"))
local function part(prefix)
  local out = {}
  for k, v in pairs(init) do
    if k:sub(1, #prefix) == prefix then out[k:sub(#prefix + 1)] = v end
  end
  return out
end
local model_bn = Net({ batchnorm = true, num_layers = 3 }):double()
local model_nobn = Net({ batchnorm = false, num_layers = 3 }):double()
model_bn:load_state_dict(part("bn."))
model_nobn:load_state_dict(part("nobn."))
model_bn, model_nobn = model_bn:to(device), model_nobn:to(device)
local data = torch.load(path("data.safetensors"))
local x, y = data.x:to(device), data.y:to(device)
model_bn:train()
model_nobn:train()
local optimizer_bn = optim.SGD(model_bn:parameters(), { lr = 0.01, momentum = 0.9 })
local optimizer_nobn = optim.SGD(model_nobn:parameters(), { lr = 0.01, momentum = 0.9 })
local losses = {}
for _ = 1, STEPS do
  optimizer_bn:zero_grad()
  optimizer_nobn:zero_grad()
  local y_pred_bn = model_bn(x)
  local y_pred_nobn = model_nobn(x)
  local loss_bn = F.cross_entropy(y_pred_bn, y)
  local loss_nobn = F.cross_entropy(y_pred_nobn, y)
  loss_bn:backward()
  loss_nobn:backward()
  optimizer_bn:step()
  optimizer_nobn:step()
  losses[#losses + 1] = loss_bn:item()
  losses[#losses + 1] = loss_nobn:item()
end

local Both = nn.Module:extend("Both") -- one state_dict for the harness
function Both:__init() self.bn, self.nobn = model_bn, model_nobn end
P.finish(run, losses, Both())
