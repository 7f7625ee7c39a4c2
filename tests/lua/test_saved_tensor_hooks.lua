-- torch.autograd.graph's saved-tensor hooks (saved_tensors_hooks, save_on_cpu,
-- disable_saved_tensors_hooks) and inference tensors. Gradients with hooks are compared with
-- the same graph run without them, and with values worked out by hand.
local T = ...
local graph = torch.autograd.graph
local nn, F = torch.nn, torch.nn.functional

local function list(t) return t:tolist() end

-- pack records each tensor it is given and returns it; the hooks are active while fn runs
local function recorded(fn)
  local seen = {}
  graph.saved_tensors_hooks(function(t) seen[#seen + 1] = t; return t end, function(t) return t end, fn)
  return seen
end

local function same_values(a, b) return a:size() == b:size() and torch.equal(a, b) end

T.test("pack sees each saved tensor once: mul, matmul, conv2d", function()
  local x, y = torch.randn(2, 3):requires_grad_(), torch.randn(2, 3):requires_grad_()
  local seen = recorded(function() return x * y end)
  T.eq(#seen, 2, "mul saves both operands")
  T.check(same_values(seen[1], x) and same_values(seen[2], y) or same_values(seen[1], y) and same_values(seen[2], x), "mul's saved tensors are x and y")
  local xn = torch.randn(2, 3)
  seen = recorded(function() return x * xn end)
  T.eq(#seen, 1, "mul by a constant saves only the constant")
  T.check(same_values(seen[1], xn), "and it is the constant")

  local a, b = torch.randn(2, 3):requires_grad_(), torch.randn(3, 4):requires_grad_()
  seen = recorded(function() return a:matmul(b) end)
  T.eq(#seen, 2, "matmul saves both matrices")
  T.check(same_values(seen[1], a) and same_values(seen[2], b), "matmul's saved tensors are a and b")

  local img, w, bias = torch.randn(1, 2, 5, 5):requires_grad_(), torch.randn(3, 2, 3, 3):requires_grad_(), torch.randn(3):requires_grad_()
  seen = recorded(function() return F.conv2d(img, w, bias) end)
  T.eq(#seen, 2, "conv2d saves input and weight, not bias")
  T.check(same_values(seen[1], img) and same_values(seen[2], w), "conv2d's saved tensors are input and weight")
end)

T.test("pack sees each saved tensor once: Linear + ReLU + Linear", function()
  torch.manual_seed(1)
  local m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
  local x = torch.randn(5, 3)
  local seen = recorded(function() return m(x) end)
  -- first Linear: its input (for the weight's gradient; x needs none); ReLU: its output;
  -- second Linear: its input and its weight (transposed)
  T.eq(#seen, 4, "four saved tensors")
  local h = torch.relu(x:matmul(m[0].weight:t()) + m[0].bias):detach()
  T.check(same_values(seen[1], x), "the first Linear's input")
  T.near(list(seen[2]), list(h), 1e-6, "ReLU's output")
  T.check(same_values(seen[4], m[2].weight:t()), "the second Linear's weight")
  T.near(list(seen[3]), list(h), 1e-6, "the second Linear's input")
end)

-- gradients of fn's parameters, with the hooks (pack, unpack) active during the forward if given
local function grads_of(params, fn, pack, unpack)
  for _, p in ipairs(params) do p.grad = nil end
  local loss = pack and graph.saved_tensors_hooks(pack, unpack, fn) or fn()
  loss:backward()
  local g = {}
  for i, p in ipairs(params) do g[i] = list(p.grad) end
  return g
end

T.test("backward gives the same gradients with hooks", function()
  torch.manual_seed(2)
  local m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
  local conv = nn.Conv2d(2, 3, 3)
  local x, img = torch.randn(5, 3), torch.randn(2, 2, 5, 5)
  local params = { m[0].weight, m[0].bias, m[2].weight, m[2].bias, conv.weight, conv.bias }
  local function loss() return (m(x) ^ 2):sum() + conv(img):tanh():sum() end
  local want = grads_of(params, loss)
  local packs, unpacks = 0, 0
  local got = grads_of(params, loss, function(t) packs = packs + 1; return t:clone() end, function(t) unpacks = unpacks + 1; return t end)
  T.eq(got, want, "pack = clone, unpack = identity")
  T.check(packs > 0 and unpacks == packs, "every packed value is unpacked once in one backward")
  got = grads_of(params, loss, function(t) return { tensor = t } end, function(p) return p.tensor end)
  T.eq(got, want, "pack into a table, unpack out of it")
  local store = {}
  got = grads_of(params, loss, function(t) store[#store + 1] = t; return #store end, function(i) return store[i] end)
  T.eq(got, want, "pack to a number, unpack by it")
end)

T.test("gradients by hand through hooks; unpack runs at each access", function()
  local x, y = torch.tensor({ 1.0, -2.0, 3.0 }):requires_grad_(), torch.tensor({ 0.5, 4.0, -1.0 }):requires_grad_()
  local unpacks = 0
  local z = graph.saved_tensors_hooks(function(t) return { t } end, function(p) unpacks = unpacks + 1; return p[1] end,
    function() return (x * y):sum() end)
  z:backward({ retain_graph = true })
  T.eq(list(x.grad), { 0.5, 4.0, -1.0 }, "d/dx = y")
  T.eq(list(y.grad), { 1.0, -2.0, 3.0 }, "d/dy = x")
  T.eq(unpacks, 2, "each saved tensor unpacked once")
  z:backward()
  T.eq(list(x.grad), { 1.0, 8.0, -2.0 }, "again with the retained graph")
  T.eq(unpacks, 4, "unpacked again for the second pass")
  T.raises(function() z:backward() end, "~Trying to backward through the graph a second time", "the packed values are freed")
end)

T.test("a saved output through hooks, also with create_graph", function()
  local xs = { 0.5, -1.0, 2.0 }
  local x = torch.tensor(xs, { dtype = torch.float64 }):requires_grad_()
  local y = graph.saved_tensors_hooks(function(t) return { t:clone() } end, function(p) return p[1] end, function() return x:exp() end)
  local g = torch.autograd.grad(y:sum(), x, { create_graph = true })[1]
  local e = {}
  for i, v in ipairs(xs) do e[i] = math.exp(v) end
  T.near(list(g), e, 1e-12, "d exp(x)/dx = exp(x), from the unpacked output")
  g:sum():backward()
  T.near(list(x.grad), e, 1e-12, "the second derivative through the unpacked output's history")
end)

T.test("a custom Function's save_for_backward goes through the hooks", function()
  local Cube = torch.autograd.Function:extend("Cube")
  function Cube.forward(ctx, x) ctx:save_for_backward(x); return x ^ 3 end
  function Cube.backward(ctx, g) local x = table.unpack(ctx.saved_tensors); return g * 3 * x ^ 2 end
  local x = torch.tensor({ 1.0, -2.0 }):requires_grad_()
  local seen, unpacks = {}, 0
  local y = graph.saved_tensors_hooks(function(t) seen[#seen + 1] = t; return { t } end, function(p) unpacks = unpacks + 1; return p[1] end,
    function() return Cube.apply(x) end)
  T.eq(#seen, 1, "packed once")
  T.eq(list(seen[1]), { 1.0, -2.0 }, "the saved tensor")
  y:sum():backward()
  T.eq(list(x.grad), { 3.0, 12.0 }, "3x^2 through the unpacked tensor")
  T.eq(unpacks, 1, "unpacked once")
  local z = graph.saved_tensors_hooks(function() return 1 end, function() return 1 end, function() return Cube.apply(x) end)
  T.raises(function() z:sum():backward() end, "~Output of saved tensor unpack_hook expected to be a Tensor but got result of type number")
end)

T.test("nested contexts: the innermost applies; none outside", function()
  local outer, inner = 0, 0
  local function pk(counter) return function(t) if counter == "o" then outer = outer + 1 else inner = inner + 1 end; return t end end
  local id = function(t) return t end
  local x, y = torch.randn(3):requires_grad_(), torch.randn(3):requires_grad_()
  do
    local _ <close> = graph.saved_tensors_hooks(pk("o"), id)
    local _ = x * y
    T.eq({ outer, inner }, { 2, 0 }, "the outer hooks")
    do
      local h <close> = graph.saved_tensors_hooks(pk("i"), id)
      T.check(type(h.pack_hook) == "function" and type(h.unpack_hook) == "function", "the scope shows its hooks")
      local _ = x * y
      T.eq({ outer, inner }, { 2, 2 }, "only the inner hooks inside")
    end
    local _ = x * y
    T.eq({ outer, inner }, { 4, 2 }, "the outer hooks again")
  end
  local _ = x * y
  T.eq({ outer, inner }, { 4, 2 }, "no hooks after the contexts close")
  T.raises(function() graph.saved_tensors_hooks(pk("o"), id, function() local _ = x * y; error("boom", 0) end) end, "boom",
    "an error in the function form passes through")
  T.eq(outer, 6, "its hooks ran")
  local _ = x * y
  T.eq(outer, 6, "and are off after the error")
  T.eq({ graph.saved_tensors_hooks(id, id, function() return 1, 2 end) }, { 1, 2 }, "the function form returns fn's results")
end)

T.test("without hooks the version check stays; with hooks there is none (as PyTorch)", function()
  local a, b = torch.tensor({ 1.0, 2.0 }):requires_grad_(), torch.tensor({ 3.0, 4.0 })
  local z = (a * b):sum()
  b:add_(1)
  T.raises(function() z:backward() end, "~modified by an inplace operation", "a saved tensor changed in place")
  z = graph.saved_tensors_hooks(function(t) return t end, function(t) return t end, function() return (a * b):sum() end)
  b:add_(1)
  z:backward()
  T.eq(list(a.grad), { 5.0, 6.0 }, "the unpacked tensor as it is now")
end)

T.test("hook errors", function()
  local id = function(t) return t end
  local x, y = torch.randn(3):requires_grad_(), torch.randn(3):requires_grad_()
  T.raises(function() graph.saved_tensors_hooks(1, id) end, "saved_tensors_hooks: pack_hook must be a function, got int")
  T.raises(function() graph.saved_tensors_hooks(id) end, "~missing required argument 'unpack_hook'")
  T.raises(function() graph.saved_tensors_hooks(id, id, { bad = 1 }) end, "~unknown keyword 'bad'")
  T.raises(function() graph.saved_tensors_hooks(function() error("no packing", 0) end, id, function() return x * y end) end,
    "no packing", "pack's error comes out of the op")
  T.raises(function() graph.saved_tensors_hooks(function(t) t:add_(1); return t end, id, function() return x * torch.ones(3) end) end,
    "~A saved tensor pack hook is modifying its input in place.", "pack must not change its input")
  local z = graph.saved_tensors_hooks(id, function() return "nope" end, function() return (x * y):sum() end)
  T.raises(function() z:backward() end, "Output of saved tensor unpack_hook expected to be a Tensor but got result of type string")
  local kw = graph.saved_tensors_hooks({ pack_hook = id, unpack_hook = id }, function() return (x * y):sum() end)
  T.check(kw.grad_fn ~= nil, "keyword form")
end)

T.test("disable_saved_tensors_hooks", function()
  local id = function(t) return t end
  do
    local d <close> = graph.disable_saved_tensors_hooks("no hooks here")
    T.raises(function() graph.saved_tensors_hooks(id, id) end, "no hooks here", "refused inside")
    T.raises(function() graph.save_on_cpu() end, "no hooks here", "save_on_cpu too")
  end
  local h <close> = graph.saved_tensors_hooks(id, id)
  T.eq(h.closed, nil, "allowed again after")
  T.raises(function() graph.disable_saved_tensors_hooks("hooks are on") end, "hooks are on", "refused while hooks are on")
  h:__close()
  T.eq(graph.disable_saved_tensors_hooks("m", function() return 7 end), 7, "the function form")
  T.raises(function() graph.disable_saved_tensors_hooks(3) end, "disable_saved_tensors_hooks: error_message must be a string, got int")
end)

T.test("save_on_cpu on CPU tensors: nothing moves, same gradients", function()
  local x = torch.randn(4, 3):requires_grad_()
  local w = torch.randn(3, 2):requires_grad_()
  local function loss() return (x:matmul(w):sigmoid()):sum() end
  local want = grads_of({ x, w }, loss)
  for _, pin in ipairs({ false, true }) do
    x.grad, w.grad = nil, nil
    local s <close> = graph.save_on_cpu({ pin_memory = pin })
    if not pin then
      local p = s.pack_hook(x)
      T.eq(p[2]:data_ptr(), x:data_ptr(), "a CPU tensor is kept as it is")
      T.check(s.unpack_hook(p) == x or s.unpack_hook(p):data_ptr() == x:data_ptr(), "and comes back as it is")
    end
    loss():backward()
    T.eq({ list(x.grad), list(w.grad) }, want, "gradients, pin_memory=" .. tostring(pin))
  end
  T.raises(function() graph.save_on_cpu(true, "cuda", 3) end, "~takes at most 2 positional arguments")
  T.raises(function() graph.save_on_cpu({ pinned = true }) end, "~unknown keyword 'pinned'")
end)

if torch.cuda.is_available() then
  T.test("save_on_cpu moves saved CUDA tensors to the CPU and back", function()
    torch.manual_seed(3)
    local m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)):to("cuda")
    local x = torch.randn(5, 3, { device = "cuda" })
    local params = { m[0].weight, m[0].bias, m[2].weight, m[2].bias }
    local function loss() return (m(x) ^ 2):sum() end
    local want = grads_of(params, loss)
    local saves = 0 -- how many tensors the CUDA kernels save (the fused linear saves more than the CPU's)
    grads_of(params, loss, function(t) saves = saves + 1; return t end, function(t) return t end)
    for _, pin in ipairs({ false, true }) do
      local s = graph.save_on_cpu(pin)
      local packed = {}
      local pack, unpack = s.pack_hook, s.unpack_hook
      s:__close()
      local got = grads_of(params, loss, function(t) local p = pack(t); packed[#packed + 1] = p; return p end, unpack)
      T.eq(#packed, saves, "every saved tensor packed")
      local ok = true
      for _, p in ipairs(packed) do ok = ok and p[2].device.type == "cpu" and p[1].type == "cuda" and p[2]:is_pinned() == pin end
      T.check(ok, "packed on the CPU, pinned=" .. tostring(pin))
      T.eq(got, want, "the gradients, pin_memory=" .. tostring(pin))
      local g2 = grads_of(params, function() return graph.save_on_cpu(pin, function() return loss() end) end)
      T.eq(g2, want, "save_on_cpu's own context")
    end
    local t = torch.inference_mode(function() return torch.ones(3, { device = "cuda" }) end)
    T.check(t:is_inference(), "a CUDA inference tensor")
    T.raises(function() t:mul_(2) end, "~Inplace update to inference tensor outside InferenceMode is not allowed.")
  end)
else
  T.skip("no CUDA", 10)
end

-- ---- inference tensors ----
local SAVE_ERR = "Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal tensor and use it in autograd."
local INPLACE_ERR = "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details."

T.test("is_inference", function()
  local normal = torch.ones(2, 3)
  local made, result, view_of_normal, inner_normal
  do
    local _ <close> = torch.inference_mode()
    made = torch.zeros(2, 3)
    result = normal * 2
    view_of_normal = normal:view(6)
    inner_normal = torch.inference_mode(false, function() return torch.ones(2) end)
    T.check(made:is_inference() and torch.is_inference(made), "a factory's tensor inside inference_mode")
  end
  T.eq({ made:is_inference(), result:is_inference(), torch.is_inference(result) }, { true, true, true }, "made inside stays one")
  T.eq(normal:is_inference(), false, "made outside")
  T.eq(view_of_normal:is_inference(), false, "a view of a normal tensor made inside is normal")
  T.eq(made:view(6):is_inference(), true, "a view of an inference tensor")
  T.eq(made:clone():is_inference(), false, "a clone made outside is normal")
  T.eq(inner_normal:is_inference(), false, "made under inference_mode(false)")
  T.eq(torch.no_grad(function() return torch.ones(1) end):is_inference(), false, "no_grad makes normal tensors")
  local m = nn.Linear(3, 2)
  local y = torch.inference_mode(function() return m(torch.randn(4, 3)) end)
  T.eq({ y:is_inference(), y.requires_grad }, { true, false }, "a module's output in inference mode")
end)

T.test("inference tensors in autograd and in-place outside inference mode", function()
  local inf = torch.inference_mode(function() return torch.tensor({ 1.0, 2.0, 3.0 }) end)
  local w = torch.tensor({ 0.5, -1.0, 2.0 }):requires_grad_()
  T.raises(function() return inf * w end, SAVE_ERR, "mul must save the inference tensor")
  T.raises(function() return torch.mul(w, inf) end, SAVE_ERR, "either side")
  T.raises(function() return inf:matmul(w) end, SAVE_ERR, "matmul")
  local s = inf + w
  s:sum():backward()
  T.eq(list(w.grad), { 1.0, 1.0, 1.0 }, "add saves nothing: allowed")
  local c = inf:clone() * w
  c:sum():backward()
  T.eq(list(w.grad), { 2.0, 3.0, 4.0 }, "a clone works in autograd")
  T.eq(list(inf * 2), { 2.0, 4.0, 6.0 }, "ops without autograd are fine")
  local u = (w * 1)
  T.raises(function() u:mul_(inf) end, SAVE_ERR, "an in-place op that must save it")
  T.raises(function() inf:add_(1) end, INPLACE_ERR, "add_")
  T.raises(function() torch.no_grad(function() inf:mul_(2) end) end, INPLACE_ERR, "also under no_grad")
  T.raises(function() inf:zero_() end, INPLACE_ERR, "zero_")
  T.raises(function() inf:copy_(torch.zeros(3)) end, INPLACE_ERR, "copy_")
  T.raises(function() inf:exp_() end, INPLACE_ERR, "a unary in-place op")
  T.eq(list(inf), { 1.0, 2.0, 3.0 }, "nothing was written")
  torch.inference_mode(function() inf:add_(1) end)
  T.eq(list(inf), { 2.0, 3.0, 4.0 }, "in-place inside inference_mode is fine")
  local normal = torch.zeros(3)
  torch.inference_mode(function() normal:add_(1) end)
  T.eq(list(normal), { 1.0, 1.0, 1.0 }, "and on a normal tensor too")
  T.check(not torch.is_inference_mode_enabled(), "inference mode is off again")
end)

T.test("grad_fn.next_functions and AccumulateGrad's variable", function()
  local x = torch.tensor({ 1.0, 2.0 }):requires_grad_()
  local c = torch.tensor({ 3.0, 4.0 })
  local z = (x * c):exp()
  local nf = z.grad_fn.next_functions
  T.eq(#nf, 1, "exp has one input")
  T.eq({ nf[1][1]:name(), nf[1][2] }, { "MulBackward0", 0 }, "its node and output number")
  local mul = nf[1][1].next_functions
  T.eq(mul[1][1]:name(), "AccumulateGrad", "x is a leaf")
  T.check(torch.equal(mul[1][1].variable, x), "AccumulateGrad.variable is the leaf")
  T.eq({ mul[2][1], mul[2][2] }, { nil, 0 }, "the constant has no node")
  T.check(z.grad_fn == z.grad_fn and z.grad_fn ~= nf[1][1], "nodes compare by identity")
  T.eq(z.grad_fn.variable, nil, "only AccumulateGrad has a variable")
end)
