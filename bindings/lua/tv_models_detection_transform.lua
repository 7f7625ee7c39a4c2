-- torchvision.models.detection.transform (GeneralizedRCNNTransform, resize_boxes) and
-- image_list.ImageList: normalize each image, resize it so that its short side is min_size
-- (long side at most max_size), batch the images into one zero-padded tensor whose sides are
-- multiples of size_divisible, and map the detections back to the original sizes afterwards.
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional
local roi_heads = require "tv_models_detection_roi_heads"

local M = {}

-- ---- ImageList ----

local ImageList = {}
ImageList.__index = ImageList
ImageList.__name = "ImageList"
M.ImageList = ImageList
-- ImageList(tensors [N, C, H, W], image_sizes {{h, w}, ...}): the sizes before padding
setmetatable(ImageList, { __call = function(_, tensors, image_sizes)
  return setmetatable({ tensors = tensors, image_sizes = image_sizes }, ImageList)
end })
function ImageList:to(...) return ImageList(self.tensors:to(...), self.image_sizes) end

-- ---- resize_boxes ----

local function f32(v, like) return torch.tensor(v, { dtype = torch.float32, device = like.device }) end

-- boxes [N, 4] (x1, y1, x2, y2) of an image of original_size {h, w} -> of an image of new_size
function M.resize_boxes(boxes, original_size, new_size)
  local rh = f32(new_size[1], boxes) / f32(original_size[1], boxes)
  local rw = f32(new_size[2], boxes) / f32(original_size[2], boxes)
  local scale = torch.stack({ rw, rh, rw, rh })
  -- float boxes keep their dtype, integer ones come out float32 (torchvision's 0-dim ratios)
  if boxes:is_floating_point() then scale = scale:to(boxes.dtype) end
  return boxes * scale
end

local function hw(t) return { t:size(-2), t:size(-1) } end

-- ---- GeneralizedRCNNTransform ----

local Transform = nn.Module:extend("GeneralizedRCNNTransform")
M.GeneralizedRCNNTransform = Transform

-- (min_size, max_size, image_mean, image_std, {size_divisible=32, fixed_size=nil, _skip_resize=false});
-- min_size a number or a list (training picks one at random, eval uses the last)
function Transform:__init(...)
  local o = U.parse("GeneralizedRCNNTransform", { { "min_size", U.REQUIRED }, { "max_size", U.REQUIRED },
    { "image_mean", U.REQUIRED }, { "image_std", U.REQUIRED }, { "size_divisible", 32 }, { "fixed_size" },
    { "_skip_resize", false } }, ...)
  self.min_size = type(o.min_size) == "number" and { o.min_size } or o.min_size
  self.max_size, self.image_mean, self.image_std = o.max_size, o.image_mean, o.image_std
  self.size_divisible, self.fixed_size, self._skip_resize = o.size_divisible, o.fixed_size, o._skip_resize
end

function Transform:normalize(image)
  if not image:is_floating_point() then
    U.errorf("Expected input images to be of floating type (in range [0, 1]), but found type %s instead",
      tostring(image.dtype))
  end
  local opts = { dtype = image.dtype, device = image.device }
  local mean = torch.tensor(self.image_mean, opts):view(-1, 1, 1)
  local std = torch.tensor(self.image_std, opts):view(-1, 1, 1)
  return (image - mean) / std
end

-- a random element of k (Python's torch_choice)
function Transform:torch_choice(k)
  return k[math.floor(torch.empty(1):uniform_(0, #k):item()) + 1]
end

-- image [C, H, W] and its target (boxes rescaled in a copy) at the chosen size
function Transform:resize(image, target)
  local h, w = image:size(-2), image:size(-1)
  local size
  if self.training then
    if self._skip_resize then return image, target end
    size = self:torch_choice(self.min_size)
  else
    size = self.min_size[#self.min_size]
  end
  local opts = { mode = "bilinear", align_corners = false }
  if self.fixed_size ~= nil then
    opts.size = { self.fixed_size[2], self.fixed_size[1] }
  else
    -- the scale in float32, as torchvision computes it
    local lo, hi = f32(math.min(h, w), image), f32(math.max(h, w), image)
    local scale = torch.minimum(f32(size, image) / lo, f32(self.max_size, image) / hi)
    opts.scale_factor, opts.recompute_scale_factor = scale:item(), true
  end
  image = F.interpolate(image:unsqueeze(0), opts):squeeze(0)
  if target == nil then return image, target end
  local t = {}
  for k, v in pairs(target) do t[k] = v end
  t.boxes = M.resize_boxes(target.boxes, { h, w }, hw(image))
  if target.masks ~= nil then -- nearest, as uint8
    opts.mode, opts.align_corners = "nearest", nil
    t.masks = F.interpolate(target.masks:unsqueeze(1):float(), opts):select(1, 0):to(torch.uint8)
  end
  return image, t
end

-- images of sizes [C, Hi, Wi] -> [N, C, H, W], zero-padded at the bottom and right
function Transform:batch_images(images, size_divisible)
  size_divisible = size_divisible or 32
  local mh, mw = 0, 0
  for _, img in ipairs(images) do mh, mw = math.max(mh, img:size(-2)), math.max(mw, img:size(-1)) end
  mh = math.ceil(mh / size_divisible) * size_divisible
  mw = math.ceil(mw / size_divisible) * size_divisible
  local padded = {}
  for i, img in ipairs(images) do
    padded[i] = F.pad(img, { 0, mw - img:size(-1), 0, mh - img:size(-2) })
  end
  return torch.stack(padded, 0)
end

-- forward(images, targets) -> ImageList, targets (copies with resized boxes, or nil)
function Transform:forward(images, targets)
  local out_images, out_targets = {}, nil
  if targets ~= nil then out_targets = {} end
  for i, image in ipairs(images) do
    if image:dim() ~= 3 then
      U.errorf("images is expected to be a list of 3d tensors of shape [C, H, W], got %s", tostring(image.shape))
    end
    local target = targets and targets[i]
    image = self:normalize(image)
    image, target = self:resize(image, target)
    out_images[i] = image
    if out_targets then out_targets[i] = target end
  end
  local sizes = {}
  for i, img in ipairs(out_images) do sizes[i] = hw(img) end
  return ImageList(self:batch_images(out_images, self.size_divisible), sizes), out_targets
end

-- result: list of detections {boxes=...}; boxes mapped from image_shapes to original_image_sizes
function Transform:postprocess(result, image_shapes, original_image_sizes)
  if self.training then return result end
  for i, r in ipairs(result) do
    r.boxes = M.resize_boxes(r.boxes, image_shapes[i], original_image_sizes[i])
    if r.masks ~= nil then r.masks = roi_heads.paste_masks_in_image(r.masks, r.boxes, original_image_sizes[i]) end
  end
  return result
end

function Transform:__tostring()
  local function list(t)
    local p = {}
    for i, v in ipairs(t) do p[i] = U.pystr(v) end
    return p
  end
  local mins = list(self.min_size)
  return string.format("GeneralizedRCNNTransform(\n    Normalize(mean=[%s], std=[%s])\n" ..
    "    Resize(min_size=(%s%s), max_size=%s, mode='bilinear')\n)", table.concat(list(self.image_mean), ", "),
    table.concat(list(self.image_std), ", "), table.concat(mins, ", "), #mins == 1 and "," or "",
    U.pystr(self.max_size))
end

return M
