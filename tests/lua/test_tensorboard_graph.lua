-- SummaryWriter:add_graph: the GraphDef event read back with tests/lua/tb_reader.lua, node by node
-- (names, ops, inputs, device, _output_shapes) against graphs worked out by hand from the models'
-- forward code, plus the argument errors.
local T = ...
local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local R = dofile(here .. "tb_reader.lua")(T)
local pb, events_in, read_records = R.pb_decode, R.events_in, R.read_records
local SummaryWriter = torch.utils.tensorboard.SummaryWriter
local nn, F = torch.nn, torch.nn.functional

local root = os.tmpname()
os.remove(root)

local function shapes_of(attr_entries)
  for _, e in ipairs(attr_entries or {}) do
    local kv = pb(e)
    if kv[1][1] == "_output_shapes" then
      local out = {}
      for _, sh in ipairs(pb(pb(kv[2][1])[1][1])[7] or {}) do
        local dims = {}
        for _, d in ipairs(pb(sh)[2] or {}) do dims[#dims + 1] = pb(d)[1] and pb(d)[1][1] or 0 end
        out[#out + 1] = table.concat(dims, "x")
      end
      return table.concat(out, ",")
    end
  end
end

-- the graph of the one event file in dir: a list of "name = op(inputs) @device [shape]"
local function graph_in(dir)
  local files = events_in(dir)
  T.eq(#files, 1, "one event file")
  local recs = read_records(files[1])
  local graphs = {}
  for _, r in ipairs(recs) do
    local e = pb(r)
    if e[4] then graphs[#graphs + 1] = { e = e, g = pb(e[4][1]) } end
  end
  T.eq(#graphs, 1, "one graph_def event")
  local g = graphs[1].g
  T.check(graphs[1].e[1] ~= nil, "the event has a wall_time")
  T.eq(pb(g[4][1])[1][1], 22, "versions.producer")
  local lines, device = {}, nil
  for _, nb in ipairs(g[1]) do
    local n = pb(nb)
    device = device or (n[4] and n[4][1])
    T.eq(n[4] and n[4][1], device, "every node on one device")
    local sh = shapes_of(n[5])
    lines[#lines + 1] = string.format("%s = %s(%s)%s", n[1][1], n[2][1], table.concat(n[3] or {}, ", "),
      sh and " [" .. sh .. "]" or "")
  end
  return lines, device
end

local Net = nn.Module:extend("Net")
function Net:__init()
  nn.Module.__init(self)
  self.conv1 = nn.Conv2d(1, 2, 3)
  self.fc = nn.Linear(8, 3)
end
function Net:forward(x)
  x = F.relu(self.conv1(x))
  x = x:view(-1, 8)
  return self.fc(x)
end

local function check_net(device)
  local dir = root .. "/net_" .. device
  local net = Net():to(device)
  local x = torch.randn(2, 1, 4, 3, { device = device })
  local w = SummaryWriter(dir)
  w:add_graph(net, x)
  w:close()
  local lines, dev = graph_in(dir)
  T.eq(dev, device == "cuda" and "/device:CUDA:0" or "/device:CPU:0")
  T.eq(lines, {
    "input/input.1 = IO Node() [2x1x4x3]",
    "Net/Linear[fc]/bias = prim::GetAttr() [3]",
    "Net/Conv2d[conv1]/weight = prim::GetAttr() [2x1x3x3]",
    "Net/Conv2d[conv1]/bias = prim::GetAttr() [2]",
    "Net/Conv2d[conv1]/Convolution = aten::convolution(input/input.1, Net/Conv2d[conv1]/weight, Net/Conv2d[conv1]/bias) [2x2x2x1]",
    "Net/Relu = aten::relu(Net/Conv2d[conv1]/Convolution)",
    "Net/View = aten::view(Net/Relu)",
    "Net/Linear[fc]/weight = prim::GetAttr() [3x8]",
    "Net/Linear[fc]/T = aten::t(Net/Linear[fc]/weight)",
    "Net/Linear[fc]/Addmm = aten::addmm(Net/Linear[fc]/bias, Net/View, Net/Linear[fc]/T) [1x3]",
    "output/output.1 = IO Node(Net/Linear[fc]/Addmm) [1x3]",
  })
  -- the model is left as it was: no gradients, no hooks left behind, the input untouched
  for _, p in ipairs(net:parameters()) do T.eq(p.grad, nil, "no gradient left") end
  T.eq(x.requires_grad, false)
  local w2 = SummaryWriter(dir .. "_again")
  w2:add_graph(net, x)
  w2:close()
  T.eq(#graph_in(dir .. "_again"), #lines, "a second add_graph makes the same graph")
end

T.test("add_graph: a conv net's graph with module scopes", function() check_net("cpu") end)

T.test("add_graph: nested Sequential, a module used twice, two inputs, verbose", function()
  local Two = nn.Module:extend("Two")
  function Two:__init()
    nn.Module.__init(self)
    self.body = nn.Sequential(nn.Linear(2, 2, { bias = false }), nn.Tanh())
  end
  function Two:forward(a, b) return self.body(self.body(a) * b) end
  local dir = root .. "/two"
  local w = SummaryWriter(dir)
  local printed = {}
  local old = print
  print = function(s) printed[#printed + 1] = s end
  local ok, err = pcall(function() w:add_graph(Two(), { torch.ones(1, 2), torch.ones(1, 2) }, true) end)
  print = old
  T.check(ok, err)
  w:close()
  local want = {
    "input/input.1 = IO Node() [1x2]",
    "input/input.2 = IO Node() [1x2]",
    "Two/Sequential[body]/Linear[0]/weight = prim::GetAttr() [2x2]",
    "Two/Sequential[body]/Linear[0]/T = aten::t(Two/Sequential[body]/Linear[0]/weight)",
    "Two/Sequential[body]/Linear[0]/Mm = aten::mm(input/input.1, Two/Sequential[body]/Linear[0]/T) [1x2]",
    "Two/Sequential[body]/Tanh[1]/Tanh = aten::tanh(Two/Sequential[body]/Linear[0]/Mm) [1x2]",
    "Two/Mul = aten::mul(Two/Sequential[body]/Tanh[1]/Tanh, input/input.2)",
    "Two/Sequential[body]/Linear[0]/T.1 = aten::t(Two/Sequential[body]/Linear[0]/weight)",
    "Two/Sequential[body]/Linear[0]/Mm.1 = aten::mm(Two/Mul, Two/Sequential[body]/Linear[0]/T.1) [1x2]",
    "Two/Sequential[body]/Tanh[1]/Tanh.1 = aten::tanh(Two/Sequential[body]/Linear[0]/Mm.1) [1x2]",
    "output/output.1 = IO Node(Two/Sequential[body]/Tanh[1]/Tanh.1) [1x2]",
  }
  T.eq(graph_in(dir), want)
  T.eq(#printed, #want, "verbose prints one line a node")
  T.eq(printed[3], "Two/Sequential[body]/Linear[0]/weight = prim::GetAttr()")
end)

T.test("add_graph: argument errors", function()
  local w = SummaryWriter(root .. "/errors")
  T.raises(function() w:add_graph({}, torch.zeros(1)) end, "~add_graph: model must be a torch.nn.Module")
  T.raises(function() w:add_graph(nn.Linear(2, 2)) end, "~add_graph: input_to_model is required")
  T.raises(function() w:add_graph(nn.Linear(2, 2), "x") end, "~add_graph: input_to_model must be a tensor or a list of tensors, got string")
  T.raises(function() w:add_graph(nn.Linear(2, 2), torch.zeros(1, 2), { strict = true }) end, "add_graph() got an unexpected keyword argument 'strict'")
  T.raises(function() w:add_graph(nn.Linear(2, 2), torch.zeros(1, 3)) end, "~")
  w:add_graph(nn.Linear(2, 2), torch.zeros(1, 2), { verbose = false, use_strict_trace = false })
  w:close()
end)

if torch.cuda.is_available() then
  T.test("add_graph on cuda", function() check_net("cuda") end)
else
  T.skip("no CUDA", 1)
end
