-- transforms.v2's box and keypoint metadata transforms (convert, clamp, sanitize), CutMix and
-- MixUp, JPEG, GaussianNoise, RGB, channel permutations and temporal subsampling
-- (bindings/lua/tv_v2_meta.lua, tv_v2_mix.lua, tv_v2_misc.lua), against values worked out by hand.
local T = ...
local torch = require "torch"
local nn = torch.nn
local tv = require "torchvision"
local tvt, v2 = tv.tv_tensors, tv.transforms.v2
local F = v2.functional
local PIL = require("tv_io").Image

local function L(t) return t:cpu():tolist() end
local function EQ(got, want, msg) return T.near(got, want, 0, msg) end

local function run(dev)
  local function f32(v) return torch.tensor(v, {dtype = torch.float32, device = dev}) end
  local function i64(v) return torch.tensor(v, {dtype = torch.int64, device = dev}) end
  local function tag(s) return dev .. ": " .. s end
  local function boxes(v, fmt, size, extra)
    local o = {format = fmt, canvas_size = size, device = dev}
    for k, x in pairs(extra or {}) do o[k] = x end
    return tvt.BoundingBoxes(v, o)
  end

  T.test(tag("convert_bounding_box_format"), function()
    local b = boxes({{10, 20, 30, 40}}, "XYWH", {100, 200})
    local xyxy = F.convert_bounding_box_format(b, {new_format = "xyxy"})
    EQ(L(xyxy), {{10, 20, 40, 60}}, tag("XYWH -> XYXY"))
    T.check(nn.isinstance(xyxy, tvt.BoundingBoxes) and xyxy.format == "XYXY", tag("still boxes, in the new format"))
    T.eq(xyxy.canvas_size, {100, 200})
    EQ(L(F.convert_bounding_box_format(b, {new_format = "CXCYWH"})), {{25, 40, 30, 40}}, tag("XYWH -> CXCYWH"))
    local p = f32({{1, 2, 5, 8}})
    EQ(L(F.convert_bounding_box_format(p, "XYXY", "XYWH")), {{1, 2, 4, 6}}, tag("a pure tensor with old_format"))
    EQ(L(p), {{1, 2, 5, 8}}, tag("not in place by default"))
    F.convert_bounding_box_format(p, "XYXY", "XYWH", true)
    EQ(L(p), {{1, 2, 4, 6}}, tag("inplace=true"))
    local t = v2.ConvertBoundingBoxFormat("CXCYWH")
    local img = tvt.Image(torch.zeros(3, 4, 4, {device = dev}))
    local oi, ob = t(img, b)
    T.check(rawequal(oi, img), tag("images pass through"))
    EQ(L(ob), {{25, 40, 30, 40}})
    T.eq(ob.format, "CXCYWH")
    T.raises(function() F.convert_bounding_box_format(p, {new_format = "XYXY"}) end,
      "For pure tensor inputs, `old_format` has to be passed.")
    T.raises(function() F.convert_bounding_box_format(b, "XYWH", "XYXY") end,
      "For bounding box tv_tensor inputs, `old_format` must not be passed.")
    T.raises(function() F.convert_bounding_box_format(b) end, "~missing 1 required argument: 'new_format'")
    T.raises(function() F.convert_bounding_box_format({1, 2, 3, 4}, "XYXY", "XYWH") end, "~plain tensor or a bounding box")
    T.raises(function() v2.ConvertBoundingBoxFormat("XYZ") end, "~unknown bounding box format")
  end)

  T.test(tag("clamp_bounding_boxes, clamp_keypoints, SetClampingMode"), function()
    -- canvas 10 high, 20 wide: x into [0, 20], y into [0, 10]
    local b = boxes({{-5, 2, 30, 12}}, "XYXY", {10, 20})
    EQ(L(F.clamp_bounding_boxes(b)), {{0, 2, 20, 10}}, tag("XYXY clamped"))
    -- XYWH (-5, 2, 30, 12) is XYXY (-5, 2, 25, 14) -> (0, 2, 20, 10) -> XYWH (0, 2, 20, 8)
    local w = boxes({{-5, 2, 30, 12}}, "XYWH", {10, 20})
    EQ(L(F.clamp_bounding_boxes(w)), {{0, 2, 20, 8}}, tag("XYWH clamped through XYXY"))
    EQ(L(F.clamp_bounding_boxes(f32({{-5, 2, 30, 12}}), "XYXY", {10, 20}, "soft")), {{0, 2, 20, 10}}, tag("pure tensor"))
    EQ(L(F.clamp_bounding_boxes(b, {clamping_mode = false})), {{-5, 2, 30, 12}}, tag("None: not clamped"))
    local none = v2.SetClampingMode(false)(b)
    T.eq(none.clamping_mode, false)
    EQ(L(v2.ClampBoundingBoxes()(none)), {{-5, 2, 30, 12}}, tag("auto takes the boxes' mode (None)"))
    EQ(L(v2.ClampBoundingBoxes("hard")(none)), {{0, 2, 20, 10}}, tag("an explicit mode wins"))
    T.eq(b.clamping_mode, "soft", "SetClampingMode changes a clone")
    T.raises(function() F.clamp_bounding_boxes(f32({{0, 0, 1, 1}}), "XYXY", {4, 4}) end,
      "For pure tensor inputs, `format`, `canvas_size` and `clamping_mode` have to be passed.")
    T.raises(function() F.clamp_bounding_boxes(b, "XYXY") end, "~must not be passed")
    T.raises(function() F.clamp_bounding_boxes(b, {clamping_mode = "medium"}) end,
      "clamping_mode must be soft, hard, auto or None, got medium")
    T.raises(function() v2.SetClampingMode("auto") end, "clamping_mode must be soft, hard or None, got auto")

    -- keypoints: x into [0, W - 1], y into [0, H - 1]
    local kp = tvt.KeyPoints({{-1, 3}, {25, 12}, {4.5, 9}}, {canvas_size = {10, 20}, device = dev})
    local c = F.clamp_keypoints(kp)
    EQ(L(c), {{0, 3}, {19, 9}, {4.5, 9}}, tag("keypoints clamped"))
    T.check(nn.isinstance(c, tvt.KeyPoints))
    EQ(L(v2.ClampKeyPoints()(kp)), {{0, 3}, {19, 9}, {4.5, 9}}, tag("ClampKeyPoints"))
    EQ(L(F.clamp_keypoints(f32({{-1, 30}}), {10, 20})), {{0, 9}}, tag("pure keypoints"))
    T.raises(function() F.clamp_keypoints(f32({{1, 1}})) end, "For pure tensor inputs, `canvas_size` has to be passed.")
    T.raises(function() F.clamp_keypoints(kp, {10, 20}) end, "For keypoints tv_tensor inputs, `canvas_size` must not be passed.")
  end)

  -- canvas 10 x 10: kept are 1, 3 and 6 (w = h = 1, area 1); 2 is too thin, 4 starts left of
  -- the canvas, 5 ends right of it
  local box_rows = {{0, 0, 5, 5}, {2, 2, 2.5, 8}, {1, 1, 3, 3}, {-1, 0, 3, 3}, {5, 5, 11, 8}, {0, 0, 1, 1}}

  T.test(tag("sanitize_bounding_boxes"), function()
    local b = boxes(box_rows, "XYXY", {10, 10}, {dtype = torch.float32})
    local kept, valid = F.sanitize_bounding_boxes(b)
    EQ(L(valid), {true, false, true, false, false, true}, tag("valid boxes"))
    EQ(L(kept), {{0, 0, 5, 5}, {1, 1, 3, 3}, {0, 0, 1, 1}})
    T.check(nn.isinstance(kept, tvt.BoundingBoxes) and kept.format == "XYXY", tag("kept boxes stay boxes"))
    local _, v2_ = F.sanitize_bounding_boxes(b, {min_area = 2})
    EQ(L(v2_), {true, false, true, false, false, false}, tag("min_area=2 drops the 1 x 1 box"))
    local _, v3 = F.sanitize_bounding_boxes(b, {min_size = 3})
    EQ(L(v3), {true, false, false, false, false, false}, tag("min_size=3"))
    -- XYWH: (1, 1, 0, 5) has no width; (8, 8, 2, 2) ends on the edge (kept); (8, 8, 3, 1) leaves it
    local pk, pv = F.sanitize_bounding_boxes(i64({{1, 1, 0, 5}, {8, 8, 2, 2}, {8, 8, 3, 1}}), "xywh", {10, 10})
    EQ(L(pv), {false, true, false}, tag("pure XYWH tensor"))
    EQ(L(pk), {{8, 8, 2, 2}})
    T.raises(function() F.sanitize_bounding_boxes(i64({{0, 0, 1, 1}})) end, "~format and canvas_size cannot be None")
    T.raises(function() F.sanitize_bounding_boxes(b, {canvas_size = {10, 10}}) end, "~must be None when bounding_boxes")
    T.raises(function() F.sanitize_bounding_boxes({{0, 0, 1, 1}}, "XYXY", {4, 4}) end,
      "bounding_boxes must be a tv_tensors.BoundingBoxes instance or a pure tensor.")
  end)

  T.test(tag("SanitizeBoundingBoxes removes boxes with their labels and masks"), function()
    local b = boxes(box_rows, "XYXY", {10, 10}, {dtype = torch.float32})
    local masks = tvt.Mask(torch.arange(6, {device = dev}):view(6, 1, 1):expand(6, 10, 10):contiguous())
    local labels = i64({10, 11, 12, 13, 14, 15})
    local img = tvt.Image(torch.zeros(3, 10, 10, {device = dev}))
    local oi, target = v2.SanitizeBoundingBoxes()(img, {boxes = b, labels = labels, masks = masks, other = i64({7})})
    T.check(rawequal(oi, img), tag("the image passes through"))
    EQ(L(target.labels), {10, 12, 15}, tag("labels of the kept boxes"))
    EQ(L(target.boxes), {{0, 0, 5, 5}, {1, 1, 3, 3}, {0, 0, 1, 1}})
    EQ(L(target.masks:select(1, 0):select(1, 0)), {0, 2, 5}, tag("masks of the kept boxes"))
    T.check(nn.isinstance(target.masks, tvt.Mask) and nn.isinstance(target.boxes, tvt.BoundingBoxes))
    EQ(L(target.other), {7}, tag("other entries untouched"))
    -- a dict sample, a "Labels" key (case-insensitive)
    local d = v2.SanitizeBoundingBoxes()({image = img, boxes = b, Labels = labels})
    EQ(L(d.Labels), {10, 12, 15}, tag("dict sample"))
    -- labels_getter=None (false): only boxes and masks
    local n = v2.SanitizeBoundingBoxes({labels_getter = false})({boxes = b, labels = labels})
    EQ(L(n.labels), {10, 11, 12, 13, 14, 15}, tag("no labels_getter"))
    T.eq(n.boxes:size(0), 3)
    -- a getter returning several tensors sanitizes each
    local scores = f32({0.1, 0.2, 0.3, 0.4, 0.5, 0.6})
    local s = v2.SanitizeBoundingBoxes({labels_getter = function(inp) return {inp.labels, inp.scores} end})(
      {boxes = b, labels = labels, scores = scores})
    EQ(L(s.labels), {10, 12, 15})
    T.near(L(s.scores), {0.1, 0.3, 0.6}, 1e-6, tag("a second label tensor"))
    T.raises(function() v2.SanitizeBoundingBoxes()({boxes = b, labels = i64({1, 2})}) end, "~Number of boxes")
    T.raises(function() v2.SanitizeBoundingBoxes()({boxes = b, stuff = labels}) end, "~Could not infer where the labels are")
    T.raises(function() v2.SanitizeBoundingBoxes()({image = img, labels = labels}) end, "No bounding boxes were found in the sample")
    T.raises(function() v2.SanitizeBoundingBoxes(0.5) end, "min_size must be >= 1, got 0.5.")
    T.raises(function() v2.SanitizeBoundingBoxes({min_area = 0}) end, "min_area must be >= 1, got 0.")
    T.raises(function() v2.SanitizeBoundingBoxes({labels_getter = 3}) end, "~labels_getter should either be 'default'")
    T.raises(function() v2.SanitizeBoundingBoxes({min_sise = 2}) end, "~unknown keyword 'min_sise'")
  end)

  T.test(tag("sanitize_keypoints, SanitizeKeyPoints"), function()
    -- canvas 4 high, 6 wide: kept are 0 <= x < 6 and 0 <= y < 4
    local kp, valid = F.sanitize_keypoints(f32({{1, 1}, {-1, 2}, {5, 3.5}, {6, 0}, {2, 4}}), {4, 6})
    EQ(L(valid), {true, false, true, false, false}, tag("points inside the canvas"))
    EQ(L(kp), {{1, 1}, {5, 3.5}})
    -- groups of points ([N, P, 2]): a group goes when any of its points is outside
    local g = tvt.KeyPoints({{{0, 0}, {1, 1}}, {{2, 2}, {9, 1}}, {{5, 3}, {0, 3}}}, {canvas_size = {4, 6}, device = dev})
    local gk, gv = F.sanitize_keypoints(g)
    EQ(L(gv), {true, false, true}, tag("groups"))
    T.check(nn.isinstance(gk, tvt.KeyPoints) and gk:size(0) == 2)
    local out = v2.SanitizeKeyPoints({labels_getter = "default"})({points = g, labels = i64({1, 2, 3})})
    EQ(L(out.labels), {1, 3}, tag("labels of the kept groups"))
    EQ(L(out.points), {{{0, 0}, {1, 1}}, {{5, 3}, {0, 3}}})
    local plain = v2.SanitizeKeyPoints()({points = g, labels = i64({1, 2, 3})})
    EQ(L(plain.labels), {1, 2, 3}, tag("labels_getter None by default"))
    T.raises(function() F.sanitize_keypoints(f32({{1, 1}})) end, "~canvas_size cannot be None")
    T.raises(function() F.sanitize_keypoints(g, {4, 6}) end, "~canvas_size must be None")
  end)

  T.test(tag("MixUp: images and labels the same convex combination"), function()
    torch.manual_seed(3)
    local x = torch.rand(4, 3, 5, 6, {device = dev})
    local labels = i64({2, 0, 1, 2})
    local oi, ol = v2.MixUp({num_classes = 3})(x, labels)
    local lam = ol[1][0]:item() -- sample 1: lam on its class 0, 1 - lam on class 2 (sample 0's)
    T.near(ol[1][2]:item(), 1 - lam, 1e-6, tag("the label before gets 1 - lam"))
    T.near(L(ol:sum(1)), {1, 1, 1, 1}, 1e-6, tag("rows sum to one"))
    T.near(L(oi), L(x * lam + x:roll(1, 0) * (1 - lam)), 1e-5, tag("images mixed with the same lam"))
    T.eq(ol.dtype, torch.float32)
    -- probability labels (2-D) are mixed as they are
    local probs = f32({{0.5, 0.5}, {1, 0}, {0, 1}, {0.25, 0.75}})
    local img = tvt.Image(x)
    local mi, ml = v2.MixUp()(img, probs)
    T.check(nn.isinstance(mi, tvt.Image), tag("an Image stays an Image"))
    local lam2 = (mi[1][0][0][0]:item() - x[0][0][0][0]:item()) / (x[1][0][0][0]:item() - x[0][0][0][0]:item())
    T.near(L(ml), L(probs * lam2 + probs:roll(1, 0) * (1 - lam2)), 1e-4, tag("2-D labels"))
    -- lam ~ Beta(alpha, alpha): mean 1/2; with alpha = 0.2 mostly near 0 or 1
    local m, far = 0, 0
    local mix = v2.MixUp({alpha = 0.2, num_classes = 2})
    for _ = 1, 200 do
      local _, l = mix(torch.zeros(2, 1, 1, 1, {device = dev}), i64({0, 1}))
      local v = l[0][0]:item()
      m = m + v / 200
      if v < 0.1 or v > 0.9 then far = far + 1 end
    end
    T.near(m, 0.5, 0.1, tag("mean of lam"))
    T.check(far > 100, tag("alpha=0.2 puts lam near 0 or 1 mostly, got " .. far))
    T.raises(function() v2.MixUp()(x, labels) end, "num_classes must be passed if the labels are index-based (1D)")
    T.raises(function() v2.MixUp({num_classes = 3})(x[0], labels) end, "Expected a batched input with 4 dims, but got 3 dimensions instead.")
    T.raises(function() v2.MixUp({num_classes = 3})(x, i64({1, 2})) end, "~does not match the batch size of the labels: 4 != 2.")
    T.raises(function() v2.MixUp({num_classes = 5})(x, f32({{1, 0}})) end, "~must match num_classes: 2 != 5")
    T.raises(function() v2.MixUp({num_classes = 3, labels_getter = function() return {1, 2} end})(x, labels) end,
      "~The labels must be a tensor")
    T.raises(function() v2.MixUp({num_classes = 3})(x, labels, tvt.Mask(torch.zeros(4, 5, 6))) end,
      "MixUp() does not support PIL images, bounding boxes and masks.")
    T.raises(function() v2.MixUp({alpha = 0}) end, "~alpha must be a positive number")
  end)

  T.test(tag("CutMix: the pasted box's area is 1 - lambda on the labels"), function()
    torch.manual_seed(5)
    local h, w = 12, 16
    for trial = 1, 8 do
      local x = torch.rand(3, 2, h, w, {device = dev})
      local labels = i64({0, 1, 2})
      local oi, ol = v2.CutMix({num_classes = 3})(x, labels)
      local lam = ol[1][1]:item()
      T.near(ol[1][0]:item(), 1 - lam, 1e-6)
      local from_prev = oi:eq(x:roll(1, 0)):logical_and(oi:ne(x))
      local area = from_prev[0][0]:sum():item()
      T.near(area / (h * w), 1 - lam, 1e-6, tag("pasted share == 1 - lam, trial " .. trial))
      T.check(oi:eq(x):logical_or(oi:eq(x:roll(1, 0))):all():item(), tag("every pixel from the image or the one before"))
      T.check(from_prev:eq(from_prev[0][0]):all():item(), tag("the same box for every image and channel"))
      if area > 0 then
        -- the pasted pixels form a rectangle: rows x columns touched == area
        local rows = from_prev[0][0]:any(1):sum():item()
        local cols = from_prev[0][0]:any(0):sum():item()
        T.eq(rows * cols, area, tag("a rectangle"))
      end
    end
    local vid = tvt.Video(torch.rand(2, 3, 1, 4, 4, {device = dev}))
    local ov = v2.CutMix({num_classes = 2})(vid, i64({0, 1}))
    T.check(nn.isinstance(ov, tvt.Video) and ov:dim() == 5, tag("videos"))
    T.raises(function() v2.CutMix({num_classes = 2})(tvt.Video(torch.rand(2, 1, 4, 4)), i64({0, 1})) end,
      "Expected a batched input with 5 dims, but got 4 dimensions instead.")
  end)

  -- a smooth 3 x 32 x 32 uint8 image (JPEG keeps it well)
  local yy, xx = torch.meshgrid(torch.arange(32, {device = dev}), torch.arange(32, {device = dev}), {indexing = "ij"})
  local smooth = torch.stack({xx * 6, yy * 6, (xx + yy) * 3}, 0):to(torch.uint8)

  T.test(tag("jpeg, JPEG"), function()
    local function err(q) return (F.jpeg(smooth, q):float() - smooth:float()):abs():mean():item() end
    local out = F.jpeg(smooth, 90)
    T.eq(out.dtype, torch.uint8)
    T.eq(out.shape, smooth.shape)
    T.eq(out.device.type, smooth.device.type, tag("on the input's device"))
    local e100, e10 = err(100), err(10)
    T.check(e100 < 1.5, tag("quality 100 is close: " .. e100))
    T.check(e100 < e10, tag("quality 100 closer than 10: " .. e100 .. " vs " .. e10))
    local batch = torch.stack({smooth, smooth:flip(-1)}, 0)
    local ob = F.jpeg(batch, 75)
    T.eq(ob.shape, batch.shape)
    EQ(L(ob[0]), L(F.jpeg(smooth, 75)), tag("batched like one by one"))
    EQ(L(F.jpeg(smooth, {quality = 60})), L(F.jpeg(smooth, 60)), tag("quality as a keyword"))
    EQ(L(F.jpeg_image(smooth, 60)), L(F.jpeg(smooth, 60)), tag("the kernel jpeg_image"))
    local gray = smooth:narrow(0, 0, 1)
    T.eq(F.jpeg(gray, 50).shape, gray.shape, tag("one channel"))
    local img = tvt.Image(smooth)
    T.check(nn.isinstance(v2.JPEG(95)(img), tvt.Image), tag("JPEG keeps an Image"))
    local pil = PIL._wrap(smooth:cpu():permute(1, 2, 0):contiguous())
    local op = F.jpeg(pil, 95)
    T.check(PIL.isImageType(op) and op.mode == "RGB", tag("PIL in, PIL out"))
    local m = tvt.Mask(torch.zeros(3, 32, 32, {dtype = torch.uint8, device = dev}))
    local _, om = v2.JPEG({5, 50})(img, m)
    T.check(rawequal(om, m), tag("masks pass through"))
    T.raises(function() F.jpeg(smooth:float(), 50) end, "~Input tensor dtype should be uint8")
    T.raises(function() F.jpeg(smooth, 0) end, "quality must be an integer from 1 to 100, got quality=0")
    T.raises(function() F.jpeg(torch.zeros(2, 4, 4, {dtype = torch.uint8}), 50) end, "~1 or 3")
    T.raises(function() v2.JPEG(101) end, "quality must be an integer from 1 to 100, got quality =(101, 101)")
    T.raises(function() v2.JPEG({50, 10}) end, "~quality must be an integer from 1 to 100")
    T.raises(function() v2.JPEG({1, 2, 3}) end, "~quality should be a sequence of length 2")
  end)

  T.test(tag("gaussian_noise, GaussianNoise"), function()
    torch.manual_seed(11)
    local z = torch.zeros(200000, {device = dev}):view(2, 100, 1000)
    local n = F.gaussian_noise(z, 0.2, 0.5, false)
    T.near(n:mean():item(), 0.2, 0.01, tag("noise mean"))
    T.near(n:std():item(), 0.5, 0.01, tag("noise std"))
    local c = F.gaussian_noise(z + 0.5, {sigma = 1.0})
    T.check(c:min():item() >= 0 and c:max():item() <= 1, tag("clipped to [0, 1]"))
    T.check(c:eq(0):any():item() and c:eq(1):any():item(), tag("clipping hits both ends"))
    local vid = tvt.Video(torch.rand(2, 3, 4, 4, {device = dev}))
    T.check(nn.isinstance(v2.GaussianNoise()(vid), tvt.Video), tag("Video kept"))
    T.raises(function() F.gaussian_noise(torch.zeros(3, 2, 2, {dtype = torch.uint8})) end,
      "Input tensor is expected to be in float dtype, got dtype=torch.uint8")
    T.raises(function() F.gaussian_noise(z, 0, -1) end, "sigma shouldn't be negative. Got -1")
    T.raises(function() F.gaussian_noise(PIL._wrap(smooth:cpu():permute(1, 2, 0):contiguous())) end,
      "Gaussian Noise is not implemented for PIL images.")
  end)

  T.test(tag("permute_channels, RandomChannelPermutation, grayscale_to_rgb, RGB"), function()
    local img = torch.arange(3, {device = dev}):view(3, 1, 1):expand(3, 2, 2):contiguous()
    EQ(L(F.permute_channels(img, {2, 0, 1}):select(-1, 0):select(-1, 0)), {2, 0, 1}, tag("channel i is input channel perm[i]"))
    local batch = torch.stack({img, img + 10}, 0)
    EQ(L(F.permute_channels(batch, torch.tensor({1, 2, 0}))[1]:select(-1, 0):select(-1, 0)), {11, 12, 10}, tag("batched"))
    local pil = PIL._wrap(smooth:cpu():permute(1, 2, 0):contiguous())
    local pp = F.permute_channels(pil, {2, 1, 0})
    EQ(L(pp._data:select(2, 0)), L(smooth:cpu()[2]), tag("PIL channels"))
    T.raises(function() F.permute_channels(img, {0, 1}) end, "Length of permutation does not match number of channels: 2 != 3")
    torch.manual_seed(2)
    for _ = 1, 5 do
      local out = v2.RandomChannelPermutation()(tvt.Image(img))
      local got = L(out:select(-1, 0):select(-1, 0))
      table.sort(got)
      EQ(got, {0, 1, 2}, tag("a permutation of the channels"))
    end
    local g = torch.rand(1, 3, 3, {device = dev})
    local rgb = F.grayscale_to_rgb(g)
    T.eq(rgb.shape, torch.Size({3, 3, 3}))
    EQ(L(rgb[2]), L(g[0]), tag("gray repeated"))
    T.check(rawequal(F.grayscale_to_rgb(img), img), tag("three channels as they are"))
    T.check(nn.isinstance(v2.RGB()(tvt.Image(g)), tvt.Image))
    T.eq(v2.RGB()(tvt.Image(g)):size(0), 3)
    local lpil = PIL._wrap(smooth:cpu()[0]:unsqueeze(2):contiguous())
    T.eq(F.grayscale_to_rgb(lpil).mode, "RGB", tag("PIL L -> RGB"))
    T.raises(function() F.grayscale_to_rgb(torch.zeros(2, 3, 3)) end, "~1 or 3 channels, got 2")
  end)

  T.test(tag("RandomPhotometricDistort"), function()
    local x = torch.rand(3, 4, 4, {device = dev}) * 0.4
    EQ(L(v2.RandomPhotometricDistort({p = 0})(x)), L(x), tag("p=0: unchanged"))
    -- brightness fixed at 2, the others neutral: the output is 2x with its channels permuted
    local t = v2.RandomPhotometricDistort({2, 2}, {1, 1}, {1, 1}, {0, 0}, 1.0)
    local out = t(x)
    local want = {}
    for c = 0, 2 do want[c + 1] = (x[c] * 2):sum():item() end
    local got = {}
    for c = 0, 2 do got[c + 1] = out[c]:sum():item() end
    table.sort(want)
    table.sort(got)
    T.near(got, want, 1e-4, tag("brightness then a channel permutation"))
    T.raises(function() v2.RandomPhotometricDistort({brightness = 2}) end, "~brightness should be a pair")
    T.raises(function() v2.RandomPhotometricDistort({p = 2}) end, "~p should be a probability")
  end)

  T.test(tag("uniform_temporal_subsample, UniformTemporalSubsample"), function()
    local v = torch.arange(10, {device = dev}):view(10, 1, 1, 1):expand(10, 1, 2, 2):contiguous()
    EQ(L(F.uniform_temporal_subsample(v, 4):view(4, -1):select(1, 0)), {0, 3, 6, 9}, tag("linspace(0, 9, 4)"))
    local v5 = v:narrow(0, 0, 5)
    EQ(L(F.uniform_temporal_subsample(v5, 3):view(3, -1):select(1, 0)), {0, 2, 4}, tag("linspace(0, 4, 3)"))
    -- linspace(0, 4, 4) = 0, 1.33, 2.67, 4 -> 0, 1, 2, 4
    EQ(L(F.uniform_temporal_subsample(v5, 4):view(4, -1):select(1, 0)), {0, 1, 2, 4}, tag("rounded down"))
    local vid = tvt.Video(v)
    local o = v2.UniformTemporalSubsample(2)(vid)
    T.check(nn.isinstance(o, tvt.Video) and o:size(0) == 2, tag("a Video stays a Video"))
    local batched = v:unsqueeze(0):expand(2, 10, 1, 2, 2)
    T.eq(F.uniform_temporal_subsample(batched, 3).shape, torch.Size({2, 3, 1, 2, 2}), tag("leading batch dim"))
    T.raises(function() F.uniform_temporal_subsample(tvt.Image(torch.zeros(1, 2, 2)), 2) end, "~supports inputs of type")
    T.raises(function() F.uniform_temporal_subsample(v, 1.5) end, "~num_samples must be a non-negative integer")
  end)
end

local before = T.passed + T.failed
run("cpu")

if torch.cuda.is_available() then
  run("cuda")
else
  T.skip("no CUDA: the cuda run of every check", T.passed + T.failed - before)
end
