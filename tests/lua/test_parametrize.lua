-- nn.utils.parametrize / nn.utils.parametrizations against plain-Lua references.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local nn = torch.nn
local P = nn.utils.parametrize
local PZ = nn.utils.parametrizations
local f64 = { dtype = torch.float64 }

local Sym = nn.Module:extend("Sym")
function Sym:forward(X) return X:triu() + X:triu(1):t() end
function Sym:right_inverse(A) return A:triu() end

local Scale = nn.Module:extend("Scale")
function Scale:__init(c) self.c = c end
function Scale:forward(X) return X * self.c end
function Scale:right_inverse(X) return X / self.c end

local Counting = nn.Module:extend("Counting")
function Counting:__init() self.calls = 0 end
function Counting:forward(X) self.calls = self.calls + 1; return X * 2 end

local function sym_ref(x) -- triu(X) + triu(X,1)^T by loops
  local n, r = #x, {}
  for i = 1, n do
    r[i] = {}
    for j = 1, n do r[i][j] = i <= j and x[i][j] or x[j][i] end
  end
  return r
end

local function matmul_tn(a) -- a^T a
  local n, k, r = #a, #a[1], {}
  for i = 1, k do
    r[i] = {}
    for j = 1, k do
      local s = 0
      for l = 1, n do s = s + a[l][i] * a[l][j] end
      r[i][j] = s
    end
  end
  return r
end

local function eye(k)
  local r = {}
  for i = 1, k do r[i] = {}; for j = 1, k do r[i][j] = i == j and 1 or 0 end end
  return r
end

T.test("register: value, keys, forward, parameters", function()
  torch.manual_seed(0)
  local m = nn.Linear(4, 4):double()
  local W0 = m.weight:detach():clone()
  P.register_parametrization(m, "weight", Sym())
  T.eq(P.is_parametrized(m), true); T.eq(P.is_parametrized(m, "weight"), true); T.eq(P.is_parametrized(m, "bias"), false)
  T.eq(m:_get_name(), "ParametrizedLinear")
  T.check(P.type_before_parametrizations(m) == nn.Linear, "type_before_parametrizations")
  -- right_inverse ran: original = triu(W0)
  T.near(m.parametrizations.weight.original:tolist(), W0:triu():tolist(), 1e-12, "original")
  T.near(m.weight:tolist(), sym_ref(W0:tolist()), 1e-12, "weight = sym")
  T.eq(m:state_dict():keys(), { "bias", "parametrizations.weight.original" })
  local names = {}
  for _, e in ipairs(m:named_parameters()) do names[#names + 1] = e[1] end
  T.eq(names, { "bias", "parametrizations.weight.original" })
  T.eq(m._parameters:has("weight"), false)
  local x = torch.randn(3, 4, f64)
  T.near(m(x):tolist(), (x:matmul(torch.tensor(sym_ref(W0:tolist()), f64):t()) + m.bias):tolist(), 1e-12, "forward")
end)

T.test("gradients to the original", function()
  torch.manual_seed(1)
  gradcheck("sym", function(X) return Sym()(X) end, { torch.randn(4, 4, f64) })
  local m = nn.Linear(3, 3):double()
  P.register_parametrization(m, "weight", Sym())
  local x = torch.randn(5, 3, f64)
  m(x):pow(2):sum():backward()
  local orig = m.parametrizations.weight.original
  local X = orig:detach():clone():requires_grad_()
  x:matmul(Sym()(X):t()):add(m.bias:detach()):pow(2):sum():backward()
  T.near(orig.grad:tolist(), X.grad:tolist(), 1e-12, "module grad = functional grad")
end)

T.test("buffers, chaining, assignment and right_inverse", function()
  torch.manual_seed(2)
  local m = nn.Module()
  m:register_buffer("b", torch.randn(3, 3, f64))
  local B0 = m.b:clone()
  P.register_parametrization(m, "b", Scale(2))
  T.eq(m:state_dict():keys(), { "parametrizations.b.original" })
  T.eq(m:named_buffers()[1][1], "parametrizations.b.original")
  T.near(m.b:tolist(), B0:tolist(), 1e-12, "scale o inverse = id")
  P.register_parametrization(m, "b", Scale(3))
  T.eq(#m.parametrizations.b, 2)
  T.near(m.b:tolist(), (B0 * 3):tolist(), 1e-12, "chained: applied in order")
  -- assignment goes through right_inverse of the chain
  local V = torch.randn(3, 3, f64)
  m.b = V
  T.near(m.parametrizations.b.original:tolist(), (V / 6):tolist(), 1e-12, "original after assignment")
  T.near(m.b:tolist(), V:tolist(), 1e-12, "value after assignment")
  m.parametrizations.b:right_inverse(V * 2)
  T.near(m.b:tolist(), (V * 2):tolist(), 1e-12, "value after right_inverse")
  T.raises(function() m.b = nil end, "property 'b' of 'ParametrizedModule' object has no deleter")
end)

T.test("remove_parametrizations", function()
  torch.manual_seed(3)
  local m = nn.Linear(3, 3):double()
  P.register_parametrization(m, "weight", Sym())
  local orig = m.parametrizations.weight.original
  local want = sym_ref(orig:tolist())
  P.remove_parametrizations(m, "weight")
  T.eq(P.is_parametrized(m), false)
  T.check(rawequal(m.weight, orig), "same Parameter object kept")
  T.near(m.weight:tolist(), want, 1e-12, "left parametrized")
  T.eq(m:state_dict():keys(), { "bias", "weight" }) -- re-registered last, as in PyTorch
  T.eq(m:_get_name(), "Linear")
  T.eq(rawget(m, "_forward_pre_hooks"), nil)
  local n = nn.Linear(3, 3):double()
  P.register_parametrization(n, "weight", Sym())
  local tri = n.parametrizations.weight.original:detach():clone()
  P.remove_parametrizations(n, "weight", false)
  T.near(n.weight:tolist(), tri:tolist(), 1e-12, "leave_parametrized=false keeps the original")
  T.raises(function() P.remove_parametrizations(n, "weight") end,
    "Module " .. tostring(n) .. " does not have a parametrization on weight")
end)

T.test("errors", function()
  local m = nn.Linear(3, 2)
  T.raises(function() P.register_parametrization(m, "foo", Sym()) end,
    "Module '" .. tostring(m) .. "' does not have a parameter, a buffer, or a parametrized element with name 'foo'")
  local Bad = nn.Module:extend("Bad")
  function Bad:forward(X) return X:sum(0) end
  T.raises(function() P.register_parametrization(m, "weight", Bad()) end,
    "Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is enabled.\nunparametrized shape: torch.Size([2, 3])\nparametrized shape: torch.Size([3])")
  T.eq(P.is_parametrized(m), false)
  P.register_parametrization(m, "weight", Bad(), { unsafe = true })
  T.eq(m.weight.shape:totable(), { 3 })
  T.raises(function() P.remove_parametrizations(nn.Linear(2, 2), "weight") end, "~does not have a parametrization on weight")
  T.raises(function() PZ.orthogonal(nn.Linear(2, 2), "bias") end, "Expected a matrix or batch of matrices. Got a tensor of 1 dimensions.")
  T.raises(function() PZ.orthogonal(nn.Linear(2, 2), "weight", "qr") end,
    'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: qr')
end)

T.test("cached", function()
  local m = nn.Linear(2, 2)
  local c = Counting()
  P.register_parametrization(m, "weight", c)
  local x = torch.randn(1, 2)
  c.calls = 0
  m(x); m(x)
  T.eq(c.calls, 2, "uncached: one call per forward")
  do
    local _ <close> = P.cached()
    m(x); local w1 = m.weight
    m(x)
    T.eq(c.calls, 3, "cached: computed once")
    T.check(rawequal(w1, m.weight), "cached: same tensor")
  end
  m(x)
  T.eq(c.calls, 4, "cache cleared at block end")
end)

T.test("optimizer steps the original; save/load round trip", function()
  torch.manual_seed(4)
  local m = nn.Linear(3, 3):double()
  P.register_parametrization(m, "weight", Sym())
  local opt = torch.optim.SGD(m:parameters(), { lr = 0.1 })
  local x, y = torch.randn(8, 3, f64), torch.randn(8, 3, f64)
  local before = m.parametrizations.weight.original:detach():clone()
  local l0
  for i = 1, 3 do
    opt:zero_grad()
    local loss = (m(x) - y):pow(2):mean()
    if i == 1 then l0 = loss:item() end
    loss:backward()
    opt:step()
  end
  local after = m.parametrizations.weight.original:detach()
  T.check(not torch.allclose(after, before), "original moved")
  m(x)
  T.near(m.weight:tolist(), sym_ref(after:tolist()), 1e-12, "weight recomputed at forward")
  T.check((m(x) - y):pow(2):mean():item() < l0, "loss decreased")
  local path = os.tmpname()
  torch.save(m:state_dict(), path)
  local n = nn.Linear(3, 3):double()
  P.register_parametrization(n, "weight", Sym())
  n:load_state_dict(torch.load(path))
  os.remove(path)
  T.near(n.weight:tolist(), m.weight:tolist(), 1e-12, "loaded value (before any forward)")
  T.near(n(x):tolist(), m(x):tolist(), 1e-12, "loaded forward")
end)

T.test("orthogonal", function()
  torch.manual_seed(5)
  for _, c in ipairs({ { 4, 4, nil }, { 3, 5, "cayley" }, { 5, 3, "matrix_exp" }, { 3, 5, "householder" }, { 4, 4, "cayley" } }) do
    local m = nn.Linear(c[1], c[2]):double()
    PZ.orthogonal(m, "weight", c[3])
    local W = m.weight:tolist() -- (out, in)
    local tall = c[2] >= c[1] and W or m.weight:t():tolist()
    T.near(matmul_tn(tall), eye(math.min(c[1], c[2])), 1e-6, "Q^T Q = I " .. tostring(c[3]))
    -- stays orthogonal after a step
    local opt = torch.optim.SGD(m:parameters(), { lr = 0.5 })
    m(torch.randn(4, c[1], f64)):sum():backward()
    opt:step()
    m(torch.randn(1, c[1], f64))
    W = m.weight:tolist()
    tall = c[2] >= c[1] and W or m.weight:t():tolist()
    T.near(matmul_tn(tall), eye(math.min(c[1], c[2])), 1e-6, "after a step " .. tostring(c[3]))
  end
  T.eq(nn.Linear(3, 3):double():_get_name(), "Linear")
  local m = PZ.orthogonal(nn.Linear(3, 3):double())
  T.eq(m:state_dict():keys(), { "bias", "parametrizations.weight.original", "parametrizations.weight.0.base" })
  -- assigning an orthogonal matrix reproduces it
  local Q = torch.linalg.qr(torch.randn(3, 3, f64))
  m.weight = Q
  T.near(m.weight:tolist(), Q:tolist(), 1e-10, "assign orthogonal")
  -- gradients of each map
  for _, map in ipairs({ "matrix_exp", "cayley", "householder" }) do
    local orth = PZ._Orthogonal(torch.zeros(4, 3, f64), map, false)
    local X = torch.randn(4, 3, f64)
    if map == "householder" then X = X + torch.eye(4, 3, f64) * 5 end -- diagonal entries trunc to +-k
    gradcheck("orthogonal " .. map, function(A) return orth(A) end, { X })
  end
end)

T.test("weight_norm", function()
  torch.manual_seed(6)
  local m = nn.Linear(4, 3):double()
  local W0 = m.weight:detach():clone():tolist()
  PZ.weight_norm(m)
  T.eq(m:state_dict():keys(), { "bias", "parametrizations.weight.original0", "parametrizations.weight.original1" })
  local g = m.parametrizations.weight.original0
  T.eq(g.shape:totable(), { 3, 1 })
  T.near(m.weight:tolist(), W0, 1e-12, "unchanged at registration")
  -- change g: weight = g * v / ||v|| per row
  local with_g = torch.tensor({ { 1 }, { 2 }, { 3 } }, f64)
  do local _ <close> = torch.no_grad(); g:copy_(with_g) end
  m(torch.randn(1, 4, f64))
  local v = m.parametrizations.weight.original1:tolist()
  local want = {}
  for i = 1, 3 do
    local s = 0
    for j = 1, 4 do s = s + v[i][j] ^ 2 end
    want[i] = {}
    for j = 1, 4 do want[i][j] = i * v[i][j] / math.sqrt(s) end
  end
  T.near(m.weight:tolist(), want, 1e-12, "g * v / ||v||")
  local wn = m.parametrizations.weight[0]
  gradcheck("weight_norm", function(gg, vv) return wn(gg, vv) end, { torch.rand(3, 1, f64) + 0.5, torch.randn(3, 4, f64) })
  T.raises(function() P.remove_parametrizations(m, "weight", false) end,
    "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of a sequence of tensors.")
  P.remove_parametrizations(m, "weight")
  T.near(m.weight:tolist(), want, 1e-12, "removed keeps the value")
  T.eq(m:state_dict():keys(), { "bias", "weight" })
end)

T.test("spectral_norm", function()
  torch.manual_seed(7)
  local m = nn.Linear(5, 4):double()
  local W = m.weight:detach():tolist()
  PZ.spectral_norm(m)
  T.eq(m:state_dict():keys(), { "bias", "parametrizations.weight.original", "parametrizations.weight.0._u", "parametrizations.weight.0._v" })
  -- plain-Lua power iteration to convergence
  local v = { 1, 1, 1, 1, 1 }
  local sigma
  for _ = 1, 500 do
    local u = {}
    for i = 1, 4 do u[i] = 0; for j = 1, 5 do u[i] = u[i] + W[i][j] * v[j] end end
    local nu = 0; for i = 1, 4 do nu = nu + u[i] ^ 2 end; nu = math.sqrt(nu)
    for i = 1, 4 do u[i] = u[i] / nu end
    for j = 1, 5 do v[j] = 0; for i = 1, 4 do v[j] = v[j] + W[i][j] * u[i] end end
    local nv = 0; for j = 1, 5 do nv = nv + v[j] ^ 2 end; sigma = math.sqrt(nv)
    for j = 1, 5 do v[j] = v[j] / sigma end
  end
  for _ = 1, 30 do m(torch.randn(1, 5, f64)) end -- training forwards iterate
  local got = m.parametrizations.weight.original[0][0]:item() / m.weight[0][0]:item()
  T.near(got, sigma, 1e-8, "sigma")
  local u = m.parametrizations.weight[0]._u:clone()
  m:eval(); m(torch.randn(1, 5, f64))
  T.check(torch.equal(u, m.parametrizations.weight[0]._u), "eval: no iteration")
  -- save/load into a freshly parametrized module
  local n = PZ.spectral_norm(nn.Linear(5, 4):double())
  n:load_state_dict(m:state_dict())
  n:eval()
  T.near(n.weight:tolist(), m.weight:tolist(), 1e-12, "loaded value")
  local x = torch.randn(2, 5, f64)
  T.near(n(x):tolist(), m(x):tolist(), 1e-12, "loaded forward")
  local sn = m.parametrizations.weight[0]
  gradcheck("spectral_norm (eval)", function(A) return sn(A) end, { torch.randn(4, 5, f64) })
  T.raises(function() PZ.spectral_norm(nn.Linear(2, 2), "weight", 0) end,
    "Expected n_power_iterations to be positive, but got n_power_iterations=0")
end)
