-- Port of pytorch/tutorials beginner_source/nlp/pytorch_tutorial.py ("Introduction to PyTorch",
-- Deep Learning for NLP): creating, indexing, concatenating and reshaping tensors, then autograd.
--   nnrepl scripts/tutorials/nlp/pytorch_tutorial.lua
-- Differences: the grad_fn lines show nnrepl's addresses; Lua's print puts a tab between values.

torch.manual_seed(1)

-- Creating tensors
local V_data = { 1., 2., 3. }
local V = torch.tensor(V_data)
print(V)

local M_data = { { 1., 2., 3. }, { 4., 5., 6 } }
local M = torch.tensor(M_data)
print(M)

local T_data = { { { 1., 2. }, { 3., 4. } },
                 { { 5., 6. }, { 7., 8. } } }
local T = torch.tensor(T_data)
print(T)

print(V[0])
print(V[0]:item())
print(M[0])
print(T[0])

local x = torch.randn({ 3, 4, 5 })
print(x)

-- Operations with tensors
x = torch.tensor({ 1., 2., 3. })
local y = torch.tensor({ 4., 5., 6. })
local z = x + y
print(z)

local x_1 = torch.randn(2, 5)
local y_1 = torch.randn(3, 5)
local z_1 = torch.cat({ x_1, y_1 })
print(z_1)

local x_2 = torch.randn(2, 3)
local y_2 = torch.randn(2, 5)
local z_2 = torch.cat({ x_2, y_2 }, 1)
print(z_2)
-- torch.cat({x_1, x_2}) raises the same size error as PyTorch

-- Reshaping tensors
x = torch.randn(2, 3, 4)
print(x)
print(x:view(2, 12))
print(x:view(2, -1))

-- Computation graphs and automatic differentiation
x = torch.tensor({ 1., 2., 3 }, { requires_grad = true })
y = torch.tensor({ 4., 5., 6 }, { requires_grad = true })
z = x + y
print(z)
print(z.grad_fn)

local s = z:sum()
print(s)
print(s.grad_fn)

s:backward()
print(x.grad)

x = torch.randn(2, 2)
y = torch.randn(2, 2)
print(x.requires_grad, y.requires_grad)
z = x + y
print(z.grad_fn)

x = x:requires_grad_()
y = y:requires_grad_()
z = x + y
print(z.grad_fn)
print(z.requires_grad)

local new_z = z:detach()
print(new_z.grad_fn)

print(x.requires_grad)
print((x ^ 2).requires_grad)

do
  local _ <close> = torch.no_grad()
  print((x ^ 2).requires_grad)
end
