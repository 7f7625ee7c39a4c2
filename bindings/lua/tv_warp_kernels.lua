-- torchvision's tensor warps (rotate, affine, perspective through C.warp; elastic_transform through
-- C.grid_sample) as tensor ops, for images off the CPU; registered in tv_tensor_kernels' by_loop.
-- They give the values of engine/image_warp.c: the normalised grid built as make_grid does, then
-- grid_sample(align_corners=False, zeros) as sample does, every step one tensor op in the C loop's
-- precision (float32, float64 for float64 images) so that each rounds as its R() does; corner
-- weights and values are summed in the C loop's order; fill goes through the sampled mask
-- (nearest: outside takes fill; bilinear: v * m + (1 - m) * fill); uint8 results are rounded half
-- to even. The grid is built on the image's device. Errors come from the C loop on a small CPU proxy.
local torch = require "torch"
local C = require("tv_io")._C
local K = require "tv_tensor_kernels"

local proxy, const = K._proxy, K._const

-- v rounded to the working dtype wd, as the C loop's R()
local function rnd(v, wd)
  if wd == torch.float64 then return v end
  return (string.unpack("<f", string.pack("<f", v)))
end

-- a number, a list of numbers (or numeric strings) or a CPU tensor, already checked by the C loop, as a list
local function numbers(x)
  if torch.is_tensor(x) then return x:reshape(-1):tolist() end
  if type(x) ~= "table" then return {tonumber(x)} end
  local out = {}
  for i = 1, #x do out[i] = tonumber(x[i]) end
  return out
end

-- the fill values, one per channel, as a wd tensor broadcasting over (..., C, npix); nil: no fill
local function fill_tensor(fill, img, wd)
  if fill == nil then return nil end
  fill = numbers(fill)
  if img:dim() < 3 then return const(rnd(fill[1], wd), wd, img) end
  local v = {}
  for c = 1, img:size(-3) do v[c] = rnd(fill[#fill == 1 and 1 or c], wd) end
  return torch.tensor(v, {dtype = wd, device = img.device}):view(#v, 1)
end

-- the planes' values at flat positions idx ((npix) int64), in wd: (..., npix)
local function pick(flat, idx, wd)
  if flat:size(-1) == 0 then
    local shape = flat.shape:totable()
    shape[#shape] = idx:size(0)
    return torch.zeros(shape, {dtype = wd, device = flat.device})
  end
  return flat:index_select(-1, idx):to(wd)
end

-- the flat position of integer-valued (cx, cy) inside the H x W plane, 0 outside; and the inside mask
local function position(cx, cy, H, W)
  local inside = cx:ge(0):logical_and(cx:le(W - 1)):logical_and(cy:ge(0)):logical_and(cy:le(H - 1))
  local zero = torch.zeros({}, {dtype = cx.dtype, device = cx.device})
  local xi, yi = torch.where(inside, cx, zero):to(torch.int64), torch.where(inside, cy, zero):to(torch.int64)
  return yi * W + xi, inside
end

-- sample's work: img (..., H, W) at the normalised points gx, gy ((npix) tensors of wd) -> (..., npix) in img's dtype
local function sample(img, gx, gy, interp, fill, wd)
  local H, W = img:size(-2), img:size(-1)
  local ix = (gx + 1) * const(rnd(W / 2, wd), wd, img) - 0.5
  local iy = (gy + 1) * const(rnd(H / 2, wd), wd, img) - 0.5
  local flat = img:flatten(-2)
  local f = fill_tensor(fill, img, wd)
  local zero = const(0, wd, img)
  local v
  if interp ~= "bilinear" then
    local idx, inside = position(ix:round(), iy:round(), H, W)
    v = torch.where(inside, pick(flat, idx, wd), zero)
    if f then v = torch.where(inside, v, f) end
  else
    local x0, y0 = ix:floor(), iy:floor()
    local ew = ix - x0
    local ee = 1 - ew
    local nn = iy - y0
    local ss = 1 - nn
    local w = {ss * ee, ss * ew, nn * ee, nn * ew}
    local m
    for c = 0, 3 do
      local idx, inside = position(c & 1 == 1 and x0 + 1 or x0, c >> 1 == 1 and y0 + 1 or y0, H, W)
      local t = torch.where(inside, pick(flat, idx, wd) * w[c + 1], zero)
      local wm = torch.where(inside, w[c + 1], zero)
      v = v and v + t or t
      m = m and m + wm or wm
    end
    if f then v = v * m + (1 - m) * f end
  end
  if img.dtype == torch.uint8 then v = v:round() end
  return v:to(img.dtype)
end

-- sample's result reshaped to (..., oh, ow)
local function sampled(img, gx, gy, oh, ow, interp, fill, wd)
  local shape = img.shape:totable()
  shape[#shape - 1], shape[#shape] = oh, ow
  if oh * ow == 0 then return torch.zeros(shape, {dtype = img.dtype, device = img.device}) end
  return sample(img, gx:reshape(-1), gy:reshape(-1), interp, fill, wd):reshape(shape)
end

-- warp(img, oh, ow, "affine" | "perspective", coeffs, interp, fill): make_grid then sample.
-- affine: coeffs the inverse matrix about the centre, normalised by the input's size; perspective:
-- the 8 coefficients on pixel centres, normalised by the output's size
function K.warp(img, oh, ow, kind, coeffs, interp, fill)
  if img:dim() < 2 then return C.warp(img:cpu(), "chw", oh, ow, kind, coeffs, interp, fill) end -- its error
  local sizes_ok = math.type(oh) == "integer" and math.type(ow) == "integer" and oh >= 0 and ow >= 0
  C.warp(proxy(img), "chw", sizes_ok and math.min(oh, 1) or oh, sizes_ok and math.min(ow, 1) or ow, kind, coeffs, interp, fill)
  local wd = img.dtype == torch.float64 and torch.float64 or torch.float32
  local affine = kind == "affine"
  local t, cf = {}, numbers(coeffs)
  for i = 1, 8 do t[i] = (i <= 6 or not affine) and rnd(cf[i], wd) or 0 end
  local nx = rnd(0.5 * (affine and img:size(-1) or ow), wd)
  local ny = rnd(0.5 * (affine and img:size(-2) or oh), wd)
  local function c(v) return const(v, wd, img) end
  local opts = {dtype = torch.float64, device = img.device}
  local xs = (torch.arange(ow, opts) + (affine and 0.5 - ow * 0.5 or 0.5)):to(wd):view(1, ow)
  local ys = (torch.arange(oh, opts) + (affine and 0.5 - oh * 0.5 or 0.5)):to(wd):view(oh, 1)
  local gx = xs * c(rnd(t[1] / nx, wd)) + ys * c(rnd(t[2] / nx, wd)) + c(rnd(t[3] / nx, wd))
  local gy = xs * c(rnd(t[4] / ny, wd)) + ys * c(rnd(t[5] / ny, wd)) + c(rnd(t[6] / ny, wd))
  if not affine then
    local den = xs * c(t[7]) + ys * c(t[8]) + 1
    gx, gy = gx / den - 1, gy / den - 1
  end
  return sampled(img, gx:expand(oh, ow), gy:expand(oh, ow), oh, ow, interp, fill, wd)
end

-- grid_sample(img, grid [1, oh, ow, 2] or [oh, ow, 2] of normalised (x, y), interp, fill)
function K.grid_sample(img, grid, interp, fill)
  local gd = torch.is_tensor(grid) and grid:dim() or 0
  local ok = torch.is_tensor(grid) and (gd == 3 or (gd == 4 and grid:size(0) == 1)) and grid:size(-1) == 2
    and grid:is_floating_point()
  if img:dim() < 2 or not ok then -- the C loop's error, naming the real shapes
    return C.grid_sample(img:cpu(), torch.is_tensor(grid) and grid:cpu() or grid, interp, fill)
  end
  local oh, ow = grid:size(-3), grid:size(-2)
  C.grid_sample(proxy(img), torch.zeros({math.min(oh, 1), math.min(ow, 1), 2}, {dtype = grid.dtype}), interp, fill)
  local wd = img.dtype == torch.float64 and torch.float64 or torch.float32
  local g = grid:to(img.device):reshape(oh, ow, 2):to(wd)
  return sampled(img, g:select(-1, 0), g:select(-1, 1), oh, ow, interp, fill, wd)
end

K.by_loop[C.warp], K.by_loop[C.grid_sample] = K.warp, K.grid_sample

return K
