-- torch.signal.windows against closed forms computed by plain Lua loops
local T = ...
local W = torch.signal.windows

local function i0(x) -- the power series of the modified Bessel function I0
  local s, term, k = 1, 1, 0
  repeat
    k = k + 1
    term = term * (x / (2 * k)) ^ 2
    s = s + term
  until term < 1e-17 * s
  return s
end

-- reference windows: f(n, D) for n = 0..M-1, D = M-1 (sym) or M (periodic)
local function ref(M, sym, f)
  if M == 0 then return {} end
  if M == 1 then return { 1.0 } end
  local D = sym and M - 1 or M
  local out = {}
  for n = 0, M - 1 do out[n + 1] = f(n, D) end
  return out
end

local function gcos(a)
  return function(n, D)
    local s = 0
    for i, c in ipairs(a) do s = s + (-1) ^ (i - 1) * c * math.cos(2 * math.pi * (i - 1) * n / D) end
    return s
  end
end

local cases = {
  { "hann", {}, gcos({ 0.5, 0.5 }) },
  { "hamming", {}, gcos({ 0.54, 0.46 }) },
  { "general_hamming", { alpha = 0.6 }, gcos({ 0.6, 0.4 }) },
  { "blackman", {}, gcos({ 0.42, 0.5, 0.08 }) },
  { "nuttall", {}, gcos({ 0.3635819, 0.4891775, 0.1365995, 0.0106411 }) },
  { "general_cosine", { a = { 0.4, 0.3, 0.2, 0.1 } }, gcos({ 0.4, 0.3, 0.2, 0.1 }) },
  { "bartlett", {}, function(n, D) return 1 - math.abs(2 * n / D - 1) end },
  { "cosine", {}, function(n, D) return math.sin(math.pi * (n + 0.5) / (D + 1)) end },
  { "exponential", { tau = 2.5 }, function(n, D) return math.exp(-math.abs(n - D / 2) / 2.5) end },
  { "gaussian", { std = 1.7 }, function(n, D) return math.exp(-((n - D / 2) ^ 2) / (2 * 1.7 ^ 2)) end },
  { "kaiser", { beta = 5.0 }, function(n, D) return i0(5 * math.sqrt(math.max(0, 1 - (2 * n / D - 1) ^ 2))) / i0(5) end },
}

local function run(dev)
  T.test("windows against closed forms on " .. dev, function()
    for _, c in ipairs(cases) do
      local name, kw, f = c[1], c[2], c[3]
      for _, M in ipairs({ 0, 1, 2, 7, 8 }) do
        for _, sym in ipairs({ true, false }) do
          local o = { sym = sym, dtype = torch.float64, device = dev }
          for k, v in pairs(kw) do o[k] = v end
          local w = W[name](M, o)
          T.eq(w.device.type, dev)
          T.near(w:cpu():tolist(), ref(M, sym, f), 1e-12, string.format("%s(%d, sym=%s)", name, M, tostring(sym)))
        end
      end
    end
    local w = W.hann(6, { device = dev })
    T.eq(w.dtype, torch.float32, "the default dtype")
    T.near(w:cpu():tolist(), ref(6, true, gcos({ 0.5, 0.5 })), 1e-6)
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device", 1) end

T.test("window options and errors", function()
  T.eq(W.hann(5):tolist(), { 0.0, 0.5, 1.0, 0.5, 0.0 }, "by hand")
  T.eq(W.bartlett(5, { dtype = torch.float64 }):tolist(), { 0.0, 0.5, 1.0, 0.5, 0.0 })
  T.near(W.exponential(4, { sym = false, center = 1, dtype = torch.float64 }):tolist(),
    { math.exp(-1), 1, math.exp(-1), math.exp(-2) }, 1e-15, "periodic with a center")
  T.near(W.kaiser(6, { sym = false }):tolist(), torch.kaiser_window(6, true, 12.0):tolist(), 1e-6, "torch.kaiser_window's periodic")
  T.near(W.hamming(9, { sym = false }):tolist(), torch.hamming_window(9):tolist(), 1e-6, "torch.hamming_window's periodic")
  T.eq(W.gaussian(3, { requires_grad = true }).requires_grad, true)
  T.eq(W.cosine(3, { layout = torch.strided }):size(0), 3)
  T.raises(function() W.hann(-1) end, "hann requires non-negative window length, got M=-1")
  T.raises(function() W.hann(4, { dtype = torch.int64 }) end, "hann expects float32 or float64 dtypes, got: torch.int64")
  T.raises(function() W.hann(4, true) end, "hann() takes 1 positional argument but 2 were given")
  T.raises(function() W.hann(4, { periodic = true }) end, "~unknown keyword 'periodic'")
  T.raises(function() W.exponential(4, { center = 1 }) end, "Center must be None for symmetric windows")
  T.raises(function() W.exponential(4, { tau = 0 }) end, "Tau must be positive, got: 0.0 instead.")
  T.raises(function() W.gaussian(4, { std = -1 }) end, "Standard deviation must be positive, got: -1.0 instead.")
  T.raises(function() W.kaiser(4, { beta = -1 }) end, "beta must be non-negative, got: -1.0 instead.")
  T.raises(function() W.general_cosine(4, { a = {} }) end, "Coefficients cannot be empty")
  T.raises(function() W.general_cosine(4, { a = 0.5 }) end, "Coefficients must be a list/tuple, got float")
  T.raises(function() W.general_cosine(4) end, "~missing required argument 'a'")
  T.raises(function() W.hann(2.5) end, "hann: M must be an integer, got float")
end)
