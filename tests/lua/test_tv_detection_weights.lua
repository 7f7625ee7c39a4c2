-- The detection builders' weights= and weights_backbone=, from torch.hub's cache: a checkpoint
-- made here in the pretrained layout (random values) is put under a name whose sha256 prefix
-- matches it, the weights' url pointed at that name, and the builder must give the model torchvision
-- builds for those weights (FrozenBatchNorm2d, 3 trainable layers, eps 0 for the v1 COCO
-- checkpoints) holding exactly the checkpoint's values.
local T = ...
local torch = require "torch"
local tv = require "torchvision"
local hashlib = require "hashlib"
local D = tv.models.detection
local nn = torch.nn
local with_hub_dir = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "hub_dir.lua")
local Frozen = tv.ops.misc.FrozenBatchNorm2d

-- saves sd in cache as <stem>-<its sha256 prefix>.pth and points w's url at it (restored by the caller)
local function cache_as(w, sd, cache, stem)
  os.execute("mkdir -p " .. cache)
  local tmp = cache .. stem .. ".tmp"
  torch.save(sd, tmp)
  local name = stem .. "-" .. hashlib.file_digest(tmp, "sha256"):hexdigest():sub(1, 8) .. ".pth"
  assert(os.rename(tmp, cache .. name))
  local url = w.url
  w.url = "https://download.pytorch.org/models/" .. name
  return function() w.url = url end
end

local function randomized(model)
  torch.manual_seed(3)
  local sd = model:state_dict()
  for _, k in ipairs(sd:keys()) do
    local v = sd[k]
    if v:is_floating_point() then v:copy_(torch.rand(v.shape)) end
  end
  return sd
end

local function same_state(model, sd)
  local got = model:state_dict()
  if #got:keys() ~= #sd:keys() then return false end
  for _, k in ipairs(sd:keys()) do
    if not torch.equal(got[k], sd[k]) then return false end
  end
  return true
end

T.test("fasterrcnn_resnet50_fpn(weights='DEFAULT') loads COCO_V1 in torchvision's layout", function()
  local w = D.FasterRCNN_ResNet50_FPN_Weights.COCO_V1
  local ref = D.FasterRCNN(D.backbone_utils._resnet_fpn_extractor(tv.models.resnet50({ norm_layer = Frozen }), 3),
    { num_classes = 91 })
  local sd = randomized(ref)
  with_hub_dir(function(cache)
    local restore = cache_as(w, sd, cache, "fasterrcnn_test")
    local ok, err = pcall(function()
      local m = D.fasterrcnn_resnet50_fpn({ weights = "DEFAULT" })
      T.check(same_state(m, sd), "the checkpoint's values")
      T.check(nn.isinstance(m.backbone.body.bn1, Frozen), "FrozenBatchNorm2d")
      T.eq(m.backbone.body.layer2[0].bn1.eps, 0.0, "overwrite_eps for COCO_V1")
      T.check(not m.backbone.body.layer1[0].conv1.weight.requires_grad and m.backbone.body.layer2[0].conv1.weight.requires_grad,
        "3 trainable layers")
      T.eq(m.roi_heads.box_predictor.cls_score.out_features, 91)
      local m5 = D.fasterrcnn_resnet50_fpn({ weights = w, trainable_backbone_layers = 5, num_classes = 91 })
      T.check(m5.backbone.body.conv1.weight.requires_grad, "trainable_backbone_layers=5")
      T.raises(function() D.fasterrcnn_resnet50_fpn({ weights = w, num_classes = 2 }) end,
        "The parameter 'num_classes' expected value 91 but got 2 instead.")
      -- a file that is not the one named
      local bad = cache .. w.url:match("[^/]+$")
      local f = assert(io.open(bad, "ab")); f:write("x"); f:close()
      T.raises(function() D.fasterrcnn_resnet50_fpn({ pretrained = true }) end, "~invalid hash value")
    end)
    restore()
    if not ok then error(err, 0) end
  end)
end)

T.test("weights_backbone= loads the ImageNet backbone; the v2 builder keeps BatchNorm2d", function()
  local wb = tv.models.ResNet50_Weights.IMAGENET1K_V1
  local ref = tv.models.resnet50()
  local sd = randomized(ref)
  with_hub_dir(function(cache)
    local restore = cache_as(wb, sd, cache, "resnet50_test")
    local ok, err = pcall(function()
      local m = D.retinanet_resnet50_fpn({ weights_backbone = "IMAGENET1K_V1", num_classes = 5 })
      T.check(nn.isinstance(m.backbone.body.bn1, Frozen), "FrozenBatchNorm2d with a pretrained backbone")
      T.check(torch.equal(m.backbone.body.layer3[1].conv2.weight, sd["layer3.1.conv2.weight"]), "the backbone's values")
      T.check(torch.equal(m.backbone.body.bn1.running_var, sd["bn1.running_var"]))
      T.eq(m.backbone.body.bn1.eps, 1e-5, "eps kept without COCO weights")
      T.check(not m.backbone.body.layer1[0].conv1.weight.requires_grad, "3 trainable layers")
      local v2 = D.fasterrcnn_resnet50_fpn_v2({ weights_backbone = wb, num_classes = 3 })
      T.check(nn.isinstance(v2.backbone.body.bn1, nn.BatchNorm2d), "v2: BatchNorm2d")
      T.check(torch.equal(v2.backbone.body.layer4[2].conv3.weight, sd["layer4.2.conv3.weight"]))
    end)
    restore()
    if not ok then error(err, 0) end
  end)
end)

T.test("the weights enums and the 320 builder", function()
  local w = D.MaskRCNN_ResNet50_FPN_V2_Weights.DEFAULT
  T.eq(tostring(w), "MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1")
  T.eq(w.url, "https://download.pytorch.org/models/maskrcnn_resnet50_fpn_v2_coco-73cbd019.pth")
  T.eq({ #w.meta.categories, w.meta.categories[1], w.meta.categories[2], w.meta.categories[91] },
    { 91, "__background__", "person", "toothbrush" })
  T.eq(w.meta._metrics["COCO-val2017"].mask_map, 41.8)
  T.check(D.mask_rcnn.MaskRCNN_ResNet50_FPN_V2_Weights == D.MaskRCNN_ResNet50_FPN_V2_Weights)
  T.check(tv.models.get_model_weights("fasterrcnn_mobilenet_v3_large_320_fpn") == D.FasterRCNN_MobileNet_V3_Large_320_FPN_Weights)
  T.check(tv.models.get_weight("RetinaNet_ResNet50_FPN_Weights.COCO_V1") == D.RetinaNet_ResNet50_FPN_Weights.COCO_V1)
  local img = torch.randint(0, 256, { 3, 4, 5 }, { dtype = torch.uint8 })
  T.check(torch.equal(w.transforms()(img), img:float() / 255), "ObjectDetection: uint8 to [0, 1]")
  T.eq(tv.models.ResNet18_Weights.DEFAULT.meta.categories[1000], "toilet tissue")
  local m = D.fasterrcnn_mobilenet_v3_large_320_fpn({ num_classes = 4, rpn_score_thresh = 0.1 })
  T.eq({ m.transform.min_size[1], m.transform.max_size, m.rpn._pre_nms_top_n.testing, m.rpn._post_nms_top_n.testing,
    m.rpn.score_thresh }, { 320, 640, 150, 150, 0.1 })
  T.raises(function() D.fasterrcnn_mobilenet_v3_large_fpn({ weights = D.FasterRCNN_ResNet50_FPN_Weights.COCO_V1 }) end,
    "Invalid Weight class provided; expected FasterRCNN_MobileNet_V3_Large_FPN_Weights but received FasterRCNN_ResNet50_FPN_Weights.")
end)
