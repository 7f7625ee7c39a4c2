-- Sequential, ModuleList, ModuleDict: construction, 0-based indexing, length,
-- iteration, mutation, state_dict keys and forward.
local T = ...

local function names(list)
  local out = {}
  for i, m in ipairs(list) do out[i] = m:_get_name() end
  return out
end

T.test("Sequential", function()
  local s = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
  T.eq(#s, 3, "#s")
  T.eq(s[0]:_get_name(), "Linear", "s[0] is the first module")
  T.eq(s[1]:_get_name(), "ReLU", "s[1]")
  T.check(rawequal(s[-1], s[2]), "s[-1] is the last")
  T.raises(function() return s[3] end, "index 3 is out of range")
  T.raises(function() return s[-4] end, "index -4 is out of range")
  T.eq(s:state_dict():keys(), { "0.weight", "0.bias", "2.weight", "2.bias" }, "keys 0.weight ...")
  local x = torch.randn(5, 4)
  T.near(s(x):tolist(), s[2](s[1](s[0](x))):tolist(), 1e-6, "forward chains the modules")
  local seen = {}
  for i, m in pairs(s) do seen[#seen + 1] = i .. m:_get_name() end
  T.eq(seen, { "0Linear", "1ReLU", "2Linear" }, "pairs(s) gives 0-based (index, module) in order")
  seen = {}
  for i, m in s:enumerate() do seen[#seen + 1] = i .. m:_get_name() end
  T.eq(seen, { "0Linear", "1ReLU", "2Linear" }, "s:enumerate()")
  s:append(nn.Tanh())
  T.eq(#s, 4, "append")
  T.eq(s:state_dict():keys(), { "0.weight", "0.bias", "2.weight", "2.bias" }, "append adds key 3")
  T.eq(tostring(s[3]), "Tanh()", "appended module")
  s[1] = nn.Sigmoid()
  T.eq(names(s:children()), { "Linear", "Sigmoid", "Linear", "Tanh" }, "s[1] = m replaces in place")
  s:insert(0, nn.Identity())
  T.eq(names(s:children()), { "Identity", "Linear", "Sigmoid", "Linear", "Tanh" }, "insert(0, m)")
  T.eq(s:state_dict():keys(), { "1.weight", "1.bias", "3.weight", "3.bias" }, "keys renumbered after insert")
  T.eq(s:pop(0):_get_name(), "Identity", "pop returns the module")
  T.eq(s:state_dict():keys(), { "0.weight", "0.bias", "2.weight", "2.bias" }, "keys renumbered after pop")
  local tail = s:slice(1, 3)
  T.eq(names(tail:children()), { "Sigmoid", "Linear" }, "slice(1, 3) is s[1:3]")
  T.eq(tail:state_dict():keys(), { "2.weight", "2.bias" }, "slices keep the keys")
  s:extend({ nn.ReLU(), nn.ReLU() })
  T.eq(#s, 6, "extend")
  -- named entries
  local named = nn.Sequential({ { "conv1", nn.Conv2d(1, 20, 5) }, { "relu1", nn.ReLU() } })
  T.eq(named:state_dict():keys(), { "conv1.weight", "conv1.bias" }, "named entries give named keys")
  T.check(rawequal(named[0], named.conv1), "named modules index by position and by name")
  T.eq(tostring(named), "Sequential(\n  (conv1): Conv2d(1, 20, kernel_size=(5, 5), stride=(1, 1))\n  (relu1): ReLU()\n)", "prints names")
  local od = nn.OrderedDict({ { "b", nn.ReLU() }, { "a", nn.Tanh() } })
  T.eq(names(nn.Sequential(od):children()), { "ReLU", "Tanh" }, "from an OrderedDict, in its order")
  T.eq(#nn.Sequential({ nn.ReLU(), nn.Tanh() }), 2, "from a list of modules")
  T.raises(function() return nn.Sequential(nn.ReLU(), 5) end, "int is not a Module subclass")
  T.eq(tostring(nn.Sequential()), "Sequential()", "empty")
  local e = nn.Sequential()
  T.check(rawequal(e(x), x), "an empty Sequential returns its input")
end)

T.test("ModuleList", function()
  local Blocks = nn.Module:extend("Blocks")
  function Blocks:__init(n)
    self.layers = nn.ModuleList()
    for _ = 1, n do self.layers:append(nn.Linear(3, 3)) end
  end
  function Blocks:forward(x)
    for _, layer in pairs(self.layers) do x = layer(x) end
    return x
  end
  local b = Blocks(3)
  T.eq(#b.layers, 3, "#")
  T.eq(b:state_dict():keys(), { "layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
    "layers.2.weight", "layers.2.bias" }, "keys layers.0.weight ...")
  local x = torch.randn(2, 3)
  T.near(b(x):tolist(), b.layers[2](b.layers[1](b.layers[0](x))):tolist(), 1e-6, "iteration in order")
  local idx = {}
  for i in b.layers:ipairs() do idx[#idx + 1] = i end
  T.eq(idx, { 0, 1, 2 }, "ipairs() gives 0-based indices")
  T.eq(#b:parameters(), 6, "registered through the list")
  local ml = nn.ModuleList({ nn.ReLU() })
  ml:extend({ nn.Tanh(), nn.Sigmoid() })
  T.eq(names(ml:children()), { "ReLU", "Tanh", "Sigmoid" }, "extend")
  ml:insert(1, nn.Identity())
  T.eq(names(ml:children()), { "ReLU", "Identity", "Tanh", "Sigmoid" }, "insert")
  ml[-1] = nn.SiLU()
  T.eq(tostring(ml[3]), "SiLU()", "negative setitem")
  T.raises(function() return nn.ModuleList({ nn.ReLU() })[-2] end, "index -2 is out of range")
  T.raises(function() return nn.ModuleList()(x) end, 'Module [ModuleList] is missing the required "forward" function')
  T.eq(tostring(nn.ModuleList()), "ModuleList()", "empty")
  local l = nn.Linear(2, 2)
  T.eq(tostring(nn.ModuleList({ nn.ReLU(), l, l, l, nn.ReLU() })), [[ModuleList(
  (0): ReLU()
  (1-3): 3 x Linear(in_features=2, out_features=2, bias=True)
  (4): ReLU()
)]], "repeated modules print once")
end)

T.test("ModuleDict", function()
  local d = nn.ModuleDict({ { "conv", nn.Conv2d(1, 2, 3) }, { "act", nn.ReLU() } })
  T.eq(#d, 2, "#")
  T.eq(d:keys(), { "conv", "act" }, "keys in insertion order")
  T.eq(d.act:_get_name(), "ReLU", "index by key")
  T.eq(d["conv"]:_get_name(), "Conv2d", "d['conv']")
  T.eq(d:state_dict():keys(), { "conv.weight", "conv.bias" }, "state_dict keys")
  d.fc = nn.Linear(2, 2)
  T.eq(d:keys(), { "conv", "act", "fc" }, "assignment adds")
  local seen = {}
  for k, m in pairs(d) do seen[#seen + 1] = k .. "=" .. m:_get_name() end
  T.eq(seen, { "conv=Conv2d", "act=ReLU", "fc=Linear" }, "pairs in order")
  T.eq(d:pop("act"):_get_name(), "ReLU", "pop returns the module")
  T.check(not d:contains("act") and d:contains("fc"), "contains")
  T.eq(names(d:values()), { "Conv2d", "Linear" }, "values")
  local plain = nn.ModuleDict({ b = nn.ReLU(), a = nn.Tanh() })
  T.eq(plain:keys(), { "a", "b" }, "a plain table's keys are sorted")
  T.eq(tostring(plain), "ModuleDict(\n  (a): Tanh()\n  (b): ReLU()\n)", "prints")
  plain:clear()
  T.eq(#plain, 0, "clear")
end)

T.test("subclassing containers", function()
  local MySeq = nn.Sequential:extend("MySeq")
  T.check(MySeq ~= nn.Sequential and rawget(MySeq, "__class") == MySeq, "Sequential:extend(name) makes a subclass")
  local s = MySeq(nn.Linear(2, 3), nn.ReLU())
  T.check(nn.isinstance(s, nn.Sequential) and nn.isinstance(s, MySeq), "an instance of both")
  T.eq(s:_get_name(), "MySeq", "its name")
  T.eq(#s, 2, "built as a Sequential")
  s:extend({ nn.Tanh() })
  T.eq(#s, 3, "instances still extend by appending")
  local MyList = nn.ModuleList:extend("MyList")
  local l = MyList({ nn.ReLU() })
  l:extend({ nn.Tanh(), nn.ReLU() })
  T.eq(#l, 3, "ModuleList subclass appends")
end)
