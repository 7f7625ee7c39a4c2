-- PyTorch recipe "Saving and loading models for inference in PyTorch"
-- (recipes_source/recipes/saving_and_loading_models_for_inference.py) in Lua: a model saved and
-- loaded through its state_dict, then saved and loaded whole.
--
--   nnrepl scripts/tutorials/recipes/saving_and_loading_models_for_inference.lua
--
-- Differences from the original:
-- * The Net class comes from cifar_net.lua (the CIFAR-10 tutorial's CNN, the recipe's own).
-- * torch.save(net, PATH) stores the class name and the state (nnrepl's format, not a pickle);
--   torch.load needs the class defined, and weights_only = false as PyTorch 2.6+ does for a
--   whole module.
-- * (extra) the last lines check that both loaded models compute what net does on one input.

-- 2. Define and initialize the neural network
local Net = require "cifar_net" -- the recipe's class Net(nn.Module), as the CIFAR-10 tutorial's

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
