-- torchvision.models: googlenet, inception_v3, mnasnet, regnet, efficientnet_b4-b7 / v2, resnext,
-- wide_resnet101_2 against torchvision's published parameter counts and module names (state_dict
-- keys), output shapes, initialisation statistics; the *_Weights enums and the registry functions.
local T = ...
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
local with_hub_dir = dofile(here .. "hub_dir.lua")
local models = require("torchvision").models
local TT = require("torchvision").transforms
local MU = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "model_util.lua")
local count, keys, has, structure_only = MU.count, MU.keys, MU.contains, MU.structure_only

-- torchvision's numbers (the weights' meta num_params, the docs' tables)
local COUNTS = {
  googlenet = 6624904, inception_v3 = 27161264, mnasnet0_5 = 2218512, mnasnet0_75 = 3170208, mnasnet1_0 = 4383312,
  mnasnet1_3 = 6282256, regnet_y_400mf = 4344144, regnet_y_800mf = 6432512, regnet_y_1_6gf = 11202430,
  regnet_y_3_2gf = 19436338, regnet_y_8gf = 39381472, regnet_y_16gf = 83590140, regnet_x_400mf = 5495976,
  regnet_x_800mf = 7259656, regnet_x_1_6gf = 9190136, regnet_x_3_2gf = 15296552, regnet_x_8gf = 39572648,
  regnet_x_16gf = 54278536, efficientnet_b4 = 19341616, efficientnet_b5 = 30389784, efficientnet_b6 = 43040704,
  efficientnet_b7 = 66347960, efficientnet_v2_s = 21458488, efficientnet_v2_m = 54139356,
  resnext50_32x4d = 25028904, resnext101_32x8d = 88791336, resnext101_64x4d = 83455272, wide_resnet101_2 = 126886696 }

T.test("parameter counts", function()
  local names = {}
  for n in pairs(COUNTS) do names[#names + 1] = n end
  table.sort(names)
  for _, n in ipairs(names) do
    local opts = n == "googlenet" and {aux_logits = false} or nil
    T.eq(count(structure_only(models[n], opts)), COUNTS[n], n .. " parameters")
    collectgarbage()
  end
  -- the auxiliary heads: 2 x (conv 512|528 -> 128, bn, fc 2048 -> 1024, fc 1024 -> 1000)
  local aux = (512 * 128 + 256 + 2048 * 1024 + 1024 + 1024 * 1000 + 1000) + (528 * 128 + 256 + 2048 * 1024 + 1024 + 1024 * 1000 + 1000)
  T.eq(count(structure_only(models.googlenet)), 6624904 + aux, "googlenet with aux_logits (the default)")
  T.eq(count(structure_only(models.inception_v3, {aux_logits = false})), 27161264 - (768 * 128 + 256 + 128 * 768 * 25 +
    1536 + 768 * 1000 + 1000), "inception_v3 without AuxLogits")
  T.eq(count(structure_only(models.mnasnet1_0, {num_classes = 10})), 4383312 - 1281000 + 12810, "mnasnet num_classes")
end)
collectgarbage()

T.test("state_dict keys", function()
  local k = keys(structure_only(models.googlenet))
  T.eq({k[1], k[2], k[6]}, {"conv1.conv.weight", "conv1.bn.weight", "conv1.bn.num_batches_tracked"}, "googlenet first keys")
  T.eq({k[#k - 1], k[#k]}, {"fc.weight", "fc.bias"}, "googlenet last keys")
  T.eq(k[#k - 2], "aux2.fc2.bias", "aux2 registered after inception5b")
  T.check(has(k, "inception3a.branch3.1.conv.weight") and has(k, "inception3a.branch4.1.bn.running_var")
    and has(k, "aux1.conv.conv.weight"), "googlenet branch names")
  local g = structure_only(models.googlenet)
  T.eq(g.inception3a.branch3[1].conv.weight.shape:totable(), {32, 16, 3, 3}, "branch3's 3x3 kernel (torchvision's)")
  k = keys(structure_only(models.inception_v3))
  T.eq({k[1], k[#k]}, {"Conv2d_1a_3x3.conv.weight", "fc.bias"}, "inception_v3 first / last keys")
  T.check(has(k, "Mixed_6e.branch7x7dbl_5.bn.running_mean") and has(k, "AuxLogits.conv1.conv.weight")
    and has(k, "Mixed_7c.branch3x3dbl_3b.conv.weight"), "inception_v3 names")
  local iv = structure_only(models.inception_v3)
  T.eq(iv.Mixed_6b.branch7x7_2.conv.weight.shape:totable(), {128, 128, 1, 7}, "1x7 convolutions")
  k = keys(structure_only(models.mnasnet1_0))
  T.eq({k[1], k[2], k[#k]}, {"layers.0.weight", "layers.1.weight", "classifier.1.bias"}, "mnasnet keys")
  T.check(has(k, "layers.8.2.layers.7.running_var") and has(k, "layers.15.num_batches_tracked") and not has(k, "layers.16.weight"), "mnasnet stacks")
  k = keys(structure_only(models.regnet_y_400mf))
  T.eq({k[1], k[2], k[#k]}, {"stem.0.weight", "stem.1.weight", "fc.bias"}, "regnet keys")
  T.check(has(k, "trunk_output.block1.block1-0.proj.0.weight") and has(k, "trunk_output.block1.block1-0.f.se.fc1.weight")
    and has(k, "trunk_output.block4.block4-5.f.c.1.running_mean"), "regnet_y_400mf block names (4 stages, 6 blocks last)")
  T.check(not has(k, "trunk_output.block4.block4-6.f.a.0.weight"), "regnet_y_400mf stage 4 has 6 blocks")
  k = keys(structure_only(models.regnet_x_400mf))
  T.check(not has(k, "trunk_output.block1.block1-0.f.se.fc1.weight"), "regnet_x has no squeeze-excitation")
  k = keys(structure_only(models.efficientnet_v2_s))
  T.eq({k[1], k[#k]}, {"features.0.0.weight", "classifier.1.bias"}, "efficientnet_v2_s keys")
  T.check(has(k, "features.1.0.block.0.0.weight") and not has(k, "features.1.0.block.1.0.weight")
    and has(k, "features.2.0.block.1.0.weight") and has(k, "features.4.0.block.2.fc1.weight"),
    "fused blocks (no expansion: one conv), then MBConv with squeeze-excitation")
  local v2 = structure_only(models.efficientnet_v2_s)
  T.eq(v2.features[1][0].block[0][1].eps, 1e-3, "v2 batch norm eps")
  T.eq(v2.classifier[1].in_features, 1280, "v2 last_channel")
  local b5 = structure_only(models.efficientnet_b5)
  T.eq({b5.features[0][1].eps, b5.features[0][1].momentum}, {0.001, 0.01}, "b5 batch norm eps, momentum")
  T.eq(structure_only(models.efficientnet_b4).classifier[1].in_features, 1792, "b4 head")
  T.eq(structure_only(models.resnext50_32x4d).layer1[0].conv2.groups, 32, "resnext groups")
end)
collectgarbage()

T.test("forward shapes", function()
  torch.manual_seed(0)
  local g = models.googlenet({num_classes = 10})
  g:eval()
  local x = torch.randn(1, 3, 224, 224)
  T.eq(g(x).shape:totable(), {1, 10}, "googlenet eval: logits")
  g:train()
  local out = g(torch.randn(2, 3, 224, 224))
  T.eq(getmetatable(out).__name, "GoogLeNetOutputs", "googlenet training output")
  T.eq({out.logits.shape:totable(), out.aux_logits2.shape:totable(), out.aux_logits1.shape:totable()},
    {{2, 10}, {2, 10}, {2, 10}}, "logits and both aux outputs")
  T.check(out[1] == out.logits and out[2] == out.aux_logits2 and out[3] == out.aux_logits1, "positional items")
  -- transform_input: the same net on the re-normalised input
  g:eval()
  local tg = models.googlenet({num_classes = 10, transform_input = true, aux_logits = false})
  tg:load_state_dict(g:state_dict(), {strict = false})
  tg:eval()
  local m, s = {0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}
  local chans = {}
  for c = 1, 3 do chans[c] = x:narrow(1, c - 1, 1) * (s[c] / 0.5) + (m[c] - 0.5) / 0.5 end
  T.near(tg(x):reshape(-1):tolist(), g(torch.cat(chans, 1)):reshape(-1):tolist(), 1e-4, "transform_input")
  collectgarbage()

  local iv = models.inception_v3({num_classes = 7})
  iv:eval()
  T.eq(iv(torch.randn(1, 3, 299, 299)).shape:totable(), {1, 7}, "inception_v3 eval")
  iv:train()
  local io_ = iv(torch.randn(2, 3, 299, 299))
  T.eq(getmetatable(io_).__name, "InceptionOutputs", "inception training output")
  T.eq({io_.logits.shape:totable(), io_.aux_logits.shape:totable()}, {{2, 7}, {2, 7}}, "logits and aux_logits")
  -- initialisation: truncated normals, std 0.1 (convs), 0.001 (AuxLogits.fc), 0.1 (fc)
  T.near(iv.AuxLogits.fc.weight:std():item(), 0.001, 0.05, "AuxLogits.fc std 0.001")
  T.near(iv.Mixed_7c.branch_pool.conv.weight:std():item(), 0.1, 0.05, "conv std 0.1")
  T.near(g.fc.weight:std():item(), 0.01, 0.05, "googlenet std 0.01")
  collectgarbage()

  for _, n in ipairs({"mnasnet0_5", "regnet_y_400mf", "regnet_x_400mf", "efficientnet_b4", "efficientnet_v2_s"}) do
    local net = models[n]({num_classes = 5})
    net:eval()
    T.eq(net(torch.randn(2, 3, 64, 64)).shape:totable(), {2, 5}, n .. " forward")
    collectgarbage()
  end
  local mn = models.mnasnet1_0()
  local bound = math.sqrt(3 / 1000) -- kaiming_uniform, fan_out, gain 1
  T.check(mn.classifier[1].weight:abs():max():item() <= bound, "mnasnet linear within the kaiming bound")
  T.near(mn.classifier[1].weight:std():item(), bound / math.sqrt(3), 0.05, "mnasnet linear std")
  local rg = models.regnet_y_400mf()
  T.near(rg.stem[0].weight:std():item(), math.sqrt(2 / (9 * 32)), 0.1, "regnet conv std sqrt(2 / fan_out)")
end)
collectgarbage()

local ENUMS = [[AlexNet_Weights ConvNeXt_Base_Weights ConvNeXt_Large_Weights ConvNeXt_Small_Weights ConvNeXt_Tiny_Weights
DenseNet121_Weights DenseNet161_Weights DenseNet169_Weights DenseNet201_Weights EfficientNet_B0_Weights EfficientNet_B1_Weights
EfficientNet_B2_Weights EfficientNet_B3_Weights EfficientNet_B4_Weights EfficientNet_B5_Weights EfficientNet_B6_Weights
EfficientNet_B7_Weights EfficientNet_V2_L_Weights EfficientNet_V2_M_Weights EfficientNet_V2_S_Weights GoogLeNet_Weights
Inception_V3_Weights MNASNet0_5_Weights MNASNet0_75_Weights MNASNet1_0_Weights MNASNet1_3_Weights MaxVit_T_Weights
MobileNet_V2_Weights MobileNet_V3_Large_Weights MobileNet_V3_Small_Weights RegNet_X_16GF_Weights RegNet_X_1_6GF_Weights
RegNet_X_32GF_Weights RegNet_X_3_2GF_Weights RegNet_X_400MF_Weights RegNet_X_800MF_Weights RegNet_X_8GF_Weights
RegNet_Y_128GF_Weights RegNet_Y_16GF_Weights RegNet_Y_1_6GF_Weights RegNet_Y_32GF_Weights RegNet_Y_3_2GF_Weights
RegNet_Y_400MF_Weights RegNet_Y_800MF_Weights RegNet_Y_8GF_Weights ResNeXt101_32X8D_Weights ResNeXt101_64X4D_Weights
ResNeXt50_32X4D_Weights ResNet101_Weights ResNet152_Weights ResNet18_Weights ResNet34_Weights ResNet50_Weights
ShuffleNet_V2_X0_5_Weights ShuffleNet_V2_X1_0_Weights ShuffleNet_V2_X1_5_Weights ShuffleNet_V2_X2_0_Weights
SqueezeNet1_0_Weights SqueezeNet1_1_Weights Swin_B_Weights Swin_S_Weights Swin_T_Weights Swin_V2_B_Weights Swin_V2_S_Weights
Swin_V2_T_Weights VGG11_BN_Weights VGG11_Weights VGG13_BN_Weights VGG13_Weights VGG16_BN_Weights VGG16_Weights
VGG19_BN_Weights VGG19_Weights ViT_B_16_Weights ViT_B_32_Weights ViT_H_14_Weights ViT_L_16_Weights ViT_L_32_Weights
Wide_ResNet101_2_Weights Wide_ResNet50_2_Weights]]

T.test("weights enums", function()
  local n = 0
  for name in ENUMS:gmatch("%S+") do
    local e = models[name]
    n = n + 1
    T.check(getmetatable(e) == models.WeightsEnum and getmetatable(e.DEFAULT) == models.Weights, name .. " with DEFAULT")
  end
  T.eq(n, 80, "80 enums")
  local W = models.ResNet50_Weights
  T.check(W.DEFAULT == W.IMAGENET1K_V2, "DEFAULT is the newest")
  T.eq(W.IMAGENET1K_V1.url, "https://download.pytorch.org/models/resnet50-0676ba61.pth", "url")
  local meta = W.IMAGENET1K_V2.meta
  T.eq({meta.num_params, meta.min_size, #meta.categories, meta.categories[1]}, {25557032, {1, 1}, 1000, "tench"}, "meta")
  T.eq(tostring(W.IMAGENET1K_V2), "ResNet50_Weights.IMAGENET1K_V2", "member tostring")
  T.eq(#W:members(), 2, "members")
  T.check(models.ViT_H_14_Weights.DEFAULT == models.ViT_H_14_Weights.IMAGENET1K_SWAG_E2E_V1, "ViT_H_14 default")
  T.check(models.VGG16_Weights.DEFAULT == models.VGG16_Weights.IMAGENET1K_V1, "VGG16 default is V1, not FEATURES")
  T.check(models.RegNet_Y_128GF_Weights.DEFAULT.url:find("regnet_y_128gf_swag%-c8ce3e52") ~= nil, "RegNet_Y_128GF SWAG")
  T.eq(models.RegNet_Y_16GF_Weights.IMAGENET1K_V2.url, "https://download.pytorch.org/models/regnet_y_16gf-3e4a00f9.pth",
    "regnet V2 url")
  T.eq(tostring(models.Inception_V3_Weights.DEFAULT.transforms()), "ImageClassification(\n    crop_size=[299]\n    " ..
    "resize_size=[342]\n    mean=[0.485, 0.456, 0.406]\n    std=[0.229, 0.224, 0.225]\n    " ..
    "interpolation=InterpolationMode.BILINEAR\n)", "transforms repr")
  T.check(tostring(models.EfficientNet_B4_Weights.DEFAULT.transforms()):find("BICUBIC") ~= nil, "b4 bicubic")

  -- the preset on a constant image: resize and crop keep 128; then (128/255 - mean) / std
  local tf = W.DEFAULT.transforms()
  local y = tf(torch.full({3, 300, 400}, 128, {dtype = torch.uint8}))
  T.eq(y.shape:totable(), {3, 224, 224}, "resize 232, crop 224")
  local m, s = {0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}
  for c = 1, 3 do
    T.near(y[c - 1][100][100]:item(), (128 / 255 - m[c]) / s[c], 1e-5, "normalised value, channel " .. c)
  end
  local pil = require("tv_io").Image.fromarray(torch.full({300, 400, 3}, 128, {dtype = torch.uint8}))
  T.near(tf(pil)[0][0][0]:item(), (128 / 255 - m[1]) / s[1], 1e-5, "PIL-like input")
  T.eq(models.ResNet18_Weights.DEFAULT.transforms()(torch.zeros(3, 256, 256, {dtype = torch.uint8})).shape:totable(),
    {3, 224, 224}, "ResNet18 preset")

  -- num_params against the builders (the smaller ones; SWAG E2E ViT at its own image size)
  for name in ENUMS:gmatch("%S+") do
    local e = models[name]
    for _, w in ipairs(e:members()) do
      if w.meta.num_params < 70e6 then
        local b = nil
        for bn, be in pairs(models._builder_weights) do if be == e then b = bn end end
        if type(models[b]) == "function" then
          local opts = b == "googlenet" and {aux_logits = false} or nil
          if w.name:find("SWAG_E2E") and b:find("^vit") then opts = {image_size = w.meta.min_size[1]} end
          T.eq(count(structure_only(models[b], opts)), w.meta.num_params, tostring(w) .. " num_params")
          collectgarbage()
        end
      end
    end
  end
end)
collectgarbage()

T.test("registry and weights= errors", function()
  T.check(models.get_model_weights("resnet50") == models.ResNet50_Weights, "get_model_weights(name)")
  T.check(models.get_model_weights(models.googlenet) == models.GoogLeNet_Weights, "get_model_weights(builder)")
  T.check(models.get_weight("ResNet50_Weights.IMAGENET1K_V1") == models.ResNet50_Weights.IMAGENET1K_V1, "get_weight")
  T.check(models.get_model_builder("MNASNet1_0") == models.mnasnet1_0, "get_model_builder lowercases")
  T.eq(models.get_model("regnet_x_400mf", {num_classes = 3}).fc.out_features, 3, "get_model")
  T.raises(function() models.get_weight("ResNet50") end, "Invalid weight name provided: 'ResNet50'.")
  T.raises(function() models.get_weight("Nope_Weights.X") end,
    "The weight enum 'Nope_Weights' for the specific method couldn't be retrieved.")
  T.check(models.get_model_builder("swin_v2_b") == models.swin_v2_b and models.get_model_builder("maxvit_t") == models.maxvit_t,
    "get_model_builder: swin, maxvit")
  T.raises(function() models.get_model("nope") end, "Unknown model nope")
  T.raises(function() models.get_model_weights("nope") end, "Unknown model nope")
  local all = models.list_models()
  T.check(has(all, "googlenet") and has(all, "regnet_y_128gf") and has(all, "efficientnet_v2_l") and has(all, "alexnet")
    and not has(all, "get_model") and has(all, "swin_t") and has(all, "maxvit_t"), "list_models")
  T.eq(#models.list_models({module = models}), 80, "torchvision's 80 classification models")
  T.eq(models.list_models({include = "regnet_y_*"}), {"regnet_y_128gf", "regnet_y_16gf", "regnet_y_1_6gf",
    "regnet_y_32gf", "regnet_y_3_2gf", "regnet_y_400mf", "regnet_y_800mf", "regnet_y_8gf"}, "include")
  T.eq(models.list_models({include = {"mnasnet*", "googlenet"}, exclude = "*0_5"}),
    {"googlenet", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3"}, "include list, exclude")

  with_hub_dir(function() -- an empty cache: weights= names the file to put there
    T.raises(function() models.googlenet({weights = "DEFAULT"}) end,
      "~googlenet-1378be20.pth is not in the cache, and nnrepl downloads nothing at run time: fetch " ..
      "https://download.pytorch.org/models/googlenet-1378be20.pth")
    T.raises(function() models.regnet_y_400mf({weights = models.RegNet_Y_400MF_Weights.IMAGENET1K_V1}) end,
      "~regnet_y_400mf-c65dace8.pth is not in the cache")
    T.raises(function() models.resnet18({weights = models.ResNet50_Weights.IMAGENET1K_V1}) end,
      "Invalid Weight class provided; expected ResNet18_Weights but received ResNet50_Weights.")
    T.raises(function() models.resnet18({weights = "IMAGENET1K_V9"}) end, "Invalid value IMAGENET1K_V9 for enum ResNet18_Weights.")
    T.raises(function() models.mnasnet1_0({weights = "MNASNet1_0_Weights.IMAGENET1K_V1"}) end,
      "~mnasnet1.0_top1_73.512-f206786ef8.pth is not in the cache")
  end)
  T.raises(function() models.MNASNet(0) end, "alpha should be greater than 0.0 instead of 0")
  T.raises(function() models.googlenet({aux_logit = true}) end, "~unknown keyword 'aux_logit'")
end)
collectgarbage()

if torch.cuda.is_available() then
  T.test("CUDA", function()
    torch.manual_seed(0)
    for _, n in ipairs({"googlenet", "mnasnet0_5", "regnet_y_400mf", "efficientnet_v2_s"}) do
      local net = models[n]({num_classes = 4})
      net:eval()
      local x = torch.randn(1, 3, 96, 96)
      local want = net(x)
      net:cuda()
      local got = net(x:cuda())
      T.near(got:cpu():reshape(-1):tolist(), want:reshape(-1):tolist(), 1e-3, n .. " on cuda")
    end
    local iv = models.inception_v3({num_classes = 4}):cuda()
    iv:train()
    local o = iv(torch.randn(2, 3, 299, 299, {device = "cuda"}))
    T.eq(o.aux_logits.shape:totable(), {2, 4}, "inception_v3 training on cuda")
    local tf = models.ResNet18_Weights.DEFAULT.transforms()
    T.eq(tf(torch.zeros(3, 256, 256, {dtype = torch.uint8, device = "cuda"})).shape:totable(), {3, 224, 224}, "preset on cuda")
  end)
else
  T.skip("no CUDA device", 1)
end
