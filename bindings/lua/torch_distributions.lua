-- torch.distributions: Normal, Uniform, Bernoulli, Categorical, with sample / rsample,
-- log_prob, entropy, mean / stddev / variance, and kl_divergence between two of a kind;
-- torch.multinomial and torch.bernoulli. As PyTorch's: parameters broadcast, sample_shape goes
-- first, rsample keeps the gradient (reparameterised), sample does not.
--   local d = torch.distributions.Normal(mu, sigma)
--   local z = d:rsample()                     -- mu + sigma * eps
--   local kl = torch.distributions.kl_divergence(d, torch.distributions.Normal(0, 1)):sum()
local torch = require "torch"
local U = require "nn_util"

local D = {}
torch.distributions = D

local LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)

local function as_tensor(v, like)
  if torch.is_tensor(v) then return v end
  if like then return torch.full({}, v, { dtype = like.dtype, device = like.device }) end
  return torch.tensor(v + 0.0)
end

-- the parameters broadcast to one shape
local function broadcast(a, b)
  a, b = as_tensor(a, torch.is_tensor(b) and b or nil), as_tensor(b, torch.is_tensor(a) and a or nil)
  local s = (a + b):size()
  return a:expand(s), b:expand(s)
end

local function shape_of(sample_shape, batch)
  local s = {}
  if sample_shape ~= nil then
    for i = 1, #sample_shape do s[#s + 1] = type(sample_shape) == "table" and sample_shape[i] or sample_shape[i - 1] end
  end
  for i = 0, #batch - 1 do s[#s + 1] = batch[i] end
  return s
end

local function class(name)
  local cls = { __name = "torch.distributions." .. name }
  cls.__index = cls
  cls.__tostring = function(self) return name .. "(" .. (self:_repr() or "") .. ")" end
  setmetatable(cls, { __call = function(c, ...) return c.new(...) end })
  D[name] = cls
  return cls
end

local function no_grad(f) return torch.no_grad(f) end

-- a parameter as PyTorch prints it in a distribution: its value when it has one element, else its size
local function param_str(name, t) return name .. ": " .. (t:numel() == 1 and tostring(t) or tostring(t:size())) end

-- ---- Normal ----

local Normal = class("Normal")

function Normal.new(...)
  local o = U.parse("Normal", { { "loc", U.REQUIRED }, { "scale", U.REQUIRED }, { "validate_args" } }, ...)
  local loc, scale = broadcast(o.loc, o.scale)
  if o.validate_args ~= false and scale:le(0):any():item() then
    U.error("Expected parameter scale to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values")
  end
  local self = setmetatable({ loc = loc, scale = scale, batch_shape = loc:size() }, Normal)
  self.mean, self.stddev, self.variance = loc, scale, scale * scale
  return self
end

function Normal:_repr() return param_str("loc", self.loc) .. ", " .. param_str("scale", self.scale) end
function Normal:rsample(sample_shape)
  local eps = torch.randn(shape_of(sample_shape, self.batch_shape), { dtype = self.loc.dtype, device = self.loc.device })
  return self.loc + eps * self.scale
end
function Normal:sample(sample_shape) return no_grad(function() return self:rsample(sample_shape) end) end
function Normal:log_prob(value)
  return -((value - self.loc) ^ 2) / (self.variance * 2) - self.scale:log() - LOG_SQRT_2PI
end
function Normal:entropy() return self.scale:log() + 0.5 + LOG_SQRT_2PI end
function Normal:cdf(value) return (((value - self.loc) / (self.scale * math.sqrt(2))):erf() + 1) * 0.5 end

-- ---- Uniform ----

local Uniform = class("Uniform")

function Uniform.new(...)
  local o = U.parse("Uniform", { { "low", U.REQUIRED }, { "high", U.REQUIRED }, { "validate_args" } }, ...)
  local low, high = broadcast(o.low, o.high)
  if o.validate_args ~= false and high:le(low):any():item() then
    U.error("Expected parameter low to be smaller than high")
  end
  local self = setmetatable({ low = low, high = high, batch_shape = low:size() }, Uniform)
  self.mean, self.stddev = (low + high) / 2, (high - low) / math.sqrt(12)
  self.variance = self.stddev * self.stddev
  return self
end

function Uniform:_repr() return param_str("low", self.low) .. ", " .. param_str("high", self.high) end
function Uniform:rsample(sample_shape)
  local u = torch.rand(shape_of(sample_shape, self.batch_shape), { dtype = self.low.dtype, device = self.low.device })
  return self.low + u * (self.high - self.low)
end
function Uniform:sample(sample_shape) return no_grad(function() return self:rsample(sample_shape) end) end
function Uniform:log_prob(value)
  local inside = value:ge(self.low):logical_and(value:lt(self.high))
  return torch.where(inside, -(self.high - self.low):log(), torch.full({}, -math.huge, { dtype = self.low.dtype, device = self.low.device }))
end
function Uniform:entropy() return (self.high - self.low):log() end

-- ---- Bernoulli and Categorical: probs or logits ----

local function probs_or_logits(name, o, norm)
  if (o.probs == nil) == (o.logits == nil) then U.error("Either `probs` or `logits` must be specified, but not both.") end
  if o.probs ~= nil then
    local p = as_tensor(o.probs)
    if norm then p = p / p:sum(-1, true) end
    return p, nil
  end
  return nil, as_tensor(o.logits)
end

local Bernoulli = class("Bernoulli")

function Bernoulli.new(...)
  local o = U.parse("Bernoulli", { { "probs" }, { "logits" }, { "validate_args" } }, ...)
  local p, l = probs_or_logits("Bernoulli", o, false)
  p = p or l:sigmoid()
  l = l or (p / (1 - p)):log()
  local self = setmetatable({ probs = p, logits = l, batch_shape = p:size() }, Bernoulli)
  self.mean, self.variance = p, p * (1 - p)
  self.stddev = self.variance:sqrt()
  return self
end

function Bernoulli:_repr() return param_str("probs", self.probs) end
function Bernoulli:sample(sample_shape)
  return no_grad(function()
    local u = torch.rand(shape_of(sample_shape, self.batch_shape), { dtype = self.probs.dtype, device = self.probs.device })
    return u:lt(self.probs):to(self.probs.dtype)
  end)
end
function Bernoulli:log_prob(value)
  return -torch.nn.functional.binary_cross_entropy_with_logits(self.logits:expand((self.logits + value):size()), value, { reduction = "none" })
end
function Bernoulli:entropy()
  return torch.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, { reduction = "none" })
end

local Categorical = class("Categorical")

function Categorical.new(...)
  local o = U.parse("Categorical", { { "probs" }, { "logits" }, { "validate_args" } }, ...)
  local p, l = probs_or_logits("Categorical", o, true)
  l = l and (l - l:logsumexp(-1, true)) or p:log()
  p = p or l:exp()
  local batch = {}
  for i = 0, p:dim() - 2 do batch[#batch + 1] = p:size(i) end
  return setmetatable({ probs = p, logits = l, batch_shape = torch.Size(batch), num_events = p:size(-1) }, Categorical)
end

function Categorical:_repr() return param_str("probs", self.probs) end
function Categorical:sample(sample_shape)
  return no_grad(function()
    local n = 1
    local shape = shape_of(sample_shape, torch.Size({}))
    for _, v in ipairs(shape) do n = n * v end
    local flat = self.probs:reshape(-1, self.num_events)
    local draws = torch.multinomial(flat, n, { replacement = true }) -- [batch, n]
    local out = draws:t():reshape(shape_of(sample_shape, self.batch_shape))
    return out
  end)
end
function Categorical:log_prob(value)
  local v = value:to(torch.int64)
  local l = self.logits
  if v:dim() > 0 or l:dim() > 1 then
    local shape = (v:unsqueeze(-1) + l:narrow(-1, 0, 1)):size() -- broadcast value against the batch
    shape = shape_of(nil, shape)
    shape[#shape] = self.num_events
    l = l:expand(shape)
    v = v:expand(shape_of(nil, (v + l:select(-1, 0)):size()))
  end
  return l:gather(-1, v:unsqueeze(-1)):squeeze(-1)
end
function Categorical:entropy() return -(self.probs * self.logits):sum(-1) end

-- ---- kl_divergence ----

function D.kl_divergence(p, q)
  local mp, mq = getmetatable(p), getmetatable(q)
  if mp ~= mq then U.errorf("kl_divergence: no formula for %s and %s", mp and mp.__name or "?", mq and mq.__name or "?") end
  if mp == Normal then
    local r = p.scale / q.scale
    return (r * r + ((p.loc - q.loc) / q.scale) ^ 2 - 1) * 0.5 - r:log()
  elseif mp == Categorical then
    return (p.probs * (p.logits - q.logits)):sum(-1)
  elseif mp == Bernoulli then
    return p.probs * (p.probs:log() - q.probs:log()) + (1 - p.probs) * ((1 - p.probs):log() - (1 - q.probs):log())
  elseif mp == Uniform then
    local out = ((q.high - q.low) / (p.high - p.low)):log()
    return torch.where(q.low:gt(p.low):logical_or(q.high:lt(p.high)), torch.full({}, math.huge, { dtype = out.dtype, device = out.device }), out)
  end
  U.errorf("kl_divergence: no formula for %s", mp and mp.__name or "?")
end
D.kl = { kl_divergence = D.kl_divergence }

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
      local shape = shape_of(nil, logp:size())
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

function torch.bernoulli(input, p)
  return torch.no_grad(function()
    local probs = p ~= nil and torch.full(input:size(), p, { dtype = input.dtype, device = input.device }) or input
    return torch.rand_like(probs):lt(probs):to(probs.dtype)
  end)
end
torch.Tensor.bernoulli = torch.bernoulli
torch.Tensor.multinomial = torch.multinomial

return D
