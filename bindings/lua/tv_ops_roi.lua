-- torchvision.ops RoI pooling: roi_align, roi_pool, ps_roi_align, ps_roi_pool and their classes
-- RoIAlign, RoIPool, PSRoIAlign, PSRoIPool, plus MultiScaleRoIAlign. Boxes are a Tensor[K, 5]
-- (batch index, x1, y1, x2, y2) or a list of Tensor[L, 4] (one per image). Every sample of every
-- bin of every RoI is one gather from the flattened input, so CPU and CUDA share the code and
-- autograd gives the input's gradient (boxes get none, as in torchvision).
local torch = require "torch"
local U = require "nn_util"
local boxes_ops = require "tv_ops_boxes"
local nn = torch.nn

local M = {}

local function arange(n, like, dtype)
  return torch.arange(n, { dtype = dtype or like.dtype, device = like.device })
end

-- torchvision's convert_boxes_to_roi_format: a list of [L, 4] -> [K, 5] with the image index first
local function roi_format(fname, boxes)
  if torch.is_tensor(boxes) then
    if boxes:dim() ~= 2 or boxes:size(1) ~= 5 then U.error("The boxes tensor shape is not correct as Tensor[K, 5]") end
    return boxes
  end
  if type(boxes) ~= "table" then U.error("boxes is expected to be a Tensor[L, 5] or a List[Tensor[K, 4]]") end
  local parts = {}
  for i, b in ipairs(boxes) do
    U.tensor_arg(fname, "boxes[" .. i .. "]", b)
    if b:dim() ~= 2 or b:size(1) ~= 4 then
      U.error("The shape of the tensor in the boxes list is not correct as List[Tensor[L, 4]]")
    end
    local ids = torch.full({ b:size(0), 1 }, i - 1, { dtype = b.dtype, device = b.device })
    parts[#parts + 1] = torch.cat({ ids, b }, 1)
  end
  if #parts == 0 then U.error("boxes is expected to be a Tensor[L, 5] or a List[Tensor[K, 4]]") end
  return torch.cat(parts, 0)
end
M._roi_format = roi_format

-- common arguments: input [N, C, H, W], rois [K, 5] (detached, input's dtype), output size ph, pw
local function roi_args(fname, spec, ...)
  local o = U.parse(fname, spec, ...)
  local input = U.tensor_arg(fname, "input", o.input)
  if input:dim() ~= 4 then U.errorf("%s: input must be a 4-D tensor [N, C, H, W], got %s", fname, U.shape_str(input)) end
  local rois = roi_format(fname, o.boxes):detach():to(input.dtype)
  local size = U.ntuple(fname, "output_size", o.output_size, 2)
  return o, input, rois, size[1], size[2]
end

-- flat index into input of channel cmap ([1, C, PH, 1, PW, 1]), row r ([K, 1, PH, G, 1, 1]),
-- column c ([K, 1, 1, 1, PW, G]) of each RoI's image
local function flat_index(input, batch, cmap, r, c)
  local Cin, H, W = input:size(1), input:size(2), input:size(3)
  local b = batch:reshape(-1, 1, 1, 1, 1, 1)
  return ((b * Cin + cmap) * H + r) * W + c
end

local function gather(input, idx)
  return input:reshape(-1):index_select(0, idx:reshape(-1)):reshape(idx.shape)
end

-- the input channel of output channel c at bin (ph, pw): c itself, or (c*PH + ph)*PW + pw for the
-- position-sensitive variants (input channels C*PH*PW)
local function channel_map(fname, input, ph, pw, ps)
  local C = input:size(1)
  local long = torch.int64
  if not ps then return arange(C, input, long):reshape(1, C, 1, 1, 1, 1), C end
  if C % (ph * pw) ~= 0 then U.errorf("%s: input channels must be a multiple of pooling height * pooling width", fname) end
  local co = C // (ph * pw)
  local c = arange(co, input, long):reshape(1, co, 1, 1, 1, 1)
  local h = arange(ph, input, long):reshape(1, 1, ph, 1, 1, 1)
  local w = arange(pw, input, long):reshape(1, 1, 1, 1, pw, 1)
  return (c * ph + h) * pw + w, co
end

-- one axis of roi_align's bilinear sampling at positions v (any shape) in [0, size): the two
-- neighbours and their weights; outside [-1, size] or where mask is false both weights are 0
local function axis_weights(v, size, mask)
  local valid = torch.logical_and(torch.logical_and(v:ge(-1), v:le(size)), mask)
  v = v:clamp({ min = 0 })
  local low = v:floor()
  local at_end = low:ge(size - 1)
  low = torch.where(at_end, torch.full_like(low, size - 1), low)
  local high = torch.where(at_end, low, low + 1)
  v = torch.where(at_end, low, v)
  local l = v - low
  local zero = torch.zeros_like(l)
  return low:long(), high:long(), torch.where(valid, 1 - l, zero), torch.where(valid, l, zero)
end

-- roi_align / ps_roi_align: average of a grid of bilinear samples per bin
local function align(fname, input, rois, ph, pw, scale, sampling_ratio, aligned, ps)
  local cmap, C = channel_map(fname, input, ph, pw, ps)
  local K, H, W = rois:size(0), input:size(2), input:size(3)
  if K == 0 then return torch.zeros(0, C, ph, pw, { dtype = input.dtype, device = input.device }) end
  local offset = aligned and 0.5 or 0
  local x1, y1 = rois:select(1, 1) * scale - offset, rois:select(1, 2) * scale - offset
  local rw, rh = rois:select(1, 3) * scale - offset - x1, rois:select(1, 4) * scale - offset - y1
  if not aligned and not ps then rw, rh = rw:clamp({ min = 1 }), rh:clamp({ min = 1 }) end
  local bin_h, bin_w = rh / ph, rw / pw
  local gh, gw
  if sampling_ratio > 0 then
    gh = torch.full({ K }, sampling_ratio, { dtype = input.dtype, device = input.device })
    gw = gh
  else
    gh, gw = bin_h:ceil():clamp({ min = 0 }), bin_w:ceil():clamp({ min = 0 })
  end
  local GH = math.max(math.tointeger(gh:max():item()) or 1, 1)
  local GW = math.max(math.tointeger(gw:max():item()) or 1, 1)
  -- sample positions: start + bin * (p + (i + 0.5) / grid), grids padded to GH x GW and masked
  local function positions(start, bin, grid, n, G)
    local p = arange(n, input):reshape(1, n, 1)
    local i = arange(G, input):reshape(1, 1, G)
    local g = grid:reshape(-1, 1, 1)
    local v = start:reshape(-1, 1, 1) + bin:reshape(-1, 1, 1) * (p + (i + 0.5) / g:clamp({ min = 1 }))
    return v, i:lt(g):expand(v.shape)
  end
  local ys, ymask = positions(y1, bin_h, gh, ph, GH)
  local xs, xmask = positions(x1, bin_w, gw, pw, GW)
  local ylo, yhi, wyl, wyh = axis_weights(ys, H, ymask)
  local xlo, xhi, wxl, wxh = axis_weights(xs, W, xmask)
  local batch = rois:select(1, 0):long()
  local count = (gh * gw):clamp({ min = 1 }):reshape(K, 1, 1, 1)
  local out
  if not ps then
    -- channels last: one gathered row of C values per sample point
    local rows = input:permute(0, 2, 3, 1):reshape(-1, C)
    local b = batch:reshape(K, 1, 1, 1, 1)
    for _, ry in ipairs({ { ylo, wyl }, { yhi, wyh } }) do
      for _, rx in ipairs({ { xlo, wxl }, { xhi, wxh } }) do
        local idx = (b * H + ry[1]:reshape(K, ph, GH, 1, 1)) * W + rx[1]:reshape(K, 1, 1, pw, GW)
        local w = ry[2]:reshape(K, ph, GH, 1, 1) * rx[2]:reshape(K, 1, 1, pw, GW)
        local v = (rows:index_select(0, idx:reshape(-1)):reshape(K, ph, GH, pw, GW, C) * w:unsqueeze(-1)):sum({ 2, 4 })
        out = out and out + v or v
      end
    end
    return out:permute(0, 3, 1, 2) / count
  end
  for _, ry in ipairs({ { ylo, wyl }, { yhi, wyh } }) do
    for _, rx in ipairs({ { xlo, wxl }, { xhi, wxh } }) do
      local r = ry[1]:reshape(K, 1, ph, GH, 1, 1)
      local c = rx[1]:reshape(K, 1, 1, 1, pw, GW)
      local w = ry[2]:reshape(K, 1, ph, GH, 1, 1) * rx[2]:reshape(K, 1, 1, 1, pw, GW)
      local v = gather(input, flat_index(input, batch, cmap, r, c)) * w
      out = out and out + v or v
    end
  end
  return out:sum({ 3, 5 }) / count
end

-- roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=false)
function M.roi_align(...)
  local o, input, rois, ph, pw = roi_args("roi_align", { { "input", U.REQUIRED }, { "boxes", U.REQUIRED },
    { "output_size", U.REQUIRED }, { "spatial_scale", 1.0 }, { "sampling_ratio", -1 }, { "aligned", false } }, ...)
  return align("roi_align", input, rois, ph, pw, o.spatial_scale, o.sampling_ratio, o.aligned, false)
end

-- ps_roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1): always half-pixel aligned
function M.ps_roi_align(...)
  local o, input, rois, ph, pw = roi_args("ps_roi_align", { { "input", U.REQUIRED }, { "boxes", U.REQUIRED },
    { "output_size", U.REQUIRED }, { "spatial_scale", 1.0 }, { "sampling_ratio", -1 } }, ...)
  return align("ps_roi_align", input, rois, ph, pw, o.spatial_scale, o.sampling_ratio, true, true)
end

-- C's round: halves away from zero
local function round_away(t) return t:sign() * (t:abs() + 0.5):floor() end

-- roi_pool (max) / ps_roi_pool (average) over integer bins
local function pool(fname, input, rois, ph, pw, scale, ps)
  local cmap, C = channel_map(fname, input, ph, pw, ps)
  local K, H, W = rois:size(0), input:size(2), input:size(3)
  if K == 0 then return torch.zeros(0, C, ph, pw, { dtype = input.dtype, device = input.device }) end
  local r = round_away(rois:narrow(1, 1, 4) * scale)
  local extra = ps and 0 or 1
  local function bins(start, stop, size, n)
    local len = (stop - start + extra):clamp({ min = 1 })
    local bin = (len / n):reshape(-1, 1)
    local p = arange(n, input):reshape(1, n)
    local s = start:reshape(-1, 1)
    local lo = ((p * bin):floor() + s):clamp(0, size)
    local hi = (((p + 1) * bin):ceil() + s):clamp(0, size)
    return lo, hi
  end
  local hs, he = bins(r:select(1, 1), r:select(1, 3), H, ph)
  local ws, we = bins(r:select(1, 0), r:select(1, 2), W, pw)
  local BH = math.max(math.tointeger((he - hs):max():item()) or 1, 1)
  local BW = math.max(math.tointeger((we - ws):max():item()) or 1, 1)
  local function cells(lo, hi, size, n, B)
    local v = lo:reshape(-1, n, 1) + arange(B, input):reshape(1, 1, B)
    local valid = v:lt(hi:reshape(-1, n, 1))
    return v:clamp(0, size - 1):long(), valid
  end
  local hh, hvalid = cells(hs, he, H, ph, BH)
  local ww, wvalid = cells(ws, we, W, pw, BW)
  local valid = torch.logical_and(hvalid:reshape(K, 1, ph, BH, 1, 1), wvalid:reshape(K, 1, 1, 1, pw, BW))
  local idx = flat_index(input, rois:select(1, 0):long(), cmap, hh:reshape(K, 1, ph, BH, 1, 1), ww:reshape(K, 1, 1, 1, pw, BW))
  local v = gather(input, idx)
  local empty = torch.logical_or(he:le(hs):reshape(K, 1, ph, 1), we:le(ws):reshape(K, 1, 1, pw))
  local zero = torch.zeros({}, { dtype = input.dtype, device = input.device })
  if ps then
    local area = ((he - hs):reshape(K, 1, ph, 1) * (we - ws):reshape(K, 1, 1, pw)):clamp({ min = 1 })
    local s = torch.where(valid, v, zero):sum({ 3, 5 }) / area
    return torch.where(empty, zero, s)
  end
  v = torch.where(valid, v, torch.full({}, -math.huge, { dtype = input.dtype, device = input.device }))
  local m = v:permute(0, 1, 2, 4, 3, 5):reshape(K, C, ph, pw, BH * BW):max(4)
  return torch.where(empty, zero, m)
end

-- roi_pool(input, boxes, output_size, spatial_scale=1.0): max over each bin
function M.roi_pool(...)
  local o, input, rois, ph, pw = roi_args("roi_pool", { { "input", U.REQUIRED }, { "boxes", U.REQUIRED },
    { "output_size", U.REQUIRED }, { "spatial_scale", 1.0 } }, ...)
  return pool("roi_pool", input, rois, ph, pw, o.spatial_scale, false)
end

-- ps_roi_pool(input, boxes, output_size, spatial_scale=1.0): average over each bin
function M.ps_roi_pool(...)
  local o, input, rois, ph, pw = roi_args("ps_roi_pool", { { "input", U.REQUIRED }, { "boxes", U.REQUIRED },
    { "output_size", U.REQUIRED }, { "spatial_scale", 1.0 } }, ...)
  return pool("ps_roi_pool", input, rois, ph, pw, o.spatial_scale, true)
end

-- ---- the module classes ----

local function roi_class(name, fn, spec)
  local cls = nn.Module:extend(name)
  function cls:__init(...)
    local o = U.parse(name, spec, ...)
    for _, s in ipairs(spec) do self[s[1]] = o[s[1]] end
  end
  function cls:forward(input, rois)
    local args = {}
    for i, s in ipairs(spec) do args[i] = self[s[1]] end
    return fn(input, rois, table.unpack(args, 1, #spec))
  end
  function cls:__tostring()
    local parts = {}
    for i, s in ipairs(spec) do parts[i] = s[1] .. "=" .. U.pystr(self[s[1]]) end
    return name .. "(" .. table.concat(parts, ", ") .. ")"
  end
  return cls
end
local R = U.REQUIRED
M.RoIAlign = roi_class("RoIAlign", M.roi_align,
  { { "output_size", R }, { "spatial_scale", R }, { "sampling_ratio", R }, { "aligned", false } })
M.PSRoIAlign = roi_class("PSRoIAlign", M.ps_roi_align, { { "output_size", R }, { "spatial_scale", R }, { "sampling_ratio", R } })
M.RoIPool = roi_class("RoIPool", M.roi_pool, { { "output_size", R }, { "spatial_scale", R } })
M.PSRoIPool = roi_class("PSRoIPool", M.ps_roi_pool, { { "output_size", R }, { "spatial_scale", R } })

-- ---- MultiScaleRoIAlign ----

-- The FPN level of each box: floor(canonical_level + log2(sqrt(area) / canonical_scale + eps)),
-- clamped to [k_min, k_max], minus k_min (torchvision's LevelMapper).
local function map_levels(boxlists, k_min, k_max, canonical_scale, canonical_level, eps)
  local areas = {}
  for i, b in ipairs(boxlists) do areas[i] = boxes_ops.box_area(b) end
  local s = torch.cat(areas, 0):sqrt()
  local lvl = (torch.log2(s / canonical_scale + eps) + canonical_level):floor():clamp(k_min, k_max)
  return (lvl - k_min):long()
end
M._map_levels = map_levels

-- the power of two nearest feature size / image size (of the height)
local function infer_scale(feature, original)
  local approx = feature:size(-2) / original[1]
  local e = math.log(approx, 2)
  local r = e >= 0 and math.floor(e + 0.5) or -math.floor(-e + 0.5)
  if math.abs(e - math.floor(e)) == 0.5 then r = 2 * math.floor(e / 2 + 0.5) end -- round half to even
  return 2.0 ^ r
end

local MultiScaleRoIAlign = nn.Module:extend("MultiScaleRoIAlign")
M.MultiScaleRoIAlign = MultiScaleRoIAlign
-- (featmap_names, output_size, sampling_ratio, {canonical_scale=224, canonical_level=4})
function MultiScaleRoIAlign:__init(...)
  local o = U.parse("MultiScaleRoIAlign", { { "featmap_names", R }, { "output_size", R }, { "sampling_ratio", R },
    { "canonical_scale", 224 }, { "canonical_level", 4 } }, ...)
  self.featmap_names, self.sampling_ratio = o.featmap_names, o.sampling_ratio
  self.output_size = U.ntuple("MultiScaleRoIAlign", "output_size", o.output_size, 2)
  self.canonical_scale, self.canonical_level = o.canonical_scale, o.canonical_level
end

-- forward(x, boxes, image_shapes): x maps names to feature maps [N, C, H, W] (an OrderedDict keeps
-- its order; a plain table is read in featmap_names order), boxes a list of [L, 4] per image,
-- image_shapes a list of {H, W}.
function MultiScaleRoIAlign:forward(x, boxes, image_shapes)
  local names = {}
  local mt = getmetatable(x)
  if mt and mt._order then names = x:keys() else names = self.featmap_names end
  local wanted = {}
  for _, n in ipairs(self.featmap_names) do wanted[n] = true end
  local feats = {}
  for _, n in ipairs(names) do
    if wanted[n] then
      if x[n] == nil then U.errorf("MultiScaleRoIAlign: no feature map named '%s'", tostring(n)) end
      feats[#feats + 1] = x[n]
    end
  end
  if #feats == 0 then U.error("MultiScaleRoIAlign: none of featmap_names is in x") end
  local max_h, max_w = 0, 0
  for _, s in ipairs(image_shapes) do
    if s.totable then s = s:totable() end
    max_h, max_w = math.max(max_h, s[1]), math.max(max_w, s[2])
  end
  local scales = {}
  for i, f in ipairs(feats) do scales[i] = infer_scale(f, { max_h, max_w }) end
  local rois = roi_format("MultiScaleRoIAlign", boxes)
  if #feats == 1 then
    return M.roi_align(feats[1], rois, self.output_size, scales[1], self.sampling_ratio)
  end
  local k_min, k_max = -math.log(scales[1], 2), -math.log(scales[#scales], 2)
  local levels = map_levels(boxes, k_min, k_max, self.canonical_scale, self.canonical_level, 1e-6)
  local outs, order = {}, {}
  for lvl, f in ipairs(feats) do
    local idx = torch.nonzero(levels:eq(lvl - 1)):reshape(-1)
    outs[#outs + 1] = M.roi_align(f, rois:index_select(0, idx), self.output_size, scales[lvl], self.sampling_ratio)
    order[#order + 1] = idx
  end
  local perm = torch.cat(order, 0)
  local inverse = torch.empty_like(perm):scatter_(0, perm, arange(perm:numel(), perm))
  return torch.cat(outs, 0):index_select(0, inverse)
end
function MultiScaleRoIAlign:__tostring()
  local names = {}
  for i, n in ipairs(self.featmap_names) do names[i] = U.pyrepr(n) end
  return string.format("MultiScaleRoIAlign(featmap_names=[%s], output_size=%s, sampling_ratio=%s)",
    table.concat(names, ", "), U.pystr(self.output_size), U.pystr(self.sampling_ratio))
end

return M
