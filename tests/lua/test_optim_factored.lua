-- Adafactor and Muon against their update rules written out in plain Lua (PyTorch's algorithm
-- boxes), and SparseAdam's refusal. Parameters are float64 so the comparison is tight.
local T = ...
local f64 = { dtype = torch.float64 }

-- nested Lua lists <-> flat arrays, for the references
local function flat(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t; return out end
  for _, v in ipairs(t) do flat(v, out) end
  return out
end

-- ---- Adafactor ----

-- One step on the flat values w / g of a tensor of shape dims (a list), the reference way: rows
-- and columns over the last two dims, batched over the others.
local function adafactor_ref(w, g, dims, s, t, h)
  local n = #w
  local eps1 = h.eps1 or 2.220446049250313e-16
  local fresh = t ^ h.beta2_decay
  local sq = 0
  for i = 1, n do sq = sq + w[i] * w[i] end
  local alpha = math.max(h.eps2, math.sqrt(sq) / math.sqrt(n)) * math.min(h.lr, 1 / math.sqrt(t))
  for i = 1, n do w[i] = w[i] * (1 - h.lr * h.wd) end
  local var = {}
  if #dims >= 2 then
    local R, Cn = dims[#dims - 1], dims[#dims]
    local B = n // (R * Cn)
    s.row = s.row or {}
    s.col = s.col or {}
    for b = 0, B - 1 do
      local base = b * R * Cn
      for r = 0, R - 1 do
        local m = 0
        for c = 0, Cn - 1 do m = m + g[base + r * Cn + c + 1] ^ 2 end
        local k = b * R + r + 1
        s.row[k] = (s.row[k] or 0) + fresh * (m / Cn - (s.row[k] or 0))
      end
      for c = 0, Cn - 1 do
        local m = 0
        for r = 0, R - 1 do m = m + g[base + r * Cn + c + 1] ^ 2 end
        local k = b * Cn + c + 1
        s.col[k] = (s.col[k] or 0) + fresh * (m / R - (s.col[k] or 0))
      end
      local rmean = 0
      for r = 1, R do rmean = rmean + s.row[b * R + r] end
      rmean = math.max(rmean / R, eps1)
      for r = 0, R - 1 do
        for c = 0, Cn - 1 do var[base + r * Cn + c + 1] = s.row[b * R + r + 1] * s.col[b * Cn + c + 1] / rmean end
      end
    end
  else
    s.v = s.v or {}
    for i = 1, n do
      s.v[i] = (s.v[i] or 0) + fresh * (g[i] ^ 2 - (s.v[i] or 0))
      var[i] = s.v[i]
    end
  end
  local u, usq = {}, 0
  for i = 1, n do
    u[i] = g[i] / math.sqrt(math.max(var[i], eps1 * eps1))
    usq = usq + u[i] ^ 2
  end
  local denom = math.max(1, math.sqrt(usq) / (math.sqrt(n) * h.d))
  for i = 1, n do w[i] = w[i] - alpha / denom * u[i] end
end

T.test("Adafactor: matrices, a batch of matrices, vectors and scalars against the reference", function()
  for _, case in ipairs({
    { name = "defaults", h = { lr = 1e-2, beta2_decay = -0.8, eps2 = 1e-3, d = 1, wd = 0 }, opts = {} },
    { name = "all set", h = { lr = 0.3, beta2_decay = -0.5, eps1 = 1e-6, eps2 = 1e-2, d = 2, wd = 0.1 },
      opts = { lr = 0.3, beta2_decay = -0.5, eps = { 1e-6, 1e-2 }, d = 2, weight_decay = 0.1 } },
    { name = "maximize", h = { lr = 1e-2, beta2_decay = -0.8, eps2 = 1e-3, d = 1, wd = 0, max = true }, opts = { maximize = true } },
  }) do
    torch.manual_seed(5)
    local shapes = { { 3, 4 }, { 2, 3, 5 }, { 6 }, {} }
    local params, refs, states = {}, {}, {}
    for i, sh in ipairs(shapes) do
      params[i] = nn.Parameter(torch.randn(sh, f64))
      refs[i] = params[i]:reshape(-1):tolist()
      states[i] = {}
    end
    local opt = optim.Adafactor(params, case.opts)
    for t = 1, 4 do
      opt:zero_grad()
      local loss = 0
      for i, p in ipairs(params) do loss = loss + ((p * p * p):sum() * (0.5 + 0.25 * i)) end
      loss:backward()
      for i, p in ipairs(params) do
        local g = p.grad:reshape(-1):tolist()
        if case.h.max then for k = 1, #g do g[k] = -g[k] end end
        adafactor_ref(refs[i], g, shapes[i], states[i], t, case.h)
      end
      opt:step()
    end
    for i, p in ipairs(params) do T.near(p:reshape(-1):tolist(), refs[i], 1e-10, case.name .. " param " .. i) end
  end
end)

T.test("Adafactor: state names and shapes, state_dict round trip", function()
  local w, b = nn.Parameter(torch.randn(3, 4)), nn.Parameter(torch.randn(4))
  local opt = optim.Adafactor({ w, b })
  ;(w:sum(0) * b):sum():backward()
  opt:step()
  local s = opt.state[w]
  T.eq(s.row_var:size():totable(), { 3, 1 })
  T.eq(s.col_var:size():totable(), { 1, 4 })
  T.eq(s.variance, nil)
  T.eq(opt.state[b].variance:size():totable(), { 4 })
  T.eq(s.step, 1)
  local sd = opt:state_dict()
  local opt2 = optim.Adafactor({ w, b })
  opt2:load_state_dict(sd)
  T.eq(opt2.state[w].row_var:tolist(), s.row_var:tolist())
  T.eq(opt2.param_groups[1].beta2_decay, -0.8)
end)

T.test("Adafactor: bad options", function()
  local w = nn.Parameter(torch.randn(2, 2))
  T.raises(function() optim.Adafactor({ w }, { d = 0.5 }) end, "~Clipping threshold d should be >= 1 but is: 0.5")
  T.raises(function() optim.Adafactor({ w }, { beta2_decay = 0.1 }) end, "~beta2_decay should be <= 0 but is: 0.1")
  T.raises(function() optim.Adafactor({ w }, { eps = { -1, 1e-3 } }) end, "~epsilon1 should be >= 0 but is: -1")
  T.raises(function() optim.Adafactor({ w }, { lr = -1 }) end, "~Invalid learning rate: -1")
  T.raises(function() optim.Adafactor({ w }, { betas = 1 }) end, "~betas")
end)

-- ---- Muon ----

-- round a double to bfloat16 (nearest even), the reference's only rounding
local function bf16(x)
  if x ~= x or x == 0 then return x end
  local bits = string.unpack("<I4", string.pack("<f", x))
  local low = bits & 0xFFFF
  bits = bits & 0xFFFF0000
  if low > 0x8000 or (low == 0x8000 and (bits >> 16) & 1 == 1) then bits = bits + 0x10000 end
  return (string.unpack("<f", string.pack("<I4", bits & 0xFFFFFFFF)))
end

local function mat(rows, cols, f) local m = {} for i = 1, rows do m[i] = {} for j = 1, cols do m[i][j] = f(i, j) end end return m end
local function mm(A, B, round)
  return mat(#A, #B[1], function(i, j)
    local s = 0
    for k = 1, #B do s = s + A[i][k] * B[k][j] end
    return round == false and s or bf16(s)
  end)
end
local function tr(A) return mat(#A[1], #A, function(i, j) return A[j][i] end) end

-- the quintic Newton-Schulz iteration with every op rounded to bfloat16, as PyTorch runs it;
-- addmm: each addmm rounds once
local function ns_ref(G, a, b, c, steps, eps, addmm)
  local tall = #G > #G[1]
  local X = mat(#G, #G[1], function(i, j) return bf16(G[i][j]) end)
  if tall then X = tr(X) end
  local sq = 0
  for _, row in ipairs(X) do for _, v in ipairs(row) do sq = sq + v * v end end
  local nrm = math.max(bf16(math.sqrt(sq)), eps)
  X = mat(#X, #X[1], function(i, j) return bf16(X[i][j] / nrm) end)
  for _ = 1, steps do
    local A = mm(X, tr(X))
    if addmm then
      local AA = mm(A, A, false)
      local Bm = mat(#A, #A, function(i, j) return bf16(b * A[i][j] + c * AA[i][j]) end)
      local BX = mm(Bm, X, false)
      X = mat(#X, #X[1], function(i, j) return bf16(a * X[i][j] + BX[i][j]) end)
    else
      local AA = mm(A, A)
      local Bm = mat(#A, #A, function(i, j) return bf16(bf16(b * A[i][j]) + bf16(c * AA[i][j])) end)
      local BX = mm(Bm, X)
      X = mat(#X, #X[1], function(i, j) return bf16(bf16(a * X[i][j]) + BX[i][j]) end)
    end
  end
  return tall and tr(X) or X
end

T.test("Muon: the Newton-Schulz orthogonalisation in bfloat16", function()
  torch.manual_seed(11)
  for _, sh in ipairs({ { 4, 6 }, { 7, 3 }, { 5, 5 } }) do
    local G = torch.randn(sh, f64)
    local got = optim.Muon._orthogonalize(G, { 3.4445, -4.7750, 2.0315 }, 5, 1e-7, false)
    T.eq(got.dtype, torch.bfloat16)
    T.eq(got:size():totable(), sh)
    local want = ns_ref(G:tolist(), 3.4445, -4.7750, 2.0315, 5, 1e-7)
    -- the reference sums products in float64 where the kernel sums in float32: a bfloat16 ulp apart at times
    T.near(got:double():tolist(), want, 4e-3, "NS " .. table.concat(sh, "x"))
    local addmm = optim.Muon._orthogonalize(G, { 3.4445, -4.7750, 2.0315 }, 5, 1e-7, true)
    T.near(addmm:double():tolist(), ns_ref(G:tolist(), 3.4445, -4.7750, 2.0315, 5, 1e-7, true), 4e-3, "NS with addmm " .. table.concat(sh, "x"))
    -- what the iteration is for: singular values pulled towards 1
    local sv = torch.linalg.svdvals(got:double())
    T.check(sv:min():item() > 0.4 and sv:max():item() < 1.6, "singular values near 1: " .. tostring(sv))
  end
  T.raises(function() optim.Muon._orthogonalize(torch.randn(3), { 1, 2, 3 }, 5, 1e-7) end, "~Input tensor gradient must be a 2D matrix")
  T.raises(function() optim.Muon._orthogonalize(torch.randn(3, 3), { 1, 2 }, 5, 1e-7) end, "~Coefficients must be a tuple of exactly 3 values")
  T.raises(function() optim.Muon._orthogonalize(torch.randn(3, 3), { 1, 2, 3 }, 100, 1e-7) end, "~Number of steps must be less than 100")
end)

T.test("Muon: momentum, Nesterov, weight decay and the shape's learning rate", function()
  for _, case in ipairs({
    { opts = {}, m = 0.95, nesterov = true, wd = 0.1, lr = 1e-3, fn = "original" },
    { opts = { lr = 0.02, momentum = 0.9, nesterov = false, weight_decay = 0.01, adjust_lr_fn = "match_rms_adamw" },
      m = 0.9, nesterov = false, wd = 0.01, lr = 0.02, fn = "match_rms_adamw" },
  }) do
    torch.manual_seed(3)
    for _, sh in ipairs({ { 6, 4 }, { 3, 8 } }) do
      local w = nn.Parameter(torch.randn(sh, f64))
      local opt = optim.Muon({ w }, case.opts)
      local buf = mat(sh[1], sh[2], function() return 0 end)
      for t = 1, 3 do
        opt:zero_grad()
        ;(w * w * w):sum():backward()
        local g, before = w.grad:tolist(), w:detach():clone()
        buf = mat(sh[1], sh[2], function(i, j) return buf[i][j] * case.m + (1 - case.m) * g[i][j] end)
        local upd = case.nesterov and mat(sh[1], sh[2], function(i, j) return g[i][j] + case.m * (buf[i][j] - g[i][j]) end) or buf
        local O = optim.Muon._orthogonalize(torch.tensor(upd, f64), { 3.4445, -4.7750, 2.0315 }, 5, 1e-7, false):double()
        local ratio = case.fn == "original" and math.sqrt(math.max(1, sh[1] / sh[2])) or 0.2 * math.sqrt(math.max(sh[1], sh[2]))
        local want = before * (1 - case.lr * case.wd) - O * (case.lr * ratio)
        opt:step()
        T.near(w:reshape(-1):tolist(), want:reshape(-1):tolist(), 1e-12, ("step %d %dx%d"):format(t, sh[1], sh[2]))
      end
      T.near(opt.state[w].momentum_buffer:reshape(-1):tolist(), flat(buf), 1e-12, "momentum buffer")
      T.eq(opt.state[w].step, nil, "Muon keeps no step count")
    end
  end
end)

T.test("Muon: 2-D parameters only, bad options", function()
  T.raises(function() optim.Muon({ nn.Parameter(torch.randn(3)) }) end,
    "~Muon only supports 2D parameters whereas we found a parameter with size: torch.Size([3])")
  local w = nn.Parameter(torch.randn(2, 2))
  T.raises(function() optim.Muon({ w }, { adjust_lr_fn = "other" }) end, "~Adjust learning rate function other is not supported")
  T.raises(function() optim.Muon({ w }, { momentum = -1 }) end, "~momentum should be >= 0 but is: -1")
  T.raises(function() optim.Muon({ w }, { maximize = true }) end, "~maximize")
end)

T.test("SparseAdam: refused with what to use instead", function()
  T.raises(function() optim.SparseAdam({ nn.Parameter(torch.randn(2)) }) end, "~use optim.Adam")
end)

if torch.cuda.is_available() then
  T.test("Adafactor and Muon on CUDA match the CPU", function()
    for _, name in ipairs({ "Adafactor", "Muon" }) do
      torch.manual_seed(9)
      local wc = nn.Parameter(torch.randn(5, 7))
      local wg = nn.Parameter(wc:detach():cuda())
      local oc, og = optim[name]({ wc }), optim[name]({ wg })
      for _ = 1, 3 do
        for _, pair in ipairs({ { wc, oc }, { wg, og } }) do
          pair[2]:zero_grad()
          ;(pair[1] * pair[1] * pair[1]):sum():backward()
          pair[2]:step()
        end
      end
      T.near(wg:cpu():reshape(-1):tolist(), wc:reshape(-1):tolist(), name == "Muon" and 1e-2 or 1e-5, name .. " on CUDA")
    end
  end)
else
  T.skip("no GPU", 2)
end
