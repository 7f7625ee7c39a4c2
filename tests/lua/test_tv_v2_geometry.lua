-- transforms.v2's geometric functionals and transforms on whole samples: an Image, BoundingBoxes,
-- a Mask with the boxes drawn as filled rectangles, KeyPoints and a label. The image must equal
-- v1's functional with the same params, the boxes the box kernel, and (independently) the box
-- hull of each rectangle left in the mask must match its transformed box.
local T = ...
local torch = require "torch"
local tv = require "torchvision"
local tvt, v2 = tv.tv_tensors, tv.transforms.v2
local F, F1 = v2.functional, tv.transforms.functional
local K = require "tv_v2_kernels_geometry"

local H, W = 20, 24
local BOXES = {{2, 3, 10, 12}, {12, 5, 21, 17}}

local function L(t) return t:cpu():tolist() end
-- equal tensors (a short message instead of both tensors when they differ)
local function teq(a, b, msg)
  T.check(a.dtype == b.dtype and a.shape == b.shape and torch.equal(a:cpu(), b:cpu()), msg)
end

local function sample(dev)
  local img = tvt.Image(torch.randint(0, 256, {3, H, W}, {dtype = torch.uint8}):to(dev))
  local boxes = tvt.BoundingBoxes(torch.tensor(BOXES, {dtype = torch.float32}):to(dev), {format = "XYXY", canvas_size = {H, W}})
  local m = torch.zeros(H, W, {dtype = torch.uint8})
  for i, b in ipairs(BOXES) do m:narrow(0, b[2], b[4] - b[2]):narrow(1, b[1], b[3] - b[1]):fill_(i) end
  local kp = tvt.KeyPoints(torch.tensor({{2, 3}, {21, 17}}, {dtype = torch.float32}):to(dev), {canvas_size = {H, W}})
  return {image = img, boxes = boxes, masks = tvt.Mask(m:to(dev)), keypoints = kp, labels = torch.tensor({1, 2})}
end

-- the box {x1, y1, x2, y2} of the pixels of mask equal to v, found with a plain loop (nil if none)
local function hull(mask, v)
  local rows = L(mask)
  local x1, y1, x2, y2
  for y, row in ipairs(rows) do
    for x, val in ipairs(row) do
      if val == v then
        x1, y1 = math.min(x1 or x, x - 1), math.min(y1 or y, y - 1)
        x2, y2 = math.max(x2 or 0, x), math.max(y2 or 0, y)
      end
    end
  end
  return x1 and {x1, y1, x2, y2}
end

-- each rectangle of the mask sits where its box went (every coordinate within tol pixels); labels untouched
local function consistent(out, tol, what)
  local boxes = L(out.boxes)
  T.eq(out.boxes.canvas_size, {out.masks:size(-2), out.masks:size(-1)}, what .. ": the boxes' canvas is the mask's size")
  T.eq(out.keypoints.canvas_size, out.boxes.canvas_size, what .. ": keypoints' canvas")
  for i = 1, #BOXES do
    local hb, b = hull(out.masks, i), boxes[i]
    if hb and b[3] - b[1] >= 2 and b[4] - b[2] >= 2 then
      local worst = 0
      for k = 1, 4 do worst = math.max(worst, math.abs(hb[k] - b[k])) end
      T.check(worst <= tol, string.format("%s box %d %s vs mask hull %s (tol %s)", what, i, T.show(b), T.show(hb), tol))
    end
  end
  T.eq(L(out.labels), {1, 2}, what .. ": labels untouched")
end

local function pure(x) return x:view(x.shape) end
local function is(x, cls) return tvt.isinstance(x, cls) end

local function run(dev)
  local tag = " [" .. dev .. "]"

  T.test("functionals dispatch by kind" .. tag, function()
    local s = sample(dev)
    local img, b, m, kp = s.image, s.boxes, s.masks, s.keypoints
    local o = F.horizontal_flip(img)
    T.check(is(o, tvt.Image), "an Image stays an Image")
    teq(o, F1.hflip(pure(img)), "image = v1 hflip")
    local ob = F.horizontal_flip(b)
    T.check(is(ob, tvt.BoundingBoxes) and ob.format == b.format, "boxes stay boxes")
    T.near(L(ob), {{14, 3, 22, 12}, {3, 5, 12, 17}}, 0, "flipped boxes by hand: x -> W - x")
    T.near(L(F.horizontal_flip(kp)), {{21, 3}, {2, 17}}, 0, "flipped keypoints by hand: x -> W - 1 - x (pixel centres)")
    teq(F.hflip(m), pure(m):flip(-1), "hflip alias on a mask")
    T.near(L(F.vertical_flip(b)), {{2, 8, 10, 17}, {12, 3, 21, 15}}, 0, "vflip boxes by hand: y -> H - y")
    T.check(tvt.is_pure_tensor(F.vertical_flip(pure(img))), "a pure tensor stays pure")

    local r = F.resize(b, {40, 48})
    T.eq(r.canvas_size, {40, 48}, "resize gives the new canvas")
    T.near(L(r), {{4, 6, 20, 24}, {24, 10, 42, 34}}, 0, "boxes scaled by 2")
    teq(F.resize(img, {size = {40, 48}}), F1.resize(pure(img), {40, 48}), "resize with keywords = v1")
    local rn = F.resize(img, nil, {max_size = 12})
    T.eq(rn.shape:totable(), {3, 10, 12}, "size None: longer edge becomes max_size")
    T.eq(F.resize(b, nil, nil, 12).canvas_size, {10, 12}, "boxes' canvas with size None")
    T.eq(F.resize(m, 10).shape:totable(), {10, 12}, "mask resized by its shorter edge")

    local c = F.crop(b, 2, 4, 10, 12)
    T.eq(c.canvas_size, {10, 12})
    teq(c, K.crop_bounding_boxes(pure(b), "XYXY", 2, 4, 10, 12), "crop boxes = kernel")
    teq(F.crop(img, 2, 4, 10, 12), F1.crop(pure(img), 2, 4, 10, 12), "crop image = v1")
    T.near(L(F.crop(kp, 2, 4, 10, 12)), {{-2, 1}, {17, 15}}, 0, "keypoints shift, unclamped")

    local p = F.pad(b, {1, 2, 3, 4})
    T.eq(p.canvas_size, {H + 6, W + 4})
    T.near(L(p), {{3, 5, 11, 14}, {13, 7, 22, 19}}, 0, "pad shifts by left, top")
    teq(F.pad(img, 2, 9), F1.pad(pure(img), 2, 9), "pad image = v1")
    T.eq(F.pad(m, 2, {fill = 5})[0][0]:item(), 5, "mask padded with its fill")

    local rb = F.rotate(b, 90, {expand = true})
    T.eq(rb.canvas_size, {W, H}, "rotate 90 expand swaps the canvas")
    teq(rb, (K.rotate_bounding_boxes(pure(b), "XYXY", {H, W}, 90, true)), "rotate boxes = kernel")
    teq(F.rotate(img, 30, "bilinear"), F1.rotate(pure(img), 30, "bilinear"), "rotate image = v1")
    teq(F.affine(img, 10, {1, 2}, 1.1, {3, 0}), F1.affine(pure(img), 10, {1, 2}, 1.1, {3, 0}), "affine image = v1")
    teq(F.affine(b, 10, {1, 2}, 1.1, {3, 0}), K.affine_bounding_boxes(pure(b), "XYXY", {H, W}, 10, {1, 2}, 1.1, {3, 0}),
      "affine boxes = kernel")
    local sp, ep = {{0, 0}, {W - 1, 0}, {W - 1, H - 1}, {0, H - 1}}, {{2, 1}, {W - 2, 0}, {W - 1, H - 3}, {1, H - 1}}
    teq(F.perspective(img, sp, ep), F1.perspective(pure(img), sp, ep), "perspective image = v1")
    teq(F.perspective(b, sp, ep), K.perspective_bounding_boxes(pure(b), "XYXY", {H, W}, sp, ep), "perspective boxes = kernel")
    T.raises(function() F.perspective(img, nil, nil, {coefficients = {1, 0, 0, 0, 1, 0, 0, 0}}) end, "~pass startpoints and endpoints")
    local d = torch.zeros(1, H, W, 2):to(dev)
    teq(F.elastic(img, d), F1.elastic_transform(pure(img), d), "elastic image = v1")
    teq(F.elastic_transform(m, d), m, "zero displacement keeps the mask")
    teq(F.center_crop(b, {10, 12}), K.center_crop_bounding_boxes(pure(b), "XYXY", {H, W}, {10, 12}), "center_crop boxes")
    teq(F.resized_crop(img, 1, 2, 10, 12, {20, 24}), F1.resized_crop(pure(img), 1, 2, 10, 12, {20, 24}), "resized_crop image")
    local rc = F.resized_crop(b, 1, 2, 10, 12, {20, 24})
    T.eq(rc.canvas_size, {20, 24})

    local five = F.five_crop(img, 8)
    T.eq(#five, 5)
    T.check(is(five[5], tvt.Image), "five_crop wraps each crop")
    T.raises(function() F.five_crop(m, 8) end, "~Functional five_crop supports inputs of type")
    T.raises(function() F.horizontal_flip("x") end, "~Functional horizontal_flip supports inputs of type")
    T.raises(function() F.resize(img, {10, 10}, {sizes = 3}) end, "~unknown keyword 'sizes'")
    T.raises(function() F.crop(b, 1, 2) end, "~missing required argument 'height'")
  end)

  T.test("the v2 classes on a whole sample" .. tag, function()
    local cases = {
      {"RandomHorizontalFlip", v2.RandomHorizontalFlip(1.0), 0},
      {"RandomVerticalFlip", v2.RandomVerticalFlip({p = 1.0}), 0},
      {"Resize", v2.Resize({30, 36}), 1},
      {"Resize max_size", v2.Resize(nil, {max_size = 30}), 1},
      {"CenterCrop", v2.CenterCrop(14), 0},
      {"RandomCrop", v2.RandomCrop(14, {padding = 3}), 0},
      {"RandomCrop pad_if_needed", v2.RandomCrop({24, 30}, {pad_if_needed = true}), 0},
      {"RandomResizedCrop", v2.RandomResizedCrop({16, 16}, {scale = {0.5, 1.0}}), 1.5},
      {"Pad", v2.Pad({1, 2, 3, 4}), 0},
      {"RandomRotation", v2.RandomRotation(20), 2},
      {"RandomAffine", v2.RandomAffine(15, {translate = {0.1, 0.1}, scale = {0.9, 1.1}}), 2},
      {"RandomPerspective", v2.RandomPerspective(0.3, 1.0), 2},
      {"RandomZoomOut", v2.RandomZoomOut({p = 1.0}), 0},
      {"ScaleJitter", v2.ScaleJitter({20, 24}, {0.5, 1.5}), 1.5},
      {"RandomShortestSize", v2.RandomShortestSize({12, 16, 30}), 1.5},
      {"RandomResize", v2.RandomResize(10, 30), 1.5},
    }
    for _, c in ipairs(cases) do
      local name, t, tol = c[1], c[2], c[3]
      for seed = 1, 3 do
        torch.manual_seed(seed)
        local s = sample(dev)
        local out = t(s)
        T.check(is(out.image, tvt.Image) and is(out.masks, tvt.Mask) and is(out.boxes, tvt.BoundingBoxes) and is(out.keypoints, tvt.KeyPoints),
          name .. ": kinds kept")
        T.eq(out.image:size(-1), out.masks:size(-1), name .. ": image and mask agree")
        consistent(out, tol, name .. " seed " .. seed)
        -- the same params again, through the kernels by hand
        torch.manual_seed(seed)
        local s2 = sample(dev)
        if t.p then torch.rand(1) end -- a random-apply transform's draw comes first
        local p = t.make_params and t:make_params({s2.image, s2.boxes, s2.masks, s2.keypoints}) or {}
        if name == "RandomCrop" or name == "RandomCrop pad_if_needed" then
          local img = pure(s2.image)
          if p.needs_pad then img = F1.pad(img, p.padding) end
          if p.needs_crop then img = F1.crop(img, p.top, p.left, p.height, p.width) end
          teq(out.image, img, name .. ": image = v1 pad + crop with the params")
        elseif name == "RandomResizedCrop" then
          teq(out.image, F1.resized_crop(pure(s2.image), p.top, p.left, p.height, p.width, {16, 16}), name .. ": image = v1")
          local kb = K.resized_crop_bounding_boxes(pure(s2.boxes), "XYXY", p.top, p.left, p.height, p.width, {16, 16})
          teq(out.boxes, kb, name .. ": boxes = kernel")
        elseif name == "RandomAffine" then
          local fill = {0.0, 0.0, 0.0}
          teq(out.image, F1.affine(pure(s2.image), p.angle, p.translate, p.scale, p.shear, "nearest", fill), name .. ": image = v1")
          teq(out.boxes, K.affine_bounding_boxes(pure(s2.boxes), "XYXY", {H, W}, p.angle, p.translate, p.scale, p.shear),
            name .. ": boxes = kernel")
        elseif name == "RandomRotation" then
          teq(out.image, F1.rotate(pure(s2.image), p.angle, "nearest", false, nil, {0.0, 0.0, 0.0}), name .. ": image = v1")
        elseif name == "RandomZoomOut" then
          teq(out.image, F1.pad(pure(s2.image), p.padding, 0), name .. ": image = v1 pad")
          local sz = out.image:size(-1) / W
          T.check(sz >= 1 and sz <= 4, name .. ": canvas 1 to 4 times the input")
        end
      end
    end
  end)

  T.test("RandomHorizontalFlip p and v1 equality, Resize and Pad fills" .. tag, function()
    local s = sample(dev)
    local same = v2.RandomHorizontalFlip(0.0)(s)
    teq(same.boxes, s.boxes, "p=0 leaves the sample")
    local out = v2.RandomHorizontalFlip(1.0)(s)
    teq(out.image, F1.hflip(pure(s.image)), "image = v1 hflip")
    teq(out.boxes, K.horizontal_flip_bounding_boxes(pure(s.boxes), "XYXY", {H, W}), "boxes = kernel")
    local r = v2.Resize(10)(s)
    teq(r.image, tv.transforms.Resize(10)(pure(s.image)), "Resize image = v1 Resize")
    teq(r.masks, F1.resize(pure(s.masks):unsqueeze(0), {10, 12}, "nearest")[0], "masks resized nearest")
    local pd = v2.Pad(2, {fill = {[tvt.Image] = 7, others = 0}})(s)
    T.eq(pd.image[0][0][0]:item(), 7, "the Image's fill")
    T.eq(pd.masks[0][0]:item(), 0, "the mask's fill")
    local pd2 = v2.Pad(2, {fill = {[tvt.Mask] = 9}})(s)
    T.eq(pd2.masks[0][0]:item(), 9, "a mask fill given per type")
    T.eq(pd2.image[0][0][0]:item(), 0, "no entry: the kernel's default fill")
    local rot = v2.RandomRotation({90, 90}, {fill = {[tvt.Image] = 5, [tvt.Mask] = 3}, expand = true})(s)
    T.eq(rot.boxes.canvas_size, {W, H}, "expand: new canvas")
    consistent(rot, 1, "rotation 90")
    T.check(v2.RandomCrop.get_params == tv.transforms.RandomCrop.get_params, "v1's get_params")
    T.check(v2.RandomResizedCrop.get_params ~= nil and v2.RandomAffine.get_params ~= nil)
    T.eq(tostring(v2.CenterCrop(4)), tostring(tv.transforms.CenterCrop(4)), "the v1 repr")
    local px = v2.CenterCrop(4)(pure(s.image))
    T.check(tvt.is_pure_tensor(px) and px:size(-1) == 4, "a pure tensor alone is the image")
  end)

  T.test("ElasticTransform" .. tag, function()
    torch.manual_seed(3)
    local s = sample(dev)
    local t = v2.ElasticTransform(20.0, 3.0)
    torch.manual_seed(4)
    local out = t(s)
    torch.manual_seed(4)
    local p = t:make_params({s.image})
    teq(out.image, F1.elastic_transform(pure(s.image), p.displacement:to(dev), "bilinear", {0.0}), "image = v1")
    teq(out.boxes, K.elastic_bounding_boxes(pure(s.boxes), "XYXY", {H, W}, p.displacement:to(dev)), "boxes = kernel")
    teq(out.masks, K.elastic_mask(pure(s.masks), p.displacement:to(dev)), "mask = kernel")
  end)

  T.test("RandomIoUCrop" .. tag, function()
    local function iou(a, b)
      local ix = math.max(0, math.min(a[3], b[3]) - math.max(a[1], b[1]))
      local iy = math.max(0, math.min(a[4], b[4]) - math.max(a[2], b[2]))
      local inter = ix * iy
      return inter / ((a[3] - a[1]) * (a[4] - a[2]) + (b[3] - b[1]) * (b[4] - b[2]) - inter)
    end
    local t = v2.RandomIoUCrop({sampler_options = {0.5}})
    for seed = 1, 10 do
      torch.manual_seed(seed)
      local s = sample(dev)
      local p = t:make_params({s.image, s.boxes, s.masks})
      local crop = {p.left, p.top, p.left + p.width, p.top + p.height}
      local best = 0
      for i, b in ipairs(BOXES) do
        local cx, cy = (b[1] + b[3]) / 2, (b[2] + b[4]) / 2
        local inside = crop[1] < cx and cx < crop[3] and crop[2] < cy and cy < crop[4]
        T.eq(p.is_within_crop_area[i - 1]:item(), inside, "centre inside, by hand")
        if inside then best = math.max(best, iou(b, crop)) end
      end
      T.check(best >= 0.5, "some box has IoU >= 0.5 with the crop, got " .. best)
      local ar = p.width / p.height
      T.check(ar >= 0.5 and ar <= 2.0 and p.width >= math.floor(W * 0.3) and p.height >= math.floor(H * 0.3), "scale and aspect ratio")
      local out = t:transform(s.boxes, p)
      T.eq(out.canvas_size, {p.height, p.width})
      for i = 1, #BOXES do
        if not p.is_within_crop_area[i - 1]:item() then T.eq(L(out[i - 1]), {0.0, 0.0, 0.0, 0.0}, "a box centred outside is zeroed") end
      end
      local im = t:transform(s.image, p)
      teq(im, F1.crop(pure(s.image), p.top, p.left, p.height, p.width), "image = v1 crop")
    end
    torch.manual_seed(0)
    local s = sample(dev)
    local keep = v2.RandomIoUCrop({sampler_options = {1.0}})(s)
    teq(keep.boxes, s.boxes, "option 1.0 leaves the sample")
    T.raises(function() v2.RandomIoUCrop()(s.image) end, "~requires input sample to contain tensor or PIL images and bounding boxes")
  end)

  T.test("resize draws: ScaleJitter, RandomShortestSize, RandomResize" .. tag, function()
    local s = sample(dev)
    for seed = 1, 20 do
      torch.manual_seed(seed)
      local h = v2.ScaleJitter({40, 48}, {0.5, 1.5})(s).image:size(-2)
      local r = math.min(48 / H, 40 / W)
      T.check(h >= math.floor(H * r * 0.5) and h <= math.floor(H * r * 1.5), "ScaleJitter's height in range: " .. h)
      local o = v2.RandomShortestSize({10, 15}, 22)(s).image
      local short, long = math.min(o:size(-2), o:size(-1)), math.max(o:size(-2), o:size(-1))
      T.check((short == 10 or short == 15 or long == 22) and long <= 22, "RandomShortestSize: " .. short .. "x" .. long)
      local rr = v2.RandomResize(8, 12)(s).image
      local sh = math.min(rr:size(-2), rr:size(-1))
      T.check(sh >= 8 and sh < 12, "RandomResize's shorter edge in [8, 12): " .. sh)
    end
  end)

  T.test("bad arguments" .. tag, function()
    T.raises(function() v2.Resize({1, 2, 3}) end, "~size can be an integer, a sequence of one or two integers, or None")
    T.raises(function() v2.Resize() end, "~max_size must be an integer when size is None")
    T.raises(function() v2.Resize({10, 12}, {max_size = 20}) end, "~max_size should only be passed")
    T.raises(function() v2.RandomZoomOut({side_range = {0.5, 2}}) end, "~Invalid side range provided")
    T.raises(function() v2.RandomHorizontalFlip(2) end, "~`p` should be a floating point value")
    T.raises(function() v2.Pad(2, {fill = "x"}) end, "~Got inappropriate fill arg")
    T.raises(function() v2.Pad(2, {fill = {[tvt.Image] = "x"}}) end, "~Got inappropriate fill arg")
    T.raises(function() v2.RandomCrop(40)(sample(dev)) end, "~Required crop size (40, 40) is larger than input image size (20, 24)")
    T.raises(function() v2.RandomRotation(-1) end, "~must be positive")
    T.raises(function() v2.RandomCrop(4, {paddin = 2}) end, "~paddin")
  end)
end

local before = T.passed + T.failed
run("cpu")
if torch.cuda.is_available() then
  run("cuda")
else
  T.skip("no CUDA: the cuda run of every check", T.passed + T.failed - before)
end
