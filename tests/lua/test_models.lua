-- torchvision.models: AlexNet, VGG and ResNet against torchvision's numbers: parameter
-- counts, state_dict keys, output shapes, printing and initialisation. The counts and the
-- printed trees are torchvision's (torchvision.models.X(); sum(p.numel() for p in
-- m.parameters()), list(m.state_dict()), print(m)).
local T = ...
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
local with_hub_dir = dofile(here .. "hub_dir.lua")
local models = require("torchvision").models
local MU = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "model_util.lua")

local count, keys, find, with_init, structure_only = MU.count, MU.keys, MU.contains, MU.with_init, MU.structure_only

local ALEXNET = [[
AlexNet(
  (features): Sequential(
    (0): Conv2d(3, 64, kernel_size=(11, 11), stride=(4, 4), padding=(2, 2))
    (1): ReLU(inplace=True)
    (2): MaxPool2d(kernel_size=3, stride=2, padding=0, dilation=1, ceil_mode=False)
    (3): Conv2d(64, 192, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))
    (4): ReLU(inplace=True)
    (5): MaxPool2d(kernel_size=3, stride=2, padding=0, dilation=1, ceil_mode=False)
    (6): Conv2d(192, 384, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    (7): ReLU(inplace=True)
    (8): Conv2d(384, 256, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    (9): ReLU(inplace=True)
    (10): Conv2d(256, 256, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    (11): ReLU(inplace=True)
    (12): MaxPool2d(kernel_size=3, stride=2, padding=0, dilation=1, ceil_mode=False)
  )
  (avgpool): AdaptiveAvgPool2d(output_size=(6, 6))
  (classifier): Sequential(
    (0): Dropout(p=0.5, inplace=False)
    (1): Linear(in_features=9216, out_features=4096, bias=True)
    (2): ReLU(inplace=True)
    (3): Dropout(p=0.5, inplace=False)
    (4): Linear(in_features=4096, out_features=4096, bias=True)
    (5): ReLU(inplace=True)
    (6): Linear(in_features=4096, out_features=10, bias=True)
  )
)]]

local VGG11 = [[
VGG(
  (features): Sequential(
    (0): Conv2d(3, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    (1): ReLU(inplace=True)
    (2): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    (3): Conv2d(64, 128, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    (4): ReLU(inplace=True)
    (5): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    (6): Conv2d(128, 256, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    (7): ReLU(inplace=True)
    (8): Conv2d(256, 256, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    (9): ReLU(inplace=True)
    (10): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    (11): Conv2d(256, 512, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    (12): ReLU(inplace=True)
    (13): Conv2d(512, 512, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    (14): ReLU(inplace=True)
    (15): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    (16): Conv2d(512, 512, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    (17): ReLU(inplace=True)
    (18): Conv2d(512, 512, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    (19): ReLU(inplace=True)
    (20): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
  )
  (avgpool): AdaptiveAvgPool2d(output_size=(7, 7))
  (classifier): Sequential(
    (0): Linear(in_features=25088, out_features=4096, bias=True)
    (1): ReLU(inplace=True)
    (2): Dropout(p=0.5, inplace=False)
    (3): Linear(in_features=4096, out_features=4096, bias=True)
    (4): ReLU(inplace=True)
    (5): Dropout(p=0.5, inplace=False)
    (6): Linear(in_features=4096, out_features=1000, bias=True)
  )
)]]

-- resnet18's head, its layer2 (the first block with a downsample) and its tail
local RESNET18_HEAD = [[
ResNet(
  (conv1): Conv2d(3, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)
  (bn1): BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
  (relu): ReLU(inplace=True)
  (maxpool): MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)
  (layer1): Sequential(
    (0): BasicBlock(
      (conv1): Conv2d(64, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
      (bn1): BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
      (relu): ReLU(inplace=True)
      (conv2): Conv2d(64, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
      (bn2): BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
    )
]]

local RESNET18_LAYER2 = [[
  (layer2): Sequential(
    (0): BasicBlock(
      (conv1): Conv2d(64, 128, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)
      (bn1): BatchNorm2d(128, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
      (relu): ReLU(inplace=True)
      (conv2): Conv2d(128, 128, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
      (bn2): BatchNorm2d(128, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
      (downsample): Sequential(
        (0): Conv2d(64, 128, kernel_size=(1, 1), stride=(2, 2), bias=False)
        (1): BatchNorm2d(128, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
      )
    )
    (1): BasicBlock(
      (conv1): Conv2d(128, 128, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
      (bn1): BatchNorm2d(128, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
      (relu): ReLU(inplace=True)
      (conv2): Conv2d(128, 128, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
      (bn2): BatchNorm2d(128, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
    )
  )
]]

local RESNET18_TAIL = [[
  (avgpool): AdaptiveAvgPool2d(output_size=(1, 1))
  (fc): Linear(in_features=512, out_features=1000, bias=True)
)]]

-- mean and standard deviation of a tensor's values
local function stats(t)
  local d = t:detach():double():flatten()
  local mean = d:mean():item()
  return mean, math.sqrt(((d - mean) ^ 2):mean():item())
end

T.test("alexnet", function()
  torch.manual_seed(0)
  local m = models.alexnet({ num_classes = 10 })
  T.eq(count(m), 57044810, "alexnet parameters at 10 classes")
  T.eq(keys(m), { "features.0.weight", "features.0.bias", "features.3.weight", "features.3.bias", "features.6.weight",
    "features.6.bias", "features.8.weight", "features.8.bias", "features.10.weight", "features.10.bias",
    "classifier.1.weight", "classifier.1.bias", "classifier.4.weight", "classifier.4.bias", "classifier.6.weight",
    "classifier.6.bias" }, "alexnet state_dict keys")
  T.eq(tostring(m), ALEXNET, "print(alexnet)")
  T.eq(m.features[0].weight.shape:totable(), { 64, 3, 11, 11 }, "features.0.weight shape")
  T.eq(m.classifier[6].weight.shape:totable(), { 10, 4096 }, "classifier.6.weight shape")
  -- default (PyTorch's layer) initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
  local w = m.classifier[6].weight
  local bound = 1 / math.sqrt(4096)
  T.check(w:abs():max():item() <= bound and w:abs():max():item() > 0.9 * bound, "Linear default init bound")
  m:eval()
  local y
  torch.no_grad(function() y = m(torch.randn(1, 3, 227, 227)) end)
  T.eq(y.shape:totable(), { 1, 10 }, "alexnet on 1x3x227x227")
  T.check(y:abs():max():item() < math.huge, "finite output")
  m, y = nil, nil
  collectgarbage()
  local m2 = structure_only(models.AlexNet, 1000, 0.25)
  T.eq(count(m2), 61100840, "alexnet parameters at 1000 classes")
  T.eq(tostring(m2.classifier[3]), "Dropout(p=0.25, inplace=False)", "AlexNet(num_classes, dropout)")
end)
collectgarbage()

T.test("resnet18", function()
  torch.manual_seed(0)
  local m = models.resnet18()
  T.eq(count(m), 11689512, "resnet18 parameters")
  local k = keys(m)
  T.eq(#k, 122, "resnet18 state_dict has 122 entries (62 parameters, 60 batch-norm buffers)")
  T.eq({ k[1], k[2], k[3], k[4], k[5], k[6], k[7] }, { "conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean",
    "bn1.running_var", "bn1.num_batches_tracked", "layer1.0.conv1.weight" }, "first keys")
  T.eq({ k[#k - 1], k[#k] }, { "fc.weight", "fc.bias" }, "last keys")
  for _, key in ipairs({ "layer1.0.bn2.running_var", "layer2.0.downsample.0.weight", "layer2.0.downsample.1.bias",
    "layer3.1.conv2.weight", "layer4.0.downsample.1.num_batches_tracked", "layer4.1.bn2.weight" }) do
    T.check(find(k, key), "resnet18 has key " .. key)
  end
  T.check(not find(k, "layer1.0.downsample.0.weight"), "layer1 has no downsample")
  local s = tostring(m)
  T.eq(s:sub(1, #RESNET18_HEAD), RESNET18_HEAD, "print(resnet18): head")
  T.check(s:find(RESNET18_LAYER2, 1, true) ~= nil, "print(resnet18): layer2 with its downsample")
  T.eq(s:sub(-#RESNET18_TAIL), RESNET18_TAIL, "print(resnet18): tail")
  local _, nlines = s:gsub("\n", "")
  T.eq(nlines + 1, 84, "print(resnet18) has 84 lines")
  -- torchvision's init: kaiming_normal_(fan_out, relu) for convs, BN weight 1 and bias 0
  local _, sd = stats(m.conv1.weight)
  local want = math.sqrt(2 / (64 * 7 * 7))
  T.check(math.abs(sd - want) < 0.05 * want, string.format("conv1 std %.5f, want %.5f", sd, want))
  _, sd = stats(m.layer3[0].conv2.weight)
  want = math.sqrt(2 / (256 * 3 * 3))
  T.check(math.abs(sd - want) < 0.03 * want, string.format("layer3.0.conv2 std %.5f, want %.5f", sd, want))
  T.check(m.layer2[0].bn1.weight:eq(1):all():item() and m.layer2[0].bn1.bias:eq(0):all():item(), "BN weight 1, bias 0")
  T.check(m.layer4[0].downsample[1].weight:eq(1):all():item(), "downsample BN weight 1")
  -- forward and backward in training mode (the blocks add in place, as torchvision's)
  local x = torch.randn(2, 3, 64, 64)
  local y = m(x)
  T.eq(y.shape:totable(), { 2, 1000 }, "resnet18 on 2x3x64x64")
  y:sum():backward()
  T.check(m.conv1.weight.grad ~= nil and m.conv1.weight.grad:abs():sum():item() > 0, "gradients reach conv1")
  T.check(m.layer2[0].downsample[0].weight.grad ~= nil, "gradients reach the downsample")
  T.eq(m.bn1.num_batches_tracked:item(), 1, "training forward counts batches")
  -- the state_dict loads into a fresh resnet18, and the copy computes the same
  local m2 = models.resnet18({ zero_init_residual = true })
  T.check(m2.layer1[0].bn2.weight:eq(0):all():item() and m2.layer1[0].bn1.weight:eq(1):all():item(), "zero_init_residual")
  T.eq(tostring(m2:load_state_dict(m:state_dict())), "<All keys matched successfully>", "load_state_dict")
  m:eval(); m2:eval()
  local a, b
  torch.no_grad(function() a, b = m(x), m2(x) end)
  T.near(a:tolist(), b:tolist(), 1e-5, "loaded copy computes the same")
end)
collectgarbage()

T.test("resnet50", function()
  local r50 = structure_only(models.resnet50)
  T.eq(count(r50), 25557032, "resnet50 parameters")
  local k = keys(r50)
  T.eq(#k, 320, "resnet50 state_dict entries")
  T.check(find(k, "layer1.0.downsample.0.weight") and find(k, "layer1.0.conv3.weight"), "Bottleneck keys")
  T.eq(tostring(r50.layer1[0].conv2), "Conv2d(64, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)",
    "Bottleneck conv2")
  T.eq(tostring(r50.fc), "Linear(in_features=2048, out_features=1000, bias=True)", "resnet50 fc")
end)
collectgarbage()

T.test("vgg11", function()
  -- torchvision's VGG init: convs kaiming_normal_(fan_out, relu), bias 0; Linear N(0, 0.01), bias 0.
  -- Its calls of nn.init are recorded as "name shape args"; constant_ runs (it is cheap), the
  -- random fills do not (see with_init).
  local calls = {}
  local function spy(name, pass)
    return function(t, ...)
      local args = {}
      for i, a in ipairs({ ... }) do
        if type(a) == "table" then args[i] = "{mode=" .. tostring(a.mode) .. ", nonlinearity=" .. tostring(a.nonlinearity) .. "}"
        else args[i] = tostring(a) end
      end
      calls[#calls + 1] = name .. " " .. tostring(t.shape) .. " " .. table.concat(args, " ")
      if pass then return pass(t, ...) end
      return t
    end
  end
  local m = with_init({ kaiming_normal_ = spy("kaiming_normal_"), normal_ = spy("normal_"),
    constant_ = spy("constant_", nn.init.constant_) }, models.vgg11)
  local want = {}
  local convs = { { 64, 3 }, { 128, 64 }, { 256, 128 }, { 256, 256 }, { 512, 256 }, { 512, 512 }, { 512, 512 }, { 512, 512 } }
  for _, c in ipairs(convs) do
    want[#want + 1] = string.format("kaiming_normal_ torch.Size([%d, %d, 3, 3]) {mode=fan_out, nonlinearity=relu}", c[1], c[2])
    want[#want + 1] = string.format("constant_ torch.Size([%d]) 0", c[1])
  end
  for _, l in ipairs({ { 4096, 25088 }, { 4096, 4096 }, { 1000, 4096 } }) do
    want[#want + 1] = string.format("normal_ torch.Size([%d, %d]) 0 0.01", l[1], l[2])
    want[#want + 1] = string.format("constant_ torch.Size([%d]) 0", l[1])
  end
  T.eq(calls, want, "vgg11's init calls, in module order")
  T.check(m.classifier[6].bias:eq(0):all():item() and m.features[3].bias:eq(0):all():item(), "biases 0")
  T.eq(count(m), 132863336, "vgg11 parameters")
  local k = keys(m)
  T.eq(#k, 22, "vgg11 state_dict entries")
  T.eq({ k[1], k[2], k[3], k[#k - 1], k[#k] }, { "features.0.weight", "features.0.bias", "features.3.weight",
    "classifier.6.weight", "classifier.6.bias" }, "vgg11 first and last keys")
  T.eq(tostring(m), VGG11, "print(vgg11)")
  m = nil
  collectgarbage()
  local bn = structure_only(models.vgg11_bn, { num_classes = 10 })
  T.eq(count(bn), 128812810, "vgg11_bn parameters at 10 classes")
  k = keys(bn)
  T.eq(#k, 62, "vgg11_bn state_dict entries")
  T.eq({ k[3], k[4], k[5], k[6], k[7] }, { "features.1.weight", "features.1.bias", "features.1.running_mean",
    "features.1.running_var", "features.1.num_batches_tracked" }, "vgg11_bn keys")
  T.eq(tostring(bn.features[1]), "BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)",
    "vgg11_bn features.1")
  T.eq(tostring(bn.features[28]), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
    "vgg11_bn has 29 feature layers")
  bn:eval()
  local y
  torch.no_grad(function() y = bn(torch.randn(1, 3, 32, 32)) end)
  T.eq(y.shape:totable(), { 1, 10 }, "vgg11_bn on 1x3x32x32 (avgpool pads 1x1 up to 7x7)")
end)
collectgarbage()

T.test("builders' arguments", function()
  with_hub_dir(function(cache) -- an empty cache: weights= names the file to put there
    T.raises(function() return models.alexnet({ weights = "IMAGENET1K_V1" }) end,
      "torch.hub.load_state_dict_from_url: alexnet-owt-7be5be79.pth is not in the cache, and nnrepl downloads nothing " ..
      "at run time: fetch https://download.pytorch.org/models/alexnet-owt-7be5be79.pth on a machine with network and put " ..
      "it at " .. cache .. "alexnet-owt-7be5be79.pth")
    T.raises(function() return models.resnet18({ weights = "DEFAULT" }) end, "~put it at " .. cache .. "resnet18-f37072fd.pth")
    T.raises(function() return models.vgg11({ pretrained = true }) end, "~put it at " .. cache .. "vgg11-8a719046.pth")
    T.raises(function() return models.resnet18({ weights = "IMAGENET1K_V9" }) end, "~Invalid value IMAGENET1K_V9 for enum ResNet18_Weights.")
  end)
  T.raises(function() return models.alexnet({ num_class = 10 }) end,
    "bad argument #1 to 'alexnet' (unknown keyword 'num_class')")
  T.raises(function() return models.alexnet(10) end, "alexnet() takes keyword arguments only, as alexnet({num_classes=10})")
  T.raises(function() return models.AlexNet(0) end, "AlexNet: num_classes must be at least 1, got 0")
  local err = T.errmsg(function() return models.alexnet({ bogus = 1 }) end)
  local ok, e2 = pcall(function() return models.alexnet({ bogus = 1 }) end)
  T.check(not ok and tostring(e2):find("test_models.lua", 1, true) ~= nil, "errors point at the caller: " .. tostring(e2))
  T.check(err ~= nil, "unknown keyword raises")
  local names = models.list_models()
  T.check(find(names, "alexnet") and find(names, "resnet18") and find(names, "vgg11_bn"), "list_models")
  local r = structure_only(models.get_model, "resnet18", { num_classes = 3, weights = false, progress = false })
  T.eq(r.fc.out_features, 3, "get_model with num_classes; weights=false and progress are accepted")
  T.raises(function() return models.get_model("nope") end, "Unknown model nope")
  T.check(nn.isinstance(r.layer1[0], models.BasicBlock), "models.BasicBlock is the block class")
end)
collectgarbage()

-- Every nn.Linear's weight reaches addmm as weight.t() (column-major); its gradient is
-- computed column-major so that .grad is stored without a copy. The values must not change.
T.test("column-major addmm operand gradients", function()
  torch.manual_seed(3)
  local x = torch.randn(5, 7):double()
  local W = torch.randn(3, 7):double():requires_grad_()
  local b = torch.randn(3):double():requires_grad_()
  local g = torch.randn(5, 3):double()
  F.linear(x, W, b):backward(g)
  T.near(W.grad:tolist(), g:t():matmul(x):tolist(), 1e-12, "linear weight gradient")
  T.check(W.grad:is_contiguous(), "weight gradient is contiguous")
  T.near(b.grad:tolist(), g:sum(0):tolist(), 1e-12, "linear bias gradient")
  local B = torch.randn(3, 7):double():t():detach():requires_grad_() -- a column-major leaf [7, 3]
  local A = torch.randn(5, 7):double():requires_grad_()
  torch.addmm(torch.randn(3):double(), A, B, { beta = 0.5, alpha = 2 }):backward(g)
  T.near(B.grad:tolist(), (A:detach():t():matmul(g) * 2):tolist(), 1e-12, "addmm column-major mat2 gradient")
  T.near(A.grad:tolist(), (g:matmul(B:detach():t()) * 2):tolist(), 1e-12, "addmm mat1 gradient")
  -- a batched input goes through matmul, whose weight gradient folds the batch into the rows
  local x3 = torch.randn(2, 4, 7):double():requires_grad_()
  local g3 = torch.randn(2, 4, 3):double()
  W.grad = nil
  local prof = torch.profiler.profile({ activities = { "CPU" } })
  F.linear(x3, W):backward(g3)
  prof:stop()
  local copies = 0
  for _, e in ipairs(prof:events()) do if e.name == "copy" then copies = copies + 1 end end
  T.eq(copies, 0, "batched linear: no copy in forward or backward (the weight gradient is stored as computed)")
  local want = torch.zeros(3, 7):double()
  for i = 0, 1 do want = want + g3[i]:t():matmul(x3[i]:detach()) end
  T.near(W.grad:tolist(), want:tolist(), 1e-12, "batched linear weight gradient")
  T.near(x3.grad:tolist(), g3:matmul(W:detach()):tolist(), 1e-12, "batched linear input gradient")
  local V = torch.randn(3, 7):double():t():detach():requires_grad_() -- column-major [7, 3] through matmul
  torch.matmul(x3:detach(), V):backward(g3)
  local wantV = torch.zeros(7, 3):double()
  for i = 0, 1 do wantV = wantV + x3[i]:detach():t():matmul(g3[i]) end
  T.near(V.grad:tolist(), wantV:tolist(), 1e-12, "matmul column-major operand gradient")
end)

-- A batched nn.Linear with a bias runs as one addmm over the rows (on CUDA the bias is added in
-- the GEMM's epilogue) and views the result back, as PyTorch's linear: no separate add.
T.test("batched linear: one addmm, viewed back", function()
  torch.manual_seed(4)
  local x = torch.randn(2, 3, 4, 5):double():requires_grad_()
  local lin = nn.Linear(5, 6):double()
  local prof = torch.profiler.profile({ activities = { "CPU" } })
  local y = lin(x)
  prof:stop()
  local names = {}
  for _, e in ipairs(prof:events()) do names[#names + 1] = e.name end
  T.eq(names, { "copy", "bmm" }, "the bias copied into the output, then one product")
  T.eq({ y.grad_fn:name(), y:size() }, { "ViewBackward0", torch.Size({ 2, 3, 4, 6 }) }, "grad_fn and shape")
  local want = x:detach():reshape(24, 5):matmul(lin.weight:detach():t()) + lin.bias:detach()
  T.near(y:detach():reshape(24, 6):tolist(), want:tolist(), 1e-12, "values")
  local g = torch.randn(2, 3, 4, 6):double()
  y:backward(g)
  local g2 = g:reshape(24, 6)
  T.near(lin.weight.grad:tolist(), g2:t():matmul(x:detach():reshape(24, 5)):tolist(), 1e-12, "weight gradient")
  T.near(lin.bias.grad:tolist(), g2:sum(0):tolist(), 1e-12, "bias gradient")
  T.near(x.grad:tolist(), g:matmul(lin.weight:detach()):tolist(), 1e-12, "input gradient")
end)
