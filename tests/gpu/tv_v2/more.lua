-- Runs the deterministic functionals of tv_v2_meta / tv_v2_misc (box and keypoint metadata,
-- sanitize, channels, temporal subsampling, jpeg) on fixed inputs and writes, one JSON line a
-- case, the call and nnrepl's outputs for more.py, which redoes each call with
-- torchvision.transforms.v2.functional and compares.
-- Usage: nnrepl tests/gpu/tv_v2/more.lua OUTDIR [DEVICE]
-- A tensor is {"t": flat values, "dtype", "shape"}; BoundingBoxes add "fmt" and "canvas",
-- KeyPoints add "canvas" (and "kp": true).
local out = assert(arg and arg[1], "usage: nnrepl tests/gpu/tv_v2/more.lua OUTDIR [DEVICE]")
local dev = arg[2] or (torch.cuda.is_available() and "cuda" or "cpu")
os.execute("mkdir -p '" .. out .. "'")
local tv = require "torchvision"
local tvt, F = tv.tv_tensors, tv.transforms.v2.functional
local json = require "json"

local lines = {}

local function value(v)
  if v == nil then return "null" end
  if type(v) == "boolean" then return tostring(v) end
  if type(v) == "string" then return json.string(v) end
  if type(v) == "number" then return math.type(v) == "integer" and tostring(v) or json.float(v) end
  if torch.is_tensor(v) then
    local c = v:cpu():contiguous()
    local flat = {}
    for i, x in ipairs(c:numel() > 0 and c:reshape(-1):tolist() or {}) do
      flat[i] = type(x) == "boolean" and (x and "1" or "0") or value(x)
    end
    local s = string.format('{"t": [%s], "dtype": "%s", "shape": [%s]', table.concat(flat, ","),
      (tostring(c.dtype):gsub("^torch%.", "")), table.concat(c.shape:totable(), ","))
    local kind = tvt.type_of(v)
    if kind == tvt.BoundingBoxes then
      s = s .. string.format(', "fmt": "%s", "canvas": [%d, %d]', v.format, v.canvas_size[1], v.canvas_size[2])
    elseif kind == tvt.KeyPoints then
      s = s .. string.format(', "kp": true, "canvas": [%d, %d]', v.canvas_size[1], v.canvas_size[2])
    end
    return s .. "}"
  end
  local parts = {}
  if #v > 0 or next(v) == nil then
    for i = 1, #v do parts[i] = value(v[i]) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  for k, x in pairs(v) do parts[#parts + 1] = json.string(k) .. ": " .. value(x) end
  table.sort(parts)
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- case(name, functional, args, kwargs): calls F[fn](args..., kwargs) and records it
local function case(name, fn, args, kwargs)
  local call = {table.unpack(args)}
  if kwargs then call[#args + 1] = kwargs end
  local res = table.pack(F[fn](table.unpack(call, 1, #args + (kwargs and 1 or 0))))
  lines[#lines + 1] = string.format('{"name": %s, "fn": %s, "args": %s, "kwargs": %s, "out": %s}', json.string(name),
    json.string(fn), value(args), kwargs and value(kwargs) or "{}", value({table.unpack(res, 1, res.n)}))
end

local function t(v, dtype) return torch.tensor(v, {dtype = dtype or torch.float32, device = dev}) end
local function boxes(v, fmt, canvas, dtype)
  return tvt.BoundingBoxes(v, {format = fmt, canvas_size = canvas, dtype = dtype or torch.float32, device = dev})
end

local H, W = 10, 20
local rows = {{-5, 2, 30, 12}, {0, 0, 5, 5}, {2, 2, 2.5, 8}, {1, 1, 3, 3}, {5, 5, 21, 8}, {0, 0, 1, 1}, {3.5, 1.25, 9.75, 6.5}}
local formats = {"XYXY", "XYWH", "CXCYWH"}
for _, f in ipairs(formats) do
  for _, g in ipairs(formats) do
    if f ~= g then
      case("convert " .. f .. "->" .. g, "convert_bounding_box_format", {boxes(rows, f, {H, W})}, {new_format = g})
      case("convert int " .. f .. "->" .. g, "convert_bounding_box_format",
        {boxes({{1, 2, 7, 9}, {4, 4, 3, 5}}, f, {H, W}, torch.int64)}, {new_format = g})
    end
  end
  case("clamp auto " .. f, "clamp_bounding_boxes", {boxes(rows, f, {H, W})})
  case("clamp pure soft " .. f, "clamp_bounding_boxes", {t(rows), f, {H, W}}, {clamping_mode = "soft"})
  case("sanitize " .. f, "sanitize_bounding_boxes", {boxes(rows, f, {H, W})})
  case("sanitize pure min_size=2 " .. f, "sanitize_bounding_boxes", {t(rows), f, {H, W}}, {min_size = 2.0})
  case("sanitize pure min_area=4 " .. f, "sanitize_bounding_boxes", {t(rows), f, {H, W}}, {min_area = 4.0})
end
case("clamp None", "clamp_bounding_boxes", {boxes(rows, "XYXY", {H, W})}, {clamping_mode = false})
case("convert pure", "convert_bounding_box_format", {t(rows), "XYXY", "CXCYWH"})

-- keypoints on and around the canvas edges (x in [0, W), y in [0, H) is the guess here)
local pts = {{0, 0}, {-0.5, 3}, {19, 9}, {19.5, 9.5}, {20, 5}, {5, 10}, {-1, -1}, {25, 12}, {7.25, 3.5}}
case("clamp_keypoints", "clamp_keypoints", {tvt.KeyPoints(pts, {canvas_size = {H, W}, device = dev})})
case("clamp_keypoints pure", "clamp_keypoints", {t(pts), {H, W}})
case("sanitize_keypoints points", "sanitize_keypoints", {tvt.KeyPoints(pts, {canvas_size = {H, W}, device = dev})})
case("sanitize_keypoints pure", "sanitize_keypoints", {t(pts), {H, W}})
case("sanitize_keypoints groups", "sanitize_keypoints",
  {tvt.KeyPoints({{{0, 0}, {1, 1}}, {{2, 2}, {25, 1}}, {{19, 9}, {0, 9}}}, {canvas_size = {H, W}, device = dev})})

torch.manual_seed(0)
local img = (torch.rand(2, 3, 6, 5) * 255):to(torch.uint8):to(dev)
case("permute_channels", "permute_channels", {img, {2, 0, 1}})
case("grayscale_to_rgb", "grayscale_to_rgb", {torch.rand(2, 1, 4, 3):to(dev)})
case("grayscale_to_rgb 3 channels", "grayscale_to_rgb", {img})
local video = torch.rand(9, 2, 3, 3):to(dev)
for _, n in ipairs({1, 4, 9, 12}) do case("uniform_temporal_subsample " .. n, "uniform_temporal_subsample", {video, n}) end

-- a smooth image for jpeg (compared within a tolerance: the encoders' settings may differ)
local yy, xx = torch.meshgrid(torch.arange(24), torch.arange(32), {indexing = "ij"})
local smooth = torch.stack({xx * 7, yy * 9, (xx + yy) * 4}, 0):to(torch.uint8):to(dev)
for _, q in ipairs({20, 75, 95}) do case("jpeg quality " .. q, "jpeg", {smooth, q}) end
case("jpeg gray", "jpeg", {smooth:narrow(0, 1, 1), 80})

local f = assert(io.open(out .. "/cases.jsonl", "w"))
f:write(table.concat(lines, "\n"), "\n")
f:close()
print(string.format("%d cases written to %s/cases.jsonl (device %s)", #lines, out, dev))
