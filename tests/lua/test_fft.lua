-- torch.fft against a naive O(n^2) DFT in plain Lua: every transform, the three norms, odd and
-- even lengths, n/s cutting and padding, several dims, real and complex inputs in complex64 and
-- complex128; gradients against float64 central differences (complex_ref.lua's gradcheck).
local T = ...
local C = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "complex_ref.lua")
local F = torch.fft

-- the DFT of a list of {re, im} (sign -1 forward, +1 inverse), unnormalized
local function dft(v, sign)
  local n, out = #v, {}
  for k = 0, n - 1 do
    local s = { 0, 0 }
    for j = 0, n - 1 do
      local a = sign * 2 * math.pi * j * k / n
      s = C.add(s, C.mul(v[j + 1], { math.cos(a), math.sin(a) }))
    end
    out[k + 1] = s
  end
  return out
end

local function pairs_of(t) -- a 1-D tensor as {re, im} pairs
  local v = C.of(t:is_complex() and t or t:to(torch.complex128))
  return v
end

local function resize(v, n)
  local r = {}
  for i = 1, n do r[i] = v[i] or { 0, 0 } end
  return r
end

local function scaled(v, s) return C.map(v, function(z) return { z[1] * s, z[2] * s } end) end

local function norm_scale(norm, n, inverse)
  if norm == "ortho" then return 1 / math.sqrt(n) end
  if (norm == "forward") ~= inverse then return 1 / n end
  return 1
end

T.test("fft, ifft: lengths, n, norms", function()
  for _, dt in ipairs({ torch.complex64, torch.complex128 }) do
    local tol = dt == torch.complex64 and 2e-5 or 1e-11
    for _, len in ipairs({ 1, 2, 5, 6, 7, 8, 12, 13, 30 }) do
      torch.manual_seed(len)
      local x = torch.randn(len, { dtype = dt })
      local v = pairs_of(x)
      for _, norm in ipairs({ "backward", "ortho", "forward" }) do
        for _, n in ipairs({ len, len + 3, math.max(1, len - 1) }) do
          local want = scaled(dft(resize(v, n), -1), norm_scale(norm, n, false))
          T.near(C.of(F.fft(x, n, 0, norm)), want, tol, string.format("fft %s n=%d len=%d %s", tostring(dt), n, len, norm))
          local iwant = scaled(dft(resize(v, n), 1), norm_scale(norm, n, true))
          T.near(C.of(F.ifft(x, { n = n, norm = norm })), iwant, tol, "ifft")
        end
      end
    end
  end
  local r = torch.randn(6, { dtype = torch.float64 })
  T.near(C.of(F.fft(r)), dft(pairs_of(r), -1), 1e-12, "real input")
  T.eq(tostring(F.fft(torch.arange(4)).dtype), "torch.complex64", "integer input")
  T.eq(tostring(F.fft(torch.ones(4)).dtype), "torch.complex64")
end)

T.test("fft along a dim of a non-contiguous tensor", function()
  torch.manual_seed(1)
  local x = torch.randn(5, 4, { dtype = torch.complex128 }):t() -- [4, 5]
  local y = F.fft(x, nil, 0)
  for j = 0, 4 do T.near(C.of(y[":, " .. j]), dft(pairs_of(x[":, " .. j]), -1), 1e-12, "column " .. j) end
  local z = F.ifft(x, nil, -1, "ortho")
  for i = 0, 3 do T.near(C.of(z[i]), scaled(dft(pairs_of(x[i]), 1), 1 / math.sqrt(5)), 1e-12, "row " .. i) end
end)

T.test("rfft, irfft, hfft, ihfft", function()
  for _, len in ipairs({ 1, 4, 5, 8, 9 }) do
    torch.manual_seed(10 + len)
    local x = torch.randn(len, { dtype = torch.float64 })
    for _, norm in ipairs({ "backward", "ortho", "forward" }) do
      local full = scaled(dft(pairs_of(x), -1), norm_scale(norm, len, false))
      local half = {}
      for k = 1, len // 2 + 1 do half[k] = full[k] end
      local r = F.rfft(x, nil, -1, norm)
      T.near(C.of(r), half, 1e-12, "rfft len " .. len .. " " .. norm)
      T.near(C.of(F.irfft(r, len, -1, norm)), x:tolist(), 1e-12, "irfft inverts rfft")
      local ih = F.ihfft(x, nil, -1, norm)
      local want = scaled(C.map(half, C.conj), norm_scale(norm, len, true) / norm_scale(norm, len, false))
      T.near(C.of(ih), want, 1e-12, "ihfft")
      T.near(C.of(F.hfft(ih, len, -1, norm)), x:tolist(), 1e-12, "hfft inverts ihfft")
    end
  end
  -- irfft of a spectrum that is not Hermitian: the imaginary parts of bin 0 (and n/2) are ignored
  local X = torch.tensor({ torch.complex_number(1, 5), torch.complex_number(2, 1), torch.complex_number(3, 7) }, { dtype = torch.complex128 })
  local full = { { 1, 0 }, { 2, 1 }, { 3, 0 }, { 2, -1 } }
  T.near(C.of(F.irfft(X)), C.map(scaled(dft(full, 1), 0.25), function(z) return z[1] end), 1e-12, "irfft default n, edge bins")
  T.near(C.of(F.irfft(X, 5)), C.map(scaled(dft({ { 1, 0 }, { 2, 1 }, { 3, 7 }, { 3, -7 }, { 2, -1 } }, 1), 0.2),
    function(z) return z[1] end), 1e-12, "irfft odd n")
  T.raises(function() F.rfft(X) end, "~rfft expects a real input tensor, but got ComplexDouble")
  T.raises(function() F.fft(torch.ones(3), nil, 0, "bad") end, '~Invalid normalization mode: "bad"')
  T.raises(function() F.fft(torch.ones(3), nil, 2) end, "~Dimension out of range")
end)

T.test("fft2, fftn, rfftn, irfftn", function()
  torch.manual_seed(3)
  local x = torch.randn(3, 4, 5, { dtype = torch.complex128 })
  local function ref2(t, sign, scale) -- DFT over the last two dims of a [a, b] slice
    local rows = {}
    for i = 0, t:size(0) - 1 do rows[i + 1] = dft(pairs_of(t[i]), sign) end
    local out = {}
    for i = 1, #rows do out[i] = {} end
    for j = 1, #rows[1] do
      local col = {}
      for i = 1, #rows do col[i] = rows[i][j] end
      local c = dft(col, sign)
      for i = 1, #rows do out[i][j] = { c[i][1] * scale, c[i][2] * scale } end
    end
    return out
  end
  local y = F.fft2(x)
  for b = 0, 2 do T.near(C.of(y[b]), ref2(x[b], -1, 1), 1e-11, "fft2 batch " .. b) end
  local z = F.ifft2(x, nil, nil, "ortho")
  for b = 0, 2 do T.near(C.of(z[b]), ref2(x[b], 1, 1 / math.sqrt(20)), 1e-11, "ifft2 ortho") end
  T.near(C.of(F.fftn(x, nil, { 1, 2 })), C.of(y), 1e-11, "fftn over two dims")
  local all = F.fftn(x)
  T.near(C.of(all), C.of(F.fft(F.fft(F.fft(x, nil, 0), nil, 1), nil, 2)), 1e-11, "fftn over every dim")
  T.near(C.of(F.ifftn(all)), C.of(x), 1e-11, "ifftn inverts")
  T.eq(F.fftn(x, { 2, 6 }):size():totable(), { 3, 2, 6 }, "fftn s cuts and pads the last dims")
  T.eq(F.fft2(x, { s = { 2, 2 }, norm = "forward" }):size():totable(), { 3, 2, 2 }, "keywords")
  local r = x.real:clone()
  local rr = F.rfftn(r)
  T.eq(rr:size():totable(), { 3, 4, 3 }, "rfftn keeps the last dim's half")
  T.near(C.of(rr), C.of(F.fftn(r)[":, :, :3"]), 1e-11, "rfftn = fftn's first half")
  T.near(C.of(F.irfftn(rr, r:size())), r:tolist(), 1e-11, "irfftn inverts")
  T.near(C.of(F.irfft2(F.rfft2(r), { 4, 5 })), r:tolist(), 1e-11, "irfft2 inverts rfft2")
end)

T.test("fftfreq, rfftfreq, fftshift, ifftshift", function()
  T.near(C.of(F.fftfreq(5)), { 0, 0.2, 0.4, -0.4, -0.2 }, 1e-7)
  T.near(C.of(F.fftfreq(4, 0.5)), { 0, 0.5, -1, -0.5 }, 1e-7)
  T.near(C.of(F.rfftfreq(5, 2)), { 0, 0.1, 0.2 }, 1e-7)
  T.eq(tostring(F.fftfreq(4, { dtype = torch.float64 }).dtype), "torch.float64")
  T.eq(C.of(F.fftshift(torch.arange(5))), { 3, 4, 0, 1, 2 })
  T.eq(C.of(F.ifftshift(torch.arange(5))), { 2, 3, 4, 0, 1 })
  T.eq(C.of(F.ifftshift(F.fftshift(torch.arange(6):view(2, 3)))), { { 0, 1, 2 }, { 3, 4, 5 } })
  T.eq(C.of(F.fftshift(torch.arange(6):view(2, 3), 1)), { { 2, 0, 1 }, { 5, 3, 4 } })
end)

T.test("gradients", function()
  local cg = C.gradcheck(T)
  torch.manual_seed(9)
  local z, r = torch.randn(5, { dtype = torch.complex128 }), torch.randn(6, { dtype = torch.float64 })
  local m = torch.randn(3, 4, { dtype = torch.complex128 })
  for _, norm in ipairs({ "backward", "ortho", "forward" }) do
    cg("fft " .. norm, function(a) return F.fft(a, nil, -1, norm) end, { z })
    cg("ifft n=7 " .. norm, function(a) return F.ifft(a, 7, -1, norm) end, { z })
    cg("fft n=3 real " .. norm, function(a) return F.fft(a, 3, -1, norm) end, { r })
    cg("rfft " .. norm, function(a) return F.rfft(a, nil, -1, norm) end, { r })
    cg("rfft odd " .. norm, function(a) return F.rfft(a, 5, -1, norm) end, { r })
    cg("irfft even " .. norm, function(a) return F.irfft(a, 8, -1, norm) end, { z })
    cg("irfft odd " .. norm, function(a) return F.irfft(a, 9, -1, norm) end, { z })
    cg("hfft " .. norm, function(a) return F.hfft(a, nil, -1, norm) end, { z })
    cg("ihfft " .. norm, function(a) return F.ihfft(a, nil, -1, norm) end, { r })
    cg("fft2 " .. norm, function(a) return F.fft2(a, nil, nil, norm) end, { m })
    cg("rfftn " .. norm, function(a) return F.rfftn(a, nil, nil, norm) end, { m.real:clone() })
    cg("irfftn " .. norm, function(a) return F.irfftn(a, { 3, 5 }, nil, norm) end, { m })
  end
  cg("fftshift", function(a) return F.fftshift(F.fft(a)) end, { z })
end)

T.test("complex64 through KissFFT", function()
  torch.manual_seed(4)
  local x = torch.randn(2, 1000, { dtype = torch.complex64 })
  local want = F.fft(x:cdouble())
  local got = F.fft(x)
  T.near((got:cdouble() - want):abs():max():item() / want:abs():max():item(), 0, 1e-5, "relative error of a 1000-point transform")
end)

T.test("stft, istft", function()
  torch.manual_seed(11)
  local x = torch.randn(40, { dtype = torch.float64 })
  local n_fft, hop = 8, 3
  local w = torch.hann_window(n_fft, { dtype = torch.float64 })
  local s = torch.stft(x, n_fft, { hop_length = hop, window = w, center = false, return_complex = true })
  local T_ = (40 - n_fft) // hop + 1
  T.eq(s:size():totable(), { n_fft // 2 + 1, T_ }, "shape")
  local X, W = x:tolist(), w:tolist()
  for t = 0, T_ - 1, 4 do
    local frame = {}
    for k = 1, n_fft do frame[k] = { X[t * hop + k] * W[k], 0 } end
    local want = dft(frame, -1)
    local col = C.of(s[":, " .. t])
    for k = 1, n_fft // 2 + 1 do T.near(col[k], want[k], 1e-12, "frame " .. t .. " bin " .. k - 1) end
  end
  -- center: reflect padding by n_fft // 2
  local sc = torch.stft(x, n_fft, { hop_length = hop, window = w, return_complex = true })
  local xp = torch.cat({ x["1:5"]:flip(0), x, x["-5:-1"]:flip(0) })
  T.near(C.of(sc), C.of(torch.stft(xp, n_fft, { hop_length = hop, window = w, center = false, return_complex = true })), 1e-12, "reflect padding")
  local y = torch.istft(sc, n_fft, { hop_length = hop, window = w, length = 40 })
  T.near(y:tolist(), x:tolist(), 1e-10, "istft inverts stft")
  local sn = torch.stft(x:view(2, 20), n_fft, { hop_length = 2, window = w, normalized = true, return_complex = true })
  T.eq(sn:size():totable(), { 2, 5, 11 }, "batched")
  T.near(C.of(torch.istft(sn, n_fft, { hop_length = 2, window = w, normalized = true, length = 20 })), x:view(2, 20):tolist(), 1e-10, "batched, normalized round trip")
  local two = torch.stft(x, n_fft, { hop_length = hop, window = w, onesided = false, return_complex = true })
  T.eq(two:size(0), n_fft, "onesided=false")
  T.near(C.of(torch.istft(two, n_fft, { hop_length = hop, window = w, onesided = false, length = 40 })), x:tolist(), 1e-10)
  T.raises(function() torch.stft(x, n_fft) end, "~stft requires the return_complex parameter be given for real inputs")
  T.raises(function() torch.istft(x, n_fft) end, "~istft requires a complex-valued input tensor")
  local cg = C.gradcheck(T)
  cg("stft", function(a) return torch.stft(a, 4, { hop_length = 2, window = torch.hann_window(4, { dtype = torch.float64 }), return_complex = true }) end,
    { torch.randn(10, { dtype = torch.float64 }) })
  cg("istft", function(a) return torch.istft(a, 4, { hop_length = 1, window = torch.hann_window(4, { dtype = torch.float64 }), length = 6 }) end,
    { torch.stft(torch.randn(6, { dtype = torch.float64 }), 4, { hop_length = 1, window = torch.hann_window(4, { dtype = torch.float64 }), return_complex = true }) })
end)

-- ---- on a GPU (cuFFT): every transform against the CPU's, values and gradients (C.devcheck) ----

T.test("transforms on a GPU against the CPU", function()
  if not torch.cuda.is_available() then return T.skip("no GPU") end
  local dc = C.devcheck(T)
  local norms = { "backward", "ortho", "forward" }
  for _, prec in ipairs({ { torch.float32, torch.complex64, 1e-4 }, { torch.float64, torch.complex128, 1e-10 } }) do
    local rdt, cdt, tol = prec[1], prec[2], prec[3]
    local p = tostring(cdt) .. " "
    torch.manual_seed(20)
    for _, len in ipairs({ 1, 2, 5, 8, 9, 12, 13, 64, 97, 1000 }) do
      local z, r = torch.randn(3, len, { dtype = cdt }), torch.randn(3, len, { dtype = rdt })
      local zt = torch.randn(len, 3, { dtype = cdt }):t() -- a strided transform dim
      for _, norm in ipairs(norms) do
        local s = string.format("len %d %s", len, norm)
        dc(p .. "fft " .. s, function(a) return F.fft(a, nil, -1, norm) end, { z }, tol)
        dc(p .. "ifft " .. s, function(a) return F.ifft(a, nil, -1, norm) end, { zt }, tol)
        dc(p .. "fft n+3 " .. s, function(a) return F.fft(a, len + 3, -1, norm) end, { r }, tol)
        dc(p .. "ifft n-1 dim 0 " .. s, function(a) return F.ifft(a, math.max(1, len - 1), 1, norm) end, { zt }, tol)
        dc(p .. "rfft " .. s, function(a) return F.rfft(a, nil, -1, norm) end, { r }, tol)
        dc(p .. "ihfft " .. s, function(a) return F.ihfft(a, nil, -1, norm) end, { r }, tol)
        local half = F.rfft(r, nil, -1, norm)
        dc(p .. "irfft " .. s, function(a) return F.irfft(a, len, -1, norm) end, { half }, tol)
        dc(p .. "irfft odd/even n " .. s, function(a) return F.irfft(a, len + 1, -1, norm) end, { half }, tol)
        dc(p .. "hfft " .. s, function(a) return F.hfft(a, len, -1, norm) end, { half }, tol)
      end
    end
    local x3 = torch.randn(4, 6, 5, { dtype = cdt })
    local r3 = torch.randn(4, 6, 5, { dtype = rdt })
    for _, norm in ipairs(norms) do
      dc(p .. "fft2 " .. norm, function(a) return F.fft2(a, nil, nil, norm) end, { x3 }, tol)
      dc(p .. "ifft2 s " .. norm, function(a) return F.ifft2(a, { 3, 7 }, nil, norm) end, { x3 }, tol)
      dc(p .. "fftn " .. norm, function(a) return F.fftn(a, nil, nil, norm) end, { x3 }, tol)
      dc(p .. "ifftn dims 0, 2 " .. norm, function(a) return F.ifftn(a, nil, { 0, 2 }, norm) end, { x3:transpose(0, 2) }, tol)
      dc(p .. "fftn 1 dim " .. norm, function(a) return F.fftn(a, nil, { 1 }, norm) end, { x3 }, tol)
      dc(p .. "rfft2 " .. norm, function(a) return F.rfft2(a, nil, nil, norm) end, { r3 }, tol)
      dc(p .. "rfftn " .. norm, function(a) return F.rfftn(a, nil, nil, norm) end, { r3 }, tol)
      dc(p .. "irfft2 " .. norm, function(a) return F.irfft2(a, { 6, 5 }, nil, norm) end, { F.rfft2(r3) }, tol)
      dc(p .. "irfftn " .. norm, function(a) return F.irfftn(a, { 4, 6, 8 }, nil, norm) end, { F.rfftn(r3) }, tol)
      dc(p .. "irfftn odd " .. norm, function(a) return F.irfftn(a, { 4, 6, 9 }, nil, norm) end, { F.rfftn(r3) }, tol)
    end
    dc(p .. "fftshift, ifftshift", function(a) return F.ifftshift(F.fftshift(F.fft(a), { 0, 1 }), 1) end, { x3 }, tol)
    dc(p .. "a long transform", function(a) return F.fft(a) end, { torch.randn(2, 30030, { dtype = cdt }) }, tol)
    dc(p .. "a long prime transform", function(a) return F.ifft(a) end, { torch.randn(4099, { dtype = cdt }) }, tol)
    local w = torch.hann_window(8, { dtype = rdt })
    dc(p .. "stft", function(a, win) return torch.stft(a, 8, { hop_length = 3, window = win, return_complex = true }) end,
      { torch.randn(2, 50, { dtype = rdt }), w }, tol)
    local spec = torch.stft(torch.randn(50, { dtype = rdt }), 8, { hop_length = 2, window = w, return_complex = true })
    dc(p .. "istft", function(a, win) return torch.istft(a, 8, { hop_length = 2, window = win, length = 50 }) end, { spec, w }, tol)
  end
  local g = F.fft(torch.randn(8):cuda())
  T.eq({ g.device.type, tostring(g.dtype) }, { "cuda", "torch.complex64" }, "fft of a real CUDA tensor stays there")
end)
