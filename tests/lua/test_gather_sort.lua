-- gather / scatter / scatter_add and sort / argsort / topk / kthvalue / median / msort
-- against plain Lua loops over tolist() values; errors; gradients; a CUDA section.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)

torch.manual_seed(7)

-- element of a nested list at 0-based coords c
local function at(l, c) for _, i in ipairs(c) do l = l[i + 1] end return l end
local function set(l, c, v) for k = 1, #c - 1 do l = l[c[k] + 1] end l[c[#c] + 1] = v end
-- visit every 0-based coordinate of shape
local function each(shape, f)
  local c = {}
  local function rec(d)
    if d > #shape then f({ table.unpack(c) }) return end
    for i = 0, shape[d] - 1 do c[d] = i; rec(d + 1) end
  end
  rec(1)
end
local function copy(l) if type(l) ~= "table" then return l end local r = {} for i, v in ipairs(l) do r[i] = copy(v) end return r end

local function ref_gather(x, dim, idx, ishape)
  local out = copy(idx)
  each(ishape, function(c)
    local src = { table.unpack(c) }
    src[dim + 1] = at(idx, c)
    set(out, c, at(x, src))
  end)
  return out
end

local function rand_index(shape, hi)
  return torch.randint(0, hi, shape, { dtype = torch.int64 })
end

T.test("gather", function()
  -- 3-D, every dim, negative dims, non-contiguous input
  local base = torch.randn(5, 4, 6)
  local x = base:permute(2, 0, 1) -- [6, 5, 4], not contiguous
  local xl = x:tolist()
  for dim = -3, 2 do
    local d = dim % 3
    local ishape = { 3, 2, 4 }
    ishape[d + 1] = 7
    local idx = rand_index(ishape, x:size(d))
    T.eq(x:gather(dim, idx):tolist(), ref_gather(xl, d, idx:tolist(), ishape), "gather 3-D dim " .. dim)
  end
  -- 1-D with duplicates
  local v = torch.tensor({ 10, 20, 30 })
  T.eq(torch.gather(v, 0, torch.tensor({ 2, 2, 0, 1, 2 })):tolist(), { 30, 30, 10, 20, 30 }, "gather 1-D")
  -- non-contiguous index
  local idx = rand_index({ 4, 6 }, 5):t()
  local y = torch.randn(6, 5)
  T.eq(y:gather(1, idx):tolist(), ref_gather(y:tolist(), 1, idx:tolist(), { 6, 4 }), "gather strided index")
  T.eq(y:gather(1, torch.zeros(0, 2, { dtype = torch.int64 })):size():totable(), { 0, 2 }, "gather empty index")
  T.eq(torch.tensor(5.0):gather(0, torch.tensor(0)):item(), 5.0, "gather 0-dim")
end)

T.test("gather errors", function()
  local x = torch.randn(3, 4)
  T.raises(function() return x:gather(1, torch.tensor({ { 0 } }, { dtype = torch.int32 })) end, "gather(): Expected dtype int64 for index")
  T.raises(function() return x:gather(1, torch.tensor({ 0 })) end, "Index tensor must have the same number of dimensions as input tensor")
  T.raises(function() return x:gather(1, torch.zeros(4, 2, { dtype = torch.int64 })) end,
    "Size does not match at dimension 0 expected index [4, 2] to be no larger than self [3, 4] apart from dimension 1")
  T.raises(function() return x:gather(1, torch.tensor({ { 4 } })) end, "gather(): index 4 is out of bounds for dimension 1 with size 4")
  T.raises(function() return x:gather(1, torch.tensor({ { -1 } })) end, "gather(): index -1 is out of bounds for dimension 1 with size 4")
  T.raises(function() return x:gather(2, torch.tensor({ { 0 } })) end, "Dimension out of range (expected to be in range of [-2, 1], but got 2)")
end)

local function ref_scatter(self, dim, idx, src, ishape, add)
  local out = copy(self)
  each(ishape, function(c)
    local dst = { table.unpack(c) }
    dst[dim + 1] = at(idx, c)
    local v = type(src) == "table" and at(src, c) or src
    set(out, dst, add and at(out, dst) + v or v)
  end)
  return out
end

T.test("scatter / scatter_add", function()
  local self = torch.randn(4, 5, 3)
  local src = torch.randn(6, 5, 8):narrow(2, 1, 6) -- non-contiguous, larger than index
  for dim = -3, 2 do
    local d = dim % 3
    local ishape = { 3, 4, 2 }
    ishape[d + 1] = 5
    local idx = rand_index(ishape, self:size(d)) -- with duplicates
    local got = self:scatter_add(dim, idx, src)
    T.near(got:tolist(), ref_scatter(self:tolist(), d, idx:tolist(), src:tolist(), ishape, true), 1e-5, "scatter_add dim " .. dim)
    local s2 = self:clone(); s2:scatter_add_(dim, idx, src)
    T.near(s2:tolist(), got:tolist(), 1e-6, "scatter_add_")
    -- scatter without duplicates: a permutation per line
    local perm = torch.argsort(torch.rand(table.unpack(self:size():totable())), d):narrow(d, 0, 2)
    local pshape = self:size():totable(); pshape[d + 1] = 2
    local sc = torch.scatter(self, dim, perm, src)
    T.eq(sc:tolist(), ref_scatter(self:tolist(), d, perm:tolist(), src:tolist(), pshape, false), "scatter dim " .. dim)
  end
  -- duplicates in scatter: any of the written values
  local z = torch.zeros(3):scatter(0, torch.tensor({ 1, 1, 1 }), torch.tensor({ 5.0, 6.0, 7.0 })):tolist()
  T.check(z[1] == 0 and z[3] == 0 and (z[2] == 5 or z[2] == 6 or z[2] == 7), "scatter duplicates: one value lands")
  -- value form, in place, integer dtype, non-contiguous self
  local m = torch.zeros(4, 3, { dtype = torch.int64 }):t()
  m:scatter_(1, torch.tensor({ { 0 }, { 3 }, { 1 } }), 9)
  T.eq(m:tolist(), { { 9, 0, 0, 0 }, { 0, 0, 0, 9 }, { 0, 9, 0, 0 } }, "scatter_ value on a transposed int64 tensor")
  local oh = torch.zeros(3, 4):scatter(1, torch.tensor({ { 2 }, { 0 }, { 3 } }), 1.0)
  T.eq(oh:tolist(), { { 0.0, 0.0, 1.0, 0.0 }, { 1.0, 0.0, 0.0, 0.0 }, { 0.0, 0.0, 0.0, 1.0 } }, "one-hot scatter")
  T.raises(function() return torch.zeros(3):scatter_add(0, torch.tensor({ 0 }), torch.ones(1, { dtype = torch.float64 })) end,
    "scatter_add(): Expected self.dtype to be equal to src.dtype")
  T.raises(function() return torch.zeros(3):scatter(0, torch.tensor({ 3 }), 1.0) end,
    "scatter(): index 3 is out of bounds for dimension 0 with size 3")
  T.raises(function() return torch.zeros(2, 2):scatter_add(0, torch.zeros(2, 3, { dtype = torch.int64 }), torch.ones(2, 2)) end,
    "Expected index [2, 3] to be no larger than self [2, 2] apart from dimension 0 and to be no larger size than src [2, 2]")
end)

-- plain reference sort of a list: stable, NaN largest
local function ref_sort(l, desc)
  local ix = {}
  for i = 1, #l do ix[i] = i end
  local function key_lt(a, b)
    if type(a) == "boolean" then a, b = a and 1 or 0, b and 1 or 0 end
    local an, bn = a ~= a, b ~= b
    if an or bn then return not an and bn end
    return a < b
  end
  table.sort(ix, function(i, j)
    local a, b = l[i], l[j]
    if desc then if key_lt(b, a) then return true elseif key_lt(a, b) then return false end
    else if key_lt(a, b) then return true elseif key_lt(b, a) then return false end end
    return i < j
  end)
  local vals, idx = {}, {}
  for k, i in ipairs(ix) do vals[k] = l[i]; idx[k] = i - 1 end
  return vals, idx
end

local function same_nan(a, b)
  if type(a) == "table" then
    if #a ~= #b then return false end
    for i = 1, #a do if not same_nan(a[i], b[i]) then return false end end
    return true
  end
  return a == b or (a ~= a and b ~= b)
end

T.test("sort every dtype, ties stable, NaN last", function()
  local data = { 3, 1, 2, 0, 1, 3, 2, 2, 0, 1, 5, 4 }
  for _, dt in ipairs { torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8, torch.bool } do
    local x = torch.tensor(data):to(dt):view(3, 4):t() -- [4, 3], non-contiguous
    local xl = x:tolist()
    for _, desc in ipairs { false, true } do
      local v, i = torch.sort(x, 0, desc)
      local ok = true
      for col = 1, 3 do
        local line = {}
        for r = 1, 4 do line[r] = xl[r][col] end
        local rv, ri = ref_sort(line, desc)
        for r = 1, 4 do ok = ok and v:tolist()[r][col] == rv[r] and i:tolist()[r][col] == ri[r] end
      end
      T.check(ok, "sort dim 0 " .. tostring(x.dtype) .. (desc and " descending" or ""))
    end
  end
  local nan = 0 / 0
  local l = { 2.0, nan, -1.0, math.huge, nan, -math.huge, 2.0 }
  local v, i = torch.tensor(l):sort({ descending = true, stable = true })
  local rv, ri = ref_sort(l, true)
  T.check(same_nan(v:tolist(), rv), "NaN first descending")
  T.eq(i:tolist(), ri, "descending indices")
  v, i = torch.sort(torch.tensor(l), -1)
  rv, ri = ref_sort(l, false)
  T.check(same_nan(v:tolist(), rv), "NaN last ascending")
  T.eq(i:tolist(), ri, "ascending indices")
  -- int64 beyond 2^53 stays exact
  local big = torch.tensor({ (1 << 62) + 1, (1 << 62), -5 })
  T.eq(big:argsort():tolist(), { 2, 1, 0 }, "argsort large int64")
  T.eq(torch.msort(torch.tensor({ { 3, 1 }, { 2, 5 } })):tolist(), { { 2, 1 }, { 3, 5 } }, "msort")
  local s0, i0 = torch.sort(torch.tensor(4.0))
  T.eq({ s0:item(), i0:item(), i0:dim() }, { 4.0, 0, 0 }, "sort 0-dim")
  -- every row of a 3-D tensor along a middle dim
  local x3 = torch.randn(3, 5, 2)
  local sv = torch.argsort(x3, 1, true)
  local ok = true
  local xl3, il = x3:tolist(), sv:tolist()
  for a = 1, 3 do for c = 1, 2 do
    local line = {}
    for b = 1, 5 do line[b] = xl3[a][b][c] end
    local _, ri3 = ref_sort(line, true)
    for b = 1, 5 do ok = ok and il[a][b][c] == ri3[b] end
  end end
  T.check(ok, "argsort 3-D dim 1 descending")
  T.raises(function() return torch.sort(torch.randn(2, 2), 2) end, "Dimension out of range (expected to be in range of [-2, 1], but got 2)")
end)

T.test("topk / kthvalue / median", function()
  local l = { 4, 1, 7, 3, 7, 0, 2 }
  local x = torch.tensor(l)
  local v, i = x:topk(3)
  T.eq({ v:tolist(), i:tolist() }, { { 7, 7, 4 }, { 2, 4, 0 } }, "topk largest")
  v, i = torch.topk(x, 2, { largest = false })
  T.eq({ v:tolist(), i:tolist() }, { { 0, 1 }, { 5, 1 } }, "topk smallest")
  local m = torch.randn(4, 6)
  local tv = m:topk(2, 0)
  local ml = m:tolist()
  local ok = true
  for c = 1, 6 do
    local line = {}
    for r = 1, 4 do line[r] = ml[r][c] end
    local rv = ref_sort(line, true)
    ok = ok and tv:tolist()[1][c] == rv[1] and tv:tolist()[2][c] == rv[2]
  end
  T.check(ok, "topk dim 0")
  T.raises(function() return x:topk(8) end, "selected index k out of range")
  v, i = x:kthvalue(3)
  T.eq({ v:item(), i:item() }, { 2, 6 }, "kthvalue")
  v, i = torch.kthvalue(torch.tensor({ { 5, 1, 3 }, { 2, 9, 4 } }), 2, 1, true)
  T.eq({ v:tolist(), i:tolist() }, { { { 3 }, { 4 } }, { { 2 }, { 2 } } }, "kthvalue keepdim")
  T.raises(function() return x:kthvalue(0) end, "kthvalue(): selected number k out of range for dimension 0")
  T.eq(torch.median(torch.tensor({ 4.0, 1.0, 3.0, 2.0 })):item(), 2.0, "median lower of even count")
  T.eq(torch.tensor({ { 4, 1 }, { 3, 2 } }):median():item(), 2, "median of all")
  local mv, mi = torch.tensor({ { 5.0, 0 / 0, 1.0 }, { 3.0, 1.0, 2.0 } }):median(1)
  local mvl = mv:tolist()
  T.check(mvl[1] ~= mvl[1] and mvl[2] == 2.0, "median NaN propagates")
  T.eq(mi:tolist(), { 1, 2 }, "median indices")
  local nv = torch.tensor({ 1.0, 0 / 0, 2.0 }):median():item()
  T.check(nv ~= nv, "median of all with NaN")
  T.raises(function() return torch.tensor({}):median() end, "median() input tensor cannot be empty")
end)

T.test("gradients", function()
  local x = torch.randn(4, 5, { dtype = torch.float64 })
  local idx = rand_index({ 3, 5 }, 4)
  gradcheck("gather", function(a) return a:gather(0, idx) end, { x })
  gradcheck("gather non-contiguous", function(a) return a:t():gather(1, idx:t()) end, { x })
  local src = torch.randn(3, 5, { dtype = torch.float64 })
  gradcheck("scatter_add", function(a, b) return a:scatter_add(0, idx, b) end, { x, src })
  local perm = torch.argsort(torch.rand(4, 5), 0):narrow(0, 0, 3)
  gradcheck("scatter", function(a, b) return a:scatter(0, perm, b) end, { x, src })
  gradcheck("sort", function(a) return (torch.sort(a, 1, true)) end, { x })
  gradcheck("topk", function(a) return (a:topk(2, 0)) end, { x })
  gradcheck("median dim", function(a) return (a:median(1)) end, { x })
  gradcheck("kthvalue", function(a) return (a:kthvalue(2, 0)) end, { x })
  -- scatter's gradient to self is zero at the written positions
  local s = torch.randn(2, 3, { requires_grad = true })
  s:scatter(1, torch.tensor({ { 0 }, { 2 } }), 0.0):sum():backward()
  T.eq(s.grad:tolist(), { { 0.0, 1.0, 1.0 }, { 1.0, 1.0, 0.0 } }, "scatter grad to self")
end)

T.test("cuda", function()
  if not torch.cuda.is_available() then return T.skip("no CUDA device", 6) end
  local x = torch.randn(5, 7)
  local idx = rand_index({ 5, 3 }, 7)
  local xc, ic = x:cuda(), idx:cuda()
  T.eq(xc:gather(1, ic):cpu():tolist(), x:gather(1, idx):tolist(), "cuda gather")
  local src = torch.randn(5, 3)
  T.near(torch.zeros(5, 7):cuda():scatter_add(1, ic, src:cuda()):cpu():tolist(), torch.zeros(5, 7):scatter_add(1, idx, src):tolist(), 1e-5, "cuda scatter_add")
  T.eq(torch.zeros(5, 7):cuda():scatter(1, ic:narrow(1, 0, 1), 1.0):cpu():tolist(), torch.zeros(5, 7):scatter(1, idx:narrow(1, 0, 1), 1.0):tolist(), "cuda scatter value")
  local v, i = xc:sort(1, true)
  local rv, ri = x:sort(1, true)
  T.eq({ v:cpu():tolist(), i:cpu():tolist() }, { rv:tolist(), ri:tolist() }, "cuda sort")
  T.check(i.is_cuda and v.is_cuda, "cuda sort stays on the device")
  local a = torch.randn(6, { device = "cuda", requires_grad = true })
  local top = a:topk(2); top:sum():backward()
  T.eq(a.grad:sum():item(), 2.0, "cuda topk grad")
end)
