-- Python's math names that Lua's math library lacks, added to math at startup (torch_os.lua
-- requires this file): math.inf, math.isnan(x), math.isclose(a, b), math.prod(list), math.log2(x),
-- math.erf(x), ... Lua's own functions (sqrt, log, exp, floor, ceil, fmod, abs, ...) are not touched.
-- Integers are Lua's 64-bit ones: where Python's would grow past them (factorial(21), comb(70, 35),
-- prod of large ints) the function raises "integer overflow" instead. A tuple is several return
-- values (frexp). Errors are Python's text ("math domain error", "math range error", ...).
local U = require "nn_util"
local C = require "_pymath"

local M = math
local mininteger, maxinteger = math.mininteger, math.maxinteger

local function err(fmt, ...) U.error(fmt:format(...)) end

-- Python's int argument: a Lua integer, or a float with an integral value is refused as Python does
local function int_arg(v, fn)
  if math.type(v) == "integer" then return v end
  if math.type(v) == "float" then err("'float' object cannot be interpreted as an integer") end
  err("%s() argument must be an int, not %s", fn, type(v))
end

local function num_arg(v, fn)
  if type(v) ~= "number" then err("must be real number, not %s", type(v)) end
  return v
end

local function checked_mul(a, b, fn)
  if a ~= 0 and b ~= 0 then
    local r = a * b
    if r // b ~= a or (a == -1 and b == mininteger) or (b == -1 and a == mininteger) then
      err("integer overflow: %s() does not fit in a 64-bit integer", fn)
    end
    return r
  end
  return 0
end

local function define(name, v)
  if rawget(M, name) == nil then M[name] = v end
end

define("inf", 1 / 0)
define("nan", -(0 / 0)) -- a positive quiet nan, as Python's float("nan")
define("e", math.exp(1))
define("tau", 2 * math.pi)

for _, name in ipairs({"erf", "erfc", "log1p", "expm1", "log2", "asinh", "acosh", "atanh", "cbrt", "exp2", "gamma",
  "lgamma", "copysign", "nextafter", "remainder"}) do
  define(name, C[name])
end
-- Lua 5.4 keeps these as deprecated compatibility functions; Python's versions give the same
-- values and raise Python's errors where Lua's return inf or nan
for _, name in ipairs({"log10", "sinh", "cosh", "tanh", "pow", "frexp", "ldexp"}) do M[name] = C[name] end

define("isnan", function(x) return num_arg(x, "isnan") ~= x end)
define("isinf", function(x) x = num_arg(x, "isinf"); return x == 1 / 0 or x == -1 / 0 end)
define("isfinite", function(x) x = num_arg(x, "isfinite"); return x == x and x ~= 1 / 0 and x ~= -1 / 0 end)
define("fabs", function(x) return math.abs(num_arg(x, "fabs") + 0.0) end)
define("degrees", math.deg)
define("radians", math.rad)
define("atan2", function(y, x) return math.atan(num_arg(y, "atan2"), num_arg(x, "atan2")) end)

-- trunc(x): the integer toward 0
define("trunc", function(x)
  x = num_arg(x, "trunc")
  if math.type(x) == "integer" then return x end
  if x ~= x then err("cannot convert float NaN to integer") end
  local t = x >= 0 and math.floor(x) or math.ceil(x)
  if t == 1 / 0 or t == -1 / 0 then err("cannot convert float infinity to integer") end
  local i = math.tointeger(t)
  if not i then err("integer overflow: trunc() does not fit in a 64-bit integer") end
  return i
end)

-- isclose(a, b, {rel_tol = 1e-09, abs_tol = 0.0})
define("isclose", function(a, b, o)
  a, b = num_arg(a, "isclose"), num_arg(b, "isclose")
  o = o or {}
  local rel, abs = o.rel_tol or 1e-09, o.abs_tol or 0.0
  if rel < 0 or abs < 0 then err("tolerances must be non-negative") end
  if a == b then return true end
  if a == 1 / 0 or a == -1 / 0 or b == 1 / 0 or b == -1 / 0 then return false end
  local diff = math.abs(b - a)
  return diff <= math.abs(rel * b) or diff <= math.abs(rel * a) or diff <= abs
end)

-- hypot(*coordinates), dist(p, q): the Euclidean norm (CPython's is correctly rounded more often;
-- this one is C's hypot folded over the coordinates)
local function norm(xs)
  local r = 0.0
  for _, x in ipairs(xs) do
    if x == 1 / 0 or x == -1 / 0 then return 1 / 0 end
  end
  for _, x in ipairs(xs) do r = C.hypot2(r, x) end
  return r
end
define("hypot", function(...)
  local xs = {...}
  for i = 1, select("#", ...) do num_arg(xs[i], "hypot") end
  return norm(xs)
end)
define("dist", function(p, q)
  if type(p) ~= "table" or type(q) ~= "table" then err("dist(): both points must be sequences") end
  if #p ~= #q then err("both points must have the same number of dimensions") end
  local d = {}
  for i = 1, #p do d[i] = num_arg(p[i], "dist") - num_arg(q[i], "dist") end
  return norm(d)
end)

-- prod(list, {start = 1}): integers stay integers while every factor is one
define("prod", function(xs, o)
  if type(xs) ~= "table" then err("'%s' object is not iterable", type(xs)) end
  local r = (o and o.start) or 1
  for _, x in ipairs(xs) do
    num_arg(x, "prod")
    if math.type(r) == "integer" and math.type(x) == "integer" then r = checked_mul(r, x, "prod") else r = r * x end
  end
  return r
end)

-- fsum(list): the correctly rounded sum (Shewchuk's partials, as CPython's msum)
define("fsum", function(xs)
  if type(xs) ~= "table" then err("'%s' object is not iterable", type(xs)) end
  local partials, special = {}, 0.0
  for _, x in ipairs(xs) do
    x = num_arg(x, "fsum") + 0.0
    if x ~= x or x == 1 / 0 or x == -1 / 0 then
      special = special + x
    else
      local n = 0
      for _, y in ipairs(partials) do
        if math.abs(x) < math.abs(y) then x, y = y, x end
        local hi = x + y
        local lo = y - (hi - x)
        if lo ~= 0.0 then n = n + 1; partials[n] = lo end
        x = hi
      end
      if x == 1 / 0 or x == -1 / 0 then err("intermediate overflow in fsum") end
      for k = #partials, n + 1, -1 do partials[k] = nil end
      partials[n + 1] = x
    end
  end
  if special ~= 0.0 or special ~= special then
    if special ~= special then err("-inf + inf in fsum") end
    return special
  end
  local n = #partials
  if n == 0 then return 0.0 end
  local hi = partials[n]
  n = n - 1
  local lo = 0.0
  while n > 0 do
    local x = hi
    local y = partials[n]
    n = n - 1
    hi = x + y
    local yr = hi - x
    lo = y - yr
    if lo ~= 0.0 then break end
  end
  -- half-way cases: round as the exact sum does
  if n > 0 and ((lo < 0 and partials[n] < 0) or (lo > 0 and partials[n] > 0)) then
    local y = lo * 2
    local x = hi + y
    local yr = x - hi
    if y == yr then hi = x end
  end
  return hi
end)

define("factorial", function(n)
  n = int_arg(n, "factorial")
  if n < 0 then err("factorial() not defined for negative values") end
  local r = 1
  for k = 2, n do r = checked_mul(r, k, "factorial") end
  return r
end)

-- perm(n, k = n), comb(n, k)
local function nonneg(v, what)
  v = int_arg(v, what)
  if v < 0 then err("%s must be a non-negative integer", what) end
  return v
end
define("perm", function(n, k)
  n = nonneg(n, "n")
  k = k == nil and n or nonneg(k, "k")
  if k > n then return 0 end
  local r = 1
  for i = n - k + 1, n do r = checked_mul(r, i, "perm") end
  return r
end)
define("comb", function(n, k)
  n, k = nonneg(n, "n"), nonneg(k, "k")
  if k > n then return 0 end
  if k > n - k then k = n - k end
  local r = 1
  for i = 1, k do
    -- r * (n - k + i) / i stays exact; divide the gcd out first so that the product fits longer
    local a, b = n - k + i, i
    local g = M.gcd(r, b)
    r, b = r // g, b // g
    a = a // b
    r = checked_mul(r, a, "comb")
  end
  return r
end)

define("gcd", function(...)
  local g = 0
  for i = 1, select("#", ...) do
    local b = math.abs(int_arg((select(i, ...)), "gcd"))
    local a = g
    while b ~= 0 do a, b = b, a % b end
    g = a
  end
  return g
end)
define("lcm", function(...)
  local l = 1
  for i = 1, select("#", ...) do
    local b = math.abs(int_arg((select(i, ...)), "lcm"))
    if b == 0 or l == 0 then l = 0 else l = checked_mul(l // M.gcd(l, b), b, "lcm") end
  end
  return l
end)

define("isqrt", function(n)
  n = int_arg(n, "isqrt")
  if n < 0 then err("isqrt() argument must be nonnegative") end
  local r = math.floor(math.sqrt(n))
  while r * r > n do r = r - 1 end
  while (r + 1) * (r + 1) <= n and (r + 1) * (r + 1) > 0 do r = r + 1 end
  return r
end)

-- ulp(x): the value of x's least significant bit
define("ulp", function(x)
  x = num_arg(x, "ulp") + 0.0
  if x ~= x then return x end
  x = math.abs(x)
  if x == 1 / 0 then return x end
  local up = C.nextafter(x, 1 / 0)
  if up == 1 / 0 then return x - C.nextafter(x, 0.0) end
  return up - x
end)

return M
