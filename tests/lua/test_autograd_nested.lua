-- Backward passes started while another runs (torch.autograd.grad or backward() from a custom
-- Function's backward, from a tensor or node hook, in a checkpoint's recomputation): each pass
-- keeps its own state, as PyTorch's GraphTasks do. Every value is checked against float64
-- central differences of the function written here with math.*, or a closed form.
local T = ...
local f64 = { dtype = torch.float64 }

-- d f(xs) / d xs[i] by central differences (f takes and the result is a plain list of numbers)
local function fd(f, xs)
  local eps, out = 1e-6, {}
  for i = 1, #xs do
    local a, b = table.move(xs, 1, #xs, 1, {}), table.move(xs, 1, #xs, 1, {})
    a[i], b[i] = xs[i] + eps, xs[i] - eps
    out[i] = (f(a) - f(b)) / (2 * eps)
  end
  return out
end

local function map(xs, fn)
  local out = {}
  for i, v in ipairs(xs) do out[i] = fn(v, i) end
  return out
end

local function sum(xs, fn)
  local s = 0
  for i, v in ipairs(xs) do s = s + fn(v, i) end
  return s
end

-- Cube(h) = h^3, its backward the gradient of h*h*h taken by a nested torch.autograd.grad on h,
-- a non-leaf of the outer graph (recording a graph when the outer pass does)
local Cube = torch.autograd.Function:extend("Cube")
function Cube.forward(ctx, h)
  ctx.h = h
  return h * h * h
end
function Cube.backward(ctx, g)
  local create = torch.is_grad_enabled()
  local _ <close> = torch.enable_grad()
  local y = ctx.h * ctx.h * ctx.h
  ctx.calls = (ctx.calls or 0) + 1
  return torch.autograd.grad(y, ctx.h, { grad_outputs = g, create_graph = create })[1]
end

local xs, ws = { -0.7, 0.3, 1.1 }, { 0.5, -2.0, 1.5 }

T.test("a custom Function's backward takes autograd.grad on a non-leaf of the outer graph", function()
  for _, retain in ipairs({ true, false }) do
    local x = torch.tensor(xs, f64):requires_grad_()
    local w = torch.tensor(ws, f64)
    local h = x:sin() -- the non-leaf: SinBackward0 also gets the gradient of the second term
    local loss = (Cube.apply(h) * w):sum() + (h * h):sum()
    loss:backward({ retain_graph = retain })
    local want = fd(function(v) return sum(v, function(a, i) return ws[i] * math.sin(a) ^ 3 + math.sin(a) ^ 2 end) end, xs)
    T.near(x.grad:tolist(), want, 1e-7, "x.grad, outer retain_graph=" .. tostring(retain))
  end
end)

T.test("the nested pass reaches the outer pass's running node through a tensor hook", function()
  local x = torch.tensor(xs, f64):requires_grad_()
  local w = torch.tensor(ws, f64)
  local h = x * x
  local seen, inner = {}, nil
  h:register_hook(function(g)
    seen[#seen + 1] = g:tolist()
    if #seen > 1 then return end -- the nested pass computes h's gradient too: this hook runs in it
    -- h's node is the one running in the outer pass: the nested pass runs it too
    local _ <close> = torch.enable_grad() -- (hooks run with grad mode as backward sets it: off)
    inner = torch.autograd.grad(h:exp():sum(), x, { retain_graph = true })[1]:tolist()
  end)
  ;(h * w):sum():backward()
  T.eq(#seen, 2, "the hook ran in both passes")
  T.near(seen[1], ws, 0, "the outer pass's gradient of h: w")
  T.near(seen[2], map(xs, function(a) return math.exp(a * a) end), 1e-12, "the nested pass's: exp(x^2)")
  T.near(inner, map(xs, function(a) return 2 * a * math.exp(a * a) end), 1e-12, "nested: 2x exp(x^2)")
  T.near(x.grad:tolist(), fd(function(v) return sum(v, function(a, i) return ws[i] * a * a end) end, xs), 1e-7,
    "x.grad is the outer pass's alone")
end)

T.test("node pre and post hooks start nested passes", function()
  local x = torch.tensor(xs, f64):requires_grad_()
  local h = x:exp()
  local m = h * h
  local pre, post, pre_ran, post_ran
  m.grad_fn:register_prehook(function(gout)
    if pre_ran then return end -- (the post hook's pass runs m's node, and this hook, again)
    pre_ran = true
    local _ <close> = torch.enable_grad()
    pre = torch.autograd.grad((h * h * h):sum(), h)[1]:tolist()
  end)
  h.grad_fn:register_hook(function(gin, gout)
    if post_ran then return end -- (its own pass runs h's node again)
    post_ran = true
    local _ <close> = torch.enable_grad()
    post = torch.autograd.grad((m * x):sum(), x, { retain_graph = true })[1]:tolist()
  end)
  ;(m + h):sum():backward({ retain_graph = true }) -- the post hook's pass runs m's node again
  T.near(pre, map(xs, function(a) return 3 * math.exp(2 * a) end), 1e-12, "pre hook: 3 h^2")
  T.near(post, map(xs, function(a) return (2 * a + 1) * math.exp(2 * a) end), 1e-12, "post hook: (2x + 1) e^2x")
  T.near(x.grad:tolist(), fd(function(v) return sum(v, function(a) return math.exp(2 * a) + math.exp(a) end) end, xs), 1e-7, "x.grad")
end)

T.test("nested backward() into leaves: the leaf's hooks run once per pass, on that pass's gradient", function()
  local x = torch.tensor(xs, f64):requires_grad_()
  local seen, hooked = {}, {}
  x:register_post_accumulate_grad_hook(function(p) seen[#seen + 1] = p.grad:tolist() end)
  x:register_hook(function(g) hooked[#hooked + 1] = g:tolist() end)
  local Inner = torch.autograd.Function:extend("Inner")
  function Inner.forward(_, a) return a:clone() end
  function Inner.backward(_, g)
    local _ <close> = torch.enable_grad()
    torch.autograd.backward((x * x * x):sum()) -- three new AccumulateGrad nodes of x
    return g
  end
  local w = torch.tensor(ws, f64)
  ;(Inner.apply(x * x) * w):sum():backward() -- x * x: two AccumulateGrad nodes of x in the outer pass
  local nested = map(xs, function(a) return 3 * a * a end)
  local outer = map(xs, function(a, i) return 2 * a * ws[i] end)
  T.eq(#seen, 2, "the post-accumulate hook ran once in each pass")
  T.near(seen[1], nested, 1e-12, "first, the nested pass's .grad: 3x^2")
  T.near(seen[2], map(nested, function(v, i) return v + outer[i] end), 1e-12, "then 3x^2 + 2wx")
  T.eq(#hooked, 2, "the tensor hook ran once in each pass")
  T.near(hooked[1], nested, 1e-12, "on the nested pass's whole gradient")
  T.near(hooked[2], outer, 1e-12, "on the outer pass's whole gradient")
end)

T.test("a checkpoint's recomputation: a parameter used inside and outside gets both gradients", function()
  local p = torch.tensor({ 0.8 }, f64):requires_grad_()
  local x = torch.tensor(xs, f64)
  local got = {}
  p:register_hook(function(g) got[#got + 1] = g:item() end)
  local out = torch.utils.checkpoint.checkpoint(function(a) return (a * p):sin() end, x * p, { use_reentrant = true })
  out:sum():backward()
  local pv = 0.8
  local inner = sum(xs, function(a) return a * pv * math.cos(a * pv * pv) end) -- d/dp sin(a p), a = x p held
  local outer = sum(xs, function(a) return pv * math.cos(a * pv * pv) * a end) -- through a = x p
  T.eq(#got, 2, "p's hook ran in both passes")
  T.near(got, { inner, outer }, 1e-12, "each pass's gradient")
  T.near(p.grad:item(), fd(function(v) return sum(xs, function(a) return math.sin(a * v[1] * v[1]) end) end, { pv })[1], 1e-7,
    "p.grad against central differences")
end)

-- Outer(u) = sin(u)^3, its backward a nested autograd.grad through Cube, whose backward nests one more
local SinCube = torch.autograd.Function:extend("SinCube")
function SinCube.forward(ctx, u)
  ctx.u = u
  return u:sin() ^ 3
end
function SinCube.backward(ctx, g)
  local _ <close> = torch.enable_grad()
  return torch.autograd.grad(Cube.apply(ctx.u:sin()), ctx.u, { grad_outputs = g })[1]
end

T.test("double nesting: three passes over one graph", function()
  local x = torch.tensor(xs, f64):requires_grad_()
  local w = torch.tensor(ws, f64)
  local u = x * 2
  ;((SinCube.apply(u) * w):sum() + (u * u):sum()):backward()
  local want = fd(function(v) return sum(v, function(a, i) return ws[i] * math.sin(2 * a) ^ 3 + 4 * a * a end) end, xs)
  T.near(x.grad:tolist(), want, 1e-7, "x.grad")
end)

T.test("create_graph through a nested pass: second derivatives", function()
  local x = torch.tensor(xs, f64):requires_grad_()
  local loss = Cube.apply(x:sin()):sum()
  local gx = torch.autograd.grad(loss, x, { create_graph = true })[1]
  T.near(gx:tolist(), map(xs, function(a) return 3 * math.sin(a) ^ 2 * math.cos(a) end), 1e-12, "first: 3 sin^2 cos")
  T.check(gx.requires_grad, "the gradient has a history")
  local ggx = torch.autograd.grad(gx:sum(), x)[1]
  T.near(ggx:tolist(), fd(function(v) return sum(v, function(a) return 3 * math.sin(a) ^ 2 * math.cos(a) end) end, xs), 1e-7,
    "second, against central differences of the first")
end)

local function errmsg(err) return (tostring(err):gsub("^[^:\n]*:%d+: ", "")) end

T.test("an error in a nested pass leaves the outer pass's state as it was", function()
  local Boom = torch.autograd.Function:extend("Boom")
  function Boom.forward(_, a) return a:clone() end
  function Boom.backward() error("boom", 0) end
  local Mid = torch.autograd.Function:extend("Mid")
  function Mid.forward(ctx, h, x)
    ctx.h, ctx.x = h, x
    return h * 2
  end
  local msgs = {}
  function Mid.backward(ctx, g)
    local _ <close> = torch.enable_grad()
    -- both reach h's node, which holds the outer pass's gradient from h * a already; they fail
    -- in Boom before it runs
    local ok, err = pcall(torch.autograd.grad, (Boom.apply(ctx.h) * ctx.h):sum(), ctx.h)
    msgs[1] = not ok and errmsg(err)
    ok, err = pcall(torch.autograd.grad, (Boom.apply(ctx.h) * ctx.h):sum(), ctx.x)
    msgs[2] = not ok and errmsg(err)
    return g * 2, nil
  end
  local x = torch.tensor(xs, f64):requires_grad_()
  local a = torch.tensor(ws, f64)
  local h = x:exp()
  local m = Mid.apply(h, x)
  local p = h * a -- made after Mid: its path runs first and leaves h's node half fed
  ;(m:sum() + p:sum()):backward()
  T.eq(msgs, { "boom", "boom" }, "the nested passes' errors")
  T.near(x.grad:tolist(), fd(function(v) return sum(v, function(e, i) return 2 * math.exp(e) + ws[i] * math.exp(e) end) end, xs), 1e-7,
    "x.grad after the failed nested passes")
end)

T.test("retain_graph=false in the nested pass", function()
  -- through the outer graph's nodes: their saved tensors are freed, and the outer pass then fails as PyTorch's
  local inner
  local Through = torch.autograd.Function:extend("Through")
  function Through.forward(ctx, h, x)
    ctx.h, ctx.x = h, x
    return h:clone()
  end
  function Through.backward(ctx, g)
    local _ <close> = torch.enable_grad()
    inner = torch.autograd.grad((ctx.h * ctx.h):sum(), ctx.x)[1]:tolist()
    return g, nil
  end
  local x = torch.tensor(xs, f64):requires_grad_()
  local y = Through.apply(x:sin(), x)
  T.raises(function() y:sum():backward() end, "~Trying to backward through the graph a second time", "the outer pass")
  T.near(inner, map(xs, function(a) return 2 * math.sin(a) * math.cos(a) end), 1e-12, "the nested pass's gradient")
  -- stopping at the outer graph's non-leaf: no node of the outer graph runs, nothing is freed
  local x2 = torch.tensor(xs, f64):requires_grad_()
  local w = torch.tensor(ws, f64)
  ;(Cube.apply(x2:sin()) * w):sum():backward()
  T.near(x2.grad:tolist(), fd(function(v) return sum(v, function(a, i) return ws[i] * math.sin(a) ^ 3 end) end, xs), 1e-7, "x.grad")
end)

T.test("autograd.grad to a non-leaf does not free the saved tensors of its node, which does not run", function()
  local x = torch.tensor(xs, f64):requires_grad_()
  local y = x:exp() -- ExpBackward0 keeps its result
  local g = torch.autograd.grad((y * y):sum(), y)[1]
  T.near(g:tolist(), map(xs, function(a) return 2 * math.exp(a) end), 1e-12, "d sum(y^2) / dy")
  y:sum():backward()
  T.near(x.grad:tolist(), fd(function(v) return sum(v, math.exp) end, xs), 1e-7, "then backward through y's node")
end)
