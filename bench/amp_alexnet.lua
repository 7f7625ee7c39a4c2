-- Issue 6's benchmark: an AlexNet training step (227x227, batch 64, AdamW lr 1e-4, cross
-- entropy) on cuda:0 in float32, under autocast float16, autocast float16 + GradScaler and
-- autocast bfloat16, each also with channels_last (input and model); bench/amp_alexnet.py
-- is PyTorch's side with the same output lines.
--   time: per step, mean over `steps` steps between two synchronisations (no sync inside),
--         median of `reps` repeats after `warmup` steps
--   peak: torch.cuda.max_memory_allocated over the timed steps (model, optimizer state,
--         activations; the input batch stays resident; the check's model is collected first)
--   check: the loss after 20 steps on one fixed batch from the same initial weights, and
--         its relative distance to float32's (issue 6: "within tolerance"; 2% here)
-- Usage: nnrepl bench/amp_alexnet.lua [steps 20] [reps 5] [warmup 5] [batch 64] [img 227]
-- Prints one line per mode:  mode <name> step_ms <t> peak_gib <m> loss20 <l> rel <r>  repeats <t1 t2 ..>
local models = require "torchvision".models
local make_step = dofile((arg[0]:match("^(.*)/") or ".") .. "/train_step.lua")
local steps = tonumber(arg and arg[1]) or 20
local reps = tonumber(arg and arg[2]) or 5
local warmup = tonumber(arg and arg[3]) or 5
local B = tonumber(arg and arg[4]) or 64
local img = tonumber(arg and arg[5]) or 227

if not torch.cuda.is_available() then
  print("amp_alexnet: no GPU, nothing to time")
  return
end
local dev = torch.device("cuda")

torch.manual_seed(0)
local X = torch.rand(B, 3, img, img):to(dev)
local Y = torch.randint(0, 1000, { B }):to(dev)
local X_cl = X:contiguous({ memory_format = torch.channels_last })

-- a fresh model and optimizer from seed 0; one step function for the mode
local function setup(mode)
  torch.manual_seed(0)
  local model = models.alexnet():to(dev)
  if mode.channels_last then model = model:to({ memory_format = torch.channels_last }) end
  local opt = torch.optim.AdamW(model:parameters(), { lr = 1e-4 })
  local scaler = mode.scaler and torch.amp.GradScaler("cuda") or nil
  local x = mode.channels_last and X_cl or X
  return make_step(model, opt, x, Y, mode.dtype, scaler)
end

local modes = {
  { name = "fp32" },
  { name = "autocast_fp16", dtype = torch.float16 },
  { name = "autocast_fp16_gradscaler", dtype = torch.float16, scaler = true },
  { name = "autocast_bf16", dtype = torch.bfloat16 },
}
for i = 1, 4 do
  local m = modes[i]
  modes[#modes + 1] = { name = m.name .. "_cl", dtype = m.dtype, scaler = m.scaler, channels_last = true }
end

local ref_loss
for _, mode in ipairs(modes) do
  -- the check: 20 steps from the same start
  local step = setup(mode)
  local loss
  for _ = 1, 20 do loss = step() end
  local l20 = loss:float():item()
  loss = nil -- its graph's AccumulateGrad nodes hold the check's parameters and gradients (466 MiB)
  if mode.name == "fp32" then ref_loss = l20 end
  -- the timing, on a fresh model (the same work per step)
  step = setup(mode)
  collectgarbage() -- the check's model and optimizer go now, as Python's reference counting frees them
  for _ = 1, warmup do step() end
  torch.cuda.synchronize()
  torch.cuda.reset_peak_memory_stats()
  local times = make_step.timed(step, steps, reps)
  local peak = torch.cuda.max_memory_allocated() / 2 ^ 30
  local rel = math.abs(l20 - ref_loss) / math.abs(ref_loss)
  local each = {}
  for r, t in ipairs(times) do each[r] = string.format("%.3f", t) end
  print(string.format("mode %-28s step_ms %.3f peak_gib %.3f loss20 %.5f rel %.4f%s  repeats %s", mode.name, make_step.median(times), peak, l20, rel,
    rel <= 0.02 and "" or "  OUT OF TOLERANCE", table.concat(each, " ")))
  step = nil
  collectgarbage()
  collectgarbage()
  torch.cuda.empty_cache()
end
