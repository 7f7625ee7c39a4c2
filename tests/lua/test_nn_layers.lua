-- nn layers: printing (strings taken from PyTorch 2.11), constructor arguments,
-- forward values against formulas in plain Lua, wrong-shape errors.
local T = ...

-- ---- plain-Lua references ----

local function erf(x) -- Abramowitz-Stegun 7.1.26 is too coarse; use a series / continued fraction
  local ax = math.abs(x)
  local r
  if ax < 3 then
    local sum, term, n = ax, ax, 0
    repeat
      n = n + 1
      term = term * ax * ax / n
      local add = term / (2 * n + 1) * ((n % 2 == 1) and -1 or 1)
      sum = sum + add
    until math.abs(add) < 1e-17 or n > 200
    r = sum * 2 / math.sqrt(math.pi)
  else
    r = 1.0
  end
  return x < 0 and -r or r
end

local function map(list, f)
  local out = {}
  for i, v in ipairs(list) do out[i] = type(v) == "table" and map(v, f) or f(v) end
  return out
end

local function sigmoid(v) return 1 / (1 + math.exp(-v)) end

T.test("layers print as PyTorch", function()
  local cases = {
    { nn.Linear(10, 2), "Linear(in_features=10, out_features=2, bias=True)" },
    { nn.Linear(10, 2, { bias = false }), "Linear(in_features=10, out_features=2, bias=False)" },
    { nn.Conv2d(3, 32, 3), "Conv2d(3, 32, kernel_size=(3, 3), stride=(1, 1))" },
    { nn.Conv2d(3, 32, { 3, 5 }, { stride = 2, padding = 1, dilation = 2, groups = 1, bias = false }),
      "Conv2d(3, 32, kernel_size=(3, 5), stride=(2, 2), padding=(1, 1), dilation=(2, 2), bias=False)" },
    { nn.Conv2d(4, 8, 3, { padding = "same", groups = 2 }), "Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=same, groups=2)" },
    { nn.Conv2d(4, 8, 3, { padding = "valid" }), "Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=valid)" },
    { nn.Conv2d { in_channels = 3, out_channels = 32, kernel_size = { 3, 3 } }, "Conv2d(3, 32, kernel_size=(3, 3), stride=(1, 1))" },
    { nn.MaxPool2d(2), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)" },
    { nn.MaxPool2d({ 3, 3 }, { stride = { 2, 2 }, padding = 1, ceil_mode = true }),
      "MaxPool2d(kernel_size=(3, 3), stride=(2, 2), padding=1, dilation=1, ceil_mode=True)" },
    { nn.AvgPool2d(2), "AvgPool2d(kernel_size=2, stride=2, padding=0)" },
    { nn.AvgPool2d(3, 1, 1), "AvgPool2d(kernel_size=3, stride=1, padding=1)" },
    { nn.AdaptiveAvgPool2d({ 1, 1 }), "AdaptiveAvgPool2d(output_size=(1, 1))" },
    { nn.AdaptiveAvgPool2d(1), "AdaptiveAvgPool2d(output_size=1)" },
    { nn.AdaptiveMaxPool2d(7), "AdaptiveMaxPool2d(output_size=7)" },
    { nn.ReLU(), "ReLU()" },
    { nn.ReLU(true), "ReLU(inplace=True)" },
    { nn.ReLU6(), "ReLU6()" },
    { nn.ReLU6({ inplace = true }), "ReLU6(inplace=True)" },
    { nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)" },
    { nn.LeakyReLU(0.2, true), "LeakyReLU(negative_slope=0.2, inplace=True)" },
    { nn.ELU(), "ELU(alpha=1.0)" },
    { nn.ELU({ alpha = 0.5, inplace = true }), "ELU(alpha=0.5, inplace=True)" },
    { nn.GELU(), "GELU(approximate='none')" },
    { nn.GELU("tanh"), "GELU(approximate='tanh')" },
    { nn.SiLU(), "SiLU()" },
    { nn.SiLU(true), "SiLU(inplace=True)" },
    { nn.Sigmoid(), "Sigmoid()" },
    { nn.Tanh(), "Tanh()" },
    { nn.Softmax(1), "Softmax(dim=1)" },
    { nn.Softmax(), "Softmax(dim=None)" },
    { nn.LogSoftmax({ dim = -1 }), "LogSoftmax(dim=-1)" },
    { nn.Dropout(), "Dropout(p=0.5, inplace=False)" },
    { nn.Dropout(0.25, true), "Dropout(p=0.25, inplace=True)" },
    { nn.BatchNorm1d(10), "BatchNorm1d(10, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)" },
    { nn.BatchNorm2d(64, { eps = 1e-3, momentum = false, affine = false, track_running_stats = false }),
      "BatchNorm2d(64, eps=0.001, momentum=None, affine=False, track_running_stats=False)" },
    { nn.LayerNorm(10), "LayerNorm((10,), eps=1e-05, elementwise_affine=True)" },
    { nn.LayerNorm({ 4, 5 }, { elementwise_affine = false }), "LayerNorm((4, 5), eps=1e-05, elementwise_affine=False)" },
    { nn.GroupNorm(2, 6), "GroupNorm(2, 6, eps=1e-05, affine=True)" },
    { nn.GroupNorm(3, 6, 1e-6, false), "GroupNorm(3, 6, eps=1e-06, affine=False)" },
    { nn.Embedding(10, 3), "Embedding(10, 3)" },
    { nn.Embedding(10, 3, -1), "Embedding(10, 3, padding_idx=9)" },
    { nn.Embedding(10, 3, { max_norm = 1.0, scale_grad_by_freq = true }), "Embedding(10, 3, max_norm=1.0, scale_grad_by_freq=True)" },
    { nn.Flatten(), "Flatten(start_dim=1, end_dim=-1)" },
    { nn.Flatten(0, 2), "Flatten(start_dim=0, end_dim=2)" },
    { nn.Unflatten(1, { 2, 5 }), "Unflatten(dim=1, unflattened_size=(2, 5))" },
    { nn.Identity(), "Identity()" },
    { nn.CrossEntropyLoss(), "CrossEntropyLoss()" },
    { nn.CrossEntropyLoss({ label_smoothing = 0.1 }), "CrossEntropyLoss()" },
    { nn.NLLLoss(), "NLLLoss()" },
    { nn.MSELoss(), "MSELoss()" },
    { nn.L1Loss(), "L1Loss()" },
    { nn.SmoothL1Loss({ beta = 0.5 }), "SmoothL1Loss()" },
    { nn.BCELoss(), "BCELoss()" },
    { nn.BCEWithLogitsLoss({ pos_weight = torch.ones(3) }), "BCEWithLogitsLoss()" },
  }
  for _, c in ipairs(cases) do T.eq(tostring(c[1]), c[2], c[2]) end
end)

T.test("constructor arguments", function()
  T.raises(function() return nn.Linear(3) end, "bad argument #2 to 'Linear' (missing required argument 'out_features')")
  T.raises(function() return nn.Linear(3, 2, { bais = true }) end, "bad argument #3 to 'Linear' (unknown keyword 'bais')")
  T.raises(function() return nn.Conv2d { in_channels = 3, out_channels = 8, kernel = 3 } end,
    "bad argument #1 to 'Conv2d' (unknown keyword 'kernel')")
  T.raises(function() return nn.Linear(3, 2, { in_features = 4 }) end,
    "bad argument #3 to 'Linear' (got multiple values for argument 'in_features')")
  T.raises(function() return nn.ReLU(true, 1) end, "bad argument #2 to 'ReLU' (ReLU takes at most 1 positional arguments, got 2)")
  T.raises(function() return nn.Linear(2.5, 2) end, "Linear: in_features must be an integer, got 2.5")
  local l = nn.Linear { in_features = 3, out_features = 4, bias = false, dtype = torch.float64 }
  T.eq({ l.in_features, l.out_features, l.bias }, { 3, 4, nil }, "all keywords")
  T.eq(tostring(l.weight.dtype), "torch.float64", "dtype= makes float64 parameters")
  local c = nn.Conv2d(3, 8, 3, { padding = 1, stride = 2 })
  T.eq({ c.padding, c.stride, c.kernel_size }, { { 1, 1 }, { 2, 2 }, { 3, 3 } }, "ints become pairs")
  T.eq(c.weight.shape:totable(), { 8, 3, 3, 3 }, "conv weight shape")
  T.eq(nn.Conv2d(4, 8, 3, { groups = 2 }).weight.shape:totable(), { 8, 2, 3, 3 }, "grouped weight shape")
  -- PyTorch's constructor errors
  T.raises(function() return nn.Dropout(1.5) end, "dropout probability has to be between 0 and 1, but got 1.5")
  T.raises(function() return nn.Conv2d(3, 8, 3, { groups = 2 }) end, "in_channels must be divisible by groups")
  T.raises(function() return nn.Conv2d(3, 8, 3, { stride = 2, padding = "same" }) end,
    "padding='same' is not supported for strided convolutions")
  T.raises(function() return nn.Conv2d(3, 8, 3, { padding = "full" }) end,
    "Invalid padding string 'full', should be one of {'valid', 'same'}")
  T.raises(function() return nn.Conv2d(3, 8, 3, { padding_mode = "foo" }) end,
    "~padding_mode must be one of")
  T.raises(function() return nn.GroupNorm(4, 6) end, "num_channels (6) must be divisible by num_groups (4)")
  T.raises(function() return nn.Embedding(10, 3, { padding_idx = 10 }) end, "Padding_idx must be within num_embeddings")
  T.raises(function() return nn.Unflatten(1, { 2, 2.5 }) end,
    "unflattened_size must be tuple of ints, but found element of type float at pos 1")
  T.raises(function() return nn.MSELoss({ reduction = "avg" }) end, "avg is not a valid value for reduction")
  T.eq(nn.MSELoss({ size_average = false }).reduction, "sum", "legacy size_average")
  T.eq(nn.MSELoss({ reduce = false }).reduction, "none", "legacy reduce")
end)

T.test("wrong input shapes name the layer and both shapes", function()
  T.raises(function() return nn.Linear(2304, 256)(torch.zeros(32, 2000)) end,
    "Linear(in_features=2304, out_features=256) got input of shape [32, 2000], expected [*, 2304]")
  T.raises(function() return nn.Conv2d(3, 32, 3)(torch.zeros(8, 1, 28, 28)) end,
    "Conv2d(3, 32, kernel_size=(3, 3), stride=(1, 1)) got input of shape [8, 1, 28, 28], expected [N, 3, H, W] or [3, H, W]")
  T.raises(function() return nn.BatchNorm2d(64)(torch.zeros(8, 32, 4, 4)) end,
    "BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True) got input of shape [8, 32, 4, 4], expected [N, 64, H, W]")
  T.raises(function() return nn.BatchNorm1d(3)(torch.zeros(4, 5)) end,
    "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True) got input of shape [4, 5], expected [N, 3] or [N, 3, L]")
  T.raises(function() return nn.BatchNorm2d(3)(torch.zeros(2, 3)) end, "expected 4D input (got 2D input)")
  T.raises(function() return nn.BatchNorm1d(3)(torch.zeros(2, 3, 4, 5)) end, "expected 2D or 3D input (got 4D input)")
  T.raises(function() return nn.LayerNorm(10)(torch.zeros(3, 5)) end,
    "LayerNorm((10,), eps=1e-05, elementwise_affine=True) got input of shape [3, 5], expected [*, 10]")
  T.raises(function() return nn.GroupNorm(2, 6)(torch.zeros(3, 4)) end,
    "GroupNorm(2, 6, eps=1e-05, affine=True) got input of shape [3, 4], expected [N, 6, *]")
  -- the error points at the line that called the layer
  local ok, err = pcall(function() local y = nn.Linear(2, 3)(torch.zeros(1, 3)); return y end)
  T.check(not ok and err:find("^[^:]*test_nn_layers.lua:%d+: Linear") ~= nil, "position of the call: " .. tostring(err))
  -- so do errors from torch.nn.functional inside a layer
  ok, err = pcall(function() local y = nn.Conv2d(3, 8, 3)(torch.zeros(1, 3, 5, 5, { dtype = torch.float64 })); return y end)
  T.check(not ok and err:find("^[^:]*test_nn_layers.lua:%d+: .*Input type %(double%)") ~= nil,
    "F errors at the call: " .. tostring(err))
end)

T.test("Linear = x W^T + b", function()
  local l = nn.Linear(3, 2)
  local x = torch.randn(4, 3)
  local W, b, X = l.weight:tolist(), l.bias:tolist(), x:tolist()
  local want = {}
  for i = 1, 4 do
    want[i] = {}
    for o = 1, 2 do
      local s = b[o]
      for k = 1, 3 do s = s + X[i][k] * W[o][k] end
      want[i][o] = s
    end
  end
  local y = l(x)
  T.near(y:tolist(), want, 1e-5, "forward")
  T.eq(y.shape:totable(), { 4, 2 }, "shape")
  T.eq(nn.Linear(3, 2, { bias = false })(torch.zeros(2, 3)):tolist(), { { 0.0, 0.0 }, { 0.0, 0.0 } }, "no bias")
  T.eq(l(torch.randn(2, 5, 3)).shape:totable(), { 2, 5, 2 }, "leading dims kept")
  local g = nn.Linear(3, 2)
  g(x):sum():backward()
  T.near(g.bias.grad:tolist(), { 4, 4 }, 1e-6, "bias gradient = batch size")
end)

-- conv2d reference: x [N][C][H][W], w [O][C/g][kh][kw]
local function conv_ref(X, Wt, B, stride, pad, dil, groups)
  local N, C, H, Wd = #X, #X[1], #X[1][1], #X[1][1][1]
  local O, Cg, KH, KW = #Wt, #Wt[1], #Wt[1][1], #Wt[1][1][1]
  local OH = (H + 2 * pad[1] - dil[1] * (KH - 1) - 1) // stride[1] + 1
  local OW = (Wd + 2 * pad[2] - dil[2] * (KW - 1) - 1) // stride[2] + 1
  local out = {}
  for n = 1, N do
    out[n] = {}
    for o = 1, O do
      out[n][o] = {}
      local g = (o - 1) // (O // groups)
      for i = 1, OH do
        out[n][o][i] = {}
        for j = 1, OW do
          local s = B and B[o] or 0
          for c = 1, Cg do
            for a = 1, KH do
              for bb = 1, KW do
                local y = (i - 1) * stride[1] - pad[1] + (a - 1) * dil[1] + 1
                local xx = (j - 1) * stride[2] - pad[2] + (bb - 1) * dil[2] + 1
                if y >= 1 and y <= H and xx >= 1 and xx <= Wd then
                  s = s + X[n][g * Cg + c][y][xx] * Wt[o][c][a][bb]
                end
              end
            end
          end
          out[n][o][i][j] = s
        end
      end
    end
  end
  return out
end

T.test("Conv2d forward", function()
  local x = torch.randn(2, 4, 7, 6)
  for _, cfg in ipairs({
    { stride = 1, padding = 0, dilation = 1, groups = 1, bias = true },
    { stride = 2, padding = 1, dilation = 1, groups = 2, bias = false },
    { stride = 1, padding = 2, dilation = 2, groups = 1, bias = true },
  }) do
    local c = nn.Conv2d(4, 6, 3, cfg)
    local want = conv_ref(x:tolist(), c.weight:tolist(), c.bias and c.bias:tolist(), { cfg.stride, cfg.stride },
      { cfg.padding, cfg.padding }, { cfg.dilation, cfg.dilation }, cfg.groups)
    T.near(c(x):tolist(), want, 1e-4, string.format("conv stride=%d padding=%d dilation=%d groups=%d", cfg.stride,
      cfg.padding, cfg.dilation, cfg.groups))
  end
  local same = nn.Conv2d(4, 2, 3, { padding = "same" })
  T.eq(same(x).shape:totable(), { 2, 2, 7, 6 }, "padding='same' keeps H, W")
  T.eq(nn.Conv2d(4, 2, 3, { padding = "valid" })(x).shape:totable(), { 2, 2, 5, 4 }, "padding='valid'")
  T.eq(nn.Conv2d(4, 2, 3)(torch.randn(4, 7, 6)).shape:totable(), { 2, 5, 4 }, "unbatched input")
end)

T.test("pools, flatten, identity", function()
  local x = torch.arange(16, { dtype = torch.float32 }):view(1, 1, 4, 4)
  T.eq(nn.MaxPool2d(2)(x):tolist(), { { { { 5.0, 7.0 }, { 13.0, 15.0 } } } }, "MaxPool2d(2)")
  T.eq(nn.AvgPool2d(2)(x):tolist(), { { { { 2.5, 4.5 }, { 10.5, 12.5 } } } }, "AvgPool2d(2)")
  T.eq(nn.AdaptiveAvgPool2d(1)(x):tolist(), { { { { 7.5 } } } }, "AdaptiveAvgPool2d(1)")
  T.eq(nn.AdaptiveMaxPool2d({ 1, 2 })(x):tolist(), { { { { 13.0, 15.0 } } } }, "AdaptiveMaxPool2d((1, 2))")
  T.eq(nn.MaxPool2d(3, { stride = 1, padding = 1 })(x).shape:totable(), { 1, 1, 4, 4 }, "padded max pool")
  local y = torch.randn(2, 3, 4, 5)
  T.eq(nn.Flatten()(y).shape:totable(), { 2, 60 }, "Flatten()")
  T.eq(nn.Flatten(0, 2)(y).shape:totable(), { 24, 5 }, "Flatten(0, 2)")
  T.eq(nn.Unflatten(1, { 6, 10 })(nn.Flatten()(y)).shape:totable(), { 2, 6, 10 }, "Unflatten")
  T.eq(nn.Unflatten(-1, { 5, -1 })(torch.zeros(2, 20)).shape:totable(), { 2, 5, 4 }, "Unflatten with -1")
  T.check(rawequal(nn.Identity()(y), y), "Identity returns its input")
end)

T.test("activations", function()
  local x = torch.randn(3, 5) * 3
  local X = x:tolist()
  local function check(m, f, name, tol)
    T.near(m(x):tolist(), map(X, f), tol or 1e-5, name)
  end
  check(nn.ReLU(), function(v) return math.max(v, 0) end, "ReLU")
  check(nn.ReLU6(), function(v) return math.min(math.max(v, 0), 6) end, "ReLU6")
  check(nn.LeakyReLU(0.2), function(v) return v > 0 and v or 0.2 * v end, "LeakyReLU")
  check(nn.ELU(0.5), function(v) return v > 0 and v or 0.5 * (math.exp(v) - 1) end, "ELU")
  check(nn.GELU(), function(v) return 0.5 * v * (1 + erf(v / math.sqrt(2))) end, "GELU", 1e-4)
  check(nn.GELU("tanh"), function(v)
    local inner = math.sqrt(2 / math.pi) * (v + 0.044715 * v ^ 3)
    local t = (math.exp(inner) - math.exp(-inner)) / (math.exp(inner) + math.exp(-inner))
    return 0.5 * v * (1 + t)
  end, "GELU tanh", 1e-4)
  check(nn.SiLU(), function(v) return v * sigmoid(v) end, "SiLU")
  check(nn.Sigmoid(), sigmoid, "Sigmoid")
  check(nn.Tanh(), function(v) return (math.exp(v) - math.exp(-v)) / (math.exp(v) + math.exp(-v)) end, "Tanh")
  local function softmax_rows(rows, log)
    local out = {}
    for i, r in ipairs(rows) do
      local m, s = -math.huge, 0
      for _, v in ipairs(r) do m = math.max(m, v) end
      for _, v in ipairs(r) do s = s + math.exp(v - m) end
      out[i] = {}
      for j, v in ipairs(r) do out[i][j] = log and (v - m - math.log(s)) or math.exp(v - m) / s end
    end
    return out
  end
  T.near(nn.Softmax(1)(x):tolist(), softmax_rows(X), 1e-5, "Softmax(dim=1)")
  T.near(nn.Softmax()(x):tolist(), softmax_rows(X), 1e-5, "Softmax() on 2-d input uses dim 1")
  T.near(nn.LogSoftmax(-1)(x):tolist(), softmax_rows(X, true), 1e-5, "LogSoftmax(dim=-1)")
  local r = torch.tensor({ -1.0, 2.0 })
  local out = nn.ReLU(true)(r)
  T.eq(r:tolist(), { 0.0, 2.0 }, "inplace ReLU changes its input")
  T.eq(out:data_ptr(), r:data_ptr(), "and returns it")
end)

T.test("Dropout", function()
  local x = torch.ones(200, 500)
  local d = nn.Dropout(0.3)
  local y = d(x)
  local zeros = y:eq(0):sum():item() / x:numel()
  T.near(zeros, 0.3, 0.02, "train mode zeroes about p")
  local kept = y:ne(0)
  T.near(y:sum():item() / kept:sum():item(), 1 / 0.7, 1e-5, "and scales the rest by 1/(1-p)")
  d:eval()
  local z = torch.randn(4, 5)
  T.eq(d(z):tolist(), z:tolist(), "eval mode is the identity")
  T.eq(nn.Dropout(0)(z):tolist(), z:tolist(), "p=0 keeps everything")
  local d2 = nn.Dropout2d(0.5)
  T.eq(tostring(d2), "Dropout2d(p=0.5, inplace=False)", "Dropout2d prints")
  local planes = d2(torch.ones(8, 50, 3, 3)):view(400, 9)
  local lo, hi = planes:min(1), planes:max(1) -- per (n, c) plane
  T.check(lo:eq(hi):all():item(), "Dropout2d zeroes whole channels")
  T.near(lo:eq(0):float():mean():item(), 0.5, 0.1, "about p of the channels")
  d2:eval()
  local z4 = torch.randn(2, 3, 2, 2)
  T.eq(d2(z4):tolist(), z4:tolist(), "Dropout2d in eval is the identity")
end)

-- per-channel batch statistics of x [N, C, ...] as plain Lua: means, biased and unbiased variances
local function channel_stats(x)
  local C = x:size(1)
  local v = x:transpose(0, 1):reshape(C, -1):tolist()
  local mean, var_b, var_u = {}, {}, {}
  for c = 1, C do
    local n, s = #v[c], 0
    for _, e in ipairs(v[c]) do s = s + e end
    mean[c] = s / n
    local q = 0
    for _, e in ipairs(v[c]) do q = q + (e - mean[c]) ^ 2 end
    var_b[c], var_u[c] = q / n, q / (n - 1)
  end
  return mean, var_b, var_u
end

T.test("BatchNorm train and eval", function()
  local bn = nn.BatchNorm2d(3)
  nn.init.uniform_(bn.weight, 0.5, 1.5)
  nn.init.uniform_(bn.bias, -1, 1)
  local x = torch.randn(4, 3, 5, 5) * 2 + 1
  local mean, var_b, var_u = channel_stats(x)
  local W, B = bn.weight:tolist(), bn.bias:tolist()
  local y = bn(x)
  local X, Y = x:tolist(), y:tolist()
  local worst = 0
  for n = 1, 4 do for c = 1, 3 do for i = 1, 5 do for j = 1, 5 do
    local want = (X[n][c][i][j] - mean[c]) / math.sqrt(var_b[c] + 1e-5) * W[c] + B[c]
    worst = math.max(worst, math.abs(Y[n][c][i][j] - want))
  end end end end
  T.check(worst < 1e-4, "train: normalised with batch statistics (max error " .. worst .. ")")
  local rm, rv = {}, {}
  for c = 1, 3 do rm[c] = 0.9 * 0 + 0.1 * mean[c]; rv[c] = 0.9 * 1 + 0.1 * var_u[c] end
  T.near(bn.running_mean:tolist(), rm, 1e-5, "running_mean updated with momentum 0.1")
  T.near(bn.running_var:tolist(), rv, 1e-5, "running_var uses the unbiased variance")
  T.eq(bn.num_batches_tracked:item(), 1, "num_batches_tracked")
  bn:eval()
  local x2 = torch.randn(2, 3, 5, 5)
  local Y2, X2 = bn(x2):tolist(), x2:tolist()
  worst = 0
  for n = 1, 2 do for c = 1, 3 do for i = 1, 5 do for j = 1, 5 do
    local want = (X2[n][c][i][j] - rm[c]) / math.sqrt(rv[c] + 1e-5) * W[c] + B[c]
    worst = math.max(worst, math.abs(Y2[n][c][i][j] - want))
  end end end end
  T.check(worst < 1e-4, "eval: normalised with running statistics (max error " .. worst .. ")")
  T.near(bn.running_mean:tolist(), rm, 1e-6, "eval leaves running stats alone")
  T.eq(bn.num_batches_tracked:item(), 1, "eval does not count batches")
  -- momentum=None: cumulative average
  local cum = nn.BatchNorm1d(2, { momentum = false })
  local a, b = torch.randn(8, 2), torch.randn(8, 2) + 3
  cum(a); cum(b)
  local ma, mb = channel_stats(a), channel_stats(b)
  T.near(cum.running_mean:tolist(), { (ma[1] + mb[1]) / 2, (ma[2] + mb[2]) / 2 }, 1e-5, "cumulative moving average")
  -- without running stats, eval uses batch statistics
  local nostats = nn.BatchNorm1d(2, { track_running_stats = false, affine = false })
  nostats:eval()
  local z = nostats(torch.randn(16, 2) * 5 + 2)
  T.near(z:mean(0):tolist(), { 0, 0 }, 1e-5, "track_running_stats=false normalises with the batch")
  T.eq(nostats.running_mean, nil, "no running_mean buffer")
  T.eq(nostats:state_dict():keys(), {}, "and nothing in the state_dict")
  -- 3-d input for BatchNorm1d
  T.eq(nn.BatchNorm1d(3)(torch.randn(4, 3, 7)).shape:totable(), { 4, 3, 7 }, "BatchNorm1d on [N, C, L]")
end)

T.test("LayerNorm and GroupNorm", function()
  local ln = nn.LayerNorm(4)
  nn.init.uniform_(ln.weight, 0.5, 1.5)
  nn.init.uniform_(ln.bias, -1, 1)
  local x = torch.randn(3, 4) * 3
  local X, W, B = x:tolist(), ln.weight:tolist(), ln.bias:tolist()
  local want = {}
  for i = 1, 3 do
    local m, v = 0, 0
    for j = 1, 4 do m = m + X[i][j] / 4 end
    for j = 1, 4 do v = v + (X[i][j] - m) ^ 2 / 4 end
    want[i] = {}
    for j = 1, 4 do want[i][j] = (X[i][j] - m) / math.sqrt(v + 1e-5) * W[j] + B[j] end
  end
  T.near(ln(x):tolist(), want, 1e-4, "LayerNorm")
  local gn = nn.GroupNorm(2, 4)
  local g = torch.randn(2, 4, 3)
  local G = g:tolist()
  local out = gn(g):tolist()
  local worst = 0
  for n = 1, 2 do
    for grp = 0, 1 do
      local vals = {}
      for c = grp * 2 + 1, grp * 2 + 2 do for k = 1, 3 do vals[#vals + 1] = G[n][c][k] end end
      local m, v = 0, 0
      for _, e in ipairs(vals) do m = m + e / #vals end
      for _, e in ipairs(vals) do v = v + (e - m) ^ 2 / #vals end
      for c = grp * 2 + 1, grp * 2 + 2 do
        for k = 1, 3 do
          worst = math.max(worst, math.abs(out[n][c][k] - (G[n][c][k] - m) / math.sqrt(v + 1e-5)))
        end
      end
    end
  end
  T.check(worst < 1e-4, "GroupNorm normalises each group (max error " .. worst .. ")")
end)

T.test("Embedding", function()
  local e = nn.Embedding(10, 3, { padding_idx = 0 })
  T.eq(e.weight[0]:tolist(), { 0.0, 0.0, 0.0 }, "padding row starts at zero")
  local idx = torch.tensor({ { 1, 2 }, { 0, 9 } })
  local y = e(idx)
  T.eq(y.shape:totable(), { 2, 2, 3 }, "indices.shape + [D]")
  T.eq(y[1][1]:tolist(), e.weight[9]:tolist(), "rows looked up")
  local w = torch.randn(4, 2)
  local pre = nn.Embedding.from_pretrained(w)
  T.check(not pre.weight.requires_grad, "from_pretrained freezes by default")
  T.eq(pre(torch.tensor({ 3 }))[0]:tolist(), w[3]:tolist(), "pretrained rows")
  T.check(nn.Embedding.from_pretrained(w, { freeze = false }).weight.requires_grad, "freeze=false")
  T.eq(nn.Embedding:from_pretrained(w, { padding_idx = 1 }).padding_idx, 1, "called with ':' too")
end)

-- the mean over rows i of f(i)
local function mean_of(n, f)
  local s = 0
  for i = 1, n do s = s + f(i) end
  return s / n
end

T.test("losses", function()
  local x = torch.randn(5, 4)
  local t = torch.tensor({ 0, 3, 1, 1, 2 })
  local X, Tg = x:tolist(), t:tolist()
  local function logp(i, c)
    local m, s = -math.huge, 0
    for _, v in ipairs(X[i]) do m = math.max(m, v) end
    for _, v in ipairs(X[i]) do s = s + math.exp(v - m) end
    return X[i][c] - m - math.log(s)
  end
  T.near(nn.CrossEntropyLoss()(x, t):item(), mean_of(5, function(i) return -logp(i, Tg[i] + 1) end), 1e-5, "CrossEntropyLoss")
  local w = torch.tensor({ 1.0, 2.0, 0.5, 3.0 })
  local Wl = w:tolist()
  local num, den = 0, 0
  for i = 1, 5 do num = num - Wl[Tg[i] + 1] * logp(i, Tg[i] + 1); den = den + Wl[Tg[i] + 1] end
  T.near(nn.CrossEntropyLoss({ weight = w })(x, t):item(), num / den, 1e-5, "weighted mean")
  T.eq(nn.CrossEntropyLoss({ weight = w }):state_dict():keys(), { "weight" }, "weight is a buffer")
  num, den = 0, 0
  for i = 1, 5 do if Tg[i] ~= 1 then num = num - logp(i, Tg[i] + 1); den = den + 1 end end
  T.near(nn.CrossEntropyLoss({ ignore_index = 1 })(x, t):item(), num / den, 1e-5, "ignore_index")
  T.near(nn.CrossEntropyLoss({ reduction = "sum" })(x, t):item(), 5 * mean_of(5, function(i) return -logp(i, Tg[i] + 1) end), 1e-5, "sum")
  T.eq(nn.CrossEntropyLoss({ reduction = "none" })(x, t).shape:totable(), { 5 }, "none")
  local eps = 0.1
  T.near(nn.CrossEntropyLoss({ label_smoothing = eps })(x, t):item(), mean_of(5, function(i)
    local smooth = 0
    for c = 1, 4 do smooth = smooth - logp(i, c) end
    return (1 - eps) * -logp(i, Tg[i] + 1) + eps / 4 * smooth
  end), 1e-5, "label_smoothing")
  T.near(nn.NLLLoss()(F.log_softmax(x, 1), t):item(), mean_of(5, function(i) return -logp(i, Tg[i] + 1) end), 1e-5, "NLLLoss")
  local a, b = torch.randn(3, 4), torch.randn(3, 4)
  local A, Bv = a:view(-1):tolist(), b:view(-1):tolist()
  T.near(nn.MSELoss()(a, b):item(), mean_of(12, function(i) return (A[i] - Bv[i]) ^ 2 end), 1e-5, "MSELoss")
  T.near(nn.L1Loss()(a, b):item(), mean_of(12, function(i) return math.abs(A[i] - Bv[i]) end), 1e-5, "L1Loss")
  T.near(nn.SmoothL1Loss({ beta = 0.5 })(a, b):item(), mean_of(12, function(i)
    local d = math.abs(A[i] - Bv[i])
    return d < 0.5 and 0.5 * d * d / 0.5 or d - 0.25
  end), 1e-5, "SmoothL1Loss(beta=0.5)")
  local p = torch.rand(12) * 0.9 + 0.05
  local y = torch.rand(12):gt(0.5):float()
  local P, Yv = p:tolist(), y:tolist()
  T.near(nn.BCELoss()(p, y):item(), mean_of(12, function(i)
    return -(Yv[i] * math.log(P[i]) + (1 - Yv[i]) * math.log(1 - P[i]))
  end), 1e-5, "BCELoss")
  local logits = torch.randn(12)
  local L = logits:tolist()
  local pw = torch.full({ 12 }, 2.0)
  T.near(nn.BCEWithLogitsLoss({ pos_weight = pw })(logits, y):item(), mean_of(12, function(i)
    local s = sigmoid(L[i])
    return -(2 * Yv[i] * math.log(s) + (1 - Yv[i]) * math.log(1 - s))
  end), 1e-5, "BCEWithLogitsLoss(pos_weight)")
  T.eq(nn.BCEWithLogitsLoss({ pos_weight = pw }):state_dict():keys(), { "pos_weight" }, "pos_weight is a buffer")
end)
