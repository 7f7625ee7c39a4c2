-- torchvision.transforms: Compose, ToTensor, PILToTensor, ToPILImage,
-- ConvertImageDtype, Normalize, Resize, CenterCrop, Pad, RandomCrop,
-- RandomHorizontalFlip, RandomVerticalFlip, RandomResizedCrop, ColorJitter,
-- Grayscale, RandomGrayscale, RandomApply, Lambda; and transforms.functional.
-- The augmentations (tv_augment), AutoAugment and its kin (tv_autoaugment) and
-- transforms.v2 (tv_transforms_v2) are added at the end.
--
-- Every transform takes PIL-like images (tv_io's Image) and tensor images
-- (..., C, H, W). On PIL-like images the pixels follow Pillow (as torchvision
-- does through PIL); on tensors they follow torchvision's tensor functional.
-- Resize: bilinear with antialias=true by default (torchvision >= 0.17),
-- i.e. torch's _upsample_bilinear2d_aa on tensors and Pillow's resize on
-- images; antialias=false is torch's plain bilinear (align_corners=False).
-- Checked against torchvision 0.26 / Pillow 12.3 (tests/parity/image_parity.py):
-- PIL-like results are bit-exact; float tensors agree within 3e-6, uint8
-- tensors within 1 (computed in double and rounded once, where torch's uint8
-- kernel is fixed point).
-- Randomness comes from torch.rand / torch.randint (torch.manual_seed).
--
-- Constructors take positional arguments and/or a trailing keyword table:
-- Resize({32, 32}), RandomCrop(32, {padding=4}), ColorJitter{brightness=0.4}.
local torch = require "torch"
local tvio = require "tv_io"
local C = require("tv_io")._C
local Image = tvio.Image
local K = require "tv_tensor_kernels"
local wrap = Image._wrap

local T = {}
local F = {}
T.functional = F

T.InterpolationMode = {NEAREST = "nearest", NEAREST_EXACT = "nearest-exact", BILINEAR = "bilinear",
  BICUBIC = "bicubic", BOX = "box", HAMMING = "hamming", LANCZOS = "lanczos"}

---------------------------------------------------------------------------
-- helpers
---------------------------------------------------------------------------

local is_pil = Image.isImageType

local function check_image(fn, img)
  if is_pil(img) or torch.is_tensor(img) then return end
  error(string.format("%s: img should be a PIL-like Image or a Tensor, got %s", fn, type(img)), 3)
end

-- height, width
local function hw(img)
  if is_pil(img) then return img.height, img.width end
  local n = img:dim()
  if n < 2 then error("expected a tensor image (..., H, W), got " .. tostring(img.shape), 3) end
  return img:size(n - 2), img:size(n - 1)
end

local function channels(img)
  if is_pil(img) then return #img:getbands() end
  return img:dim() >= 3 and img:size(img:dim() - 3) or 1
end

-- Python's round (half to even), as torchvision's int(round(x))
local function pyround(x)
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return math.tointeger(f) or f
end

local function is_opts(t)
  return type(t) == "table" and getmetatable(t) == nil and t[1] == nil and next(t) ~= nil
end

local function show(v)
  if type(v) == "table" and getmetatable(v) == nil then
    local parts = {}
    for i = 1, #v do parts[i] = show(v[i]) end
    return "(" .. table.concat(parts, ", ") .. ")"
  elseif v == nil then return "None"
  elseif v == true then return "True"
  elseif v == false then return "False"
  elseif type(v) == "number" and math.type(v) == "float" then return string.format("%.8g", v)
  end
  return tostring(v)
end

local function list_show(v)
  if type(v) ~= "table" then return show(v) end
  local parts = {}
  for i = 1, #v do parts[i] = show(v[i]) end
  return "[" .. table.concat(parts, ", ") .. "]"
end

-- A sequence of two numbers for a size given as n, {n} or {h, w}.
local function pair_size(fn, size)
  if type(size) == "number" then return {size, size} end
  if type(size) == "table" and #size == 1 then return {size[1], size[1]} end
  if type(size) == "table" and #size == 2 then return {size[1], size[2]} end
  error(fn .. ": size should be an int or a sequence of one or two ints", 3)
end

-- padding as n, {lr, tb} or {l, t, r, b} -> l, t, r, b
local function ltrb(fn, padding)
  if type(padding) == "number" then return padding, padding, padding, padding end
  if type(padding) == "table" then
    if #padding == 1 then local p = padding[1]; return p, p, p, p end
    if #padding == 2 then return padding[1], padding[2], padding[1], padding[2] end
    if #padding == 4 then return padding[1], padding[2], padding[3], padding[4] end
  end
  error(fn .. ": padding must be an int or a 1, 2 or 4 element sequence, got " .. tostring(padding), 3)
end

local function rand_uniform(a, b) return torch.empty(1):uniform_(a, b):item() end
local function rand_below(n) return torch.randint(0, n, {1}):item() end -- [0, n)

local function randperm(n)
  if torch.randperm then return torch.randperm(n):tolist() end
  local p = {}
  for i = 1, n do p[i] = i - 1 end
  for i = n, 2, -1 do
    local j = rand_below(i) + 1
    p[i], p[j] = p[j], p[i]
  end
  return p
end

-- f, a C loop over CPU images, on either kind of image. A tensor on another device goes through
-- the loop's tensor-op kernel (tv_tensor_kernels) where there is one, else to the CPU and back.
local function apply(img, f, ...)
  if is_pil(img) then return wrap(f(img._data, "hwc", ...)) end
  if img.device.type ~= "cpu" then
    local k = K.for_device(f, img)
    local out = k and k(img, ...)
    if out ~= nil then return out end
    return f(img:cpu(), "chw", ...):to(img.device)
  end
  return f(img, "chw", ...)
end

---------------------------------------------------------------------------
-- functional
---------------------------------------------------------------------------

function F.get_image_size(img) local h, w = hw(img); return {w, h} end
function F.get_dimensions(img) local h, w = hw(img); return {channels(img), h, w} end
function F.get_image_num_channels(img) return channels(img) end

function F.to_tensor(pic)
  if is_pil(pic) then return C.to_tensor(pic._data) end
  if not torch.is_tensor(pic) then
    error("to_tensor: pic should be a PIL-like Image or a tensor, got " .. type(pic), 2)
  end
  -- A tensor stands for a numpy array, H x W or H x W x C, except that one that reads as
  -- C x H x W (1 or 3 leading channels, more than 4 trailing entries) is kept in that layout.
  local n = pic:dim()
  if n ~= 2 and n ~= 3 then error("to_tensor: pic should be 2 or 3 dimensional, got " .. n .. " dimensions", 2) end
  local hwc = true
  if n == 3 then
    local c0, c2 = pic:size(0), pic:size(2)
    hwc = not ((c0 <= 4 and c2 > 4) or ((c0 == 1 or c0 == 3) and c2 ~= 1 and c2 ~= 3 and c2 > 4))
  end
  if pic.dtype == torch.uint8 then return C.to_tensor(pic:cpu(), hwc and "hwc" or "chw"):to(pic.device) end
  if n == 2 then return pic:unsqueeze(0):contiguous() end
  if hwc then return pic:permute(2, 0, 1):contiguous() end
  return pic
end

function F.pil_to_tensor(pic)
  if not is_pil(pic) then error("pil_to_tensor: pic should be a PIL-like Image, got " .. type(pic), 2) end
  return pic._data:permute(2, 0, 1):contiguous()
end

-- to_pil_image(tensor C x H x W or H x W, mode): floats are scaled by 255 and truncated
function F.to_pil_image(pic, mode)
  if is_pil(pic) then return pic end
  if not torch.is_tensor(pic) then error("to_pil_image: pic should be a Tensor, got " .. type(pic), 2) end
  if pic:dim() == 2 then pic = pic:unsqueeze(0) end
  if pic:dim() ~= 3 then error("to_pil_image: pic should be 2/3 dimensional, got " .. pic:dim() .. " dimensions", 2) end
  if pic:size(0) > 4 then error("to_pil_image: pic should not have > 4 channels, got " .. pic:size(0) .. " channels", 2) end
  if pic:is_floating_point() then pic = pic:mul(255):to(torch.uint8) end
  if pic.dtype ~= torch.uint8 then error("to_pil_image: unsupported dtype " .. tostring(pic.dtype), 2) end
  return Image.fromarray(pic:permute(1, 2, 0), mode)
end

local max_value = {uint8 = 255, int8 = 127, int16 = 32767, int32 = 2147483647, int64 = math.maxinteger, bool = 1}

function F.convert_image_dtype(image, dtype)
  dtype = dtype or torch.float32
  if not torch.is_tensor(image) then error("convert_image_dtype: expected a tensor, got " .. type(image), 2) end
  if image.dtype == dtype then return image end
  local out_float = torch.empty(0, {dtype = dtype}):is_floating_point()
  local dname = tostring(dtype):gsub("^torch%.", "")
  if image:is_floating_point() then
    if out_float then return image:to(dtype) end
    local iname = tostring(image.dtype):gsub("^torch%.", "")
    if (iname == "float32" and (dname == "int32" or dname == "int64")) or (iname == "float64" and dname == "int64") then
      error(string.format("The cast from %s to %s cannot be performed safely.", tostring(image.dtype), tostring(dtype)), 2)
    end
    return image:mul(max_value[dname] + 1.0 - 1e-3):to(dtype)
  end
  local in_max = max_value[(tostring(image.dtype):gsub("^torch%.", ""))] + 0.0
  if out_float then return image:to(dtype):div(in_max) end
  local out_max = max_value[dname] + 0.0
  if in_max > out_max then
    local factor = math.tointeger(math.floor((in_max + 1) / (out_max + 1)))
    return (image // factor):to(dtype)
  end
  local factor = math.tointeger(math.floor((out_max + 1) / (in_max + 1)))
  return image:to(dtype) * factor
end

function F.normalize(tensor, mean, std, inplace)
  if not torch.is_tensor(tensor) then error("normalize: img should be a Tensor image, got " .. type(tensor), 2) end
  if not inplace then tensor = tensor:clone() end
  return (K.for_device(C.normalize_, tensor) or C.normalize_)(tensor, mean, std)
end

-- torchvision's _compute_resized_output_size: h, w
local function resized_size(h, w, size, max_size)
  if type(size) == "number" or #size == 1 then
    local req = type(size) == "number" and size or size[1]
    local short, long = math.min(h, w), math.max(h, w)
    local new_short, new_long = req, math.floor(req * long / short)
    if max_size then
      if max_size <= req then
        error(string.format("max_size = %d must be strictly greater than the requested size for the smaller edge size = %d", max_size, req), 4)
      end
      if new_long > max_size then new_short, new_long = math.floor(max_size * new_short / new_long), max_size end
    end
    if w <= h then return new_long, new_short end
    return new_short, new_long
  end
  return size[1], size[2]
end

-- InterpolationMode values, and Pillow's resample integers (NEAREST 0, LANCZOS 1, BILINEAR 2,
-- BICUBIC 3, BOX 4, HAMMING 5) as torchvision accepts them
local interp_of = {nearest = "nearest", ["nearest-exact"] = "nearest-exact", bilinear = "bilinear", bicubic = "bicubic",
  box = "box", hamming = "hamming", lanczos = "lanczos",
  [0] = "nearest", [1] = "lanczos", [2] = "bilinear", [3] = "bicubic", [4] = "box", [5] = "hamming"}
local pil_only = {box = true, hamming = true, lanczos = true}

local function check_interp(fn, interpolation)
  local i = interp_of[interpolation or "bilinear"]
  if not i then
    error(string.format("%s: interpolation %s is not supported (nearest, nearest-exact, bilinear, bicubic, and on PIL-like " ..
      "images box, hamming and lanczos are)", fn, tostring(interpolation)), 3)
  end
  return i
end

function F.resize(img, size, interpolation, max_size, antialias)
  check_image("resize", img)
  local interp = check_interp("resize", interpolation)
  if pil_only[interp] and not is_pil(img) then
    error("resize: interpolation " .. interp .. " is unsupported with Tensor input (Pillow's filter, for PIL-like images)", 2)
  end
  local h, w = hw(img)
  local oh, ow = resized_size(h, w, size, max_size)
  if oh == h and ow == w then return img end
  if antialias == nil then antialias = true end
  return apply(img, C.resize, oh, ow, interp, antialias)
end

-- pad(img, padding, fill, padding_mode)
function F.pad(img, padding, fill, padding_mode)
  check_image("pad", img)
  local l, t, r, b = ltrb("pad", padding)
  local h, w = hw(img)
  return apply(img, C.window, -t, -l, h + t + b, w + l + r, padding_mode or "constant", fill or 0)
end

-- crop(img, top, left, height, width): outside the image is 0
function F.crop(img, top, left, height, width)
  check_image("crop", img)
  return apply(img, C.window, top, left, height, width, "constant", 0)
end

function F.center_crop(img, output_size)
  check_image("center_crop", img)
  local ch, cw = table.unpack(pair_size("center_crop", output_size))
  local h, w = hw(img)
  local pl = cw > w and (cw - w) // 2 or 0
  local pt = ch > h and (ch - h) // 2 or 0
  local pr = cw > w and (cw - w + 1) // 2 or 0
  local pb = ch > h and (ch - h + 1) // 2 or 0
  local h2, w2 = h + pt + pb, w + pl + pr
  local top, left = -pt, -pl
  if h2 ~= ch or w2 ~= cw then
    top, left = pyround((h2 - ch) / 2.0) - pt, pyround((w2 - cw) / 2.0) - pl
  end
  return F.crop(img, top, left, ch, cw)
end

function F.resized_crop(img, top, left, height, width, size, interpolation, antialias)
  return F.resize(F.crop(img, top, left, height, width), size, interpolation, nil, antialias)
end

function F.hflip(img)
  check_image("hflip", img)
  if is_pil(img) then return wrap(C.flip(img._data, 1)) end
  return img.device.type == "cpu" and C.flip(img, -1) or img:flip(-1)
end

function F.vflip(img)
  check_image("vflip", img)
  if is_pil(img) then return wrap(C.flip(img._data, 0)) end
  return img.device.type == "cpu" and C.flip(img, -2) or img:flip(-2)
end

function F.adjust_brightness(img, factor) check_image("adjust_brightness", img); return apply(img, C.adjust, "brightness", factor) end
function F.adjust_contrast(img, factor) check_image("adjust_contrast", img); return apply(img, C.adjust, "contrast", factor) end
function F.adjust_saturation(img, factor) check_image("adjust_saturation", img); return apply(img, C.adjust, "saturation", factor) end
function F.adjust_hue(img, factor) check_image("adjust_hue", img); return apply(img, C.adjust, "hue", factor) end

function F.rgb_to_grayscale(img, num_output_channels)
  check_image("rgb_to_grayscale", img)
  return apply(img, C.adjust, "grayscale", num_output_channels or 1)
end
F.to_grayscale = F.rgb_to_grayscale

---------------------------------------------------------------------------
-- transform objects
---------------------------------------------------------------------------

local Transform = {}
Transform.__index = Transform
function Transform:forward(img) return img end
function Transform:extra_repr() return "" end
function Transform:__repr() return self.__name .. "(" .. self:extra_repr() .. ")" end

-- A transform class: cls(...) builds one from positional args and/or a keyword table
-- (params: names in positional order; defaults: their default values); it goes into T, or into ns.
local function class(name, params, defaults, init, ns)
  local cls = setmetatable({}, {__index = Transform})
  cls.__name = name
  cls.__index = cls
  cls.__call = function(self, ...) return self:forward(...) end
  cls.__tostring = function(self) return self:__repr() end
  setmetatable(cls, {
    __index = Transform,
    __call = function(c, ...)
      local n, args = select("#", ...), {...}
      local a = {}
      if n > 0 and is_opts(args[n]) then
        for k, v in pairs(args[n]) do
          local known = false
          for _, p in ipairs(params) do known = known or p == k end
          if not known then error(string.format("%s: unknown keyword '%s'", name, tostring(k)), 2) end
          a[k] = v
        end
        n = n - 1
      end
      if n > #params then error(string.format("%s: takes at most %d positional arguments, got %d", name, #params, n), 2) end
      for i = 1, n do
        if a[params[i]] ~= nil then error(string.format("%s: got multiple values for argument '%s'", name, params[i]), 2) end
        a[params[i]] = args[i]
      end
      for k, v in pairs(defaults) do if a[k] == nil then a[k] = v end end
      local obj = setmetatable({}, c)
      init(obj, a)
      return obj
    end,
  })
  local into = ns or T
  into[name] = cls
  return cls
end

local Compose = class("Compose", {"transforms"}, {}, function(self, a)
  if type(a.transforms) ~= "table" then error("Compose: expected a list of transforms", 3) end
  self.transforms = a.transforms
end)
function Compose:forward(img)
  for _, t in ipairs(self.transforms) do img = t(img) end
  return img
end
function Compose:__repr()
  local lines = {"Compose("}
  for _, t in ipairs(self.transforms) do lines[#lines + 1] = "    " .. tostring(t) end
  lines[#lines + 1] = ")"
  return table.concat(lines, "\n")
end

local ToTensor = class("ToTensor", {}, {}, function(self) self.__c_transform = {kind = "to_tensor"} end)
function ToTensor:forward(pic) return F.to_tensor(pic) end

local PILToTensor = class("PILToTensor", {}, {}, function() end)
function PILToTensor:forward(pic) return F.pil_to_tensor(pic) end

local ToPILImage = class("ToPILImage", {"mode"}, {}, function(self, a) self.mode = a.mode end)
function ToPILImage:forward(pic) return F.to_pil_image(pic, self.mode) end
function ToPILImage:extra_repr() return self.mode and "mode=" .. self.mode or "" end

local ConvertImageDtype = class("ConvertImageDtype", {"dtype"}, {}, function(self, a)
  if a.dtype == nil then error("ConvertImageDtype: dtype is required", 3) end
  self.dtype = a.dtype
end)
function ConvertImageDtype:forward(img) return F.convert_image_dtype(img, self.dtype) end
function ConvertImageDtype:extra_repr() return "dtype=" .. tostring(self.dtype) end

local Normalize = class("Normalize", {"mean", "std", "inplace"}, {inplace = false}, function(self, a)
  if a.mean == nil or a.std == nil then error("Normalize: mean and std are required", 3) end
  self.mean, self.std, self.inplace = a.mean, a.std, a.inplace
  self.__c_transform = {kind = "normalize", mean = type(a.mean) == "table" and a.mean or {a.mean},
    std = type(a.std) == "table" and a.std or {a.std}}
end)
function Normalize:forward(t) return F.normalize(t, self.mean, self.std, self.inplace) end
function Normalize:extra_repr() return "mean=" .. list_show(self.mean) .. ", std=" .. list_show(self.std) end

local Resize = class("Resize", {"size", "interpolation", "max_size", "antialias"},
  {interpolation = "bilinear", antialias = true}, function(self, a)
    local s = a.size
    if not (type(s) == "number" or (type(s) == "table" and (#s == 1 or #s == 2))) then
      error("Resize: size should be an int or a sequence of one or two ints, got " .. tostring(s), 3)
    end
    if a.max_size and type(s) == "table" and #s == 2 then
      error("Resize: max_size should only be passed if size specifies the length of the smaller edge", 3)
    end
    self.size, self.max_size, self.antialias = s, a.max_size, a.antialias
    self.interpolation = check_interp("Resize", a.interpolation)
  end)
function Resize:forward(img) return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias) end
function Resize:extra_repr()
  return string.format("size=%s, interpolation=%s, max_size=%s, antialias=%s", show(self.size), self.interpolation,
    show(self.max_size), show(self.antialias))
end

local CenterCrop = class("CenterCrop", {"size"}, {}, function(self, a) self.size = pair_size("CenterCrop", a.size) end)
function CenterCrop:forward(img) return F.center_crop(img, self.size) end
function CenterCrop:extra_repr() return "size=" .. show(self.size) end

local pad_modes = {constant = true, edge = true, reflect = true, symmetric = true}
local function check_pad_mode(fn, m)
  if not pad_modes[m] then error(fn .. ": padding_mode should be constant, edge, reflect or symmetric, got " .. tostring(m), 4) end
end

local Pad = class("Pad", {"padding", "fill", "padding_mode"}, {fill = 0, padding_mode = "constant"}, function(self, a)
  ltrb("Pad", a.padding)
  check_pad_mode("Pad", a.padding_mode)
  self.padding, self.fill, self.padding_mode = a.padding, a.fill, a.padding_mode
end)
function Pad:forward(img) return F.pad(img, self.padding, self.fill, self.padding_mode) end
function Pad:extra_repr() return string.format("padding=%s, fill=%s, padding_mode=%s", show(self.padding), show(self.fill), self.padding_mode) end

local RandomCrop = class("RandomCrop", {"size", "padding", "pad_if_needed", "fill", "padding_mode"},
  {pad_if_needed = false, fill = 0, padding_mode = "constant"}, function(self, a)
    self.size = pair_size("RandomCrop", a.size)
    if a.padding ~= nil then ltrb("RandomCrop", a.padding) end
    check_pad_mode("RandomCrop", a.padding_mode)
    self.padding, self.pad_if_needed, self.fill, self.padding_mode = a.padding, a.pad_if_needed, a.fill, a.padding_mode
  end)
function RandomCrop.get_params(img, output_size)
  local h, w = hw(img)
  local th, tw = output_size[1], output_size[2]
  if h < th or w < tw then
    error(string.format("RandomCrop: required crop size (%d, %d) is larger than input image size (%d, %d)", th, tw, h, w), 3)
  end
  if w == tw and h == th then return 0, 0, h, w end
  return rand_below(h - th + 1), rand_below(w - tw + 1), th, tw
end
function RandomCrop:forward(img)
  if self.padding ~= nil then img = F.pad(img, self.padding, self.fill, self.padding_mode) end
  local h, w = hw(img)
  if self.pad_if_needed and w < self.size[2] then img = F.pad(img, {self.size[2] - w, 0}, self.fill, self.padding_mode) end
  if self.pad_if_needed and h < self.size[1] then img = F.pad(img, {0, self.size[1] - h}, self.fill, self.padding_mode) end
  local i, j, th, tw = RandomCrop.get_params(img, self.size)
  return F.crop(img, i, j, th, tw)
end
function RandomCrop:extra_repr() return string.format("size=%s, padding=%s", show(self.size), show(self.padding)) end

local function flip_class(name, fn)
  local cls = class(name, {"p"}, {p = 0.5}, function(self, a) self.p = a.p end)
  function cls:forward(img)
    if torch.rand(1):item() < self.p then return fn(img) end
    return img
  end
  function cls:extra_repr() return "p=" .. show(self.p) end
  return cls
end
flip_class("RandomHorizontalFlip", F.hflip)
flip_class("RandomVerticalFlip", F.vflip)

local RandomResizedCrop = class("RandomResizedCrop", {"size", "scale", "ratio", "interpolation", "antialias"},
  {scale = {0.08, 1.0}, ratio = {3 / 4, 4 / 3}, interpolation = "bilinear", antialias = true}, function(self, a)
    self.size = pair_size("RandomResizedCrop", a.size)
    if a.scale[1] > a.scale[2] or a.ratio[1] > a.ratio[2] then
      error("RandomResizedCrop: scale and ratio should be of kind (min, max)", 3)
    end
    self.scale, self.ratio, self.antialias = a.scale, a.ratio, a.antialias
    self.interpolation = check_interp("RandomResizedCrop", a.interpolation)
  end)
function RandomResizedCrop.get_params(img, scale, ratio)
  local height, width = hw(img)
  local area = height * width
  local lr0, lr1 = math.log(ratio[1]), math.log(ratio[2])
  for _ = 1, 10 do
    local target_area = area * rand_uniform(scale[1], scale[2])
    local aspect = math.exp(rand_uniform(lr0, lr1))
    local w = pyround(math.sqrt(target_area * aspect))
    local h = pyround(math.sqrt(target_area / aspect))
    if 0 < w and w <= width and 0 < h and h <= height then
      return rand_below(height - h + 1), rand_below(width - w + 1), h, w
    end
  end
  local in_ratio = width / height
  local w, h
  if in_ratio < math.min(ratio[1], ratio[2]) then
    w = width
    h = pyround(w / math.min(ratio[1], ratio[2]))
  elseif in_ratio > math.max(ratio[1], ratio[2]) then
    h = height
    w = pyround(h * math.max(ratio[1], ratio[2]))
  else
    w, h = width, height
  end
  return (height - h) // 2, (width - w) // 2, h, w
end
function RandomResizedCrop:forward(img)
  local i, j, h, w = RandomResizedCrop.get_params(img, self.scale, self.ratio)
  return F.resized_crop(img, i, j, h, w, self.size, self.interpolation, self.antialias)
end
function RandomResizedCrop:extra_repr()
  return string.format("size=%s, scale=%s, ratio=%s, interpolation=%s, antialias=%s", show(self.size), show(self.scale),
    show(self.ratio), self.interpolation, show(self.antialias))
end

-- ColorJitter's _check_input: nil when the transform does nothing
local function jitter_range(name, value, center, lo, hi, clip_first_on_zero)
  local r
  if type(value) == "number" then
    if value < 0 then error(string.format("ColorJitter: if %s is a single number, it must be non negative.", name), 4) end
    r = {center - value + 0.0, center + value + 0.0}
    if clip_first_on_zero then r[1] = math.max(r[1], 0.0) end
  elseif type(value) == "table" and #value == 2 then
    r = {value[1] + 0.0, value[2] + 0.0}
  else
    error(string.format("ColorJitter: %s should be a single number or a list/tuple with length 2.", name), 4)
  end
  if not (lo <= r[1] and r[1] <= r[2] and r[2] <= hi) then
    error(string.format("ColorJitter: %s values should be between (%s, %s), but got %s.", name, show(lo), show(hi), list_show(r)), 4)
  end
  if r[1] == center and r[2] == center then return nil end
  return r
end

local ColorJitter = class("ColorJitter", {"brightness", "contrast", "saturation", "hue"},
  {brightness = 0, contrast = 0, saturation = 0, hue = 0}, function(self, a)
    self.brightness = jitter_range("brightness", a.brightness, 1, 0, math.huge, true)
    self.contrast = jitter_range("contrast", a.contrast, 1, 0, math.huge, true)
    self.saturation = jitter_range("saturation", a.saturation, 1, 0, math.huge, true)
    self.hue = jitter_range("hue", a.hue, 0, -0.5, 0.5, false)
  end)
-- fn_idx (a permutation of 0..3) and the factors, drawn as torchvision draws them
function ColorJitter.get_params(brightness, contrast, saturation, hue)
  local order = randperm(4)
  local function draw(r) return r and rand_uniform(r[1], r[2]) or nil end
  local b = draw(brightness)
  local c = draw(contrast)
  local s = draw(saturation)
  local h = draw(hue)
  return order, b, c, s, h
end
function ColorJitter:forward(img)
  local order, b, c, s, h = ColorJitter.get_params(self.brightness, self.contrast, self.saturation, self.hue)
  for _, k in ipairs(order) do
    if k == 0 and b then img = F.adjust_brightness(img, b)
    elseif k == 1 and c then img = F.adjust_contrast(img, c)
    elseif k == 2 and s then img = F.adjust_saturation(img, s)
    elseif k == 3 and h then img = F.adjust_hue(img, h)
    end
  end
  return img
end
function ColorJitter:extra_repr()
  return string.format("brightness=%s, contrast=%s, saturation=%s, hue=%s", show(self.brightness), show(self.contrast),
    show(self.saturation), show(self.hue))
end

local Grayscale = class("Grayscale", {"num_output_channels"}, {num_output_channels = 1}, function(self, a)
  self.num_output_channels = a.num_output_channels
end)
function Grayscale:forward(img) return F.rgb_to_grayscale(img, self.num_output_channels) end
function Grayscale:extra_repr() return "num_output_channels=" .. self.num_output_channels end

local RandomGrayscale = class("RandomGrayscale", {"p"}, {p = 0.1}, function(self, a) self.p = a.p end)
function RandomGrayscale:forward(img)
  if torch.rand(1):item() < self.p then return F.rgb_to_grayscale(img, channels(img)) end
  return img
end
function RandomGrayscale:extra_repr() return "p=" .. show(self.p) end

local RandomApply = class("RandomApply", {"transforms", "p"}, {p = 0.5}, function(self, a)
  if type(a.transforms) ~= "table" then error("RandomApply: expected a list of transforms", 3) end
  self.transforms, self.p = a.transforms, a.p
end)
function RandomApply:forward(img)
  if self.p < torch.rand(1):item() then return img end
  for _, t in ipairs(self.transforms) do img = t(img) end
  return img
end

local Lambda = class("Lambda", {"lambd"}, {}, function(self, a)
  local ok = type(a.lambd) == "function" or (getmetatable(a.lambd) or {}).__call ~= nil
  if not ok then error("Lambda: argument lambd should be callable, got " .. type(a.lambd), 3) end
  self.lambd = a.lambd
end)
function Lambda:forward(img) return self.lambd(img) end

-- the augmentations, AutoAugment and its kin, and the v2 namespace build on these
local H = {class = class, is_pil = is_pil, hw = hw, channels = channels, pyround = pyround, apply = apply, wrap = wrap}
require("tv_augment")(T, H)
require("tv_autoaugment")(T, H)
require("tv_transforms_more")(T, H) -- FiveCrop, TenCrop, RandomChoice, RandomOrder, LinearTransformation
require("tv_functional_keywords")(F) -- every functional takes torchvision's keywords (a trailing table)
T.v2 = require("tv_transforms_v2")(T, H)

return T
