-- torch.nn.functional: every function against a reference computed in plain Lua
-- over tolist() values (or an independent formula), on small random inputs, with
-- every option, plus PyTorch's argument forms and error messages.
local T = ...

-- ---- helpers ----

local function flatten(v, out)
  out = out or {}
  if type(v) ~= "table" then out[#out + 1] = v; return out end
  for _, e in ipairs(v) do flatten(e, out) end
  return out
end

-- A tensor's values as a flat row-major list with a 0-based accessor: a:at(i, j, ...).
local Arr = {}
Arr.__index = Arr
local function A(t)
  local s = t.shape:totable()
  local st, n = {}, 1
  for d = #s, 1, -1 do st[d] = n; n = n * s[d] end
  return setmetatable({ d = flatten(t:tolist()), s = s, st = st }, Arr)
end
function Arr:at(...)
  local k = 1
  for d = 1, select("#", ...) do k = k + select(d, ...) * self.st[d] end
  return self.d[k]
end
function Arr:flat(k) return self.d[k + 1] end

-- A nested list of `shape` with entries f(i1, i2, ...) (0-based indices).
local function build(shape, f)
  local idx = {}
  local function rec(d)
    if d > #shape then return f(table.unpack(idx, 1, #shape)) end
    local out = {}
    for i = 0, shape[d] - 1 do idx[d] = i; out[i + 1] = rec(d + 1) end
    return out
  end
  return rec(1)
end

local function map(list, f)
  local out = {}
  for i, v in ipairs(list) do out[i] = type(v) == "table" and map(v, f) or f(v) end
  return out
end

local function map2(a, b, f)
  local out = {}
  for i = 1, #a do out[i] = type(a[i]) == "table" and map2(a[i], b[i], f) or f(a[i], b[i]) end
  return out
end

local function sum(l) local s = 0; for _, v in ipairs(l) do s = s + v end; return s end

local function sigmoid(v) return 1 / (1 + math.exp(-v)) end

-- erf by its Taylor series (|x| < 6 is plenty for randn inputs)
local function erf(x)
  if math.abs(x) > 6 then return x > 0 and 1 or -1 end
  local s, term, n = x, x, 0
  repeat
    n = n + 1
    term = term * -x * x / n
    local add = term / (2 * n + 1)
    s = s + add
  until (math.abs(add) < 1e-17 and n > 3) or n > 300
  return 2 / math.sqrt(math.pi) * s
end

local function same_obj(a, b) return rawequal(a, b) end

-- float64 checks: TOL for composites (a few roundings), EXACT for single operations.
local TOL, EXACT = 1e-12, 1e-15

torch.manual_seed(1234)

-- ---- linear ----

T.test("linear", function()
  local x, w, b = torch.randn(4, 3, { dtype = torch.float64 }), torch.randn(5, 3, { dtype = torch.float64 }),
    torch.randn(5, { dtype = torch.float64 })
  local X, W, B = A(x), A(w), A(b)
  local function ref(bias) return build({ 4, 5 }, function(i, o)
    local s = bias and B:at(o) or 0
    for k = 0, 2 do s = s + X:at(i, k) * W:at(o, k) end
    return s
  end) end
  T.near(F.linear(x, w, b):tolist(), ref(true), TOL, "2-D input with bias (addmm)")
  T.near(F.linear(x, w):tolist(), ref(false), TOL, "no bias")
  T.near(F.linear(x, w, { bias = b }):tolist(), ref(true), TOL, "bias by keyword")
  T.near(F.linear(x:t():contiguous():t(), w, b):tolist(), ref(true), TOL, "non-contiguous input")
  local x3 = x:reshape(2, 2, 3)
  local y3 = F.linear(x3, w, b)
  T.eq(y3.shape:totable(), { 2, 2, 5 }, "leading dims kept")
  T.near(y3:reshape(4, 5):tolist(), ref(true), TOL, "3-D input (matmul)")
  T.near(F.linear(x[1], w, b):tolist(), ref(true)[2], TOL, "1-D input")
  local xf, wf = torch.randn(2, 3), torch.randn(4, 3)
  T.check(F.linear(xf, wf).dtype == torch.float32, "float32 stays float32")
  T.raises(function() F.linear(torch.randn(30, 4), torch.randn(2, 5)) end,
    "~bad argument #2 to 'linear' (input [30, 4] and weight [2, 5] do not match)")
  T.raises(function() F.linear(x, w, b, { foo = 1 }) end, "~unknown keyword 'foo'")
end)

-- ---- conv2d ----

-- pads: {top, bottom, left, right}
local function conv2d_ref(x, w, b, stride, pads, dil, groups)
  local X, W = A(x), A(w)
  local N, C, H, Wd = table.unpack(X.s)
  local O, Cg, KH, KW = table.unpack(W.s)
  local B = b and A(b)
  local OH = (H + pads[1] + pads[2] - dil[1] * (KH - 1) - 1) // stride[1] + 1
  local OW = (Wd + pads[3] + pads[4] - dil[2] * (KW - 1) - 1) // stride[2] + 1
  local per = O // groups
  return build({ N, O, OH, OW }, function(n, o, oh, ow)
    local g = o // per
    local s = B and B:at(o) or 0
    for c = 0, Cg - 1 do
      for p = 0, KH - 1 do
        local h = oh * stride[1] - pads[1] + p * dil[1]
        if h >= 0 and h < H then
          for q = 0, KW - 1 do
            local ww = ow * stride[2] - pads[3] + q * dil[2]
            if ww >= 0 and ww < Wd then s = s + X:at(n, g * Cg + c, h, ww) * W:at(o, c, p, q) end
          end
        end
      end
    end
    return s
  end)
end

T.test("conv2d", function()
  local f64 = { dtype = torch.float64 }
  local x = torch.randn(2, 4, 7, 6, f64)
  local w = torch.randn(6, 2, 3, 2, f64)
  local b = torch.randn(6, f64)
  local w4 = torch.randn(6, 4, 3, 2, f64)
  T.near(F.conv2d(x, w4, b):tolist(), conv2d_ref(x, w4, b, { 1, 1 }, { 0, 0, 0, 0 }, { 1, 1 }, 1), 1e-10, "default options")
  T.near(F.conv2d(x, w4, nil, 2, 1):tolist(), conv2d_ref(x, w4, nil, { 2, 2 }, { 1, 1, 1, 1 }, { 1, 1 }, 1), 1e-10,
    "stride and padding positional")
  T.near(F.conv2d(x, w4, b, { 2, 1 }, { 1, 2 }, { 2, 1 }):tolist(),
    conv2d_ref(x, w4, b, { 2, 1 }, { 1, 1, 2, 2 }, { 2, 1 }, 1), 1e-10, "pairs for stride, padding, dilation")
  T.near(F.conv2d(x, w, b, { groups = 2, padding = 1 }):tolist(),
    conv2d_ref(x, w, b, { 1, 1 }, { 1, 1, 1, 1 }, { 1, 1 }, 2), 1e-10, "groups by keyword")
  T.near(F.conv2d(x, w, b, 1, 0, 1, 2):tolist(), conv2d_ref(x, w, b, { 1, 1 }, { 0, 0, 0, 0 }, { 1, 1 }, 2), 1e-10,
    "groups positional")
  local y = F.conv2d(x, w4, b, { padding = "same" })
  T.eq(y.shape:totable(), { 2, 6, 7, 6 }, "'same' keeps the size")
  -- kernel 3x2: total padding 2 (1 top, 1 bottom) and 1 (0 left, 1 right)
  T.near(y:tolist(), conv2d_ref(x, w4, b, { 1, 1 }, { 1, 1, 0, 1 }, { 1, 1 }, 1), 1e-10, "'same' with an even kernel")
  T.near(F.conv2d(x, w4, b, { padding = "same", dilation = 2 }):tolist(),
    conv2d_ref(x, w4, b, { 1, 1 }, { 2, 2, 1, 1 }, { 2, 2 }, 1), 1e-10, "'same' with dilation")
  T.near(F.conv2d(x, w4, b, { padding = "valid" }):tolist(), conv2d_ref(x, w4, b, { 1, 1 }, { 0, 0, 0, 0 }, { 1, 1 }, 1),
    1e-10, "'valid'")
  local xu = x[0]
  T.near(F.conv2d(xu, w4, b, 1, 1):tolist(), conv2d_ref(x, w4, b, { 1, 1 }, { 1, 1, 1, 1 }, { 1, 1 }, 1)[1], 1e-10,
    "unbatched input")
  local xt = torch.randn(2, 4, 6, 7, f64):transpose(2, 3)
  T.near(F.conv2d(xt, w4, b, 1, 1):tolist(), conv2d_ref(xt, w4, b, { 1, 1 }, { 1, 1, 1, 1 }, { 1, 1 }, 1), 1e-10,
    "non-contiguous input")
  local xs = torch.randn(1, 2, 5, 5)
  local ws = torch.randn(3, 2, 3, 3)
  T.near(F.conv2d(xs, ws, nil, torch.Size({ 1, 1 }), torch.Size({ 1, 1 })):tolist(),
    conv2d_ref(xs, ws, nil, { 1, 1 }, { 1, 1, 1, 1 }, { 1, 1 }, 1), 1e-5, "float32, torch.Size arguments")
  T.raises(function() F.conv2d(x, w4, b, { padding = "full" }) end,
    "~Invalid padding string 'full', should be one of ['valid', 'same']")
  T.raises(function() F.conv2d(x, w4, b, { pad = 1 }) end, "~unknown keyword 'pad'")
  T.raises(function() F.conv2d(x, w4, b, { stride = { 1, 2, 3 } }) end, "~'stride' must be an int or a list of 2 ints")
  T.raises(function() F.conv2d(x, w4, b, 1, 0, { padding = 1 }) end, "~got multiple values for argument 'padding'")
  T.raises(function() F.conv2d(x, torch.randn(6, 3, 3, 3, f64)) end, "~expected input[2, 4, 7, 6] to have 3 channels")
  T.raises(function() F.conv2d(x, w4, b, { stride = 2, padding = "same" }) end,
    "~padding='same' is not supported for strided convolutions")
end)

-- ---- pools ----

local function pool_out(L, k, s, p, d, ceil)
  local num = L + 2 * p - d * (k - 1) - 1
  local o = (ceil and -((-num) // s) or num // s) + 1
  if ceil and (o - 1) * s >= L + p then o = o - 1 end
  return o
end

local function maxpool_ref(x, k, s, p, d, ceil)
  local X = A(x)
  local N, C, H, W = table.unpack(X.s)
  local OH, OW = pool_out(H, k[1], s[1], p[1], d[1], ceil), pool_out(W, k[2], s[2], p[2], d[2], ceil)
  local vals, idxs = {}, {}
  vals = build({ N, C, OH, OW }, function(n, c, oh, ow)
    local best, at = -math.huge, -1
    for i = 0, k[1] - 1 do
      local h = oh * s[1] - p[1] + i * d[1]
      for j = 0, k[2] - 1 do
        local w = ow * s[2] - p[2] + j * d[2]
        if h >= 0 and h < H and w >= 0 and w < W then
          local v = X:at(n, c, h, w)
          if v > best or v ~= v then best, at = v, h * W + w end
        end
      end
    end
    return best
  end)
  idxs = build({ N, C, OH, OW }, function(n, c, oh, ow)
    local best, at = -math.huge, -1
    for i = 0, k[1] - 1 do
      local h = oh * s[1] - p[1] + i * d[1]
      for j = 0, k[2] - 1 do
        local w = ow * s[2] - p[2] + j * d[2]
        if h >= 0 and h < H and w >= 0 and w < W then
          local v = X:at(n, c, h, w)
          if v > best then best, at = v, h * W + w end
        end
      end
    end
    return at
  end)
  return vals, idxs
end

local function avgpool_ref(x, k, s, p, ceil, include_pad, divisor)
  local X = A(x)
  local N, C, H, W = table.unpack(X.s)
  local OH, OW = pool_out(H, k[1], s[1], p[1], 1, ceil), pool_out(W, k[2], s[2], p[2], 1, ceil)
  return build({ N, C, OH, OW }, function(n, c, oh, ow)
    local h0, w0 = oh * s[1] - p[1], ow * s[2] - p[2]
    local h1, w1 = math.min(h0 + k[1], H + p[1]), math.min(w0 + k[2], W + p[2])
    local pool = (h1 - h0) * (w1 - w0)
    h0, w0, h1, w1 = math.max(h0, 0), math.max(w0, 0), math.min(h1, H), math.min(w1, W)
    local acc = 0
    for h = h0, h1 - 1 do for w = w0, w1 - 1 do acc = acc + X:at(n, c, h, w) end end
    local div = divisor or (include_pad and pool or (h1 - h0) * (w1 - w0))
    return acc / div
  end)
end

T.test("max_pool2d", function()
  local x = torch.randn(2, 3, 7, 8, { dtype = torch.float64 })
  local v, i = maxpool_ref(x, { 2, 2 }, { 2, 2 }, { 0, 0 }, { 1, 1 }, false)
  T.near(F.max_pool2d(x, 2):tolist(), v, 0, "kernel 2, stride defaults to kernel")
  T.near(F.max_pool2d(x, 2, {}):tolist(), v, 0, "stride {} means kernel size")
  local y, idx = F.max_pool2d(x, 2, { return_indices = true })
  T.near(y:tolist(), v, 0, "values with indices")
  T.eq(idx:tolist(), i, "indices are flat h*W+w")
  T.check(idx.dtype == torch.int64, "indices are int64")
  v, i = maxpool_ref(x, { 3, 2 }, { 2, 1 }, { 1, 1 }, { 1, 2 }, false)
  local y2, i2 = F.max_pool2d(x, { 3, 2 }, { 2, 1 }, 1, { 1, 2 }, false, true)
  T.near(y2:tolist(), v, 0, "positional kernel, stride, padding, dilation")
  T.eq(i2:tolist(), i, "their indices")
  v = maxpool_ref(x, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, true)
  T.near(F.max_pool2d(x, 3, 2, 1, { ceil_mode = true }):tolist(), v, 0, "ceil_mode")
  v = maxpool_ref(x, { 2, 3 }, { 3, 2 }, { 0, 1 }, { 2, 1 }, true)
  T.near(F.max_pool2d(x, { kernel_size = { 2, 3 }, stride = { 3, 2 }, padding = { 0, 1 }, dilation = { 2, 1 }, ceil_mode = true })
    :tolist(), v, 0, "every option by keyword")
  local a, b = F.max_pool2d_with_indices(x, 2)
  T.eq(b:tolist(), select(2, maxpool_ref(x, { 2, 2 }, { 2, 2 }, { 0, 0 }, { 1, 1 }, false)), "max_pool2d_with_indices")
  T.near(F.max_pool2d(x[0], 2):tolist(), maxpool_ref(x, { 2, 2 }, { 2, 2 }, { 0, 0 }, { 1, 1 }, false)[1], 0, "unbatched")
  local xt = x:transpose(2, 3)
  T.near(F.max_pool2d(xt, 3, 2):tolist(), (maxpool_ref(xt, { 3, 3 }, { 2, 2 }, { 0, 0 }, { 1, 1 }, false)), 0, "non-contiguous")
  T.check(F.max_pool2d(x:float(), 2).dtype == torch.float32, "float32")
  T.raises(function() F.max_pool2d(x, 2, { ceil = true }) end, "~unknown keyword 'ceil'")
  T.raises(function() F.max_pool2d(x, 2, 2, 2) end, "~pad should be")
  T.raises(function() F.max_pool2d(x) end, "~kernel_size")
end)

T.test("avg_pool2d", function()
  local x = torch.randn(2, 2, 7, 6, { dtype = torch.float64 })
  T.near(F.avg_pool2d(x, 2):tolist(), avgpool_ref(x, { 2, 2 }, { 2, 2 }, { 0, 0 }, false, true), TOL, "kernel 2")
  T.near(F.avg_pool2d(x, 3, 2, 1):tolist(), avgpool_ref(x, { 3, 3 }, { 2, 2 }, { 1, 1 }, false, true), TOL,
    "padding, count_include_pad default true")
  T.near(F.avg_pool2d(x, 3, 2, 1, { count_include_pad = false }):tolist(),
    avgpool_ref(x, { 3, 3 }, { 2, 2 }, { 1, 1 }, false, false), TOL, "count_include_pad=false")
  T.near(F.avg_pool2d(x, 3, 2, 1, true):tolist(), avgpool_ref(x, { 3, 3 }, { 2, 2 }, { 1, 1 }, true, true), TOL,
    "ceil_mode positional")
  T.near(F.avg_pool2d(x, 3, 2, 1, true, false):tolist(), avgpool_ref(x, { 3, 3 }, { 2, 2 }, { 1, 1 }, true, false), TOL,
    "ceil_mode without padded cells")
  T.near(F.avg_pool2d(x, { 3, 2 }, { 1, 2 }, { 1, 0 }, { divisor_override = 5 }):tolist(),
    avgpool_ref(x, { 3, 2 }, { 1, 2 }, { 1, 0 }, false, true, 5), TOL, "divisor_override")
  T.near(F.avg_pool2d(x:transpose(2, 3), 2):tolist(), avgpool_ref(x:transpose(2, 3), { 2, 2 }, { 2, 2 }, { 0, 0 }, false, true),
    TOL, "non-contiguous")
  T.raises(function() F.avg_pool2d(x, 2, { divisor_override = 0 }) end, "~divisor must be not zero")
  T.raises(function() F.avg_pool2d(x, 2, { dilation = 2 }) end, "~unknown keyword 'dilation'")
end)

local function adaptive_ref(x, oh, ow, is_max)
  local X = A(x)
  local N, C, H, W = table.unpack(X.s)
  local function start(i, o, L) return (i * L) // o end
  local function stop(i, o, L) return -((-(i + 1) * L) // o) end
  local vals = build({ N, C, oh, ow }, function(n, c, i, j)
    local acc, best, cnt = 0, -math.huge, 0
    for h = start(i, oh, H), stop(i, oh, H) - 1 do
      for w = start(j, ow, W), stop(j, ow, W) - 1 do
        local v = X:at(n, c, h, w)
        acc, cnt = acc + v, cnt + 1
        if v > best then best = v end
      end
    end
    return is_max and best or acc / cnt
  end)
  local idx = build({ N, C, oh, ow }, function(n, c, i, j)
    local best, at = -math.huge, -1
    for h = start(i, oh, H), stop(i, oh, H) - 1 do
      for w = start(j, ow, W), stop(j, ow, W) - 1 do
        local v = X:at(n, c, h, w)
        if v > best then best, at = v, h * W + w end
      end
    end
    return at
  end)
  return vals, idx
end

T.test("adaptive pools", function()
  local x = torch.randn(2, 3, 7, 5, { dtype = torch.float64 })
  T.near(F.adaptive_avg_pool2d(x, 3):tolist(), (adaptive_ref(x, 3, 3)), TOL, "avg, int size")
  T.near(F.adaptive_avg_pool2d(x, { 4, 2 }):tolist(), (adaptive_ref(x, 4, 2)), TOL, "avg, pair")
  T.near(F.adaptive_avg_pool2d(x, { nil, 2 }):tolist(), (adaptive_ref(x, 7, 2)), TOL, "avg, nil keeps the height")
  T.near(F.adaptive_avg_pool2d(x, { 3 }):tolist(), (adaptive_ref(x, 3, 5)), TOL, "avg, {h, nil} keeps the width")
  T.near(F.adaptive_avg_pool2d(x, 1):tolist(), (adaptive_ref(x, 1, 1)), TOL, "avg to 1x1")
  T.near(F.adaptive_avg_pool2d(x, { output_size = torch.Size({ 2, 3 }) }):tolist(), (adaptive_ref(x, 2, 3)), TOL,
    "avg, torch.Size by keyword")
  T.near(F.adaptive_avg_pool2d(x, 9):tolist(), (adaptive_ref(x, 9, 9)), TOL, "avg, output larger than input")
  local v, i = adaptive_ref(x, 3, 2, true)
  T.near(F.adaptive_max_pool2d(x, { 3, 2 }):tolist(), v, 0, "max")
  local y, idx = F.adaptive_max_pool2d(x, { 3, 2 }, true)
  T.near(y:tolist(), v, 0, "max with indices")
  T.eq(idx:tolist(), i, "max indices")
  local _, idx2 = F.adaptive_max_pool2d(x, { 3, 2 }, { return_indices = true })
  T.eq(idx2:tolist(), i, "return_indices by keyword")
  T.check(select("#", F.adaptive_max_pool2d(x, 2)) == 1, "one result without return_indices")
  T.near(F.adaptive_avg_pool2d(x[0], 2):tolist(), (adaptive_ref(x, 2, 2))[1], TOL, "unbatched")
  T.raises(function() F.adaptive_avg_pool2d(x, { 1, 2, 3 }) end, "~'output_size' must be an int or a list of 2 ints")
  T.raises(function() F.adaptive_avg_pool2d(x) end, "~output_size")
end)

-- ---- activations ----

T.test("activations", function()
  local x = torch.randn(3, 5, { dtype = torch.float64 }) * 2
  local X = x:tolist()
  T.near(F.relu(x):tolist(), map(X, function(v) return math.max(v, 0) end), 0, "relu")
  T.near(F.relu6(x * 3):tolist(), map(X, function(v) return math.min(math.max(3 * v, 0), 6) end), TOL, "relu6")
  T.near(F.hardtanh(x):tolist(), map(X, function(v) return math.min(math.max(v, -1), 1) end), 0, "hardtanh")
  T.near(F.hardtanh(x, -0.5, 2):tolist(), map(X, function(v) return math.min(math.max(v, -0.5), 2) end), 0, "hardtanh bounds")
  T.near(F.hardtanh(x, { min_val = -2, max_val = 0.5 }):tolist(), map(X, function(v) return math.min(math.max(v, -2), 0.5) end),
    0, "hardtanh keywords")
  T.near(F.leaky_relu(x):tolist(), map(X, function(v) return v > 0 and v or 0.01 * v end), TOL, "leaky_relu")
  T.near(F.leaky_relu(x, 0.2):tolist(), map(X, function(v) return v > 0 and v or 0.2 * v end), TOL, "leaky_relu slope")
  T.near(F.leaky_relu(x, { negative_slope = 0.3 }):tolist(), map(X, function(v) return v > 0 and v or 0.3 * v end), TOL,
    "leaky_relu keyword")
  T.near(F.elu(x):tolist(), map(X, function(v) return v > 0 and v or math.exp(v) - 1 end), TOL, "elu")
  T.near(F.elu(x, 0.5):tolist(), map(X, function(v) return v > 0 and v or 0.5 * (math.exp(v) - 1) end), TOL, "elu alpha")
  T.near(F.elu(torch.tensor({ 1000.0, -1000.0 })):tolist(), { 1000, -1 }, 0, "elu of large values")
  T.near(F.gelu(x):tolist(), map(X, function(v) return 0.5 * v * (1 + erf(v / math.sqrt(2))) end), TOL, "gelu")
  T.near(F.gelu(x, { approximate = "tanh" }):tolist(), map(X, function(v)
    return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ^ 3)))
  end), TOL, "gelu tanh")
  T.near(F.gelu(x, "none"):tolist(), F.gelu(x):tolist(), 0, "gelu 'none' positional")
  T.near(F.silu(x):tolist(), map(X, function(v) return v * sigmoid(v) end), TOL, "silu")
  T.near(F.sigmoid(x):tolist(), map(X, sigmoid), TOL, "sigmoid")
  T.near(F.tanh(x):tolist(), map(X, math.tanh), TOL, "tanh")
  T.near(F.softplus(x):tolist(), map(X, function(v) return math.log(1 + math.exp(v)) end), TOL, "softplus")
  T.near(F.softplus(x, 2, 1):tolist(), map(X, function(v) return 2 * v > 1 and v or math.log(1 + math.exp(2 * v)) / 2 end),
    TOL, "softplus beta, threshold")
  T.near(F.softplus(torch.tensor({ 100.0 })):tolist(), { 100 }, 0, "softplus above the threshold")
  T.near(F.logsigmoid(x):tolist(), map(X, function(v) return math.log(sigmoid(v)) end), TOL, "logsigmoid")
  T.near(F.logsigmoid(torch.tensor({ -800.0, 800.0 }, { dtype = torch.float64 })):tolist(), { -800, 0 }, TOL,
    "logsigmoid of large values")
  local xf = torch.randn(4, 3)
  T.check(F.gelu(xf).dtype == torch.float32 and F.silu(xf).dtype == torch.float32, "float32 stays float32")
  T.near(F.gelu(xf):tolist(), map(xf:tolist(), function(v) return 0.5 * v * (1 + erf(v / math.sqrt(2))) end), 1e-6, "gelu float32")
  T.near(F.relu(x:t()):tolist(), map(x:t():tolist(), function(v) return math.max(v, 0) end), 0, "relu non-contiguous")
  T.raises(function() F.gelu(x, { approximate = "fast" }) end, "~approximate argument must be either none or tanh.")
  T.raises(function() F.leaky_relu(x, { slope = 1 }) end, "~bad argument #2 to 'leaky_relu' (unknown keyword 'slope')")
  T.raises(function() F.relu(nil) end, "~bad argument #1 to 'relu' (tensor expected, got nil)")
  T.raises(function() F.hardtanh(x, 1, -1) end, "~min_val cannot be greater than max_val")
end)

T.test("in-place activations", function()
  local function check(name, f, ref)
    local x = torch.randn(2, 3, { dtype = torch.float64 })
    local want = map(x:tolist(), ref)
    local r = f(x)
    T.check(same_obj(r, x), name .. " returns its input")
    T.near(x:tolist(), want, TOL, name .. " writes its input")
  end
  check("relu(x, true)", function(x) return F.relu(x, true) end, function(v) return math.max(v, 0) end)
  check("relu {inplace}", function(x) return F.relu(x, { inplace = true }) end, function(v) return math.max(v, 0) end)
  check("relu6", function(x) return F.relu6(x:mul_(4), true) end, function(v) return math.min(math.max(4 * v, 0), 6) end)
  check("leaky_relu", function(x) return F.leaky_relu(x, 0.1, true) end, function(v) return v > 0 and v or 0.1 * v end)
  check("elu", function(x) return F.elu(x, { inplace = true }) end, function(v) return v > 0 and v or math.exp(v) - 1 end)
  check("silu", function(x) return F.silu(x, true) end, function(v) return v * sigmoid(v) end)
  check("hardtanh", function(x) return F.hardtanh(x, -0.5, 0.5, true) end, function(v) return math.min(math.max(v, -0.5), 0.5) end)
  local x = torch.randn(5)
  local y = F.relu(x)
  T.check(not same_obj(x, y), "relu without inplace makes a new tensor")
end)

-- ---- softmax ----

local function softmax_ref(list2d, dim, log)
  -- list2d: nested {rows}{cols}; dim 0 or 1
  local R, C = #list2d, #list2d[1]
  return build({ R, C }, function(i, j)
    local m, s = -math.huge, 0
    local n = dim == 0 and R or C
    local function at(k) return dim == 0 and list2d[k + 1][j + 1] or list2d[i + 1][k + 1] end
    for k = 0, n - 1 do m = math.max(m, at(k)) end
    for k = 0, n - 1 do s = s + math.exp(at(k) - m) end
    local v = list2d[i + 1][j + 1]
    return log and (v - m - math.log(s)) or math.exp(v - m) / s
  end)
end

T.test("softmax, log_softmax, softmin", function()
  local x = torch.randn(3, 4, { dtype = torch.float64 }) * 3
  local X = x:tolist()
  T.near(F.softmax(x, 1):tolist(), softmax_ref(X, 1), TOL, "softmax dim 1")
  T.near(F.softmax(x, 0):tolist(), softmax_ref(X, 0), TOL, "softmax dim 0")
  T.near(F.softmax(x, -1):tolist(), softmax_ref(X, 1), TOL, "softmax dim -1")
  T.near(F.softmax(x, { dim = 0 }):tolist(), softmax_ref(X, 0), TOL, "softmax dim by keyword")
  T.near(F.log_softmax(x, 1):tolist(), softmax_ref(X, 1, true), TOL, "log_softmax dim 1")
  T.near(F.log_softmax(x, 0):tolist(), softmax_ref(X, 0, true), TOL, "log_softmax dim 0")
  T.near(F.softmin(x, 1):tolist(), softmax_ref(map(X, function(v) return -v end), 1), TOL, "softmin")
  T.near(torch.softmax(x, 1):tolist(), softmax_ref(X, 1), TOL, "torch.softmax")
  T.near(x:softmax(0):tolist(), softmax_ref(X, 0), TOL, "x:softmax")
  T.near(x:log_softmax(1):tolist(), softmax_ref(X, 1, true), TOL, "x:log_softmax")
  T.near(torch.log_softmax(x:t(), 0):t():tolist(), softmax_ref(X, 1, true), TOL, "non-contiguous")
  local xf = x:float()
  local y = F.softmax(xf, 1, { dtype = torch.float64 })
  T.check(y.dtype == torch.float64, "dtype= sets the result dtype")
  T.near(y:tolist(), softmax_ref(xf:tolist(), 1), TOL, "dtype= computes in that dtype")
  T.check(F.log_softmax(xf, 1, nil, torch.float64).dtype == torch.float64, "dtype positional (4th, after _stacklevel)")
  T.check(F.softmax(xf, 1).dtype == torch.float32, "float32 stays")
  T.near(F.softmax(torch.tensor({ 1000.0, 0.0 }), 0):tolist(), { 1, 0 }, 1e-7, "stable for large inputs")
  -- implicit dim (deprecated in PyTorch): 1 for 2-D, 0 for 1-D and 3-D
  local real_stderr, said = io.stderr, {}
  io.stderr = { write = function(_, ...) for _, v in ipairs({ ... }) do said[#said + 1] = v end end }
  local ok, y2 = pcall(F.softmax, x)
  F.softmax(x)
  io.stderr = real_stderr
  T.near(ok and y2:tolist(), softmax_ref(X, 1), TOL, "implicit dim of 2-D input is 1")
  T.eq(table.concat(said), "UserWarning: Implicit dimension choice for softmax has been deprecated. Change the call to " ..
    "include dim=X as an argument.\n", "implicit dim warns once")
  local x3 = torch.randn(2, 3, 2)
  T.near(F.softmax(x3):tolist(), F.softmax(x3, 0):tolist(), 0, "implicit dim of 3-D input is 0")
  T.raises(function() torch.softmax(x) end, "~missing required argument 'dim'")
  T.raises(function() F.softmax(x, 2) end, "~out of range")
  T.raises(function() F.softmax(x, 1, { dtyp = torch.float64 }) end, "~unknown keyword 'dtyp'")
end)

-- ---- dropout ----

-- dropout's uniforms from Philox in plain Lua, at the generator's (seed, offset) before the call
local philox = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "philox_ref.lua")
local function dropout_uniforms(n, wide)
  local st = torch.get_rng_state():tolist()
  local u = {}
  for j = 0, n - 1 do u[j + 1] = philox.dropout_u(st[1], st[2], j, wide) end
  return u
end

T.test("dropout", function()
  local x = torch.randn(50, 40, { dtype = torch.float64 })
  local X = flatten(x:tolist())
  for _, p in ipairs({ 0.2, 0.5, 0.9 }) do
    torch.manual_seed(99)
    local u = dropout_uniforms(#X, true)
    local y = F.dropout(x, p)
    local Y, ok = flatten(y:tolist()), true
    for k = 1, #X do
      local want = u[k] < 1 - p and X[k] / (1 - p) or 0
      if math.abs(Y[k] - want) > TOL * math.max(1, math.abs(want)) then ok = false end
    end
    T.check(ok, "dropout p=" .. p .. ": mask from Philox (two draws a block in float64), scaled by 1/(1-p)")
  end
  torch.manual_seed(5)
  local a = F.dropout(x, 0.3)
  torch.manual_seed(5)
  local b = F.dropout(x, { p = 0.3 })
  T.near(a:tolist(), b:tolist(), 0, "manual_seed repeats the mask")
  local kept = a:ne(0):sum():item() / x:numel()
  T.check(math.abs(kept - 0.7) < 0.05, "about 1-p of the elements are kept: " .. kept)
  T.check(same_obj(F.dropout(x, 0.5, false), x), "training=false returns the input")
  T.check(same_obj(F.dropout(x, { p = 0.5, training = false }), x), "training=false by keyword")
  T.check(same_obj(F.dropout(x, 0), x), "p=0 returns the input")
  local z = F.dropout(x, 1)
  T.eq(z:ne(0):sum():item(), 0, "p=1 gives zeros")
  T.eq(z.shape:totable(), { 50, 40 }, "p=1 keeps the shape")
  local xi = x:clone()
  torch.manual_seed(7)
  local r = F.dropout(xi, 0.5, true, true)
  torch.manual_seed(7)
  local want = F.dropout(x, 0.5)
  T.check(same_obj(r, xi), "inplace returns the input")
  T.near(xi:tolist(), want:tolist(), 0, "inplace writes the input")
  local xf = torch.randn(10)
  T.check(F.dropout(xf, 0.5).dtype == torch.float32, "float32 stays")
  -- feature dropout: one mask value per (sample, channel)
  local x4 = torch.randn(4, 6, 3, 3, { dtype = torch.float64 }) + 10
  torch.manual_seed(11)
  local u4 = dropout_uniforms(24, true) -- one per (sample, channel)
  local y4 = F.dropout2d(x4, 0.5)
  local X4, Y4, ok = A(x4), A(y4), true
  for n = 0, 3 do for c = 0, 5 do for h = 0, 2 do for w = 0, 2 do
    local want4 = u4[n * 6 + c + 1] < 0.5 and X4:at(n, c, h, w) * 2 or 0
    if math.abs(Y4:at(n, c, h, w) - want4) > TOL * math.max(1, math.abs(want4)) then ok = false end
  end end end end
  T.check(ok, "dropout2d drops whole channels")
  T.check(same_obj(F.dropout2d(x4, 0.5, false), x4), "dropout2d training=false")
  T.eq(F.dropout1d(torch.randn(3, 4, 5), 0.5).shape:totable(), { 3, 4, 5 }, "dropout1d")
  -- unbatched dropout1d / dropout3d: one value per channel (dim 0)
  local c2 = F.dropout1d(torch.ones(40, 6), 0.5)
  T.check(c2:min(1)[1]:eq(c2:max(1)[1]):all():item(), "dropout1d of [C, L] drops whole channels")
  local c4 = F.dropout3d(torch.ones(40, 2, 2, 2), 0.5):reshape(40, 8)
  T.check(c4:min(1)[1]:eq(c4:max(1)[1]):all():item(), "dropout3d of [C, D, H, W] drops whole channels")
  local c3 = F.dropout2d(torch.ones(2, 40, 6), 0.5)
  T.check(c3:min(2)[1]:eq(c3:max(2)[1]):all():item(), "dropout2d reads 3-D input as (N, C, L)")
  local z2 = torch.randn(4, 5)
  T.check(same_obj(F.dropout2d(z2, 0.5, false), z2), "dropout2d of 2-D input in eval (a warning)")
  T.raises(function() F.dropout(x, 1.5) end, "~dropout probability has to be between 0 and 1, but got 1.5")
  T.raises(function() F.dropout(x, { q = 1 }) end, "~unknown keyword 'q'")
  T.raises(function() F.dropout1d(torch.randn(3), 0.5) end, "~dropout1d: Expected 2D or 3D input, but received a 1D input.")
  T.raises(function() F.dropout2d(torch.randn(3), 0.5) end, "~Feature dropout requires at least 2 dimensions in the input")
end)

-- The mask is drawn before any rounding to the dtype: float16/bfloat16 keep an element where a
-- 24-bit uniform is under 1 - p, with the same numbers on the GPU as on the CPU, for the fused
-- kernel (contiguous input) and for the noise of the composed form (a transposed view).
T.test("dropout noise in each dtype and device", function()
  local devs = { "cpu" }
  if torch.cuda.is_available() then devs[2] = "cuda" end
  for _, dev in ipairs(devs) do
    for _, dt in ipairs({ torch.float32, torch.float16, torch.bfloat16, torch.float64 }) do
      for _, view in ipairs({ false, true }) do
        local x = torch.ones(40, 50, { dtype = dt, device = dev })
        if view then x = x:t() end
        torch.manual_seed(3)
        local u = dropout_uniforms(2000, dt == torch.float64)
        local y = flatten(F.dropout(x, 0.3):float():cpu():tolist())
        local scale = torch.tensor({ 1 / 0.7 }, { dtype = dt }):item()
        local ok, bad = true, nil
        for k = 1, #y do
          local want = u[k] < 0.7 and scale or 0
          if y[k] ~= want and math.abs(y[k] - want) > 1e-6 then ok, bad = false, k; break end
        end
        T.check(ok, string.format("%s %s%s: element %s", dev, tostring(dt), view and " (a view)" or "", tostring(bad)))
      end
    end
  end
  T.raises(function() torch.ones(3):_dropout_noise_(0) end, "~keep probability must be in (0, 1]")
  T.raises(function() torch.ones(3, { dtype = torch.int64 }):_dropout_noise_(0.5) end, "~expected a floating point dtype")
end)

-- ---- normalisation ----

-- per-channel (dim 1) mean and biased / unbiased variance of x
local function channel_stats(x)
  local Xa = A(x)
  local C = Xa.s[2]
  local groups = {}
  for c = 1, C do groups[c] = {} end
  local inner = 1
  for d = 3, #Xa.s do inner = inner * Xa.s[d] end
  for k = 0, #Xa.d - 1 do
    local c = (k // inner) % C
    table.insert(groups[c + 1], Xa.d[k + 1])
  end
  local mean, var, uvar = {}, {}, {}
  for c = 1, C do
    local g = groups[c]
    local m = sum(g) / #g
    local s = 0
    for _, v in ipairs(g) do s = s + (v - m) ^ 2 end
    mean[c], var[c], uvar[c] = m, s / #g, s / (#g - 1)
  end
  return mean, var, uvar, inner
end

local function bn_ref(x, mean, var, w, b, eps)
  local Xa = A(x)
  return build(Xa.s, function(...)
    local idx = { ... }
    local c = idx[2] + 1
    local y = (Xa:at(...) - mean[c]) / math.sqrt(var[c] + eps)
    return y * (w and w[c] or 1) + (b and b[c] or 0)
  end)
end

T.test("batch_norm", function()
  local f64 = { dtype = torch.float64 }
  for _, shape in ipairs({ { 6, 3 }, { 4, 3, 5 }, { 2, 3, 4, 3 } }) do
    local x = torch.randn(shape, f64) * 2 + 1
    local w, b = torch.randn(3, f64), torch.randn(3, f64)
    local rm, rv = torch.randn(3, f64), torch.rand(3, f64) + 0.5
    local RM, RV = rm:tolist(), rv:tolist()
    local mean, var, uvar = channel_stats(x)
    local tag = "[" .. table.concat(shape, ",") .. "] "
    local y = F.batch_norm(x, rm, rv, w, b, true)
    T.near(y:tolist(), bn_ref(x, mean, var, w:tolist(), b:tolist(), 1e-5), TOL, tag .. "training: batch statistics")
    local want_m, want_v = {}, {}
    for c = 1, 3 do
      want_m[c] = 0.9 * RM[c] + 0.1 * mean[c]
      want_v[c] = 0.9 * RV[c] + 0.1 * uvar[c]
    end
    T.near(rm:tolist(), want_m, TOL, tag .. "running_mean updated in place")
    T.near(rv:tolist(), want_v, TOL, tag .. "running_var updated with the unbiased variance")
    local rm2, rv2 = rm:clone(), rv:clone()
    local ye = F.batch_norm(x, rm, rv, w, b)
    T.near(ye:tolist(), bn_ref(x, rm:tolist(), rv:tolist(), w:tolist(), b:tolist(), 1e-5), TOL, tag .. "eval: running statistics")
    T.near(rm:tolist(), rm2:tolist(), 0, tag .. "eval leaves running_mean")
    T.near(rv:tolist(), rv2:tolist(), 0, tag .. "eval leaves running_var")
  end
  local x = torch.randn(5, 3, 2, f64)
  local mean, var, uvar = channel_stats(x)
  local rm, rv = torch.zeros(3, f64), torch.ones(3, f64)
  local y = F.batch_norm(x, rm, rv, { training = true, momentum = 0.3, eps = 0.01 })
  T.near(y:tolist(), bn_ref(x, mean, var, nil, nil, 0.01), TOL, "keywords, no affine")
  local wm, wv = {}, {}
  for c = 1, 3 do wm[c], wv[c] = 0.3 * mean[c], 0.7 + 0.3 * uvar[c] end
  T.near(rm:tolist(), wm, TOL, "momentum")
  T.near(rv:tolist(), wv, TOL, "momentum (var)")
  T.near(F.batch_norm(x, nil, nil, nil, nil, true):tolist(), bn_ref(x, mean, var, nil, nil, 1e-5), TOL,
    "training without running statistics")
  local xr = torch.randn(3, 5, f64):t()
  local m2, v2 = channel_stats(xr)
  T.near(F.batch_norm(xr, nil, nil, nil, nil, true):tolist(), bn_ref(xr, m2, v2, nil, nil, 1e-5), TOL, "non-contiguous input")
  local xs = torch.randn(4, 3)
  local rmf = torch.zeros(3)
  F.batch_norm(xs, rmf, torch.ones(3), nil, nil, true)
  T.check(not rmf.requires_grad and rmf.grad_fn == nil, "running stats stay out of the graph")
  T.raises(function() F.batch_norm(torch.randn(1, 3), nil, nil, nil, nil, true) end,
    "~Expected more than 1 value per channel when training, got input size torch.Size([1, 3])")
  T.raises(function() F.batch_norm(x, torch.zeros(4, f64), torch.ones(3, f64)) end, "~running_mean should contain 3 elements not 4")
  T.raises(function() F.batch_norm(x, nil, nil) end, "~running_mean and running_var must be defined in evaluation mode")
  T.raises(function() F.batch_norm(x, rm, rv, { train = true }) end, "~unknown keyword 'train'")
end)

T.test("layer_norm", function()
  local f64 = { dtype = torch.float64 }
  local x = torch.randn(2, 3, 4, f64) * 3 + 1
  local X = A(x)
  local function ref(k, w, b, eps)
    -- normalise over the last k dims
    local inner = 1
    for d = #X.s - k + 1, #X.s do inner = inner * X.s[d] end
    local stats = {}
    for g = 0, #X.d // inner - 1 do
      local s, q = 0, 0
      for i = 1, inner do s = s + X.d[g * inner + i] end
      local m = s / inner
      for i = 1, inner do q = q + (X.d[g * inner + i] - m) ^ 2 end
      stats[g] = { m, q / inner }
    end
    local Wl, Bl = w and flatten(w:tolist()), b and flatten(b:tolist())
    local k0 = 0
    return build(X.s, function(...)
      local flat = 0
      local idx = { ... }
      for d = 1, #idx do flat = flat + idx[d] * X.st[d] end
      local g, r = flat // inner, flat % inner
      local st = stats[g]
      k0 = k0 + 1
      return (X.d[flat + 1] - st[1]) / math.sqrt(st[2] + (eps or 1e-5)) * (Wl and Wl[r + 1] or 1) + (Bl and Bl[r + 1] or 0)
    end)
  end
  T.near(F.layer_norm(x, { 4 }):tolist(), ref(1), TOL, "last dim")
  T.near(F.layer_norm(x, 4):tolist(), ref(1), TOL, "int normalized_shape")
  T.near(F.layer_norm(x, x.shape:totable()):tolist(), ref(3), TOL, "every dim")
  local w, b = torch.randn(3, 4, f64), torch.randn(3, 4, f64)
  T.near(F.layer_norm(x, { 3, 4 }, w, b):tolist(), ref(2, w, b), TOL, "two dims with weight and bias")
  T.near(F.layer_norm(x, torch.Size({ 3, 4 }), { weight = w, bias = b, eps = 0.1 }):tolist(), ref(2, w, b, 0.1), TOL,
    "torch.Size, keywords, eps")
  T.raises(function() F.layer_norm(x, { 3 }) end,
    "~Given normalized_shape=[3], expected input with shape [*, 3], but got input of size[2, 3, 4]")
  T.raises(function() F.layer_norm(x, { 4 }, torch.randn(5, f64)) end,
    "~Expected weight to be of same shape as normalized_shape, but got weight of shape [5] and normalized_shape = [4]")
end)

T.test("group_norm", function()
  local f64 = { dtype = torch.float64 }
  local x = torch.randn(2, 6, 3, 2, f64) * 2 + 1
  local X = A(x)
  local function ref(G, w, b, eps)
    local N, C = X.s[1], X.s[2]
    local inner = #X.d // (N * C)
    local per = C // G * inner
    local stats = {}
    for g = 0, N * G - 1 do
      local s, q = 0, 0
      for i = 1, per do s = s + X.d[g * per + i] end
      local m = s / per
      for i = 1, per do q = q + (X.d[g * per + i] - m) ^ 2 end
      stats[g] = { m, q / per }
    end
    local Wl, Bl = w and w:tolist(), b and b:tolist()
    return build(X.s, function(n, c, h, ww)
      local st = stats[n * G + c // (C // G)]
      return (X:at(n, c, h, ww) - st[1]) / math.sqrt(st[2] + (eps or 1e-5)) * (Wl and Wl[c + 1] or 1) + (Bl and Bl[c + 1] or 0)
    end)
  end
  local w, b = torch.randn(6, f64), torch.randn(6, f64)
  T.near(F.group_norm(x, 3):tolist(), ref(3), TOL, "3 groups")
  T.near(F.group_norm(x, 2, w, b):tolist(), ref(2, w, b), TOL, "weight and bias")
  T.near(F.group_norm(x, 6, { weight = w, eps = 0.5 }):tolist(), ref(6, w, nil, 0.5), TOL, "a group per channel")
  T.near(F.group_norm(x, 1):tolist(), ref(1), TOL, "one group")
  T.raises(function() F.group_norm(torch.randn(2, 6, 4), 4) end,
    "~Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 6, 4] and num_groups=4")
  T.raises(function() F.group_norm(x, 2, torch.randn(5, f64)) end, "~Expected weight to be a vector of size equal to the number")
end)

T.test("normalize", function()
  local x = torch.randn(3, 4, { dtype = torch.float64 })
  local X = x:tolist()
  local function ref(p, dim)
    return build({ 3, 4 }, function(i, j)
      local s = 0
      for k = 1, dim == 1 and 4 or 3 do
        local v = dim == 1 and X[i + 1][k] or X[k][j + 1]
        s = s + math.abs(v) ^ p
      end
      return X[i + 1][j + 1] / math.max(s ^ (1 / p), TOL)
    end)
  end
  T.near(F.normalize(x):tolist(), ref(2, 1), TOL, "p=2 over dim 1")
  T.near(F.normalize(x, 1, 0):tolist(), ref(1, 0), TOL, "p=1 over dim 0")
  T.near(F.normalize(x, { p = 3, dim = -1 }):tolist(), ref(3, 1), TOL, "keywords")
  T.near(F.normalize(torch.zeros(2, 2)):tolist(), { { 0, 0 }, { 0, 0 } }, 0, "zero rows stay zero (eps)")
end)

-- ---- embedding ----

T.test("embedding", function()
  local w = torch.randn(6, 3, { dtype = torch.float64 })
  local W = w:tolist()
  local idx = torch.tensor({ { 0, 5, 2 }, { 2, 2, 1 } })
  local want = map(idx:tolist(), function(i) return i end)
  for r = 1, 2 do for c = 1, 3 do want[r][c] = W[idx:tolist()[r][c] + 1] end end
  T.near(F.embedding(idx, w):tolist(), want, 0, "rows of weight")
  T.eq(F.embedding(idx, w).shape:totable(), { 2, 3, 3 }, "shape indices + [D]")
  T.near(F.embedding(idx, w, 2):tolist(), want, 0, "padding_idx does not change the forward")
  T.near(F.embedding(idx, w, { padding_idx = -1 }):tolist(), want, 0, "negative padding_idx")
  T.near(F.embedding(idx:to(torch.int32), w):tolist(), want, 0, "int32 indices")
  T.near(torch.embedding(w, idx):tolist(), want, 0, "torch.embedding(weight, indices)")
  -- max_norm renormalises the referenced rows in place
  local w2 = torch.randn(5, 4, { dtype = torch.float64 }) * 3
  local before = w2:tolist()
  local out = F.embedding(torch.tensor({ 1, 3, 1 }), w2, { max_norm = 1.0 })
  local after = w2:tolist()
  for r = 1, 5 do
    local n = 0
    for c = 1, 4 do n = n + before[r][c] ^ 2 end
    n = math.sqrt(n)
    local scale = (r == 2 or r == 4) and n > 1 and 1 / (n + 1e-7) or 1
    T.near(after[r], map(before[r], function(v) return v * scale end), TOL, "max_norm row " .. (r - 1))
  end
  T.near(out:tolist(), { after[2], after[4], after[2] }, 0, "max_norm output uses the renormalised rows")
  local w3 = torch.tensor({ { 3.0, -4.0 }, { 0.5, 0.25 } }, { dtype = torch.float64 })
  F.embedding(torch.tensor({ 0, 1 }), w3, { max_norm = 2, norm_type = 1 })
  T.near(w3:tolist(), { { 3 * 2 / (7 + 1e-7), -4 * 2 / (7 + 1e-7) }, { 0.5, 0.25 } }, TOL, "max_norm with norm_type=1")
  T.raises(function() F.embedding(idx, w, 6) end, "~Padding_idx must be within num_embeddings")
  T.raises(function() F.embedding(idx, w, -7) end, "~Padding_idx must be within num_embeddings")
  T.raises(function() F.embedding(torch.tensor({ 6 }), w) end, "~out of range")
  T.raises(function() F.embedding(idx:float(), w) end, "~Long, Int")
end)

-- ---- pad ----

T.test("pad", function()
  local x = torch.randn(2, 3, 4, { dtype = torch.float64 })
  local X = A(x)
  -- pads given PyTorch's way: last dim first
  local function ref(pads, mode, value)
    local nd = #X.s
    local before, after = {}, {}
    for d = 1, nd do before[d], after[d] = 0, 0 end
    for k = 1, #pads // 2 do before[nd - k + 1], after[nd - k + 1] = pads[2 * k - 1], pads[2 * k] end
    local oshape = {}
    for d = 1, nd do oshape[d] = X.s[d] + before[d] + after[d] end
    return build(oshape, function(...)
      local idx = { ... }
      local src = {}
      for d = 1, nd do
        local i, n = idx[d] - before[d], X.s[d]
        if mode == "reflect" then
          if i < 0 then i = -i end
          if i >= n then i = 2 * (n - 1) - i end
        elseif mode == "replicate" then i = math.min(math.max(i, 0), n - 1)
        elseif mode == "circular" then i = i % n
        elseif i < 0 or i >= n then return value or 0 end
        src[d] = i
      end
      return X:at(table.unpack(src))
    end)
  end
  T.near(F.pad(x, { 1, 2 }):tolist(), ref({ 1, 2 }), 0, "last dim")
  T.near(F.pad(x, { 1, 0, 0, 2 }):tolist(), ref({ 1, 0, 0, 2 }), 0, "two dims, last first")
  T.near(F.pad(x, { 1, 1, 2, 0, 1, 2 }, "constant", 3.5):tolist(), ref({ 1, 1, 2, 0, 1, 2 }, nil, 3.5), 0, "every dim, value")
  T.near(F.pad(x, { 2, 1 }, { value = -1 }):tolist(), ref({ 2, 1 }, nil, -1), 0, "value by keyword")
  T.near(F.pad(x, { -1, 2, 1, -2 }):tolist(), ref({ -1, 2, 1, -2 }), 0, "negative pads crop")
  T.near(F.pad(x, { -1, -1 }):tolist(), ref({ -1, -1 }), 0, "crop only")
  T.near(F.pad(x:transpose(0, 2), { 1, 1 }):tolist(), F.pad(x:transpose(0, 2):contiguous(), { 1, 1 }):tolist(), 0, "non-contiguous")
  local i = torch.tensor({ { 1, 2 }, { 3, 4 } })
  local pi = F.pad(i, { 1, 0 }, "constant", 9)
  T.check(pi.dtype == torch.int64, "integer input keeps its dtype")
  T.eq(pi:tolist(), { { 9, 1, 2 }, { 9, 3, 4 } }, "integer pad value")
  local p0 = F.pad(x, {})
  T.check(not same_obj(p0, x), "no padding gives a copy")
  for _, mode in ipairs({ "reflect", "replicate", "circular" }) do
    T.near(F.pad(x, { 2, 3 }, mode):tolist(), ref({ 2, 3 }, mode), 0, mode .. " 1 dim")
    T.near(F.pad(x, { 1, 2, 2, 1 }, { mode = mode }):tolist(), ref({ 1, 2, 2, 1 }, mode), 0, mode .. " 2 dims")
  end
  local x4 = torch.randn(1, 2, 3, 3)
  T.eq(F.pad(x4, { 1, 1, 1, 1 }, "reflect").shape:totable(), { 1, 2, 5, 5 }, "reflect of a 4-D input")
  T.raises(function() F.pad(x, { 1 }) end, "~Padding length must be divisible by 2")
  T.raises(function() F.pad(x, { 1, 1, 1, 1, 1, 1, 1, 1 }) end,
    "~Padding length should be less than or equal to two times the input dimension but got padding length 8 and input of dimension 3")
  T.raises(function() F.pad(x, { -3, -2 }) end,
    "~The input size 4, plus negative padding -3 and -2 resulted in a negative output size, which is invalid. Check dimension 2 of your input.")
  T.raises(function() F.pad(x, { 4, 0 }, "reflect") end, "~Padding size should be less than the corresponding input dimension")
  T.raises(function() F.pad(x, { 1, 1 }, "reflect", 2) end, "~doesn't take in value argument")
  T.raises(function() F.pad(torch.randn(4), { 1, 1 }, "reflect") end, "~Only 2D, 3D, 4D, 5D padding with non-constant padding")
  T.raises(function() F.pad(x, { 1, 1 }, "wrap") end, "~Unrecognised padding mode wrap")
end)

-- ---- flatten, one_hot ----

T.test("flatten and one_hot", function()
  local x = torch.randn(2, 3, 4)
  T.eq(F.flatten(x).shape:totable(), { 24 }, "flatten")
  T.eq(F.flatten(x, 1).shape:totable(), { 2, 12 }, "flatten start_dim")
  T.near(F.flatten(x, 1):tolist()[2], flatten(x:tolist()[2]), 0, "flatten values")
  local t = torch.tensor({ 2, 0, 1, 2 })
  local oh = F.one_hot(t)
  T.check(oh.dtype == torch.int64, "one_hot is int64")
  T.eq(oh:tolist(), { { 0, 0, 1 }, { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 } }, "num_classes inferred")
  T.eq(F.one_hot(t, 5):tolist()[1], { 0, 0, 1, 0, 0 }, "num_classes given")
  T.eq(F.one_hot(t:reshape(2, 2), { num_classes = 4 }).shape:totable(), { 2, 2, 4 }, "any shape, keyword")
  T.eq(F.one_hot(torch.tensor(1), 3):tolist(), { 0, 1, 0 }, "0-dim input")
  T.eq(F.one_hot(torch.zeros(0, { dtype = torch.int64 }), 3).shape:totable(), { 0, 3 }, "empty input")
  T.raises(function() F.one_hot(t, 2) end, "~Class values must be smaller than num_classes.")
  T.raises(function() F.one_hot(torch.tensor({ -1 })) end, "~Class values must be non-negative.")
  T.raises(function() F.one_hot(t:float()) end, "~one_hot is only applicable to index tensor of type LongTensor.")
  T.raises(function() F.one_hot(torch.zeros(0, { dtype = torch.int64 })) end, "~Can not infer total number of classes from empty tensor.")
end)

-- ---- losses ----

-- log-softmax of the rows of a nested [N][C] list
local function logsm_rows(L)
  local out = {}
  for i, row in ipairs(L) do
    local m, s = -math.huge, 0
    for _, v in ipairs(row) do m = math.max(m, v) end
    for _, v in ipairs(row) do s = s + math.exp(v - m) end
    out[i] = {}
    for c, v in ipairs(row) do out[i][c] = v - m - math.log(s) end
  end
  return out
end

-- cross_entropy with class indices: loss_i = (1-ls) w[t] (-lp[t]) + ls/C sum_c w[c] (-lp[c]);
-- mean divides by the sum of w[t] over the non-ignored targets
local function ce_ref(X, t, opts)
  opts = opts or {}
  local lp = logsm_rows(X)
  local C = #X[1]
  local w = opts.weight or {}
  local ls, ignore = opts.label_smoothing or 0, opts.ignore_index or -100
  local losses, total, wsum = {}, 0, 0
  for i, ti in ipairs(t) do
    local l = 0
    if ti ~= ignore then
      local wt = w[ti + 1] or 1
      local smooth = 0
      for c = 1, C do smooth = smooth - (w[c] or 1) * lp[i][c] end
      l = (1 - ls) * wt * -lp[i][ti + 1] + ls / C * smooth
      wsum = wsum + wt
    end
    losses[i] = l
    total = total + l
  end
  local red = opts.reduction or "mean"
  if red == "none" then return losses end
  if red == "sum" then return total end
  return total / wsum
end

-- cross_entropy with probabilities: -sum_c w[c] lp[c] t'[c], t' = t (1-ls) + ls/C; mean over N
local function ce_prob_ref(X, P, opts)
  opts = opts or {}
  local lp = logsm_rows(X)
  local C = #X[1]
  local w = opts.weight or {}
  local ls = opts.label_smoothing or 0
  local losses, total = {}, 0
  for i = 1, #X do
    local l = 0
    for c = 1, C do l = l - (w[c] or 1) * lp[i][c] * (P[i][c] * (1 - ls) + ls / C) end
    losses[i], total = l, total + l
  end
  local red = opts.reduction or "mean"
  if red == "none" then return losses end
  if red == "sum" then return total end
  return total / #X
end

T.test("cross_entropy with class indices", function()
  local f64 = { dtype = torch.float64 }
  local x = torch.randn(6, 5, f64) * 2
  local t = torch.tensor({ 1, 0, 4, 2, 2, 3 })
  local X, Tl = x:tolist(), t:tolist()
  local wt = torch.rand(5, f64) + 0.5
  local W = wt:tolist()
  T.near(F.cross_entropy(x, t):item(), ce_ref(X, Tl), TOL, "mean")
  T.near(F.cross_entropy(x, t, { reduction = "sum" }):item(), ce_ref(X, Tl, { reduction = "sum" }), TOL, "sum")
  T.near(F.cross_entropy(x, t, { reduction = "none" }):tolist(), ce_ref(X, Tl, { reduction = "none" }), TOL, "none")
  T.near(F.cross_entropy(x, t, wt):item(), ce_ref(X, Tl, { weight = W }), TOL, "weight positional")
  T.near(F.cross_entropy(x, t, { weight = wt, reduction = "sum" }):item(), ce_ref(X, Tl, { weight = W, reduction = "sum" }),
    TOL, "weight, sum")
  local ti = torch.tensor({ 1, -100, 4, 2, -100, 3 })
  local TI = ti:tolist()
  T.near(F.cross_entropy(x, ti):item(), ce_ref(X, TI), TOL, "ignore_index default -100")
  local t2 = torch.tensor({ 1, 2, 4, 2, 2, 3 })
  T.near(F.cross_entropy(x, t2, { ignore_index = 2 }):item(), ce_ref(X, t2:tolist(), { ignore_index = 2 }), TOL, "ignore_index")
  T.near(F.cross_entropy(x, t2, { ignore_index = 2, weight = wt, reduction = "none" }):tolist(),
    ce_ref(X, t2:tolist(), { ignore_index = 2, weight = W, reduction = "none" }), TOL, "ignore_index, weight, none")
  for _, ls in ipairs({ 0.1, 0.5, 1.0 }) do
    for _, red in ipairs({ "mean", "sum", "none" }) do
      local o = { label_smoothing = ls, reduction = red }
      T.near(F.cross_entropy(x, t, o):tolist(), ce_ref(X, Tl, o), TOL, "label_smoothing " .. ls .. " " .. red)
      local ow = { label_smoothing = ls, reduction = red, weight = wt, ignore_index = 2 }
      T.near(F.cross_entropy(x, t2, ow):tolist(),
        ce_ref(X, t2:tolist(), { label_smoothing = ls, reduction = red, weight = W, ignore_index = 2 }), TOL,
        "label_smoothing " .. ls .. " " .. red .. " with weight and ignore_index")
    end
  end
  T.near(F.cross_entropy(x, ti, { label_smoothing = 0.2 }):item(), ce_ref(X, TI, { label_smoothing = 0.2 }), TOL,
    "label_smoothing with default ignored targets")
  -- positional: weight, size_average, ignore_index, reduce, reduction, label_smoothing
  T.near(F.cross_entropy(x, t2, nil, nil, 2, nil, "sum", 0.3):item(),
    ce_ref(X, t2:tolist(), { ignore_index = 2, reduction = "sum", label_smoothing = 0.3 }), TOL, "all positional")
  T.near(F.cross_entropy(x, t, { size_average = false }):item(), ce_ref(X, Tl, { reduction = "sum" }), TOL,
    "legacy size_average=false is sum")
  T.near(F.cross_entropy(x, t, { reduce = false }):tolist(), ce_ref(X, Tl, { reduction = "none" }), TOL,
    "legacy reduce=false is none")
  local all_ignored = F.cross_entropy(x, torch.full({ 6 }, -100, { dtype = torch.int64 })):item()
  T.check(all_ignored ~= all_ignored, "mean over no targets is nan")
  -- unbatched and K-dimensional
  T.near(F.cross_entropy(x[0], torch.tensor(1)):item(), ce_ref({ X[1] }, { 1 }), TOL, "unbatched [C] input, 0-dim target")
  local xk = torch.randn(2, 4, 3, f64)
  local tk = torch.tensor({ { 0, 3, 1 }, { 2, 2, 0 } })
  local rows, tl = {}, {}
  local XK, TK = xk:tolist(), tk:tolist()
  for n = 1, 2 do for d = 1, 3 do
    local row = {}
    for c = 1, 4 do row[c] = XK[n][c][d] end
    rows[#rows + 1], tl[#tl + 1] = row, TK[n][d]
  end end
  T.near(F.cross_entropy(xk, tk):item(), ce_ref(rows, tl), TOL, "[N, C, d] input")
  local kn = F.cross_entropy(xk, tk, { reduction = "none", label_smoothing = 0.1 })
  T.eq(kn.shape:totable(), { 2, 3 }, "[N, C, d] none keeps [N, d]")
  T.near(flatten(kn:tolist()), ce_ref(rows, tl, { reduction = "none", label_smoothing = 0.1 }), TOL, "[N, C, d] smoothing")
  local xf = x:float()
  T.near(F.cross_entropy(xf, t):item(), ce_ref(xf:tolist(), Tl), 1e-5, "float32")
  T.near(F.cross_entropy(x:t():contiguous():t(), t):item(), ce_ref(X, Tl), TOL, "non-contiguous input")
  T.raises(function() F.cross_entropy(torch.randn(4, 5), torch.tensor({ 1, 2, 3 })) end,
    "~bad argument #2 to 'cross_entropy' (Expected input batch_size (4) to match target batch_size (3).)")
  local ok, err = pcall(function() F.cross_entropy(torch.randn(4, 5), torch.tensor({ 1, 2, 3 })) end)
  T.check(not ok and err:find("test_functional.lua:%d+: bad argument #2 to 'cross_entropy'") ~= nil,
    "the error points at the caller's line: " .. tostring(err))
  T.raises(function() F.cross_entropy(x, t, { label_smoothing = 1.5 }) end, "~label_smoothing must be between 0.0 and 1.0. Got: 1.5")
  T.raises(function() F.cross_entropy(x, t, { reduction = "avg" }) end, "~avg is not a valid value for reduction")
  T.raises(function() F.cross_entropy(x, t, { weights = wt }) end, "~bad argument #3 to 'cross_entropy' (unknown keyword 'weights')")
  T.raises(function() F.cross_entropy(x, t:float()) end, "~expected scalar type Long but found Float")
  T.raises(function() F.cross_entropy(x, t, torch.rand(4, f64)) end, "~weight tensor should be defined either for all 5 classes")
end)

T.test("cross_entropy with probabilities", function()
  local f64 = { dtype = torch.float64 }
  local x = torch.randn(4, 3, f64)
  local p = torch.rand(4, 3, f64)
  p = p / p:sum(1, true)
  local X, P = x:tolist(), p:tolist()
  local w = torch.rand(3, f64) + 0.5
  local W = w:tolist()
  for _, red in ipairs({ "mean", "sum", "none" }) do
    T.near(F.cross_entropy(x, p, { reduction = red }):tolist(), ce_prob_ref(X, P, { reduction = red }), TOL, "probabilities " .. red)
    T.near(F.cross_entropy(x, p, { reduction = red, weight = w }):tolist(), ce_prob_ref(X, P, { reduction = red, weight = W }),
      TOL, "probabilities with weight " .. red)
    T.near(F.cross_entropy(x, p, { reduction = red, weight = w, label_smoothing = 0.2 }):tolist(),
      ce_prob_ref(X, P, { reduction = red, weight = W, label_smoothing = 0.2 }), TOL, "probabilities, weight, smoothing " .. red)
  end
  T.near(F.cross_entropy(x[1], p[1]):item(), ce_prob_ref({ X[2] }, { P[2] }), TOL, "unbatched probabilities")
  T.raises(function() F.cross_entropy(x, p, { ignore_index = 1 }) end, "~ignore_index is not supported for floating point target")
  T.raises(function() F.cross_entropy(x[0], torch.tensor({ 0, 1, 2 })) end,
    "~Expected floating point type for target with class probabilities, got Long")
end)

T.test("nll_loss", function()
  local f64 = { dtype = torch.float64 }
  local lp = torch.randn(5, 4, f64):log_softmax(1)
  local L = lp:tolist()
  local t = torch.tensor({ 3, 0, 1, 1, 2 })
  local w = torch.rand(4, f64) + 0.5
  local W = w:tolist()
  local function ref(tl, weights, red, ignore)
    local losses, total, ws = {}, 0, 0
    for i, ti in ipairs(tl) do
      local l = 0
      if ti ~= (ignore or -100) then
        local wi = weights and weights[ti + 1] or 1
        l = -wi * L[i][ti + 1]
        ws = ws + wi
      end
      losses[i], total = l, total + l
    end
    if red == "none" then return losses elseif red == "sum" then return total end
    return total / ws
  end
  local Tl = t:tolist()
  T.near(F.nll_loss(lp, t):item(), ref(Tl), TOL, "mean")
  T.near(F.nll_loss(lp, t, w):item(), ref(Tl, W), TOL, "weight")
  T.near(F.nll_loss(lp, t, { reduction = "sum", weight = w }):item(), ref(Tl, W, "sum"), TOL, "sum")
  T.near(F.nll_loss(lp, t, { reduction = "none" }):tolist(), ref(Tl, nil, "none"), TOL, "none")
  T.near(F.nll_loss(lp, t, { ignore_index = 1 }):item(), ref(Tl, nil, "mean", 1), TOL, "ignore_index")
  T.near(F.nll_loss(lp, t, w, nil, 1, nil, "sum"):item(), ref(Tl, W, "sum", 1), TOL, "positional")
  T.near(torch.nll_loss(lp, t, w, "none", 1):tolist(), ref(Tl, W, "none", 1), TOL, "torch.nll_loss (ATen order)")
  T.raises(function() F.nll_loss(lp, torch.tensor({ 1, 2 })) end, "~Expected input batch_size (5) to match target batch_size (2).")
  T.raises(function() F.nll_loss(lp, t, { reduction = "all" }) end, "~all is not a valid value for reduction")
end)

T.test("mse, l1, smooth_l1, huber", function()
  local f64 = { dtype = torch.float64 }
  local x, y = torch.randn(3, 4, f64), torch.randn(3, 4, f64)
  local X, Y = x:tolist(), y:tolist()
  local w = torch.rand(3, 4, f64)
  local Wf = flatten(w:tolist())
  local function ref(f, red, weights)
    local d = flatten(map2(X, Y, f))
    if weights then for i = 1, #d do d[i] = d[i] * weights[i] end end
    if red == "none" then
      local out, k = {}, 0
      for i = 1, 3 do out[i] = {}; for j = 1, 4 do k = k + 1; out[i][j] = d[k] end end
      return out
    end
    if red == "sum" then return sum(d) end
    if weights then return sum(d) / sum(weights) end
    return sum(d) / #d
  end
  local sq = function(a, b) return (a - b) ^ 2 end
  local ab = function(a, b) return math.abs(a - b) end
  local function sl1(beta) return function(a, b)
    local d = math.abs(a - b)
    if beta == 0 then return d end
    return d < beta and 0.5 * d * d / beta or d - 0.5 * beta
  end end
  local function hub(delta) return function(a, b)
    local d = math.abs(a - b)
    return d < delta and 0.5 * d * d or delta * (d - 0.5 * delta)
  end end
  for _, red in ipairs({ "mean", "sum", "none" }) do
    T.near(F.mse_loss(x, y, { reduction = red }):tolist(), ref(sq, red), TOL, "mse " .. red)
    T.near(F.l1_loss(x, y, { reduction = red }):tolist(), ref(ab, red), TOL, "l1 " .. red)
    T.near(F.smooth_l1_loss(x, y, { reduction = red }):tolist(), ref(sl1(1), red), TOL, "smooth_l1 " .. red)
    T.near(F.smooth_l1_loss(x, y, { reduction = red, beta = 0.5 }):tolist(), ref(sl1(0.5), red), TOL, "smooth_l1 beta " .. red)
    T.near(F.huber_loss(x, y, { reduction = red, delta = 0.7 }):tolist(), ref(hub(0.7), red), TOL, "huber " .. red)
    T.near(F.mse_loss(x, y, { reduction = red, weight = w }):tolist(), ref(sq, red, Wf), TOL, "mse weight " .. red)
    T.near(F.l1_loss(x, y, { reduction = red, weight = w }):tolist(), ref(ab, red, Wf), TOL, "l1 weight " .. red)
  end
  T.near(F.smooth_l1_loss(x, y, { beta = 0 }):item(), ref(ab, "mean"), TOL, "smooth_l1 beta 0 is l1")
  T.near(F.mse_loss(x, y, nil, nil, "sum"):item(), ref(sq, "sum"), TOL, "reduction positional")
  T.near(F.mse_loss(x, y, false):item(), ref(sq, "sum"), TOL, "legacy size_average=false")
  T.near(F.l1_loss(x, y, nil, false):tolist(), ref(ab, "none"), TOL, "legacy reduce=false")
  T.near(F.mse_loss(x:t(), y:t()):item(), ref(sq, "mean"), TOL, "non-contiguous")
  T.eq(F.mse_loss(x, y[0]).shape:totable(), {}, "broadcast target (with a warning)")
  T.raises(function() F.smooth_l1_loss(x, y, { beta = -1 }) end, "~smooth_l1_loss does not support negative values for beta.")
  T.raises(function() F.mse_loss(x, y, { weight = torch.rand(4, f64) }) end, "~Weights and input must have the same size.")
  T.raises(function() F.mse_loss(x, y, { reduction = "mean", weights = 1 }) end, "~unknown keyword 'weights'")
  T.raises(function() F.l1_loss(x, torch.randn(3, 5)) end, "~must match")
end)

T.test("binary_cross_entropy", function()
  local f64 = { dtype = torch.float64 }
  local p = torch.rand(3, 4, f64) * 0.98 + 0.01
  local y = torch.rand(3, 4, f64):gt(0.5):double()
  local w = torch.rand(3, 4, f64)
  local P, Y, W = flatten(p:tolist()), flatten(y:tolist()), flatten(w:tolist())
  local function ref(red, weights, pv, yv)
    pv, yv = pv or P, yv or Y
    local l = {}
    for i = 1, #pv do
      l[i] = -(yv[i] * math.max(math.log(pv[i]), -100) + (1 - yv[i]) * math.max(math.log(1 - pv[i]), -100))
      if weights then l[i] = l[i] * weights[i] end
    end
    if red == "none" then return l elseif red == "sum" then return { sum(l) } end
    return { sum(l) / #l }
  end
  for _, red in ipairs({ "mean", "sum", "none" }) do
    T.near(flatten(F.binary_cross_entropy(p, y, { reduction = red }):tolist()), ref(red), TOL, "bce " .. red)
    T.near(flatten(F.binary_cross_entropy(p, y, w, nil, nil, red):tolist()), ref(red, W), TOL, "bce weight " .. red)
  end
  local wrow = torch.rand(4, f64)
  local WR = {}
  for i = 1, 12 do WR[i] = wrow:tolist()[(i - 1) % 4 + 1] end
  T.near(F.binary_cross_entropy(p, y, { weight = wrow }):item(), ref("mean", WR)[1], TOL, "broadcast weight")
  local edge = torch.tensor({ 0.0, 1.0, 0.0, 1.0 }, f64)
  local et = torch.tensor({ 0.0, 1.0, 1.0, 0.0 }, f64)
  T.near(F.binary_cross_entropy(edge, et, { reduction = "none" }):tolist(), { 0, 0, 100, 100 }, TOL, "log clamped to -100")
  T.near(F.binary_cross_entropy(p, torch.rand(3, 4, f64), { reduction = "sum" }):item() > 0, true, 0, "soft targets")
  T.raises(function() F.binary_cross_entropy(p, y[0]) end,
    "~Using a target size (torch.Size([4])) that is different to the input size (torch.Size([3, 4])) is deprecated.")
  T.raises(function() F.binary_cross_entropy(p + 1, y) end, "~all elements of input should be between 0 and 1")
end)

T.test("binary_cross_entropy_with_logits", function()
  local f64 = { dtype = torch.float64 }
  local x = torch.randn(3, 4, f64) * 3
  local y = torch.rand(3, 4, f64)
  local w = torch.rand(3, 4, f64)
  local pw = torch.rand(4, f64) * 3
  local X, Y, W, PW = flatten(x:tolist()), flatten(y:tolist()), flatten(w:tolist()), pw:tolist()
  local function ref(red, weights, posw)
    local l = {}
    for i = 1, #X do
      local s = sigmoid(X[i])
      local pwi = posw and posw[(i - 1) % 4 + 1] or 1
      l[i] = -(pwi * Y[i] * math.log(s) + (1 - Y[i]) * math.log(1 - s))
      if weights then l[i] = l[i] * weights[i] end
    end
    if red == "none" then return l elseif red == "sum" then return { sum(l) } end
    return { sum(l) / #l }
  end
  for _, red in ipairs({ "mean", "sum", "none" }) do
    T.near(flatten(F.binary_cross_entropy_with_logits(x, y, { reduction = red }):tolist()), ref(red), TOL, "logits " .. red)
    T.near(flatten(F.binary_cross_entropy_with_logits(x, y, w, { reduction = red }):tolist()), ref(red, W), TOL,
      "logits weight " .. red)
    T.near(flatten(F.binary_cross_entropy_with_logits(x, y, { reduction = red, pos_weight = pw }):tolist()),
      ref(red, nil, PW), TOL, "logits pos_weight " .. red)
    T.near(flatten(F.binary_cross_entropy_with_logits(x, y, w, nil, nil, red, pw):tolist()), ref(red, W, PW), TOL,
      "logits weight and pos_weight positional " .. red)
  end
  local big = torch.tensor({ 200.0, -200.0, 200.0, -200.0 }, f64)
  local bt = torch.tensor({ 1.0, 0.0, 0.0, 1.0 }, f64)
  T.near(F.binary_cross_entropy_with_logits(big, bt, { reduction = "none" }):tolist(), { 0, 0, 200, 200 }, TOL,
    "stable for large logits")
  T.near(F.binary_cross_entropy_with_logits(x:float(), y:float()):item(), ref("mean")[1], 1e-5, "float32")
  T.raises(function() F.binary_cross_entropy_with_logits(x, y[0]) end,
    "~Target size (torch.Size([4])) must be the same as input size (torch.Size([3, 4]))")
end)

-- ---- the C-level functions that F builds on ----

T.test("torch-level functions", function()
  local f64 = { dtype = torch.float64 }
  local x = torch.randn(4, 3, f64)
  local X = x:tolist()
  local idx = torch.tensor({ 2, 0, 2 })
  T.near(torch.index_select(x, 0, idx):tolist(), { X[3], X[1], X[3] }, 0, "torch.index_select")
  T.near(x:index_select(1, torch.tensor({ 1 })):tolist(), { { X[1][2] }, { X[2][2] }, { X[3][2] }, { X[4][2] } }, 0,
    "x:index_select")
  local src = torch.randn(3, 3, f64)
  local S = src:tolist()
  local want = map(X, function(v) return v end)
  for k, i in ipairs({ 2, 0, 2 }) do for c = 1, 3 do want[i + 1][c] = want[i + 1][c] + 2 * S[k][c] end end
  local y = x:index_add(0, idx, src, { alpha = 2 })
  T.near(y:tolist(), want, TOL, "index_add with repeated indices and alpha")
  T.near(x:tolist(), X, 0, "index_add leaves self")
  local r = x:index_add_(0, idx, src, { alpha = 2 })
  T.check(same_obj(r, x), "index_add_ returns self")
  T.near(x:tolist(), want, TOL, "index_add_ in place")
  local v = torch.tensor({ -1.5, -0.2, 0, 0.3, 2.5 }, f64)
  local V = v:tolist()
  T.near(torch.erf(v):tolist(), map(V, erf), TOL, "torch.erf")
  T.near(v:erf():tolist(), map(V, erf), TOL, "x:erf")
  T.near(torch.log1p(v + 1):tolist(), map(V, function(a) return math.log(2 + a) end), TOL, "torch.log1p")
  T.near(torch.tensor({ 1e-10 }, f64):log1p():tolist(), { 1e-10 }, EXACT, "log1p of tiny values is exact")
  local v2 = v:clone()
  v2:erf_()
  T.near(v2:tolist(), map(V, erf), TOL, "erf_")
  local m = torch.tensor({ true, false, true, false, false })
  T.near(v:masked_fill(m, 9):tolist(), { 9, V[2], 9, V[4], V[5] }, 0, "masked_fill")
  T.near(v:masked_fill(m, torch.tensor(7.0)):tolist(), { 7, V[2], 7, V[4], V[5] }, 0, "masked_fill with a 0-dim tensor")
  local i = torch.tensor({ 1, 2, 3 })
  T.eq(i:masked_fill(torch.tensor({ false, true, false }), 2.7):tolist(), { 1, 2, 3 }, "masked_fill keeps self's dtype")
  T.check(i:masked_fill(torch.tensor({ true, false, false }), 5).dtype == torch.int64, "int64 stays")
  local mm = x:masked_fill(torch.tensor({ true, false, false }), 0)
  T.near(mm:tolist()[2][1], 0, 0, "mask broadcasts over rows")
  local v3 = v:clone()
  T.check(same_obj(v3:masked_fill_(m, -1), v3), "masked_fill_ returns self")
  T.near(v3:tolist(), { -1, V[2], -1, V[4], V[5] }, 0, "masked_fill_ in place")
  T.raises(function() v:masked_fill(torch.tensor({ 1, 0, 1, 0, 0 }), 1) end, "~masked_fill only supports boolean masks")
  T.raises(function() torch.zeros(1):masked_fill_(torch.tensor({ true, false }), 1) end, "~is not broadcastable to self")
  T.raises(function() x:index_select(0, torch.tensor({ 4 })) end, "~out of range")
end)

T.test("double precision", function()
  -- PyTorch keeps a Python float as a double: a float64 composite with a constant is exact
  local x = torch.tensor({ -3.0, 0.7 }, { dtype = torch.float64 })
  T.near(F.leaky_relu(x, 0.1):tolist(), { -3 * 0.1, 0.7 }, EXACT,
    "float64 leaky_relu(x, 0.1) in double precision (Lua numbers stay doubles)")
end)
