-- torchvision.io (read_image, decode_*, encode_*, write_*, read_file, write_file)
-- and a PIL-like Image module (Image.open(path):convert("RGB")), both on the
-- PNG/JPEG codecs of engine/image.c through torch._image.
--
-- Tensor images are uint8 C x H x W, as torchvision.io gives them. A PIL-like
-- image holds a uint8 H x W x C tensor (`img._data`) with mode "L", "LA", "RGB"
-- or "RGBA", and `size` = {width, height} in PIL's order. Differences from
-- Pillow: palette ("P") and 1-bit images open as RGB(A) / L, 16-bit samples
-- keep their high byte. resize has Pillow's filters (NEAREST, BOX, BILINEAR, HAMMING, BICUBIC,
-- LANCZOS; BICUBIC by default, as Pillow's).
local torch = require "torch"

local M = {}

-- torch._image with errors re-raised without the position inside this library
-- (the engine's messages name the function and the file).
local raw = torch._image
local C = setmetatable({}, {__index = function(t, k)
  local f = raw[k]
  local function w(...)
    local r = table.pack(pcall(f, ...))
    if r[1] then return table.unpack(r, 2, r.n) end
    error((tostring(r[2]):gsub("^bindings/lua/[%w_]+%.lua:%d+: ", "")), 0)
  end
  t[k] = w
  return w
end})
M._C = C

M.ImageReadMode = {UNCHANGED = 0, GRAY = 1, GRAY_ALPHA = 2, RGB = 3, RGB_ALPHA = 4}

local function is_opts(t)
  return type(t) == "table" and getmetatable(t) == nil and t[1] == nil and next(t) ~= nil
end

-- Keyword table check: every key must be one of names.
local function check_opts(fn, opts, names)
  if opts == nil then return {} end
  for k in pairs(opts) do
    local ok = false
    for _, n in ipairs(names) do if n == k then ok = true end end
    if not ok then error(string.format("%s: unknown keyword '%s'", fn, tostring(k)), 3) end
  end
  return opts
end

local function read_mode(fn, mode)
  if mode == nil then return 0 end
  if type(mode) == "string" then
    local m = M.ImageReadMode[mode:upper()]
    if m then return m end
  elseif math.type(mode) == "integer" and mode >= 0 and mode <= 4 then
    return mode
  end
  error(string.format("%s: unknown image read mode %s (use torchvision.io.ImageReadMode)", fn, tostring(mode)), 3)
end

local function hwc_to_chw(t) return t:permute(2, 0, 1):contiguous() end
local function chw_to_hwc(fn, t)
  if not torch.is_tensor(t) then error(fn .. ": expected a tensor, got " .. type(t), 3) end
  if t:dim() == 2 then return t:unsqueeze(2):contiguous() end
  if t:dim() ~= 3 then error(string.format("%s: expected a C x H x W image, got %s", fn, tostring(t.shape)), 3) end
  return t:permute(1, 2, 0):contiguous()
end

-- positional mode, or {mode=}
local function mode_arg(fn, a)
  if is_opts(a) then return read_mode(fn, check_opts(fn, a, {"mode"}).mode) end
  return read_mode(fn, a)
end

function M.read_image(path, mode)
  return hwc_to_chw(C.read(path, mode_arg("read_image", mode), "read_image"))
end

function M.read_file(path) return C.read_file(path, "read_file") end
function M.write_file(path, data) C.write_file(path, data, "write_file") end

-- decode_image(bytes or path, mode): any of PNG and JPEG
function M.decode_image(input, mode)
  if type(input) == "string" then return hwc_to_chw(C.read(input, mode_arg("decode_image", mode), "decode_image")) end
  return hwc_to_chw(C.decode(input, mode_arg("decode_image", mode), "<bytes>", "decode_image"))
end

local function typed_decoder(fn, magic, kind)
  return function(input, mode)
    local ch = mode_arg(fn, mode)
    if torch.is_tensor(input) and input:dim() == 1 and input:numel() >= #magic then
      for i = 1, #magic do
        if input[i - 1]:item() ~= magic:byte(i) then error(fn .. ": the bytes are not a " .. kind .. " file", 2) end
      end
    end
    return hwc_to_chw(C.decode(input, ch, "<bytes>", fn))
  end
end
M.decode_png = typed_decoder("decode_png", "\137PNG", "PNG")
M.decode_jpeg = typed_decoder("decode_jpeg", "\255\216\255", "JPEG")
-- GIF, WebP, AVIF and HEIC: nnrepl links no decoder for them (libpng and libjpeg-turbo only)
for fn, kind in pairs({decode_gif = "GIF", decode_webp = "WebP", decode_avif = "AVIF", decode_heic = "HEIC"}) do
  M[fn] = function()
    error(string.format("%s: %s images are not supported (nnrepl decodes PNG and JPEG only); convert the file to PNG " ..
      "first, e.g. with ImageMagick: convert in.%s out.png", fn, kind, kind:lower()), 2)
  end
end

local function level_arg(fn, a, key, default)
  if is_opts(a) then a = check_opts(fn, a, {key})[key] end
  if a == nil then return default end
  return a
end

function M.encode_png(img, compression_level)
  return C.encode_png(chw_to_hwc("encode_png", img), level_arg("encode_png", compression_level, "compression_level", 6))
end
function M.write_png(img, path, compression_level)
  C.write_file(path, M.encode_png(img, compression_level), "write_png")
end
function M.encode_jpeg(img, quality)
  return C.encode_jpeg(chw_to_hwc("encode_jpeg", img), level_arg("encode_jpeg", quality, "quality", 75))
end
function M.write_jpeg(img, path, quality)
  C.write_file(path, M.encode_jpeg(img, quality), "write_jpeg")
end

---------------------------------------------------------------------------
-- PIL-like images
---------------------------------------------------------------------------

local Image = {}
M.Image = Image

Image.NEAREST, Image.BILINEAR, Image.BICUBIC, Image.LANCZOS, Image.BOX, Image.HAMMING = 0, 2, 3, 1, 4, 5
Image.Resampling = {NEAREST = 0, BILINEAR = 2, BICUBIC = 3, LANCZOS = 1, BOX = 4, HAMMING = 5}
Image.ANTIALIAS = Image.LANCZOS -- the name Pillow < 10 had, which older scripts (fast_neural_style) still use
Image.FLIP_LEFT_RIGHT, Image.FLIP_TOP_BOTTOM, Image.ROTATE_90, Image.ROTATE_180 = 0, 1, 2, 3
Image.ROTATE_270, Image.TRANSPOSE, Image.TRANSVERSE = 4, 5, 6
Image.Transpose = {FLIP_LEFT_RIGHT = 0, FLIP_TOP_BOTTOM = 1, ROTATE_90 = 2, ROTATE_180 = 3, ROTATE_270 = 4,
  TRANSPOSE = 5, TRANSVERSE = 6}

local channels_of = {L = 1, LA = 2, RGB = 3, RGBA = 4, YCbCr = 3}
local mode_of = {"L", "LA", "RGB", "RGBA"}
local bands_of = {L = {"L"}, LA = {"L", "A"}, RGB = {"R", "G", "B"}, RGBA = {"R", "G", "B", "A"},
  YCbCr = {"Y", "Cb", "Cr"}}

local ImageObj = {}
ImageObj.__index = ImageObj
ImageObj.__name = "PIL.Image"

-- A PIL-like image over a uint8 H x W x C tensor (taken as is, not copied).
local function wrap(hwc, extra)
  local h, w, c = hwc:size(0), hwc:size(1), hwc:size(2)
  local img = setmetatable({_data = hwc, mode = mode_of[c], size = {w, h}, width = w, height = h}, ImageObj)
  if extra then for k, v in pairs(extra) do img[k] = v end end
  return img
end
Image._wrap = wrap

-- pixels as an image of mode (YCbCr is not told by the channel count, the other modes are)
local function wrap_mode(hwc, mode) return wrap(hwc, mode == "YCbCr" and {mode = mode} or nil) end

function Image.isImageType(x) return getmetatable(x) == ImageObj end

function Image.open(path)
  path = require("pyos_sys").pathlike(path)
  if type(path) ~= "string" then error("Image.open: expected a path, got " .. type(path), 2) end
  local f = io.open(path, "rb")
  local magic = f and f:read(2) or ""
  if f then f:close() end
  local ppm = require "tv_ppm" -- PPM / PGM (GTSRB)
  if ppm.is_netpbm(magic) then return wrap(ppm.decode(path), {filename = path, format = "PPM"}) end
  local data = C.read(path, 0, "Image.open")
  return wrap(data, {filename = path, format = magic == "\255\216" and "JPEG" or "PNG"})
end

-- Image.fromarray(uint8 tensor H x W or H x W x C, mode)
function Image.fromarray(t, mode)
  if not torch.is_tensor(t) then error("Image.fromarray: expected a tensor, got " .. type(t), 2) end
  if t.dtype ~= torch.uint8 then error("Image.fromarray: expected a uint8 tensor, got " .. tostring(t.dtype), 2) end
  if t:dim() == 2 then t = t:unsqueeze(2) end
  if t:dim() ~= 3 or t:size(2) < 1 or t:size(2) > 4 then
    error("Image.fromarray: expected an H x W or H x W x C (C = 1..4) tensor, got " .. tostring(t.shape), 2)
  end
  if mode ~= nil and channels_of[mode] ~= t:size(2) then
    error(string.format("Image.fromarray: mode %s does not match %d channels", tostring(mode), t:size(2)), 2)
  end
  return wrap_mode(t:cpu():contiguous():clone(), mode)
end

-- Image.new(mode, {w, h}, color): color a number or a list per band
function Image.new(mode, size, color)
  local c = channels_of[mode]
  if not c then error("Image.new: unsupported mode " .. tostring(mode), 2) end
  local t = torch.zeros(size[2], size[1], c, {dtype = torch.uint8})
  -- a window lying wholly above the image is all fill
  if color ~= nil then t = C.window(t, "hwc", -size[2], 0, size[2], size[1], "constant", color) end
  return wrap(t)
end

function ImageObj:__tostring()
  return string.format("<PIL.Image.Image image mode=%s size=%dx%d>", self.mode, self.width, self.height)
end

function ImageObj:getbands() return bands_of[self.mode] end
-- a new image of self's mode
local function like(self, hwc) return wrap_mode(hwc, self.mode) end
function ImageObj:copy() return like(self, self._data:clone()) end
-- np.asarray(img): the H x W x C uint8 pixels (a copy)
function ImageObj:tensor() return self._data:clone() end

local ycbcr = require "tv_ycbcr"
-- self's pixels in RGB (or L, LA, RGBA as they are)
local function rgb_pixels(self) return self.mode == "YCbCr" and ycbcr.to_rgb(self._data) or self._data end

function ImageObj:convert(mode)
  local c = channels_of[mode]
  if not c then error("convert: unsupported mode " .. tostring(mode) .. " (L, LA, RGB, RGBA and YCbCr are)", 2) end
  if mode == self.mode then return self:copy() end
  local d = rgb_pixels(self)
  if mode == "YCbCr" then return wrap_mode(ycbcr.from_rgb(C.convert(d, 3)), mode) end
  return wrap(C.convert(d, c))
end

-- img:split(): each band as an L image, several return values (Python's tuple)
function ImageObj:split()
  local out = {}
  for i = 1, self._data:size(2) do out[i] = wrap(self._data:narrow(2, i - 1, 1):contiguous()) end
  return table.unpack(out)
end

-- Image.merge(mode, {bands}): L images of one size as the bands of a mode
function Image.merge(mode, bands)
  local c = channels_of[mode]
  if not c then error("merge: unsupported mode " .. tostring(mode), 2) end
  if type(bands) ~= "table" or #bands ~= c then
    error(string.format("merge: mode %s needs %d bands, got %s", mode, c, type(bands) == "table" and #bands or type(bands)), 2)
  end
  local parts = {}
  for i, b in ipairs(bands) do
    if not Image.isImageType(b) or b.mode ~= "L" then error("merge: band " .. i .. " is not an L image", 2) end
    if b.width ~= bands[1].width or b.height ~= bands[1].height then error("merge: images do not match", 2) end
    parts[i] = b._data
  end
  return wrap_mode(torch.cat(parts, 2), mode)
end

local resample_names = {[0] = "nearest", [1] = "lanczos", [2] = "bilinear", [3] = "bicubic", [4] = "box", [5] = "hamming"}

-- img:resize({w, h}, resample)
function ImageObj:resize(size, resample)
  if type(size) ~= "table" or #size ~= 2 then error("resize: size must be {width, height}", 2) end
  local interp = resample_names[resample == nil and 3 or resample]
  if not interp then error("resize: unknown resampling filter " .. tostring(resample) .. " (Image.NEAREST, BOX, BILINEAR, HAMMING, BICUBIC or LANCZOS)", 2) end
  if size[1] == self.width and size[2] == self.height then return self:copy() end
  return like(self, C.resize(self._data, "hwc", size[2], size[1], interp))
end

-- img:crop({left, top, right, bottom}); outside the image is black, as in Pillow
function ImageObj:crop(box)
  if type(box) ~= "table" or #box ~= 4 then error("crop: box must be {left, top, right, bottom}", 2) end
  local l, t, r, b = box[1], box[2], box[3], box[4]
  if r < l or b < t then error("crop: coordinate 'right' is less than 'left' or 'lower' is less than 'upper'", 2) end
  return like(self, C.window(self._data, "hwc", math.tointeger(t) or math.floor(t + 0.5), math.tointeger(l) or math.floor(l + 0.5),
    math.floor(b - t + 0.5), math.floor(r - l + 0.5)))
end

function ImageObj:transpose(method)
  local d = self._data
  if method == 0 then return like(self, C.flip(d, 1))
  elseif method == 1 then return like(self, C.flip(d, 0))
  elseif method == 3 then return like(self, C.flip(C.flip(d, 0), 1))
  elseif method == 5 then return like(self, d:permute(1, 0, 2):contiguous())
  elseif method == 2 then return like(self, C.flip(d:permute(1, 0, 2), 0)) -- counter-clockwise
  elseif method == 4 then return like(self, C.flip(d:permute(1, 0, 2), 1))
  elseif method == 6 then return like(self, C.flip(C.flip(d:permute(1, 0, 2), 0), 1))
  end
  error("transpose: unknown method " .. tostring(method), 2)
end

function ImageObj:getpixel(xy)
  local x, y = xy[1], xy[2]
  if x < 0 or y < 0 or x >= self.width or y >= self.height then error("getpixel: image index out of range", 2) end
  local px = self._data[y][x]
  if #bands_of[self.mode] == 1 then return px[0]:item() end
  local out = {}
  for i = 1, #bands_of[self.mode] do out[i] = px[i - 1]:item() end
  return out
end

-- img:save(path[, format][, {quality=}]): PNG or JPEG by format or by the extension
function ImageObj:save(path, format, opts)
  path = require("pyos_sys").pathlike(path)
  if is_opts(format) then format, opts = nil, format end
  opts = check_opts("save", opts, {"quality", "compress_level", "format"})
  format = format or opts.format
  if not format then
    local ext = path:match("%.([%w]+)$")
    ext = ext and ext:lower()
    format = (ext == "jpg" or ext == "jpeg") and "JPEG" or ext == "png" and "PNG" or nil
    if not format then error("save: unknown file extension in '" .. path .. "' (use .png, .jpg or .jpeg)", 2) end
  end
  format = format:upper()
  local bytes
  if format == "PNG" then
    if self.mode == "YCbCr" then error("save: cannot write mode YCbCr as PNG (convert it to RGB)", 2) end
    bytes = C.encode_png(self._data, opts.compress_level or 6)
  elseif format == "JPEG" or format == "JPG" then
    if self.mode ~= "L" and self.mode ~= "RGB" and self.mode ~= "YCbCr" then error("save: cannot write mode " .. self.mode .. " as JPEG", 2) end
    local d = rgb_pixels(self)
    bytes = C.encode_jpeg(d, opts.quality or 75)
  else
    error("save: unsupported format " .. format, 2)
  end
  C.write_file(path, bytes, "save")
end

return M
