-- torchvision.models.video: r3d_18, mc3_18, r2plus1d_18 (VideoResNet with BasicBlock / Bottleneck
-- and the Conv3DSimple, Conv3DNoTemporal, Conv2Plus1D convolutions, BasicStem, R2Plus1dStem) and
-- s3d (S3D: TemporalSeparableConv, SepInceptionBlock3D), with their *_Weights enums. Input
-- [N, 3, T, H, W]; state_dict keys are torchvision's ("layer1.0.conv1.0.weight", "stem.0.weight").
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local init = nn.init

return function(models, H)

local parse, check_int = H.parse, H.check_int
local Conv3dNormActivation = require("tv_ops_layers").Conv3dNormActivation
local function isinstance(m, cls) return nn.isinstance(m, cls) end

local video = {} -- torchvision.models.video
models.video = video
video.resnet = {} -- torchvision.models.video.resnet (video.s3d is the builder, as in torchvision)
-- video.resnet holds the classes, video only VideoResNet, the builders and the enums (torchvision's __all__)
local function export(name, v)
  video.resnet[name] = v
  if not name:match("^[A-Z]") or name == "VideoResNet" then video[name] = v end
end

-- ---- the convolutions: (in_planes, out_planes, midplanes, stride=1, padding=1) ----

local Conv3DSimple = nn.Conv3d:extend("Conv3DSimple")
export("Conv3DSimple", Conv3DSimple)
function Conv3DSimple:__init(in_planes, out_planes, _, stride, padding)
  nn.Conv3d.__init(self, in_planes, out_planes, { kernel_size = { 3, 3, 3 }, stride = stride or 1, padding = padding or 1,
    bias = false })
end
function Conv3DSimple.get_downsample_stride(stride) return { stride, stride, stride } end

-- spatial 1x3x3 to midplanes, BN, ReLU, temporal 3x1x1
local Conv2Plus1D = nn.Sequential:extend("Conv2Plus1D")
export("Conv2Plus1D", Conv2Plus1D)
function Conv2Plus1D:__init(in_planes, out_planes, midplanes, stride, padding)
  stride, padding = stride or 1, padding or 1
  nn.Sequential.__init(self,
    nn.Conv3d(in_planes, midplanes, { kernel_size = { 1, 3, 3 }, stride = { 1, stride, stride },
      padding = { 0, padding, padding }, bias = false }),
    nn.BatchNorm3d(midplanes), nn.ReLU(true),
    nn.Conv3d(midplanes, out_planes, { kernel_size = { 3, 1, 1 }, stride = { stride, 1, 1 }, padding = { padding, 0, 0 },
      bias = false }))
end
Conv2Plus1D.get_downsample_stride = Conv3DSimple.get_downsample_stride

local Conv3DNoTemporal = nn.Conv3d:extend("Conv3DNoTemporal")
export("Conv3DNoTemporal", Conv3DNoTemporal)
function Conv3DNoTemporal:__init(in_planes, out_planes, _, stride, padding)
  stride, padding = stride or 1, padding or 1
  nn.Conv3d.__init(self, in_planes, out_planes, { kernel_size = { 1, 3, 3 }, stride = { 1, stride, stride },
    padding = { 0, padding, padding }, bias = false })
end
function Conv3DNoTemporal.get_downsample_stride(stride) return { 1, stride, stride } end

-- ---- blocks and stems ----

-- the (2+1)D factorisation's middle width, chosen so that it has as many parameters as a 3x3x3 conv
local function midplanes_of(inplanes, planes) return (inplanes * planes * 27) // (inplanes * 9 + 3 * planes) end

local BasicBlock = nn.Module:extend("BasicBlock")
export("BasicBlock", BasicBlock)
BasicBlock.expansion = 1
-- (inplanes, planes, conv_builder, stride=1, downsample)
function BasicBlock:__init(inplanes, planes, conv_builder, stride, downsample)
  stride = stride or 1
  local mid = midplanes_of(inplanes, planes)
  self.conv1 = nn.Sequential(conv_builder(inplanes, planes, mid, stride), nn.BatchNorm3d(planes), nn.ReLU(true))
  self.conv2 = nn.Sequential(conv_builder(planes, planes, mid), nn.BatchNorm3d(planes))
  self.relu = nn.ReLU(true)
  self.downsample = downsample
  self.stride = stride
end
-- relu(out + x, or + downsample(x))
local function add_residual(self, out, x)
  if self.downsample ~= nil then x = self.downsample(x) end
  return self.relu(out:add_(x))
end
function BasicBlock:forward(x) return add_residual(self, self.conv2(self.conv1(x)), x) end

local Bottleneck = nn.Module:extend("Bottleneck")
export("Bottleneck", Bottleneck)
Bottleneck.expansion = 4
function Bottleneck:__init(inplanes, planes, conv_builder, stride, downsample)
  stride = stride or 1
  local mid = midplanes_of(inplanes, planes)
  self.conv1 = nn.Sequential(nn.Conv3d(inplanes, planes, { kernel_size = 1, bias = false }), nn.BatchNorm3d(planes),
    nn.ReLU(true))
  self.conv2 = nn.Sequential(conv_builder(planes, planes, mid, stride), nn.BatchNorm3d(planes), nn.ReLU(true))
  self.conv3 = nn.Sequential(nn.Conv3d(planes, planes * 4, { kernel_size = 1, bias = false }), nn.BatchNorm3d(planes * 4))
  self.relu = nn.ReLU(true)
  self.downsample = downsample
  self.stride = stride
end
function Bottleneck:forward(x) return add_residual(self, self.conv3(self.conv2(self.conv1(x))), x) end

-- conv 3x7x7 (stride 1, 2, 2) to 64, BN, ReLU
local BasicStem = nn.Sequential:extend("BasicStem")
export("BasicStem", BasicStem)
function BasicStem:__init()
  nn.Sequential.__init(self, nn.Conv3d(3, 64, { kernel_size = { 3, 7, 7 }, stride = { 1, 2, 2 }, padding = { 1, 3, 3 },
    bias = false }), nn.BatchNorm3d(64), nn.ReLU(true))
end

-- the stem factorised: 1x7x7 to 45, BN, ReLU, 3x1x1 to 64, BN, ReLU
local R2Plus1dStem = nn.Sequential:extend("R2Plus1dStem")
export("R2Plus1dStem", R2Plus1dStem)
function R2Plus1dStem:__init()
  nn.Sequential.__init(self,
    nn.Conv3d(3, 45, { kernel_size = { 1, 7, 7 }, stride = { 1, 2, 2 }, padding = { 0, 3, 3 }, bias = false }),
    nn.BatchNorm3d(45), nn.ReLU(true),
    nn.Conv3d(45, 64, { kernel_size = { 3, 1, 1 }, stride = { 1, 1, 1 }, padding = { 1, 0, 0 }, bias = false }),
    nn.BatchNorm3d(64), nn.ReLU(true))
end

-- ---- VideoResNet ----

local VideoResNet = nn.Module:extend("VideoResNet")
export("VideoResNet", VideoResNet)

-- (block, conv_makers (4 conv classes, one a stage), layers (4 block counts), stem (a class),
-- {num_classes=400, zero_init_residual=false})
function VideoResNet:__init(...)
  local o = parse("VideoResNet", { { "block", U.REQUIRED }, { "conv_makers", U.REQUIRED }, { "layers", U.REQUIRED },
    { "stem", U.REQUIRED }, { "num_classes", 400 }, { "zero_init_residual", false } }, ...)
  local block, makers, layers = o.block, o.conv_makers, o.layers
  if #makers ~= 4 or #layers ~= 4 then H.fail("VideoResNet: conv_makers and layers need 4 entries each") end
  check_int("VideoResNet", "num_classes", o.num_classes, 1)
  self.inplanes = 64
  self.stem = o.stem()
  self.layer1 = self:_make_layer(block, makers[1], 64, layers[1], 1)
  self.layer2 = self:_make_layer(block, makers[2], 128, layers[2], 2)
  self.layer3 = self:_make_layer(block, makers[3], 256, layers[3], 2)
  self.layer4 = self:_make_layer(block, makers[4], 512, layers[4], 2)
  self.avgpool = nn.AdaptiveAvgPool3d({ 1, 1, 1 })
  self.fc = nn.Linear(512 * block.expansion, o.num_classes)
  H.init_weights(self, nn.Conv3d, nn.BatchNorm3d)
  if o.zero_init_residual then -- the last BN of each Bottleneck (torchvision names it bn3, which its Bottleneck lacks)
    for _, m in ipairs(self:modules()) do
      if isinstance(m, Bottleneck) then init.constant_(m.conv3[1].weight, 0) end
    end
  end
end

function VideoResNet:_make_layer(block, conv_builder, planes, blocks, stride)
  local downsample
  if stride ~= 1 or self.inplanes ~= planes * block.expansion then
    downsample = nn.Sequential(nn.Conv3d(self.inplanes, planes * block.expansion, { kernel_size = 1,
      stride = conv_builder.get_downsample_stride(stride), bias = false }), nn.BatchNorm3d(planes * block.expansion))
  end
  local list = { block(self.inplanes, planes, conv_builder, stride, downsample) }
  self.inplanes = planes * block.expansion
  for _ = 2, blocks do list[#list + 1] = block(self.inplanes, planes, conv_builder) end
  return nn.Sequential(table.unpack(list))
end

function VideoResNet:forward(x)
  x = self.stem(x)
  x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
  x = self.avgpool(x):flatten(1)
  return self.fc(x)
end

local resnet_keys = { { "num_classes", 400 }, { "zero_init_residual", false } }
local function video_resnet(name, makers, stem)
  local f = function(...)
    local o = H.builder_opts(name, resnet_keys, ...)
    return VideoResNet(BasicBlock, makers, { 2, 2, 2, 2 }, stem, { num_classes = o.num_classes,
      zero_init_residual = o.zero_init_residual })
  end
  export(name, f)
end
video_resnet("r3d_18", { Conv3DSimple, Conv3DSimple, Conv3DSimple, Conv3DSimple }, BasicStem)
video_resnet("mc3_18", { Conv3DSimple, Conv3DNoTemporal, Conv3DNoTemporal, Conv3DNoTemporal }, BasicStem)
video_resnet("r2plus1d_18", { Conv2Plus1D, Conv2Plus1D, Conv2Plus1D, Conv2Plus1D }, R2Plus1dStem)

-- ---- S3D ----

-- (in_planes, out_planes, kernel_size, stride, padding, norm_layer): k x k spatial, then k temporal
local TemporalSeparableConv = nn.Sequential:extend("TemporalSeparableConv")
function TemporalSeparableConv:__init(in_planes, out_planes, k, stride, padding, norm_layer)
  nn.Sequential.__init(self,
    Conv3dNormActivation(in_planes, out_planes, { kernel_size = { 1, k, k }, stride = { 1, stride, stride },
      padding = { 0, padding, padding }, bias = false, norm_layer = norm_layer }),
    Conv3dNormActivation(out_planes, out_planes, { kernel_size = { k, 1, 1 }, stride = { stride, 1, 1 },
      padding = { padding, 0, 0 }, bias = false, norm_layer = norm_layer }))
end

-- (in_planes, b0_out, b1_mid, b1_out, b2_mid, b2_out, b3_out, norm_layer): four branches concatenated
local SepInceptionBlock3D = nn.Module:extend("SepInceptionBlock3D")
function SepInceptionBlock3D:__init(in_planes, b0_out, b1_mid, b1_out, b2_mid, b2_out, b3_out, norm_layer)
  local function pointwise(cin, cout) return Conv3dNormActivation(cin, cout, { kernel_size = 1, stride = 1,
    norm_layer = norm_layer }) end
  self.branch0 = pointwise(in_planes, b0_out)
  self.branch1 = nn.Sequential(pointwise(in_planes, b1_mid), TemporalSeparableConv(b1_mid, b1_out, 3, 1, 1, norm_layer))
  self.branch2 = nn.Sequential(pointwise(in_planes, b2_mid), TemporalSeparableConv(b2_mid, b2_out, 3, 1, 1, norm_layer))
  self.branch3 = nn.Sequential(nn.MaxPool3d({ kernel_size = { 3, 3, 3 }, stride = 1, padding = 1 }),
    pointwise(in_planes, b3_out))
end
function SepInceptionBlock3D:forward(x)
  return torch.cat({ self.branch0(x), self.branch1(x), self.branch2(x), self.branch3(x) }, 1)
end

local S3D = nn.Module:extend("S3D")
video.S3D = S3D
-- ({num_classes=400, dropout=0.2, norm_layer=BatchNorm3d(eps=0.001, momentum=0.001)}); the input
-- needs T >= 16 and H, W >= 224 (the final 2x7x7 average pool)
function S3D:__init(...)
  local o = parse("S3D", { { "num_classes", 400 }, { "dropout", 0.2 }, { "norm_layer" } }, ...)
  check_int("S3D", "num_classes", o.num_classes, 1)
  local norm = o.norm_layer or function(c) return nn.BatchNorm3d(c, { eps = 0.001, momentum = 0.001 }) end
  local function pool(k, s, p) return nn.MaxPool3d({ kernel_size = k, stride = s, padding = p }) end
  local function block(...) return SepInceptionBlock3D(...) end
  self.features = nn.Sequential(
    TemporalSeparableConv(3, 64, 7, 2, 3, norm),
    pool({ 1, 3, 3 }, { 1, 2, 2 }, { 0, 1, 1 }),
    Conv3dNormActivation(64, 64, { kernel_size = 1, stride = 1, norm_layer = norm }),
    TemporalSeparableConv(64, 192, 3, 1, 1, norm),
    pool({ 1, 3, 3 }, { 1, 2, 2 }, { 0, 1, 1 }),
    block(192, 64, 96, 128, 16, 32, 32, norm),
    block(256, 128, 128, 192, 32, 96, 64, norm),
    pool({ 3, 3, 3 }, { 2, 2, 2 }, { 1, 1, 1 }),
    block(480, 192, 96, 208, 16, 48, 64, norm),
    block(512, 160, 112, 224, 24, 64, 64, norm),
    block(512, 128, 128, 256, 24, 64, 64, norm),
    block(512, 112, 144, 288, 32, 64, 64, norm),
    block(528, 256, 160, 320, 32, 128, 128, norm),
    pool({ 2, 2, 2 }, { 2, 2, 2 }, { 0, 0, 0 }),
    block(832, 256, 160, 320, 32, 128, 128, norm),
    block(832, 384, 192, 384, 48, 128, 128, norm))
  self.avgpool = nn.AvgPool3d({ kernel_size = { 2, 7, 7 }, stride = 1 })
  self.classifier = nn.Sequential(nn.Dropout({ p = o.dropout }),
    nn.Conv3d(1024, o.num_classes, { kernel_size = 1, stride = 1, bias = true }))
end
function S3D:forward(x)
  x = self.classifier(self.avgpool(self.features(x)))
  return torch.mean(x, { 2, 3, 4 })
end

function video.s3d(...)
  local o = H.builder_opts("s3d", { { "num_classes", 400 }, { "dropout", 0.2 }, { "norm_layer" } }, ...)
  return S3D({ num_classes = o.num_classes, dropout = o.dropout, norm_layer = o.norm_layer })
end

-- ---- weights (Kinetics-400) ----

local presets = require "tv_models_presets"
local function k400_transforms() return presets.VideoClassification({ crop_size = { 112, 112 }, resize_size = { 128, 171 } }) end
local E = models._weights_enum
for _, w in ipairs({ { "R3D_18_Weights", "r3d_18", "r3d_18-b3b3357e.pth", 33371472 },
  { "MC3_18_Weights", "mc3_18", "mc3_18-a90a0ba3.pth", 11695440 },
  { "R2Plus1D_18_Weights", "r2plus1d_18", "r2plus1d_18-91a641e6.pth", 31505325 } }) do
  video.resnet[w[1]] = E(w[1], w[2], video, { { "KINETICS400_V1", w[3], w[4], { 1, 1 }, { min_temporal_size = 1 },
    k400_transforms } })
end
E("S3D_Weights", "s3d", video, { { "KINETICS400_V1", "s3d-d76dad2f.pth", 8320048, { 224, 224 }, { min_temporal_size = 14 },
  function() return presets.VideoClassification({ crop_size = { 224, 224 }, resize_size = { 256, 256 } }) end } })

end
