-- nn.UninitializedParameter(requires_grad=true, device=, dtype=) and
-- nn.UninitializedBuffer(requires_grad=false, device=, dtype=): placeholders with no shape yet,
-- and nn.parameter.is_lazy(x). x:materialize(shape, device=, dtype=) gives the tensor: a
-- Parameter (or a buffer tensor) of that shape, uninitialised memory as torch.empty's. PyTorch
-- turns the object itself into that tensor; a Lua value cannot change into a tensor, so use the
-- result: p = p:materialize({3, 4}). Reading the shape, or any tensor attribute, before that is
-- PyTorch's error. (nnrepl's Lazy* modules keep None in the slots until their first forward.)
local torch = require "torch"
local U = require "nn_util"
local nn = require "torch_nn"
require "torch_nn_gaps"

local shape_msg = "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in " ..
  "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call `forward` to " ..
  "initialize the parameters before accessing their attributes."

local own = { requires_grad = true, device = true, dtype = true, cls_to_become = true }

-- the device argument as PyTorch's torch.empty(0, device=d) reads it, with its errors
local function device_arg(d)
  if d == nil then return nil end
  local mt = getmetatable(d)
  if type(d) ~= "string" and math.type(d) ~= "integer" and not (mt and mt.__name == "torch.device") then
    U.errorf("empty(): argument 'device' must be torch.device, not %s", torch.is_tensor(d) and "Tensor" or U.typename(d))
  end
  if math.type(d) == "integer" and d < 0 then U.error("Device index must not be negative") end
  local ok, dev = pcall(torch.device, d)
  if not ok then U.error((tostring(dev):gsub("^.-bad argument #%d+ to '[^']*' %((.*)%)$", "%1"))) end
  return dev
end

local function class(name, default_grad, become)
  local cls = { __name = name }
  local methods = {}
  cls.__tostring = function() return "<" .. name .. ">" end
  cls.__index = function(self, k)
    if methods[k] ~= nil then return methods[k] end
    if k == "shape" then U.error(shape_msg) end
    if own[k] then return nil end
    U.errorf("Attempted to use an uninitialized parameter in %s. This error happens when you are using a `LazyModule` " ..
      "or explicitly manipulating `torch.nn.parameter.%s` objects. When using LazyModules Call `forward` with a " ..
      "dummy batch to initialize the parameters before calling torch functions", tostring(k), name)
  end
  function methods.size() U.error(shape_msg) end
  methods.dim, methods.numel = methods.size, methods.size
  function methods:materialize(...)
    local o = U.parse("materialize", { { "shape", U.REQUIRED }, { "device" }, { "dtype" } }, ...)
    local shape = o.shape
    if type(shape) == "number" then shape = { shape } end
    local t = torch.empty(shape, { device = o.device or rawget(self, "device"), dtype = o.dtype or rawget(self, "dtype") })
    return become(t, rawget(self, "requires_grad"))
  end
  setmetatable(cls, {
    __tostring = function() return "<class 'torch.nn.parameter." .. name .. "'>" end,
    __call = function(c, ...)
      local o = U.parse(name, { { "requires_grad", default_grad }, { "device" }, { "dtype" } }, ...)
      return setmetatable({ requires_grad = o.requires_grad, device = device_arg(o.device), dtype = o.dtype }, c)
    end,
  })
  return cls
end

local UP = class("UninitializedParameter", true, function(t, rg) return nn.Parameter(t, rg) end)
local UB = class("UninitializedBuffer", false, function(t, rg) return rg and t:requires_grad_(true) or t end)
rawset(UP, "cls_to_become", nn.Parameter)
rawset(UB, "cls_to_become", torch.Tensor)
nn.UninitializedParameter, nn.UninitializedBuffer = UP, UB
nn.parameter.UninitializedParameter, nn.parameter.UninitializedBuffer = UP, UB

function nn.parameter.is_lazy(x)
  local mt = getmetatable(x)
  return mt == UP or mt == UB
end

-- nn.isinstance knows them: an UninitializedParameter is a Parameter and a Tensor, as in PyTorch
local isinstance = nn.isinstance
function nn.isinstance(v, cls)
  local mt = getmetatable(v)
  if mt ~= UP and mt ~= UB then return isinstance(v, cls) end
  if type(cls) == "table" and getmetatable(cls) == nil and cls[1] ~= nil then
    for _, c in ipairs(cls) do if nn.isinstance(v, c) then return true end end
    return false
  end
  return cls == mt or cls == torch.Tensor or (mt == UP and cls == nn.Parameter)
end

return { UninitializedParameter = UP, UninitializedBuffer = UB }
