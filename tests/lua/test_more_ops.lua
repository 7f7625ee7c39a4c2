-- torch_more_ops.lua: flip/roll/tril/triu/diag/diagonal/trace/logsumexp/lerp/nonzero/
-- masked_select/repeat_interleave/repeat/tile/mv/baddbmm/addmv/addr/clamp_min/clamp_max
-- against plain Lua references over tolist(), on non-contiguous inputs of every dtype;
-- gradients against float64 finite differences; PyTorch's error messages; CUDA if present.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)

local f64 = { dtype = torch.float64 }
local dtypes = { torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8, torch.bool }

-- ---- plain-Lua n-d arrays: {flat = row-major values, shape = list} ----
local function flatten(v, out)
  out = out or {}
  if type(v) ~= "table" then out[#out + 1] = v; return out end
  for _, e in ipairs(v) do flatten(e, out) end
  return out
end
local function arr(t) return { flat = flatten(t:tolist()), shape = t.shape:totable() } end
local function get(a, idx)
  local k = 0
  for d = 1, #a.shape do k = k * a.shape[d] + idx[d] end
  return a.flat[k + 1]
end
-- nested list of `shape` with element f(idx) (idx: 0-based list)
local function build(shape, f)
  if #shape == 0 then return f({}) end
  local idx = {}
  local function rec(d)
    local out = {}
    for i = 0, shape[d] - 1 do
      idx[d] = i
      if d == #shape then out[i + 1] = f({ table.unpack(idx, 1, #shape) }) else out[i + 1] = rec(d + 1) end
    end
    return out
  end
  return rec(1)
end
local function copy(t) return { table.unpack(t) } end

-- values 0..4 (exact in every dtype), made non-contiguous by a transpose when 2-D or more
local function input(shape, dtype, seed)
  torch.manual_seed(seed or 1)
  local s = copy(shape)
  if #s >= 2 then s[1], s[2] = s[2], s[1] end
  local x = torch.randint(0, 5, s):to(dtype)
  if #s >= 2 then x = x:transpose(0, 1) end
  return x
end

local function tname(dt) return tostring(dt):sub(7) end

T.test("flip / fliplr / flipud", function()
  for _, dt in ipairs(dtypes) do
    local x = input({ 3, 4, 2 }, dt)
    local a = arr(x)
    for _, dims in ipairs({ { 0 }, { -1 }, { 0, 2 }, { 1, -3, 2 }, {} }) do
      local want = build(a.shape, function(idx)
        idx = copy(idx)
        for _, d in ipairs(dims) do d = d % 3; idx[d + 1] = a.shape[d + 1] - 1 - idx[d + 1] end
        return get(a, idx)
      end)
      T.eq(x:flip(dims):tolist(), want, "flip " .. tname(dt) .. " " .. T.show(dims))
    end
    T.eq(torch.flip(x, { dims = 1 }):tolist(), x:flip({ 1 }):tolist(), "flip keyword " .. tname(dt))
    T.eq(x:fliplr():tolist(), x:flip({ 1 }):tolist(), "fliplr " .. tname(dt))
    T.eq(torch.flipud(x):tolist(), x:flip({ 0 }):tolist(), "flipud " .. tname(dt))
  end
  T.eq(torch.zeros(0, 3):flip({ 0, 1 }).shape:totable(), { 0, 3 }, "flip empty")
  T.eq(torch.tensor(7):flip({ 0 }):item(), 7, "flip 0-dim")
  T.eq(torch.tensor({ 5 }):flip({ 0 }):tolist(), { 5 }, "flip size 1")
  local x = torch.tensor({ 1, 2 })
  local y = x:flip({})
  y[0] = 9
  T.eq(x:tolist(), { 1, 2 }, "flip returns a copy")
end)

T.test("roll", function()
  for _, dt in ipairs(dtypes) do
    local x = input({ 3, 4 }, dt, 2)
    local a = arr(x)
    local cases = { { { 1 }, { 0 } }, { { -5 }, { -1 } }, { { 2, 7 }, { 0, 1 } }, { { 0 }, { 1 } } }
    for _, c in ipairs(cases) do
      local want = build(a.shape, function(idx)
        idx = copy(idx)
        for i, d in ipairs(c[2]) do d = d % 2; idx[d + 1] = (idx[d + 1] - c[1][i]) % a.shape[d + 1] end
        return get(a, idx)
      end)
      T.eq(x:roll(c[1], c[2]):tolist(), want, "roll " .. tname(dt) .. " " .. T.show(c[1]))
    end
    -- no dims: over the flattened tensor
    local flat = a.flat
    local want = build(a.shape, function(idx)
      return flat[((idx[1] * 4 + idx[2]) - 3) % 12 + 1]
    end)
    T.eq(torch.roll(x, 3):tolist(), want, "roll flat " .. tname(dt))
  end
  T.eq(torch.roll(torch.tensor({ 1, 2, 3 }), { shifts = 1, dims = 0 }):tolist(), { 3, 1, 2 }, "roll keywords")
  T.eq(torch.zeros(0, 2):roll(1, 0).shape:totable(), { 0, 2 }, "roll empty")
  T.eq(torch.tensor({ 4 }):roll(3):tolist(), { 4 }, "roll size 1")
end)

T.test("tril / triu", function()
  for _, dt in ipairs(dtypes) do
    for _, shape in ipairs({ { 3, 4 }, { 2, 4, 3 }, { 1, 1 }, { 0, 3 } }) do
      local x = input(shape, dt, 3)
      local a = arr(x)
      local zero = 0
      if dt == torch.bool then zero = false elseif x:is_floating_point() then zero = 0.0 end
      for _, k in ipairs({ 0, 1, -1, -5, 5 }) do
        local lower = build(a.shape, function(idx)
          local i, j = idx[#idx - 1], idx[#idx]
          if j - i <= k then return get(a, idx) end
          return zero
        end)
        local upper = build(a.shape, function(idx)
          local i, j = idx[#idx - 1], idx[#idx]
          if j - i >= k then return get(a, idx) end
          return zero
        end)
        T.eq(x:tril(k):tolist(), lower, "tril " .. tname(dt) .. " k=" .. k)
        T.eq(torch.triu(x, { diagonal = k }):tolist(), upper, "triu " .. tname(dt) .. " k=" .. k)
      end
    end
  end
  T.eq(torch.ones(2, 2):tril().dtype, torch.float32, "tril dtype")
end)

T.test("diag / diagonal / trace", function()
  for _, dt in ipairs(dtypes) do
    local v = input({ 3 }, dt, 4)
    local vl = v:tolist()
    local zero = 0
    if dt == torch.bool then zero = false elseif v:is_floating_point() then zero = 0.0 end
    for _, k in ipairs({ 0, 2, -1 }) do
      local n = 3 + math.abs(k)
      local want = build({ n, n }, function(idx)
        local i, j = idx[1], idx[2]
        if j - i ~= k then return zero end
        return vl[math.min(i, j) + 1]
      end)
      T.eq(torch.diag(v, k):tolist(), want, "diag 1-D " .. tname(dt) .. " k=" .. k)
    end
    local x = input({ 3, 4 }, dt, 5)
    local a = arr(x)
    for _, k in ipairs({ 0, 1, -2, 3, 4, -3 }) do
      local want = {}
      for i = 0, 2 do
        local j = i + k
        if j >= 0 and j < 4 then want[#want + 1] = get(a, { i, j }) end
      end
      T.eq(x:diag(k):tolist(), want, "diag 2-D " .. tname(dt) .. " k=" .. k)
      T.eq(torch.diagonal(x, k):tolist(), want, "diagonal " .. tname(dt) .. " k=" .. k)
    end
    -- 3-D over dims (2, 0): the remaining dim first, the diagonal last
    local y = input({ 2, 3, 4 }, dt, 6)
    local b = arr(y)
    local want = build({ 3, 2 }, function(idx) return get(b, { idx[2], idx[1], idx[2] + 1 }) end)
    T.eq(y:diagonal({ offset = -1, dim1 = 2, dim2 = 0 }):tolist(), want, "diagonal 3-D " .. tname(dt))
  end
  T.eq(torch.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }):trace():item(), 5, "trace int")
  T.near(torch.tensor({ { 1.5, 2 }, { 3, 4 } }):t():trace():item(), 5.5, 1e-6, "trace float")
  T.eq(torch.zeros(0):diag().shape:totable(), { 0, 0 }, "diag empty")
  T.eq(torch.zeros(2, 3):diagonal(5).shape:totable(), { 0 }, "diagonal past the edge")
end)

-- plain log-sum-exp of a list, as PyTorch: all -inf gives -inf, any +inf gives +inf
local function lse(list)
  local m = -math.huge
  for _, v in ipairs(list) do m = math.max(m, v) end
  if m == math.huge or m == -math.huge then m = 0 end
  local s = 0
  for _, v in ipairs(list) do s = s + math.exp(v - m) end
  return math.log(s) + m
end

T.test("logsumexp", function()
  for _, dt in ipairs({ torch.float32, torch.float64, torch.int64 }) do
    local x = (input({ 3, 4 }, dt, 7) * (dt == torch.int64 and 1 or 100))
    local a = arr(x)
    local rows, cols = {}, {}
    for i = 0, 2 do
      local l = {}
      for j = 0, 3 do l[#l + 1] = get(a, { i, j }) end
      rows[i + 1] = lse(l)
    end
    for j = 0, 3 do
      local l = {}
      for i = 0, 2 do l[#l + 1] = get(a, { i, j }) end
      cols[j + 1] = lse(l)
    end
    T.near(x:logsumexp(1):tolist(), rows, 1e-5, "logsumexp dim 1 " .. tname(dt))
    T.near(torch.logsumexp(x, { dim = -2, keepdim = true }):tolist(), { cols }, 1e-5, "logsumexp keepdim " .. tname(dt))
    T.near(x:logsumexp({ 0, 1 }):item(), lse(a.flat), 1e-5, "logsumexp all dims " .. tname(dt))
    T.near(x:logsumexp({}):item(), lse(a.flat), 1e-5, "logsumexp dim {} " .. tname(dt))
  end
  T.eq(torch.tensor({ 1, 2 }):logsumexp(0).dtype, torch.float32, "logsumexp int -> float")
  local inf = math.huge
  local x = torch.tensor({ { -inf, -inf }, { inf, 1 }, { 1000, 1000 }, { -inf, 0 } }, f64)
  T.near(x:logsumexp(1):tolist(), { -inf, inf, 1000 + math.log(2), 0 }, 1e-12, "logsumexp infinities, no overflow")
  T.eq(torch.zeros(2, 0):logsumexp(1):tolist(), { -inf, -inf }, "logsumexp empty rows")
end)

T.test("lerp", function()
  local s = torch.tensor({ { 1, -2 }, { 3, 0.5 } }, f64):t()
  local e = torch.tensor({ 4, 8 }, f64)
  local w = torch.tensor({ { 0.1, 0.9 }, { -0.7, 0.5 } }, f64)
  local sl, el, wl = s:tolist(), e:tolist(), w:tolist()
  for _, wt in ipairs({ 0.25, 0.75, 1.5 }) do
    local want = build({ 2, 2 }, function(i) local a = sl[i[1] + 1][i[2] + 1] return a + wt * (el[i[2] + 1] - a) end)
    T.near(s:lerp(e, wt):tolist(), want, 1e-12, "lerp scalar " .. wt)
  end
  local want = build({ 2, 2 }, function(i)
    local a, ww = sl[i[1] + 1][i[2] + 1], wl[i[1] + 1][i[2] + 1]
    return a + ww * (el[i[2] + 1] - a)
  end)
  T.near(torch.lerp(s, { ["end"] = e, weight = w }):tolist(), want, 1e-12, "lerp tensor weight")
  T.eq(torch.tensor({ 1.0 }):lerp(torch.tensor({ 3.0 }), 1.0):tolist(), { 3.0 }, "lerp weight 1 is exactly end")
end)

T.test("nonzero / masked_select", function()
  for _, dt in ipairs(dtypes) do
    local x = input({ 3, 4 }, dt, 8)
    local a = arr(x)
    local want, want_vals = {}, {}
    for i = 0, 2 do for j = 0, 3 do
      local v = get(a, { i, j })
      if v ~= 0 and v ~= false then want[#want + 1] = { i, j }; want_vals[#want_vals + 1] = v end
    end end
    local nz = x:nonzero()
    T.eq(nz.dtype, torch.int64, "nonzero dtype " .. tname(dt))
    T.eq(nz:tolist(), want, "nonzero " .. tname(dt))
    local tup = torch.nonzero(x, { as_tuple = true })
    local rows, cols = {}, {}
    for k, p in ipairs(want) do rows[k], cols[k] = p[1], p[2] end
    T.eq({ #tup, tup[1]:tolist(), tup[2]:tolist() }, { 2, rows, cols }, "nonzero as_tuple " .. tname(dt))
    local mask = x:ne(0)
    if dt == torch.bool then mask = x end
    T.eq(x:masked_select(mask):tolist(), want_vals, "masked_select " .. tname(dt))
  end
  -- a broadcast mask, 3-D coordinates, 0-dim and empty inputs
  local x = torch.arange(6):reshape(2, 3)
  T.eq(torch.masked_select(x, torch.tensor({ true, false, true })):tolist(), { 0, 2, 3, 5 }, "masked_select broadcast")
  T.eq(torch.tensor({ 1, 2 }):masked_select(torch.tensor({ { true, false }, { false, true } })):tolist(), { 1, 2 },
    "masked_select broadcast input")
  local z = torch.zeros(2, 3, 4)
  z[1][2][3] = 1
  z[0][0][1] = 2
  T.eq(z:nonzero():tolist(), { { 0, 0, 1 }, { 1, 2, 3 } }, "nonzero 3-D")
  T.eq(torch.tensor(3):nonzero().shape:totable(), { 1, 0 }, "nonzero 0-dim")
  T.eq(torch.zeros(0, 2):nonzero().shape:totable(), { 0, 2 }, "nonzero empty")
  T.eq(torch.zeros(3):nonzero().shape:totable(), { 0, 1 }, "nonzero all zero")
  T.eq(torch.tensor(5):masked_select(torch.tensor(true)):tolist(), { 5 }, "masked_select 0-dim")
end)

T.test("repeat_interleave / repeat / tile", function()
  for _, dt in ipairs(dtypes) do
    local x = input({ 2, 3 }, dt, 9)
    local l = x:tolist()
    local want = { l[1], l[1], l[2], l[2] }
    T.eq(x:repeat_interleave(2, 0):tolist(), want, "repeat_interleave dim 0 " .. tname(dt))
    local flat = {}
    for _, row in ipairs(l) do for _, v in ipairs(row) do flat[#flat + 1] = v; flat[#flat + 1] = v end end
    T.eq(torch.repeat_interleave(x, 2):tolist(), flat, "repeat_interleave flat " .. tname(dt))
    local w = {}
    for i, row in ipairs(l) do w[i] = { row[1], row[2], row[2], row[3], row[3], row[3] } end
    T.eq(x:repeat_interleave(torch.tensor({ 1, 2, 3 }), { dim = -1 }):tolist(), w, "repeat_interleave tensor " .. tname(dt))
    local rep = {}
    for r = 1, 4 do
      local row = l[(r - 1) % 2 + 1]
      rep[r] = {}
      for c = 1, 9 do rep[r][c] = row[(c - 1) % 3 + 1] end
    end
    T.eq(x["repeat"](x, 2, 3):tolist(), rep, "repeat " .. tname(dt))
    T.eq(x["repeat"](x, { 1, 2, 3 }):tolist(), { rep }, "repeat extra dim " .. tname(dt))
    T.eq(torch.tile(x, { 2 }):tolist(), x["repeat"](x, 1, 2):tolist(), "tile pads on the left " .. tname(dt))
  end
  T.eq(torch.repeat_interleave(torch.tensor({ 2, 0, 1 })):tolist(), { 0, 0, 2 }, "repeat_interleave(repeats)")
  T.eq(torch.tensor({ 1, 2 }):repeat_interleave(0):tolist(), {}, "repeat_interleave 0")
  T.eq(torch.tensor(7):repeat_interleave(3):tolist(), { 7, 7, 7 }, "repeat_interleave 0-dim")
  T.eq(torch.tensor({ 1, 2 })["repeat"](torch.tensor({ 1, 2 }), 0):tolist(), {}, "repeat 0")
end)

-- plain matrix product of nested lists
local matmul = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "matmul_ref.lua")

T.test("mv / baddbmm / addmv / addr", function()
  torch.manual_seed(10)
  for _, dt in ipairs({ torch.float32, torch.float64 }) do
    local tol = dt == torch.float32 and 1e-5 or 1e-12
    local inp = torch.randn(2, 2, 4, { dtype = dt })
    local b1 = torch.randn(2, 3, 2, { dtype = dt }):transpose(1, 2)
    local b2 = torch.randn(2, 3, 4, { dtype = dt })
    local want = {}
    for b = 1, 2 do
      local p = matmul(b1:tolist()[b], b2:tolist()[b])
      want[b] = build({ 2, 4 }, function(i) return 0.5 * inp:tolist()[b][i[1] + 1][i[2] + 1] + 2 * p[i[1] + 1][i[2] + 1] end)
    end
    T.near(torch.baddbmm(inp, b1, b2, { beta = 0.5, alpha = 2 }):tolist(), want, tol, "baddbmm " .. tname(dt))
    T.near(inp:baddbmm(b1, b2):tolist(), (inp + torch.bmm(b1, b2)):tolist(), tol, "baddbmm method")
    local nan = torch.full({ 2, 2, 4 }, 0 / 0, { dtype = dt })
    T.near(torch.baddbmm(nan, b1, b2, { beta = 0 }):tolist(), torch.bmm(b1, b2):tolist(), tol, "baddbmm beta 0 ignores nan")

    local m = torch.randn(4, 3, { dtype = dt }):t()
    local v = torch.randn(4, { dtype = dt })
    local c = torch.randn(3, { dtype = dt })
    local mv = matmul(m:tolist(), build({ 4, 1 }, function(i) return v:tolist()[i[1] + 1] end))
    local w = {}
    for i = 1, 3 do w[i] = 2 * c:tolist()[i] + 3 * mv[i][1] end
    T.near(torch.addmv(c, m, v, { beta = 2, alpha = 3 }):tolist(), w, tol, "addmv " .. tname(dt))
    local mvl = {}
    for i = 1, 3 do mvl[i] = mv[i][1] end
    T.near(m:mv(v):tolist(), mvl, tol, "mv " .. tname(dt))
    local r = build({ 3, 4 }, function(i) return m:tolist()[i[1] + 1][i[2] + 1] + c:tolist()[i[1] + 1] * v:tolist()[i[2] + 1] end)
    T.near(m:addr(c, v):tolist(), r, tol, "addr " .. tname(dt))
  end
end)

T.test("clamp_min / clamp_max", function()
  for _, dt in ipairs({ torch.float32, torch.float64, torch.int64, torch.int32 }) do
    local x = input({ 3, 2 }, dt, 11)
    local a = arr(x)
    local lo = build(a.shape, function(i) local v = get(a, i) return v < 2 and (math.type(v) == "float" and 2.0 or 2) or v end)
    local hi = build(a.shape, function(i) local v = get(a, i) return v > 2 and (math.type(v) == "float" and 2.0 or 2) or v end)
    T.eq(x:clamp_min(2):tolist(), lo, "clamp_min " .. tname(dt))
    T.eq(torch.clamp_max(x, { max = 2 }):tolist(), hi, "clamp_max " .. tname(dt))
    T.eq(x:clamp_min(torch.tensor(2, { dtype = dt })):tolist(), lo, "clamp_min tensor " .. tname(dt))
    local y = x:clone()
    T.check(y:clamp_max_(2) == y, "clamp_max_ returns self")
    T.eq(y:tolist(), hi, "clamp_max_ " .. tname(dt))
  end
end)

T.test("gradients", function()
  torch.manual_seed(12)
  local x = torch.randn(3, 4, f64)
  local v = torch.randn(3, f64)
  gradcheck("flip", function(t) return t:flip({ 0, 1 }) end, { x })
  gradcheck("roll", function(t) return t:roll({ 1, -2 }, { 0, 1 }) end, { x })
  gradcheck("roll flat", function(t) return t:roll(5) end, { x })
  gradcheck("tril", function(t) return t:tril(1) end, { x })
  gradcheck("triu", function(t) return t:triu(-1) end, { x })
  gradcheck("diag 1-D", function(t) return torch.diag(t, -1) end, { v })
  gradcheck("diag 2-D", function(t) return t:diag(1) end, { x })
  gradcheck("diagonal", function(t) return t:reshape(2, 2, 3):diagonal(0, 2, 0) end, { x })
  gradcheck("trace", function(t) return t:trace() end, { x })
  gradcheck("logsumexp", function(t) return t:logsumexp(1) end, { x * 30 })
  gradcheck("logsumexp dims", function(t) return t:logsumexp({ 0, 1 }, true) end, { x })
  local w = torch.rand(3, 4, f64)
  gradcheck("lerp", function(a, b, c) return a:lerp(b, c) end, { x, torch.randn(4, f64), w * 1.4 - 0.2 })
  gradcheck("lerp scalar", function(a, b) return a:lerp(b, 0.7) end, { x, torch.randn(3, 4, f64) })
  gradcheck("masked_select", function(t) return t:masked_select(x:gt(0)) end, { x })
  gradcheck("repeat_interleave", function(t) return t:repeat_interleave(torch.tensor({ 2, 0, 1 }), 0) end, { x })
  gradcheck("repeat", function(t) return t["repeat"](t, 2, 1, 2) end, { x })
  gradcheck("baddbmm", function(a, b, c) return torch.baddbmm(a, b, c, { beta = 0.5, alpha = -2 }) end,
    { torch.randn(2, 3, 2, f64), torch.randn(2, 3, 4, f64), torch.randn(2, 4, 2, f64) })
  gradcheck("addmv", function(a, b, c) return a:addmv(b, c, { alpha = 2 }) end, { v, x, torch.randn(4, f64) })
  gradcheck("addr", function(a, b, c) return a:addr(b, c, 3, 2) end, { x, v, torch.randn(4, f64) })
  gradcheck("clamp_min", function(t) return t:clamp_min(0.1) end, { x })
end)

T.test("errors", function()
  local x = torch.zeros(2, 3)
  T.raises(function() x:flip({ 0, -2 }) end, "dim 0 appears multiple times in the list of dims")
  T.raises(function() x:flip({ 2 }) end, "Dimension out of range (expected to be in range of [-2, 1], but got 2)")
  T.raises(function() torch.zeros(3):fliplr() end, "Input must be >= 2-d.")
  T.raises(function() torch.tensor(1):flipud() end, "Input must be >= 1-d.")
  T.raises(function() x:roll({ 1, 2 }, { 0 }) end, "shifts and dimensions must align. shifts: 2, dims:1")
  T.raises(function() x:roll({}) end, "`shifts` required")
  T.raises(function() torch.zeros(3):tril() end, "tril: input tensor must have at least 2 dimensions")
  T.raises(function() torch.zeros(3):triu() end, "triu: input tensor must have at least 2 dimensions")
  T.raises(function() torch.zeros(2, 2, 2):diag() end, "diag(): Supports 1D or 2D tensors. Got 3D")
  T.raises(function() x:diagonal(0, 1, -1) end, "diagonal dimensions cannot be identical 1, -1")
  T.raises(function() torch.zeros(3):trace() end, "trace: expected a matrix, but got tensor with dim 1")
  T.raises(function() x:logsumexp(2) end, "Dimension out of range (expected to be in range of [-2, 1], but got 2)")
  T.raises(function() x:lerp(torch.zeros(2, 3, f64), 0.5) end, "expected dtype float for `end` but got dtype double")
  T.raises(function() x:masked_select(torch.zeros(3)) end, "masked_select: expected BoolTensor for mask")
  T.raises(function() x:masked_select(torch.zeros(4, { dtype = torch.bool })) end,
    "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1")
  T.raises(function() x:repeat_interleave(-1) end, "repeats can not be negative")
  T.raises(function() x:repeat_interleave(torch.tensor({ 1, 2 }), 1) end,
    "repeats must have the same size as input along dim, but got repeats.size(0) = 2 and input.size(1) = 3")
  T.raises(function() x["repeat"](x, 2) end,
    "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
  T.raises(function() torch.baddbmm(torch.zeros(2, 2), torch.zeros(2, 3), torch.zeros(1, 3, 2)) end, "batch1 must be a 3D tensor")
  T.raises(function() torch.addr(x, torch.zeros(2, 1), torch.zeros(3)) end, "addr: Expected 1-D argument vec1, but got 2-D")
  T.raises(function() torch.flip(x, { dim = 0 }) end, "~unknown keyword 'dim'")
  T.raises(function() torch.flip(x) end, "~missing required argument 'dims'")
end)

T.test("cuda", function()
  if not torch.cuda.is_available() then return T.skip("no CUDA device", 14) end
  torch.manual_seed(13)
  local c = torch.randn(3, 4):transpose(0, 1)
  local g = c:cuda()
  local function same(name, got, want) T.eq(got.device.type, "cuda", name .. " device"); T.near(got:cpu():tolist(), want:tolist(), 1e-5, name) end
  same("flip", g:flip({ 0, 1 }), c:flip({ 0, 1 }))
  same("roll", g:roll({ 1, 2 }, { 0, 1 }), c:roll({ 1, 2 }, { 0, 1 }))
  same("tril", g:tril(-1), c:tril(-1))
  same("diag", g:diag(1), c:diag(1))
  same("logsumexp", g:logsumexp(0), c:logsumexp(0))
  same("nonzero", g:gt(0):nonzero(), c:gt(0):nonzero())
  same("masked_select", g:masked_select(g:gt(0)), c:masked_select(c:gt(0)))
end)
