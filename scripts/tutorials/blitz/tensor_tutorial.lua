-- pytorch/tutorials beginner_source/blitz/tensor_tutorial.py ("Tensors", the 60 Minute Blitz), ported.
--   nnrepl scripts/tutorials/blitz/tensor_tutorial.lua
-- Differences: there is no NumPy, so the NumPy cells (torch.from_numpy, t.numpy(), np.add) are
-- left out; f-strings are string.format; x[:, 1] is x[":, 1"]; Python's print(a, "\n") puts a
-- space between its values, so it is written out here.

-- Tensor initialization: directly from data
local data = { { 1, 2 }, { 3, 4 } }
local x_data = torch.tensor(data)

-- from another tensor
local x_ones = torch.ones_like(x_data) -- retains the properties of x_data
print(string.format("Ones Tensor: \n %s \n", x_ones))

local x_rand = torch.rand_like(x_data, { dtype = torch.float }) -- overrides the datatype of x_data
print(string.format("Random Tensor: \n %s \n", x_rand))

-- with random or constant values
local shape = { 2, 3 }
local rand_tensor = torch.rand(shape)
local ones_tensor = torch.ones(shape)
local zeros_tensor = torch.zeros(shape)

print(string.format("Random Tensor: \n %s \n", rand_tensor))
print(string.format("Ones Tensor: \n %s \n", ones_tensor))
print(string.format("Zeros Tensor: \n %s", zeros_tensor))

-- Tensor attributes
local tensor = torch.rand(3, 4)

print(string.format("Shape of tensor: %s", tensor.shape))
print(string.format("Datatype of tensor: %s", tensor.dtype))
print(string.format("Device tensor is stored on: %s", tensor.device))

-- Tensor operations: moved to the GPU if there is one
if torch.cuda.is_available() then
  tensor = tensor:to("cuda")
  print(string.format("Device tensor is stored on: %s", tensor.device))
end

-- indexing and slicing
tensor = torch.ones(4, 4)
tensor[":, 1"] = 0
print(tensor)

-- joining
local t1 = torch.cat({ tensor, tensor, tensor }, { dim = 1 })
print(t1)

-- multiplying: element-wise
print(string.format("tensor.mul(tensor) \n %s \n", tensor:mul(tensor)))
print(string.format("tensor * tensor \n %s", tensor * tensor))

-- matrix multiplication (Python's @ is matmul)
print(string.format("tensor.matmul(tensor.T) \n %s \n", tensor:matmul(tensor.T)))
print(string.format("tensor @ tensor.T \n %s", tensor:matmul(tensor.T)))

-- in-place operations
print(tostring(tensor) .. " \n")
tensor:add_(5)
print(tensor)
