-- Gradients of torch.nn.functional against float64 central differences: for each
-- function f and each differentiable input x, x.grad after backward of sum(f(...) * w)
-- (w random, fixed) must match (L(x + eps e_k) - L(x - eps e_k)) / 2eps element by element.
local T = ...

local f64 = { dtype = torch.float64 }
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)

torch.manual_seed(77)
local function randn(...) return torch.randn({ ... }, f64) end
local function rand(...) return torch.rand({ ... }, f64) end

T.test("linear and conv2d", function()
  gradcheck("linear", F.linear, { randn(3, 4), randn(2, 4), randn(2) })
  gradcheck("linear no bias", function(x, w) return F.linear(x, w) end, { randn(3, 4), randn(2, 4) })
  gradcheck("linear 3-D", F.linear, { randn(2, 2, 3), randn(4, 3), randn(4) })
  gradcheck("conv2d", F.conv2d, { randn(2, 2, 4, 4), randn(3, 2, 3, 3), randn(3) })
  gradcheck("conv2d stride, padding, dilation", function(x, w, b) return F.conv2d(x, w, b, { 2, 1 }, { 1, 2 }, { 1, 2 }) end,
    { randn(1, 2, 5, 5), randn(2, 2, 2, 3), randn(2) })
  gradcheck("conv2d groups", function(x, w, b) return F.conv2d(x, w, b, { padding = 1, groups = 2 }) end,
    { randn(1, 4, 3, 3), randn(4, 2, 2, 2), randn(4) })
  gradcheck("conv2d 'same' even kernel", function(x, w) return F.conv2d(x, w, nil, 1, "same") end,
    { randn(1, 2, 4, 3), randn(2, 2, 2, 2) })
  gradcheck("conv2d unbatched, transposed input", function(x, w) return F.conv2d(x:transpose(1, 2), w) end,
    { randn(2, 4, 3), randn(2, 2, 2, 2) })
  -- second derivatives of a convolution of one image (3-D): the backward's 4-D view of the input
  -- stays on the graph
  local rg = function(t) return t:requires_grad_() end
  T.check(torch.autograd.gradgradcheck(function(x, w, b) return F.conv2d(x, w, b, 1, 1) end,
    { rg(randn(2, 4, 3)), rg(randn(3, 2, 2, 2)), rg(randn(3)) }), "conv2d unbatched: second derivatives")
  T.check(torch.autograd.gradgradcheck(function(x, w) return F.conv2d(x, w, nil, 2) end,
    { rg(randn(1, 2, 5, 4)), rg(randn(2, 2, 3, 3)) }), "conv2d: second derivatives")
end)

T.test("pools", function()
  gradcheck("max_pool2d", function(x) return F.max_pool2d(x, 2) end, { randn(1, 2, 4, 4) })
  gradcheck("max_pool2d every option", function(x) return F.max_pool2d(x, { 3, 2 }, { 2, 1 }, 1, { 1, 2 }, true) end,
    { randn(1, 2, 5, 5) })
  gradcheck("max_pool2d overlapping windows", function(x) return F.max_pool2d(x, 3, 1) end, { randn(2, 1, 4, 4) })
  gradcheck("avg_pool2d", function(x) return F.avg_pool2d(x, 2) end, { randn(1, 2, 4, 4) })
  gradcheck("avg_pool2d padding", function(x) return F.avg_pool2d(x, 3, 2, 1) end, { randn(1, 2, 5, 4) })
  gradcheck("avg_pool2d no pad count, ceil", function(x) return F.avg_pool2d(x, 3, 2, 1, true, false) end, { randn(1, 1, 5, 6) })
  gradcheck("avg_pool2d divisor_override", function(x) return F.avg_pool2d(x, 2, { divisor_override = 3 }) end,
    { randn(1, 1, 4, 4) })
  gradcheck("adaptive_avg_pool2d", function(x) return F.adaptive_avg_pool2d(x, { 2, 3 }) end, { randn(1, 2, 5, 4) })
  gradcheck("adaptive_avg_pool2d 1x1", function(x) return F.adaptive_avg_pool2d(x, 1) end, { randn(2, 2, 3, 3) })
  gradcheck("adaptive_max_pool2d", function(x) return F.adaptive_max_pool2d(x, { 3, 2 }) end, { randn(1, 2, 5, 4) })
end)

T.test("activations", function()
  local x = randn(3, 4) * 2
  for _, c in ipairs({
    { "relu", F.relu }, { "relu6", function(v) return F.relu6(v * 3) end }, { "hardtanh", F.hardtanh },
    { "hardtanh bounds", function(v) return F.hardtanh(v, -0.5, 2) end }, { "leaky_relu", F.leaky_relu },
    { "leaky_relu slope", function(v) return F.leaky_relu(v, 0.2) end }, { "elu", F.elu },
    { "elu alpha", function(v) return F.elu(v, 0.7) end }, { "gelu", F.gelu },
    { "gelu tanh", function(v) return F.gelu(v, "tanh") end }, { "silu", F.silu }, { "sigmoid", F.sigmoid },
    { "tanh", F.tanh }, { "softplus", F.softplus }, { "softplus beta threshold", function(v) return F.softplus(v, 2, 1) end },
    { "logsigmoid", F.logsigmoid },
    { "relu inplace", function(v) return F.relu(v * 1, true) end },
    { "leaky_relu inplace", function(v) return F.leaky_relu(v * 1, 0.1, true) end },
    { "elu inplace", function(v) return F.elu(v * 1, { inplace = true }) end },
    { "silu inplace", function(v) return F.silu(v * 1, true) end },
  }) do
    gradcheck(c[1], c[2], { x })
  end
  gradcheck("softplus above threshold", F.softplus, { torch.tensor({ 30.0, -30.0, 0.5 }, f64) })
end)

T.test("softmax family", function()
  local x = randn(3, 4)
  gradcheck("softmax dim 1", function(v) return F.softmax(v, 1) end, { x })
  gradcheck("softmax dim 0", function(v) return F.softmax(v, 0) end, { x })
  gradcheck("log_softmax", function(v) return F.log_softmax(v, -1) end, { x })
  gradcheck("log_softmax non-contiguous", function(v) return F.log_softmax(v:t(), 1) end, { x })
  gradcheck("softmin", function(v) return F.softmin(v, 1) end, { x })
  gradcheck("softmax 3-D", function(v) return F.softmax(v, 1) end, { randn(2, 3, 2) })
end)

T.test("dropout", function()
  local x = randn(4, 5)
  gradcheck("dropout", function(v) return F.dropout(v, 0.4) end, { x }, { seed = 3 })
  gradcheck("dropout inplace", function(v) return F.dropout(v * 1, 0.4, true, true) end, { x }, { seed = 3 })
  gradcheck("dropout eval", function(v) return F.dropout(v, 0.4, false) * 1 end, { x })
  gradcheck("dropout p=1", function(v) return F.dropout(v, 1) end, { x })
  gradcheck("dropout2d", function(v) return F.dropout2d(v, 0.5) end, { randn(2, 3, 2, 2) }, { seed = 5 })
end)

T.test("normalisation", function()
  local x = randn(4, 3, 2) * 2 + 1
  gradcheck("batch_norm training", function(v, w, b)
    return F.batch_norm(v, torch.zeros(3, f64), torch.ones(3, f64), w, b, true)
  end, { x, randn(3), randn(3) })
  gradcheck("batch_norm training 2-D, no stats", function(v, w, b) return F.batch_norm(v, nil, nil, w, b, true) end,
    { randn(5, 3), randn(3), randn(3) })
  gradcheck("batch_norm training 4-D", function(v) return F.batch_norm(v, nil, nil, nil, nil, true, 0.1, 1e-3) end,
    { randn(2, 2, 2, 3) })
  gradcheck("batch_norm eval", function(v, w, b, rm, rv) return F.batch_norm(v, rm, rv, w, b) end,
    { x, randn(3), randn(3), randn(3), rand(3) + 0.5 }, { const = { [4] = true, [5] = true } })
  gradcheck("layer_norm", function(v, w, b) return F.layer_norm(v, { 2 }, w, b) end, { x, randn(2), randn(2) })
  gradcheck("layer_norm 2 dims", function(v, w, b) return F.layer_norm(v, { 3, 2 }, w, b, 1e-3) end,
    { x, randn(3, 2), randn(3, 2) })
  gradcheck("layer_norm no affine", function(v) return F.layer_norm(v, 2) end, { x })
  gradcheck("group_norm", function(v, w, b) return F.group_norm(v, 2, w, b) end,
    { randn(2, 4, 3), randn(4), randn(4) })
  gradcheck("group_norm 4-D", function(v) return F.group_norm(v, 3) end, { randn(1, 6, 2, 2) })
  gradcheck("normalize", function(v) return F.normalize(v) end, { randn(3, 4) })
  gradcheck("normalize p=1 dim 0", function(v) return F.normalize(v, 1, 0) end, { randn(3, 4) })
end)

T.test("embedding, pad, flatten", function()
  local idx = torch.tensor({ { 0, 3, 1 }, { 3, 3, 4 } })
  gradcheck("embedding", function(i, w) return F.embedding(i, w) end, { idx, randn(5, 2) })
  -- padding_idx: that row gets no gradient, the others get the usual one
  local w = randn(5, 2):requires_grad_()
  local wr = w:detach():clone():requires_grad_()
  local gout = randn(2, 3, 2)
  F.embedding(idx, w, 3):mul(gout):sum():backward()
  F.embedding(idx, wr):mul(gout):sum():backward()
  local G, GR = w.grad:tolist(), wr.grad:tolist()
  T.near(G[4], { 0, 0 }, 0, "embedding padding_idx row gets no gradient")
  T.near({ G[1], G[2], G[5] }, { GR[1], GR[2], GR[5] }, 1e-12, "embedding other rows with padding_idx")
  local x = randn(2, 3, 3)
  gradcheck("pad constant", function(v) return F.pad(v, { 1, 2, 0, 1 }, "constant", 0.5) end, { x })
  gradcheck("pad negative", function(v) return F.pad(v, { -1, 1, 1, -1 }) end, { x })
  gradcheck("pad reflect", function(v) return F.pad(v, { 2, 1 }, "reflect") end, { x })
  gradcheck("pad replicate", function(v) return F.pad(v, { 1, 2, 2, 1 }, "replicate") end, { x })
  gradcheck("pad circular", function(v) return F.pad(v, { 1, 2, 2, 0 }, "circular") end, { x })
  gradcheck("flatten", function(v) return F.flatten(v, 1) end, { x })
end)

T.test("losses", function()
  local x = randn(4, 3)
  local t = torch.tensor({ 2, 0, 1, 2 })
  local wt = rand(3) + 0.5
  for _, red in ipairs({ "mean", "sum", "none" }) do
    gradcheck("cross_entropy " .. red, function(v) return F.cross_entropy(v, t, { reduction = red }) end, { x })
    gradcheck("cross_entropy weight ignore_index " .. red, function(v, w)
      return F.cross_entropy(v, t, { weight = w, ignore_index = 0, reduction = red })
    end, { x, wt }, { const = { [2] = true } })
    gradcheck("cross_entropy label_smoothing " .. red, function(v, w)
      return F.cross_entropy(v, t, { weight = w, ignore_index = 1, reduction = red, label_smoothing = 0.3 })
    end, { x, wt }, { const = { [2] = true } })
    gradcheck("cross_entropy probabilities " .. red, function(v, p, w)
      return F.cross_entropy(v, p, { weight = w, reduction = red, label_smoothing = 0.1 })
    end, { x, rand(4, 3), wt }, { const = { [3] = true } })
    gradcheck("nll_loss " .. red, function(v, w) return F.nll_loss(v, t, { weight = w, reduction = red }) end, { x, wt },
      { const = { [2] = true } })
  end
  gradcheck("cross_entropy [N, C, d]", function(v) return F.cross_entropy(v, torch.tensor({ { 0, 2 }, { 1, 1 } })) end,
    { randn(2, 3, 2) })
  local a, b = randn(3, 4), randn(3, 4)
  local pw = rand(3, 4)
  for _, red in ipairs({ "mean", "sum", "none" }) do
    gradcheck("mse_loss " .. red, function(u, v) return F.mse_loss(u, v, { reduction = red }) end, { a, b })
    gradcheck("mse_loss weight " .. red, function(u, v, w) return F.mse_loss(u, v, { reduction = red, weight = w }) end,
      { a, b, pw })
    gradcheck("l1_loss " .. red, function(u, v) return F.l1_loss(u, v, { reduction = red }) end, { a, b })
    gradcheck("smooth_l1_loss " .. red, function(u, v) return F.smooth_l1_loss(u, v, { reduction = red, beta = 0.8 }) end,
      { a, b })
    gradcheck("huber_loss " .. red, function(u, v) return F.huber_loss(u, v, { reduction = red, delta = 0.6 }) end, { a, b })
    local p = rand(3, 4) * 0.9 + 0.05
    gradcheck("binary_cross_entropy " .. red, function(u, v, w)
      return F.binary_cross_entropy(u, v, { weight = w, reduction = red })
    end, { p, rand(3, 4), rand(3, 4) }, { const = { [3] = true } })
    gradcheck("binary_cross_entropy_with_logits " .. red, function(u, v, w, q)
      return F.binary_cross_entropy_with_logits(u, v, { weight = w, pos_weight = q, reduction = red })
    end, { a * 2, rand(3, 4), rand(3, 4), rand(4) * 2 })
  end
  gradcheck("binary_cross_entropy_with_logits large logits",
    function(u, v) return F.binary_cross_entropy_with_logits(u, v) end,
    { torch.tensor({ 40.0, -40.0, 3.0 }, f64), torch.tensor({ 0.3, 0.6, 1.0 }, f64) })
end)

T.test("the losses' autograd nodes carry PyTorch's names and link straight to their inputs", function()
  local x = torch.randn(2, 3, { requires_grad = true })
  local lin = x * 2
  local t = torch.rand(2, 3)
  local names = {
    { F.mse_loss(lin, t), "MseLossBackward0" },
    { F.mse_loss(lin, t, { reduction = "none" }), "MseLossBackward0" },
    { F.smooth_l1_loss(lin, t), "SmoothL1LossBackward0" },
    { F.smooth_l1_loss(lin, t, { beta = 0 }), "MeanBackward0" }, -- l1_loss, as PyTorch calls it then
    { F.huber_loss(lin, t), "HuberLossBackward0" },
    { F.l1_loss(lin, t), "MeanBackward0" },
    { F.binary_cross_entropy(lin:sigmoid(), t), "BinaryCrossEntropyBackward0" },
    { F.binary_cross_entropy_with_logits(lin, t, { pos_weight = torch.ones(3) }), "BinaryCrossEntropyWithLogitsBackward0" },
    { F.mse_loss(lin, t, { weight = torch.ones(2, 3) }), "DivBackward0" }, -- PyTorch's composite with weight
  }
  for i, c in ipairs(names) do
    T.eq(c[1].grad_fn:name(), c[2], "loss " .. i)
  end
  T.eq(names[1][1].grad_fn.next_functions[1][1]:name(), "MulBackward0", "MseLossBackward0 -> the input's node")
  -- a target that broadcasts: expanded first, as PyTorch's broadcast_tensors
  local xb = torch.randn(2, 1, { dtype = torch.float64, requires_grad = true })
  local tb = torch.rand(2, 3, { dtype = torch.float64 })
  local l = F.mse_loss(xb, tb)
  T.eq(l.grad_fn.next_functions[1][1]:name(), "ExpandBackward0")
  l:backward()
  local want = ((xb:detach():expand(2, 3) - tb) * 2 / 6):sum(1, true)
  T.check(torch.allclose(xb.grad, want), "the gradient sums over the broadcast dim")
end)

T.test("a loss node backward twice under retain_graph, and under create_graph", function()
  local f64 = { dtype = torch.float64 }
  for _, f in ipairs({ F.mse_loss, F.smooth_l1_loss, F.huber_loss, F.binary_cross_entropy_with_logits }) do
    local x = torch.randn(4, { dtype = torch.float64, requires_grad = true })
    local t = torch.rand(4, f64)
    local l = f(x, t)
    l:backward({ retain_graph = true })
    local g1 = x.grad:clone()
    l:backward()
    T.check(torch.allclose(x.grad, g1 * 2), "the second backward gives the same gradient")
    local g = torch.autograd.grad(f(x, t), { x }, nil, { create_graph = true })[1]
    T.check(g.requires_grad and torch.allclose(g, g1), "create_graph: the same gradient, differentiable")
  end
end)
