# PyTorch's all_reduce bus bandwidth, the reference for tests/dist/nccl.lua's number:
#   python3 -m torch.distributed.run --nproc-per-node 2 tests/dist/nccl_bandwidth.py [MB]
import os, sys, time
import torch
import torch.distributed as dist

mb = float(sys.argv[1]) if len(sys.argv) > 1 else 256
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl")
world = dist.get_world_size()
n = int(mb * 1024 * 1024 / 4)
t = torch.ones(n, device=f"cuda:{local_rank}")
for _ in range(3):
    dist.all_reduce(t)
torch.cuda.synchronize()
iters = 20
t0 = time.time()
for _ in range(iters):
    dist.all_reduce(t)
torch.cuda.synchronize()
dt = (time.time() - t0) / iters
if dist.get_rank() == 0:
    print(f"pytorch all_reduce {mb:.0f} MB float32: {dt * 1e3:.3f} ms, bus bandwidth {n * 4 / dt * 2 * (world - 1) / world / 1e9:.1f} GB/s")
dist.destroy_process_group()
