-- Runs transforms.v2.functional's geometric functionals with fixed params on an Image, a Mask,
-- BoundingBoxes and KeyPoints and writes inputs and outputs for geometry.py, which recomputes
-- each call with torchvision 0.26's torchvision.transforms.v2.functional and compares (the kind,
-- the values and boxes'/keypoints' canvas_size). Usage: nnrepl tests/gpu/tv_v2/geometry.lua OUTDIR [DEVICE]
-- OUTDIR/geometry.jsonl: one call a line {"name", "fn", "kind", "inpt", "meta", "args", "kwargs", "out", "canvas"}.
local out = assert(arg and arg[1], "usage: nnrepl tests/gpu/tv_v2/geometry.lua OUTDIR [DEVICE]")
local dev = arg[2] or (torch.cuda.is_available() and "cuda" or "cpu")
os.execute("mkdir -p '" .. out .. "'")
local tv = require "torchvision"
local tvt, F = tv.tv_tensors, tv.transforms.v2.functional
local json = require "json"

local function enc(v)
  if v == nil then return "null" end
  local t = type(v)
  if t == "boolean" then return tostring(v) end
  if t == "string" then return json.string(v) end
  if t == "number" then return math.type(v) == "integer" and tostring(v) or json.float(v) end
  if torch.is_tensor(v) then
    local c = v:cpu():contiguous()
    local vals = {}
    for i, x in ipairs(c:numel() > 0 and c:reshape(-1):tolist() or {}) do vals[i] = enc(x) end
    return string.format('{"t": [%s], "dtype": "%s", "shape": [%s]}', table.concat(vals, ","),
      (tostring(c.dtype):gsub("^torch%.", "")), table.concat(c.shape:totable(), ","))
  end
  local parts = {}
  if #v > 0 or next(v) == nil then
    for i = 1, #v do parts[i] = enc(v[i]) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  for k, x in pairs(v) do parts[#parts + 1] = json.string(k) .. ": " .. enc(x) end
  table.sort(parts)
  return "{" .. table.concat(parts, ", ") .. "}"
end

torch.manual_seed(11)
local H, W = 20, 26
local image = tvt.Image(torch.randint(0, 256, {3, H, W}, {dtype = torch.uint8}):to(dev))
local m = torch.zeros(H, W, {dtype = torch.uint8})
m:narrow(0, 3, 9):narrow(1, 2, 8):fill_(1)
m:narrow(0, 6, 10):narrow(1, 14, 9):fill_(2)
local mask = tvt.Mask(m:to(dev))
local boxes = tvt.BoundingBoxes(torch.tensor({{2, 3, 10, 12}, {14.5, 6, 23, 16.25}, {-3, 1, 5, 30}}):to(dev),
  {format = "XYXY", canvas_size = {H, W}})
local cxcywh = tvt.BoundingBoxes(torch.tensor({{6, 7.5, 8, 9}, {18, 11, 8.5, 10}}):to(dev), {format = "CXCYWH", canvas_size = {H, W}})
local kps = tvt.KeyPoints(torch.tensor({{2, 3}, {23.5, 16}, {0, 0}, {-1, 30}}):to(dev), {canvas_size = {H, W}})
local inputs = {image = image, mask = mask, boxes = boxes, boxes_cxcywh = cxcywh, keypoints = kps}
local kinds = {"image", "mask", "boxes", "boxes_cxcywh", "keypoints"}

local file = assert(io.open(out .. "/geometry.jsonl", "w"))
local count = 0
-- case(name, fn, args, kwargs, only): the call on each kind of input (those of `only` when given)
local function case(name, fn, args, kwargs, only)
  for _, kind in ipairs(only or kinds) do
    local x = inputs[kind]
    local call = {}
    for i = 1, #args do call[i] = args[i] end
    if kwargs then call[#args + 1] = kwargs end
    local ok, r = pcall(F[fn], x, table.unpack(call, 1, #args + (kwargs and 1 or 0)))
    if not ok then
      print("ERROR " .. name .. " " .. kind .. ": " .. tostring(r))
    else
      local meta = {format = x.format and tostring(x.format), canvas = x.canvas_size}
      file:write(string.format('{"name": %s, "fn": %s, "kind": %s, "inpt": %s, "meta": %s, "args": %s, "kwargs": %s, "out": %s, "canvas": %s}\n',
        json.string(name), json.string(fn), json.string(kind), enc(x), enc(meta), enc(args), enc(kwargs or {}), enc(r), enc(r.canvas_size)))
      count = count + 1
    end
  end
end

case("hflip", "horizontal_flip", {})
case("vflip", "vertical_flip", {})
case("resize up", "resize", {{33, 41}})
case("resize shorter edge", "resize", {12}, {antialias = false})
case("resize max_size", "resize", {12, "bilinear", 14})
case("crop", "crop", {2, 3, 12, 15})
case("crop past the edge", "crop", {-2, 10, 14, 20})
case("center_crop", "center_crop", {{10, 13}})
case("center_crop larger", "center_crop", {{24, 30}})
case("resized_crop", "resized_crop", {2, 4, 12, 16, {24, 20}})
case("pad", "pad", {{1, 2, 3, 4}})
case("pad reflect", "pad", {3}, {padding_mode = "reflect"}, {"image", "mask"}) -- boxes and keypoints refuse it, as in torchvision
case("rotate 90 expand", "rotate", {90}, {expand = true})
case("rotate 30", "rotate", {30})
case("rotate -20 center", "rotate", {-20}, {center = {5, 6}})
case("affine", "affine", {15, {2, -3}, 1.1, {5, 0}})
local sp, ep = {{0, 0}, {W - 1, 0}, {W - 1, H - 1}, {0, H - 1}}, {{2, 1}, {W - 3, 0}, {W - 1, H - 3}, {1, H - 1}}
case("perspective", "perspective", {sp, ep})
local d = (torch.rand(1, H, W, 2) - 0.5) * 0.1
-- boxes leaving the canvas make torchvision's elastic raise an IndexError (and nnrepl an error)
case("elastic", "elastic", {d:to(dev)}, nil, {"image", "mask", "boxes_cxcywh", "keypoints"})
file:close()
print(string.format("%d calls written to %s/geometry.jsonl", count, out))
