-- The machinery of torchvision.transforms.v2: a sample's nesting of tables flattened into its
-- leaves and rebuilt (torch.utils._pytree's tree_flatten / tree_unflatten), the Transform base
-- class (make_params once per sample, transform once per input that needs it), and the kernel
-- registry through which each functional dispatches on its input's kind (pure tensor, PIL-like
-- image, or a tv_tensors class).
local torch = require "torch"
local nn = torch.nn
local U = require "nn_util"
local tv_tensors = require "tv_tensors"
local PIL = require("tv_io").Image

local M = {}

---------------------------------------------------------------------------
-- flattening: plain tables (no metatable) are containers; lists in order, then the other keys
-- sorted (Python dicts keep insertion order, Lua tables have none: sorted is the stable choice)
---------------------------------------------------------------------------

local function is_container(v) return type(v) == "table" and getmetatable(v) == nil and not PIL.isImageType(v) end

local function sorted_keys(t)
  local n, keys = #t, {}
  for k in pairs(t) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "number" or ta == "string" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return n, keys
end

-- leaves (a list) and the spec: the same nesting with each leaf replaced by its position
function M.tree_flatten(tree)
  local leaves = {}
  local function walk(v)
    if not is_container(v) then
      leaves[#leaves + 1] = v
      return {leaf = #leaves}
    end
    local n, keys = sorted_keys(v)
    local spec = {n = n, keys = keys, items = {}}
    for i = 1, n do spec.items[i] = walk(v[i]) end
    for _, k in ipairs(keys) do spec.items[k] = walk(v[k]) end
    return spec
  end
  local spec = walk(tree)
  spec.count = #leaves
  return leaves, spec
end

function M.tree_unflatten(leaves, spec)
  local function build(s)
    if s.leaf then return leaves[s.leaf] end
    local out = {}
    for i = 1, s.n do out[i] = build(s.items[i]) end
    for _, k in ipairs(s.keys) do out[k] = build(s.items[k]) end
    return out
  end
  return build(spec)
end

---------------------------------------------------------------------------
-- kinds of inputs
---------------------------------------------------------------------------

M.is_pure_tensor = tv_tensors.is_pure_tensor
M.PIL = PIL -- a type for check_type and register_kernel: PIL-like images

-- The type a kernel is registered for: a tv_tensors class, torch.Tensor, PIL, or the Lua type name.
function M.type_of(x)
  local c = tv_tensors.type_of(x)
  if c then return c end
  if torch.is_tensor(x) then return torch.Tensor end
  if PIL.isImageType(x) then return PIL end
  return type(x)
end

-- check_type(obj, types): types is a list of classes (tv_tensors classes, torch.Tensor for every
-- tensor, PIL) and predicates
function M.check_type(obj, types)
  for _, t in ipairs(types) do
    if type(t) == "function" then
      if t(obj) then return true end
    elseif t == torch.Tensor then
      if torch.is_tensor(obj) then return true end
    elseif t == PIL then
      if PIL.isImageType(obj) then return true end
    elseif tv_tensors.isinstance(obj, t) then
      return true
    end
  end
  return false
end

function M.has_any(flat_inputs, ...)
  local types = {...}
  for _, inpt in ipairs(flat_inputs) do
    if M.check_type(inpt, types) then return true end
  end
  return false
end

function M.has_all(flat_inputs, ...)
  for _, t in ipairs({...}) do
    if not M.has_any(flat_inputs, t) then return false end
  end
  return true
end

local function first_of(cls, what)
  return function(flat_inputs)
    for _, inpt in ipairs(flat_inputs) do
      if tv_tensors.isinstance(inpt, cls) then return inpt end
    end
    U.errorf("No %s were found in the sample", what)
  end
end
M.get_bounding_boxes = first_of(tv_tensors.BoundingBoxes, "bounding boxes")
M.get_keypoints = first_of(tv_tensors.KeyPoints, "keypoints")

-- {H, W} of an input with a spatial size
function M.get_size(inpt)
  if PIL.isImageType(inpt) then return {inpt.height, inpt.width} end
  local c = tv_tensors.type_of(inpt)
  if c == tv_tensors.BoundingBoxes or c == tv_tensors.KeyPoints then return {inpt.canvas_size[1], inpt.canvas_size[2]} end
  if not torch.is_tensor(inpt) or inpt:dim() < 2 then
    U.errorf("get_size: expected an image, video, mask, bounding boxes or keypoints, got %s", U.typename(inpt))
  end
  return {inpt:size(-2), inpt:size(-1)}
end

local function image_like(x) return M.check_type(x, {M.is_pure_tensor, tv_tensors.Image, PIL, tv_tensors.Video}) end

local function sized(x)
  return image_like(x) or M.check_type(x, {tv_tensors.Mask, tv_tensors.BoundingBoxes, tv_tensors.KeyPoints})
end

local function only(what, list, msg)
  if #list == 0 then U.error(msg) end
  local seen, first = {}, nil
  for _, s in ipairs(list) do
    local key = table.concat(s, "x")
    if not first then first = key end
    seen[key] = true
  end
  for key in pairs(seen) do
    if key ~= first then
      local all = {}
      for k in pairs(seen) do all[#all + 1] = k end
      table.sort(all)
      U.errorf("Found multiple %s dimensions in the sample: %s", what, table.concat(all, ", "))
    end
  end
  return list[1]
end

-- the one height and width of a sample's spatial inputs
function M.query_size(flat_inputs)
  local sizes = {}
  for _, inpt in ipairs(flat_inputs) do
    if sized(inpt) then sizes[#sizes + 1] = M.get_size(inpt) end
  end
  local s = only("HxW", sizes, "No image, video, mask, bounding box or keypoint was found in the sample")
  return s[1], s[2]
end

-- the one channels, height and width of a sample's images and videos
function M.query_chw(flat_inputs)
  local dims = {}
  for _, inpt in ipairs(flat_inputs) do
    if image_like(inpt) then
      if PIL.isImageType(inpt) then dims[#dims + 1] = {#inpt:getbands(), inpt.height, inpt.width}
      else
        local c = inpt:dim() >= 3 and inpt:size(-3) or 1
        dims[#dims + 1] = {c, inpt:size(-2), inpt:size(-1)}
      end
    end
  end
  local d = only("CxHxW", dims, "No image or video was found in the sample")
  return d[1], d[2], d[3]
end

---------------------------------------------------------------------------
-- kernels: functional -> input type -> kernel
---------------------------------------------------------------------------

local registry = setmetatable({}, {__mode = "k"})
local names = setmetatable({}, {__mode = "k"})

local function type_name(t)
  if t == torch.Tensor then return "torch.Tensor" end
  if t == PIL then return "PIL.Image.Image" end
  if type(t) == "table" and t.__name then return t.__name end
  return tostring(t)
end

-- register(functional, type, kernel): the kernel runs for inputs of that type
function M.register(functional, input_type, kernel)
  registry[functional] = registry[functional] or {}
  registry[functional][input_type] = kernel
end

-- The kernel of functional for inputs of the given type: the type's own, else its nearest
-- tv_tensors ancestor's; an unregistered tv_tensor (or other value) passes through when allowed.
function M.get_kernel(functional, input_type, allow_passthrough)
  local reg = registry[functional]
  if not reg then U.errorf("%s is not a transforms.v2 functional with registered kernels", tostring(functional)) end
  local t = input_type
  while t do
    local k = reg[t]
    if k then return k end
    t = type(t) == "table" and rawget(t, "__parent") or nil
  end
  if allow_passthrough then return function(inpt) return inpt end end
  U.errorf("Functional %s supports inputs of type %s, but got %s instead.", names[functional] or "?",
    (function()
      local ts = {}
      for k in pairs(reg) do ts[#ts + 1] = type_name(k) end
      table.sort(ts)
      return table.concat(ts, ", ")
    end)(), type_name(input_type))
end

-- A functional named name that dispatches on its first argument's type.
function M.functional(name)
  local f
  f = function(inpt, ...) return M.get_kernel(f, M.type_of(inpt), false)(inpt, ...) end
  names[f] = name
  registry[f] = {}
  return f
end

-- The same kernel for pure tensors, PIL-like images, Images and Videos (image kernels take
-- (..., C, H, W)); a tv_tensor's output is wrapped like its input.
function M.register_image_kernel(functional, kernel, kinds)
  M.register(functional, torch.Tensor, kernel)
  M.register(functional, PIL, kernel)
  for _, cls in ipairs(kinds or {tv_tensors.Image, tv_tensors.Video}) do
    M.register(functional, cls, function(inpt, ...)
      return tv_tensors.wrap(kernel(inpt:view(inpt.shape), ...), {like = inpt})
    end)
  end
end

-- torchvision's register_kernel(functional, tv_tensor_cls): as a decorator, or with the kernel
-- as the third argument. The kernel receives the tv_tensor itself.
function M.register_kernel(functional, tv_tensor_cls, kernel)
  if not registry[functional] then
    U.errorf("register_kernel: %s is not a transforms.v2 functional", tostring(functional))
  end
  if tv_tensor_cls == torch.Tensor or tv_tensor_cls == PIL or tv_tensor_cls == tv_tensors.Image
    or tv_tensor_cls == tv_tensors.Video or tv_tensor_cls == tv_tensors.Mask
    or tv_tensor_cls == tv_tensors.BoundingBoxes or tv_tensor_cls == tv_tensors.KeyPoints then
    U.errorf("Kernels cannot be registered for the builtin tv_tensor types %s", type_name(tv_tensor_cls))
  end
  local function decorate(k)
    if registry[functional][tv_tensor_cls] then
      U.errorf("Functional %s already has a kernel registered for type %s.", names[functional] or "?", type_name(tv_tensor_cls))
    end
    M.register(functional, tv_tensor_cls, k)
    return k
  end
  if kernel ~= nil then return decorate(kernel) end
  return decorate
end

---------------------------------------------------------------------------
-- Transform: the base class of v2 transforms and of your own (v2.Transform:extend("Name"),
-- then make_params(flat_inputs) and transform(inpt, params))
---------------------------------------------------------------------------

local Transform = nn.Module:extend("Transform")
M.Transform = Transform
Transform._transformed_types = {torch.Tensor, PIL}

function Transform:check_inputs(flat_inputs) end
function Transform:make_params(flat_inputs) return {} end
function Transform:transform(inpt, params)
  U.errorf("%s: a v2 transform defines transform(inpt, params)", self.__name or "Transform")
end
function Transform:_call_kernel(functional, inpt, ...)
  return M.get_kernel(functional, M.type_of(inpt), true)(inpt, ...)
end

-- Which leaves to transform: the transformed types, except that pure tensors pass through when
-- the sample has an Image, a PIL-like image or a Video, and only the first is an image otherwise.
function Transform:_needs_transform_list(flat_inputs)
  local needs = {}
  local pure_is_image = not M.has_any(flat_inputs, tv_tensors.Image, tv_tensors.Video, PIL)
  for i, inpt in ipairs(flat_inputs) do
    local need = M.check_type(inpt, self._transformed_types)
    if need and M.is_pure_tensor(inpt) then
      if pure_is_image then pure_is_image = false else need = false end
    end
    needs[i] = need
  end
  return needs
end

-- the inputs as one tree (several arguments make a list), and how to hand the result back
local function pack_inputs(...)
  local n = select("#", ...)
  if n == 0 then U.error("a v2 transform needs at least one input") end
  if n > 1 then return table.pack(...), true end
  return (...), false
end

local function unpack_outputs(out, several)
  if several then return table.unpack(out, 1, out.n) end
  return out
end
M.pack_inputs, M.unpack_outputs = pack_inputs, unpack_outputs

-- flat inputs -> outputs for this transform (shared by forward and the random-apply forward)
function Transform:_apply_flat(flat_inputs)
  local needs = self:_needs_transform_list(flat_inputs)
  local chosen = {}
  for i, inpt in ipairs(flat_inputs) do if needs[i] then chosen[#chosen + 1] = inpt end end
  local params = self:make_params(chosen)
  local flat_outputs = {}
  for i, inpt in ipairs(flat_inputs) do
    if needs[i] then flat_outputs[i] = self:transform(inpt, params) else flat_outputs[i] = inpt end
  end
  return flat_outputs
end

-- f(flat, inputs) -> flat outputs, over the sample the arguments make; the outputs come back in
-- its nesting, several as several
function M.over_sample(f, ...)
  local inputs, several = pack_inputs(...)
  if several then inputs.n = nil end
  local flat, spec = M.tree_flatten(inputs)
  local out = M.tree_unflatten(f(flat, inputs), spec)
  if several then out.n = select("#", ...) end
  return unpack_outputs(out, several)
end

function Transform:forward(...)
  return M.over_sample(function(flat)
    self:check_inputs(flat)
    return self:_apply_flat(flat)
  end, ...)
end

-- A transform applied with probability p (one draw per sample, before the inputs' params).
local RandomApplyTransform = Transform:extend("_RandomApplyTransform")
M.RandomApplyTransform = RandomApplyTransform
function RandomApplyTransform:__init(p)
  Transform.__init(self)
  p = p == nil and 0.5 or p
  if type(p) ~= "number" or p < 0 or p > 1 then U.error("`p` should be a floating point value in the interval [0.0, 1.0].") end
  self.p = p
end
function RandomApplyTransform:forward(...)
  local inputs, several = pack_inputs(...)
  if several then inputs.n = nil end
  local flat, spec = M.tree_flatten(inputs)
  self:check_inputs(flat)
  if torch.rand(1):item() >= self.p then return ... end
  local out = M.tree_unflatten(self:_apply_flat(flat), spec)
  if several then out.n = select("#", ...) end
  return unpack_outputs(out, several)
end

-- A v2 transform class whose constructor parses spec (U.parse's {name, default} list) into
-- self's fields, then calls init(self, args) when given.
function M.class(name, spec, init, parent)
  local cls = (parent or Transform):extend(name)
  function cls:__init(...)
    Transform.__init(self)
    local a = U.parse(name, spec, ...)
    if init then init(self, a) else for _, s in ipairs(spec) do self[s[1]] = a[s[1]] end end
  end
  return cls
end

return M
