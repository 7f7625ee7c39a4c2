-- generator= on the random functions (torch_tensor_random.lua): draws come from the generator
-- given, depend on its seed and on what it has given before, and leave torch's own untouched.
local T = ...

local function gen(seed) return torch.Generator():manual_seed(seed) end

T.test("a generator's draws depend on its seed only, and torch's generator does not move", function()
  torch.manual_seed(0)
  local want = torch.randn(4)
  torch.manual_seed(0)
  local a = torch.randn(6, { generator = gen(42) })
  T.check(torch.equal(torch.randn(4), want), "torch's generator did not move")
  T.check(torch.equal(a, torch.randn(6, { generator = gen(42) })), "same seed, same draws")
  T.check(not torch.equal(a, torch.randn(6, { generator = gen(43) })), "another seed, other draws")
  T.check(not torch.equal(a, torch.randn(6)), "not torch's draws")
  local g = gen(7)
  local u = torch.cat({ torch.rand(3, { generator = g }), torch.rand(2, { generator = g }) })
  T.check(torch.equal(u, torch.rand(5, { generator = gen(7) })), "draws continue where the last ended (counter-based)")
  T.eq(g:get_state():tolist()[9], 5, "the generator counted five draws (its offset, bytes 8-15)")
end)

T.test("every random function takes generator=", function()
  local function same(name, f)
    T.check(torch.equal(f(gen(5)), f(gen(5))) and not torch.equal(f(gen(5)), f(gen(6))), name)
  end
  same("rand", function(g) return torch.rand(2, 3, { generator = g, dtype = torch.float64 }) end)
  same("randint", function(g) return torch.randint(0, 1000, { 8 }, { generator = g }) end)
  same("normal", function(g) return torch.normal(0.0, 1.0, { 6 }, { generator = g }) end)
  same("bernoulli", function(g) return torch.bernoulli(torch.full({ 64 }, 0.5), { generator = g }) end)
  same("multinomial", function(g) return torch.multinomial(torch.ones(50), 10, { generator = g }) end)
  same("Tensor.multinomial", function(g) return torch.ones(50):multinomial(10, { generator = g }) end)
  for _, c in ipairs({ { "uniform_", { -1, 1 } }, { "normal_", { 0, 2 } }, { "exponential_", { 1.5 } }, { "cauchy_", { 0, 1 } },
    { "log_normal_", { 0, 1 } }, { "geometric_", { 0.3 } }, { "random_", { 0, 100 } }, { "bernoulli_", { 0.5 } } }) do
    same("Tensor." .. c[1], function(g)
      local args = { table.unpack(c[2]) }
      args[#args + 1] = { generator = g }
      local t = torch.empty(32, { dtype = torch.float64 })
      return t[c[1]](t, table.unpack(args))
    end)
  end
  for _, name in ipairs({ "uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
    "kaiming_normal_", "orthogonal_" }) do
    same("nn.init." .. name, function(g) return nn.init[name](torch.empty(4, 5), { generator = g }) end)
  end
  T.check(torch.equal(torch.rand(4, { generator = gen(9) }), torch.empty(4):uniform_(0, 1, { generator = gen(9) })),
    "rand and uniform_ draw alike")
  local gc = torch.Generator("cuda")
  T.eq({ tostring(gc.device), tostring(gen(1).device) }, { "cuda", "cpu" }, "a generator keeps the device it was made for")
  if torch.cuda.is_available() then
    local on = torch.randn(5, { generator = gc:manual_seed(4), device = "cuda" })
    T.check(torch.equal(on:cpu(), torch.randn(5, { generator = gen(4) })), "a GPU draw from a generator equals the CPU's")
  end
end)

T.test("random_split and SubsetRandomSampler take it either way; errors leave torch's generator in use", function()
  local ds = torch.utils.data.TensorDataset(torch.arange(20))
  local function firsts(parts) return parts[1].indices end
  T.eq(firsts(torch.utils.data.random_split(ds, { 15, 5 }, { generator = gen(3) })),
    firsts(torch.utils.data.random_split(ds, { 15, 5 }, gen(3))), "random_split: {generator=} as the positional one")
  local s1 = torch.utils.data.SubsetRandomSampler({ 0, 1, 2, 3, 4, 5 }, { generator = gen(1) })
  local s2 = torch.utils.data.SubsetRandomSampler({ 0, 1, 2, 3, 4, 5 }, gen(1))
  T.eq(s1:indices(), s2:indices(), "SubsetRandomSampler: {generator=} as the positional one")
  T.raises(function() torch.utils.data.random_split(ds, { 15, 5 }, { seed = 1 }) end, "~unknown keyword 'seed'", "an unknown key")
  T.raises(function() torch.randn(2, { generator = 5 }) end, "~torch.Generator expected", "not a generator")
  torch.manual_seed(0)
  local want = torch.rand(3)
  torch.manual_seed(0)
  T.raises(function() torch.rand(-1, { generator = gen(1) }) end, "~negative", "the draw's own error comes through")
  T.check(torch.equal(torch.rand(3), want), "torch's generator is back in use after the error")
end)
