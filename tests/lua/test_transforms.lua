-- torchvision.transforms against references computed here in plain Lua:
-- float32 arithmetic is emulated with string.pack("f") rounding (exact for
-- single +, -, *, /), Pillow's fixed-point resize is re-derived, the
-- antialiased bilinear filter is evaluated directly in 2-D.
local T = ...
local tv = require "tv_transforms"
local F = tv.functional
local Image = require("PIL").Image

local function fround(x) return (string.unpack("<f", string.pack("<f", x))) end
local function trunc(x) return x >= 0 and math.floor(x) or math.ceil(x) end
local function u8(shape) return torch.randint(0, 256, shape, {dtype = torch.uint8}) end
local function pil(hwc) return Image.fromarray(hwc) end

-- map f over a nested list
local function map(t, f)
  if type(t) ~= "table" then return f(t) end
  local r = {}
  for i = 1, #t do r[i] = map(t[i], f) end
  return r
end

-- the largest |a - b| over two nested lists of the same shape (math.huge on a shape mismatch)
local function maxdiff(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then
    if type(a) ~= type(b) then return math.huge end
    return math.abs(a - b)
  end
  if #a ~= #b then return math.huge end
  local m = 0
  for i = 1, #a do m = math.max(m, maxdiff(a[i], b[i])) end
  return m
end

torch.manual_seed(7)

---------------------------------------------------------------------------
-- resize references
---------------------------------------------------------------------------

local function tri(x)
  x = math.abs(x)
  return x < 1 and 1 - x or 0
end

-- per output index: list of {input index, weight}
local function taps(inn, out, antialias)
  local scale = inn / out
  local r = {}
  for i = 0, out - 1 do
    local t = {}
    if antialias then
      -- the triangle filter widened by the scale when shrinking, over every input pixel
      local support = math.max(scale, 1.0)
      local center = (i + 0.5) * scale
      local total = 0
      for j = 0, inn - 1 do
        local w = tri((j + 0.5 - center) / support)
        if w > 0 then
          t[#t + 1] = {j, w}
          total = total + w
        end
      end
      for _, p in ipairs(t) do p[2] = p[2] / total end
    else
      -- classic bilinear, half-pixel centres, clamped at the edges
      local src = math.max((i + 0.5) * scale - 0.5, 0)
      local i0 = math.floor(src)
      local i1 = math.min(i0 + 1, inn - 1)
      local l = src - i0
      t = {{i0, 1 - l}, {i1, l}}
    end
    r[i + 1] = t
  end
  return r
end

-- a plane (list of rows) resized in 2-D: sum over both taps at once
local function resize_plane(p, oh, ow, antialias)
  local ty, tx = taps(#p, oh, antialias), taps(#p[1], ow, antialias)
  local out = {}
  for y = 1, oh do
    out[y] = {}
    for x = 1, ow do
      local s = 0
      for _, a in ipairs(ty[y]) do
        for _, b in ipairs(tx[x]) do s = s + a[2] * b[2] * p[a[1] + 1][b[1] + 1] end
      end
      out[y][x] = s
    end
  end
  return out
end

local function round_half_even(v)
  local f = math.floor(v)
  if v - f == 0.5 then return f % 2 == 0 and f or f + 1 end
  return math.floor(v + 0.5)
end

-- Pillow: 22-bit fixed point weights, width pass then height pass, each rounded to uint8
local function pil_resize(img, oh, ow) -- img: H x W x C nested list
  local H, W, Cn = #img, #img[1], #img[1][1]
  local function fixed(t)
    local r = {}
    for i, list in ipairs(t) do
      r[i] = {}
      for k, p in ipairs(list) do r[i][k] = {p[1], math.floor(p[2] * (1 << 22) + 0.5)} end
    end
    return r
  end
  local function clip8(v)
    if v >= (1 << 30) then return 255 end
    if v <= 0 then return 0 end
    return v >> 22
  end
  local mid = img
  if ow ~= W then
    local kx = fixed(taps(W, ow, true))
    mid = {}
    for y = 1, H do
      mid[y] = {}
      for x = 1, ow do
        mid[y][x] = {}
        for c = 1, Cn do
          local ss = 1 << 21
          for _, p in ipairs(kx[x]) do ss = ss + img[y][p[1] + 1][c] * p[2] end
          mid[y][x][c] = clip8(ss)
        end
      end
    end
  end
  if oh == H then return mid end
  local ky = fixed(taps(H, oh, true))
  local out = {}
  for y = 1, oh do
    out[y] = {}
    for x = 1, ow do
      out[y][x] = {}
      for c = 1, Cn do
        local ss = 1 << 21
        for _, p in ipairs(ky[y]) do ss = ss + mid[p[1] + 1][x][c] * p[2] end
        out[y][x][c] = clip8(ss)
      end
    end
  end
  return out
end

T.test("resize: known values", function()
  local row = torch.arange(4.0):view(1, 1, 4)
  T.near(F.resize(row, {1, 2}):tolist(), {{{0.714285714, 2.285714286}}}, 1e-6, "antialiased 4 -> 2")
  T.near(F.resize(row, {1, 2}, nil, nil, false):tolist(), {{{0.5, 2.5}}}, 1e-6, "plain bilinear 4 -> 2")
  T.near(F.resize(torch.tensor({{{0.0, 1.0}}}), {1, 4}):tolist(), {{{0.0, 0.25, 0.75, 1.0}}}, 1e-6, "2 -> 4")
end)

T.test("resize: tensors against the 2-D reference", function()
  local cases = {{7, 9, 3, 4}, {5, 6, 11, 13}, {12, 5, 5, 12}, {9, 9, 9, 4}, {4, 4, 1, 1}, {3, 17, 2, 5}}
  for _, cs in ipairs(cases) do
    local H, W, oh, ow = table.unpack(cs)
    for _, aa in ipairs({true, false}) do
      local x = torch.rand(2, 3, W, H):transpose(2, 3) -- non-contiguous [2, 3, H, W]
      local got = F.resize(x, {oh, ow}, "bilinear", nil, aa)
      T.eq(got.shape:totable(), {2, 3, oh, ow}, "shape")
      local xl = x:tolist()
      local want = map(xl, function(v) return v end)
      for n = 1, 2 do for c = 1, 3 do want[n][c] = resize_plane(xl[n][c], oh, ow, aa) end end
      T.near(got:tolist(), want, 2e-6, string.format("float32 %dx%d -> %dx%d aa=%s", H, W, oh, ow, aa))
    end
  end
  -- float64, uint8 (computed in float, rounded half to even), float16
  local xd = torch.rand(3, 8, 10, {dtype = torch.float64})
  local wd = {}
  for c, p in ipairs(xd:tolist()) do wd[c] = resize_plane(p, 3, 4, true) end
  T.near(F.resize(xd, {3, 4}):tolist(), wd, 1e-12, "float64")
  local xu = u8({3, 10, 7})
  local wu = {}
  for c, p in ipairs(xu:tolist()) do wu[c] = map(resize_plane(p, 4, 3, true), round_half_even) end
  local gu = F.resize(xu, {4, 3})
  T.eq(gu.dtype, torch.uint8, "uint8 stays uint8")
  T.eq(gu:tolist(), wu, "uint8 tensor")
  local xh = torch.rand(1, 6, 6):to(torch.float16)
  local wh = {resize_plane(xh:to(torch.float64):tolist()[1], 4, 4, true)}
  T.check(maxdiff(F.resize(xh, {4, 4}):to(torch.float64):tolist(), wh) < 2e-3, "float16")
  -- nearest: torch's floor(i * scale)
  local xn = torch.arange(10.0):view(1, 1, 10)
  T.eq(F.resize(xn, {1, 4}, "nearest"):tolist(), {{{0.0, 2.0, 5.0, 7.0}}}, "nearest")
  T.eq(F.resize(xn, {1, 4}, "nearest-exact"):tolist(), {{{1.0, 3.0, 6.0, 8.0}}}, "nearest-exact")
end)

T.test("resize: sizes", function()
  local x = torch.rand(3, 10, 20)
  T.eq(tv.Resize(5)(x).shape:totable(), {3, 5, 10}, "int size is the shorter side")
  T.eq(tv.Resize({5})(x).shape:totable(), {3, 5, 10}, "{n} is the shorter side")
  T.eq(tv.Resize(5, {max_size = 8})(x).shape:totable(), {3, 4, 8}, "max_size")
  T.eq(tv.Resize(7)(torch.rand(3, 30, 20)).shape:totable(), {3, 10, 7}, "portrait")
  T.eq(tv.Resize({6, 9})(x).shape:totable(), {3, 6, 9}, "{h, w}")
  T.eq(tv.Resize(10)(x), x, "same size returns the input")
  local im = pil(u8({10, 20, 3}))
  T.eq(tv.Resize(5)(im).size, {10, 5}, "PIL size {w, h}")
  T.raises(function() tv.Resize(5, {interpolation = "cubic"}) end, "~interpolation cubic is not supported")
  T.raises(function() tv.Resize(5, {interpolation = "lanczos"})(x) end, "~interpolation lanczos is unsupported with Tensor input")
  T.raises(function() tv.Resize({5, 6}, {max_size = 9}) end, "~max_size should only be passed")
  T.raises(function() tv.Resize(5, {antialias = true, sise = 3}) end, "~unknown keyword 'sise'")
  T.raises(function() tv.Resize(5, {max_size = 4})(x) end, "~max_size = 4 must be strictly greater")
end)

T.test("resize: PIL-like images match Pillow's fixed point", function()
  local cases = {{13, 17, 5, 7}, {6, 8, 32, 32}, {9, 20, 9, 6}, {20, 9, 6, 9}, {31, 33, 16, 10}, {1, 5, 3, 2}}
  for _, cs in ipairs(cases) do
    local H, W, oh, ow = table.unpack(cs)
    for _, c in ipairs({1, 3}) do
      local x = u8({H, W, c})
      local got = F.resize(pil(x), {oh, ow})
      T.eq(got.size, {ow, oh}, "size")
      T.eq(got:tensor():tolist(), pil_resize(x:tolist(), oh, ow), string.format("%dx%dx%d -> %dx%d", H, W, c, oh, ow))
      -- nearest: Pillow's ImagingScaleAffine adds the scale up pixel by pixel from half a step
      local function positions(n, o)
        local r, pos = {}, 0.5 * (n / o)
        for i = 1, o do
          r[i] = math.min(math.floor(pos), n - 1) + 1
          pos = pos + n / o
        end
        return r
      end
      local ys, xs, xl, want = positions(H, oh), positions(W, ow), x:tolist(), {}
      for y = 1, oh do
        want[y] = {}
        for i = 1, ow do want[y][i] = xl[ys[y]][xs[i]] end
      end
      T.eq(F.resize(pil(x), {oh, ow}, "nearest"):tensor():tolist(), want, string.format("nearest %dx%d -> %dx%d", H, W, oh, ow))
    end
  end
  -- RGBA is resized premultiplied by alpha (Pillow): opaque = RGB; transparent colour becomes 0
  local rgb = u8({9, 11, 3})
  local opaque = torch.cat({rgb, torch.full({9, 11, 1}, 255, {dtype = torch.uint8})}, 2)
  local r = F.resize(pil(opaque), {5, 4}):tensor()
  T.eq(r:narrow(2, 0, 3):tolist(), pil_resize(rgb:tolist(), 5, 4), "opaque RGBA resizes as RGB")
  T.eq(r:select(2, 3):min():item(), 255, "alpha stays opaque")
  local clear = torch.cat({rgb, torch.zeros(9, 11, 1, {dtype = torch.uint8})}, 2)
  T.eq(F.resize(pil(clear), {5, 4}):tensor():max():item(), 0, "transparent pixels lose their colour")
  -- the document's Resize((32, 32)) on an RGB image: close to the float computation
  local x = u8({40, 50, 3})
  local got = F.resize(pil(x), {32, 32}):tensor():permute(2, 0, 1):to(torch.float32)
  local ref = F.resize(x:permute(2, 0, 1):to(torch.float32), {32, 32})
  T.check((got - ref):abs():max():item() <= 1.0, "fixed point within 1 of float")
end)

---------------------------------------------------------------------------
-- ToTensor, PILToTensor, Normalize, ConvertImageDtype
---------------------------------------------------------------------------

T.test("ToTensor and PILToTensor", function()
  local x = u8({4, 5, 3})
  local want = {}
  local xl = x:tolist()
  for c = 1, 3 do
    want[c] = {}
    for y = 1, 4 do
      want[c][y] = {}
      for i = 1, 5 do want[c][y][i] = fround(xl[y][i][c] / 255) end
    end
  end
  local t = tv.ToTensor()
  local got = t(pil(x))
  T.eq(got.dtype, torch.float32, "float32")
  T.eq(got:tolist(), want, "PIL -> C x H x W / 255 (exact)")
  T.eq(t(x):tolist(), want, "uint8 H x W x C tensor")
  T.eq(t(x:permute(2, 0, 1)):tolist(), want, "uint8 C x H x W tensor kept")
  T.eq(t(x:select(2, 0)):tolist(), {want[1]}, "H x W -> 1 x H x W")
  T.eq(t.__c_transform, {kind = "to_tensor"}, "C marker")
  T.eq(tostring(t), "ToTensor()", "repr")
  local p = tv.PILToTensor()(pil(x))
  T.eq(p.dtype, torch.uint8, "PILToTensor dtype")
  T.eq(p:tolist(), x:permute(2, 0, 1):tolist(), "PILToTensor values")
  T.raises(function() tv.PILToTensor()(x) end, "~pic should be a PIL-like Image")
end)

T.test("Normalize", function()
  local mean, std = {0.4948052, 0.48568845, 0.44682974}, {0.24580306, 0.24236229, 0.2603115}
  local x = torch.rand(2, 3, 4, 5)
  local n = tv.Normalize(mean, std)
  local got = n(x)
  local xl = x:tolist()
  local want = map(xl, function(v) return v end)
  for b = 1, 2 do
    for c = 1, 3 do
      want[b][c] = map(xl[b][c], function(v) return fround(fround(v - fround(mean[c])) / fround(std[c])) end)
    end
  end
  T.eq(got:tolist(), want, "exact float32 (x - mean) / std")
  T.eq(x:tolist(), xl, "not in place by default")
  local v = x:transpose(2, 3) -- non-contiguous, in place
  local vl = v:tolist()
  tv.Normalize{mean = 0.5, std = 0.25, inplace = true}(v)
  T.eq(v:tolist(), map(vl, function(a) return fround(fround(a - 0.5) / 0.25) end), "inplace on a view, scalar mean/std")
  T.eq(n.__c_transform, {kind = "normalize", mean = mean, std = std}, "C marker")
  T.raises(function() n(u8({3, 2, 2})) end, "~should be a float tensor")
  T.raises(function() n(torch.rand(3, 4)) end, "~expected a tensor image of size (..., C, H, W)")
  T.raises(function() tv.Normalize({0.5}, {0.0})(torch.rand(1, 2, 2)) end, "~std evaluated to zero")
  T.raises(function() n(torch.rand(2, 4, 4)) end, "~3 means/stds for an image of 2 channels")
  T.raises(function() n(pil(u8({2, 2, 3}))) end, "~img should be a Tensor")
  T.raises(function() tv.Normalize({0.5}) end, "~mean and std are required")
end)

T.test("ConvertImageDtype", function()
  local x = u8({3, 2, 2})
  T.eq(tv.ConvertImageDtype(torch.float32)(x):tolist(), map(x:tolist(), function(v) return fround(v / 255) end), "uint8 -> float")
  local f = torch.rand(3, 2, 2)
  T.eq(F.convert_image_dtype(f, torch.uint8):tolist(), map(f:tolist(), function(v) return trunc(fround(v * fround(255.999))) end), "float -> uint8")
  T.eq(F.convert_image_dtype(x, torch.int32):tolist(), map(x:tolist(), function(v) return v * 8388608 end), "uint8 -> int32")
  local i = F.convert_image_dtype(x, torch.int32)
  T.eq(F.convert_image_dtype(i, torch.uint8):tolist(), x:tolist(), "int32 -> uint8")
  T.eq(F.convert_image_dtype(f, torch.float64).dtype, torch.float64, "float -> double")
  T.raises(function() F.convert_image_dtype(f, torch.int32) end, "~cannot be performed safely")
end)

---------------------------------------------------------------------------
-- crops, pads, flips
---------------------------------------------------------------------------

local function pyround(x)
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return f
end

-- the window of a C x H x W list at (top, left), zeros outside
local function window(l, top, left, h, w)
  local out = {}
  for c = 1, #l do
    out[c] = {}
    for y = 1, h do
      out[c][y] = {}
      for x = 1, w do
        local row = l[c][top + y]
        out[c][y][x] = row and row[left + x] or 0
      end
    end
  end
  return out
end

T.test("CenterCrop", function()
  for _, cs in ipairs({{7, 9, 3, 4}, {8, 8, 5, 5}, {5, 6, 5, 6}, {4, 5, 7, 8}, {6, 3, 2, 6}}) do
    local H, W, ch, cw = table.unpack(cs)
    local x = u8({3, H, W})
    local pl, pt = cw > W and (cw - W) // 2 or 0, ch > H and (ch - H) // 2 or 0
    local H2 = H + pt + (ch > H and (ch - H + 1) // 2 or 0)
    local W2 = W + pl + (cw > W and (cw - W + 1) // 2 or 0)
    local top, left = pyround((H2 - ch) / 2) - pt, pyround((W2 - cw) / 2) - pl
    local want = window(x:tolist(), top, left, ch, cw)
    local name = string.format("%dx%d -> %dx%d", H, W, ch, cw)
    T.eq(tv.CenterCrop({ch, cw})(x):tolist(), want, "tensor " .. name)
    T.eq(tv.CenterCrop({ch, cw})(pil(x:permute(1, 2, 0))):tensor():permute(2, 0, 1):tolist(), want, "PIL " .. name)
  end
  T.eq(tv.CenterCrop(3)(u8({1, 5, 5})).shape:totable(), {1, 3, 3}, "int size")
  T.eq(tostring(tv.CenterCrop(3)), "CenterCrop(size=(3, 3))", "repr")
end)

-- pad modes by their own index rules (pads smaller than the image)
local function padded(l, lp, tp, rp, bp, mode, fill)
  local function src(i, n)
    if i >= 1 and i <= n then return i end
    if mode == "constant" then return nil end
    if mode == "edge" then return i < 1 and 1 or n end
    if mode == "reflect" then return i < 1 and 2 - i or 2 * n - i end
    return i < 1 and 1 - i or 2 * n + 1 - i -- symmetric
  end
  local out = {}
  for c = 1, #l do
    local H, W = #l[c], #l[c][1]
    out[c] = {}
    for y = 1, H + tp + bp do
      out[c][y] = {}
      for x = 1, W + lp + rp do
        local sy, sx = src(y - tp, H), src(x - lp, W)
        out[c][y][x] = (sy and sx) and l[c][sy][sx] or (type(fill) == "table" and fill[c] or fill)
      end
    end
  end
  return out
end

T.test("Pad and RandomCrop padding modes", function()
  local x = u8({3, 4, 5})
  local xl = x:tolist()
  for _, mode in ipairs({"constant", "edge", "reflect", "symmetric"}) do
    T.eq(tv.Pad({1, 2, 3, 1}, {fill = 9, padding_mode = mode})(x):tolist(), padded(xl, 1, 2, 3, 1, mode, 9), "tensor " .. mode)
    local p = tv.Pad({2, 1}, {fill = {1, 2, 3}, padding_mode = mode})(pil(x:permute(1, 2, 0)))
    T.eq(p:tensor():permute(2, 0, 1):tolist(), padded(xl, 2, 1, 2, 1, mode, {1, 2, 3}), "PIL " .. mode)
  end
  T.eq(F.pad(torch.rand(2, 3, 3), 1).shape:totable(), {2, 5, 5}, "int padding")
  T.raises(function() tv.Pad(1, {padding_mode = "wrap"}) end, "~padding_mode should be")
end)

T.test("RandomCrop", function()
  local x = u8({3, 5, 6})
  local xl = x:tolist()
  local seen, ok = {}, true
  for _ = 1, 200 do
    local got = tv.RandomCrop({3, 4})(x):tolist()
    local found
    for i = 0, 2 do
      for j = 0, 2 do
        if T.show(window(xl, i, j, 3, 4)) == T.show(got) then found = i * 3 + j end
      end
    end
    ok = ok and found ~= nil
    if found then seen[found] = true end
  end
  T.check(ok, "every crop is a window of the image")
  local count = 0
  for _ in pairs(seen) do count = count + 1 end
  T.eq(count, 9, "every offset occurs")
  -- padding: the crop is a window of the padded image
  local pad = padded(xl, 2, 2, 2, 2, "constant", 0)
  local got = tv.RandomCrop(5, {padding = 2})(x):tolist()
  local found = false
  for i = 0, 4 do for j = 0, 5 do found = found or T.show(window(pad, i, j, 5, 5)) == T.show(got) end end
  T.check(found, "padded crop")
  -- seeded
  torch.manual_seed(3)
  local a = tv.RandomCrop(3)(pil(x:permute(1, 2, 0))):tensor()
  torch.manual_seed(3)
  local b = tv.RandomCrop(3)(pil(x:permute(1, 2, 0))):tensor()
  T.eq(a:tolist(), b:tolist(), "same seed, same crop")
  -- pad_if_needed pads both sides by the missing amount, as torchvision does
  T.eq(tv.RandomCrop({7, 8}, {pad_if_needed = true})(x).shape:totable(), {3, 7, 8}, "pad_if_needed")
  T.eq(tv.RandomCrop({5, 6})(x):tolist(), xl, "full-size crop")
  T.raises(function() tv.RandomCrop(7)(x) end, "~required crop size (7, 7) is larger than input image size (5, 6)")
end)

T.test("flips", function()
  local x = u8({2, 3, 4})
  local xl = x:tolist()
  local h = map(xl, function(v) return v end)
  local v = map(xl, function(a) return a end)
  for c = 1, 2 do
    for y = 1, 3 do
      for i = 1, 4 do
        h[c][y][i] = xl[c][y][5 - i]
        v[c][y][i] = xl[c][4 - y][i]
      end
    end
  end
  T.eq(tv.RandomHorizontalFlip(1.0)(x):tolist(), h, "hflip tensor")
  T.eq(tv.RandomVerticalFlip(1.0)(x):tolist(), v, "vflip tensor")
  T.eq(tv.RandomHorizontalFlip(0.0)(x):tolist(), xl, "p = 0")
  T.eq(tv.RandomHorizontalFlip{p = 1}(pil(x:permute(1, 2, 0))):tensor():permute(2, 0, 1):tolist(), h, "hflip PIL")
  T.eq(tv.RandomVerticalFlip{p = 1}(pil(x:permute(1, 2, 0))):tensor():permute(2, 0, 1):tolist(), v, "vflip PIL")
  T.eq(F.hflip(x:transpose(1, 2)):tolist(), F.hflip(x:transpose(1, 2):contiguous()):tolist(), "non-contiguous")
  local flips = 0
  for _ = 1, 400 do
    if T.show(tv.RandomHorizontalFlip()(x):tolist()) == T.show(h) then flips = flips + 1 end
  end
  T.check(flips > 150 and flips < 250, "p = 0.5 flips about half: " .. flips)
end)

T.test("RandomResizedCrop", function()
  local x = torch.rand(3, 8, 12)
  -- ratio 1 and scale 1 on a 8 x 12 image: every try is too big, the fallback is the centre 8 x 8
  local got = tv.RandomResizedCrop(4, {scale = {1, 1}, ratio = {1, 1}})(x)
  T.near(got:tolist(), F.resize(F.crop(x, 0, 2, 8, 8), {4, 4}):tolist(), 1e-7, "fallback centre crop")
  local sq = torch.rand(3, 9, 9)
  T.near(tv.RandomResizedCrop({5, 6}, {scale = {1, 1}, ratio = {1, 1}})(sq):tolist(), F.resize(sq, {5, 6}):tolist(), 1e-7, "whole image")
  for _ = 1, 20 do
    T.eq(tv.RandomResizedCrop({5, 7})(x).shape:totable(), {3, 5, 7}, "output size")
    T.eq(tv.RandomResizedCrop(6)(pil(u8({20, 30, 3}))).size, {6, 6}, "PIL output size")
  end
  local i, j, h, w = tv.RandomResizedCrop.get_params(x, {0.08, 1.0}, {3 / 4, 4 / 3})
  T.check(i >= 0 and j >= 0 and i + h <= 8 and j + w <= 12 and h > 0 and w > 0, "params inside the image")
  T.raises(function() tv.RandomResizedCrop(4, {scale = {1, 0.5}}) end, "~scale and ratio should be of kind (min, max)")
end)

---------------------------------------------------------------------------
-- colour
---------------------------------------------------------------------------

local function L24(r, g, b) return (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16 end
local function clampv(v, lo, hi) return math.min(math.max(v, lo), hi) + 0.0 end

-- Pillow's ImageEnhance blend: degenerate + alpha * (image - degenerate) in float, clipped, truncated
local function pil_blend(d, v, f)
  return trunc(clampv(fround(d + fround(fround(f) * (v - d))), 0, 255))
end
-- torchvision's _blend in float32: ratio * a + (1 - ratio) * b
local function tv_blend(a, b, f, bound)
  return clampv(fround(fround(fround(f) * a) + fround(fround(1 - f) * b)), 0, bound)
end
local function tv_gray(r, g, b, isu8)
  local v = fround(fround(fround(fround(0.2989) * r) + fround(fround(0.587) * g)) + fround(fround(0.114) * b))
  return isu8 and trunc(v) or v
end

T.test("brightness, contrast, saturation: exact formulas", function()
  local x = u8({4, 5, 3})
  local xl = x:tolist()
  for _, f in ipairs({0.0, 0.6, 1.0, 1.7}) do
    -- PIL: blend with black
    local got = F.adjust_brightness(pil(x), f):tensor():tolist()
    T.eq(got, map(xl, function(v) return pil_blend(0, v, f) end), "PIL brightness " .. f)
    -- ColorJitter with a pinned range draws that factor
    if f ~= 1.0 then
      T.eq(tv.ColorJitter{brightness = {f, f}}(pil(x)):tensor():tolist(), got, "ColorJitter brightness " .. f)
    end
    -- tensors
    local t = x:permute(2, 0, 1)
    T.eq(F.adjust_brightness(t, f):tolist(), map(t:tolist(), function(v) return trunc(tv_blend(v, 0, f, 255)) end), "uint8 tensor brightness " .. f)
    local ft = torch.rand(3, 4, 5)
    T.eq(F.adjust_brightness(ft, f):tolist(), map(ft:tolist(), function(v) return tv_blend(v, 0, f, 1.0) end), "float tensor brightness " .. f)
    -- contrast: PIL blends with int(mean of L + 0.5)
    local sum = 0
    for y = 1, 4 do for i = 1, 5 do sum = sum + L24(table.unpack(xl[y][i])) end end
    local mean = math.floor(sum / 20 + 0.5)
    T.eq(F.adjust_contrast(pil(x), f):tensor():tolist(), map(xl, function(v) return pil_blend(mean, v, f) end), "PIL contrast " .. f)
    local tl = t:tolist()
    local gsum = 0
    for y = 1, 4 do for i = 1, 5 do gsum = gsum + tv_gray(tl[1][y][i], tl[2][y][i], tl[3][y][i], true) end end
    local tmean = fround(gsum / 20)
    T.eq(F.adjust_contrast(t, f):tolist(), map(tl, function(v) return trunc(tv_blend(v, tmean, f, 255)) end), "uint8 tensor contrast " .. f)
    -- saturation: blend with the grey image
    local ps = {}
    for y = 1, 4 do
      ps[y] = {}
      for i = 1, 5 do
        local l = L24(table.unpack(xl[y][i]))
        ps[y][i] = map(xl[y][i], function(v) return pil_blend(l, v, f) end)
      end
    end
    T.eq(F.adjust_saturation(pil(x), f):tensor():tolist(), ps, "PIL saturation " .. f)
    local fl = ft:tolist()
    local ts = {{}, {}, {}}
    for y = 1, 4 do
      for c = 1, 3 do ts[c][y] = {} end
      for i = 1, 5 do
        local g = tv_gray(fl[1][y][i], fl[2][y][i], fl[3][y][i], false)
        for c = 1, 3 do ts[c][y][i] = tv_blend(fl[c][y][i], g, f, 1.0) end
      end
    end
    T.eq(F.adjust_saturation(ft, f):tolist(), ts, "float tensor saturation " .. f)
  end
  -- grey images: saturation is the identity; alpha is kept
  local g = pil(u8({3, 3, 1}))
  T.eq(F.adjust_saturation(g, 0.3):tensor():tolist(), g:tensor():tolist(), "saturation of L")
  local a = pil(u8({3, 3, 4}))
  T.eq(F.adjust_brightness(a, 0.5):tensor():select(2, 3):tolist(), a:tensor():select(2, 3):tolist(), "alpha kept")
  T.raises(function() F.adjust_brightness(x, -1) end, "~is not non-negative")
end)

-- colorsys's rgb_to_hsv / hsv_to_rgb in doubles
local function rgb_to_hsv(r, g, b)
  local maxc, minc = math.max(r, g, b), math.min(r, g, b)
  if maxc == minc then return 0, 0, maxc end
  local s = (maxc - minc) / maxc
  local rc, gc, bc = (maxc - r) / (maxc - minc), (maxc - g) / (maxc - minc), (maxc - b) / (maxc - minc)
  local h
  if r == maxc then h = bc - gc elseif g == maxc then h = 2 + rc - bc else h = 4 + gc - rc end
  return (h / 6) % 1, s, maxc
end
local function hsv_to_rgb(h, s, v)
  if s == 0 then return v, v, v end
  local i = math.floor(h * 6)
  local f = h * 6 - i
  local p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
  i = i % 6
  if i == 0 then return v, t, p elseif i == 1 then return q, v, p elseif i == 2 then return p, v, t
  elseif i == 3 then return p, q, v elseif i == 4 then return t, p, v end
  return v, p, q
end

T.test("hue", function()
  local red = torch.tensor({{{1.0}}, {{0.0}}, {{0.0}}})
  T.near(F.adjust_hue(red, 1 / 3):tolist(), {{{0.0}}, {{1.0}}, {{0.0}}}, 1e-6, "red + 1/3 is green")
  T.eq(F.adjust_hue(pil(torch.tensor({{{255, 0, 0}}}, {dtype = torch.uint8})), 1 / 3):getpixel({0, 0}), {0, 255, 0}, "PIL red + 1/3")
  local ft = torch.rand(3, 4, 5)
  for _, f in ipairs({-0.5, -0.2, 0.0, 0.1, 0.45}) do
    local fl = ft:tolist()
    local want = {{}, {}, {}}
    for y = 1, 4 do
      for c = 1, 3 do want[c][y] = {} end
      for i = 1, 5 do
        local h, s, v = rgb_to_hsv(fl[1][y][i], fl[2][y][i], fl[3][y][i])
        local r, g, b = hsv_to_rgb((h + f) % 1, s, v)
        want[1][y][i], want[2][y][i], want[3][y][i] = r, g, b
      end
    end
    T.check(maxdiff(F.adjust_hue(ft, f):tolist(), want) < 1e-5, "float tensor hue " .. f)
    local x = u8({4, 5, 3})
    local xl = x:tolist()
    local pw = map(xl, function(v) return v end)
    for y = 1, 4 do
      for i = 1, 5 do
        local p = xl[y][i]
        local h, s, v = rgb_to_hsv(p[1] / 255, p[2] / 255, p[3] / 255)
        local r, g, b = hsv_to_rgb((h + f) % 1, s, v)
        pw[y][i] = {r * 255, g * 255, b * 255}
      end
    end
    -- Pillow quantises hue (and the shift) to 8 bits: up to 2/255 of a turn, 12 levels; the uint8 tensor path truncates
    T.check(maxdiff(F.adjust_hue(pil(x), f):tensor():tolist(), pw) <= 12, "PIL hue " .. f)
    T.check(maxdiff(F.adjust_hue(x:permute(2, 0, 1), f):permute(1, 2, 0):tolist(), pw) <= 1.01, "uint8 tensor hue " .. f)
  end
  local g = u8({1, 3, 3})
  T.eq(F.adjust_hue(g, 0.3):tolist(), g:tolist(), "grey tensor unchanged")
  local hw = u8({3, 4}) -- an MNIST-style H x W image is one channel
  T.eq(F.adjust_brightness(hw, 0.5):tolist(), map(hw:tolist(), function(v) return trunc(fround(fround(0.5) * v)) end), "H x W brightness")
  T.raises(function() F.adjust_brightness(u8({2, 3, 3}), 0.5) end, "~with 1 or 3 channels")
  T.raises(function() F.adjust_hue(ft, 0.6) end, "~is not in [-0.5, 0.5]")
end)

T.test("Grayscale and ColorJitter", function()
  local x = u8({3, 4, 3})
  local xl = x:tolist()
  local g = tv.Grayscale()(pil(x))
  T.eq(g.mode, "L", "PIL grayscale mode")
  T.eq(g:tensor():select(2, 0):tolist(), map(xl, function(p) return p end) and (function()
    local r = {}
    for y = 1, 3 do r[y] = {} for i = 1, 4 do r[y][i] = L24(table.unpack(xl[y][i])) end end
    return r
  end)(), "PIL grayscale is L")
  T.eq(tv.Grayscale(3)(pil(x)).mode, "RGB", "3 output channels")
  local t = x:permute(2, 0, 1)
  local tl = t:tolist()
  local want = {{}}
  for y = 1, 3 do
    want[1][y] = {}
    for i = 1, 4 do want[1][y][i] = tv_gray(tl[1][y][i], tl[2][y][i], tl[3][y][i], true) end
  end
  T.eq(tv.Grayscale()(t):tolist(), want, "tensor grayscale")
  T.eq(tv.Grayscale(3)(t):tolist(), {want[1], want[1], want[1]}, "tensor grayscale x3")
  -- ColorJitter: ranges as torchvision checks them
  local cj = tv.ColorJitter(0.4, 0.4, 0.4, 0.1)
  T.eq(cj.brightness, {0.6, 1.4}, "brightness range")
  T.eq(cj.hue, {-0.1, 0.1}, "hue range")
  T.eq(tv.ColorJitter().brightness, nil, "0 means off")
  T.eq(tv.ColorJitter(2).brightness, {0.0, 3.0}, "clipped at 0")
  T.eq(tostring(cj), "ColorJitter(brightness=(0.6, 1.4), contrast=(0.6, 1.4), saturation=(0.6, 1.4), hue=(-0.1, 0.1))", "repr")
  T.raises(function() tv.ColorJitter{hue = 0.7} end, "~hue values should be between (-0.5, 0.5)")
  T.raises(function() tv.ColorJitter(-1) end, "~it must be non negative")
  T.eq(cj(pil(x)).size, {4, 3}, "jitter a PIL image")
  T.eq(cj(torch.rand(2, 3, 5, 5)).shape:totable(), {2, 3, 5, 5}, "jitter a batch of tensors")
  torch.manual_seed(11)
  local a = cj(t)
  torch.manual_seed(11)
  T.eq(cj(t):tolist(), a:tolist(), "seeded")
end)

---------------------------------------------------------------------------
-- Compose, Lambda, the document's pipeline
---------------------------------------------------------------------------

T.test("Compose, Lambda, RandomApply, ToPILImage", function()
  local c = tv.Compose({tv.Lambda(function(x) return x * 2 end), tv.Lambda(function(x) return x + 1 end)})
  T.eq(c(torch.tensor({1.0, 2.0})):tolist(), {3.0, 5.0}, "in order")
  T.raises(function() tv.Lambda(3) end, "~lambd should be callable")
  T.eq(tv.RandomApply({tv.Lambda(function(x) return x * 0 end)}, {p = 0.0})(torch.ones(2)):tolist(), {1.0, 1.0}, "RandomApply p=0")
  local f = torch.rand(3, 2, 2)
  local im = tv.ToPILImage()(f)
  T.eq(im.mode, "RGB", "ToPILImage mode")
  T.eq(im:tensor():permute(2, 0, 1):tolist(), map(f:tolist(), function(v) return trunc(fround(v * 255)) end), "ToPILImage values")
  local mean, std = {0.4948052, 0.48568845, 0.44682974}, {0.24580306, 0.24236229, 0.2603115}
  local train = tv.Compose({tv.Resize({32, 32}), tv.RandomHorizontalFlip(), tv.ToTensor(), tv.Normalize(mean, std)})
  local out = train(pil(u8({50, 40, 3})))
  T.eq(out.shape:totable(), {3, 32, 32}, "document pipeline shape")
  T.eq(out.dtype, torch.float32, "document pipeline dtype")
  T.eq(tostring(train), table.concat({
    "Compose(",
    "    Resize(size=(32, 32), interpolation=bilinear, max_size=None, antialias=True)",
    "    RandomHorizontalFlip(p=0.5)",
    "    ToTensor()",
    "    Normalize(mean=[0.4948052, 0.48568845, 0.44682974], std=[0.24580306, 0.24236229, 0.2603115])",
    ")"}, "\n"), "Compose repr")
end)
