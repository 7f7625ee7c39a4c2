-- torchvision gallery/transforms/plot_transforms_getting_started.py (Getting started with
-- transforms v2) ported to nnrepl.
--
--   nnrepl scripts/tutorials/vision_v2/plot_transforms_getting_started.lua [--assets ../assets]
--
-- Differences: the gallery's assets are not shipped: ASSETS/astronaut.jpg must be on disk (any
-- RGB JPEG of at least 510 x 510 pixels serves; read_image's error names the missing file);
-- plot() prints one line per image (helpers.lua); type() prints through helpers.pytype; a
-- tuple of Python is a Lua list; the random draws are nnrepl's, not PyTorch's.
local torch = require "torch"
local v2 = require("torchvision").transforms.v2
local read_image = require("torchvision").io.read_image
local helpers = require "helpers"
local plot, pytype, pyrepr = helpers.plot, helpers.pytype, helpers.pyrepr

torch.manual_seed(1)

local img = read_image(helpers.assets() .. "/astronaut.jpg")
print(string.format("type(img) = %s, img.dtype = %s, img.shape = %s", pytype(img), tostring(img.dtype), tostring(img.shape)))

-- The basics
local transform = v2.RandomCrop({size = {224, 224}})
local out = transform(img)

plot({img, out})

-- Image classification
local transforms = v2.Compose({
  v2.RandomResizedCrop({size = {224, 224}, antialias = true}),
  v2.RandomHorizontalFlip({p = 0.5}),
  v2.ToDtype(torch.float32, {scale = true}),
  v2.Normalize({mean = {0.485, 0.456, 0.406}, std = {0.229, 0.224, 0.225}}),
})
out = transforms(img)

plot({img, out})

-- Detection, Segmentation, Videos
local tv_tensors = require("torchvision").tv_tensors

local boxes = tv_tensors.BoundingBoxes(
  {
    {15, 10, 370, 510},
    {275, 340, 510, 510},
    {130, 345, 210, 425},
  },
  {format = "XYXY", canvas_size = {img:size(-2), img:size(-1)}})

transforms = v2.Compose({
  v2.RandomResizedCrop({size = {224, 224}, antialias = true}),
  v2.RandomPhotometricDistort({p = 1}),
  v2.RandomHorizontalFlip({p = 1}),
})
local out_img, out_boxes = transforms(img, boxes)
print(pytype(boxes) .. " " .. pytype(out_boxes))

plot({{img, boxes}, {out_img, out_boxes}})

-- What are TVTensors?
local img_dp = tv_tensors.Image(torch.randint(0, 256, {3, 256, 256}, {dtype = torch.uint8}))

print(string.format("isinstance(img_dp, torch.Tensor) = %s", torch.is_tensor(img_dp) and "True" or "False"))
print(string.format("img_dp.dtype = %s, img_dp.shape = %s, img_dp.sum() = %s", tostring(img_dp.dtype),
  tostring(img_dp.shape), tostring(img_dp:sum())))

-- What do I pass as input?
local target = {
  boxes = boxes,
  labels = torch.arange(boxes.shape[1]),
  this_is_ignored = {"arbitrary", {structure = "!"}},
}

-- the transforms and definitions from above
local out_target
out_img, out_target = transforms(img, target)

plot({{img, target.boxes}, {out_img, out_target.boxes}})
print(pyrepr(out_target.this_is_ignored, true))
