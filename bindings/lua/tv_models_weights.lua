-- torchvision.models' weights API: the *_Weights enums (members IMAGENET1K_V1, IMAGENET1K_V2, ...,
-- and DEFAULT), each member with url, meta (num_params, min_size, categories) and
-- transforms() (the ImageClassification preset: resize, center crop, rescale, normalize);
-- get_model, get_model_builder, get_model_weights, get_weight and list_models. nnrepl downloads
-- nothing: a builder given weights= names the file to fetch and says how to load it instead
-- (tv_models.lua's builder_opts). The enums are built from the table below.
local torch = require "torch"
local U = require "nn_util"
local CATEGORIES = require "tv_models_meta"

return function(models)

local T = require "tv_transforms"
local TF = T.functional
local IMAGENET_MEAN, IMAGENET_STD = {0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}

-- ---- transforms._presets.ImageClassification ----

local IC = {}
IC.__index = IC
IC.__name = "ImageClassification"
local function image_classification(o)
  return setmetatable({crop_size = {o.crop_size}, resize_size = {o.resize_size or 256}, mean = o.mean or IMAGENET_MEAN,
    std = o.std or IMAGENET_STD, interpolation = o.interpolation or T.InterpolationMode.BILINEAR,
    antialias = o.antialias ~= false}, IC)
end
IC.__call = function(self, img) return self:forward(img) end
function IC:forward(img)
  img = TF.resize(img, self.resize_size, self.interpolation, nil, self.antialias)
  img = TF.center_crop(img, self.crop_size)
  if not torch.is_tensor(img) then img = TF.pil_to_tensor(img) end
  img = TF.convert_image_dtype(img, torch.float32)
  return TF.normalize(img, self.mean, self.std)
end
function IC:__tostring()
  local function list(t)
    local p = {}
    for i, v in ipairs(t) do p[i] = U.pystr(v) end
    return "[" .. table.concat(p, ", ") .. "]"
  end
  local mode = "BILINEAR"
  for k, v in pairs(T.InterpolationMode) do if v == self.interpolation then mode = k end end
  return string.format("ImageClassification(\n    crop_size=%s\n    resize_size=%s\n    mean=%s\n    std=%s\n" ..
    "    interpolation=InterpolationMode.%s\n)", list(self.crop_size), list(self.resize_size), list(self.mean),
    list(self.std), mode)
end
T._presets = T._presets or {}
T._presets.ImageClassification = function(o) return image_classification(o or {}) end

-- ---- Weights and WeightsEnum ----

local Weights = {}
Weights.__index = Weights
Weights.__name = "Weights"
function Weights:__tostring() return self.enum.__enum_name .. "." .. self.name end
models.Weights = Weights

local WeightsEnum = {}
WeightsEnum.__index = WeightsEnum
WeightsEnum.__name = "WeightsEnum"
function WeightsEnum.__tostring(e) return "<enum '" .. e.__enum_name .. "'>" end
models.WeightsEnum = WeightsEnum

-- Enum.verify(obj): nil stays nil; a member of this enum or its name ("IMAGENET1K_V1", "DEFAULT",
-- "ResNet50_Weights.IMAGENET1K_V1") gives the member
function WeightsEnum.verify(enum, obj)
  if obj == nil then return nil end
  if type(obj) == "string" then
    local name = obj:gsub("^" .. enum.__enum_name:gsub("%p", "%%%0") .. "%.", "")
    local w = rawget(enum, name)
    if getmetatable(w) ~= Weights then
      U.errorf("Invalid value %s for enum %s.", name, enum.__enum_name)
    end
    return w
  end
  if getmetatable(obj) ~= Weights or obj.enum ~= enum then
    U.errorf("Invalid Weight class provided; expected %s but received %s.", enum.__enum_name,
      getmetatable(obj) == Weights and obj.enum.__enum_name or U.typename(obj))
  end
  return obj
end
-- the members in order (Python's list(Enum)), DEFAULT not repeated
function WeightsEnum.members(enum)
  local out = {}
  for i, n in ipairs(enum.__names) do out[i] = enum[n] end
  return out
end

local BL, BC = "bilinear", "bicubic"
local BASE = "https://download.pytorch.org/models/"

-- enum name, builder, min_size, members {name, file, num_params, crop, resize, interpolation(, mean, std)},
-- the DEFAULT member's name (the last member's when absent)
local WEIGHTS = {
  {"AlexNet_Weights", "alexnet", 63, {{"IMAGENET1K_V1", "alexnet-owt-7be5be79.pth", 61100840, 224, 256}}},
  {"ConvNeXt_Tiny_Weights", "convnext_tiny", 32, {{"IMAGENET1K_V1", "convnext_tiny-983f1562.pth", 28589128, 224, 236}}},
  {"ConvNeXt_Small_Weights", "convnext_small", 32, {{"IMAGENET1K_V1", "convnext_small-0c510722.pth", 50223688, 224, 230}}},
  {"ConvNeXt_Base_Weights", "convnext_base", 32, {{"IMAGENET1K_V1", "convnext_base-6075fbad.pth", 88591464, 224, 232}}},
  {"ConvNeXt_Large_Weights", "convnext_large", 32, {{"IMAGENET1K_V1", "convnext_large-ea097f82.pth", 197767336, 224, 232}}},
  {"DenseNet121_Weights", "densenet121", 29, {{"IMAGENET1K_V1", "densenet121-a639ec97.pth", 7978856, 224, 256}}},
  {"DenseNet161_Weights", "densenet161", 29, {{"IMAGENET1K_V1", "densenet161-8d451a50.pth", 28681000, 224, 256}}},
  {"DenseNet169_Weights", "densenet169", 29, {{"IMAGENET1K_V1", "densenet169-b2777c0a.pth", 14149480, 224, 256}}},
  {"DenseNet201_Weights", "densenet201", 29, {{"IMAGENET1K_V1", "densenet201-c1103571.pth", 20013928, 224, 256}}},
  {"EfficientNet_B0_Weights", "efficientnet_b0", 1, {{"IMAGENET1K_V1", "efficientnet_b0_rwightman-7f5810bc.pth", 5288548, 224, 256, BC}}},
  {"EfficientNet_B1_Weights", "efficientnet_b1", 1, {{"IMAGENET1K_V1", "efficientnet_b1_rwightman-bac287d4.pth", 7794184, 240, 256, BC},
    {"IMAGENET1K_V2", "efficientnet_b1-c27df63c.pth", 7794184, 240, 255, BL}}},
  {"EfficientNet_B2_Weights", "efficientnet_b2", 1, {{"IMAGENET1K_V1", "efficientnet_b2_rwightman-c35c1473.pth", 9109994, 288, 288, BC}}},
  {"EfficientNet_B3_Weights", "efficientnet_b3", 1, {{"IMAGENET1K_V1", "efficientnet_b3_rwightman-b3899882.pth", 12233232, 300, 320, BC}}},
  {"EfficientNet_B4_Weights", "efficientnet_b4", 1, {{"IMAGENET1K_V1", "efficientnet_b4_rwightman-23ab8bcd.pth", 19341616, 380, 384, BC}}},
  {"EfficientNet_B5_Weights", "efficientnet_b5", 1, {{"IMAGENET1K_V1", "efficientnet_b5_lukemelas-1a07897c.pth", 30389784, 456, 456, BC}}},
  {"EfficientNet_B6_Weights", "efficientnet_b6", 1, {{"IMAGENET1K_V1", "efficientnet_b6_lukemelas-24a108a5.pth", 43040704, 528, 528, BC}}},
  {"EfficientNet_B7_Weights", "efficientnet_b7", 1, {{"IMAGENET1K_V1", "efficientnet_b7_lukemelas-c5b4e57e.pth", 66347960, 600, 600, BC}}},
  {"EfficientNet_V2_S_Weights", "efficientnet_v2_s", 33, {{"IMAGENET1K_V1", "efficientnet_v2_s-dd5fe13b.pth", 21458488, 384, 384, BL}}},
  {"EfficientNet_V2_M_Weights", "efficientnet_v2_m", 33, {{"IMAGENET1K_V1", "efficientnet_v2_m-dc08266a.pth", 54139356, 480, 480, BL}}},
  {"EfficientNet_V2_L_Weights", "efficientnet_v2_l", 33, {{"IMAGENET1K_V1", "efficientnet_v2_l-59c71312.pth", 118515272, 480, 480, BC,
    {0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}}}},
  {"GoogLeNet_Weights", "googlenet", 15, {{"IMAGENET1K_V1", "googlenet-1378be20.pth", 6624904, 224, 256}}},
  {"Inception_V3_Weights", "inception_v3", 75, {{"IMAGENET1K_V1", "inception_v3_google-0cc3c7bd.pth", 27161264, 299, 342}}},
  {"MNASNet0_5_Weights", "mnasnet0_5", 1, {{"IMAGENET1K_V1", "mnasnet0.5_top1_67.823-3ffadce67e.pth", 2218512, 224, 256}}},
  {"MNASNet0_75_Weights", "mnasnet0_75", 1, {{"IMAGENET1K_V1", "mnasnet0_75-7090bc5f.pth", 3170208, 224, 232}}},
  {"MNASNet1_0_Weights", "mnasnet1_0", 1, {{"IMAGENET1K_V1", "mnasnet1.0_top1_73.512-f206786ef8.pth", 4383312, 224, 256}}},
  {"MNASNet1_3_Weights", "mnasnet1_3", 1, {{"IMAGENET1K_V1", "mnasnet1_3-a4c69d6f.pth", 6282256, 224, 232}}},
  {"MaxVit_T_Weights", "maxvit_t", 224, {{"IMAGENET1K_V1", "maxvit_t-bc5ab103.pth", 30919624, 224, 224, BC}}},
  {"MobileNet_V2_Weights", "mobilenet_v2", 1, {{"IMAGENET1K_V1", "mobilenet_v2-b0353104.pth", 3504872, 224, 256},
    {"IMAGENET1K_V2", "mobilenet_v2-7ebf99e0.pth", 3504872, 224, 232}}},
  {"MobileNet_V3_Large_Weights", "mobilenet_v3_large", 1, {{"IMAGENET1K_V1", "mobilenet_v3_large-8738ca79.pth", 5483032, 224, 256},
    {"IMAGENET1K_V2", "mobilenet_v3_large-5c1a4163.pth", 5483032, 224, 232}}},
  {"MobileNet_V3_Small_Weights", "mobilenet_v3_small", 1, {{"IMAGENET1K_V1", "mobilenet_v3_small-047dcff4.pth", 2542856, 224, 256}}},
  {"ResNet18_Weights", "resnet18", 1, {{"IMAGENET1K_V1", "resnet18-f37072fd.pth", 11689512, 224, 256}}},
  {"ResNet34_Weights", "resnet34", 1, {{"IMAGENET1K_V1", "resnet34-b627a593.pth", 21797672, 224, 256}}},
  {"ResNet50_Weights", "resnet50", 1, {{"IMAGENET1K_V1", "resnet50-0676ba61.pth", 25557032, 224, 256},
    {"IMAGENET1K_V2", "resnet50-11ad3fa6.pth", 25557032, 224, 232}}},
  {"ResNet101_Weights", "resnet101", 1, {{"IMAGENET1K_V1", "resnet101-63fe2227.pth", 44549160, 224, 256},
    {"IMAGENET1K_V2", "resnet101-cd907fc2.pth", 44549160, 224, 232}}},
  {"ResNet152_Weights", "resnet152", 1, {{"IMAGENET1K_V1", "resnet152-394f9c45.pth", 60192808, 224, 256},
    {"IMAGENET1K_V2", "resnet152-f82ba261.pth", 60192808, 224, 232}}},
  {"ResNeXt50_32X4D_Weights", "resnext50_32x4d", 1, {{"IMAGENET1K_V1", "resnext50_32x4d-7cdf4587.pth", 25028904, 224, 256},
    {"IMAGENET1K_V2", "resnext50_32x4d-1a0047aa.pth", 25028904, 224, 232}}},
  {"ResNeXt101_32X8D_Weights", "resnext101_32x8d", 1, {{"IMAGENET1K_V1", "resnext101_32x8d-8ba56ff5.pth", 88791336, 224, 256},
    {"IMAGENET1K_V2", "resnext101_32x8d-110c445d.pth", 88791336, 224, 232}}},
  {"ResNeXt101_64X4D_Weights", "resnext101_64x4d", 1, {{"IMAGENET1K_V1", "resnext101_64x4d-173b62eb.pth", 83455272, 224, 232}}},
  {"Wide_ResNet50_2_Weights", "wide_resnet50_2", 1, {{"IMAGENET1K_V1", "wide_resnet50_2-95faca4d.pth", 68883240, 224, 256},
    {"IMAGENET1K_V2", "wide_resnet50_2-9ba9bcbe.pth", 68883240, 224, 232}}},
  {"Wide_ResNet101_2_Weights", "wide_resnet101_2", 1, {{"IMAGENET1K_V1", "wide_resnet101_2-32ee1156.pth", 126886696, 224, 256},
    {"IMAGENET1K_V2", "wide_resnet101_2-d733dc28.pth", 126886696, 224, 232}}},
  {"ShuffleNet_V2_X0_5_Weights", "shufflenet_v2_x0_5", 1, {{"IMAGENET1K_V1", "shufflenetv2_x0.5-f707e7126e.pth", 1366792, 224, 256}}},
  {"ShuffleNet_V2_X1_0_Weights", "shufflenet_v2_x1_0", 1, {{"IMAGENET1K_V1", "shufflenetv2_x1-5666bf0f80.pth", 2278604, 224, 256}}},
  {"ShuffleNet_V2_X1_5_Weights", "shufflenet_v2_x1_5", 1, {{"IMAGENET1K_V1", "shufflenetv2_x1_5-3c479a10.pth", 3503624, 224, 232}}},
  {"ShuffleNet_V2_X2_0_Weights", "shufflenet_v2_x2_0", 1, {{"IMAGENET1K_V1", "shufflenetv2_x2_0-8be3c8ee.pth", 7393996, 224, 232}}},
  {"SqueezeNet1_0_Weights", "squeezenet1_0", 21, {{"IMAGENET1K_V1", "squeezenet1_0-b66bff10.pth", 1248424, 224, 256}}},
  {"SqueezeNet1_1_Weights", "squeezenet1_1", 17, {{"IMAGENET1K_V1", "squeezenet1_1-b8a52dc0.pth", 1235496, 224, 256}}},
  {"Swin_T_Weights", "swin_t", 224, {{"IMAGENET1K_V1", "swin_t-704ceda3.pth", 28288354, 224, 232, BC}}},
  {"Swin_S_Weights", "swin_s", 224, {{"IMAGENET1K_V1", "swin_s-5e29d889.pth", 49606258, 224, 246, BC}}},
  {"Swin_B_Weights", "swin_b", 224, {{"IMAGENET1K_V1", "swin_b-68c6b09e.pth", 87768224, 224, 238, BC}}},
  {"Swin_V2_T_Weights", "swin_v2_t", 256, {{"IMAGENET1K_V1", "swin_v2_t-b137f0e2.pth", 28351570, 256, 260, BC}}},
  {"Swin_V2_S_Weights", "swin_v2_s", 256, {{"IMAGENET1K_V1", "swin_v2_s-637d8ceb.pth", 49737442, 256, 260, BC}}},
  {"Swin_V2_B_Weights", "swin_v2_b", 256, {{"IMAGENET1K_V1", "swin_v2_b-781e5279.pth", 87930848, 256, 272, BC}}},
  {"VGG11_Weights", "vgg11", 32, {{"IMAGENET1K_V1", "vgg11-8a719046.pth", 132863336, 224, 256}}},
  {"VGG11_BN_Weights", "vgg11_bn", 32, {{"IMAGENET1K_V1", "vgg11_bn-6002323d.pth", 132868840, 224, 256}}},
  {"VGG13_Weights", "vgg13", 32, {{"IMAGENET1K_V1", "vgg13-19584684.pth", 133047848, 224, 256}}},
  {"VGG13_BN_Weights", "vgg13_bn", 32, {{"IMAGENET1K_V1", "vgg13_bn-abd245e5.pth", 133053736, 224, 256}}},
  {"VGG16_Weights", "vgg16", 32, {{"IMAGENET1K_V1", "vgg16-397923af.pth", 138357544, 224, 256},
    {"IMAGENET1K_FEATURES", "vgg16_features-amdegroot-88682ab5.pth", 138357544, 224, 256, BL,
      {0.48235, 0.45882, 0.40784}, {1.0 / 255.0, 1.0 / 255.0, 1.0 / 255.0}}}, "IMAGENET1K_V1"},
  {"VGG16_BN_Weights", "vgg16_bn", 32, {{"IMAGENET1K_V1", "vgg16_bn-6c64b313.pth", 138365992, 224, 256}}},
  {"VGG19_Weights", "vgg19", 32, {{"IMAGENET1K_V1", "vgg19-dcbb9e9d.pth", 143667240, 224, 256}}},
  {"VGG19_BN_Weights", "vgg19_bn", 32, {{"IMAGENET1K_V1", "vgg19_bn-c79401a0.pth", 143678248, 224, 256}}},
  {"ViT_B_16_Weights", "vit_b_16", 224, {{"IMAGENET1K_V1", "vit_b_16-c867db91.pth", 86567656, 224, 256},
    {"IMAGENET1K_SWAG_E2E_V1", "vit_b_16_swag-9ac1b537.pth", 86859496, 384, 384, BC, nil, nil, 384},
    {"IMAGENET1K_SWAG_LINEAR_V1", "vit_b_16_lc_swag-4e70ced5.pth", 86567656, 224, 224, BC}}, "IMAGENET1K_V1"},
  {"ViT_B_32_Weights", "vit_b_32", 224, {{"IMAGENET1K_V1", "vit_b_32-d86f8d99.pth", 88224232, 224, 256}}},
  {"ViT_L_16_Weights", "vit_l_16", 224, {{"IMAGENET1K_V1", "vit_l_16-852ce7e3.pth", 304326632, 224, 242},
    {"IMAGENET1K_SWAG_E2E_V1", "vit_l_16_swag-4f3808c9.pth", 305174504, 512, 512, BC, nil, nil, 512},
    {"IMAGENET1K_SWAG_LINEAR_V1", "vit_l_16_lc_swag-4d563306.pth", 304326632, 224, 224, BC}}, "IMAGENET1K_V1"},
  {"ViT_L_32_Weights", "vit_l_32", 224, {{"IMAGENET1K_V1", "vit_l_32-c7638314.pth", 306535400, 224, 256}}},
  {"ViT_H_14_Weights", "vit_h_14", 224, {
    {"IMAGENET1K_SWAG_E2E_V1", "vit_h_14_swag-80465313.pth", 633470440, 518, 518, BC, nil, nil, 518},
    {"IMAGENET1K_SWAG_LINEAR_V1", "vit_h_14_lc_swag-c1eb923e.pth", 632045800, 224, 224, BC}}, "IMAGENET1K_SWAG_E2E_V1"},
}

-- RegNet: V1 and V2 (232) for every size but 128GF; SWAG weights (E2E at 384, LINEAR at 224) for 16GF, 32GF, 128GF
local REGNET = { -- name, num_params, V1 file, V2 file, SWAG E2E file, SWAG LINEAR file
  {"Y_400MF", 4344144, "c65dace8", "e6988f5f"}, {"Y_800MF", 6432512, "1b27b58c", "58fc7688"},
  {"Y_1_6GF", 11202430, "b11a554e", "0d7bc02a"}, {"Y_3_2GF", 19436338, "b5a9779c", "9180c971"},
  {"Y_8GF", 39381472, "d0d0e4a8", "dc2b1b54"}, {"Y_16GF", 83590140, "9e6ed7dd", "3e4a00f9", "43afe44d", "f3ec0043"},
  {"Y_32GF", 145046770, "4dee3f7a", "8db6d4b5", "04fdfa75", "e1583746"},
  {"Y_128GF", 644812894, nil, nil, "c8ce3e52", "cbe8ce12"},
  {"X_400MF", 5495976, "adf1edd5", "62229a5f"}, {"X_800MF", 7259656, "ad17e45c", "94a99ebd"},
  {"X_1_6GF", 9190136, "e3633e7f", "a12f2b72"}, {"X_3_2GF", 15296552, "f342aeae", "7071aa85"},
  {"X_8GF", 39572648, "03ceed89", "2b70d774"}, {"X_16GF", 54278536, "2007eb11", "ba3796d7"},
  {"X_32GF", 107811560, "9d47f8d0", "6eb8fdc6"} }
for _, r in ipairs(REGNET) do
  local b = "regnet_" .. r[1]:lower()
  local members = {}
  if r[3] then
    members[#members + 1] = {"IMAGENET1K_V1", b .. "-" .. r[3] .. ".pth", r[2], 224, 256}
    members[#members + 1] = {"IMAGENET1K_V2", b .. "-" .. r[4] .. ".pth", r[2], 224, 232}
  end
  if r[5] then
    members[#members + 1] = {"IMAGENET1K_SWAG_E2E_V1", b .. "_swag-" .. r[5] .. ".pth", r[2], 384, 384, BC}
    members[#members + 1] = {"IMAGENET1K_SWAG_LINEAR_V1", b .. "_lc_swag-" .. r[6] .. ".pth", r[2], 224, 224, BC}
  end
  WEIGHTS[#WEIGHTS + 1] = {"RegNet_" .. r[1] .. "_Weights", b, 1, members, r[3] and "IMAGENET1K_V2" or "IMAGENET1K_SWAG_E2E_V1"}
end

local builder_weights = {}
models._builder_weights = builder_weights
-- builders and enums of the submodules (models.segmentation, models.video): builder name -> its
-- submodule table, enum name -> enum
local builder_family, family_enums = {}, {}
models._builder_family, models._family_enums = builder_family, family_enums
local function builder_of(name) return rawget(builder_family[name] or models, name) end

for _, e in ipairs(WEIGHTS) do
  local enum = setmetatable({__enum_name = e[1], __names = {}}, WeightsEnum)
  for _, m in ipairs(e[4]) do
    local crop, resize, interp, mean, std = m[4], m[5], m[6] or BL, m[7], m[8]
    local min = m[9] or e[3]
    local w = setmetatable({enum = enum, name = m[1], url = BASE .. m[2],
      meta = {num_params = m[3], min_size = {min, min}, categories = CATEGORIES._IMAGENET_CATEGORIES},
      transforms = function() return image_classification({crop_size = crop, resize_size = resize, interpolation = interp,
        mean = mean, std = std}) end}, Weights)
    w.value = w
    enum[m[1]] = w
    enum.__names[#enum.__names + 1] = m[1]
  end
  enum.DEFAULT = enum[e[5] or enum.__names[#enum.__names]]
  models[e[1]] = enum
  builder_weights[e[2]] = enum
end

-- ---- the submodules' weights enums (segmentation, video, detection) ----

-- a *_Weights enum with members {name, file, num_params, min_size, extra meta, transforms}, put in family (the
-- submodule table, which list_models(module=...) selects) and registered as the builder's weights
-- (builder_opts verifies weights= against it; get_model, get_weight find it)
local function weights_enum(enum_name, builder, family, members)
  local enum = setmetatable({ __enum_name = enum_name, __names = {} }, WeightsEnum)
  for _, m in ipairs(members) do
    local meta = { num_params = m[3], min_size = m[4] }
    for k, v in pairs(m[5] or {}) do meta[k] = v end
    local w = setmetatable({ enum = enum, name = m[1], url = "https://download.pytorch.org/models/" .. m[2], meta = meta,
      transforms = m[6] }, Weights)
    w.value = w
    enum[m[1]] = w
    enum.__names[#enum.__names + 1] = m[1]
  end
  enum.DEFAULT = enum[enum.__names[#enum.__names]]
  family[enum_name] = enum
  family_enums[enum_name] = enum
  builder_weights[builder] = enum
  builder_family[builder] = family
  return enum
end
models._weights_enum = weights_enum

-- ---- the registry ----

local function builder_names()
  local out = {}
  for name in pairs(builder_weights) do
    if type(builder_of(name)) == "function" then out[#out + 1] = name end
  end
  table.sort(out)
  return out
end

-- fnmatch's * and ? as a Lua pattern
local function glob(p) return "^" .. p:gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0"):gsub("%*", ".*"):gsub("%?", ".") .. "$" end

-- list_models({module, include, exclude}): the builders' names, sorted; include / exclude: fnmatch
-- patterns (a string or a list); module: torchvision.models (the classification models),
-- models.segmentation, models.video or models.detection.
function models.list_models(...)
  local o = U.parse("list_models", {{"module"}, {"include"}, {"exclude"}}, ...)
  if o.module ~= nil and o.module ~= models and o.module ~= models.segmentation and o.module ~= models.video
    and o.module ~= models.detection then
    U.error("list_models: module must be torchvision.models, models.segmentation, models.video or models.detection " ..
      "(no optical_flow or quantization models)")
  end
  local function pats(p) return type(p) == "string" and {p} or p end
  local names = builder_names()
  local out = {}
  for _, n in ipairs(names) do
    local keep = o.include == nil
    for _, p in ipairs(pats(o.include) or {}) do keep = keep or n:match(glob(p)) ~= nil end
    if o.module ~= nil and (builder_family[n] or models) ~= o.module then keep = false end
    for _, p in ipairs(pats(o.exclude) or {}) do if n:match(glob(p)) then keep = false end end
    if keep then out[#out + 1] = n end
  end
  return out
end

function models.get_model_builder(name)
  if type(name) ~= "string" then U.errorf("get_model_builder: expected a model name, got %s", U.typename(name)) end
  local n = name:lower()
  local f = builder_of(n)
  if not builder_weights[n] or type(f) ~= "function" then
    if builder_weights[n] then U.errorf("Unknown model %s (not available in nnrepl)", name) end
    U.errorf("Unknown model %s", name)
  end
  return f
end

-- get_model(name, {kwargs}): the builder's model
function models.get_model(name, ...) return models.get_model_builder(name)(...) end

-- get_model_weights(name or builder): the builder's weights enum
function models.get_model_weights(name)
  if type(name) == "function" then
    for n, e in pairs(builder_weights) do if builder_of(n) == name then return e end end
    U.error("get_model_weights: the function is not a torchvision model builder")
  end
  if type(name) ~= "string" then U.errorf("get_model_weights: expected a model name, got %s", U.typename(name)) end
  local e = builder_weights[name:lower()]
  if not e then U.errorf("Unknown model %s", name) end
  return e
end

-- get_weight("ResNet50_Weights.IMAGENET1K_V2"): the member
function models.get_weight(name)
  local enum_name, value = tostring(name):match("^([^%.]+)%.([^%.]+)$")
  if not enum_name then U.errorf("Invalid weight name provided: '%s'.", tostring(name)) end
  local enum = rawget(models, enum_name) or family_enums[enum_name]
  if getmetatable(enum) ~= WeightsEnum then
    U.errorf("The weight enum '%s' for the specific method couldn't be retrieved.", enum_name)
  end
  local w = rawget(enum, value)
  if getmetatable(w) ~= Weights then U.errorf("'%s' is not a member of %s", value, enum_name) end
  return w
end

end
