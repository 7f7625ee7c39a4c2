# PyTorch's side of bench/cnn_gpu.lua: document 000's CNN step, same timing.
import statistics, torch, torch.nn as nn
from doc000_net import Net  # bench/doc000_net.py, next to this file
steps, reps, dev = 100, 7, "cuda"
torch.manual_seed(0)
model = Net().to(dev)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9, dampening=0.1)
xs = [torch.randn(32, 3, 32, 32, device=dev) for _ in range(8)]
ys = [torch.randint(0, 101, (32,), device=dev) for _ in range(8)]


def step(i):
    k = i % 8
    out = model(xs[k])
    loss = criterion(out, ys[k])
    opt.zero_grad(); loss.backward(); opt.step()
    return loss


for i in range(30): step(i)
torch.cuda.synchronize()
times = []
for _ in range(reps):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for i in range(steps): step(i)
    e1.record(); e1.synchronize()
    times.append(e0.elapsed_time(e1) / steps)
print(f"pytorch cnn step: median {statistics.median(times):.4f} ms (min {min(times):.4f})")
