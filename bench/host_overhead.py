# PyTorch's side of bench/host_overhead.lua: host cost of `c = a + b` on two
# 4-element CPU float32 tensors, median over repeats of 10^6 calls, in microseconds.
import statistics, time, torch

a, b = torch.rand(4), torch.rand(4)
n, reps = 1_000_000, 5
for _ in range(100_000):
    c = a + b
times = []
for _ in range(reps):
    t0 = time.perf_counter()
    for _ in range(n):
        c = a + b
    times.append((time.perf_counter() - t0) / n * 1e6)
print(f"pytorch {torch.__version__} a+b: median {statistics.median(times):.3f} us/call")
