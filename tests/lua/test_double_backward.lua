-- Double backward (create_graph=true): second derivatives of the differentiable ops, the
-- Hessian of a small network, a gradient penalty, hvp / vhp, and the ops whose backward has no
-- derivative here failing by name. References: float64 central differences of first
-- derivatives, themselves computed by the (checked) first backward.
local T = ...
local f64 = { dtype = torch.float64 }
local AF = torch.autograd.functional

-- central differences of the vector function g (tensor -> tensor) at x: J[i][j] = d g_i / d x_j
local function numeric_jacobian(g, x)
  local flat = x:detach():clone():reshape(-1)
  local rows = {}
  local eps = 1e-6
  for j = 0, flat:numel() - 1 do
    local saved = flat[j]:item()
    flat[j] = saved + eps
    local up = g(flat:view(x:size())):detach():reshape(-1)
    flat[j] = saved - eps
    local down = g(flat:view(x:size())):detach():reshape(-1)
    flat[j] = saved
    rows[j + 1] = ((up - down) / (2 * eps))
  end
  return torch.stack(rows, 1) -- [outputs, inputs]
end

-- d loss() / d p[j] (p's flat entry j) by central differences, p changed in place and restored
local function entry_derivative(loss, p, j)
  local flat = p:detach():view(-1)
  local saved = flat[j]:item()
  torch.no_grad(function() flat[j] = saved + 1e-6 end)
  local up = loss():item()
  torch.no_grad(function() flat[j] = saved - 1e-6 end)
  local down = loss():item()
  torch.no_grad(function() flat[j] = saved end)
  return (up - down) / 2e-6
end

-- the first derivative of the scalar f at x, by one backward
local function gradient(f, x)
  local v = x:detach():clone():requires_grad_()
  return torch.autograd.grad(f(v), v)[1]
end

T.test("second derivatives of elementwise ops against central differences", function()
  torch.manual_seed(1)
  local x0 = torch.rand(5, f64) + 0.5
  local fns = {
    exp = function(x) return x:exp():sum() end,
    tanh = function(x) return x:tanh():sum() end,
    sigmoid = function(x) return x:sigmoid():sum() end,
    sin_cos = function(x) return (x:sin() * x:cos()):sum() end,
    log = function(x) return (x:log() * x):sum() end,
    pow = function(x) return x:pow(3):sum() + (x ^ x):sum() end,
    div_sqrt = function(x) return (x:sqrt() / (x + 1)):sum() end,
    softmax = function(x) return (F.softmax(x, 0) * torch.arange(5, f64)):sum() end,
    log_softmax = function(x) return (F.log_softmax(x * x, 0) * torch.arange(5, f64)):sum() end,
    mse = function(x) return F.mse_loss(x:exp(), torch.ones(5, f64)) end,
    mixed = function(x) return (x:outer(x):sum(1) * x:tanh()):sum() end,
  }
  for name, f in pairs(fns) do
    local x = x0:clone():requires_grad_()
    local g = torch.autograd.grad(f(x), x, { create_graph = true })[1]
    T.check(g.requires_grad, name .. ": the gradient has a history")
    local H = {}
    for i = 0, 4 do H[i + 1] = torch.autograd.grad(g[i], x, { retain_graph = true })[1] end
    local want = numeric_jacobian(function(v) return gradient(f, v) end, x0)
    T.near(torch.stack(H, 0):reshape(-1):tolist(), want:reshape(-1):tolist(), 1e-6, name .. ": Hessian")
  end
end)

T.test("relu: the gradient's derivative in the upstream gradient (a mask), none in x", function()
  local x = torch.tensor({ -1.0, 2.0, 3.0 }, f64):requires_grad_()
  local w = torch.tensor({ 1.0, 2.0, 3.0 }, f64):requires_grad_()
  local g = torch.autograd.grad((F.relu(x) * w):sum(), x, { create_graph = true })[1] -- w * (x > 0)
  T.eq(g:tolist(), { 0.0, 2.0, 3.0 }, "first derivative")
  local gw = torch.autograd.grad(g:sum(), w)[1]
  T.eq(gw:tolist(), { 0.0, 1.0, 1.0 }, "d(grad)/dw is the mask")
end)

local function mlp()
  torch.manual_seed(7)
  return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1)):double()
end

T.test("hessian, hvp and vhp of a network's loss against central differences", function()
  local net = mlp()
  local X = torch.randn(4, 3, f64)
  local function loss(x) return (net(x) ^ 2):mean() + x:pow(2):sum() * 0.1 end
  local x0 = X:clone()
  local H = AF.hessian(loss, x0)
  T.eq(H:size(), torch.Size({ 4, 3, 4, 3 }), "shape")
  local want = numeric_jacobian(function(v) return gradient(loss, v) end, x0)
  T.near(H:reshape(12, 12):reshape(-1):tolist(), want:reshape(-1):tolist(), 1e-6, "hessian")
  T.check(not H.requires_grad, "detached without create_graph")
  local v = torch.randn(4, 3, f64)
  local out, hv = AF.hvp(loss, x0, v)
  T.near(out:item(), loss(x0):item(), 1e-14, "hvp's output")
  T.near(hv:reshape(-1):tolist(), H:reshape(12, 12):mv(v:reshape(-1)):tolist(), 1e-10, "hvp = H v")
  local _, vh = AF.vhp(loss, x0, v)
  T.near(vh:reshape(-1):tolist(), v:reshape(-1):matmul(H:reshape(12, 12)):tolist(), 1e-10, "vhp = v^T H")
  -- two inputs: H[i][j] blocks
  local a, b = torch.randn(2, f64), torch.randn(2, f64)
  local HH = AF.hessian(function(p, q) return (p * q:exp()):sum() + (p ^ 3):sum() end, { a, b })
  T.near(HH[1][2]:tolist(), torch.diag(b:exp()):tolist(), 1e-12, "d2/dp dq = diag(exp q)")
  T.near(HH[2][2]:tolist(), torch.diag(a * b:exp()):tolist(), 1e-12, "d2/dq2 = diag(p exp q)")
  T.near(HH[1][1]:tolist(), torch.diag(a * 6):tolist(), 1e-12, "d2/dp2 = diag(6 p)")
  local J = AF.jacobian(function(t) return t:exp() end, a, { create_graph = true })
  T.check(J.requires_grad, "jacobian with create_graph keeps a history")
  T.raises(function() AF.hessian(function(t) return t * 2 end, a) end,
    "The Tensor returned by the function given to hessian should contain a single element")
end)

T.test("a gradient penalty trains: its parameter gradients against central differences", function()
  local net = mlp()
  local X = torch.randn(6, 3, f64)
  local function penalty()
    local x = X:clone():requires_grad_()
    local g = torch.autograd.grad(net(x):sum(), x, { create_graph = true })[1]
    return ((g:norm(2, 1) - 1) ^ 2):mean()
  end
  net:zero_grad()
  penalty():backward()
  local W = net[0].weight
  local got = W.grad:clone()
  local want = numeric_jacobian(function(v)
    torch.no_grad(function() W:copy_(v) end)
    return penalty():reshape(1)
  end, W:detach():clone())
  T.near(got:reshape(-1):tolist(), want:reshape(-1):tolist(), 1e-6, "d penalty / d first weight")
end)

T.test("backward(create_graph=true): .grad keeps a history and accumulates out of place", function()
  local x = torch.tensor({ 1.0, 2.0 }, f64):requires_grad_()
  local y = (x ^ 3):sum()
  y:backward({ create_graph = true })
  T.check(x.grad.requires_grad and x.grad.grad_fn ~= nil, ".grad has a grad_fn")
  T.eq(x.grad:tolist(), { 3.0, 12.0 }, "3 x^2")
  local g = x.grad
  x.grad = nil
  g:sum():backward()
  T.eq(x.grad:tolist(), { 6.0, 12.0 }, "6 x")
  -- retain_graph defaults to create_graph: the graph is still there
  y:backward()
  T.eq(x.grad:tolist(), { 9.0, 24.0 }, "a second backward through the kept graph adds 3 x^2")
end)

T.test("indexing (select, narrow, diagonal) passes second derivatives; an in-place op on a view fails by name", function()
  local x0 = torch.tensor({ 0.3, -0.7, 1.1, 0.5 }, f64)
  local function f(t) return t[0] * t[1] + t:narrow(0, 1, 3):pow(3):sum() + t:view(2, 2):diagonal():exp():sum() end
  local x = x0:clone():requires_grad_()
  local H = AF.hessian(f, x)
  local want = numeric_jacobian(function(v) return gradient(f, v) end, x0)
  T.near(H:reshape(-1):tolist(), want:reshape(-1):tolist(), 1e-6, "Hessian through views")
  local y = x * 1
  y:narrow(0, 0, 2):mul_(y:narrow(0, 2, 2))
  T.raises(function() torch.autograd.grad(y:sum(), x, { create_graph = true }) end,
    "~through CopySlices is not supported: its backward writes a gradient into part of a tensor")
end)

T.test("a convolutional critic's gradient penalty (WGAN-GP): every parameter's gradient against central differences", function()
  torch.manual_seed(11)
  local critic = nn.Sequential(nn.Conv2d(2, 3, 3, { stride = 2, padding = 1 }), nn.LeakyReLU(0.2), nn.Conv2d(3, 2, 2, { groups = 1 }),
    nn.Tanh(), nn.Flatten(), nn.Linear(8, 1)):double()
  local real, fake = torch.randn(3, 2, 6, 6, f64), torch.randn(3, 2, 6, 6, f64)
  local alpha = torch.rand(3, 1, 1, 1, f64)
  local function penalty()
    local x = (alpha * real + (1 - alpha) * fake):requires_grad_()
    local out = critic(x)
    local g = torch.autograd.grad(out, x, { grad_outputs = torch.ones_like(out), create_graph = true, retain_graph = true,
      only_inputs = true })[1] -- the WGAN-GP paper's call, word for word
    return ((g:reshape(3, -1):norm(2, 1) - 1) ^ 2):mean()
  end
  critic:zero_grad()
  penalty():backward()
  for _, np in ipairs(critic:named_parameters()) do
    local name, p = np[1], np[2]
    local flat = p:detach():view(-1)
    local got = p.grad and p.grad:view(-1)
    -- the last bias does not move the gradient against x: no gradient, as in PyTorch
    T.check((got == nil) == (name == "5.bias"), name .. (got and " has a gradient" or " has none"))
    for _, i in ipairs(got and { 0, flat:numel() - 1 } or {}) do
      T.near(got[i]:item(), entry_derivative(penalty, p, i), 1e-6, string.format("%s[%d]", name, i))
    end
  end
  -- the Hessian of a convolution's output norm against its input
  local conv = nn.Conv2d(1, 2, 2, { stride = 1, padding = 1 }):double()
  local x0 = torch.randn(1, 1, 2, 2, f64)
  local f = function(t) return (conv(t):tanh() ^ 2):sum() end
  local H = AF.hessian(f, x0)
  local want = numeric_jacobian(function(v) return gradient(f, v) end, x0)
  T.near(H:reshape(-1):tolist(), want:reshape(-1):tolist(), 1e-6, "Hessian through conv2d")
end)

T.test("batch norm, layer norm and the fused cross entropy: Hessians against central differences", function()
  torch.manual_seed(3)
  local bn = nn.BatchNorm1d(3):double()
  torch.no_grad(function() bn.weight:copy_(torch.rand(3, f64) + 0.5); bn.running_var:fill_(1.7) end)
  local x0 = torch.randn(4, 3, f64)
  local t = torch.tensor({ 0, 2, 1, 1 })
  local fs = {
    { "batch norm, training", function(v) return (bn(v):tanh() ^ 2):sum() end },
    { "batch norm, eval", function(v) bn:eval(); local r = (bn(v):tanh() ^ 2):sum(); bn:train(); return r end },
    { "layer_norm", function(v) return (F.layer_norm(v, { 3 }, torch.tensor({ 1.0, 2.0, 3.0 }, f64)) * v):sum() end },
    { "cross_entropy with class weights", function(v)
      return F.cross_entropy(v * v, t, { weight = torch.tensor({ 1.0, 2.0, 0.5 }, f64) })
    end },
    { "cross_entropy, ignore_index", function(v) return F.cross_entropy(v:exp(), torch.tensor({ 0, -100, 1, 2 })) end },
    { "cross_entropy, label smoothing", function(v) return F.cross_entropy(v:sin(), t, { label_smoothing = 0.1 }) end },
    { "cross_entropy, reduction none", function(v) return (F.cross_entropy(v, t, { reduction = "none" }) ^ 2):sum() end },
  }
  for _, c in ipairs(fs) do
    local H = AF.hessian(c[2], x0)
    local want = numeric_jacobian(function(v) return gradient(c[2], v) end, x0)
    T.near(H:reshape(-1):tolist(), want:reshape(-1):tolist(), 1e-6, c[1])
  end
  -- batch norm's weight takes a penalty's gradient
  local function pen()
    local x = x0:clone():requires_grad_()
    local g = torch.autograd.grad(bn(x):sin():sum(), x, { create_graph = true })[1]
    return (g ^ 2):sum()
  end
  bn:zero_grad()
  pen():backward()
  local w = bn.weight
  local want = numeric_jacobian(function(v)
    torch.no_grad(function() w:copy_(v) end)
    return pen():reshape(1)
  end, w:detach():clone())
  T.near(w.grad:tolist(), want:reshape(-1):tolist(), 1e-6, "batch norm weight through a gradient penalty")
end)

T.test("pools (max, average with ceil_mode and padding, adaptive): Hessians against central differences", function()
  torch.manual_seed(5)
  local x0, w = torch.randn(2, 2, 4, 5, f64), torch.randn(2, 2, 4, 5, f64)
  local fs = {
    { "max_pool2d", function(t) return (F.max_pool2d(t * w, 2) ^ 2):sum() end },
    { "max_pool2d, padded and strided", function(t) return (F.max_pool2d((t * w):tanh(), 3, { stride = 2, padding = 1 }) ^ 2):sum() end },
    { "avg_pool2d", function(t) return (F.avg_pool2d(t * t, 2, { stride = 1 }) ^ 2):sum() end },
    { "avg_pool2d, ceil_mode", function(t) return (F.avg_pool2d(t * t, 3, { stride = 2, ceil_mode = true, padding = 1 }) ^ 2):sum() end },
    { "adaptive_avg_pool2d", function(t) return (F.adaptive_avg_pool2d(t * t, { 2, 3 }) ^ 2):sum() end },
    { "adaptive_max_pool2d", function(t) return (F.adaptive_max_pool2d(t * w, { 2, 2 }) ^ 2):sum() end },
  }
  for _, c in ipairs(fs) do
    local H = AF.hessian(c[2], x0)
    local want = numeric_jacobian(function(v) return gradient(c[2], v) end, x0)
    T.near(H:reshape(-1):tolist(), want:reshape(-1):tolist(), 1e-6, c[1])
  end
end)

T.test("MAML: the outer gradient through one inner step (conv, batch norm, relu, max pool, cross entropy)", function()
  torch.manual_seed(9)
  local net = nn.Sequential(nn.Conv2d(1, 2, 3, { padding = 1 }), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
    nn.Linear(8, 3)):double()
  local xs, ys = torch.randn(4, 1, 4, 4, f64), torch.tensor({ 0, 1, 2, 1 })
  local xq, yq = torch.randn(4, 1, 4, 4, f64), torch.tensor({ 2, 0, 1, 0 })
  local names, params = {}, {}
  for i, np in ipairs(net:named_parameters()) do names[i], params[i] = np[1], np[2] end
  local function outer_loss()
    local support = F.cross_entropy(net(xs), ys)
    local grads = torch.autograd.grad(support, params, { create_graph = true })
    local fast = {}
    for i, n in ipairs(names) do fast[n] = params[i] - 0.1 * grads[i] end
    return F.cross_entropy(torch.func.functional_call(net, fast, { xq }), yq)
  end
  net:zero_grad()
  outer_loss():backward()
  for i, n in ipairs(names) do
    local j = params[i]:numel() - 1
    T.near(params[i].grad:view(-1)[j]:item(), entry_derivative(outer_loss, params[i], j), 1e-6, "d outer / d " .. n)
  end
end)
