-- PyTorch recipe "Changing default device" (recipes_source/recipes/changing_default_device.py) in
-- Lua: device-agnostic code, the torch.device context manager and torch.set_default_device.
--
--   nnrepl scripts/tutorials/recipes/changing_default_device.lua
--
-- Differences from the original:
-- * The two CUDA sections run only under torch.cuda.is_available() (the recipe assumes a GPU);
--   on a machine without one, the same two sections run with the "meta" device instead, so
--   what they show (factories and modules following the default device) is still printed.
-- * `with torch.device('cuda'):` is `local _ <close> = torch.device(dev):__enter__()`.
-- * The last line (extra) puts the default back on the CPU.
local USE_CUDA = false

local mod = nn.Linear(20, 30)
if USE_CUDA then
  mod:cuda()
end

local device = "cpu"
if USE_CUDA then
  device = "cuda"
end
local inp = torch.randn(128, 20, { device = device })
print(mod(inp).device)

local dev = torch.cuda.is_available() and "cuda" or "meta" -- the recipe: 'cuda'

-- PyTorch now also has a context manager which can take care of the
-- device transfer automatically. Here is an example:
do
  local _ <close> = torch.device(dev):__enter__()
  mod = nn.Linear(20, 30)
  print(mod.weight.device)
  print(mod(torch.randn(128, 20)).device)
end

-- You can also set it globally like this:
torch.set_default_device(dev)

mod = nn.Linear(20, 30)
print(mod.weight.device)
print(mod(torch.randn(128, 20)).device)

torch.set_default_device("cpu") -- (extra)
