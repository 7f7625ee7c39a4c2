-- The batching half of torch.func.vmap: BatchedTensor and the per-method batching rules.
--
-- A BatchedTensor is a Lua table { _v = value, _l = level }: _v is a real tensor, or a
-- BatchedTensor of a lower level (nested vmap), whose dim 0 is the batch dim of level _l. Every
-- query (size, shape, dim, numel, #x, x[i]) sees the per-sample tensor; every method applies its
-- rule to _v with dims shifted by one. An operand that is not batched at the level of an op
-- (a plain tensor, or a BatchedTensor of a lower level) is the same for every sample.
-- A method or field without a rule raises "vmap: no batching rule for ...": vmap then runs f again
-- in its per-sample loop (torch_func.lua). The torch.* / F.* rules live in vmap_rules.lua and are
-- installed (with batch-aware tensor operators) only while a batched vmap runs f: outside vmap
-- nothing here is on any path.
local torch = require "torch"

local M = {}
local BT = { __name = "BatchedTensor" }
local methods = {}
M.methods = methods
M.levels = {}  -- levels[l] = { B = batch size, randomness = ... }, innermost last

local is_real = torch.is_tensor  -- the library's own, kept before vmap_rules wraps it
M.is_real = is_real

local function is_bt(x) return getmetatable(x) == BT end
M.is = is_bt
local function wrap(v, l) return setmetatable({ _v = v, _l = l }, BT) end
M.wrap = wrap
local function is_tensorish(x) return is_bt(x) or is_real(x) end
M.is_tensorish = is_tensorish

function M.norule(what) error("vmap: no batching rule for " .. what, 0) end
local norule = M.norule

-- a trailing keyword table: a plain non-empty table whose keys are all strings
local function is_kw(t)
  if type(t) ~= "table" or getmetatable(t) ~= nil or next(t) == nil then return false end
  for k in pairs(t) do if type(k) ~= "string" then return false end end
  return true
end
M.is_kw = is_kw

-- the trailing arguments a (packed) of F.linear, F.conv2d, ... by name: the positional ones named
-- in order by names, then a trailing keyword table's (unknown names raise norule)
function M.opt_args(a, names)
  local o = {}
  local kw = a.n > 0 and is_kw(a[a.n]) and a[a.n] or nil
  local n = kw and a.n - 1 or a.n
  for i, k in ipairs(names) do if i <= n then o[k] = a[i] end end
  if n > #names then norule("too many arguments") end
  for k, v in pairs(kw or {}) do
    local known = false
    for _, nm in ipairs(names) do if nm == k then known = true end end
    if not known then norule("keyword " .. k) end
    o[k] = v
  end
  return o
end

-- the highest level among the arguments (and the elements of plain list arguments); 0 if none
local function level_of(...)
  local L = 0
  for i = 1, select("#", ...) do
    local a = select(i, ...)
    if is_bt(a) then
      if a._l > L then L = a._l end
    elseif type(a) == "table" and getmetatable(a) == nil then
      for _, e in ipairs(a) do if is_bt(e) and e._l > L then L = e._l end end
    end
  end
  return L
end
M.level_of = level_of

-- x's value with the batch of level L at dim 0 (x batched at L), else nil
local function at(x, L) if is_bt(x) and x._l == L then return x._v end end
M.at = at

-- x's per-sample number of dims at level L
local function rank(x, L)
  local v = at(x, L)
  if v then return v:dim() - 1 end
  return x:dim()
end
M.rank = rank

local function batch_size(L) return M.levels[L].B end
M.batch_size = batch_size

-- x as a value with the batch of level L at dim 0: an unbatched x is expanded (stride 0)
local function batched(x, L)
  local v = at(x, L)
  if v then return v end
  local s = x:size():totable()
  table.insert(s, 1, batch_size(L))
  return x:unsqueeze(0):expand(s)
end
M.batched = batched

-- Several levels at once, as the grad transforms see them (torch_func.lua). A level set S is a
-- sorted list of levels; a value's full form at S is a real tensor [B_S[1], ..., B_S[n], ...] (the
-- outer level first), the levels of S it is not batched at expanded (stride 0); nest() makes one
-- back into a BatchedTensor at the levels of S.

-- the levels x is batched at, as a set (levels[l] = true) added to set
function M.levels_of(x, set)
  set = set or {}
  while is_bt(x) do set[x._l] = true; x = x._v end
  return set
end

-- a set of levels as a sorted list
function M.sorted(set)
  local S = {}
  for l in pairs(set) do S[#S + 1] = l end
  table.sort(S)
  return S
end

local function full(x, S, k)
  if k == 0 then
    if not is_real(x) then norule("a value batched at a level outside the transform's") end
    return x
  end
  local l = S[k]
  if is_bt(x) and x._l == l then return full(x._v, S, k - 1) end
  if is_bt(x) and x._l > l then norule("a value batched at a level outside the transform's") end
  local r = full(x, S, k - 1)
  local s = r:size():totable()
  table.insert(s, k, batch_size(l))
  return r:unsqueeze(k - 1):expand(s)
end
function M.full(x, S) return full(x, S, #S) end

-- r [B_S[1], ..., B_S[n], ...] (or with those dims flattened into one, flat) as a BatchedTensor
-- at the levels of S
function M.nest(r, S, flat)
  if flat then
    local s = {}
    for k, l in ipairs(S) do s[k] = batch_size(l) end
    local rest = r:size():totable()
    for i = 2, #rest do s[#s + 1] = rest[i] end
    r = r:reshape(s)
  end
  for _, l in ipairs(S) do r = wrap(r, l) end
  return r
end

-- whether t is batched at exactly the levels of S (the form nest() makes)
function M.at_levels(t, S)
  for k = #S, 1, -1 do
    if not is_bt(t) or t._l ~= S[k] then return false end
    t = t._v
  end
  return is_real(t)
end

-- the real tensor under a BatchedTensor's levels
function M.real_of(t)
  while is_bt(t) do t = t._v end
  return t
end

-- the number of samples of the levels of S together
function M.flat_size(S)
  local B = 1
  for _, l in ipairs(S) do B = B * batch_size(l) end
  return B
end

-- v (batch at dim 0) with k size-1 dims inserted after the batch dim
local function pad(v, k)
  for _ = 1, k do v = v:unsqueeze(1) end
  return v
end
M.pad = pad

-- a per-sample dim d of a rank-n tensor as a dim of its value (batch at 0); raises if out of range
local function shift(d, n)
  if math.type(d) ~= "integer" then norule("a non-integer dim") end
  local m = n > 0 and n or 1
  if d < -m or d >= m then norule("a dim out of range") end
  if d < 0 then d = d + m end
  return d + 1
end
M.shift = shift

local function shift_dims(d, n)
  if type(d) == "table" and getmetatable(d) == nil then
    local out = {}
    for i, e in ipairs(d) do out[i] = shift(e, n) end
    return out
  end
  return shift(d, n)
end

-- wraps the tensor results at level L (other results as they are)
local function lift(L, ...)
  local n = select("#", ...)
  if n == 1 then
    local r = ...
    return is_tensorish(r) and wrap(r, L) or r
  end
  local out = table.pack(...)
  for i = 1, out.n do
    local r = out[i]
    if is_tensorish(r) then out[i] = wrap(r, L)
    elseif type(r) == "table" and getmetatable(r) == nil then
      for j, e in ipairs(r) do if is_tensorish(e) then r[j] = wrap(e, L) end end
    end
  end
  return table.unpack(out, 1, out.n)
end
M.lift = lift

local function no_tensors(name, ...)
  for i = 1, select("#", ...) do
    local a = select(i, ...)
    if is_tensorish(a) then norule(name .. " with a tensor argument") end
    if type(a) == "table" and getmetatable(a) == nil then
      for _, e in pairs(a) do if is_tensorish(e) then norule(name .. " with a tensor argument") end end
    end
  end
end

-- ---------------------------------------------------------------- elementwise

-- fn applied to operands ops (a list; numbers allowed) broadcast per sample: batched values
-- padded to the common per-sample rank, unbatched ones broadcast against them from the right
function M.elementwise(fn, ops, n)
  local L = level_of(table.unpack(ops, 1, n))
  local r = 0
  for i = 1, n do
    local a = ops[i]
    if is_tensorish(a) then
      local k = rank(a, L)
      if k > r then r = k end
    end
  end
  local vs = {}
  for i = 1, n do
    local a = ops[i]
    local v = at(a, L)
    if v then vs[i] = pad(v, r - (v:dim() - 1)) else vs[i] = a end
  end
  return lift(L, fn(table.unpack(vs, 1, n)))
end
local elementwise = M.elementwise

local function binary_method(name)
  return function(a, b, ...)
    local extra = table.pack(...)
    no_tensors(name, ...)
    return elementwise(function(x, y) return x[name](x, y, table.unpack(extra, 1, extra.n)) end, { a, b }, 2)
  end
end

M.binary_names = { "add", "sub", "mul", "div", "true_divide", "pow", "maximum", "minimum", "eq", "ne", "lt", "le",
  "gt", "ge", "atan2", "fmod", "remainder", "floor_divide", "logical_and", "logical_or", "logical_xor", "hypot",
  "xlogy", "rsub", "copysign" }
for _, name in ipairs(M.binary_names) do methods[name] = binary_method(name) end
methods.subtract, methods.multiply, methods.divide = methods.sub, methods.mul, methods.div
methods.greater, methods.less = methods.gt, methods.lt

function methods.where(self, cond, other)
  return elementwise(function(c, x, y) return torch.where(c, x, y) end, { cond, self, other }, 3)
end
function methods.lerp(self, e, w)
  return elementwise(function(a, b, c) return a:lerp(b, c) end, { self, e, w }, 3)
end
function methods.masked_fill(self, mask, value)
  if is_tensorish(value) then norule("masked_fill with a tensor value") end
  -- the result has self's per-sample shape: a batched mask needs a batched self
  if level_of(mask) > level_of(self) then self = wrap(batched(self, level_of(mask)), level_of(mask)) end
  return elementwise(function(x, m) return x:masked_fill(m, value) end, { self, mask }, 2)
end

local BIN = { __add = "add", __sub = "sub", __mul = "mul", __div = "div", __pow = "pow", __mod = "remainder",
  __idiv = "floor_divide" }
local OPS = {
  __add = function(a, b) return a + b end, __sub = function(a, b) return a - b end,
  __mul = function(a, b) return a * b end, __div = function(a, b) return a / b end,
  __pow = function(a, b) return a ^ b end, __mod = function(a, b) return a % b end,
  __idiv = function(a, b) return a // b end,
}
M.OPS = OPS
for mm, fn in pairs(OPS) do
  BT[mm] = function(a, b) return elementwise(fn, { a, b }, 2) end
end
M.BIN = BIN
BT.__unm = function(a) return wrap(-a._v, a._l) end
BT.__len = function(a) return a:size(0) end
BT.__tostring = function() norule("printing a BatchedTensor") end
BT.__newindex = function() norule("assignment into a BatchedTensor") end
BT.__lt = function() norule("comparison of a BatchedTensor") end
BT.__le = BT.__lt
BT.__concat = function() norule("concatenation of a BatchedTensor") end

-- unary ops: the op on the value, non-tensor arguments passed as they are
M.unary_names = { "abs", "neg", "negative", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt",
  "square", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
  "sigmoid", "relu", "erf", "erfc", "erfinv", "sign", "sgn", "reciprocal", "floor", "ceil", "round", "trunc", "frac",
  "clamp", "clip", "clamp_min", "clamp_max", "logical_not", "bitwise_not", "nan_to_num", "isnan", "isinf",
  "isfinite", "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char", "to", "cpu",
  "cuda", "contiguous", "clone", "detach", "logit", "sinc", "deg2rad", "rad2deg", "lgamma", "digamma", "signbit",
  "positive", "relu6", "hardtanh", "selu", "celu", "elu", "silu", "mish", "softplus", "gelu", "leaky_relu",
  "hardsigmoid", "hardswish", "logsigmoid", "softsign", "tanhshrink" }
-- (no in-place method has a rule: f may run again in the loop, which must not see a mutated input)
for _, name in ipairs(M.unary_names) do
  methods[name] = function(self, ...)
    no_tensors(name, ...)
    return lift(self._l, self._v[name](self._v, ...))
  end
end
function methods.type(self, ...)
  if select("#", ...) == 0 then return self._v:type() end
  return lift(self._l, self._v:type(...))
end
function methods.type_as(self, o) return self:to(o.dtype) end
function methods.is_floating_point(self) return self._v:is_floating_point() end
function methods.is_complex(self) return self._v:is_complex() end
function methods.element_size(self) return self._v:element_size() end
function methods.get_device(self) return self._v:get_device() end
function methods.item() norule("item() (a value that depends on the sample)") end
methods.tolist = methods.item
methods.totable = methods.item
methods.numpy = methods.item

-- ---------------------------------------------------------------- shapes

local function per_sample_sizes(self)
  local s = self._v:size():totable()
  table.remove(s, 1)
  return s
end

function methods.size(self, d)
  if d == nil then return torch.Size(per_sample_sizes(self)) end
  return self._v:size(shift(d, self._v:dim() - 1))
end
function methods.dim(self) return self._v:dim() - 1 end
methods.ndimension = methods.dim
function methods.numel(self) return self._v:numel() // self._v:size(0) end
methods.nelement = methods.numel
function methods.stride() norule("stride()") end

-- a size given as varargs, a list or a torch.Size, as a list
local function size_list(...)
  local a = ...
  if select("#", ...) == 1 and type(a) ~= "number" then
    if type(a) == "table" and getmetatable(a) == nil then return { table.unpack(a) } end
    if a ~= nil and a.totable then return a:totable() end
  end
  local out = {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if math.type(v) ~= "integer" then norule("a non-integer size") end
    out[i] = v
  end
  return out
end

local function reshaped(self, s)
  table.insert(s, 1, self._v:size(0))
  return wrap(self._v:reshape(s), self._l)
end
function methods.reshape(self, ...) return reshaped(self, size_list(...)) end
methods.view = methods.reshape  -- a copy where a view would fail: results are equal (in-place ops are not batched)
function methods.view_as(self, o) return reshaped(self, o:size():totable()) end
methods.reshape_as = methods.view_as

function methods.expand(self, ...)
  local s = size_list(...)
  local n = self._v:dim() - 1
  if #s < n then norule("expand to fewer dims") end
  local v = pad(self._v, #s - n)
  table.insert(s, 1, v:size(0))
  return wrap(v:expand(s), self._l)
end
function methods.expand_as(self, o) return self:expand(o:size():totable()) end

function methods.flatten(self, s, e)
  local n = self._v:dim() - 1
  if n == 0 then return reshaped(self, { 1 }) end
  return wrap(self._v:flatten(shift(s or 0, n), shift(e or -1, n)), self._l)
end
function methods.unflatten(self, d, sizes)
  return wrap(self._v:unflatten(shift(d, self._v:dim() - 1), sizes), self._l)
end
function methods.unsqueeze(self, d) return wrap(self._v:unsqueeze(shift(d, self._v:dim())), self._l) end
function methods.squeeze(self, d)
  local n = self._v:dim() - 1
  if d ~= nil then
    if n == 0 then return self end
    return wrap(self._v:squeeze(shift_dims(d, n)), self._l)
  end
  local s = {}
  for _, v in ipairs(per_sample_sizes(self)) do if v ~= 1 then s[#s + 1] = v end end
  return reshaped(self, s)
end
function methods.permute(self, ...)
  local d = size_list(...)
  local n = self._v:dim() - 1
  local p = { 0 }
  for i, e in ipairs(d) do p[i + 1] = shift(e, n) end
  return wrap(self._v:permute(p), self._l)
end
function methods.transpose(self, a, b)
  local n = self._v:dim() - 1
  return wrap(self._v:transpose(shift(a, n), shift(b, n)), self._l)
end
methods.swapaxes, methods.swapdims = methods.transpose, methods.transpose
function methods.t(self)
  local n = self._v:dim() - 1
  if n < 2 then return self end
  if n > 2 then norule("t() of more than 2 dims") end
  return self:transpose(0, 1)
end
function methods.movedim(self, a, b)
  if type(a) ~= "number" or type(b) ~= "number" then norule("movedim with lists") end
  local n = self._v:dim() - 1
  return wrap(self._v:movedim(shift(a, n), shift(b, n)), self._l)
end
methods.moveaxis = methods.movedim
function methods.select(self, d, i) return wrap(self._v:select(shift(d, self._v:dim() - 1), i), self._l) end
function methods.narrow(self, d, s, len)
  if is_tensorish(s) then norule("narrow with a tensor start") end
  return wrap(self._v:narrow(shift(d, self._v:dim() - 1), s, len), self._l)
end
function methods.index_select(self, d, idx)
  if is_bt(idx) then norule("index_select with a batched index") end
  return wrap(self._v:index_select(shift(d, self._v:dim() - 1), idx), self._l)
end
-- gather / take_along_dim: self and index batched at the same level (the unbatched one expanded)
for _, name in ipairs({ "gather", "take_along_dim" }) do
  methods[name] = function(self, d, idx, ...)
    if name == "take_along_dim" then d, idx = idx, d end
    if select("#", ...) > 0 then norule(name .. " with options") end
    if math.type(d) ~= "integer" then norule(name .. " without a dim") end
    local L = level_of(self, idx)
    local r = rank(self, L)
    if rank(idx, L) ~= r then norule(name .. " of an index of another rank") end
    local sv, iv = batched(self, L), batched(idx, L)
    if name == "take_along_dim" then return wrap(sv:take_along_dim(iv, shift(d, r)), L) end
    return wrap(sv:gather(shift(d, r), iv), L)
  end
end
for _, name in ipairs({ "chunk", "split", "tensor_split" }) do
  methods[name] = function(self, k, d)
    if is_tensorish(k) then norule(name .. " with a tensor") end
    local r = self._v[name](self._v, k, shift(d or 0, self._v:dim() - 1))
    local out = {}
    for i, e in ipairs(r) do out[i] = wrap(e, self._l) end
    return out
  end
end
function methods.unbind(self, d)
  local r = self._v:unbind(shift(d or 0, self._v:dim() - 1))
  local out = {}
  for i, e in ipairs(r) do out[i] = wrap(e, self._l) end
  return out
end
function methods.flip(self, ...)
  local d = size_list(...)
  return wrap(self._v:flip(shift_dims(d, self._v:dim() - 1)), self._l)
end

-- ---------------------------------------------------------------- dims and reductions

-- the position of the dim argument in args (packed, after self): "pos", "kw" or nil
local function find_dim(a, p, key)
  local last = a.n > 0 and a[a.n] or nil
  local kw = is_kw(last)
  if a.n >= p and not (kw and a.n == p) and a[p] ~= nil then return "pos" end
  if kw and last[key] ~= nil then return "kw" end
  return nil
end

-- the method with its dim argument (position p after self, or keyword `key`) shifted
local function dim_method(name, p, key, reduce_all)
  key = key or "dim"
  return function(self, ...)
    local a = table.pack(...)
    local n = self._v:dim() - 1
    local where = find_dim(a, p, key)
    for i = 1, a.n do
      if i ~= p and is_tensorish(a[i]) then norule(name .. " with a tensor argument") end
    end
    if where == "pos" then
      a[p] = shift_dims(a[p], n)
    elseif where == "kw" then
      local kw = {}
      for k, v in pairs(a[a.n]) do kw[k] = v end
      kw[key] = shift_dims(kw[key], n)
      a[a.n] = kw
    elseif reduce_all then
      -- over all per-sample dims: flatten them and reduce dim 1
      for i = 1, a.n do
        if not (i == a.n and is_kw(a[i])) then norule(name .. "() with arguments and no dim") end
      end
      local v = self._v:reshape(self._v:size(0), -1)
      if reduce_all == "values" then return wrap((v[name](v, 1)), self._l) end
      return wrap(v[name](v, 1, table.unpack(a, 1, a.n)), self._l)
    else
      norule(name .. " without a dim")
    end
    return lift(self._l, self._v[name](self._v, table.unpack(a, 1, a.n)))
  end
end
M.dim_method = dim_method

for _, name in ipairs({ "sum", "mean", "amax", "amin", "prod", "all", "any", "nansum", "nanmean", "count_nonzero",
  "argmax", "argmin", "logsumexp" }) do
  methods[name] = dim_method(name, 1, "dim", true)
end
for _, name in ipairs({ "softmax", "log_softmax", "cumsum", "cumprod", "cummax", "cummin", "sort", "argsort",
  "median", "mode", "logcumsumexp" }) do
  methods[name] = dim_method(name, 1, "dim", false)
end
for _, name in ipairs({ "std", "var" }) do
  local with_dim = dim_method(name, 1, "dim", false)
  methods[name] = function(self, ...)
    if select("#", ...) == 0 then
      local v = self._v:reshape(self._v:size(0), -1)
      return wrap(v[name](v, 1), self._l)
    end
    return with_dim(self, ...)
  end
end
for _, name in ipairs({ "max", "min" }) do
  local red = dim_method(name, 1, "dim", "values")
  local other = name == "max" and "maximum" or "minimum"
  methods[name] = function(self, ...)
    if is_tensorish((...)) then return methods[other](self, ...) end
    return red(self, ...)
  end
end
methods.topk = dim_method("topk", 2, "dim", false)
function methods.norm(self, ...)
  local a = table.pack(...)
  if a.n == 0 or (a.n == 1 and type(a[1]) == "number") then
    local v = self._v:reshape(self._v:size(0), -1)
    return wrap(v:norm(a[1] or 2, 1), self._l)
  end
  return dim_method("norm", 2, "dim", false)(self, ...)
end

-- ---------------------------------------------------------------- matmul

-- matmul of a and b at their highest level: per-sample vectors made matrices, the batched
-- values padded so that their per-sample batch dims line up, the matrix dims squeezed again
function M.matmul(a, b)
  local L = level_of(a, b)
  local ra, rb = rank(a, L), rank(b, L)
  if ra == 0 or rb == 0 then norule("matmul of a 0-dim tensor") end
  local av, bv = at(a, L), at(b, L)
  local A = av or a
  local Bm = bv or b
  if ra == 1 then A = A:unsqueeze(av and 1 or 0); ra = 2 end
  if rb == 1 then Bm = Bm:unsqueeze(-1); rb = 2 end
  local P = math.max(ra, rb) - 2
  if av then A = pad(A, P - (ra - 2)) end
  if bv then Bm = pad(Bm, P - (rb - 2)) end
  local r = torch.matmul(A, Bm)
  if rank(b, L) == 1 then r = r:squeeze(-1) end
  if rank(a, L) == 1 then r = r:squeeze(rank(b, L) == 1 and -1 or -2) end
  return wrap(r, L)
end
function methods.matmul(self, o) return M.matmul(self, o) end
function methods.mm(self, o)
  if rank(self, level_of(self, o)) ~= 2 or rank(o, level_of(self, o)) ~= 2 then norule("mm of non-matrices") end
  return M.matmul(self, o)
end
function methods.bmm(self, o)
  local L = level_of(self, o)
  if rank(self, L) ~= 3 or rank(o, L) ~= 3 then norule("bmm of non-3-d tensors") end
  return M.matmul(self, o)
end
function methods.mv(self, o)
  local L = level_of(self, o)
  if rank(self, L) ~= 2 or rank(o, L) ~= 1 then norule("mv of these shapes") end
  return M.matmul(self, o)
end
function methods.dot(self, o)
  local L = level_of(self, o)
  if rank(self, L) ~= 1 or rank(o, L) ~= 1 then norule("dot of non-vectors") end
  return M.matmul(self, o)
end

-- ---------------------------------------------------------------- fields

local getters = {
  shape = function(self) return self:size() end,
  dtype = function(self) return self._v.dtype end,
  device = function(self) return self._v.device end,
  is_cuda = function(self) return self._v.is_cuda end,
  requires_grad = function(self) return self._v.requires_grad end,
  ndim = function(self) return self._v:dim() - 1 end,
  layout = function(self) return self._v.layout end,
  T = function(self)
    local n = self._v:dim() - 1
    local p = {}
    for i = 1, n do p[i] = n - i end
    if n == 0 then return self end
    return self:permute(p)
  end,
  mT = function(self) return self:transpose(-2, -1) end,
  data = function(self) return wrap(self._v.data, self._l) end,
}

BT.__index = function(self, k)
  local m = methods[k]
  if m then return m end
  local g = getters[k]
  if g then return g(self) end
  if math.type(k) == "integer" then return self:select(0, k) end
  norule("Tensor." .. tostring(k))
end

-- ---------------------------------------------------------------- levels

-- runs fn(level) with a new batched level of size B pushed (and the rules installed while any
-- level is active); pcall's results
local install, uninstall
function M.set_installer(i, u) install, uninstall = i, u end
function M.run(B, randomness, fn)
  local L = #M.levels + 1
  M.levels[L] = { B = B, randomness = randomness }
  if L == 1 then install() end
  local r = table.pack(pcall(fn, L))
  if L == 1 then uninstall() end
  M.levels[L] = nil
  return r
end
function M.active() return #M.levels > 0 end

return M
