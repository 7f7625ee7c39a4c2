-- torchvision.models.detection.anchor_utils.AnchorGenerator and .rpn (RPNHead,
-- RegionProposalNetwork, concat_box_prediction_layers): anchors at every feature map position,
-- the proposals they give (top-n per level, clipped, NMS per level) and the RPN's two losses.
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional
local box_ops = require "tv_ops_boxes"
local layers = require "tv_ops_layers"
local det_utils = require "tv_models_detection_utils"

local M = {}

-- ---- AnchorGenerator ----

local AnchorGenerator = nn.Module:extend("AnchorGenerator")
M.AnchorGenerator = AnchorGenerator

-- (sizes={{128, 256, 512}}, aspect_ratios={{0.5, 1.0, 2.0}}): one list of sizes and one of
-- aspect ratios per feature map
function AnchorGenerator:__init(...)
  local o = U.parse("AnchorGenerator", { { "sizes", { { 128, 256, 512 } } }, { "aspect_ratios", { { 0.5, 1.0, 2.0 } } } },
    ...)
  local sizes, ratios = o.sizes, o.aspect_ratios
  if type(sizes[1]) ~= "table" then
    local s = {}
    for i, v in ipairs(sizes) do s[i] = { v } end
    sizes = s
  end
  if type(ratios[1]) ~= "table" then -- one list of ratios for every level
    local r = {}
    for i = 1, #sizes do r[i] = ratios end
    ratios = r
  end
  if #sizes ~= #ratios then
    U.errorf("AnchorGenerator: sizes and aspect_ratios should have the same number of elements, got %d and %d",
      #sizes, #ratios)
  end
  self.sizes, self.aspect_ratios = sizes, ratios
  local cells = {}
  for i = 1, #sizes do cells[i] = self:generate_anchors(sizes[i], ratios[i]) end
  self.cell_anchors = cells
end

-- zero-centred anchors [#ratios * #scales, 4], rounded: w = s / sqrt(r), h = s * sqrt(r)
function AnchorGenerator:generate_anchors(scales, aspect_ratios, dtype, device)
  local opts = { dtype = dtype or torch.float32, device = device }
  local s = torch.tensor(scales, opts)
  local h_ratios = torch.sqrt(torch.tensor(aspect_ratios, opts))
  local w_ratios = 1 / h_ratios
  local ws = (w_ratios:unsqueeze(1) * s:unsqueeze(0)):reshape(-1)
  local hs = (h_ratios:unsqueeze(1) * s:unsqueeze(0)):reshape(-1)
  return (torch.stack({ -ws, -hs, ws, hs }, 1) / 2):round()
end

function AnchorGenerator:num_anchors_per_location()
  local out = {}
  for i = 1, #self.sizes do out[i] = #self.sizes[i] * #self.aspect_ratios[i] end
  return out
end

-- per level, the cell anchors shifted to every position: [H * W * A, 4], row-major positions
function AnchorGenerator:grid_anchors(grid_sizes, strides, dtype, device)
  if #grid_sizes ~= #self.cell_anchors then
    U.error("Anchors should be Tuple[Tuple[int]] because each feature map could potentially have different " ..
      "sizes and aspect ratios. There needs to be a match between the number of feature maps passed and the " ..
      "number of sizes / aspect_ratios specified.")
  end
  local out = {}
  for i, g in ipairs(grid_sizes) do
    local base = self.cell_anchors[i]:to({ dtype = dtype, device = device })
    local opts = { dtype = torch.int64, device = device }
    local sy = torch.arange(g[1], opts) * strides[i][1]
    local sx = torch.arange(g[2], opts) * strides[i][2]
    local yy, xx = torch.meshgrid(sy, sx, { indexing = "ij" })
    xx, yy = xx:reshape(-1), yy:reshape(-1)
    local shifts = torch.stack({ xx, yy, xx, yy }, 1)
    out[i] = (shifts:view(-1, 1, 4) + base:view(1, -1, 4)):reshape(-1, 4)
  end
  return out
end

-- forward(image_list, feature_maps) -> one [sum over levels of H * W * A, 4] tensor per image
function AnchorGenerator:forward(image_list, feature_maps)
  local ih, iw = image_list.tensors:size(-2), image_list.tensors:size(-1)
  local grids, strides = {}, {}
  for i, f in ipairs(feature_maps) do
    grids[i] = { f:size(-2), f:size(-1) }
    strides[i] = { ih // grids[i][1], iw // grids[i][2] }
  end
  local f1 = feature_maps[1]
  local all = torch.cat(self:grid_anchors(grids, strides, f1.dtype, f1.device), 0)
  local out = {}
  for i = 1, #image_list.image_sizes do out[i] = all end
  return out
end

function AnchorGenerator:__tostring() return "AnchorGenerator()" end

-- ---- RPNHead ----

-- kaiming_normal_ (fan_out, relu) weights and zero biases for every Conv2d of module
function M._kaiming_init_convs(module)
  for _, m in ipairs(module:modules()) do
    if nn.isinstance(m, nn.Conv2d) then
      nn.init.kaiming_normal_(m.weight, { mode = "fan_out", nonlinearity = "relu" })
      if m.bias ~= nil then nn.init.zeros_(m.bias) end
    end
  end
end

-- N(0, 0.01) weights and zero biases for every Conv2d of module (the detection heads' init)
function M._normal_init_convs(module)
  for _, m in ipairs(module:modules()) do
    if nn.isinstance(m, nn.Conv2d) then
      nn.init.normal_(m.weight, { std = 0.01 })
      if m.bias ~= nil then nn.init.constant_(m.bias, 0) end
    end
  end
end

local RPNHead = nn.Module:extend("RPNHead")
M.RPNHead = RPNHead

-- (in_channels, num_anchors, {conv_depth=1}): a 3x3 conv + ReLU, then per anchor an objectness
-- logit and 4 box deltas
function RPNHead:__init(...)
  local o = U.parse("RPNHead", { { "in_channels", U.REQUIRED }, { "num_anchors", U.REQUIRED }, { "conv_depth", 1 } },
    ...)
  local convs = {}
  for i = 1, o.conv_depth do
    convs[i] = layers.Conv2dNormActivation(o.in_channels, o.in_channels, { kernel_size = 3, norm_layer = false })
  end
  self.conv = nn.Sequential(table.unpack(convs))
  self.cls_logits = nn.Conv2d(o.in_channels, o.num_anchors, { kernel_size = 1, stride = 1 })
  self.bbox_pred = nn.Conv2d(o.in_channels, o.num_anchors * 4, { kernel_size = 1, stride = 1 })
  M._normal_init_convs(self)
end

-- list of feature maps -> list of logits [N, A, H, W], list of deltas [N, 4A, H, W]
function RPNHead:forward(x)
  local logits, deltas = {}, {}
  for i, f in ipairs(x) do
    local t = self.conv(f)
    logits[i], deltas[i] = self.cls_logits(t), self.bbox_pred(t)
  end
  return logits, deltas
end

-- [N, A*C, H, W] -> [N, H*W*A, C]
local function permute_and_flatten(layer, n, c, h, w)
  return layer:view(n, -1, c, h, w):permute(0, 3, 4, 1, 2):reshape(n, -1, c)
end
M.permute_and_flatten = function(layer, n, a, c, h, w) return permute_and_flatten(layer, n, c, h, w) end

-- per-level class maps and box maps -> [N * total anchors, C], [N * total anchors, 4], in the
-- anchors' order (image, level, position, anchor)
function M.concat_box_prediction_layers(box_cls, box_regression)
  local cls, reg = {}, {}
  for i, c in ipairs(box_cls) do
    local r = box_regression[i]
    local n, axc, h, w = c:size(0), c:size(1), c:size(2), c:size(3)
    local a = r:size(1) // 4
    cls[i] = permute_and_flatten(c, n, axc // a, h, w)
    reg[i] = permute_and_flatten(r, n, 4, h, w)
  end
  return torch.cat(cls, 1):flatten(0, -2), torch.cat(reg, 1):reshape(-1, 4)
end

-- ---- RegionProposalNetwork ----

local RPN = nn.Module:extend("RegionProposalNetwork")
M.RegionProposalNetwork = RPN

local function train_test(fname, name, v)
  if type(v) ~= "table" or v.training == nil or v.testing == nil then
    U.errorf("%s: %s must be a table {training=n, testing=n}", fname, name)
  end
  return { training = v.training, testing = v.testing }
end

-- (anchor_generator, head, fg_iou_thresh, bg_iou_thresh, batch_size_per_image, positive_fraction,
--  pre_nms_top_n={training=, testing=}, post_nms_top_n={training=, testing=}, nms_thresh, {score_thresh=0})
function RPN:__init(...)
  local R = U.REQUIRED
  local o = U.parse("RegionProposalNetwork", { { "anchor_generator", R }, { "head", R }, { "fg_iou_thresh", R },
    { "bg_iou_thresh", R }, { "batch_size_per_image", R }, { "positive_fraction", R }, { "pre_nms_top_n", R },
    { "post_nms_top_n", R }, { "nms_thresh", R }, { "score_thresh", 0.0 } }, ...)
  self.anchor_generator = o.anchor_generator
  self.head = o.head
  self.box_coder = det_utils.BoxCoder({ 1.0, 1.0, 1.0, 1.0 })
  self.box_similarity = box_ops.box_iou
  self.proposal_matcher = det_utils.Matcher(o.fg_iou_thresh, o.bg_iou_thresh, { allow_low_quality_matches = true })
  self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(o.batch_size_per_image, o.positive_fraction)
  self._pre_nms_top_n = train_test("RegionProposalNetwork", "pre_nms_top_n", o.pre_nms_top_n)
  self._post_nms_top_n = train_test("RegionProposalNetwork", "post_nms_top_n", o.post_nms_top_n)
  self.nms_thresh, self.score_thresh, self.min_size = o.nms_thresh, o.score_thresh, 1e-3
end

function RPN:pre_nms_top_n() return self.training and self._pre_nms_top_n.training or self._pre_nms_top_n.testing end
function RPN:post_nms_top_n() return self.training and self._post_nms_top_n.training or self._post_nms_top_n.testing end

-- per image: labels (1 foreground, 0 background, -1 ignored) and the matched ground-truth boxes
function RPN:assign_targets_to_anchors(anchors, targets)
  local labels, matched = {}, {}
  for i, a in ipairs(anchors) do
    local gt = targets[i].boxes
    if gt:numel() == 0 then
      matched[i] = torch.zeros(a.shape, { dtype = a.dtype, device = a.device })
      labels[i] = torch.zeros(a:size(0), { dtype = torch.float32, device = a.device })
    else
      local idx = self.proposal_matcher(self.box_similarity(gt, a))
      matched[i] = gt:index_select(0, idx:clamp({ min = 0 }))
      local l = idx:ge(0):to(torch.float32)
      l = l:masked_fill(idx:eq(det_utils.Matcher.BELOW_LOW_THRESHOLD), 0.0)
      labels[i] = l:masked_fill(idx:eq(det_utils.Matcher.BETWEEN_THRESHOLDS), -1.0)
    end
  end
  return labels, matched
end

-- indices [N, sum of top-n] of the pre_nms_top_n best anchors of each level
function RPN:_get_top_n_idx(objectness, num_anchors_per_level)
  local r, offset = {}, 0
  for i, ob in ipairs(objectness:split(num_anchors_per_level, 1)) do
    local n = ob:size(1)
    local _, idx = ob:topk(math.min(self:pre_nms_top_n(), n), 1)
    r[i] = idx + offset
    offset = offset + n
  end
  return torch.cat(r, 1)
end

-- proposals [N, A, 4], objectness [N * A] -> per image the kept boxes and their probabilities
function RPN:filter_proposals(proposals, objectness, image_shapes, num_anchors_per_level)
  local n = proposals:size(0)
  objectness = objectness:detach():reshape(n, -1)
  local lv = {}
  for i, k in ipairs(num_anchors_per_level) do
    lv[i] = torch.full({ k }, i - 1, { dtype = torch.int64, device = proposals.device })
  end
  local levels = torch.cat(lv, 0):reshape(1, -1):expand_as(objectness)
  local top = self:_get_top_n_idx(objectness, num_anchors_per_level)
  objectness = objectness:gather(1, top)
  levels = levels:gather(1, top)
  proposals = proposals:gather(1, top:unsqueeze(2):expand(-1, -1, 4))
  local prob = torch.sigmoid(objectness)
  local final_boxes, final_scores = {}, {}
  for i = 1, n do
    local boxes = box_ops.clip_boxes_to_image(proposals[i - 1], image_shapes[i])
    local scores, lvl = prob[i - 1], levels[i - 1]
    local keep = box_ops.remove_small_boxes(boxes, self.min_size)
    boxes, scores, lvl = boxes:index_select(0, keep), scores:index_select(0, keep), lvl:index_select(0, keep)
    keep = torch.nonzero(scores:ge(self.score_thresh)):reshape(-1)
    boxes, scores, lvl = boxes:index_select(0, keep), scores:index_select(0, keep), lvl:index_select(0, keep)
    keep = box_ops.batched_nms(boxes, scores, lvl, self.nms_thresh)
    keep = keep:narrow(0, 0, math.min(keep:numel(), self:post_nms_top_n()))
    final_boxes[i], final_scores[i] = boxes:index_select(0, keep), scores:index_select(0, keep)
  end
  return final_boxes, final_scores
end

-- the objectness loss (binary cross entropy) and the box loss (smooth L1, beta 1/9) over
-- the sampled anchors
function RPN:compute_loss(objectness, pred_bbox_deltas, labels, regression_targets)
  local pos, neg = self.fg_bg_sampler(labels)
  local pos_inds = torch.nonzero(torch.cat(pos, 0)):reshape(-1)
  local neg_inds = torch.nonzero(torch.cat(neg, 0)):reshape(-1)
  local inds = torch.cat({ pos_inds, neg_inds }, 0)
  objectness = objectness:flatten()
  local all_labels = torch.cat(labels, 0)
  local targets = torch.cat(regression_targets, 0)
  local box_loss = F.smooth_l1_loss(pred_bbox_deltas:index_select(0, pos_inds), targets:index_select(0, pos_inds),
    { beta = 1 / 9, reduction = "sum" }) / inds:numel()
  local obj_loss = F.binary_cross_entropy_with_logits(objectness:index_select(0, inds), all_labels:index_select(0, inds))
  return obj_loss, box_loss
end

-- forward(images: ImageList, features: OrderedDict or list, targets) -> boxes per image, losses
function RPN:forward(images, features, targets)
  local feats = {}
  local mt = getmetatable(features)
  if mt and mt._order then
    for _, kv in ipairs(features:items()) do feats[#feats + 1] = kv[2] end
  else
    feats = features
  end
  local objectness, deltas = self.head(feats)
  local anchors = self.anchor_generator(images, feats)
  local per_level = {}
  for i, o in ipairs(objectness) do per_level[i] = o:size(1) * o:size(2) * o:size(3) end
  objectness, deltas = M.concat_box_prediction_layers(objectness, deltas)
  local proposals = self.box_coder:decode(deltas:detach(), anchors):view(#anchors, -1, 4)
  local boxes = self:filter_proposals(proposals, objectness, images.image_sizes, per_level)
  local losses = {}
  if self.training then
    if targets == nil then U.error("targets should not be None") end
    local labels, matched = self:assign_targets_to_anchors(anchors, targets)
    local regression_targets = self.box_coder:encode(matched, anchors)
    losses.loss_objectness, losses.loss_rpn_box_reg = self:compute_loss(objectness, deltas, labels, regression_targets)
  end
  return boxes, losses
end

return M
