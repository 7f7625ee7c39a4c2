-- torchvision.models: GoogLeNet and Inception3 (googlenet, inception_v3), built as torchvision
-- builds them: the same submodule names (state_dict keys such as "inception3a.branch2.1.conv.weight",
-- "Mixed_7c.branch3x3dbl_3b.bn.running_var"), parameter counts, initialisation and forward. In
-- training with aux_logits=true, forward returns GoogLeNetOutputs / InceptionOutputs: a list
-- {logits, aux...} whose items are also named (out.logits, out.aux_logits2, out.aux_logits1 /
-- out.aux_logits), as torchvision's named tuples. tv_models.lua calls this file's function.
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional
local init = nn.init

return function(models, H)

local parse, check_int = H.parse, H.check_int
local function isinstance(m, cls) return nn.isinstance(m, cls) end

-- a named tuple: positional items and the same values under names
local function named_tuple(name, fields)
  local mt = {__name = name}
  mt.__tostring = function(t)
    local parts = {}
    for i, f in ipairs(fields) do parts[i] = f .. "=" .. tostring(t[i]) end
    return name .. "(" .. table.concat(parts, ", ") .. ")"
  end
  return function(...)
    local t = {...}
    for i, f in ipairs(fields) do t[f] = t[i] end
    return setmetatable(t, mt)
  end
end
models.GoogLeNetOutputs = named_tuple("GoogLeNetOutputs", {"logits", "aux_logits2", "aux_logits1"})
models.InceptionOutputs = named_tuple("InceptionOutputs", {"logits", "aux_logits"})

-- conv (no bias), BatchNorm2d(eps=0.001), ReLU; opts are nn.Conv2d's keywords
local BasicConv2d = nn.Module:extend("BasicConv2d")
models.BasicConv2d = BasicConv2d
function BasicConv2d:__init(in_channels, out_channels, opts)
  local o = {bias = false}
  for k, v in pairs(opts or {}) do o[k] = v end
  self.conv = nn.Conv2d(in_channels, out_channels, o)
  self.bn = nn.BatchNorm2d(out_channels, {eps = 0.001})
end
function BasicConv2d:forward(x) return F.relu(self.bn(self.conv(x)), {inplace = true}) end

local function conv(i, o, k, extra)
  local opts = {kernel_size = k}
  for kk, v in pairs(extra or {}) do opts[kk] = v end
  return BasicConv2d(i, o, opts)
end

-- torchvision's transform_input: from ImageNet normalisation to the (x - 0.5) / 0.5 of the original weights
local function transform_input(self, x)
  if not self.transform_input then return x end
  local m, s = {0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}
  local chs = {}
  for c = 1, 3 do chs[c] = x:select(1, c - 1):unsqueeze(1) * (s[c] / 0.5) + (m[c] - 0.5) / 0.5 end
  return torch.cat(chs, 1)
end

-- the two nets' shared start: options, the unsupported custom blocks, aux_logits and transform_input
local function net_options(self, cls, keys, blocks_key, ...)
  local o = parse(cls, keys, ...)
  local num_classes = check_int(cls, "num_classes", o.num_classes, 1)
  if o[blocks_key] ~= nil then H.failf("%s: %s= is not supported (the default blocks only)", cls, blocks_key) end
  self.aux_logits, self.transform_input = o.aux_logits, o.transform_input
  return o, num_classes
end

-- their initialisation (unless init_weights=false): truncated normals on [-2, 2] for convolutions
-- and linear layers, std given by std_of(m); batch norms 1 and 0
local function init_net(self, o, std_of)
  if o.init_weights == false then return end
  for _, m in ipairs(self:modules()) do
    if isinstance(m, {nn.Conv2d, nn.Linear}) then
      init.trunc_normal_(m.weight, {mean = 0.0, std = std_of(m), a = -2, b = 2})
    elseif isinstance(m, nn.BatchNorm2d) then
      init.constant_(m.weight, 1)
      init.constant_(m.bias, 0)
    end
  end
end

local function builder(name, keys, cls)
  models[name] = function(...)
    local o = H.builder_opts(name, keys, ...)
    o.weights, o.progress, o.pretrained = nil, nil, nil
    return cls(o)
  end
end

-- ---- GoogLeNet ----

local Inception = nn.Module:extend("Inception")
models.Inception = Inception
function Inception:__init(in_channels, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj)
  self.branch1 = conv(in_channels, ch1x1, 1)
  self.branch2 = nn.Sequential(conv(in_channels, ch3x3red, 1), conv(ch3x3red, ch3x3, 3, {padding = 1}))
  -- kernel 3 where the paper has 5: torchvision keeps this for its weights
  self.branch3 = nn.Sequential(conv(in_channels, ch5x5red, 1), conv(ch5x5red, ch5x5, 3, {padding = 1}))
  self.branch4 = nn.Sequential(nn.MaxPool2d({kernel_size = 3, stride = 1, padding = 1, ceil_mode = true}),
    conv(in_channels, pool_proj, 1))
end
function Inception:forward(x)
  return torch.cat({self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)}, 1)
end

local GoogLeNetAux = nn.Module:extend("InceptionAux")
models.GoogLeNetInceptionAux = GoogLeNetAux
function GoogLeNetAux:__init(in_channels, num_classes, dropout)
  self.conv = conv(in_channels, 128, 1)
  self.fc1 = nn.Linear(2048, 1024)
  self.fc2 = nn.Linear(1024, num_classes)
  self.dropout = nn.Dropout({p = dropout or 0.7})
end
function GoogLeNetAux:forward(x)
  x = self.conv(F.adaptive_avg_pool2d(x, {4, 4}))
  x = F.relu(self.fc1(torch.flatten(x, 1)), {inplace = true})
  return self.fc2(self.dropout(x))
end

local googlenet_keys = {{"num_classes", 1000}, {"aux_logits", true}, {"transform_input", false},
  {"init_weights"}, {"blocks"}, {"dropout", 0.2}, {"dropout_aux", 0.7}}

local GoogLeNet = nn.Module:extend("GoogLeNet")
models.GoogLeNet = GoogLeNet
function GoogLeNet:__init(...)
  local o, num_classes = net_options(self, "GoogLeNet", googlenet_keys, "blocks", ...)
  local function pool(k) return nn.MaxPool2d({kernel_size = k, stride = 2, ceil_mode = true}) end
  self.conv1 = conv(3, 64, 7, {stride = 2, padding = 3})
  self.maxpool1 = pool(3)
  self.conv2 = conv(64, 64, 1)
  self.conv3 = conv(64, 192, 3, {padding = 1})
  self.maxpool2 = pool(3)
  self.inception3a = Inception(192, 64, 96, 128, 16, 32, 32)
  self.inception3b = Inception(256, 128, 128, 192, 32, 96, 64)
  self.maxpool3 = pool(3)
  self.inception4a = Inception(480, 192, 96, 208, 16, 48, 64)
  self.inception4b = Inception(512, 160, 112, 224, 24, 64, 64)
  self.inception4c = Inception(512, 128, 128, 256, 24, 64, 64)
  self.inception4d = Inception(512, 112, 144, 288, 32, 64, 64)
  self.inception4e = Inception(528, 256, 160, 320, 32, 128, 128)
  self.maxpool4 = pool(2)
  self.inception5a = Inception(832, 256, 160, 320, 32, 128, 128)
  self.inception5b = Inception(832, 384, 192, 384, 48, 128, 128)
  if o.aux_logits then
    self.aux1 = GoogLeNetAux(512, num_classes, o.dropout_aux)
    self.aux2 = GoogLeNetAux(528, num_classes, o.dropout_aux)
  end
  self.avgpool = nn.AdaptiveAvgPool2d({1, 1})
  self.dropout = nn.Dropout({p = o.dropout})
  self.fc = nn.Linear(1024, num_classes)
  init_net(self, o, function() return 0.01 end)
end
function GoogLeNet:forward(x)
  x = transform_input(self, x)
  x = self.maxpool1(self.conv1(x))
  x = self.maxpool2(self.conv3(self.conv2(x)))
  x = self.maxpool3(self.inception3b(self.inception3a(x)))
  x = self.inception4a(x)
  local with_aux = self.training and self.aux_logits
  local aux1 = with_aux and self.aux1(x) or nil
  x = self.inception4d(self.inception4c(self.inception4b(x)))
  local aux2 = with_aux and self.aux2(x) or nil
  x = self.maxpool4(self.inception4e(x))
  x = self.inception5b(self.inception5a(x))
  x = self.fc(self.dropout(torch.flatten(self.avgpool(x), 1)))
  if not with_aux then return x end
  -- torchvision's order: aux_logits2 holds aux1's output, aux_logits1 aux2's
  return models.GoogLeNetOutputs(x, aux1, aux2)
end

builder("googlenet", googlenet_keys, GoogLeNet)

-- ---- Inception3 ----

local InceptionA = nn.Module:extend("InceptionA")
models.InceptionA = InceptionA
function InceptionA:__init(in_channels, pool_features)
  self.branch1x1 = conv(in_channels, 64, 1)
  self.branch5x5_1 = conv(in_channels, 48, 1)
  self.branch5x5_2 = conv(48, 64, 5, {padding = 2})
  self.branch3x3dbl_1 = conv(in_channels, 64, 1)
  self.branch3x3dbl_2 = conv(64, 96, 3, {padding = 1})
  self.branch3x3dbl_3 = conv(96, 96, 3, {padding = 1})
  self.branch_pool = conv(in_channels, pool_features, 1)
end
function InceptionA:forward(x)
  local b1 = self.branch1x1(x)
  local b5 = self.branch5x5_2(self.branch5x5_1(x))
  local b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
  local bp = self.branch_pool(F.avg_pool2d(x, 3, 1, 1))
  return torch.cat({b1, b5, b3, bp}, 1)
end

local InceptionB = nn.Module:extend("InceptionB")
models.InceptionB = InceptionB
function InceptionB:__init(in_channels)
  self.branch3x3 = conv(in_channels, 384, 3, {stride = 2})
  self.branch3x3dbl_1 = conv(in_channels, 64, 1)
  self.branch3x3dbl_2 = conv(64, 96, 3, {padding = 1})
  self.branch3x3dbl_3 = conv(96, 96, 3, {stride = 2})
end
function InceptionB:forward(x)
  local b3 = self.branch3x3(x)
  local bd = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
  return torch.cat({b3, bd, F.max_pool2d(x, 3, 2)}, 1)
end

local InceptionC = nn.Module:extend("InceptionC")
models.InceptionC = InceptionC
function InceptionC:__init(in_channels, c7)
  local h, v = {kernel_size = {1, 7}, padding = {0, 3}}, {kernel_size = {7, 1}, padding = {3, 0}}
  self.branch1x1 = conv(in_channels, 192, 1)
  self.branch7x7_1 = conv(in_channels, c7, 1)
  self.branch7x7_2 = BasicConv2d(c7, c7, h)
  self.branch7x7_3 = BasicConv2d(c7, 192, v)
  self.branch7x7dbl_1 = conv(in_channels, c7, 1)
  self.branch7x7dbl_2 = BasicConv2d(c7, c7, v)
  self.branch7x7dbl_3 = BasicConv2d(c7, c7, h)
  self.branch7x7dbl_4 = BasicConv2d(c7, c7, v)
  self.branch7x7dbl_5 = BasicConv2d(c7, 192, h)
  self.branch_pool = conv(in_channels, 192, 1)
end
function InceptionC:forward(x)
  local b1 = self.branch1x1(x)
  local b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
  local bd = self.branch7x7dbl_1(x)
  bd = self.branch7x7dbl_5(self.branch7x7dbl_4(self.branch7x7dbl_3(self.branch7x7dbl_2(bd))))
  local bp = self.branch_pool(F.avg_pool2d(x, 3, 1, 1))
  return torch.cat({b1, b7, bd, bp}, 1)
end

local InceptionD = nn.Module:extend("InceptionD")
models.InceptionD = InceptionD
function InceptionD:__init(in_channels)
  self.branch3x3_1 = conv(in_channels, 192, 1)
  self.branch3x3_2 = conv(192, 320, 3, {stride = 2})
  self.branch7x7x3_1 = conv(in_channels, 192, 1)
  self.branch7x7x3_2 = BasicConv2d(192, 192, {kernel_size = {1, 7}, padding = {0, 3}})
  self.branch7x7x3_3 = BasicConv2d(192, 192, {kernel_size = {7, 1}, padding = {3, 0}})
  self.branch7x7x3_4 = conv(192, 192, 3, {stride = 2})
end
function InceptionD:forward(x)
  local b3 = self.branch3x3_2(self.branch3x3_1(x))
  local b7 = self.branch7x7x3_4(self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x))))
  return torch.cat({b3, b7, F.max_pool2d(x, 3, 2)}, 1)
end

local InceptionE = nn.Module:extend("InceptionE")
models.InceptionE = InceptionE
function InceptionE:__init(in_channels)
  local h, v = {kernel_size = {1, 3}, padding = {0, 1}}, {kernel_size = {3, 1}, padding = {1, 0}}
  self.branch1x1 = conv(in_channels, 320, 1)
  self.branch3x3_1 = conv(in_channels, 384, 1)
  self.branch3x3_2a = BasicConv2d(384, 384, h)
  self.branch3x3_2b = BasicConv2d(384, 384, v)
  self.branch3x3dbl_1 = conv(in_channels, 448, 1)
  self.branch3x3dbl_2 = conv(448, 384, 3, {padding = 1})
  self.branch3x3dbl_3a = BasicConv2d(384, 384, h)
  self.branch3x3dbl_3b = BasicConv2d(384, 384, v)
  self.branch_pool = conv(in_channels, 192, 1)
end
function InceptionE:forward(x)
  local b1 = self.branch1x1(x)
  local b3 = self.branch3x3_1(x)
  b3 = torch.cat({self.branch3x3_2a(b3), self.branch3x3_2b(b3)}, 1)
  local bd = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
  bd = torch.cat({self.branch3x3dbl_3a(bd), self.branch3x3dbl_3b(bd)}, 1)
  local bp = self.branch_pool(F.avg_pool2d(x, 3, 1, 1))
  return torch.cat({b1, b3, bd, bp}, 1)
end

local InceptionAux = nn.Module:extend("InceptionAux")
models.InceptionAux = InceptionAux
function InceptionAux:__init(in_channels, num_classes)
  self.conv0 = conv(in_channels, 128, 1)
  self.conv1 = conv(128, 768, 5)
  self.fc = nn.Linear(768, num_classes)
  self.fc.stddev = 0.001 -- Inception3's initialisation reads it
end
function InceptionAux:forward(x)
  x = self.conv1(self.conv0(F.avg_pool2d(x, 5, 3)))
  x = F.adaptive_avg_pool2d(x, {1, 1})
  return self.fc(torch.flatten(x, 1))
end

local inception_keys = {{"num_classes", 1000}, {"aux_logits", true}, {"transform_input", false},
  {"inception_blocks"}, {"init_weights"}, {"dropout", 0.5}}

local Inception3 = nn.Module:extend("Inception3")
models.Inception3 = Inception3
function Inception3:__init(...)
  local o, num_classes = net_options(self, "Inception3", inception_keys, "inception_blocks", ...)
  self.Conv2d_1a_3x3 = conv(3, 32, 3, {stride = 2})
  self.Conv2d_2a_3x3 = conv(32, 32, 3)
  self.Conv2d_2b_3x3 = conv(32, 64, 3, {padding = 1})
  self.maxpool1 = nn.MaxPool2d({kernel_size = 3, stride = 2})
  self.Conv2d_3b_1x1 = conv(64, 80, 1)
  self.Conv2d_4a_3x3 = conv(80, 192, 3)
  self.maxpool2 = nn.MaxPool2d({kernel_size = 3, stride = 2})
  self.Mixed_5b = InceptionA(192, 32)
  self.Mixed_5c = InceptionA(256, 64)
  self.Mixed_5d = InceptionA(288, 64)
  self.Mixed_6a = InceptionB(288)
  self.Mixed_6b = InceptionC(768, 128)
  self.Mixed_6c = InceptionC(768, 160)
  self.Mixed_6d = InceptionC(768, 160)
  self.Mixed_6e = InceptionC(768, 192)
  if o.aux_logits then self.AuxLogits = InceptionAux(768, num_classes) end
  self.Mixed_7a = InceptionD(768)
  self.Mixed_7b = InceptionE(1280)
  self.Mixed_7c = InceptionE(2048)
  self.avgpool = nn.AdaptiveAvgPool2d({1, 1})
  self.dropout = nn.Dropout({p = o.dropout})
  self.fc = nn.Linear(2048, num_classes)
  init_net(self, o, function(m) return rawget(m, "stddev") or m.stddev or 0.1 end)
end
function Inception3:forward(x)
  x = transform_input(self, x)
  x = self.maxpool1(self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x))))
  x = self.maxpool2(self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(x)))
  x = self.Mixed_5d(self.Mixed_5c(self.Mixed_5b(x)))
  x = self.Mixed_6e(self.Mixed_6d(self.Mixed_6c(self.Mixed_6b(self.Mixed_6a(x)))))
  local with_aux = self.training and self.aux_logits
  local aux = with_aux and self.AuxLogits(x) or nil
  x = self.Mixed_7c(self.Mixed_7b(self.Mixed_7a(x)))
  x = self.fc(torch.flatten(self.dropout(self.avgpool(x)), 1))
  if not with_aux then return x end
  return models.InceptionOutputs(x, aux)
end

builder("inception_v3", inception_keys, Inception3)

end
