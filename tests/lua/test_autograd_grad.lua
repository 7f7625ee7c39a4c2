-- torch.autograd.grad, torch.autograd.backward and x:backward({inputs=}): gradients of
-- chosen tensors only, against float64 central differences worked out here.
local T = ...
local f64 = { dtype = torch.float64 }

-- d sum(f(args) * v) / d args[which], element by element, by central differences
local function numeric(f, args, which, v)
  local x = args[which]:detach():clone()
  local flat = x:view(-1)
  local out = torch.zeros(flat:numel(), f64)
  local function at(delta, i)
    local saved = flat[i]:item()
    flat[i] = saved + delta
    local copy = {}
    for k, a in ipairs(args) do copy[k] = k == which and x or a:detach() end
    local y = f(table.unpack(copy))
    flat[i] = saved
    return (v and (y * v):sum() or y:sum()):item()
  end
  local eps = 1e-6
  for i = 0, flat:numel() - 1 do out[i] = (at(eps, i) - at(-eps, i)) / (2 * eps) end
  return out:view(x:size())
end

local function f(x, W, b) return torch.tanh(x:matmul(W) + b) end

T.test("grad against central differences, and no .grad touched", function()
  torch.manual_seed(3)
  local x = torch.randn(3, 4, f64):requires_grad_()
  local W = torch.randn(4, 2, f64):requires_grad_()
  local b = torch.randn(2, f64):requires_grad_()
  local y = f(x, W, b):sum()
  local g = torch.autograd.grad(y, { x, W })
  T.eq(#g, 2, "one gradient per input")
  T.near(g[1]:tolist(), numeric(f, { x, W, b }, 1):tolist(), 1e-7, "d/dx")
  T.near(g[2]:tolist(), numeric(f, { x, W, b }, 2):tolist(), 1e-7, "d/dW")
  T.check(x.grad == nil and W.grad == nil and b.grad == nil, "no .grad, not even b's")
end)

T.test("grad_outputs, several outputs, a non-leaf input", function()
  torch.manual_seed(4)
  local x = torch.randn(2, 3, f64):requires_grad_()
  local W = torch.randn(3, 3, f64)
  local b = torch.randn(3, f64)
  local v = torch.randn(2, 3, f64)
  local out = f(x, W, b)
  local g = torch.autograd.grad(out, x, v, { retain_graph = true })[1]
  T.near(g:tolist(), numeric(f, { x, W, b }, 1, v):tolist(), 1e-7, "v^T J")
  local g2 = torch.autograd.grad({ out, out * 2 }, { x }, { v, v })[1]
  T.near(g2:tolist(), (numeric(f, { x, W, b }, 1, v) * 3):tolist(), 1e-7, "two outputs sum")
  local h = x * 2
  local z = torch.tanh(h):sum()
  local gh = torch.autograd.grad(z, h)[1]
  local th = torch.tanh(h:detach())
  T.near(gh:tolist(), (1 - th * th):tolist(), 1e-12, "a non-leaf's gradient")
end)

T.test("unused inputs, and what must require grad", function()
  local x = torch.ones(3):requires_grad_()
  local other = torch.ones(2):requires_grad_()
  local function y() return (x * 2):sum() end
  T.raises(function() torch.autograd.grad(y(), { x, other }) end,
    "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.")
  local r = torch.autograd.grad(y(), { x, other }, { allow_unused = true })
  T.eq(r[1]:tolist(), { 2.0, 2.0, 2.0 }, "the used one")
  T.check(r[2] == nil, "nil for the unused one")
  r = torch.autograd.grad(y(), { x, other }, { materialize_grads = true })
  T.eq(r[2]:tolist(), { 0.0, 0.0 }, "zeros with materialize_grads")
  T.raises(function() torch.autograd.grad(y(), torch.ones(3)) end, "One of the differentiated Tensors does not require grad")
  T.raises(function() torch.autograd.grad(torch.ones(1):sum(), x) end,
    "element 0 of tensors does not require grad and does not have a grad_fn")
  T.raises(function() torch.autograd.grad(y(), x, { bogus = 1 }) end, "~bogus")
end)

T.test("the graph is freed unless retain_graph", function()
  local x = torch.tensor({ 0.5, 1.5 }, f64):requires_grad_()
  local y = (x:exp()):sum()
  local a = torch.autograd.grad(y, x, { retain_graph = true })[1]
  local b = torch.autograd.grad(y, x)[1]
  T.near(a:tolist(), x:detach():exp():tolist(), 1e-12, "first")
  T.near(b:tolist(), a:tolist(), 0, "second, same")
  T.raises(function() torch.autograd.grad(y, x) end, "~Trying to backward through the graph a second time")
end)

T.test("hooks: tensor hooks apply, post-accumulate hooks do not run", function()
  local x = torch.ones(2):requires_grad_()
  x:register_hook(function(g) return g * 10 end)
  local ran = false
  x:register_post_accumulate_grad_hook(function() ran = true end)
  local g = torch.autograd.grad((x * 3):sum(), x)[1]
  T.eq(g:tolist(), { 30.0, 30.0 }, "the hook's result")
  T.check(not ran and x.grad == nil, "nothing accumulated")
end)

T.test("backward with inputs fills only those .grad", function()
  torch.manual_seed(5)
  local x = torch.randn(2, 4, f64):requires_grad_()
  local W = torch.randn(4, 3, f64):requires_grad_()
  local b = torch.randn(3, f64):requires_grad_()
  local h = x:matmul(W)
  local loss = torch.tanh(h + b):sum()
  loss:backward({ inputs = { W, h } })
  T.check(x.grad == nil and b.grad == nil, "x and b untouched")
  T.near(W.grad:tolist(), numeric(f, { x, W, b }, 2):tolist(), 1e-7, "W.grad")
  local th = torch.tanh(h:detach() + b:detach())
  T.near(h.grad:tolist(), (1 - th * th):tolist(), 1e-12, "a non-leaf input's .grad")
  T.raises(function() f(x, W, b):sum():backward({ inputs = {} }) end, "~'inputs' argument to backward() cannot be empty.")
end)

T.test("torch.autograd.backward over several roots", function()
  local x = torch.tensor({ 1.0, 2.0 }):requires_grad_()
  local w = torch.tensor({ 3.0, -1.0 }):requires_grad_()
  torch.autograd.backward({ (x * w):sum(), x * x }, { nil, torch.tensor({ 1.0, 10.0 }) })
  T.eq(x.grad:tolist(), { 3.0 + 2.0, -1.0 + 40.0 }, "x.grad: w + 2x * (1, 10)")
  T.eq(w.grad:tolist(), { 1.0, 2.0 }, "w.grad")
  torch.autograd.backward((x * x):sum(), { inputs = w })
  T.eq(x.grad:tolist(), { 5.0, 39.0 }, "x left alone by inputs=")
  T.raises(function() torch.autograd.backward({ x * x }) end, "grad can be implicitly created only for scalar outputs")
end)
