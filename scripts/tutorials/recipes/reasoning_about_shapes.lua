-- PyTorch recipe "Reasoning about Shapes in PyTorch" (recipes_source/recipes/reasoning_about_shapes.py)
-- in Lua: output shapes worked out on the meta device, without data, and printed by forward hooks.
--
--   nnrepl scripts/tutorials/recipes/reasoning_about_shapes.lua
--
-- Differences from the original:
-- * timeit.default_timer() is require("time").perf_counter().
-- * `with torch.device("meta"):` is `local _ <close> = torch.device("meta"):__enter__()` in a
--   do ... end block.
-- * Python's f"{module}" of a module is tostring(module) (its printed tree).
local time = require "time"
local F = nn.functional

local t = torch.rand({ 2, 3, 10, 10 }, { device = "meta" })
local conv = nn.Conv2d(3, 5, 2, { device = "meta" })
local start = time.perf_counter()
local out = conv(t)
local finish = time.perf_counter()

print(out)
print(string.format("Time taken: %s", finish - start))

-- Observe that since data is not materialized, passing arbitrarily large
-- inputs will not significantly alter the time taken for shape computation.
local t_large = torch.rand({ 2 ^ 10, 3, 2 ^ 16, 2 ^ 16 }, { device = "meta" })
start = time.perf_counter()
out = conv(t_large)
finish = time.perf_counter()

print(out)
print(string.format("Time taken: %s", finish - start))

-- Consider an arbitrary network such as the following:
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
  x = torch.flatten(x, 1) -- flatten all dimensions except batch
  x = F.relu(self.fc1(x))
  x = F.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

-- We can view the intermediate shapes within an entire network by registering a
-- forward hook to each layer that prints the shape of the output.
local function fw_hook(module, input, output) -- luacheck: ignore input
  print(string.format("Shape of output to %s is %s.", tostring(module), output.shape))
end

-- Any tensor created within this torch.device context manager will be
-- on the meta device.
local net, inp
do
  local _ <close> = torch.device("meta"):__enter__()
  net = Net()
  inp = torch.randn({ 1024, 3, 32, 32 })
end

for name, layer in net:named_modules() do -- luacheck: ignore name
  layer:register_forward_hook(fw_hook)
end

out = net(inp)
