-- PyTorch tutorial "Building Models with PyTorch" (beginner_source/introyt/modelsyt_tutorial.py)
-- in Lua: a small model and its parameters, a linear layer, LeNet-5's convolutions, an LSTM
-- tagger, and max pooling, batch normalization and dropout on random tensors.
--
--   nnrepl scripts/tutorials/introyt/modelsyt_tutorial.lua
--
-- Differences from the original:
-- * The tutorial's `import torch.functional as F` is nnrepl's global F (torch.nn.functional), which
--   has the max_pool2d, relu and log_softmax the classes call (as in the tutorial, LeNet and
--   LSTMTagger are defined, not run).
-- * Python's `for s in size:` over x.size()[1:] is `for _, s in ipairs(x:size()["1:"])`.
-- * The random numbers come from nnrepl's generator, so the values differ from PyTorch's.
-- * The script returns its classes (TinyModel, LeNet, LSTMTagger), for the CI test to run them.

-- torch.nn.Module and torch.nn.Parameter
local TinyModel = torch.nn.Module:extend("TinyModel")

function TinyModel:__init()
  self.linear1 = torch.nn.Linear(100, 200)
  self.activation = torch.nn.ReLU()
  self.linear2 = torch.nn.Linear(200, 10)
  self.softmax = torch.nn.Softmax()
end

function TinyModel:forward(x)
  x = self.linear1(x)
  x = self.activation(x)
  x = self.linear2(x)
  x = self.softmax(x)
  return x
end

local tinymodel = TinyModel()

print("The model:")
print(tinymodel)

print("\n\nJust one layer:")
print(tinymodel.linear2)

print("\n\nModel params:")
for _, param in ipairs(tinymodel:parameters()) do
  print(param)
end

print("\n\nLayer params:")
for _, param in ipairs(tinymodel.linear2:parameters()) do
  print(param)
end

-- Linear layers
local lin = torch.nn.Linear(3, 2)
local x = torch.rand(1, 3)
print("Input:")
print(x)

print("\n\nWeight and Bias parameters:")
for _, param in ipairs(lin:parameters()) do
  print(param)
end

local y = lin(x)
print("\n\nOutput:")
print(y)

-- Convolutional layers
local LeNet = torch.nn.Module:extend("LeNet")

function LeNet:__init()
  -- 1 input image channel (black & white), 6 output channels, 5x5 square convolution kernel
  self.conv1 = torch.nn.Conv2d(1, 6, 5)
  self.conv2 = torch.nn.Conv2d(6, 16, 3)
  -- an affine operation: y = Wx + b
  self.fc1 = torch.nn.Linear(16 * 6 * 6, 120) -- 6*6 from image dimension
  self.fc2 = torch.nn.Linear(120, 84)
  self.fc3 = torch.nn.Linear(84, 10)
end

function LeNet:forward(x_)
  -- Max pooling over a (2, 2) window
  x_ = F.max_pool2d(F.relu(self.conv1(x_)), { 2, 2 })
  -- If the size is a square you can only specify a single number
  x_ = F.max_pool2d(F.relu(self.conv2(x_)), 2)
  x_ = x_:view(-1, self:num_flat_features(x_))
  x_ = F.relu(self.fc1(x_))
  x_ = F.relu(self.fc2(x_))
  x_ = self.fc3(x_)
  return x_
end

function LeNet:num_flat_features(x_)
  local size = x_:size()["1:"] -- all dimensions except the batch dimension
  local num_features = 1
  for _, s in ipairs(size) do
    num_features = num_features * s
  end
  return num_features
end

-- Recurrent layers
local LSTMTagger = torch.nn.Module:extend("LSTMTagger")

function LSTMTagger:__init(embedding_dim, hidden_dim, vocab_size, tagset_size)
  self.hidden_dim = hidden_dim

  self.word_embeddings = torch.nn.Embedding(vocab_size, embedding_dim)

  -- The LSTM takes word embeddings as inputs, and outputs hidden states with dimensionality hidden_dim.
  self.lstm = torch.nn.LSTM(embedding_dim, hidden_dim)

  -- The linear layer that maps from hidden state space to tag space
  self.hidden2tag = torch.nn.Linear(hidden_dim, tagset_size)
end

function LSTMTagger:forward(sentence)
  local embeds = self.word_embeddings(sentence)
  local lstm_out = self.lstm(embeds:view(#sentence, 1, -1))
  local tag_space = self.hidden2tag(lstm_out:view(#sentence, -1))
  local tag_scores = F.log_softmax(tag_space, { dim = 1 })
  return tag_scores
end

-- Data manipulation layers: max pooling
local my_tensor = torch.rand(1, 6, 6)
print(my_tensor)

local maxpool_layer = torch.nn.MaxPool2d(3)
print(maxpool_layer(my_tensor))

-- normalization
my_tensor = torch.rand(1, 4, 4) * 20 + 5
print(my_tensor)

print(my_tensor:mean())

local norm_layer = torch.nn.BatchNorm1d(4)
local normed_tensor = norm_layer(my_tensor)
print(normed_tensor)

print(normed_tensor:mean())

-- dropout
my_tensor = torch.rand(1, 4, 4)

local dropout = torch.nn.Dropout({ p = 0.4 })
print(dropout(my_tensor))
print(dropout(my_tensor))

return { TinyModel = TinyModel, LeNet = LeNet, LSTMTagger = LSTMTagger }
