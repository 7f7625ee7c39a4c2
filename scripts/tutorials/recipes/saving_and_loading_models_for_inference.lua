-- PyTorch recipe "Saving and loading models for inference in PyTorch"
-- (recipes_source/recipes/saving_and_loading_models_for_inference.py) in Lua: a model saved and
-- loaded through its state_dict, then saved and loaded whole.
--
--   nnrepl scripts/tutorials/recipes/saving_and_loading_models_for_inference.lua
--
-- Differences from the original:
-- * torch.save(net, PATH) stores the class name and the state (nnrepl's format, not a pickle);
--   torch.load needs the class defined, and weights_only = false as PyTorch 2.6+ does for a
--   whole module.
-- * (extra) the last lines check that both loaded models compute what net does on one input.
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
local optimizer = optim.SGD(net:parameters(), { lr = 0.001, momentum = 0.9 }) -- luacheck: ignore

-- 4. Save and load the model via state_dict
-- Specify a path
local PATH = "state_dict_model.pt"

-- Save
torch.save(net:state_dict(), PATH)

-- Load
local model = Net()
model:load_state_dict(torch.load(PATH))
model:eval()
local from_state_dict = model

-- 5. Save and load entire model
-- Specify a path
PATH = "entire_model.pt"

-- Save
torch.save(net, PATH)

-- Load
model = torch.load(PATH, { weights_only = false })
model:eval()

-- (extra) both loaded models against the saved one
local _ <close> = torch.no_grad()
torch.manual_seed(0)
local x = torch.randn(2, 3, 32, 32)
local want = net(x)
print(string.format("state_dict reload: max difference %g; entire model reload: %s, training=%s, max difference %g",
  (from_state_dict(x) - want):abs():max():item(), model.__name, model.training, (model(x) - want):abs():max():item()))
