-- torch.signal.windows: scipy-style windows of M points, w(M, {sym=true, dtype=, layout=,
-- device=, requires_grad=false, ...}). sym=false gives the periodic window (the first M points
-- of the symmetric M + 1 one, for spectral analysis). Values are computed in float64 and cast
-- to dtype (float32 or float64). Closed forms, n = 0..M-1, D = M - 1 (sym) or M (periodic):
--   bartlett 1 - |2n/D - 1|            cosine sin(pi (n + 1/2) / (D + 1))
--   exponential exp(-|n - center| / tau), center = D / 2 by default (periodic windows only may set it)
--   gaussian exp(-(n - D/2)^2 / (2 std^2))
--   general_cosine sum_i (-1)^i a[i] cos(2 pi i n / D); hann, hamming, general_hamming,
--   blackman, nuttall are general_cosine with their coefficients
--   kaiser I0(beta sqrt(1 - (2n/D - 1)^2)) / I0(beta)
local torch = require "torch"
local U = require "nn_util"

torch.signal = torch.signal or {}
local windows = {}
torch.signal.windows = windows

local f64 = torch.float64
local common = { { "sym", true }, { "dtype" }, { "layout" }, { "device" }, { "requires_grad", false } }

-- M positional, the rest keyword-only (as PyTorch's); f(n, D, o) -> float64 values
local function define(name, extra, check, f)
  local spec = { { "M", U.REQUIRED } }
  for _, s in ipairs(extra) do spec[#spec + 1] = s end
  for _, s in ipairs(common) do spec[#spec + 1] = s end
  windows[name] = function(...)
    local n = select("#", ...)
    local positional = (n > 0 and U.is_opts((select(n, ...)))) and n - 1 or n
    if positional > 1 then U.errorf("%s() takes 1 positional argument but %d were given", name, positional) end
    local o = U.parse(name, spec, ...)
    local M = o.M
    if math.type(M) ~= "integer" and not (type(M) == "number" and M == math.floor(M)) then
      U.errorf("%s: M must be an integer, got %s", name, U.typename(M))
    end
    M = math.tointeger(M)
    if M < 0 then U.errorf("%s requires non-negative window length, got M=%d", name, M) end
    if o.layout ~= nil and o.layout ~= torch.strided then
      U.errorf("%s is implemented for strided tensors only, got: %s", name, tostring(o.layout))
    end
    local dtype = o.dtype or torch.get_default_dtype()
    if dtype ~= torch.float32 and dtype ~= torch.float64 then
      U.errorf("%s expects float32 or float64 dtypes, got: %s", name, tostring(dtype))
    end
    if check then check(o) end
    local opts = { dtype = dtype, device = o.device }
    local w
    if M <= 1 then
      w = torch.ones(M, opts)
    else
      local D = o.sym and M - 1 or M
      w = f(torch.arange(M, { dtype = f64, device = o.device }), D, o):to(dtype)
    end
    if o.requires_grad then w:requires_grad_(true) end
    return w
  end
end

local function general_cosine(n, D, a)
  local w = n * 0
  for i, c in ipairs(a) do
    local s = (i % 2 == 1) and c or -c
    w = w + (n * (2 * math.pi * (i - 1) / D)):cos() * s
  end
  return w
end

local function check_coefficients(o)
  if type(o.a) ~= "table" or torch.is_tensor(o.a) or getmetatable(o.a) ~= nil then
    U.errorf("Coefficients must be a list/tuple, got %s", U.typename(o.a))
  end
  if #o.a == 0 then U.error("Coefficients cannot be empty") end
  for i, c in ipairs(o.a) do
    if type(c) ~= "number" then U.errorf("Coefficients must be numbers, got %s at index %d", U.typename(c), i - 1) end
  end
end

define("general_cosine", { { "a", U.REQUIRED } }, check_coefficients, function(n, D, o) return general_cosine(n, D, o.a) end)
define("general_hamming", { { "alpha", 0.54 } }, nil, function(n, D, o) return general_cosine(n, D, { o.alpha, 1 - o.alpha }) end)
define("hamming", {}, nil, function(n, D) return general_cosine(n, D, { 0.54, 0.46 }) end)
define("hann", {}, nil, function(n, D) return general_cosine(n, D, { 0.5, 0.5 }) end)
define("blackman", {}, nil, function(n, D) return general_cosine(n, D, { 0.42, 0.5, 0.08 }) end)
define("nuttall", {}, nil, function(n, D) return general_cosine(n, D, { 0.3635819, 0.4891775, 0.1365995, 0.0106411 }) end)

define("bartlett", {}, nil, function(n, D) return 1 - (n * (2 / D) - 1):abs() end)
define("cosine", {}, nil, function(n, D) return ((n + 0.5) * (math.pi / (D + 1))):sin() end)

define("exponential", { { "center" }, { "tau", 1.0 } }, function(o)
  if not (o.tau > 0) then U.errorf("Tau must be positive, got: %s instead.", U.pyfloat(o.tau)) end
  if o.sym and o.center ~= nil then U.error("Center must be None for symmetric windows") end
end, function(n, D, o)
  local center = o.center or D / 2
  return ((n - center):abs() * (-1 / o.tau)):exp()
end)

define("gaussian", { { "std", 1.0 } }, function(o)
  if not (o.std > 0) then U.errorf("Standard deviation must be positive, got: %s instead.", U.pyfloat(o.std)) end
end, function(n, D, o)
  local k = (n - D / 2) / o.std
  return (k * k * -0.5):exp()
end)

define("kaiser", { { "beta", 12.0 } }, function(o)
  if not (o.beta >= 0) then U.errorf("beta must be non-negative, got: %s instead.", U.pyfloat(o.beta)) end
end, function(n, D, o)
  local r = n * (2 / D) - 1
  local arg = (1 - r * r):clamp(0):sqrt() * o.beta
  return torch.i0(arg) / torch.i0(torch.tensor(o.beta, { dtype = f64 })):item()
end)

return windows
