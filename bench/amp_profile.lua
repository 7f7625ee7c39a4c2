-- Where issue 6's AlexNet step spends its GPU time (bench/amp_alexnet.lua's step: batch 64,
-- 227x227, AdamW): 20 steps after 10 of warm-up under torch.profiler, the ops by GPU time, in
-- float32 and under autocast float16. With `ncu` instead of `shapes`, one step after the warm-up
-- runs inside torch.cuda.profiler.profile() and nothing is printed, for Nsight Compute's kernels:
--   ncu --profile-from-start off --metrics gpu__time_duration.sum nnrepl bench/amp_profile.lua amp ncu
-- (bench/amp_profile.py is PyTorch's side of that).
--   nnrepl bench/amp_profile.lua [fp32|amp|both] [shapes|ncu]   (shapes: a row per op and input shapes)
local models = require "torchvision".models
local make_step = dofile((arg[0]:match("^(.*)/") or ".") .. "/train_step.lua")
local which = arg[1] or "both"
local shapes, ncu = arg[2] == "shapes", arg[2] == "ncu"
local dev = torch.device("cuda")
torch.manual_seed(0)
local X, Y = torch.rand(64, 3, 227, 227):to(dev), torch.randint(0, 1000, { 64 }):to(dev)
for _, mode in ipairs({ "fp32", "amp" }) do
  if which == "both" or which == mode then
    torch.manual_seed(0)
    local model = models.alexnet():to(dev)
    local opt = torch.optim.AdamW(model:parameters(), { lr = 1e-4 })
    local step = make_step(model, opt, X, Y, mode == "amp" and torch.float16 or nil)
    for _ = 1, 10 do step() end
    torch.cuda.synchronize()
    if ncu then
      torch.cuda.profiler.profile(step)
      torch.cuda.synchronize()
    else
      local prof = torch.profiler.profile({ activities = { "CPU", "CUDA" }, record_shapes = shapes })
      for _ = 1, 20 do step() end
      torch.cuda.synchronize()
      prof:stop()
      print("== AlexNet " .. mode .. ", 20 steps")
      print(prof:key_averages({ group_by_input_shape = shapes }):table({ sort_by = "self_cuda_time_total", row_limit = shapes and 45 or 25 }))
    end
  end
end
