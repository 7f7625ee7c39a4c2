-- PyTorch tutorial "Learn the Basics: Build the Neural Network"
-- (beginner_source/basics/buildmodel_tutorial.py) in Lua: the NeuralNetwork class, a prediction on
-- random input, the layers one by one (Flatten, Linear, ReLU, Sequential, Softmax), the parameters.
--
--   nnrepl scripts/tutorials/basics/buildmodel.lua
--
-- Differences from the original:
-- * The class is defined here as the tutorial does (quickstart.lua and optimization.lua require the
--   same class from model.lua).
-- * print(a, b) separates with a tab in Lua: print("Model structure: ", model, "\n\n") is a
--   string.format with Python's spaces.
local device = torch.accelerator.is_available() and torch.accelerator.current_accelerator().type or "cpu"
print(string.format("Using %s device", device))

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

local model = NeuralNetwork():to(device)
print(model)

local X = torch.rand(1, 28, 28, { device = device })
local logits = model(X)
local pred_probab = nn.Softmax({ dim = 1 })(logits)
local y_pred = pred_probab:argmax(1)
print(string.format("Predicted class: %s", y_pred))

local input_image = torch.rand(3, 28, 28)
print(input_image:size())

local flatten = nn.Flatten()
local flat_image = flatten(input_image)
print(flat_image:size())

local layer1 = nn.Linear({ in_features = 28 * 28, out_features = 20 })
local hidden1 = layer1(flat_image)
print(hidden1:size())

print(string.format("Before ReLU: %s\n\n", hidden1))
hidden1 = nn.ReLU()(hidden1)
print(string.format("After ReLU: %s", hidden1))

local seq_modules = nn.Sequential(
  flatten,
  layer1,
  nn.ReLU(),
  nn.Linear(20, 10)
)
input_image = torch.rand(3, 28, 28)
logits = seq_modules(input_image)

local softmax = nn.Softmax({ dim = 1 })
pred_probab = softmax(logits)

print(string.format("Model structure: %s \n\n", model))

for name, param in model:named_parameters() do
  print(string.format("Layer: %s | Size: %s | Values : %s \n", name, param:size(), param[":2"]))
end
