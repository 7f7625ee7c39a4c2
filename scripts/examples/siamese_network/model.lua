-- pytorch/examples siamese_network's SiameseNetwork: torchvision's ResNet-18 (no weights)
-- with a 1-channel first convolution and without its last Linear layer extracts 512 features
-- from each of the two images; a small MLP on the two feature vectors side by side, then a
-- sigmoid, gives the probability that both show the same class. Used by main.lua and by
-- tests/gpu/examples/siamese_network.lua.
local torchvision = require "torchvision"

local SiameseNetwork = nn.Module:extend("SiameseNetwork")

function SiameseNetwork:__init()
  -- the feature extractor
  self.resnet = torchvision.models.resnet18({ weights = nil })

  -- MNIST images have one channel where ResNet expects three (RGB): a new first convolution
  self.resnet.conv1 = nn.Conv2d(1, 64, { kernel_size = { 7, 7 }, stride = { 2, 2 }, padding = { 3, 3 }, bias = false })
  self.fc_in_features = self.resnet.fc.in_features

  -- keep every child but the last (the classifier Linear after the average pooling)
  local children = self.resnet:children()
  self.resnet = nn.Sequential(table.unpack(children, 1, #children - 1))

  -- compares the two images' features
  self.fc = nn.Sequential(
    nn.Linear(self.fc_in_features * 2, 256),
    nn.ReLU({ inplace = true }),
    nn.Linear(256, 1)
  )

  self.sigmoid = nn.Sigmoid()

  -- Xavier-uniform Linear weights, biases 0.01
  self.resnet:apply(function(m) self:init_weights(m) end)
  self.fc:apply(function(m) self:init_weights(m) end)
end

function SiameseNetwork:init_weights(m)
  if nn.isinstance(m, nn.Linear) then
    nn.init.xavier_uniform_(m.weight)
    m.bias.data:fill_(0.01)
  end
end

function SiameseNetwork:forward_once(x)
  local output = self.resnet(x)
  output = output:view(output:size()[0], -1)
  return output
end

function SiameseNetwork:forward(input1, input2)
  -- the features of each image, through the same weights
  local output1 = self:forward_once(input1)
  local output2 = self:forward_once(input2)

  -- side by side: (batch, 1024)
  local output = torch.cat({ output1, output2 }, 1)

  output = self.fc(output)

  output = self.sigmoid(output)

  return output
end

return SiameseNetwork
