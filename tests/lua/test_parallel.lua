-- The CPU's elementwise kernels on several threads (engine/cpu/parallel.c): every result bitwise
-- that of the serial run (torch.set_num_threads(1) against 4) for each kernel family on large
-- tensors (from 32768 elements the work splits) of several layouts, errors included, the
-- reductions that split over their outputs and the pools that split over planes; convolutions
-- (oneDNN's and the own kernels) against float64 and the same from run to run; a DataLoader
-- with workers alongside; torch.get_num_threads()'s default against CPython's count of the CPUs
-- this process may use. (The pool's ranges, other threads and fork(): tests/c/test_parallel.c.)
local T = ...
local data = torch.utils.data

local default_threads = torch.get_num_threads() -- before any test sets it

-- bitwise equal: values, NaN positions and signs (a float64 view of float16/32 values is exact)
local function same_bits(a, b)
  if a.dtype ~= b.dtype or T.show(a.shape:totable()) ~= T.show(b.shape:totable()) then return false end
  if not a:is_floating_point() then return torch.equal(a, b) end
  local na, nb = a:isnan(), b:isnan()
  return torch.equal(na, nb) and torch.equal(a:masked_fill(na, 0), b:masked_fill(nb, 0))
    and torch.equal(torch.signbit(a), torch.signbit(b))
end

-- f() with 1 thread and with 4: the results (a tensor or a list of them) bitwise the same
local function serial_vs_parallel(name, f)
  local prior = torch.get_num_threads()
  torch.set_num_threads(1)
  local want = f()
  torch.set_num_threads(4)
  local ok, got = pcall(f)
  torch.set_num_threads(prior)
  if not ok then error(got, 0) end
  if torch.is_tensor(want) then want, got = { want }, { got } end
  for i = 1, #want do T.check(same_bits(want[i], got[i]), name .. ": result " .. i .. " as the serial run's") end
end

-- f() on 4 threads with oneDNN on (dnnl) or off; the thread count and the switch put back, an error raised again
local function on_4_threads(dnnl, f, ...)
  local prior = torch.get_num_threads()
  torch.set_num_threads(4)
  torch.backends.mkldnn.enabled = dnnl
  local res = table.pack(pcall(f, ...))
  torch.backends.mkldnn.enabled = true
  torch.set_num_threads(prior)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- the layouts: each a function of a seed giving a large float32 tensor
torch.manual_seed(0)
local layouts = {
  contiguous = function() return torch.randn(300001) * 3 end,
  transposed = function() return (torch.randn(301, 257) * 3):t() end,
  channels_last = function() return (torch.randn(4, 16, 33, 35) * 3):contiguous({ memory_format = torch.channels_last }) end,
  slice = function() return (torch.randn(700, 301) * 3):as_strided({ 333, 97 }, { 602, 3 }, 5) end, -- every 2nd row, 3rd column
  narrow = function() return (torch.randn(513, 300) * 3):narrow(1, 7, 251) end,
  odd = function() return torch.randn(3, 5, 7, 11, 43) * 3 end,
}
local names = {}
for k in pairs(layouts) do names[#names + 1] = k end
table.sort(names)

T.test("unary float ops, each layout, float32 / float64 / float16", function()
  for _, lay in ipairs(names) do
    local x32 = layouts[lay]()
    for _, dt in ipairs({ torch.float32, torch.float64, torch.float16 }) do
      local x = x32:to(dt)
      serial_vs_parallel(lay .. " " .. tostring(dt), function()
        return { x:exp(), x:sin(), x:sigmoid(), x:tanh(), x:sqrt(), x:log1p(), x:neg(), x:abs(), x:relu(),
          x:clamp(-1, 0.5), x:clamp({ min = 0.1 }), x:pow(3), x:rsqrt(), x:erf(), x:sign(), x:expm1() }
      end)
    end
  end
end)

T.test("unary integer and bool ops", function()
  local x = (layouts.transposed() * 100):to(torch.int64)
  local x32 = layouts.channels_last():mul(50):to(torch.int32)
  local u8 = layouts.slice():mul(60):to(torch.uint8)
  serial_vs_parallel("int", function()
    return { x:neg(), x:abs(), x:clamp(-30, 40), x32:clamp(-5, 7), u8:clamp(3, 200), x:pow(2), x:bitwise_not(),
      x:logical_not(), x32:sign(), u8:bitwise_not(), x:gt(0):logical_not() }
  end)
end)

T.test("binary ops: broadcasts, a scalar operand, mixed dtypes", function()
  local a = layouts.odd()
  local b = torch.randn(5, 1, 11, 1) -- broadcast against [3, 5, 7, 11, 43]
  local row = torch.randn(43)
  local h = layouts.odd():half()
  local s = torch.tensor(1.5)
  local c, d = layouts.transposed(), layouts.transposed()
  serial_vs_parallel("float", function()
    return { a + b, a * row, a - s, torch.add(a, b, { alpha = 0.3 }), a / b, a:pow(b:abs()), torch.maximum(a, b),
      torch.minimum(a, row), a:gt(b), a:le(row), torch.atan2(a, b), torch.remainder(a, b), torch.fmod(a, row),
      h + b, h * h, h:to(torch.bfloat16) * s, c * d, c + d:t():t(), torch.hypot(c, d), a:eq(a:round()) }
  end)
  local i = (layouts.odd() * 100):to(torch.int64)
  local j = (torch.randn(5, 1, 11, 1) * 20):to(torch.int32)
  local nz = j:masked_fill(j:eq(0), 3)
  local u = (layouts.odd():abs() * 50):to(torch.uint8)
  serial_vs_parallel("integer", function()
    return { i + j, i * j, i - u, torch.remainder(i, nz), torch.fmod(i, nz), torch.floor_divide(i, nz),
      i:bitwise_and(j), i:bitwise_xor(u), i:bitwise_left_shift(3), i:bitwise_right_shift(j:abs():remainder(8)),
      i:lt(j), i:logical_and(u), i + 0.5, u * u, i / nz }
  end)
end)

T.test("where, copies and casts, fills", function()
  local x, y = layouts.transposed(), layouts.transposed()
  local cl, src = layouts.channels_last(), layouts.slice()
  serial_vs_parallel("where", function()
    return { torch.where(x:gt(0), x, y), torch.where(x:gt(0), x, 0.0), torch.where(cl:lt(0), cl:half(), cl:double()),
      torch.where(x:gt(1), x:to(torch.int64), y:to(torch.int32)) }
  end)
  serial_vs_parallel("copy", function()
    local into = torch.zeros(4, 16, 33, 35)
    into:copy_(cl)
    local sl = torch.zeros(700, 301)
    sl:as_strided({ 333, 97 }, { 602, 3 }, 5):copy_(src)
    return { x:contiguous(), x:half(), x:to(torch.int32), x:half():float(), cl:contiguous(), cl:to(torch.bfloat16),
      (x * 100):to(torch.uint8), x:gt(0):to(torch.float64), x:double():half(), into, sl, x:clone() }
  end)
  serial_vs_parallel("fill", function()
    local a = torch.zeros(700, 301)
    a:narrow(1, 3, 250):fill_(2.5)
    local b = torch.empty(300001, { dtype = torch.float16 }):fill_(1 / 3)
    local c = torch.zeros(4, 16, 33, 35):contiguous({ memory_format = torch.channels_last }):fill_(-7)
    return { a, b, c, torch.full({ 513, 300 }, 42, { dtype = torch.int64 }), torch.ones(99999, { dtype = torch.int8 }) }
  end)
end)

T.test("pointwise losses, forward and backward, float32 / float64 / float16", function()
  local x0, t0 = torch.randn(3, 100003), torch.rand(3, 100003)
  for _, dt in ipairs({ torch.float32, torch.float64, torch.float16 }) do
    serial_vs_parallel("losses " .. tostring(dt), function()
      local out = {}
      for _, f in ipairs({
        function(x, t) return F.mse_loss(x, t, { reduction = "none" }) end,
        function(x, t) return F.mse_loss(x, t) end,
        function(x, t) return F.smooth_l1_loss(x, t, { reduction = "none", beta = 0.5 }) end,
        function(x, t) return F.huber_loss(x, t, { delta = 0.7 }) end,
        function(x, t) return F.binary_cross_entropy(torch.sigmoid(x), t, { reduction = "none" }) end,
        function(x, t) return F.binary_cross_entropy_with_logits(x, t) end,
      }) do
        local x = x0:to(dt):requires_grad_(true)
        local l = f(x, t0:to(dt))
        l:sum():backward()
        out[#out + 1] = l:detach()
        out[#out + 1] = x.grad
      end
      return out
    end)
  end
end)

T.test("fused activations, forward and backward, each layout, float32 / float64 / bfloat16", function()
  for _, name in ipairs(names) do
    local x0 = layouts[name]()
    for _, dt in ipairs({ torch.float32, torch.float64, torch.bfloat16 }) do
      serial_vs_parallel("activations " .. name .. " " .. tostring(dt), function()
        local out = {}
        for _, f in ipairs({ F.gelu, function(x) return F.gelu(x, { approximate = "tanh" }) end, F.silu, F.mish, F.softplus,
          F.logsigmoid, function(x) return F.leaky_relu(x, 0.2) end, F.elu, F.hardswish, F.hardsigmoid }) do
          local x = x0:to(dt):requires_grad_(true)
          local y = f(x)
          y:sum():backward()
          out[#out + 1] = y:detach()
          out[#out + 1] = x.grad
        end
        return out
      end)
    end
  end
end)

T.test("reductions over dims: independent outputs split, each output folded as in one pass", function()
  local x, t, cl = layouts.odd(), layouts.transposed(), layouts.channels_last()
  local i = (layouts.odd() * 100):to(torch.int64)
  local h = layouts.narrow():half()
  serial_vs_parallel("reductions", function()
    return { x:sum(4), x:sum(0), x:sum({ 1, 3 }), x:mean(2), x:var(4), x:std(1), x:amax(4), x:amin(0), x:prod(4),
      x:norm(2, 4), x:norm(1, 0), t:sum(0), t:sum(1), t:mean(1), t:var(0), cl:sum({ 2, 3 }), cl:mean(1), cl:amax(1),
      i:sum(4), i:sum(0), i:prod(2), i:gt(0):all(4), i:gt(0):any(0), h:sum(1), h:mean(0), x:sum(), t:var(),
      x:abs():sum(4, { keepdim = true }), torch.count_nonzero(i, 4), x:nansum(3), x:logsumexp(4) }
  end)
end)

T.test("pools split over planes: forward, indices and backward, float32 / float64 / bfloat16", function()
  local F = torch.nn.functional
  local inputs = { plain = torch.randn(16, 24, 31, 33) * 3, channels_last = (torch.randn(16, 24, 31, 33) * 3):contiguous({
    memory_format = torch.channels_last }), slice = (torch.randn(16, 48, 31, 66) * 3):narrow(1, 5, 24):narrow(3, 1, 33) }
  for _, lay in ipairs({ "channels_last", "plain", "slice" }) do
    for _, dt in ipairs({ torch.float32, torch.float64, torch.bfloat16 }) do
      local x0 = inputs[lay]:to(dt)
      serial_vs_parallel("pools " .. lay .. " " .. tostring(dt), function()
        local x = x0:detach():requires_grad_()
        local m, idx = F.max_pool2d(x, 3, 2, 1, 1, true, true)
        local outs = { m, idx, F.avg_pool2d(x, 2), F.avg_pool2d(x, 3, 2, 1, true, false), F.adaptive_avg_pool2d(x, { 5, 7 }),
          F.adaptive_max_pool2d(x, 4), F.max_pool2d(x, 2, 2, 0, 2) }
        local total = outs[1]:sum() + outs[3]:sum() * 2 + outs[4]:sum() * 3 + outs[5]:sum() + outs[6]:sum() + outs[7]:sum()
        total:backward()
        outs[2] = idx
        outs[#outs + 1] = x.grad
        for k, v in ipairs(outs) do outs[k] = v:detach() end
        return outs
      end)
    end
  end
end)

T.test("convolutions (oneDNN split over images and channels, the own kernels over the batch): within float32 rounding of float64, the same every run", function()
  local F = torch.nn.functional
  local function conv(x0, w0, b0, o)
    local x, w, b = x0:detach():requires_grad_(), w0:detach():requires_grad_(), b0:detach():requires_grad_()
    local y = F.conv2d(x, w, b, o.stride, o.padding, o.dilation, o.groups)
    local g = torch.sin(torch.arange(y:numel(), { dtype = y.dtype }):view(y.shape))
    y:backward(g)
    return { y:detach(), x.grad, w.grad, b.grad }
  end
  -- N, C, H, W, O, k and options; the first two are document 000's layers
  local cases = { { 32, 3, 32, 32, 32, 3, {} }, { 32, 32, 15, 15, 64, 3, {} }, { 13, 16, 20, 20, 32, 3, { stride = 2, padding = 1, groups = 2 } },
    { 9, 8, 17, 19, 12, 3, { dilation = 2, padding = 2 } }, { 40, 16, 9, 9, 24, 1, {} }, { 1, 8, 64, 64, 16, 5, { padding = 2 } },
    { 130, 6, 14, 14, 16, 5, {} },
    -- fewer images than threads: split over blocks of channels too (40 and 48: a short last block), and over groups
    { 2, 40, 12, 12, 48, 3, { padding = 1 } }, { 1, 32, 24, 24, 64, 3, { groups = 4, padding = 1 } },
    { 3, 24, 11, 11, 36, 3, { groups = 3 } } }
  local prior = torch.get_num_threads()
  local function check(ci, c, dnnl)
    local N, C, H, W, O, k, o = table.unpack(c)
    local name = string.format("conv %dx%dx%dx%d -> %d k%d%s", N, C, H, W, O, k, dnnl and "" or " (own kernels)")
    local x, w, b = torch.randn(N, C, H, W), torch.randn(O, C // (o.groups or 1), k, k) * 0.2, torch.randn(O)
    if ci % 2 == 0 then x = x:contiguous({ memory_format = torch.channels_last }) end
    torch.set_num_threads(1)
    local ref = conv(x:double(), w:double(), b:double(), o)
    torch.set_num_threads(prior)
    local got, again = on_4_threads(dnnl, function() return conv(x, w, b, o), conv(x, w, b, o) end)
    for i, what in ipairs({ "output", "grad_input", "grad_weight", "grad_bias" }) do
      local scale = ref[i]:abs():max():item() + 1
      local err = (got[i]:double() - ref[i]):abs():max():item()
      T.check(err <= 2e-6 * scale * math.sqrt(C * k * k + N * H * W), string.format("%s %s: %.3g from float64 (scale %.3g)", name, what, err, scale))
      T.check(same_bits(got[i], again[i]), name .. " " .. what .. ": the same in a second run")
    end
  end
  for ci, c in ipairs(cases) do
    check(ci, c, true)
    check(ci, c, false)
  end
  T.raises(function() torch.backends.mkldnn.enabled = 1 end, "torch.backends.mkldnn.enabled must be a boolean, got number")
  T.check(torch.backends.mkldnn.is_available(), "mkldnn available")
end)

T.test("bfloat16 convolutions (oneDNN, and the own kernels): within bfloat16 rounding of float64 on the same values", function()
  local F = torch.nn.functional
  local function conv(x0, w0, b0, g, o)
    local x, w, b = x0:detach():requires_grad_(), w0:detach():requires_grad_(), b0:detach():requires_grad_()
    F.conv2d(x, w, b, o.stride, o.padding, o.dilation, o.groups):backward(g)
    return { F.conv2d(x0, w0, b0, o.stride, o.padding, o.dilation, o.groups), x.grad, w.grad, b.grad }
  end
  -- N, C, H, O, k, options: split over images; over channels (40, 48: a short last block); over groups
  local cases = { { 9, 8, 15, 24, 3, { padding = 1 } }, { 2, 40, 12, 48, 3, { padding = 1 } }, { 3, 24, 11, 36, 3, { groups = 3 } } }
  for ci, c in ipairs(cases) do
    local N, C, H, O, k, o = table.unpack(c)
    local x, w, b = torch.randn(N, C, H, H):bfloat16(), (torch.randn(O, C // (o.groups or 1), k, k) * 0.2):bfloat16(), torch.randn(O):bfloat16()
    if ci == 2 then x = x:contiguous({ memory_format = torch.channels_last }) end
    local y0 = F.conv2d(x:double(), w:double(), b:double(), o.stride, o.padding, o.dilation, o.groups)
    local g = torch.randn(y0.shape):bfloat16()
    local ref = conv(x:double(), w:double(), b:double(), g:double(), o)
    for _, dnnl in ipairs({ true, false }) do
      local name = string.format("bfloat16 conv %dx%dx%dx%d -> %d%s", N, C, H, H, O, dnnl and "" or " (own kernels)")
      local got = on_4_threads(dnnl, conv, x, w, b, g, o)
      for i, what in ipairs({ "output", "grad_input", "grad_weight", "grad_bias" }) do
        local scale = ref[i]:abs():max():item() + 1
        local err = (got[i]:double() - ref[i]):abs():max():item()
        T.check(got[i].dtype == torch.bfloat16 and err <= 2 ^ -7 * scale, string.format("%s %s: %.3g from float64 (scale %.3g)", name, what, err, scale))
      end
    end
  end
end)

T.test("products split over the pool (oneDNN and OpenBLAS; float32, float16, bfloat16): within rounding of float64, the same every run", function()
  local prior = torch.get_num_threads()
  -- m, k, n: wide, tall, skinny, the documents' Linear layers, below the split
  for _, c in ipairs({ { 512, 300, 700 }, { 2000, 64, 17 }, { 3, 5000, 4000 }, { 32, 2304, 256 }, { 128, 784, 32 }, { 20, 30, 40 } }) do
    local m, k, n = table.unpack(c)
    local a, b = torch.randn(m, k), torch.randn(k, n)
    local wide = torch.randn(m, k + 7)
    wide:narrow(1, 0, k):copy_(a)
    torch.set_num_threads(1)
    local ref = a:double():mm(b:double())
    torch.set_num_threads(prior)
    local ab, bb = a:bfloat16(), b:bfloat16()
    local refb = ab:double():mm(bb:double()) -- the bfloat16 products' own reference: the rounded inputs in float64
    local want = { ref, ref, ref * 2 + 0.5, ref, ref, refb, refb * 2 + 0.5 }
    for _, dnnl in ipairs({ true, false }) do
      local name = string.format("%dx%d @ %dx%d%s", m, k, k, n, dnnl and "" or " (OpenBLAS)")
      local got, again = on_4_threads(dnnl, function()
        return { a:mm(b), b:t():mm(a:t()):t(), torch.addmm(torch.ones(m, n), a, b, { beta = 0.5, alpha = 2 }),
          a:half():mm(b:half()):float(), wide:narrow(1, 0, k):mm(b), ab:mm(bb):float(),
          torch.addmm(torch.ones(m, n, { dtype = torch.bfloat16 }), ab, bb, { beta = 0.5, alpha = 2 }):float() }, a:mm(b)
      end)
      for i, g in ipairs(got) do
        -- float16 against the float inputs; bfloat16: its float32 sums, rounded once (2^-8 of the largest)
        local tol = i >= 6 and 2 ^ -8 * (want[i]:abs():max():item() + 1) or (i == 4 and 2e-3 or 2e-6) * math.sqrt(k) * (want[i]:abs():max():item() + 1)
        local err = (g:double() - want[i]):abs():max():item()
        T.check(err <= tol, string.format("%s product %d: %.3g from float64 (tolerance %.3g)", name, i, err, tol))
      end
      T.check(same_bits(got[1], again), name .. ": the same in a second run")
    end
  end
end)

T.test("a DataLoader's workers run convolutions and pools alone (off the pool's thread)", function()
  local F = torch.nn.functional
  local prior = torch.get_num_threads()
  torch.set_num_threads(4)
  local w = torch.randn(16, 3, 3, 3)
  local ds = setmetatable({}, { __index = {
    __len = function() return 8 end,
    __getitem = function(_, i)
      local g = torch.Generator():manual_seed(i)
      local x = torch.randn(12, 3, 40, 40, { generator = g })
      return F.max_pool2d(F.conv2d(x, w, nil, 1, 1), 2)
    end } })
  local got = {}
  for xb in data.DataLoader(ds, { batch_size = 2, num_workers = 2 }) do got[#got + 1] = xb end
  torch.set_num_threads(1)
  local k = 0
  for xb in data.DataLoader(ds, { batch_size = 2 }) do
    k = k + 1
    T.check(torch.allclose(got[k], xb, 1e-5, 1e-5), "batch " .. k .. " as in the main thread")
  end
  torch.set_num_threads(prior)
  T.eq(k, #got, "batches")
end)

T.test("optimizer steps split a large parameter: bitwise the serial steps", function()
  local optim = torch.optim
  local makers = {
    function(ps) return optim.SGD(ps, { lr = 0.1, momentum = 0.9, dampening = 0.1, weight_decay = 0.01 }) end,
    function(ps) return optim.SGD(ps, { lr = 0.1, momentum = 0.9, nesterov = true }) end,
    function(ps) return optim.Adam(ps, { lr = 0.01, weight_decay = 0.1, amsgrad = true }) end,
    function(ps) return optim.AdamW(ps, { lr = 0.01 }) end,
    function(ps) return optim.RMSprop(ps, { lr = 0.01, momentum = 0.5, centered = true }) end,
    function(ps) return optim.Adagrad(ps, { lr = 0.1 }) end,
  }
  local p0, g0 = torch.randn(300001), torch.randn(300001)
  for i, make in ipairs(makers) do
    for _, dt in ipairs({ torch.float32, torch.float64 }) do
      serial_vs_parallel("optimizer " .. i .. " " .. tostring(dt), function()
        local p = p0:to(dt):clone():requires_grad_()
        local opt = make({ p })
        for step = 1, 3 do
          p.grad = g0:to(dt) * step
          opt:step()
        end
        return p:detach()
      end)
    end
  end
end)

T.test("an integer division by zero still raises, wherever the zero is", function()
  local n = 300000
  for _, at in ipairs({ 0, 1000, n // 2, n - 1 }) do
    local b = torch.ones(n, { dtype = torch.int64 })
    b[at] = 0
    local a = torch.arange(n)
    for _, th in ipairs({ 1, 4 }) do
      local prior = torch.get_num_threads()
      torch.set_num_threads(th)
      local ok1, e1 = pcall(torch.remainder, a, b)
      local ok2, e2 = pcall(torch.fmod, a:view(600, 500):t(), b:view(600, 500):t())
      torch.set_num_threads(prior)
      T.check(not ok1 and tostring(e1):find("ZeroDivisionError", 1, true), "remainder, zero at " .. at .. ", " .. th .. " threads")
      T.check(not ok2 and tostring(e2):find("ZeroDivisionError", 1, true), "fmod, zero at " .. at .. ", " .. th .. " threads")
    end
    T.raises(function() torch.floor_divide(a, b) end, "~ZeroDivisionError")
  end
end)

T.test("a DataLoader with workers beside parallel ops", function()
  local prior = torch.get_num_threads()
  local x = torch.randn(64, 40000)
  local ds = data.TensorDataset(x, torch.arange(64))
  local function epoch(workers, threads)
    torch.set_num_threads(threads)
    local out = {}
    for xb, yb in data.DataLoader(ds, { batch_size = 8, num_workers = workers }) do
      out[#out + 1] = (xb:exp() * xb + 1):sum(1)
      out[#out + 1] = yb
    end
    return out
  end
  local want, got = epoch(0, 1), epoch(2, 4)
  torch.set_num_threads(prior)
  T.eq(#got, #want, "batches")
  for i = 1, #want do T.check(same_bits(want[i], got[i]), "batch result " .. i) end
end)

T.test("get_num_threads: the CPUs this process may use by default; set_num_threads sets it", function()
  local p = io.popen("python3 -c 'import os; print(os.environ.get(\"OMP_NUM_THREADS\") or len(os.sched_getaffinity(0)))' 2>/dev/null")
  local want = p and tonumber(p:read("a"))
  if p then p:close() end
  if not want then return T.skip("python3 is not available") end
  T.eq(default_threads, want, "default")
  local prior = torch.get_num_threads()
  torch.set_num_threads(3)
  T.eq(torch.get_num_threads(), 3, "set")
  torch.set_num_threads(prior)
end)
