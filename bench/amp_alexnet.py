# PyTorch's side of bench/amp_alexnet.lua (same modes, same measurements, same output lines).
# Usage: python3 bench/amp_alexnet.py [steps 20] [reps 5] [warmup 5] [batch 64] [img 227]
import statistics
import sys

import torch
import torch.nn.functional as F
from torchvision.models import alexnet

from train_step import make_step, timed

steps, reps, warmup, B, img = ([int(a) for a in sys.argv[1:]] + [20, 5, 5, 64, 227][len(sys.argv) - 1:])[:5]
dev = torch.device("cuda")
torch.manual_seed(0)
X = torch.rand(B, 3, img, img, device=dev)
Y = torch.randint(0, 1000, (B,), device=dev)
X_cl = X.contiguous(memory_format=torch.channels_last)


def setup(mode):
    torch.manual_seed(0)
    model = alexnet().to(dev)
    if mode.get("channels_last"):
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda") if mode.get("scaler") else None
    x = X_cl if mode.get("channels_last") else X
    dtype = mode.get("dtype")

    return make_step(model, opt, x, Y, dtype, scaler)


modes = [dict(name="fp32"), dict(name="autocast_fp16", dtype=torch.float16),
         dict(name="autocast_fp16_gradscaler", dtype=torch.float16, scaler=True),
         dict(name="autocast_bf16", dtype=torch.bfloat16)]
modes += [dict(m, name=m["name"] + "_cl", channels_last=True) for m in modes]

ref = None
for mode in modes:
    step = setup(mode)
    for _ in range(20):
        loss = step()
    l20 = loss.float().item()
    del loss  # its graph's AccumulateGrad nodes hold the check's parameters and gradients (466 MiB)
    if mode["name"] == "fp32":
        ref = l20
    step = setup(mode)
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = timed(step, steps, reps)
    peak = torch.cuda.max_memory_allocated() / 2**30
    rel = abs(l20 - ref) / abs(ref)
    print(f"mode {mode['name']:<28} step_ms {statistics.median(times):.3f} peak_gib {peak:.3f} loss20 {l20:.5f} rel {rel:.4f}"
          + ("" if rel <= 0.02 else "  OUT OF TOLERANCE"))
    del step
    torch.cuda.empty_cache()
