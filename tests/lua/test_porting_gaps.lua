-- Small things ported scripts use: *_like's memory_format, Tensor:unfold as a view,
-- torch.testing.make_tensor, torch.random.fork_rng, nn.attention.sdpa_kernel and
-- nn.utils.rnn's unpad_sequence / unpack_sequence / invert_permutation.
local T = ...
local CL = { memory_format = torch.channels_last }

local function strides(t) return t:stride() end

T.test("*_like keep a dense input's layout (preserve_format) or take the one asked for", function()
  local x = torch.randn(2, 3, 4, 5):contiguous(CL)
  for _, name in ipairs({ "zeros_like", "ones_like", "empty_like", "rand_like", "randn_like" }) do
    local r = torch[name](x)
    T.eq(strides(r), strides(x), name .. " of a channels-last tensor")
    T.eq(strides(torch[name](x, { memory_format = torch.contiguous_format })), { 60, 20, 5, 1 }, name .. " contiguous_format")
    T.eq(strides(torch[name](torch.randn(2, 3, 4, 5), CL)), strides(x), name .. " channels_last asked")
  end
  T.eq(strides(torch.full_like(x, 2)), strides(x), "full_like")
  T.eq(torch.full_like(x, 2):sum():item(), 240.0, "full_like's values")
  T.eq(torch.ones_like(x):sum():item(), 120.0, "ones_like's values")
  T.eq(torch.zeros_like(x):abs():sum():item(), 0.0, "zeros_like's values")
  T.eq(strides(torch.zeros_like(torch.randn(4, 6):t())), { 1, 6 }, "a transposed input's strides")
  T.eq(strides(torch.zeros_like(torch.randn(3):expand(2, 3))), { 3, 1 }, "an expanded input: contiguous")
  local r = torch.rand_like(x)
  T.check(r:min():item() >= 0 and r:max():item() < 1, "rand_like's range")
  T.raises(function() torch.zeros_like(torch.randn(3), CL) end, "~required rank 4 tensor to use channels_last format")
  T.raises(function() torch.zeros_like(x, { memory_format = 1 }) end, "~memory_format must be a torch.memory_format")
  T.raises(function() torch.zeros_like(x, { pin = true }) end, "~unknown keyword 'pin'")
end)

T.test("the factories' pin_memory=", function()
  if torch.cuda.is_available() then
    for _, t in ipairs({ torch.empty(3, { pin_memory = true }), torch.zeros(2, 2, { pin_memory = true }),
      torch.randn(4, { pin_memory = true }), torch.zeros_like(torch.ones(3), { pin_memory = true }) }) do
      T.eq({ t:is_pinned(), t.device.type }, { true, "cpu" }, "pinned")
    end
    T.eq(torch.zeros(2, 2, { pin_memory = true }):sum():item(), 0.0, "values kept")
  else
    T.raises(function() torch.empty(3, { pin_memory = true }) end, "~pin_memory")
  end
  T.eq(torch.empty(3, { pin_memory = false }):size():totable(), { 3 }, "pin_memory = false")
end)

T.test("clone keeps a dense input's layout (preserve_format) or takes the one asked for", function()
  local x = torch.randn(2, 3, 4, 5):contiguous(CL)
  T.eq(strides(x:clone()), strides(x), "channels-last stays channels-last")
  T.eq(strides(torch.clone(x)), strides(x), "torch.clone")
  T.eq(strides(x:clone({ memory_format = torch.contiguous_format })), { 60, 20, 5, 1 }, "contiguous_format")
  T.eq(strides(torch.randn(4, 6):t():clone()), { 1, 6 }, "a transposed input keeps its strides")
  T.eq(strides(torch.randn(3):expand(2, 3):clone()), { 3, 1 }, "an expanded one comes out contiguous")
  T.eq(x:clone():tolist(), x:tolist(), "values")
  local g = torch.randn(2, 3, 4, 5, { requires_grad = true })
  local c = g:contiguous(CL):clone()
  c:sum():backward()
  T.eq(g.grad:sum():item(), 120.0, "CloneBackward0")
  T.raises(function() x:clone({ memory_fmt = 1 }) end, "~unknown keyword 'memory_fmt'")
  T.raises(function() torch.randn(3):clone(CL) end, "~required rank 4 tensor to use channels_last format")
end)

T.test("Tensor:unfold is a view; overlapping windows add up in the gradient", function()
  local x = torch.arange(8.0)
  local u = x:unfold(0, 3, 2)
  T.eq(u:tolist(), { { 0.0, 1.0, 2.0 }, { 2.0, 3.0, 4.0 }, { 4.0, 5.0, 6.0 } }, "windows")
  T.eq(strides(u), { 2, 1 }, "strides")
  u[0][1] = 10
  T.eq(x[1]:item(), 10.0, "writes go through to the input")
  local m = torch.arange(12.0):reshape(3, 4):unfold(1, 2, 1)
  T.eq(m:size():totable(), { 3, 3, 2 }, "along the last dim")
  T.eq(m[2][1]:tolist(), { 9.0, 10.0 }, "values")
  local x2 = torch.arange(6.0):requires_grad_(true)
  local w = torch.tensor({ { 1.0, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 }, { 10, 11, 12 } })
  ;(x2:unfold(0, 3, 1) * w):sum():backward()
  -- element i is in window k at position i - k: its gradient sums w[k][i - k]
  local want = {}
  for i = 0, 5 do
    local s = 0
    for k = 0, 3 do if i - k >= 0 and i - k < 3 then s = s + w[k][i - k]:item() end end
    want[i + 1] = s
  end
  T.eq(x2.grad:tolist(), want, "gradient")
  T.eq(torch.tensor(5.0):unfold(0, 1, 1):tolist(), { 5.0 }, "a 0-dim tensor")
  T.raises(function() x:unfold(0, 9, 1) end, "~maximum size for tensor at dimension 0 is 8 but size is 9")
end)

T.test("torch.testing.make_tensor", function()
  local mt = torch.testing.make_tensor
  torch.manual_seed(1)
  local f = mt({ 50, 40 }, { dtype = torch.float32 })
  T.eq({ f.dtype, f:size():totable() }, { torch.float32, { 50, 40 } }, "shape and dtype")
  T.check(f:min():item() >= -9 and f:max():item() <= 9 and f:std():item() > 3, "uniform over [-9, 9]")
  local i = mt(200, { dtype = torch.int64, low = -2, high = 2, exclude_zero = true })
  local seen = {}
  for _, v in ipairs(i:tolist()) do seen[v] = true end
  T.eq({ seen[-2], seen[-1], seen[0], seen[1], seen[2] }, { true, true, nil, true, nil }, "integers in [low, high), zero excluded")
  local u = mt(300, { dtype = torch.uint8 })
  T.check(u:min():item() >= 0 and u:max():item() <= 9, "uint8: [0, 10)")
  local n = mt(3, 4, { dtype = torch.float64, noncontiguous = true })
  T.eq({ n:is_contiguous(), n:size():totable(), strides(n) }, { false, { 3, 4 }, { 8, 2 } }, "noncontiguous")
  local c = mt({ 2, 3, 4, 5 }, { dtype = torch.float16, memory_format = torch.channels_last, requires_grad = true })
  T.eq({ c:is_contiguous(CL), c.requires_grad }, { true, true }, "memory_format, requires_grad")
  T.eq(mt({ 4 }, { dtype = torch.complex64 }).dtype, torch.complex64, "complex")
  T.eq(mt({ 4 }, { dtype = torch.bool }).dtype, torch.bool, "bool")
  T.eq(mt(torch.Size({ 2, 2 }), { dtype = torch.float32, low = 1, high = 1 }):tolist(), { { 1.0, 1.0 }, { 1.0, 1.0 } }, "low = high")
  T.raises(function() mt({ 2 }, { dtype = torch.float32, low = 3, high = 1 }) end,
    "~make_tensor: low must be less than or equal to high, but got low=3 and high=1")
  T.raises(function() mt({ 2 }, { dtype = torch.float32, low = 0 / 0 }) end, "~make_tensor: low and high cannot be NaN")
  T.raises(function() mt({ 2 }, {}) end, "~make_tensor: dtype must be given")
  T.raises(function() mt({ -1 }, { dtype = torch.float32 }) end, "~make_tensor: size 1 must be a non-negative integer")
end)

T.test("torch.random and fork_rng", function()
  torch.random.manual_seed(7)
  T.eq(torch.random.initial_seed(), 7, "initial_seed")
  local state = torch.random.get_rng_state()
  local a = torch.rand(3):tolist()
  torch.random.set_rng_state(state)
  T.eq(torch.rand(3):tolist(), a, "get/set_rng_state")
  torch.manual_seed(0)
  do
    local _ <close> = torch.random.fork_rng()
    torch.rand(100)
  end
  local after = torch.rand(2):tolist()
  torch.manual_seed(0)
  T.eq(torch.rand(2):tolist(), after, "draws inside fork_rng leave the generator as it was")
  torch.manual_seed(0)
  local got = torch.random.fork_rng({ devices = {} }, function() return torch.rand(1):item() end)
  T.eq(torch.rand(2):tolist(), after, "function form")
  T.check(type(got) == "number", "the function's result comes back")
  torch.manual_seed(0)
  T.raises(function() torch.random.fork_rng(function() torch.rand(5); error("boom") end) end, "~boom")
  T.eq(torch.rand(2):tolist(), after, "restored after an error")
  torch.manual_seed(0)
  torch.random.fork_rng({ enabled = false }, function() torch.rand(5) end)
  T.check(torch.rand(2):tolist()[1] ~= after[1], "enabled = false keeps the draws")
end)

T.test("nn.attention.sdpa_kernel chooses the kernels and restores them", function()
  local A, cuda = nn.attention, torch.backends.cuda
  T.eq({ A.SDPBackend.MATH, A.SDPBackend.FLASH_ATTENTION, A.SDPBackend.EFFICIENT_ATTENTION, A.SDPBackend.CUDNN_ATTENTION },
    { 0, 1, 2, 3 }, "SDPBackend")
  do
    local _ <close> = A.sdpa_kernel({ A.SDPBackend.MATH, A.SDPBackend.EFFICIENT_ATTENTION })
    T.eq({ cuda.math_sdp_enabled(), cuda.mem_efficient_sdp_enabled(), cuda.flash_sdp_enabled(), cuda.cudnn_sdp_enabled() },
      { true, true, false, false }, "inside")
  end
  T.eq({ cuda.math_sdp_enabled(), cuda.flash_sdp_enabled() }, { true, true }, "restored")
  torch.manual_seed(0)
  local q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
  local want = F.scaled_dot_product_attention(q, k, v)
  local got = A.sdpa_kernel(A.SDPBackend.FLASH_ATTENTION, function() return F.scaled_dot_product_attention(q, k, v) end)
  T.eq(got:tolist(), want:tolist(), "the math kernel runs whatever is chosen")
  T.raises(function() A.sdpa_kernel({ 7 }) end, "~sdpa_kernel: backend 1 must be an nn.attention.SDPBackend, got 7")
  T.raises(function() A.sdpa_kernel({}) end, "~sdpa_kernel: backends must not be empty")
  T.raises(function() A.sdpa_kernel(A.SDPBackend.MATH, { priority = true }) end, "~unknown keyword 'priority'")
end)

T.test("nn.utils.rnn: unpad_sequence, unpack_sequence, invert_permutation", function()
  local R = nn.utils.rnn
  local seqs = { torch.tensor({ 1.0, 2, 3 }), torch.tensor({ 4.0 }), torch.tensor({ 5.0, 6 }) }
  for _, bf in ipairs({ false, true }) do
    local padded = R.pad_sequence(seqs, { batch_first = bf })
    local back = R.unpad_sequence(padded, torch.tensor({ 3, 1, 2 }), { batch_first = bf })
    T.eq({ back[1]:tolist(), back[2]:tolist(), back[3]:tolist() }, { { 1.0, 2.0, 3.0 }, { 4.0 }, { 5.0, 6.0 } }, "unpad, batch_first " .. tostring(bf))
  end
  local packed = R.pack_sequence(seqs, { enforce_sorted = false })
  local un = R.unpack_sequence(packed)
  T.eq({ un[1]:tolist(), un[2]:tolist(), un[3]:tolist() }, { { 1.0, 2.0, 3.0 }, { 4.0 }, { 5.0, 6.0 } }, "unpack, original order")
  T.eq(R.invert_permutation(torch.tensor({ 2, 0, 3, 1 })):tolist(), { 1, 3, 0, 2 }, "invert_permutation")
  T.eq(R.invert_permutation(nil), nil, "nil stays nil")
  T.raises(function() R.unpad_sequence(torch.zeros(3, 2), { 1, 2, 3 }) end, "~unpad_sequence: 3 lengths for a batch of 2")
  T.raises(function() R.unpack_sequence(torch.zeros(2)) end, "~unpack_sequence: expected a PackedSequence")
end)

if torch.cuda.is_available() then
  T.test("on CUDA: *_like layouts, unfold, make_tensor", function()
    local x = torch.randn(2, 3, 4, 5, { device = "cuda" }):contiguous(CL)
    T.eq(strides(torch.zeros_like(x)), strides(x), "zeros_like")
    T.eq(torch.ones_like(x).device.type, "cuda", "device kept")
    local u = torch.arange(8.0, { device = "cuda" }):unfold(0, 3, 2)
    T.eq(u:cpu():tolist(), { { 0.0, 1.0, 2.0 }, { 2.0, 3.0, 4.0 }, { 4.0, 5.0, 6.0 } }, "unfold")
    T.eq(torch.testing.make_tensor({ 3 }, { dtype = torch.float32, device = "cuda" }).device.type, "cuda", "make_tensor")
  end)

  -- cuDNN's deterministic engines only: the weight gradients of repeated runs are equal bit for bit
  T.test("on CUDA: torch.backends.cudnn.deterministic and use_deterministic_algorithms", function()
    torch.manual_seed(0)
    for _, set in ipairs({ function(on) torch.backends.cudnn.deterministic = on end,
      function(on) torch.use_deterministic_algorithms(on, { warn_only = on }) end }) do -- off leaves warn_only off too
      set(true)
      for _, dt in ipairs({ torch.float32, torch.float16 }) do
        local x = torch.randn(64, 64, 28, 28, { device = "cuda", dtype = dt })
        local conv = nn.Conv2d(64, 64, 3, { padding = 1 }):to("cuda"):to(dt)
        local first
        for r = 1, 3 do
          conv:zero_grad()
          conv(x):square():mean():backward()
          if r == 1 then first = conv.weight.grad:clone() else T.check(torch.equal(conv.weight.grad, first), "repeat " .. r) end
        end
      end
      set(false)
    end
  end)
else
  T.skip("no GPU", 5)
end
