-- The detection tutorial's COCO-style box AP (scripts/tutorials/vision_v2/detection/coco_eval.lua)
-- on cases worked out by hand: matching in score order, the 101-point interpolated precision,
-- IoU thresholds, crowd boxes, several images and classes.
local T = ...
local torch = require "torch"
local root = debug.getinfo(1, "S").source:match("^@(.*)tests/lua/[^/]*$") or "./"
package.path = root .. "scripts/tutorials/vision_v2/?.lua;" .. package.path
local coco_eval = require "detection.coco_eval"

local function target(boxes, labels, crowd)
  return {boxes = torch.tensor(boxes, {dtype = torch.float32}):view(-1, 4), labels = torch.tensor(labels, {dtype = torch.int64}),
    iscrowd = torch.tensor(crowd or (function() local z = {} for i = 1, #labels do z[i] = 0 end return z end)(),
      {dtype = torch.int64})}
end
local function output(boxes, scores, labels)
  return {boxes = torch.tensor(boxes, {dtype = torch.float32}):view(-1, 4), scores = torch.tensor(scores),
    labels = torch.tensor(labels, {dtype = torch.int64})}
end

T.test("one image: a hit, a miss, a hit of IoU 5/6", function()
  local ev = coco_eval.CocoEvaluator()
  ev:update(target({{0, 0, 10, 10}, {20, 20, 30, 30}}, {1, 1}),
    output({{0, 0, 10, 10}, {50, 50, 60, 60}, {20, 20, 30, 32}}, {0.9, 0.8, 0.7}, {1, 1, 1}))
  local s = ev:accumulate()
  -- thresholds .5 ... .8 (7 of them) match the third box: precision 1 up to recall .5 (51 of the
  -- 101 points), then 2/3; at .85, .9, .95 recall stops at .5
  local hit, miss = (51 + 50 * 2 / 3) / 101, 51 / 101
  T.near(s[2], hit, 1e-12, "AP50")
  T.near(s[3], hit, 1e-12, "AP75")
  T.near(s[1], (7 * hit + 3 * miss) / 10, 1e-12, "AP@[.5:.95]")
end)

T.test("crowd boxes: a detection inside one is ignored, not a false positive", function()
  local gt_boxes, dt = {{0, 0, 10, 10}, {40, 40, 80, 80}}, output({{0, 0, 10, 10}, {50, 50, 60, 60}}, {0.9, 0.95}, {1, 1})
  local ev = coco_eval.CocoEvaluator()
  ev:update(target(gt_boxes, {1, 1}, {0, 1}), dt)
  T.near(ev:accumulate()[1], 1.0, 1e-12)
  -- the same box not crowd: the higher-scored detection misses it (IoU 1/16), the other finds g1:
  -- recall 0 then .5, precision 0 then .5 -> .5 at the 51 recall points up to .5, 0 above
  local ev2 = coco_eval.CocoEvaluator()
  ev2:update(target(gt_boxes, {1, 1}, {0, 0}), dt)
  T.near(ev2:accumulate()[1], 0.5 * 51 / 101, 1e-12)
end)

T.test("several images and classes", function()
  local ev = coco_eval.CocoEvaluator()
  -- class 1: its only box in image A is found with score .6; image B has a false detection at .9
  -- class 2: one box in image B, never detected; class 3: detections only (no ground truth: left out)
  ev:update(target({{0, 0, 10, 10}}, {1}), output({{0, 0, 10, 10}, {0, 0, 5, 5}}, {0.6, 0.99}, {1, 3}))
  ev:update(target({{5, 5, 15, 15}}, {2}), output({{30, 30, 40, 40}}, {0.9}, {1}))
  local s = ev:accumulate()
  -- class 1: fp then tp: recall 0 then 1, precision 0 then .5 -> .5 at every recall point; class 2: 0
  T.near(s[1], (0.5 + 0) / 2, 1e-12)
  T.near(s[2], 0.25, 1e-12)
  -- a second detection on an already matched box is a false positive
  local ev2 = coco_eval.CocoEvaluator()
  ev2:update(target({{0, 0, 10, 10}}, {1}), output({{0, 0, 10, 10}, {0, 0, 10, 10}}, {0.9, 0.8}, {1, 1}))
  T.near(ev2:accumulate()[1], 1.0, 1e-12, "the duplicate comes after recall 1: it lowers no interpolated precision")
  local ev3 = coco_eval.CocoEvaluator()
  ev3:update(target({{0, 0, 10, 10}, {20, 0, 30, 10}}, {1, 1}), output({{0, 0, 10, 10}, {0, 0, 10, 10}, {20, 0, 30, 10}},
    {0.9, 0.8, 0.7}, {1, 1, 1}))
  T.near(ev3:accumulate()[1], (51 + 50 * 2 / 3) / 101, 1e-12, "the duplicate between the two hits")
end)

T.test("no ground truth: -1, and the summary lines", function()
  local ev = coco_eval.CocoEvaluator()
  ev:update(target({}, {}), output({{0, 0, 1, 1}}, {0.5}, {1}))
  T.eq(ev:accumulate(), {-1, -1, -1})
  local ev2 = coco_eval.CocoEvaluator()
  ev2:update(target({{0, 0, 10, 10}}, {1}), output({{0, 0, 10, 10}}, {0.5}, {1}))
  local lines = {}
  local p = print
  print = function(s) lines[#lines + 1] = s end
  local ok, err = pcall(ev2.summarize, ev2)
  print = p
  assert(ok, err)
  T.eq(lines, {"IoU metric: bbox",
    " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 1.000",
    " Average Precision  (AP) @[ IoU=0.50      | area=   all | maxDets=100 ] = 1.000",
    " Average Precision  (AP) @[ IoU=0.75      | area=   all | maxDets=100 ] = 1.000"})
end)

if torch.cuda.is_available() then
  T.test("cuda: outputs on the GPU", function()
    local ev = coco_eval.CocoEvaluator()
    local o = output({{0, 0, 10, 10}}, {0.5}, {1})
    for k, v in pairs(o) do o[k] = v:to("cuda") end
    ev:update(target({{0, 0, 10, 10}}, {1}), o)
    T.near(ev:accumulate()[1], 1.0, 1e-12)
  end)
else
  T.skip("no CUDA device", 1)
end
