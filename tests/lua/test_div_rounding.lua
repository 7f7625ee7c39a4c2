-- torch.div / divide with rounding_mode (bindings/lua/torch_tensor_rounding.lua) and floor_divide
-- against plain Lua: integers by Lua's integer // and a truncating quotient, floats by Python's
-- float // written out (fmod, corrected toward floor, signed zero, a / b where b is 0).
local T = ...

local function py_floordiv(a, b)
  if b == 0 then return a / b end
  local mod = math.fmod(a, b)
  local div = (a - mod) / b
  if mod ~= 0 and (b < 0) ~= (mod < 0) then div = div - 1 end
  if div == 0 then return (a / b < 0 or (a / b == 0 and 1 / (a / b) < 0)) and -0.0 or 0.0 end
  local f = math.floor(div)
  if div - f > 0.5 then f = f + 1 end
  return f
end
local function trunc(v) -- a float, keeping the sign of zero (math.floor gives integers)
  local r = math.floor(math.abs(v)) + 0.0
  return (v < 0 or (v == 0 and 1 / v < 0)) and -r or r
end
local function int_trunc(a, b) local q = a // b; if q < 0 and q * b ~= a then q = q + 1 end return q end

local function same_bits(got, want, msg)
  for i = 1, #want do
    local g, w = got[i], want[i]
    local ok = (g ~= g and w ~= w) or (g == w and (g ~= 0 or 1 / g == 1 / w))
    T.check(ok, string.format("%s [%d]: got %s, want %s", msg, i, tostring(g), tostring(w)))
  end
end

local function run(dev)
  local ia = { 7, -7, 7, -7, 0, 9, -9, 123456789, -1 }
  local ib = { 2, 2, -2, -2, 3, 3, 4, -7, 5 }
  local a, b = torch.tensor(ia, { device = dev }), torch.tensor(ib, { device = dev })
  local fl, tr = {}, {}
  for i = 1, #ia do fl[i], tr[i] = ia[i] // ib[i], int_trunc(ia[i], ib[i]) end
  local q = torch.div(a, b, { rounding_mode = "floor" })
  T.eq(q.dtype, torch.int64)
  T.eq(q:tolist(), fl)
  T.eq(torch.divide(a, b, { rounding_mode = "trunc" }):tolist(), tr)
  T.eq(a:div(b, { rounding_mode = "trunc" }):tolist(), tr)
  T.eq(torch.floor_divide(a, b):tolist(), fl)
  T.eq(a:floor_divide(b):tolist(), fl)
  T.eq(torch.div(a, 2, { rounding_mode = "floor" }):tolist(), { 3, -4, 3, -4, 0, 4, -5, 61728394, -1 })
  T.eq(torch.div(a:to(torch.int32), b:to(torch.int16), { rounding_mode = "floor" }).dtype, torch.int32)
  local c = a:clone()
  c:div_(b, { rounding_mode = "floor" })
  T.eq(c:tolist(), fl)
  c = a:clone()
  c:divide_(2, { rounding_mode = "trunc" })
  T.eq(c:tolist(), { 3, -3, 3, -3, 0, 4, -4, 61728394, 0 })
  T.raises(function() a:div_(2.5, { rounding_mode = "floor" }) end, "div_: result type Float can't be cast to the desired output type Long")
  T.raises(function() torch.div(a, torch.zeros_like(a), { rounding_mode = "trunc" }) end, "~ZeroDivisionError")

  local xs = { 7.5, -7.5, 0.5, -0.5, 1, -1, 1, 5.25, -0.0, 3, 1e300, -2 }
  local ys = { 2, 2, -2, -2, 0.1, 0.1, 0, -0.75, 3, -0.0, 1e-10, 0 }
  local x, y = torch.tensor(xs, { dtype = torch.float64, device = dev }), torch.tensor(ys, { dtype = torch.float64, device = dev })
  local wf, wt = {}, {}
  for i = 1, #xs do wf[i], wt[i] = py_floordiv(xs[i], ys[i]), ys[i] == 0 and xs[i] / ys[i] or trunc(xs[i] / ys[i]) end
  same_bits(torch.div(x, y, { rounding_mode = "floor" }):tolist(), wf, dev .. " float floor")
  same_bits(x:div(y, { rounding_mode = "trunc" }):tolist(), wt, dev .. " float trunc")
  same_bits(torch.floor_divide(x, y):tolist(), wf, dev .. " floor_divide")
  local z = torch.tensor({ 7.5, -7.5 }, { device = dev })
  T.eq(torch.div(z, 2, { rounding_mode = "floor" }):tolist(), { 3.0, -4.0 })
  T.eq(torch.div(a, 2.5, { rounding_mode = "floor" }).dtype, torch.float32)
  T.eq(torch.div(a, b):tolist()[1], 3.5) -- no rounding_mode: true division as before
  T.raises(function() torch.div(a, b, { rounding_mode = "round" }) end,
    "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'")
  T.raises(function() torch.div(a, b, { rounding_mode = "floor", bogus = 1 }) end, "div: unknown keyword 'bogus'")
end

T.test("rounding_mode on the CPU", function() run("cpu") end)
T.test("rounding_mode on CUDA", function()
  if not torch.cuda.is_available() then return T.skip("no GPU", 25) end
  run("cuda")
end)
