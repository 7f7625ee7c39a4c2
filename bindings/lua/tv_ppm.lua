-- Netpbm images (PPM / PGM: P6, P5 binary, P3, P2 plain text), as GTSRB stores its images:
-- decode(path) returns the H x W x C uint8 pixels (C = 3 for PPM, 1 for PGM). A maxval other
-- than 255 is scaled to 0..255 (rounded), as PIL does for 16-bit files.
local torch = require "torch"
local tvio = require "tv_io"

local M = {}

-- magic, width, height, maxval and the 0-based offset of the pixels, or an error
local function header(path, s)
  local magic = s:sub(1, 2)
  local vals, pos = {}, 3
  while #vals < 3 do
    local a, b = s:find("^%s*#[^\n]*", pos) -- comments may sit between the fields
    if a then pos = b + 1
    else
      local x, y, num = s:find("^%s+(%d+)", pos)
      if not x then error(string.format("%s: corrupt %s file (bad header)", path, magic), 0) end
      vals[#vals + 1] = tonumber(num)
      pos = y + 1
    end
  end
  if not s:sub(pos, pos):match("%s") then error(string.format("%s: corrupt %s file (bad header)", path, magic), 0) end
  local w, h, maxval = vals[1], vals[2], vals[3]
  if w < 1 or h < 1 or maxval < 1 or maxval > 65535 then
    error(string.format("%s: corrupt %s file (size %dx%d, maxval %d)", path, magic, w, h, maxval), 0)
  end
  return magic, w, h, maxval, pos
end

local function scale(t, maxval)
  if maxval == 255 then return t:to(torch.uint8) end
  return (t:to(torch.float64) * (255 / maxval)):round():clamp(0, 255):to(torch.uint8)
end

function M.is_netpbm(magic) return magic == "P6" or magic == "P5" or magic == "P3" or magic == "P2" end

function M.decode(path)
  local f, err = io.open(path, "rb")
  if not f then error(string.format("%s: cannot open (%s)", path, tostring(err):gsub("^[^:]*: ", "")), 0) end
  local head = f:read(512) or ""
  local magic = head:sub(1, 2)
  if not M.is_netpbm(magic) then
    f:close()
    error(path .. ": not a binary or plain PPM / PGM file (P6, P5, P3 or P2)", 0)
  end
  if magic == "P3" or magic == "P2" then head = head .. (f:read("a") or "") end
  f:close()
  local _, w, h, maxval, pos = header(path, head)
  local c = (magic == "P6" or magic == "P3") and 3 or 1
  local n = w * h * c
  if magic == "P3" or magic == "P2" then
    local v = {}
    for num in head:sub(pos + 1):gmatch("%d+") do v[#v + 1] = tonumber(num) end
    if #v < n then error(string.format("%s: truncated %s file (%d of %d values)", path, magic, #v, n), 0) end
    return scale(torch.tensor({table.unpack(v, 1, n)}, {dtype = torch.int64}), maxval):reshape(h, w, c)
  end
  local bytes = tvio.read_file(path)
  local width = maxval < 256 and 1 or 2
  if bytes:size(0) < pos + n * width then
    error(string.format("%s: truncated %s file (%dx%d pixels need %d bytes after the header)", path, magic, w, h, n * width), 0)
  end
  local px = bytes:narrow(0, pos, n * width)
  if width == 2 then -- big-endian 16-bit samples
    local pairs_ = px:reshape(n, 2):to(torch.int64)
    px = pairs_:select(1, 0) * 256 + pairs_:select(1, 1)
  end
  return scale(px, maxval):reshape(h, w, c):contiguous()
end

return M
