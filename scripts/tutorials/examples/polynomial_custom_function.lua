-- pytorch/tutorials beginner_source/examples_autograd/polynomial_custom_function.py ("PyTorch:
-- Defining New autograd Functions"), ported: y = a + b P3(c + d x) fitted to sin(x), P3 the
-- Legendre polynomial of degree 3 as a custom autograd Function.
--   nnrepl scripts/tutorials/examples/polynomial_custom_function.lua
-- Differences: floats are printed with Python's repr (pyfloat); Lua's print puts a tab between
-- values, so print(t, v) is print(t .. " " .. v). POLY_STEPS (2000) sets the number of steps for tiny runs.
local pyfloat = require("nn_util").pyfloat
local STEPS = tonumber(os.getenv("POLY_STEPS") or "2000")

local LegendrePolynomial3 = torch.autograd.Function:extend("LegendrePolynomial3")

function LegendrePolynomial3.forward(ctx, input)
  ctx:save_for_backward(input)
  return 0.5 * (5 * input ^ 3 - 3 * input)
end

function LegendrePolynomial3.backward(ctx, grad_output)
  local input = ctx.saved_tensors[1]
  return grad_output * 1.5 * (5 * input ^ 2 - 1)
end

local dtype = torch.float
local device = torch.device("cpu")
-- local device = torch.device("cuda:0") -- Uncomment this to run on GPU

local x = torch.linspace(-math.pi, math.pi, 2000, { device = device, dtype = dtype })
local y = torch.sin(x)

-- weights near the answer, so that it converges
local a = torch.full({}, 0.0, { device = device, dtype = dtype, requires_grad = true })
local b = torch.full({}, -1.0, { device = device, dtype = dtype, requires_grad = true })
local c = torch.full({}, 0.0, { device = device, dtype = dtype, requires_grad = true })
local d = torch.full({}, 0.3, { device = device, dtype = dtype, requires_grad = true })

local learning_rate = 5e-6
for t = 0, STEPS - 1 do
  -- To apply our Function, we use Function.apply method. We alias this as 'P3'.
  local P3 = LegendrePolynomial3.apply

  local y_pred = a + b * P3(c + d * x)

  local loss = (y_pred - y):pow(2):sum()
  if t % 100 == 99 then print(t .. " " .. pyfloat(loss:item())) end

  loss:backward()

  do
    local _ <close> = torch.no_grad()
    a:sub_(learning_rate * a.grad)
    b:sub_(learning_rate * b.grad)
    c:sub_(learning_rate * c.grad)
    d:sub_(learning_rate * d.grad)

    a.grad, b.grad, c.grad, d.grad = nil, nil, nil, nil
  end
end

print(string.format("Result: y = %s + %s * P3(%s + %s x)", pyfloat(a:item()), pyfloat(b:item()), pyfloat(c:item()),
  pyfloat(d:item())))
