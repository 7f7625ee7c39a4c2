# PyTorch's side of bench/host_overhead.lua: host cost of `c = a + b` on two
# 4-element float32 tensors, median over repeats of N calls, in microseconds.
# Arguments as the Lua side's: N REPS DEVICE (cpu or cuda; cuda synchronizes at the end) [BURST].
import statistics, sys, time, torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
dev = sys.argv[3] if len(sys.argv) > 3 else "cpu"
burst = int(sys.argv[4]) if len(sys.argv) > 4 else 0
sync = torch.cuda.synchronize if dev != "cpu" else (lambda: None)
a, b = torch.rand(4, device=dev), torch.rand(4, device=dev)
for _ in range(100_000):
    c = a + b
times = []
for _ in range(reps):
    total = 0.0
    if burst:
        for _ in range(n // burst):
            sync()
            t0 = time.perf_counter()
            for _ in range(burst):
                c = a + b
            total += time.perf_counter() - t0
        sync()
        total /= (n // burst) * burst
    else:
        t0 = time.perf_counter()
        for _ in range(n):
            c = a + b
        sync()
        total = (time.perf_counter() - t0) / n
    times.append(total * 1e6)
mode = f", bursts of {burst}" if burst else ""
print(f"pytorch {torch.__version__} a+b ({dev}{mode}): median {statistics.median(times):.3f} us/call")
