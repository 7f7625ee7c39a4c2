-- conv3d, conv_transpose1d/3d, the 3-d pools, 3-d padding modules, multilabel_margin_loss,
-- feature_alpha_dropout, CrossMapLRN2d against loops over plain Lua lists (float64); gradients by
-- central differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local F = torch.nn.functional
local nn = torch.nn
local f64 = { dtype = torch.float64 }

local function zeros(dims, fill)
  local function make(d)
    local t = {}
    for i = 1, dims[d] do t[i] = d == #dims and (fill or 0) or make(d + 1) end
    return t
  end
  return make(1)
end

local function trip(v) return type(v) == "table" and v or { v, v, v } end

-- y[n][o][a][b][c] = bias[o] + sum over c in o's group and the kernel of x at (a*s - p + k*d, ...) * w
local function naive_conv3d(x, w, b, s, p, d, g)
  s, p, d = trip(s), trip(p), trip(d)
  local N, C, D, H, W = #x, #x[1], #x[1][1], #x[1][1][1], #x[1][1][1][1]
  local O, Cg, K = #w, #w[1], { #w[1][1], #w[1][1][1], #w[1][1][1][1] }
  local In = { D, H, W }
  local out = {}
  for i = 1, 3 do out[i] = (In[i] + 2 * p[i] - d[i] * (K[i] - 1) - 1) // s[i] + 1 end
  local y = zeros({ N, O, out[1], out[2], out[3] })
  local og = O // g
  for n = 1, N do for o = 1, O do
    local grp = (o - 1) // og
    for a = 1, out[1] do for bb = 1, out[2] do for cc = 1, out[3] do
      local acc = b and b[o] or 0
      for c = 1, Cg do for ka = 1, K[1] do for kb = 1, K[2] do for kc = 1, K[3] do
        local i = (a - 1) * s[1] - p[1] + (ka - 1) * d[1]
        local j = (bb - 1) * s[2] - p[2] + (kb - 1) * d[2]
        local l = (cc - 1) * s[3] - p[3] + (kc - 1) * d[3]
        if i >= 0 and i < D and j >= 0 and j < H and l >= 0 and l < W then
          acc = acc + x[n][grp * Cg + c][i + 1][j + 1][l + 1] * w[o][c][ka][kb][kc]
        end
      end end end end
      y[n][o][a][bb][cc] = acc
    end end end
  end end
  return y
end

-- y[n][o][i*s - p + k*d ...] += x[n][c][i..] * w[c][o'][k..], then the bias
local function naive_convt3d(x, w, b, s, p, op, d, g)
  s, p, op, d = trip(s), trip(p), trip(op), trip(d)
  local N, C, In = #x, #x[1], { #x[1][1], #x[1][1][1], #x[1][1][1][1] }
  local Og, K = #w[1], { #w[1][1], #w[1][1][1], #w[1][1][1][1] }
  local O, cg = Og * g, C // g
  local out = {}
  for i = 1, 3 do out[i] = (In[i] - 1) * s[i] - 2 * p[i] + d[i] * (K[i] - 1) + op[i] + 1 end
  local y = zeros({ N, O, out[1], out[2], out[3] })
  for n = 1, N do for c = 1, C do
    local grp = (c - 1) // cg
    for i1 = 1, In[1] do for i2 = 1, In[2] do for i3 = 1, In[3] do for o = 1, Og do
      for k1 = 1, K[1] do for k2 = 1, K[2] do for k3 = 1, K[3] do
        local r1 = (i1 - 1) * s[1] - p[1] + (k1 - 1) * d[1]
        local r2 = (i2 - 1) * s[2] - p[2] + (k2 - 1) * d[2]
        local r3 = (i3 - 1) * s[3] - p[3] + (k3 - 1) * d[3]
        if r1 >= 0 and r1 < out[1] and r2 >= 0 and r2 < out[2] and r3 >= 0 and r3 < out[3] then
          local t = y[n][grp * Og + o][r1 + 1][r2 + 1]
          t[r3 + 1] = t[r3 + 1] + x[n][c][i1][i2][i3] * w[c][o][k1][k2][k3]
        end
      end end end
    end end end end
  end end
  if b then
    for n = 1, N do for o = 1, O do for a = 1, out[1] do for bb = 1, out[2] do for cc = 1, out[3] do
      y[n][o][a][bb][cc] = y[n][o][a][bb][cc] + b[o]
    end end end end end
  end
  return y
end

local function pool_len(L, k, s, p, d, ceil)
  local o = (L + 2 * p - d * (k - 1) - 1 + (ceil and s - 1 or 0)) // s + 1
  if ceil and (o - 1) * s >= L + p then o = o - 1 end
  return o
end

-- window max (and its flat index) / mean over plain lists [N][C][D][H][W]
local function naive_pool3d(x, k, s, p, d, ceil, kind, include_pad, divisor)
  k, s, p, d = trip(k), trip(s), trip(p), trip(d)
  local N, C, In = #x, #x[1], { #x[1][1], #x[1][1][1], #x[1][1][1][1] }
  local out = {}
  for i = 1, 3 do out[i] = pool_len(In[i], k[i], s[i], p[i], d[i], ceil) end
  local y, idx = zeros({ N, C, out[1], out[2], out[3] }), zeros({ N, C, out[1], out[2], out[3] })
  for n = 1, N do for c = 1, C do for a = 1, out[1] do for b = 1, out[2] do for e = 1, out[3] do
    local best, at, sum, cnt = -math.huge, -1, 0, 0
    local st, en, pad_cnt = {}, {}, 1
    for i, o in ipairs({ a, b, e }) do
      st[i] = (o - 1) * s[i] - p[i]
      en[i] = math.min(st[i] + (k[i] - 1) * d[i] + 1, In[i] + p[i])
      pad_cnt = pad_cnt * (en[i] - st[i])
    end
    for i = st[1], st[1] + (k[1] - 1) * d[1], d[1] do for j = st[2], st[2] + (k[2] - 1) * d[2], d[2] do
      for l = st[3], st[3] + (k[3] - 1) * d[3], d[3] do
        if i >= 0 and i < In[1] and j >= 0 and j < In[2] and l >= 0 and l < In[3] then
          local v = x[n][c][i + 1][j + 1][l + 1]
          if v > best then best, at = v, (i * In[2] + j) * In[3] + l end
          sum, cnt = sum + v, cnt + 1
        end
      end
    end end
    if kind == "max" then
      y[n][c][a][b][e], idx[n][c][a][b][e] = best, at
    else
      y[n][c][a][b][e] = sum / (divisor or (include_pad and pad_cnt or cnt))
    end
  end end end end end
  return y, idx
end

local function naive_adaptive3d(x, out, kind)
  local N, C, In = #x, #x[1], { #x[1][1], #x[1][1][1], #x[1][1][1][1] }
  local y, idx = zeros({ N, C, out[1], out[2], out[3] }), zeros({ N, C, out[1], out[2], out[3] })
  local function range(L, O, o) return (o * L) // O, -((-(o + 1) * L) // O) end
  for n = 1, N do for c = 1, C do for a = 0, out[1] - 1 do for b = 0, out[2] - 1 do for e = 0, out[3] - 1 do
    local s1, e1 = range(In[1], out[1], a)
    local s2, e2 = range(In[2], out[2], b)
    local s3, e3 = range(In[3], out[3], e)
    local best, at, sum = -math.huge, -1, 0
    for i = s1, e1 - 1 do for j = s2, e2 - 1 do for l = s3, e3 - 1 do
      local v = x[n][c][i + 1][j + 1][l + 1]
      if v > best then best, at = v, (i * In[2] + j) * In[3] + l end
      sum = sum + v
    end end end
    y[n][c][a + 1][b + 1][e + 1] = kind == "max" and best or sum / ((e1 - s1) * (e2 - s2) * (e3 - s3))
    idx[n][c][a + 1][b + 1][e + 1] = at
  end end end end end
  return y, idx
end

T.test("conv3d against the 7-deep loop (stride, padding, dilation, groups, bias)", function()
  torch.manual_seed(31)
  local cases = { -- s, p, d, g, kernel
    { 1, 0, 1, 1, { 2, 2, 2 } }, { 2, 1, 1, 1, { 3, 3, 3 } }, { 1, { 1, 0, 2 }, { 2, 1, 1 }, 1, { 2, 3, 2 } },
    { { 2, 1, 3 }, 1, 1, 2, { 3, 2, 2 } }, { 1, 2, 2, 4, { 2, 2, 3 } },
  }
  for ci, c in ipairs(cases) do
    local s, p, d, g, k = c[1], c[2], c[3], c[4], c[5]
    local x = torch.randn(2, 4, 5, 6, 5, f64)
    local w, b = torch.randn(4, 4 // g, k[1], k[2], k[3], f64), torch.randn(4, f64)
    local y = F.conv3d(x, w, b, s, p, d, g)
    T.near(y:tolist(), naive_conv3d(x:tolist(), w:tolist(), b:tolist(), s, p, d, g), 1e-10, "conv3d case " .. ci)
    local y2 = F.conv3d(x, w, nil, { stride = s, padding = p, dilation = d, groups = g })
    T.near(y2:tolist(), naive_conv3d(x:tolist(), w:tolist(), nil, s, p, d, g), 1e-10, "conv3d keywords, no bias " .. ci)
  end
  -- unbatched input, float32
  local x, w = torch.randn(3, 4, 4, 4), torch.randn(2, 3, 3, 3, 3)
  T.eq(F.conv3d(x, w):size():totable(), { 2, 2, 2, 2 }, "unbatched shape")
  T.near(F.conv3d(x, w):tolist(), naive_conv3d({ x:tolist() }, w:tolist(), nil, 1, 0, 1, 1)[1], 1e-4, "unbatched values")
end)

T.test("conv3d padding 'same' / 'valid'; shape formula", function()
  torch.manual_seed(32)
  local x = torch.randn(1, 2, 5, 4, 6, f64)
  local w = torch.randn(3, 2, 2, 3, 4, f64)
  local y = F.conv3d(x, w, nil, 1, "same", { 1, 2, 1 })
  T.eq(y:size():totable(), { 1, 3, 5, 4, 6 }, "same keeps the size")
  -- total padding d*(k-1): 1 -> (0, 1); 4 -> (2, 2); 3 -> (1, 2): the odd one on the right
  local xp = F.pad(x, { 1, 2, 2, 2, 0, 1 })
  T.near(y:tolist(), naive_conv3d(xp:tolist(), w:tolist(), nil, 1, 0, { 1, 2, 1 }, 1), 1e-10, "same values")
  T.near(F.conv3d(x, w, nil, 1, "valid"):tolist(), naive_conv3d(x:tolist(), w:tolist(), nil, 1, 0, 1, 1), 1e-10, "valid")
  for _, c in ipairs({ { 7, 3, 2, 1, 1 }, { 9, 3, 1, 2, 3 }, { 6, 2, 3, 0, 2 } }) do
    local L, k, s, p, d = c[1], c[2], c[3], c[4], c[5]
    local out = (L + 2 * p - d * (k - 1) - 1) // s + 1
    local yy = F.conv3d(torch.randn(1, 1, L, L + 1, L), torch.randn(1, 1, k, k, k), nil, s, p, d)
    T.eq(yy:size():totable(), { 1, 1, out, (L + 1 + 2 * p - d * (k - 1) - 1) // s + 1, out }, "output shape " .. L)
  end
end)

T.test("conv3d gradients", function()
  torch.manual_seed(33)
  gradcheck("conv3d", function(x, w, b) return F.conv3d(x, w, b, { 2, 1, 1 }, { 1, 0, 1 }, { 1, 2, 1 }, 2) end,
    { torch.randn(1, 4, 4, 5, 3, f64), torch.randn(2, 2, 2, 2, 2, f64), torch.randn(2, f64) })
  gradcheck("conv3d same", function(x, w) return F.conv3d(x, w, nil, 1, "same") end,
    { torch.randn(1, 1, 3, 3, 3, f64), torch.randn(1, 1, 2, 2, 2, f64) })
end)

T.test("conv3d errors", function()
  local x = torch.randn(2, 3, 4, 4, 4)
  T.raises(function() F.conv3d(torch.randn(2, 3, 4), torch.randn(1, 3, 1, 1, 1)) end,
    "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: [2, 3, 4]", "wrong dims")
  T.raises(function() F.conv3d(x, torch.randn(4, 2, 3, 3, 3)) end,
    "Given groups=1, weight of size [4, 2, 3, 3, 3], expected input[2, 3, 4, 4, 4] to have 2 channels, but got 3 channels instead",
    "channel mismatch")
  T.raises(function() F.conv3d(x, torch.randn(4, 3, 5, 2, 2)) end,
    "Calculated padded input size per channel: (4 x 4 x 4). Kernel size: (5 x 2 x 2). Kernel size can't be greater than actual input size",
    "kernel too large")
  T.raises(function() F.conv3d(x, torch.randn(4, 3, 1, 1, 1), nil, 2, "same") end,
    "padding='same' is not supported for strided convolutions", "same with stride")
  T.raises(function() F.conv3d(x, torch.randn(4, 3, 1, 1)) end, "~weight must be a 5-D tensor", "weight dims")
  T.raises(function() nn.Conv3d(3, 4, 3, { groups = 2 }) end, "in_channels must be divisible by groups", "groups")
  T.raises(function() nn.Conv3d(3, 4, 3, { padding_mode = "bad" }) end,
    "padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got padding_mode='bad'", "padding_mode")
end)

T.test("nn.Conv3d: parameters, repr, padding modes", function()
  torch.manual_seed(34)
  local m = nn.Conv3d(2, 4, 3)
  T.eq(tostring(m), "Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1))", "repr")
  T.eq(m.weight:size():totable(), { 4, 2, 3, 3, 3 }, "weight shape")
  T.eq(m.bias:size():totable(), { 4 }, "bias shape")
  local bound = 1 / math.sqrt(2 * 27)
  T.check(m.weight:abs():max():item() <= bound + 1e-7, "kaiming-uniform bound")
  T.eq(tostring(nn.Conv3d(4, 6, { 1, 2, 3 }, { 2, 1, 1 }, 1, 2, 2, false)),
    "Conv3d(4, 6, kernel_size=(1, 2, 3), stride=(2, 1, 1), padding=(1, 1, 1), dilation=(2, 2, 2), groups=2, bias=False)", "repr 2")
  T.eq(tostring(nn.Conv3d(1, 1, 3, { padding = "same", padding_mode = "reflect" })),
    "Conv3d(1, 1, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=same, padding_mode=reflect)", "repr same")
  local x = torch.randn(1, 2, 4, 5, 3, f64)
  local mm = nn.Conv3d(2, 4, 3, { padding = 1, dtype = torch.float64 })
  T.near(mm(x):tolist(), naive_conv3d(x:tolist(), mm.weight:tolist(), mm.bias:tolist(), 1, 1, 1, 1), 1e-10, "forward")
  for _, mode in ipairs({ "reflect", "replicate", "circular" }) do
    local mr = nn.Conv3d(2, 3, { 3, 1, 3 }, { padding = { 1, 0, 2 }, padding_mode = mode, dtype = torch.float64 })
    local want = naive_conv3d(F.pad(x, { 2, 2, 0, 0, 1, 1 }, mode):tolist(), mr.weight:tolist(), mr.bias:tolist(), 1, 0, 1, 1)
    T.near(mr(x):tolist(), want, 1e-10, "padding_mode " .. mode)
  end
  local y = mm(x)
  y:sum():backward()
  T.check(mm.weight.grad ~= nil and mm.bias.grad ~= nil, "parameters get gradients")
  T.near(mm.bias.grad:tolist(), { 60, 60, 60, 60 }, 1e-12, "bias gradient = output positions")
end)

T.test("conv_transpose1d / ConvTranspose1d", function()
  torch.manual_seed(35)
  for _, c in ipairs({ { 1, 0, 0, 1, 1 }, { 2, 1, 1, 1, 2 }, { 3, 2, 1, 2, 1 } }) do
    local s, p, op, d, g = c[1], c[2], c[3], c[4], c[5]
    local x, w, b = torch.randn(2, 4, 5, f64), torch.randn(4, 6 // g, 3, f64), torch.randn(6, f64)
    local y = F.conv_transpose1d(x, w, b, s, p, op, g, d)
    -- a 1-d case is the 3-d loop with unit depth and height
    local x5 = x:view(2, 4, 1, 1, 5):tolist()
    local w5 = w:view(4, 6 // g, 1, 1, 3):tolist()
    local want = naive_convt3d(x5, w5, b:tolist(), { 1, 1, s }, { 0, 0, p }, { 0, 0, op }, { 1, 1, d }, g)
    T.near(y:view(2, 6, 1, 1, -1):tolist(), want, 1e-10, "conv_transpose1d " .. s .. p .. op .. d .. g)
  end
  local m = nn.ConvTranspose1d(4, 6, 3, 2, 1, 1, 2, false, 1)
  T.eq(tostring(m), "ConvTranspose1d(4, 6, kernel_size=(3,), stride=(2,), padding=(1,), output_padding=(1,), groups=2, bias=False)",
    "repr")
  T.eq(m.weight:size():totable(), { 4, 3, 3 }, "weight shape")
  T.eq(m(torch.randn(1, 4, 5)):size():totable(), { 1, 6, 10 }, "output length")
  T.eq(m(torch.randn(4, 5), { 9 }):size():totable(), { 6, 9 }, "output_size, unbatched")
  gradcheck("conv_transpose1d", function(x, w, b) return F.conv_transpose1d(x, w, b, 2, 1, 1) end,
    { torch.randn(1, 2, 3, f64), torch.randn(2, 2, 3, f64), torch.randn(2, f64) })
end)

T.test("conv_transpose3d against the loop; ConvTranspose3d; gradients", function()
  torch.manual_seed(36)
  local cases = { -- s, p, op, d, g
    { 1, 0, 0, 1, 1 }, { 2, 1, 1, 1, 1 }, { { 2, 1, 3 }, { 0, 1, 1 }, { 1, 0, 2 }, 1, 2 }, { 1, 1, 0, { 2, 1, 2 }, 1 },
    { 2, 0, 1, 2, 2 },
  }
  for ci, c in ipairs(cases) do
    local s, p, op, d, g = c[1], c[2], c[3], c[4], c[5]
    local x, w, b = torch.randn(2, 4, 3, 2, 3, f64), torch.randn(4, 6 // g, 2, 3, 2, f64), torch.randn(6, f64)
    local y = F.conv_transpose3d(x, w, b, s, p, op, g, d)
    T.near(y:tolist(), naive_convt3d(x:tolist(), w:tolist(), b:tolist(), s, p, op, d, g), 1e-10, "conv_transpose3d case " .. ci)
  end
  local m = nn.ConvTranspose3d(2, 4, 3, 2, 1, 1, { bias = true })
  T.eq(tostring(m), "ConvTranspose3d(2, 4, kernel_size=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1), output_padding=(1, 1, 1))",
    "repr")
  T.eq(m.weight:size():totable(), { 2, 4, 3, 3, 3 }, "weight shape")
  T.eq(m(torch.randn(1, 2, 3, 4, 2)):size():totable(), { 1, 4, 6, 8, 4 }, "output shape (in-1)*s - 2p + d(k-1) + op + 1")
  T.eq(m(torch.randn(2, 3, 4, 2), { 5, 7, 4 }):size():totable(), { 4, 5, 7, 4 }, "output_size, unbatched")
  T.raises(function() m(torch.randn(2, 3, 4, 2), { 9, 7, 4 }) end, "~requested an output size of 9", "bad output_size")
  T.raises(function() F.conv_transpose3d(torch.randn(1, 3, 2, 2, 2), torch.randn(2, 1, 1, 1, 1)) end,
    "Given transposed=1, weight of size [2, 1, 1, 1, 1], expected input[1, 3, 2, 2, 2] to have 2 channels, but got 3 channels instead",
    "channel mismatch")
  T.raises(function() F.conv_transpose3d(torch.randn(1, 2, 2, 2, 2), torch.randn(2, 1, 1, 1, 1), nil, 1, 0, 1) end,
    "output padding must be smaller than either stride or dilation", "output padding")
  T.raises(function() nn.ConvTranspose3d(2, 2, 3, { padding_mode = "reflect" }) end,
    "Only \"zeros\" padding mode is supported for ConvTranspose3d", "padding mode")
  gradcheck("conv_transpose3d", function(x, w, b) return F.conv_transpose3d(x, w, b, { 2, 1, 2 }, { 1, 0, 0 }, { 1, 0, 0 }, 2) end,
    { torch.randn(1, 2, 2, 2, 2, f64), torch.randn(2, 1, 2, 2, 2, f64), torch.randn(2, f64) })
end)

T.test("max_pool3d against window max (indices, padding, dilation, ceil_mode); MaxPool3d", function()
  torch.manual_seed(37)
  local x = torch.randn(2, 3, 5, 6, 7, f64)
  local xl = x:tolist()
  for ci, c in ipairs({ { 2, nil, 0, 1, false }, { 3, 2, 1, 1, false }, { { 2, 3, 2 }, { 1, 2, 3 }, { 1, 1, 0 }, { 2, 1, 2 }, false },
    { 2, 2, 0, 1, true }, { 3, 2, 1, 1, true } }) do
    local k, s, p, d, ceil = c[1], c[2], c[3], c[4], c[5]
    local v, i = F.max_pool3d(x, k, s, p, d, ceil, true)
    local wv, wi = naive_pool3d(xl, k, s or k, p, d, ceil, "max")
    T.near(v:tolist(), wv, 1e-12, "max_pool3d values " .. ci)
    T.eq(i:tolist(), wi, "max_pool3d indices " .. ci)
    T.near(F.max_pool3d(x, k, s, { padding = p, dilation = d, ceil_mode = ceil }):tolist(), wv, 1e-12, "no indices " .. ci)
  end
  local m = nn.MaxPool3d(3, 2, 1, { return_indices = true })
  T.eq(tostring(m), "MaxPool3d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)", "repr")
  T.eq(tostring(nn.MaxPool3d({ 2, 2, 1 })), "MaxPool3d(kernel_size=(2, 2, 1), stride=(2, 2, 1), padding=0, dilation=1, ceil_mode=False)",
    "repr stride defaults to kernel")
  local v, i = m(x[0])
  local wv, wi = naive_pool3d({ xl[1] }, 3, 2, 1, 1, false, "max")
  T.near(v:tolist(), wv[1], 1e-12, "unbatched values")
  T.eq(i:tolist(), wi[1], "unbatched indices")
  gradcheck("max_pool3d", function(t) return F.max_pool3d(t, 2, { 1, 2, 1 }, 1) end, { torch.randn(1, 2, 3, 3, 4, f64) })
  T.raises(function() F.max_pool3d(torch.randn(2, 3, 4), 2) end, "~4D or 5D", "wrong dims")
  T.raises(function() F.max_pool3d(x, 2, 2, 2) end,
    "pad should be smaller than or equal to half of kernel size, but got kT=2 kW=2 kH=2 padT=2 padW=2 padH=2", "pad too large")
  T.raises(function() F.max_pool3d(x, 6) end,
    "Given input size: (3x5x6x7). Calculated output size: (3x0x1x1). Output size is too small", "kernel larger than input")
end)

T.test("avg_pool3d against window mean (count_include_pad, ceil_mode, divisor_override); AvgPool3d", function()
  torch.manual_seed(38)
  local x = torch.randn(2, 2, 5, 6, 7, f64)
  local xl = x:tolist()
  for ci, c in ipairs({ { 2, nil, 0, false, true }, { 3, 2, 1, false, true }, { 3, 2, 1, false, false }, { 3, 2, 1, true, true },
    { { 2, 3, 3 }, { 2, 2, 3 }, { 1, 1, 1 }, true, false } }) do
    local k, s, p, ceil, inc = c[1], c[2], c[3], c[4], c[5]
    local y = F.avg_pool3d(x, k, s, p, ceil, inc)
    T.near(y:tolist(), (naive_pool3d(xl, k, s or k, p, 1, ceil, "avg", inc)), 1e-12, "avg_pool3d " .. ci)
  end
  T.near(F.avg_pool3d(x, 3, 2, 1, { divisor_override = 5 }):tolist(), (naive_pool3d(xl, 3, 2, 1, 1, false, "avg", true, 5)), 1e-12,
    "divisor_override")
  local m = nn.AvgPool3d(3, 2, 1, { count_include_pad = false })
  T.eq(tostring(m), "AvgPool3d(kernel_size=3, stride=2, padding=1)", "repr")
  T.near(m(x[0]):tolist(), (naive_pool3d({ xl[1] }, 3, 2, 1, 1, false, "avg", false))[1], 1e-12, "module, unbatched")
  gradcheck("avg_pool3d", function(t) return F.avg_pool3d(t, 2, 1, 1, true, false) end, { torch.randn(1, 1, 3, 2, 3, f64) })
  T.raises(function() F.avg_pool3d(torch.randn(3, 4), 2) end, "~4D or 5D", "wrong dims")
end)

T.test("adaptive_avg_pool3d / adaptive_max_pool3d against the windows", function()
  torch.manual_seed(39)
  local x = torch.randn(2, 2, 5, 7, 6, f64)
  local xl = x:tolist()
  for _, out in ipairs({ { 1, 1, 1 }, { 2, 3, 4 }, { 3, 7, 5 }, { 5, 2, 6 } }) do
    T.near(F.adaptive_avg_pool3d(x, out):tolist(), (naive_adaptive3d(xl, out, "avg")), 1e-12, "adaptive avg " .. table.concat(out))
    local v, i = F.adaptive_max_pool3d(x, out, true)
    local wv, wi = naive_adaptive3d(xl, out, "max")
    T.near(v:tolist(), wv, 1e-12, "adaptive max " .. table.concat(out))
    T.eq(i:tolist(), wi, "adaptive max indices " .. table.concat(out))
  end
  T.near(F.adaptive_avg_pool3d(x, 2):tolist(), (naive_adaptive3d(xl, { 2, 2, 2 }, "avg")), 1e-12, "int output_size")
  local m = nn.AdaptiveAvgPool3d({ 2, 3, 2 })
  T.eq(tostring(m), "AdaptiveAvgPool3d(output_size=(2, 3, 2))", "repr")
  T.near(m(x[0]):tolist(), (naive_adaptive3d({ xl[1] }, { 2, 3, 2 }, "avg"))[1], 1e-12, "module, unbatched")
  local mm = nn.AdaptiveMaxPool3d(3, true)
  T.eq(tostring(mm), "AdaptiveMaxPool3d(output_size=3)", "max repr")
  local v, i = mm(x)
  T.eq(i:tolist(), select(2, naive_adaptive3d(xl, { 3, 3, 3 }, "max")), "module indices")
  T.eq(v:size():totable(), { 2, 2, 3, 3, 3 }, "module shape")
  gradcheck("adaptive_avg_pool3d", function(t) return F.adaptive_avg_pool3d(t, { 2, 2, 3 }) end, { torch.randn(1, 1, 3, 3, 4, f64) })
  gradcheck("adaptive_max_pool3d", function(t) return F.adaptive_max_pool3d(t, { 2, 2, 1 }) end, { torch.randn(1, 1, 3, 3, 2, f64) })
end)

T.test("3-d padding modules", function()
  local x = torch.arange(24, f64):reshape(1, 2, 3, 4)
  T.eq(tostring(nn.ZeroPad3d(1)), "ZeroPad3d((1, 1, 1, 1, 1, 1))", "zero repr")
  T.eq(tostring(nn.ConstantPad3d({ 1, 0, 2, 0, 0, 1 }, 3.5)), "ConstantPad3d(padding=(1, 0, 2, 0, 0, 1), value=3.5)", "constant repr")
  T.eq(tostring(nn.ReflectionPad3d(1)), "ReflectionPad3d((1, 1, 1, 1, 1, 1))", "reflection repr")
  T.eq(nn.ZeroPad3d({ 1, 0, 2, 0, 0, 1 })(x):tolist(), F.pad(x, { 1, 0, 2, 0, 0, 1 }):tolist(), "zero pad")
  local y = nn.ConstantPad3d(1, -1)(x)
  T.eq(y:size():totable(), { 1, 4, 5, 6 }, "constant shape")
  T.eq(y[0][0][0][0]:item(), -1.0, "constant value")
  T.eq(y[0][1][1][1]:item(), 0.0, "interior")
  for _, c in ipairs({ { "ReflectionPad3d", "reflect" }, { "ReplicationPad3d", "replicate" }, { "CircularPad3d", "circular" } }) do
    T.eq(nn[c[1]]({ 1, 1, 1, 0, 1, 1 })(x):tolist(), F.pad(x, { 1, 1, 1, 0, 1, 1 }, c[2]):tolist(), c[1])
  end
  -- replicate by hand on one axis: the edge value repeated
  T.eq(nn.ReplicationPad3d({ 0, 0, 0, 0, 1, 0 })(x)[0][0]:tolist(), x[0][0]:tolist(), "replicate depth edge")
end)

T.test("multilabel_margin_loss against the loop; MultiLabelMarginLoss", function()
  torch.manual_seed(40)
  local x = torch.randn(3, 4, f64)
  local t = torch.tensor({ { 3, 0, -1, 1 }, { 1, 2, 3, 0 }, { -1, 1, 1, 1 } }, { dtype = torch.int64 })
  local function naive(xl, tl)
    local out = {}
    for n = 1, #xl do
      local C, tg, is = #xl[n], {}, {}
      for j = 1, C do
        if tl[n][j] < 0 then break end
        tg[#tg + 1] = tl[n][j] + 1; is[tl[n][j] + 1] = true
      end
      local s = 0
      for _, j in ipairs(tg) do for i = 1, C do
        if not is[i] then s = s + math.max(0, 1 - (xl[n][j] - xl[n][i])) end
      end end
      out[n] = s / C
    end
    return out
  end
  local want = naive(x:tolist(), t:tolist())
  T.near(F.multilabel_margin_loss(x, t, { reduction = "none" }):tolist(), want, 1e-12, "none")
  T.near(F.multilabel_margin_loss(x, t):item(), (want[1] + want[2] + want[3]) / 3, 1e-12, "mean")
  T.near(nn.MultiLabelMarginLoss({ reduction = "sum" })(x, t):item(), want[1] + want[2] + want[3], 1e-12, "module sum")
  T.near(F.multilabel_margin_loss(x[0], t[0]):item(), want[1], 1e-12, "1-D input")
  T.eq(tostring(nn.MultiLabelMarginLoss()), "MultiLabelMarginLoss()", "repr")
  T.raises(function() F.multilabel_margin_loss(x, t:narrow(1, 0, 3)) end,
    "inconsistent target size: [3, 3] for input of size: [3, 4]", "target size")
  gradcheck("multilabel_margin_loss", function(a) return F.multilabel_margin_loss(a, t, { reduction = "none" }) end,
    { torch.randn(3, 4, f64) * 0.3 })
end)

T.test("NLLLoss2d, FeatureAlphaDropout, CrossMapLRN2d", function()
  torch.manual_seed(41)
  local x = F.log_softmax(torch.randn(2, 3, 4, 5, f64), 1)
  local t = torch.randint(0, 3, { 2, 4, 5 })
  T.near(nn.NLLLoss2d()(x, t):item(), nn.NLLLoss()(x, t):item(), 1e-12, "NLLLoss2d = NLLLoss")
  T.eq(tostring(nn.NLLLoss2d({ ignore_index = 1 })), "NLLLoss2d()", "NLLLoss2d repr")
  T.check(nn.isinstance(nn.NLLLoss2d(), nn.NLLLoss), "NLLLoss2d is an NLLLoss")

  local m = nn.FeatureAlphaDropout(0.3)
  T.eq(tostring(m), "FeatureAlphaDropout(p=0.3, inplace=False)", "repr")
  local z = torch.randn(8, 16, 3, 3, f64)
  m:eval()
  T.eq(m(z):tolist(), z:tolist(), "identity in eval")
  m:train()
  local y = m(z)
  local alpha, p = 1.7580993408473766, 0.3
  local a = 1 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
  local kept = y:sub(z * a + alpha * a * p):abs():amax({ 2, 3 }):lt(1e-9)
  local dropped = y:sub(-alpha * a + alpha * a * p):abs():amax({ 2, 3 }):lt(1e-9)
  T.check(kept:logical_or(dropped):all():item(), "each (sample, channel) map kept (affine) or dropped (constant) whole")
  local frac = dropped:to(torch.float64):mean():item()
  T.check(frac > 0.15 and frac < 0.45, "about p of the maps dropped: " .. frac)
  T.raises(function() F.feature_alpha_dropout(z, 1.5, true) end, "dropout probability has to be between 0 and 1, but got 1.5", "bad p")
  T.eq(F.feature_alpha_dropout(z, 1, true):abs():sum():item(), 0.0, "p=1 zeros")
  -- the selu self-normalising property: mean and variance roughly kept
  local big = torch.randn(256, 64, 4, f64)
  local yb = F.feature_alpha_dropout(big, 0.2, true)
  T.check(math.abs(yb:mean():item()) < 0.1 and math.abs(yb:var():item() - 1) < 0.15, "mean 0 / var 1 kept")

  local lrn = nn.CrossMapLRN2d(5, 1e-3, 0.75, 2)
  T.eq(tostring(lrn), "CrossMapLRN2d(5, alpha=0.001, beta=0.75, k=2)", "CrossMapLRN2d repr")
  local xi = torch.randn(2, 7, 3, 3, f64)
  T.near(lrn(xi):tolist(), nn.LocalResponseNorm(5, 1e-3, 0.75, 2)(xi):tolist(), 1e-12, "= LocalResponseNorm (odd size)")
  -- even size: window c-(size-1)//2 .. c+(size-1)//2, by hand
  local l4 = nn.CrossMapLRN2d(4, 0.5, 0.75, 1)
  local xl = xi:tolist()
  local want = zeros({ 2, 7, 3, 3 })
  for n = 1, 2 do for c = 1, 7 do for i = 1, 3 do for j = 1, 3 do
    local s = 0
    for cc = math.max(1, c - 1), math.min(7, c + 1) do s = s + xl[n][cc][i][j] ^ 2 end
    want[n][c][i][j] = xl[n][c][i][j] * (1 + 0.5 / 4 * s) ^ -0.75
  end end end end
  T.near(l4(xi):tolist(), want, 1e-12, "even size")
  T.raises(function() lrn(torch.randn(2, 3, 4)) end, "CrossMapLRN2d: Expected input to be 4D, got 3D instead.", "3-D input")
  gradcheck("CrossMapLRN2d", function(q) return lrn(q) end, { torch.randn(1, 4, 2, 2, f64) })
end)
