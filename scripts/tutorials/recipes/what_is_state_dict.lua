-- PyTorch recipe "What is a state_dict in PyTorch" (recipes_source/recipes/what_is_state_dict.py)
-- in Lua: a CIFAR-style CNN and an SGD optimizer, and the keys of their state_dicts.
--
--   nnrepl scripts/tutorials/recipes/what_is_state_dict.lua
--
-- Differences from the original:
-- * print(a, "\t", b) is written out as Python prints it (a space between the items).
-- * The optimizer's entries print through pyformat (Python's str of a dict); a Lua table keeps no
--   key order, so a param group's keys come out sorted, the empty `state` prints as [] and the
--   group has no foreach / fused entries (nnrepl has one implementation of each optimizer).
local pf = require "pyformat"
local F = nn.functional

-- 2. Define and initialize the neural network
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
  x = x:flatten({ start_dim = 1 })
  x = F.relu(self.fc1(x))
  x = F.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

local net = Net()
print(net)

-- 3. Initialize the optimizer
local optimizer = optim.SGD(net:parameters(), { lr = 0.001, momentum = 0.9 })

-- 4. Access the model and optimizer state_dict
-- Print model's state_dict
print("Model's state_dict:")
for param_tensor in pairs(net:state_dict()) do
  print(param_tensor .. " \t " .. tostring(net:state_dict()[param_tensor]:size()))
end

print()

-- Print optimizer's state_dict
print("Optimizer's state_dict:")
for _, var_name in ipairs({ "state", "param_groups" }) do -- Python's dict order
  print(var_name .. " \t " .. pf.format(optimizer:state_dict()[var_name], ""))
end
