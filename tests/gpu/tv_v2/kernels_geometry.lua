-- Runs tv_v2_kernels_geometry's kernels on fixed inputs and writes inputs and outputs for
-- kernels_geometry.py, which recomputes each case with torchvision.transforms.v2.functional and
-- compares. Usage: nnrepl tests/gpu/tv_v2/kernels_geometry.lua OUTDIR [DEVICE]
-- OUTDIR/cases.jsonl: one case a line, {"name", "kernel", "args", "kwargs", "out"}; a tensor is
-- {"t": values (flat), "dtype", "shape"}, a box format {"fmt": name}, a canvas size {"canvas": [h, w]}.
local out = assert(arg and arg[1], "usage: nnrepl tests/gpu/tv_v2/kernels_geometry.lua OUTDIR [DEVICE]")
local dev = arg[2] or (torch.cuda.is_available() and "cuda" or "cpu")
os.execute("mkdir -p '" .. out .. "'")
local G = require "tv_v2_kernels_geometry"
local json = require "json"

torch.manual_seed(7)
local file = assert(io.open(out .. "/cases.jsonl", "w"))
local count = 0

local function FMT(s) return { fmt = s } end
local function CANVAS(h, w) return { canvas = { h, w } } end
local NULL = setmetatable({}, { __tostring = function() return "null" end })

local function encode(v)
  if v == nil or v == NULL then return "null" end
  if type(v) == "boolean" then return tostring(v) end
  if type(v) == "string" then return json.string(v) end
  if type(v) == "number" then return math.type(v) == "integer" and tostring(v) or json.float(v) end
  if torch.is_tensor(v) then
    local c = v:cpu():contiguous()
    local vals = c:numel() > 0 and c:reshape(-1):tolist() or {}
    local parts = {}
    for i, x in ipairs(vals) do
      if type(x) == "boolean" then parts[i] = x and "1" or "0" else parts[i] = encode(x) end
    end
    return string.format('{"t": [%s], "dtype": "%s", "shape": [%s]}', table.concat(parts, ","),
      tostring(c.dtype):gsub("^torch%.", ""), table.concat(c.shape:totable(), ","))
  end
  if v.fmt then return '{"fmt": ' .. json.string(v.fmt) .. "}" end
  if v.canvas then return '{"canvas": [' .. v.canvas[1] .. ", " .. v.canvas[2] .. "]}" end
  if #v > 0 or next(v) == nil then
    local parts = {}
    for i = 1, #v do parts[i] = encode(v[i]) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  local parts = {}
  for k, x in pairs(v) do parts[#parts + 1] = json.string(k) .. ": " .. encode(x) end
  table.sort(parts)
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- the Lua value of an argument
local function plain(v)
  if v == NULL then return nil end
  if type(v) == "table" and not torch.is_tensor(v) then
    if v.fmt then return v.fmt end
    if v.canvas then return { v.canvas[1], v.canvas[2] } end
  end
  return v
end

-- case(name, kernel, {args...}, kwargs): runs G[kernel] on DEVICE and writes the line
local function case(name, kernel, args, kwargs)
  local call = {}
  for i = 1, #args do
    local a = plain(args[i])
    if torch.is_tensor(a) then a = a:to(dev) end
    call[i] = a
  end
  if kwargs then
    local kw = {}
    for k, v in pairs(kwargs) do kw[k] = plain(v) end
    call[#args + 1] = kw
  end
  local res = table.pack(G[kernel](table.unpack(call, 1, #args + (kwargs and 1 or 0))))
  local outs = {}
  for i = 1, res.n do
    local r = res[i]
    if type(r) == "table" and not torch.is_tensor(r) then r = CANVAS(r[1], r[2]) end
    outs[i] = r
  end
  file:write(string.format('{"name": %s, "kernel": %s, "args": %s, "kwargs": %s, "out": %s}\n', json.string(name),
    json.string(kernel), encode(args), kwargs and encode(kwargs) or "{}", encode(outs)))
  count = count + 1
end

-- random XYXY boxes inside [lo, hi] of an h x w canvas
local function rand_boxes(n, h, w, lo, hi)
  lo, hi = lo or 0, hi or 1
  local a = torch.rand(n, 2) * (hi - lo) + lo
  local b = torch.rand(n, 2) * (hi - lo) + lo
  local mn, mx = torch.minimum(a, b), torch.maximum(a, b)
  local s = torch.tensor({ w, h }):float()
  return torch.cat({ mn * s, mx * s }, 1)
end

local H, W = 24, 32
local fb = rand_boxes(6, H, W, -0.2, 1.2)          -- some partly outside
local inside = rand_boxes(5, H, W, 0.05, 0.9)
local ib = fb:round():to(torch.int64)
local formats = { "XYXY", "XYWH", "CXCYWH" }
local function as(boxes, f) return G.convert_bounding_box_format(boxes, "XYXY", f) end
local kp = torch.rand(7, 2) * torch.tensor({ W, H }):float() * 1.2 - 2
local kp3 = torch.rand(2, 3, 2) * 20
local r5 = torch.tensor({ { 10, 12, 8, 4, 30 }, { 5, 6, 3, 7, -60 } }):float()

for _, f in ipairs(formats) do
  for _, g in ipairs(formats) do case("convert float " .. f .. "->" .. g, "convert_bounding_box_format", { as(fb, f), FMT(f), FMT(g) }) end
  case("convert int XYXY->" .. f, "convert_bounding_box_format", { ib, FMT("XYXY"), FMT(f) })
  case("convert int " .. f .. "->XYXY", "convert_bounding_box_format", { as(ib, f), FMT(f), FMT("XYXY") })
end
for _, f in ipairs({ "XYWHR", "CXCYWHR", "XYXYXYXY" }) do
  case("convert rotated CXCYWHR->" .. f, "convert_bounding_box_format", { r5, FMT("CXCYWHR"), FMT(f) })
end
case("convert rotated XYXYXYXY->XYWHR", "convert_bounding_box_format",
  { G.convert_bounding_box_format(r5, "CXCYWHR", "XYXYXYXY"), FMT("XYXYXYXY"), FMT("XYWHR") })

for _, f in ipairs(formats) do
  case("clamp " .. f, "clamp_bounding_boxes", { as(fb, f), FMT(f), CANVAS(H, W) }, { clamping_mode = "soft" })
  case("clamp int " .. f, "clamp_bounding_boxes", { as(ib, f), FMT(f), CANVAS(H, W) }, { clamping_mode = "soft" })
  case("hflip " .. f, "horizontal_flip_bounding_boxes", { as(fb, f), FMT(f), CANVAS(H, W) })
  case("vflip int " .. f, "vertical_flip_bounding_boxes", { as(ib, f), FMT(f), CANVAS(H, W) })
end
for _, f in ipairs({ "XYWHR", "CXCYWHR", "XYXYXYXY" }) do
  local r = G.convert_bounding_box_format(r5, "CXCYWHR", f)
  case("hflip " .. f, "horizontal_flip_bounding_boxes", { r, FMT(f), CANVAS(H, W) })
  case("vflip " .. f, "vertical_flip_bounding_boxes", { r, FMT(f), CANVAS(H, W) })
end
case("clamp keypoints", "clamp_keypoints", { kp, CANVAS(H, W) })
case("hflip keypoints", "horizontal_flip_keypoints", { kp, CANVAS(H, W) })
case("vflip keypoints 3-D", "vertical_flip_keypoints", { kp3, CANVAS(H, W) })

case("resize boxes", "resize_bounding_boxes", { fb, CANVAS(H, W), { 17, 45 } })
case("resize int boxes", "resize_bounding_boxes", { ib, CANVAS(H, W), { 17, 45 } })
case("resize boxes size int max_size", "resize_bounding_boxes", { fb, CANVAS(H, W), { 20 }, 25 })
case("resize boxes size None", "resize_bounding_boxes", { fb, CANVAS(H, W), NULL, 50 })
case("resize boxes CXCYWH", "resize_bounding_boxes", { as(fb, "CXCYWH"), CANVAS(H, W), { 30, 20 } }, { format = FMT("CXCYWH") })
case("resize empty boxes", "resize_bounding_boxes", { torch.zeros(0, 4), CANVAS(H, W), { 12, 16 } })
case("resize keypoints", "resize_keypoints", { kp, { 13, 50 }, CANVAS(H, W) })
case("resize keypoints max_size", "resize_keypoints", { kp, { 16 }, CANVAS(H, W), 30 })

local m2 = (torch.rand(H, W) * 4):floor():to(torch.int64)
local m3 = (torch.rand(2, H, W) * 255):floor():to(torch.uint8)
local mb = torch.rand(3, H, W):gt(0.5)
local masks = { { "int64 2-D", m2 }, { "uint8 3-D", m3 }, { "bool 3-D", mb } }
for _, m in ipairs(masks) do
  local n, t = m[1], m[2]
  case("resize mask " .. n, "resize_mask", { t, { 37, 21 } })
  case("crop mask " .. n, "crop_mask", { t, -3, 5, 20, 30 })
  case("center crop mask " .. n, "center_crop_mask", { t, { 15, 40 } })
  case("resized crop mask " .. n, "resized_crop_mask", { t, 2, 3, 15, 20, { 30, 25 } })
  case("pad mask " .. n, "pad_mask", { t, { 1, 2, 3, 4 } })
  case("pad mask reflect " .. n, "pad_mask", { t, { 2, 3 } }, { padding_mode = "reflect" })
  case("affine mask " .. n, "affine_mask", { t, 25.0, { 2.0, -3.0 }, 0.9, { 10.0, 5.0 } })
  case("rotate mask " .. n, "rotate_mask", { t, 33.0 })
  case("rotate mask expand " .. n, "rotate_mask", { t, -47.0, true })
  case("rotate mask 90 " .. n, "rotate_mask", { t, 90.0, true })
  case("perspective mask " .. n, "perspective_mask", { t, { { 0, 0 }, { 31, 0 }, { 31, 23 }, { 0, 23 } }, { { 2, 1 }, { 29, 3 }, { 30, 22 }, { 1, 20 } } })
  case("elastic mask " .. n, "elastic_mask", { t, (torch.rand(1, H, W, 2) - 0.5) * 0.2 })
end

for _, f in ipairs(formats) do
  case("crop " .. f, "crop_bounding_boxes", { as(fb, f), FMT(f), 3, -2, 15, 20 })
  case("crop int " .. f, "crop_bounding_boxes", { as(ib, f), FMT(f), 3, 4, 15, 20 })
  case("center crop " .. f, "center_crop_bounding_boxes", { as(fb, f), FMT(f), CANVAS(H, W), { 15, 21 } })
  case("resized crop " .. f, "resized_crop_bounding_boxes", { as(fb, f), FMT(f), 2, 3, 15, 20, { 30, 25 } })
  case("pad " .. f, "pad_bounding_boxes", { as(fb, f), FMT(f), CANVAS(H, W), { 1, 2, 3, 4 } })
  case("pad int " .. f, "pad_bounding_boxes", { as(ib, f), FMT(f), CANVAS(H, W), 3 })
  case("affine " .. f, "affine_bounding_boxes", { as(fb, f), FMT(f), CANVAS(H, W), 25.0, { 2.0, -3.0 }, 0.9, { 10.0, 5.0 } })
  case("affine int " .. f, "affine_bounding_boxes", { as(ib, f), FMT(f), CANVAS(H, W), -15.0, { 1.0, 1.0 }, 1.3, { 0.0, 0.0 }, { 5.0, 7.0 } })
  case("rotate " .. f, "rotate_bounding_boxes", { as(fb, f), FMT(f), CANVAS(H, W), 33.0 })
  case("rotate expand " .. f, "rotate_bounding_boxes", { as(fb, f), FMT(f), CANVAS(H, W), -47.0, true })
  case("rotate expand int " .. f, "rotate_bounding_boxes", { as(ib, f), FMT(f), CANVAS(H, W), 120.0, true })
  case("perspective " .. f, "perspective_bounding_boxes",
    { as(fb, f), FMT(f), CANVAS(H, W), { { 0, 0 }, { 31, 0 }, { 31, 23 }, { 0, 23 } }, { { 2, 1 }, { 29, 3 }, { 30, 22 }, { 1, 20 } } })
  case("perspective int " .. f, "perspective_bounding_boxes",
    { as(ib, f), FMT(f), CANVAS(H, W), NULL, NULL, { 1.1, 0.05, -0.5, 0.02, 0.95, 0.3, 0.004, -0.003 } })
  local d = (torch.rand(1, H, W, 2) - 0.5) * 0.1
  case("elastic " .. f, "elastic_bounding_boxes", { as(inside, f), FMT(f), CANVAS(H, W), d })
  case("elastic int " .. f, "elastic_bounding_boxes", { as(inside:round():to(torch.int64), f), FMT(f), CANVAS(H, W), d })
end
case("crop keypoints", "crop_keypoints", { kp, 3, -2, 15, 20 })
case("center crop keypoints", "center_crop_keypoints", { kp, CANVAS(H, W), { 15, 21 } })
case("resized crop keypoints", "resized_crop_keypoints", { kp, 2, 3, 15, 20, { 30, 25 } })
case("pad keypoints", "pad_keypoints", { kp, CANVAS(H, W), { 1, 2, 3, 4 } })
case("affine keypoints", "affine_keypoints", { kp, CANVAS(H, W), 25.0, { 2.0, -3.0 }, 0.9, { 10.0, 5.0 } })
case("rotate keypoints", "rotate_keypoints", { kp, CANVAS(H, W), 33.0 })
case("rotate keypoints expand", "rotate_keypoints", { kp3, CANVAS(H, W), -47.0, true })
case("rotate keypoints center", "rotate_keypoints", { kp, CANVAS(H, W), 60.0, false, { 3.0, 4.0 } })
case("perspective keypoints", "perspective_keypoints",
  { kp, CANVAS(H, W), { { 0, 0 }, { 31, 0 }, { 31, 23 }, { 0, 23 } }, { { 2, 1 }, { 29, 3 }, { 30, 22 }, { 1, 20 } } })
case("elastic keypoints", "elastic_keypoints", { kp, CANVAS(H, W), (torch.rand(1, H, W, 2) - 0.5) * 0.1 })
-- rotated boxes (float32), some partly outside
local rb = torch.cat({ torch.rand(6, 1) * W * 1.2 - 3, torch.rand(6, 1) * H * 1.2 - 3, torch.rand(6, 2) * 10 + 2,
  torch.rand(6, 1) * 180 - 90 }, 1)
local rinside = torch.cat({ torch.rand(4, 1) * (W - 10) + 5, torch.rand(4, 1) * (H - 10) + 5, torch.rand(4, 2) * 3 + 1,
  torch.rand(4, 1) * 180 - 90 }, 1)
for _, f in ipairs({ "XYWHR", "CXCYWHR", "XYXYXYXY" }) do
  local r = G.convert_bounding_box_format(rb, "CXCYWHR", f)
  case("clamp soft " .. f, "clamp_bounding_boxes", { r, FMT(f), CANVAS(H, W) }, { clamping_mode = "soft" })
  case("clamp hard " .. f, "clamp_bounding_boxes", { r, FMT(f), CANVAS(H, W) }, { clamping_mode = "hard" })
  case("resize " .. f, "resize_bounding_boxes", { r, CANVAS(H, W), { 17, 45 } }, { format = FMT(f) })
  case("crop " .. f, "crop_bounding_boxes", { r, FMT(f), 3, -2, 15, 20 })
  case("pad " .. f, "pad_bounding_boxes", { r, FMT(f), CANVAS(H, W), { 1, 2, 3, 4 } })
  case("affine " .. f, "affine_bounding_boxes", { r, FMT(f), CANVAS(H, W), 25.0, { 2.0, -3.0 }, 0.9, { 10.0, 5.0 } })
  case("rotate expand " .. f, "rotate_bounding_boxes", { r, FMT(f), CANVAS(H, W), -47.0, true })
  case("perspective " .. f, "perspective_bounding_boxes",
    { r, FMT(f), CANVAS(H, W), { { 0, 0 }, { 31, 0 }, { 31, 23 }, { 0, 23 } }, { { 2, 1 }, { 29, 3 }, { 30, 22 }, { 1, 20 } } })
  case("elastic " .. f, "elastic_bounding_boxes",
    { G.convert_bounding_box_format(rinside, "CXCYWHR", f), FMT(f), CANVAS(H, W), (torch.rand(1, H, W, 2) - 0.5) * 0.1 })
end
case("affine empty boxes", "affine_bounding_boxes", { torch.zeros(0, 4), FMT("XYXY"), CANVAS(H, W), 10.0, { 0.0, 0.0 }, 1.0, { 0.0, 0.0 } })

file:close()
print(string.format("%d cases on %s written to %s/cases.jsonl", count, dev, out))
