-- nn.RNN / LSTM / GRU through cuDNN's RNN (torch._cudnn_rnn) against the same modules composed
-- of ops (torch.backends.cudnn.enabled = false) on the same GPU: outputs, final states and the
-- gradients of the input, the initial states and every parameter. float64 to 1e-10; float32
-- (TF32 off), float16 and bfloat16 against float64 within their precision. Also packed batches,
-- dropout between layers (the same masks: both forms draw them alike), inference without
-- autograd, a second backward through a retained graph, autocast, and the errors.
--   nnrepl tests/gpu/rnn_cudnn.lua            (prints "rnn cudnn: N passed, M failed")
local passed, failed = 0, 0
local function report(ok, fmt, ...)
  if ok then passed = passed + 1 else
    failed = failed + 1
    print("FAIL " .. string.format(fmt, ...))
  end
end

-- the largest difference relative to max(1, |reference|) over a list of tensor pairs
local function worst(a, b)
  local w = 0
  for i = 1, #b do
    if a[i] == nil then return math.huge end
    local x, y = a[i]:detach():double():cpu(), b[i]:detach():double():cpu()
    if x:numel() ~= y:numel() then return math.huge end
    w = math.max(w, ((x - y):abs() / y:abs():clamp_min(1)):max():item())
  end
  return w
end

torch.backends.cudnn.allow_tf32 = false
local dev = "cuda"

-- run module m (a copy per form) on x and states; returns outputs then gradients as one list
local function run(m, x, hx, opts)
  opts = opts or {}
  local lstm = m.mode == "LSTM"
  local xs = x:detach():clone():requires_grad_()
  local h = hx and (lstm and { hx[1]:detach():clone():requires_grad_(), hx[2]:detach():clone():requires_grad_() }
    or hx:detach():clone():requires_grad_()) or nil
  local input = xs
  if opts.lengths then input = nn.utils.rnn.pack_padded_sequence(xs, opts.lengths, { enforce_sorted = false }) end
  if opts.seed then torch.manual_seed(opts.seed) end
  local out, hn = m(input, h)
  if opts.lengths then out = nn.utils.rnn.pad_packed_sequence(out) end
  local states = lstm and hn or { hn }
  local loss = (out * torch.sin(torch.arange(out:numel(), { dtype = out.dtype, device = out.device })):view(out:size())):sum()
  for k, s in ipairs(states) do loss = loss + (s * (k + 0.5)):cos():sum() end
  loss:backward()
  local r = { out, table.unpack(states) }
  r[#r + 1] = xs.grad
  if h then
    for _, t in ipairs(lstm and h or { h }) do r[#r + 1] = t.grad end
  end
  for _, p in ipairs(m:parameters()) do r[#r + 1] = p.grad end
  return r
end

local function both(build, x, hx, opts)
  torch.manual_seed(1)
  local m = build()
  local m2 = require("copy").deepcopy(m)
  torch.backends.cudnn.enabled = true
  local a = run(m, x, hx, opts)
  torch.backends.cudnn.enabled = false
  local b = run(m2, x, hx, opts)
  torch.backends.cudnn.enabled = true
  return a, b
end

local f64 = { dtype = torch.float64, device = dev }
local function states(mode, n, N, H)
  local h = torch.randn(n, N, H, f64)
  if mode == "LSTM" then return { h, torch.randn(n, N, H, f64) } end
  return h
end

local cases = {
  { "RNN tanh", function() return nn.RNN(5, 7) end, "RNN_TANH" },
  { "RNN relu, 2 layers", function() return nn.RNN(5, 7, { num_layers = 2, nonlinearity = "relu" }) end, "RNN_RELU", 2 },
  { "LSTM", function() return nn.LSTM(5, 7) end, "LSTM" },
  { "LSTM 3 layers both ways", function() return nn.LSTM(5, 7, { num_layers = 3, bidirectional = true }) end, "LSTM", 6 },
  { "LSTM without bias", function() return nn.LSTM(5, 7, { bias = false, num_layers = 2 }) end, "LSTM", 2 },
  { "GRU", function() return nn.GRU(5, 7) end, "GRU" },
  { "GRU 2 layers both ways", function() return nn.GRU(5, 7, { num_layers = 2, bidirectional = true }) end, "GRU", 4 },
}
torch.manual_seed(0)
for _, c in ipairs(cases) do
  local name, build, mode, n = c[1], c[2], c[3], c[4] or 1
  local x = torch.randn(6, 3, 5, f64)
  local a, b = both(function() return build():to(dev):double() end, x, nil)
  report(worst(a, b) < 1e-10, "%s, float64, zero state: %g", name, worst(a, b))
  local hx = states(mode, n, 3, 7)
  a, b = both(function() return build():to(dev):double() end, x, hx)
  report(worst(a, b) < 1e-10, "%s, float64, given state: %g", name, worst(a, b))
  local lengths = { 4, 6, 2 }
  a, b = both(function() return build():to(dev):double() end, x, hx, { lengths = lengths })
  report(worst(a, b) < 1e-10, "%s, float64, packed (lengths 4, 6, 2): %g", name, worst(a, b))
  -- lower precisions against float64: within 1e-5 for float32, and for float16/bfloat16 no
  -- further from it than twice the composed form in the same dtype (plus 1e-3)
  for _, dt in ipairs({ torch.float32, torch.float16, torch.bfloat16 }) do
    torch.manual_seed(1)
    local m = build():to(dev):to(dt)
    local composed, ref = require("copy").deepcopy(m), require("copy").deepcopy(m):double()
    local xl = x:to(dt)
    local ok, got = pcall(run, m, xl, nil)
    if not ok then report(false, "%s, %s: %s", name, tostring(dt), got) else
      torch.backends.cudnn.enabled = false
      local want, same_dtype = run(ref, xl:double(), nil), run(composed, xl, nil)
      torch.backends.cudnn.enabled = true
      local e, e2 = worst(got, want), worst(same_dtype, want)
      local tol = dt == torch.float32 and 1e-5 or 2 * e2 + 1e-3
      report(got[1].dtype == dt and e < tol, "%s, %s against float64: %g (composed in %s: %g)", name, tostring(dt), e, tostring(dt), e2)
      if dt ~= torch.float32 then print(string.format("%s, %s: cuDNN %.3g, composed %.3g from float64", name, tostring(dt), e, e2)) end
    end
  end
end

-- batch_first and an unbatched input
do
  local x = torch.randn(3, 6, 5, f64)
  local a, b = both(function() return nn.LSTM(5, 4, { batch_first = true, num_layers = 2 }):to(dev):double() end, x, nil)
  report(worst(a, b) < 1e-10, "LSTM batch_first: %g", worst(a, b))
  a, b = both(function() return nn.GRU(5, 4):to(dev):double() end, torch.randn(6, 5, f64), nil)
  report(worst(a, b) < 1e-10, "GRU unbatched: %g", worst(a, b))
end

-- dropout between layers: the same masks in both forms, so the same results
do
  local x = torch.randn(6, 3, 5, f64)
  local a, b = both(function() return nn.LSTM(5, 4, { num_layers = 3, dropout = 0.5 }):to(dev):double() end, x, nil, { seed = 7 })
  report(worst(a, b) < 1e-10, "LSTM with dropout 0.5 between 3 layers: %g", worst(a, b))
end

-- inference: no graph, the same values; eval mode drops dropout
do
  torch.manual_seed(2)
  local m = nn.LSTM(5, 4, { num_layers = 2, dropout = 0.3 }):to(dev):double():eval()
  local x = torch.randn(6, 3, 5, f64)
  local y1 = torch.no_grad(function() return m(x) end)
  torch.backends.cudnn.enabled = false
  local y2 = m(x)
  torch.backends.cudnn.enabled = true
  report(not y1.requires_grad and worst({ y1 }, { y2 }) < 1e-10, "inference under no_grad: %g", worst({ y1 }, { y2 }))
  local y, hc = m(x:clone():requires_grad_())
  report(tostring(y.grad_fn):find("CudnnRnnBackward0") ~= nil and hc[1].grad_fn ~= nil and hc[2].grad_fn ~= nil,
    "grad_fn is CudnnRnnBackward0 (%s)", tostring(y.grad_fn))
end

-- a second backward through a retained graph adds the same gradients again
do
  torch.manual_seed(3)
  local m = nn.GRU(5, 4):to(dev):double()
  local x = torch.randn(6, 3, 5, f64):requires_grad_()
  local y = m(x)
  y:sum():backward({ retain_graph = true })
  local g1, w1 = x.grad:clone(), m.weight_hh_l0.grad:clone()
  y:sum():backward()
  report(worst({ x.grad, m.weight_hh_l0.grad }, { g1 * 2, w1 * 2 }) < 1e-12, "retain_graph: a second backward doubles the gradients")
end

-- autocast: float16 output and state from float32 parameters, gradients in float32
do
  torch.manual_seed(4)
  local m = nn.LSTM(8, 16, { num_layers = 2 }):to(dev)
  local x = torch.randn(10, 4, 8, { device = dev })
  local y, hc
  do
    local _ <close> = torch.autocast("cuda", { dtype = torch.float16 })
    y, hc = m(x)
  end
  y:float():sum():backward()
  report(y.dtype == torch.float16 and hc[2].dtype == torch.float16 and m.weight_ih_l0.grad.dtype == torch.float32,
    "autocast: output %s, cell %s, gradient %s", tostring(y.dtype), tostring(hc[2].dtype), tostring(m.weight_ih_l0.grad.dtype))
  local want = m(x)
  report(worst({ y }, { want }) < 2e-2, "autocast against float32: %g", worst({ y }, { want }))
end

-- errors
local function fails(what, pattern, f)
  local ok, err = pcall(f)
  report(not ok and tostring(err):find(pattern, 1, true) ~= nil, "%s: %s", what, ok and "no error" or tostring(err))
end
do
  local m = nn.LSTM(5, 4):to(dev)
  fails("input dtype", "input must have the type torch.float32, got type torch.float64", function() m(torch.randn(3, 2, 5, f64)) end)
  fails("input on the CPU", "Input and parameter tensors are not at the same device, found input tensor at cpu and parameter tensor at cuda:0",
    function() m(torch.randn(3, 2, 5)) end)
  fails("state on the CPU", "Input and hidden tensors are not at the same device",
    function() m(torch.randn(3, 2, 5, { device = dev }), { torch.zeros(1, 2, 4), torch.zeros(1, 2, 4) }) end)
  local x, h = torch.randn(3, 2, 5, { device = dev }), torch.zeros(1, 2, 4, { device = dev })
  fails("a weight of the wrong size", "_cudnn_rnn: expected weight_hh of layer 0 of size [16, 4], got [16, 5]",
    function() torch._cudnn_rnn("LSTM", x, h, h, { m.weight_ih_l0, m.weight_ih_l0, m.bias_ih_l0, m.bias_hh_l0 }, 1, false) end)
  fails("LSTM without a cell state", "_cudnn_rnn: LSTM needs a cell state",
    function() torch._cudnn_rnn("LSTM", x, h, nil, { m.weight_ih_l0, m.weight_hh_l0 }, 1, false) end)
  fails("lengths beyond T", "_cudnn_rnn: length 4 of sequence 1 is outside 1..3",
    function() torch._cudnn_rnn("GRU", x, h, nil, { torch.zeros(12, 5, { device = dev }), torch.zeros(12, 4, { device = dev }) }, 1, false, { 3, 4 }) end)
  fails("a CPU input", "_cudnn_rnn: expected the input on a CUDA device",
    function() torch._cudnn_rnn("GRU", x:cpu(), h, nil, {}, 1, false) end)
end

print(string.format("rnn cudnn: %d passed, %d failed", passed, failed))
os.exit(failed == 0 and 0 or 1)
