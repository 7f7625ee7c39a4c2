-- torch.distributions, discrete ones: Poisson, Binomial, Geometric, OneHotCategorical, with
-- PyTorch's parameterisations and their kl_divergence pairs. Draws are vectorised with tensor
-- ops and computed in float64: Poisson by inversion for rate < 10 and by Hormann's transformed
-- rejection (PTRS) above; Binomial by inversion for n * min(p, 1 - p) < 10 and by BTRS above
-- (the acceptance test with the exact log-pmf); only the rejected elements are drawn again.
local torch = require "torch"
local U = require "nn_util"
local D = require "torch_distributions"
require "torch_distributions_continuous" -- H.rejection
local C = D.constraints
local H = D._h
local class = H.class
local F64 = torch.float64

local function o64(t) return { dtype = F64, device = t.device } end

-- k ~ the discrete law whose pmf starts at p0 and steps p_{i+1} = p_i * step(i), by inversion:
-- the count of partial sums below a uniform (at most cap steps; done elements stop counting)
local function inversion(p0, step, cap, limit)
  local u = torch.rand(p0:numel(), o64(p0))
  local p, F, k = p0, p0, torch.zeros_like(p0)
  for i = 0, cap do
    local more = u:gt(F)
    if limit then more = more:logical_and(k:lt(limit)) end
    if not more:any():item() then break end
    k = k + more:to(F64)
    p = p * step(i)
    F = F + p
  end
  return k
end

-- out at the elements where mask holds, replaced by f(those elements' indices)
local function where_idx(out, mask, f)
  local idx = mask:nonzero():reshape(-1)
  if idx:numel() > 0 then out:index_copy_(0, idx, f(idx)) end
  return out
end

-- Poisson(rate) draws, rate's shape and dtype
function H.poisson(rate)
  return torch.no_grad(function()
    local lam = rate:to(F64):reshape(-1)
    local small = lam:clamp(0, 10)
    local out = inversion((-small):exp(), function(i) return small / (i + 1) end, 200)
    out = where_idx(out, lam:ge(10), function(sel)
      local l = lam:index_select(0, sel)
      local slam, loglam = l:sqrt(), l:log()
      local b = slam * 2.53 + 0.931
      local a = b * 0.02483 - 0.059
      local invalpha = (b - 3.4):reciprocal() * 1.1328 + 1.1239
      local vr = 0.9277 - (b - 2):reciprocal() * 3.6224
      return H.rejection(sel:numel(), o64(l), function(idx)
        local L, A, B = l:index_select(0, idx), a:index_select(0, idx), b:index_select(0, idx)
        local u = torch.rand(idx:numel(), o64(l)) - 0.5
        local v = torch.rand(idx:numel(), o64(l))
        local us = 0.5 - u:abs()
        local k = ((A * 2 / us + B) * u + L + 0.43):floor()
        local fast = us:ge(0.07):logical_and(v:le(vr:index_select(0, idx)))
        local bad = k:lt(0):logical_or(us:lt(0.013):logical_and(v:gt(us)))
        local lhs = v:log() + invalpha:index_select(0, idx):log() - (A / (us * us) + B):log()
        local rhs = -L + k * loglam:index_select(0, idx) - (k:clamp(0) + 1):lgamma()
        return fast:logical_or(bad:logical_not():logical_and(lhs:le(rhs))), k
      end)
    end)
    return out:to(rate.dtype):reshape(H.list(rate))
  end)
end

-- Binomial(n, p) draws, of p's shape and dtype (n and p of one shape)
function H.binomial(count, prob)
  return torch.no_grad(function()
    local n, p = count:to(F64):reshape(-1), prob:to(F64):reshape(-1)
    local flip = p:gt(0.5)
    local q = torch.where(flip, 1 - p, p)
    local r = q / (1 - q)
    local nq = n * q
    local out = inversion((n * (-q):log1p()):exp(), function(i) return (n - i) / (i + 1) * r end,
      math.min(n:max():item(), 400), n)
    out = where_idx(out, nq:ge(10), function(sel)
      local N, Q, R = n:index_select(0, sel), q:index_select(0, sel), r:index_select(0, sel)
      local spq = (N * Q * (1 - Q)):sqrt()
      local b = spq * 2.53 + 1.15
      local a = b * 0.0248 + Q * 0.01 - 0.0873
      local c = N * Q + 0.5
      local vr = 0.92 - b:reciprocal() * 4.2
      local alpha = ((b:reciprocal() * 5.1) + 2.83) * spq
      local m = ((N + 1) * Q):floor()
      local hm = (m + 1):lgamma() + (N - m + 1):lgamma()
      return H.rejection(sel:numel(), o64(N), function(idx)
        local function at(t) return t:index_select(0, idx) end
        local nn_, A, B = at(N), at(a), at(b)
        local u = torch.rand(idx:numel(), o64(N)) - 0.5
        local v = torch.rand(idx:numel(), o64(N))
        local us = 0.5 - u:abs()
        local k = ((A * 2 / us + B) * u + at(c)):floor()
        local valid = k:ge(0):logical_and(k:le(nn_))
        local fast = us:ge(0.07):logical_and(v:le(at(vr)))
        local kc = torch.minimum(k:clamp(0), nn_)
        local lhs = (v * at(alpha) / (A / (us * us) + B)):log()
        local rhs = at(hm) - (kc + 1):lgamma() - (nn_ - kc + 1):lgamma() + (kc - at(m)) * at(R):log()
        return valid:logical_and(fast:logical_or(lhs:le(rhs))), k
      end)
    end)
    out = torch.where(flip, n - out, out)
    return out:to(prob.dtype):reshape(H.list(prob))
  end)
end

-- ---- Poisson ----

local Poisson = class("Poisson", D.ExponentialFamily)
Poisson.arg_constraints = { rate = C.nonnegative }
Poisson._params = { "rate" }
Poisson._support = C.nonnegative_integer

function Poisson.new(...)
  local o = U.parse("Poisson", { { "rate", U.REQUIRED }, { "validate_args" } }, ...)
  local rate = H.as_tensor(o.rate)
  return setmetatable({ rate = rate }, Poisson):_init(rate:size(), {}, o.validate_args)
end
function Poisson._props.mean(self) return self.rate end
function Poisson._props.mode(self) return self.rate:floor() end
Poisson._props.variance = Poisson._props.mean
function Poisson:sample(sample_shape) return H.poisson(self.rate:expand(self:_extended_shape(sample_shape))) end
function Poisson:log_prob(value)
  self:_validate_sample(value)
  return torch.xlogy(value, self.rate) - self.rate - (value + 1):lgamma()
end

Poisson._props._natural_params = function(self) return { self.rate:log() } end
function Poisson:_log_normalizer(x) return x:exp() end

-- ---- Binomial ----

-- probs and logits from the one given (binary)
local function binary_params(o)
  local t, given = H.probs_or_logits(o)
  if given == "probs" then return t, t:log() - (-t):log1p(), given end
  return t:sigmoid(), t, given
end

local Binomial = class("Binomial")
Binomial.arg_constraints = { total_count = C.nonnegative_integer, probs = C.unit_interval, logits = C.real }
Binomial._params = { "total_count", "probs", "logits" }
Binomial._repr_params = { "total_count", "probs" }
Binomial.has_enumerate_support = true

function Binomial.new(...)
  local o = U.parse("Binomial", { { "total_count", 1 }, { "probs" }, { "logits" }, { "validate_args" } }, ...)
  local p, l, given = binary_params(o)
  local n
  n, p, l = H.broadcast_all(o.total_count, p, l)
  n = n:to(p.dtype)
  local self = setmetatable({ total_count = n, probs = p, logits = l, _given = { "total_count", given } }, Binomial)
  return self:_init(p:size(), {}, o.validate_args, { "total_count", given })
end
function Binomial._props.support(self) return C.integer_interval(0, self.total_count) end
function Binomial._props.mean(self) return self.total_count * self.probs end
function Binomial._props.mode(self) return torch.minimum(((self.total_count + 1) * self.probs):floor(), self.total_count) end
function Binomial._props.variance(self) return self.total_count * self.probs * (1 - self.probs) end
function Binomial:sample(sample_shape)
  local shape = self:_extended_shape(sample_shape)
  return H.binomial(self.total_count:expand(shape), self.probs:expand(shape))
end
function Binomial:log_prob(value)
  self:_validate_sample(value)
  local n, l = self.total_count, self.logits
  local lfn, lfk, lfnk = (n + 1):lgamma(), (value + 1):lgamma(), (n - value + 1):lgamma()
  local clamp0 = (l:clamp(0) + l - l:clamp(nil, 0)) / 2 -- max(l, 0), with a gradient of 1/2 at 0
  local norm = n * clamp0 + n * (-l:abs()):exp():log1p() - lfn
  return value * l - lfk - lfnk - norm
end
function Binomial:enumerate_support(expand)
  local n = self.total_count:max():item()
  if not self.total_count:eq(n):all():item() then
    U.error("NotImplementedError: Inhomogeneous total count not supported by `enumerate_support`.")
  end
  return H.enumerate(self, math.floor(n) + 1, expand)
end
function Binomial:entropy()
  local v = self:enumerate_support(false)
  local lp = self:log_prob(v)
  return -(lp:exp() * lp):sum(0)
end

-- ---- Geometric ----

local Geometric = class("Geometric")
Geometric.arg_constraints = { probs = C.unit_interval, logits = C.real }
Geometric._params = { "probs", "logits" }
Geometric._repr_params = { "probs" }
Geometric._support = C.nonnegative_integer

function Geometric.new(...)
  local o = U.parse("Geometric", { { "probs" }, { "logits" }, { "validate_args" } }, ...)
  local p, l, given = binary_params(o)
  local self = setmetatable({ probs = p, logits = l, _given = { given } }, Geometric)
  self:_init(p:size(), {}, o.validate_args, { given })
  if self._validate_args and given == "probs" and p:eq(0):any():item() then
    U.errorf("Expected parameter probs to satisfy the constraint Interval(lower_bound=0.0, upper_bound=1.0) with probs > 0, but found invalid values:\n%s", tostring(p))
  end
  return self
end
function Geometric._props.mean(self) return self.probs:reciprocal() - 1 end
function Geometric._props.mode(self) return torch.zeros_like(self.probs) end
function Geometric._props.variance(self) return (self.probs:reciprocal() - 1) / self.probs end
function Geometric:sample(sample_shape)
  return torch.no_grad(function()
    local u = torch.rand(self:_extended_shape(sample_shape), H.opts(self.probs)):clamp(torch.finfo(self.probs.dtype).tiny)
    return (u:log() / (-self.probs):log1p()):floor()
  end)
end
function Geometric:log_prob(value)
  self:_validate_sample(value)
  local p = self.probs
  local pz = torch.where(p:eq(1):logical_and(value:eq(0)), torch.zeros({}, H.opts(p)), p)
  return value * (-pz):log1p() + p:log()
end
function Geometric:entropy()
  return torch.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, { reduction = "none" }) / self.probs
end

-- ---- OneHotCategorical ----

local OneHotCategorical = class("OneHotCategorical")
OneHotCategorical.arg_constraints = { probs = C.simplex, logits = C.real_vector }
OneHotCategorical._params = { "probs", "logits" }
OneHotCategorical._repr_params = { "probs" }
OneHotCategorical._param_event_dims = { probs = 1, logits = 1 }
OneHotCategorical._support = C.one_hot
OneHotCategorical.has_enumerate_support = true

function OneHotCategorical.new(...)
  local o = U.parse("OneHotCategorical", { { "probs" }, { "logits" }, { "validate_args" } }, ...)
  local cat = D.Categorical({ probs = o.probs, logits = o.logits, validate_args = o.validate_args })
  local self = setmetatable({ _categorical = cat, probs = cat.probs, logits = cat.logits, _given = cat._given }, OneHotCategorical)
  return self:_init(cat.batch_shape, { cat.num_events }, false)
end
function OneHotCategorical._props.mean(self) return self.probs end
function OneHotCategorical._props.mode(self)
  return torch.nn.functional.one_hot(self.probs:argmax(-1), self.probs:size(-1)):to(self.probs.dtype)
end
function OneHotCategorical._props.variance(self) return self.probs * (1 - self.probs) end
function OneHotCategorical:sample(sample_shape)
  local k = self._categorical:sample(sample_shape)
  return torch.nn.functional.one_hot(k, self.probs:size(-1)):to(self.probs.dtype)
end
function OneHotCategorical:log_prob(value)
  self:_validate_sample(value)
  return self._categorical:log_prob(value:argmax(-1))
end
function OneHotCategorical:entropy() return self._categorical:entropy() end
function OneHotCategorical:enumerate_support(expand)
  local k = self.probs:size(-1)
  local shape = { k }
  for _ = 1, self.batch_shape:dim() do shape[#shape + 1] = 1 end
  shape[#shape + 1] = k
  local v = torch.eye(k, H.opts(self.probs)):reshape(shape)
  if expand == false then return v end
  return v:expand(H.shape_of({ k }, self.batch_shape, { k }))
end

-- ---- kl_divergence pairs ----

D.register_kl(Poisson, Poisson, function(p, q) return p.rate * (p.rate:log() - q.rate:log()) - (p.rate - q.rate) end)
D.register_kl(Geometric, Geometric, function(p, q) return -p:entropy() - (-q.probs):log1p() / p.probs - q.logits end)
D.register_kl(OneHotCategorical, OneHotCategorical, function(p, q) return D.kl_divergence(p._categorical, q._categorical) end)
D.register_kl(Binomial, Binomial, function(p, q)
  if p.total_count:lt(q.total_count):any():item() then
    U.error("NotImplementedError: KL between Binomials where q.total_count > p.total_count is not implemented")
  end
  local kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs):log1p() - (-q.probs):log1p())
  return H.inf_where(p.total_count:gt(q.total_count), kl)
end)

return D
