-- nn.Module: classes, registration order, traversal, state_dict and
-- load_state_dict (PyTorch 2.11's messages), modes, zero_grad, apply, conversion,
-- hooks and printing.
local T = ...

local Net = nn.Module:extend("Net")
function Net:__init()
  self.conv1 = nn.Conv2d(1, 4, 3)
  self.act = nn.ReLU()
  self.fc = nn.Linear(4, 2)
end
function Net:forward(x)
  x = self.act(self.conv1(x))
  x = x:mean(-1):mean(-1)
  return self.fc(x)
end

local function keys(sd)
  local out = {}
  for k in pairs(sd) do out[#out + 1] = k end
  return out
end

local function count(params)
  local n = 0
  for _, p in ipairs(params) do n = n + p:numel() end
  return n
end

T.test("classes and construction", function()
  local m = Net()
  T.eq(m:_get_name(), "Net", "class name")
  T.eq(tostring(Net), "<class 'Net'>", "class prints")
  T.check(Net.super == nn.Module, "super is the parent class")
  T.check(m:isinstance(Net) and m:isinstance(nn.Module) and not m:isinstance(nn.Linear), "isinstance")
  T.check(nn.isinstance(m.fc, nn.Linear) and nn.isinstance(m.fc.weight, nn.Parameter), "nn.isinstance")
  T.check(not nn.isinstance(torch.zeros(1), nn.Parameter), "a plain tensor is not a Parameter")
  T.eq(m.training, true, "training by default")
  -- a subclass with no __init inherits its parent's; one that calls super
  local Sub = Net:extend("Sub")
  local s = Sub()
  T.eq(s:state_dict():keys(), { "conv1.weight", "conv1.bias", "fc.weight", "fc.bias" }, "inherited __init")
  local Sub2 = Net:extend("Sub2")
  function Sub2:__init(n)
    Sub2.super.__init(self)
    self.extra = nn.Linear(2, n)
  end
  T.eq(Sub2(5).extra.out_features, 5, "super.__init then own fields")
  -- no super call: the base state exists anyway
  local Bare = nn.Module:extend("Bare")
  function Bare:__init() self.w = nn.Parameter(torch.ones(2)) end
  T.eq(#Bare():parameters(), 1, "registration without calling super.__init")
  -- subclassing a layer
  local MyLinear = nn.Linear:extend("MyLinear")
  function MyLinear:forward(x) return nn.Linear.forward(self, x) * 2 end
  local ml = MyLinear(3, 2)
  T.eq(tostring(ml), "MyLinear(in_features=3, out_features=2, bias=True)", "a layer subclass prints its name")
  T.eq(ml(torch.ones(1, 3)):tolist(), (nn.Linear.forward(ml, torch.ones(1, 3)) * 2):tolist(), "overridden forward")
  -- calling an instance is forward
  local x = torch.randn(2, 1, 5, 5)
  T.eq(m(x):tolist(), m:forward(x):tolist(), "model(x) == model:forward(x)")
  T.raises(function() return nn.Module()(torch.zeros(1)) end, 'Module [Module] is missing the required "forward" function')
end)

T.test("registration order and state_dict keys", function()
  local m = Net()
  T.eq(keys(m:state_dict()), { "conv1.weight", "conv1.bias", "fc.weight", "fc.bias" }, "pairs follows registration order")
  T.eq(m:state_dict():keys(), { "conv1.weight", "conv1.bias", "fc.weight", "fc.bias" }, "sd:keys()")
  local names = {}
  for name, p in m:named_parameters() do names[#names + 1] = name; T.check(nn.is_parameter(p), name .. " is a Parameter") end
  T.eq(names, { "conv1.weight", "conv1.bias", "fc.weight", "fc.bias" }, "named_parameters iterates in order")
  local list = m:named_parameters()
  T.eq(#list, 4, "named_parameters is also a list")
  T.eq(list[3][1], "fc.weight", "list entries are {name, param}")
  T.check(rawequal(list[3][2], m.fc.weight), "the same Parameter object")
  -- reassigning keeps the position; nil removes; a new name goes last
  m.conv1 = nn.Conv2d(1, 4, 3, { bias = false })
  T.eq(m:state_dict():keys(), { "conv1.weight", "fc.weight", "fc.bias" }, "replaced module keeps its slot")
  m.fc = nil
  T.eq(m:state_dict():keys(), { "conv1.weight" }, "nil removes a module")
  T.eq(m.fc, nil, "removed module is gone")
  m.fc = nn.Linear(4, 2)
  m.scale = nn.Parameter(torch.ones(1))
  T.eq(m:state_dict():keys(), { "scale", "conv1.weight", "fc.weight", "fc.bias" }, "own parameters first, then children")
  m.scale = nil
  T.eq(#m:parameters(), 3, "nil removes a parameter")
  -- plain values are attributes, not registered
  m.hidden = 7
  m.cache = torch.zeros(3)
  T.eq(m.hidden, 7, "plain attribute")
  T.eq(#m:state_dict():keys(), 3, "a plain tensor attribute is not in the state_dict")
  -- nested containers
  local Deep = nn.Module:extend("Deep")
  function Deep:__init()
    self.features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
    self.layers = nn.ModuleList({ nn.Linear(8, 8), nn.Linear(8, 2) })
    self.heads = nn.ModuleDict({ { "cls", nn.Linear(2, 3) } })
  end
  T.eq(Deep():state_dict():keys(), {
    "features.0.weight", "features.0.bias", "features.1.weight", "features.1.bias", "features.1.running_mean",
    "features.1.running_var", "features.1.num_batches_tracked", "layers.0.weight", "layers.0.bias",
    "layers.1.weight", "layers.1.bias", "heads.cls.weight", "heads.cls.bias",
  }, "nested keys as PyTorch")
  local mods = {}
  for name in Deep():named_modules() do mods[#mods + 1] = name end
  T.eq(mods, { "", "features", "features.0", "features.1", "features.2", "layers", "layers.0", "layers.1", "heads",
    "heads.cls" }, "named_modules order")
end)

T.test("parameters, buffers, children", function()
  local mlp = nn.Sequential(nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))
  T.eq(#mlp:parameters(), 4, "four parameter tensors")
  T.eq(count(mlp:parameters()), 25450, "Linear(784,32)+Linear(32,10) has 25,450 parameters")
  T.eq(getmetatable(mlp:parameters()), nil, "parameters() is a plain Lua list")
  T.eq(#mlp:parameters(false), 0, "recurse=false: the container has none of its own")
  -- shared parameters are listed once
  local Tied = nn.Module:extend("Tied")
  function Tied:__init()
    self.enc = nn.Linear(4, 4, { bias = false })
    self.dec = nn.Linear(4, 4, { bias = false })
    self.dec.weight = self.enc.weight
  end
  local t = Tied()
  T.eq(#t:parameters(), 1, "a tied weight is listed once")
  T.eq(t:state_dict():keys(), { "enc.weight", "dec.weight" }, "but stored under both names")
  local shared = nn.Linear(2, 2)
  T.eq(#nn.Sequential(shared, shared):parameters(), 2, "a module used twice counts once")
  T.eq(#nn.Sequential(shared, shared):modules(), 2, "modules() deduplicates")
  -- buffers
  local B = nn.Module:extend("B")
  function B:__init()
    self:register_buffer("steps", torch.zeros(1))
    self:register_buffer("tmp", torch.ones(2), false)
    self.w = nn.Parameter(torch.ones(1))
  end
  local b = B()
  T.eq(b:state_dict():keys(), { "w", "steps" }, "non-persistent buffers stay out of state_dict")
  local bn = {}
  for name in b:named_buffers() do bn[#bn + 1] = name end
  T.eq(bn, { "steps", "tmp" }, "named_buffers lists them all")
  T.eq(#b:buffers(), 2, "buffers()")
  b.steps = torch.full({ 1 }, 5.0)
  T.eq(b:state_dict().steps:item(), 5.0, "assigning a tensor to a buffer name replaces the buffer")
  -- children
  local m = Net()
  local names = {}
  for name, c in m:named_children() do names[#names + 1] = name; T.check(nn.isinstance(c, nn.Module), "child") end
  T.eq(names, { "conv1", "act", "fc" }, "named_children")
  T.eq(#m:children(), 3, "children()")
  T.eq(#m:modules(), 4, "modules() includes self")
  T.check(rawequal(m:get_submodule("fc"), m.fc), "get_submodule")
  T.check(rawequal(m:get_parameter("fc.bias"), m.fc.bias), "get_parameter")
  T.raises(function() return nn.Sequential(nn.Linear(2, 2)):get_submodule("0.foo") end, "Linear has no attribute `foo`")
  T.raises(function() return nn.Sequential(nn.Linear(2, 2)):get_submodule("0.weight") end, "`weight` is not an nn.Module")
end)

T.test("assignment and registration errors", function()
  local m = Net()
  T.raises(function() m.fc.weight = torch.zeros(2, 4) end,
    "cannot assign 'torch.FloatTensor' as parameter 'weight' (torch.nn.Parameter or None expected)")
  T.raises(function() m.fc = 3 end, "cannot assign 'int' as child module 'fc' (torch.nn.Module or None expected)")
  T.raises(function() m:register_buffer("a.b", torch.zeros(1)) end, 'buffer name can\'t contain "."')
  T.raises(function() m:register_parameter("x", torch.zeros(1)) end,
    "cannot assign 'torch.FloatTensor' object to parameter 'x' (torch.nn.Parameter or None required)")
  T.raises(function() m:register_buffer("x", 5) end, "cannot assign 'int' object to buffer 'x' (torch Tensor or None required)")
  T.raises(function() m:add_module("a.b", nn.ReLU()) end, 'module name can\'t contain ".", got: a.b')
  T.raises(function() m:add_module("fc2", 5) end, "int is not a Module subclass")
  T.raises(function() m:register_buffer("fc", torch.zeros(1)) end, "attribute 'fc' already exists")
  T.raises(function() m:train(1) end, "training mode is expected to be boolean")
  m:register_parameter("p", nil)
  T.eq(m.p, nil, "a parameter registered as None reads nil")
  T.eq(#m:state_dict():keys(), 4, "and is not in the state_dict")
  m.p = nn.Parameter(torch.zeros(1))
  T.eq(m:state_dict():keys()[1], "p", "a None parameter keeps its slot when set")
end)

T.test("state_dict values and load_state_dict round trip", function()
  local a, b = Net(), Net()
  local sd = a:state_dict()
  T.check(not sd["fc.weight"].requires_grad, "state_dict tensors are detached")
  T.eq(sd["fc.weight"]:data_ptr(), a.fc.weight:data_ptr(), "and share the parameters' storage")
  T.check(b.fc.weight:sub(a.fc.weight):abs():max():item() > 0, "two models start different")
  local w = b.fc.weight
  local r = b:load_state_dict(sd)
  T.eq(tostring(r), "<All keys matched successfully>", "result prints as PyTorch")
  T.eq(#r.missing_keys + #r.unexpected_keys, 0, "nothing missing or unexpected")
  T.check(rawequal(w, b.fc.weight), "parameters are copied into, not replaced")
  T.check(w.requires_grad and w.grad_fn == nil, "still a leaf that requires grad")
  for name, v in pairs(sd) do
    T.eq(b:state_dict()[name]:tolist(), v:tolist(), "loaded " .. name)
  end
  -- a plain table works too, and keep_vars gives the parameters themselves
  local plain = {}
  for k, v in pairs(a:state_dict()) do plain[k] = v end
  b:load_state_dict(plain)
  T.check(rawequal(a:state_dict({ keep_vars = true })["fc.weight"], a.fc.weight), "keep_vars=true")
  -- a 1-element 1-D tensor loads into a 0-dim buffer (PyTorch's compatibility rule)
  local bn = nn.BatchNorm1d(2)
  local bsd = bn:state_dict()
  bsd.num_batches_tracked = torch.tensor({ 7 })
  bn:load_state_dict(bsd)
  T.eq(bn.num_batches_tracked:item(), 7, "0-dim from 1-element")
  -- assign=true: parameters take the checkpoint's storage, keeping their identity
  local src = nn.Linear(2, 2, { dtype = torch.float64 })
  local dst = nn.Linear(2, 2)
  local dw = dst.weight
  dst:load_state_dict(src:state_dict(), { assign = true })
  T.check(rawequal(dw, dst.weight), "assign keeps the Parameter object")
  T.eq(dw:data_ptr(), src.weight:data_ptr(), "and shares the checkpoint's storage")
  T.eq(tostring(dw.dtype), "torch.float64", "taking its dtype")
end)

T.test("load_state_dict errors as PyTorch's", function()
  local M = nn.Module:extend("Net")
  function M:__init()
    self.fc = nn.Linear(3, 3)
    self.bn = nn.BatchNorm1d(3)
  end
  local m = M()
  T.raises(function() m:load_state_dict({ ["fc.weight"] = torch.zeros(3, 3) }) end,
    'Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var". ')
  T.raises(function()
    m:load_state_dict({ ["fc.weight"] = torch.zeros(2, 3), ["fc.bias"] = torch.zeros(3), ["bn.weight"] = torch.zeros(3),
      ["bn.bias"] = torch.zeros(3), ["bn.running_mean"] = torch.zeros(3), ["bn.running_var"] = torch.zeros(3) })
  end, "Error(s) in loading state_dict for Net:\n\tsize mismatch for fc.weight: copying a param with shape torch.Size([2, 3]) from checkpoint, the shape in current model is torch.Size([3, 3]).")
  local sd = m:state_dict()
  sd.foo = torch.zeros(1)
  sd["fc.extra"] = torch.zeros(1)
  sd["bn.x.y"] = torch.zeros(1)
  T.raises(function() m:load_state_dict(sd) end,
    'Error(s) in loading state_dict for Net:\n\tUnexpected key(s) in state_dict: "foo", "fc.extra", "bn.x.y". ')
  local r = m:load_state_dict({ ["fc.weight"] = torch.zeros(3, 3), zzz = torch.zeros(1) }, { strict = false })
  T.eq(r.missing_keys, { "fc.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var" }, "non-strict missing_keys")
  T.eq(r.unexpected_keys, { "zzz" }, "non-strict unexpected_keys")
  T.eq(tostring(r), "_IncompatibleKeys(missing_keys=['fc.bias', 'bn.weight', 'bn.bias', 'bn.running_mean', 'bn.running_var'], unexpected_keys=['zzz'])", "result prints as PyTorch")
  T.eq(m.fc.weight:abs():sum():item(), 0.0, "non-strict still loads what matches")
  T.eq(#m:load_state_dict({}, false).missing_keys, 6, "strict=false positionally")
  local lin = nn.Linear(2, 2)
  local bad = lin:state_dict()
  bad.weight = { 1 }
  T.raises(function() lin:load_state_dict(bad) end,
    "Error(s) in loading state_dict for Linear:\n\tWhile copying the parameter named \"weight\", expected torch.Tensor or Tensor-like object from checkpoint but received <class 'table'>")
  T.raises(function() lin:load_state_dict({ weight = torch.zeros(3, 3) }, { strict = false }) end,
    "Error(s) in loading state_dict for Linear:\n\tsize mismatch for weight: copying a param with shape torch.Size([3, 3]) from checkpoint, the shape in current model is torch.Size([2, 2]).")
  T.raises(function() lin:load_state_dict({}, { strict = false, stric = 1 }) end, "~unknown keyword 'stric'")
  -- the error points at the caller's line
  local ok, err = pcall(function() lin:load_state_dict({}) end)
  T.check(not ok and err:find("test_nn_module.lua:%d+: Error%(s%)") ~= nil, "error position is the caller's line: " .. tostring(err))
end)

T.test("train / eval", function()
  local m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(), nn.BatchNorm1d(2)))
  T.eq(m:eval(), m, "eval returns the module")
  T.eq({ m.training, m[0].training, m[1].training, m[1][0].training, m[1][1].training }, { false, false, false, false, false }, "eval propagates")
  m:train()
  T.eq({ m.training, m[1][1].training }, { true, true }, "train() propagates")
  m:train(false)
  T.eq(m[1][0].training, false, "train(false)")
end)

T.test("zero_grad, requires_grad_, apply", function()
  local m = nn.Linear(3, 2)
  m(torch.randn(4, 3)):sum():backward()
  T.check(m.weight.grad ~= nil and m.bias.grad ~= nil, "gradients after backward")
  m:zero_grad({ set_to_none = false })
  T.check(m.weight.grad ~= nil, "set_to_none=false keeps the tensors")
  T.eq(m.weight.grad:abs():sum():item(), 0.0, "and zeroes them")
  m:zero_grad()
  T.eq(m.weight.grad, nil, "default set_to_none=true")
  T.eq(m.bias.grad, nil, "bias too")
  m:requires_grad_(false)
  T.check(not m.weight.requires_grad and not m.bias.requires_grad, "requires_grad_(false)")
  m:requires_grad_()
  T.check(m.weight.requires_grad, "requires_grad_()")
  local seen = {}
  local s = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU()))
  T.eq(s:apply(function(mod) seen[#seen + 1] = mod:_get_name() end), s, "apply returns self")
  T.eq(seen, { "Linear", "ReLU", "Sequential", "Sequential" }, "apply visits children first")
  s:apply(function(mod) if nn.isinstance(mod, nn.Linear) then nn.init.constant_(mod.weight, 0.5) end end)
  T.eq(s[0].weight:item(), 0.5, "apply can initialise")
end)

T.test("to(dtype) keeps parameter identity", function()
  local m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
  local w, b = m[0].weight, m[0].bias
  local before = w:tolist()
  m(torch.randn(4, 3)):sum():backward()
  T.eq(m:double(), m, "double() returns the module")
  T.check(rawequal(w, m[0].weight) and rawequal(b, m[0].bias), "the same Parameter objects")
  T.eq(tostring(w.dtype), "torch.float64", "converted in place")
  T.check(w.requires_grad and nn.is_parameter(w), "still a parameter requiring grad")
  T.near(w:tolist(), before, 1e-6, "values kept")
  T.eq(tostring(w.grad.dtype), "torch.float64", "gradient converted too")
  T.eq(tostring(m[1].running_mean.dtype), "torch.float64", "float buffers converted")
  T.eq(tostring(m[1].num_batches_tracked.dtype), "torch.int64", "integer buffers kept")
  T.eq(tostring(m(torch.randn(4, 3, { dtype = torch.float64 })).dtype), "torch.float64", "forward in float64")
  m:to(torch.float32)
  T.eq(tostring(w.dtype), "torch.float32", "to(dtype)")
  m:to({ dtype = torch.float64 })
  T.eq(tostring(w.dtype), "torch.float64", "to{dtype=}")
  m:to("cpu", torch.float32)
  T.eq(tostring(w.dtype), "torch.float32", "to(device, dtype)")
  m:to(torch.zeros(1, { dtype = torch.float64 }))
  T.eq(tostring(w.dtype), "torch.float64", "to(tensor)")
  m:float()
  T.eq(tostring(w.dtype), "torch.float32", "float()")
  m:cpu()
  T.eq(tostring(w.device), "cpu", "cpu()")
  T.raises(function() m:to(torch.int64) end,
    "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=torch.int64")
  -- an optimizer-style holder of the parameter list sees the new data
  local params = m:parameters()
  m:double()
  T.eq(tostring(params[1].dtype), "torch.float64", "lists taken before to() see the conversion")
end)

T.test("forward hooks", function()
  local m = nn.Linear(2, 2)
  local calls = {}
  local h1 = m:register_forward_pre_hook(function(_, args) calls[#calls + 1] = "pre"; return args[1] * 0 end)
  local h2 = m:register_forward_hook(function(_, _, out) calls[#calls + 1] = "post"; return out + 1 end)
  local y = m(torch.ones(1, 2))
  T.eq(calls, { "pre", "post" }, "hooks run in order")
  T.near(y:tolist(), (m.bias + 1):unsqueeze(0):tolist(), 1e-6, "hooks can replace input and output")
  h1.remove(); h2.remove()
  T.near(m(torch.zeros(1, 2)):tolist(), m.bias:unsqueeze(0):tolist(), 1e-6, "removed hooks no longer run")
end)

T.test("printing a nested model", function()
  local Deep = nn.Module:extend("Deep")
  function Deep:__init()
    self.features = nn.Sequential(nn.Conv2d(3, 32, 3, { padding = 1 }), nn.BatchNorm2d(32), nn.ReLU(true),
      nn.MaxPool2d(2))
    self.blocks = nn.ModuleList({ nn.Linear(10, 10), nn.Linear(10, 10) })
    self.fc = nn.Linear(10, 2)
  end
  T.eq(tostring(Deep()), [[Deep(
  (features): Sequential(
    (0): Conv2d(3, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    (1): BatchNorm2d(32, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
    (2): ReLU(inplace=True)
    (3): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
  )
  (blocks): ModuleList(
    (0-1): 2 x Linear(in_features=10, out_features=10, bias=True)
  )
  (fc): Linear(in_features=10, out_features=2, bias=True)
)]], "module tree")
  local E = nn.Module:extend("E")
  function E:extra_repr() return "a=1\nb=2" end
  local e = E()
  e.child = nn.ReLU()
  T.eq(tostring(e), "E(\n  a=1\n  b=2\n  (child): ReLU()\n)", "multi-line extra_repr and children")
  T.eq(tostring(nn.Module()), "Module()", "empty module")
  T.eq(tostring(nn.Parameter(torch.ones(2))), "Parameter containing:\ntensor([1., 1.], requires_grad=True)", "Parameter")
  T.eq(tostring(nn.Parameter(torch.ones(2)):detach()), "tensor([1., 1.])", "a detached parameter is a plain tensor")
end)

T.test("nn.Parameter", function()
  local t = torch.ones(3)
  local p = nn.Parameter(t)
  T.check(p.requires_grad and p.is_leaf, "a leaf requiring grad")
  T.eq(p:data_ptr(), t:data_ptr(), "shares the tensor's storage")
  local q = nn.Parameter(t, false)
  T.check(not q.requires_grad and nn.is_parameter(q), "requires_grad=false")
  T.check(not nn.Parameter(torch.ones(1), { requires_grad = false }).requires_grad, "keyword form")
  T.raises(function() nn.Parameter(5) end, "bad argument #1 to 'Parameter' (tensor expected, got int)")
end)

T.test("OrderedDict", function()
  local d = nn.OrderedDict({ { "b", 1 }, { "a", 2 } })
  d.c = 3
  T.eq(keys(d), { "b", "a", "c" }, "insertion order")
  T.eq(#d, 3, "# counts entries")
  d.b = nil
  T.eq(d:keys(), { "a", "c" }, "nil deletes")
  d.b = 4
  T.eq(d:keys(), { "a", "c", "b" }, "a key set again goes last")
  T.eq(d:values(), { 2, 3, 4 }, "values()")
end)
