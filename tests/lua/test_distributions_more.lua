-- torch.distributions beyond the first four, against references written here in Lua's math
-- (a Lanczos lgamma, a digamma series, erf by its Taylor series, the incomplete gamma by its
-- series, densities integrated by Simpson's rule for mass / mean / variance / entropy); samples
-- by the Kolmogorov-Smirnov distance to the CDF (1.95 / sqrt(n) is the 0.1% critical value) and
-- means within 5 standard errors, with fixed seeds; rsample gradients by central differences.
local T = ...
local D = torch.distributions
local TR = D.transforms
local f64 = { dtype = torch.float64 }
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local t64 = function(v) return torch.tensor(v, f64) end

-- ---- references in Lua ----

local LANCZOS = { 0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7 }
local function lgamma(x)
  if x < 0.5 then return math.log(math.pi / math.abs(math.sin(math.pi * x))) - lgamma(1 - x) end
  x = x - 1
  local a, t = LANCZOS[1], x + 7.5
  for i = 1, 8 do a = a + LANCZOS[i + 1] / (x + i) end
  return 0.5 * math.log(2 * math.pi) + (x + 0.5) * math.log(t) - t + math.log(a)
end
local function digamma(x)
  local r = 0
  while x < 6 do r, x = r - 1 / x, x + 1 end
  local f = 1 / (x * x)
  return r + math.log(x) - 0.5 / x - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))))
end
local function erf(x)
  local sum, term, n = x, x, 0
  repeat
    n = n + 1
    term = -term * x * x / n
    sum = sum + term / (2 * n + 1)
  until math.abs(term / (2 * n + 1)) < 1e-17 * math.max(1e-300, math.abs(sum))
  return 2 / math.sqrt(math.pi) * sum
end
local function Phi(z) if math.abs(z) > 6 then return z > 0 and 1 or 0 end return 0.5 * (1 + erf(z / math.sqrt(2))) end
local function gammainc(a, x) -- the regularized lower incomplete gamma P(a, x), by its series
  if x <= 0 then return 0 end
  local term, sum, n = 1 / a, 1 / a, 0
  repeat n = n + 1; term = term * x / (a + n); sum = sum + term until term < 1e-17 * sum
  return math.exp(a * math.log(x) - x - lgamma(a)) * sum
end
local EULER = 0.5772156649015329

-- mass, mean, variance and entropy of a density on [a, b] by Simpson's rule
local function integrate(logpdf, a, b, n)
  n = n or 20000
  local h = (b - a) / n
  local m0, m1, m2, ent = 0, 0, 0, 0
  for i = 0, n do
    local x = a + i * h
    local w = (i == 0 or i == n) and 1 or (i % 2 == 1 and 4 or 2)
    local lp = logpdf(x)
    local p = math.exp(lp)
    if p > 0 then
      m0, m1, m2, ent = m0 + w * p, m1 + w * p * x, m2 + w * p * x * x, ent - w * p * lp
    end
  end
  m0, m1, m2, ent = m0 * h / 3, m1 * h / 3, m2 * h / 3, ent * h / 3
  return m0, m1, m2 - m1 * m1, ent
end

-- a scalar distribution d (float64, batch of one) against a Lua log-density on [a, b]: log_prob at
-- points, and the mass, mean, variance, entropy of the density
local function check_density(name, d, logpdf, a, b, points, opts)
  opts = opts or {}
  local want = {}
  for i, x in ipairs(points) do want[i] = logpdf(x) end
  T.near(d:log_prob(t64(points)):tolist(), want, 1e-10, name .. " log_prob")
  local m0, mean, var, ent = integrate(logpdf, a, b, opts.n)
  local tol = opts.tol or 1e-6
  T.near(m0, 1, tol, name .. ": the Lua density integrates to 1")
  if not opts.no_moments then
    T.near(d.mean:item(), mean, tol, name .. " mean")
    T.near(d.variance:item(), var, tol, name .. " variance")
    T.near(d.stddev:item(), math.sqrt(var), tol, name .. " stddev")
  end
  if not opts.no_entropy then T.near(d:entropy():item(), ent, tol, name .. " entropy") end
end

-- the Kolmogorov-Smirnov distance between a 1-D sample and a CDF (Lua function)
local function ks(sample, cdf, discrete)
  local xs = sample:double():sort():tolist()
  local n, d = #xs, 0
  for i, x in ipairs(xs) do
    if not discrete or i == n or xs[i + 1] ~= x then
      local F = cdf(x)
      d = math.max(d, math.abs(i / n - F))
      if not discrete then d = math.max(d, F - (i - 1) / n) end
    end
  end
  return d
end
local function check_ks(name, sample, cdf, discrete)
  local n = sample:numel()
  local d = ks(sample:reshape(-1), cdf, discrete)
  T.check(d < 1.95 / math.sqrt(n), string.format("%s: KS distance %.4f over %d draws", name, d, n))
end
-- mean of a sample within 5 standard errors of mu (sd the law's standard deviation)
local function check_mean(name, sample, mu, sd)
  local n = sample:numel()
  local m = sample:double():mean():item()
  T.check(math.abs(m - mu) < 5 * sd / math.sqrt(n), string.format("%s: sample mean %.5f, want %.5f +- 5 * %.5f", name, m, mu, sd / math.sqrt(n)))
end

-- ---- continuous ----

T.test("Exponential, Laplace, Gumbel, Cauchy, HalfNormal: densities, moments, cdf / icdf", function()
  local r = 1.7
  local e = D.Exponential(t64(r))
  check_density("Exponential", e, function(x) return x < 0 and -math.huge or math.log(r) - r * x end, 0, 40, { 0.0, 0.3, 2.5 })
  T.near(e:cdf(t64({ 0.4 })):item(), 1 - math.exp(-r * 0.4), 1e-12, "Exponential cdf")
  T.near(e:icdf(t64({ 0.25 })):item(), -math.log(0.75) / r, 1e-12, "Exponential icdf")
  T.near(e.mode:item(), 0, 0, "Exponential mode")
  local loc, s = 0.4, 1.3
  local l = D.Laplace(t64(loc), t64(s))
  check_density("Laplace", l, function(x) return -math.log(2 * s) - math.abs(x - loc) / s end, loc - 40, loc + 40,
    { -1.0, 0.4, 2.0 }, { n = 40000 })
  T.near(l:cdf(t64({ -0.6, 1.4 })):tolist(), { 0.5 * math.exp(-1 / s), 1 - 0.5 * math.exp(-1 / s) }, 1e-12, "Laplace cdf")
  T.near(l:icdf(l:cdf(t64({ -0.6, 1.4 }))):tolist(), { -0.6, 1.4 }, 1e-12, "Laplace icdf(cdf)")
  local g = D.Gumbel(t64(loc), t64(s))
  local function gl(x) local z = (x - loc) / s; return -z - math.exp(-z) - math.log(s) end
  check_density("Gumbel", g, gl, loc - 10, loc + 60, { -1.0, 0.4, 3.0 }, { n = 40000 })
  T.near(g.mean:item(), loc + s * EULER, 1e-12, "Gumbel mean, closed form")
  T.near(g:cdf(t64({ 1.0 })):item(), math.exp(-math.exp(-(1.0 - loc) / s)), 1e-12, "Gumbel cdf")
  T.near(g:icdf(t64({ 0.3 })):item(), loc - s * math.log(-math.log(0.3)), 1e-12, "Gumbel icdf")
  local c = D.Cauchy(t64(loc), t64(s))
  local pts = { -3.0, 0.4, 5.0 }
  local want = {}
  for i, x in ipairs(pts) do want[i] = -math.log(math.pi * s * (1 + ((x - loc) / s) ^ 2)) end
  T.near(c:log_prob(t64(pts)):tolist(), want, 1e-12, "Cauchy log_prob")
  T.near(c:entropy():item(), math.log(4 * math.pi * s), 1e-12, "Cauchy entropy")
  T.near(c:cdf(t64({ loc + s })):item(), 0.75, 1e-12, "Cauchy cdf at loc + scale")
  T.near(c:icdf(t64({ 0.75 })):item(), loc + s, 1e-12, "Cauchy icdf")
  T.check(c.mean:isnan():item() and c.variance:isinf():item(), "Cauchy: mean nan, variance inf")
  local h = D.HalfNormal(t64(s))
  check_density("HalfNormal", h, function(x)
    return x < 0 and -math.huge or 0.5 * math.log(2 / math.pi) - math.log(s) - x * x / (2 * s * s)
  end, 0, 20, { 0.0, 0.7, 2.0 })
  T.near(h:log_prob(t64({ -0.1 })):item(), -math.huge, 0, "HalfNormal: -inf below 0")
  T.near(h:cdf(t64({ 0.9 })):item(), erf(0.9 / (s * math.sqrt(2))), 1e-12, "HalfNormal cdf")
  T.near(h:icdf(h:cdf(t64({ 0.9 }))):item(), 0.9, 1e-10, "HalfNormal icdf(cdf)")
  T.near(D.Normal(t64(1.0), t64(2.0)):icdf(t64({ Phi(0.5) })):item(), 2.0, 1e-10, "Normal icdf")
end)

T.test("Gamma, Chi2, Beta, Dirichlet, StudentT, LogNormal: densities and moments", function()
  local a, r = 2.5, 1.5
  local g = D.Gamma(t64(a), t64(r))
  local function glp(x) return x <= 0 and -math.huge or a * math.log(r) + (a - 1) * math.log(x) - r * x - lgamma(a) end
  check_density("Gamma", g, glp, 0, 60, { 0.1, 1.0, 4.0 })
  T.near(g.mode:item(), (a - 1) / r, 1e-12, "Gamma mode")
  T.near(D.Gamma(t64(0.5), t64(1.0)):entropy():item(), 0.5 + lgamma(0.5) + 0.5 * digamma(0.5), 1e-10, "Gamma entropy, a < 1")
  local c2 = D.Chi2(t64(5.0))
  check_density("Chi2", c2, function(x) return x <= 0 and -math.huge or (1.5 * math.log(x) - x / 2 - 2.5 * math.log(2) - lgamma(2.5)) end,
    0, 100, { 0.5, 3.0 })
  local ba, bb = 2.5, 3.5
  local b = D.Beta(t64(ba), t64(bb))
  check_density("Beta", b, function(x)
    if x <= 0 or x >= 1 then return -math.huge end
    return (ba - 1) * math.log(x) + (bb - 1) * math.log(1 - x) + lgamma(ba + bb) - lgamma(ba) - lgamma(bb)
  end, 0, 1, { 0.1, 0.5, 0.9 })
  T.near(b.mode:item(), (ba - 1) / (ba + bb - 2), 1e-12, "Beta mode")
  local conc = { 1.5, 2.0, 3.5 }
  local dir = D.Dirichlet(t64(conc))
  local x = { 0.2, 0.3, 0.5 }
  local a0 = 7.0
  local lp, ent = lgamma(a0), -lgamma(a0) + (a0 - 3) * digamma(a0)
  for i = 1, 3 do
    lp = lp - lgamma(conc[i]) + (conc[i] - 1) * math.log(x[i])
    ent = ent + lgamma(conc[i]) - (conc[i] - 1) * digamma(conc[i])
  end
  T.near(dir:log_prob(t64(x)):item(), lp, 1e-10, "Dirichlet log_prob")
  T.near(dir:entropy():item(), ent, 1e-10, "Dirichlet entropy")
  for i = 1, 3 do
    T.near(dir.mean:tolist()[i], conc[i] / a0, 1e-12, "Dirichlet mean")
    T.near(dir.variance:tolist()[i], conc[i] * (a0 - conc[i]) / (a0 * a0 * (a0 + 1)), 1e-12, "Dirichlet variance")
    T.near(dir.mode:tolist()[i], (conc[i] - 1) / (a0 - 3), 1e-12, "Dirichlet mode")
  end
  local corner = D.Dirichlet(t64({ { 0.5, 0.2, 0.9 }, { 2.0, 0.5, 1.0 } })).mode
  T.eq(corner:select(0, 0):sort():tolist(), { 0.0, 0.0, 1.0 }, "Dirichlet mode, all concentrations < 1: a vertex")
  T.near(corner:select(0, 1):tolist(), { 1.0, 0.0, 0.0 }, 1e-12, "Dirichlet mode, some concentrations < 1")
  -- Beta(a, b) is the Dirichlet of (a, b) on its first coordinate
  T.near(D.Dirichlet(t64({ ba, bb })):log_prob(t64({ 0.3, 0.7 })):item(), b:log_prob(t64(0.3)):item(), 1e-12, "Beta = Dirichlet")
  local df, loc, sc = 5.0, 0.5, 2.0
  local st = D.StudentT(t64(df), t64(loc), t64(sc))
  local function stlp(y)
    local z = (y - loc) / sc
    return lgamma((df + 1) / 2) - lgamma(df / 2) - 0.5 * math.log(df * math.pi) - math.log(sc) - (df + 1) / 2 * math.log(1 + z * z / df)
  end
  check_density("StudentT", st, stlp, loc - 4000, loc + 4000, { -2.0, 0.5, 7.0 }, { n = 400000, tol = 1e-5, no_moments = true })
  T.near(st.mean:item(), loc, 0, "StudentT mean")
  T.near(st.variance:item(), sc * sc * df / (df - 2), 1e-12, "StudentT variance")
  local v = D.StudentT(t64({ 0.8, 1.5, 3.0 })).variance:tolist()
  T.check(v[1] ~= v[1] and v[2] == math.huge and math.abs(v[3] - 3) < 1e-12, "StudentT variance: nan for df <= 1, inf for df <= 2")
  T.check(D.StudentT(t64({ 0.8 })).mean:isnan():item(), "StudentT mean: nan for df <= 1")
  local mu, s = 0.3, 0.6
  local ln = D.LogNormal(t64(mu), t64(s))
  check_density("LogNormal", ln, function(y)
    if y <= 0 then return -math.huge end
    return -math.log(y * s * math.sqrt(2 * math.pi)) - (math.log(y) - mu) ^ 2 / (2 * s * s)
  end, 0, 80, { 0.5, 1.0, 3.0 }, { n = 80000 })
  T.near(ln.mode:item(), math.exp(mu - s * s), 1e-12, "LogNormal mode")
  T.near(ln:cdf(t64({ 2.0 })):item(), Phi((math.log(2.0) - mu) / s), 1e-10, "LogNormal cdf")
  T.near(ln:icdf(t64({ 0.5 })):item(), math.exp(mu), 1e-10, "LogNormal median")
end)

T.test("continuous samples: KS distance to the CDF, shapes, dtype, broadcasting", function()
  torch.manual_seed(201)
  local n = 20000
  check_ks("Exponential", D.Exponential(2.0):sample({ n }), function(x) return 1 - math.exp(-2 * x) end)
  check_ks("Laplace", D.Laplace(0.5, 2.0):sample({ n }), function(x)
    return x < 0.5 and 0.5 * math.exp((x - 0.5) / 2) or 1 - 0.5 * math.exp(-(x - 0.5) / 2)
  end)
  check_ks("Cauchy", D.Cauchy(-1.0, 0.5):sample({ n }), function(x) return 0.5 + math.atan((x + 1) / 0.5) / math.pi end)
  check_ks("Gumbel", D.Gumbel(1.0, 2.0):sample({ n }), function(x) return math.exp(-math.exp(-(x - 1) / 2)) end)
  check_ks("HalfNormal", D.HalfNormal(1.5):sample({ n }), function(x) return erf(x / (1.5 * math.sqrt(2))) end)
  check_ks("LogNormal", D.LogNormal(0.2, 0.7):sample({ n }), function(x) return Phi((math.log(x) - 0.2) / 0.7) end)
  -- Gamma over a batch, through the boost (a < 1) and the plain branch
  local as, rs = { 0.3, 1.0, 2.5, 40.0 }, { 1.0, 2.0, 0.5, 3.0 }
  local gs = D.Gamma(t64(as), t64(rs)):sample({ n })
  T.eq(gs:size(), torch.Size({ n, 4 }), "Gamma sample shape")
  T.eq(gs.dtype, torch.float64, "Gamma sample dtype")
  for i = 1, 4 do
    check_ks("Gamma(" .. as[i] .. ")", gs:select(1, i - 1), function(x) return gammainc(as[i], rs[i] * x) end)
  end
  T.check(gs:gt(0):all():item(), "Gamma samples are positive")
  check_ks("Chi2(3)", D.Chi2(3.0):sample({ n }), function(x) return gammainc(1.5, x / 2) end)
  -- Beta(2, 3): I_x(2, 3) = sum_{j=2}^{4} C(4, j) x^j (1 - x)^(4 - j)
  local function beta23(x) return 6 * x ^ 2 * (1 - x) ^ 2 + 4 * x ^ 3 * (1 - x) + x ^ 4 end
  check_ks("Beta(2, 3)", D.Beta(2.0, 3.0):sample({ n }), beta23)
  local ds = D.Dirichlet(t64({ 2.0, 1.0, 2.0 })):sample({ n })
  T.eq(ds:size(), torch.Size({ n, 3 }), "Dirichlet sample shape")
  T.near(ds:sum(-1):tolist(), torch.ones(n, f64):tolist(), 1e-12, "Dirichlet samples sum to 1")
  check_ks("Dirichlet(2, 1, 2) first marginal, Beta(2, 3)", ds:select(1, 0), beta23)
  -- StudentT(3): F(t) = 1/2 + (t / (sqrt 3 (1 + t^2 / 3)) + atan(t / sqrt 3)) / pi
  check_ks("StudentT(3)", D.StudentT(3.0, 1.0, 2.0):sample({ n }), function(x)
    local t = (x - 1) / 2
    return 0.5 + (t / (math.sqrt(3) * (1 + t * t / 3)) + math.atan(t / math.sqrt(3))) / math.pi
  end)
  -- shapes: parameters broadcast, sample_shape first, float32 stays float32
  local e = D.Exponential(torch.tensor({ { 1.0 }, { 2.0 } }))
  T.eq(e:sample({ 5, 3 }):size(), torch.Size({ 5, 3, 2, 1 }), "sample_shape ++ batch_shape")
  T.eq(e:sample().dtype, torch.float32, "float32 parameters, float32 samples")
  local l = D.Laplace(torch.zeros(3, 1), torch.ones(1, 4))
  T.eq(l.batch_shape, torch.Size({ 3, 4 }), "parameters broadcast")
  T.eq(l:rsample({ 2 }):size(), torch.Size({ 2, 3, 4 }), "rsample shape")
  T.eq(D.Gamma(torch.ones(2), 1.0):sample_n(7):size(), torch.Size({ 7, 2 }), "sample_n")
  T.eq(D.Beta(t64({ 1.0, 2.0 }), 3.0):sample({ 4 }).dtype, torch.float64, "a number takes the tensor's dtype")
  T.eq(D.Dirichlet(torch.ones(4, 3)).event_shape, torch.Size({ 3 }), "Dirichlet event_shape")
  T.eq(D.Dirichlet(torch.ones(4, 3)).batch_shape, torch.Size({ 4 }), "Dirichlet batch_shape")
  -- reproducible with torch.manual_seed
  torch.manual_seed(5)
  local s1 = D.Gamma(t64({ 0.5, 3.0 }), 1.0):sample({ 10 })
  torch.manual_seed(5)
  T.eq(D.Gamma(t64({ 0.5, 3.0 }), 1.0):sample({ 10 }):tolist(), s1:tolist(), "manual_seed reproduces Gamma draws")
end)

T.test("rsample gradients (central differences) and has_rsample", function()
  local sh = { 3 }
  gradcheck("Exponential rsample", function(r) return D.Exponential(r):rsample(sh) end, { t64({ 0.7, 2.0 }):reshape(2, 1) }, { seed = 11 })
  gradcheck("Laplace rsample", function(m, s) return D.Laplace(m, s):rsample(sh) end, { t64({ 0.1, -1 }), t64({ 0.5, 2 }) }, { seed = 12 })
  gradcheck("Cauchy rsample", function(m, s) return D.Cauchy(m, s):rsample(sh) end, { t64({ 0.1, -1 }), t64({ 0.5, 2 }) }, { seed = 13 })
  gradcheck("Gumbel rsample", function(m, s) return D.Gumbel(m, s):rsample(sh) end, { t64({ 0.1, -1 }), t64({ 0.5, 2 }) }, { seed = 14 })
  gradcheck("HalfNormal rsample", function(s) return D.HalfNormal(s):rsample(sh) end, { t64({ 0.5, 2 }) }, { seed = 15 })
  gradcheck("LogNormal rsample", function(m, s) return D.LogNormal(m, s):rsample(sh) end, { t64({ 0.1, -1 }), t64({ 0.5, 0.2 }) }, { seed = 16 })
  gradcheck("Gamma log_prob", function(a, r) return D.Gamma(a, r):log_prob(t64({ 0.4, 2.0 })) end, { t64({ 0.7, 3 }), t64({ 1.5, 0.5 }) })
  gradcheck("Beta entropy", function(a, b) return D.Beta(a, b):entropy() end, { t64({ 0.7, 3 }), t64({ 1.5, 0.5 }) })
  for _, d in ipairs({ D.Exponential(1.0), D.Laplace(0.0, 1.0), D.Cauchy(0.0, 1.0), D.Gumbel(0.0, 1.0), D.HalfNormal(1.0), D.LogNormal(0.0, 1.0),
    D.Gamma(1.0, 1.0), D.Beta(1.0, 1.0), D.Dirichlet(torch.ones(2)), D.Chi2(1.0), D.StudentT(2.0) }) do
    T.check(d.has_rsample, tostring(d) .. ": has_rsample")
  end
  local r = torch.tensor({ 2.0 }):requires_grad_()
  T.check(not D.Exponential(r):sample().requires_grad, "sample: no gradient")
  T.check(D.Exponential(r):rsample().requires_grad, "rsample: a gradient")
end)

-- ---- discrete ----

local function lchoose(n, k) return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1) end
local function poisson_lp(l, k) return k * math.log(l) - l - lgamma(k + 1) end
local function binom_lp(n, p, k) return lchoose(n, k) + k * math.log(p) + (n - k) * math.log(1 - p) end
-- mean, variance and entropy of a pmf on 0..kmax
local function pmf_moments(lp, kmax)
  local m1, m2, ent = 0, 0, 0
  for k = 0, kmax do
    local l = lp(k)
    local p = math.exp(l)
    if p > 0 then m1, m2, ent = m1 + p * k, m2 + p * k * k, ent - p * l end
  end
  return m1, m2 - m1 * m1, ent
end
local function pmf_cdf(lp)
  return function(x)
    local s = 0
    for k = 0, math.floor(x) do s = s + math.exp(lp(k)) end
    return s
  end
end

T.test("Poisson, Binomial, Geometric, OneHotCategorical: pmf, moments, entropy", function()
  local lam = 3.5
  local p = D.Poisson(t64({ lam }))
  T.near(p:log_prob(t64({ 0, 2, 7 })):tolist(), { poisson_lp(lam, 0), poisson_lp(lam, 2), poisson_lp(lam, 7) }, 1e-10, "Poisson log_prob")
  local m, v = pmf_moments(function(k) return poisson_lp(lam, k) end, 100)
  T.near({ p.mean:item(), p.variance:item(), p.mode:item() }, { m, v, 3 }, 1e-10, "Poisson mean, variance, mode")
  local n, q = 12, 0.3
  local b = D.Binomial(n, t64({ q }))
  T.near(b:log_prob(t64({ 0, 4, 12 })):tolist(), { binom_lp(n, q, 0), binom_lp(n, q, 4), binom_lp(n, q, 12) }, 1e-10, "Binomial log_prob")
  local bm, bv, be = pmf_moments(function(k) return binom_lp(n, q, k) end, n)
  T.near({ b.mean:item(), b.variance:item(), b:entropy():item(), b.mode:item() }, { bm, bv, be, 3 }, 1e-10, "Binomial mean, variance, entropy, mode")
  local bl = D.Binomial({ total_count = t64({ 5, 9 }), logits = t64({ -1.0, 2.0 }) })
  local pl = { 1 / (1 + math.exp(1)), 1 / (1 + math.exp(-2)) }
  T.near(bl:log_prob(t64({ 2, 9 })):tolist(), { binom_lp(5, pl[1], 2), binom_lp(9, pl[2], 9) }, 1e-10, "Binomial from logits")
  T.near(bl.probs:tolist(), pl, 1e-12, "Binomial probs from logits")
  T.eq(D.Binomial(t64({ 2 }), t64({ 0.5 })):enumerate_support():tolist(), { { 0.0 }, { 1.0 }, { 2.0 } }, "Binomial enumerate_support")
  T.raises(function() D.Binomial(t64({ 2, 3 }), t64({ 0.5, 0.5 })):entropy() end, "~Inhomogeneous total count not supported")
  local gp = 0.3
  local g = D.Geometric(t64({ gp }))
  local function glp(k) return k * math.log(1 - gp) + math.log(gp) end
  local gm, gv, ge = pmf_moments(glp, 400)
  T.near(g:log_prob(t64({ 0, 3 })):tolist(), { glp(0), glp(3) }, 1e-12, "Geometric log_prob")
  T.near({ g.mean:item(), g.variance:item(), g:entropy():item() }, { gm, gv, ge }, 1e-10, "Geometric mean, variance, entropy")
  T.near(D.Geometric(t64({ 1.0 })):log_prob(t64({ 0 })):item(), 0, 0, "Geometric(1): log_prob(0) = 0")
  T.near(D.Geometric({ logits = t64({ 0.0 }) }).probs:item(), 0.5, 1e-12, "Geometric from logits")
  local ps = { 0.2, 0.3, 0.5 }
  local oh = D.OneHotCategorical(t64(ps))
  T.eq({ oh.batch_shape, oh.event_shape }, { torch.Size({}), torch.Size({ 3 }) }, "OneHotCategorical shapes")
  T.near(oh:log_prob(t64({ { 0, 1, 0 }, { 0, 0, 1 } })):tolist(), { math.log(0.3), math.log(0.5) }, 1e-12, "OneHotCategorical log_prob")
  T.near(oh:entropy():item(), -(0.2 * math.log(0.2) + 0.3 * math.log(0.3) + 0.5 * math.log(0.5)), 1e-12, "OneHotCategorical entropy")
  T.near(oh.variance:tolist(), { 0.16, 0.21, 0.25 }, 1e-12, "OneHotCategorical variance")
  T.eq(oh.mode:tolist(), { 0.0, 0.0, 1.0 }, "OneHotCategorical mode")
  T.eq(oh:enumerate_support():tolist(), { { 1.0, 0.0, 0.0 }, { 0.0, 1.0, 0.0 }, { 0.0, 0.0, 1.0 } }, "OneHotCategorical enumerate_support")
end)

T.test("discrete samples: KS distance to the CDF, frequencies, shapes", function()
  torch.manual_seed(202)
  local n = 20000
  local lams = { 0.0, 0.7, 6.0, 25.0, 400.0 }
  local ps = D.Poisson(t64(lams)):sample({ n })
  T.eq(ps:size(), torch.Size({ n, 5 }), "Poisson sample shape")
  T.eq(ps:select(1, 0):abs():sum():item(), 0.0, "Poisson(0) draws 0")
  for i = 2, 5 do
    local l = lams[i]
    local s = ps:select(1, i - 1)
    check_ks("Poisson(" .. l .. ")", s, pmf_cdf(function(k) return poisson_lp(l, k) end), true)
    check_mean("Poisson(" .. l .. ")", s, l, math.sqrt(l))
    T.check(s:eq(s:floor()):all():item() and s:ge(0):all():item(), "Poisson draws are counts")
  end
  local cases = { { 10, 0.3 }, { 30, 0.9 }, { 1000, 0.02 }, { 500, 0.6 }, { 60, 0.5 } }
  local ns, qs = {}, {}
  for i, c in ipairs(cases) do ns[i], qs[i] = c[1], c[2] end
  local bs = D.Binomial(t64(ns), t64(qs)):sample({ n })
  for i, c in ipairs(cases) do
    local s = bs:select(1, i - 1)
    local name = string.format("Binomial(%d, %g)", c[1], c[2])
    check_ks(name, s, pmf_cdf(function(k) return binom_lp(c[1], c[2], k) end), true)
    check_mean(name, s, c[1] * c[2], math.sqrt(c[1] * c[2] * (1 - c[2])))
    T.check(s:ge(0):all():item() and s:le(c[1]):all():item(), name .. ": draws in [0, n]")
  end
  local gs = D.Geometric(t64({ 0.25 })):sample({ n })
  check_ks("Geometric(0.25)", gs, function(x) return 1 - 0.75 ^ (math.floor(x) + 1) end, true)
  local oh = D.OneHotCategorical(torch.tensor({ { 0.1, 0.9, 0.0 }, { 0.5, 0.25, 0.25 } })):sample({ n })
  T.eq(oh:size(), torch.Size({ n, 2, 3 }), "OneHotCategorical sample shape")
  T.eq(oh.dtype, torch.float32, "OneHotCategorical sample dtype")
  T.check(oh:sum(-1):eq(1):all():item(), "one-hot rows")
  local freq = oh:double():mean(0):tolist()
  for b, row in ipairs({ { 0.1, 0.9, 0.0 }, { 0.5, 0.25, 0.25 } }) do
    for k = 1, 3 do
      local se = math.sqrt(row[k] * (1 - row[k]) / n)
      T.check(math.abs(freq[b][k] - row[k]) <= 5 * se, string.format("OneHotCategorical frequency [%d][%d]", b, k))
    end
  end
  T.eq(D.Poisson(torch.ones(2, 3)):sample({ 4 }):size(), torch.Size({ 4, 2, 3 }), "Poisson sample_shape ++ batch")
  T.eq(D.Binomial(5, torch.full({ 2 }, 0.5)):sample({ 3 }).dtype, torch.float32, "Binomial: probs' dtype")
end)

-- ---- Independent, MultivariateNormal, TransformedDistribution, Relaxed ----

-- 2x2 helpers: log det, inverse, quadratic form
local function det2(m) return m[1][1] * m[2][2] - m[1][2] * m[2][1] end
local function inv2(m)
  local d = det2(m)
  return { { m[2][2] / d, -m[1][2] / d }, { -m[2][1] / d, m[1][1] / d } }
end
local function quad2(m, x) return x[1] * (m[1][1] * x[1] + m[1][2] * x[2]) + x[2] * (m[2][1] * x[1] + m[2][2] * x[2]) end
local function mvn_lp(mu, cov, x)
  local d = { x[1] - mu[1], x[2] - mu[2] }
  return -0.5 * quad2(inv2(cov), d) - 0.5 * math.log(det2(cov)) - math.log(2 * math.pi)
end

T.test("Independent, MultivariateNormal: shapes, log_prob, entropy, samples, gradients", function()
  local locs, scales = { { 0.5, -1.0 }, { 0.0, 2.0 } }, { { 1.0, 2.0 }, { 0.5, 1.5 } }
  local ind = D.Independent(D.Normal(t64(locs), t64(scales)), 1)
  T.eq({ ind.batch_shape, ind.event_shape }, { torch.Size({ 2 }), torch.Size({ 2 }) }, "Independent shapes")
  local x = { { 0.1, 0.2 }, { -0.3, 1.0 } }
  local want, went = {}, {}
  for i = 1, 2 do
    want[i], went[i] = 0, 0
    for j = 1, 2 do
      want[i] = want[i] - (x[i][j] - locs[i][j]) ^ 2 / (2 * scales[i][j] ^ 2) - math.log(scales[i][j]) - 0.5 * math.log(2 * math.pi)
      went[i] = went[i] + 0.5 + 0.5 * math.log(2 * math.pi) + math.log(scales[i][j])
    end
  end
  T.near(ind:log_prob(t64(x)):tolist(), want, 1e-12, "Independent log_prob sums the event dims")
  T.near(ind:entropy():tolist(), went, 1e-12, "Independent entropy")
  T.eq(D.Independent(D.Normal(torch.zeros(4, 3, 2), 1.0), 2).event_shape, torch.Size({ 3, 2 }), "two reinterpreted dims")
  T.eq(ind:sample({ 5 }):size(), torch.Size({ 5, 2, 2 }), "Independent sample shape")
  T.eq(tostring(D.Independent(D.Normal(0.0, 1.0):expand({ 3 }), 1)), "Independent(Normal(loc: torch.Size([3]), scale: torch.Size([3])), 1)", "Independent repr")
  T.raises(function() D.Independent(D.Normal(torch.zeros(3), 1.0), 2) end,
    "ValueError: Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual 2 vs 1")

  local mu, cov = { 1.0, -0.5 }, { { 2.0, 0.6 }, { 0.6, 1.0 } }
  local m1 = D.MultivariateNormal(t64(mu), { covariance_matrix = t64(cov) })
  local prec = inv2(cov)
  local L = { { math.sqrt(2.0), 0 }, { 0.6 / math.sqrt(2.0), math.sqrt(1.0 - 0.18) } }
  local m2 = D.MultivariateNormal(t64(mu), { precision_matrix = t64(prec) })
  local m3 = D.MultivariateNormal(t64(mu), { scale_tril = t64(L) })
  local pts = { { 0.0, 0.0 }, { 2.0, -1.0 } }
  local want_lp = { mvn_lp(mu, cov, pts[1]), mvn_lp(mu, cov, pts[2]) }
  local ent = 1 + math.log(2 * math.pi) + 0.5 * math.log(det2(cov))
  for name, d in pairs({ covariance_matrix = m1, precision_matrix = m2, scale_tril = m3 }) do
    T.near(d:log_prob(t64(pts)):tolist(), want_lp, 1e-10, "MultivariateNormal log_prob from " .. name)
    T.near(d:entropy():item(), ent, 1e-10, "MultivariateNormal entropy from " .. name)
    T.near(d.covariance_matrix:tolist(), cov, 1e-10, "covariance_matrix from " .. name)
    T.near(d.precision_matrix:tolist(), prec, 1e-10, "precision_matrix from " .. name)
    T.near(d.scale_tril:tolist(), L, 1e-10, "scale_tril from " .. name)
    T.near(d.variance:tolist(), { 2.0, 1.0 }, 1e-10, "variance from " .. name)
  end
  -- a batch of locs against one matrix: batch broadcast
  local mb = D.MultivariateNormal(torch.zeros(3, 2, f64), { covariance_matrix = t64(cov) })
  T.eq({ mb.batch_shape, mb.event_shape }, { torch.Size({ 3 }), torch.Size({ 2 }) }, "MVN shapes")
  T.eq(mb:sample({ 4 }):size(), torch.Size({ 4, 3, 2 }), "MVN sample shape")
  T.eq(mb.covariance_matrix:size(), torch.Size({ 3, 2, 2 }), "MVN covariance_matrix expanded to the batch")
  T.eq(mb:expand({ 5, 3 }).batch_shape, torch.Size({ 5, 3 }), "MVN expand")
  T.eq(mb:log_prob(torch.zeros(4, 1, 2, f64)):size(), torch.Size({ 4, 3 }), "MVN log_prob broadcasts a value")
  torch.manual_seed(203)
  local n = 40000
  local s = m1:sample({ n })
  local c = (s - s:mean(0)):t():matmul(s - s:mean(0)) / (n - 1)
  for i = 1, 2 do
    check_mean("MVN coordinate " .. i, s:select(1, i - 1), mu[i], math.sqrt(cov[i][i]))
    for j = 1, 2 do
      -- the sample covariance's standard error: sqrt((cov_ii cov_jj + cov_ij^2) / n)
      local se = math.sqrt((cov[i][i] * cov[j][j] + cov[i][j] ^ 2) / n)
      T.check(math.abs(c[i - 1][j - 1]:item() - cov[i][j]) < 5 * se, "MVN sample covariance " .. i .. j)
    end
  end
  -- the projection onto (1, 1) is Normal(mu1 + mu2, sum of cov)
  local v = cov[1][1] + cov[2][2] + 2 * cov[1][2]
  check_ks("MVN projection", s:sum(-1), function(z) return Phi((z - mu[1] - mu[2]) / math.sqrt(v)) end)
  gradcheck("MVN rsample", function(m, l) return D.MultivariateNormal(m, { scale_tril = l:tril() }):rsample({ 3 }) end,
    { t64(mu), t64(L) }, { seed = 17 })
  gradcheck("MVN log_prob", function(m, l) return D.MultivariateNormal(m, { scale_tril = l:tril() }):log_prob(t64(pts)) end,
    { t64(mu), t64(L) })
  gradcheck("Independent rsample", function(m, sc) return D.Independent(D.Normal(m, sc), 1):rsample({ 2 }) end,
    { t64(locs), t64(scales) }, { seed = 18 })
end)

T.test("TransformedDistribution and the transforms; RelaxedBernoulli, RelaxedOneHotCategorical", function()
  local x = t64({ -1.5, 0.2, 2.0 })
  local function each(t, f) local out = {}; for i, v in ipairs(t:tolist()) do out[i] = f(v) end; return out end
  local e, sg, th = TR.ExpTransform(), TR.SigmoidTransform(), TR.TanhTransform()
  local af = TR.AffineTransform(1.0, -3.0)
  T.near(e(x):tolist(), each(x, math.exp), 1e-12, "ExpTransform")
  T.near(sg(x):tolist(), each(x, function(v) return 1 / (1 + math.exp(-v)) end), 1e-12, "SigmoidTransform")
  T.near(th(x):tolist(), each(x, function(v) return (math.exp(2 * v) - 1) / (math.exp(2 * v) + 1) end), 1e-12, "TanhTransform")
  T.near(af(x):tolist(), each(x, function(v) return 1 - 3 * v end), 1e-12, "AffineTransform")
  for name, t in pairs({ exp = e, sigmoid = sg, tanh = th, affine = af }) do
    T.near(t.inv(t(x)):tolist(), x:tolist(), 1e-10, name .. ": inv undoes the transform")
    -- log |dy/dx| against central differences
    local h = 1e-6
    local num = each(x, function(v) return math.log(math.abs((t(t64(v + h)):item() - t(t64(v - h)):item()) / (2 * h))) end)
    T.near(t:log_abs_det_jacobian(x, t(x)):tolist(), num, 1e-7, name .. ": log_abs_det_jacobian")
    T.near(t.inv:log_abs_det_jacobian(t(x), x):tolist(), each(t64(num), function(v) return -v end), 1e-7, name .. ".inv: log_abs_det_jacobian")
  end
  local ct = TR.ComposeTransform({ af, e })
  T.near(ct(x):tolist(), each(x, function(v) return math.exp(1 - 3 * v) end), 1e-12, "ComposeTransform")
  T.near(ct:log_abs_det_jacobian(x, ct(x)):tolist(), each(x, function(v) return math.log(3) + 1 - 3 * v end), 1e-12, "ComposeTransform jacobian")
  T.eq(ct.sign, -1, "ComposeTransform sign")
  -- y = exp(1 - 3 z), z ~ N(0.5, 1.2): a LogNormal(1 - 1.5, 3.6), with a decreasing transform
  local td = D.TransformedDistribution(D.Normal(t64(0.5), t64(1.2)), { af, e })
  local ln = D.LogNormal(t64(-0.5), t64(3.6))
  local ys = t64({ 0.3, 1.0, 4.0 })
  T.near(td:log_prob(ys):tolist(), each(ys, function(y)
    return -math.log(y * 3.6 * math.sqrt(2 * math.pi)) - (math.log(y) + 0.5) ^ 2 / (2 * 3.6 ^ 2)
  end), 1e-12, "TransformedDistribution log_prob")
  T.near(td:cdf(ys):tolist(), ln:cdf(ys):tolist(), 1e-12, "TransformedDistribution cdf through a decreasing map")
  T.near(td:icdf(t64({ 0.2, 0.7 })):tolist(), ln:icdf(t64({ 0.2, 0.7 })):tolist(), 1e-10, "TransformedDistribution icdf")
  T.eq(tostring(td.support), "GreaterThan(lower_bound=0.0)", "support: the last codomain")
  gradcheck("TransformedDistribution rsample", function(m, s)
    return D.TransformedDistribution(D.Normal(m, s), { TR.AffineTransform(0.5, 2.0), TR.TanhTransform() }):rsample({ 2 })
  end, { t64({ 0.1, -0.3 }), t64({ 0.4, 0.2 }) }, { seed = 19 })
  -- RelaxedBernoulli (binary Concrete): density of x in (0, 1) with a = p / (1 - p), temperature t
  local tau, p = 0.7, 0.3
  local a = p / (1 - p)
  local rb = D.RelaxedBernoulli(t64(tau), { probs = t64({ p }) })
  local function rb_lp(y) return math.log(tau * a * y ^ (-tau - 1) * (1 - y) ^ (-tau - 1) / (a * y ^ -tau + (1 - y) ^ -tau) ^ 2) end
  T.near(rb:log_prob(t64({ 0.2, 0.6 })):tolist(), { rb_lp(0.2), rb_lp(0.6) }, 1e-10, "RelaxedBernoulli log_prob")
  torch.manual_seed(204)
  -- its CDF: P(X <= y) = P(logistic noise <= t logit(y) - log a)
  check_ks("RelaxedBernoulli", rb:sample({ 20000 }), function(y)
    local z = tau * math.log(y / (1 - y)) - math.log(a)
    return 1 / (1 + math.exp(-z))
  end)
  -- RelaxedOneHotCategorical (Concrete): (K-1)! t^(K-1) prod(a_k x_k^(-t-1)) / (sum a_k x_k^(-t))^K
  local probs, xs = { 0.2, 0.3, 0.5 }, { 0.1, 0.6, 0.3 }
  local ro = D.RelaxedOneHotCategorical(t64(tau), { probs = t64(probs) })
  local num, den = math.log(2) + 2 * math.log(tau), 0
  for k = 1, 3 do
    num = num + math.log(probs[k]) + (-tau - 1) * math.log(xs[k])
    den = den + probs[k] * xs[k] ^ -tau
  end
  T.near(ro:log_prob(t64(xs)):item(), num - 3 * math.log(den), 1e-10, "RelaxedOneHotCategorical log_prob")
  local rs = ro:rsample({ 6 })
  T.eq(rs:size(), torch.Size({ 6, 3 }), "RelaxedOneHotCategorical sample shape")
  T.near(rs:sum(-1):tolist(), torch.ones(6, f64):tolist(), 1e-12, "RelaxedOneHotCategorical samples on the simplex")
  gradcheck("RelaxedBernoulli rsample", function(l) return D.RelaxedBernoulli(t64(0.5), { logits = l }):rsample({ 3 }) end,
    { t64({ -0.5, 1.0 }) }, { seed = 20 })
  gradcheck("RelaxedOneHotCategorical rsample", function(l) return D.RelaxedOneHotCategorical(t64(0.5), { logits = l }):rsample({ 2 }) end,
    { t64({ -0.5, 1.0, 0.2 }) }, { seed = 21 })
end)

-- ---- kl_divergence ----

-- KL(p || q) = integral of p (log p - log q), Simpson's rule on [a, b]
local function kl_integral(lp, lq, a, b, n)
  n = n or 40000
  local h, s = (b - a) / n, 0
  for i = 0, n do
    local x = a + i * h
    local w = (i == 0 or i == n) and 1 or (i % 2 == 1 and 4 or 2)
    local l = lp(x)
    if l > -math.huge then s = s + w * math.exp(l) * (l - lq(x)) end
  end
  return s * h / 3
end
local function kl_sum(lp, lq, kmax)
  local s = 0
  for k = 0, kmax do s = s + math.exp(lp(k)) * (lp(k) - lq(k)) end
  return s
end

T.test("kl_divergence against integrals and sums; register_kl; unregistered pairs", function()
  local function exp_lp(r) return function(x) return math.log(r) - r * x end end
  T.near(D.kl_divergence(D.Exponential(t64(1.5)), D.Exponential(t64(0.4))):item(), kl_integral(exp_lp(1.5), exp_lp(0.4), 0, 40), 1e-7, "KL Exponential")
  local function gam_lp(a, r) return function(x) return x <= 0 and -math.huge or a * math.log(r) + (a - 1) * math.log(x) - r * x - lgamma(a) end end
  T.near(D.kl_divergence(D.Gamma(t64(2.5), t64(1.5)), D.Gamma(t64(1.5), t64(0.7))):item(),
    kl_integral(gam_lp(2.5, 1.5), gam_lp(1.5, 0.7), 0, 60), 1e-7, "KL Gamma")
  T.near(D.kl_divergence(D.Chi2(t64(4.0)), D.Gamma(t64(1.5), t64(0.7))):item(),
    kl_integral(gam_lp(2, 0.5), gam_lp(1.5, 0.7), 0, 120), 1e-7, "KL Chi2 || Gamma: a subclass finds Gamma's formula")
  local function beta_lp(a, b) return function(x)
    if x <= 0 or x >= 1 then return -math.huge end
    return (a - 1) * math.log(x) + (b - 1) * math.log(1 - x) + lgamma(a + b) - lgamma(a) - lgamma(b)
  end end
  T.near(D.kl_divergence(D.Beta(t64(2.5), t64(3.0)), D.Beta(t64(1.5), t64(2.0))):item(),
    kl_integral(beta_lp(2.5, 3.0), beta_lp(1.5, 2.0), 0, 1), 1e-7, "KL Beta")
  local function lap_lp(m, s) return function(x) return -math.log(2 * s) - math.abs(x - m) / s end end
  T.near(D.kl_divergence(D.Laplace(t64(0.5), t64(1.0)), D.Laplace(t64(-0.3), t64(2.0))):item(),
    kl_integral(lap_lp(0.5, 1.0), lap_lp(-0.3, 2.0), -40, 40, 80000), 1e-6, "KL Laplace")
  local function gum_lp(m, s) return function(x) local z = (x - m) / s; return -z - math.exp(-z) - math.log(s) end end
  T.near(D.kl_divergence(D.Gumbel(t64(0.5), t64(1.0)), D.Gumbel(t64(-0.3), t64(2.0))):item(),
    kl_integral(gum_lp(0.5, 1.0), gum_lp(-0.3, 2.0), -8, 50), 1e-7, "KL Gumbel")
  local function hn_lp(s) return function(x) return 0.5 * math.log(2 / math.pi) - math.log(s) - x * x / (2 * s * s) end end
  T.near(D.kl_divergence(D.HalfNormal(t64(0.8)), D.HalfNormal(t64(1.7))):item(), kl_integral(hn_lp(0.8), hn_lp(1.7), 0, 20), 1e-7, "KL HalfNormal")
  local function ln_lp(m, s) return function(y) return y <= 0 and -math.huge or -math.log(y * s * math.sqrt(2 * math.pi)) - (math.log(y) - m) ^ 2 / (2 * s * s) end end
  T.near(D.kl_divergence(D.LogNormal(t64(0.2), t64(0.5)), D.LogNormal(t64(0.0), t64(0.9))):item(),
    kl_integral(ln_lp(0.2, 0.5), ln_lp(0.0, 0.9), 0, 40, 80000), 1e-6, "KL LogNormal")
  -- Dirichlet: the closed form of Lua's lgamma / digamma
  local ap, aq = { 1.5, 2.0, 0.7 }, { 1.0, 3.0, 2.0 }
  local sp, sq = 4.2, 6.0
  local want = lgamma(sp) - lgamma(sq)
  for i = 1, 3 do want = want - lgamma(ap[i]) + lgamma(aq[i]) + (ap[i] - aq[i]) * (digamma(ap[i]) - digamma(sp)) end
  T.near(D.kl_divergence(D.Dirichlet(t64(ap)), D.Dirichlet(t64(aq))):item(), want, 1e-10, "KL Dirichlet")
  -- MVN: (tr(Sq^-1 Sp) + (mq - mp)^T Sq^-1 (mq - mp) - k + log(det Sq / det Sp)) / 2
  local mp, cp = { 0.5, -1.0 }, { { 2.0, 0.6 }, { 0.6, 1.0 } }
  local mq, cq = { 0.0, 0.3 }, { { 1.0, -0.2 }, { -0.2, 0.5 } }
  local iq = inv2(cq)
  local tr = iq[1][1] * cp[1][1] + iq[1][2] * cp[2][1] + iq[2][1] * cp[1][2] + iq[2][2] * cp[2][2]
  local mkl = 0.5 * (tr + quad2(iq, { mq[1] - mp[1], mq[2] - mp[2] }) - 2 + math.log(det2(cq) / det2(cp)))
  local kl = D.kl_divergence(D.MultivariateNormal(t64(mp), { covariance_matrix = t64(cp) }),
    D.MultivariateNormal(t64({ mq, mq, mq }), { precision_matrix = t64(inv2(cq)) }))
  T.near(kl:tolist(), { mkl, mkl, mkl }, 1e-10, "KL MultivariateNormal (q batched)")
  -- Independent: the sum of the Normal KLs
  local nkl = function(m1, s1, m2, s2) return math.log(s2 / s1) + (s1 * s1 + (m1 - m2) ^ 2) / (2 * s2 * s2) - 0.5 end
  local ip = D.Independent(D.Normal(t64({ 0.5, 1.0 }), t64({ 1.0, 2.0 })), 1)
  local iq2 = D.Independent(D.Normal(t64({ 0.0, 0.0 }), t64({ 2.0, 0.5 })), 1)
  T.near(D.kl_divergence(ip, iq2):item(), nkl(0.5, 1, 0, 2) + nkl(1, 2, 0, 0.5), 1e-12, "KL Independent")
  -- discrete: sums over the support
  T.near(D.kl_divergence(D.Poisson(t64(3.0)), D.Poisson(t64(5.5))):item(),
    kl_sum(function(k) return poisson_lp(3.0, k) end, function(k) return poisson_lp(5.5, k) end, 100), 1e-10, "KL Poisson")
  T.near(D.kl_divergence(D.Binomial(8, t64(0.3)), D.Binomial(8, t64(0.6))):item(),
    kl_sum(function(k) return binom_lp(8, 0.3, k) end, function(k) return binom_lp(8, 0.6, k) end, 8), 1e-10, "KL Binomial")
  T.near(D.kl_divergence(D.Binomial(8, t64({ 0.3 })), D.Binomial(6, t64({ 0.6 }))):item(), math.huge, 0, "KL Binomial, p.n > q.n: inf")
  T.raises(function() D.kl_divergence(D.Binomial(6, t64(0.3)), D.Binomial(8, t64(0.6))) end,
    "~KL between Binomials where q.total_count > p.total_count is not implemented")
  local function geo(p) return function(k) return k * math.log(1 - p) + math.log(p) end end
  T.near(D.kl_divergence(D.Geometric(t64(0.3)), D.Geometric(t64(0.6))):item(), kl_sum(geo(0.3), geo(0.6), 400), 1e-10, "KL Geometric")
  local a, b = { 0.2, 0.3, 0.5 }, { 0.5, 0.25, 0.25 }
  local okl = 0
  for i = 1, 3 do okl = okl + a[i] * math.log(a[i] / b[i]) end
  T.near(D.kl_divergence(D.OneHotCategorical(t64(a)), D.OneHotCategorical(t64(b))):item(), okl, 1e-12, "KL OneHotCategorical")
  T.near(D.kl_divergence(D.Categorical(t64({ 0.5, 0.5, 0.0 })), D.Categorical(t64(b))):item(), 0.5 * math.log(2), 1e-12,
    "KL Categorical with a zero probability in p")
  T.near(D.kl_divergence(D.Categorical(t64(b)), D.Categorical(t64({ 0.5, 0.5, 0.0 }))):item(), math.huge, 0, "KL Categorical: q zero where p is not")
  T.near(D.kl_divergence(D.Bernoulli(t64(0.3)), D.Bernoulli(t64(0.8))):item(), 0.3 * math.log(0.3 / 0.8) + 0.7 * math.log(0.7 / 0.2), 1e-12, "KL Bernoulli")
  T.near(D.kl_divergence(D.Bernoulli(t64(0.0)), D.Bernoulli(t64(0.8))):item(), math.log(1 / 0.2), 1e-12, "KL Bernoulli, p = 0")
  -- unregistered pairs, register_kl
  T.raises(function() D.kl_divergence(D.Cauchy(0.0, 1.0), D.Gumbel(0.0, 1.0)) end,
    "NotImplementedError: No KL(p || q) is implemented for p type Cauchy and q type Gumbel")
  local called
  local fn = function(p, q) called = { p, q }; return (p.loc - q.loc):abs() end
  T.check(D.register_kl(D.Cauchy, D.Gumbel, fn) == fn, "register_kl returns the function")
  local pc, qg = D.Cauchy(1.0, 1.0), D.Gumbel(-2.0, 1.0)
  T.near(D.kl_divergence(pc, qg):item(), 3.0, 0, "kl_divergence calls the registered function")
  T.check(called[1] == pc and called[2] == qg, "with p and q")
  T.raises(function() D.register_kl(D.Cauchy, D.Gumbel) end, "~register_kl(type_p, type_q, fn)")
end)

-- ---- validation, errors, expand, reprs ----

T.test("validate_args: parameters and, when asked, values; errors; expand", function()
  local function bad(f, want, msg) T.raises(f, "~" .. want, msg) end
  bad(function() D.Exponential(torch.tensor({ 1.0, -1.0 })) end, "Expected parameter rate to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values")
  bad(function() D.Gamma(1.0, 0.0) end, "Expected parameter rate to satisfy the constraint GreaterThan(lower_bound=0.0)")
  bad(function() D.Gamma(-1.0, 1.0) end, "Expected parameter concentration to satisfy the constraint GreaterThan(lower_bound=0.0)")
  bad(function() D.Beta(1.0, -2.0) end, "Expected parameter concentration0 to satisfy")
  bad(function() D.Dirichlet(torch.tensor({ 1.0, 0.0 })) end, "Expected parameter concentration to satisfy the constraint IndependentConstraint(GreaterThan(lower_bound=0.0), 1)")
  bad(function() D.Poisson(-0.5) end, "Expected parameter rate to satisfy the constraint GreaterThanEq(lower_bound=0.0)")
  bad(function() D.Binomial(2.5, 0.5) end, "Expected parameter total_count to satisfy the constraint IntegerGreaterThan(lower_bound=0)")
  bad(function() D.Binomial(3, 1.5) end, "Expected parameter probs to satisfy the constraint Interval(lower_bound=0.0, upper_bound=1.0)")
  bad(function() D.Bernoulli(torch.tensor({ 1.5 })) end, "Expected parameter probs to satisfy the constraint Interval(lower_bound=0.0, upper_bound=1.0)")
  bad(function() D.Categorical(torch.tensor({ 0.5, -0.1, 0.6 })) end, "Expected parameter probs to satisfy the constraint Simplex()")
  bad(function() D.StudentT(0.0) end, "Expected parameter df to satisfy")
  bad(function() D.Chi2(-3.0) end, "Expected parameter df to satisfy")
  bad(function() D.Laplace(0 / 0, 1.0) end, "Expected parameter loc to satisfy the constraint Real()")
  bad(function() D.MultivariateNormal(torch.zeros(2), { covariance_matrix = torch.tensor({ { 1.0, 2.0 }, { 2.0, 1.0 } }) }) end,
    "Expected parameter covariance_matrix to satisfy the constraint PositiveDefinite()")
  bad(function() D.MultivariateNormal(torch.zeros(2), { scale_tril = torch.tensor({ { 1.0, 0.5 }, { 0.0, 1.0 } }) }) end,
    "Expected parameter scale_tril to satisfy the constraint LowerCholesky()")
  T.check(D.Exponential(-1.0, { validate_args = false }) ~= nil, "validate_args=false skips the checks")
  -- values: checked with validate_args=true
  T.check(pcall(function() return D.Poisson(2.0):log_prob(torch.tensor({ 1.5 })) end), "values unchecked by default")
  bad(function() D.Poisson(2.0, { validate_args = true }):log_prob(torch.tensor({ -1.0 })) end,
    "ValueError: Expected value argument (Tensor of shape (1,)) to be within the support (IntegerGreaterThan(lower_bound=0)) of the distribution Poisson(rate: tensor(2.)), but found invalid values")
  bad(function() D.Beta(2.0, 2.0, { validate_args = true }):log_prob(torch.tensor(1.5)) end, "to be within the support (Interval(lower_bound=0.0, upper_bound=1.0))")
  bad(function() D.MultivariateNormal(torch.zeros(2), { covariance_matrix = torch.eye(2), validate_args = true }):log_prob(torch.zeros(3)) end,
    "ValueError: The right-most size of value must match event_shape: torch.Size([3]) vs torch.Size([2]).")
  bad(function() D.Exponential(torch.ones(3), { validate_args = true }):log_prob(torch.ones(2)) end,
    "ValueError: Value is not broadcastable with batch_shape+event_shape: torch.Size([2]) vs torch.Size([3]).")
  D.Distribution.set_default_validate_args(true)
  local ok = pcall(function() D.Exponential(1.0):log_prob(torch.tensor(-1.0)) end)
  D.Distribution.set_default_validate_args(false)
  local off = pcall(function() D.Exponential(-1.0) end)
  D.Distribution.set_default_validate_args(nil)
  T.check(not ok and off, "set_default_validate_args(true) checks values, (false) nothing")
  -- constructor errors
  bad(function() D.MultivariateNormal(torch.zeros(2)) end, "ValueError: Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
  bad(function() D.MultivariateNormal(torch.zeros(2), { covariance_matrix = torch.eye(2), scale_tril = torch.eye(2) }) end, "Exactly one of")
  bad(function() D.MultivariateNormal(torch.tensor(1.0), { covariance_matrix = torch.eye(1) }) end, "ValueError: loc must be at least one-dimensional.")
  bad(function() D.MultivariateNormal(torch.zeros(2), { scale_tril = torch.ones(2) }) end,
    "ValueError: scale_tril matrix must be at least two-dimensional, with optional leading batch dimensions")
  bad(function() D.Dirichlet(torch.tensor(1.0)) end, "ValueError: `concentration` parameter must be at least one-dimensional.")
  bad(function() D.Categorical(torch.tensor(1.0)) end, "ValueError: `probs` parameter must be at least one-dimensional.")
  bad(function() D.Geometric() end, "Either `probs` or `logits` must be specified, but not both.")
  bad(function() D.Gamma(1.0) end, "missing required argument 'rate'")
  bad(function() D.Exponential(1.0, { rates = 2 }) end, "unknown keyword 'rates'")
  bad(function() D.Poisson(1.0):rsample() end, "NotImplementedError: Poisson does not implement rsample")
  bad(function() D.Poisson(1.0):cdf(torch.tensor(1.0)) end, "NotImplementedError: Poisson does not implement cdf")
  bad(function() D.Exponential(1.0):enumerate_support() end, "NotImplementedError: Exponential does not implement enumerate_support")
  -- expand: a new distribution over a larger batch, the same law
  for _, d in ipairs({ D.Exponential(t64({ 1.5 })), D.Laplace(t64({ 0.0 }), t64({ 2.0 })), D.Gamma(t64({ 2.0 }), t64({ 3.0 })),
    D.Chi2(t64({ 3.0 })), D.Beta(t64({ 2.0 }), t64({ 0.5 })), D.StudentT(t64({ 4.0 })), D.Poisson(t64({ 2.0 })),
    D.Binomial(4, t64({ 0.3 })), D.Geometric({ logits = t64({ 0.3 }) }), D.LogNormal(t64({ 0.0 }), t64({ 1.0 })),
    D.HalfNormal(t64({ 1.0 })), D.Gumbel(t64({ 0.0 }), t64({ 1.0 })), D.Cauchy(t64({ 0.0 }), t64({ 1.0 })),
    D.Bernoulli(t64({ 0.3 })), D.Normal(t64({ 0.0 }), t64({ 1.0 })) }) do
    local e = d:expand({ 4, 1 })
    T.eq({ getmetatable(e) == getmetatable(d), e.batch_shape }, { true, torch.Size({ 4, 1 }) }, tostring(d) .. ": expand")
    T.eq(e:log_prob(t64({ 1.0 })):size(), torch.Size({ 4, 1 }), "expanded log_prob shape")
    T.near(e:log_prob(t64({ 1.0 }))[0]:item(), d:log_prob(t64({ 1.0 })):item(), 1e-12, tostring(d) .. ": expanded log_prob")
  end
  local oh = D.OneHotCategorical(t64({ 0.2, 0.8 })):expand({ 3 })
  T.eq({ oh.batch_shape, oh.event_shape, oh.probs:size() }, { torch.Size({ 3 }), torch.Size({ 2 }), torch.Size({ 3, 2 }) }, "OneHotCategorical expand")
  T.eq(D.Dirichlet(t64({ 1.0, 2.0 })):expand({ 5 }):sample():size(), torch.Size({ 5, 2 }), "Dirichlet expand")
  -- reprs, support, arg_constraints, mean of a distribution without one
  T.eq(tostring(D.Gamma(2.0, 3.0)), "Gamma(concentration: tensor(2.), rate: tensor(3.))", "Gamma repr")
  T.eq(tostring(D.Exponential(torch.ones(3))), "Exponential(rate: torch.Size([3]))", "Exponential repr")
  T.eq(tostring(D.Binomial(4, 0.5).support), "IntegerInterval(lower_bound=0, upper_bound=tensor(4.))", "Binomial support")
  T.eq(tostring(D.Beta.arg_constraints.concentration1), "GreaterThan(lower_bound=0.0)", "arg_constraints")
  T.eq(tostring(D.Dirichlet(torch.ones(2)).support), "Simplex()", "Dirichlet support")
  T.eq(tostring(D.Poisson(1.0).support), "IntegerGreaterThan(lower_bound=0)", "Poisson support")
  T.check(D.constraints.positive:check(torch.tensor({ 1.0, -1.0 })):tolist()[2] == false, "constraints.positive:check")
  T.near(D.Gamma(t64(2.0), t64(1.0)):perplexity():item(), math.exp(2 + lgamma(2) - digamma(2)), 1e-10, "perplexity")
end)

T.test("Gamma and Chi2 cdf through the regularised incomplete gamma", function()
  local D = torch.distributions
  local xs = { 0.0, 0.1, 0.5, 1.0, 2.5, 7.0 }
  local function closed(f) local o = {} for i, x in ipairs(xs) do o[i] = f(x) end return o end
  local x = torch.tensor(xs, { dtype = torch.float64 })
  local t64 = function(v) return torch.tensor(v, { dtype = torch.float64 }) end
  T.near(D.Gamma(t64(1.0), t64(1.5)):cdf(x):tolist(), closed(function(v) return 1 - math.exp(-1.5 * v) end), 1e-13, "Gamma(1, r) is exponential")
  T.near(D.Gamma(t64(3.0), t64(2.0)):cdf(x):tolist(), closed(function(v)
    local y = 2 * v
    return 1 - math.exp(-y) * (1 + y + y * y / 2)
  end), 1e-13, "Gamma(3, 2): the Erlang sum")
  T.near(D.Chi2(t64(2.0)):cdf(x):tolist(), closed(function(v) return 1 - math.exp(-v / 2) end), 1e-13, "Chi2(2)")
end)


-- Gamma's draw differentiated implicitly: dx/dalpha at a fixed CDF value. The reference solves
-- P(alpha +- h, x') = P(alpha, x) for x' by Newton's method (central differences); the Monte Carlo
-- checks use moments known in closed form.
T.test("Gamma, Beta, Dirichlet, Chi2, StudentT rsample gradients", function()
  local D = torch.distributions
  local f64 = { dtype = torch.float64 }
  local function P(a, x) return torch.special.gammainc(torch.tensor(a, f64), torch.tensor(x, f64)):item() end
  local function lgam(a) return torch.lgamma(torch.tensor(a, f64)):item() end
  local function solve(a, u, x)
    for _ = 1, 60 do x = x - (P(a, x) - u) / math.exp((a - 1) * math.log(x) - x - lgam(a)) end
    return x
  end
  for _, c in ipairs({ { 0.3, 0.05 }, { 0.3, 1.2 }, { 2.5, 0.7 }, { 2.5, 6.0 }, { 40, 35 }, { 40, 52 }, { 900, 880 }, { 1500, 1530 } }) do
    local a, x = c[1], c[2]
    local got = D._h.standard_gamma_grad(torch.tensor({ a }, f64), torch.tensor({ x }, f64)):item()
    local u, h = P(a, x), 1e-5 * a
    local want = (solve(a + h, u, x) - solve(a - h, u, x)) / (2 * h)
    T.near(got, want, a > 1000 and 1e-6 or 1e-8, string.format("dx/dalpha at alpha %g, x %g", a, x))
  end
  -- Monte Carlo: the pathwise gradient of the sample mean against d/dtheta of the closed-form
  -- mean, within 5 standard errors estimated from 20 batches of the draws
  local function mc(name, make, theta, moment_grad, n)
    torch.manual_seed(17)
    local th = torch.tensor(theta, f64):requires_grad_()
    local per = {}
    for b = 1, 20 do per[b] = torch.autograd.grad(make(th):rsample({ n // 20 }):mean(), th)[1] end
    local g = torch.stack(per)
    local mean, se = g:mean(0), g:std(0) / math.sqrt(20)
    local want = moment_grad(theta)
    for i = 1, #theta do
      local got, tol = mean[i - 1]:item(), 5 * se[i - 1]:item() + 1e-12
      T.check(math.abs(got - want[i]) < tol, string.format("%s: d mean / d theta[%d] %.4f, want %.4f (5 s.e. %.4f)", name, i, got, want[i], tol))
    end
  end
  mc("Gamma(alpha, 1)", function(th) return D.Gamma(th, torch.ones(1, f64)) end, { 0.4 }, function() return { 1 } end, 40000)
  mc("Gamma(alpha, 1), alpha 7", function(th) return D.Gamma(th, torch.ones(1, f64)) end, { 7.0 }, function() return { 1 } end, 40000)
  mc("Gamma(alpha, 1), E[x^2] = alpha (alpha + 1)", function(th)
    return { rsample = function(_, sh) return D.Gamma(th, torch.ones(1, f64)):rsample(sh) ^ 2 end }
  end, { 0.4 }, function(t) return { 2 * t[1] + 1 } end, 40000)
  mc("Gamma(2, rate)", function(th) return D.Gamma(torch.full({ 1 }, 2.0, f64), th) end, { 1.5 }, function(t) return { -2 / t[1] ^ 2 } end, 40000)
  mc("Chi2(df)", function(th) return D.Chi2(th) end, { 3.0 }, function() return { 1 } end, 40000)
  mc("Beta(a, b)", function(th) return D.Beta(th:narrow(0, 0, 1), th:narrow(0, 1, 1)) end, { 2.0, 3.0 },
    function(t) local s = t[1] + t[2]; return { t[2] / s ^ 2, -t[1] / s ^ 2 } end, 40000)
  mc("Dirichlet, E[x0]", function(th) return { rsample = function(_, sh) return D.Dirichlet(th):rsample(sh):select(-1, 0) end } end,
    { 1.5, 2.5, 4.0 }, function(t) local s0 = t[1] + t[2] + t[3]; return { 1 / s0 - t[1] / s0 ^ 2, -t[1] / s0 ^ 2, -t[1] / s0 ^ 2 } end, 40000)
  local df = torch.tensor({ 5.0 }, f64):requires_grad_()
  local t = D.StudentT(df):rsample({ 1000 })
  T.check(t.requires_grad and t:isfinite():all():item(), "StudentT rsample carries df's gradient")
  T.check(not D.Gamma(df, torch.ones(1, f64)):sample({ 3 }).requires_grad, "sample has no gradient")
end)
