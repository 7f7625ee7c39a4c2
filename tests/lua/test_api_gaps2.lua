-- torch_api_gaps2.lua, torch_ops_native.lua and torch_lowrank.lua against hand-worked values,
-- plain Lua loops and closed forms; gradients against float64 finite differences. The tensor
-- checks run again on "cuda" when there is a GPU.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)

local f64 = torch.float64
local function sizes(x) return x:size():totable() end

local function run(dev)
  local opt = { device = dev }
  local d64 = { dtype = f64, device = dev }
  local tag = " [" .. dev .. "]"

  T.test("adjoint" .. tag, function()
    local m = torch.arange(6., opt):view(2, 3)
    T.eq(torch.adjoint(m):tolist(), { { 0.0, 3.0 }, { 1.0, 4.0 }, { 2.0, 5.0 } }, "torch.adjoint")
    local c = torch.complex(torch.tensor({ { 1., 2. } }, opt), torch.tensor({ { 3., -4. } }, opt))
    T.eq(torch.adjoint(c).imag:tolist(), { { -3.0 }, { 4.0 } }, "adjoint conjugates")
    T.eq(sizes(torch.zeros(4, 2, 3, opt):adjoint()), { 4, 3, 2 }, "batched")
    T.raises(function() return torch.adjoint(torch.zeros(3, opt)) end,
      "tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D tensor.")
  end)

  T.test("as_strided_" .. tag, function()
    local y = torch.arange(6., opt)
    T.check(rawequal(y:as_strided_({ 2, 2 }, { 1, 2 }, 1), y), "returns self")
    T.eq(y:tolist(), { { 1.0, 3.0 }, { 2.0, 4.0 } }, "values at offset + i + 2j")
    T.eq(y:storage_offset(), 1, "offset")
    y[0][0] = 9
    T.eq(y:as_strided_({ 6 }, { 1 }, 0):tolist(), { 0.0, 9.0, 2.0, 3.0, 4.0, 5.0 }, "writes reach the storage")
    T.raises(function() return torch.zeros(3, { device = dev, requires_grad = true }):as_strided_({ 2 }, { 1 }) end,
      "~as_strided_: not supported on a tensor that requires grad")
  end)

  T.test("as_strided_scatter" .. tag, function()
    local x = torch.arange(9., opt):view(3, 3)
    local out = torch.as_strided_scatter(x, torch.tensor({ -1., -2., -3. }, opt), { 3 }, { 4 })
    T.eq(out:tolist(), { { -1.0, 1.0, 2.0 }, { 3.0, -2.0, 5.0 }, { 6.0, 7.0, -3.0 } }, "diagonal replaced")
    T.eq(x[0][0]:item(), 0.0, "input untouched")
    -- a plain loop: storage position off + 3 i + j of a contiguous 4x5 copy takes src[i][j]
    local a = torch.randn(4, 5, opt)
    local src = torch.randn(2, 2, opt)
    local got = torch.as_strided_scatter(a, src, { 2, 2 }, { 3, 1 }, 2):reshape(-1):tolist()
    local want, s = a:reshape(-1):tolist(), src:tolist()
    for i = 0, 1 do for j = 0, 1 do want[2 + 3 * i + j + 1] = s[i + 1][j + 1] end end
    T.near(got, want, 0, "against a loop")
    T.raises(function() return torch.as_strided_scatter(a, torch.zeros(3, opt), { 2, 2 }, { 3, 1 }) end,
      "as_strided_scatter: expected src to have a size equal to the slice of self. src size = torch.Size([3]), slice size = torch.Size([2, 2])")
    T.raises(function() return torch.as_strided_scatter(a, src, { 2, 2 }, { 10, 10 }) end, "~outside the storage of 20 elements")
    local xt = torch.arange(6., opt):view(2, 3):t() -- its clone keeps strides (1, 3)
    T.eq(torch.as_strided_scatter(xt, torch.tensor({ -1., -2. }, opt), { 2 }, { 1 }, 0):tolist(),
      { { -1.0, 3.0 }, { -2.0, 4.0 }, { 2.0, 5.0 } }, "a transposed input's storage order")
    gradcheck("as_strided_scatter transposed" .. tag, function(p, q) return torch.as_strided_scatter(p:t(), q, { 2 }, { 2 }, 1) end,
      { torch.randn(2, 3, d64), torch.randn(2, d64) })
    gradcheck("as_strided_scatter" .. tag, function(p, q) return torch.as_strided_scatter(p, q, { 2, 2 }, { 3, 1 }, 2) end,
      { torch.randn(4, 5, d64), torch.randn(2, 2, d64) })
  end)

  T.test("native_layer_norm" .. tag, function()
    local x = torch.tensor({ { 1., 2., 3., 4. }, { 2., 2., 2., 6. } }, d64)
    local out, mean, rstd = torch.native_layer_norm(x, { 4 }, nil, nil, 1e-5)
    T.eq(sizes(mean), { 2, 1 }, "mean shape")
    T.eq(sizes(rstd), { 2, 1 }, "rstd shape")
    T.near(mean:reshape(-1):tolist(), { 2.5, 3.0 }, 1e-12, "means")
    T.near(rstd:reshape(-1):tolist(), { 1 / math.sqrt(1.25 + 1e-5), 1 / math.sqrt(3 + 1e-5) }, 1e-12, "rstd")
    T.near(out[0]:tolist(), { -1.5 / math.sqrt(1.25 + 1e-5), -0.5 / math.sqrt(1.25 + 1e-5), 0.5 / math.sqrt(1.25 + 1e-5),
      1.5 / math.sqrt(1.25 + 1e-5) }, 1e-12, "output row")
    local y = torch.randn(2, 3, 4, d64)
    local _, m2, r2 = torch.native_layer_norm(y, { 3, 4 }, nil, nil, 1e-5)
    T.eq(sizes(m2), { 2, 1, 1 }, "mean of two normalised dims")
    T.eq(sizes(r2), { 2, 1, 1 }, "rstd of two normalised dims")
    local w, b = torch.randn(4, d64), torch.randn(4, d64)
    local o2 = torch.native_layer_norm(x, { 4 }, w, b, 1e-5)
    T.near(o2:tolist(), (out * w + b):tolist(), 1e-12, "affine")
    gradcheck("native_layer_norm" .. tag, function(p, q, r) return (torch.native_layer_norm(p, { 4 }, q, r, 1e-5)) end,
      { torch.randn(3, 4, d64), torch.randn(4, d64), torch.randn(4, d64) })
    T.raises(function() return torch.native_layer_norm(y, { 5 }, nil, nil, 1e-5) end,
      "Given normalized_shape=[5], expected input with shape [*, 5], but got input of size[2, 3, 4]")
  end)

  T.test("native_batch_norm" .. tag, function()
    local x = torch.randn(4, 2, 3, d64)
    local rm, rv = torch.zeros(2, d64), torch.ones(2, d64)
    local out, mean, invstd = torch.native_batch_norm(x, nil, nil, rm, rv, true, 0.1, 1e-5)
    local v = x:tolist()
    for c = 1, 2 do
      local s, ss, n = 0, 0, 0
      for i = 1, 4 do for k = 1, 3 do s = s + v[i][c][k]; n = n + 1 end end
      local mu = s / n
      for i = 1, 4 do for k = 1, 3 do ss = ss + (v[i][c][k] - mu) ^ 2 end end
      T.near(mean[c - 1]:item(), mu, 1e-12, "save_mean")
      T.near(invstd[c - 1]:item(), 1 / math.sqrt(ss / n + 1e-5), 1e-12, "save_invstd")
      T.near(rm[c - 1]:item(), 0.1 * mu, 1e-12, "running_mean updated")
      T.near(rv[c - 1]:item(), 0.9 + 0.1 * ss / (n - 1), 1e-12, "running_var updated (unbiased)")
      T.near(out[0][c - 1][0]:item(), (v[1][c][1] - mu) / math.sqrt(ss / n + 1e-5), 1e-10, "output")
    end
    local o2, m2, s2 = torch.native_batch_norm(x, nil, nil, rm, rv, false, 0.1, 1e-5)
    T.eq(sizes(m2), { 0 }, "eval: empty save_mean")
    T.eq(sizes(s2), { 0 }, "eval: empty save_invstd")
    T.near(o2[1][1][2]:item(), (v[2][2][3] - rm[1]:item()) / math.sqrt(rv[1]:item() + 1e-5), 1e-12, "eval output")
  end)

  T.test("native_group_norm" .. tag, function()
    local x = torch.randn(2, 4, 3, d64)
    local w, b = torch.randn(4, d64), torch.randn(4, d64)
    local out, mean, rstd = torch.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5)
    T.eq(sizes(mean), { 2, 2 }, "mean (N, group)")
    local v, wl, bl = x:tolist(), w:tolist(), b:tolist()
    for n = 1, 2 do
      for g = 1, 2 do
        local s, ss = 0, 0
        for c = 2 * g - 1, 2 * g do for k = 1, 3 do s = s + v[n][c][k] end end
        local mu = s / 6
        for c = 2 * g - 1, 2 * g do for k = 1, 3 do ss = ss + (v[n][c][k] - mu) ^ 2 end end
        local r = 1 / math.sqrt(ss / 6 + 1e-5)
        T.near(mean[n - 1][g - 1]:item(), mu, 1e-12, "mean")
        T.near(rstd[n - 1][g - 1]:item(), r, 1e-12, "rstd")
        local c = 2 * g
        T.near(out[n - 1][c - 1][1]:item(), (v[n][c][2] - mu) * r * wl[c] + bl[c], 1e-10, "output")
      end
    end
    gradcheck("native_group_norm" .. tag, function(p, q) return (torch.native_group_norm(p, q, nil, 2, 4, 3, 2, 1e-5)) end,
      { torch.randn(2, 4, 3, d64), torch.randn(4, d64) })
    T.raises(function() return torch.native_group_norm(x, nil, nil, 2, 4, 3, 3, 1e-5) end,
      "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 4, 3] and num_groups=3")
  end)

  T.test("native_dropout and native_norm" .. tag, function()
    local x = torch.arange(1., 10001., opt)
    local out, mask = torch.native_dropout(x, 0.25, true)
    T.eq(mask.dtype, torch.bool, "mask dtype")
    T.near(out:tolist(), torch.where(mask, x / 0.75, torch.zeros_like(x)):tolist(), 1e-6, "kept elements scaled by 1/(1-p)")
    local kept = mask:sum():item() / 10000
    T.check(kept > 0.72 and kept < 0.78, "about 75% kept: " .. kept)
    local e, m = torch.native_dropout(x, 0.25, false)
    T.check(e:equal(x) and m:all():item(), "eval: identity, all kept")
    local z, zm = torch.native_dropout(x, 1.0, true)
    T.check(z:eq(0):all():item() and not zm:any():item(), "p=1: all dropped")
    T.raises(function() return torch.native_dropout(x, 1.5, true) end, "dropout probability has to be between 0 and 1, but got 1.5")
    T.near(torch.native_norm(torch.tensor({ 3., 4. }, opt)):item(), 5, 1e-6, "2-norm")
    T.near(torch.native_norm(torch.tensor({ 3., -4. }, opt), 1):item(), 7, 1e-6, "1-norm")
    T.near(torch.native_norm(torch.tensor({ { 3., 4. }, { 6., 8. } }, opt), 2, { 1 }, true, nil):tolist(), { { 5 }, { 10 } }, 1e-6,
      "over a dim, kept")
  end)

  T.test("convolution" .. tag, function()
    local x = torch.tensor({ { { 1., 2., 3., 4. } } }, opt)
    local w = torch.tensor({ { { 1., -1. } } }, opt)
    T.eq(torch.convolution(x, w, nil, { 1 }, { 0 }, { 1 }, false, { 0 }, 1):tolist(), { { { -1.0, -1.0, -1.0 } } }, "1-d")
    T.eq(torch.convolution(x, w, torch.tensor({ 10. }, opt), { 2 }, { 1 }, { 1 }, false, { 0 }, 1):tolist(),
      { { { 9.0, 9.0, 14.0 } } }, "stride, padding, bias")
    local t = torch.convolution(torch.tensor({ { { 1., 2. } } }, opt), torch.tensor({ { { 1., 1. } } }, opt), nil, { 1 }, { 0 },
      { 1 }, true, { 0 }, 1)
    T.eq(t:tolist(), { { { 1.0, 3.0, 2.0 } } }, "transposed 1-d")
    local x2, w2 = torch.randn(1, 4, 6, 6, opt), torch.randn(6, 2, 3, 3, opt)
    T.near(torch.convolution(x2, w2, nil, { 1, 1 }, { 1, 1 }, { 2, 2 }, false, { 0, 0 }, 2):tolist(),
      F.conv2d(x2, w2, nil, 1, 1, 2, 2):tolist(), 1e-6, "2-d, dilation and groups")
    T.eq(sizes(torch.convolution(x2, torch.randn(4, 3, 3, 3, opt), nil, { 2, 2 }, { 1, 1 }, { 1, 1 }, true, { 1, 1 }, 1)),
      { 1, 3, 12, 12 }, "transposed 2-d with output_padding")
    T.raises(function() return torch.convolution(x2, torch.randn(3, opt), nil, { 1 }, { 0 }, { 1 }, false, { 0 }, 1) end,
      "convolution: expected a weight of 3, 4 or 5 dims, got 1")
  end)

  T.test("embedding_bag" .. tag, function()
    local w = torch.tensor({ { 1., 0. }, { 0., 2. }, { 3., 1. }, { -1., 5. } }, opt)
    local idx, offs = torch.tensor({ 0, 2, 1, 3, 3 }, opt), torch.tensor({ 0, 2, 2 }, opt)
    local out, o2b, size, maxi = torch.embedding_bag(w, idx, offs, false, 0)
    T.eq(out:tolist(), { { 4.0, 1.0 }, { 0.0, 0.0 }, { -2.0, 12.0 } }, "sum")
    T.eq(o2b:tolist(), { 0, 0, 2, 2, 2 }, "offset2bag")
    T.eq(size:tolist(), { 2, 0, 3 }, "bag_size")
    T.eq(sizes(maxi), { 0 }, "no max_indices outside max mode")
    local mo, _, _, mi = torch.embedding_bag(w, idx, offs, false, 2)
    T.eq(mo:tolist(), { { 3.0, 1.0 }, { 0.0, 0.0 }, { 0.0, 5.0 } }, "max")
    T.eq(mi:tolist(), { { 2, 2 }, { -1, -1 }, { 1, 3 } }, "max_indices")
    local me = torch.embedding_bag(w, idx, offs, false, 1, false, nil, false, 3)
    T.eq(me:tolist(), { { 2.0, 0.5 }, { 0.0, 0.0 }, { 0.0, 2.0 } }, "mean, padding_idx left out")
    T.raises(function() return torch.embedding_bag(w, idx, offs, false, 5) end,
      "embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got 5")
  end)

  T.test("embedding_renorm_" .. tag, function()
    local w = torch.tensor({ { 3., 4. }, { 0.3, 0.4 }, { 6., 8. } }, opt)
    T.check(rawequal(torch.embedding_renorm_(w, torch.tensor({ 0, 1, 0 }, opt), 1.0, 2.0), w), "returns weight")
    T.near(w:tolist(), { { 0.6, 0.8 }, { 0.3, 0.4 }, { 6, 8 } }, 1e-6, "row 0 scaled to norm 1, row 2 not named")
  end)

  T.test("recurrent cells" .. tag, function()
    torch.manual_seed(3)
    local x, h, c = torch.randn(2, 3, d64), torch.randn(2, 4, d64), torch.randn(2, 4, d64)
    local wi, wh, bi, bh = torch.randn(16, 3, d64), torch.randn(16, 4, d64), torch.randn(16, d64), torch.randn(16, d64)
    local g = x:matmul(wi:t()) + bi + h:matmul(wh:t()) + bh
    local i, f, gg, o = g:narrow(1, 0, 4):sigmoid(), g:narrow(1, 4, 4):sigmoid(), g:narrow(1, 8, 4):tanh(), g:narrow(1, 12, 4):sigmoid()
    local c1 = f * c + i * gg
    local hy, cy = torch.lstm_cell(x, { h, c }, wi, wh, bi, bh)
    T.near(cy:tolist(), c1:tolist(), 1e-12, "lstm_cell c")
    T.near(hy:tolist(), (o * c1:tanh()):tolist(), 1e-12, "lstm_cell h")
    local gi, gh = x:matmul(wi:narrow(0, 0, 12):t()) + bi:narrow(0, 0, 12), h:matmul(wh:narrow(0, 0, 12):t()) + bh:narrow(0, 0, 12)
    local r, z = (gi:narrow(1, 0, 4) + gh:narrow(1, 0, 4)):sigmoid(), (gi:narrow(1, 4, 4) + gh:narrow(1, 4, 4)):sigmoid()
    local n = (gi:narrow(1, 8, 4) + r * gh:narrow(1, 8, 4)):tanh()
    T.near(torch.gru_cell(x, h, wi:narrow(0, 0, 12), wh:narrow(0, 0, 12), bi:narrow(0, 0, 12), bh:narrow(0, 0, 12)):tolist(),
      ((1 - z) * n + z * h):tolist(), 1e-12, "gru_cell")
    local w4i, w4h = wi:narrow(0, 0, 4), wh:narrow(0, 0, 4)
    local pre = x:matmul(w4i:t()) + h:matmul(w4h:t())
    T.near(torch.rnn_tanh_cell(x, h, w4i, w4h):tolist(), pre:tanh():tolist(), 1e-12, "rnn_tanh_cell without biases")
    T.near(torch.rnn_relu_cell(x, h, w4i, w4h):tolist(), pre:clamp(0):tolist(), 1e-12, "rnn_relu_cell")
    gradcheck("lstm_cell" .. tag, function(p, q, r2) return (torch.lstm_cell(p, { q, c }, r2, wh, bi, bh)) end,
      { torch.randn(2, 3, d64), torch.randn(2, 4, d64), torch.randn(16, 3, d64) })
    gradcheck("gru_cell" .. tag, function(p, q) return torch.gru_cell(p, q, wi:narrow(0, 0, 12), wh:narrow(0, 0, 12)) end,
      { torch.randn(2, 3, d64), torch.randn(2, 4, d64) })
    T.raises(function() return torch.rnn_tanh_cell(torch.randn(2, 5, d64), h, w4i, w4h) end,
      "input has inconsistent input_size: got 5 expected 3")
    T.raises(function() return torch.rnn_tanh_cell(x, torch.randn(3, 4, d64), w4i, w4h) end,
      "Input batch size 2 doesn't match hidden0 batch size 3")
  end)

  T.test("recurrent sequences" .. tag, function()
    torch.manual_seed(5)
    local lstm = nn.LSTM(3, 4, { num_layers = 2, bidirectional = true, dtype = f64 }):to(dev)
    local params = {}
    for i, name in ipairs(lstm._flat_weights_names) do params[i] = lstm[name] end
    local x, h0, c0 = torch.randn(5, 2, 3, d64), torch.randn(4, 2, 4, d64), torch.randn(4, 2, 4, d64)
    local out, hn, cn = torch.lstm(x, { h0, c0 }, params, true, 2, 0.0, false, true, false)
    local mo, mhc = lstm(x, { h0, c0 })
    T.near(out:tolist(), mo:tolist(), 1e-12, "lstm output as nn.LSTM")
    T.near(hn:tolist(), mhc[1]:tolist(), 1e-12, "h_n")
    T.near(cn:tolist(), mhc[2]:tolist(), 1e-12, "c_n")
    -- one layer, one direction, by stepping the cell: the reference loop
    local wi, wh, bi, bh = torch.randn(12, 3, d64), torch.randn(12, 4, d64), torch.randn(12, d64), torch.randn(12, d64)
    local xb, g0 = torch.randn(2, 5, 3, d64), torch.randn(1, 2, 4, d64)
    local gout, gh = torch.gru(xb, g0, { wi, wh, bi, bh }, true, 1, 0.0, false, false, true)
    T.eq(sizes(gout), { 2, 5, 4 }, "batch_first output")
    local hcur = g0[0]
    for t = 0, 4 do
      hcur = torch.gru_cell(xb:select(1, t), hcur, wi, wh, bi, bh)
      T.near(gout:select(1, t):tolist(), hcur:tolist(), 1e-12, "gru step " .. t)
    end
    T.near(gh[0]:tolist(), hcur:tolist(), 1e-12, "gru h_n")
    local rout = torch.rnn_relu(x, torch.zeros(1, 2, 4, d64), { wi:narrow(0, 0, 4), wh:narrow(0, 0, 4) }, false, 1, 0.0, false,
      false, false)
    local r = torch.zeros(2, 4, d64)
    for t = 0, 4 do r = torch.rnn_relu_cell(x[t], r, wi:narrow(0, 0, 4), wh:narrow(0, 0, 4)) end
    T.near(rout[4]:tolist(), r:tolist(), 1e-12, "rnn_relu without biases")
    T.raises(function() return torch.rnn_tanh(x, torch.zeros(1, 2, 4, d64), { wi }, true, 1, 0.0, false, false, false) end,
      "rnn_tanh: expected 4 tensors in params (1 layers, 1 directions, 4 each), got 1")
    T.raises(function() return torch.gru(x, torch.tensor({ 2, 2, 1 }), g0, { wi, wh, bi, bh }, true, 1, 0.0, false, false) end,
      "~gru: the packed form gru(data, batch_sizes, hx, params, ...) is not supported")
  end)

  T.test("svd_lowrank and pca_lowrank" .. tag, function()
    torch.manual_seed(7)
    local A = torch.randn(9, 3, d64):matmul(torch.randn(3, 7, d64)) -- rank 3
    local U, S, V = torch.svd_lowrank(A, { q = 4 })
    T.eq({ sizes(U), sizes(S), sizes(V) }, { { 9, 4 }, { 4 }, { 7, 4 } }, "shapes")
    T.check(((U * S):matmul(V:t()) - A):abs():max():item() < 1e-10, "rank-3 matrix reconstructed")
    T.near(S:narrow(0, 0, 3):tolist(), torch.linalg.svdvals(A):narrow(0, 0, 3):tolist(), 1e-10, "singular values")
    T.check((U:t():matmul(U) - torch.eye(4, d64)):abs():max():item() < 1e-10, "U orthonormal")
    local W = A:t() -- wide
    local U2, S2, V2 = torch.svd_lowrank(W, 3, 1)
    T.eq({ sizes(U2), sizes(V2) }, { { 7, 3 }, { 9, 3 } }, "wide shapes")
    T.check(((U2 * S2):matmul(V2:t()) - W):abs():max():item() < 1e-10, "wide reconstruction")
    local M = torch.randn(9, 7, d64)
    local U3, S3, V3 = torch.svd_lowrank(A + M, { q = 3, M = M })
    T.check(((U3 * S3):matmul(V3:t()) - A):abs():max():item() < 1e-10, "M subtracted")
    local B = torch.randn(2, 6, 2, d64):matmul(torch.randn(2, 2, 5, d64))
    local Ub, Sb, Vb = torch.svd_lowrank(B, 2)
    T.check((Ub:matmul(torch.diag_embed(Sb)):matmul(Vb.mT) - B):abs():max():item() < 1e-10, "batched")
    -- pca: the singular values of A less its column means
    local C = torch.randn(8, 2, d64):matmul(torch.randn(2, 5, d64)) + torch.randn(1, 5, d64)
    local _, Sp, Vp = torch.pca_lowrank(C, 2)
    local centred = C - C:mean(0, true)
    T.near(Sp:tolist(), torch.linalg.svdvals(centred):narrow(0, 0, 2):tolist(), 1e-10, "pca singular values")
    T.check((centred:matmul(Vp):matmul(Vp:t()) - centred):abs():max():item() < 1e-10, "pca components span the rows")
    T.eq(sizes((torch.pca_lowrank(torch.randn(4, 3, d64)))), { 4, 3 }, "pca default q = min(6, m, n)")
    T.raises(function() return torch.pca_lowrank(C, 6) end, "q(=6) must be non-negative integer and not greater than min(m, n)=5")
    T.raises(function() return torch.svd_lowrank(A, 2, -1) end, "niter(=-1) must be non-negative integer")
    gradcheck("svd_lowrank" .. tag, function(P) local u, s = torch.svd_lowrank(P, 2); return (u * s):abs() end,
      { torch.randn(4, 2, d64):matmul(torch.randn(2, 3, d64)) }, { seed = 11, tol = 1e-5 })
  end)

  T.test("segment_reduce" .. tag, function()
    local data = torch.tensor({ 2., -1., 4., 3., 5., 0.5 }, d64)
    local lens = { 2, 0, 3, 1 }
    local vals = data:tolist()
    local want = { sum = {}, mean = {}, max = {}, min = {}, prod = {} }
    local k = 0
    for s, n in ipairs(lens) do
      local sum, prod, mx, mn = 0, 1, -math.huge, math.huge
      for _ = 1, n do
        k = k + 1
        sum, prod, mx, mn = sum + vals[k], prod * vals[k], math.max(mx, vals[k]), math.min(mn, vals[k])
      end
      want.sum[s], want.prod[s], want.max[s], want.min[s] = sum, prod, mx, mn
      want.mean[s] = n > 0 and sum / n or 0 / 0
    end
    for _, red in ipairs({ "sum", "mean", "max", "min", "prod" }) do
      T.near(torch.segment_reduce(data, red, { lengths = torch.tensor(lens, opt) }):tolist(), want[red], 1e-12, red)
      T.near(torch.segment_reduce(data, red, { offsets = torch.tensor({ 0, 2, 2, 5, 6 }, opt) }):tolist(), want[red], 1e-12,
        red .. " by offsets")
    end
    T.near(torch.segment_reduce(data, "max", { lengths = torch.tensor(lens, opt), initial = 3 }):tolist(), { 3, 3, 5, 3 }, 0,
      "initial joins the max")
    T.near(torch.segment_reduce(data, "mean", { lengths = torch.tensor(lens, opt), initial = 1 }):tolist(),
      { 2 / 2, 1, 13 / 3, 1.5 }, 1e-12, "mean with initial")
    local m = torch.tensor({ { 1., 2. }, { 3., 0. }, { 5., 7. } }, d64)
    T.eq(torch.segment_reduce(m, "max", { lengths = torch.tensor({ 2, 1 }, opt) }):tolist(), { { 3.0, 2.0 }, { 5.0, 7.0 } },
      "rows of a matrix")
    for _, red in ipairs({ "sum", "mean", "max", "prod" }) do
      gradcheck("segment_reduce " .. red .. tag,
        function(p) return torch.segment_reduce(p, red, { lengths = torch.tensor({ 2, 1, 3 }, opt) }) end,
        { torch.tensor({ 0.3, -1.2, 2.0, 0.7, 1.9, -0.4 }, d64) })
    end
    T.raises(function() return torch.segment_reduce(data, "sum", { lengths = torch.tensor({ 2, 2 }, opt) }) end,
      "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe.")
    T.raises(function() return torch.segment_reduce(data, "sum") end, "segment_reduce(): Either lengths or offsets must be defined")
    T.raises(function() return torch.segment_reduce(data, "median", { lengths = torch.tensor(lens, opt) }) end,
      "reduce argument must be either sum, prod, mean, amax or amin, got median")
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device: the cuda section of test_api_gaps2", 1) end

-- ---- host-side functions ----

T.test("frombuffer", function()
  local t = torch.frombuffer(string.pack("<ffff", 1.5, -2, 0.25, 8), { dtype = torch.float32 })
  T.eq(t:tolist(), { 1.5, -2.0, 0.25, 8.0 }, "float32")
  T.eq(t.dtype, torch.float32, "dtype")
  T.eq(torch.frombuffer(string.pack("<d", -3.125), { dtype = f64 }):tolist(), { -3.125 }, "float64")
  T.eq(torch.frombuffer(string.pack("<i4i4i4", 7, -9, 65536), { dtype = torch.int32, count = 2, offset = 4 }):tolist(),
    { -9, 65536 }, "int32, count and offset")
  T.eq(torch.frombuffer("\1\2\3\255", { dtype = torch.int16 }):tolist(), { 0x0201, -253 }, "int16 little-endian")
  T.eq(torch.frombuffer("abc", { dtype = torch.uint8 }):tolist(), { 97, 98, 99 }, "bytes")
  T.eq(torch.frombuffer(string.pack("<i8", -5), { dtype = torch.int64 }):tolist(), { -5 }, "int64")
  T.raises(function() return torch.frombuffer("abcdefg", { dtype = torch.float32 }) end,
    "buffer length (7 bytes) after offset (0 bytes) must be a multiple of element size (4)")
  T.raises(function() return torch.frombuffer("abcdefgh", { dtype = torch.float32, offset = 8 }) end,
    "offset (8 bytes) must be non-negative and no greater than buffer length (8 bytes) minus 1")
  T.raises(function() return torch.frombuffer("abcdefgh", { dtype = torch.float32, count = 3 }) end,
    "requested buffer length (3 * 4 bytes) after offset (0 bytes) must not be greater than actual buffer length (8 bytes)")
  T.raises(function() return torch.frombuffer("", { dtype = torch.uint8 }) end, "both buffer length (0) and count (-1) must not be 0")
  T.raises(function() return torch.frombuffer({}, { dtype = torch.uint8 }) end, "~expected the buffer as a Lua string")
  T.raises(function() return torch.frombuffer("ab", { dtype = torch.uint8, bogus = 1 }) end, "~bogus")
end)

T.test("removed functions", function()
  for name, repl in pairs({ solve = "torch.linalg.solve", lstsq = "torch.linalg.lstsq", symeig = "torch.linalg.eigh",
    eig = "torch.linalg.eig", matrix_rank = "torch.linalg.matrix_rank" }) do
    T.raises(function() return torch[name](torch.eye(2), torch.eye(2)) end, "~torch." .. name .. " was deprecated", name)
    T.raises(function() return torch[name](torch.eye(2)) end, "~" .. repl, name .. " names " .. repl)
  end
  for _, name in ipairs({ "solve", "lstsq", "symeig", "eig" }) do
    T.raises(function() return torch.eye(2)[name](torch.eye(2), torch.eye(2)) end, "~has been removed", "Tensor:" .. name)
  end
end)

T.test("range", function()
  T.eq(torch.range(1, 4):tolist(), { 1.0, 2.0, 3.0, 4.0 }, "end included")
  T.eq(torch.range(1, 4).dtype, torch.get_default_dtype(), "default float dtype")
  T.eq(torch.range(0, 1, 0.25):tolist(), { 0.0, 0.25, 0.5, 0.75, 1.0 }, "fractional step")
  T.eq(torch.range(5, 0, -2, { dtype = torch.int64 }):tolist(), { 5, 3, 1 }, "negative step, int64")
  T.eq(torch.range(0, 0.9, 0.5):tolist(), { 0.0, 0.5 }, "end not on the grid")
  T.raises(function() return torch.range(0, 3, 0) end, "step must be nonzero")
  T.raises(function() return torch.range(3, 0) end, "upper bound and larger bound inconsistent with step sign")
  local said = {}
  local stderr = io.stderr
  io.stderr = { write = function(_, ...) for _, s in ipairs({ ... }) do said[#said + 1] = s end end }
  torch.set_warn_always(true)
  local ok = pcall(torch.range, 0, 2)
  torch.set_warn_always(false)
  io.stderr = stderr
  T.check(ok, "range ran")
  T.check(table.concat(said):find("UserWarning: torch.range is deprecated", 1, true) ~= nil, "deprecation warning")
end)

T.test("flags", function()
  local on = torch.set_flush_denormal(true)
  T.eq(type(on), "boolean", "set_flush_denormal answers a boolean")
  local tiny = 1e-300
  if on then T.eq(tiny * 1e-10, 0.0, "denormal results flushed to zero") else T.skip("no FTZ on this CPU", 1) end
  T.eq(torch.set_flush_denormal(false), on, "turned off")
  T.check(tiny * 1e-10 > 0, "denormals back")
  T.raises(function() return torch.set_flush_denormal(1) end, "~boolean expected")
  T.eq({ torch.has_lapack, torch.has_spectral, torch.has_mkl, torch.has_openmp }, { true, true, false, false }, "build facts")
  T.eq(torch.has_mkl, torch.backends.mkl.is_available(), "has_mkl as backends.mkl")
  T.eq(torch.has_openmp, torch.backends.openmp.is_available(), "has_openmp as backends.openmp")
  T.eq(torch.is_vulkan_available(), false, "no vulkan")
end)

T.test("deterministic debug mode", function()
  T.eq(torch.get_deterministic_debug_mode(), 0, "default")
  torch.set_deterministic_debug_mode("error")
  T.eq({ torch.get_deterministic_debug_mode(), torch.are_deterministic_algorithms_enabled(),
    torch.is_deterministic_algorithms_warn_only_enabled() }, { 2, true, false }, "error")
  torch.set_deterministic_debug_mode(1)
  T.eq({ torch.get_deterministic_debug_mode(), torch.are_deterministic_algorithms_enabled(),
    torch.is_deterministic_algorithms_warn_only_enabled() }, { 1, true, true }, "warn")
  torch.set_deterministic_debug_mode("default")
  T.eq({ torch.get_deterministic_debug_mode(), torch.are_deterministic_algorithms_enabled() }, { 0, false }, "default again")
  torch.use_deterministic_algorithms(true)
  T.eq(torch.get_deterministic_debug_mode(), 2, "follows use_deterministic_algorithms")
  torch.use_deterministic_algorithms(false)
  T.raises(function() torch.set_deterministic_debug_mode("loud") end,
    "invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got loud")
  T.raises(function() torch.set_deterministic_debug_mode(3) end, "invalid value of debug_mode, expected 0, 1, or 2, but got 3")
  T.raises(function() torch.set_deterministic_debug_mode(true) end, "debug_mode must be str or int, but got bool")
  T.eq(torch.get_deterministic_debug_mode(), 0, "errors leave it alone")
end)
