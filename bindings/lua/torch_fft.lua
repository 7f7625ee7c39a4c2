-- torch.fft: every transform made of one kernel, torch._fft_c2c (the unnormalized complex DFT
-- along a dim, engine/fft.c) and differentiable tensor ops, so autograd follows from the parts:
-- the real-input transforms keep the first n//2 + 1 bins of the complex one; the Hermitian-input
-- ones rebuild the full spectrum (X[n-k] = conj X[k]) and keep the real part, which ignores the
-- imaginary parts of the self-conjugate bins as PyTorch's C2R does.
local torch = require "torch"
local U = require "nn_util"
local fft = {}
torch.fft = fft

local norms = { backward = true, ortho = true, forward = true }

-- the scale of a forward (inverse = false) or inverse transform of n points under norm
local function scale(norm, n, inverse)
  norm = norm or "backward"
  if not norms[norm] then U.errorf('Invalid normalization mode: "%s"', tostring(norm)) end
  if norm == "ortho" then return 1 / math.sqrt(n) end
  if (norm == "forward") ~= inverse then return 1 / n end
  return 1
end

local function to_complex(x, fname)
  if not torch.is_tensor(x) then U.errorf("%s: expected a Tensor, got %s", fname, type(x)) end
  if x:is_complex() then return x end
  local dt = x.dtype == torch.float64 and torch.complex128
    or (x:is_floating_point() and torch.complex64 or (torch.get_default_dtype() == torch.float64 and torch.complex128 or torch.complex64))
  return x:to(dt)
end

local function real_dtype_input(x, fname)
  if not torch.is_tensor(x) then U.errorf("%s: expected a Tensor, got %s", fname, type(x)) end
  if x:is_complex() then U.errorf("%s expects a real input tensor, but got %s", fname, U.scalar_name(x.dtype)) end
  if not x:is_floating_point() then x = x:to(torch.get_default_dtype()) end
  return x
end

-- x cut or zero-padded to n along dim
local function resize(x, n, dim)
  local have = x:size(dim)
  if n == have then return x end
  if n < 1 then U.errorf("Invalid number of data points (%d) specified", n) end
  if n < have then return x:narrow(dim, 0, n) end
  local shape = x:size():totable()
  shape[dim + 1] = n - have
  return torch.cat({ x, torch.zeros(shape, { dtype = x.dtype, device = x.device }) }, dim)
end

local function wrap(dim, nd)
  if dim < -nd or dim >= nd then
    U.errorf("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -nd, nd - 1, dim)
  end
  return dim < 0 and dim + nd or dim
end

-- one complex transform of x (complex) along dim, resized to n, scaled by norm
local function c2c(x, n, dim, norm, inverse)
  dim = wrap(dim, x:dim())
  n = n or x:size(dim)
  local y = torch._fft_c2c(resize(x, n, dim), dim, inverse)
  local s = scale(norm, n, inverse)
  return s == 1 and y or y * s
end

-- fft(x, n, dim, norm) or fft(x, {n=, dim=, norm=})
local spec1 = { { "n" }, { "dim", -1 }, { "norm" } }
local function args1(fname, ...)
  local o = U.parse(fname, spec1, ...)
  return o.n, o.dim, o.norm
end

function fft.fft(x, ...)
  local n, dim, norm = args1("fft", ...)
  return c2c(to_complex(x, "fft"), n, dim, norm, false)
end

function fft.ifft(x, ...)
  local n, dim, norm = args1("ifft", ...)
  return c2c(to_complex(x, "ifft"), n, dim, norm, true)
end

function fft.rfft(x, ...)
  local n, dim, norm = args1("rfft", ...)
  x = real_dtype_input(x, "rfft")
  dim = wrap(dim, x:dim())
  n = n or x:size(dim)
  return c2c(to_complex(x, "rfft"), n, dim, norm, false):narrow(dim, 0, n // 2 + 1)
end

-- the real signal of n points whose spectrum's first bins are x (along dim): the full spectrum
-- X[n-k] = conj X[k] rebuilt, then the inverse (or forward, for hfft) transform's real part
local function c2r(fname, x, n, dim, norm, inverse)
  x = to_complex(x, fname)
  dim = wrap(dim, x:dim())
  n = n or 2 * (x:size(dim) - 1)
  if n < 1 then U.errorf("Invalid number of data points (%d) specified", n) end
  local half = resize(x, n // 2 + 1, dim)
  local rest = n - (n // 2 + 1) -- bins n//2+1 .. n-1: conjugates of bins n - k, taken from 1 .. rest
  local full = half
  if rest > 0 then full = torch.cat({ half, half:narrow(dim, 1, rest):flip(dim):conj() }, dim) end
  return c2c(full, n, dim, norm, inverse).real
end

function fft.irfft(x, ...)
  local n, dim, norm = args1("irfft", ...)
  return c2r("irfft", x, n, dim, norm, true)
end

local dual = { backward = "forward", forward = "backward", ortho = "ortho" }
local function dual_norm(norm)
  norm = norm or "backward"
  if not norms[norm] then U.errorf('Invalid normalization mode: "%s"', tostring(norm)) end
  return dual[norm]
end

-- hfft(x) = irfft(conj(x)) with the dual norm: a forward transform of a Hermitian signal
function fft.hfft(x, ...)
  local n, dim, norm = args1("hfft", ...)
  return c2r("hfft", to_complex(x, "hfft"):conj(), n, dim, dual_norm(norm), true)
end

function fft.ihfft(x, ...)
  local n, dim, norm = args1("ihfft", ...)
  return fft.rfft(x, n, dim, dual_norm(norm)):conj()
end

-- ---- n-dimensional: the 1-D transforms over each dim in turn ----

-- s and dim as lists (0-based dims); default: every dim, or the last #s
local specn = { { "s" }, { "dim" }, { "norm" } }
local function argsn(fname, x, args, default_dim)
  local o = U.parse(fname, specn, table.unpack(args, 1, args.n))
  local s, dim, norm = o.s, o.dim or default_dim, o.norm
  if s ~= nil and type(s) ~= "table" then s = s:totable() end
  if type(dim) == "number" then dim = { dim } end
  local nd = x:dim()
  if dim == nil then
    dim = {}
    if s then for i = 1, #s do dim[i] = nd - #s + i - 1 end
    else for i = 1, nd do dim[i] = i - 1 end end
  end
  if s and #s ~= #dim then U.errorf("When given, dim and shape arguments must have the same length") end
  local ds = {}
  for i, d in ipairs(dim) do ds[i] = wrap(d, nd) end
  if s then -- a size of -1: that dim's own size
    local given = s
    s = {}
    for i, n in ipairs(given) do s[i] = n == -1 and x:size(ds[i]) or n end
  end
  return s, ds, norm
end

local function cn(fname, x, args, inverse, default_dim)
  x = to_complex(x, fname)
  local s, dim, norm = argsn(fname, x, args, default_dim)
  for i, d in ipairs(dim) do x = c2c(x, s and s[i] or x:size(d), d, norm, inverse) end
  return x
end

local two = { -2, -1 }
function fft.fftn(x, ...) return cn("fftn", x, table.pack(...), false) end
function fft.ifftn(x, ...) return cn("ifftn", x, table.pack(...), true) end
function fft.fft2(x, ...) return cn("fft2", x, table.pack(...), false, two) end
function fft.ifft2(x, ...) return cn("ifft2", x, table.pack(...), true, two) end

local function rn(fname, x, args, default_dim)
  x = real_dtype_input(x, fname)
  local s, dim, norm = argsn(fname, x, args, default_dim)
  local last = #dim
  local y = fft.rfft(x, s and s[last] or nil, dim[last], norm)
  for i = 1, last - 1 do y = c2c(y, s and s[i] or y:size(dim[i]), dim[i], norm, false) end
  return y
end

local function irn(fname, x, args, default_dim)
  x = to_complex(x, fname)
  local s, dim, norm = argsn(fname, x, args, default_dim)
  local last = #dim
  for i = 1, last - 1 do x = c2c(x, s and s[i] or x:size(dim[i]), dim[i], norm, true) end
  return c2r(fname, x, s and s[last] or nil, dim[last], norm, true)
end

function fft.rfftn(x, ...) return rn("rfftn", x, table.pack(...)) end
function fft.irfftn(x, ...) return irn("irfftn", x, table.pack(...)) end
function fft.rfft2(x, ...) return rn("rfft2", x, table.pack(...), two) end
function fft.irfft2(x, ...) return irn("irfft2", x, table.pack(...), two) end

-- hfftn(x) = irfftn(conj(x)) under the dual norm: the real n-D transform of the Hermitian signal
-- whose last dim's first half is x; ihfftn(x) = conj(rfftn(x)) under the dual norm
local function hn(fname, x, args, default_dim)
  x = to_complex(x, fname):conj()
  local o = U.parse(fname, specn, table.unpack(args, 1, args.n))
  return irn(fname, x, table.pack(o.s, o.dim, dual_norm(o.norm)), default_dim)
end

local function ihn(fname, x, args, default_dim)
  local o = U.parse(fname, specn, table.unpack(args, 1, args.n))
  return rn(fname, x, table.pack(o.s, o.dim, dual_norm(o.norm)), default_dim):conj()
end

function fft.hfftn(x, ...) return hn("hfftn", x, table.pack(...)) end
function fft.ihfftn(x, ...) return ihn("ihfftn", x, table.pack(...)) end
function fft.hfft2(x, ...) return hn("hfft2", x, table.pack(...), two) end
function fft.ihfft2(x, ...) return ihn("ihfft2", x, table.pack(...), two) end

-- ---- frequencies and shifts ----

-- the sample frequencies of an n-point transform with sample spacing d
function fft.fftfreq(n, d, opts)
  if type(d) == "table" then d, opts = nil, d end
  d = d or 1.0
  local k = torch.arange(n, opts)
  if not k:is_floating_point() then k = k:to(opts and opts.dtype or torch.get_default_dtype()) end
  local f = torch.where(torch.arange(n):lt((n + 1) // 2), k, k - n)
  return f / (d * n)
end

function fft.rfftfreq(n, d, opts)
  if type(d) == "table" then d, opts = nil, d end
  d = d or 1.0
  local k = torch.arange(n // 2 + 1, opts)
  if not k:is_floating_point() then k = k:to(opts and opts.dtype or torch.get_default_dtype()) end
  return k / (d * n)
end

local function shift(x, dim, sign)
  local dims = dim
  if dims == nil then dims = {} for i = 1, x:dim() do dims[i] = i - 1 end end
  if type(dims) == "number" then dims = { dims } end
  local shifts = {}
  for i, d in ipairs(dims) do
    local n = x:size(d)
    shifts[i] = sign > 0 and n // 2 or -(n // 2)
  end
  return torch.roll(x, shifts, dims)
end

function fft.fftshift(x, dim) return shift(x, dim, 1) end
function fft.ifftshift(x, dim) return shift(x, dim, -1) end

return torch
