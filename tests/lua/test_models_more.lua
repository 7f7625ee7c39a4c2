-- torchvision.models, continued (bindings/lua/tv_models_more.lua): parameter counts, state_dict
-- keys and shapes, forward shapes and num_classes for MobileNetV2/V3, SqueezeNet, ShuffleNetV2,
-- DenseNet-121, EfficientNet-B0, VisionTransformer and ConvNeXt-tiny.
-- The counts are torchvision's published "num_params" of each builder's weights enum, from
-- https://pytorch.org/vision/stable/models/generated/torchvision.models.<builder>.html
-- (e.g. ...torchvision.models.mobilenet_v2.html: MobileNet_V2_Weights.IMAGENET1K_V1 num_params 3504872).
local T = ...
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
local with_hub_dir = dofile(here .. "hub_dir.lua")
local models = require("torchvision").models
local MU = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "model_util.lua")
local count, structure_only = MU.count, MU.structure_only

-- shapes = { key = {dims...} }: each key is in the state_dict with that shape
local function check_shapes(m, shapes, what)
  local sd = m:state_dict()
  local have = {}
  for _, k in ipairs(sd:keys()) do have[k] = true end
  local names = {}
  for k in pairs(shapes) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do
    T.check(have[k], what .. " has key " .. k)
    if have[k] then T.eq(sd[k].shape:totable(), shapes[k], what .. " " .. k .. " shape") end
  end
end

-- eval forward on x: shape {N, classes}, finite, the same twice
local function check_forward(m, x, classes, what)
  m:eval()
  local a, b
  torch.no_grad(function() a = m(x); b = m(x) end)
  T.eq(a.shape:totable(), { x:size(0), classes }, what .. " output shape")
  T.check(a:isfinite():all():item(), what .. " output finite")
  T.eq(a:tolist(), b:tolist(), what .. " eval forward is deterministic")
end

local function last_linear_shape(m, path)
  return m:state_dict()[path].shape:totable()
end

T.test("mobilenet_v2", function()
  torch.manual_seed(0)
  local m = models.mobilenet_v2()
  T.eq(count(m), 3504872, "mobilenet_v2 parameters")
  local k = m:state_dict():keys()
  T.eq({ k[1], k[2] }, { "features.0.0.weight", "features.0.1.weight" }, "first keys")
  T.eq({ k[#k - 1], k[#k] }, { "classifier.1.weight", "classifier.1.bias" }, "last keys")
  check_shapes(m, { ["features.0.0.weight"] = { 32, 3, 3, 3 }, ["features.1.conv.0.0.weight"] = { 32, 1, 3, 3 },
    ["features.1.conv.1.weight"] = { 16, 32, 1, 1 }, ["features.2.conv.0.0.weight"] = { 96, 16, 1, 1 },
    ["features.2.conv.1.0.weight"] = { 96, 1, 3, 3 }, ["features.2.conv.3.running_var"] = { 24 },
    ["features.18.0.weight"] = { 1280, 320, 1, 1 }, ["classifier.1.weight"] = { 1000, 1280 } }, "mobilenet_v2")
  T.eq(tostring(m.features[2].conv[0]):match("^[^\n]*"), "Conv2dNormActivation(", "Conv2dNormActivation class")
  T.eq(tostring(m.features[1].conv[0][2]), "ReLU6(inplace=True)", "ReLU6 activation")
  T.check(m.features[3].use_res_connect and not m.features[2].use_res_connect, "residual where stride 1 and inp == oup")
  T.check(m.classifier[1].bias:eq(0):all():item() and m.features[0][1].weight:eq(1):all():item(), "Linear bias 0, BN 1")
  check_forward(m, torch.randn(2, 3, 64, 64), 1000, "mobilenet_v2")
  local m10 = models.mobilenet_v2({ num_classes = 10, dropout = 0.3 })
  T.eq(last_linear_shape(m10, "classifier.1.weight"), { 10, 1280 }, "num_classes=10")
  T.eq(tostring(m10.classifier[0]), "Dropout(p=0.3, inplace=False)", "dropout=")
  T.eq(count(structure_only(models.mobilenet_v2, { width_mult = 0.5 })), 1968680, "width_mult=0.5 parameters")
end)
collectgarbage()

T.test("mobilenet_v3", function()
  torch.manual_seed(0)
  local s = models.mobilenet_v3_small()
  T.eq(count(s), 2542856, "mobilenet_v3_small parameters")
  check_shapes(s, { ["features.0.0.weight"] = { 16, 3, 3, 3 }, ["features.0.1.running_mean"] = { 16 },
    ["features.1.block.0.0.weight"] = { 16, 1, 3, 3 }, ["features.1.block.1.fc1.weight"] = { 8, 16, 1, 1 },
    ["features.1.block.1.fc2.bias"] = { 16 }, ["features.1.block.2.0.weight"] = { 16, 16, 1, 1 },
    ["features.4.block.2.fc1.weight"] = { 24, 96, 1, 1 }, ["features.12.0.weight"] = { 576, 96, 1, 1 },
    ["classifier.0.weight"] = { 1024, 576 }, ["classifier.3.weight"] = { 1000, 1024 } }, "mobilenet_v3_small")
  T.eq(tostring(s.features[0][1]), "BatchNorm2d(16, eps=0.001, momentum=0.01, affine=True, track_running_stats=True)",
    "V3 batch norm eps and momentum")
  T.eq(tostring(s.features[0][2]), "Hardswish(inplace=True)", "first conv Hardswish")
  T.eq(tostring(s.features[1].block[1].scale_activation), "Hardsigmoid()", "SE scale activation Hardsigmoid")
  check_forward(s, torch.randn(2, 3, 64, 64), 1000, "mobilenet_v3_small")
  local l = models.mobilenet_v3_large({ num_classes = 7 })
  T.eq(count(l), 5483032 - 1281000 + 1280 * 7 + 7, "mobilenet_v3_large parameters at 7 classes")
  check_shapes(l, { ["features.1.block.0.0.weight"] = { 16, 1, 3, 3 }, ["features.2.block.0.0.weight"] = { 64, 16, 1, 1 },
    ["features.4.block.2.fc1.weight"] = { 24, 72, 1, 1 }, ["features.16.0.weight"] = { 960, 160, 1, 1 },
    ["classifier.0.weight"] = { 1280, 960 }, ["classifier.3.weight"] = { 7, 1280 } }, "mobilenet_v3_large")
  check_forward(l, torch.randn(1, 3, 64, 64), 7, "mobilenet_v3_large")
  T.eq(count(structure_only(models.mobilenet_v3_large)), 5483032, "mobilenet_v3_large parameters")
end)
collectgarbage()

T.test("squeezenet", function()
  torch.manual_seed(0)
  local a = models.squeezenet1_0()
  T.eq(count(a), 1248424, "squeezenet1_0 parameters")
  check_shapes(a, { ["features.0.weight"] = { 96, 3, 7, 7 }, ["features.3.squeeze.weight"] = { 16, 96, 1, 1 },
    ["features.3.expand1x1.weight"] = { 64, 16, 1, 1 }, ["features.3.expand3x3.weight"] = { 64, 16, 3, 3 },
    ["features.12.expand3x3.bias"] = { 256 }, ["classifier.1.weight"] = { 1000, 512, 1, 1 } }, "squeezenet1_0")
  T.check(a.classifier[1].weight:std():item() < 0.012 and a.features[0].bias:eq(0):all():item(),
    "final conv N(0, 0.01), biases 0")
  check_forward(a, torch.randn(2, 3, 64, 64), 1000, "squeezenet1_0")
  local b = models.squeezenet1_1({ num_classes = 10 })
  T.eq(count(b), 1235496 - 513000 + 5130, "squeezenet1_1 parameters at 10 classes")
  check_shapes(b, { ["features.0.weight"] = { 64, 3, 3, 3 }, ["features.3.squeeze.weight"] = { 16, 64, 1, 1 },
    ["classifier.1.weight"] = { 10, 512, 1, 1 } }, "squeezenet1_1")
  check_forward(b, torch.randn(1, 3, 64, 64), 10, "squeezenet1_1")
  T.eq(count(structure_only(models.squeezenet1_1)), 1235496, "squeezenet1_1 parameters")
end)
collectgarbage()

T.test("shufflenet_v2", function()
  torch.manual_seed(0)
  local a = models.shufflenet_v2_x0_5()
  T.eq(count(a), 1366792, "shufflenet_v2_x0_5 parameters")
  check_shapes(a, { ["conv1.0.weight"] = { 24, 3, 3, 3 }, ["stage2.0.branch1.0.weight"] = { 24, 1, 3, 3 },
    ["stage2.0.branch1.2.weight"] = { 24, 24, 1, 1 }, ["stage2.0.branch2.0.weight"] = { 24, 24, 1, 1 },
    ["stage2.1.branch2.0.weight"] = { 24, 24, 1, 1 }, ["stage2.1.branch2.3.weight"] = { 24, 1, 3, 3 },
    ["stage4.3.branch2.6.running_mean"] = { 96 }, ["conv5.0.weight"] = { 1024, 192, 1, 1 },
    ["fc.weight"] = { 1000, 1024 } }, "shufflenet_v2_x0_5")
  local keys = a:state_dict():keys()
  local has = false
  for _, k in ipairs(keys) do if k:find("^stage2%.1%.branch1") then has = true end end
  T.check(not has, "stride-1 blocks have an empty branch1")
  check_forward(a, torch.randn(2, 3, 64, 64), 1000, "shufflenet_v2_x0_5")
  -- channel shuffle with 2 groups interleaves the halves
  local x = torch.arange(4):view(1, 4, 1, 1)
  T.eq(models._channel_shuffle(x, 2):flatten():tolist(), { 0, 2, 1, 3 }, "channel_shuffle")
  local b = models.shufflenet_v2_x1_0({ num_classes = 3 })
  T.eq(count(b), 2278604 - 1025000 + 3075, "shufflenet_v2_x1_0 parameters at 3 classes")
  check_shapes(b, { ["stage3.0.branch1.0.weight"] = { 116, 1, 3, 3 }, ["fc.weight"] = { 3, 1024 } }, "shufflenet_v2_x1_0")
  check_forward(b, torch.randn(1, 3, 64, 64), 3, "shufflenet_v2_x1_0")
  T.eq(count(structure_only(models.shufflenet_v2_x1_0)), 2278604, "shufflenet_v2_x1_0 parameters")
end)
collectgarbage()

T.test("densenet121", function()
  torch.manual_seed(0)
  local m = models.densenet121()
  T.eq(count(m), 7978856, "densenet121 parameters")
  local k = m:state_dict():keys()
  T.eq(#k, 727, "densenet121 state_dict entries")
  T.eq({ k[1], k[2] }, { "features.conv0.weight", "features.norm0.weight" }, "first keys")
  check_shapes(m, { ["features.conv0.weight"] = { 64, 3, 7, 7 },
    ["features.denseblock1.denselayer1.norm1.weight"] = { 64 },
    ["features.denseblock1.denselayer1.conv1.weight"] = { 128, 64, 1, 1 },
    ["features.denseblock1.denselayer6.conv2.weight"] = { 32, 128, 3, 3 },
    ["features.transition1.conv.weight"] = { 128, 256, 1, 1 },
    ["features.denseblock4.denselayer16.norm1.running_var"] = { 992 },
    ["features.norm5.bias"] = { 1024 }, ["classifier.weight"] = { 1000, 1024 } }, "densenet121")
  T.check(m.classifier.bias:eq(0):all():item(), "classifier bias 0")
  check_forward(m, torch.randn(1, 3, 32, 32), 1000, "densenet121")
  local m5 = structure_only(models.densenet121, { num_classes = 5 })
  T.eq(last_linear_shape(m5, "classifier.weight"), { 5, 1024 }, "num_classes=5")
end)
collectgarbage()

T.test("efficientnet_b0", function()
  torch.manual_seed(0)
  local m = models.efficientnet_b0()
  T.eq(count(m), 5288548, "efficientnet_b0 parameters")
  check_shapes(m, { ["features.0.0.weight"] = { 32, 3, 3, 3 }, ["features.1.0.block.0.0.weight"] = { 32, 1, 3, 3 },
    ["features.1.0.block.1.fc1.weight"] = { 8, 32, 1, 1 }, ["features.1.0.block.2.0.weight"] = { 16, 32, 1, 1 },
    ["features.2.0.block.0.0.weight"] = { 96, 16, 1, 1 }, ["features.2.1.block.2.fc1.weight"] = { 6, 144, 1, 1 },
    ["features.6.3.block.3.1.running_mean"] = { 192 }, ["features.8.0.weight"] = { 1280, 320, 1, 1 },
    ["classifier.1.weight"] = { 1000, 1280 } }, "efficientnet_b0")
  T.eq(tostring(m.features[1][0].block[1].activation), "SiLU(inplace=True)", "SE activation SiLU")
  -- drop probability 0.2 * block index / 16 blocks
  T.near(m.features[2][1].stochastic_depth.p, 0.2 * 2 / 16, 1e-12, "stochastic depth p of block 2")
  T.near(m.features[7][0].stochastic_depth.p, 0.2 * 15 / 16, 1e-12, "stochastic depth p of the last block")
  T.eq(tostring(m.features[2][1].stochastic_depth), "StochasticDepth(p=0.025, mode=row)", "StochasticDepth repr")
  local r = 1 / math.sqrt(1000)
  T.check(m.classifier[1].weight:abs():max():item() <= r, "Linear U(-1/sqrt(out), 1/sqrt(out))")
  check_forward(m, torch.randn(2, 3, 64, 64), 1000, "efficientnet_b0")
  m:train()
  local y = m(torch.randn(2, 3, 32, 32))
  T.eq(y.shape:totable(), { 2, 1000 }, "training forward")
  local m4 = structure_only(models.efficientnet_b0, { num_classes = 4, dropout = 0.5 })
  T.eq(last_linear_shape(m4, "classifier.1.weight"), { 4, 1280 }, "num_classes=4")
  T.eq(tostring(m4.classifier[0]), "Dropout(p=0.5, inplace=True)", "dropout=")
end)
collectgarbage()

T.test("stochastic depth", function()
  torch.manual_seed(1)
  local sd = models.StochasticDepth(0.25, "row")
  local x = torch.ones(4000, 2, 1, 1)
  local y = sd(x)
  local rows = y:select(1, 0):flatten()
  local kept = rows:gt(0):float():mean():item()
  T.check(math.abs(kept - 0.75) < 0.03, "row mode keeps ~75% of rows, kept " .. kept)
  T.check(y:eq(0):logical_or(y:eq(1 / 0.75)):all():item(), "survivors scaled by 1/(1-p)")
  T.eq(y:select(1, 0):tolist(), y:select(1, 1):tolist(), "a row is dropped or kept whole")
  sd:eval()
  T.eq(sd(x):tolist(), x:tolist(), "identity in eval")
  local b = models.StochasticDepth(0.5, "batch")(torch.ones(8, 3))
  T.check(b:eq(0):all():item() or b:eq(2):all():item(), "batch mode drops all or nothing")
  T.raises(function() return models.StochasticDepth(1.5, "row")(x) end,
    "drop probability has to be between 0 and 1, but got 1.5")
end)
collectgarbage()

T.test("vision transformer", function()
  local v = structure_only(models.vit_b_16)
  T.eq(count(v), 86567656, "vit_b_16 parameters")
  local k = v:state_dict():keys()
  T.eq(#k, 152, "vit_b_16 state_dict entries")
  T.eq({ k[1], k[2], k[3], k[4] }, { "class_token", "conv_proj.weight", "conv_proj.bias", "encoder.pos_embedding" },
    "first keys")
  check_shapes(v, { ["class_token"] = { 1, 1, 768 }, ["conv_proj.weight"] = { 768, 3, 16, 16 },
    ["encoder.pos_embedding"] = { 1, 197, 768 }, ["encoder.layers.encoder_layer_0.ln_1.weight"] = { 768 },
    ["encoder.layers.encoder_layer_0.self_attention.in_proj_weight"] = { 2304, 768 },
    ["encoder.layers.encoder_layer_0.self_attention.out_proj.weight"] = { 768, 768 },
    ["encoder.layers.encoder_layer_11.mlp.0.weight"] = { 3072, 768 },
    ["encoder.layers.encoder_layer_11.mlp.3.bias"] = { 768 }, ["encoder.ln.weight"] = { 768 },
    ["heads.head.weight"] = { 1000, 768 } }, "vit_b_16")
  v = nil
  collectgarbage()
  torch.manual_seed(0)
  local s = models.VisionTransformer({ image_size = 32, patch_size = 8, num_layers = 2, num_heads = 2, hidden_dim = 16,
    mlp_dim = 32, num_classes = 5 })
  check_shapes(s, { ["encoder.pos_embedding"] = { 1, 17, 16 }, ["heads.head.weight"] = { 5, 16 },
    ["encoder.layers.encoder_layer_1.mlp.0.weight"] = { 32, 16 } }, "small ViT")
  T.check(s.heads.head.weight:eq(0):all():item() and s.conv_proj.bias:eq(0):all():item(), "head and conv_proj bias 0")
  T.check(s.encoder.layers.encoder_layer_0.mlp[0].bias:abs():max():item() < 1e-4, "MLP bias N(0, 1e-6)")
  nn.init.normal_(s.heads.head.weight) -- the zero head outputs zeros; give it values
  check_forward(s, torch.randn(3, 3, 32, 32), 5, "small ViT")
  local y
  torch.no_grad(function() y = s(torch.randn(1, 3, 32, 32)) end)
  T.check(y:abs():sum():item() > 0, "non-trivial output")
  T.raises(function() return s(torch.randn(1, 3, 24, 32)) end, "Wrong image height! Expected 32 but got 24!")
  local v7 = structure_only(models.vit_b_16, { num_classes = 7, image_size = 64 })
  check_shapes(v7, { ["heads.head.weight"] = { 7, 768 }, ["encoder.pos_embedding"] = { 1, 17, 768 } }, "vit_b_16 options")
end)
collectgarbage()

T.test("convnext_tiny", function()
  local m = structure_only(models.convnext_tiny)
  T.eq(count(m), 28589128, "convnext_tiny parameters")
  check_shapes(m, { ["features.0.0.weight"] = { 96, 3, 4, 4 }, ["features.0.1.weight"] = { 96 },
    ["features.1.0.layer_scale"] = { 96, 1, 1 }, ["features.1.0.block.0.weight"] = { 96, 1, 7, 7 },
    ["features.1.0.block.2.weight"] = { 96 }, ["features.1.0.block.3.weight"] = { 384, 96 },
    ["features.2.0.weight"] = { 96 }, ["features.2.1.weight"] = { 192, 96, 2, 2 },
    ["features.5.8.block.5.weight"] = { 384, 1536 }, ["classifier.0.weight"] = { 768 },
    ["classifier.2.weight"] = { 1000, 768 } }, "convnext_tiny")
  T.eq(tostring(m.features[0][1]), "LayerNorm2d((96,), eps=1e-06, elementwise_affine=True)", "LayerNorm2d")
  T.near(m.features[7][2].stochastic_depth.p, 0.1, 1e-12, "last block's stochastic depth p")
  m = nil
  collectgarbage()
  torch.manual_seed(0)
  local c = models.convnext_tiny({ num_classes = 6 })
  T.near(c.features[1][0].layer_scale:flatten():tolist()[1], 1e-6, 1e-12, "layer_scale 1e-6")
  check_forward(c, torch.randn(1, 3, 32, 32), 6, "convnext_tiny")
end)
collectgarbage()

T.test("training backward", function()
  torch.manual_seed(0)
  for _, n in ipairs({ "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1", "shufflenet_v2_x0_5", "efficientnet_b0" }) do
    local m = models[n]({ num_classes = 4 })
    m:train()
    local ok, err = pcall(function() m(torch.randn(2, 3, 32, 32)):sum():backward() end)
    T.check(ok, n .. " backward: " .. tostring(err))
    local g = m:parameters()[1].grad
    T.check(g ~= nil and g:abs():sum():item() > 0, n .. " gradients reach the first conv")
  end
end)
collectgarbage()

T.test("builders' arguments (more)", function()
  with_hub_dir(function() -- an empty cache: weights= names the file to put there
    T.raises(function() return models.mobilenet_v2({ weights = "DEFAULT" }) end, "~mobilenet_v2-7ebf99e0.pth is not in the cache")
    T.raises(function() return models.efficientnet_b0({ pretrained = true }) end,
      "~efficientnet_b0_rwightman-7f5810bc.pth is not in the cache")
    T.raises(function() return models.vit_b_16({ weights = "IMAGENET1K_V1" }) end, "~vit_b_16-c867db91.pth is not in the cache")
  end)
  T.raises(function() return models.squeezenet1_0({ num_class = 3 }) end, "~unknown keyword 'num_class'")
  T.raises(function() return models.densenet121(10) end,
    "densenet121() takes keyword arguments only, as densenet121({num_classes=10})")
  T.raises(function() return models.SqueezeNet("1_2") end, "Unsupported SqueezeNet version 1_2: 1_0 or 1_1 expected")
  local names = {}
  for _, n in ipairs(models.list_models()) do names[n] = true end
  for _, n in ipairs({ "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "squeezenet1_0", "squeezenet1_1",
    "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "densenet121", "efficientnet_b0", "vit_b_16", "convnext_tiny" }) do
    T.check(names[n], "list_models has " .. n)
  end
  local g = models.get_model("squeezenet1_1", { num_classes = 2 })
  T.check(nn.isinstance(g, models.SqueezeNet) and nn.isinstance(g.features[3], models.Fire), "get_model, isinstance")
end)
