-- A small COCO-style box evaluator in place of pycocotools' COCOeval (bbox, all areas, at most
-- 100 detections per image): AP@[.5:.95], AP50 and AP75, with COCO's rules: per image and class
-- the detections in score order each take the unmatched ground truth of highest IoU at or above
-- the threshold (crowd boxes, IoU = intersection / detection area, can take several and are
-- ignored, as are the detections they take); per class, precision is made monotone and read at
-- the 101 recall points 0, 0.01, ..., 1. The classes are those of the ground truth (as
-- COCOeval's categories): detections of other classes count nowhere.
local torch = require "torch"

local M = {}
M.iou_thrs = {}
for i = 0, 9 do M.iou_thrs[i + 1] = 0.5 + 0.05 * i end
local REC_THRS, MAX_DETS = 101, 100

local Evaluator = {}
Evaluator.__index = Evaluator
M.CocoEvaluator = Evaluator
setmetatable(Evaluator, {__call = function(_) return setmetatable({images = {}}, Evaluator) end})

local function rows(t) return t and t:tolist() or {} end

-- one image: the target ({boxes = N x 4 XYXY, labels, iscrowd}) and the model's output
-- ({boxes, scores, labels})
function Evaluator:update(target, output)
  local iscrowd = target.iscrowd and target.iscrowd:tolist() or {}
  self.images[#self.images + 1] = {
    gt_boxes = rows(target.boxes:double()), gt_labels = rows(target.labels), gt_crowd = iscrowd,
    dt_boxes = rows(output.boxes:double()), dt_scores = rows(output.scores:double()), dt_labels = rows(output.labels)}
end

local function iou(d, g, crowd)
  local iw = math.min(d[3], g[3]) - math.max(d[1], g[1])
  local ih = math.min(d[4], g[4]) - math.max(d[2], g[2])
  if iw <= 0 or ih <= 0 then return 0 end
  local inter = iw * ih
  local ad = (d[3] - d[1]) * (d[4] - d[2])
  local union = crowd and ad or ad + (g[3] - g[1]) * (g[4] - g[2]) - inter
  return union > 0 and inter / union or 0
end

-- image im, class c: its detections (top 100 by score) with, per IoU threshold, matched / ignored
local function match(im, c)
  local gts, dts = {}, {}
  for i, l in ipairs(im.gt_labels) do
    if l == c then gts[#gts + 1] = {box = im.gt_boxes[i], ignore = (im.gt_crowd[i] or 0) ~= 0} end
  end
  for i, l in ipairs(im.dt_labels) do
    if l == c then dts[#dts + 1] = {box = im.dt_boxes[i], score = im.dt_scores[i]} end
  end
  -- the ground truth to keep first, then the ignored; detections by score (stable)
  for i, g in ipairs(gts) do g.order = i end
  table.sort(gts, function(a, b) if a.ignore ~= b.ignore then return not a.ignore end return a.order < b.order end)
  for i, d in ipairs(dts) do d.order = i end
  table.sort(dts, function(a, b) if a.score ~= b.score then return a.score > b.score end return a.order < b.order end)
  for i = #dts, MAX_DETS + 1, -1 do dts[i] = nil end
  for _, d in ipairs(dts) do d.matched, d.ignored = {}, {} end
  for t, thr in ipairs(M.iou_thrs) do
    local taken = {}
    for _, d in ipairs(dts) do
      local best, m = math.min(thr, 1 - 1e-10), nil
      for gi, g in ipairs(gts) do
        if not (taken[gi] and not g.ignore) then
          if m and not gts[m].ignore and g.ignore then break end
          local v = iou(d.box, g.box, g.ignore)
          if v >= best then best, m = v, gi end
        end
      end
      if m then
        taken[m] = true
        d.matched[t], d.ignored[t] = true, gts[m].ignore
      end
    end
  end
  local npig = 0
  for _, g in ipairs(gts) do if not g.ignore then npig = npig + 1 end end
  return dts, npig
end

-- precision at the 101 recall points for one class and threshold, or nil without ground truth
local function class_precision(dts, npig, t)
  if npig == 0 then return nil end
  table.sort(dts, function(a, b) if a.score ~= b.score then return a.score > b.score end return a.seq < b.seq end)
  local rc, pr = {}, {}
  local tp, fp = 0, 0
  for _, d in ipairs(dts) do
    if not d.ignored[t] then
      if d.matched[t] then tp = tp + 1 else fp = fp + 1 end
    end
    rc[#rc + 1] = tp / npig
    pr[#pr + 1] = tp / (tp + fp + 2.220446049250313e-16)
  end
  for i = #pr - 1, 1, -1 do pr[i] = math.max(pr[i], pr[i + 1]) end
  local q, pi = {}, 1
  for r = 1, REC_THRS do
    local thr = (r - 1) / (REC_THRS - 1)
    while pi <= #rc and rc[pi] < thr do pi = pi + 1 end -- the first recall >= thr
    q[r] = pi <= #rc and pr[pi] or 0
  end
  return q
end

-- {AP, AP50, AP75} (-1 when no class has ground truth); self.stats keeps them
function Evaluator:accumulate()
  local classes, seen = {}, {}
  for _, im in ipairs(self.images) do
    for _, l in ipairs(im.gt_labels) do if not seen[l] then seen[l] = true; classes[#classes + 1] = l end end
  end
  table.sort(classes)
  self.precision = {} -- [t][class] = list of 101 precisions
  for t = 1, #M.iou_thrs do self.precision[t] = {} end
  for _, c in ipairs(classes) do
    local all, npig, seq = {}, 0, 0
    for _, im in ipairs(self.images) do
      local dts, n = match(im, c)
      npig = npig + n
      for _, d in ipairs(dts) do seq = seq + 1; d.seq = seq; all[#all + 1] = d end
    end
    for t = 1, #M.iou_thrs do self.precision[t][c] = class_precision(all, npig, t) or false end
  end
  local function mean(ts)
    local s, n = 0, 0
    for _, t in ipairs(ts) do
      for _, q in pairs(self.precision[t]) do
        if q then for _, v in ipairs(q) do s, n = s + v, n + 1 end end
      end
    end
    return n > 0 and s / n or -1
  end
  self.stats = {mean({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}), mean({1}), mean({6})}
  return self.stats
end

-- the lines COCOeval.summarize() prints first, for these three numbers
function Evaluator:summarize()
  if not self.stats then self:accumulate() end
  print("IoU metric: bbox")
  local fmt = " Average Precision  (AP) @[ IoU=%-9s | area=   all | maxDets=100 ] = %0.3f"
  print(string.format(fmt, "0.50:0.95", self.stats[1]))
  print(string.format(fmt, "0.50", self.stats[2]))
  print(string.format(fmt, "0.75", self.stats[3]))
end

return M
