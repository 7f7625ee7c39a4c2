-- Document 003 (../shared/seeds/003_*.txt, "PyTorch如何使用多块GPU训练神经网络模型"), sections
-- 2-6: nn.DataParallel on a toy model that prints the size of what it sees. A dataset of 100
-- random 5-vectors in batches of 30; Model = Linear(5, 2) prints its input and output sizes
-- inside forward, and the loop prints them outside.
--
--   build/nnrepl scripts/doc003_dataparallel.lua [--seed N]
--
-- With more than one GPU the model is wrapped in nn.DataParallel and each batch of 30 is
-- split over the GPUs (8 GPUs: 4,4,4,4,4,4,4,2, the last batch of 10: 2,2,2,2,2); with one
-- GPU or none the module runs as is and sees whole batches. The lines are those the
-- document shows ("\tIn Model: input size torch.Size([4, 5])\toutput size torch.Size([4, 2])",
-- "Outside: input size torch.Size([30, 5]) output_size torch.Size([30, 2])"); its code, as
-- printed, has `input.size` without the call and a comma after the first f-string.
local argparse = require "argparse"
local Dataset, DataLoader = torch.utils.data.Dataset, torch.utils.data.DataLoader

local parser = argparse.ArgumentParser({ prog = "doc003_dataparallel.lua",
  description = "Document 003's DataParallel demonstration" })
parser:add_argument("--seed", { type = "int", help = "random seed (default: none)" })
local args = parser:parse_args({ ... })
if args.seed then torch.manual_seed(args.seed) end

-- the parameters
local input_size = 5
local output_size = 2

local batch_size = 30
local data_size = 100

-- the device
local device = torch.device(torch.cuda.is_available() and "cuda:0" or "cpu")

-- print a line without breaking the progress bar on a terminal
local bar
local function say(line)
  if bar then bar:write(line) else print(line) end
end

-- a dataset of random tensors
local RandomDataset = Dataset:extend("RandomDataset")

function RandomDataset:__init(size, length)
  self.len = length
  self.data = torch.randn(length, size) -- a length x size tensor
end

function RandomDataset:__getitem(index)
  return self.data[index]
end

function RandomDataset:__len()
  return self.len
end

-- the loader (a Lua dataset loads in the main thread whatever num_workers says)
local rand_loader = DataLoader({ dataset = RandomDataset(input_size, data_size),
  batch_size = batch_size, shuffle = true, num_workers = 12 })

-- a one-layer model that prints what it sees
local Model = nn.Module:extend("Model")

function Model:__init(input_size_, output_size_)
  self.fc = nn.Linear(input_size_, output_size_)
end

function Model:forward(input)
  local output = self.fc(input)
  say(string.format("\tIn Model: input size %s\toutput size %s", tostring(input:size()), tostring(output:size())))
  return output
end

-- several GPUs: wrap the model in nn.DataParallel
local model = Model(input_size, output_size)
if torch.cuda.device_count() > 1 then
  print(string.format("Let's use %d GPUs!", torch.cuda.device_count()))
  model = nn.DataParallel(model) -- the batch is split over the GPUs
end

model:to(device)

-- run the model
bar = torch.utils.progress(rand_loader, { desc = "batches", leave = false })
for data in bar do
  local input = data:to(device) -- the input onto the GPU
  local output = model(input)
  say(string.format("Outside: input size %s output_size %s", tostring(input:size()), tostring(output:size())))
end
bar = nil
