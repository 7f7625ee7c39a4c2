-- copy.deepcopy / copy.copy (Python's copy module): modules, tensors and tables.
local T = ...
local copy = require "copy"

T.test("a module's deep copy computes the same and shares nothing", function()
  torch.manual_seed(0)
  local Net = nn.Module:extend("CopyNet")
  function Net:__init()
    self.fc = nn.Linear(3, 4)
    self.bn = nn.BatchNorm1d(4)
    self.out = nn.Linear(4, 2)
    self:register_buffer("scratch", torch.zeros(2), false)
    self.factor = 3
    self.cfg = { widths = { 3, 4 } }
  end
  function Net:forward(x) return self.out(F.relu(self.bn(self.fc(x)))) * self.factor end
  local net = Net()
  net(torch.randn(8, 3)) -- running statistics move
  local c = copy.deepcopy(net)
  T.check(nn.isinstance(c, Net), "same class")
  local x = torch.randn(5, 3)
  net:eval(); c:eval()
  T.near(c(x):tolist(), net(x):tolist(), 0, "same output")
  local ka, kb = {}, {}
  for k in pairs(net:state_dict()) do ka[#ka + 1] = k end
  for k in pairs(c:state_dict()) do kb[#kb + 1] = k end
  T.eq(table.concat(kb, " "), table.concat(ka, " "), "state_dict keys in order (non-persistent left out)")
  T.check(nn.is_parameter(c.fc.weight) and c.fc.weight.requires_grad, "parameters stay parameters")
  T.check(not rawequal(c.fc.weight, net.fc.weight) and not rawequal(c.bn.running_mean, net.bn.running_mean), "new tensors")
  T.near(c.bn.running_mean:tolist(), net.bn.running_mean:tolist(), 0, "running_mean copied")
  T.check(c._non_persistent_buffers_set.scratch == true, "a non-persistent buffer stays one")
  T.check(c.factor == 3 and c.cfg.widths[2] == 4 and not rawequal(c.cfg, net.cfg), "attributes copied")
  c.fc.weight.data:add_(1)
  T.check((c.fc.weight - net.fc.weight):abs():max():item() == 1, "the original is untouched")
  c:train()
  T.check(c.training and not net.training, "modes apart")
end)

T.test("tied weights stay tied; gradients go to the copy's own", function()
  torch.manual_seed(1)
  local m = nn.Sequential(nn.Linear(4, 4, { bias = false }), nn.Linear(4, 4, { bias = false }))
  m[1].weight = m[0].weight
  local c = copy.deepcopy(m)
  T.check(rawequal(c[0].weight, c[1].weight), "one parameter in the copy too")
  T.eq(#c:parameters(), 1, "listed once")
  c(torch.randn(2, 4)):sum():backward()
  T.check(c[0].weight.grad ~= nil and m[0].weight.grad == nil, "the copy's parameter got the gradient")
  local ema = copy.deepcopy(m)
  do
    local _ <close> = torch.no_grad()
    for i, p in ipairs(ema:parameters()) do p:mul_(0.9):add_(m:parameters()[i], { alpha = 0.1 }) end
  end
  T.near(ema[0].weight:tolist(), m[0].weight:detach():tolist(), 1e-6, "an EMA copy updates in place")
end)

T.test("tensors and tables", function()
  local x = torch.tensor({ 1.0, 2.0 }):requires_grad_()
  ;(x * 3):sum():backward()
  local c = copy.deepcopy(x)
  T.check(c.requires_grad and c.grad_fn == nil and not rawequal(c, x), "a leaf that requires grad")
  T.eq(c.grad:tolist(), { 3.0, 3.0 }, ".grad copied")
  T.raises(function() copy.deepcopy(x * 2) end,
    "~Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.")
  local shared = torch.ones(2)
  local t = setmetatable({ a = shared, b = shared, nested = { shared, 5 } }, { __name = "Box" })
  local d = copy.deepcopy(t)
  T.check(rawequal(d.a, d.b) and rawequal(d.nested[1], d.a) and not rawequal(d.a, shared), "a value reached twice is copied once")
  T.check(getmetatable(d) == getmetatable(t), "the metatable is kept")
  local s = copy.copy(t)
  T.check(rawequal(s.a, shared) and not rawequal(s, t), "copy.copy is shallow")
  local od = nn.OrderedDict({ { "w", torch.ones(1) }, { "b", torch.zeros(1) } })
  local odc = copy.deepcopy(od)
  T.eq(table.concat(odc:keys(), " "), "w b", "an OrderedDict keeps its order")
  odc.w:add_(1)
  T.eq(od.w:item(), 1.0, "and its own tensors")
end)

T.test("a forward hook on the module runs on its copy", function()
  local m = nn.Linear(2, 2)
  local calls = 0
  m:register_forward_hook(function() calls = calls + 1 end)
  local c = copy.deepcopy(m)
  c(torch.randn(1, 2))
  T.eq(calls, 1, "the hook ran")
end)
