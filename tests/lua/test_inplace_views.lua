-- In-place ops on views of tensors on the graph (PyTorch's CopySlices): the op changes the
-- base too, so gradients through the base must see it. Each case checks every input's
-- gradient against float64 central differences; then grad_fn names, the leaf error, a base
-- that needs no grad receiving a slice that does, and results equal to out-of-place code.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)

torch.manual_seed(5)
local f64 = { dtype = torch.float64 }
local function randn(...) return torch.randn({ ... }, f64) end

T.test("a view's history after its base or a sibling view changed in place", function()
  gradcheck("a view made before its base was multiplied in place", function(a)
    local b = a * 1
    local v = b[1]
    b:mul_(3)
    return v
  end, { randn(3, 4) })
  gradcheck("a view made before a sibling view changed in place", function(a, w)
    local b = a * 1
    local v1, v2 = b[1], b:narrow(0, 0, 2)
    v1:mul_(w)
    return v2
  end, { randn(3, 4), randn(4) })
  local a = torch.ones(2, 3, f64):requires_grad_()
  local b = a * 1
  local v = b[0]
  T.eq(v.grad_fn:name(), "SelectBackward0", "before the change")
  b:add_(1)
  T.eq(v.grad_fn:name(), "AsStridedBackward0", "after it: a view of the base's new history")
end)

T.test("gradients through in-place ops on views", function()
  gradcheck("select then mul_ by a number", function(a)
    local b = a * 2
    b[1]:mul_(3)
    return b
  end, { randn(3, 4) })
  gradcheck("narrow then mul_ by a tensor that needs grad", function(a, w)
    local b = a * 1
    b:narrow(1, 1, 2):mul_(w)
    return b
  end, { randn(3, 4), randn(3, 2) })
  gradcheck("transposed view, add_ with broadcasting", function(a, c)
    local b = a:clone()
    b:t()[0]:add_(c)
    return b * a
  end, { randn(3, 4), randn(1) })
  gradcheck("zero_ and fill_ on views", function(a)
    local b = a * 1
    b[0]:zero_()
    b:narrow(1, 3, 1):fill_(2)
    return b * a
  end, { randn(3, 4) })
  gradcheck("copy_ into a slice of a tensor that needs no grad", function(w)
    local z = torch.zeros(3, 4, f64)
    z[1]:copy_(w)
    z:narrow(1, 0, 1):copy_(w:narrow(0, 0, 3):view(3, 1) * 5)
    return z * 2
  end, { randn(4) })
  gradcheck("a view of a view, two ops, then the base changed in place", function(a, w)
    local b = a * 1
    local v = b:narrow(0, 0, 2):select(1, 1)
    v:mul_(w)
    v:add_(1)
    b:mul_(b)
    return b
  end, { randn(3, 4), randn(2) })
  -- one op per base: they share the base's version counter, so a second in-place op on it
  -- would invalidate the first one's saved result (PyTorch raises there too)
  for _, op in ipairs({ "exp_", "sigmoid_", "tanh_" }) do
    gradcheck("unary in-place " .. op .. " whose backward reads the result", function(a)
      local b = a * 1
      b[1][op](b[1])
      return b
    end, { randn(3, 4) })
  end
  gradcheck("the view used after the op", function(a)
    local b = a * 3
    local v = b:narrow(1, 0, 2)
    v:clamp_(-0.5, 0.5)
    return b:sum() + (v * v):sum()
  end, { randn(3, 4) })
  gradcheck("index_add_ on a view", function(a, s)
    local b = a * 1
    b:narrow(0, 1, 2):index_add_(1, torch.tensor({ 0, 2 }), s)
    return b
  end, { randn(3, 4), randn(2, 2) })
end)

T.test("what the graph says", function()
  local a = torch.randn(3, 4, { requires_grad = true })
  local b = a * 2
  local v = b[1]
  v:mul_(3)
  T.eq(b.grad_fn:name(), "CopySlices", "the base's grad_fn")
  T.eq(v.grad_fn:name(), "AsStridedBackward0", "the view's grad_fn")
  -- same values and gradient as the out-of-place version
  local a2 = a:detach():clone():requires_grad_()
  local mask = torch.ones(3, 4)
  mask[1] = 3
  local ref = a2 * 2 * mask
  T.eq(b:tolist(), ref:tolist(), "values")
  b:sum():backward()
  ref:sum():backward()
  T.eq(a.grad:tolist(), a2.grad:tolist(), "gradient")
  T.raises(function() a[0]:mul_(2) end, "~a view of a leaf Variable that requires grad is being used in an in-place operation")
  -- a base that needs no grad gets history from a slice that does
  local w = torch.randn(4, { requires_grad = true })
  local z = torch.zeros(2, 4)
  z[0]:copy_(w)
  T.check(z.requires_grad and z.grad_fn:name() == "CopySlices", "z has history")
  z:sum():backward()
  T.eq(w.grad:tolist(), { 1.0, 1.0, 1.0, 1.0 }, "w's gradient through z")
  -- no grad mode: no history
  do
    local _ <close> = torch.no_grad()
    local c = a * 1
    c[0]:mul_(2)
    T.check(c.grad_fn == nil, "nothing recorded under no_grad")
  end
end)
