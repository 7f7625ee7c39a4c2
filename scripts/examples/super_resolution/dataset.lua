-- pytorch/examples super_resolution/dataset.py: the images of a folder as (input, target)
-- pairs of their Y (luma) channel, each through its own transform.
local Image = require("PIL").Image
local listdir = require("tv_dataset_util").listdir -- Python's os.listdir (sorted here)

local M = {}

function M.is_image_file(filename)
  for _, extension in ipairs({ ".png", ".jpg", ".jpeg" }) do
    if filename:sub(-#extension) == extension then return true end
  end
  return false
end

function M.load_img(filepath)
  local img = Image.open(filepath):convert("YCbCr")
  local y = img:split()
  return y
end

local DatasetFromFolder = torch.utils.data.Dataset:extend("DatasetFromFolder")
M.DatasetFromFolder = DatasetFromFolder

function DatasetFromFolder:__init(image_dir, input_transform, target_transform)
  self.image_filenames = {}
  for _, x in ipairs(listdir("DatasetFromFolder", image_dir)) do
    if M.is_image_file(x) then self.image_filenames[#self.image_filenames + 1] = image_dir .. "/" .. x end
  end
  self.input_transform = input_transform
  self.target_transform = target_transform
end

function DatasetFromFolder:__getitem(index)
  local input = M.load_img(self.image_filenames[index + 1])
  local target = input:copy()
  if self.input_transform then input = self.input_transform(input) end
  if self.target_transform then target = self.target_transform(target) end
  return input, target
end

function DatasetFromFolder:__len()
  return #self.image_filenames
end

return M
