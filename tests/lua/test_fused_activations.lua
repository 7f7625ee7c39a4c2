-- The fused activations (torch._activation and its backward, behind F.gelu, silu, mish, softplus,
-- logsigmoid, leaky_relu, elu, hardswish and hardsigmoid): each against PyTorch's formulas
-- evaluated by a plain Lua loop in float64 on the same stored values, with its parameters, at its
-- branch points and far out; float64 finite differences, first and second order; PyTorch's node
-- names; in-place forms; CPU and CUDA.
local T = ...
local F = torch.nn.functional

local function sigmoid(v) return 1 / (1 + math.exp(-v)) end
local log1p = math.log1p -- Python's math names (bindings/lua/pymath.lua): C's log1p and erf
local function clamp6(v) return v < 0 and 0 or v > 6 and 6 or v end
local SQRT1_2, KB = math.sqrt(0.5), math.sqrt(2 / math.pi)

-- { F call, forward(x), derivative(x) } with the parameters used below
local CASES = {
  gelu = { function(x) return F.gelu(x) end, function(v) return v * 0.5 * (1 + math.erf(v * SQRT1_2)) end,
    function(v) return 0.5 * (1 + math.erf(v * SQRT1_2)) + v * math.exp(-0.5 * v * v) / math.sqrt(2 * math.pi) end },
  gelu_tanh = { function(x) return F.gelu(x, { approximate = "tanh" }) end,
    function(v) return 0.5 * v * (1 + math.tanh(KB * (v + 0.044715 * v ^ 3))) end,
    function(v)
      local t = math.tanh(KB * (v + 0.044715 * v ^ 3))
      return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * KB * (1 + 3 * 0.044715 * v * v)
    end },
  silu = { function(x) return F.silu(x) end, function(v) return v * sigmoid(v) end,
    function(v) local s = sigmoid(v); return s * (1 + v * (1 - s)) end },
  mish = { function(x) return F.mish(x) end, function(v) return v * math.tanh(log1p(math.exp(v))) end,
    function(v) local t = math.tanh(log1p(math.exp(v))); return t + v * sigmoid(v) * (1 - t * t) end },
  -- beta 2, threshold 3: the linear branch where 2x > 3
  softplus = { function(x) return F.softplus(x, { beta = 2, threshold = 3 }) end,
    function(v) return 2 * v > 3 and v or log1p(math.exp(2 * v)) / 2 end,
    function(v) return 2 * v > 3 and 1 or sigmoid(2 * v) end },
  logsigmoid = { function(x) return F.logsigmoid(x) end, function(v) return math.min(v, 0) - log1p(math.exp(-math.abs(v))) end,
    function(v) return 1 - sigmoid(v) end },
  leaky_relu = { function(x) return F.leaky_relu(x, 0.2) end, function(v) return v > 0 and v or v * 0.2 end,
    function(v) return v > 0 and 1 or 0.2 end },
  elu = { function(x) return F.elu(x, 1.5) end, function(v) return v <= 0 and (math.exp(v) - 1) * 1.5 or v end,
    function(v) return v <= 0 and 1.5 * math.exp(v) or 1 end },
  hardswish = { function(x) return F.hardswish(x) end, function(v) return v * clamp6(v + 3) / 6 end,
    function(v) return v < -3 and 0 or v <= 3 and v / 3 + 0.5 or 1 end },
  hardsigmoid = { function(x) return F.hardsigmoid(x) end, function(v) return clamp6(v + 3) / 6 end,
    function(v) return (v > -3 and v < 3) and 1 / 6 or 0 end },
}
local NAMES = { gelu = "GeluBackward0", gelu_tanh = "GeluBackward0", silu = "SiluBackward0", mish = "MishBackward0",
  softplus = "SoftplusBackward0", logsigmoid = "LogSigmoidBackward0", leaky_relu = "LeakyReluBackward0",
  elu = "EluBackward0", hardswish = "HardswishBackward0", hardsigmoid = "HardsigmoidBackward0" }
local ORDER = { "gelu", "gelu_tanh", "silu", "mish", "softplus", "logsigmoid", "leaky_relu", "elu", "hardswish", "hardsigmoid" }
local TOL = { [torch.float64] = 1e-12, [torch.float32] = 3e-6, [torch.float16] = 3e-3, [torch.bfloat16] = 2e-2 }

local function inputs(dtype, device)
  local x = torch.randn(45, { generator = torch.Generator():manual_seed(5), dtype = torch.float64 }) * 3
  -- branch points and far out: 0, the hard functions' +-3, softplus's threshold 1.5, large magnitudes
  x = torch.cat({ x, torch.tensor({ 0.0, 3.0, -3.0, 1.5, -30.0, 30.0, 1e-4, -1e-4 }, { dtype = torch.float64 }) })
  return x:to(dtype):to(device)
end

local function run(device)
  for _, name in ipairs(ORDER) do
    local f, fwd, der = table.unpack(CASES[name])
    T.test(name .. " against the float64 loop " .. device, function()
      for _, dt in ipairs({ torch.float32, torch.float64, torch.float16, torch.bfloat16 }) do
        local x = inputs(dt, device)
        local xs = x:double():cpu():tolist()
        local g = torch.randn(#xs, { generator = torch.Generator():manual_seed(9), dtype = torch.float64 }):to(dt):to(device)
        local gs = g:double():cpu():tolist()
        local want, dwant = {}, {}
        for i, v in ipairs(xs) do want[i], dwant[i] = fwd(v), gs[i] * der(v) end
        local y = f(x)
        T.eq(y.dtype, dt, name .. " dtype")
        T.near(y:double():cpu():tolist(), want, TOL[dt], name .. " " .. tostring(dt))
        local xl = x:detach():requires_grad_()
        local yl = f(xl)
        T.eq(yl.grad_fn and yl.grad_fn:name(), NAMES[name], name .. " node")
        yl:backward(g)
        T.near(xl.grad:double():cpu():tolist(), dwant, TOL[dt] * 4, name .. " gradient " .. tostring(dt))
      end
      -- a transposed (non-contiguous) input, and NaN in place
      local m = inputs(torch.float32, device):narrow(0, 0, 48):reshape(6, 8):t()
      T.near(f(m):double():cpu():tolist(), f(m:contiguous()):double():cpu():tolist(), 0, name .. " transposed")
      local n = torch.tensor({ 0 / 0, 1.0 }, { device = device })
      local r = f(n):cpu():tolist()
      T.check(r[1] ~= r[1] and r[2] == r[2], name .. ": NaN stays NaN")
    end)

    T.test(name .. " finite differences, first and second order " .. device, function()
      local x = inputs(torch.float64, device):narrow(0, 0, 20):clone():requires_grad_()
      T.check(torch.autograd.gradcheck(f, { x }), name .. " gradcheck")
      T.check(torch.autograd.gradgradcheck(f, { x }), name .. " gradgradcheck")
    end)
  end

  T.test("in-place forms match " .. device, function()
    local x = inputs(torch.float32, device)
    T.near(F.silu(x:clone(), true):cpu():tolist(), F.silu(x):cpu():tolist(), 0, "silu inplace")
    T.near(F.elu(x:clone(), 1.5, true):cpu():tolist(), F.elu(x, 1.5):cpu():tolist(), 0, "elu inplace")
    T.near(F.hardswish(x:clone(), { inplace = true }):cpu():tolist(), F.hardswish(x):cpu():tolist(), 0, "hardswish inplace")
    -- with autograd recording, the in-place form's gradient is the function's
    local a = x:clone():requires_grad_()
    local b = a * 1
    F.leaky_relu(b, 0.2, true):sum():backward()
    local want = {}
    for i, v in ipairs(x:cpu():tolist()) do want[i] = v > 0 and 1 or 0.2 end
    T.near(a.grad:cpu():tolist(), want, 1e-7, "leaky_relu_ gradient")
  end)
end

T.test("the node frees its saved input at backward, as PyTorch's (retain_graph keeps it)", function()
  local x = torch.randn(5, { requires_grad = true })
  local y = F.silu(x)
  y:sum():backward({ retain_graph = true })
  y:sum():backward()
  T.raises(function() y:sum():backward() end, "~Trying to backward through the graph a second time")
  local once = x:detach():requires_grad_()
  F.silu(once):sum():backward()
  T.near(x.grad:tolist(), (once.grad * 2):tolist(), 1e-6, "two passes accumulate twice one pass's gradient")
end)

T.test("torch._activation checks its operands", function()
  local x = torch.randn(2, 3)
  T.raises(function() torch._activation("swish", x) end, "~invalid option 'swish'")
  T.raises(function() torch._activation_backward("gelu", x, torch.ones(3, 2)) end, "~expected the gradient of shape [2, 3], got [3, 2]")
  T.raises(function() torch._activation("gelu", torch.ones(2, { dtype = torch.int64 })) end, "~expected a floating point input")
end)

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA", 1) end
