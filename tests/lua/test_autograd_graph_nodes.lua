-- torch.autograd.graph's nodes: hooks on grad_fn nodes (register_hook, register_prehook, on
-- AccumulateGrad too), metadata, Node, GradientEdge / get_gradient_edge, increment_version,
-- register_multi_grad_hook, allow_mutation_on_saved_tensors, and the multithreading and
-- view-replay switches. Gradients are compared with values worked out by hand.
local T = ...
local graph = torch.autograd.graph

local function L(t) return t:tolist() end

-- the checks of one device (dev "cpu" or "cuda"); returns nothing, counts through T
local function checks(dev)
  local function vec(v) return torch.tensor(v, { dtype = torch.float32, device = dev }):requires_grad_() end
  local function same(t, want, msg) T.near(L(t:cpu()), want, 1e-6, msg) end

  -- x = [1, 2], w = [3, 4], y = x * w = [3, 8], z = sum(y * y): dz/dy = 2y = [6, 16],
  -- dz/dx = 2y * w = [18, 64], dz/dw = 2y * x = [6, 32]
  local function setup()
    local x, w = vec({ 1, 2 }), vec({ 3, 4 })
    local y = x * w
    return x, w, y, (y * y):sum()
  end

  T.test(dev .. ": register_hook sees grad_inputs and grad_outputs; a list it returns replaces grad_inputs", function()
    local x, w, y, z = setup()
    local fn = y.grad_fn
    T.eq(fn:name(), "MulBackward0", "node")
    local seen = {}
    local h = fn:register_hook(function(gi, go)
      seen[#seen + 1] = { gi[1] and L(gi[1]:cpu()), gi[2] and L(gi[2]:cpu()), L(go[1]:cpu()) }
      return { gi[1] * 2, nil } -- nil: w gets no gradient
    end)
    z:backward({ retain_graph = true })
    T.eq(#seen, 1, "called once")
    T.near(seen[1], { { 18, 64 }, { 6, 32 }, { 6, 16 } }, 1e-6, "grad_inputs then grad_outputs")
    same(x.grad, { 36, 128 }, "x.grad from the replaced grad_input")
    T.check(w.grad == nil, "w.grad: the hook returned nil for it")
    h:remove()
    h:remove() -- a second remove does nothing
    x.grad = nil
    z:backward()
    same(x.grad, { 18, 64 }, "removed: x.grad as without hook")
    same(w.grad, { 6, 32 }, "removed: w.grad as without hook")
    T.eq(#seen, 1, "not called after remove")
  end)

  T.test(dev .. ": register_prehook replaces grad_outputs; nil keeps them", function()
    local x, w, y, z = setup()
    local got
    local h1 = y.grad_fn:register_prehook(function(go) got = L(go[1]:cpu()) end)
    local h2 = y.grad_fn:register_prehook(function(go) return { go[1] + 1 } end)
    z:backward()
    T.near(got, { 6, 16 }, 1e-6, "grad_outputs")
    same(x.grad, { 21, 68 }, "x.grad: (2y + 1) * w")
    same(w.grad, { 7, 34 }, "w.grad: (2y + 1) * x")
    h1:remove()
    h2:remove()
  end)

  T.test(dev .. ": order: tensor hook, retain_grad, node pre hook, node, node post hook", function()
    local x, w, y, z = setup()
    local order = {}
    y:retain_grad()
    y:register_hook(function(g) order[#order + 1] = "tensor"; return g * 10 end)
    y.grad_fn:register_prehook(function(go)
      order[#order + 1] = "pre"
      T.near(L(go[1]:cpu()), { 60, 160 }, 1e-6, "the pre hook sees the tensor hook's result")
      return { go[1] + 1 }
    end)
    y.grad_fn:register_hook(function(gi, go)
      order[#order + 1] = "post"
      T.near(L(go[1]:cpu()), { 61, 161 }, 1e-6, "the post hook sees the pre hook's result")
    end)
    z:backward()
    T.eq(order, { "tensor", "pre", "post" }, "order")
    same(y.grad, { 60, 160 }, "retained grad: before the node's pre hook")
    same(x.grad, { 183, 644 }, "x.grad")
  end)

  T.test(dev .. ": hooks on AccumulateGrad: once per pass on the leaf's whole gradient", function()
    local x, w = vec({ 1, 2 }), vec({ 3, 4 })
    T.check(x.grad_fn == nil, "a leaf has no grad_fn")
    local y = x * w
    local u = x * 2
    local z = (y * y):sum() + u:sum() -- dz/dx = [18, 64] + [2, 2] = [20, 66]
    local acc = y.grad_fn.next_functions[1][1]
    T.eq(acc:name(), "AccumulateGrad", "reached through next_functions")
    T.check(acc.variable:data_ptr() == x:data_ptr(), "acc.variable is the leaf")
    T.check(acc == u.grad_fn.next_functions[1][1], "the leaf's AccumulateGrad nodes are one node")
    T.check(acc ~= y.grad_fn.next_functions[2][1], "w's is another")
    T.check(graph.get_gradient_edge(x).node == acc, "get_gradient_edge(leaf) is that node")
    local pre, post = {}, {}
    local hp = acc:register_prehook(function(go)
      pre[#pre + 1] = L(go[1]:cpu())
      return { go[1] * 0.5 }
    end)
    local hq = acc:register_hook(function(gi, go)
      post[#post + 1] = { #gi, L(go[1]:cpu()), L(x.grad:cpu()) }
    end)
    z:backward({ retain_graph = true })
    T.eq(#pre, 1, "pre hook once per pass")
    T.near(pre[1], { 20, 66 }, 1e-6, "pre hook: the summed gradient")
    same(x.grad, { 10, 33 }, "x.grad: the pre hook's replacement")
    T.eq(#post, 1, "post hook once")
    T.near(post[1], { 0, { 10, 33 }, { 10, 33 } }, 1e-6, "post hook: no grad_inputs, the replaced grad_output, after accumulation")
    same(w.grad, { 6, 32 }, "w untouched")
    hp:remove()
    hq:remove()
    x.grad = nil
    z:backward()
    same(x.grad, { 20, 66 }, "removed")
    T.eq(#pre + #post, 2, "not called after remove")
  end)

  T.test(dev .. ": a prehook on a two-output node sees nil for the output not used", function()
    local Two = torch.autograd.Function:extend("Two")
    function Two.forward(ctx, a) return a * 2, a * 3 end
    function Two.backward(ctx, g1, g2)
      local r = torch.zeros_like(g1 ~= nil and g1 or g2)
      if g1 ~= nil then r = r + g1 * 2 end
      if g2 ~= nil then r = r + g2 * 3 end
      return r
    end
    local a = vec({ 1, 5 })
    local p, q = Two.apply(a)
    local go
    p.grad_fn:register_prehook(function(g) go = g end)
    q:sum():backward()
    T.check(go ~= nil and go[1] == nil, "grad_outputs[1] is nil")
    same(go[2], { 1, 1 }, "grad_outputs[2]")
    same(a.grad, { 3, 3 }, "a.grad")
    p.grad_fn:register_prehook(function(g) return { torch.ones(2, { device = dev }), g[2] } end)
    T.raises(function() q:sum():backward() end, "~can't replace a None gradient with a non-None value", "no gradient to replace")
  end)

  T.test(dev .. ": metadata persists with the node", function()
    local x, w, y = setup()
    y.grad_fn.metadata.tag = "mine"
    collectgarbage()
    T.eq(y.grad_fn.metadata.tag, "mine", "read back through a new handle")
    T.check((x * w).grad_fn.metadata.tag == nil, "another node has its own")
    local acc = y.grad_fn.next_functions[1][1]
    acc.metadata.n = 1
    T.eq(graph.get_gradient_edge(x).node.metadata.n, 1, "AccumulateGrad's metadata is the leaf's")
  end)

  T.test(dev .. ": hook errors", function()
    local _, _, y, z = setup()
    local h = y.grad_fn:register_hook(function(gi) return { gi[1], gi[2], gi[1] } end)
    T.raises(function() z:backward({ retain_graph = true }) end,
      "~a hook registered with register_hook has returned an incorrect number of values (got 3, but expected 2)", "too many")
    h:remove()
    h = y.grad_fn:register_prehook(function() return "no" end)
    T.raises(function() z:backward({ retain_graph = true }) end,
      "~a hook registered with register_prehook must return nil or a list of gradients, not a string", "a string")
    h:remove()
    h = y.grad_fn:register_prehook(function(go) return { go[1]:sum() } end)
    T.raises(function() z:backward({ retain_graph = true }) end,
      "~a hook changed the size of the gradient (was torch.Size([2]) got torch.Size([]))", "size")
    h:remove()
    h = y.grad_fn:register_hook(function() error("boom") end)
    T.raises(function() z:backward({ retain_graph = true }) end, "~boom", "the hook's error")
    h:remove()
    T.raises(function() y.grad_fn:register_hook(1) end, "~function expected", "not a function")
  end)

  T.test(dev .. ": register_multi_grad_hook, mode all", function()
    local a, b, c = vec({ 1, 2 }), vec({ 3, 4 }), vec({ 5 })
    local d = torch.ones(2, { device = dev })
    local h = a * 2 -- a non-leaf
    local calls = {}
    local handle = graph.register_multi_grad_hook({ a, b, c, d, h }, function(gs) calls[#calls + 1] = gs end)
    local z = (h * h * b):sum() -- dz/dh = 2hb = [12, 32], dz/da = 2 dz/dh = [24, 64], dz/db = h^2 = [4, 16]
    z:backward({ retain_graph = true })
    T.eq(#calls, 1, "once per pass")
    local gs = calls[1]
    same(gs[1], { 24, 64 }, "a")
    same(gs[2], { 4, 16 }, "b")
    T.check(gs[3] == nil, "c: not reached, nil")
    T.check(gs[4] == nil, "d: needs no grad, nil")
    same(gs[5], { 12, 32 }, "h")
    z:backward({ retain_graph = true })
    T.eq(#calls, 2, "again in the next pass")
    local r = torch.autograd.grad(z, { a }, { retain_graph = true })
    same(r[1], { 24, 64 }, "grad of a")
    T.eq(#calls, 3, "in torch.autograd.grad too")
    same(calls[3][1], { 24, 64 }, "a from autograd.grad")
    T.check(calls[3][2] == nil, "b: not asked for, nil")
    handle:remove()
    z:backward()
    T.eq(#calls, 3, "not after remove")
  end)

  T.test(dev .. ": register_multi_grad_hook, mode any", function()
    local a, b = vec({ 1, 2 }), vec({ 3, 4 })
    local got = {}
    local handle = graph.register_multi_grad_hook({ a, b }, function(g) got[#got + 1] = L(g:cpu()) end, { mode = "any" })
    ;(b * 3):sum():backward()
    T.eq(#got, 1, "one call")
    T.near(got[1], { 3, 3 }, 1e-6, "b's gradient, the only one")
    ;(a * b):sum():backward()
    T.eq(#got, 2, "once per pass with both reached")
    T.check(T.show(got[2]) == T.show({ 3.0, 4.0 }) or T.show(got[2]) == T.show({ 1.0, 2.0 }), "one of their gradients")
    handle:remove()
    ;(a * b):sum():backward()
    T.eq(#got, 2, "not after remove")
  end)
end

T.test("argument errors", function()
  local a = torch.ones(2):requires_grad_()
  local f = function() end
  T.raises(function() graph.register_multi_grad_hook({ a }, f, { mode = "some" }) end,
    "Expects mode to be one of ('all', 'any') but got some", "mode")
  T.raises(function() graph.register_multi_grad_hook({ a }, f, { mod = "all" }) end, "~unknown keyword 'mod'", "unknown key")
  T.raises(function() graph.register_multi_grad_hook(a, f) end, "register_multi_grad_hook: tensors must be a list of Tensors, got torch.FloatTensor", "a tensor")
  T.raises(function() graph.register_multi_grad_hook({ a, 3 }, f) end, "register_multi_grad_hook: element 2 of tensors must be a Tensor, got int", "element")
  T.raises(function() graph.register_multi_grad_hook({ a }, 1) end, "register_multi_grad_hook: fn must be a function, got int", "fn")
  T.raises(function() graph.get_gradient_edge(torch.ones(2)) end,
    "~It is not possible to get the gradient edge for a Tensor that does not require gradients", "edge of a constant")
  T.raises(function() graph.increment_version({ torch.ones(1), "x" }) end, "increment_version: element 2 must be a Tensor, got str", "list")
  T.raises(function() torch.autograd.set_multithreading_enabled(1) end, "set_multithreading_enabled: mode must be a boolean, got int", "mode")
  T.raises(function() graph.GradientEdge(1, 0) end, "GradientEdge: node must be a Node, got int", "node")
end)

T.test("Node and GradientEdge", function()
  local x = torch.tensor({ 1.0, 2.0 }):requires_grad_()
  local y = x:exp()
  T.check(graph.Node.is(y.grad_fn), "grad_fn is a Node")
  T.check(graph.Node.is(y.grad_fn.next_functions[1][1]), "AccumulateGrad is a Node")
  T.check(not graph.Node.is(x) and not graph.Node.is({}) and not graph.Node.is(nil), "others are not")
  local e = graph.get_gradient_edge(y)
  T.check(graph.GradientEdge.is(e), "an edge")
  T.check(e.node == y.grad_fn and e[1] == y.grad_fn, "node")
  T.eq(e.output_nr, 0, "output_nr")
  T.eq(e[2], 0, "edge[2]")
  T.check(e == graph.GradientEdge(y.grad_fn, 0), "equal to one made by hand")
  T.check(tostring(e):find("^GradientEdge%(node=<ExpBackward0 object at") ~= nil, "printed")
end)

T.test("increment_version", function()
  local a = torch.ones(2)
  local v = a._version
  graph.increment_version(a)
  T.eq(a._version, v + 1, "bumped")
  local view = a:narrow(0, 0, 1)
  graph.increment_version({ a, view })
  T.eq(a._version, v + 3, "a list, a view shares the counter")
  local x = torch.tensor({ 1.0, 2.0 }):requires_grad_()
  local y = x * 1
  local z = (y * y):sum()
  graph.increment_version(y)
  T.raises(function() z:backward() end, "~modified by an inplace operation", "a saved tensor bumped")
end)

T.test("allow_mutation_on_saved_tensors", function()
  local x = torch.tensor({ 1.0, 2.0 }):requires_grad_()
  graph.allow_mutation_on_saved_tensors(function()
    local y = x:clone()
    local z = y * y -- saves y
    y:mul_(100)
    z:sum():backward()
  end)
  T.near(L(x.grad), { 2, 4 }, 1e-6, "backward used y from before the change")
  x.grad = nil
  local z
  do
    local ctx <close> = graph.allow_mutation_on_saved_tensors()
    T.raises(function() graph.allow_mutation_on_saved_tensors() end, "allow_mutation_on_saved_tensors contexts cannot be nested", "nested")
    local y = x:clone()
    z = (y * y):sum()
    y:add_(1)
  end
  T.raises(function() z:backward() end,
    "~Trying to backward outside of the 'allow_mutation_on_saved_tensors' context in which the graph was originally recorded.", "outside")
  local y = x:clone()
  z = (y * y):sum()
  y:add_(1)
  T.raises(function() z:backward() end, "~modified by an inplace operation", "without the context it fails")
  graph.allow_mutation_on_saved_tensors(function() end) -- usable again after the failures
end)

T.test("multithreading and view replay switches", function()
  local A = torch.autograd
  T.eq(A.is_multithreading_enabled(), true, "on by default")
  do
    local _ <close> = A.set_multithreading_enabled(false)
    T.eq(A.is_multithreading_enabled(), false, "off inside")
    local x = torch.tensor({ 3.0 }):requires_grad_()
    ;(x * x):sum():backward()
    T.near(L(x.grad), { 6 }, 1e-9, "backward unchanged")
  end
  T.eq(A.is_multithreading_enabled(), true, "restored")
  T.eq(A.set_multithreading_enabled(false, function() return A.is_multithreading_enabled() end), false, "function form")
  T.eq(A.is_multithreading_enabled(), true, "restored after the function")
  T.eq(A.is_view_replay_enabled(), false, "view replay off")
  T.eq(A._force_original_view_tracking(false, function() return 7 end), 7, "false: runs")
  T.raises(function() A._force_original_view_tracking(true) end, "~_force_original_view_tracking(true) is not supported", "true")
end)

local before = T.passed
checks("cpu")
if torch.cuda.is_available() then
  checks("cuda")
else
  T.skip("no CUDA device", T.passed - before) -- as many checks as the CPU run made
end
