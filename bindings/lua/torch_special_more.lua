-- The rest of torch.special: Bessel functions of the second kind bessel_y0 / y1, the modified
-- ones modified_bessel_i0 / i1 / k0 / k1 and scaled_modified_bessel_k0 / k1,
-- spherical_bessel_j0, airy_ai, and the orthogonal polynomials (chebyshev_polynomial_t/u/v/w,
-- their shifted_ forms, hermite_polynomial_h / he, laguerre_polynomial_l, legendre_polynomial_p).
-- Tensor ops only (every device), as torch_special.lua. None has a gradient, as in PyTorch
-- (their results do not require grad). The Bessel and Airy functions are evaluated in float64
-- and cast back; the polynomials run in the result dtype, with PyTorch's special cases
-- (n < 0 gives 0, |x| = 1 exactly, the trigonometric forms for |x| < 1 and large n, Hermite's
-- NaN above n = 128 (float32) / 512 (float64)).
local torch = require "torch"
require "torch_special"
local U = require "nn_util"
local impl = package.loaded.torch_special_impl
local S = torch.special
local special, bessel_i, full = impl.special, impl.bessel_i, impl.full
local f64 = torch.float64
local EULER = 0.57721566490153286061
local PI = math.pi

local function wherec(c, v, x) return torch.where(c, full(x, v), x) end

-- ---- Bessel functions of the second kind Y0, Y1 ----

-- x <= 2: the series Y0 = (2/pi) (ln(x/2) + gamma) J0 + (2/pi) sum (-1)^(k+1) H_k q^k / k!^2,
-- Y1 = -2/(pi x) + (2/pi) ln(x/2) J1 - (1/pi) sum (-1)^k (psi(k+1) + psi(k+2)) (x/2)^(2k+1) / (k! (k+1)!),
-- q = x^2/4, H_k the harmonic numbers (20 terms, below 1e-20 at x = 2).
local function y_series(x)
  local q = x * x / 4
  local lg = (x / 2):log() + EULER
  local t0, t1 = torch.ones_like(x), x / 2 -- q^k / k!^2 and (x/2)^(2k+1) / (k! (k+1)!)
  local j0, j1 = t0, t1
  local s0, s1 = torch.zeros_like(x), t1 * (1 - 2 * EULER) -- psi(1) + psi(2) = 1 - 2 gamma
  local H = 0 -- H_k
  for k = 1, 20 do
    H = H + 1 / k
    t0 = -t0 * q / (k * k)
    t1 = -t1 * q / (k * (k + 1))
    j0, j1 = j0 + t0, j1 + t1
    s0 = s0 - t0 * H -- (-1)^(k+1) H_k |t0|, t0 carrying (-1)^k
    s1 = s1 + t1 * (2 * H + 1 / (k + 1) - 2 * EULER)
  end
  local y0 = (2 / PI) * (lg * j0 + s0)
  local y1 = -2 / (PI * x) + (2 / PI) * ((x / 2):log() * j1) - s1 / PI
  return y0, y1
end

-- 2 < x < 25: Miller's backward recurrence from n = 60 for J_n (unnormalised j_n), with
-- Neumann's series Y0 = (2/pi)(ln(x/2) + gamma) J0 - (4/pi) sum (-1)^k J_2k / k and its
-- derivative Y1 = -Y0' = -(2/pi) J0 / x + (2/pi)(ln(x/2) + gamma) J1
--   + (2/pi) sum (-1)^k (J_(2k-1) - J_(2k+1)) / k, normalised by J0 + 2 sum J_2k = 1.
local function y_miller(x)
  local jp1, j = torch.zeros_like(x), torch.full(x:size(), 1e-30, { dtype = x.dtype, device = x.device })
  local norm, w0, w1 = torch.zeros_like(x), torch.zeros_like(x), torch.zeros_like(x)
  for n = 60, 1, -1 do
    local jm1 = j * (2 * n) / x - jp1 -- j_(n-1)
    -- j is j_n, jp1 j_(n+1), jm1 j_(n-1)
    if n % 2 == 0 then
      local k = n // 2
      local sgn = k % 2 == 0 and 1 or -1
      norm = norm + 2 * j
      w0 = w0 + sgn * j / k
      w1 = w1 + sgn * (jm1 - jp1) / k
    end
    jp1, j = j, jm1
  end
  local j0, j1 = j, jp1
  norm = norm + j0
  j0, j1, w0, w1 = j0 / norm, j1 / norm, w0 / norm, w1 / norm
  local lg = (x / 2):log() + EULER
  local y0 = (2 / PI) * lg * j0 - (4 / PI) * w0
  local y1 = -(2 / PI) * j0 / x + (2 / PI) * lg * j1 + (2 / PI) * w1
  return y0, y1
end

-- x >= 25: Hankel's expansion Y_nu = sqrt(2/(pi x)) (P sin chi + Q cos chi), chi = x - (nu/2 + 1/4) pi
local function hankel_pq(x, nu)
  local u, P, Q = torch.ones_like(x), torch.ones_like(x), torch.zeros_like(x)
  for k = 1, 28 do
    u = u * (4 * nu * nu - (2 * k - 1) ^ 2) / (8 * k * x)
    local sign = (k // 2) % 2 == 0 and 1 or -1
    if k % 2 == 0 then P = P + sign * u else Q = Q + sign * u end
  end
  return P, Q
end

local function bessel_y(x, nu)
  local low, high = x:le(2), x:ge(25)
  local y0s, y1s = y_series(torch.where(low, x, full(x, 1)))
  local y0m, y1m = y_miller(x:clamp(2, 25))
  local xh = torch.where(high, x, full(x, 25))
  local P, Q = hankel_pq(xh, nu)
  local chi = xh - (nu / 2 + 0.25) * PI
  local hank = (2 / (PI * xh)):sqrt() * (P * chi:sin() + Q * chi:cos())
  hank = wherec(xh:eq(math.huge), 0, hank)
  local out = torch.where(low, nu == 0 and y0s or y1s, torch.where(high, hank, nu == 0 and y0m or y1m))
  out = wherec(x:eq(0), -math.huge, out)
  return wherec(x:lt(0), 0 / 0, out)
end

S.bessel_y0 = special("bessel_y0", function(x) return bessel_y(x, 0) end)
S.bessel_y1 = special("bessel_y1", function(x) return bessel_y(x, 1) end)

-- ---- modified Bessel functions ----

S.modified_bessel_i0 = special("modified_bessel_i0", function(x) return bessel_i(x, 0, false) end)
S.modified_bessel_i1 = special("modified_bessel_i1", function(x) return bessel_i(x, 1, false) end)

-- K_nu(x) e^x for x > 0 (nu 0 or 1). x <= 2: the series
--   K0 = -(ln(x/2) + gamma) I0 + sum H_k q^k / k!^2,
--   K1 = 1/x + ln(x/2) I1 - (x/4) sum (psi(k+1) + psi(k+2)) q^k / (k! (k+1)!), q = x^2/4;
-- 2 < x < 25: the trapezoidal rule (step 0.1 to t = 4.5; exponentially accurate for this
-- smooth, fast-decaying integrand) on e^x K_nu(x) = int_0^inf e^(-x (cosh t - 1)) cosh(nu t) dt;
-- x >= 25: e^x K_nu ~ sqrt(pi/(2x)) sum a_k, a_k = a_(k-1) (4 nu^2 - (2k-1)^2) / (8 k x) (-1)^0.
local function bessel_k_scaled(x, nu)
  local low, high = x:le(2), x:ge(25)
  -- series
  local xs = torch.where(low, x, full(x, 1))
  local q = xs * xs / 4
  local t, sum = torch.ones_like(xs), nil
  local H = 0
  if nu == 0 then
    sum = torch.zeros_like(xs)
    for k = 1, 22 do
      H = H + 1 / k
      t = t * q / (k * k)
      sum = sum + t * H
    end
    sum = sum - ((xs / 2):log() + EULER) * bessel_i(xs, 0, false)
  else
    sum = t * (1 - 2 * EULER)
    for k = 1, 22 do
      H = H + 1 / k
      t = t * q / (k * (k + 1))
      sum = sum + t * (2 * H + 1 / (k + 1) - 2 * EULER)
    end
    sum = 1 / xs + (xs / 2):log() * bessel_i(xs, 1, false) - xs / 4 * sum
  end
  local ser = sum * xs:exp()
  -- trapezoid
  local xm = x:clamp(2, 25)
  local h = 0.1
  local trap = torch.zeros_like(x)
  for i = 0, 45 do
    local ti = i * h
    local term = (-(math.cosh(ti) - 1) * xm):exp() * math.cosh(nu * ti)
    trap = trap + (i == 0 and 0.5 or 1) * term
  end
  trap = trap * h
  -- asymptotic
  local xh = torch.where(high, x, full(x, 25))
  local a, asum = torch.ones_like(x), torch.ones_like(x)
  for k = 1, 30 do
    a = a * (4 * nu * nu - (2 * k - 1) ^ 2) / (8 * k * xh)
    asum = asum + a
  end
  local asym = (PI / (2 * xh)):sqrt() * asum
  asym = wherec(xh:eq(math.huge), 0, asym)
  local out = torch.where(low, ser, torch.where(high, asym, trap))
  out = wherec(x:eq(0), math.huge, out)
  return wherec(x:lt(0), 0 / 0, out)
end

local function bessel_k(x, nu)
  local out = bessel_k_scaled(x, nu) * (-x):exp()
  return wherec(x:eq(0), math.huge, out) -- inf * 1, kept
end

S.modified_bessel_k0 = special("modified_bessel_k0", function(x) return bessel_k(x, 0) end)
S.modified_bessel_k1 = special("modified_bessel_k1", function(x) return bessel_k(x, 1) end)
S.scaled_modified_bessel_k0 = special("scaled_modified_bessel_k0", function(x) return bessel_k_scaled(x, 0) end)
S.scaled_modified_bessel_k1 = special("scaled_modified_bessel_k1", function(x) return bessel_k_scaled(x, 1) end)

-- spherical_bessel_j0(x) = sin(x) / x; its Taylor series below |x| = 0.5, 0 at +-inf
S.spherical_bessel_j0 = special("spherical_bessel_j0", function(x)
  local small = x:abs():lt(0.5)
  local x2 = x * x
  local t, ser = torch.ones_like(x), torch.ones_like(x)
  for k = 1, 8 do
    t = -t * x2 / ((2 * k) * (2 * k + 1))
    ser = ser + t
  end
  local xs = torch.where(small, full(x, 1), x)
  local out = torch.where(small, ser, xs:sin() / xs)
  return wherec(x:abs():eq(math.huge), 0, out)
end)

-- ---- Airy function Ai ----

-- |x| <= 10: Taylor series about the nearest anchor x0 (a multiple of 1/2), from Ai(x0) and
-- Ai'(x0), with the coefficients of Ai'' = x Ai: (k+2)(k+1) c_(k+2) = x0 c_k + c_(k-1).
-- The anchors are computed once in plain Lua: downwards from 0 (Ai(0), Ai'(0) known), and
-- downwards from 10 (Ai's asymptotic series there), the stable directions.
-- |x| > 10: the asymptotic series with zeta = (2/3) |x|^(3/2) (relative error below 1e-18).
local AI0, AIP0 = 0.35502805388781723926, -0.25881940379280679840

-- u_k of the Airy expansions: u_k = u_(k-1) (6k-5)(6k-3)(6k-1) / (216 k (2k-1))
local UK = { [0] = 1 }
for k = 1, 30 do UK[k] = UK[k - 1] * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / (216 * k * (2 * k - 1)) end

-- Ai(x), Ai'(x) for a plain number x >= 10
local function airy_asym_pos(x)
  local z = 2 / 3 * x ^ 1.5
  local sa, sd = 0, 0
  for k = 0, 30 do
    local s = (k % 2 == 0 and 1 or -1) / z ^ k
    sa = sa + s * UK[k]
    sd = sd + s * (k == 0 and 1 or -(6 * k + 1) / (6 * k - 1) * UK[k])
  end
  local e = math.exp(-z) / (2 * math.sqrt(PI))
  return e * x ^ -0.25 * sa, -e * x ^ 0.25 * sd
end

-- one Taylor step from (x0, Ai(x0), Ai'(x0)) by dx
local function taylor_step(x0, a, b, dx)
  local c = { [0] = a, [1] = b, [2] = x0 * a / 2 }
  local va, vd = a + b * dx + c[2] * dx * dx, b + 2 * c[2] * dx
  for k = 1, 60 do
    c[k + 2] = (x0 * c[k] + c[k - 1]) / ((k + 2) * (k + 1))
    va = va + c[k + 2] * dx ^ (k + 2)
    vd = vd + (k + 2) * c[k + 2] * dx ^ (k + 1)
  end
  return va, vd
end

local anchors -- {Ai, Ai'} at x0 = -10, -9.5, ..., 10 (index 1..41)
local function airy_anchors()
  if anchors then return anchors end
  local ai, aip = {}, {}
  ai[21], aip[21] = AI0, AIP0
  for i = 20, 1, -1 do ai[i], aip[i] = taylor_step((i - 20) / 2, ai[i + 1], aip[i + 1], -0.5) end
  ai[41], aip[41] = airy_asym_pos(10)
  for i = 40, 22, -1 do ai[i], aip[i] = taylor_step((i - 20) / 2, ai[i + 1], aip[i + 1], -0.5) end
  anchors = { ai, aip }
  return anchors
end

local function airy_ai64(x)
  local an = airy_anchors()
  local mid = x:abs():le(10)
  local xm = torch.where(mid, x, full(x, 0))
  local idx = ((xm + 10) * 2):round():clamp(0, 40):to(torch.int64)
  local x0 = idx:to(f64) / 2 - 10
  local dx = xm - x0
  local A = torch.tensor(an[1], { dtype = f64, device = x.device })
  local D = torch.tensor(an[2], { dtype = f64, device = x.device })
  local flat = idx:reshape(-1)
  local c0 = A:index_select(0, flat):reshape(x:size())
  local c1 = D:index_select(0, flat):reshape(x:size())
  local cm1, ck, ck1 = c0, c1, x0 * c0 / 2 -- c_(k-1), c_k, c_(k+1) for k = 1
  local sum = c0 + c1 * dx + ck1 * dx * dx
  local p = dx * dx
  for k = 1, 34 do
    local c = (x0 * ck + cm1) / ((k + 2) * (k + 1)) -- c_(k+2)
    p = p * dx
    sum = sum + c * p
    cm1, ck, ck1 = ck, ck1, c
  end
  -- large x > 10: Ai ~ e^-z / (2 sqrt(pi) x^(1/4)) sum (-1)^k u_k z^-k
  local xp = torch.where(x:gt(10), x, full(x, 11))
  local zp = xp:pow(1.5) * (2 / 3)
  local sp, zk = torch.ones_like(x), torch.ones_like(x)
  for k = 1, 30 do
    zk = -zk / zp
    sp = sp + zk * UK[k]
  end
  local pos = (-zp):exp() / (2 * math.sqrt(PI)) * xp:pow(-0.25) * sp
  -- large x < -10: Ai(-y) ~ y^(-1/4) / sqrt(pi) (sin(z + pi/4) P - cos(z + pi/4) Q)
  local yn = torch.where(x:lt(-10), -x, full(x, 11))
  local zn = yn:pow(1.5) * (2 / 3)
  local P, Q, zi = torch.ones_like(x), torch.zeros_like(x), torch.ones_like(x)
  for k = 1, 30 do
    zi = zi / zn
    local sign = (k // 2) % 2 == 0 and 1 or -1
    if k % 2 == 0 then P = P + sign * UK[k] * zi else Q = Q + sign * UK[k] * zi end
  end
  local th = zn + PI / 4
  local neg = yn:pow(-0.25) / math.sqrt(PI) * (th:sin() * P - th:cos() * Q)
  local out = torch.where(mid, sum, torch.where(x:gt(0), pos, neg))
  out = wherec(x:gt(103.892), 0, out)
  return wherec(x:abs():eq(math.huge):logical_or(x:ne(x)), 0 / 0, out)
end

S.airy_ai = special("airy_ai", airy_ai64)

-- ---- orthogonal polynomials ----

-- x and n (tensors or numbers, one a tensor) broadcast and promoted to a float dtype
local function poly_args(name, x, n)
  if not torch.is_tensor(x) and not torch.is_tensor(n) then
    U.errorf("%s(): expected a Tensor for x or n, got %s and %s", name, U.typename(x), U.typename(n))
  end
  for i, v in ipairs({ x, n }) do
    if not torch.is_tensor(v) and type(v) ~= "number" then
      U.errorf("%s(): argument %d must be a Tensor or a number, got %s", name, i, U.typename(v))
    end
  end
  local dtype = torch.result_type(x, n)
  if not torch.empty(0, { dtype = dtype }):is_floating_point() then dtype = torch.get_default_dtype() end
  local device = torch.is_tensor(x) and x.device or n.device
  x = torch.is_tensor(x) and x:detach():to(dtype) or torch.full({}, x, { dtype = dtype, device = device })
  n = torch.is_tensor(n) and n:detach():to(dtype) or torch.full({}, n, { dtype = dtype, device = device })
  x, n = torch.broadcast_tensors(x, n)
  return x, n:trunc()
end

-- poly(name, spec): spec.first(x) is P_1; spec.step(k, x, p, q) is P_k from p = P_(k-2),
-- q = P_(k-1); spec.cases(x, n) lists {mask, value} pairs ahead of the recurrence, the first
-- matching one winning (values tensors or numbers).
local function poly(name, spec)
  return function(x, n)
    x, n = poly_args(name, x, n)
    local _ <close> = torch.no_grad()
    local cases = spec.cases(x, n)
    table.insert(cases, 1, { n:lt(0), 0 })
    cases[#cases + 1] = { n:eq(0), 1 }
    cases[#cases + 1] = { n:eq(1), spec.first(x) }
    local taken = torch.zeros(x:size(), { dtype = torch.bool, device = x.device })
    for _, c in ipairs(cases) do taken = taken:logical_or(c[1]) end
    -- the recurrence, as far as the largest n it is needed for
    local rest = torch.where(taken, full(n, 0), n)
    local top = rest:numel() > 0 and rest:max():item() or 0
    local p, q = torch.ones_like(x), spec.first(x)
    for k = 2, top do
      local r = spec.step(k, x, p, q)
      local live = n:ge(k)
      p, q = torch.where(live, q, p), torch.where(live, r, q)
    end
    local out = q
    for i = #cases, 1, -1 do
      local v = cases[i][2]
      out = torch.where(cases[i][1], torch.is_tensor(v) and v or full(x, v), out)
    end
    return out
  end
end

local function odd(n) return n:remainder(2):ne(0) end

-- the cases of a Chebyshev kind: its value at |x| = 1 edge(x, n), and trig(x, n, theta) for
-- |x| < 1 and n > cut
local function cheb_cases(edge, trig)
  return function(cut)
    return function(x, n)
      local th = x:clamp(-1, 1):acos()
      return { { x:abs():eq(1), edge(x, n) }, { n:gt(cut):logical_and(x:abs():lt(1)), trig(x, n, th) } }
    end
  end
end
local function even_or_pos(x, n) return x:gt(0):logical_or(odd(n):logical_not()) end
local function alt(n) return torch.where(odd(n), -(2 * n + 1), 2 * n + 1) end -- (-1)^n (2n + 1)

local cheb_t_cases = cheb_cases(function(x, n) return torch.where(even_or_pos(x, n), full(x, 1), full(x, -1)) end,
  function(_, n, th) return (n * th):cos() end)
local cheb_u_cases = cheb_cases(function(x, n) return torch.where(even_or_pos(x, n), n + 1, -(n + 1)) end,
  function(x, n, th)
    local s = th:sin()
    return torch.where(s:ne(0), ((n + 1) * th):sin() / s, (n + 1) * ((n + 1) * th):cos() / x)
  end)
local cheb_v_cases = cheb_cases(function(x, n) return torch.where(x:gt(0), full(x, 1), alt(n)) end,
  function(_, n, th) return torch.where((th / 2):sin():ne(1), ((n + 0.5) * th):cos() / (th / 2):cos(), alt(n)) end)
local function w_ends(x, n) return torch.where(x:gt(0), 2 * n + 1, torch.where(odd(n), full(x, -1), full(x, 1))) end
local cheb_w_cases = cheb_cases(w_ends,
  function(x, n, th) return torch.where((th / 2):cos():ne(1), ((n + 0.5) * th):sin() / (th / 2):sin(), w_ends(x, n)) end)

local function cheb_step(_, x, p, q) return (x + x) * q - p end
local CHEB = {
  t = { first = function(x) return x end, cases = cheb_t_cases },
  u = { first = function(x) return x + x end, cases = cheb_u_cases },
  v = { first = function(x) return x + x - 1 end, cases = cheb_v_cases },
  w = { first = function(x) return x + x + 1 end, cases = cheb_w_cases },
}
for kind, c in pairs(CHEB) do
  local cut = kind == "t" and 6 or 8
  S["chebyshev_polynomial_" .. kind] = poly("chebyshev_polynomial_" .. kind, { first = c.first, step = cheb_step, cases = c.cases(cut) })
  -- the shifted polynomial at x is the plain one at 2x - 1 (PyTorch's threshold 6 throughout)
  local base = poly("shifted_chebyshev_polynomial_" .. kind, { first = c.first, step = cheb_step, cases = c.cases(6) })
  S["shifted_chebyshev_polynomial_" .. kind] = function(x, n)
    local xs, ns = poly_args("shifted_chebyshev_polynomial_" .. kind, x, n)
    return base(xs + xs - 1, ns)
  end
end

local function hermite_limit(x) return x.dtype == torch.float64 and 512 or 128 end

-- physicists' H_k = 2x H_(k-1) - 2(k-1) H_(k-2)
S.hermite_polynomial_h = poly("hermite_polynomial_h", {
  first = function(x) return x + x end,
  step = function(k, x, p, q) return (x + x) * q - (2 * (k - 1)) * p end,
  cases = function(x, n) return { { n:gt(hermite_limit(x)), 0 / 0 } } end,
})

-- probabilists' He_k = x He_(k-1) - (k-1) He_(k-2)
S.hermite_polynomial_he = poly("hermite_polynomial_he", {
  first = function(x) return x end,
  step = function(k, x, p, q) return x * q - (k - 1) * p end,
  cases = function(x, n) return { { n:gt(hermite_limit(x)), 0 / 0 } } end,
})

-- k L_k = (2k - 1 - x) L_(k-1) - (k-1) L_(k-2); L_n(0) = 1
S.laguerre_polynomial_l = poly("laguerre_polynomial_l", {
  first = function(x) return 1 - x end,
  step = function(k, x, p, q) return ((2 * (k - 1) + (1 - x)) * q - (k - 1) * p) / k end,
  cases = function(x) return { { x:eq(0), 1 } } end,
})

-- k P_k = (2k - 1) x P_(k-1) - (k-1) P_(k-2)
S.legendre_polynomial_p = poly("legendre_polynomial_p", {
  first = function(x) return x end,
  step = function(k, x, p, q) return ((2 * k - 1) * x * q - (k - 1) * p) / k end,
  cases = function(x, n)
    return { { x:abs():eq(1), torch.where(even_or_pos(x, n), full(x, 1), full(x, -1)) } }
  end,
})

return torch
