-- The fused pointwise losses (torch._pointwise_loss and its backward, behind F.mse_loss,
-- smooth_l1_loss, huber_loss, binary_cross_entropy and binary_cross_entropy_with_logits):
-- every loss, reduction and float dtype against PyTorch's formulas evaluated by a plain Lua loop
-- in float64 on the same stored values, at the branch points (|d| = beta, bce at 0 and 1, large
-- logits) and with NaN; float64 finite differences; autocast's float32; CPU and CUDA.
local T = ...
local F = torch.nn.functional
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)

local function floor100(v) return v < -100 and -100 or v end
local function log1p(v) return math.log(1 + v) end -- exact enough in float64 away from v ~ 0 for these checks
local function sigmoid(v) return 1 / (1 + math.exp(-v)) end

-- PyTorch's elementwise loss and input gradient (times g) of each kind, in float64
local REF = {
  mse = { function(x, t) return (x - t) ^ 2 end, function(x, t, g) return 2 * (x - t) * g end },
  smooth_l1 = {
    function(x, t, p) local z = math.abs(x - t); return z < p and 0.5 * z * z / p or z - 0.5 * p end,
    function(x, t, g, p) local d = x - t; return d <= -p and -g or d >= p and g or d * g / p end,
  },
  huber = {
    function(x, t, p) local z = math.abs(x - t); return z < p and 0.5 * z * z or p * (z - 0.5 * p) end,
    function(x, t, g, p) local d = x - t; return d <= -p and -g * p or d >= p and g * p or d * g end,
  },
  bce = {
    function(x, t) return (t - 1) * floor100(x < 1 and log1p(-x) or -math.huge) - t * floor100(x > 0 and math.log(x) or -math.huge) end,
    function(x, t, g) return g * (x - t) / math.max((1 - x) * x, 1e-12) end,
  },
  bce_logits = {
    function(x, t) return (1 - t) * x - (math.min(x, 0) - log1p(math.exp(-math.abs(x)))) end,
    function(x, t, g) return (sigmoid(x) - t) * g end,
  },
}

local CALL = {
  mse = function(x, t, red) return F.mse_loss(x, t, { reduction = red }) end,
  smooth_l1 = function(x, t, red, p) return F.smooth_l1_loss(x, t, { reduction = red, beta = p }) end,
  huber = function(x, t, red, p) return F.huber_loss(x, t, { reduction = red, delta = p }) end,
  bce = function(x, t, red) return F.binary_cross_entropy(x, t, { reduction = red }) end,
  bce_logits = function(x, t, red) return F.binary_cross_entropy_with_logits(x, t, { reduction = red }) end,
}
local PARAM = { smooth_l1 = 0.5, huber = 0.75 }

-- inputs of each kind with its edge values appended: |d| equal to the parameter either way, bce
-- at 0 and 1, logits far out
local function inputs(kind, dtype, device)
  local g = torch.Generator():manual_seed(11)
  local n = 37
  local x, t
  if kind == "bce" then
    x = torch.rand(n, { generator = g, dtype = torch.float64 }) * 0.98 + 0.01
    t = torch.rand(n, { generator = g, dtype = torch.float64 })
    x = torch.cat({ x, torch.tensor({ 0.0, 1.0, 0.0, 1.0 }, { dtype = torch.float64 }) })
    t = torch.cat({ t, torch.tensor({ 0.0, 1.0, 1.0, 0.0 }, { dtype = torch.float64 }) })
  else
    x = torch.randn(n, { generator = g, dtype = torch.float64 }) * 2
    t = torch.randn(n, { generator = g, dtype = torch.float64 })
    local p = PARAM[kind] or 1
    local ex = kind == "bce_logits" and { 40.0, -40.0, 0.0, 17.0 } or { 1.0 + p, 1.0 - p, 0.25, -3.0 }
    x = torch.cat({ x, torch.tensor(ex, { dtype = torch.float64 }) })
    t = torch.cat({ t, torch.tensor({ 1.0, 1.0, 0.25, 0.5 }, { dtype = torch.float64 }) })
  end
  -- the stored values, so that the reference sees what the kernel reads
  return x:to(dtype):to(device), t:to(dtype):to(device)
end

local TOL = { [torch.float64] = 1e-12, [torch.float32] = 2e-6, [torch.float16] = 2e-3, [torch.bfloat16] = 1.6e-2 }

local function run(device)
  for _, kind in ipairs({ "mse", "smooth_l1", "huber", "bce", "bce_logits" }) do
    T.test(kind .. " against the float64 loop " .. device, function()
      local p = PARAM[kind]
      for _, dt in ipairs({ torch.float32, torch.float64, torch.float16, torch.bfloat16 }) do
        local x, t = inputs(kind, dt, device)
        local xs, ts = x:double():cpu():tolist(), t:double():cpu():tolist()
        local tol = TOL[dt]
        local want, sum = {}, 0
        for i = 1, #xs do
          want[i] = REF[kind][1](xs[i], ts[i], p)
          sum = sum + want[i]
        end
        local l = CALL[kind](x, t, "none", p)
        T.eq(l.dtype, dt, kind .. " dtype")
        T.near(l:double():cpu():tolist(), want, tol, kind .. " none " .. tostring(dt))
        T.near(CALL[kind](x, t, "sum", p):item(), sum, tol * 4, kind .. " sum " .. tostring(dt))
        T.near(CALL[kind](x, t, "mean", p):item(), sum / #xs, tol * 4, kind .. " mean " .. tostring(dt))
        -- the input gradient: a random incoming gradient (none), and a scalar one (mean, sum)
        local go = torch.randn(#xs, { generator = torch.Generator():manual_seed(3), dtype = torch.float64 }):to(dt)
        local gos = go:double():tolist()
        for _, red in ipairs({ "none", "mean", "sum" }) do
          local xl = x:detach():requires_grad_()
          local out = CALL[kind](xl, t, red, p)
          if red == "none" then out:backward(go:to(device)) else (out * 3):backward() end
          local gw = {}
          for i = 1, #xs do
            local gi = red == "none" and gos[i] or red == "mean" and 3 / #xs or 3
            gw[i] = REF[kind][2](xs[i], ts[i], gi, p)
          end
          T.eq(xl.grad.dtype, dt, kind .. " grad dtype")
          T.near(xl.grad:double():cpu():tolist(), gw, tol, kind .. " grad " .. red .. " " .. tostring(dt))
        end
      end
    end)

    T.test(kind .. " finite differences and NaN " .. device, function()
      local p = PARAM[kind]
      local g = torch.Generator():manual_seed(7)
      local x = torch.rand(3, 5, { generator = g, dtype = torch.float64 }) * 0.8 + 0.1
      local t = torch.rand(3, 5, { generator = g, dtype = torch.float64 })
      if kind ~= "bce" then x = (x - 0.5) * 6 end
      x, t = x:to(device), t:to(device)
      for _, red in ipairs({ "mean", "sum", "none" }) do
        gradcheck(kind .. " " .. red, function(a) return CALL[kind](a, t, red, p) end, { x })
      end
      local xn = x:clone()
      xn["0, 0"] = 0 / 0
      local l = CALL[kind](xn, t, "none", p)
      T.check(l["0, 0"]:isnan():item() and not l["0, 1"]:isnan():item(), kind .. ": NaN stays in its element")
    end)
  end

  T.test("autocast runs the pointwise losses in float32 " .. device, function()
    local low = device == "cuda" and torch.float16 or torch.bfloat16
    local x, t = inputs("mse", low, device)
    local want = F.mse_loss(x:float(), t:float())
    local _ <close> = torch.autocast(device, { dtype = low })
    local got = F.mse_loss(x, t)
    T.eq(got.dtype, torch.float32, "mse_loss under autocast")
    T.near(got:item(), want:item(), 1e-6, "mse_loss value")
    local b = F.binary_cross_entropy_with_logits(x, t:sigmoid())
    T.eq(b.dtype, torch.float32, "bce_with_logits under autocast")
  end)

  T.test("mixed dtypes promote and the gradient comes back in the input's " .. device, function()
    local x = torch.randn(4, 3, { dtype = torch.float32, device = device, requires_grad = true })
    local t = torch.randn(4, 3, { dtype = torch.float64, device = device })
    local l = F.smooth_l1_loss(x, t)
    T.eq(l.dtype, torch.float64, "promoted")
    l:backward()
    T.eq(x.grad.dtype, torch.float32, "grad dtype")
    local want = F.smooth_l1_loss(x:double(), t)
    T.near(l:item(), want:item(), 1e-15, "value")
  end)
end

T.test("torch._pointwise_loss checks its operands", function()
  local x = torch.randn(2, 3)
  T.raises(function() torch._pointwise_loss("mse", x, torch.randn(3, 2)) end,
    "~expected target of shape [2, 3], got [3, 2]")
  T.raises(function() torch._pointwise_loss("huber", x, torch.ones(2, 3, { dtype = torch.int64 })) end,
    "~expected floating point tensors, got int64")
  T.raises(function() torch._pointwise_loss("l3", x, x) end, "~invalid option 'l3'")
  T.raises(function() torch._pointwise_loss_backward("mse", x, x, torch.ones(2)) end,
    "~expected the gradient of shape [2, 3], got [2]")
end)

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA", 1) end

T.test("binary_cross_entropy is banned from CUDA autocast, as in PyTorch", function()
  if not torch.cuda.is_available() then return T.skip("no CUDA") end
  local x = torch.rand(4, { device = "cuda" })
  local _ <close> = torch.autocast("cuda")
  T.raises(function() F.binary_cross_entropy(x, x) end, "~are unsafe to autocast.\nMany models use a sigmoid layer")
  T.raises(function() torch.nn.BCELoss()(x, x) end, "~binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")
end)
