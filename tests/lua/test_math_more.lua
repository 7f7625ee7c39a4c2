-- torch_math_more.lua against Lua's math library and loops over plain lists; gradients by
-- float64 central differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }
local function map2(a, b, f) local o = {} for i = 1, #a do o[i] = f(a[i], b[i]) end return o end

T.test("elementwise against Lua's math", function()
  local ys = { 1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 2.0, -2.0, 0.5 }
  local xs = { 1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 0.0, 0.0, 3.0 }
  local y, x = torch.tensor(ys, f64), torch.tensor(xs, f64)
  T.near(torch.atan2(y, x):tolist(), map2(ys, xs, math.atan), 1e-15, "atan2")
  T.near(y:atan2(x):tolist(), map2(ys, xs, math.atan), 1e-15, "atan2 method")
  -- signed zeros, infinities and huge ratios, as C's atan2 (y / x would lose them)
  local zs, ws = { -0.0, 0.0, -0.0, 0.0, 1e300, 1.0, math.huge, -math.huge }, { -1.0, -1.0, -0.0, -0.0, 1e-300, math.huge, math.huge, -1.0 }
  local got = torch.atan2(torch.tensor(zs, f64), torch.tensor(ws, f64)):tolist()
  for i, want in ipairs(map2(zs, ws, math.atan)) do
    T.check(got[i] == want and 1 / got[i] == 1 / want, ("atan2(%g, %g) = %g, want %g"):format(zs[i], ws[i], got[i], want))
  end
  T.eq(torch.atan2(torch.tensor({ 1, 2 }), torch.tensor({ 3, 4 })).dtype, torch.float32, "integers give the default float dtype")
  local a = torch.tensor({ 1.0, -1.0 })
  a:atan2_(torch.tensor({ 1.0, 1.0 }))
  T.near(a:tolist(), { math.pi / 4, -math.pi / 4 }, 1e-7, "atan2_")
  T.raises(function() torch.atan2(torch.tensor({ 1 + torch.j }), torch.tensor({ 1.0 })) end, "~\"atan2\" not implemented for 'ComplexFloat'")
  T.near(torch.hypot(y, x):tolist(), map2(ys, xs, function(a, b) return math.sqrt(a * a + b * b) end), 1e-15, "hypot")
  T.near(torch.logaddexp(y, x):tolist(), map2(ys, xs, function(a, b) return math.log(math.exp(a) + math.exp(b)) end), 1e-15, "logaddexp")
  T.eq(torch.logaddexp(torch.tensor({ -math.huge }), torch.tensor({ -math.huge })):tolist(), { -math.huge }, "logaddexp(-inf, -inf)")
  local as, bs = { -7.5, 7.5, -3.0, 5.25 }, { 2.0, -2.0, 2.0, 1.5 }
  T.near(torch.fmod(torch.tensor(as, f64), torch.tensor(bs, f64)):tolist(), map2(as, bs, math.fmod), 1e-15, "fmod")
  T.eq(torch.fmod(torch.tensor({ -7, 7 }), 3):tolist(), { -1, 1 }, "fmod of integers stays integral")
  T.near(torch.logit(torch.tensor({ 0.25, 0.5 }, f64)):tolist(), { math.log(1 / 3), 0.0 }, 1e-15, "logit")
  T.near(torch.square(y):tolist(), map2(ys, ys, function(a) return a * a end), 0, "square")
  T.eq(torch.nan_to_num(torch.tensor({ 0 / 0, math.huge, -math.huge, 2.0 }), { nan = 1.0, posinf = 9.0 }):tolist(),
    { 1.0, 9.0, -torch.finfo(torch.float32).max, 2.0 }, "nan_to_num")
  local base = torch.ones(3, f64)
  T.near(torch.addcdiv(base, torch.tensor({ 1.0, 2.0, 3.0 }, f64), torch.tensor({ 2.0, 4.0, 6.0 }, f64), { value = 0.5 }):tolist(),
    { 1.25, 1.25, 1.25 }, 0, "addcdiv")
  base:addcmul_(torch.tensor({ 1.0, 2.0, 3.0 }, f64), torch.tensor({ 2.0, 2.0, 2.0 }, f64), { value = -1 })
  T.eq(base:tolist(), { -1.0, -3.0, -5.0 }, "addcmul_ in place")
  T.eq(torch.count_nonzero(torch.tensor({ { 0, 1, 2 }, { 0, 0, 3 } }), 1):tolist(), { 2, 1 }, "count_nonzero")
  T.eq(torch.finfo(torch.float32).eps, 2 ^ -23, "finfo eps")
  T.eq(torch.finfo(torch.float16).max, 65504.0, "finfo max")
  T.eq(torch.iinfo(torch.int64).min, math.mininteger, "iinfo")
  T.raises(function() torch.finfo(torch.int64) end, "~requires a floating point input type")
end)

T.test("cross, cdist, meshgrid, diff against loops", function()
  torch.manual_seed(91)
  local a, b = torch.randn(4, 3, f64), torch.randn(4, 3, f64)
  local c = torch.cross(a, b, 1)
  local al, bl = a:tolist(), b:tolist()
  local want = {}
  for i = 1, 4 do
    local u, v = al[i], bl[i]
    want[i] = { u[2] * v[3] - u[3] * v[2], u[3] * v[1] - u[1] * v[3], u[1] * v[2] - u[2] * v[1] }
  end
  T.near(c:tolist(), want, 1e-15, "cross")
  T.near(torch.linalg.cross(a, b):tolist(), want, 1e-15, "linalg.cross")
  for _, p in ipairs({ 1.0, 2.0, 3.0, math.huge }) do
    for _, rows in ipairs({ 5, 30 }) do
      local x1, x2 = torch.randn(rows, 4, f64), torch.randn(6, 4, f64)
      local l1, l2 = x1:tolist(), x2:tolist()
      local w = {}
      for i = 1, rows do
        w[i] = {}
        for j = 1, 6 do
          local s = 0
          for k = 1, 4 do
            local d = math.abs(l1[i][k] - l2[j][k])
            s = p == math.huge and math.max(s, d) or s + d ^ p
          end
          w[i][j] = p == math.huge and s or s ^ (1 / p)
        end
      end
      T.near(torch.cdist(x1, x2, p):tolist(), w, 1e-9, string.format("cdist p=%s, %d rows", tostring(p), rows))
    end
  end
  local gx, gy = torch.meshgrid(torch.tensor({ 1, 2, 3 }), torch.tensor({ 7, 8 }))
  T.eq(gx:tolist(), { { 1, 1 }, { 2, 2 }, { 3, 3 } }, "meshgrid ij, first")
  T.eq(gy:tolist(), { { 7, 8 }, { 7, 8 }, { 7, 8 } }, "meshgrid ij, second")
  local hx, hy = torch.meshgrid({ torch.tensor({ 1, 2, 3 }), torch.tensor({ 7, 8 }) }, { indexing = "xy" })
  T.eq(hx:tolist(), { { 1, 2, 3 }, { 1, 2, 3 } }, "meshgrid xy, first")
  T.eq(hy:tolist(), { { 7, 7, 7 }, { 8, 8, 8 } }, "meshgrid xy, second")
  T.eq(torch.diff(torch.tensor({ 1, 4, 9, 16, 25 }), { n = 2 }):tolist(), { 2, 2, 2 }, "diff n=2")
  T.eq(torch.diff(torch.tensor({ { 1, 3 }, { 4, 9 } }), { dim = 0, prepend = torch.tensor({ { 0, 0 } }) }):tolist(),
    { { 1, 3 }, { 3, 6 } }, "diff along dim 0 with prepend")
  gradcheck("cdist", function(u, v) return torch.cdist(u, v) end, { torch.randn(3, 2, f64), torch.randn(4, 2, f64) })
  gradcheck("atan2", function(u, v) return torch.atan2(u, v) end, { torch.randn(5, f64), torch.randn(5, f64) })
  gradcheck("logaddexp", function(u, v) return torch.logaddexp(u, v) end, { torch.randn(5, f64), torch.randn(5, f64) })
end)

T.test("unique and bincount against counting in Lua", function()
  torch.manual_seed(92)
  local x = torch.randint(0, 7, { 40 })
  local xs = x:tolist()
  local count, keys = {}, {}
  for _, v in ipairs(xs) do
    if not count[v] then keys[#keys + 1] = v end
    count[v] = (count[v] or 0) + 1
  end
  table.sort(keys)
  local u, inv, cnt = torch.unique(x, { return_inverse = true, return_counts = true })
  T.eq(u:tolist(), keys, "distinct values, sorted")
  local cs = {}
  for i, k in ipairs(keys) do cs[i] = count[k] end
  T.eq(cnt:tolist(), cs, "counts")
  local ok = true
  for i, v in ipairs(xs) do ok = ok and keys[inv[i - 1]:item() + 1] == v end
  T.check(ok, "inverse indexes the values")
  local bc = torch.bincount(x, { minlength = 10 })
  local want = {}
  for i = 0, 9 do want[i + 1] = count[i] or 0 end
  T.eq(bc:tolist(), want, "bincount with minlength")
  T.near(torch.bincount(torch.tensor({ 0, 1, 1 }), { weights = torch.tensor({ 0.5, 1.0, 2.0 }) }):tolist(), { 0.5, 3.0 }, 1e-7, "weights")
  T.raises(function() torch.bincount(torch.tensor({ -1, 2 })) end, "bincount only supports 1-d non-negative integral inputs.")
end)
