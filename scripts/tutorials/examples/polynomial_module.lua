-- pytorch/tutorials beginner_source/examples_nn/polynomial_module.py ("PyTorch: Custom nn
-- Modules"), ported: a cubic fitted to sin(x) as a Module with four scalar Parameters, SGD.
--   nnrepl scripts/tutorials/examples/polynomial_module.lua
-- Differences: floats are printed with Python's repr (pyfloat); Python's print(t, v) is
-- print(t .. " " .. v). POLY_STEPS (2000) sets the number of steps for tiny runs.
local pyfloat = require("nn_util").pyfloat
local STEPS = tonumber(os.getenv("POLY_STEPS") or "2000")

local Polynomial3 = torch.nn.Module:extend("Polynomial3")

function Polynomial3:__init()
  self.a = torch.nn.Parameter(torch.randn({}))
  self.b = torch.nn.Parameter(torch.randn({}))
  self.c = torch.nn.Parameter(torch.randn({}))
  self.d = torch.nn.Parameter(torch.randn({}))
end

function Polynomial3:forward(x)
  return self.a + self.b * x + self.c * x ^ 2 + self.d * x ^ 3
end

function Polynomial3:string()
  return string.format("y = %s + %s x + %s x^2 + %s x^3", pyfloat(self.a:item()), pyfloat(self.b:item()),
    pyfloat(self.c:item()), pyfloat(self.d:item()))
end

local x = torch.linspace(-math.pi, math.pi, 2000)
local y = torch.sin(x)

local model = Polynomial3()

local criterion = torch.nn.MSELoss({ reduction = "sum" })
local optimizer = torch.optim.SGD(model:parameters(), { lr = 1e-6 })
for t = 0, STEPS - 1 do
  local y_pred = model(x)

  local loss = criterion(y_pred, y)
  if t % 100 == 99 then print(t .. " " .. pyfloat(loss:item())) end

  optimizer:zero_grad()
  loss:backward()
  optimizer:step()
end

print(string.format("Result: %s", model:string()))
