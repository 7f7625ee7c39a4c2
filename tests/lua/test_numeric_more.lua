-- torch_numeric_more.lua against references written here with loops over plain Lua lists and
-- Lua's math library (float64, tight tolerances); gradients by float64 central differences.
local T = ...
local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local gradcheck = dofile(here .. "gradcheck.lua")(T)
local R = dofile(here .. "attention_ref.lua")
local f64 = { dtype = torch.float64 }
local nan, inf = 0 / 0, math.huge

local function randn(...) return torch.randn(...) end
local function shape(t) return t:size():totable() end
local transpose, matmul = R.transpose, R.matmul -- lists of rows

-- out[i][l] = sum over j, k of a[i][j][k] * b(j, k, l), for a [I, J, K] list
local function contract(a, b, L)
  local out = {}
  for i = 1, #a do
    out[i] = {}
    for l = 1, L do
      local s = 0
      for j = 1, #a[i] do for k = 1, #a[i][j] do s = s + a[i][j][k] * b(j, k, l) end end
      out[i][l] = s
    end
  end
  return out
end

T.test("tensordot against loops", function()
  torch.manual_seed(301)
  local a, b = randn(2, 3, 4, f64), randn(4, 3, 5, f64)
  local al, bl = a:tolist(), b:tolist()
  local want = contract(al, function(j, k, l) return bl[k][j][l] end, 5)
  T.near(torch.tensordot(a, b, { { 1, 2 }, { 1, 0 } }):tolist(), want, 1e-13, "dims as two lists")
  T.near(torch.tensordot(a, b, { dims = { { -2, -1 }, { 1, 0 } } }):tolist(), want, 1e-13, "negative dims, keyword")
  local c = randn(3, 4, 2, f64)
  local cl = c:tolist()
  local w2 = contract(al, function(j, k, l) return cl[j][k][l] end, 2)
  T.near(torch.tensordot(a, c):tolist(), w2, 1e-13, "default dims=2: a's last two against c's first two")
  local u, v = randn(2, f64), randn(3, f64)
  local outer = torch.tensordot(u, v, 0)
  T.eq(shape(outer), { 2, 3 }, "dims=0 is the outer product")
  T.near(outer:tolist()[2][3], u:tolist()[2] * v:tolist()[3], 1e-15, "outer product entry")
  T.near(torch.tensordot(a, b, torch.tensor({ { 1, 2 }, { 1, 0 } })):tolist(), want, 1e-13, "dims as a tensor")
  gradcheck("tensordot", function(x, y) return torch.tensordot(x, y, { { 1, 2 }, { 1, 0 } }) end, { randn(2, 3, 2, f64), randn(2, 3, 2, f64) })
  T.raises(function() torch.tensordot(torch.ones(2, 3), torch.ones(4, 2), 1) end,
    "contracted dimensions need to match, but first has size 3 in dim -1 and second has size 4 in dim 0")
  T.raises(function() torch.tensordot(torch.ones(2, 3), torch.ones(3, 2), -1) end, "tensordot expects dims >= 0, but got dims=-1")
  T.raises(function() torch.tensordot(torch.ones(2, 3), torch.ones(3, 2), 3) end, "~dims < ndim_a or ndim_b, but got dims=3")
  T.raises(function() torch.tensordot(torch.ones(2, 3), torch.ones(3, 2), { { 1 }, { 0, 1 } }) end, "both dimension lists should have same length")
  T.raises(function() torch.tensordot(torch.ones(2, 3), torch.ones(3, 3), { { 1, 1 }, { 0, 1 } }) end, "dim 1 appears multiple times in the list of dims")
  T.raises(function() torch.tensordot(torch.ones(2, 3), torch.ones(3, 2), { 1, 0 }) end, "~dims must be an int or a pair of lists")
end)

-- numpy's documented weighted covariance, element by element
local function cov_ref(x, fw, aw, correction)
  local n = #x[1]
  local v, vsum, vasum = {}, 0, 0
  for j = 1, n do
    v[j] = (fw and fw[j] or 1) * (aw and aw[j] or 1)
    vsum = vsum + v[j]
    vasum = vasum + v[j] * (aw and aw[j] or 1)
  end
  local mean = {}
  for i = 1, #x do
    local s = 0
    for j = 1, n do s = s + v[j] * x[i][j] end
    mean[i] = s / vsum
  end
  local fact = aw and vsum - correction * vasum / vsum or vsum - correction
  local out = {}
  for i = 1, #x do
    out[i] = {}
    for k = 1, #x do
      local s = 0
      for j = 1, n do s = s + v[j] * (x[i][j] - mean[i]) * (x[k][j] - mean[k]) end
      out[i][k] = s / fact
    end
  end
  return out
end

T.test("cov and corrcoef against loops", function()
  torch.manual_seed(302)
  local x = randn(3, 6, f64)
  local xl = x:tolist()
  T.near(torch.cov(x):tolist(), cov_ref(xl, nil, nil, 1), 1e-13, "cov, correction 1")
  T.near(x:cov({ correction = 0 }):tolist(), cov_ref(xl, nil, nil, 0), 1e-13, "method, correction 0")
  local fw, aw = { 1, 2, 0, 3, 1, 2 }, { 0.5, 1.5, 2.0, 0.25, 1.0, 3.0 }
  T.near(torch.cov(x, { fweights = torch.tensor(fw) }):tolist(), cov_ref(xl, fw, nil, 1), 1e-13, "frequency weights")
  T.near(torch.cov(x, { aweights = torch.tensor(aw, f64) }):tolist(), cov_ref(xl, nil, aw, 1), 1e-13, "observation weights")
  T.near(torch.cov(x, { correction = 2, fweights = torch.tensor(fw), aweights = torch.tensor(aw, f64) }):tolist(),
    cov_ref(xl, fw, aw, 2), 1e-13, "both weights, correction 2")
  local row = x[0]
  local c1 = torch.cov(row)
  T.eq(c1:dim(), 0, "a 1-D input is one variable: a 0-d result")
  T.near(c1:item(), cov_ref({ row:tolist() }, nil, nil, 1)[1][1], 1e-13, "variance of one variable")
  local ci = torch.cov(torch.tensor({ { 1, 2, 4 }, { 3, 1, 0 } }))
  T.check(ci.dtype == torch.float32, "integer input gives the default float dtype")
  T.near(ci:tolist(), cov_ref({ { 1, 2, 4 }, { 3, 1, 0 } }, nil, nil, 1), 1e-6, "integer input")
  T.check(torch.cov(torch.tensor({ { 1.0 }, { 2.0 } }, f64)):isnan():all():item(), "one observation, correction 1: nan (no degrees of freedom)")
  local c = cov_ref(xl, nil, nil, 1)
  local r = {}
  for i = 1, 3 do
    r[i] = {}
    for k = 1, 3 do r[i][k] = c[i][k] / math.sqrt(c[i][i] * c[k][k]) end
  end
  T.near(torch.corrcoef(x):tolist(), r, 1e-13, "corrcoef")
  T.near(x:corrcoef():tolist(), r, 1e-13, "corrcoef method")
  T.near(torch.corrcoef(torch.tensor({ 1.0, 2.0, 4.0 }, f64)):item(), 1.0, 0, "one variable: 1")
  local m = torch.corrcoef(torch.tensor({ { 1.0, 2.0, 3.0 }, { 2.0, 4.0, 6.0 } }, f64))
  T.check(m:abs():le(1):all():item(), "perfectly correlated rows stay within [-1, 1]")
  gradcheck("cov", function(t) return torch.cov(t, { aweights = torch.tensor(aw, f64) }) end, { randn(2, 6, f64) })
  gradcheck("corrcoef", function(t) return torch.corrcoef(t) end, { randn(3, 5, f64) })
  T.raises(function() torch.cov(torch.ones(2, 2, 2)) end, "cov(): expected input to have two or fewer dimensions but got an input with 3 dimensions")
  T.raises(function() torch.cov(torch.ones(2, 3), { fweights = torch.ones(3) }) end,
    "cov(): expected fweights to have integral dtype but got fweights with Float dtype")
  T.raises(function() torch.cov(torch.ones(2, 3), { fweights = torch.tensor({ 1, -1, 1 }) }) end, "cov(): fweights cannot be negative")
  T.raises(function() torch.cov(torch.ones(2, 3), { aweights = torch.tensor({ 1.0, 1.0 }) }) end,
    "cov(): expected aweights to have the same numel as there are observations in the input but got 2 != 3")
  T.raises(function() torch.cov(torch.ones(2, 3), { correction = 0.5 }) end, "~correction must be an integer")
  T.raises(function() torch.corrcoef(torch.ones(2, 2, 2)) end, "~corrcoef(): expected input to have two or fewer dimensions")
end)

-- the trapezoidal rule along the last list level, with sample points xs (nil: spacing dx)
local function trap_ref(ys, xs, dx, cumulative)
  local s, out = 0, {}
  for i = 2, #ys do
    local h = xs and (xs[i] - xs[i - 1]) or dx
    s = s + h * (ys[i] + ys[i - 1]) / 2
    out[#out + 1] = s
  end
  return cumulative and out or s
end

T.test("trapezoid and cumulative_trapezoid against loops", function()
  torch.manual_seed(303)
  local y = randn(3, 5, f64)
  local yl = y:tolist()
  local xs = { 0.0, 0.3, 1.1, 1.5, 2.75 }
  local x = torch.tensor(xs, f64)
  local w1, w2, w3, w4 = {}, {}, {}, {}
  for i = 1, 3 do
    w1[i] = trap_ref(yl[i], xs)
    w2[i] = trap_ref(yl[i], nil, 0.5)
    w3[i] = trap_ref(yl[i], xs, nil, true)
    w4[i] = trap_ref(yl[i], nil, 1, true)
  end
  T.near(torch.trapezoid(y, x):tolist(), w1, 1e-14, "sample points along the last dim")
  T.near(torch.trapezoid(y, { dx = 0.5 }):tolist(), w2, 1e-14, "constant spacing")
  T.near(torch.trapz(y, x, { dim = -1 }):tolist(), w1, 1e-14, "trapz alias")
  T.near(torch.cumulative_trapezoid(y, x):tolist(), w3, 1e-14, "cumulative with sample points")
  T.near(torch.cumulative_trapezoid(y):tolist(), w4, 1e-14, "cumulative, dx=1")
  local cols = {}
  for j = 1, 5 do
    local col = {}
    for i = 1, 3 do col[i] = yl[i][j] end
    cols[j] = trap_ref(col, { 0.0, 1.0, 3.0 })
  end
  T.near(torch.trapezoid(y, torch.tensor({ 0.0, 1.0, 3.0 }, f64), { dim = 0 }):tolist(), cols, 1e-14, "along dim 0")
  local xfull = torch.rand(3, 5, f64):cumsum(1)
  local xfl = xfull:tolist()
  local w5 = {}
  for i = 1, 3 do w5[i] = trap_ref(yl[i], xfl[i]) end
  T.near(torch.trapezoid(y, xfull):tolist(), w5, 1e-14, "sample points of y's shape")
  T.near(torch.trapezoid(torch.tensor({ 1, 2, 4 }), { dx = 2 }):item(), 9.0, 1e-6, "integer y")
  local empty = torch.trapezoid(torch.zeros(2, 0, f64))
  T.eq(shape(empty), { 2 }, "no samples: zeros of the other dims")
  T.eq(empty:tolist(), { 0.0, 0.0 }, "no samples: 0")
  T.eq(torch.trapezoid(torch.tensor({ 5.0 })):item(), 0.0, "one sample: 0")
  T.eq(shape(torch.cumulative_trapezoid(torch.tensor({ 5.0 }))), { 0 }, "cumulative of one sample is empty")
  T.eq(shape(torch.cumulative_trapezoid(torch.zeros(2, 0))), { 2, 0 }, "cumulative of no samples")
  gradcheck("trapezoid", function(a, b) return torch.trapezoid(a, b) end, { randn(2, 4, f64), torch.rand(4, f64):cumsum(0) })
  gradcheck("cumulative_trapezoid", function(a, b) return torch.cumulative_trapezoid(a, b, { dim = 0 }) end,
    { randn(4, 2, f64), torch.rand(4, f64):cumsum(0) })
  T.raises(function() torch.trapezoid(torch.ones(3), torch.ones(4)) end, "trapezoid: There must be one `x` value for each sample point")
  T.raises(function() torch.cumulative_trapezoid(torch.ones(3), torch.ones(4)) end,
    "cumulative_trapezoid: There must be one `x` value for each sample point")
  T.raises(function() torch.trapezoid(torch.tensor({ true, false })) end, "trapezoid: received a bool input for `y`, but bool is not supported")
  T.raises(function() torch.trapezoid(torch.ones(3), 2) end, "~x must be a Tensor, got int")
  T.raises(function() torch.trapezoid(torch.ones(3), { dim = 1 }) end, "~Dimension out of range")
end)

T.test("logspace against Lua's powers", function()
  local function ref(a, b, n, base)
    local out = {}
    for i = 0, n - 1 do out[i + 1] = base ^ (n == 1 and a or a + (b - a) * i / (n - 1)) end
    return out
  end
  T.near(torch.logspace(-2, 3, 7, f64):tolist(), ref(-2, 3, 7, 10), 1e-14, "base 10")
  T.near(torch.logspace(-1, 3, 5, { base = 2, dtype = torch.float64 }):tolist(), ref(-1, 3, 5, 2), 1e-15, "base 2")
  T.near(torch.logspace(0.5, -1.5, 4, 3, f64):tolist(), ref(0.5, -1.5, 4, 3), 1e-14, "positional base, decreasing")
  local d = torch.logspace(0, 2, 3)
  T.check(d.dtype == torch.float32, "default dtype")
  T.near(d:tolist(), { 1.0, 10.0, 100.0 }, 1e-7, "float32 values")
  T.eq(torch.logspace(0, 3, 4, { dtype = torch.int64 }):tolist(), { 1, 10, 100, 1000 }, "int64")
  T.eq(torch.logspace(2, 3, 1, f64):tolist(), { 100.0 }, "one step is base^start")
  T.eq(shape(torch.logspace(2, 3, 0)), { 0 }, "no steps")
  T.check(torch.logspace(0, 1, 3, { requires_grad = true }).requires_grad, "requires_grad")
  T.raises(function() torch.logspace(2, 3, -1) end, "number of steps must be non-negative")
end)

T.test("windows against their definitions", function()
  local function ref(kind, n, periodic, alpha, beta)
    if n == 0 then return {} end
    if n == 1 then return { 1.0 } end
    local N = periodic and n + 1 or n
    local out = {}
    for k = 0, n - 1 do
      local t = 2 * math.pi * k / (N - 1)
      if kind == "hann" then out[k + 1] = 0.5 * (1 - math.cos(t))
      elseif kind == "hamming" then out[k + 1] = alpha - beta * math.cos(t)
      elseif kind == "blackman" then out[k + 1] = 0.42 - 0.5 * math.cos(t) + 0.08 * math.cos(2 * t)
      else out[k + 1] = 1 - math.abs(2 * k / (N - 1) - 1) end
    end
    return out
  end
  for _, n in ipairs({ 0, 1, 2, 5, 8 }) do
    for _, periodic in ipairs({ true, false }) do
      local tag = string.format(" n=%d periodic=%s", n, tostring(periodic))
      T.near(torch.hann_window(n, periodic, f64):tolist(), ref("hann", n, periodic), 1e-15, "hann" .. tag)
      T.near(torch.hamming_window(n, { periodic = periodic, dtype = torch.float64 }):tolist(), ref("hamming", n, periodic, 0.54, 0.46),
        1e-15, "hamming" .. tag)
      T.near(torch.blackman_window(n, periodic, f64):tolist(), ref("blackman", n, periodic), 1e-15, "blackman" .. tag)
      T.near(torch.bartlett_window(n, periodic, f64):tolist(), ref("bartlett", n, periodic), 1e-15, "bartlett" .. tag)
    end
  end
  T.near(torch.hamming_window(6, true, 0.6, 0.3, f64):tolist(), ref("hamming", 6, true, 0.6, 0.3), 1e-15, "hamming alpha, beta")
  T.near(torch.hann_window(7):tolist(), ref("hann", 7, true), 1e-7, "periodic by default, float32")
  T.check(torch.hann_window(7).dtype == torch.float32, "default dtype")
  T.raises(function() torch.hann_window(-1) end, "hann_window requires non-negative window_length, got window_length=-1")
  T.raises(function() torch.bartlett_window(4, { dtype = torch.int64 }) end, "~bartlett_window expects floating point dtypes")
  T.raises(function() torch.blackman_window(2.5) end, "~window_length must be an integer")
end)

T.test("gradient against loops and exact derivatives", function()
  torch.manual_seed(304)
  local y = randn(4, 5, f64)
  local yl = y:tolist()
  -- one-sided first-order ends and central differences, uniform spacing h
  local function ref_rows(rows, h)
    local out = {}
    for i, r in ipairs(rows) do
      out[i] = {}
      local n = #r
      for j = 1, n do
        if j == 1 then out[i][j] = (r[2] - r[1]) / h
        elseif j == n then out[i][j] = (r[n] - r[n - 1]) / h
        else out[i][j] = (r[j + 1] - r[j - 1]) / (2 * h) end
      end
    end
    return out
  end
  local g = torch.gradient(y, { spacing = 0.5 })
  T.eq(#g, 2, "one result per dim")
  T.near(g[2]:tolist(), ref_rows(yl, 0.5), 1e-13, "along dim 1")
  T.near(transpose(g[1]:tolist()), ref_rows(transpose(yl), 0.5), 1e-13, "along dim 0")
  local g2 = torch.gradient(y, { spacing = { 2.0, 0.25 } })
  T.near(g2[1]:tolist(), transpose(ref_rows(transpose(yl), 2.0)), 1e-13, "a spacing per dim: first")
  T.near(g2[2]:tolist(), ref_rows(yl, 0.25), 1e-13, "a spacing per dim: second")
  local gd = torch.gradient(y, { dim = -1 })
  T.eq(#gd, 1, "one dim asked")
  T.near(gd[1]:tolist(), ref_rows(yl, 1), 1e-13, "dim -1, spacing 1")
  -- second order everywhere is exact for quadratics, on uneven points too
  local xs = { -1.0, -0.7, 0.1, 0.25, 1.3, 2.0 }
  local function f(t) return 3 * t * t - 2 * t + 1 end
  local vals, dvals = {}, {}
  for i, t in ipairs(xs) do vals[i], dvals[i] = f(t), 6 * t - 2 end
  local q = torch.gradient(torch.tensor(vals, f64), { spacing = { torch.tensor(xs, f64) }, edge_order = 2 })
  T.near(q[1]:tolist(), dvals, 1e-12, "edge_order 2 on uneven points: exact for a quadratic")
  local qu = torch.gradient(torch.tensor({ f(0), f(0.5), f(1), f(1.5) }, f64), { spacing = 0.5, edge_order = 2 })
  T.near(qu[1]:tolist(), { -2.0, 1.0, 4.0, 7.0 }, 1e-13, "edge_order 2, even spacing: exact for a quadratic")
  local q1 = torch.gradient(torch.tensor(vals, f64), { spacing = { torch.tensor(xs, f64) } })[1]:tolist()
  T.near(q1[1], (vals[2] - vals[1]) / (xs[2] - xs[1]), 1e-13, "edge_order 1 on uneven points: first end")
  T.near(q1[6], (vals[6] - vals[5]) / (xs[6] - xs[5]), 1e-13, "edge_order 1 on uneven points: last end")
  local inner = true
  for i = 2, 5 do inner = inner and math.abs(q1[i] - dvals[i]) < 1e-12 end
  T.check(inner, "edge_order 1 on uneven points: inner points exact for a quadratic")
  local r = randn(3, 6, f64)
  local rl = r:tolist()
  local gc = torch.gradient(r, { spacing = { torch.tensor(xs, f64) }, dim = 1 })[1]:tolist()
  local ok = true
  for i = 1, 3 do
    for j = 2, 5 do
      local hl, hr = xs[j] - xs[j - 1], xs[j + 1] - xs[j]
      local want = (hl * hl * rl[i][j + 1] - hr * hr * rl[i][j - 1] + (hr * hr - hl * hl) * rl[i][j]) / (hl * hr * (hl + hr))
      ok = ok and math.abs(gc[i][j] - want) < 1e-12
    end
  end
  T.check(ok, "uneven points inside: numpy's second-order formula")
  T.near(torch.gradient(torch.tensor({ 1, 2, 4, 8 }))[1]:tolist(), { 1.0, 1.5, 3.0, 4.0 }, 1e-7, "integer input")
  T.eq(#torch.gradient(torch.tensor(3.0)), 0, "a 0-d input: no dims, no results")
  gradcheck("gradient", function(t) return torch.gradient(t, { spacing = { torch.tensor(xs, f64) }, edge_order = 2 })[1] end, { randn(6, f64) })
  T.raises(function() torch.gradient(torch.tensor({ 1.0, 2.0, 3.0 }), { edge_order = 3 }) end, "torch.gradient only supports edge_order=1 and edge_order=2.")
  T.raises(function() torch.gradient(torch.tensor({ 1.0, 2.0 }), { edge_order = 2 }) end,
    "torch.gradient expected each dimension size to be at least edge_order+1")
  T.raises(function() torch.gradient(torch.ones(3, 3), { spacing = { 1.0, 2.0, 3.0 } }) end, "~list of length equal to 'self.dim() = 2'")
  T.raises(function() torch.gradient(torch.ones(3, 3), { spacing = { 1.0, 2.0 }, dim = 1 }) end,
    "~spacing argument of length 2 and a dim argument of length 1")
  T.raises(function() torch.gradient(torch.ones(3, 3), { spacing = { torch.ones(3, 3) }, dim = 0 }) end,
    "torch.gradient expected each element of spacing to have one dimension, but got an element with 2 dimensions!")
  T.raises(function() torch.gradient(torch.ones(3, 3), { spacing = { torch.ones(4) }, dim = 0 }) end, "~to have 3 elements, but got 4")
  T.raises(function() torch.gradient(torch.ones(3, 3), { dim = { 0, -2 } }) end, "dim 0 appears multiple times in the list of dims")
  T.raises(function() torch.gradient(torch.tensor({ 1, 2, 3 }, { dtype = torch.uint8 })) end, "torch.gradient does not support uint8 input.")
end)

-- numpy's quantile of a list with NaNs dropped (nan if none is left)
local function nanq_ref(list, q, mode)
  local v = {}
  for _, x in ipairs(list) do if x == x then v[#v + 1] = x end end
  if #v == 0 then return nan end
  table.sort(v)
  local pos = q * (#v - 1)
  local lo, hi = math.floor(pos), math.ceil(pos)
  local a, b, frac = v[lo + 1], v[hi + 1], pos - lo
  if mode == "lower" then return a end
  if mode == "higher" then return b end
  if mode == "midpoint" then return (a + b) / 2 end
  if mode == "nearest" then
    if frac > 0.5 or (frac == 0.5 and hi % 2 == 0) then return b end
    return a
  end
  return a + (b - a) * frac
end

T.test("nanquantile against sorting in Lua", function()
  torch.manual_seed(305)
  local x = randn(4, 7, f64)
  x[0][2], x[0][5], x[2][0] = nan, nan, nan
  x[3]:fill_(nan)
  local xl = x:tolist()
  local flat = {}
  for _, r in ipairs(xl) do for _, v in ipairs(r) do flat[#flat + 1] = v end end
  for _, mode in ipairs({ "linear", "lower", "higher", "midpoint", "nearest" }) do
    for _, q in ipairs({ 0.0, 0.2, 0.5, 0.75, 1.0 }) do
      local want = {}
      for i = 1, 4 do want[i] = nanq_ref(xl[i], q, mode) end
      T.near(torch.nanquantile(x, q, 1, { interpolation = mode }):tolist(), want, 1e-14, string.format("%s q=%g along dim 1", mode, q))
      T.near(x:nanquantile(q, { interpolation = mode }):item(), nanq_ref(flat, q, mode), 1e-14, string.format("%s q=%g over all", mode, q))
    end
  end
  local qs = torch.tensor({ 0.1, 0.9 }, f64)
  local m = torch.nanquantile(x, qs, -1, true)
  T.eq(shape(m), { 2, 4, 1 }, "q as a tensor leads; keepdim keeps dim 1")
  local want = {}
  for k, q in ipairs({ 0.1, 0.9 }) do
    want[k] = {}
    for i = 1, 4 do want[k][i] = { nanq_ref(xl[i], q, "linear") } end
  end
  T.near(m:tolist(), want, 1e-14, "several q along dim -1")
  local cols = {}
  for j = 1, 7 do
    local col = {}
    for i = 1, 4 do col[i] = xl[i][j] end
    cols[j] = nanq_ref(col, 0.3, "linear")
  end
  T.near(torch.nanquantile(x, 0.3, 0):tolist(), cols, 1e-14, "along dim 0 (a column of NaN except one)")
  T.eq(shape(torch.nanquantile(x, 0.5, { keepdim = true })), { 1, 1 }, "keepdim without dim: all ones")
  T.check(torch.nanquantile(torch.tensor({ nan, nan }, f64), 0.5):isnan():item(), "all NaN: nan")
  local clean = randn(3, 5, f64)
  T.near(torch.nanquantile(clean, 0.35, 1):tolist(), torch.quantile(clean, 0.35, 1):tolist(), 1e-14, "no NaN: quantile")
  gradcheck("nanquantile", function(t) return torch.nanquantile(t, torch.tensor({ 0.3, 0.5 }, f64), 1) end, { randn(2, 5, f64) })
  T.raises(function() torch.nanquantile(torch.tensor({ 1, 2 }), 0.5) end, "nanquantile() input tensor must be either float or double dtype")
  T.raises(function() torch.nanquantile(torch.tensor({ 1.0, 2.0 }), 1.5) end, "nanquantile() q must be in the range [0, 1] but got 1.5")
  T.raises(function() torch.nanquantile(torch.tensor({ 1.0, 2.0 }), torch.tensor({ 0.5, -0.5 })) end, "nanquantile() q values must be in the range [0, 1]")
  T.raises(function() torch.nanquantile(torch.tensor({ 1.0, 2.0 }), 0.5, { interpolation = "cubic" }) end,
    "nanquantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but got cubic")
  T.raises(function() torch.nanquantile(torch.tensor({}), 0.5) end, "nanquantile() input tensor must be non-empty")
  T.raises(function() torch.nanquantile(torch.tensor({ 1.0 }), torch.tensor({ 0.5 }, f64)) end, "nanquantile() q tensor must be same dtype as the input tensor")
end)

T.test("histogram against counting in Lua", function()
  torch.manual_seed(306)
  local data = torch.rand(50, f64) * 4 - 1
  local dl = data:tolist()
  dl[#dl + 1] = 3.0 -- exactly the right edge of range {-1, 3}
  dl[#dl + 1] = -1.0 -- exactly the left edge
  dl[#dl + 1] = 7.5 -- outside
  local x = torch.tensor(dl, f64)
  local hist, edges = torch.histogram(x, 8, { range = { -1.0, 3.0 } })
  local el = edges:tolist()
  T.eq(#el, 9, "bins + 1 edges")
  local even = {}
  for i = 0, 8 do even[i + 1] = -1 + 4 * i / 8 end
  T.near(el, even, 1e-15, "evenly spaced edges over the range")
  local function count(vals, e, wts)
    local c = {}
    for i = 1, #e - 1 do c[i] = 0.0 end
    for k, v in ipairs(vals) do
      for i = 1, #e - 1 do
        if v >= e[i] and (v < e[i + 1] or (i == #e - 1 and v == e[i + 1])) then c[i] = c[i] + (wts and wts[k] or 1); break end
      end
    end
    return c
  end
  local c = count(dl, el)
  T.eq(hist:tolist(), c, "counts")
  T.check(c[8] >= 1 and hist.dtype == torch.float64, "the right edge falls in the last bin; hist has the input's dtype")
  local wl = {}
  for i = 1, #dl do wl[i] = (i % 5) * 0.25 end
  local hw = torch.histogram(x, 8, { range = { -1.0, 3.0 }, weight = torch.tensor(wl, f64) })
  T.near(hw:tolist(), count(dl, el, wl), 1e-14, "weighted")
  local cut = { -2.0, -0.5, 0.0, 0.1, 2.5, 3.0 }
  local hd, ed = x:histogram(torch.tensor(cut, f64), { density = true })
  T.eq(ed:tolist(), cut, "given edges come back")
  local raw = count(dl, cut)
  local total = 0
  for _, v in ipairs(raw) do total = total + v end
  local dens = {}
  for i = 1, #raw do dens[i] = raw[i] / total / (cut[i + 1] - cut[i]) end
  T.near(hd:tolist(), dens, 1e-14, "density over uneven edges")
  local hm, em = torch.histogram(torch.tensor({ { 1.0, 2.0 }, { 1.0, 1.5 } }, f64), 4)
  T.eq(em:tolist(), { 1.0, 1.25, 1.5, 1.75, 2.0 }, "default range: the data's min and max")
  T.eq(hm:tolist(), { 2.0, 0.0, 1.0, 1.0 }, "a 2-D input counts every element")
  local he, ee = torch.histogram(torch.tensor({}, f64), 2)
  T.eq({ he:tolist(), ee:tolist() }, { { 0.0, 0.0 }, { 0.0, 0.5, 1.0 } }, "empty input: range [0, 1]")
  local _, ec = torch.histogram(torch.tensor({ 2.0, 2.0 }, f64), 2)
  T.eq(ec:tolist(), { 1.5, 2.0, 2.5 }, "constant input: range widened by 0.5 each side")
  T.eq(torch.histogram(torch.tensor({ 1.0, nan, 2.0 }, f64), 2, { range = { 0.0, 2.0 } }):tolist(), { 0.0, 2.0 }, "NaN ignored with a range")
  T.raises(function() torch.histogram(torch.tensor({ 1.0, nan }), 2) end, "torch.histogram: range [nan, nan] is not finite")
  T.raises(function() torch.histogram(torch.tensor({ 2.0, 3.0 }), 0) end, "torch.histogram(): bins must be > 0, but got 0 for dimension 0")
  T.raises(function() torch.histogram(torch.tensor({ 2, 3 }), 2) end, "\"histogram\" not implemented for 'Long'")
  T.raises(function() torch.histogram(torch.tensor({ 2.0, 3.0 }), 2, { range = { 3.0, 1.0 } }) end, "~min should not exceed max, but got min 3.0 max 1.0")
  T.raises(function() torch.histogram(torch.tensor({ 2.0, 3.0 }), 2, { weight = torch.ones(3) }) end,
    "~weight should have the same shape as the input, but got input with shape [2] and weight with shape [3]")
  T.raises(function() torch.histogram(torch.tensor({ 2.0, 3.0 }), torch.tensor({ 1.0, 2.0 }, f64)) end, "~should have the same dtype")
end)

T.test("aminmax against loops", function()
  torch.manual_seed(307)
  local x = randn(3, 4, f64)
  local xl = x:tolist()
  local lo, hi = {}, {}
  local alo, ahi = inf, -inf
  for i = 1, 3 do
    lo[i], hi[i] = inf, -inf
    for j = 1, 4 do
      lo[i], hi[i] = math.min(lo[i], xl[i][j]), math.max(hi[i], xl[i][j])
      alo, ahi = math.min(alo, xl[i][j]), math.max(ahi, xl[i][j])
    end
  end
  local mn, mx = torch.aminmax(x, { dim = -1 })
  T.eq({ mn:tolist(), mx:tolist() }, { lo, hi }, "along dim -1")
  local kmn, kmx = x:aminmax({ dim = 1, keepdim = true })
  T.eq({ shape(kmn), shape(kmx) }, { { 3, 1 }, { 3, 1 } }, "keepdim")
  local amn, amx = torch.aminmax(x)
  T.eq({ amn:item(), amx:item(), amn:dim() }, { alo, ahi, 0 }, "over all elements")
  local nmn, nmx = torch.aminmax(torch.tensor({ 1.0, nan, 3.0 }))
  T.check(nmn:isnan():item() and nmx:isnan():item(), "NaN propagates to both")
  local imn, imx = torch.aminmax(torch.tensor({ 4, -2, 9 }))
  T.eq({ imn:item(), imx:item() }, { -2, 9 }, "integers")
  local zmn, zmx = torch.aminmax(torch.zeros(0, 2), { dim = 1 })
  T.eq({ shape(zmn), shape(zmx) }, { { 0 }, { 0 } }, "empty along another dim")
  gradcheck("aminmax max", function(t) local _, m = torch.aminmax(t, { dim = 0 }); return m end, { randn(3, 4, f64) })
  T.raises(function() torch.aminmax(torch.tensor({})) end, "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.")
  T.raises(function() torch.aminmax(torch.zeros(2, 0), { dim = 1 }) end, "aminmax(): Expected reduction dim 1 to have non-zero size.")
end)

T.test("addbmm, multi_dot, chain_matmul, cholesky_inverse against loops", function()
  torch.manual_seed(308)
  local inp, b1, b2 = randn(2, 3, f64), randn(4, 2, 5, f64), randn(4, 5, 3, f64)
  local il, l1, l2 = inp:tolist(), b1:tolist(), b2:tolist()
  local function ref(beta, alpha, row)
    local out = {}
    for i = 1, 2 do
      out[i] = {}
      for j = 1, 3 do
        local s = 0
        for b = 1, 4 do for k = 1, 5 do s = s + l1[b][i][k] * l2[b][k][j] end end
        out[i][j] = beta * (row and il[1][j] or il[i][j]) + alpha * s
      end
    end
    return out
  end
  T.near(torch.addbmm(inp, b1, b2):tolist(), ref(1, 1), 1e-13, "addbmm")
  T.near(inp:addbmm(b1, b2, { beta = 0.5, alpha = -2 }):tolist(), ref(0.5, -2), 1e-13, "beta, alpha")
  T.near(torch.addbmm(inp[0], b1, b2):tolist(), ref(1, 1, true), 1e-13, "input broadcast")
  T.check(not torch.addbmm(torch.full({ 2, 3 }, nan, f64), b1, b2, { beta = 0 }):isnan():any():item(), "beta 0 ignores the input")
  local y = inp:clone()
  local same = y:addbmm_(b1, b2, { alpha = 3 })
  T.check(rawequal(same, y), "addbmm_ returns self")
  T.near(y:tolist(), ref(1, 3), 1e-13, "addbmm_ in place")
  T.near(torch.addbmm(inp, torch.zeros(0, 2, 5, f64), torch.zeros(0, 5, 3, f64), { beta = 2 }):tolist(), (inp * 2):tolist(), 0, "no batches")
  gradcheck("addbmm", function(a, b, c) return torch.addbmm(a, b, c, { beta = 0.5, alpha = 2 }) end,
    { randn(2, 3, f64), randn(2, 2, 4, f64), randn(2, 4, 3, f64) })
  T.raises(function() torch.addbmm(torch.ones(2, 3), torch.ones(2, 2, 4), torch.ones(2, 5, 3)) end, "Incompatible matrix sizes for bmm (2x4 and 5x3)")
  T.raises(function() torch.addbmm(torch.ones(2, 3), torch.ones(2, 2, 4), torch.ones(3, 4, 3)) end, "batch1 and batch2 must have same number of batches, got 2 and 3")
  T.raises(function() torch.addbmm(torch.ones(2, 3), torch.ones(2, 4), torch.ones(2, 4, 3)) end, "batch1 must be a 3D tensor")

  local ms = { randn(3, 10, f64), randn(10, 2, f64), randn(2, 8, f64), randn(8, 4, f64) }
  local want = ms[1]:tolist()
  for i = 2, 4 do want = matmul(want, ms[i]:tolist()) end
  T.near(torch.linalg.multi_dot(ms):tolist(), want, 1e-12, "multi_dot of four")
  T.near(torch.chain_matmul(ms[1], ms[2], ms[3], ms[4]):tolist(), want, 1e-12, "chain_matmul")
  local v, w = randn(3, f64), randn(4, f64)
  local vw = matmul({ v:tolist() }, matmul(matmul(ms[1]:tolist(), ms[2]:tolist()), matmul(ms[3]:tolist(), matmul(ms[4]:tolist(), transpose({ w:tolist() })))))
  local r = torch.linalg.multi_dot({ v, ms[1], ms[2], ms[3], ms[4], w })
  T.eq(r:dim(), 0, "1-D at both ends: a scalar")
  T.near(r:item(), vw[1][1], 1e-12, "vector, matrices, vector")
  T.eq(torch.chain_matmul(ms[2]):tolist(), ms[2]:tolist(), "chain_matmul of one")
  gradcheck("multi_dot", function(a, b, c) return torch.linalg.multi_dot({ a, b, c }) end, { randn(2, 3, f64), randn(3, 4, f64), randn(4, 2, f64) })
  T.raises(function() torch.linalg.multi_dot({ torch.ones(2, 3) }) end, "multi_dot(): expected at least 2 tensors but got 1")
  T.raises(function() torch.linalg.multi_dot({ torch.ones(2, 3), torch.ones(2, 2) }) end,
    "multi_dot(): tensors 0 and 1 with shapes [2, 3] and [2, 2] cannot be multiplied")
  T.raises(function() torch.linalg.multi_dot({ torch.ones(2, 2), torch.ones(2), torch.ones(2, 2) }) end, "multi_dot(): tensor 1 must be 2D but got 1D")
  T.raises(function() torch.chain_matmul() end, "chain_matmul(): Expected one or more matrices")
  T.raises(function() torch.chain_matmul(torch.ones(3), torch.ones(3, 2)) end, "~tensor 0 has 1 dimensions, expected 2")

  -- L lower triangular with a positive diagonal; (L Lᵀ)⁻¹ by Gauss-Jordan in Lua
  local function lower(n)
    local l = {}
    for i = 1, n do
      l[i] = {}
      for j = 1, n do l[i][j] = j < i and (math.random() - 0.5) or j == i and 1 + math.random() or 0.0 end
    end
    return l
  end
  local function inverse(a)
    local n = #a
    local m = {}
    for i = 1, n do
      m[i] = {}
      for j = 1, 2 * n do m[i][j] = j <= n and a[i][j] or (j - n == i and 1 or 0) end
    end
    for c = 1, n do
      local p = c
      for r2 = c + 1, n do if math.abs(m[r2][c]) > math.abs(m[p][c]) then p = r2 end end
      m[c], m[p] = m[p], m[c]
      local d = m[c][c]
      for j = 1, 2 * n do m[c][j] = m[c][j] / d end
      for r2 = 1, n do
        if r2 ~= c then
          local f = m[r2][c]
          for j = 1, 2 * n do m[r2][j] = m[r2][j] - f * m[c][j] end
        end
      end
    end
    local out = {}
    for i = 1, n do out[i] = { table.unpack(m[i], n + 1, 2 * n) } end
    return out
  end
  math.randomseed(308)
  local la, lb = lower(4), lower(4)
  local ia, ib = inverse(matmul(la, transpose(la))), inverse(matmul(lb, transpose(lb)))
  T.near(torch.cholesky_inverse(torch.tensor(la, f64)):tolist(), ia, 1e-12, "cholesky_inverse")
  T.near(torch.tensor(la, f64):t():cholesky_inverse(true):tolist(), ia, 1e-12, "upper: from U = Lᵀ")
  T.near(torch.cholesky_inverse(torch.tensor({ la, lb }, f64), { upper = false }):tolist(), { ia, ib }, 1e-12, "a batch")
  gradcheck("cholesky_inverse", function(t) return torch.cholesky_inverse(t) end, { torch.tensor(lower(3), f64) })
  T.raises(function() torch.cholesky_inverse(torch.ones(3)) end, "cholesky_inverse: The input tensor A must have at least 2 dimensions.")
  T.raises(function() torch.cholesky_inverse(torch.ones(2, 3)) end,
    "cholesky_inverse: A must be batches of square matrices, but they are 2 by 3 matrices")
end)

T.test("combinations against nested loops", function()
  local vals = { 10.0, 20.0, 30.0, 40.0, 50.0 }
  local x = torch.tensor(vals, f64)
  local two, two_r, three = {}, {}, {}
  for i = 1, 5 do
    for j = i, 5 do
      two_r[#two_r + 1] = { vals[i], vals[j] }
      if j > i then two[#two + 1] = { vals[i], vals[j] } end
    end
  end
  for i = 1, 5 do for j = i + 1, 5 do for k = j + 1, 5 do three[#three + 1] = { vals[i], vals[j], vals[k] } end end end
  T.eq(torch.combinations(x):tolist(), two, "r=2 in itertools order")
  T.eq(torch.combinations(x, { with_replacement = true }):tolist(), two_r, "with replacement")
  T.eq(torch.combinations(x, 3):tolist(), three, "r=3")
  T.eq(shape(torch.combinations(x, 1)), { 5, 1 }, "r=1: a column")
  T.eq(shape(torch.combinations(x, 0)), { 0 }, "r=0: empty")
  T.eq(shape(torch.combinations(x, 6)), { 0, 6 }, "r past the length: no rows")
  T.eq(shape(torch.combinations(torch.tensor({}), 2)), { 0, 2 }, "empty input")
  T.check(torch.combinations(torch.tensor({ 1, 2, 3 })).dtype == torch.int64, "keeps the dtype")
  gradcheck("combinations", function(t) return torch.combinations(t, { r = 2, with_replacement = true }) end, { randn(4, f64) })
  T.raises(function() torch.combinations(torch.ones(2, 2)) end, "Expect a 1D vector, but got shape [2, 2]")
  T.raises(function() torch.combinations(torch.ones(3), -1) end, "Expect a non-negative number, but got -1")
end)

-- Γ(z) for z an integer or half-integer >= 1/2, exactly by recursion
local function gamma_half(z)
  if z == 1 then return 1 end
  if z == 0.5 then return math.sqrt(math.pi) end
  return (z - 1) * gamma_half(z - 1)
end

T.test("logaddexp2, isposinf, isneginf, mvlgamma, frexp against Lua's math", function()
  torch.manual_seed(309)
  local as, bs = { 0.0, 1.0, -3.5, 700.0, -1100.0, 2.0 }, { 0.0, 2.5, 1.25, 701.0, -1100.5, -60.0 }
  local want = {}
  for i = 1, #as do
    local m = math.max(as[i], bs[i])
    want[i] = m + math.log(2 ^ (as[i] - m) + 2 ^ (bs[i] - m), 2)
  end
  T.near(torch.logaddexp2(torch.tensor(as, f64), torch.tensor(bs, f64)):tolist(), want, 1e-15, "logaddexp2")
  T.near(torch.tensor(as, f64):logaddexp2(torch.tensor(bs, f64)):tolist(), want, 1e-15, "method")
  T.eq(torch.logaddexp2(torch.tensor({ -inf, inf, inf }, f64), torch.tensor({ -inf, inf, -inf }, f64)):tolist(), { -inf, inf, inf }, "infinities")
  gradcheck("logaddexp2", function(u, v) return torch.logaddexp2(u, v) end, { randn(5, f64), randn(5, f64) })
  T.raises(function() torch.logaddexp2(torch.tensor({ 1 }), torch.tensor({ 2 })) end, "~expected floating point inputs")

  local xs = { inf, -inf, nan, 0.0, -1.0, 1e308 }
  local pos, neg = {}, {}
  for i, v in ipairs(xs) do pos[i], neg[i] = v == inf, v == -inf end
  T.eq(torch.isposinf(torch.tensor(xs, f64)):tolist(), pos, "isposinf")
  T.eq(torch.tensor(xs, f64):isneginf():tolist(), neg, "isneginf")
  T.eq(torch.isposinf(torch.tensor({ 1, 2 })):tolist(), { false, false }, "integers are finite")

  for _, p in ipairs({ 1, 2, 3, 4 }) do
    local zs = { 2.5, 3.0, 4.5, 7.0 }
    local ref = {}
    for i, z in ipairs(zs) do
      local s = p * (p - 1) / 4 * math.log(math.pi)
      for j = 1, p do s = s + math.log(gamma_half(z - (j - 1) / 2)) end
      ref[i] = s
    end
    T.near(torch.mvlgamma(torch.tensor(zs, f64), p):tolist(), ref, 1e-13, "mvlgamma p=" .. p)
  end
  T.near(torch.mvlgamma(torch.tensor({ 3 }), 2):item(), math.log(gamma_half(3) * gamma_half(2.5)) + math.log(math.pi) / 2, 1e-6,
    "integer input gives floats")
  local mz = torch.tensor({ 3.0, 4.5 }, f64)
  mz:mvlgamma_(3)
  T.near(mz:tolist(), { 3 / 2 * math.log(math.pi) + math.log(gamma_half(3) * gamma_half(2.5) * gamma_half(2)),
    3 / 2 * math.log(math.pi) + math.log(gamma_half(4.5) * gamma_half(4) * gamma_half(3.5)) }, 1e-13, "mvlgamma_ in place")
  gradcheck("mvlgamma", function(t) return torch.mvlgamma(t, 3) end, { torch.rand(4, f64) + 1.5 })
  T.raises(function() torch.mvlgamma(torch.ones(2), 0) end, "p has to be greater than or equal to 1")
  T.raises(function() torch.mvlgamma(torch.tensor({ true }), 2) end, "The input tensor may not be a boolean tensor.")

  -- frexp by halving and doubling (exact in binary floating point)
  local function frexp_ref(v)
    if v == 0 or v ~= v or v == inf or v == -inf then return v, 0 end
    local m, e = math.abs(v), 0
    while m >= 1 do m, e = m / 2, e + 1 end
    while m < 0.5 do m, e = m * 2, e - 1 end
    return v < 0 and -m or m, e
  end
  local vs = { 0.0, 1.0, -3.0, 0.75, 1e-310, 4.9406564584124654e-324, 2 ^ 1023 * 1.999, -123456.789, 2 ^ -1022, 1 - 2 ^ -53,
    4 - 2 ^ -51, -2 ^ 100 * (1 - 2 ^ -53) } -- the last two: log2 rounds up to an integer
  for _ = 1, 20 do vs[#vs + 1] = (math.random() - 0.5) * 10 ^ math.random(-300, 300) end
  local wm, we = {}, {}
  for i, v in ipairs(vs) do wm[i], we[i] = frexp_ref(v) end
  local m, e = torch.frexp(torch.tensor(vs, f64))
  T.check(e.dtype == torch.int32 and m.dtype == torch.float64, "exponent int32, mantissa the input's dtype")
  T.eq(m:tolist(), wm, "mantissa, float64")
  T.eq(e:tolist(), we, "exponent, float64")
  local sm, se = torch.frexp(torch.tensor({ -0.0, inf, -inf, nan }, f64))
  T.eq(se:tolist(), { 0, 0, 0, 0 }, "special values: exponent 0")
  local sml = sm:tolist()
  T.check(1 / sml[1] == -inf and sml[2] == inf and sml[3] == -inf and sml[4] ~= sml[4], "special values keep their value")
  local f32 = torch.randn(40) * 1e4
  f32[0] = 2 ^ -140 -- subnormal in float32
  f32[1] = 3.0e38
  local fl = f32:tolist()
  local fm, fe = {}, {}
  for i, v in ipairs(fl) do fm[i], fe[i] = frexp_ref(v) end
  local m32, e32 = f32:frexp()
  T.eq({ m32:tolist(), e32:tolist() }, { fm, fe }, "float32, subnormal and near the top included")
  local m16, e16 = torch.frexp(torch.tensor({ 6e-8, 65504.0 }, { dtype = torch.float16 }))
  T.eq({ m16:tolist(), e16:tolist() }, { { 0.5, 65504 / 2 ^ 16 }, { -23, 16 } }, "float16 subnormal and max")
  gradcheck("frexp mantissa", function(t) return (torch.frexp(t)) end, { randn(6, f64) * 100 })
  T.raises(function() torch.frexp(torch.tensor({ 1, 2 })) end, "torch.frexp() only supports floating-point dtypes")
end)
