-- nn.init and the layers' default initialisation: statistics on large tensors
-- (mean, std, bounds within tolerance) and exact properties (eye_, orthogonal_).
local T = ...

local function stats(t)
  local f = t:double()
  return f:mean():item(), f:std():item(), f:min():item(), f:max():item()
end

-- U(-b, b): every value inside, std b / sqrt(3), mean 0
local function check_uniform(t, b, name)
  local mean, std, lo, hi = stats(t)
  T.check(lo >= -b and hi <= b, string.format("%s: values in [-%g, %g] (got [%g, %g])", name, b, b, lo, hi))
  T.check(hi > 0.95 * b and lo < -0.95 * b, name .. ": values reach the bounds")
  T.near(std, b / math.sqrt(3), 0.03 * b, name .. ": std")
  T.near(mean, 0, 0.03 * b, name .. ": mean")
end

local function check_normal(t, m, s, name)
  local mean, std = stats(t)
  T.near(mean, m, 0.03 * s, name .. ": mean")
  T.near(std, s, 0.03 * s, name .. ": std")
end

T.test("default initialisation of the layers", function()
  local l = nn.Linear(1000, 400)
  check_uniform(l.weight, 1 / math.sqrt(1000), "Linear weight")
  local bias = nn.Linear(1000, 20000).bias
  check_uniform(bias, 1 / math.sqrt(1000), "Linear bias")
  local c = nn.Conv2d(64, 128, 3)
  check_uniform(c.weight, 1 / math.sqrt(64 * 9), "Conv2d weight")
  check_uniform(nn.Conv2d(8, 20000, 3).bias, 1 / math.sqrt(72), "Conv2d bias")
  check_uniform(nn.Conv2d(8, 64, 3, { groups = 4 }).weight, 1 / math.sqrt(2 * 9), "grouped Conv2d uses in_channels/groups")
  check_normal(nn.Embedding(1000, 100).weight, 0, 1, "Embedding N(0, 1)")
  for _, m in ipairs({ nn.BatchNorm2d(5), nn.LayerNorm(5), nn.GroupNorm(1, 5) }) do
    T.eq(m.weight:tolist(), { 1.0, 1.0, 1.0, 1.0, 1.0 }, m:_get_name() .. " weight is ones")
    T.eq(m.bias:tolist(), { 0.0, 0.0, 0.0, 0.0, 0.0 }, m:_get_name() .. " bias is zeros")
  end
  local bn = nn.BatchNorm1d(3)
  T.eq({ bn.running_mean:tolist(), bn.running_var:tolist(), bn.num_batches_tracked:item() },
    { { 0.0, 0.0, 0.0 }, { 1.0, 1.0, 1.0 }, 0 }, "BatchNorm running stats")
  T.check(l.weight.requires_grad and l.weight.grad_fn == nil, "initialised parameters are leaves")
end)

T.test("calculate_gain", function()
  local g = nn.init.calculate_gain
  T.near({ g("linear"), g("conv2d"), g("sigmoid"), g("tanh"), g("relu"), g("leaky_relu"), g("selu"), g("leaky_relu", 0.2) },
    { 1, 1, 1, 1.6666666666666667, 1.4142135623730951, 1.4141428569978354, 0.75, 1.3867504905630728 }, 1e-12,
    "gains as PyTorch")
  T.raises(function() g("foo") end, "Unsupported nonlinearity foo")
end)

T.test("uniform_, normal_, constant_, zeros_, ones_, eye_", function()
  local t = torch.empty(500, 400)
  T.check(rawequal(nn.init.uniform_(t, -2, 3), t), "returns the tensor")
  local mean, std, lo, hi = stats(t)
  T.check(lo >= -2 and hi <= 3, "uniform_ bounds")
  T.near(mean, 0.5, 0.02, "uniform_ mean")
  T.near(std, 5 / math.sqrt(12), 0.02, "uniform_ std")
  nn.init.uniform_(t)
  mean = stats(t)
  T.near(mean, 0.5, 0.01, "uniform_ default U(0, 1)")
  nn.init.normal_(t, { mean = 1, std = 2 })
  check_normal(t, 1, 2, "normal_(mean=1, std=2)")
  nn.init.constant_(t, 0.25)
  T.eq({ t:min():item(), t:max():item() }, { 0.25, 0.25 }, "constant_")
  nn.init.zeros_(t)
  T.eq(t:abs():sum():item(), 0.0, "zeros_")
  nn.init.ones_(t)
  T.eq(t:sum():item(), 200000.0, "ones_")
  local e = torch.empty(3, 4)
  nn.init.eye_(e)
  T.eq(e:tolist(), { { 1.0, 0.0, 0.0, 0.0 }, { 0.0, 1.0, 0.0, 0.0 }, { 0.0, 0.0, 1.0, 0.0 } }, "eye_")
  T.raises(function() nn.init.eye_(torch.zeros(3, 3, 3)) end, "Only tensors with 2 dimensions are supported")
  local tn = torch.empty(100000)
  nn.init.trunc_normal_(tn, { std = 1, a = -1, b = 1.5 })
  local _, _, tlo, thi = stats(tn)
  T.check(tlo >= -1 and thi <= 1.5, "trunc_normal_ within [a, b]")
  -- on a Parameter: in place, no history
  local p = nn.Parameter(torch.zeros(3))
  nn.init.normal_(p)
  T.check(p.requires_grad and p.grad_fn == nil and p:abs():sum():item() > 0, "works on parameters under no_grad")
end)

T.test("xavier and kaiming", function()
  local t = torch.empty(300, 200)
  nn.init.xavier_uniform_(t, 2)
  check_uniform(t, 2 * math.sqrt(6 / 500), "xavier_uniform_(gain=2)")
  nn.init.xavier_normal_(t)
  check_normal(t, 0, math.sqrt(2 / 500), "xavier_normal_")
  local w = torch.empty(64, 32, 3, 3) -- fan_in 288, fan_out 576
  nn.init.kaiming_uniform_(w, { nonlinearity = "relu" })
  check_uniform(w, math.sqrt(2) * math.sqrt(3 / 288), "kaiming_uniform_(relu)")
  nn.init.kaiming_uniform_(w, math.sqrt(5))
  check_uniform(w, 1 / math.sqrt(288), "kaiming_uniform_(a=sqrt(5))")
  nn.init.kaiming_normal_(w, { mode = "fan_out", nonlinearity = "relu" })
  check_normal(w, 0, math.sqrt(2 / 576), "kaiming_normal_(fan_out, relu)")
  nn.init.kaiming_normal_(w, 0.2, "fan_in", "leaky_relu")
  check_normal(w, 0, math.sqrt(2 / (1 + 0.04)) / math.sqrt(288), "kaiming_normal_(a=0.2)")
  T.raises(function() nn.init.kaiming_uniform_(torch.zeros(3)) end,
    "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
  T.raises(function() nn.init.kaiming_uniform_(torch.zeros(3, 3), { mode = "fan" }) end,
    "Mode fan not supported, please use one of ['fan_in', 'fan_out']")
end)

T.test("orthogonal_", function()
  local function gram(a) return a:matmul(a:t()):double() end
  local function max_off_identity(g, scale)
    return g:sub(torch.eye(g:size(0), { dtype = torch.float64 }):mul(scale)):abs():max():item()
  end
  local tall = torch.empty(50, 20)
  T.check(rawequal(nn.init.orthogonal_(tall), tall), "returns the tensor")
  T.check(max_off_identity(gram(tall:t()), 1) < 1e-5, "tall: columns orthonormal (W^T W = I)")
  local wide = torch.empty(20, 50)
  nn.init.orthogonal_(wide)
  T.check(max_off_identity(gram(wide), 1) < 1e-5, "wide: rows orthonormal (W W^T = I)")
  local sq = torch.empty(16, 16, { dtype = torch.float64 })
  nn.init.orthogonal_(sq, 2)
  T.check(max_off_identity(gram(sq), 4) < 1e-10, "gain scales: W W^T = gain^2 I")
  T.check(max_off_identity(gram(sq:t()), 4) < 1e-10, "square: both ways")
  local conv = torch.empty(8, 2, 3, 3)
  nn.init.orthogonal_(conv)
  T.check(max_off_identity(gram(conv:view(8, 18)), 1) < 1e-5, "higher dims are flattened to [rows, rest]")
  T.raises(function() nn.init.orthogonal_(torch.zeros(3)) end, "Only tensors with 2 or more dimensions are supported")
end)
