-- Reductions with every form of dims and keepdim, against plain Lua on the
-- values of the same tensor (each output element from the list of its inputs).
local T = ...

-- Row-major flat values of a nested list.
local function flatten(v, out)
  out = out or {}
  if type(v) ~= "table" then out[#out + 1] = v; return out end
  for _, e in ipairs(v) do flatten(e, out) end
  return out
end

-- Reduce flat values of `shape` over the 0-based dims in `dims` (nil: all) with f(list);
-- returns the nested result (keepdim false) or a number for a full reduction.
local function ref(flat, shape, dims, f)
  local reduced = {}
  if dims == nil then for d = 0, #shape - 1 do reduced[d] = true end
  else for _, d in ipairs(dims) do reduced[d % #shape] = true end end
  local oshape = {}
  for d = 0, #shape - 1 do if not reduced[d] then oshape[#oshape + 1] = shape[d + 1] end end
  local groups, n = {}, #flat
  local idx = {}
  for d = 1, #shape do idx[d] = 0 end
  for i = 1, n do
    local key = 0
    for d = 1, #shape do
      if not reduced[d - 1] then key = key * shape[d] + idx[d] end
    end
    groups[key] = groups[key] or {}
    table.insert(groups[key], flat[i])
    for d = #shape, 1, -1 do
      idx[d] = idx[d] + 1
      if idx[d] < shape[d] then break end
      idx[d] = 0
    end
  end
  if #oshape == 0 then return f(groups[0]) end
  local function build(d, base)
    local out = {}
    for i = 0, oshape[d] - 1 do
      local k = base * oshape[d] + i
      if d == #oshape then out[i + 1] = f(groups[k]) else out[i + 1] = build(d + 1, k) end
    end
    return out
  end
  return build(1, 0)
end

local function sum(l) local s = 0 for _, v in ipairs(l) do s = s + v end return s end
local function mean(l) return sum(l) / #l end
local function prod(l) local p = 1 for _, v in ipairs(l) do p = p * v end return p end
local function max(l) return math.max(table.unpack(l)) end
local function min(l) return math.min(table.unpack(l)) end
local function argmax(l) local b = 1 for i, v in ipairs(l) do if v > l[b] then b = i end end return b - 1 end
local function argmin(l) local b = 1 for i, v in ipairs(l) do if v < l[b] then b = i end end return b - 1 end
local function var(c) return function(l)
  local m, s = mean(l), 0
  for _, v in ipairs(l) do s = s + (v - m) ^ 2 end
  return s / (#l - c)
end end
local function std(c) local v = var(c) return function(l) return math.sqrt(v(l)) end end
local function pnorm(p) return function(l)
  local s = 0
  for _, v in ipairs(l) do s = s + math.abs(v) ^ p end
  return s ^ (1 / p)
end end
local function all(l) for _, v in ipairs(l) do if not v then return false end end return true end
local function any(l) for _, v in ipairs(l) do if v then return true end end return false end

torch.manual_seed(3)
local shape = {2, 3, 4}
local x = torch.randn(2, 3, 4)
local flat = flatten(x:tolist())
local xt = x:permute(2, 0, 1) -- a non-contiguous input of shape 4x2x3
local flat_t = flatten(xt:tolist())

T.test("sum mean prod over every dim form", function()
  for _, case in ipairs({{"sum", sum}, {"mean", mean}, {"prod", prod}}) do
    local name, f = case[1], case[2]
    T.near(x[name](x):item(), ref(flat, shape, nil, f), 1e-5, name .. "()")
    for d = -3, 2 do
      T.near(x[name](x, d):tolist(), ref(flat, shape, {d}, f), 1e-5, name .. "(" .. d .. ")")
    end
    T.near(x[name](x, {0, 2}):tolist(), ref(flat, shape, {0, 2}, f), 1e-5, name .. "({0, 2})")
    T.near(x[name](x, {dim = 1}):tolist(), ref(flat, shape, {1}, f), 1e-5, name .. "{dim=1}")
    T.near(torch[name](x, 1):tolist(), ref(flat, shape, {1}, f), 1e-5, "torch." .. name)
    T.near(xt[name](xt, 2):tolist(), ref(flat_t, {4, 2, 3}, {2}, f), 1e-5, name .. " of a permuted tensor")
    T.eq(x[name](x, 1, true).shape:totable(), {2, 1, 4}, name .. " keepdim positional")
    T.eq(x[name](x, {0, 2}, {keepdim = true}).shape:totable(), {1, 3, 1}, name .. " {keepdim=true}")
    T.eq(x[name](x, {dim = 2, keepdim = true}).shape:totable(), {2, 3, 1}, name .. " {dim=, keepdim=}")
    T.eq(x[name](x):dim(), 0, name .. "() is 0-dim")
  end
  local i = torch.tensor({{1, 2}, {3, 4}})
  T.check(i:sum().dtype == torch.int64, "sum of ints is int64")
  T.eq(i:sum(0):tolist(), {4, 6}, "int sum values")
  T.check(i:sum({dtype = torch.float64}).dtype == torch.float64, "sum {dtype=}")
  T.check(torch.tensor({true, true, false}):sum():item() == 2, "sum of bools counts")
  T.near(i:mean({dtype = torch.float32}):item(), 2.5, 0, "mean of ints with dtype")
  T.raises(function() x:sum(3) end, "bad argument #1 to 'sum' (dimension out of range (expected to be in range of [-3, 2], but got 3))")
  T.raises(function() x:sum({0, 0}) end, "bad argument #1 to 'sum' (dim 0 appears multiple times in the list of dims)")
  T.raises(function() x:sum(0, {keep = true}) end, "bad argument #2 to 'sum' (unknown keyword 'keep')")
  T.raises(function() x:mean(0, 1) end, "bad argument #2 to 'mean' (boolean expected, got number)")
end)

T.test("max min amax amin argmax argmin", function()
  T.near(x:max():item(), ref(flat, shape, nil, max), 0, "max()")
  T.near(x:min():item(), ref(flat, shape, nil, min), 0, "min()")
  T.eq(x:max():dim(), 0, "max() is 0-dim")
  for d = -3, 2 do
    local v, i = x:max(d)
    T.near(v:tolist(), ref(flat, shape, {d}, max), 0, "max(" .. d .. ") values")
    T.eq(i:tolist(), ref(flat, shape, {d}, argmax), "max(" .. d .. ") indices")
    T.check(i.dtype == torch.int64, "indices are int64")
    local v2, i2 = x:min(d)
    T.near(v2:tolist(), ref(flat, shape, {d}, min), 0, "min(" .. d .. ") values")
    T.eq(i2:tolist(), ref(flat, shape, {d}, argmin), "min(" .. d .. ") indices")
    T.eq(x:argmax(d):tolist(), ref(flat, shape, {d}, argmax), "argmax(" .. d .. ")")
    T.eq(x:argmin(d):tolist(), ref(flat, shape, {d}, argmin), "argmin(" .. d .. ")")
    T.near(x:amax(d):tolist(), ref(flat, shape, {d}, max), 0, "amax(" .. d .. ")")
    T.near(x:amin(d):tolist(), ref(flat, shape, {d}, min), 0, "amin(" .. d .. ")")
  end
  local v, i = x:max(1, true)
  T.eq(v.shape:totable(), {2, 1, 4}, "max keepdim values")
  T.eq(i.shape:totable(), {2, 1, 4}, "max keepdim indices")
  local v3, i3 = torch.max(x, {dim = -1, keepdim = true})
  T.eq(v3.shape:totable(), {2, 3, 1}, "torch.max {dim=, keepdim=}")
  T.eq(flatten(i3:tolist()), flatten(ref(flat, shape, {2}, argmax)), "torch.max indices")
  T.eq(x:argmax():item(), ref(flat, {24}, nil, argmax), "argmax() over the flat tensor")
  T.eq(x:argmax():dim(), 0, "argmax() is 0-dim")
  T.eq(x:argmax(1, true).shape:totable(), {2, 1, 4}, "argmax keepdim")
  T.near(x:amax({0, 2}):tolist(), ref(flat, shape, {0, 2}, max), 0, "amax over two dims")
  T.near(xt:amin(0):tolist(), ref(flat_t, {4, 2, 3}, {0}, min), 0, "amin of a permuted tensor")
  T.raises(function() x:max({0, 1}) end, "bad argument #1 to 'max' (one dim expected, got a table)")
end)

T.test("var std", function()
  T.near(x:var():item(), ref(flat, shape, nil, var(1)), 1e-5, "var() unbiased")
  T.near(x:std():item(), ref(flat, shape, nil, std(1)), 1e-5, "std()")
  T.near(x:var(false):item(), ref(flat, shape, nil, var(0)), 1e-5, "var(false) biased")
  for d = 0, 2 do
    T.near(x:var(d):tolist(), ref(flat, shape, {d}, var(1)), 1e-5, "var(" .. d .. ")")
    T.near(x:std(d):tolist(), ref(flat, shape, {d}, std(1)), 1e-5, "std(" .. d .. ")")
  end
  T.near(x:var(1, false):tolist(), ref(flat, shape, {1}, var(0)), 1e-5, "var(dim, unbiased)")
  T.eq(x:var(1, true, true).shape:totable(), {2, 1, 4}, "var(dim, unbiased, keepdim)")
  T.near(x:var({0, 1}, {unbiased = false}):tolist(), ref(flat, shape, {0, 1}, var(0)), 1e-5, "var {unbiased=false}")
  T.near(x:std(2, {correction = 2}):tolist(), ref(flat, shape, {2}, std(2)), 1e-5, "std {correction=2}")
  T.near(torch.std(x, {dim = 0, keepdim = true}):tolist()[1], ref(flat, shape, {0}, std(1)), 1e-5, "torch.std kwargs")
  T.raises(function() x:var({ddof = 1}) end, "bad argument #1 to 'var' (unknown keyword 'ddof')")
end)

T.test("norm", function()
  T.near(x:norm():item(), ref(flat, shape, nil, pnorm(2)), 1e-5, "norm()")
  T.near(x:norm(1):item(), ref(flat, shape, nil, pnorm(1)), 1e-5, "norm(1)")
  T.near(x:norm("fro"):item(), ref(flat, shape, nil, pnorm(2)), 1e-5, "norm('fro')")
  T.near(x:norm(math.huge):item(), ref(flat, shape, nil, function(l)
    local m = 0 for _, v in ipairs(l) do m = math.max(m, math.abs(v)) end return m end), 1e-6, "norm(inf)")
  T.near(x:norm(2, 1):tolist(), ref(flat, shape, {1}, pnorm(2)), 1e-5, "norm(2, dim)")
  T.near(x:norm(3, {0, 2}):tolist(), ref(flat, shape, {0, 2}, pnorm(3)), 1e-5, "norm(3, dims)")
  T.eq(x:norm(2, 1, true).shape:totable(), {2, 1, 4}, "norm keepdim")
  T.near(x:norm({p = 1, dim = 2}):tolist(), ref(flat, shape, {2}, pnorm(1)), 1e-5, "norm kwargs")
end)

T.test("all any", function()
  local b = x:gt(0)
  local bflat = flatten(b:tolist())
  T.eq(b:all():item(), ref(bflat, shape, nil, all), "all()")
  T.eq(b:any():item(), ref(bflat, shape, nil, any), "any()")
  for d = 0, 2 do
    T.eq(b:all(d):tolist(), ref(bflat, shape, {d}, all), "all(" .. d .. ")")
    T.eq(b:any(d):tolist(), ref(bflat, shape, {d}, any), "any(" .. d .. ")")
  end
  T.check(b:all().dtype == torch.bool, "all gives bool")
  T.eq(b:any(1, true).shape:totable(), {2, 1, 4}, "any keepdim")
  T.eq(torch.ones(3):all():item(), true, "all of a float tensor")
end)

T.test("edge cases", function()
  local s = torch.tensor(3.5)
  T.eq(s:sum():item(), 3.5, "sum of a 0-dim tensor")
  T.eq(s:sum(0):item(), 3.5, "dim 0 of a 0-dim tensor")
  T.eq(torch.zeros(0):sum():item(), 0.0, "sum of an empty tensor")
  T.eq(torch.zeros(2, 0):sum(1):tolist(), {0.0, 0.0}, "sum over an empty dim")
  T.eq(torch.ones(2, 3):prod(1):tolist(), {1.0, 1.0}, "prod of ones")
end)
