-- Division with PyTorch's rounding_mode: torch.div / divide (and the Tensor methods and their
-- in-place forms) take {rounding_mode = "trunc" | "floor"}; torch.floor_divide and a // b are
-- div(a, b, {rounding_mode = "floor"}), as in PyTorch. Integer operands give an integer result
-- (exact below 2^53: the quotient of a - fmod(a, b), which b divides); floating ones follow
-- PyTorch's div_floor (Python's // on each element: the quotient of a - fmod(a, b), corrected
-- toward floor, zero keeping the sign of a / b, and a / b itself where b is 0).
local torch = require "torch"
local U = require "nn_util"
local Tensor = torch.Tensor

local function as_tensor(v, like)
  if torch.is_tensor(v) then return v end
  return torch.tensor(v, { device = like and like.device or nil })
end

local function integral(dt) return not dt.is_floating_point and not dt.is_complex end

local function rounded(fname, a, b, mode)
  if mode ~= "trunc" and mode ~= "floor" then
    U.errorf("%s expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'", fname, tostring(mode))
  end
  a = as_tensor(a, torch.is_tensor(b) and b or nil)
  b = as_tensor(b, a)
  local dt = torch.result_type(a, b)
  if dt == torch.bool then dt = torch.int64 end
  if integral(dt) then
    if b:eq(0):any():item() then U.errorf("%s: ZeroDivisionError", fname) end
    local a64, b64 = a:to(torch.float64), b:to(torch.float64)
    local r = torch.fmod(a64, b64)
    local q = ((a64 - r) / b64):round()
    if mode == "floor" then q = q - (r:ne(0):logical_and(r:lt(0):ne(b64:lt(0)))):to(torch.float64) end
    return q:to(dt)
  end
  local x, y = a:to(dt), b:to(dt)
  local exact = x / y
  if mode == "trunc" then return exact:trunc() end
  local r = torch.fmod(x, y)
  local q = (x - r) / y
  q = q - r:ne(0):logical_and(y:lt(0):ne(r:lt(0))):to(dt)
  local f = q:floor()
  f = f + (q - f):gt(0.5):to(dt)
  f = torch.where(q:eq(0), torch.copysign(torch.zeros_like(q), exact), f)
  return torch.where(y:eq(0), exact, f)
end

-- the trailing options of a division: its rounding_mode, and the table without it (nil if empty)
local function split_opts(opts)
  if type(opts) ~= "table" or torch.is_tensor(opts) or opts.rounding_mode == nil then return nil, opts end
  local rest, any = {}, false
  for k, v in pairs(opts) do
    if k ~= "rounding_mode" then rest[k], any = v, true end
  end
  return opts.rounding_mode, any and rest or nil
end

for _, name in ipairs({ "div", "divide" }) do
  local plain, plain_ = torch[name], Tensor[name .. "_"]
  local function divide(a, b, opts, ...)
    local mode, rest = split_opts(opts)
    if mode == nil then return U.call_as(name, plain, a, b, opts, ...) end
    if rest then U.errorf("%s: unknown keyword '%s'", name, (next(rest))) end
    return rounded(name, a, b, mode)
  end
  torch[name], Tensor[name] = divide, divide
  Tensor[name .. "_"] = function(self, b, opts, ...)
    local mode, rest = split_opts(opts)
    if mode == nil then return U.call_as(name .. "_", plain_, self, b, opts, ...) end
    if rest then U.errorf("%s_: unknown keyword '%s'", name, (next(rest))) end
    local q = rounded(name .. "_", self, b, mode)
    if q.dtype ~= self.dtype and not (self.dtype.is_floating_point or integral(q.dtype)) then
      U.errorf("%s_: result type %s can't be cast to the desired output type %s", name, U.scalar_name(q.dtype), U.scalar_name(self.dtype))
    end
    return self:copy_(q)
  end
end

torch.floor_divide = U.checked("floor_divide", { "input:Tensor|Number", "other:Tensor|Number" },
  function(a, b) return rounded("floor_divide", a, b, "floor") end)
Tensor.floor_divide = torch.floor_divide
-- a // b, as Python's // on tensors
debug.getregistry()["torch.Tensor"].__idiv = torch.floor_divide

return torch
