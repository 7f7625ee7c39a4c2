-- torchvision.models.detection.generalized_rcnn.GeneralizedRCNN and .faster_rcnn (FasterRCNN,
-- TwoMLPHead, FastRCNNPredictor, fasterrcnn_resnet50_fpn).
--   train: model(images, targets) -> OrderedDict {loss_classifier, loss_box_reg, loss_objectness,
--          loss_rpn_box_reg}
--   eval:  model(images) -> a list of {boxes=[K, 4], labels=[K], scores=[K]} per image
-- images is a Lua list of [3, H, W] float tensors; targets a list of {boxes=[N, 4] float,
-- labels=[N] int64}.
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional
local ops_roi = require "tv_ops_roi"
local layers = require "tv_ops_layers"
local transform = require "tv_models_detection_transform"
local rpn = require "tv_models_detection_rpn"
local roi_heads = require "tv_models_detection_roi_heads"

return function(models, backbone_utils)

local M = {}

-- ---- GeneralizedRCNN ----

local GeneralizedRCNN = nn.Module:extend("GeneralizedRCNN")
M.GeneralizedRCNN = GeneralizedRCNN

function GeneralizedRCNN:__init(backbone, rpn_, roi_heads_, transform_)
  self.transform = transform_
  self.backbone = backbone
  self.rpn = rpn_
  self.roi_heads = roi_heads_
end

function M._check_targets(targets)
  for _, t in ipairs(targets) do
    local b = t.boxes
    if not torch.is_tensor(b) then
      U.errorf("Expected target boxes to be of type Tensor, got %s.", U.typename(b))
    end
    if b:dim() ~= 2 or b:size(-1) ~= 4 then
      U.errorf("Expected target boxes to be a tensor of shape [N, 4], got %s.", tostring(b.shape))
    end
  end
end

-- the first box (after resizing) whose x2 <= x1 or y2 <= y1
function M._check_degenerate(targets)
  for i, t in ipairs(targets) do
    local b = t.boxes
    local bad = b[":, 2:"]:le(b[":, :2"]):any(1)
    if bad:any():item() then
      local first = torch.nonzero(bad):reshape(-1)[0]:item()
      local vals = {}
      for j, v in ipairs(b[first]:tolist()) do vals[j] = U.pyfloat(v) end
      U.errorf("All bounding boxes should have positive height and width. Found invalid box [%s] for target at " ..
        "index %d.", table.concat(vals, ", "), i - 1)
    end
  end
end

-- {H, W} of each image
function M._original_sizes(images)
  if torch.is_tensor(images) then
    U.error("images is expected to be a list of 3d tensors of shape [C, H, W] (a Lua list), got a Tensor")
  end
  local sizes = {}
  for i, img in ipairs(images) do
    if img:dim() < 2 then
      U.errorf("expecting the last two dimensions of the Tensor to be H and W instead got %s", tostring(img.shape))
    end
    sizes[i] = { img:size(-2), img:size(-1) }
  end
  return sizes
end

-- the steps a detector's forward begins with (GeneralizedRCNN, RetinaNet): check the targets,
-- transform, check the boxes, run the backbone -> image_list, targets, original sizes, features
-- (an OrderedDict)
function M._prepare(self, images, targets)
  if self.training then
    if targets == nil then U.error("targets should not be none when in training mode") end
    M._check_targets(targets)
  end
  local original_sizes = M._original_sizes(images)
  local image_list
  image_list, targets = self.transform(images, targets)
  if targets ~= nil then M._check_degenerate(targets) end
  local features = self.backbone(image_list.tensors)
  if torch.is_tensor(features) then
    local od = U.OrderedDict.new()
    od["0"] = features
    features = od
  end
  return image_list, targets, original_sizes, features
end

function GeneralizedRCNN:forward(images, targets)
  local image_list, original_sizes, features
  image_list, targets, original_sizes, features = M._prepare(self, images, targets)
  local proposals, proposal_losses = self.rpn(image_list, features, targets)
  local detections, detector_losses = self.roi_heads(features, proposals, image_list.image_sizes, targets)
  detections = self.transform:postprocess(detections, image_list.image_sizes, original_sizes)
  if self.training then
    local losses = U.OrderedDict.new()
    for _, k in ipairs({ "loss_classifier", "loss_box_reg", "loss_mask", "loss_keypoint" }) do
      losses[k] = detector_losses[k]
    end
    losses.loss_objectness = proposal_losses.loss_objectness
    losses.loss_rpn_box_reg = proposal_losses.loss_rpn_box_reg
    return losses
  end
  return detections
end

-- ---- TwoMLPHead, FastRCNNPredictor ----

local TwoMLPHead = nn.Module:extend("TwoMLPHead")
M.TwoMLPHead = TwoMLPHead
-- (in_channels, representation_size): flatten, fc6 + ReLU, fc7 + ReLU
function TwoMLPHead:__init(...)
  local o = U.parse("TwoMLPHead", { { "in_channels", U.REQUIRED }, { "representation_size", U.REQUIRED } }, ...)
  self.fc6 = nn.Linear(o.in_channels, o.representation_size)
  self.fc7 = nn.Linear(o.representation_size, o.representation_size)
end
function TwoMLPHead:forward(x)
  x = x:flatten(1)
  return F.relu(self.fc7(F.relu(self.fc6(x))))
end

local FastRCNNPredictor = nn.Module:extend("FastRCNNPredictor")
M.FastRCNNPredictor = FastRCNNPredictor
-- (in_channels, num_classes): class scores [N, num_classes] and box deltas [N, 4 * num_classes]
function FastRCNNPredictor:__init(...)
  local o = U.parse("FastRCNNPredictor", { { "in_channels", U.REQUIRED }, { "num_classes", U.REQUIRED } }, ...)
  self.cls_score = nn.Linear(o.in_channels, o.num_classes)
  self.bbox_pred = nn.Linear(o.in_channels, o.num_classes * 4)
end
function FastRCNNPredictor:forward(x)
  if x:dim() == 4 then
    if x:size(2) ~= 1 or x:size(3) ~= 1 then
      U.errorf("x has the wrong shape, expecting the last two dimensions to be [1,1] instead of [%d, %d]",
        x:size(2), x:size(3))
    end
  end
  x = x:flatten(1)
  return self.cls_score(x), self.bbox_pred(x)
end

-- FastRCNNConvFCHead(input_size {C, H, W}, conv_layers, fc_layers, {norm_layer=nil}): 3x3 convs
-- (+ norm) + ReLU, flatten, Linear + ReLU layers (fasterrcnn_resnet50_fpn_v2's box head)
local FastRCNNConvFCHead = nn.Sequential:extend("FastRCNNConvFCHead")
M.FastRCNNConvFCHead = FastRCNNConvFCHead
function FastRCNNConvFCHead:__init(...)
  local o = U.parse("FastRCNNConvFCHead", { { "input_size", U.REQUIRED }, { "conv_layers", U.REQUIRED },
    { "fc_layers", U.REQUIRED }, { "norm_layer" } }, ...)
  local c, h, w = table.unpack(o.input_size)
  local blocks = {}
  for _, n in ipairs(o.conv_layers) do
    blocks[#blocks + 1] = layers.Conv2dNormActivation(c, n, { norm_layer = o.norm_layer or false })
    c = n
  end
  blocks[#blocks + 1] = nn.Flatten()
  c = c * h * w
  for _, n in ipairs(o.fc_layers) do
    blocks[#blocks + 1] = nn.Linear(c, n)
    blocks[#blocks + 1] = nn.ReLU(true)
    c = n
  end
  nn.Sequential.__init(self, table.unpack(blocks))
  rpn._kaiming_init_convs(self)
end

-- ---- FasterRCNN ----

local FasterRCNN = GeneralizedRCNN:extend("FasterRCNN")
M.FasterRCNN = FasterRCNN

local faster_keys = { { "min_size", 800 }, { "max_size", 1333 }, { "image_mean" }, { "image_std" },
  { "rpn_anchor_generator" }, { "rpn_head" }, { "rpn_pre_nms_top_n_train", 2000 }, { "rpn_pre_nms_top_n_test", 1000 },
  { "rpn_post_nms_top_n_train", 2000 }, { "rpn_post_nms_top_n_test", 1000 }, { "rpn_nms_thresh", 0.7 },
  { "rpn_fg_iou_thresh", 0.7 }, { "rpn_bg_iou_thresh", 0.3 }, { "rpn_batch_size_per_image", 256 },
  { "rpn_positive_fraction", 0.5 }, { "rpn_score_thresh", 0.0 }, { "box_roi_pool" }, { "box_head" },
  { "box_predictor" }, { "box_score_thresh", 0.05 }, { "box_nms_thresh", 0.5 }, { "box_detections_per_img", 100 },
  { "box_fg_iou_thresh", 0.5 }, { "box_bg_iou_thresh", 0.5 }, { "box_batch_size_per_image", 512 },
  { "box_positive_fraction", 0.25 }, { "bbox_reg_weights" }, { "size_divisible", 32 }, { "fixed_size" },
  { "_skip_resize", false } }
M._faster_keys = faster_keys

local function default_anchorgen()
  local sizes, ratios = {}, {}
  for i, s in ipairs({ 32, 64, 128, 256, 512 }) do sizes[i], ratios[i] = { s }, { 0.5, 1.0, 2.0 } end
  return rpn.AnchorGenerator(sizes, ratios)
end

-- FasterRCNN(backbone, num_classes, {min_size=800, max_size=1333, rpn_..., box_..., ...})
function FasterRCNN:__init(backbone, ...)
  local spec = { { "num_classes" } }
  for _, k in ipairs(faster_keys) do spec[#spec + 1] = k end
  local o = U.parse("FasterRCNN", spec, ...)
  if backbone == nil or backbone.out_channels == nil then
    U.error("backbone should contain an attribute out_channels specifying the number of output channels " ..
      "(assumed to be the same for all the levels)")
  end
  if o.rpn_anchor_generator ~= nil and not nn.isinstance(o.rpn_anchor_generator, rpn.AnchorGenerator) then
    U.errorf("rpn_anchor_generator should be of type AnchorGenerator or None instead of %s",
      U.typename(o.rpn_anchor_generator))
  end
  if o.box_roi_pool ~= nil and not nn.isinstance(o.box_roi_pool, { ops_roi.MultiScaleRoIAlign, ops_roi.RoIAlign }) then
    U.errorf("box_roi_pool should be of type MultiScaleRoIAlign or None instead of %s", U.typename(o.box_roi_pool))
  end
  if o.num_classes ~= nil then
    if o.box_predictor ~= nil then U.error("num_classes should be None when box_predictor is specified") end
  elseif o.box_predictor == nil then
    U.error("num_classes should not be None when box_predictor is not specified")
  end
  local out_channels = backbone.out_channels
  local anchor_gen = o.rpn_anchor_generator or default_anchorgen()
  local rpn_head = o.rpn_head or rpn.RPNHead(out_channels, anchor_gen:num_anchors_per_location()[1])
  local the_rpn = rpn.RegionProposalNetwork(anchor_gen, rpn_head, o.rpn_fg_iou_thresh, o.rpn_bg_iou_thresh,
    o.rpn_batch_size_per_image, o.rpn_positive_fraction,
    { training = o.rpn_pre_nms_top_n_train, testing = o.rpn_pre_nms_top_n_test },
    { training = o.rpn_post_nms_top_n_train, testing = o.rpn_post_nms_top_n_test }, o.rpn_nms_thresh,
    { score_thresh = o.rpn_score_thresh })
  local roi_pool = o.box_roi_pool or ops_roi.MultiScaleRoIAlign({ "0", "1", "2", "3" }, 7, 2)
  local box_head = o.box_head
  if box_head == nil then
    local res = roi_pool.output_size[1]
    box_head = TwoMLPHead(out_channels * res * res, 1024)
  end
  local predictor = o.box_predictor or FastRCNNPredictor(1024, o.num_classes)
  local heads = roi_heads.RoIHeads(roi_pool, box_head, predictor, o.box_fg_iou_thresh, o.box_bg_iou_thresh,
    o.box_batch_size_per_image, o.box_positive_fraction, o.bbox_reg_weights, o.box_score_thresh, o.box_nms_thresh,
    o.box_detections_per_img)
  local tr = transform.GeneralizedRCNNTransform(o.min_size, o.max_size, o.image_mean or { 0.485, 0.456, 0.406 },
    o.image_std or { 0.229, 0.224, 0.225 }, { size_divisible = o.size_divisible, fixed_size = o.fixed_size,
      _skip_resize = o._skip_resize })
  GeneralizedRCNN.__init(self, backbone, the_rpn, heads, tr)
end

-- ---- builders ----

-- Pretrained weights come from torch.hub's local cache, as the classification builders' do
-- (tv_models_pretrained.lua): weights= loads the COCO checkpoint, weights_backbone= the ImageNet one.

-- the builders whose COCO_V1 checkpoints predate FrozenBatchNorm2d's eps (torchvision's overwrite_eps)
local EPS_ZERO = { fasterrcnn_resnet50_fpn = true, maskrcnn_resnet50_fpn = true, retinanet_resnet50_fpn = true }

-- a builder's keywords: the weights ones, num_classes, trainable_backbone_layers and the model's
-- (their defaults left nil, so that a builder can tell the keys given)
local function builder_opts(fname, keys, ...)
  local spec = { { "weights" }, { "progress", true }, { "num_classes" }, { "weights_backbone" },
    { "trainable_backbone_layers" }, { "pretrained" }, { "pretrained_backbone" } }
  for _, k in ipairs(keys) do spec[#spec + 1] = { k[1] } end
  if select("#", ...) > 1 or (select("#", ...) == 1 and not U.is_opts((...)) and (...) ~= nil) then
    U.errorf("%s() takes keyword arguments only, as %s({num_classes=2})", fname, fname)
  end
  return U.parse(fname, spec, ...)
end
M._builder_opts = builder_opts

-- torchvision's weights handling at the start of a builder: weights and weights_backbone verified
-- against their enums (pretrained / pretrained_backbone = true mean their defaults), weights_backbone
-- dropped under weights, num_classes from the weights' categories (91 when neither gives it).
-- Returns weights, weights_backbone and whether anything pretrained is loaded.
local function resolve_weights(fname, o, backbone_name)
  local function member(enum, w, legacy)
    if w == false then w = nil end
    if w == nil and legacy then w = enum.DEFAULT end
    return enum:verify(w)
  end
  local w = member(models._builder_weights[fname], o.weights, o.pretrained)
  local wb = member(models.get_model_weights(backbone_name), o.weights_backbone, o.pretrained_backbone)
  if w then
    wb = nil
    local n = #w.meta.categories
    if o.num_classes ~= nil and o.num_classes ~= n then
      U.errorf("The parameter 'num_classes' expected value %d but got %s instead.", n, tostring(o.num_classes))
    end
    o.num_classes = n
  end
  return w, wb, w ~= nil or wb ~= nil
end
M._resolve_weights = resolve_weights

-- the end of a builder: the checkpoint of weights loaded into model
local function load_weights(fname, model, w, o)
  if not w then return model end
  model:load_state_dict(w:get_state_dict({ progress = o.progress, check_hash = true }))
  if EPS_ZERO[fname] and w.name == "COCO_V1" then
    for _, m in ipairs(model:modules()) do
      if nn.isinstance(m, layers.FrozenBatchNorm2d) then m.eps = 0.0 end
    end
  end
  return model
end
M._load_weights = load_weights

-- the ResNet-50 of the v1 builders: FrozenBatchNorm2d when anything pretrained is loaded
local function resnet50_backbone(wb, trained, o)
  return models.resnet50({ weights = wb, progress = o.progress,
    norm_layer = trained and layers.FrozenBatchNorm2d or nn.BatchNorm2d })
end
M._resnet50_backbone = resnet50_backbone

-- the model's keywords of a builder's options
local function model_kw(o, keys)
  local kw = { num_classes = o.num_classes or 91 }
  for _, k in ipairs(keys) do kw[k[1]] = o[k[1]] end
  return kw
end
M._model_kw = model_kw

-- fasterrcnn_resnet50_fpn{weights=nil, progress=true, num_classes=91, weights_backbone=nil,
-- trainable_backbone_layers=nil, ... FasterRCNN's keywords}
function M.fasterrcnn_resnet50_fpn(...)
  local fname = "fasterrcnn_resnet50_fpn"
  local o = builder_opts(fname, faster_keys, ...)
  local w, wb, trained = resolve_weights(fname, o, "resnet50")
  local trainable = backbone_utils._validate_trainable_layers(trained, o.trainable_backbone_layers, 5, 3)
  local backbone = backbone_utils._resnet_fpn_extractor(resnet50_backbone(wb, trained, o), trainable)
  return load_weights(fname, FasterRCNN(backbone, model_kw(o, faster_keys)), w, o)
end

-- fasterrcnn_resnet50_fpn_v2{weights=nil, num_classes=91, weights_backbone=nil, trainable_backbone_layers=nil,
-- ... FasterRCNN's keywords}: BatchNorm2d in the FPN, a 2-conv RPN head, a 4-conv + 1-fc box head
function M.fasterrcnn_resnet50_fpn_v2(...)
  local fname = "fasterrcnn_resnet50_fpn_v2"
  local o = builder_opts(fname, faster_keys, ...)
  local w, wb, trained = resolve_weights(fname, o, "resnet50")
  local kw = model_kw(o, faster_keys)
  return load_weights(fname, FasterRCNN(M._v2_parts(o, kw, wb, trained), kw), w, o)
end

-- the v2 builders' shared parts: a ResNet-50 (weights_backbone wb) + FPN with BatchNorm2d, and in kw
-- a 2-conv RPN head and a 4-conv + 1-fc box head (added to kw); returns the backbone
function M._v2_parts(o, kw, wb, trained)
  local trainable = backbone_utils._validate_trainable_layers(trained, o.trainable_backbone_layers, 5, 3)
  local backbone = backbone_utils._resnet_fpn_extractor(models.resnet50({ weights = wb, progress = o.progress }),
    trainable, { norm_layer = nn.BatchNorm2d })
  kw.rpn_anchor_generator = default_anchorgen()
  kw.rpn_head = rpn.RPNHead(backbone.out_channels, kw.rpn_anchor_generator:num_anchors_per_location()[1],
    { conv_depth = 2 })
  kw.box_head = FastRCNNConvFCHead({ backbone.out_channels, 7, 7 }, { 256, 256, 256, 256 }, { 1024 },
    { norm_layer = nn.BatchNorm2d })
  return backbone
end

-- the MobileNetV3-Large builders: FrozenBatchNorm2d when anything pretrained is loaded, three
-- levels of 5 x 3 anchors, and the builder's own defaults for FasterRCNN's keywords
local function mobilenet_fasterrcnn(fname, defaults, ...)
  local o = builder_opts(fname, faster_keys, ...)
  local w, wb, trained = resolve_weights(fname, o, "mobilenet_v3_large")
  local trainable = backbone_utils._validate_trainable_layers(trained, o.trainable_backbone_layers, 6, 3)
  local backbone = models.mobilenet_v3_large({ weights = wb, progress = o.progress,
    norm_layer = trained and layers.FrozenBatchNorm2d or nn.BatchNorm2d })
  backbone = backbone_utils._mobilenet_extractor(backbone, true, trainable)
  local sizes, ratios = {}, {}
  for i = 1, 3 do sizes[i], ratios[i] = { 32, 64, 128, 256, 512 }, { 0.5, 1.0, 2.0 } end
  local kw = model_kw(o, faster_keys)
  kw.rpn_anchor_generator = rpn.AnchorGenerator(sizes, ratios)
  for k, v in pairs(defaults) do
    if o[k] == nil then kw[k] = v end
  end
  return load_weights(fname, FasterRCNN(backbone, kw), w, o)
end

-- fasterrcnn_mobilenet_v3_large_fpn{weights=nil, num_classes=91, weights_backbone=nil,
-- trainable_backbone_layers=nil, ... FasterRCNN's keywords (rpn_score_thresh defaults to 0.05)}
function M.fasterrcnn_mobilenet_v3_large_fpn(...)
  return mobilenet_fasterrcnn("fasterrcnn_mobilenet_v3_large_fpn", { rpn_score_thresh = 0.05 }, ...)
end

-- fasterrcnn_mobilenet_v3_large_320_fpn{...}: the low-resolution variant (min_size 320, max_size 640,
-- 150 proposals before and after NMS at test time, rpn_score_thresh 0.05)
function M.fasterrcnn_mobilenet_v3_large_320_fpn(...)
  return mobilenet_fasterrcnn("fasterrcnn_mobilenet_v3_large_320_fpn", { min_size = 320, max_size = 640,
    rpn_pre_nms_top_n_test = 150, rpn_post_nms_top_n_test = 150, rpn_score_thresh = 0.05 }, ...)
end

return M
end
