-- pytorch/tutorials beginner_source/blitz/data_parallel_tutorial.py ("Optional: Data
-- Parallelism", the 60 Minute Blitz), ported.
--   nnrepl scripts/tutorials/blitz/data_parallel_tutorial.lua
-- On several GPUs the model is wrapped in nn.DataParallel and each replica prints its chunk's
-- sizes; on one GPU or the CPU it runs whole. Differences: Lua's print puts a tab between its
-- values where Python puts a space, so the lines are joined with spaces here.
local Dataset, DataLoader = torch.utils.data.Dataset, torch.utils.data.DataLoader

-- Parameters and DataLoaders
local input_size = 5
local output_size = 2

local batch_size = 30
local data_size = 100

local device = torch.device(torch.cuda.is_available() and "cuda:0" or "cpu")

-- Dummy DataSet
local RandomDataset = Dataset:extend("RandomDataset")

function RandomDataset:__init(size, length)
  self.len = length
  self.data = torch.randn(length, size)
end

function RandomDataset:__getitem(index)
  return self.data[index]
end

function RandomDataset:__len()
  return self.len
end

local rand_loader = DataLoader(RandomDataset(input_size, data_size), { batch_size = batch_size, shuffle = true })

-- Simple Model
local Model = nn.Module:extend("Model")

function Model:__init(input_size_, output_size_)
  self.fc = nn.Linear(input_size_, output_size_)
end

function Model:forward(input)
  local output = self.fc(input)
  print(string.format("\tIn Model: input size %s output size %s", input:size(), output:size()))
  return output
end

-- Create Model and DataParallel
local model = Model(input_size, output_size)
if torch.cuda.device_count() > 1 then
  print(string.format("Let's use %d GPUs!", torch.cuda.device_count()))
  -- dim = 0 [30, xxx] -> [10, ...], [10, ...], [10, ...] on 3 GPUs
  model = nn.DataParallel(model)
end

model:to(device)

-- Run the Model
for data in rand_loader:iter() do
  local input = data:to(device)
  local output = model(input)
  print(string.format("Outside: input size %s output_size %s", input:size(), output:size()))
end
