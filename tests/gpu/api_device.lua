-- The functions and modules written in Lua (einsum, attention, recurrent layers, conv1d /
-- conv_transpose2d / interpolate, the extra math, losses, distributions, checkpointing,
-- autograd.grad and custom Functions, optimizers, deepcopy, and the later 3-d, linalg, prune,
-- parametrize, torch.func pieces) run on the GPU in float64 against
-- the same work on the CPU: values and gradients must agree to 1e-9 (relative).
--   nnrepl tests/gpu/api_device.lua [device]      (prints "api on <device>: N passed, M failed")
local dev = arg[1] or "cuda"
local copy = require "copy"
local f64 = { dtype = torch.float64 }
local passed, failed = 0, 0

local function flat(v, out)
  out = out or {}
  if torch.is_tensor(v) then
    for _, x in ipairs(v:detach():to("cpu"):double():reshape(-1):tolist()) do out[#out + 1] = x end
  elseif type(v) == "table" then
    for _, x in ipairs(v) do flat(x, out) end
  elseif type(v) == "number" then
    out[#out + 1] = v
  end
  return out
end

local function check(name, a, b, tol)
  local x, y = flat(a), flat(b)
  local ok, worst = #x == #y and #x > 0, 0
  for i = 1, math.min(#x, #y) do
    local d = math.abs(x[i] - y[i]) / math.max(1, math.abs(y[i]))
    if d ~= d and x[i] ~= x[i] and y[i] ~= y[i] then d = 0 end
    worst = math.max(worst, d)
  end
  ok = ok and worst <= (tol or 1e-9)
  if ok then passed = passed + 1 else
    failed = failed + 1
    print(string.format("FAIL %s: %d vs %d values, worst relative difference %g", name, #x, #y, worst))
  end
end

-- run f on the CPU and on dev with the same inputs (each a float64 CPU tensor, moved), compare
-- results and, when `grads`, the inputs' gradients of sum(result * weights)
local function same(name, f, inputs, grads, tol)
  local function go(d)
    local xs = {}
    for i, x in ipairs(inputs) do
      xs[i] = torch.is_tensor(x) and x:to(d) or x
      if grads and torch.is_tensor(x) and x:is_floating_point() then xs[i] = xs[i]:detach():requires_grad_() end
    end
    local r = table.pack(f(table.unpack(xs, 1, #inputs)))
    local out = { r[1] }
    if grads then
      local total = 0
      for k = 1, r.n do
        if torch.is_tensor(r[k]) and r[k].requires_grad then
          local w = torch.arange(r[k]:numel(), f64):reshape(r[k]:size()):to(d):sin()
          total = total + (r[k] * w):sum()
        end
      end
      total:backward()
      for _, x in ipairs(xs) do if torch.is_tensor(x) and x.grad ~= nil then out[#out + 1] = x.grad end end
    end
    for k = 2, r.n do out[#out + 1] = r[k] end
    return out
  end
  check(name, go(dev), go("cpu"), tol)
end

torch.manual_seed(1)
local r = function(...) local s = { ... }; s[#s + 1] = f64; return torch.randn(table.unpack(s)) end

-- einsum and friends
same("einsum bhqd,bhkd", function(a, b) return torch.einsum("bhqd,bhkd->bhqk", a, b) end, { r(2, 3, 4, 5), r(2, 3, 6, 5) }, true)
same("einsum ii,ij->j", function(a, b) return torch.einsum("ii,ij->j", a, b) end, { r(3, 3), r(3, 4) }, true)
same("atan2 logaddexp hypot", function(a, b) return torch.atan2(a, b) + torch.logaddexp(a, b) + torch.hypot(a, b) end, { r(9), r(9) }, true)
same("cdist p=2 large", function(a, b) return torch.cdist(a, b) end, { r(30, 4), r(8, 4) }, true)
same("cdist p=1", function(a, b) return torch.cdist(a, b, 1.0) end, { r(5, 4), r(8, 4) }, true)
same("cross", function(a, b) return torch.cross(a, b, 1) end, { r(4, 3), r(4, 3) }, true)
same("quantile, searchsorted", function(a, s) return torch.quantile(a, 0.3, 1), torch.searchsorted(s, a:reshape(-1)) end,
  { r(3, 7), torch.arange(-2, 3, f64) }, false)
same("unique, bincount", function(a) return torch.unique(a, { return_counts = true }), torch.bincount(a) end, { torch.randint(0, 6, { 50 }) })
same("unary math", function(a) return a:sin() + a:cos() + a:atan() + a:expm1() + a:frac() + a:round() end, { r(11) }, true)

-- layers
local function module_same(name, build, inputs, extra)
  torch.manual_seed(2)
  local m = build():double()
  torch.manual_seed(2) -- built again rather than copied: a weight_norm'd module cannot be deep-copied (nor in PyTorch)
  local mc = build():double():to(dev)
  local params = function(mod) local t = {} for _, p in ipairs(mod:parameters()) do t[#t + 1] = p.grad end return t end
  local function go(mod, d)
    local xs = {}
    for i, x in ipairs(inputs) do xs[i] = x:to(d) end
    local out = mod(table.unpack(xs))
    local t = torch.is_tensor(out) and out or out[1] or out
    if not torch.is_tensor(t) then t = out end
    local w = torch.arange(t:numel(), f64):reshape(t:size()):to(d):cos()
    ;(t * w):sum():backward()
    return { t, params(mod) }
  end
  check(name, go(mc, dev), go(m, "cpu"), extra)
end

module_same("MultiheadAttention", function() return nn.MultiheadAttention(8, 2) end, { r(5, 3, 8), r(7, 3, 8), r(7, 3, 8) })
module_same("TransformerEncoderLayer", function() return nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0.0 }) end, { r(5, 2, 8) })
module_same("LSTM 2 layers both ways", function() return nn.LSTM(4, 5, { num_layers = 2, bidirectional = true }) end, { r(6, 3, 4) })
module_same("GRU", function() return nn.GRU(4, 5, { batch_first = true }) end, { r(3, 6, 4) })
module_same("Conv1d + MaxPool1d", function() return nn.Sequential(nn.Conv1d(3, 4, 3, { padding = 1, padding_mode = "reflect" }), nn.MaxPool1d(2)) end, { r(2, 3, 9) })
module_same("ConvTranspose2d", function() return nn.ConvTranspose2d(3, 2, 4, { stride = 2, padding = 1, output_padding = 1 }) end, { r(2, 3, 5, 5) })
module_same("Upsample bilinear", function() return nn.Sequential(nn.Upsample({ scale_factor = 1.7, mode = "bilinear" }), nn.Conv2d(2, 2, 3)) end, { r(1, 2, 6, 5) })
module_same("InstanceNorm2d affine", function() return nn.InstanceNorm2d(3, { affine = true }) end, { r(2, 3, 4, 5) })
module_same("Bilinear", function() return nn.Bilinear(3, 4, 2) end, { r(5, 3), r(5, 4) })
module_same("PReLU, Mish, GLU", function() return nn.Sequential(nn.Linear(4, 6), nn.PReLU(), nn.Mish(), nn.GLU()) end, { r(3, 4) })

module_same("unfold / fold", function()
  local M = nn.Module:extend("FoldNet")
  function M:__init() self.lin = nn.Linear(12, 12) end
  function M:forward(x) return F.fold(self.lin(F.unfold(x, 2, 1, 1, 1):transpose(1, 2)):transpose(1, 2), { 4, 5 }, 2, 1, 1, 1) end
  return M()
end, { r(2, 3, 4, 5) })
module_same("weight_norm, spectral_norm, LRN", function()
  return nn.Sequential(nn.utils.weight_norm(nn.Conv2d(2, 4, 3)), nn.LocalResponseNorm(3), nn.utils.spectral_norm(nn.Conv2d(4, 2, 1)))
end, { r(2, 2, 6, 6) })
do
  local function go(d)
    local m = nn.Linear(3, 2):double():to(d)
    torch.manual_seed(8)
    m.weight.data:copy_(torch.randn(2, 3, f64))
    local got = {}
    m:register_full_backward_hook(function(_, gin, gout) got = { gin[1], gout[1] } end)
    local x = torch.randn(4, 3, f64):to(d):requires_grad_()
    ;(m(x) * 3):sum():backward()
    return got
  end
  check("module backward hook", go(dev), go("cpu"))
end

same("affine_grid + grid_sample", function(x, th)
  return F.grid_sample(x, F.affine_grid(th, x:size()), { padding_mode = "border" })
end, { r(2, 3, 5, 6), r(2, 2, 3) * 0.5 }, true)

-- packed sequences
do
  local R = nn.utils.rnn
  local seqs = { r(5, 3), r(2, 3), r(4, 3) }
  torch.manual_seed(3)
  local m = nn.LSTM(3, 4, { bidirectional = true }):double()
  local mc = copy.deepcopy(m):to(dev)
  local function go(mod, d)
    local s = {}
    for i, x in ipairs(seqs) do s[i] = x:to(d) end
    local out, hc = mod(R.pack_sequence(s, { enforce_sorted = false }))
    return { (R.pad_packed_sequence(out)), hc[1], hc[2] }
  end
  check("LSTM on packed sequences", go(mc, dev), go(m, "cpu"))
end

-- losses
same("losses", function(a, b, y)
  return F.kl_div(F.log_softmax(a, 1), F.softmax(b, 1), { reduction = "batchmean" }) + F.triplet_margin_loss(a, b, b * 0.5)
    + F.cosine_embedding_loss(a, b, y) + F.multilabel_soft_margin_loss(a, b:gt(0):double()) + F.gaussian_nll_loss(a, b, a:abs() + 0.5)
end, { r(4, 5), r(4, 5), torch.tensor({ 1.0, -1.0, 1.0, -1.0 }, f64) }, true)

-- autograd.grad, custom Function, checkpoint
local Cube = torch.autograd.Function:extend("Cube")
function Cube.forward(ctx, x) ctx:save_for_backward(x); return x ^ 3 end
function Cube.backward(ctx, g) local x = table.unpack(ctx.saved_tensors); return g * 3 * x * x end
same("custom Function", function(a) return Cube.apply(a) end, { r(6) }, true)
same("autograd.grad", function(a, b)
  a, b = a:requires_grad_(), b:requires_grad_()
  local y = (a:sin() * b):sum()
  return torch.autograd.grad(y, { a, b })
end, { r(5), r(5) }, false)
do
  torch.manual_seed(4)
  local net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)):double()
  local netc = copy.deepcopy(net):to(dev)
  local function go(mod, d, ckpt)
    torch.manual_seed(5)
    local x = torch.randn(3, 4, f64):to(d):requires_grad_()
    local y = ckpt and torch.utils.checkpoint.checkpoint(mod, x) or mod(x)
    y:pow(2):sum():backward()
    local g = { y, x.grad }
    for _, p in ipairs(mod:parameters()) do g[#g + 1] = p.grad; p.grad = nil end
    return g
  end
  check("checkpoint", go(netc, dev, true), go(net, "cpu", false))
end

-- optimizers
for _, name in ipairs({ "Adadelta", "Adamax", "NAdam", "RAdam" }) do
  local function go(d)
    local w = torch.tensor({ 0.5, -1.5, 2.0 }, f64):to(d):requires_grad_()
    local opt = torch.optim[name]({ w }, { lr = 0.05, weight_decay = 0.01 })
    for _ = 1, 5 do
      opt:zero_grad()
      local loss = ((w - 1) ^ 3):sum()
      loss:backward()
      opt:step()
    end
    return w
  end
  check("optim." .. name, go(dev), go("cpu"))
end

-- distributions
do
  local function go(d)
    local n = torch.distributions.Normal(torch.tensor({ 0.5, -1.0 }, f64):to(d), torch.tensor({ 2.0, 0.5 }, f64):to(d))
    local v = torch.tensor({ 1.5, -0.2 }, f64):to(d)
    return { n:log_prob(v), n:entropy(), torch.distributions.kl_divergence(n, torch.distributions.Normal(v, v:abs() + 1)) }
  end
  check("Normal", go(dev), go("cpu"))
  torch.manual_seed(6)
  local c = torch.distributions.Categorical({ probs = torch.tensor({ 0.1, 0.2, 0.7 }):to(dev) })
  local freq = torch.bincount(c:sample({ 20000 }):to("cpu"), { minlength = 3 }):double() / 20000
  check("Categorical sampled on the device", freq, torch.tensor({ 0.1, 0.2, 0.7 }, f64), 0.02)
end

-- added later in session 14 (not yet run on a GPU when written)
module_same("Conv3d + MaxPool3d + AvgPool3d", function()
  return nn.Sequential(nn.Conv3d(2, 3, 3, { padding = 1, groups = 1 }), nn.MaxPool3d(2), nn.AvgPool3d(1), nn.AdaptiveAvgPool3d(1))
end, { r(2, 2, 5, 6, 4) })
module_same("ConvTranspose3d, ConvTranspose1d", function()
  local M = nn.Module:extend("T3")
  function M:__init() self.a = nn.ConvTranspose3d(2, 3, 2, { stride = 2 }); self.b = nn.ConvTranspose1d(3, 2, 3, { stride = 2, padding = 1 }) end
  function M:forward(x) local y = self.a(x); return self.b(y:flatten(2)) end
  return M()
end, { r(1, 2, 2, 3, 2) })
module_same("RMSNorm, EmbeddingBag", function()
  local M = nn.Module:extend("RE")
  function M:__init() self.e = nn.EmbeddingBag(10, 4, { mode = "mean" }); self.n = nn.RMSNorm({ 4 }) end
  function M:forward(x) return self.n(self.e(x:long():remainder(10))) end
  return M()
end, { torch.tensor({ { 1, 2, 3 }, { 4, 5, 9 } }, f64) })
same("ctc_loss", function(lp) return F.ctc_loss(F.log_softmax(lp, 2), torch.tensor({ { 1, 2, 1 }, { 2, 2, 0 } }):to(lp.device),
  { 6, 5 }, { 3, 2 }) end, { r(6, 2, 3) }, true)
same("linalg solve, cholesky, qr, eigvalsh, svdvals, det", function(a, b)
  local spd = a:matmul(a:t()) + torch.eye(4, f64):to(a.device) * 4
  return torch.linalg.solve(spd, b), torch.linalg.cholesky(spd), torch.linalg.eigvalsh(spd), torch.linalg.svdvals(a),
    torch.linalg.det(spd), (torch.linalg.qr(a))
end, { r(4, 4), r(4, 2) }, true, 1e-7)
same("diagonal view, kron, logcumsumexp, scatter_reduce", function(a, b)
  local c = a * 1
  c:diagonal():mul_(3)
  return c, torch.kron(a, b), torch.logcumsumexp(a, 1),
    torch.zeros(3, 3, f64):to(a.device):scatter_reduce(1, torch.tensor({ { 0, 0, 2 }, { 1, 1, 1 }, { 2, 0, 2 } }):to(a.device), a, "amax")
end, { r(3, 3), r(2, 2) }, true)
do
  local function go(d)
    torch.manual_seed(9)
    local m = nn.Linear(5, 3):double():to(d)
    nn.utils.prune.l1_unstructured(m, "weight", 0.4)
    nn.utils.parametrizations.orthogonal(nn.Linear(4, 4):double():to(d))
    local params = {}
    for _, e in ipairs(m:named_parameters()) do params[e[1] == "weight_orig" and "weight_orig" or e[1]] = e[2] end
    local x = torch.randn(6, 5, f64):to(d)
    local loss = function(p, xi) return torch.func.functional_call(m, p, { xi:unsqueeze(0) }):pow(2):sum() end
    local per = torch.func.vmap(torch.func.grad(loss), { nil, 0 })(params, x)
    return { m(x), per.bias, per.weight_orig }
  end
  check("prune, orthogonal, vmap(grad(functional_call))", go(dev), go("cpu"))
end
for _, name in ipairs({ "Rprop", "ASGD" }) do
  local function go(d)
    local w = torch.tensor({ 0.5, -1.5, 2.0 }, f64):to(d):requires_grad_()
    local opt = torch.optim[name]({ w }, { lr = 0.05 })
    for _ = 1, 5 do
      opt:zero_grad()
      ;(w * 3):sin():sum():backward()
      opt:step()
    end
    return w
  end
  check("optim." .. name, go(dev), go("cpu"))
end
do
  local x = torch.tensor({ 0.0, 1.0 }):to(dev):requires_grad_()
  local ok, err = pcall(function()
    local _ <close> = torch.autograd.detect_anomaly()
    ;(x:sqrt() * 0):sum():backward()
  end)
  check("anomaly mode on the device", { ok and 1 or 0, tostring(err):find("SqrtBackward0", 1, true) and 1 or 0 }, { 0, 1 })
end

-- double backward: a Hessian through linear, tanh, softmax, indexing; a gradient penalty's gradients
same("hessian (create_graph)", function(x, W)
  return torch.autograd.functional.hessian(function(t)
    return (F.softmax(F.linear(t:view(2, 3), W):tanh(), 1) * torch.arange(4, f64):to(t.device)):sum() + t[0] * t[4]
  end, x)
end, { r(6), r(4, 3) })
same("gradient penalty (create_graph)", function(x, W)
  local g = torch.autograd.grad(F.linear(x, W):tanh():sum(), x, { create_graph = true })[1]
  return ((g:norm(2, 1) - 1) ^ 2):mean()
end, { r(5, 3), r(4, 3) }, true)

-- layer norm's fused kernels: row lengths below, at and above a warp's multiple, several trailing dims
for _, c in ipairs({ { { 6, 5 }, { 5 } }, { { 3, 7, 64 }, { 64 } }, { { 4, 3, 1000 }, { 1000 } }, { { 130, 2, 3 }, { 2, 3 } } }) do
  local shape, ns = c[1], c[2]
  same(string.format("layer_norm [%s] over [%s]", table.concat(shape, ","), table.concat(ns, ",")), function(x, w, b)
    return F.layer_norm(x, ns, w, b, 1e-5) + F.layer_norm(x * 2, ns, w) + F.layer_norm(x, ns, nil, b)
  end, { r(table.unpack(shape)) * 3 + 1, r(table.unpack(ns)), r(table.unpack(ns)) }, true)
end
do -- float16 and float32 kernels against float64, forward and backward; rows held in registers
  -- as 16-byte vectors (512, 300 in float32), too long for them (2400 in float32) or not whole vectors (300 in 16 bits)
  for _, E in ipairs({ 300, 512, 2400 }) do
    local x, w, b, g = r(64, E), r(E), r(E), r(64, E)
    local xd, wd, bd = x:clone():requires_grad_(), w:clone():requires_grad_(), b:clone():requires_grad_()
    local want = F.layer_norm(xd, { E }, wd, bd)
    want:backward(g)
    for _, dt in ipairs({ torch.float32, torch.float16, torch.bfloat16 }) do
      local function on(t) return t:to(dev):to(dt):requires_grad_() end
      local xg, wg, bg = on(x), on(w), on(b)
      local got = F.layer_norm(xg, { E }, wg, bg)
      got:backward(g:to(dev):to(dt))
      local tol = dt == torch.float32 and 1e-4 or dt == torch.float16 and 2e-2 or 1e-1
      local function err(a, c) return ((a:double():cpu() - c) / (c:abs():max() + 1)):abs():max():item() end
      check(string.format("layer_norm %d in %s", E, tostring(dt)), { err(got, want:detach()) < tol and 1 or 0,
        err(xg.grad, xd.grad) < tol and 1 or 0, err(wg.grad, wd.grad) < 4 * tol and 1 or 0, err(bg.grad, bd.grad) < 4 * tol and 1 or 0 },
        { 1, 1, 1, 1 })
    end
  end
end

same("conv critic penalty, pools, batch norm, cross entropy (create_graph)", function(x, w1, w2)
  local xx = x:detach():requires_grad_()
  local h = F.max_pool2d(F.leaky_relu(F.conv2d(xx, w1, nil, { padding = 1 }), 0.2), 2)
  h = F.batch_norm(h, nil, nil, { training = true })
  local logits = F.adaptive_avg_pool2d(F.conv2d(h, w2), { 1, 1 }):flatten(1)
  local loss = F.cross_entropy(logits, torch.tensor({ 0, 1 }):to(x.device))
  local g = torch.autograd.grad(loss, xx, { create_graph = true })[1]
  return (g ^ 2):sum() + loss
end, { r(2, 1, 6, 6), r(3, 1, 3, 3), r(2, 3, 2, 2) }, true)

-- the session 16 additions: the new elementwise kernels, torch_numeric_more.lua, torch_shape_more.lua
same("asinh acosh atanh fmax fmin", function(a, b)
  return a:asinh() + (a:abs() + 1.5):acosh() + (a:tanh() * 0.9):atanh() + torch.fmax(a, b) * 2 + torch.fmin(a, b)
end, { r(40), r(40) }, true)
same("bitwise, nextafter", function(i, j, a, b)
  return (i & j) + (i | j) + (i ~ j) + (~i) + (i << (j % 5)) + (i >> (j % 7)), torch.nextafter(a, b)
end, { torch.randint(-100, 100, { 50 }), torch.randint(0, 60, { 50 }), r(50), r(50) })
same("tensordot, addbmm, multi_dot, cholesky_inverse", function(a, b, m, x, y, c)
  local spd = c:matmul(c:transpose(-1, -2)) + torch.eye(4, f64):to(c.device) * 4
  return torch.tensordot(a, b, { { 1, 2 }, { 0, 1 } }), torch.addbmm(m, x, y, { beta = 0.5, alpha = 2 }),
    torch.linalg.multi_dot({ a:reshape(6, 4), b:reshape(4, 10), b:reshape(10, 4) }),
    torch.cholesky_inverse(torch.linalg.cholesky(spd))
end, { r(3, 2, 4), r(2, 4, 5), r(3, 5), r(6, 3, 4), r(6, 4, 5), r(4, 4) }, true)
same("cov, corrcoef, trapezoid, cumulative_trapezoid, gradient", function(a, x)
  local xs = x:cumsum(0)
  return torch.cov(a, { correction = 0 }), torch.corrcoef(a), torch.trapezoid(a, { dim = 1 }),
    torch.cumulative_trapezoid(a, xs, { dim = 1 }), torch.gradient(a, { spacing = 0.5, dim = 1, edge_order = 2 })[1]
end, { r(4, 9), r(9):abs() + 0.1 }, true)
same("nanquantile, aminmax, logaddexp2, mvlgamma, frexp", function(a)
  local m, M = torch.aminmax(a, { dim = 1 })
  local mant, ex = torch.frexp(a)
  local withnan = a:clone()
  withnan[{ 0, 1 }] = 0 / 0
  return torch.nanquantile(withnan, 0.3, 1), m, M, torch.logaddexp2(a, a * 0.5), torch.mvlgamma(a:abs() + 2, 3), mant, ex
end, { r(5, 8) }, true)
same("histogram, combinations, windows, logspace", function(a)
  local d = a.device
  local h, edges = torch.histogram(a:cpu(), 7)
  return h, edges, torch.combinations(a[0], { r = 2 }), torch.hann_window(9, { dtype = torch.float64, device = d }),
    torch.hamming_window(8, { periodic = false, dtype = torch.float64, device = d }),
    torch.blackman_window(7, { dtype = torch.float64, device = d }), torch.logspace(-1, 2, 6, { dtype = torch.float64, device = d })
end, { r(3, 5) })
same("diagflat, unflatten, argwhere, unravel_index, as_strided, dsplit", function(a, b)
  local pieces = { torch.dsplit(a:reshape(2, 3, 4), 2) }
  return torch.diagflat(b, { offset = 1 }), a:unflatten(0, { 2, -1 }), torch.argwhere(a:gt(0)),
    torch.unravel_index(torch.tensor({ 3, 7, 11 }):to(a.device), { 3, 4 }), a:as_strided({ 3, 3 }, { 2, 1 }, 1),
    pieces[1], pieces[2]
end, { r(6, 4), r(5) }, true)
same("triangular_solve, lu, lu_solve, lu_unpack, qr", function(A, B)
  local sq = A + torch.eye(4, f64):to(A.device) * 5
  local X = torch.triangular_solve(B, sq:triu())
  local LU, piv = torch.lu(sq)
  local P, L, U = torch.lu_unpack(LU, piv)
  local Q, R = torch.qr(sq)
  return X, torch.lu_solve(B, LU, piv), P:matmul(L):matmul(U), Q:matmul(R)
end, { r(4, 4), r(4, 3) }, true)

same("torch.special", function(a, b)
  local S = torch.special
  local pos = a:abs() + 0.5
  return S.erfcx(a), S.ndtri(torch.sigmoid(a)), S.log_ndtr(a), S.i0e(a), S.i1(a), S.i1e(a), S.zeta(pos + 1, pos),
    S.gammainc(pos, b:abs()), S.gammaincc(pos, b:abs()), S.bessel_j0(a * 4), S.bessel_j1(a * 4), S.entr(pos),
    S.xlog1py(a, pos), S.multigammaln(pos + 2, 3), S.expit(a) + S.logit(torch.sigmoid(b), 1e-6)
end, { r(30), r(30) })
same("torch.special gradients", function(a)
  local S = torch.special
  return S.erfcx(a) + S.ndtri(torch.sigmoid(a)) + S.log_ndtr(a) + S.i0e(a) + S.i1e(a) + S.entr(a:abs() + 0.1)
end, { r(25) }, true)
same("distributions: log_prob, entropy, kl, cdf", function(a, b, v)
  local D = torch.distributions
  local pos, pos2 = a:abs() + 0.3, b:abs() + 0.2
  local g, e = D.Gamma(pos, pos2), D.Beta(pos, pos2)
  local mvn = D.MultivariateNormal(a:narrow(0, 0, 3), { scale_tril = torch.eye(3, f64):to(a.device) * 2 })
  return g:log_prob(v:abs() + 0.1), g:entropy(), D.Gamma(pos:detach(), pos2):cdf(v:abs()), e:log_prob(torch.sigmoid(v)), e:entropy(),
    D.kl_divergence(g, D.Gamma(pos2, pos)), D.kl_divergence(e, D.Beta(pos2, pos)), D.Laplace(a, pos2):log_prob(v),
    D.StudentT(pos + 1, a, pos2):log_prob(v), D.Poisson(pos):log_prob(torch.floor(v:abs() * 3)),
    mvn:log_prob(v:narrow(0, 0, 3)), D.Dirichlet(pos):log_prob(torch.softmax(v, 0))
end, { r(12), r(12), r(12) }, true)
same("Gamma's implicit draw gradient", function(a, x) return torch.distributions._h.standard_gamma_grad(a, x) end,
  { torch.tensor({ 0.3, 2.5, 40, 900, 1500 }, f64), torch.tensor({ 0.05, 6.0, 35, 880, 1530 }, f64) })
do -- rsample's gradients flow on the device
  local D = torch.distributions
  local c = torch.tensor({ 1.5, 2.5, 4.0 }, f64):to(dev):requires_grad_()
  D.Dirichlet(c):rsample({ 100 }):select(-1, 0):sum():backward()
  local b = torch.tensor({ 2.0 }, f64):to(dev):requires_grad_()
  D.Beta(b, b * 1.5):rsample({ 100 }):sum():backward()
  check("rsample gradients on " .. dev, { c.grad:isfinite():all():item() and b.grad:isfinite():all():item() and 1 or 0 }, { 1 })
end
do -- samples come on the parameters' device and dtype
  local D = torch.distributions
  local conc = torch.tensor({ 0.5, 2.0, 7.5 }, f64):to(dev)
  local ok = true
  for _, d in ipairs({ D.Gamma(conc, conc), D.Beta(conc, conc), D.Dirichlet(conc), D.Poisson(conc), D.Binomial(10, torch.sigmoid(conc)),
    D.Exponential(conc), D.StudentT(conc) }) do
    local x = d:sample({ 4000 })
    ok = ok and x.device.type == dev and x.dtype == torch.float64 and x:isfinite():all():item()
  end
  check("distributions sample on " .. dev, { ok and 1 or 0 }, { 1 })
  torch.manual_seed(3)
  local m = D.Gamma(conc, torch.ones(3, f64):to(dev)):sample({ 200000 }):mean(0):cpu()
  check("Gamma sample means on " .. dev, m, conc:cpu(), 0.02)
end

print(string.format("api on %s: %d passed, %d failed", dev, passed, failed))
os.exit(failed == 0 and 0 or 1)
