-- torch.special's Bessel (Y, I, K, spherical j0), Airy and orthogonal polynomial functions against
-- high-precision known values (30-digit tables), identities (Wronskians, Ai'' = x Ai, closed
-- trigonometric forms) and plain-Lua recurrences; edge cases, dtypes, no gradient, errors.
local T = ...
local S = torch.special
local f64 = { dtype = torch.float64 }

local function vals(t) return t:tolist() end

-- {x, value} pairs, 30-digit references
local KNOWN = {
  bessel_j0 = { { 1, 0.76519768655796655 } },
  bessel_y0 = { { 0.25, -0.93157302493005869 }, { 1, 0.088256964215676958 }, { 3, 0.37685001001279038 }, { 7.5, 0.11731328614820863 }, { 30, -0.11729573168666403 } },
  bessel_y1 = { { 0.25, -2.7041052293152824 }, { 1, -0.78121282130028872 }, { 3, 0.32467442479179998 }, { 7.5, -0.25912851048611625 }, { 30, 0.084425570661747235 } },
  modified_bessel_k0 = { { 0.25, 1.5415067512483028 }, { 1, 0.42102443824070833 }, { 3, 0.034739504386279248 }, { 7.5, 0.00024917761635611439 }, { 30, 2.1324774964630564e-14 } },
  modified_bessel_k1 = { { 0.25, 3.7470259744407116 }, { 1, 0.60190723019723457 }, { 3, 0.040156431128194184 }, { 7.5, 0.00026529739012528953 }, { 30, 2.1677320018915494e-14 } },
  scaled_modified_bessel_k0 = { { 0.25, 1.9793338485985687 }, { 1, 1.144463079806895 }, { 3, 0.69776159804385178 }, { 7.5, 0.45052369910491569 }, { 30, 0.22788666561625373 }, { 500, 0.056035915417234515 } },
  scaled_modified_bessel_k1 = { { 0.25, 4.8112765881710253 }, { 1, 1.6361534862632582 }, { 3, 0.8065634801287869 }, { 7.5, 0.47966893379102062 }, { 30, 0.2316541293777118 }, { 500, 0.056091923370555569 } },
  modified_bessel_i0 = { { 0.25, 1.0156861412236079 }, { 1, 1.2660658777520083 }, { 3, 4.8807925858650241 }, { 7.5, 268.16131151518936 }, { 30, 781672297823.97749 } },
  modified_bessel_i1 = { { -3, -3.9533702174026094 }, { 0.25, 0.12597910894546793 }, { 1, 0.56515910399248503 }, { 7.5, 249.58436542268814 }, { 30, 768532038938.957 } },
  airy_ai = { { -30, -0.087968188456842163 }, { -10.5, -0.3119260350510506 }, { -4, -0.070265532949289515 }, { -1, 0.53556088329235212 }, { 0, 0.35502805388781724 }, { 0.75, 0.17933630547864523 }, { 2, 0.034924130423274379 }, { 6.3, 4.6722608205742893e-06 }, { 12, 1.3931846888753608e-13 }, { 40, 6.3657426585529149e-75 } },
}

-- relative closeness for numbers of any size
local function rel_near(got, want, tol, msg)
  for i = 1, #want do
    local ok = math.abs(got[i] - want[i]) <= tol * math.abs(want[i])
    if not ok then return T.near(got, want, tol, msg .. string.format(" (at %d: %.17g vs %.17g)", i, got[i], want[i])) end
  end
  T.check(true)
end

local function check_known(device)
  for name, pairs_ in pairs(KNOWN) do
    local xs, ys = {}, {}
    for i, p in ipairs(pairs_) do xs[i], ys[i] = p[1], p[2] end
    local x = torch.tensor(xs, f64):to(device)
    local y = S[name](x)
    T.eq({ tostring(y.dtype), y.device.type }, { "torch.float64", device }, name .. " dtype")
    rel_near(vals(y:cpu()), ys, 2e-14, name .. " float64")
    local y32 = S[name](x:float())
    T.eq(tostring(y32.dtype), "torch.float32", name .. " float32 dtype")
    rel_near(vals(y32:cpu():double()), ys, 1e-6, name .. " float32")
  end
end

T.test("known values", function() check_known("cpu") end)

-- x from 0.1 to 60 through every method's range and the borders between them
local function grid()
  local xs = {}
  for i = 1, 120 do xs[i] = 0.1 + (i - 1) * 0.5 end
  for _, b in ipairs({ 2, 25 }) do
    for _, d in ipairs({ -1e-9, 0, 1e-9 }) do xs[#xs + 1] = b + d end
  end
  return xs
end

T.test("Wronskians", function()
  local xs = grid()
  local x = torch.tensor(xs, f64)
  local j0, j1, y0, y1 = vals(S.bessel_j0(x)), vals(S.bessel_j1(x)), vals(S.bessel_y0(x)), vals(S.bessel_y1(x))
  local i0, i1, k0, k1 = vals(S.modified_bessel_i0(x)), vals(S.modified_bessel_i1(x)), vals(S.scaled_modified_bessel_k0(x)),
      vals(S.scaled_modified_bessel_k1(x))
  local worst_j, worst_k = 0, 0
  for i, xv in ipairs(xs) do
    -- J1 Y0 - J0 Y1 = 2 / (pi x); I0 K1 + I1 K0 = 1 / x (K scaled by e^x, I by e^-x)
    worst_j = math.max(worst_j, math.abs((j1[i] * y0[i] - j0[i] * y1[i]) * math.pi * xv / 2 - 1))
    local e = math.exp(-xv)
    worst_k = math.max(worst_k, math.abs((i0[i] * e * k1[i] + i1[i] * e * k0[i]) * xv - 1))
  end
  T.check(worst_j < 1e-13, "J/Y Wronskian " .. worst_j)
  T.check(worst_k < 1e-13, "I/K Wronskian " .. worst_k)
  -- K = scaled K e^-x
  local k0u = vals(S.modified_bessel_k0(x))
  local worst = 0
  for i, xv in ipairs(xs) do worst = math.max(worst, math.abs(k0u[i] / (k0[i] * math.exp(-xv)) - 1)) end
  T.check(worst < 1e-14, "k0 = scaled k0 e^-x")
end)

T.test("Airy's equation", function()
  -- (Ai(x+h) - 2 Ai(x) + Ai(x-h)) / h^2 = x Ai(x) + O(h^2), across the anchors and borders
  local xs = {}
  for i = 0, 100 do xs[#xs + 1] = -14 + i * 0.27 end
  xs[#xs + 1], xs[#xs + 2] = 10, -10
  local h = 1e-3
  local x = torch.tensor(xs, f64)
  local a, ap, am = vals(S.airy_ai(x)), vals(S.airy_ai(x + h)), vals(S.airy_ai(x - h))
  local worst = 0
  for i, xv in ipairs(xs) do
    local scale = math.max(math.abs(xv * a[i]), 1e-3 * math.max(math.abs(ap[i]), math.abs(am[i])))
    worst = math.max(worst, math.abs((ap[i] - 2 * a[i] + am[i]) / (h * h) - xv * a[i]) / math.max(scale, 1e-12))
  end
  T.check(worst < 1e-4, "Ai'' = x Ai " .. worst)
end)

T.test("edges", function()
  local x = torch.tensor({ -1, 0, math.huge, 0 / 0 }, f64)
  local function s(t) local out = {}; for i, v in ipairs(vals(t)) do out[i] = v ~= v and "nan" or tostring(v) end; return out end
  T.eq(s(S.bessel_y0(x)), { "nan", "-inf", "0.0", "nan" }, "y0")
  T.eq(s(S.bessel_y1(x)), { "nan", "-inf", "0.0", "nan" }, "y1")
  T.eq(s(S.modified_bessel_k0(x)), { "nan", "inf", "0.0", "nan" }, "k0")
  T.eq(s(S.modified_bessel_k1(x)), { "nan", "inf", "0.0", "nan" }, "k1")
  T.eq(s(S.scaled_modified_bessel_k0(x)), { "nan", "inf", "0.0", "nan" }, "scaled k0")
  T.eq(s(S.airy_ai(torch.tensor({ math.huge, -math.huge, 0 / 0, 200 }, f64))), { "nan", "nan", "nan", "0.0" }, "airy")
  T.eq(vals(S.spherical_bessel_j0(torch.tensor({ 0, math.huge, -math.huge }, f64))), { 1.0, 0.0, 0.0 }, "spherical j0 ends")
  local sx = { -7, -0.4, 1e-3, 0.3, 0.49, 0.5, 2, 100 }
  local sj = vals(S.spherical_bessel_j0(torch.tensor(sx, f64)))
  local want = {}
  for i, v in ipairs(sx) do want[i] = math.sin(v) / v end
  rel_near(sj, want, 1e-15, "spherical j0 = sin x / x")
  T.eq(vals(S.modified_bessel_i0(torch.tensor({ 0 }, f64))), { 1.0 }, "i0(0)")
  -- integers give the default dtype; results never require grad (PyTorch: not differentiable)
  T.eq(tostring(S.bessel_y0(torch.tensor({ 1, 2 })).dtype), "torch.float32", "int input")
  local g = torch.tensor({ 1.5 }, f64):requires_grad_()
  for _, name in ipairs({ "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_k1", "scaled_modified_bessel_k0",
    "spherical_bessel_j0", "airy_ai" }) do
    T.eq(S[name](g).requires_grad, false, name .. " has no gradient")
  end
  T.raises(function() S.bessel_y0(1.0) end, "~bessel_y0")
end)

-- ---- polynomials ----

-- plain-Lua values of P_0 .. P_N at x from P_0 = 1, P_1 = first and next(k, p, q)
local function recur(first, step, x, N)
  local out = { [0] = 1, first(x) }
  for k = 2, N do out[k] = step(k, x, out[k - 2], out[k - 1]) end
  return out
end

local REC = {
  chebyshev_polynomial_t = { function(x) return x end, function(_, x, p, q) return 2 * x * q - p end },
  chebyshev_polynomial_u = { function(x) return 2 * x end, function(_, x, p, q) return 2 * x * q - p end },
  chebyshev_polynomial_v = { function(x) return 2 * x - 1 end, function(_, x, p, q) return 2 * x * q - p end },
  chebyshev_polynomial_w = { function(x) return 2 * x + 1 end, function(_, x, p, q) return 2 * x * q - p end },
  hermite_polynomial_h = { function(x) return 2 * x end, function(k, x, p, q) return 2 * x * q - 2 * (k - 1) * p end },
  hermite_polynomial_he = { function(x) return x end, function(k, x, p, q) return x * q - (k - 1) * p end },
  laguerre_polynomial_l = { function(x) return 1 - x end, function(k, x, p, q) return ((2 * k - 1 - x) * q - (k - 1) * p) / k end },
  legendre_polynomial_p = { function(x) return x end, function(k, x, p, q) return ((2 * k - 1) * x * q - (k - 1) * p) / k end },
}

T.test("polynomials against recurrences", function()
  local xs = { -2.5, -0.9, -0.3, 0.2, 0.55, 0.95, 1.7 }
  local N = 12
  for name, r in pairs(REC) do
    for _, shifted in ipairs({ false, true }) do
      local fname = (shifted and "shifted_" or "") .. name
      if S[fname] then
        local x = torch.tensor(xs, f64):unsqueeze(1) -- (7, 1) against n (13): broadcast
        local n = torch.arange(0, N + 1, f64)
        local got = S[fname](x, n)
        T.eq(got:size():totable(), { #xs, N + 1 }, fname .. " broadcast shape")
        local g = vals(got)
        local worst = 0
        for i, xv in ipairs(xs) do
          local ref = recur(r[1], r[2], shifted and 2 * xv - 1 or xv, N)
          for k = 0, N do worst = math.max(worst, math.abs(g[i][k + 1] - ref[k]) / math.max(1, math.abs(ref[k]))) end
        end
        T.check(worst < 1e-12, fname .. " " .. worst)
      end
    end
  end
end)

T.test("polynomial closed forms and special cases", function()
  -- T_n(cos t) = cos(n t), U_n(cos t) = sin((n+1) t) / sin t, V_n = cos((n+1/2) t) / cos(t/2),
  -- W_n = sin((n+1/2) t) / sin(t/2), for n past the trigonometric threshold too
  local ts = { 0.3, 1.1, 2.0, 2.9 }
  for _, n in ipairs({ 3, 7, 9, 20, 40 }) do
    for _, t in ipairs(ts) do
      local x = torch.tensor({ math.cos(t) }, f64)
      T.near(S.chebyshev_polynomial_t(x, n):item(), math.cos(n * t), 1e-12, "T")
      T.near(S.chebyshev_polynomial_u(x, n):item(), math.sin((n + 1) * t) / math.sin(t), 1e-11, "U")
      T.near(S.chebyshev_polynomial_v(x, n):item(), math.cos((n + 0.5) * t) / math.cos(t / 2), 1e-11, "V")
      T.near(S.chebyshev_polynomial_w(x, n):item(), math.sin((n + 0.5) * t) / math.sin(t / 2), 1e-11, "W")
    end
  end
  -- explicit forms
  local x = 0.7
  local xt = torch.tensor({ x }, f64)
  T.near(S.hermite_polynomial_h(xt, 3):item(), 8 * x ^ 3 - 12 * x, 1e-14, "H3")
  T.near(S.hermite_polynomial_he(xt, 4):item(), x ^ 4 - 6 * x ^ 2 + 3, 1e-14, "He4")
  T.near(S.laguerre_polynomial_l(xt, 2):item(), (x * x - 4 * x + 2) / 2, 1e-14, "L2")
  T.near(S.legendre_polynomial_p(xt, 4):item(), (35 * x ^ 4 - 30 * x ^ 2 + 3) / 8, 1e-14, "P4")
  -- ends, n < 0, n truncated toward zero
  local ends = torch.tensor({ -1, 1 }, f64)
  T.eq(vals(S.chebyshev_polynomial_t(ends, 5)), { -1.0, 1.0 }, "T at +-1")
  T.eq(vals(S.chebyshev_polynomial_u(ends, 5)), { -6.0, 6.0 }, "U at +-1")
  T.eq(vals(S.chebyshev_polynomial_v(ends, 5)), { -11.0, 1.0 }, "V at +-1")
  T.eq(vals(S.chebyshev_polynomial_w(ends, 5)), { -1.0, 11.0 }, "W at +-1")
  T.eq(vals(S.legendre_polynomial_p(ends, 4)), { 1.0, 1.0 }, "P at +-1")
  T.eq(vals(S.chebyshev_polynomial_t(torch.tensor({ 0.3, 2.0 }, f64), -2)), { 0.0, 0.0 }, "n < 0")
  T.eq(vals(S.hermite_polynomial_h(torch.tensor({ 0.5 }, f64), torch.tensor({ 3.9 }, f64))), { -5.0 }, "n = 3.9 is 3")
  T.eq(vals(S.laguerre_polynomial_l(torch.tensor({ 0 }, f64), 7)), { 1.0 }, "L_n(0)")
  -- Hermite above its limit: NaN (128 for float32, 512 for float64)
  T.check(S.hermite_polynomial_h(torch.tensor({ 0.1 }), 129):isnan():item(), "H float32 limit")
  T.check(not S.hermite_polynomial_h(torch.tensor({ 0.1 }, f64), 129):isnan():item(), "H float64 below its limit")
  T.check(S.hermite_polynomial_he(torch.tensor({ 0.1 }, f64), 513):isnan():item(), "He float64 limit")
  -- scalar x with tensor n; dtypes; no gradient; errors
  T.eq(vals(S.legendre_polynomial_p(0.5, torch.tensor({ 0, 1, 2 }, f64))), { 1.0, 0.5, -0.125 }, "scalar x")
  T.eq(tostring(S.chebyshev_polynomial_t(torch.tensor({ 1, 2 }), 2).dtype), "torch.float32", "int x")
  T.eq(tostring(S.chebyshev_polynomial_t(torch.tensor({ 0.5 }), torch.tensor({ 2 }, f64)).dtype), "torch.float64", "promotion")
  T.eq(S.chebyshev_polynomial_t(torch.tensor({ 0.5 }, f64):requires_grad_(), 2).requires_grad, false, "no gradient")
  T.raises(function() S.chebyshev_polynomial_t(0.5, 2) end, "~expected a Tensor")
  T.raises(function() S.hermite_polynomial_h(torch.ones(2), "a") end, "~must be a Tensor or a number")
end)

T.test("CUDA", function()
  if not torch.cuda.is_available() then return T.skip("no GPU") end
  check_known("cuda")
  local x = torch.linspace(-3, 3, 41, f64)
  for name in pairs(REC) do
    local n = torch.arange(0, 41, f64) % 9
    T.near(vals(S[name](x:cuda(), n:cuda()):cpu()), vals(S[name](x, n)), 1e-12, name .. " cuda")
  end
  for _, name in ipairs({ "bessel_y0", "bessel_y1", "modified_bessel_k0", "scaled_modified_bessel_k1", "airy_ai",
    "spherical_bessel_j0" }) do
    local xp = torch.linspace(0.05, 40, 57, f64)
    T.near(vals(S[name](xp:cuda()):cpu()), vals(S[name](xp)), 1e-12, name .. " cuda")
  end
end)
