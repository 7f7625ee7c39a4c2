-- torchvision.models.detection.roi_heads: RoIHeads (the box branch: sample proposals against the
-- targets, pool their features, classify and refine them; fastrcnn_loss in training,
-- postprocess_detections in eval).
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional
local box_ops = require "tv_ops_boxes"
local det_utils = require "tv_models_detection_utils"

local M = {}

-- class_logits [N, C], box_regression [N, 4C], per-image labels and regression targets ->
-- cross entropy, and smooth L1 (beta 1/9) of the true class's deltas over the positives / N
function M.fastrcnn_loss(class_logits, box_regression, labels, regression_targets)
  labels = torch.cat(labels, 0)
  regression_targets = torch.cat(regression_targets, 0)
  local classification_loss = F.cross_entropy(class_logits, labels)
  local pos = torch.nonzero(labels:gt(0)):reshape(-1)
  local k = box_regression:size(-1) // 4
  local rows = pos * k + labels:index_select(0, pos)
  local picked = box_regression:reshape(class_logits:size(0) * k, 4):index_select(0, rows)
  local box_loss = F.smooth_l1_loss(picked, regression_targets:index_select(0, pos),
    { beta = 1 / 9, reduction = "sum" }) / labels:numel()
  return classification_loss, box_loss
end

local RoIHeads = nn.Module:extend("RoIHeads")
M.RoIHeads = RoIHeads

local R = U.REQUIRED
local spec = { { "box_roi_pool", R }, { "box_head", R }, { "box_predictor", R }, { "fg_iou_thresh", R },
  { "bg_iou_thresh", R }, { "batch_size_per_image", R }, { "positive_fraction", R }, { "bbox_reg_weights" },
  { "score_thresh", R }, { "nms_thresh", R }, { "detections_per_img", R }, { "mask_roi_pool" }, { "mask_head" },
  { "mask_predictor" }, { "keypoint_roi_pool" }, { "keypoint_head" }, { "keypoint_predictor" } }

function RoIHeads:__init(...)
  local o = U.parse("RoIHeads", spec, ...)
  for _, k in ipairs({ "mask_roi_pool", "mask_head", "mask_predictor", "keypoint_roi_pool", "keypoint_head",
    "keypoint_predictor" }) do
    if o[k] ~= nil then
      U.errorf("RoIHeads: %s is not supported (nnrepl has the box branch of Faster R-CNN only, no Mask or " ..
        "Keypoint R-CNN heads)", k)
    end
  end
  self.box_similarity = box_ops.box_iou
  self.proposal_matcher = det_utils.Matcher(o.fg_iou_thresh, o.bg_iou_thresh, { allow_low_quality_matches = false })
  self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(o.batch_size_per_image, o.positive_fraction)
  self.box_coder = det_utils.BoxCoder(o.bbox_reg_weights or { 10.0, 10.0, 5.0, 5.0 })
  self.box_roi_pool = o.box_roi_pool
  self.box_head = o.box_head
  self.box_predictor = o.box_predictor
  self.score_thresh, self.nms_thresh, self.detections_per_img = o.score_thresh, o.nms_thresh, o.detections_per_img
end

function RoIHeads:has_mask() return false end
function RoIHeads:has_keypoint() return false end

function RoIHeads:check_targets(targets)
  if targets == nil then U.error("targets should not be None") end
  for _, t in ipairs(targets) do
    if t.boxes == nil then U.error("Every element of targets should have a boxes key") end
    if t.labels == nil then U.error("Every element of targets should have a labels key") end
  end
end

-- per image: the matched ground truth index (clamped at 0) and the label of each proposal
-- (0 background, -1 ignored)
function RoIHeads:assign_targets_to_proposals(proposals, gt_boxes, gt_labels)
  local matched, labels = {}, {}
  for i, p in ipairs(proposals) do
    if gt_boxes[i]:numel() == 0 then
      matched[i] = torch.zeros(p:size(0), { dtype = torch.int64, device = p.device })
      labels[i] = torch.zeros(p:size(0), { dtype = torch.int64, device = p.device })
    else
      local idx = self.proposal_matcher(self.box_similarity(gt_boxes[i], p))
      matched[i] = idx:clamp({ min = 0 })
      local l = gt_labels[i]:index_select(0, matched[i]):to(torch.int64)
      l = l:masked_fill(idx:eq(det_utils.Matcher.BELOW_LOW_THRESHOLD), 0)
      labels[i] = l:masked_fill(idx:eq(det_utils.Matcher.BETWEEN_THRESHOLDS), -1)
    end
  end
  return matched, labels
end

-- per image, the indices of the sampled positives and negatives
function RoIHeads:subsample(labels)
  local pos, neg = self.fg_bg_sampler(labels)
  local out = {}
  for i = 1, #labels do out[i] = torch.nonzero(torch.logical_or(pos[i]:ne(0), neg[i]:ne(0))):reshape(-1) end
  return out
end

function RoIHeads:add_gt_proposals(proposals, gt_boxes)
  local out = {}
  for i, p in ipairs(proposals) do out[i] = torch.cat({ p, gt_boxes[i] }, 0) end
  return out
end

-- the sampled proposals (ground truths added), their matched indices, labels and regression targets
function RoIHeads:select_training_samples(proposals, targets)
  self:check_targets(targets)
  local dtype = proposals[1].dtype
  local gt_boxes, gt_labels = {}, {}
  for i, t in ipairs(targets) do gt_boxes[i], gt_labels[i] = t.boxes:to(dtype), t.labels end
  proposals = self:add_gt_proposals(proposals, gt_boxes)
  local matched, labels = self:assign_targets_to_proposals(proposals, gt_boxes, gt_labels)
  local sampled = self:subsample(labels)
  local matched_gt = {}
  for i = 1, #proposals do
    local s = sampled[i]
    proposals[i], labels[i], matched[i] = proposals[i]:index_select(0, s), labels[i]:index_select(0, s),
        matched[i]:index_select(0, s)
    local gt = gt_boxes[i]
    if gt:numel() == 0 then gt = torch.zeros(1, 4, { dtype = dtype, device = gt.device }) end
    matched_gt[i] = gt:index_select(0, matched[i])
  end
  local regression_targets = self.box_coder:encode(matched_gt, proposals)
  return proposals, matched, labels, regression_targets
end

-- per image: boxes, scores and labels of the detections (one per proposal and foreground class
-- above score_thresh, clipped, small boxes dropped, NMS per class, the best detections_per_img)
function RoIHeads:postprocess_detections(class_logits, box_regression, proposals, image_shapes)
  local num_classes = class_logits:size(-1)
  local counts = {}
  for i, p in ipairs(proposals) do counts[i] = p:size(0) end
  local pred_boxes = self.box_coder:decode(box_regression, proposals):split(counts, 0)
  local pred_scores = F.softmax(class_logits, -1):split(counts, 0)
  local all_boxes, all_scores, all_labels = {}, {}, {}
  for i = 1, #proposals do
    local boxes = box_ops.clip_boxes_to_image(pred_boxes[i], image_shapes[i])
    local scores = pred_scores[i]
    local labels = torch.arange(num_classes, { device = scores.device }):view(1, -1):expand_as(scores)
    boxes = boxes[":, 1:"]:reshape(-1, 4)
    scores = scores[":, 1:"]:reshape(-1)
    labels = labels[":, 1:"]:reshape(-1)
    local function take(keep)
      boxes, scores, labels = boxes:index_select(0, keep), scores:index_select(0, keep), labels:index_select(0, keep)
    end
    take(torch.nonzero(scores:gt(self.score_thresh)):reshape(-1))
    take(box_ops.remove_small_boxes(boxes, 1e-2))
    local keep = box_ops.batched_nms(boxes, scores, labels, self.nms_thresh)
    take(keep:narrow(0, 0, math.min(keep:numel(), self.detections_per_img)))
    all_boxes[i], all_scores[i], all_labels[i] = boxes, scores, labels
  end
  return all_boxes, all_scores, all_labels
end

local float_types = { [torch.float32] = true, [torch.float64] = true, [torch.float16] = true }

-- forward(features, proposals, image_shapes, targets) -> detections (eval), losses (training)
function RoIHeads:forward(features, proposals, image_shapes, targets)
  if targets ~= nil then
    self:check_targets(targets)
    for _, t in ipairs(targets) do
      if not float_types[t.boxes.dtype] then
        U.errorf("target boxes must of float type, instead got %s", tostring(t.boxes.dtype))
      end
      if t.labels.dtype ~= torch.int64 then
        U.errorf("target labels must of int64 type, instead got %s", tostring(t.labels.dtype))
      end
    end
  end
  local labels, regression_targets
  if self.training then
    proposals, _, labels, regression_targets = self:select_training_samples(proposals, targets)
  end
  local box_features = self.box_roi_pool(features, proposals, image_shapes)
  box_features = self.box_head(box_features)
  local class_logits, box_regression = self.box_predictor(box_features)
  local result, losses = {}, {}
  if self.training then
    losses.loss_classifier, losses.loss_box_reg = M.fastrcnn_loss(class_logits, box_regression, labels,
      regression_targets)
  else
    local boxes, scores, lbls = self:postprocess_detections(class_logits, box_regression, proposals, image_shapes)
    for i = 1, #boxes do result[i] = { boxes = boxes[i], labels = lbls[i], scores = scores[i] } end
  end
  return result, losses
end

return M
