-- torch.distributions, more one-dimensional ones: ContinuousBernoulli, FisherSnedecor,
-- GeneralizedPareto, HalfCauchy, InverseGamma, Kumaraswamy, Pareto, VonMises, Weibull,
-- NegativeBinomial, with PyTorch's parameterisations, and their kl_divergence pairs.
-- HalfCauchy, InverseGamma, Kumaraswamy, Pareto and Weibull are TransformedDistributions as in
-- PyTorch; VonMises draws by Best and Fisher's rejection method (float64, vectorised).
local torch = require "torch"
local U = require "nn_util"
local D = require "torch_distributions"
require "torch_distributions_continuous"
require "torch_distributions_discrete"
require "torch_distributions_transforms"
local C = D.constraints
local H = D._h
local T = D.transforms
local class, broadcast_all = H.class, H.broadcast_all


local EULER = 0.57721566490153286061
local LOG2 = math.log(2)

local function full(t, v) return torch.full({}, v, H.opts(t)) end
local function nan_unless(mask, t) return torch.where(mask, t, full(t, 0 / 0)) end
local function open_rand(self, sample_shape, like)
  local fi = torch.finfo(like.dtype)
  return torch.rand(self:_extended_shape(sample_shape), H.opts(like)):clamp(fi.tiny, 1 - fi.eps)
end

-- a constructor parsing names (with defaults; nil: required), broadcasting them, then init(self, o)
local function ctor(cls, name, spec, init)
  local full_spec = {}
  for i, s in ipairs(spec) do full_spec[i] = { s[1], s[2] == nil and U.REQUIRED or s[2] } end
  full_spec[#full_spec + 1] = { "validate_args" }
  return function(...)
    local o = U.parse(name, full_spec, ...)
    local vals = {}
    for i, s in ipairs(spec) do vals[i] = o[s[1]] end
    vals = { broadcast_all(table.unpack(vals, 1, #spec)) }
    local self = setmetatable({}, cls)
    for i, s in ipairs(spec) do self[s[1]] = vals[i] end
    if init then return init(self, o) end
    return self:_init(vals[1]:size(), {}, o.validate_args)
  end
end

-- ---- ContinuousBernoulli ----

local CB = class("ContinuousBernoulli", D.ExponentialFamily)
CB.arg_constraints = { probs = C.unit_interval, logits = C.real }
CB._params = { "probs", "logits" }
CB._repr_params = { "probs" }
CB._support = C.unit_interval
CB.has_rsample = true

function CB.new(...)
  local o = U.parse("ContinuousBernoulli", { { "probs" }, { "logits" }, { "lims", { 0.499, 0.501 } }, { "validate_args" } }, ...)
  local t, given = H.probs_or_logits(o)
  local p, l
  if given == "probs" then
    local fi = torch.finfo(t.dtype)
    p = t:clamp(fi.eps, 1 - fi.eps)
    l = p:log() - (-p):log1p()
  else
    l, p = t, t:sigmoid()
  end
  local self = setmetatable({ probs = p, logits = l, _lims = o.lims, _given = { given } }, CB)
  if given == "probs" then self._raw = t end
  self:_init(p:size(), {}, o.validate_args, {})
  if self._validate_args then
    local c, v = CB.arg_constraints[given], t
    if c:check(v):logical_not():any():item() then
      U.errorf("Expected parameter %s to satisfy the constraint %s, but found invalid values:\n%s", given, tostring(c), tostring(v))
    end
  end
  return self
end
function CB:expand(batch_shape)
  local g = self._given[1]
  return CB.new({ [g] = rawget(self, g):expand(H.list(batch_shape)), lims = self._lims, validate_args = false })
end
-- the probabilities away from 1/2, where the closed forms lose precision (lims[1] there)
function CB:_outside()
  local p, lims = self.probs, self._lims
  return p:le(lims[1]):logical_or(p:gt(lims[2]))
end
function CB:_cut_probs() return torch.where(self:_outside(), self.probs, full(self.probs, self._lims[1])) end
-- log C(p), C the normaliser 2 atanh(1 - 2p) / (1 - 2p); a Taylor series near p = 1/2
function CB:_cont_bern_log_norm()
  local cut = self:_cut_probs()
  local low = cut:le(0.5)
  local cut_low = torch.where(low, cut, full(cut, 0))
  local cut_high = torch.where(low, full(cut, 1), cut)
  local log_norm = ((-cut):log1p() - cut:log()):abs():log() - torch.where(low, (cut_low * -2):log1p(), (cut_high * 2 - 1):log())
  local x = (self.probs - 0.5) ^ 2
  local taylor = LOG2 + (x * (104 / 45) + 4 / 3) * x
  return torch.where(self:_outside(), log_norm, taylor)
end
function CB._props.mean(self)
  local cut = self:_cut_probs()
  local mus = cut / (cut * 2 - 1) + ((-cut):log1p() - cut:log()):reciprocal()
  local x = self.probs - 0.5
  local taylor = (x * x * (16 / 45) + 1 / 3) * x + 0.5
  return torch.where(self:_outside(), mus, taylor)
end
function CB._props.variance(self)
  local cut = self:_cut_probs()
  local vars = cut * (cut - 1) / (1 - cut * 2) ^ 2 + ((-cut):log1p() - cut:log()) ^ -2
  local x = (self.probs - 0.5) ^ 2
  local taylor = 1 / 12 - (1 / 15 - x * (128 / 945)) * x
  return torch.where(self:_outside(), vars, taylor)
end
function CB:rsample(sample_shape) return self:icdf(torch.rand(self:_extended_shape(sample_shape), H.opts(self.probs))) end
function CB:log_prob(value)
  self:_validate_sample(value)
  local l, v = broadcast_all(self.logits, value)
  return -torch.nn.functional.binary_cross_entropy_with_logits(l, v, { reduction = "none" }) + self:_cont_bern_log_norm()
end
function CB:cdf(value)
  self:_validate_sample(value)
  local cut = self:_cut_probs()
  local cdfs = (cut:pow(value) * (1 - cut):pow(1 - value) + cut - 1) / (cut * 2 - 1)
  local inside = torch.where(self:_outside(), cdfs, value)
  return torch.where(value:le(0), full(inside, 0), torch.where(value:ge(1), full(inside, 1), inside))
end
function CB:icdf(value)
  local cut = self:_cut_probs()
  local x = ((-cut + value * (cut * 2 - 1)):log1p() - (-cut):log1p()) / (cut:log() - (-cut):log1p())
  return torch.where(self:_outside(), x, value)
end
function CB:entropy()
  local l0, l1 = (-self.probs):log1p(), self.probs:log()
  return self.mean * (l0 - l1) - self:_cont_bern_log_norm() - l0
end
function CB._props._natural_params(self) return { self.logits } end
function CB:_log_normalizer(x)
  local lims = self._lims
  local out = x:le(lims[1] - 0.5):logical_or(x:gt(lims[2] - 0.5))
  local cut = torch.where(out, x, full(x, lims[1] - 0.5))
  local log_norm = (cut:exp() - 1):abs():log() - cut:abs():log()
  local taylor = x * 0.5 + x ^ 2 / 24 - x ^ 4 / 2880
  return torch.where(out, log_norm, taylor)
end
function CB._props._mean_carrier_measure() return 0 end

-- ---- FisherSnedecor ----

local FS = class("FisherSnedecor")
FS.arg_constraints = { df1 = C.positive, df2 = C.positive }
FS._params = { "df1", "df2" }
FS._support = C.positive
FS.has_rsample = true
FS.new = ctor(FS, "FisherSnedecor", { { "df1" }, { "df2" } })

function FS._props.mean(self)
  local d2 = self.df2
  return nan_unless(d2:gt(2), d2 / (d2 - 2))
end
function FS._props.mode(self)
  local d1, d2 = self.df1, self.df2
  return nan_unless(d1:gt(2), (d1 - 2) / d1 * d2 / (d2 + 2))
end
function FS._props.variance(self)
  local d1, d2 = self.df1, self.df2
  return nan_unless(d2:gt(4), d2 * d2 * 2 * (d1 + d2 - 2) / (d1 * (d2 - 2) ^ 2 * (d2 - 4)))
end
function FS:rsample(sample_shape)
  local shape = self:_extended_shape(sample_shape)
  local tiny = torch.finfo(self.df1.dtype).tiny
  local x1 = H.standard_gamma_rsample((self.df1 * 0.5):expand(shape)) / (self.df1 * 0.5)
  local x2 = H.standard_gamma_rsample((self.df2 * 0.5):expand(shape)) / (self.df2 * 0.5)
  return (x1 / x2:clamp(tiny)):clamp(tiny)
end
function FS:log_prob(value)
  self:_validate_sample(value)
  local a, b = self.df1 * 0.5, self.df2 * 0.5
  local r = self.df1 / self.df2
  return (a + b):lgamma() - a:lgamma() - b:lgamma() + a * r:log() + (a - 1) * value:log() - (a + b) * (r * value):log1p()
end

-- ---- GeneralizedPareto ----

local GP = class("GeneralizedPareto")
GP.arg_constraints = { loc = C.real, scale = C.positive, concentration = C.real }
GP._params = { "loc", "scale", "concentration" }
GP.has_rsample = true
GP.new = ctor(GP, "GeneralizedPareto", { { "loc" }, { "scale" }, { "concentration" } })

-- concentration, with those near 0 (the exponential limit) as 1, and where they are
local function gp_conc(self)
  local c = self.concentration
  local zero = c:abs():le(1e-8)
  return torch.where(zero, full(c, 1), c), zero
end
function GP._props.support(self)
  local upper = torch.where(self.concentration:lt(0), self.loc - self.scale / self.concentration, full(self.loc, math.huge))
  return C.interval(self.loc, upper)
end
function GP._props.mean(self)
  local c = self.concentration
  return nan_unless(c:lt(1), self.loc + self.scale / (1 - c))
end
function GP._props.mode(self) return self.loc end
function GP._props.variance(self)
  local c = self.concentration
  return nan_unless(c:lt(0.5), self.scale ^ 2 / ((1 - c) ^ 2 * (1 - c * 2)))
end
function GP:rsample(sample_shape) return self:icdf(torch.rand(self:_extended_shape(sample_shape), H.opts(self.loc))) end
function GP:log_survival_function(value)
  local z = (value - self.loc) / self.scale
  local c, zero = gp_conc(self)
  return torch.where(zero, -z, -(c * z):log1p() / c)
end
function GP:log_prob(value)
  self:_validate_sample(value)
  local z = (value - self.loc) / self.scale
  local c, zero = gp_conc(self)
  local y = 1 / c + 1
  local lp = -self.scale:log() - torch.where(zero, z, y * (c * z):log1p())
  return torch.where(z:ge(0):logical_and(c:ge(0):logical_or(z:le(-1 / c))), lp, full(lp, -math.huge))
end
function GP:cdf(value)
  self:_validate_sample(value)
  return -self:log_survival_function(value):expm1()
end
function GP:icdf(value)
  local c, zero = gp_conc(self)
  local l = (-value):log1p()
  return self.loc + self.scale * torch.where(zero, -l, (-c * l):expm1() / c)
end
function GP:entropy() return self.scale:log() + self.concentration + 1 end

-- ---- TransformedDistribution subclasses ----

local TD = D.TransformedDistribution
local function td_class(name, constraints, params, support)
  local cls = class(name, TD)
  cls.arg_constraints, cls._params, cls._support = constraints, params, support
  cls._repr = D.Distribution._repr
  cls.has_rsample = true
  return cls
end

local HC = td_class("HalfCauchy", { scale = C.positive }, { "scale" }, C.nonnegative)
function HC.new(...)
  local o = U.parse("HalfCauchy", { { "scale", U.REQUIRED }, { "validate_args" } }, ...)
  local scale = H.as_tensor(o.scale)
  local self = setmetatable({ scale = scale }, HC)
  H.td_init(self, D.Cauchy(torch.zeros_like(scale), scale, { validate_args = false }), { T.AbsTransform() }, false)
  return self:_init(scale:size(), {}, o.validate_args)
end
function HC._props.mean(self) return H.full_like(self.scale, math.huge) end
function HC._props.mode(self) return torch.zeros_like(self.scale) end
HC._props.variance = HC._props.mean
H.folded(HC)

local IG = td_class("InverseGamma", { concentration = C.positive, rate = C.positive }, { "concentration", "rate" }, C.positive)
function IG.new(...)
  local o = U.parse("InverseGamma", { { "concentration", U.REQUIRED }, { "rate", U.REQUIRED }, { "validate_args" } }, ...)
  local base = D.Gamma(o.concentration, o.rate, { validate_args = o.validate_args })
  local self = setmetatable({ concentration = base.concentration, rate = base.rate }, IG)
  return H.td_init(self, base, { T.PowerTransform(-1.0) }, o.validate_args)
end
function IG._props.mean(self)
  local c = self.concentration
  return torch.where(c:gt(1), self.rate / (c - 1), full(c, math.huge))
end
function IG._props.mode(self) return self.rate / (self.concentration + 1) end
function IG._props.variance(self)
  local c = self.concentration
  return torch.where(c:gt(2), self.rate ^ 2 / ((c - 1) ^ 2 * (c - 2)), full(c, math.huge))
end
function IG:entropy()
  local c = self.concentration
  return c + self.rate:log() + c:lgamma() - (c + 1) * c:digamma()
end

local Kum = td_class("Kumaraswamy", { concentration1 = C.positive, concentration0 = C.positive },
  { "concentration1", "concentration0" }, C.unit_interval)
function Kum.new(...)
  local o = U.parse("Kumaraswamy", { { "concentration1", U.REQUIRED }, { "concentration0", U.REQUIRED }, { "validate_args" } }, ...)
  local a, b = broadcast_all(o.concentration1, o.concentration0)
  local self = setmetatable({ concentration1 = a, concentration0 = b }, Kum)
  local fi = torch.finfo(a.dtype)
  local base = D.Uniform(H.full_like(a, 0), H.full_like(a, 1), { validate_args = false })
  H.td_init(self, base, { T.PowerTransform(b:reciprocal()), T.AffineTransform(1.0, -1.0), T.PowerTransform(a:reciprocal()) }, false)
  self._tiny = fi.tiny
  return self:_init(a:size(), {}, o.validate_args)
end
-- E[X^n] = b B(1 + n / a, b)
local function kum_moment(self, n)
  local a, b = self.concentration1, self.concentration0
  return b * ((n / a + 1):lgamma() + b:lgamma() - (n / a + 1 + b):lgamma()):exp()
end
function Kum._props.mean(self) return kum_moment(self, 1) end
function Kum._props.mode(self)
  local a, b = self.concentration1, self.concentration0
  local m = ((a - 1) / (a * b - 1)):pow(a:reciprocal())
  return nan_unless(a:ge(1):logical_and(b:ge(1)), m)
end
function Kum._props.variance(self) return kum_moment(self, 2) - kum_moment(self, 1) ^ 2 end
function Kum:entropy()
  local a, b = self.concentration1, self.concentration0
  local harmonic = (b + 1):digamma() + EULER
  return (1 - b:reciprocal()) + (1 - a:reciprocal()) * harmonic - a:log() - b:log()
end

local Pareto = td_class("Pareto", { scale = C.positive, alpha = C.positive }, { "scale", "alpha" })
function Pareto.new(...)
  local o = U.parse("Pareto", { { "scale", U.REQUIRED }, { "alpha", U.REQUIRED }, { "validate_args" } }, ...)
  local scale, alpha = broadcast_all(o.scale, o.alpha)
  local self = setmetatable({ scale = scale, alpha = alpha }, Pareto)
  H.td_init(self, D.Exponential(alpha, { validate_args = false }), { T.ExpTransform(), T.AffineTransform(0.0, scale) }, false)
  return self:_init(scale:size(), {}, o.validate_args)
end
function Pareto._props.support(self) return C.greater_than_eq(self.scale) end
function Pareto._props.mean(self)
  local a = self.alpha:clamp(1)
  return a * self.scale / (a - 1)
end
function Pareto._props.mode(self) return self.scale end
function Pareto._props.variance(self)
  local a = self.alpha:clamp(2)
  return self.scale ^ 2 * a / ((a - 1) ^ 2 * (a - 2))
end
function Pareto:entropy() return (self.scale / self.alpha):log() + self.alpha:reciprocal() + 1 end

local Weibull = td_class("Weibull", { scale = C.positive, concentration = C.positive }, { "scale", "concentration" }, C.positive)
function Weibull.new(...)
  local o = U.parse("Weibull", { { "scale", U.REQUIRED }, { "concentration", U.REQUIRED }, { "validate_args" } }, ...)
  local scale, k = broadcast_all(o.scale, o.concentration)
  local self = setmetatable({ scale = scale, concentration = k, concentration_reciprocal = k:reciprocal() }, Weibull)
  H.td_init(self, D.Exponential(torch.ones_like(scale), { validate_args = false }),
    { T.PowerTransform(self.concentration_reciprocal), T.AffineTransform(0.0, scale) }, false)
  return self:_init(scale:size(), {}, o.validate_args)
end
function Weibull._props.mean(self) return self.scale * (self.concentration_reciprocal + 1):lgamma():exp() end
function Weibull._props.mode(self)
  local k = self.concentration
  return self.scale * ((k - 1) / k):pow(self.concentration_reciprocal)
end
function Weibull._props.variance(self)
  local r = self.concentration_reciprocal
  return self.scale ^ 2 * ((r * 2 + 1):lgamma():exp() - ((r + 1):lgamma() * 2):exp())
end
function Weibull:entropy()
  return EULER * (1 - self.concentration_reciprocal) + (self.scale * self.concentration_reciprocal):log() + 1
end

-- ---- VonMises ----

local VM = class("VonMises")
VM.arg_constraints = { loc = C.real, concentration = C.positive }
VM._params = { "loc", "concentration" }
VM._support = C.interval(-math.pi, math.pi)
VM.new = ctor(VM, "VonMises", { { "loc" }, { "concentration" } })

-- log I_0(k) and I_1(k) / I_0(k), by the exponentially scaled Bessel functions
local function log_i0(k) return torch.special.i0e(k):log() + k end
local function i1_over_i0(k) return torch.special.i1e(k) / torch.special.i0e(k) end

function VM._props.mean(self) return self.loc end
VM._props.mode = VM._props.mean
function VM._props.variance(self) return 1 - i1_over_i0(self.concentration) end
function VM:log_prob(value)
  self:_validate_sample(value)
  return self.concentration * (value - self.loc):cos() - math.log(2 * math.pi) - log_i0(self.concentration)
end
function VM:entropy()
  local k = self.concentration
  return -k * i1_over_i0(k) + math.log(2 * math.pi) + log_i0(k)
end
function VM:sample(sample_shape)
  return torch.no_grad(function()
    local shape = self:_extended_shape(sample_shape)
    local o64 = { dtype = torch.float64, device = self.loc.device }
    local k = self.concentration:to(torch.float64):expand(shape):reshape(-1)
    local tau = (k * k * 4 + 1):sqrt() + 1
    local rho = (tau - (tau * 2):sqrt()) / (k * 2)
    local r = torch.where(k:lt(1e-5), k:reciprocal() + k, (rho * rho + 1) / (rho * 2))
    local x = H.rejection(k:numel(), o64, function(idx)
      local kk, rr = k:index_select(0, idx), r:index_select(0, idx)
      local n = idx:numel()
      local u1, u2, u3 = torch.rand(n, o64), torch.rand(n, o64), torch.rand(n, o64)
      local z = (u1 * math.pi):cos()
      local f = (rr * z + 1) / (rr + z)
      local c = kk * (rr - f)
      local ok = (c * (2 - c) - u2):gt(0):logical_or(((c / u2):log() + 1 - c):ge(0))
      return ok, (u3 - 0.5):sign() * f:clamp(-1, 1):acos()
    end)
    local loc = self.loc:to(torch.float64):expand(shape):reshape(-1)
    x = (x + math.pi + loc):remainder(2 * math.pi) - math.pi
    return x:to(self.loc.dtype):reshape(shape)
  end)
end

-- ---- NegativeBinomial ----

local NB = class("NegativeBinomial")
NB.arg_constraints = { total_count = C.greater_than_eq(0), probs = C.half_open_interval(0.0, 1.0), logits = C.real }
NB._params = { "total_count", "probs", "logits" }
NB._repr_params = { "total_count", "probs" }
NB._support = C.nonnegative_integer

function NB.new(...)
  local o = U.parse("NegativeBinomial", { { "total_count", U.REQUIRED }, { "probs" }, { "logits" }, { "validate_args" } }, ...)
  local t, given = H.probs_or_logits(o)
  local n
  n, t = broadcast_all(o.total_count, t)
  n = n:to(t.dtype)
  local p = given == "probs" and t or t:sigmoid()
  local l = given == "logits" and t or p:log() - (-p):log1p()
  local self = setmetatable({ total_count = n, probs = p, logits = l, _given = { "total_count", given } }, NB)
  return self:_init(p:size(), {}, o.validate_args, { "total_count", given })
end
function NB._props.mean(self) return self.total_count * self.logits:exp() end
function NB._props.mode(self) return ((self.total_count - 1) * self.logits:exp()):floor():clamp(0) end
function NB._props.variance(self) return self.mean / (-self.logits):sigmoid() end
function NB:sample(sample_shape)
  return torch.no_grad(function()
    local shape = self:_extended_shape(sample_shape)
    local rate = H.standard_gamma(self.total_count:expand(shape)) * self.logits:exp()
    return H.poisson(rate)
  end)
end
function NB:log_prob(value)
  self:_validate_sample(value)
  local n, l = self.total_count, self.logits
  local unnorm = n * torch.nn.functional.logsigmoid(-l) + value * torch.nn.functional.logsigmoid(l)
  local norm = -(n + value):lgamma() + (value + 1):lgamma() + n:lgamma()
  norm = torch.where((n + value):eq(0), full(norm, 0), norm)
  return unnorm - norm
end

-- ---- kl_divergence pairs ----

D.register_kl(Pareto, Pareto, function(p, q)
  local r = q.alpha / p.alpha
  local kl = q.alpha * (p.scale / q.scale):log() - r:log() + r - 1
  return H.inf_where(p.scale:lt(q.scale), kl)
end)
D.register_kl(CB, CB, function(p, q)
  return p.mean * (p.logits - q.logits) + p:_cont_bern_log_norm() + (-p.probs):log1p()
    - q:_cont_bern_log_norm() - (-q.probs):log1p()
end)
D.register_kl(CB, D.Exponential, function(p, q) return -p:entropy() - q.rate:log() + q.rate * p.mean end)
D.register_kl(CB, D.Normal, function(p, q)
  local m = p.mean
  return -p:entropy() + 0.5 * ((q.loc / q.scale) ^ 2 + math.log(2 * math.pi)) + q.scale:log()
    + (p.variance + m * m - q.loc * m * 2) / (q.scale ^ 2 * 2)
end)
D.register_kl(CB, D.Uniform, function(p, q)
  local kl = -p:entropy() + (q.high - q.low):log()
  return H.inf_where(q.low:gt(0):logical_or(q.high:lt(1)), kl)
end)

return D
