-- PyTorch tutorial "Learn the Basics: Tensors" (beginner_source/basics/tensorqs_tutorial.py) in Lua:
-- creating tensors, their attributes, indexing, joining, arithmetic (with out=), item() and
-- in-place operations.
--
--   nnrepl scripts/tutorials/basics/tensorqs.lua
--
-- Differences from the original:
-- * No NumPy in Lua: "From a NumPy array" (np.array / torch.from_numpy) and the whole "Bridge
--   with NumPy" section (t.numpy(), shared memory) are left out; torch.tensor(data) takes the Lua
--   list directly, and x:tolist() gives one back (a copy, not shared memory).
-- * Subscripts are strings: tensor[:, 0] is tensor[":, 0"], tensor[..., -1] is tensor["..., -1"];
--   tensor.T is tensor.T, tensor.mul(t) is tensor:mul(t).
-- * print(a, b) separates with a tab in Lua: lines whose spacing matters use string.format.
--   type(agg_item) prints as Lua's math.type ("float") where Python prints <class 'float'>.

local data = { { 1, 2 }, { 3, 4 } }
local x_data = torch.tensor(data)

-- (From a NumPy array: no NumPy in Lua, see the header.)

local x_ones = torch.ones_like(x_data)
print(string.format("Ones Tensor: \n %s \n", x_ones))

local x_rand = torch.rand_like(x_data, { dtype = torch.float })
print(string.format("Random Tensor: \n %s \n", x_rand))

local shape = { 2, 3, }
local rand_tensor = torch.rand(shape)
local ones_tensor = torch.ones(shape)
local zeros_tensor = torch.zeros(shape)

print(string.format("Random Tensor: \n %s \n", rand_tensor))
print(string.format("Ones Tensor: \n %s \n", ones_tensor))
print(string.format("Zeros Tensor: \n %s", zeros_tensor))

local tensor = torch.rand(3, 4)

print(string.format("Shape of tensor: %s", tensor.shape))
print(string.format("Datatype of tensor: %s", tensor.dtype))
print(string.format("Device tensor is stored on: %s", tensor.device))

if torch.accelerator.is_available() then
  tensor = tensor:to(torch.accelerator.current_accelerator())
end

tensor = torch.ones(4, 4)
print(string.format("First row:  %s", tensor[0]))
print(string.format("First column:  %s", tensor[":, 0"]))
print(string.format("Last column: %s", tensor["..., -1"]))
tensor[":,1"] = 0
print(tensor)

local t1 = torch.cat({ tensor, tensor, tensor }, { dim = 1 })
print(t1)

local y1 = tensor:matmul(tensor.T) -- Python's tensor @ tensor.T
local y2 = tensor:matmul(tensor.T)

local y3 = torch.rand_like(tensor)
torch.matmul(tensor, tensor.T, { out = y3 })

local z1 = tensor * tensor
local z2 = tensor:mul(tensor)

local z3 = torch.rand_like(tensor)
torch.mul(tensor, tensor, { out = z3 })

local agg = tensor:sum()
local agg_item = agg:item()
print(string.format("%s %s", agg_item, math.type(agg_item)))

print(string.format("%s \n", tensor))
tensor:add_(5)
print(tensor)

-- (Bridge with NumPy: no NumPy in Lua, see the header.)
