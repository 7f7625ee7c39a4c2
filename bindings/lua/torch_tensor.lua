-- The Lua half of torch.Tensor: conversions written in terms of the C methods,
-- and torch.Tensor(...) as a constructor.
local torch = require "torch"
local Tensor = torch.Tensor

local conversions = {
  float = torch.float32, double = torch.float64, half = torch.float16, bfloat16 = torch.bfloat16,
  long = torch.int64, int = torch.int32, byte = torch.uint8, bool = torch.bool,
}
for name, dtype in pairs(conversions) do
  Tensor[name] = function(self) return self:to(dtype) end
end

function Tensor:cpu() return self:to("cpu") end

-- x:cuda(), x:cuda(1), x:cuda("cuda:1"), x:cuda(device, {non_blocking=true})
function Tensor:cuda(device, opts)
  if type(device) == "table" and getmetatable(device) == nil then device, opts = nil, device end
  if device == nil then device = "cuda" end
  if opts then return self:to(device, opts) end
  return self:to(device)
end

function Tensor:type_as(other) return self:to(other.dtype) end

local legacy = {
  float32 = "FloatTensor", float64 = "DoubleTensor", float16 = "HalfTensor", bfloat16 = "BFloat16Tensor",
  int64 = "LongTensor", int32 = "IntTensor", uint8 = "ByteTensor", bool = "BoolTensor",
}
local from_legacy = {}
for name, legacy_name in pairs(legacy) do from_legacy[legacy_name] = torch[name] end

-- x:type() is "torch.FloatTensor"; x:type(torch.float64) or x:type("torch.DoubleTensor") converts
function Tensor:type(dtype)
  if dtype == nil then
    local name = legacy[tostring(self.dtype):sub(7)]
    return self.is_cuda and "torch.cuda." .. name or "torch." .. name
  end
  if type(dtype) == "string" then
    local name = dtype:match("^torch%.cuda%.(%w+)$")
    local device = name and "cuda" or nil
    name = name or dtype:match("^torch%.(%w+)$")
    local dt = name and from_legacy[name]
    if dt and device then return self:to(dt, device) end
    if dt then return self:to(dt) end
  end
  return self:to(dtype)
end

-- torch.Tensor(2, 3): an uninitialised float tensor; torch.Tensor({1, 2}): one from data
setmetatable(Tensor, {
  __call = function(_, first, ...)
    if first == nil or (type(first) == "table" and getmetatable(first) == nil and first[1] ~= nil) then
      return torch.tensor(first or {}, {dtype = torch.get_default_dtype()})
    end
    return torch.empty(first, ...)
  end,
})
