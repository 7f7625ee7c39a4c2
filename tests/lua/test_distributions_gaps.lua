-- torch.distributions' later additions (ContinuousBernoulli ... Wishart, ExponentialFamily, the
-- transforms, biject_to / transform_to, the submodule tables) against references written here:
-- densities in plain Lua float64 (a Stirling lgamma, a series I0), moments by Monte Carlo
-- (200k float64 draws with a fixed seed, within 4 standard errors), rsample gradients and
-- log|det J| by central differences.
local T = ...
local D = torch.distributions
local C = D.constraints
local f64 = { dtype = torch.float64 }
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local function t64(v) return torch.tensor(v, f64) end
local function num(t) return t:item() end

-- ---- references ----

-- log Gamma by recurrence up to 15 and Stirling's series
local function lgamma(x)
  local s = 0
  while x < 15 do s, x = s - math.log(x), x + 1 end
  local z = 1 / (x * x)
  return s + (x - 0.5) * math.log(x) - x + 0.5 * math.log(2 * math.pi)
    + (1 / 12 - z * (1 / 360 - z * (1 / 1260 - z / 1680))) / x
end
local function lbeta(a, b) return lgamma(a) + lgamma(b) - lgamma(a + b) end
local function bessel_i(nu, x) -- I_nu(x) by its power series
  local term = (x / 2) ^ nu / math.exp(lgamma(nu + 1))
  local sum, k = term, 0
  repeat
    k = k + 1
    term = term * (x * x / 4) / (k * (k + nu))
    sum = sum + term
  until term < 1e-17 * sum
  return sum
end
local function logit(p) return math.log(p / (1 - p)) end
local function norm_logpdf(x, m, s) return -0.5 * ((x - m) / s) ^ 2 - math.log(s) - 0.5 * math.log(2 * math.pi) end
local function atanh(x) return 0.5 * math.log((1 + x) / (1 - x)) end

-- log |det A| of a Lua matrix (list of rows) by Gaussian elimination with partial pivoting
local function logabsdet(A)
  local n = #A
  local M = {}
  for i = 1, n do M[i] = { table.unpack(A[i]) } end
  local s = 0
  for c = 1, n do
    local p = c
    for r = c + 1, n do if math.abs(M[r][c]) > math.abs(M[p][c]) then p = r end end
    M[c], M[p] = M[p], M[c]
    s = s + math.log(math.abs(M[c][c]))
    for r = c + 1, n do
      local f = M[r][c] / M[c][c]
      for k = c, n do M[r][k] = M[r][k] - f * M[c][k] end
    end
  end
  return s
end

-- log|det| of the Jacobian of f (a flat Lua list -> a flat Lua list of the same length) at x
local function fd_logdet(f, x)
  local h, J = 1e-6, {}
  local n = #x
  for i = 1, n do J[i] = {} end
  for j = 1, n do
    local up, dn = { table.unpack(x) }, { table.unpack(x) }
    up[j], dn[j] = x[j] + h, x[j] - h
    local fu, fd = f(up), f(dn)
    for i = 1, n do J[i][j] = (fu[i] - fd[i]) / (2 * h) end
  end
  return logabsdet(J)
end

local function flat(t) return t:reshape(-1):tolist() end

-- log_prob of d at each of xs (Lua numbers) against ref(x)
local function check_logpdf(name, d, xs, ref, tol)
  local got = flat(d:log_prob(t64(xs)))
  local want = {}
  for i, x in ipairs(xs) do want[i] = ref(x) end
  T.near(got, want, tol or 1e-9, name .. " log_prob")
end

-- the sample mean (and variance) of 200k draws within 4 standard errors of d.mean (and of d.variance,
-- the variance's standard error from the sample's fourth central moment)
local function check_moments(name, d, opts)
  opts = opts or {}
  torch.manual_seed(opts.seed or 7)
  local n = 200000
  local s = d:sample({ n }):to(torch.float64)
  local m, v = s:mean(0), s:var(0)
  local mean, var = d.mean:to(torch.float64), d.variance:to(torch.float64)
  local se = (var / n):sqrt()
  local z = ((m - mean):abs() / se):max():item()
  T.check(z < 4, string.format("%s: sample mean off by %.2f standard errors", name, z))
  if not opts.no_var then
    local m4 = ((s - m) ^ 4):mean(0)
    local vse = ((m4 - v * v) / n):sqrt()
    local zv = ((v - var):abs() / vse):max():item()
    T.check(zv < 4, string.format("%s: sample variance off by %.2f standard errors", name, zv))
  end
end

-- Simpson's rule of f on [a, b]
local function simpson(f, a, b, n)
  n = n or 20000
  local h, s = (b - a) / n, f(a) + f(b)
  for i = 1, n - 1 do s = s + (i % 2 == 1 and 4 or 2) * f(a + i * h) end
  return s * h / 3
end
-- entropy of a density on [a, b] by Simpson
local function entropy_of(logpdf, a, b)
  return simpson(function(x)
    local lp = logpdf(x)
    if lp == -math.huge or lp ~= lp then return 0 end
    return -math.exp(lp) * lp
  end, a, b, 200000)
end

-- ---- one-dimensional continuous ----

T.test("ContinuousBernoulli", function()
  for _, lam in ipairs({ 0.3, 0.8, 0.5005 }) do
    local d = D.ContinuousBernoulli(t64(lam))
    local logC = math.log(2 * atanh(1 - 2 * lam) / (1 - 2 * lam))
    local function ref(x) return logC + x * math.log(lam) + (1 - x) * math.log(1 - lam) end
    check_logpdf("ContinuousBernoulli(" .. lam .. ")", d, { 0.1, 0.5, 0.93 }, ref, 1e-6)
    -- near probs 1/2 PyTorch's cdf is the uniform one (off by at most ~3e-4 at 0.5005)
    T.near(num(d:cdf(t64(0.4))), simpson(function(x) return math.exp(ref(x)) end, 0, 0.4), lam == 0.5005 and 1e-3 or 1e-6, "ContinuousBernoulli cdf")
    T.near(num(d:icdf(d:cdf(t64(0.4)))), 0.4, 1e-6, "ContinuousBernoulli icdf")
    T.near(num(d:entropy()), entropy_of(ref, 0, 1), 1e-6, "ContinuousBernoulli entropy")
    T.near(num(d.mean), simpson(function(x) return x * math.exp(ref(x)) end, 0, 1), 1e-6, "ContinuousBernoulli mean")
    check_moments("ContinuousBernoulli(" .. lam .. ")", d)
  end
  -- KL pairs against int p log(p / q) over (0, 1)
  local lam = 0.3
  local logC = math.log(2 * atanh(1 - 2 * lam) / (1 - 2 * lam))
  local function lp(x) return logC + x * math.log(lam) + (1 - x) * math.log(1 - lam) end
  local p = D.ContinuousBernoulli(t64(lam))
  local function kl_ref(lq) return simpson(function(x) return math.exp(lp(x)) * (lp(x) - lq(x)) end, 0, 1) end
  local q = D.ContinuousBernoulli(t64(0.85))
  T.near(num(D.kl_divergence(p, q)), kl_ref(function(x) return q:log_prob(t64(x)):item() end), 1e-8, "KL(ContinuousBernoulli || ContinuousBernoulli)")
  T.near(num(D.kl_divergence(p, D.Exponential(t64(2.0)))), kl_ref(function(x) return math.log(2) - 2 * x end), 1e-8, "KL(ContinuousBernoulli || Exponential)")
  T.near(num(D.kl_divergence(p, D.Normal(t64(0.2), t64(0.7)))), kl_ref(function(x) return norm_logpdf(x, 0.2, 0.7) end), 1e-8, "KL(ContinuousBernoulli || Normal)")
  T.near(num(D.kl_divergence(p, D.Uniform(t64(-1.0), t64(2.0)))), kl_ref(function() return -math.log(3) end), 1e-8, "KL(ContinuousBernoulli || Uniform)")
  T.eq(D.kl_divergence(p, D.Uniform(t64(0.5), t64(2.0))):item(), math.huge, "KL(ContinuousBernoulli || Uniform) inf off the support")
  local d = D.ContinuousBernoulli({ logits = t64(logit(0.3)) })
  T.near(num(d.probs), 0.3, 1e-12, "ContinuousBernoulli logits -> probs")
  T.eq(d.has_rsample, true, "ContinuousBernoulli has_rsample")
  gradcheck("ContinuousBernoulli rsample", function(p) return D.ContinuousBernoulli(p):rsample({ 3 }) end, { t64({ 0.2, 0.7 }) }, { seed = 3, tol = 1e-5 })
  T.raises(function() D.ContinuousBernoulli(t64(1.5)) end, "~Expected parameter probs to satisfy the constraint Interval(lower_bound=0.0, upper_bound=1.0)")
  T.raises(function() D.ContinuousBernoulli() end, "Either `probs` or `logits` must be specified, but not both.")
end)

T.test("FisherSnedecor", function()
  local d1, d2 = 5.0, 12.0
  local d = D.FisherSnedecor(t64(d1), t64(d2))
  local function ref(x)
    return 0.5 * (d1 * math.log(d1 * x) + d2 * math.log(d2) - (d1 + d2) * math.log(d1 * x + d2)) - math.log(x) - lbeta(d1 / 2, d2 / 2)
  end
  check_logpdf("FisherSnedecor", d, { 0.2, 1.0, 3.7 }, ref)
  T.near(num(d.mean), d2 / (d2 - 2), 1e-12, "FisherSnedecor mean")
  T.near(num(d.mode), (d1 - 2) / d1 * d2 / (d2 + 2), 1e-12, "FisherSnedecor mode")
  T.near(num(d.variance), 2 * d2 ^ 2 * (d1 + d2 - 2) / (d1 * (d2 - 2) ^ 2 * (d2 - 4)), 1e-12, "FisherSnedecor variance")
  check_moments("FisherSnedecor", d, { no_var = true })
  T.check(D.FisherSnedecor(t64(1.0), t64(2.0)).mean:isnan():item(), "FisherSnedecor mean nan for df2 <= 2")
  T.raises(function() D.FisherSnedecor(t64(-1.0), t64(2.0)) end, "~Expected parameter df1")
end)

T.test("GeneralizedPareto", function()
  for _, xi in ipairs({ 0.2, 0.0, -0.25 }) do
    local loc, sc = 1.0, 2.0
    local d = D.GeneralizedPareto(t64(loc), t64(sc), t64(xi))
    local function ref(x)
      local z = (x - loc) / sc
      if z < 0 or (xi < 0 and z > -1 / xi) then return -math.huge end
      if xi == 0 then return -z - math.log(sc) end
      return -(1 / xi + 1) * math.log(1 + xi * z) - math.log(sc)
    end
    check_logpdf("GeneralizedPareto(" .. xi .. ")", d, { 1.5, 3.0, 8.0 }, ref)
    local cdf = num(d:cdf(t64(3.0)))
    local want = xi == 0 and 1 - math.exp(-1) or 1 - (1 + xi) ^ (-1 / xi)
    T.near(cdf, want, 1e-12, "GeneralizedPareto cdf")
    T.near(num(d:icdf(t64(cdf))), 3.0, 1e-10, "GeneralizedPareto icdf")
    T.near(num(d:entropy()), math.log(sc) + xi + 1, 1e-12, "GeneralizedPareto entropy")
    check_moments("GeneralizedPareto(" .. xi .. ")", d, { no_var = xi > 0 })
  end
  local d = D.GeneralizedPareto(0.0, 1.0, -0.5)
  T.near(d.support.upper_bound:item(), 2.0, 1e-7, "GeneralizedPareto support upper bound")
  gradcheck("GeneralizedPareto rsample", function(l, s, c) return D.GeneralizedPareto(l, s, c):rsample({ 4 }) end,
    { t64({ 0.5 }), t64({ 1.5 }), t64({ 0.3 }) }, { seed = 5, tol = 1e-5 })
  T.raises(function() D.GeneralizedPareto(0.0, -1.0, 0.1) end, "~Expected parameter scale")
end)

T.test("HalfCauchy", function()
  local s = 2.0
  local d = D.HalfCauchy(t64(s))
  check_logpdf("HalfCauchy", d, { 0.0, 1.0, 9.0, -1.0 }, function(x)
    if x < 0 then return -math.huge end
    return math.log(2 / (math.pi * s * (1 + (x / s) ^ 2)))
  end)
  T.near(num(d:cdf(t64(3.0))), 2 / math.pi * math.atan(3 / s), 1e-12, "HalfCauchy cdf")
  T.near(num(d:icdf(t64(0.5))), s, 1e-12, "HalfCauchy median")
  T.near(num(d:entropy()), math.log(2 * math.pi * s), 1e-12, "HalfCauchy entropy")
  T.eq(d.mean:item(), math.huge, "HalfCauchy mean")
  torch.manual_seed(1)
  local x = d:sample({ 200000 })
  local below = x:lt(s):to(torch.float64):mean():item() -- P(X < median) = 1/2
  T.check(math.abs(below - 0.5) < 4 * math.sqrt(0.25 / 200000), "HalfCauchy sample median")
  T.check(x:ge(0):all():item(), "HalfCauchy samples nonnegative")
  gradcheck("HalfCauchy rsample", function(sc) return D.HalfCauchy(sc):rsample({ 3 }) end, { t64({ 0.7, 2.0 }) }, { seed = 2, tol = 1e-5 })
  T.raises(function() D.HalfCauchy(t64(2.0), { validate_args = true }):log_prob(t64(-1.0)) end,
    "~ValueError: Expected value argument")
end)

T.test("InverseGamma", function()
  local a, b = 5.0, 2.0
  local d = D.InverseGamma(t64(a), t64(b))
  local function ref(x) return a * math.log(b) - lgamma(a) - (a + 1) * math.log(x) - b / x end
  check_logpdf("InverseGamma", d, { 0.2, 0.5, 2.0 }, ref)
  T.near(num(d.mean), b / (a - 1), 1e-12, "InverseGamma mean")
  T.near(num(d.mode), b / (a + 1), 1e-12, "InverseGamma mode")
  T.near(num(d.variance), b * b / ((a - 1) ^ 2 * (a - 2)), 1e-12, "InverseGamma variance")
  T.near(num(d:entropy()), entropy_of(ref, 5e-3, 500), 1e-5, "InverseGamma entropy")
  check_moments("InverseGamma", d, { no_var = true })
  gradcheck("InverseGamma rsample (rate)", function(r) return D.InverseGamma(t64({ 3.0, 4.0 }), r):rsample({ 2 }) end,
    { t64({ 1.5, 0.5 }) }, { seed = 4, tol = 1e-5 })
  T.eq(D.InverseGamma(t64(0.5), t64(1.0)).mean:item(), math.huge, "InverseGamma mean for concentration <= 1")
end)

T.test("Kumaraswamy", function()
  local a, b = 2.0, 3.0
  local d = D.Kumaraswamy(t64(a), t64(b))
  local function ref(x) return math.log(a * b) + (a - 1) * math.log(x) + (b - 1) * math.log(1 - x ^ a) end
  check_logpdf("Kumaraswamy", d, { 0.1, 0.5, 0.9 }, ref, 1e-8)
  T.near(num(d:cdf(t64(0.4))), 1 - (1 - 0.4 ^ a) ^ b, 1e-10, "Kumaraswamy cdf")
  T.near(num(d.mean), simpson(function(x) return x * math.exp(ref(x)) end, 0, 1), 1e-7, "Kumaraswamy mean")
  T.near(num(d.mode), ((a - 1) / (a * b - 1)) ^ (1 / a), 1e-12, "Kumaraswamy mode")
  T.near(num(d:entropy()), entropy_of(ref, 0, 1), 1e-6, "Kumaraswamy entropy")
  check_moments("Kumaraswamy", d)
  gradcheck("Kumaraswamy rsample", function(x, y) return D.Kumaraswamy(x, y):rsample({ 3 }) end,
    { t64({ 0.8, 2.0 }), t64({ 1.5, 0.6 }) }, { seed = 6, tol = 1e-5 })
end)

T.test("Pareto", function()
  local s, a = 1.5, 5.0
  local d = D.Pareto(t64(s), t64(a))
  check_logpdf("Pareto", d, { 1.6, 2.0, 7.0 }, function(x) return math.log(a) + a * math.log(s) - (a + 1) * math.log(x) end)
  T.near(num(d.mean), a * s / (a - 1), 1e-12, "Pareto mean")
  T.near(num(d.variance), s * s * a / ((a - 1) ^ 2 * (a - 2)), 1e-12, "Pareto variance")
  T.near(num(d:cdf(t64(2.0))), 1 - (s / 2) ^ a, 1e-12, "Pareto cdf")
  T.near(num(d:entropy()), math.log(s / a) + 1 / a + 1, 1e-12, "Pareto entropy")
  T.eq(tostring(d.support), "GreaterThanEq(lower_bound=" .. tostring(d.scale) .. ")", "Pareto support")
  check_moments("Pareto", d, { no_var = true })
  gradcheck("Pareto rsample", function(x, y) return D.Pareto(x, y):rsample({ 3 }) end, { t64({ 1.0, 2.0 }), t64({ 3.0, 1.5 }) }, { seed = 8, tol = 1e-5 })
  local q = D.Pareto(t64(1.0), t64(2.0))
  local kl = num(D.kl_divergence(d, q))
  local klref = simpson(function(x) -- int p log(p / q) on [s, inf) after x = s / u^(1/a)
    local lp = math.log(a) + a * math.log(s) - (a + 1) * math.log(x)
    local lq = math.log(2) + 2 * math.log(1) - 3 * math.log(x)
    return math.exp(lp) * (lp - lq)
  end, s, 400, 400000)
  T.near(kl, klref, 1e-5, "KL(Pareto || Pareto)")
  T.eq(D.kl_divergence(q, d):item(), math.huge, "KL(Pareto || Pareto) inf where the supports differ")
end)

T.test("VonMises", function()
  local mu, k = 0.5, 2.0
  local d = D.VonMises(t64(mu), t64(k))
  local function ref(x) return k * math.cos(x - mu) - math.log(2 * math.pi * bessel_i(0, k)) end
  check_logpdf("VonMises", d, { -3.0, 0.0, 0.5, 2.0 }, ref)
  local r = bessel_i(1, k) / bessel_i(0, k)
  T.near(num(d.variance), 1 - r, 1e-10, "VonMises circular variance")
  T.near(num(d:entropy()), entropy_of(ref, -math.pi, math.pi), 1e-6, "VonMises entropy")
  T.eq(d.has_rsample, false, "VonMises has_rsample")
  for _, kk in ipairs({ 2.0, 0.05, 50.0 }) do
    torch.manual_seed(11)
    local dd = D.VonMises(t64(mu), t64(kk))
    local x = dd:sample({ 200000 })
    T.check(x:ge(-math.pi):all():item() and x:le(math.pi):all():item(), "VonMises samples in [-pi, pi]")
    local c = (x - mu):cos()
    local rr = bessel_i(1, kk) / bessel_i(0, kk)
    local se = math.sqrt(c:var():item() / 200000)
    T.check(math.abs(c:mean():item() - rr) < 4 * se, "VonMises E[cos(x - loc)] = I1/I0, concentration " .. kk)
    local sn = (x - mu):sin()
    T.check(math.abs(sn:mean():item()) < 4 * math.sqrt(sn:var():item() / 200000), "VonMises E[sin(x - loc)] = 0, concentration " .. kk)
  end
  T.raises(function() D.VonMises(0.0, 0.0) end, "~Expected parameter concentration")
end)

T.test("Weibull", function()
  local lam, k = 2.0, 1.5
  local d = D.Weibull(t64(lam), t64(k))
  local function ref(x) return math.log(k / lam) + (k - 1) * math.log(x / lam) - (x / lam) ^ k end
  check_logpdf("Weibull", d, { 0.3, 1.0, 4.0 }, ref)
  T.near(num(d:cdf(t64(1.0))), 1 - math.exp(-(1 / lam) ^ k), 1e-12, "Weibull cdf")
  T.near(num(d.mean), lam * math.exp(lgamma(1 + 1 / k)), 1e-10, "Weibull mean")
  T.near(num(d.mode), lam * ((k - 1) / k) ^ (1 / k), 1e-12, "Weibull mode")
  T.near(num(d:entropy()), entropy_of(ref, 1e-9, 30), 1e-6, "Weibull entropy")
  check_moments("Weibull", d)
  gradcheck("Weibull rsample", function(x, y) return D.Weibull(x, y):rsample({ 3 }) end, { t64({ 1.0, 2.0 }), t64({ 0.7, 3.0 }) }, { seed = 9, tol = 1e-5 })
  local e = D.Weibull(t64({ 1.0, 2.0 }), t64(1.5)):expand({ 3, 2 })
  T.eq(e.batch_shape:totable(), { 3, 2 }, "Weibull expand batch_shape")
  T.eq(e:sample({ 4 }):size():totable(), { 4, 3, 2 }, "Weibull expand sample shape")
end)

-- ---- discrete ----

T.test("NegativeBinomial", function()
  local r, p = 4.5, 0.3
  local d = D.NegativeBinomial(t64(r), t64(p))
  check_logpdf("NegativeBinomial", d, { 0, 1, 5, 12 }, function(k)
    return lgamma(k + r) - lgamma(k + 1) - lgamma(r) + k * math.log(p) + r * math.log(1 - p)
  end)
  T.near(num(d.mean), r * p / (1 - p), 1e-12, "NegativeBinomial mean")
  T.near(num(d.variance), r * p / (1 - p) ^ 2, 1e-12, "NegativeBinomial variance")
  T.near(num(d.mode), math.floor((r - 1) * p / (1 - p)), 1e-12, "NegativeBinomial mode")
  local l = D.NegativeBinomial(t64(r), { logits = t64(logit(p)) })
  T.near(num(l.probs), p, 1e-12, "NegativeBinomial logits")
  check_moments("NegativeBinomial", d)
  local s = d:sample({ 1000 })
  T.check(s:eq(s:floor()):all():item() and s:ge(0):all():item(), "NegativeBinomial samples are counts")
  T.raises(function() D.NegativeBinomial(t64(-1.0), t64(0.5)) end, "~Expected parameter total_count")
  T.raises(function() D.NegativeBinomial(t64(2.0), t64(1.0)) end, "~Expected parameter probs")
end)

T.test("Multinomial", function()
  local p = { 0.2, 0.3, 0.5 }
  local d = D.Multinomial(10, t64(p))
  local x = t64({ { 2, 3, 5 }, { 0, 0, 10 }, { 1, 8, 1 } })
  local want = {}
  for i, row in ipairs(x:tolist()) do
    local lp = lgamma(11)
    for j = 1, 3 do lp = lp - lgamma(row[j] + 1) + row[j] * math.log(p[j]) end
    want[i] = lp
  end
  T.near(flat(d:log_prob(x)), want, 1e-9, "Multinomial log_prob")
  T.eq(d.event_shape:totable(), { 3 }, "Multinomial event_shape")
  T.near(flat(d.mean), { 2, 3, 5 }, 1e-12, "Multinomial mean")
  T.near(flat(d.variance), { 1.6, 2.1, 2.5 }, 1e-12, "Multinomial variance")
  check_moments("Multinomial", d)
  local s = D.Multinomial(7, t64({ { 0.5, 0.5 }, { 0.1, 0.9 } })):sample({ 5 })
  T.eq(s:size():totable(), { 5, 2, 2 }, "Multinomial sample shape")
  T.check(s:sum(-1):eq(7):all():item(), "Multinomial samples sum to total_count")
  -- entropy: minus the sum of p log p over all count vectors (n = 4, k = 3)
  local dd = D.Multinomial(4, t64(p))
  local h = 0
  for a = 0, 4 do for b = 0, 4 - a do
    local c = 4 - a - b
    local lp = lgamma(5) - lgamma(a + 1) - lgamma(b + 1) - lgamma(c + 1) + a * math.log(p[1]) + b * math.log(p[2]) + c * math.log(p[3])
    h = h - math.exp(lp) * lp
  end end
  T.near(num(dd:entropy()), h, 1e-9, "Multinomial entropy")
  T.raises(function() D.Multinomial(3, t64(p), { validate_args = true }):log_prob(t64({ 2, 2, 1 })) end,
    "~ValueError: Expected value argument")
end)

T.test("OneHotCategoricalStraightThrough", function()
  local d = D.OneHotCategoricalStraightThrough(t64({ 0.2, 0.8 }))
  T.eq(d.has_rsample, true, "OneHotCategoricalStraightThrough has_rsample")
  torch.manual_seed(3)
  local probs = t64({ 1.0, 3.0 }):requires_grad_()
  local x = D.OneHotCategoricalStraightThrough(probs):rsample()
  T.check(x:detach():sum():item() == 1 and x:detach():eq(0):logical_or(x:detach():eq(1)):all():item(), "rsample is one-hot")
  local w = t64({ 2.0, -1.0 })
  ;(x * w):sum():backward()
  -- d/dt of sum(w * t / sum(t)) at t = (1, 3): (w_i - sum(w p)) / sum(t)
  local wp = (2 * 0.25 - 1 * 0.75)
  T.near(flat(probs.grad), { (2 - wp) / 4, (-1 - wp) / 4 }, 1e-12, "straight-through gradient")
end)

-- ---- vectors and matrices ----

T.test("LowRankMultivariateNormal", function()
  local loc = t64({ 1.0, -1.0 })
  local W = t64({ { 1.0 }, { 2.0 } })
  local dg = t64({ 0.5, 1.5 })
  local d = D.LowRankMultivariateNormal(loc, W, dg)
  -- covariance [[1.5, 2], [2, 5.5]]
  local a, b, c = 1.5, 2.0, 5.5
  local det = a * c - b * b
  local function ref(x, y)
    local u, v = x - 1, y + 1
    return -0.5 * ((c * u * u - 2 * b * u * v + a * v * v) / det) - 0.5 * math.log(det) - math.log(2 * math.pi)
  end
  T.near(flat(d:log_prob(t64({ { 0.0, 0.0 }, { 2.0, 3.0 } }))), { ref(0, 0), ref(2, 3) }, 1e-10, "LowRankMVN log_prob")
  T.near(d.covariance_matrix:tolist(), { { a, b }, { b, c } }, 1e-12, "LowRankMVN covariance_matrix")
  T.near(d.precision_matrix:tolist(), { { c / det, -b / det }, { -b / det, a / det } }, 1e-10, "LowRankMVN precision_matrix")
  T.near(num(d:entropy()), 1 + math.log(2 * math.pi) + 0.5 * math.log(det), 1e-10, "LowRankMVN entropy")
  T.near(flat(d.variance), { a, c }, 1e-12, "LowRankMVN variance")
  check_moments("LowRankMVN", d)
  torch.manual_seed(2)
  local s = d:sample({ 200000 })
  local cov = ((s:select(1, 0) - 1) * (s:select(1, 1) + 1)):mean():item()
  T.check(math.abs(cov - b) < 0.05, "LowRankMVN sample covariance")
  local mvn = D.MultivariateNormal(loc, { covariance_matrix = d.covariance_matrix })
  T.near(num(D.kl_divergence(d, mvn)), 0, 1e-10, "KL(LowRankMVN || same MVN)")
  gradcheck("LowRankMVN rsample", function(l, w, g) return D.LowRankMultivariateNormal(l, w, g):rsample({ 3 }) end,
    { loc, W, dg }, { seed = 4, tol = 1e-5 })
  T.raises(function() D.LowRankMultivariateNormal(loc, t64({ { 1.0 } }), dg) end, "~ValueError: cov_factor must be a batch of matrices")
  T.raises(function() D.LowRankMultivariateNormal(loc, W, t64({ -1.0, 1.0 })) end, "~Expected parameter cov_diag")
  local e = d:expand({ 3 })
  T.eq({ e.batch_shape:totable(), e.event_shape:totable() }, { { 3 }, { 2 } }, "LowRankMVN expand")
end)

T.test("LKJCholesky", function()
  local eta = 2.5
  local d = D.LKJCholesky(2, t64(eta))
  local r = 0.3
  local L = t64({ { 1, 0 }, { r, math.sqrt(1 - r * r) } })
  -- the density of r: (1 - r^2)^(eta - 1) / (B(eta, eta) 2^(2 eta - 1))
  T.near(num(d:log_prob(L)), (eta - 1) * math.log(1 - r * r) - lbeta(eta, eta) - (2 * eta - 1) * math.log(2), 1e-10, "LKJCholesky(2) log_prob")
  T.eq(d.event_shape:totable(), { 2, 2 }, "LKJCholesky event_shape")
  for _, dim in ipairs({ 3, 4 }) do
    torch.manual_seed(5)
    local dd = D.LKJCholesky(dim, t64(eta))
    local s = dd:sample({ 100000 })
    T.check(C.corr_cholesky:check(s):all():item(), "LKJCholesky samples are correlation Cholesky factors")
    -- each correlation (L L^T)[i, j] ~ 2 Beta(b, b) - 1 with b = eta - 1 + dim / 2: variance 1 / (2b + 1)
    local R = s:matmul(s:transpose(-2, -1))
    local bb = eta - 1 + dim / 2
    local se = math.sqrt(1 / (2 * bb + 1) / 100000)
    for _, ij in ipairs({ { 1, 0 }, { dim - 1, 0 }, { dim - 1, dim - 2 } }) do
      local corr = R:select(-2, ij[1]):select(-1, ij[2])
      local what = string.format("LKJCholesky(%d) correlation (%d, %d)", dim, ij[1], ij[2])
      T.check(math.abs(corr:mean():item()) < 4 * se, what .. " mean 0")
      T.near(corr:var():item(), 1 / (2 * bb + 1), 0.03, what .. " variance")
    end
  end
  T.raises(function() D.LKJCholesky(1) end, "ValueError: Expected dim to be an integer greater than or equal to 2. Found dim=1.")
  T.raises(function() D.LKJCholesky(3, -1.0) end, "~Expected parameter concentration")
end)

T.test("Wishart", function()
  local nu = 5.0
  local V = t64({ { 2.0, 0.5 }, { 0.5, 1.0 } })
  local d = D.Wishart(t64(nu), { covariance_matrix = V })
  local X = t64({ { 3.0, 1.0 }, { 1.0, 2.0 } })
  local detV, detX = 2 - 0.25, 6 - 1
  -- tr(V^-1 X), V^-1 = [[1, -0.5], [-0.5, 2]] / detV
  local tr = (1 * 3 - 0.5 * 1 - 0.5 * 1 + 2 * 2) / detV
  local lgamma2 = 0.5 * math.log(math.pi) + lgamma(nu / 2) + lgamma(nu / 2 - 0.5)
  local want = (nu - 3) / 2 * math.log(detX) - tr / 2 - nu * math.log(2) - nu / 2 * math.log(detV) - lgamma2
  T.near(num(d:log_prob(X)), want, 1e-10, "Wishart log_prob")
  T.near(d.mean:tolist(), (V * nu):tolist(), 1e-12, "Wishart mean")
  T.near(d.mode:tolist(), (V * (nu - 3)):tolist(), 1e-12, "Wishart mode")
  check_moments("Wishart", d)
  T.near(num(d:entropy()), num(D.ExponentialFamily.entropy(d)), 1e-10, "Wishart entropy = Bregman entropy")
  -- entropy and KL by Monte Carlo
  torch.manual_seed(3)
  local s = d:sample({ 50000 })
  local lp = d:log_prob(s)
  T.near(-lp:mean():item(), num(d:entropy()), 4 * lp:std():item() / math.sqrt(50000), "Wishart entropy vs -E[log p]")
  local q = D.Wishart(t64(4.0), { scale_tril = t64({ { 1.0, 0.0 }, { 0.3, 0.8 } }) })
  local diff = lp - q:log_prob(s)
  T.near(num(D.kl_divergence(d, q)), diff:mean():item(), 4 * diff:std():item() / math.sqrt(50000), "KL(Wishart || Wishart) by Bregman vs Monte Carlo")
  T.check(C.positive_definite:check(s):all():item(), "Wishart samples are positive definite")
  local pd = D.Wishart(t64(nu), { precision_matrix = torch.linalg.inv(V) })
  T.near(num(pd:log_prob(X)), want, 1e-9, "Wishart from precision_matrix")
  gradcheck("Wishart rsample (scale_tril)", function(L) return D.Wishart(t64(nu), { scale_tril = L, validate_args = false }):rsample() end,
    { t64({ { 1.0, 0.0 }, { 0.4, 0.9 } }) }, { seed = 6, tol = 1e-5 })
  T.raises(function() D.Wishart(t64(0.5), { covariance_matrix = V }) end, "~ValueError: Value of df=")
  T.raises(function() D.Wishart(t64(nu)) end, "ValueError: Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
end)

T.test("LogisticNormal", function()
  local loc, sc = { 0.3, -0.2 }, { 1.0, 0.5 }
  local d = D.LogisticNormal(t64(loc), t64(sc))
  T.eq({ d.batch_shape:totable(), d.event_shape:totable() }, { {}, { 3 } }, "LogisticNormal shapes")
  -- y on the 3-simplex: z_i = y_i / (1 - sum_{j<i} y_j), x_i = logit(z_i) + log(K - i), K = 2 - i + 1 offsets 2, 1
  local function ref(y)
    local lp, rest = 0, 1
    for i = 1, 2 do
      local z = y[i] / rest
      local x = logit(z) + math.log(3 - i)
      lp = lp + norm_logpdf(x, loc[i], sc[i]) - math.log(z * (1 - z) * rest)
      rest = rest - y[i]
    end
    return lp
  end
  local ys = { { 0.2, 0.3, 0.5 }, { 0.6, 0.1, 0.3 } }
  T.near(flat(d:log_prob(t64(ys))), { ref(ys[1]), ref(ys[2]) }, 1e-9, "LogisticNormal log_prob")
  local s = d:sample({ 10 })
  T.check(C.simplex:check(s):all():item(), "LogisticNormal samples on the simplex")
  gradcheck("LogisticNormal rsample", function(l, s2) return D.LogisticNormal(l, s2):rsample({ 2 }) end,
    { t64(loc), t64(sc) }, { seed = 2, tol = 1e-5 })
  local one = D.LogisticNormal(0.5, 2.0)
  T.eq(one.event_shape:totable(), { 2 }, "LogisticNormal of a scalar: event_shape (2,)")
end)

T.test("MixtureSameFamily", function()
  local w, m, s = { 0.3, 0.7 }, { -1.0, 2.0 }, { 1.0, 0.5 }
  local d = D.MixtureSameFamily(D.Categorical(t64(w)), D.Normal(t64(m), t64(s)))
  local function ref(x) return math.log(w[1] * math.exp(norm_logpdf(x, m[1], s[1])) + w[2] * math.exp(norm_logpdf(x, m[2], s[2]))) end
  check_logpdf("MixtureSameFamily", d, { -2.0, 0.0, 2.5 }, ref)
  T.near(num(d.mean), 0.3 * -1 + 0.7 * 2, 1e-12, "MixtureSameFamily mean")
  check_moments("MixtureSameFamily", d)
  T.near(num(d:cdf(t64(0.0))), simpson(function(x) return math.exp(ref(x)) end, -12, 0), 1e-8, "MixtureSameFamily cdf")
  -- multivariate components: Independent Normals, batch 2 of mixtures of 3
  local comp = D.Independent(D.Normal(torch.randn(2, 3, 4, f64), torch.rand(2, 3, 4, f64) + 0.5), 1)
  local mm = D.MixtureSameFamily(D.Categorical(torch.rand(2, 3, f64)), comp)
  T.eq({ mm.batch_shape:totable(), mm.event_shape:totable() }, { { 2 }, { 4 } }, "MixtureSameFamily shapes")
  T.eq(mm:sample({ 5 }):size():totable(), { 5, 2, 4 }, "MixtureSameFamily sample shape")
  T.eq(mm:log_prob(torch.randn(5, 2, 4, f64)):size():totable(), { 5, 2 }, "MixtureSameFamily log_prob shape")
  T.raises(function() D.MixtureSameFamily(D.Categorical(t64({ 0.5, 0.5 })), D.Normal(t64({ 0, 1, 2 }), 1.0)) end,
    "ValueError: `mixture_distribution component` (2) does not equal `component_distribution.batch_shape[-1]` (3)")
end)

-- ---- ExponentialFamily ----

T.test("ExponentialFamily", function()
  local EF = D.ExponentialFamily
  local cases = {
    { "Normal", D.Normal(t64(0.5), t64(2.0)) }, { "Exponential", D.Exponential(t64(1.7)) },
    { "Gamma", D.Gamma(t64(2.5), t64(0.7)) }, { "Beta", D.Beta(t64(2.0), t64(3.5)) },
    { "Bernoulli", D.Bernoulli(t64(0.3)) }, { "Dirichlet", D.Dirichlet(t64({ 1.5, 2.0, 0.7 })) },
    { "ContinuousBernoulli", D.ContinuousBernoulli(t64(0.2)) }, { "Chi2", D.Chi2(t64(3.0)) },
  }
  for _, c in ipairs(cases) do
    local d = c[2]
    T.check(getmetatable(d)._parent == EF or getmetatable(d)._parent._parent == EF, c[1] .. " derives from ExponentialFamily")
    T.near(num(EF.entropy(d)), num(d:entropy()), 1e-9, c[1] .. ": entropy by Bregman divergence")
  end
  T.check(getmetatable(D.Poisson(1.0))._parent == EF, "Poisson derives from ExponentialFamily")
  T.check(getmetatable(D.Binomial(3, 0.5))._parent ~= EF, "Binomial does not")
  T.raises(function() EF.entropy(D.Poisson(t64(2.0))) end, "~NotImplementedError")
end)

-- ---- transforms ----

-- forward / inverse round trip and log|det J| against the finite-difference Jacobian of
-- fwd (flat list -> flat list) at x (a tensor)
local function check_transform(name, t, x, fwd)
  local y = t(x)
  T.near(flat(t:_inverse(y)), flat(x), 1e-8, name .. " round trip")
  T.near(flat(t.inv(y)), flat(x), 1e-8, name .. " inv")
  local ladj = t:log_abs_det_jacobian(x, y)
  if fwd then
    T.near(num(ladj:sum()), fd_logdet(fwd, flat(x)), 1e-6, name .. " log_abs_det_jacobian")
    T.near(num(t.inv:log_abs_det_jacobian(y, x):sum()), -num(ladj:sum()), 1e-12, name .. ".inv log_abs_det_jacobian")
  end
  return y
end
local function elementwise(t, shape)
  return function(v) return flat(t(t64(v):reshape(shape))) end
end

T.test("transforms", function()
  local x = t64({ 0.3, -1.2, 2.0 })
  local px = t64({ 0.3, 1.2, 2.0 })
  check_transform("SoftplusTransform", D.SoftplusTransform(), x, elementwise(D.SoftplusTransform(), { 3 }))
  check_transform("PowerTransform", D.PowerTransform(2.5), px, elementwise(D.PowerTransform(2.5), { 3 }))
  check_transform("PowerTransform(tensor)", D.PowerTransform(t64({ 0.5, -1.0, 3.0 })), px, elementwise(D.PowerTransform(t64({ 0.5, -1.0, 3.0 })), { 3 }))
  check_transform("ExpTransform", D.ExpTransform(), x, elementwise(D.ExpTransform(), { 3 }))
  check_transform("AffineTransform", D.AffineTransform(1.0, -3.0), x, elementwise(D.AffineTransform(1.0, -3.0), { 3 }))
  check_transform("TanhTransform", D.TanhTransform(), x, elementwise(D.TanhTransform(), { 3 }))
  check_transform("SigmoidTransform", D.SigmoidTransform(), x, elementwise(D.SigmoidTransform(), { 3 }))
  T.near(flat(D.AbsTransform()(x)), { 0.3, 1.2, 2.0 }, 0, "AbsTransform")
  T.eq(D.AbsTransform().bijective, false, "AbsTransform not bijective")

  local sb = D.StickBreakingTransform()
  local y = check_transform("StickBreakingTransform", sb, x, function(v)
    local yy = flat(sb(t64(v)))
    return { yy[1], yy[2], yy[3] } -- the first n coordinates of the simplex point
  end)
  T.check(C.simplex:check(y):item(), "StickBreakingTransform lands on the simplex")
  T.eq(sb:forward_shape({ 5, 3 }), { 5, 4 }, "StickBreakingTransform forward_shape")

  local lc = D.LowerCholeskyTransform()
  local m = t64({ { 0.2, 9.0 }, { -0.7, 0.4 } })
  local L = lc(m)
  T.near(L:tolist(), { { math.exp(0.2), 0 }, { -0.7, math.exp(0.4) } }, 1e-12, "LowerCholeskyTransform")
  T.near(num(lc:log_abs_det_jacobian(m, L)), fd_logdet(function(v)
    local o = lc(t64({ { v[1], 0 }, { v[2], v[3] } }))
    return { o[0][0]:item(), o[1][0]:item(), o[1][1]:item() }
  end, { 0.2, -0.7, 0.4 }), 1e-6, "LowerCholeskyTransform log_abs_det_jacobian")
  local pd = D.PositiveDefiniteTransform()
  local P = pd(m)
  T.check(C.positive_definite:check(P):item(), "PositiveDefiniteTransform lands on positive definite matrices")
  T.near(pd:_inverse(P):tolist(), { { 0.2, 0 }, { -0.7, 0.4 } }, 1e-10, "PositiveDefiniteTransform inverse")

  local cc = D.CorrCholeskyTransform()
  local v = t64({ 0.4, -0.3, 1.1 })
  local Lc = check_transform("CorrCholeskyTransform", cc, v, function(w)
    local o = cc(t64(w))
    return { o[1][0]:item(), o[2][0]:item(), o[2][1]:item() }
  end)
  T.check(C.corr_cholesky:check(Lc):item(), "CorrCholeskyTransform lands on corr_cholesky")
  T.eq(cc:forward_shape({ 6 }), { 4, 4 }, "CorrCholeskyTransform forward_shape")
  T.eq(cc:inverse_shape({ 2, 4, 4 }), { 2, 6 }, "CorrCholeskyTransform inverse_shape")
  local cc4 = cc(torch.randn(7, 6, f64))
  T.check(C.corr_cholesky:check(cc4):all():item(), "CorrCholeskyTransform batched")
  T.near(flat(cc:_inverse(cc4)), flat(cc:_inverse(cc(cc:_inverse(cc4)))), 1e-8, "CorrCholeskyTransform batched round trip")

  local base = D.Normal(t64(0.5), t64(2.0))
  local cdt = D.CumulativeDistributionTransform(base)
  check_transform("CumulativeDistributionTransform", cdt, x, elementwise(cdt, { 3 }))

  local it = D.IndependentTransform(D.ExpTransform(), 1)
  T.eq(it.event_dim, 1, "IndependentTransform event_dim")
  T.near(num(it:log_abs_det_jacobian(x, it(x))), 0.3 - 1.2 + 2.0, 1e-12, "IndependentTransform sums")
  local rt = D.ReshapeTransform({ 2, 3 }, { 3, 2 })
  local r6 = torch.arange(12, f64):reshape(2, 2, 3)
  T.eq(rt(r6):size():totable(), { 2, 3, 2 }, "ReshapeTransform")
  T.eq(rt:log_abs_det_jacobian(r6, rt(r6)):size():totable(), { 2 }, "ReshapeTransform log_abs_det_jacobian shape")
  T.raises(function() D.ReshapeTransform({ 2, 3 }, { 5 }) end, "ValueError: in_shape, out_shape have different numbers of elements")

  local cat = D.CatTransform({ D.ExpTransform(), D.AffineTransform(0.0, 3.0) }, 0, { 2, 1 })
  local cy = check_transform("CatTransform", cat, x, function(w) return flat(cat(t64(w))) end)
  T.near(flat(cy), { math.exp(0.3), math.exp(-1.2), 6.0 }, 1e-12, "CatTransform values")
  local st = D.StackTransform({ D.ExpTransform(), D.SoftplusTransform() }, 1)
  local sx = t64({ { 0.1, 0.2 }, { -0.5, 1.0 } })
  check_transform("StackTransform", st, sx, function(w) return flat(st(t64(w):reshape(2, 2))) end)

  local comp = D.ComposeTransform({ D.ExpTransform(), D.AffineTransform(1.0, 2.0), D.PowerTransform(0.5) })
  check_transform("ComposeTransform", comp, x, elementwise(comp, { 3 }))
  T.near(flat(D.identity_transform(x)), flat(x), 0, "identity_transform")
  T.check(D.transforms.PowerTransform == D.PowerTransform and D.transforms.identity_transform == D.identity_transform,
    "transforms at the top level")
end)

T.test("biject_to / transform_to", function()
  local cases = { C.real, C.positive, C.nonnegative, C.greater_than(2.0), C.less_than(-1.0), C.interval(-2.0, 3.0),
    C.unit_interval, C.half_open_interval(0.0, 5.0), C.simplex, C.real_vector, C.independent(C.positive, 1), C.corr_cholesky }
  torch.manual_seed(1)
  for _, c in ipairs(cases) do
    for name, reg in pairs({ biject_to = D.biject_to, transform_to = D.transform_to }) do
      local t = reg(c)
      local shape = c == C.corr_cholesky and { 4, 3 } or { 4, 3 }
      local y = t(torch.randn(shape, f64) * 3)
      T.check(c:check(y):all():item(), string.format("%s(%s) lands in the constraint", name, tostring(c)))
    end
  end
  local function transform_of(c, reg)
    local t = reg(c)
    return t(torch.randn(3, 2, 2, f64))
  end
  T.check(C.lower_cholesky:check(transform_of(C.lower_cholesky, D.transform_to)):all():item(), "transform_to(lower_cholesky)")
  T.check(C.positive_definite:check(transform_of(C.positive_definite, D.transform_to)):all():item(), "transform_to(positive_definite)")
  T.eq(tostring(D.biject_to(C.simplex)), "StickBreakingTransform()", "biject_to(simplex)")
  T.eq(tostring(D.transform_to(C.simplex)), "SoftmaxTransform()", "transform_to(simplex)")
  -- the bijection maps log densities: a Normal pushed to (0, inf) has a proper density
  local t = D.biject_to(C.positive)
  local x = t64({ -0.4, 0.8 })
  T.near(flat(t:log_abs_det_jacobian(x, t(x))), { -0.4, 0.8 }, 1e-12, "biject_to(positive) log_abs_det_jacobian")
  T.raises(function() D.biject_to(C.lower_cholesky) end, "NotImplementedError: Cannot transform LowerCholesky constraints")
  local reg = D.constraint_registry.ConstraintRegistry()
  reg:register(C.greater_than, function(c) return D.AffineTransform(c.lower_bound, 1.0) end)
  T.near(flat(reg(C.greater_than(3.0))(t64({ 1.0 }))), { 4.0 }, 0, "ConstraintRegistry register")
  local deco = reg:register(C.boolean)
  deco(function() return D.AbsTransform() end)
  T.eq(tostring(reg(C.boolean)), "AbsTransform()", "register as a decorator")
end)

T.test("submodules", function()
  T.check(D.normal.Normal == D.Normal and D.von_mises.VonMises == D.VonMises and D.lowrank_multivariate_normal.LowRankMultivariateNormal
    == D.LowRankMultivariateNormal and D.exp_family.ExponentialFamily == D.ExponentialFamily, "submodule tables")
  T.check(D.one_hot_categorical.OneHotCategoricalStraightThrough == D.OneHotCategoricalStraightThrough, "one_hot_categorical")
  T.check(D.constraint_registry.biject_to == D.biject_to and D.kl.kl_divergence == D.kl_divergence, "constraint_registry, kl")
  T.near(flat(D.utils.probs_to_logits(t64({ 0.25 }), true)), { math.log(1 / 3) }, 1e-12, "utils.probs_to_logits")
  T.near(flat(D.utils.logits_to_probs(t64({ 0.0, math.log(3) }))), { 0.25, 0.75 }, 1e-12, "utils.logits_to_probs")
end)

-- ---- CUDA ----

-- each distribution built on a device, so that cuda draws can be scored on the CPU too
local function on(dev)
  local o = { dtype = torch.float32, device = dev }
  local function c(v) return torch.tensor(v, o) end
  -- batch shape (1,) each
  return {
    { "ContinuousBernoulli", D.ContinuousBernoulli(c({ 0.3 })) }, { "FisherSnedecor", D.FisherSnedecor(c({ 5.0 }), c({ 12.0 })) },
    { "GeneralizedPareto", D.GeneralizedPareto(c({ 0.0 }), c({ 1.0 }), c({ 0.2 })) }, { "HalfCauchy", D.HalfCauchy(c({ 2.0 })) },
    { "InverseGamma", D.InverseGamma(c({ 5.0 }), c({ 2.0 })) }, { "Kumaraswamy", D.Kumaraswamy(c({ 2.0 }), c({ 3.0 })) },
    { "Pareto", D.Pareto(c({ 1.5 }), c({ 5.0 })) }, { "VonMises", D.VonMises(c({ 0.5 }), c({ 2.0 })) },
    { "Weibull", D.Weibull(c({ 2.0 }), c({ 1.5 })) }, { "NegativeBinomial", D.NegativeBinomial(c({ 4.5 }), c({ 0.3 })) },
    { "Multinomial", D.Multinomial(10, c({ { 0.2, 0.3, 0.5 } })) },
    { "LowRankMultivariateNormal", D.LowRankMultivariateNormal(c({ { 1.0, -1.0 } }), c({ { 1.0 }, { 2.0 } }), c({ 0.5, 1.5 })) },
    { "LKJCholesky", D.LKJCholesky(3, c({ 2.0 })) }, { "Wishart", D.Wishart(c({ 5.0 }), { covariance_matrix = c({ { 2.0, 0.5 }, { 0.5, 1.0 } }) }) },
    { "LogisticNormal", D.LogisticNormal(c({ { 0.3, -0.2 } }), c({ { 1.0, 0.5 } })) },
    { "MixtureSameFamily", D.MixtureSameFamily(D.Categorical(c({ { 0.3, 0.7 } })), D.Normal(c({ { -1.0, 2.0 } }), c({ { 1.0, 0.5 } }))) },
  }
end

T.test("sample / log_prob on the CPU in float32", function()
  for _, e in ipairs(on("cpu")) do
    torch.manual_seed(3)
    local s = e[2]:sample({ 4 })
    T.check(s.dtype == torch.float32 and e[2]:log_prob(s):isfinite():all():item(), e[1] .. ": float32 sample / log_prob")
    local x = e[2]:expand({ 3, 1 })
    local ev = e[2].event_shape:totable()
    local want = { 2, 3, 1 }
    for _, v in ipairs(ev) do want[#want + 1] = v end
    T.eq({ x.batch_shape:totable(), x.event_shape:totable(), x:sample({ 2 }):size():totable(), x:log_prob(x:sample({ 2 })):size():totable() },
      { { 3, 1 }, ev, want, { 2, 3, 1 } }, e[1] .. ": expand({3, 1}) shapes")
  end
end)

if torch.cuda.is_available() then
  T.test("CUDA", function()
    local cpu = on("cpu")
    for i, e in ipairs(on("cuda")) do
      local name, d = e[1], e[2]
      torch.manual_seed(3)
      local s = d:sample({ 4 })
      T.check(s.device.type == "cuda", name .. ": cuda sample")
      local lp = d:log_prob(s)
      T.check(lp.device.type == "cuda", name .. ": cuda log_prob")
      T.near(flat(lp:cpu()), flat(cpu[i][2]:log_prob(s:cpu())), 1e-4, name .. ": cuda log_prob = cpu log_prob")
    end
    local x = torch.tensor({ 0.3, -1.2, 2.0 }, { device = "cuda" })
    for _, e in ipairs({ { D.SoftplusTransform(), x }, { D.StickBreakingTransform(), x }, { D.CorrCholeskyTransform(), x },
      { D.PowerTransform(2.0), x:abs() }, { D.LowerCholeskyTransform(), x:reshape(1, 3):expand(3, 3) } }) do
      local t, xi = e[1], e[2]
      local y = t(xi)
      T.check(y.device.type == "cuda", tostring(t) .. " on cuda")
      T.check(t:log_abs_det_jacobian(xi, y):isfinite():all():item(), tostring(t) .. " log_abs_det_jacobian on cuda")
      if t.bijective and tostring(t) ~= "LowerCholeskyTransform()" then
        T.near(flat(t:_inverse(y):cpu()), flat(xi:cpu()), 1e-4, tostring(t) .. " round trip on cuda")
      end
    end
  end)
else
  T.skip("no CUDA device: the CUDA section of test_distributions_gaps", 16 * 3 + 4 * 3 + 2)
end
