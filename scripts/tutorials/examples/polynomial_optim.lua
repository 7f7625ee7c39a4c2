-- pytorch/tutorials beginner_source/examples_nn/polynomial_optim.py ("PyTorch: optim"), ported:
-- a cubic fitted to sin(x) as nn.Linear(3, 1) on (x, x^2, x^3), trained by RMSprop.
--   nnrepl scripts/tutorials/examples/polynomial_optim.lua
-- Differences: floats are printed with Python's repr (pyfloat); Python's print(t, v) is
-- print(t .. " " .. v). POLY_STEPS (2000) sets the number of steps for tiny runs.
local pyfloat = require("nn_util").pyfloat
local STEPS = tonumber(os.getenv("POLY_STEPS") or "2000")

local x = torch.linspace(-math.pi, math.pi, 2000)
local y = torch.sin(x)

-- Prepare the input tensor (x, x^2, x^3).
local p = torch.tensor({ 1, 2, 3 })
local xx = x:unsqueeze(-1):pow(p)

local model = torch.nn.Sequential(
  torch.nn.Linear(3, 1),
  torch.nn.Flatten(0, 1)
)
local loss_fn = torch.nn.MSELoss({ reduction = "sum" })

local learning_rate = 1e-3
local optimizer = torch.optim.RMSprop(model:parameters(), { lr = learning_rate })
for t = 0, STEPS - 1 do
  local y_pred = model(xx)

  local loss = loss_fn(y_pred, y)
  if t % 100 == 99 then print(t .. " " .. pyfloat(loss:item())) end

  optimizer:zero_grad()

  loss:backward()

  optimizer:step()
end

local linear_layer = model[0]
print(string.format("Result: y = %s + %s x + %s x^2 + %s x^3", pyfloat(linear_layer.bias:item()),
  pyfloat(linear_layer.weight[":, 0"]:item()), pyfloat(linear_layer.weight[":, 1"]:item()),
  pyfloat(linear_layer.weight[":, 2"]:item())))
