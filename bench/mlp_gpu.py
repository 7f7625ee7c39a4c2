# PyTorch's side of bench/mlp_gpu.lua: the same MLP step, same timing.
import statistics, torch, torch.nn as nn, torch.nn.functional as F
steps, reps, dev = 200, 7, "cuda"
torch.manual_seed(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
xs = [torch.rand(128, 1, 28, 28, device=dev) for _ in range(8)]
ys = [torch.randint(0, 10, (128,), device=dev) for _ in range(8)]
def step(i):
    k = i % 8
    loss = F.cross_entropy(model(xs[k]), ys[k])
    opt.zero_grad(); loss.backward(); opt.step()
for i in range(50): step(i)
torch.cuda.synchronize()
times = []
for _ in range(reps):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for i in range(steps): step(i)
    e1.record(); e1.synchronize()
    times.append(e0.elapsed_time(e1) / steps)
print(f"pytorch mlp step: median {statistics.median(times):.4f} ms (min {min(times):.4f})")
