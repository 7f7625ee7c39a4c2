-- torchvision.transforms.v2.functional's geometry kernels for bounding boxes, key points and
-- masks, on plain tensors with the metadata passed explicitly (format, canvas_size = {H, W}), as
-- torchvision's *_bounding_boxes / *_keypoints / *_mask kernels take it. Box formats: "XYXY",
-- "XYWH", "CXCYWH" and the rotated "XYWHR", "CXCYWHR", "XYXYXYXY" (rotated boxes: float dtypes;
-- clamped the way torchvision clamps them, clamping_mode "soft" or "hard", or false for none, as
-- Python's None). Boxes are worked in float (float32 for integer boxes)
-- and cast back as torchvision does; everything is tensor ops, so CUDA tensors work. Masks go
-- through transforms.functional's image kernels with nearest interpolation (masks of dtypes those
-- kernels do not take are warped in float32 and cast back, as torchvision does).
local torch = require "torch"
local U = require "nn_util"
local C = require("tv_io")._C
local WK = require "tv_warp_kernels"

local M = {}

local function F() return require("torchvision").transforms.functional end

---------------------------------------------------------------------------
-- arguments
---------------------------------------------------------------------------

local WIDTH = { XYXY = 4, XYWH = 4, CXCYWH = 4, XYWHR = 5, CXCYWHR = 5, XYXYXYXY = 8 }
local ROTATED = { XYWHR = true, CXCYWHR = true, XYXYXYXY = true }

-- a format name (case-insensitive string, or an enum-like table with .name) as "XYXY"...
local function format_name(fn, format)
  local s = type(format) == "table" and (format.name or format.value) or format
  s = type(s) == "string" and s:upper() or s
  if not WIDTH[s] then
    U.errorf("%s: unknown bounding box format %s (expected one of XYXY, XYWH, CXCYWH, XYWHR, CXCYWHR, XYXYXYXY)",
      fn, U.pyrepr(type(format) == "table" and tostring(s) or format))
  end
  return s
end

local function boxes_arg(fn, boxes, format)
  U.tensor_arg(fn, "bounding_boxes", boxes)
  if boxes:dim() == 0 or boxes:size(-1) ~= WIDTH[format] then
    U.errorf("%s: bounding boxes in format %s need a last dimension of %d, got shape %s",
      fn, format, WIDTH[format], U.shape_str(boxes))
  end
  return boxes
end

local function keypoints_arg(fn, kp)
  U.tensor_arg(fn, "keypoints", kp)
  if kp:dim() == 0 or kp:size(-1) ~= 2 then U.errorf("%s: keypoints need a last dimension of 2, got shape %s", fn, U.shape_str(kp)) end
  return kp
end

local function canvas_arg(fn, canvas_size)
  if type(canvas_size) ~= "table" or #canvas_size ~= 2 then
    U.errorf("%s: canvas_size must be a list {height, width}, got %s", fn, U.typename(canvas_size))
  end
  return canvas_size[1], canvas_size[2]
end

local function check_clamping_mode(fn, mode)
  if mode ~= false and mode ~= "soft" and mode ~= "hard" then
    U.errorf("%s: clamping_mode must be \"soft\", \"hard\" or false (no clamping), got %s", fn, U.pystr(mode))
  end
  return mode
end

-- a float working copy (float32 for integer tensors), and whether it must be cast back
local function float_copy(t)
  if t:is_floating_point() then return t:clone(), false end
  return t:float(), true
end

local function work_dtype(t) return t:is_floating_point() and t.dtype or torch.float32 end

local function cols(t) return t:unbind(-1) end
local function stack(list) return torch.stack(list, -1) end

---------------------------------------------------------------------------
-- formats
---------------------------------------------------------------------------

-- the unrotated conversions edit x (its last dim of 4) in place, as torchvision's
local function xywh_to_xyxy(x) x:narrow(-1, 2, 2):add_(x:narrow(-1, 0, 2)); return x end
local function xyxy_to_xywh(x) x:narrow(-1, 2, 2):sub_(x:narrow(-1, 0, 2)); return x end

local function cxcywh_to_xyxy(x)
  local half = x:is_floating_point() and x:narrow(-1, 2, 2):div(-2) or x:narrow(-1, 2, 2):div(-2, { rounding_mode = "floor" })
  half:abs_()
  x:narrow(-1, 0, 2):sub_(half)
  x:narrow(-1, 2, 2):add_(x:narrow(-1, 0, 2))
  return x
end

local function xyxy_to_cxcywh(x)
  x:narrow(-1, 2, 2):sub_(x:narrow(-1, 0, 2))
  local c = x:narrow(-1, 0, 2):mul_(2):add_(x:narrow(-1, 2, 2))
  if x:is_floating_point() then c:div_(2) else c:copy_(c:div(2, { rounding_mode = "floor" })) end
  return x
end

-- the rotated ones work in float and return new tensors of the input's dtype
local function deg_cos_sin(r)
  local rad = r * math.pi / 180.0 -- as torchvision: times pi, then over 180
  return rad:cos(), rad:sin()
end

local function cxcywhr_to_xywhr(b)
  local dtype = b.dtype
  local cx, cy, w, h, r = table.unpack(cols(b:is_floating_point() and b or b:float()))
  local hw, hh = w / 2, h / 2
  local cos, sin = deg_cos_sin(r)
  return stack({ cx - hw * cos - hh * sin, cy + hw * sin - hh * cos, w, h, r }):to(dtype)
end

local function xywhr_to_cxcywhr(b)
  local dtype = b.dtype
  local x, y, w, h, r = table.unpack(cols(b:is_floating_point() and b or b:float()))
  local hw, hh = w / 2, h / 2
  local cos, sin = deg_cos_sin(r)
  return stack({ x + hw * cos + hh * sin, y - hw * sin + hh * cos, w, h, r }):to(dtype)
end

local function xywhr_to_xyxyxyxy(b)
  local dtype = b.dtype
  local x, y, w, h, r = table.unpack(cols(b:is_floating_point() and b or b:float()))
  local cos, sin = deg_cos_sin(r)
  local wc, ws, hc, hs = w * cos, w * sin, h * cos, h * sin
  return stack({ x, y, x + wc, y - ws, x + (wc + hs), y - (ws - hc), x + hs, y + hc }):to(dtype)
end

local function xyxyxyxy_to_xywhr(b)
  local dtype = b.dtype
  local x1, y1, x2, y2, x3, y3 = table.unpack(cols(b:is_floating_point() and b or b:float()))
  local r = torch.atan2(y1 - y2, x2 - x1)
  local w = ((x2 - x1):pow(2) + (y2 - y1):pow(2)):sqrt()
  local h = ((x3 - x2):pow(2) + (y3 - y2):pow(2)):sqrt()
  return stack({ x1, y1, w, h, r / math.pi * 180.0 }):to(dtype)
end

-- boxes (already checked) from old to new format; in place where torchvision's is
local function convert(boxes, old, new, inplace)
  if old == new then return boxes end
  if (ROTATED[old] or false) ~= (ROTATED[new] or false) then
    U.error("Cannot convert between rotated and unrotated bounding boxes.")
  end
  if ROTATED[old] then
    local b = boxes
    if old == "CXCYWHR" then b = cxcywhr_to_xywhr(b) elseif old == "XYXYXYXY" then b = xyxyxyxy_to_xywhr(b) end
    if new == "CXCYWHR" then b = xywhr_to_cxcywhr(b) elseif new == "XYXYXYXY" then b = xywhr_to_xyxyxyxy(b) end
    if inplace and boxes:is_floating_point() and b:size(-1) == boxes:size(-1) then return boxes:copy_(b) end
    return b
  end
  local b = inplace and boxes or boxes:clone()
  if old == "XYWH" then xywh_to_xyxy(b) elseif old == "CXCYWH" then cxcywh_to_xyxy(b) end
  if new == "XYWH" then xyxy_to_xywh(b) elseif new == "CXCYWH" then xyxy_to_cxcywh(b) end
  return b
end
M._convert = convert

-- convert_bounding_box_format(inpt, old_format, new_format, inplace=False)
function M.convert_bounding_box_format(...)
  local fn = "convert_bounding_box_format"
  local a = U.parse(fn, { { "inpt", U.REQUIRED }, { "old_format", U.REQUIRED }, { "new_format", U.REQUIRED }, { "inplace", false } }, ...)
  local old, new = format_name(fn, a.old_format), format_name(fn, a.new_format)
  return convert(boxes_arg(fn, a.inpt, old), old, new, a.inplace)
end

---------------------------------------------------------------------------
-- clamping
---------------------------------------------------------------------------

-- min(max(x, lo), hi) with tensor bounds, as torch.clamp with tensor min and max
local function clampt(x, lo, hi) return torch.minimum(torch.maximum(x, lo), hi) end

local function isclose(a, b) return (a - b):abs():le((b:abs() * 1e-5) + 1e-8) end

-- (N, 8) corner lists with their points rotated to start at `indices` (N, 8 int64; nil: at the
-- leftmost point, ties to the topmost, as torchvision orders them): indices, reordered boxes
local function order_points(b, indices)
  if indices == nil then
    local x = b:index_select(1, torch.tensor({ 0, 2, 4, 6 }, { device = b.device }))
    local y = b:index_select(1, torch.tensor({ 1, 3, 5, 7 }, { device = b.device }))
    local first = (y / y:abs():amax(1, true) + (x / x:abs():amax(1, true)) * 100):argmin(1)
    indices = (torch.arange(8, { device = b.device }):view(1, 8) + (first * 2):view(-1, 1)) % 8
  end
  return indices, b:gather(1, indices)
end

-- the slopes and intercepts (N, 4) of the edges p_k -> p_k+1 of (N, 8) corner lists
local function slopes_intercepts(b)
  local x = b:index_select(1, torch.tensor({ 0, 2, 4, 6 }, { device = b.device }))
  local y = b:index_select(1, torch.tensor({ 1, 3, 5, 7 }, { device = b.device }))
  local nxt = torch.tensor({ 1, 2, 3, 0 }, { device = b.device })
  local a = (y:index_select(1, nxt) - y) / (x:index_select(1, nxt) - x)
  return a, y - a * x
end

-- the corners (N, 8) where edge k-1 meets edge k, from slopes a and intercepts c (N, 4)
local function intersections(a, c)
  local prev = torch.tensor({ 3, 0, 1, 2 }, { device = a.device })
  local x = (c - c:index_select(1, prev)):neg() / (a - a:index_select(1, prev))
  return torch.stack({ x, a * x + c }, -1):view(-1, 8)
end

-- the intercepts (N, 4) of the edges of b clamped to the canvas height h and to those of orig,
-- the box before clamping; "hard" keeps the box inside the canvas, "soft" lets corners out
local function clamp_intercepts(b, orig, h, w, mode)
  local a, c = slopes_intercepts(b)
  local a1, a2, a3, a4 = table.unpack(cols(a))
  local c1, c2, c3, c4 = table.unpack(cols(c))
  local _, cm = slopes_intercepts(orig)
  local c1m, c2m, c3m, c4m = table.unpack(cols(cm))
  local n1 = clampt(c2, c1, c3):clamp(0, h)
  local n4 = clampt(c3, c2, c4):clamp(0, h)
  local n2, n3 = c2, c3
  if mode == "hard" then
    -- edges 1 and 4 share one intercept (torchvision's b1 and b4 are one tensor from here on)
    local v = (n1 + n4) / 2
    n2 = torch.minimum(torch.stack({ v * a2 / a1, c3 * a2 / a3, (a1 - a2) * w + v, (a3 - a2) * w + c3 }, 1):amax(1), c2)
    n3 = torch.maximum(torch.stack({ h * (1 - a3 / a4) + v * a3 / a4, h * (1 - a3 / a2) + n2 * a3 / a2,
      (a2 - a3) * w + n2, (a4 - a3) * w + v }, 1):amin(1), c3)
    v = clampt(clampt(v, c1m, c3m), c2m, c4m)
    n1, n4 = v, v
  else
    n1, n4 = clampt(n1, c1m, c3m), clampt(n4, c2m, c4m)
  end
  return torch.stack({ n1, clampt(n2, c2m, c4m), clampt(n3, c1m, c3m), n4 }, -1)
end

-- one step of torchvision's rotated clamping: corner lists (N, 8), first point leftmost, kept
-- right of x = 0
local function clamp_left(b, orig, h, w, mode)
  local a = slopes_intercepts(b)
  local x1, y1, x2, y2, x3, y3, x4, y4 = table.unpack(cols(b))
  local case_a = intersections(a, clamp_intercepts(b, orig, h, w, mode))
  local cb = cols(b)
  cb[1], cb[7] = cb[1]:clamp_min(0), cb[7]:clamp_min(0)
  local case_b = stack(cb)
  local cond_a = x1:lt(0):logical_and(case_a:isnan():any(-1):logical_not())
  local cond_b = isclose(y1, y2):logical_or(isclose(y3, y4))
  local cond_c = x1:le(0):logical_and(x2:le(0)):logical_and(x3:le(0)):logical_and(x4:le(0))
    :logical_or(isclose(y1, y4)):logical_or(isclose(y2, y3)):logical_or(cond_b:logical_and(isclose(x1, x2)))
  b = torch.where(cond_a:view(-1, 1), case_a, b)
  b = torch.where(cond_b:view(-1, 1), case_b, b)
  return torch.where(cond_c:view(-1, 1), torch.zeros_like(b), b)
end

-- a quarter turn of corner lists (N, 8) on a canvas of width w: (x, y) -> (y, w - x)
local function quarter_turn(b, w)
  local x = b:index_select(1, torch.tensor({ 0, 2, 4, 6 }, { device = b.device }))
  local y = b:index_select(1, torch.tensor({ 1, 3, 5, 7 }, { device = b.device }))
  return torch.stack({ y, w - x }, -1):view(-1, 8)
end

-- torchvision's _clamp_rotated_bounding_boxes: each side of the canvas in turn
local function clamp_rotated(boxes, format, h, w, mode)
  local out = convert(boxes:clone(), format, "XYXYXYXY", true):reshape(-1, 8)
  local orig = out:clone()
  for _ = 1, 4 do
    local idx
    idx, out = order_points(out)
    orig = select(2, order_points(orig, idx))
    out = clamp_left(out, orig, h, w, mode)
    out = select(2, order_points(out, idx))
    orig = select(2, order_points(orig, idx))
    out, orig = quarter_turn(out, w), quarter_turn(orig, w)
    h, w = w, h
  end
  return convert(out, "XYXYXYXY", format, true):reshape(boxes.shape)
end

-- torchvision's _parallelogram_to_bounding_boxes: corner lists (..., 8) made rectangles keeping
-- the two ends of the longer diagonal
local function parallelogram_to_rectangle(p)
  local dtype = p.dtype
  local q = p:is_floating_point() and p or p:float()
  local x1, y1, x2, y2, x3, y3, x4, y4 = table.unpack(cols(q))
  local cx, cy = (x1 + x3) / 2, (y1 + y3) / 2
  local wp = ((x2 - x1):pow(2) + (y2 - y1):pow(2)):sqrt()
  local hp = ((x4 - x1):pow(2) + (y4 - y1):pow(2)):sqrt()
  local r12 = torch.atan2(y1 - y2, x2 - x1)
  local r14 = torch.atan2(y1 - y4, x4 - x1)
  local r = r12 - r14
  local sign = 1 - r:gt(math.pi / 2):to(q.dtype) * 2
  local cos, sin = r:cos(), r:sin()
  local w = torch.where(wp:lt(hp), wp * sin, wp + hp * cos * sign)
  local h = torch.where(wp:gt(hp), hp * sin, hp + wp * cos * sign)
  r = torch.where(hp:gt(wp), r14 + math.pi / 2, r12)
  cos, sin = r:cos(), r:sin()
  local wc, ws, hc, hs = w / 2 * cos, w / 2 * sin, h / 2 * cos, h / 2 * sin
  return stack({ cx - wc - hs, cy - hc + ws, cx + wc - hs, cy - hc - ws,
    cx + wc + hs, cy + hc - ws, cx - wc + hs, cy + hc + ws }):to(dtype)
end

local function clamp_boxes(fn, boxes, format, h, w, mode)
  if mode == false then return boxes:clone() end
  if ROTATED[format] then return clamp_rotated(boxes, format, h, w, mode) end
  local dtype = boxes.dtype
  local b = convert(float_copy(boxes), format, "XYXY", true)
  local lo = torch.zeros(4, { dtype = b.dtype, device = b.device })
  local hi = torch.tensor({ w, h, w, h }, { dtype = b.dtype, device = b.device })
  b = torch.minimum(torch.maximum(b, lo), hi)
  return convert(b, "XYXY", format, true):to(dtype)
end

-- clamp_bounding_boxes(inpt, format, canvas_size, clamping_mode="soft")
function M.clamp_bounding_boxes(...)
  local fn = "clamp_bounding_boxes"
  local a = U.parse(fn, { { "inpt", U.REQUIRED }, { "format", U.REQUIRED }, { "canvas_size", U.REQUIRED }, { "clamping_mode", "soft" } }, ...)
  local format = format_name(fn, a.format)
  local h, w = canvas_arg(fn, a.canvas_size)
  return clamp_boxes(fn, boxes_arg(fn, a.inpt, format), format, h, w, check_clamping_mode(fn, a.clamping_mode))
end

-- clamp_keypoints(inpt, canvas_size): x into [0, W - 1], y into [0, H - 1]
function M.clamp_keypoints(...)
  local fn = "clamp_keypoints"
  local a = U.parse(fn, { { "inpt", U.REQUIRED }, { "canvas_size", U.REQUIRED } }, ...)
  local kp = keypoints_arg(fn, a.inpt)
  local h, w = canvas_arg(fn, a.canvas_size)
  local x, y = table.unpack(cols(kp:is_floating_point() and kp or kp:float()))
  return stack({ x:clamp(0, w - 1), y:clamp(0, h - 1) }):to(kp.dtype)
end

---------------------------------------------------------------------------
-- flips
---------------------------------------------------------------------------

-- a box's columns mirrored: axis 0 (x, about width w) or 1 (y, about height h)
local function flip_boxes(format, b, axis, size)
  local c = cols(b)
  local o = axis + 1 -- the 1-based column of the coordinate flipped
  if format == "XYXY" then
    c[o], c[o + 2] = size - c[o + 2], size - c[o]
  elseif format == "XYWH" then
    c[o] = size - (c[o] + c[o + 2])
  elseif format == "CXCYWH" or format == "CXCYWHR" then
    c[o] = size - c[o]
    if format == "CXCYWHR" then c[5] = axis == 0 and -c[5] or 180 - c[5] end
  elseif format == "XYXYXYXY" then
    for k = o, 8, 2 do c[k] = size - c[k] end
    c = { c[3], c[4], c[1], c[2], c[7], c[8], c[5], c[6] }
  else -- XYWHR
    local cos, sin = deg_cos_sin(c[5])
    if axis == 0 then
      c[1], c[2], c[5] = size - (c[1] + c[3] * cos), c[2] - c[3] * sin, -c[5]
    else
      c[1], c[2], c[5] = c[1] + c[3] * cos, size - (c[2] - c[3] * sin), 180 - c[5]
    end
  end
  return stack(c)
end

local function flip_bounding_boxes(fn, axis, ...)
  local a = U.parse(fn, { { "bounding_boxes", U.REQUIRED }, { "format", U.REQUIRED }, { "canvas_size", U.REQUIRED } }, ...)
  local format = format_name(fn, a.format)
  local boxes = boxes_arg(fn, a.bounding_boxes, format)
  local h, w = canvas_arg(fn, a.canvas_size)
  local b = (ROTATED[format] and not boxes:is_floating_point()) and boxes:float() or boxes
  return flip_boxes(format, b, axis, axis == 0 and w or h):to(boxes.dtype)
end

local function flip_keypoints(fn, axis, ...)
  local a = U.parse(fn, { { "keypoints", U.REQUIRED }, { "canvas_size", U.REQUIRED } }, ...)
  local kp = keypoints_arg(fn, a.keypoints)
  local h, w = canvas_arg(fn, a.canvas_size)
  local c = cols(kp)
  c[axis + 1] = (axis == 0 and w or h) - 1 - c[axis + 1]
  return stack(c)
end

function M.horizontal_flip_bounding_boxes(...) return flip_bounding_boxes("horizontal_flip_bounding_boxes", 0, ...) end
function M.vertical_flip_bounding_boxes(...) return flip_bounding_boxes("vertical_flip_bounding_boxes", 1, ...) end
function M.horizontal_flip_keypoints(...) return flip_keypoints("horizontal_flip_keypoints", 0, ...) end
function M.vertical_flip_keypoints(...) return flip_keypoints("vertical_flip_keypoints", 1, ...) end
function M.horizontal_flip_mask(mask) return U.tensor_arg("horizontal_flip_mask", "mask", mask):flip(-1) end
function M.vertical_flip_mask(mask) return U.tensor_arg("vertical_flip_mask", "mask", mask):flip(-2) end

---------------------------------------------------------------------------
-- masks through the image kernels
---------------------------------------------------------------------------

local native = { [tostring(torch.uint8)] = true, [tostring(torch.float32)] = true, [tostring(torch.float64)] = true }

-- f(m) on mask as an image: a 2-D mask gets a channel dim for the call; with cast, dtypes the
-- image kernels do not take are worked in float32 and rounded back
local function on_mask(fn, mask, f, cast)
  U.tensor_arg(fn, "mask", mask)
  if mask:dim() < 2 then U.errorf("%s: mask must have at least 2 dimensions (H, W), got shape %s", fn, U.shape_str(mask)) end
  local m = mask:dim() < 3 and mask:unsqueeze(0) or mask
  local dtype = m.dtype
  local need_cast = cast and not native[tostring(dtype)]
  if need_cast then m = m:float() end
  local out = U.call(f, m)
  if need_cast then out = out:round():to(dtype) end
  if mask:dim() < 3 then out = out:squeeze(0) end
  return out
end

---------------------------------------------------------------------------
-- resize
---------------------------------------------------------------------------

-- torchvision's _compute_resized_output_size (v2: size may be nil when max_size is given): h, w
local function resized_size(fn, h, w, size, max_size)
  if math.type(size) == "integer" then size = { size }
  elseif size ~= nil and type(size) ~= "table" then U.errorf("%s: size should be an int or a sequence of ints, got %s", fn, U.typename(size))
  elseif max_size ~= nil and size ~= nil and #size ~= 1 then
    U.errorf("%s: max_size should only be passed if size is None or specifies the length of the smaller edge, " ..
      "i.e. size should be an int or a sequence of length 1 in torchscript mode.", fn)
  end
  local short, long = math.min(h, w), math.max(h, w)
  local new_short, new_long
  if size == nil then
    if math.type(max_size) ~= "integer" then
      U.errorf("%s: max_size must be an integer when size is None, but got %s instead.", fn, U.pystr(max_size))
    end
    new_short, new_long = math.floor(max_size * short / long), max_size
  elseif #size == 1 then
    local req = size[1]
    new_short, new_long = req, math.floor(req * long / short)
    if max_size ~= nil then
      if max_size <= req then
        U.errorf("%s: max_size = %d must be strictly greater than the requested size for the smaller edge size = [%d]", fn, max_size, req)
      end
      if new_long > max_size then new_short, new_long = math.floor(max_size * new_short / new_long), max_size end
    end
  else
    return size[1], size[2]
  end
  if w <= h then return new_long, new_short end
  return new_short, new_long
end

local function scale_points(t, ratios)
  local r = torch.tensor(ratios, { dtype = torch.float32, device = t.device })
  return t:mul(r):to(t.dtype)
end

-- resize_bounding_boxes(bounding_boxes, canvas_size, size, max_size=None, format="XYXY", clamping_mode="soft")
function M.resize_bounding_boxes(...)
  local fn = "resize_bounding_boxes"
  local a = U.parse(fn, { { "bounding_boxes", U.REQUIRED }, { "canvas_size", U.REQUIRED }, { "size", nil },
    { "max_size", nil }, { "format", "XYXY" }, { "clamping_mode", "soft" } }, ...)
  local format = format_name(fn, a.format)
  local boxes = boxes_arg(fn, a.bounding_boxes, format)
  local h, w = canvas_arg(fn, a.canvas_size)
  local nh, nw = resized_size(fn, h, w, a.size, a.max_size)
  if nh == h and nw == w then return boxes, a.canvas_size end
  local mode = check_clamping_mode(fn, a.clamping_mode)
  local rw, rh = nw / w, nh / h
  if not ROTATED[format] then return scale_points(boxes, { rw, rh, rw, rh }), { nh, nw } end
  -- rotated: the corners scaled, made a rectangle again, clamped
  local pts = convert(boxes, format, "XYXYXYXY"):reshape(-1, 8)
  local ratios = torch.tensor({ rw, rh, rw, rh, rw, rh, rw, rh }, { dtype = torch.float32, device = boxes.device })
  local out = clamp_boxes(fn, parallelogram_to_rectangle(pts:mul(ratios)), "XYXYXYXY", nh, nw, mode)
  return convert(out, "XYXYXYXY", format):to(boxes.dtype):reshape(boxes.shape), { nh, nw }
end

-- resize_keypoints(keypoints, size, canvas_size, max_size=None)
function M.resize_keypoints(...)
  local fn = "resize_keypoints"
  local a = U.parse(fn, { { "keypoints", U.REQUIRED }, { "size", nil }, { "canvas_size", U.REQUIRED }, { "max_size", nil } }, ...)
  local kp = keypoints_arg(fn, a.keypoints)
  local h, w = canvas_arg(fn, a.canvas_size)
  local nh, nw = resized_size(fn, h, w, a.size, a.max_size)
  if nh == h and nw == w then return kp, a.canvas_size end
  return scale_points(kp, { nw / w, nh / h }), { nh, nw }
end

-- resize_mask(mask, size, max_size=None): nearest
function M.resize_mask(...)
  local fn = "resize_mask"
  local a = U.parse(fn, { { "mask", U.REQUIRED }, { "size", nil }, { "max_size", nil } }, ...)
  local mask = U.tensor_arg(fn, "mask", a.mask)
  if mask:dim() < 2 then U.errorf("%s: mask must have at least 2 dimensions (H, W), got shape %s", fn, U.shape_str(mask)) end
  local h, w = mask:size(-2), mask:size(-1)
  local nh, nw = resized_size(fn, h, w, a.size, a.max_size)
  if nh == h and nw == w then return mask end
  if mask:numel() == 0 then
    local shape = mask.shape:totable()
    shape[#shape - 1], shape[#shape] = nh, nw
    return torch.empty(shape, { dtype = mask.dtype, device = mask.device })
  end
  return on_mask(fn, mask, function(m) return F().resize(m, { nh, nw }, "nearest") end, true)
end

---------------------------------------------------------------------------
-- crop, center crop, resized crop, pad
---------------------------------------------------------------------------

local function shift(t, v) return t - torch.tensor(v, { dtype = t.dtype, device = t.device }) end

-- the offsets (left, top) of a box's coordinates in format, as a row to add
local function offsets(format, left, top)
  if format == "XYXY" then return { left, top, left, top } end
  if format == "XYXYXYXY" then return { left, top, left, top, left, top, left, top } end
  if ROTATED[format] then return { left, top, 0, 0, 0 } end
  return { left, top, 0, 0 }
end

local function crop_boxes(fn, boxes, format, top, left, height, width, mode)
  local b = shift(boxes, offsets(format, left, top))
  if format == "XYXYXYXY" then b = parallelogram_to_rectangle(b) end
  return clamp_boxes(fn, b, format, height, width, mode), { height, width }
end

local function int_args(fn, a, names)
  for _, n in ipairs(names) do a[n] = U.check_int(fn, n, a[n]) end
end

-- crop_bounding_boxes(bounding_boxes, format, top, left, height, width, clamping_mode="soft")
function M.crop_bounding_boxes(...)
  local fn = "crop_bounding_boxes"
  local a = U.parse(fn, { { "bounding_boxes", U.REQUIRED }, { "format", U.REQUIRED }, { "top", U.REQUIRED }, { "left", U.REQUIRED },
    { "height", U.REQUIRED }, { "width", U.REQUIRED }, { "clamping_mode", "soft" } }, ...)
  local format = format_name(fn, a.format)
  int_args(fn, a, { "top", "left", "height", "width" })
  return crop_boxes(fn, boxes_arg(fn, a.bounding_boxes, format), format, a.top, a.left, a.height, a.width,
    check_clamping_mode(fn, a.clamping_mode))
end

-- crop_keypoints(keypoints, top, left, height, width)
function M.crop_keypoints(...)
  local fn = "crop_keypoints"
  local a = U.parse(fn, { { "keypoints", U.REQUIRED }, { "top", U.REQUIRED }, { "left", U.REQUIRED }, { "height", U.REQUIRED }, { "width", U.REQUIRED } }, ...)
  int_args(fn, a, { "top", "left", "height", "width" })
  return shift(keypoints_arg(fn, a.keypoints), { a.left, a.top }), { a.height, a.width }
end

-- crop_mask(mask, top, left, height, width): outside the mask is 0
function M.crop_mask(...)
  local fn = "crop_mask"
  local a = U.parse(fn, { { "mask", U.REQUIRED }, { "top", U.REQUIRED }, { "left", U.REQUIRED }, { "height", U.REQUIRED }, { "width", U.REQUIRED } }, ...)
  int_args(fn, a, { "top", "left", "height", "width" })
  return on_mask(fn, a.mask, function(m) return F().crop(m, a.top, a.left, a.height, a.width) end)
end

local function center_crop_size(fn, output_size)
  if type(output_size) == "number" then return U.check_int(fn, "output_size", output_size), U.check_int(fn, "output_size", output_size) end
  if type(output_size) ~= "table" or #output_size < 1 or #output_size > 2 then
    U.errorf("%s: output_size should be an int or a sequence of one or two ints, got %s", fn, U.typename(output_size))
  end
  return output_size[1], output_size[#output_size]
end

-- int(round(d / 2)) for an integer d, rounding half to even as Python does
local function half_round(d) return (d + (d // 2) % 2) // 2 end

local function center_anchor(ch, cw, h, w) return half_round(h - ch), half_round(w - cw) end

-- center_crop_bounding_boxes(bounding_boxes, format, canvas_size, output_size, clamping_mode="soft")
function M.center_crop_bounding_boxes(...)
  local fn = "center_crop_bounding_boxes"
  local a = U.parse(fn, { { "bounding_boxes", U.REQUIRED }, { "format", U.REQUIRED }, { "canvas_size", U.REQUIRED },
    { "output_size", U.REQUIRED }, { "clamping_mode", "soft" } }, ...)
  local format = format_name(fn, a.format)
  local h, w = canvas_arg(fn, a.canvas_size)
  local ch, cw = center_crop_size(fn, a.output_size)
  local top, left = center_anchor(ch, cw, h, w)
  return crop_boxes(fn, boxes_arg(fn, a.bounding_boxes, format), format, top, left, ch, cw, check_clamping_mode(fn, a.clamping_mode))
end

-- center_crop_keypoints(inpt, canvas_size, output_size)
function M.center_crop_keypoints(...)
  local fn = "center_crop_keypoints"
  local a = U.parse(fn, { { "inpt", U.REQUIRED }, { "canvas_size", U.REQUIRED }, { "output_size", U.REQUIRED } }, ...)
  local h, w = canvas_arg(fn, a.canvas_size)
  local ch, cw = center_crop_size(fn, a.output_size)
  local top, left = center_anchor(ch, cw, h, w)
  return shift(keypoints_arg(fn, a.inpt), { left, top }), { ch, cw }
end

-- center_crop_mask(mask, output_size)
function M.center_crop_mask(...)
  local fn = "center_crop_mask"
  local a = U.parse(fn, { { "mask", U.REQUIRED }, { "output_size", U.REQUIRED } }, ...)
  local ch, cw = center_crop_size(fn, a.output_size)
  return on_mask(fn, a.mask, function(m) return F().center_crop(m, { ch, cw }) end)
end

-- resized_crop_bounding_boxes(bounding_boxes, format, top, left, height, width, size, clamping_mode="soft")
function M.resized_crop_bounding_boxes(...)
  local fn = "resized_crop_bounding_boxes"
  local a = U.parse(fn, { { "bounding_boxes", U.REQUIRED }, { "format", U.REQUIRED }, { "top", U.REQUIRED }, { "left", U.REQUIRED },
    { "height", U.REQUIRED }, { "width", U.REQUIRED }, { "size", U.REQUIRED }, { "clamping_mode", "soft" } }, ...)
  local b, canvas = M.crop_bounding_boxes(a.bounding_boxes, a.format, a.top, a.left, a.height, a.width, a.clamping_mode)
  return M.resize_bounding_boxes(b, canvas, a.size, nil, a.format, a.clamping_mode)
end

-- resized_crop_keypoints(keypoints, top, left, height, width, size)
function M.resized_crop_keypoints(...)
  local fn = "resized_crop_keypoints"
  local a = U.parse(fn, { { "keypoints", U.REQUIRED }, { "top", U.REQUIRED }, { "left", U.REQUIRED }, { "height", U.REQUIRED },
    { "width", U.REQUIRED }, { "size", U.REQUIRED } }, ...)
  local kp, canvas = M.crop_keypoints(a.keypoints, a.top, a.left, a.height, a.width)
  return M.resize_keypoints(kp, a.size, canvas)
end

-- resized_crop_mask(mask, top, left, height, width, size)
function M.resized_crop_mask(...)
  local fn = "resized_crop_mask"
  local a = U.parse(fn, { { "mask", U.REQUIRED }, { "top", U.REQUIRED }, { "left", U.REQUIRED }, { "height", U.REQUIRED },
    { "width", U.REQUIRED }, { "size", U.REQUIRED } }, ...)
  return M.resize_mask(M.crop_mask(a.mask, a.top, a.left, a.height, a.width), a.size)
end

-- torchvision's _parse_pad_padding: left, right, top, bottom
local function parse_padding(fn, padding)
  if math.type(padding) == "integer" then return padding, padding, padding, padding end
  if type(padding) ~= "table" then
    U.errorf("%s: `padding` should be an integer or tuple or list of integers, but got %s", fn, U.pystr(padding))
  end
  if #padding == 1 then return padding[1], padding[1], padding[1], padding[1] end
  if #padding == 2 then return padding[1], padding[1], padding[2], padding[2] end
  if #padding == 4 then return padding[1], padding[3], padding[2], padding[4] end
  U.errorf("%s: Padding must be an int or a 1, 2, or 4 element tuple or list. Found %d", fn, #padding)
end

-- pad_bounding_boxes(bounding_boxes, format, canvas_size, padding, padding_mode="constant", clamping_mode="soft")
function M.pad_bounding_boxes(...)
  local fn = "pad_bounding_boxes"
  local a = U.parse(fn, { { "bounding_boxes", U.REQUIRED }, { "format", U.REQUIRED }, { "canvas_size", U.REQUIRED },
    { "padding", U.REQUIRED }, { "padding_mode", "constant" }, { "clamping_mode", "soft" } }, ...)
  local format = format_name(fn, a.format)
  local boxes = boxes_arg(fn, a.bounding_boxes, format)
  local h, w = canvas_arg(fn, a.canvas_size)
  if a.padding_mode ~= "constant" then U.errorf("%s: Padding mode '%s' is not supported with bounding boxes", fn, tostring(a.padding_mode)) end
  local mode = check_clamping_mode(fn, a.clamping_mode)
  local l, r, t, b = parse_padding(fn, a.padding)
  local nh, nw = h + t + b, w + l + r
  return clamp_boxes(fn, shift(boxes, offsets(format, -l, -t)), format, nh, nw, mode), { nh, nw }
end

-- pad_keypoints(keypoints, canvas_size, padding, padding_mode="constant")
function M.pad_keypoints(...)
  local fn = "pad_keypoints"
  local a = U.parse(fn, { { "keypoints", U.REQUIRED }, { "canvas_size", U.REQUIRED }, { "padding", U.REQUIRED }, { "padding_mode", "constant" } }, ...)
  local kp = keypoints_arg(fn, a.keypoints)
  local h, w = canvas_arg(fn, a.canvas_size)
  if a.padding_mode ~= "constant" then
    U.errorf("%s: Padding mode '%s' is not supported with KeyPoints (supported modes are constant)", fn, tostring(a.padding_mode))
  end
  local l, r, t, b = parse_padding(fn, a.padding)
  return shift(kp, { -l, -t }), { h + t + b, w + l + r }
end

-- pad_mask(mask, padding, fill=None, padding_mode="constant")
function M.pad_mask(...)
  local fn = "pad_mask"
  local a = U.parse(fn, { { "mask", U.REQUIRED }, { "padding", U.REQUIRED }, { "fill", nil }, { "padding_mode", "constant" } }, ...)
  local fill = a.fill == nil and 0 or a.fill
  if type(fill) == "table" then U.errorf("%s: Non-scalar fill value is not supported", fn) end
  local pm = a.padding_mode
  if pm ~= "constant" and pm ~= "edge" and pm ~= "reflect" and pm ~= "symmetric" then
    U.errorf("%s: `padding_mode` should be either `'constant'`, `'edge'`, `'reflect'` or `'symmetric'`, but got `'%s'`.", fn, tostring(pm))
  end
  local l, r, t, b = parse_padding(fn, a.padding)
  return on_mask(fn, a.mask, function(m) return F().pad(m, { l, t, r, b }, fill, pm) end)
end

---------------------------------------------------------------------------
-- affine, rotate
---------------------------------------------------------------------------

-- torchvision's _affine_parse_args (the checks and normal forms): angle, translate, shear, center
local function affine_args(fn, angle, translate, scale, shear, center)
  if type(angle) ~= "number" then U.errorf("%s: Argument angle should be int or float", fn) end
  if type(translate) ~= "table" then U.errorf("%s: Argument translate should be a sequence", fn) end
  if #translate ~= 2 then U.errorf("%s: Argument translate should be a sequence of length 2", fn) end
  if type(scale) ~= "number" then U.errorf("%s: Argument scale should be a number, got %s", fn, U.typename(scale)) end
  if scale <= 0.0 then U.errorf("%s: Argument scale should be positive", fn) end
  if type(shear) == "number" then shear = { shear, 0.0 }
  elseif type(shear) ~= "table" then U.errorf("%s: Shear should be either a single value or a sequence of two values", fn) end
  if #shear == 1 then shear = { shear[1], shear[1] } end
  if #shear ~= 2 then U.errorf("%s: Shear should be a sequence containing two values. Got %d values", fn, #shear) end
  if center ~= nil and type(center) ~= "table" then U.errorf("%s: Argument center should be a sequence", fn) end
  return angle + 0.0, translate, shear, center
end

-- the forward affine matrix (torchvision's _get_inverse_affine_matrix with inverted=False): 6 numbers
local function forward_affine(center, angle, translate, scale, shear)
  local rot, sx, sy = math.rad(angle), math.rad(shear[1]), math.rad(shear[2])
  local cx, cy, tx, ty = center[1], center[2], translate[1], translate[2]
  local a = math.cos(rot - sy) / math.cos(sy)
  local b = -(a * math.tan(sx) + math.sin(rot))
  local c = math.sin(rot - sy) / math.cos(sy)
  local d = math.cos(rot) - c * math.tan(sx)
  local m = { a * scale, b * scale, 0.0, c * scale, d * scale, 0.0 }
  m[3] = m[3] + (cx + tx) - m[1] * cx - m[2] * cy
  m[6] = m[6] + (cy + ty) - m[4] * cx - m[5] * cy
  return m
end

-- torchvision's _compute_affine_output_size_tensor (in float32, as torch computes it): w, h
local function affine_output_size(m, w, h)
  local hw, hh = 0.5 * w, 0.5 * h
  local pts = torch.tensor({ { -hw, -hh, 1.0 }, { -hw, hh, 1.0 }, { hw, hh, 1.0 }, { hw, -hh, 1.0 } })
  local new = pts:matmul(torch.tensor(m):view(2, 3):t())
  local half = torch.tensor({ hw, hh })
  local mn, mx = new:amin(0) + half, new:amax(0) + half
  local tol = 1e-4
  local size = (((mx * (1.0 / tol)):trunc() * tol):ceil() - ((mn * (1.0 / tol)):trunc() * tol):floor()):tolist()
  return math.floor(size[1]), math.floor(size[2])
end

-- points (P, 2) of dtype wd through the 2x3 matrix m
local function affine_points(points, m)
  local mt = torch.tensor(m, { dtype = points.dtype, device = points.device }):view(2, 3):t()
  local ones = torch.ones(points:size(0), 1, { dtype = points.dtype, device = points.device })
  return torch.cat({ points, ones }, -1):matmul(mt)
end

-- the canvas corners through m: their minimum (1, 2)
local function canvas_shift(m, h, w, like)
  local corners = torch.tensor({ { 0.0, 0.0 }, { 0.0, h + 0.0 }, { w + 0.0, h + 0.0 }, { w + 0.0, 0.0 } }, { dtype = like.dtype, device = like.device })
  return affine_points(corners, m):amin(0, true)
end

-- the four corners (N*4, 2) of XYXY boxes (N, 4)
local function corners(b)
  local x1, y1, x2, y2 = table.unpack(cols(b))
  return torch.stack({ x1, y1, x2, y1, x2, y2, x1, y2 }, -1):view(-1, 2)
end

-- the axis-aligned hull (N, 4) of transformed corners (N*4, 2)
local function hull(points)
  local p = points:view(-1, 4, 2)
  return torch.cat({ p:amin(1), p:amax(1) }, 1)
end

local function affine_boxes(fn, boxes, format, h, w, angle, translate, scale, shear, center, expand, mode)
  local canvas = { h, w }
  if boxes:numel() == 0 then return boxes, canvas end
  local dtype, shape = boxes.dtype, boxes.shape
  local rot = ROTATED[format]
  local mid, n = rot and "XYXYXYXY" or "XYXY", rot and 8 or 4 -- the intermediate format
  local b, need_cast = float_copy(boxes)
  b = convert(b, format, mid, true):reshape(-1, n)
  center = center or { w * 0.5, h * 0.5 }
  local m = forward_affine(center, angle, translate, scale, shear)
  local out
  if rot then
    out = parallelogram_to_rectangle(affine_points(b:reshape(-1, 2), m):reshape(-1, 8))
  else
    out = hull(affine_points(corners(b), m))
  end
  if expand then
    local tr = canvas_shift(m, h, w, out)
    out = out - torch.cat(rot and { tr, tr, tr, tr } or { tr, tr }, 1)
    local nw, nh = affine_output_size(F()._get_inverse_affine_matrix(center, angle, translate, scale, shear), w, h)
    canvas = { nh, nw }
  end
  out = clamp_boxes(fn, out, mid, canvas[1], canvas[2], mode)
  out = convert(out, mid, format, true):reshape(shape)
  if need_cast then out = out:to(dtype) end
  return out, canvas
end

local function affine_kp(kp, h, w, angle, translate, scale, shear, center, expand)
  local canvas = { h, w }
  if kp:numel() == 0 then return kp, canvas end
  local p = float_copy(kp)
  center = center or { w * 0.5, h * 0.5 }
  local m = forward_affine(center, angle, translate, scale, shear)
  local out = affine_points(p:reshape(-1, 2), m)
  if expand then
    out = out - canvas_shift(m, h, w, out)
    local nw, nh = affine_output_size(F()._get_inverse_affine_matrix({ 0.0, 0.0 }, angle, translate, scale, shear), w, h)
    canvas = { nh, nw }
  end
  return out:reshape(kp.shape):to(kp.dtype), canvas
end

-- affine_bounding_boxes(bounding_boxes, format, canvas_size, angle, translate, scale, shear, center=None, clamping_mode="soft")
function M.affine_bounding_boxes(...)
  local fn = "affine_bounding_boxes"
  local a = U.parse(fn, { { "bounding_boxes", U.REQUIRED }, { "format", U.REQUIRED }, { "canvas_size", U.REQUIRED }, { "angle", U.REQUIRED },
    { "translate", U.REQUIRED }, { "scale", U.REQUIRED }, { "shear", U.REQUIRED }, { "center", nil }, { "clamping_mode", "soft" } }, ...)
  local format = format_name(fn, a.format)
  local boxes = boxes_arg(fn, a.bounding_boxes, format)
  local h, w = canvas_arg(fn, a.canvas_size)
  local angle, translate, shear, center = affine_args(fn, a.angle, a.translate, a.scale, a.shear, a.center)
  return (affine_boxes(fn, boxes, format, h, w, angle, translate, a.scale, shear, center, false, check_clamping_mode(fn, a.clamping_mode)))
end

-- affine_keypoints(keypoints, canvas_size, angle, translate, scale, shear, center=None) -> keypoints, canvas_size
function M.affine_keypoints(...)
  local fn = "affine_keypoints"
  local a = U.parse(fn, { { "keypoints", U.REQUIRED }, { "canvas_size", U.REQUIRED }, { "angle", U.REQUIRED }, { "translate", U.REQUIRED },
    { "scale", U.REQUIRED }, { "shear", U.REQUIRED }, { "center", nil } }, ...)
  local kp = keypoints_arg(fn, a.keypoints)
  local h, w = canvas_arg(fn, a.canvas_size)
  local angle, translate, shear, center = affine_args(fn, a.angle, a.translate, a.scale, a.shear, a.center)
  return affine_kp(kp, h, w, angle, translate, a.scale, shear, center, false)
end

-- affine_mask(mask, angle, translate, scale, shear, fill=None, center=None)
function M.affine_mask(...)
  local fn = "affine_mask"
  local a = U.parse(fn, { { "mask", U.REQUIRED }, { "angle", U.REQUIRED }, { "translate", U.REQUIRED }, { "scale", U.REQUIRED },
    { "shear", U.REQUIRED }, { "fill", nil }, { "center", nil } }, ...)
  return on_mask(fn, a.mask, function(m) return F().affine(m, a.angle, a.translate, a.scale, a.shear, "nearest", a.fill, a.center) end, true)
end

-- rotate_bounding_boxes(bounding_boxes, format, canvas_size, angle, expand=False, center=None, clamping_mode="soft")
function M.rotate_bounding_boxes(...)
  local fn = "rotate_bounding_boxes"
  local a = U.parse(fn, { { "bounding_boxes", U.REQUIRED }, { "format", U.REQUIRED }, { "canvas_size", U.REQUIRED }, { "angle", U.REQUIRED },
    { "expand", false }, { "center", nil }, { "clamping_mode", "soft" } }, ...)
  local format = format_name(fn, a.format)
  local boxes = boxes_arg(fn, a.bounding_boxes, format)
  local h, w = canvas_arg(fn, a.canvas_size)
  local angle, translate, shear, center = affine_args(fn, a.angle, { 0.0, 0.0 }, 1.0, { 0.0, 0.0 }, a.center)
  return affine_boxes(fn, boxes, format, h, w, -angle, translate, 1.0, shear, center, a.expand, check_clamping_mode(fn, a.clamping_mode))
end

-- rotate_keypoints(keypoints, canvas_size, angle, expand=False, center=None) -> keypoints, canvas_size
function M.rotate_keypoints(...)
  local fn = "rotate_keypoints"
  local a = U.parse(fn, { { "keypoints", U.REQUIRED }, { "canvas_size", U.REQUIRED }, { "angle", U.REQUIRED }, { "expand", false }, { "center", nil } }, ...)
  local kp = keypoints_arg(fn, a.keypoints)
  local h, w = canvas_arg(fn, a.canvas_size)
  local angle, translate, shear, center = affine_args(fn, a.angle, { 0.0, 0.0 }, 1.0, { 0.0, 0.0 }, a.center)
  return affine_kp(kp, h, w, -angle, translate, 1.0, shear, center, a.expand)
end

-- rotate_mask(mask, angle, expand=False, center=None, fill=None): quarter turns without a center
-- are torch.rot90, as torchvision's rotate_image does
function M.rotate_mask(...)
  local fn = "rotate_mask"
  local a = U.parse(fn, { { "mask", U.REQUIRED }, { "angle", U.REQUIRED }, { "expand", false }, { "center", nil }, { "fill", nil } }, ...)
  if type(a.angle) ~= "number" then U.errorf("%s: Argument angle should be int or float", fn) end
  return on_mask(fn, a.mask, function(m)
    local angle = a.angle % 360
    if a.center == nil then
      if angle == 0 then return m:clone() end
      if angle == 180 then return torch.rot90(m, 2, { -2, -1 }) end
      if a.expand or m:size(-1) == m:size(-2) then
        if angle == 90 then return torch.rot90(m, 1, { -2, -1 }) end
        if angle == 270 then return torch.rot90(m, 3, { -2, -1 }) end
      end
    end
    return F().rotate(m, a.angle, "nearest", a.expand, a.center, a.fill)
  end, true)
end

---------------------------------------------------------------------------
-- perspective
---------------------------------------------------------------------------

-- torchvision's _perspective_coefficients: the 8 coefficients (output -> input)
local function perspective_coefficients(fn, startpoints, endpoints, coefficients)
  if coefficients ~= nil then
    if startpoints ~= nil and endpoints ~= nil then
      U.errorf("%s: The startpoints/endpoints and the coefficients shouldn't be defined concurrently.", fn)
    end
    if type(coefficients) ~= "table" or #coefficients ~= 8 then U.errorf("%s: Argument coefficients should have 8 float values", fn) end
    return coefficients
  end
  if startpoints ~= nil and endpoints ~= nil then return U.call(F()._get_perspective_coeffs, startpoints, endpoints) end
  U.errorf("%s: Either the startpoints/endpoints or the coefficients must have non `None` values.", fn)
end

-- points (P, 2) through the inverse of the perspective c (input -> output), in dtype wd
local function perspective_points(fn, what, points, c)
  local denom = c[1] * c[5] - c[2] * c[4]
  if denom == 0 then
    U.errorf("%s: Provided perspective_coeffs %s can not be inverted to transform %s. Denominator is zero, denom=%s",
      fn, U.pystr(c), what, U.pystr(denom))
  end
  local i = {
    (c[5] - c[6] * c[8]) / denom, (-c[2] + c[3] * c[8]) / denom, (c[2] * c[6] - c[3] * c[5]) / denom,
    (-c[4] + c[6] * c[7]) / denom, (c[1] - c[3] * c[7]) / denom, (-c[1] * c[6] + c[3] * c[4]) / denom,
    (-c[5] * c[7] + c[4] * c[8]) / denom, (-c[1] * c[8] + c[2] * c[7]) / denom,
  }
  local o = { dtype = points.dtype, device = points.device }
  local theta1 = torch.tensor({ { i[1], i[2], i[3] }, { i[4], i[5], i[6] } }, o)
  local theta2 = torch.tensor({ { i[7], i[8], 1.0 }, { i[7], i[8], 1.0 } }, o)
  local p = torch.cat({ points, torch.ones(points:size(0), 1, o) }, -1)
  return p:matmul(theta1:t()):div_(p:matmul(theta2:t()))
end

-- perspective_bounding_boxes(bounding_boxes, format, canvas_size, startpoints, endpoints, coefficients=None, clamping_mode="soft")
function M.perspective_bounding_boxes(...)
  local fn = "perspective_bounding_boxes"
  local a = U.parse(fn, { { "bounding_boxes", U.REQUIRED }, { "format", U.REQUIRED }, { "canvas_size", U.REQUIRED }, { "startpoints", nil },
    { "endpoints", nil }, { "coefficients", nil }, { "clamping_mode", "soft" } }, ...)
  local format = format_name(fn, a.format)
  local boxes = boxes_arg(fn, a.bounding_boxes, format)
  local h, w = canvas_arg(fn, a.canvas_size)
  local mode = check_clamping_mode(fn, a.clamping_mode)
  if boxes:numel() == 0 then return boxes end
  local c = perspective_coefficients(fn, a.startpoints, a.endpoints, a.coefficients)
  local rot = ROTATED[format]
  local mid = rot and "XYXYXYXY" or "XYXY"
  -- as torchvision, integer boxes are converted before they are cast to float
  local b = convert(boxes, format, mid):reshape(-1, rot and 8 or 4)
  local pts = (rot and b:reshape(-1, 2) or corners(b)):to(work_dtype(b))
  local moved = perspective_points(fn, "bounding boxes", pts, c)
  local out = rot and parallelogram_to_rectangle(moved:reshape(-1, 8)) or hull(moved)
  out = clamp_boxes(fn, out, mid, h, w, mode)
  return convert(out, mid, format, true):reshape(boxes.shape):to(boxes.dtype)
end

-- perspective_keypoints(keypoints, canvas_size, startpoints, endpoints, coefficients=None)
function M.perspective_keypoints(...)
  local fn = "perspective_keypoints"
  local a = U.parse(fn, { { "keypoints", U.REQUIRED }, { "canvas_size", U.REQUIRED }, { "startpoints", nil }, { "endpoints", nil },
    { "coefficients", nil } }, ...)
  local kp = keypoints_arg(fn, a.keypoints)
  canvas_arg(fn, a.canvas_size)
  if kp:numel() == 0 then return kp end
  local c = perspective_coefficients(fn, a.startpoints, a.endpoints, a.coefficients)
  local out = perspective_points(fn, "keypoints", kp:reshape(-1, 2):to(work_dtype(kp)), c)
  return out:to(kp.dtype):reshape(kp.shape)
end

-- perspective_mask(mask, startpoints, endpoints, fill=None, coefficients=None)
function M.perspective_mask(...)
  local fn = "perspective_mask"
  local a = U.parse(fn, { { "mask", U.REQUIRED }, { "startpoints", nil }, { "endpoints", nil }, { "fill", nil }, { "coefficients", nil } }, ...)
  local c = perspective_coefficients(fn, a.startpoints, a.endpoints, a.coefficients)
  return on_mask(fn, a.mask, function(m)
    local h, w = m:size(-2), m:size(-1)
    if m.device.type ~= "cpu" then
      local k = WK.for_device(C.warp, m)
      local out = k and k(m, h, w, "perspective", c, "nearest", a.fill)
      if out ~= nil then return out end
      return C.warp(m:cpu(), "chw", h, w, "perspective", c, "nearest", a.fill):to(m.device)
    end
    return C.warp(m, "chw", h, w, "perspective", c, "nearest", a.fill)
  end, true)
end

---------------------------------------------------------------------------
-- elastic
---------------------------------------------------------------------------

local function check_displacement(fn, d, h, w)
  if not torch.is_tensor(d) then U.errorf("%s: Argument displacement should be a Tensor", fn) end
  local s = d.shape:totable()
  if #s ~= 4 or s[1] ~= 1 or s[2] ~= h or s[3] ~= w or s[4] ~= 2 then
    U.errorf("%s: Argument displacement shape should be (1, %d, %d, 2), but given %s", fn, h, w, tostring(d.shape))
  end
end

-- the approximate inverse grid id - displacement as (H*W, 2) pixel positions, in wd on device
local function inverse_grid_pixels(d, h, w, wd, device)
  local o = { dtype = wd, device = device }
  local gx = torch.linspace((-w + 1) / w, (w - 1) / w, w, o):view(1, w):expand(h, w)
  local gy = torch.linspace((-h + 1) / h, (h - 1) / h, h, o):view(h, 1):expand(h, w)
  local dd = d:to(device):to(wd)
  local inv = torch.stack({ gx, gy }, -1) - dd[0]
  local size = torch.tensor({ w, h }, o)
  return inv:reshape(h * w, 2):add(1):mul(size * 0.5):sub(0.5)
end

-- rows of grid (H*W, 2) at integer points idx (P, 2) = (x, y); negative indices count from the end
-- as Python's do; an index past the grid is an error, as in torchvision
local function grid_at(fn, grid, idx, h, w)
  local ix, iy = table.unpack(cols(idx))
  if (ix:ge(w) + ix:lt(-w) + iy:ge(h) + iy:lt(-h)):gt(0):any():item() then
    U.errorf("%s: a point lies outside the displacement grid of size (%d, %d) (torchvision raises an IndexError here)", fn, h, w)
  end
  ix = torch.where(ix:lt(0), ix + w, ix)
  iy = torch.where(iy:lt(0), iy + h, iy)
  return grid:index_select(0, iy * w + ix)
end

-- elastic_bounding_boxes(bounding_boxes, format, canvas_size, displacement, clamping_mode="soft")
function M.elastic_bounding_boxes(...)
  local fn = "elastic_bounding_boxes"
  local a = U.parse(fn, { { "bounding_boxes", U.REQUIRED }, { "format", U.REQUIRED }, { "canvas_size", U.REQUIRED },
    { "displacement", U.REQUIRED }, { "clamping_mode", "soft" } }, ...)
  local format = format_name(fn, a.format)
  local boxes = boxes_arg(fn, a.bounding_boxes, format)
  local h, w = canvas_arg(fn, a.canvas_size)
  check_displacement(fn, a.displacement, h, w)
  local mode = check_clamping_mode(fn, a.clamping_mode)
  if boxes:numel() == 0 then return boxes end
  local wd = work_dtype(boxes)
  local rot = ROTATED[format]
  local mid = rot and "CXCYWHR" or "XYXY" -- rotated boxes move their centres only
  local b = convert(boxes, format, mid):reshape(-1, rot and 5 or 4)
  local grid = inverse_grid_pixels(a.displacement, h, w, wd, boxes.device)
  local pts = rot and b:narrow(1, 0, 2) or corners(b)
  if pts:is_floating_point() then pts = pts:ceil() end
  local moved = grid_at(fn, grid, pts:to(torch.int64), h, w)
  local out = (rot and torch.cat({ moved, b:narrow(1, 2, 3) }, 1) or hull(moved)):to(b.dtype)
  out = clamp_boxes(fn, out, mid, h, w, mode)
  return convert(out, mid, format):reshape(boxes.shape)
end

-- elastic_keypoints(keypoints, canvas_size, displacement): points are truncated to pixels and clamped to the grid
function M.elastic_keypoints(...)
  local fn = "elastic_keypoints"
  local a = U.parse(fn, { { "keypoints", U.REQUIRED }, { "canvas_size", U.REQUIRED }, { "displacement", U.REQUIRED } }, ...)
  local kp = keypoints_arg(fn, a.keypoints)
  local h, w = canvas_arg(fn, a.canvas_size)
  check_displacement(fn, a.displacement, h, w)
  if kp:numel() == 0 then return kp end
  local grid = inverse_grid_pixels(a.displacement, h, w, work_dtype(kp), kp.device)
  local ix, iy = table.unpack(cols(kp:reshape(-1, 2):to(torch.int64)))
  local idx = iy:clamp(0, h - 1) * w + ix:clamp(0, w - 1)
  return grid:index_select(0, idx):to(kp.dtype):reshape(kp.shape)
end

-- elastic_mask(mask, displacement, fill=None)
function M.elastic_mask(...)
  local fn = "elastic_mask"
  local a = U.parse(fn, { { "mask", U.REQUIRED }, { "displacement", U.REQUIRED }, { "fill", nil } }, ...)
  return on_mask(fn, a.mask, function(m) return F().elastic_transform(m, a.displacement, "nearest", a.fill) end, true)
end

return M
