-- torchvision.models.detection.backbone_utils (BackboneWithFPN, resnet_fpn_backbone,
-- _resnet_fpn_extractor, _validate_trainable_layers) and models._utils.IntermediateLayerGetter.
-- The ResNet's modules keep their names under body (backbone.body.layer1.0.conv1.weight).
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local fpn = require "tv_ops_fpn"
local layers = require "tv_ops_layers"

return function(models)

local M = {}

-- ---- IntermediateLayerGetter ----

local IntermediateLayerGetter = nn.Module:extend("IntermediateLayerGetter")
M.IntermediateLayerGetter = IntermediateLayerGetter

-- (model, return_layers {child name = output name}): model's children up to the last one
-- returned; forward gives an OrderedDict of the returned children's outputs
function IntermediateLayerGetter:__init(model, return_layers)
  local left, n = {}, 0
  for k in pairs(return_layers) do left[k] = true; n = n + 1 end
  local names = {}
  for _, kv in ipairs(model:named_children()) do names[kv[1]] = true end
  for k in pairs(return_layers) do
    if not names[k] then U.error("return_layers are not present in model") end
  end
  local kids = {}
  for _, kv in ipairs(model:named_children()) do
    if n == 0 then break end
    kids[#kids + 1] = kv
    if left[kv[1]] then left[kv[1]] = nil; n = n - 1 end
  end
  for _, kv in ipairs(kids) do self:add_module(kv[1], kv[2]) end
  self.return_layers = return_layers
end

function IntermediateLayerGetter:forward(x)
  local out = U.OrderedDict.new()
  for _, kv in ipairs(self:named_children()) do
    x = kv[2](x)
    local name = self.return_layers[kv[1]]
    if name ~= nil then out[name] = x end
  end
  return out
end

-- ---- BackboneWithFPN ----

local BackboneWithFPN = nn.Module:extend("BackboneWithFPN")
M.BackboneWithFPN = BackboneWithFPN

-- (backbone, return_layers, in_channels_list, out_channels, {extra_blocks=LastLevelMaxPool(), norm_layer=nil})
function BackboneWithFPN:__init(...)
  local R = U.REQUIRED
  local o = U.parse("BackboneWithFPN", { { "backbone", R }, { "return_layers", R }, { "in_channels_list", R },
    { "out_channels", R }, { "extra_blocks" }, { "norm_layer" } }, ...)
  self.body = IntermediateLayerGetter(o.backbone, o.return_layers)
  self.fpn = fpn.FeaturePyramidNetwork(o.in_channels_list, o.out_channels,
    { extra_blocks = o.extra_blocks or fpn.LastLevelMaxPool(), norm_layer = o.norm_layer })
  self.out_channels = o.out_channels
end

function BackboneWithFPN:forward(x) return self.fpn(self.body(x)) end

-- ---- ResNet + FPN ----

-- freezes all but the last trainable_layers stages of a ResNet and puts an FPN on layers
-- returned_layers (default 1..4)
function M._resnet_fpn_extractor(...)
  local o = U.parse("_resnet_fpn_extractor", { { "backbone", U.REQUIRED }, { "trainable_layers", U.REQUIRED },
    { "returned_layers" }, { "extra_blocks" }, { "norm_layer" } }, ...)
  local backbone, k = o.backbone, o.trainable_layers
  if k < 0 or k > 5 then U.errorf("Trainable layers should be in the range [0,5], got %d", k) end
  local train = ({ "layer4", "layer3", "layer2", "layer1", "conv1" })
  local prefixes = {}
  for i = 1, k do prefixes[i] = train[i] end
  if k == 5 then prefixes[#prefixes + 1] = "bn1" end
  for _, np in ipairs(backbone:named_parameters()) do
    local keep = false
    for _, p in ipairs(prefixes) do
      if np[1]:sub(1, #p) == p then keep = true end
    end
    if not keep then np[2]:requires_grad_(false) end
  end
  local returned = o.returned_layers or { 1, 2, 3, 4 }
  local lo, hi = math.huge, -math.huge
  for _, r in ipairs(returned) do lo, hi = math.min(lo, r), math.max(hi, r) end
  if lo <= 0 or hi >= 5 then
    U.errorf("Each returned layer should be in the range [1,4]. Got [%s]", table.concat(returned, ", "))
  end
  local return_layers, in_channels = {}, {}
  local stage2 = backbone.inplanes // 8
  for i, r in ipairs(returned) do
    return_layers["layer" .. r] = tostring(i - 1)
    in_channels[i] = stage2 * 2 ^ (r - 1) // 1
  end
  return BackboneWithFPN(backbone, return_layers, in_channels, 256,
    { extra_blocks = o.extra_blocks, norm_layer = o.norm_layer })
end

-- resnet_fpn_backbone{backbone_name=, weights=nil, norm_layer=FrozenBatchNorm2d, trainable_layers=3,
-- returned_layers=nil, extra_blocks=nil}
function M.resnet_fpn_backbone(...)
  local o = U.parse("resnet_fpn_backbone", { { "backbone_name", U.REQUIRED }, { "weights" },
    { "norm_layer", layers.FrozenBatchNorm2d }, { "trainable_layers", 3 }, { "returned_layers" }, { "extra_blocks" } },
    ...)
  local build = models[o.backbone_name]
  if type(o.backbone_name) ~= "string" or not o.backbone_name:find("res") or build == nil then
    U.errorf("resnet_fpn_backbone: unknown ResNet '%s'", tostring(o.backbone_name))
  end
  local backbone = build({ weights = o.weights, norm_layer = o.norm_layer })
  return M._resnet_fpn_extractor(backbone, o.trainable_layers, o.returned_layers, o.extra_blocks)
end

-- ---- MobileNet + FPN ----

-- backbone.features frozen before its last trainable_layers stages (a stage starts at each
-- strided block), with an FPN on stages returned_layers (default: the last two)
function M._mobilenet_extractor(...)
  local o = U.parse("_mobilenet_extractor", { { "backbone", U.REQUIRED }, { "fpn", U.REQUIRED },
    { "trainable_layers", U.REQUIRED }, { "returned_layers" }, { "extra_blocks" }, { "norm_layer" } }, ...)
  local features = o.backbone.features
  local n = #features
  local stages = { 0 }
  for i = 0, n - 1 do
    if features[i]._is_cn then stages[#stages + 1] = i end
  end
  stages[#stages + 1] = n - 1
  local num_stages, k = #stages, o.trainable_layers
  if k < 0 or k > num_stages then
    U.errorf("Trainable layers should be in the range [0,%d], got %d ", num_stages, k)
  end
  local freeze_before = k == 0 and n or stages[num_stages - k + 1]
  for i = 0, freeze_before - 1 do
    for _, p in ipairs(features[i]:parameters()) do p:requires_grad_(false) end
  end
  if not o.fpn then
    U.error("_mobilenet_extractor: fpn=false (the plain MobileNet backbone) is not supported; use fpn=true")
  end
  local returned = o.returned_layers or { num_stages - 2, num_stages - 1 }
  for _, r in ipairs(returned) do
    if r < 0 or r >= num_stages then
      U.errorf("Each returned layer should be in the range [0,%d], got [%s] ", num_stages - 1, table.concat(returned, ", "))
    end
  end
  local return_layers, in_channels = {}, {}
  for i, r in ipairs(returned) do
    return_layers[tostring(stages[r + 1])] = tostring(i - 1)
    in_channels[i] = features[stages[r + 1]].out_channels
  end
  return BackboneWithFPN(features, return_layers, in_channels, 256,
    { extra_blocks = o.extra_blocks, norm_layer = o.norm_layer })
end

-- the number of trainable backbone layers: all (max_value) for an untrained backbone (with
-- torchvision's warning if another number was asked), else the given or default value
function M._validate_trainable_layers(is_trained, trainable_backbone_layers, max_value, default_value)
  if not is_trained then
    if trainable_backbone_layers ~= nil then
      U.warn(string.format("Changing trainable_backbone_layers has no effect if neither pretrained nor " ..
        "pretrained_backbone have been set to True, falling back to trainable_backbone_layers=%d so that all " ..
        "layers are trainable", max_value))
    end
    trainable_backbone_layers = max_value
  end
  if trainable_backbone_layers == nil then trainable_backbone_layers = default_value end
  if trainable_backbone_layers < 0 or trainable_backbone_layers > max_value then
    U.errorf("Trainable backbone layers should be in the range [0,%d], got %d ", max_value, trainable_backbone_layers)
  end
  return trainable_backbone_layers
end

return M
end
