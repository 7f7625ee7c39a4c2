-- torchvision gallery/transforms/plot_custom_tv_tensors.py (How to write your own TVTensor class)
-- ported to nnrepl.
--
--   nnrepl scripts/tutorials/vision_v2/plot_custom_tv_tensors.lua
--
-- Differences: `class MyTVTensor(tv_tensors.TVTensor)` is tv_tensors.TVTensor:extend("MyTVTensor");
-- the decorator @F.register_kernel(functional="hflip", tv_tensor_cls=MyTVTensor) is a call with the
-- kernel as its third argument (F.register_kernel("hflip", MyTVTensor, kernel) also works); a
-- kernel takes `...` where Python has *args, **kwargs; the cell that only shows `my_dp` prints it.
local torch = require "torch"
local tv_tensors = require("torchvision").tv_tensors
local v2 = require("torchvision").transforms.v2

local MyTVTensor = tv_tensors.TVTensor:extend("MyTVTensor")

local my_dp = MyTVTensor({1, 2, 3})
print(my_dp)

-- a kernel for horizontal flips of MyTVTensor, hooked to the functional
local F = v2.functional

local function hflip_my_tv_tensor(my_dp_, ...)
  print("Flipping!")
  local out = my_dp_:flip(-1)
  return tv_tensors.wrap(out, {like = my_dp_})
end
F.register_kernel({functional = "hflip", tv_tensor_cls = MyTVTensor, kernel = hflip_my_tv_tensor})

-- the functional on a MyTVTensor
my_dp = MyTVTensor(torch.rand(3, 256, 256))
local _ = F.hflip(my_dp)

-- and RandomHorizontalFlip, which calls hflip
local t = v2.RandomHorizontalFlip({p = 1})
_ = t(my_dp)

-- a kernel without `...` would break when a functional gains a parameter: always take `...`
local function hflip_my_tv_tensor_fixed_args(my_dp_) -- luacheck: ignore (shown, not registered)
  print("Flipping!")
  local out = my_dp_:flip(-1)
  return tv_tensors.wrap(out, {like = my_dp_})
end
