-- torch.random: the generator functions under PyTorch's module name, and fork_rng. One
-- counter-based generator serves every device here, so its state is all fork_rng keeps.
--   local _ <close> = torch.random.fork_rng()     -- draws inside leave the generator as it was
--   torch.random.fork_rng(function() ... end)
local torch = require "torch"
local U = require "nn_util"

local random = torch.random or {}
torch.random = random
for _, name in ipairs({ "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state" }) do
  random[name] = function(...) return torch[name](...) end
end
setmetatable(random, { __index = function(_, k) if k == "default_generator" then return torch.default_generator end end })

-- fork_rng({devices=, enabled=true, device_type="cuda"}[, fn])
function random.fork_rng(...)
  local fn, args, n = U.pop_fn(...)
  local o = U.parse("fork_rng", { { "devices" }, { "enabled", true }, { "_caller", "fork_rng" }, { "_devices_kw", "devices" },
    { "device_type", "cuda" } }, table.unpack(args, 1, n))
  if o.devices ~= nil and type(o.devices) ~= "table" then U.errorf("fork_rng: devices must be a list, got %s", U.typename(o.devices)) end
  if not o.enabled then return U.scoped(function() end, fn) end
  local state = torch.get_rng_state()
  return U.scoped(function() torch.set_rng_state(state) end, fn)
end

return random
