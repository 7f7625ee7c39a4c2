-- torchvision.models.segmentation: fcn_resnet50/101, deeplabv3_resnet50/101,
-- deeplabv3_mobilenet_v3_large and lraspp_mobilenet_v3_large, with their classes (FCN, FCNHead,
-- DeepLabV3, DeepLabHead, ASPP, ASPPConv, ASPPPooling, LRASPP, LRASPPHead), the *_Weights enums and
-- torchvision.models._utils.IntermediateLayerGetter. A model returns an OrderedDict {out=, aux=}
-- of [N, num_classes, H, W] maps upsampled (bilinear) to the input's size; state_dict keys are
-- torchvision's ("backbone.layer4.0.conv2.weight", "classifier.0.convs.0.0.weight").
--
-- One difference: torchvision's builders default to weights_backbone=<ImageNet weights>, which
-- downloads; here the default is nil (randomly initialised backbone), and any weights= or
-- weights_backbone= other than nil raises the no-download error of the other builders.
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional

return function(models, H)

local fail, parse = H.fail, H.parse
local OD = U.OrderedDict

local weights_enum = models._weights_enum

-- builder_opts plus weights_backbone / pretrained_backbone (verified against the backbone's enum)
local function seg_opts(fname, backbone, spec, ...)
  local full = { { "weights_backbone" }, { "pretrained_backbone" } }
  for _, s in ipairs(spec) do full[#full + 1] = s end
  local o = H.builder_opts(fname, full, ...)
  local wb = o.weights_backbone
  if wb ~= nil and wb ~= false then
    local enum = models.get_model_weights(backbone)
    local ok, w = pcall(enum.verify, enum, wb)
    if not ok then fail((tostring(w):gsub("^[^\n]-:%d+: ", "", 1))) end
    H.no_download(fname, "weights_backbone=" .. tostring(w) .. " (" .. w.url .. ")")
  elseif o.pretrained_backbone then
    H.no_download(fname, "pretrained_backbone=True")
  end
  if o.num_classes == nil then o.num_classes = 21 end
  H.check_int(fname, "num_classes", o.num_classes, 1)
  return o
end

-- ---- models._utils.IntermediateLayerGetter ----

models._utils = models._utils or {}
local IntermediateLayerGetter = nn.ModuleDict:extend("IntermediateLayerGetter")
models._utils.IntermediateLayerGetter = IntermediateLayerGetter

-- (model, return_layers): model's children up to the last one named in return_layers
-- ({layer4 = "out", layer3 = "aux"}); forward returns an OrderedDict of those children's outputs
-- under the new names, in the model's order
function IntermediateLayerGetter:__init(model, return_layers)
  if not nn.Module.is_module(model) then
    H.failf("IntermediateLayerGetter: model must be a Module, got %s", U.typename(model))
  end
  if type(return_layers) ~= "table" then
    H.failf("IntermediateLayerGetter: return_layers must be a table {child name = output name}, got %s",
      U.typename(return_layers))
  end
  local children = model:named_children()
  local wanted, left = {}, 0
  for k, v in pairs(return_layers) do
    wanted[tostring(k)] = tostring(v)
    left = left + 1
  end
  local names = {}
  for _, e in ipairs(children) do names[e[1]] = true end
  for k in pairs(wanted) do
    if not names[k] then fail("return_layers are not present in model") end
  end
  local seen = {}
  for _, e in ipairs(children) do
    self:add_module(e[1], e[2])
    if wanted[e[1]] and not seen[e[1]] then
      seen[e[1]] = true
      left = left - 1
    end
    if left == 0 then break end
  end
  self.return_layers = wanted
end

function IntermediateLayerGetter:forward(x)
  local out = OD.new()
  for name, m in pairs(self._modules) do
    x = m(x)
    local as = self.return_layers[name]
    if as then out[as] = x end
  end
  return out
end

-- ---- the heads ----

local seg = {} -- torchvision.models.segmentation
models.segmentation = seg
seg.fcn, seg.deeplabv3, seg.lraspp = {}, {}, {} -- its submodules: the classes not in seg itself

local function upsample(x, ref_h, ref_w)
  return F.interpolate(x, { size = { ref_h, ref_w }, mode = "bilinear", align_corners = false })
end

-- _SimpleSegmentationModel(backbone, classifier, aux_classifier)
local Simple = nn.Module:extend("_SimpleSegmentationModel")
seg._utils = { _SimpleSegmentationModel = Simple }
function Simple:__init(...)
  local o = parse(self:_get_name(), { { "backbone", U.REQUIRED }, { "classifier", U.REQUIRED }, { "aux_classifier" } }, ...)
  self.backbone = o.backbone
  self.classifier = o.classifier
  self.aux_classifier = o.aux_classifier
end
function Simple:forward(x)
  local h, w = x:size(-2), x:size(-1)
  local features = self.backbone(x)
  local result = OD.new()
  result.out = upsample(self.classifier(features.out), h, w)
  if self.aux_classifier ~= nil then result.aux = upsample(self.aux_classifier(features.aux), h, w) end
  return result
end

local FCN = Simple:extend("FCN")
local DeepLabV3 = Simple:extend("DeepLabV3")
seg.FCN, seg.fcn.FCN = FCN, FCN
seg.DeepLabV3, seg.deeplabv3.DeepLabV3 = DeepLabV3, DeepLabV3

local function bn_relu_conv(in_ch, out_ch, k, opts)
  opts = opts or {}
  return nn.Conv2d(in_ch, out_ch, { kernel_size = k, padding = opts.padding or 0, dilation = opts.dilation or 1,
    bias = false }), nn.BatchNorm2d(out_ch), nn.ReLU()
end

-- FCNHead(in_channels, channels): conv 3x3 to in/4, BN, ReLU, dropout 0.1, conv 1x1
local FCNHead = nn.Sequential:extend("FCNHead")
seg.fcn.FCNHead, seg.deeplabv3.FCNHead = FCNHead, FCNHead
function FCNHead:__init(in_channels, channels)
  local inter = in_channels // 4
  local c, b, r = bn_relu_conv(in_channels, inter, 3, { padding = 1 })
  nn.Sequential.__init(self, c, b, r, nn.Dropout(0.1), nn.Conv2d(inter, channels, 1))
end

-- ASPPConv(in_channels, out_channels, dilation): dilated conv 3x3, BN, ReLU
local ASPPConv = nn.Sequential:extend("ASPPConv")
seg.deeplabv3.ASPPConv = ASPPConv
function ASPPConv:__init(in_channels, out_channels, dilation)
  nn.Sequential.__init(self, bn_relu_conv(in_channels, out_channels, 3, { padding = dilation, dilation = dilation }))
end

-- ASPPPooling(in_channels, out_channels): global average, conv 1x1, BN, ReLU, upsampled back
local ASPPPooling = nn.Sequential:extend("ASPPPooling")
seg.deeplabv3.ASPPPooling = ASPPPooling
function ASPPPooling:__init(in_channels, out_channels)
  nn.Sequential.__init(self, nn.AdaptiveAvgPool2d(1), bn_relu_conv(in_channels, out_channels, 1))
end
function ASPPPooling:forward(x)
  local h, w = x:size(-2), x:size(-1)
  for _, m in pairs(self._modules) do x = m(x) end
  return upsample(x, h, w)
end

-- ASPP(in_channels, atrous_rates, out_channels=256)
local ASPP = nn.Module:extend("ASPP")
seg.deeplabv3.ASPP = ASPP
function ASPP:__init(...)
  local o = parse("ASPP", { { "in_channels", U.REQUIRED }, { "atrous_rates", U.REQUIRED }, { "out_channels", 256 } }, ...)
  local cin, cout = o.in_channels, o.out_channels
  local mods = { nn.Sequential(bn_relu_conv(cin, cout, 1)) }
  for _, rate in ipairs(o.atrous_rates) do mods[#mods + 1] = ASPPConv(cin, cout, rate) end
  mods[#mods + 1] = ASPPPooling(cin, cout)
  self.convs = nn.ModuleList(mods)
  local c, b, r = bn_relu_conv(#mods * cout, cout, 1)
  self.project = nn.Sequential(c, b, r, nn.Dropout(0.5))
end
function ASPP:forward(x)
  local res = {}
  for _, conv in pairs(self.convs) do res[#res + 1] = conv(x) end
  return self.project(torch.cat(res, 1))
end

-- DeepLabHead(in_channels, num_classes): ASPP (rates 12, 24, 36), conv 3x3, BN, ReLU, conv 1x1
local DeepLabHead = nn.Sequential:extend("DeepLabHead")
seg.deeplabv3.DeepLabHead = DeepLabHead
function DeepLabHead:__init(in_channels, num_classes)
  local c, b, r = bn_relu_conv(256, 256, 3, { padding = 1 })
  nn.Sequential.__init(self, ASPP(in_channels, { 12, 24, 36 }), c, b, r, nn.Conv2d(256, num_classes, 1))
end

-- LRASPPHead(low_channels, high_channels, num_classes, inter_channels)
local LRASPPHead = nn.Module:extend("LRASPPHead")
seg.lraspp.LRASPPHead = LRASPPHead
function LRASPPHead:__init(low_channels, high_channels, num_classes, inter_channels)
  self.cbr = nn.Sequential(nn.Conv2d(high_channels, inter_channels, { kernel_size = 1, bias = false }),
    nn.BatchNorm2d(inter_channels), nn.ReLU(true))
  self.scale = nn.Sequential(nn.AdaptiveAvgPool2d(1),
    nn.Conv2d(high_channels, inter_channels, { kernel_size = 1, bias = false }), nn.Sigmoid())
  self.low_classifier = nn.Conv2d(low_channels, num_classes, 1)
  self.high_classifier = nn.Conv2d(inter_channels, num_classes, 1)
end
function LRASPPHead:forward(input)
  local low, high = input.low, input.high
  local x = self.cbr(high) * self.scale(high)
  x = upsample(x, low:size(-2), low:size(-1))
  return self.low_classifier(low) + self.high_classifier(x)
end

-- LRASPP(backbone, low_channels, high_channels, num_classes, inter_channels=128)
local LRASPP = nn.Module:extend("LRASPP")
seg.LRASPP, seg.lraspp.LRASPP = LRASPP, LRASPP
function LRASPP:__init(...)
  local o = parse("LRASPP", { { "backbone", U.REQUIRED }, { "low_channels", U.REQUIRED }, { "high_channels", U.REQUIRED },
    { "num_classes", U.REQUIRED }, { "inter_channels", 128 } }, ...)
  self.backbone = o.backbone
  self.classifier = LRASPPHead(o.low_channels, o.high_channels, o.num_classes, o.inter_channels)
end
function LRASPP:forward(x)
  local out = self.classifier(self.backbone(x))
  local result = OD.new()
  result.out = upsample(out, x:size(-2), x:size(-1))
  return result
end

-- ---- builders ----

-- ResNet backbone (layer4 = out, layer3 = aux): FCN or DeepLabV3 head
local function resnet_model(cls, head, backbone, num_classes, aux)
  local ret = { layer4 = "out" }
  if aux then ret.layer3 = "aux" end
  return cls(IntermediateLayerGetter(backbone, ret), head(2048, num_classes), aux and FCNHead(1024, num_classes) or nil)
end

-- MobileNetV3 features: positions of the stem, the strided blocks (C1..C4) and the last conv
local function stage_indices(features)
  local idx = { 0 }
  for i, b in pairs(features) do
    if b._is_cn then idx[#idx + 1] = i end
  end
  idx[#idx + 1] = #features - 1
  return idx
end

local seg_keys = { { "num_classes" }, { "aux_loss" } }
local function resnet_builder(name, cls, head, depth, family)
  local backbone_name = "resnet" .. depth
  seg[name] = function(...)
    local o = seg_opts(name, backbone_name, seg_keys, ...)
    local backbone = models[backbone_name]({ replace_stride_with_dilation = { false, true, true } })
    return resnet_model(cls, head, backbone, o.num_classes, o.aux_loss)
  end
  family[name] = seg[name]
end
resnet_builder("fcn_resnet50", FCN, FCNHead, 50, seg.fcn)
resnet_builder("fcn_resnet101", FCN, FCNHead, 101, seg.fcn)
resnet_builder("deeplabv3_resnet50", DeepLabV3, DeepLabHead, 50, seg.deeplabv3)
resnet_builder("deeplabv3_resnet101", DeepLabV3, DeepLabHead, 101, seg.deeplabv3)

function seg.deeplabv3_mobilenet_v3_large(...)
  local o = seg_opts("deeplabv3_mobilenet_v3_large", "mobilenet_v3_large", seg_keys, ...)
  local features = models.mobilenet_v3_large({ dilated = true }).features
  local idx = stage_indices(features)
  local out_pos, aux_pos = idx[#idx], idx[#idx - 3] -- C5 (output stride 16), C2 (output stride 8)
  local ret = { [tostring(out_pos)] = "out" }
  if o.aux_loss then ret[tostring(aux_pos)] = "aux" end
  local aux = o.aux_loss and FCNHead(features[aux_pos].out_channels, o.num_classes) or nil
  return DeepLabV3(IntermediateLayerGetter(features, ret), DeepLabHead(features[out_pos].out_channels, o.num_classes),
    aux)
end
seg.deeplabv3.deeplabv3_mobilenet_v3_large = seg.deeplabv3_mobilenet_v3_large

function seg.lraspp_mobilenet_v3_large(...)
  local o = seg_opts("lraspp_mobilenet_v3_large", "mobilenet_v3_large", seg_keys, ...)
  if o.aux_loss then fail("lraspp_mobilenet_v3_large: This model does not use auxiliary loss (aux_loss must be nil or false)") end
  local features = models.mobilenet_v3_large({ dilated = true }).features
  local idx = stage_indices(features)
  local low_pos, high_pos = idx[#idx - 3], idx[#idx]
  local getter = IntermediateLayerGetter(features, { [tostring(low_pos)] = "low", [tostring(high_pos)] = "high" })
  return LRASPP(getter, features[low_pos].out_channels, features[high_pos].out_channels, o.num_classes)
end
seg.lraspp.lraspp_mobilenet_v3_large = seg.lraspp_mobilenet_v3_large

-- the weights (COCO train2017, the 20 Pascal VOC categories plus background)
local presets = require "tv_models_presets"
local function voc_transforms() return presets.SemanticSegmentation({ resize_size = 520 }) end
local function coco_voc(enum_name, builder, family, file, num_params)
  weights_enum(enum_name, builder, seg, { { "COCO_WITH_VOC_LABELS_V1", file, num_params, { 1, 1 },
    { categories = require("tv_models_meta")._VOC_CATEGORIES }, voc_transforms } })
  family[enum_name] = seg[enum_name]
end
coco_voc("FCN_ResNet50_Weights", "fcn_resnet50", seg.fcn, "fcn_resnet50_coco-1167a1af.pth", 35322218)
coco_voc("FCN_ResNet101_Weights", "fcn_resnet101", seg.fcn, "fcn_resnet101_coco-7ecb50ca.pth", 54314346)
coco_voc("DeepLabV3_ResNet50_Weights", "deeplabv3_resnet50", seg.deeplabv3, "deeplabv3_resnet50_coco-cd0a2569.pth", 42004074)
coco_voc("DeepLabV3_ResNet101_Weights", "deeplabv3_resnet101", seg.deeplabv3, "deeplabv3_resnet101_coco-586e9e4e.pth",
  60996202)
coco_voc("DeepLabV3_MobileNet_V3_Large_Weights", "deeplabv3_mobilenet_v3_large", seg.deeplabv3,
  "deeplabv3_mobilenet_v3_large-fc3c493d.pth", 11029328)
coco_voc("LRASPP_MobileNet_V3_Large_Weights", "lraspp_mobilenet_v3_large", seg.lraspp,
  "lraspp_mobilenet_v3_large-d234d4ea.pth", 3221538)

end
