-- PyTorch recipe "Saving and loading models across devices in PyTorch"
-- (recipes_source/recipes/save_load_across_devices.py) in Lua: a state_dict saved and loaded with
-- map_location to the CPU and, where there is a GPU, to CUDA.
--
--   nnrepl scripts/tutorials/recipes/save_load_across_devices.lua
--
-- Differences from the original:
-- * The Net class comes from cifar_net.lua (the CIFAR-10 tutorial's CNN, the recipe's own).
-- * The GPU sections (4 and 5) run only under torch.cuda.is_available(): the recipe needs a GPU.
-- * Section 6 saves net.module's state_dict: net is wrapped in nn.DataParallel first (on the CPU
--   DataParallel runs the module as it is, as PyTorch's does without GPUs).
-- * (extra) each load prints where the weights landed and the largest difference from net.

-- 2. Define and initialize the neural network
local Net = require "cifar_net" -- the recipe's class Net(nn.Module), as the CIFAR-10 tutorial's

local net = Net()
print(net)

local function report(what, model)
  local d = 0
  for name, p in pairs(net:state_dict()) do d = math.max(d, (p - model:state_dict()[name]:cpu()):abs():max():item()) end
  print(string.format("%s: fc1.weight on %s, max difference %g", what, model.fc1.weight.device, d))
end

-- 3. Save on GPU, Load on CPU
-- Specify a path to save to
local PATH = "model.pt"

-- Save
torch.save(net:state_dict(), PATH)

-- Load
local device = torch.device("cpu")
local model = Net()
model:load_state_dict(torch.load(PATH, { map_location = device }))
report("load on CPU", model)

if torch.cuda.is_available() then
  -- 4. Save on GPU, Load on GPU
  -- Save
  torch.save(net:state_dict(), PATH)

  -- Load
  device = torch.device("cuda")
  model = Net()
  model:load_state_dict(torch.load(PATH))
  model:to(device)
  report("load on GPU", model)

  -- 5. Save on CPU, Load on GPU
  -- Save
  torch.save(net:state_dict(), PATH)

  -- Load
  device = torch.device("cuda")
  model = Net()
  -- Choose whatever GPU device number you want
  model:load_state_dict(torch.load(PATH, { map_location = "cuda:0" }))
  -- Make sure to call input = input.to(device) on any input tensors that you feed to the model
  model:to(device)
  report("load on cuda:0", model)
end

-- 6. Saving torch.nn.DataParallel Models
net = nn.DataParallel(net)
-- Save
torch.save(net.module:state_dict(), PATH)

-- Load to whatever device you want
model = Net()
model:load_state_dict(torch.load(PATH, { map_location = "cpu" }))
net = net.module
report("DataParallel's module", model)
