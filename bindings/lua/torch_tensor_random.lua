-- generator= on the random functions written in Lua (the C ones, rand, randn, randint, normal,
-- uniform_ and normal_, read it themselves): torch.bernoulli(p, {generator = g}) draws from
-- torch.Generator g (its seed and how many it has given) instead of torch's generator. Each function
-- below takes the option whatever its own arguments; torch._with_generator runs it with g in use.
-- It runs after torch_distributions.lua and torch_tensor_ops2.lua (torch_*.lua run in name order),
-- which define some of them.
local torch = require "torch"
local init = require "nn_init"

-- f, taking generator= in a trailing option table (a plain table with that key)
local function with_generator(f)
  return function(...)
    local n = select("#", ...)
    local opts = n > 0 and select(n, ...) or nil
    if type(opts) ~= "table" or getmetatable(opts) ~= nil or opts.generator == nil then return f(...) end
    local rest, any = {}, false
    for k, v in pairs(opts) do
      if k ~= "generator" then rest[k], any = v, true end
    end
    local args = table.pack(...)
    args[n] = any and rest or nil
    return torch._with_generator(opts.generator, f, table.unpack(args, 1, any and n or n - 1))
  end
end

local function wrap(t, names)
  for _, name in ipairs(names) do
    if t[name] then t[name] = with_generator(t[name]) end
  end
end

wrap(torch, { "bernoulli", "poisson", "multinomial" })
wrap(torch.Tensor, { "random_", "exponential_", "geometric_", "cauchy_", "log_normal_", "bernoulli_",
  "bernoulli", "multinomial" })
wrap(init, { "uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
  "orthogonal_", "sparse_" })
