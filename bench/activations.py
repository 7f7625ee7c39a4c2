# PyTorch's side of bench/activations.lua (same cases and output lines).
# python3 bench/activations.py [cpu]; on the CPU, ACT_THREADS sets torch's threads (default: its own)
import os, sys, torch, torch.nn.functional as F
from gpu_step_timing import timed, wall_timed  # bench/gpu_step_timing.py, next to this file

reps, calls = 5, 20
device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
if os.environ.get("ACT_THREADS"):
    torch.set_num_threads(int(os.environ["ACT_THREADS"]))

ACTS = [("gelu", lambda x: F.gelu(x)), ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
        ("silu", lambda x: F.silu(x)), ("mish", lambda x: F.mish(x)), ("softplus", lambda x: F.softplus(x)),
        ("logsigmoid", lambda x: F.logsigmoid(x)), ("leaky_relu", lambda x: F.leaky_relu(x, 0.2)),
        ("elu", lambda x: F.elu(x)), ("hardswish", lambda x: F.hardswish(x)), ("hardsigmoid", lambda x: F.hardsigmoid(x))]
for rows, cols in [(64, 512), (1024, 1024) if device == "cpu" else (4096, 4096)]:
    torch.manual_seed(0)
    x = torch.randn(rows, cols, device=device, requires_grad=True)
    g = torch.randn(rows, cols, device=device)
    for name, f in ACTS:
        for _ in range(5): f(x).backward(g)
        step = lambda: f(x).backward(g)
        ms = (wall_timed if device == "cpu" else timed)(lambda i: step(), calls, reps)[0]
        print(f"act {name} {rows}x{cols} us {ms * 1e3:.1f}")
