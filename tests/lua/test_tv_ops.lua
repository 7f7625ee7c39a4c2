-- torchvision.ops: boxes against hand-computed values, nms against a plain greedy loop, RoI
-- pooling against plain-Lua loops of torchvision's sampling, gradients by finite differences,
-- deform_conv2d against conv2d, the layers' state_dict keys; the same on CUDA where present.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local ops = require("torchvision").ops
local nn, F = torch.nn, torch.nn.functional
local f64 = { dtype = torch.float64 }

local function list(t) return t:tolist() end

-- ---- plain-Lua references ----

local function ref_iou(a, b)
  local iw = math.max(0, math.min(a[3], b[3]) - math.max(a[1], b[1]))
  local ih = math.max(0, math.min(a[4], b[4]) - math.max(a[2], b[2]))
  local inter = iw * ih
  return inter / ((a[3] - a[1]) * (a[4] - a[2]) + (b[3] - b[1]) * (b[4] - b[2]) - inter)
end

local function ref_nms(boxes, scores, thr)
  local order = {}
  for i = 1, #scores do order[i] = i end
  table.sort(order, function(i, j) if scores[i] ~= scores[j] then return scores[i] > scores[j] end return i < j end)
  local keep, removed = {}, {}
  for a = 1, #order do
    local i = order[a]
    if not removed[i] then
      keep[#keep + 1] = i - 1
      for b = a + 1, #order do
        local j = order[b]
        if ref_iou(boxes[i], boxes[j]) > thr then removed[j] = true end
      end
    end
  end
  return keep
end

-- torchvision's roi_align bilinear_interpolate on a plain [H][W] table
local function ref_bilinear(img, H, W, y, x)
  if y < -1 or y > H or x < -1 or x > W then return 0 end
  y, x = math.max(y, 0), math.max(x, 0)
  local yl, xl = math.floor(y), math.floor(x)
  local yh, xh
  if yl >= H - 1 then yl, yh, y = H - 1, H - 1, H - 1 else yh = yl + 1 end
  if xl >= W - 1 then xl, xh, x = W - 1, W - 1, W - 1 else xh = xl + 1 end
  local ly, lx = y - yl, x - xl
  local hy, hx = 1 - ly, 1 - lx
  return hy * hx * img[yl + 1][xl + 1] + hy * lx * img[yl + 1][xh + 1] + ly * hx * img[yh + 1][xl + 1] +
    ly * lx * img[yh + 1][xh + 1]
end

-- out[k][c][ph][pw] = value(img, H, W, roi, ph, pw) with img the [H][W] table of the bin's input
-- channel (c, or (c*PH + ph)*PW + pw for the position-sensitive variants)
local function per_bin(x, rois, PH, PW, ps, value)
  local X = list(x)
  local H, W = #X[1][1], #X[1][1][1]
  local C = ps and #X[1] // (PH * PW) or #X[1]
  local out = {}
  for k, r in ipairs(rois) do
    out[k] = {}
    for c = 1, C do
      out[k][c] = {}
      for ph = 0, PH - 1 do
        out[k][c][ph + 1] = {}
        for pw = 0, PW - 1 do
          local cin = ps and ((c - 1) * PH + ph) * PW + pw + 1 or c
          out[k][c][ph + 1][pw + 1] = value(X[r[1] + 1][cin], H, W, r, ph, pw)
        end
      end
    end
  end
  return out
end

-- roi_align / ps_roi_align: the mean of a grid of bilinear samples per bin
local function ref_roi_align(x, rois, PH, PW, scale, sr, aligned, ps)
  return per_bin(x, rois, PH, PW, ps, function(img, H, W, r, ph, pw)
    local off = aligned and 0.5 or 0
    local x1, y1 = r[2] * scale - off, r[3] * scale - off
    local rw, rh = r[4] * scale - off - x1, r[5] * scale - off - y1
    if not aligned then rw, rh = math.max(rw, 1), math.max(rh, 1) end
    local bh, bw = rh / PH, rw / PW
    local gh = sr > 0 and sr or math.ceil(rh / PH)
    local gw = sr > 0 and sr or math.ceil(rw / PW)
    local s = 0
    for iy = 0, gh - 1 do
      local y = y1 + ph * bh + (iy + 0.5) * bh / gh
      for ix = 0, gw - 1 do
        s = s + ref_bilinear(img, H, W, y, x1 + pw * bw + (ix + 0.5) * bw / gw)
      end
    end
    return s / math.max(gh * gw, 1)
  end)
end

local function cround(v) return v >= 0 and math.floor(v + 0.5) or -math.floor(-v + 0.5) end

-- roi_pool (max) / ps_roi_pool (average) over integer bins
local function ref_roi_pool(x, rois, PH, PW, scale, ps)
  return per_bin(x, rois, PH, PW, ps, function(img, H, W, r, ph, pw)
    local sw, sh, ew, eh = cround(r[2] * scale), cround(r[3] * scale), cround(r[4] * scale), cround(r[5] * scale)
    local extra = ps and 0 or 1
    local bh, bw = math.max(eh - sh + extra, 1) / PH, math.max(ew - sw + extra, 1) / PW
    local hs = math.min(math.max(math.floor(ph * bh) + sh, 0), H)
    local he = math.min(math.max(math.ceil((ph + 1) * bh) + sh, 0), H)
    local ws = math.min(math.max(math.floor(pw * bw) + sw, 0), W)
    local we = math.min(math.max(math.ceil((pw + 1) * bw) + sw, 0), W)
    if he <= hs or we <= ws then return 0 end
    local v = ps and 0 or -math.huge
    for h = hs, he - 1 do
      for w = ws, we - 1 do
        if ps then v = v + img[h + 1][w + 1] else v = math.max(v, img[h + 1][w + 1]) end
      end
    end
    return ps and v / ((he - hs) * (we - ws)) or v
  end)
end

local function rois_table(t) return list(t) end

-- ---- the checks, run on a device ----

local function run(dev)
  local D = { device = dev }
  local D64 = { dtype = torch.float64, device = dev }
  local tag = "[" .. dev .. "] "

  T.test(tag .. "box_area, box_iou and the IoU variants", function()
    local a = torch.tensor({ { 0, 0, 2, 2 }, { 1, 1, 3, 4 } }, D64)
    local b = torch.tensor({ { 1, 1, 3, 3 }, { 4, 4, 5, 5 } }, D64)
    T.near(list(ops.box_area(a)), { 4, 6 }, 1e-12, "box_area")
    -- pair (0,0): inter 1, union 4+4-1=7; (1,0): inter 2x2=4, union 6+4-4=6; disjoint pairs 0
    T.near(list(ops.box_iou(a, b)), { { 1 / 7, 0 }, { 4 / 6, 0 } }, 1e-12, "box_iou")
    -- GIoU: enclosing boxes (0,0,3,3) area 9, (0,0,5,5) 25, (1,1,3,4) 6, (1,1,5,5) 16
    T.near(list(ops.generalized_box_iou(a, b)),
      { { 1 / 7 - (9 - 7) / 9, 0 - (25 - 5) / 25 }, { 4 / 6 - 0, 0 - (16 - 7) / 16 } }, 1e-12, "generalized_box_iou")
    -- DIoU of (0,0,2,2) and (1,1,3,3): centres (1,1), (2,2): dist^2 2, diagonal^2 18
    local d = list(ops.distance_box_iou(a, b))
    T.near(d[1][1], 1 / 7 - 2 / (18 + 1e-7), 1e-12, "distance_box_iou")
    -- CIoU: same aspect ratios -> v = 0 -> CIoU = DIoU
    T.near(list(ops.complete_box_iou(a, b))[1][1], d[1][1], 1e-12, "complete_box_iou, equal aspect")
    -- (1,1,3,4) vs (1,1,3,3): v = 4/pi^2 (atan(2/3) - atan(1))^2, alpha = v / (1 - iou + v)
    local v = 4 / math.pi ^ 2 * (math.atan(2 / 3) - math.atan(1)) ^ 2
    local iou = 4 / 6
    local diou = iou - (0.25) / (4 + 9 + 1e-7) -- centres (2, 2.5), (2, 2); enclosing (1,1,3,4)
    T.near(list(ops.complete_box_iou(a, b))[2][1], diou - v / (1 - iou + v + 1e-7) * v, 1e-12, "complete_box_iou")
    T.eq(ops.box_iou(a, torch.zeros(0, 4, D64)).shape:totable(), { 2, 0 }, "box_iou with no boxes")
  end)

  T.test(tag .. "box_convert, clip, remove_small_boxes, masks_to_boxes", function()
    local xyxy = torch.tensor({ { 1, 2, 5, 8 } }, D64)
    T.near(list(ops.box_convert(xyxy, "xyxy", "xywh")), { { 1, 2, 4, 6 } }, 0, "xyxy->xywh")
    T.near(list(ops.box_convert(xyxy, "xyxy", "cxcywh")), { { 3, 5, 4, 6 } }, 0, "xyxy->cxcywh")
    T.near(list(ops.box_convert(torch.tensor({ { 3, 5, 4, 6 } }, D64), "cxcywh", "xywh")), { { 1, 2, 4, 6 } }, 0, "cxcywh->xywh")
    T.near(list(ops.box_convert(torch.tensor({ { 1, 2, 4, 6 } }, D64), "xywh", "xyxy")), { { 1, 2, 5, 8 } }, 0, "xywh->xyxy")
    T.raises(function() return ops.box_convert(xyxy, "xyxy", "yxyx") end,
      "Unsupported Bounding Box Conversions for given in_fmt and out_fmt")
    T.near(list(ops.clip_boxes_to_image(torch.tensor({ { -2, 3, 12, 30 } }, D64), { 20, 10 })), { { 0, 3, 10, 20 } }, 0,
      "clip_boxes_to_image")
    local keep = ops.remove_small_boxes(torch.tensor({ { 0, 0, 1, 5 }, { 0, 0, 3, 3 }, { 0, 0, 5, 1.5 }, { 2, 2, 4, 4 } }, D64), 2)
    T.eq(list(keep), { 1, 3 }, "remove_small_boxes")
    T.eq(keep.dtype, torch.int64, "remove_small_boxes dtype")
    local m = torch.zeros(2, 5, 6, D)
    m[0][1][2] = 1; m[0][3][4] = 1; m[1][4][0] = 1
    T.near(list(ops.masks_to_boxes(m)), { { 2, 1, 4, 3 }, { 0, 4, 0, 4 } }, 0, "masks_to_boxes")
    T.raises(function() return ops.masks_to_boxes(torch.zeros(1, 3, 3, D)) end, "masks_to_boxes: a mask has no nonzero pixel")
  end)

  T.test(tag .. "nms and batched_nms against a greedy loop", function()
    torch.manual_seed(7)
    for trial = 1, 4 do
      local n = 60
      local xy = torch.rand(n, 2, D64) * 40
      local wh = torch.rand(n, 2, D64) * 20 + 1
      local boxes = torch.cat({ xy, xy + wh }, 1)
      local scores = torch.rand(n, D64)
      if trial == 2 then scores = (scores * 4):floor() end -- many ties: stable by index
      local thr = ({ 0.3, 0.5, 0.1, 0.7 })[trial]
      local keep = ops.nms(boxes, scores, thr)
      T.eq(list(keep), ref_nms(list(boxes), list(scores), thr), "nms trial " .. trial)
      T.eq(keep.dtype, torch.int64, "nms dtype")
      -- batched: the greedy loop per class, merged by score
      local cls = torch.randint(0, 3, { n }, { device = dev })
      local bk = ops.batched_nms(boxes, scores, cls, thr)
      local B, S, Cl = list(boxes), list(scores), list(cls)
      local want = {}
      for c = 0, 2 do
        local sub_b, sub_s, map = {}, {}, {}
        for i = 1, n do if Cl[i] == c then sub_b[#sub_b + 1], sub_s[#sub_s + 1], map[#map + 1] = B[i], S[i], i - 1 end end
        for _, j in ipairs(ref_nms(sub_b, sub_s, thr)) do want[#want + 1] = map[j + 1] end
      end
      table.sort(want, function(i, j) if S[i + 1] ~= S[j + 1] then return S[i + 1] > S[j + 1] end return i < j end)
      T.eq(list(bk), want, "batched_nms trial " .. trial)
    end
    T.eq(list(ops.nms(torch.zeros(0, 4, D), torch.zeros(0, D), 0.5)), {}, "nms of nothing")
    T.raises(function() return ops.nms(torch.zeros(3, 4, D), torch.zeros(2, D), 0.5) end,
      "boxes and scores should have the same number of elements in dimension 0, got 3 and 2")
  end)

  T.test(tag .. "box losses", function()
    local p = torch.tensor({ { 0, 0, 2, 2 }, { 1, 1, 3, 4 } }, D64)
    local g = torch.tensor({ { 1, 1, 3, 3 }, { 1, 1, 3, 3 } }, D64)
    local eps = 1e-7
    local l = list(ops.generalized_box_iou_loss(p, g))
    T.near(l[1], 1 - (1 / (7 + eps) - (9 - 7) / (9 + eps)), 1e-12, "giou loss")
    T.near(l[2], 1 - 4 / (6 + eps), 1e-12, "giou loss, enclosed")
    T.near(ops.generalized_box_iou_loss(p, g, "sum"):item(), l[1] + l[2], 1e-12, "giou sum")
    T.near(ops.generalized_box_iou_loss(p, g, { reduction = "mean" }):item(), (l[1] + l[2]) / 2, 1e-12, "giou mean")
    local dl = list(ops.distance_box_iou_loss(p, g))
    T.near(dl[1], 1 - 1 / (7 + eps) + 2 / (18 + eps), 1e-12, "diou loss")
    local v = 4 / math.pi ^ 2 * (math.atan(1) - math.atan(2 / 3)) ^ 2
    local iou = 4 / (6 + eps)
    T.near(list(ops.complete_box_iou_loss(p, g))[2], dl[2] + v / (1 - iou + v + eps) * v, 1e-12, "ciou loss")
    T.raises(function() return ops.generalized_box_iou_loss(p, g, "avg") end,
      "Invalid Value for arg 'reduction': 'avg \n Supported reduction modes: 'none', 'mean', 'sum'")
    T.raises(function() return ops.generalized_box_iou_loss(p, g, { reductio = "sum" }) end, "~unknown keyword 'reductio'")
    -- focal loss closed form
    local x = torch.tensor({ 0.3, -1.2, 2.0 }, D64)
    local t = torch.tensor({ 1, 0, 1 }, D64)
    local want = {}
    for i, xi in ipairs({ 0.3, -1.2, 2.0 }) do
      local ti = ({ 1, 0, 1 })[i]
      local pr = 1 / (1 + math.exp(-xi))
      local ce = -(ti * math.log(pr) + (1 - ti) * math.log(1 - pr))
      local pt = pr * ti + (1 - pr) * (1 - ti)
      want[i] = (0.25 * ti + 0.75 * (1 - ti)) * ce * (1 - pt) ^ 2
    end
    T.near(list(ops.sigmoid_focal_loss(x, t)), want, 1e-12, "sigmoid_focal_loss")
    T.near(ops.sigmoid_focal_loss(x, t, { alpha = -1, gamma = 0, reduction = "sum" }):item(),
      F.binary_cross_entropy_with_logits(x, t, { reduction = "sum" }):item(), 1e-12, "focal loss alpha<0, gamma 0 = BCE")
    -- gradients
    local pr = torch.tensor({ { 0.1, 0.2, 2.3, 2.1 }, { 1.2, 0.9, 3.4, 4.1 } }, D64)
    local gt = torch.tensor({ { 1.05, 1.1, 3.2, 2.9 }, { 0.8, 1.3, 3.1, 3.3 } }, D64)
    gradcheck(tag .. "giou loss", function(a, b) return ops.generalized_box_iou_loss(a, b) end, { pr, gt })
    gradcheck(tag .. "diou loss", function(a, b) return ops.distance_box_iou_loss(a, b) end, { pr, gt })
    gradcheck(tag .. "ciou loss (alpha fixed)", function(a) return ops.complete_box_iou_loss(a, gt) end, { pr },
      { tol = 1e-2 }) -- alpha has no gradient in torchvision: compare loosely
    gradcheck(tag .. "focal loss", function(a) return ops.sigmoid_focal_loss(a, t, { reduction = "mean" }) end, { x })
    gradcheck(tag .. "generalized_box_iou", function(a, b) return ops.generalized_box_iou(a, b) end, { pr, gt })
  end)

  T.test(tag .. "roi_align / ps_roi_align against a loop", function()
    torch.manual_seed(3)
    local x = torch.randn(2, 3, 7, 9, D64)
    local rois = torch.tensor({ { 0, 0.5, 1.2, 6.3, 5.1 }, { 1, 2.0, 0.0, 8.9, 6.9 }, { 1, -1.5, 3.2, 2.0, 9.5 },
      { 0, 3.3, 3.1, 3.6, 3.4 } }, D64)
    local R = rois_table(rois)
    for _, sr in ipairs({ -1, 2 }) do
      for _, aligned in ipairs({ false, true }) do
        local got = ops.roi_align(x, rois, { 3, 2 }, 1.0, sr, aligned)
        T.near(list(got), ref_roi_align(x, R, 3, 2, 1.0, sr, aligned, false), 1e-10,
          string.format("roi_align sr=%d aligned=%s", sr, tostring(aligned)))
      end
    end
    local rois2 = torch.cat({ rois:narrow(1, 0, 1), rois:narrow(1, 1, 4) * 2 }, 1)
    local half = ops.roi_align(x, rois2, 2, { spatial_scale = 0.5, sampling_ratio = -1 })
    local r2 = rois_table(rois2)
    T.near(list(half), ref_roi_align(x, r2, 2, 2, 0.5, -1, false, false), 1e-10, "roi_align spatial_scale")
    -- a list of per-image boxes gives the same as the [K, 5] form
    local b0 = torch.tensor({ { 0.5, 1.2, 6.3, 5.1 } }, D64)
    local b1 = torch.tensor({ { 2.0, 0.0, 8.9, 6.9 } }, D64)
    T.near(list(ops.roi_align(x, { b0, b1 }, 3)), list(ops.roi_align(x, rois:narrow(0, 0, 2), 3)), 0, "boxes as a list")
    local m = ops.RoIAlign({ 3, 2 }, 1.0, 2, true)
    T.near(list(m(x, rois)), ref_roi_align(x, R, 3, 2, 1.0, 2, true, false), 1e-10, "RoIAlign module")
    T.eq(tostring(m), "RoIAlign(output_size=(3, 2), spatial_scale=1.0, sampling_ratio=2, aligned=True)", "RoIAlign repr")
    local xp = torch.randn(2, 2 * 6, 7, 9, D64)
    for _, sr in ipairs({ -1, 2 }) do
      T.near(list(ops.ps_roi_align(xp, rois, { 3, 2 }, 1.0, sr)), ref_roi_align(xp, R, 3, 2, 1.0, sr, true, true), 1e-10,
        "ps_roi_align sr=" .. sr)
    end
    T.raises(function() return ops.roi_align(x, torch.zeros(2, 4, D64), 2) end,
      "The boxes tensor shape is not correct as Tensor[K, 5]")
    T.raises(function() return ops.roi_align(x, { torch.zeros(2, 5, D64) }, 2) end,
      "The shape of the tensor in the boxes list is not correct as List[Tensor[L, 4]]")
    T.raises(function() return ops.ps_roi_align(x, rois, 2) end,
      "~input channels must be a multiple of pooling height * pooling width")
    T.eq(ops.roi_align(x, torch.zeros(0, 5, D64), 2).shape:totable(), { 0, 3, 2, 2 }, "no rois")
    -- gradients w.r.t. the input
    local xs = torch.randn(2, 2, 5, 6, D64)
    local rs = torch.tensor({ { 0, 0.3, 0.7, 4.6, 3.9 }, { 1, 1.1, 0.2, 5.4, 4.3 }, { 0, 2.2, 1.6, 3.1, 4.8 } }, D64)
    gradcheck(tag .. "roi_align", function(a) return ops.roi_align(a, rs, 2, 1.0, -1, false) end, { xs })
    gradcheck(tag .. "roi_align aligned sr 2", function(a) return ops.roi_align(a, rs, { 2, 3 }, 1.0, 2, true) end, { xs })
    gradcheck(tag .. "ps_roi_align", function(a) return ops.ps_roi_align(a, rs, 1, 1.0, 2) end, { xs })
  end)

  T.test(tag .. "roi_pool / ps_roi_pool against a loop", function()
    torch.manual_seed(5)
    local x = torch.randn(2, 2, 8, 7, D64)
    local rois = torch.tensor({ { 0, 0.4, 1.6, 5.5, 6.2 }, { 1, 2.5, 0.0, 6.9, 7.9 }, { 1, -2.0, 4.4, 1.2, 12.0 },
      { 0, 3.0, 3.0, 3.0, 3.0 } }, D64)
    local R = rois_table(rois)
    T.near(list(ops.roi_pool(x, rois, { 3, 2 })), ref_roi_pool(x, R, 3, 2, 1.0, false), 1e-12, "roi_pool")
    T.near(list(ops.roi_pool(x, rois, 2, 0.5)), ref_roi_pool(x, R, 2, 2, 0.5, false), 1e-12, "roi_pool scale 0.5")
    T.near(list(ops.RoIPool(3, 1.0)(x, rois)), ref_roi_pool(x, R, 3, 3, 1.0, false), 1e-12, "RoIPool")
    local xp = torch.randn(2, 2 * 4, 8, 7, D64)
    T.near(list(ops.ps_roi_pool(xp, rois, 2)), ref_roi_pool(xp, R, 2, 2, 1.0, true), 1e-12, "ps_roi_pool")
    T.near(list(ops.PSRoIPool(2, 0.5)(xp, rois)), ref_roi_pool(xp, R, 2, 2, 0.5, true), 1e-12, "PSRoIPool")
    local rs = rois:narrow(0, 0, 3)
    gradcheck(tag .. "roi_pool", function(a) return ops.roi_pool(a, rs, 2) end, { x })
    gradcheck(tag .. "ps_roi_pool", function(a) return ops.ps_roi_pool(a, rs, 2) end, { xp })
  end)

  T.test(tag .. "MultiScaleRoIAlign", function()
    torch.manual_seed(9)
    local od = nn.OrderedDict()
    od.feat1 = torch.randn(1, 2, 16, 16, D64) -- scale 1/4 of a 64x64 image
    od.feat2 = torch.randn(1, 2, 8, 8, D64)   -- 1/8
    od.skip = torch.randn(1, 2, 4, 4, D64)
    local m = ops.MultiScaleRoIAlign({ "feat1", "feat2" }, 3, 2)
    -- sizes 20 (level floor(4 + log2(20/224)) = 0 -> clamped to 2) and 60 (level 2... ) and 300
    local boxes = torch.tensor({ { 0, 0, 20, 20 }, { 10, 10, 70, 70 }, { 0, 0, 63, 63 } }, D64)
    local got = m(od, { boxes }, { { 64, 64 } })
    -- levels: k = floor(4 + log2(sqrt(area)/224 + 1e-6)) clamped to [2, 3]: 20 -> 2, 60 -> 2, 63 -> 2
    local lv = list(require("tv_ops_roi")._map_levels({ boxes }, 2, 3, 224, 4, 1e-6))
    T.eq(lv, { 0, 0, 0 }, "level mapping small boxes")
    T.eq(list(require("tv_ops_roi")._map_levels({ torch.tensor({ { 0, 0, 112, 112 }, { 0, 0, 224, 224 },
      { 0, 0, 500, 500 } }, D64) }, 2, 5, 224, 4, 1e-6)), { 1, 2, 3 }, "level mapping 112/224/500")
    local rois = torch.cat({ torch.zeros(3, 1, D64), boxes }, 1)
    local want = ops.roi_align(od.feat1, rois, 3, 0.25, 2)
    T.near(list(got), list(want), 1e-12, "all on level 0")
    local big = torch.tensor({ { 0, 0, 20, 20 }, { 0, 0, 460, 460 }, { 5, 5, 30, 30 } }, D64)
    local got2 = m(od, { big }, { { 256, 256 } }) -- feat1 16/256 -> 1/16 (level 4), feat2 1/32 (level 5)
    local r = torch.cat({ torch.zeros(3, 1, D64), big }, 1)
    local w1 = ops.roi_align(od.feat1, r, 3, 1 / 16, 2)
    local w2 = ops.roi_align(od.feat2, r, 3, 1 / 32, 2)
    T.near(list(got2[0]), list(w1[0]), 1e-12, "small box on level 4")
    T.near(list(got2[1]), list(w2[1]), 1e-12, "big box on level 5")
    T.near(list(got2[2]), list(w1[2]), 1e-12, "order kept")
  end)

  T.test(tag .. "deform_conv2d", function()
    torch.manual_seed(11)
    local x = torch.randn(2, 4, 6, 7, D64)
    local w = torch.randn(6, 2, 3, 3, D64)
    local b = torch.randn(6, D64)
    local off = torch.zeros(2, 2 * 9, 3, 4, D64)
    local got = ops.deform_conv2d(x, off, w, b, { stride = 2, padding = 1, dilation = 1 })
    local want = F.conv2d(x, w, b, { stride = 2, padding = 1, groups = 2 })
    T.near(list(got), list(want), 1e-10, "zero offsets = conv2d (groups 2)")
    local off2 = torch.zeros(2, 2 * 2 * 9, 2, 3, D64)
    T.near(list(ops.deform_conv2d(x, off2, w, nil, 1, 0, 2)), list(F.conv2d(x, w, nil, 1, 0, 2, 2)), 1e-10,
      "zero offsets, 2 offset groups, dilation 2")
    -- an offset of exactly one pixel right equals a shifted input
    local w1 = torch.randn(3, 4, 1, 1, D64)
    local one = torch.zeros(2, 2, 6, 7, D64)
    one:select(1, 1):fill_(1)
    local shifted = F.pad(x:narrow(3, 1, 6), { 0, 1 })
    T.near(list(ops.deform_conv2d(x, one, w1)), list(F.conv2d(shifted, w1)), 1e-10, "offset of one pixel")
    -- a mask scales each tap
    local mask = torch.full({ 2, 9, 3, 4 }, 0.5, D64)
    T.near(list(ops.deform_conv2d(x, off, w, nil, { stride = 2, padding = 1, mask = mask })),
      list(F.conv2d(x, w, nil, { stride = 2, padding = 1, groups = 2 }) * 0.5), 1e-10, "mask 0.5")
    T.raises(function() return ops.deform_conv2d(x, torch.zeros(2, 5, 3, 4, D64), w) end,
      "~the shape of the offset tensor at dimension 1 is not valid")
    -- gradients for input, offset (away from integer positions), mask and weight
    local xs = torch.randn(1, 2, 4, 5, D64)
    local ws = torch.randn(2, 2, 2, 2, D64)
    local os = torch.rand(1, 8, 3, 4, D64) * 0.8 + 0.1
    local ms = torch.rand(1, 4, 3, 4, D64)
    gradcheck(tag .. "deform_conv2d", function(a, o, wt, mk) return ops.deform_conv2d(a, o, wt, nil, { mask = mk }) end,
      { xs, os, ws, ms })
    local m = ops.DeformConv2d(4, 6, 3, { padding = 1, groups = 2, bias = false })
    T.eq(tostring(m), "DeformConv2d(4, 6, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), groups=2, bias=False)", "repr")
    local keys = {}
    for _, kv in ipairs(ops.DeformConv2d(2, 3, 3):state_dict():items()) do keys[#keys + 1] = kv[1] end
    T.eq(keys, { "weight", "bias" }, "DeformConv2d keys")
    T.raises(function() return ops.DeformConv2d(3, 4, 3, { groups = 2 }) end, "in_channels must be divisible by groups")
  end)
end

-- ---- layers (CPU) ----

local function keys_of(m)
  local out = {}
  for _, kv in ipairs(m:state_dict():items()) do out[#out + 1] = kv[1] end
  return out
end

T.test("FrozenBatchNorm2d", function()
  torch.manual_seed(1)
  local bn = nn.BatchNorm2d(3)
  bn.weight.data:copy_(torch.randn(3)); bn.bias.data:copy_(torch.randn(3))
  bn.running_mean:copy_(torch.randn(3)); bn.running_var:copy_(torch.rand(3) + 0.5)
  bn:eval()
  local fb = ops.FrozenBatchNorm2d(3)
  local r = fb:load_state_dict(bn:state_dict())
  T.eq(#r.missing_keys + #r.unexpected_keys, 0, "loads a BatchNorm2d checkpoint")
  local x = torch.randn(2, 3, 4, 5)
  T.near(list(fb(x)), list(bn(x)), 1e-5, "FrozenBatchNorm2d = BatchNorm2d in eval")
  T.eq(keys_of(fb), { "weight", "bias", "running_mean", "running_var" }, "FrozenBatchNorm2d keys")
  T.eq(#fb:parameters(), 0, "no parameters")
  T.eq(tostring(fb), "FrozenBatchNorm2d(3, eps=1e-05)", "repr")
end)

T.test("Conv2dNormActivation, Conv3dNormActivation, SqueezeExcitation, MLP", function()
  local c = ops.Conv2dNormActivation(3, 8, { kernel_size = 3, stride = 2 })
  T.eq(keys_of(c), { "0.weight", "1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked" }, "keys")
  T.eq(c(torch.randn(1, 3, 9, 9)).shape:totable(), { 1, 8, 5, 5 }, "padding (k-1)//2")
  T.eq(c[0].padding, { 1, 1 }, "padding")
  local c2 = ops.Conv2dNormActivation(3, 4, { kernel_size = { 3, 5 }, norm_layer = false, activation_layer = false })
  T.eq(keys_of(c2), { "0.weight", "0.bias" }, "no norm: conv bias")
  T.eq(c2[0].padding, { 1, 2 }, "tuple kernel padding")
  local c3 = ops.Conv3dNormActivation(2, 4)
  T.eq(c3(torch.randn(1, 2, 5, 5, 5)).shape:totable(), { 1, 4, 5, 5, 5 }, "Conv3dNormActivation")
  T.check(nn.isinstance(c3[1], nn.BatchNorm3d), "BatchNorm3d")
  local se = ops.SqueezeExcitation(8, 2)
  T.eq(keys_of(se), { "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias" }, "SE keys")
  local x = torch.randn(2, 8, 3, 3)
  local s = torch.sigmoid(se.fc2(torch.relu(se.fc1(x:mean({ 2, 3 }, true)))))
  T.near(list(se(x)), list(x * s), 1e-6, "SE forward")
  local mlp = ops.MLP(5, { 7, 3 }, { norm_layer = nn.LayerNorm, dropout = 0.1 })
  T.eq(keys_of(mlp), { "0.weight", "0.bias", "1.weight", "1.bias", "4.weight", "4.bias" }, "MLP keys")
  T.eq(#mlp, 6, "Linear, LayerNorm, ReLU, Dropout, Linear, Dropout")
  mlp:eval()
  T.eq(mlp(torch.randn(4, 5)).shape:totable(), { 4, 3 }, "MLP forward")
  T.eq(ops.Permute({ 0, 2, 1 })(torch.zeros(2, 3, 4)).shape:totable(), { 2, 4, 3 }, "Permute")
  T.raises(function() return ops.MLP(3, { 4 }, { dropuot = 0 }) end, "~unknown keyword 'dropuot'")
end)

T.test("stochastic_depth, drop_block", function()
  torch.manual_seed(2)
  local x = torch.ones(1000, 4)
  local y = ops.stochastic_depth(x, 0.25, "row")
  local rows = y:sum(1)
  local kept = rows:gt(0):sum():item()
  T.check(kept > 700 and kept < 800, "row mode keeps about 75% (" .. kept .. ")")
  T.near(rows:max():item(), 4 / 0.75, 1e-6, "survivors scaled by 1/(1-p)")
  T.eq(list(ops.stochastic_depth(x, 0.5, "row", false)), list(x), "not training: identity")
  local b = ops.stochastic_depth(torch.ones(8, 3), 0.5, "batch"):unique():tolist()
  T.check(#b == 1 and (b[1] == 0 or b[1] == 2), "batch mode: all or nothing")
  T.raises(function() return ops.stochastic_depth(x, 0.5, "col") end, "mode has to be either 'batch' or 'row', but got col")
  T.eq(tostring(ops.StochasticDepth(0.2, "row")), "StochasticDepth(p=0.2, mode=row)", "repr")
  -- drop_block2d: zeroed cells come in block_size x block_size squares; survivors scaled
  local img = torch.ones(4, 3, 16, 16)
  local d = ops.drop_block2d(img, 0.2, 3)
  local zeros = d:eq(0):sum():item()
  T.check(zeros > 0 and zeros < img:numel(), "some blocks dropped")
  local nz = d:ne(0)
  T.near(d[nz]:max():item(), img:numel() / nz:sum():item(), 1e-4, "rescaled by numel/kept")
  -- every zero lies in a 3x3 zero square: max-pooling the zero map with 3x3 erosion and dilation gives it back
  local z = d:eq(0):to(torch.float32)
  local eroded = -F.max_pool2d(-z, { kernel_size = 3, stride = 1, padding = 1 })
  local opened = F.max_pool2d(eroded, { kernel_size = 3, stride = 1, padding = 1 })
  -- squares touching the border are clipped, so check the interior
  T.eq(list(opened:narrow(2, 2, 12):narrow(3, 2, 12)),
    list(z:narrow(2, 2, 12):narrow(3, 2, 12)), "zeros form 3x3 blocks")
  T.eq(list(ops.drop_block2d(img, 0.2, 3, false, 1e-6, false)), list(img), "not training")
  T.raises(function() return ops.drop_block2d(torch.ones(3, 4, 4), 0.1, 3) end, "input should be 4 dimensional. Got 3 dimensions.")
  T.raises(function() return ops.drop_block3d(img, 0.1, 3) end, "input should be 5 dimensional. Got 4 dimensions.")
  local d3 = ops.DropBlock3d(0.3, 3)(torch.ones(2, 2, 6, 6, 6))
  T.check(d3:eq(0):any():item(), "DropBlock3d drops")
  T.eq(tostring(ops.DropBlock2d(0.1, 5)), "DropBlock2d(p=0.1, block_size=5, inplace=False)", "repr")
end)

T.test("FeaturePyramidNetwork", function()
  torch.manual_seed(4)
  local fpn = ops.FeaturePyramidNetwork({ 4, 8 }, 5, { extra_blocks = ops.LastLevelMaxPool() })
  T.eq(keys_of(fpn), { "inner_blocks.0.0.weight", "inner_blocks.0.0.bias", "inner_blocks.1.0.weight",
    "inner_blocks.1.0.bias", "layer_blocks.0.0.weight", "layer_blocks.0.0.bias", "layer_blocks.1.0.weight",
    "layer_blocks.1.0.bias" }, "FPN keys")
  T.eq(fpn.inner_blocks[0][0].bias:abs():sum():item(), 0.0, "zero biases")
  local od = nn.OrderedDict()
  od.c3 = torch.randn(1, 4, 8, 8)
  od.c4 = torch.randn(1, 8, 4, 4)
  local out = fpn(od)
  T.eq(out:keys(), { "c3", "c4", "pool" }, "names")
  -- by hand: top level, then the lateral plus the nearest-upsampled top
  local top = fpn.inner_blocks[1](od.c4)
  T.near(list(out.c4), list(fpn.layer_blocks[1](top)), 1e-5, "top level")
  local up = top:repeat_interleave(2, 2):repeat_interleave(2, 3)
  T.near(list(out.c3), list(fpn.layer_blocks[0](fpn.inner_blocks[0](od.c3) + up)), 1e-5, "top-down path")
  T.eq(out.pool.shape:totable(), { 1, 5, 2, 2 }, "LastLevelMaxPool")
  T.near(list(out.pool), list(out.c4:narrow(2, 0, 1) and out.c4[":, :, ::2, ::2"]), 0, "pool = stride-2 subsample")
  local p67 = ops.FeaturePyramidNetwork({ 4, 8 }, 5, { extra_blocks = ops.LastLevelP6P7(5, 5) })
  T.eq(p67(od):keys(), { "c3", "c4", "p6", "p7" }, "LastLevelP6P7 names")
  T.raises(function() return ops.FeaturePyramidNetwork({ 0, 4 }, 5) end, "in_channels=0 is currently not supported")
end)

T.test("models use the ops layers", function()
  local models = require("torchvision").models
  T.check(models.Conv2dNormActivation == ops.Conv2dNormActivation, "one Conv2dNormActivation")
  T.check(models.SqueezeExcitation == ops.SqueezeExcitation and models.StochasticDepth == ops.StochasticDepth, "one SE, SD")
  T.check(nn.isinstance(models.MLPBlock(4, 8, 0.0), ops.MLP), "ViT's MLPBlock is an MLP")
end)

run("cpu")
if torch.cuda.is_available() then
  run("cuda")
else
  T.skip("no CUDA: the ops checks on cuda", 1)
end
