-- torchvision.models.detection.retinanet: RetinaNet, RetinaNetHead (classification and regression
-- heads, focal loss and L1 box loss) and retinanet_resnet50_fpn.
--   train: model(images, targets) -> OrderedDict {classification, bbox_regression}
--   eval:  model(images) -> a list of {boxes, scores, labels} per image
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional
local box_ops = require "tv_ops_boxes"
local layers = require "tv_ops_layers"
local fpn = require "tv_ops_fpn"
local det_utils = require "tv_models_detection_utils"
local transform = require "tv_models_detection_transform"
local rpn = require "tv_models_detection_rpn"

return function(models, backbone_utils, faster_rcnn)

local M = {}

-- [N, A*K, H, W] per level -> [N, sum of H*W*A, K]
local function flatten_levels(maps, k)
  local out = {}
  for i, m in ipairs(maps) do
    local n, h, w = m:size(0), m:size(2), m:size(3)
    out[i] = m:view(n, -1, k, h, w):permute(0, 3, 4, 1, 2):reshape(n, -1, k)
  end
  return torch.cat(out, 1)
end

-- four 3x3 conv (+ norm) + ReLU blocks, N(0, 0.01) weights and zero biases
local function conv_tower(in_channels, norm_layer)
  local convs = {}
  for i = 1, 4 do
    convs[i] = layers.Conv2dNormActivation(in_channels, in_channels, { norm_layer = norm_layer or false })
  end
  local tower = nn.Sequential(table.unpack(convs))
  rpn._normal_init_convs(tower)
  return tower
end

-- ---- classification head ----

local ClsHead = nn.Module:extend("RetinaNetClassificationHead")
M.RetinaNetClassificationHead = ClsHead

-- (in_channels, num_anchors, num_classes, {prior_probability=0.01, norm_layer=nil})
function ClsHead:__init(...)
  local o = U.parse("RetinaNetClassificationHead", { { "in_channels", U.REQUIRED }, { "num_anchors", U.REQUIRED },
    { "num_classes", U.REQUIRED }, { "prior_probability", 0.01 }, { "norm_layer" } }, ...)
  self.conv = conv_tower(o.in_channels, o.norm_layer)
  self.cls_logits = nn.Conv2d(o.in_channels, o.num_anchors * o.num_classes, { kernel_size = 3, stride = 1, padding = 1 })
  nn.init.normal_(self.cls_logits.weight, { std = 0.01 })
  nn.init.constant_(self.cls_logits.bias, -math.log((1 - o.prior_probability) / o.prior_probability))
  self.num_classes, self.num_anchors = o.num_classes, o.num_anchors
  self.BETWEEN_THRESHOLDS = det_utils.Matcher.BETWEEN_THRESHOLDS
end

-- focal loss over the anchors not between the thresholds, / the number of foreground anchors,
-- averaged over the images
function ClsHead:compute_loss(targets, head_outputs, matched_idxs)
  local total
  for i, t in ipairs(targets) do
    local logits, m = head_outputs.cls_logits[i - 1], matched_idxs[i]
    local fg = torch.nonzero(m:ge(0)):reshape(-1)
    local gt = torch.zeros_like(logits)
    local cols = t.labels:index_select(0, m:index_select(0, fg))
    gt:view(-1):index_fill_(0, fg * self.num_classes + cols, 1.0)
    local valid = torch.nonzero(m:ne(self.BETWEEN_THRESHOLDS)):reshape(-1)
    local l = box_ops.sigmoid_focal_loss(logits:index_select(0, valid), gt:index_select(0, valid),
      { reduction = "sum" }) / math.max(1, fg:numel())
    total = total and total + l or l
  end
  return total / #targets
end

function ClsHead:forward(x)
  local maps = {}
  for i, f in ipairs(x) do maps[i] = self.cls_logits(self.conv(f)) end
  return flatten_levels(maps, self.num_classes)
end

-- ---- regression head ----

local RegHead = nn.Module:extend("RetinaNetRegressionHead")
M.RetinaNetRegressionHead = RegHead

-- (in_channels, num_anchors, {norm_layer=nil})
function RegHead:__init(...)
  local o = U.parse("RetinaNetRegressionHead", { { "in_channels", U.REQUIRED }, { "num_anchors", U.REQUIRED },
    { "norm_layer" } }, ...)
  self.conv = conv_tower(o.in_channels, o.norm_layer)
  self.bbox_reg = nn.Conv2d(o.in_channels, o.num_anchors * 4, { kernel_size = 3, stride = 1, padding = 1 })
  nn.init.normal_(self.bbox_reg.weight, { std = 0.01 })
  nn.init.zeros_(self.bbox_reg.bias)
  self.box_coder = det_utils.BoxCoder({ 1.0, 1.0, 1.0, 1.0 })
  self._loss_type = "l1"
end

-- the box loss of the foreground anchors, summed: "l1", "smooth_l1" (beta 1) on the deltas, or
-- "giou" / "diou" / "ciou" on the decoded boxes
local function box_loss(kind, coder, anchors, gt, deltas)
  if kind == "l1" or kind == "smooth_l1" then
    local target = coder:encode_single(gt, anchors)
    if kind == "l1" then return F.l1_loss(deltas, target, { reduction = "sum" }) end
    return F.smooth_l1_loss(deltas, target, { reduction = "sum", beta = 1.0 })
  end
  local boxes = coder:decode_single(deltas, anchors)
  local fn = ({ ciou = box_ops.complete_box_iou_loss, diou = box_ops.distance_box_iou_loss })[kind]
      or box_ops.generalized_box_iou_loss
  return fn(boxes, gt, { reduction = "sum", eps = 1e-7 })
end
M._box_loss = box_loss

function RegHead:compute_loss(targets, head_outputs, anchors, matched_idxs)
  local total
  for i, t in ipairs(targets) do
    local m = matched_idxs[i]
    local fg = torch.nonzero(m:ge(0)):reshape(-1)
    local gt = t.boxes:index_select(0, m:index_select(0, fg))
    local deltas = head_outputs.bbox_regression[i - 1]:index_select(0, fg)
    local l = box_loss(self._loss_type, self.box_coder, anchors[i]:index_select(0, fg), gt, deltas) /
        math.max(1, fg:numel())
    total = total and total + l or l
  end
  return total / math.max(1, #targets)
end

function RegHead:forward(x)
  local maps = {}
  for i, f in ipairs(x) do maps[i] = self.bbox_reg(self.conv(f)) end
  return flatten_levels(maps, 4)
end

-- ---- RetinaNetHead ----

local Head = nn.Module:extend("RetinaNetHead")
M.RetinaNetHead = Head

-- (in_channels, num_anchors, num_classes, {norm_layer=nil})
function Head:__init(...)
  local o = U.parse("RetinaNetHead", { { "in_channels", U.REQUIRED }, { "num_anchors", U.REQUIRED },
    { "num_classes", U.REQUIRED }, { "norm_layer" } }, ...)
  self.classification_head = ClsHead(o.in_channels, o.num_anchors, o.num_classes, { norm_layer = o.norm_layer })
  self.regression_head = RegHead(o.in_channels, o.num_anchors, { norm_layer = o.norm_layer })
end

function Head:compute_loss(targets, head_outputs, anchors, matched_idxs)
  local out = U.OrderedDict.new()
  out.classification = self.classification_head:compute_loss(targets, head_outputs, matched_idxs)
  out.bbox_regression = self.regression_head:compute_loss(targets, head_outputs, anchors, matched_idxs)
  return out
end

function Head:forward(x)
  return { cls_logits = self.classification_head(x), bbox_regression = self.regression_head(x) }
end

-- ---- RetinaNet ----

local RetinaNet = nn.Module:extend("RetinaNet")
M.RetinaNet = RetinaNet

local retina_keys = { { "min_size", 800 }, { "max_size", 1333 }, { "image_mean" }, { "image_std" },
  { "anchor_generator" }, { "head" }, { "proposal_matcher" }, { "score_thresh", 0.05 }, { "nms_thresh", 0.5 },
  { "detections_per_img", 300 }, { "fg_iou_thresh", 0.5 }, { "bg_iou_thresh", 0.4 }, { "topk_candidates", 1000 },
  { "size_divisible", 32 }, { "fixed_size" }, { "_skip_resize", false } }

-- sizes x, x * 2^(1/3), x * 2^(2/3) (truncated) for x = 32 .. 512, ratios 0.5, 1, 2
local function default_anchorgen()
  local sizes, ratios = {}, {}
  for i, x in ipairs({ 32, 64, 128, 256, 512 }) do
    sizes[i] = { x, math.floor(x * 2 ^ (1 / 3)), math.floor(x * 2 ^ (2 / 3)) }
    ratios[i] = { 0.5, 1.0, 2.0 }
  end
  return rpn.AnchorGenerator(sizes, ratios)
end

-- RetinaNet(backbone, num_classes, {min_size=800, ..., score_thresh=0.05, nms_thresh=0.5,
-- detections_per_img=300, fg_iou_thresh=0.5, bg_iou_thresh=0.4, topk_candidates=1000})
function RetinaNet:__init(backbone, ...)
  local spec = { { "num_classes", U.REQUIRED } }
  for _, k in ipairs(retina_keys) do spec[#spec + 1] = k end
  local o = U.parse("RetinaNet", spec, ...)
  if backbone == nil or backbone.out_channels == nil then
    U.error("backbone should contain an attribute out_channels specifying the number of output channels " ..
      "(assumed to be the same for all the levels)")
  end
  self.backbone = backbone
  if o.anchor_generator ~= nil and not nn.isinstance(o.anchor_generator, rpn.AnchorGenerator) then
    U.errorf("anchor_generator should be of type AnchorGenerator or None, instead  got %s",
      U.typename(o.anchor_generator))
  end
  self.anchor_generator = o.anchor_generator or default_anchorgen()
  self.head = o.head or Head(backbone.out_channels, self.anchor_generator:num_anchors_per_location()[1], o.num_classes)
  self.proposal_matcher = o.proposal_matcher or
      det_utils.Matcher(o.fg_iou_thresh, o.bg_iou_thresh, { allow_low_quality_matches = true })
  self.box_coder = det_utils.BoxCoder({ 1.0, 1.0, 1.0, 1.0 })
  self.transform = transform.GeneralizedRCNNTransform(o.min_size, o.max_size, o.image_mean or { 0.485, 0.456, 0.406 },
    o.image_std or { 0.229, 0.224, 0.225 }, { size_divisible = o.size_divisible, fixed_size = o.fixed_size,
      _skip_resize = o._skip_resize })
  self.score_thresh, self.nms_thresh = o.score_thresh, o.nms_thresh
  self.detections_per_img, self.topk_candidates = o.detections_per_img, o.topk_candidates
end

function RetinaNet:compute_loss(targets, head_outputs, anchors)
  local matched = {}
  for i, a in ipairs(anchors) do
    local gt = targets[i].boxes
    if gt:numel() == 0 then
      matched[i] = torch.full({ a:size(0) }, -1, { dtype = torch.int64, device = a.device })
    else
      matched[i] = self.proposal_matcher(box_ops.box_iou(gt, a))
    end
  end
  return self.head:compute_loss(targets, head_outputs, anchors, matched)
end

-- per image and level: the topk_candidates best (anchor, class) scores above score_thresh, decoded
-- and clipped; then NMS per class over the levels and the best detections_per_img
function RetinaNet:postprocess_detections(head_outputs, anchors, image_shapes)
  local detections = {}
  for i, shape in ipairs(image_shapes) do
    local boxes, scores, labels = {}, {}, {}
    for lvl, logits in ipairs(head_outputs.cls_logits) do
      logits = logits[i - 1]
      local deltas, level_anchors = head_outputs.bbox_regression[lvl][i - 1], anchors[i][lvl]
      local k = logits:size(-1)
      local s = torch.sigmoid(logits):flatten()
      local idx = torch.nonzero(s:gt(self.score_thresh)):reshape(-1)
      s = s:index_select(0, idx)
      local top_s, top = s:topk(math.min(self.topk_candidates, idx:numel()))
      idx = idx:index_select(0, top)
      local anchor_idx = torch.div(idx, k, { rounding_mode = "floor" })
      local b = self.box_coder:decode_single(deltas:index_select(0, anchor_idx), level_anchors:index_select(0, anchor_idx))
      boxes[lvl] = box_ops.clip_boxes_to_image(b, shape)
      scores[lvl], labels[lvl] = top_s, idx % k
    end
    local b, s, l = torch.cat(boxes, 0), torch.cat(scores, 0), torch.cat(labels, 0)
    local keep = box_ops.batched_nms(b, s, l, self.nms_thresh)
    keep = keep:narrow(0, 0, math.min(keep:numel(), self.detections_per_img))
    detections[i] = { boxes = b:index_select(0, keep), scores = s:index_select(0, keep), labels = l:index_select(0, keep) }
  end
  return detections
end

function RetinaNet:forward(images, targets)
  local image_list, original_sizes, features
  image_list, targets, original_sizes, features = faster_rcnn._prepare(self, images, targets)
  local feats = features:values()
  local head_outputs = self.head(feats)
  local anchors = self.anchor_generator(image_list, feats)
  if self.training then return self:compute_loss(targets, head_outputs, anchors) end
  -- split the outputs and anchors by level
  local hw = 0
  for _, f in ipairs(feats) do hw = hw + f:size(2) * f:size(3) end
  local a = head_outputs.cls_logits:size(1) // hw
  local per_level = {}
  for i, f in ipairs(feats) do per_level[i] = f:size(2) * f:size(3) * a end
  local split = {}
  for k, v in pairs(head_outputs) do split[k] = v:split(per_level, 1) end
  local split_anchors = {}
  for i, an in ipairs(anchors) do split_anchors[i] = an:split(per_level, 0) end
  local detections = self:postprocess_detections(split, split_anchors, image_list.image_sizes)
  return self.transform:postprocess(detections, image_list.image_sizes, original_sizes)
end

-- retinanet_resnet50_fpn{weights=nil, num_classes=91, weights_backbone=nil, trainable_backbone_layers=nil,
-- ... RetinaNet's keywords}
function M.retinanet_resnet50_fpn(...)
  local fname = "retinanet_resnet50_fpn"
  local o = faster_rcnn._builder_opts(fname, retina_keys, ...)
  local w, wb, trained = faster_rcnn._resolve_weights(fname, o, "resnet50")
  local trainable = backbone_utils._validate_trainable_layers(trained, o.trainable_backbone_layers, 5, 3)
  local backbone = backbone_utils._resnet_fpn_extractor(faster_rcnn._resnet50_backbone(wb, trained, o), trainable,
    { 2, 3, 4 }, fpn.LastLevelP6P7(256, 256))
  return faster_rcnn._load_weights(fname, RetinaNet(backbone, faster_rcnn._model_kw(o, retina_keys)), w, o)
end

-- retinanet_resnet50_fpn_v2{...}: P6 from C5, GroupNorm(32) in the heads, the GIoU box loss
function M.retinanet_resnet50_fpn_v2(...)
  local fname = "retinanet_resnet50_fpn_v2"
  local o = faster_rcnn._builder_opts(fname, retina_keys, ...)
  local w, wb, trained = faster_rcnn._resolve_weights(fname, o, "resnet50")
  local trainable = backbone_utils._validate_trainable_layers(trained, o.trainable_backbone_layers, 5, 3)
  local backbone = backbone_utils._resnet_fpn_extractor(models.resnet50({ weights = wb, progress = o.progress }),
    trainable, { 2, 3, 4 }, fpn.LastLevelP6P7(2048, 256))
  local kw = faster_rcnn._model_kw(o, retina_keys)
  kw.anchor_generator = default_anchorgen()
  kw.head = Head(backbone.out_channels, kw.anchor_generator:num_anchors_per_location()[1], kw.num_classes,
    { norm_layer = function(c) return nn.GroupNorm(32, c) end })
  kw.head.regression_head._loss_type = "giou"
  return faster_rcnn._load_weights(fname, RetinaNet(backbone, kw), w, o)
end

return M
end
