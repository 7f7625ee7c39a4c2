-- transforms.functional with torchvision's keywords as a trailing table: every function gives the
-- same result for its positional form, a mixed form and an all-keyword form; a few results are
-- checked against values worked out by hand; unknown keywords, values given twice and missing
-- arguments are errors naming them. Also the class transforms' keyword forms.
local T = ...
local tv = require("torchvision").transforms
local TF = tv.functional
local Image = require("tv_io").Image

-- equal results: tensors (dtype and values), PIL-like images, lists of them, plain values
local function same(a, b, msg)
  if torch.is_tensor(a) and torch.is_tensor(b) then
    T.eq(tostring(a.dtype) .. tostring(a:size()), tostring(b.dtype) .. tostring(b:size()), msg .. " (dtype, shape)")
    T.eq(a:cpu():tolist(), b:cpu():tolist(), msg)
  elseif Image.isImageType(a) and Image.isImageType(b) then
    T.eq(a.mode, b.mode, msg .. " (mode)")
    T.eq(a._data:tolist(), b._data:tolist(), msg)
  elseif type(a) == "table" and torch.is_tensor(a[1]) then
    T.eq(#a, #b, msg .. " (count)")
    for i = 1, #a do same(a[i], b[i], msg .. " [" .. i .. "]") end
  else
    T.eq(a, b, msg)
  end
end

-- a list's values, holes (positional nils) included
local function args(t)
  local n = 0
  for k in pairs(t) do n = math.max(n, k) end
  return table.unpack(t, 1, n)
end

local function run(device)
  local dev = {device = device}
  -- a 3 x 5 x 6 float image with distinct values in [0, 1), and its uint8 form
  local img = (torch.arange(90, {dtype = torch.float32, device = device}):reshape(3, 5, 6) * 0.37):remainder(1.0)
  local u8 = (img * 255):to(torch.uint8)
  local pil = Image.fromarray(u8:cpu():permute(1, 2, 0):contiguous())
  local disp = torch.full({1, 5, 6, 2}, 0.1, dev)
  local corners = {{0, 0}, {5, 0}, {5, 4}, {0, 4}}
  local moved = {{1, 0}, {5, 1}, {4, 4}, {0, 3}}

  -- name, positional call, and the keyword forms that must give the same result
  local cases = {
    {"get_image_size", {img}, {{{img = img}}}},
    {"get_dimensions", {img}, {{{img = img}}}},
    {"get_image_num_channels", {img}, {{{img = img}}}},
    {"to_tensor", {pil}, {{{pic = pil}}}},
    {"pil_to_tensor", {pil}, {{{pic = pil}}}},
    {"to_pil_image", {u8, "RGB"}, {{u8, {mode = "RGB"}}, {{pic = u8, mode = "RGB"}}}},
    {"convert_image_dtype", {u8, torch.float64}, {{u8, {dtype = torch.float64}}, {{image = u8, dtype = torch.float64}}}},
    {"normalize", {img, {0.5, 0.4, 0.3}, {0.2, 0.25, 0.5}, false},
      {{img, {0.5, 0.4, 0.3}, {0.2, 0.25, 0.5}, {inplace = false}}, {img, {mean = {0.5, 0.4, 0.3}, std = {0.2, 0.25, 0.5}}},
        {{tensor = img, mean = {0.5, 0.4, 0.3}, std = {0.2, 0.25, 0.5}}}}},
    {"resize", {img, {3, 4}, "nearest", nil, false},
      {{img, {3, 4}, {interpolation = "nearest", antialias = false}}, {img, {size = {3, 4}, interpolation = "nearest"}}}},
    {"pad", {img, {1, 2}, 0, "edge"}, {{img, {1, 2}, {fill = 0, padding_mode = "edge"}}, {img, {padding = {1, 2}, padding_mode = "edge"}}}},
    {"crop", {img, 1, 2, 3, 3}, {{img, 1, 2, {height = 3, width = 3}}, {img, {top = 1, left = 2, height = 3, width = 3}}}},
    {"center_crop", {img, {3, 2}}, {{img, {output_size = {3, 2}}}}},
    {"resized_crop", {img, 1, 1, 4, 4, {2, 2}, "bilinear", false},
      {{img, 1, 1, 4, 4, {2, 2}, {antialias = false}}, {img, {top = 1, left = 1, height = 4, width = 4, size = {2, 2}, antialias = false}}}},
    {"hflip", {img}, {{{img = img}}}},
    {"vflip", {img}, {{{img = img}}}},
    {"five_crop", {img, 2}, {{img, {size = 2}}}},
    {"ten_crop", {img, 2, true}, {{img, 2, {vertical_flip = true}}, {img, {size = 2, vertical_flip = true}}}},
    {"adjust_brightness", {img, 1.5}, {{img, {brightness_factor = 1.5}}}},
    {"adjust_contrast", {img, 0.7}, {{img, {contrast_factor = 0.7}}}},
    {"adjust_saturation", {img, 0.3}, {{img, {saturation_factor = 0.3}}}},
    {"adjust_hue", {img, 0.2}, {{img, {hue_factor = 0.2}}}},
    {"adjust_gamma", {img, 2.0, 0.5}, {{img, 2.0, {gain = 0.5}}, {img, {gamma = 2.0, gain = 0.5}}}},
    {"adjust_sharpness", {img, 2.0}, {{img, {sharpness_factor = 2.0}}}},
    {"rgb_to_grayscale", {img, 3}, {{img, {num_output_channels = 3}}}},
    {"to_grayscale", {pil, 3}, {{pil, {num_output_channels = 3}}}},
    {"invert", {img}, {{{img = img}}}},
    {"posterize", {u8, 3}, {{u8, {bits = 3}}}},
    {"solarize", {u8, 100}, {{u8, {threshold = 100}}}},
    {"autocontrast", {img}, {{{img = img}}}},
    {"equalize", {u8}, {{{img = u8}}}},
    {"gaussian_blur", {img, {3, 5}, {0.8, 1.2}}, {{img, {3, 5}, {sigma = {0.8, 1.2}}}, {img, {kernel_size = {3, 5}, sigma = {0.8, 1.2}}}}},
    {"erase", {img, 1, 2, 2, 3, 0.5, false}, {{img, 1, 2, 2, 3, 0.5, {inplace = false}}, {img, {i = 1, j = 2, h = 2, w = 3, v = 0.5}}}},
    {"rotate", {img, 30, "bilinear", true, nil, {0.1, 0.2, 0.3}},
      {{img, 30, {interpolation = "bilinear", expand = true, fill = {0.1, 0.2, 0.3}}},
        {img, {angle = 30, expand = true, interpolation = "bilinear", fill = {0.1, 0.2, 0.3}}}}},
    {"affine", {img, 10, {2, 1}, 1.2, {5.0, 0.0}, "bilinear", 0.5, {2, 2}},
      {{img, 10, {2, 1}, 1.2, {5.0, 0.0}, {interpolation = "bilinear", fill = 0.5, center = {2, 2}}},
        {img, {angle = 10, translate = {2, 1}, scale = 1.2, shear = {5.0, 0.0}, interpolation = "bilinear", fill = 0.5, center = {2, 2}}}}},
    {"perspective", {img, corners, moved, "nearest", 0.25},
      {{img, corners, moved, {interpolation = "nearest", fill = 0.25}}, {img, {startpoints = corners, endpoints = moved, interpolation = "nearest", fill = 0.25}}}},
    {"elastic_transform", {img, disp, "nearest"}, {{img, {displacement = disp, interpolation = "nearest"}}}},
  }
  local covered = {}
  for _, c in ipairs(cases) do
    local name, pos, forms = c[1], c[2], c[3]
    covered[name] = true
    local want = TF[name](args(pos))
    for k, form in ipairs(forms) do same(TF[name](table.unpack(form)), want, string.format("%s: %s keyword form %d", device, name, k)) end
  end
  -- each public function is covered above and rejects an unknown keyword by name
  for name, fn in pairs(TF) do
    if type(fn) == "function" and name:sub(1, 1) ~= "_" then
      T.check(covered[name], device .. ": a keyword case for " .. name)
      T.raises(function() fn(img, {no_such = 1}) end, "~unknown keyword 'no_such'", device .. ": " .. name .. " unknown keyword")
    end
  end
  -- defaults are torchvision's: pad fills 0, rotate keeps the size, resize antialiases, normalize copies
  same(TF.pad(img, 1), TF.pad(img, 1, {fill = 0, padding_mode = "constant"}), device .. ": pad defaults")
  same(TF.rotate(img, 30), TF.rotate(img, 30, "nearest", false), device .. ": rotate defaults")
  same(TF.resize(img, {3, 4}), TF.resize(img, {3, 4}, {antialias = true, interpolation = "bilinear"}), device .. ": resize defaults")
  same(TF.convert_image_dtype(u8), TF.convert_image_dtype(u8, {dtype = torch.float32}), device .. ": convert_image_dtype default")

  -- values worked out by hand on small images
  local sq = torch.tensor({{{1, 2}, {3, 4}}}, {dtype = torch.float32, device = device})
  T.near(TF.rotate(sq, 90, {expand = true}):cpu():tolist(), {{{2, 4}, {1, 3}}}, 0, device .. ": rotate 90 counter-clockwise")
  T.near(TF.pad(sq, {1, 0}, {padding_mode = "edge"}):cpu():tolist(), {{{1, 1, 2, 2}, {3, 3, 4, 4}}}, 0, device .. ": pad edge keyword")
  T.near(TF.pad(sq, {padding = {0, 1}, fill = 9}):cpu():tolist(), {{{9, 9}, {1, 2}, {3, 4}, {9, 9}}}, 0, device .. ": pad fill keyword")
  T.near(TF.normalize(sq, {mean = {1}, std = {2}}):cpu():tolist(), {{{0, 0.5}, {1, 1.5}}}, 0, device .. ": normalize keywords")
  T.near(TF.adjust_brightness(sq / 8, {brightness_factor = 1.5}):cpu():tolist(), {{{0.1875, 0.375}, {0.5625, 0.75}}}, 0,
    device .. ": adjust_brightness scales")
  T.near(TF.crop(sq, {top = 1, left = 0, height = 1, width = 2}):cpu():tolist(), {{{3, 4}}}, 0, device .. ": crop keywords")
  T.near(TF.affine(sq, {angle = 0, translate = {1, 0}, scale = 1.0, shear = {0.0}}):cpu():tolist(), {{{0, 1}, {0, 3}}}, 0,
    device .. ": affine shifts right by translate[1]")
  T.near(TF.erase(sq, {i = 0, j = 1, h = 2, w = 1, v = 0}):cpu():tolist(), {{{1, 0}, {3, 0}}}, 0, device .. ": erase keywords")
  T.near(sq:cpu():tolist(), {{{1, 2}, {3, 4}}}, 0, device .. ": erase without inplace leaves the input")
  local flat = torch.full({1, 5, 5}, 0.25, dev)
  T.near(TF.gaussian_blur(flat, {kernel_size = {3, 3}, sigma = {1.0}}):cpu():tolist(), flat:cpu():tolist(), 1e-7,
    device .. ": gaussian_blur keeps a constant image")
  T.near(TF.convert_image_dtype(torch.tensor({0, 255}, {dtype = torch.uint8, device = device}), {dtype = torch.float64}):cpu():tolist(),
    {0, 1}, 0, device .. ": convert_image_dtype keyword")

  -- errors that name the argument
  T.raises(function() TF.rotate(img, 30, {expnd = true}) end, "bad argument #3 to 'rotate' (unknown keyword 'expnd')", device .. ": typo named")
  T.raises(function() TF.crop(img, 0, 0, 2, 2, {top = 1}) end, "bad argument #6 to 'crop' (got multiple values for argument 'top')",
    device .. ": value given twice")
  T.raises(function() TF.affine(img, {angle = 10, translate = {0, 0}, scale = 1.0}) end,
    "bad argument #5 to 'affine' (missing required argument 'shear')", device .. ": missing argument named")
  T.raises(function() TF.hflip(img, 1) end, "bad argument #2 to 'hflip' (hflip takes at most 1 positional arguments, got 2)",
    device .. ": too many positional arguments")

  -- class transforms: keyword forms draw and transform as the positional forms do
  local classes = {
    {"RandomRotation", {30, "bilinear", true}, {{30, {interpolation = "bilinear", expand = true}}, {{degrees = 30, expand = true, interpolation = "bilinear"}}}},
    {"RandomAffine", {10, {0.1, 0.1}, {0.9, 1.1}, 5}, {{10, {translate = {0.1, 0.1}, scale = {0.9, 1.1}, shear = 5}}}},
    {"RandomPerspective", {0.4, 1.0}, {{{distortion_scale = 0.4, p = 1.0}}}},
    {"GaussianBlur", {3, {0.5, 1.0}}, {{3, {sigma = {0.5, 1.0}}}, {{kernel_size = 3, sigma = {0.5, 1.0}}}}},
    {"Pad", {2, 0.5, "reflect"}, {{2, {fill = 0.5, padding_mode = "reflect"}}}},
    {"RandomCrop", {4, 1, false, 0, "edge"}, {{4, {padding = 1, padding_mode = "edge"}}}},
    {"RandomResizedCrop", {3, {0.5, 1.0}}, {{3, {scale = {0.5, 1.0}}}, {{size = 3, scale = {0.5, 1.0}}}}},
    {"ColorJitter", {0.2, 0.3, 0.4, 0.1}, {{0.2, {contrast = 0.3, saturation = 0.4, hue = 0.1}}}},
    {"Normalize", {{0.5, 0.5, 0.5}, {0.2, 0.2, 0.2}}, {{{mean = {0.5, 0.5, 0.5}, std = {0.2, 0.2, 0.2}}}}},
    {"Resize", {{3, 4}, "nearest"}, {{{3, 4}, {interpolation = "nearest"}}}},
    {"RandomErasing", {1.0, {0.1, 0.2}}, {{{p = 1.0, scale = {0.1, 0.2}}}}},
    {"ElasticTransform", {20.0, 0.5}, {{{alpha = 20.0, sigma = 0.5}}}},
  }
  for _, c in ipairs(classes) do
    local cls = tv[c[1]]
    torch.manual_seed(7)
    local want = cls(args(c[2]))(img)
    for k, form in ipairs(c[3]) do
      torch.manual_seed(7)
      same(cls(table.unpack(form))(img), want, string.format("%s: %s keyword form %d", device, c[1], k))
    end
  end
  T.raises(function() tv.RandomRotation(30, {expnd = true}) end, "RandomRotation: unknown keyword 'expnd'", device .. ": class typo named")
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("cuda: transforms.functional keywords") end

-- v2.functional: its own functions take keywords too
local v2F = tv.v2.functional
local x = torch.zeros(2, 3)
T.eq(tostring(v2F.to_image({inpt = x}):size()), "torch.Size([1, 2, 3])", "v2 to_image keyword")
T.eq(v2F.get_size(x, {}), {2, 3}, "v2 get_size with an empty keyword table")
T.raises(function() v2F.to_image(x, {nope = 1}) end, "~unknown keyword 'nope'", "v2 to_image unknown keyword")
