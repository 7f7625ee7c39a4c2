-- unfold / fold, Tensor.unfold, linalg norms, LocalResponseNorm, channel_shuffle,
-- adaptive_max_pool1d and alpha_dropout against definitions worked out here.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }

T.test("unfold and fold", function()
  torch.manual_seed(121)
  local x = torch.randn(2, 3, 6, 7, f64)
  for _, c in ipairs({ { { 2, 3 }, 1, 0, 1 }, { { 3, 3 }, 1, 1, 2 }, { 2, 2, 1, { 1, 2 } } }) do
    local k, d, p, s = c[1], c[2], c[3], c[4]
    local u = F.unfold(x, k, d, p, s)
    local kk = type(k) == "table" and k or { k, k }
    local w = torch.randn(4, 3, kk[1], kk[2], f64)
    local conv = F.conv2d(x, w, nil, s, p, d)
    T.near(w:view(4, -1):matmul(u):view(conv:size()):tolist(), conv:tolist(), 1e-12, "conv2d = weight @ unfold")
    local y = torch.randn(u:size(), f64)
    local lhs = (u * y):sum():item()
    local rhs = (x * F.fold(y, { 6, 7 }, k, d, p, s)):sum():item()
    T.near(lhs, rhs, 1e-10, "fold is unfold's adjoint")
  end
  T.eq(nn.Unfold({ 2, 2 }, { stride = 2 })(torch.ones(1, 1, 4, 4)):size(), torch.Size({ 1, 4, 4 }), "nn.Unfold")
  T.eq(nn.Fold({ 4, 4 }, { 2, 2 }, { stride = 2 })(torch.ones(1, 4, 4)):sum():item(), 16.0, "nn.Fold")
  gradcheck("unfold", function(t) return F.unfold(t, 2, 1, 1, 1) end, { torch.randn(1, 2, 3, 3, f64) })
  T.raises(function() F.fold(torch.ones(1, 5, 4), { 4, 4 }, { 2, 2 }) end, "~divisible by the product of kernel_size")
  local t = torch.arange(10)
  T.eq(t:unfold(0, 4, 3):tolist(), { { 0, 1, 2, 3 }, { 3, 4, 5, 6 }, { 6, 7, 8, 9 } }, "Tensor.unfold")
  T.eq(torch.arange(12):view(3, 4):unfold(1, 2, 2):size(), torch.Size({ 3, 2, 2 }), "Tensor.unfold along dim 1")
end)

T.test("linalg norms", function()
  local a = { { 1.0, -2.0, 0.5 }, { 3.0, 4.0, -1.0 } }
  local A = torch.tensor(a, f64)
  local fro = 0
  for _, r in ipairs(a) do for _, v in ipairs(r) do fro = fro + v * v end end
  T.near(torch.linalg.norm(A):item(), math.sqrt(fro), 1e-15, "norm (Frobenius of the flattened)")
  T.near(torch.linalg.matrix_norm(A):item(), math.sqrt(fro), 1e-15, "matrix_norm fro")
  T.near(torch.linalg.matrix_norm(A, 1):item(), 6.0, 0, "max column sum")
  T.near(torch.linalg.matrix_norm(A, -1):item(), 1.5, 0, "min column sum")
  T.near(torch.linalg.matrix_norm(A, math.huge):item(), 8.0, 0, "max row sum")
  T.near(torch.linalg.vector_norm(A, math.huge):item(), 4.0, 0, "vector inf")
  T.near(torch.linalg.vector_norm(A, 3, 1):tolist(), { (1 + 8 + 0.125) ^ (1 / 3), (27 + 64 + 1) ^ (1 / 3) }, 1e-12, "p=3 along dim 1")
  T.near(torch.linalg.vector_norm(A, 0):item(), 6.0, 0, "ord 0 counts")
end)

T.test("LRN, channel_shuffle, adaptive_max_pool1d, alpha_dropout", function()
  torch.manual_seed(122)
  local x = torch.randn(2, 5, 3, f64)
  local size, alpha, beta, k = 3, 0.01, 0.75, 2.0
  local y = nn.LocalResponseNorm(size, alpha, beta, k)(x)
  local xs = x:tolist()
  local ok = true
  for n = 1, 2 do for c = 1, 5 do for l = 1, 3 do
    local s = 0
    for j = c - 1, c + 1 do if j >= 1 and j <= 5 then s = s + xs[n][j][l] ^ 2 end end
    ok = ok and math.abs(y[n - 1][c - 1][l - 1]:item() - xs[n][c][l] / (k + alpha / size * s) ^ beta) < 1e-12
  end end end
  T.check(ok, "LocalResponseNorm over neighbouring channels")
  T.eq(F.channel_shuffle(torch.arange(6):view(1, 6, 1), 3):view(-1):tolist(), { 0, 2, 4, 1, 3, 5 }, "channel_shuffle")
  T.eq(tostring(nn.ChannelShuffle(2)), "ChannelShuffle(groups=2)", "repr")
  local v, i = F.adaptive_max_pool1d(torch.tensor({ { { 1.0, 5.0, 2.0, 8.0, 3.0 } } }), 2, true)
  T.eq(v:tolist(), { { { 5.0, 8.0 } } }, "adaptive_max_pool1d values")
  T.eq(i:tolist(), { { { 1, 3 } } }, "and indices")
  local d = nn.AlphaDropout(0.3)
  local z = torch.randn(200000, f64)
  local out = d(z)
  T.near(out:mean():item(), 0.0, 0.01, "alpha dropout keeps the mean")
  T.near(out:std():item(), 1.0, 0.01, "and the standard deviation")
  d:eval()
  T.near(d(z):tolist(), z:tolist(), 0, "identity in eval")
end)
