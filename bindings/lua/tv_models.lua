-- torchvision.models: AlexNet, VGG (11/13/16/19, with and without batch norm) and
-- ResNet (BasicBlock: 18/34; Bottleneck: 50/101/152), built as torchvision
-- builds them so that parameter counts, state_dict keys ("features.0.weight",
-- "layer1.0.downsample.0.weight", "fc.bias"), printing and initialisation match.
--
--   local models = require("torchvision").models
--   local net = models.alexnet({num_classes = 10})     -- also models.alexnet{num_classes=10}
--   local r18 = models.resnet18()
--
-- The builders take torchvision's keywords (weights, progress, and the model's own
-- options). No weights are downloaded: weights= (other than nil/false) or
-- pretrained=true is an error; load a checkpoint with load_state_dict instead.
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local init = nn.init

local models = {}

-- Errors point at the user's line: the first frame outside this file and the nn library.
local function fail(msg)
  local level = 2
  while true do
    local info = debug.getinfo(level, "S")
    if not info then return error(msg, 0) end
    local src = info.source
    if info.what ~= "C" and not src:find("^@bindings/lua/tv_models") and not src:find("^@bindings/lua/nn_") then
      return error(msg, level)
    end
    level = level + 1
  end
end
local function failf(fmt, ...) return fail(string.format(fmt, ...)) end

local function rethrow(ok, ...)
  if ok then return ... end
  local err = ...
  if type(err) ~= "string" then error(err, 0) end
  return fail((err:gsub("^[^\n]-:%d+: ", "", 1)))
end
local function parse(fname, spec, ...) return rethrow(pcall(U.parse, fname, spec, ...)) end
local function check_int(fname, name, v, min) return rethrow(pcall(U.check_int, fname, name, v, min)) end

-- ---- builders' shared argument handling ----

-- The error for a builder asked for pretrained weights (what: "weights=...").
local function no_download(fname, what)
  failf("%s: %s asks for pretrained weights, but nnrepl downloads nothing at run time; build the model without " ..
    "weights and load the checkpoint from a local file with model:load_state_dict(torch.load(path)) " ..
    "(torchvision's state_dict keys; torch.load reads PyTorch's .pth files)", fname, what)
end

-- Parse a builder's keyword table: weights/progress/pretrained plus the model's own keys.
local function builder_opts(fname, spec, ...)
  local full = { { "weights" }, { "progress", true }, { "pretrained" } }
  for _, s in ipairs(spec) do full[#full + 1] = s end
  local n = select("#", ...)
  if n > 1 or (n == 1 and (...) ~= nil and not U.is_opts((...))) then
    failf("%s() takes keyword arguments only, as %s({num_classes=10})", fname, fname)
  end
  local o = parse(fname, full, ...)
  local w, what = o.weights, nil
  if w ~= nil and w ~= false then
    local enum = models._builder_weights and models._builder_weights[fname]
    if enum then w = rethrow(pcall(enum.verify, enum, w)) end -- unknown names and other enums' members fail here
    what = "weights=" .. tostring(w)
    if type(w) == "table" and w.url then what = what .. " (" .. w.url .. ")" end
  elseif o.pretrained then what = "pretrained=True" end
  if what then no_download(fname, what) end
  return o
end

local function isinstance(m, cls) return nn.isinstance(m, cls) end

-- ---- AlexNet ----

local AlexNet = nn.Module:extend("AlexNet")
models.AlexNet = AlexNet

function AlexNet:__init(...)
  local o = parse("AlexNet", { { "num_classes", 1000 }, { "dropout", 0.5 } }, ...)
  local num_classes = check_int("AlexNet", "num_classes", o.num_classes, 1)
  local p = o.dropout
  self.features = nn.Sequential(
    nn.Conv2d(3, 64, { kernel_size = 11, stride = 4, padding = 2 }),
    nn.ReLU(true),
    nn.MaxPool2d({ kernel_size = 3, stride = 2 }),
    nn.Conv2d(64, 192, { kernel_size = 5, padding = 2 }),
    nn.ReLU(true),
    nn.MaxPool2d({ kernel_size = 3, stride = 2 }),
    nn.Conv2d(192, 384, { kernel_size = 3, padding = 1 }),
    nn.ReLU(true),
    nn.Conv2d(384, 256, { kernel_size = 3, padding = 1 }),
    nn.ReLU(true),
    nn.Conv2d(256, 256, { kernel_size = 3, padding = 1 }),
    nn.ReLU(true),
    nn.MaxPool2d({ kernel_size = 3, stride = 2 }))
  self.avgpool = nn.AdaptiveAvgPool2d({ 6, 6 })
  self.classifier = nn.Sequential(
    nn.Dropout({ p = p }),
    nn.Linear(256 * 6 * 6, 4096),
    nn.ReLU(true),
    nn.Dropout({ p = p }),
    nn.Linear(4096, 4096),
    nn.ReLU(true),
    nn.Linear(4096, num_classes))
end

function AlexNet:forward(x)
  x = self.features(x)
  x = self.avgpool(x)
  x = torch.flatten(x, 1)
  return self.classifier(x)
end

function models.alexnet(...)
  local o = builder_opts("alexnet", { { "num_classes", 1000 }, { "dropout", 0.5 } }, ...)
  return AlexNet({ num_classes = o.num_classes, dropout = o.dropout })
end

-- VGG's (and VideoResNet's) initialisation: convolutions kaiming normal (fan_out), batch norms 1 and 0,
-- linear layers N(0, 0.01) and 0
local function init_weights(model, conv, bn)
  for _, m in ipairs(model:modules()) do
    if isinstance(m, conv) then
      init.kaiming_normal_(m.weight, { mode = "fan_out", nonlinearity = "relu" })
      if m.bias ~= nil then init.constant_(m.bias, 0) end
    elseif isinstance(m, bn) then
      init.constant_(m.weight, 1)
      init.constant_(m.bias, 0)
    elseif isinstance(m, nn.Linear) then
      init.normal_(m.weight, 0, 0.01)
      init.constant_(m.bias, 0)
    end
  end
end

-- ---- VGG ----

local VGG = nn.Module:extend("VGG")
models.VGG = VGG

function VGG:__init(...)
  local o = parse("VGG", { { "features", U.REQUIRED }, { "num_classes", 1000 }, { "init_weights", true },
    { "dropout", 0.5 } }, ...)
  local num_classes = check_int("VGG", "num_classes", o.num_classes, 1)
  self.features = o.features
  self.avgpool = nn.AdaptiveAvgPool2d({ 7, 7 })
  self.classifier = nn.Sequential(
    nn.Linear(512 * 7 * 7, 4096),
    nn.ReLU(true),
    nn.Dropout({ p = o.dropout }),
    nn.Linear(4096, 4096),
    nn.ReLU(true),
    nn.Dropout({ p = o.dropout }),
    nn.Linear(4096, num_classes))
  if o.init_weights then init_weights(self, nn.Conv2d, nn.BatchNorm2d) end
end

function VGG:forward(x)
  x = self.features(x)
  x = self.avgpool(x)
  x = torch.flatten(x, 1)
  return self.classifier(x)
end

local vgg_cfgs = {
  A = { 64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M" },
  B = { 64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M" },
  D = { 64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M" },
  E = { 64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M" },
}

-- torchvision's make_layers: a Sequential of conv(3x3, pad 1)[, BatchNorm2d], ReLU and 2x2 max pools.
local function make_layers(cfg, batch_norm)
  local layers, in_channels = {}, 3
  for _, v in ipairs(cfg) do
    if v == "M" then
      layers[#layers + 1] = nn.MaxPool2d({ kernel_size = 2, stride = 2 })
    else
      layers[#layers + 1] = nn.Conv2d(in_channels, v, { kernel_size = 3, padding = 1 })
      if batch_norm then layers[#layers + 1] = nn.BatchNorm2d(v) end
      layers[#layers + 1] = nn.ReLU(true)
      in_channels = v
    end
  end
  return nn.Sequential(table.unpack(layers))
end
models.vgg_make_layers = make_layers

local function vgg_builder(name, cfg, batch_norm)
  models[name] = function(...)
    local o = builder_opts(name, { { "num_classes", 1000 }, { "init_weights", true }, { "dropout", 0.5 } }, ...)
    return VGG(make_layers(vgg_cfgs[cfg], batch_norm),
      { num_classes = o.num_classes, init_weights = o.init_weights, dropout = o.dropout })
  end
end
vgg_builder("vgg11", "A", false)
vgg_builder("vgg11_bn", "A", true)
vgg_builder("vgg13", "B", false)
vgg_builder("vgg13_bn", "B", true)
vgg_builder("vgg16", "D", false)
vgg_builder("vgg16_bn", "D", true)
vgg_builder("vgg19", "E", false)
vgg_builder("vgg19_bn", "E", true)

-- ---- ResNet ----

local function conv3x3(in_planes, out_planes, stride, groups, dilation)
  return nn.Conv2d(in_planes, out_planes, { kernel_size = 3, stride = stride or 1, padding = dilation or 1,
    groups = groups or 1, bias = false, dilation = dilation or 1 })
end

local function conv1x1(in_planes, out_planes, stride)
  return nn.Conv2d(in_planes, out_planes, { kernel_size = 1, stride = stride or 1, bias = false })
end

local block_spec = { { "inplanes", U.REQUIRED }, { "planes", U.REQUIRED }, { "stride", 1 }, { "downsample" },
  { "groups", 1 }, { "base_width", 64 }, { "dilation", 1 }, { "norm_layer" } }

local BasicBlock = nn.Module:extend("BasicBlock")
models.BasicBlock = BasicBlock
BasicBlock.expansion = 1

function BasicBlock:__init(...)
  local o = parse("BasicBlock", block_spec, ...)
  local norm_layer = o.norm_layer or nn.BatchNorm2d
  if o.groups ~= 1 or o.base_width ~= 64 then fail("BasicBlock only supports groups=1 and base_width=64") end
  if o.dilation > 1 then fail("Dilation > 1 not supported in BasicBlock") end
  self.conv1 = conv3x3(o.inplanes, o.planes, o.stride)
  self.bn1 = norm_layer(o.planes)
  self.relu = nn.ReLU(true)
  self.conv2 = conv3x3(o.planes, o.planes)
  self.bn2 = norm_layer(o.planes)
  self.downsample = o.downsample
  self.stride = o.stride
end

function BasicBlock:forward(x)
  local identity = x
  local out = self.conv1(x)
  out = self.bn1(out)
  out = self.relu(out)
  out = self.conv2(out)
  out = self.bn2(out)
  if self.downsample ~= nil then identity = self.downsample(x) end
  out = out:add_(identity)
  return self.relu(out)
end

local Bottleneck = nn.Module:extend("Bottleneck")
models.Bottleneck = Bottleneck
Bottleneck.expansion = 4

function Bottleneck:__init(...)
  local o = parse("Bottleneck", block_spec, ...)
  local norm_layer = o.norm_layer or nn.BatchNorm2d
  local width = math.floor(o.planes * (o.base_width / 64.0)) * o.groups
  self.conv1 = conv1x1(o.inplanes, width)
  self.bn1 = norm_layer(width)
  self.conv2 = conv3x3(width, width, o.stride, o.groups, o.dilation)
  self.bn2 = norm_layer(width)
  self.conv3 = conv1x1(width, o.planes * Bottleneck.expansion)
  self.bn3 = norm_layer(o.planes * Bottleneck.expansion)
  self.relu = nn.ReLU(true)
  self.downsample = o.downsample
  self.stride = o.stride
end

function Bottleneck:forward(x)
  local identity = x
  local out = self.relu(self.bn1(self.conv1(x)))
  out = self.relu(self.bn2(self.conv2(out)))
  out = self.bn3(self.conv3(out))
  if self.downsample ~= nil then identity = self.downsample(x) end
  out = out:add_(identity)
  return self.relu(out)
end

local ResNet = nn.Module:extend("ResNet")
models.ResNet = ResNet

local resnet_spec = { { "block", U.REQUIRED }, { "layers", U.REQUIRED }, { "num_classes", 1000 },
  { "zero_init_residual", false }, { "groups", 1 }, { "width_per_group", 64 },
  { "replace_stride_with_dilation" }, { "norm_layer" } }

function ResNet:__init(...)
  local o = parse("ResNet", resnet_spec, ...)
  local block, layers = o.block, o.layers
  local num_classes = check_int("ResNet", "num_classes", o.num_classes, 1)
  -- plain fields (not modules): kept in the instance's values, as Python's attributes
  self._norm_layer = o.norm_layer or nn.BatchNorm2d
  self.inplanes = 64
  self.dilation = 1
  local rswd = o.replace_stride_with_dilation or { false, false, false }
  if #rswd ~= 3 then
    failf("replace_stride_with_dilation should be None or a 3-element tuple, got %s", U.pystr(rswd))
  end
  self.groups = o.groups
  self.base_width = o.width_per_group
  self.conv1 = nn.Conv2d(3, self.inplanes, { kernel_size = 7, stride = 2, padding = 3, bias = false })
  self.bn1 = self._norm_layer(self.inplanes)
  self.relu = nn.ReLU(true)
  self.maxpool = nn.MaxPool2d({ kernel_size = 3, stride = 2, padding = 1 })
  self.layer1 = self:_make_layer(block, 64, layers[1])
  self.layer2 = self:_make_layer(block, 128, layers[2], 2, rswd[1])
  self.layer3 = self:_make_layer(block, 256, layers[3], 2, rswd[2])
  self.layer4 = self:_make_layer(block, 512, layers[4], 2, rswd[3])
  self.avgpool = nn.AdaptiveAvgPool2d({ 1, 1 })
  self.fc = nn.Linear(512 * block.expansion, num_classes)

  for _, m in ipairs(self:modules()) do
    if isinstance(m, nn.Conv2d) then
      init.kaiming_normal_(m.weight, { mode = "fan_out", nonlinearity = "relu" })
    elseif isinstance(m, { nn.BatchNorm2d, nn.GroupNorm }) then
      init.constant_(m.weight, 1)
      init.constant_(m.bias, 0)
    end
  end
  if o.zero_init_residual then
    for _, m in ipairs(self:modules()) do
      if isinstance(m, Bottleneck) and m.bn3.weight ~= nil then
        init.constant_(m.bn3.weight, 0)
      elseif isinstance(m, BasicBlock) and m.bn2.weight ~= nil then
        init.constant_(m.bn2.weight, 0)
      end
    end
  end
end

function ResNet:_make_layer(block, planes, blocks, stride, dilate)
  stride = stride or 1
  local norm_layer = self._norm_layer
  local downsample
  local previous_dilation = self.dilation
  if dilate then
    self.dilation = self.dilation * stride
    stride = 1
  end
  if stride ~= 1 or self.inplanes ~= planes * block.expansion then
    downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
      norm_layer(planes * block.expansion))
  end
  local layers = {}
  layers[1] = block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
    norm_layer)
  self.inplanes = planes * block.expansion
  for _ = 2, blocks do
    layers[#layers + 1] = block(self.inplanes, planes, { groups = self.groups, base_width = self.base_width,
      dilation = self.dilation, norm_layer = norm_layer })
  end
  return nn.Sequential(table.unpack(layers))
end

function ResNet:forward(x)
  x = self.conv1(x)
  x = self.bn1(x)
  x = self.relu(x)
  x = self.maxpool(x)
  x = self.layer1(x)
  x = self.layer2(x)
  x = self.layer3(x)
  x = self.layer4(x)
  x = self.avgpool(x)
  x = torch.flatten(x, 1)
  return self.fc(x)
end

local resnet_keys = { { "num_classes", 1000 }, { "zero_init_residual", false }, { "groups", 1 },
  { "width_per_group", 64 }, { "replace_stride_with_dilation" }, { "norm_layer" } }

local function resnet_builder(name, block, layers, width, groups)
  models[name] = function(...)
    local o = builder_opts(name, resnet_keys, ...)
    return ResNet(block, layers, { num_classes = o.num_classes, zero_init_residual = o.zero_init_residual,
      groups = groups or o.groups, width_per_group = width or o.width_per_group,
      replace_stride_with_dilation = o.replace_stride_with_dilation, norm_layer = o.norm_layer })
  end
end
resnet_builder("resnet18", BasicBlock, { 2, 2, 2, 2 })
resnet_builder("resnet34", BasicBlock, { 3, 4, 6, 3 })
resnet_builder("resnet50", Bottleneck, { 3, 4, 6, 3 })
resnet_builder("resnet101", Bottleneck, { 3, 4, 23, 3 })
resnet_builder("resnet152", Bottleneck, { 3, 8, 36, 3 })
resnet_builder("wide_resnet50_2", Bottleneck, { 3, 4, 6, 3 }, 128)
resnet_builder("wide_resnet101_2", Bottleneck, { 3, 4, 23, 3 }, 128)
resnet_builder("resnext50_32x4d", Bottleneck, { 3, 4, 6, 3 }, 4, 32)
resnet_builder("resnext101_32x8d", Bottleneck, { 3, 4, 23, 3 }, 8, 32)
resnet_builder("resnext101_64x4d", Bottleneck, { 3, 4, 23, 3 }, 4, 64)

-- mobilenet, squeezenet, densenet, shufflenet, efficientnet, vit, convnext
local helpers = { fail = fail, failf = failf, parse = parse, check_int = check_int, builder_opts = builder_opts,
  no_download = no_download, init_weights = init_weights }
-- builder_opts without the weights keys: the model's own options only
function helpers.model_opts(...)
  local o = builder_opts(...)
  o.weights, o.progress, o.pretrained = nil, nil, nil
  return o
end
require("tv_models_more")(models, helpers)
require("tv_models_inception")(models, helpers) -- googlenet, inception_v3
require("tv_models_cnn")(models, helpers) -- mnasnet, regnet, efficientnet_b4-b7 and v2
require("tv_models_swin")(models, helpers) -- swin_t/s/b, swin_v2_t/s/b
require("tv_models_maxvit")(models, helpers) -- maxvit_t
models.detection = require("tv_models_detection")(models) -- Faster R-CNN

require("tv_models_weights")(models) -- the *_Weights enums, list_models, get_model, get_weight, ...
require("tv_models_segmentation")(models, helpers) -- models.segmentation: fcn, deeplabv3, lraspp
require("tv_models_video")(models, helpers) -- models.video: r3d_18, mc3_18, r2plus1d_18, s3d
require("tv_models_detection_weights")(models) -- models.detection's *_Weights enums
require("tv_models_pretrained")(models) -- weights= from torch.hub's local cache
require("tv_models_submodules")(models) -- models.resnet, models.vgg, ...: each family's builders and classes

return models
