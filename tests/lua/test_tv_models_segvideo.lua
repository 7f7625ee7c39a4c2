-- torchvision.models.segmentation (fcn, deeplabv3, lraspp) and models.video (r3d_18, mc3_18,
-- r2plus1d_18, s3d): every builder's full state_dict (keys in order and shapes) against a list
-- written out here from torchvision's layer definitions, parameter counts against torchvision's
-- published num_params, dilation and strides, output shapes and names, the final bilinear
-- upsampling against a plain Lua loop, closed-form gradients of the last biases, float64 finite
-- differences through the heads, argument errors, the registry and the per-family submodules.
local T = ...
local torch = require "torch"
local nn = torch.nn
local F = nn.functional
local models = require("torchvision").models
local seg, video = models.segmentation, models.video
local dir = debug.getinfo(1, "S").source:match("^@(.*/)")
local MU = dofile(dir .. "model_util.lua")
local gradcheck = dofile(dir .. "gradcheck.lua")(T)
local count, unfilled = MU.count, MU.structure_only

-- ---- the expected state_dicts, from torchvision's definitions ----

-- a list of {key, shape, is_parameter}
local function sd_list()
  local L = {}
  local function add(key, shape, param) L[#L + 1] = { key, shape, param } end
  local api = {}
  function api.conv(p, cout, cin, ks, bias)
    local shape = { cout, cin }
    for _, k in ipairs(ks) do shape[#shape + 1] = k end
    add(p .. ".weight", shape, true)
    if bias then add(p .. ".bias", { cout }, true) end
  end
  function api.bn(p, c)
    add(p .. ".weight", { c }, true); add(p .. ".bias", { c }, true)
    add(p .. ".running_mean", { c }); add(p .. ".running_var", { c }); add(p .. ".num_batches_tracked", {})
  end
  api.list = L
  return api
end

local K1, K3 = { 1, 1 }, { 3, 3 }

-- ResNet with Bottleneck blocks (no avgpool / fc: IntermediateLayerGetter stops at layer4)
local function resnet_backbone(S, p, layers, upto)
  S.conv(p .. "conv1", 64, 3, { 7, 7 }); S.bn(p .. "bn1", 64)
  local inplanes = 64
  for i = 1, upto do
    local planes = 64 << (i - 1)
    for j = 0, layers[i] - 1 do
      local b = string.format("%slayer%d.%d.", p, i, j)
      S.conv(b .. "conv1", planes, inplanes, K1); S.bn(b .. "bn1", planes)
      S.conv(b .. "conv2", planes, planes, K3); S.bn(b .. "bn2", planes)
      S.conv(b .. "conv3", planes * 4, planes, K1); S.bn(b .. "bn3", planes * 4)
      if j == 0 then S.conv(b .. "downsample.0", planes * 4, inplanes, K1); S.bn(b .. "downsample.1", planes * 4) end
      inplanes = planes * 4
    end
  end
end

local function fcn_head(S, p, cin, nc)
  S.conv(p .. "0", cin // 4, cin, K3); S.bn(p .. "1", cin // 4); S.conv(p .. "4", nc, cin // 4, K1, true)
end

local function deeplab_head(S, p, cin, nc)
  S.conv(p .. "0.convs.0.0", 256, cin, K1); S.bn(p .. "0.convs.0.1", 256)
  for i = 1, 3 do S.conv(p .. "0.convs." .. i .. ".0", 256, cin, K3); S.bn(p .. "0.convs." .. i .. ".1", 256) end
  S.conv(p .. "0.convs.4.1", 256, cin, K1); S.bn(p .. "0.convs.4.2", 256)
  S.conv(p .. "0.project.0", 256, 5 * 256, K1); S.bn(p .. "0.project.1", 256)
  S.conv(p .. "1", 256, 256, K3); S.bn(p .. "2", 256); S.conv(p .. "4", nc, 256, K1, true)
end

-- mobilenet_v3_large's features: {input, kernel, expanded, out, squeeze-excitation} per block
local MNV3 = { { 16, 3, 16, 16 }, { 16, 3, 64, 24 }, { 24, 3, 72, 24 }, { 24, 5, 72, 40, true }, { 40, 5, 120, 40, true },
  { 40, 5, 120, 40, true }, { 40, 3, 240, 80 }, { 80, 3, 200, 80 }, { 80, 3, 184, 80 }, { 80, 3, 184, 80 },
  { 80, 3, 480, 112, true }, { 112, 3, 672, 112, true }, { 112, 5, 672, 160, true }, { 160, 5, 960, 160, true },
  { 160, 5, 960, 160, true } }
local function squeeze_of(c) -- _make_divisible(c // 4, 8)
  local v = c // 4
  local n = math.max(8, (v + 4) // 8 * 8)
  if n < 0.9 * v then n = n + 8 end
  return n
end
local function mobilenet_features(S, p)
  S.conv(p .. "0.0", 16, 3, K3); S.bn(p .. "0.1", 16)
  for i, r in ipairs(MNV3) do
    local b, j = p .. i .. ".block.", 0
    if r[3] ~= r[1] then S.conv(b .. "0.0", r[3], r[1], K1); S.bn(b .. "0.1", r[3]); j = 1 end
    S.conv(b .. j .. ".0", r[3], 1, { r[2], r[2] }); S.bn(b .. j .. ".1", r[3]); j = j + 1
    if r[5] then
      local sq = squeeze_of(r[3])
      S.conv(b .. j .. ".fc1", sq, r[3], K1, true); S.conv(b .. j .. ".fc2", r[3], sq, K1, true); j = j + 1
    end
    S.conv(b .. j .. ".0", r[4], r[3], K1); S.bn(b .. j .. ".1", r[4])
  end
  S.conv(p .. "16.0", 960, 160, K1); S.bn(p .. "16.1", 960)
end

local SEG = {}
for _, depth in ipairs({ 50, 101 }) do
  local layers = { 3, 4, depth == 50 and 6 or 23, 3 }
  SEG["fcn_resnet" .. depth] = function(S, nc, aux)
    resnet_backbone(S, "backbone.", layers, 4); fcn_head(S, "classifier.", 2048, nc)
    if aux then fcn_head(S, "aux_classifier.", 1024, nc) end
  end
  SEG["deeplabv3_resnet" .. depth] = function(S, nc, aux)
    resnet_backbone(S, "backbone.", layers, 4); deeplab_head(S, "classifier.", 2048, nc)
    if aux then fcn_head(S, "aux_classifier.", 1024, nc) end
  end
end
SEG.deeplabv3_mobilenet_v3_large = function(S, nc, aux)
  mobilenet_features(S, "backbone."); deeplab_head(S, "classifier.", 960, nc)
  if aux then fcn_head(S, "aux_classifier.", 40, nc) end
end
SEG.lraspp_mobilenet_v3_large = function(S, nc)
  mobilenet_features(S, "backbone.")
  S.conv("classifier.cbr.0", 128, 960, K1); S.bn("classifier.cbr.1", 128)
  S.conv("classifier.scale.1", 128, 960, K1)
  S.conv("classifier.low_classifier", nc, 40, K1, true); S.conv("classifier.high_classifier", nc, 128, K1, true)
end

-- VideoResNet-18: conv kinds per stage ("3d", "2d" = no temporal, "2+1d"), stem kind
local function video_resnet(S, kinds, r2plus1d, nc)
  if r2plus1d then
    S.conv("stem.0", 45, 3, { 1, 7, 7 }); S.bn("stem.1", 45); S.conv("stem.3", 64, 45, { 3, 1, 1 }); S.bn("stem.4", 64)
  else
    S.conv("stem.0", 64, 3, { 3, 7, 7 }); S.bn("stem.1", 64)
  end
  local inplanes = 64
  for i = 1, 4 do
    local planes = 64 << (i - 1)
    for j = 0, 1 do
      local b = string.format("layer%d.%d.", i, j)
      local function conv(p, cin)
        local mid = (inplanes * planes * 27) // (inplanes * 9 + 3 * planes) -- from the block's inplanes
        if kinds[i] == "2+1d" then
          S.conv(p .. ".0", mid, cin, { 1, 3, 3 }); S.bn(p .. ".1", mid); S.conv(p .. ".3", planes, mid, { 3, 1, 1 })
        else
          S.conv(p, planes, cin, kinds[i] == "3d" and { 3, 3, 3 } or { 1, 3, 3 })
        end
      end
      conv(b .. "conv1.0", inplanes); S.bn(b .. "conv1.1", planes)
      conv(b .. "conv2.0", planes); S.bn(b .. "conv2.1", planes)
      if j == 0 and i > 1 then
        S.conv(b .. "downsample.0", planes, inplanes, { 1, 1, 1 }); S.bn(b .. "downsample.1", planes)
      end
      inplanes = planes
    end
  end
  S.conv("fc", nc, 512, {}, true)
end
local VIDEO = {
  r3d_18 = function(S, nc) video_resnet(S, { "3d", "3d", "3d", "3d" }, false, nc) end,
  mc3_18 = function(S, nc) video_resnet(S, { "3d", "2d", "2d", "2d" }, false, nc) end,
  r2plus1d_18 = function(S, nc) video_resnet(S, { "2+1d", "2+1d", "2+1d", "2+1d" }, true, nc) end,
}

-- compare a model's state_dict with an expected list: same keys in the same order, same shapes
local function check_sd(name, m, want)
  local sd = m:state_dict()
  local keys = sd:keys()
  T.eq(#keys, #want, name .. " state_dict size")
  local bad
  for i, e in ipairs(want) do
    local got = sd[e[1]]
    if keys[i] ~= e[1] or got == nil then bad = bad or i end
    if got ~= nil then
      local s = got.shape:totable()
      if #s ~= #e[2] then bad = bad or i else for d = 1, #s do if s[d] ~= e[2][d] then bad = bad or i end end end
    end
  end
  T.check(bad == nil, string.format("%s state_dict entry %s: got %s, want %s %s", name, tostring(bad),
    bad and tostring(keys[bad]) or "", bad and want[bad][1] or "", bad and T.show(want[bad][2]) or ""))
  local n = 0
  for _, e in ipairs(want) do
    if e[3] then
      local k = 1
      for _, d in ipairs(e[2]) do k = k * d end
      n = n + k
    end
  end
  return n
end

local SEG_COUNTS = { fcn_resnet50 = 35322218, fcn_resnet101 = 54314346, deeplabv3_resnet50 = 42004074,
  deeplabv3_resnet101 = 60996202, deeplabv3_mobilenet_v3_large = 11029328, lraspp_mobilenet_v3_large = 3221538 }
local VIDEO_COUNTS = { r3d_18 = 33371472, mc3_18 = 11695440, r2plus1d_18 = 31505325, s3d = 8320048 }

T.test("segmentation state_dicts and parameter counts", function()
  for name, gen in pairs(SEG) do
    local lraspp = name:find("lraspp") ~= nil
    for _, aux in ipairs(lraspp and { false } or { true, false }) do
      local nc = (aux or lraspp) and 21 or 5 -- 21: the default
      local m = unfilled(seg[name], { num_classes = nc ~= 21 and nc or nil, aux_loss = aux })
      local S = sd_list()
      gen(S, nc, aux)
      local want_n = check_sd(name .. (aux and " aux" or ""), m, S.list)
      T.eq(count(m), want_n, name .. " parameters = the expected list's")
      if aux or lraspp then
        T.eq(count(m), SEG_COUNTS[name], name .. " torchvision's num_params")
        T.eq(models.get_model_weights(name).DEFAULT.meta.num_params, SEG_COUNTS[name], name .. " meta num_params")
      end
    end
  end
end)

T.test("video state_dicts and parameter counts", function()
  for name, gen in pairs(VIDEO) do
    for _, nc in ipairs({ 400, 7 }) do
      local m = unfilled(video[name], { num_classes = nc })
      local S = sd_list()
      gen(S, nc)
      local want_n = check_sd(name, m, S.list)
      T.eq(count(m), want_n, name .. " parameters = the expected list's")
      if nc == 400 then T.eq(count(m), VIDEO_COUNTS[name], name .. " torchvision's num_params") end
    end
    T.eq(models.get_model_weights(name).DEFAULT.meta.num_params, VIDEO_COUNTS[name],
      name .. " meta num_params")
  end
  local s = unfilled(video.s3d)
  T.eq(count(s), VIDEO_COUNTS.s3d, "s3d torchvision's num_params")
  local k = s:state_dict():keys()
  T.eq({ k[1], k[2], k[#k - 1], k[#k] }, { "features.0.0.0.weight", "features.0.0.1.weight", "classifier.1.weight",
    "classifier.1.bias" }, "s3d first / last keys")
  local sd = s:state_dict()
  T.eq(sd["features.15.branch1.1.1.0.weight"].shape:totable(), { 384, 384, 3, 1, 1 }, "s3d last block's temporal conv")
  T.eq(sd["features.5.branch3.1.0.weight"].shape:totable(), { 32, 192, 1, 1, 1 }, "s3d pool branch conv")
  T.eq(s.features[0][0][1].eps, 0.001, "s3d BatchNorm3d eps")
  T.eq(s.features[0][0][1].momentum, 0.001, "s3d BatchNorm3d momentum")
end)

T.test("dilation and strides", function()
  local m = unfilled(seg.fcn_resnet50)
  local b = m.backbone
  T.eq({ b.layer3[0].conv2.dilation, b.layer3[0].conv2.stride, b.layer3[1].conv2.dilation, b.layer3[1].conv2.padding },
    { { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 } }, "layer3: stride replaced by dilation 2")
  T.eq({ b.layer4[0].conv2.dilation, b.layer4[2].conv2.dilation, b.layer4[2].conv2.padding,
    b.layer4[0].downsample[0].stride }, { { 2, 2 }, { 4, 4 }, { 4, 4 }, { 1, 1 } }, "layer4: dilation 4")
  T.eq(b.layer2[0].conv2.stride, { 2, 2 }, "layer2 keeps its stride")
  T.eq(b:keys(), { "conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4" }, "getter stops at layer4")
  local mb = unfilled(seg.deeplabv3_mobilenet_v3_large).backbone
  local dw = mb["13"].block[1][0]
  T.eq({ dw.stride, dw.dilation, dw.padding }, { { 1, 1 }, { 2, 2 }, { 4, 4 } }, "mobilenet C5: dilated, not strided")
  T.eq(mb["4"].out_channels, 40, "aux taps C2 (40 channels)")
  T.eq(#mb, 17, "all 17 feature blocks kept")
end)

-- bilinear (align_corners=false) resize of [C, h, w] nested lists to H x W, by the formula
local function bilinear(img, H, W)
  local C, h, w = #img, #img[1], #img[1][1]
  local out = {}
  local function src(i, n, N)
    local s = math.max((i + 0.5) * n / N - 0.5, 0)
    local i0 = math.min(math.floor(s), n - 1)
    local i1 = math.min(i0 + 1, n - 1)
    return i0 + 1, i1 + 1, s - i0
  end
  for c = 1, C do
    out[c] = {}
    for y = 0, H - 1 do
      out[c][y + 1] = {}
      local y0, y1, fy = src(y, h, H)
      for x = 0, W - 1 do
        local x0, x1, fx = src(x, w, W)
        local p = img[c]
        out[c][y + 1][x + 1] = (1 - fy) * ((1 - fx) * p[y0][x0] + fx * p[y0][x1]) + fy * ((1 - fx) * p[y1][x0] + fx * p[y1][x1])
      end
    end
  end
  return out
end

T.test("forward: shapes, names, upsampling", function()
  torch.manual_seed(0)
  local _ <close> = torch.no_grad()
  local x = torch.randn(1, 3, 19, 26)
  local m = seg.fcn_resnet50({ num_classes = 4, aux_loss = true }):eval()
  local out = m(x)
  T.eq(out:keys(), { "out", "aux" }, "fcn output names")
  T.eq(out.out.shape:totable(), { 1, 4, 19, 26 }, "out at the input's size")
  T.eq(out.aux.shape:totable(), { 1, 4, 19, 26 }, "aux at the input's size")
  local feats = m.backbone(x)
  T.eq(feats:keys(), { "aux", "out" }, "backbone's outputs in layer order")
  T.eq(feats.out.shape:totable(), { 1, 2048, 3, 4 }, "output stride 8")
  local small = m.classifier(feats.out)[0]:tolist()
  T.near(out.out[0]:tolist(), bilinear(small, 19, 26), 1e-5, "out = bilinear upsampling of the classifier")
  local small_aux = m.aux_classifier(feats.aux)[0]:tolist()
  T.near(out.aux[0]:tolist(), bilinear(small_aux, 19, 26), 1e-5, "aux = bilinear upsampling of the aux classifier")

  local d = seg.deeplabv3_mobilenet_v3_large({ num_classes = 3 }):eval()
  local x2 = torch.randn(2, 3, 40, 33)
  local o2 = d(x2)
  T.eq(o2:keys(), { "out" }, "aux off: only out")
  T.eq(o2.out.shape:totable(), { 2, 3, 40, 33 }, "deeplabv3_mobilenet out shape")
  T.eq(d.backbone(x2).out.shape:totable(), { 2, 960, 3, 3 }, "mobilenet output stride 16")
  T.check(d.aux_classifier == nil, "no aux_classifier")

  local l = seg.lraspp_mobilenet_v3_large({ num_classes = 2 }):eval()
  local o3 = l(x2)
  T.eq(o3:keys(), { "out" }, "lraspp output names")
  T.eq(o3.out.shape:totable(), { 2, 2, 40, 33 }, "lraspp out shape")
  local f3 = l.backbone(x2)
  T.eq({ f3.low.shape:totable(), f3.high.shape:totable() }, { { 2, 40, 5, 5 }, { 2, 960, 3, 3 } }, "low / high features")

  local l2 = seg.lraspp_mobilenet_v3_large({ num_classes = 2 })
  l2:load_state_dict(l:state_dict())
  T.near(l2:eval()(x2).out:flatten():tolist(), o3.out:flatten():tolist(), 1e-6, "state_dict round trip")

  local dr = seg.deeplabv3_resnet50({ num_classes = 2, aux_loss = true }):eval()
  local o4 = dr(torch.randn(1, 3, 17, 17))
  T.eq({ o4.out.shape:totable(), o4.aux.shape:totable() }, { { 1, 2, 17, 17 }, { 1, 2, 17, 17 } }, "deeplabv3_resnet50")

  for _, name in ipairs({ "r3d_18", "mc3_18", "r2plus1d_18" }) do
    local v = video[name]({ num_classes = 6 }):eval()
    local y = v(torch.randn(2, 3, 4, 24, 24))
    T.eq(y.shape:totable(), { 2, 6 }, name .. " output")
    local s = v.stem(torch.randn(1, 3, 4, 24, 24))
    local l2 = v.layer2(v.layer1(s))
    T.eq(l2.shape:totable(), name == "mc3_18" and { 1, 128, 4, 6, 6 } or { 1, 128, 2, 6, 6 },
      name .. " layer2: temporal stride " .. (name == "mc3_18" and "1" or "2"))
  end
  local R = video.resnet
  local bott = R.VideoResNet(R.Bottleneck, { R.Conv3DSimple, R.Conv3DNoTemporal, R.Conv2Plus1D, R.Conv3DSimple },
    { 1, 1, 1, 1 }, R.BasicStem, { num_classes = 3, zero_init_residual = true }):eval()
  T.eq(bott(torch.randn(1, 3, 4, 16, 16)).shape:totable(), { 1, 3 }, "VideoResNet with Bottleneck blocks")
  T.eq(bott.fc.in_features, 2048, "Bottleneck expansion 4")
  T.eq({ bott.layer1[0].downsample[0].stride, bott.layer2[0].downsample[0].stride, bott.layer3[0].downsample[0].stride },
    { { 1, 1, 1 }, { 1, 2, 2 }, { 2, 2, 2 } }, "downsample strides follow the stage's convolution")
  T.eq(bott.layer3[0].conv2[0][0].weight.shape:totable(), { (512 * 256 * 27) // (512 * 9 + 3 * 256), 256, 1, 3, 3 },
    "Conv2Plus1D midplanes from the block's inplanes (512) and planes (256)")
  T.eq(bott.layer2[0].conv3[1].weight:abs():sum():item(), 0.0, "zero_init_residual zeroes the last BatchNorm")
  T.eq(bott.layer2[0].conv2[1].weight:sum():item(), 128.0, "other BatchNorms start at 1")
  local s3 = video.s3d({ num_classes = 5 }):eval()
  T.eq(s3(torch.randn(1, 3, 16, 224, 224)).shape:totable(), { 1, 5 }, "s3d on 16 x 224 x 224")
end)

T.test("gradients", function()
  torch.manual_seed(1)
  local m = seg.deeplabv3_mobilenet_v3_large({ num_classes = 3, aux_loss = true }):train()
  local x = torch.randn(2, 3, 21, 18)
  local out = m(x)
  local loss = out.out:sum() + out.aux:sum()
  loss:backward()
  -- bilinear weights sum to 1 per output pixel: d sum / d bias = N * H * W
  T.near(m.classifier[4].bias.grad:tolist(), { 2 * 21 * 18, 2 * 21 * 18, 2 * 21 * 18 }, 1e-4, "classifier bias grad")
  T.near(m.aux_classifier[4].bias.grad:tolist(), { 2 * 21 * 18, 2 * 21 * 18, 2 * 21 * 18 }, 1e-4, "aux bias grad")
  local g = m.backbone["0"][0].weight.grad
  T.check(g ~= nil and g:abs():sum():item() > 0, "the stem conv gets a gradient")
  local missing = 0
  for _, p in ipairs(m:parameters()) do if p.grad == nil then missing = missing + 1 end end
  T.eq(missing, 0, "every parameter has a gradient")

  local l = seg.lraspp_mobilenet_v3_large({ num_classes = 2 }):train()
  l(x).out:sum():backward()
  T.near(l.classifier.low_classifier.bias.grad:tolist(), { 2 * 21 * 18, 2 * 21 * 18 }, 1e-4, "lraspp low bias grad")
  T.near(l.classifier.high_classifier.bias.grad:tolist(), { 2 * 21 * 18, 2 * 21 * 18 }, 1e-4, "lraspp high bias grad")

  local v = video.r2plus1d_18({ num_classes = 3 }):train()
  v(torch.randn(2, 3, 2, 16, 16)):sum():backward()
  T.near(v.fc.bias.grad:tolist(), { 2, 2, 2 }, 1e-6, "video fc bias grad = N")
  T.check(v.stem[0].weight.grad:abs():sum():item() > 0, "video stem gets a gradient")

  -- float64 finite differences through the heads (eval: BatchNorm uses its running statistics)
  local f64 = { dtype = torch.float64 }
  local head = seg.lraspp.LRASPPHead(3, 4, 2, 5):to(torch.float64):eval()
  gradcheck("LRASPPHead", function(low, high) return head({ low = low, high = high }) end,
    { torch.randn(1, 3, 5, 4, f64), torch.randn(1, 4, 2, 3, f64) })
  local aspp = seg.deeplabv3.ASPP(3, { 1, 2 }, 4):to(torch.float64):eval()
  gradcheck("ASPP", function(t) return aspp(t) end, { torch.randn(1, 3, 4, 5, f64) })
  local c = video.resnet.Conv2Plus1D(2, 3, 4, 2):to(torch.float64):eval()
  gradcheck("Conv2Plus1D", function(t) return c(t) end, { torch.randn(1, 2, 3, 4, 4, f64) })
end)

T.test("IntermediateLayerGetter", function()
  local IL = models._utils.IntermediateLayerGetter
  local net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2), nn.Tanh())
  local g = IL(net, { ["0"] = "a", ["2"] = "b" })
  T.eq(g:keys(), { "0", "1", "2" }, "children up to the last returned one")
  local x = torch.randn(5, 3)
  local out = g(x)
  T.eq(out:keys(), { "a", "b" }, "outputs in the model's order")
  local a = net[0](x)
  T.near(out.a:tolist(), a:tolist(), 1e-6, "first output")
  T.near(out.b:tolist(), net[2](net[1](a)):tolist(), 1e-6, "second output")
  T.eq(g:state_dict():keys(), { "0.weight", "0.bias", "2.weight", "2.bias" }, "keys")
  T.raises(function() IL(net, { ["7"] = "x" }) end, "return_layers are not present in model", "unknown child")
  T.raises(function() IL(42, {}) end, "IntermediateLayerGetter: model must be a Module, got int", "not a module")
end)

T.test("errors", function()
  T.raises(function() seg.fcn_resnet50({ weights = "DEFAULT" }) end,
    "~fcn_resnet50: weights=FCN_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1 " ..
    "(https://download.pytorch.org/models/fcn_resnet50_coco-1167a1af.pth) asks for pretrained weights, but nnrepl " ..
    "downloads nothing", "weights")
  T.raises(function() seg.deeplabv3_resnet101({ weights_backbone = models.ResNet101_Weights.IMAGENET1K_V2 }) end,
    "~deeplabv3_resnet101: weights_backbone=ResNet101_Weights.IMAGENET1K_V2 (https://download.pytorch.org/models/" ..
    "resnet101-cd907fc2.pth) asks for pretrained weights", "weights_backbone")
  T.raises(function() seg.lraspp_mobilenet_v3_large({ weights_backbone = models.ResNet50_Weights.DEFAULT }) end,
    "~Invalid Weight class provided; expected MobileNet_V3_Large_Weights but received ResNet50_Weights",
    "weights_backbone of another model")
  T.raises(function() seg.fcn_resnet50({ weights = seg.DeepLabV3_ResNet50_Weights.DEFAULT }) end,
    "~expected FCN_ResNet50_Weights but received DeepLabV3_ResNet50_Weights", "weights of another model")
  T.raises(function() seg.fcn_resnet101({ pretrained_backbone = true }) end, "~pretrained_backbone=True asks for",
    "pretrained_backbone")
  T.raises(function() video.r3d_18({ pretrained = true }) end, "~r3d_18: pretrained=True asks for", "pretrained")
  T.raises(function() video.s3d({ weights = video.S3D_Weights.KINETICS400_V1 }) end,
    "~s3d: weights=S3D_Weights.KINETICS400_V1 (https://download.pytorch.org/models/s3d-d76dad2f.pth) asks for",
    "s3d weights")
  T.raises(function() seg.lraspp_mobilenet_v3_large({ aux_loss = true }) end,
    "lraspp_mobilenet_v3_large: This model does not use auxiliary loss (aux_loss must be nil or false)", "lraspp aux")
  T.raises(function() seg.fcn_resnet50({ num_class = 3 }) end, "~num_class", "unknown key named")
  T.raises(function() seg.fcn_resnet50(3) end, "~fcn_resnet50() takes keyword arguments only", "positional")
  T.raises(function() seg.deeplabv3_resnet50({ num_classes = 0 }) end, "~num_classes", "num_classes 0")
  T.raises(function() video.mc3_18({ num_classes = 0 }) end, "~num_classes", "video num_classes 0")
  T.raises(function() video.VideoResNet(video.resnet.BasicBlock, { video.resnet.Conv3DSimple }, { 2, 2, 2, 2 },
    video.resnet.BasicStem) end, "VideoResNet: conv_makers and layers need 4 entries each", "VideoResNet lists")
  local err = T.errmsg(function() seg.fcn_resnet50({ weights = "DEFAULT" }) end)
  T.check(err ~= nil and not err:find("tv_models"), "the error points at the caller: " .. tostring(err))
end)

T.test("registry and submodules", function()
  T.eq(models.list_models({ module = seg }), { "deeplabv3_mobilenet_v3_large", "deeplabv3_resnet101",
    "deeplabv3_resnet50", "fcn_resnet101", "fcn_resnet50", "lraspp_mobilenet_v3_large" }, "list_models(segmentation)")
  T.eq(models.list_models({ module = video }), { "mc3_18", "r2plus1d_18", "r3d_18", "s3d" }, "list_models(video)")
  local cls = models.list_models({ module = models })
  local all = models.list_models()
  T.eq(#all, #cls + 18, "list_models() lists every family")
  T.eq(models.list_models({ module = models.detection }), { "fasterrcnn_mobilenet_v3_large_320_fpn",
    "fasterrcnn_mobilenet_v3_large_fpn", "fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2", "maskrcnn_resnet50_fpn",
    "maskrcnn_resnet50_fpn_v2", "retinanet_resnet50_fpn", "retinanet_resnet50_fpn_v2" }, "list_models(detection)")
  T.check(not MU.contains(cls, "fcn_resnet50") and MU.contains(all, "fcn_resnet50"), "classification list excludes fcn")
  T.eq(models.list_models({ module = video, include = "r*" }), { "r2plus1d_18", "r3d_18" }, "include within a module")
  T.raises(function() models.list_models({ module = {} }) end, "~list_models: module must be", "unknown module")
  T.check(models.fcn_resnet50 == nil and models.r3d_18 == nil, "not in torchvision.models' namespace, as in torchvision")
  T.eq(models.get_model_builder("fcn_resnet50"), seg.fcn_resnet50, "get_model_builder")
  T.eq(models.get_model_weights(video.r3d_18), video.R3D_18_Weights, "get_model_weights(builder)")
  T.eq(models.get_weight("LRASPP_MobileNet_V3_Large_Weights.COCO_WITH_VOC_LABELS_V1").meta.num_params, 3221538,
    "get_weight")
  T.eq(models.get_weight("S3D_Weights.KINETICS400_V1").meta.min_temporal_size, 14, "S3D_Weights meta")
  T.eq(unfilled(models.get_model, "mc3_18", { num_classes = 3 }).fc.out_features, 3, "get_model builds mc3_18")
  T.eq(seg.fcn.FCN, seg.FCN, "segmentation.fcn.FCN")
  T.eq(seg.deeplabv3.FCNHead, seg.fcn.FCNHead, "deeplabv3 imports FCNHead")
  T.eq(seg.lraspp.lraspp_mobilenet_v3_large, seg.lraspp_mobilenet_v3_large, "segmentation.lraspp builder")
  T.eq(video.resnet.r3d_18, video.r3d_18, "video.resnet.r3d_18")
  T.check(video.BasicBlock == nil and video.resnet.BasicBlock ~= nil, "video's blocks live in video.resnet")
  T.eq(models.resnet.resnet50, models.resnet50, "models.resnet.resnet50")
  T.eq(models.resnet.ResNet, models.ResNet, "models.resnet.ResNet")
  T.eq(models.resnet.Bottleneck, models.Bottleneck, "models.resnet.Bottleneck")
  T.eq(models.resnet.ResNet50_Weights, models.ResNet50_Weights, "models.resnet.ResNet50_Weights")
  T.check(models.resnet.vgg11 == nil and models.resnet.ResNeXt50_32X4D_Weights ~= nil, "resnet family only")
  T.eq(models.vgg.make_layers, models.vgg_make_layers, "models.vgg.make_layers")
  T.eq(models.mobilenetv3.InvertedResidual, models.InvertedResidualV3, "mobilenetv3.InvertedResidual")
  T.eq(models.mobilenetv2.InvertedResidual, models.InvertedResidual, "mobilenetv2.InvertedResidual")
  T.eq(models.mobilenet.mobilenet_v3_small, models.mobilenet_v3_small, "mobilenet re-exports v3")
  T.eq(models.densenet.densenet121, models.densenet121, "densenet")
  T.eq(models.swin_transformer.Swin_T_Weights, models.Swin_T_Weights, "swin_transformer gets its enums")
  T.eq(models.maxvit.maxvit_t, models.maxvit_t, "maxvit gets its builder")
  T.eq(type(models.alexnet), "function", "models.alexnet stays the builder")
end)

T.test("weights transforms", function()
  local t = seg.FCN_ResNet50_Weights.DEFAULT.transforms()
  T.eq(tostring(t), "SemanticSegmentation(\n    resize_size=[520]\n    mean=[0.485, 0.456, 0.406]\n" ..
    "    std=[0.229, 0.224, 0.225]\n    interpolation=InterpolationMode.BILINEAR\n)", "SemanticSegmentation repr")
  local img = torch.stack({ torch.full({ 40, 60 }, 255), torch.full({ 40, 60 }, 0), torch.full({ 40, 60 }, 51) }):to(torch.uint8)
  local y = t(img)
  T.eq({ y.shape:totable(), y.dtype }, { { 3, 520, 780 }, torch.float32 }, "shorter side to 520, float")
  T.near({ y[0]:mean():item(), y[1]:mean():item(), y[2]:mean():item() },
    { (1 - 0.485) / 0.229, (0 - 0.456) / 0.224, (0.2 - 0.406) / 0.225 }, 1e-5, "rescaled and normalized")
  local v = video.MC3_18_Weights.DEFAULT.transforms()
  T.eq({ v.crop_size, v.resize_size }, { { 112, 112 }, { 128, 171 } }, "VideoClassification sizes")
  local frames = {}
  for t_ = 0, 3 do frames[t_ + 1] = torch.full({ 3, 130, 150 }, 10 * t_) end
  local vid = torch.stack(frames):to(torch.uint8) -- [T, C, H, W]
  local out = v(vid)
  T.eq(out.shape:totable(), { 3, 4, 112, 112 }, "[T, C, H, W] -> [C, T, 112, 112]")
  local mean, std = { 0.43216, 0.394666, 0.37645 }, { 0.22803, 0.22145, 0.216989 }
  local got, want = {}, {}
  for c = 0, 2 do
    for t_ = 0, 3 do
      got[#got + 1] = out[c][t_]:mean():item()
      want[#want + 1] = (10 * t_ / 255 - mean[c + 1]) / std[c + 1]
    end
  end
  T.near(got, want, 1e-5, "channels and frames transposed, normalized")
  T.eq(v(vid:unsqueeze(0)).shape:totable(), { 1, 3, 4, 112, 112 }, "batched clips")
  T.eq(video.S3D_Weights.DEFAULT.transforms().crop_size, { 224, 224 }, "S3D crop")
  T.check(require("torchvision").transforms._presets.VideoClassification ~= nil, "transforms._presets")
end)

if torch.cuda.is_available() then
  T.test("cuda", function()
    torch.manual_seed(2)
    local tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = false
    local _restore <close> = setmetatable({}, { __close = function() torch.backends.cudnn.allow_tf32 = tf32 end })
    local x = torch.randn(2, 3, 27, 22)
    -- a training step on cuda: the closed-form bias gradient
    local m = seg.lraspp_mobilenet_v3_large({ num_classes = 2 }):cuda():train()
    m(x:cuda()).out:sum():backward()
    T.near(m.classifier.low_classifier.bias.grad:cpu():tolist(), { 2 * 27 * 22, 2 * 27 * 22 }, 1e-4, "cuda bias grad")
    local _ <close> = torch.no_grad()
    local function same(name, m, x)
      m:eval()
      local want = m(x)
      m:cuda()
      local got = m(x:cuda())
      if torch.is_tensor(want) then
        T.near(got:cpu():flatten():tolist(), want:flatten():tolist(), 1e-4, name .. " on cuda")
      else
        T.eq(got:keys(), want:keys(), name .. " output names on cuda")
        for _, k in ipairs(want:keys()) do
          T.eq(got[k].device.type, "cuda", name .. " " .. k .. " stays on cuda")
          T.near(got[k]:cpu():flatten():tolist(), want[k]:flatten():tolist(), 1e-4, name .. " " .. k .. " on cuda")
        end
      end
    end
    same("fcn_resnet50", seg.fcn_resnet50({ num_classes = 3, aux_loss = true }), x)
    same("deeplabv3_mobilenet_v3_large", seg.deeplabv3_mobilenet_v3_large({ num_classes = 3, aux_loss = true }), x)
    same("lraspp_mobilenet_v3_large", seg.lraspp_mobilenet_v3_large({ num_classes = 3 }), x)
    local v = torch.randn(2, 3, 4, 24, 24)
    for _, name in ipairs({ "r3d_18", "mc3_18", "r2plus1d_18" }) do same(name, video[name]({ num_classes = 5 }), v) end
    same("s3d", video.s3d({ num_classes = 5 }), torch.randn(1, 3, 16, 224, 224))
  end)
else
  T.skip("no CUDA", 18)
end
