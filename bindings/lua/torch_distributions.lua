-- torch.distributions: the Distribution base (batch_shape / event_shape, sample / rsample with
-- a sample_shape, log_prob, entropy, mean / mode / stddev / variance, cdf / icdf, expand,
-- support, arg_constraints checked unless validate_args=false), Normal, Uniform, Bernoulli,
-- Categorical, kl_divergence with register_kl; torch.multinomial and torch.bernoulli. As
-- PyTorch's: parameters broadcast, sample_shape goes first, rsample keeps the gradient
-- (reparameterised), sample does not. More distributions: torch_distributions_*.lua.
--   local d = torch.distributions.Normal(mu, sigma)
--   local z = d:rsample()                     -- mu + sigma * eps
--   local kl = torch.distributions.kl_divergence(d, torch.distributions.Normal(0, 1)):sum()
-- Difference from PyTorch: values given to log_prob / cdf are checked against the support only
-- with validate_args=true (or set_default_validate_args(true)); parameters are checked by default.
local torch = require "torch"
local U = require "nn_util"
local C = require "torch_distributions_constraints"

local D = { constraints = C }
torch.distributions = D

local LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)

-- ---- helpers, shared with torch_distributions_*.lua through D._h ----

local H = {}
D._h = H

local function as_tensor(v, like)
  if torch.is_tensor(v) then return v end
  if like then return torch.full({}, v, { dtype = like.dtype, device = like.device }) end
  return torch.tensor(v + 0.0)
end
H.as_tensor = as_tensor

-- the arguments (tensors or numbers; numbers take the first tensor's dtype and device)
-- broadcast to one shape, as PyTorch's broadcast_all
local function broadcast_all(...)
  local n, like = select("#", ...), nil
  local args = { ... }
  for i = 1, n do if torch.is_tensor(args[i]) then like = args[i]; break end end
  for i = 1, n do args[i] = as_tensor(args[i], like) end
  local out = { torch.broadcast_tensors(table.unpack(args, 1, n)) }
  return table.unpack(out, 1, n)
end
H.broadcast_all = broadcast_all

-- a shape (torch.Size, Lua list or number) as a Lua list
local function list(s)
  if s == nil then return {} end
  if type(s) == "number" then return { s } end
  if torch.is_tensor(s) then s = s:size() end
  if getmetatable(s) ~= nil then return s:totable() end
  return { table.unpack(s) }
end
H.list = list

-- the Lua list sample_shape ++ batch ++ event
local function shape_of(sample_shape, batch, event)
  local s = list(sample_shape)
  for _, part in ipairs({ batch or {}, event or {} }) do
    for _, v in ipairs(list(part)) do s[#s + 1] = v end
  end
  return s
end
H.shape_of = shape_of

-- the first n / all but the last n entries of a shape, as Lua lists
function H.head(s, n) s = list(s); return { table.unpack(s, 1, #s - n) } end
function H.tail(s, n) s = list(s); return { table.unpack(s, #s - n + 1, #s) } end

function H.opts(t) return { dtype = t.dtype, device = t.device } end
function H.full_like(t, v) return torch.full(t:size(), v, H.opts(t)) end
function H.sum_rightmost(t, n)
  for _ = 1, n do t = t:sum(-1) end
  return t
end
function H.not_implemented(fmt, ...) U.errorf("NotImplementedError: " .. fmt, ...) end

-- ---- Distribution ----

local Distribution = { __name = "torch.distributions.Distribution", _name = "Distribution", _props = {}, _params = {},
  arg_constraints = {}, _param_event_dims = {}, has_rsample = false, has_enumerate_support = false }
D.Distribution = Distribution
local default_validate = nil -- nil: parameters checked, values not; true: both; false: neither

function Distribution.set_default_validate_args(v) default_validate = v and true or false end

local function make_index(cls)
  return function(self, k)
    local v = cls[k]
    if v ~= nil then return v end
    local get = cls._props[k]
    if get then return get(self) end
  end
end

-- a subclass: methods from cls, then parent; properties (mean, support, ...) in _props
local function class(name, parent)
  parent = parent or Distribution
  local cls = { __name = "torch.distributions." .. name, _name = name, _parent = parent,
    _props = setmetatable({}, { __index = parent._props }) }
  cls.__index = make_index(cls)
  cls.__tostring = function(self) return name .. "(" .. (self:_repr() or "") .. ")" end
  setmetatable(cls, { __index = parent, __call = function(c, ...) return c.new(...) end })
  D[name] = cls
  return cls
end
H.class = class

-- shapes and checks every constructor ends with: validate_args nil/true/false as PyTorch's
function Distribution:_init(batch_shape, event_shape, validate_args, checked)
  self.batch_shape = torch.Size(list(batch_shape))
  self.event_shape = torch.Size(list(event_shape))
  if validate_args == nil then validate_args = default_validate end
  self._validate_args = validate_args ~= false
  self._validate_value = validate_args == true
  if self._validate_args then
    for _, name in ipairs(checked or self._params) do
      local c, v = self.arg_constraints[name], rawget(self, name)
      if c and torch.is_tensor(v) and not c.is_dependent and c:check(v):logical_not():any():item() then
        U.errorf("Expected parameter %s to satisfy the constraint %s, but found invalid values:\n%s", name, tostring(c), tostring(v))
      end
    end
  end
  return self
end

function Distribution:_repr()
  local parts = {}
  for _, name in ipairs(self._repr_params or self._params) do
    local t = rawget(self, name)
    if torch.is_tensor(t) then parts[#parts + 1] = name .. ": " .. (t:numel() == 1 and tostring(t) or tostring(t:size())) end
  end
  return table.concat(parts, ", ")
end

function Distribution:_extended_shape(sample_shape) return shape_of(sample_shape, self.batch_shape, self.event_shape) end

function Distribution:rsample()
  H.not_implemented("%s does not implement rsample (has_rsample is False)", self._name)
end
function Distribution:sample(sample_shape)
  if not self.has_rsample then H.not_implemented("%s does not implement sample", self._name) end
  return torch.no_grad(function() return self:rsample(sample_shape) end)
end
function Distribution:sample_n(n) return self:sample({ n }) end
for _, m in ipairs({ "log_prob", "cdf", "icdf", "entropy", "enumerate_support" }) do
  Distribution[m] = function(self) H.not_implemented("%s does not implement %s", self._name, m) end
end
function Distribution:perplexity() return self:entropy():exp() end
for _, m in ipairs({ "mean", "mode", "variance" }) do
  Distribution._props[m] = function(self) H.not_implemented("%s does not implement %s", self._name, m) end
end
function Distribution._props.stddev(self) return self.variance:sqrt() end
function Distribution._props.support(self) return self._support end

-- value checked against the event shape and, with validate_args=true, the support
function Distribution:_validate_sample(value)
  if not self._validate_value then return end
  if not torch.is_tensor(value) then U.error("ValueError: The value argument to log_prob must be a Tensor") end
  local ev, vs = list(self.event_shape), list(value)
  for i = 1, #ev do
    if vs[#vs - #ev + i] ~= ev[i] then
      U.errorf("ValueError: The right-most size of value must match event_shape: %s vs %s.", tostring(value:size()), tostring(self.event_shape))
    end
  end
  local ok = pcall(torch.broadcast_shapes, value:size(), torch.Size(shape_of(nil, self.batch_shape, self.event_shape)))
  if not ok then
    U.errorf("ValueError: Value is not broadcastable with batch_shape+event_shape: %s vs %s.", tostring(value:size()),
      tostring(torch.Size(shape_of(nil, self.batch_shape, self.event_shape))))
  end
  local support = self.support
  if support and not support.is_dependent and support:check(value):logical_not():any():item() then
    U.errorf("ValueError: Expected value argument (Tensor of shape %s) to be within the support (%s) of the distribution %s, but found invalid values:\n%s",
      U.pystr(vs), tostring(support), tostring(self), tostring(value))
  end
end

-- a parameter expanded to batch_shape ++ its own event dims
function H.expand_param(t, batch_shape, event_dims)
  return t:expand(shape_of(nil, batch_shape, H.tail(t, event_dims or 0)))
end

-- the same distribution with its parameters expanded to batch_shape (a new object)
function Distribution:expand(batch_shape)
  local cls = getmetatable(self)
  local args = { validate_args = false }
  for _, name in ipairs(self._given or self._params) do
    local v = rawget(self, name)
    args[name] = torch.is_tensor(v) and H.expand_param(v, batch_shape, self._param_event_dims[name]) or v
  end
  return cls.new(args)
end

-- ---- ExponentialFamily: p(x) = h(x) exp(<eta, t(x)> - A(eta)) ----

-- Subclasses give _natural_params (a list of tensors eta), _log_normalizer(eta...) -> A and
-- _mean_carrier_measure (E[log h(x)]); entropy and the KL between two of one class follow from
-- the Bregman divergence of A, with the gradient of A by autograd.
local EF = class("ExponentialFamily")
D.ExponentialFamily = EF
function EF._props._mean_carrier_measure(self) H.not_implemented("%s does not implement _mean_carrier_measure", self._name) end
function EF._props._natural_params(self) H.not_implemented("%s does not implement _natural_params", self._name) end
function EF:_log_normalizer() H.not_implemented("%s does not implement _log_normalizer", self._name) end
-- A at eta held as fresh leaves, and dA/deta (a graph, so the result stays differentiable in eta)
function H.log_normalizer_grad(d)
  local eta = {}
  for i, e in ipairs(d._natural_params) do eta[i] = e:detach():requires_grad_() end
  return torch.enable_grad(function()
    local A = d:_log_normalizer(table.unpack(eta))
    return A, eta, torch.autograd.grad(A:sum(), eta, { create_graph = true })
  end)
end
function EF:entropy()
  local carrier = self._mean_carrier_measure
  local A, eta, g = H.log_normalizer_grad(self)
  local out = A - carrier
  for i, e in ipairs(eta) do
    local t = e * g[i]
    out = out - t:reshape(H.shape_of(self.batch_shape, { -1 })):sum(-1)
  end
  return out
end

-- ---- Normal ----

local Normal = class("Normal", EF)
Normal.arg_constraints = { loc = C.real, scale = C.positive }
Normal._params = { "loc", "scale" }
Normal._support = C.real
Normal.has_rsample = true

function Normal.new(...)
  local o = U.parse("Normal", { { "loc", U.REQUIRED }, { "scale", U.REQUIRED }, { "validate_args" } }, ...)
  local loc, scale = broadcast_all(o.loc, o.scale)
  local self = setmetatable({ loc = loc, scale = scale }, Normal)
  self.mean, self.mode, self.stddev, self.variance = loc, loc, scale, scale * scale
  return self:_init(loc:size(), {}, o.validate_args)
end

function Normal:rsample(sample_shape)
  local eps = torch.randn(self:_extended_shape(sample_shape), H.opts(self.loc))
  return self.loc + eps * self.scale
end
function Normal:log_prob(value)
  self:_validate_sample(value)
  return -((value - self.loc) ^ 2) / (self.variance * 2) - self.scale:log() - LOG_SQRT_2PI
end
function Normal:entropy() return self.scale:log() + 0.5 + LOG_SQRT_2PI end
function Normal._props._natural_params(self) return { self.loc / self.variance, -0.5 / self.variance } end
function Normal:_log_normalizer(x, y) return -(x * x) / (y * 4) + (-math.pi / y):log() * 0.5 end
function Normal._props._mean_carrier_measure() return 0 end
function Normal:cdf(value)
  self:_validate_sample(value)
  return (((value - self.loc) / (self.scale * math.sqrt(2))):erf() + 1) * 0.5
end
function Normal:icdf(value) return self.loc + self.scale * (value * 2 - 1):erfinv() * math.sqrt(2) end

-- ---- Uniform ----

local Uniform = class("Uniform")
Uniform.arg_constraints = { low = C.dependent, high = C.dependent }
Uniform._params = { "low", "high" }
Uniform.has_rsample = true

function Uniform.new(...)
  local o = U.parse("Uniform", { { "low", U.REQUIRED }, { "high", U.REQUIRED }, { "validate_args" } }, ...)
  local low, high = broadcast_all(o.low, o.high)
  if o.validate_args ~= false and default_validate ~= false and high:le(low):any():item() then
    U.error("Expected parameter low to be smaller than high")
  end
  local self = setmetatable({ low = low, high = high }, Uniform)
  self.mean, self.stddev = (low + high) / 2, (high - low) / math.sqrt(12)
  self.variance = self.stddev * self.stddev
  return self:_init(low:size(), {}, o.validate_args)
end

function Uniform._props.support(self) return C.interval(self.low, self.high) end
function Uniform._props.mode(self) return H.full_like(self.low, 0 / 0) end
function Uniform:rsample(sample_shape)
  local u = torch.rand(self:_extended_shape(sample_shape), H.opts(self.low))
  return self.low + u * (self.high - self.low)
end
function Uniform:log_prob(value)
  self:_validate_sample(value)
  local inside = value:ge(self.low):logical_and(value:lt(self.high))
  return torch.where(inside, -(self.high - self.low):log(), torch.full({}, -math.huge, H.opts(self.low)))
end
function Uniform:entropy() return (self.high - self.low):log() end
function Uniform:cdf(value)
  self:_validate_sample(value)
  return ((value - self.low) / (self.high - self.low)):clamp(0, 1)
end
function Uniform:icdf(value) return value * (self.high - self.low) + self.low end

-- ---- Bernoulli and Categorical: probs or logits ----

-- the one of probs / logits given (as a tensor), its name
function H.probs_or_logits(o)
  if (o.probs == nil) == (o.logits == nil) then U.error("Either `probs` or `logits` must be specified, but not both.") end
  if o.probs ~= nil then return as_tensor(o.probs), "probs" end
  return as_tensor(o.logits), "logits"
end

local Bernoulli = class("Bernoulli", EF)
Bernoulli.arg_constraints = { probs = C.unit_interval, logits = C.real }
Bernoulli._params = { "probs", "logits" }
Bernoulli._repr_params = { "probs" }
Bernoulli._support = C.boolean
Bernoulli.has_enumerate_support = true

function Bernoulli.new(...)
  local o = U.parse("Bernoulli", { { "probs" }, { "logits" }, { "validate_args" } }, ...)
  local t, given = H.probs_or_logits(o)
  local p = given == "probs" and t or t:sigmoid()
  local l = given == "logits" and t or (p / (1 - p)):log()
  local self = setmetatable({ probs = p, logits = l, _given = { given } }, Bernoulli)
  self.mean, self.variance = p, p * (1 - p)
  self.stddev = self.variance:sqrt()
  return self:_init(p:size(), {}, o.validate_args, { given })
end

function Bernoulli._props.mode(self)
  local m = self.probs:ge(0.5):to(self.probs.dtype)
  return torch.where(self.probs:eq(0.5), H.full_like(m, 0 / 0), m)
end
function Bernoulli:sample(sample_shape)
  return torch.no_grad(function()
    local u = torch.rand(self:_extended_shape(sample_shape), H.opts(self.probs))
    return u:lt(self.probs):to(self.probs.dtype)
  end)
end
function Bernoulli:log_prob(value)
  self:_validate_sample(value)
  local l, v = torch.broadcast_tensors(self.logits, value)
  return -torch.nn.functional.binary_cross_entropy_with_logits(l, v, { reduction = "none" })
end
function Bernoulli:entropy()
  return torch.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, { reduction = "none" })
end
-- the values of the support, first dim over them: [2, batch...] (expand=true) or [2, 1, ...]
function H.enumerate(self, n, expand)
  local shape = { n }
  for _ = 1, self.batch_shape:dim() do shape[#shape + 1] = 1 end
  local v = torch.arange(n, H.opts(self.probs)):reshape(shape)
  if expand == false then return v end
  return v:expand(shape_of({ n }, self.batch_shape))
end
function Bernoulli:enumerate_support(expand) return H.enumerate(self, 2, expand) end
function Bernoulli._props._natural_params(self) return { self.logits } end
function Bernoulli:_log_normalizer(x) return x:exp():log1p() end
function Bernoulli._props._mean_carrier_measure() return 0 end

local Categorical = class("Categorical")
Categorical.arg_constraints = { probs = C.simplex, logits = C.real_vector }
Categorical._params = { "probs", "logits" }
Categorical._repr_params = { "probs" }
Categorical._param_event_dims = { probs = 1, logits = 1 }
Categorical.has_enumerate_support = true

function Categorical.new(...)
  local o = U.parse("Categorical", { { "probs" }, { "logits" }, { "validate_args" } }, ...)
  local t, given = H.probs_or_logits(o)
  if t:dim() < 1 then U.errorf("ValueError: `%s` parameter must be at least one-dimensional.", given) end
  local p = given == "probs" and t / t:sum(-1, true) or nil
  local l = p and p:log() or t - t:logsumexp(-1, true)
  p = p or l:exp()
  local self = setmetatable({ probs = p, logits = l, num_events = p:size(-1), _given = { given } }, Categorical)
  return self:_init(H.head(p, 1), {}, o.validate_args, { given })
end

function Categorical._props.support(self) return C.integer_interval(0, self.num_events - 1) end
function Categorical._props.mean(self) return torch.full(list(self.batch_shape), 0 / 0, H.opts(self.probs)) end
Categorical._props.variance = Categorical._props.mean
function Categorical._props.mode(self) return self.probs:argmax(-1) end
function Categorical:sample(sample_shape)
  return torch.no_grad(function()
    local n = 1
    for _, v in ipairs(list(sample_shape)) do n = n * v end
    local flat = self.probs:reshape(-1, self.num_events)
    local draws = torch.multinomial(flat, n, { replacement = true }) -- [batch, n]
    return draws:t():reshape(shape_of(sample_shape, self.batch_shape))
  end)
end
function Categorical:log_prob(value)
  self:_validate_sample(value)
  local v = value:to(torch.int64)
  local l = self.logits
  if v:dim() > 0 or l:dim() > 1 then
    local shape = list((v:unsqueeze(-1) + l:narrow(-1, 0, 1)):size()) -- broadcast value against the batch
    shape[#shape] = self.num_events
    l = l:expand(shape)
    v = v:expand(list((v + l:select(-1, 0)):size()))
  end
  return l:gather(-1, v:unsqueeze(-1)):squeeze(-1)
end
function Categorical:entropy()
  local pl = torch.where(self.probs:eq(0), torch.zeros({}, H.opts(self.probs)), self.probs * self.logits)
  return -pl:sum(-1)
end
function Categorical:enumerate_support(expand) return H.enumerate(self, self.num_events, expand):to(torch.int64) end

-- ---- kl_divergence ----

local KL = {}

-- register_kl(P, Q, fn): kl_divergence(p, q) calls fn(p, q) for p a P and q a Q (or subclasses;
-- the closest registered pair wins). Returns fn.
function D.register_kl(P, Q, fn)
  if type(P) ~= "table" or type(Q) ~= "table" or type(fn) ~= "function" then
    U.error("register_kl(type_p, type_q, fn): expected two distribution classes and a function")
  end
  KL[P] = KL[P] or {}
  KL[P][Q] = fn
  return fn
end

function D.kl_divergence(p, q)
  local best, bd
  local cp, dp = getmetatable(p), 0
  while cp do
    local cq, dq = getmetatable(q), 0
    while cq do
      local f = KL[cp] and KL[cp][cq]
      if f and (not bd or dp + dq < bd) then best, bd = f, dp + dq end
      cq, dq = cq._parent, dq + 1
    end
    cp, dp = cp._parent, dp + 1
  end
  if not best then
    H.not_implemented("No KL(p || q) is implemented for p type %s and q type %s",
      (getmetatable(p) or {})._name or type(p), (getmetatable(q) or {})._name or type(q))
  end
  return best(p, q)
end
D.kl = { kl_divergence = D.kl_divergence, register_kl = D.register_kl }

local function inf_where(mask, t) return torch.where(mask, torch.full({}, math.huge, H.opts(t)), t) end
H.inf_where = inf_where

D.register_kl(Normal, Normal, function(p, q)
  local r = p.scale / q.scale
  return (r * r + ((p.loc - q.loc) / q.scale) ^ 2 - 1) * 0.5 - r:log()
end)
D.register_kl(Categorical, Categorical, function(p, q)
  local t = p.probs * (p.logits - q.logits)
  t = inf_where(q.probs:eq(0):expand(t:size()), t)
  return torch.where(p.probs:eq(0):expand(t:size()), torch.zeros({}, H.opts(t)), t):sum(-1)
end)
D.register_kl(Bernoulli, Bernoulli, function(p, q)
  local sp = torch.nn.functional.softplus
  local t1 = p.probs * (sp(-q.logits) - sp(-p.logits))
  local zero = torch.zeros({}, H.opts(t1))
  t1 = torch.where(p.probs:eq(0), zero, inf_where(q.probs:eq(0), t1))
  local t2 = (1 - p.probs) * (sp(q.logits) - sp(p.logits))
  t2 = torch.where(p.probs:eq(1), zero, inf_where(q.probs:eq(1), t2))
  return t1 + t2
end)
D.register_kl(Uniform, Uniform, function(p, q)
  local out = ((q.high - q.low) / (p.high - p.low)):log()
  return inf_where(q.low:gt(p.low):logical_or(q.high:lt(p.high)), out)
end)

-- ---- sampling functions ----

-- torch.multinomial(probs [.., K], n, {replacement=false}): n indices per row, drawn by the
-- Gumbel-max trick (the top n of log p + Gumbel noise without replacement, the argmax of n
-- independent draws with it)
function torch.multinomial(input, num_samples, ...)
  local o = U.parse("multinomial", { { "replacement", false }, { "generator" } }, ...)
  local n = U.check_int("multinomial", "num_samples", num_samples, 1)
  local K = input:size(-1)
  if not o.replacement and n > K then U.error("cannot sample n_sample > prob_dist.size(-1) samples without replacement") end
  if input:lt(0):any():item() then U.error("probability tensor contains either `inf`, `nan` or element < 0") end
  return torch.no_grad(function()
    local logp = input:to(torch.float64):log()
    if o.replacement then
      local shape = list(logp:size())
      table.insert(shape, #shape, n)
      local g = -(-torch.rand(shape, { dtype = torch.float64, device = input.device }):clamp(1e-300):log()):log()
      return (logp:unsqueeze(-2) + g):argmax(-1)
    end
    if input:gt(0):sum(-1):lt(n):any():item() then
      U.error("invalid multinomial distribution (with replacement=False, not enough non-negative category to sample)")
    end
    local g = -(-torch.rand(logp:size(), { dtype = torch.float64, device = input.device }):clamp(1e-300):log()):log()
    local _, idx = (logp + g):topk(n, -1)
    return idx
  end)
end

torch.bernoulli = U.checked("bernoulli", { "input:Tensor" }, function(input, p)
  return torch.no_grad(function()
    local probs = p ~= nil and torch.full(input:size(), p, H.opts(input)) or input
    return torch.rand_like(probs):lt(probs):to(probs.dtype)
  end)
end)
torch.Tensor.bernoulli = torch.bernoulli
torch.Tensor.multinomial = torch.multinomial

return D
