-- Pillow's YCbCr mode for the PIL-like images of tv_io: the JPEG/JFIF (ITU-R BT.601 full
-- range) conversions between uint8 H x W x 3 RGB and YCbCr pixels.
-- Y is Pillow's exactly: the products with 64 * coefficient rounded per channel, summed and
-- shifted right by 6 bits. Cb, Cr and the way back to RGB use the same formulas in floating
-- point, rounded; Pillow's own tables can differ from them by one level.
local torch = require "torch"

local M = {}

-- floor((round(64 a r) + round(64 b g) + round(64 c b)) / 64), as Pillow's 6-bit tables
local function fixed(r, g, b, a, bb, c)
  local s = torch.round(r * (64 * a)) + torch.round(g * (64 * bb)) + torch.round(b * (64 * c))
  return torch.floor(s / 64)
end

function M.from_rgb(hwc)
  local x = hwc:to(torch.float64)
  local r, g, b = x:select(2, 0), x:select(2, 1), x:select(2, 2)
  local y = fixed(r, g, b, 0.299, 0.587, 0.114)
  local cb = fixed(r, g, b, -0.16874, -0.33126, 0.5) + 128
  local cr = fixed(r, g, b, 0.5, -0.41869, -0.08131) + 128
  return torch.stack({ y, cb, cr }, 2):clamp(0, 255):to(torch.uint8)
end

function M.to_rgb(hwc)
  local x = hwc:to(torch.float64)
  local y, cb, cr = x:select(2, 0), x:select(2, 1) - 128, x:select(2, 2) - 128
  local r = y + cr * 1.402
  local g = y - cb * 0.34414 - cr * 0.71414
  local b = y + cb * 1.772
  return torch.round(torch.stack({ r, g, b }, 2)):clamp(0, 255):to(torch.uint8)
end

return M
