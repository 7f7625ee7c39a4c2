-- torchvision.transforms._presets.ObjectDetection, SemanticSegmentation and VideoClassification: the
-- inference transforms of the detection, segmentation and video weights (weights.transforms()).
local torch = require "torch"
local U = require "nn_util"

local T = require "tv_transforms"
local TF = T.functional
local M = {}

local function list(t)
  local p = {}
  for i, v in ipairs(t) do p[i] = U.pystr(v) end
  return "[" .. table.concat(p, ", ") .. "]"
end
local function mode_name(m)
  for k, v in pairs(T.InterpolationMode) do if v == m then return "InterpolationMode." .. k end end
  return tostring(m)
end
local function preset(name, fields, forward)
  local cls = { __name = name }
  cls.__index = cls
  cls.__call = function(self, x) return self:forward(x) end
  cls.forward = forward
  cls.__tostring = function(self)
    local lines = { name .. "(" }
    for _, f in ipairs(fields) do
      local v = self[f]
      lines[#lines + 1] = "    " .. f .. "=" .. (f == "interpolation" and mode_name(v) or list(v))
    end
    return table.concat(lines, "\n") .. "\n)"
  end
  return cls
end

-- a PIL-like image or a uint8 tensor to float in [0, 1] (the detection models resize and normalize themselves)
local OD = { __name = "ObjectDetection" }
OD.__index = OD
OD.__call = function(self, img) return self:forward(img) end
OD.__tostring = function() return "ObjectDetection()" end
function OD:forward(img)
  if not torch.is_tensor(img) then img = TF.pil_to_tensor(img) end
  return TF.convert_image_dtype(img, torch.float32)
end
function M.ObjectDetection() return setmetatable({}, OD) end

-- resize (the shorter side to resize_size, antialiased), to float in [0, 1], normalize
local SS = preset("SemanticSegmentation", { "resize_size", "mean", "std", "interpolation" }, function(self, img)
  if self.resize_size then img = TF.resize(img, self.resize_size, self.interpolation, nil, self.antialias) end
  if not torch.is_tensor(img) then img = TF.pil_to_tensor(img) end
  img = TF.convert_image_dtype(img, torch.float32)
  return TF.normalize(img, self.mean, self.std)
end)
function M.SemanticSegmentation(...)
  local o = U.parse("SemanticSegmentation", { { "resize_size" }, { "mean", { 0.485, 0.456, 0.406 } },
    { "std", { 0.229, 0.224, 0.225 } }, { "interpolation", T.InterpolationMode.BILINEAR }, { "antialias", true } }, ...)
  return setmetatable({ resize_size = o.resize_size and { o.resize_size } or nil, mean = o.mean, std = o.std,
    interpolation = o.interpolation, antialias = o.antialias }, SS)
end

-- [N,] T, C, H, W uint8 frames -> [N,] C, T, crop_h, crop_w floats: resize (no antialias), center
-- crop, rescale, normalize
local VC = preset("VideoClassification", { "crop_size", "resize_size", "mean", "std", "interpolation" },
  function(self, vid)
    local squeeze = vid:dim() < 5
    if squeeze then vid = vid:unsqueeze(0) end
    local s = vid.shape:totable()
    vid = vid:reshape(-1, s[3], s[4], s[5])
    vid = TF.resize(vid, self.resize_size, self.interpolation, nil, false)
    vid = TF.center_crop(vid, self.crop_size)
    vid = TF.normalize(TF.convert_image_dtype(vid, torch.float32), self.mean, self.std)
    vid = vid:view(s[1], s[2], s[3], self.crop_size[1], self.crop_size[2]):permute(0, 2, 1, 3, 4)
    if squeeze then vid = vid:squeeze(0) end
    return vid
  end)
function M.VideoClassification(...)
  local o = U.parse("VideoClassification", { { "crop_size", U.REQUIRED }, { "resize_size", U.REQUIRED },
    { "mean", { 0.43216, 0.394666, 0.37645 } }, { "std", { 0.22803, 0.22145, 0.216989 } },
    { "interpolation", T.InterpolationMode.BILINEAR } }, ...)
  return setmetatable({ crop_size = o.crop_size, resize_size = o.resize_size, mean = o.mean, std = o.std,
    interpolation = o.interpolation }, VC)
end

T._presets = T._presets or {}
T._presets.SemanticSegmentation, T._presets.VideoClassification = M.SemanticSegmentation, M.VideoClassification
return M
