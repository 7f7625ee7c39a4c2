-- `with torch.device("meta"):` in Lua: local _ <close> = torch.device("meta"):__enter__().
-- Inside the block the factories (and so the modules built there) put their tensors on that
-- device unless given device= (set_default_device's state); leaving restores the previous one.
-- A Lua value cannot act when a <close> variable is declared, so entering is the explicit call.
local torch = require "torch"

local device_mt = getmetatable(torch.device("cpu"))
local index = device_mt.__index

local guard_mt = {
  __name = "torch.device context",
  __close = function(g)
    if g.done then return end
    g.done = true
    torch.set_default_device(g.previous)
  end,
}

local function enter(dev)
  local previous = torch.get_default_device()
  torch.set_default_device(dev)
  return setmetatable({ device = dev, previous = previous }, guard_mt)
end

device_mt.__index = function(d, k)
  if k == "__enter__" then return enter end
  return index(d, k)
end
