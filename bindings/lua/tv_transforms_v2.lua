-- torchvision.transforms.v2: the v1 classes under the same names (they take PIL-like images and
-- tensors (..., C, H, W) alike), plus ToImage, ToDtype, ToPureTensor and Identity; v2.functional
-- is v1's functional with v2's names added (to_image, to_dtype, horizontal_flip, get_size, ...).
-- There are no tv_tensors here: a plain tensor is an image, as v2 treats a lone pure tensor.
local torch = require "torch"
local U = require "nn_util"

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

  F.horizontal_flip, F.vertical_flip = F1.hflip, F1.vflip
  F.elastic = F1.elastic_transform
  function F.get_size(inpt) local h, w = H.hw(inpt); return {h, w} end
  F.get_num_channels = F1.get_image_num_channels
  F.to_pure_tensor = function(inpt) return inpt end
  local R = U.REQUIRED
  require("tv_functional_keywords")(F, {to_image = {{"inpt", R}}, get_size = {{"inpt", R}}, to_pure_tensor = {{"inpt", R}}})

  local class = function(name, params, defaults, init) return H.class(name, params, defaults, init, v2) end

  local ToImage = class("ToImage", {}, {}, function() end)
  function ToImage:forward(inpt) return F.to_image(inpt) end

  local ToDtype = class("ToDtype", {"dtype", "scale"}, {scale = false}, function(self, a)
    if a.dtype == nil then U.error("ToDtype: dtype is required") end
    self.dtype, self.scale = a.dtype, a.scale
  end)
  function ToDtype:forward(inpt)
    if H.is_pil(inpt) then return inpt end -- v2 leaves what it does not transform as it is
    return F.to_dtype(inpt, self.dtype, self.scale)
  end
  function ToDtype:extra_repr() return "dtype=" .. tostring(self.dtype) .. ", scale=" .. U.pystr(self.scale) end

  local ToPureTensor = class("ToPureTensor", {}, {}, function() end)
  function ToPureTensor:forward(inpt) return inpt end

  local Identity = class("Identity", {}, {}, function() end)
  function Identity:forward(inpt) return inpt end

  return v2
end
