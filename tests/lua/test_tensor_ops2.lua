-- torch_tensor_ops2.lua against references worked out in plain Lua over :tolist() values.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }
local i64 = { dtype = torch.int64 }

local function deep_copy(t)
  if type(t) ~= "table" then return t end
  local c = {}
  for k, v in pairs(t) do c[k] = deep_copy(v) end
  return c
end

local function rnd(shape, seed) torch.manual_seed(seed or 1); return torch.randn(shape, f64) end

T.test("index_put, index_copy, put", function()
  local x = rnd({ 3, 4 })
  local X = x:tolist()
  local rows, cols, vals = { 0, 2, -1 }, { 1, 3, 0 }, { 5.0, 6.0, 7.0 }
  local ref = deep_copy(X)
  for k = 1, 3 do ref[(rows[k] % 3) + 1][cols[k] + 1] = vals[k] end
  T.eq(x:index_put({ torch.tensor(rows), torch.tensor(cols) }, torch.tensor(vals, f64)):tolist(), ref, "index_put pairs")
  T.eq(x:tolist(), X, "index_put leaves x alone")
  -- accumulate with repeated indices; a row index alone sets whole rows
  ref = deep_copy(X)
  for _, r in ipairs({ 0, 0, 1 }) do for c = 1, 4 do ref[r + 1][c] = ref[r + 1][c] + 1.5 end end
  local y = x:clone()
  T.check(y:index_put_({ torch.tensor({ 0, 0, 1 }) }, torch.tensor(1.5, f64), true) == y, "index_put_ returns self")
  T.near(y:tolist(), ref, 1e-12, "index_put_ accumulate")
  ref = deep_copy(X)
  for r = 1, 3 do for c = 1, 4 do if X[r][c] > 0 then ref[r][c] = 0.0 end end end
  T.eq(x:index_put({ x:gt(0) }, torch.tensor(0.0, f64)):tolist(), ref, "index_put with a bool mask")
  T.raises(function() x:index_put({ torch.tensor({ 0 }) }, torch.tensor({ 1.0 })) end,
    "Index put requires the source and destination dtypes match, got Double for the destination and Float for the source.", "dtype")
  T.raises(function() x:index_put({ torch.tensor({ 0 }), torch.tensor({ 0 }), torch.tensor({ 0 }) }, torch.tensor(1.0, f64)) end,
    "~too many indices for tensor of dimension 2", "too many")
  -- index_copy along dim 1
  local src = rnd({ 3, 2 }, 2)
  local S = src:tolist()
  ref = deep_copy(X)
  for r = 1, 3 do ref[r][4] = S[r][1]; ref[r][1] = S[r][2] end
  T.eq(x:index_copy(1, torch.tensor({ 3, 0 }), src):tolist(), ref, "index_copy")
  y = x:clone()
  T.check(y:index_copy_(1, torch.tensor({ 3, 0 }), src) == y, "index_copy_ returns self")
  T.eq(y:tolist(), ref, "index_copy_")
  T.raises(function() x:index_copy(1, torch.tensor({ 0, 1, 2 }), src) end,
    "index_copy_(): Number of indices (3) should be equal to source.size(dim) (2)", "index count")
  -- put_ on flat positions, negative wraps
  ref = deep_copy(X)
  local flat = {}
  for r = 1, 3 do for c = 1, 4 do flat[#flat + 1] = X[r][c] end end
  flat[2] = flat[2] + 1.0; flat[12] = flat[12] + 2.0; flat[2] = flat[2] + 3.0
  y = x:clone()
  T.check(y:put_(torch.tensor({ 1, -1, 1 }), torch.tensor({ 1.0, 2.0, 3.0 }, f64), true) == y, "put_ returns self")
  T.near(y:reshape(-1):tolist(), flat, 1e-12, "put_ accumulate")
  T.eq(x:put(torch.tensor({ 0 }), torch.tensor({ 9.0 }, f64)):reshape(-1):tolist()[1], 9.0, "put")
  T.raises(function() x:put(torch.tensor({ 12 }), torch.tensor({ 9.0 }, f64)) end,
    "out of range: tried to access index 12 on a tensor of 12 elements.", "put range")
  T.raises(function() x:put(torch.tensor({ 0, 1 }), torch.tensor({ 9.0 }, f64)) end,
    "put_(): Expected source and index to have the same number of elements, but got source.numel() = 1, index.numel() = 2", "put count")
  gradcheck("index_put", function(a, v) return a:index_put({ torch.tensor({ 0, 2 }), torch.tensor({ 1, 1 }) }, v, true) end,
    { x, torch.tensor({ 1.0, 2.0 }, f64) })
  gradcheck("index_copy", function(a, s) return a:index_copy(1, torch.tensor({ 3, 0 }), s) end, { x, src })
  gradcheck("put", function(a, s) return torch.put(a, torch.tensor({ 5, 0 }), s) end, { x, torch.tensor({ 1.0, 2.0 }, f64) })
end)

T.test("masked_scatter and the scatters", function()
  local x = rnd({ 2, 3 })
  local X = x:tolist()
  local mask = torch.tensor({ true, false, true }) -- broadcast over rows
  local src = torch.arange(10, f64)
  local ref, k = deep_copy(X), 0
  for r = 1, 2 do for c = 1, 3 do if c ~= 2 then ref[r][c] = k + 0.0; k = k + 1 end end end
  T.eq(x:masked_scatter(mask, src):tolist(), ref, "masked_scatter")
  local y = x:clone()
  T.check(y:masked_scatter_(mask, src) == y, "masked_scatter_ returns self")
  T.eq(y:tolist(), ref, "masked_scatter_")
  T.raises(function() x:masked_scatter(mask, torch.arange(3, f64)) end, "~expected source to have at least 4 elements", "short source")
  gradcheck("masked_scatter", function(a, s) return a:masked_scatter(mask, s) end, { x, rnd({ 5 }, 3) })

  local b = rnd({ 3, 4 }, 4)
  local B = b:tolist()
  local s = torch.tensor({ 1.0, 2.0, 3.0 }, f64)
  ref = deep_copy(B)
  for r = 1, 3 do ref[r][3] = r + 0.0 end
  T.eq(torch.select_scatter(b, s, 1, -2):tolist(), ref, "select_scatter")
  T.raises(function() torch.select_scatter(b, torch.ones(4, f64), 1, 0) end,
    "expected src to have a size equal to the slice of self. src size = [4], slice size = [3]", "select_scatter shape")
  ref = deep_copy(B)
  for r = 1, 3 do ref[r][2] = 10.0 * r; ref[r][4] = 10.0 * r + 1 end
  local s2 = torch.tensor({ { 10, 11 }, { 20, 21 }, { 30, 31 } }, f64)
  T.eq(torch.slice_scatter(b, s2, 1, 1, nil, 2):tolist(), ref, "slice_scatter step 2")
  T.eq(b:slice_scatter(s2, { dim = 1, start = 1, step = 2 }):tolist(), ref, "slice_scatter keywords")
  ref = deep_copy(B)
  ref[1][2], ref[2][3], ref[3][4] = 1.0, 2.0, 3.0
  T.eq(torch.diagonal_scatter(b, s, 1):tolist(), ref, "diagonal_scatter offset 1")
  ref = deep_copy(B)
  ref[2][1], ref[3][2] = 1.0, 2.0
  T.eq(torch.diagonal_scatter(b, s:narrow(0, 0, 2), -1, 0, 1):tolist(), ref, "diagonal_scatter offset -1")
  -- diag_embed: batched, and into dims 0 and 2
  local d = torch.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 } }, f64)
  T.eq(torch.diag_embed(d):tolist(), { { { 1.0, 0.0 }, { 0.0, 2.0 } }, { { 3.0, 0.0 }, { 0.0, 4.0 } } }, "diag_embed")
  local e = torch.diag_embed(d, 1, 0, 2)
  T.eq(e:size(), torch.Size({ 3, 2, 3 }), "diag_embed shape")
  local E, ok = e:tolist(), true
  for i = 1, 3 do for b_ = 1, 2 do for j = 1, 3 do
    local want = (j == i + 1) and d:tolist()[b_][i] or 0.0
    ok = ok and E[i][b_][j] == want
  end end end
  T.check(ok, "diag_embed offset 1 into dims 0, 2")
  T.eq(b:narrow_copy(1, 1, 2):tolist(), { { B[1][2], B[1][3] }, { B[2][2], B[2][3] }, { B[3][2], B[3][3] } }, "narrow_copy")
  gradcheck("select_scatter", function(a, v) return torch.select_scatter(a, v, 0, 1) end, { b, rnd({ 4 }, 5) })
  gradcheck("slice_scatter", function(a, v) return torch.slice_scatter(a, v, 1, 0, 4, 2) end, { b, rnd({ 3, 2 }, 6) })
  gradcheck("diagonal_scatter", function(a, v) return torch.diagonal_scatter(a, v, 1) end, { b, s })
  gradcheck("diag_embed", function(v) return torch.diag_embed(v, -1) end, { d })
end)

T.test("index_reduce", function()
  local x = torch.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 }, { 5.0, 6.0 } }, f64)
  local src = torch.tensor({ { 2.0, 3.0 }, { 4.0, -1.0 }, { 0.5, 7.0 } }, f64)
  local idx = { 0, 2, 0 }
  local S = src:tolist()
  for _, red in ipairs({ "prod", "mean", "amax", "amin" }) do
    for _, self_in in ipairs({ true, false }) do
      local ref = x:tolist()
      for r = 1, 3 do for c = 1, 2 do
        local vals = self_in and { ref[r][c] } or {}
        for k = 1, 3 do if idx[k] == r - 1 then vals[#vals + 1] = S[k][c] end end
        if #vals > (self_in and 1 or 0) or (self_in and #vals > 0) then
          local v = vals[1]
          for k = 2, #vals do
            if red == "prod" then v = v * vals[k] elseif red == "amax" then v = math.max(v, vals[k])
            elseif red == "amin" then v = math.min(v, vals[k]) else v = v + vals[k] end
          end
          if red == "mean" then v = v / #vals end
          if #vals > 0 then ref[r][c] = v end
        end
      end end
      T.near(x:index_reduce(0, torch.tensor(idx), src, red, { include_self = self_in }):tolist(), ref, 1e-12,
        "index_reduce " .. red .. tostring(self_in))
    end
  end
  local y = x:clone()
  T.check(y:index_reduce_(0, torch.tensor(idx), src, "amax") == y, "index_reduce_ returns self")
  T.eq(y:tolist(), { { 2.0, 7.0 }, { 3.0, 4.0 }, { 5.0, 6.0 } }, "index_reduce_ amax")
  T.raises(function() x:index_reduce(0, torch.tensor(idx), src, "sum") end,
    "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got sum.", "bad reduce")
  gradcheck("index_reduce prod", function(a, s) return a:index_reduce(0, torch.tensor(idx), s, "prod") end, { x, src })
  gradcheck("index_reduce mean", function(a, s) return a:index_reduce(0, torch.tensor(idx), s, "mean") end, { x, src })
end)

local function stats(t)
  local v = t:to(torch.float64)
  local m = v:mean():item()
  return m, ((v - m) ^ 2):mean():item(), v:min():item(), v:max():item()
end

T.test("in-place randoms", function()
  local N = 200000
  torch.manual_seed(7)
  local x = torch.zeros(N, f64)
  T.check(x:random_(3, 7) == x, "random_ returns self")
  local m, v, lo, hi = stats(x)
  T.eq({ lo, hi }, { 3.0, 6.0 }, "random_(3, 7) range")
  T.near(m, 4.5, 0.01, "random_(3, 7) mean")
  T.near(v, 1.25, 0.02, "random_(3, 7) variance (discrete uniform)")
  T.check(x:eq(x:floor()):all():item(), "random_ gives integers")
  _, _, lo, hi = stats(torch.zeros(N, i64):random_(5))
  T.eq({ lo, hi }, { 0.0, 4.0 }, "random_(5) range")
  _, _, lo, hi = stats(torch.zeros(N, { dtype = torch.uint8 }):random_())
  T.eq({ lo, hi }, { 0.0, 255.0 }, "random_() uint8 range")
  m, _, lo, hi = stats(torch.zeros(N):random_())
  T.check(lo >= 0 and hi <= 2 ^ 24 and m > 2 ^ 22 and m < 2 ^ 23 * 1.01, "random_() float32 in [0, 2^24]")
  T.raises(function() torch.zeros(2):random_(5, 5) end, "~random_ expects 'from' to be less than 'to'", "empty range")

  m, v, lo = stats(torch.zeros(N, f64):exponential_(2))
  T.near(m, 0.5, 0.01, "exponential_ mean 1/lambda")
  T.near(v, 0.25, 0.02, "exponential_ variance 1/lambda^2")
  T.check(lo >= 0, "exponential_ nonnegative")
  T.raises(function() torch.zeros(2):exponential_(-1) end, "exponential_ expects lambda > 0.0, but found lambda=-1.0", "lambda")

  local g = torch.zeros(N, f64):geometric_(0.25)
  m, v, lo = stats(g)
  T.near(m, 4, 0.02, "geometric_ mean 1/p")
  T.near(v, 12, 0.05, "geometric_ variance (1-p)/p^2")
  T.check(lo == 1 and g:eq(g:floor()):all():item(), "geometric_ on 1, 2, ...")
  T.near(g:eq(1):to(torch.float64):mean():item(), 0.25, 0.02, "geometric_ P(1) = p")

  local c = torch.zeros(N, f64):cauchy_(1, 2)
  local med = c:median():item()
  T.near(med, 1, 0.03, "cauchy_ median")
  T.near((c - 1):abs():lt(2):to(torch.float64):mean():item(), 0.5, 0.01, "cauchy_ half the mass within sigma")

  local l = torch.zeros(N, f64):log_normal_(0.5, 0.5)
  m = l:mean():item()
  T.near(m, math.exp(0.5 + 0.125), 0.01, "log_normal_ mean exp(mu + s^2/2)")
  local lm, lv = stats(l:log())
  T.near(lm, 0.5, 0.01, "log_normal_ log mean")
  T.near(lv, 0.25, 0.02, "log_normal_ log variance")

  local b = torch.zeros(N):bernoulli_(0.3)
  T.near(b:mean():item(), 0.3, 0.01, "bernoulli_ mean p")
  T.check(b:eq(0):logical_or(b:eq(1)):all():item(), "bernoulli_ 0 / 1")
  local pb = torch.zeros(2, N, f64):bernoulli_(torch.tensor({ { 0.1 }, { 0.9 } }, f64))
  T.near(pb:mean(1):tolist(), { 0.1, 0.9 }, 0.02, "bernoulli_ with a tensor p")
  T.raises(function() torch.zeros(2):bernoulli_(1.5) end, "bernoulli_ expects p to be in [0, 1], but got p=1.5", "p range")

  torch.manual_seed(3)
  local a1 = torch.zeros(5, f64):exponential_():tolist()
  torch.manual_seed(3)
  T.eq(torch.zeros(5, f64):exponential_():tolist(), a1, "manual_seed reproduces")
end)

-- ---- math ----

local matmul_ref = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "matmul_ref.lua")

T.test("in-place math, inner, vdot, matrix_power, matrix_exp", function()
  local a, m1, m2 = rnd({ 2, 2 }, 1), rnd({ 2, 3 }, 2), rnd({ 3, 2 }, 3)
  local A, P = a:tolist(), matmul_ref(m1:tolist(), m2:tolist())
  local y = a:clone()
  T.check(y:addmm_(m1, m2, { beta = 2, alpha = 3 }) == y, "addmm_ returns self")
  T.near(y:tolist(), { { 2 * A[1][1] + 3 * P[1][1], 2 * A[1][2] + 3 * P[1][2] }, { 2 * A[2][1] + 3 * P[2][1], 2 * A[2][2] + 3 * P[2][2] } },
    1e-12, "addmm_")
  y = a:clone()
  T.check(y:lerp_(torch.ones(2, 2, f64), 0.25) == y, "lerp_ returns self")
  T.near(y:tolist(), { { A[1][1] + 0.25 * (1 - A[1][1]), A[1][2] + 0.25 * (1 - A[1][2]) },
    { A[2][1] + 0.25 * (1 - A[2][1]), A[2][2] + 0.25 * (1 - A[2][2]) } }, 1e-12, "lerp_")
  y = a:clone()
  T.check(y:tril_() == y, "tril_ returns self")
  T.eq(y:tolist(), { { A[1][1], 0.0 }, { A[2][1], A[2][2] } }, "tril_")
  T.eq(a:clone():triu_(1):tolist(), { { 0.0, A[1][2] }, { 0.0, 0.0 } }, "triu_(1)")
  y = torch.tensor({ 0 / 0, math.huge, -math.huge, 1.0 }, f64)
  T.check(y:nan_to_num_(0.5, 2.0, -3.0) == y, "nan_to_num_ returns self")
  T.eq(y:tolist(), { 0.5, 2.0, -3.0, 1.0 }, "nan_to_num_")
  y = torch.tensor({ 1.0, -2.0, 3.0 }, f64)
  T.check(y:copysign_(torch.tensor({ -1.0, 1.0, -0.0 }, f64)) == y, "copysign_ returns self")
  T.eq(y:tolist(), { -1.0, 2.0, -3.0 }, "copysign_")

  local u, w = rnd({ 2, 3 }, 4), rnd({ 4, 3 }, 5)
  local ref = matmul_ref(u:tolist(), w:t():tolist())
  T.near(torch.inner(u, w):tolist(), ref, 1e-12, "inner")
  T.eq(torch.inner(u, w):size(), torch.Size({ 2, 4 }), "inner shape")
  T.raises(function() torch.inner(u, rnd({ 2, 4 })) end,
    "inner() the last dimension must match on both input tensors but got shapes [2, 3] and [2, 4]", "inner shapes")
  local U1, W1 = u[0]:tolist(), w[0]:tolist()
  T.near(torch.vdot(u[0], w[0]):item(), U1[1] * W1[1] + U1[2] * W1[2] + U1[3] * W1[3], 1e-12, "vdot")
  T.raises(function() torch.vdot(u, w[0]) end, "1D tensors expected, but got 2D and 1D tensors", "vdot dims")

  local M = torch.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 } }, f64)
  local Mr = M:tolist()
  local M3 = matmul_ref(matmul_ref(Mr, Mr), Mr)
  T.near(M:matrix_power(3):tolist(), M3, 1e-12, "matrix_power 3")
  T.eq(M:matrix_power(0):tolist(), { { 1.0, 0.0 }, { 0.0, 1.0 } }, "matrix_power 0")
  -- inverse of [[1,2],[3,4]] is [[-2,1],[1.5,-0.5]]
  local Inv = { { -2.0, 1.0 }, { 1.5, -0.5 } }
  T.near(M:matrix_power(-2):tolist(), matmul_ref(Inv, Inv), 1e-12, "matrix_power -2")
  T.raises(function() torch.matrix_power(rnd({ 2, 3 }), 2) end,
    "linalg.matrix_power: A must be batches of square matrices, but they are 2 by 3 matrices", "square")
  -- exp of t * [[0, 1], [-1, 0]] is a rotation; of a nilpotent N, I + N + N^2/2
  local R = torch.matrix_exp(torch.tensor({ { 0.0, 3.0 }, { -3.0, 0.0 } }, f64))
  T.near(R:tolist(), { { math.cos(3), math.sin(3) }, { -math.sin(3), math.cos(3) } }, 1e-12, "matrix_exp rotation")
  local Nl = torch.tensor({ { 0.0, 2.0, 3.0 }, { 0.0, 0.0, 5.0 }, { 0.0, 0.0, 0.0 } }, f64)
  T.near(torch.matrix_exp(Nl):tolist(), { { 1.0, 2.0, 3.0 + 5.0 }, { 0.0, 1.0, 5.0 }, { 0.0, 0.0, 1.0 } }, 1e-12, "matrix_exp nilpotent")
  local D = torch.matrix_exp(torch.tensor({ { { 5.0, 0.0 }, { 0.0, -1.0 } } }, f64))
  T.near(D:tolist(), { { { math.exp(5), 0.0 }, { 0.0, math.exp(-1) } } }, 1e-12, "matrix_exp batched diagonal")
  gradcheck("matrix_power", function(x) return x:matrix_power(3) end, { M / 4 })
  gradcheck("matrix_power -1", function(x) return x:matrix_power(-1) end, { M })
  gradcheck("matrix_exp", function(x) return torch.matrix_exp(x) end, { rnd({ 3, 3 }, 8) }, { tol = 1e-5 })
  gradcheck("inner", function(p, q) return torch.inner(p, q) end, { u, w })
end)

T.test("renorm, dist, unique_consecutive, small ones", function()
  local x = torch.tensor({ { 3.0, 4.0 }, { 0.3, 0.4 }, { 6.0, -8.0 } }, f64)
  local r = x:renorm(2, 0, 1)
  T.near(r:tolist(), { { 0.6, 0.8 }, { 0.3, 0.4 }, { 0.6, -0.8 } }, 1e-6, "renorm rows to norm 1")
  local y = x:clone()
  T.check(y:renorm_(1, 1, 5) == y, "renorm_ returns self")
  local c1, c2 = 3 + 0.3 + 6, 4 + 0.4 + 8
  T.near(y:tolist(), { { 3 * 5 / c1, 4 * 5 / c2 }, { 0.3 * 5 / c1, 0.4 * 5 / c2 }, { 6 * 5 / c1, -8 * 5 / c2 } }, 1e-6, "renorm_ p=1 columns")
  T.raises(function() x:renorm(0, 0, 1) end, "renorm: non-positive-norm not supported", "renorm p")
  gradcheck("renorm", function(a) return a:renorm(2, 0, 1) end, { x }, { tol = 1e-5 })

  local a, b = rnd({ 2, 3 }, 1), rnd({ 2, 3 }, 2)
  local A, B = a:tolist(), b:tolist()
  local s2, s3, mx = 0, 0, 0
  for i = 1, 2 do for j = 1, 3 do
    local d = math.abs(A[i][j] - B[i][j])
    s2, s3, mx = s2 + d * d, s3 + d ^ 3, math.max(mx, d)
  end end
  T.near(a:dist(b):item(), math.sqrt(s2), 1e-12, "dist")
  T.near(torch.dist(a, b, 3):item(), s3 ^ (1 / 3), 1e-12, "dist p=3")
  T.near(torch.dist(a, b, math.huge):item(), mx, 1e-12, "dist p=inf")
  gradcheck("dist", function(p, q) return p:dist(q) end, { a, b })

  local v = torch.tensor({ 1, 1, 2, 2, 3, 1, 1, 2 })
  T.eq(torch.unique_consecutive(v):tolist(), { 1, 2, 3, 1, 2 }, "unique_consecutive")
  local out, inv, cnt = v:unique_consecutive(true, true)
  T.eq({ out:tolist(), inv:tolist(), cnt:tolist() }, { { 1, 2, 3, 1, 2 }, { 0, 0, 1, 1, 2, 3, 3, 4 }, { 2, 2, 1, 2, 1 } }, "with inverse, counts")
  local o2, c2_ = torch.unique_consecutive(v, { return_counts = true })
  T.eq({ o2:tolist(), c2_:tolist() }, { { 1, 2, 3, 1, 2 }, { 2, 2, 1, 2, 1 } }, "counts only")
  local m = torch.tensor({ { 1, 1, 2, 2 }, { 3, 3, 4, 5 } })
  local od, id, cd = torch.unique_consecutive(m, { return_inverse = true, return_counts = true, dim = 1 })
  T.eq({ od:tolist(), id:tolist(), cd:tolist() }, { { { 1, 2, 2 }, { 3, 4, 5 } }, { 0, 0, 1, 2 }, { 2, 1, 1 } }, "unique_consecutive dim=1")
  T.eq(torch.unique_consecutive(torch.tensor({ { 2, 2 }, { 2, 3 } }), true):size(), torch.Size({ 2 }), "flattened")

  T.eq(torch.is_nonzero(torch.tensor({ 0.5 })), true, "is_nonzero")
  T.eq(torch.tensor(0):is_nonzero(), false, "is_nonzero zero")
  T.raises(function() torch.tensor({ 1, 2 }):is_nonzero() end, "Boolean value of Tensor with more than one value is ambiguous", "two")
  T.raises(function() torch.zeros(0):is_nonzero() end, "Boolean value of Tensor with no values is ambiguous", "none")
  local re = torch.isreal(torch.tensor({ 1.0, 0 / 0 }))
  T.check(re.dtype == torch.bool and re:all():item(), "isreal")
  T.eq(torch.zeros(2):char().dtype, torch.int8, "char")
  T.eq(torch.zeros(2):short().dtype, torch.int16, "short")

  local function gcd(p, q) p, q = math.abs(p), math.abs(q); while q ~= 0 do p, q = q, p % q end; return p end
  local P = { 12, -18, 0, 7, 270, 1071, 0, -9 }
  local Q = { 8, 12, 5, 0, 192, 462, 0, -6 }
  local gref, lref = {}, {}
  for k = 1, #P do
    gref[k] = gcd(P[k], Q[k])
    lref[k] = gref[k] == 0 and 0 or math.abs(P[k] // gref[k] * Q[k])
  end
  T.eq(torch.gcd(torch.tensor(P), torch.tensor(Q)):tolist(), gref, "gcd")
  T.eq(torch.tensor(P):lcm(torch.tensor(Q)):tolist(), lref, "lcm")
  local g = torch.tensor(P)
  T.check(g:gcd_(torch.tensor(Q)) == g, "gcd_ returns self")
  T.eq(g:tolist(), gref, "gcd_")
  T.raises(function() torch.gcd(torch.ones(2), torch.ones(2)) end, "\"gcd_cpu\" not implemented for 'Float'", "gcd float")
end)

-- ---- special functions: references by other methods ----

-- lgamma by shifting past 20 and Stirling's series
local function lgamma_ref(x)
  local acc = 0
  while x < 20 do acc = acc - math.log(x); x = x + 1 end
  local x2 = x * x
  return acc + (x - 0.5) * math.log(x) - x + 0.5 * math.log(2 * math.pi)
    + 1 / (12 * x) - 1 / (360 * x * x2) + 1 / (1260 * x2 * x2 * x) - 1 / (1680 * x2 * x2 * x2 * x)
end

-- erf by its Taylor series (|x| < 3)
local function erf_ref(x)
  local s, term, n = 0, x, 0
  while math.abs(term) > 1e-20 do
    s = s + term / (2 * n + 1)
    n = n + 1
    term = -term * x * x / n
  end
  return 2 / math.sqrt(math.pi) * s
end

-- I0 by the trapezoid rule on (1/pi) int_0^pi exp(x cos t) dt (exact for periodic integrands)
local function i0_ref(x)
  local n, s = 200, 0
  for k = 0, n - 1 do s = s + math.exp(x * math.cos(math.pi * (k + 0.5) / n)) end
  return s / n
end

T.test("lgamma, digamma, polygamma", function()
  local xs = { 0.5, 1.0, 1.5, 2.0, 3.0, 7.3, 0.1, 25.0, 150.5, -0.5, -2.7 }
  local got = torch.lgamma(torch.tensor(xs, f64)):tolist()
  for k, x in ipairs(xs) do
    local want = x > 0 and lgamma_ref(x) or math.log(math.pi / math.abs(math.sin(math.pi * x))) - lgamma_ref(1 - x)
    T.near(got[k], want, 1e-12, "lgamma " .. x)
  end
  T.near(torch.tensor(0.5, f64):lgamma():item(), math.log(math.sqrt(math.pi)), 1e-14, "lgamma(0.5)")
  T.eq(torch.lgamma(torch.tensor({ 1.0, 2.0, 0.0, -3.0 }, f64)):tolist(), { 0.0, 0.0, math.huge, math.huge }, "lgamma at integers")
  T.check(torch.lgamma(torch.tensor({ 3 })).dtype == torch.float32, "lgamma of int64: float32")
  T.near(torch.lgamma(torch.tensor({ 4.0 })):item(), math.log(6), 1e-6, "lgamma float32")
  local y = torch.tensor({ 5.0 }, f64)
  T.check(y:lgamma_() == y, "lgamma_ returns self")
  T.near(y:item(), math.log(24), 1e-13, "lgamma_")

  local g = 0.5772156649015329
  local dg = torch.digamma(torch.tensor({ 1.0, 0.5, 2.0, 10.0, -0.5, 1e-3, 100.25 }, f64)):tolist()
  local H9 = 0
  for k = 1, 9 do H9 = H9 + 1 / k end
  T.near(dg[1], -g, 1e-14, "digamma(1)")
  T.near(dg[2], -g - 2 * math.log(2), 1e-14, "digamma(1/2)")
  T.near(dg[3], 1 - g, 1e-14, "digamma(2)")
  T.near(dg[4], H9 - g, 1e-14, "digamma(10)")
  T.near(dg[5], -g - 2 * math.log(2) + 2, 1e-13, "digamma(-1/2) = digamma(1/2) + 2")
  -- digamma(x) = digamma(x + 1) - 1/x
  T.near(dg[6], -g + (math.pi ^ 2 / 6) * 1e-3 - 1e3 - 1.2020569031595942 * 1e-6, 1e-10, "digamma near 0")
  local h = 1e-5 -- digamma as the derivative of the reference lgamma
  T.near(dg[7], (lgamma_ref(100.25 + h) - lgamma_ref(100.25 - h)) / (2 * h), 1e-8, "digamma(100.25)")
  local ends = torch.digamma(torch.tensor({ 0.0, -2.0 }, f64)):tolist()
  T.check(ends[1] == -math.huge and ends[2] ~= ends[2], "digamma(0) = -inf, nan at negative integers")

  local z3, z4 = 1.2020569031595942, math.pi ^ 4 / 90
  local pg = function(n, x) return torch.polygamma(n, torch.tensor({ x }, f64)):item() end
  T.near(pg(1, 1), math.pi ^ 2 / 6, 1e-13, "trigamma(1)")
  T.near(pg(1, 0.5), math.pi ^ 2 / 2, 1e-13, "trigamma(1/2)")
  T.near(pg(2, 1), -2 * z3, 1e-13, "polygamma(2, 1)")
  T.near(pg(3, 1), 6 * z4, 1e-13, "polygamma(3, 1)")
  T.near(pg(1, -0.5), math.pi ^ 2 / 2 + 4, 1e-12, "trigamma(-1/2) = trigamma(1/2) + 1/(1/4)")
  T.near(pg(0, 1), -g, 1e-14, "polygamma(0) is digamma")
  T.near(torch.tensor({ 3.0 }, f64):polygamma(1):item(), math.pi ^ 2 / 6 - 1 - 0.25, 1e-13, "x:polygamma(1)")
  T.raises(function() torch.polygamma(-1, torch.ones(1)) end, "polygamma(n, x) does not support negative n.", "negative n")

  local x = torch.tensor({ 0.3, 1.7, 4.2, -1.5 }, f64)
  gradcheck("lgamma", torch.lgamma, { x })
  gradcheck("digamma", torch.digamma, { x }, { tol = 1e-5 })
  gradcheck("polygamma 2", function(t) return torch.polygamma(2, t) end, { x }, { tol = 1e-5 })
end)

T.test("erfinv, i0", function()
  local ys = { 0.5, -0.9, 0.0, 0.1, 0.999, -0.9999999, 1e-10, 0.75 }
  local got = torch.erfinv(torch.tensor(ys, f64)):tolist()
  T.near(got[1], 0.4769362762044699, 1e-14, "erfinv(0.5)")
  for k, y in ipairs(ys) do
    if math.abs(y) < 0.9999 then T.near(erf_ref(got[k]), y, 1e-14, "erf(erfinv(y)) " .. y) end
  end
  T.near(got[6], -3.7665625815708380, 1e-10, "erfinv(-0.9999999)")
  local e = torch.erfinv(torch.tensor({ 1.0, -1.0, 1.5 }, f64)):tolist()
  T.check(e[1] == math.huge and e[2] == -math.huge and e[3] ~= e[3], "erfinv at +-1 and outside")
  local y = torch.tensor({ 0.5 })
  T.check(y:erfinv_() == y and y.dtype == torch.float32, "erfinv_ returns self")
  T.near(y:item(), 0.4769362762044699, 1e-6, "erfinv_ float32")

  local xs = { 1.0, 0.0, 2.0, -3.5, 10.0, 0.25, 40.0 }
  local iv = torch.i0(torch.tensor(xs, f64)):tolist()
  T.near(iv[1], 1.2660658777520082, 1e-14, "i0(1)")
  T.near(iv[3], 2.2795853023360673, 1e-14, "i0(2)")
  for k, x in ipairs(xs) do T.near(iv[k], i0_ref(x), 1e-12, "i0 against the integral " .. x) end
  local z = torch.tensor({ 1.0 }, f64)
  T.check(z:i0_() == z, "i0_ returns self")
  T.near(z:item(), 1.2660658777520082, 1e-14, "i0_")

  local x = torch.tensor({ -0.8, -0.2, 0.35, 0.9 }, f64)
  gradcheck("erfinv", torch.erfinv, { x }, { tol = 1e-5 })
  local a = torch.tensor({ 0.3 }, f64):requires_grad_()
  torch.erfinv(a):backward(torch.ones(1, f64))
  local v = torch.erfinv(torch.tensor({ 0.3 }, f64)):item()
  T.near(a.grad:item(), math.sqrt(math.pi) / 2 * math.exp(v * v), 1e-14, "erfinv' = sqrt(pi)/2 exp(erfinv^2)")
  gradcheck("i0", torch.i0, { torch.tensor({ -2.0, 0.5, 3.0 }, f64) })
  gradcheck("lgamma float", function(t) return t:lgamma() end, { torch.tensor({ 2.5 }, f64) })
end)
