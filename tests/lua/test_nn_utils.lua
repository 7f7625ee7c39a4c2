-- nn.utils (clip_grad_norm_ & co, parameters_to_vector), torch.equal / isclose / allclose,
-- torch.inference_mode, cumsum / cumprod, and iterating containers.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }

local function flat(t) -- a tensor's elements as a flat Lua list
  local out = {}
  local function walk(v) if type(v) == "table" then for _, e in ipairs(v) do walk(e) end else out[#out + 1] = v end end
  walk(t:tolist())
  return out
end

-- ---- clip_grad_norm_ against an element-by-element reference ----

local function ref_total(lists, p)
  local acc = 0
  for _, l in ipairs(lists) do
    for _, v in ipairs(l) do
      if p == math.huge then acc = math.max(acc, math.abs(v)) else acc = acc + math.abs(v) ^ p end
    end
  end
  return p == math.huge and acc or acc ^ (1 / p)
end

local function make_params(scale)
  torch.manual_seed(7)
  local ps = { torch.randn(3, 4, f64):requires_grad_(), torch.randn(5, f64):requires_grad_(),
    torch.randn(2, 2, f64):requires_grad_(), torch.randn(6, f64):requires_grad_() }
  ps[1].grad = torch.randn(3, 4, f64) * scale
  ps[2].grad = torch.randn(5, f64) * scale
  -- ps[3] has no grad
  ps[4].grad = torch.randn(6, f64):t() * scale -- t() of 1-D: same values
  return ps
end

T.test("clip_grad_norm_ matches a reference", function()
  for _, case in ipairs({ { 2, 2.0 }, { 1, 1.0 }, { math.huge, math.huge }, { "inf", math.huge }, { 3, 3.0 } }) do
    for _, max_norm in ipairs({ 0.5, 1e3 }) do
      local ps = make_params(2.0)
      local before = { flat(ps[1].grad), flat(ps[2].grad), flat(ps[4].grad) }
      local total = ref_total(before, case[2])
      local coef = math.min(max_norm / (total + 1e-6), 1)
      local got = nn.utils.clip_grad_norm_(ps, max_norm, case[1])
      local what = string.format("norm_type %s, max_norm %g", tostring(case[1]), max_norm)
      T.check(torch.is_tensor(got) and got:dim() == 0, what .. ": returns a 0-dim tensor")
      T.near(got:item(), total, 1e-12, what .. ": total norm")
      T.check(not got.requires_grad, what .. ": total norm has no grad")
      for j, i in ipairs({ 1, 2, 4 }) do
        local want = {}
        for k, v in ipairs(before[j]) do want[k] = v * coef end
        T.near(flat(ps[i].grad), want, 1e-12, what .. ": grad " .. i)
      end
      T.eq(ps[3].grad, nil, what .. ": a nil grad stays nil")
    end
  end
end)

T.test("clip_grad_norm_ forms", function()
  -- keyword form, float32, a single tensor
  local p = torch.zeros(4):requires_grad_()
  p.grad = torch.tensor({ 3., 0., -4., 0. })
  local n = torch.nn.utils.clip_grad_norm_(p, { max_norm = 1, norm_type = 2 })
  T.near(n:item(), 5, 1e-6, "single tensor: total")
  T.near(flat(p.grad), { 0.6, 0, -0.8, 0 }, 1e-5, "single tensor: clipped")
  T.eq(n.dtype, torch.float32, "total norm keeps the grads' dtype")
  -- model:parameters() after a backward
  torch.manual_seed(1)
  local m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
  local loss = (m(torch.randn(16, 4)) * 100):sum()
  loss:backward()
  local lists = {}
  for i, q in ipairs(m:parameters()) do lists[i] = flat(q.grad) end
  local want = ref_total(lists, 2)
  T.near(nn.utils.clip_grad_norm_(m:parameters(), 1.0):item(), want, 1e-5, "model: total")
  lists = {}
  for i, q in ipairs(m:parameters()) do lists[i] = flat(q.grad) end
  T.near(ref_total(lists, 2), 1.0, 1e-5, "model: norm after clipping is max_norm")
  -- no grads at all
  local none = nn.utils.clip_grad_norm_({ torch.ones(2):requires_grad_() }, 1.0)
  T.eq(none:item(), 0.0, "no grads: total is 0")
  T.eq(nn.utils.clip_grad_norm_({}, 1.0):item(), 0.0, "empty list: total is 0")
  -- errors
  T.raises(function() nn.utils.clip_grad_norm_(m, 1.0) end, "~parameters must be a Tensor or a list of Tensors")
  T.raises(function() nn.utils.clip_grad_norm_({ 1, 2 }, 1.0) end, "~parameters[1] is int, not a Tensor")
  T.raises(function() nn.utils.clip_grad_norm_(p) end, "~missing required argument 'max_norm'")
  T.raises(function() nn.utils.clip_grad_norm_(p, 1, { bogus = 1 }) end, "~unknown keyword 'bogus'")
end)

T.test("clip_grad_norm_ with non-finite grads", function()
  local p = torch.zeros(3):requires_grad_()
  p.grad = torch.tensor({ 1., math.huge, 2. })
  T.raises(function() nn.utils.clip_grad_norm_(p, 1.0, { error_if_nonfinite = true }) end,
    "~The total norm of order 2.0 for gradients from `parameters` is non-finite")
  T.eq(flat(p.grad), { 1., math.huge, 2. }, "error_if_nonfinite leaves the grads alone")
  local n = nn.utils.clip_grad_norm_(p, 1.0)
  T.eq(n:item(), math.huge, "total is inf")
  local g = flat(p.grad)
  T.check(g[1] == 0 and g[2] ~= g[2], "grads scaled by max_norm / inf = 0 (inf * 0 is nan), as PyTorch")
  p.grad = torch.tensor({ 0 / 0, 1., 0. })
  T.raises(function() nn.utils.clip_grad_norm_(p, 1.0, "inf", true) end,
    "~The total norm of order inf for gradients")
end)

T.test("get_total_norm / clip_grads_with_norm_", function()
  local ps = make_params(3.0)
  local grads = { ps[1].grad, ps[2].grad, ps[4].grad }
  local before = { flat(grads[1]), flat(grads[2]), flat(grads[3]) }
  local total = nn.utils.get_total_norm(grads, 1)
  T.near(total:item(), ref_total(before, 1), 1e-12, "get_total_norm(grads, 1)")
  T.eq(flat(grads[1]), before[1], "get_total_norm does not touch the tensors")
  nn.utils.clip_grads_with_norm_(ps, 2.0, total)
  local coef = 2.0 / (ref_total(before, 1) + 1e-6)
  local want = {}
  for k, v in ipairs(before[2]) do want[k] = v * coef end
  T.near(flat(ps[2].grad), want, 1e-12, "clip_grads_with_norm_ scales by max_norm / total")
  T.eq(nn.utils.get_total_norm({}):item(), 0.0, "get_total_norm of nothing")
  T.check(nn.utils.clip_grad.clip_grad_norm_ == nn.utils.clip_grad_norm_, "nn.utils.clip_grad module")
  T.check(torch.nn.utils == nn.utils, "torch.nn.utils is nn.utils")
end)

T.test("clip_grad_value_", function()
  local ps = make_params(2.0)
  local before = { flat(ps[1].grad), flat(ps[2].grad) }
  T.eq(nn.utils.clip_grad_value_(ps, 0.75), nil, "returns nothing")
  for j = 1, 2 do
    local want = {}
    for k, v in ipairs(before[j]) do want[k] = math.max(-0.75, math.min(0.75, v)) end
    T.near(flat(ps[j].grad), want, 0, "grad " .. j .. " clamped")
  end
  T.eq(ps[3].grad, nil, "nil grad stays nil")
  local p = torch.zeros(2):requires_grad_()
  p.grad = torch.tensor({ -5., 5. })
  nn.utils.clip_grad_value_(p, { clip_value = 1 })
  T.eq(flat(p.grad), { -1.0, 1.0 }, "single tensor, keyword")
end)

-- ---- parameters_to_vector / vector_to_parameters ----

T.test("parameter vectors", function()
  torch.manual_seed(3)
  local m = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
  local want = {}
  for _, p in ipairs(m:parameters()) do for _, v in ipairs(flat(p)) do want[#want + 1] = v end end
  local v = nn.utils.parameters_to_vector(m:parameters())
  T.eq(v.shape:totable(), { 11 }, "vector length")
  T.eq(flat(v), want, "vector holds the parameters in order")
  v:sum():backward()
  T.eq(flat(m[0].weight.grad), { 1., 1., 1., 1., 1., 1. }, "parameters_to_vector is differentiable")
  local w = torch.arange(11):float() * 0.5
  nn.utils.vector_to_parameters(w, m:parameters())
  T.eq(flat(m[0].weight), { 0., 0.5, 1., 1.5, 2., 2.5 }, "weight from the vector")
  T.eq(m[0].weight.shape:totable(), { 2, 3 }, "weight keeps its shape")
  T.eq(flat(m[2].bias), { 5.0 }, "last bias")
  T.check(m[0].weight.requires_grad, "still a parameter that requires grad")
  T.eq(flat(nn.utils.parameters_to_vector(m:parameters())), flat(w), "round trip")
  T.eq(flat(m(torch.ones(1, 3))), { 4.5 * 4 + 9.5 * 4.5 + 5 }, "the module computes with the new values")
  local nt = torch.ones(2, 3):t() -- non-contiguous parameter
  T.eq(flat(nn.utils.parameters_to_vector({ nt, torch.zeros(1) })), { 1., 1., 1., 1., 1., 1., 0. }, "non-contiguous")
  T.raises(function() nn.utils.vector_to_parameters({ 1, 2 }, m:parameters()) end, "~expected torch.Tensor, but got:")
end)

-- ---- equal / isclose / allclose ----

T.test("equal", function()
  local a = torch.tensor({ { 1., 2. }, { 3., 4. } })
  T.eq(torch.equal(a, a:clone()), true, "same values")
  T.eq(a:equal(a:t():t()), true, "method form")
  T.eq(torch.equal(a, a:t()), false, "different values")
  T.eq(torch.equal(a, torch.tensor({ 1., 2., 3., 4. })), false, "different shape")
  T.eq(torch.equal(torch.ones(2, 3), torch.ones(3)), false, "no broadcasting")
  T.eq(torch.equal(torch.tensor({ 1, 2 }), torch.tensor({ 1., 2. })), true, "dtypes may differ")
  T.eq(torch.equal(torch.tensor({ true, false }), torch.tensor({ 1, 0 })), true, "bool vs int")
  local nan = torch.tensor({ 0 / 0, 1. })
  T.eq(torch.equal(nan, nan), false, "nan is never equal")
  T.eq(torch.equal(torch.tensor({ math.huge }), torch.tensor({ math.huge })), true, "inf equals inf")
  T.eq(torch.equal(torch.zeros(0), torch.zeros(0)), true, "empty")
  T.eq(torch.equal(torch.zeros(0), torch.zeros(0, 2)), false, "empty, other shape")
  T.raises(function() torch.equal(a, 1) end, "equal(): argument 'other' (position 2) must be Tensor, not int")
end)

T.test("isclose against a reference", function()
  torch.manual_seed(11)
  local a = torch.randn(4, 5, f64)
  local noise = torch.randn(4, 5, f64) * 1e-3
  local b = (a + noise * torch.randint(0, 2, { 4, 5 }):double()):t():contiguous():t() -- non-contiguous other
  local specials = { { 0 / 0, 0 / 0 }, { math.huge, math.huge }, { math.huge, -math.huge }, { math.huge, 1e308 },
    { 1., 0 / 0 }, { 0., 1e-9 }, { 0., 1e-7 } }
  local av, bv = flat(a), flat(b)
  for k, s in ipairs(specials) do av[k], bv[k] = s[1], s[2] end
  a, b = torch.tensor(av, f64):view(4, 5), torch.tensor(bv, f64):view(4, 5)
  for _, o in ipairs({ {}, { rtol = 1e-3, atol = 1e-4 }, { rtol = 0, atol = 0 }, { equal_nan = true } }) do
    local rtol, atol, en = o.rtol or 1e-5, o.atol or 1e-8, o.equal_nan or false
    local want = {}
    for k = 1, #av do
      local x, y = av[k], bv[k]
      local c = x == y or (en and x ~= x and y ~= y)
      if not c and rtol + atol > 0 then
        local d = math.abs(x - y)
        c = d == d and d ~= math.huge and d <= atol + rtol * math.abs(y)
      end
      want[k] = c
    end
    local got = torch.isclose(a, b, o)
    T.eq(got.dtype, torch.bool, "bool result")
    T.eq(flat(got), want, string.format("isclose rtol=%g atol=%g equal_nan=%s", rtol, atol, tostring(en)))
    local all = true
    for _, c in ipairs(want) do all = all and c end
    T.eq(torch.allclose(a, b, o), all, "allclose agrees")
  end
  T.eq(flat(a:isclose(b, 0, 0, true)), flat(torch.isclose(a, b, { rtol = 0, atol = 0, equal_nan = true })),
    "positional rtol, atol, equal_nan")
end)

T.test("isclose / allclose edge cases", function()
  T.eq(torch.isclose(torch.ones(2, 3), torch.tensor({ 1., 1.5, 1. })).shape:totable(), { 2, 3 }, "broadcast shape")
  T.eq(torch.allclose(torch.ones(2, 3), torch.tensor(1.)), true, "broadcast against a 0-dim tensor")
  T.eq(torch.allclose(torch.ones(3), torch.tensor({ 1., 1., 1.1 })), false, "one element off")
  T.eq(torch.allclose(torch.tensor({ 1e10 }), torch.tensor({ 1.000005e10 })), true, "relative tolerance")
  T.eq(torch.allclose(torch.tensor({ 0 / 0 }), torch.tensor({ 0 / 0 })), false, "nan")
  T.eq(torch.allclose(torch.tensor({ 0 / 0 }), torch.tensor({ 0 / 0 }), { equal_nan = true }), true, "nan, equal_nan")
  T.eq(torch.ones(2):allclose(torch.ones(2) + 1e-9), true, "method form")
  T.eq(torch.allclose(torch.zeros(0), torch.zeros(0)), true, "empty")
  T.eq(flat(torch.isclose(torch.tensor({ 10, 20 }), torch.tensor({ 11, 23 }), { rtol = 0.1 })), { true, false },
    "integers compare with tolerance")
  T.eq(flat(torch.isclose(torch.tensor({ true, false }), torch.tensor({ true, true }))), { true, false }, "bool")
  T.raises(function() torch.allclose(torch.ones(2), torch.ones(2, f64)) end, "Float did not match Double")
  T.raises(function() torch.isclose(torch.ones(2, { dtype = torch.int64 }), torch.ones(2)) end, "Long did not match Float")
  T.raises(function() torch.isclose(torch.ones(2), 1.0) end, "isclose(): argument 'other' (position 2) must be Tensor, not float")
  T.raises(function() torch.isclose(torch.ones(2), torch.ones(2), -1) end, "rtol must be greater than or equal to zero, but got -1.0")
  T.raises(function() torch.isclose(torch.ones(2), torch.ones(3)) end, "~")
  local x = torch.ones(2):requires_grad_()
  T.check(not torch.isclose(x, x * 1).requires_grad, "isclose builds no graph")
end)

T.test("isnan / isinf / isfinite", function()
  local x = torch.tensor({ 1., 0 / 0, math.huge, -math.huge, 0. })
  T.eq(flat(x:isnan()), { false, true, false, false, false }, "isnan")
  T.eq(flat(torch.isinf(x)), { false, false, true, true, false }, "isinf")
  T.eq(flat(torch.isfinite(x)), { true, false, false, false, true }, "isfinite")
  T.eq(flat(torch.isfinite(torch.tensor({ 1, 2 }))), { true, true }, "isfinite of integers")
end)

-- ---- inference_mode ----

T.test("inference_mode", function()
  local x = torch.ones(2):requires_grad_()
  do
    local _ <close> = torch.inference_mode()
    T.eq(torch.is_grad_enabled(), false, "<close>: grad off")
    T.eq((x * 2).requires_grad, false, "<close>: no graph")
  end
  T.eq(torch.is_grad_enabled(), true, "restored after the block")
  local a, b = torch.inference_mode(function() return x * 3, torch.is_grad_enabled() end)
  T.eq({ a.requires_grad, b }, { false, false }, "function form returns its results")
  T.eq(torch.is_grad_enabled(), true, "restored after the function")
  T.raises(function() torch.inference_mode(function() error("boom", 0) end) end, "boom")
  T.eq(torch.is_grad_enabled(), true, "restored after an error")
  do
    local _ <close> = torch.inference_mode(false)
    T.eq(torch.is_grad_enabled(), true, "inference_mode(false) changes nothing")
  end
  T.eq(torch.inference_mode(true, function() return torch.is_grad_enabled() end), false, "mode and function")
end)

-- ---- cumsum / cumprod ----

-- reference scan along dim d of a 2-D list
local function ref_scan(rows, d, op)
  local out = {}
  for i, r in ipairs(rows) do out[i] = {} for j, v in ipairs(r) do out[i][j] = v end end
  for i = 1, #out do
    for j = 1, #out[1] do
      if d == 0 and i > 1 then out[i][j] = op(out[i - 1][j], out[i][j]) end
      if d == 1 and j > 1 then out[i][j] = op(out[i][j - 1], out[i][j]) end
    end
  end
  return out
end

T.test("cumsum / cumprod values", function()
  torch.manual_seed(5)
  local x = torch.randn(7, 5, f64):t() -- [5, 7], non-contiguous
  local rows = x:tolist()
  local add, mul = function(p, q) return p + q end, function(p, q) return p * q end
  for _, d in ipairs({ 0, 1, -1, -2 }) do
    local dd = d < 0 and d + 2 or d
    T.near(torch.cumsum(x, d):tolist(), ref_scan(rows, dd, add), 1e-12, "cumsum dim " .. d)
    T.near(x:cumprod(d):tolist(), ref_scan(rows, dd, mul), 1e-12, "cumprod dim " .. d)
  end
  local long = torch.arange(1, 101)
  local want, acc = {}, 0
  for i = 1, 100 do acc = acc + i; want[i] = acc end
  T.eq(flat(long:cumsum(0)), want, "cumsum of 100 integers")
  T.eq(long:cumsum(0).dtype, torch.int64, "integer cumsum is int64")
  T.eq(torch.tensor({ 1, 2, 3 }, { dtype = torch.int32 }):cumprod(0).dtype, torch.int64, "int32 cumprod is int64")
  T.eq(flat(torch.tensor({ true, false, true }):cumsum(0)), { 1, 1, 2 }, "bool cumsum counts")
  T.eq(torch.cumsum(torch.tensor({ 1, 2 }), 0, { dtype = torch.float64 }).dtype, torch.float64, "dtype keyword")
  T.eq(torch.tensor({ 1., 2. }):cumsum(0).dtype, torch.float32, "float stays float")
  T.eq(torch.tensor(3.):cumsum(0):item(), 3.0, "0-dim")
  T.eq(torch.zeros(0, 3):cumsum(0).shape:totable(), { 0, 3 }, "empty")
  local one = torch.ones(1, 4)
  local c = one:cumsum(0)
  c:fill_(5)
  T.eq(one:sum():item(), 4.0, "a size-1 scan is a copy, not a view")
  T.raises(function() torch.cumsum(x, 2) end, "Dimension out of range (expected to be in range of [-2, 1], but got 2)")
  T.raises(function() torch.cumsum(x) end, "~missing required argument 'dim'")
  T.near(flat(torch.tensor({ 2., 0., 3., 4. }):cumprod(0)), { 2, 0, 0, 0 }, 0, "cumprod with a zero")
end)

T.test("cumsum / cumprod gradients", function()
  torch.manual_seed(9)
  local function rnd(...) return torch.randn({ ... }, f64) end
  gradcheck("cumsum dim 0", function(x) return x:cumsum(0) end, { rnd(6, 3) })
  gradcheck("cumsum dim -1", function(x) return torch.cumsum(x, -1) end, { rnd(2, 3, 5):transpose(0, 2) })
  gradcheck("cumprod dim 1", function(x) return x:cumprod(1) end, { rnd(3, 5) })
  local z = rnd(2, 5)
  z[0][2] = 0; z[1][1] = 0; z[1][3] = 0 -- one and two zeros in a row
  gradcheck("cumprod with zeros", function(x) return x:cumprod(1) end, { z })
end)

-- ---- iterating containers ----

T.test("container iteration", function()
  local s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
  local ran = 0
  T.raises(function() for _ in ipairs(s) do ran = ran + 1 end end, "~ipairs() cannot walk a Sequential")
  T.eq(ran, 0, "ipairs stops before running the body")
  local names = {}
  for i, m in pairs(s) do names[#names + 1] = i .. m:_get_name() end
  T.eq(names, { "0Linear", "1ReLU", "2Linear" }, "pairs walks every module, 0-based")
  names = {}
  for i, m in ipairs(s:children()) do names[#names + 1] = i .. m:_get_name() end
  T.eq(names, { "1Linear", "2ReLU", "3Linear" }, "ipairs(s:children())")
  T.eq(s[1]:_get_name(), "ReLU", "explicit s[1] still indexes 0-based")
  T.raises(function() return s[3] end, "index 3 is out of range")
  local ml = nn.ModuleList({ nn.Tanh() })
  T.raises(function() for _ in ipairs(ml) do end end, "~ipairs() cannot walk a ModuleList")
  T.raises(function() for _ in ipairs(nn.ModuleList()) do end end, "~ipairs() cannot walk a ModuleList")
  local Sub = nn.Module.extend(nn.Sequential, "Sub") -- (Sequential:extend appends modules)
  T.raises(function() for _ in ipairs(Sub(nn.ReLU(), nn.ReLU())) do end end, "~ipairs() cannot walk a Sub")
  local idx = {}
  for i in ml:enumerate() do idx[#idx + 1] = i end
  T.eq(idx, { 0 }, "enumerate")
end)

-- ---- the 2-norm's one pass over many tensors: dtypes, layouts, sizes past one chunk ----

local function mixed_grads(device)
  torch.manual_seed(11)
  return {
    torch.randn(40000):to(device), -- several 16384-element chunks
    torch.randn(50, 80):narrow(1, 3, 70):to(device), -- not dense
    torch.randn(20001):narrow(0, 1, 20000):to(device), -- dense, not 16-byte aligned
    torch.randn(1000):half():to(device),
    torch.randn(777):bfloat16():to(device),
  }
end

local function norm_reference(ts)
  local acc = 0
  for _, t in ipairs(ts) do acc = acc + (t:double() ^ 2):sum():item() end
  return math.sqrt(acc)
end

T.test("get_total_norm of mixed dtypes and layouts", function()
  local ts = mixed_grads("cpu")
  local got = nn.utils.get_total_norm(ts)
  T.eq(got.dtype, torch.float32, "the promoted dtype")
  T.near(got:item(), norm_reference(ts), 1e-5 * norm_reference(ts), "2-norm")
  T.near(nn.utils.get_total_norm(ts, 3):item(), nn.utils.get_total_norm(ts, 3.0):item(), 0, "other orders take the per-tensor path")
end)

-- ---- the same on CUDA, against the CPU results ----

T.test("on CUDA", function()
  if not torch.cuda.is_available() then return T.skip("no GPU: CUDA clip_grad_norm_ / isclose / cumsum", 9) end
  local ps, cps = make_params(2.0), {}
  for i, p in ipairs(make_params(2.0)) do
    cps[i] = p:detach():cuda():requires_grad_()
    if p.grad ~= nil then cps[i].grad = p.grad:cuda() end
  end
  local want = nn.utils.clip_grad_norm_(ps, 0.5)
  local got = nn.utils.clip_grad_norm_(cps, 0.5)
  T.eq(tostring(got.device), "cuda:0", "total norm stays on the GPU")
  T.near(got:item(), want:item(), 1e-12, "cuda total norm")
  T.near(flat(cps[1].grad:cpu()), flat(ps[1].grad), 1e-12, "cuda grads clipped")
  local ts = mixed_grads("cuda")
  local total = nn.utils.get_total_norm(ts)
  T.eq(tostring(total.device) .. " " .. tostring(total.dtype), "cuda:0 torch.float32", "mixed: device and dtype")
  T.near(total:item(), norm_reference(ts), 1e-5 * norm_reference(ts), "mixed dtypes and layouts: 2-norm")
  local function as_params(gs)
    local out = {}
    for i, g in ipairs(gs) do
      out[i] = torch.zeros_like(g):requires_grad_()
      out[i].grad = g
    end
    return out
  end
  local cpu_ps, cuda_ps = as_params(mixed_grads("cpu")), as_params(mixed_grads("cuda"))
  nn.utils.clip_grad_norm_(cpu_ps, 1.0)
  nn.utils.clip_grad_norm_(cuda_ps, 1.0) -- one scaling pass over the float32/16-bit gradients
  local worst = 0
  for i = 1, #cpu_ps do
    local d = (cuda_ps[i].grad:cpu():double() - cpu_ps[i].grad:double()):abs():max():item()
    worst = math.max(worst, d / cpu_ps[i].grad:double():abs():max():item())
  end
  T.check(worst < 1e-2, "mixed: clipped gradients as on the CPU (worst relative difference " .. worst .. ")")
  local x = torch.randn(6, 5, f64)
  T.near(x:cuda():cumsum(0):cpu():tolist(), x:cumsum(0):tolist(), 1e-12, "cuda cumsum")
  T.eq(flat(x:cuda():isclose(x:cuda() + 1e-9)), flat(x:isclose(x + 1e-9)), "cuda isclose")
  T.eq(torch.equal(x:cuda(), x:cuda():clone()), true, "cuda equal")
end)
