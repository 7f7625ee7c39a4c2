-- torch.distributions built on others: the transforms (torch.distributions.transforms:
-- ExpTransform, AffineTransform, SigmoidTransform, TanhTransform, ComposeTransform and each one's
-- .inv), TransformedDistribution, LogNormal, RelaxedBernoulli, RelaxedOneHotCategorical,
-- Independent (reinterpreted_batch_ndims) and MultivariateNormal (loc with one of
-- covariance_matrix, precision_matrix, scale_tril), with their kl_divergence pairs.
--   local d = D.TransformedDistribution(D.Normal(0, 1), { D.transforms.AffineTransform(1, 2), D.transforms.ExpTransform() })
local torch = require "torch"
local U = require "nn_util"
local D = require "torch_distributions"
local C = D.constraints
local H = D._h
local class = H.class
local LOG_2PI = math.log(2 * math.pi)

-- ---- transforms ----

local T = {}
D.transforms = T
local Transform = { __name = "torch.distributions.transforms.Transform", _name = "Transform", bijective = true,
  sign = 1, event_dim = 0, domain = C.real, codomain = C.real }
Transform.__index = Transform
T.Transform = Transform

local function tclass(name, parent)
  parent = parent or Transform
  local cls = setmetatable({ _name = name, __name = "torch.distributions.transforms." .. name }, { __index = parent,
    __call = function(c, ...) return c.new(...) end })
  cls.__index = cls
  cls.__call = function(self, x) return self:_call(x) end
  cls.__tostring = function(self) return self:_repr() end
  T[name] = cls
  return cls
end

function Transform:_repr() return self._name .. "()" end

local Inverse = tclass("_InverseTransform")
function Inverse.new(base)
  return setmetatable({ inv = base, domain = base.codomain, codomain = base.domain, sign = base.sign,
    event_dim = base.event_dim }, Inverse)
end
function Inverse:_call(y) return self.inv:_inverse(y) end
function Inverse:_inverse(x) return self.inv:_call(x) end
function Inverse:log_abs_det_jacobian(x, y) return -self.inv:log_abs_det_jacobian(y, x) end
function Inverse:_repr() return tostring(self.inv) .. ".inv" end

-- a transform object of cls with fields, and its inverse as .inv
local function make(cls, fields)
  local self = setmetatable(fields or {}, cls)
  self.inv = Inverse.new(self)
  return self
end
T._tclass, T._make = tclass, make

local Exp = tclass("ExpTransform")
Exp.codomain = C.positive
function Exp.new() return make(Exp) end
function Exp:_call(x) return x:exp() end
function Exp:_inverse(y) return y:log() end
function Exp:log_abs_det_jacobian(x) return x end

local Sigmoid = tclass("SigmoidTransform")
Sigmoid.codomain = C.unit_interval
function Sigmoid.new() return make(Sigmoid) end
local function clip01(y)
  local fi = torch.finfo(y.dtype)
  return y:clamp(fi.tiny, 1 - fi.eps)
end
function Sigmoid:_call(x) return clip01(x:sigmoid()) end
function Sigmoid:_inverse(y)
  y = clip01(y)
  return y:log() - (-y):log1p()
end
function Sigmoid:log_abs_det_jacobian(x)
  local sp = torch.nn.functional.softplus
  return -sp(-x) - sp(x)
end

local Tanh = tclass("TanhTransform")
Tanh.codomain = C.interval(-1.0, 1.0)
function Tanh.new() return make(Tanh) end
function Tanh:_call(x) return x:tanh() end
function Tanh:_inverse(y) return y:atanh() end
function Tanh:log_abs_det_jacobian(x) return (math.log(2) - x - torch.nn.functional.softplus(x * -2)) * 2 end

local Affine = tclass("AffineTransform")
function Affine.new(...)
  local o = U.parse("AffineTransform", { { "loc", U.REQUIRED }, { "scale", U.REQUIRED }, { "event_dim", 0 }, { "cache_size", 0 } }, ...)
  local sign = torch.is_tensor(o.scale) and o.scale:sign() or (o.scale > 0 and 1 or o.scale < 0 and -1 or 0)
  return make(Affine, { loc = o.loc, scale = o.scale, event_dim = o.event_dim, sign = sign,
    domain = o.event_dim > 0 and C.independent(C.real, o.event_dim) or C.real,
    codomain = o.event_dim > 0 and C.independent(C.real, o.event_dim) or C.real })
end
function Affine:_call(x) return x * self.scale + self.loc end
function Affine:_inverse(y) return (y - self.loc) / self.scale end
function Affine:log_abs_det_jacobian(x)
  local r
  if torch.is_tensor(self.scale) then r = self.scale:abs():log()
  else r = torch.full(x:size(), math.log(math.abs(self.scale)), H.opts(x)) end
  if self.event_dim > 0 then
    local shape = H.head(r, self.event_dim)
    shape[#shape + 1] = -1
    r = r:reshape(shape):sum(-1)
    return r:expand(H.head(x, self.event_dim))
  end
  return r:expand(x:size())
end

local Compose = tclass("ComposeTransform")
function Compose.new(parts)
  local sign, ed = 1, 0
  for _, p in ipairs(parts) do
    sign = sign * p.sign
    ed = math.max(ed, p.event_dim)
  end
  return make(Compose, { parts = parts, sign = sign, event_dim = ed, bijective = true,
    domain = parts[1] and parts[1].domain or C.real, codomain = parts[#parts] and parts[#parts].codomain or C.real })
end
function Compose:_call(x)
  for _, p in ipairs(self.parts) do x = p(x) end
  return x
end
function Compose:_inverse(y)
  for i = #self.parts, 1, -1 do y = self.parts[i]:_inverse(y) end
  return y
end
function Compose:log_abs_det_jacobian(x, y)
  if #self.parts == 0 then return torch.zeros_like(x) end
  local total
  for i, p in ipairs(self.parts) do
    local nx = i == #self.parts and y or p(x)
    local t = H.sum_rightmost(p:log_abs_det_jacobian(x, nx), self.event_dim - p.event_dim)
    total = total and total + t or t
    x = nx
  end
  return total
end
function Compose:_repr()
  local s = {}
  for i, p in ipairs(self.parts) do s[i] = "    " .. tostring(p) end
  return "ComposeTransform(\n" .. table.concat(s, ",\n") .. "\n)"
end

-- ---- TransformedDistribution ----

local TD = class("TransformedDistribution")

local function td_init(self, base, transforms, validate_args)
  if getmetatable(transforms) and transforms._call then transforms = { transforms } end
  transforms = transforms or {}
  local ed = base.event_shape:dim()
  for _, t in ipairs(transforms) do ed = math.max(ed, t.event_dim) end
  local extra = ed - base.event_shape:dim()
  if extra > 0 then base = D.Independent(base, extra) end
  self.base_dist, self.transforms = base, transforms
  self.has_rsample = base.has_rsample
  local shape = H.shape_of(nil, base.batch_shape, base.event_shape) -- through forward_shape
  for _, t in ipairs(transforms) do if t.forward_shape then shape = H.list(t:forward_shape(shape)) end end
  return self:_init(H.head(shape, ed), H.tail(shape, ed), validate_args, {})
end
H.td_init = td_init

function TD.new(...)
  local o = U.parse("TransformedDistribution", { { "base_distribution", U.REQUIRED }, { "transforms", U.REQUIRED }, { "validate_args" } }, ...)
  return td_init(setmetatable({}, TD), o.base_distribution, o.transforms, o.validate_args)
end
function TD:_repr() return "" end
function TD._props.support(self)
  local n = #self.transforms
  if n == 0 then return self.base_dist.support end
  local s = self.transforms[n].codomain
  local extra = self.event_shape:dim() - s.event_dim
  return extra > 0 and C.independent(s, extra) or s
end
function TD:expand(batch_shape)
  if getmetatable(self) ~= TD then return D.Distribution.expand(self, batch_shape) end
  local base = self.base_dist:expand(H.shape_of(nil, batch_shape, H.head(self.event_shape, self.base_dist.event_shape:dim())))
  return TD.new(base, self.transforms, { validate_args = false })
end
function TD:sample(sample_shape)
  return torch.no_grad(function()
    local x = self.base_dist:sample(sample_shape)
    for _, t in ipairs(self.transforms) do x = t(x) end
    return x
  end)
end
function TD:rsample(sample_shape)
  local x = self.base_dist:rsample(sample_shape)
  for _, t in ipairs(self.transforms) do x = t(x) end
  return x
end
function TD:log_prob(value)
  self:_validate_sample(value)
  local ed = self.event_shape:dim()
  local lp, y = 0, value
  for i = #self.transforms, 1, -1 do
    local t = self.transforms[i]
    local x = t:_inverse(y)
    lp = lp - H.sum_rightmost(t:log_abs_det_jacobian(x, y), ed - t.event_dim)
    y = x
  end
  return lp + H.sum_rightmost(self.base_dist:log_prob(y), ed - self.base_dist.event_shape:dim())
end
-- cdf / icdf of a monotone chain: 1 - F where the transforms decrease
local function monotonize(self, v)
  local sign = 1
  for _, t in ipairs(self.transforms) do sign = sign * t.sign end
  if sign == 1 then return v end
  return (v - 0.5) * sign + 0.5
end
function TD:cdf(value)
  self:_validate_sample(value)
  for i = #self.transforms, 1, -1 do value = self.transforms[i]:_inverse(value) end
  return monotonize(self, self.base_dist:cdf(value))
end
function TD:icdf(value)
  value = self.base_dist:icdf(monotonize(self, value))
  for _, t in ipairs(self.transforms) do value = t(value) end
  return value
end

-- ---- LogNormal ----

local LogNormal = class("LogNormal", TD)
LogNormal.arg_constraints = { loc = C.real, scale = C.positive }
LogNormal._params = { "loc", "scale" }
LogNormal._support = C.positive

function LogNormal.new(...)
  local o = U.parse("LogNormal", { { "loc", U.REQUIRED }, { "scale", U.REQUIRED }, { "validate_args" } }, ...)
  local base = D.Normal(o.loc, o.scale, { validate_args = o.validate_args })
  local self = setmetatable({ loc = base.loc, scale = base.scale }, LogNormal)
  return td_init(self, base, { Exp.new() }, o.validate_args)
end
LogNormal._repr = D.Distribution._repr
function LogNormal._props.mean(self) return (self.loc + self.scale:pow(2) / 2):exp() end
function LogNormal._props.mode(self) return (self.loc - self.scale:pow(2)):exp() end
function LogNormal._props.variance(self)
  local s2 = self.scale:pow(2)
  return s2:expm1() * (self.loc * 2 + s2):exp()
end
function LogNormal:entropy() return self.base_dist:entropy() + self.loc end

-- ---- RelaxedBernoulli, RelaxedOneHotCategorical ----

local function clamp_probs(p)
  local e = torch.finfo(p.dtype).eps
  return p:clamp(e, 1 - e)
end

local LRB = class("LogitRelaxedBernoulli")
LRB.arg_constraints = { probs = C.unit_interval, logits = C.real }
LRB._params = { "temperature", "probs", "logits" }
LRB._repr_params = { "probs" }
LRB._support = C.real
LRB.has_rsample = true

-- temperature, probs and logits of a relaxed distribution (binary or over the last dim)
local function relaxed_params(o, binary)
  local t, given = H.probs_or_logits(o)
  local p, l
  if binary then
    p, l = given == "probs" and t or t:sigmoid(), given == "logits" and t or t:log() - (-t):log1p()
  else
    l = given == "logits" and t - t:logsumexp(-1, true) or (t / t:sum(-1, true)):log()
    p = l:exp()
  end
  return H.as_tensor(o.temperature, p), p, l, given
end

function LRB.new(...)
  local o = U.parse("LogitRelaxedBernoulli", { { "temperature", U.REQUIRED }, { "probs" }, { "logits" }, { "validate_args" } }, ...)
  local temp, p, l, given = relaxed_params(o, true)
  local self = setmetatable({ temperature = temp, probs = p, logits = l, _given = { "temperature", given } }, LRB)
  return self:_init(p:size(), {}, o.validate_args, { given })
end
function LRB:rsample(sample_shape)
  local shape = self:_extended_shape(sample_shape)
  local u = clamp_probs(torch.rand(shape, H.opts(self.probs)))
  local p = clamp_probs(self.probs)
  return (u:log() - (-u):log1p() + p:log() - (-p):log1p()) / self.temperature
end
function LRB:log_prob(value)
  self:_validate_sample(value)
  local diff = self.logits - value * self.temperature
  return self.temperature:log() + diff - diff:exp():log1p() * 2
end

local ERC = class("ExpRelaxedCategorical")
ERC.arg_constraints = { probs = C.simplex, logits = C.real_vector }
ERC._params = { "temperature", "probs", "logits" }
ERC._repr_params = { "probs" }
ERC._param_event_dims = { probs = 1, logits = 1 }
ERC._support = C.real_vector
ERC.has_rsample = true

function ERC.new(...)
  local o = U.parse("ExpRelaxedCategorical", { { "temperature", U.REQUIRED }, { "probs" }, { "logits" }, { "validate_args" } }, ...)
  local temp, p, l, given = relaxed_params(o, false)
  local self = setmetatable({ temperature = temp, probs = p, logits = l, _given = { "temperature", given } }, ERC)
  return self:_init(H.head(p, 1), H.tail(p, 1), o.validate_args, { given })
end
function ERC:rsample(sample_shape)
  local u = clamp_probs(torch.rand(self:_extended_shape(sample_shape), H.opts(self.probs)))
  local scores = (self.logits - (-u:log()):log()) / self.temperature
  return scores - scores:logsumexp(-1, true)
end
function ERC:log_prob(value)
  self:_validate_sample(value)
  local K = self.probs:size(-1)
  local log_scale = H.full_like(self.temperature, K):lgamma() + self.temperature:log() * (K - 1)
  local score = self.logits - value * self.temperature:unsqueeze(-1)
  return (score - score:logsumexp(-1, true)):sum(-1) + log_scale
end

-- RelaxedBernoulli / RelaxedOneHotCategorical: the logit / log-space base, then sigmoid / exp
local function relaxed(name, Base, transform, support)
  local cls = class(name, TD)
  cls._params, cls._repr_params, cls._support = Base._params, { "temperature", "probs" }, support
  cls._param_event_dims = Base._param_event_dims
  cls.arg_constraints = Base.arg_constraints
  cls._repr = D.Distribution._repr
  cls.new = function(...)
    local o = U.parse(name, { { "temperature", U.REQUIRED }, { "probs" }, { "logits" }, { "validate_args" } }, ...)
    local base = Base.new(o)
    local self = setmetatable({ temperature = base.temperature, probs = base.probs, logits = base.logits, _given = base._given }, cls)
    return td_init(self, base, { transform.new() }, o.validate_args)
  end
  return cls
end
relaxed("RelaxedBernoulli", LRB, Sigmoid, C.unit_interval)
relaxed("RelaxedOneHotCategorical", ERC, Exp, C.simplex)

-- ---- Independent ----

local Independent = class("Independent")

function Independent.new(...)
  local o = U.parse("Independent", { { "base_distribution", U.REQUIRED }, { "reinterpreted_batch_ndims", U.REQUIRED }, { "validate_args" } }, ...)
  local base, r = o.base_distribution, U.check_int("Independent", "reinterpreted_batch_ndims", o.reinterpreted_batch_ndims, 0)
  local nb = base.batch_shape:dim()
  if r > nb then
    U.errorf("ValueError: Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual %d vs %d", r, nb)
  end
  local shape = H.shape_of(nil, base.batch_shape, base.event_shape)
  local ed = r + base.event_shape:dim()
  local self = setmetatable({ base_dist = base, reinterpreted_batch_ndims = r, has_rsample = base.has_rsample,
    has_enumerate_support = r == 0 and base.has_enumerate_support }, Independent)
  return self:_init(H.head(shape, ed), H.tail(shape, ed), o.validate_args, {})
end
function Independent:_repr() return tostring(self.base_dist) .. ", " .. self.reinterpreted_batch_ndims end
function Independent._props.support(self)
  local s = self.base_dist.support
  return self.reinterpreted_batch_ndims > 0 and C.independent(s, self.reinterpreted_batch_ndims) or s
end
for _, k in ipairs({ "mean", "mode", "variance", "stddev" }) do
  Independent._props[k] = function(self) return self.base_dist[k] end
end
function Independent:expand(batch_shape)
  local r = self.reinterpreted_batch_ndims
  local base = self.base_dist:expand(H.shape_of(batch_shape, H.head(self.event_shape, self.event_shape:dim() - r)))
  return Independent.new(base, r, { validate_args = false })
end
function Independent:sample(s) return self.base_dist:sample(s) end
function Independent:rsample(s) return self.base_dist:rsample(s) end
function Independent:log_prob(value)
  self:_validate_sample(value)
  return H.sum_rightmost(self.base_dist:log_prob(value), self.reinterpreted_batch_ndims)
end
function Independent:entropy() return H.sum_rightmost(self.base_dist:entropy(), self.reinterpreted_batch_ndims) end

-- ---- MultivariateNormal ----

local MVN = class("MultivariateNormal")
MVN.arg_constraints = { loc = C.real_vector, covariance_matrix = C.positive_definite,
  precision_matrix = C.positive_definite, scale_tril = C.lower_cholesky }
MVN._params = { "loc", "covariance_matrix", "precision_matrix", "scale_tril" }
MVN._param_event_dims = { loc = 1, covariance_matrix = 2, precision_matrix = 2, scale_tril = 2 }
MVN._support = C.real_vector
MVN.has_rsample = true

function MVN.new(...)
  local o = U.parse("MultivariateNormal", { { "loc", U.REQUIRED }, { "covariance_matrix" }, { "precision_matrix" },
    { "scale_tril" }, { "validate_args" } }, ...)
  local loc = H.as_tensor(o.loc)
  if loc:dim() < 1 then U.error("ValueError: loc must be at least one-dimensional.") end
  local given, n = nil, 0
  for _, k in ipairs({ "covariance_matrix", "precision_matrix", "scale_tril" }) do
    if o[k] ~= nil then given, n = k, n + 1 end
  end
  if n ~= 1 then U.error("ValueError: Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.") end
  local m = H.as_tensor(o[given], loc)
  if m:dim() < 2 then
    U.errorf("ValueError: %s must be at least two-dimensional, with optional leading batch dimensions",
      given == "scale_tril" and "scale_tril matrix" or given)
  end
  local batch = torch.broadcast_shapes(torch.Size(H.head(m, 2)), torch.Size(H.head(loc, 1)))
  local self = setmetatable({ loc = loc:expand(H.shape_of(batch, { loc:size(-1) })), _given = { "loc", given } }, MVN)
  self[given] = m:expand(H.shape_of(batch, H.tail(m, 2)))
  self:_init(batch, { loc:size(-1) }, o.validate_args, { "loc", given })
  if given == "scale_tril" then self._unbroadcasted_scale_tril = m
  elseif given == "covariance_matrix" then self._unbroadcasted_scale_tril = torch.linalg.cholesky(m)
  else self._unbroadcasted_scale_tril = torch.linalg.cholesky(torch.linalg.inv(m)) end
  return self
end
function MVN:_repr() return "loc: " .. tostring(self.loc:numel() == 1 and self.loc or self.loc:size()) .. ", " .. self._given[2] .. ": " .. tostring(self[self._given[2]]:size()) end

local function batch_mat(self, m) return m:expand(H.shape_of(self.batch_shape, self.event_shape, self.event_shape)) end
function MVN._props.scale_tril(self) return batch_mat(self, self._unbroadcasted_scale_tril) end
function MVN._props.covariance_matrix(self)
  local L = self._unbroadcasted_scale_tril
  return batch_mat(self, L:matmul(L:transpose(-2, -1)))
end
function MVN._props.precision_matrix(self) return batch_mat(self, torch.cholesky_inverse(self._unbroadcasted_scale_tril)) end
function MVN._props.mean(self) return self.loc end
MVN._props.mode = MVN._props.mean
function MVN._props.variance(self)
  return self._unbroadcasted_scale_tril:pow(2):sum(-1):expand(H.shape_of(self.batch_shape, self.event_shape))
end
function MVN:rsample(sample_shape)
  local eps = torch.randn(self:_extended_shape(sample_shape), H.opts(self.loc))
  return self.loc + self._unbroadcasted_scale_tril:matmul(eps:unsqueeze(-1)):squeeze(-1)
end

-- x^T (L L^T)^-1 x over the last dim of x, L and x broadcast over their batch dims
local function mahalanobis(L, x)
  local batch = torch.broadcast_shapes(torch.Size(H.head(L, 2)), torch.Size(H.head(x, 1)))
  local n = x:size(-1)
  local y = torch.linalg.solve_triangular(L:expand(H.shape_of(batch, { n, n })), x:expand(H.shape_of(batch, { n })):unsqueeze(-1), { upper = false })
  return y:pow(2):sum({ -2, -1 })
end
local function half_log_det(L) return L:diagonal(0, -2, -1):log():sum(-1) end

function MVN:log_prob(value)
  self:_validate_sample(value)
  local L = self._unbroadcasted_scale_tril
  local n = self.event_shape[0]
  return -0.5 * (mahalanobis(L, value - self.loc) + n * LOG_2PI) - half_log_det(L)
end
function MVN:entropy()
  local n = self.event_shape[0]
  local h = half_log_det(self._unbroadcasted_scale_tril) + 0.5 * n * (1 + LOG_2PI)
  return h:expand(H.list(self.batch_shape))
end

-- ---- kl_divergence pairs ----

D.register_kl(MVN, MVN, function(p, q)
  if p.event_shape[0] ~= q.event_shape[0] then
    U.error("ValueError: KL-divergence between two Multivariate Normals with different event shapes cannot be computed")
  end
  local n = p.event_shape[0]
  local pL, qL = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
  local batch = torch.broadcast_shapes(torch.Size(H.head(pL, 2)), torch.Size(H.head(qL, 2)))
  local X = torch.linalg.solve_triangular(qL:expand(H.shape_of(batch, { n, n })), pL:expand(H.shape_of(batch, { n, n })), { upper = false })
  local kl = half_log_det(qL) - half_log_det(pL) + 0.5 * (X:pow(2):sum({ -2, -1 }) + mahalanobis(qL, q.loc - p.loc) - n)
  return kl:expand(torch.broadcast_shapes(p.batch_shape, q.batch_shape))
end)
D.register_kl(Independent, Independent, function(p, q)
  if p.reinterpreted_batch_ndims ~= q.reinterpreted_batch_ndims then
    H.not_implemented("KL between Independent distributions with different reinterpreted_batch_ndims")
  end
  return H.sum_rightmost(D.kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
end)
D.register_kl(LogNormal, LogNormal, function(p, q) return D.kl_divergence(p.base_dist, q.base_dist) end)

return D
