-- torch.distributions against their formulas in Lua's math and sample statistics (fixed
-- seeds, tolerances of several standard errors); torch.multinomial / bernoulli; activation
-- checkpointing against the plain pass; the generator's state; torch.compile.
local T = ...
local D = torch.distributions
local f64 = { dtype = torch.float64 }

T.test("Normal, Uniform: log_prob, entropy, kl, samples", function()
  local loc, scale = { 0.5, -1.0 }, { 2.0, 0.5 }
  local n = D.Normal(torch.tensor(loc, f64), torch.tensor(scale, f64))
  local v = { 1.5, -0.2 }
  local lp, ent = n:log_prob(torch.tensor(v, f64)):tolist(), n:entropy():tolist()
  for i = 1, 2 do
    T.near(lp[i], -((v[i] - loc[i]) ^ 2) / (2 * scale[i] ^ 2) - math.log(scale[i]) - 0.5 * math.log(2 * math.pi), 1e-12, "Normal log_prob")
    T.near(ent[i], 0.5 + 0.5 * math.log(2 * math.pi) + math.log(scale[i]), 1e-12, "Normal entropy")
  end
  local q = D.Normal(0.0, 1.0)
  local kl = D.kl_divergence(n, D.Normal(torch.zeros(2, f64), torch.ones(2, f64))):tolist()
  for i = 1, 2 do T.near(kl[i], math.log(1 / scale[i]) + (scale[i] ^ 2 + loc[i] ^ 2) / 2 - 0.5, 1e-12, "kl(Normal, N(0, 1))") end
  torch.manual_seed(111)
  local s = n:sample({ 40000 })
  T.eq(s:size(), torch.Size({ 40000, 2 }), "sample_shape first")
  T.near(s:mean(0):tolist(), loc, 0.05, "sample mean")
  T.near(s:std(0):tolist(), scale, 0.05, "sample std")
  local mu = torch.tensor({ 0.3 }):requires_grad_()
  local sigma = torch.tensor({ 1.5 }):requires_grad_()
  D.Normal(mu, sigma):rsample({ 100 }):mean():backward()
  T.near(mu.grad:item(), 1.0, 1e-6, "rsample: d mean / d loc = 1")
  T.check(sigma.grad ~= nil, "rsample: scale gets a gradient")
  T.check(not D.Normal(mu, sigma):sample().requires_grad, "sample: no gradient")
  T.near(q:cdf(torch.tensor({ 0.0 })):item(), 0.5, 1e-7, "cdf")
  local u = D.Uniform(-1.0, 3.0)
  T.near(u:log_prob(torch.tensor({ 0.0, 5.0 })):tolist(), { -math.log(4), -math.huge }, 1e-6, "Uniform log_prob")
  T.near(u:entropy():item(), math.log(4), 1e-6, "Uniform entropy")
  local us = u:sample({ 20000 })
  T.check(us:min():item() >= -1 and us:max():item() < 3, "Uniform samples in [low, high)")
  T.near(us:mean():item(), 1.0, 0.05, "Uniform sample mean")
  T.raises(function() D.Normal(0.0, -1.0) end, "~Expected parameter scale to satisfy the constraint")
  T.eq(tostring(D.Normal(0.0, 1.0)), "Normal(loc: tensor(0.), scale: tensor(1.))", "repr")
end)

T.test("Bernoulli, Categorical, multinomial, bernoulli", function()
  local b = D.Bernoulli({ logits = torch.tensor({ 0.0, 2.0 }, f64) })
  local p2 = 1 / (1 + math.exp(-2))
  T.near(b.probs:tolist(), { 0.5, p2 }, 1e-12, "probs from logits")
  T.near(b:log_prob(torch.tensor({ 1.0, 0.0 }, f64)):tolist(), { math.log(0.5), math.log(1 - p2) }, 1e-12, "Bernoulli log_prob")
  T.near(b:entropy():tolist(), { math.log(2), -(p2 * math.log(p2) + (1 - p2) * math.log(1 - p2)) }, 1e-12, "Bernoulli entropy")
  local ps = { 0.1, 0.2, 0.7 }
  local c = D.Categorical({ probs = torch.tensor({ 1.0, 2.0, 7.0 }, f64) })
  T.near(c.probs:tolist(), ps, 1e-12, "probs normalised")
  T.near(c:log_prob(torch.tensor({ 0, 2 })):tolist(), { math.log(0.1), math.log(0.7) }, 1e-12, "Categorical log_prob")
  T.near(c:entropy():item(), -(0.1 * math.log(0.1) + 0.2 * math.log(0.2) + 0.7 * math.log(0.7)), 1e-12, "Categorical entropy")
  local c2 = D.Categorical({ logits = torch.tensor({ 0.0, 0.0, 0.0 }, f64) })
  T.near(D.kl_divergence(c, c2):item(), 0.1 * math.log(0.3) + 0.2 * math.log(0.6) + 0.7 * math.log(2.1), 1e-12, "kl(Categorical)")
  torch.manual_seed(112)
  local s = c:sample({ 30000 })
  local freq = (torch.bincount(s, { minlength = 3 }):double() / 30000):tolist()
  T.near(freq, ps, 0.01, "Categorical sample frequencies")
  local rows = D.Categorical({ probs = torch.tensor({ { 1.0, 0.0 }, { 0.0, 1.0 } }) }):sample({ 5 })
  T.eq(rows:size(), torch.Size({ 5, 2 }), "a batch of categoricals")
  T.eq(rows:select(1, 0):tolist(), { 0, 0, 0, 0, 0 }, "row 0 always 0")
  T.eq(rows:select(1, 1):tolist(), { 1, 1, 1, 1, 1 }, "row 1 always 1")
  local m = torch.multinomial(torch.tensor({ { 1.0, 1.0, 1.0, 1.0 } }), 4)
  local sorted = m:sort()
  T.eq(sorted:tolist(), { { 0, 1, 2, 3 } }, "without replacement: each index once")
  T.raises(function() torch.multinomial(torch.tensor({ 1.0, 0.0 }), 2) end, "~not enough non-negative category to sample")
  local bs = torch.bernoulli(torch.full({ 20000 }, 0.3))
  T.near(bs:mean():item(), 0.3, 0.015, "bernoulli frequency")
end)

T.test("checkpoint: the same values and gradients, dropout included", function()
  torch.manual_seed(113)
  local net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Dropout(0.4), nn.Linear(16, 3))
  local x = torch.randn(6, 4):requires_grad_()
  local function run(use)
    net:zero_grad()
    x.grad = nil
    torch.manual_seed(9)
    local y = use and torch.utils.checkpoint.checkpoint(net, x) or net(x)
    y:pow(2):sum():backward()
    local g = { x.grad:clone() }
    for _, p in ipairs(net:parameters()) do g[#g + 1] = p.grad:clone() end
    return y:detach(), g
  end
  local y1, g1 = run(false)
  local y2, g2 = run(true)
  T.near(y2:tolist(), y1:tolist(), 0, "same output")
  for i = 1, #g1 do T.near(g2[i]:tolist(), g1[i]:tolist(), 1e-6, "same gradient " .. i) end
  local seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
  local z = torch.randn(3, 4)
  T.near(torch.utils.checkpoint.checkpoint_sequential(seq, 2, z):tolist(), seq(z):tolist(), 1e-6, "checkpoint_sequential")
  local state = torch.get_rng_state()
  local a = torch.randn(4)
  torch.set_rng_state(state)
  T.near(torch.randn(4):tolist(), a:tolist(), 0, "get_rng_state / set_rng_state")
  T.check(torch.compile(net) == net and torch.compile(net, { mode = "max-autotune" }) == net, "torch.compile gives the model back")
end)
