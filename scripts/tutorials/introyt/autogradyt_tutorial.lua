-- PyTorch tutorial "The Fundamentals of Autograd" (beginner_source/introyt/autogradyt_tutorial.py)
-- in Lua: a traced computation and its grad_fn chain, one SGD step of a small model, turning
-- autograd off and on, the autograd profiler, backward with a vector, and the functional API.
--
--   nnrepl scripts/tutorials/introyt/autogradyt_tutorial.lua
--
-- Differences from the original:
-- * The matplotlib plots (sin(a) and its gradient) are left out; the tensors they show are printed.
-- * Python's tuples print in Python's format through tuple() below (Lua's print would show a
--   table's address); a missing gradient prints as nil (Python: None).
-- * `with torch.no_grad():` is a to-be-closed variable; the @torch.no_grad() decorator is
--   torch.no_grad()(function ... end).
-- * The notebook shows the value of a cell's last expression (the jacobians, the vjp); here they
--   are printed.
-- * zero_grad keeps the gradients as zeros (set_to_none=False), as the current tutorial does.
-- * The random numbers come from nnrepl's generator, so the random tensors differ from PyTorch's,
--   and the profiler's table lists nnrepl's ops (the tutorial's div and mul) and times.
local TinyModel = require "tiny_model" -- the tutorial's TinyModel, in tiny_model.lua beside this file

-- Python's repr of a tuple: (a, b), (a,) or ()
local function tuple(t)
  local parts = {}
  for i = 1, #t do
    local v = t[i]
    parts[i] = type(v) == "table" and getmetatable(v) == nil and tuple(v) or tostring(v == nil and "None" or v)
  end
  return "(" .. table.concat(parts, ", ") .. (#t == 1 and ",)" or ")")
end

-- A simple example
local a = torch.linspace(0., 2. * math.pi, { steps = 25, requires_grad = true })
print(a)

local b = torch.sin(a) -- plt.plot(a.detach(), b.detach()) left out

print(b)

local c = 2 * b
print(c)

local d = c + 1
print(d)

local out = d:sum()
print(out)

-- next_functions with their None entries: { node or nil, input number }, n of them
local function next_functions(fn)
  local nf, t = fn.next_functions, {}
  for i = 1, #nf do t[i] = { nf[i][1] == nil and "None" or nf[i][1], nf[i][2] } end
  return t
end
print("d:")
print(d.grad_fn)
print(tuple(next_functions(d.grad_fn)))
print(tuple(next_functions(d.grad_fn.next_functions[1][1])))
print(tuple(next_functions(d.grad_fn.next_functions[1][1].next_functions[1][1])))
print(tuple(next_functions(d.grad_fn.next_functions[1][1].next_functions[1][1].next_functions[1][1])))
print("\nc:")
print(c.grad_fn)
print("\nb:")
print(b.grad_fn)
print("\na:")
print(a.grad_fn)

out:backward()
print(a.grad) -- plt.plot(a.detach(), a.grad.detach()) left out

-- Autograd in training
local BATCH_SIZE = 16
local DIM_IN = 1000
local HIDDEN_SIZE = 100
local DIM_OUT = 10

local some_input = torch.randn(BATCH_SIZE, DIM_IN, { requires_grad = false })
local ideal_output = torch.randn(BATCH_SIZE, DIM_OUT, { requires_grad = false })

local model = TinyModel()

print(model.layer2.weight[0][":10"]) -- just a small slice
print(model.layer2.weight.grad)

local optimizer = torch.optim.SGD(model:parameters(), { lr = 0.001 })

local prediction = model(some_input)

local loss = (ideal_output - prediction):pow(2):sum()
print(loss)

loss:backward()
print(model.layer2.weight[0][":10"])
print(model.layer2.weight.grad[0][":10"])

optimizer:step()
print(model.layer2.weight[0][":10"])
print(model.layer2.weight.grad[0][":10"])

print(model.layer2.weight.grad[0][":10"])

for i = 0, 4 do
  prediction = model(some_input)
  loss = (ideal_output - prediction):pow(2):sum()
  loss:backward()
end

print(model.layer2.weight.grad[0][":10"])

optimizer:zero_grad({ set_to_none = false })

print(model.layer2.weight.grad[0][":10"])

-- Turning autograd off and on
a = torch.ones(2, 3, { requires_grad = true })
print(a)

local b1 = 2 * a
print(b1)

a.requires_grad = false
local b2 = 2 * a
print(b2)

a = torch.ones(2, 3, { requires_grad = true }) * 2
b = torch.ones(2, 3, { requires_grad = true }) * 3

local c1 = a + b
print(c1)

local c2
do
  local _ <close> = torch.no_grad()
  c2 = a + b
end

print(c2)

local c3 = a * b
print(c3)

local function add_tensors1(x, y)
  return x + y
end

local add_tensors2 = torch.no_grad()(function(x, y)
  return x + y
end)

a = torch.ones(2, 3, { requires_grad = true }) * 2
b = torch.ones(2, 3, { requires_grad = true }) * 3

c1 = add_tensors1(a, b)
print(c1)

c2 = add_tensors2(a, b)
print(c2)

local x = torch.rand(5, { requires_grad = true })
local y = x:detach()

print(x)
print(y)

-- Autograd and in-place operations: the cell the tutorial shows failing
print(select(2, pcall(function()
  local a_ = torch.linspace(0., 2. * math.pi, { steps = 25, requires_grad = true })
  torch.sin_(a_)
end)))

-- Autograd profiler
local device = torch.device("cpu")
local run_on_gpu = false
if torch.cuda.is_available() then
  device = torch.device("cuda")
  run_on_gpu = true
end

x = torch.randn(2, 3, { requires_grad = true })
y = torch.rand(2, 3, { requires_grad = true })
local z = torch.ones(2, 3, { requires_grad = true })

local prf = torch.autograd.profiler.profile({ use_cuda = run_on_gpu })
do
  local _ <close> = prf
  for _ = 0, 999 do
    z = (z / x) * y
  end
end

print(prf:key_averages():table({ sort_by = "self_cpu_time_total" }))

-- Advanced topic: more autograd detail and the high-level API
x = torch.randn(3, { requires_grad = true })

y = x * 2
while y.data:norm() < 1000 do
  y = y * 2
end

print(y)

local v = torch.tensor({ 0.1, 1.0, 0.0001 }, { dtype = torch.float }) -- stand-in for gradients
y:backward(v)

print(x.grad)

-- The high-level API
local function exp_adder(x_, y_)
  return 2 * x_:exp() + 3 * y_
end

local inputs = { torch.rand(1), torch.rand(1) } -- arguments for the function
print(tuple(inputs))
print(tuple(torch.autograd.functional.jacobian(exp_adder, inputs)))

inputs = { torch.rand(3), torch.rand(3) } -- arguments for the function
print(tuple(inputs))
print(tuple(torch.autograd.functional.jacobian(exp_adder, inputs)))

local function do_some_doubling(x_)
  local y_ = x_ * 2
  while y_.data:norm() < 1000 do
    y_ = y_ * 2
  end
  return y_
end

inputs = torch.randn(3)
local my_gradients = torch.tensor({ 0.1, 1.0, 0.0001 })
print(tuple({ torch.autograd.functional.vjp(do_some_doubling, inputs, my_gradients) }))
