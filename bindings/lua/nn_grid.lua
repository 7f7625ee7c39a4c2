-- F.affine_grid and F.grid_sample (4-d: bilinear or nearest, padding zeros or border,
-- align_corners), as PyTorch's, for spatial transformer networks. grid_sample gathers the
-- corners with torch.gather and blends them, so the gradients with respect to the input and
-- to the grid come from those ops.
local torch = require "torch"
local U = require "nn_util"
local F = torch.nn.functional

local M = {}

-- the coordinates of n pixels in [-1, 1]: corner pixels' centres at +-1 with align_corners,
-- else the pixel edges. PyTorch's formula (linspace, then scaled), so the coordinates round as
-- its do up to linspace's last bit: at the identity transform the samples land on pixel centres,
-- where bilinear sampling's gradient jumps with that bit.
local function base_coords(n, align, opts)
  if n == 1 then return torch.zeros(1, opts) end
  local t = torch.linspace(-1, 1, n, opts)
  if align then return t end
  return t * (n - 1) / n
end

-- PyTorch's warning when align_corners is left out (its default changed in 1.3)
local function default_align(v)
  if v == nil then
    U.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please specify " ..
      "align_corners=True if the old behavior is desired. See the documentation of grid_sample for details.")
  end
  return v == true
end

-- F.affine_grid(theta [N, 2, 3], size {N, C, H, W}, align_corners=false) -> grid [N, H, W, 2]
function F.affine_grid(...)
  local o = U.parse("affine_grid", { { "theta", U.REQUIRED }, { "size", U.REQUIRED }, { "align_corners" } }, ...)
  local theta, size = o.theta, o.size
  if type(size) ~= "table" then -- a torch.Size (x:size()) indexes from 0
    local t = {}
    for i = 0, #size - 1 do t[i + 1] = size[i] end
    size = t
  end
  if not theta:is_floating_point() then U.errorf("Expected theta to have floating point type, but got %s", tostring(theta.dtype)) end
  if #size ~= 4 then U.error("affine_grid only supports 4D sizes, for 2D affine transformations") end
  if theta:dim() ~= 3 or theta:size(1) ~= 2 or theta:size(2) ~= 3 then
    U.errorf("Expected a batch of 2D affine matrices of shape Nx2x3 for size %s. Got %s.", tostring(torch.Size(size)), tostring(theta:size()))
  end
  local N, H, W = size[1], size[3], size[4]
  local opts = { dtype = theta.dtype, device = theta.device }
  local align = default_align(o.align_corners)
  local xs = base_coords(W, align, opts):view(1, W):expand(H, W)
  local ys = base_coords(H, align, opts):view(H, 1):expand(H, W)
  local base = torch.stack({ xs, ys, torch.ones(H, W, opts) }, 2):reshape(1, H * W, 3):expand(N, H * W, 3)
  return base:bmm(theta:transpose(1, 2)):view(N, H, W, 2)
end

-- source pixel coordinate from a grid coordinate in [-1, 1]
local function unnormalize(v, n, align)
  if align then return (v + 1) / 2 * (n - 1) end
  return ((v + 1) * n - 1) / 2
end

-- F.grid_sample(input [N, C, H, W], grid [N, Ho, Wo, 2], mode="bilinear", padding_mode="zeros", align_corners=false)
function F.grid_sample(...)
  local o = U.parse("grid_sample", { { "input", U.REQUIRED }, { "grid", U.REQUIRED }, { "mode", "bilinear" },
    { "padding_mode", "zeros" }, { "align_corners" } }, ...)
  local x, grid, mode, pad = o.input, o.grid, o.mode, o.padding_mode
  if mode ~= "bilinear" and mode ~= "nearest" then
    U.errorf("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '%s'", tostring(mode))
  end
  if pad ~= "zeros" and pad ~= "border" then
    U.errorf("grid_sample: padding_mode '%s' is not supported here (zeros, border)", tostring(pad))
  end
  if x:dim() ~= 4 or grid:dim() ~= 4 or grid:size(3) ~= 2 or grid:size(0) ~= x:size(0) then
    U.errorf("grid_sample: expected input [N, C, H, W] and grid [N, Ho, Wo, 2], got %s and %s", tostring(x:size()), tostring(grid:size()))
  end
  local align = default_align(o.align_corners)
  local N, C, H, W = x:size(0), x:size(1), x:size(2), x:size(3)
  local Ho, Wo = grid:size(1), grid:size(2)
  local ix = unnormalize(grid:select(3, 0), W, align)
  local iy = unnormalize(grid:select(3, 1), H, align)
  if pad == "border" then ix, iy = ix:clamp(0, W - 1), iy:clamp(0, H - 1) end
  local flat = x:reshape(N, C, H * W)
  -- input values at integer (cx, cy) [N, Ho, Wo], zero where outside
  local function at(cx, cy)
    local inside = cx:ge(0):logical_and(cx:le(W - 1)):logical_and(cy:ge(0)):logical_and(cy:le(H - 1))
    local idx = (cy:clamp(0, H - 1) * W + cx:clamp(0, W - 1)):to(torch.int64):reshape(N, 1, Ho * Wo):expand(N, C, Ho * Wo)
    local v = flat:gather(2, idx):reshape(N, C, Ho, Wo)
    return v * inside:to(x.dtype):unsqueeze(1)
  end
  if mode == "nearest" then return at(ix:round(), iy:round()) end
  local x0, y0 = ix:floor(), iy:floor()
  local x1, y1 = x0 + 1, y0 + 1
  local wx1, wy1 = ix - x0, iy - y0
  local wx0, wy0 = 1 - wx1, 1 - wy1
  local function w(a, b) return (a * b):unsqueeze(1) end
  return at(x0, y0) * w(wx0, wy0) + at(x1, y0) * w(wx1, wy0) + at(x0, y1) * w(wx0, wy1) + at(x1, y1) * w(wx1, wy1)
end

return M
