-- PyTorch recipe "Inspecting Model Parameters" (recipes_source/inspecting_model_parameters.py)
-- in Lua: parameters(), named_parameters(), numel() and trainable counts of an MLP and a CNN.
--
--   nnrepl scripts/tutorials/recipes/inspecting_model_parameters.lua
--
-- Differences from the original:
-- * The f-strings are pyformat's (`f"..."`); Python's `{param.size()=}` self-documenting fields
--   are written out as `param.size()={(param:size())}`, which prints the same text.
-- * np.prod(param.size()) is a product over the Lua list of sizes; it prints as a plain int
--   (NumPy 2 would print np.int64(...)).
-- * print(a, b) is print(a .. " " .. tostring(b)): Lua's print separates with a tab.
-- * torchinfo (a third-party package) is not there: its two summaries are left out; the
--   manually gathered counts that follow them are printed.
local pf = require "pyformat"
local f = pf.f
local collections = require "collections"

local NeuralNetwork = nn.Module:extend("NeuralNetwork")
function NeuralNetwork:__init()
  self.flatten = nn.Flatten()
  self.linear_relu_stack = nn.Sequential(
    nn.Linear(28 * 28, 512),
    nn.ReLU(),
    nn.Linear(512, 512),
    nn.ReLU(),
    nn.Linear(512, 10)
  )
end

function NeuralNetwork:forward(x)
  x = self.flatten(x)
  local logits = self.linear_relu_stack(x)
  return logits
end

local model = NeuralNetwork()
print(model)

local shapes = {}
for _, param in ipairs(model:parameters()) do shapes[#shapes + 1] = tostring(param.shape) end
print("[" .. table.concat(shapes, ", ") .. "]")

for name, param in model:named_parameters() do
  print(name .. " " .. tostring(param.shape))
end

local layer = nn.Linear(28 * 28, 512)

for name, param in layer:named_parameters() do
  print(name .. " " .. tostring(param:size()))
end

for name, param in model:named_parameters() do
  print(f"name={name!r}, param.size()={(param:size())}, param.numel()={(param:numel())}")
end

local function count(m, trainable_only)
  local n = 0
  for _, p in ipairs(m:parameters()) do
    if not trainable_only or p.requires_grad then n = n + p:numel() end
  end
  return n
end

print(f"Total model params: {(count(model)):,}")

print(f"Total model trainable params: {(count(model, true)):,}")

for name, param in model:named_parameters() do
  if name == "linear_relu_stack.0.weight" then
    param.requires_grad = false
  end
  print(f"name={name!r}, param.size()={(param:size())}, param.numel()={(param:numel())}, param.requires_grad={param.requires_grad}")
end
print(f"Total model trainable params: {(count(model, true)):,}")

-- Inspecting Parameters of a Convolutional Neural Network

local CNN = nn.Module:extend("CNN")
function CNN:__init()
  self.features = nn.Sequential(
    nn.Conv2d({ in_channels = 1, out_channels = 32, kernel_size = 3 }),
    nn.ReLU({ inplace = true }),
    nn.Conv2d({ in_channels = 32, out_channels = 64, kernel_size = 3 }),
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

function CNN:forward(x)
  x = self.features(x)
  x = self.classifier(x)
  return x
end

local cnn_model = CNN()
print(cnn_model)
print(string.rep("-", 72))
for name, param in cnn_model:named_parameters() do
  print(f"name={name!r}, param.size()={(param:size())}, param.numel()={(param:numel())}, param.requires_grad={param.requires_grad}")
end
print(string.rep("-", 72))
print(f"Total model trainable params: {(count(cnn_model, true)):,}")

local function prod(size)
  local n = 1
  for _, s in ipairs(size:totable()) do n = n * s end
  return n
end
for name, param in cnn_model:named_parameters() do
  print(f"name={name!r}, param.size()={(param:size())}, np.prod(param.size())={(prod(param:size()))} == param.numel()={(param:numel())}")
end

-- (torchinfo.summary(model) is not there)
print(string.rep("-", 72))
print(f"Manually gathered model trainable params: {(count(model, true)):,}")

local layer_params = collections.defaultdict(function() return 0 end)

for name, param in model:named_parameters() do
  -- combine weight and bias together using layer name
  -- linear_relu_stack.0 = linear_relu_stack.0.weight + linear_relu_stack.bias
  local key = name:rsplit(".", 1)[1]
  layer_params[key] = layer_params[key] + param:numel()
end

for name, total_params in pairs(layer_params) do
  print(f"name={name!r} total_params={total_params:,}")
end

-- (torchinfo.summary(cnn_model) is not there)
print(string.rep("-", 72))
print(f"Manually gathered model trainable params: {(count(cnn_model, true)):,}")
print(string.rep("-", 72))
print("Manually generated total number of parameters per layer:")
local cnn_layer_params = collections.defaultdict(function() return 0 end)

for name, param in cnn_model:named_parameters() do
  local key = name:rsplit(".", 1)[1]
  cnn_layer_params[key] = cnn_layer_params[key] + param:numel()
end

for name, total_params in pairs(cnn_layer_params) do
  print(f"name={name!r} total_params={total_params:,}")
end
