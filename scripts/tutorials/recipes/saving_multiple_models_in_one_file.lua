-- PyTorch recipe "Saving and loading multiple models in one file using PyTorch"
-- (recipes_source/recipes/saving_multiple_models_in_one_file.py) in Lua: two models and their
-- optimizers in one checkpoint, loaded into fresh ones.
--
--   nnrepl scripts/tutorials/recipes/saving_multiple_models_in_one_file.lua
--
-- Differences from the original:
-- * The Net class comes from cifar_net.lua (the CIFAR-10 tutorial's CNN, the recipe's own).
-- * The dictionary is a Lua table written by torch.save (nnrepl's format).
-- * As in the recipe, the loaded optimizer states go into optimizerA / optimizerB.
-- * (extra) the last line prints the checkpoint's keys and checks that modelA / modelB equal
--   netA / netB.

-- 2. Define and initialize the neural network
local Net = require "cifar_net" -- the recipe's class Net(nn.Module), as the CIFAR-10 tutorial's

local netA = Net()
local netB = Net()

-- 3. Initialize the optimizer
local optimizerA = optim.SGD(netA:parameters(), { lr = 0.001, momentum = 0.9 })
local optimizerB = optim.SGD(netB:parameters(), { lr = 0.001, momentum = 0.9 })

-- 4. Save multiple models
-- Specify a path to save to
local PATH = "model.pt"

torch.save({
  modelA_state_dict = netA:state_dict(),
  modelB_state_dict = netB:state_dict(),
  optimizerA_state_dict = optimizerA:state_dict(),
  optimizerB_state_dict = optimizerB:state_dict(),
}, PATH)

-- 5. Load multiple models
local modelA = Net()
local modelB = Net()
local optimModelA = optim.SGD(modelA:parameters(), { lr = 0.001, momentum = 0.9 }) -- luacheck: ignore
local optimModelB = optim.SGD(modelB:parameters(), { lr = 0.001, momentum = 0.9 }) -- luacheck: ignore

local checkpoint = torch.load(PATH)
modelA:load_state_dict(checkpoint["modelA_state_dict"])
modelB:load_state_dict(checkpoint["modelB_state_dict"])
optimizerA:load_state_dict(checkpoint["optimizerA_state_dict"])
optimizerB:load_state_dict(checkpoint["optimizerB_state_dict"])

modelA:eval()
modelB:eval()
-- - or -
modelA:train()
modelB:train()

-- (extra) the file's keys and the loaded weights against the saved ones
local keys = {}
for k in pairs(checkpoint) do keys[#keys + 1] = k end
table.sort(keys)
local function max_diff(a, b)
  local d = 0
  for name, p in pairs(a:state_dict()) do d = math.max(d, (p - b:state_dict()[name]):abs():max():item()) end
  return d
end
print(string.format("keys: %s; modelA vs netA %g, modelB vs netB %g, netA vs netB %s", table.concat(keys, " "),
  max_diff(modelA, netA), max_diff(modelB, netB), max_diff(netA, netB) > 0 and "differ" or "equal"))
