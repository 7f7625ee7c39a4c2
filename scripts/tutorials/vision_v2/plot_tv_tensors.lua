-- torchvision gallery/transforms/plot_tv_tensors.py (TVTensors FAQ) ported to nnrepl.
--
--   nnrepl scripts/tutorials/vision_v2/plot_tv_tensors.lua [--assets ../assets]
--
-- Differences: ASSETS/astronaut.jpg must be on disk (the gallery's assets are not shipped);
-- Python's isinstance(x, torch.Tensor) is torch.is_tensor(x), isinstance(x, cls) for a tv_tensor
-- class tv_tensors.isinstance(x, cls). The result of an in-place op (image:add_(1)) is the tv_tensor
-- itself, where torchvision returns a pure tensor sharing its data (printed at the end).
-- tv_tensors.set_return_type("TVTensor") (ops keeping the
-- tv_tensor class) is not supported by nnrepl: that cell's error is caught and printed here.
local torch = require "torch"
local PIL = require "PIL"
local tv_tensors = require("torchvision").tv_tensors
local helpers = require "helpers"

-- What are tv_tensors? Zero-copy tensor subclasses
local tensor = torch.rand(3, 256, 256)
local image = tv_tensors.Image(tensor)

assert(torch.is_tensor(image))
assert(image:data_ptr() == tensor:data_ptr())

-- How do I construct a tv_tensor? The constructor
image = tv_tensors.Image({{{{0, 1}, {1, 0}}}})
print(image)

local float_image = tv_tensors.Image({{{0, 1}, {1, 0}}}, {dtype = torch.float32, requires_grad = true})
print(float_image)

-- Image and Mask also take a PIL image
image = tv_tensors.Image(PIL.Image.open(helpers.assets() .. "/astronaut.jpg"))
print(tostring(image.shape) .. " " .. tostring(image.dtype))

-- BoundingBoxes need their format and canvas size
local bboxes = tv_tensors.BoundingBoxes(
  {{17, 16, 344, 495}, {0, 10, 0, 10}},
  {format = tv_tensors.BoundingBoxFormat.XYXY, canvas_size = {image:size(-2), image:size(-1)}}
)
print(bboxes)

-- tv_tensors.wrap()
local new_bboxes = torch.tensor({0, 20, 30, 40})
new_bboxes = tv_tensors.wrap(new_bboxes, {like = bboxes})
assert(tv_tensors.isinstance(new_bboxes, tv_tensors.BoundingBoxes))
assert(new_bboxes.canvas_size[1] == bboxes.canvas_size[1] and new_bboxes.canvas_size[2] == bboxes.canvas_size[2])

-- I had a TVTensor but now I have a Tensor
assert(tv_tensors.isinstance(bboxes, tv_tensors.BoundingBoxes))

-- shift the boxes by 3 pixels
new_bboxes = bboxes + 3

assert(torch.is_tensor(new_bboxes))
assert(not tv_tensors.isinstance(new_bboxes, tv_tensors.BoundingBoxes))

-- But I want a TVTensor back!
new_bboxes = bboxes + 3
new_bboxes = tv_tensors.wrap(new_bboxes, {like = bboxes})
assert(tv_tensors.isinstance(new_bboxes, tv_tensors.BoundingBoxes))

-- set_return_type("TVTensor") (a global setting, or a <close> variable for a block): not in nnrepl
local ok, err = pcall(function()
  local _ <close> = tv_tensors.set_return_type("TVTensor")
  new_bboxes = bboxes + 3
end)
print(ok and "set_return_type worked" or ("tv_tensors.set_return_type('TVTensor') failed: " .. tostring(err):match("[^\n]*")))

-- Exceptions: in-place ops keep the class of their object, their result is a pure tensor
image = tv_tensors.Image({{{0, 1}, {1, 0}}})

local new_image = image:add_(1):mul_(2)

assert(tv_tensors.isinstance(image, tv_tensors.Image))
print(image)

-- nnrepl differs here: an in-place op returns its object itself, so new_image is the Image
assert(torch.is_tensor(new_image))
print(string.format("new_image is an Image: %s (torchvision: False)", tostring(tv_tensors.isinstance(new_image, tv_tensors.Image))))
assert(new_image:eq(image):all():item())
assert(new_image:data_ptr() == image:data_ptr())
