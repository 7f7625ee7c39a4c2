-- transforms.v2 on box and keypoint metadata: the functionals convert_bounding_box_format,
-- clamp_bounding_boxes, clamp_keypoints, sanitize_bounding_boxes and sanitize_keypoints (each takes
-- a BoundingBoxes / KeyPoints with its metadata, or a pure tensor with the metadata given), and the
-- transforms ConvertBoundingBoxFormat, ClampBoundingBoxes, ClampKeyPoints, SetClampingMode,
-- SanitizeBoundingBoxes and SanitizeKeyPoints. Python's None is false here.
local torch = require "torch"
local U = require "nn_util"
local core = require "tv_v2_core"
local tv_tensors = require "tv_tensors"
local G = require "tv_v2_kernels_geometry"

local BoundingBoxes, KeyPoints, Mask = tv_tensors.BoundingBoxes, tv_tensors.KeyPoints, tv_tensors.Mask

local function is_boxes(x) return tv_tensors.isinstance(x, BoundingBoxes) end
local function is_keypoints(x) return tv_tensors.isinstance(x, KeyPoints) end
local function pure(x) return x:view(x.shape) end

-- a box tv_tensor's clamping_mode (nil: None, as a wrap loses a false mode)
local function mode_of(boxes) return boxes.clamping_mode or false end

return function(v2, shared)
  local F = v2.functional

  ---------------------------------------------------------------------------
  -- functionals
  ---------------------------------------------------------------------------

  -- convert_bounding_box_format(inpt, old_format=None, new_format, inplace=False)
  function F.convert_bounding_box_format(...)
    local fn = "convert_bounding_box_format"
    local a = U.parse(fn, {{"inpt", U.REQUIRED}, {"old_format", nil}, {"new_format", nil}, {"inplace", false}}, ...)
    if a.new_format == nil then U.error("convert_bounding_box_format() missing 1 required argument: 'new_format'") end
    local new = tv_tensors.check_format(a.new_format)
    local inpt = a.inpt
    if core.is_pure_tensor(inpt) then
      if a.old_format == nil then U.error("For pure tensor inputs, `old_format` has to be passed.") end
      return G.convert_bounding_box_format(inpt, a.old_format, new, a.inplace)
    elseif is_boxes(inpt) then
      if a.old_format ~= nil then U.error("For bounding box tv_tensor inputs, `old_format` must not be passed.") end
      local out = G.convert_bounding_box_format(pure(inpt), inpt.format, new, a.inplace)
      return tv_tensors.wrap(out, {like = inpt, format = new})
    end
    U.errorf("Input can either be a plain tensor or a bounding box tv_tensor, but got %s instead.", U.typename(inpt))
  end

  -- clamp_bounding_boxes(inpt, format=None, canvas_size=None, clamping_mode="auto")
  function F.clamp_bounding_boxes(...)
    local fn = "clamp_bounding_boxes"
    local a = U.parse(fn, {{"inpt", U.REQUIRED}, {"format", nil}, {"canvas_size", nil}, {"clamping_mode", "auto"}}, ...)
    local mode, inpt = a.clamping_mode, a.inpt
    if mode ~= false and mode ~= "soft" and mode ~= "hard" and mode ~= "auto" then
      U.errorf("clamping_mode must be soft, hard, auto or None, got %s", U.pystr(mode))
    end
    if core.is_pure_tensor(inpt) then
      if a.format == nil or a.canvas_size == nil or mode == "auto" then
        U.error("For pure tensor inputs, `format`, `canvas_size` and `clamping_mode` have to be passed.")
      end
      return G.clamp_bounding_boxes(inpt, a.format, a.canvas_size, mode)
    elseif is_boxes(inpt) then
      if a.format ~= nil or a.canvas_size ~= nil then
        U.error("For bounding box tv_tensor inputs, `format` and `canvas_size` must not be passed.")
      end
      if mode == "auto" then mode = mode_of(inpt) end
      return tv_tensors.wrap(G.clamp_bounding_boxes(pure(inpt), inpt.format, inpt.canvas_size, mode), {like = inpt})
    end
    U.errorf("Input can either be a plain tensor or a bounding box tv_tensor, but got %s instead.", U.typename(inpt))
  end

  -- clamp_keypoints(inpt, canvas_size=None)
  function F.clamp_keypoints(...)
    local a = U.parse("clamp_keypoints", {{"inpt", U.REQUIRED}, {"canvas_size", nil}}, ...)
    local inpt = a.inpt
    if core.is_pure_tensor(inpt) then
      if a.canvas_size == nil then U.error("For pure tensor inputs, `canvas_size` has to be passed.") end
      return G.clamp_keypoints(inpt, a.canvas_size)
    elseif is_keypoints(inpt) then
      if a.canvas_size ~= nil then U.error("For keypoints tv_tensor inputs, `canvas_size` must not be passed.") end
      return tv_tensors.wrap(G.clamp_keypoints(pure(inpt), inpt.canvas_size), {like = inpt})
    end
    U.errorf("Input can either be a plain tensor or a keypoints tv_tensor, but got %s instead.", U.typename(inpt))
  end

  -- the boxes to keep: at least min_size wide and high, of area at least min_area, inside the canvas
  local function boxes_mask(boxes, format, canvas_size, min_size, min_area)
    format = tv_tensors.check_format(format)
    if tv_tensors.is_rotated_bounding_format(format) then
      U.errorf("sanitize_bounding_boxes: rotated boxes (format %s) are not supported here; convert them to an " ..
        "axis-aligned format first or filter them yourself", format)
    end
    if boxes:dim() ~= 2 then U.errorf("sanitize_bounding_boxes: expected boxes of shape [N, 4], got %s", U.shape_str(boxes)) end
    local b = G.convert_bounding_box_format(boxes, format, "XYXY")
    local x1, y1, x2, y2 = table.unpack(b:unbind(-1))
    local ws, hs = x2 - x1, y2 - y1
    local h, w = canvas_size[1], canvas_size[2]
    return ws:ge(min_size):logical_and(hs:ge(min_size)):logical_and(b:ge(0):all(-1))
      :logical_and((ws * hs):ge(min_area))
      :logical_and(x1:le(w)):logical_and(x2:le(w)):logical_and(y1:le(h)):logical_and(y2:le(h))
  end

  -- sanitize_bounding_boxes(bounding_boxes, format=None, canvas_size=None, min_size=1, min_area=1) -> boxes, valid
  function F.sanitize_bounding_boxes(...)
    local a = U.parse("sanitize_bounding_boxes", {{"bounding_boxes", U.REQUIRED}, {"format", nil}, {"canvas_size", nil},
      {"min_size", 1.0}, {"min_area", 1.0}}, ...)
    local boxes = a.bounding_boxes
    if core.is_pure_tensor(boxes) then
      if a.format == nil or a.canvas_size == nil then
        U.errorf("format and canvas_size cannot be None if bounding_boxes is a pure tensor. Got format=%s and " ..
          "canvas_size=%s.Set those to appropriate values or pass bounding_boxes as a tv_tensors.BoundingBoxes object.",
          U.pystr(a.format), U.pystr(a.canvas_size))
      end
      local valid = boxes_mask(boxes, a.format, a.canvas_size, a.min_size, a.min_area)
      return boxes[valid], valid
    end
    if not is_boxes(boxes) then U.error("bounding_boxes must be a tv_tensors.BoundingBoxes instance or a pure tensor.") end
    if a.format ~= nil or a.canvas_size ~= nil then
      U.errorf("format and canvas_size must be None when bounding_boxes is a tv_tensors.BoundingBoxes instance. Got " ..
        "format=%s and canvas_size=%s. Leave those to None or pass bounding_boxes as a pure tensor.",
        U.pystr(a.format), U.pystr(a.canvas_size))
    end
    local valid = boxes_mask(pure(boxes), boxes.format, boxes.canvas_size, a.min_size, a.min_area)
    return tv_tensors.wrap(pure(boxes)[valid], {like = boxes}), valid
  end

  -- the points (or groups of points: the first dim) to keep: every point with 0 <= x < W, 0 <= y < H
  local function keypoints_mask(kp, canvas_size)
    if kp:dim() < 2 or kp:size(-1) ~= 2 then
      U.errorf("sanitize_keypoints: expected keypoints of shape [N, ..., 2], got %s", U.shape_str(kp))
    end
    local h, w = canvas_size[1], canvas_size[2]
    local x, y = kp:select(-1, 0), kp:select(-1, 1)
    local inside = x:ge(0):logical_and(x:lt(w)):logical_and(y:ge(0)):logical_and(y:lt(h))
    if inside:dim() == 1 then return inside end
    return inside:reshape(kp:size(0), -1):all(1)
  end

  -- sanitize_keypoints(key_points, canvas_size=None) -> keypoints, valid
  function F.sanitize_keypoints(...)
    local a = U.parse("sanitize_keypoints", {{"key_points", U.REQUIRED}, {"canvas_size", nil}}, ...)
    local kp = a.key_points
    if core.is_pure_tensor(kp) then
      if a.canvas_size == nil then
        U.error("canvas_size cannot be None if key_points is a pure tensor. Set it to an appropriate value or pass " ..
          "key_points as a tv_tensors.KeyPoints object.")
      end
      local valid = keypoints_mask(kp, a.canvas_size)
      return kp[valid], valid
    end
    if not is_keypoints(kp) then U.error("key_points must be a tv_tensors.KeyPoints instance or a pure tensor.") end
    if a.canvas_size ~= nil then
      U.error("canvas_size must be None when key_points is a tv_tensors.KeyPoints instance. Leave it to None or pass " ..
        "key_points as a pure tensor.")
    end
    local valid = keypoints_mask(pure(kp), kp.canvas_size)
    return tv_tensors.wrap(pure(kp)[valid], {like = kp}), valid
  end

  ---------------------------------------------------------------------------
  -- transforms
  ---------------------------------------------------------------------------

  local class = core.class

  local ConvertBoundingBoxFormat = class("ConvertBoundingBoxFormat", {{"format", U.REQUIRED}}, function(self, a)
    self.format = tv_tensors.check_format(a.format)
  end)
  ConvertBoundingBoxFormat._transformed_types = {BoundingBoxes}
  function ConvertBoundingBoxFormat:transform(inpt) return F.convert_bounding_box_format(inpt, {new_format = self.format}) end
  v2.ConvertBoundingBoxFormat = ConvertBoundingBoxFormat

  local ClampBoundingBoxes = class("ClampBoundingBoxes", {{"clamping_mode", "auto"}})
  ClampBoundingBoxes._transformed_types = {BoundingBoxes}
  function ClampBoundingBoxes:transform(inpt) return F.clamp_bounding_boxes(inpt, {clamping_mode = self.clamping_mode}) end
  v2.ClampBoundingBoxes = ClampBoundingBoxes

  local ClampKeyPoints = class("ClampKeyPoints", {})
  ClampKeyPoints._transformed_types = {KeyPoints}
  function ClampKeyPoints:transform(inpt) return F.clamp_keypoints(inpt) end
  v2.ClampKeyPoints = ClampKeyPoints

  -- SetClampingMode(clamping_mode): "soft", "hard" or false (None)
  local SetClampingMode = class("SetClampingMode", {{"clamping_mode", U.REQUIRED}}, function(self, a)
    if a.clamping_mode ~= false and a.clamping_mode ~= "soft" and a.clamping_mode ~= "hard" then
      U.errorf("clamping_mode must be soft, hard or None, got %s", U.pystr(a.clamping_mode))
    end
    self.clamping_mode = a.clamping_mode
  end)
  SetClampingMode._transformed_types = {BoundingBoxes}
  function SetClampingMode:transform(inpt)
    local out = inpt:clone()
    out.clamping_mode = self.clamping_mode
    return out
  end
  v2.SetClampingMode = SetClampingMode

  -- the labels a getter found: nil, a tensor, or a list of tensors (each sanitized alike)
  local function labels_list(labels)
    if labels == nil then return {} end
    if torch.is_tensor(labels) then return {labels} end
    if type(labels) == "table" and getmetatable(labels) == nil then
      for _, l in ipairs(labels) do
        if not torch.is_tensor(l) then
          U.errorf("The labels in the input to forward() must be a tensor or None, got %s instead.", U.typename(l))
        end
      end
      return labels
    end
    U.errorf("The labels in the input to forward() must be a tensor or None, got %s instead.", U.typename(labels))
  end

  -- A transform that keeps the rows `valid` of the sample's boxes or keypoints, of the labels and
  -- of the other inputs of the kinds in `also`.
  local function sanitizer(name, spec, init, find, what, mask_of, also)
    local cls = class(name, spec, function(self, a)
      if init then init(self, a) end
      self.labels_getter = a.labels_getter
      self._labels_getter = shared.parse_labels_getter(a.labels_getter)
    end)
    function cls:forward(...)
      return shared.over_sample(function(flat, inputs)
        local labels = labels_list(self._labels_getter(inputs))
        local target = find(flat)
        for _, l in ipairs(labels) do
          if l:dim() == 0 or l:size(0) ~= target:size(0) then
            U.errorf("Number of %s (shape=%s) and number of labels (shape=%s) do not match.", what,
              U.shape_str(target), U.shape_str(l))
          end
        end
        local valid = mask_of(self, target)
        local out = {}
        for i, inpt in ipairs(flat) do
          local is_label = false
          for _, l in ipairs(labels) do if rawequal(l, inpt) then is_label = true end end
          if is_label then
            out[i] = inpt[valid]
          elseif core.check_type(inpt, also) then
            out[i] = tv_tensors.wrap(pure(inpt)[valid], {like = inpt})
          else
            out[i] = inpt
          end
        end
        return out
      end, ...)
    end
    v2[name] = cls
    return cls
  end

  sanitizer("SanitizeBoundingBoxes", {{"min_size", 1.0}, {"min_area", 1.0}, {"labels_getter", "default"}},
    function(self, a)
      if a.min_size < 1 then U.errorf("min_size must be >= 1, got %s.", U.pystr(a.min_size)) end
      if a.min_area < 1 then U.errorf("min_area must be >= 1, got %s.", U.pystr(a.min_area)) end
      self.min_size, self.min_area = a.min_size, a.min_area
    end,
    core.get_bounding_boxes, "boxes",
    function(self, boxes) return boxes_mask(pure(boxes), boxes.format, boxes.canvas_size, self.min_size, self.min_area) end,
    {BoundingBoxes, Mask})

  sanitizer("SanitizeKeyPoints", {{"labels_getter", false}}, nil, core.get_keypoints, "keypoints",
    function(_, kp) return keypoints_mask(pure(kp), kp.canvas_size) end, {KeyPoints})
end
