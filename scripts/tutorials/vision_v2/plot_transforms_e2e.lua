-- torchvision gallery/transforms/plot_transforms_e2e.py (Transforms v2: End-to-end object
-- detection/segmentation example) ported to nnrepl.
--
--   nnrepl scripts/tutorials/vision_v2/plot_transforms_e2e.lua [--assets ../assets] [--min-size N --max-size M]
--
-- Differences: the gallery's assets are not shipped: ASSETS/coco/images and
-- ASSETS/coco/instances.json (a COCO instances file with polygon segmentations) must be on disk;
-- CocoDetection's error names a missing file. --min-size / --max-size (new) set Mask R-CNN's input
-- resizing (torchvision's 800 / 1333 otherwise) to run it small. plot() prints one line per image;
-- JSON objects have no key order in Lua, so an annotation's keys print sorted. The draws are nnrepl's.
local torch = require "torch"
local torchvision = require "torchvision"
local models, datasets, tv_tensors = torchvision.models, torchvision.datasets, torchvision.tv_tensors
local v2 = torchvision.transforms.v2
local helpers = require "helpers"
local plot, pytype = helpers.plot, helpers.pytype

torch.manual_seed(0)

-- the gallery's fake data: use your own in practice
local ROOT = helpers.assets() .. "/coco"
local IMAGES_PATH = ROOT .. "/images"
local ANNOTATIONS_PATH = ROOT .. "/instances.json"

local function flag(name)
  for i = 1, #arg - 1 do if arg[i] == name then return tonumber(arg[i + 1]) end end
end

-- a table's keys as dict_keys([...]): in the given order first, the rest sorted
local function dict_keys(t, order)
  local keys, seen = {}, {}
  for _, k in ipairs(order or {}) do if t[k] ~= nil then keys[#keys + 1] = "'" .. k .. "'"; seen[k] = true end end
  local rest = {}
  for k in pairs(t) do if not seen[k] then rest[#rest + 1] = k end end
  table.sort(rest)
  for _, k in ipairs(rest) do keys[#keys + 1] = "'" .. k .. "'" end
  return "dict_keys([" .. table.concat(keys, ", ") .. "])"
end

-- Dataset preparation
local dataset = datasets.CocoDetection(IMAGES_PATH, ANNOTATIONS_PATH)

local img, target = dataset:get(0)
print(string.format("type(img) = %s\ntype(target) = %s\ntype(target[0]) = %s\ntarget[0].keys() = %s", pytype(img),
  pytype(target), pytype(target[1]), dict_keys(target[1])))

-- wrapped for transforms.v2: the target becomes one dict
dataset = datasets.wrap_dataset_for_transforms_v2(dataset, {target_keys = {"boxes", "labels", "masks"}})

img, target = dataset:get(0)
print(string.format("type(img) = %s\ntype(target) = %s\ntarget.keys() = %s", pytype(img), pytype(target),
  dict_keys(target, {"boxes", "masks", "labels"})))
print(string.format("type(target['boxes']) = %s\ntype(target['labels']) = %s\ntype(target['masks']) = %s",
  pytype(target.boxes), pytype(target.labels), pytype(target.masks)))

-- a sample without transforms
plot({dataset[0], dataset[1]})

-- Transforms
local transforms = v2.Compose({
  v2.ToImage(),
  v2.RandomPhotometricDistort({p = 1}),
  v2.RandomZoomOut({fill = {[tv_tensors.Image] = {123, 117, 104}, others = 0}}),
  v2.RandomIoUCrop(),
  v2.RandomHorizontalFlip({p = 1}),
  v2.SanitizeBoundingBoxes(),
  v2.ToDtype(torch.float32, {scale = true}),
})

dataset = datasets.CocoDetection(IMAGES_PATH, ANNOTATIONS_PATH, {transforms = transforms})
dataset = datasets.wrap_dataset_for_transforms_v2(dataset, {target_keys = {"boxes", "labels", "masks"}})

-- the samples with the augmentations
plot({dataset[0], dataset[1]})

-- Data loading and training loop
local data_loader = torch.utils.data.DataLoader(dataset, {
  batch_size = 2,
  -- detection models take lists of images and of targets: the default collation would stack them
  collate_fn = function(batch)
    local imgs, targets = {}, {}
    for i, sample in ipairs(batch) do imgs[i], targets[i] = sample[1], sample[2] end
    return {imgs, targets}
  end,
})

local model = models.get_model("maskrcnn_resnet50_fpn_v2", {weights = nil, weights_backbone = nil,
  min_size = flag("--min-size"), max_size = flag("--max-size")}):train()

for imgs, targets in data_loader do
  local loss_dict = model(imgs, targets)
  -- the training logic goes here

  local shapes, types = {}, {}
  for i, im in ipairs(imgs) do shapes[i] = tostring(im.shape) end
  for i, t in ipairs(targets) do types[i] = pytype(t) end
  print(string.format("[img.shape for img in imgs] = [%s]", table.concat(shapes, ", ")))
  print(string.format("[type(target) for target in targets] = [%s]", table.concat(types, ", ")))
  for name, loss_val in pairs(loss_dict) do
    print(string.format("%-20s%.3f", name, loss_val:item()))
  end
end
