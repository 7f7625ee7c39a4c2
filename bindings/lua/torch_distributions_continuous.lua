-- torch.distributions, continuous ones on the real line or half of it: Exponential, Laplace,
-- Cauchy, Gumbel, HalfNormal, StudentT, Gamma, Chi2, Beta, Dirichlet, with PyTorch's
-- parameterisations, and their kl_divergence pairs. Gamma draws use Marsaglia and Tsang's
-- rejection method vectorised over the tensor (H.rejection: only the rejected elements are drawn
-- again), boosted for concentration < 1; Beta and Dirichlet normalise Gamma draws. rsample
-- differentiates the Gamma draw implicitly (H.standard_gamma_grad), as PyTorch does, so Gamma,
-- Chi2, Beta, Dirichlet and StudentT all have reparameterised gradients.
local torch = require "torch"
local U = require "nn_util"
local D = require "torch_distributions"
local C = D.constraints
local H = D._h
local class, broadcast_all = H.class, H.broadcast_all

local EULER = 0.57721566490153286061
local LOG_PI = math.log(math.pi)

local function tiny(dtype) return torch.finfo(dtype).tiny end
local function eps(dtype) return torch.finfo(dtype).eps end
local function zero_like(t) return torch.zeros({}, H.opts(t)) end
local function nan_where(mask, t) return torch.where(mask, torch.full({}, 0 / 0, H.opts(t)), t) end

-- a two-parameter constructor: fields from names after broadcasting, batch shape theirs
local function two_params(cls, name, p1, p2, defaults)
  return function(...)
    local o = U.parse(name, { { p1, defaults and defaults[1] or U.REQUIRED }, { p2, defaults and defaults[2] or U.REQUIRED }, { "validate_args" } }, ...)
    local a, b = broadcast_all(o[p1], o[p2])
    local self = setmetatable({ [p1] = a, [p2] = b }, cls)
    return self:_init(a:size(), {}, o.validate_args)
  end
end

-- uniform draws on (tiny, 1 - eps) of shape, dtype and device as like's
local function open_uniform(shape, like)
  return torch.rand(shape, H.opts(like)):clamp(tiny(like.dtype), 1 - eps(like.dtype))
end

-- out[i] for i in 0..n-1 by a vectorised rejection loop: step(idx) draws for the pending
-- elements (int64 indices idx) and returns which it accepts (bool) and their values; only the
-- rejected ones are drawn again
function H.rejection(n, opts, step)
  local out = torch.zeros(n, opts)
  local idx = torch.arange(n, { dtype = torch.int64, device = opts.device })
  while idx:numel() > 0 do
    local ok, val = step(idx)
    local acc = ok:nonzero():reshape(-1)
    out:index_copy_(0, idx:index_select(0, acc), val:index_select(0, acc))
    idx = idx:index_select(0, ok:logical_not():nonzero():reshape(-1))
  end
  return out
end

-- Gamma(alpha, 1) draws of alpha's shape, dtype and device (no gradient); computed in float64.
function H.standard_gamma(alpha)
  return torch.no_grad(function()
    local o64 = { dtype = torch.float64, device = alpha.device }
    local a = alpha:to(torch.float64):reshape(-1)
    local boost = a:lt(1)
    local d = torch.where(boost, a + 1, a) - 1 / 3
    local c = (d * 9):rsqrt()
    local g = H.rejection(a:numel(), o64, function(idx)
      local dd, cc = d:index_select(0, idx), c:index_select(0, idx)
      local x, u = torch.randn(idx:numel(), o64), torch.rand(idx:numel(), o64)
      local v = (x * cc + 1) ^ 3
      local ok = v:gt(0):logical_and(u:log():lt(x * x * 0.5 + dd - dd * v + dd * v:clamp(1e-300):log()))
      return ok, dd * v
    end)
    -- concentration < 1: Gamma(a) = Gamma(a + 1) * U^(1 / a), in logs
    local logg = g:log() + torch.where(boost, torch.rand(a:numel(), o64):log() / a, torch.zeros({}, o64))
    return logg:exp():to(alpha.dtype):clamp(tiny(alpha.dtype)):reshape(H.list(alpha))
  end)
end

-- d x / d alpha of x ~ Gamma(alpha, 1) with the draw's CDF value held fixed (implicit
-- reparameterisation): -(dP/dalpha) / (dP/dx), P(alpha, x) the regularised lower incomplete
-- gamma. dP/dalpha sums its series P = sum_n t_n, t_n = x^(alpha+n) e^-x / Gamma(alpha+n+1), as
-- sum_n t_n (log x - psi(alpha+n+1)); alpha above 1000 uses the Wilson-Hilferty form
-- x = alpha w^3, w = 1 - s + z sqrt(s), s = 1 / (9 alpha), differentiated at fixed z. Float64.
function H.standard_gamma_grad(alpha, x)
  local a, xx = alpha:to(torch.float64), x:to(torch.float64)
  local big = a:gt(1000)
  local as = torch.where(big, torch.ones({}, H.opts(a)), a) -- the series' alphas (big ones parked at 1)
  local xs = torch.where(big, torch.ones({}, H.opts(a)), xx)
  local logx = xs:log()
  local t = (as * logx - xs - (as + 1):lgamma()):exp()
  local psi = (as + 1):digamma()
  local dsum = t * (logx - psi)
  local n, stop = 0, xs:max():item() - as:min():item() -- past the largest term, the terms only fall
  while true do
    n = n + 1
    t = t * xs / (as + n)
    psi = psi + 1 / (as + n)
    dsum = dsum + t * (logx - psi)
    if n % 8 == 0 and n > stop and t:max():item() < 1e-18 then break end
  end
  local logdensity = (as - 1) * logx - xs - as:lgamma()
  local series = -dsum:sign() * (dsum:abs():log() - logdensity):exp()
  local s = 1 / (9 * a)
  local w = (xx / a):pow(1 / 3)
  local z = (w - 1 + s) / s:sqrt()
  local wh = w ^ 3 + 3 * w * w * (s - z * s:sqrt() * 0.5)
  return torch.where(big, wh, series):to(x.dtype)
end

-- Gamma(alpha, 1) draws that carry alpha's gradient (StandardGammaBackward: the implicit one above)
local StandardGamma = torch.autograd.Function:extend("StandardGamma")
function StandardGamma.forward(ctx, alpha)
  local x = H.standard_gamma(alpha)
  ctx.alpha, ctx.x = alpha:detach(), x
  return x
end
function StandardGamma.backward(ctx, g) return g * H.standard_gamma_grad(ctx.alpha, ctx.x) end
function H.standard_gamma_rsample(alpha) return StandardGamma.apply(alpha) end

-- ---- Exponential ----

local Exponential = class("Exponential", D.ExponentialFamily)
Exponential.arg_constraints = { rate = C.positive }
Exponential._params = { "rate" }
Exponential._support = C.nonnegative
Exponential.has_rsample = true

function Exponential.new(...)
  local o = U.parse("Exponential", { { "rate", U.REQUIRED }, { "validate_args" } }, ...)
  local rate = H.as_tensor(o.rate)
  return setmetatable({ rate = rate }, Exponential):_init(rate:size(), {}, o.validate_args)
end
function Exponential._props.mean(self) return self.rate:reciprocal() end
function Exponential._props.mode(self) return torch.zeros_like(self.rate) end
Exponential._props.stddev = Exponential._props.mean
function Exponential._props.variance(self) return self.rate:pow(-2) end
function Exponential:rsample(sample_shape)
  local u = torch.rand(self:_extended_shape(sample_shape), H.opts(self.rate))
  return -(-u):log1p() / self.rate
end
function Exponential:log_prob(value)
  self:_validate_sample(value)
  return self.rate:log() - self.rate * value
end
function Exponential:cdf(value)
  self:_validate_sample(value)
  return 1 - (-self.rate * value):exp()
end
function Exponential:icdf(value) return -(-value):log1p() / self.rate end
function Exponential:entropy() return 1 - self.rate:log() end

-- ---- Laplace ----

local Laplace = class("Laplace")
Laplace.arg_constraints = { loc = C.real, scale = C.positive }
Laplace._params = { "loc", "scale" }
Laplace._support = C.real
Laplace.has_rsample = true
Laplace.new = two_params(Laplace, "Laplace", "loc", "scale")

function Laplace._props.mean(self) return self.loc end
Laplace._props.mode = Laplace._props.mean
function Laplace._props.variance(self) return self.scale:pow(2) * 2 end
function Laplace._props.stddev(self) return self.scale * math.sqrt(2) end
function Laplace:rsample(sample_shape)
  local e = eps(self.loc.dtype)
  local u = torch.rand(self:_extended_shape(sample_shape), H.opts(self.loc)) * (2 - e) + (e - 1)
  return self.loc - self.scale * u:sign() * (-u:abs()):log1p()
end
function Laplace:log_prob(value)
  self:_validate_sample(value)
  return -(self.scale * 2):log() - (value - self.loc):abs() / self.scale
end
function Laplace:cdf(value)
  self:_validate_sample(value)
  local z = value - self.loc
  return 0.5 - 0.5 * z:sign() * (-z:abs() / self.scale):expm1()
end
function Laplace:icdf(value)
  local t = value - 0.5
  return self.loc - self.scale * t:sign() * (-t:abs() * 2):log1p()
end
function Laplace:entropy() return 1 + (self.scale * 2):log() end

-- ---- Cauchy ----

local Cauchy = class("Cauchy")
Cauchy.arg_constraints = { loc = C.real, scale = C.positive }
Cauchy._params = { "loc", "scale" }
Cauchy._support = C.real
Cauchy.has_rsample = true
Cauchy.new = two_params(Cauchy, "Cauchy", "loc", "scale")

function Cauchy._props.mean(self) return H.full_like(self.loc, 0 / 0) end
function Cauchy._props.mode(self) return self.loc end
function Cauchy._props.variance(self) return H.full_like(self.loc, math.huge) end
function Cauchy:rsample(sample_shape)
  local u = torch.rand(self:_extended_shape(sample_shape), H.opts(self.loc))
  return self.loc + ((u - 0.5) * math.pi):tan() * self.scale
end
function Cauchy:log_prob(value)
  self:_validate_sample(value)
  return -LOG_PI - self.scale:log() - (((value - self.loc) / self.scale) ^ 2):log1p()
end
function Cauchy:cdf(value)
  self:_validate_sample(value)
  return ((value - self.loc) / self.scale):atan() / math.pi + 0.5
end
function Cauchy:icdf(value) return ((value - 0.5) * math.pi):tan() * self.scale + self.loc end
function Cauchy:entropy() return math.log(4 * math.pi) + self.scale:log() end

-- ---- Gumbel ----

local Gumbel = class("Gumbel")
Gumbel.arg_constraints = { loc = C.real, scale = C.positive }
Gumbel._params = { "loc", "scale" }
Gumbel._support = C.real
Gumbel.has_rsample = true
Gumbel.new = two_params(Gumbel, "Gumbel", "loc", "scale")

function Gumbel._props.mean(self) return self.loc + self.scale * EULER end
function Gumbel._props.mode(self) return self.loc end
function Gumbel._props.stddev(self) return self.scale * (math.pi / math.sqrt(6)) end
function Gumbel._props.variance(self) return self.stddev:pow(2) end
function Gumbel:rsample(sample_shape)
  local u = open_uniform(self:_extended_shape(sample_shape), self.loc)
  return self.loc - self.scale * (-u:log()):log()
end
function Gumbel:log_prob(value)
  self:_validate_sample(value)
  local z = (value - self.loc) / self.scale
  return -(z + (-z):exp()) - self.scale:log()
end
function Gumbel:cdf(value)
  self:_validate_sample(value)
  return (-(-(value - self.loc) / self.scale):exp()):exp()
end
function Gumbel:icdf(value) return self.loc - self.scale * (-value:log()):log() end
function Gumbel:entropy() return self.scale:log() + (1 + EULER) end

-- ---- HalfNormal: |Normal(0, scale)| ----

local HalfNormal = class("HalfNormal")
HalfNormal.arg_constraints = { scale = C.positive }
HalfNormal._params = { "scale" }
HalfNormal._support = C.nonnegative
HalfNormal.has_rsample = true

function HalfNormal.new(...)
  local o = U.parse("HalfNormal", { { "scale", U.REQUIRED }, { "validate_args" } }, ...)
  local scale = H.as_tensor(o.scale)
  local self = setmetatable({ scale = scale }, HalfNormal)
  self.base_dist = D.Normal(torch.zeros_like(scale), scale, { validate_args = false })
  return self:_init(scale:size(), {}, o.validate_args)
end
function HalfNormal._props.mean(self) return self.scale * math.sqrt(2 / math.pi) end
function HalfNormal._props.mode(self) return torch.zeros_like(self.scale) end
function HalfNormal._props.variance(self) return self.scale:pow(2) * (1 - 2 / math.pi) end
function HalfNormal:rsample(sample_shape) return self.base_dist:rsample(sample_shape):abs() end
-- log_prob, cdf, icdf and entropy of |X|, X ~ cls's base_dist symmetric about 0 (HalfNormal, HalfCauchy)
function H.folded(cls)
  function cls:log_prob(value)
    self:_validate_sample(value)
    value = H.as_tensor(value, self.base_dist.scale)
    local lp = self.base_dist:log_prob(value) + math.log(2)
    return torch.where(value:ge(0), lp, torch.full({}, -math.huge, H.opts(lp)))
  end
  function cls:cdf(value)
    self:_validate_sample(value)
    return self.base_dist:cdf(value) * 2 - 1
  end
  function cls:icdf(value) return self.base_dist:icdf((value + 1) / 2) end
  function cls:entropy() return self.base_dist:entropy() - math.log(2) end
end
H.folded(HalfNormal)

-- ---- Gamma, Chi2 ----

local Gamma = class("Gamma", D.ExponentialFamily)
Gamma.arg_constraints = { concentration = C.positive, rate = C.positive }
Gamma._params = { "concentration", "rate" }
Gamma._support = C.nonnegative
Gamma.new = two_params(Gamma, "Gamma", "concentration", "rate")

function Gamma._props.mean(self) return self.concentration / self.rate end
function Gamma._props.mode(self) return ((self.concentration - 1) / self.rate):clamp(0) end
function Gamma._props.variance(self) return self.concentration / self.rate:pow(2) end
Gamma.has_rsample = true
function Gamma:rsample(sample_shape)
  local shape = self:_extended_shape(sample_shape)
  local g = H.standard_gamma_rsample(self.concentration:expand(shape)) / self.rate:expand(shape)
  return g:clamp(tiny(g.dtype))
end
function Gamma:log_prob(value)
  self:_validate_sample(value)
  local c, r = self.concentration, self.rate
  return torch.xlogy(c, r) + torch.xlogy(c - 1, value) - r * value - c:lgamma()
end
function Gamma:cdf(value)
  self:_validate_sample(value)
  return torch.special.gammainc(self.concentration, self.rate * value)
end
function Gamma:entropy()
  local c = self.concentration
  return c - self.rate:log() + c:lgamma() + (1 - c) * c:digamma()
end

local Chi2 = class("Chi2", Gamma)
Chi2.arg_constraints = { df = C.positive }
Chi2._params = { "df" }

function Chi2.new(...)
  local o = U.parse("Chi2", { { "df", U.REQUIRED }, { "validate_args" } }, ...)
  local df = H.as_tensor(o.df)
  local self = setmetatable({ df = df, concentration = df * 0.5, rate = H.full_like(df, 0.5) }, Chi2)
  return self:_init(df:size(), {}, o.validate_args)
end

-- ---- StudentT ----

local StudentT = class("StudentT")
StudentT.arg_constraints = { df = C.positive, loc = C.real, scale = C.positive }
StudentT._params = { "df", "loc", "scale" }
StudentT._support = C.real

function StudentT.new(...)
  local o = U.parse("StudentT", { { "df", U.REQUIRED }, { "loc", 0.0 }, { "scale", 1.0 }, { "validate_args" } }, ...)
  local df, loc, scale = broadcast_all(o.df, o.loc, o.scale)
  return setmetatable({ df = df, loc = loc, scale = scale }, StudentT):_init(df:size(), {}, o.validate_args)
end
function StudentT._props.mean(self) return nan_where(self.df:le(1), self.loc) end
function StudentT._props.mode(self) return self.loc end
function StudentT._props.variance(self)
  local df = self.df
  local v = self.scale:pow(2) * df / (df - 2)
  v = torch.where(df:le(2), torch.full({}, math.huge, H.opts(v)), v)
  return nan_where(df:le(1), v)
end
StudentT.has_rsample = true
function StudentT:rsample(sample_shape)
  local shape = self:_extended_shape(sample_shape)
  local df = self.df:expand(shape)
  local x = torch.randn(shape, H.opts(self.df))
  local z = H.standard_gamma_rsample(df * 0.5) * 2
  return self.loc + self.scale * x * (z / df):rsqrt()
end
function StudentT:log_prob(value)
  self:_validate_sample(value)
  local df = self.df
  local y = (value - self.loc) / self.scale
  local Z = self.scale:log() + df:log() * 0.5 + 0.5 * LOG_PI + (df * 0.5):lgamma() - ((df + 1) * 0.5):lgamma()
  return -((df + 1) * 0.5) * (y * y / df):log1p() - Z
end
function StudentT:entropy()
  local df = self.df
  local lbeta = (df * 0.5):lgamma() + 0.5 * math.log(math.pi) - ((df + 1) * 0.5):lgamma()
  return self.scale:log() + (df + 1) * 0.5 * (((df + 1) * 0.5):digamma() - (df * 0.5):digamma()) + df:log() * 0.5 + lbeta
end

-- ---- Dirichlet, Beta ----

local Dirichlet = class("Dirichlet", D.ExponentialFamily)
Dirichlet.arg_constraints = { concentration = C.independent(C.positive, 1) }
Dirichlet._params = { "concentration" }
Dirichlet._param_event_dims = { concentration = 1 }
Dirichlet._support = C.simplex

function Dirichlet.new(...)
  local o = U.parse("Dirichlet", { { "concentration", U.REQUIRED }, { "validate_args" } }, ...)
  local c = H.as_tensor(o.concentration)
  if c:dim() < 1 then U.error("ValueError: `concentration` parameter must be at least one-dimensional.") end
  return setmetatable({ concentration = c }, Dirichlet):_init(H.head(c, 1), H.tail(c, 1), o.validate_args)
end
function Dirichlet._props.mean(self) return self.concentration / self.concentration:sum(-1, true) end
function Dirichlet._props.mode(self)
  local c = self.concentration
  local cm1 = (c - 1):clamp(0)
  local mode = cm1 / cm1:sum(-1, true)
  local corner = torch.nn.functional.one_hot(mode:argmax(-1), c:size(-1)):to(c.dtype) -- all concentrations < 1
  return torch.where(c:lt(1):logical_not():any(-1, true):logical_not(), corner, mode)
end
function Dirichlet._props.variance(self)
  local c = self.concentration
  local c0 = c:sum(-1, true)
  return c * (c0 - c) / (c0:pow(2) * (c0 + 1))
end
Dirichlet.has_rsample = true
function Dirichlet:rsample(sample_shape)
  local g = H.standard_gamma_rsample(self.concentration:expand(self:_extended_shape(sample_shape)))
  return g / g:sum(-1, true)
end
function Dirichlet:log_prob(value)
  self:_validate_sample(value)
  local c = self.concentration
  return torch.xlogy(c - 1, value):sum(-1) + c:sum(-1):lgamma() - c:lgamma():sum(-1)
end
function Dirichlet:entropy()
  local c = self.concentration
  local k, a0 = c:size(-1), c:sum(-1)
  return c:lgamma():sum(-1) - a0:lgamma() + (a0 - k) * a0:digamma() - ((c - 1) * c:digamma()):sum(-1)
end

local Beta = class("Beta", D.ExponentialFamily)
Beta.arg_constraints = { concentration1 = C.positive, concentration0 = C.positive }
Beta._params = { "concentration1", "concentration0" }
Beta._support = C.unit_interval
Beta.new = two_params(Beta, "Beta", "concentration1", "concentration0")

function Beta._props.mean(self) return self.concentration1 / (self.concentration1 + self.concentration0) end
function Beta._props.mode(self) return (self.concentration1 - 1) / (self.concentration1 + self.concentration0 - 2) end
function Beta._props.variance(self)
  local a, b = self.concentration1, self.concentration0
  local t = a + b
  return a * b / (t:pow(2) * (t + 1))
end
Beta.has_rsample = true
function Beta:rsample(sample_shape)
  local shape = self:_extended_shape(sample_shape)
  local x = H.standard_gamma_rsample(self.concentration1:expand(shape))
  local y = H.standard_gamma_rsample(self.concentration0:expand(shape))
  return x / (x + y)
end
function Beta:log_prob(value)
  self:_validate_sample(value)
  local a, b = self.concentration1, self.concentration0
  return torch.xlogy(a - 1, value) + torch.xlogy(b - 1, 1 - value) + (a + b):lgamma() - a:lgamma() - b:lgamma()
end
function Beta:entropy()
  local a, b = self.concentration1, self.concentration0
  local t = a + b
  return a:lgamma() + b:lgamma() - t:lgamma() + (t - 2) * t:digamma() - (a - 1) * a:digamma() - (b - 1) * b:digamma()
end

-- ---- their exponential-family forms ----

local function carrier0() return 0 end
Exponential._props._natural_params = function(self) return { -self.rate } end
function Exponential:_log_normalizer(x) return -(-x):log() end
Gamma._props._natural_params = function(self) return { self.concentration - 1, -self.rate } end
function Gamma:_log_normalizer(x, y) return (x + 1):lgamma() + (x + 1) * (-y:reciprocal()):log() end
Dirichlet._props._natural_params = function(self) return { self.concentration } end
function Dirichlet:_log_normalizer(x) return x:lgamma():sum(-1) - x:sum(-1):lgamma() end
Beta._props._natural_params = function(self) return { self.concentration1, self.concentration0 } end
function Beta:_log_normalizer(x, y) return x:lgamma() + y:lgamma() - (x + y):lgamma() end
Exponential._props._mean_carrier_measure, Gamma._props._mean_carrier_measure = carrier0, carrier0
-- E[log h(x)], h = 1 / prod x_i (Dirichlet), 1 / (x (1 - x)) (Beta)
function Dirichlet._props._mean_carrier_measure(self)
  local c = self.concentration
  return -(c:digamma() - c:sum(-1, true):digamma()):sum(-1)
end
function Beta._props._mean_carrier_measure(self)
  local a, b = self.concentration1, self.concentration0
  local s = (a + b):digamma()
  return s * 2 - a:digamma() - b:digamma()
end

-- ---- kl_divergence pairs ----

D.register_kl(Exponential, Exponential, function(p, q)
  local r = q.rate / p.rate
  return r - 1 - r:log()
end)
D.register_kl(Gamma, Gamma, function(p, q)
  local pc, pr, qc, qr = p.concentration, p.rate, q.concentration, q.rate
  return qc * (pr / qr):log() + qc:lgamma() - pc:lgamma() + (pc - qc) * pc:digamma() + (qr - pr) * (pc / pr)
end)
D.register_kl(Beta, Beta, function(p, q)
  local sp, sq = p.concentration1 + p.concentration0, q.concentration1 + q.concentration0
  local t1 = q.concentration1:lgamma() + q.concentration0:lgamma() + sp:lgamma()
  local t2 = p.concentration1:lgamma() + p.concentration0:lgamma() + sq:lgamma()
  local t3 = (p.concentration1 - q.concentration1) * p.concentration1:digamma()
  local t4 = (p.concentration0 - q.concentration0) * p.concentration0:digamma()
  return t1 - t2 + t3 + t4 + (sq - sp) * sp:digamma()
end)
D.register_kl(Dirichlet, Dirichlet, function(p, q)
  local pc, qc = p.concentration, q.concentration
  local sp = pc:sum(-1)
  local t4 = pc:digamma() - sp:digamma():unsqueeze(-1)
  return sp:lgamma() - qc:sum(-1):lgamma() - (pc:lgamma() - qc:lgamma()):sum(-1) + ((pc - qc) * t4):sum(-1)
end)
D.register_kl(Laplace, Laplace, function(p, q)
  local r = p.scale / q.scale
  local d = (p.loc - q.loc):abs()
  return -r:log() + d / q.scale + r * (-d / p.scale):exp() - 1
end)
D.register_kl(Gumbel, Gumbel, function(p, q)
  local c1, c2, c3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
  return -c1:log() - c2 + c3 + c1 * EULER + (c2 + (c1 + 1):lgamma() - c3):exp() - (1 + EULER)
end)
D.register_kl(HalfNormal, HalfNormal, function(p, q) return D.kl_divergence(p.base_dist, q.base_dist) end)

return D
