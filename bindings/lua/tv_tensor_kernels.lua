-- torchvision's tensor kernels as tensor ops, for images on any device (the C loops of
-- engine/image_*.c run on the CPU only). Each kernel takes the arguments of its C loop without
-- the layout and gives the same values: arithmetic is done in the precision the C loop uses
-- (float32, or float64 for float64 images; resize, blur and sharpness sums in float64 with the
-- taps added in the C loop's order), constants are tensors of that precision, and uint8 results
-- are truncated or rounded half to even where the C loop does. Index maps and weights are built
-- on the host. Argument and shape errors come from the C loop itself, run on a one-pixel CPU
-- copy of the image's shape (check), so both paths raise the same messages.
local torch = require "torch"
local C = require("tv_io")._C

local K = {}

local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end

-- the working dtype of a C loop: float64 images in double, others in float32
local function work_dtype(img) return img.dtype == torch.float64 and torch.float64 or torch.float32 end

-- a 0-dim constant of dtype on img's device
local function const(v, dtype, img) return torch.tensor(v, {dtype = dtype, device = img.device}) end

local function index(list, img) return torch.tensor(list, {dtype = torch.int64, device = img.device}) end

-- run the C loop f on a CPU image of img's dtype with one plane per channel and at most one pixel
-- per side: its checks, on the arguments and the shape, raise the C loop's errors
local function proxy(img)
  local shape = img.shape:totable()
  local n = #shape
  for d = 1, n - 3 do shape[d] = 1 end
  for d = math.max(1, n - 1), n do shape[d] = math.min(shape[d], 1) end
  return torch.zeros(shape, {dtype = img.dtype})
end
local function check(f, img, ...) return f(proxy(img), "chw", ...) end

---------------------------------------------------------------------------
-- normalize, windows (crop and pad)
---------------------------------------------------------------------------

-- normalize_(t, mean, std): in place, (t - mean) / std per channel
function K.normalize_(t, mean, std)
  if type(mean) ~= "table" then mean = {mean} end
  if type(std) ~= "table" then std = {std} end
  C.normalize_(t:dim() < 3 and t:cpu() or proxy(t), mean, std)
  local shape = #mean == 1 and {1, 1, 1} or {#mean, 1, 1}
  local m = torch.tensor(mean, {dtype = t.dtype, device = t.device}):view(shape)
  local s = torch.tensor(std, {dtype = t.dtype, device = t.device}):view(shape)
  return t:sub_(m):div_(s)
end

-- the source index of i along an axis of n (-1: outside, constant padding)
local function map_index(i, n, mode)
  if i >= 0 and i < n then return i end
  if mode == "constant" then return -1 end
  if mode == "edge" then return i < 0 and 0 or n - 1 end
  if mode == "reflect" then
    if n == 1 then return 0 end
    local p = 2 * (n - 1)
    local r = i % p
    return r < n and r or p - r
  end
  local p = 2 * n -- symmetric
  local r = i % p
  return r < n and r or p - 1 - r
end

-- the index map of out positions start .. start + len - 1; the first index when it is a plain range
local function axis_map(start, len, n, mode)
  local idx, outside, range = {}, {}, true
  for k = 1, len do
    local j = map_index(start + k - 1, n, mode)
    idx[k] = j
    if j < 0 then outside[#outside + 1] = k - 1; idx[k] = 0 end
    range = range and j == start + k - 1
  end
  return idx, outside, range
end

-- window(img, top, left, h, w, mode, fill): rows top .. top + h - 1, columns left .. left + w - 1,
-- outside the image by mode (constant: fill, one value or one per channel)
function K.window(img, top, left, h, w, mode, fill)
  local neg = h < 0 or w < 0
  check(C.window, img, top, left, neg and h or math.min(h, 1), neg and w or math.min(w, 1), mode, fill)
  local H, W = img:size(-2), img:size(-1)
  if h == 0 or w == 0 or ((H == 0 or W == 0) and mode ~= "constant") then
    local shape = img.shape:totable()
    shape[#shape - 1], shape[#shape] = h, w
    return torch.zeros(shape, {dtype = img.dtype, device = img.device})
  end
  local ri, rout, rrange = axis_map(top, h, H, mode)
  local ci, cout, crange = axis_map(left, w, W, mode)
  local out
  if H == 0 or W == 0 then -- all fill
    local shape = img.shape:totable()
    shape[#shape - 1], shape[#shape] = h, w
    out = torch.zeros(shape, {dtype = img.dtype, device = img.device})
  else
    out = rrange and img:narrow(-2, top, h) or img:index_select(-2, index(ri, img))
    out = crange and out:narrow(-1, left, w) or out:index_select(-1, index(ci, img))
  end
  if #rout == 0 and #cout == 0 and H > 0 and W > 0 then return out end
  local mask = torch.zeros({h, w}, {dtype = torch.bool, device = img.device})
  if #rout > 0 then mask:index_fill_(0, index(rout, img), true) end
  if #cout > 0 then mask:index_fill_(1, index(cout, img), true) end
  if H == 0 or W == 0 then mask:fill_(true) end
  if type(fill) ~= "table" then fill = {fill or 0} end
  local nchan = img:dim() >= 3 and img:size(-3) or 1
  local fv = {}
  for c = 1, nchan do fv[c] = fill[(c - 1) % #fill + 1] end
  local f = torch.tensor(fv, {dtype = img.dtype, device = img.device})
  if img:dim() >= 3 then f = f:view(nchan, 1, 1) else f = f:view({}) end
  return torch.where(mask, f, out)
end

---------------------------------------------------------------------------
-- resize: separable taps, summed in double in the C loop's order
---------------------------------------------------------------------------

local function trunc(x) return x < 0 and math.ceil(x) or math.floor(x) end

-- the cubic convolution kernel: a = -0.5 antialiased (as Pillow), -0.75 plain (torch's bicubic)
local function cubic(x, a)
  x = math.abs(x)
  if x < 1.0 then return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0 end
  if x < 2.0 then return (((x - 5.0) * x + 8.0) * x - 4.0) * a end
  return 0.0
end

-- per output index: first tap and weights (the C loop's make_weights for tensors)
local function resize_weights(n_in, n_out, interp, filtered)
  local scale = n_in / n_out
  local bicubic = interp == "bicubic"
  local support = (scale > 1.0 and scale or 1.0) * (bicubic and 2.0 or 1.0)
  local lo, ws, k = {}, {}, 1
  for i = 0, n_out - 1 do
    local w = {}
    if interp == "nearest" or interp == "nearest-exact" then
      local pos = interp == "nearest" and math.floor(i * scale) or math.floor((i + 0.5) * scale)
      lo[i + 1], w[1] = math.min(pos, n_in - 1), 1.0
    elseif filtered then
      local center, invscale, total = (i + 0.5) * scale, 1.0 / (scale > 1.0 and scale or 1.0), 0.0
      local a, b = math.max(trunc(center - support + 0.5), 0), math.min(trunc(center + support + 0.5), n_in)
      lo[i + 1] = a
      for j = 0, b - a - 1 do
        local x = (j + a - center + 0.5) * invscale
        if bicubic then w[j + 1] = cubic(x, -0.5)
        else x = math.abs(x); w[j + 1] = x < 1.0 and 1.0 - x or 0.0 end
        total = total + w[j + 1]
      end
      if total ~= 0.0 then for j = 1, #w do w[j] = w[j] / total end end
    elseif bicubic then -- taps j0-1 .. j0+2 clamped to the axis, clamped taps adding to the edge
      local src = (i + 0.5) * scale - 0.5
      local j0 = math.floor(src)
      local t = src - j0
      local tw = {cubic(t + 1.0, -0.75), cubic(t, -0.75), cubic(1.0 - t, -0.75), cubic(2.0 - t, -0.75)}
      local function clamp(j) return math.max(0, math.min(n_in - 1, j)) end
      local first = clamp(j0 - 1)
      lo[i + 1] = first
      for j = 1, clamp(j0 + 2) - first + 1 do w[j] = 0.0 end
      for j = 1, 4 do
        local at = clamp(j0 - 2 + j) - first + 1
        w[at] = w[at] + tw[j]
      end
    else
      local src = math.max((i + 0.5) * scale - 0.5, 0.0)
      local j = math.floor(src)
      local l1 = src - j
      lo[i + 1] = j
      if j < n_in - 1 then w[1], w[2] = 1.0 - l1, l1 else w[1] = 1.0 end
    end
    ws[i + 1] = w
    k = math.max(k, #w)
  end
  return lo, ws, k
end

-- sum over taps j of weight_j * x gathered at lo + j along dim (missing taps weigh 0)
local function taps(x, dim, n_in, lo, ws, k)
  local acc
  local shape = dim == -1 and {-1} or {-1, 1}
  for j = 1, k do
    local idx, wj = {}, {}
    for i = 1, #lo do
      idx[i] = math.min(lo[i] + j - 1, n_in - 1)
      wj[i] = ws[i][j] or 0.0
    end
    local term = x:index_select(dim, index(idx, x)) * torch.tensor(wj, {dtype = torch.float64, device = x.device}):view(shape)
    acc = acc and acc + term or term
  end
  return acc
end

-- resize(img, oh, ow, interp, antialias): torchvision's tensor resize (antialias: bilinear and bicubic)
function K.resize(img, oh, ow, interp, antialias)
  check(C.resize, img, oh, ow, interp, antialias)
  local H, W = img:size(-2), img:size(-1)
  local filtered = antialias and (interp == "bilinear" or interp == "bicubic")
  local xlo, xw, xk = resize_weights(W, ow, interp, filtered)
  local ylo, yw, yk = resize_weights(H, oh, interp, filtered)
  if xk == 1 and yk == 1 then -- nearest: a gather
    return img:index_select(-2, index(ylo, img)):index_select(-1, index(xlo, img))
  end
  local out = taps(taps(img:to(torch.float64), -1, W, xlo, xw, xk), -2, H, ylo, yw, yk)
  if img.dtype == torch.uint8 then out = out:clamp(0, 255):round() end
  return out:to(img.dtype)
end

---------------------------------------------------------------------------
-- colour: brightness, contrast, saturation, hue, grayscale
---------------------------------------------------------------------------

-- rgb_to_grayscale in the image's dtype, (..., 1, H, W) (H x W images: themselves)
local function gray(img, wd)
  if img:dim() == 2 then return img end
  if img:size(-3) == 1 then return img:narrow(-3, 0, 1) end
  local x = img:to(wd)
  local g = x:narrow(-3, 0, 1) * const(0.2989, wd, img) + x:narrow(-3, 1, 1) * const(0.587, wd, img)
  return (g + x:narrow(-3, 2, 1) * const(0.114, wd, img)):to(img.dtype)
end

-- torchvision's _blend(a, b, ratio) clamped to the dtype's bound, back in img's dtype (uint8 truncates)
local function blend(img, a, b, factor, wd)
  local ratio = const(wd == torch.float64 and factor or f32(factor), wd, img)
  local inv = const(wd == torch.float64 and 1.0 - factor or f32(1.0 - factor), wd, img)
  local bound = img.dtype == torch.uint8 and 255.0 or 1.0
  return (a:to(wd) * ratio + b:to(wd) * inv):clamp(0.0, bound):to(img.dtype)
end

-- torchvision's adjust_hue: rgb -> hsv in float32, hue shifted, back (uint8: /255, *255.999 truncated)
local function hue(img, factor)
  local fl = torch.float32
  local x = img:to(fl)
  if img.dtype == torch.uint8 then x = x / 255.0 end
  local r, g, b = x:narrow(-3, 0, 1), x:narrow(-3, 1, 1), x:narrow(-3, 2, 1)
  local maxc, minc = torch.maximum(torch.maximum(r, g), b), torch.minimum(torch.minimum(r, g), b)
  local cr, eq = maxc - minc, maxc:eq(minc)
  local one = const(1.0, fl, img)
  local sat = cr / torch.where(eq, one, maxc)
  local crd = torch.where(eq, one, cr)
  local rc, gc, bc = (maxc - r) / crd, (maxc - g) / crd, (maxc - b) / crd
  local isr, isg = maxc:eq(r), maxc:eq(g)
  local zero = const(0.0, fl, img)
  local hr = torch.where(isr, bc - gc, zero)
  local hg = torch.where(torch.logical_and(isg, isr:logical_not()), (rc + 2.0) - bc, zero)
  local hb = torch.where(torch.logical_and(isg:logical_not(), isr:logical_not()), (gc + 4.0) - rc, zero)
  local h = torch.fmod((hr + hg + hb) / 6.0 + 1.0, 1.0)
  h = torch.fmod(h + const(factor, fl, img), 1.0)
  h = torch.where(h:lt(0), h + 1.0, h)
  local i6 = (h * 6.0):floor()
  local f, v = h * 6.0 - i6, maxc
  local p = (v * (1.0 - sat)):clamp(0, 1)
  local q = (v * (1.0 - sat * f)):clamp(0, 1)
  local t = (v * (1.0 - sat * (1.0 - f))):clamp(0, 1)
  local i = i6:remainder(6)
  local function pick(c) -- c[k + 1]: the value for sector k
    local o = c[6]
    for k = 4, 0, -1 do o = torch.where(i:eq(k), c[k + 1], o) end
    return o
  end
  local out = torch.cat({pick({v, q, p, p, t, v}), pick({t, v, v, q, p, p}), pick({p, p, t, v, v, q})}, -3)
  if img.dtype == torch.uint8 then out = out * const(255.999, fl, img) end
  return out:to(img.dtype)
end

-- adjust(img, op, factor): factor is num_output_channels for "grayscale"
function K.adjust(img, op, factor)
  check(C.adjust, img, op, factor)
  local wd = work_dtype(img)
  local nc = img:dim() >= 3 and img:size(-3) or 1
  if op == "brightness" then return blend(img, img, torch.zeros({}, {dtype = wd, device = img.device}), factor, wd) end
  if op == "contrast" then
    local g = gray(img, wd)
    local mean = (g:to(torch.float64):sum({-2, -1}, true) / (g:size(-2) * g:size(-1))):to(wd)
    return blend(img, img, mean, factor, wd)
  end
  if op == "grayscale" then
    local g = gray(img, wd)
    if img:dim() == 2 then return g:clone() end
    return factor == 1 and g:contiguous() or torch.cat({g, g, g}, -3)
  end
  if nc == 1 then return img:clone() end
  if op == "saturation" then return blend(img, img, gray(img, wd), factor, wd) end
  return hue(img, factor)
end

---------------------------------------------------------------------------
-- point maps: invert, posterize, solarize, autocontrast, equalize
---------------------------------------------------------------------------

-- Pillow's equalize per plane of a uint8 image: with step = (count - count of the top value) // 255,
-- v -> min((step // 2 + count below v) // step, 255); a plane whose step is 0 is kept
local function equalize(img)
  local HW = img:size(-2) * img:size(-1)
  if img:numel() == 0 then return img:clone() end
  local flat = img:reshape(-1, HW):to(torch.int64)
  local P = flat:size(0)
  local base = torch.arange(P, {dtype = torch.int64, device = img.device}):mul_(256):view(P, 1)
  local pos = (flat + base):reshape(-1)
  local hist = torch.zeros(P * 256, {dtype = torch.int64, device = img.device})
  hist = hist:index_add_(0, pos, torch.ones(pos:size(0), {dtype = torch.int64, device = img.device})):view(P, 256)
  local values = torch.arange(256, {dtype = torch.int64, device = img.device})
  local top = torch.where(hist:gt(0), values, -1):amax(1, true) -- the highest value present
  local last = hist:gather(1, top:clamp(0, 255))
  local step = (flat:size(1) - last) // 255
  local below = hist:cumsum(1) - hist
  local safe = torch.where(step:eq(0), 1, step)
  local lut = ((safe // 2 + below) // safe):clamp(0, 255)
  lut = torch.where(step:eq(0), values, lut)
  return lut:gather(1, flat):to(torch.uint8):view(img.shape)
end

function K.point(img, op, arg)
  check(C.point, img, op, arg)
  if op == "equalize" then return equalize(img) end
  local u8 = img.dtype == torch.uint8
  local wd = work_dtype(img)
  if op == "invert" then
    if u8 then return 255 - img end
    return (1.0 - img:to(wd)):to(img.dtype)
  elseif op == "posterize" then
    local step = 1 << (8 - math.tointeger(arg))
    return (img:to(torch.int32) // step * step):to(torch.uint8)
  elseif op == "solarize" then
    local t = wd == torch.float64 and arg or f32(arg)
    local x = img:to(wd)
    local inv = u8 and 255 - img or (1.0 - x):to(img.dtype)
    return torch.where(x:ge(t), inv, img)
  end
  -- autocontrast, per plane
  local x = img:to(wd)
  local lo, hi = x:amin({-2, -1}, true), x:amax({-2, -1}, true)
  local bound = u8 and 255.0 or 1.0
  local scale = const(bound, wd, img) / (hi - lo)
  local bad = scale:isfinite():logical_not()
  lo = torch.where(bad, const(0.0, wd, img), lo)
  scale = torch.where(bad, const(1.0, wd, img), scale)
  return ((x - lo) * scale):clamp(0, bound):to(img.dtype)
end

---------------------------------------------------------------------------
-- filters: sharpness, gaussian blur
---------------------------------------------------------------------------

-- sharpness(img, factor): the 3x3 smoothing [1 1 1; 1 5 1; 1 1 1] / 13 inside, the border kept, blended
function K.sharpness(img, factor)
  check(C.sharpness, img, factor)
  local H, W = img:size(-2), img:size(-1)
  if H <= 2 or W <= 2 then return img end
  local wd = work_dtype(img)
  local k1, k5 = 1.0 / 13.0, 5.0 / 13.0
  if wd ~= torch.float64 then k1, k5 = f32(k1), f32(k5) end
  local x = img:to(torch.float64)
  local sum
  for i = 0, 2 do
    for j = 0, 2 do
      local term = x:narrow(-2, i, H - 2):narrow(-1, j, W - 2) * ((i == 1 and j == 1) and k5 or k1)
      sum = sum and sum + term or term
    end
  end
  sum = sum:to(wd)
  if img.dtype == torch.uint8 then sum = sum:round() end
  local deg = x:to(wd):clone()
  deg:narrow(-2, 1, H - 2):narrow(-1, 1, W - 2):copy_(sum)
  return blend(img, img, deg, factor, wd)
end

-- torchvision's 1-d Gaussian kernel (in float32 arithmetic unless f64)
local function gaussian_kernel(k, sigma, f64)
  local xs = {}
  for i = 1, k do xs[i] = -(k - 1) * 0.5 + (i - 1) end
  local dt = f64 and torch.float64 or torch.float32
  local t = torch.tensor(xs, {dtype = dt}) / (f64 and sigma or f32(sigma))
  local pdf = ((t * t) * -0.5):exp():tolist()
  local sum = 0.0
  for i = 1, k do sum = f64 and sum + pdf[i] or f32(sum + pdf[i]) end
  for i = 1, k do pdf[i] = f64 and pdf[i] / sum or f32(pdf[i] / sum) end
  return pdf
end

-- gaussian_blur(img, kx, ky, sx, sy): reflect-padded separable convolution, summed in double
function K.gaussian_blur(img, kx, ky, sx, sy)
  if img:dim() < 2 or kx // 2 >= img:size(-1) or ky // 2 >= img:size(-2) then
    return C.gaussian_blur(img:cpu(), kx, ky, sx, sy) -- its error, naming the real shape
  end
  local shape = img.shape:totable()
  for d = 1, #shape - 2 do shape[d] = 1 end
  shape[#shape - 1], shape[#shape] = math.min(shape[#shape - 1], ky // 2 + 1), math.min(shape[#shape], kx // 2 + 1)
  C.gaussian_blur(torch.zeros(shape, {dtype = img.dtype}), kx, ky, sx, sy) -- the other checks
  local f64 = img.dtype == torch.float64
  local function pass(x, dim, n, k, sigma)
    local w = gaussian_kernel(k, sigma, f64)
    local function reflect(i) return i < 0 and -i or (i >= n and 2 * (n - 1) - i or i) end
    local acc
    for j = 1, k do
      local idx = {}
      for i = 1, n do idx[i] = reflect(i + j - 2 - k // 2) end
      local term = x:index_select(dim, index(idx, x)) * w[j]
      acc = acc and acc + term or term
    end
    return acc
  end
  local out = pass(pass(img:to(torch.float64), -1, img:size(-1), kx, sx), -2, img:size(-2), ky, sy)
  if img.dtype == torch.uint8 then out = out:to(torch.float32):round() end
  return out:to(img.dtype)
end

-- the kernel standing for the C loop f on img, when img is a tensor off the CPU
local by_loop = {[C.window] = K.window, [C.resize] = K.resize, [C.adjust] = K.adjust, [C.point] = K.point,
  [C.sharpness] = K.sharpness, [C.gaussian_blur] = K.gaussian_blur, [C.normalize_] = K.normalize_}
function K.for_device(f, img)
  if torch.is_tensor(img) and img.device.type ~= "cpu" then return by_loop[f] end
  return nil
end
K.by_loop = by_loop
-- for tv_warp_kernels
K._proxy, K._const = proxy, const

return K
