-- pytorch/examples mnist's Net: two 3x3 convolutions (32 and 64 channels), a 2x2 max pool,
-- Dropout(0.25), Linear 9216 -> 128, Dropout(0.5), Linear 128 -> 10 and log_softmax. Used by
-- main.lua and by tests/gpu/examples/mnist.lua.
local Net = nn.Module:extend("Net")

function Net:__init()
  self.conv1 = nn.Conv2d(1, 32, 3, 1)
  self.conv2 = nn.Conv2d(32, 64, 3, 1)
  self.dropout1 = nn.Dropout(0.25)
  self.dropout2 = nn.Dropout(0.5)
  self.fc1 = nn.Linear(9216, 128)
  self.fc2 = nn.Linear(128, 10)
end

function Net:forward(x)
  x = self.conv1(x)
  x = F.relu(x)
  x = self.conv2(x)
  x = F.relu(x)
  x = F.max_pool2d(x, 2)
  x = self.dropout1(x)
  x = torch.flatten(x, 1)
  x = self.fc1(x)
  x = F.relu(x)
  x = self.dropout2(x)
  x = self.fc2(x)
  local output = F.log_softmax(x, { dim = 1 })
  return output
end

return Net
