-- Document 003's (../shared/seeds/003_*.txt) CIFAR-10 CNN, the Net of scripts/doc003_cifar_dp.lua:
-- conv 3->6 5x5, pool, conv 6->16 5x5, pool, fc 400->120->84->10. bench/cpu_train_step.lua uses
-- it too: `local Net = require "doc003_net"` (see scripts/doc000_net.lua on package.path).
local nn = torch.nn

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
  x = self.pool(torch.relu(self.conv1(x)))
  x = self.pool(torch.relu(self.conv2(x)))
  x = x:view(-1, 16 * 5 * 5)
  x = torch.relu(self.fc1(x))
  x = torch.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

return Net
