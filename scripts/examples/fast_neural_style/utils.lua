-- pytorch/examples fast_neural_style/neural_style/utils.py: image loading and saving (PIL-like
-- images, pixel values 0..255), the Gram matrix of feature maps, and ImageNet normalisation.
local Image = require("PIL").Image

local M = {}

-- load_image(filename[, size[, scale]]) or load_image(filename, {size = s, scale = f}): RGB,
-- resized to size x size, or shrunk by scale (Lanczos resampling, Pillow's ANTIALIAS)
function M.load_image(filename, size, scale)
  if type(size) == "table" then size, scale = size.size, size.scale end
  local img = Image.open(filename):convert("RGB")
  if size ~= nil then
    img = img:resize({ size, size }, Image.ANTIALIAS)
  elseif scale ~= nil then
    img = img:resize({ math.floor(img.size[1] / scale), math.floor(img.size[2] / scale) }, Image.ANTIALIAS)
  end
  return img
end

-- data: a [3, H, W] float tensor of 0..255 values, clamped and truncated to bytes
function M.save_image(filename, data)
  local img = data:clone():clamp(0, 255)
  img = img:permute(1, 2, 0):to(torch.uint8)
  img = Image.fromarray(img)
  img:save(filename)
end

-- [b, ch, h, w] -> [b, ch, ch], each feature map's inner products divided by ch * h * w
function M.gram_matrix(y)
  local b, ch, h, w = y:size(0), y:size(1), y:size(2), y:size(3)
  local features = y:view(b, ch, w * h)
  local features_t = features:transpose(1, 2)
  local gram = features:bmm(features_t) / (ch * h * w)
  return gram
end

-- 0..255 images to ImageNet's normalisation; divides batch by 255 in place, as the original
function M.normalize_batch(batch)
  local mean = batch:new_tensor({ 0.485, 0.456, 0.406 }):view(-1, 1, 1)
  local std = batch:new_tensor({ 0.229, 0.224, 0.225 }):view(-1, 1, 1)
  batch = batch:div_(255.0)
  return (batch - mean) / std
end

return M
