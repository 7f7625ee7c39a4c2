-- torch.special, PyTorch's namespace modeled on SciPy's, and the top-level special functions it
-- shares with torch: lgamma (gammaln), digamma (psi), polygamma, erfinv, i0, xlogy, sinc,
-- igamma / igammac (gammainc / gammaincc), round(decimals=); new in torch.special: expit,
-- logit, erf, erfc, erfcx, exp2, expm1, log1p, log_softmax, softmax, logsumexp, xlog1py, entr,
-- ndtr, ndtri, log_ndtr, multigammaln, i0e, i1, i1e, zeta (Hurwitz), bessel_j0, bessel_j1.
--
-- Everything is made of tensor ops (so every device has it), evaluated in float64 and cast back
-- to the input's float dtype (integers give the default dtype). Functions whose gradient
-- PyTorch defines get exactly that gradient through a small autograd.Function (first
-- derivatives; no double backward); the rest are plain compositions. As in PyTorch, zeta's and
-- gammainc's first argument has no gradient (backward raises) and bessel_j0 / j1 have none.
-- Methods: the series are summed to a fixed number of terms where the count is known (I0, I1,
-- J0, J1, zeta's Euler-Maclaurin tail), or until the last term is negligible (igamma, which
-- checks on the host every few steps).
local torch = require "torch"
local U = require "nn_util"
local Tensor = torch.Tensor

local fail, check_tensor = U.errorf, U.check_tensor
local f64 = torch.float64
local S = torch.special or {}
torch.special = S

local function float_dtype(x) return x:is_floating_point() and x.dtype or torch.get_default_dtype() end

-- f's result written into self (f sees a copy when autograd records)
local function inplace(self, f) return U.maybe_inplace(self, f, true) end

-- torch.name also as x:name(...), and x:name_(...) writing into x
local function install(name)
  Tensor[name] = torch[name]
  Tensor[name .. "_"] = function(self, ...)
    local args = table.pack(...)
    return inplace(self, function(s) return torch[name](s, table.unpack(args, 1, args.n)) end)
  end
end

-- a unary op whose value comes from value(x64) and whose gradient is grad * deriv(x64, y64)
-- (deriv nil: not differentiable, as PyTorch's bessel_j0)
local function special(name, value, deriv)
  local Fn = torch.autograd.Function:extend(name)
  function Fn.forward(ctx, x)
    local y = value(x:to(f64))
    ctx:save_for_backward(x)
    ctx.y = y
    return y:to(float_dtype(x))
  end
  function Fn.backward(ctx, grad)
    local x = table.unpack(ctx.saved_tensors)
    return grad * deriv(x:to(f64), ctx.y):to(grad.dtype)
  end
  return function(x)
    check_tensor(name, "input", 1, x)
    if deriv and x.requires_grad and torch.is_grad_enabled() then return Fn.apply(x) end
    local _ <close> = torch.no_grad()
    return value(x:to(f64)):to(float_dtype(x))
  end
end

-- a binary op (tensors or numbers, broadcast, promoted to a float dtype) whose value comes
-- from value(a64, b64); grads(a64, b64, grad64, need) gives both gradients, where need[i]
-- says whether input i wants one. not_impl[i]: input i has no gradient (backward raises, as
-- PyTorch's not_implemented).
local function binary(name, value, grads, not_impl)
  not_impl = not_impl or {}
  local Fn = torch.autograd.Function:extend(name)
  function Fn.forward(ctx, a, b)
    ctx:save_for_backward(a, b)
    return value(a:to(f64), b:to(f64)):to(a.dtype)
  end
  function Fn.backward(ctx, grad)
    local a, b = table.unpack(ctx.saved_tensors)
    local need = ctx.needs_input_grad
    for i = 1, 2 do
      if need[i] and not_impl[i] then error(string.format("the derivative for '%s' is not implemented.", not_impl[i]), 0) end
    end
    local ga, gb = grads(a:to(f64), b:to(f64), grad:to(f64), need)
    return need[1] and ga:to(a.dtype) or nil, need[2] and gb:to(b.dtype) or nil
  end
  return function(a, b)
    if not torch.is_tensor(a) and not torch.is_tensor(b) then
      fail("%s(): expected a Tensor for one of the arguments, got %s and %s", name, U.typename(a), U.typename(b))
    end
    for i, v in ipairs({ a, b }) do
      if not torch.is_tensor(v) and type(v) ~= "number" then
        fail("%s(): argument %d must be a Tensor or a number, got %s", name, i, U.typename(v))
      end
    end
    local dtype = torch.result_type(a, b)
    if not torch.empty(0, { dtype = dtype }):is_floating_point() then dtype = torch.get_default_dtype() end
    local device = torch.is_tensor(a) and a.device or b.device
    a = torch.is_tensor(a) and a:to(dtype) or torch.full({}, a, { dtype = dtype, device = device })
    b = torch.is_tensor(b) and b:to(dtype) or torch.full({}, b, { dtype = dtype, device = device })
    U.check_broadcast(a, b)
    if (a.requires_grad or b.requires_grad) and torch.is_grad_enabled() then
      return Fn.apply(torch.broadcast_tensors(a, b))
    end
    local _ <close> = torch.no_grad()
    return value(a:to(f64), b:to(f64)):to(dtype)
  end
end

local function wherec(c, v, x) return torch.where(c, torch.full({}, v, { dtype = x.dtype, device = x.device }), x) end

-- Bernoulli numbers B2 .. B16
local B = { 1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510 }
local SHIFT = 12 -- recurrence steps before the asymptotic series (arguments >= 12.5)

-- lgamma for x >= 1/2: below 12, lgamma(x + 12) - log(x (x+1) ... (x+11)); Stirling's
-- series with B2 .. B16 from 12 on (the last term < 1e-17)
local function lgamma_pos(x)
  local small = x:lt(SHIFT)
  local xs = torch.where(small, x, torch.ones_like(x))
  local prod = torch.ones_like(x)
  for j = 0, SHIFT - 1 do prod = prod * (xs + j) end
  local y = torch.where(small, x + SHIFT, x)
  local y2 = 1 / (y * y)
  local s = torch.zeros_like(x)
  for k = #B, 1, -1 do s = (s + B[k] / (2 * k * (2 * k - 1))) * y2 end
  local out = (y - 0.5) * y:log() - y + 0.5 * math.log(2 * math.pi) + s * y
  return torch.where(small, out - prod:log(), out)
end

-- for the reflection formulas: where x < 1/2, f_pos(x) for x >= 1/2 (else at 1 - x), and x with
-- 1/4 where not reflected (so sin / tan of pi x stay finite there)
local function reflect(x, f_pos)
  local refl = x:lt(0.5)
  return refl, f_pos(torch.where(refl, 1 - x, x)), wherec(refl:logical_not(), 0.25, x)
end

-- reflection below 1/2: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
local function lgamma64(x)
  local refl, main, xr = reflect(x, lgamma_pos)
  local r = (math.pi / (xr * math.pi):sin():abs()):log() - main
  local out = torch.where(refl, r, main)
  out = wherec(x:le(0):logical_and(x:eq(x:floor())), math.huge, out)
  -- the series misses 1 and 2 by ~1e-16: PyTorch gives exactly 0 there
  return wherec(x:eq(1):logical_or(x:eq(2)), 0, wherec(x:eq(math.huge), math.huge, out))
end

local function digamma_pos(x) -- x >= 1/2
  local acc = torch.zeros_like(x)
  for j = 0, SHIFT - 1 do acc = acc + 1 / (x + j) end
  local y = x + SHIFT
  local y2 = 1 / (y * y)
  local s = torch.zeros_like(x)
  for k = #B, 1, -1 do s = (s + B[k] / (2 * k)) * y2 end
  return y:log() - 0.5 / y - s - acc
end

local function digamma64(x)
  local refl, main, xr = reflect(x, digamma_pos)
  local out = torch.where(refl, main - math.pi / (xr * math.pi):tan(), main)
  out = wherec(x:le(0):logical_and(x:eq(x:floor())), 0 / 0, out)
  out = wherec(x:eq(0), -math.huge, out)
  return wherec(x:eq(math.huge), math.huge, out)
end

local function factorial(n) local f = 1.0; for i = 2, n do f = f * i end; return f end

-- psi^(n)(x), n >= 1: (-1)^(n+1) n! sum_k 1/(x+k)^(n+1); shifted until x + N >= 12, then
-- the asymptotic series (n-1)!/y^n + n!/(2 y^(n+1)) + sum B2k (2k+n-1)!/(2k)! / y^(2k+n)
local function polygamma64(n, x)
  local lo = x:numel() > 0 and x:min():item() or 0
  if lo ~= lo then lo = 0 end
  local N = math.max(SHIFT, math.ceil(SHIFT - lo))
  local acc = torch.zeros_like(x)
  for j = 0, N - 1 do acc = acc + (x + j):pow(-(n + 1)) end
  local y = x + N
  local s = factorial(n - 1) / y:pow(n) + factorial(n) / (2 * y:pow(n + 1))
  for k = 1, #B do s = s + (B[k] * factorial(2 * k + n - 1) / factorial(2 * k)) / y:pow(2 * k + n) end
  local out = (s + acc * factorial(n)) * ((n + 1) % 2 == 0 and 1 or -1)
  return wherec(x:le(0):logical_and(x:eq(x:floor())), 0 / 0, out)
end

local poly_fns = {}
local function polygamma_fn(n)
  if not poly_fns[n] then
    poly_fns[n] = special("polygamma", function(x) return polygamma64(n, x) end,
      function(x) return polygamma64(n + 1, x) end)
  end
  return poly_fns[n]
end

torch.lgamma = special("lgamma", lgamma64, digamma64)
torch.digamma = special("digamma", digamma64, function(x) return polygamma64(1, x) end)

function torch.polygamma(n, x)
  n = U.check_int("polygamma", "n", n)
  if n < 0 then fail("polygamma(n, x) does not support negative n.") end
  if n == 0 then return torch.digamma(x) end
  return polygamma_fn(n)(x)
end
Tensor.polygamma = function(self, n) return torch.polygamma(n, self) end
Tensor.polygamma_ = function(self, n) return inplace(self, function(s) return torch.polygamma(n, s) end) end

-- erfinv: Giles' single-precision approximation, then Newton steps on erf
local function erfinv64(y)
  local w = -((1 - y) * (1 + y)):log()
  local central = w:lt(5)
  local wc = torch.where(central, w, torch.full({}, 2.5, { dtype = y.dtype, device = y.device })) - 2.5
  local pc = torch.full({}, 2.81022636e-08, { dtype = y.dtype, device = y.device })
  for _, c in ipairs({ 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
    -0.00417768164, 0.246640727, 1.50140941 }) do pc = pc * wc + c end
  local wt = torch.where(central, torch.full({}, 5.0, { dtype = y.dtype, device = y.device }), w):sqrt() - 3
  local pt = torch.full({}, -0.000200214257, { dtype = y.dtype, device = y.device })
  for _, c in ipairs({ 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
    0.00943887047, 1.00167406, 2.83297682 }) do pt = pt * wt + c end
  local x = torch.where(central, pc, pt) * y
  local k = 2 / math.sqrt(math.pi)
  for _ = 1, 4 do
    local d = (torch.erf(x) - y) / (k * (-(x * x)):exp())
    x = x - torch.where(d:isfinite(), d, torch.zeros_like(d))
  end
  x = wherec(y:eq(1), math.huge, x)
  x = wherec(y:eq(-1), -math.huge, x)
  return wherec(y:abs():gt(1), 0 / 0, x)
end
torch.erfinv = special("erfinv", erfinv64, function(_, x) return (x * x):exp() * (math.sqrt(math.pi) / 2) end)


local function full(x, v) return torch.full({}, v, { dtype = x.dtype, device = x.device }) end
local SQRT2, SQRTPI, LOG2PI = math.sqrt(2), math.sqrt(math.pi), math.log(2 * math.pi)

-- ---- error function family ----

-- erfcx(x) = exp(x^2) erfc(x). Below 10: x = hi + lo with hi of 25 bits, so hi^2 is exact and
-- exp(x^2) = exp(hi^2) exp(2 hi lo + lo^2) carries no error from squaring; from 10 on the
-- asymptotic series 1/(x sqrt(pi)) sum (-1)^k (2k-1)!! / (2x^2)^k, 16 terms (the next < 1e-17).
local function erfcx64(x)
  local small = x:lt(10)
  local xs = torch.where(small, x, full(x, 0))
  local hi = (xs * 2 ^ 20):round() / 2 ^ 20
  local lo = xs - hi
  local direct = (hi * hi):exp() * (lo * (2 * hi + lo)):exp() * torch.erfc(xs)
  local xl = torch.where(small, full(x, 10), x)
  local r = 1 / (2 * xl * xl)
  local term, sum = torch.ones_like(x), torch.ones_like(x)
  for k = 1, 16 do
    term = term * r * -(2 * k - 1)
    sum = sum + term
  end
  local out = torch.where(small, direct, sum / (xl * SQRTPI))
  return wherec(x:eq(-math.huge), math.huge, out)
end

-- log of the standard normal CDF: below -1 from erfcx (no underflow), above from log1p
local function log_ndtr64(x)
  local t = x / SQRT2
  local low = x:lt(-1)
  local tl = torch.where(low, t, full(t, -1))
  local th = torch.where(low, full(t, -1), t)
  return torch.where(low, (erfcx64(-tl) / 2):log() - tl * tl, (-torch.erfc(th) / 2):log1p())
end

-- ndtri(p): q = min(p, 1 - p) (exact), Newton's method on log ndtr(x) = log q (concave, so it
-- converges from below, each step x += (log q - log_ndtr(x)) ndtr(x) / pdf(x)), started at
-- sqrt(2) erfinv(2q - 1), or at -sqrt(-2 log q) in the far tail where 2q - 1 rounds to -1
local function ndtri64(p)
  local upper = p:gt(0.5)
  local q = torch.where(upper, 1 - p, p)
  local ok = q:gt(0):logical_and(q:le(0.5))
  q = torch.where(ok, q, full(q, 0.25))
  local tail = q:lt(1e-8)
  local x = torch.where(tail, -(-2 * q:log()):sqrt(), erfinv64(2 * torch.where(tail, full(q, 0.25), q) - 1) * SQRT2)
  local logq = q:log()
  for _ = 1, 8 do
    local l = log_ndtr64(x)
    x = x + (logq - l) * (l + x * x / 2 + LOG2PI / 2):exp()
  end
  x = torch.where(upper, -x, x)
  x = wherec(p:eq(0.5), 0, x)
  x = wherec(p:eq(0), -math.huge, wherec(p:eq(1), math.huge, x))
  return wherec(p:lt(0):logical_or(p:gt(1)):logical_or(p:ne(p)), 0 / 0, x)
end

-- entr(x) = -x log x: 0 at 0, -inf below 0
local function entr64(x)
  local pos = torch.where(x:gt(0), x, full(x, 1))
  return torch.where(x:lt(0), full(x, -math.huge), torch.where(x:eq(0), full(x, 0), -x * pos:log()))
end

-- ---- modified Bessel functions I0, I1 (scaled by exp(-|x|) or not) ----

-- |x| <= 30: the power series sum (x/2)^(2k+nu) / (k! (k+nu)!), 56 terms (all positive; the
-- 50th is below 1e-19 of the sum at 30). Above: Hankel's expansion exp(-x) I_nu(x) =
-- 1/sqrt(2 pi x) sum t_k, t_k = t_(k-1) ((2k-1)^2 - 4 nu^2) / (8 k x), 26 terms (below 1e-19).
-- sum over k < terms of sign^k (x/2)^(2k+nu) / (k! (k+nu)!), nu 0 or 1: I_nu's series (sign 1), J_nu's (-1)
local function bessel_series(x, nu, sign, terms)
  local q = sign * (x * x) / 4
  local term = nu == 0 and torch.ones_like(x) or x / 2
  local sum = term
  for k = 1, terms - 1 do
    term = term * q / (k * (k + nu))
    sum = sum + term
  end
  return sum
end

local function bessel_i(x, nu, scaled)
  local ax = x:abs()
  local small = ax:le(30)
  local xs = torch.where(small, ax, full(x, 0))
  local sum = bessel_series(xs, nu, 1, 57)
  if scaled then sum = sum * (-xs):exp() end
  local xl = torch.where(small, full(x, 31), ax)
  local t, asym = torch.ones_like(x), torch.ones_like(x)
  for k = 1, 26 do
    t = t * ((2 * k - 1) ^ 2 - 4 * nu * nu) / (8 * k * xl)
    asym = asym + t
  end
  asym = asym / (2 * math.pi * xl):sqrt()
  if not scaled then asym = asym * xl:exp() end
  local out = torch.where(small, sum, asym)
  out = wherec(ax:eq(math.huge), scaled and 0 or math.huge, out)
  return nu == 1 and out * x:sign() or out
end

local function i0_64(x) return bessel_i(x, 0, false) end
local function i1_64(x) return bessel_i(x, 1, false) end
local function i0e_64(x) return bessel_i(x, 0, true) end
local function i1e_64(x) return bessel_i(x, 1, true) end

-- d/dx I1 = I0 - I1 / x and d/dx (e^-|x| I1) = e^-|x| I0 - e^-|x| I1 (sign(x) + 1/x): 1/2 at 0
local function not_tiny(x) return x:abs():gt(2 ^ -52) end
local function safe(x) return torch.where(not_tiny(x), x, full(x, 1)) end
torch.i0 = special("i0", i0_64, function(x) return i1_64(x) end)
S.i0e = special("i0e", i0e_64, function(x, y) return i1e_64(x) - x:sign() * y end)
S.i1 = special("i1", i1_64, function(x, y) return wherec(not_tiny(x):logical_not(), 0.5, i0_64(x) - y / safe(x)) end)
S.i1e = special("i1e", i1e_64, function(x, y)
  return wherec(not_tiny(x):logical_not(), 0.5, i0e_64(x) - y * (x:sign() + 1 / safe(x)))
end)

-- ---- Bessel functions of the first kind J0, J1 ----

-- |x| <= 2: the power series (14 terms, alternating, no cancellation to speak of); 2 < |x| < 25:
-- Miller's backward recurrence J_(n-1) = (2n/x) J_n - J_(n+1) from n = 60 (J_61 is below 1e-16
-- at x = 25), normalised by J0 + 2 (J2 + J4 + ...) = 1; |x| >= 25: Hankel's expansion
-- J_nu = sqrt(2 / (pi x)) (P cos chi - Q sin chi), chi = x - (nu/2 + 1/4) pi, 28 terms of the
-- series behind P and Q (the last below 1e-19 at 25). Absolute error about 1e-16, so near
-- the zeros the relative error grows (Cephes' rational forms keep the first zeros relative).
local function bessel_j(x, nu)
  local ax = x:abs()
  local low, high = ax:le(2), ax:ge(25)
  -- power series
  local ser = bessel_series(torch.where(low, ax, full(x, 0)), nu, -1, 15)
  -- Miller's recurrence
  local xm = ax:clamp(2, 25)
  local jp1, j = torch.zeros_like(x), torch.ones_like(x)
  local norm, j1 = 2 * j, nil
  for n = 60, 1, -1 do
    j, jp1 = j * (2 * n) / xm - jp1, j
    if n - 1 == 1 then j1 = j end
    if (n - 1) % 2 == 0 and n > 1 then norm = norm + 2 * j end
  end
  norm = norm + j
  local mid = (nu == 0 and j or j1) / norm
  -- Hankel's expansion
  local xh = torch.where(high, ax, full(x, 25))
  local u, P, Q = torch.ones_like(x), torch.ones_like(x), torch.zeros_like(x)
  for k = 1, 28 do
    u = u * (4 * nu * nu - (2 * k - 1) ^ 2) / (8 * k * xh)
    local sign = (k // 2) % 2 == 0 and 1 or -1 -- P = u0 - u2 + u4 ..., Q = u1 - u3 + ...
    if k % 2 == 0 then P = P + sign * u else Q = Q + sign * u end
  end
  local c, s = xh:cos(), xh:sin()
  local cchi, schi -- cos and sin of x - pi/4 (nu = 0) or x - 3 pi/4 (nu = 1)
  if nu == 0 then cchi, schi = (c + s) / SQRT2, (s - c) / SQRT2 else cchi, schi = (s - c) / SQRT2, -(s + c) / SQRT2 end
  local hank = (2 / (math.pi * xh)):sqrt() * (P * cchi - Q * schi)
  hank = wherec(xh:eq(math.huge), 0, hank)
  local out = torch.where(low, ser, torch.where(high, hank, mid))
  return nu == 1 and out * x:sign() or out
end

S.bessel_j0 = special("bessel_j0", function(x) return bessel_j(x, 0) end)
S.bessel_j1 = special("bessel_j1", function(x) return bessel_j(x, 1) end)

-- ---- Hurwitz zeta ----

-- B2 .. B24 and A_j = (2j)! / B_2j, the Euler-Maclaurin coefficients
local A = {}
do
  local B24 = { 1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798, -174611 / 330,
    854513 / 138, -236364091 / 2730 }
  for j = 1, 12 do A[j] = factorial(2 * j) / B24[j] end
end

-- zeta(x, q) = sum over k >= 0 of (k + q)^-x: the first N + 1 terms (q + N >= 9 and N >= 9),
-- then Euler-Maclaurin's tail at w = q + N with 12 Bernoulli terms (as Cephes' zeta)
local function zeta64(x, q)
  local lo = q:numel() > 0 and q:min():item() or 0
  if lo ~= lo or lo == -math.huge then lo = 0 end
  local N = math.max(9, math.ceil(9 - lo) + 1)
  local s = torch.zeros_like(q)
  for k = 0, N do s = s + (q + k):pow(-x) end
  local w = q + N
  local b = w:pow(-x)
  s = s + b * w / (x - 1) - 0.5 * b
  local a = torch.ones_like(x)
  for j = 1, 12 do
    a = a * (x + (2 * j - 2))
    b = b / w
    s = s + a * b / A[j]
    a = a * (x + (2 * j - 1))
    b = b / w
  end
  local qint = q:le(0):logical_and(q:eq(q:floor()))
  s = wherec(q:lt(0):logical_and(q:ne(q:floor())):logical_and(x:ne(x:floor())), 0 / 0, s)
  s = wherec(qint, math.huge, s)
  return wherec(x:lt(1), 0 / 0, wherec(x:eq(1), math.huge, s))
end

S.zeta = binary("zeta", zeta64, function(x, q, grad) return nil, grad * -x * zeta64(x + 1, q) end, { "zeta" })

-- ---- regularised incomplete gamma ----

-- x^a e^-x / Gamma(a); from a = 10 on as exp(a (log(x / a) - u) + log(a / 2 pi) / 2 - c(a)),
-- u = (x - a) / a, log(x / a) = log1p(u) near 1, c(a) Stirling's correction to lgamma: no large
-- terms cancel
local function igam_factor(a, x)
  local big = a:ge(10)
  local ab = torch.where(big, a, full(a, 10))
  local u = (x - ab) / ab
  local c, y2 = torch.zeros_like(a), 1 / (ab * ab)
  for k = #B, 1, -1 do c = (c + B[k] / (2 * k * (2 * k - 1))) * y2 end
  c = c * ab
  local lxa = torch.where(u:abs():lt(0.5), u:log1p(), (x / ab):log()) -- log(x / a), without 1 + u's rounding far from 1
  local stirling = (ab * (lxa - u) + (ab / (2 * math.pi)):log() / 2 - c):exp()
  local direct = (a * x:log() - x - lgamma64(torch.where(big, full(a, 1), a))):exp()
  return torch.where(big, stirling, direct)
end

-- sums a series or continued fraction step(i) until max |rel(i)| < 1e-16 (checked every 8 steps)
local function until_small(step, rel)
  for i = 1, 20000 do
    step(i)
    if i % 8 == 0 then
      local r = rel():nan_to_num(0, 0, 0)
      if r:numel() == 0 or r:max():item() < 1e-16 then break end
    end
  end
end

-- P(a, x) by its series x^a e^-x / Gamma(a + 1) sum x^n / ((a+1) ... (a+n)) for x <= max(1, a);
-- Q(a, x) by Legendre's continued fraction (modified Lentz) above; the other as 1 minus it
local function igam64(a, x, upper)
  local cf = x:gt(1):logical_and(x:gt(a))
  -- series
  local as, xs = torch.where(cf, full(a, 1), a), torch.where(cf, full(x, 0.5), x)
  local term, sum = torch.ones_like(a), torch.ones_like(a)
  until_small(function(n)
    term = term * xs / (as + n)
    sum = sum + term
  end, function() return term / sum end)
  local P = igam_factor(as, xs) * sum / as
  -- continued fraction
  local ac, xc = torch.where(cf, a, full(a, 1)), torch.where(cf, x, full(x, 2))
  local tiny = 1e-300
  local b = xc + 1 - ac
  local c, d = torch.full(a.shape, 1 / tiny, { dtype = a.dtype, device = a.device }), 1 / b
  local h, del = d, nil
  local settled = torch.zeros(a.shape, { dtype = torch.bool, device = a.device }) -- stop at 1 ulp, so no rounding walk
  until_small(function(i)
    local an = -i * (i - ac)
    b = b + 2
    d = an * d + b
    d = torch.where(d:abs():lt(tiny), full(d, tiny), d)
    c = b + an / c
    c = torch.where(c:abs():lt(tiny), full(c, tiny), c)
    d = 1 / d
    del = d * c
    h = torch.where(settled, h, h * del)
    settled = settled:logical_or((del - 1):abs():le(2 ^ -52))
  end, function() return (del - 1):abs() end)
  local Q = igam_factor(ac, xc) * h
  local out
  if upper then out = torch.where(cf, Q, 1 - P) else out = torch.where(cf, 1 - Q, P) end
  local one, zero = upper and 0 or 1, upper and 1 or 0 -- the value where P = 1 / where P = 0
  out = wherec(x:eq(math.huge), one, out)
  out = wherec(a:eq(math.huge), zero, out)
  out = wherec(x:eq(0), zero, out)
  out = wherec(a:eq(0), one, out)
  local bad = x:lt(0):logical_or(a:lt(0)):logical_or(a:eq(0):logical_and(x:eq(0)))
  bad = bad:logical_or(a:eq(math.huge):logical_and(x:eq(math.huge)))
  return wherec(bad, 0 / 0, out)
end

-- d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) (PyTorch's formula); no gradient for a
local function igam_dx(a, x) return ((a - 1) * x:log() - x - lgamma64(a)):exp() end
S.gammainc = binary("igamma", function(a, x) return igam64(a, x, false) end,
  function(a, x, grad) return nil, grad * igam_dx(a, x) end, { "igamma: input" })
S.gammaincc = binary("igammac", function(a, x) return igam64(a, x, true) end,
  function(a, x, grad) return nil, -grad * igam_dx(a, x) end, { "igammac: input" })
torch.igamma, torch.igammac = S.gammainc, S.gammaincc

-- ---- xlogy, xlog1py ----

-- x * f(y), 0 where x == 0 (unless y is nan); PyTorch's gradients: f(y) for x (0 where x == 0
-- and y <= edge), x f'(y) for y
local function x_times(f, df, edge)
  local function value(x, y)
    return torch.where(x:eq(0):logical_and(y:eq(y)), torch.zeros_like(x), x * f(y))
  end
  local function grads(x, y, g)
    local gx = value(g, y)
    return torch.where(x:eq(0):logical_and(y:le(edge)), torch.zeros_like(gx), gx), g * x * df(y)
  end
  return value, grads
end
torch.xlogy = binary("xlogy", x_times(function(y) return y:log() end, function(y) return 1 / y end, 0))
S.xlog1py = binary("xlog1py", x_times(function(y) return y:log1p() end, function(y) return 1 / (y + 1) end, -1))

-- ---- elementwise compositions ----

-- sinc(x) = sin(pi x) / (pi x), 1 at 0 (its gradient there 0)
function torch.sinc(x)
  check_tensor("sinc", "input", 1, x)
  local px = x * math.pi
  local nz = x:ne(0)
  local safe_px = torch.where(nz, px, torch.ones_like(px))
  return torch.where(nz, safe_px:sin() / safe_px, torch.ones_like(px))
end

-- round(x, {decimals=0}): half to even at 10^-decimals (decimals < 0: to tens, hundreds...)
local c_round = torch.round
function torch.round(x, ...)
  check_tensor("round", "input", 1, x)
  local decimals = select("#", ...) > 0 and U.parse("round", { { "decimals", 0 } }, ...).decimals or 0
  decimals = U.check_int("round", "decimals", decimals)
  if decimals == 0 then return c_round(x) end
  check_tensor("round", "input", 1, x)
  if not x:is_floating_point() then fail("\"round_decimals\" not implemented for '%s'", tostring(x.dtype):gsub("^torch%.", "")) end
  if decimals > 0 then return c_round(x * 10.0 ^ decimals) / 10.0 ^ decimals end
  return c_round(x / 10.0 ^ -decimals) * 10.0 ^ -decimals
end

for _, name in ipairs({ "lgamma", "digamma", "erfinv", "i0", "xlogy", "sinc", "round", "igamma", "igammac" }) do install(name) end

-- ---- the namespace ----

local function alias(name) return function(...) return torch[name](...) end end
for _, pair in ipairs({ { "gammaln", "lgamma" }, { "digamma", "digamma" }, { "psi", "digamma" }, { "polygamma", "polygamma" },
  { "erfinv", "erfinv" }, { "i0", "i0" }, { "expit", "sigmoid" }, { "erf", "erf" }, { "erfc", "erfc" }, { "exp2", "exp2" },
  { "expm1", "expm1" }, { "log1p", "log1p" }, { "log_softmax", "log_softmax" }, { "softmax", "softmax" },
  { "logsumexp", "logsumexp" }, { "xlogy", "xlogy" }, { "sinc", "sinc" }, { "round", "round" }, { "logit", "logit" },
  { "multigammaln", "mvlgamma" } }) do
  S[pair[1]] = alias(pair[2])
end
S.erfcx = special("erfcx", erfcx64, function(x, y) return 2 * x * y - 2 / SQRTPI end)
S.entr = special("entr", entr64, function(x) return -(1 + x:log()) end)
S.log_ndtr = special("log_ndtr", log_ndtr64, function(x, y) return (-(x * x) / 2 - y):exp() / math.sqrt(2 * math.pi) end)
S.ndtri = special("ndtri", ndtri64, function(_, y) return (y * y / 2):exp() * math.sqrt(2 * math.pi) end)
function S.ndtr(x)
  check_tensor("ndtr", "input", 1, x)
  return torch.erfc(-x / SQRT2) / 2
end

-- the builders and Bessel kernels torch_special_more.lua reuses
package.loaded.torch_special_impl = { special = special, bessel_i = bessel_i, bessel_j = bessel_j, full = full }

return torch
