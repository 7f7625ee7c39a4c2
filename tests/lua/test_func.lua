-- torch.func: functional_call (and nn.utils.stateless), grad, grad_and_value, vjp, jacrev,
-- jacfwd, vmap; against hand-swapped modules, central differences, plain-Lua derivatives
-- and explicit loops.
local T = ...
local nn = torch.nn
local f64 = { dtype = torch.float64 }
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)

local function L(t) return t:tolist() end

-- the model run with some parameters/buffers replaced by hand (copy_ under no_grad, and back)
local function by_hand(model, dict, ...)
  local saved = {}
  local named = {}
  for _, e in ipairs(model:named_parameters()) do named[e[1]] = e[2] end
  for _, e in ipairs(model:named_buffers()) do named[e[1]] = e[2] end
  do
    local _ <close> = torch.no_grad()
    for k, v in pairs(dict) do saved[k] = named[k]:clone(); named[k]:copy_(v) end
  end
  local out = model(...):detach()
  do
    local _ <close> = torch.no_grad()
    for k, v in pairs(saved) do named[k]:copy_(v) end
  end
  return out
end

T.test("functional_call matches the module with its parameters replaced by hand", function()
  torch.manual_seed(0)
  local model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
  local w0, b2 = model[0].weight, model[2].bias
  local before = L(w0)
  local x = torch.randn(5, 3)
  local dict = { ["0.weight"] = torch.randn(4, 3), ["2.bias"] = torch.randn(2) }
  local got = torch.func.functional_call(model, dict, x)
  T.near(L(got), L(by_hand(model, dict, x)), 1e-6, "one argument")
  T.near(L(torch.func.functional_call(model, dict, { x })), L(got), 0, "args as a list")
  T.near(L(torch.nn.utils.stateless.functional_call(model, dict, x)), L(got), 0, "stateless alias")
  T.check(model[0].weight == w0 and model[2].bias == b2, "the module's own parameters are back")
  T.check(model[0]._parameters.weight == w0, "registry untouched")
  T.eq(L(model[0].weight), before, "values untouched")
  T.near(L(model(x)), L(by_hand(model, {}, x)), 0, "the module runs as before")
  -- a list of dicts; a buffer (BatchNorm in eval)
  local bn = nn.BatchNorm1d(3)
  bn:eval()
  local dicts = { { running_mean = torch.randn(3) }, { running_var = torch.rand(3) + 0.5, weight = torch.randn(3) } }
  local merged = {}
  for _, d in ipairs(dicts) do for k, v in pairs(d) do merged[k] = v end end
  T.near(L(torch.func.functional_call(bn, dicts, x)), L(by_hand(bn, merged, x)), 1e-6, "buffers, several dicts")
  T.near(L(bn.running_mean), { 0, 0, 0 }, 0, "buffer restored")
end)

T.test("functional_call restores the parameters when forward raises; kwargs", function()
  local Net = nn.Module:extend("Net")
  function Net:__init() self.lin = nn.Linear(2, 2) end
  function Net:forward(x, opts)
    if opts and opts.boom then error("boom", 0) end
    return self.lin(x) * (opts and opts.scale or 1)
  end
  local m = Net()
  local w = m.lin.weight
  local new = { ["lin.weight"] = torch.zeros(2, 2), ["lin.bias"] = torch.ones(2) }
  T.raises(function() torch.func.functional_call(m, new, torch.ones(1, 2), { boom = true }) end, "boom", "error passes through")
  T.check(m.lin.weight == w and m.lin.bias == m.lin._parameters.bias, "restored after the error")
  T.near(L(torch.func.functional_call(m, new, torch.ones(1, 2), { scale = 3 })), { { 3, 3 } }, 0, "kwargs reach forward")
  T.raises(function() torch.func.functional_call(m, new, torch.ones(1, 3)) end, "~", "shape error")
  T.check(m.lin.weight == w, "restored after a shape error")
  -- strict
  T.raises(function() torch.func.functional_call(m, { ["lin.weight"] = torch.zeros(2, 2), foo = torch.zeros(1) }, torch.ones(1, 2), nil, { strict = true }) end,
    "Error(s) in reparametrizing for Net:\n\tUnexpected key(s): 'foo'.\n\tMissing key(s): 'lin.bias'.", "strict")
  T.raises(function() torch.func.functional_call(m, { ["nope.weight"] = torch.zeros(1) }, torch.ones(1, 2)) end,
    "Net has no attribute `nope`", "unknown submodule")
  T.check(m.lin.weight == w, "restored after a strict error")
end)

T.test("functional_call ties shared weights", function()
  local Net = nn.Module:extend("Tied")
  function Net:__init()
    self.a = nn.Linear(2, 2, false); self.b = nn.Linear(2, 2, false)
    self.b.weight = self.a.weight
  end
  function Net:forward(x) return self.b(self.a(x)) end
  local m = Net()
  local W = torch.tensor({ { 1., 2. }, { 3., 4. } })
  local x = torch.tensor({ { 1., 1. } })
  local want = x:matmul(W:t()):matmul(W:t())
  T.eq(L(torch.func.functional_call(m, { ["a.weight"] = W }, x)), L(want), "tied: both uses replaced")
  T.raises(function() torch.func.functional_call(m, { ["a.weight"] = W, ["b.weight"] = W * 2 }, x) end,
    "functional_call got multiple values for keys ['a.weight', 'b.weight'], which are tied. Consider using tie_weights=False", "tied conflict")
  local got = torch.func.functional_call(m, { ["a.weight"] = W }, x, nil, { tie_weights = false })
  T.near(L(got), L(x:matmul(W:t()):matmul(m.a.weight:detach():t())), 1e-6, "untied: only a replaced")
  T.check(m.b.weight == m.a.weight, "still tied afterwards")
end)

T.test("gradients through functional_call against central differences", function()
  torch.manual_seed(1)
  local model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)):to(torch.float64)
  local x = torch.randn(5, 3, f64)
  gradcheck("functional_call", function(W, b, W2)
    return torch.func.functional_call(model, { ["0.weight"] = W, ["0.bias"] = b, ["2.weight"] = W2 }, x)
  end, { torch.randn(4, 3, f64), torch.randn(4, f64), torch.randn(2, 4, f64) })
  T.check(model[0].weight.grad == nil, "the module's own parameters get no gradient")
end)

T.test("grad and grad_and_value against analytic derivatives", function()
  local x = torch.tensor({ 0.5, -1, 2 }, f64)
  local g = torch.func.grad(function(t) return (t ^ 3):sum() end)(x)
  local xs = L(x)
  local want = {}
  for i, v in ipairs(xs) do want[i] = 3 * v * v end
  T.near(L(g), want, 1e-12, "d sum(x^3)")
  T.check(not x.requires_grad and x.grad == nil, "input untouched")
  -- argnums list: f(x, y) = sum(x * y^2)
  local y = torch.tensor({ 1, 2, -3 }, f64)
  local gs = torch.func.grad(function(a, b) return (a * b * b):sum() end, { 0, 1 })(x, y)
  local ys, gx, gy = L(y), {}, {}
  for i = 1, 3 do gx[i] = ys[i] ^ 2; gy[i] = 2 * xs[i] * ys[i] end
  T.near(L(gs[1]), gx, 1e-12, "argnums 0"); T.near(L(gs[2]), gy, 1e-12, "argnums 1")
  T.near(L(torch.func.grad(function(a, b) return (a * b * b):sum() end, 1)(x, y)), gy, 1e-12, "argnums=1")
  -- a params dict, has_aux; grad_and_value
  local params = { w = torch.tensor({ 2, 3 }, f64), b = torch.tensor(0.5, f64) }
  local inp = torch.tensor({ 1, -1 }, f64)
  local function loss(p, v)
    local out = (p.w * v):sum() + p.b
    return out * out, { out = out }
  end
  local pg, aux = torch.func.grad(loss, { has_aux = true })(params, inp)
  local o = 2 * 1 - 3 + 0.5
  T.near(L(pg.w), { 2 * o * 1, 2 * o * -1 }, 1e-12, "dict grad w")
  T.near(pg.b:item(), 2 * o, 1e-12, "dict grad b")
  T.near(aux.out:item(), o, 1e-12, "aux")
  local pg2, val, aux2 = torch.func.grad_and_value(loss, 0, true)(params, inp)
  T.near(L(pg2.w), L(pg.w), 0, "grad_and_value grad")
  T.near(val:item(), o * o, 1e-12, "grad_and_value value")
  T.check(not val.requires_grad and aux2.out ~= nil, "value detached, aux given")
  -- an unused input gets zeros
  T.near(L(torch.func.grad(function(a, b) return a:sum() end, 1)(x, y)), { 0, 0, 0 }, 0, "unused: zeros")
end)

T.test("grad errors", function()
  local x = torch.ones(3)
  T.raises(function() torch.func.grad(function(t) return t * 2 end)(x) end,
    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with 1 dims. Maybe you wanted to use the vjp or jacrev APIs instead?", "non-scalar")
  T.raises(function() torch.func.grad(function(t) return 1 end)(x) end,
    "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got int", "non-tensor")
  T.raises(function() torch.func.grad(function(t) return t:sum() end, 2)(x) end,
    "Got argnums=2, but only 1 positional inputs", "argnums range")
  local gg = torch.func.grad(torch.func.grad(function(t) return (t ^ 3):sum() end))
  T.raises(function() gg(x) end, "~Expected f(*args) to return a scalar Tensor, got tensor with 1 dims", "grad of a vector")
  -- the nesting depth is restored after errors
  T.near(L(torch.func.grad(function(t) return t:sum() end)(x)), { 1, 1, 1 }, 0, "grad works after errors")
end)

T.test("vjp, jacrev and jacfwd against analytic derivatives", function()
  local x = torch.tensor({ 0.3, -0.7, 1.1 }, f64)
  local xs = L(x)
  local out, vjp_fn = torch.func.vjp(function(t) return torch.sin(t) * t end, x)
  local v = torch.tensor({ 1, 2, 3 }, f64)
  local want, d = {}, {}
  for i, a in ipairs(xs) do d[i] = math.cos(a) * a + math.sin(a); want[i] = d[i] * i end
  T.near(L(out), L(torch.sin(x) * x), 1e-12, "vjp output")
  local g = vjp_fn(v)
  T.eq(#g, 1, "vjp_fn returns one gradient per primal")
  T.near(L(g[1]), want, 1e-12, "vjp")
  T.near(L(vjp_fn(v * 2)[1]), { want[1] * 2, want[2] * 2, want[3] * 2 }, 1e-12, "vjp_fn twice")
  for _, name in ipairs({ "jacrev", "jacfwd" }) do
    local J = torch.func[name](function(t) return torch.sin(t) * t end)(x)
    local diag = { { d[1], 0, 0 }, { 0, d[2], 0 }, { 0, 0, d[3] } }
    T.near(L(J), diag, 1e-12, name .. " elementwise")
    -- f(W, u) = W u: dJ/dW[i][j][k] = delta_ik u_j, dJ/du = W
    local W = torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, f64)
    local J2 = torch.func[name](function(A, u) return A:mv(u) end, { 0, 1 })(W, x)
    T.eq(J2[1]:size():totable(), { 2, 2, 3 }, name .. " shape out x in")
    local want2 = {}
    for i = 1, 2 do
      want2[i] = {}
      for k = 1, 2 do
        want2[i][k] = {}
        for j = 1, 3 do want2[i][k][j] = (i == k) and xs[j] or 0 end
      end
    end
    T.near(L(J2[1]), want2, 1e-12, name .. " d/dW")
    T.near(L(J2[2]), L(W), 1e-12, name .. " d/du")
  end
  -- several outputs (a table) and a dict input
  local J3 = torch.func.jacrev(function(p) return { p.a * 2, (p.a * p.a):sum() } end)({ a = x })
  T.near(L(J3[1].a), { { 2, 0, 0 }, { 0, 2, 0 }, { 0, 0, 2 } }, 1e-12, "first output")
  T.near(L(J3[2].a), { 2 * xs[1], 2 * xs[2], 2 * xs[3] }, 1e-12, "second output")
end)

T.test("vmap against an explicit loop", function()
  torch.manual_seed(2)
  local X, Y = torch.randn(4, 3), torch.randn(4, 3)
  local function dot(a, b) return (a * b):sum() end
  local want = {}
  for i = 0, 3 do want[i + 1] = dot(X[i], Y[i]):item() end
  T.near(L(torch.func.vmap(dot)(X, Y)), want, 1e-6, "in_dims 0")
  T.check(torch.vmap == torch.func.vmap, "torch.vmap alias")
  -- unmapped argument
  local y = Y[0]
  for i = 0, 3 do want[i + 1] = dot(X[i], y):item() end
  T.near(L(torch.func.vmap(dot, { 0, nil })(X, y)), want, 1e-6, "in_dims {0, nil}")
  T.near(L(torch.func.vmap(dot, { nil, 0 })(y, X)), want, 1e-6, "in_dims {nil, 0}")
  -- in_dims 1, out_dims 1
  local Xt = X:t():contiguous()
  local got = torch.func.vmap(function(a) return a * 2 end, 1, 1)(Xt)
  T.near(L(got), L(Xt * 2), 1e-6, "in_dims 1, out_dims 1")
  local outer = torch.func.vmap(function(a, b) return torch.outer(a, b) end, { 1, 0 }, 0)(Xt, Y)
  for i = 0, 3 do T.near(L(outer[i]), L(torch.outer(X[i], Y[i])), 1e-6, "outer sample " .. i) end
  -- several outputs, a table output, a dict input with nested in_dims
  local s, m = torch.func.vmap(function(a) return a:sum(), a:max() end)(X)
  local ws, wm = {}, {}
  for i = 0, 3 do ws[i + 1] = X[i]:sum():item(); wm[i + 1] = X[i]:max():item() end
  T.near(L(s), ws, 1e-6, "output 1"); T.near(L(m), wm, 1e-6, "output 2")
  local t = torch.func.vmap(function(p) return { p.x + p.y, p.x:sum() } end, { { x = 0, y = nil } })({ x = X, y = y })
  T.near(L(t[1]), L(X + y), 1e-6, "table output"); T.near(L(t[2]), ws, 1e-6, "table output 2")
  T.near(L(torch.func.vmap(dot, 0, 0, "different", { chunk_size = 2 })(X, Y)), L((X * Y):sum(1)), 1e-6, "chunk_size accepted")
  local r = torch.func.vmap(function(a) return a + torch.randn(3) end, 0, 0, "same")(torch.zeros(2, 3))
  T.near(L(r[0]), L(r[1]), 0, "randomness='same' replays the generator")
  -- nested vmap: a matrix of dots
  local M = torch.func.vmap(torch.func.vmap(dot, { nil, 0 }), { 0, nil })(X, Y)
  T.near(L(M), L(X:matmul(Y:t())), 1e-5, "vmap(vmap)")
end)

T.test("per-sample gradients: vmap(grad(loss)) against per-sample autograd.grad", function()
  torch.manual_seed(3)
  local model = nn.Linear(3, 2)
  local params = {}
  for _, e in ipairs(model:named_parameters()) do params[e[1]] = e[2]:detach() end
  local X, Yt = torch.randn(5, 3), torch.randn(5, 2)
  local function loss(p, x, y)
    local out = torch.func.functional_call(model, p, { x:unsqueeze(0) })
    return ((out - y:unsqueeze(0)) ^ 2):mean()
  end
  local per = torch.func.vmap(torch.func.grad(loss), { nil, 0, 0 })(params, X, Yt)
  T.eq(per.weight:size():totable(), { 5, 2, 3 }, "stacked per sample")
  for i = 0, 4 do
    local out = model(X[i]:unsqueeze(0))
    local l = ((out - Yt[i]:unsqueeze(0)) ^ 2):mean()
    local g = torch.autograd.grad(l, { model.weight, model.bias })
    T.near(L(per.weight[i]), L(g[1]), 1e-5, "weight grad sample " .. i)
    T.near(L(per.bias[i]), L(g[2]), 1e-5, "bias grad sample " .. i)
  end
end)

T.test("vmap errors", function()
  local f = function(a, b) return a + b end
  T.raises(function() torch.func.vmap(f)(torch.ones(3, 2), torch.ones(4, 2)) end,
    "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes [3, 4] for the mapped dimension", "size mismatch")
  T.raises(function() torch.func.vmap(f, { nil, nil })(torch.ones(3), torch.ones(3)) end,
    "~at least one input must be mapped over", "nothing mapped")
  T.raises(function() torch.func.vmap(f, 2)(torch.ones(3, 2), torch.ones(3, 2)) end,
    "vmap(f, in_dims=2, ...)(<inputs>): Got in_dim=2 for some input, but that input is a Tensor of dimensionality 2 so expected in_dim to satisfy -2 <= in_dim < 2.", "in_dim range")
  T.raises(function() torch.func.vmap(f)(torch.ones(3), 1) end,
    "~We cannot vmap over non-Tensor arguments, please use None as the respective in_dim", "non-tensor")
  T.raises(function() torch.func.vmap(f, 0, 0, "sometimes") end,
    "Only allowed values for randomness are 'error', 'different', or 'same'. Got sometimes", "randomness")
  T.raises(function() torch.func.vmap(f, 0, 0, "error", { chunk_size = 0 }) end,
    "vmap: chunk_size should be None or greater than 0. (got 0)", "chunk_size")
end)

T.test("nested transforms: grad(grad(f)), jacrev(grad(f)) as the Hessian, grad of a vjp", function()
  local g2 = torch.func.grad(torch.func.grad(function(t) return t:sin() * t ^ 3 end))
  local x0 = 0.7
  local want = -math.sin(x0) * x0 ^ 3 + 6 * math.cos(x0) * x0 ^ 2 + 6 * math.sin(x0) * x0
  T.near(g2(torch.tensor(x0, f64)):item(), want, 1e-12, "d2/dx2 of sin(x) x^3")
  local x = torch.tensor({ 0.3, -0.7, 1.1 }, f64)
  local H = torch.func.jacrev(torch.func.grad(function(t) return (t ^ 3):sum() + t[0] * t[1] end))(x)
  T.near(H:tolist(), { { 1.8, 1, 0 }, { 1, -4.2, 0 }, { 0, 0, 6.6 } }, 1e-12, "Hessian")
  T.check(not H.requires_grad, "the outermost result is detached")
  local gv = torch.func.grad(function(t)
    local _, vjp_fn = torch.func.vjp(function(u) return u:exp() end, t)
    return vjp_fn(torch.ones(3, f64))[1]:sum()
  end)(x)
  T.near(L(gv), L(x:exp()), 1e-12, "d/dx sum(vjp of exp) = exp")
end)
