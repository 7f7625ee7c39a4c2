-- torchvision.transforms.v2: transforms of whole samples. A transform takes one input or several
-- (an image with its target table, nested as you like) and transforms each leaf by its kind:
-- tv_tensors (Image, Video, Mask, BoundingBoxes, KeyPoints), PIL-like images, and pure tensors
-- (the first is the image when the sample has no other; the rest pass through, as do numbers and
-- strings). The machinery is in tv_v2_core. Here: the v1 transforms that change only images and
-- videos, run on every image-like input with the same random draws; the containers; ToImage,
-- ToDtype, ToPureTensor, Identity, Lambda; v2.functional (v1's with v2's names added).
local torch = require "torch"
local U = require "nn_util"
local core = require "tv_v2_core"
local tv_tensors = require "tv_tensors"

return function(T, H)
  local v2 = {}
  for k, v in pairs(T) do if k ~= "functional" then v2[k] = v end end
  local F1 = T.functional
  local F = setmetatable({}, {__index = F1})
  v2.functional = F

  -- v2.functional.to_image: PIL-like -> uint8 C x H x W tensor; a tensor (H x W: one channel) as it is
  function F.to_image(inpt)
    if H.is_pil(inpt) then return F1.pil_to_tensor(inpt) end
    if not torch.is_tensor(inpt) then U.errorf("to_image: expected a PIL-like Image or a tensor, got %s", U.typename(inpt)) end
    if inpt:dim() < 2 then U.errorf("to_image: expected a tensor of at least 2 dimensions, got %s", tostring(inpt.shape)) end
    if inpt:dim() == 2 then return inpt:unsqueeze(0) end
    return inpt
  end

  local bits = {uint8 = 8, int32 = 31, int64 = 63, bool = 1}

  -- v2.functional.to_dtype(inpt, dtype=float32, scale=False): scale converts value ranges
  -- (int -> float divides by the type's maximum: multiplies by its reciprocal, as v2 does)
  function F.to_dtype(inpt, ...)
    local o = U.parse("to_dtype", {{"dtype", torch.float32}, {"scale", false}}, ...)
    if not torch.is_tensor(inpt) then U.errorf("to_dtype: expected a tensor, got %s (ToImage first)", U.typename(inpt)) end
    local dtype = o.dtype
    if inpt.dtype == dtype then return inpt end
    if not o.scale then return inpt:to(dtype) end
    local float_out = torch.empty(0, {dtype = dtype}):is_floating_point()
    local iname, oname = tostring(inpt.dtype):gsub("^torch%.", ""), tostring(dtype):gsub("^torch%.", "")
    if inpt:is_floating_point() then
      if float_out then return inpt:to(dtype) end
      if (iname == "float32" and (oname == "int32" or oname == "int64")) or (iname == "float64" and oname == "int64") then
        U.errorf("The conversion from %s to %s cannot be performed safely.", tostring(inpt.dtype), tostring(dtype))
      end
      return inpt:mul(2.0 ^ bits[oname] - 1e-3):to(dtype)
    end
    if float_out then return inpt:to(dtype):mul_(1.0 / (2.0 ^ bits[iname] - 1)) end
    local bi, bo = bits[iname], bits[oname]
    if bi > bo then return inpt:bitwise_right_shift(bi - bo):to(dtype) end
    return inpt:to(dtype):bitwise_left_shift(bo - bi)
  end

  F.get_size = core.get_size
  F.get_num_channels = F1.get_image_num_channels
  F.to_pure_tensor = function(inpt) return tv_tensors.type_of(inpt) and inpt:view(inpt.shape) or inpt end
  local R = U.REQUIRED
  require("tv_functional_keywords")(F, {to_image = {{"inpt", R}}, get_size = {{"inpt", R}}, to_pure_tensor = {{"inpt", R}}})

  -- register_kernel(functional, tv_tensor_cls[, kernel]): functional may be its name ("hflip")
  function F.register_kernel(...)
    local o = U.parse("register_kernel", {{"functional", U.REQUIRED}, {"tv_tensor_cls", U.REQUIRED}, {"kernel"}}, ...)
    local f = o.functional
    if type(f) == "string" then
      f = F[o.functional]
      if f == nil then
        U.errorf("Could not find functional with name '%s' in torchvision.transforms.v2.functional.", o.functional)
      end
    end
    return core.register_kernel(f, o.tv_tensor_cls, o.kernel)
  end
  for _, k in ipairs({"Transform", "check_type", "has_any", "has_all", "query_size", "query_chw", "get_bounding_boxes",
    "get_keypoints"}) do v2[k] = core[k] end
  local Transform = core.Transform
  local Image, Video, Mask, BoundingBoxes, KeyPoints = tv_tensors.Image, tv_tensors.Video, tv_tensors.Mask,
    tv_tensors.BoundingBoxes, tv_tensors.KeyPoints

  -- the photometric functionals dispatch: images and videos (and PIL-like images, pure tensors)
  for _, name in ipairs({"adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "adjust_gamma",
    "adjust_sharpness", "autocontrast", "equalize", "invert", "posterize", "solarize", "rgb_to_grayscale", "gaussian_blur",
    "normalize", "erase", "convert_image_dtype"}) do
    F[name] = core.functional(name)
    core.register_image_kernel(F[name], F1[name])
  end
  F.to_grayscale = F.rgb_to_grayscale

  -- to_dtype: images and videos scaled when asked; masks, boxes and keypoints only cast
  local to_dtype_image = F.to_dtype
  F.to_dtype = core.functional("to_dtype")
  core.register_image_kernel(F.to_dtype, to_dtype_image)
  for _, cls in ipairs({Mask, BoundingBoxes, KeyPoints}) do
    core.register(F.to_dtype, cls, function(inpt, dtype) return inpt:to(dtype or torch.float32) end)
  end

  local image_like = {core.is_pure_tensor, Image, Video, core.PIL}
  local function is_image_like(x) return core.check_type(x, image_like) end

  -- A v1 transform that changes images and videos only, as a v2 transform: the v1 object runs on
  -- each image-like input of the sample, every one with the same random draws (the generator's
  -- state is replayed); masks, boxes and keypoints pass through, or are refused when `refuse`.
  local function image_only(name, refuse, warn)
    local V1 = T[name]
    local cls = Transform:extend(name)
    function cls:__init(...)
      Transform.__init(self)
      rawset(self, "_v1", V1(...))
      for k, v in pairs(self._v1) do if type(k) == "string" and not k:find("^_") then self[k] = v end end
    end
    function cls:check_inputs(flat)
      if (refuse or warn) and core.has_any(flat, BoundingBoxes, Mask, KeyPoints) then
        if refuse then U.errorf("%s() does not support bounding boxes, masks or keypoints", name) end
        U.warn(name .. "() is currently passing through inputs of type tv_tensors.BoundingBoxes, tv_tensors.Mask " ..
          "or tv_tensors.KeyPoints. This will likely change in the future.")
      end
    end
    function cls:_apply_flat(flat)
      local needs = self:_needs_transform_list(flat)
      local state
      local out = {}
      for i, inpt in ipairs(flat) do
        if needs[i] and is_image_like(inpt) then
          if state then torch.set_rng_state(state) else state = torch.get_rng_state() end
          local kind = tv_tensors.type_of(inpt)
          local r = self._v1(kind and inpt:view(inpt.shape) or inpt)
          out[i] = (kind and torch.is_tensor(r)) and tv_tensors.wrap(r, {like = inpt}) or r
        else
          out[i] = inpt
        end
      end
      return out
    end
    function cls:extra_repr() return self._v1:extra_repr() end
    cls.get_params = V1.get_params
    v2[name] = cls
    return cls
  end
  for _, name in ipairs({"ColorJitter", "Grayscale", "RandomGrayscale", "Normalize", "GaussianBlur", "RandomInvert",
    "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness", "RandomAutocontrast", "RandomEqualize",
    "ConvertImageDtype", "LinearTransformation", "ToTensor", "PILToTensor", "ToPILImage"}) do
    image_only(name)
  end
  image_only("RandomErasing", false, true)
  for _, name in ipairs({"AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix", "FiveCrop", "TenCrop"}) do
    image_only(name, true)
  end
  v2.AutoAugmentPolicy = T.AutoAugmentPolicy

  ---------------------------------------------------------------------------
  -- containers: several inputs go through each transform together
  ---------------------------------------------------------------------------

  local function check_list(name, transforms)
    if type(transforms) ~= "table" or getmetatable(transforms) ~= nil then
      U.errorf("%s: Argument transforms should be a sequence of callables", name)
    end
    for _, t in ipairs(transforms) do
      if not (type(t) == "function" or (getmetatable(t) or {}).__call) then
        U.errorf("%s: Argument transforms should be a sequence of callables", name)
      end
    end
  end

  -- runs the transforms in order on the inputs (several stay several)
  local function chain(transforms, order, ...)
    local n = select("#", ...)
    local args = table.pack(...)
    for _, i in ipairs(order) do args = table.pack(transforms[i](table.unpack(args, 1, n))) end
    return table.unpack(args, 1, n)
  end
  local function in_order(n) local o = {} for i = 1, n do o[i] = i end return o end

  local function list_repr(self)
    local lines = {}
    for _, t in ipairs(self.transforms) do lines[#lines + 1] = "  " .. tostring(t):gsub("\n", "\n  ") end
    return table.concat(lines, "\n")
  end

  local Compose = Transform:extend("Compose")
  function Compose:__init(transforms)
    Transform.__init(self)
    check_list("Compose", transforms)
    if #transforms == 0 then U.error("Compose: Pass at least one transform") end
    self.transforms = transforms
  end
  function Compose:forward(...) return chain(self.transforms, in_order(#self.transforms), ...) end
  function Compose:__tostring() return "Compose(\n" .. list_repr(self) .. "\n)" end
  v2.Compose = Compose

  local RandomApply = Transform:extend("RandomApply")
  function RandomApply:__init(transforms, p)
    Transform.__init(self)
    check_list("RandomApply", transforms)
    p = p == nil and 0.5 or p
    if type(p) ~= "number" or p < 0 or p > 1 then U.error("RandomApply: `p` should be a floating point value in the interval [0.0, 1.0].") end
    self.transforms, self.p = transforms, p
  end
  function RandomApply:forward(...)
    if torch.rand(1):item() >= self.p then return ... end
    return chain(self.transforms, in_order(#self.transforms), ...)
  end
  function RandomApply:__tostring() return "RandomApply(\n  p=" .. U.pystr(self.p) .. "\n" .. list_repr(self) .. "\n)" end
  v2.RandomApply = RandomApply

  local RandomChoice = Transform:extend("RandomChoice")
  function RandomChoice:__init(transforms, p)
    Transform.__init(self)
    check_list("RandomChoice", transforms)
    if p == nil then
      p = {}
      for i = 1, #transforms do p[i] = 1 end
    elseif type(p) ~= "table" or #p ~= #transforms then
      U.errorf("RandomChoice: Length of p doesn't match the number of transforms: %s != %d",
        type(p) == "table" and tostring(#p) or U.typename(p), #transforms)
    end
    local total = 0
    for _, v in ipairs(p) do total = total + v end
    self.transforms, self.p = transforms, {}
    for i, v in ipairs(p) do self.p[i] = v / total end
  end
  function RandomChoice:forward(...)
    local idx = torch.multinomial(torch.tensor(self.p), 1):item() + 1
    return chain(self.transforms, {idx}, ...)
  end
  v2.RandomChoice = RandomChoice

  local RandomOrder = Transform:extend("RandomOrder")
  function RandomOrder:__init(transforms)
    Transform.__init(self)
    check_list("RandomOrder", transforms)
    self.transforms = transforms
  end
  function RandomOrder:forward(...)
    local order = {}
    for i, v in ipairs(torch.randperm(#self.transforms):tolist()) do order[i] = v + 1 end
    return chain(self.transforms, order, ...)
  end
  v2.RandomOrder = RandomOrder

  ---------------------------------------------------------------------------
  -- conversions
  ---------------------------------------------------------------------------

  local class = core.class

  local ToImage = class("ToImage", {})
  ToImage._transformed_types = {core.is_pure_tensor, core.PIL}
  function ToImage:transform(inpt) return Image(F.to_image(inpt)) end
  v2.ToImage = ToImage

  local ToDtype = class("ToDtype", {{"dtype", U.REQUIRED}, {"scale", false}})
  function ToDtype:transform(inpt)
    local dtype
    if type(self.dtype) ~= "table" or getmetatable(self.dtype) ~= nil then
      if not (core.is_pure_tensor(inpt) or tv_tensors.isinstance(inpt, {Image, Video})) then return inpt end
      dtype = self.dtype
    else
      -- {[tv_tensors.Image] = torch.float32, [torch.Tensor] = ..., others = ...}: a missing entry passes through
      local t = core.type_of(inpt)
      dtype = self.dtype[t]
      if dtype == nil then dtype = self.dtype.others end
      if not dtype then
        if self.scale and (core.is_pure_tensor(inpt) or tv_tensors.isinstance(inpt, {Image, Video})) then
          U.warn("scale was set to True but no dtype was specified for images or videos: no scaling will be done.")
        end
        return inpt
      end
    end
    return self:_call_kernel(F.to_dtype, inpt, dtype, self.scale)
  end
  function ToDtype:extra_repr() return "dtype=" .. tostring(self.dtype) .. ", scale=" .. U.pystr(self.scale) end
  v2.ToDtype = ToDtype

  local ToPureTensor = class("ToPureTensor", {})
  ToPureTensor._transformed_types = {tv_tensors.TVTensor}
  function ToPureTensor:transform(inpt) return inpt:view(inpt.shape) end
  v2.ToPureTensor = ToPureTensor

  local Identity = class("Identity", {})
  function Identity:transform(inpt) return inpt end
  v2.Identity = Identity

  -- Lambda(lambd, type, ...): lambd runs on the inputs of those types (every transformed type by default)
  local Lambda = Transform:extend("Lambda")
  function Lambda:__init(lambd, ...)
    Transform.__init(self)
    if not (type(lambd) == "function" or (getmetatable(lambd) or {}).__call) then
      U.errorf("Lambda: Argument lambd should be callable, got %s", U.typename(lambd))
    end
    self.lambd = lambd
    self.types = select("#", ...) > 0 and {...} or Transform._transformed_types
  end
  function Lambda:transform(inpt)
    if core.check_type(inpt, self.types) then return self.lambd(inpt) end
    return inpt
  end
  v2.Lambda = Lambda

  require("tv_v2_geometry")(v2, T, H) -- the geometric transforms and functionals, for every kind of input
  require("tv_v2_more")(v2, T, H) -- boxes' own transforms, CutMix and MixUp, and v2's other new transforms
  return v2
end
