-- Parity of scripts/tutorials/examples/polynomial_optim.lua, nnrepl's side of
-- tests/gpu/tutorials/polynomial_optim.py (its header describes the steps and files).
--   nnrepl tests/gpu/tutorials/polynomial_optim.lua DIR [cuda|cpu] [--generate]
-- The tutorial's model is an inline nn.Sequential, not a class, so it is built here as the port
-- builds it; --generate makes the init and data files with nnrepl when they are missing.
local NAME, STEPS = "polynomial_optim", 20
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local P = dofile(here .. "/../examples/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path

local function make_model() -- the port's
  return torch.nn.Sequential(
    torch.nn.Linear(3, 1),
    torch.nn.Flatten(0, 1)
  )
end

if run.generate then
  torch.manual_seed(0)
  torch.save(make_model():state_dict(), path("init.safetensors"))
  local x = torch.linspace(-math.pi, math.pi, 2000)
  local y = torch.sin(x)
  local p = torch.tensor({ 1, 2, 3 })
  local xx = x:unsqueeze(-1):pow(p)
  torch.save({ xx = xx, y = y }, path("data.safetensors"))
end

local model = make_model()
model:load_state_dict(torch.load(path("init.safetensors")))
model = model:to(device)
local data = torch.load(path("data.safetensors"))
local xx, y = data.xx:to(device), data.y:to(device)
local loss_fn = torch.nn.MSELoss({ reduction = "sum" })
local learning_rate = 1e-3
local optimizer = torch.optim.RMSprop(model:parameters(), { lr = learning_rate })
local losses = {}
for _ = 0, STEPS - 1 do
  local y_pred = model(xx)
  local loss = loss_fn(y_pred, y)
  losses[#losses + 1] = loss:item()
  optimizer:zero_grad()
  loss:backward()
  optimizer:step()
end
P.finish(run, losses, model)
