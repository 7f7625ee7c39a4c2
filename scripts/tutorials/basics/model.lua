-- The NeuralNetwork of the "Learn the Basics" tutorials (quickstart, optimization), written as
-- they write it; quickstart.lua, optimization.lua and the GPU parity tests require it from here.
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

return NeuralNetwork
