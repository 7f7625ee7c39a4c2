-- torch.int8 and torch.int16 end to end, against plain-Lua references: Lua's 64-bit integers
-- wrapped to 8 or 16 bits (two's complement, as PyTorch's kernels wrap on overflow), on
-- non-contiguous inputs. Also PyTorch's promotion table, casts, creation, printing,
-- torch.save/torch.load, and the errors of the ops that refuse integer inputs.
local T = ...

local KINDS = {
  { dt = torch.int8, name = "int8", bits = 8, scalar = "Char", legacy = "torch.CharTensor", st = "I8" },
  { dt = torch.int16, name = "int16", bits = 16, scalar = "Short", legacy = "torch.ShortTensor", st = "I16" },
}

-- v as a signed integer of `bits` bits holds it
local function wrap(v, bits)
  local m = 1 << bits
  v = v & (m - 1)
  if v >= m >> 1 then v = v - m end
  return v
end

local function map1(a, f) local o = {} for i = 1, #a do o[i] = f(a[i]) end return o end
local function map2(a, b, f) local o = {} for i = 1, #a do o[i] = f(a[i], b[i]) end return o end

-- n values of a kind: its limits and their neighbours first, then random ones
local function values(k, n, seed)
  math.randomseed(seed)
  local lo, hi = -(1 << (k.bits - 1)), (1 << (k.bits - 1)) - 1
  local v = { lo, hi, lo + 1, hi - 1, -1, 0, 1, 2, 3, -3 }
  while #v < n do v[#v + 1] = math.random(lo, hi) end
  return v
end

-- a 1-D tensor of the list, as a view with stride 2 (every other element of a larger tensor)
local function strided(list, dt)
  local inter = {}
  for i, x in ipairs(list) do inter[2 * i - 1], inter[2 * i] = x, 0 end
  local t = torch.tensor(inter, { dtype = dt }):view(#list, 2):select(1, 0)
  assert(not t:is_contiguous())
  return t
end

-- PyTorch's shifts: past the width, << gives 0 and >> the sign
local function shl(a, b, bits) if b < 0 or b >= bits then return 0 end return a << b end
local function shr(a, b, bits)
  if b < 0 or b >= bits then return a < 0 and -1 or 0 end
  return a // (1 << b) -- arithmetic shift: floor(a / 2^b)
end

T.test("dtype objects, names and conversions", function()
  for _, k in ipairs(KINDS) do
    T.eq(tostring(k.dt), "torch." .. k.name, k.name .. " tostring")
    T.eq(k.dt.itemsize, k.bits // 8, k.name .. " itemsize")
    T.eq(k.dt.is_signed, true, k.name .. " is_signed")
    T.eq(k.dt.is_floating_point, false, k.name .. " is_floating_point")
    local i = torch.iinfo(k.dt)
    T.eq({ i.bits, i.min, i.max, i.dtype }, { k.bits, -(1 << (k.bits - 1)), (1 << (k.bits - 1)) - 1, k.name }, k.name .. " iinfo")
    local x = torch.tensor({ 1, -2, 3 }, { dtype = k.dt })
    T.eq(x.dtype, k.dt, k.name .. " tensor dtype")
    T.eq(x:type(), k.legacy, k.name .. " legacy type")
    T.eq(torch.zeros(2):type(k.legacy).dtype, k.dt, k.name .. " type(legacy name)")
    T.eq(torch.zeros(2):to(k.name).dtype, k.dt, k.name .. " to(name)")
    T.eq(torch.is_floating_point(x), false, k.name .. " is_floating_point(x)")
    T.eq(x:is_signed(), true, k.name .. " x:is_signed()")
    T.eq(x.is_floating_point and x:is_floating_point(), false)
  end
  T.eq(torch.short, torch.int16, "torch.short")
  T.eq(torch.zeros(2):char().dtype, torch.int8, "char()")
  T.eq(torch.zeros(2):short().dtype, torch.int16, "short()")
  T.eq(torch.uint8.is_signed, false, "uint8 is unsigned")
end)

-- PyTorch's promote_types (c10's table), rows and columns in this order
local ORDER = { "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64" }
local PROMOTE = {
  bool = { "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64" },
  uint8 = { "uint8", "uint8", "int16", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64" },
  int8 = { "int8", "int16", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64" },
  int16 = { "int16", "int16", "int16", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64" },
  int32 = { "int32", "int32", "int32", "int32", "int32", "int64", "float16", "bfloat16", "float32", "float64" },
  int64 = { "int64", "int64", "int64", "int64", "int64", "int64", "float16", "bfloat16", "float32", "float64" },
  float16 = { "float16", "float16", "float16", "float16", "float16", "float16", "float16", "float32", "float32", "float64" },
  bfloat16 = { "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "float32", "bfloat16", "float32", "float64" },
  float32 = { "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float64" },
  float64 = { "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64" },
}

T.test("promotion: PyTorch's table, and the results of ops", function()
  for _, a in ipairs(ORDER) do
    for j, b in ipairs(ORDER) do
      local want = torch[PROMOTE[a][j]]
      T.eq(torch.promote_types(torch[a], torch[b]), want, "promote_types(" .. a .. ", " .. b .. ")")
      local x, y = torch.ones(3, { dtype = torch[a] }), torch.ones(3, { dtype = torch[b] })
      if a ~= "bool" or b ~= "bool" then T.eq((x * y).dtype, want, a .. " * " .. b) end
      T.eq(torch.cat({ x, y }).dtype, want, "cat " .. a .. ", " .. b)
    end
  end
  -- numbers and 0-dim tensors promote only across categories
  local c, s = torch.zeros(2, { dtype = torch.int8 }), torch.zeros(2, { dtype = torch.int16 })
  T.eq((c + 1000).dtype, torch.int8, "int8 + integer number")
  T.eq((c + 1.5).dtype, torch.float32, "int8 + float number: the default dtype")
  T.eq((c + true).dtype, torch.int8, "int8 + boolean")
  T.eq((c + torch.tensor(5, { dtype = torch.int64 })).dtype, torch.int8, "int8 + 0-dim int64")
  T.eq((c + torch.tensor(5, { dtype = torch.float64 })).dtype, torch.float64, "int8 + 0-dim float64")
  T.eq((s + torch.tensor({ 5 }, { dtype = torch.uint8 })).dtype, torch.int16, "int16 + uint8")
  T.eq(torch.result_type(c, torch.zeros(1, { dtype = torch.uint8 })), torch.int16, "result_type int8, uint8")
  T.eq(torch.can_cast(torch.int16, torch.int8), true, "can_cast int16 -> int8")
  T.eq(torch.can_cast(torch.float32, torch.int8), false, "can_cast float32 -> int8")
  T.eq(torch.can_cast(torch.int8, torch.bool), false, "can_cast int8 -> bool")
end)

T.test("elementwise arithmetic wraps like PyTorch", function()
  for _, k in ipairs(KINDS) do
    local A, B = values(k, 48, 1), values(k, 48, 2)
    local W = function(v) return wrap(v, k.bits) end
    local a, b = strided(A, k.dt), strided(B, k.dt)
    local function same(got, f, what)
      T.eq(got.dtype, k.dt, k.name .. " " .. what .. " dtype")
      T.eq(got:tolist(), map2(A, B, function(x, y) return W(f(x, y)) end), k.name .. " " .. what)
    end
    same(a + b, function(x, y) return x + y end, "+")
    same(a - b, function(x, y) return x - y end, "-")
    same(a * b, function(x, y) return x * y end, "*")
    same(torch.add(a, b, { alpha = 3 }), function(x, y) return x + 3 * y end, "add alpha=3")
    same(a:sub(b, { alpha = -2 }), function(x, y) return x + 2 * y end, "sub alpha=-2")
    same(torch.maximum(a, b), math.max, "maximum")
    same(torch.minimum(a, b), math.min, "minimum")
    same(a & b, function(x, y) return x & y end, "&")
    same(a | b, function(x, y) return x | y end, "|")
    same(a ~ b, function(x, y) return x ~ y end, "~ (xor)")
    T.eq((-a):tolist(), map1(A, function(x) return W(-x) end), k.name .. " neg (the minimum stays)")
    T.eq(a:abs():tolist(), map1(A, function(x) return W(math.abs(x)) end), k.name .. " abs (the minimum stays)")
    T.eq((~a):tolist(), map1(A, function(x) return ~x end), k.name .. " ~ (not)")
    T.eq(a:sign():tolist(), map1(A, function(x) return x > 0 and 1 or x < 0 and -1 or 0 end), k.name .. " sign")
    T.eq((a + 1000):tolist(), map1(A, function(x) return W(x + 1000) end), k.name .. " + 1000")
    T.eq((a * 3):tolist(), map1(A, function(x) return W(3 * x) end), k.name .. " * 3")
    T.eq((a ^ 3):tolist(), map1(A, function(x) return W(x * x * x) end), k.name .. " ^ 3")
    T.eq((a ^ 0):tolist(), map1(A, function() return 1 end), k.name .. " ^ 0")
    local ex = strided(map1(B, function(y) return y % 5 end), k.dt)
    T.eq((a ^ ex):tolist(), map2(A, B, function(x, y) local r = 1 for _ = 1, y % 5 do r = r * x end return W(r) end),
      k.name .. " ^ tensor")
    T.near((a / b):tolist(), map2(A, B, function(x, y) return x / y end), 1e-6, k.name .. " / is float")
    T.eq((a / b).dtype, torch.float32, k.name .. " / dtype")
    -- division and remainder: nonzero divisors, both signs, the minimum by -1 included
    local D = map1(B, function(y) return y == 0 and -1 or y end)
    D[1] = -1
    local d = strided(D, k.dt)
    T.eq((a % d):tolist(), map2(A, D, function(x, y) return x % y end), k.name .. " % (Python's remainder)")
    T.eq((a // d):tolist(), map2(A, D, function(x, y) return W(x // y) end), k.name .. " // (floor division)")
    T.eq(torch.floor_divide(a, d):tolist(), map2(A, D, function(x, y) return W(x // y) end), k.name .. " floor_divide")
    T.eq(torch.fmod(a, d):tolist(), map2(A, D, math.fmod), k.name .. " fmod (C's remainder)")
    T.eq(torch.remainder(a, 7):tolist(), map1(A, function(x) return x % 7 end), k.name .. " remainder(a, 7)")
    T.raises(function() return a % torch.zeros(48, { dtype = k.dt }) end, "~ZeroDivisionError", k.name .. " % 0")
    -- shifts by -2 .. bits + 2
    local S = map1(B, function(y) return y % (k.bits + 5) - 2 end)
    local s = strided(S, k.dt)
    T.eq((a << s):tolist(), map2(A, S, function(x, y) return W(shl(x, y, k.bits)) end), k.name .. " <<")
    T.eq((a >> s):tolist(), map2(A, S, function(x, y) return shr(x, y, k.bits) end), k.name .. " >> (arithmetic)")
    T.eq((a << 3):tolist(), map1(A, function(x) return W(x << 3) end), k.name .. " << 3")
    -- comparisons
    T.eq(a:lt(b):tolist(), map2(A, B, function(x, y) return x < y end), k.name .. " lt")
    T.eq(a:ge(b):tolist(), map2(A, B, function(x, y) return x >= y end), k.name .. " ge")
    T.eq(a:eq(a:clone()):all():item(), true, k.name .. " eq itself")
    T.eq(a:ne(0):tolist(), map1(A, function(x) return x ~= 0 end), k.name .. " ne 0")
    -- clamp: bounds of the dtype
    T.eq(a:clamp(-100, 50):tolist(), map1(A, function(x) return math.min(math.max(x, -100), 50) end), k.name .. " clamp")
    -- in place on a transposed view
    local m = torch.tensor({ { A[1], A[2], A[3] }, { A[4], A[5], A[6] } }, { dtype = k.dt }):t()
    m:add_(torch.tensor({ { B[1], B[2] }, { B[3], B[4] }, { B[5], B[6] } }, { dtype = k.dt }))
    T.eq(m:tolist(), { { W(A[1] + B[1]), W(A[4] + B[2]) }, { W(A[2] + B[3]), W(A[5] + B[4]) }, { W(A[3] + B[5]), W(A[6] + B[6]) } },
      k.name .. " add_ on a transposed view")
    local c = a:clone()
    c:mul_(5)
    T.eq(c:tolist(), map1(A, function(x) return W(5 * x) end), k.name .. " mul_(5)")
  end
end)

T.test("mixed integer dtypes compute in the promoted dtype", function()
  local A, U8 = values(KINDS[1], 32, 3), {}
  for i = 1, 32 do U8[i] = (i * 37) % 256 end
  local a, u = strided(A, torch.int8), strided(U8, torch.uint8)
  local r = a * u
  T.eq(r.dtype, torch.int16, "int8 * uint8 dtype")
  T.eq(r:tolist(), map2(A, U8, function(x, y) return wrap(x * y, 16) end), "int8 * uint8 in int16")
  T.eq(a:lt(u):tolist(), map2(A, U8, function(x, y) return x < y end), "int8 < uint8 (-1 < 255)")
  local s = strided(values(KINDS[2], 32, 4), torch.int16)
  local S = s:tolist()
  T.eq((a + s):tolist(), map2(A, S, function(x, y) return wrap(x + y, 16) end), "int8 + int16")
  T.eq((s - a:to(torch.int32)).dtype, torch.int32, "int16 - int32 dtype")
end)

T.test("reductions: sum and prod in int64, the rest in the dtype", function()
  for _, k in ipairs(KINDS) do
    local V = values(k, 60, 5)
    local x = strided(V, k.dt):view(6, 10)
    local rows = x:tolist()
    local total, prod = 0, 1
    for _, v in ipairs(V) do total = total + v end
    for i = 1, 12 do prod = prod * V[i] end -- wraps in int64 like the kernel's int64 accumulator
    T.eq(x:sum().dtype, torch.int64, k.name .. " sum dtype")
    T.eq(x:sum():item(), total, k.name .. " sum")
    T.eq(x:sum(1):tolist(), map1(rows, function(r) local s = 0 for _, v in ipairs(r) do s = s + v end return s end), k.name .. " sum(1)")
    T.eq(strided(V, k.dt):narrow(0, 0, 12):prod():item(), prod, k.name .. " prod")
    T.eq(x:cumsum(1).dtype, torch.int64, k.name .. " cumsum dtype")
    local lo, hi = math.huge, -math.huge
    for _, v in ipairs(V) do lo, hi = math.min(lo, v), math.max(hi, v) end
    T.eq({ x:max():item(), x:min():item() }, { hi, lo }, k.name .. " max, min")
    T.eq(x:amax(0).dtype, k.dt, k.name .. " amax dtype")
    local vals, idx = x:max(1)
    for i, r in ipairs(rows) do
      local m = math.mininteger
      for _, v in ipairs(r) do m = math.max(m, v) end
      T.eq(vals[i - 1]:item(), m, k.name .. " max(1) values")
      T.eq(r[idx[i - 1]:item() + 1], m, k.name .. " max(1) indices")
    end
    T.eq(V[x:argmin():item() + 1], lo, k.name .. " argmin")
    T.eq(x:ne(0):all():item(), false, k.name .. " all (a zero is there)")
    T.eq(x:any().dtype, torch.bool, k.name .. " any dtype")
    T.eq(x:any():item(), true, k.name .. " any")
    T.eq(torch.count_nonzero(x):item(), #V - 1, k.name .. " count_nonzero")
  end
end)

T.test("sort, topk, kthvalue, unique", function()
  for _, k in ipairs(KINDS) do
    local V = values(k, 40, 6)
    local x = strided(V, k.dt)
    local sorted = table.move(V, 1, #V, 1, {})
    table.sort(sorted)
    local v, i = x:sort()
    T.eq(v:tolist(), sorted, k.name .. " sort")
    T.eq(v.dtype, k.dt, k.name .. " sort dtype")
    T.eq(map1(i:tolist(), function(j) return V[j + 1] end), sorted, k.name .. " sort indices")
    local desc = x:sort(0, true)
    T.eq(desc[0]:item(), sorted[#sorted], k.name .. " sort descending")
    T.eq(x:topk(3):tolist(), { sorted[#sorted], sorted[#sorted - 1], sorted[#sorted - 2] }, k.name .. " topk")
    T.eq(x:kthvalue(5):item(), sorted[5], k.name .. " kthvalue")
    T.eq(torch.unique(torch.tensor({ 3, -1, 3, 7, -1 }, { dtype = k.dt })):tolist(), { -1, 3, 7 }, k.name .. " unique")
  end
end)

T.test("indexing, gather, scatter, index_add, masks, cat, stack, where", function()
  for _, k in ipairs(KINDS) do
    local W = function(v) return wrap(v, k.bits) end
    local hi = (1 << (k.bits - 1)) - 1
    local x = torch.tensor({ { 1, -2, 3 }, { hi, -hi - 1, 0 } }, { dtype = k.dt })
    T.eq(x[1]:tolist(), { hi, -hi - 1, 0 }, k.name .. " x[1]")
    T.eq(x[0][1]:item(), -2, k.name .. " item")
    T.eq(math.type(x[0][1]:item()), "integer", k.name .. " item is a Lua integer")
    T.eq(x[":, 1:"]:tolist(), { { -2, 3 }, { -hi - 1, 0 } }, k.name .. " slice")
    local y = x:clone()
    y[0][0] = 100
    y[1] = -7
    T.eq(y:tolist(), { { 100, -2, 3 }, { -7, -7, -7 } }, k.name .. " setitem")
    local ix = torch.tensor({ { 2, 0 }, { 1, 1 } })
    T.eq(x:gather(1, ix):tolist(), { { 3, 1 }, { -hi - 1, -hi - 1 } }, k.name .. " gather")
    T.eq(x:index_select(1, torch.tensor({ 2, 0 })):tolist(), { { 3, 1 }, { 0, hi } }, k.name .. " index_select")
    local z = torch.zeros(2, 3, { dtype = k.dt })
    T.eq(z:scatter(1, ix, x[":, :2"]):tolist(), { { -2, 0, 1 }, { 0, -hi - 1, 0 } }, k.name .. " scatter (last write wins)")
    T.eq(torch.zeros(2, 3, { dtype = k.dt }):scatter_add(1, torch.tensor({ { 0, 0, 0 }, { 2, 2, 2 } }), x):tolist(),
      { { 2, 0, 0 }, { 0, 0, W(hi - hi - 1) } }, k.name .. " scatter_add")
    local big = torch.full({ 2, 3 }, hi, { dtype = k.dt })
    T.eq(torch.zeros(1, 3, { dtype = k.dt }):index_add(0, torch.tensor({ 0, 0 }), big):tolist(), { { W(2 * hi), W(2 * hi), W(2 * hi) } },
      k.name .. " index_add wraps")
    T.eq(x:masked_fill(x:lt(0), 9):tolist(), { { 1, 9, 3 }, { hi, 9, 0 } }, k.name .. " masked_fill")
    T.eq(x[x:gt(0)]:tolist(), { 1, 3, hi }, k.name .. " x[mask]")
    T.eq(x:masked_select(x:lt(0)):tolist(), { -2, -hi - 1 }, k.name .. " masked_select")
    T.eq(x:nonzero():tolist(), { { 0, 0 }, { 0, 1 }, { 0, 2 }, { 1, 0 }, { 1, 1 } }, k.name .. " nonzero")
    local w = torch.where(x:gt(0), x, torch.full({}, -1, { dtype = k.dt }))
    T.eq({ w.dtype, w:tolist() }, { k.dt, { { 1, -1, 3 }, { hi, -1, -1 } } }, k.name .. " where")
    local c = torch.cat({ x, x[":1"] }, 0)
    T.eq({ c.dtype, c:tolist() }, { k.dt, { { 1, -2, 3 }, { hi, -hi - 1, 0 }, { 1, -2, 3 } } }, k.name .. " cat")
    local st = torch.stack({ x[0], x[1] }, 1)
    T.eq(st:tolist(), { { 1, hi }, { -2, -hi - 1 }, { 3, 0 } }, k.name .. " stack")
    T.eq(x:t():contiguous():tolist(), { { 1, hi }, { -2, -hi - 1 }, { 3, 0 } }, k.name .. " transpose copy")
    T.eq(x:flip(1):tolist(), { { 3, -2, 1 }, { 0, -hi - 1, hi } }, k.name .. " flip")
  end
  local u = torch.tensor({ 200, 1 }, { dtype = torch.uint8 })
  local c = torch.cat({ torch.tensor({ -1 }, { dtype = torch.int8 }), u })
  T.eq({ c.dtype, c:tolist() }, { torch.int16, { -1, 200, 1 } }, "cat int8 with uint8 gives int16")
end)

T.test("matmul wraps in the dtype", function()
  for _, k in ipairs(KINDS) do
    local A = { { 100, -3, 7, 120 }, { -128, 5, 0, 1 }, { 9, 9, -9, 90 } }
    local B = { { 2, -1 }, { 50, 3 }, { -4, 7 }, { 11, -120 } }
    local a, b = torch.tensor(A, { dtype = k.dt }), torch.tensor(B, { dtype = k.dt }):t():contiguous():t()
    local want = {}
    for i = 1, 3 do
      want[i] = {}
      for j = 1, 2 do
        local s = 0
        for p = 1, 4 do s = s + A[i][p] * B[p][j] end
        want[i][j] = wrap(s, k.bits)
      end
    end
    local r = a:matmul(b)
    T.eq({ r.dtype, r:tolist() }, { k.dt, want }, k.name .. " matmul")
  end
end)

T.test("casts to and from every dtype", function()
  local v8 = { -128, -1, 0, 1, 127 }
  local x = torch.tensor(v8, { dtype = torch.int8 })
  T.eq(x:short():tolist(), v8, "int8 -> int16")
  T.eq(x:long():tolist(), v8, "int8 -> int64")
  T.eq(x:float():tolist(), { -128.0, -1.0, 0.0, 1.0, 127.0 }, "int8 -> float32")
  T.eq(x:half():tolist(), { -128.0, -1.0, 0.0, 1.0, 127.0 }, "int8 -> float16")
  T.eq(x:byte():tolist(), { 128, 255, 0, 1, 127 }, "int8 -> uint8 wraps")
  T.eq(x:bool():tolist(), { true, true, false, true, true }, "int8 -> bool")
  T.eq(torch.tensor({ 200, 255, 127 }, { dtype = torch.uint8 }):char():tolist(), { -56, -1, 127 }, "uint8 -> int8 wraps")
  T.eq(torch.tensor({ 300, -129, 32767, -32768 }, { dtype = torch.int16 }):char():tolist(), { 44, 127, -1, 0 }, "int16 -> int8 wraps")
  T.eq(torch.tensor({ 70000, -32769, 65535 }):short():tolist(), { 4464, 32767, -1 }, "int64 -> int16 wraps")
  T.eq(torch.tensor({ 1.7, -2.9, 126.99, -0.5 }):char():tolist(), { 1, -2, 126, 0 }, "float32 -> int8 truncates toward zero")
  T.eq(torch.tensor({ 1000.5, -31000.75 }, { dtype = torch.float64 }):short():tolist(), { 1000, -31000 }, "float64 -> int16")
  T.eq(torch.tensor({ true, false }):short():tolist(), { 1, 0 }, "bool -> int16")
  T.eq(torch.tensor({ -300, 300 }, { dtype = torch.int16 }):to(torch.bfloat16):tolist(), { -300.0, 300.0 }, "int16 -> bfloat16")
  local nc = torch.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = torch.int16 }):t()
  T.eq(nc:char():tolist(), { { 1, 3 }, { 2, 4 } }, "a transposed int16 -> int8")
end)

T.test("creation", function()
  for _, k in ipairs(KINDS) do
    local lo, hi = -(1 << (k.bits - 1)), (1 << (k.bits - 1)) - 1
    T.eq(torch.zeros(2, 2, { dtype = k.dt }):tolist(), { { 0, 0 }, { 0, 0 } }, k.name .. " zeros")
    T.eq(torch.ones(3, { dtype = k.dt }):tolist(), { 1, 1, 1 }, k.name .. " ones")
    T.eq(torch.full({ 2 }, lo, { dtype = k.dt }):tolist(), { lo, lo }, k.name .. " full at the minimum")
    T.eq(torch.full({ 2 }, hi, { dtype = k.dt }).dtype, k.dt, k.name .. " full dtype")
    T.eq(torch.arange(-5, 10, 4, { dtype = k.dt }):tolist(), { -5, -1, 3, 7 }, k.name .. " arange")
    T.eq(torch.linspace(0, 10, 5, { dtype = k.dt }):tolist(), { 0, 2, 5, 7, 10 }, k.name .. " linspace")
    T.eq(torch.tensor({ { lo, hi }, { -1, 0 } }, { dtype = k.dt }):tolist(), { { lo, hi }, { -1, 0 } }, k.name .. " from a Lua table")
    T.eq(torch.zeros_like(torch.ones(2, { dtype = k.dt })).dtype, k.dt, k.name .. " zeros_like")
    T.eq(torch.empty(3, { dtype = k.dt }):fill_(-3):tolist(), { -3, -3, -3 }, k.name .. " empty + fill_")
    torch.manual_seed(0)
    local r = torch.randint(lo, hi + 1, { 2000 }, { dtype = k.dt })
    T.eq(r.dtype, k.dt, k.name .. " randint dtype")
    T.check(r:min():item() >= lo and r:max():item() <= hi and r:min():item() < 0 and r:max():item() > 0, k.name .. " randint range")
    local rr = torch.randint(-3, 4, { 500 }, { dtype = k.dt })
    T.check(rr:min():item() == -3 and rr:max():item() == 3, k.name .. " randint(-3, 4)")
    T.raises(function() torch.full({ 2 }, hi + 1, { dtype = k.dt }) end,
      "~value cannot be converted to type " .. k.name .. " without overflow", k.name .. " full overflow")
    T.raises(function() torch.zeros(2, { dtype = k.dt }):fill_(lo - 1) end,
      "~value cannot be converted to type " .. k.name .. "_t without overflow", k.name .. " fill_ overflow")
    T.raises(function() torch.randint(0, hi + 2, { 2 }, { dtype = k.dt }) end, "~does not fit in dtype " .. k.name, k.name .. " randint range")
  end
end)

T.test("printing", function()
  T.eq(tostring(torch.tensor({ 1, -2, 100 }, { dtype = torch.int8 })), "tensor([  1,  -2, 100], dtype=torch.int8)", "int8")
  T.eq(tostring(torch.tensor({ { -32768, 5 }, { 7, 32767 } }, { dtype = torch.int16 })),
    "tensor([[-32768,      5],\n        [     7,  32767]], dtype=torch.int16)", "int16 2-D")
  T.eq(tostring(torch.tensor(5, { dtype = torch.int16 })), "tensor(5, dtype=torch.int16)", "0-dim")
  T.eq(tostring(torch.zeros(0, { dtype = torch.int8 })), "tensor([], dtype=torch.int8)", "empty")
  T.eq(tostring(torch.int8), "torch.int8", "dtype")
end)

T.test("torch.save / torch.load round trip", function()
  local p = os.tmpname()
  local c = torch.tensor({ { -128, 127, 0 }, { 5, -6, 7 } }, { dtype = torch.int8 })
  local s = torch.tensor({ -32768, 32767, 300 }, { dtype = torch.int16 })
  torch.save({ c = c:t(), s = s, k = torch.int16 }, p)
  local f = assert(io.open(p, "rb"))
  local bytes = f:read("a")
  f:close()
  T.check(bytes:find('"dtype":"I8"', 1, true) ~= nil, "the file names I8")
  T.check(bytes:find('"dtype":"I16"', 1, true) ~= nil, "the file names I16")
  local back = torch.load(p)
  os.remove(p)
  T.eq({ back.c.dtype, back.c:tolist() }, { torch.int8, c:t():tolist() }, "int8 back (a transposed one saved)")
  T.eq({ back.s.dtype, back.s:tolist() }, { torch.int16, { -32768, 32767, 300 } }, "int16 back")
  T.eq(back.k, torch.int16, "a dtype value back")
end)

T.test("ops that refuse integer inputs say so", function()
  for _, k in ipairs(KINDS) do
    local x = torch.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = k.dt })
    T.raises(function() return x:mean() end, "~Input dtype must be either a floating point or complex dtype. Got: " .. k.scalar,
      k.name .. " mean")
    T.raises(function() return x:softmax(1) end, "~\"softmax_lastdim_kernel_impl\" not implemented for '" .. k.scalar .. "'",
      k.name .. " softmax")
    T.raises(function() return F.conv2d(x:view(1, 1, 2, 2), x:view(1, 1, 2, 2)) end, "~\"conv2d\" not implemented for '" .. k.scalar .. "'",
      k.name .. " conv2d")
    T.raises(function() return torch.arange(5)[torch.tensor({ 1 }, { dtype = k.dt })] end,
      "~tensors used as indices must be long, int, byte or bool tensors", k.name .. " as an index")
    T.raises(function() return F.nll_loss(torch.randn(2, 3), torch.tensor({ 0, 1 }, { dtype = k.dt })) end,
      "~expected scalar type Long but found " .. k.scalar, k.name .. " nll_loss target")
    T.raises(function() x:add_(1.5) end, "~result type Float can't be cast to the desired output type " .. k.scalar, k.name .. " add_(1.5)")
    T.raises(function() x:div_(x) end, "~result type Float can't be cast to the desired output type " .. k.scalar, k.name .. " div_")
    T.raises(function() x:requires_grad_() end, "~only Tensors of floating point", k.name .. " requires_grad")
    T.raises(function() return x:std() end, "~std and var only support floating point and complex dtypes", k.name .. " std")
    T.raises(function() return x:clamp(-(1 << k.bits), 1) end, "~value cannot be converted to type " .. k.name .. "_t without overflow",
      k.name .. " clamp bound out of range")
  end
end)
