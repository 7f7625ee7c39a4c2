-- tv_tensors and the transforms.v2 machinery: tensor attributes, the tv_tensor classes and what
-- keeps them, tree flattening, which inputs a transform touches, the kernel registry, the
-- image-only transforms on whole samples, the containers and conversions.
local T = ...
local torch = require "torch"
local nn = torch.nn
local tv = require "torchvision"
local tvt, v2 = tv.tv_tensors, tv.transforms.v2
local F = v2.functional

T.test("tensor attributes live with their Lua value", function()
  local x = torch.zeros(2)
  x.note = "hello"
  T.eq(x.note, "hello")
  T.eq((x + 1).note, nil, "an op's result is a new tensor without it")
  x.note = nil
  T.eq(x.note, nil)
  T.raises(function() x.add = 1 end, "~cannot set field 'add'")
  T.raises(function() x.shape = 1 end, "~cannot set field 'shape'")
  x[":1"] = 5
  T.eq(x[0]:item(), 5.0, "a string subscript is still an assignment")
end)

T.test("tv_tensors classes, metadata and isinstance", function()
  local data = torch.arange(12):view(3, 4)
  local img = tvt.Image(torch.zeros(5, 6))
  T.eq(img.shape, torch.Size({1, 5, 6}), "a 2-D image gets a channel dim")
  T.check(nn.isinstance(img, tvt.Image) and nn.isinstance(img, tvt.TVTensor) and not nn.isinstance(img, tvt.Mask))
  T.check(torch.is_tensor(img))
  local m = tvt.Mask(data)
  m[{0, 0}] = 7
  T.eq(data[0][0]:item(), 7, "a tv_tensor shares its data's storage")
  T.check(tvt.is_pure_tensor(data) and not tvt.is_pure_tensor(m), "the data itself stays a pure tensor")
  local b = tvt.BoundingBoxes({1, 2, 3, 4}, {format = "xywh", canvas_size = {10, 20}})
  T.eq(b.shape, torch.Size({1, 4}))
  T.eq(b.format, tvt.BoundingBoxFormat.XYWH)
  T.eq(b.canvas_size, {10, 20})
  T.eq(b.clamping_mode, "soft")
  T.eq(b.dtype, torch.int64)
  T.raises(function() tvt.BoundingBoxes({1, 2, 3, 4}, {format = "XYZ", canvas_size = {1, 1}}) end, "~unknown bounding box format")
  T.raises(function() tvt.BoundingBoxes({1, 2, 3}, {format = "XYXY", canvas_size = {1, 1}}) end, "~4 coordinates")
  T.raises(function() tvt.BoundingBoxes({1, 2, 3, 4}, {format = "XYXY"}) end, "~canvas_size")
  T.raises(function() tvt.BoundingBoxes({1, 2, 3, 4, 5}, {format = "XYWHR", canvas_size = {4, 4}}) end, "~floating point")
  T.raises(function() tvt.Video(torch.zeros(3, 4, 4)) end, "~at least 4 dimensions")
  local k = tvt.KeyPoints({{1, 2}, {3, 4}}, {canvas_size = {5, 5}})
  T.eq(k.canvas_size, {5, 5})
  T.raises(function() tvt.KeyPoints({1, 2, 3}, {canvas_size = {5, 5}}) end, "~[..., 2]")
  T.eq(tvt.Image(torch.zeros(3, 2, 2), {dtype = torch.float64}).dtype, torch.float64)
end)

T.test("clone, to, detach keep the kind; other ops give pure tensors; wrap", function()
  local b = tvt.BoundingBoxes({{1, 2, 3, 4}}, {format = "XYXY", canvas_size = {10, 20}})
  for _, c in ipairs({b:clone(), b:to(torch.float32), b:detach()}) do
    T.check(nn.isinstance(c, tvt.BoundingBoxes))
    T.eq(c.canvas_size, {10, 20})
  end
  T.check(tvt.is_pure_tensor(b + 1) and tvt.is_pure_tensor(b[0]))
  local w = tvt.wrap(b * 2, {like = b, canvas_size = {20, 40}})
  T.check(nn.isinstance(w, tvt.BoundingBoxes))
  T.eq(w.canvas_size, {20, 40})
  T.eq(w.format, "XYXY")
  T.eq(w:tolist(), {{2, 4, 6, 8}})
  T.raises(function() tvt.wrap(b, {like = torch.zeros(1)}) end, "~like must be a tv_tensor")
  T.eq(tvt.wrap(b * 1, {like = b, clamping_mode = false}).clamping_mode, false, "false is None")
  local none = tvt.BoundingBoxes({{1, 2, 3, 4}}, {format = "XYXY", canvas_size = {10, 20}, clamping_mode = false})
  T.eq(tvt.wrap(none * 1, {like = none}).clamping_mode, false, "None kept")
  T.check(tostring(none):find("clamping_mode=None", 1, true) ~= nil)
end)

T.test("tv_tensors print as torchvision's", function()
  T.eq(tostring(tvt.Image(torch.arange(4, {dtype = torch.uint8}):view(1, 2, 2))),
    "Image([[[0, 1],\n        [2, 3]]], dtype=torch.uint8, )")
  T.eq(tostring(tvt.Mask(torch.zeros(2))), "Mask([0., 0.], )")
  T.eq(tostring(tvt.BoundingBoxes({{17, 16, 344, 495}, {0, 10, 0, 10}}, {format = "XYXY", canvas_size = {512, 512}})),
    "BoundingBoxes([[ 17,  16, 344, 495],\n               [  0,  10,   0,  10]], format=BoundingBoxFormat.XYXY, " ..
    "canvas_size=(512, 512), clamping_mode=soft)")
  T.eq(tostring(tvt.KeyPoints({{1.5, 2}}, {canvas_size = {5, 5}})), "KeyPoints([[1.5000, 2.0000]], canvas_size=(5, 5))")
  T.eq(tostring(torch.zeros(1)), "tensor([0.])", "pure tensors as before")
  do local _ <close> = tvt.set_return_type("Tensor") end
  T.raises(function() tvt.set_return_type("TVTensor") end, "~not supported")
end)

T.test("tree_flatten and tree_unflatten", function()
  local core = require "tv_v2_core"
  local x, y = torch.zeros(1), torch.ones(1)
  local tree = {x, {a = y, b = {1, 2}}, "s"}
  local leaves, spec = core.tree_flatten(tree)
  T.eq(#leaves, 5)
  T.check(leaves[1] == x and leaves[2] == y and leaves[3] == 1 and leaves[5] == "s")
  leaves[3] = 10
  local back = core.tree_unflatten(leaves, spec)
  T.eq(back[2].b[1], 10)
  T.check(back[2].a == y and back[3] == "s")
  T.check(back ~= tree, "a new nesting")
end)

T.test("which inputs a transform touches", function()
  local Zero = v2.Transform:extend("Zero")
  function Zero:transform(inpt) return inpt * 0 end
  local a, b = Zero()(torch.ones(2), torch.ones(2))
  T.eq(a:sum():item(), 0.0, "the first pure tensor is the image")
  T.eq(b:sum():item(), 2.0, "the others pass through")
  local img = tvt.Image(torch.ones(1, 2, 2))
  local out = Zero()({torch.ones(2), img, 3})
  T.eq(out[1]:sum():item(), 2.0, "no pure tensor is the image when an Image is there")
  T.eq(out[2]:sum():item(), 0.0)
  T.eq(out[3], 3)
  local params_seen
  local P = v2.Transform:extend("P")
  function P:make_params(flat) params_seen = #flat; return {k = 5} end
  function P:transform(inpt, params) return params.k end
  local r = P()({img, "label", tvt.Mask(torch.zeros(2, 2))})
  T.eq(params_seen, 2, "make_params sees the inputs to transform")
  T.eq(r[1], 5)
  T.eq(r[2], "label")
  T.eq(r[3], 5)
end)

T.test("query_size, query_chw, has_any, get_bounding_boxes", function()
  local img = tvt.Image(torch.zeros(3, 8, 10))
  local b = tvt.BoundingBoxes({{0, 0, 1, 1}}, {format = "XYXY", canvas_size = {8, 10}})
  T.eq({v2.query_size({img, b, "x"})}, {8, 10})
  T.eq({v2.query_chw({img, b})}, {3, 8, 10})
  T.raises(function() v2.query_size({img, tvt.Mask(torch.zeros(4, 4))}) end, "~Found multiple HxW dimensions")
  T.raises(function() v2.query_size({"x", 1}) end, "~No image, video, mask, bounding box or keypoint")
  T.check(v2.has_any({img, b}, tvt.BoundingBoxes) and not v2.has_any({img}, tvt.Mask))
  T.check(v2.has_all({img, b}, tvt.Image, tvt.BoundingBoxes) and not v2.has_all({img}, tvt.Image, tvt.Mask))
  T.check(v2.get_bounding_boxes({img, b}) == b)
  T.raises(function() v2.get_bounding_boxes({img}) end, "~No bounding boxes")
  T.check(v2.check_type(img, {torch.Tensor}) and v2.check_type(b, {tvt.TVTensor}) and not v2.check_type("s", {torch.Tensor}))
end)

T.test("functionals dispatch; register_kernel for your own tv_tensor", function()
  local img = tvt.Image(torch.full({3, 2, 2}, 0.25))
  local out = F.adjust_brightness(img, 2.0)
  T.check(nn.isinstance(out, tvt.Image), "an Image's output is an Image")
  T.near(out:max():item(), 0.5, 1e-7)
  T.check(tvt.is_pure_tensor(F.adjust_brightness(torch.full({3, 2, 2}, 0.25), 2.0)))
  T.raises(function() F.adjust_brightness(tvt.Mask(torch.zeros(2, 2)), 2.0) end, "~supports inputs of type")
  local m = F.to_dtype(tvt.Mask(torch.ones(2, 2, {dtype = torch.uint8})), torch.float32, true)
  T.eq(m:max():item(), 1.0, "masks are cast, not scaled")
  T.check(nn.isinstance(m, tvt.Mask))
  T.eq(F.to_dtype(tvt.Image(torch.full({1, 1, 1}, 255, {dtype = torch.uint8})), torch.float32, true):item(), 1.0)
  local My = setmetatable({__name = "My", __parent = tvt.TVTensor}, {})
  local called
  F.register_kernel(F.adjust_brightness, My)(function(inpt, f) called = f; return inpt end)
  local core = require "tv_v2_core"
  T.eq(core.get_kernel(F.adjust_brightness, My, false)("x", 3), "x")
  T.eq(called, 3)
  T.raises(function() F.register_kernel(F.adjust_brightness, My, function() end) end, "~already has a kernel")
  T.raises(function() F.register_kernel(F.adjust_brightness, tvt.Image, function() end) end, "~builtin")
end)

T.test("image-only transforms on a sample: same draws for every image, the rest untouched", function()
  torch.manual_seed(3)
  local img = tvt.Image(torch.rand(3, 6, 6))
  local vid = tvt.Video(img:unsqueeze(0):clone())
  local b = tvt.BoundingBoxes({{0, 0, 2, 2}}, {format = "XYXY", canvas_size = {6, 6}})
  local t = v2.ColorJitter({brightness = 0.5, contrast = 0.5, saturation = 0.5, hue = 0.2})
  local o = t({image = img, video = vid, boxes = b, label = 4})
  T.check(nn.isinstance(o.image, tvt.Image) and nn.isinstance(o.video, tvt.Video))
  T.near((o.video[0] - o.image):abs():max():item(), 0, 1e-6, "the video got the image's jitter")
  T.check((o.image - img):abs():max():item() > 1e-3, "it changed")
  T.check(o.boxes == b and o.label == 4)
  local n = v2.Normalize({0.5, 0.5, 0.5}, {0.25, 0.25, 0.25})
  T.near((n(img) - (img - 0.5) / 0.25):abs():max():item(), 0, 1e-6)
  T.raises(function() v2.AutoAugment()(tvt.Image(torch.zeros(3, 4, 4, {dtype = torch.uint8})), b) end, "~does not support bounding boxes")
end)

T.test("containers pass several inputs along", function()
  local Add = v2.Transform:extend("Add")
  function Add:__init(k) v2.Transform.__init(self); self.k = k end
  function Add:transform(inpt) return inpt + self.k end
  local c = v2.Compose({Add(1), Add(2)})
  local a, lab = c(torch.zeros(1), "lbl")
  T.eq(a:item(), 3.0)
  T.eq(lab, "lbl")
  T.eq(c(torch.zeros(1)):item(), 3.0)
  T.raises(function() v2.Compose({}) end, "~at least one")
  torch.manual_seed(0)
  local hits = 0
  for _ = 1, 200 do if v2.RandomApply({Add(1)}, 0.3)(torch.zeros(1)):item() == 1 then hits = hits + 1 end end
  T.check(hits > 30 and hits < 90, "RandomApply with p = 0.3: " .. hits .. " of 200")
  local picks = {0, 0}
  for _ = 1, 300 do
    local v = v2.RandomChoice({Add(1), Add(2)}, {1, 3})(torch.zeros(1)):item()
    picks[v] = picks[v] + 1
  end
  T.check(picks[2] > 2 * picks[1], "RandomChoice weights: " .. picks[1] .. " / " .. picks[2])
  local Mul = v2.Transform:extend("Mul")
  function Mul:transform(inpt) return inpt * 10 end
  local seen = {}
  for _ = 1, 40 do seen[v2.RandomOrder({Add(1), Mul()})(torch.zeros(1)):item()] = true end
  T.check(seen[10] and seen[1], "both orders happen")
end)

T.test("ToImage, ToDtype, ToPureTensor, Lambda", function()
  local pil = tv.transforms.functional.to_pil_image(torch.randint(0, 256, {3, 4, 5}, {dtype = torch.uint8}))
  local img, lab = v2.ToImage()(pil, torch.tensor(3))
  T.check(nn.isinstance(img, tvt.Image) and tvt.is_pure_tensor(lab))
  T.eq(img.shape, torch.Size({3, 4, 5}))
  local mask = tvt.Mask(torch.ones(4, 5, {dtype = torch.uint8}))
  local f, m2 = v2.ToDtype(torch.float32, {scale = true})(img, mask)
  T.eq(f.dtype, torch.float32)
  T.check(f:max():item() <= 1.0)
  T.eq(m2.dtype, torch.uint8, "a single dtype converts images and videos only")
  local f2, m3 = v2.ToDtype({[tvt.Image] = torch.float64, others = torch.int64}, {scale = true})(img, mask)
  T.eq(f2.dtype, torch.float64)
  T.eq(m3.dtype, torch.int64)
  T.eq(m3:max():item(), 1, "masks are not scaled")
  local p1, p2 = v2.ToPureTensor()(img, mask)
  T.check(tvt.is_pure_tensor(p1) and tvt.is_pure_tensor(p2))
  local l = v2.Lambda(function(x) return x + 1 end, tvt.Mask)
  local i3, m4 = l(img, mask)
  T.check(i3 == img)
  T.eq(m4:max():item(), 2)
end)
