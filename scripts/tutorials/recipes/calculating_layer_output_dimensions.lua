-- PyTorch recipe "Calculating Output Dimensions for Convolutional and Pooling Layers"
-- (recipes_source/calculating_layer_output_dimensions.py) in Lua: the in_features of the first
-- linear layer after convolutions and pooling, found by hand, by printing shapes, and by trying.
--
--   nnrepl scripts/tutorials/recipes/calculating_layer_output_dimensions.lua
--
-- Differences from the original:
-- * The classes redefined under one name (Net) are Net1 ... Net5 here; `try: ... except
--   RuntimeError as e:` is pcall. The mismatch error is nnrepl's ("Linear(in_features=6400,
--   out_features=128) got input of shape [1, 9216], expected [*, 6400]"), not PyTorch's
--   "mat1 and mat2 shapes cannot be multiplied (1x9216 and 6400x128)".
-- * calc_shape's tuples print as Python's ((1, 28, 28)) through a small helper.
-- * Approach 3 (torchinfo, a third-party package) is left out; its model follows.
local function try(model, x)
  local ok, e = pcall(model, x)
  if not ok then print(string.format("Error occured: %s", tostring(e):gsub("^[^:]*:%d+: ", ""))) end
end

-- Early Stages of Model Development

local Net1 = nn.Module:extend("Net")
function Net1:__init()
  self.conv1 = nn.Conv2d(1, 32, 3)
  self.conv2 = nn.Conv2d(32, 64, 3)
  self.pool = nn.MaxPool2d({ kernel_size = { 2, 2 } })
  self.relu = nn.ReLU({ inplace = true })
end

function Net1:forward(x)
  x = self.relu(self.conv1(x))
  x = self.relu(self.conv2(x))
  x = self.pool(x)
end

local Net2 = nn.Module:extend("Net")
function Net2:__init()
  self.conv1 = nn.Conv2d(1, 32, 3)
  self.conv2 = nn.Conv2d(32, 64, 3)
  self.pool = nn.MaxPool2d({ kernel_size = { 2, 2 } })
  self.flatten = nn.Flatten()
  self.fc1 = nn.Linear(64 * 10 * 10, 128)
  self.relu = nn.ReLU({ inplace = true })
end

function Net2:forward(x)
  x = self.relu(self.conv1(x))
  x = self.relu(self.conv2(x))
  x = self.pool(x)
  x = self.flatten(x)
  x = self.relu(self.fc1(x))
  return x
end

local model = Net2()

-- Simulate a single data point from the dataset
local x = torch.ones(1, 1, 28, 28) -- batch_size, channels, height, width
try(model, x)

-- Approach 1: Calculate the output shapes of each layer manually

-- Helper function to determine output shape after convolution or pool layer.
local function calc_shape(c_in, h_in, w_in, opts)
  opts = opts or {}
  local kernel, padding = opts.kernel or { 3, 3 }, opts.padding or { 0, 0 }
  local dilation, stride = opts.dilation or { 1, 1 }, opts.stride or { 1, 1 }
  local c_out = opts.c_out == nil and c_in or opts.c_out
  local h_out = math.floor(((h_in + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) / stride[1]) + 1)
  local w_out = math.floor(((w_in + 2 * padding[2] - dilation[2] * (kernel[2] - 1) - 1) / stride[2]) + 1)
  return { c_out, h_out, w_out }
end
local function tuple(t) return "(" .. table.concat(t, ", ") .. ")" end

-- Start with image that is 28x28 pixels with 1 channel
local input_h_w = { 1, 28, 28 }
print(string.format("Input shape (c, h, w) : %s", tuple(input_h_w)))

-- Simulated Conv2d with 32 channels output
local conv1_out = calc_shape(input_h_w[1], input_h_w[2], input_h_w[3], { c_out = 32 })
print(string.format("Post Conv2d.0 shape   : %s", tuple(conv1_out)))

-- Simulated Conv2d with 64 channels output
local conv2_out = calc_shape(conv1_out[1], conv1_out[2], conv1_out[3], { c_out = 64 })
print(string.format("Post Conv2d.1 shape   : %s", tuple(conv2_out)))

-- Simulated MaxPool2d with 2x2 kernel
-- (the default value of stride is the kernel_size)
local pool_out = calc_shape(conv2_out[1], conv2_out[2], conv2_out[3], { kernel = { 2, 2 }, stride = { 2, 2 } })
print(string.format("Post MaxPool2d.0 shape: %s", tuple(pool_out)))

local Net3 = nn.Module:extend("Net")
function Net3:__init()
  self.conv1 = nn.Conv2d(1, 32, 3)
  self.conv2 = nn.Conv2d(32, 64, 3)
  self.pool = nn.MaxPool2d({ kernel_size = { 2, 2 } })
  self.flatten = nn.Flatten()
  self.fc1 = nn.Linear(64 * 12 * 12, 128)
  self.relu = nn.ReLU({ inplace = true })
end
Net3.forward = Net2.forward

model = Net3()
x = torch.ones(1, 1, 28, 28) -- batch_size, channels, height, width
try(model, x)

local Net4 = nn.Module:extend("Net")
function Net4:__init()
  Net3.__init(self)
  self.fc2 = nn.Linear(128, 10)
end

function Net4:forward(x)
  x = self.relu(self.conv1(x))
  x = self.relu(self.conv2(x))
  x = self.pool(x)
  x = self.flatten(x)
  x = self.relu(self.fc1(x))
  x = self.fc2(x)
  return x
end

-- Approach 2: Add temporary internal print statements to report the data.shape
local DebugNet = nn.Module:extend("DebugNet")
DebugNet.__init = Net1.__init

function DebugNet:forward(x)
  print(string.format("input shape: %s", tostring(x.shape)))
  x = self.relu(self.conv1(x))
  print(string.format("after conv1 shape: %s", tostring(x.shape)))
  x = self.relu(self.conv2(x))
  print(string.format("after conv2 shape: %s", tostring(x.shape)))
  x = self.pool(x)
  print(string.format("after pool shape: %s", tostring(x.shape)))
end

model = DebugNet()
x = torch.ones(1, 1, 28, 28) -- batch_size, channels, height, width
try(model, x)

-- Approach 2 with the Sequential class

local DebugNet2 = nn.Module:extend("DebugNet2")
function DebugNet2:__init()
  self.features = nn.Sequential(
    nn.Conv2d(1, 32, 3),
    nn.ReLU({ inplace = true }),
    nn.Conv2d(32, 64, 3),
    nn.ReLU({ inplace = true }),
    nn.MaxPool2d({ kernel_size = { 2, 2 } })
  )
  self.classifier = nn.Sequential(
    nn.Flatten(),
    nn.Linear(64 * 12 * 12, 128),
    nn.ReLU({ inplace = true }),
    nn.Linear(128, 10)
  )
end

function DebugNet2:forward(x)
  print(string.format("input shape: %s", tostring(x.shape)))
  x = self.features(x)
  print(string.format("post features shape: %s", tostring(x.shape)))
  x = self.classifier(x)
  return x
end

model = DebugNet2()
x = torch.ones(1, 1, 28, 28) -- batch_size, channels, height, width
try(model, x)

-- Approach 3 (torchinfo.summary(model, input_size=(1, 1, 28, 28))) is left out; the model it
-- leads to:
model = Net4()
print(string.format("(extra) Net's output: %s", tostring(model(x).shape)))
