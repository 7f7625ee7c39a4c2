-- ParameterList / ParameterDict, padding modules, padding_mode, InstanceNorm and Bilinear
-- against values worked out in plain Lua; gradients by central differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }

T.test("ParameterList and ParameterDict", function()
  local pl = nn.ParameterList({ torch.ones(3, 4), torch.zeros(2) })
  T.eq(#pl, 2, "length")
  T.check(nn.is_parameter(pl[0]) and pl[0].requires_grad, "tensors become parameters")
  T.eq(pl[-1]:size(), torch.Size({ 2 }), "negative index")
  pl:append(torch.full({ 5 }, 2.0))
  local seen = {}
  for i, p in pairs(pl) do seen[#seen + 1] = i .. ":" .. p:numel() end
  T.eq(table.concat(seen, " "), "0:12 1:2 2:5", "pairs from 0, in order")
  pl[1] = torch.ones(7)
  T.eq(pl[1]:numel(), 7, "setitem")
  T.raises(function() return pl[3] end, "index 3 is out of range")
  local Net = nn.Module:extend("PNet")
  function Net:__init()
    self.ws = nn.ParameterList({ torch.ones(2), torch.ones(3) })
    self.named = nn.ParameterDict({ { "scale", torch.ones(1) }, { "shift", torch.zeros(1) } })
  end
  function Net:forward(x) return x * self.named.scale + self.named.shift + self.ws[0]:sum() end
  local net = Net()
  local keys = {}
  for k in pairs(net:state_dict()) do keys[#keys + 1] = k end
  T.eq(table.concat(keys, " "), "ws.0 ws.1 named.scale named.shift", "state_dict keys")
  T.eq(#net:parameters(), 4, "parameters")
  net(torch.ones(3)):sum():backward()
  T.eq(net.named.scale.grad:tolist(), { 3.0 }, "gradients reach them")
  local pd = nn.ParameterDict({ b = torch.ones(2), a = torch.ones(1) })
  T.eq(table.concat(pd:keys(), " "), "a b", "a plain table's keys sorted")
  T.check(pd:contains("a") and #pd == 2, "contains, length")
  pd:update({ { "c", torch.ones(3) } })
  T.eq(pd:pop("a"):numel(), 1, "pop")
  T.eq(table.concat(pd:keys(), " "), "b c", "after update and pop")
  T.eq(tostring(nn.ParameterList({ torch.ones(2, 3) })), "ParameterList(\n    (0): Parameter containing: [torch.float32 of size 2x3]\n)", "repr")
end)

T.test("padding modules and padding_mode", function()
  local x = torch.tensor({ { { 1.0, 2.0, 3.0 } } })
  T.eq(nn.ReflectionPad1d(2)(x):tolist(), { { { 3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0 } } }, "ReflectionPad1d")
  T.eq(nn.ReplicationPad1d({ 1, 2 })(x):tolist(), { { { 1.0, 1.0, 2.0, 3.0, 3.0, 3.0 } } }, "ReplicationPad1d")
  T.eq(nn.CircularPad1d(1)(x):tolist(), { { { 3.0, 1.0, 2.0, 3.0, 1.0 } } }, "CircularPad1d")
  T.eq(nn.ConstantPad1d(1, -1)(x):tolist(), { { { -1.0, 1.0, 2.0, 3.0, -1.0 } } }, "ConstantPad1d")
  local y = torch.arange(4, { dtype = torch.float32 }):view(1, 1, 2, 2)
  T.eq(nn.ZeroPad2d({ 1, 0, 0, 1 })(y):tolist(), { { { { 0.0, 0.0, 1.0 }, { 0.0, 2.0, 3.0 }, { 0.0, 0.0, 0.0 } } } }, "ZeroPad2d")
  T.eq(tostring(nn.ReflectionPad2d(1)), "ReflectionPad2d((1, 1, 1, 1))", "repr")
  T.eq(tostring(nn.ConstantPad2d(1, 3.5)), "ConstantPad2d(padding=(1, 1, 1, 1), value=3.5)", "repr with value")
  torch.manual_seed(101)
  for _, mode in ipairs({ "reflect", "replicate", "circular" }) do
    local conv = nn.Conv2d(2, 3, 3, { padding = 1, padding_mode = mode, dtype = torch.float64 })
    local img = torch.randn(1, 2, 5, 6, f64)
    local want = F.conv2d(F.pad(img, { 1, 1, 1, 1 }, mode), conv.weight, conv.bias)
    T.near(conv(img):tolist(), want:tolist(), 1e-12, "Conv2d padding_mode=" .. mode)
    local c1 = nn.Conv1d(2, 3, 3, { padding = "same", padding_mode = mode, dtype = torch.float64 })
    local seq = torch.randn(1, 2, 7, f64)
    T.near(c1(seq):tolist(), F.conv1d(F.pad(seq, { 1, 1 }, mode), c1.weight, c1.bias):tolist(), 1e-12, "Conv1d padding_mode=" .. mode)
  end
end)

T.test("InstanceNorm against per-instance statistics", function()
  torch.manual_seed(102)
  local x = torch.randn(2, 3, 4, 5, f64)
  local m = nn.InstanceNorm2d(3, { affine = true, track_running_stats = true, dtype = torch.float64 })
  m.weight.data:copy_(torch.tensor({ 1.0, 2.0, 0.5 }))
  m.bias.data:copy_(torch.tensor({ 0.0, -1.0, 3.0 }))
  local y = m(x)
  local xs = x:tolist()
  local ok, means, vars = true, { 0, 0, 0 }, { 0, 0, 0 }
  for n = 1, 2 do for c = 1, 3 do
    local s, s2, k = 0, 0, 0
    for h = 1, 4 do for w = 1, 5 do s = s + xs[n][c][h][w]; k = k + 1 end end
    local mean = s / k
    for h = 1, 4 do for w = 1, 5 do s2 = s2 + (xs[n][c][h][w] - mean) ^ 2 end end
    local var = s2 / k
    means[c], vars[c] = means[c] + mean / 2, vars[c] + s2 / (k - 1) / 2
    local wv, bv = ({ 1.0, 2.0, 0.5 })[c], ({ 0.0, -1.0, 3.0 })[c]
    for h = 1, 4 do for w = 1, 5 do
      local want = (xs[n][c][h][w] - mean) / math.sqrt(var + 1e-5) * wv + bv
      ok = ok and math.abs(y[n - 1][c - 1][h - 1][w - 1]:item() - want) < 1e-10
    end end
  end end
  T.check(ok, "normalised per sample and channel, then the affine")
  T.near(m.running_mean:tolist(), { means[1] * 0.1, means[2] * 0.1, means[3] * 0.1 }, 1e-12, "running_mean")
  T.near(m.running_var:tolist(), { 0.9 + vars[1] * 0.1, 0.9 + vars[2] * 0.1, 0.9 + vars[3] * 0.1 }, 1e-12, "running_var (unbiased)")
  m:eval()
  local e = m(x)
  local want = (x - m.running_mean:view(1, 3, 1, 1)) / (m.running_var:view(1, 3, 1, 1) + 1e-5):sqrt() * m.weight:view(1, 3, 1, 1)
    + m.bias:view(1, 3, 1, 1)
  T.near(e:tolist(), want:detach():tolist(), 1e-12, "eval uses the running statistics")
  T.eq(nn.InstanceNorm1d(4)(torch.randn(4, 6)):size(), torch.Size({ 4, 6 }), "unbatched 1-d")
  gradcheck("instance_norm", function(t) return F.instance_norm(t) end, { torch.randn(2, 2, 5, f64) })
end)

T.test("Bilinear against the sum", function()
  torch.manual_seed(103)
  local b = nn.Bilinear(3, 2, 4, { dtype = torch.float64 })
  local x1, x2 = torch.randn(5, 3, f64), torch.randn(5, 2, f64)
  local y = b(x1, x2)
  local W, bias, a, c = b.weight:tolist(), b.bias:tolist(), x1:tolist(), x2:tolist()
  local want = {}
  for n = 1, 5 do
    want[n] = {}
    for o = 1, 4 do
      local s = bias[o]
      for i = 1, 3 do for j = 1, 2 do s = s + a[n][i] * W[o][i][j] * c[n][j] end end
      want[n][o] = s
    end
  end
  T.near(y:tolist(), want, 1e-12, "x1 A x2 + b")
  T.eq(tostring(b), "Bilinear(in1_features=3, in2_features=2, out_features=4, bias=True)", "repr")
  gradcheck("bilinear", function(u, v, w) return F.bilinear(u, v, w) end, { torch.randn(2, 3, f64), torch.randn(2, 2, f64), torch.randn(4, 3, 2, f64) })
end)
