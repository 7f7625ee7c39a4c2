-- The Lua half of torch.Tensor: conversions written in terms of the C methods,
-- and torch.Tensor(...) as a constructor.
local torch = require "torch"
local Tensor = torch.Tensor

local conversions = {
  float = torch.float32, double = torch.float64, half = torch.float16, bfloat16 = torch.bfloat16,
  long = torch.int64, int = torch.int32, short = torch.int16, char = torch.int8, byte = torch.uint8, bool = torch.bool,
  cfloat = torch.complex64, cdouble = torch.complex128,
}
for name, dtype in pairs(conversions) do
  Tensor[name] = function(self) return self:to(dtype) end
end

function Tensor:cpu() return self:to("cpu") end

-- x:cuda(), x:cuda(1), x:cuda("cuda:1"), x:cuda(device, {non_blocking=true})
function Tensor:cuda(device, opts)
  if type(device) == "table" and getmetatable(device) == nil then device, opts = nil, device end
  if device == nil then device = "cuda" end
  if opts then return require("nn_util").call(self.to, self, device, opts) end
  return require("nn_util").call(self.to, self, device)
end

function Tensor:type_as(other) return self:to(other.dtype) end

-- x:type(), x:type(torch.FloatTensor) and the legacy type constructors: torch_legacy_types.lua

-- torch.Tensor(2, 3): an uninitialised float tensor; torch.Tensor({1, 2}): one from data
setmetatable(Tensor, {
  __call = function(_, first, ...)
    if first == nil or (type(first) == "table" and getmetatable(first) == nil and first[1] ~= nil) then
      return torch.tensor(first or {}, {dtype = torch.get_default_dtype()})
    end
    return torch.empty(first, ...)
  end,
})

-- ---- comparisons: equal, isclose, allclose, isnan/isinf/isfinite ----
-- Written with the existing elementwise ops, so they run on any device. equal and
-- allclose return a Lua boolean (one host sync, as in PyTorch); isclose a bool tensor.
local U = require "nn_util"

-- An error at the caller's line, past the library's own frames.
local fail = require("nn_util").errorf

local function dtype_name(t) return U.scalar_name(t.dtype) end

local function check_tensor(fname, name, pos, v)
  if not torch.is_tensor(v) then
    fail("%s(): argument '%s' (position %d) must be Tensor, not %s", fname, name, pos, U.typename(v))
  end
end

function torch.isnan(x) return x:ne(x) end
function torch.isinf(x)
  if x:is_complex() then return torch.isinf(x.real):logical_or(torch.isinf(x.imag)) end
  if not x:is_floating_point() then return torch.zeros_like(x, {dtype = torch.bool}) end
  return x:abs():eq(math.huge)
end
function torch.isfinite(x)
  if x:is_complex() then return torch.isfinite(x.real):logical_and(torch.isfinite(x.imag)) end
  if not x:is_floating_point() then return torch.ones_like(x, {dtype = torch.bool}) end
  return x:eq(x):logical_and(x:abs():ne(math.huge))
end

-- true when a and b have the same shape and equal elements (dtypes may differ; nan is never equal)
function torch.equal(a, b)
  check_tensor("equal", "input", 1, a)
  check_tensor("equal", "other", 2, b)
  if tostring(a.device) ~= tostring(b.device) then
    fail("Cannot compare two tensors on different devices. Got: %s and %s", tostring(a.device), tostring(b.device))
  end
  if a:dim() ~= b:dim() then return false end
  for d = 0, a:dim() - 1 do if a:size(d) ~= b:size(d) then return false end end
  if a:numel() == 0 then return true end
  local _ <close> = torch.no_grad()
  return a:eq(b):all():item()
end

local close_spec = { { "other", U.REQUIRED }, { "rtol", 1e-05 }, { "atol", 1e-08 }, { "equal_nan", false } }

-- |a - b| <= atol + rtol * |b| elementwise (broadcasting), PyTorch's rule: equal values
-- (inf included) are close, nan only with equal_nan, integer inputs compare with tolerance.
function torch.isclose(a, ...)
  local o = U.parse("isclose", close_spec, ...)
  local b = o.other
  check_tensor("isclose", "input", 1, a)
  check_tensor("isclose", "other", 2, b)
  if a.dtype ~= b.dtype then fail("%s did not match %s", dtype_name(a), dtype_name(b)) end
  if o.rtol < 0 then fail("rtol must be greater than or equal to zero, but got %s", U.pyfloat(o.rtol)) end
  if o.atol < 0 then fail("atol must be greater than or equal to zero, but got %s", U.pyfloat(o.atol)) end
  local _ <close> = torch.no_grad()
  local close = a:eq(b)
  if o.equal_nan and a:is_floating_point() then close = close:logical_or(a:ne(a):logical_and(b:ne(b))) end
  if o.rtol == 0 and o.atol == 0 then return close end
  if a.dtype == torch.bool then
    a, b = a:to(torch.get_default_dtype()), b:to(torch.get_default_dtype())
  end
  local allowed = b:mul(o.rtol):abs():add(o.atol)
  local actual = a:sub(b):abs()
  local finite = actual:is_floating_point() and actual:ne(math.huge):logical_and(actual:eq(actual)) or nil
  local within = actual:le(allowed)
  return close:logical_or(finite and finite:logical_and(within) or within)
end

function torch.allclose(a, ...)
  local close = torch.isclose(a, ...)
  if close:numel() == 0 then return true end
  return close:all():item()
end

-- ---- cumsum / cumprod ----
-- An inclusive scan in ceil(log2 n) steps of narrow + op + cat (Hillis-Steele), so it
-- runs on every device and autograd differentiates it (cumprod's gradient is right
-- with zeros, as it is built from products). Integer and bool inputs give int64.
local function scan(fname, op, x, ...)
  check_tensor(fname, "input", 1, x)
  local o = U.parse(fname, { { "dim", U.REQUIRED }, { "dtype", nil } }, ...)
  local dim = math.tointeger(o.dim)
  if dim == nil then fail("%s(): argument 'dim' must be int, not %s", fname, U.typename(o.dim)) end
  local nd = x:dim()
  local span = math.max(nd, 1)
  if dim < -span or dim >= span then
    fail("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -span, span - 1, dim)
  end
  if dim < 0 then dim = dim + span end
  if o.dtype then x = x:to(o.dtype)
  elseif not x:is_floating_point() then x = x:to(torch.int64) end
  local n = nd == 0 and 1 or x:size(dim)
  if n <= 1 then return x:clone() end
  local k = 1
  while k < n do
    x = torch.cat({ x:narrow(dim, 0, k), op(x:narrow(dim, k, n - k), x:narrow(dim, 0, n - k)) }, dim)
    k = k * 2
  end
  return x
end

function torch.cumsum(x, ...) return scan("cumsum", Tensor.add, x, ...) end
function torch.cumprod(x, ...) return scan("cumprod", Tensor.mul, x, ...) end

-- torch.movedim(x, source, destination): the dims at source (an int or a list) moved to
-- destination, the others keeping their order (torch.moveaxis too)
function torch.movedim(x, source, destination)
  local nd = x:dim()
  local src = type(source) == "number" and { source } or source
  local dst = type(destination) == "number" and { destination } or destination
  if #src ~= #dst then
    error(string.format("movedim: Invalid source or destination dims: source (%d dims) should contain the same number of dims as destination (%d dims)", #src, #dst), 2)
  end
  local perm, used, taken = {}, {}, {}
  for i = 1, #src do
    local s, d = src[i] < 0 and src[i] + nd or src[i], dst[i] < 0 and dst[i] + nd or dst[i]
    if s < 0 or s >= nd or d < 0 or d >= nd then
      error(string.format("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -nd, nd - 1, s < 0 or s >= nd and src[i] or dst[i]), 2)
    end
    if used[s] or perm[d + 1] ~= nil then error("movedim: repeated dim in `source` or `destination`", 2) end
    perm[d + 1], used[s] = s, true
  end
  local rest = {}
  for k = 0, nd - 1 do if not used[k] then rest[#rest + 1] = k end end
  local r = 1
  for d = 1, nd do
    if perm[d] == nil then perm[d], r = rest[r], r + 1 end
  end
  return x:permute(perm)
end
torch.moveaxis = torch.movedim

-- PyTorch's argument-type errors, and the inner ops' errors naming the function called
U.check_all(torch, {
  isnan = { "input:Tensor" }, isinf = { "input:Tensor" }, isfinite = { "input:Tensor" }, isclose = {}, allclose = {},
  movedim = { "input:Tensor", "source:ints", "destination:ints" }, moveaxis = { "input:Tensor", "source:ints", "destination:ints" },
})
U.check_all(Tensor, { type_as = { "self", "other:Tensor" } })

for _, name in ipairs({ "isnan", "isinf", "isfinite", "equal", "isclose", "allclose", "cumsum", "cumprod", "movedim", "moveaxis" }) do
  Tensor[name] = torch[name]
end
