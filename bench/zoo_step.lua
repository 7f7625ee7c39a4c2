-- Training-step time of common torchvision models on one GPU (SGD with momentum, cross
-- entropy, batch B of 224x224 random images), float32 or autocast float16 + GradScaler.
-- bench/zoo_step.py is PyTorch's side with the same output lines; bench/zoo_run.sh runs both.
--   nnrepl bench/zoo_step.lua fp32|amp B steps reps warmup model1,model2,...
-- Prints per model: "model <name> precision <p> batch <B> step_ms <median> loss <first>-><last>"
local models = require("torchvision").models
local make_step = dofile((arg[0]:match("^(.*)/") or ".") .. "/train_step.lua")
local timing = dofile((arg[0]:match("^(.*)/") or ".") .. "/gpu_step_timing.lua")
local precision, B = arg[1] or "fp32", tonumber(arg[2]) or 32
local steps, reps, warmup = tonumber(arg[3]) or 5, tonumber(arg[4]) or 5, tonumber(arg[5]) or 3
local names = {}
for n in (arg[6] or "resnet18"):gmatch("[^,]+") do names[#names + 1] = n end
assert(precision == "fp32" or precision == "amp", "precision: fp32 or amp")

for _, name in ipairs(names) do
  torch.manual_seed(0)
  local model = models[name]():cuda()
  local x = torch.rand(B, 3, 224, 224, { device = "cuda" })
  local y = torch.randint(0, 1000, { B }, { device = "cuda" })
  local opt = torch.optim.SGD(model:parameters(), { lr = 0.01, momentum = 0.9 })
  local scaler = precision == "amp" and torch.amp.GradScaler("cuda") or nil
  local step = make_step(model, opt, x, y, scaler and torch.float16 or nil, scaler)
  local first = step():float():item()
  for _ = 2, warmup do step() end
  local last
  local ms = timing.timed(function() last = step() end, steps, reps)
  print(string.format("model %s precision %s batch %d step_ms %.3f loss %.4f->%.4f", name, precision, B, ms, first,
    last:float():item()))
  model, opt, scaler, step, x, y = nil, nil, nil, nil, nil, nil
  collectgarbage()
  collectgarbage()
  torch.cuda.empty_cache()
end
