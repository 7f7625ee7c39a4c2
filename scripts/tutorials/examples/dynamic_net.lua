-- pytorch/tutorials beginner_source/examples_nn/dynamic_net.py ("PyTorch: Control Flow + Weight
-- Sharing"), ported: a polynomial of random order 3 to 5 per forward pass, the 4th and 5th
-- orders sharing the weight e, SGD with momentum.
--   nnrepl scripts/tutorials/examples/dynamic_net.lua
-- Differences: Python's random.randint(4, 6) is Lua's math.random(4, 6) (both inclusive; a
-- different generator, seeded by math.randomseed); floats are printed with Python's repr
-- (pyfloat); Python's print(t, v) is print(t .. " " .. v). POLY_STEPS (30000) sets the number
-- of steps for tiny runs.
local pyfloat = require("nn_util").pyfloat
local STEPS = tonumber(os.getenv("POLY_STEPS") or "30000")

local DynamicNet = torch.nn.Module:extend("DynamicNet")

function DynamicNet:__init()
  self.a = torch.nn.Parameter(torch.randn({}))
  self.b = torch.nn.Parameter(torch.randn({}))
  self.c = torch.nn.Parameter(torch.randn({}))
  self.d = torch.nn.Parameter(torch.randn({}))
  self.e = torch.nn.Parameter(torch.randn({}))
end

function DynamicNet:forward(x)
  local y = self.a + self.b * x + self.c * x ^ 2 + self.d * x ^ 3
  for exp = 4, math.random(4, 6) - 1 do -- Python's range(4, randint(4, 6))
    y = y + self.e * x ^ exp
  end
  return y
end

function DynamicNet:string()
  return string.format("y = %s + %s x + %s x^2 + %s x^3 + %s x^4 ? + %s x^5 ?", pyfloat(self.a:item()),
    pyfloat(self.b:item()), pyfloat(self.c:item()), pyfloat(self.d:item()), pyfloat(self.e:item()),
    pyfloat(self.e:item()))
end

local x = torch.linspace(-math.pi, math.pi, 2000)
local y = torch.sin(x)

local model = DynamicNet()

local criterion = torch.nn.MSELoss({ reduction = "sum" })
local optimizer = torch.optim.SGD(model:parameters(), { lr = 1e-8, momentum = 0.9 })
for t = 0, STEPS - 1 do
  local y_pred = model(x)

  local loss = criterion(y_pred, y)
  if t % 2000 == 1999 then print(t .. " " .. pyfloat(loss:item())) end

  optimizer:zero_grad()
  loss:backward()
  optimizer:step()
end

print(string.format("Result: %s", model:string()))
