-- torchvision.models.detection._utils: BoxCoder (box <-> regression deltas), Matcher (each
-- prediction's best ground truth by an IoU matrix) and BalancedPositiveNegativeSampler.
local torch = require "torch"
local U = require "nn_util"

local M = {}

local function class(name)
  local c = {}
  c.__index = c
  c.__name = name
  c.__call = function(self, ...) return self:forward(...) end
  return c
end

-- ---- BoxCoder ----

local BoxCoder = class("BoxCoder")
M.BoxCoder = BoxCoder

-- BoxCoder(weights, {bbox_xform_clip=log(1000/16)}): weights (wx, wy, ww, wh) scale the deltas
local function new_box_coder(...)
  local o = U.parse("BoxCoder", { { "weights", U.REQUIRED }, { "bbox_xform_clip", math.log(1000.0 / 16) } }, ...)
  if #o.weights ~= 4 then U.error("BoxCoder: weights must hold 4 numbers (wx, wy, ww, wh)") end
  return setmetatable({ weights = o.weights, bbox_xform_clip = o.bbox_xform_clip }, BoxCoder)
end
setmetatable(BoxCoder, { __call = function(_, ...) return new_box_coder(...) end })

local function widths_centers(b)
  local w, h = b[":, 2"] - b[":, 0"], b[":, 3"] - b[":, 1"]
  return w, h, b[":, 0"] + 0.5 * w, b[":, 1"] + 0.5 * h
end

-- deltas [N, 4] that take proposals [N, 4] to reference_boxes [N, 4]
function BoxCoder:encode_single(reference_boxes, proposals)
  local wx, wy, ww, wh = table.unpack(self.weights)
  proposals = proposals:to(reference_boxes.dtype)
  local pw, ph, px, py = widths_centers(proposals)
  local gw, gh, gx, gy = widths_centers(reference_boxes)
  return torch.stack({ wx * (gx - px) / pw, wy * (gy - py) / ph, ww * torch.log(gw / pw), wh * torch.log(gh / ph) }, 1)
end

-- lists of per-image boxes -> list of per-image deltas
function BoxCoder:encode(reference_boxes, proposals)
  local counts = {}
  for i, b in ipairs(reference_boxes) do counts[i] = b:size(0) end
  local targets = self:encode_single(torch.cat(reference_boxes, 0), torch.cat(proposals, 0))
  return targets:split(counts, 0)
end

-- rel_codes [N, 4k] applied to boxes [N, 4] -> boxes [N, 4k]
function BoxCoder:decode_single(rel_codes, boxes)
  boxes = boxes:to(rel_codes.dtype)
  local wx, wy, ww, wh = table.unpack(self.weights)
  local w, h, cx, cy = widths_centers(boxes)
  local dx, dy = rel_codes[":, 0::4"] / wx, rel_codes[":, 1::4"] / wy
  local dw = torch.clamp(rel_codes[":, 2::4"] / ww, { max = self.bbox_xform_clip })
  local dh = torch.clamp(rel_codes[":, 3::4"] / wh, { max = self.bbox_xform_clip })
  w, h = w:unsqueeze(1), h:unsqueeze(1)
  local px, py = dx * w + cx:unsqueeze(1), dy * h + cy:unsqueeze(1)
  local hw, hh = 0.5 * torch.exp(dw) * w, 0.5 * torch.exp(dh) * h
  return torch.stack({ px - hw, py - hh, px + hw, py + hh }, 2):flatten(1)
end

-- rel_codes for the boxes of all images (a list, concatenated) -> [N, k, 4]
function BoxCoder:decode(rel_codes, boxes)
  local concat = torch.cat(boxes, 0)
  local n = concat:size(0)
  if n > 0 then rel_codes = rel_codes:reshape(n, -1) end
  local pred = self:decode_single(rel_codes, concat)
  if n > 0 then pred = pred:reshape(n, -1, 4) end
  return pred
end

-- ---- Matcher ----

local Matcher = class("Matcher")
M.Matcher = Matcher
Matcher.BELOW_LOW_THRESHOLD = -1
Matcher.BETWEEN_THRESHOLDS = -2

local function new_matcher(...)
  local o = U.parse("Matcher", { { "high_threshold", U.REQUIRED }, { "low_threshold", U.REQUIRED },
    { "allow_low_quality_matches", false } }, ...)
  if o.low_threshold > o.high_threshold then U.error("low_threshold should be <= high_threshold") end
  return setmetatable(o, Matcher)
end
setmetatable(Matcher, { __call = function(_, ...) return new_matcher(...) end })

-- match_quality_matrix [G, P] (ground truths x predictions) -> int64 [P]: the matched ground
-- truth, or -1 (below low_threshold), or -2 (between the thresholds)
function Matcher:forward(q)
  if q:numel() == 0 then
    if q:size(0) == 0 then U.error("No ground-truth boxes available for one of the images during training") end
    U.error("No proposal boxes available for one of the images during training")
  end
  local vals, matches = q:max(0)
  local all = self.allow_low_quality_matches and matches:clone() or nil
  matches = matches:masked_fill(vals:lt(self.low_threshold), Matcher.BELOW_LOW_THRESHOLD)
  matches = matches:masked_fill(torch.logical_and(vals:ge(self.low_threshold), vals:lt(self.high_threshold)),
    Matcher.BETWEEN_THRESHOLDS)
  if all then
    -- each ground truth also keeps the predictions it overlaps best (ties included)
    local best = q:max(1)
    local keep = q:eq(best:unsqueeze(1)):any(0)
    matches = torch.where(keep, all, matches)
  end
  return matches
end

-- ---- BalancedPositiveNegativeSampler ----

local Sampler = class("BalancedPositiveNegativeSampler")
M.BalancedPositiveNegativeSampler = Sampler

local function new_sampler(...)
  local o = U.parse("BalancedPositiveNegativeSampler", { { "batch_size_per_image", U.REQUIRED },
    { "positive_fraction", U.REQUIRED } }, ...)
  return setmetatable(o, Sampler)
end
setmetatable(Sampler, { __call = function(_, ...) return new_sampler(...) end })

local function pick(candidates, n, like)
  local perm = torch.randperm(candidates:numel(), { device = like.device }):narrow(0, 0, n)
  local mask = torch.zeros_like(like, { dtype = torch.uint8 })
  if n > 0 then mask:index_fill_(0, candidates:index_select(0, perm), 1) end
  return mask
end

-- matched_idxs: list of per-image labels (>= 1 positive, 0 negative, -1 ignored) -> two lists
-- of uint8 masks: the sampled positives and the sampled negatives
function Sampler:forward(matched_idxs)
  local pos, neg = {}, {}
  for i, m in ipairs(matched_idxs) do
    local positive = torch.nonzero(m:ge(1)):reshape(-1)
    local negative = torch.nonzero(m:eq(0)):reshape(-1)
    local num_pos = math.min(positive:numel(), math.floor(self.batch_size_per_image * self.positive_fraction))
    local num_neg = math.min(negative:numel(), self.batch_size_per_image - num_pos)
    pos[i], neg[i] = pick(positive, num_pos, m), pick(negative, num_neg, m)
  end
  return pos, neg
end

return M
