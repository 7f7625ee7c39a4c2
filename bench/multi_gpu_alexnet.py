# PyTorch's side of bench/multi_gpu_alexnet.lua: the same setups, measurements and lines.
#   python3 bench/multi_gpu_alexnet.py single fp32
#   python3 -m torch.distributed.run --nproc-per-node 2 bench/multi_gpu_alexnet.py ddp fp32
#   python3 bench/multi_gpu_alexnet.py dp amp
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models import alexnet

from train_step import make_step

argv = sys.argv[1:] + [None] * 6
setup, precision = argv[0] or "single", argv[1] or "fp32"
steps, reps, warmup, B = [int(a) if a else d for a, d in zip(argv[2:6], (20, 5, 5, 64))]
rank, world, local_rank = 0, 1, 0
ddp = setup.startswith("ddp")
if ddp:
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
ngpu = torch.cuda.device_count() if setup == "dp" else world
dev = torch.device(f"cuda:{local_rank}")
batch = B * ngpu if setup == "dp" else B

torch.manual_seed(100 + rank)
X = torch.rand(batch, 3, 227, 227).to(dev)
Y = torch.randint(0, 1000, (batch,)).to(dev)
torch.manual_seed(0)
model = alexnet().to(dev)
if ddp:
    model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank], gradient_as_bucket_view=setup == "ddp_view")
    if setup == "ddp_fp16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
if setup == "dp":
    model = nn.DataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
scaler = torch.amp.GradScaler("cuda") if precision == "amp" else None


step = make_step(model, opt, X, Y, torch.float16 if scaler else None, scaler)


def sync():
    for i in range(ngpu):
        torch.cuda.synchronize(local_rank if ddp else i)


first = step().float().item()
for _ in range(warmup - 1):
    step()
times = []
for _ in range(reps):
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        last = step()
    sync()
    times.append((time.perf_counter() - t0) / steps * 1e3)
if rank == 0:
    print(f"setup {setup} precision {precision} gpus {ngpu} batch {batch * world} step_ms {statistics.median(times):.3f} "
          f"loss {first:.4f}->{last.float().item():.4f}")
if ddp:
    dist.destroy_process_group()
