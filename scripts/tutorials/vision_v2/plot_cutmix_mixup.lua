-- torchvision gallery/transforms/plot_cutmix_mixup.py (How to use CutMix and MixUp) ported to nnrepl.
--
--   nnrepl scripts/tutorials/vision_v2/plot_cutmix_mixup.lua
--
-- Differences: a DataLoader hands out a batch's items as several values (for images, labels in
-- dataloader do); Python's `*default_collate(batch)` is table.unpack(default_collate(batch));
-- num_workers=2 runs in the main thread (a Lua state has one thread); the draws are nnrepl's.
local torch = require "torch"
local FakeData = require("torchvision").datasets.FakeData
local v2 = require("torchvision").transforms.v2
local pytype = require("helpers").pytype

local NUM_CLASSES = 100

-- Pre-processing pipeline
local preproc = v2.Compose({
  v2.PILToTensor(),
  v2.RandomResizedCrop({size = {224, 224}, antialias = true}),
  v2.RandomHorizontalFlip({p = 0.5}),
  v2.ToDtype(torch.float32, {scale = true}), -- float32 in [0, 1]
  v2.Normalize({mean = {0.485, 0.456, 0.406}, std = {0.229, 0.224, 0.225}}), -- ImageNet's
})

local dataset = FakeData({size = 1000, num_classes = NUM_CLASSES, transform = preproc})

local img, label = dataset:get(0)
print(string.format("type(img) = %s, img.dtype = %s, img.shape = %s, label = %s", pytype(img), tostring(img.dtype),
  tostring(img.shape), tostring(label)))

-- the DataLoader and training loop without CutMix or MixUp
local DataLoader = torch.utils.data.DataLoader

local dataloader = DataLoader(dataset, {batch_size = 4, shuffle = true})

for images, labels in dataloader do
  print(string.format("images.shape = %s, labels.shape = %s", tostring(images.shape), tostring(labels.shape)))
  print(labels.dtype)
  -- <rest of the training loop here>
  break
end

-- After the DataLoader
dataloader = DataLoader(dataset, {batch_size = 4, shuffle = true})

local cutmix = v2.CutMix({num_classes = NUM_CLASSES})
local mixup = v2.MixUp({num_classes = NUM_CLASSES})
local cutmix_or_mixup = v2.RandomChoice({cutmix, mixup})

for images, labels in dataloader do
  print(string.format("Before CutMix/MixUp: images.shape = %s, labels.shape = %s", tostring(images.shape),
    tostring(labels.shape)))
  images, labels = cutmix_or_mixup(images, labels)
  print(string.format("After CutMix/MixUp: images.shape = %s, labels.shape = %s", tostring(images.shape),
    tostring(labels.shape)))

  -- <rest of the training loop here>
  break
end

-- As part of the collation function
local default_collate = torch.utils.data.default_collate

local function collate_fn(batch)
  return {cutmix_or_mixup(table.unpack(default_collate(batch)))}
end

dataloader = DataLoader(dataset, {batch_size = 4, shuffle = true, num_workers = 2, collate_fn = collate_fn})

for images, labels in dataloader do
  print(string.format("images.shape = %s, labels.shape = %s", tostring(images.shape), tostring(labels.shape)))
  -- cutmix_or_mixup already ran in the DataLoader
  -- <rest of the training loop here>
  break
end

-- Non-standard input format
local batch = {
  imgs = torch.rand(4, 3, 224, 224),
  target = {
    classes = torch.randint(0, NUM_CLASSES, {4}),
    some_other_key = "this is going to be passed-through",
  },
}

local function labels_getter(batch_)
  return batch_.target.classes
end

local out = v2.CutMix({num_classes = NUM_CLASSES, labels_getter = labels_getter})(batch)
print(string.format("out['imgs'].shape = %s, out['target']['classes'].shape = %s", tostring(out.imgs.shape),
  tostring(out.target.classes.shape)))
