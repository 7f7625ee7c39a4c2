# PyTorch's side of bench/activations.lua (same cases and output lines).
import torch, torch.nn.functional as F
from gpu_step_timing import timed  # bench/gpu_step_timing.py, next to this file

reps, calls = 5, 20
ACTS = [("gelu", lambda x: F.gelu(x)), ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
        ("silu", lambda x: F.silu(x)), ("mish", lambda x: F.mish(x)), ("softplus", lambda x: F.softplus(x)),
        ("logsigmoid", lambda x: F.logsigmoid(x)), ("leaky_relu", lambda x: F.leaky_relu(x, 0.2)),
        ("elu", lambda x: F.elu(x)), ("hardswish", lambda x: F.hardswish(x)), ("hardsigmoid", lambda x: F.hardsigmoid(x))]
for rows, cols in [(64, 512), (4096, 4096)]:
    torch.manual_seed(0)
    x = torch.randn(rows, cols, device="cuda", requires_grad=True)
    g = torch.randn(rows, cols, device="cuda")
    for name, f in ACTS:
        for _ in range(5): f(x).backward(g)
        ms = timed(lambda i: f(x).backward(g), calls, reps)[0]
        print(f"act {name} {rows}x{cols} us {ms * 1e3:.1f}")
