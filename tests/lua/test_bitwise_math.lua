-- The bitwise ops and operators against Lua's own integer operators, asinh / acosh / atanh
-- against their logarithmic formulas, fmax / fmin and nextafter against loops (nextafter
-- through the IEEE bit patterns string.pack gives); gradients by float64 central differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }

local function map2(a, b, f) local o = {} for i = 1, #a do o[i] = f(a[i], b[i]) end return o end
local function map1(a, f) local o = {} for i = 1, #a do o[i] = f(a[i]) end return o end

-- two's complement wrap of a Lua integer to `bits` bits, signed or not
local function wrap(v, bits, signed)
  local m = (1 << bits) - 1
  v = v & m
  if signed and v >= (1 << (bits - 1)) then v = v - (1 << bits) end
  return v
end

local function shl(a, b) if b < 0 or b >= 64 then return 0 end return a << b end
local function shr(a, b) -- arithmetic: floor(a / 2^b)
  if b < 0 or b >= 63 then return a < 0 and -1 or 0 end
  return a // (1 << b)
end

local as = { 12, -7, 255, 0, 1, -1, 123456789, -2147483648, 2147483647, 96 }
local bs = { 10, 3, 1, 5, 63, 62, 31, 1, 4, 2 }

T.test("bitwise ops on int64 against Lua's operators", function()
  local a, b = torch.tensor(as), torch.tensor(bs)
  T.eq((a & b):tolist(), map2(as, bs, function(x, y) return x & y end), "&")
  T.eq((a | b):tolist(), map2(as, bs, function(x, y) return x | y end), "|")
  T.eq((a ~ b):tolist(), map2(as, bs, function(x, y) return x ~ y end), "~ (xor)")
  T.eq((~a):tolist(), map1(as, function(x) return ~x end), "~ (not)")
  T.eq((a << b):tolist(), map2(as, bs, shl), "<<")
  T.eq((a >> b):tolist(), map2(as, bs, shr), ">> is arithmetic")
  T.eq(torch.bitwise_and(a, b):tolist(), (a & b):tolist(), "torch.bitwise_and")
  T.eq(a:bitwise_or(b):tolist(), (a | b):tolist(), "Tensor:bitwise_or")
  T.eq(torch.bitwise_xor(a, b):tolist(), (a ~ b):tolist(), "torch.bitwise_xor")
  T.eq(torch.bitwise_not(a):tolist(), (~a):tolist(), "torch.bitwise_not")
  T.eq(torch.bitwise_left_shift(a, b):tolist(), (a << b):tolist(), "torch.bitwise_left_shift")
  T.eq(a:bitwise_right_shift(b):tolist(), (a >> b):tolist(), "Tensor:bitwise_right_shift")
  -- shift counts outside [0, 64): 0 to the left, the sign to the right
  local big = { -1, 64, 100, -5 }
  local x = torch.tensor({ 5, -5, 7, -9 })
  T.eq((x << torch.tensor(big)):tolist(), { 0, 0, 0, 0 }, "<< by a negative or >= 64 count")
  T.eq((x >> torch.tensor(big)):tolist(), { 0, -1, 0, -1 }, ">> by a negative or >= 64 count")
  -- numbers on either side
  T.eq((a & 0xff):tolist(), map1(as, function(v) return v & 0xff end), "tensor & number")
  T.eq((6 | a):tolist(), map1(as, function(v) return 6 | v end), "number | tensor")
  T.eq((1 << torch.tensor({ 0, 3, 10 })):tolist(), { 1, 8, 1024 }, "number << tensor")
end)

T.test("bitwise ops wrap to int32 and uint8, and bool is logical", function()
  local a32, b32 = torch.tensor(as, { dtype = torch.int32 }), torch.tensor(bs, { dtype = torch.int32 })
  local function want(f) return map2(as, bs, function(x, y) return wrap(f(x, y), 32, true) end) end
  T.eq((a32 & b32).dtype, torch.int32, "int32 & int32 stays int32")
  T.eq((a32 | b32):tolist(), want(function(x, y) return x | y end), "int32 |")
  T.eq((~a32):tolist(), map1(as, function(x) return wrap(~x, 32, true) end), "int32 ~")
  T.eq((a32 << b32):tolist(), want(shl), "int32 << wraps, and a count of 32 or more gives 0")
  T.eq((a32 >> b32):tolist(), want(shr), "int32 >>")
  local us = { 5, 200, 255, 0, 128 }
  local u = torch.tensor(us, { dtype = torch.uint8 })
  T.eq((~u):tolist(), map1(us, function(x) return wrap(~x, 8, false) end), "uint8 ~")
  T.eq((u << 1):tolist(), map1(us, function(x) return wrap(x << 1, 8, false) end), "uint8 << wraps")
  T.eq((u << 1).dtype, torch.uint8, "uint8 << Lua integer stays uint8")
  T.eq((u >> 3):tolist(), map1(us, function(x) return x >> 3 end), "uint8 >>")
  T.eq((u ~ torch.tensor({ 1, 2, 3, 4, 5 }, { dtype = torch.uint8 })):tolist(), map2(us, { 1, 2, 3, 4, 5 }, function(x, y) return x ~ y end), "uint8 ~ (xor)")
  T.eq((a32 & torch.tensor(bs)).dtype, torch.int64, "int32 & int64 promotes to int64")
  local ps, qs = { true, false, true, false }, { true, true, false, false }
  local p, q = torch.tensor(ps), torch.tensor(qs)
  T.eq((p & q):tolist(), map2(ps, qs, function(x, y) return x and y end), "bool &")
  T.eq((p | q):tolist(), map2(ps, qs, function(x, y) return x or y end), "bool |")
  T.eq((p ~ q):tolist(), map2(ps, qs, function(x, y) return x ~= y end), "bool ~ (xor)")
  T.eq((~p):tolist(), map1(ps, function(x) return not x end), "~mask inverts a mask")
  T.eq((~p).dtype, torch.bool, "~mask stays bool")
  local v = torch.tensor({ 1.0, 2.0, 3.0, 4.0 })
  T.eq(v[~p]:tolist(), { 2.0, 4.0 }, "x[~mask] as in PyTorch")
  T.eq((p & q).dtype, torch.bool, "bool & bool is bool")
  local m = p:clone()
  m:bitwise_not_()
  T.eq(m:tolist(), { false, true, false, true }, "bitwise_not_ on bool")
  local w = torch.tensor({ 12, 10 })
  w:bitwise_and_(torch.tensor({ 10, 6 }))
  T.eq(w:tolist(), { 8, 2 }, "bitwise_and_ in place")
  w:bitwise_left_shift_(2)
  T.eq(w:tolist(), { 32, 8 }, "bitwise_left_shift_ in place")
end)

T.test("bitwise ops reject floats and shifts of bools", function()
  local f = torch.tensor({ 1.5 })
  T.raises(function() return f & 1 end, "~\"bitwise_and\" not implemented for 'Float'", "float &")
  T.raises(function() return ~f end, "~\"bitwise_not\" not implemented for 'Float'", "~ float")
  T.raises(function() return torch.tensor({ 1 }, f64) | torch.tensor({ 1 }) end, "~not implemented for 'Double'", "double |")
  T.raises(function() return torch.tensor({ true }) << torch.tensor({ true }) end,
    "~\"bitwise_left_shift\" not implemented for 'Bool'", "bool << bool")
  T.eq((torch.tensor({ true }) << 1):tolist(), { 2 }, "bool << Lua integer promotes to int64, as in PyTorch")
  T.raises(function() local i = torch.tensor({ 1, 2 }); i:bitwise_and_(torch.tensor({ 1.5, 2.5 })) end,
    "~not implemented for 'Float'", "in place with a float operand")
  local i32 = torch.tensor({ 1, 2 }, { dtype = torch.int32 })
  i32:bitwise_or_(torch.tensor({ 4, 8 }))
  T.eq({ i32.dtype, i32:tolist() }, { torch.int32, { 5, 10 } }, "int32 |= int64 keeps int32, as PyTorch's in-place cast allows")
  local bits = torch.tensor({ true, false })
  T.raises(function() bits:bitwise_or_(torch.tensor({ 1, 2 })) end, "~can't be cast", "bool |= int64 cannot cast the result")
end)

T.test("asinh, acosh, atanh against their formulas", function()
  local xs = { -3.5, -1.0, -0.25, 0.0, 0.5, 2.0, 7.25 }
  local x = torch.tensor(xs, f64)
  T.near(torch.asinh(x):tolist(), map1(xs, function(v) return v < 0 and -math.log(-v + math.sqrt(v * v + 1)) or math.log(v + math.sqrt(v * v + 1)) end), 1e-14, "asinh")
  T.near(x:arcsinh():tolist(), torch.asinh(x):tolist(), 0, "arcsinh alias")
  local cs = { 1.0, 1.5, 2.0, 10.0, 1e6 }
  T.near(torch.acosh(torch.tensor(cs, f64)):tolist(), map1(cs, function(v) return math.log(v + math.sqrt(v * v - 1)) end), 1e-14, "acosh")
  T.check(torch.acosh(torch.tensor({ 0.5 }, f64)):isnan():all():item(), "acosh below 1 is nan")
  local ts = { -0.9, -0.5, 0.0, 0.3, 0.99 }
  T.near(torch.atanh(torch.tensor(ts, f64)):tolist(), map1(ts, function(v) return 0.5 * math.log((1 + v) / (1 - v)) end), 1e-14, "atanh")
  T.eq(torch.atanh(torch.tensor({ 1.0, -1.0 })):tolist(), { math.huge, -math.huge }, "atanh(+-1) is +-inf")
  T.eq(torch.arctanh(torch.tensor({ 2 })).dtype, torch.float32, "an integer input computes in the default float dtype")
  local y = torch.tensor({ 0.5, 1.0 }, f64)
  y:asinh_()
  T.near(y:tolist(), { math.log(0.5 + math.sqrt(1.25)), math.log(1 + math.sqrt(2)) }, 1e-14, "asinh_ in place")
  T.eq(torch.acosh(torch.tensor({ 2.0 })).grad_fn, nil, "no grad_fn without requires_grad")
end)

T.test("asinh, acosh, atanh gradients and their second derivatives", function()
  gradcheck("asinh", torch.asinh, { torch.tensor({ -2.0, -0.3, 0.0, 0.8, 3.0 }, f64) })
  gradcheck("acosh", torch.acosh, { torch.tensor({ 1.2, 1.7, 4.0 }, f64) })
  gradcheck("atanh", torch.atanh, { torch.tensor({ -0.7, 0.0, 0.4, 0.9 }, f64) })
  local x = torch.tensor({ 0.6 }, f64):requires_grad_()
  T.eq(torch.atanh(x).grad_fn:name(), "AtanhBackward0", "grad_fn name")
  -- d2/dx2 atanh(x) = 2x / (1 - x^2)^2, through create_graph
  local g = torch.autograd.grad(torch.atanh(x):sum(), x, { create_graph = true })[1]
  local h = torch.autograd.grad(g:sum(), x)[1]
  T.near(h:item(), 2 * 0.6 / (1 - 0.36) ^ 2, 1e-12, "atanh second derivative")
  x = torch.tensor({ 0.6 }, f64):requires_grad_()
  g = torch.autograd.grad(torch.asinh(x):sum(), x, { create_graph = true })[1]
  h = torch.autograd.grad(g:sum(), x)[1]
  T.near(h:item(), -0.6 / (0.36 + 1) ^ 1.5, 1e-12, "asinh second derivative")
end)

T.test("fmax and fmin ignore a NaN unless both are", function()
  local nan = 0 / 0
  local as_, bs_ = { 1.0, nan, nan, 3.0, -2.0, 5.0 }, { nan, 2.0, nan, 4.0, -2.0, -1.0 }
  local function ref(pick)
    return map2(as_, bs_, function(x, y)
      if x ~= x then return y end
      if y ~= y then return x end
      return pick(x, y)
    end)
  end
  local a, b = torch.tensor(as_, f64), torch.tensor(bs_, f64)
  local function same(got, want, msg)
    local ok = #got == #want
    for i = 1, #want do ok = ok and ((got[i] ~= got[i] and want[i] ~= want[i]) or got[i] == want[i]) end
    T.check(ok, msg .. ": got " .. T.show(got))
  end
  same(torch.fmax(a, b):tolist(), ref(math.max), "fmax")
  same(a:fmin(b):tolist(), ref(math.min), "fmin")
  same(torch.maximum(a, b):isnan():tolist(), map2(as_, bs_, function(x, y) return x ~= x or y ~= y end), "maximum still propagates NaN")
  T.eq(torch.fmax(torch.tensor({ 1, 7 }), torch.tensor({ 3, 2 })):tolist(), { 3, 7 }, "fmax of integers")
  T.eq(torch.fmin(torch.tensor({ 1, 7 }), 4.5):tolist(), { 1.0, 4.5 }, "fmin with a number promotes")
  -- gradients: all to the winner, all to a on ties and where b is NaN
  local x = torch.tensor({ 1.0, 5.0, 2.0, 3.0 }, f64):requires_grad_()
  local y = torch.tensor({ 4.0, 0.0 / 0.0, 2.0, 1.0 }, f64):requires_grad_()
  torch.fmax(x, y):sum():backward()
  T.eq(x.grad:tolist(), { 0.0, 1.0, 1.0, 1.0 }, "fmax grad of a")
  T.eq(y.grad:tolist(), { 1.0, 0.0, 0.0, 0.0 }, "fmax grad of b")
  x.grad, y.grad = nil, nil
  torch.fmin(x, y):sum():backward()
  T.eq(x.grad:tolist(), { 1.0, 1.0, 1.0, 0.0 }, "fmin grad of a")
  T.eq(y.grad:tolist(), { 0.0, 0.0, 0.0, 1.0 }, "fmin grad of b")
  gradcheck("fmax", torch.fmax, { torch.tensor({ 1.0, -2.0, 3.5 }, f64), torch.tensor({ 0.5, 1.0, 4.0 }, f64) })
  gradcheck("fmin", torch.fmin, { torch.tensor({ 1.0, -2.0, 3.5 }, f64), torch.tensor({ 0.5, 1.0, 4.0 }, f64) })
end)

T.test("nextafter against the IEEE bit patterns", function()
  -- the next representable value from x towards y, by stepping x's bit pattern (fmt: the float's
  -- and the same-sized integer's string.pack formats)
  local function stepper(ffmt, ifmt)
    return function(x, y)
      if x ~= x or y ~= y then return 0 / 0 end
      if x == y then return y end
      if x == 0 then return (y > 0 and 1 or -1) * string.unpack(ffmt, string.pack(ifmt, 1)) end
      local bits = string.unpack(ifmt, string.pack(ffmt, x))
      bits = bits + (((y > x) == (x > 0)) and 1 or -1)
      return (string.unpack(ffmt, string.pack(ifmt, bits)))
    end
  end
  local step64, step32 = stepper("<d", "<i8"), stepper("<f", "<i4")
  local xs, ys = { 1.0, 1.0, -1.0, 0.0, 0.0, 3.5, 1e300, 2.0 }, { 2.0, 0.0, 0.0, 1.0, -1.0, 3.5, math.huge, -math.huge }
  T.eq(torch.nextafter(torch.tensor(xs, f64), torch.tensor(ys, f64)):tolist(), map2(xs, ys, step64), "float64")
  local x32 = torch.tensor(xs):tolist() -- the float32 values
  T.eq(torch.tensor(xs):nextafter(torch.tensor(ys)):tolist(), map2(x32, torch.tensor(ys):tolist(), step32), "float32")
  local z = torch.tensor({ 1.0 }, f64)
  z:nextafter_(torch.tensor({ 0.0 }, f64))
  T.eq(z:item(), 1.0 - 2 ^ -53, "nextafter_ in place")
  T.raises(function() return torch.nextafter(torch.tensor({ 1 }), torch.tensor({ 2 })) end, "~\"nextafter\" not implemented for 'Long'", "integers")
  T.raises(function() return torch.nextafter(torch.tensor({ 1 }, { dtype = torch.float16 }), torch.tensor({ 2 }, { dtype = torch.float16 })) end,
    "~not implemented for 'Half'", "float16")
end)

T.test("the new ops on the GPU match the CPU", function()
  if not torch.cuda.is_available() then return T.skip("no GPU", 6) end
  local a = torch.randint(-1000, 1000, { 257 })
  local b = torch.randint(0, 70, { 257 })
  for _, f in ipairs({ function(x, y) return x & y end, function(x, y) return x ~ y end,
    function(x, y) return x << y end, function(x, y) return x >> y end }) do
    T.eq(f(a:cuda(), b:cuda()):cpu():tolist(), f(a, b):tolist(), "bitwise on cuda")
  end
  local x = torch.rand(300, f64) * 1.8 - 0.9
  T.near(torch.atanh(x:cuda()):cpu():tolist(), torch.atanh(x):tolist(), 1e-14, "atanh on cuda")
  local y = x:clone()
  y["0:10"] = 0 / 0
  T.eq(torch.fmax(x:cuda(), y:cuda()):cpu():tolist(), torch.fmax(x, y):tolist(), "fmax on cuda")
end)
