-- pytorch/tutorials beginner_source/examples_tensor/polynomial_tensor.py ("PyTorch: Tensors"),
-- ported: a cubic fitted to sin(x) on [-pi, pi] with gradients worked out by hand.
--   nnrepl scripts/tutorials/examples/polynomial_tensor.lua
-- Differences: Python prints a float with repr (the shortest digits that read back); here
-- torch's pyfloat helper does the same. POLY_STEPS (2000) sets the number of steps for tiny runs.
local pyfloat = require("nn_util").pyfloat
local STEPS = tonumber(os.getenv("POLY_STEPS") or "2000")

local dtype = torch.float
local device = torch.device("cpu")
-- local device = torch.device("cuda:0") -- Uncomment this to run on GPU

-- Create random input and output data
local x = torch.linspace(-math.pi, math.pi, 2000, { device = device, dtype = dtype })
local y = torch.sin(x)

-- Randomly initialize weights
local a = torch.randn({}, { device = device, dtype = dtype })
local b = torch.randn({}, { device = device, dtype = dtype })
local c = torch.randn({}, { device = device, dtype = dtype })
local d = torch.randn({}, { device = device, dtype = dtype })

local learning_rate = 1e-6
for t = 0, STEPS - 1 do
  -- Forward pass: compute predicted y
  local y_pred = a + b * x + c * x ^ 2 + d * x ^ 3

  -- Compute and print loss
  local loss = (y_pred - y):pow(2):sum():item()
  if t % 100 == 99 then print(t .. " " .. pyfloat(loss)) end

  -- Backprop to compute gradients of a, b, c, d with respect to loss
  local grad_y_pred = 2.0 * (y_pred - y)
  local grad_a = grad_y_pred:sum()
  local grad_b = (grad_y_pred * x):sum()
  local grad_c = (grad_y_pred * x ^ 2):sum()
  local grad_d = (grad_y_pred * x ^ 3):sum()

  -- Update weights using gradient descent (Python's a -= ... is in place)
  a:sub_(learning_rate * grad_a)
  b:sub_(learning_rate * grad_b)
  c:sub_(learning_rate * grad_c)
  d:sub_(learning_rate * grad_d)
end

print(string.format("Result: y = %s + %s x + %s x^2 + %s x^3", pyfloat(a:item()), pyfloat(b:item()),
  pyfloat(c:item()), pyfloat(d:item())))
