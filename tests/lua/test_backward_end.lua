-- torch._at_backward_end(t, fn): fn runs once at the end of each backward pass through
-- t's grad_fn, after every gradient of the pass exists (DataParallel's reduction);
-- torch._accumulate_grad(p, g), DataParallel's gather into .grad.
local T = ...

T.test("a function at the end of backward", function()
  local x = torch.randn(3, { requires_grad = true })
  local w = torch.randn(3, { requires_grad = true })
  local h = x * w
  local seen = {}
  torch._at_backward_end(h, function()
    seen[#seen + 1] = { x.grad and x.grad:clone(), w.grad and w.grad:clone(), torch.is_grad_enabled() }
  end)
  local loss = (h * h):sum() + x:sum()
  loss:backward({ retain_graph = true })
  T.eq(#seen, 1, "ran once")
  T.check(seen[1][1] ~= nil and seen[1][2] ~= nil, "every gradient exists when it runs")
  T.eq(seen[1][1]:tolist(), x.grad:tolist(), "x's gradient was complete")
  T.near(seen[1][2]:tolist(), (2 * x * x * w):detach():tolist(), 1e-6, "w's gradient was complete")
  T.check(seen[1][3] == false, "it runs without grad mode")
  loss:backward()
  T.eq(#seen, 2, "ran again in a second pass")
  -- a pass that does not reach h's node does not run it
  x:sum():backward()
  T.eq(#seen, 2, "not run by a pass around the node")
end)

T.test("an error at the end of backward", function()
  local x = torch.randn(2, { requires_grad = true })
  local y = x * 2
  torch._at_backward_end(y, function() error("reducing failed") end)
  T.raises(function() y:sum():backward() end, "~reducing failed")
  T.check(x.grad ~= nil, "the gradients computed before it stay")
  T.raises(function() torch._at_backward_end(x, function() end) end, "~has no grad_fn")
  T.raises(function() torch._at_backward_end(y, 1) end, "~function expected")
end)

T.test("register_post_accumulate_grad_hook", function()
  local w = torch.randn(3, { requires_grad = true })
  local calls = {}
  local h = w:register_post_accumulate_grad_hook(function(p)
    calls[#calls + 1] = p.grad:clone()
  end)
  local y = (w * 2):sum() + (w * w):sum() -- two paths into w: the hook runs once, after both
  y:backward()
  T.eq(#calls, 1, "once per pass")
  T.near(calls[1]:tolist(), (2 + 2 * w):detach():tolist(), 1e-6, "with the whole gradient")
  h.remove()
  w:sum():backward()
  T.eq(#calls, 1, "removed")
  T.raises(function() (w * 2):register_post_accumulate_grad_hook(function() end) end, "~non-leaf")
  local v = torch.randn(2, { requires_grad = true })
  v:register_post_accumulate_grad_hook(function() error("hook failed") end)
  T.raises(function() v:sum():backward() end, "~hook failed")
end)

T.test("_accumulate_grad: a copy into an empty .grad, then sums; never g itself", function()
  local p = torch.zeros(2, 3):requires_grad_(true)
  local g = torch.arange(6.0):reshape(2, 3)
  torch._accumulate_grad(p, g)
  g:fill_(100)
  T.check(torch.equal(p.grad, torch.arange(6.0):reshape(2, 3)), "a copy of g, not g")
  torch._accumulate_grad(p, torch.ones(2, 3))
  T.check(torch.equal(p.grad, torch.arange(6.0):reshape(2, 3) + 1), "added")
  T.raises(function() torch._accumulate_grad(p, torch.ones(4)) end, "~must match the size")
end)
