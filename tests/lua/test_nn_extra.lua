-- nn_extra.lua: each result against plain-Lua loops over :tolist() values (float64), gradients
-- by central differences, and the error messages for bad input.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }
local i64 = { dtype = torch.int64 }

local function flat(v, out)
  out = out or {}
  if type(v) ~= "table" then out[#out + 1] = v; return out end
  for _, e in ipairs(v) do flat(e, out) end
  return out
end

T.test("Softmax2d, softshrink, hardshrink", function()
  torch.manual_seed(1)
  local x = torch.randn(2, 3, 2, 2, f64)
  local xs, want = x:tolist(), {}
  for n = 1, 2 do
    want[n] = {}
    for c = 1, 3 do want[n][c] = {} for i = 1, 2 do want[n][c][i] = {} for j = 1, 2 do
      local s = 0
      for k = 1, 3 do s = s + math.exp(xs[n][k][i][j]) end
      want[n][c][i][j] = math.exp(xs[n][c][i][j]) / s
    end end end
  end
  T.near(nn.Softmax2d()(x):tolist(), want, 1e-12, "Softmax2d over channels")
  T.near(nn.Softmax2d()(x[0]):tolist(), want[1], 1e-12, "Softmax2d on a 3-D input")
  T.raises(function() nn.Softmax2d()(torch.randn(2, 3)) end, "Softmax2d: expected input to be 3D or 4D, got 2D instead")

  local v = torch.tensor({ -1.5, -0.5, -0.2, 0.0, 0.3, 0.7, 2.0 }, f64)
  local soft, hard = {}, {}
  for i, a in ipairs(v:tolist()) do
    soft[i] = a > 0.5 and a - 0.5 or (a < -0.5 and a + 0.5 or 0)
    hard[i] = math.abs(a) > 0.5 and a or 0
  end
  T.near(F.softshrink(v):tolist(), soft, 1e-15, "softshrink")
  T.near(F.hardshrink(v):tolist(), hard, 1e-15, "hardshrink")
  T.near(nn.Softshrink(1.0)(v):tolist(), { -0.5, 0, 0, 0, 0, 0, 1.0 }, 1e-15, "Softshrink(1.0)")
  T.near(nn.Hardshrink{ lambd = 1.0 }(v):tolist(), { -1.5, 0, 0, 0, 0, 0, 2.0 }, 1e-15, "Hardshrink(lambd=1.0)")
  T.eq(tostring(nn.Softshrink()), "Softshrink(0.5)", "Softshrink repr")
  T.raises(function() F.softshrink(v, -1) end, "lambda must be greater or equal to 0, but found to be -1.")
  local g = torch.tensor({ -1.3, -0.2, 0.4, 0.9 }, f64)
  gradcheck("softshrink", function(t) return F.softshrink(t) end, { g })
  gradcheck("hardshrink", function(t) return F.hardshrink(t) end, { g })
end)

T.test("rrelu and RReLU", function()
  local x = torch.tensor({ { -2.0, -1.0, 0.5 }, { 3.0, -0.25, -4.0 } }, f64)
  local xs = flat(x:tolist())
  local mid = (1 / 8 + 1 / 3) / 2
  local want = {}
  for i, a in ipairs(xs) do want[i] = a >= 0 and a or a * mid end
  T.near(flat(F.rrelu(x):tolist()), want, 1e-15, "eval: slope (lower+upper)/2")
  local m = nn.RReLU()
  m:eval()
  T.near(flat(m(x):tolist()), want, 1e-15, "RReLU in eval mode")
  m:train()
  torch.manual_seed(5)
  local big = torch.randn(400, f64)
  local y = m(big)
  local ok, slopes = true, {}
  for i, a in ipairs(big:tolist()) do
    local b = y[i - 1]:item()
    if a >= 0 then ok = ok and b == a
    else
      local s = b / a
      ok = ok and s >= 1 / 8 - 1e-12 and s <= 1 / 3 + 1e-12
      slopes[#slopes + 1] = s
    end
  end
  T.check(ok, "training: positives kept, negative slopes in [lower, upper]")
  local mean = 0
  for _, s in ipairs(slopes) do mean = mean + s end
  mean = mean / #slopes
  T.check(math.abs(mean - mid) < 0.02 and slopes[1] ~= slopes[2], "training slopes vary, averaging (lower+upper)/2")
  local r = F.rrelu(torch.tensor({ -1.0, -1.0 }, f64), 0.2, 0.2, true)
  T.near(r:tolist(), { -0.2, -0.2 }, 1e-12, "lower = upper")
  T.raises(function() F.rrelu(x, 0.5, 0.2, true) end, "Lower bound should be less than or equal to the upper bound")
  T.eq(tostring(nn.RReLU(0.1, 0.3, true)), "RReLU(lower=0.1, upper=0.3, inplace=True)", "RReLU repr")
  gradcheck("rrelu training", function(t) return F.rrelu(t, 0.1, 0.4, true) end, { x }, { seed = 3 })
end)

T.test("rms_norm and RMSNorm", function()
  torch.manual_seed(2)
  local x = torch.randn(2, 3, 4, f64)
  local w = torch.randn(3, 4, f64)
  local xs, ws = x:tolist(), w:tolist()
  local function ref(eps, weight)
    local out = {}
    for n = 1, 2 do
      local ss = 0
      for i = 1, 3 do for j = 1, 4 do ss = ss + xs[n][i][j] ^ 2 end end
      local r = 1 / math.sqrt(ss / 12 + eps)
      out[n] = {}
      for i = 1, 3 do out[n][i] = {} for j = 1, 4 do
        out[n][i][j] = xs[n][i][j] * r * (weight and ws[i][j] or 1)
      end end
    end
    return out
  end
  T.near(F.rms_norm(x, { 3, 4 }, w, 1e-3):tolist(), ref(1e-3, true), 1e-12, "rms_norm over the last two dims")
  T.near(F.rms_norm(x, { 3, 4 }):tolist(), ref(2.220446049250313e-16, false), 1e-12, "eps None: finfo(float64).eps")
  local m = nn.RMSNorm({ 3, 4 }, { eps = 1e-3, dtype = torch.float64 })
  T.near(m(x):tolist(), ref(1e-3, false), 1e-12, "RMSNorm (weight ones)")
  T.eq(m.weight.shape:totable(), { 3, 4 }, "RMSNorm weight shape")
  T.eq(tostring(nn.RMSNorm(4)), "RMSNorm((4,), eps=None, elementwise_affine=True)", "RMSNorm repr")
  T.check(nn.RMSNorm(4, { elementwise_affine = false }).weight == nil, "no weight without elementwise_affine")
  local x2 = torch.randn(3, 4)
  local y2 = F.rms_norm(x2, 4)
  local row = x2[0]:tolist()
  local ss = 0
  for _, a in ipairs(row) do ss = ss + a * a end
  T.near(y2[0]:tolist()[2], row[2] / math.sqrt(ss / 4 + 1.1920928955078125e-07), 1e-5, "float32: eps finfo(float32).eps")
  T.raises(function() F.rms_norm(x, { 4, 3 }) end,
    "Given normalized_shape=[4, 3], expected input with shape [*, 4, 3], but got input of size[2, 3, 4]")
  T.raises(function() F.rms_norm(x, 4, torch.ones(3, f64)) end,
    "Expected weight to be of same shape as normalized_shape, but got weight of shape [3] and normalized_shape = [4]")
  gradcheck("rms_norm input and weight", function(a, b) return F.rms_norm(a, 4, b, 1e-5) end,
    { torch.randn(2, 4, f64), torch.randn(4, f64) })
end)

T.test("multi_margin_loss and MultiMarginLoss", function()
  torch.manual_seed(3)
  local x = torch.randn(4, 5, f64)
  local y = torch.tensor({ 0, 3, 4, 1 }, i64)
  local w = torch.rand(5, f64) + 0.5
  local xs, ys, wl = x:tolist(), y:tolist(), w:tolist()
  local function ref(p, margin, weight)
    local out = {}
    for n = 1, 4 do
      local t, s = ys[n] + 1, 0
      for i = 1, 5 do
        if i ~= t then
          local z = math.max(0, margin - xs[n][t] + xs[n][i]) ^ p
          s = s + z * (weight and wl[t] or 1)
        end
      end
      out[n] = s / 5
    end
    return out
  end
  for _, p in ipairs({ 1, 2 }) do
    for _, margin in ipairs({ 1.0, 0.3 }) do
      local want = ref(p, margin, false)
      T.near(F.multi_margin_loss(x, y, p, margin, { reduction = "none" }):tolist(), want, 1e-12,
        string.format("p=%d margin=%g", p, margin))
    end
  end
  local want = ref(2, 1.0, true)
  local sum = 0
  for _, v in ipairs(want) do sum = sum + v end
  T.near(F.multi_margin_loss(x, y, 2, 1.0, w, { reduction = "sum" }):item(), sum, 1e-12, "weighted, sum")
  T.near(nn.MultiMarginLoss{ p = 2, weight = w }(x, y):item(), sum / 4, 1e-12, "MultiMarginLoss weighted mean")
  T.near(F.multi_margin_loss(x[1], y[1]):item(), ref(1, 1.0)[2], 1e-12, "unbatched input")
  T.raises(function() F.multi_margin_loss(x, y, 3) end, "only p == 1 and p == 2 supported")
  T.raises(function() nn.MultiMarginLoss(3) end, "only p == 1 and p == 2 supported")
  T.raises(function() F.multi_margin_loss(x, torch.tensor({ 0, 1, 2 }, i64)) end, "inconsistent target size, expected 4 but got [3]")
  T.raises(function() F.multi_margin_loss(x, torch.tensor({ 0, 1, 2, 5 }, i64)) end, "target out of range")
  T.raises(function() F.multi_margin_loss(torch.randn(2, 3, 4), y) end,
    "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 3, 4]")
  gradcheck("multi_margin_loss p=2", function(t) return F.multi_margin_loss(t, y, 2, 1.0, w, { reduction = "none" }) end, { x })
end)

T.test("pdist", function()
  torch.manual_seed(4)
  local x = torch.randn(5, 3, f64)
  local xs = x:tolist()
  for _, p in ipairs({ 2, 1, 3, math.huge, 0 }) do
    local want = {}
    for i = 1, 5 do for j = i + 1, 5 do
      local s = 0
      for k = 1, 3 do
        local d = math.abs(xs[i][k] - xs[j][k])
        if p == math.huge then s = math.max(s, d) elseif p == 0 then s = s + (d ~= 0 and 1 or 0) else s = s + d ^ p end
      end
      want[#want + 1] = (p == math.huge or p == 0) and s or s ^ (1 / p)
    end end
    T.near(F.pdist(x, p):tolist(), want, 1e-12, "pdist p=" .. tostring(p))
  end
  T.eq(F.pdist(torch.randn(1, 3)).shape:totable(), { 0 }, "one row: no pairs")
  T.raises(function() F.pdist(torch.randn(2, 3, 4)) end, "pdist only supports 2D tensors, got: 3D")
  T.raises(function() F.pdist(x, -1) end, "pdist only supports non-negative p values")
  gradcheck("pdist p=2", function(t) return F.pdist(t) end, { torch.randn(4, 3, f64) })
  gradcheck("pdist p=3", function(t) return F.pdist(t, 3) end, { torch.randn(4, 3, f64) })
  local dup = torch.tensor({ { 1.0, 2.0 }, { 1.0, 2.0 }, { 0.0, 1.0 } }, f64):requires_grad_()
  F.pdist(dup):sum():backward()
  T.check(dup.grad:isfinite():all():item(), "equal rows: finite gradient")
end)

T.test("lp_pool1d / lp_pool2d and the modules", function()
  torch.manual_seed(6)
  local x = torch.rand(1, 2, 5, 6, f64) + 0.1
  local xs = x:tolist()
  local function ref2(p, kh, kw, sh, sw)
    local out = {}
    for c = 1, 2 do
      out[c] = {}
      for i = 0, (5 - kh) // sh do
        out[c][i + 1] = {}
        for j = 0, (6 - kw) // sw do
          local s = 0
          for a = 1, kh do for b = 1, kw do s = s + xs[1][c][i * sh + a][j * sw + b] ^ p end end
          out[c][i + 1][j + 1] = s ^ (1 / p)
        end
      end
    end
    return { out }
  end
  T.near(F.lp_pool2d(x, 2, 2):tolist(), ref2(2, 2, 2, 2, 2), 1e-12, "lp_pool2d p=2 k=2")
  T.near(F.lp_pool2d(x, 3, { 2, 3 }, 1):tolist(), ref2(3, 2, 3, 1, 1), 1e-12, "lp_pool2d p=3 k=(2,3) stride 1")
  T.near(nn.LPPool2d(1.5, 3, { 2, 1 })(x):tolist(), ref2(1.5, 3, 3, 2, 1), 1e-12, "LPPool2d")
  local v = x[0]:reshape(2, 30)
  local vs = v:tolist()
  local want = {}
  for c = 1, 2 do
    want[c] = {}
    for i = 0, (30 - 4) // 3 do
      local s = 0
      for a = 1, 4 do s = s + vs[c][i * 3 + a] ^ 2 end
      want[c][i + 1] = math.sqrt(s)
    end
  end
  T.near(F.lp_pool1d(v, 2, 4, 3):tolist(), want, 1e-12, "lp_pool1d (unbatched) k=4 stride 3")
  T.near(nn.LPPool1d(2, 4, 3)(v:unsqueeze(0)):tolist(), { want }, 1e-12, "LPPool1d")
  T.eq(tostring(nn.LPPool2d(2, 3)), "LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)", "LPPool2d repr")
  gradcheck("lp_pool2d", function(t) return F.lp_pool2d(t, 3, 2) end, { torch.rand(1, 1, 4, 4, f64) + 0.2 })
end)

T.test("gumbel_softmax", function()
  local logits = torch.tensor({ { 0.5, -1.0, 2.0, 0.1 }, { 1.0, 1.0, -0.5, 0.0 } }, f64)
  torch.manual_seed(9)
  local u = torch.rand(2, 4, f64):tolist()
  torch.manual_seed(9)
  local y = F.gumbel_softmax(logits, 0.7)
  local ls, want = logits:tolist(), {}
  for n = 1, 2 do
    local e, s = {}, 0
    for c = 1, 4 do e[c] = math.exp((ls[n][c] - math.log(-math.log(u[n][c]))) / 0.7); s = s + e[c] end
    want[n] = {}
    for c = 1, 4 do want[n][c] = e[c] / s end
  end
  T.near(y:tolist(), want, 1e-12, "soft sample with noise -log(-log(U))")
  torch.manual_seed(9)
  local yh = F.gumbel_softmax(logits, { tau = 0.7, hard = true })
  local ok = true
  for n = 1, 2 do
    local best = 1
    for c = 2, 4 do if want[n][c] > want[n][best] then best = c end end
    for c = 1, 4 do ok = ok and math.abs(yh[n - 1][c - 1]:item() - (c == best and 1 or 0)) < 1e-12 end
  end
  T.check(ok, "hard: one-hot at the soft sample's argmax")
  -- straight-through: the hard sample's gradient is the soft sample's
  local a = logits:clone():requires_grad_()
  local b = logits:clone():requires_grad_()
  local wt = torch.randn(2, 4, f64)
  torch.manual_seed(9); (F.gumbel_softmax(a, 0.7, true) * wt):sum():backward()
  torch.manual_seed(9); (F.gumbel_softmax(b, 0.7) * wt):sum():backward()
  T.near(a.grad:tolist(), b.grad:tolist(), 1e-12, "hard gradient = soft gradient")
  -- dim=0 on the (4, 2) transpose: the noise is drawn in that tensor's own order
  local ut = torch.tensor(u, f64):reshape(4, 2):t():tolist()
  local want0 = {}
  for n = 1, 2 do
    local e, s = {}, 0
    for c = 1, 4 do e[c] = math.exp((ls[n][c] - math.log(-math.log(ut[n][c]))) / 0.7); s = s + e[c] end
    want0[n] = {}
    for c = 1, 4 do want0[n][c] = e[c] / s end
  end
  torch.manual_seed(9)
  T.near(F.gumbel_softmax(logits:t(), 0.7, false, 1e-10, 0):t():tolist(), want0, 1e-12, "dim=0")
end)

T.test("embedding_bag and EmbeddingBag", function()
  torch.manual_seed(7)
  local W = torch.randn(6, 3, f64)
  local ws = W:tolist()
  local function ref(bags, mode, psw)
    local out = {}
    for b, bag in ipairs(bags) do
      local r = { 0, 0, 0 }
      if mode == "max" and #bag > 0 then r = { -math.huge, -math.huge, -math.huge } end
      for k, id in ipairs(bag) do
        for d = 1, 3 do
          local v = ws[id + 1][d] * (psw and psw[b][k] or 1)
          if mode == "max" then r[d] = math.max(r[d], v) else r[d] = r[d] + v end
        end
      end
      if mode == "mean" and #bag > 0 then for d = 1, 3 do r[d] = r[d] / #bag end end
      out[b] = r
    end
    return out
  end
  local inp2 = torch.tensor({ { 0, 2, 5 }, { 1, 1, 3 } }, i64)
  for _, mode in ipairs({ "sum", "mean", "max" }) do
    T.near(F.embedding_bag(inp2, W, { mode = mode }):tolist(), ref({ { 0, 2, 5 }, { 1, 1, 3 } }, mode), 1e-12, "2-D input, " .. mode)
  end
  local inp1 = torch.tensor({ 4, 0, 2, 2, 5, 1 }, i64)
  local offs = torch.tensor({ 0, 2, 2, 5 }, i64) -- the second bag is empty
  local bags = { { 4, 0 }, {}, { 2, 2, 5 }, { 1 } }
  for _, mode in ipairs({ "sum", "mean", "max" }) do
    T.near(F.embedding_bag(inp1, W, offs, { mode = mode }):tolist(), ref(bags, mode), 1e-12, "1-D with offsets, " .. mode)
  end
  T.near(F.embedding_bag(inp1, W, torch.tensor({ 0, 2, 2, 5, 6 }, i64), { mode = "sum", include_last_offset = true }):tolist(),
    ref(bags, "sum"), 1e-12, "include_last_offset")
  T.near(F.embedding_bag(inp1, W, offs, { mode = "mean", padding_idx = 2 }):tolist(),
    ref({ { 4, 0 }, {}, { 5 }, { 1 } }, "mean"), 1e-12, "padding_idx left out of the bags (and the mean's count)")
  local psw = torch.tensor({ 0.5, 2.0, -1.0, 1.5, 3.0, 0.25 }, f64)
  T.near(F.embedding_bag(inp1, W, offs, { mode = "sum", per_sample_weights = psw }):tolist(),
    ref(bags, "sum", { { 0.5, 2.0 }, {}, { -1.0, 1.5, 3.0 }, { 0.25 } }), 1e-12, "per_sample_weights")

  local m = nn.EmbeddingBag(6, 3, { mode = "sum", _weight = W })
  T.near(m(inp1, offs):tolist(), ref(bags, "sum"), 1e-12, "EmbeddingBag forward")
  T.eq(tostring(nn.EmbeddingBag(10, 3, { padding_idx = 0 })), "EmbeddingBag(10, 3, mode=mean, padding_idx=0)", "EmbeddingBag repr")
  T.eq(nn.EmbeddingBag(10, 3, { padding_idx = 0 }).weight[0]:abs():sum():item(), 0.0, "padding row zero")
  local pre = nn.EmbeddingBag.from_pretrained(W, { mode = "max" })
  T.near(pre(inp2):tolist(), ref({ { 0, 2, 5 }, { 1, 1, 3 } }, "max"), 1e-12, "from_pretrained")
  T.check(not pre.weight.requires_grad, "from_pretrained freezes by default")

  T.raises(function() F.embedding_bag(inp2, W, offs) end,
    "~if input is 2D, then offsets has to be None")
  T.raises(function() F.embedding_bag(inp1, W) end, "offsets has to be a 1D Tensor but got None")
  T.raises(function() F.embedding_bag(inp2, W, { mode = "prod" }) end, "mode has to be one of sum, mean or max")
  T.raises(function() F.embedding_bag(inp2, W, { per_sample_weights = torch.ones(2, 3, f64) }) end,
    "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='mean'). Please open a feature request on the Pytorch GitHub.")
  T.raises(function() F.embedding_bag(inp1, W, torch.tensor({ 1, 3 }, i64)) end,
    "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got 1")
  T.raises(function() nn.EmbeddingBag(5, 2, { padding_idx = 5 }) end, "padding_idx must be within num_embeddings")

  for _, mode in ipairs({ "sum", "mean", "max" }) do
    gradcheck("embedding_bag weight, " .. mode, function(t) return F.embedding_bag(inp1, t, offs, { mode = mode }) end, { W })
  end
  gradcheck("embedding_bag per_sample_weights", function(t, p)
    return F.embedding_bag(inp1, t, offs, { mode = "sum", per_sample_weights = p })
  end, { W, psw })
end)

T.test("max_unpool1d / max_unpool2d and the modules", function()
  torch.manual_seed(8)
  local x = torch.randn(2, 2, 4, 6, f64)
  local y, idx = F.max_pool2d(x, 2, { return_indices = true })
  local u = F.max_unpool2d(y, idx, 2)
  local xs, us, ok = x:tolist(), u:tolist(), u.shape:totable()[3] == 4
  for n = 1, 2 do for c = 1, 2 do for i = 0, 1 do for j = 0, 2 do
    -- exactly the block's maximum is kept, the rest are zero
    local best, bi, bj = -math.huge, nil, nil
    for a = 1, 2 do for b = 1, 2 do
      local v = xs[n][c][2 * i + a][2 * j + b]
      if v > best then best, bi, bj = v, 2 * i + a, 2 * j + b end
    end end
    for a = 1, 2 do for b = 1, 2 do
      local r, q = 2 * i + a, 2 * j + b
      ok = ok and us[n][c][r][q] == ((r == bi and q == bj) and best or 0)
    end end
  end end end end
  T.check(ok, "max_unpool2d puts each maximum back at its place")
  local m = nn.MaxUnpool2d(2)
  T.eq(m(y, idx, { output_size = { 5, 7 } }).shape:totable(), { 2, 2, 5, 7 }, "output_size")
  T.eq(m(y, idx, { 2, 2, 5, 7 }).shape:totable(), { 2, 2, 5, 7 }, "output_size with batch and channels")
  T.near(m(y[0], idx[0]):tolist(), us[1], 0, "unbatched")
  T.eq(tostring(m), "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))", "MaxUnpool2d repr")
  T.raises(function() m(y, idx, { output_size = { 6, 6 } }) end, 'invalid output_size "[6, 6]" (dim 0 must be between 2 and 6)')
  T.raises(function() m(y, idx, { output_size = { 4 } }) end,
    "output_size should be a sequence containing 2 or 4 elements, but it has a length of '1'")

  local v = torch.tensor({ { { 1.0, 5.0, 3.0, 2.0, -1.0, 4.0, 0.5 } } }, f64)
  local y1, i1 = F.max_pool1d(v, 2, { return_indices = true })
  T.near(nn.MaxUnpool1d(2)(y1, i1):tolist(), { { { 0, 5.0, 3.0, 0, 0, 4.0 } } }, 0, "max_unpool1d")
  T.near(F.max_unpool1d(y1, i1, 2, { output_size = { 7 } }):tolist(), { { { 0, 5.0, 3.0, 0, 0, 4.0, 0 } } }, 0, "max_unpool1d output_size")
  T.eq(tostring(nn.MaxUnpool1d(3, 2)), "MaxUnpool1d(kernel_size=(3,), stride=(2,), padding=(0,))", "MaxUnpool1d repr")
  gradcheck("max_unpool2d", function(t) return F.max_unpool2d(t, idx, 2) end, { y })
end)

T.test("LazyLinear", function()
  torch.manual_seed(10)
  local m = nn.LazyLinear(3)
  T.eq(tostring(m), "LazyLinear(in_features=0, out_features=3, bias=True)", "before the first forward")
  T.check(m:has_uninitialized_params(), "has_uninitialized_params")
  local x = torch.randn(2, 5)
  local y = m(x)
  T.eq({ m.in_features, m.weight.shape:totable(), m.bias.shape:totable() }, { 5, { 3, 5 }, { 3 } }, "materialised shapes")
  T.eq(tostring(m), "Linear(in_features=5, out_features=3, bias=True)", "becomes a Linear")
  T.check(nn.isinstance(m, nn.Linear), "isinstance Linear")
  local xs, ws, bs, ys = x:tolist(), m.weight:tolist(), m.bias:tolist(), y:tolist()
  local ok = true
  for n = 1, 2 do for o = 1, 3 do
    local s = bs[o]
    for i = 1, 5 do s = s + xs[n][i] * ws[o][i] end
    ok = ok and math.abs(s - ys[n][o]) < 1e-5
  end end
  T.check(ok, "y = x W^T + b")
  local bound = 1 / math.sqrt(5)
  T.check(m.weight:abs():max():item() <= bound and m.bias:abs():max():item() <= bound, "Linear's init bounds")
  local names = {}
  for name in m:named_parameters() do names[#names + 1] = name end
  T.eq(names, { "weight", "bias" }, "parameters after materialisation")
  local nb = nn.LazyLinear(2, false)
  nb(torch.randn(4, 3, f64))
  T.check(nb.bias == nil and nb.weight.dtype == torch.float64, "bias=false; float64 input gives float64 weight")
  T.raises(function() m(torch.randn(2, 4)) end, "Linear(in_features=5, out_features=3) got input of shape [2, 4], expected [*, 5]")
end)

T.test("nn.init.sparse_ and dirac_", function()
  torch.manual_seed(11)
  local w = torch.empty(10, 6)
  nn.init.sparse_(w, 0.3)
  local ws, ok = w:tolist(), true
  for c = 1, 6 do
    local zeros = 0
    for r = 1, 10 do if ws[r][c] == 0 then zeros = zeros + 1 end end
    ok = ok and zeros == 3
  end
  T.check(ok, "ceil(sparsity * rows) zeros per column")
  T.check(w:abs():max():item() < 0.1, "std 0.01")
  T.raises(function() nn.init.sparse_(torch.empty(2, 3, 4), 0.5) end, "Only tensors with 2 dimensions are supported")

  local k = nn.init.dirac_(torch.empty(4, 4, 3, 3, f64))
  local x = torch.randn(1, 4, 5, 5, f64)
  T.near(F.conv2d(x, k, nil, 1, 1):tolist(), x:tolist(), 1e-15, "dirac_ kernel: conv is the identity")
  local kg = nn.init.dirac_(torch.empty(6, 2, 3), 2):tolist()
  local want = {}
  for o = 1, 6 do
    want[o] = {}
    for i = 1, 2 do
      local oo = (o - 1) % 3
      want[o][i] = { 0, (oo == i - 1) and 1 or 0, 0 }
    end
  end
  T.near(kg, want, 0, "dirac_ with groups=2 (3-D)")
  T.raises(function() nn.init.dirac_(torch.empty(3, 3)) end, "Only tensors with 3, 4, or 5 dimensions are supported")
  T.raises(function() nn.init.dirac_(torch.empty(5, 2, 3), 2) end, "dim 0 must be divisible by groups")
end)

-- CTC: the probability of a target as the sum over all C^T paths that collapse to it
local function brute_ctc(lp, target, blank)
  local Tn, C = #lp, #lp[1]
  local total = 0
  local path = {}
  local function rec(t, logp)
    if t > Tn then
      local out, prev = {}, nil
      for _, c in ipairs(path) do
        if c ~= prev and c ~= blank then out[#out + 1] = c end
        prev = c
      end
      if #out == #target then
        for i = 1, #out do if out[i] ~= target[i] then return end end
        total = total + math.exp(logp)
      end
      return
    end
    for c = 0, C - 1 do
      path[t] = c
      rec(t + 1, logp + lp[t][c + 1])
    end
  end
  rec(1, 0)
  return -math.log(total)
end

T.test("ctc_loss and CTCLoss", function()
  torch.manual_seed(12)
  local Tm, N, C = 5, 3, 3
  local lp = torch.randn(Tm, N, C, f64):log_softmax(2)
  local targets = torch.tensor({ { 1, 2, 0 }, { 2, 2, 1 }, { 1, 0, 0 } }, i64) -- padded; lengths 2, 3, 1 (with a repeat)
  local il, tl = { 5, 5, 3 }, { 2, 3, 1 }
  local lps = lp:tolist()
  local want = {}
  for n = 1, N do
    local seq, tg = {}, {}
    for t = 1, il[n] do seq[t] = lps[t][n] end
    for s = 1, tl[n] do tg[s] = targets[n - 1][s - 1]:item() end
    want[n] = brute_ctc(seq, tg, 0)
  end
  local got = F.ctc_loss(lp, targets, torch.tensor(il, i64), torch.tensor(tl, i64), { reduction = "none" })
  T.near(got:tolist(), want, 1e-10, "per-sample losses against all alignments")
  local mean = 0
  for n = 1, N do mean = mean + want[n] / tl[n] end
  T.near(F.ctc_loss(lp, targets, il, tl):item(), mean / N, 1e-10, "mean: divided by target lengths, then averaged")
  T.near(nn.CTCLoss{ reduction = "sum" }(lp, targets, il, tl):item(), want[1] + want[2] + want[3], 1e-10, "CTCLoss sum")
  local cat = torch.tensor({ 1, 2, 2, 2, 1, 1 }, i64)
  T.near(F.ctc_loss(lp, cat, il, tl, { reduction = "none" }):tolist(), want, 1e-10, "concatenated 1-D targets")
  -- blank = 2: labels 0 and 1
  local seq2, want_b = {}, nil
  for t = 1, 4 do seq2[t] = lps[t][1] end
  want_b = brute_ctc(seq2, { 0, 1 }, 2)
  T.near(F.ctc_loss(lp:narrow(0, 0, 4):select(1, 0), torch.tensor({ 0, 1 }, i64), 4, 2, 2, "none"):item(), want_b, 1e-10,
    "unbatched (T, C) with blank=2")
  -- infeasible: 2 frames for "2 2" (needs 3)
  local inf = F.ctc_loss(lp, targets, { 5, 2, 3 }, tl, { reduction = "none" })
  T.check(inf[1]:item() == math.huge and math.abs(inf[0]:item() - want[1]) < 1e-10, "infeasible target: inf")
  T.near(F.ctc_loss(lp, targets, { 5, 2, 3 }, tl, { reduction = "none", zero_infinity = true }):tolist(), { want[1], 0, want[3] },
    1e-10, "zero_infinity")
  local leaf = lp:detach():clone():requires_grad_()
  F.ctc_loss(leaf, targets, { 5, 2, 3 }, tl, { reduction = "sum", zero_infinity = true }):backward()
  T.check(leaf.grad:select(1, 1):abs():sum():item() == 0 and leaf.grad:isfinite():all():item(), "zero_infinity: zero, finite gradient")

  T.raises(function() F.ctc_loss(lp, targets, { 5, 5 }, tl) end, "input_lengths must be of size batch_size")
  T.raises(function() F.ctc_loss(lp, targets, il, { 1, 1 }) end, "target_lengths must be of size batch_size")
  T.raises(function() F.ctc_loss(lp, targets, { 6, 5, 3 }, tl) end,
    "Expected input_lengths to have value at most 5, but got value 6 (while checking arguments for ctc_loss_cpu)")
  T.raises(function() F.ctc_loss(lp, targets, il, tl, 3) end, "blank must be in label range")
  T.raises(function() F.ctc_loss(lp, targets, il, { 2, 4, 1 }) end,
    "Expected tensor to have size at least 4 at dimension 1, but got size 3 for argument #2 'targets' (while checking arguments for ctc_loss_cpu)")

  -- gradient through log_softmax of the logits (what PyTorch's own backward agrees with)
  local logits = torch.randn(4, 2, 3, f64)
  gradcheck("ctc_loss through log_softmax", function(z)
    return F.ctc_loss(z:log_softmax(2), torch.tensor({ { 1, 2 }, { 1, 1 } }, i64), { 4, 3 }, { 2, 2 }, { reduction = "none" })
  end, { logits })
  gradcheck("ctc_loss of log_probs, mean", function(z)
    return F.ctc_loss(z, torch.tensor({ { 1, 2 }, { 2, 0 } }, i64), { 4, 4 }, { 2, 1 })
  end, { lp:narrow(0, 0, 4):narrow(1, 0, 2):contiguous() })
end)
