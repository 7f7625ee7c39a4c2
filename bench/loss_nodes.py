# PyTorch's side of bench/loss_nodes.lua (same cases and output lines).
# python3 bench/loss_nodes.py [cpu]; on the CPU, LOSS_THREADS sets torch's threads (default: its own)
import os, sys, torch, torch.nn.functional as F
from gpu_step_timing import timed, wall_timed  # bench/gpu_step_timing.py, next to this file

reps, calls = 5, 20
device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
if os.environ.get("LOSS_THREADS"):
    torch.set_num_threads(int(os.environ["LOSS_THREADS"]))

def median_us(fn):
    for _ in range(5):
        fn()
    return (wall_timed if device == "cpu" else timed)(lambda i: fn(), calls, reps)[0] * 1e3

LOSSES = [("mse_loss", lambda x, t: F.mse_loss(x, t)),
          ("smooth_l1_loss", lambda x, t: F.smooth_l1_loss(x, t)),
          ("huber_loss", lambda x, t: F.huber_loss(x, t)),
          ("binary_cross_entropy", lambda x, t: F.binary_cross_entropy(x.sigmoid(), t)),
          ("binary_cross_entropy_with_logits", lambda x, t: F.binary_cross_entropy_with_logits(x, t))]
for rows, cols in [(64, 10), (1024, 1024) if device == "cpu" else (4096, 4096)]:
    torch.manual_seed(0)
    x = torch.randn(rows, cols, device=device, requires_grad=True)
    t = torch.rand(rows, cols, device=device)
    for name, f in LOSSES:
        us = median_us(lambda: f(x, t).backward())
        print(f"loss {name} {rows}x{cols} us {us:.1f}")
