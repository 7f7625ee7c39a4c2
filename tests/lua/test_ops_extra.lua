-- torch_ops_extra.lua against loops over plain lists; gradients by float64 central differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }
local NaN = 0 / 0

local function shape(t) return t:size():totable() end

T.test("kron, block_diag, rot90, vander against loops", function()
  torch.manual_seed(1)
  local a, b = torch.randn(2, 3, f64), torch.randn(3, 2, f64)
  local al, bl = a:tolist(), b:tolist()
  local want = {}
  for i = 0, 5 do
    want[i + 1] = {}
    for j = 0, 5 do want[i + 1][j + 1] = al[i // 3 + 1][j // 2 + 1] * bl[i % 3 + 1][j % 2 + 1] end
  end
  T.near(torch.kron(a, b):tolist(), want, 1e-15, "kron 2-d")
  T.near(a:kron(b):tolist(), want, 1e-15, "kron method")
  local v = torch.tensor({ 1, 2 })
  T.eq(torch.kron(v, torch.tensor({ { 1, 10 } })):tolist(), { { 1, 10, 2, 20 } }, "kron 1-d with 2-d (padded dims)")
  gradcheck("kron", torch.kron, { a, b })

  local bd = torch.block_diag(torch.tensor({ { 1, 2 }, { 3, 4 } }), torch.tensor({ 5, 6, 7 }), torch.tensor(8))
  T.eq(bd:tolist(), { { 1, 2, 0, 0, 0, 0 }, { 3, 4, 0, 0, 0, 0 }, { 0, 0, 5, 6, 7, 0 }, { 0, 0, 0, 0, 0, 8 } }, "block_diag")
  T.eq(torch.block_diag({ torch.tensor({ 1 }), torch.tensor({ 2.5 }) }):tolist(), { { 1.0, 0.0 }, { 0.0, 2.5 } }, "block_diag of a list, promoted")
  gradcheck("block_diag", function(x, y) return torch.block_diag(x, y) end, { a, b })
  T.raises(function() torch.block_diag(a, torch.zeros(1, 1, 1)) end,
    "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input 1 has 3 dimensions")

  -- rot90 by index arithmetic: one turn maps out[i][j] = x[j][m - 1 - i]
  local x = torch.arange(6):reshape(2, 3)
  local xl = x:tolist()
  local function turn(l)
    local n, m, o = #l, #l[1], {}
    for i = 1, m do o[i] = {} for j = 1, n do o[i][j] = l[j][m - i + 1] end end
    return o
  end
  local r = xl
  for k = 1, 4 do
    r = turn(r)
    T.eq(torch.rot90(x, k):tolist(), r, "rot90 k=" .. k)
  end
  T.eq(torch.rot90(x, -1):tolist(), turn(turn(turn(xl))), "rot90 k=-1")
  T.eq(x:rot90(1, { 1, 0 }):tolist(), turn(turn(turn(xl))), "rot90 with dims reversed")
  T.eq(shape(torch.rot90(torch.zeros(2, 3, 4), 1, { 0, 2 })), { 4, 3, 2 }, "rot90 over dims 0 and 2")
  T.raises(function() torch.rot90(x, 1, { 0 }) end, "expected total rotation dims == 2, but got dims = 1")
  T.raises(function() torch.rot90(torch.zeros(3), 1) end, "expected total dims >= 2, but got total dims = 1")
  T.raises(function() torch.rot90(x, 1, { 0, 0 }) end, "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0")
  T.raises(function() torch.rot90(x, 1, { 0, 3 }) end, "Rotation dim1 out of range, dim1 = 3")

  local xs = { 2.0, -1.5, 0.5 }
  local function vand(n, inc)
    local o = {}
    for i, xv in ipairs(xs) do
      o[i] = {}
      for p = 0, n - 1 do o[i][p + 1] = xv ^ (inc and p or n - 1 - p) end
    end
    return o
  end
  local xt = torch.tensor(xs, f64)
  T.near(torch.vander(xt):tolist(), vand(3, false), 0, "vander")
  T.near(torch.vander(xt, 5, true):tolist(), vand(5, true), 0, "vander N=5 increasing")
  T.near(torch.vander(xt, { N = 2 }):tolist(), vand(2, false), 0, "vander N keyword")
  T.eq(shape(torch.vander(xt, 0)), { 3, 0 }, "vander N=0")
  local vi = torch.vander(torch.tensor({ 2, 3 }, { dtype = torch.int32 }))
  T.eq({ vi.dtype == torch.int64, vi:tolist() }, { true, { { 2, 1 }, { 3, 1 } } }, "vander of int32 gives int64")
  gradcheck("vander", function(t) return torch.vander(t, 4) end, { xt })
  T.raises(function() torch.vander(torch.zeros(2, 2)) end, "x must be a one-dimensional tensor.")
  T.raises(function() torch.vander(xt, -1) end, "N must be non-negative.")
end)

T.test("logcumsumexp, cummax, cummin against loops", function()
  torch.manual_seed(2)
  local x = torch.randn(3, 5, f64) * 3
  local xl = x:tolist()
  local want = {}
  for i = 1, 3 do
    want[i] = {}
    local s = 0
    for j = 1, 5 do s = s + math.exp(xl[i][j]); want[i][j] = math.log(s) end
  end
  T.near(torch.logcumsumexp(x, 1):tolist(), want, 1e-13, "logcumsumexp dim 1")
  T.near(x:logcumsumexp(-1):tolist(), want, 1e-13, "logcumsumexp method, dim -1")
  local wt = {}
  for j = 1, 5 do
    wt[j] = {}
    local s = 0
    for i = 1, 3 do s = s + math.exp(xl[i][j]); wt[j][i] = math.log(s) end
  end
  T.near(torch.logcumsumexp(x, 0):t():tolist(), wt, 1e-13, "logcumsumexp dim 0")
  -- far apart values: a naive log(cumsum(exp(x))) under- or overflows
  T.near(torch.logcumsumexp(torch.tensor({ -1000.0, 0.0, 1000.0, 1000.0 }, f64), 0):tolist(),
    { -1000.0, 0.0, 1000.0, 1000.0 + math.log(2) }, 1e-15, "logcumsumexp is stable")
  T.eq(torch.logcumsumexp(torch.tensor({ -math.huge, 1.0 }, f64), 0):tolist(), { -math.huge, 1.0 }, "logcumsumexp with -inf")
  gradcheck("logcumsumexp", function(t) return torch.logcumsumexp(t, 1) end, { x })
  local ninf = torch.tensor({ -math.huge, -math.huge, 0.0 }, f64):requires_grad_()
  torch.logcumsumexp(ninf, 0):sum():backward()
  local g = ninf.grad:tolist()
  T.check(g[1] == g[1] and g[2] == g[2] and g[3] == 1.0, "logcumsumexp gradient through -inf prefixes has no NaN")
  T.raises(function() torch.logcumsumexp(torch.tensor({ 1, 2 }), 0) end, "\"logcumsumexp_out_cpu\" not implemented for 'Long'")
  T.raises(function() torch.logcumsumexp(x, 2) end, "Dimension out of range (expected to be in range of [-2, 1], but got 2)")

  local function running(l, better)
    local v, ix = {}, {}
    for j = 1, #l do
      local keep = j > 1 and (v[j - 1] ~= v[j - 1] and l[j] == l[j] or (l[j] == l[j] and better(v[j - 1], l[j])))
      if keep then v[j], ix[j] = v[j - 1], ix[j - 1] else v[j], ix[j] = l[j], j - 1 end
    end
    return v, ix
  end
  local gt = function(a, b) return a > b end
  local lt = function(a, b) return a < b end
  local data = { 1.0, 3.0, 2.0, 3.0, -1.0, 4.0, NaN, 5.0, NaN }
  local v, i = torch.cummax(torch.tensor(data, f64), 0)
  local wv, wi = running(data, gt)
  T.near(v:tolist(), wv, 0, "cummax values (ties take the later index, NaN sticks)")
  T.eq(i:tolist(), wi, "cummax indices")
  v, i = torch.cummin(torch.tensor(data, f64), 0)
  wv, wi = running(data, lt)
  T.near(v:tolist(), wv, 0, "cummin values")
  T.eq(i:tolist(), wi, "cummin indices")
  local ints = torch.randint(0, 4, { 4, 7 })
  local il = ints:tolist()
  v, i = ints:cummax(1)
  local vl, ixl = v:tolist(), i:tolist()
  for r = 1, 4 do
    local a, b = running(il[r], gt)
    T.eq({ vl[r], ixl[r] }, { a, b }, "cummax of ints, row " .. r)
  end
  v, i = torch.cummin(ints, 0)
  local cl = ints:t():tolist()
  vl, ixl = v:t():tolist(), i:t():tolist()
  for c = 1, 7 do
    local a, b = running(cl[c], lt)
    T.eq({ vl[c], ixl[c] }, { a, b }, "cummin of ints along dim 0, column " .. c)
  end
  gradcheck("cummax values", function(t) return (torch.cummax(t, 1)) end, { x })
  gradcheck("cummin values", function(t) return (torch.cummin(t, 0)) end, { x })
end)

T.test("histc, mode, nanmedian against loops", function()
  torch.manual_seed(3)
  local x = torch.randn(200, f64)
  local xl = x:tolist()
  local function hist(bins, lo, hi)
    local o = {}
    for b = 1, bins do o[b] = 0.0 end
    for _, v in ipairs(xl) do
      if v >= lo and v <= hi then
        local b = math.min(math.floor((v - lo) / (hi - lo) * bins), bins - 1)
        o[b + 1] = o[b + 1] + 1
      end
    end
    return o
  end
  T.eq(torch.histc(x, 10, -1, 1):tolist(), hist(10, -1, 1), "histc over [-1, 1]")
  local mn, mx = math.huge, -math.huge
  for _, v in ipairs(xl) do mn, mx = math.min(mn, v), math.max(mx, v) end
  T.eq(torch.histc(x, { bins = 7 }):tolist(), hist(7, mn, mx), "histc over the data's range")
  T.eq(x:histc():numel(), 100, "histc default 100 bins")
  local h = torch.histc(torch.tensor({ 2.0, 2.0 }), 4)
  T.eq({ h.dtype == torch.float32, h:tolist() }, { true, { 0.0, 0.0, 2.0, 0.0 } }, "histc of a constant: [v - 1, v + 1]")
  T.raises(function() torch.histc(x, 0) end, "torch.histc(): bins must be > 0, but got 0 for dimension 0")
  T.raises(function() torch.histc(x, 5, 2, 1) end, "torch.histc(): max must be larger than min")

  local m = torch.randint(0, 4, { 5, 9 })
  local ml = m:tolist()
  local function mode_of(row)
    local count, best, at = {}, nil, nil
    for _, v in ipairs(row) do count[v] = (count[v] or 0) + 1 end
    for v, c in pairs(count) do
      if best == nil or c > count[best] or (c == count[best] and v < best) then best = v end
    end
    for j, v in ipairs(row) do if v == best then at = j - 1 end end
    return best, at
  end
  local vals, idx = torch.mode(m)
  local wv, wi = {}, {}
  for r = 1, 5 do wv[r], wi[r] = mode_of(ml[r]) end
  T.eq({ vals:tolist(), idx:tolist() }, { wv, wi }, "mode along the last dim (smallest, last index)")
  vals, idx = m:mode(0, true)
  local cols = m:t():tolist()
  wv, wi = { {} }, { {} }
  for c = 1, 9 do wv[1][c], wi[1][c] = mode_of(cols[c]) end
  T.eq({ vals:tolist(), idx:tolist() }, { wv, wi }, "mode along dim 0, keepdim")
  local fx = torch.tensor({ { 1.5, 2.5, 2.5, 1.5, 0.5 } }, f64)
  vals, idx = torch.mode(fx, { dim = 1 })
  T.eq({ vals:tolist(), idx:tolist() }, { { 1.5 }, { 3 } }, "mode of floats")

  local rows = { { 3.0, NaN, 1.0, 2.0, 7.0 }, { NaN, NaN, NaN, NaN, NaN }, { 5.0, 4.0, NaN, NaN, 6.0 } }
  local med, at = torch.nanmedian(torch.tensor(rows, f64), 1)
  local ml2, al = med:tolist(), at:tolist()
  for r, row in ipairs(rows) do
    local ok = {}
    for _, v in ipairs(row) do if v == v then ok[#ok + 1] = v end end
    table.sort(ok)
    local want = #ok > 0 and ok[(#ok - 1) // 2 + 1] or NaN
    T.near(ml2[r], want, 0, "nanmedian row " .. r)
    if #ok > 0 then T.eq(row[al[r] + 1], want, "nanmedian index row " .. r) end
  end
  T.eq(torch.nanmedian(torch.tensor({ 4.0, NaN, 1.0, 9.0 })):item(), 4.0, "nanmedian of all elements")
  T.eq(torch.tensor({ { 1.0, NaN } }):nanmedian(1, true):tolist(), { { 1.0 } }, "nanmedian keepdim")
  T.eq(torch.nanmedian(torch.tensor({ 3, 1, 2 })):item(), 2, "nanmedian of ints is median")
end)

T.test("scatter_reduce against loops", function()
  torch.manual_seed(4)
  local self = torch.randn(4, 3, f64)
  local src = torch.randn(6, 3, f64) + 2
  local index = torch.tensor({ { 0, 1, 3 }, { 2, 1, 0 }, { 0, 0, 3 }, { 1, 2, 2 }, { 0, 1, 0 } }) -- smaller than src
  local sl, srcl, il = self:tolist(), src:tolist(), index:tolist()
  local ops = {
    sum = function(a, b) return a + b end, prod = function(a, b) return a * b end,
    amax = math.max, amin = math.min,
  }
  for _, reduce in ipairs({ "sum", "prod", "mean", "amax", "amin" }) do
    for _, incl in ipairs({ true, false }) do
      local acc, cnt = {}, {}
      for r = 1, 4 do
        acc[r], cnt[r] = {}, {}
        for c = 1, 3 do acc[r][c] = incl and sl[r][c] or nil; cnt[r][c] = incl and 1 or 0 end
      end
      for r = 1, 5 do
        for c = 1, 3 do
          local t = il[r][c] + 1
          local v = srcl[r][c]
          local op = ops[reduce] or ops.sum
          acc[t][c] = acc[t][c] == nil and v or op(acc[t][c], v)
          cnt[t][c] = cnt[t][c] + 1
        end
      end
      for r = 1, 4 do
        for c = 1, 3 do
          if acc[r][c] == nil then acc[r][c] = sl[r][c]
          elseif reduce == "mean" then acc[r][c] = acc[r][c] / cnt[r][c] end
        end
      end
      local name = string.format("scatter_reduce %s include_self=%s", reduce, tostring(incl))
      T.near(self:scatter_reduce(0, index, src, reduce, { include_self = incl }):tolist(), acc, 1e-14, name)
      if reduce ~= "prod" then
        gradcheck(name, function(s, t) return s:scatter_reduce(0, index, t, reduce, incl) end, { self, src })
      end
    end
  end
  local y = self:clone()
  local r = y:scatter_reduce_(1, torch.tensor({ { 0, 0 }, { 2, 2 }, { 1, 0 }, { 1, 1 } }), src, "sum")
  local want = self:tolist()
  for i = 1, 4 do
    local ii = ({ { 0, 0 }, { 2, 2 }, { 1, 0 }, { 1, 1 } })[i]
    for j = 1, 2 do want[i][ii[j] + 1] = want[i][ii[j] + 1] + srcl[i][j] end
  end
  T.check(rawequal(r, y) or r == y, "scatter_reduce_ returns self")
  T.near(y:tolist(), want, 1e-14, "scatter_reduce_ in place along dim 1")
  T.eq(torch.tensor({ 1, 2, 3 }):scatter_reduce(0, torch.tensor({ 0, 0, 2 }), torch.tensor({ 4, 5, 7 }), "mean"):tolist(),
    { 3, 2, 5 }, "integer mean floors")
  T.eq(torch.scatter_reduce(torch.zeros(2), 0, torch.tensor({ 1, 1 }), torch.tensor({ 2.0, 3.0 }), "prod", { include_self = false }):tolist(),
    { 0.0, 6.0 }, "torch.scatter_reduce")
  T.raises(function() self:scatter_reduce(0, index, src, "max") end,
    "reduce argument must be either sum, prod, mean, amax or amin, got max")
  T.raises(function() self:scatter_reduce(0, index:to(torch.int32), src, "sum") end, "scatter_reduce(): Expected dtype int64 for index")
  T.raises(function() self:scatter_reduce(0, index, src:float(), "sum") end, "scatter(): Expected self.dtype to be equal to src.dtype")
  T.raises(function() self:scatter_reduce(0, index + 4, src, "sum") end, "index 4 is out of bounds for dimension 0 with size 4")
end)

T.test("testing.assert_close", function()
  local ac = torch.testing.assert_close
  local a = torch.tensor({ 1.0, 2.0, 3.0 })
  T.check(pcall(ac, a, a + 1e-6), "float32 within default tolerance")
  T.raises(function() ac(a, a + 1e-4) end, "~Tensor-likes are not close!")
  T.raises(function() ac(torch.tensor({ 1.0, 2.5, 3.0 }), a) end, "Tensor-likes are not close!\n\n" ..
    "Mismatched elements: 1 / 3 (33.3%)\nGreatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n" ..
    "Greatest relative difference: 0.25 at index (1,) (up to 1.3e-06 allowed)")
  local d = torch.tensor({ 1.0, 2.0 }, f64)
  T.check(pcall(ac, d, d + 5e-8), "float64 within 1e-7")
  T.raises(function() ac(d, d + 1e-6) end, "~(up to 1e-07 allowed)")
  T.raises(function() ac(torch.tensor({ { 1, 2 }, { 3, 4 } }), torch.tensor({ { 1, 2 }, { 3, 5 } })) end, "Tensor-likes are not equal!\n\n" ..
    "Mismatched elements: 1 / 4 (25.0%)\nGreatest absolute difference: 1 at index (1, 1)\n" ..
    "Greatest relative difference: 0.2 at index (1, 1)")
  T.raises(function() ac(a, a:double()) end, "The values for attribute 'dtype' do not match: torch.float32 != torch.float64.")
  T.check(pcall(ac, a, a:double(), { check_dtype = false }), "check_dtype=false")
  T.raises(function() ac(a, torch.zeros(2)) end, "~The values for attribute 'shape' do not match")
  T.check(pcall(ac, a, a + 0.01, { rtol = 0, atol = 0.02 }), "explicit tolerances")
  T.raises(function() ac(a, a, { rtol = 0 }) end, "Both 'rtol' and 'atol' must be either specified or omitted, but got no atol.")
  local n = torch.tensor({ NaN, 1.0 })
  T.raises(function() ac(n, n) end, "~Mismatched elements: 1 / 2 (50.0%)")
  T.check(pcall(ac, n, n, { equal_nan = true }), "equal_nan")
  T.raises(function() ac(a, a * 2, { msg = "custom" }) end, "custom")
  T.raises(function() ac(1.0, 1.5) end, "Scalars are not close!\n\nExpected 1.5 but got 1.0.\n" ..
    "Absolute difference: 0.5 (up to 1e-07 allowed)\nRelative difference: 0.3333333333333333 (up to 1e-07 allowed)")
  T.check(pcall(ac, { 1.0, { 2, 3.0 } }, { 1.0, { 2, 3.0 + 1e-9 } }), "nested lists")
  T.raises(function() ac({ 1.0, { 2, 3.0 } }, { 1.0, { 2, 3.5 } }) end, "~The failure occurred for item [1][1]")
  T.raises(function() ac({ 1, 2 }, { 1 }) end, "The length of the sequences mismatch: 2 != 1")
  T.raises(function() ac(1, 1.0) end, "The (d)types do not match: <class 'int'> != <class 'float'>.")
  T.raises(function() ac(a, 1.0) end, "No comparison pair was able to handle inputs of type <class 'torch.Tensor'> and <class 'float'>.")
end)

T.test("autograd.gradcheck", function()
  torch.manual_seed(5)
  local x = torch.randn(3, f64):requires_grad_()
  local y = torch.randn(3, f64):requires_grad_()
  T.eq(torch.autograd.gradcheck(function(t) return t:sin() * t end, x), true, "a bare tensor input")
  T.eq(torch.autograd.gradcheck(function(a, b) return torch.logcumsumexp(a * b, 0), torch.kron(a, b) end, { x, y }), true,
    "two inputs, two outputs")
  T.eq(torch.autograd.gradcheck(function(a, b) return a * b end, { x, torch.randn(3, f64) }), true, "an input without grad")
  -- a function whose backward is wrong: the detach drops a term
  local wrong = function(a, b) return a * b:detach() + b end
  T.raises(function() torch.autograd.gradcheck(wrong, { x, y }) end, "~Jacobian mismatch for output 0 with respect to input 1,\nnumerical:")
  T.eq(torch.autograd.gradcheck(wrong, { x, y }, { raise_exception = false }), false, "raise_exception=false")
  T.raises(function() torch.autograd.gradcheck(function(t) return t end, torch.randn(2)) end,
    "gradcheck expects at least one input tensor to require gradient, but none of the them have requires_grad=True.")
  T.raises(function() torch.autograd.gradcheck(function(t) return t end, torch.randn(2):requires_grad_()) end, "~not a double precision")
end)

T.test("autograd.functional jacobian, vjp, jvp", function()
  torch.manual_seed(6)
  local F = torch.autograd.functional
  local A = torch.randn(3, 4, f64)
  local x = torch.randn(4, f64)
  local f = function(t) return A:mv(t) * t:sum() end
  -- by hand: d(A x * s)/dx_j = A[:, j] * s + A x
  local Al, xl = A:tolist(), x:tolist()
  local s, Ax = 0, {}
  for j = 1, 4 do s = s + xl[j] end
  for i = 1, 3 do Ax[i] = 0 for j = 1, 4 do Ax[i] = Ax[i] + Al[i][j] * xl[j] end end
  local want = {}
  for i = 1, 3 do want[i] = {} for j = 1, 4 do want[i][j] = Al[i][j] * s + Ax[i] end end
  local J = F.jacobian(f, x)
  T.near(J:tolist(), want, 1e-12, "jacobian of one input and output")
  T.check(not J.requires_grad and not x.requires_grad, "jacobian is detached, input untouched")
  local Js = F.jacobian(function(a, b) return a * b, (a + b):sum() end, { torch.tensor({ 1.0, 2.0 }), torch.tensor({ 3.0, 4.0 }) })
  T.eq({ Js[1][1]:tolist(), Js[1][2]:tolist(), Js[2][1]:tolist(), Js[2][2]:tolist() },
    { { { 3.0, 0.0 }, { 0.0, 4.0 } }, { { 1.0, 0.0 }, { 0.0, 2.0 } }, { 1.0, 1.0 }, { 1.0, 1.0 } }, "jacobian per output per input")
  T.eq(shape(F.jacobian(function(m) return m:sum(1) end, torch.zeros(2, 3))), { 2, 2, 3 }, "jacobian shape out .. in")
  T.eq(F.jacobian(function(_) return torch.ones(2) end, torch.zeros(2)):tolist(), { { 0.0, 0.0 }, { 0.0, 0.0 } }, "constant output")

  local v = torch.randn(3, f64)
  local out, vj = F.vjp(f, x, v)
  local vl, wv = v:tolist(), {}
  for j = 1, 4 do wv[j] = 0 for i = 1, 3 do wv[j] = wv[j] + vl[i] * want[i][j] end end
  T.near(out:tolist(), f(x):tolist(), 1e-15, "vjp output")
  T.near(vj:tolist(), wv, 1e-12, "vjp")
  local _, g = F.vjp(function(t) return (t * t):sum() end, x)
  T.near(g:tolist(), (x * 2):tolist(), 1e-15, "vjp of a scalar without v")
  T.raises(function() F.vjp(f, x) end, "~The vector v can only be None")

  local u = torch.randn(4, f64)
  local o2, jv = F.jvp(f, x, u)
  local ul, wj = u:tolist(), {}
  for i = 1, 3 do wj[i] = 0 for j = 1, 4 do wj[i] = wj[i] + want[i][j] * ul[j] end end
  T.near(o2:tolist(), f(x):tolist(), 1e-15, "jvp output")
  T.near(jv:tolist(), wj, 1e-12, "jvp")
  local _, jv2 = F.jvp(function(a, b) return a * b end, { torch.tensor({ 1.0, 2.0 }), torch.tensor({ 3.0, 4.0 }) },
    { torch.tensor({ 1.0, 0.0 }), torch.tensor({ 0.0, 1.0 }) })
  T.eq(jv2:tolist(), { 3.0, 2.0 }, "jvp of two inputs")
  T.raises(function() F.jvp(f, x, torch.ones(3)) end, "~v has invalid size: should be torch.Size([4]) but got torch.Size([3]).")

  T.raises(function() F.hessian(function(t) return { t:sum(), t:sum() } end, x) end,
    "The function given to hessian should return a single Tensor")
end)
