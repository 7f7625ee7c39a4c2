-- conv1d, conv_transpose2d and the 1-d pools against loops over plain Lua lists (float64);
-- gradients by central differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }

local function zeros(...)
  local dims = { ... }
  local function make(d)
    local t = {}
    for i = 1, dims[d] do t[i] = d == #dims and 0 or make(d + 1) end
    return t
  end
  return make(1)
end

-- y[n][o][l] = b[o] + sum over c in o's group, k of x[n][c][l*s - p + k*d] * w[o][c'][k]
local function naive_conv1d(x, w, b, s, p, d, g)
  local N, C, L, O, K = #x, #x[1], #x[1][1], #w, #w[1][1]
  local Lo = (L + 2 * p - d * (K - 1) - 1) // s + 1
  local y = zeros(N, O, Lo)
  local cg, og = C // g, O // g
  for n = 1, N do for o = 1, O do for l = 1, Lo do
    local acc = b and b[o] or 0
    local grp = (o - 1) // og
    for c = 1, cg do for k = 1, K do
      local pos = (l - 1) * s - p + (k - 1) * d
      if pos >= 0 and pos < L then acc = acc + x[n][grp * cg + c][pos + 1] * w[o][c][k] end
    end end
    y[n][o][l] = acc
  end end end
  return y
end

-- y[n][o][i*s - p + ki*d][j*s - p + kj*d] += x[n][c][i][j] * w[c][o'][ki][kj]
local function naive_convt(x, w, b, s, p, op, d, g, Ho, Wo)
  local N, C, H, W = #x, #x[1], #x[1][1], #x[1][1][1]
  local Og, KH, KW = #w[1], #w[1][1], #w[1][1][1]
  local O, cg = Og * g, C // g
  local y = zeros(N, O, Ho, Wo)
  for n = 1, N do for c = 1, C do
    local grp = (c - 1) // cg
    for i = 1, H do for j = 1, W do for o = 1, Og do for ki = 1, KH do for kj = 1, KW do
      local r = (i - 1) * s[1] - p[1] + (ki - 1) * d[1]
      local q = (j - 1) * s[2] - p[2] + (kj - 1) * d[2]
      if r >= 0 and r < Ho and q >= 0 and q < Wo then
        local oo = grp * Og + o
        y[n][oo][r + 1][q + 1] = y[n][oo][r + 1][q + 1] + x[n][c][i][j] * w[c][o][ki][kj]
      end
    end end end end end
  end end
  if b then for n = 1, N do for o = 1, O do for r = 1, Ho do for q = 1, Wo do y[n][o][r][q] = y[n][o][r][q] + b[o] end end end end end
  return y
end

T.test("conv1d against the loop; Conv1d", function()
  torch.manual_seed(61)
  for _, c in ipairs({ { 1, 0, 1, 1 }, { 2, 1, 1, 1 }, { 1, 2, 2, 1 }, { 2, 1, 1, 2 } }) do
    local s, p, d, g = c[1], c[2], c[3], c[4]
    local x, w, b = torch.randn(2, 4, 9, f64), torch.randn(6, 4 // g, 3, f64), torch.randn(6, f64)
    local got = F.conv1d(x, w, b, s, p, d, g)
    T.near(got:tolist(), naive_conv1d(x:tolist(), w:tolist(), b:tolist(), s, p, d, g), 1e-12,
      string.format("stride %d padding %d dilation %d groups %d", s, p, d, g))
  end
  gradcheck("conv1d", function(x, w, b) return F.conv1d(x, w, b, 2, 1) end, { torch.randn(2, 3, 7, f64), torch.randn(4, 3, 3, f64), torch.randn(4, f64) })
  local m = nn.Conv1d(3, 5, 3, { padding = "same", bias = false })
  T.eq(m(torch.randn(2, 3, 11)):size(), torch.Size({ 2, 5, 11 }), "padding='same'")
  T.eq(tostring(nn.Conv1d(3, 5, 2, { stride = 2 })), "Conv1d(3, 5, kernel_size=(2,), stride=(2,))", "repr")
  local bound = 1 / math.sqrt(3 * 3)
  T.check(m.weight:abs():max():item() <= bound, "PyTorch's initialisation bound")
end)

T.test("conv_transpose2d against the loop; ConvTranspose2d", function()
  torch.manual_seed(62)
  for _, c in ipairs({ { { 1, 1 }, { 0, 0 }, { 0, 0 }, { 1, 1 }, 1 }, { { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    { { 2, 1 }, { 0, 1 }, { 0, 0 }, { 1, 2 }, 2 }, { { 3, 2 }, { 1, 0 }, { 2, 1 }, { 1, 1 }, 1 } }) do
    local s, p, op, d, g = c[1], c[2], c[3], c[4], c[5]
    local x, w, b = torch.randn(2, 4, 3, 4, f64), torch.randn(4, 6 // g, 3, 2, f64), torch.randn(6, f64)
    local y = F.conv_transpose2d(x, w, b, s, p, op, g, d)
    local Ho = (3 - 1) * s[1] - 2 * p[1] + d[1] * 2 + op[1] + 1
    local Wo = (4 - 1) * s[2] - 2 * p[2] + d[2] * 1 + op[2] + 1
    T.eq(y:size(), torch.Size({ 2, 6, Ho, Wo }), "output size")
    T.near(y:tolist(), naive_convt(x:tolist(), w:tolist(), b:tolist(), s, p, op, d, g, Ho, Wo), 1e-12,
      string.format("stride %s padding %s output_padding %s dilation %s groups %d", table.concat(s, ","), table.concat(p, ","),
        table.concat(op, ","), table.concat(d, ","), g))
  end
  gradcheck("conv_transpose2d", function(x, w, b) return F.conv_transpose2d(x, w, b, 2, 1, 1) end,
    { torch.randn(1, 3, 3, 3, f64), torch.randn(3, 2, 3, 3, f64), torch.randn(2, f64) })
  local m = nn.ConvTranspose2d(8, 3, 4, { stride = 2, padding = 1 })
  T.eq(m(torch.randn(2, 8, 16, 16)):size(), torch.Size({ 2, 3, 32, 32 }), "DCGAN's upsampling block doubles the size")
  T.eq(m(torch.randn(8, 5, 5), { 11, 11 }):size(), torch.Size({ 3, 11, 11 }), "output_size, unbatched")
  T.eq(tostring(m), "ConvTranspose2d(8, 3, kernel_size=(4, 4), stride=(2, 2), padding=(1, 1))", "repr")
  T.eq(m.weight:size(), torch.Size({ 8, 3, 4, 4 }), "weight [in, out/groups, kh, kw]")
  T.raises(function() F.conv_transpose2d(torch.randn(1, 2, 3, 3), torch.randn(3, 2, 3, 3)) end, "~expected input")
  T.raises(function() F.conv_transpose2d(torch.randn(1, 3, 3, 3), torch.randn(3, 2, 3, 3), nil, 1, 0, 1) end,
    "output padding must be smaller than either stride or dilation")
  T.raises(function() m(torch.randn(1, 8, 5, 5), { 15, 15 }) end, "~valid sizes lie between 10 and 11")
end)

T.test("1-d pools against loops", function()
  local xs = { { { 3.0, -1.0, 4.0, 1.0, -5.0, 9.0, 2.0 } } }
  local x = torch.tensor(xs, f64)
  T.eq(F.max_pool1d(x, 2):tolist(), { { { 3.0, 4.0, 9.0 } } }, "max_pool1d")
  T.eq(nn.MaxPool1d(3, 2, 1)(x):tolist(), { { { 3.0, 4.0, 9.0, 9.0 } } }, "MaxPool1d with padding")
  local v, i = F.max_pool1d(x, 2, { return_indices = true })
  T.eq(i:tolist(), { { { 0, 2, 5 } } }, "indices")
  T.near(F.avg_pool1d(x, 3, 2):tolist(), { { { 2.0, 0.0, 2.0 } } }, 1e-15, "avg_pool1d")
  T.near(nn.AdaptiveAvgPool1d(2)(x):tolist(), { { { (3 - 1 + 4 + 1) / 4, (1 - 5 + 9 + 2) / 4 } } }, 1e-15, "AdaptiveAvgPool1d")
  T.eq(tostring(nn.AvgPool1d(3, 2)), "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(0,))", "repr")
  gradcheck("avg_pool1d", function(t) return F.avg_pool1d(t, 3, 1, 1) end, { torch.randn(2, 2, 6, f64) })
end)
