-- PyTorch recipe "Warmstarting model using parameters from a different model in PyTorch"
-- (recipes_source/recipes/warmstarting_model_using_parameters_from_a_different_model.py) in Lua:
-- model A's state_dict loaded into model B with strict = false.
--
--   nnrepl scripts/tutorials/recipes/warmstarting_model_using_parameters_from_a_different_model.lua
--
-- Differences from the original:
-- * load_state_dict's result is printed (a notebook shows it: <All keys matched successfully>).
-- * (extra) the last lines load a partial state_dict (fc3 left out, one key renamed) the same
--   way and print the missing and unexpected keys, then check that netB now equals netA.
local F = nn.functional

-- 2. Define and initialize the neural network A and B
local NetA = nn.Module:extend("NetA")
function NetA:__init()
  self.conv1 = nn.Conv2d(3, 6, 5)
  self.pool = nn.MaxPool2d(2, 2)
  self.conv2 = nn.Conv2d(6, 16, 5)
  self.fc1 = nn.Linear(16 * 5 * 5, 120)
  self.fc2 = nn.Linear(120, 84)
  self.fc3 = nn.Linear(84, 10)
end

function NetA:forward(x)
  x = self.pool(F.relu(self.conv1(x)))
  x = self.pool(F.relu(self.conv2(x)))
  x = x:flatten({ start_dim = 1 })
  x = F.relu(self.fc1(x))
  x = F.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

local netA = NetA()

local NetB = nn.Module:extend("NetB")
function NetB:__init()
  self.conv1 = nn.Conv2d(3, 6, 5)
  self.pool = nn.MaxPool2d(2, 2)
  self.conv2 = nn.Conv2d(6, 16, 5)
  self.fc1 = nn.Linear(16 * 5 * 5, 120)
  self.fc2 = nn.Linear(120, 84)
  self.fc3 = nn.Linear(84, 10)
end

function NetB:forward(x)
  x = self.pool(F.relu(self.conv1(x)))
  x = self.pool(F.relu(self.conv2(x)))
  x = x:flatten({ start_dim = 1 })
  x = F.relu(self.fc1(x))
  x = F.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

local netB = NetB()

-- 3. Save model A
-- Specify a path to save to
local PATH = "model.pt"

torch.save(netA:state_dict(), PATH)

-- 4. Load into model B
print(netB:load_state_dict(torch.load(PATH), { strict = false }))

-- (extra) a partial state_dict: fc3 left out, fc2.bias renamed
local partial = torch.load(PATH)
partial["fc3.weight"], partial["fc3.bias"] = nil, nil
partial["fc2.bias_renamed"], partial["fc2.bias"] = partial["fc2.bias"], nil
print(NetB():load_state_dict(partial, { strict = false }))
local d = 0
for name, p in pairs(netA:state_dict()) do d = math.max(d, (p - netB:state_dict()[name]):abs():max():item()) end
print(string.format("netB vs netA: max difference %g", d))
