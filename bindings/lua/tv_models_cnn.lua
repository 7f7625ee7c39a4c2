-- torchvision.models: MNASNet (mnasnet0_5 ... 1_3), RegNet (regnet_x_* and regnet_y_*, every size),
-- EfficientNet-B4...B7 and EfficientNetV2-S/M/L (FusedMBConv), built as torchvision builds them:
-- the same submodule names (state_dict keys such as "trunk_output.block1.block1-0.f.a.0.weight"),
-- parameter counts, initialisation and forward. tv_models.lua calls this file's function after
-- tv_models_more's (whose Conv2dNormActivation, SqueezeExcitation, MBConv and EfficientNet it reuses).
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local init = nn.init

return function(models, H)

local fail, parse, check_int = H.fail, H.parse, H.check_int
local function isinstance(m, cls) return nn.isinstance(m, cls) end
local function builder_opts(...)
  local o = H.builder_opts(...)
  o.weights, o.progress, o.pretrained = nil, nil, nil
  return o
end
local Conv2dNormActivation, SqueezeExcitation = models.Conv2dNormActivation, models.SqueezeExcitation
local make_divisible = models._make_divisible

-- Python's round (half to even)
local function pyround(x)
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return math.tointeger(f)
end

-- ---- MNASNet ----

local BN_MOMENTUM = 1 - 0.9997

local MNASNetBlock = nn.Module:extend("_InvertedResidual")
models._MNASNetInvertedResidual = MNASNetBlock
function MNASNetBlock:__init(in_ch, out_ch, kernel_size, stride, expansion_factor, bn_momentum)
  if stride ~= 1 and stride ~= 2 then H.failf("stride should be 1 or 2 instead of %s", U.pystr(stride)) end
  if kernel_size ~= 3 and kernel_size ~= 5 then H.failf("kernel_size should be 3 or 5 instead of %s", U.pystr(kernel_size)) end
  local mid = in_ch * expansion_factor
  local function bn(c) return nn.BatchNorm2d(c, {momentum = bn_momentum}) end
  self.apply_residual = in_ch == out_ch and stride == 1
  self.layers = nn.Sequential(nn.Conv2d(in_ch, mid, 1, {bias = false}), bn(mid), nn.ReLU(true),
    nn.Conv2d(mid, mid, kernel_size, {padding = kernel_size // 2, stride = stride, groups = mid, bias = false}),
    bn(mid), nn.ReLU(true), nn.Conv2d(mid, out_ch, 1, {bias = false}), bn(out_ch))
end
function MNASNetBlock:forward(x)
  if self.apply_residual then return self.layers(x) + x end
  return self.layers(x)
end

local function mnas_stack(in_ch, out_ch, k, stride, exp, repeats)
  local blocks = {MNASNetBlock(in_ch, out_ch, k, stride, exp, BN_MOMENTUM)}
  for i = 2, repeats do blocks[i] = MNASNetBlock(out_ch, out_ch, k, 1, exp, BN_MOMENTUM) end
  return nn.Sequential(table.unpack(blocks))
end

-- torchvision's _round_to_multiple_of(val, 8, 0.9)
local function round_to_8(val)
  local new_val = math.max(8, math.floor(val + 4) // 8 * 8)
  if new_val >= 0.9 * val then return new_val end
  return new_val + 8
end

local MNASNet = nn.Module:extend("MNASNet")
models.MNASNet = MNASNet
function MNASNet:__init(...)
  local o = parse("MNASNet", {{"alpha", U.REQUIRED}, {"num_classes", 1000}, {"dropout", 0.2}}, ...)
  local num_classes = check_int("MNASNet", "num_classes", o.num_classes, 1)
  if o.alpha <= 0 then H.failf("alpha should be greater than 0.0 instead of %s", U.pystr(o.alpha)) end
  self.alpha, self.num_classes = o.alpha, num_classes
  local d = {}
  for i, v in ipairs({32, 16, 24, 40, 80, 96, 192, 320}) do d[i] = round_to_8(v * o.alpha) end
  local function bn(c) return nn.BatchNorm2d(c, {momentum = BN_MOMENTUM}) end
  self.layers = nn.Sequential(
    nn.Conv2d(3, d[1], 3, {padding = 1, stride = 2, bias = false}), bn(d[1]), nn.ReLU(true),
    nn.Conv2d(d[1], d[1], 3, {padding = 1, stride = 1, groups = d[1], bias = false}), bn(d[1]), nn.ReLU(true),
    nn.Conv2d(d[1], d[2], 1, {padding = 0, stride = 1, bias = false}), bn(d[2]),
    mnas_stack(d[2], d[3], 3, 2, 3, 3), mnas_stack(d[3], d[4], 5, 2, 3, 3), mnas_stack(d[4], d[5], 5, 2, 6, 3),
    mnas_stack(d[5], d[6], 3, 1, 6, 2), mnas_stack(d[6], d[7], 5, 2, 6, 4), mnas_stack(d[7], d[8], 3, 1, 6, 1),
    nn.Conv2d(d[8], 1280, 1, {padding = 0, stride = 1, bias = false}), bn(1280), nn.ReLU(true))
  self.classifier = nn.Sequential(nn.Dropout({p = o.dropout, inplace = true}), nn.Linear(1280, num_classes))
  for _, m in ipairs(self:modules()) do
    if isinstance(m, nn.Conv2d) then
      init.kaiming_normal_(m.weight, {mode = "fan_out", nonlinearity = "relu"})
      if m.bias ~= nil then init.zeros_(m.bias) end
    elseif isinstance(m, nn.BatchNorm2d) then
      init.ones_(m.weight)
      init.zeros_(m.bias)
    elseif isinstance(m, nn.Linear) then
      init.kaiming_uniform_(m.weight, {mode = "fan_out", nonlinearity = "sigmoid"})
      init.zeros_(m.bias)
    end
  end
end
function MNASNet:forward(x)
  x = self.layers(x):mean({2, 3})
  return self.classifier(x)
end

for name, alpha in pairs({mnasnet0_5 = 0.5, mnasnet0_75 = 0.75, mnasnet1_0 = 1.0, mnasnet1_3 = 1.3}) do
  models[name] = function(...)
    local o = builder_opts(name, {{"num_classes", 1000}, {"dropout", 0.2}}, ...)
    return MNASNet(alpha, {num_classes = o.num_classes, dropout = o.dropout})
  end
end

-- ---- RegNet ----

local SimpleStemIN = Conv2dNormActivation:extend("SimpleStemIN")
models.SimpleStemIN = SimpleStemIN
function SimpleStemIN:__init(width_in, width_out, norm_layer, activation_layer)
  Conv2dNormActivation.__init(self, width_in, width_out, {kernel_size = 3, stride = 2, norm_layer = norm_layer,
    activation_layer = activation_layer})
end

local BottleneckTransform = nn.Sequential:extend("BottleneckTransform")
models.BottleneckTransform = BottleneckTransform
function BottleneckTransform:__init(width_in, width_out, stride, norm_layer, act, group_width, bottleneck_multiplier, se_ratio)
  nn.Sequential.__init(self)
  local w_b = pyround(width_out * bottleneck_multiplier)
  local g = w_b // group_width
  self:add_module("a", Conv2dNormActivation(width_in, w_b, {kernel_size = 1, stride = 1, norm_layer = norm_layer,
    activation_layer = act}))
  self:add_module("b", Conv2dNormActivation(w_b, w_b, {kernel_size = 3, stride = stride, groups = g,
    norm_layer = norm_layer, activation_layer = act}))
  if se_ratio then
    self:add_module("se", SqueezeExcitation(w_b, pyround(se_ratio * width_in), {activation = act}))
  end
  self:add_module("c", Conv2dNormActivation(w_b, width_out, {kernel_size = 1, stride = 1, norm_layer = norm_layer,
    activation_layer = false}))
end

local ResBottleneckBlock = nn.Module:extend("ResBottleneckBlock")
models.ResBottleneckBlock = ResBottleneckBlock
function ResBottleneckBlock:__init(width_in, width_out, stride, norm_layer, act, group_width, bottleneck_multiplier, se_ratio)
  if width_in ~= width_out or stride ~= 1 then
    self.proj = Conv2dNormActivation(width_in, width_out, {kernel_size = 1, stride = stride, norm_layer = norm_layer,
      activation_layer = false})
  end
  self.f = BottleneckTransform(width_in, width_out, stride, norm_layer, act, group_width or 1,
    bottleneck_multiplier or 1.0, se_ratio)
  self.activation = act({inplace = true})
end
function ResBottleneckBlock:forward(x)
  if self.proj ~= nil then x = self.proj(x) + self.f(x)
  else x = x + self.f(x) end
  return self.activation(x)
end

local AnyStage = nn.Sequential:extend("AnyStage")
models.AnyStage = AnyStage
function AnyStage:__init(width_in, width_out, stride, depth, block, norm_layer, act, group_width, bm, se_ratio, stage_index)
  nn.Sequential.__init(self)
  for i = 0, depth - 1 do
    self:add_module(string.format("block%d-%d", stage_index, i), block(i == 0 and width_in or width_out, width_out,
      i == 0 and stride or 1, norm_layer, act, group_width, bm, se_ratio))
  end
end

-- torchvision's BlockParams.from_init_params: the stages' depths, widths and group widths of the
-- quantised linear width rule w_j = w_0 + w_a * j (float32, as torchvision computes it)
local function block_params(depth, w_0, w_a, w_m, group_width, se_ratio)
  if w_a < 0 or w_0 <= 0 or w_m <= 1 or w_0 % 8 ~= 0 then fail("Invalid RegNet settings") end
  local widths_cont = torch.arange(depth, {dtype = torch.float32}) * w_a + w_0
  local capacity = torch.round(torch.log(widths_cont / w_0) / math.log(w_m))
  local widths = (torch.round(torch.pow(w_m, capacity):mul(w_0):div(8)) * 8):to(torch.int32):tolist()
  local stage_widths, stage_depths = {}, {}
  for j, w in ipairs(widths) do
    if j == 1 or w ~= widths[j - 1] then
      stage_widths[#stage_widths + 1] = w
      stage_depths[#stage_depths + 1] = 0
    end
    stage_depths[#stage_depths] = stage_depths[#stage_depths] + 1
  end
  -- _adjust_widths_groups_compatibilty with bottleneck multiplier 1
  local group_widths = {}
  for i, w in ipairs(stage_widths) do
    local g = math.min(group_width, w)
    group_widths[i] = g
    stage_widths[i] = make_divisible(w, g)
  end
  return {depths = stage_depths, widths = stage_widths, group_widths = group_widths, se_ratio = se_ratio}
end
models._regnet_block_params = block_params

local RegNet = nn.Module:extend("RegNet")
models.RegNet = RegNet
function RegNet:__init(...)
  local o = parse("RegNet", {{"block_params", U.REQUIRED}, {"num_classes", 1000}, {"stem_width", 32},
    {"stem_type"}, {"block_type"}, {"norm_layer"}, {"activation"}}, ...)
  local num_classes = check_int("RegNet", "num_classes", o.num_classes, 1)
  local bp = o.block_params
  local stem = o.stem_type or SimpleStemIN
  local norm_layer = o.norm_layer or nn.BatchNorm2d
  local block = o.block_type or ResBottleneckBlock
  local act = o.activation or nn.ReLU
  self.stem = stem(3, o.stem_width, norm_layer, act)
  local current = o.stem_width
  local trunk = nn.Sequential()
  for i, w in ipairs(bp.widths) do
    trunk:add_module("block" .. i, AnyStage(current, w, 2, bp.depths[i], block, norm_layer, act, bp.group_widths[i],
      1.0, bp.se_ratio, i))
    current = w
  end
  self.trunk_output = trunk
  self.avgpool = nn.AdaptiveAvgPool2d({1, 1})
  self.fc = nn.Linear(current, num_classes)
  for _, m in ipairs(self:modules()) do
    if isinstance(m, nn.Conv2d) then
      local k = m.kernel_size
      init.normal_(m.weight, 0.0, math.sqrt(2.0 / (k[1] * k[2] * m.out_channels)))
    elseif isinstance(m, nn.BatchNorm2d) then
      init.ones_(m.weight)
      init.zeros_(m.bias)
    elseif isinstance(m, nn.Linear) then
      init.normal_(m.weight, 0.0, 0.01)
      init.zeros_(m.bias)
    end
  end
end
function RegNet:forward(x)
  x = self.avgpool(self.trunk_output(self.stem(x)))
  return self.fc(torch.flatten(x, 1))
end

local regnet_cfgs = { -- depth, w_0, w_a, w_m, group_width, se_ratio
  regnet_y_400mf = {16, 48, 27.89, 2.09, 8, 0.25}, regnet_y_800mf = {14, 56, 38.84, 2.4, 16, 0.25},
  regnet_y_1_6gf = {27, 48, 20.71, 2.65, 24, 0.25}, regnet_y_3_2gf = {21, 80, 42.63, 2.66, 24, 0.25},
  regnet_y_8gf = {17, 192, 76.82, 2.19, 56, 0.25}, regnet_y_16gf = {18, 200, 106.23, 2.48, 112, 0.25},
  regnet_y_32gf = {20, 232, 115.89, 2.53, 232, 0.25}, regnet_y_128gf = {27, 456, 160.83, 2.52, 264, 0.25},
  regnet_x_400mf = {22, 24, 24.48, 2.54, 16}, regnet_x_800mf = {16, 56, 35.73, 2.28, 16},
  regnet_x_1_6gf = {18, 80, 34.01, 2.25, 24}, regnet_x_3_2gf = {25, 88, 26.31, 2.25, 48},
  regnet_x_8gf = {23, 80, 49.56, 2.88, 120}, regnet_x_16gf = {22, 216, 55.59, 2.1, 128},
  regnet_x_32gf = {23, 320, 69.86, 2.0, 168} }
for name, c in pairs(regnet_cfgs) do
  models[name] = function(...)
    local o = builder_opts(name, {{"num_classes", 1000}, {"stem_width", 32}, {"stem_type"}, {"block_type"},
      {"norm_layer"}, {"activation"}}, ...)
    o.block_params = block_params(c[1], c[2], c[3], c[4], c[5], c[6])
    return RegNet(o)
  end
end

-- ---- EfficientNet-B4...B7, EfficientNetV2 ----

local StochasticDepth = models.StochasticDepth

local FusedMBConv = nn.Module:extend("FusedMBConv")
models.FusedMBConv = FusedMBConv
function FusedMBConv:__init(cnf, stochastic_depth_prob, norm_layer)
  if cnf.stride < 1 or cnf.stride > 2 then fail("illegal stride value") end
  self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
  local expanded = make_divisible(cnf.input_channels * cnf.expand_ratio, 8)
  local layers = {}
  if expanded ~= cnf.input_channels then
    layers[1] = Conv2dNormActivation(cnf.input_channels, expanded, {kernel_size = cnf.kernel, stride = cnf.stride,
      norm_layer = norm_layer, activation_layer = nn.SiLU})
    layers[2] = Conv2dNormActivation(expanded, cnf.out_channels, {kernel_size = 1, norm_layer = norm_layer,
      activation_layer = false})
  else
    layers[1] = Conv2dNormActivation(cnf.input_channels, cnf.out_channels, {kernel_size = cnf.kernel,
      stride = cnf.stride, norm_layer = norm_layer, activation_layer = nn.SiLU})
  end
  self.block = nn.Sequential(table.unpack(layers))
  self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
  self.out_channels = cnf.out_channels
end
FusedMBConv.forward = models.MBConv.forward

local function bn_eps(eps, momentum)
  return function(c) return nn.BatchNorm2d(c, {eps = eps, momentum = momentum or 0.1}) end
end

local effnet_cfgs = { -- width_mult, depth_mult, dropout, norm eps (nil: BatchNorm2d's defaults)
  efficientnet_b4 = {1.4, 1.8, 0.4}, efficientnet_b5 = {1.6, 2.2, 0.4, 0.001}, efficientnet_b6 = {1.8, 2.6, 0.5, 0.001},
  efficientnet_b7 = {2.0, 3.1, 0.5, 0.001} }
local b_rows = {{1, 3, 1, 32, 16, 1}, {6, 3, 2, 16, 24, 2}, {6, 5, 2, 24, 40, 2}, {6, 3, 2, 40, 80, 3},
  {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4}, {6, 3, 1, 192, 320, 1}}
for name, c in pairs(effnet_cfgs) do
  models[name] = function(...)
    local o = builder_opts(name, {{"num_classes", 1000}, {"dropout", c[3]}, {"stochastic_depth_prob", 0.2},
      {"norm_layer"}}, ...)
    local setting = {}
    for i, r in ipairs(b_rows) do setting[i] = models._mbconv_config(r[1], r[2], r[3], r[4], r[5], r[6], c[1], c[2]) end
    local norm = o.norm_layer or (c[4] and bn_eps(c[4], 0.01)) or nil
    return models.EfficientNet(setting, o.dropout, {stochastic_depth_prob = o.stochastic_depth_prob,
      num_classes = o.num_classes, norm_layer = norm})
  end
end

-- rows: fused?, expand_ratio, kernel, stride, input_channels, out_channels, num_layers
local v2_cfgs = {
  efficientnet_v2_s = {0.2, {{true, 1, 3, 1, 24, 24, 2}, {true, 4, 3, 2, 24, 48, 4}, {true, 4, 3, 2, 48, 64, 4},
    {false, 4, 3, 2, 64, 128, 6}, {false, 6, 3, 1, 128, 160, 9}, {false, 6, 3, 2, 160, 256, 15}}},
  efficientnet_v2_m = {0.3, {{true, 1, 3, 1, 24, 24, 3}, {true, 4, 3, 2, 24, 48, 5}, {true, 4, 3, 2, 48, 80, 5},
    {false, 4, 3, 2, 80, 160, 7}, {false, 6, 3, 1, 160, 176, 14}, {false, 6, 3, 2, 176, 304, 18},
    {false, 6, 3, 1, 304, 512, 5}}},
  efficientnet_v2_l = {0.4, {{true, 1, 3, 1, 32, 32, 4}, {true, 4, 3, 2, 32, 64, 7}, {true, 4, 3, 2, 64, 96, 7},
    {false, 4, 3, 2, 96, 192, 10}, {false, 6, 3, 1, 192, 224, 19}, {false, 6, 3, 2, 224, 384, 25},
    {false, 6, 3, 1, 384, 640, 7}}} }
for name, c in pairs(v2_cfgs) do
  models[name] = function(...)
    local o = builder_opts(name, {{"num_classes", 1000}, {"dropout", c[1]}, {"stochastic_depth_prob", 0.2},
      {"norm_layer"}}, ...)
    local setting = {}
    for i, r in ipairs(c[2]) do
      local cnf = models._mbconv_config(r[2], r[3], r[4], r[5], r[6], r[7], 1.0, 1.0)
      if r[1] then cnf.block = FusedMBConv end
      setting[i] = cnf
    end
    return models.EfficientNet(setting, o.dropout, {stochastic_depth_prob = o.stochastic_depth_prob,
      num_classes = o.num_classes, norm_layer = o.norm_layer or bn_eps(1e-3), last_channel = 1280})
  end
end

end
