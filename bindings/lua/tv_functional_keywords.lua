-- torchvision.transforms.functional's parameter names and defaults (torchvision 0.26), and the
-- wrapper that gives every function of the table Python's calling forms: positional values, a
-- trailing keyword table, or both, as TF.rotate(img, 30, {expand = true}) or
-- TF.affine(img, {angle = 10, translate = {2, 3}, scale = 1.0, shear = {0.0}}).
-- An unknown keyword, a value given twice or a missing required argument is an error naming it
-- (U.parse). The implementations take their arguments positionally, defaults already filled.
local U = require "nn_util"
local torch = require "torch"

local R = U.REQUIRED

-- name -> {{param, default}, ...} in torchvision's order; an absent default is None
local signatures = {
  get_image_size = {{"img", R}},
  get_dimensions = {{"img", R}},
  get_image_num_channels = {{"img", R}},
  to_tensor = {{"pic", R}},
  pil_to_tensor = {{"pic", R}},
  to_pil_image = {{"pic", R}, {"mode"}},
  convert_image_dtype = {{"image", R}, {"dtype", torch.float32}},
  normalize = {{"tensor", R}, {"mean", R}, {"std", R}, {"inplace", false}},
  resize = {{"img", R}, {"size", R}, {"interpolation", "bilinear"}, {"max_size"}, {"antialias", true}},
  pad = {{"img", R}, {"padding", R}, {"fill", 0}, {"padding_mode", "constant"}},
  crop = {{"img", R}, {"top", R}, {"left", R}, {"height", R}, {"width", R}},
  center_crop = {{"img", R}, {"output_size", R}},
  resized_crop = {{"img", R}, {"top", R}, {"left", R}, {"height", R}, {"width", R}, {"size", R},
    {"interpolation", "bilinear"}, {"antialias", true}},
  hflip = {{"img", R}},
  vflip = {{"img", R}},
  five_crop = {{"img", R}, {"size", R}},
  ten_crop = {{"img", R}, {"size", R}, {"vertical_flip", false}},
  adjust_brightness = {{"img", R}, {"brightness_factor", R}},
  adjust_contrast = {{"img", R}, {"contrast_factor", R}},
  adjust_saturation = {{"img", R}, {"saturation_factor", R}},
  adjust_hue = {{"img", R}, {"hue_factor", R}},
  adjust_gamma = {{"img", R}, {"gamma", R}, {"gain", 1}},
  adjust_sharpness = {{"img", R}, {"sharpness_factor", R}},
  rgb_to_grayscale = {{"img", R}, {"num_output_channels", 1}},
  to_grayscale = {{"img", R}, {"num_output_channels", 1}},
  invert = {{"img", R}},
  posterize = {{"img", R}, {"bits", R}},
  solarize = {{"img", R}, {"threshold", R}},
  autocontrast = {{"img", R}},
  equalize = {{"img", R}},
  gaussian_blur = {{"img", R}, {"kernel_size", R}, {"sigma"}},
  erase = {{"img", R}, {"i", R}, {"j", R}, {"h", R}, {"w", R}, {"v", R}, {"inplace", false}},
  rotate = {{"img", R}, {"angle", R}, {"interpolation", "nearest"}, {"expand", false}, {"center"}, {"fill"}},
  affine = {{"img", R}, {"angle", R}, {"translate", R}, {"scale", R}, {"shear", R}, {"interpolation", "nearest"},
    {"fill"}, {"center"}},
  perspective = {{"img", R}, {"startpoints", R}, {"endpoints", R}, {"interpolation", "bilinear"}, {"fill"}},
  elastic_transform = {{"img", R}, {"displacement", R}, {"interpolation", "bilinear"}, {"fill"}},
}

-- fn(args in spec order) called as Python calls it: U.parse fills the defaults and checks names
local function with_keywords(name, spec, fn)
  local n = #spec
  return function(...)
    local o = U.parse(name, spec, ...)
    local args = {}
    for i = 1, n do args[i] = o[spec[i][1]] end
    return fn(table.unpack(args, 1, n)) -- a tail call: the implementation's errors point at the caller
  end
end

-- Wraps F's functions named in sigs (default: the table above) in place; aliases such as
-- to_grayscale have their own entry.
return function(F, sigs)
  for name, spec in pairs(sigs or signatures) do
    local fn = F[name]
    if fn == nil then error("tv_functional_keywords: transforms.functional." .. name .. " is missing") end
    F[name] = with_keywords(name, spec, fn)
  end
end
