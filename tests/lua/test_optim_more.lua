-- Adadelta, Adamax, NAdam, RAdam against their update rules written out per element in plain
-- Lua (PyTorch's algorithm boxes), over several steps of a quadratic's gradients.
local T = ...
local f64 = { dtype = torch.float64 }

-- per-element references: state s (a table), gradient gr, param w, step t; returns the new w
local ref = {}
function ref.Adadelta(w, gr, s, t, h)
  gr = gr + h.weight_decay * w
  s.sq = (s.sq or 0) * h.rho + (1 - h.rho) * gr * gr
  local delta = math.sqrt((s.acc or 0) + h.eps) / math.sqrt(s.sq + h.eps) * gr
  s.acc = (s.acc or 0) * h.rho + (1 - h.rho) * delta * delta
  return w - h.lr * delta
end
function ref.Adamax(w, gr, s, t, h)
  gr = gr + h.weight_decay * w
  s.m = (s.m or 0) * h.b1 + (1 - h.b1) * gr
  s.u = math.max((s.u or 0) * h.b2, math.abs(gr) + h.eps)
  return w - h.lr / (1 - h.b1 ^ t) * s.m / s.u
end
function ref.NAdam(w, gr, s, t, h)
  gr = gr + h.weight_decay * w
  local mu = h.b1 * (1 - 0.5 * 0.96 ^ (t * 0.004))
  local mu1 = h.b1 * (1 - 0.5 * 0.96 ^ ((t + 1) * 0.004))
  s.prod = (s.prod or 1) * mu
  s.m = (s.m or 0) * h.b1 + (1 - h.b1) * gr
  s.v = (s.v or 0) * h.b2 + (1 - h.b2) * gr * gr
  local denom = math.sqrt(s.v / (1 - h.b2 ^ t)) + h.eps
  return w - h.lr * (1 - mu) / (1 - s.prod) * gr / denom - h.lr * mu1 / (1 - s.prod * mu1) * s.m / denom
end
function ref.RAdam(w, gr, s, t, h)
  gr = gr + h.weight_decay * w
  s.m = (s.m or 0) * h.b1 + (1 - h.b1) * gr
  s.v = (s.v or 0) * h.b2 + (1 - h.b2) * gr * gr
  local mhat = s.m / (1 - h.b1 ^ t)
  local rinf = 2 / (1 - h.b2) - 1
  local rt = rinf - 2 * t * h.b2 ^ t / (1 - h.b2 ^ t)
  if rt > 5 then
    local l = math.sqrt(1 - h.b2 ^ t) / (math.sqrt(s.v) + h.eps)
    local r = math.sqrt((rt - 4) * (rt - 2) * rinf / ((rinf - 4) * (rinf - 2) * rt))
    return w - h.lr * mhat * r * l
  end
  return w - h.lr * mhat
end

T.test("updates against the written-out rules", function()
  local h = { lr = 0.05, rho = 0.8, eps = 1e-6, weight_decay = 0.01, b1 = 0.85, b2 = 0.95 }
  for name, f in pairs(ref) do
    local init = { 0.5, -1.5, 2.0 }
    local w = torch.tensor(init, f64):requires_grad_()
    local opts = { lr = h.lr, eps = h.eps, weight_decay = h.weight_decay }
    if name == "Adadelta" then opts.rho = h.rho else opts.betas = { h.b1, h.b2 } end
    local opt = torch.optim[name]({ w }, opts)
    local ws, states = { table.unpack(init) }, { {}, {}, {} }
    for t = 1, 8 do
      opt:zero_grad()
      local loss = ((w - 1) ^ 3):sum() -- gradient 3 (w - 1)^2
      loss:backward()
      opt:step()
      for i = 1, 3 do ws[i] = f(ws[i], 3 * (ws[i] - 1) ^ 2, states[i], t, h) end
    end
    T.near(w:detach():tolist(), ws, 1e-12, name .. ", 8 steps")
  end
end)

T.test("maximize, state_dict round trip, errors", function()
  local w = torch.tensor({ 1.0 }, f64):requires_grad_()
  local opt = torch.optim.Adamax({ w }, { lr = 0.1, maximize = true })
  opt:zero_grad(); (w * 2):sum():backward(); opt:step()
  T.check(w:item() > 1, "maximize climbs")
  local a = torch.tensor({ 0.3, 0.7 }, f64):requires_grad_()
  local o1 = torch.optim.NAdam({ a }, { lr = 0.1 })
  for _ = 1, 3 do o1:zero_grad(); (a * a):sum():backward(); o1:step() end
  local b = a:detach():clone():requires_grad_()
  local o2 = torch.optim.NAdam({ b }, { lr = 0.1 })
  o2:load_state_dict(o1:state_dict())
  for _ = 1, 2 do
    o1:zero_grad(); (a * a):sum():backward(); o1:step()
    o2:zero_grad(); (b * b):sum():backward(); o2:step()
  end
  T.near(b:detach():tolist(), a:detach():tolist(), 0, "a loaded state continues the same")
  T.raises(function() torch.optim.RAdam({ a }, { lr = -1 }) end, "Invalid learning rate: -1")
  T.raises(function() torch.optim.Adamax({ a }, { betas = { 1.0, 0.9 } }) end, "~Invalid beta parameter at index 0")
  local scaler = torch.amp.GradScaler("cpu", { init_scale = 4.0 })
  local c = torch.tensor({ 2.0 }):requires_grad_()
  local o3 = torch.optim.RAdam({ c }, { lr = 0.1 })
  scaler:scale((c * c):sum()):backward()
  scaler:step(o3)
  scaler:update()
  T.check(c:item() < 2.0, "GradScaler steps it")
end)

T.test("LBFGS finds a quadratic's minimum and Rosenbrock's", function()
  local A = { { 4.0, 1.0, 0.5, 0.0 }, { 1.0, 3.0, 0.2, 0.1 }, { 0.5, 0.2, 5.0, 1.0 }, { 0.0, 0.1, 1.0, 2.0 } }
  local b = { 1.0, -2.0, 0.5, 3.0 }
  -- the solution of A x = b by Gaussian elimination
  local n, M = 4, {}
  for i = 1, n do M[i] = { table.unpack(A[i]) }; M[i][n + 1] = b[i] end
  for c = 1, n do
    for r = c + 1, n do
      local f = M[r][c] / M[c][c]
      for k = c, n + 1 do M[r][k] = M[r][k] - f * M[c][k] end
    end
  end
  local sol = {}
  for i = n, 1, -1 do
    local s = M[i][n + 1]
    for k = i + 1, n do s = s - M[i][k] * sol[k] end
    sol[i] = s / M[i][i]
  end
  local At, bt = torch.tensor(A, f64), torch.tensor(b, f64)
  local x = torch.zeros(4, f64):requires_grad_()
  local opt = torch.optim.LBFGS({ x }, { lr = 1, max_iter = 100, tolerance_grad = 1e-12, tolerance_change = 1e-15 })
  local function closure()
    opt:zero_grad()
    local l = (x * At:matmul(x)):sum() * 0.5 - (bt * x):sum()
    l:backward()
    return l
  end
  opt:step(closure)
  T.near(x:detach():tolist(), sol, 1e-9, "the quadratic's minimum")
  local xy = torch.tensor({ -1.2, 1.0 }, f64):requires_grad_()
  local o2 = torch.optim.LBFGS({ xy }, { max_iter = 200 })
  local function rosen()
    o2:zero_grad()
    local l = (1 - xy[0]) ^ 2 + 100 * (xy[1] - xy[0] ^ 2) ^ 2
    l:backward()
    return l
  end
  for _ = 1, 3 do o2:step(rosen) end
  T.near(xy:detach():tolist(), { 1.0, 1.0 }, 1e-5, "Rosenbrock's minimum")
  T.raises(function() o2:step() end, "~LBFGS requires a closure")
  T.raises(function() torch.optim.LBFGS({ xy }, { line_search_fn = "strong_wolfe" }) end, "~is not supported")
end)

T.test("Rprop and ASGD against their written-out rules", function()
  local function sign(v) return v > 0 and 1 or (v < 0 and -1 or 0) end
  local init = { 0.5, -1.5, 2.0, 0.1 }
  local function run(make, n)
    local w = torch.tensor(init, f64):requires_grad_()
    local opt = make(w)
    for _ = 1, n do
      opt:zero_grad();
      (w * 3):sin():sum():backward() -- gradient 3 cos(3w): its sign flips along the way
      opt:step()
    end
    return w, opt
  end
  -- Rprop: per-element steps grow by etaplus while the gradient keeps its sign, shrink on a flip
  local w = run(function(p) return torch.optim.Rprop({ p }, { lr = 0.3, etas = { 0.4, 1.5 }, step_sizes = { 0.01, 0.5 } }) end, 10)
  local want, flips = {}, 0
  for i, x in ipairs(init) do
    local prev, size = 0, 0.3
    for _ = 1, 10 do
      local g = 3 * math.cos(3 * x)
      local s = sign(g * prev)
      if s > 0 then size = math.min(size * 1.5, 0.5) elseif s < 0 then size = math.max(size * 0.4, 0.01) end
      if s < 0 then g = 0; flips = flips + 1 end
      x = x - sign(g) * size
      prev = g
    end
    want[i] = x
  end
  T.check(flips > 0, "the reference saw sign flips")
  T.near(w:detach():tolist(), want, 1e-12, "Rprop, 10 steps")
  -- ASGD: decaying eta, and the averaged iterate ax once the step passes t0
  local h = { lr = 0.05, lambd = 0.01, alpha = 0.75, t0 = 3, weight_decay = 0.02 }
  local opt
  w, opt = run(function(p) return torch.optim.ASGD({ p }, h) end, 8)
  local wx, ax = {}, {}
  for i, x in ipairs(init) do
    local eta, mu, a = h.lr, 1, 0
    for t = 1, 8 do
      local g = 3 * math.cos(3 * x) + h.weight_decay * x
      x = x * (1 - h.lambd * eta) - eta * g
      if mu ~= 1 then a = a + (x - a) * mu else a = x end
      eta = h.lr / (1 + h.lambd * h.lr * t) ^ h.alpha
      mu = 1 / math.max(1, t - h.t0)
    end
    wx[i], ax[i] = x, a
  end
  T.near(w:detach():tolist(), wx, 1e-12, "ASGD, 8 steps")
  T.near(opt.state[w].ax:tolist(), ax, 1e-12, "ASGD's averaged iterate")
  T.raises(function() torch.optim.Rprop({ w }, { etas = { 1.1, 1.2 } }) end, "Invalid eta values: 1.1, 1.2")
  T.raises(function() torch.optim.ASGD({ w }, { lr = -0.1 }) end, "Invalid learning rate: -0.1")
end)
