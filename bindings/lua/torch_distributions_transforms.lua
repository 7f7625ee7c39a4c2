-- torch.distributions.transforms, the rest of PyTorch's set: AbsTransform, PowerTransform,
-- SoftplusTransform, SoftmaxTransform, StickBreakingTransform, LowerCholeskyTransform,
-- PositiveDefiniteTransform, CorrCholeskyTransform, CumulativeDistributionTransform,
-- IndependentTransform, ReshapeTransform, CatTransform, StackTransform, identity_transform;
-- every transform also at torch.distributions' top level, as PyTorch exports them; and the
-- constraint registries biject_to / transform_to (torch.distributions.constraint_registry),
-- keyed by constraint kind as PyTorch's are by constraint class.
--   local t = torch.distributions.biject_to(torch.distributions.constraints.positive)  -- exp
local torch = require "torch"
local U = require "nn_util"
local D = require "torch_distributions"
require "torch_distributions_transformed"
local C = D.constraints
local H = D._h
local T = D.transforms
local tclass, make = T._tclass, T._make

local Transform = T.Transform

-- the defaults every transform has
function Transform:forward_shape(shape) return shape end
function Transform:inverse_shape(shape) return shape end
function Transform:with_cache() return self end
function Transform:log_abs_det_jacobian() H.not_implemented("%s does not implement log_abs_det_jacobian", self._name) end
function Transform:_inverse() H.not_implemented("%s is not invertible", self._name) end
T._InverseTransform.forward_shape = function(self, s) return self.inv:inverse_shape(s) end
T._InverseTransform.inverse_shape = function(self, s) return self.inv:forward_shape(s) end
T.identity_transform = T.ComposeTransform({})

local function indep(c, n) return n > 0 and C.independent(c, n) or c end

-- ---- elementwise ----

local Abs = tclass("AbsTransform")
Abs.codomain, Abs.bijective = C.positive, false
function Abs.new() return make(Abs) end
function Abs:_call(x) return x:abs() end
function Abs:_inverse(y) return y end

local Power = tclass("PowerTransform")
Power.domain, Power.codomain = C.positive, C.positive
function Power.new(...)
  local o = U.parse("PowerTransform", { { "exponent", U.REQUIRED }, { "cache_size", 0 } }, ...)
  local e = o.exponent
  local sign = torch.is_tensor(e) and e:sign() or (e > 0 and 1 or e < 0 and -1 or 0)
  return make(Power, { exponent = e, sign = sign })
end
function Power:_call(x) return x:pow(self.exponent) end
function Power:_inverse(y) return y:pow(1 / self.exponent) end
function Power:log_abs_det_jacobian(x, y) return (y * self.exponent / x):abs():log() end
function Power:_repr() return "PowerTransform(exponent=" .. tostring(self.exponent) .. ")" end

local Softplus = tclass("SoftplusTransform")
Softplus.codomain = C.positive
function Softplus.new() return make(Softplus) end
function Softplus:_call(x) return torch.nn.functional.softplus(x) end
function Softplus:_inverse(y) return (-y):expm1():neg():log() + y end -- log(e^y - 1), stable
function Softplus:log_abs_det_jacobian(x) return -torch.nn.functional.softplus(-x) end

-- ---- vector and matrix ----

local Softmax = tclass("SoftmaxTransform")
Softmax.domain, Softmax.codomain, Softmax.event_dim, Softmax.bijective = C.real_vector, C.simplex, 1, false
function Softmax.new() return make(Softmax) end
function Softmax:_call(x) return x:softmax(-1) end
function Softmax:_inverse(y) return y:log() end

-- the column 1, 2, ..., n over the last dim (as dtype / device of x)
local function counts(x, n) return torch.arange(1, n + 1, H.opts(x)) end

-- R^(K-1) -> the K-simplex: z_i = sigmoid(x_i - log(K - i)), y_i = z_i * prod_{j<i} (1 - z_j)
local SB = tclass("StickBreakingTransform")
SB.domain, SB.codomain, SB.event_dim = C.real_vector, C.simplex, 1
function SB.new() return make(SB) end
local function sb_offset(x) local n = x:size(-1); return (n + 1 - counts(x, n)):log() end
function SB:_call(x)
  local z = (x - sb_offset(x)):sigmoid()
  local rest = (1 - z):cumprod(-1)
  return torch.nn.functional.pad(z, { 0, 1 }, "constant", 1) * torch.nn.functional.pad(rest, { 1, 0 }, "constant", 1)
end
function SB:_inverse(y)
  local crop = y:narrow(-1, 0, y:size(-1) - 1)
  local sf = (1 - crop:cumsum(-1)):clamp(torch.finfo(y.dtype).tiny)
  return crop:log() - sf:log() + sb_offset(crop)
end
function SB:log_abs_det_jacobian(x, y)
  local xs = x - sb_offset(x)
  return (-xs + torch.nn.functional.logsigmoid(xs) + y:narrow(-1, 0, y:size(-1) - 1):log()):sum(-1)
end
function SB:forward_shape(s) s = H.list(s); s[#s] = s[#s] + 1; return s end
function SB:inverse_shape(s) s = H.list(s); s[#s] = s[#s] - 1; return s end

local LC = tclass("LowerCholeskyTransform")
LC.domain, LC.codomain, LC.event_dim, LC.bijective = C.independent(C.real, 2), C.lower_cholesky, 2, true
function LC.new() return make(LC) end
function LC:_call(x) return x:tril(-1) + x:diagonal(0, -2, -1):exp():diag_embed() end
function LC:_inverse(y) return y:tril(-1) + y:diagonal(0, -2, -1):log():diag_embed() end
function LC:log_abs_det_jacobian(x) return x:diagonal(0, -2, -1):sum(-1) end

local PD = tclass("PositiveDefiniteTransform")
PD.domain, PD.codomain, PD.event_dim = C.independent(C.real, 2), C.positive_definite, 2
function PD.new() return make(PD, { _lc = LC.new() }) end
function PD:_call(x)
  local L = self._lc(x)
  return L:matmul(L:transpose(-2, -1))
end
function PD:_inverse(y) return self._lc:_inverse(torch.linalg.cholesky(y)) end

-- the strictly lower triangle of an n x n matrix, row by row, as a vector (and back)
local function tril_index(n)
  local idx, map = {}, {}
  for i = 0, n - 1 do
    for j = 0, n - 1 do
      if j < i then idx[#idx + 1] = i * n + j; map[#map + 1] = #idx - 1 else map[#map + 1] = -1 end
    end
  end
  return idx, map
end
local function tril_to_vec(m)
  local n = m:size(-1)
  local idx = tril_index(n)
  return m:reshape(H.shape_of(H.head(m, 2), { n * n })):index_select(-1, torch.tensor(idx, { dtype = torch.int64, device = m.device }))
end
local function vec_to_tril(v)
  local N = v:size(-1)
  local n = math.floor((1 + math.sqrt(1 + 8 * N)) / 2 + 0.5)
  if n * (n - 1) // 2 ~= N then U.errorf("ValueError: The size of last dimension is %d which cannot be expressed as the lower triangular part of a square D x D matrix.", N) end
  local _, map = tril_index(n)
  for i, k in ipairs(map) do if k < 0 then map[i] = N end end -- the appended zero
  local padded = torch.nn.functional.pad(v, { 0, 1 })
  local m = padded:index_select(-1, torch.tensor(map, { dtype = torch.int64, device = v.device }))
  return m:reshape(H.shape_of(H.head(v, 1), { n, n })), n
end

-- R^(D(D-1)/2) -> Cholesky factors of D x D correlation matrices: tanh to (-1, 1), then each
-- row's entries as stick-breaking fractions of the remaining squared norm
local CC = tclass("CorrCholeskyTransform")
CC.domain, CC.codomain, CC.event_dim = C.real_vector, C.corr_cholesky, 1
function CC.new() return make(CC) end
function CC:_call(x)
  local e = torch.finfo(x.dtype).eps
  local r, n = vec_to_tril(x:tanh():clamp(-1 + e, 1 - e))
  local keep = (1 - r * r):sqrt():cumprod(-1)
  r = r + torch.eye(n, H.opts(x))
  return r * torch.nn.functional.pad(keep:narrow(-1, 0, n - 1), { 1, 0 }, "constant", 1)
end
function CC:_inverse(y)
  local n = y:size(-1)
  local left = 1 - (y * y):cumsum(-1)
  local shifted = torch.nn.functional.pad(left:narrow(-1, 0, n - 1), { 1, 0 }, "constant", 1)
  return (tril_to_vec(y) / tril_to_vec(shifted):sqrt()):atanh()
end
function CC:log_abs_det_jacobian(x, y)
  local left = 1 - (y * y):cumsum(-1)
  local n = y:size(-1)
  -- the remaining norms strictly below the first subdiagonal: entries (i, j) with j < i - 1
  local idx = {}
  for i = 0, n - 1 do for j = 0, i - 2 do idx[#idx + 1] = i * n + j end end
  local stick = 0
  if #idx > 0 then
    local below = left:reshape(H.shape_of(H.head(left, 2), { n * n })):index_select(-1, torch.tensor(idx, { dtype = torch.int64, device = y.device }))
    stick = below:log():sum(-1) * 0.5
  end
  local tanh = ((x + torch.nn.functional.softplus(x * -2) - math.log(2)) * -2):sum(-1)
  return stick + tanh
end
function CC:forward_shape(s)
  s = H.list(s)
  local N = s[#s]
  local n = math.floor((1 + math.sqrt(1 + 8 * N)) / 2 + 0.5)
  if n * (n - 1) // 2 ~= N then U.error("ValueError: Input is not a flattend lower-diagonal number") end
  s[#s] = n
  s[#s + 1] = n
  return s
end
function CC:inverse_shape(s)
  s = H.list(s)
  local n = s[#s]
  s[#s] = nil
  s[#s] = n * (n - 1) // 2
  return s
end

-- ---- built from others ----

local CDT = tclass("CumulativeDistributionTransform")
CDT.codomain = C.unit_interval
function CDT.new(...)
  local o = U.parse("CumulativeDistributionTransform", { { "distribution", U.REQUIRED }, { "cache_size", 0 } }, ...)
  local d = o.distribution
  return make(CDT, { distribution = d, domain = d.support })
end
function CDT:_call(x) return self.distribution:cdf(x) end
function CDT:_inverse(y) return self.distribution:icdf(y) end
function CDT:log_abs_det_jacobian(x) return self.distribution:log_prob(x) end

local IT = tclass("IndependentTransform")
function IT.new(...)
  local o = U.parse("IndependentTransform", { { "base_transform", U.REQUIRED }, { "reinterpreted_batch_ndims", U.REQUIRED }, { "cache_size", 0 } }, ...)
  local b, r = o.base_transform, U.check_int("IndependentTransform", "reinterpreted_batch_ndims", o.reinterpreted_batch_ndims, 0)
  return make(IT, { base_transform = b, reinterpreted_batch_ndims = r, event_dim = b.event_dim + r, sign = b.sign,
    bijective = b.bijective, domain = indep(b.domain, r), codomain = indep(b.codomain, r) })
end
function IT:_call(x) return self.base_transform(x) end
function IT:_inverse(y) return self.base_transform:_inverse(y) end
function IT:log_abs_det_jacobian(x, y)
  return H.sum_rightmost(self.base_transform:log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)
end
function IT:forward_shape(s) return self.base_transform:forward_shape(s) end
function IT:inverse_shape(s) return self.base_transform:inverse_shape(s) end
function IT:_repr() return "IndependentTransform(" .. tostring(self.base_transform) .. ", " .. self.reinterpreted_batch_ndims .. ")" end

local function numel(s) local n = 1; for _, v in ipairs(s) do n = n * v end; return n end

local Reshape = tclass("ReshapeTransform")
function Reshape.new(...)
  local o = U.parse("ReshapeTransform", { { "in_shape", U.REQUIRED }, { "out_shape", U.REQUIRED }, { "cache_size", 0 } }, ...)
  local a, b = H.list(o.in_shape), H.list(o.out_shape)
  if numel(a) ~= numel(b) then U.error("ValueError: in_shape, out_shape have different numbers of elements") end
  return make(Reshape, { in_shape = torch.Size(a), out_shape = torch.Size(b), event_dim = #a,
    domain = indep(C.real, #a), codomain = indep(C.real, #b) })
end
function Reshape:_call(x) return x:reshape(H.shape_of(H.head(x, self.in_shape:dim()), self.out_shape)) end
function Reshape:_inverse(y) return y:reshape(H.shape_of(H.head(y, self.out_shape:dim()), self.in_shape)) end
function Reshape:log_abs_det_jacobian(x) return torch.zeros(H.head(x, self.in_shape:dim()), H.opts(x)) end
local function swap_tail(s, from, to, fname)
  s = H.list(s)
  local k, f = #s - from:dim(), from:totable()
  if k < 0 then U.errorf("ValueError: Too few dimensions on input to %s", fname) end
  for i = 1, #f do
    if s[k + i] ~= f[i] then U.errorf("ValueError: Shape mismatch: expected %s but got %s", tostring(from), U.pystr(s)) end
  end
  return H.shape_of(H.head(s, from:dim()), to)
end
function Reshape:forward_shape(s) return swap_tail(s, self.in_shape, self.out_shape, "forward_shape") end
function Reshape:inverse_shape(s) return swap_tail(s, self.out_shape, self.in_shape, "inverse_shape") end

-- transforms applied to consecutive slices (CatTransform: of given lengths along dim) or to
-- each index (StackTransform: along dim) of the input
local Cat = tclass("CatTransform")
function Cat.new(...)
  local o = U.parse("CatTransform", { { "tseq", U.REQUIRED }, { "dim", 0 }, { "lengths" }, { "cache_size", 0 } }, ...)
  local ts = o.tseq
  local lengths = o.lengths or {}
  if o.lengths == nil then for i = 1, #ts do lengths[i] = 1 end end
  if #lengths ~= #ts then U.error("ValueError: CatTransform: lengths must have as many entries as tseq") end
  local ed, bij = 0, true
  for _, t in ipairs(ts) do ed = math.max(ed, t.event_dim); bij = bij and t.bijective end
  return make(Cat, { transforms = ts, dim = o.dim, lengths = lengths, event_dim = ed, bijective = bij })
end
local function cat_apply(self, x, f)
  local parts, start = {}, 0
  for i, t in ipairs(self.transforms) do
    parts[i] = f(t, x:narrow(self.dim, start, self.lengths[i]), start, self.lengths[i])
    start = start + self.lengths[i]
  end
  return parts
end
local function check_dim(self, x)
  local n = 0
  for _, l in ipairs(self.lengths) do n = n + l end
  if x:size(self.dim) ~= n then U.errorf("ValueError: CatTransform: expected size %d along dim %d, got %d", n, self.dim, x:size(self.dim)) end
end
function Cat:_call(x)
  check_dim(self, x)
  return torch.cat(cat_apply(self, x, function(t, s) return t(s) end), self.dim)
end
function Cat:_inverse(y)
  check_dim(self, y)
  return torch.cat(cat_apply(self, y, function(t, s) return t:_inverse(s) end), self.dim)
end
function Cat:log_abs_det_jacobian(x, y)
  local parts = cat_apply(self, x, function(t, s, start, len)
    local l = t:log_abs_det_jacobian(s, y:narrow(self.dim, start, len))
    return H.sum_rightmost(l, self.event_dim - t.event_dim)
  end)
  local d = self.dim >= 0 and self.dim - x:dim() or self.dim
  d = d + self.event_dim
  if d < 0 then return torch.cat(parts, d) end
  local total = parts[1]
  for i = 2, #parts do total = total + parts[i] end
  return total
end

local Stack = tclass("StackTransform")
function Stack.new(...)
  local o = U.parse("StackTransform", { { "tseq", U.REQUIRED }, { "dim", 0 }, { "cache_size", 0 } }, ...)
  local bij = true
  for _, t in ipairs(o.tseq) do bij = bij and t.bijective end
  return make(Stack, { transforms = o.tseq, dim = o.dim, bijective = bij })
end
local function stack_apply(self, x, f)
  if x:size(self.dim) ~= #self.transforms then
    U.errorf("ValueError: StackTransform: expected size %d along dim %d, got %d", #self.transforms, self.dim, x:size(self.dim))
  end
  local parts = {}
  for i, t in ipairs(self.transforms) do parts[i] = f(t, x:select(self.dim, i - 1), i - 1) end
  return torch.stack(parts, self.dim)
end
function Stack:_call(x) return stack_apply(self, x, function(t, s) return t(s) end) end
function Stack:_inverse(y) return stack_apply(self, y, function(t, s) return t:_inverse(s) end) end
function Stack:log_abs_det_jacobian(x, y)
  return stack_apply(self, x, function(t, s, i) return t:log_abs_det_jacobian(s, y:select(self.dim, i)) end)
end

-- every transform at the top level, as PyTorch's torch.distributions exports them
for k, v in pairs(T) do
  if k:match("Transform$") and k:sub(1, 1) ~= "_" then D[k] = v end
end
D.identity_transform = T.identity_transform

-- ---- biject_to / transform_to ----

local Registry = { __name = "torch.distributions.constraint_registry.ConstraintRegistry" }
Registry.__index = Registry
Registry.__call = function(self, c)
  local kind = type(c) == "table" and c.kind and c:kind()
  local f = kind and self._factories[kind]
  if not f then
    H.not_implemented("Cannot transform %s constraints", kind or tostring(c))
  end
  return f(c)
end

-- the kinds of C's constraint constructors, so that register accepts them as PyTorch's classes
local CTOR_KIND = { [C.greater_than] = "GreaterThan", [C.greater_than_eq] = "GreaterThanEq", [C.less_than] = "LessThan",
  [C.interval] = "Interval", [C.half_open_interval] = "HalfOpenInterval", [C.independent] = "IndependentConstraint",
  [C.integer_interval] = "IntegerInterval", [C.multinomial] = "Multinomial" }

-- register(constraint, factory) or register(constraint) -> a decorator; constraint is a
-- constraint object or constructor (e.g. constraints.greater_than), matched by its kind
function Registry:register(c, factory)
  if factory == nil then return function(f) return self:register(c, f) end end
  local kind = CTOR_KIND[c] or (type(c) == "table" and c.kind and c:kind())
  if not kind then U.errorf("TypeError: Expected constraint to be either a Constraint subclass or instance, but got %s", tostring(c)) end
  self._factories[kind] = factory
  return factory
end
local function registry() return setmetatable({ _factories = {} }, Registry) end

local biject_to, transform_to = registry(), registry()
D.biject_to, D.transform_to = biject_to, transform_to
D.constraint_registry = { biject_to = biject_to, transform_to = transform_to, ConstraintRegistry = registry }

local function both(c, f) biject_to:register(c, f); transform_to:register(c, f) end
both(C.real, function() return T.identity_transform end)
for _, r in ipairs({ biject_to, transform_to }) do
  r:register(C.independent, function(c)
    return IT.new(r(c.base_constraint), c.reinterpreted_batch_ndims)
  end)
end
local function shifted_exp(c)
  return T.ComposeTransform({ T.ExpTransform(), T.AffineTransform(c.lower_bound, 1) })
end
both(C.greater_than, shifted_exp)
both(C.greater_than_eq, shifted_exp)
both(C.less_than, function(c) return T.ComposeTransform({ T.ExpTransform(), T.AffineTransform(c.upper_bound, -1) }) end)
local function sigmoid_interval(c)
  local lb, ub = c.lower_bound, c.upper_bound
  if type(lb) == "number" and type(ub) == "number" and lb == 0 and ub == 1 then return T.SigmoidTransform() end
  return T.ComposeTransform({ T.SigmoidTransform(), T.AffineTransform(lb, ub - lb) })
end
both(C.interval, sigmoid_interval)
both(C.half_open_interval, sigmoid_interval)
biject_to:register(C.simplex, function() return SB.new() end)
transform_to:register(C.simplex, function() return Softmax.new() end)
transform_to:register(C.lower_cholesky, function() return LC.new() end)
transform_to:register(C.positive_definite, function() return PD.new() end)
transform_to:register(C.positive_semidefinite, function() return PD.new() end)
both(C.corr_cholesky, function() return CC.new() end)

return D
