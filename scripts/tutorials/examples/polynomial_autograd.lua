-- pytorch/tutorials beginner_source/examples_autograd/polynomial_autograd.py ("PyTorch: Tensors
-- and autograd"), ported: a cubic fitted to sin(x) on [-pi, pi], gradients by autograd.
--   nnrepl scripts/tutorials/examples/polynomial_autograd.lua
-- Differences: Python's print(t, v) is print(t .. " " .. v) (Lua's print puts a tab); floats are
-- printed with Python's repr (pyfloat). POLY_STEPS (2000) sets the number of steps for tiny runs.
local pyfloat = require("nn_util").pyfloat
local STEPS = tonumber(os.getenv("POLY_STEPS") or "2000")

local dtype = torch.float
local device = torch.accelerator.is_available() and torch.accelerator.current_accelerator().type or "cpu"
print(string.format("Using %s device", device))
torch.set_default_device(device)

-- Create Tensors to hold input and outputs.
local x = torch.linspace(-math.pi, math.pi, 2000, { dtype = dtype })
local y = torch.sin(x)

-- Random weights for y = a + b x + c x^2 + d x^3, tracked by autograd
local a = torch.randn({}, { dtype = dtype, requires_grad = true })
local b = torch.randn({}, { dtype = dtype, requires_grad = true })
local c = torch.randn({}, { dtype = dtype, requires_grad = true })
local d = torch.randn({}, { dtype = dtype, requires_grad = true })

local learning_rate = 1e-6
for t = 0, STEPS - 1 do
  -- Forward pass
  local y_pred = a + b * x + c * x ^ 2 + d * x ^ 3

  -- Compute and print loss
  local loss = (y_pred - y):pow(2):sum()
  if t % 100 == 99 then print(t .. " " .. pyfloat(loss:item())) end

  -- Backward pass: a.grad, b.grad, c.grad and d.grad
  loss:backward()

  -- Manually update weights using gradient descent, outside autograd
  do
    local _ <close> = torch.no_grad()
    a:sub_(learning_rate * a.grad)
    b:sub_(learning_rate * b.grad)
    c:sub_(learning_rate * c.grad)
    d:sub_(learning_rate * d.grad)

    -- Manually zero the gradients after updating weights
    a.grad, b.grad, c.grad, d.grad = nil, nil, nil, nil
  end
end

print(string.format("Result: y = %s + %s x + %s x^2 + %s x^3", pyfloat(a:item()), pyfloat(b:item()),
  pyfloat(c:item()), pyfloat(d:item())))
