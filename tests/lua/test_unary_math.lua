-- sin ... trunc: values against Lua's math library element by element, gradients against
-- float64 central differences, dtypes and in-place forms.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }

local function round_even(v)
  local f = math.floor(v)
  local d = v - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then return f + 1 end
  return f
end

local ref = {
  sin = math.sin, cos = math.cos, tan = math.tan, asin = math.asin, acos = math.acos, atan = math.atan,
  sinh = function(v) return (math.exp(v) - math.exp(-v)) / 2 end,
  cosh = function(v) return (math.exp(v) + math.exp(-v)) / 2 end,
  expm1 = function(v) return math.exp(v) - 1 end, exp2 = function(v) return 2 ^ v end,
  log2 = function(v) return math.log(v, 2) end, log10 = function(v) return math.log(v, 10) end,
  reciprocal = function(v) return 1 / v end,
  frac = function(v) return v - (v < 0 and math.ceil(v) or math.floor(v)) end,
  floor = math.floor, ceil = math.ceil, round = round_even,
  trunc = function(v) return v < 0 and math.ceil(v) or math.floor(v) end,
}

local inputs = { -2.5, -1.5, -0.75, -0.5, 0.3, 0.5, 0.9, 1.5, 2.5, 3.25 }
local unit = { -0.9, -0.5, -0.1, 0.2, 0.6, 0.95 }
local positive = { 0.1, 0.5, 1.0, 2.0, 8.0, 1000.0 }

T.test("values against Lua's math library", function()
  for name, f in pairs(ref) do
    local xs = (name == "asin" or name == "acos") and unit or (name == "log2" or name == "log10") and positive or inputs
    for _, dt in ipairs({ torch.float64, torch.float32 }) do
      local x = torch.tensor(xs, { dtype = dt })
      local want = {}
      for i, v in ipairs(xs) do want[i] = f(v) end
      local tol = dt == torch.float64 and 1e-12 or 1e-6
      T.near(x[name](x):tolist(), want, tol, name .. " " .. tostring(dt))
      T.near(torch[name](x):tolist(), want, tol, "torch." .. name)
      local y = x:clone()
      T.check(rawequal(y[name .. "_"](y), y), name .. "_ returns self")
      T.near(y:tolist(), want, tol, name .. "_ in place")
    end
  end
  T.near(torch.tensor({ 2.5, 0.5, -0.5, 1.5 }):round():tolist(), { 2.0, 0.0, -0.0, 2.0 }, 0, "round: half to even")
  T.near(torch.erfc(torch.tensor({ 0.0, 1.0 }, f64)):tolist(), { 1.0, 0.157299207050285 }, 1e-12, "erfc")
  T.near(torch.arcsin(torch.tensor({ 0.5 }, f64)):tolist(), { math.asin(0.5) }, 1e-15, "arcsin alias")
end)

T.test("dtypes: integers", function()
  local i = torch.tensor({ -2, 3 })
  T.eq(i:sin().dtype, torch.float32, "sin of int64 computes in float32")
  T.near(i:reciprocal():tolist(), { -0.5, 1 / 3 }, 1e-7, "reciprocal of int64")
  local f = i:floor()
  T.eq(f.dtype, torch.int64, "floor leaves int64")
  T.eq(f:tolist(), { -2, 3 }, "and its values")
  T.check(not rawequal(f, i), "a new tensor")
  T.eq(i:clone():round_():tolist(), { -2, 3 }, "round_ on int64")
  T.raises(function() i:frac() end, "~\"frac\" not implemented for 'int64'")
  T.raises(function() torch.tensor({ true }):floor() end, "~not implemented for 'Bool'")
end)

T.test("gradients against central differences", function()
  torch.manual_seed(41)
  local x = torch.rand(6, f64) * 1.6 - 0.8 -- inside (-1, 1) for asin / acos, away from rounding steps
  for _, name in ipairs({ "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "expm1", "exp2", "reciprocal", "erfc", "frac" }) do
    gradcheck(name, function(t) return t[name](t) end, { name == "reciprocal" and x + 2 or x })
  end
  for _, name in ipairs({ "log2", "log10" }) do gradcheck(name, function(t) return t[name](t) end, { x:abs() + 0.5 }) end
  local y = torch.tensor({ 0.3, 1.7 }):requires_grad_()
  ;(y:floor() + y:ceil() + y:round() + y:trunc()):sum():backward()
  T.eq(y.grad:tolist(), { 0.0, 0.0 }, "rounding: zero gradient")
  T.eq(torch.tensor({ 1.0 }):requires_grad_():sin().grad_fn:name(), "SinBackward0", "grad_fn name")
end)
