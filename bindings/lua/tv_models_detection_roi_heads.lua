-- torchvision.models.detection.roi_heads: RoIHeads (the box branch: sample proposals against the
-- targets, pool their features, classify and refine them; fastrcnn_loss in training,
-- postprocess_detections in eval; Mask R-CNN's mask branch: maskrcnn_loss, maskrcnn_inference,
-- paste_masks_in_image).
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional
local box_ops = require "tv_ops_boxes"
local det_utils = require "tv_models_detection_utils"
local ops_roi = require "tv_ops_roi"

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
  for _, k in ipairs({ "keypoint_roi_pool", "keypoint_head", "keypoint_predictor" }) do
    if o[k] ~= nil then U.errorf("RoIHeads: %s is not supported (nnrepl has no Keypoint R-CNN)", k) end
  end
  self.box_similarity = box_ops.box_iou
  self.proposal_matcher = det_utils.Matcher(o.fg_iou_thresh, o.bg_iou_thresh, { allow_low_quality_matches = false })
  self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(o.batch_size_per_image, o.positive_fraction)
  self.box_coder = det_utils.BoxCoder(o.bbox_reg_weights or { 10.0, 10.0, 5.0, 5.0 })
  self.box_roi_pool = o.box_roi_pool
  self.box_head = o.box_head
  self.box_predictor = o.box_predictor
  self.score_thresh, self.nms_thresh, self.detections_per_img = o.score_thresh, o.nms_thresh, o.detections_per_img
  self.mask_roi_pool, self.mask_head, self.mask_predictor = o.mask_roi_pool, o.mask_head, o.mask_predictor
end

function RoIHeads:has_mask()
  return self.mask_roi_pool ~= nil and self.mask_head ~= nil and self.mask_predictor ~= nil
end
function RoIHeads:has_keypoint() return false end

function RoIHeads:check_targets(targets)
  if targets == nil then U.error("targets should not be None") end
  for _, t in ipairs(targets) do
    if t.boxes == nil then U.error("Every element of targets should have a boxes key") end
    if t.labels == nil then U.error("Every element of targets should have a labels key") end
    if self:has_mask() and t.masks == nil then U.error("Every element of targets should have a masks key") end
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
  local labels, regression_targets, matched
  if self.training then
    proposals, matched, labels, regression_targets = self:select_training_samples(proposals, targets)
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
  if self:has_mask() then self:_mask_branch(features, proposals, image_shapes, targets, matched, labels, result, losses) end
  return result, losses
end

-- ---- Mask R-CNN ----

-- the ground-truth masks [G, H, W] cropped to boxes [P, 4] of their matched ground truth and
-- resized to M x M (roi_align)
function M.project_masks_on_boxes(gt_masks, boxes, matched_idxs, m)
  local rois = torch.cat({ matched_idxs:to(boxes.dtype):unsqueeze(1), boxes }, 1)
  return ops_roi.roi_align(gt_masks:unsqueeze(1):to(rois.dtype), rois, { m, m }, 1.0):select(1, 0)
end

-- binary cross entropy between the mask logits of each positive's class and its projected mask
function M.maskrcnn_loss(mask_logits, proposals, gt_masks, gt_labels, mask_matched_idxs)
  local m = mask_logits:size(-1)
  local labels, targets = {}, {}
  for i, idx in ipairs(mask_matched_idxs) do
    labels[i] = gt_labels[i]:index_select(0, idx)
    targets[i] = M.project_masks_on_boxes(gt_masks[i], proposals[i], idx, m)
  end
  labels, targets = torch.cat(labels, 0), torch.cat(targets, 0)
  if targets:numel() == 0 then return mask_logits:sum() * 0 end
  local n, c = mask_logits:size(0), mask_logits:size(1)
  local rows = torch.arange(n, { device = labels.device }) * c + labels
  local picked = mask_logits:reshape(n * c, m, m):index_select(0, rows)
  return F.binary_cross_entropy_with_logits(picked, targets)
end

-- per image, the mask probabilities [K, 1, M, M] of each detection's class
function M.maskrcnn_inference(x, labels)
  local prob = x:sigmoid()
  local counts = {}
  for i, l in ipairs(labels) do counts[i] = l:size(0) end
  local all = torch.cat(labels, 0)
  local n, c = x:size(0), x:size(1)
  local rows = torch.arange(n, { device = all.device }) * c + all
  prob = prob:reshape(n * c, x:size(2), x:size(3)):index_select(0, rows):unsqueeze(1)
  return prob:split(counts, 0)
end

-- masks [K, 1, M, M] of boxes [K, 4] pasted into [K, 1, H, W] images (each mask padded by one
-- pixel, its box grown to match, resized bilinearly to the box's integer size)
function M.paste_masks_in_image(masks, boxes, img_shape, padding)
  padding = padding or 1
  local m = masks:size(-1)
  local scale = (m + 2 * padding) / m
  masks = F.pad(masks, { padding, padding, padding, padding })
  local w_half, h_half = (boxes[":, 2"] - boxes[":, 0"]) * 0.5 * scale, (boxes[":, 3"] - boxes[":, 1"]) * 0.5 * scale
  local xc, yc = (boxes[":, 2"] + boxes[":, 0"]) * 0.5, (boxes[":, 3"] + boxes[":, 1"]) * 0.5
  local ib = torch.stack({ xc - w_half, yc - h_half, xc + w_half, yc + h_half }, 1):to(torch.int64):tolist()
  local im_h, im_w = img_shape[1], img_shape[2]
  local out = {}
  for i, b in ipairs(ib) do
    local w, h = math.max(b[3] - b[1] + 1, 1), math.max(b[4] - b[2] + 1, 1)
    local mask = F.interpolate(masks[i - 1]:unsqueeze(0), { size = { h, w }, mode = "bilinear", align_corners = false })[0][0]
    local im = torch.zeros(im_h, im_w, { dtype = mask.dtype, device = mask.device })
    local x0, x1 = math.max(b[1], 0), math.min(b[3] + 1, im_w)
    local y0, y1 = math.max(b[2], 0), math.min(b[4] + 1, im_h)
    if x1 > x0 and y1 > y0 then
      im:narrow(0, y0, y1 - y0):narrow(1, x0, x1 - x0):copy_(
        mask:narrow(0, y0 - b[2], y1 - y0):narrow(1, x0 - b[1], x1 - x0))
    end
    out[i] = im
  end
  if #out == 0 then return torch.zeros(0, 1, im_h, im_w, { dtype = masks.dtype, device = masks.device }) end
  return torch.stack(out, 0):unsqueeze(1)
end

-- training: mask loss of the positive proposals; eval: each detection's mask probabilities
function RoIHeads:_mask_branch(features, proposals, image_shapes, targets, matched, labels, result, losses)
  local mask_proposals, pos_matched = {}, {}
  if self.training then
    for i, p in ipairs(proposals) do
      local pos = torch.nonzero(labels[i]:gt(0)):reshape(-1)
      mask_proposals[i], pos_matched[i] = p:index_select(0, pos), matched[i]:index_select(0, pos)
    end
  else
    for i, r in ipairs(result) do mask_proposals[i] = r.boxes end
  end
  local x = self.mask_roi_pool(features, mask_proposals, image_shapes)
  local mask_logits = self.mask_predictor(self.mask_head(x))
  if self.training then
    local gt_masks, gt_labels = {}, {}
    for i, t in ipairs(targets) do gt_masks[i], gt_labels[i] = t.masks, t.labels end
    losses.loss_mask = M.maskrcnn_loss(mask_logits, mask_proposals, gt_masks, gt_labels, pos_matched)
  else
    local lbls = {}
    for i, r in ipairs(result) do lbls[i] = r.labels end
    for i, p in ipairs(M.maskrcnn_inference(mask_logits, lbls)) do result[i].masks = p end
  end
end

return M
