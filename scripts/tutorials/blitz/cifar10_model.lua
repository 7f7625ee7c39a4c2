-- The CNN of pytorch/tutorials beginner_source/blitz/cifar10_tutorial.py, its Net class
-- (cifar10_tutorial.lua and the parity test tests/gpu/tutorials/ require it).
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
  x = torch.flatten(x, 1) -- flatten all dimensions except batch
  x = F.relu(self.fc1(x))
  x = F.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

return Net
