-- scripts/examples/fast_neural_style's pieces: utils (gram_matrix and normalize_batch against
-- plain Lua loops, save_image / load_image), TransformerNet's layers and shapes (the state_dict
-- keys PyTorch's model has), Vgg16's slices of torchvision's VGG16 features, and the
-- --export_onnx path: the exported file run by tests/lua/onnx_ref.lua's plain-Lua interpreter.
local T = ...
local here = debug.getinfo(1, "S").source:match("^@(.*/)")
package.path = here .. "../../scripts/examples/fast_neural_style/?.lua;" .. package.path
local utils = require "utils"
local TN = require "transformer_net"
local Vgg16 = require("vgg").Vgg16
local R = dofile(here .. "onnx_ref.lua")

local function gram_by_loops(y)
  local b, ch, h, w = y:size(0), y:size(1), y:size(2), y:size(3)
  local v = y:double()
  local out = {}
  for n = 0, b - 1 do
    for i = 0, ch - 1 do
      for j = 0, ch - 1 do
        local s = 0
        for p = 0, h - 1 do
          for q = 0, w - 1 do s = s + v[n][i][p][q]:item() * v[n][j][p][q]:item() end
        end
        out[#out + 1] = s / (ch * h * w)
      end
    end
  end
  return out
end

local function check_utils(device)
  torch.manual_seed(3)
  local y = torch.randn(2, 3, 4, 5, { device = device })
  local g = utils.gram_matrix(y)
  T.eq(tostring(g.shape), "torch.Size([2, 3, 3])")
  local want = gram_by_loops(y:cpu())
  local flat = g:cpu():double():reshape(-1)
  local worst = 0
  for k = 1, #want do worst = math.max(worst, math.abs(flat[k - 1]:item() - want[k])) end
  T.check(worst < 1e-6, device .. ": gram_matrix against loops, worst " .. worst)

  local batch = torch.tensor({ { { { 0., 255. } }, { { 51., 102. } }, { { 127.5, 25.5 } } } }, { device = device })
  local n = utils.normalize_batch(batch)
  local mean, std = { 0.485, 0.456, 0.406 }, { 0.229, 0.224, 0.225 }
  local raw = { { 0, 255 }, { 51, 102 }, { 127.5, 25.5 } }
  for c = 1, 3 do
    for k = 1, 2 do
      T.near(n[0][c - 1][0][k - 1]:item(), (raw[c][k] / 255 - mean[c]) / std[c], 1e-5)
      T.near(batch[0][c - 1][0][k - 1]:item(), raw[c][k] / 255, 1e-6, "divided by 255 in place, as the original")
    end
  end
end

T.test("utils", function()
  check_utils("cpu")
  local path = os.tmpname() .. ".png"
  local data = torch.tensor({ { { -3., 10.7 }, { 300., 128.2 } }, { { 0., 1. }, { 2., 3. } }, { { 255., 254.9 }, { 7., 8. } } })
  utils.save_image(path, data)
  local img = utils.load_image(path)
  T.eq(img.size[1], 2)
  local back = require("torchvision").transforms.PILToTensor()(img)
  -- clamped to 0..255 and truncated, as numpy's astype("uint8")
  T.eq(back:tolist(), { { { 0, 10 }, { 255, 128 } }, { { 0, 1 }, { 2, 3 } }, { { 255, 254 }, { 7, 8 } } })
  local big = torch.rand(3, 20, 30) * 255
  utils.save_image(path, big)
  T.eq(utils.load_image(path, 8).size, { 8, 8 }, "size: size x size")
  T.eq(utils.load_image(path, nil, 4).size, { 7, 5 }, "scale: int(w / scale), int(h / scale)")
  T.eq(utils.load_image(path, { scale = 2.5 }).size, { 12, 8 })
  os.remove(path)
end)

T.test("TransformerNet", function()
  torch.manual_seed(0)
  local net = TN.TransformerNet()
  local sd = net:state_dict()
  T.eq(#sd, 2 * 16 + 2 * 15, "16 convolutions and 15 affine instance norms, no running stats")
  T.eq(tostring(sd["conv1.conv2d.weight"].shape), "torch.Size([32, 3, 9, 9])")
  T.eq(tostring(sd["res3.in2.weight"].shape), "torch.Size([128])")
  T.eq(tostring(sd["deconv1.conv2d.weight"].shape), "torch.Size([64, 128, 3, 3])")
  T.eq(tostring(sd["deconv3.conv2d.bias"].shape), "torch.Size([3])")
  T.eq(tostring(net(torch.rand(2, 3, 16, 12) * 255).shape), "torch.Size([2, 3, 16, 12])")
  -- ConvLayer: reflection padding, so a constant image stays constant before the bias
  local c = TN.ConvLayer(1, 1, 3, 1)
  c.conv2d.weight.data:fill_(1)
  c.conv2d.bias.data:fill_(0)
  local out = c(torch.full({ 1, 1, 4, 4 }, 2.0))
  T.eq(out:min():item(), 18.0)
  T.eq(out:max():item(), 18.0)
  local u = TN.UpsampleConvLayer(1, 1, 1, 1, 2)
  u.conv2d.weight.data:fill_(1)
  u.conv2d.bias.data:fill_(0)
  T.eq(u(torch.tensor({ { { { 1., 2. } } } })):tolist(), { { { { 1.0, 1.0, 2.0, 2.0 }, { 1.0, 1.0, 2.0, 2.0 } } } }, "nearest x2")
end)

T.test("Vgg16 slices", function()
  local vgg = Vgg16(false, true)
  local names = {}
  for name in pairs(vgg:state_dict()) do names[#names + 1] = name end
  T.eq(table.concat(names, " "), "slice1.0.weight slice1.0.bias slice1.2.weight slice1.2.bias slice2.5.weight " ..
    "slice2.5.bias slice2.7.weight slice2.7.bias slice3.10.weight slice3.10.bias slice3.12.weight slice3.12.bias " ..
    "slice3.14.weight slice3.14.bias slice4.17.weight slice4.17.bias slice4.19.weight slice4.19.bias slice4.21.weight " ..
    "slice4.21.bias")
  for _, p in ipairs(vgg:parameters()) do T.check(not p.requires_grad, "requires_grad=False freezes VGG") end
  local out = vgg(torch.randn(1, 3, 16, 16))
  T.eq(#out, 4)
  T.check(out.relu2_2 == out[2] and out.relu4_3 == out[4], "fields and positions")
  T.eq(tostring(out.relu1_2.shape), "torch.Size([1, 64, 16, 16])")
  T.eq(tostring(out.relu3_3.shape), "torch.Size([1, 256, 4, 4])")
  T.eq(tostring(out.relu4_3.shape), "torch.Size([1, 512, 2, 2])")
  T.check(out.relu4_3:min():item() >= 0, "each slice ends in a ReLU")
  T.check(Vgg16(true, true):parameters()[1].requires_grad, "requires_grad=True leaves them trainable")
end)

T.test("--export_onnx: the exported model gives the model's output", function()
  torch.manual_seed(1)
  local net = TN.TransformerNet():eval()
  local x = torch.rand(1, 3, 8, 8) * 255
  local path = os.tmpname() .. ".onnx"
  torch.onnx.export(net, x, path, { opset_version = 13 })
  local got = R.run_model(R.read_model(path), { input_0 = R.from_tensor(x) })[1]
  local want = R.from_tensor(torch.no_grad(function() return net(x) end))
  T.eq(got.shape, want.shape)
  local worst, scale = 0, 0
  for j = 1, #want.data do
    worst = math.max(worst, math.abs(got.data[j] - want.data[j]))
    scale = math.max(scale, math.abs(want.data[j]))
  end
  T.check(worst <= 1e-4 * scale, string.format("max difference %g (largest value %g)", worst, scale))
  os.remove(path)
end)

if torch.cuda.is_available() then
  T.test("on cuda", function()
    check_utils("cuda")
    -- cuDNN's TF32 convolutions (on by default, as in PyTorch) round to 1e-3; compare full float32
    local tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = false
    torch.manual_seed(0)
    local net = TN.TransformerNet()
    local x = torch.rand(2, 3, 16, 16) * 255
    local want = net(x)
    local got = net:to("cuda")(x:to("cuda"))
    T.check((got:cpu() - want):abs():max():item() < 1e-3 * want:abs():max():item(), "TransformerNet on cuda")
    local vgg = Vgg16(false, true)
    local w = vgg(x)
    local g = vgg:to("cuda")(x:to("cuda"))
    T.check((g.relu4_3:cpu() - w.relu4_3):abs():max():item() <= 1e-3 * w.relu4_3:abs():max():item(), "Vgg16 on cuda")
    torch.backends.cudnn.allow_tf32 = tf32
  end)
else
  T.skip("no CUDA: the cuda checks")
end
