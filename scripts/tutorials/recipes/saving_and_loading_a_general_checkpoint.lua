-- PyTorch recipe "Saving and loading a general checkpoint in PyTorch"
-- (recipes_source/recipes/saving_and_loading_a_general_checkpoint.py) in Lua: the model's and the
-- optimizer's state_dicts, the epoch and the loss in one file, loaded back.
--
--   nnrepl scripts/tutorials/recipes/saving_and_loading_a_general_checkpoint.lua
--
-- Differences from the original:
-- * The Net class comes from cifar_net.lua (the CIFAR-10 tutorial's CNN, the recipe's own).
-- * The dictionary is a Lua table; torch.save writes it (nnrepl's format; tensors as safetensors).
-- * As in the recipe, the second optimizer is built over net's parameters (not model's).
-- * (extra) the last line prints what was loaded: epoch, loss, the number of model entries and
--   of optimizer parameters, and the largest difference between net and model.

-- 2. Define and initialize the neural network
local Net = require "cifar_net" -- the recipe's class Net(nn.Module), as the CIFAR-10 tutorial's

local net = Net()
print(net)

-- 3. Initialize the optimizer
local optimizer = optim.SGD(net:parameters(), { lr = 0.001, momentum = 0.9 })

-- 4. Save the general checkpoint
-- Additional information
local EPOCH = 5
local PATH = "model.pt"
local LOSS = 0.4

torch.save({
  epoch = EPOCH,
  model_state_dict = net:state_dict(),
  optimizer_state_dict = optimizer:state_dict(),
  loss = LOSS,
}, PATH)

-- 5. Load the general checkpoint
local model = Net()
optimizer = optim.SGD(net:parameters(), { lr = 0.001, momentum = 0.9 })

local checkpoint = torch.load(PATH)
model:load_state_dict(checkpoint["model_state_dict"])
optimizer:load_state_dict(checkpoint["optimizer_state_dict"])
local epoch = checkpoint["epoch"]
local loss = checkpoint["loss"]

model:eval()
-- - or -
model:train()

-- (extra) what came back
local n = 0
for _ in pairs(checkpoint["model_state_dict"]) do n = n + 1 end
local diff = 0
for name, p in pairs(net:state_dict()) do diff = math.max(diff, (p - model:state_dict()[name]):abs():max():item()) end
print(string.format("epoch %d, loss %s, %d model entries, %d optimizer parameters, lr %s, momentum %s, max difference %g",
  epoch, loss, n, #optimizer.param_groups[1].params, optimizer.param_groups[1].lr, optimizer.param_groups[1].momentum, diff))
