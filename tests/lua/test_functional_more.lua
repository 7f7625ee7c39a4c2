-- The activations, distances and losses of torch_functional_more.lua and their modules,
-- against their formulas worked out element by element in plain Lua; gradients by
-- float64 central differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }

local function softplus(v) return v > 20 and v or math.log(1 + math.exp(v)) end
local function sigmoid(v) return 1 / (1 + math.exp(-v)) end
local function map(t, f) local o = {} for i, v in ipairs(t) do o[i] = f(v, i) end return o end
local function mean(t) local s = 0 for _, v in ipairs(t) do s = s + v end return s / #t end

local xs = { -3.5, -1.2, -0.4, 0.0, 0.3, 1.1, 2.6, 4.0 }
local alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
local acts = {
  mish = function(v) return v * math.tanh(softplus(v)) end,
  selu = function(v) return scale * (v > 0 and v or alpha * (math.exp(v) - 1)) end,
  celu = function(v) return v > 0 and v or 0.5 * (math.exp(v / 0.5) - 1) end,
  hardsigmoid = function(v) return math.min(math.max(v + 3, 0), 6) / 6 end,
  hardswish = function(v) return v * math.min(math.max(v + 3, 0), 6) / 6 end,
  softsign = function(v) return v / (1 + math.abs(v)) end,
  tanhshrink = function(v) return v - math.tanh(v) end,
}

T.test("activations against their formulas, functions and modules", function()
  local x = torch.tensor(xs, f64)
  for name, f in pairs(acts) do
    local got = name == "celu" and F.celu(x, 0.5) or F[name](x)
    T.near(got:tolist(), map(xs, f), 1e-12, name)
  end
  T.near(nn.SELU()(x):tolist(), map(xs, acts.selu), 1e-12, "nn.SELU")
  T.near(nn.CELU(0.5)(x):tolist(), map(xs, acts.celu), 1e-12, "nn.CELU")
  T.near(nn.Softsign()(x):tolist(), map(xs, acts.softsign), 1e-12, "nn.Softsign")
  local y = x:clone()
  T.check(rawequal(F.hardswish(y, true), y), "inplace returns the input")
  T.near(y:tolist(), map(xs, acts.hardswish), 1e-12, "in place")
  T.near(F.threshold(x, 0.2, -7):tolist(), map(xs, function(v) return v > 0.2 and v or -7 end), 0, "threshold")
  T.near(nn.Threshold(0.2, -7)(x):tolist(), map(xs, function(v) return v > 0.2 and v or -7 end), 0, "nn.Threshold")
  T.near(nn.Hardtanh(-1, 2)(x):tolist(), map(xs, function(v) return math.min(math.max(v, -1), 2) end), 0, "nn.Hardtanh")
  T.near(nn.LogSigmoid()(x):tolist(), map(xs, function(v) return math.log(sigmoid(v)) end), 1e-12, "nn.LogSigmoid")
  local g = torch.tensor({ { 1.0, 2.0, -1.0, 0.5 } }, f64)
  T.near(F.glu(g):tolist(), { { 1.0 * sigmoid(-1.0), 2.0 * sigmoid(0.5) } }, 1e-12, "glu")
  T.raises(function() F.glu(torch.ones(3)) end, "~Halving dimension must be even, but dimension 0 is size 3")
  local p = nn.PReLU(3)
  T.eq(p.weight:tolist(), { 0.25, 0.25, 0.25 }, "PReLU's initial slope")
  p.weight.data:copy_(torch.tensor({ 0.1, 0.2, 0.3 }))
  local px = torch.tensor({ { -1.0, -1.0, 2.0 } })
  T.near(p(px):tolist(), { { -0.1, -0.2, 2.0 } }, 1e-7, "a slope per channel")
  p(px):sum():backward()
  T.near(p.weight.grad:tolist(), { -1.0, -1.0, 0.0 }, 1e-7, "the slope's gradient")
  T.raises(function() F.prelu(torch.ones(2, 4), torch.ones(3)) end, "~Found parameter numbers = 3 and channel size = 4.")
end)

T.test("activations: gradients", function()
  torch.manual_seed(51)
  local x = torch.randn(7, f64)
  for _, name in ipairs({ "mish", "selu", "celu", "hardswish", "softsign", "tanhshrink" }) do
    gradcheck(name, function(t) return F[name](t) end, { x })
  end
  gradcheck("glu", function(t) return F.glu(t, 0) end, { torch.randn(6, 2, f64) })
end)

T.test("distances and losses against their formulas", function()
  local a = { { 1.0, 2.0, -1.0 }, { 0.5, -0.5, 3.0 } }
  local b = { { 2.0, 1.0, 0.0 }, { -1.0, 1.0, 2.0 } }
  local A, B = torch.tensor(a, f64), torch.tensor(b, f64)
  local function dot(u, v) local s = 0 for i = 1, #u do s = s + u[i] * v[i] end return s end
  local cos = map(a, function(u, i) return dot(u, b[i]) / math.sqrt(dot(u, u) * dot(b[i], b[i])) end)
  T.near(F.cosine_similarity(A, B):tolist(), cos, 1e-12, "cosine_similarity")
  T.near(nn.CosineSimilarity()(A, B):tolist(), cos, 1e-12, "nn.CosineSimilarity")
  local dist = map(a, function(u, i)
    local s = 0
    for k = 1, #u do s = s + (u[k] - b[i][k] + 1e-6) ^ 2 end
    return math.sqrt(s)
  end)
  T.near(F.pairwise_distance(A, B):tolist(), dist, 1e-12, "pairwise_distance")
  T.near(nn.PairwiseDistance()(A, B):tolist(), dist, 1e-12, "nn.PairwiseDistance")
  local y = torch.tensor({ 1.0, -1.0 }, f64)
  T.near(F.cosine_embedding_loss(A, B, y, 0.1):item(), mean({ 1 - cos[1], math.max(0, cos[2] - 0.1) }), 1e-12, "cosine_embedding_loss")
  T.near(nn.TripletMarginLoss({ margin = 0.5 })(A, B, B * 2):item(),
    mean(map(a, function(u, i)
      local dp, dn = 0, 0
      for k = 1, #u do dp = dp + (u[k] - b[i][k] + 1e-6) ^ 2; dn = dn + (u[k] - 2 * b[i][k] + 1e-6) ^ 2 end
      return math.max(math.sqrt(dp) - math.sqrt(dn) + 0.5, 0)
    end)), 1e-12, "TripletMarginLoss")
  local x1, x2, t = { 0.3, -1.0, 2.0 }, { 0.5, -2.0, 2.5 }, { 1.0, -1.0, -1.0 }
  T.near(nn.MarginRankingLoss(0.2)(torch.tensor(x1, f64), torch.tensor(x2, f64), torch.tensor(t, f64)):item(),
    mean(map(x1, function(v, i) return math.max(0, -t[i] * (v - x2[i]) + 0.2) end)), 1e-12, "MarginRankingLoss")
  T.near(F.hinge_embedding_loss(torch.tensor(x1, f64), torch.tensor(t, f64), { reduction = "sum" }):item(),
    0.3 + math.max(0, 1 - (-1.0)) + math.max(0, 1 - 2.0), 1e-12, "hinge_embedding_loss")
  T.near(nn.SoftMarginLoss()(torch.tensor(x1, f64), torch.tensor(t, f64)):item(),
    mean(map(x1, function(v, i) return math.log(1 + math.exp(-t[i] * v)) end)), 1e-12, "SoftMarginLoss")
  local lab = { { 1.0, 0.0, 1.0 }, { 0.0, 0.0, 1.0 } }
  T.near(nn.MultiLabelSoftMarginLoss()(A, torch.tensor(lab, f64)):item(),
    mean(map(a, function(u, i)
      return mean(map(u, function(v, k) return -(lab[i][k] * math.log(sigmoid(v)) + (1 - lab[i][k]) * math.log(sigmoid(-v))) end))
    end)), 1e-12, "MultiLabelSoftMarginLoss")
  local lp, q = { { -1.2, -0.7, -1.5 } }, { { 0.2, 0.5, 0.3 } }
  local kl = 0
  for k = 1, 3 do kl = kl + q[1][k] * (math.log(q[1][k]) - lp[1][k]) end
  T.near(nn.KLDivLoss({ reduction = "batchmean" })(torch.tensor(lp, f64), torch.tensor(q, f64)):item(), kl, 1e-12, "KLDivLoss batchmean")
  T.near(F.kl_div(torch.tensor(lp, f64), torch.tensor(q, f64):log(), { reduction = "sum", log_target = true }):item(), kl, 1e-12,
    "kl_div log_target")
  local rate, cnt = { 0.5, -0.2, 1.0 }, { 1.0, 0.0, 3.0 }
  T.near(nn.PoissonNLLLoss()(torch.tensor(rate, f64), torch.tensor(cnt, f64)):item(),
    mean(map(rate, function(v, i) return math.exp(v) - cnt[i] * v end)), 1e-12, "PoissonNLLLoss")
  local stir = 3 * math.log(3) - 3 + 0.5 * math.log(2 * math.pi * 3)
  T.near(F.poisson_nll_loss(torch.tensor(rate, f64), torch.tensor(cnt, f64), { full = true, reduction = "sum" }):item(),
    (math.exp(0.5) - 0.5) + math.exp(-0.2) + (math.exp(1) - 3 + stir), 1e-12, "poisson_nll_loss full")
  local mu, obs, var = { 0.1, 1.0 }, { 0.0, 2.0 }, { 0.5, 2.0 }
  T.near(nn.GaussianNLLLoss()(torch.tensor(mu, f64), torch.tensor(obs, f64), torch.tensor(var, f64)):item(),
    mean(map(mu, function(v, i) return 0.5 * (math.log(var[i]) + (v - obs[i]) ^ 2 / var[i]) end)), 1e-12, "GaussianNLLLoss")
  T.near(nn.HuberLoss({ delta = 0.5 })(torch.tensor(x1, f64), torch.tensor(x2, f64)):item(),
    mean(map(x1, function(v, i) local d = math.abs(v - x2[i]); return d < 0.5 and 0.5 * d * d or 0.5 * (d - 0.25) end)), 1e-12,
    "HuberLoss")
  T.raises(function() nn.KLDivLoss({ reduction = "avg" }) end, "avg is not a valid value for reduction")
  T.raises(function() F.gaussian_nll_loss(torch.ones(2), torch.ones(2), torch.tensor({ 1.0, -1.0 })) end, "~var has negative entry")
end)

T.test("losses: gradients", function()
  torch.manual_seed(52)
  local a, b = torch.randn(3, 4, f64), torch.randn(3, 4, f64)
  gradcheck("cosine_similarity", function(u, v) return F.cosine_similarity(u, v) end, { a, b })
  gradcheck("triplet", function(u, v, w) return F.triplet_margin_loss(u, v, w, { margin = 5.0 }) end, { a, b, torch.randn(3, 4, f64) })
  gradcheck("kl_div", function(u) return F.kl_div(u, F.softmax(b, 1), { reduction = "batchmean" }) end, { a })
  gradcheck("gaussian_nll", function(u, v) return F.gaussian_nll_loss(u, b, v) end, { a, torch.rand(3, 4, f64) + 0.5 })
  gradcheck("multilabel", function(u) return F.multilabel_soft_margin_loss(u, b:gt(0):double()) end, { a })
end)

T.test("in-place activations train", function()
  -- the result goes into the input, and backward still sees the input the function saw
  for _, name in ipairs({ "hardswish", "mish", "selu", "celu", "hardsigmoid", "threshold" }) do
    local args = name == "threshold" and { 0.1, -1.0 } or {}
    local w = torch.tensor({ -2.5, -0.3, 0.2, 1.7, 4.0 }, { dtype = torch.float64, requires_grad = true })
    local h = w * 2
    local call = { h, table.unpack(args) }
    call[#call + 1] = { inplace = true }
    local y = F[name](table.unpack(call))
    T.check(rawequal(y, h), name .. ": the input itself is returned")
    y:sum():backward()
    local w2 = w:detach():clone():requires_grad_()
    local y2 = F[name](w2 * 2, table.unpack(args))
    y2:sum():backward()
    T.near(h:detach():tolist(), y2:detach():tolist(), 0, name .. ": the input holds the result")
    T.near(w.grad:tolist(), w2.grad:tolist(), 0, name .. ": gradients as out of place")
  end
end)
