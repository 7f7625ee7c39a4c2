-- torch.autograd.Function: custom ops with a Lua forward and backward, against float64
-- central differences and values worked out here.
local T = ...
local f64 = { dtype = torch.float64 }

local Exp = torch.autograd.Function:extend("Exp")
function Exp.forward(ctx, x)
  local y = x:exp()
  ctx:save_for_backward(y)
  return y
end
function Exp.backward(ctx, grad)
  local y = table.unpack(ctx.saved_tensors)
  return grad * y
end

T.test("a custom exp: values, grad_fn and gradient against central differences", function()
  local xs = { -1.0, 0.25, 2.0 }
  local x = torch.tensor(xs, f64):requires_grad_()
  local y = Exp.apply(x)
  T.near(y:tolist(), x:detach():exp():tolist(), 0, "forward")
  T.eq(y.grad_fn:name(), "ExpBackward", "grad_fn")
  local w = torch.tensor({ 0.5, -2.0, 1.5 }, f64)
  ;(y * w):sum():backward()
  local eps, want = 1e-6, {}
  for i, v in ipairs(xs) do want[i] = (math.exp(v + eps) - math.exp(v - eps)) / (2 * eps) * w[i - 1]:item() end
  T.near(x.grad:tolist(), want, 1e-7, "x.grad")
  local no = Exp.apply(torch.ones(2))
  T.check(no.grad_fn == nil and not no.requires_grad, "no graph when nothing needs a gradient")
end)

local Affine = torch.autograd.Function:extend("Affine")
function Affine.forward(ctx, x, w, k)
  ctx:save_for_backward(x, w)
  ctx.k = k
  return x * w * k, x + 1
end
function Affine.backward(ctx, gy, gz)
  local x, w = table.unpack(ctx.saved_tensors)
  ctx.seen = { gy:tolist(), gz:tolist(), ctx.needs_input_grad }
  return gy * w * ctx.k + gz, gy * x * ctx.k, nil
end

T.test("several arguments and results; zeros for a result no gradient reached", function()
  local x = torch.tensor({ 1.0, 2.0 }):requires_grad_()
  local w = torch.tensor({ 3.0, -1.0 })
  local ctx_of
  local y, z = Affine.apply(x, w, 2)
  T.eq(y:tolist(), { 6.0, -4.0 }, "first result")
  T.eq(z:tolist(), { 2.0, 3.0 }, "second result")
  y:sum():backward()
  T.eq(x.grad:tolist(), { 6.0, -2.0 }, "x.grad = w * k")
  T.check(w.grad == nil, "w needs none")
  local x2 = torch.tensor({ 1.0, 1.0 }):requires_grad_()
  local y2, z2 = Affine.apply(x2, w, 2)
  ;(y2 + z2 * 10):sum():backward()
  T.eq(x2.grad:tolist(), { 16.0, 8.0 }, "both results: w * k + 10")
  local g = torch.autograd.grad(Affine.apply(x2, w, 1):sum(), x2)[1]
  T.eq(g:tolist(), { 3.0, -1.0 }, "through torch.autograd.grad")
end)

T.test("needs_input_grad, an argument returned as it is, non-differentiable results", function()
  local F1 = torch.autograd.Function:extend("Pass")
  local seen
  function F1.forward(ctx, a, b)
    seen = ctx.needs_input_grad
    local idx = torch.tensor({ 0, 1 })
    ctx:mark_non_differentiable(idx)
    return a, idx
  end
  function F1.backward(ctx, ga, gidx)
    T.check(gidx == nil, "nil for the index result")
    return ga * 5, nil
  end
  local a = torch.ones(2):requires_grad_()
  local out, idx = F1.apply(a, torch.ones(2))
  T.eq(seen, { true, false }, "needs_input_grad")
  T.check(not rawequal(out, a) and out.grad_fn ~= nil, "an alias of the argument carries the history")
  T.check(not idx.requires_grad and idx.grad_fn == nil, "the marked result needs no gradient")
  out:sum():backward()
  T.eq(a.grad:tolist(), { 5.0, 5.0 }, "a.grad")
end)

T.test("a gradient of the argument's broadcast shape is summed down", function()
  local B = torch.autograd.Function:extend("Bcast")
  function B.forward(ctx, b) return b:expand(2, 3):clone() end
  function B.backward(ctx, g) return g end
  local b = torch.ones(1, 3):requires_grad_()
  B.apply(b):sum():backward()
  T.eq(b.grad:tolist(), { { 2.0, 2.0, 2.0 } }, "summed over the broadcast rows")
end)

T.test("mistakes in a custom Function are errors that name them", function()
  local Bad = torch.autograd.Function:extend("Bad")
  function Bad.forward(ctx, x) return x * 2 end
  local x = torch.ones(3):requires_grad_()
  function Bad.backward() return torch.ones(3), torch.ones(3) end
  T.raises(function() Bad.apply(x):sum():backward() end, "function BadBackward returned an incorrect number of gradients (expected 1, got 2)")
  function Bad.backward() return torch.ones(4) end
  T.raises(function() Bad.apply(x):sum():backward() end,
    "function BadBackward returned an invalid gradient at index 0 - got [4] but expected shape compatible with [3]")
  function Bad.backward() return "x" end
  T.raises(function() Bad.apply(x):sum():backward() end, "~returned an invalid gradient at index 0 - expected a Tensor or nil, got string")
  function Bad.backward() error("custom failure") end
  T.raises(function() Bad.apply(x):sum():backward() end, "~custom failure")
  local NoBack = torch.autograd.Function:extend("NoBack")
  function NoBack.forward(ctx, t) return t + 1 end
  T.raises(function() NoBack.apply(x):sum():backward() end, "~must define backward")
  local Saver = torch.autograd.Function:extend("Saver")
  function Saver.forward(ctx, t) ctx:save_for_backward(t); return t * 1 end
  function Saver.backward(ctx, g) local t = table.unpack(ctx.saved_tensors); return g * t end
  local s = torch.ones(2):requires_grad_()
  local base = s * 1
  local out = Saver.apply(base)
  base:add_(1)
  T.raises(function() out:sum():backward() end, "~has been modified by an inplace operation: saved tensor 0 of SaverBackward")
  T.raises(function() Saver.forward = function(ctx) ctx:save_for_backward(3) end; Saver.apply(s) end,
    "~save_for_backward can only save tensors, but argument 0 is of type number")
end)

T.test("the graph and its context are freed with the result", function()
  local weak = setmetatable({}, { __mode = "v" })
  local Keep = torch.autograd.Function:extend("Keep")
  function Keep.forward(ctx, t)
    local y = t * 2
    ctx:save_for_backward(y)
    ctx.me = y
    weak.ctx = ctx
    return y
  end
  function Keep.backward(ctx, g) return g * 2 end
  do
    local y = Keep.apply(torch.ones(4):requires_grad_())
    weak.y = y
  end
  collectgarbage()
  collectgarbage()
  T.check(weak.ctx == nil and weak.y == nil, "collected")
end)

T.test("saved tensors are let go after a backward without retain_graph", function()
  local weak = setmetatable({}, { __mode = "v" })
  local Sq = torch.autograd.Function:extend("Sq")
  function Sq.forward(ctx, t)
    local kept = t * 1
    weak.kept = kept
    ctx:save_for_backward(kept)
    ctx.tag = "field"
    weak.ctx = ctx
    return t * t
  end
  function Sq.backward(ctx, g) local t = table.unpack(ctx.saved_tensors); return g * 2 * t end
  local x = torch.tensor({ 1.0, -2.0, 3.0 }):requires_grad_()
  local y = Sq.apply(x)
  y:sum():backward({ retain_graph = true })
  T.eq(x.grad:tolist(), { 2.0, -4.0, 6.0 }, "first pass")
  y:sum():backward() -- retain_graph kept them: the second pass runs, then lets them go
  T.eq(x.grad:tolist(), { 4.0, -8.0, 12.0 }, "second pass accumulates")
  collectgarbage()
  collectgarbage()
  T.check(weak.kept == nil, "the saved tensor was collected while the result lives")
  T.eq(weak.ctx.tag, "field", "fields set on ctx stay")
  T.raises(function() return weak.ctx.saved_tensors end, "~Trying to backward through the graph a second time")
  T.raises(function() y:sum():backward() end, "~Trying to backward through the graph a second time")
  local ga = torch.autograd.grad(Sq.apply(x):sum(), x)[1] -- autograd.grad frees them too
  T.eq(ga:tolist(), { 2.0, -4.0, 6.0 }, "autograd.grad")
end)

T.test("a Function that saved nothing can be differentiated twice", function()
  local Twice = torch.autograd.Function:extend("Twice")
  function Twice.forward(ctx, t) return t * 2 end
  function Twice.backward(ctx, g) return g * 2 end
  local x = torch.ones(3):requires_grad_()
  local y = Twice.apply(x):sum()
  y:backward()
  y:backward()
  T.eq(x.grad:tolist(), { 4.0, 4.0, 4.0 }, "two passes")
end)
