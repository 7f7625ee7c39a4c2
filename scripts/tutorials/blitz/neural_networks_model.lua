-- The LeNet of pytorch/tutorials beginner_source/blitz/neural_networks_tutorial.py, its Net class
-- (neural_networks_tutorial.lua and the parity test tests/gpu/tutorials/ require it).
local Net = nn.Module:extend("Net")

function Net:__init()
  -- 1 input image channel, 6 output channels, 5x5 square convolution kernel
  self.conv1 = nn.Conv2d(1, 6, 5)
  self.conv2 = nn.Conv2d(6, 16, 5)
  -- an affine operation: y = Wx + b
  self.fc1 = nn.Linear(16 * 5 * 5, 120) -- 5*5 from image dimension
  self.fc2 = nn.Linear(120, 84)
  self.fc3 = nn.Linear(84, 10)
end

function Net:forward(input)
  local c1 = F.relu(self.conv1(input))  -- C1: (N, 6, 28, 28)
  local s2 = F.max_pool2d(c1, { 2, 2 }) -- S2: (N, 6, 14, 14)
  local c3 = F.relu(self.conv2(s2))     -- C3: (N, 16, 10, 10)
  local s4 = F.max_pool2d(c3, 2)        -- S4: (N, 16, 5, 5)
  s4 = torch.flatten(s4, 1)             -- (N, 400)
  local f5 = F.relu(self.fc1(s4))       -- F5: (N, 120)
  local f6 = F.relu(self.fc2(f5))       -- F6: (N, 84)
  local output = self.fc3(f6)           -- (N, 10)
  return output
end

return Net
