# PyTorch's side of bench/cpu_linear.lua: the same Linear layers, forward and backward on the CPU.
# Usage: python3 bench/cpu_linear.py [threads] [repeats]
import statistics
import sys
import time

import torch

threads = int(sys.argv[1]) if len(sys.argv) > 1 else None
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
if threads:
    torch.set_num_threads(threads)
torch.manual_seed(0)

cases = [(9216, 4096, 8), (4096, 4096, 8), (4096, 10, 8), (9216, 4096, 64), (784, 32, 128), (1024, 1024, 1024)]
for fin, fout, batch in cases:
    layer = torch.nn.Linear(fin, fout)
    x = torch.randn(batch, fin, requires_grad=True)
    g = torch.randn(batch, fout)

    def call():
        y = layer(x)
        y.backward(g)

    t0 = time.perf_counter()
    n = 0
    while True:
        call()
        n += 1
        if time.perf_counter() - t0 > 0.1 and n >= 3:
            break
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n):
            call()
        times.append((time.perf_counter() - t) / n)
    print(f"torch linear_{fin}x{fout} {batch} us {statistics.median(times) * 1e6:.1f}")
