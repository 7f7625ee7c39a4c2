-- torchvision.models' per-family submodules: models.resnet.ResNet, models.resnet.resnet18,
-- models.resnet.ResNet18_Weights, models.vgg.make_layers, ... (Python's
-- `from torchvision.models.resnet import ResNet, BasicBlock`). Each table holds its family's
-- classes, builders and their weights enums. models.alexnet and models.googlenet stay the builders,
-- as in torchvision (whose package attribute is the function, not the submodule).
return function(models)

-- submodule -> {classes (name, or {name in the submodule, name in models}), builders (Lua patterns)}
local FAMILIES = {
  resnet = { { "ResNet", "BasicBlock", "Bottleneck" }, { "^resnet%d+$", "^wide_resnet", "^resnext" } },
  vgg = { { "VGG", { "make_layers", "vgg_make_layers" } }, { "^vgg%d" } },
  densenet = { { "DenseNet", "_DenseLayer", "_DenseBlock", "_Transition" }, { "^densenet" } },
  mobilenetv2 = { { "MobileNetV2", "InvertedResidual", "_make_divisible" }, { "^mobilenet_v2$" } },
  mobilenetv3 = { { "MobileNetV3", { "InvertedResidual", "InvertedResidualV3" } }, { "^mobilenet_v3" } },
  mobilenet = { { "MobileNetV2", "MobileNetV3" }, { "^mobilenet_v" } },
  squeezenet = { { "SqueezeNet", "Fire" }, { "^squeezenet" } },
  shufflenetv2 = { { "ShuffleNetV2", { "InvertedResidual", "ShuffleNetInvertedResidual" },
    { "channel_shuffle", "_channel_shuffle" } }, { "^shufflenet_v2" } },
  efficientnet = { { "EfficientNet", "MBConv", "FusedMBConv" }, { "^efficientnet" } },
  vision_transformer = { { "VisionTransformer", "MLPBlock", "EncoderBlock", "Encoder" }, { "^vit_" } },
  convnext = { { "ConvNeXt", "CNBlock", "LayerNorm2d" }, { "^convnext" } },
  inception = { { "Inception3", "InceptionA", "InceptionB", "InceptionC", "InceptionD", "InceptionE", "InceptionAux",
    "BasicConv2d", "InceptionOutputs" }, { "^inception_v3$" } },
  mnasnet = { { "MNASNet", { "_InvertedResidual", "_MNASNetInvertedResidual" } }, { "^mnasnet" } },
  regnet = { { "RegNet", "AnyStage", "SimpleStemIN", "BottleneckTransform", "ResBottleneckBlock" }, { "^regnet_" } },
  swin_transformer = { { "SwinTransformer" }, { "^swin_" } },
  maxvit = { { "MaxVit" }, { "^maxvit_" } },
}

local builders = {} -- the classification builders: names that have a weights enum
for name, enum in pairs(models._builder_weights) do
  if not models._builder_family[name] and type(rawget(models, name)) == "function" then builders[name] = enum end
end

for sub, spec in pairs(FAMILIES) do
  local t = rawget(models, sub) or {} -- swin_transformer and maxvit exist already
  models[sub] = t
  for _, c in ipairs(spec[1]) do
    local as, from = c, c
    if type(c) == "table" then as, from = c[1], c[2] end
    if t[as] == nil then t[as] = assert(rawget(models, from), from) end
  end
  for name, enum in pairs(builders) do
    for _, pat in ipairs(spec[2]) do
      if name:match(pat) then
        t[name] = models[name]
        t[enum.__enum_name] = enum
      end
    end
  end
end

end
