-- pytorch/examples super_resolution/data.py: the BSDS300 training and test sets, Y channel,
-- the target a centre crop of 256 (made divisible by the upscale factor), the input that crop
-- shrunk by the factor.
-- nnrepl downloads nothing: download_bsd300 only checks that DEST/BSDS300/images (DEST
-- "dataset", relative to the working folder) holds train/ and test/ folders of images, e.g.
-- BSDS300-images.tgz from the Berkeley segmentation site extracted into dataset/.
local transforms = require("torchvision").transforms
local Compose, CenterCrop, ToTensor, Resize = transforms.Compose, transforms.CenterCrop, transforms.ToTensor,
    transforms.Resize
local DatasetFromFolder = require("dataset").DatasetFromFolder

local M = {}

local function is_dir(path)
  return os.execute("test -d '" .. path:gsub("'", "'\\''") .. "'") == true
end

function M.download_bsd300(dest)
  dest = dest or "dataset"
  local output_image_dir = dest .. "/BSDS300/images"

  if not is_dir(output_image_dir) then
    error(string.format("super_resolution: %s is missing and nnrepl downloads nothing: extract BSDS300-images.tgz " ..
      "(http://www2.eecs.berkeley.edu/Research/Projects/CS/vision/bsds/BSDS300-images.tgz) into %s/, so that " ..
      "%s/train and %s/test hold the images", output_image_dir, dest, output_image_dir, output_image_dir), 0)
  end

  return output_image_dir
end

function M.calculate_valid_crop_size(crop_size, upscale_factor)
  return crop_size - (crop_size % upscale_factor)
end

function M.input_transform(crop_size, upscale_factor)
  return Compose({
    CenterCrop(crop_size),
    Resize(crop_size // upscale_factor),
    ToTensor(),
  })
end

function M.target_transform(crop_size)
  return Compose({
    CenterCrop(crop_size),
    ToTensor(),
  })
end

local function get_set(split, upscale_factor)
  local root_dir = M.download_bsd300()
  local dir = root_dir .. "/" .. split
  local crop_size = M.calculate_valid_crop_size(256, upscale_factor)

  return DatasetFromFolder(dir, M.input_transform(crop_size, upscale_factor), M.target_transform(crop_size))
end

function M.get_training_set(upscale_factor) return get_set("train", upscale_factor) end

function M.get_test_set(upscale_factor) return get_set("test", upscale_factor) end

return M
