-- PyTorch recipe "What is a state_dict in PyTorch" (recipes_source/recipes/what_is_state_dict.py)
-- in Lua: a CIFAR-style CNN and an SGD optimizer, and the keys of their state_dicts.
--
--   nnrepl scripts/tutorials/recipes/what_is_state_dict.lua
--
-- Differences from the original:
-- * The Net class comes from cifar_net.lua (the CIFAR-10 tutorial's CNN, the recipe's own).
-- * print(a, "\t", b) is written out as Python prints it (a space between the items).
-- * The optimizer's entries print through pyformat (Python's str of a dict).
local pf = require "pyformat"

-- 2. Define and initialize the neural network
local Net = require "cifar_net" -- the recipe's class Net(nn.Module), as the CIFAR-10 tutorial's

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
