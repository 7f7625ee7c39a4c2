-- torch.distributions over vectors and matrices, and mixtures: Multinomial,
-- OneHotCategoricalStraightThrough, LowRankMultivariateNormal, LKJCholesky (the onion method),
-- Wishart (Bartlett's decomposition), LogisticNormal, MixtureSameFamily, with PyTorch's
-- parameterisations; and the exponential-family KL (the Bregman divergence of the log-normaliser).
local torch = require "torch"
local U = require "nn_util"
local D = require "torch_distributions"
require "torch_distributions_univariate"
local C = D.constraints
local H = D._h
local T = D.transforms
local class = H.class
local LOG_2PI = math.log(2 * math.pi)

local function full(t, v) return torch.full({}, v, H.opts(t)) end
local function mT(m) return m:transpose(-2, -1) end
local function half_log_det(L) return L:diagonal(0, -2, -1):log():sum(-1) end

-- ---- Multinomial ----

local Mult = class("Multinomial")
Mult.arg_constraints = { probs = C.simplex, logits = C.real_vector }
Mult._params = { "total_count", "probs", "logits" }
Mult._repr_params = { "probs" }
Mult._param_event_dims = { probs = 1, logits = 1 }

function Mult.new(...)
  local o = U.parse("Multinomial", { { "total_count", 1 }, { "probs" }, { "logits" }, { "validate_args" } }, ...)
  local n = o.total_count
  if math.type(n) ~= "integer" then
    if type(n) == "number" and n == math.floor(n) then n = math.tointeger(n)
    else U.error("NotImplementedError: inhomogeneous total_count is not supported") end
  end
  local cat = D.Categorical({ probs = o.probs, logits = o.logits, validate_args = o.validate_args })
  local self = setmetatable({ total_count = n, _categorical = cat, probs = cat.probs, logits = cat.logits,
    _given = { "total_count", cat._given[1] } }, Mult)
  return self:_init(cat.batch_shape, { cat.num_events }, o.validate_args, {})
end
function Mult._props.support(self) return C.multinomial(self.total_count) end
function Mult._props.mean(self) return self.probs * self.total_count end
function Mult._props.mode(self)
  local n, p = self.total_count, self.probs
  local mode = (p * n):floor()
  local left = n - mode:sum(-1, true)
  -- the remaining counts go to the categories with the largest remainders
  local rem = p * n - mode
  local rank = rem:argsort(-1, true):argsort(-1)
  return mode + rank:lt(left:expand(rank:size())):to(p.dtype)
end
function Mult._props.variance(self) return self.probs * (1 - self.probs) * self.total_count end
function Mult:sample(sample_shape)
  local n, k = self.total_count, self.probs:size(-1)
  local draws = self._categorical:sample(H.shape_of({ n }, sample_shape)) -- [n, sample..., batch...]
  return torch.nn.functional.one_hot(draws, k):sum(0):to(self.probs.dtype)
end
function Mult:log_prob(value)
  self:_validate_sample(value)
  local l, v = H.broadcast_all(self.logits, value)
  l = torch.where(v:eq(0):logical_and(l:eq(-math.huge)), full(l, 0), l)
  return (v:sum(-1) + 1):lgamma() - (v + 1):lgamma():sum(-1) + (l * v):sum(-1)
end
function Mult:entropy()
  local n = self.total_count
  local bin = D.Binomial(n, { probs = self.probs, validate_args = false })
  local support = bin:enumerate_support() -- [n + 1, batch..., k]
  local bp = bin:log_prob(support):exp()
  local w = (support + 1):lgamma()
  return self._categorical:entropy() * n - H.as_tensor(n + 1.0, self.probs):lgamma()
    + H.sum_rightmost((bp * w):sum(0), 1)
end

-- ---- OneHotCategoricalStraightThrough ----

local OHST = class("OneHotCategoricalStraightThrough", D.OneHotCategorical)
OHST.has_rsample = true
function OHST.new(...)
  local self = D.OneHotCategorical.new(...)
  return setmetatable(self, OHST)
end
function OHST:rsample(sample_shape)
  local s = self:sample(sample_shape)
  local p = self._categorical.probs
  return s + (p - p:detach())
end

-- ---- LowRankMultivariateNormal: covariance cov_factor cov_factor^T + diag(cov_diag) ----

local LR = class("LowRankMultivariateNormal")
LR.arg_constraints = { loc = C.real_vector, cov_factor = C.independent(C.real, 2), cov_diag = C.independent(C.positive, 1) }
LR._params = { "loc", "cov_factor", "cov_diag" }
LR._param_event_dims = { loc = 1, cov_factor = 2, cov_diag = 1 }
LR._support = C.real_vector
LR.has_rsample = true

function LR.new(...)
  local o = U.parse("LowRankMultivariateNormal", { { "loc", U.REQUIRED }, { "cov_factor", U.REQUIRED }, { "cov_diag", U.REQUIRED }, { "validate_args" } }, ...)
  local loc = H.as_tensor(o.loc)
  local W, d = H.as_tensor(o.cov_factor, loc), H.as_tensor(o.cov_diag, loc)
  if loc:dim() < 1 then U.error("ValueError: loc must be at least one-dimensional.") end
  local n = loc:size(-1)
  if W:dim() < 2 then U.error("ValueError: cov_factor must be at least two-dimensional, with optional leading batch dimensions") end
  if W:size(-2) ~= n then U.errorf("ValueError: cov_factor must be a batch of matrices with shape %d x m", n) end
  if d:dim() < 1 or d:size(-1) ~= n then U.errorf("ValueError: cov_diag must be a batch of vectors with shape %s", U.pystr({ n })) end
  local batch = H.list(torch.broadcast_shapes(torch.Size(H.head(loc, 1)), torch.Size(H.head(W, 2)), torch.Size(H.head(d, 1))))
  local self = setmetatable({ loc = loc:expand(H.shape_of(batch, { n })), cov_factor = W:expand(H.shape_of(batch, H.tail(W, 2))),
    cov_diag = d:expand(H.shape_of(batch, { n })), _W = W, _d = d }, LR)
  self:_init(batch, { n }, o.validate_args)
  -- capacitance K = I + W^T D^-1 W and its Cholesky factor
  local Wt_Dinv = mT(W / d:unsqueeze(-1))
  local K = Wt_Dinv:matmul(W) + torch.eye(W:size(-1), H.opts(W))
  self._capacitance_tril = torch.linalg.cholesky(K)
  return self
end
function LR._props.mean(self) return self.loc end
LR._props.mode = LR._props.mean
function LR._props.variance(self)
  return ((self._W ^ 2):sum(-1) + self._d):expand(H.shape_of(self.batch_shape, self.event_shape))
end
function LR._props.covariance_matrix(self)
  local W = self._W
  local cov = W:matmul(mT(W)) + self._d:diag_embed()
  return cov:expand(H.shape_of(self.batch_shape, self.event_shape, self.event_shape))
end
function LR._props.precision_matrix(self)
  -- Woodbury: D^-1 - D^-1 W K^-1 W^T D^-1
  local W, d = self._W, self._d
  local A = torch.linalg.solve_triangular(self._capacitance_tril, mT(W / d:unsqueeze(-1)), { upper = false })
  local P = (1 / d):diag_embed() - mT(A):matmul(A)
  return P:expand(H.shape_of(self.batch_shape, self.event_shape, self.event_shape))
end
function LR._props.scale_tril(self) return torch.linalg.cholesky(self.covariance_matrix) end
function LR:rsample(sample_shape)
  local shape = self:_extended_shape(sample_shape)
  local m = self._W:size(-1)
  local wshape = H.list(shape)
  wshape[#wshape] = m
  local eW = torch.randn(wshape, H.opts(self.loc))
  local eD = torch.randn(shape, H.opts(self.loc))
  return self.loc + self._W:matmul(eW:unsqueeze(-1)):squeeze(-1) + self._d:sqrt() * eD
end
-- log det of the covariance: log det K + sum log D (the matrix determinant lemma)
local function lr_logdet(self) return half_log_det(self._capacitance_tril) * 2 + self._d:log():sum(-1) end
function LR:log_prob(value)
  self:_validate_sample(value)
  local x = value - self.loc
  local W, d = self._W, self._d
  local batch = H.list(torch.broadcast_shapes(x:size(), torch.Size(H.shape_of(H.head(W, 2), { W:size(-2) }))))
  local xb = x:expand(batch)
  local Wtx = mT(W / d:unsqueeze(-1)):matmul(xb:unsqueeze(-1))
  local Lk = self._capacitance_tril
  local kshape = H.shape_of(H.head(batch, 1), H.tail(Lk, 2))
  local y = torch.linalg.solve_triangular(Lk:expand(kshape), Wtx, { upper = false })
  local m = (xb * xb / d):sum(-1) - (y * y):sum({ -2, -1 })
  return -0.5 * (m + self.event_shape[0] * LOG_2PI + lr_logdet(self))
end
function LR:entropy()
  local h = (lr_logdet(self) + self.event_shape[0] * (1 + LOG_2PI)) * 0.5
  return h:expand(H.list(self.batch_shape))
end

-- the MultivariateNormal with a low-rank one's covariance (for the KL pairs)
local function as_mvn(p)
  if getmetatable(p) ~= LR then return p end
  return D.MultivariateNormal(p.loc, { covariance_matrix = p.covariance_matrix, validate_args = false })
end
local mvn_kl = function(p, q) return D.kl_divergence(as_mvn(p), as_mvn(q)) end
D.register_kl(LR, LR, mvn_kl)
D.register_kl(LR, D.MultivariateNormal, mvn_kl)
D.register_kl(D.MultivariateNormal, LR, mvn_kl)

-- ---- LKJCholesky ----

local LKJ = class("LKJCholesky")
LKJ.arg_constraints = { concentration = C.positive }
LKJ._params = { "concentration" }
LKJ._support = C.corr_cholesky

function LKJ.new(...)
  local o = U.parse("LKJCholesky", { { "dim", U.REQUIRED }, { "concentration", 1.0 }, { "validate_args" } }, ...)
  local dim = o.dim
  if math.type(dim) ~= "integer" or dim < 2 then
    U.errorf("ValueError: Expected dim to be an integer greater than or equal to 2. Found dim=%s.", tostring(dim))
  end
  local c = H.as_tensor(o.concentration)
  local self = setmetatable({ dim = dim, concentration = c, _given = { "dim", "concentration" } }, LKJ)
  self:_init(c:size(), { dim, dim }, o.validate_args)
  -- the onion method: row i's squared norm off the diagonal ~ Beta(i / 2, eta + (dim - 1 - i) / 2)
  -- (row 0 has none: its draw is unused)
  local offset = torch.cat({ torch.zeros(1, H.opts(c)), torch.arange(dim - 1, H.opts(c)) })
  local marginal = c + 0.5 * (dim - 2)
  self._beta = D.Beta(offset * 0.5 + 0.5, marginal:unsqueeze(-1) - offset * 0.5, { validate_args = false })
  return self
end
function LKJ:expand(batch_shape)
  return LKJ.new(self.dim, self.concentration:expand(H.list(batch_shape)), { validate_args = false })
end
function LKJ:_repr() return "dim: " .. self.dim .. ", concentration: " .. tostring(self.concentration) end
function LKJ:sample(sample_shape)
  return torch.no_grad(function()
    local y = self._beta:sample(sample_shape):unsqueeze(-1)
    local z = torch.randn(self:_extended_shape(sample_shape), H.opts(self.concentration)):tril(-1)
    local norm = z:norm(2, -1, true)
    local u = z / torch.where(norm:eq(0), full(norm, 1), norm) -- row 0 is all zero
    local w = y:sqrt() * u
    local diag = (1 - (w * w):sum(-1)):clamp(torch.finfo(w.dtype).tiny):sqrt()
    return w + diag:diag_embed()
  end)
end
function LKJ:log_prob(value)
  self:_validate_sample(value)
  local dim, c = self.dim, self.concentration
  local diag = value:diagonal(0, -2, -1):narrow(-1, 1, dim - 1)
  local order = (c - 1):unsqueeze(-1) * 2 + dim - torch.arange(2, dim + 1, H.opts(c))
  local unnorm = (order * diag:log()):sum(-1)
  local dm1 = dim - 1
  local alpha = c + 0.5 * dm1
  local norm = 0.5 * dm1 * math.log(math.pi) + torch.mvlgamma(alpha - 0.5, dm1) - alpha:lgamma() * dm1
  return unnorm - norm
end

-- ---- Wishart ----

local Wishart = class("Wishart", D.ExponentialFamily)
Wishart.arg_constraints = { covariance_matrix = C.positive_definite, precision_matrix = C.positive_definite,
  scale_tril = C.lower_cholesky, df = C.greater_than(0) }
Wishart._params = { "df", "covariance_matrix", "precision_matrix", "scale_tril" }
Wishart._param_event_dims = { covariance_matrix = 2, precision_matrix = 2, scale_tril = 2 }
Wishart._support = C.positive_definite
Wishart.has_rsample = true

-- sum_i digamma(a - i / 2), i = 0..p-1
local function mvdigamma(a, p)
  local out = a:digamma()
  for i = 1, p - 1 do out = out + (a - i / 2):digamma() end
  return out
end

function Wishart.new(...)
  local o = U.parse("Wishart", { { "df", U.REQUIRED }, { "covariance_matrix" }, { "precision_matrix" }, { "scale_tril" }, { "validate_args" } }, ...)
  local given, n = nil, 0
  for _, k in ipairs({ "covariance_matrix", "precision_matrix", "scale_tril" }) do
    if o[k] ~= nil then given, n = k, n + 1 end
  end
  if n ~= 1 then U.error("ValueError: Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.") end
  local m = H.as_tensor(o[given])
  if m:dim() < 2 then
    U.errorf("ValueError: %s must be at least two-dimensional, with optional leading batch dimensions",
      given == "scale_tril" and "scale_tril matrix" or given)
  end
  local p = m:size(-1)
  local df = H.as_tensor(o.df, m)
  local batch = H.list(torch.broadcast_shapes(torch.Size(H.head(m, 2)), df:size()))
  local self = setmetatable({ df = df:expand(batch), _given = { "df", given } }, Wishart)
  self[given] = m:expand(H.shape_of(batch, { p, p }))
  local checks = { given }
  self:_init(batch, { p, p }, o.validate_args, checks)
  if self._validate_args and df:le(p - 1):any():item() then
    U.errorf("ValueError: Value of df=%s expected to be greater than ndim - 1 = %d.", tostring(df), p - 1)
  end
  if given == "scale_tril" then self._unbroadcasted_scale_tril = m
  elseif given == "covariance_matrix" then self._unbroadcasted_scale_tril = torch.linalg.cholesky(m)
  else self._unbroadcasted_scale_tril = torch.linalg.cholesky(torch.linalg.inv(m)) end
  -- Bartlett: the diagonal of the factor ~ sqrt(Chi2(df - i))
  self._dist_chi2 = D.Chi2(self.df:unsqueeze(-1) - torch.arange(p, H.opts(m)), { validate_args = false })
  return self
end
function Wishart:_repr() return "df: " .. tostring(self.df) .. ", " .. self._given[2] .. ": " .. tostring(self[self._given[2]]:size()) end
local function wmat(self, M) return M:expand(H.shape_of(self.batch_shape, self.event_shape)) end
function Wishart._props.scale_tril(self) return wmat(self, self._unbroadcasted_scale_tril) end
function Wishart._props.covariance_matrix(self)
  local L = self._unbroadcasted_scale_tril
  return wmat(self, L:matmul(mT(L)))
end
function Wishart._props.precision_matrix(self) return wmat(self, torch.cholesky_inverse(self._unbroadcasted_scale_tril)) end
local function df2(self) return self.df:unsqueeze(-1):unsqueeze(-1) end
function Wishart._props.mean(self) return df2(self) * self.covariance_matrix end
function Wishart._props.mode(self)
  local p = self.event_shape[0]
  local f = df2(self) - p - 1
  return torch.where(f:le(0), full(f, 0 / 0), f * self.covariance_matrix)
end
function Wishart._props.variance(self)
  local V = self.covariance_matrix
  local d = V:diagonal(0, -2, -1)
  return df2(self) * (V * V + d:unsqueeze(-1) * d:unsqueeze(-2))
end
function Wishart:rsample(sample_shape)
  local chi = self._dist_chi2:rsample(sample_shape):sqrt()
  chi = chi:clamp(torch.finfo(chi.dtype).eps)
  local noise = torch.randn(self:_extended_shape(sample_shape), H.opts(chi)):tril(-1) + chi:diag_embed()
  local L = self._unbroadcasted_scale_tril:matmul(noise)
  return L:matmul(mT(L))
end
function Wishart:log_prob(value)
  self:_validate_sample(value)
  local nu, p = self.df, self.event_shape[0]
  local L = self._unbroadcasted_scale_tril
  local Lx = torch.linalg.cholesky(value)
  local batch = H.list(torch.broadcast_shapes(torch.Size(H.head(L, 2)), torch.Size(H.head(Lx, 2))))
  local S = torch.linalg.solve_triangular(L:expand(H.shape_of(batch, { p, p })), Lx:expand(H.shape_of(batch, { p, p })), { upper = false })
  local trace = (S * S):sum({ -2, -1 }) -- tr(Sigma^-1 X)
  return -nu * (p * math.log(2) / 2 + half_log_det(L)) - torch.mvlgamma(nu / 2, p)
    + (nu - p - 1) * half_log_det(Lx) - trace / 2
end
function Wishart:entropy()
  local nu, p = self.df, self.event_shape[0]
  local ld = half_log_det(self._unbroadcasted_scale_tril)
  return (p + 1) * (p * math.log(2) / 2 + ld) + torch.mvlgamma(nu / 2, p) - (nu - p - 1) / 2 * mvdigamma(nu / 2, p) + nu * p / 2
end
function Wishart._props._natural_params(self)
  local p = self.event_shape[0]
  return { self.precision_matrix * -0.5, (self.df - p - 1) * 0.5 }
end
function Wishart:_log_normalizer(x, y)
  local p = self.event_shape[0]
  local a = y + (p + 1) / 2
  local ld = half_log_det(torch.linalg.cholesky(-x)) * 2
  return -a * ld + torch.mvlgamma(a, p)
end
function Wishart._props._mean_carrier_measure() return 0 end

-- ---- LogisticNormal: stick-breaking of a Normal ----

local LN = class("LogisticNormal", D.TransformedDistribution)
LN.arg_constraints = { loc = C.real, scale = C.positive }
LN._params = { "loc", "scale" }
LN._param_event_dims = { loc = 1, scale = 1 }
LN._support = C.simplex
LN.has_rsample = true
function LN:_repr() return "loc: " .. tostring(self.loc:size()) .. ", scale: " .. tostring(self.scale:size()) end
function LN.new(...)
  local o = U.parse("LogisticNormal", { { "loc", U.REQUIRED }, { "scale", U.REQUIRED }, { "validate_args" } }, ...)
  local base = D.Normal(o.loc, o.scale, { validate_args = o.validate_args })
  if base.batch_shape:dim() == 0 then base = base:expand({ 1 }) end
  local self = setmetatable({}, LN)
  return H.td_init(self, base, { T.StickBreakingTransform() }, o.validate_args)
end
function LN._props.loc(self) return self.base_dist.base_dist.loc end
function LN._props.scale(self) return self.base_dist.base_dist.scale end
function LN:expand(batch_shape)
  local s = H.shape_of(batch_shape, { self.base_dist.base_dist.loc:size(-1) })
  return LN.new(self.loc:expand(s), self.scale:expand(s), { validate_args = false })
end

-- ---- MixtureSameFamily ----

local MSF = class("MixtureSameFamily")
MSF.arg_constraints = {}
MSF._params = {}

function MSF.new(...)
  local o = U.parse("MixtureSameFamily", { { "mixture_distribution", U.REQUIRED }, { "component_distribution", U.REQUIRED }, { "validate_args" } }, ...)
  local mix, comp = o.mixture_distribution, o.component_distribution
  if getmetatable(mix) ~= D.Categorical then U.error("ValueError: The Mixture distribution needs to be an instance of torch.distributions.Categorical") end
  if type(comp) ~= "table" or not comp.batch_shape then U.error("ValueError: The Component distribution need to be an instance of torch.distributions.Distribution") end
  local mb, cb = H.list(mix.batch_shape), H.list(comp.batch_shape)
  if #cb < 1 then U.error("ValueError: `component_distribution` must have at least one batch dimension") end
  local cbatch = H.head(cb, 1)
  local ok = #mb <= #cbatch
  for i = 1, #mb do
    local a, b = mb[#mb - i + 1], cbatch[#cbatch - i + 1]
    if a ~= 1 and b ~= 1 and a ~= b then ok = false end
  end
  if not ok then
    U.errorf("ValueError: `mixture_distribution.batch_shape` (%s) is not compatible with `component_distribution.batch_shape`(%s)",
      tostring(mix.batch_shape), tostring(comp.batch_shape))
  end
  local km, kc = mix.logits:size(-1), cb[#cb]
  if km ~= kc then
    U.errorf("ValueError: `mixture_distribution component` (%d) does not equal `component_distribution.batch_shape[-1]` (%d)", km, kc)
  end
  local self = setmetatable({ _mixture_distribution = mix, _component_distribution = comp, _num_component = km,
    _event_ndims = comp.event_shape:dim() }, MSF)
  return self:_init(cbatch, comp.event_shape, o.validate_args, {})
end
function MSF._props.mixture_distribution(self) return self._mixture_distribution end
function MSF._props.component_distribution(self) return self._component_distribution end
function MSF._props.support(self) return self._component_distribution.support end
function MSF:_repr() return "\n  " .. tostring(self._mixture_distribution) .. ",\n  " .. tostring(self._component_distribution) end
function MSF:expand(batch_shape)
  local b = H.list(batch_shape)
  local comp = self._component_distribution:expand(H.shape_of(b, { self._num_component }))
  local mix = self._mixture_distribution:expand(b)
  return MSF.new(mix, comp, { validate_args = false })
end
-- the mixture weights shaped to broadcast against the component's batch ++ event
local function mix_weights(self, t)
  for _ = 1, self._event_ndims do t = t:unsqueeze(-1) end
  return t
end
local function comp_dim(self) return -1 - self._event_ndims end
function MSF._props.mean(self)
  local p = mix_weights(self, self._mixture_distribution.probs)
  return (p * self._component_distribution.mean):sum(comp_dim(self))
end
function MSF._props.variance(self)
  local p = mix_weights(self, self._mixture_distribution.probs)
  local cm = self._component_distribution.mean
  local d = comp_dim(self)
  local m = (p * cm):sum(d, true)
  return (p * self._component_distribution.variance):sum(d) + (p * (cm - m) ^ 2):sum(d)
end
local function pad(self, x) return x:unsqueeze(comp_dim(self)) end
function MSF:cdf(x)
  return (self._component_distribution:cdf(pad(self, x)) * self._mixture_distribution.probs):sum(-1)
end
function MSF:log_prob(x)
  self:_validate_sample(x)
  local lp = self._component_distribution:log_prob(pad(self, x))
  return (lp + self._mixture_distribution.logits:log_softmax(-1)):logsumexp(-1)
end
function MSF:sample(sample_shape)
  return torch.no_grad(function()
    local ss = H.list(sample_shape)
    local idx = self._mixture_distribution:sample(ss) -- [sample..., batch...]
    local comp = self._component_distribution:sample(ss) -- [sample..., batch..., k, event...]
    local e = self._event_ndims
    local ishape = H.list(idx)
    ishape[#ishape + 1] = 1
    for i = 1, e do ishape[#ishape + 1] = comp:size(comp:dim() - e + i - 1) end
    local gshape = H.list(idx)
    gshape[#gshape + 1] = 1
    for _ = 1, e do gshape[#gshape + 1] = 1 end
    local gi = idx:reshape(gshape):expand(ishape)
    return comp:gather(comp:dim() - 1 - e, gi):squeeze(comp:dim() - 1 - e)
  end)
end

-- ---- the exponential-family KL: the Bregman divergence of the log-normaliser ----

D.register_kl(D.ExponentialFamily, D.ExponentialFamily, function(p, q)
  if getmetatable(p) ~= getmetatable(q) then
    H.not_implemented("The cross KL-divergence between different exponential families cannot be computed using Bregman divergences")
  end
  local A, eta, g = H.log_normalizer_grad(p)
  local out = q:_log_normalizer(table.unpack(q._natural_params)) - A
  for i, e in ipairs(eta) do
    out = out - H.sum_rightmost((q._natural_params[i] - e) * g[i], q.event_shape:dim())
  end
  return out
end)

return D
