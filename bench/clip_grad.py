# PyTorch's side of bench/clip_grad.lua (same work, same timing).  python3 bench/clip_grad.py [iters] [reps]
import sys, time, torch, torchvision
iters = int(sys.argv[1]) if len(sys.argv) > 1 else 200
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
torch.manual_seed(0)
model = torchvision.models.alexnet().to("cuda")
params = list(model.parameters())
for p in params: p.grad = torch.randn_like(p)

def bench(name, fn):
    for _ in range(10): fn()
    torch.cuda.synchronize()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters): fn()
        torch.cuda.synchronize()
        t.append((time.perf_counter() - t0) * 1e6 / iters)
    t.sort()
    print(f"clip {name:<16} {t[(reps + 1) // 2 - 1]:9.2f} us")
bench("norm", lambda: torch.nn.utils.clip_grad_norm_(params, 1.0))
bench("value", lambda: torch.nn.utils.clip_grad_value_(params, 1.0))
