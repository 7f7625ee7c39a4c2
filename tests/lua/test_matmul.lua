-- Matrix products: shapes, values against Lua loops, and the error format.
local T = ...

local matmul = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "matmul_ref.lua")
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)

torch.manual_seed(11)
local a, b = torch.randn(3, 4), torch.randn(4, 5)
local A, B = a:tolist(), b:tolist()

T.test("mm matmul", function()
  T.near(a:mm(b):tolist(), matmul(A, B), 1e-5, "mm")
  T.near(a:matmul(b):tolist(), matmul(A, B), 1e-5, "matmul 2-D")
  T.near(torch.matmul(a, b):tolist(), matmul(A, B), 1e-5, "torch.matmul")
  T.near(torch.mm(a, b):tolist(), matmul(A, B), 1e-5, "torch.mm")
  local bt = torch.randn(5, 4)
  T.near(a:mm(bt:t()):tolist(), matmul(A, bt:t():tolist()), 1e-5, "mm with a transposed operand")
  T.eq(a:matmul(b).shape:totable(), {3, 5}, "matmul shape")
  local v = torch.randn(4)
  T.eq(a:matmul(v).shape:totable(), {3}, "matrix @ vector")
  T.eq(v:matmul(b).shape:totable(), {5}, "vector @ matrix")
  T.eq(v:matmul(v):dim(), 0, "vector @ vector is 0-dim")
  local batch = torch.randn(2, 3, 4)
  T.eq(batch:matmul(b).shape:totable(), {2, 3, 5}, "batched @ matrix")
  T.eq(torch.randn(7, 1, 3, 4):matmul(torch.randn(2, 4, 5)).shape:totable(), {7, 2, 3, 5}, "broadcast batch dims")
  local i = torch.tensor({{1, 2}, {3, 4}})
  T.eq(i:mm(i):tolist(), {{7, 10}, {15, 22}}, "int64 mm")
  T.check(i:mm(i).dtype == torch.int64, "int64 mm keeps int64")
end)

-- every [i][j] matrix of a 4-D product against the loop reference
local function check_4d(got, x, y, what)
  local ok = got:dim() == 4
  for i = 0, got:size(0) - 1 do
    for j = 0, got:size(1) - 1 do
      local xi, yi = x[math.min(i, x:size(0) - 1)][math.min(j, x:size(1) - 1)], y[math.min(i, y:size(0) - 1)][math.min(j, y:size(1) - 1)]
      local want = matmul(xi:tolist(), yi:tolist())
      local g = got[i][j]:tolist()
      for r = 1, #want do
        for c = 1, #want[1] do ok = ok and math.abs(g[r][c] - want[r][c]) < 1e-4 end
      end
    end
  end
  T.check(ok, what)
end

T.test("batched matmul whose batch dims do not merge (swin's windows x heads)", function()
  -- q, k, v of a packed projection: [windows, n, 3, heads, d] permuted to [3, windows, heads, n, d]
  local qkv = torch.randn(6, 5, 3, 2, 4):permute(2, 0, 3, 1, 4)
  local q, k, v = qkv[0], qkv[1], qkv[2]
  local attn = q:matmul(k:transpose(-2, -1))
  T.eq(attn.shape:totable(), { 6, 2, 5, 5 }, "q @ k^T shape")
  check_4d(attn, q, k:transpose(-2, -1), "q @ k^T")
  check_4d(attn:matmul(v), attn, v, "attn @ v")
  -- broadcast batch dims in both operands
  local x, y = torch.randn(3, 1, 2, 4), torch.randn(1, 4, 4, 3)
  check_4d(x:matmul(y), x, y, "[3, 1] x [1, 4] batches")
  local xt, yt = torch.randn(3, 1, 4, 2):transpose(2, 3), torch.randn(1, 4, 3, 4):transpose(2, 3)
  check_4d(xt:matmul(yt), xt, yt, "broadcast batches of transposed matrices")
  -- gradients flow to the permuted operands
  local base = torch.randn(4, 3, 3, 2, 2, { dtype = torch.float64, requires_grad = true })
  local function f(t)
    local p = t:permute(2, 0, 3, 1, 4)
    return p[0]:matmul(p[1]:transpose(-2, -1)):matmul(p[2])
  end
  gradcheck("matmul of permuted q, k, v", f, { base })
end)

T.test("gradients of products with an empty inner dim", function()
  -- a batch of rows with no features (a tensor-parallel rank's empty piece): the gradients are
  -- empty and zeros, not an error
  local w = torch.randn(4, 0, { requires_grad = true })
  local x = torch.randn(2, 3, 0, { requires_grad = true })
  local y = F.linear(x, w)
  T.eq(y.shape:totable(), { 2, 3, 4 }, "linear output")
  T.eq(y:abs():sum():item(), 0.0, "zeros")
  y:sum():backward()
  T.eq(x.grad.shape:totable(), { 2, 3, 0 }, "input gradient")
  T.eq(w.grad.shape:totable(), { 4, 0 }, "weight gradient")
  local a, b = torch.randn(2, 0, 4, { requires_grad = true }), torch.randn(4, 5, { requires_grad = true })
  a:matmul(b):sum():backward()
  T.eq(b.grad:tolist(), torch.zeros(4, 5):tolist(), "no rows: a zero gradient")
end)

T.test("bmm dot outer addmm", function()
  local x, y = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
  local r = x:bmm(y)
  T.eq(r.shape:totable(), {2, 3, 5}, "bmm shape")
  for k = 0, 1 do
    T.near(r[k]:tolist(), matmul(x[k]:tolist(), y[k]:tolist()), 1e-5, "bmm batch " .. k)
  end
  local u, w = torch.tensor({1.0, 2.0, 3.0}), torch.tensor({4.0, 5.0, 6.0})
  T.eq(u:dot(w):item(), 32.0, "dot")
  T.eq(torch.dot(u, w):item(), 32.0, "torch.dot")
  T.eq(u:outer(torch.tensor({1.0, 2.0})):tolist(), {{1.0, 2.0}, {2.0, 4.0}, {3.0, 6.0}}, "outer")
  local bias = torch.randn(5)
  local want = matmul(A, B)
  local BI = bias:tolist()
  for i2 = 1, 3 do for j = 1, 5 do want[i2][j] = want[i2][j] + BI[j] end end
  T.near(torch.addmm(bias, a, b):tolist(), want, 1e-5, "addmm with a broadcast bias")
  T.near(bias:addmm(a, b):tolist(), want, 1e-5, "bias:addmm(a, b)")
  local want2 = matmul(A, B)
  for i2 = 1, 3 do for j = 1, 5 do want2[i2][j] = 0.5 * BI[j] + 2 * want2[i2][j] end end
  T.near(torch.addmm(bias, a, b, {beta = 0.5, alpha = 2}):tolist(), want2, 1e-5, "addmm beta, alpha")
  T.raises(function() torch.addmm(bias, a, b, {gamma = 1}) end, "bad argument #4 to 'addmm' (unknown keyword 'gamma')")
end)

T.test("error format", function()
  T.raises(function() torch.randn(3, 4):matmul(torch.randn(5, 6)) end,
    "bad argument #1 to 'matmul' (shapes [3, 4] and [5, 6] cannot be multiplied)")
  T.raises(function() torch.matmul(torch.randn(3, 4), torch.randn(5, 6)) end,
    "bad argument #2 to 'matmul' (shapes [3, 4] and [5, 6] cannot be multiplied)")
  T.raises(function() torch.mm(torch.randn(3, 4), torch.randn(5, 6)) end,
    "bad argument #2 to 'mm' (shapes [3, 4] and [5, 6] cannot be multiplied)")
  T.raises(function() a:matmul(3) end, "bad argument #1 to 'matmul' (tensor expected, got number)")
  T.raises(function() torch.bmm(a, b) end, "~bad argument #2 to 'bmm' (")
  local ok, err = pcall(function() return a:mm(a) end)
  T.check(not ok and err:match("^[^:]*test_matmul%.lua:%d+: bad argument") ~= nil, "the message starts with the call site: " .. tostring(err))
end)

-- many small products (batches spread over the CPU pool): every batch against the loop reference,
-- in each float dtype, with transposed and broadcast (batch stride 0) operands, and baddbmm's beta
T.test("bmm of many small batches", function()
  torch.manual_seed(5)
  for _, dt in ipairs({ torch.float32, torch.float64, torch.bfloat16 }) do
    local tol = dt == torch.bfloat16 and 0.1 or 1e-4
    local x, y = torch.randn(37, 5, 3):to(dt), torch.randn(37, 7, 3):to(dt):transpose(1, 2)
    local bias = torch.randn(37, 5, 7):to(dt)
    local got = torch.bmm(x, y)
    local w1 = torch.randn(1, 3, 7):to(dt)
    local shared = torch.bmm(x, w1:expand(37, 3, 7))
    local acc = torch.baddbmm(bias, x, y, { beta = 0.5, alpha = 2 })
    local ok_all, ok_acc, ok_shared = true, true, true
    for i = 0, 36 do
      local want = matmul(x[i]:double():tolist(), y[i]:double():tolist())
      local g, s, c = got[i]:double():tolist(), shared[i]:double():tolist(), acc[i]:double():tolist()
      local ys = matmul(x[i]:double():tolist(), w1[0]:double():tolist())
      local b = bias[i]:double():tolist()
      for r = 1, 5 do
        for col = 1, 7 do
          ok_all = ok_all and math.abs(g[r][col] - want[r][col]) < tol
          ok_acc = ok_acc and math.abs(c[r][col] - (0.5 * b[r][col] + 2 * want[r][col])) < tol * 4
          ok_shared = ok_shared and math.abs(s[r][col] - ys[r][col]) < tol
        end
      end
    end
    T.check(ok_shared, tostring(dt) .. ": every batch against a shared (batch stride 0) operand")
    T.check(ok_all, tostring(dt) .. ": every batch of bmm")
    T.check(ok_acc, tostring(dt) .. ": every batch of baddbmm")
  end
end)
