-- pytorch/tutorials intermediate_source/model_parallel_tutorial.py ("Model Parallel Best
-- Practices") in Lua: a ToyModel with one layer on each of two GPUs, ResNet-50 split over two GPUs
-- (ModelParallelResNet50), the same with its batches pipelined in splits
-- (PipelineParallelResNet50), and the timings of training them against one-GPU ResNet-50.
--
--   nnrepl scripts/tutorials/distributed/model_parallel_tutorial.lua [--cpu] [--num-batches 3]
--          [--batch-size 120] [--image-size 128] [--num-repeat 10] [--split-sizes 1,3,5,8,10,12,20,40,60]
--
-- One process, no launcher. Differences from the tutorial:
-- * --cpu (new) puts both halves on "cpu" (the tutorial needs cuda:0 and cuda:1), so the program
--   runs on a machine without two GPUs; the timings then say nothing about model parallelism.
-- * --num-batches, --batch-size, --image-size, --num-repeat, --split-sizes (new; defaults the
--   tutorial's) make the run small.
-- * No matplotlib: each plot is printed as the lines it would draw (mean and standard deviation
--   of the run times, in seconds), and no PNG is written.
-- * timeit.repeat is timeit_repeat below: setup, then one timed call of stmt, num_repeat times
--   (wall clock, after a CUDA synchronize).
local torchvision = require "torchvision"
local argparse = require "argparse"
local time = require "time"
local ResNet, Bottleneck = torchvision.models.ResNet, torchvision.models.Bottleneck

local parser = argparse.ArgumentParser({ description = "Model Parallel Best Practices" })
parser:add_argument("--cpu", { action = "store_true", help = "both halves on the CPU" })
parser:add_argument("--num-batches", { type = "int", default = 3 })
parser:add_argument("--batch-size", { type = "int", default = 120 })
parser:add_argument("--image-size", { type = "int", default = 128 })
parser:add_argument("--num-repeat", { type = "int", default = 10 })
parser:add_argument("--split-sizes", { default = "1,3,5,8,10,12,20,40,60" })
local args = parser:parse_args({ ... })

local dev0 = args.cpu and "cpu" or "cuda:0"
local dev1 = args.cpu and "cpu" or "cuda:1"

local ToyModel = nn.Module:extend("ToyModel")

function ToyModel:__init()
  self.net1 = nn.Linear(10, 10):to(dev0)
  self.relu = nn.ReLU()
  self.net2 = nn.Linear(10, 5):to(dev1)
end

function ToyModel:forward(x)
  x = self.relu(self.net1(x:to(dev0)))
  return self.net2(x:to(dev1))
end

local model = ToyModel()
local loss_fn = nn.MSELoss()
local optimizer = optim.SGD(model:parameters(), { lr = 0.001 })

optimizer:zero_grad()
local outputs = model(torch.randn(20, 10))
local labels = torch.randn(20, 5):to(dev1)
loss_fn(outputs, labels):backward()
optimizer:step()

-- ResNet-50 in two halves
local num_classes = 1000

local ModelParallelResNet50 = ResNet:extend("ModelParallelResNet50")

function ModelParallelResNet50:__init(opts)
  opts = opts or {}
  ResNet.__init(self, Bottleneck, { 3, 4, 6, 3 }, { num_classes = num_classes })

  self.seq1 = nn.Sequential(
    self.conv1,
    self.bn1,
    self.relu,
    self.maxpool,

    self.layer1,
    self.layer2
  ):to(dev0)

  self.seq2 = nn.Sequential(
    self.layer3,
    self.layer4,
    self.avgpool
  ):to(dev1)

  self.fc:to(dev1)
end

function ModelParallelResNet50:forward(x)
  x = self.seq2(self.seq1(x):to(dev1))
  return self.fc(x:view(x:size(0), -1))
end

local num_batches = args.num_batches
local batch_size = args.batch_size
local image_w = args.image_size
local image_h = args.image_size

local function train(model)
  model:train(true)
  local loss_fn = nn.MSELoss()
  local optimizer = optim.SGD(model:parameters(), { lr = 0.001 })

  local one_hot_indices = torch.LongTensor(batch_size):random_(0, num_classes):view(batch_size, 1)

  for _ = 1, num_batches do
    -- random inputs and one-hot labels
    local inputs = torch.randn(batch_size, 3, image_w, image_h)
    local labels = torch.zeros(batch_size, num_classes):scatter_(1, one_hot_indices, 1)

    -- forward
    optimizer:zero_grad()
    local outputs = model(inputs:to(dev0))

    -- backward
    labels = labels:to(outputs.device)
    loss_fn(outputs, labels):backward()
    optimizer:step()
  end
end

local function synchronize()
  if not args.cpu then torch.cuda.synchronize() end
end

-- timeit.repeat(stmt, setup, number=1, repeat=num_repeat): the times of stmt, each after setup
local function timeit_repeat(stmt, setup, num_repeat)
  local times = {}
  for i = 1, num_repeat do
    local env = setup()
    synchronize()
    local t0 = time.perf_counter()
    stmt(env)
    synchronize()
    times[i] = time.perf_counter() - t0
  end
  return times
end

-- np.mean, np.std (population) of a list
local function mean_std(xs)
  local t = torch.tensor(xs, { dtype = torch.float64 })
  return t:mean():item(), t:std({ correction = 0 }):item()
end

local num_repeat = args.num_repeat

local function stmt(model) train(model) end

local mp_run_times = timeit_repeat(stmt, function() return ModelParallelResNet50() end, num_repeat)
local mp_mean, mp_std = mean_std(mp_run_times)

local rn_run_times = timeit_repeat(stmt, function()
  return torchvision.models.resnet50({ num_classes = num_classes }):to(dev0)
end, num_repeat)
local rn_mean, rn_std = mean_std(rn_run_times)

-- the bar chart, as text: one line per bar
local function plot(means, stds, labels, fig_name)
  print(string.format("%s (ResNet50 Execution Time (Second)):", fig_name))
  for i = 1, #means do
    print(string.format("  %s: %.4f +- %.4f", labels[i], means[i], stds[i]))
  end
end

plot({ mp_mean, rn_mean },
  { mp_std, rn_std },
  { "Model Parallel", "Single GPU" },
  "mp_vs_rn.png")

-- Pipelining: each batch in splits, so that the two halves can work at once
local PipelineParallelResNet50 = ModelParallelResNet50:extend("PipelineParallelResNet50")

function PipelineParallelResNet50:__init(split_size, ...)
  ModelParallelResNet50.__init(self, ...)
  self.split_size = split_size or 20
end

function PipelineParallelResNet50:forward(x)
  local splits = x:split(self.split_size, 0)
  local s_next = splits[1]
  local s_prev = self.seq1(s_next):to(dev1)
  local ret = {}

  for i = 2, #splits do
    s_next = splits[i]
    -- A. s_prev on dev1
    s_prev = self.seq2(s_prev)
    ret[#ret + 1] = self.fc(s_prev:view(s_prev:size(0), -1))

    -- B. s_next on dev0, concurrently with A
    s_prev = self.seq1(s_next):to(dev1)
  end

  s_prev = self.seq2(s_prev)
  ret[#ret + 1] = self.fc(s_prev:view(s_prev:size(0), -1))

  return torch.cat(ret)
end

local pp_run_times = timeit_repeat(stmt, function() return PipelineParallelResNet50() end, num_repeat)
local pp_mean, pp_std = mean_std(pp_run_times)

plot({ mp_mean, rn_mean, pp_mean },
  { mp_std, rn_std, pp_std },
  { "Model Parallel", "Single GPU", "Pipelining Model Parallel" },
  "mp_vs_rn_vs_pp.png")

local means = {}
local stds = {}
local split_sizes = {}
for s in args.split_sizes:gmatch("[^,]+") do split_sizes[#split_sizes + 1] = math.tointeger(tonumber(s)) end

for _, split_size in ipairs(split_sizes) do
  local run_times = timeit_repeat(stmt, function() return PipelineParallelResNet50(split_size) end, num_repeat)
  local m, s = mean_std(run_times)
  means[#means + 1] = m
  stds[#stds + 1] = s
end

-- the split-size curve, as text
print("split_size_tradeoff.png (ResNet50 Execution Time (Second) against Pipeline Split Size):")
for i, split_size in ipairs(split_sizes) do
  print(string.format("  split_size %d: %.4f +- %.4f", split_size, means[i], stds[i]))
end
