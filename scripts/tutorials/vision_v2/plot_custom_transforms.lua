-- torchvision gallery/transforms/plot_custom_transforms.py (How to write your own v2 transforms)
-- ported to nnrepl.
--
--   nnrepl scripts/tutorials/vision_v2/plot_custom_transforms.lua
--
-- Differences: a transform is an nn.Module class with a forward; several inputs are several
-- arguments and several return values (Python's tuples); tuples in a nested input are Lua lists.
local torch = require "torch"
local nn = torch.nn
local tv_tensors = require("torchvision").tv_tensors
local v2 = require("torchvision").transforms.v2

-- Just create a nn.Module and override forward
local MyCustomTransform = nn.Module:extend("MyCustomTransform")
function MyCustomTransform:forward(img, bboxes, label) -- the inputs always come like this
  print(string.format("I'm transforming an image of shape %s with bboxes = %s\nlabel = %s", tostring(img.shape),
    tostring(bboxes), tostring(label)))
  -- the transformation: here the inputs pass through
  return img, bboxes, label
end

local transforms = v2.Compose({
  MyCustomTransform(),
  v2.RandomResizedCrop({224, 224}, {antialias = true}),
  v2.RandomHorizontalFlip({p = 1}),
  v2.Normalize({mean = {0, 0, 0}, std = {1, 1, 1}}),
})

local H, W = 256, 256
local img = torch.rand(3, H, W)
local bboxes = tv_tensors.BoundingBoxes(
  torch.tensor({{0, 10, 10, 20}, {50, 50, 70, 70}}),
  {format = "XYXY", canvas_size = {H, W}}
)
local label = 3

local out_img, out_bboxes, out_label = transforms(img, bboxes, label)
print(string.format("Output image shape: %s\nout_bboxes = %s\nout_label = %s", tostring(out_img.shape),
  tostring(out_bboxes), tostring(out_label)))

-- Supporting arbitrary input structures
local structured_input = {
  img = img,
  annotations = {bboxes, label},
  something_that_will_be_ignored = {1, "hello"},
}
local structured_output = v2.RandomHorizontalFlip({p = 1})(structured_input)

assert(type(structured_output) == "table" and structured_output.img ~= nil)
assert(structured_output.something_that_will_be_ignored[1] == 1 and structured_output.something_that_will_be_ignored[2] == "hello")
print(string.format("The transformed bboxes are:\n%s", tostring(structured_output.annotations[1])))
