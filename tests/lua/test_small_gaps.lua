-- hfft2 / hfftn / ihfft2 / ihfftn against a plain Lua DFT in float64 (gradients by float64 finite
-- differences); F.conv_tbc, F.adaptive_max_pool3d_with_indices, nn.init.eye / dirac; storages
-- (UntypedStorage, TypedStorage, the legacy classes) sharing memory with tensors; torch.cuda's
-- arch list, capture query, pool handle and peer access. A CUDA section runs where a GPU is.
local T = ...
local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local C = dofile(here .. "complex_ref.lua")
local gradcheck = dofile(here .. "gradcheck.lua")(T)
local F = torch.nn.functional
local f64, c128 = { dtype = torch.float64 }, { dtype = torch.complex128 }

-- every 0-based multi-index of shape, in row-major order
local function indices(shape)
  local out, k = {}, {}
  local function rec(d)
    if d > #shape then out[#out + 1] = table.move(k, 1, #k, 1, {}); return end
    for i = 0, shape[d] - 1 do k[d] = i; rec(d + 1) end
  end
  rec(1)
  return out
end

local function flat_at(values, shape, k) -- values: row-major list; nil outside shape
  local f = 0
  for d = 1, #shape do
    if k[d] >= shape[d] then return nil end
    f = f * shape[d] + k[d]
  end
  return values[f + 1]
end

local function prod(s) local n = 1 for _, v in ipairs(s) do n = n * v end return n end

local function scale(norm, n, inverse)
  if norm == "ortho" then return 1 / math.sqrt(n) end
  if (norm == "forward") ~= inverse then return 1 / n end
  return 1
end

-- sum over the multi-indices p of value(p) e^{sign 2 pi i q.p/s}, a complex {re, im}
local function dft_at(q, points, s, sign, value)
  local acc = { 0, 0 }
  for _, p in ipairs(points) do
    local ph = 0
    for i = 1, #s do ph = ph + q[i] * p[i] / s[i] end
    local a = sign * 2 * math.pi * ph
    acc = C.add(acc, C.mul(value(p), { math.cos(a), math.sin(a) }))
  end
  return acc
end

-- hfftn over all dims of x (complex, shape xs), output shape s: Re sum_k X(k) e^{-2 pi i j.k/s}
-- with X the Hermitian extension (last dim) of x cut or zero-padded to s[1..d-1] x (s[d]//2 + 1)
local function ref_hfftn(x, s, norm)
  local xs, vals = x:size():totable(), C.of(x:reshape(-1))
  local d, half = #s, s[#s] // 2 + 1
  local function xp(k)
    if k[d] >= half then return { 0, 0 } end
    return flat_at(vals, xs, k) or { 0, 0 }
  end
  local function X(k)
    if k[d] < half then return xp(k) end
    local m = {}
    for i = 1, d - 1 do m[i] = (s[i] - k[i]) % s[i] end
    m[d] = s[d] - k[d]
    return C.conj(xp(m))
  end
  local ks, out, sc = indices(s), {}, scale(norm, prod(s), false)
  for _, j in ipairs(ks) do out[#out + 1] = dft_at(j, ks, s, -1, X)[1] * sc end
  return out
end

-- ihfftn over all dims of x (real), sizes s: the first s[d]//2 + 1 bins of the inverse DFT
local function ref_ihfftn(x, s, norm)
  local xs, vals = x:size():totable(), x:reshape(-1):tolist()
  local d = #s
  local js, out, sc = indices(s), {}, scale(norm, prod(s), true)
  local kshape = table.move(s, 1, d, 1, {})
  kshape[d] = s[d] // 2 + 1
  local function v(j) return { flat_at(vals, xs, j) or 0, 0 } end
  for _, k in ipairs(indices(kshape)) do
    local acc = dft_at(k, js, s, 1, v)
    out[#out + 1] = { acc[1] * sc, acc[2] * sc }
  end
  return out
end

local norms = { "backward", "ortho", "forward" }

T.test("hfft2, hfftn against a plain DFT", function()
  torch.manual_seed(1)
  local x2, x3 = torch.randn(3, 4, c128), torch.randn(2, 3, 3, c128)
  for _, norm in ipairs(norms) do
    local y = torch.fft.hfft2(x2, nil, nil, norm)
    T.eq(y:size():totable(), { 3, 6 }, "hfft2 shape: last dim 2 * (4 - 1)")
    T.eq(tostring(y.dtype), "torch.float64")
    T.near(y:reshape(-1):tolist(), ref_hfftn(x2, { 3, 6 }, norm), 1e-10, "hfft2 " .. norm)
    T.near(torch.fft.hfft2(x2, { 4, 5 }, nil, norm):reshape(-1):tolist(), ref_hfftn(x2, { 4, 5 }, norm), 1e-10, "hfft2 s padded/odd " .. norm)
    T.near(torch.fft.hfft2(x2, { norm = norm, s = { 2, 3 } }):reshape(-1):tolist(), ref_hfftn(x2, { 2, 3 }, norm), 1e-10, "hfft2 s cut " .. norm)
    T.near(torch.fft.hfftn(x3, nil, nil, norm):reshape(-1):tolist(), ref_hfftn(x3, { 2, 3, 4 }, norm), 1e-10, "hfftn 3-D " .. norm)
  end
  -- s of -1: that dim's input size; dim subsets: the batch dim left alone
  T.near(torch.fft.hfftn(x2, { -1, 7 }):reshape(-1):tolist(), ref_hfftn(x2, { 3, 7 }), 1e-10, "s = -1")
  local sub = torch.fft.hfftn(x3, nil, { 1, 2 })
  T.eq(sub:size():totable(), { 2, 3, 4 })
  for b = 0, 1 do T.near(sub[b]:reshape(-1):tolist(), ref_hfftn(x3[b], { 3, 4 }), 1e-10, "hfftn dim={1,2} batch " .. b) end
  local last = torch.fft.hfftn(x2, { 5 })
  for r = 0, 2 do T.near(last[r]:tolist(), ref_hfftn(x2[r], { 5 }), 1e-10, "hfftn s of one dim: the last") end
  -- hfft2 is hfftn over dims (-2, -1); a real input is taken as complex
  T.near(torch.fft.hfft2(x3):reshape(-1):tolist(), torch.fft.hfftn(x3, nil, { -2, -1 }):reshape(-1):tolist(), 1e-12, "hfft2 = hfftn on the last two")
  local r = torch.randn(3, 4, f64)
  T.near(torch.fft.hfft2(r):reshape(-1):tolist(), ref_hfftn(r:to(torch.complex128), { 3, 6 }), 1e-10, "real input")
  T.eq(tostring(torch.fft.hfft2(torch.randn(2, 3)).dtype), "torch.float32")
end)

T.test("ihfft2, ihfftn against a plain DFT", function()
  torch.manual_seed(2)
  local x2, x3 = torch.randn(3, 5, f64), torch.randn(2, 3, 4, f64)
  for _, norm in ipairs(norms) do
    local y = torch.fft.ihfft2(x2, nil, nil, norm)
    T.eq(y:size():totable(), { 3, 3 }, "ihfft2 shape: 5 // 2 + 1")
    T.eq(tostring(y.dtype), "torch.complex128")
    T.near(C.of(y:reshape(-1)), ref_ihfftn(x2, { 3, 5 }, norm), 1e-10, "ihfft2 " .. norm)
    T.near(C.of(torch.fft.ihfft2(x2, { 4, 6 }, nil, norm):reshape(-1)), ref_ihfftn(x2, { 4, 6 }, norm), 1e-10, "ihfft2 s " .. norm)
    T.near(C.of(torch.fft.ihfftn(x3, { norm = norm }):reshape(-1)), ref_ihfftn(x3, { 2, 3, 4 }, norm), 1e-10, "ihfftn " .. norm)
  end
  local sub = torch.fft.ihfftn(x3, { 2, 3 }, { 0, 2 })
  T.eq(sub:size():totable(), { 2, 3, 2 })
  for m = 0, 2 do
    T.near(C.of(sub[":, " .. m]:reshape(-1)), ref_ihfftn(x3[":, " .. m], { 2, 3 }), 1e-10, "ihfftn dims 0, 2 column " .. m)
  end
  -- inverse pairs: hfftn(ihfftn(x), s) = x
  for _, norm in ipairs(norms) do
    T.near(torch.fft.hfftn(torch.fft.ihfftn(x3, nil, nil, norm), { 2, 3, 4 }, nil, norm):reshape(-1):tolist(),
      x3:reshape(-1):tolist(), 1e-12, "hfftn inverts ihfftn " .. norm)
  end
  T.raises(function() torch.fft.ihfft2(torch.randn(2, 2, c128)) end, "~ihfft2 expects a real input tensor")
  T.raises(function() torch.fft.hfftn(x3, nil, nil, "bad") end, 'Invalid normalization mode: "bad"')
  T.raises(function() torch.fft.ihfftn(x3, { 2, 3 }, { 0 }) end, "When given, dim and shape arguments must have the same length")
  T.raises(function() torch.fft.hfft2(x2, nil, { 0, 5 }) end, "~Dimension out of range")
  T.raises(function() torch.fft.hfftn(x2, { 3, 4 }, { norm = "ortho", bad = 1 }) end, "~bad")
end)

T.test("hfftn, ihfftn gradients", function()
  torch.manual_seed(3)
  local re, im = torch.randn(3, 3, f64), torch.randn(3, 3, f64)
  local r = torch.randn(3, 4, f64)
  for _, norm in ipairs(norms) do
    gradcheck("hfft2 " .. norm, function(a, b) return torch.fft.hfft2(torch.complex(a, b), nil, nil, norm) end, { re, im })
    gradcheck("hfftn s " .. norm, function(a, b) return torch.fft.hfftn(torch.complex(a, b), { 4, 5 }, nil, norm) end, { re, im })
    gradcheck("ihfft2 " .. norm, function(a) return torch.view_as_real(torch.fft.ihfft2(a, nil, nil, norm)) end, { r })
    gradcheck("ihfftn s " .. norm, function(a) return torch.view_as_real(torch.fft.ihfftn(a, { 2, 5 }, nil, norm)) end, { r })
  end
end)

T.test("F.conv_tbc, F.adaptive_max_pool3d_with_indices, *_with_indices", function()
  T.check(F.conv_tbc == torch.conv_tbc, "F.conv_tbc is torch.conv_tbc")
  torch.manual_seed(4)
  local x, w, b = torch.randn(5, 2, 3, f64), torch.randn(3, 3, 4, f64), torch.randn(4, f64)
  local y = F.conv_tbc(x, w, b, 1)
  T.eq(y:size():totable(), { 5, 2, 4 }, "T + 2 * pad - K + 1")
  local X, W, B = x:tolist(), w:tolist(), b:tolist()
  local worst = 0
  for t = 1, 5 do
    for n = 1, 2 do
      for o = 1, 4 do
        local s = B[o]
        for k = 1, 3 do
          local ti = t - 1 + (k - 1) - 1 -- pad 1
          if ti >= 0 and ti < 5 then
            for c = 1, 3 do s = s + X[ti + 1][n][c] * W[k][c][o] end
          end
        end
        worst = math.max(worst, math.abs(s - y[t - 1][n - 1][o - 1]:item()))
      end
    end
  end
  T.near(worst, 0, 1e-12, "conv_tbc against a loop")
  T.near(F.conv_tbc(x, w, b):size(0), 3, 0, "pad defaults to 0")
  gradcheck("conv_tbc", function(a, ww, bb) return F.conv_tbc(a, ww, bb, 1) end, { x, w, b })

  for _, name in ipairs({ "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices" }) do
    T.check(type(F[name]) == "function", "F." .. name)
  end
  local v = torch.randn(2, 4, 5, 3, f64)
  local out, idx = F.adaptive_max_pool3d_with_indices(v, { 2, 2, 1 })
  T.eq(out:size():totable(), { 2, 2, 2, 1 })
  local V = v:tolist()
  local ok = true
  for c = 0, 1 do
    for od = 0, 1 do
      for oh = 0, 1 do
        -- adaptive windows: [floor(o * n / out), ceil((o + 1) * n / out))
        local best, at = -math.huge, nil
        for d = (od * 4) // 2, -((-(od + 1) * 4) // 2) - 1 do
          for h = (oh * 5) // 2, -((-(oh + 1) * 5) // 2) - 1 do
            for ww = 0, 2 do
              if V[c + 1][d + 1][h + 1][ww + 1] > best then best, at = V[c + 1][d + 1][h + 1][ww + 1], (d * 5 + h) * 3 + ww end
            end
          end
        end
        ok = ok and out[c][od][oh][0]:item() == best and idx[c][od][oh][0]:item() == at
      end
    end
  end
  T.check(ok, "adaptive_max_pool3d_with_indices: maxima and flat indices against a loop")
  T.eq(tostring(idx.dtype), "torch.int64")
end)

-- captures what U.warn writes, with warn_always on so that repeated messages show
local function warnings(fn)
  local got, real = {}, io.stderr
  torch.set_warn_always(true)
  io.stderr = { write = function(_, ...) got[#got + 1] = table.concat({ ... }) end }
  local ok, err = pcall(fn)
  io.stderr = real
  torch.set_warn_always(false)
  if not ok then error(err, 0) end
  return table.concat(got)
end

T.test("nn.init.eye, nn.init.dirac: deprecated names", function()
  local w = torch.empty(2, 3)
  local msg = warnings(function() T.check(nn.init.eye(w) == w, "returns the tensor") end)
  T.eq(msg, "FutureWarning: `nn.init.eye` is now deprecated in favor of `nn.init.eye_`.\n")
  T.eq(w:tolist(), { { 1.0, 0.0, 0.0 }, { 0.0, 1.0, 0.0 } })
  local k = torch.empty(2, 2, 3)
  msg = warnings(function() nn.init.dirac(k) end)
  T.eq(msg, "FutureWarning: `nn.init.dirac` is now deprecated in favor of `nn.init.dirac_`.\n")
  T.eq(k:tolist(), { { { 0.0, 1.0, 0.0 }, { 0.0, 0.0, 0.0 } }, { { 0.0, 0.0, 0.0 }, { 0.0, 1.0, 0.0 } } })
  warnings(function() T.raises(function() nn.init.eye(torch.empty(3)) end, "~Only tensors with 2 dimensions are supported") end)
end)

-- ---- storages ----

local typed_warning = "UserWarning: TypedStorage is deprecated. It will be removed in the future and UntypedStorage " ..
  "will be the only storage class. This should only matter to you if you are using storages directly.  To access " ..
  "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()\n"

T.test("untyped_storage: the tensor's memory", function()
  local x = torch.arange(6, f64)
  local u = x:untyped_storage()
  T.eq({ u:size(), u:nbytes(), u:element_size(), #u }, { 48, 48, 1, 48 })
  T.eq(tostring(u.device), "cpu")
  T.check(not u.is_cuda, "is_cuda")
  T.check(torch.is_storage(u) and not torch.is_storage(x), "is_storage")
  T.eq(u:type(), "torch.storage.UntypedStorage")
  T.eq(torch.typename(u), "torch.storage.UntypedStorage")
  local view = x["2:"]
  T.eq(view:untyped_storage():data_ptr(), x:data_ptr(), "a view's storage starts at the base's first element")
  T.eq(view:data_ptr() - view:untyped_storage():data_ptr(), 16, "storage_offset 2 of float64")
  -- bytes: 1.0 in float64 is 3ff0000000000000, little-endian
  T.eq(u[8], 0)
  T.eq(u[15], 0x3f)
  T.eq(u[14], 0xf0)
  u[15], u[14] = 0x40, 0 -- 1.0 -> 2.0: 4000000000000000
  T.eq(x[1]:item(), 2.0, "a write through the storage is the tensor's")
  u:fill_(0)
  T.eq(x:tolist(), { 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 }, "fill_")
  T.raises(function() return u[48] end, "index 48 out of range for storage of size 48")
  T.eq(u[-1], 0, "negative index")
  T.eq(torch.empty(0):untyped_storage():nbytes(), 0, "an empty tensor's storage")
  T.eq(#torch.zeros(3, { dtype = torch.int16 }):untyped_storage():tolist(), 6)
end)

T.test("TypedStorage: x:storage() and the legacy classes", function()
  local x = torch.tensor({ 1.5, 2.5, 3.5 })
  local s
  T.eq(warnings(function() s = x:storage() end), typed_warning)
  T.eq({ s:size(), s:nbytes(), s:element_size(), #s }, { 3, 12, 4, 3 })
  T.eq(tostring(s.dtype), "torch.float32")
  T.eq(s:type(), "torch.FloatStorage")
  T.eq(torch.typename(s), "torch.storage.TypedStorage")
  T.eq(s:tolist(), { 1.5, 2.5, 3.5 })
  T.eq(s[1], 2.5)
  s[0] = -4
  T.eq(x[0]:item(), -4.0, "writes reach the tensor")
  x[2] = 9
  T.eq(s[2], 9.0, "and the tensor's reach the storage")
  T.eq(s:data_ptr(), x:data_ptr())
  T.check(s:untyped():data_ptr() == x:data_ptr() and s._untyped_storage:nbytes() == 12, "untyped()")
  T.eq(tostring(s), " -4.0\n 2.5\n 9.0\n[torch.storage.TypedStorage(dtype=torch.float32, device=cpu) of size 3]")
  T.eq(tostring(torch.UntypedStorage({ 1, 2 })), " 1\n 2\n[torch.storage.UntypedStorage(device=cpu) of size 2]")
  T.eq(tostring(torch.UntypedStorage()), " \n[torch.storage.UntypedStorage(device=cpu) of size 0]")

  local c = s:clone()
  c[0] = 100
  T.eq(s[0], -4.0, "clone is a copy")
  T.check(c:data_ptr() ~= s:data_ptr(), "clone: other memory")
  T.check(s:cpu() == s, "cpu() of a CPU storage is itself")
  local d = s:double()
  T.eq({ tostring(d.dtype), d:tolist() }, { "torch.float64", { -4.0, 2.5, 9.0 } })
  T.check(s:float() == s, "float() of a float storage is itself")
  T.eq(s:int():tolist(), { -4, 2, 9 })
  c:copy_(s)
  T.eq(c[0], -4.0, "copy_")
  c:copy_(torch.DoubleStorage({ 7, 8, 9 }))
  T.eq(c:tolist(), { 7.0, 8.0, 9.0 }, "copy_ between dtypes converts")
  T.raises(function() c:copy_(torch.FloatStorage(2)) end, "copy_(): the source storage has 2 elements but this one has 3")
  T.raises(function() c:copy_(x) end, "copy_(): argument 'src' must be a storage, not torch.FloatTensor")

  local L
  T.eq(warnings(function() L = torch.FloatStorage({ 1, 2, 3 }) end), typed_warning, "the legacy classes warn too")
  -- the legacy classes make TypedStorages
  T.eq({ L:type(), torch.typename(L), tostring(L.dtype) }, { "torch.FloatStorage", "torch.storage.TypedStorage", "torch.float32" })
  T.eq(tostring(L), " 1.0\n 2.0\n 3.0\n[torch.storage.TypedStorage(dtype=torch.float32, device=cpu) of size 3]")
  T.eq(torch.LongStorage(4):size(), 4)
  T.eq(tostring(torch.ByteStorage({ 1, 2 }).dtype), "torch.uint8")
  T.eq(tostring(torch.BoolStorage({ true, false })), " True\n False\n[torch.storage.TypedStorage(dtype=torch.bool, device=cpu) of size 2]")
  T.eq(tostring(torch.FloatStorage), "<class 'torch.FloatStorage'>")
  T.check(x:storage_type() == torch.FloatStorage and torch.zeros(1, { dtype = torch.int64 }):storage_type() == torch.LongStorage,
    "storage_type")
  T.raises(function() x:set_("a") end, "set_(): argument 'source' must be Tensor or a storage, not str")
  T.eq(tostring(torch.cuda.DoubleStorage), "<class 'torch.cuda.DoubleStorage'>")
  T.eq(tostring(torch.UntypedStorage), "<class 'torch.storage.UntypedStorage'>")
  local t
  warnings(function() t = torch.TypedStorage({ 1, 2 }, { dtype = torch.int32 }) end)
  T.eq({ t:tolist(), tostring(t.dtype), torch.typename(t) }, { { 1, 2 }, "torch.int32", "torch.storage.TypedStorage" })
  warnings(function() t = torch.TypedStorage(3) end)
  T.eq({ t:size(), tostring(t.dtype) }, { 3, "torch.float32" }, "default dtype")
  local u = torch.UntypedStorage(8)
  warnings(function() t = torch.TypedStorage({ wrap_storage = u, dtype = torch.float64 }) end)
  T.eq({ t:size(), t:data_ptr() == u:data_ptr() }, { 1, true }, "wrap_storage shares")
  warnings(function()
    T.raises(function() torch.TypedStorage({ wrap_storage = x, dtype = torch.float32 }) end,
      "TypedStorage(): argument 'wrap_storage' must be UntypedStorage, but got torch.FloatTensor")
    T.raises(function() torch.TypedStorage({ wrap_storage = u }) end, "TypedStorage(): argument 'dtype' must be specified with wrap_storage")
    T.raises(function() torch.FloatStorage(-1) end, "torch.FloatStorage: the size must be non-negative, got -1")
  end)
end)

T.test("set_ and legacy constructors from a storage", function()
  local x = torch.arange(8.)
  local s
  warnings(function() s = x:storage() end)
  local y = torch.empty(0)
  y:set_(s, 2, { 2, 3 })
  T.eq(y:tolist(), { { 2.0, 3.0, 4.0 }, { 5.0, 6.0, 7.0 } })
  T.eq(y:storage_offset(), 2)
  y[0][0] = 50
  T.eq(x[2]:item(), 50.0, "set_ shares the storage")
  local z = torch.empty(0):set_(x:untyped_storage(), 1, { 2 }, { 3 })
  T.eq(z:tolist(), { 1.0, 4.0 }, "untyped storage, stride")
  T.eq(torch.empty(0):set_(s):tolist(), x:tolist(), "all of it, 1-D")
  T.raises(function() torch.empty(0, f64):set_(s) end,
    "Expected a Storage of type double or an UntypedStorage, but got type Float for argument 1 'storage'")
  T.raises(function() torch.empty(0, { dtype = torch.int64 }):set_(s) end, "~of type long int or an UntypedStorage")
  T.raises(function() torch.empty(0):set_(s, 6, { 3 }) end, "~outside the storage")
  local t = torch.FloatTensor(s)
  T.eq(t:tolist(), x:tolist())
  t[7] = -1
  T.eq(x[7]:item(), -1.0, "torch.FloatTensor(storage) shares")
  T.raises(function() torch.DoubleTensor(s) end,
    "Expected a Storage of type Double or an UntypedStorage, but got type Float for argument 1 'storage'")
  T.eq(torch.IntTensor(x:untyped_storage()):size(0), 8, "an untyped storage: as many elements as fit")
  if not torch.cuda.is_available() then
    T.raises(function() torch.cuda.FloatTensor(s) end, "~not available")
  end
end)

T.test("storage resize_", function()
  local u = torch.UntypedStorage({ 1, 2, 3 })
  u:resize_(5)
  T.eq(u:size(), 5)
  T.eq({ u[0], u[1], u[2] }, { 1, 2, 3 }, "the old bytes kept")
  u:resize_(2)
  T.eq(u:tolist(), { 1, 2 }, "shrunk: no tensor uses it")
  local x = torch.tensor({ 1.0, 2.0 })
  local xs = x:untyped_storage()
  T.raises(function() xs:resize_(4) end, "~resize_: cannot shrink a storage that tensors still use")
  xs:resize_(16)
  T.eq(x:tolist(), { 1.0, 2.0 }, "growing keeps the tensor's values")
  T.eq(xs:nbytes(), 16)
  T.eq(x:untyped_storage():nbytes(), 16, "every storage object sees the new size")
  T.eq(x:data_ptr(), xs:data_ptr(), "the tensor is on the new memory")
  local f
  warnings(function() f = torch.FloatStorage({ 5, 6 }) end)
  f:resize_(3)
  T.eq({ f:size(), f:nbytes(), f[1] }, { 3, 12, 6.0 }, "a typed resize_ counts elements")
  T.raises(function() u:resize_(-1) end, "~must be non-negative")
end)

T.test("is_shared, share_memory_ on storages", function()
  local x = torch.zeros(2)
  local u = x:untyped_storage()
  T.eq(u:is_shared(), x:is_shared(), "as the tensor's")
  T.check(u:share_memory_() == u, "share_memory_ returns the storage")
  T.check(not u:is_pinned(), "is_pinned")
end)

-- ---- torch.cuda ----

T.test("torch.cuda: arch list, capture, pool handle, peer access", function()
  local A = torch.cuda._arch_list
  T.eq(A("90"), { "sm_90", "compute_90" })
  T.eq(A("80,90-real"), { "sm_80", "sm_90", "compute_80" })
  T.eq(A("86-virtual,90a"), { "sm_90a", "compute_86", "compute_90a" })
  T.eq(A("native"), {})
  T.eq(A(""), {})
  if torch.cuda.is_available() then return end
  T.eq(torch.cuda.get_arch_list(), {}, "no GPU: empty, as PyTorch")
  T.eq(torch.cuda.get_gencode_flags(), "")
  T.eq(torch.cuda.is_current_stream_capturing(), false)
  T.raises(function() torch.cuda.graph_pool_handle() end, "~graph_pool_handle: CUDA is not available")
  T.raises(function() torch.cuda.can_device_access_peer(0, 1) end, "~CUDA")
end)

T.test("on a GPU", function()
  if not torch.cuda.is_available() then return T.skip("no GPU", 23) end
  local dev = "cuda"
  -- hfftn / ihfftn on the GPU against the CPU
  torch.manual_seed(5)
  local z, r = torch.randn(3, 4, c128), torch.randn(3, 5, f64)
  for _, norm in ipairs(norms) do
    T.near(torch.fft.hfft2(z:to(dev), { 4, 5 }, nil, norm):cpu():reshape(-1):tolist(), ref_hfftn(z, { 4, 5 }, norm), 1e-10, "hfft2 cuda " .. norm)
    T.near(C.of(torch.fft.ihfftn(r:to(dev), nil, nil, norm):cpu():reshape(-1)), ref_ihfftn(r, { 3, 5 }, norm), 1e-10, "ihfftn cuda " .. norm)
  end
  local a = torch.randn(5, 2, 3, f64)
  local w, b = torch.randn(3, 3, 4, f64), torch.randn(4, f64)
  T.near((F.conv_tbc(a:to(dev), w:to(dev), b:to(dev), 1):cpu() - F.conv_tbc(a, w, b, 1)):abs():max():item(), 0, 1e-10, "conv_tbc cuda")
  local v = torch.randn(2, 4, 5, 3)
  local o1, i1 = F.adaptive_max_pool3d_with_indices(v, { 2, 2, 1 })
  local o2, i2 = F.adaptive_max_pool3d_with_indices(v:to(dev), { 2, 2, 1 })
  T.check(torch.equal(o1, o2:cpu()) and torch.equal(i1, i2:cpu()), "adaptive_max_pool3d_with_indices cuda")
  -- storages on the GPU
  local x = torch.arange(4., { device = dev })
  local u = x:untyped_storage()
  T.eq({ u:nbytes(), u.device.type, u.is_cuda, u:data_ptr() == x:data_ptr() }, { 16, "cuda", true, true })
  local s
  warnings(function() s = x:storage() end)
  T.eq(s:type(), "torch.cuda.FloatStorage")
  s[1] = 10
  T.eq(x:cpu():tolist(), { 0.0, 10.0, 2.0, 3.0 }, "write through a CUDA storage")
  local h = s:cpu()
  T.eq({ h.device.type, h:tolist() }, { "cpu", { 0.0, 10.0, 2.0, 3.0 } }, "cpu()")
  T.eq(h:cuda().device.type, "cuda", "cuda()")
  u:resize_(32)
  T.eq(x:cpu():tolist(), { 0.0, 10.0, 2.0, 3.0 }, "resize_ on the GPU keeps the bytes")
  local cs
  warnings(function() cs = torch.cuda.FloatStorage({ 1, 2 }) end)
  T.eq({ cs.device.type, cs:tolist() }, { "cuda", { 1.0, 2.0 } })
  -- torch.cuda
  T.check(#torch.cuda.get_arch_list() > 0, "get_arch_list: " .. table.concat(torch.cuda.get_arch_list(), " "))
  T.check(torch.cuda.get_gencode_flags():find("-gencode compute=compute_", 1, true) == 1, "get_gencode_flags")
  T.eq(torch.cuda.can_device_access_peer(0, 0), false, "a device and itself")
  T.raises(function() torch.cuda.can_device_access_peer(0, torch.cuda.device_count()) end, "Invalid peer device id")
  T.eq(torch.cuda.is_current_stream_capturing(), false, "not capturing")
  local pool = torch.cuda.graph_pool_handle()
  local g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
  local inp = torch.ones(4, { device = dev })
  torch.cuda.synchronize()
  local during
  g1:capture_begin({ pool = pool })
  during = torch.cuda.is_current_stream_capturing()
  local out1 = inp * 2
  g1:capture_end()
  g2:capture_begin({ pool = pool })
  local out2 = out1 + 1
  g2:capture_end()
  T.eq(during, true, "capturing inside capture_begin / capture_end")
  inp:fill_(3)
  g1:replay()
  g2:replay()
  torch.cuda.synchronize()
  T.eq(out2:cpu():tolist(), { 7.0, 7.0, 7.0, 7.0 }, "two graphs sharing a graph_pool_handle's pool")
  T.raises(function() pool:capture_begin() end, "~memory pool handle")
end)
