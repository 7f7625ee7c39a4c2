-- The LeNet-5 variant of pytorch/tutorials beginner_source/introyt/trainingyt.py, its
-- GarmentClassifier class (trainingyt.lua and the parity test tests/gpu/tutorials/ require it).
local GarmentClassifier = nn.Module:extend("GarmentClassifier")

function GarmentClassifier:__init()
  self.conv1 = nn.Conv2d(1, 6, 5)
  self.pool = nn.MaxPool2d(2, 2)
  self.conv2 = nn.Conv2d(6, 16, 5)
  self.fc1 = nn.Linear(16 * 4 * 4, 120)
  self.fc2 = nn.Linear(120, 84)
  self.fc3 = nn.Linear(84, 10)
end

function GarmentClassifier:forward(x)
  x = self.pool(F.relu(self.conv1(x)))
  x = self.pool(F.relu(self.conv2(x)))
  x = x:view(-1, 16 * 4 * 4)
  x = F.relu(self.fc1(x))
  x = F.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

return GarmentClassifier
