-- PyTorch tutorial "Introduction to PyTorch" (beginner_source/introyt/introyt1_tutorial.py) in
-- Lua: a few tensor operations, the LeNet-5 model on a random image, CIFAR-10 through a DataLoader,
-- and a LeNet variant trained on it with SGD and momentum, then tested.
--
--   nnrepl scripts/tutorials/introyt/introyt1_tutorial.lua [--epochs N] [--log-every N]
--
-- Differences from the original:
-- * Nothing is downloaded: CIFAR-10's binary version (cifar-10-binary.tar.gz) must be extracted
--   under ./data, as ./data/cifar-10-batches-bin/data_batch_1.bin ... data_batch_5.bin and
--   test_batch.bin; without it torchvision.datasets.CIFAR10 raises "CIFAR10: data_batch_1.bin not
--   found in ./data/cifar-10-batches-bin or ./data: download=true, but nnrepl downloads nothing ...".
-- * --epochs N (default 2) and --log-every N (default 2000, the mini-batches between loss lines)
--   for short test runs; the defaults are the tutorial's.
-- * imshow (matplotlib) is left out; the labels it would show are printed.
-- * Lua's print puts a tab between values: the tuples torch.svd and torch.std_mean return are
--   printed in Python's format. The random numbers come from nnrepl's generator, so the random
--   tensors (and what follows from them) differ from PyTorch's for the same seed.
-- * classes is a Lua list: class k is classes[k + 1].
local torchvision = require "torchvision"
local transforms = torchvision.transforms
local argparse = require "argparse"

local parser = argparse.ArgumentParser({ description = "Introduction to PyTorch" })
parser:add_argument("--epochs", { type = "int", default = 2, help = "epochs to train (default %(default)s)" })
parser:add_argument("--log-every", { type = "int", default = 2000, help = "mini-batches between loss lines (default %(default)s)" })
local args = parser:parse_args({ ... })

-- PyTorch tensors
local z = torch.zeros(5, 3)
print(z)
print(z.dtype)

local i = torch.ones({ 5, 3 }, { dtype = torch.int16 })
print(i)

torch.manual_seed(1729)
local r1 = torch.rand(2, 2)
print("A random tensor:")
print(r1)

local r2 = torch.rand(2, 2)
print("\nA different random tensor:")
print(r2) -- new values

torch.manual_seed(1729)
local r3 = torch.rand(2, 2)
print("\nShould match r1:")
print(r3) -- repeats values of r1 because of re-seed

local ones = torch.ones(2, 3)
print(ones)

local twos = torch.ones(2, 3) * 2 -- every element is multiplied by 2
print(twos)

local threes = ones + twos -- addition allowed because shapes are similar
print(threes)              -- tensors are added element-wise
print(threes.shape)        -- this has the same dimensions as input tensors

r1 = torch.rand(2, 3)
r2 = torch.rand(3, 2)
-- uncomment this line to get a runtime error
-- r3 = r1 + r2

local r = (torch.rand(2, 2) - 0.5) * 2 -- values between -1 and 1
print("A random matrix, r:")
print(r)

-- Common mathematical operations are supported:
print("\nAbsolute value of r:")
print(torch.abs(r))

-- ...as are trigonometric functions:
print("\nInverse sine of r:")
print(torch.asin(r))

-- ...and linear algebra operations like determinant and singular value decomposition
print("\nDeterminant of r:")
print(torch.det(r))
print("\nSingular value decomposition of r:")
local U_, S, V = torch.svd(r)
print(string.format("torch.return_types.svd(\nU=%s,\nS=%s,\nV=%s)", U_, S, V))

-- ...and statistical and aggregate operations:
print("\nAverage and standard deviation of r:")
local std, mean = torch.std_mean(r)
print(string.format("(%s, %s)", std, mean))
print("\nMaximum value of r:")
print(torch.max(r))

-- PyTorch models
local LeNet = nn.Module:extend("LeNet")

function LeNet:__init()
  -- 1 input image channel (black & white), 6 output channels, 5x5 square convolution kernel
  self.conv1 = nn.Conv2d(1, 6, 5)
  self.conv2 = nn.Conv2d(6, 16, 5)
  -- an affine operation: y = Wx + b
  self.fc1 = nn.Linear(16 * 5 * 5, 120) -- 5*5 from image dimension
  self.fc2 = nn.Linear(120, 84)
  self.fc3 = nn.Linear(84, 10)
end

function LeNet:forward(x)
  -- Max pooling over a (2, 2) window
  x = F.max_pool2d(F.relu(self.conv1(x)), { 2, 2 })
  -- If the size is a square you can only specify a single number
  x = F.max_pool2d(F.relu(self.conv2(x)), 2)
  x = x:view(-1, self:num_flat_features(x))
  x = F.relu(self.fc1(x))
  x = F.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

function LeNet:num_flat_features(x)
  local size = x:size() -- all dimensions except the batch dimension (torch.Size has no [1:])
  local num_features = 1
  for d = 1, #size - 1 do num_features = num_features * size[d] end
  return num_features
end

local net = LeNet()
print(net) -- what does the object tell us about itself?

local input = torch.rand(1, 1, 32, 32) -- stand-in for a 32x32 black & white image
print("\nImage batch shape:")
print(input.shape)

local output = net(input) -- we don't call forward() directly
print("\nRaw output:")
print(output)
print(output.shape)

-- Datasets and dataloaders
local transform = transforms.Compose({
  transforms.ToTensor(),
  transforms.Normalize({ 0.4914, 0.4822, 0.4465 }, { 0.2470, 0.2435, 0.2616 }) })

local trainset = torchvision.datasets.CIFAR10({ root = "./data", train = true, download = true, transform = transform })

local trainloader = torch.utils.data.DataLoader(trainset, { batch_size = 4, shuffle = true, num_workers = 2 })

local classes = { "plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck" }

-- the labels of 4 images (imshow(torchvision.utils.make_grid(images)) left out)
local function print_labels(labels)
  local parts = {}
  for j = 0, 3 do parts[#parts + 1] = string.format("%5s", classes[labels[j]:item() + 1]) end
  print(table.concat(parts, " "))
end

-- get some random training images
local dataiter = trainloader:iter()
local images, labels = dataiter()
print_labels(labels)

-- Training your PyTorch model
transform = transforms.Compose({
  transforms.ToTensor(),
  transforms.Normalize({ 0.5, 0.5, 0.5 }, { 0.5, 0.5, 0.5 }) })

trainset = torchvision.datasets.CIFAR10({ root = "./data", train = true, download = true, transform = transform })
trainloader = torch.utils.data.DataLoader(trainset, { batch_size = 4, shuffle = true, num_workers = 2 })

local testset = torchvision.datasets.CIFAR10({ root = "./data", train = false, download = true, transform = transform })
local testloader = torch.utils.data.DataLoader(testset, { batch_size = 4, shuffle = false, num_workers = 2 })

-- get some random training images (imshow left out)
dataiter = trainloader:iter()
images, labels = dataiter()
print_labels(labels)

local Net = nn.Module:extend("Net")

function Net:__init()
  self.conv1 = nn.Conv2d(3, 6, 5)
  self.pool = nn.MaxPool2d(2, 2)
  self.conv2 = nn.Conv2d(6, 16, 5)
  self.fc1 = nn.Linear(16 * 5 * 5, 120)
  self.fc2 = nn.Linear(120, 84)
  self.fc3 = nn.Linear(84, 10)
end

function Net:forward(x)
  x = self.pool(F.relu(self.conv1(x)))
  x = self.pool(F.relu(self.conv2(x)))
  x = x:view(-1, 16 * 5 * 5)
  x = F.relu(self.fc1(x))
  x = F.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

net = Net()

local criterion = nn.CrossEntropyLoss()
local optimizer = optim.SGD(net:parameters(), { lr = 0.001, momentum = 0.9 })

local LOG_EVERY = args.log_every
for epoch = 0, args.epochs - 1 do -- loop over the dataset multiple times
  local running_loss = 0.0
  for k, inputs, labels_ in trainloader:enumerate() do
    -- zero the parameter gradients
    optimizer:zero_grad()

    -- forward + backward + optimize
    local outputs = net(inputs)
    local loss = criterion(outputs, labels_)
    loss:backward()
    optimizer:step()

    -- print statistics
    running_loss = running_loss + loss:item()
    if k % LOG_EVERY == LOG_EVERY - 1 then -- print every LOG_EVERY mini-batches
      print(string.format("[%d, %5d] loss: %.3f", epoch + 1, k + 1, running_loss / LOG_EVERY))
      running_loss = 0.0
    end
  end
end

print("Finished Training")

local correct = 0
local total = 0
do
  local _ <close> = torch.no_grad()
  for images_, labels_ in testloader:iter() do
    local outputs = net(images_)
    local _, predicted = torch.max(outputs.data, 1)
    total = total + labels_:size(0)
    correct = correct + predicted:eq(labels_):sum():item()
  end
end

print(string.format("Accuracy of the network on the 10000 test images: %d %%", 100 * correct // total))
