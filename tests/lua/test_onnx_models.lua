-- torch.onnx.export of more models and ops: each file is read back and run by the plain-Lua
-- interpreter of tests/lua/onnx_ref.lua (explicit loops, no nnrepl tensor op) and its outputs
-- compared with the model's. Small torchvision classifiers (MobileNetV2 / V3-small, EfficientNet-B0,
-- a small DenseNet, a small VisionTransformer), an Embedding + TransformerEncoder text model,
-- Resize (F.interpolate), ConvTranspose, GroupNorm / InstanceNorm, pads, slicing and joining,
-- argmax / topk / sort, activations, LSTM / GRU, constant folding and the errors.
local T = ...
local nn = torch.nn
local F = nn.functional
local tv = require "torchvision"

local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local R = dofile(here .. "onnx_ref.lua")
local read_model, run_model, from_tensor = R.read_model, R.run_model, R.from_tensor

local tmp = os.tmpname()

local function ops_of(m)
  local list = {}
  for _, n in ipairs(m.graph.nodes) do list[#list + 1] = n.op end
  return table.concat(list, " ")
end

local function count_ops(m)
  local c = {}
  for _, n in ipairs(m.graph.nodes) do c[n.op] = (c[n.op] or 0) + 1 end
  return c
end

-- nodes whose inputs are all initializers (what constant folding removes)
local function constant_nodes(m)
  local list = {}
  for _, n in ipairs(m.graph.nodes) do
    local all = #n.inputs > 0
    for _, x in ipairs(n.inputs) do all = all and (x == "" or m.graph.inits[x] ~= nil) end
    if all then list[#list + 1] = n.op end
  end
  return table.concat(list, " ")
end

-- exports f on args, runs the file on the same inputs and compares every output with f's own
-- (relative to the largest output value); the folded graph has no constant nodes left. Returns the model.
local function check_export(msg, f, args, opts, tol)
  opts = opts or {}
  if type(f) == "table" and f.eval then f:eval() end
  torch.onnx.export(f, args, tmp, opts)
  local m = read_model(tmp)
  local feeds = {}
  local function flat_args(v, out)
    if torch.is_tensor(v) then out[#out + 1] = v else for _, w in ipairs(v) do flat_args(w, out) end end
    return out
  end
  for k, x in ipairs(flat_args(args, {})) do feeds[(opts.input_names or {})[k] or ("input_" .. (k - 1))] = from_tensor(x) end
  local got = run_model(m, feeds)
  local res = table.pack(f(table.unpack(args)))
  local ys = {}
  local function flat(v)
    if torch.is_tensor(v) then ys[#ys + 1] = v else for _, w in ipairs(v) do flat(w) end end
  end
  for k = 1, res.n do flat(res[k]) end
  T.eq(#got, #ys, msg .. ": number of outputs")
  for k, y in ipairs(ys) do
    local want = from_tensor(y)
    T.eq(got[k].shape, want.shape, msg .. ": output shape")
    local worst, scale = 0, 0
    for j = 1, #want.data do
      worst = math.max(worst, math.abs(got[k].data[j] - want.data[j]))
      scale = math.max(scale, math.abs(want.data[j]))
    end
    T.check(#got[k].data == #want.data and worst <= (tol or 1e-4) * math.max(scale, 1),
      string.format("%s: output %d max difference %g (largest value %g)", msg, k, worst, scale))
  end
  if opts.do_constant_folding ~= false then T.eq(constant_nodes(m), "", msg .. ": constant nodes left") end
  return m
end

-- random batch norm statistics and affine parameters, linear weights of unit gain and nonzero
-- tokens (torchvision zeroes ViT's head and class token), so that outputs are far from 0
local function randomize(model)
  local _ <close> = torch.no_grad()
  for name, p in model:named_parameters() do
    if p:dim() == 1 then
      p:copy_(name:match("weight$") and torch.randn(p:size()) * 0.2 + 1 or torch.randn(p:size()) * 0.2)
    elseif p:dim() == 2 then
      p:copy_(torch.randn(p:size()) / math.sqrt(p:size(1)))
    elseif p:abs():max():item() == 0 then
      p:copy_(torch.randn(p:size()) * 0.5)
    end
  end
  for name, b in model:named_buffers() do
    if name:match("running_mean$") then b:copy_(torch.randn(b:size()) * 0.2)
    elseif name:match("running_var$") then b:copy_(torch.rand(b:size()) + 0.5) end
  end
  return model
end

local function run_tests(device)
  local function dev(x) return x:to(device) end
  local function model_on(m) return randomize(m):to(device) end

  T.test("torchvision classifiers " .. device, function()
    torch.manual_seed(10)
    local x = dev(torch.randn(1, 3, 32, 32))
    -- MobileNetV2: inverted residuals, ReLU6 as Clip
    local m = check_export("mobilenet_v2", model_on(tv.models.mobilenet_v2({ num_classes = 10 })), { x })
    local c = count_ops(m)
    T.eq({ c.Conv, c.Clip, c.Add, c.Gemm }, { 52, 35, 10, 1 })
    -- MobileNetV3-small: hardswish / hardsigmoid (Add, Clip, Div), squeeze-excitation (pool, Mul)
    m = check_export("mobilenet_v3_small", model_on(tv.models.mobilenet_v3_small({ num_classes = 10 })), { x })
    c = count_ops(m)
    T.eq({ c.Conv, c.GlobalAveragePool, c.Gemm }, { 52, 10, 2 })
    -- EfficientNet-B0: SiLU (Sigmoid, Mul), stochastic depth (the identity in eval)
    m = check_export("efficientnet_b0", model_on(tv.models.efficientnet_b0({ num_classes = 10 })), { x })
    c = count_ops(m)
    T.eq({ c.Conv, c.Sigmoid, c.Add }, { 81, 65, 9 })
    -- a small DenseNet: each layer's torch.cat of the features before it
    m = check_export("densenet", model_on(tv.models.DenseNet({ growth_rate = 4, block_config = { 2, 3 },
      num_init_features = 8, num_classes = 5 })), { x })
    T.eq(count_ops(m).Concat, 5)
    -- a small VisionTransformer: patch conv, class token, attention, layer norms, gelu
    m = check_export("vit", model_on(tv.models.VisionTransformer({ image_size = 32, patch_size = 8, num_layers = 2,
      num_heads = 2, hidden_dim = 8, mlp_dim = 16, num_classes = 3 })), { x }, { opset_version = 20 })
    c = count_ops(m)
    T.eq({ c.Conv, c.LayerNormalization, c.Softmax, c.Gelu }, { 1, 5, 2, 2 })
    -- a small Swin: shifted windows (torch.roll: Concat), the attention mask built slice by slice
    -- (folded), padding to whole windows (window 3 on 8x8 tokens)
    for _, window in ipairs({ 4, 3 }) do
      m = check_export("swin window " .. window, model_on(tv.models.SwinTransformer({ patch_size = { 4, 4 }, embed_dim = 8,
        depths = { 2, 2 }, num_heads = { 2, 2 }, window_size = { window, window }, num_classes = 5 })), { x })
      T.eq(count_ops(m).Softmax, 4)
    end
    -- a small ConvNeXt: LayerNorm2d through permutes, layer scale
    check_export("convnext", model_on(tv.models.ConvNeXt({ block_setting = { { 8, 16, 1 }, { 16, false, 1 } },
      num_classes = 5 })), { x })
  end)

  T.test("embedding + transformer encoder text classifier " .. device, function()
    torch.manual_seed(11)
    local Text = nn.Module:extend("TextNet")
    function Text:__init()
      self.emb = nn.Embedding(20, 8)
      self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, batch_first = true }), 2)
      self.fc = nn.Linear(8, 3)
    end
    function Text:forward(tokens)
      return self.fc(self.encoder(self.emb(tokens) * math.sqrt(8)):mean(1))
    end
    local tokens = dev(torch.tensor({ { 1, 5, 7, 19, 0 }, { 3, 3, 2, 8, 11 } }))
    local m = check_export("text model", model_on(Text()), { tokens }, { input_names = { "tokens" } })
    T.eq(m.graph.inputs[1].elem_type, 7, "int64 tokens")
    T.eq(count_ops(m).Gather, 1)
    T.eq(m.graph.inits["emb.weight"].shape, { 20, 8 })
  end)

  T.test("interpolate as Resize, conv transpose " .. device, function()
    torch.manual_seed(12)
    local x = dev(torch.randn(1, 2, 3, 4))
    local cases = {
      { "nearest x2", { scale_factor = 2 }, "nearest", "asymmetric", "floor" },
      { "nearest x1.5", { scale_factor = 1.5 }, "nearest", "asymmetric", "floor" },
      { "nearest size", { size = { 5, 7 } }, "nearest", "asymmetric", "floor" },
      { "nearest-exact", { size = { 5, 7 }, mode = "nearest-exact" }, "nearest", "half_pixel", "round_prefer_ceil" },
      { "bilinear x2", { scale_factor = 2, mode = "bilinear" }, "linear", "pytorch_half_pixel" },
      { "bilinear size", { size = { 2, 7 }, mode = "bilinear" }, "linear", "pytorch_half_pixel" },
      { "bilinear corners", { size = { 5, 3 }, mode = "bilinear", align_corners = true }, "linear", "align_corners" },
    }
    for _, case in ipairs(cases) do
      local m = check_export(case[1], function(a) return F.interpolate(a, case[2]) end, { x })
      T.eq(ops_of(m), "Resize", case[1])
      local a = m.graph.nodes[1].attrs
      T.eq({ a.mode, a.coordinate_transformation_mode, a.nearest_mode }, { case[3], case[4], case[5] }, case[1])
    end
    check_export("nn.Upsample", nn.Upsample({ scale_factor = 2, mode = "bilinear" }), { x })
    -- a mode Resize does not take here (1-D linear) exports as the gathers it runs
    local m = check_export("linear 1-d", function(a) return F.interpolate(a, { size = 7, mode = "linear" }) end,
      { dev(torch.randn(1, 2, 4)) })
    T.check(ops_of(m):find("Gather", 1, true) ~= nil, ops_of(m))
    -- ConvTranspose2d: stride, padding, output_padding, dilation, groups, bias
    for _, cfg in ipairs({ { 3, 2, 3, { stride = 2, padding = 1, output_padding = 1 } },
      { 4, 6, { 2, 3 }, { stride = { 1, 2 }, groups = 2, dilation = 2, bias = false } } }) do
      local ct = nn.ConvTranspose2d(table.unpack(cfg)):to(device)
      m = check_export("conv_transpose2d", ct, { dev(torch.randn(2, cfg[1], 3, 4)) })
      T.eq(m.graph.nodes[1].op, "ConvTranspose")
    end
    -- a small U-Net-like decoder: conv, max pool, conv transpose back up, skip concat, bilinear resize
    local Dec = nn.Module:extend("Dec")
    function Dec:__init()
      self.down = nn.Conv2d(2, 4, 3, { padding = 1 })
      self.up = nn.ConvTranspose2d(4, 2, 2, { stride = 2 })
      self.out = nn.Conv2d(4, 1, 1)
    end
    function Dec:forward(a)
      local h = F.max_pool2d(F.relu(self.down(a)), 2)
      local u = torch.cat({ self.up(h), a }, 1)
      return F.interpolate(self.out(u), { scale_factor = 2, mode = "bilinear" })
    end
    check_export("u-net-like", Dec():to(device), { dev(torch.randn(1, 2, 4, 6)) })
  end)

  T.test("normalisations, pads, slicing and joining " .. device, function()
    torch.manual_seed(13)
    local x = dev(torch.randn(2, 4, 3, 5))
    check_export("group_norm", model_on(nn.GroupNorm(2, 4)), { x })
    check_export("instance_norm", model_on(nn.InstanceNorm2d(4, { affine = true })), { x })
    check_export("layer_norm 2 dims", model_on(nn.LayerNorm({ 3, 5 })), { x })
    check_export("normalize / norms", function(a)
      return F.normalize(a, { dim = 1 }), a:norm(1, 3), a:norm(math.huge, 2), a:norm(3, 1), torch.linalg.vector_norm(a, 0.5, { 1, 2 })
    end, { x })
    -- adaptive average pooling to sizes that do not divide (VGG's 7x7 on small images): MatMul
    local m = check_export("adaptive_avg_pool2d 3x5 -> 2x7", nn.AdaptiveAvgPool2d({ 2, 7 }), { x })
    T.eq(ops_of(m), "MatMul MatMul")
    check_export("std / var", function(a) return a:std(3) + a:var({ 1, 2 }, { correction = 0, keepdim = true }):mean() end, { x })
    for _, mode in ipairs({ "constant", "reflect", "replicate", "circular" }) do
      check_export("pad " .. mode, function(a) return F.pad(a, { 1, 2, 2, 1 }, mode) end, { x })
    end
    check_export("slices", function(a) return a[":, 1:3, ::2, -1"] * a[":, :2, 1:, 0"]:sum(2) end, { x })
    check_export("split / chunk / unbind", function(a)
      local p = torch.split(a, { 1, 3 }, 1)
      local q = a:chunk(2, 3)
      local r = a:unbind(0)
      return p[1] + p[2]:mean(1, true), q[1] * 2, r[2]
    end, { x })
    check_export("cat / stack / flip", function(a) return torch.stack({ a, a:flip(3) }, 1), torch.cat({ a, -a }, 2) end, { x })
    check_export("parts written into a box, roll", function(a)
      local b = torch.zeros(2, 4, 3, 5, { device = a.device })
      b[":, 1:3"] = a[":, :2"] * 2
      b[":, :, 0"] = 1
      b[":, :, :, 4"] = a[":, :, :, 0"]
      return b + a, torch.roll(a, { 1, -2 }, { 2, 3 })
    end, { x })
    check_export("expand / repeat / tile / permute", function(a)
      return a[":, :1"]:expand(2, 3, 3, 5) + a:tile({ 1, 1, 1, 1 })[":, 1:"], a["repeat"](a, 1, 2, 1, 1):permute(0, 2, 3, 1)
    end, { x })
  end)

  T.test("argmax, max along a dim, topk, sort " .. device, function()
    torch.manual_seed(14)
    local x = dev(torch.randn(2, 5, 3))
    local m = check_export("argmax / argmin", function(a) return a:argmax(1), a:argmin(2, true) end, { x })
    T.eq(ops_of(m):match("Arg%a+.*Arg%a+") ~= nil, true)
    check_export("max / min along a dim", function(a)
      local v, i = a:max(1)
      local w, j = torch.min(a, 2, true)
      return v, i, w, j
    end, { x })
    m = check_export("topk", function(a) return torch.topk(a, 2, 1) end, { x })
    T.check(ops_of(m):find("TopK", 1, true) ~= nil, ops_of(m))
    check_export("topk smallest", function(a) return torch.topk(a, 3, { dim = -1, largest = false }) end, { x })
    check_export("sort", function(a) return a:sort(1, true) end, { x })
    m = check_export("cumsum", function(a) return a:cumsum(1), torch.cumsum(a:gt(0), -1) end, { x })
    T.eq(count_ops(m).CumSum, 2)
    -- positions from a mask's running count, a common text-model idiom
    check_export("position ids", function(ids)
      local mask = ids:ne(0):to(torch.int64)
      return torch.cumsum(mask, 1) * mask
    end, { dev(torch.tensor({ { 4, 0, 5, 6 }, { 0, 0, 7, 1 } })) })
    -- the sort follows the input: a second input sorts differently
    torch.onnx.export(function(a) return torch.sort(a, 0) end, { dev(torch.tensor({ 3.0, 1.0, 2.0 })) }, tmp)
    local outs = run_model(read_model(tmp), { input_0 = from_tensor(torch.tensor({ 1.0, 3.0, 2.0, })) })
    T.eq(outs[1].data, { 1.0, 2.0, 3.0 })
    T.eq(outs[2].data, { 0, 2, 1 })
  end)

  T.test("activations " .. device, function()
    torch.manual_seed(15)
    local x = dev(torch.randn(2, 3, 4) * 3)
    check_export("remainder", function(a) return torch.remainder(a, 1.5), a:to(torch.int64) % -3 end, { x })
    local mods = { nn.LeakyReLU(0.1), nn.ELU(), nn.PReLU(), nn.Softplus(), nn.Softplus(2, 5), nn.SiLU(), nn.Hardswish(),
      nn.Hardsigmoid(), nn.ReLU6(), nn.Mish(), nn.SELU(), nn.CELU(0.5), nn.GELU("tanh"), nn.Softsign(), nn.Hardtanh(-2, 2),
      nn.LogSigmoid(), nn.Tanhshrink(), nn.Softshrink(), nn.Hardshrink(), nn.Threshold(0.1, 2), nn.Softmin(1) }
    for _, mod in ipairs(mods) do check_export(tostring(mod), mod:to(device), { x }) end
  end)

  T.test("LSTM and GRU, results flattened " .. device, function()
    torch.manual_seed(16)
    local lstm = nn.LSTM(4, 5, { num_layers = 2, batch_first = true }):to(device)
    local m = check_export("lstm", lstm, { dev(torch.randn(2, 3, 4)) }, { output_names = { "out", "h", "c" } })
    T.eq({ m.graph.outputs[1].dims, m.graph.outputs[2].dims, m.graph.outputs[3].dims }, { { 2, 3, 5 }, { 2, 2, 5 }, { 2, 2, 5 } })
    check_export("gru", nn.GRU(4, 3, { bidirectional = true }):to(device), { dev(torch.randn(3, 2, 4)) })
    check_export("lstm with h0, c0", lstm, { dev(torch.randn(2, 3, 4)), { dev(torch.randn(2, 2, 5)), dev(torch.randn(2, 2, 5)) } })
  end)

  T.test("constant folding " .. device, function()
    torch.manual_seed(17)
    local Net = nn.Module:extend("FoldNet")
    function Net:__init() self.w = nn.Parameter(torch.randn(3, 4)) end
    function Net:forward(a)
      local pos = torch.arange(4, { device = a.device }):to(a.dtype) * 0.5 + 1 -- made in forward: constants
      -- a transposed copy of a parameter; a strided slice of it, summed
      return (a + pos):matmul(self.w:t():contiguous()) * self.w[":, ::2"]:sum(1)
    end
    local model = Net():to(device)
    local x = dev(torch.randn(2, 4))
    local m = check_export("unfolded", model, { x }, { do_constant_folding = false })
    T.check(constant_nodes(m) ~= "", "without folding: " .. constant_nodes(m))
    m = check_export("folded", model, { x })
    T.eq(ops_of(m), "Add Gemm Mul")
    -- the folded values: pos, w^T and the sums as initializers
    local w = model.w:detach():cpu()
    local wt, sums = w:t():reshape(-1):tolist(), {}
    for i = 0, 2 do sums[i + 1] = w[i][0]:item() + w[i][2]:item() end
    local seen = 0
    for _, name in ipairs(m.graph.init_list) do
      local t = m.graph.inits[name]
      if #t.shape == 1 and t.shape[1] == 4 then T.eq(t.data, { 1.0, 1.5, 2.0, 2.5 }); seen = seen + 1 end
      if #t.shape == 1 and t.shape[1] == 3 then
        for i = 1, 3 do T.near(t.data[i], sums[i], 1e-6) end
        seen = seen + 1
      end
      if #t.shape == 2 then T.eq(t.shape, { 4, 3 }); T.eq(t.data, wt); seen = seen + 1 end
    end
    T.eq(seen, 3)
    -- a constant made in forward and changed afterwards: its uses before the change see zeros
    check_export("constant then changed", function(a)
      local z = torch.zeros(3, { device = a.device })
      local c = z + 1
      z[":2"] = a[":2"]
      return c * a, z
    end, { dev(torch.randn(3)) })
    -- without export_params the weight is an input: nothing to fold there
    torch.onnx.export(model, { x }, tmp, { export_params = false })
    T.check(ops_of(read_model(tmp)):find("Transpose", 1, true) ~= nil)
  end)
end

run_tests("cpu")
if torch.cuda.is_available() then
  -- the reference runs in float64: TF32 convolutions and RNNs (cuDNN's default) would be off by 1e-3
  local tf32 = torch.backends.cudnn.allow_tf32
  torch.backends.cudnn.allow_tf32 = false
  run_tests("cuda")
  torch.backends.cudnn.allow_tf32 = tf32
else T.skip("no CUDA device", 8) end

T.test("densenet121 structure", function()
  torch.manual_seed(18)
  torch.onnx.export(tv.models.densenet121(), { torch.randn(1, 3, 32, 32) }, tmp)
  local c = count_ops(read_model(tmp))
  T.eq({ c.Conv, c.Concat, c.BatchNormalization, c.AveragePool, c.Gemm }, { 120, 58, 121, 3, 1 })
end)

T.test("errors", function()
  local x = torch.randn(2, 3)
  -- an op with no ONNX mapping names itself
  T.raises(function() torch.onnx.export(function(a) return a:frac() end, { x }, tmp) end,
    "torch.onnx.export: exporting the operator 'frac' to ONNX opset version 17 is not supported")
  T.raises(function() torch.onnx.export(function(a) return a:cumprod(1) end, { x }, tmp) end,
    "torch.onnx.export: exporting cumprod is not supported: ONNX has no cumulative product")
  T.raises(function() torch.onnx.export(function(a) return torch.cumprod(a, 0) end, { x }, tmp) end, "~exporting cumprod")
  T.raises(function() torch.onnx.export(function(a) return a, { a, "x" } end, { x }, tmp) end,
    "torch.onnx.export: the model's outputs must be tensors or lists of them, got str")
  -- bool-mask indexing counts on the host: an error, not positions frozen into the graph
  local mask_msg = "~indexing with a bool mask (x[mask], masked_select, nonzero, unique) depends on the values and cannot be traced"
  T.raises(function() torch.onnx.export(function(a) return a[a:gt(0)] end, { x }, tmp) end, mask_msg)
  T.raises(function() torch.onnx.export(function(a) return torch.nonzero(a) end, { x }, tmp) end, mask_msg)
  T.raises(function() torch.onnx.export(function(a) a[a:lt(0)] = 0; return a end, { x:clone() }, tmp) end, mask_msg)
  T.eq(x[x:gt(100)]:numel(), 0, "bool masks work again after the export")
  T.raises(function() torch.onnx.export(function(a) return torch.sort(a:sum()) end, { x }, tmp) end,
    "torch.onnx.export: sorting a 0-d tensor is not supported")
  -- the wrapped functions (and cuDNN's switch) are restored after an export, also one that failed
  local interp, argsort = F.interpolate, torch._argsort
  local seen
  T.raises(function() torch.onnx.export(function(a) seen = torch.backends.cudnn.enabled; error("boom") end, { x }, tmp) end, "~boom")
  T.eq(seen, false, "cuDNN off while exporting")
  T.check(F.interpolate == interp, "interpolate restored")
  T.check(torch._argsort == argsort, "argsort restored")
  T.eq(torch.backends.cudnn.enabled, true, "cudnn restored")
  do -- a trace that cannot start changes nothing
    local p <close> = torch.profiler.profile()
    T.raises(function() torch.onnx.export(function(a) return F.interpolate(a, { scale_factor = 2 }) end,
      { torch.randn(1, 1, 2, 2) }, tmp) end, "~already running")
  end
  T.check(F.interpolate == interp and torch.backends.cudnn.enabled == true, "untouched by a failed start")
end)

os.remove(tmp)
