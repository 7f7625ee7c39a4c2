-- Issue 7's benchmark: AlexNet (227x227, AdamW lr 1e-4, cross entropy, one fixed random
-- batch per GPU) in three setups; bench/multi_gpu_alexnet.py is PyTorch's side with the
-- same output lines and bench/multi_gpu_run.sh runs both and prints the ratios.
--   single: the plain model on cuda:0, batch B
--   ddp:    one rank per GPU through the launcher, DistributedDataParallel, B per GPU
--             nnrepl --nproc-per-node 2 bench/multi_gpu_alexnet.lua ddp fp32
--   ddp_view: ddp with gradient_as_bucket_view=true
--   ddp_fp16: ddp with default_hooks.fp16_compress_hook (half the bytes on NCCL)
--   dp:     nn.DataParallel over every GPU, batch B x device_count
-- precision: fp32, or amp (autocast float16 + GradScaler).
-- time: per step, mean over `steps` steps between two synchronisations, median of `reps`
-- repeats after `warmup` steps. Rank 0 prints:
--   setup <s> precision <p> gpus <n> batch <total> step_ms <t> loss <first>-><last>
local time = require "time"
local alexnet = require("torchvision").models.alexnet
local make_step = dofile((arg[0]:match("^(.*)/") or ".") .. "/train_step.lua")
local setup, precision = arg[1] or "single", arg[2] or "fp32"
local steps, reps, warmup = tonumber(arg[3]) or 20, tonumber(arg[4]) or 5, tonumber(arg[5]) or 5
local B = tonumber(arg[6]) or 64
assert(({ single = 1, ddp = 1, ddp_view = 1, ddp_fp16 = 1, dp = 1 })[setup], "setup: single, ddp, ddp_view, ddp_fp16 or dp")
local ddp = setup:sub(1, 3) == "ddp"
assert(precision == "fp32" or precision == "amp", "precision: fp32 or amp")

local dist = torch.distributed
local rank, world, local_rank = 0, 1, 0
if ddp then
  local_rank = tonumber(os.getenv("LOCAL_RANK")) or 0
  torch.cuda.set_device(local_rank)
  dist.init_process_group("nccl", { timeout = 120 })
  rank, world = dist.get_rank(), dist.get_world_size()
end
local ngpu = setup == "dp" and torch.cuda.device_count() or world
local dev = torch.device("cuda:" .. local_rank)
local batch = setup == "dp" and B * ngpu or B

torch.manual_seed(100 + rank) -- each rank its own data
local X = torch.rand(batch, 3, 227, 227):to(dev)
local Y = torch.randint(0, 1000, { batch }):to(dev)
torch.manual_seed(0)
local model = alexnet():to(dev)
if ddp then
  model = nn.parallel.DistributedDataParallel(model, { device_ids = { local_rank }, gradient_as_bucket_view = setup == "ddp_view" })
  if setup == "ddp_fp16" then model:register_comm_hook(nil, dist.algorithms.ddp_comm_hooks.default_hooks.fp16_compress_hook) end
end
if setup == "dp" then model = nn.DataParallel(model) end
local opt = torch.optim.AdamW(model:parameters(), { lr = 1e-4 })
local scaler = precision == "amp" and torch.amp.GradScaler("cuda") or nil

local step = make_step(model, opt, X, Y, scaler and torch.float16 or nil, scaler)

local function sync()
  for i = 0, ngpu - 1 do torch.cuda.synchronize(ddp and local_rank or i) end
end

local first = step():float():item()
for _ = 2, warmup do step() end
local times, last = {}, nil
for r = 1, reps do
  sync()
  local t0 = time.perf_counter()
  for _ = 1, steps do last = step() end
  sync()
  times[r] = (time.perf_counter() - t0) / steps * 1e3
end
table.sort(times)
if rank == 0 then
  print(string.format("setup %s precision %s gpus %d batch %d step_ms %.3f loss %.4f->%.4f", setup, precision, ngpu,
    batch * world, times[(#times + 1) // 2], first, last:float():item()))
end
if ddp then dist.destroy_process_group() end
