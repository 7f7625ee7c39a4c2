# PyTorch's side of bench/allreduce.lua, the same measurement:
#   python3 -m torch.distributed.run --nproc-per-node 2 bench/allreduce.py [MB] [iters] [reps]
import os, sys
import torch
import torch.distributed as dist

mb = float(sys.argv[1]) if len(sys.argv) > 1 else 256
iters = int(sys.argv[2]) if len(sys.argv) > 2 else 20
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 7
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl")
world = dist.get_world_size()
n = int(mb * 1024 * 1024 / 4)
t = torch.randn(n, device=f"cuda:{local_rank}")
for _ in range(5):
    dist.all_reduce(t)
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
times = []
for _ in range(reps):
    t.normal_()
    torch.cuda.synchronize()
    e0.record()
    for _ in range(iters):
        dist.all_reduce(t)
    e1.record()
    e1.synchronize()
    times.append(e0.elapsed_time(e1) / iters)
ms = sorted(times)[(reps - 1) // 2]
if dist.get_rank() == 0:
    print(f"pytorch all_reduce {mb:.0f} MB float32 on {world} GPUs: median {ms:.3f} ms, "
          f"bus bandwidth {n * 4 / (ms / 1e3) * 2 * (world - 1) / world / 1e9:.1f} GB/s")
dist.destroy_process_group()
