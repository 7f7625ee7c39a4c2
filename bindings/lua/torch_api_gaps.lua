-- Top-level torch names PyTorch has that scripts meet: math constants, torch.default_generator,
-- torch-level forms of tensor methods (torch.abs_(x), torch.fill(x, v), torch.detach(x), ...),
-- the *_copy ops (a view's values in new memory), torch.rsub, scalar_tensor, empty_permuted,
-- kaiser_window, poisson, binomial, histogramdd, interop threads and warn_always.
local torch = require "torch"
local U = require "nn_util"
local Tensor = torch.Tensor
local REQ = U.REQUIRED

torch.pi = math.pi
torch.e = math.exp(1)
torch.inf = math.huge
torch.nan = 0.0 / 0.0

-- ---- torch-level forms of tensor methods ----

local function method_form(name)
  return function(input, ...)
    U.check_tensor(name, "input", 1, input)
    return U.call_as(name, input[name], input, ...)
  end
end

for _, name in ipairs({ "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
  "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_",
  "deg2rad_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "gcd_", "i0_", "lcm_", "ldexp_", "log10_",
  "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_",
  "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "fill_", "zero_", "detach", "detach_",
  "index_put_", "resize_as_", "get_device", "is_same_size", "is_signed" }) do
  if torch[name] == nil then torch[name] = method_form(name) end
end

-- fill(input, value): a new tensor like input, filled
function torch.fill(input, value)
  U.check_tensor("fill", "input", 1, input)
  return U.call(torch.full_like, input, value)
end

-- rsub(input, other, {alpha=1}): other - alpha * input
function torch.rsub(...)
  local o = U.parse("rsub", { { "input", REQ }, { "other", REQ }, { "alpha", 1 } }, ...)
  if torch.is_tensor(o.other) then return U.call(torch.sub, o.other, o.input, { alpha = o.alpha }) end
  U.check_tensor("rsub", "input", 1, o.input)
  local scaled = o.alpha == 1 and U.call(torch.neg, o.input) or U.call(torch.mul, o.input, -o.alpha)
  return U.call(torch.add, scaled, o.other)
end

-- scalar_tensor(s, {dtype=, device=, requires_grad=}): a 0-dim tensor, of the default float dtype
function torch.scalar_tensor(s, opts)
  if type(s) ~= "number" and type(s) ~= "boolean" then U.errorf("scalar_tensor: expected a number, got %s", U.typename(s)) end
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.dtype = o.dtype or torch.get_default_dtype()
  return U.call(torch.tensor, s, o)
end

-- empty_permuted(size, physical_layout, opts): size's shape, its memory laid out in
-- physical_layout's order of dims (outermost first)
local empty_permuted
torch.empty_permuted = U.checked("empty_permuted", { "size:ints", "physical_layout:ints" }, function(...) return empty_permuted(...) end)
function empty_permuted(size, layout, opts)
  size = type(size) == "table" and getmetatable(size) == nil and size or torch.Size(size):totable()
  local n = #size
  if type(layout) ~= "table" or #layout ~= n then
    U.errorf("empty_permuted: physical_layout must list the %d dims of size", n)
  end
  local physical, inverse, seen = {}, {}, {}
  for i, d in ipairs(layout) do
    d = U.check_int("empty_permuted", "physical_layout", d)
    if d < 0 or d >= n or seen[d] then U.errorf("empty_permuted: physical_layout must be a permutation of 0..%d", n - 1) end
    seen[d] = true
    physical[i] = size[d + 1]
    inverse[d + 1] = i - 1
  end
  return U.call(torch.empty, physical, opts or {}):permute(inverse)
end

-- kaiser_window(L, periodic=true, beta=12.0, {dtype=, device=}): I0(beta sqrt(1 - r^2)) / I0(beta)
function torch.kaiser_window(...)
  local o = U.parse("kaiser_window", { { "window_length", REQ }, { "periodic", true }, { "beta", 12.0 }, { "dtype" },
    { "device" }, { "layout" }, { "requires_grad", false } }, ...)
  local L = U.check_int("kaiser_window", "window_length", o.window_length)
  if L < 0 then U.errorf("kaiser_window requires non-negative window_length, got window_length=%d", L) end
  local dtype = o.dtype or torch.get_default_dtype()
  if not dtype.is_floating_point then U.errorf("kaiser_window expects floating point dtypes, got: %s", tostring(dtype)) end
  local opts = { dtype = dtype, device = o.device }
  local w
  if L <= 1 then
    w = torch.ones(L, opts)
  else
    local N = o.periodic and L or L - 1 -- a periodic window is the first L of a symmetric L + 1 one
    local half = N / 2
    local r = (torch.arange(L, { dtype = torch.float64, device = o.device }) - half) / half
    w = (torch.i0((1 - r * r):clamp(0):sqrt() * o.beta) / torch.i0(torch.tensor(o.beta, { dtype = torch.float64 }))
      :item()):to(dtype)
  end
  if o.requires_grad then w:requires_grad_(true) end
  return w
end

-- ---- sampling: poisson and binomial (the distributions' samplers) ----

local function sampler(name)
  local H = require("torch_distributions")._h
  require "torch_distributions_discrete"
  return H[name]
end

-- poisson(rates): one Poisson draw per rate, rates' dtype
function torch.poisson(input, generator)
  U.check_tensor("poisson", "input", 1, input)
  if input:lt(0):any():item() then U.error("invalid Poisson rate, expected rate to be non-negative") end
  if generator ~= nil then return torch._with_generator(generator, torch.poisson, input) end
  return sampler("poisson")(input)
end

-- binomial(count, prob): one Binomial(count, prob) draw per element, prob's dtype
function torch.binomial(count, prob, generator)
  U.check_tensor("binomial", "count", 1, count)
  U.check_tensor("binomial", "prob", 2, prob)
  if count.dtype ~= prob.dtype then
    U.errorf("binomial: count and prob must have the same dtype, got %s and %s", U.scalar_name(count.dtype), U.scalar_name(prob.dtype))
  end
  if not prob:is_floating_point() then U.errorf("binomial: expected a floating point dtype, got %s", U.scalar_name(prob.dtype)) end
  if generator ~= nil then return torch._with_generator(generator, torch.binomial, count, prob) end
  local shape = torch.broadcast_shapes(count:size(), prob:size())
  return sampler("binomial")(count:expand(shape), prob:expand(shape))
end

-- ---- *_copy: the view ops' results in memory of their own ----

local function copy_of(v)
  if type(v) == "table" and not torch.is_tensor(v) then
    local out = {}
    for i, t in ipairs(v) do out[i] = t:clone():contiguous() end
    return out
  end
  return v:clone():contiguous()
end

for _, name in ipairs({ "view", "permute", "transpose", "t", "squeeze", "unsqueeze", "expand", "diagonal", "select",
  "split", "split_with_sizes", "unbind", "as_strided", "unfold", "narrow", "view_as_real", "view_as_complex" }) do
  torch[name .. "_copy"] = function(input, ...)
    U.check_tensor(name .. "_copy", "input", 1, input)
    local f = name == "split_with_sizes" and input.split or input[name]
    return copy_of(U.call_as(name .. "_copy", f, input, ...))
  end
end
function torch.alias_copy(input) return U.check_tensor("alias_copy", "input", 1, input):clone() end
function torch.detach_copy(input) return U.check_tensor("detach_copy", "input", 1, input):detach():clone() end

-- slice_copy(input, dim=0, start=nil, end=nil, step=1): Python's input[start:end:step] along dim, copied
function torch.slice_copy(...)
  local o = U.parse("slice_copy", { { "input", REQ }, { "dim", 0 }, { "start" }, { "end" }, { "step", 1 } }, ...)
  local x = U.check_tensor("slice_copy", "input", 1, o.input)
  local dim = U.wrap_dim(o.dim, x:dim())
  local n, step = x:size(dim), U.check_int("slice_copy", "step", o.step)
  if step <= 0 then U.error("slice step must be positive") end
  local function clampi(v, default)
    if v == nil then return default end
    if v < 0 then v = v + n end
    return math.max(0, math.min(n, v))
  end
  local s, e = clampi(o.start, 0), clampi(o["end"], n)
  local idx = torch.arange(s, math.max(s, e), step, { dtype = torch.int64, device = x.device })
  return x:index_select(dim, idx)
end

-- split_with_sizes and the unsafe_ split forms: torch_tensor_gaps.lua

-- ---- histogramdd(input [..., D], bins, {range=, weight=, density=}): counts and per-dim edges ----
local histogramdd
function torch.histogramdd(...) return U.call_as("histogramdd", histogramdd, ...) end -- inner errors under its name
function histogramdd(...)
  local o = U.parse("histogramdd", { { "input", REQ }, { "bins", 10 }, { "range" }, { "weight" }, { "density", false } }, ...)
  local x = U.check_tensor("histogramdd", "input", 1, o.input)
  if not x:is_floating_point() then U.errorf("torch.histogramdd: input tensor and bins tensors should have the same dtype, got %s", U.scalar_name(x.dtype)) end
  local D = x:size(-1)
  local pts = x:reshape(-1, D)
  local N = pts:size(0)
  local edges, counts = {}, {}
  for d = 0, D - 1 do
    local b = type(o.bins) == "table" and o.bins[d + 1] or o.bins
    local col = pts:select(1, d)
    if torch.is_tensor(b) then
      edges[d + 1] = b:to(x.dtype)
    else
      b = U.check_int("histogramdd", "bins", b, 1)
      local lo, hi
      if o.range then lo, hi = o.range[2 * d + 1], o.range[2 * d + 2]
      elseif N > 0 then lo, hi = col:min():item(), col:max():item()
      else lo, hi = 0, 0 end
      if lo > hi then U.errorf("torch.histogramdd: min should not exceed max, but got min %s max %s", tostring(lo), tostring(hi)) end
      if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end -- numpy's and PyTorch's rule for an empty range
      edges[d + 1] = torch.linspace(lo, hi, b + 1, { dtype = x.dtype, device = x.device })
    end
    counts[d + 1] = edges[d + 1]:numel() - 1
  end
  local flat = torch.zeros(N, { dtype = torch.int64, device = x.device })
  local inside = torch.ones(N, { dtype = torch.bool, device = x.device })
  for d = 0, D - 1 do
    local e, col = edges[d + 1], pts:select(1, d):contiguous()
    local lo, hi = e[0]:item(), e[-1]:item()
    inside = inside:logical_and(col:ge(lo)):logical_and(col:le(hi))
    -- bin k holds [e_k, e_k+1), the last bin its right edge too
    local k = (torch.searchsorted(e, col, { right = true }) - 1):clamp(0, counts[d + 1] - 1)
    flat = flat * counts[d + 1] + k
  end
  local total = 1
  for _, c in ipairs(counts) do total = total * c end
  local w = o.weight and o.weight:reshape(-1):to(x.dtype) or torch.ones(N, { dtype = x.dtype, device = x.device })
  w = w * inside:to(x.dtype)
  local hist = torch.zeros(total, { dtype = x.dtype, device = x.device }):index_add_(0, flat, w):view(counts)
  if o.density then
    local vol = torch.ones(counts, { dtype = x.dtype, device = x.device })
    for d = 0, D - 1 do
      local shape = {}
      for i = 1, D do shape[i] = 1 end
      shape[d + 1] = counts[d + 1]
      vol = vol * edges[d + 1]:diff():view(shape)
    end
    hist = hist / (hist:sum() * vol)
  end
  return hist, edges
end

-- ---- threads and warnings ----

-- ops run one after another from the calling thread: there is no inter-op pool to size
function torch.get_num_interop_threads() return 1 end
function torch.set_num_interop_threads(n)
  n = U.check_int("set_num_interop_threads", "n", n)
  if n < 1 then U.error("Number of threads must be positive") end
  if n ~= 1 then
    U.errorf("set_num_interop_threads(%d): nnrepl runs ops one after another (it has no inter-op thread pool); " ..
      "torch.set_num_threads sets the threads each CPU op uses", n)
  end
end

function torch.set_warn_always(b) U.warn_always = b and true or false end
function torch.is_warn_always_enabled() return U.warn_always == true end

-- ---- torch.default_generator: the global generator torch.manual_seed seeds ----

local Default = { __name = "torch.Generator" }
Default.__index = Default
Default.__tostring = function() return "<torch._C.Generator object (torch.default_generator)>" end
function Default:manual_seed(seed) torch.manual_seed(seed); return self end
function Default:initial_seed() return torch.initial_seed() end
function Default:seed() return torch.seed() end
function Default:get_state() return torch.get_rng_state() end
function Default:set_state(state) torch.set_rng_state(state); return self end
torch.default_generator = setmetatable({ device = torch.device("cpu") }, Default)
