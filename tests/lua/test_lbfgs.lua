-- optim.LBFGS against PyTorch's algorithm (fixed step, no line search) written out in plain
-- Lua on number lists: the loss of every closure call, the parameters after each step, and
-- the state counters, across steps (history kept), with a short history, and each stopping
-- rule (tolerance_grad, tolerance_change on the loss and on the step, max_eval, max_iter).
local T = ...
local f64 = { dtype = torch.float64 }

-- f(x) = 0.5 x'Ax - b'x + 0.25 sum x^4 (smooth, convex), its gradient Ax - b + x^3
local A = { { 3.0, 0.5, 0.2 }, { 0.5, 2.0, -0.3 }, { 0.2, -0.3, 1.5 } }
local b = { 1.0, -2.0, 0.5 }
local function f_ref(x)
  local f, g = 0, {}
  for i = 1, 3 do
    local ax = 0
    for j = 1, 3 do ax = ax + A[i][j] * x[j] end
    f = f + 0.5 * x[i] * ax - b[i] * x[i] + 0.25 * x[i] ^ 4
    g[i] = ax - b[i] + x[i] ^ 3
  end
  return f, g
end

local function dot(u, v) local s = 0; for i = 1, #u do s = s + u[i] * v[i] end; return s end
local function axpy(a, u, v) local r = {}; for i = 1, #u do r[i] = v[i] + a * u[i] end; return r end
local function scale(a, u) local r = {}; for i = 1, #u do r[i] = a * u[i] end; return r end
local function maxabs(u) local m = 0; for i = 1, #u do m = math.max(m, math.abs(u[i])) end; return m end

-- PyTorch's L-BFGS step on x (a list), state st kept between calls; o: the options with
-- their defaults filled in; losses: every evaluation appended
local function ref_step(x, st, o, losses)
  local function eval()
    local f, g = f_ref(x)
    losses[#losses + 1] = f
    return f, g
  end
  st.func_evals, st.n_iter = st.func_evals or 0, st.n_iter or 0
  local loss, g = eval()
  local evals = 1
  st.func_evals = st.func_evals + 1
  if maxabs(g) <= o.tolerance_grad then return x end
  local k = 0
  while k < o.max_iter do
    k = k + 1
    st.n_iter = st.n_iter + 1
    if st.n_iter == 1 then
      st.d, st.S, st.Y, st.H = scale(-1, g), {}, {}, 1
    else
      local y, s = axpy(-1, st.prev_g, g), scale(st.t, st.d)
      local ys = dot(y, s)
      if ys > 1e-10 then
        if #st.Y == o.history_size then table.remove(st.Y, 1); table.remove(st.S, 1) end
        st.Y[#st.Y + 1], st.S[#st.S + 1] = y, s
        st.H = ys / dot(y, y)
      end
      local q, al = scale(-1, g), {}
      for i = #st.Y, 1, -1 do
        al[i] = dot(st.S[i], q) / dot(st.Y[i], st.S[i])
        q = axpy(-al[i], st.Y[i], q)
      end
      local r = scale(st.H, q)
      for i = 1, #st.Y do
        r = axpy(al[i] - dot(st.Y[i], r) / dot(st.Y[i], st.S[i]), st.S[i], r)
      end
      st.d = r
    end
    st.prev_g, st.prev_loss = g, loss
    local l1 = 0
    for i = 1, #g do l1 = l1 + math.abs(g[i]) end
    st.t = st.n_iter == 1 and math.min(1, 1 / l1) * o.lr or o.lr
    if dot(g, st.d) > -o.tolerance_change then break end
    x = axpy(st.t, st.d, x)
    local ok = false
    if k ~= o.max_iter then
      loss, g = eval()
      evals = evals + 1
      st.func_evals = st.func_evals + 1
      ok = maxabs(g) <= o.tolerance_grad
    end
    if k == o.max_iter or evals >= o.max_eval or ok then break end
    if maxabs(scale(st.t, st.d)) <= o.tolerance_change then break end
    if math.abs(loss - st.prev_loss) < o.tolerance_change then break end
  end
  return x
end

local DEFAULTS = { lr = 1, max_iter = 20, tolerance_grad = 1e-7, tolerance_change = 1e-9, history_size = 100 }

-- run `steps` steps both ways from x0; check losses, parameters and counters
local function compare(x0, opts, steps, device, tol)
  local o = {}
  for k, v in pairs(DEFAULTS) do o[k] = opts[k] or v end
  o.max_eval = opts.max_eval or o.max_iter * 5 // 4
  local x = torch.tensor(x0, f64):to(device):requires_grad_()
  local At, bt = torch.tensor(A, f64):to(device), torch.tensor(b, f64):to(device)
  local opt = torch.optim.LBFGS({ x }, opts)
  local got = {}
  local function closure()
    opt:zero_grad()
    local l = (x * At:matmul(x)):sum() * 0.5 - (bt * x):sum() + (x ^ 4):sum() * 0.25
    got[#got + 1] = l:item()
    l:backward()
    return l
  end
  local want, st, xr = {}, {}, x0
  for s = 1, steps do
    local ret = opt:step(closure)
    T.near(ret:item(), want[#want + 1] or f_ref(xr), tol, "step returns the first loss")
    xr = ref_step(xr, st, o, want)
    T.near(x:detach():cpu():tolist(), xr, tol, "parameters after step " .. s)
  end
  T.eq(#got, #want, "closure calls")
  T.near(got, want, tol, "loss of every closure call")
  local state = opt.state[x]
  T.eq({ state.func_evals, state.n_iter }, { st.func_evals, st.n_iter }, "func_evals, n_iter")
  return opt, state, got
end

T.test("LBFGS follows PyTorch's algorithm step by step", function()
  -- two steps of 20 iterations: the second starts from the first's history
  local _, state, got = compare({ 0.5, 0.5, -0.5 }, { lr = 0.1 }, 2, "cpu", 1e-12)
  T.eq(#got, 40, "20 evaluations a step (the last iteration does not evaluate)")
  T.eq(#state.old_dirs, 39, "history grows by one per iteration")
  compare({ 0.5, 0.5, -0.5 }, { lr = 0.8 }, 2, "cpu", 1e-12) -- converges within the first step
  -- history_size 2: only the two newest pairs are kept
  local _, st2 = compare({ 1.5, -1.0, 2.0 }, { lr = 0.5, history_size = 2, max_iter = 7 }, 4, "cpu", 1e-12)
  T.eq(#st2.old_dirs, 2, "history_size bounds the pairs kept")
  T.eq(#st2.ro, 2, "one ro per pair")
end)

T.test("LBFGS stopping rules", function()
  -- tolerance_grad: at the minimum a step evaluates once and changes nothing
  local _, st = compare({ 0.5, 0.5, -0.5 }, { tolerance_grad = 1e3 }, 1, "cpu", 1e-12)
  T.eq({ st.func_evals, st.n_iter }, { 1, 0 }, "tolerance_grad returns at once")
  -- tolerance_change on the loss: a large one stops after the first move
  local _, _, got = compare({ 0.5, 0.5, -0.5 }, { tolerance_change = 10 }, 2, "cpu", 1e-12)
  T.check(#got < 10, "tolerance_change stops early: " .. #got .. " calls")
  -- max_eval below max_iter
  local _, _, got2 = compare({ 0.5, 0.5, -0.5 }, { max_eval = 4 }, 2, "cpu", 1e-12)
  T.eq(#got2, 8, "max_eval 4 evaluations a step")
  -- max_iter 1: the step moves once and evaluates nothing more
  local _, _, got3 = compare({ 0.5, 0.5, -0.5 }, { max_iter = 1 }, 3, "cpu", 1e-12)
  T.eq(#got3, 3, "max_iter 1: one evaluation a step")
end)

T.test("LBFGS: 0-d tensor scalars in the parameters' dtype; a parameter without gradient", function()
  local x = torch.tensor({ 1.0, -2.0 }, { dtype = torch.float32, requires_grad = true })
  local unused = torch.zeros(3, { requires_grad = true })
  local opt = torch.optim.LBFGS({ x, unused }, { max_iter = 3 })
  opt:step(function()
    opt:zero_grad()
    local l = (x ^ 2):sum()
    l:backward()
    return l
  end)
  local st = opt.state[x]
  T.check(torch.is_tensor(st.ro[1]) and st.ro[1].dtype == torch.float32, "ro is a float32 0-d tensor")
  T.check(torch.is_tensor(st.H_diag) and st.H_diag.dtype == torch.float32, "H_diag is a float32 0-d tensor")
  T.eq(st.d:numel(), 5, "the direction spans both parameters")
  T.eq(unused:tolist(), { 0.0, 0.0, 0.0 }, "a parameter without gradient does not move")
  T.raises(function() torch.optim.LBFGS({ x }, { lr = -1 }) end, "Invalid learning rate: -1")
  T.raises(function() torch.optim.LBFGS({ x }, { max_iters = 3 }) end, "~max_iters")
end)

if torch.cuda.is_available() then
  T.test("LBFGS on CUDA", function()
    compare({ 0.5, 0.5, -0.5 }, { lr = 0.8 }, 2, "cuda", 1e-9)
    compare({ 1.5, -1.0, 2.0 }, { lr = 0.5, history_size = 2, max_iter = 7 }, 4, "cuda", 1e-9)
  end)
else
  T.skip("no CUDA", 1)
end
