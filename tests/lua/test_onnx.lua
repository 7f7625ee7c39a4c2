-- torch.onnx.export: each exported file is read back by an independent protobuf decoder and run
-- by a plain-Lua interpreter of the ONNX ops (tests/lua/onnx_ref.lua: explicit loops over flat
-- arrays, no nnrepl tensor op), and its output compared with the model's: an MLP, a LeNet-like CNN (conv,
-- pools, flatten, linear), a residual block with BatchNorm, a model with torch.cat, softmax,
-- transpose and gelu's erf formula. Also the file's structure (initializer names and shapes,
-- input/output names, opset, dim_param from dynamic_axes), training modes, is_in_onnx_export
-- and the errors.
local T = ...
local nn = torch.nn
local F = nn.functional

local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local R = dofile(here .. "onnx_ref.lua")
local read_model, run_model, from_tensor = R.read_model, R.run_model, R.from_tensor

-- the file's output on input x agrees with y (the model's)
local function check_run(path, feeds, y, msg)
  local m = read_model(path)
  local got = run_model(m, feeds)[1]
  local want = from_tensor(y)
  T.eq(got.shape, want.shape, msg .. ": output shape")
  local worst = 0
  for k = 1, #want.data do worst = math.max(worst, math.abs(got.data[k] - want.data[k])) end
  T.check(#got.data == #want.data and worst < 1e-4, string.format("%s: max difference %g", msg, worst))
  return m
end

local function ops_of(m)
  local list = {}
  for _, n in ipairs(m.graph.nodes) do list[#list + 1] = n.op end
  return table.concat(list, " ")
end

local tmp = os.tmpname()

local function run_tests(device)
  local function dev(x) return x:to(device) end

  T.test("mlp " .. device, function()
    torch.manual_seed(1)
    local model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)):to(device)
    local x = dev(torch.randn(5, 4))
    model:eval()
    local y = model(x)
    torch.onnx.export(model, { x }, tmp, { input_names = { "x" }, output_names = { "logits" }, opset_version = 17 })
    local m = check_run(tmp, { x = from_tensor(x) }, y, "mlp")
    T.eq(m.ir_version, 8)
    T.eq(m.opsets[""], 17)
    T.eq(m.producer, "nnrepl")
    T.eq(ops_of(m), "Gemm Relu Gemm")
    T.eq(m.graph.init_list, { "0.weight", "0.bias", "2.weight", "2.bias" })
    T.eq(m.graph.inits["0.weight"].shape, { 8, 4 })
    T.eq(m.graph.inits["2.bias"].shape, { 3 })
    T.eq(m.graph.nodes[1].attrs.transB, 1)
    T.eq(#m.graph.inputs, 1)
    T.eq(m.graph.inputs[1].name, "x")
    T.eq(m.graph.inputs[1].dims, { 5, 4 })
    T.eq(m.graph.inputs[1].elem_type, 1)
    T.eq(m.graph.outputs[1].name, "logits")
    T.eq(m.graph.outputs[1].dims, { 5, 3 })
    -- values of an initializer, bit for bit as float32
    local w = model[0].weight:detach():cpu():reshape(-1):tolist()
    T.eq(m.graph.inits["0.weight"].data, w)
  end)

  T.test("lenet-like cnn " .. device, function()
    torch.manual_seed(2)
    local model = nn.Sequential(nn.Conv2d(1, 3, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
      nn.Conv2d(3, 4, 3, { stride = 1 }), nn.Tanh(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(4, 5)):to(device)
    model:eval()
    local x = dev(torch.randn(2, 1, 8, 8))
    local y = model(x)
    torch.onnx.export(model, x, tmp, { input_names = { "image" }, dynamic_axes = { image = { [0] = "batch" }, output_0 = { 0 } } })
    local m = check_run(tmp, { image = from_tensor(x) }, y, "cnn")
    T.eq(ops_of(m), "Conv Relu MaxPool Conv Tanh AveragePool Reshape Gemm")
    local conv = m.graph.nodes[1].attrs
    T.eq(conv.kernel_shape, { 3, 3 })
    T.eq(conv.pads, { 1, 1, 1, 1 })
    T.eq(conv.strides, { 1, 1 })
    T.eq(conv.group, 1)
    T.eq(m.graph.nodes[3].attrs.kernel_shape, { 2, 2 })
    T.eq(m.graph.inits["0.weight"].shape, { 3, 1, 3, 3 })
    T.eq(m.graph.inits["3.bias"].shape, { 4 })
    T.eq(m.graph.inputs[1].dims, { "batch", 1, 8, 8 })
    T.eq(m.graph.outputs[1].dims, { "output_0_dynamic_axes_1", 5 })
    -- the flatten keeps the batch dim (0 in Reshape): the same file runs on another batch size
    local x3 = torch.randn(3, 1, 8, 8)
    local y3 = model(dev(x3))
    local got = run_model(m, { image = from_tensor(x3) })[1]
    T.eq(got.shape, { 3, 5 })
    T.near(got.data[15], y3[2][4]:item(), 1e-4, "cnn batch 3")
  end)

  T.test("alexnet-like: strides, groups, dilation, ceil_mode, adaptive pool " .. device, function()
    torch.manual_seed(3)
    local model = nn.Sequential(nn.Conv2d(2, 4, 3, { stride = 2, padding = 1 }), nn.ReLU(true),
      nn.Conv2d(4, 4, 3, { groups = 2, dilation = 2, padding = 2 }), nn.MaxPool2d(3, { stride = 2, ceil_mode = true }),
      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.5), nn.Linear(4, 2)):to(device)
    model:train()
    local x = dev(torch.randn(1, 2, 8, 8))
    torch.onnx.export(model, { x }, tmp)
    T.eq(model.training, true, "training mode restored")
    T.eq(model[6].training, true)
    model:eval()
    local y = model(x)
    local m = check_run(tmp, { input_0 = from_tensor(x) }, y, "alexnet-like")
    T.eq(ops_of(m), "Conv Relu Conv MaxPool GlobalAveragePool Reshape Gemm")
    T.eq(m.graph.nodes[3].attrs.group, 2)
    T.eq(m.graph.nodes[3].attrs.dilations, { 2, 2 })
    T.eq(m.graph.nodes[4].attrs.ceil_mode, 1)
  end)

  local Res = nn.Module:extend("ResBlock")
  function Res:__init(c)
    self.conv1 = nn.Conv2d(c, c, 3, { padding = 1, bias = false })
    self.bn1 = nn.BatchNorm2d(c)
    self.conv2 = nn.Conv2d(c, c, 3, { padding = 1, bias = false })
    self.bn2 = nn.BatchNorm2d(c)
    self.pool = nn.AdaptiveAvgPool2d({ 1, 1 })
    self.fc = nn.Linear(c, 2)
  end
  function Res:forward(x)
    local out = F.relu(self.bn1(self.conv1(x)))
    out = self.bn2(self.conv2(out))
    out = F.relu(out + x)
    return self.fc(torch.flatten(self.pool(out), 1))
  end

  T.test("residual block with batch norm " .. device, function()
    torch.manual_seed(4)
    local model = Res(3):to(device)
    -- running statistics away from 0 and 1
    model:train()
    do
      local _ <close> = torch.no_grad()
      for _ = 1, 3 do model(dev(torch.randn(4, 3, 5, 5) * 2 + 1)) end
    end
    model:eval()
    local x = dev(torch.randn(2, 3, 5, 5))
    local y = model(x)
    torch.onnx.export(model, { x }, tmp, { output_names = { "y" } })
    local m = check_run(tmp, { input_0 = from_tensor(x) }, y, "resnet block")
    T.eq(ops_of(m), "Conv BatchNormalization Relu Conv BatchNormalization Add Relu GlobalAveragePool Reshape Gemm")
    T.eq(m.graph.inits["bn1.running_var"].shape, { 3 })
    T.check(m.graph.inits["bn1.num_batches_tracked"] == nil, "unused buffers are left out")
    T.near(m.graph.nodes[2].attrs.epsilon, 1e-5, 1e-6)
    T.eq(m.graph.outputs[1].name, "y")
  end)

  local Cat = nn.Module:extend("CatNet")
  function Cat:__init()
    self.a = nn.Linear(3, 2)
    self.b = nn.Linear(3, 4)
  end
  function Cat:forward(x)
    local h = torch.cat({ torch.tanh(self.a(x)), torch.sigmoid(self.b(x)) }, 1)
    local t = F.gelu(h:t():contiguous()):t() -- a transpose there and back
    return F.softmax(t - h:mean(1, true) * 0.5, 1), F.log_softmax(h, 0)
  end

  T.test("cat, softmax, transpose, gelu " .. device, function()
    torch.manual_seed(5)
    local model = Cat():to(device)
    local x = dev(torch.randn(3, 3))
    local y1, y2 = model(x)
    torch.onnx.export(model, { x }, tmp, { opset_version = 18 })
    local m = read_model(tmp)
    T.eq(m.opsets[""], 18)
    local outs = run_model(m, { input_0 = from_tensor(x) })
    T.eq(#m.graph.outputs, 2, "two results, two outputs")
    for k, y in ipairs({ y1, y2 }) do
      local want = from_tensor(y)
      local worst = 0
      for j = 1, #want.data do worst = math.max(worst, math.abs(outs[k].data[j] - want.data[j])) end
      T.check(worst < 1e-4, "cat model output " .. k .. ": max difference " .. worst)
    end
    local ops = ops_of(m)
    T.check(ops:find("Concat", 1, true) and ops:find("Softmax", 1, true) and ops:find("Transpose", 1, true)
      and ops:find("Erf", 1, true) and ops:find("ReduceMean", 1, true) and ops:find("LogSoftmax", 1, true), ops)
    -- both results from a list
    local Two = nn.Module:extend("Two")
    function Two:__init() self.inner = Cat() end
    function Two:forward(x) return { self.inner(x) } end
    local two = Two():to(device)
    local z1, z2 = two.inner(x)
    torch.onnx.export(two, { x }, tmp, { output_names = { "p", "logp" } })
    m = read_model(tmp)
    outs = run_model(m, { input_0 = from_tensor(x) })
    T.eq(m.graph.outputs[2].name, "logp")
    local w2 = from_tensor(z2)
    worst = 0
    for k = 1, #w2.data do worst = math.max(worst, math.abs(outs[2].data[k] - w2.data[k])) end
    T.check(worst < 1e-4, "log_softmax output: max difference " .. worst)
    T.check(z1 ~= nil and y2 ~= nil)
  end)
end

T.test("transformer encoder layer: slices, transposes, batched MatMul, LayerNormalization", function()
  torch.manual_seed(7)
  for _, batch_first in ipairs({ true, false }) do
    local m = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, batch_first = batch_first })
    m:eval()
    local x = torch.randn(2, 5, 8)
    local y = m(x)
    torch.onnx.export(m, { x }, tmp)
    local ops = ops_of(check_run(tmp, { input_0 = from_tensor(x) }, y, "encoder layer"))
    T.check(ops:find("Slice", 1, true) and ops:find("MatMul", 1, true) and ops:find("LayerNormalization", 1, true), ops)
  end
end)

T.test("torchvision models", function()
  local tv = require "torchvision"
  torch.manual_seed(6)
  -- squeezenet: fire modules' torch.cat, ceil_mode max pools, a conv classifier, adaptive pool
  local m = tv.models.squeezenet1_1()
  m:eval()
  local x = torch.randn(1, 3, 48, 48)
  local y = m(x)
  torch.onnx.export(m, { x }, tmp, { input_names = { "images" } })
  local g = check_run(tmp, { images = from_tensor(x) }, y, "squeezenet1_1").graph
  T.eq(g.inits["features.3.expand3x3.weight"].shape, { 64, 16, 3, 3 })
  -- resnet18: the structure only (running it here would be slow)
  torch.onnx.export(tv.models.resnet18(), { torch.randn(1, 3, 64, 64) }, tmp)
  g = read_model(tmp).graph
  local count = {}
  for _, n in ipairs(g.nodes) do count[n.op] = (count[n.op] or 0) + 1 end
  T.eq({ count.Conv, count.BatchNormalization, count.Add, count.Relu, count.MaxPool, count.GlobalAveragePool, count.Gemm },
    { 20, 20, 8, 17, 1, 1, 1 })
  T.eq(g.inits["layer2.0.downsample.1.running_mean"].shape, { 128 })
  T.eq(g.inits["fc.weight"].shape, { 1000, 512 })
  T.eq(g.outputs[1].dims, { 1, 1000 })
end)

run_tests("cpu")
if torch.cuda.is_available() then run_tests("cuda") else T.skip("no CUDA device", 5) end

T.test("is_in_onnx_export, functions, export_params", function()
  local seen
  local Probe = nn.Module:extend("Probe")
  function Probe:__init() self.lin = nn.Linear(2, 2) end
  function Probe:forward(x)
    seen = torch.onnx.is_in_onnx_export()
    return self.lin(x) * 2 + 1
  end
  local model = Probe()
  local x = torch.randn(3, 2)
  T.eq(torch.onnx.is_in_onnx_export(), false)
  torch.onnx.export(model, { x }, tmp, { export_params = false, training = torch.onnx.TrainingMode.EVAL })
  T.eq(seen, true)
  T.eq(torch.onnx.is_in_onnx_export(), false)
  local m = read_model(tmp)
  T.check(m.graph.inits["lin.weight"] == nil, "export_params=false leaves the weights out")
  T.eq(m.graph.inputs[2].name, "lin.weight")
  T.eq(m.graph.inputs[2].dims, { 2, 2 })
  local feeds = { input_0 = from_tensor(x), ["lin.weight"] = from_tensor(model.lin.weight),
    ["lin.bias"] = from_tensor(model.lin.bias) }
  local got = run_model(m, feeds)[1]
  local y = model(x)
  T.near(got.data[4], y[1][1]:item(), 1e-5, "probe")
  -- a plain function: its tensors are constants; an open file as f
  local c = torch.tensor({ { 1.0, -2.0 } })
  local fh = assert(io.open(tmp, "wb"))
  torch.onnx.export(function(a) return torch.relu(a - c) end, { x }, fh)
  fh:close()
  m = read_model(tmp)
  got = run_model(m, { input_0 = from_tensor(x) })[1]
  T.near(got.data[2], math.max(x[0][1]:item() + 2, 0), 1e-6, "function export")
  T.eq(tostring(torch.onnx.TrainingMode.EVAL), "TrainingMode.EVAL")
  -- a copy taken before an in-place change keeps the old values
  torch.onnx.export(function(a)
    local b = a:clone()
    a:mul_(2)
    return b + a
  end, { x:clone() }, tmp)
  got = run_model(read_model(tmp), { input_0 = from_tensor(x) })[1]
  T.near(got.data[3], 3 * x[1][0]:item(), 1e-6, "clone then mul_")
end)

T.test("gelu by opset, unused ops dropped", function()
  local x = torch.randn(2, 3)
  local f = function(a)
    local unused = a:exp() -- computed, not returned: not in the graph
    return F.gelu(a) * 2
  end
  local y = f(x)
  torch.onnx.export(f, { x }, tmp, { opset_version = 20 })
  local m = check_run(tmp, { input_0 = from_tensor(x) }, y, "gelu opset 20")
  T.eq(ops_of(m), "Gelu Mul")
  T.eq(#m.graph.init_list, 1)
  torch.onnx.export(f, { x }, tmp, { opset_version = 17 })
  m = check_run(tmp, { input_0 = from_tensor(x) }, y, "gelu opset 17")
  T.eq(ops_of(m), "Mul Erf Add Mul Mul Mul")
end)

T.test("errors", function()
  local model = nn.Sequential(nn.Linear(2, 2))
  local x = torch.randn(1, 2)
  T.raises(function() torch.onnx.export(model, { x }, 42) end,
    "torch.onnx.export: f must be a file path or an open file, got int")
  T.raises(function() torch.onnx.export(model, { x }, tmp, { training = torch.onnx.TrainingMode.TRAINING }) end,
    "~exporting a model in training mode is not supported")
  model:train()
  T.raises(function() torch.onnx.export(model, { x }, tmp, { training = torch.onnx.TrainingMode.PRESERVE }) end,
    "~exporting a model in training mode is not supported")
  model:eval()
  torch.onnx.export(model, { x }, tmp, { training = torch.onnx.TrainingMode.PRESERVE })
  T.check(read_model(tmp).graph.nodes[1].op == "Gemm", "PRESERVE of an eval model")
  T.raises(function() torch.onnx.export(function(a) return torch.atan2(a, a) end, { x }, tmp) end,
    "torch.onnx.export: exporting the operator 'atan2' to ONNX opset version 17 is not supported")
  T.raises(function() torch.onnx.export(function(a) return F.max_pool2d(a, 2, { return_indices = true }) end,
    { torch.randn(1, 1, 4, 4) }, tmp) end, "~the indices of max_pool2d")
  T.raises(function() torch.onnx.export(nn.AdaptiveMaxPool2d(3), { torch.randn(1, 1, 5, 5) }, tmp) end,
    "~adaptive_max_pool2d from 5x5 to 3x3 is not supported")
  T.raises(function() torch.onnx.export(model, { x }, tmp, { colour = 1 }) end, "~unknown keyword 'colour'")
  T.raises(function() torch.onnx.export(model, { x }, tmp, { verify = true }) end, "~verify=true needs onnxruntime")
  T.raises(function() torch.onnx.export(model, { x }, tmp, { opset_version = 7 }) end, "~opset_version 7 is not supported")
  T.raises(function() torch.onnx.export(model, { "x" }, tmp) end, "~args must be tensors")
  -- a failing forward leaves no trace running
  T.raises(function() torch.onnx.export(model, { torch.randn(1, 3) }, tmp) end, "~")
  T.eq(torch._tracer.running(), false)
  T.eq(torch.onnx.is_in_onnx_export(), false)
  local p <close> = torch.profiler.profile()
  T.raises(function() torch.onnx.export(model, { x }, tmp) end, "~already running")
end)

os.remove(tmp)
