-- all_reduce bus bandwidth on the GPUs of one host (issue 7: >= 0.95x PyTorch's):
--   nnrepl --nproc-per-node 2 bench/allreduce.lua [MB] [iters] [reps]
-- A SUM over float32 normal values, refreshed before each repeat (20 sums grow them by
-- 2^20, no overflow); CUDA events around `iters` calls after a warm-up, median of `reps`.
-- Bus bandwidth as nccl-tests count it: 2 (n - 1) / n of the bytes per second.
-- bench/allreduce.py is PyTorch's side; bench/device_multi_run.sh prints the ratio.
local dist = torch.distributed
local mb, iters, reps = tonumber(arg[1] or "256"), tonumber(arg[2] or "20"), tonumber(arg[3] or "7")
local lr = tonumber(os.getenv("LOCAL_RANK"))
torch.cuda.set_device(lr)
dist.init_process_group("nccl")
local world = dist.get_world_size()
local n = math.floor(mb * 1024 * 1024 / 4)
local t = torch.randn(n, { device = "cuda:" .. lr })
for _ = 1, 5 do dist.all_reduce(t) end
local e0, e1 = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
local times = {}
for r = 1, reps do
  t:normal_()
  torch.cuda.synchronize()
  e0:record()
  for _ = 1, iters do dist.all_reduce(t) end
  e1:record()
  e1:synchronize()
  times[r] = e0:elapsed_time(e1) / iters
end
table.sort(times)
local ms = times[(reps + 1) // 2]
if dist.get_rank() == 0 then
  print(string.format("nnrepl all_reduce %d MB float32 on %d GPUs: median %.3f ms, bus bandwidth %.1f GB/s",
    mb, world, ms, n * 4 / (ms / 1e3) * 2 * (world - 1) / world / 1e9))
end
dist.destroy_process_group()
