-- torchvision.models.detection (Faster R-CNN): the transform's resize / normalize / batching and
-- box mapping, anchors, the box coder, Matcher and sampler against hand-computed values; the
-- full model's losses, training steps, detections, state_dict layout and errors; the same on CUDA.
local T = ...
local tv = require "torchvision"
local D = tv.models.detection
local nn = torch.nn
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local no_hub = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "hub_dir.lua")

local MEAN, STD = { 0.485, 0.456, 0.406 }, { 0.229, 0.224, 0.225 }

local function near_list(got, want, tol, msg)
  local ok = #got == #want
  for i = 1, math.min(#got, #want) do
    if type(want[i]) == "table" then
      for j = 1, #want[i] do ok = ok and math.abs(got[i][j] - want[i][j]) <= tol end
    else
      ok = ok and math.abs(got[i] - want[i]) <= tol
    end
  end
  return T.check(ok, (msg or "values") .. ": got " .. T.show(got) .. ", want " .. T.show(want))
end

-- ---- transform ----

T.test("transform: resize, normalize, batch, boxes", function()
  local tr = D.transform.GeneralizedRCNNTransform(32, 64, MEAN, STD)
  tr:eval()
  local imgs = { torch.full({ 3, 64, 80 }, 0.5), torch.full({ 3, 50, 60 }, 0.25) }
  local targets = { { boxes = torch.tensor({ { 8.0, 16.0, 40.0, 48.0 } }), labels = torch.tensor({ 1 }) },
    { boxes = torch.tensor({ { 10.0, 5.0, 30.0, 50.0 } }), labels = torch.tensor({ 2 }) } }
  local il, t2 = tr(imgs, targets)
  -- 64x80: scale min(32/64, 64/80) = 0.5 -> 32x40. 50x60: scale float32(32/50) = 0.63999998...,
  -- floor(50 * s) = 31, floor(60 * s) = 38 (torchvision's float32 scale)
  T.eq(il.image_sizes, { { 32, 40 }, { 31, 38 } })
  T.eq(il.tensors.shape:totable(), { 2, 3, 32, 64 }) -- padded to multiples of 32
  for c = 0, 2 do
    T.near(il.tensors[0][c][5][7]:item(), (0.5 - MEAN[c + 1]) / STD[c + 1], 1e-5)
    T.near(il.tensors[1][c][30][37]:item(), (0.25 - MEAN[c + 1]) / STD[c + 1], 1e-5)
  end
  T.eq(il.tensors[0][":, :, 40:"]:abs():sum():item(), 0.0, "padding is zero")
  T.eq(il.tensors[1][":, 31:, :"]:abs():sum():item(), 0.0)
  T.eq(il.tensors[1][":, :, 38:"]:abs():sum():item(), 0.0)
  near_list(t2[1].boxes:tolist(), { { 4, 8, 20, 24 } }, 1e-5, "boxes resized")
  near_list(t2[2].boxes:tolist(), { { 10 * 38 / 60, 5 * 31 / 50, 30 * 38 / 60, 50 * 31 / 50 } }, 1e-4)
  T.check(targets[1].boxes[0][0]:item() == 8.0, "the caller's targets are not changed")
  T.check(t2[1].labels == targets[1].labels, "other target entries are kept")
  -- postprocess maps boxes back to the original sizes
  local res = tr:postprocess({ { boxes = torch.tensor({ { 4.0, 8.0, 20.0, 24.0 } }) },
    { boxes = torch.tensor({ { 3.8, 3.1, 19.0, 15.5 } }) } }, il.image_sizes, { { 64, 80 }, { 50, 60 } })
  near_list(res[1].boxes:tolist(), { { 8, 16, 40, 48 } }, 1e-5, "postprocess")
  near_list(res[2].boxes:tolist(), { { 3.8 * 60 / 38, 3.1 * 50 / 31, 19 * 60 / 38, 15.5 * 50 / 31 } }, 1e-4)
  -- max_size caps the long side: 20x100 with min 32, max 64 -> scale float32(0.64) -> 12x63
  local il2 = tr({ torch.rand(3, 20, 100) })
  T.eq(il2.image_sizes, { { 12, 63 } })
  T.eq(il2.tensors.shape:totable(), { 1, 3, 32, 64 })
  -- integer boxes come out float32
  local _, t3 = tr({ torch.rand(3, 64, 80) }, { { boxes = torch.tensor({ { 2, 4, 6, 8 } }) } })
  T.eq(t3[1].boxes.dtype, torch.float32)
  T.eq(D.transform.resize_boxes(torch.ones(1, 4, { dtype = torch.float64 }), { 2, 2 }, { 3, 3 }).dtype, torch.float64)
  near_list(t3[1].boxes:tolist(), { { 1, 2, 3, 4 } }, 1e-6)
  -- training picks one of min_size's values
  local trt = D.GeneralizedRCNNTransform({ 16, 24 }, 1000, MEAN, STD, { size_divisible = 8 })
  trt:train()
  local seen = {}
  for _ = 1, 20 do
    local il3 = trt({ torch.rand(3, 40, 40) })
    seen[il3.image_sizes[1][1]] = true
    T.check(il3.tensors:size(2) % 8 == 0)
  end
  T.check(seen[16] and seen[24] and not seen[40], "min_size chosen at random in training")
  trt:eval()
  T.eq(trt({ torch.rand(3, 40, 40) }).image_sizes, { { 24, 24 } }, "eval uses the last min_size")
  T.check(tostring(tr):find("Resize(min_size=(32,), max_size=64, mode='bilinear')", 1, true) ~= nil)
end)

T.test("transform errors", function()
  local tr = D.GeneralizedRCNNTransform(32, 64, MEAN, STD)
  T.raises(function() tr({ torch.rand(64, 80) }) end,
    "images is expected to be a list of 3d tensors of shape [C, H, W], got torch.Size([64, 80])")
  T.raises(function() tr({ torch.ones(3, 8, 8, { dtype = torch.uint8 }) }) end,
    "Expected input images to be of floating type (in range [0, 1]), but found type torch.uint8 instead")
end)

-- ---- anchors ----

-- plain-Lua anchors: per position (row-major), per ratio, per size, the rounded base box shifted
local function ref_anchors(sizes, ratios, gh, gw, sh, sw)
  local base = {}
  for _, r in ipairs(ratios) do
    for _, s in ipairs(sizes) do
      local hr = math.sqrt(r)
      local w, h = s / hr, s * hr
      local function rnd(v) return v >= 0 and math.floor(v + 0.5) or -math.floor(-v + 0.5) end
      base[#base + 1] = { rnd(-w / 2), rnd(-h / 2), rnd(w / 2), rnd(h / 2) }
    end
  end
  local out = {}
  for y = 0, gh - 1 do
    for x = 0, gw - 1 do
      for _, b in ipairs(base) do
        out[#out + 1] = { b[1] + x * sw, b[2] + y * sh, b[3] + x * sw, b[4] + y * sh }
      end
    end
  end
  return out
end

T.test("AnchorGenerator", function()
  local ag = D.anchor_utils.AnchorGenerator({ { 16 } }, { { 0.5, 1.0, 2.0 } })
  near_list(ag.cell_anchors[1]:tolist(), { { -11, -6, 11, 6 }, { -8, -8, 8, 8 }, { -6, -11, 6, 11 } }, 0,
    "base anchors by hand")
  T.eq(ag:num_anchors_per_location(), { 3 })
  local il = D.image_list.ImageList(torch.zeros(2, 3, 32, 48), { { 32, 48 }, { 30, 40 } })
  local anchors = ag(il, { torch.zeros(2, 8, 2, 3) })
  T.eq(#anchors, 2)
  T.eq(anchors[1].shape:totable(), { 18, 4 })
  near_list(anchors[1]:tolist(), ref_anchors({ 16 }, { 0.5, 1.0, 2.0 }, 2, 3, 16, 16), 0)
  T.check(torch.equal(anchors[1], anchors[2]))
  -- sizes as a flat list: one size per level, the same ratios for every level
  local ag1 = D.AnchorGenerator({ 16, 32 }, { 0.5, 1.0 })
  T.eq(ag1.sizes, { { 16 }, { 32 } }); T.eq(ag1.aspect_ratios, { { 0.5, 1.0 }, { 0.5, 1.0 } })
  T.eq(ag1:num_anchors_per_location(), { 2, 2 })
  -- two levels, two sizes per level, different strides
  local ag2 = D.AnchorGenerator({ { 8, 16 }, { 32, 64 } }, { { 1.0, 2.0 }, { 0.5, 1.0 } })
  T.eq(ag2:num_anchors_per_location(), { 4, 4 })
  local a2 = ag2(D.image_list.ImageList(torch.zeros(1, 3, 16, 32), { { 16, 32 } }),
    { torch.zeros(1, 4, 4, 8), torch.zeros(1, 4, 2, 4) })[1]
  local want = ref_anchors({ 8, 16 }, { 1.0, 2.0 }, 4, 8, 4, 4)
  for _, a in ipairs(ref_anchors({ 32, 64 }, { 0.5, 1.0 }, 2, 4, 8, 8)) do want[#want + 1] = a end
  near_list(a2:tolist(), want, 0, "two levels")
  T.raises(function() ag2(D.image_list.ImageList(torch.zeros(1, 3, 16, 32), { { 16, 32 } }), { torch.zeros(1, 4, 4, 8) }) end,
    "~There needs to be a match between the number of feature maps passed and the number of sizes")
end)

-- ---- box coder, matcher, sampler ----

T.test("BoxCoder", function()
  local bc = D._utils.BoxCoder({ 10.0, 10.0, 5.0, 5.0 })
  local props = torch.tensor({ { 0.0, 0.0, 10.0, 10.0 }, { 5.0, 5.0, 25.0, 15.0 } })
  local refs = torch.tensor({ { 1.0, 2.0, 11.0, 22.0 }, { 5.0, 5.0, 25.0, 15.0 } })
  local d = bc:encode({ refs }, { props })
  T.eq(#d, 1)
  -- centres (5, 5) -> (6, 12), sizes 10x10 -> 10x20: dx = 10 * 1/10, dy = 10 * 7/10, dw = 0, dh = 5 log 2
  near_list(d[1]:tolist(), { { 1, 7, 0, 5 * math.log(2) }, { 0, 0, 0, 0 } }, 1e-5, "encode by hand")
  local back = bc:decode(d[1], { props })
  T.eq(back.shape:totable(), { 2, 1, 4 })
  near_list(back:reshape(-1, 4):tolist(), refs:tolist(), 1e-4, "decode(encode) round trip")
  -- random boxes, deltas for 3 classes at once
  torch.manual_seed(1)
  local p = torch.rand(5, 2) * 50
  local boxes = torch.cat({ p, p + torch.rand(5, 2) * 30 + 1 }, 1)
  local deltas = torch.randn(5, 12) * 0.3
  local dec = bc:decode_single(deltas, boxes)
  T.eq(dec.shape:totable(), { 5, 12 })
  local re = bc:encode_single(dec[":, 4:8"], boxes)
  T.check(torch.allclose(re, deltas[":, 4:8"], { atol = 1e-4 }), "encode(decode) round trip")
  -- dw, dh are clipped at log(1000/16)
  local big = bc:decode_single(torch.tensor({ { 0.0, 0.0, 100.0, 100.0 } }), torch.tensor({ { 0.0, 0.0, 2.0, 2.0 } }))
  near_list(big:tolist(), { { 1 - 1000 / 16, 1 - 1000 / 16, 1 + 1000 / 16, 1 + 1000 / 16 } }, 1e-3, "clip")
end)

T.test("Matcher", function()
  local q = torch.tensor({ { 0.9, 0.4, 0.1, 0.2 }, { 0.3, 0.6, 0.2, 0.25 } })
  local m = D._utils.Matcher(0.7, 0.3)
  T.eq(m(q):tolist(), { 0, -2, -1, -1 }, "thresholds")
  T.eq(m(q).dtype, torch.int64)
  local lq = D._utils.Matcher(0.7, 0.3, { allow_low_quality_matches = true })
  T.eq(lq(q):tolist(), { 0, 1, -1, -1 }, "each ground truth keeps its best prediction")
  -- a best match below the low threshold is kept too, ties all kept
  local q2 = torch.tensor({ { 0.9, 0.1, 0.1 }, { 0.05, 0.2, 0.2 } })
  T.eq(lq(q2):tolist(), { 0, 1, 1 })
  T.eq(m(q2):tolist(), { 0, -1, -1 })
  T.raises(function() m(torch.zeros(0, 3)) end, "No ground-truth boxes available for one of the images during training")
  T.raises(function() m(torch.zeros(2, 0)) end, "No proposal boxes available for one of the images during training")
  T.raises(function() D._utils.Matcher(0.3, 0.7) end, "low_threshold should be <= high_threshold")
end)

T.test("BalancedPositiveNegativeSampler", function()
  torch.manual_seed(3)
  local s = D._utils.BalancedPositiveNegativeSampler(4, 0.5)
  local labels = torch.tensor({ 1, 2, 1, 0, 0, 0, 0, -1, -1 })
  for _ = 1, 5 do
    local pos, neg = s({ labels, torch.tensor({ 1, 0, 0, 0, 0, -1 }) })
    T.eq(pos[1].dtype, torch.uint8)
    T.eq(pos[1]:sum():item(), 2); T.eq(neg[1]:sum():item(), 2)
    T.eq(torch.logical_and(pos[1]:ne(0), labels:lt(1)):sum():item(), 0, "positives are foreground")
    T.eq(torch.logical_and(neg[1]:ne(0), labels:ne(0)):sum():item(), 0, "negatives are background")
    -- one positive only: the rest of the batch is negatives
    T.eq(pos[2]:tolist(), { 1, 0, 0, 0, 0, 0 }); T.eq(neg[2]:sum():item(), 3); T.eq(neg[2][5]:item(), 0)
  end
  local pos = s({ torch.tensor({ -1, -1 }) })
  T.eq(pos[1]:sum():item(), 0)
end)

T.test("batched_nms over many boxes (one nms per category)", function()
  torch.manual_seed(4)
  for _, n in ipairs({ 300, 1500 }) do -- 1500 boxes take the per-category path
    local p = torch.rand(n, 2) * 200
    local b = torch.cat({ p, p + torch.rand(n, 2) * 60 + 1 }, 1)
    local s, idx = torch.rand(n), torch.randint(0, 6, { n })
    -- reference: categories moved apart so that they never overlap, then one nms
    local apart = b + (idx:to(torch.float32) * 1000):unsqueeze(1)
    T.check(torch.equal(tv.ops.batched_nms(b, s, idx, 0.5), tv.ops.nms(apart, s, 0.5)), "n = " .. n)
  end
end)

-- ---- losses and postprocessing on hand-made inputs ----

local function softplus(x) return math.log(1 + math.exp(x)) end
local function smooth_l1(d, beta) d = math.abs(d); return d < beta and 0.5 * d * d / beta or d - 0.5 * beta end

T.test("fastrcnn_loss by hand and by finite differences", function()
  local f64 = { dtype = torch.float64 }
  -- 3 proposals, 3 classes; labels 2, 0, 1
  local logits = torch.tensor({ { 0.5, 1.0, -1.0 }, { 2.0, 0.0, 0.0 }, { 0.0, 0.3, 0.1 } }, f64)
  local reg = torch.linspace(-0.5, 0.6, 36, f64):view(3, 12)
  local labels = { torch.tensor({ 2, 0 }), torch.tensor({ 1 }) }
  local targets = { torch.tensor({ { 0.1, -0.2, 0.0, 0.3 }, { 0, 0, 0, 0 } }, f64), torch.tensor({ { 0.05, 0.0, -0.1, 0.2 } }, f64) }
  local cls, box = D.roi_heads.fastrcnn_loss(logits, reg, labels, targets)
  local l, want_cls = logits:tolist(), 0
  for i, y in ipairs({ 2, 0, 1 }) do
    local lse = math.log(math.exp(l[i][1]) + math.exp(l[i][2]) + math.exp(l[i][3]))
    want_cls = want_cls + (lse - l[i][y + 1]) / 3
  end
  T.near(cls:item(), want_cls, 1e-12, "cross entropy")
  -- box loss: the deltas of the true class of the positives (proposal 1 class 2, proposal 3 class 1) / 3
  local r, want_box = reg:tolist(), 0
  local t1, t3 = { 0.1, -0.2, 0.0, 0.3 }, { 0.05, 0.0, -0.1, 0.2 }
  for j = 1, 4 do
    want_box = want_box + smooth_l1(r[1][8 + j] - t1[j], 1 / 9) + smooth_l1(r[3][4 + j] - t3[j], 1 / 9)
  end
  T.near(box:item(), want_box / 3, 1e-12, "smooth L1 of the true class's deltas")
  gradcheck("fastrcnn_loss", function(a, b)
    local c, bl = D.roi_heads.fastrcnn_loss(a, b, labels, targets)
    return torch.stack({ c, bl })
  end, { logits, reg })
end)

T.test("RPN compute_loss by hand", function()
  local head = D.RPNHead(4, 1)
  local rpn = D.RegionProposalNetwork(D.AnchorGenerator({ { 16 } }, { { 1.0 } }), head, 0.7, 0.3, 256, 0.5,
    { training = 10, testing = 10 }, { training = 10, testing = 10 }, 0.7)
  -- anchors labelled 1, 0, -1, 0 (image 1) and 0, 1 (image 2): everything but the ignored one is sampled
  local obj = torch.tensor({ 0.3, -1.0, 5.0, 0.2, 0.7, -0.4 })
  local deltas = torch.tensor({ { 0.1, 0.2, 0.0, -0.1 }, { 9, 9, 9, 9 }, { 9, 9, 9, 9 }, { 9, 9, 9, 9 }, { 9, 9, 9, 9 },
    { 0.5, 0.0, 0.05, 0.0 } })
  local labels = { torch.tensor({ 1.0, 0.0, -1.0, 0.0 }), torch.tensor({ 0.0, 1.0 }) }
  local targets = { torch.tensor({ { 0.0, 0.0, 0.0, 0.0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 } }),
    torch.tensor({ { 0, 0, 0, 0 }, { 0.1, 0.1, 0.1, 0.1 } }) }
  local lo, lb = rpn:compute_loss(obj, deltas, labels, targets)
  -- binary cross entropy over the 5 sampled anchors: softplus(-x) for positives, softplus(x) for negatives
  local want = (softplus(-0.3) + softplus(-1.0) + softplus(0.2) + softplus(0.7) + softplus(0.4)) / 5
  T.near(lo:item(), want, 1e-6, "objectness loss")
  local wb = 0
  for _, d in ipairs({ 0.1, 0.2, 0.0, -0.1 }) do wb = wb + smooth_l1(d, 1 / 9) end
  for _, d in ipairs({ 0.4, -0.1, -0.05, -0.1 }) do wb = wb + smooth_l1(d, 1 / 9) end
  T.near(lb:item(), wb / 5, 1e-6, "box loss over the positives / the sampled count")
end)

T.test("RoIHeads.postprocess_detections by hand", function()
  local heads = D.RoIHeads(tv.ops.MultiScaleRoIAlign({ "0" }, 7, 2), nn.Identity(), nn.Identity(), 0.5, 0.5, 512, 0.25,
    nil, 0.05, 0.5, 100)
  -- one proposal, 3 classes, zero deltas: each foreground class gets the proposal's box (clipped)
  local logits = torch.tensor({ { 0.0, math.log(2), 0.0 } }) -- softmax 0.25, 0.5, 0.25
  local boxes, scores, labels = heads:postprocess_detections(logits, torch.zeros(1, 12),
    { torch.tensor({ { 10.0, -5.0, 30.0, 20.0 } }) }, { { 16, 24 } })
  near_list(boxes[1]:tolist(), { { 10, 0, 24, 16 }, { 10, 0, 24, 16 } }, 1e-5, "clipped boxes")
  near_list(scores[1]:tolist(), { 0.5, 0.25 }, 1e-6, "scores")
  T.eq(labels[1]:tolist(), { 1, 2 })
  -- score_thresh drops class 2; two overlapping proposals of class 1 are reduced by NMS
  heads.score_thresh = 0.3
  local b2, s2, l2 = heads:postprocess_detections(torch.tensor({ { 0.0, math.log(2), 0.0 }, { 0.0, math.log(6), 0.0 } }),
    torch.zeros(2, 12), { torch.tensor({ { 0.0, 0.0, 10.0, 10.0 }, { 1.0, 0.0, 11.0, 10.0 } }) }, { { 50, 50 } })
  near_list(b2[1]:tolist(), { { 1, 0, 11, 10 } }, 1e-5)
  near_list(s2[1]:tolist(), { 0.75 }, 1e-6)
  T.eq(l2[1]:tolist(), { 1 })
end)

-- ---- the model ----

local small = { min_size = 64, max_size = 96, rpn_pre_nms_top_n_train = 100, rpn_post_nms_top_n_train = 30,
  rpn_pre_nms_top_n_test = 100, rpn_post_nms_top_n_test = 30, rpn_batch_size_per_image = 32,
  box_batch_size_per_image = 16 }

local function small_model(num_classes, extra)
  local backbone = D.resnet_fpn_backbone({ backbone_name = "resnet18", trainable_layers = 5 })
  local o = { num_classes = num_classes }
  for k, v in pairs(small) do o[k] = v end
  for k, v in pairs(extra or {}) do o[k] = v end
  return D.FasterRCNN(backbone, o)
end

local function total_loss(losses)
  local t = 0
  for _, v in pairs(losses) do t = t + v end
  return t
end

-- lowest_label: 1 for Faster R-CNN (class 0 is the background), 0 for RetinaNet
-- steps SGD steps on img with one box (the same sampling seed each step) reduce the total loss
local function train_steps(model, img, device, steps)
  local tgt = { { boxes = torch.tensor({ { 16.0, 8.0, 56.0, 40.0 } }, { device = device }),
    labels = torch.tensor({ 1 }, { device = device }) } }
  local opt = torch.optim.SGD(model:parameters(), { lr = 0.01, momentum = 0.9 })
  local first, last
  for step = 1, steps do
    torch.manual_seed(5)
    local l = total_loss(model(img, tgt))
    if step == 1 then first = l:item() end
    last = l:item()
    opt:zero_grad(); l:backward(); opt:step()
  end
  T.check(last < first, string.format("training reduces the loss (%g -> %g)", first, last))
end

local function check_detections(det, sizes, num_classes, max_det, lowest_label, score_thresh)
  lowest_label, score_thresh = lowest_label or 1, score_thresh or 0.05
  for i, d in ipairs(det) do
    local n = d.boxes:size(0)
    T.eq(d.boxes.shape:totable(), { n, 4 })
    T.eq(d.labels.dtype, torch.int64)
    T.eq(d.scores:size(0), n); T.eq(d.labels:size(0), n)
    T.check(n <= max_det, "at most detections_per_img")
    if n > 0 then
      local b = d.boxes:cpu()
      T.check(b:min():item() >= 0 and b[":, 2"]:max():item() <= sizes[i][2] + 1e-3
        and b[":, 3"]:max():item() <= sizes[i][1] + 1e-3, "boxes within the original image")
      T.check(b[":, 2"]:ge(b[":, 0"]):all():item() and b[":, 3"]:ge(b[":, 1"]):all():item(), "x2 >= x1, y2 >= y1")
      local l = d.labels:cpu()
      T.check(l:min():item() >= lowest_label and l:max():item() < num_classes, "labels are foreground classes")
      local s = d.scores:cpu()
      T.check(s:min():item() > score_thresh, "scores above the score threshold")
      T.check(torch.equal(s, s:sort({ descending = true })), "scores sorted")
    end
  end
end

local function run_model(device)
  torch.manual_seed(0)
  local model = small_model(3):to(device)
  local imgs = { torch.rand(3, 64, 80, { device = device }), torch.rand(3, 50, 60, { device = device }) }
  local targets = { { boxes = torch.tensor({ { 10.0, 12.0, 40.0, 50.0 } }, { device = device }),
    labels = torch.tensor({ 1 }, { device = device }) },
    { boxes = torch.tensor({ { 5.0, 5.0, 30.0, 20.0 }, { 20.0, 20.0, 50.0, 45.0 } }, { device = device }),
      labels = torch.tensor({ 2, 1 }, { device = device }) } }
  model:train()
  local losses = model(imgs, targets)
  T.eq(losses:keys(), { "loss_classifier", "loss_box_reg", "loss_objectness", "loss_rpn_box_reg" })
  for k, v in pairs(losses) do
    T.check(v:dim() == 0 and math.abs(v:item()) < math.huge and v:item() >= 0, k .. " is a finite scalar")
    T.eq(v.device.type, device)
  end
  total_loss(losses):backward()
  local function grad_of(p) return p.grad ~= nil and p.grad:abs():sum():item() > 0 end
  T.check(grad_of(model.rpn.head.cls_logits.weight), "grad reaches the RPN head")
  T.check(grad_of(model.rpn.head.bbox_pred.weight), "grad reaches the RPN box branch")
  T.check(grad_of(model.roi_heads.box_predictor.cls_score.weight), "grad reaches the classifier")
  T.check(grad_of(model.roi_heads.box_predictor.bbox_pred.weight), "grad reaches the box regressor")
  T.check(grad_of(model.backbone.fpn.layer_blocks[0][0].weight), "grad reaches the FPN")
  T.check(grad_of(model.backbone.body.layer1[0].conv1.weight), "grad reaches the ResNet")
  -- a few SGD steps on one image with one box reduce the loss (same sampling seed each time)
  local img = { torch.rand(3, 64, 80, { device = device }) }
  train_steps(model, img, device, 6)
  -- an image without objects trains too
  local empty = model(img, { { boxes = torch.zeros(0, 4, { device = device }),
    labels = torch.zeros(0, { dtype = torch.int64, device = device }) } })
  T.eq(empty.loss_box_reg:item(), 0.0)
  T.eq(empty.loss_rpn_box_reg:item(), 0.0)
  T.check(empty.loss_classifier:item() > 0 and empty.loss_objectness:item() > 0)
  -- eval: detections per image, in original coordinates
  model:eval()
  local det
  do
    local _ <close> = torch.no_grad()
    det = model(imgs)
  end
  T.eq(#det, 2)
  check_detections(det, { { 64, 80 }, { 50, 60 } }, 3, 100)
  local few = small_model(3, { box_detections_per_img = 5, box_score_thresh = 0.0 }):to(device)
  few:eval()
  local d2 = few(imgs)
  T.eq(d2[1].boxes:size(0), 5, "box_detections_per_img")
  check_detections(d2, { { 64, 80 }, { 50, 60 } }, 3, 5, 1, 0.0)
end

T.test("FasterRCNN train and eval (cpu)", function() run_model("cpu") end)

T.test("replacing the box predictor (finetuning)", function()
  torch.manual_seed(2)
  local model = small_model(91)
  local in_features = model.roi_heads.box_predictor.cls_score.in_features
  T.eq(in_features, 1024)
  model.roi_heads.box_predictor = D.faster_rcnn.FastRCNNPredictor(in_features, 2)
  T.eq(model:state_dict()["roi_heads.box_predictor.bbox_pred.weight"].shape:totable(), { 8, 1024 })
  model:train()
  local losses = model({ torch.rand(3, 64, 64) }, { { boxes = torch.tensor({ { 8.0, 8.0, 40.0, 48.0 } }),
    labels = torch.tensor({ 1 }) } })
  T.check(losses.loss_classifier:item() > 0)
  model:eval()
  local det = model({ torch.rand(3, 64, 64) })
  check_detections(det, { { 64, 64 } }, 2, 100)
  T.raises(function() D.FastRCNNPredictor(8, 2)(torch.zeros(2, 8, 2, 2)) end,
    "x has the wrong shape, expecting the last two dimensions to be [1,1] instead of [2, 2]")
end)

T.test("fasterrcnn_resnet50_fpn: state_dict and parameter count", function()
  local model = D.fasterrcnn_resnet50_fpn({ weights = nil, weights_backbone = nil, num_classes = 91 })
  local sd = model:state_dict()
  local shapes = {
    ["backbone.body.conv1.weight"] = { 64, 3, 7, 7 },
    ["backbone.body.layer1.0.conv1.weight"] = { 64, 64, 1, 1 },
    ["backbone.body.layer4.2.bn3.running_var"] = { 2048 },
    ["backbone.fpn.inner_blocks.0.0.weight"] = { 256, 256, 1, 1 },
    ["backbone.fpn.inner_blocks.3.0.bias"] = { 256 },
    ["backbone.fpn.layer_blocks.2.0.weight"] = { 256, 256, 3, 3 },
    ["rpn.head.conv.0.0.weight"] = { 256, 256, 3, 3 },
    ["rpn.head.cls_logits.weight"] = { 3, 256, 1, 1 },
    ["rpn.head.bbox_pred.bias"] = { 12 },
    ["roi_heads.box_head.fc6.weight"] = { 1024, 12544 },
    ["roi_heads.box_head.fc7.weight"] = { 1024, 1024 },
    ["roi_heads.box_predictor.cls_score.weight"] = { 91, 1024 },
    ["roi_heads.box_predictor.bbox_pred.weight"] = { 364, 1024 },
  }
  for k, s in pairs(shapes) do T.eq(sd[k] and sd[k].shape:totable(), s, k) end
  local keys = sd:keys()
  T.check(tostring(model):find("(box_roi_pool): MultiScaleRoIAlign(featmap_names=['0', '1', '2', '3'], " ..
    "output_size=(7, 7), sampling_ratio=2)", 1, true) ~= nil, "printed as torchvision prints it")
  T.eq(keys[1], "backbone.body.conv1.weight")
  T.eq(keys[#keys], "roi_heads.box_predictor.bbox_pred.bias")
  for _, k in ipairs(keys) do
    T.check(not k:find("fc%.") and not k:find("avgpool"), "no classifier of the ResNet: " .. k)
  end
  -- weights=nil: nn.BatchNorm2d (its weight and bias are parameters) and every layer trainable
  local n, bn = 0, 0
  for _, p in ipairs(model:parameters()) do
    n = n + p:numel()
    T.check(p.requires_grad)
  end
  for _, m in ipairs(model:modules()) do
    if nn.isinstance(m, nn.BatchNorm2d) then bn = bn + 2 * m.num_features end
  end
  T.eq(n, 41755286 + bn)
  T.eq(bn, 53120)
  -- the layout of the pretrained weights: FrozenBatchNorm2d, 3 trainable layers -> torchvision's 41,755,286
  local frozen = D.FasterRCNN(D.backbone_utils._resnet_fpn_extractor(
    tv.models.resnet50({ norm_layer = tv.ops.misc.FrozenBatchNorm2d }), 3), { num_classes = 91 })
  local nf = 0
  for _, p in ipairs(frozen:parameters()) do nf = nf + p:numel() end
  T.eq(nf, 41755286)
  local fsd = frozen:state_dict()
  T.eq(#fsd:keys(), #keys - 53, "no num_batches_tracked")
  T.check(not frozen.backbone.body.conv1.weight.requires_grad and not frozen.backbone.body.layer1[0].conv1.weight.requires_grad)
  T.check(frozen.backbone.body.layer2[0].conv1.weight.requires_grad)
  -- a torchvision-layout checkpoint loads
  local other = D.FasterRCNN(D.backbone_utils._resnet_fpn_extractor(
    tv.models.resnet50({ norm_layer = tv.ops.misc.FrozenBatchNorm2d }), 3), { num_classes = 91 })
  other:load_state_dict(fsd)
  T.check(torch.equal(other.rpn.head.conv[0][0].weight, frozen.rpn.head.conv[0][0].weight))
  T.check(torch.equal(other:state_dict()["backbone.body.layer3.1.bn2.running_var"],
    fsd["backbone.body.layer3.1.bn2.running_var"]))
  -- also into the weights=nil build (its BatchNorm2d keeps num_batches_tracked at 0)
  T.eq(tostring(model:load_state_dict(fsd)), "<All keys matched successfully>")
  T.check(torch.equal(model.backbone.body.bn1.running_var, fsd["backbone.body.bn1.running_var"]))
  -- and the 4 losses come out of the full-size builder
  torch.manual_seed(0)
  local m2 = D.fasterrcnn_resnet50_fpn({ num_classes = 2, min_size = 64, max_size = 64, rpn_pre_nms_top_n_train = 50,
    rpn_post_nms_top_n_train = 20, box_batch_size_per_image = 8 })
  local losses = m2({ torch.rand(3, 64, 64) }, { { boxes = torch.tensor({ { 4.0, 4.0, 30.0, 40.0 } }),
    labels = torch.tensor({ 1 }) } })
  T.eq(#losses, 4)
  for k, v in pairs(losses) do T.check(v:item() == v:item() and math.abs(v:item()) < math.huge, k) end
end)

T.test("fasterrcnn_resnet50_fpn_v2", function()
  torch.manual_seed(0)
  local m = D.fasterrcnn_resnet50_fpn_v2({ num_classes = 2, min_size = 64, max_size = 80, rpn_pre_nms_top_n_train = 50,
    rpn_post_nms_top_n_train = 20, box_batch_size_per_image = 8 })
  local n = 0
  for _, p in ipairs(D.fasterrcnn_resnet50_fpn_v2():parameters()) do n = n + p:numel() end
  T.eq(n, 43712278, "torchvision's FasterRCNN_ResNet50_FPN_V2_Weights.COCO_V1 num_params")
  local sd = m:state_dict()
  local shapes = {
    ["backbone.fpn.inner_blocks.0.1.running_var"] = { 256 },
    ["rpn.head.conv.1.0.weight"] = { 256, 256, 3, 3 },
    ["roi_heads.box_head.3.1.weight"] = { 256 },
    ["roi_heads.box_head.5.weight"] = { 1024, 12544 },
    ["roi_heads.box_predictor.cls_score.weight"] = { 2, 1024 },
  }
  for k, v in pairs(shapes) do T.eq(sd[k] and sd[k].shape:totable(), v, k) end
  T.check(sd["backbone.fpn.inner_blocks.0.0.bias"] == nil, "no conv bias before a norm layer")
  local losses = m({ torch.rand(3, 64, 64) }, { { boxes = torch.tensor({ { 4.0, 4.0, 30.0, 40.0 } }),
    labels = torch.tensor({ 1 }) } })
  T.eq(#losses, 4)
  for k, v in pairs(losses) do T.check(math.abs(v:item()) < math.huge, k) end
end)

T.test("fasterrcnn_mobilenet_v3_large_fpn", function()
  torch.manual_seed(0)
  local m = D.fasterrcnn_mobilenet_v3_large_fpn({ num_classes = 3, min_size = 96, max_size = 128 })
  T.eq(m.rpn.score_thresh, 0.05, "rpn_score_thresh defaults to 0.05")
  T.eq(m.rpn.anchor_generator:num_anchors_per_location(), { 15, 15, 15 })
  -- strided blocks of mobilenet_v3_large.features: 2, 4, 7, 13 -> stages {0, 2, 4, 7, 13, 16}; FPN on 13 and 16
  T.eq(m.backbone.body.return_layers, { ["13"] = "0", ["16"] = "1" })
  local sd = m:state_dict()
  T.eq(sd["backbone.body.16.0.weight"].shape:totable(), { 960, 160, 1, 1 })
  T.eq(sd["backbone.fpn.inner_blocks.0.0.weight"].shape:totable(), { 256, 160, 1, 1 })
  T.eq(sd["rpn.head.cls_logits.weight"].shape:totable(), { 15, 256, 1, 1 })
  T.check(sd["backbone.body.17.0.weight"] == nil, "the classifier part is left out")
  -- weights=nil: everything trainable; the pretrained layout has torchvision's 19,386,354 parameters
  for _, p in ipairs(m:parameters()) do T.check(p.requires_grad) end
  local bb = D.backbone_utils._mobilenet_extractor(tv.models.mobilenet_v3_large({ norm_layer = tv.ops.misc.FrozenBatchNorm2d }),
    true, 3)
  local sizes, ratios = {}, {}
  for i = 1, 3 do sizes[i], ratios[i] = { 32, 64, 128, 256, 512 }, { 0.5, 1.0, 2.0 } end
  local f = D.FasterRCNN(bb, { num_classes = 91, rpn_anchor_generator = D.AnchorGenerator(sizes, ratios) })
  local n = 0
  for _, p in ipairs(f:parameters()) do n = n + p:numel() end
  T.eq(n, 19386354)
  T.check(not f.backbone.body["6"].block[0][0].weight.requires_grad,
    "blocks before the last 3 stages are frozen")
  T.check(f.backbone.body["7"].block[0][0].weight.requires_grad)
  m:train()
  local losses = m({ torch.rand(3, 80, 100) }, { { boxes = torch.tensor({ { 10.0, 10.0, 50.0, 60.0 } }),
    labels = torch.tensor({ 2 }) } })
  T.eq(#losses, 4)
  for k, v in pairs(losses) do T.check(math.abs(v:item()) < math.huge, k) end
  T.raises(function() D.backbone_utils._mobilenet_extractor(tv.models.mobilenet_v3_large(), true, 7) end,
    "Trainable layers should be in the range [0,6], got 7 ")
end)

-- ---- RetinaNet ----

local function run_retinanet(device)
  torch.manual_seed(0)
  local m = D.retinanet_resnet50_fpn({ num_classes = 3, min_size = 64, max_size = 96 }):to(device)
  local imgs = { torch.rand(3, 64, 80, { device = device }), torch.rand(3, 50, 60, { device = device }) }
  local empty = { boxes = torch.zeros(0, 4, { device = device }),
    labels = torch.zeros(0, { dtype = torch.int64, device = device }) }
  m:train()
  local losses = m(imgs, { { boxes = torch.tensor({ { 10.0, 10.0, 50.0, 60.0 } }, { device = device }),
    labels = torch.tensor({ 2 }, { device = device }) }, empty })
  T.eq(losses:keys(), { "classification", "bbox_regression" })
  for k, v in pairs(losses) do T.check(v:dim() == 0 and v:item() > 0 and v:item() < math.huge, k) end
  total_loss(losses):backward()
  T.check(m.head.classification_head.cls_logits.weight.grad:abs():sum():item() > 0, "grad reaches the class head")
  T.check(m.head.regression_head.bbox_reg.weight.grad:abs():sum():item() > 0, "grad reaches the box head")
  T.check(m.backbone.fpn.extra_blocks.p6.weight.grad:abs():sum():item() > 0, "grad reaches P6")
  -- an image without objects: every anchor is background, so the classification loss is the focal
  -- loss summed over all anchors and classes (no foreground to divide by) and the box loss is 0
  local img = { imgs[1] }
  local l0 = m(img, { empty })
  local feats = m.backbone(m.transform(img).tensors):values()
  local logits = m.head(feats).cls_logits
  local want = tv.ops.sigmoid_focal_loss(logits, torch.zeros_like(logits), { reduction = "sum" })
  T.near(l0.classification:item(), want:item(), 1e-3 * want:item())
  T.eq(l0.bbox_regression:item(), 0.0)
  -- a few SGD steps reduce the loss
  train_steps(m, img, device, 5)
  -- eval: the initial class bias gives probabilities 0.01, under score_thresh 0.05
  m:eval()
  local none = D.retinanet_resnet50_fpn({ num_classes = 3, min_size = 64, max_size = 96 }):to(device)
  none:eval()
  T.eq(none(imgs)[1].boxes:size(0), 0, "nothing above score_thresh at initialisation")
  m.score_thresh, m.detections_per_img = 0.0, 50
  local det = m(imgs)
  T.eq(det[1].boxes:size(0), 50)
  check_detections(det, { { 64, 80 }, { 50, 60 } }, 3, 50, 0, 0.0)
end

T.test("RetinaNet train and eval (cpu)", function() run_retinanet("cpu") end)

T.test("RetinaNet box losses by hand; retinanet_resnet50_fpn_v2", function()
  local coder = D._utils.BoxCoder({ 1.0, 1.0, 1.0, 1.0 })
  local anchors, gt, zero = torch.tensor({ { 0.0, 0.0, 2.0, 2.0 } }), torch.tensor({ { 1.0, 1.0, 3.0, 3.0 } }), torch.zeros(1, 4)
  -- zero deltas: the anchor's box; targets dx = dy = 0.5, dw = dh = 0
  T.near(D.retinanet._box_loss("l1", coder, anchors, gt, zero):item(), 1.0, 1e-6)
  T.near(D.retinanet._box_loss("smooth_l1", coder, anchors, gt, zero):item(), 0.25, 1e-6)
  -- IoU 1/7, enclosing box 3x3: GIoU = 1/7 - 2/9
  T.near(D.retinanet._box_loss("giou", coder, anchors, gt, zero):item(), 1 - (1 / 7 - 2 / 9), 1e-6)
  T.near(D.retinanet._box_loss("giou", coder, gt, gt, zero):item(), 0.0, 1e-6)
  torch.manual_seed(0)
  local m = D.retinanet_resnet50_fpn_v2({ num_classes = 3, min_size = 64, max_size = 96 })
  T.eq(m.head.regression_head._loss_type, "giou")
  local sd = m:state_dict()
  T.eq(sd["backbone.fpn.extra_blocks.p6.weight"].shape:totable(), { 256, 2048, 3, 3 }, "P6 from C5")
  T.eq(sd["head.classification_head.conv.0.1.weight"].shape:totable(), { 256 }, "GroupNorm in the heads")
  T.check(nn.isinstance(m.head.regression_head.conv[3][1], nn.GroupNorm))
  local losses = m({ torch.rand(3, 64, 80) }, { { boxes = torch.tensor({ { 10.0, 10.0, 50.0, 60.0 } }), labels = torch.tensor({ 2 }) } })
  for k, v in pairs(losses) do T.check(v:item() > 0 and v:item() < math.huge, k) end
  local n = 0
  for _, p in ipairs(D.retinanet_resnet50_fpn_v2():parameters()) do n = n + p:numel() end
  T.eq(n, 38198935, "torchvision's RetinaNet_ResNet50_FPN_V2_Weights.COCO_V1 num_params")
end)

T.test("retinanet_resnet50_fpn layout", function()
  local m = D.retinanet_resnet50_fpn()
  local ag = m.anchor_generator
  T.eq(ag.sizes, { { 32, 40, 50 }, { 64, 80, 101 }, { 128, 161, 203 }, { 256, 322, 406 }, { 512, 645, 812 } })
  T.eq(ag:num_anchors_per_location(), { 9, 9, 9, 9, 9 })
  T.eq(m.backbone.body.return_layers, { layer2 = "0", layer3 = "1", layer4 = "2" })
  local sd = m:state_dict()
  local shapes = {
    ["backbone.fpn.inner_blocks.0.0.weight"] = { 256, 512, 1, 1 },
    ["backbone.fpn.extra_blocks.p6.weight"] = { 256, 256, 3, 3 },
    ["backbone.fpn.extra_blocks.p7.bias"] = { 256 },
    ["head.classification_head.conv.3.0.weight"] = { 256, 256, 3, 3 },
    ["head.classification_head.cls_logits.weight"] = { 819, 256, 3, 3 },
    ["head.regression_head.bbox_reg.weight"] = { 36, 256, 3, 3 },
  }
  for k, v in pairs(shapes) do T.eq(sd[k] and sd[k].shape:totable(), v, k) end
  T.near(sd["head.classification_head.cls_logits.bias"][0]:item(), -math.log(99), 1e-5, "prior probability 0.01")
  T.check(sd["backbone.fpn.inner_blocks.3.0.weight"] == nil)
  local frozen = D.RetinaNet(D.backbone_utils._resnet_fpn_extractor(
    tv.models.resnet50({ norm_layer = tv.ops.misc.FrozenBatchNorm2d }), 3, { 2, 3, 4 },
    tv.ops.feature_pyramid_network.LastLevelP6P7(256, 256)), { num_classes = 91 })
  local n = 0
  for _, p in ipairs(frozen:parameters()) do n = n + p:numel() end
  T.eq(n, 34014999, "torchvision's RetinaNet_ResNet50_FPN_Weights.COCO_V1 num_params")
  no_hub(function()
    T.raises(function() D.retinanet_resnet50_fpn({ weights = "DEFAULT" }) end,
      "~retinanet_resnet50_fpn_coco-eeacb38b.pth is not in the cache")
  end)
  T.raises(function() D.RetinaNet(frozen.backbone) end, "~missing required argument 'num_classes'")
end)

-- ---- Mask R-CNN ----

T.test("maskrcnn_loss and paste_masks_in_image by hand", function()
  local R = D.roi_heads
  -- two positives of classes 2 and 1 over an all-ones and an all-zeros mask: the targets are 1 and 0,
  -- so the loss is the mean of softplus(-x) over the first's class-2 logits and softplus(x) over the second's class-1 logits
  local logits = torch.linspace(-2, 2, 2 * 3 * 4 * 4):view(2, 3, 4, 4)
  local masks = torch.cat({ torch.ones(1, 8, 8), torch.zeros(1, 8, 8) }, 0):to(torch.uint8)
  local boxes = torch.tensor({ { 0.0, 0.0, 8.0, 8.0 }, { 2.0, 1.0, 6.0, 7.0 } })
  local loss = R.maskrcnn_loss(logits, { boxes }, { masks }, { torch.tensor({ 2, 1 }) }, { torch.tensor({ 0, 1 }) })
  local l, want = logits:tolist(), 0
  for y = 1, 4 do
    for x = 1, 4 do want = want + softplus(-l[1][3][y][x]) + softplus(l[2][2][y][x]) end
  end
  T.near(loss:item(), want / 32, 1e-5, "mask loss")
  local none = R.maskrcnn_loss(logits:narrow(0, 0, 0), { torch.zeros(0, 4) }, { masks }, { torch.tensor({ 2, 1 }) },
    { torch.zeros(0, { dtype = torch.int64 }) })
  T.eq(none:item(), 0.0, "no positives: zero loss")
  -- maskrcnn_inference: the sigmoid of each detection's class channel
  local probs = R.maskrcnn_inference(logits, { torch.tensor({ 1 }), torch.tensor({ 0 }) })
  T.eq(#probs, 2); T.eq(probs[1].shape:totable(), { 1, 1, 4, 4 })
  T.near(probs[2][0][0][1][2]:item(), 1 / (1 + math.exp(-l[2][1][2][3])), 1e-6)
  -- a 2x2 mask of ones in box (2, 2, 5, 5): padded to 4x4 (0 1 1 0), the box grown by 4/2 around its
  -- centre to (0.5, 0.5, 6.5, 6.5), truncated to (0, 0, 6, 6), so resized to 7x7: bilinear profile
  -- 0, 5/14, 13/14, 1, 13/14, 5/14, 0 along each axis
  local pasted = R.paste_masks_in_image(torch.ones(1, 1, 2, 2), torch.tensor({ { 2.0, 2.0, 5.0, 5.0 } }), { 10, 12 })
  T.eq(pasted.shape:totable(), { 1, 1, 10, 12 })
  local prof = { 0, 5 / 14, 13 / 14, 1, 13 / 14, 5 / 14, 0 }
  local got, ok = pasted[0][0]:tolist(), true
  for y = 1, 10 do
    for x = 1, 12 do
      local want_v = (y <= 7 and x <= 7) and prof[y] * prof[x] or 0
      ok = ok and math.abs(got[y][x] - want_v) < 1e-5
    end
  end
  T.check(ok, "pasted mask by hand")
  -- a box over the image's edge (grown to (6, 4, 12, 10)) is cut at it: pixel (9, 11) is (5, 5) of the mask
  local edge = R.paste_masks_in_image(torch.ones(1, 1, 2, 2), torch.tensor({ { 8.0, 6.0, 11.0, 9.0 } }), { 10, 12 })
  T.near(edge[0][0][9][11]:item(), prof[6] * prof[6], 1e-5)
  T.near(edge[0][0][7][9]:item(), prof[4] * prof[4], 1e-5)
  T.eq(edge[0][0][":, :6"]:abs():sum():item(), 0.0)
  T.eq(R.paste_masks_in_image(torch.zeros(0, 1, 2, 2), torch.zeros(0, 4), { 5, 6 }).shape:totable(), { 0, 1, 5, 6 })
end)

T.test("transform resizes masks (nearest, uint8)", function()
  local tr = D.GeneralizedRCNNTransform(32, 64, MEAN, STD)
  local m = torch.zeros(1, 64, 80, { dtype = torch.uint8 })
  m[":, 8:16, 20:40"] = 1
  local _, t = tr({ torch.rand(3, 64, 80) }, { { boxes = torch.tensor({ { 20.0, 8.0, 40.0, 16.0 } }), masks = m } })
  T.eq(t[1].masks.dtype, torch.uint8)
  T.eq(t[1].masks.shape:totable(), { 1, 32, 40 })
  local want = torch.zeros(1, 32, 40, { dtype = torch.uint8 })
  want[":, 4:8, 10:20"] = 1
  T.check(torch.equal(t[1].masks, want), "every other pixel")
end)

local function run_maskrcnn(device)
  torch.manual_seed(0)
  local model = D.maskrcnn_resnet50_fpn({ num_classes = 3, min_size = 64, max_size = 96, rpn_pre_nms_top_n_train = 100,
    rpn_post_nms_top_n_train = 30, rpn_pre_nms_top_n_test = 100, rpn_post_nms_top_n_test = 30,
    box_batch_size_per_image = 16 }):to(device)
  -- the tutorial's head replacement
  local in_features = model.roi_heads.box_predictor.cls_score.in_features
  model.roi_heads.box_predictor = D.faster_rcnn.FastRCNNPredictor(in_features, 2)
  local in_mask = model.roi_heads.mask_predictor.conv5_mask.in_channels
  model.roi_heads.mask_predictor = D.mask_rcnn.MaskRCNNPredictor(in_mask, 64, 2):to(device)
  model.roi_heads.box_predictor:to(device)
  local imgs = { torch.rand(3, 64, 80, { device = device }), torch.rand(3, 50, 60, { device = device }) }
  local m1 = torch.zeros(1, 64, 80, { dtype = torch.uint8, device = device })
  m1[":, 10:50, 10:40"] = 1
  local m2 = torch.zeros(2, 50, 60, { dtype = torch.uint8, device = device })
  m2["0, 5:20, 5:30"] = 1
  m2["1, 20:45, 20:50"] = 1
  local targets = { { boxes = torch.tensor({ { 10.0, 10.0, 40.0, 50.0 } }, { device = device }),
    labels = torch.tensor({ 1 }, { device = device }), masks = m1 },
    { boxes = torch.tensor({ { 5.0, 5.0, 30.0, 20.0 }, { 20.0, 20.0, 50.0, 45.0 } }, { device = device }),
      labels = torch.tensor({ 1, 1 }, { device = device }), masks = m2 } }
  model:train()
  local losses = model(imgs, targets)
  T.eq(losses:keys(), { "loss_classifier", "loss_box_reg", "loss_mask", "loss_objectness", "loss_rpn_box_reg" })
  T.check(losses.loss_mask:item() > 0 and losses.loss_mask:item() < math.huge)
  total_loss(losses):backward()
  T.check(model.roi_heads.mask_predictor.mask_fcn_logits.weight.grad:abs():sum():item() > 0, "grad reaches the mask predictor")
  T.check(model.roi_heads.mask_head[0][0].weight.grad:abs():sum():item() > 0, "grad reaches the mask head")
  T.raises(function() model(imgs, { { boxes = targets[1].boxes, labels = targets[1].labels }, targets[2] }) end,
    "Every element of targets should have a masks key")
  model:eval()
  model.roi_heads.score_thresh = 0.0
  local det
  do
    local _ <close> = torch.no_grad()
    det = model(imgs)
  end
  for i, size in ipairs({ { 64, 80 }, { 50, 60 } }) do
    local k = det[i].boxes:size(0)
    T.check(k > 0)
    T.eq(det[i].masks.shape:totable(), { k, 1, size[1], size[2] })
    T.check(det[i].masks:min():item() >= 0 and det[i].masks:max():item() <= 1, "mask probabilities")
  end
end

T.test("MaskRCNN train and eval (cpu)", function() run_maskrcnn("cpu") end)

T.test("maskrcnn_resnet50_fpn layout", function()
  local frozen = D.MaskRCNN(D.backbone_utils._resnet_fpn_extractor(
    tv.models.resnet50({ norm_layer = tv.ops.misc.FrozenBatchNorm2d }), 3), { num_classes = 91 })
  local n = 0
  for _, p in ipairs(frozen:parameters()) do n = n + p:numel() end
  T.eq(n, 44401393, "torchvision's MaskRCNN_ResNet50_FPN_Weights.COCO_V1 num_params")
  local sd = frozen:state_dict()
  local keys = sd:keys()
  T.eq(keys[#keys], "roi_heads.mask_predictor.mask_fcn_logits.bias")
  T.eq(sd["roi_heads.mask_head.3.0.weight"].shape:totable(), { 256, 256, 3, 3 })
  T.eq(sd["roi_heads.mask_predictor.conv5_mask.weight"].shape:totable(), { 256, 256, 2, 2 })
  T.eq(sd["roi_heads.mask_predictor.mask_fcn_logits.weight"].shape:totable(), { 91, 256, 1, 1 })
  T.check(tostring(frozen.roi_heads.mask_roi_pool):find("output_size=(14, 14)", 1, true) ~= nil)
  no_hub(function()
    T.raises(function() D.maskrcnn_resnet50_fpn({ weights = "DEFAULT" }) end,
      "~maskrcnn_resnet50_fpn_coco-bf2d0c1e.pth is not in the cache")
  end)
  local v2 = D.maskrcnn_resnet50_fpn_v2()
  n = 0
  for _, p in ipairs(v2:parameters()) do n = n + p:numel() end
  T.eq(n, 46359409, "torchvision's MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1 num_params")
  T.check(nn.isinstance(v2.roi_heads.mask_head[0][1], nn.BatchNorm2d))
  T.eq(#v2.rpn.head.conv, 2)
end)

T.test("fasterrcnn_resnet50_fpn and FasterRCNN argument errors", function()
  no_hub(function()
    T.raises(function() D.fasterrcnn_resnet50_fpn({ weights = "DEFAULT" }) end,
      "~fasterrcnn_resnet50_fpn_coco-258fb6c6.pth is not in the cache, and nnrepl downloads nothing at run time")
    T.raises(function() D.fasterrcnn_resnet50_fpn({ weights_backbone = "IMAGENET1K_V1" }) end,
      "~resnet50-0676ba61.pth is not in the cache")
  end)
  T.raises(function() D.fasterrcnn_resnet50_fpn({ weights = "IMAGENET1K_V1" }) end,
    "Invalid value IMAGENET1K_V1 for enum FasterRCNN_ResNet50_FPN_Weights.")
  T.raises(function() D.fasterrcnn_resnet50_fpn({ num_clases = 3 }) end, "~unknown keyword 'num_clases'")
  local bb = D.resnet_fpn_backbone({ backbone_name = "resnet18", trainable_layers = 5 })
  T.raises(function() D.FasterRCNN(bb) end, "num_classes should not be None when box_predictor is not specified")
  T.raises(function() D.FasterRCNN(bb, 3, { box_predictor = D.FastRCNNPredictor(1024, 3) }) end,
    "num_classes should be None when box_predictor is specified")
  T.raises(function() D.FasterRCNN(nn.ReLU(), 3) end, "~backbone should contain an attribute out_channels")
  T.raises(function() D.backbone_utils._resnet_fpn_extractor(tv.models.resnet18(), 6) end,
    "Trainable layers should be in the range [0,5], got 6")
  T.raises(function() D.backbone_utils._validate_trainable_layers(true, 7, 5, 3) end,
    "Trainable backbone layers should be in the range [0,5], got 7 ")
  T.eq(D.backbone_utils._validate_trainable_layers(true, nil, 5, 3), 3)
  T.raises(function() D.backbone_utils._resnet_fpn_extractor(tv.models.resnet18(), 3, { 0, 1 }) end,
    "Each returned layer should be in the range [1,4]. Got [0, 1]")
end)

T.test("FasterRCNN target errors", function()
  torch.manual_seed(0)
  local model = small_model(3, { min_size = 64, max_size = 80 })
  model:train()
  local img = { torch.rand(3, 64, 80) }
  T.raises(function() model(img) end, "targets should not be none when in training mode")
  T.raises(function() model(img, { { boxes = torch.tensor({ 1.0, 2.0, 3.0, 4.0 }), labels = torch.tensor({ 1 }) } }) end,
    "Expected target boxes to be a tensor of shape [N, 4], got torch.Size([4]).")
  T.raises(function() model(img, { { boxes = { 1, 2, 3, 4 }, labels = torch.tensor({ 1 }) } }) end,
    "Expected target boxes to be of type Tensor, got table.")
  -- the scale is 1 here, so the box is reported as given
  T.raises(function()
    model({ img[1], torch.rand(3, 64, 80) }, { { boxes = torch.tensor({ { 1.0, 1.0, 20.0, 20.0 } }), labels = torch.tensor({ 1 }) },
      { boxes = torch.tensor({ { 5.0, 6.0, 30.0, 30.0 }, { 10.0, 20.0, 10.0, 30.5 } }), labels = torch.tensor({ 1, 2 }) } })
  end, "All bounding boxes should have positive height and width. Found invalid box [10.0, 20.0, 10.0, 30.5] " ..
    "for target at index 1.")
  T.raises(function() model(img, { { boxes = torch.tensor({ { 5.0, 30.0, 20.0, 29.0 } }), labels = torch.tensor({ 1 }) } }) end,
    "~Found invalid box [5.0, 30.0, 20.0, 29.0] for target at index 0.")
  T.raises(function()
    model(img, { { boxes = torch.tensor({ { 1.0, 1.0, 20.0, 20.0 } }), labels = torch.tensor({ 1 }, { dtype = torch.int32 }) } })
  end, "target labels must of int64 type, instead got torch.int32")
  T.raises(function() model(img, { { boxes = torch.tensor({ { 1.0, 1.0, 20.0, 20.0 } }) } }) end,
    "Every element of targets should have a labels key")
  model:eval()
  T.raises(function() model(torch.rand(1, 3, 64, 80)) end, "~images is expected to be a list of 3d tensors")
end)

-- ---- CUDA ----

if torch.cuda.is_available() then
  T.test("FasterRCNN train and eval (cuda)", function() run_model("cuda") end)
  T.test("RetinaNet train and eval (cuda)", function() run_retinanet("cuda") end)
  T.test("MaskRCNN train and eval (cuda)", function() run_maskrcnn("cuda") end)
else
  T.skip("CUDA not available: FasterRCNN, RetinaNet and MaskRCNN train and eval on cuda", 3)
end
