-- transforms.functional's augmentation ops against plain-Lua references written from torchvision's
-- and Pillow's algorithms: per-pixel formulas, float32 arithmetic emulated by rounding each result
-- through string.pack("f"), and small images.
local T = ...
local tv = require("torchvision").transforms
local F = tv.functional
local Image = require("PIL").Image

local function fr(x) return (string.unpack("<f", string.pack("<f", x))) end
local function u8(shape) return torch.randint(0, 256, shape, {dtype = torch.uint8}) end
local function pil(hwc) return Image.fromarray(hwc) end
local function trunc(x) return x >= 0 and math.floor(x) or math.ceil(x) end
local function clamp(v, lo, hi) return v < lo and lo or v > hi and hi or v end
local function rint(v) -- round half to even
  local f = math.floor(v)
  if v - f == 0.5 then return f % 2 == 0 and f or f + 1 end
  return math.floor(v + 0.5)
end

-- map f(v, c, y, x) over a C x H x W nested list
local function map3(t, f)
  local r = {}
  for c, plane in ipairs(t) do
    r[c] = {}
    for y, row in ipairs(plane) do
      r[c][y] = {}
      for x, v in ipairs(row) do r[c][y][x] = f(v, c, y, x) end
    end
  end
  return r
end

local function maxdiff(a, b)
  if type(a) ~= "table" then return math.abs(a - b) end
  if type(b) ~= "table" or #a ~= #b then return math.huge end
  local m = 0
  for i = 1, #a do m = math.max(m, maxdiff(a[i], b[i])) end
  return m
end

-- H x W x C <-> C x H x W nested lists
local function chw(t) return t:permute(2, 0, 1):contiguous():tolist() end

torch.manual_seed(11)

---------------------------------------------------------------------------
-- per-pixel maps
---------------------------------------------------------------------------

T.test("invert, posterize, solarize", function()
  local x = u8({3, 5, 7})
  local xl = x:tolist()
  T.eq(F.invert(x):tolist(), map3(xl, function(v) return 255 - v end), "invert uint8")
  local xf = torch.rand(1, 4, 6)
  T.eq(F.invert(xf):tolist(), map3(xf:tolist(), function(v) return fr(1 - v) end), "invert float32: 1 - v")
  for _, bits in ipairs({0, 1, 3, 7, 8}) do
    local step = 1 << (8 - bits)
    T.eq(F.posterize(x, bits):tolist(), map3(xl, function(v) return v - v % step end), "posterize bits " .. bits)
  end
  T.eq(F.solarize(x, 128):tolist(), map3(xl, function(v) return v >= 128 and 255 - v or v end), "solarize 128")
  T.eq(F.solarize(x, 100.5):tolist(), map3(xl, function(v) return v >= 100.5 and 255 - v or v end), "solarize 100.5")
  T.eq(F.solarize(xf, 0.5):tolist(), map3(xf:tolist(), function(v) return v >= 0.5 and fr(1 - v) or v end), "solarize float")
  -- PIL-like L and RGB: Pillow's tables (the same values)
  local hwc = u8({4, 5, 3})
  T.eq(chw(F.invert(pil(hwc))._data), map3(chw(hwc), function(v) return 255 - v end), "PIL invert")
  T.eq(chw(F.posterize(pil(hwc), 2)._data), map3(chw(hwc), function(v) return v & 0xC0 end), "PIL posterize")
  T.eq(chw(F.solarize(pil(hwc), 77)._data), map3(chw(hwc), function(v) return v < 77 and v or 255 - v end), "PIL solarize")
  local l = u8({4, 5, 1})
  T.eq(F.invert(pil(l)).mode, "L", "L stays L")
  -- batches and 2-d
  T.eq(F.invert(u8({2, 3, 4, 4})).shape:totable(), {2, 3, 4, 4}, "batched")
  T.raises(function() F.invert(u8({4, 4})) end, "~Input image tensor should have at least 3 dimensions, but found 2")
  T.raises(function() F.invert(u8({4, 4, 4})) end, "~Input image tensor permitted channel values are [1, 3], but found 4")
  T.raises(function() F.invert(pil(u8({3, 3, 4}))) end, "invert: not supported for mode RGBA")
  T.raises(function() F.posterize(xf, 4) end, "~Only torch.uint8 image tensors are supported, but found torch.float32")
  T.raises(function() F.posterize(x, 9) end, "posterize: The number if bits should be between 0 and 8. Got 9")
  T.raises(function() F.solarize(x, 300) end, "~Threshold should be less than bound of img.")
  T.raises(function() F.solarize(xf, 1.5) end, "~Threshold should be less than bound of img.")
  T.raises(function() F.invert("x") end, "~img should be PIL Image or Tensor. Got str")
end)

-- one plane's autocontrast: tensors in float32 then truncated; Pillow int(v * scale + offset)
local function ref_autocontrast(plane, kind)
  local lo, hi = math.huge, -math.huge
  for _, row in ipairs(plane) do for _, v in ipairs(row) do lo, hi = math.min(lo, v), math.max(hi, v) end end
  local out = {}
  for y, row in ipairs(plane) do
    out[y] = {}
    for x, v in ipairs(row) do
      local r = v
      if kind == "pil" and hi > lo then
        local scale = 255.0 / (hi - lo)
        r = clamp(trunc(v * scale + (-lo * scale)), 0, 255)
      elseif kind == "u8" and hi > lo then
        r = trunc(clamp(fr((v - lo) * fr(255 / (hi - lo))), 0, 255))
      elseif kind == "float" then
        local scale = fr(1 / fr(hi - lo))
        if hi == lo then lo, scale = 0, 1 end
        r = clamp(fr(fr(v - lo) * scale), 0, 1)
      end
      out[y][x] = r
    end
  end
  return out
end

T.test("autocontrast", function()
  local x = (u8({2, 3, 6, 5}) // 2 + 40):contiguous() -- not spanning 0..255
  x[0][1]:fill_(77) -- a constant channel stays as it is
  local want = {}
  for n, img in ipairs(x:tolist()) do
    want[n] = {}
    for c, plane in ipairs(img) do want[n][c] = ref_autocontrast(plane, "u8") end
  end
  T.eq(F.autocontrast(x):tolist(), want, "uint8 batch, per image and channel")
  local xf = torch.rand(3, 4, 5) * 0.5 + 0.2
  local wf = {}
  for c, plane in ipairs(xf:tolist()) do wf[c] = ref_autocontrast(plane, "float") end
  T.near(F.autocontrast(xf):tolist(), wf, 1e-7, "float32")
  local hwc = (u8({5, 6, 3}) // 3 + 50):contiguous()
  local wp = {}
  for c, plane in ipairs(chw(hwc)) do wp[c] = ref_autocontrast(plane, "pil") end
  T.eq(chw(F.autocontrast(pil(hwc))._data), wp, "PIL: Pillow's table")
end)

-- Pillow's ImageOps.equalize on one plane (torchvision's tensor equalize is the same)
local function ref_equalize(plane)
  local h = {}
  for v = 0, 255 do h[v] = 0 end
  for _, row in ipairs(plane) do for _, v in ipairs(row) do h[v] = h[v] + 1 end end
  local total, last = 0, 0
  for v = 0, 255 do if h[v] > 0 then total, last = total + h[v], h[v] end end
  local step = (total - last) // 255
  local lut = {}
  if step == 0 then for v = 0, 255 do lut[v] = v end
  else
    local n = step // 2
    for v = 0, 255 do lut[v] = math.min(n // step, 255); n = n + h[v] end
  end
  local out = {}
  for y, row in ipairs(plane) do
    out[y] = {}
    for x, v in ipairs(row) do out[y][x] = lut[v] end
  end
  return out
end

T.test("equalize", function()
  local x = u8({3, 20, 30})
  local want = {}
  for c, plane in ipairs(x:tolist()) do want[c] = ref_equalize(plane) end
  T.eq(F.equalize(x):tolist(), want, "uint8 tensor")
  local skew = (u8({1, 16, 16}) // 64):contiguous() -- four values
  T.eq(F.equalize(skew):tolist(), {ref_equalize(skew:tolist()[1])}, "few values")
  local flat = torch.full({1, 4, 4}, 9, {dtype = torch.uint8})
  T.eq(F.equalize(flat):tolist(), flat:tolist(), "one value: unchanged")
  local b = u8({2, 1, 8, 8})
  T.eq(F.equalize(b):tolist(), {{ref_equalize(b:tolist()[1][1])}, {ref_equalize(b:tolist()[2][1])}}, "batch")
  local hwc = u8({9, 11, 3})
  local wp = {}
  for c, plane in ipairs(chw(hwc)) do wp[c] = ref_equalize(plane) end
  T.eq(chw(F.equalize(pil(hwc))._data), wp, "PIL RGB")
  T.raises(function() F.equalize(torch.rand(3, 4, 4)) end, "~Only torch.uint8 image tensors are supported")
end)

---------------------------------------------------------------------------
-- sharpness
---------------------------------------------------------------------------

-- torchvision: blend(img, degenerate, f), degenerate = [1 1 1; 1 5 1; 1 1 1] / 13 on the interior
local function ref_sharpness(plane, f, is_u8)
  local H, W = #plane, #plane[1]
  local k1, k5 = fr(1 / 13), fr(5 / 13)
  local ratio, inv, bound = fr(f), fr(1 - f), is_u8 and 255 or 1
  local out = {}
  for y = 1, H do
    out[y] = {}
    for x = 1, W do
      local v, deg = plane[y][x], plane[y][x]
      if y > 1 and y < H and x > 1 and x < W then
        local s = 0
        for i = -1, 1 do for j = -1, 1 do s = s + plane[y + i][x + j] * ((i == 0 and j == 0) and k5 or k1) end end
        deg = fr(s)
        if is_u8 then deg = rint(deg) end
      end
      local r = clamp(fr(fr(ratio * v) + fr(inv * deg)), 0, bound)
      out[y][x] = is_u8 and trunc(r) or r
    end
  end
  return out
end

-- Pillow: ImageFilter.SMOOTH (rows y+1, y, y-1 summed in float onto 0.5, truncated), then blend
local function ref_sharpness_pil(plane, f)
  local H, W = #plane, #plane[1]
  local k1, k5 = fr(1 / 13), fr(5 / 13)
  local out = {}
  for y = 1, H do
    out[y] = {}
    for x = 1, W do
      local v = plane[y][x]
      out[y][x] = v
      if y > 1 and y < H and x > 1 and x < W then
        local ss = 0.5
        for _, i in ipairs({1, 0, -1}) do
          local r = plane[y + i]
          local row = fr(fr(fr(r[x - 1] * k1) + fr(r[x] * (i == 0 and k5 or k1))) + fr(r[x + 1] * k1))
          ss = fr(ss + row)
        end
        local deg = clamp(trunc(ss), 0, 255)
        out[y][x] = clamp(trunc(fr(deg + fr(fr(f) * (v - deg)))), 0, 255)
      end
    end
  end
  return out
end

T.test("adjust_sharpness", function()
  local x = u8({3, 6, 7})
  for _, f in ipairs({0.0, 0.5, 1.0, 1.7, 3.0}) do
    local want = {}
    for c, plane in ipairs(x:tolist()) do want[c] = ref_sharpness(plane, f, true) end
    T.check(maxdiff(F.adjust_sharpness(x, f):tolist(), want) <= 1, "uint8 factor " .. f)
    local xf = torch.rand(1, 5, 6)
    T.near(F.adjust_sharpness(xf, f):tolist(), {ref_sharpness(xf:tolist()[1], f, false)}, 1e-6, "float factor " .. f)
    local hwc = u8({5, 6, 3})
    local wp = {}
    for c, plane in ipairs(chw(hwc)) do wp[c] = ref_sharpness_pil(plane, f) end
    T.eq(chw(F.adjust_sharpness(pil(hwc), f)._data), wp, "PIL factor " .. f)
  end
  local border = u8({1, 5, 5})
  local got = F.adjust_sharpness(border, 2.0):tolist()[1]
  local b = border:tolist()[1]
  T.eq({got[1], got[5], {got[3][1], got[3][5]}}, {b[1], b[5], {b[3][1], b[3][5]}}, "border untouched")
  local small = u8({3, 2, 9})
  T.check(F.adjust_sharpness(small, 2.0) == small, "height 2: the image itself")
  local rgba = u8({4, 4, 4})
  T.eq(F.adjust_sharpness(pil(rgba), 2.0)._data:select(2, 3):tolist(), rgba:select(2, 3):tolist(), "PIL alpha kept")
  T.raises(function() F.adjust_sharpness(x, -1) end, "~sharpness_factor (-1) is not non-negative.")
end)

---------------------------------------------------------------------------
-- gaussian blur
---------------------------------------------------------------------------

local function ref_kernel(k, sigma)
  local p, s = {}, 0
  for i = 1, k do
    local x = -(k - 1) / 2 + (i - 1)
    p[i] = math.exp(-0.5 * (x / sigma) ^ 2)
    s = s + p[i]
  end
  for i = 1, k do p[i] = p[i] / s end
  return p
end

local function reflect(i, n) if i < 1 then return 2 - i elseif i > n then return 2 * n - i end return i end

-- the blurred plane: reflect padding, the 2-d kernel ky * kx, rounded for uint8
local function ref_blur(plane, kx, ky, sx, sy, is_u8)
  local H, W = #plane, #plane[1]
  local wx, wy = ref_kernel(kx, sx), ref_kernel(ky, sy)
  local out = {}
  for y = 1, H do
    out[y] = {}
    for x = 1, W do
      local s = 0
      for i = 1, ky do
        for j = 1, kx do s = s + wy[i] * wx[j] * plane[reflect(y + i - 1 - ky // 2, H)][reflect(x + j - 1 - kx // 2, W)] end
      end
      out[y][x] = is_u8 and rint(s) or s
    end
  end
  return out
end

T.test("gaussian_blur", function()
  T.near(torch._image.gaussian_kernel1d(5, 1.3), ref_kernel(5, 1.3), 1e-6, "kernel float32")
  T.near(torch._image.gaussian_kernel1d(7, 0.8, true), ref_kernel(7, 0.8), 1e-15, "kernel float64")
  T.near(torch._image.gaussian_kernel1d(3, 1.0), {0.27406862, 0.45186276, 0.27406862}, 1e-7, "known values")
  local x = torch.rand(2, 7, 9)
  local want = {}
  for c, plane in ipairs(x:tolist()) do want[c] = ref_blur(plane, 5, 3, 1.5, 0.7, false) end
  T.near(F.gaussian_blur(x, {5, 3}, {1.5, 0.7}):tolist(), want, 2e-6, "float32, kernel (5, 3), sigma (1.5, 0.7)")
  local xd = torch.rand(1, 6, 6, {dtype = torch.float64})
  T.near(F.gaussian_blur(xd, 3, 2.0):tolist(), {ref_blur(xd:tolist()[1], 3, 3, 2.0, 2.0, false)}, 1e-12, "float64")
  local xu = u8({3, 8, 6})
  local wu = {}
  for c, plane in ipairs(xu:tolist()) do wu[c] = ref_blur(plane, 3, 5, 0.9, 1.1, true) end
  local gu = F.gaussian_blur(xu, {3, 5}, {0.9, 1.1})
  T.eq(gu.dtype, torch.uint8, "uint8 stays uint8")
  T.check(maxdiff(gu:tolist(), wu) <= 1, "uint8 within 1 of the reference")
  -- default sigma: 0.3 * ((k - 1) * 0.5 - 1) + 0.8 = k * 0.15 + 0.35
  T.near(F.gaussian_blur(x, 5):tolist(), F.gaussian_blur(x, 5, 5 * 0.15 + 0.35):tolist(), 0, "default sigma")
  -- PIL-like: through the uint8 tensor of its bands
  local hwc = u8({6, 7, 3})
  T.eq(F.gaussian_blur(pil(hwc), 3, 1.0)._data:tolist(), F.gaussian_blur(hwc:permute(2, 0, 1), 3, 1.0):permute(1, 2, 0):tolist(), "PIL")
  T.raises(function() F.gaussian_blur(x, 4) end, "~kernel_size should have odd and positive integers. Got [4, 4]")
  T.raises(function() F.gaussian_blur(x, {3, 3, 3}) end, "~If kernel_size is a sequence its length should be 2. Got 3")
  T.raises(function() F.gaussian_blur(x, 3, 0) end, "~sigma should have positive values. Got [0.0, 0.0]")
  T.raises(function() F.gaussian_blur(x, 3, {1, 2, 3}) end, "~If sigma is a sequence, its length should be 2. Got 3")
  T.raises(function() F.gaussian_blur(torch.rand(3, 2, 9), 5) end,
    "~Padding size should be less than the corresponding input dimension, but got: padding (2, 2) at dimension 2 of input [1, 3, 2, 9]")
end)

---------------------------------------------------------------------------
-- erase
---------------------------------------------------------------------------

T.test("erase", function()
  local x = torch.rand(3, 6, 8)
  local v = torch.tensor({1.0, 2.0, 3.0}):view(3, 1, 1)
  local got = F.erase(x, 1, 2, 3, 4, v)
  local want = map3(x:tolist(), function(val, c, y, xx)
    if y >= 2 and y <= 4 and xx >= 3 and xx <= 6 then return c + 0.0 end
    return val
  end)
  T.eq(got:tolist(), want, "region set, per channel")
  T.check(x[0][1][2]:item() ~= 1.0, "not in place")
  F.erase(x, 0, 0, 1, 1, 0, true)
  T.eq(x[2][0][0]:item(), 0.0, "inplace")
  local noise = torch.randn(3, 2, 2)
  T.eq(F.erase(x, 4, 6, 2, 2, noise)[":, 4:6, 6:8"]:tolist(), noise:tolist(), "a value per pixel")
  T.raises(function() F.erase(pil(u8({3, 3, 3})), 0, 0, 1, 1, 0) end, "~img should be Tensor Image")
end)

---------------------------------------------------------------------------
-- geometry: tensors (torchvision's grid and grid_sample) and PIL-like (Pillow's transform)
---------------------------------------------------------------------------

local function inverse_affine(center, angle, translate, scale, shear)
  local rot, sx, sy = math.rad(angle), math.rad(shear[1]), math.rad(shear[2])
  local a = math.cos(rot - sy) / math.cos(sy)
  local b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
  local c = math.sin(rot - sy) / math.cos(sy)
  local d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
  local m = {d / scale, -b / scale, 0, -c / scale, a / scale, 0}
  local cx, cy, tx, ty = center[1], center[2], translate[1], translate[2]
  m[3] = m[1] * (-cx - tx) + m[2] * (-cy - ty) + cx
  m[6] = m[4] * (-cx - tx) + m[5] * (-cy - ty) + cy
  return m
end

-- grid_sample(align_corners=False, zeros) of one C x H x W image at normalised points g(x, y) (0-based
-- output pixel), fill through the mask channel as torchvision does; the points are unnormalised in
-- float32 as torch does ((g + 1) * (W / 2) - 0.5), so that nearest breaks ties as torch does
local function ref_sample(img, oh, ow, g, mode, fill)
  local C, H, W = #img, #img[1], #img[1][1]
  local out = {}
  for c = 1, C do out[c] = {} for y = 1, oh do out[c][y] = {} end end
  for y = 0, oh - 1 do
    for x = 0, ow - 1 do
      local gx, gy = g(x, y)
      local ix, iy = fr(fr(fr(gx + 1) * fr(W / 2)) - 0.5), fr(fr(fr(gy + 1) * fr(H / 2)) - 0.5)
      local taps = {}
      if mode == "nearest" then taps = {{rint(ix), rint(iy), 1}}
      else
        local x0, y0 = math.floor(ix), math.floor(iy)
        local wx, wy = ix - x0, iy - y0
        taps = {{x0, y0, (1 - wx) * (1 - wy)}, {x0 + 1, y0, wx * (1 - wy)}, {x0, y0 + 1, (1 - wx) * wy}, {x0 + 1, y0 + 1, wx * wy}}
      end
      local m = 0
      for _, t in ipairs(taps) do if t[1] >= 0 and t[1] < W and t[2] >= 0 and t[2] < H then m = m + t[3] end end
      for c = 1, C do
        local v = 0
        for _, t in ipairs(taps) do
          if t[1] >= 0 and t[1] < W and t[2] >= 0 and t[2] < H then v = v + t[3] * img[c][t[2] + 1][t[1] + 1] end
        end
        if fill then
          local f = fill[#fill == 1 and 1 or c]
          if mode == "nearest" then v = m < 0.5 and f or v else v = v * m + (1 - m) * f end
        end
        out[c][y + 1][x + 1] = v
      end
    end
  end
  return out
end

-- torchvision's _gen_affine_grid for an inverse matrix m about the centre, in float32: base grid
-- (x - ow / 2 + 0.5, y - oh / 2 + 0.5, 1) times theta^T / (w / 2, h / 2)
local function affine_grid(m, w, h, ow, oh)
  local t = {}
  for k = 1, 6 do t[k] = fr(fr(m[k]) / fr((k <= 3 and w or h) / 2)) end
  return function(x, y)
    local bx, by = x - ow / 2 + 0.5, y - oh / 2 + 0.5
    return fr(fr(fr(bx * t[1]) + fr(by * t[2])) + t[3]), fr(fr(fr(bx * t[4]) + fr(by * t[5])) + t[6])
  end
end

T.test("affine and rotate on tensors: torchvision's grid sampling", function()
  local x = torch.rand(3, 7, 9)
  local xl = x:tolist()
  local cases = {
    {30, {0, 0}, 1.0, {0, 0}}, {-47, {2, -1}, 1.3, {10, 0}}, {12, {0, 0}, 0.8, {-5, 20}}, {0, {3, 2}, 1.0, {0, 0}},
  }
  for _, cs in ipairs(cases) do
    local m = inverse_affine({0, 0}, cs[1], cs[2], cs[3], cs[4])
    for _, mode in ipairs({"nearest", "bilinear"}) do
      local name = string.format("affine %s %s", mode, table.concat({cs[1], cs[3], cs[4][1], cs[4][2]}, " "))
      T.near(F.affine(x, cs[1], cs[2], cs[3], cs[4], mode):tolist(), ref_sample(xl, 7, 9, affine_grid(m, 9, 7, 9, 7), mode), 1e-5, name)
      T.near(F.affine(x, cs[1], cs[2], cs[3], cs[4], {interpolation = mode, fill = {0.25, 0.5, 1.0}}):tolist(),
        ref_sample(xl, 7, 9, affine_grid(m, 9, 7, 9, 7), mode, {0.25, 0.5, 1.0}), 1e-5, name .. " with fill")
    end
  end
  -- rotate: -angle, about the centre or a given centre; expand grows the canvas
  local m = inverse_affine({0, 0}, -25, {0, 0}, 1.0, {0, 0})
  T.near(F.rotate(x, 25, "bilinear"):tolist(), ref_sample(xl, 7, 9, affine_grid(m, 9, 7, 9, 7), "bilinear"), 1e-5, "rotate 25")
  local mc = inverse_affine({2 - 4.5, 1 - 3.5}, -40, {0, 0}, 1.0, {0, 0})
  T.near(F.rotate(x, 40, {center = {2, 1}, fill = 0.5}):tolist(), ref_sample(xl, 7, 9, affine_grid(mc, 9, 7, 9, 7), "nearest", {0.5}),
    1e-5, "rotate about (2, 1) with fill")
  local e = F.rotate(x, 30, {expand = true, interpolation = "bilinear"})
  -- the corners (+-4.5, +-3.5) turned by 30 degrees: ceil(max) - floor(min) about the shifted centre
  local hx, hy = 4.5 * math.cos(math.rad(30)) + 3.5 * math.sin(math.rad(30)), 4.5 * math.sin(math.rad(30)) + 3.5 * math.cos(math.rad(30))
  local ow, oh = math.ceil(hx + 4.5) - math.floor(4.5 - hx), math.ceil(hy + 3.5) - math.floor(3.5 - hy)
  T.eq({oh, ow}, {11, 13}, "expand size, worked out")
  T.eq(e.shape:totable(), {3, oh, ow}, "expand size")
  local me = inverse_affine({0, 0}, -30, {0, 0}, 1.0, {0, 0})
  T.near(e:tolist(), ref_sample(xl, oh, ow, affine_grid(me, 9, 7, ow, oh), "bilinear"), 1e-5, "expand values")
  -- exact cases: identity, integer shifts, quarter turns
  local xu = u8({3, 6, 6})
  T.eq(F.rotate(xu, 0):tolist(), xu:tolist(), "rotate 0")
  T.eq(F.rotate(xu, 90):tolist(), xu:transpose(1, 2):flip(1):tolist(), "rotate 90 (counter-clockwise)")
  T.eq(F.affine(xu, 0, {2, 1}, 1, 0, {fill = 7}):tolist(), map3(xu:tolist(), function(_, c, y, xx)
    if y - 1 < 1 or xx - 2 < 1 then return 7 end
    return xu:tolist()[c][y - 1][xx - 2]
  end), "translate (2, 1) with fill 7")
  T.eq(F.rotate(u8({2, 3, 1, 5, 5}), 10).shape:totable(), {2, 3, 1, 5, 5}, "leading dims")
  T.raises(function() F.rotate(x, 10, "bicubic") end, "~Interpolation mode 'bicubic' is unsupported with Tensor input")
  T.raises(function() F.rotate(x, 10, {fill = {1, 2}}) end,
    "~The number of elements in 'fill' cannot broadcast to match the number of channels of the image (2 != 3)")
  T.raises(function() F.affine(x, 10, {1}, 1, 0) end, "~Argument translate should be a sequence of length 2")
  T.raises(function() F.affine(x, 10, {1, 1}, 0, 0) end, "~Argument scale should be positive")
  T.raises(function() F.affine(x, 10, {1, 1}, 1, {1, 2, 3}) end, "~Shear should be a sequence containing two values. Got [1, 2, 3]")
  T.raises(function() F.rotate(x, "10") end, "~Argument angle should be int or float")
  T.raises(function() F.rotate(x, 10, {center = 3}) end, "~Argument center should be a sequence")
  T.raises(function() F.rotate(x, 10, {centre = {1, 1}}) end, "~unknown keyword 'centre'")
end)

-- Pillow's Image.transform per output pixel centre: nearest reads floor(x), bilinear the clipped 2 x 2
-- neighbourhood of (x - 0.5, y - 0.5) truncated; outside [0, W) x [0, H): the fill colour
local function ref_pil_transform(img, oh, ow, map, mode, fill)
  local H, W, C = #img, #img[1], #img[1][1]
  local out = {}
  for y = 0, oh - 1 do
    out[y + 1] = {}
    for x = 0, ow - 1 do
      local xx, yy = map(x + 0.5, y + 0.5)
      local px = {}
      for c = 1, C do px[c] = fill[c] end
      if xx >= 0 and xx < W and yy >= 0 and yy < H then
        if mode == "nearest" then
          px = {table.unpack(img[math.floor(yy) + 1][math.floor(xx) + 1])}
        else
          xx, yy = xx - 0.5, yy - 0.5
          local x0, y0 = math.floor(xx), math.floor(yy)
          local dx, dy = xx - x0, yy - y0
          local function at(r, cx, c) return img[clamp(r, 0, H - 1) + 1][clamp(cx, 0, W - 1) + 1][c] end
          for c = 1, C do
            local v1 = at(y0, x0, c) + (at(y0, x0 + 1, c) - at(y0, x0, c)) * dx
            local v2 = v1
            if y0 + 1 < H then v2 = at(y0 + 1, x0, c) + (at(y0 + 1, x0 + 1, c) - at(y0 + 1, x0, c)) * dx end
            px[c] = trunc(v1 + (v2 - v1) * dy)
          end
        end
      end
      out[y + 1][x + 1] = px
    end
  end
  return out
end

local function round15(v) return tonumber(string.format("%.15f", v)) end

T.test("affine and rotate on PIL-like images: Pillow's transform", function()
  local hwc = u8({7, 9, 3})
  local img = hwc:tolist()
  for _, mode in ipairs({"nearest", "bilinear"}) do
    local m = inverse_affine({4.5, 3.5}, 33, {1, -2}, 1.1, {7, -3})
    local map = function(x, y) return m[1] * x + m[2] * y + m[3], m[4] * x + m[5] * y + m[6] end
    T.eq(F.affine(pil(hwc), 33, {1, -2}, 1.1, {7, -3}, mode, {10, 20, 30})._data:tolist(),
      ref_pil_transform(img, 7, 9, map, mode, {10, 20, 30}), "affine " .. mode)
    -- Image.rotate: the matrix rounded to 15 decimals, about (w / 2, h / 2)
    local a = -math.rad(41)
    local r = {round15(math.cos(a)), round15(math.sin(a)), 0, round15(-math.sin(a)), round15(math.cos(a)), 0}
    r[3] = r[1] * -4.5 + r[2] * -3.5 + 4.5
    r[6] = r[4] * -4.5 + r[5] * -3.5 + 3.5
    local rmap = function(x, y) return r[1] * x + r[2] * y + r[3], r[4] * x + r[5] * y + r[6] end
    T.eq(F.rotate(pil(hwc), 41, mode)._data:tolist(), ref_pil_transform(img, 7, 9, rmap, mode, {0, 0, 0}), "rotate " .. mode)
  end
  T.eq(F.rotate(pil(hwc), 180)._data:tolist(), hwc:flip(0):flip(1):tolist(), "rotate 180: transpose")
  T.eq(F.rotate(pil(hwc), 90, {expand = true}).size, {7, 9}, "rotate 90 expand: transpose")
  T.eq(F.rotate(pil(hwc), 30, {expand = true}).size, {13, 11}, "expand size as Pillow")
  T.eq(F.rotate(pil(hwc), 30, {expand = true}).size, {F.rotate(hwc:permute(2, 0, 1), 30, {expand = true}):size(2),
    F.rotate(hwc:permute(2, 0, 1), 30, {expand = true}):size(1)}, "expand size: PIL and tensor agree")
  T.eq(F.rotate(pil(hwc), 37)._data:permute(2, 0, 1):tolist(), F.rotate(hwc:permute(2, 0, 1), 37):tolist(),
    "nearest rotate: PIL and tensor agree")
  local l = u8({5, 6, 1})
  T.eq(F.rotate(pil(l), 20, {fill = 200}).mode, "L", "L stays L")
  T.raises(function() F.rotate(pil(hwc), 20, {fill = {1, 2}}) end,
    "~The number of elements in 'fill' does not match the number of channels of the image (2 != 3)")
  local rgba = u8({6, 6, 4})
  T.eq(F.rotate(pil(rgba), 15, "bilinear").mode, "RGBA", "RGBA (premultiplied for bilinear)")
end)

T.test("perspective", function()
  local s = {{0, 0}, {8, 0}, {8, 6}, {0, 6}}
  local e = {{1, 0}, {7, 1}, {8, 5}, {0, 6}}
  local c = F._get_perspective_coeffs(s, e)
  for k = 1, 4 do -- the coefficients take the end points to the start points
    local x, y = e[k][1], e[k][2]
    local den = c[7] * x + c[8] * y + 1
    T.near({(c[1] * x + c[2] * y + c[3]) / den, (c[4] * x + c[5] * y + c[6]) / den}, s[k], 1e-5, "corner " .. k)
  end
  local x = torch.rand(2, 7, 9)
  local g = function(px, py) -- _perspective_grid in float32
    local bx, by = px + 0.5, py + 0.5
    local den = fr(fr(fr(bx * fr(c[7])) + fr(by * fr(c[8]))) + 1)
    local r = {}
    for k = 1, 6 do r[k] = fr(fr(c[k]) / (k <= 3 and 4.5 or 3.5)) end
    return fr(fr(fr(fr(fr(bx * r[1]) + fr(by * r[2])) + r[3]) / den) - 1), fr(fr(fr(fr(fr(bx * r[4]) + fr(by * r[5])) + r[6]) / den) - 1)
  end
  T.near(F.perspective(x, s, e):tolist(), ref_sample(x:tolist(), 7, 9, g, "bilinear"), 1e-5, "tensor bilinear")
  T.near(F.perspective(x, s, e, {interpolation = "nearest", fill = {1}}):tolist(), ref_sample(x:tolist(), 7, 9, g, "nearest", {1}), 1e-5,
    "tensor nearest with fill")
  local hwc = u8({7, 9, 3})
  local map = function(px, py)
    local den = c[7] * px + c[8] * py + 1
    return (c[1] * px + c[2] * py + c[3]) / den, (c[4] * px + c[5] * py + c[6]) / den
  end
  T.eq(F.perspective(pil(hwc), s, e)._data:tolist(), ref_pil_transform(hwc:tolist(), 7, 9, map, "bilinear", {0, 0, 0}), "PIL bilinear")
  T.raises(function() F.perspective(x, s, {{0, 0}}) end, "~Please provide exactly four corners, got 4 startpoints and 1 endpoints.")
end)

T.test("elastic_transform", function()
  local x = torch.rand(3, 6, 8)
  local zero = torch.zeros(1, 6, 8, 2)
  T.near(F.elastic_transform(x, zero):tolist(), x:tolist(), 1e-6, "no displacement: the image")
  T.eq(F.elastic_transform(x, zero, "nearest"):tolist(), x:tolist(), "nearest, no displacement")
  local d = torch.zeros(1, 6, 8, 2)
  d[":, :, :, 0"] = 2 / 8 -- one pixel to the right in x
  local want = map3(x:tolist(), function(v, c, y, xx) return xx < 8 and x:tolist()[c][y][xx + 1] or 0.0 end)
  T.near(F.elastic_transform(x, d, "nearest"):tolist(), want, 1e-6, "shift by one pixel")
  local hwc = u8({6, 8, 3})
  T.eq(F.elastic_transform(pil(hwc), zero, "nearest")._data:tolist(), hwc:tolist(), "PIL")
  T.raises(function() F.elastic_transform(x, torch.zeros(1, 5, 8, 2)) end,
    "~Argument displacement shape should be (1, 6, 8, 2), but given torch.Size([1, 5, 8, 2])")
  T.raises(function() F.elastic_transform(x, 1) end, "~Argument displacement should be a Tensor")
end)

T.test("non-contiguous inputs", function()
  local x = u8({3, 9, 7}):transpose(1, 2) -- [3, 7, 9], strided
  local xc = x:contiguous()
  local xf = torch.rand(2, 3, 9, 7):transpose(2, 3)
  local ops = {
    function(v) return F.equalize(v) end, function(v) return F.autocontrast(v) end, function(v) return F.adjust_sharpness(v, 1.5) end,
    function(v) return F.gaussian_blur(v, 3) end, function(v) return F.rotate(v, 33, "bilinear") end,
    function(v) return F.perspective(v, {{0, 0}, {8, 0}, {8, 6}, {0, 6}}, {{1, 1}, {8, 0}, {7, 6}, {0, 5}}) end,
  }
  for k, op in ipairs(ops) do
    T.eq(op(x):tolist(), op(xc):tolist(), "uint8 op " .. k)
    if k ~= 1 then T.eq(op(xf):tolist(), op(xf:contiguous()):tolist(), "float op " .. k) end
  end
end)
