-- torch.testing.make_tensor: a tensor of the given shape filled with uniform values from
-- [low, high), PyTorch's defaults and checks (torch.testing.assert_close is in torch_ops_extra.lua).
--   torch.testing.make_tensor({2, 3}, {dtype = torch.float32, device = "cpu", low = -1, high = 1})
--   torch.testing.make_tensor(2, 3, {dtype = torch.int64, exclude_zero = true})
local torch = require "torch"
local U = require "nn_util"

local testing = torch.testing or {}
torch.testing = testing

local spec = { { "dtype" }, { "device" }, { "low" }, { "high" }, { "requires_grad", false }, { "noncontiguous", false },
  { "exclude_zero", false }, { "memory_format" } }

local function is_size(v) return (getmetatable(v) or {}).__name == "torch.Size" end

-- the shape: numbers, or one list / torch.Size; then the options table
local function shape_and_opts(...)
  local args, n = { ... }, select("#", ...)
  local opts = {}
  -- a last table that is not a list of sizes holds the options ({} alone is the 0-dim shape)
  if n > 0 and type(args[n]) == "table" and not is_size(args[n]) and #args[n] == 0 and (n > 1 or next(args[n]) ~= nil) then
    opts = args[n]
    n = n - 1
  end
  local shape = {}
  if n == 1 and (type(args[1]) == "table" or is_size(args[1])) then
    shape = is_size(args[1]) and args[1]:totable() or args[1]
  else
    for i = 1, n do shape[i] = args[i] end
  end
  for i, d in ipairs(shape) do
    if math.type(d) ~= "integer" or d < 0 then U.errorf("make_tensor: size %d must be a non-negative integer, got %s", i, tostring(d)) end
  end
  return shape, opts
end

-- [low, high) for dtype: PyTorch's defaults (-9 and 9, 10 for integers), clamped to the dtype's
-- range; integers round both up and keep at least one value
local function bounds(dtype, real, low, high)
  for _, v in ipairs({ low, high }) do
    if v ~= nil and v ~= v then U.error("make_tensor: low and high cannot be NaN") end
  end
  local is_float = real.is_floating_point
  low, high = low or -9, high or (is_float and 9 or 10)
  if low > high then U.errorf("make_tensor: low must be less than or equal to high, but got low=%s and high=%s", tostring(low), tostring(high)) end
  local info = is_float and torch.finfo(real) or torch.iinfo(real)
  low, high = math.max(low, info.min), math.min(high, info.max)
  if not is_float then
    low, high = math.ceil(low), math.ceil(high)
    if low == high then high = high + 1 end
  end
  return low, high
end

local COMPLEX_PART = { [torch.complex64] = torch.float32, [torch.complex128] = torch.float64 }

function testing.make_tensor(...)
  local shape, raw = shape_and_opts(...)
  local o = U.parse("make_tensor", spec, raw)
  local dtype = o.dtype or U.error("make_tensor: dtype must be given")
  local device = o.device or "cpu"
  local real = COMPLEX_PART[dtype] or dtype
  local drawn = { table.unpack(shape) } -- noncontiguous: twice the last dim, every other element kept
  if o.noncontiguous and #shape > 0 then drawn[#shape] = drawn[#shape] * 2 end
  local t
  if dtype == torch.bool then
    t = torch.randint(0, 2, drawn, { device = device }):to(torch.bool)
  else
    local low, high = bounds(dtype, real, o.low, o.high)
    local function draw()
      if not real.is_floating_point then return torch.randint(low, high, drawn, { dtype = dtype, device = device }) end
      return torch.empty(drawn, { dtype = real, device = device }):uniform_(low, high)
    end
    t = COMPLEX_PART[dtype] and torch.complex(draw(), draw()) or draw()
    if o.exclude_zero then
      local fill = real.is_floating_point and torch.finfo(real).tiny or 1
      t = torch.where(t:eq(0), torch.full({}, fill, { dtype = dtype, device = device }), t)
    end
  end
  if o.noncontiguous and #shape > 0 then t = t:unfold(-1, 1, 2):squeeze(-1) end -- every other element: a view
  if o.memory_format then t = t:contiguous({ memory_format = o.memory_format }) end
  if o.requires_grad then t:requires_grad_(true) end
  return t
end

return testing
