-- nn additions of nn_pool_more, nn_lazy_more, nn_module_gaps, nn_functional_gaps, nn_utils_fusion
-- and torch_nn_gaps: against plain Lua loops, closed forms and float64 finite differences; the
-- same checks on "cuda" when there is a GPU.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)

local f64 = torch.float64

local function sizes(x) return x:size():totable() end
local function maxdiff(a, b) return (a:double():cpu() - b:double():cpu()):abs():max():item() end

-- a value rounded to float32 when the dtype is float32 (PyTorch's interval arithmetic runs in the input's type)
local function rounder(dtype)
  if dtype == torch.float32 then return function(v) return (string.unpack("f", string.pack("f", v))) end end
  return function(v) return v end
end

-- PyTorch's window starts, by hand: alpha = (n - k) / (o - 1), floor((i + u) alpha) - floor(u alpha), last n - k
local function starts_ref(u, n, o, k, r)
  local s = {}
  if o > 1 then
    local alpha = r(r(n - k) / r(o - 1))
    for i = 0, o - 2 do s[i + 1] = math.floor(r(r(i + u) * alpha)) - math.floor(r(u * alpha)) end
  end
  s[o] = n - k
  return s
end

-- fractional max pooling of one [N, C, (T,) H, W] table by plain loops: values and flat indices
local function frac_ref(x, samples, k, out, dtype)
  local r = rounder(dtype)
  local xs, us = x:double():cpu():tolist(), samples:double():cpu():tolist()
  local nd = #k
  local vals, idxs = {}, {}
  for n = 1, #xs do
    vals[n], idxs[n] = {}, {}
    for c = 1, #xs[n] do
      local plane, u = xs[n][c], us[n][c]
      local insz = nd == 2 and { #plane, #plane[1] } or { #plane, #plane[1], #plane[1][1] }
      local cols = nd == 2 and { 2, 1 } or { 1, 2, 3 }
      local st = {}
      for d = 1, nd do st[d] = starts_ref(u[cols[d]], insz[d], out[d], k[d], r) end
      local V, I = {}, {}
      local function at(p) -- p: 0-based positions
        local v = plane
        for d = 1, nd do v = v[p[d] + 1] end
        local flat = 0
        for d = 1, nd do flat = flat * insz[d] + p[d] end
        return v, flat
      end
      local function window(o) -- o: 0-based output position
        local best, bi
        local function walk(d, p)
          if d > nd then
            local v, flat = at(p)
            if best == nil or v > best then best, bi = v, flat end
            return
          end
          for t = 0, k[d] - 1 do p[d] = st[d][o[d] + 1] + t; walk(d + 1, p) end
        end
        walk(1, {})
        return best, bi
      end
      if nd == 2 then
        for i = 0, out[1] - 1 do
          V[i + 1], I[i + 1] = {}, {}
          for j = 0, out[2] - 1 do V[i + 1][j + 1], I[i + 1][j + 1] = window({ i, j }) end
        end
      else
        for t = 0, out[1] - 1 do
          V[t + 1], I[t + 1] = {}, {}
          for i = 0, out[2] - 1 do
            V[t + 1][i + 1], I[t + 1][i + 1] = {}, {}
            for j = 0, out[3] - 1 do V[t + 1][i + 1][j + 1], I[t + 1][i + 1][j + 1] = window({ t, i, j }) end
          end
        end
      end
      vals[n][c], idxs[n][c] = V, I
    end
  end
  return vals, idxs
end

local function run(dev)
  local tag = " [" .. dev .. "]"
  local opt = { device = dev }
  local o64 = { dtype = f64, device = dev }

  T.test("fractional max pool 2d against loops" .. tag, function()
    torch.manual_seed(1)
    for _, dtype in ipairs({ torch.float32, f64 }) do
      local x = torch.randn(2, 3, 11, 9, { dtype = dtype, device = dev })
      local u = torch.rand(2, 3, 2, { dtype = dtype, device = dev })
      local v, i = F.fractional_max_pool2d(x, { 3, 2 }, { 5, 4 }, nil, true, u)
      local rv, ri = frac_ref(x, u, { 3, 2 }, { 5, 4 }, dtype)
      T.eq(sizes(v), { 2, 3, 5, 4 }, "shape")
      T.near(v:double():cpu():tolist(), rv, 1e-6, "values " .. tostring(dtype))
      T.eq(i:cpu():tolist(), ri, "indices " .. tostring(dtype))
      T.eq(i.dtype, torch.int64, "indices dtype")
    end
    local x = torch.randn(3, 10, 10, opt)
    local u = torch.rand(1, 3, 2, opt)
    local m = nn.FractionalMaxPool2d(2, { output_ratio = 0.5, _random_samples = u })
    local v = m(x)
    T.eq(sizes(v), { 3, 5, 5 }, "unbatched with output_ratio")
    T.near(v:unsqueeze(0):cpu():tolist(), (frac_ref(x:unsqueeze(0), u, { 2, 2 }, { 5, 5 }, torch.float32)), 1e-6, "unbatched values")
    local v2, i2 = F.fractional_max_pool2d_with_indices(x, 2, { output_size = 4 })
    T.eq(sizes(v2), { 3, 4, 4 }, "_with_indices shape")
    T.check(x:flatten(1):gather(1, i2:flatten(1)):equal(v2:flatten(1)), "indices point at the values")
    T.eq(sizes(F.fractional_max_pool2d(x, 3, 1)), { 3, 1, 1 }, "output 1")
  end)

  T.test("fractional max pool 3d against loops" .. tag, function()
    torch.manual_seed(2)
    local x = torch.randn(2, 2, 7, 8, 6, o64)
    local u = torch.rand(2, 2, 3, o64)
    local v, i = F.fractional_max_pool3d(x, { 2, 3, 2 }, { 4, 3, 5 }, nil, true, u)
    local rv, ri = frac_ref(x, u, { 2, 3, 2 }, { 4, 3, 5 }, f64)
    T.near(v:cpu():tolist(), rv, 1e-12, "values")
    T.eq(i:cpu():tolist(), ri, "indices")
    local m = nn.FractionalMaxPool3d(2, { output_size = { 3, 3, 3 }, return_indices = true })
    local mv, mi = m(x:float())
    T.eq(sizes(mv), { 2, 2, 3, 3, 3 }, "module shape")
    T.check(x:float():flatten(2):gather(2, mi:flatten(2)):equal(mv:flatten(2)), "module indices")
    T.eq(sizes(F.fractional_max_pool3d_with_indices(x:float(), 2, { output_ratio = { 0.5, 0.5, 0.5 } })), { 2, 2, 3, 4, 3 },
      "output_ratio")
  end)

  T.test("fractional max pool errors" .. tag, function()
    local x = torch.randn(1, 1, 5, 5, opt)
    T.raises(function() return F.fractional_max_pool2d(x, 2) end,
      "fractional_max_pool2d requires specifying either an output_size or an output_ratio")
    T.raises(function() return nn.FractionalMaxPool2d(2) end,
      "FractionalMaxPool2d requires specifying either an output size, or a pooling ratio")
    T.raises(function() return nn.FractionalMaxPool2d(2, { output_size = 2, output_ratio = 0.5 }) end,
      "only one of output_size and output_ratio may be specified")
    T.raises(function() return nn.FractionalMaxPool2d(2, { output_ratio = 1.5 }) end, "output_ratio must be between 0 and 1 (got (1.5, 1.5))")
    T.raises(function() return F.fractional_max_pool2d(x, 3, 4) end, "fractional_max_pool2d(): pool height 3 too large relative to input height 5")
    T.raises(function() return F.fractional_max_pool2d(x, 2, 2, nil, false, torch.rand(2, 1, 2, opt)) end,
      "fractional_max_pool2d(): expected _random_samples of shape [1, 1, 2], got [2, 1, 2]")
    T.raises(function() return F.fractional_max_pool2d(torch.randn(5, 5, opt), 2, 2) end, "~Expected 3D or 4D tensor")
  end)

  T.test("MaxUnpool3d and LPPool3d" .. tag, function()
    torch.manual_seed(3)
    local x = torch.randn(1, 2, 4, 4, 6, opt)
    local v, i = F.max_pool3d(x, 2, { return_indices = true })
    local y = nn.MaxUnpool3d(2)(v, i)
    T.eq(sizes(y), { 1, 2, 4, 4, 6 }, "unpool shape")
    -- every input position keeps its value if it is its window's max, else 0
    local xs, ys, vs = x:cpu():tolist(), y:cpu():tolist(), v:cpu():tolist()
    local ok = true
    for c = 1, 2 do for d = 1, 4 do for h = 1, 4 do for w = 1, 6 do
      local m = vs[1][c][(d - 1) // 2 + 1][(h - 1) // 2 + 1][(w - 1) // 2 + 1]
      local want = xs[1][c][d][h][w] == m and m or 0
      if ys[1][c][d][h][w] ~= want then ok = false end
    end end end end
    T.check(ok, "unpool values by loop")
    T.eq(sizes(F.max_unpool3d(v, i, 2, { output_size = { 5, 5, 7 } })), { 1, 2, 5, 5, 7 }, "output_size")
    T.eq(tostring(nn.MaxUnpool3d(2)), "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))", "repr")

    local p = torch.rand(1, 1, 4, 4, 4, o64) + 0.1
    local lp = nn.LPPool3d(3, 2)(p)
    T.eq(sizes(lp), { 1, 1, 2, 2, 2 }, "lp shape")
    local ps = p:cpu():tolist()[1][1]
    local s = 0
    for d = 1, 2 do for h = 1, 2 do for w = 1, 2 do s = s + ps[d][h][w] ^ 3 end end end
    T.near(lp[0][0][0][0][0]:item(), s ^ (1 / 3), 1e-12, "lp first window")
    T.eq(tostring(nn.LPPool3d(2, 3)), "LPPool3d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)", "lp repr")
  end)

  T.test("pool gradients" .. tag, function()
    -- gradcheck perturbs CPU tensors: the op runs on dev and its output comes back
    local function on(f) return function(a) return f(a:to(dev)):cpu() end end
    torch.manual_seed(4)
    local x = torch.randn(1, 2, 7, 6, { dtype = f64 })
    local u = torch.rand(1, 2, 2, o64)
    gradcheck("fractional_max_pool2d" .. tag, on(function(a) return F.fractional_max_pool2d(a, 2, { 4, 3 }, nil, false, u) end), { x })
    local x3 = torch.randn(1, 1, 5, 5, 5, { dtype = f64 })
    local u3 = torch.rand(1, 1, 3, o64)
    gradcheck("fractional_max_pool3d" .. tag, on(function(a) return F.fractional_max_pool3d(a, 2, 3, nil, false, u3) end), { x3 })
    gradcheck("lp_pool3d" .. tag, on(function(a) return F.lp_pool3d(a, 2, { 2, 2, 1 }) end), { torch.rand(1, 1, 4, 4, 2, { dtype = f64 }) + 0.5 })
    local v, i = F.max_pool3d(torch.randn(1, 1, 4, 4, 4, o64), 2, { return_indices = true })
    gradcheck("max_unpool3d" .. tag, on(function(a) return F.max_unpool3d(a, i, 2) end), { v:cpu() })
  end)

  T.test("lazy modules" .. tag, function()
    torch.manual_seed(5)
    local m = nn.LazyConvTranspose2d(4, 3, { stride = 2, output_padding = 1 })
    T.eq(tostring(m), "LazyConvTranspose2d(0, 4, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))", "repr before")
    local x = torch.randn(2, 5, 6, 6, opt)
    m:to(dev)
    local y = m(x)
    T.eq(m:_get_name(), "ConvTranspose2d", "became ConvTranspose2d")
    T.eq(sizes(m.weight), { 5, 4, 3, 3 }, "weight shape")
    T.check(maxdiff(y, F.conv_transpose2d(x, m.weight, m.bias, 2, 0, 1)) < 1e-5, "output")
    local m1 = nn.LazyConvTranspose1d(3, 2):to(dev)
    T.eq(sizes(m1(torch.randn(4, 7, opt))), { 3, 8 }, "1d unbatched")
    T.eq(sizes(m1.weight), { 4, 3, 2 }, "1d weight")
    local m3 = nn.LazyConvTranspose3d(2, 2, { bias = false }):to(dev)
    T.eq(sizes(m3(torch.randn(1, 3, 2, 2, 2, opt))), { 1, 2, 3, 3, 3 }, "3d")
    T.check(m3.bias == nil, "3d no bias")
    local n = nn.LazyInstanceNorm2d({ affine = true })
    local z = torch.randn(2, 3, 4, 4, opt)
    local out = n:to(dev)(z)
    T.eq(n:_get_name(), "InstanceNorm2d", "became InstanceNorm2d")
    T.eq(n.num_features, 3, "num_features")
    T.eq(sizes(n.weight), { 3 }, "affine weight")
    local mean = z:mean({ 2, 3 }, true)
    local var = z:var({ 2, 3 }, { unbiased = false, keepdim = true })
    T.check(maxdiff(out, (z - mean) / (var + 1e-5):sqrt()) < 1e-5, "instance norm output")
    local n1 = nn.LazyInstanceNorm1d():to(dev)
    T.eq(sizes(n1(torch.randn(3, 5, opt))), { 3, 5 }, "1d unbatched")
    T.eq(n1.num_features, 3, "1d unbatched features")
    T.eq(sizes(nn.LazyInstanceNorm3d():to(dev)(torch.randn(1, 2, 3, 3, 3, opt))), { 1, 2, 3, 3, 3 }, "3d")
  end)

  T.test("multi_head_attention_forward" .. tag, function()
    torch.manual_seed(6)
    local mha = nn.MultiheadAttention(8, 2):to(dev)
    local q, k = torch.randn(5, 3, 8, opt), torch.randn(4, 3, 8, opt)
    local want, wantw = mha(q, k, k)
    local got, gotw = F.multi_head_attention_forward(q, k, k, 8, 2, mha.in_proj_weight, mha.in_proj_bias, nil, nil, false, 0.0,
      mha.out_proj.weight, mha.out_proj.bias)
    T.check(maxdiff(got, want) < 1e-6, "output as the module's")
    T.check(maxdiff(gotw, wantw) < 1e-6, "weights as the module's")
    -- the attention by hand: softmax(q Wq (k Wk)^T / sqrt(4)) v Wv, per head, then out_proj
    local W, b = mha.in_proj_weight, mha.in_proj_bias
    local Q = q:select(1, 0):matmul(W:narrow(0, 0, 8):t()) + b:narrow(0, 0, 8)
    local K = k:select(1, 0):matmul(W:narrow(0, 8, 8):t()) + b:narrow(0, 8, 8)
    local V = k:select(1, 0):matmul(W:narrow(0, 16, 8):t()) + b:narrow(0, 16, 8)
    local heads = {}
    for h = 0, 1 do
      local qh, kh, vh = Q:narrow(1, 4 * h, 4), K:narrow(1, 4 * h, 4), V:narrow(1, 4 * h, 4)
      heads[h + 1] = F.softmax(qh:matmul(kh:t()) / 2, -1):matmul(vh)
    end
    local ref = torch.cat(heads, 1):matmul(mha.out_proj.weight:t()) + mha.out_proj.bias
    T.check(maxdiff(got:select(1, 0), ref) < 1e-5, "batch 0 by hand")
    local sep = nn.MultiheadAttention(8, 2, { kdim = 6, vdim = 5 }):to(dev)
    local kk, vv = torch.randn(4, 3, 6, opt), torch.randn(4, 3, 5, opt)
    local w2 = sep(q, kk, vv, { need_weights = false })
    local g2 = F.multi_head_attention_forward(q, kk, vv, 8, 2, nil, sep.in_proj_bias, nil, nil, false, 0.0, sep.out_proj.weight,
      sep.out_proj.bias, { use_separate_proj_weight = true, q_proj_weight = sep.q_proj_weight, k_proj_weight = sep.k_proj_weight,
        v_proj_weight = sep.v_proj_weight, need_weights = false })
    T.check(maxdiff(g2, w2) < 1e-6, "separate projections")
    local u = F.multi_head_attention_forward(q:select(1, 0), k:select(1, 0), k:select(1, 0), 8, 2, W, b, nil, nil, false, 0.0,
      mha.out_proj.weight, mha.out_proj.bias)
    T.check(maxdiff(u, want:select(1, 0)) < 1e-6, "unbatched")
    T.raises(function() return F.multi_head_attention_forward(q, k, k, 6, 2, W, b, nil, nil, false, 0.0, mha.out_proj.weight) end,
      "was expecting embedding dimension of 6, but got 8")
    T.raises(function() return F.multi_head_attention_forward(q, k, k, 8, 2, W, b, torch.zeros(1, 1, 8), nil, false, 0.0,
      mha.out_proj.weight) end, "multi_head_attention_forward: bias_k, bias_v and add_zero_attn are not supported")
  end)

  T.test("nn.grad" .. tag, function()
    torch.manual_seed(7)
    -- conv1d by hand: gx[n][c][i] = sum go[n][o][j] w[o][c][t] over i = j*s - p + t*d
    local x = torch.randn(2, 3, 9, o64)
    local w = torch.randn(4, 3, 3, o64)
    local s, p, d = 2, 1, 2
    local go = torch.randn(F.conv1d(x, w, nil, s, p, d).shape, o64)
    local gx = F.grad.conv1d_input(x.shape, w, go, s, p, d)
    local gw = nn.grad.conv1d_weight(x, w.shape, go, s, p, d)
    local xs, ws, gs = x:cpu():tolist(), w:cpu():tolist(), go:cpu():tolist()
    local rx, rw = {}, {}
    for n = 1, 2 do rx[n] = {}; for c = 1, 3 do rx[n][c] = {}; for i = 1, 9 do rx[n][c][i] = 0 end end end
    for o = 1, 4 do rw[o] = {}; for c = 1, 3 do rw[o][c] = { 0, 0, 0 } end end
    for n = 1, 2 do for o = 1, 4 do for j = 1, #gs[1][1] do for c = 1, 3 do for t = 1, 3 do
      local i = (j - 1) * s - p + (t - 1) * d + 1
      if i >= 1 and i <= 9 then
        rx[n][c][i] = rx[n][c][i] + gs[n][o][j] * ws[o][c][t]
        rw[o][c][t] = rw[o][c][t] + gs[n][o][j] * xs[n][c][i]
      end
    end end end end end
    T.near(gx:cpu():tolist(), rx, 1e-10, "conv1d_input by hand")
    T.near(gw:cpu():tolist(), rw, 1e-10, "conv1d_weight by hand")
    -- 2d and 3d with groups: <conv(x, w), g> = <x, conv_input(g)> = <w, conv_weight(g)>
    for _, nd in ipairs({ 2, 3 }) do
      local xs2 = { 2, 4, 6, 5, 4 }
      local ws2 = { 6, 2, 3, 2, 2 }
      local xx = torch.randn({ table.unpack(xs2, 1, nd + 2) }, o64)
      local ww = torch.randn({ table.unpack(ws2, 1, nd + 2) }, o64)
      local conv = F["conv" .. nd .. "d"]
      local y = conv(xx, ww, nil, 2, 1, 1, 2)
      local g = torch.randn(y.shape, o64)
      local lhs = (y * g):sum():item()
      local ix = F.grad["conv" .. nd .. "d_input"](xx.shape, ww, g, 2, 1, 1, 2)
      local iw = F.grad["conv" .. nd .. "d_weight"](xx, ww.shape, g, { stride = 2, padding = 1, groups = 2 })
      T.near((xx * ix):sum():item(), lhs, 1e-10, nd .. "d input adjoint")
      T.near((ww * iw):sum():item(), lhs, 1e-10, nd .. "d weight adjoint")
    end
    T.raises(function() return F.grad.conv1d_input({ 2, 3, 9 }, w, torch.randn(2, 4, 3, o64)) end,
      "conv1d_input: grad_output has size [2, 4, 3], the convolution's output has size [2, 4, 7]")
  end)

  T.test("fusion" .. tag, function()
    torch.manual_seed(8)
    local function trained_bn(bn, shape)
      bn:to(dev)
      for _ = 1, 3 do bn(torch.randn(shape, opt) * 2 + 1) end
      torch.nn.init.uniform_(bn.weight, 0.5, 1.5)
      torch.nn.init.uniform_(bn.bias, -1, 1)
      return bn:eval()
    end
    for _, bias in ipairs({ true, false }) do
      local conv = nn.Conv2d(3, 5, 3, { bias = bias }):to(dev):eval()
      local bn = trained_bn(nn.BatchNorm2d(5), { 4, 5, 6, 6 })
      local fused = nn.utils.fuse_conv_bn_eval(conv, bn)
      local x = torch.randn(2, 3, 8, 8, opt)
      T.check(maxdiff(fused(x), bn(conv(x))) < 1e-5, "conv-bn bias=" .. tostring(bias))
      T.check(fused.bias ~= nil and nn.is_parameter(fused.bias), "fused bias is a Parameter")
      T.check(conv.weight ~= fused.weight, "conv itself unchanged")
    end
    local ct = nn.ConvTranspose2d(3, 4, 2, 2):to(dev):eval()
    local bnt = trained_bn(nn.BatchNorm2d(4), { 2, 4, 3, 3 })
    local xt = torch.randn(1, 3, 4, 4, opt)
    T.check(maxdiff(nn.utils.fusion.fuse_conv_bn_eval(ct, bnt, true)(xt), bnt(ct(xt))) < 1e-5, "conv transpose-bn")
    local lin = nn.Linear(6, 4):to(dev):eval()
    local bn1 = trained_bn(nn.BatchNorm1d(4), { 8, 4 })
    local xl = torch.randn(3, 6, opt)
    T.check(maxdiff(nn.utils.fuse_linear_bn_eval(lin, bn1)(xl), bn1(lin(xl))) < 1e-5, "linear-bn")
    local w, b = nn.utils.fuse_conv_bn_weights(torch.ones(2, 1, 1, 1, opt), nil, torch.tensor({ 1., 2. }, opt),
      torch.tensor({ 3., 15. }, opt), 1.0, nil, nil)
    T.near(w:flatten():tolist(), { 0.5, 0.25 }, 1e-6, "fuse_conv_bn_weights weight by hand")
    T.near(b:tolist(), { -0.5, -0.5 }, 1e-6, "fuse_conv_bn_weights bias by hand")
    local lw, lb = nn.utils.fuse_linear_bn_weights(torch.ones(2, 3, opt), torch.tensor({ 1., 1. }, opt), torch.tensor({ 0., 1. }, opt),
      torch.tensor({ 3., 0. }, opt), 1.0, torch.tensor({ 2., 3. }, opt), torch.tensor({ 1., -1. }, opt))
    T.near(lw:tolist(), { { 1, 1, 1 }, { 3, 3, 3 } }, 1e-6, "fuse_linear_bn_weights weight")
    T.near(lb:tolist(), { 2, -1 }, 1e-6, "fuse_linear_bn_weights bias")
    T.raises(function() return nn.utils.fuse_conv_bn_eval(nn.Conv2d(1, 1, 1), nn.BatchNorm2d(1):eval()) end, "Fusion only for eval!")
    T.raises(function() return nn.utils.fuse_linear_bn_eval(nn.Linear(2, 3):eval(), nn.BatchNorm1d(2):eval()) end,
      "To fuse, linear.out_features must equal bn.num_features or bn.num_features must be 1")
  end)

  T.test("memory format, skip_init, clip_grad_norm" .. tag, function()
    local model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Sequential(nn.Conv3d(2, 2, 1), nn.Linear(2, 2))):to(dev)
    local before = model[0].weight:clone()
    local p = model[0].weight
    T.check(nn.utils.convert_conv2d_weight_memory_format(model, torch.channels_last) == model, "returns the module")
    T.check(model[0].weight == p, "same Parameter")
    T.check(model[0].weight:is_contiguous({ memory_format = torch.channels_last }), "conv2d weight channels_last")
    T.check(model[0].weight:equal(before), "values kept")
    nn.utils.memory_format.convert_conv3d_weight_memory_format(model, torch.channels_last_3d)
    T.check(model[2][0].weight:is_contiguous({ memory_format = torch.channels_last_3d }), "conv3d weight channels_last_3d")
    local lin = nn.utils.skip_init(nn.Linear, 4, 3, { device = dev })
    T.eq(sizes(lin.weight), { 3, 4 }, "skip_init")
    T.eq(lin.weight.device.type, dev, "skip_init device")
    T.raises(function() return nn.utils.skip_init(42) end, "Expected a Module; got int")
    local l = nn.Linear(2, 1):to(dev)
    l.weight.grad = torch.tensor({ { 3., 4. } }, opt)
    l.bias.grad = torch.zeros(1, opt)
    T.near(nn.utils.clip_grad_norm(l:parameters(), 1.0):item(), 5.0, 1e-6, "clip_grad_norm total norm")
    T.near(l.weight.grad:tolist()[1], { 0.6, 0.8 }, 1e-5, "clip_grad_norm clipped")
  end)
end

T.test("Module additions", function()
  local net = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))
  net:set_submodule("1.0", nn.Tanh())
  T.eq(net[1][0]:_get_name(), "Tanh", "set_submodule replaces")
  net:set_submodule("1.extra", nn.Identity())
  T.eq(net[1].extra:_get_name(), "Identity", "set_submodule adds when not strict")
  T.raises(function() net:set_submodule("1.missing", nn.Identity(), true) end, "Sequential has no attribute `missing`")
  T.raises(function() net:set_submodule("2.x", nn.Identity()) end, "Sequential has no attribute `2`")
  T.raises(function() net:set_submodule("0.weight", nn.Identity()) end, "`weight` is not an nn.Module")
  T.raises(function() net:set_submodule("", nn.Identity()) end, "Cannot set the submodule without a target name!")
  T.raises(function() net:set_submodule("0", 5) end, "`module` is not an nn.Module, found int")
  local x = torch.randn(4, 2)
  local before = net(x)
  T.eq(net:compile(), nil, "compile returns nothing")
  T.check(net(x):equal(before), "runs as before")
  T.raises(function() net:compile({ fullgrph = true }) end, "bad argument #1 to 'compile' (unknown keyword 'fullgrph')")
  T.check(net:share_memory() == net, "share_memory returns the module")
  T.eq(net.call_super_init, false, "call_super_init")
  T.eq(nn.Module.dump_patches, false, "dump_patches")
  T.raises(function() net:xpu() end, "Module.xpu: nnrepl has no XPU devices; use :cpu() or :cuda()")
  T.raises(function() net:mtia() end, "~no MTIA devices")
end)

T.test("nn.Buffer and nn.Container", function()
  local M = nn.Module:extend("WithBuffers")
  function M:__init()
    self.lin = nn.Linear(2, 2)
    self.stats = nn.Buffer(torch.ones(3))
    self.scratch = nn.Buffer(torch.zeros(2), { persistent = false })
    self.plain = torch.zeros(1)
  end
  local m = M()
  local names = {}
  for name in m:named_buffers() do names[#names + 1] = name end
  T.eq(names, { "stats", "scratch" }, "buffers registered in order")
  local keys = m:state_dict():keys()
  T.eq(keys, { "stats", "lin.weight", "lin.bias" }, "non-persistent buffer left out of state_dict (own tensors first)")
  m:double()
  T.eq(m.stats.dtype, torch.float64, "buffers follow conversions")
  T.eq(m.plain.dtype, torch.float32, "a plain tensor attribute is no buffer")
  T.eq(tostring(nn.Buffer), "<class 'torch.nn.parameter.Buffer'>", "Buffer class")
  T.check(nn.parameter.Buffer == nn.Buffer and nn.parameter.Parameter == nn.Parameter, "nn.parameter")
  T.raises(function() return nn.Buffer(3) end, "bad argument #1 to 'Buffer' (tensor expected, got int)")
  local c = nn.Container({ b = nn.ReLU(), a = nn.Linear(1, 1) })
  T.eq(#c:children(), 2, "Container children")
  T.eq(c.a:_get_name(), "Linear", "Container registers")
end)

T.test("nn.init deprecated names", function()
  torch.manual_seed(9)
  local t = torch.empty(100)
  T.check(nn.init.uniform(t, 2, 3) == t, "uniform returns the tensor")
  T.check(t:min():item() >= 2 and t:max():item() <= 3, "uniform range")
  T.eq(nn.init.constant(torch.empty(3), 1.5):tolist(), { 1.5, 1.5, 1.5 }, "constant")
  local w = torch.empty(6, 4)
  nn.init.orthogonal(w)
  T.check((w:t():matmul(w) - torch.eye(4)):abs():max():item() < 1e-5, "orthogonal")
  for _, name in ipairs({ "normal", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal" }) do
    T.eq(sizes(nn.init[name](torch.empty(3, 4))), { 3, 4 }, name)
  end
  local sp = nn.init.sparse(torch.empty(10, 3), 0.3)
  T.eq(sp:eq(0):sum(0):tolist(), { 3, 3, 3 }, "sparse zeros per column")
  for _, name in ipairs({ "dirac_", "eye_", "sparse_", "orthogonal_", "trunc_normal_" }) do
    T.eq(type(nn.init[name]), "function", name)
  end
  T.eq(F.native_channel_shuffle(torch.arange(4.):view(1, 4, 1), 2):flatten():tolist(), { 0.0, 2.0, 1.0, 3.0 }, "native_channel_shuffle")
end)

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device: the cuda section of test_nn_gaps2", 1) end
