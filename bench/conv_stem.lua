-- First layers of image networks (few input channels, strided), which the GPU runs on
-- space-to-depth copies: AlexNet's 3 -> 64, 11 x 11, stride 4 at 227 x 227, and ResNet's
-- 3 -> 64, 7 x 7, stride 2 at 224 x 224, batch 64. Per layer, dtype (float16, float32 with TF32,
-- PyTorch's default for convolutions) and layout: the forward, and forward + backward to the
-- weight and bias (the input needs no gradient, as a network's first layer); us per call
-- (bench/op_timer.lua). bench/conv_stem.py times the same in PyTorch.   nnrepl bench/conv_stem.lua [iters] [reps]
local iters, reps = tonumber(arg[1]) or 30, tonumber(arg[2]) or 7
local dev = torch.device("cuda")
torch.manual_seed(0)

local time = dofile(arg[0]:match("^(.*)/") .. "/op_timer.lua")(iters, reps, dev)

local layers = { { "alexnet", 227, 11, 4, 2 }, { "resnet", 224, 7, 2, 3 } }
for _, l in ipairs(layers) do
  local name, size, k, s, p = table.unpack(l)
  for _, dt in ipairs({ torch.float16, torch.float32 }) do
    for _, cl in ipairs({ false, true }) do
      local fmt = cl and torch.channels_last or torch.contiguous_format
      local x = torch.rand({ 64, 3, size, size }, { device = dev }):to(dt):contiguous({ memory_format = fmt })
      local w = (torch.randn({ 64, 3, k, k }, { device = dev }) * 0.05):to(dt):contiguous({ memory_format = fmt }):requires_grad_(true)
      local b = torch.randn({ 64 }, { device = dev }):to(dt):requires_grad_(true)
      local gy = torch.randn_like(F.conv2d(x, w, b, s, p))
      local tag = string.format("%s_%s%s", name, dt == torch.float16 and "f16" or "f32", cl and "_cl" or "")
      time(tag .. "_fwd", function()
        local _ <close> = torch.no_grad()
        return F.conv2d(x, w, b, s, p)
      end)
      time(tag .. "_fwd_bwd", function()
        w.grad, b.grad = nil, nil
        F.conv2d(x, w, b, s, p):backward(gy)
      end)
    end
  end
end
