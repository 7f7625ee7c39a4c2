-- pytorch/tutorials intermediate_source/torchvision_tutorial.py (TorchVision Object Detection
-- Finetuning) ported to nnrepl: Mask R-CNN finetuned on the Penn-Fudan pedestrians, with
-- transforms.v2 on tv_tensors; the references/detection helpers are in detection/ beside this file.
--
--   nnrepl scripts/tutorials/vision_v2/torchvision_tutorial.lua [--data data/PennFudanPed]
--       [--weights DEFAULT|none] [--epochs 2] [--test-size 50] [--min-size 800] [--max-size 1333]
--       [--print-freq 10] [--out prediction.png]
--
-- Differences from the tutorial:
-- * nothing is downloaded (the wget / os.system cells are dropped): extract PennFudanPed.zip so
--   that DATA/PNGImages and DATA/PedMasks exist; a missing folder stops with an error saying so.
-- * pretrained weights (weights="DEFAULT") come from torch.hub's cache, where torchvision would
--   download them: <torch.hub.get_dir()>/checkpoints/ holds maskrcnn_resnet50_fpn_coco-bf2d0c1e.pth,
--   fasterrcnn_resnet50_fpn_coco-258fb6c6.pth and mobilenet_v2-7ebf99e0.pth (copy them from a
--   machine with network).
--   --weights none builds every model without weights (weights=None: all layers trainable).
-- * new flags to run it small: --epochs, --test-size (the tutorial's 50 test images),
--   --min-size / --max-size (the models' input resizing, torchvision's 800 / 1333), --print-freq.
-- * evaluate() uses detection/coco_eval.lua, a small COCO-style box AP (AP@[.5:.95], AP50, AP75
--   over all areas) in place of pycocotools' COCOeval: the segm metrics are not computed.
-- * no matplotlib: the sample image and mask are described by a print, and the final prediction
--   drawing is written to --out (prediction.png).
-- * dicts print as Python's {'key': value, ...} through pydict below (Lua tables have no repr).
local argparse = require "argparse"
local torch = require "torch"
local torchvision = require "torchvision"
local read_image = torchvision.io.read_image
local masks_to_boxes = torchvision.ops.boxes.masks_to_boxes
local tv_tensors = torchvision.tv_tensors
local F = torchvision.transforms.v2.functional

local parser = argparse.ArgumentParser()
parser:add_argument("--data", {default = "data/PennFudanPed"})
parser:add_argument("--weights", {default = "DEFAULT", choices = {"DEFAULT", "none"}})
parser:add_argument("--epochs", {type = "int", default = 2})
parser:add_argument("--test-size", {type = "int", default = 50})
parser:add_argument("--min-size", {type = "int", default = 800})
parser:add_argument("--max-size", {type = "int", default = 1333})
parser:add_argument("--print-freq", {type = "int", default = 10})
parser:add_argument("--out", {default = "prediction.png"})
local args = parser:parse_args()
local root = args.data

-- Python's print of a dict: {'key': repr, ...}: an OrderedDict's keys in order, a detection's
-- boxes, labels, scores, masks (torchvision's order)
local function pydict(d)
  local keys = {}
  if getmetatable(d) then
    for k in pairs(d) do keys[#keys + 1] = k end
  else
    for _, k in ipairs({"boxes", "labels", "scores", "masks"}) do if d[k] ~= nil then keys[#keys + 1] = k end end
  end
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = string.format("'%s': %s", k, tostring(d[k])) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

for _, sub in ipairs({"PNGImages", "PedMasks"}) do
  if not os.rename(root .. "/" .. sub, root .. "/" .. sub) then -- true for an existing folder
    error(string.format("%s/%s not found: nnrepl downloads nothing; extract PennFudanPed.zip " ..
      "(https://www.cis.upenn.edu/~jshi/ped_html/PennFudanPed.zip) so that %s/PNGImages and %s/PedMasks exist",
      root, sub, root, root), 0)
  end
end

-- one image and its mask (the tutorial plots them)
local image = read_image(root .. "/PNGImages/FudanPed00046.png")
local mask = read_image(root .. "/PedMasks/FudanPed00046_mask.png")
print(string.format("Image: %s, Mask: %s, instance ids in the mask: %s", tostring(image.shape), tostring(mask.shape),
  table.concat(torch.unique(mask):tolist(), ", ")))

-- ---- the dataset ----
local function listdir_sorted(dir)
  local names = {}
  local p = assert(io.popen("ls -1 '" .. dir .. "'"))
  for line in p:lines() do names[#names + 1] = line end
  p:close()
  table.sort(names)
  return names
end

local PennFudanDataset = torch.utils.data.Dataset:extend("PennFudanDataset")
function PennFudanDataset:__init(root_, transforms)
  self.root = root_
  self.transforms = transforms
  -- all the file names, sorted so that images and masks pair up
  self.imgs = listdir_sorted(root_ .. "/PNGImages")
  self.masks = listdir_sorted(root_ .. "/PedMasks")
end

function PennFudanDataset:__getitem(idx)
  local img_path = self.root .. "/PNGImages/" .. self.imgs[idx + 1]
  local mask_path = self.root .. "/PedMasks/" .. self.masks[idx + 1]
  local img = read_image(img_path)
  local mask = read_image(mask_path)
  -- each instance has its own value in the mask; the first (0) is the background
  local obj_ids = torch.unique(mask)
  obj_ids = obj_ids["1:"]
  local num_objs = #obj_ids

  -- one binary mask per instance
  local masks = mask:eq(obj_ids[":, None, None"]):to({dtype = torch.uint8})

  -- the bounding box of each mask
  local boxes = masks_to_boxes(masks)

  -- one class only
  local labels = torch.ones({num_objs}, {dtype = torch.int64})

  local image_id = idx
  local area = (boxes[":, 3"] - boxes[":, 1"]) * (boxes[":, 2"] - boxes[":, 0"])
  -- no crowd instances
  local iscrowd = torch.zeros({num_objs}, {dtype = torch.int64})

  -- the sample as tv_tensors
  img = tv_tensors.Image(img)

  local target = {}
  target.boxes = tv_tensors.BoundingBoxes(boxes, {format = "XYXY", canvas_size = F.get_size(img)})
  target.masks = tv_tensors.Mask(masks)
  target.labels = labels
  target.image_id = image_id
  target.area = area
  target.iscrowd = iscrowd

  if self.transforms ~= nil then
    img, target = self.transforms(img, target)
  end
  return img, target
end

function PennFudanDataset:__len() return #self.imgs end

-- ---- the models ----
local detection = torchvision.models.detection
local FastRCNNPredictor = detection.faster_rcnn.FastRCNNPredictor
local MaskRCNNPredictor = detection.mask_rcnn.MaskRCNNPredictor
local weights = args.weights ~= "none" and args.weights or nil
-- a COCO-pretrained detection model (weights="DEFAULT", from torch.hub's cache), or one without weights
local function pretrained_detection(name)
  return detection[name]({weights = weights, min_size = args.min_size, max_size = args.max_size})
end

-- 1 - finetuning from a pretrained model
local model = pretrained_detection("fasterrcnn_resnet50_fpn")
-- a new classifier for our classes
local num_classes = 2 -- person and the background
local in_features = model.roi_heads.box_predictor.cls_score.in_features
model.roi_heads.box_predictor = FastRCNNPredictor(in_features, num_classes)

-- 2 - a different backbone
-- the features of a pretrained classifier
local backbone = torchvision.models.mobilenet_v2({weights = weights}).features
-- FasterRCNN needs the backbone's output channels: 1280 for mobilenet_v2
backbone.out_channels = 1280

-- 5 sizes x 3 aspect ratios of anchors at each place of the one feature map
local AnchorGenerator = detection.rpn.AnchorGenerator
local anchor_generator = AnchorGenerator({sizes = {{32, 64, 128, 256, 512}}, aspect_ratios = {{0.5, 1.0, 2.0}}})

-- the feature map to crop the regions from ('0': the backbone returns one tensor), and the crop size
local roi_pooler = torchvision.ops.MultiScaleRoIAlign({featmap_names = {"0"}, output_size = 7, sampling_ratio = 2})

model = detection.FasterRCNN(backbone, {num_classes = 2, rpn_anchor_generator = anchor_generator,
  box_roi_pool = roi_pooler, min_size = args.min_size, max_size = args.max_size})

-- Mask R-CNN for PennFudan: new box and mask predictors on a COCO-pretrained model
local function get_model_instance_segmentation(num_classes_)
  local model_ = pretrained_detection("maskrcnn_resnet50_fpn")

  local in_features_ = model_.roi_heads.box_predictor.cls_score.in_features
  model_.roi_heads.box_predictor = FastRCNNPredictor(in_features_, num_classes_)

  local in_features_mask = model_.roi_heads.mask_predictor.conv5_mask.in_channels
  local hidden_layer = 256
  model_.roi_heads.mask_predictor = MaskRCNNPredictor(in_features_mask, hidden_layer, num_classes_)

  return model_
end

-- ---- transforms ----
local T = torchvision.transforms.v2

local function get_transform(train)
  local transforms = {}
  if train then
    table.insert(transforms, T.RandomHorizontalFlip(0.5))
  end
  table.insert(transforms, T.ToDtype(torch.float, {scale = true}))
  table.insert(transforms, T.ToPureTensor())
  return T.Compose(transforms)
end

-- ---- forward() on a batch, for training and for inference ----
local utils = require "detection.utils"

model = pretrained_detection("fasterrcnn_resnet50_fpn")
local dataset = PennFudanDataset(root, get_transform(true))
local data_loader = torch.utils.data.DataLoader(dataset, {batch_size = 2, shuffle = true, num_workers = 4,
  collate_fn = utils.collate_fn})

-- training
local images, targets = data_loader:iter()()
local output = model(images, targets) -- the losses
print(pydict(output))

-- inference
model:eval()
local x = {torch.rand(3, 300, 400), torch.rand(3, 500, 400)}
local predictions = model(x) -- the detections
print(pydict(predictions[1]))

-- ---- training and evaluation ----
local engine = require "detection.engine"
local train_one_epoch, evaluate = engine.train_one_epoch, engine.evaluate

-- the GPU when there is one
local device = torch.cuda.is_available() and torch.device("cuda") or torch.device("cpu")

-- background and person
num_classes = 2
dataset = PennFudanDataset(root, get_transform(true))
local dataset_test = PennFudanDataset(root, get_transform(false))

-- the last test_size of a random order for testing, the rest for training
local test_size = args.test_size
local indices = torch.randperm(#dataset):tolist()
dataset = torch.utils.data.Subset(dataset, {table.unpack(indices, 1, #indices - test_size)})
dataset_test = torch.utils.data.Subset(dataset_test, {table.unpack(indices, #indices - test_size + 1)})

data_loader = torch.utils.data.DataLoader(dataset, {batch_size = 2, shuffle = true, num_workers = 4,
  collate_fn = utils.collate_fn})
local data_loader_test = torch.utils.data.DataLoader(dataset_test, {batch_size = 1, shuffle = false, num_workers = 4,
  collate_fn = utils.collate_fn})

model = get_model_instance_segmentation(num_classes)
model:to(device)

local params = {}
for _, p in ipairs(model:parameters()) do
  if p.requires_grad then params[#params + 1] = p end
end
local optimizer = torch.optim.SGD(params, {lr = 0.005, momentum = 0.9, weight_decay = 0.0005})

local lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, {step_size = 3, gamma = 0.1})

local num_epochs = args.epochs

for epoch = 0, num_epochs - 1 do
  -- one epoch, a line every print_freq iterations
  train_one_epoch(model, optimizer, data_loader, device, epoch, args.print_freq)
  lr_scheduler:step()
  evaluate(model, data_loader_test, device)
end

print("That's it!")

-- ---- a prediction drawn on an image ----
local draw_bounding_boxes, draw_segmentation_masks = torchvision.utils.draw_bounding_boxes,
  torchvision.utils.draw_segmentation_masks

image = read_image(root .. "/PNGImages/FudanPed00046.png")
local eval_transform = get_transform(false)

model:eval()
local pred = torch.no_grad(function()
  local x_ = eval_transform(image)
  -- RGBA -> RGB, to the device
  x_ = x_[":3, ..."]:to(device)
  local predictions_ = model({x_})
  return predictions_[1]
end)

image = (255.0 * (image - image:min()) / (image:max() - image:min())):to(torch.uint8)
image = image[":3, ..."]
local pred_labels = {}
for i, score in ipairs(pred.scores:tolist()) do pred_labels[i] = string.format("pedestrian: %.3f", score) end
local pred_boxes = pred.boxes:long()
local output_image = draw_bounding_boxes(image, pred_boxes, pred_labels, {colors = "red"})

local masks = (pred.masks:gt(0.7)):squeeze(1)
output_image = draw_segmentation_masks(output_image, masks, {alpha = 0.5, colors = "blue"})

-- the tutorial shows output_image with matplotlib
torchvision.io.write_png(output_image:cpu(), args.out)
print(string.format("%d detections drawn, written to %s", #pred_labels, args.out))
