-- torch.utils.benchmark.Fuzzer, FuzzedParameter, FuzzedTensor, ParameterAlias and
-- op_fuzzers.binary.BinaryOpFuzzer, as PyTorch's (torch/utils/benchmark/utils/fuzzer.py): random
-- parameters (loguniform, uniform, or a discrete distribution whose choices may alias another
-- parameter), resampled until every constraint and each tensor's element and allocation limits
-- hold, then tensors of those sizes, made discontiguous with probability 1 - probability_contiguous
-- (a random permutation made contiguous and permuted back) and strided by `steps`.
-- Differences: the random stream is CPython's random.Random(seed) (nnrepl's `random`), not
-- numpy's RandomState, so a seed gives other values than PyTorch's; a discrete distribution is a
-- list of {value, probability} pairs (Python's dict keeps its order; a Lua map does not; a map is
-- taken in sorted order of tostring(value)).
local torch = require "torch"
local U = require "nn_util"
local random = require "random"
local benchmark = torch.utils.benchmark

-- ---- ParameterAlias ----

local ParameterAlias = {}
ParameterAlias.__index = ParameterAlias
ParameterAlias.__name = "ParameterAlias"
ParameterAlias.__tostring = function(self) return "ParameterAlias[alias_to: " .. self.alias_to .. "]" end
benchmark.ParameterAlias = setmetatable(ParameterAlias, { __call = function(_, alias_to)
  return setmetatable({ alias_to = alias_to }, ParameterAlias)
end })
local function is_alias(v) return getmetatable(v) == ParameterAlias end

-- ---- FuzzedParameter ----

local FuzzedParameter = {}
FuzzedParameter.__index = FuzzedParameter
FuzzedParameter.__name = "FuzzedParameter"
benchmark.FuzzedParameter = setmetatable(FuzzedParameter, { __call = function(cls, ...) return cls.new(...) end })

-- a discrete distribution as an ordered list of {value, p}
local function as_choices(d)
  local out = {}
  if d[1] ~= nil then
    for i, pair in ipairs(d) do out[i] = { pair[1], pair[2] } end
  else
    for k, p in pairs(d) do out[#out + 1] = { k, p } end
    table.sort(out, function(a, b) return tostring(a[1]) < tostring(b[1]) end)
  end
  return out
end

-- FuzzedParameter(name, minval, maxval, distribution, strict)
function FuzzedParameter.new(...)
  local o = U.parse("FuzzedParameter", { { "name", U.REQUIRED }, { "minval" }, { "maxval" }, { "distribution" },
    { "strict", false } }, ...)
  local d = o.distribution
  if type(d) == "table" then
    d = as_choices(d)
    local sum = 0
    for _, c in ipairs(d) do
      if c[2] < 0 then U.errorf("Probabilities cannot be negative") end
      sum = sum + c[2]
    end
    if math.abs(sum - 1) > 1e-5 then U.errorf("Distribution is not normalized") end
    if o.minval ~= nil then U.errorf("When passing a custom distribution, 'minval' must be None") end
    if o.maxval ~= nil then U.errorf("When passing a custom distribution, 'maxval' must be None") end
  elseif d ~= "loguniform" and d ~= "uniform" then
    U.errorf("Unknown distribution: %s", d == nil and "None" or tostring(d))
  end
  return setmetatable({ name = o.name, _minval = o.minval, _maxval = o.maxval, _distribution = d, strict = o.strict },
    FuzzedParameter)
end

local function log2(x) return math.log(x, 2) end

function FuzzedParameter:sample(state)
  local d, lo, hi = self._distribution, self._minval, self._maxval
  if d == "loguniform" then
    local out = math.floor(2 ^ state:uniform(log2(lo), log2(hi)))
    if out < lo then return lo end
    if out > hi then return hi end
    return out
  elseif d == "uniform" then
    if math.type(lo) == "integer" and math.type(hi) == "integer" then return state:randint(lo, hi) end
    return state:uniform(lo, hi)
  end
  -- numpy's choice with p: the first cumulative probability above a uniform draw
  local cdf, acc = {}, 0
  for i, c in ipairs(d) do acc = acc + c[2]; cdf[i] = acc end
  local u = state:random() * acc
  for i, c in ipairs(d) do if u < cdf[i] then return c[1] end end
  return d[#d][1]
end

-- ---- FuzzedTensor ----

local FuzzedTensor = {}
FuzzedTensor.__index = FuzzedTensor
FuzzedTensor.__name = "FuzzedTensor"
benchmark.FuzzedTensor = setmetatable(FuzzedTensor, { __call = function(cls, ...) return cls.new(...) end })

-- FuzzedTensor(name, size, {steps =, probability_contiguous = 0.5, min_elements =, max_elements =,
--   max_allocation_bytes =, dim_parameter =, dtype = torch.float32, cuda = false, tensor_constructor =})
function FuzzedTensor.new(...)
  local o = U.parse("FuzzedTensor", { { "name", U.REQUIRED }, { "size", U.REQUIRED }, { "steps" },
    { "probability_contiguous", 0.5 }, { "min_elements" }, { "max_elements" }, { "max_allocation_bytes" },
    { "dim_parameter" }, { "roll_parameter" }, { "dtype", torch.float32 }, { "cuda", false }, { "tensor_constructor" } }, ...)
  o._size, o.size = o.size, nil
  o._steps, o.steps = o.steps, nil
  return setmetatable(o, FuzzedTensor)
end

function FuzzedTensor.default_tensor_constructor(size, dtype)
  if dtype.is_floating_point or dtype.is_complex then return torch.rand(size, { dtype = dtype }) end
  return torch.randint(1, 127, size, { dtype = dtype })
end

-- size, steps and allocation size with the parameters' values, cut or padded (with 1) to the dim
function FuzzedTensor:_get_size_and_steps(params)
  local dim = self.dim_parameter and params[self.dim_parameter] or #self._size
  local function resolve(values)
    local out = {}
    for i = 1, dim do
      local v = values[i]
      if v == nil then out[i] = 1 else out[i] = params[v] ~= nil and params[v] or v end
    end
    return out
  end
  local size, steps = resolve(self._size), resolve(self._steps or {})
  local alloc = {}
  for i = 1, dim do alloc[i] = size[i] * steps[i] end
  return size, steps, alloc
end

local function dtype_size(dtype)
  if dtype == torch.bool then return 1 end
  if dtype.is_floating_point or dtype.is_complex then return torch.finfo(dtype).bits // 8 end
  return torch.iinfo(dtype).bits // 8
end

function FuzzedTensor:satisfies_constraints(params)
  local size, _, alloc = self:_get_size_and_steps(params)
  local n, bytes = 1, dtype_size(self.dtype)
  for _, s in ipairs(size) do n = n * s end
  for _, s in ipairs(alloc) do bytes = bytes * s end
  if self.max_elements and n > self.max_elements then return false end
  if self.min_elements and self.min_elements > n then return false end
  if self.max_allocation_bytes and bytes > self.max_allocation_bytes then return false end
  return true
end

function FuzzedTensor:_make_tensor(params, state)
  local size, steps, alloc = self:_get_size_and_steps(params)
  local raw = (self.tensor_constructor or FuzzedTensor.default_tensor_constructor)(alloc, self.dtype, params)
  if self.cuda then raw = raw:cuda() end
  local dim = #size
  local order = {}
  for i = 1, dim do order[i] = i - 1 end
  if state:random() > self.probability_contiguous then
    local function identity()
      for i = 1, dim do if order[i] ~= i - 1 then return false end end
      return true
    end
    while dim > 1 and identity() do state:shuffle(order) end
    local inverse = {}
    for i, d in ipairs(order) do inverse[d + 1] = i - 1 end
    raw = raw:permute(order):contiguous():permute(inverse)
  end
  local slices = {}
  for d = 1, dim do slices[d] = string.format("0:%d:%d", size[d] * steps[d], steps[d]) end
  local t = dim > 0 and raw[table.concat(slices, ", ")] or raw
  return t, { numel = t:numel(), order = order, steps = steps, is_contiguous = t:is_contiguous(),
    dtype = tostring(self.dtype) }
end

-- ---- Fuzzer ----

local Fuzzer = {}
Fuzzer.__index = function(self, k)
  if k == "rejection_rate" then
    return self._total_generated == 0 and 0.0 or self._rejections / self._total_generated
  end
  return Fuzzer[k]
end
Fuzzer.__name = "Fuzzer"
benchmark.Fuzzer = setmetatable(Fuzzer, { __call = function(cls, ...) return cls.new(...) end })

-- a list whose elements may be lists of cls objects, one level flattened
local function unpack_list(values, cls)
  local out = {}
  for _, v in ipairs(values) do
    if getmetatable(v) == cls then out[#out + 1] = v
    else for _, w in ipairs(v) do out[#out + 1] = w end end
  end
  return out
end

-- Fuzzer(parameters, tensors, constraints, seed)
function Fuzzer.new(...)
  local o = U.parse("Fuzzer", { { "parameters", U.REQUIRED }, { "tensors", U.REQUIRED }, { "constraints" }, { "seed" } }, ...)
  local self = setmetatable({ _seed = o.seed or random.getrandbits(32), _parameters = unpack_list(o.parameters, FuzzedParameter),
    _tensors = unpack_list(o.tensors, FuzzedTensor), _constraints = o.constraints or {}, _rejections = 0,
    _total_generated = 0 }, Fuzzer)
  local names, overlap = {}, {}
  for _, p in ipairs(self._parameters) do names[p.name] = true end
  for _, t in ipairs(self._tensors) do if names[t.name] then overlap[#overlap + 1] = "'" .. t.name .. "'" end end
  if #overlap > 0 then U.errorf("Duplicate names in parameters and tensors: {%s}", table.concat(overlap, ", ")) end
  return self
end

function Fuzzer:_resolve_aliases(params)
  local out, count = {}, 0
  for k, v in pairs(params) do out[k] = v; if is_alias(v) then count = count + 1 end end
  while count > 0 do
    for _, p in ipairs(self._parameters) do
      local v = out[p.name]
      if is_alias(v) then out[p.name] = out[v.alias_to] end
    end
    local new = 0
    for _, v in pairs(out) do if is_alias(v) then new = new + 1 end end
    if new == count then U.errorf("ParameterAlias cycle detected") end
    count = new
  end
  return out
end

function Fuzzer:_generate(state)
  local strict = {}
  for _ = 1, 1000 do
    local cand = {}
    for _, p in ipairs(self._parameters) do
      if p.strict then
        if strict[p.name] == nil then strict[p.name] = p:sample(state) end
        cand[p.name] = strict[p.name]
      else
        cand[p.name] = p:sample(state)
      end
    end
    cand = self:_resolve_aliases(cand)
    self._total_generated = self._total_generated + 1
    local ok = true
    for _, f in ipairs(self._constraints) do if not f(cand) then ok = false; break end end
    if ok then for _, t in ipairs(self._tensors) do if not t:satisfies_constraints(cand) then ok = false; break end end end
    if ok then return cand end
    self._rejections = self._rejections + 1
  end
  U.errorf("Failed to generate a set of valid parameters.")
end

-- take(n): an iterator of n (tensors, tensor_properties, params), each a table keyed by name;
-- the same seed gives the same sequence (torch's seed is drawn from the fuzzer's stream)
function Fuzzer:take(n)
  local state = random.Random(self._seed)
  torch.manual_seed(state:getrandbits(63))
  local i = 0
  return function()
    i = i + 1
    if i > n then return nil end
    local params = self:_generate(state)
    local tensors, props = {}, {}
    for _, t in ipairs(self._tensors) do
      tensors[t.name], props[t.name] = t:_make_tensor(params, state)
    end
    return tensors, props, params
  end
end

-- ---- op_fuzzers.binary.BinaryOpFuzzer: x and y of 1 to 3 dims (powers of two favoured), y
-- sometimes broadcasting, strided steps ----

local MIN_DIM, MAX_DIM = 16, 16 * 1024 * 1024
local POW2 = {}
for i = 4, 24 do POW2[#POW2 + 1] = 1 << i end

local function BinaryOpFuzzer(...)
  local o = U.parse("BinaryOpFuzzer", { { "seed", U.REQUIRED }, { "dtype", torch.float32 }, { "cuda", false } }, ...)
  local pow2 = {}
  for i, s in ipairs(POW2) do pow2[i] = { s, 1 / #POW2 } end
  local params = { FuzzedParameter("dim", { distribution = { { 1, 0.3 }, { 2, 0.4 }, { 3, 0.3 } }, strict = true }) }
  local function add(p) params[#params + 1] = p end
  for i = 0, 2 do add(FuzzedParameter("k_any_" .. i, { minval = MIN_DIM, maxval = MAX_DIM, distribution = "loguniform" })) end
  for i = 0, 2 do add(FuzzedParameter("k_pow2_" .. i, { distribution = pow2 })) end
  for i = 0, 2 do
    add(FuzzedParameter("k" .. i, { distribution = { { ParameterAlias("k_any_" .. i), 0.8 }, { ParameterAlias("k_pow2_" .. i), 0.2 } },
      strict = true }))
  end
  for i = 0, 2 do
    add(FuzzedParameter("y_k" .. i, { distribution = { { ParameterAlias("k" .. i), 0.8 }, { 1, 0.2 } }, strict = true }))
  end
  for i = 0, 2 do
    for _, name in ipairs({ "x", "y" }) do
      add(FuzzedParameter(name .. "_step_" .. i, { distribution = { { 1, 0.8 }, { 2, 0.06 }, { 4, 0.06 }, { 8, 0.04 }, { 16, 0.04 } } }))
    end
  end
  add(FuzzedParameter("random_value", { minval = 0, maxval = (1 << 32) - 1, distribution = "uniform" }))
  local steps = { "x_step_0", "x_step_1", "x_step_2" }
  return Fuzzer(params, {
    FuzzedTensor("x", { size = { "k0", "k1", "k2" }, steps = steps, probability_contiguous = 0.75, min_elements = 4 * 1024,
      max_elements = 32 * 1024 * 1024, max_allocation_bytes = 2 * 1024 * 1024 * 1024, dim_parameter = "dim", dtype = o.dtype, cuda = o.cuda }),
    FuzzedTensor("y", { size = { "y_k0", "y_k1", "y_k2" }, steps = steps, probability_contiguous = 0.75,
      max_allocation_bytes = 2 * 1024 * 1024 * 1024, dim_parameter = "dim", dtype = o.dtype, cuda = o.cuda }),
  }, { seed = o.seed })
end

benchmark.op_fuzzers = { binary = { BinaryOpFuzzer = BinaryOpFuzzer } }

return Fuzzer
