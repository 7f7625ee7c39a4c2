-- torchvision.models, continued: MobileNetV2, MobileNetV3 (small, large), SqueezeNet (1_0, 1_1),
-- ShuffleNetV2 (x0_5, x1_0), DenseNet-121, EfficientNet-B0, VisionTransformer (vit_b_16 and any
-- configuration) and ConvNeXt-tiny, built as torchvision 0.2x builds them: the same submodule
-- names (state_dict keys such as "features.1.conv.0.0.weight"), parameter counts, initialisation
-- and forward. tv_models.lua calls this file's function with its `models` table and argument helpers.
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional
local init = nn.init

return function(models, H)

-- tv_models.lua's argument helpers (errors point at the user's line)
local fail, failf, parse, check_int = H.fail, H.failf, H.parse, H.check_int
local function builder_opts(...)
  local o = H.builder_opts(...)
  o.weights, o.progress, o.pretrained = nil, nil, nil
  return o
end

local function isinstance(m, cls) return nn.isinstance(m, cls) end
local function floordiv(a, b) return math.floor(a / b) end

-- torchvision.models._utils._make_divisible
local function make_divisible(v, divisor, min_value)
  min_value = min_value or divisor
  local new_v = math.max(min_value, floordiv(math.floor(v + divisor / 2), divisor) * divisor)
  if new_v < 0.9 * v then new_v = new_v + divisor end
  return math.tointeger(new_v) or new_v
end
models._make_divisible = make_divisible

-- ---- torchvision.ops layers (tv_ops_layers), also reachable as models.X ----

local ops_layers = require "tv_ops_layers"
local Conv2dNormActivation, SqueezeExcitation = ops_layers.Conv2dNormActivation, ops_layers.SqueezeExcitation
local StochasticDepth, Permute = ops_layers.StochasticDepth, ops_layers.Permute
models.Conv2dNormActivation, models.SqueezeExcitation = Conv2dNormActivation, SqueezeExcitation
models.StochasticDepth, models.Permute = StochasticDepth, Permute
models._stochastic_depth = ops_layers.stochastic_depth

-- ---- MobileNetV2 ----

local InvertedResidualV2 = nn.Module:extend("InvertedResidual")
models.InvertedResidual = InvertedResidualV2
function InvertedResidualV2:__init(...)
  local o = parse("InvertedResidual", { { "inp", U.REQUIRED }, { "oup", U.REQUIRED }, { "stride", U.REQUIRED },
    { "expand_ratio", U.REQUIRED }, { "norm_layer" } }, ...)
  self.stride = o.stride
  if o.stride ~= 1 and o.stride ~= 2 then failf("stride should be 1 or 2 instead of %s", U.pystr(o.stride)) end
  local norm_layer = o.norm_layer or nn.BatchNorm2d
  local hidden = math.floor(o.inp * o.expand_ratio + 0.5)
  self.use_res_connect = o.stride == 1 and o.inp == o.oup
  local layers = {}
  if o.expand_ratio ~= 1 then
    layers[#layers + 1] = Conv2dNormActivation(o.inp, hidden, { kernel_size = 1, norm_layer = norm_layer,
      activation_layer = nn.ReLU6 })
  end
  layers[#layers + 1] = Conv2dNormActivation(hidden, hidden, { stride = o.stride, groups = hidden,
    norm_layer = norm_layer, activation_layer = nn.ReLU6 })
  layers[#layers + 1] = nn.Conv2d(hidden, o.oup, { kernel_size = 1, stride = 1, padding = 0, bias = false })
  layers[#layers + 1] = norm_layer(o.oup)
  self.conv = nn.Sequential(table.unpack(layers))
  self.out_channels = o.oup
  self._is_cn = o.stride > 1
end
function InvertedResidualV2:forward(x)
  if self.use_res_connect then return x + self.conv(x) end
  return self.conv(x)
end

-- convs kaiming_normal_(fan_out), BN 1/0, Linear weights by linear_init with bias 0 (default:
-- N(0, 0.01), MobileNetV2 and V3; EfficientNet's is uniform)
local function mobilenet_init(self, linear_init)
  for _, m in ipairs(self:modules()) do
    if isinstance(m, nn.Conv2d) then
      init.kaiming_normal_(m.weight, { mode = "fan_out" })
      if m.bias ~= nil then init.zeros_(m.bias) end
    elseif isinstance(m, { nn.BatchNorm2d, nn.GroupNorm }) then
      init.ones_(m.weight)
      init.zeros_(m.bias)
    elseif isinstance(m, nn.Linear) then
      if linear_init then linear_init(m) else init.normal_(m.weight, 0, 0.01) end
      init.zeros_(m.bias)
    end
  end
end

local MobileNetV2 = nn.Module:extend("MobileNetV2")
models.MobileNetV2 = MobileNetV2
local mnv2_keys = { { "num_classes", 1000 }, { "width_mult", 1.0 }, { "inverted_residual_setting" },
  { "round_nearest", 8 }, { "block" }, { "norm_layer" }, { "dropout", 0.2 } }
function MobileNetV2:__init(...)
  local o = parse("MobileNetV2", mnv2_keys, ...)
  local num_classes = check_int("MobileNetV2", "num_classes", o.num_classes, 1)
  local block = o.block or InvertedResidualV2
  local norm_layer = o.norm_layer or nn.BatchNorm2d
  local setting = o.inverted_residual_setting or { { 1, 16, 1, 1 }, { 6, 24, 2, 2 }, { 6, 32, 3, 2 },
    { 6, 64, 4, 2 }, { 6, 96, 3, 1 }, { 6, 160, 3, 2 }, { 6, 320, 1, 1 } }
  if #setting == 0 or #setting[1] ~= 4 then
    failf("inverted_residual_setting should be non-empty or a 4-element list, got %s", U.pystr(setting))
  end
  local input_channel = make_divisible(32 * o.width_mult, o.round_nearest)
  self.last_channel = make_divisible(1280 * math.max(1.0, o.width_mult), o.round_nearest)
  local features = { Conv2dNormActivation(3, input_channel, { stride = 2, norm_layer = norm_layer,
    activation_layer = nn.ReLU6 }) }
  for _, s in ipairs(setting) do
    local t, c, n, st = s[1], s[2], s[3], s[4]
    local output_channel = make_divisible(c * o.width_mult, o.round_nearest)
    for i = 1, n do
      features[#features + 1] = block(input_channel, output_channel, i == 1 and st or 1,
        { expand_ratio = t, norm_layer = norm_layer })
      input_channel = output_channel
    end
  end
  features[#features + 1] = Conv2dNormActivation(input_channel, self.last_channel, { kernel_size = 1,
    norm_layer = norm_layer, activation_layer = nn.ReLU6 })
  self.features = nn.Sequential(table.unpack(features))
  self.classifier = nn.Sequential(nn.Dropout({ p = o.dropout }), nn.Linear(self.last_channel, num_classes))
  mobilenet_init(self)
end
function MobileNetV2:forward(x)
  x = self.features(x)
  x = F.adaptive_avg_pool2d(x, { 1, 1 })
  x = torch.flatten(x, 1)
  return self.classifier(x)
end

function models.mobilenet_v2(...)
  local o = builder_opts("mobilenet_v2", mnv2_keys, ...)
  return MobileNetV2(o)
end

-- ---- MobileNetV3 ----

local Hardswish = nn.Hardswish

-- InvertedResidualConfig(input_channels, kernel, expanded_channels, out_channels, use_se, activation
-- ("RE" or "HS"), stride, dilation, width_mult)
local function ir_config(ic, k, ec, oc, use_se, act, stride, dilation, width_mult)
  local function adjust(c) return make_divisible(c * width_mult, 8) end
  return { input_channels = adjust(ic), kernel = k, expanded_channels = adjust(ec), out_channels = adjust(oc),
    use_se = use_se, use_hs = act == "HS", stride = stride, dilation = dilation }
end

local InvertedResidualV3 = nn.Module:extend("InvertedResidual")
models.InvertedResidualV3 = InvertedResidualV3
function InvertedResidualV3:__init(cnf, norm_layer, se_layer)
  if cnf.stride < 1 or cnf.stride > 2 then fail("illegal stride value") end
  se_layer = se_layer or function(c, s) return SqueezeExcitation(c, s, { scale_activation = nn.Hardsigmoid }) end
  self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
  local act = cnf.use_hs and Hardswish or nn.ReLU
  local layers = {}
  if cnf.expanded_channels ~= cnf.input_channels then
    layers[#layers + 1] = Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels, { kernel_size = 1,
      norm_layer = norm_layer, activation_layer = act })
  end
  local stride = cnf.dilation > 1 and 1 or cnf.stride
  layers[#layers + 1] = Conv2dNormActivation(cnf.expanded_channels, cnf.expanded_channels, {
    kernel_size = cnf.kernel, stride = stride, dilation = cnf.dilation, groups = cnf.expanded_channels,
    norm_layer = norm_layer, activation_layer = act })
  if cnf.use_se then
    layers[#layers + 1] = se_layer(cnf.expanded_channels, make_divisible(floordiv(cnf.expanded_channels, 4), 8))
  end
  layers[#layers + 1] = Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels, { kernel_size = 1,
    norm_layer = norm_layer, activation_layer = false })
  self.block = nn.Sequential(table.unpack(layers))
  self.out_channels = cnf.out_channels
  self._is_cn = cnf.stride > 1
end
function InvertedResidualV3:forward(x)
  local result = self.block(x)
  if self.use_res_connect then result = result:add_(x) end
  return result
end

local function bn_v3(c) return nn.BatchNorm2d(c, { eps = 0.001, momentum = 0.01 }) end

local MobileNetV3 = nn.Module:extend("MobileNetV3")
models.MobileNetV3 = MobileNetV3
function MobileNetV3:__init(...)
  local o = parse("MobileNetV3", { { "inverted_residual_setting", U.REQUIRED }, { "last_channel", U.REQUIRED },
    { "num_classes", 1000 }, { "block" }, { "norm_layer" }, { "dropout", 0.2 } }, ...)
  local num_classes = check_int("MobileNetV3", "num_classes", o.num_classes, 1)
  local setting = o.inverted_residual_setting
  if #setting == 0 then fail("The inverted_residual_setting should not be empty") end
  local block = o.block or InvertedResidualV3
  local norm_layer = o.norm_layer or bn_v3
  local layers = { Conv2dNormActivation(3, setting[1].input_channels, { kernel_size = 3, stride = 2,
    norm_layer = norm_layer, activation_layer = Hardswish }) }
  for _, cnf in ipairs(setting) do layers[#layers + 1] = block(cnf, norm_layer) end
  local lastconv_in = setting[#setting].out_channels
  local lastconv_out = 6 * lastconv_in
  layers[#layers + 1] = Conv2dNormActivation(lastconv_in, lastconv_out, { kernel_size = 1, norm_layer = norm_layer,
    activation_layer = Hardswish })
  self.features = nn.Sequential(table.unpack(layers))
  self.avgpool = nn.AdaptiveAvgPool2d(1)
  self.classifier = nn.Sequential(nn.Linear(lastconv_out, o.last_channel), Hardswish(true),
    nn.Dropout({ p = o.dropout, inplace = true }), nn.Linear(o.last_channel, num_classes))
  mobilenet_init(self)
end
function MobileNetV3:forward(x)
  x = self.avgpool(self.features(x))
  x = torch.flatten(x, 1)
  return self.classifier(x)
end

local function mobilenet_v3_conf(arch, width_mult, reduced_tail, dilated)
  local rd = reduced_tail and 2 or 1
  local d = dilated and 2 or 1
  local rows, last
  if arch == "mobilenet_v3_large" then
    rows = { { 16, 3, 16, 16, false, "RE", 1, 1 }, { 16, 3, 64, 24, false, "RE", 2, 1 },
      { 24, 3, 72, 24, false, "RE", 1, 1 }, { 24, 5, 72, 40, true, "RE", 2, 1 }, { 40, 5, 120, 40, true, "RE", 1, 1 },
      { 40, 5, 120, 40, true, "RE", 1, 1 }, { 40, 3, 240, 80, false, "HS", 2, 1 }, { 80, 3, 200, 80, false, "HS", 1, 1 },
      { 80, 3, 184, 80, false, "HS", 1, 1 }, { 80, 3, 184, 80, false, "HS", 1, 1 },
      { 80, 3, 480, 112, true, "HS", 1, 1 }, { 112, 3, 672, 112, true, "HS", 1, 1 },
      { 112, 5, 672, 160 // rd, true, "HS", 2, d }, { 160 // rd, 5, 960 // rd, 160 // rd, true, "HS", 1, d },
      { 160 // rd, 5, 960 // rd, 160 // rd, true, "HS", 1, d } }
    last = 1280 // rd
  else
    rows = { { 16, 3, 16, 16, true, "RE", 2, 1 }, { 16, 3, 72, 24, false, "RE", 2, 1 },
      { 24, 3, 88, 24, false, "RE", 1, 1 }, { 24, 5, 96, 40, true, "HS", 2, 1 }, { 40, 5, 240, 40, true, "HS", 1, 1 },
      { 40, 5, 240, 40, true, "HS", 1, 1 }, { 40, 5, 120, 48, true, "HS", 1, 1 }, { 48, 5, 144, 48, true, "HS", 1, 1 },
      { 48, 5, 288, 96 // rd, true, "HS", 2, d }, { 96 // rd, 5, 576 // rd, 96 // rd, true, "HS", 1, d },
      { 96 // rd, 5, 576 // rd, 96 // rd, true, "HS", 1, d } }
    last = 1024 // rd
  end
  local setting = {}
  for i, r in ipairs(rows) do
    setting[i] = ir_config(r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], width_mult)
  end
  return setting, make_divisible(last * width_mult, 8)
end

local mnv3_keys = { { "num_classes", 1000 }, { "width_mult", 1.0 }, { "reduced_tail", false }, { "dilated", false },
  { "block" }, { "norm_layer" }, { "dropout", 0.2 } }
for _, arch in ipairs({ "mobilenet_v3_large", "mobilenet_v3_small" }) do
  models[arch] = function(...)
    local o = builder_opts(arch, mnv3_keys, ...)
    local setting, last = mobilenet_v3_conf(arch, o.width_mult, o.reduced_tail, o.dilated)
    return MobileNetV3(setting, last, { num_classes = o.num_classes, block = o.block, norm_layer = o.norm_layer,
      dropout = o.dropout })
  end
end

-- ---- SqueezeNet ----

local Fire = nn.Module:extend("Fire")
models.Fire = Fire
function Fire:__init(inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes)
  self.inplanes = inplanes
  self.squeeze = nn.Conv2d(inplanes, squeeze_planes, { kernel_size = 1 })
  self.squeeze_activation = nn.ReLU(true)
  self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, { kernel_size = 1 })
  self.expand1x1_activation = nn.ReLU(true)
  self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, { kernel_size = 3, padding = 1 })
  self.expand3x3_activation = nn.ReLU(true)
end
function Fire:forward(x)
  x = self.squeeze_activation(self.squeeze(x))
  return torch.cat({ self.expand1x1_activation(self.expand1x1(x)), self.expand3x3_activation(self.expand3x3(x)) }, 1)
end

local SqueezeNet = nn.Module:extend("SqueezeNet")
models.SqueezeNet = SqueezeNet
function SqueezeNet:__init(...)
  local o = parse("SqueezeNet", { { "version", "1_0" }, { "num_classes", 1000 }, { "dropout", 0.5 } }, ...)
  local num_classes = check_int("SqueezeNet", "num_classes", o.num_classes, 1)
  self.num_classes = num_classes
  local function pool() return nn.MaxPool2d({ kernel_size = 3, stride = 2, ceil_mode = true }) end
  if o.version == "1_0" then
    self.features = nn.Sequential(nn.Conv2d(3, 96, { kernel_size = 7, stride = 2 }), nn.ReLU(true), pool(),
      Fire(96, 16, 64, 64), Fire(128, 16, 64, 64), Fire(128, 32, 128, 128), pool(),
      Fire(256, 32, 128, 128), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), pool(),
      Fire(512, 64, 256, 256))
  elseif o.version == "1_1" then
    self.features = nn.Sequential(nn.Conv2d(3, 64, { kernel_size = 3, stride = 2 }), nn.ReLU(true), pool(),
      Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(), Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(),
      Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256))
  else
    failf("Unsupported SqueezeNet version %s: 1_0 or 1_1 expected", tostring(o.version))
  end
  local final_conv = nn.Conv2d(512, num_classes, { kernel_size = 1 })
  self.classifier = nn.Sequential(nn.Dropout({ p = o.dropout }), final_conv, nn.ReLU(true),
    nn.AdaptiveAvgPool2d({ 1, 1 }))
  for _, m in ipairs(self:modules()) do
    if isinstance(m, nn.Conv2d) then
      if m == final_conv then init.normal_(m.weight, 0.0, 0.01) else init.kaiming_uniform_(m.weight) end
      if m.bias ~= nil then init.constant_(m.bias, 0) end
    end
  end
end
function SqueezeNet:forward(x)
  x = self.features(x)
  x = self.classifier(x)
  return torch.flatten(x, 1)
end

for _, v in ipairs({ "1_0", "1_1" }) do
  local name = "squeezenet" .. v
  models[name] = function(...)
    local o = builder_opts(name, { { "num_classes", 1000 }, { "dropout", 0.5 } }, ...)
    return SqueezeNet(v, { num_classes = o.num_classes, dropout = o.dropout })
  end
end

-- ---- ShuffleNetV2 ----

local function channel_shuffle(x, groups)
  local s = x.shape:totable()
  local b, c, h, w = s[1], s[2], s[3], s[4]
  x = x:view(b, groups, c // groups, h, w)
  x = x:transpose(1, 2):contiguous()
  return x:view(b, -1, h, w)
end
models._channel_shuffle = channel_shuffle

local function depthwise_conv(i, o, k, s, p, bias)
  return nn.Conv2d(i, o, { kernel_size = k, stride = s, padding = p, bias = bias or false, groups = i })
end

local ShuffleBlock = nn.Module:extend("InvertedResidual")
models.ShuffleNetInvertedResidual = ShuffleBlock
function ShuffleBlock:__init(inp, oup, stride)
  if stride < 1 or stride > 3 then fail("illegal stride value") end
  self.stride = stride
  local bf = oup // 2
  if stride == 1 and inp ~= bf * 2 then
    failf("Invalid combination of stride %d, inp %d and oup %d values. If stride == 1 then inp should be equal to " ..
      "oup // 2 << 1.", stride, inp, oup)
  end
  if stride > 1 then
    self.branch1 = nn.Sequential(depthwise_conv(inp, inp, 3, stride, 1), nn.BatchNorm2d(inp),
      nn.Conv2d(inp, bf, { kernel_size = 1, stride = 1, padding = 0, bias = false }), nn.BatchNorm2d(bf), nn.ReLU(true))
  else
    self.branch1 = nn.Sequential()
  end
  self.branch2 = nn.Sequential(
    nn.Conv2d(stride > 1 and inp or bf, bf, { kernel_size = 1, stride = 1, padding = 0, bias = false }),
    nn.BatchNorm2d(bf), nn.ReLU(true),
    depthwise_conv(bf, bf, 3, stride, 1), nn.BatchNorm2d(bf),
    nn.Conv2d(bf, bf, { kernel_size = 1, stride = 1, padding = 0, bias = false }), nn.BatchNorm2d(bf), nn.ReLU(true))
end
function ShuffleBlock:forward(x)
  local out
  if self.stride == 1 then
    local parts = x:chunk(2, 1)
    out = torch.cat({ parts[1], self.branch2(parts[2]) }, 1)
  else
    out = torch.cat({ self.branch1(x), self.branch2(x) }, 1)
  end
  return channel_shuffle(out, 2)
end

local ShuffleNetV2 = nn.Module:extend("ShuffleNetV2")
models.ShuffleNetV2 = ShuffleNetV2
function ShuffleNetV2:__init(...)
  local o = parse("ShuffleNetV2", { { "stages_repeats", U.REQUIRED }, { "stages_out_channels", U.REQUIRED },
    { "num_classes", 1000 }, { "inverted_residual" } }, ...)
  local num_classes = check_int("ShuffleNetV2", "num_classes", o.num_classes, 1)
  local reps, outs = o.stages_repeats, o.stages_out_channels
  if #reps ~= 3 then fail("expected stages_repeats as list of 3 positive ints") end
  if #outs ~= 5 then fail("expected stages_out_channels as list of 5 positive ints") end
  self._stage_out_channels = outs
  local block = o.inverted_residual or ShuffleBlock
  local input_channels, output_channels = 3, outs[1]
  self.conv1 = nn.Sequential(nn.Conv2d(input_channels, output_channels, { kernel_size = 3, stride = 2, padding = 1,
    bias = false }), nn.BatchNorm2d(output_channels), nn.ReLU(true))
  input_channels = output_channels
  self.maxpool = nn.MaxPool2d({ kernel_size = 3, stride = 2, padding = 1 })
  for i, name in ipairs({ "stage2", "stage3", "stage4" }) do
    output_channels = outs[i + 1]
    local seq = { block(input_channels, output_channels, 2) }
    for _ = 2, reps[i] do seq[#seq + 1] = block(output_channels, output_channels, 1) end
    self[name] = nn.Sequential(table.unpack(seq))
    input_channels = output_channels
  end
  output_channels = outs[5]
  self.conv5 = nn.Sequential(nn.Conv2d(input_channels, output_channels, { kernel_size = 1, stride = 1, padding = 0,
    bias = false }), nn.BatchNorm2d(output_channels), nn.ReLU(true))
  self.fc = nn.Linear(output_channels, num_classes)
end
function ShuffleNetV2:forward(x)
  x = self.maxpool(self.conv1(x))
  x = self.stage4(self.stage3(self.stage2(x)))
  x = self.conv5(x)
  x = x:mean({ 2, 3 })
  return self.fc(x)
end

for name, outs in pairs({ shufflenet_v2_x0_5 = { 24, 48, 96, 192, 1024 }, shufflenet_v2_x1_0 = { 24, 116, 232, 464, 1024 },
  shufflenet_v2_x1_5 = { 24, 176, 352, 704, 1024 }, shufflenet_v2_x2_0 = { 24, 244, 488, 976, 2048 } }) do
  models[name] = function(...)
    local o = builder_opts(name, { { "num_classes", 1000 }, { "inverted_residual" } }, ...)
    return ShuffleNetV2({ 4, 8, 4 }, outs, { num_classes = o.num_classes, inverted_residual = o.inverted_residual })
  end
end

-- ---- DenseNet ----

local DenseLayer = nn.Module:extend("_DenseLayer")
models._DenseLayer = DenseLayer
function DenseLayer:__init(num_input_features, growth_rate, bn_size, drop_rate, memory_efficient)
  self.norm1 = nn.BatchNorm2d(num_input_features)
  self.relu1 = nn.ReLU(true)
  self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, { kernel_size = 1, stride = 1, bias = false })
  self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
  self.relu2 = nn.ReLU(true)
  self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, { kernel_size = 3, stride = 1, padding = 1, bias = false })
  self.drop_rate = drop_rate + 0.0
  self.memory_efficient = memory_efficient or false
end
-- input: a tensor or a list of the block's features so far (concatenated along channels)
function DenseLayer:forward(input)
  local prev = torch.is_tensor(input) and { input } or input
  local concated = torch.cat(prev, 1)
  local bottleneck = self.conv1(self.relu1(self.norm1(concated)))
  local new = self.conv2(self.relu2(self.norm2(bottleneck)))
  if self.drop_rate > 0 then new = F.dropout(new, { p = self.drop_rate, training = self.training }) end
  return new
end

local DenseBlock = nn.Module:extend("_DenseBlock")
models._DenseBlock = DenseBlock
function DenseBlock:__init(num_layers, num_input_features, bn_size, growth_rate, drop_rate, memory_efficient)
  self._num_layers = num_layers
  for i = 1, num_layers do
    self:add_module("denselayer" .. i, DenseLayer(num_input_features + (i - 1) * growth_rate, growth_rate, bn_size,
      drop_rate, memory_efficient))
  end
end
function DenseBlock:forward(x)
  local features = { x }
  for i = 1, self._num_layers do features[#features + 1] = self["denselayer" .. i](features) end
  return torch.cat(features, 1)
end

local Transition = nn.Sequential:extend("_Transition")
models._Transition = Transition
function Transition:__init(num_input_features, num_output_features)
  nn.Sequential.__init(self)
  self:add_module("norm", nn.BatchNorm2d(num_input_features))
  self:add_module("relu", nn.ReLU(true))
  self:add_module("conv", nn.Conv2d(num_input_features, num_output_features, { kernel_size = 1, stride = 1,
    bias = false }))
  self:add_module("pool", nn.AvgPool2d({ kernel_size = 2, stride = 2 }))
end

local DenseNet = nn.Module:extend("DenseNet")
models.DenseNet = DenseNet
local densenet_keys = { { "growth_rate", 32 }, { "block_config", { 6, 12, 24, 16 } }, { "num_init_features", 64 },
  { "bn_size", 4 }, { "drop_rate", 0 }, { "num_classes", 1000 }, { "memory_efficient", false } }
function DenseNet:__init(...)
  local o = parse("DenseNet", densenet_keys, ...)
  local num_classes = check_int("DenseNet", "num_classes", o.num_classes, 1)
  local f = nn.Sequential()
  f:add_module("conv0", nn.Conv2d(3, o.num_init_features, { kernel_size = 7, stride = 2, padding = 3, bias = false }))
  f:add_module("norm0", nn.BatchNorm2d(o.num_init_features))
  f:add_module("relu0", nn.ReLU(true))
  f:add_module("pool0", nn.MaxPool2d({ kernel_size = 3, stride = 2, padding = 1 }))
  local num_features = o.num_init_features
  for i, num_layers in ipairs(o.block_config) do
    f:add_module("denseblock" .. i, DenseBlock(num_layers, num_features, o.bn_size, o.growth_rate, o.drop_rate,
      o.memory_efficient))
    num_features = num_features + num_layers * o.growth_rate
    if i ~= #o.block_config then
      f:add_module("transition" .. i, Transition(num_features, num_features // 2))
      num_features = num_features // 2
    end
  end
  f:add_module("norm5", nn.BatchNorm2d(num_features))
  self.features = f
  self.classifier = nn.Linear(num_features, num_classes)
  for _, m in ipairs(self:modules()) do
    if isinstance(m, nn.Conv2d) then
      init.kaiming_normal_(m.weight)
    elseif isinstance(m, nn.BatchNorm2d) then
      init.constant_(m.weight, 1)
      init.constant_(m.bias, 0)
    elseif isinstance(m, nn.Linear) then
      init.constant_(m.bias, 0)
    end
  end
end
function DenseNet:forward(x)
  local out = F.relu(self.features(x), { inplace = true })
  out = F.adaptive_avg_pool2d(out, { 1, 1 })
  out = torch.flatten(out, 1)
  return self.classifier(out)
end

for name, cfg in pairs({ densenet121 = { 32, { 6, 12, 24, 16 }, 64 }, densenet161 = { 48, { 6, 12, 36, 24 }, 96 },
  densenet169 = { 32, { 6, 12, 32, 32 }, 64 }, densenet201 = { 32, { 6, 12, 48, 32 }, 64 } }) do
  models[name] = function(...)
    local o = builder_opts(name, { { "num_classes", 1000 }, { "bn_size", 4 }, { "drop_rate", 0 },
      { "memory_efficient", false } }, ...)
    return DenseNet({ growth_rate = cfg[1], block_config = cfg[2], num_init_features = cfg[3], bn_size = o.bn_size,
      drop_rate = o.drop_rate, num_classes = o.num_classes, memory_efficient = o.memory_efficient })
  end
end

-- ---- EfficientNet (B0) ----

-- MBConvConfig(expand_ratio, kernel, stride, input_channels, out_channels, num_layers, width_mult, depth_mult)
local function mbconv_config(e, k, s, i, o, n, wm, dm)
  return { expand_ratio = e, kernel = k, stride = s, input_channels = make_divisible(i * wm, 8),
    out_channels = make_divisible(o * wm, 8), num_layers = math.ceil(n * dm) }
end

models._mbconv_config = mbconv_config

local MBConv = nn.Module:extend("MBConv")
models.MBConv = MBConv
function MBConv:__init(cnf, stochastic_depth_prob, norm_layer)
  if cnf.stride < 1 or cnf.stride > 2 then fail("illegal stride value") end
  self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
  local layers = {}
  local expanded = make_divisible(cnf.input_channels * cnf.expand_ratio, 8)
  if expanded ~= cnf.input_channels then
    layers[#layers + 1] = Conv2dNormActivation(cnf.input_channels, expanded, { kernel_size = 1,
      norm_layer = norm_layer, activation_layer = nn.SiLU })
  end
  layers[#layers + 1] = Conv2dNormActivation(expanded, expanded, { kernel_size = cnf.kernel, stride = cnf.stride,
    groups = expanded, norm_layer = norm_layer, activation_layer = nn.SiLU })
  local squeeze = math.max(1, cnf.input_channels // 4)
  layers[#layers + 1] = SqueezeExcitation(expanded, squeeze, { activation = function() return nn.SiLU(true) end })
  layers[#layers + 1] = Conv2dNormActivation(expanded, cnf.out_channels, { kernel_size = 1, norm_layer = norm_layer,
    activation_layer = false })
  self.block = nn.Sequential(table.unpack(layers))
  self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
  self.out_channels = cnf.out_channels
end
function MBConv:forward(x)
  local result = self.block(x)
  if self.use_res_connect then
    result = self.stochastic_depth(result)
    result = result + x
  end
  return result
end

local EfficientNet = nn.Module:extend("EfficientNet")
models.EfficientNet = EfficientNet
function EfficientNet:__init(...)
  local o = parse("EfficientNet", { { "inverted_residual_setting", U.REQUIRED }, { "dropout", U.REQUIRED },
    { "stochastic_depth_prob", 0.2 }, { "num_classes", 1000 }, { "norm_layer" }, { "last_channel" } }, ...)
  local num_classes = check_int("EfficientNet", "num_classes", o.num_classes, 1)
  local setting = o.inverted_residual_setting
  if #setting == 0 then fail("The inverted_residual_setting should not be empty") end
  local norm_layer = o.norm_layer or nn.BatchNorm2d
  local layers = { Conv2dNormActivation(3, setting[1].input_channels, { kernel_size = 3, stride = 2,
    norm_layer = norm_layer, activation_layer = nn.SiLU }) }
  local total = 0
  for _, cnf in ipairs(setting) do total = total + cnf.num_layers end
  local block_id = 0
  for _, cnf in ipairs(setting) do
    local stage = {}
    for j = 1, cnf.num_layers do
      local bc = {}
      for k, v in pairs(cnf) do bc[k] = v end
      if j > 1 then bc.input_channels, bc.stride = bc.out_channels, 1 end
      -- the drop probability grows linearly with the block's index over the network
      stage[#stage + 1] = (cnf.block or MBConv)(bc, o.stochastic_depth_prob * block_id / total, norm_layer)
      block_id = block_id + 1
    end
    layers[#layers + 1] = nn.Sequential(table.unpack(stage))
  end
  local lastconv_in = setting[#setting].out_channels
  local lastconv_out = o.last_channel or 4 * lastconv_in
  layers[#layers + 1] = Conv2dNormActivation(lastconv_in, lastconv_out, { kernel_size = 1, norm_layer = norm_layer,
    activation_layer = nn.SiLU })
  self.features = nn.Sequential(table.unpack(layers))
  self.avgpool = nn.AdaptiveAvgPool2d(1)
  self.classifier = nn.Sequential(nn.Dropout({ p = o.dropout, inplace = true }), nn.Linear(lastconv_out, num_classes))
  mobilenet_init(self, function(m)
    local r = 1.0 / math.sqrt(m.out_features)
    init.uniform_(m.weight, -r, r)
  end)
end
function EfficientNet:forward(x)
  x = self.avgpool(self.features(x))
  x = torch.flatten(x, 1)
  return self.classifier(x)
end

local effnet_b = { -- width_mult, depth_mult, dropout
  efficientnet_b0 = { 1.0, 1.0, 0.2 }, efficientnet_b1 = { 1.0, 1.1, 0.2 }, efficientnet_b2 = { 1.1, 1.2, 0.3 },
  efficientnet_b3 = { 1.2, 1.4, 0.3 } }
for name, c in pairs(effnet_b) do
  models[name] = function(...)
    local o = builder_opts(name, { { "num_classes", 1000 }, { "dropout", c[3] }, { "stochastic_depth_prob", 0.2 },
      { "norm_layer" } }, ...)
    local wm, dm = c[1], c[2]
    local rows = { { 1, 3, 1, 32, 16, 1 }, { 6, 3, 2, 16, 24, 2 }, { 6, 5, 2, 24, 40, 2 }, { 6, 3, 2, 40, 80, 3 },
      { 6, 5, 1, 80, 112, 3 }, { 6, 5, 2, 112, 192, 4 }, { 6, 3, 1, 192, 320, 1 } }
    local setting = {}
    for i, r in ipairs(rows) do setting[i] = mbconv_config(r[1], r[2], r[3], r[4], r[5], r[6], wm, dm) end
    return EfficientNet(setting, o.dropout, { stochastic_depth_prob = o.stochastic_depth_prob,
      num_classes = o.num_classes, norm_layer = o.norm_layer })
  end
end

-- ---- VisionTransformer ----

-- MLPBlock: torchvision.ops.MLP(in_dim, {mlp_dim, in_dim}, GELU, dropout): Linear, GELU, Dropout, Linear, Dropout
local MLPBlock = ops_layers.MLP:extend("MLPBlock")
models.MLPBlock = MLPBlock
function MLPBlock:__init(in_dim, mlp_dim, dropout)
  ops_layers.MLP.__init(self, in_dim, { mlp_dim, in_dim }, { activation_layer = nn.GELU, dropout = dropout })
  for _, m in ipairs(self:modules()) do
    if isinstance(m, nn.Linear) then
      init.xavier_uniform_(m.weight)
      if m.bias ~= nil then init.normal_(m.bias, { std = 1e-6 }) end
    end
  end
end

local function vit_ln(d) return nn.LayerNorm(d, { eps = 1e-6 }) end

local EncoderBlock = nn.Module:extend("EncoderBlock")
models.EncoderBlock = EncoderBlock
function EncoderBlock:__init(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout, norm_layer)
  norm_layer = norm_layer or vit_ln
  self.num_heads = num_heads
  self.ln_1 = norm_layer(hidden_dim)
  self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, { dropout = attention_dropout, batch_first = true })
  self.dropout = nn.Dropout({ p = dropout })
  self.ln_2 = norm_layer(hidden_dim)
  self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)
end
function EncoderBlock:forward(input)
  if input:dim() ~= 3 then
    failf("Expected (batch_size, seq_length, hidden_dim) got %s", U.pystr(input.shape:totable()))
  end
  local x = self.ln_1(input)
  x = self.self_attention(x, x, x, { need_weights = false })
  x = self.dropout(x)
  x = x + input
  local y = self.mlp(self.ln_2(x))
  return x + y
end

local Encoder = nn.Module:extend("Encoder")
models.Encoder = Encoder
function Encoder:__init(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout, norm_layer)
  norm_layer = norm_layer or vit_ln
  self.pos_embedding = nn.Parameter(torch.empty(1, seq_length, hidden_dim):normal_(0, 0.02))
  self.dropout = nn.Dropout({ p = dropout })
  local layers = nn.Sequential()
  for i = 0, num_layers - 1 do
    layers:add_module("encoder_layer_" .. i, EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
      norm_layer))
  end
  self.layers = layers
  self.ln = norm_layer(hidden_dim)
end
function Encoder:forward(input)
  if input:dim() ~= 3 then
    failf("Expected (batch_size, seq_length, hidden_dim) got %s", U.pystr(input.shape:totable()))
  end
  input = input + self.pos_embedding
  return self.ln(self.layers(self.dropout(input)))
end

local VisionTransformer = nn.Module:extend("VisionTransformer")
models.VisionTransformer = VisionTransformer
local vit_spec = { { "image_size", U.REQUIRED }, { "patch_size", U.REQUIRED }, { "num_layers", U.REQUIRED },
  { "num_heads", U.REQUIRED }, { "hidden_dim", U.REQUIRED }, { "mlp_dim", U.REQUIRED }, { "dropout", 0.0 },
  { "attention_dropout", 0.0 }, { "num_classes", 1000 }, { "representation_size" }, { "norm_layer" } }
function VisionTransformer:__init(...)
  local o = parse("VisionTransformer", vit_spec, ...)
  local num_classes = check_int("VisionTransformer", "num_classes", o.num_classes, 1)
  if o.image_size % o.patch_size ~= 0 then fail("Input shape indivisible by patch size!") end
  self.image_size, self.patch_size, self.hidden_dim = o.image_size, o.patch_size, o.hidden_dim
  self.mlp_dim, self.attention_dropout, self.dropout = o.mlp_dim, o.attention_dropout, o.dropout
  self.num_classes, self.representation_size = num_classes, o.representation_size
  local norm_layer = o.norm_layer or vit_ln
  self.conv_proj = nn.Conv2d(3, o.hidden_dim, { kernel_size = o.patch_size, stride = o.patch_size })
  local grid = o.image_size // o.patch_size
  local seq_length = grid * grid
  self.class_token = nn.Parameter(torch.zeros(1, 1, o.hidden_dim))
  seq_length = seq_length + 1
  self.encoder = Encoder(seq_length, o.num_layers, o.num_heads, o.hidden_dim, o.mlp_dim, o.dropout,
    o.attention_dropout, norm_layer)
  self.seq_length = seq_length
  local heads = nn.Sequential()
  if o.representation_size == nil then
    heads:add_module("head", nn.Linear(o.hidden_dim, num_classes))
  else
    heads:add_module("pre_logits", nn.Linear(o.hidden_dim, o.representation_size))
    heads:add_module("act", nn.Tanh())
    heads:add_module("head", nn.Linear(o.representation_size, num_classes))
  end
  self.heads = heads
  local fan_in = 3 * o.patch_size * o.patch_size
  init.trunc_normal_(self.conv_proj.weight, { std = math.sqrt(1 / fan_in) })
  init.zeros_(self.conv_proj.bias)
  if o.representation_size ~= nil then
    init.trunc_normal_(heads.pre_logits.weight, { std = math.sqrt(1 / o.hidden_dim) })
    init.zeros_(heads.pre_logits.bias)
  end
  init.zeros_(heads.head.weight)
  init.zeros_(heads.head.bias)
end
function VisionTransformer:_process_input(x)
  local s = x.shape:totable()
  local n, h, w, p = s[1], s[3], s[4], self.patch_size
  if h ~= self.image_size then failf("Wrong image height! Expected %d but got %d!", self.image_size, h) end
  if w ~= self.image_size then failf("Wrong image width! Expected %d but got %d!", self.image_size, w) end
  x = self.conv_proj(x) -- (n, hidden_dim, n_h, n_w)
  x = x:reshape(n, self.hidden_dim, (h // p) * (w // p))
  return x:permute(0, 2, 1)
end
function VisionTransformer:forward(x)
  x = self:_process_input(x)
  local n = x:size(0)
  x = torch.cat({ self.class_token:expand(n, -1, -1), x }, 1)
  x = self.encoder(x)
  x = x:select(1, 0)
  return self.heads(x)
end

local vit_cfgs = { -- patch_size, num_layers, num_heads, hidden_dim, mlp_dim
  vit_b_16 = { 16, 12, 12, 768, 3072 }, vit_b_32 = { 32, 12, 12, 768, 3072 }, vit_l_16 = { 16, 24, 16, 1024, 4096 },
  vit_l_32 = { 32, 24, 16, 1024, 4096 }, vit_h_14 = { 14, 32, 16, 1280, 5120 } }
for name, c in pairs(vit_cfgs) do
  models[name] = function(...)
    local o = builder_opts(name, { { "image_size", 224 }, { "num_classes", 1000 }, { "dropout", 0.0 },
      { "attention_dropout", 0.0 }, { "representation_size" }, { "norm_layer" } }, ...)
    return VisionTransformer({ image_size = o.image_size, patch_size = c[1], num_layers = c[2], num_heads = c[3],
      hidden_dim = c[4], mlp_dim = c[5], dropout = o.dropout, attention_dropout = o.attention_dropout,
      num_classes = o.num_classes, representation_size = o.representation_size, norm_layer = o.norm_layer })
  end
end

-- ---- ConvNeXt ----

-- LayerNorm over the channels of an NCHW tensor
local LayerNorm2d = nn.LayerNorm:extend("LayerNorm2d")
models.LayerNorm2d = LayerNorm2d
function LayerNorm2d:forward(x)
  x = x:permute(0, 2, 3, 1)
  x = nn.LayerNorm.forward(self, x)
  return x:permute(0, 3, 1, 2)
end
local function ln2d(c) return LayerNorm2d(c, { eps = 1e-6 }) end

local CNBlock = nn.Module:extend("CNBlock")
models.CNBlock = CNBlock
function CNBlock:__init(dim, layer_scale, stochastic_depth_prob, norm_layer)
  norm_layer = norm_layer or vit_ln
  self.block = nn.Sequential(nn.Conv2d(dim, dim, { kernel_size = 7, padding = 3, groups = dim, bias = true }),
    Permute({ 0, 2, 3, 1 }), norm_layer(dim), nn.Linear(dim, 4 * dim, { bias = true }), nn.GELU(),
    nn.Linear(4 * dim, dim, { bias = true }), Permute({ 0, 3, 1, 2 }))
  self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1) * layer_scale)
  self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
end
function CNBlock:forward(input)
  local result = self.layer_scale * self.block(input)
  result = self.stochastic_depth(result)
  return result + input
end

local ConvNeXt = nn.Module:extend("ConvNeXt")
models.ConvNeXt = ConvNeXt
-- block_setting: a list of {input_channels, out_channels (or false), num_layers}
function ConvNeXt:__init(...)
  local o = parse("ConvNeXt", { { "block_setting", U.REQUIRED }, { "stochastic_depth_prob", 0.0 },
    { "layer_scale", 1e-6 }, { "num_classes", 1000 }, { "block" }, { "norm_layer" } }, ...)
  local num_classes = check_int("ConvNeXt", "num_classes", o.num_classes, 1)
  local setting = o.block_setting
  if #setting == 0 then fail("The block_setting should not be empty") end
  local block = o.block or CNBlock
  local norm_layer = o.norm_layer or ln2d
  local layers = { Conv2dNormActivation(3, setting[1][1], { kernel_size = 4, stride = 4, padding = 0,
    norm_layer = norm_layer, activation_layer = false, bias = true }) }
  local total = 0
  for _, c in ipairs(setting) do total = total + c[3] end
  local block_id = 0
  for _, c in ipairs(setting) do
    local stage = {}
    for _ = 1, c[3] do
      stage[#stage + 1] = block(c[1], o.layer_scale, o.stochastic_depth_prob * block_id / (total - 1.0))
      block_id = block_id + 1
    end
    layers[#layers + 1] = nn.Sequential(table.unpack(stage))
    if c[2] then
      layers[#layers + 1] = nn.Sequential(norm_layer(c[1]), nn.Conv2d(c[1], c[2], { kernel_size = 2, stride = 2 }))
    end
  end
  self.features = nn.Sequential(table.unpack(layers))
  self.avgpool = nn.AdaptiveAvgPool2d(1)
  local last = setting[#setting]
  local lastconv_out = last[2] or last[1]
  self.classifier = nn.Sequential(norm_layer(lastconv_out), nn.Flatten(1), nn.Linear(lastconv_out, num_classes))
  for _, m in ipairs(self:modules()) do
    if isinstance(m, { nn.Conv2d, nn.Linear }) then
      init.trunc_normal_(m.weight, { std = 0.02 })
      if m.bias ~= nil then init.zeros_(m.bias) end
    end
  end
end
function ConvNeXt:forward(x)
  x = self.avgpool(self.features(x))
  return self.classifier(x)
end

local convnext_cfgs = {
  convnext_tiny = { { { 96, 192, 3 }, { 192, 384, 3 }, { 384, 768, 9 }, { 768, false, 3 } }, 0.1 },
  convnext_small = { { { 96, 192, 3 }, { 192, 384, 3 }, { 384, 768, 27 }, { 768, false, 3 } }, 0.4 },
  convnext_base = { { { 128, 256, 3 }, { 256, 512, 3 }, { 512, 1024, 27 }, { 1024, false, 3 } }, 0.5 },
  convnext_large = { { { 192, 384, 3 }, { 384, 768, 3 }, { 768, 1536, 27 }, { 1536, false, 3 } }, 0.5 } }
for name, c in pairs(convnext_cfgs) do
  models[name] = function(...)
    local o = builder_opts(name, { { "num_classes", 1000 }, { "stochastic_depth_prob", c[2] }, { "layer_scale", 1e-6 } },
      ...)
    return ConvNeXt(c[1], { stochastic_depth_prob = o.stochastic_depth_prob, layer_scale = o.layer_scale,
      num_classes = o.num_classes })
  end
end

end
