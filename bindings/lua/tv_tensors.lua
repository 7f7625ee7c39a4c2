-- torchvision.tv_tensors: tensors that say what they hold (Image, Video, Mask, BoundingBoxes,
-- KeyPoints), so that transforms.v2 transforms each input of a sample the right way.
--
-- A tv_tensor is a tensor (torch.is_tensor is true) sharing its data's storage, tagged with its
-- class here and carrying its metadata as attributes (boxes.format, boxes.canvas_size). As in
-- torchvision, the result of an op on it is a pure tensor, except clone, to, detach,
-- requires_grad_ and pin_memory, which keep the class and metadata; tv_tensors.wrap(t, {like = x})
-- makes a tensor x's kind again. isinstance(x, tv_tensors.BoundingBoxes) is
-- nn.isinstance(x, tv_tensors.BoundingBoxes) (or tv_tensors.isinstance).
local torch = require "torch"
local U = require "nn_util"
local Image = require("tv_io").Image

local M = {}
local kind = setmetatable({}, {__mode = "k"}) -- tensor -> its tv_tensor class

local function new_class(name, parent)
  local cls = {__name = name, __parent = parent}
  cls.__isinstance = function(x) return M.isinstance(x, cls) end -- nn.isinstance(x, cls)
  return setmetatable(cls, {__tostring = function() return "<class 'torchvision.tv_tensors." .. name .. "'>" end,
    __call = function(c, ...) return c.__new(...) end})
end

M.TVTensor = new_class("TVTensor")
M.TVTensor.__new = function() U.error("TVTensor is an abstract base class: use Image, Video, Mask, BoundingBoxes or KeyPoints") end

-- The class of x when it is a tv_tensor, else nil.
function M.type_of(x) return kind[x] end

function M.isinstance(x, cls)
  if type(cls) == "table" and getmetatable(cls) == nil and cls[1] then
    for _, c in ipairs(cls) do if M.isinstance(x, c) then return true end end
    return false
  end
  local c = kind[x]
  while c do
    if c == cls then return true end
    c = c.__parent
  end
  return false
end

function M.is_pure_tensor(x) return torch.is_tensor(x) and kind[x] == nil end

-- clone, to, detach, requires_grad_ and pin_memory keep a tv_tensor's class and metadata (as
-- torchvision's _FORCE_TORCHFUNCTION_SUBCLASS): tv_tensors carry the attribute __keep, for which
-- the tensor's method lookup hands out these stand-ins (installed with the first tv_tensor).
local keep_installed = false
local copy_meta
local function install_keepers()
  keep_installed = true
  for _, name in ipairs({"clone", "to", "detach", "requires_grad_", "pin_memory"}) do
    local orig = torch.Tensor[name]
    if orig then
      torch._keep_method(name, function(self, ...)
        local out = orig(self, ...)
        local c = kind[self]
        if c and torch.is_tensor(out) and out ~= self and kind[out] == nil then
          kind[out] = c
          out.__keep = true
          copy_meta(self, out)
        end
        return out
      end)
    end
  end
  -- an in-place op returns a pure tensor value of the same tensor; the tv_tensor stays one
  for name, orig in pairs(torch.Tensor) do
    if type(name) == "string" and name:match("^%l[%w_]*[^_]_$") and name ~= "requires_grad_" and type(orig) == "function" then
      torch._keep_method(name, function(self, ...)
        local out = orig(self, ...)
        if rawequal(out, self) then return torch._alias(out) end
        return out
      end)
    end
  end
end

local META = {"format", "canvas_size", "clamping_mode"}
copy_meta = function(from, to)
  for _, k in ipairs(META) do
    local v = from[k]
    if v ~= nil then to[k] = v end
  end
end

-- x's data as a new tensor value of its own (sharing x's storage when it is a tensor)
local function to_tensor(fname, data, o)
  local t
  if torch.is_tensor(data) then
    t = torch._alias(data)
  elseif type(data) == "table" or type(data) == "number" or type(data) == "boolean" then
    t = torch.as_tensor(data)
  else
    U.errorf("%s: expected a tensor or data torch.as_tensor takes, got %s", fname, U.typename(data))
  end
  if o.dtype ~= nil or o.device ~= nil then
    t = t:to({dtype = o.dtype or t.dtype, device = o.device or t.device})
    if rawequal(t, data) then t = torch._alias(t) end
  end
  if o.requires_grad ~= nil then t:requires_grad_(o.requires_grad) end
  return t
end

-- torchvision's repr: the class name for "tensor(", its metadata before the ")"
local function show_meta(k, v)
  if k == "format" then return "format=BoundingBoxFormat." .. v end
  if k == "canvas_size" then return string.format("canvas_size=(%d, %d)", v[1], v[2]) end
  if v == false then return k .. "=None" end
  return k .. "=" .. tostring(v)
end
local function install_repr()
  local mt = getmetatable(torch.empty(0))
  local plain = mt.__tostring
  mt.__tostring = function(t)
    local s = plain(t)
    local c = kind[t]
    if not c then return s end
    local pad = string.rep(" ", #c.__name + 1)
    s = c.__name .. "(" .. s:sub(#"tensor(" + 1):gsub("\n       ", "\n" .. pad)
    -- a class of your own (TVTensor:extend) prints as torch prints a subclass: no ", )"
    if not (c == M.Image or c == M.Video or c == M.Mask or c == M.BoundingBoxes or c == M.KeyPoints) then return s end
    local extra = {}
    for _, k in ipairs(c == M.BoundingBoxes and META or c == M.KeyPoints and {"canvas_size"} or {}) do
      local v = t[k]
      if v ~= nil or k == "clamping_mode" then extra[#extra + 1] = show_meta(k, v == nil and false or v) end
    end
    return s:sub(1, -2) .. ", " .. table.concat(extra, ", ") .. ")"
  end
end

local function tag(t, cls)
  if not keep_installed then install_keepers(); install_repr() end
  kind[t] = cls
  t.__keep = true
  return t
end

local common = {{"dtype", nil}, {"device", nil}, {"requires_grad", nil}}
local function spec(extra)
  local s = {{"data", U.REQUIRED}}
  for _, e in ipairs(extra or {}) do s[#s + 1] = e end
  for _, e in ipairs(common) do s[#s + 1] = e end
  return s
end

-- class MyTVTensor(tv_tensors.TVTensor): MyTVTensor = tv_tensors.TVTensor:extend("MyTVTensor");
-- MyTVTensor(data, {dtype, device, requires_grad}) is data (its storage shared) of that class
function M.TVTensor.extend(parent, name)
  local cls = new_class(name, parent)
  cls.extend = M.TVTensor.extend
  cls.__new = function(...)
    local o = U.parse(name, spec(), ...)
    return tag(to_tensor(name, o.data, o), cls)
  end
  return cls
end

M.Image = new_class("Image", M.TVTensor)
M.Image.__new = function(...)
  local o = U.parse("Image", spec(), ...)
  local data = o.data
  if Image.isImageType(data) then data = data._data:permute(2, 0, 1):contiguous() end
  local t = to_tensor("Image", data, o)
  if t:dim() < 2 then U.errorf("Image: expected a tensor of at least 2 dimensions, got %d", t:dim()) end
  if t:dim() == 2 then t = t:unsqueeze(0) end
  return tag(t, M.Image)
end

M.Video = new_class("Video", M.TVTensor)
M.Video.__new = function(...)
  local o = U.parse("Video", spec(), ...)
  local t = to_tensor("Video", o.data, o)
  if t:dim() < 4 then U.errorf("Video: expected a tensor of at least 4 dimensions (T, C, H, W), got %d", t:dim()) end
  return tag(t, M.Video)
end

M.Mask = new_class("Mask", M.TVTensor)
M.Mask.__new = function(...)
  local o = U.parse("Mask", spec(), ...)
  local data = o.data
  if Image.isImageType(data) then data = data._data:permute(2, 0, 1)[0]:contiguous() end
  return tag(to_tensor("Mask", data, o), M.Mask)
end

M.BoundingBoxFormat = {XYXY = "XYXY", XYWH = "XYWH", CXCYWH = "CXCYWH", XYWHR = "XYWHR", CXCYWHR = "CXCYWHR",
  XYXYXYXY = "XYXYXYXY"}
local rotated = {XYWHR = true, CXCYWHR = true, XYXYXYXY = true}
local coords = {XYXY = 4, XYWH = 4, CXCYWH = 4, XYWHR = 5, CXCYWHR = 5, XYXYXYXY = 8}

function M.is_rotated_bounding_format(format) return rotated[M.check_format(format)] == true end

-- A box format (any case) as its canonical name.
function M.check_format(format)
  local f = type(format) == "string" and M.BoundingBoxFormat[format:upper()]
  if not f then U.errorf("unknown bounding box format %s (XYXY, XYWH, CXCYWH, XYWHR, CXCYWHR or XYXYXYXY)", tostring(format)) end
  return f
end

local function check_canvas(fname, size)
  if type(size) ~= "table" or #size ~= 2 or math.type(size[1]) ~= "integer" or math.type(size[2]) ~= "integer" then
    U.errorf("%s: canvas_size must be {height, width} (two integers), got %s", fname, U.typename(size))
  end
  return {size[1], size[2]}
end

local function wrap_boxes(t, format, canvas_size, clamping_mode, check_dims)
  format = M.check_format(format)
  if check_dims then
    if t:dim() == 1 then t = t:unsqueeze(0)
    elseif t:dim() ~= 2 then U.errorf("BoundingBoxes: expected a 1D or 2D tensor, got %dD", t:dim()) end
  end
  tag(t, M.BoundingBoxes)
  t.format, t.canvas_size, t.clamping_mode = format, check_canvas("BoundingBoxes", canvas_size), clamping_mode
  return t
end

M.BoundingBoxes = new_class("BoundingBoxes", M.TVTensor)
M.BoundingBoxes.__new = function(...)
  local o = U.parse("BoundingBoxes", spec({{"format", U.REQUIRED}, {"canvas_size", U.REQUIRED}, {"clamping_mode", "soft"}}), ...)
  local t = to_tensor("BoundingBoxes", o.data, o)
  local format = M.check_format(o.format)
  if rotated[format] and not t:is_floating_point() then
    U.errorf("Rotated bounding boxes should be floating point tensors, got %s.", tostring(t.dtype))
  end
  local n = t:dim() >= 1 and t:size(-1) or 0
  if t:numel() > 0 and n ~= coords[format] then
    U.errorf("BoundingBoxes: format %s has %d coordinates a box, got a last dimension of %d", format, coords[format], n)
  end
  return wrap_boxes(t, format, o.canvas_size, o.clamping_mode, true)
end

M.KeyPoints = new_class("KeyPoints", M.TVTensor)
M.KeyPoints.__new = function(...)
  local o = U.parse("KeyPoints", spec({{"canvas_size", U.REQUIRED}}), ...)
  local t = to_tensor("KeyPoints", o.data, o)
  if t:dim() == 1 then t = t:unsqueeze(0) end
  if t:dim() < 2 or t:size(-1) ~= 2 then
    U.errorf("KeyPoints: expected a tensor of shape [..., 2], got %s", tostring(t.shape))
  end
  tag(t, M.KeyPoints)
  t.canvas_size = check_canvas("KeyPoints", o.canvas_size)
  return t
end

-- tv_tensors.wrap(t, {like = x, format =, canvas_size =, clamping_mode =}): t as x's class, with x's
-- metadata unless given; a new tensor value sharing t's data, as torchvision's as_subclass
function M.wrap(...)
  local o = U.parse("wrap", {{"wrappee", U.REQUIRED}, {"like", U.REQUIRED}, {"format", nil}, {"canvas_size", nil},
    {"clamping_mode", nil}}, ...)
  local t, like = o.wrappee, o.like
  if not torch.is_tensor(t) then U.errorf("wrap: expected a tensor, got %s", U.typename(t)) end
  local c = kind[like]
  if not c then U.errorf("wrap: like must be a tv_tensor, got %s", U.typename(like)) end
  t = torch._alias(t)
  if c == M.BoundingBoxes then
    local mode = o.clamping_mode -- false is Python's None (no clamping)
    if mode == nil then mode = like.clamping_mode end
    return wrap_boxes(t, o.format or like.format, o.canvas_size or like.canvas_size, mode, false)
  end
  tag(t, c)
  if c == M.KeyPoints then t.canvas_size = o.canvas_size or like.canvas_size end
  return t
end

-- set_return_type("Tensor") is the default; ops keeping tv_tensor types are not supported here
function M.set_return_type(return_type)
  if type(return_type) ~= "string" or (return_type:lower() ~= "tensor" and return_type:lower() ~= "tvtensor") then
    U.errorf("set_return_type: return_type must be 'Tensor' or 'TVTensor', got %s", tostring(return_type))
  end
  if return_type:lower() == "tvtensor" then
    U.error("set_return_type('TVTensor') is not supported: ops on tv_tensors return pure tensors; " ..
      "wrap a result with tv_tensors.wrap(out, {like = x})")
  end
  return setmetatable({}, {__close = function() end})
end

return M
