# PyTorch's side of bench/optim_cpu.lua: Adam (and SGD with momentum) steps on CPU over
# a 784-256-10 MLP's parameters with random gradients, median microseconds per step.
# The default implementation on CPU (single-tensor, foreach off), then foreach and fused,
# each with PyTorch's default intra-op threads and with one thread.
import sys, time, torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
torch.manual_seed(0)
shapes = [(256, 784), (256,), (10, 256), (10,)]

def bench(name, make):
    params = []
    for s in shapes:
        p = (torch.randn(s) * 0.05).requires_grad_()
        p.grad = torch.randn(s)
        params.append(p)
    n = sum(p.numel() for p in params)
    opt = make(params)
    for _ in range(20):
        opt.step()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(steps):
            opt.step()
        times.append((time.perf_counter() - t0) / steps * 1e6)
    times.sort()
    med = times[(reps - 1) // 2]
    print(f"pytorch {name} ({torch.get_num_threads()} threads): median {med:.1f} us/step "
          f"(min {times[0]:.1f}, max {times[-1]:.1f}; {n} params, {med * 1e3 / n:.2f} ns/param)")
    return med

for threads in (torch.get_num_threads(), 1):
    torch.set_num_threads(threads)
    bench("Adam", lambda ps: torch.optim.Adam(ps, lr=1e-3, foreach=False))
    bench("Adam foreach", lambda ps: torch.optim.Adam(ps, lr=1e-3, foreach=True))
    bench("Adam fused", lambda ps: torch.optim.Adam(ps, lr=1e-3, fused=True))
    bench("SGD momentum", lambda ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9, foreach=False))
