-- tv_tensors: how they print (torchvision's reprs), TVTensor:extend for your own class, and
-- v2.functional.register_kernel by the functional's name.
local T = ...
local torch = require "torch"
local tv = require "torchvision"
local tvt, v2 = tv.tv_tensors, tv.transforms.v2
local F = v2.functional

T.test("reprs", function()
  T.eq(tostring(tvt.Image({{{{0, 1}, {1, 0}}}})), "Image([[[[0, 1],\n         [1, 0]]]], )")
  T.eq(tostring(tvt.Image({{{0, 1}, {1, 0}}}, {dtype = torch.float32, requires_grad = true})),
    "Image([[[0., 1.],\n        [1., 0.]]], requires_grad=True, )")
  T.eq(tostring(tvt.Mask({1, 0})), "Mask([1, 0], )")
  T.eq(tostring(tvt.BoundingBoxes({{17, 16, 344, 495}, {0, 10, 0, 10}}, {format = "XYXY", canvas_size = {512, 500}})),
    "BoundingBoxes([[ 17,  16, 344, 495],\n               [  0,  10,   0,  10]], format=BoundingBoxFormat.XYXY, " ..
    "canvas_size=(512, 500), clamping_mode=soft)")
  T.eq(tostring(tvt.Image(torch.zeros(1, 1, 1)) + 1), "tensor([[[1.]]])", "an op's result prints as a tensor")
  T.eq(tostring(torch.tensor({1, 2})), "tensor([1, 2])")
end)

T.test("TVTensor:extend makes a class of your own", function()
  local MyTVTensor = tvt.TVTensor:extend("MyTVTensor")
  local data = torch.tensor({1, 2, 3})
  local my_dp = MyTVTensor(data)
  T.eq(tostring(my_dp), "MyTVTensor([1, 2, 3])")
  T.check(tvt.isinstance(my_dp, MyTVTensor) and tvt.isinstance(my_dp, tvt.TVTensor) and not tvt.isinstance(my_dp, tvt.Image))
  T.eq(my_dp:data_ptr(), data:data_ptr(), "zero-copy")
  T.check(tvt.is_pure_tensor(my_dp + 1), "ops unwrap")
  T.check(tvt.type_of(my_dp:clone()) == MyTVTensor, "clone keeps the class")
  local f = MyTVTensor({1, 2}, {dtype = torch.float64, requires_grad = true})
  T.eq(f.dtype, torch.float64)
  T.check(f.requires_grad)
  local Sub = MyTVTensor:extend("Sub")
  T.check(tvt.isinstance(Sub({1}), MyTVTensor), "a subclass of a subclass")
  T.raises(function() MyTVTensor() end, "~missing required argument 'data'")
end)

T.test("register_kernel by name; the transforms dispatch to it", function()
  local Flippy = tvt.TVTensor:extend("Flippy")
  local calls = 0
  F.register_kernel({functional = "hflip", tv_tensor_cls = Flippy, kernel = function(x)
    calls = calls + 1
    return tvt.wrap(x:flip(-1), {like = x})
  end})
  local x = Flippy(torch.tensor({{1, 2, 3}}))
  local y = F.hflip(x)
  T.eq(y:tolist(), {{3, 2, 1}})
  T.check(tvt.type_of(y) == Flippy)
  local z = v2.RandomHorizontalFlip({p = 1})(x)
  T.eq(z:tolist(), {{3, 2, 1}})
  T.eq(calls, 2)
  T.raises(function() F.register_kernel("no_such_functional", Flippy, function() end) end,
    "Could not find functional with name 'no_such_functional' in torchvision.transforms.v2.functional.")
  T.raises(function() F.register_kernel("hflip", tvt.Image, function() end) end, "~builtin tv_tensor types")
  T.raises(function() F.register_kernel("hflip", Flippy, function() end) end, "~already has a kernel registered")
end)

T.test("the methods keeping tv_tensors report bad arguments under their own names", function()
  local _ = tvt.Mask({1}) -- the keepers are installed from the first tv_tensor on
  local x = torch.zeros(2)
  T.raises(function() x:to("banana") end, "bad argument #1 to 'to' (expected a device or dtype, got 'banana')")
  T.raises(function() x:to({dtype = torch.int32, layout = 1}) end, "bad argument #1 to 'to' (unknown keyword 'layout')")
  T.eq(x:to(torch.float64).dtype, torch.float64)
end)

T.test("an in-place op returns a pure tensor of the same data; the tv_tensor stays one", function()
  local img = tvt.Image(torch.zeros(1, 2, 2))
  local y = img:add_(1)
  T.check(not rawequal(y, img) and tvt.is_pure_tensor(y), "add_ returns a pure tensor value")
  T.check(nn.isinstance(img, tvt.Image), "img is still an Image")
  y:mul_(3)
  T.eq(img:sum():item(), 12.0, "the two values share one tensor")
  T.eq(y._version, img._version, "and its version counter")
  local boxes = tvt.BoundingBoxes({{0, 0, 4, 4}}, {format = "XYXY", canvas_size = {8, 8}})
  T.check(tvt.is_pure_tensor(boxes:clamp_(0, 2)), "clamp_ too")
  T.eq(boxes.format, "XYXY")
  T.check(nn.isinstance(boxes:requires_grad_(false), tvt.BoundingBoxes), "requires_grad_ keeps the kind")
end)

T.test("wrapping a tensor keeps its autograd history, as as_subclass does", function()
  local x = torch.ones(1, 2, 2, {requires_grad = true})
  local img = tvt.Image(x * 2)
  T.eq(img.grad_fn:name(), "MulBackward0")
  local m = tvt.wrap(x * 3, {like = img})
  T.eq(m.grad_fn:name(), "MulBackward0")
end)

if torch.cuda.is_available() then
  T.test("cuda: a custom tv_tensor on the GPU", function()
    local C = tvt.TVTensor:extend("C")
    local x = C(torch.tensor({1, 2}), {device = "cuda"})
    T.check(x.is_cuda and tvt.type_of(x) == C)
    T.eq(tostring(tvt.Mask(torch.tensor({1, 0}, {device = "cuda"}))), "Mask([1, 0], device='cuda:0', )")
  end)
else
  T.skip("no CUDA device", 1)
end
