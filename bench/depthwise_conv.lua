-- Depthwise convolutions (groups = channels) of ConvNeXt, MobileNetV3 and EfficientNet at batch
-- 32 on the GPU: forward, input gradient and weight gradient timed apart (CUDA events, median
-- of 5 repeats of 10 calls after a warm-up). bench/depthwise_conv.py is PyTorch's side.
--   nnrepl bench/depthwise_conv.lua [fp32|fp16] [benchmark: 0|1]
-- Prints per shape: "dw C H k s <c> <h> <k> <s> fwd_us <t> bwd_input_us <t> bwd_weight_us <t>"
local dtype = (arg[1] or "fp32") == "fp16" and torch.float16 or torch.float32
torch.backends.cudnn.benchmark = arg[2] == "1"
local SHAPES = { { 96, 56, 7, 1 }, { 192, 28, 7, 1 }, { 384, 14, 7, 1 }, { 768, 7, 7, 1 }, { 32, 112, 3, 1 },
  { 144, 56, 3, 2 }, { 240, 28, 5, 1 }, { 672, 14, 5, 1 }, { 960, 7, 5, 1 } }
local N, reps, calls = 32, 5, 10

local function median_us(fn)
  for _ = 1, 3 do fn() end
  local times = {}
  for r = 1, reps do
    local e0, e1 = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
    e0:record()
    for _ = 1, calls do fn() end
    e1:record()
    e1:synchronize()
    times[r] = e0:elapsed_time(e1) / calls * 1e3
  end
  table.sort(times)
  return times[(reps + 1) // 2]
end

for _, s in ipairs(SHAPES) do
  local C, H, k, stride = s[1], s[2], s[3], s[4]
  torch.manual_seed(0)
  local x = torch.randn(N, C, H, H, { device = "cuda", dtype = dtype })
  local w = torch.randn(C, 1, k, k, { device = "cuda", dtype = dtype })
  local pad = k // 2
  local function conv(a, b) return F.conv2d(a, b, nil, stride, pad, 1, C) end
  local g = torch.randn_like(conv(x, w))
  local fwd = median_us(function() conv(x, w) end)
  local xi, wi = x:clone():requires_grad_(true), w:clone()
  local bin = median_us(function() torch.autograd.grad(conv(xi, wi), { xi }, g) end) - fwd
  local xw, ww = x:clone(), w:clone():requires_grad_(true)
  local bw = median_us(function() torch.autograd.grad(conv(xw, ww), { ww }, g) end) - fwd
  print(string.format("dw C H k s %d %d %d %d fwd_us %.1f bwd_input_us %.1f bwd_weight_us %.1f", C, H, k, stride, fwd, bin, bw))
end
