-- Port of pytorch/tutorials beginner_source/nn_tutorial.py ("What is torch.nn really?"): a
-- logistic regression written from raw tensors, refactored step by step onto nn.functional,
-- nn.Module, nn.Linear, optim, Dataset and DataLoader, then a CNN, nn.Sequential, a wrapped
-- DataLoader and the GPU.
--   nnrepl scripts/tutorials/nn_tutorial.lua [--data-root DIR] [--epochs N] [--limit N]
-- Differences: the tutorial downloads MNIST as a pickle (50000 training and 10000 validation
-- images as float rows of 784 values in [0, 1]); there is no network here, so the port reads
-- Fashion-MNIST's IDX files (default /usr/share/datasets/fashion-mnist, Debian's
-- dataset-fashion-mnist; torchvision.datasets.FashionMNIST's error names the files when they are
-- missing) and converts them the same way: x_train / x_valid are the first 50000 / last 10000
-- training images as float rows / 255, y_train / y_valid their int64 labels. No image is shown
-- (matplotlib). `x[range(n), target]` is x[{torch.arange(n), target}], and `train_ds[a:b]`
-- train_ds:__getitem("a:b") (see the nnrepl notes in the code). --epochs (default 2, the
-- tutorial's) and --limit N (the first N training and N / 5 validation images) make a short run.
local argparse = require "argparse"
local torchvision = require "torchvision"
local parser = argparse.ArgumentParser({ description = "What is torch.nn really?" })
parser:add_argument("--data-root", { default = "/usr/share/datasets/fashion-mnist",
  help = "folder with Fashion-MNIST's IDX files" })
parser:add_argument("--epochs", { type = "int", default = 2, help = "epochs of each training loop" })
parser:add_argument("--limit", { type = "int", help = "use only the first N training images" })
local args = parser:parse_args(arg)

-- MNIST data setup (Fashion-MNIST here)
local train = torchvision.datasets.FashionMNIST({ root = args.data_root, train = true })
local n_train = args.limit or 50000
local n_valid = args.limit and args.limit // 5 or train.data:size(0) - 50000
local images = train.data:view(-1, 784):float() / 255
local x_train, y_train = images[":" .. n_train], train.targets[":" .. n_train]
local x_valid, y_valid = images[(-n_valid) .. ":"], train.targets[(-n_valid) .. ":"]

-- (pyplot.imshow of x_train[0] reshaped to 28 x 28 dropped)
print(x_train.shape)

local n, c = x_train.shape[0], x_train.shape[1]
print(x_train, y_train)
print(x_train.shape)
print(y_train:min(), y_train:max())

-- Neural net from scratch (no torch.nn)
local weights = torch.randn(784, 10) / math.sqrt(784)
weights:requires_grad_()
local bias = torch.zeros(10, { requires_grad = true })

local function log_softmax(x)
  return x - x:exp():sum(-1):log():unsqueeze(-1)
end

local model = function(xb)
  return log_softmax(xb:matmul(weights) + bias)
end

local bs = 64

local xb = x_train["0:" .. bs]
local preds = model(xb)
print(preds[0], preds.shape)

local function nll(input, target)
  return -input[{ torch.arange(target:size(0)), target }]:mean()
end

local loss_func = nll

local yb = y_train["0:" .. bs]
print(loss_func(preds, yb))

local function accuracy(out, yb)
  local preds = torch.argmax(out, { dim = 1 })
  return preds:eq(yb):float():mean()
end

print(accuracy(preds, yb))

local lr = 0.5
local epochs = args.epochs

local function batch(t, i) -- t[start_i:end_i]
  return t[string.format("%d:%d", i * bs, i * bs + bs)]
end

for epoch = 0, epochs - 1 do
  for i = 0, (n - 1) // bs do
    xb = batch(x_train, i)
    yb = batch(y_train, i)
    local pred = model(xb)
    local loss = loss_func(pred, yb)

    loss:backward()
    do
      local _ <close> = torch.no_grad()
      weights:sub_(weights.grad * lr)
      bias:sub_(bias.grad * lr)
      weights.grad:zero_()
      bias.grad:zero_()
    end
  end
end

print(loss_func(model(xb), yb), accuracy(model(xb), yb))

-- Using torch.nn.functional
loss_func = F.cross_entropy

model = function(xb)
  return xb:matmul(weights) + bias
end

print(loss_func(model(xb), yb), accuracy(model(xb), yb))

-- Refactor using nn.Module
local Mnist_Logistic = nn.Module:extend("Mnist_Logistic")

function Mnist_Logistic:__init()
  self.weights = nn.Parameter(torch.randn(784, 10) / math.sqrt(784))
  self.bias = nn.Parameter(torch.zeros(10))
end

function Mnist_Logistic:forward(xb)
  return xb:matmul(self.weights) + self.bias
end

model = Mnist_Logistic()

print(loss_func(model(xb), yb))

local function fit()
  for epoch = 0, epochs - 1 do
    for i = 0, (n - 1) // bs do
      xb = batch(x_train, i)
      yb = batch(y_train, i)
      local pred = model(xb)
      local loss = loss_func(pred, yb)

      loss:backward()
      do
        local _ <close> = torch.no_grad()
        for _, p in ipairs(model:parameters()) do
          p:sub_(p.grad * lr)
        end
        model:zero_grad()
      end
    end
  end
end

fit()

print(loss_func(model(xb), yb))

-- Refactor using nn.Linear
Mnist_Logistic = nn.Module:extend("Mnist_Logistic")

function Mnist_Logistic:__init()
  self.lin = nn.Linear(784, 10)
end

function Mnist_Logistic:forward(xb)
  return self.lin(xb)
end

model = Mnist_Logistic()
print(loss_func(model(xb), yb))

fit()

print(loss_func(model(xb), yb))

-- Refactor using optim
local function get_model()
  local model = Mnist_Logistic()
  return model, optim.SGD(model:parameters(), { lr = lr })
end

local opt
model, opt = get_model()
print(loss_func(model(xb), yb))

for epoch = 0, epochs - 1 do
  for i = 0, (n - 1) // bs do
    xb = batch(x_train, i)
    yb = batch(y_train, i)
    local pred = model(xb)
    local loss = loss_func(pred, yb)

    loss:backward()
    opt:step()
    opt:zero_grad()
  end
end

print(loss_func(model(xb), yb))

-- Refactor using Dataset
local TensorDataset = torch.utils.data.TensorDataset

local train_ds = TensorDataset(x_train, y_train)

model, opt = get_model()

for epoch = 0, epochs - 1 do
  for i = 0, (n - 1) // bs do
    -- Python: xb, yb = train_ds[i * bs: i * bs + bs] (a dataset takes no slice key here)
    xb, yb = train_ds:__getitem(string.format("%d:%d", i * bs, i * bs + bs))
    local pred = model(xb)
    local loss = loss_func(pred, yb)

    loss:backward()
    opt:step()
    opt:zero_grad()
  end
end

print(loss_func(model(xb), yb))

-- Refactor using DataLoader
local DataLoader = torch.utils.data.DataLoader

train_ds = TensorDataset(x_train, y_train)
local train_dl = DataLoader(train_ds, { batch_size = bs })

model, opt = get_model()

for epoch = 0, epochs - 1 do
  for xb_, yb_ in train_dl do
    xb, yb = xb_, yb_
    local pred = model(xb)
    local loss = loss_func(pred, yb)

    loss:backward()
    opt:step()
    opt:zero_grad()
  end
end

print(loss_func(model(xb), yb))

-- Add validation
train_ds = TensorDataset(x_train, y_train)
train_dl = DataLoader(train_ds, { batch_size = bs, shuffle = true })

local valid_ds = TensorDataset(x_valid, y_valid)
local valid_dl = DataLoader(valid_ds, { batch_size = bs * 2 })

model, opt = get_model()

for epoch = 0, epochs - 1 do
  model:train()
  for xb, yb in train_dl do
    local pred = model(xb)
    local loss = loss_func(pred, yb)

    loss:backward()
    opt:step()
    opt:zero_grad()
  end

  model:eval()
  local valid_loss = 0
  do
    local _ <close> = torch.no_grad()
    for xb, yb in valid_dl do valid_loss = valid_loss + loss_func(model(xb), yb) end
  end

  print(epoch, valid_loss / #valid_dl)
end

-- Create fit() and get_data()
local function loss_batch(model, loss_func, xb, yb, opt)
  local loss = loss_func(model(xb), yb)

  if opt ~= nil then
    loss:backward()
    opt:step()
    opt:zero_grad()
  end

  return loss:item(), #xb
end

local pyfloat = require("nn_util").pyfloat

function fit(epochs, model, loss_func, opt, train_dl, valid_dl)
  for epoch = 0, epochs - 1 do
    model:train()
    for xb, yb in train_dl do
      loss_batch(model, loss_func, xb, yb, opt)
    end

    model:eval()
    local total, count = 0, 0
    do
      local _ <close> = torch.no_grad()
      for xb, yb in valid_dl do
        local loss, num = loss_batch(model, loss_func, xb, yb)
        total, count = total + loss * num, count + num
      end
    end
    local val_loss = total / count

    print(epoch .. " " .. pyfloat(val_loss))
  end
end

local function get_data(train_ds, valid_ds, bs)
  return DataLoader(train_ds, { batch_size = bs, shuffle = true }),
      DataLoader(valid_ds, { batch_size = bs * 2 })
end

train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
model, opt = get_model()
fit(epochs, model, loss_func, opt, train_dl, valid_dl)

-- Switch to CNN
local Mnist_CNN = nn.Module:extend("Mnist_CNN")

function Mnist_CNN:__init()
  self.conv1 = nn.Conv2d(1, 16, { kernel_size = 3, stride = 2, padding = 1 })
  self.conv2 = nn.Conv2d(16, 16, { kernel_size = 3, stride = 2, padding = 1 })
  self.conv3 = nn.Conv2d(16, 10, { kernel_size = 3, stride = 2, padding = 1 })
end

function Mnist_CNN:forward(xb)
  xb = xb:view(-1, 1, 28, 28)
  xb = F.relu(self.conv1(xb))
  xb = F.relu(self.conv2(xb))
  xb = F.relu(self.conv3(xb))
  xb = F.avg_pool2d(xb, 4)
  return xb:view(-1, xb:size(1))
end

lr = 0.1

model = Mnist_CNN()
opt = optim.SGD(model:parameters(), { lr = lr, momentum = 0.9 })

fit(epochs, model, loss_func, opt, train_dl, valid_dl)

-- nn.Sequential
local Lambda = nn.Module:extend("Lambda")

function Lambda:__init(func)
  self.func = func
end

function Lambda:forward(x)
  return self.func(x)
end

local function preprocess(x)
  return x:view(-1, 1, 28, 28)
end

model = nn.Sequential(
  Lambda(preprocess),
  nn.Conv2d(1, 16, { kernel_size = 3, stride = 2, padding = 1 }),
  nn.ReLU(),
  nn.Conv2d(16, 16, { kernel_size = 3, stride = 2, padding = 1 }),
  nn.ReLU(),
  nn.Conv2d(16, 10, { kernel_size = 3, stride = 2, padding = 1 }),
  nn.ReLU(),
  nn.AvgPool2d(4),
  Lambda(function(x) return x:view(x:size(0), -1) end)
)

opt = optim.SGD(model:parameters(), { lr = lr, momentum = 0.9 })

fit(epochs, model, loss_func, opt, train_dl, valid_dl)

-- Wrapping DataLoader
function preprocess(x, y)
  return x:view(-1, 1, 28, 28), y
end

local WrappedDataLoader = {}
WrappedDataLoader.__index = WrappedDataLoader
setmetatable(WrappedDataLoader, { __call = function(cls, dl, func)
  return setmetatable({ dl = dl, func = func }, cls)
end })

function WrappedDataLoader:__len()
  return #self.dl
end

-- `for xb, yb in wrapped do`: each batch of the loader through func
function WrappedDataLoader:__call()
  if not self._iter then self._iter = self.dl:iter() end
  local x, y = self._iter()
  if x == nil then self._iter = nil; return nil end
  return self.func(x, y)
end

train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
train_dl = WrappedDataLoader(train_dl, preprocess)
valid_dl = WrappedDataLoader(valid_dl, preprocess)

model = nn.Sequential(
  nn.Conv2d(1, 16, { kernel_size = 3, stride = 2, padding = 1 }),
  nn.ReLU(),
  nn.Conv2d(16, 16, { kernel_size = 3, stride = 2, padding = 1 }),
  nn.ReLU(),
  nn.Conv2d(16, 10, { kernel_size = 3, stride = 2, padding = 1 }),
  nn.ReLU(),
  nn.AdaptiveAvgPool2d(1),
  Lambda(function(x) return x:view(x:size(0), -1) end)
)

opt = optim.SGD(model:parameters(), { lr = lr, momentum = 0.9 })

fit(epochs, model, loss_func, opt, train_dl, valid_dl)

-- Using your GPU
print(torch.cuda.is_available())

local dev = torch.cuda.is_available() and torch.device("cuda") or torch.device("cpu")

function preprocess(x, y)
  return x:view(-1, 1, 28, 28):to(dev), y:to(dev)
end

train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
train_dl = WrappedDataLoader(train_dl, preprocess)
valid_dl = WrappedDataLoader(valid_dl, preprocess)

model:to(dev)
opt = optim.SGD(model:parameters(), { lr = lr, momentum = 0.9 })

fit(epochs, model, loss_func, opt, train_dl, valid_dl)
