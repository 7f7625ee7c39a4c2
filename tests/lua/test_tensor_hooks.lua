-- Tensor:register_hook(fn), PyTorch's tensor hooks: fn(grad) runs when the tensor's whole
-- gradient for a pass is known, and a tensor it returns replaces the gradient. Expected
-- values are worked out here from the inputs, element by element.
local T = ...

local function map(t, f)
  local out = {}
  for i, v in ipairs(t) do out[i] = f(v, i) end
  return out
end

T.test("a leaf's hook sees its gradient once, summed over its uses", function()
  local xs = { 1.0, -2.0, 0.5 }
  local x = torch.tensor(xs):requires_grad_()
  local calls, seen = 0, nil
  x:register_hook(function(g)
    calls = calls + 1
    seen = g:tolist()
    return g * 2
  end)
  local function pass() ((x * x) + x):sum():backward() end -- d/dx = 2x + 1, through two uses of x
  pass()
  T.eq(calls, 1, "one call a pass")
  T.near(seen, map(xs, function(v) return 2 * v + 1 end), 1e-6, "the summed gradient")
  T.near(x.grad:tolist(), map(xs, function(v) return 2 * (2 * v + 1) end), 1e-6, ".grad takes the hook's result")
  pass()
  T.eq(calls, 2, "again in the next pass")
  T.near(x.grad:tolist(), map(xs, function(v) return 4 * (2 * v + 1) end), 1e-6, "accumulated after the hook")
end)

T.test("a non-leaf's hook changes what flows on, and what retain_grad keeps", function()
  local xs = { 0.5, 1.5, -1.0, 2.0 }
  local x = torch.tensor(xs):requires_grad_()
  local y = x * 3
  y:retain_grad() -- kept after the hooks whatever the order they were asked for in
  local seen
  y:register_hook(function(g) seen = g:tolist(); return g * 10 end)
  local z = (y * y):sum() -- dz/dy = 2y = 6x
  z:backward()
  T.near(seen, map(xs, function(v) return 6 * v end), 1e-6, "the hook's argument")
  T.near(y.grad:tolist(), map(xs, function(v) return 60 * v end), 1e-5, "y.grad")
  T.near(x.grad:tolist(), map(xs, function(v) return 180 * v end), 1e-5, "x.grad through the changed gradient")
end)

T.test("hooks run in order, each on the one before's result; nil keeps the gradient", function()
  local x = torch.ones(2):requires_grad_()
  local log = {}
  x:register_hook(function(g) log[#log + 1] = "a " .. g[0]:item(); return g + 1 end)
  x:register_hook(function(g) log[#log + 1] = "b " .. g[0]:item() end)
  x:register_hook(function(g) log[#log + 1] = "c " .. g[0]:item(); return g * 2 end)
  local z = (x * 5):sum()
  z:backward()
  T.eq(table.concat(log, ", "), "a 5.0, b 6.0, c 6.0", "order and arguments")
  T.eq(x.grad:tolist(), { 12.0, 12.0 }, ".grad")
end)

T.test("remove() takes a hook off", function()
  local x = torch.ones(3):requires_grad_()
  local calls = 0
  local h = x:register_hook(function(g) calls = calls + 1; return g * 0 end)
  local function pass() (x * 2):sum():backward() end
  pass()
  T.eq(calls, 1, "ran")
  T.eq(x.grad:tolist(), { 0.0, 0.0, 0.0 }, "zeroed by the hook")
  h:remove()
  h.remove() -- a second remove does nothing
  x.grad = nil
  pass()
  T.eq(calls, 1, "not run after remove")
  T.eq(x.grad:tolist(), { 2.0, 2.0, 2.0 }, "the plain gradient")
  local y = x * 4
  local hy = y:register_hook(function(g) return g * 100 end)
  hy.remove()
  x.grad = nil
  y:sum():backward()
  T.eq(x.grad:tolist(), { 4.0, 4.0, 4.0 }, "a non-leaf's removed hook")
end)

T.test("hooks on the tensor backward starts from, and on a view", function()
  local x = torch.tensor({ 1.0, 2.0 }):requires_grad_()
  x:register_hook(function(g) return g * 3 end)
  x:backward(torch.tensor({ 1.0, -1.0 }))
  T.eq(x.grad:tolist(), { 3.0, -3.0 }, "a leaf as the root")
  local a = torch.arange(6, { dtype = torch.float32 }):requires_grad_()
  local m = (a * 1):view(2, 3)
  local row = m[1]
  row:register_hook(function(g) return g * 7 end)
  row:sum():backward()
  T.eq(a.grad:tolist(), { 0.0, 0.0, 0.0, 7.0, 7.0, 7.0 }, "a view's hook")
end)

T.test("a hook's mistakes are errors that name them", function()
  T.raises(function() torch.ones(2):register_hook(function() end) end,
    "cannot register a hook on a tensor that doesn't require gradient")
  T.raises(function() torch.ones(2):requires_grad_():register_hook(42) end, "~function expected")
  local w = torch.ones(3):requires_grad_()
  w:register_hook(function() return torch.ones(2) end)
  T.raises(function() (w * 2):sum():backward() end,
    "a hook changed the size of the gradient (was torch.Size([3]) got torch.Size([2]))")
  local v = torch.ones(3):requires_grad_()
  v:register_hook(function(g) return g:double() end)
  T.raises(function() (v * 2):sum():backward() end, "a hook changed the type of the gradient (was float32 got float64)")
  local u = torch.ones(3):requires_grad_()
  local y = u * 2
  y:register_hook(function() return "no" end)
  T.raises(function() y:sum():backward() end, "~must return a Tensor or nil, not a string")
  T.check(u.grad == nil, "the failed pass left no gradient")
  local z = torch.ones(2):requires_grad_()
  z:register_hook(function() error("boom") end)
  T.raises(function() (z * 1):sum():backward() end, "~boom")
end)

T.test("module backward hooks: grad_input, grad_output, replacing them", function()
  torch.manual_seed(3)
  local f64 = { dtype = torch.float64 }
  local lin = nn.Linear(3, 2, { dtype = torch.float64 })
  local seen = {}
  local h = lin:register_full_backward_hook(function(m, gin, gout)
    seen.module, seen.gin, seen.gout = m, gin[1], gout[1]
  end)
  local x = torch.randn(4, 3, f64):requires_grad_()
  local w = torch.randn(4, 2, f64)
  local y = lin(x)
  ;(y * w):sum():backward()
  T.check(rawequal(seen.module, lin), "the module")
  T.near(seen.gout:tolist(), w:tolist(), 0, "grad_output is dL/dy")
  T.near(seen.gin:tolist(), w:matmul(lin.weight):detach():tolist(), 1e-12, "grad_input is dL/dx")
  T.near(x.grad:tolist(), seen.gin:tolist(), 0, "and reaches x")
  h.remove()
  local pre = lin:register_full_backward_pre_hook(function(m, gout) return { gout[1] * 2 } end)
  lin:zero_grad()
  x.grad = nil
  local z = lin(x)
  ;(z * w):sum():backward()
  T.near(lin.bias.grad:tolist(), (w * 2):sum(0):tolist(), 1e-12, "a backward pre-hook's grad_output feeds the module's gradients")
  pre.remove()
  lin:register_full_backward_hook(function(m, gin) return { gin[1] * 0 } end)
  x.grad = nil
  local u = lin(x)
  u:sum():backward()
  T.eq(x.grad:abs():sum():item(), 0.0, "a returned grad_input replaces it")
  local first = nn.Linear(3, 2)
  local calls = 0
  first:register_full_backward_hook(function(m, gin, gout) calls = calls + 1; T.eq(#gin, 0, "no input needs a gradient") end)
  first(torch.randn(2, 3)):sum():backward()
  T.eq(calls, 1, "the hook still runs once")
end)
