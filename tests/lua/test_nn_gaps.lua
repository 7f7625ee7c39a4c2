-- nn.TripletMarginWithDistanceLoss / F.triplet_margin_with_distance_loss, nn.AdaptiveLogSoftmaxWithLoss,
-- nn.InstanceNorm3d, nn.LazyConv1d / 2d / 3d and nn.LazyBatchNorm1d / 2d / 3d against loops over
-- plain Lua lists, PyTorch's defaults and state_dict keys, and their errors.
local T = ...
local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local gradcheck = dofile(here .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }

local function keys(m)
  local out = {}
  for k in pairs(m:state_dict()) do out[#out + 1] = k end
  table.sort(out)
  return out
end
local function shape(t) return t:size():totable() end
local function l2(a, b) -- PyTorch's pairwise_distance: ||a - b + eps||
  local s = 0
  for i = 1, #a do s = s + (a[i] - b[i] + 1e-6) ^ 2 end
  return math.sqrt(s)
end
local function log_softmax(v)
  local m = -math.huge
  for _, x in ipairs(v) do m = math.max(m, x) end
  local s = 0
  for _, x in ipairs(v) do s = s + math.exp(x - m) end
  local out = {}
  for i, x in ipairs(v) do out[i] = x - m - math.log(s) end
  return out
end
local function matvec(W, x) -- W a list of rows
  local out = {}
  for i, row in ipairs(W) do
    local s = 0
    for j = 1, #row do s = s + row[j] * x[j] end
    out[i] = s
  end
  return out
end

T.test("TripletMarginWithDistanceLoss against loops", function()
  torch.manual_seed(11)
  local a, p, n = torch.randn(4, 5, f64), torch.randn(4, 5, f64), torch.randn(4, 5, f64)
  local al, pl, nl = a:tolist(), p:tolist(), n:tolist()
  local function ref(dist, margin, swap)
    local out = {}
    for i = 1, 4 do
      local dn = dist(al[i], nl[i])
      if swap then dn = math.min(dn, dist(pl[i], nl[i])) end
      out[i] = math.max(margin + dist(al[i], pl[i]) - dn, 0)
    end
    return out
  end
  local L = nn.TripletMarginWithDistanceLoss()
  T.eq({ L.margin, L.swap, L.reduction }, { 1.0, false, "mean" }, "defaults")
  T.check(nn.isinstance(L.distance_function, nn.PairwiseDistance), "default distance: a PairwiseDistance submodule")
  T.eq(keys(L), {}, "no state")
  local r = ref(l2, 1.0, false)
  T.near(L(a, p, n):item(), (r[1] + r[2] + r[3] + r[4]) / 4, 1e-14, "mean, L2")
  local function cosd(x, y)
    local d, nx, ny = 0, 0, 0
    for i = 1, #x do d, nx, ny = d + x[i] * y[i], nx + x[i] ^ 2, ny + y[i] ^ 2 end
    return 1 - d / math.max(math.sqrt(nx * ny), 1e-8)
  end
  local cos = function(x, y) return 1 - F.cosine_similarity(x, y) end
  local L2 = nn.TripletMarginWithDistanceLoss({ distance_function = cos, margin = 0.5, swap = true, reduction = "none" })
  T.near(L2(a, p, n):tolist(), ref(cosd, 0.5, true), 1e-14, "custom distance, swap, none")
  local s = F.triplet_margin_with_distance_loss(a, p, n, { margin = 2.0, reduction = "sum" }):item()
  local r2 = ref(l2, 2.0, false)
  T.near(s, r2[1] + r2[2] + r2[3] + r2[4], 1e-14, "F form, sum")
  gradcheck("triplet_margin_with_distance_loss", function(x, y, z)
    return F.triplet_margin_with_distance_loss(x, y, z, { margin = 3.0, swap = true, reduction = "none" })
  end, { a, p, n })
  T.raises(function() nn.TripletMarginWithDistanceLoss({ margin = 0 }) end,
    "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got 0 instead")
  T.raises(function() F.triplet_margin_with_distance_loss(a, p, n, { margin = -1 }) end,
    "triplet_margin_with_distance_loss: expected margin to be greater than 0, got -1 instead")
  T.raises(function() F.triplet_margin_with_distance_loss(a, p[0], n) end,
    "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: anchor 2D, positive 1D, and negative 2D inputs")
  T.raises(function() nn.TripletMarginWithDistanceLoss({ reduction = "avg" }) end, "avg is not a valid value for reduction")
end)

T.test("AdaptiveLogSoftmaxWithLoss against loops", function()
  torch.manual_seed(12)
  local m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, { 3, 6 }, { div_value = 2.0, dtype = torch.float64 })
  T.eq({ m.shortlist_size, m.n_clusters, m.head_size, m.cutoffs, m.div_value, m.head_bias }, { 3, 2, 5, { 3, 6, 10 }, 2.0, false }, "attributes")
  T.eq(keys(m), { "head.weight", "tail.0.0.weight", "tail.0.1.weight", "tail.1.0.weight", "tail.1.1.weight" }, "state_dict keys")
  T.eq({ shape(m.head.weight), shape(m.tail[0][0].weight), shape(m.tail[0][1].weight), shape(m.tail[1][0].weight),
    shape(m.tail[1][1].weight) }, { { 5, 8 }, { 4, 8 }, { 3, 4 }, { 2, 8 }, { 4, 2 } }, "shapes: in // div^i, cluster sizes")
  T.eq(keys(nn.AdaptiveLogSoftmaxWithLoss(8, 10, { 3 }, { head_bias = true })), { "head.bias", "head.weight", "tail.0.0.weight", "tail.0.1.weight" }, "head_bias, default div_value 4")
  -- the reference: log p(c | x) for every class, from the weights
  local H = m.head.weight:tolist()
  local tails = { { m.tail[0][0].weight:tolist(), m.tail[0][1].weight:tolist() }, { m.tail[1][0].weight:tolist(), m.tail[1][1].weight:tolist() } }
  local cut = { 0, 3, 6, 10 }
  local function ref_logprob(x)
    local head = log_softmax(matvec(H, x))
    local out = {}
    for c = 1, 3 do out[c] = head[c] end
    for k = 1, 2 do
      local lp = log_softmax(matvec(tails[k][2], matvec(tails[k][1], x)))
      for j = 1, cut[k + 2] - cut[k + 1] do out[cut[k + 1] + j] = head[3 + k] + lp[j] end
    end
    return out
  end
  local x = torch.randn(6, 8, f64)
  local t = torch.tensor({ 0, 4, 9, 2, 7, 5 })
  local xl, tl = x:tolist(), t:tolist()
  local want, all, best = {}, {}, {}
  local mean = 0
  for i = 1, 6 do
    all[i] = ref_logprob(xl[i])
    want[i] = all[i][tl[i] + 1]
    mean = mean - want[i] / 6
    local b = 1
    for c = 2, 10 do if all[i][c] > all[i][b] then b = c end end
    best[i] = b - 1
  end
  local out, loss = m(x, t)
  T.near(out:tolist(), want, 1e-13, "output: the target's log-probability")
  T.near(loss:item(), mean, 1e-13, "loss: the negated mean")
  T.near(m:log_prob(x):tolist(), all, 1e-13, "log_prob")
  T.near(m:log_prob(x):exp():sum(1):tolist(), { 1, 1, 1, 1, 1, 1 }, 1e-13, "probabilities sum to 1")
  T.eq(m:predict(x):tolist(), best, "predict: the most likely class")
  local o1, l1 = m(x[1], torch.tensor(4))
  T.eq(o1:dim(), 0, "unbatched: a 0-d output")
  T.near({ o1:item(), l1:item() }, { want[2], -want[2] }, 1e-13, "unbatched values")
  T.near(m:log_prob(x[2]):tolist(), all[3], 1e-13, "unbatched log_prob")
  gradcheck("adaptive log softmax", function(inp) local _, l = m(inp, t); return l end, { x })
  local xs = x:clone():requires_grad_()
  local _, l = m(xs, t)
  l:backward()
  T.check(m.tail[1][1].weight.grad ~= nil and m.head.weight.grad ~= nil, "gradients reach the head and the tails")
  T.raises(function() m(x, torch.tensor({ 0, 1, 2, 3, 4, 10 })) end, "Target values should be in [0, 9], but values in range [0, 10] were found. ")
  T.raises(function() m(x, torch.tensor({ 0, 1 })) end, "Input and target should have the same size in the batch dimension.")
  T.raises(function() m(x[0], torch.tensor({ 1 })) end, "Input and target should have the same size in the batch dimension.")
  T.raises(function() m(x, torch.tensor(1)) end, "0D target tensor expects 1D input tensors, but found inputs with size [6, 8]")
  T.raises(function() m(x, torch.zeros(6, 2, { dtype = torch.int64 })) end, "0D or 1D target tensor expected, multi-target not supported")
  for _, bad in ipairs({ { 3, 3 }, { 6, 3 }, { 0, 3 }, { 3, 10 }, { 2.5 } }) do
    T.raises(function() nn.AdaptiveLogSoftmaxWithLoss(8, 10, bad) end, "~cutoffs should be a sequence of unique, positive integers sorted in an increasing order")
  end
end)

T.test("InstanceNorm3d against loops", function()
  torch.manual_seed(13)
  local m = nn.InstanceNorm3d(3, { affine = true, dtype = torch.float64 })
  T.eq({ m.eps, m.momentum, m.affine, m.track_running_stats }, { 1e-5, 0.1, true, false }, "affine as asked, no running statistics by default")
  T.eq(keys(nn.InstanceNorm3d(3)), {}, "no affine, no state by default")
  T.eq(keys(m), { "bias", "weight" }, "affine keys")
  m.weight.data:copy_(torch.tensor({ 1.5, -0.5, 2.0 }, f64))
  m.bias.data:copy_(torch.tensor({ 0.1, 0.2, -0.3 }, f64))
  local x = torch.randn(2, 3, 2, 3, 2, f64)
  local xl, yl = x:tolist(), m(x):tolist()
  local w, b = { 1.5, -0.5, 2.0 }, { 0.1, 0.2, -0.3 }
  local worst = 0
  for n = 1, 2 do
    for c = 1, 3 do
      local vals = {}
      for d = 1, 2 do for h = 1, 3 do for k = 1, 2 do vals[#vals + 1] = xl[n][c][d][h][k] end end end
      local mean, var = 0, 0
      for _, v in ipairs(vals) do mean = mean + v / #vals end
      for _, v in ipairs(vals) do var = var + (v - mean) ^ 2 / #vals end
      for d = 1, 2 do for h = 1, 3 do for k = 1, 2 do
        local want = (xl[n][c][d][h][k] - mean) / math.sqrt(var + 1e-5) * w[c] + b[c]
        worst = math.max(worst, math.abs(yl[n][c][d][h][k] - want))
      end end end
    end
  end
  T.check(worst < 1e-13, "per sample and channel, biased variance, affine (worst " .. worst .. ")")
  T.near(m(x[1]):tolist(), m(x):tolist()[2], 1e-14, "unbatched 4-D input")
  local r = nn.InstanceNorm3d(3, { track_running_stats = true, dtype = torch.float64 })
  r(x)
  local mean = x:mean({ 2, 3, 4 }):mean(0)
  T.near(r.running_mean:tolist(), (mean * 0.1):tolist(), 1e-14, "running mean: momentum 0.1 towards the batch's instance means")
  T.eq(r.num_batches_tracked:item(), 1, "num_batches_tracked")
  T.raises(function() m(torch.randn(2, 3, 4)) end, "expected 4D or 5D input (got 3D input)")
  T.raises(function() m(torch.randn(2, 3, 4, 4, f64)) end, "expected input's size at dim=0 to match num_features (3), but got: 2.")
end)

T.test("LazyConv1d / 2d / 3d: shapes after the first call, the concrete class, errors", function()
  torch.manual_seed(14)
  local c = nn.LazyConv2d(6, 3, { padding = 1, groups = 2 })
  T.eq(keys(c), {}, "no parameters before the first call")
  T.check(c:has_uninitialized_params(), "uninitialized")
  local x = torch.randn(2, 4, 5, 5, f64)
  local y = c(x)
  T.eq(shape(c.weight), { 6, 2, 3, 3 }, "weight [out, in / groups, k, k]")
  T.eq(shape(c.bias), { 6 }, "bias")
  T.check(c.weight.dtype == torch.float64, "the input's dtype")
  T.check(nn.isinstance(c, nn.Conv2d) and tostring(c):find("^Conv2d%(4, 6") ~= nil, "now an nn.Conv2d: " .. tostring(c))
  T.eq(c.in_channels, 4, "in_channels from the input")
  T.eq(keys(c), { "bias", "weight" }, "state_dict keys")
  T.near(y:tolist(), F.conv2d(x, c.weight, c.bias, 1, 1, 1, 2):tolist(), 1e-13, "the same as F.conv2d with its weights")
  local bound = 1 / math.sqrt(2 * 9)
  T.check(c.weight:abs():max():item() <= bound and c.weight:abs():max():item() > bound / 2, "Conv2d's kaiming_uniform(a=sqrt 5) init")
  local c1 = nn.LazyConv1d(4, 3, { bias = false })
  local y1 = c1(torch.randn(3, 7))
  T.eq({ shape(c1.weight), shape(y1), c1.bias == nil }, { { 4, 3, 3 }, { 4, 5 }, true }, "LazyConv1d, unbatched [C, L], no bias")
  T.check(nn.isinstance(c1, nn.Conv1d), "now an nn.Conv1d")
  local c3 = nn.LazyConv3d(2, 2, { stride = 2 })
  local y3 = c3(torch.randn(1, 3, 4, 4, 4))
  T.eq({ shape(c3.weight), shape(y3) }, { { 2, 3, 2, 2, 2 }, { 1, 2, 2, 2, 2 } }, "LazyConv3d")
  T.raises(function() nn.LazyConv2d(4, 3)(torch.randn(5)) end, "Expected 3D (unbatched) or 4D (batched) input to LazyConv2d, but got input of size: [5]")
  T.raises(function() nn.LazyConv2d(4, 3, { groups = 3 })(torch.randn(1, 4, 5, 5)) end, "in_channels must be divisible by groups")
  T.raises(function() nn.LazyConv1d() end, "~out_channels")
end)

T.test("LazyBatchNorm1d / 2d / 3d", function()
  torch.manual_seed(15)
  local b = nn.LazyBatchNorm1d()
  T.eq({ b.eps, b.momentum, b.affine, b.track_running_stats }, { 1e-5, 0.1, true, true }, "BatchNorm's defaults")
  T.eq(keys(b), { "num_batches_tracked" }, "before the first call: only num_batches_tracked")
  local x = torch.randn(8, 5, f64)
  local y = b(x)
  T.eq({ b.num_features, shape(b.weight), shape(b.bias), shape(b.running_mean), shape(b.running_var) }, { 5, { 5 }, { 5 }, { 5 }, { 5 } }, "num_features from dim 1")
  T.eq(keys(b), { "bias", "num_batches_tracked", "running_mean", "running_var", "weight" }, "BatchNorm's keys")
  T.check(nn.isinstance(b, nn.BatchNorm1d), "now an nn.BatchNorm1d")
  T.eq(b.num_batches_tracked:item(), 1, "the first call counts")
  local xl, yl = x:tolist(), y:tolist()
  local worst = 0
  for c = 1, 5 do
    local mean, var = 0, 0
    for n = 1, 8 do mean = mean + xl[n][c] / 8 end
    for n = 1, 8 do var = var + (xl[n][c] - mean) ^ 2 / 8 end
    for n = 1, 8 do worst = math.max(worst, math.abs(yl[n][c] - (xl[n][c] - mean) / math.sqrt(var + 1e-5))) end
    T.near(b.running_mean:tolist()[c], 0.1 * mean, 1e-14, "running mean " .. c)
    T.near(b.running_var:tolist()[c], 0.9 + 0.1 * var * 8 / 7, 1e-14, "running var (unbiased) " .. c)
  end
  T.check(worst < 1e-12, "normalised with the batch statistics")
  local b2 = nn.LazyBatchNorm2d({ affine = false, momentum = 0.5 })
  b2(torch.randn(2, 3, 4, 4))
  T.eq({ b2.num_features, b2.weight == nil, b2.momentum }, { 3, true, 0.5 }, "LazyBatchNorm2d, no affine")
  T.check(nn.isinstance(b2, nn.BatchNorm2d), "now an nn.BatchNorm2d")
  local b3 = nn.LazyBatchNorm3d({ track_running_stats = false })
  b3(torch.randn(2, 4, 2, 2, 2))
  T.eq({ b3.num_features, keys(b3) }, { 4, { "bias", "weight" } }, "LazyBatchNorm3d without running statistics")
  T.raises(function() nn.LazyBatchNorm2d()(torch.randn(5, 3)) end, "expected 4D input (got 2D input)")
  T.raises(function() nn.LazyBatchNorm1d({ foo = 1 }) end, "~foo")
end)
