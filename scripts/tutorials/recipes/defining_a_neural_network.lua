-- PyTorch recipe "Defining a Neural Network in PyTorch"
-- (recipes_source/recipes/defining_a_neural_network.py) in Lua: an MNIST CNN defined twice (first
-- without forward), printed, and run on one random 28x28 image.
--
--   nnrepl scripts/tutorials/recipes/defining_a_neural_network.lua
--
-- Differences from the original:
-- * class Net(nn.Module) is nn.Module:extend("Net"), __init's layers are assigned in the same
--   order, so the printout is PyTorch's.
-- * Redefining the class is a second nn.Module:extend (a Lua local shadows the first).
-- * (extra) the last line checks that the log-probabilities sum to 1.
local F = nn.functional

-- 2. Define and initialize the neural network
local Net = nn.Module:extend("Net")
function Net:__init()
  -- First 2D convolutional layer, taking in 1 input channel (image),
  -- outputting 32 convolutional features, with a square kernel size of 3
  self.conv1 = nn.Conv2d(1, 32, 3, 1)
  -- Second 2D convolutional layer, taking in the 32 input layers,
  -- outputting 64 convolutional features, with a square kernel size of 3
  self.conv2 = nn.Conv2d(32, 64, 3, 1)

  -- Designed to ensure that adjacent pixels are either all 0s or all active
  -- with an input probability
  self.dropout1 = nn.Dropout2d(0.25)
  self.dropout2 = nn.Dropout2d(0.5)

  -- First fully connected layer
  self.fc1 = nn.Linear(9216, 128)
  -- Second fully connected layer that outputs our 10 labels
  self.fc2 = nn.Linear(128, 10)
end

local my_nn = Net()
print(my_nn)

-- 3. Specify how data will pass through your model
local Net = nn.Module:extend("Net") -- luacheck: ignore (redefined, as in the recipe)
function Net:__init()
  self.conv1 = nn.Conv2d(1, 32, 3, 1)
  self.conv2 = nn.Conv2d(32, 64, 3, 1)
  self.dropout1 = nn.Dropout2d(0.25)
  self.dropout2 = nn.Dropout2d(0.5)
  self.fc1 = nn.Linear(9216, 128)
  self.fc2 = nn.Linear(128, 10)
end

-- x represents our data
function Net:forward(x)
  -- Pass data through conv1
  x = self.conv1(x)
  -- Use the rectified-linear activation function over x
  x = F.relu(x)

  x = self.conv2(x)
  x = F.relu(x)

  -- Run max pooling over x
  x = F.max_pool2d(x, 2)
  -- Pass data through dropout1
  x = self.dropout1(x)
  -- Flatten x with start_dim=1
  x = x:flatten({ start_dim = 1 })
  -- Pass data through fc1
  x = self.fc1(x)
  x = F.relu(x)
  x = self.dropout2(x)
  x = self.fc2(x)

  -- Apply softmax to x
  local output = F.log_softmax(x, { dim = 1 })
  return output
end

-- 4. [Optional] Pass data through your model to test
-- Equates to one random 28x28 image
local random_data = torch.rand({ 1, 1, 28, 28 })

my_nn = Net()
local result = my_nn(random_data)
print(result)

-- (extra) a distribution over the 10 labels
print(string.format("result: %s, exp(result) sums to %.4f", result.shape, result:exp():sum():item()))
