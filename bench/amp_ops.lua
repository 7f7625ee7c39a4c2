-- The AlexNet autocast step's ops other than convolutions and matmuls, one at a time on
-- cuda:0, in microseconds per call (bench/op_timer.lua). bench/amp_ops.py times the same in
-- PyTorch; bench/device_run.sh prints both side by side.   nnrepl bench/amp_ops.lua [iters] [reps]
local iters, reps = tonumber(arg[1]) or 50, tonumber(arg[2]) or 7
local dev = torch.device(os.getenv("AMP_OPS_DEVICE") or "cuda")
torch.manual_seed(0)

local time = dofile(arg[0]:match("^(.*)/") .. "/op_timer.lua")(iters, reps, dev)

-- conv outputs' gradients of AlexNet at batch 64, reduced to the biases' gradients
local shapes = { { 64, 64, 55, 55 }, { 64, 192, 27, 27 }, { 64, 384, 13, 13 }, { 64, 256, 13, 13 } }
for _, dt in ipairs({ torch.float16, torch.float32 }) do
  local name = dt == torch.float16 and "f16" or "f32"
  for _, s in ipairs(shapes) do
    local g = torch.randn(s, { device = dev }):to(dt)
    time(string.format("sum023_%s_%dx%d", name, s[2], s[3]), function() return g:sum({ 0, 2, 3 }) end)
  end
  for _, s in ipairs({ shapes[1], shapes[3] }) do
    local g = torch.randn(s, { device = dev }):to(dt):contiguous({ memory_format = torch.channels_last })
    time(string.format("sum023_cl_%s_%dx%d", name, s[2], s[3]), function() return g:sum({ 0, 2, 3 }) end)
  end
  local h = torch.randn({ 64, 9216 }, { device = dev }):to(dt)
  time("dropout_" .. name .. "_64x9216", function() return F.dropout(h, 0.5, true) end)
  local u = torch.rand({ 64, 9216 }, { device = dev }):to(dt)
  time("lt_" .. name .. "_64x9216", function() return u:lt(0.5) end)
  time("rand_like_" .. name .. "_64x9216", function() return torch.rand_like(u) end)
end
local w = torch.randn({ 4096, 9216 }, { device = dev })
local w16 = w:half()
time("cast_f32_to_f16_4096x9216", function() return w:half() end)
time("cast_f16_to_f32_4096x9216", function() return w16:float() end)
local x = torch.randn({ 64, 256, 13, 13 }, { device = dev }):half():requires_grad_(true)
local gp = torch.randn({ 64, 256, 6, 6 }, { device = dev }):half()
time("max_pool2d_fwd_bwd_f16_256x13", function()
  x.grad = nil
  F.max_pool2d(x, 3, 2):backward(gp)
end)
-- AlexNet's first pool, float16 and float32, in each layout
for _, dt in ipairs({ torch.float16, torch.float32 }) do
  for _, cl in ipairs({ false, true }) do
    local xp = torch.randn({ 64, 64, 55, 55 }, { device = dev }):to(dt)
    local gq = torch.randn({ 64, 64, 27, 27 }, { device = dev }):to(dt)
    if cl then
      xp = xp:contiguous({ memory_format = torch.channels_last })
      gq = gq:contiguous({ memory_format = torch.channels_last })
    end
    local tag = string.format("%s%s_64x55", cl and "cl_" or "", dt == torch.float16 and "f16" or "f32")
    time("max_pool2d_fwd_" .. tag, function() return F.max_pool2d(xp, 3, 2) end)
    xp:requires_grad_(true)
    time(string.format("max_pool2d_fwd_bwd_%s%s_64x55", cl and "cl_" or "", dt == torch.float16 and "f16" or "f32"), function()
      xp.grad = nil
      F.max_pool2d(xp, 3, 2):backward(gq)
    end)
  end
end

-- NCHW <-> channels-last copies (cuDNN's staged operands), and a 3-channel image into the first
-- channels of a zeroed 4-channel channels-last tensor (conv2d's padded input)
local CL = { memory_format = torch.channels_last }
for _, dt in ipairs({ torch.float16, torch.float32 }) do
  local name = dt == torch.float16 and "f16" or "f32"
  local a = torch.randn({ 64, 64, 56, 56 }, { device = dev }):to(dt)
  local ac = a:contiguous(CL)
  time("to_cl_" .. name .. "_64x64x56", function() return a:contiguous(CL) end)
  time("from_cl_" .. name .. "_64x64x56", function() return ac:contiguous() end)
  local img = torch.randn({ 64, 3, 227, 227 }, { device = dev }):to(dt)
  time("to_cl_" .. name .. "_64x3x227", function() return img:contiguous(CL) end)
  local pad = torch.zeros({ 64, 4, 227, 227 }, { device = dev }):to(dt):contiguous(CL)
  local head = pad:narrow(1, 0, 3)
  time("into_cl4_" .. name .. "_64x3x227", function()
    pad:zero_()
    head:copy_(img)
  end)
end

local logits = torch.randn({ 64, 1000 }, { device = dev }):requires_grad_(true)
local target = torch.randint(0, 1000, { 64 }):to(dev)
time("cross_entropy_64x1000", function() return F.cross_entropy(logits, target) end)
time("cross_entropy_fwd_bwd_64x1000", function()
  logits.grad = nil
  F.cross_entropy(logits, target):backward()
end)

local model = require("torchvision").models.alexnet():to(dev)
for _, q in ipairs(model:parameters()) do q.grad = torch.randn_like(q) end
local opt = torch.optim.AdamW(model:parameters(), { lr = 1e-4 })
time("adamw_step_alexnet", function() opt:step() end)
