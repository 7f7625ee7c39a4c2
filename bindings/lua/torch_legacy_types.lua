-- The legacy tensor types: torch.FloatTensor, torch.LongTensor, ..., torch.cuda.FloatTensor, ...
-- Each is a constructor (torch.FloatTensor({1, 2}) from data, torch.FloatTensor(2, 3) or
-- torch.FloatTensor(size) uninitialised, torch.FloatTensor() empty) and a type for x:type(T);
-- x:type() is the type's name ("torch.cuda.FloatTensor"); torch.set_default_tensor_type.
local torch = require "torch"
local U = require "nn_util"
local Tensor = torch.Tensor

local names = {
  float32 = "FloatTensor", float64 = "DoubleTensor", float16 = "HalfTensor", bfloat16 = "BFloat16Tensor",
  int64 = "LongTensor", int32 = "IntTensor", int16 = "ShortTensor", int8 = "CharTensor", uint8 = "ByteTensor", bool = "BoolTensor",
  complex64 = "ComplexFloatTensor", complex128 = "ComplexDoubleTensor",
}

local LegacyType = {}
LegacyType.__name = "torch.tensortype"
LegacyType.__tostring = function(T) return "<class '" .. T.__name .. "'>" end

local by_name = {} -- "torch.FloatTensor" / "torch.cuda.FloatTensor" -> type

local function type_name(dtype, cuda)
  return (cuda and "torch.cuda." or "torch.") .. names[tostring(dtype):sub(7)]
end

local function check_usable(T)
  if T.is_cuda and not torch.cuda.is_available() then
    U.errorf("type %s not available. Torch not compiled with CUDA enabled (or no GPU is visible).", T.__name)
  end
end

LegacyType.__call = function(T, first, ...)
  check_usable(T)
  local opts = { dtype = T.dtype, device = T.is_cuda and "cuda" or "cpu" }
  if first == nil then return torch.empty(0, opts) end
  if torch.is_tensor(first) then
    if first:type() ~= T.__name then U.errorf("%s(): expected %s (got %s)", T.__name, T.__name, first:type()) end
    return first:view(first:size()) -- shares first's memory, as PyTorch's legacy constructor
  end
  if type(first) == "table" and getmetatable(first) == nil then return torch.tensor(first, opts) end
  local size = table.pack(first, ...)
  size[size.n + 1] = opts
  return torch.empty(table.unpack(size, 1, size.n + 1))
end

for key, name in pairs(names) do
  local dtype = torch[key]
  for _, cuda in ipairs({ false, true }) do
    local T = setmetatable({ __name = type_name(dtype, cuda), dtype = dtype, is_cuda = cuda }, LegacyType)
    by_name[T.__name] = T
    if cuda then torch.cuda[name] = T else torch[name] = T end
  end
end

local function is_legacy(v) return getmetatable(v) == LegacyType end

-- a legacy type from a type or its name (nil if neither)
local function legacy_type(v)
  if is_legacy(v) then return v end
  if type(v) == "string" then return by_name[v] end
end

-- x:type() is "torch.FloatTensor"; x:type(torch.float64), x:type(torch.DoubleTensor) or
-- x:type("torch.cuda.DoubleTensor") converts (a CPU type brings x to the CPU, a CUDA type keeps
-- x's GPU or takes the current one)
function Tensor:type(dtype, non_blocking)
  if dtype == nil then return type_name(self.dtype, self.is_cuda) end
  local opts = non_blocking and { non_blocking = true } or nil
  local T = legacy_type(dtype)
  if T then
    check_usable(T)
    local device = T.is_cuda and (self.is_cuda and self.device or "cuda") or "cpu"
    if opts then return U.call(self.to, self, device, T.dtype, opts) end
    return U.call(self.to, self, device, T.dtype)
  end
  if type(dtype) == "string" then U.errorf("invalid type: '%s'", dtype) end
  if opts then return U.call_as("type", self.to, self, dtype, opts) end
  return U.call_as("type", self.to, self, dtype)
end

-- torch.typename(x): a tensor's type name, else the Lua type name
function torch.typename(v)
  if torch.is_tensor(v) then return v:type() end
  if is_legacy(v) then return v.__name end
  return U.typename(v)
end

-- Deprecated in PyTorch 2.1; sets the default dtype, and the default device for a CUDA type.
function torch.set_default_tensor_type(t)
  U.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use torch.set_default_dtype() and " ..
    "torch.set_default_device() as alternatives.")
  local T = legacy_type(t)
  if not T then
    U.errorf("set_default_tensor_type: expected a tensor type such as torch.FloatTensor or its name, got %s",
      type(t) == "string" and "'" .. t .. "'" or U.typename(t))
  end
  if not T.dtype.is_floating_point then U.error("only floating-point types are supported as the default type") end
  check_usable(T)
  torch.set_default_dtype(T.dtype)
  torch.set_default_device(T.is_cuda and "cuda" or nil)
end

return { is_legacy = is_legacy }
