-- PyTorch tutorial "Learn the Basics: Transforms" (beginner_source/basics/transforms_tutorial.py) in
-- Lua: FashionMNIST with ToTensor and a Lambda target transform that one-hot encodes the label.
--
--   cd somewhere && ln -s /usr/share/datasets/fashion-mnist data   (once: the tutorial's root="data")
--   nnrepl scripts/tutorials/basics/transforms.lua
--
-- Differences from the original:
-- * Nothing is downloaded: root="data" must hold FashionMNIST's IDX files (gzipped or not), in
--   data/FashionMNIST/raw, data/FashionMNIST or data itself (a link named data to Debian's
--   /usr/share/datasets/fashion-mnist is enough); otherwise FashionMNIST raises "download=true,
--   but nnrepl downloads nothing: put ...".
-- * The tutorial prints nothing; the last lines (extras) print the first sample's image shape,
--   range and one-hot target, so that a run shows the transforms at work.
local torchvision = require "torchvision"
local datasets = torchvision.datasets
local ToTensor, Lambda = torchvision.transforms.ToTensor, torchvision.transforms.Lambda

local ds = datasets.FashionMNIST({
  root = "data",
  train = true,
  download = true,
  transform = ToTensor(),
  target_transform = Lambda(function(y) return torch.zeros(10, { dtype = torch.float }):scatter_(0, torch.tensor(y), { value = 1 }) end),
})

local target_transform = Lambda(function(y)
  return torch.zeros(10, { dtype = torch.float }):scatter_({ dim = 0, index = torch.tensor(y), value = 1 })
end)

-- (extras) what the transforms made of the first sample
local img, target = table.unpack(ds[0])
print(string.format("image: %s %s in [%.4f, %.4f]", img.shape, img.dtype, img:min():item(), img:max():item()))
print(string.format("target: %s", target))
print(string.format("target_transform(7): %s", target_transform(7)))
