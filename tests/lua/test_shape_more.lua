-- torch_shape_more.lua (and the settings in tensor_create.c / autograd.c) against references
-- computed here with loops over plain lists: index arithmetic for as_strided and the views,
-- integer division for unravel_index, substitution for the triangular solves; gradients by
-- float64 central differences.
local T = ...

local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local gradcheck = dofile(here .. "gradcheck.lua")(T)
local R = dofile(here .. "attention_ref.lua")
local f64 = { dtype = torch.float64 }

-- plain-list helpers
local transpose, matmul = R.transpose, R.matmul -- lists of rows
local function identity(n)
  local out = {}
  for i = 1, n do
    out[i] = {}
    for j = 1, n do out[i][j] = i == j and 1.0 or 0.0 end
  end
  return out
end

T.test("diagflat, row_stack, dsplit, swapaxes against loops", function()
  local vals = { { 1.5, -2.0 }, { 3.0, 4.25 } }
  local fv = { 1.5, -2.0, 3.0, 4.25 } -- vals row by row
  for _, off in ipairs({ 0, 2, -1 }) do
    local n = #fv + math.abs(off)
    local want = {}
    for i = 1, n do
      want[i] = {}
      for j = 1, n do want[i][j] = 0.0 end
    end
    for k, v in ipairs(fv) do
      local i, j = k, k
      if off >= 0 then j = k + off else i = k - off end
      want[i][j] = v
    end
    T.eq(torch.diagflat(torch.tensor(vals), { offset = off }):tolist(), want, "diagflat offset " .. off)
  end
  T.eq(torch.tensor(vals):diagflat(1):size():totable(), { 5, 5 }, "diagflat method, positional offset")
  T.eq(torch.diagflat(torch.zeros(0), { offset = 2 }):tolist(), { { 0.0, 0.0 }, { 0.0, 0.0 } }, "diagflat of an empty input")
  T.raises(function() torch.diagflat({ 1, 2 }) end, "~must be Tensor, not table")
  gradcheck("diagflat", function(x) return torch.diagflat(x, { offset = -1 }) end, { torch.randn(2, 2, f64) })

  local rows = torch.row_stack({ torch.tensor({ 1, 2, 3 }), torch.tensor({ { 4, 5, 6 }, { 7, 8, 9 } }) })
  T.eq(rows:tolist(), { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } }, "row_stack")

  local x = torch.arange(24):view(2, 2, 6)
  local xl = x:tolist()
  local parts = { torch.dsplit(x, 3) }
  T.eq(#parts, 3, "dsplit into 3")
  for p = 1, 3 do
    local want = {}
    for i = 1, 2 do
      want[i] = {}
      for j = 1, 2 do want[i][j] = { xl[i][j][2 * p - 1], xl[i][j][2 * p] } end
    end
    T.eq(parts[p]:tolist(), want, "dsplit part " .. p)
  end
  local a, b, c = x:dsplit({ 1, 4 })
  T.eq({ a:size(2), b:size(2), c:size(2) }, { 1, 3, 2 }, "dsplit at indices (method)")
  T.raises(function() torch.dsplit(torch.zeros(2, 6), 2) end,
    "torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with 2 dimensions!")
  T.raises(function() torch.dsplit(x, 4) end, "~size of the dimension 6 is not divisible by the split_size 4")

  local y = torch.randn(2, 3, 4, f64)
  local yl = y:tolist()
  local s = torch.swapaxes(y, 0, -1)
  T.eq(s:size():totable(), { 4, 3, 2 }, "swapaxes shape")
  local ok = true
  for i = 1, 2 do for j = 1, 3 do for k = 1, 4 do ok = ok and s:tolist()[k][j][i] == yl[i][j][k] end end end
  T.check(ok, "swapaxes(0, -1) moves element [i][j][k] to [k][j][i]")
  T.eq(y:swapdims(1, 2):tolist(), torch.swapdims(y, -2, -1):tolist(), "swapdims method and negative dims")
  T.check(s:storage_offset() == y:storage_offset() and s:stride()[1] == y:stride()[3], "swapaxes is a view")
end)

T.test("unflatten against index arithmetic", function()
  local x = torch.randn(3, 12, f64)
  local xl = x:tolist()
  local u = torch.unflatten(x, 1, { 2, -1, 3 })
  T.eq(u:size():totable(), { 3, 2, 2, 3 }, "unflatten with -1")
  local ok = true
  local ul = u:tolist()
  for i = 1, 3 do for a = 0, 1 do for b = 0, 1 do for c = 0, 2 do
    ok = ok and ul[i][a + 1][b + 1][c + 1] == xl[i][a * 6 + b * 3 + c + 1]
  end end end end
  T.check(ok, "element [i][a][b][c] is x[i][a*6 + b*3 + c]")
  T.eq(x:unflatten(-1, torch.Size({ 4, 3 })):size():totable(), { 3, 4, 3 }, "negative dim, torch.Size sizes")
  T.eq(x:unflatten(0, { 3 }):size():totable(), { 3, 12 }, "a single size")
  -- a non-contiguous input: still a view of the same storage
  local base = torch.zeros(6, 4)
  local v = base:t():unflatten(1, { 2, 3 })
  v[1][1][2] = 7
  T.eq(base[5][1]:item(), 7.0, "unflatten of a transposed tensor is a view (writes show in the base)")
  T.eq(torch.zeros(0, 6):unflatten(1, { -1, 2 }):size():totable(), { 0, 3, 2 }, "empty tensor, -1 from the dim")
  T.raises(function() x:unflatten(1, { 5, -1 }) end, "~cannot be inferred")
  T.raises(function() x:unflatten(1, { 5, 2 }) end,
    "unflatten: Provided sizes [5, 2] don't multiply up to the size of dim 1 (12) in the input tensor")
  T.raises(function() x:unflatten(1, {}) end, "unflatten: sizes must be non-empty")
  T.raises(function() x:unflatten(1, { -1, -1 }) end, "~only one dimension can be inferred")
  T.raises(function() x:unflatten(2, { 3, 4 }) end, "~Dimension out of range")
  gradcheck("unflatten", function(t) return t:unflatten(1, { 2, 3 }) end, { torch.randn(2, 6, f64) })
end)

T.test("argwhere and unravel_index against loops", function()
  torch.manual_seed(3)
  local x = torch.randint(0, 3, { 3, 4, 2 }) - 1
  local xl = x:tolist()
  local want = {}
  for i = 1, 3 do for j = 1, 4 do for k = 1, 2 do
    if xl[i][j][k] ~= 0 then want[#want + 1] = { i - 1, j - 1, k - 1 } end
  end end end
  T.eq(torch.argwhere(x):tolist(), want, "argwhere, row-major order")
  T.eq(x:to(torch.float32):argwhere():tolist(), want, "argwhere method on floats")
  T.eq(torch.argwhere(torch.tensor(5)):size():totable(), { 1, 0 }, "0-dim nonzero: one row of no coordinates")
  T.eq(torch.argwhere(torch.tensor(0)):size():totable(), { 0, 0 }, "0-dim zero: no rows")
  T.eq(torch.argwhere(torch.zeros(0, 3)):size():totable(), { 0, 2 }, "empty input")
  T.eq(torch.argwhere(torch.tensor({ true, false, true })):tolist(), { { 0 }, { 2 } }, "bool input")

  local shape = { 3, 4, 5 }
  local idx = {}
  for i = 1, 30 do idx[i] = (i * 7) % 120 - 60 end -- in [-60, 59]: negative ones too
  local out = torch.unravel_index(torch.tensor(idx), shape)
  T.eq(#out, 3, "one tensor per dim of shape")
  for d = 1, 3 do T.eq(out[d].dtype, torch.int64, "int64 coordinates") end
  local ok = true
  for i, v in ipairs(idx) do
    local r = v % 60 -- negative indices count from the end
    local c = { r // 20, (r // 5) % 4, r % 5 }
    for d = 1, 3 do ok = ok and out[d][i - 1]:item() == c[d] end
  end
  T.check(ok, "coordinates by integer division")
  local two = torch.unravel_index(torch.tensor({ { 5, 0 }, { 3, 4 } }, { dtype = torch.int32 }), torch.Size({ 2, 3 }))
  T.eq(two[1]:tolist(), { { 1, 0 }, { 1, 1 } }, "2-D int32 indices, rows")
  T.eq(two[2]:tolist(), { { 2, 0 }, { 0, 1 } }, "2-D int32 indices, columns")
  local s = torch.unravel_index(7, 10)
  T.eq({ #s, s[1]:dim(), s[1]:item() }, { 1, 0, 7 }, "integer index, integer shape: a 0-dim tensor")
  T.eq(torch.unravel_index(torch.zeros(0, { dtype = torch.int64 }), { 2, 0 })[2]:numel(), 0, "empty indices")
  T.raises(function() torch.unravel_index(torch.tensor({ 1.0 }), { 2 }) end,
    "unravel_index: expected 'indices' to be integer dtype, but got torch.float32")
  T.raises(function() torch.unravel_index(torch.tensor({ 6 }), { 2, 3 }) end, "~must be in range [-6, 5]")
  T.raises(function() torch.unravel_index(torch.tensor({ -7 }), { 2, 3 }) end, "~must be in range [-6, 5]")
  T.raises(function() torch.unravel_index(torch.tensor({ 0 }), { 2, -3 }) end, "~'shape' cannot have negative values")
end)

T.test("randint_like, as_tensor, asarray", function()
  torch.manual_seed(5)
  local like = torch.zeros(4, 50, { dtype = torch.int32 })
  local r = torch.randint_like(like, 3, 7)
  T.eq({ r.dtype, r:size():totable() }, { torch.int32, { 4, 50 } }, "input's dtype and shape")
  local lo, hi, seen = math.huge, -math.huge, {}
  for _, v in ipairs(r:reshape(-1):tolist()) do lo, hi = math.min(lo, v), math.max(hi, v); seen[v] = true end
  T.check(lo == 3 and hi == 6 and seen[4] and seen[5], "values cover [low, high)")
  local h = torch.randint_like(torch.zeros(200), 2, { dtype = torch.int64 })
  T.eq(h.dtype, torch.int64, "dtype option")
  local vs = h:tolist()
  local only01 = true
  for _, v in ipairs(vs) do only01 = only01 and (v == 0 or v == 1) end
  T.check(only01 and math.type(vs[1]) == "integer", "high only: [0, high)")
  T.check(torch.randint_like(torch.zeros(3), 5):is_floating_point(), "float input: float values")
  T.raises(function() torch.randint_like(like, 5, 5) end, "~expects 'from' to be less than 'to'")
  T.raises(function() torch.randint_like(like) end, "~expected high, or low and high")

  local x = torch.randn(3)
  T.check(rawequal(torch.as_tensor(x), x), "as_tensor: same dtype and device, the same tensor")
  T.check(rawequal(torch.as_tensor(x, { dtype = torch.float32, device = "cpu" }), x), "as_tensor: matching options")
  local d = torch.as_tensor(x, { dtype = torch.float64 })
  T.check(d.dtype == torch.float64 and not rawequal(d, x), "as_tensor converts another dtype")
  T.near(d:tolist(), x:tolist(), 1e-7, "same values")
  local t = torch.as_tensor({ { 1, 2 }, { 3, 4 } }, { dtype = torch.float32 })
  T.eq({ t.dtype, t:tolist() }, { torch.float32, { { 1.0, 2.0 }, { 3.0, 4.0 } } }, "as_tensor of a table")

  T.check(rawequal(torch.asarray(x), x), "asarray shares a tensor")
  local c = torch.asarray(x, { copy = true })
  c[0] = 99
  T.check(not rawequal(c, x) and x[0]:item() ~= 99, "asarray copy=true copies")
  T.raises(function() torch.asarray(x, { dtype = torch.int64, copy = false }) end, "~can't alias")
  T.raises(function() torch.asarray({ 1, 2 }, { copy = false }) end, "~can't alias a Lua table")
  local g = torch.asarray({ 1.0, 2.0 }, { dtype = torch.float64, requires_grad = true })
  T.check(g.requires_grad and g.dtype == torch.float64, "asarray requires_grad")
  T.raises(function() torch.as_tensor(x, { copy = true }) end, "~unknown keyword 'copy'")
end)

T.test("result_type, promote_types, can_cast, is_complex, broadcast_shapes", function()
  local i32 = torch.tensor({ 1 }, { dtype = torch.int32 })
  local u8 = torch.tensor({ 1 }, { dtype = torch.uint8 })
  -- PyTorch's rules: categories bool < integer < float; within one, dimensioned tensors beat 0-dim
  -- ones, which beat numbers; a number of a higher category gives that category's default
  local cases = {
    { i32, 2.5, torch.float32 }, { i32, 7, torch.int32 }, { u8, torch.tensor(300), torch.uint8 },
    { i32, torch.tensor(1.0, f64), torch.float64 }, { torch.tensor({ 1.0 }), torch.tensor(1.0, f64), torch.float32 },
    { torch.tensor({ true }), 1, torch.int64 }, { torch.tensor({ true }), false, torch.bool }, { 1, 2.0, torch.float32 },
    { 1, 2, torch.int64 }, { u8, i32, torch.int32 }, { torch.tensor({ 1 }, { dtype = torch.float16 }), i32, torch.float16 },
  }
  for k, c in ipairs(cases) do T.eq(torch.result_type(c[1], c[2]), c[3], "result_type case " .. k) end
  local pt = {
    { torch.uint8, torch.int32, torch.int32 }, { torch.bool, torch.float16, torch.float16 },
    { torch.float16, torch.bfloat16, torch.float32 }, { torch.int64, torch.float16, torch.float16 },
    { torch.float32, torch.float64, torch.float64 }, { torch.bool, torch.bool, torch.bool }, { torch.int32, torch.int64, torch.int64 },
  }
  for k, c in ipairs(pt) do
    T.eq(torch.promote_types(c[1], c[2]), c[3], "promote_types case " .. k)
    T.eq(torch.promote_types(c[2], c[1]), c[3], "promote_types symmetric " .. k)
  end
  T.raises(function() torch.promote_types("float32", torch.int32) end, "~must be a torch.dtype")
  local casts = {
    { torch.float64, torch.float32, true }, { torch.float32, torch.int32, false }, { torch.int32, torch.bool, false },
    { torch.bool, torch.uint8, true }, { torch.int64, torch.float16, true }, { torch.bfloat16, torch.bool, false },
    { torch.uint8, torch.int64, true },
  }
  for k, c in ipairs(casts) do T.eq(torch.can_cast(c[1], c[2]), c[3], "can_cast case " .. k) end
  T.eq({ torch.is_complex(torch.zeros(2)), torch.zeros(1):is_complex() }, { false, false }, "is_complex")
  T.raises(function() torch.is_complex(3) end, "~must be Tensor, not int")

  -- broadcast_shapes against a brute-force rule: every size 1 or the largest, aligned right
  local function ref(shapes)
    local n = 0
    for _, s in ipairs(shapes) do n = math.max(n, #s) end
    local out = {}
    for k = 1, n do
      local size = 1
      for _, s in ipairs(shapes) do
        local v = s[#s - n + k]
        if v and v ~= 1 then
          if size ~= 1 and size ~= v then return nil end
          size = v
        end
      end
      out[k] = size
    end
    return out
  end
  local tries = { { { 2, 1 }, { 3, 1, 1 }, { 4 } }, { { 5, 0 }, { 1 } }, { { 1 }, {} }, { { 2, 3 }, { 3, 3 } }, { { 7 } } }
  for k, shapes in ipairs(tries) do
    local want = ref(shapes)
    if want then
      local got = torch.broadcast_shapes(table.unpack(shapes))
      T.eq(got:totable(), want, "broadcast_shapes case " .. k)
      T.eq(getmetatable(got).__name, "torch.Size", "a torch.Size")
    else
      T.raises(function() torch.broadcast_shapes(table.unpack(shapes)) end,
        "~Shape mismatch: objects cannot be broadcast to a single shape. Mismatch is between arg 0 and arg 1.")
    end
  end
  T.eq(torch.broadcast_shapes(3, torch.Size({ 2, 1 })):totable(), { 2, 3 }, "an int is a 1-D shape")
  T.eq(tostring(torch.broadcast_shapes()), "torch.Size([])", "no shapes")
  T.raises(function() torch.broadcast_shapes({ 2, -1 }) end, "~negative dimension")
end)

T.test("qr, lu, lu_unpack, lu_solve, triangular_solve against loops", function()
  torch.manual_seed(11)
  local A = torch.randn(4, 4, f64)
  local Al = A:tolist()
  local Q, R = torch.qr(A)
  T.near(matmul(Q:tolist(), R:tolist()), Al, 1e-12, "Q R = A")
  T.near(matmul(transpose(Q:tolist()), Q:tolist()), identity(4), 1e-12, "Q orthogonal")
  local W = torch.randn(5, 3, f64)
  local Qc, Rc = W:qr({ some = false })
  T.eq({ Qc:size():totable(), Rc:size():totable() }, { { 5, 5 }, { 5, 3 } }, "some=false: complete")
  local Qr = torch.qr(W)
  T.eq(Qr:size():totable(), { 5, 3 }, "some=true: reduced")

  local LU, piv, info = torch.lu(A, { get_infos = true })
  T.eq({ piv.dtype, info.dtype, info:item() }, { torch.int32, torch.int32, 0 }, "lu: int32 pivots, zero info")
  local P, L, Up = torch.lu_unpack(LU, piv)
  local Ll, Ul = L:tolist(), Up:tolist()
  local ok = true
  for i = 1, 4 do for j = 1, 4 do
    if j > i then ok = ok and Ll[i][j] == 0 and Ul[j][i] == 0 end
    if i == j then ok = ok and Ll[i][i] == 1 end
  end end
  T.check(ok, "L unit lower triangular, U upper triangular")
  T.near(matmul(matmul(P:tolist(), Ll), Ul), Al, 1e-12, "P L U = A")
  -- P from the pivots by swapping rows of the identity in order (LAPACK's convention)
  local order = { 1, 2, 3, 4 }
  for i, p in ipairs(piv:tolist()) do order[i], order[p] = order[p], order[i] end
  local Pw = {}
  for a = 1, 4 do
    Pw[a] = {}
    for i = 1, 4 do Pw[a][i] = order[i] == a and 1.0 or 0.0 end
  end
  T.eq(P:tolist(), Pw, "P from the swap sequence")
  local sing = torch.tensor({ { 1.0, 2.0 }, { 2.0, 4.0 } }, f64)
  local _, _, si = torch.lu(sing, { get_infos = true })
  T.eq(si:item(), 2, "info: the first zero pivot, 1-based")
  local _, _, bi = torch.lu(torch.stack({ A:narrow(0, 0, 2):narrow(1, 0, 2), sing }), { get_infos = true })
  T.eq(bi:tolist(), { 0, 2 }, "batched infos")
  T.raises(function() torch.lu_unpack(LU, piv:narrow(0, 0, 3)) end, "~LU_pivots must end in a dim of min(m, n) = 4")
  T.raises(function() torch.lu_unpack(LU, piv + 4) end, "~LU_pivots must hold 1-based row numbers in [1, 4]")

  local b = torch.randn(4, 2, f64)
  local x = torch.lu_solve(b, LU, piv)
  T.near(matmul(Al, x:tolist()), b:tolist(), 1e-10, "lu_solve: A x = b")
  T.near(b:lu_solve(LU, piv):tolist(), x:tolist(), 0, "lu_solve method")
  local Ab = torch.randn(3, 4, 4, f64)
  local LUb, pivb = Ab:lu()
  local bb = torch.randn(3, 4, 1, f64)
  local xb = torch.lu_solve(bb, LUb, pivb)
  for k = 0, 2 do T.near(matmul(Ab[k]:tolist(), xb[k]:tolist()), bb[k]:tolist(), 1e-10, "batched lu_solve " .. k) end
  T.raises(function() torch.lu_solve(torch.randn(3, 1, f64), LU, piv) end, "~b must have 4 rows")

  -- triangular_solve by substitution in Lua
  local function subst(M, rhs, upper, unit)
    local n, out = #M, {}
    for c = 1, #rhs[1] do
      local xs = {}
      local first, last, step = 1, n, 1
      if upper then first, last, step = n, 1, -1 end
      for i = first, last, step do
        local s = rhs[i][c]
        for j = 1, n do
          if (upper and j > i) or (not upper and j < i) then s = s - M[i][j] * xs[j] end
        end
        xs[i] = unit and s or s / M[i][i]
      end
      for i = 1, n do out[i] = out[i] or {}; out[i][c] = xs[i] end
    end
    return out
  end
  local Tm = torch.randn(4, 4, f64) + torch.eye(4, f64) * 4
  local Tl, bl = Tm:tolist(), b:tolist()
  local sol, coef = torch.triangular_solve(b, Tm)
  T.near(sol:tolist(), subst(Tl, bl, true, false), 1e-12, "triangular_solve: upper by default")
  T.check(coef:equal(Tm) and coef:data_ptr() ~= Tm:data_ptr(), "cloned_coefficient is a copy of A")
  T.near(torch.triangular_solve(b, Tm, false):tolist(), subst(Tl, bl, false, false), 1e-12, "lower (positional upper=false)")
  T.near(b:triangular_solve(Tm, { transpose = true }):tolist(), subst(transpose(Tl), bl, false, false), 1e-12, "transpose")
  T.near(torch.triangular_solve(b, Tm, { unitriangular = true }):tolist(), subst(Tl, bl, true, true), 1e-12, "unitriangular")

  gradcheck("lu_solve", function(rhs, lu) return torch.lu_solve(rhs, lu, piv) end, { torch.randn(4, 2, f64), LU })
  gradcheck("triangular_solve", function(rhs, m) return (torch.triangular_solve(rhs, m, { transpose = true })) end,
    { torch.randn(4, 2, f64), Tm })
end)

T.test("as_strided and empty_strided against index arithmetic over the storage", function()
  local base = torch.randn(30, f64)
  local st = base:tolist()
  local function ref(size, stride, off)
    local out = {}
    local function fill(d, pos, t)
      for i = 0, size[d] - 1 do
        if d == #size then t[i + 1] = st[pos + i * stride[d] + 1]
        else t[i + 1] = {}; fill(d + 1, pos + i * stride[d], t[i + 1]) end
      end
    end
    if #size == 0 then return st[off + 1] end
    fill(1, off, out)
    return out
  end
  for _, c in ipairs({ { { 3, 4 }, { 4, 1 }, 0 }, { { 4, 3 }, { 1, 5 }, 2 }, { { 2, 3, 2 }, { 0, 7, 3 }, 5 }, { {}, {}, 29 } }) do
    local v = torch.as_strided(base, c[1], c[2], { storage_offset = c[3] })
    local got = v:dim() == 0 and v:item() or v:tolist()
    T.eq(got, ref(c[1], c[2], c[3]), string.format("size %s stride %s offset %d", T.show(c[1]), T.show(c[2]), c[3]))
  end
  -- storage_offset defaults to the input's own; the storage is what counts, not the input's elements
  local view = base:narrow(0, 10, 5)
  T.eq(view:as_strided({ 2, 2 }, { 1, 10 }):tolist(), ref({ 2, 2 }, { 1, 10 }, 10), "a view's offset, reaching past its elements")
  T.eq(torch.as_strided(view, { 3 }, { 2 }, 0):tolist(), ref({ 3 }, { 2 }, 0), "explicit offset 0 of a view")
  T.eq(torch.as_strided(base, { 0, 5 }, { 100, 100 }):size():totable(), { 0, 5 }, "empty view: no bounds to check")
  T.eq(torch.as_strided(base, { 4, 4 }, { 8, 1 }, { storage_offset = 2 }):tolist(), ref({ 4, 4 }, { 8, 1 }, 2),
    "reaching the last element of the storage")
  local w = torch.as_strided(base, { 2 }, { 3 }, { storage_offset = 1 })
  w:fill_(42)
  T.eq({ base[1]:item(), base[4]:item() }, { 42.0, 42.0 }, "as_strided is a view: writes reach the storage")
  T.raises(function() torch.as_strided(base, { 4, 4 }, { 8, 1 }, { storage_offset = 6 }) end,
    "as_strided: size [4, 4], stride [8, 1] and storage offset 6 reach element 33, outside the storage of 30 elements")
  T.raises(function() torch.as_strided(base, { 2 }, { -1 }) end, "~negative strides are not supported")
  T.raises(function() torch.as_strided(base, { 2, 2 }, { 1 }) end, "~mismatch in length of strides and shape")
  T.raises(function() torch.as_strided(base, { 2 }, { 1 }, { storage_offset = -1 }) end, "~storage offset must be non-negative")
  -- gradient: each output element's goes to the input element at the same storage position
  gradcheck("as_strided, overlapping windows", function(x) return x:as_strided({ 3, 3 }, { 2, 1 }, { storage_offset = 1 }) end,
    { torch.randn(8, f64) })
  gradcheck("as_strided of a transposed input", function(x) return x:t():as_strided({ 2, 3 }, { 1, 2 }) end, { torch.randn(3, 2, f64) })

  local e = torch.empty_strided({ 2, 3 }, { 1, 2 }, f64)
  T.eq({ e:size():totable(), e:stride(), e.dtype }, { { 2, 3 }, { 1, 2 }, torch.float64 }, "empty_strided geometry")
  T.eq(e:as_strided({ 6 }, { 1 }, { storage_offset = 0 }):numel(), 6, "empty_strided storage holds the elements the strides reach")
  T.eq(torch.empty_strided({ 3 }, { 0 }):as_strided({ 1 }, { 1 }):numel(), 1, "zero stride: one element of storage")
  T.raises(function() torch.empty_strided({ 3 }, { 0 }):as_strided({ 2 }, { 1 }) end, "~outside the storage of 1 elements")
  T.raises(function() torch.empty_strided({ 2, 3 }, { 1 }) end, "~mismatch in length of strides and shape")
  T.raises(function() torch.empty_strided({ 2 }, { -1 }) end, "~negative strides are not supported")
end)

T.test("in-place shape ops", function()
  local x = torch.arange(6.):view(2, 1, 3)
  local xl = x:tolist()
  T.check(rawequal(x:squeeze_(1), x), "squeeze_ returns self")
  T.eq(x:tolist(), { xl[1][1], xl[2][1] }, "squeeze_ values")
  x:unsqueeze_(-1)
  T.eq(x:size():totable(), { 2, 3, 1 }, "unsqueeze_(-1)")
  x:squeeze_()
  x:t_()
  T.eq(x:tolist(), { { 0.0, 3.0 }, { 1.0, 4.0 }, { 2.0, 5.0 } }, "t_")
  x:transpose_(0, 1)
  T.eq(x:tolist(), { xl[1][1], xl[2][1] }, "transpose_ back")
  x:swapaxes_(0, -1)
  x:swapdims_(1, 0)
  T.eq(x:size():totable(), { 2, 3 }, "swapaxes_ / swapdims_")
  local leaf = torch.zeros(2, 1, { requires_grad = true })
  T.raises(function() leaf:squeeze_() end, "squeeze_: a leaf Variable that requires grad is being used in an in-place operation.")
  do
    local _ <close> = torch.no_grad()
    leaf:squeeze_()
  end
  T.eq(leaf:size():totable(), { 2 }, "a leaf changes shape under no_grad")
  -- on a non-leaf the op joins the history
  gradcheck("unsqueeze_ then t_ on a non-leaf", function(a)
    local y = a * 3
    y:unsqueeze_(0)
    y:t_()
    return y * torch.arange(1., 5., f64):view(4, 1)
  end, { torch.randn(4, f64) })
  local y = torch.randn(2, 3, f64):requires_grad_() * 1
  y:transpose_(0, 1)
  T.eq(y.grad_fn:name(), "TransposeBackward0", "the in-place view op is the grad_fn")
end)

T.test("resize_, resize_as_, is_same_size", function()
  local x = torch.arange(12.)
  x:resize_(2, 3)
  T.eq(x:tolist(), { { 0.0, 1.0, 2.0 }, { 3.0, 4.0, 5.0 } }, "shrink keeps the leading elements")
  x:resize_({ 3, 4 })
  T.eq(x:tolist(), { { 0.0, 1.0, 2.0, 3.0 }, { 4.0, 5.0, 6.0, 7.0 }, { 8.0, 9.0, 10.0, 11.0 } }, "regrow within the storage")
  x:resize_(torch.Size({ 4, 5 }))
  local fl = x:reshape(-1):tolist()
  local ok = #fl == 20
  for i = 1, 12 do ok = ok and fl[i] == i - 1 end
  T.check(ok, "grow past the storage keeps the old elements in front")
  T.check(x:is_contiguous(), "contiguous after resize_")
  -- a transposed tensor: resize_ reads the storage in order, not the logical order
  local t = torch.arange(6):view(2, 3):t()
  t:resize_(6)
  T.eq(t:tolist(), { 0, 1, 2, 3, 4, 5 }, "resize_ of a transposed tensor keeps the storage order")
  local v = torch.arange(10):narrow(0, 4, 4)
  v:resize_(2, 3)
  T.eq(v:tolist(), { { 4, 5, 6 }, { 7, 8, 9 } }, "a view resized within its storage, from its offset")
  T.raises(function() v:resize_(3, 3) end, "~resize_: cannot grow a view from 6 to 9 elements")
  local z = torch.zeros(0)
  z:resize_(3)
  T.eq(z:numel(), 3, "grow an empty tensor")
  T.raises(function() torch.zeros(2, { requires_grad = true }):resize_(4) end, "resize_: cannot resize variables that require grad")
  T.raises(function() torch.zeros(2):resize_(2, -1) end, "~negative dimension -1")
  local a = torch.zeros(5)
  T.check(rawequal(a:resize_as_(torch.ones(1, 5)), a) and a:size():totable()[1] == 1, "resize_as_")
  T.eq({ a:is_same_size(torch.zeros(1, 5)), a:is_same_size(torch.zeros(5)), a:is_same_size(torch.zeros(5, 1)) },
    { true, false, false }, "is_same_size")
end)

T.test("threads, determinism, inference mode", function()
  local n0 = torch.get_num_threads()
  T.check(math.type(n0) == "integer" and n0 >= 1, "get_num_threads")
  torch.set_num_threads(1)
  T.eq(torch.get_num_threads(), 1, "set_num_threads(1)")
  torch.set_num_threads(2)
  T.eq(torch.get_num_threads(), 2, "set_num_threads(2)")
  local m = torch.randn(40, 30, f64)
  T.near(m:matmul(m:t()):tolist(), matmul(m:tolist(), transpose(m:tolist())), 1e-12, "matmul with two BLAS threads")
  torch.set_num_threads(n0)
  T.raises(function() torch.set_num_threads(0) end, "~number of threads must be positive, got 0")

  T.eq({ torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled() }, { false, false }, "off by default")
  torch.use_deterministic_algorithms(true)
  T.eq({ torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled() }, { true, false }, "on")
  T.eq(torch.zeros(3):index_add_(0, torch.tensor({ 0, 0 }), torch.ones(2)):tolist(), { 2.0, 0.0, 0.0 }, "CPU index_add_ is deterministic: runs")
  if torch.cuda.is_available() then
    T.raises(function() torch.zeros(3, { device = "cuda" }):index_add_(0, torch.tensor({ 0 }, { device = "cuda" }), torch.ones(1, { device = "cuda" })) end,
      "~index_add_cuda_ does not have a deterministic implementation")
  else
    T.skip("no GPU: the CUDA index_add_ refusal")
  end
  torch.use_deterministic_algorithms(true, { warn_only = true })
  T.eq(torch.is_deterministic_algorithms_warn_only_enabled(), true, "warn_only")
  torch.use_deterministic_algorithms(false)
  T.eq({ torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled() }, { false, false }, "off again")
  T.raises(function() torch.use_deterministic_algorithms(1) end, "use_deterministic_algorithms: mode must be a boolean, got int")
  T.raises(function() torch.use_deterministic_algorithms(true, { warn = true }) end, "~unknown keyword 'warn'")

  T.eq(torch.is_inference_mode_enabled(), false, "inference mode off")
  do
    local _ <close> = torch.inference_mode()
    T.eq({ torch.is_inference_mode_enabled(), torch.is_grad_enabled() }, { true, false }, "inside inference_mode")
    do
      local _ <close> = torch.enable_grad()
      T.eq(torch.is_inference_mode_enabled(), true, "enable_grad inside keeps inference mode")
    end
    do
      local _ <close> = torch.inference_mode(false)
      T.eq(torch.is_inference_mode_enabled(), false, "inference_mode(false) leaves it")
    end
    T.eq(torch.is_inference_mode_enabled(), true, "restored after the inner region")
  end
  T.eq(torch.is_inference_mode_enabled(), false, "restored on close")
  T.eq(torch.inference_mode(function() return torch.is_inference_mode_enabled() end), true, "function form")
  pcall(torch.inference_mode, function() error("boom") end)
  T.eq({ torch.is_inference_mode_enabled(), torch.is_grad_enabled() }, { false, true }, "restored after an error")
end)

T.test("default device", function()
  T.eq(tostring(torch.get_default_device()), "cpu", "cpu by default")
  torch.set_default_device("cpu")
  T.eq(torch.zeros(2).device.type, "cpu", "cpu set explicitly")
  local factories = {
    zeros = function() return torch.zeros(2, 2) end, ones = function() return torch.ones(2) end,
    empty = function() return torch.empty(2) end, full = function() return torch.full({ 2 }, 1.5) end,
    rand = function() return torch.rand(2) end, randn = function() return torch.randn(2) end,
    randint = function() return torch.randint(0, 5, { 2 }) end, arange = function() return torch.arange(3) end,
    linspace = function() return torch.linspace(0, 1, 3) end, eye = function() return torch.eye(2) end,
    tensor = function() return torch.tensor({ 1, 2 }) end, normal = function() return torch.normal(0, 1, 2) end,
    empty_strided = function() return torch.empty_strided({ 2 }, { 1 }) end, randperm = function() return torch.randperm(3) end,
    as_tensor = function() return torch.as_tensor({ 1.0 }) end,
  }
  local names = {}
  for name in pairs(factories) do names[#names + 1] = name end
  table.sort(names)
  local cpu = torch.ones(2)
  torch.set_default_device("cuda")
  local ok, err = pcall(function()
    T.eq(torch.get_default_device().type, "cuda", "get_default_device after set")
    if torch.cuda.is_available() then -- as PyTorch's: "cuda" reads back with the current index
      T.eq(tostring(torch.get_default_device()), "cuda:" .. torch.cuda.current_device(), "get_default_device's index")
    end
    for _, name in ipairs(names) do
      if torch.cuda.is_available() then
        T.eq(factories[name]().device.type, "cuda", name .. " on the default device")
      else
        T.raises(factories[name], "~CUDA is not available", name .. " fails at the call without a GPU")
      end
    end
    T.eq(torch.zeros(2, { device = "cpu" }).device.type, "cpu", "device= wins")
    T.eq(torch.zeros_like(cpu).device.type, "cpu", "*_like follow their input")
    T.eq(torch.tensor(cpu).device.type, "cpu", "torch.tensor(t) follows t")
  end)
  torch.set_default_device(nil)
  T.check(ok, tostring(err))
  T.eq(torch.zeros(1).device.type, "cpu", "set_default_device(nil) goes back to the CPU")
  T.raises(function() torch.set_default_device("tpu") end, "~device")
end)
