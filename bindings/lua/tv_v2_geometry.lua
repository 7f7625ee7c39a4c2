-- the geometric transforms.v2 classes and functionals (flips, resize, crops, pad, affine,
-- rotate, perspective, elastic, zoom-out, IoU crop, scale jitter) on images, videos, masks, boxes and keypoints.
-- Images, videos, PIL-like images and pure tensors go through v1's functional kernels; masks,
-- boxes and keypoints through tv_v2_kernels_geometry, boxes and keypoints rewrapped with their new canvas.
local torch = require "torch"
local U = require "nn_util"
local core = require "tv_v2_core"
local tv_tensors = require "tv_tensors"
local K = require "tv_v2_kernels_geometry"

return function(v2, T, H)
  local F, F1 = v2.functional, T.functional
  local Image, Video, Mask, BoundingBoxes, KeyPoints = tv_tensors.Image, tv_tensors.Video, tv_tensors.Mask,
    tv_tensors.BoundingBoxes, tv_tensors.KeyPoints
  local R = U.REQUIRED

  local function pure(x) return x:view(x.shape) end
  local function rewrap(inpt, out, canvas) return tv_tensors.wrap(out, {like = inpt, canvas_size = canvas or inpt.canvas_size}) end

  -- an image kernel's fill: tensors take one float per channel, PIL-like images the value itself
  local function image_fill(fill, img)
    if fill == nil then return nil end
    return H.fill_for(fill, img)
  end

  ---------------------------------------------------------------------------
  -- dispatching functionals: def(name, spec after inpt, {image =, mask =, boxes =, keypoints =}),
  -- each kernel called as kernel(inpt, args in spec order)
  ---------------------------------------------------------------------------

  local function def(name, spec, k)
    local f = core.functional(name)
    local full = {{"inpt", R}}
    for i, s in ipairs(spec) do full[i + 1] = s end
    local function parsed(kernel)
      return function(...)
        local a = U.parse(name, full, ...)
        local args = {}
        for i, s in ipairs(full) do args[i] = a[s[1]] end
        return kernel(table.unpack(args, 1, #full))
      end
    end
    if k.image then core.register_image_kernel(f, parsed(k.image)) end
    if k.mask then core.register(f, Mask, parsed(function(m, ...) return rewrap(m, k.mask(pure(m), ...)) end)) end
    if k.boxes then
      core.register(f, BoundingBoxes, parsed(function(b, ...)
        local out, canvas = k.boxes(pure(b), b.format, b.canvas_size, b.clamping_mode, ...)
        return rewrap(b, out, canvas)
      end))
    end
    if k.keypoints then
      core.register(f, KeyPoints, parsed(function(kp, ...)
        local out, canvas = k.keypoints(pure(kp), kp.canvas_size, ...)
        return rewrap(kp, out, canvas)
      end))
    end
    F[name] = f
    return f
  end

  def("horizontal_flip", {}, {
    image = F1.hflip, mask = K.horizontal_flip_mask,
    boxes = function(b, format, canvas) return K.horizontal_flip_bounding_boxes(b, format, canvas) end,
    keypoints = K.horizontal_flip_keypoints})
  def("vertical_flip", {}, {
    image = F1.vflip, mask = K.vertical_flip_mask,
    boxes = function(b, format, canvas) return K.vertical_flip_bounding_boxes(b, format, canvas) end,
    keypoints = K.vertical_flip_keypoints})
  F.hflip, F.vflip = F.horizontal_flip, F.vertical_flip

  -- v2's resize takes size=None with max_size: the longer edge becomes max_size
  local function image_resize(img, size, interpolation, max_size, antialias)
    if size == nil then
      if math.type(max_size) ~= "integer" then
        U.errorf("resize: max_size must be an integer when size is None, but got %s instead.", U.pystr(max_size))
      end
      local h, w = H.hw(img)
      local short = math.floor(max_size * math.min(h, w) / math.max(h, w))
      size = w <= h and {max_size, short} or {short, max_size}
      max_size = nil
    end
    return F1.resize(img, size, interpolation, max_size, antialias)
  end
  def("resize", {{"size"}, {"interpolation", "bilinear"}, {"max_size"}, {"antialias", true}}, {
    image = image_resize,
    mask = function(m, size, _, max_size) return K.resize_mask(m, size, max_size) end,
    boxes = function(b, format, canvas, mode, size, _, max_size) return K.resize_bounding_boxes(b, canvas, size, max_size, format, mode) end,
    keypoints = function(kp, canvas, size, _, max_size) return K.resize_keypoints(kp, size, canvas, max_size) end})

  def("crop", {{"top", R}, {"left", R}, {"height", R}, {"width", R}}, {
    image = F1.crop, mask = K.crop_mask,
    boxes = function(b, format, _, mode, t, l, h, w) return K.crop_bounding_boxes(b, format, t, l, h, w, mode) end,
    keypoints = function(kp, _, ...) return K.crop_keypoints(kp, ...) end})

  def("center_crop", {{"output_size", R}}, {
    image = F1.center_crop, mask = K.center_crop_mask,
    boxes = function(b, format, canvas, mode, size) return K.center_crop_bounding_boxes(b, format, canvas, size, mode) end,
    keypoints = K.center_crop_keypoints})

  def("resized_crop", {{"top", R}, {"left", R}, {"height", R}, {"width", R}, {"size", R}, {"interpolation", "bilinear"},
    {"antialias", true}}, {
    image = F1.resized_crop,
    mask = function(m, t, l, h, w, size) return K.resized_crop_mask(m, t, l, h, w, size) end,
    boxes = function(b, format, _, mode, t, l, h, w, size) return K.resized_crop_bounding_boxes(b, format, t, l, h, w, size, mode) end,
    keypoints = function(kp, _, t, l, h, w, size) return K.resized_crop_keypoints(kp, t, l, h, w, size) end})

  def("pad", {{"padding", R}, {"fill"}, {"padding_mode", "constant"}}, {
    image = function(img, padding, fill, mode) return F1.pad(img, padding, fill == nil and 0 or fill, mode) end,
    mask = K.pad_mask,
    boxes = function(b, format, canvas, mode, padding, _, pmode) return K.pad_bounding_boxes(b, format, canvas, padding, pmode, mode) end,
    keypoints = function(kp, canvas, padding, _, pmode) return K.pad_keypoints(kp, canvas, padding, pmode) end})

  def("affine", {{"angle", R}, {"translate", R}, {"scale", R}, {"shear", R}, {"interpolation", "nearest"}, {"fill"}, {"center"}}, {
    image = function(img, angle, translate, scale, shear, interp, fill, center)
      return F1.affine(img, angle, translate, scale, shear, interp, image_fill(fill, img), center)
    end,
    mask = function(m, angle, translate, scale, shear, _, fill, center) return K.affine_mask(m, angle, translate, scale, shear, fill, center) end,
    boxes = function(b, format, canvas, mode, angle, translate, scale, shear, _, _, center)
      return K.affine_bounding_boxes(b, format, canvas, angle, translate, scale, shear, center, mode)
    end,
    keypoints = function(kp, canvas, angle, translate, scale, shear, _, _, center)
      return K.affine_keypoints(kp, canvas, angle, translate, scale, shear, center)
    end})

  def("rotate", {{"angle", R}, {"interpolation", "nearest"}, {"expand", false}, {"center"}, {"fill"}}, {
    image = function(img, angle, interp, expand, center, fill)
      return F1.rotate(img, angle, interp, expand, center, image_fill(fill, img))
    end,
    mask = function(m, angle, _, expand, center, fill) return K.rotate_mask(m, angle, expand, center, fill) end,
    boxes = function(b, format, canvas, mode, angle, _, expand, center)
      return K.rotate_bounding_boxes(b, format, canvas, angle, expand, center, mode)
    end,
    keypoints = function(kp, canvas, angle, _, expand, center) return K.rotate_keypoints(kp, canvas, angle, expand, center) end})

  def("perspective", {{"startpoints"}, {"endpoints"}, {"interpolation", "bilinear"}, {"fill"}, {"coefficients"}}, {
    image = function(img, s, e, interp, fill, coefficients)
      if coefficients ~= nil then
        U.error("perspective: coefficients are not supported for images here; pass startpoints and endpoints instead")
      end
      return F1.perspective(img, s, e, interp, image_fill(fill, img))
    end,
    mask = function(m, s, e, _, fill, c) return K.perspective_mask(m, s, e, fill, c) end,
    boxes = function(b, format, canvas, mode, s, e, _, _, c) return K.perspective_bounding_boxes(b, format, canvas, s, e, c, mode) end,
    keypoints = function(kp, canvas, s, e, _, _, c) return K.perspective_keypoints(kp, canvas, s, e, c) end})

  def("elastic", {{"displacement", R}, {"interpolation", "bilinear"}, {"fill"}}, {
    image = function(img, d, interp, fill) return F1.elastic_transform(img, d, interp, fill) end,
    mask = function(m, d, _, fill) return K.elastic_mask(m, d, fill) end,
    boxes = function(b, format, canvas, mode, d) return K.elastic_bounding_boxes(b, format, canvas, d, mode) end,
    keypoints = function(kp, canvas, d) return K.elastic_keypoints(kp, canvas, d) end})
  F.elastic_transform = F.elastic

  -- five_crop / ten_crop: images and videos only, a list of crops each wrapped like the input
  for _, name in ipairs({"five_crop", "ten_crop"}) do
    local f = core.functional(name)
    local v1 = F1[name]
    core.register(f, torch.Tensor, v1)
    core.register(f, core.PIL, v1)
    for _, cls in ipairs({Image, Video}) do
      core.register(f, cls, function(inpt, ...)
        local out = v1(pure(inpt), ...)
        for i, c in ipairs(out) do out[i] = tv_tensors.wrap(c, {like = inpt}) end
        return out
      end)
    end
    F[name] = f
  end

  ---------------------------------------------------------------------------
  -- fill per input type: a number or list for every type, or a table {[cls] = fill, others = fill}
  ---------------------------------------------------------------------------

  local function is_fill_dict(fill)
    return type(fill) == "table" and getmetatable(fill) == nil and rawget(fill, 1) == nil and next(fill) ~= nil
  end

  local function check_fill_value(fill)
    if fill ~= nil and type(fill) ~= "number" and type(fill) ~= "table" then
      U.error("Got inappropriate fill arg, only Numbers, tuples, lists and dicts are allowed.")
    end
    if type(fill) == "table" then
      for _, v in ipairs(fill) do if type(v) ~= "number" then U.error("Got inappropriate fill arg, only Numbers, tuples, lists and dicts are allowed.") end end
    end
  end

  local function setup_fill(fill)
    if is_fill_dict(fill) then
      for _, v in pairs(fill) do check_fill_value(v) end
      return fill
    end
    check_fill_value(fill)
    return {others = fill}
  end
  local function get_fill(fills, inpt)
    local v = fills[core.type_of(inpt)]
    if v == nil then v = fills.others end
    return v
  end

  ---------------------------------------------------------------------------
  -- classes
  ---------------------------------------------------------------------------

  local RandomApply = core.RandomApplyTransform

  -- extra_repr listing the given fields as name=value
  local function fields_repr(names)
    return function(self)
      local parts = {}
      for i, k in ipairs(names) do parts[i] = k .. "=" .. U.pystr(self[k]) end
      return table.concat(parts, ", ")
    end
  end
  local function rand() return torch.rand(1):item() end
  local function uniform(a, b) return torch.empty(1):uniform_(a, b):item() end
  local function randint(lo, hi) return torch.randint(lo, hi, {1}):item() end

  -- a v2 class that checks its arguments with the v1 class of that name (a v1 object built from
  -- the same arguments, its public fields copied), with v1's get_params
  local function from_v1(name, parent, fill_key)
    local V1 = T[name]
    local cls = (parent or core.Transform):extend(name)
    function cls:__init(...)
      core.Transform.__init(self)
      local n = select("#", ...)
      local args = table.pack(...)
      -- a per-type fill table goes to v1 as its "others" value
      local opts = n > 0 and U.is_opts(args[n]) and args[n] or nil
      local fill = opts and opts.fill
      if fill_key and is_fill_dict(fill) then
        local o = {}
        for k, v in pairs(opts) do o[k] = v end
        o.fill = fill.others or 0
        args[n] = o
      end
      local v1 = V1(table.unpack(args, 1, n))
      for k, v in pairs(v1) do if type(k) == "string" and not k:find("^_") and k ~= "training" then self[k] = v end end
      if fill_key then
        if is_fill_dict(fill) then self.fill = fill end
        self._fill = setup_fill(self.fill)
      end
      rawset(self, "_v1", v1)
    end
    cls.__tostring = function(self) return tostring(self._v1) end
    cls.get_params = V1.get_params
    v2[name] = cls
    return cls
  end

  -- flips
  for name, f in pairs({RandomHorizontalFlip = "horizontal_flip", RandomVerticalFlip = "vertical_flip"}) do
    local cls = RandomApply:extend(name)
    function cls:__init(...)
      local a = U.parse(name, {{"p", 0.5}}, ...)
      RandomApply.__init(self, a.p)
    end
    function cls:transform(inpt) return self:_call_kernel(F[f], inpt) end
    function cls:extra_repr() return "p=" .. U.pystr(self.p) end
    v2[name] = cls
  end

  -- Resize(size, interpolation=bilinear, max_size=None, antialias=True): size may be None with max_size
  local Resize = core.class("Resize", {{"size"}, {"interpolation", "bilinear"}, {"max_size"}, {"antialias", true}}, function(self, a)
    local s = a.size
    if math.type(s) == "integer" then s = {s}
    elseif s == nil then
      if math.type(a.max_size) ~= "integer" then
        U.errorf("Resize: max_size must be an integer when size is None, but got %s instead.", U.pystr(a.max_size))
      end
    elseif not (type(s) == "table" and (#s == 1 or #s == 2)) then
      U.errorf("Resize: size can be an integer, a sequence of one or two integers, or None, but got %s instead.", U.pystr(s))
    end
    if a.max_size ~= nil and s and #s == 2 then
      U.error("Resize: max_size should only be passed if size is None or specifies the length of the smaller edge")
    end
    self.size, self.interpolation, self.max_size, self.antialias = s, a.interpolation, a.max_size, a.antialias
  end)
  function Resize:transform(inpt)
    return self:_call_kernel(F.resize, inpt, self.size, self.interpolation, self.max_size, self.antialias)
  end
  function Resize:extra_repr()
    return string.format("size=%s, interpolation=%s, max_size=%s, antialias=%s", U.pystr(self.size), self.interpolation,
      U.pystr(self.max_size), U.pystr(self.antialias))
  end
  v2.Resize = Resize

  local CenterCrop = from_v1("CenterCrop")
  function CenterCrop:transform(inpt) return self:_call_kernel(F.center_crop, inpt, self.size) end

  local Pad = from_v1("Pad", nil, true)
  function Pad:transform(inpt)
    return self:_call_kernel(F.pad, inpt, self.padding, get_fill(self._fill, inpt), self.padding_mode)
  end

  -- torchvision's _parse_pad_padding: left, right, top, bottom
  local function pad_lrtb(p)
    if type(p) == "number" then return p, p, p, p end
    if #p == 1 then return p[1], p[1], p[1], p[1] end
    if #p == 2 then return p[1], p[1], p[2], p[2] end
    return p[1], p[3], p[2], p[4]
  end

  local RandomCrop = from_v1("RandomCrop", nil, true)
  function RandomCrop:make_params(flat)
    local ph, pw = core.query_size(flat)
    local l, r, t, b = 0, 0, 0, 0
    if self.padding ~= nil then
      l, r, t, b = pad_lrtb(self.padding)
      ph, pw = ph + t + b, pw + l + r
    end
    local ch, cw = self.size[1], self.size[2]
    if self.pad_if_needed then
      if ph < ch then local d = ch - ph; t, b, ph = t + d, b + d, ph + 2 * d end
      if pw < cw then local d = cw - pw; l, r, pw = l + d, r + d, pw + 2 * d end
    end
    if ph < ch or pw < cw then
      U.errorf("Required crop size (%d, %d) is larger than %sinput image size (%d, %d).", ch, cw,
        self.padding ~= nil and "padded " or "", ph, pw)
    end
    local top, left = 0, 0
    if ph > ch then top = randint(0, ph - ch + 1) end
    if pw > cw then left = randint(0, pw - cw + 1) end
    return {needs_crop = ph > ch or pw > cw, top = top, left = left, height = ch, width = cw,
      needs_pad = l ~= 0 or t ~= 0 or r ~= 0 or b ~= 0, padding = {l, t, r, b}}
  end
  function RandomCrop:transform(inpt, p)
    if p.needs_pad then inpt = self:_call_kernel(F.pad, inpt, p.padding, get_fill(self._fill, inpt), self.padding_mode) end
    if p.needs_crop then inpt = self:_call_kernel(F.crop, inpt, p.top, p.left, p.height, p.width) end
    return inpt
  end

  local RandomResizedCrop = from_v1("RandomResizedCrop")
  function RandomResizedCrop:make_params(flat)
    local h, w = core.query_size(flat)
    local i, j, ch, cw = T.RandomResizedCrop.get_params(torch.empty(1, h, w), self.scale, self.ratio)
    return {top = i, left = j, height = ch, width = cw}
  end
  function RandomResizedCrop:transform(inpt, p)
    return self:_call_kernel(F.resized_crop, inpt, p.top, p.left, p.height, p.width, self.size, self.interpolation, self.antialias)
  end

  local RandomRotation = from_v1("RandomRotation", nil, true)
  function RandomRotation:make_params() return {angle = uniform(self.degrees[1], self.degrees[2])} end
  function RandomRotation:transform(inpt, p)
    return self:_call_kernel(F.rotate, inpt, p.angle, self.interpolation, self.expand, self.center, get_fill(self._fill, inpt))
  end

  local RandomAffine = from_v1("RandomAffine", nil, true)
  function RandomAffine:make_params(flat)
    local h, w = core.query_size(flat)
    local angle, translate, scale, shear = T.RandomAffine.get_params(self.degrees, self.translate, self.scale, self.shear, {w, h})
    return {angle = angle, translate = translate, scale = scale, shear = shear}
  end
  function RandomAffine:transform(inpt, p)
    return self:_call_kernel(F.affine, inpt, p.angle, p.translate, p.scale, p.shear, self.interpolation,
      get_fill(self._fill, inpt), self.center)
  end

  local RandomPerspective = from_v1("RandomPerspective", RandomApply, true)
  function RandomPerspective:make_params(flat)
    local h, w = core.query_size(flat)
    local s, e = T.RandomPerspective.get_params(w, h, self.distortion_scale)
    return {startpoints = s, endpoints = e}
  end
  function RandomPerspective:transform(inpt, p)
    return self:_call_kernel(F.perspective, inpt, p.startpoints, p.endpoints, self.interpolation, get_fill(self._fill, inpt))
  end

  local ElasticTransform = from_v1("ElasticTransform", nil, true)
  function ElasticTransform:make_params(flat)
    local h, w = core.query_size(flat)
    return {displacement = T.ElasticTransform.get_params(self.alpha, self.sigma, {h, w})}
  end
  function ElasticTransform:transform(inpt, p)
    local fill = get_fill(self._fill, inpt)
    if torch.is_tensor(p.displacement) and torch.is_tensor(inpt) then p.displacement = p.displacement:to(inpt.device) end
    return self:_call_kernel(F.elastic, inpt, p.displacement, self.interpolation, fill)
  end

  -- RandomZoomOut(fill=0, side_range=(1.0, 4.0), p=0.5): the input placed at random on a canvas r times larger
  local RandomZoomOut = RandomApply:extend("RandomZoomOut")
  function RandomZoomOut:__init(...)
    local a = U.parse("RandomZoomOut", {{"fill", 0}, {"side_range", {1.0, 4.0}}, {"p", 0.5}}, ...)
    RandomApply.__init(self, a.p)
    local sr = a.side_range
    if type(sr) ~= "table" or #sr ~= 2 or sr[1] < 1.0 or sr[1] > sr[2] then
      U.errorf("RandomZoomOut: Invalid side range provided %s.", U.pystr(sr))
    end
    self.fill, self._fill, self.side_range = a.fill, setup_fill(a.fill), sr
  end
  function RandomZoomOut:make_params(flat)
    local oh, ow = core.query_size(flat)
    local r = self.side_range[1] + rand() * (self.side_range[2] - self.side_range[1])
    local cw, ch = math.floor(ow * r), math.floor(oh * r)
    local rr = torch.rand(2):tolist()
    local left, top = math.floor((cw - ow) * rr[1]), math.floor((ch - oh) * rr[2])
    return {padding = {left, top, cw - (left + ow), ch - (top + oh)}}
  end
  function RandomZoomOut:transform(inpt, p) return self:_call_kernel(F.pad, inpt, p.padding, get_fill(self._fill, inpt)) end
  RandomZoomOut.extra_repr = fields_repr({"fill", "side_range", "p"})
  v2.RandomZoomOut = RandomZoomOut

  -- RandomIoUCrop: SSD's crop, whose IoU with some box (centred inside it) reaches a drawn minimum
  local RandomIoUCrop = core.class("RandomIoUCrop", {{"min_scale", 0.3}, {"max_scale", 1.0}, {"min_aspect_ratio", 0.5},
    {"max_aspect_ratio", 2.0}, {"sampler_options"}, {"trials", 40}}, function(self, a)
      for k, v in pairs(a) do self[k] = v end
      self.options = a.sampler_options or {0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0}
      self.sampler_options = nil
    end)
  function RandomIoUCrop:check_inputs(flat)
    if not (core.has_all(flat, BoundingBoxes) and core.has_any(flat, core.PIL, Image, core.is_pure_tensor)) then
      U.error("RandomIoUCrop() requires input sample to contain tensor or PIL images and bounding boxes. Sample can also contain masks.")
    end
  end
  function RandomIoUCrop:make_params(flat)
    local oh, ow = core.query_size(flat)
    local boxes = core.get_bounding_boxes(flat)
    local box_iou = require("tv_ops_boxes").box_iou
    local xyxy = K.convert_bounding_box_format(pure(boxes), boxes.format, "XYXY")
    if not xyxy:is_floating_point() then xyxy = xyxy:float() end
    xyxy = xyxy:reshape(-1, 4)
    local cx = (xyxy:select(-1, 0) + xyxy:select(-1, 2)) * 0.5
    local cy = (xyxy:select(-1, 1) + xyxy:select(-1, 3)) * 0.5
    while true do
      local min_iou = self.options[randint(0, #self.options) + 1]
      if min_iou >= 1.0 then return {} end
      for _ = 1, self.trials do
        local r = torch.rand(2):tolist()
        local nw = math.floor(ow * (self.min_scale + (self.max_scale - self.min_scale) * r[1]))
        local nh = math.floor(oh * (self.min_scale + (self.max_scale - self.min_scale) * r[2]))
        local ar = nw / nh
        if not (self.min_aspect_ratio <= ar and ar <= self.max_aspect_ratio) then goto continue end
        r = torch.rand(2):tolist()
        local left, top = math.floor((ow - nw) * r[1]), math.floor((oh - nh) * r[2])
        local right, bottom = left + nw, top + nh
        if left == right or top == bottom then goto continue end
        local within = cx:gt(left):logical_and(cx:lt(right)):logical_and(cy:gt(top)):logical_and(cy:lt(bottom))
        if not within:any():item() then goto continue end
        local crop = torch.tensor({{left, top, right, bottom}}, {dtype = xyxy.dtype, device = xyxy.device})
        if box_iou(xyxy:index_select(0, within:nonzero():view(-1)), crop):max():item() >= min_iou then
          return {top = top, left = left, height = nh, width = nw, is_within_crop_area = within}
        end
        ::continue::
      end
    end
  end
  function RandomIoUCrop:transform(inpt, p)
    if p.top == nil then return inpt end
    local out = self:_call_kernel(F.crop, inpt, p.top, p.left, p.height, p.width)
    if tv_tensors.isinstance(out, BoundingBoxes) then
      -- boxes centred outside the crop become degenerate (SanitizeBoundingBoxes removes them)
      local data = pure(out):reshape(-1, out:size(-1))
      data:index_fill_(0, p.is_within_crop_area:logical_not():nonzero():view(-1):to(out.device), 0)
    end
    return out
  end
  RandomIoUCrop.extra_repr = fields_repr({"min_scale", "max_scale", "min_aspect_ratio", "max_aspect_ratio", "options", "trials"})
  v2.RandomIoUCrop = RandomIoUCrop

  local function resize_class(name, spec, init, size_of)
    local cls = core.class(name, spec, init)
    cls.make_params = function(self, flat)
      local h, w = core.query_size(flat)
      return {size = size_of(self, h, w)}
    end
    function cls:transform(inpt, p)
      return self:_call_kernel(F.resize, inpt, p.size, self.interpolation, nil, self.antialias)
    end
    local names = {}
    for i, sp in ipairs(spec) do names[i] = sp[1] end
    cls.extra_repr = fields_repr(names)
    v2[name] = cls
    return cls
  end

  -- ScaleJitter(target_size, scale_range=(0.1, 2.0), interpolation, antialias): torchvision's
  -- r = min(target_size[1] / H, target_size[0] / W) * scale
  resize_class("ScaleJitter", {{"target_size", R}, {"scale_range", {0.1, 2.0}}, {"interpolation", "bilinear"}, {"antialias", true}},
    nil, function(self, h, w)
      local scale = self.scale_range[1] + rand() * (self.scale_range[2] - self.scale_range[1])
      local r = math.min(self.target_size[2] / h, self.target_size[1] / w) * scale
      return {math.floor(h * r), math.floor(w * r)}
    end)

  -- RandomShortestSize(min_size, max_size=None, interpolation, antialias): shorter edge drawn from min_size
  resize_class("RandomShortestSize", {{"min_size", R}, {"max_size"}, {"interpolation", "bilinear"}, {"antialias", true}},
    function(self, a)
      self.min_size = type(a.min_size) == "number" and {a.min_size} or a.min_size
      self.max_size, self.interpolation, self.antialias = a.max_size, a.interpolation, a.antialias
    end, function(self, h, w)
      local m = self.min_size[randint(0, #self.min_size) + 1]
      local r = m / math.min(h, w)
      if self.max_size ~= nil then r = math.min(r, self.max_size / math.max(h, w)) end
      return {math.floor(h * r), math.floor(w * r)}
    end)

  -- RandomResize(min_size, max_size, interpolation, antialias): shorter edge in [min_size, max_size)
  resize_class("RandomResize", {{"min_size", R}, {"max_size", R}, {"interpolation", "bilinear"}, {"antialias", true}},
    nil, function(self) return {randint(self.min_size, self.max_size)} end)
end
