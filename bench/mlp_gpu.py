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
def timed(fn):
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for i in range(steps): fn(i)
        e1.record(); e1.synchronize()
        times.append(e0.elapsed_time(e1) / steps)
    return statistics.median(times), min(times)
print("pytorch mlp step: median %.4f ms (min %.4f)" % timed(step))

# the same step captured in a CUDA graph (warm-up on a side stream, as PyTorch's docs do)
sx, sy = xs[0].clone(), ys[0].clone()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(sx), sy).backward(); opt.step()
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)
with torch.cuda.graph(g):
    static_loss = F.cross_entropy(model(sx), sy)
    static_loss.backward()
    opt.step()
def graph_step(i):
    k = i % 8
    sx.copy_(xs[k]); sy.copy_(ys[k])
    g.replay()
for i in range(50): graph_step(i)
med, mn = timed(graph_step)
print(f"pytorch mlp graph step: median {med:.4f} ms (min {mn:.4f}), last loss {static_loss.item():.4f}")
