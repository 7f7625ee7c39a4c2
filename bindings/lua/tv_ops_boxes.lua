-- torchvision.ops box functions (boxes as [N, 4] in (x1, y1, x2, y2) unless a format says otherwise):
-- box_area, box_convert, box_iou, generalized/distance/complete_box_iou, clip_boxes_to_image,
-- remove_small_boxes, masks_to_boxes, nms, batched_nms, and the losses generalized/distance/
-- complete_box_iou_loss and sigmoid_focal_loss. All built from tensor ops: they run on any device
-- and the losses are differentiable.
local torch = require "torch"
local U = require "nn_util"
local F = torch.nn.functional

local M = {}

local function tensor(fname, name, v) return U.tensor_arg(fname, name, v) end

-- float16/bfloat16 computed in float32, integers in int64 (torchvision's _upcast)
local function upcast(t)
  if t:is_floating_point() then
    if t.dtype == torch.float32 or t.dtype == torch.float64 then return t end
    return t:float()
  end
  if t.dtype == torch.int32 or t.dtype == torch.int64 then return t end
  return t:long()
end

-- integers as float32 (the losses' _upcast_non_float)
local function upcast_non_float(t)
  if t.dtype == torch.float32 or t.dtype == torch.float64 then return t end
  return t:float()
end

local function col(b, i) return b:select(-1, i) end

function M.box_area(boxes)
  boxes = upcast(tensor("box_area", "boxes", boxes))
  return (col(boxes, 2) - col(boxes, 0)) * (col(boxes, 3) - col(boxes, 1))
end

-- intersection and union of every pair: [N, M] each
local function inter_union(b1, b2)
  local a1, a2 = M.box_area(b1), M.box_area(b2)
  b1, b2 = upcast(b1), upcast(b2)
  local lt = torch.maximum(b1:narrow(1, 0, 2):unsqueeze(1), b2:narrow(1, 0, 2))
  local rb = torch.minimum(b1:narrow(1, 2, 2):unsqueeze(1), b2:narrow(1, 2, 2))
  local wh = (rb - lt):clamp({ min = 0 })
  local inter = col(wh, 0) * col(wh, 1)
  return inter, a1:unsqueeze(1) + a2 - inter
end

function M.box_iou(boxes1, boxes2)
  tensor("box_iou", "boxes1", boxes1); tensor("box_iou", "boxes2", boxes2)
  local inter, union = inter_union(boxes1, boxes2)
  return inter / union
end

-- the smallest box enclosing each pair: its corners [N, M, 2] each
local function enclosing(b1, b2)
  b1, b2 = upcast(b1), upcast(b2)
  local lt = torch.minimum(b1:narrow(1, 0, 2):unsqueeze(1), b2:narrow(1, 0, 2))
  local rb = torch.maximum(b1:narrow(1, 2, 2):unsqueeze(1), b2:narrow(1, 2, 2))
  return lt, rb
end

function M.generalized_box_iou(boxes1, boxes2)
  tensor("generalized_box_iou", "boxes1", boxes1); tensor("generalized_box_iou", "boxes2", boxes2)
  local inter, union = inter_union(boxes1, boxes2)
  local iou = inter / union
  local lt, rb = enclosing(boxes1, boxes2)
  local wh = (rb - lt):clamp({ min = 0 })
  local area = col(wh, 0) * col(wh, 1)
  return iou - (area - union) / area
end

-- IoU and the DIoU penalty (squared centre distance over squared enclosing diagonal) of every pair
local function diou_parts(b1, b2, eps)
  local inter, union = inter_union(b1, b2)
  local iou = inter / union
  local lt, rb = enclosing(b1, b2)
  local wh = (rb - lt):clamp({ min = 0 })
  local diag = col(wh, 0):square() + col(wh, 1):square() + eps
  b1, b2 = upcast(b1), upcast(b2)
  local c1 = (b1:narrow(1, 0, 2) + b1:narrow(1, 2, 2)) / 2
  local c2 = (b2:narrow(1, 0, 2) + b2:narrow(1, 2, 2)) / 2
  local d = c1:unsqueeze(1) - c2
  return iou, (col(d, 0):square() + col(d, 1):square()) / diag
end

function M.distance_box_iou(...)
  local o = U.parse("distance_box_iou", { { "boxes1", U.REQUIRED }, { "boxes2", U.REQUIRED }, { "eps", 1e-7 } }, ...)
  tensor("distance_box_iou", "boxes1", o.boxes1); tensor("distance_box_iou", "boxes2", o.boxes2)
  local iou, penalty = diou_parts(o.boxes1, o.boxes2, o.eps)
  return iou - penalty
end

-- the CIoU aspect term v = 4/pi^2 (atan(w_a/h_a) - atan(w_b/h_b))^2 and its weight alpha (no gradient)
local function ciou_term(wa, ha, wb, hb, iou, eps)
  local v = (torch.atan(wa / ha) - torch.atan(wb / hb)):square() * (4 / math.pi ^ 2)
  local alpha
  do
    local _ <close> = torch.no_grad()
    alpha = v / (1 - iou + v + eps)
  end
  return alpha * v
end

function M.complete_box_iou(...)
  local o = U.parse("complete_box_iou", { { "boxes1", U.REQUIRED }, { "boxes2", U.REQUIRED }, { "eps", 1e-7 } }, ...)
  local b1 = upcast(tensor("complete_box_iou", "boxes1", o.boxes1))
  local b2 = upcast(tensor("complete_box_iou", "boxes2", o.boxes2))
  local iou, penalty = diou_parts(b1, b2, o.eps)
  local w1, h1 = (col(b1, 2) - col(b1, 0)):unsqueeze(1), (col(b1, 3) - col(b1, 1)):unsqueeze(1)
  local w2, h2 = col(b2, 2) - col(b2, 0), col(b2, 3) - col(b2, 1)
  return iou - penalty - ciou_term(w1, h1, w2, h2, iou, o.eps)
end

local fmts = { xyxy = true, xywh = true, cxcywh = true }

-- box_convert(boxes, in_fmt, out_fmt), formats "xyxy", "xywh", "cxcywh"
function M.box_convert(...)
  local o = U.parse("box_convert", { { "boxes", U.REQUIRED }, { "in_fmt", U.REQUIRED }, { "out_fmt", U.REQUIRED } }, ...)
  local boxes = tensor("box_convert", "boxes", o.boxes)
  if not fmts[o.in_fmt] or not fmts[o.out_fmt] then
    U.error("Unsupported Bounding Box Conversions for given in_fmt and out_fmt")
  end
  if o.in_fmt == o.out_fmt then return boxes:clone() end
  local a, b, c, d = col(boxes, 0), col(boxes, 1), col(boxes, 2), col(boxes, 3)
  local x1, y1, x2, y2 = a, b, c, d
  if o.in_fmt == "xywh" then x2, y2 = a + c, b + d
  elseif o.in_fmt == "cxcywh" then x1, y1, x2, y2 = a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d end
  if o.out_fmt == "xyxy" then return torch.stack({ x1, y1, x2, y2 }, -1) end
  if o.out_fmt == "xywh" then return torch.stack({ x1, y1, x2 - x1, y2 - y1 }, -1) end
  return torch.stack({ (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1 }, -1)
end

-- clip_boxes_to_image(boxes, size): size = {height, width}
function M.clip_boxes_to_image(boxes, size)
  tensor("clip_boxes_to_image", "boxes", boxes)
  if type(size) ~= "table" and not (type(size) == "userdata" and size.totable) then
    U.error("clip_boxes_to_image: size must be (height, width)")
  end
  if size.totable then size = size:totable() end
  local h, w = size[1], size[2]
  local shape = boxes.shape:totable()
  local xy = boxes:reshape(-1, 2)
  local x = xy:select(1, 0):clamp(0, w)
  local y = xy:select(1, 1):clamp(0, h)
  return torch.stack({ x, y }, 1):reshape(shape)
end

-- indices (int64) of the boxes whose sides are both at least min_size
function M.remove_small_boxes(boxes, min_size)
  tensor("remove_small_boxes", "boxes", boxes)
  local ws, hs = col(boxes, 2) - col(boxes, 0), col(boxes, 3) - col(boxes, 1)
  local keep = torch.logical_and(ws:ge(min_size), hs:ge(min_size))
  return torch.nonzero(keep):reshape(-1)
end

-- masks [N, H, W] -> float boxes [N, 4] enclosing each mask's nonzero pixels
function M.masks_to_boxes(masks)
  tensor("masks_to_boxes", "masks", masks)
  local n = masks:size(0)
  if masks:numel() == 0 then return torch.zeros(0, 4, { device = masks.device }) end
  local on = masks:ne(0)
  local rows, cols = on:any(2), on:any(1) -- [N, H], [N, W]
  if not on:flatten(1):any(1):all():item() then U.error("masks_to_boxes: a mask has no nonzero pixel") end
  local function span(any)
    local len = any:size(1)
    local idx = torch.arange(len, { device = masks.device, dtype = torch.float32 }):expand(n, len)
    local lo = torch.where(any, idx, torch.full_like(idx, math.huge)):amin(1)
    local hi = torch.where(any, idx, torch.full_like(idx, -1)):amax(1)
    return lo, hi
  end
  local x1, x2 = span(cols)
  local y1, y2 = span(rows)
  return torch.stack({ x1, y1, x2, y2 }, 1)
end

-- ---- non-maximum suppression ----

-- Indices (int64) of the kept boxes, by decreasing score: greedily keeps the best remaining box
-- and drops those whose IoU with it exceeds iou_threshold. Equal scores keep index order.
function M.nms(boxes, scores, iou_threshold)
  tensor("nms", "boxes", boxes); tensor("nms", "scores", scores)
  if boxes:dim() ~= 2 or boxes:size(1) ~= 4 then
    U.errorf("boxes should be a 2d tensor of shape [N, 4], got %s", U.shape_str(boxes))
  end
  if scores:dim() ~= 1 or scores:size(0) ~= boxes:size(0) then
    U.errorf("boxes and scores should have the same number of elements in dimension 0, got %d and %d",
      boxes:size(0), scores:dim() == 1 and scores:size(0) or scores:numel())
  end
  if type(iou_threshold) ~= "number" then U.error("nms: iou_threshold must be a number") end
  local n = boxes:size(0)
  if n == 0 then return torch.zeros(0, { dtype = torch.int64, device = boxes.device }) end
  local _, order = scores:sort({ descending = true, stable = true })
  local b = boxes:detach():index_select(0, order)
  -- only the pairs (i < j, in score order) that overlap too much come to Lua
  local over = torch.triu(M.box_iou(b, b):gt(iou_threshold), 1)
  local pairs_ = torch.nonzero(over):cpu():tolist()
  local suppresses = {}
  for _, p in ipairs(pairs_) do
    local i = p[1] + 1
    local t = suppresses[i]
    if t == nil then t = {}; suppresses[i] = t end
    t[#t + 1] = p[2] + 1
  end
  local removed, keep = {}, {}
  for i = 1, n do
    if not removed[i] then
      keep[#keep + 1] = i - 1
      for _, j in ipairs(suppresses[i] or {}) do removed[j] = true end
    end
  end
  local pos = torch.tensor(keep, { dtype = torch.int64, device = boxes.device })
  return order:index_select(0, pos)
end

-- NMS within each category idxs[i]: the boxes of different categories are moved apart so that
-- they never overlap, then one nms runs.
function M.batched_nms(boxes, scores, idxs, iou_threshold)
  tensor("batched_nms", "boxes", boxes); tensor("batched_nms", "scores", scores); tensor("batched_nms", "idxs", idxs)
  if boxes:numel() == 0 then return torch.zeros(0, { dtype = torch.int64, device = boxes.device }) end
  local b = boxes:detach()
  if b:numel() > (b.device.type == "cpu" and 4000 or 20000) then
    -- many boxes (as torchvision): one nms per category, cheaper than one over all of them
    local keep = torch.zeros(b:size(0), { dtype = torch.bool, device = b.device })
    for _, c in ipairs(torch.unique(idxs):tolist()) do
      local sel = torch.nonzero(idxs:eq(c)):reshape(-1)
      keep:index_fill_(0, sel:index_select(0, M.nms(b:index_select(0, sel), scores:index_select(0, sel), iou_threshold)),
        true)
    end
    local kept = torch.nonzero(keep):reshape(-1)
    local _, order = scores:index_select(0, kept):sort({ descending = true, stable = true })
    return kept:index_select(0, order)
  end
  local offsets = idxs:to(b.dtype) * (b:max() + 1)
  return M.nms(b + offsets:unsqueeze(1), scores, iou_threshold)
end

-- ---- losses ----

local function reduce(loss, reduction)
  if reduction == "none" then return loss end
  if reduction == "sum" then return loss:sum() end
  if reduction == "mean" then
    if loss:numel() == 0 then return loss:sum() end
    return loss:mean()
  end
  U.errorf("Invalid Value for arg 'reduction': '%s \n Supported reduction modes: 'none', 'mean', 'sum'", tostring(reduction))
end

-- elementwise intersection and union of boxes1[i] and boxes2[i], and both unbound into x1, y1, x2, y2
local function pair_inter_union(b1, b2)
  local x1, y1, x2, y2 = col(b1, 0), col(b1, 1), col(b1, 2), col(b1, 3)
  local g1, h1, g2, h2 = col(b2, 0), col(b2, 1), col(b2, 2), col(b2, 3)
  local iw = (torch.minimum(x2, g2) - torch.maximum(x1, g1)):clamp({ min = 0 })
  local ih = (torch.minimum(y2, h2) - torch.maximum(y1, h1)):clamp({ min = 0 })
  local inter = iw * ih
  local union = (x2 - x1) * (y2 - y1) + (g2 - g1) * (h2 - h1) - inter
  return inter, union, { x1, y1, x2, y2 }, { g1, h1, g2, h2 }
end

local loss_spec = { { "boxes1", U.REQUIRED }, { "boxes2", U.REQUIRED }, { "reduction", "none" }, { "eps", 1e-7 } }

local function loss_args(fname, ...)
  local o = U.parse(fname, loss_spec, ...)
  o.boxes1 = upcast_non_float(tensor(fname, "boxes1", o.boxes1))
  o.boxes2 = upcast_non_float(tensor(fname, "boxes2", o.boxes2))
  return o
end

function M.generalized_box_iou_loss(...)
  local o = loss_args("generalized_box_iou_loss", ...)
  local inter, union, p, g = pair_inter_union(o.boxes1, o.boxes2)
  local iou = inter / (union + o.eps)
  local area_c = (torch.maximum(p[3], g[3]) - torch.minimum(p[1], g[1])) *
    (torch.maximum(p[4], g[4]) - torch.minimum(p[2], g[2]))
  local giou = iou - (area_c - union) / (area_c + o.eps)
  return reduce(1 - giou, o.reduction)
end

-- 1 - IoU + centre distance^2 / enclosing diagonal^2, and the IoU
local function diou_loss(o)
  local inter, union, p, g = pair_inter_union(o.boxes1, o.boxes2)
  local iou = inter / (union + o.eps)
  local diag = (torch.maximum(p[3], g[3]) - torch.minimum(p[1], g[1])):square() +
    (torch.maximum(p[4], g[4]) - torch.minimum(p[2], g[2])):square() + o.eps
  local dist = ((p[1] + p[3]) / 2 - (g[1] + g[3]) / 2):square() + ((p[2] + p[4]) / 2 - (g[2] + g[4]) / 2):square()
  return 1 - iou + dist / diag, iou, p, g
end

function M.distance_box_iou_loss(...)
  local o = loss_args("distance_box_iou_loss", ...)
  return reduce((diou_loss(o)), o.reduction)
end

function M.complete_box_iou_loss(...)
  local o = loss_args("complete_box_iou_loss", ...)
  local loss, iou, p, g = diou_loss(o)
  local term = ciou_term(g[3] - g[1], g[4] - g[2], p[3] - p[1], p[4] - p[2], iou, o.eps)
  return reduce(loss + term, o.reduction)
end

-- sigmoid_focal_loss(inputs, targets, {alpha=0.25, gamma=2, reduction="none"}); alpha < 0: no weighting
function M.sigmoid_focal_loss(...)
  local o = U.parse("sigmoid_focal_loss", { { "inputs", U.REQUIRED }, { "targets", U.REQUIRED }, { "alpha", 0.25 },
    { "gamma", 2 }, { "reduction", "none" } }, ...)
  local inputs = tensor("sigmoid_focal_loss", "inputs", o.inputs)
  local targets = tensor("sigmoid_focal_loss", "targets", o.targets)
  local p = torch.sigmoid(inputs)
  local ce = F.binary_cross_entropy_with_logits(inputs, targets, { reduction = "none" })
  local p_t = p * targets + (1 - p) * (1 - targets)
  local loss = ce * (1 - p_t):pow(o.gamma)
  if o.alpha >= 0 then
    loss = (targets * o.alpha + (1 - targets) * (1 - o.alpha)) * loss
  end
  return reduce(loss, o.reduction)
end

return M
