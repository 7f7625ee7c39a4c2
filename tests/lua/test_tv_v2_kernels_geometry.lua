-- torchvision.transforms.v2 geometry kernels for boxes, key points and masks
-- (bindings/lua/tv_v2_kernels_geometry.lua), against values worked out by hand or by plain Lua
-- loops over the box corners.
local T = ...
local G = require "tv_v2_kernels_geometry"

local function L(t) return t:cpu():tolist() end

-- equal values (2.0 and 2 alike: float results compare with the numbers worked out by hand)
local function EQ(got, want, msg) return T.near(got, want, 0, msg) end

-- plain Lua: the corners of XYXY boxes through (x, y) -> f(x, y), their hull clamped to h x w
local function hull_ref(boxes, f, h, w)
  local out = {}
  for i, b in ipairs(boxes) do
    local xs, ys = {}, {}
    for k, p in ipairs({ { b[1], b[2] }, { b[3], b[2] }, { b[3], b[4] }, { b[1], b[4] } }) do xs[k], ys[k] = f(p[1], p[2]) end
    local function c(v, hi) return math.min(math.max(v, 0), hi) end
    out[i] = { c(math.min(table.unpack(xs)), w), c(math.min(table.unpack(ys)), h), c(math.max(table.unpack(xs)), w), c(math.max(table.unpack(ys)), h) }
  end
  return out
end

-- the nearest-neighbour resize of a 2-D list, as torch's "nearest": src = floor(dst * in / out)
local function nearest_ref(m, oh, ow)
  local h, w = #m, #m[1]
  local out = {}
  for i = 0, oh - 1 do
    out[i + 1] = {}
    for j = 0, ow - 1 do out[i + 1][j + 1] = m[math.floor(i * h / oh) + 1][math.floor(j * w / ow) + 1] end
  end
  return out
end

local function run(dev)
  local o = { device = dev }
  local function f32(v) return torch.tensor(v, { dtype = torch.float32, device = dev }) end
  local function f64(v) return torch.tensor(v, { dtype = torch.float64, device = dev }) end
  local function i64(v) return torch.tensor(v, { dtype = torch.int64, device = dev }) end
  local function tag(s) return dev .. ": " .. s end

  T.test(tag("convert_bounding_box_format"), function()
    local xyxy = f32({ { 1, 2, 5, 8 }, { -3, 4, 12, 9.5 } })
    EQ(L(G.convert_bounding_box_format(xyxy, "XYXY", "XYWH")), { { 1, 2, 4, 6 }, { -3, 4, 15, 5.5 } }, "xyxy->xywh")
    EQ(L(G.convert_bounding_box_format(xyxy, "XYXY", "CXCYWH")), { { 3, 5, 4, 6 }, { 4.5, 6.75, 15, 5.5 } }, "xyxy->cxcywh")
    EQ(L(G.convert_bounding_box_format(f32({ { 3, 5, 4, 6 } }), "CXCYWH", "XYWH")), { { 1, 2, 4, 6 } }, "cxcywh->xywh")
    -- integer boxes: halves floored as torchvision's trick does
    EQ(L(G.convert_bounding_box_format(i64({ { 1, 2, 6, 9 } }), "XYXY", "CXCYWH")), { { 3, 5, 5, 7 } }, "int xyxy->cxcywh")
    EQ(L(G.convert_bounding_box_format(i64({ { 3, 5, 5, 7 } }), "CXCYWH", "XYXY")), { { 0, 1, 5, 8 } }, "int cxcywh->xyxy")
    EQ(G.convert_bounding_box_format(i64({ { 3, 5, 5, 7 } }), "cxcywh", "xyxy").dtype, torch.int64, "keeps dtype, lower-case names")
    -- every format round-trips
    local r5 = f64({ { 10, 20, 4, 6, 30 }, { 3, 4, 5, 2, -70 } })
    for _, pair in ipairs({ { "XYXY", "XYWH" }, { "XYXY", "CXCYWH" }, { "XYWH", "CXCYWH" } }) do
      local there = G.convert_bounding_box_format(xyxy, "XYXY", pair[1])
      local back = G.convert_bounding_box_format(G.convert_bounding_box_format(there, pair[1], pair[2]), pair[2], "XYXY")
      T.near(L(back), L(xyxy), 1e-6, "round trip via " .. pair[1] .. "/" .. pair[2])
    end
    for _, fa in ipairs({ "XYWHR", "CXCYWHR", "XYXYXYXY" }) do
      for _, fb in ipairs({ "XYWHR", "CXCYWHR", "XYXYXYXY" }) do
        local a = G.convert_bounding_box_format(r5, "CXCYWHR", fa)
        local back = G.convert_bounding_box_format(G.convert_bounding_box_format(a, fa, fb), fb, "CXCYWHR")
        T.near(L(back), L(r5), 1e-9, "rotated round trip " .. fa .. "/" .. fb)
      end
    end
    -- XYWHR by hand: w along angle r (y up), h perpendicular
    local c = math.cos(math.rad(30)); local s = math.sin(math.rad(30))
    T.near(L(G.convert_bounding_box_format(f64({ { 1, 2, 4, 6, 30 } }), "XYWHR", "XYXYXYXY")),
      { { 1, 2, 1 + 4 * c, 2 - 4 * s, 1 + 4 * c + 6 * s, 2 - 4 * s + 6 * c, 1 + 6 * s, 2 + 6 * c } }, 1e-12, "xywhr corners")
    T.near(L(G.convert_bounding_box_format(f64({ { 1, 2, 4, 6, 30 } }), "XYWHR", "CXCYWHR")),
      { { 1 + 2 * c + 3 * s, 2 - 2 * s + 3 * c, 4, 6, 30 } }, 1e-12, "xywhr center")
    -- in place
    local x = xyxy:clone()
    local y = G.convert_bounding_box_format(x, "XYXY", "XYWH", true)
    EQ(L(x), { { 1, 2, 4, 6 }, { -3, 4, 15, 5.5 } }, "inplace writes the input")
    local r = r5:clone()
    G.convert_bounding_box_format(r, "CXCYWHR", "XYWHR", true)
    T.near(L(r), L(G.convert_bounding_box_format(r5, "CXCYWHR", "XYWHR")), 0, "rotated inplace of the same width")
    local x2 = xyxy:clone()
    G.convert_bounding_box_format(x2, "XYXY", "XYWH", { inplace = false })
    EQ(L(x2), L(xyxy), "not in place by default")
    EQ(L(G.convert_bounding_box_format(torch.zeros(0, 4, o), "XYXY", "CXCYWH")), {}, "empty")
    EQ(L(G.convert_bounding_box_format(f32({ { { 1, 2, 3, 4 } } }), "XYXY", "XYWH")), { { { 1, 2, 2, 2 } } }, "leading dims")
    T.raises(function() G.convert_bounding_box_format(xyxy, "XYXY", "XYWHR") end, "Cannot convert between rotated and unrotated bounding boxes.")
    T.raises(function() G.convert_bounding_box_format(xyxy, "XYZ", "XYWH") end,
      "convert_bounding_box_format: unknown bounding box format 'XYZ' (expected one of XYXY, XYWH, CXCYWH, XYWHR, CXCYWHR, XYXYXYXY)")
    T.raises(function() G.convert_bounding_box_format(f32({ { 1, 2, 3 } }), "XYXY", "XYWH") end,
      "convert_bounding_box_format: bounding boxes in format XYXY need a last dimension of 4, got shape [1, 3]")
    T.raises(function() G.convert_bounding_box_format(xyxy, "XYXY", "XYWH", { inplce = true }) end, "~unknown keyword 'inplce'")
    T.raises(function() G.convert_bounding_box_format(xyxy, "XYXY") end, "~missing required argument 'new_format'")
  end)

  T.test(tag("clamp"), function()
    local b = f32({ { -2, 1, 5, 12 }, { 3, -4, 20, 6 } })
    EQ(L(G.clamp_bounding_boxes(b, "XYXY", { 10, 8 })), { { 0, 1, 5, 10 }, { 3, 0, 8, 6 } }, "xyxy")
    -- XYWH: through XYXY and back (x2 = 12 -> 8, so w = 8 - 0)
    EQ(L(G.clamp_bounding_boxes(f32({ { -2, 1, 14, 3 } }), "XYWH", { 10, 8 })), { { 0, 1, 8, 3 } }, "xywh")
    EQ(L(G.clamp_bounding_boxes(f32({ { 7, 5, 6, 2 } }), "CXCYWH", { 10, 8 })), { { 6, 5, 4, 2 } }, "cxcywh (x1 = 4, x2 = 10 -> 8)")
    local ib = G.clamp_bounding_boxes(i64({ { -2, 1, 5, 12 } }), "XYXY", { 10, 8 })
    EQ({ L(ib), ib.dtype }, { { { 0, 1, 5, 10 } }, torch.int64 }, "int boxes keep their dtype")
    EQ(L(G.clamp_bounding_boxes(b, "XYXY", { 10, 8 }, false)), L(b), "clamping_mode false: unchanged")
    EQ(L(G.clamp_bounding_boxes(b, "XYXY", { 10, 8 }, { clamping_mode = "hard" })), { { 0, 1, 5, 10 }, { 3, 0, 8, 6 } }, "hard = soft unrotated")
    T.raises(function() G.clamp_bounding_boxes(b, "XYXY", { 10, 8 }, "medium") end, "~clamping_mode must be")
    -- rotated boxes: axis-aligned ones clamp as unrotated ones; boxes inside stay; a corner cut off
    -- by one side keeps the box in soft mode (its two edges there still bound what is left)
    local r = f32({ { -2, 1, 6, 4, 0 }, { 3, 2, 4, 3, 0 }, { 5, 5, 4, 2, 30 } })
    for _, mode in ipairs({ "soft", "hard" }) do
      EQ(L(G.clamp_bounding_boxes(r, "XYWHR", { 8, 10 }, mode)), { { 0, 1, 4, 4, 0 }, { 3, 2, 4, 3, 0 }, { 5, 5, 4, 2, 30 } }, "rotated clamp " .. mode)
    end
    local cut = f32({ { 1, 3, 6, 4, 45 } })
    T.near(L(G.clamp_bounding_boxes(cut, "XYWHR", { 8, 10 })), L(cut), 1e-6, "soft: corner cut keeps the box")
    local hard = G.clamp_bounding_boxes(cut, "XYWHR", { 8, 10 }, "hard")
    local hc = L(G.convert_bounding_box_format(hard, "XYWHR", "XYXYXYXY"))[1]
    local inside = true
    for k = 1, 8, 2 do inside = inside and hc[k] >= -1e-4 and hc[k] <= 10 + 1e-4 and hc[k + 1] >= -1e-4 and hc[k + 1] <= 8 + 1e-4 end
    T.check(inside and math.abs(L(hard)[1][5] - 45) < 1e-4, "hard: the corners inside, the angle kept")
    T.raises(function() G.clamp_bounding_boxes(b, "XYXY", 10) end, "~canvas_size must be a list")
    local kp = f32({ { -1, 3 }, { 9, 12 }, { 2.5, 4.5 } })
    EQ(L(G.clamp_keypoints(kp, { 10, 8 })), { { 0, 3 }, { 7, 9 }, { 2.5, 4.5 } }, "keypoints clamp to W-1, H-1")
    EQ(G.clamp_keypoints(i64({ { -1, 3 } }), { 10, 8 }).dtype, torch.int64, "keypoints keep dtype")
    T.raises(function() G.clamp_keypoints(f32({ 1, 2, 3 }), { 10, 8 }) end, "clamp_keypoints: keypoints need a last dimension of 2, got shape [3]")
  end)

  T.test(tag("flips"), function()
    local b = i64({ { 1, 2, 5, 8 } })
    EQ(L(G.horizontal_flip_bounding_boxes(b, "XYXY", { 10, 12 })), { { 7, 2, 11, 8 } }, "hflip xyxy")
    EQ(L(G.vertical_flip_bounding_boxes(b, "XYXY", { 10, 12 })), { { 1, 2, 5, 8 } }, "vflip xyxy (symmetric)")
    EQ(L(G.vertical_flip_bounding_boxes(i64({ { 1, 1, 5, 4 } }), "XYXY", { 10, 12 })), { { 1, 6, 5, 9 } }, "vflip xyxy")
    EQ(L(G.horizontal_flip_bounding_boxes(i64({ { 1, 2, 4, 6 } }), "XYWH", { 10, 12 })), { { 7, 2, 4, 6 } }, "hflip xywh")
    EQ(L(G.vertical_flip_bounding_boxes(i64({ { 1, 2, 4, 6 } }), "XYWH", { 10, 12 })), { { 1, 2, 4, 6 } }, "vflip xywh")
    EQ(L(G.horizontal_flip_bounding_boxes(f32({ { 3, 5, 4, 6 } }), "CXCYWH", { 10, 12 })), { { 9, 5, 4, 6 } }, "hflip cxcywh")
    EQ(L(G.vertical_flip_bounding_boxes(f32({ { 3, 4, 4, 6 } }), "CXCYWH", { 10, 12 })), { { 3, 6, 4, 6 } }, "vflip cxcywh")
    EQ(L(G.horizontal_flip_bounding_boxes(torch.zeros(0, 4, o), "XYXY", { 10, 12 })), {}, "empty")
    -- rotated: flipping XYWHR / CXCYWHR gives the flipped XYXYXYXY corners
    local r = f64({ { 2, 3, 4, 2, 25 } })
    local corners = G.convert_bounding_box_format(r, "XYWHR", "XYXYXYXY")
    for _, fl in ipairs({ "horizontal", "vertical" }) do
      local flip = G[fl .. "_flip_bounding_boxes"]
      local want = L(flip(corners, "XYXYXYXY", { 10, 12 }))
      T.near(L(G.convert_bounding_box_format(flip(r, "XYWHR", { 10, 12 }), "XYWHR", "XYXYXYXY")), want, 1e-9, fl .. " xywhr")
      local cr = G.convert_bounding_box_format(r, "XYWHR", "CXCYWHR")
      T.near(L(G.convert_bounding_box_format(flip(cr, "CXCYWHR", { 10, 12 }), "CXCYWHR", "XYXYXYXY")), want, 1e-9, fl .. " cxcywhr")
    end
    local kp = f32({ { 0, 0 }, { 2.5, 7 } })
    EQ(L(G.horizontal_flip_keypoints(kp, { 10, 12 })), { { 11, 0 }, { 8.5, 7 } }, "hflip keypoints about W-1")
    EQ(L(G.vertical_flip_keypoints(kp, { 10, 12 })), { { 0, 9 }, { 2.5, 2 } }, "vflip keypoints about H-1")
    local m = torch.arange(6, o):view(2, 3)
    EQ(L(G.horizontal_flip_mask(m)), { { 2, 1, 0 }, { 5, 4, 3 } }, "hflip mask")
    EQ(L(G.vertical_flip_mask(m)), { { 3, 4, 5 }, { 0, 1, 2 } }, "vflip mask")
  end)

  T.test(tag("resize"), function()
    local b = i64({ { 1, 3, 5, 7 } })
    local out, canvas = G.resize_bounding_boxes(b, { 8, 10 }, { 12, 25 })
    -- ratios 2.5 (w) and 1.5 (h); integer results truncated
    EQ({ L(out), out.dtype, canvas }, { { { 2, 4, 12, 10 } }, torch.int64, { 12, 25 } }, "int boxes")
    out, canvas = G.resize_bounding_boxes(f32({ { 1, 3, 5, 7 } }), { 8, 10 }, 4)
    EQ({ L(out), canvas }, { { { 0.5, 1.5, 2.5, 3.5 } }, { 4, 5 } }, "int size: shorter edge")
    -- size 4 on 8 x 20 asks for 4 x 10; max_size 6 caps it to 2 x 6 (int(6 * 4 / 10) = 2)
    out, canvas = G.resize_bounding_boxes(f32({ { 1, 3, 5, 7 } }), { 8, 20 }, { 4 }, 6)
    EQ(canvas, { 2, 6 }, "max_size caps the longer edge")
    T.near(L(out), { { 0.3, 0.75, 1.5, 1.75 } }, 1e-6, "max_size ratios")
    out, canvas = G.resize_bounding_boxes(f32({ { 1, 3, 5, 7 } }), { 8, 10 }, nil, 20)
    EQ(canvas, { 16, 20 }, "size None, max_size")
    local same, c2 = G.resize_bounding_boxes(b, { 8, 10 }, { 8, 10 })
    T.check(same == b and c2[1] == 8 and c2[2] == 10, "same size: the input itself")
    EQ({ L(G.resize_bounding_boxes(f32({ { 1, 3, 5, 7 } }), { 8, 10 }, { 16, 20 }, { format = "CXCYWH" })) }, { { { 2, 6, 10, 14 } } }, "format keyword")
    T.raises(function() G.resize_bounding_boxes(b, { 8, 10 }, { 4, 5 }, 6) end, "~max_size should only be passed if size is None or specifies the length of the smaller edge")
    T.raises(function() G.resize_bounding_boxes(b, { 8, 10 }, 6, 6) end,
      "resize_bounding_boxes: max_size = 6 must be strictly greater than the requested size for the smaller edge size = [6]")
    T.raises(function() G.resize_bounding_boxes(b, { 8, 10 }, nil) end, "~max_size must be an integer when size is None")
    -- rotated boxes scaled alike in x and y keep their angle
    out, canvas = G.resize_bounding_boxes(f32({ { 5, 4, 4, 2, 30 } }), { 8, 10 }, { 16, 20 }, nil, "CXCYWHR")
    T.near({ L(out), canvas }, { { { 10, 8, 8, 4, 30 } }, { 16, 20 } }, 1e-5, "rotated resize")
    local e, ec = G.resize_bounding_boxes(torch.zeros(0, 4, o), { 8, 10 }, { 4, 5 })
    EQ({ L(e), ec }, { {}, { 4, 5 } }, "empty boxes")
    local kp, kc = G.resize_keypoints(f32({ { 1, 3 }, { 9, 7 } }), { 16, 5 }, { 8, 10 })
    EQ({ L(kp), kc }, { { { 0.5, 6 }, { 4.5, 14 } }, { 16, 5 } }, "keypoints (size before canvas_size)")
    -- masks: nearest, dtype kept, 2-D / 3-D / 4-D
    local ml = { { 1, 0, 2 }, { 3, 1, 0 } }
    for _, dt in ipairs({ torch.uint8, torch.int64, torch.bool, torch.float32 }) do
      local m = torch.tensor(ml, { dtype = dt, device = dev })
      local r = G.resize_mask(m, { 5, 7 })
      local want = nearest_ref(L(m), 5, 7)
      EQ({ L(r), r.dtype }, { want, dt }, "resize_mask " .. tostring(dt))
      EQ(L(G.resize_mask(m:view(1, 2, 3), { 5, 7 })), { want }, "3-D mask")
      EQ(G.resize_mask(m:view(1, 1, 2, 3):expand(2, 3, 2, 3), { 5, 7 }).shape:totable(), { 2, 3, 5, 7 }, "4-D mask")
    end
    EQ(G.resize_mask(torch.zeros(0, 4, 6, o), 2).shape:totable(), { 0, 2, 3 }, "empty mask")
    EQ(G.resize_mask(torch.zeros(4, 6, o), 2, 3).shape:totable(), { 2, 3 }, "mask max_size")
  end)

  T.test(tag("crop"), function()
    local b = i64({ { 1, 2, 5, 8 }, { 6, 0, 14, 3 } })
    local out, canvas = G.crop_bounding_boxes(b, "XYXY", 1, 2, 5, 6)
    EQ({ L(out), canvas }, { { { 0, 1, 3, 5 }, { 4, 0, 6, 2 } }, { 5, 6 } }, "crop xyxy, clamped")
    out = G.crop_bounding_boxes(f32({ { 1, 2, 4, 6 } }), "XYWH", { top = 1, left = 2, height = 5, width = 6 })
    EQ(L(out), { { 0, 1, 3, 4 } }, "crop xywh (keywords)")
    out = G.crop_bounding_boxes(f32({ { 1, 2, 5, 8 } }), "XYXY", -2, -3, 20, 20)
    EQ(L(out), { { 4, 4, 8, 10 } }, "negative top/left: implicit pad")
    EQ(L((G.crop_bounding_boxes(torch.zeros(0, 4, o), "XYXY", 1, 2, 5, 6))), {}, "empty")
    local kp, kc = G.crop_keypoints(f32({ { 1, 2 }, { 6, 9 } }), 1, 2, 5, 6)
    EQ({ L(kp), kc }, { { { -1, 1 }, { 4, 8 } }, { 5, 6 } }, "keypoints are not clamped")
    local m = torch.arange(1, 13, o):view(3, 4):to(torch.int64)
    EQ(L(G.crop_mask(m, 1, 1, 2, 2)), { { 6, 7 }, { 10, 11 } }, "crop mask")
    EQ(L(G.crop_mask(m, -1, 2, 3, 3)), { { 0, 0, 0 }, { 3, 4, 0 }, { 7, 8, 0 } }, "crop mask outside is 0")
    EQ(G.crop_mask(m:view(1, 3, 4), 0, 0, 2, 2).shape:totable(), { 1, 2, 2 }, "3-D mask")
    T.raises(function() G.crop_mask(m, 0.5, 0, 2, 2) end, "crop_mask: top must be an integer, got 0.5")
    -- center crop: anchor round((H - h) / 2) with Python's rounding (half to even)
    out, canvas = G.center_crop_bounding_boxes(f32({ { 0, 0, 4, 5 } }), "XYXY", { 5, 7 }, { 2, 4 })
    -- top = round(1.5) = 2, left = round(1.5) = 2
    EQ({ L(out), canvas }, { { { 0, 0, 2, 2 } }, { 2, 4 } }, "center crop boxes")
    kp, kc = G.center_crop_keypoints(f32({ { 3, 3 } }), { 5, 7 }, 3)
    EQ({ L(kp), kc }, { { { 1, 2 } }, { 3, 3 } }, "center crop keypoints, top = round(1) = 1, left = round(2) = 2")
    kp = G.center_crop_keypoints(f32({ { 3, 3 } }), { 6, 8 }, { 3 })
    EQ(L(kp), { { 1, 1 } }, "round(2.5) = 2")
    kp, kc = G.center_crop_keypoints(f32({ { 3, 3 } }), { 5, 7 }, { 10, 12 })
    EQ({ L(kp), kc }, { { { 5, 5 } }, { 10, 12 } }, "crop larger than the canvas: top = left = round(-2.5) = -2")
    EQ(L(G.center_crop_mask(m, { 1, 2 })), { { 6, 7 } }, "center crop mask")
    EQ(L(G.center_crop_mask(m, 5)), { { 0, 0, 0, 0, 0 }, { 1, 2, 3, 4, 0 }, { 5, 6, 7, 8, 0 }, { 9, 10, 11, 12, 0 }, { 0, 0, 0, 0, 0 } }, "center crop mask pads (left (5-4)//2 = 0, right 1)")
    -- resized crop: crop then resize
    out, canvas = G.resized_crop_bounding_boxes(f32({ { 2, 2, 6, 4 } }), "XYXY", 1, 2, 4, 4, { 8, 8 })
    EQ({ L(out), canvas }, { { { 0, 2, 8, 6 } }, { 8, 8 } }, "resized crop boxes")
    kp, kc = G.resized_crop_keypoints(f32({ { 3, 2 } }), 1, 2, 4, 4, { 8, 2 })
    EQ({ L(kp), kc }, { { { 0.5, 2 } }, { 8, 2 } }, "resized crop keypoints")
    local rm = G.resized_crop_mask(m:to(torch.uint8), 1, 1, 2, 2, { 4, 4 })
    EQ({ L(rm), rm.dtype }, { { { 6, 6, 7, 7 }, { 6, 6, 7, 7 }, { 10, 10, 11, 11 }, { 10, 10, 11, 11 } }, torch.uint8 }, "resized crop mask")
  end)

  T.test(tag("pad"), function()
    local out, canvas = G.pad_bounding_boxes(i64({ { 1, 2, 5, 8 } }), "XYXY", { 10, 12 }, { 1, 2, 3, 4 })
    EQ({ L(out), canvas, out.dtype }, { { { 2, 4, 6, 10 } }, { 16, 16 }, torch.int64 }, "pad xyxy ltrb")
    out, canvas = G.pad_bounding_boxes(f32({ { 1, 2, 4, 6 } }), "XYWH", { 10, 12 }, { 3, 1 })
    EQ({ L(out), canvas }, { { { 4, 3, 4, 6 } }, { 12, 18 } }, "pad xywh (lr, tb)")
    out, canvas = G.pad_bounding_boxes(f32({ { 3, 5, 4, 6 } }), "CXCYWH", { 10, 12 }, 2)
    EQ({ L(out), canvas }, { { { 5, 7, 4, 6 } }, { 14, 16 } }, "pad cxcywh int padding")
    out = G.pad_bounding_boxes(f32({ { -5, 2, 20, 6 } }), "XYXY", { 10, 12 }, { 1 })
    EQ(L(out), { { 0, 3, 14, 7 } }, "pad then clamp")
    T.raises(function() G.pad_bounding_boxes(f32({ { 1, 2, 3, 4 } }), "XYXY", { 10, 12 }, 1, "edge") end,
      "pad_bounding_boxes: Padding mode 'edge' is not supported with bounding boxes")
    T.raises(function() G.pad_bounding_boxes(f32({ { 1, 2, 3, 4 } }), "XYXY", { 10, 12 }, { 1, 2, 3 }) end,
      "pad_bounding_boxes: Padding must be an int or a 1, 2, or 4 element tuple or list. Found 3")
    local kp, kc = G.pad_keypoints(f32({ { 1, 2 } }), { 10, 12 }, { 1, 2, 3, 4 })
    EQ({ L(kp), kc }, { { { 2, 4 } }, { 16, 16 } }, "pad keypoints")
    T.raises(function() G.pad_keypoints(f32({ { 1, 2 } }), { 10, 12 }, 1, "reflect") end,
      "pad_keypoints: Padding mode 'reflect' is not supported with KeyPoints (supported modes are constant)")
    local m = torch.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = torch.int64, device = dev })
    EQ(L(G.pad_mask(m, { 1, 0, 0, 1 }, 7)), { { 7, 1, 2 }, { 7, 3, 4 }, { 7, 7, 7 } }, "pad mask fill")
    EQ(L(G.pad_mask(m, 1, { padding_mode = "edge" })), { { 1, 1, 2, 2 }, { 1, 1, 2, 2 }, { 3, 3, 4, 4 }, { 3, 3, 4, 4 } }, "pad mask edge")
    EQ(G.pad_mask(m:bool(), 1).dtype, torch.bool, "bool mask")
    T.raises(function() G.pad_mask(m, 1, { 1, 2 }) end, "pad_mask: Non-scalar fill value is not supported")
    T.raises(function() G.pad_mask(m, 1, 0, "wrap") end,
      "pad_mask: `padding_mode` should be either `'constant'`, `'edge'`, `'reflect'` or `'symmetric'`, but got `'wrap'`.")
  end)

  T.test(tag("affine"), function()
    local boxes = { { 1, 2, 5, 8 }, { 6, 1, 9, 3 } }
    local h, w = 10, 12
    -- rotation + scale + translation about the center (6, 5): [[s cos, -s sin], [s sin, s cos]]
    local ang, s, tx, ty = 30, 1.2, 1.5, -2
    local ca, sa = math.cos(math.rad(ang)), math.sin(math.rad(ang))
    local function f(x, y)
      local dx, dy = x - 6, y - 5
      return 6 + tx + s * (ca * dx - sa * dy), 5 + ty + s * (sa * dx + ca * dy)
    end
    local out = G.affine_bounding_boxes(f64(boxes), "XYXY", { h, w }, ang, { tx, ty }, s, { 0, 0 })
    T.near(L(out), hull_ref(boxes, f, h, w), 1e-9, "rotate-scale-translate hull, clamped")
    -- shear x alone: x' = x - tan(sx) (y - cy), about an explicit center
    local sx = 20
    local function g(x, y) return x - math.tan(math.rad(sx)) * (y - 3), y end
    out = G.affine_bounding_boxes(f64(boxes), "XYXY", { h, w }, 0, { 0, 0 }, 1.0, sx, { 4, 3 })
    T.near(L(out), hull_ref(boxes, g, h, w), 1e-9, "shear x about center")
    -- other formats go through XYXY; float32 boxes
    local xywh = G.convert_bounding_box_format(f32(boxes), "XYXY", "XYWH")
    out = G.affine_bounding_boxes(xywh, "XYWH", { h, w }, ang, { tx, ty }, s, { 0, 0 })
    T.near(L(G.convert_bounding_box_format(out, "XYWH", "XYXY")), hull_ref(boxes, f, h, w), 1e-5, "xywh")
    -- integer boxes: worked in float32, truncated back
    out = G.affine_bounding_boxes(i64(boxes), "XYXY", { h, w }, ang, { tx, ty }, s, { 0, 0 })
    local want = {}
    for i, b in ipairs(hull_ref(boxes, f, h, w)) do
      want[i] = {}
      for k, v in ipairs(b) do want[i][k] = math.tointeger(v < 0 and math.ceil(v) or math.floor(v)) end
    end
    EQ({ L(out), out.dtype }, { want, torch.int64 }, "int boxes")
    EQ(L(G.affine_bounding_boxes(torch.zeros(0, 4, o), "XYXY", { h, w }, 30, { 0, 0 }, 1, 0)), {}, "empty")
    local kp, kc = G.affine_keypoints(f64({ { 1, 2 }, { 14, -3 } }), { h, w }, ang, { tx, ty }, s, { 0, 0 })
    local k1x, k1y = f(1, 2)
    local k2x, k2y = f(14, -3)
    T.near(L(kp), { { k1x, k1y }, { k2x, k2y } }, 1e-9, "keypoints are not clamped")
    EQ(kc, { h, w }, "keypoints canvas")
    T.raises(function() G.affine_bounding_boxes(f64(boxes), "XYXY", { h, w }, 0, { 0 }, 1, 0) end,
      "affine_bounding_boxes: Argument translate should be a sequence of length 2")
    T.raises(function() G.affine_bounding_boxes(f64(boxes), "XYXY", { h, w }, 0, { 0, 0 }, 0, 0) end,
      "affine_bounding_boxes: Argument scale should be positive")
    T.raises(function() G.affine_keypoints(f64({ { 1, 2 } }), { h, w }, "x", { 0, 0 }, 1, 0) end,
      "affine_keypoints: Argument angle should be int or float")
    -- masks: identity is the mask; a half turn about the centre of a 3 x 3 mask reverses it
    local m = torch.arange(9, o):view(3, 3):to(torch.int64)
    local am = G.affine_mask(m, 0, { 0, 0 }, 1.0, 0)
    EQ({ L(am), am.dtype }, { L(m), torch.int64 }, "affine mask identity")
    EQ(L(G.affine_mask(m:bool(), 180, { 0, 0 }, 1.0, 0)), L(m:flip({ 0, 1 }):bool()), "affine mask half turn (bool)")
    EQ(L(G.affine_mask(m, 0, { 1, 0 }, 1.0, 0, 5)), { { 5, 0, 1 }, { 5, 3, 4 }, { 5, 6, 7 } }, "affine mask translate, fill")
  end)

  T.test(tag("rotate"), function()
    local boxes = { { 1, 2, 5, 8 } }
    -- 90 degrees counter-clockwise about (5, 4) on a 8 x 10 canvas: (x, y) -> (5 + (y - 4), 4 - (x - 5))
    local function f(x, y) return 5 + (y - 4), 4 - (x - 5) end
    local out, canvas = G.rotate_bounding_boxes(f64(boxes), "XYXY", { 8, 10 }, 90)
    T.near(L(out), hull_ref(boxes, f, 8, 10), 1e-9, "rotate 90")
    EQ(canvas, { 8, 10 }, "canvas unchanged without expand")
    -- expand: the canvas corners move to x in [1, 9], y in [-1, 9]; shift by (-1, +1), canvas 10 x 8
    out, canvas = G.rotate_bounding_boxes(f64(boxes), "XYXY", { 8, 10 }, 90, true)
    T.near(L(out), hull_ref(boxes, function(x, y) local a, b = f(x, y); return a - 1, b + 1 end, 10, 8), 1e-9, "rotate 90 expand")
    EQ(canvas, { 10, 8 }, "expanded canvas")
    out, canvas = G.rotate_bounding_boxes(i64(boxes), "XYXY", { 8, 10 }, 180, { expand = true })
    EQ({ L(out), canvas }, { { { 5, 0, 9, 6 } }, { 8, 10 } }, "half turn, int boxes")
    local kp, kc = G.rotate_keypoints(f64({ { 1, 2 } }), { 8, 10 }, 90, true)
    T.near(L(kp), { { 2, 9 } }, 1e-9, "rotate keypoints expand")
    EQ(kc, { 10, 8 }, "keypoints expanded canvas")
    kp = G.rotate_keypoints(f64({ { 1, 2 } }), { 8, 10 }, -90, false, { 0, 0 })
    T.near(L(kp), { { -2, 1 } }, 1e-9, "-90 about the origin: affine by +90, (x, y) -> (-y, x)")
    local m = torch.arange(6, o):view(2, 3):to(torch.uint8)
    local r = G.rotate_mask(m, 90, true)
    EQ({ L(r), r.dtype }, { { { 2, 5 }, { 1, 4 }, { 0, 3 } }, torch.uint8 }, "rotate mask 90 expand")
    EQ(L(G.rotate_mask(m:to(torch.int64), 180)), { { 5, 4, 3 }, { 2, 1, 0 } }, "rotate mask 180")
    EQ(L(G.rotate_mask(m:view(1, 2, 3), 0)), L(m:view(1, 2, 3)), "rotate mask 0")
    local sq = torch.arange(9, o):view(3, 3):to(torch.int64)
    EQ(L(G.rotate_mask(sq, 90, false, { 1.5, 1.5 })), { { 2, 5, 8 }, { 1, 4, 7 }, { 0, 3, 6 } }, "rotate mask 90 about the centre through the warp")
  end)

  T.test(tag("perspective"), function()
    -- coefficients map output to input: x_in = x_out - 2, y_in = y_out - 3; boxes move by (+2, +3)
    local c = { 1, 0, -2, 0, 1, -3, 0, 0 }
    local out = G.perspective_bounding_boxes(f32({ { 1, 2, 5, 8 } }), "XYXY", { 10, 12 }, nil, nil, c)
    EQ(L(out), { { 3, 5, 7, 10 } }, "translation, clamped")
    out = G.perspective_bounding_boxes(i64({ { 1, 2, 5, 8 } }), "XYXY", { 20, 20 }, { coefficients = { 2, 0, 0, 0, 2, 0, 0, 0 } })
    EQ({ L(out), out.dtype }, { { { 0, 1, 2, 4 } }, torch.int64 }, "scale 1/2, int boxes truncated")
    out = G.perspective_bounding_boxes(f32({ { 1, 2, 5, 8 } }), "XYXY", { 20, 20 }, { { 0, 0 }, { 9, 0 }, { 9, 9 }, { 0, 9 } }, { { 1, 1 }, { 10, 1 }, { 10, 10 }, { 1, 10 } })
    T.near(L(out), { { 2, 3, 6, 9 } }, 1e-5, "startpoints/endpoints shifted by one")
    -- a projective map: each transformed corner maps back to its corner through the coefficients
    local pc = { 1.1, 0.05, -0.5, 0.02, 0.95, 0.3, 0.004, -0.003 }
    local pts = { { 1, 2 }, { 5, 2 }, { 5, 8 }, { 1, 8 } }
    local kp = L(G.perspective_keypoints(f64(pts), { 10, 12 }, nil, nil, pc))
    for i, p in ipairs(kp) do
      local x, y = p[1], p[2]
      local den = pc[7] * x + pc[8] * y + 1
      T.near({ (pc[1] * x + pc[2] * y + pc[3]) / den, (pc[4] * x + pc[5] * y + pc[6]) / den }, pts[i], 1e-9, "keypoint " .. i .. " maps back")
    end
    local xs, ys = {}, {}
    for i, p in ipairs(kp) do xs[i], ys[i] = p[1], p[2] end
    out = G.perspective_bounding_boxes(f64({ { 1, 2, 5, 8 } }), "XYXY", { 10, 12 }, nil, nil, pc)
    T.near(L(out), { { math.max(0, math.min(table.unpack(xs))), math.max(0, math.min(table.unpack(ys))), math.min(12, math.max(table.unpack(xs))), math.min(10, math.max(table.unpack(ys))) } }, 1e-9, "projective hull")
    EQ(L(G.perspective_bounding_boxes(torch.zeros(0, 4, o), "XYXY", { 10, 12 }, nil, nil, c)), {}, "empty")
    T.raises(function() G.perspective_bounding_boxes(f32({ { 1, 2, 3, 4 } }), "XYXY", { 10, 12 }, { { 0, 0 } }, { { 0, 0 } }, c) end,
      "perspective_bounding_boxes: The startpoints/endpoints and the coefficients shouldn't be defined concurrently.")
    T.raises(function() G.perspective_bounding_boxes(f32({ { 1, 2, 3, 4 } }), "XYXY", { 10, 12 }) end,
      "perspective_bounding_boxes: Either the startpoints/endpoints or the coefficients must have non `None` values.")
    T.raises(function() G.perspective_keypoints(f32({ { 1, 2 } }), { 10, 12 }, nil, nil, { 1, 2 }) end,
      "perspective_keypoints: Argument coefficients should have 8 float values")
    T.raises(function() G.perspective_keypoints(f32({ { 1, 2 } }), { 10, 12 }, nil, nil, { 1, 1, 0, 1, 1, 0, 0, 0 }) end,
      "~can not be inverted to transform keypoints. Denominator is zero")
    local m = torch.arange(6, o):view(2, 3):to(torch.int64)
    EQ(L(G.perspective_mask(m, nil, nil, nil, { 1, 0, 0, 0, 1, 0, 0, 0 })), L(m), "perspective mask identity")
    EQ(L(G.perspective_mask(m, nil, nil, 9, { 1, 0, -1, 0, 1, 0, 0, 0 })), { { 9, 0, 1 }, { 9, 3, 4 } }, "perspective mask shift, fill")
  end)

  T.test(tag("rotated boxes"), function()
    local box = f64({ { 5, 4, 4, 2, 30 } })
    local out, canvas = G.rotate_bounding_boxes(box, "CXCYWHR", { 8, 10 }, 20)
    T.near({ L(out), canvas }, { { { 5, 4, 4, 2, 50 } }, { 8, 10 } }, 1e-9, "rotation about the centre adds to the angle")
    out, canvas = G.crop_bounding_boxes(box, "CXCYWHR", 1, 1, 7, 9)
    T.near({ L(out), canvas }, { { { 4, 3, 4, 2, 30 } }, { 7, 9 } }, 1e-9, "crop moves the centre")
    local corners = G.convert_bounding_box_format(box, "CXCYWHR", "XYXYXYXY")
    local shifted = L(corners)[1]
    for k = 1, 8, 2 do shifted[k], shifted[k + 1] = shifted[k] + 2, shifted[k + 1] + 1 end
    out, canvas = G.pad_bounding_boxes(corners, "XYXYXYXY", { 8, 10 }, { 2, 1 })
    T.near({ L(out), canvas }, { { shifted }, { 10, 14 } }, 1e-9, "pad moves the corners")
    out = G.affine_bounding_boxes(corners, "XYXYXYXY", { 8, 10 }, 0, { 2, 1 }, 1.0, 0)
    T.near(L(out), { shifted }, 1e-9, "affine translation")
    out = G.perspective_bounding_boxes(corners, "XYXYXYXY", { 8, 10 }, nil, nil, { 1, 0, -2, 0, 1, -1, 0, 0 })
    T.near(L(out), { shifted }, 1e-9, "perspective translation")
    out = G.elastic_bounding_boxes(f64({ { 5.2, 4.5, 4, 2, 30 } }), "CXCYWHR", { 8, 10 }, torch.zeros(1, 8, 10, 2, o))
    T.near(L(out), { { 6, 5, 4, 2, 30 } }, 1e-9, "elastic moves the centre pixel")
    out = G.clamp_bounding_boxes(f64({ { 5, 4, 40, 2, 30 } }), "CXCYWHR", { 8, 10 }, false)
    EQ(L(out), { { 5, 4, 40, 2, 30 } }, "clamping_mode false")
  end)

  T.test(tag("elastic"), function()
    local h, w = 8, 10
    local zero = torch.zeros(1, h, w, 2, o)
    -- identity grid: a corner goes to the pixel ceil(x) (boxes) / trunc(x) (keypoints)
    local out = G.elastic_bounding_boxes(f32({ { 1.2, 2, 4.5, 6.7 } }), "XYXY", { h, w }, zero)
    EQ(L(out), { { 2, 2, 5, 7 } }, "zero displacement")
    -- constant displacement (0.2, -0.25) in grid units moves points by -(0.2 * W/2, -0.25 * H/2) = (-1, +1)
    local d = torch.zeros(1, h, w, 2, o)
    d:select(3, 0):fill_(0.2)
    d:select(3, 1):fill_(-0.25)
    out = G.elastic_bounding_boxes(i64({ { 2, 2, 5, 6 } }), "XYXY", { h, w }, d)
    EQ({ L(out), out.dtype }, { { { 1, 3, 4, 7 } }, torch.int64 }, "constant displacement, int boxes")
    out = G.elastic_bounding_boxes(f32({ { 3.5, 4, 3, 4 } }), "CXCYWH", { h, w }, d)
    EQ(L(out), { { 2.5, 5, 3, 4 } }, "cxcywh")
    local kp = G.elastic_keypoints(f32({ { 1.7, 2.2 }, { 12, -3 } }), { h, w }, d)
    T.near(L(kp), { { 0, 3 }, { 8, 1 } }, 1e-6, "keypoints truncated and clamped to the grid")
    EQ(L(G.elastic_bounding_boxes(torch.zeros(0, 4, o), "XYXY", { h, w }, zero)), {}, "empty")
    T.raises(function() G.elastic_bounding_boxes(f32({ { 1, 2, 3, 4 } }), "XYXY", { h, w }, torch.zeros(1, h, w, o)) end,
      "~Argument displacement shape should be (1, 8, 10, 2), but given torch.Size([1, 8, 10])")
    T.raises(function() G.elastic_keypoints(f32({ { 1, 2 } }), { h, w }, 3) end, "elastic_keypoints: Argument displacement should be a Tensor")
    T.raises(function() G.elastic_bounding_boxes(f32({ { 1, 2, 30, 4 } }), "XYXY", { h, w }, zero) end, "~outside the displacement grid")
    local m = torch.arange(80, o):view(h, w):to(torch.int64)
    local em = G.elastic_mask(m, zero)
    EQ({ L(em), em.dtype }, { L(m), torch.int64 }, "elastic mask identity")
    local sm = G.elastic_mask(m:view(1, h, w), d, 0)
    -- sampled at x + 1, y - 1 (nearest), 0 outside
    local want = {}
    for y = 0, h - 1 do
      want[y + 1] = {}
      for x = 0, w - 1 do
        local sx, sy = x + 1, y - 1
        want[y + 1][x + 1] = (sx < w and sy >= 0) and sy * w + sx or 0
      end
    end
    EQ(L(sm), { want }, "elastic mask shifted")
  end)
end

local before = T.passed + T.failed
run("cpu")

if torch.cuda.is_available() then
  run("cuda")
else
  T.skip("no CUDA: the cuda run of every check", T.passed + T.failed - before)
end
